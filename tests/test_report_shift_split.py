"""Bayes minus bootstrap split at the fit's own mean over these tasks; a target claimed only where shown (audit B s71).

On SWE-bench the Bayes column lay below the task bootstrap for 23 of 24 agents and the report called
the gap a difference of target because the median of the cluster weighting's shift had the same
sign, while agent by agent the two shifts barely tracked (Spearman 0.18) and the fit's own mean over
these tasks (``mean_observed``) matched the bootstrap: the gap was the model's normal task population.
The report now splits the gap at ``mean_observed``, says which number to quote, in Agent abilities
too, calls it a difference of target only where the weighting tracks it agent by agent, and labels a
clustered fit's ``mean_new_task`` as a new task from a new task cluster (finding 4). Expected values
come from the draws and the scores by numpy, pandas and scipy, never from the report's code.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.stats import spearmanr

from hierbench import freq
from hierbench.report import Report
from hierbench.report._context import _Context
from hierbench.report._context import _label

AGENTS = [f"m{i}" for i in range(8)]
TASKS = [f"t{j}" for j in range(6)]
CLUSTERS = ["A", "A", "A", "A", "B", "B"]  # 4 tasks in A, 2 in B
RUNS = 4


#: successes of 4 runs in each of an agent's cluster-A tasks and cluster-B tasks: A above B, by margins that vary
WINS_A, WINS_B = [2, 3, 3, 4, 4, 4, 3, 4], [1, 1, 2, 0, 1, 3, 0, 2]


def _data() -> xr.Dataset:
    """Eight agents, four runs a cell; each agent's A tasks won WINS_A times, its B tasks WINS_B times."""
    wins = np.where(np.array(CLUSTERS) == "A", np.array(WINS_A)[:, None], np.array(WINS_B)[:, None])
    runs = (np.arange(RUNS)[None, None, :] < wins[:, :, None]).astype(float)
    return xr.Dataset({"score": (("agent", "task", "run"), runs)},
                      coords={"agent": AGENTS, "task": TASKS, "cluster": ("task", CLUSTERS)})  # fmt: skip


def _by_hand(data: xr.Dataset) -> pd.DataFrame:
    """Per agent, by pandas: the mean per task (the bootstrap's estimate) and per cluster (clusters alike)."""
    df = data["score"].to_dataframe().reset_index()
    cell = df.groupby(["agent", "task", "cluster"])["score"].mean().reset_index()
    per_task = cell.groupby("agent")["score"].mean()
    per_cluster = cell.groupby(["agent", "cluster"])["score"].mean().groupby("agent").mean()
    return pd.DataFrame({"per task": per_task, "per cluster": per_cluster})


def _fit(new_task: np.ndarray, observed: np.ndarray, clusters: bool = True) -> xr.DataTree:
    """A crossed fit's posterior: draws (1 chain, 50 draws) of mean_new_task and mean_observed."""
    post = xr.Dataset({"mean_new_task": (("chain", "draw", "agent"), new_task[None]),
                       "mean_observed": (("chain", "draw", "agent"), observed[None])}, coords={"agent": AGENTS})  # fmt: skip
    cd = xr.Dataset({"task_cluster_idx": ("task", [0, 0, 0, 0, 1, 1])}, coords={"task": TASKS, "cluster": ["A", "B"]})
    fit = xr.DataTree.from_dict({"posterior": post,
                                 "constant_data": cd if clusters else cd.drop_vars("task_cluster_idx")})  # fmt: skip
    fit.attrs["hierbench_model"] = "crossed"
    fit.attrs["hierbench_spec"] = json.dumps({"model": "crossed", "options": {"clusters": clusters}})
    return fit


def _draws(centre: pd.Series, sd: float, seed: int) -> np.ndarray:
    """50 draws per agent around ``centre`` (agents in AGENTS order)."""
    return centre.reindex(AGENTS).to_numpy()[None, :] + sd * np.random.default_rng(seed).standard_normal((50, 8))


def _ctx(fit: xr.DataTree, data: xr.Dataset) -> _Context:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        boot = freq.bootstrap_ci(data, method="percentile", n_resamples=99, rng=0)
    return _Context(fit=fit, data=data, prob=0.95, rng=0, n_resamples=99, truth=None, freq={"bootstrap": boot})


