"""freq.time_horizon: what its bootstrap levels resample, its limit intervals, given weights and own task lengths (audit H).

Audit H found: ``levels`` without ``"family"`` kept every family once and drew
tasks only within it (a one-task family never moved: zero-width intervals);
an agent that failed every run got ``0 [0, 0]`` unwarned; given run weights
kept their scale, which set the slope penalty's pull; and ``extrapolated``
read the tasks of every agent, not the agent's own. Expected values here come
from the binomial distribution, scikit-learn, or the data by hand.
"""

import warnings
from math import comb

import numpy as np
import pytest
import xarray as xr

from hierbench import HierbenchError
from hierbench._base import ZeroWidthIntervalWarning
from hierbench.freq import ExtrapolatedHorizonWarning
from hierbench.freq import ExtremeHorizonWarning
from hierbench.freq import metr_run_weights
from hierbench.freq import time_horizon


def _ds(y, mins, fam=None, agents=None) -> xr.Dataset:
    y = np.asarray(y, float)
    A, T, _ = y.shape
    return xr.Dataset({"score": (("agent", "task", "run"), y)},
                      coords={"agent": agents or [f"a{i}" for i in range(A)], "task": [f"t{i}" for i in range(T)],
                              "human_minutes": ("task", np.asarray(mins, float)),
                              "cluster": ("task", fam if fam is not None else [f"f{i}" for i in range(T)])})  # fmt: skip


def test_task_level_draws_tasks_from_all_families_not_within_each():
    """Two families of 20 one-run tasks: every task of family g succeeds at 1 minute, every task of h fails at 64.

    A replicate's horizon then depends only on k, the number of g tasks drawn.
    Drawing 40 tasks from all 40, k ~ Binomial(40, 1/2): the replicate equals
    the estimate (k = 20) with probability C(40, 20) / 2**40 = 0.1254, and lies
    above or below it with probability 0.4373 each. Drawing within families
    (the old code) keeps k = 20 in every replicate. 1,500 replicates: binomial
    se at most 0.013, tolerance 4 se.
    """
    y = np.concatenate([np.ones(20), np.zeros(20)])[None, :, None]
    ds = _ds(y, [1.0] * 20 + [64.0] * 20, fam=["g"] * 20 + ["h"] * 20)
    B = 1500
    res = time_horizon(ds, levels=("task", "run"), n_resamples=B, rng=3, fit_check=False, success=[0.5])
    est = float(res.estimate.squeeze())
    boot = res.resamples.values.ravel()
    same = np.isclose(boot, est, rtol=1e-7, atol=0.0)
    p_same = comb(40, 20) / 2**40
    tol = 4 * np.sqrt(0.25 / B)
    assert abs(same.mean() - p_same) < tol
    assert abs(((boot > est) & ~same).mean() - (1 - p_same) / 2) < tol
    assert "tasks drawn from all the tasks" in res.ci.attrs["ci_detail"]
    assert float(np.diff(res.ci.squeeze().values)[0]) > 0


def test_a_one_task_family_moves_under_task_resampling():
    """Every task its own family, levels ("task",): the tasks drawn vary, so the replicates do (old code: one value)."""
    rng = np.random.default_rng(0)
    mins = np.geomspace(1, 480, 30)
    p = 1 / (1 + np.exp(-(3 - 0.6 * np.log2(mins) + rng.normal(0, 2, 30))))
    ds = _ds((rng.random((1, 30, 1)) < p[None, :, None]) * 1.0, mins)
    res = time_horizon(ds, levels=("task",), n_resamples=100, rng=1, fit_check=False, success=[0.5])
    assert np.unique(np.round(res.resamples.values, 9)).size > 50


