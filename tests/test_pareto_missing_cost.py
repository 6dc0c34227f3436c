"""Audit S finding 1: ``pareto_frontier`` with a cost missing on some scored tasks, or on every one.

Its "score" was the mean over the tasks that had a cost, not the agent's score (on SWE-bench
with the cost dropped on 30% of the solved tasks it showed 0.6847 for a success rate of
0.744), with no word that tasks were left out; on METR, which records no cost, every agent read
"score nan". Now the accuracy is each agent's mean over every scored task (its success rate)
and the cost the mean over the tasks with a cost, a warning names the agents and counts their
scored tasks without a cost, and a log with no cost at all is refused.

Expected values: numpy by hand on a toy log (per task the mean over runs, then the mean over
the tasks that record the value).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench import HierbenchError
from hierbench import HierbenchWarning
from hierbench.freq import pareto_frontier


def _toy() -> xr.Dataset:
    """Three agents x 6 tasks x 2 runs; agent ``a`` lost its cost on its 2 solved tasks 0 and 1."""
    rng = np.random.default_rng(5)
    score = (rng.random((3, 6, 2)) < np.array([0.7, 0.5, 0.3])[:, None, None]).astype(float)
    score[0, :2] = 1.0
    cost = rng.gamma(2.0, 0.5, (3, 6, 2))
    cost[0, :2] = np.nan  # cost lost where agent a solved: not at random
    score[2, 5] = np.nan  # agent c never ran task 5 (no score), but its cost was logged
    dims = ("agent", "task", "run")
    return xr.Dataset({"score": (dims, score), "cost": (dims, cost)}, coords={"agent": ["a", "b", "c"]})


def test_accuracy_is_the_mean_over_every_scored_task_and_cost_over_the_costed_ones():
    ds = _toy()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = pareto_frontier(ds, n_resamples=200, rng=0)
    s, c = ds.score.values, ds.cost.values
    acc = [np.mean([s[i, t].mean() for t in range(6) if np.isfinite(s[i, t]).any()]) for i in range(3)]
    cost = [np.mean([np.nanmean(c[i, t]) for t in range(6) if np.isfinite(c[i, t]).any()]) for i in range(3)]
    np.testing.assert_allclose(res.accuracy.values, acc)
    np.testing.assert_allclose(res.cost.values, cost)
    # the repr's "score" is that accuracy
    assert f"(score {acc[0]:.4g}, cost {cost[0]:.4g}" in repr(res)
    gaps = [str(w.message) for w in rec if w.category is HierbenchWarning and "no recorded 'cost'" in str(w.message)]
    assert len(gaps) == 1, [str(w.message) for w in rec]
    # agent a: 2 of its 6 scored tasks have no cost; b and c have a cost on every scored task
    assert "1 agent has scored tasks with no recorded 'cost'" in gaps[0]
    assert "a (2 of 6)" in gaps[0] and "b (" not in gaps[0] and "c (" not in gaps[0]


def test_resampled_accuracy_is_over_every_scored_task():
    # agent a solves tasks 0-1 (cost lost there) and fails tasks 2-5: its accuracy is 2/6 over every
    # scored task, 0 over the costed ones. A task resample of 6 draws (weights w summing to 6) gives
    # sum(w * solved) / 6, whose mean over resamples is 1/3 exactly (Monte Carlo sd of the mean of
    # 4000 resamples: sqrt(6 * (1/3) * (2/3)) / 6 / sqrt(4000) < 0.004)
    ds = _toy()
    ds["score"] = ds.score.where(ds.agent != "a", xr.DataArray([1.0, 1, 0, 0, 0, 0], dims="task"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pareto_frontier(ds, n_resamples=4000, rng=1)
    assert float(res.accuracy.sel(agent="a")) == pytest.approx(1 / 3)
    mean_acc = float(res.distribution.sel(quantity="score", agent="a").mean())
    assert mean_acc == pytest.approx(1 / 3, abs=0.016)


def test_no_cost_at_all_is_refused():
    ds = _toy()
    ds["cost"] = ds.cost * np.nan
    with pytest.raises(HierbenchError, match=r"`data.cost` records no value .* no score-cost frontier"):
        pareto_frontier(ds, n_resamples=50, rng=0)


def test_an_agent_without_cost_keeps_its_accuracy_off_the_frontier():
    ds = _toy()
    ds["cost"] = ds.cost.where(ds.agent != "b")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pareto_frontier(ds, n_resamples=50, rng=0)
    assert np.isnan(float(res.estimate.sel(agent="b")))
    assert float(res.accuracy.sel(agent="b")) == pytest.approx(float(ds.score.sel(agent="b").mean(("task", "run"))))