def _side_text(ctx: _Context) -> str:
    from hierbench.report._sec_side import _sec_side

    rep = Report("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _sec_side(ctx, rep, "side-by-side")
    return rep.blocks[0]["text"]


@pytest.fixture(scope="module")
def swe_like():
    """Bayes 0.05 below the per-task mean for every agent (plus draw noise); the fit's own mean over these
    tasks equal to the per-task mean up to draw noise: SWE-bench's case, the model's population alone.
    """
    data = _data()
    hand = _by_hand(data)
    new, obs = _draws(hand["per task"] - 0.05, 0.02, 1), _draws(hand["per task"] + 0.002, 0.01, 2)
    return data, hand, new, obs, _ctx(_fit(new, obs), data)


def test_the_gap_is_split_at_the_fits_own_mean_over_these_tasks(swe_like):
    """By numpy over the draws: new task minus these tasks, and these tasks minus the per-task mean,
    per agent, their medians and counts; the text never calls the gap a difference of target here, and
    says the bootstrap's interval is the one to quote.
    """
    _, hand, new, obs, ctx = swe_like
    boot = hand["per task"].reindex(AGENTS).to_numpy()
    pop, these = new.mean(0) - obs.mean(0), obs.mean(0) - boot
    d = new.mean(0) - boot
    assert (d < 0).all()  # a shift every agent shares: the sign test of 8 of 8 is 0.008
    text = _side_text(ctx)
    assert f"Bayes minus bootstrap: median {np.median(d):+.3f}, Bayes lower for 8 of 8 agents." in text
    assert f"has median {np.median(pop):+.3f}, of Bayes minus bootstrap's sign for {int((pop < 0).sum())} of 8" in text
    assert f"has median {np.median(these):+.3f}, within 0.01 of zero for {int((np.abs(these) <= 0.01).sum())} of 8" in text
    assert f"larger part for {int((np.abs(pop) > np.abs(these)).sum())} of 8 agents" in text
    assert "a new cluster, every cluster weighing alike" in text
    assert "it is the one to quote: the Bayes number rests on the model's normal task population" in text
    rho = spearmanr(hand["per cluster"] - hand["per task"], d).statistic
    nearer = int((np.abs(d - (hand["per cluster"] - hand["per task"]).to_numpy()) < np.abs(d)).sum())
    assert not (rho >= 0.5 and nearer >= 6)  # the premise: the weighting does not track the gap here
    assert f"Spearman correlation {rho:.2f}" in text and f"per-task mean for {nearer} of 8 agents" in text
    assert "does not make the two columns differ in target" in text
    assert "not by chance alone" not in text and "a difference of target (" not in text


def test_agent_abilities_says_the_shift_its_split_and_which_number_to_quote(swe_like):
    """The abilities section, read first, carries the same split (numpy, as above) and the sentence on
    which number to quote; with clusters its label is a new task from a new task cluster.
    """
    from hierbench.report._report import as_table
    from hierbench.report._sec_abilities import _new_task_target

    _, hand, new, obs, ctx = swe_like
    boot = hand["per task"].reindex(AGENTS).to_numpy()
    intervals = {"Bayes crossed (95% ETI)": ctx.bayes_frame(), "task bootstrap (percentile, 95%)": as_table(ctx.bootstrap())}
    text = _new_task_target(ctx, True, intervals)
    d, pop = new.mean(0) - boot, new.mean(0) - obs.mean(0)
    assert f"Bayes minus bootstrap: median {np.median(d):+.3f}, Bayes lower for 8 of 8 agents." in text
    assert f"has median {np.median(pop):+.3f}" in text
    assert "model-free answer for a new task like these" in text and "it is the one to quote" in text
    assert _label(ctx.var) == "expected score on a new task from a new task cluster"
    assert ctx.var == "mean_new_task" and f"`{ctx.var}`" == "`mean_new_task`"  # the name itself is unchanged


def test_the_weighting_is_called_a_target_only_where_it_tracks_the_gap_agent_by_agent():
    """Bayes at each agent's per-cluster mean (pandas) up to draw noise: the weighting's shift and the gap
    agree agent by agent (Spearman by scipy at least 0.5, Bayes nearer the per-cluster mean for at least
    6 of 8), and only then is the gap called a difference of target (how the two weigh these clusters).
    """
    data = _data()
    hand = _by_hand(data)
    new, obs = _draws(hand["per cluster"], 0.002, 3), _draws(hand["per task"], 0.002, 4)
    d = new.mean(0) - hand["per task"].reindex(AGENTS).to_numpy()
    w = (hand["per cluster"] - hand["per task"]).reindex(AGENTS).to_numpy()
    rho = spearmanr(w, d).statistic
    assert (d < 0).all() and rho >= 0.5 and int((np.abs(d - w) < np.abs(d)).sum()) >= 6  # the premise, by hand
    text = _side_text(_ctx(_fit(new, obs), data))
    assert f"Spearman correlation {rho:.2f}" in text
    assert "the weighting accounts for the gap agent by agent, so on these clusters the two columns differ by how they " \
           "weigh them, a difference of target" in text


def test_an_unclustered_fit_keeps_the_population_label():
    """Without clusters in the model its new task is from the task population, as the label said."""
    data = _data()
    hand = _by_hand(data)
    fit = _fit(_draws(hand["per task"], 0.01, 5), _draws(hand["per task"], 0.01, 6), clusters=False)
    ctx = _Context(fit=fit, data=data, prob=0.95, rng=0, n_resamples=99, truth=None)
    assert _label(ctx.var) == "expected score on a new task from the task population"
