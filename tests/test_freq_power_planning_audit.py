"""Planning fixes from the held-out audit R: one-run components, the shorthand, clusters, pairs."""

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import paired_power
from hierbench.freq import sd_paired_diff
from hierbench.freq import tasks_for_power
from hierbench.freq import variance_components


def _one_run(seed=0, A=4, T=30):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(A, 1, 1)) + rng.normal(size=(A, T, 1))
    return xr.Dataset({"score": (("agent", "task", "run"), y)})


def test_one_run_components_plan_at_one_run():
    # balanced one-run agent x task: the residual mean square is the residual component, and
    # the per-task difference's variance 2 x residual (numpy, not the package's ANOVA)
    ds = _one_run()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(ds)
    y = ds.score.values[:, :, 0]
    resid = y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + y.mean()
    ms_res = (resid**2).sum() / ((y.shape[0] - 1) * (y.shape[1] - 1))
    assert float(sd_paired_diff(1, components=vc)) == pytest.approx(np.sqrt(2 * ms_res), rel=1e-10)
    assert tasks_for_power(0.5, components=vc) == tasks_for_power(0.5, sd_diff=np.sqrt(2 * ms_res))
    with pytest.raises(ValueError, match="n_runs=1 can"):
        sd_paired_diff([1, 2], components=vc)
    assert paired_power(0.5, 30, components=vc).shape == ()


def test_explicit_design_keeps_the_shorthand():
    ds = _one_run(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_dims = variance_components(ds)
        by_words = variance_components(ds, design="run:(agent*task)")
    a = by_dims.d_study(n_tasks=[60, 300])["var_paired_diff"].values
    b = by_words.d_study(n_tasks=[60, 300])["var_paired_diff"].values
    # 2 x residual / T for one run per cell, by hand
    y = ds.score.values[:, :, 0]
    resid = y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + y.mean()
    ms_res = (resid**2).sum() / ((y.shape[0] - 1) * (y.shape[1] - 1))
    np.testing.assert_allclose(b, 2 * ms_res / np.array([60, 300]), rtol=1e-10)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    assert by_words.measurement == "agent"
