"""Audit T findings 4, 5, 9 and 10: the bootstrap's and the frontier's words say what was estimated and resampled.

* 4: ``mean_ci(var="cost")`` on METR warned "no runs at all" for agents with hundreds of scored
  runs whose cost is missing in every one. Expected counts: pandas on the raw CSV
  (``score_binarized`` per ``alias``, humans left out, as ``load_metr`` does).
* 5: the few-clusters warning of a mean cost sent the reader to ``success_rate(data).ci``, which
  estimates the success rate, not the cost. Expected: the shortfall sentence alone.
* 9: ``pareto_frontier``'s repr did not say its estimate is P(on the frontier) under task
  resampling, nor that its Wilson interval is Monte Carlo error. Expected: the header text,
  each agent's accuracy and cost by pandas, the interval against statsmodels' Wilson interval
  of the share over the resamples.
* 10: ``BootstrapResult``'s repr named neither the quantity nor the resampling unit. Expected:
  the header strings, the cluster count by construction (12 labels).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from statsmodels.stats.proportion import proportion_confint

from hierbench import SmallSampleWarning
from hierbench.freq import EmptySampleWarning
from hierbench.freq import bootstrap_ci
from hierbench.freq import mean_ci
from hierbench.freq import pareto_frontier

SWE_SIZES = [231, 75, 44, 34, 32, 22, 22, 19, 10, 8, 2, 1]  # SWE-bench Verified's repositories


def _log(n_agents: int = 2, sizes=None, runs: int = 1, seed: int = 0) -> xr.Dataset:
    """Scores (0/1) and costs (dollars) over agents x tasks x runs, clustered by a column 'repo' when ``sizes``."""
    rng = np.random.default_rng(seed)
    T = sum(sizes) if sizes else 40
    shape = (n_agents, T, runs)
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), rng.binomial(1, 0.5, shape).astype(float)),
         "cost": (("agent", "task", "run"), rng.gamma(2.0, 0.3, shape))},
        coords={"agent": [f"a{i}" for i in range(n_agents)], "task": [f"t{i}" for i in range(T)],
                "run": np.arange(runs)},
    )  # fmt: skip
    if sizes:
        labels = np.repeat([f"r{g}" for g in range(len(sizes))], sizes)
        ds = ds.assign_coords(cluster=("task", labels, {"source_column": "repo"}))
    return ds


def _caught(fn, *args, **kw):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = fn(*args, **kw)
    return res, rec


# ---------------------------------------------------------------------------- finding 4


def test_metr_cost_names_the_missing_cost_not_missing_runs(metr_eval, shared_data):
    raw = pd.read_csv(shared_data / "metr" / "metr_all_runs_2025-02-27_19b0311.csv.gz")
    raw = raw[raw["alias"] != "human"]
    runs = raw.groupby("alias")["score_binarized"].count()
    assert raw["dollar_equivalent"].notna().sum() == 0  # no model run has a cost in the file
    res, rec = _caught(mean_ci, metr_eval, var="cost", n_resamples=50, rng=0)
    empty = [str(w.message) for w in rec if issubclass(w.category, EmptySampleWarning)]
    assert len(empty) == 1, empty
    assert "no runs at all" not in empty[0] and "drop_sel" not in empty[0]
    assert empty[0].startswith(f"{len(runs)} agents have no cost at all")
    assert f"all {len(runs)} have scored runs ({runs.min()} to {runs.max()} each)" in empty[0]
    assert "their cost was not recorded" in empty[0]
    assert res.estimate.isnull().all() and (res.n_tasks == 0).all()


def test_an_agent_that_never_ran_is_told_from_one_whose_cost_is_missing():
    ds = _log(3, runs=3)
    ds["cost"] = ds["cost"].where(ds.agent == "a0")  # a1 and a2 ran, no cost recorded
    ds["score"] = ds["score"].where(ds.agent != "a2")  # a2 never ran
    ds["cost"] = ds["cost"].where(ds.agent != "a2")
    _, rec = _caught(mean_ci, ds, n_resamples=50, rng=0)
    (text,) = [str(w.message) for w in rec if issubclass(w.category, EmptySampleWarning)]
    # by construction: a1 has 40 tasks x 3 runs scored, a2 none
    assert text.startswith("2 agents have no cost at all (e.g. ['a1', 'a2'])")
    assert "1 of them has scored runs (120 each)" in text


def test_bootstrap_of_a_cost_array_says_no_cost_and_advises_no_drop():
    ds = _log(2)
    cost = ds["cost"].where(ds.agent == "a0")
    _, rec = _caught(bootstrap_ci, cost, n_resamples=50, rng=0)
    (text,) = [str(w.message) for w in rec if issubclass(w.category, EmptySampleWarning)]
    assert "agent 'a1' (no cost at all)" in text and "drop_sel" not in text
    # the scores themselves: an agent without a value never ran, as before
    _, rec = _caught(bootstrap_ci, ds["score"].where(ds.agent == "a0"), n_resamples=50, rng=0)
    (text,) = [str(w.message) for w in rec if issubclass(w.category, EmptySampleWarning)]
    assert "agent 'a1' (no runs at all)" in text and "drop_sel(agent=['a1'])" in text


# ---------------------------------------------------------------------------- finding 5


def test_few_clusters_of_a_mean_cost_give_no_success_rate_advice():
    ds = _log(2, SWE_SIZES)
    res, rec = _caught(mean_ci, ds, var="cost", n_resamples=50, rng=0)
    (text,) = [str(w.message) for w in rec if issubclass(w.category, SmallSampleWarning)]
    g_eff = sum(SWE_SIZES) ** 2 / sum(n * n for n in SWE_SIZES)
    assert f"12 clusters of `repo` (1 to 231 tasks), worth {g_eff:.1f} equal ones" in text
    assert "success_rate" not in text and "CR2" not in text and "simulation" not in text
    assert res.attrs["few_clusters"] + "." == text
    # the scores keep their route: success_rate's interval (CR2 SE, Bell-McCaffrey df) estimates their mean
    _, rec = _caught(bootstrap_ci, ds, n_resamples=50, rng=0)
    (text,) = [str(w.message) for w in rec if issubclass(w.category, SmallSampleWarning)]
    assert "success_rate(data).ci takes the CR2 SE" in text


# ---------------------------------------------------------------------------- finding 10


def test_bootstrap_repr_names_the_quantity_and_the_unit_resampled():
    ds = _log(2, SWE_SIZES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallSampleWarning)
        cost = mean_ci(ds, var="cost", n_resamples=50, rng=0)
        score = bootstrap_ci(ds, n_resamples=50, rng=0)
    assert cost.attrs["quantity"] == "mean cost" and cost.attrs["scale"] == "cost"
    lines = repr(cost).splitlines()
    assert lines[0] == (
        "BootstrapResult: mean cost, 95% percentile interval for a new draw of task clusters, "
        "resampling 12 clusters of `repo`"
    )
    assert len(lines) == 3 and lines[1].startswith("  a0: ")  # a header and one line per agent
    assert repr(score).splitlines()[0].startswith("BootstrapResult: mean score, 95% percentile interval")
    plain = bootstrap_ci(_log(2, runs=3), n_resamples=50, rng=0, prob=0.9)
    assert repr(plain).splitlines()[0] == (
        "BootstrapResult: mean score, 90% percentile interval for a new draw of tasks, resampling tasks"
    )
    runs = bootstrap_ci(_log(2, runs=3), scheme="runs", n_resamples=50, rng=0)
    assert repr(runs).splitlines()[0] == (
        "BootstrapResult: mean score, 95% percentile interval for these tasks, resampling the runs "
        "within each (agent, task) cell"
    )


# ---------------------------------------------------------------------------- finding 9


def test_pareto_repr_says_what_the_share_and_its_interval_are():
    ds = _log(3, SWE_SIZES, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallSampleWarning)
        res = pareto_frontier(ds, n_resamples=400, rng=0)
    lines = repr(res).splitlines()
    assert lines[0] == (
        "ParetoResult: P(on the score-cost frontier) over 400 resamples of 12 clusters of `repo`; "
        "95% wilson interval: the Monte Carlo error of that share, not a confidence interval"
    )
    assert len(lines) == 4
    # each agent's accuracy and cost: pandas' mean over tasks of the per-task means
    df = ds.to_dataframe().reset_index()
    cell = df.groupby(["agent", "task"])[["score", "cost"]].mean().groupby("agent").mean()
    for line, (agent, row) in zip(lines[1:], cell.iterrows(), strict=True):
        assert line.startswith(f"  {agent}: ")
        assert f"(score {row['score']:.4g}, cost {row['cost']:.4g}" in line
        assert line.endswith("; on the frontier)") == bool(res.on_frontier.sel(agent=agent))
    # the interval is the Wilson interval of the share over the resamples (statsmodels)
    n_on = np.rint(res.estimate.values * 400).astype(int)
    lo, hi = proportion_confint(n_on, 400, alpha=0.05, method="wilson")
    np.testing.assert_allclose(res.ci.values, np.column_stack([lo, hi]), atol=1e-12)


def test_pareto_names_the_clusters_by_their_column():
    ds = _log(2, SWE_SIZES, seed=1)
    res, rec = _caught(pareto_frontier, ds, n_resamples=50, rng=0)
    (text,) = [str(w.message) for w in rec if issubclass(w.category, SmallSampleWarning)]
    assert "12 clusters of `repo`" in text and res.attrs["cluster_column"] == "repo"
    plain = pareto_frontier(_log(2, seed=1), n_resamples=50, rng=0)
    assert "over 50 resamples of tasks;" in repr(plain).splitlines()[0]


@pytest.mark.parametrize("var", ["cost", None])
def test_an_unnamed_array_is_a_mean_of_values_not_of_scores(var):
    cost = _log(1)["cost"].rename(None)
    res = mean_ci(cost, var=var, n_resamples=50, rng=0)
    assert res.attrs["quantity"] == "mean value"
