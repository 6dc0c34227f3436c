"""The structure helper: terms decided from the design, recorded, shown, overridable."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy.stats import betabinom

from hierbench.bayes import UnidentifiedTermWarning
from hierbench.bayes import build_beta_binomial
from hierbench.bayes import build_bradley_terry
from hierbench.bayes import build_crossed
from hierbench.bayes import describe
from hierbench.bayes._structure import level_information
from hierbench.testing import simulate_eval


def counts(n, y, agents=None, clusters=None):
    n, y = np.atleast_2d(n), np.atleast_2d(y)
    coords = {
        "agent": agents or [f"a{i}" for i in range(n.shape[0])],
        "task": [f"t{j:03d}" for j in range(n.shape[1])],
    }
    if clusters is not None:
        coords["cluster"] = ("task", np.asarray(clusters, dtype=str))
    return xr.Dataset(
        {"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), y)}, coords=coords
    )


def decisions(model):
    return model.hierbench["structure"]["decisions"]


def test_one_agent_turns_off_what_it_cannot_identify():
    data, _ = simulate_eval(n_agents=1, n_tasks=20, n_runs=4, rng=0)
    bb = build_beta_binomial(data)
    assert decisions(bb)["pooling"]["choice"] == "none"
    cr = build_crossed(data)
    d = decisions(cr)
    assert d["agent_task"]["choice"] == "none"
    assert "cannot be told apart from the task effect" in d["agent_task"]["reason"]
    assert "sd_agent_task" not in {v.name for v in cr.free_RVs}


def test_one_agent_has_no_sd_agent_and_says_why():
    """Review: a one-agent crossed fit showed sd_agent = 0 [0, 0]; one agent has no spread to estimate."""
    one, _ = simulate_eval(n_agents=1, n_tasks=20, n_runs=3, rng=0)
    two, _ = simulate_eval(n_agents=2, n_tasks=20, n_runs=3, rng=0)
    m1, m2 = build_crossed(one), build_crossed(two)
    assert "sd_agent" not in m1.named_vars and "sd_agent" in m2.named_vars
    assert decisions(m1)["agents"]["reason"].endswith(
        "; no sd_agent: one agent, so there is no spread between agents to estimate"
    )
    assert "no sd_agent" not in decisions(m2)["agents"]["reason"]
    assert "no sd_agent: one agent" in describe(m1)
    # asked for explicitly, the random-effects spread of one agent is fitted on its prior, and said
    with pytest.warns(UnidentifiedTermWarning, match=r"`agents='random'` was requested, but one agent"):
        r1 = build_crossed(one, agents="random")
    assert decisions(r1)["agents"]["source"] == "user" and "sd_agent" in r1.named_vars
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnidentifiedTermWarning)
        build_crossed(two, agents="random")


def test_one_agent_one_run_leaves_the_task_spread_out():
    # on its prior it never converged (SWE-bench, one model: ESS 68-162, E-BFMI 0.15 at sd_task)
    one_run, _ = simulate_eval(n_agents=1, n_tasks=30, n_runs=1, rng=0)
    m = build_crossed(one_run)
    st = m.hierbench["structure"]
    assert st["decisions"]["task_spread"]["choice"] == "none"
    assert "nothing repeats within a task" in st["decisions"]["task_spread"]["reason"]
    assert "sd_task" not in m.named_vars and "task_effect" not in m.named_vars
    # repeated runs, or a second agent, identify it: no such decision
    for data in (simulate_eval(1, 30, 2, rng=0)[0], simulate_eval(2, 30, 1, rng=0)[0]):
        assert "task_spread" not in decisions(build_crossed(data))


def test_one_task_is_refused_as_by_the_frequentist_half():
    with pytest.raises(ValueError, match=r"at least 2 tasks with runs for the crossed model; got 1"):
        build_crossed(counts([[3], [3], [3]], [[1], [2], [3]]))
    with pytest.raises(ValueError, match=r"at least 2 tasks with runs for the crossed model; got 1"):
        build_crossed(counts([[3, 0], [3, 0]], [[1, 0], [2, 0]]))  # the second task never run
    build_crossed(counts([[3, 3], [3, 3]], [[1, 2], [2, 0]]))  # two tasks: built


def test_tasks_no_agent_ran_are_counted_and_said():
    # three tasks of five never run (every run errored and was excluded, say): kept, as the
    # benchmark's tasks, but counted and said, since their effects rest on the prior alone
    n = [[3, 0, 2, 0, 0], [3, 0, 3, 0, 0]]
    model = build_crossed(counts(n, [[1, 0, 2, 0, 0], [2, 0, 1, 0, 0]]))
    design = model.hierbench["structure"]["design"]
    assert design["n_tasks_not_run"] == 3 and design["n_cells_not_run"] == 6
    assert "3 tasks no agent ran (their effects rest on the prior)" in describe(model)
    ran = build_crossed(counts([[3, 1], [3, 2]], [[1, 0], [2, 1]]))
    assert ran.hierbench["structure"]["design"]["n_tasks_not_run"] == 0
    assert "no agent ran" not in describe(ran)


def test_explicit_unidentified_term_is_kept_and_warns():
    data, _ = simulate_eval(n_agents=1, n_tasks=20, n_runs=4, rng=0)
    with pytest.warns(UnidentifiedTermWarning, match="one agent"):
        bb = build_beta_binomial(data, pooling="partial")
    assert decisions(bb)["pooling"] == {
        "choice": "partial",
        "reason": "requested by the user although the spread across agents is not identified with one agent",
        "source": "user",
    }
    assert "logit_mu_sd" in {v.name for v in bb.free_RVs}
    with pytest.warns(UnidentifiedTermWarning, match="agent_task='marginal'"):
        build_crossed(data, agent_task="marginal")


def test_identified_explicit_choice_does_not_warn_and_is_marked_user():
    data, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=3, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnidentifiedTermWarning)
        m = build_crossed(data, agent_task="none")
    assert decisions(m)["agent_task"]["source"] == "user"
    assert "[user]" in describe(m)


def test_one_run_per_cell_leaves_overdispersion_to_its_prior():
    data, _ = simulate_eval(n_agents=3, n_tasks=30, n_runs=1, rng=1)
    bb = build_beta_binomial(data)
    assert decisions(bb)["overdispersion"]["choice"] == "rho from its prior"
    assert build_crossed(data).hierbench["options"]["agent_task"] == "none"


def test_clusters_of_mostly_single_tasks_are_dropped():
    n = np.full((2, 10), 3)
    y = np.ones((2, 10), int)
    singles = [f"c{j}" for j in range(8)] + ["x", "x"]  # 80% of tasks alone
    m = build_crossed(counts(n, y, clusters=singles))
    assert decisions(m)["clusters"]["choice"] is False
    assert "80%" in decisions(m)["clusters"]["reason"]
    with pytest.warns(UnidentifiedTermWarning, match="clusters=True"):
        build_crossed(counts(n, y, clusters=singles), clusters=True)
    good = ["a"] * 4 + ["b"] * 3 + ["c"] * 3
    m = build_crossed(counts(n, y, clusters=good))
    assert decisions(m)["clusters"]["choice"] is True
    assert "cluster_effect" in m.named_vars


def test_centring_follows_information_not_run_counts():
    # 12 agents x 10 runs at p around 1/2, tasks spread 1.5 logits: each task is
    # well informed -> centred tasks
    rng = np.random.default_rng(0)
    n = np.full((12, 40), 10)
    p_task = 1.0 / (1.0 + np.exp(-rng.normal(0.0, 1.5, 40)))
    y = rng.binomial(10, np.broadcast_to(p_task, n.shape))
    assert "task" in decisions(build_crossed(counts(n, y)))["centred"]["choice"]
    # the same design with tasks that do not differ at all: however well each is
    # informed, a centred group with a spread near 0 is a funnel -> non-centred
    y_same = rng.binomial(10, 0.5, n.shape)
    dec = decisions(build_crossed(counts(n, y_same)))["centred"]
    assert "task" not in dec["choice"]
    assert "spread 0" in dec["reason"]
    # the same runs at a success rate near 0: little information -> non-centred
    y0 = rng.binomial(10, 0.004, n.shape)
    assert "task" not in decisions(build_crossed(counts(n, y0)))["centred"]["choice"]
    # few levels need far more information to centre (the group scale's posterior
    # reaches towards zero): 3 agents x 10 tasks x 10 runs is not enough
    m = build_beta_binomial(counts(np.full((3, 10), 10), rng.binomial(10, 0.5, (3, 10))))
    assert decisions(m)["centred"]["choice"] is False
    assert "needed with 3 agents" in decisions(m)["centred"]["reason"]


def test_level_information_matches_binomial_fisher_information():
    # a cell of n runs at p carries n p (1 - p) about its logit; p is the cell
    # proportion shrunk by one pseudo-run towards the overall rate (here 1/2)
    n = np.array([[4, 4]])
    y = np.array([[2, 2]])
    p = (2 + (4 + 0.5) / (8 + 1)) / 5  # (y + pbar) / (n + 1)
    assert level_information(n, y, axis=1)[0] == pytest.approx(2 * 4 * p * (1 - p))
    # an agent x task effect of sd s caps each cell at 1 / s^2
    i = 4 * p * (1 - p)
    assert level_information(n, y, axis=0, within_sd=0.5)[0] == pytest.approx(i / (1 + i * 0.25))


def test_describe_model_and_errors():
    data, _ = simulate_eval(n_agents=2, n_tasks=10, n_runs=2, rng=0)
    text = describe(build_beta_binomial(data))
    lines = text.splitlines()
    assert lines[0] == "model as fitted: beta_binomial"
    assert lines[1].startswith("  design: agents 2, tasks 10, cells 20")
    assert any(line.startswith("  pooling: 'partial'") for line in lines)
    with pytest.raises(ValueError, match="carries no recorded structure"):
        describe(object())


def test_bradley_terry_records_its_design():
    import pandas as pd

    from hierbench.data import read_battles

    df = pd.DataFrame(
        {"left": ["x", "y", "z", "x"] * 20, "right": ["y", "z", "x", "z"] * 20, "winner": ["left", "tie", "right", "left"] * 20}
    )
    m = build_bradley_terry(read_battles(df))
    s = m.hierbench["structure"]
    assert s["design"]["n_agents"] == 3 and s["design"]["n_comparisons"] == 80
    # x-y, y-z, z-x and x-z: 4 ordered (first / second) pairs, 3 pairs of agents (audit U7: "pairs"
    # was the ordered count, where summary and the report count pairs of agents)
    assert (s["design"]["n_pairs"], s["design"]["n_ordered_pairs"]) == (3, 4)
    assert "pairs 3 (4 in order, first / second)" in describe(m)
    # 3 agents: the centred form would funnel however many comparisons they have
    assert s["decisions"]["centred"]["choice"] is False
    assert json.loads(json.dumps(s)) == s


@pytest.mark.parametrize("most_runs", [3, 40])
def test_beta_binomial_tally_likelihood_equals_cell_likelihood(most_runs):
    # the likelihood summed per agent and factor against scipy's beta-binomial summed over cells
    # (40: run counts that differ by cell, agent 0 with at most 3, so its tallies end in zeros)
    rng = np.random.default_rng(3)
    n = rng.integers(1, most_runs + 1, (3, 50))
    n[0] = np.minimum(n[0], 3)
    y = rng.binomial(n, 0.4)
    m = build_beta_binomial(counts(n, y), pooling="none")
    assert m["tally_runs"].get_value().shape == (3, n.max())  # agents x most runs, not cells
    point = {"mu_logodds__": np.array([-0.3, 0.2, 0.5]), "rho_logodds__": np.array([-1.0, 0.0, 1.5])}
    logp = m.compile_fn(m.replace_rvs_by_values([m.potentials[0]])[0], inputs=m.value_vars)(point)
    mu = 1 / (1 + np.exp(-point["mu_logodds__"]))
    rho = 1 / (1 + np.exp(-point["rho_logodds__"]))
    kappa = (1 - rho) / rho
    want = betabinom.logpmf(y, n, (mu * kappa)[:, None], ((1 - mu) * kappa)[:, None]).sum()
    assert float(logp) == pytest.approx(want, rel=1e-10)


def test_tasks_without_a_cluster_label_are_singletons_not_one_pooled_cluster():
    """Issue 11, item 7, on the Bayesian side: missing labels never form one shared cluster."""
    import numpy as np
    import pytest

    import hierbench.bayes as hbb
    from hierbench import HierbenchWarning
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=3, n_clusters=4, sd_cluster=0.5, rng=0)
    labels = ds["cluster"].values.astype(object)
    labels[[0, 1]] = np.nan
    ds = ds.assign_coords(cluster=("task", labels))
    with pytest.warns(HierbenchWarning, match="2 of 20 tasks have no 'cluster' label"):
        model = hbb.build_crossed(ds)
    clusters = list(model.coords["cluster"])
    # 4 labelled clusters plus one singleton per unlabelled task (by the stated rule), no "nan"
    assert len(clusters) == 4 + 2
    assert "nan" not in clusters


def _leaderboard(n_tasks: int = 12) -> xr.Dataset:
    """Only the layout matters here: 8 models under 4 scaffolds, 16 of the 32 combinations, two tiers."""
    combos = [(s, (2 * s + k) % 8) for s in range(4) for k in range(4)]  # every model under 2 scaffolds
    y = np.tile([0.0, 1.0], (len(combos), n_tasks // 2, 1)).reshape(len(combos), n_tasks, 1)
    return xr.Dataset({"score": (("agent", "task", "run"), y)},
                      coords={"agent": [f"S{s}/M{m}" for s, m in combos], "scaffold": ("agent", [f"S{s}" for s, _ in combos]),
                              "model": ("agent", [f"M{m}" for _, m in combos]),
                              "tier": ("task", ["easy", "hard"] * (n_tasks // 2))})  # fmt: skip


def test_nested_terms_follow_the_crossing_of_the_levels():
    from hierbench.bayes._structure import nested_terms
    from hierbench.data import model_design

    ds = _leaderboard()
    d = model_design("score ~ 1 + (1|model) + (1|scaffold) + (1|scaffold:model) + (1|tier) + (1|task)", ds)
    name = {t.name: j for j, t in enumerate(d.random)}
    inside = {t.name: [d.random[j].name for j in nested_terms(d, name[t.name])] for t in d.random}
    # by construction each combination lies in one model and one scaffold; models cross scaffolds,
    # tiers hold tasks (not nested in any agent-level term), and nothing lies inside a task or a combination
    assert inside == {"1|model": ["1|scaffold:model"], "1|scaffold": ["1|scaffold:model"],
                      "1|scaffold:model": [], "1|tier": ["1|task"], "1|task": []}  # fmt: skip
    assert nested_terms(d, name["1|tier"], skip=(name["1|task"],)) == []
    # a random slope is not nested in an intercept's levels (its intercept is)
    d = model_design("score ~ 1 + (1|model) + (tier|scaffold:model) + (1|task)", ds)
    assert [d.random[j].name for j in nested_terms(d, 0)] == ["1|scaffold:model"]


@pytest.mark.parametrize("builder", ["build_beta_binomial", "build_crossed", "build_irt_2pl"])
def test_an_agent_with_no_runs_is_refused_by_name(builder):
    # every run of agent_02 missing (as after errors="exclude" dropped its runs): a count model
    # would hold it on its prior alone (a fixed agent's prior ability moves the agents' mean and
    # spread), so the builder refuses it, naming it and the call that drops it, like fit_crossed_ml
    import hierbench.bayes as bayes

    data, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, rng=0)
    data["score"] = data["score"].where(data["agent"] != "agent_02")
    with pytest.raises(ValueError, match=r"agent\(s\) \['agent_02'\] have no runs at all \(1 of 3 agents\)") as err:
        getattr(bayes, builder)(data)
    assert "data.drop_sel(agent=['agent_02'])" in str(err.value)
    getattr(bayes, builder)(data.drop_sel(agent=["agent_02"]))  # the remedy it names works
