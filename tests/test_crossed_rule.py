"""One owner per rule: what a crossed design leaves unidentified is decided once
(:func:`hierbench.metrics.unidentified_components`), and every consumer agrees with it.

The expected folding is the rule's definition written out for the four designs (one or
several agents x one or several runs per cell), not read from the code under test; each
consumer (the rule from the design figures, the crossed builder's structure, the crossed
variance components on both scales, the G-study adapter, pass^k's warning) must give the
same folding and the rule's own reason text.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench import freq
from hierbench._base import UndefinedWarning
from hierbench.bayes import build_crossed
from hierbench.metrics import bayes_variance_components
from hierbench.metrics import crossed_pass_k
from hierbench.metrics import crossed_variance_components
from hierbench.metrics import unidentified_by_design
from hierbench.metrics import unidentified_components
from hierbench.testing import simulate_eval

#: the rule's definition: (agents, runs per cell) -> {undefined component: the component that
#: holds it (None: nothing)}. One agent: no spread between agents, and its agent x task effect
#: is inside the task effect; one run per cell: agent x task is inside run-to-run noise; one
#: agent with one run per task: nothing repeats within a task, the task spread is inside it too.
FOLDING = {
    (1, 1): {"agent": None, "agent:task": "task", "task": "residual"},
    (1, 3): {"agent": None, "agent:task": "task"},
    (3, 1): {"agent:task": "residual"},
    (3, 3): {},
}
#: what each reason must say, by (component, where it goes)
PHRASE = {
    ("agent", None): "one agent, so there is no spread between agents",
    ("agent:task", "task"): "one agent, so the agent x task interaction cannot be told apart from the task effect",
    ("agent:task", "residual"): "one run per agent x task cell, so the agent x task interaction cannot be told "
    "apart from run-to-run noise",
    ("task", "residual"): "nothing repeats within a task",
}
DESIGNS = list(FOLDING)
T = 10


def _fit(
    n_agents: int, n_runs: int, agent_task: str = "marginal", idle: int = 0, draws: int = 3, seed: int = 0
) -> xr.DataTree:
    """A crossed fit (agents="random": ``sd_agent`` whatever the design) of an n_agents x T design.

    ``idle`` more agents come first in the fit with no runs at all (in the posterior, on their prior).
    Where the rule leaves the task spread undefined (one agent, one run) the fit has no task
    effect and no ``sd_task``, as the builder leaves them out.
    """
    no_task = "task" in FOLDING[n_agents, n_runs]
    g = np.random.default_rng(seed)
    n = np.vstack([np.zeros((idle, T), int), np.full((n_agents, T), n_runs)])
    n_agents += idle
    cd = ("chain", "draw")
    post = {
        "mu": (cd, g.normal(-0.3, 0.3, (2, draws))),
        "agent_effect": ((*cd, "agent"), g.normal(0.5, 0.3, (2, draws, n_agents))),
        "task_effect": ((*cd, "task"), g.normal(0, 1, (2, draws, T))),
        "sd_task": (cd, g.uniform(0.5, 1.5, (2, draws))),
        "sd_agent": (cd, g.uniform(0.3, 1.0, (2, draws))),
    }
    if no_task:
        del post["task_effect"], post["sd_task"]
    if agent_task != "none":
        post["sd_agent_task"] = (cd, g.uniform(0.2, 0.8, (2, draws)))
    const = {"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), g.binomial(n, 0.5))}
    coords = {"agent": [f"a{i}" for i in range(n_agents)], "task": [f"t{t}" for t in range(T)]}
    dt = xr.DataTree.from_dict(
        {"posterior": xr.Dataset(post, coords=coords), "constant_data": xr.Dataset(const, coords=coords)}
    )
    dt.attrs["hierbench_model"] = "crossed"
    dt.attrs["hierbench_spec"] = json.dumps({"options": {"agent_task": agent_task, "agents": "random", "n_quad": 7}})
    return dt


def _quiet(f, *args, **kwargs):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = f(*args, **kwargs)
    return out, seen


@pytest.mark.parametrize("design", DESIGNS)
def test_the_rule_is_its_definition(design):
    m, r = design
    rule = unidentified_components(np.full((m, T), r))
    assert {c: p for c, (_, p) in rule.items()} == FOLDING[design]
    for c, (why, partner) in rule.items():
        assert why.startswith(PHRASE[c, partner]) or PHRASE[c, partner] in why, (c, why)
    # the same rule from the design figures; an agent without runs is not counted
    assert unidentified_by_design(m, r) == rule
    assert unidentified_components(np.vstack([np.full((m, T), r), np.zeros((1, T), int)])) == rule


@pytest.mark.parametrize("design", DESIGNS)
def test_the_builders_structure_says_what_the_rule_says(design):
    m, r = design
    rule = unidentified_components(np.full((m, T), r))
    counts = _fit(m, r)["constant_data"].to_dataset()
    st, _ = _quiet(build_crossed, counts)
    d = st.hierbench["structure"]["decisions"]
    if "agent:task" in rule:
        assert d["agent_task"]["choice"] == "none"
        assert d["agent_task"]["reason"] == rule["agent:task"][0]
    else:
        assert d["agent_task"]["choice"] == "marginal"
    if "agent" in rule:
        assert d["agents"]["reason"].endswith(f"; no sd_agent: {rule['agent'][0]}")
    else:
        assert "no sd_agent" not in d["agents"]["reason"]
    assert ("task_spread" in d) == ("task" in rule)
    if "task" in rule:
        assert d["task_spread"]["reason"].startswith(rule["task"][0] + ":")


@pytest.mark.parametrize("idle", [0, 1])
@pytest.mark.parametrize("scale", ["latent", "probability"])
@pytest.mark.parametrize("design", DESIGNS)
def test_crossed_variance_components_fold_as_the_rule_says(design, scale, idle):
    # ``idle``: a fit that also holds an agent with no runs, which the rule does not count
    m, r = design
    rule = unidentified_components(np.full((m, T), r))
    res, _ = _quiet(crossed_variance_components, _fit(m, r, idle=idle), scale=scale)
    note = {str(c): str(v) for c, v in zip(res.note["component"].values, res.note.values, strict=True)}
    for c, (why, partner) in rule.items():
        assert note[c] == f"undefined: {why}"
        assert np.isnan(res.estimate.sel(component=c))
        while partner in rule:  # folded into a component itself folded: the next one holds both
            partner = rule[partner][1]
        if partner in note:  # (the latent scale has no residual)
            assert f"holds {c} too: {why}" in note[partner]
    defined = [c for c in note if c not in rule]
    assert np.isfinite(res.estimate.sel(component=defined)).all()
    assert not any(v.startswith("undefined") for c, v in note.items() if c in defined)


@pytest.mark.parametrize("idle", [0, 1])
@pytest.mark.parametrize("design", DESIGNS)
def test_the_g_study_adapter_folds_as_the_crossed_components_do(design, idle):
    # the adapter in the G-study's design (which drops a facet of one level) and the crossed
    # components after the rule: row for row the same draws
    m, r = design
    ds, _ = simulate_eval(n_agents=m, n_tasks=T, n_runs=r, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        like = freq.variance_components(ds)
    fit = _fit(m, r, idle=idle)
    bv = bayes_variance_components(fit, like)
    cv, _ = _quiet(crossed_variance_components, fit, scale="probability")
    names = [str(c) for c in bv["estimate"]["component"].values]
    rule = unidentified_components(np.full((m, T), r))
    assert not set(names) & set(rule)  # the G-study has no row the rule leaves undefined
    ours = cv.draws.sel(component=names).stack(s=("chain", "draw")).transpose("component", "s").values
    np.testing.assert_allclose(bv["draws"].values, ours, atol=2e-5)


@pytest.mark.parametrize("idle", [0, 1])
@pytest.mark.parametrize("design", DESIGNS)
def test_pass_k_warns_only_where_the_interaction_is_assumed_away(design, idle):
    # a fit without the agent x task effect: pass^k for k > 1 assumes runs independent given the
    # cell, unless the rule puts that effect inside the task effect (one agent)
    m, r = design
    rule = unidentified_components(np.full((m, T), r))
    _, seen = _quiet(crossed_pass_k, _fit(m, r, agent_task="none", idle=idle), k=2, min_runs=0)  # every task
    warned = any(issubclass(w.category, UndefinedWarning) and "agent_task='none'" in str(w.message) for w in seen)
    assert warned == (rule.get("agent:task", ("", None))[1] != "task")
    # no task effect (one agent, one run): k > 1 needs the tasks' spread, said with the rule's reason
    spread = [str(w.message) for w in seen if issubclass(w.category, UndefinedWarning) and "no task effect" in str(w.message)]
    assert bool(spread) == ("task" in rule)
    assert all(f"({rule['task'][0]})" in m for m in spread)


@pytest.mark.parametrize("runs", [3, 1])
def test_agents_on_disjoint_tasks_fold_agent_x_task_into_the_task_effect(runs):
    """An audit's log of agents on disjoint tasks (A ran t0-t3, B t4-t7): the crossed fit modelled an agent
    x task effect and the report printed it as an estimated component (0.0188 [0.0002, 0.0713]),
    though with one agent per task it cannot be told from the task effect, as with one agent (G-theory
    refused the design for that reason). The rule's definition: every task holds one agent, so
    agent x task folds into task; with one run per cell the task spread folds into run-to-run too.
    """
    n = np.zeros((3, 12), int)
    for a in range(3):
        n[a, 4 * a : 4 * a + 4] = runs
    rule = unidentified_components(n)
    want = {"agent:task": "task"} | ({"task": "residual"} if runs == 1 else {})
    assert {c: p for c, (_, p) in rule.items()} == want
    assert rule["agent:task"][0].startswith("no task was run by two agents")
    shared = n.copy()
    shared[0, 4] = runs  # one task run by two agents: identified (weakly)
    assert "agent:task" not in unidentified_components(shared) or runs == 1
    g = np.random.default_rng(0)
    counts = xr.Dataset({"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), g.binomial(n, 0.5))},
                        coords={"agent": ["A", "B", "C"], "task": [f"t{t}" for t in range(12)]})  # fmt: skip
    model, _ = _quiet(build_crossed, counts)
    d = model.hierbench["structure"]["decisions"]
    assert d["agent_task"]["choice"] == "none" and d["agent_task"]["reason"] == rule["agent:task"][0]
    assert ("task_spread" in d) == (runs == 1)
