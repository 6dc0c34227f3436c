"""Audit J (s76), findings 2, 6 and 8: reliability_profile, quantile_ci, mean_ci, pareto_frontier.

* 2: consistency (pass^k) rested on the tasks run at least k times, 7 of 83 for METR's GPT-4 0314,
  and nothing printed said so; its [0%, 0%] was not warned about; the default k (the median runs
  per cell, 8 on METR) left most of some agents' tasks out.
* 6: the ECE weighed a task by the share of its runs that stated a confidence.
* 8: reliability_profile, quantile_ci(method="bootstrap") and mean_ci said nothing of few tasks;
  the order-statistic interval ignored task clusters silently; ParetoResult.to_frame() labelled its
  percentile bootstrap columns with the one ci_kind "wilson".

Expected values are computed here by hand from the designs (counts, means, the stated rules).
"""

from __future__ import annotations

import warnings
from math import comb

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench import SmallSampleWarning
from hierbench._base import ZeroWidthIntervalWarning
from hierbench.data import from_records
from hierbench.freq import InsufficientRunsWarning
from hierbench.freq import mean_ci
from hierbench.freq import pareto_frontier
from hierbench.freq import quantile_ci
from hierbench.freq import reliability_profile

DIMS = ("agent", "task", "run")


def _caught(f):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = f()
    return out, rec


def _ragged(runs_per_task: list[int], successes: list[int], agent: str = "a") -> xr.Dataset:
    """One agent; task i run runs_per_task[i] times, its first successes[i] runs passing."""
    R = max(runs_per_task)
    s = np.full((1, len(runs_per_task), R), np.nan)
    for i, (n, c) in enumerate(zip(runs_per_task, successes, strict=True)):
        s[0, i, :n] = [1.0] * c + [0.0] * (n - c)
    return xr.Dataset({"score": (DIMS, s)}, coords={"agent": [agent], "task": [f"t{i}" for i in range(s.shape[1])]})


def test_ece_weighs_each_task_the_same_over_its_runs_with_a_confidence():
    # the docstring's example with t1's first two confidences removed (audit J, finding 6)
    runs = [("t1", 1, .90), ("t1", 1, .85), ("t1", 1, .90), ("t2", 1, .80), ("t2", 0, .75), ("t2", 1, .80),
            ("t3", 0, .30), ("t3", 0, .40), ("t3", 1, .50), ("t4", 0, .90), ("t4", 1, .90), ("t4", 0, .85)]
    df = pd.DataFrame(runs, columns=["task", "ok", "conf"])
    df["agent"] = "a"
    df.loc[[0, 1], "conf"] = np.nan
    ds = from_records(df, score="ok", extra={"confidence": "conf"})
    r = reliability_profile(ds, k=3, bins=(0, .5, .8, 1.01), n_resamples=50, rng=0)
    # by hand, each task weighing 1 split over its runs with a confidence (t1: its one run, weight 1;
    # the others 1/3 a run). Bins [0, .5): t3's .30, .40 (weight 2/3: conf .35, success 0);
    # [.5, .8): t3's .50 (1/3: .5, 1) and t2's .75 (1/3: .75, 0);
    # [.8, 1.01]: t1's .90 (1: .9, 1), t2's .80, .80 (2/3: .8, 1), t4's .90, .90, .85 (1: .8833, 1/3)
    bins = [(2 / 3, 0.35, 0.0), (2 / 3, (0.5 + 0.75) / 2, 0.5),
            (1 + 2 / 3 + 1, (0.9 * 1 + 0.8 * 2 / 3 + (0.9 + 0.9 + 0.85) / 3) / (8 / 3), (1 + 2 / 3 + 1 / 3) / (8 / 3))]
    total = sum(w for w, _, _ in bins)
    assert total == pytest.approx(4.0)  # four tasks, each weighing 1
    want = sum(w / total * abs(c - o) for w, c, o in bins)
    assert want == pytest.approx(0.1583, abs=1e-4)  # the audit's figure (the code gave 0.21)
    assert float(r.estimate.sel(agent="a", metric="ece")) == pytest.approx(want)


def test_consistency_on_fewer_tasks_is_named_and_printed_with_its_counts():
    # 10 tasks run 3 times (2 of 3 pass), 2 tasks run 8 times (0 pass): pass^8 rests on those 2
    n, c = [3] * 10 + [8] * 2, [2] * 10 + [0] * 2
    ds = _ragged(n, c)
    r, rec = _caught(lambda: reliability_profile(ds, k=8, n_resamples=100, rng=0))
    short = [str(w.message) for w in rec if issubclass(w.category, InsufficientRunsWarning)]
    acc_all = (10 * 2 / 3 + 0 + 0) / 12
    assert len(short) == 1, short
    assert f"a (consistency on 2 of 12 tasks; accuracy 0% on those, {acc_all:.0%} on all 12)" in short[0]
    line = next(s for s in r.table().splitlines() if "consistency" in s)
    assert line.endswith("(on 2 of 12 tasks)"), line
    assert "a, consistency: 0 [0, 0]  (on 2 of 12 tasks)" in repr(r)
    assert "on " not in next(s for s in r.table().splitlines() if "accuracy" in s)
    # its [0, 0] is named, with the bound that holds there
    zero = [str(w.message) for w in rec if issubclass(w.category, ZeroWidthIntervalWarning)]
    assert len(zero) == 1 and "a, consistency (every one of its 2 tasks has pass^8 0" in zero[0], zero
    assert "pass_hat_k(data, 8)" in zero[0]