def test_an_agent_at_the_limit_gets_a_named_warned_interval_that_measures_nothing():
    """All failures give [0, 0] and all successes [inf, inf] (METR's convention), each named and warned."""
    rng = np.random.default_rng(0)
    mins = np.geomspace(1, 480, 20)
    p = 1 / (1 + np.exp(-(3 - 0.6 * np.log2(mins))))
    y = np.concatenate([np.ones((1, 20, 3)), np.zeros((1, 20, 3)), (rng.random((1, 20, 3)) < p[None, :, None]) * 1.0])
    ds = _ds(y, mins, agents=["allone", "allzero", "mixed"])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = time_horizon(ds, n_resamples=100, rng=0, fit_check=False)
    msgs = {w.category: str(w.message) for w in seen if w.category is not ExtremeHorizonWarning}
    extreme = [str(w.message) for w in seen if w.category is ExtremeHorizonWarning]
    assert "allzero" in msgs[ZeroWidthIntervalWarning] and "mixed" not in msgs[ZeroWidthIntervalWarning]
    assert any("['allzero']" in m and "[0, 0]" in m for m in extreme)
    assert any("['allone']" in m and "[inf, inf]" in m for m in extreme)
    detail = res.ci.attrs["ci_detail"]
    assert "not a measured interval" in detail and "allzero [0, 0]" in detail and "allone [inf, inf]" in detail
    assert res.ci.sel(agent="allzero").values.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_given_run_weights_are_normalised_per_agent_so_their_scale_does_not_move_the_horizon():
    """Weights x 0.01 and x 100 give scikit-learn's fit with the weights summed to one per agent (C = 1 / 0.1)."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(4)
    mins = np.geomspace(1, 480, 24)
    p = 1 / (1 + np.exp(-(2.5 - 0.55 * np.log2(mins))))
    ds = _ds((rng.random((2, 24, 3)) < p[None, :, None]) * 1.0, mins, fam=[f"f{i // 3}" for i in range(24)])
    w = metr_run_weights(ds)
    for scale in (0.01, 100.0):
        wi = w * np.array([scale, 1.0])[:, None, None]  # one agent rescaled, the other not
        res = time_horizon(ds, weights=wi, n_resamples=0, fit_check=False)
        for i, a in enumerate(["a0", "a1"]):
            yy = ds["score"].values[i].ravel()
            xx = np.repeat(np.log2(mins), 3)
            ww = wi.values[i].ravel()
            m = LogisticRegression(C=1 / 0.1, tol=1e-12, max_iter=10_000)
            m.fit(xx[:, None], yy, sample_weight=ww / ww.sum())
            want = [2 ** ((np.log(q / (1 - q)) - m.intercept_[0]) / m.coef_[0, 0]) for q in (0.5, 0.8)]
            np.testing.assert_allclose(res.estimate.sel(agent=a).values, want, rtol=1e-5)


def test_a_negative_or_missing_run_weight_is_refused():
    mins = np.geomspace(1, 480, 6)
    ds = _ds(np.tile([1.0, 1.0, 0.0, 1.0, 0.0, 0.0], (1, 1))[:, :, None], mins)
    w = xr.ones_like(ds["score"])
    with pytest.raises(HierbenchError, match=r"`weights`: every run needs a finite weight >= 0; 1 runs"):
        time_horizon(ds, weights=w.where(w.task != "t2", -1.0), n_resamples=0, fit_check=False)
    with pytest.raises(HierbenchError, match=r"`weights`: the runs of agents \['a0'\] weigh 0"):
        time_horizon(ds, weights=w * 0.0, n_resamples=0, fit_check=False)


def test_extrapolated_reads_the_agents_own_task_lengths():
    """An agent that ran only tasks of 120+ minutes, with a horizon below them, is extrapolated (old code: not)."""
    rng = np.random.default_rng(3)
    mins = np.geomspace(1, 960, 40)
    x = np.log2(mins)
    pr = 1 / (1 + np.exp(-(np.array([[2.0], [3.0]]) - 0.5 * x)))
    y = (rng.random((2, 40, 6)) < pr[:, :, None]) * 1.0
    y[1, mins < 120, :] = np.nan
    ds = _ds(y, mins, agents=["all_tasks", "long_only"])
    with pytest.warns(ExtrapolatedHorizonWarning, match=r"\['long_only'\] have horizons outside the lengths of the "
                                                        r"tasks they ran"):  # fmt: skip
        res = time_horizon(ds, n_resamples=0, fit_check=False)
    own = {a: (mins[np.isfinite(y[i]).any(1)].min(), mins[np.isfinite(y[i]).any(1)].max())
           for i, a in enumerate(["all_tasks", "long_only"])}  # fmt: skip
    for a, (lo, hi) in own.items():
        h = res.estimate.sel(agent=a).values
        assert res.extrapolated.sel(agent=a).values.tolist() == ((h < lo) | (h > hi)).tolist()
        np.testing.assert_allclose(res.options["agent_minutes_range"][a], [lo, hi])
    assert bool(res.extrapolated.sel(agent="long_only", success=0.5))  # its 50% horizon lies in 1-120 minutes
    assert 1.0 < float(res.estimate.sel(agent="long_only", success=0.5)) < own["long_only"][0]
    assert f"below the shortest task, {own['long_only'][0]:g} minutes" in repr(res)


def test_the_default_interval_says_it_is_conservative():
    mins = np.geomspace(1, 480, 12)
    rng = np.random.default_rng(1)
    p = 1 / (1 + np.exp(-(3 - 0.6 * np.log2(mins))))
    ds = _ds((rng.random((1, 12, 3)) < p[None, :, None]) * 1.0, mins)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = time_horizon(ds, n_resamples=20, rng=0, fit_check=False)
    assert "conservative" in res.ci.attrs["ci_detail"] and "0.97-0.99" in res.ci.attrs["ci_detail"]
