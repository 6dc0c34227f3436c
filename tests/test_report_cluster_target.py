"""With task clusters the crossed model's new task and the task bootstrap's mean are not one target (audit C1, C2).

A clustered crossed fit draws its new task from a new cluster, every cluster weighing alike; the
bootstrap's mean weighs each cluster by its tasks. The report said "the same target" and explained
the gap only for 4 or more agents (SWE-bench's 2 agents: Bayes 0.07 below, per cluster 0.671 against
0.744 per task), and put a shift down to the weighting even where the weighting moves the mean the
other way (METR's task families: weighting lowers it, Bayes lay above for 9 of 10 agents). The
expected numbers here are by hand and by pandas on the data, never by the report's code.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench import freq
from hierbench.report import Report
from hierbench.report._context import _Context

#: one run per cell; cluster A holds t1-t3, cluster B t4 (by hand: agent a 1, 1, 1 | 0; agent b 1, 0, 1 | 0)
SCORES = np.array([[1.0, 1.0, 1.0, 0.0], [1.0, 0.0, 1.0, 0.0]])
TASKS = ["t1", "t2", "t3", "t4"]
CLUSTERS = ["A", "A", "A", "B"]


def _data() -> xr.Dataset:
    return xr.Dataset(
        {"score": (("agent", "task", "run"), SCORES[:, :, None])},
        coords={"agent": ["a", "b"], "task": TASKS, "cluster": ("task", CLUSTERS)},
    )


def _fit(new_task: list[float], observed: list[float] | None = None, clusters: bool = True) -> xr.DataTree:
    """A crossed fit's posterior (constant draws) and the records the report reads."""
    post = {"mean_new_task": (("chain", "draw", "agent"), np.tile(new_task, (1, 40, 1)))}
    if observed is not None:
        post["mean_observed"] = (("chain", "draw", "agent"), np.tile(observed, (1, 40, 1)))
    cd = xr.Dataset({"task_cluster_idx": ("task", [0, 0, 0, 1])}, coords={"task": TASKS, "cluster": ["A", "B"]})
    agents = ["a", "b"] if len(new_task) == 2 else [f"m{i}" for i in range(len(new_task))]
    fit = xr.DataTree.from_dict({"posterior": xr.Dataset(post, coords={"agent": agents}),
                                 "constant_data": cd if clusters else cd.drop_vars("task_cluster_idx")})  # fmt: skip
    fit.attrs["hierbench_model"] = "crossed"
    fit.attrs["hierbench_spec"] = json.dumps({"model": "crossed", "options": {"clusters": clusters}})
    return fit


def _section(which: str, fit: xr.DataTree, data: xr.Dataset) -> dict:
    from hierbench.report._sec_abilities import _sec_abilities
    from hierbench.report._sec_side import _sec_side

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        boot = freq.bootstrap_ci(data, method="percentile", n_resamples=199, rng=0)
        ctx = _Context(fit=fit, data=data, prob=0.95, rng=0, n_resamples=199, truth=None, freq={"bootstrap": boot})
        rep = Report("t")
        (_sec_side if which == "side" else _sec_abilities)(ctx, rep, "side-by-side" if which == "side" else "abilities")
    return rep.blocks[0]


def _by_hand() -> pd.DataFrame:
    """Per agent: mean per task and per cluster (clusters alike), by pandas on the records."""
    rows = pd.DataFrame([(a, t, c, SCORES[i, j]) for i, a in enumerate("ab") for j, (t, c) in enumerate(zip(TASKS, CLUSTERS, strict=True))],
                        columns=["agent", "task", "cluster", "score"])  # fmt: skip
    per_task = rows.groupby("agent")["score"].mean()
    per_cluster = rows.groupby(["agent", "cluster"])["score"].mean().groupby("agent").mean()
    return pd.DataFrame({"per task": per_task, "per cluster": per_cluster})


def test_abilities_no_longer_call_a_new_cluster_the_bootstraps_target():
    """By hand over both agents: per task (1+1+1+0+1+0+1+0)/8 = 0.625; per cluster, cluster A's
    tasks 1, 0.5, 1 and B's 0: (5/6 + 0) / 2 = 0.417. Before: "the same target as the task bootstrap
    of the benchmark mean".
    """
    text = _section("abilities", _fit([0.6, 0.4], [0.74, 0.5]), _data())["text"]
    assert "the same target as the task bootstrap" not in text
    assert "new task from a new task cluster, every cluster weighing alike" in text
    assert f"{5 / 8:.3f} per task and {(5 / 6 + 0) / 2:.3f} per cluster" in text
    assert "`mean_observed`" in text and "counterpart of the bootstrap's mean" in text
    plain = _section("abilities", _fit([0.6, 0.4], clusters=False), _data())["text"]
    assert "the same target as the task bootstrap of the benchmark mean" in plain  # no clusters in the model: it is