def test_default_k_keeps_nine_tenths_of_every_agents_tasks():
    # agent a: 9 tasks run 3 times, 1 run 8 times; b: 10 run 8 times. Median runs per cell: 8 (11 of 20
    # cells), which left a with 1 of its 10 tasks. The rule: the largest k at which every agent has
    # at least 90% of its tasks run k times or more; here k = 3 (a keeps 10 of 10; at k = 4, 1 of 10)
    a = _ragged([3] * 9 + [8], [1] * 9 + [8], "a")
    b = _ragged([8] * 10, [*range(9), 8], "b")
    ds = xr.concat([a, b], "agent")
    n_runs = ds.score.notnull().sum("run").values
    by_hand = max(k for k in range(2, 9) if all((row >= k).sum() >= 0.9 * (row > 0).sum() for row in n_runs))
    assert by_hand == 3 and float(np.median(n_runs)) == 8.0
    r, rec = _caught(lambda: reliability_profile(ds, n_resamples=100, rng=0))
    assert r.attrs["k"] == 3
    assert not [w for w in rec if issubclass(w.category, InsufficientRunsWarning)]
    want_a = (9 * comb(1, 3) / comb(3, 3) + 1) / 10  # pass^3 = C(c, 3) / C(n, 3) per task, by hand
    assert float(r.estimate.sel(agent="a", metric="consistency")) == pytest.approx(want_a)
    assert int(r.n_tasks.sel(agent="a", metric="consistency")) == 10


def test_default_k_on_metr_keeps_the_tasks_accuracy_rests_on(metr_eval):
    n_runs = metr_eval.score.notnull().sum("run").values
    who = (n_runs >= 2).any(1)
    by_hand = max([k for k in range(2, int(n_runs.max()) + 1)
                   if all((row >= k).sum() >= 0.9 * (row > 0).sum() for row in n_runs[who])], default=2)
    r, _ = _caught(lambda: reliability_profile(metr_eval, n_resamples=50, rng=0))
    assert r.attrs["k"] == by_hand == 2
    n = r.n_tasks.sel(agent="GPT-4 0314")
    assert int(n.sel(metric="accuracy")) == 83 and int(n.sel(metric="consistency")) == 82  # was 7 at k = 8


def _few(n_tasks: int, clusters: list[str] | None = None) -> xr.Dataset:
    rng = np.random.default_rng(0)
    s = rng.integers(0, 2, (2, n_tasks, 3)).astype(float)
    cost = rng.uniform(1, 2, (2, n_tasks, 3))
    ds = xr.Dataset({"score": (DIMS, s), "cost": (DIMS, cost)}, coords={"agent": ["a", "b"]})
    return ds if clusters is None else ds.assign_coords(cluster=("task", clusters))


FEW_CASES = {
    "reliability_profile": lambda ds: reliability_profile(ds, k=2, n_resamples=100, rng=0),
    "quantile_ci": lambda ds: quantile_ci(ds, var="cost", method="bootstrap", n_resamples=100, rng=0),
    "mean_ci": lambda ds: mean_ci(ds, var="cost", n_resamples=100, rng=0),
}


@pytest.mark.parametrize("name", list(FEW_CASES))
def test_few_tasks_warn_as_pareto_frontier_does(name):
    res, rec = _caught(lambda: FEW_CASES[name](_few(8)))
    small = [str(w.message) for w in rec if issubclass(w.category, SmallSampleWarning)]
    _, ref = _caught(lambda: pareto_frontier(_few(8), n_resamples=100, rng=0))
    said = [str(w.message) for w in ref if issubclass(w.category, SmallSampleWarning)]
    head = "the bootstrap resamples 8 tasks, fewer than 10: a bootstrap over so few units covers less than its 95%"
    assert len(small) == 1 and small[0].startswith(head) and said[0].startswith(head), (small, said)
    assert res.attrs["few_units"] + "." == small[0] and res.ci.attrs["few_units"] + "." == small[0]
    res, rec = _caught(lambda: FEW_CASES[name](_few(10)))
    assert not [w for w in rec if issubclass(w.category, SmallSampleWarning)]
    assert "few_units" not in res.attrs


def test_order_statistic_interval_warns_where_tasks_have_clusters():
    ds = _few(12, [f"c{i // 3}" for i in range(12)]).isel(run=[0])  # one run per task: only the clusters
    _, rec = _caught(lambda: quantile_ci(ds, 0.5, var="cost"))
    msgs = [str(w.message) for w in rec]
    assert any("4 clusters of `cluster`" in m and "method='bootstrap'" in m and "independent" in m for m in msgs), msgs
    _, rec = _caught(lambda: quantile_ci(ds, 0.5, var="cost", cluster=None))
    assert not [w for w in rec if "clusters" in str(w.message)]


def test_pareto_frame_gives_each_interval_its_kind():
    df = pareto_frontier(_few(12), n_resamples=100, rng=0).to_frame()
    assert (df["ci_kind"] == "wilson").all()
    assert (df["accuracy_ci_kind"] == "percentile").all() and (df["cost_ci_kind"] == "percentile").all()
    assert (df["accuracy_ci_prob"] == 0.95).all() and (df["cost_ci_prob"] == 0.95).all()
