"""Audit S findings 6, 7 and 9 (helper E): pooled_binomial_interval inside [0, 1], NaN intervals warned, an
interval never computed labelled so.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench._base import SmallSampleWarning
from hierbench._base import UndefinedWarning
from hierbench.freq import fit_beta_binomial_ml
from hierbench.freq import pass_at_k
from hierbench.freq import pass_hat_k
from hierbench.freq import pooled_binomial_interval
from hierbench.freq import success_rate


def _scores(rows, agents=None):
    y = np.asarray(rows, float)
    agents = agents or [f"a{i}" for i in range(y.shape[0])]
    return xr.DataArray(y, dims=("agent", "task", "run"), coords={"agent": agents})


def _wilson(s, n, prob=0.95):
    # statsmodels' Wilson interval is the independent reference
    from statsmodels.stats.proportion import proportion_confint

    return proportion_confint(s, n, alpha=1 - prob, method="wilson")


def test_pooled_interval_stays_in_unit_range_and_names_the_cells():
    # 1 task x 5 runs: 2/5, 5/5, 0/5 fail the Wald interval (below 0, above 1, zero width); 30/60 does not
    y = _scores([[[1, 1, 0, 0, 0]], [[1, 1, 1, 1, 1]], [[0, 0, 0, 0, 0]]])
    with pytest.warns(SmallSampleWarning, match=r"3 of 3 cells.*a2 \(0 of 5: Wald \[0, 0\]\)"):
        r = pooled_binomial_interval(y)
    for i, s in enumerate((2, 5, 0)):
        assert r.ci.values[i] == pytest.approx(_wilson(s, 5), abs=1e-12)
    assert r.ci.attrs["ci_kind"] == "wilson" and "Wilson" in r.ci.attrs["ci_detail"]
    # the exact Clopper-Pearson upper end at 0/5 is 0.522 (scipy): the interval is no longer [0, 0]
    assert stats.beta.ppf(0.975, 1, 5) > r.ci.values[2, 1] > 0.4


def test_pooled_interval_mixes_kinds_per_cell_and_keeps_wald_where_it_holds():
    rng = np.random.default_rng(3)
    ok = (rng.random((1, 20, 3)) < 0.5).astype(float)
    bad = np.zeros((1, 20, 3))
    y = _scores(np.concatenate([ok, bad]), ["fine", "none"])
    with pytest.warns(SmallSampleWarning, match=r"1 of 2 cells.*none \(0 of 60"):
        r = pooled_binomial_interval(y)
    s = ok.sum()
    p = s / 60
    half = stats.norm.ppf(0.975) * np.sqrt(p * (1 - p) / 60)
    assert r.ci.values[0] == pytest.approx([p - half, p + half], abs=1e-12)
    assert r.ci.values[1] == pytest.approx(_wilson(0, 60), abs=1e-12)
    assert r.ci.attrs["ci_kind"] == "mixed"
    assert r.to_frame()["ci_kind"].tolist() == ["wald", "wilson"]
    # no cell failing: plain Wald, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert pooled_binomial_interval(y.sel(agent=["fine"])).ci.attrs["ci_kind"] == "wald"


@pytest.mark.parametrize("fn", [lambda d: success_rate(d), lambda d: pass_at_k(d, 1), lambda d: pass_hat_k(d, 2)])
def test_one_task_nan_interval_is_warned_naming_the_agents(fn):
    # a1 and a2 ran 1 task (the other NaN), a0 ran 2: the sample sd of one value is undefined (numpy's
    # std with ddof=1 of a single value is NaN), so only a1 and a2 lack an interval
    y = _scores([[[1, 0, 1], [0, 0, 1]], [[1, 0, 1], [np.nan] * 3], [[0, 1, 1], [np.nan] * 3]])
    ds = xr.Dataset({"score": y})
    with pytest.warns(UndefinedWarning, match=r"NaN for 2 of 3 cells: a1 \(1 task\), a2 \(1 task\)") as rec:
        r = fn(ds)
    assert sum("interval is NaN" in str(w.message) for w in rec) == 1
    assert np.isnan(r.ci.values[1:]).all() and np.isfinite(r.ci.values[0]).all()


def test_one_cluster_nan_interval_is_warned_and_two_clusters_are_not():
    rng = np.random.default_rng(0)
    y = _scores((rng.random((2, 6, 3)) < 0.5).astype(float))
    one = xr.Dataset({"score": y}).assign_coords(cluster=("task", ["r"] * 6))
    with pytest.warns(UndefinedWarning, match=r"a0 \(its 6 tasks in 1 cluster\).*cluster=None"):
        success_rate(one)
    two = one.assign_coords(cluster=("task", ["r"] * 3 + ["s"] * 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedWarning)
        assert np.isfinite(pass_at_k(two, 1).ci.values).all()


def test_beta_binomial_ml_interval_is_labelled_not_computed():
    fr = fit_beta_binomial_ml([0, 1, 3, 2, 9, 5], [10] * 6).to_frame()
    assert fr["ci_kind"].tolist() == ["not computed"] and np.isnan(fr["ci_prob"]).all()
    assert np.isnan(fr[["lower", "upper"]].to_numpy()).all()


def test_side_by_side_refuses_a_result_without_an_interval_by_name():
    """fit_beta_binomial_ml computes no interval: side_by_side says so, not that its kind is unknown."""
    from hierbench.compare import side_by_side
    from hierbench.freq import bootstrap_ci
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(3, 20, 3, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ml, boot = fit_beta_binomial_ml(ds), bootstrap_ci(ds, n_resamples=99, rng=0)
    with pytest.raises(ValueError, match=r"`results\['ml'\]` carries no interval .*beta_binomial_profile_ci"):
        side_by_side({"ml": ml, "boot": boot})
