"""The crossed model's parametric bootstrap can leave a zero scale, and counts the replicates it loses.

A refit that started at the estimate never left a scale estimated at its lower bound
(all 53 usable refits of sd_agent_task were exactly 1e-4, interval [1e-4, 1e-4]), and
replicates with a separated agent were dropped while ``ci_detail`` still said "60 refits".
The reference is a seeded simulation written here: data drawn from the fitted parameters,
each fitted afresh.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench import SmallSampleWarning
from hierbench.freq import fit_crossed_ml
from hierbench.freq import mean_response


def _data() -> xr.Dataset:
    rng = np.random.default_rng(2)
    b = rng.normal(0, 1, 20)
    p = 1 / (1 + np.exp(-(np.array([-0.5, 0.5, 3.5])[:, None] + b[None, :])))
    sc = (rng.random((3, 20, 2)) < p[:, :, None]) * 1.0
    return xr.Dataset({"score": (("agent", "task", "run"), sc)}, coords={"agent": ["a", "b", "c"]})


def test_lost_replicates_are_counted_in_the_detail_and_a_warning():
    with pytest.warns(SmallSampleWarning, match=r"(\d+) of 20 parametric-bootstrap replicates have no refit") as rec:
        r = fit_crossed_ml(_data(), intervals="bootstrap", n_resamples=20, rng=0)
    lost = int(np.isnan(r.sd_resamples.values[:, 0]).sum())  # counted by hand from the draws
    assert lost > 0  # agent c succeeds 37 of 40 times: some replicates separate it
    msg = next(str(w.message) for w in rec if "parametric-bootstrap" in str(w.message))
    assert msg.startswith(f"fit_crossed_ml: {lost} of 20")
    assert re.search(rf"\b{20 - lost} refits used of 20 replicates", r.sd_ci.attrs["ci_detail"])


@pytest.mark.slow
def test_bootstrap_share_of_positive_refits_matches_fresh_fits_of_simulated_data():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fit_crossed_ml(_data(), intervals="bootstrap", n_resamples=100, rng=0)
        assert float(r.sd.sel(component="sd_agent_task")) < 1e-3  # estimated at zero
        boot = r.sd_resamples.sel(component="sd_agent_task").values
        boot = boot[np.isfinite(boot)]
        # independent: simulate from the fitted parameters, fit each data set afresh
        alpha, sd_t = r.estimate.values, float(r.sd.sel(component="sd_task"))
        g = np.random.default_rng(5)
        fresh = []
        while len(fresh) < 100:
            eta = alpha[:, None] + g.normal(0, sd_t, 20)[None, :]
            y = (g.random((3, 20, 2)) < 1 / (1 + np.exp(-eta))[:, :, None]) * 1.0
            if ((y.sum((1, 2)) == 0) | (y.sum((1, 2)) == 40)).any():
                continue  # a separated agent: no fit, as in the bootstrap
            ds = xr.Dataset({"score": (("agent", "task", "run"), y)}, coords={"agent": ["a", "b", "c"]})
            fresh.append(float(fit_crossed_ml(ds, intervals="wald").sd.sel(component="sd_agent_task")))
    p_boot, p_fresh = np.mean(boot > 1e-3), np.mean(np.array(fresh) > 1e-3)
    # Monte Carlo tolerance: 4 sd of a difference of two proportions (about 0.27 at p = 0.35);
    # the refits started at the estimate gave p_boot = 0, against p_fresh about 0.35
    pool = (p_boot * boot.size + p_fresh * 100) / (boot.size + 100)
    tol = 4 * np.sqrt(pool * (1 - pool) * (1 / boot.size + 1 / 100))
    assert p_fresh > 0.15  # the reference itself is not a point mass at zero
    assert abs(p_boot - p_fresh) < tol
    assert float(r.sd_ci.sel(component="sd_agent_task", ci_bound="upper")) > 0.1


def test_mean_response_interval_is_labelled_logit_normal():
    # agent a's mean is 22 points [10.7, 39.9]: asymmetric, normal on the logit of the mean
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_crossed_ml(_data(), "score ~ 0 + agent + (1|task)", family="fractional", intervals="wald")
        m = mean_response(fit)
    assert m.ci.attrs["ci_kind"] == "logit-normal" and "logit-normal interval" in repr(m)
    for g in m.estimate.group.values:
        lo, hi = m.ci.sel(group=g).values / 100.0
        est = float(m.estimate.sel(group=g)) / 100.0
        lg = [np.log(x / (1 - x)) for x in (lo, est, hi)]
        assert lg[1] - lg[0] == pytest.approx(lg[2] - lg[1], rel=1e-6)
        assert est - lo != pytest.approx(hi - est, rel=0.05)  # so not a normal interval
