"""The misfit variance of adaptive scoring (hierbench.design.calibrate_misfit).

References: simulations with a known truth and fixed seeds. The moment
estimator is checked on errors drawn with a known extra variance; the
end-to-end check simulates agents from a two-skill model (the hardest
tasks also need a second, independent skill), which a 2PL bank cannot
represent and which adaptive selection never probes: the model-only
interval must under-cover there, and the misfit variance must bring the
coverage back to nominal within Monte Carlo error.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy.special import expit

from hierbench.design import MisfitCalibration
from hierbench.design import adaptive
from hierbench.design import calibrate_misfit
from hierbench.design._misfit import _add_misfit
from hierbench.design._misfit import _misfit_tau2
from hierbench.freq import fit_irt_ml
from hierbench.freq import irt_score


def _two_skill(M, T, g, load2, items=None):
    if items is None:
        d = np.sort(g.normal(0, 2.0, T))
        a1 = np.exp(g.normal(0.3, 0.2, T))
        a2 = load2 * (d < np.quantile(d, 0.3))  # the hardest 30% also need a second skill
        items = (a1, a2, d)
    a1, a2, d = items
    th1, th2 = g.normal(size=M), g.normal(size=M)
    y = (g.random((M, T)) < expit(th1[:, None] * a1 + th2[:, None] * a2 + d)).astype(float)
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), y[:, :, None])},
        coords={"agent": [f"m{i}" for i in range(M)], "task": [f"t{j:03d}" for j in range(T)]},
    )
    return ds, items


def test_moment_estimate_recovers_a_known_extra_variance():
    # errors e ~ N(0, s^2 + tau^2) with s varying by agent: E[e^2 - s^2] = tau^2.
    # 4000 agents: the sd of the mean of e^2 - s^2 is about sqrt(2) * 0.05^2 / sqrt(4000) = 5.6e-5,
    # so tau^2 = 0.0009 is recovered within 3e-4 (5 sd); a window average only lowers the noise.
    g = np.random.default_rng(0)
    M, n = 4000, 30
    s = g.uniform(0.01, 0.05, (M, 1)) * np.ones((1, n))
    e = g.normal(0, np.sqrt(s**2 + 0.03**2))
    _, sm = _misfit_tau2(e, s)
    assert np.abs(sm - 0.03**2).max() < 3e-4
    # no extra variance: clipped at 0 and small
    _, sm0 = _misfit_tau2(g.normal(0, s), s)
    assert sm0.min() >= 0 and sm0.max() < 3e-4
    # agents whose replay stopped early (NaN) are left out, not counted as zero error
    e2 = e.copy()
    e2[: M // 2, 20:] = np.nan
    assert np.abs(_misfit_tau2(e2, s)[1] - 0.03**2).max() < 4e-4


def test_added_misfit_widens_only_the_unrun_part_and_keeps_the_estimate():
    g = np.random.default_rng(1)
    T = 40
    a = xr.DataArray(np.exp(g.normal(0, 0.1, (200, T))), dims=("sample", "task"))
    d = xr.DataArray(np.tile(g.normal(0, 1, T), (200, 1)), dims=("sample", "task"))
    from hierbench.freq import IRTBank

    bank = IRTBank(a, d)
    resp = xr.DataArray(np.ones((10, 1)), dims=("task", "run"), coords={"task": [str(j) for j in range(10)]})
    r = irt_score(bank, resp, prob=0.9, rng=2)
    r2 = _add_misfit(r, 0.05, 10.0, T - 10, T, 0.9, np.random.default_rng(3))
    assert float(r2.estimate) == float(r.estimate)
    # variance adds (up to clipping at the attainable range, inactive here: the draws stay inside)
    v0, v1 = float(r.score_draws.var()), float(r2.score_draws.var())
    assert abs(v1 - (v0 + 0.05**2)) < 0.25 * (v0 + 0.05**2)  # 200 draws: sd of a variance ~ 10%
    lo, hi = r2.ci.values
    assert lo >= 10 / T and hi <= 1.0 and (hi - lo) > float(r.ci[1] - r.ci[0])
    assert r2.ci.attrs["ci_prob"] == 0.9 and "misfit" in r2.ci.attrs["ci_detail"]


@pytest.mark.slow
def test_misfit_restores_adaptive_coverage_under_a_second_skill():
    # 30 calibration agents, 80 tasks; 40 new agents from the same two-skill model, 15 tasks
    # each chosen adaptively. Seeds fixed; MC tolerance: with 40 agents the sd of a coverage
    # near 0.9 is sqrt(0.9 * 0.1 / 40) = 0.047, so coverage >= 0.9 - 3 * 0.047 = 0.76 is
    # required of the misfit-widened interval; the model-only one is expected near 0.6 and
    # must be at least 0.1 below.
    g = np.random.default_rng(11)
    train, items = _two_skill(30, 80, g, 2.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = fit_irt_ml(train, n_draws=100, rng=1)
        mis = calibrate_misfit(
            train, budget=15, folds=3, hyper=cal.hyper, n_bank_draws=60, n_draws=30, n_grid=21, rng=2
        )
    assert isinstance(mis, MisfitCalibration)
    assert mis.estimate.sizes["n_tasks"] == 15 and mis.error.sizes["agent"] == 30
    assert mis.ci.sel(ci_bound="lower")[14] > 0  # the misfit is detected, not just allowed for
    test, _ = _two_skill(40, 80, g, 2.5, items)
    cov_model, cov_misfit = [], []
    for i in range(40):
        logs = test.score.isel(agent=i, drop=True)
        actual = float(logs.mean())
        r = adaptive(cal.bank, logs, budget=15, prob=0.9, n_draws=30, n_grid=21, misfit=mis, rng=3)
        lo, hi = r.ci.values
        cov_misfit.append(lo <= actual <= hi)
        r0 = irt_score(cal.bank, logs.sel(task=r.tasks.values.astype(str)), prob=0.9, rng=3)
        lo, hi = r0.ci.values
        cov_model.append(lo <= actual <= hi)
        # the running interval carries the same misfit variance
        assert r.trace.attrs["misfit_sd"] == pytest.approx(mis.sd_at(15))
    assert np.mean(cov_misfit) >= 0.76
    assert np.mean(cov_model) <= np.mean(cov_misfit) - 0.1


@pytest.mark.slow
def test_misfit_is_small_when_the_2pl_holds_and_mismatch_is_refused():
    # one-skill data (the 2PL is true): the misfit sd after 15 tasks is within its bootstrap
    # noise of 0 (the interval's lower end is 0) and small against the model sd.
    g = np.random.default_rng(12)
    train, _ = _two_skill(30, 80, g, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = fit_irt_ml(train, n_draws=60, rng=1)
        mis = calibrate_misfit(
            train, budget=15, folds=3, hyper=cal.hyper, n_bank_draws=60, n_draws=30, n_grid=21, rng=2
        )
    assert float(mis.ci.sel(ci_bound="lower")[14]) == 0.0
    assert mis.sd_at(15) < 0.5 * float(mis.model_sd[:, 14].median())
    logs = train.score.isel(agent=0, drop=True)
    with pytest.raises(ValueError, match="criterion"):
        adaptive(cal.bank, logs, budget=3, criterion="fisher", misfit=mis)
    with pytest.raises(ValueError, match="at least 3 agents"):
        calibrate_misfit(train.isel(agent=[0, 1]), budget=3)
    ragged = train.copy(deep=True)
    ragged["score"][0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="complete logs"):
        calibrate_misfit(ragged, budget=3)


def _calibration(err, sds, T=40):
    from hierbench.design._misfit import _misfit_result

    return _misfit_result(err, sds, np.array([f"m{i}" for i in range(err.shape[0])]), n_boot=400, prob=0.9,
                          gen=np.random.default_rng(0), criterion="variance", n_runs=1, n_tasks_bank=T, folds=3,
                          t0=0.0)


def test_a_zero_misfit_with_a_wide_bootstrap_is_warned():
    # 12 agents whose errors have exactly the model's sd on average (numpy: the moment estimate is
    # mean(e^2 - s^2), negative here, so tau is clipped to 0) but scatter widely: the bootstrap
    # upper bound is large next to the model sd, and "no misfit detected" is said not to be "no misfit"
    from hierbench._base import SmallSampleWarning

    g = np.random.default_rng(4)
    s = np.full((12, 6), 0.05)
    e = g.normal(0, 0.05, (12, 6))
    e *= 0.9 * 0.05 / np.sqrt((e**2).mean(0))  # mean(e^2) = 0.81 s^2 in every column: tau^2 < 0
    assert ((e**2 - s**2).mean(0) < 0).all()
    with pytest.warns(SmallSampleWarning, match="no misfit detected is not no misfit"):
        mis = _calibration(e, s)
    assert (mis.estimate.values == 0).all() and "underpowered" in mis.ci.attrs["ci_detail"]
    # the same errors shrunk far below the model's sd: the upper bound is small, nothing to say
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallSampleWarning)
        quiet = _calibration(e * 0.1, s)
    assert float(quiet.ci.sel(ci_bound="upper").max()) < 0.5 * 0.05


def test_adaptive_beyond_the_calibrated_budget_is_warned():
    from hierbench._base import BoundaryWarning
    from hierbench.freq import IRTBank

    g = np.random.default_rng(5)
    T = 40
    tasks = [f"t{j:03d}" for j in range(T)]
    bank = IRTBank(xr.DataArray(np.exp(g.normal(0, 0.1, (50, T))), dims=("sample", "task"), coords={"task": tasks}),
                   xr.DataArray(np.tile(g.normal(0, 1, T), (50, 1)), dims=("sample", "task"), coords={"task": tasks}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mis = _calibration(g.normal(0, 0.06, (12, 5)), np.full((12, 5), 0.05), T=T)
    logs = xr.DataArray((g.random((T, 1)) < 0.5).astype(float), dims=("task", "run"), coords={"task": tasks})
    with pytest.warns(BoundaryWarning, match=r"`budget` 8 \(up to 8 tasks at n_runs=1\) exceeds the 5 tasks"):
        adaptive(bank, logs, budget=8, misfit=mis, n_draws=20, n_grid=21, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BoundaryWarning)
        adaptive(bank, logs, budget=5, misfit=mis, n_draws=20, n_grid=21, rng=0)
