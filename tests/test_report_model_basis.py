"""The ranks' and pairs' basis sentence follows the model fitted (audit N, finding 1).

The report said of every fit but Bradley-Terry that its ranks "compare agents that ran different tasks
through the model's task effects". The beta-binomial has no task effect, and a formula model ranks each
agent's expected mean over its own tasks, which is exactly not adjusted for the tasks it ran (METR:
o1-preview skipped 8 hard tasks; own-task means 0.544 vs Claude 3.5 Sonnet (Old) 0.463, on shared tasks
0.544 vs 0.494, paired p 0.361, beside P(a > b) = 0.000). The posteriors here are drawn at random (no
sampler): what is checked is which sentence each model's structure gets, and the pandas means of the
log show the case the formula sentence warns of.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import xarray as xr

from hierbench.data import model_design
from hierbench.report._context import _Context
from hierbench.report._context import _Skip
from hierbench.report._report import Report
from hierbench.report._sec_pairs import _sec_pairwise
from hierbench.report._sec_ranks import _sec_ranks

D = ("chain", "draw")


def _run(func, fit, data, sid):
    ctx = _Context(fit=fit, data=data, prob=0.95, rng=0, n_resamples=99, truth=None, freq=None,
                   subset=[], say=lambda *_: None)  # fmt: skip
    rep = Report("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            func(ctx, rep, sid)
        except _Skip as why:
            return f"skipped: {why}"
    return rep.blocks[0]["text"]


def _count_fit(model: str, post: dict, n_agents=3, n_tasks=4) -> xr.DataTree:
    rng = np.random.default_rng(0)
    agents = [f"a{i}" for i in range(n_agents)]
    post = {k: (dims, rng.normal(0, 1, [2, 50, *(n_agents if d == "agent" else n_tasks for d in dims[2:])]))
            for k, dims in post.items()}  # fmt: skip
    fit = xr.DataTree.from_dict({
        "posterior": xr.Dataset(post, coords={"agent": agents}),
        "constant_data": xr.Dataset({"n_runs": (("agent", "task"), np.ones((n_agents, n_tasks)))},
                                    coords={"agent": agents}),
    })  # fmt: skip
    fit.attrs = {"hierbench_model": model, "hierbench_spec": json.dumps({"model": model, "options": {}})}
    return fit


def test_beta_binomial_ranks_rest_on_each_agents_own_tasks():
    bb = _count_fit("beta_binomial", {"mean_new_task": (*D, "agent"), "rho": (*D, "agent")})
    text = _run(_sec_ranks, bb, None, "ranks")
    assert "through the model's task effects" not in text
    assert "each from the agent's own tasks: the beta-binomial model has no task effects" in text
    assert "not adjusted for which tasks an agent ran" in text
    crossed = _count_fit("crossed", {"mean_new_task": (*D, "agent"), "task_effect": (*D, "task")})
    assert "through the model's task effects" in _run(_sec_ranks, crossed, None, "ranks")


def _skipping_log() -> xr.Dataset:
    """Agent a skips the two hardest of 8 tasks, which b fails; elsewhere b is a shade better."""
    score = np.array([[0.6, 0.6, 0.6, 0.6, 0.6, 0.6, np.nan, np.nan],
                      [0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.0, 0.0]])[:, :, None]  # fmt: skip
    return xr.Dataset({"score": (("agent", "task", "run"), score)},
                      coords={"agent": ["a", "b"], "task": [f"t{j}" for j in range(8)]})  # fmt: skip


def _formula_fit(data) -> xr.DataTree:
    """A formula fit's posterior of ``score ~ 0 + agent + (1|task)`` drawn near the log's logits."""
    design = model_design("score ~ 0 + agent + (1|task)", data, family="fractional")
    rng = np.random.default_rng(1)
    beta = np.log(0.6 / 0.4) + rng.normal(0, 0.05, (2, 100, len(design.coef)))
    task = design.random[0]
    post = {"beta": ((*D, "coef"), beta), "sd": ((*D, "component"), np.full((2, 100, 1), 0.1)),
            f"re[{task.name}]": ((*D, "task"), rng.normal(0, 0.05, (2, 100, task.levels.size))),
            "interior": ((*D, "task"), np.full((2, 100, task.levels.size), 5.0))}  # fmt: skip
    coords = {"coef": list(design.coef), "component": [task.name], "task": task.levels.tolist()}
    fit = xr.DataTree.from_dict({"posterior": xr.Dataset(post, coords=coords)})
    spec = {"model": "mixed", "options": {"formula": design.formula, "family": "fractional", "levels": None}}
    fit.attrs = {"hierbench_model": "mixed", "hierbench_spec": json.dumps(spec)}
    return fit


def test_formula_ranks_and_pairs_say_the_tasks_are_held_fixed_and_not_adjusted():
    data = _skipping_log()
    s = data["score"].to_series().dropna()
    own = s.groupby(level="agent").mean()  # pandas, from the log: a 0.600 above b 0.525 on its own tasks
    shared = s[s.index.get_level_values("task").isin(["t0", "t1", "t2", "t3", "t4", "t5"])].groupby(level="agent").mean()
    assert own["a"] > own["b"] and shared["a"] < shared["b"]  # the case the sentence is for
    fit = _formula_fit(data)
    ranks = _run(_sec_ranks, fit, data, "ranks")
    assert "through the model's task effects" not in ranks
    assert "over its own tasks, those tasks held fixed: they are not adjusted for which tasks an agent ran" in ranks
    pairs = _run(_sec_pairwise, fit, data, "pairwise")
    assert "read it beside each pair's own p-value" not in pairs
    assert "It holds these tasks fixed" in pairs and "compares different task sets" in pairs
    assert "not the counterpart of the pair's paired p-value" in pairs