def test_side_by_side_says_the_weighting_with_two_agents_and_shows_both_counterparts():
    """Two agents (the sign test needs 4): the cluster weighting was not said at all. Now the table holds
    each agent's mean per cluster (pandas) and the fit's mean_observed (its posterior mean), and the text
    says which way the weighting moves each agent's mean beside Bayes minus bootstrap.
    """
    hand = _by_hand()
    sec = _section("side", _fit([0.6, 0.4], [0.74, 0.5]), _data())
    table, text = sec["table"], sec["text"]
    np.testing.assert_allclose(table["per-cluster mean"].astype(float), hand["per cluster"].reindex(table.index), atol=1e-12)
    np.testing.assert_allclose(table["Bayes mean_observed"].astype(float), [0.74, 0.5], atol=1e-12)
    assert "the same target when the tasks run" not in text
    assert "not one target where the clusters' means differ" in text
    w = hand["per cluster"] - hand["per task"]  # a: 0.5 - 0.75 = -0.25; b: 1/3 - 0.5 = -0.167
    d = pd.Series([0.6, 0.4], index=["a", "b"]) - hand["per task"]  # Bayes minus bootstrap: -0.15, -0.10
    assert "moves the data's mean the way Bayes differs from the bootstrap" in text
    assert f"a: {w['a']:+.3f} beside {d['a']:+.3f}; b: {w['b']:+.3f} beside {d['b']:+.3f}" in text


def test_side_by_side_does_not_blame_the_weighting_for_a_shift_it_would_reverse():
    """Bayes above the bootstrap while weighing clusters alike lowers both agents' means: the text says
    the weighting moves it the other way and names the model's logit-normal task population and pooling.
    """
    hand = _by_hand()
    sec = _section("side", _fit([0.8, 0.55]), _data())
    text = sec["text"]
    d = pd.Series([0.8, 0.55], index=["a", "b"]) - hand["per task"]
    assert (d > 0).all() and (hand["per cluster"] < hand["per task"]).all()  # opposite signs, by hand
    assert "would move the data's mean the other way" in text
    assert "normal on the logit scale" in text and "pooling" in text
    assert "moves the data's mean the way Bayes differs" not in text


@pytest.mark.parametrize("sign", [1, -1])
def test_a_shared_shift_is_put_down_to_the_weighting_only_when_it_goes_that_way(sign):
    """Ten agents scoring 1, 1, 1 in cluster A and 0 in B: 0.75 per task, 0.5 per cluster (by hand), so
    weighing clusters alike lowers every mean. Bayes minus bootstrap of one sign for 9 of 10 (a shared
    shift by the sign test): lower, the weighting is named with the population; higher (METR's case),
    the weighting is said to go the other way, and the population and pooling named instead.
    """
    from hierbench.report._shift import cluster_weights
    from hierbench.report._shift import shared_shift

    agents = [f"m{i}" for i in range(10)]
    data = xr.Dataset({"score": (("agent", "task", "run"), np.tile([1.0, 1.0, 1.0, 0.0], (10, 1))[:, :, None])},
                      coords={"agent": agents, "task": TASKS, "cluster": ("task", CLUSTERS)})  # fmt: skip
    d = sign * pd.Series([0.04, 0.03, 0.03, 0.02, -0.01, 0.01, 0.04, 0.03, 0.02, 0.05], index=agents)
    words = cluster_weights(_fit([0.5] * 10), data)
    assert f"{0.75:.3f} per task and {0.5:.3f} per cluster" in words
    text = shared_shift(d, True, words)
    assert words in text
    if sign < 0:
        assert "clusters weighing alike" in text and "the same sign for 9 of 10 agents" in text
        assert "the other way" not in text
    else:
        assert "would move the data's mean the other way" in text and "the same sign for 1 of 10 agents" in text
        assert "normal on the logit scale" in text and "clusters weighing alike)" not in text
