"""The crossed model's agent x cluster effect: when it is used, and what every consumer makes of it.

An agent can be better at one cluster's tasks (a repository, a task family) than its ability
says. The effect ``(ac)_mk ~ N(0, sd_agent_cluster)`` enters each cell's logit by the task's
cluster, the posterior predictive and the task averages by the same index, and a new task
(from a new cluster) by its variance. The expected values here come from scipy's adaptive
quadrature, from G-theory's REML fit of the same log, or from the rule's own statement.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import integrate
from scipy.special import expit

from hierbench.bayes import UnidentifiedTermWarning
from hierbench.bayes import build_crossed
from hierbench.bayes import describe
from hierbench.bayes import fit
from hierbench.metrics import crossed_pass_k
from hierbench.metrics import crossed_variance_components
from hierbench.testing import simulate_eval

#: 5 agents x 48 tasks in 8 clusters, 3 runs per cell, a strong agent x cluster spread
DESIGN = dict(n_agents=5, n_tasks=48, n_runs=3, n_clusters=8, sd_cluster=0.5, sd_agent_cluster=0.8)


@pytest.fixture(scope="module")
def clustered_fit():
    data, truth = simulate_eval(**DESIGN, rng=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a short fit: its checks may fail, the quantities below do not rest on them
        dt = fit(build_crossed(data), draws=250, tune=250, chains=2, rng=2, progress=False)
    return data, truth, dt


def test_the_effect_is_used_with_clusters_and_two_agents_and_said_why():
    data, _ = simulate_eval(**DESIGN, rng=3)
    names = {v.name for v in build_crossed(data).free_RVs}
    assert {"sd_agent_cluster", "z_agent_cluster"} <= names
    text = describe(build_crossed(data))
    assert "agent_cluster: True - 5 agents x 8 clusters" in text
    off = build_crossed(data, agent_cluster=False)
    assert "sd_agent_cluster" not in {v.name for v in off.free_RVs}
    assert "requested by the user (auto would choose True" in describe(off)
    # no clusters: nothing to vary by, and asking for it is an error that says what is missing
    plain = data.drop_vars("cluster")
    assert "sd_agent_cluster" not in {v.name for v in build_crossed(plain).free_RVs}
    with pytest.raises(ValueError, match=r"`agent_cluster=True` needs the cluster effect"):
        build_crossed(plain, agent_cluster=True)
    with pytest.raises(ValueError, match=r"`agent_cluster=True` needs the cluster effect"):
        build_crossed(data, clusters=False, agent_cluster=True)
    # one agent: the agent x cluster effect is the cluster effect
    one = data.isel(agent=[0])
    assert "sd_agent_cluster" not in {v.name for v in build_crossed(one).free_RVs}
    with pytest.warns(UnidentifiedTermWarning, match="its agent x cluster effect is the cluster effect"):
        build_crossed(one, agent_cluster=True)


def test_simulate_eval_draws_the_effect_only_when_asked():
    base, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=2, n_clusters=4, rng=5)
    same, truth = simulate_eval(n_agents=3, n_tasks=20, n_runs=2, n_clusters=4, sd_agent_cluster=0.0, rng=5)
    xr.testing.assert_identical(base, same)  # a seed simulates what it did before the term existed
    assert "agent_cluster" not in truth
    _, truth = simulate_eval(n_agents=3, n_tasks=20, n_runs=2, n_clusters=4, sd_agent_cluster=0.5, rng=5)
    assert truth["agent_cluster"].sizes == {"agent": 3, "cluster_id": 4}
    with pytest.raises(ValueError, match=r"`sd_agent_cluster` \(0.5\) needs clusters"):
        simulate_eval(n_agents=3, n_tasks=20, n_runs=2, sd_agent_cluster=0.5, rng=5)


def _new_task_mean(ability: float, sd: float) -> float:
    """E[expit(ability + sd z)], z ~ N(0, 1), by scipy's adaptive quadrature."""
    f = lambda z: expit(ability + sd * z) * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)  # noqa: E731
    return integrate.quad(f, -12, 12, epsabs=1e-11)[0]


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_a_new_task_draws_a_fresh_agent_x_cluster_effect(clustered_fit):
    """mean_new_task (the PyMC graph) and population pass^1 (NumPy) against scipy, draw by draw."""
    _, _, dt = clustered_fit
    post = dt["posterior"].isel(chain=0, draw=slice(0, 3))
    pop = crossed_pass_k(dt, k=1, population=True)["draws"].sel(k=1).isel(chain=0, draw=slice(0, 3))
    for d in range(3):
        p = post.isel(draw=d)
        sd = float(np.sqrt(p.sd_task**2 + p.sd_cluster**2 + p.sd_agent_cluster**2 + p.sd_agent_task**2))
        without = float(np.sqrt(p.sd_task**2 + p.sd_cluster**2 + p.sd_agent_task**2))
        for m in range(2):
            expected = _new_task_mean(float(p.ability[m]), sd)
            assert float(p.mean_new_task[m]) == pytest.approx(expected, abs=2e-4)
            assert float(pop.isel(draw=d, agent=m)) == pytest.approx(expected, abs=2e-4)
            # the check can tell: leaving the effect's variance out moves the mean by more
            assert abs(_new_task_mean(float(p.ability[m]), without) - expected) > 1e-3


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_the_posterior_predictive_adds_each_agents_effect_on_the_tasks_cluster(clustered_fit):
    """Per (agent, cluster): the predictive successes' mean over draws against the expectation
    computed from the posterior's reported effects by quadrature (a fresh agent x task effect
    per cell), within 4 Monte Carlo standard errors. Indexing the effect by task, or leaving it
    out, misses by several (its SD is 0.8 on the logit scale).
    """
    _, _, dt = clustered_fit
    post = dt["posterior"].isel(chain=0)
    const = dt["constant_data"]
    y = dt["posterior_predictive"]["y"].isel(chain=0).values  # (draw, cell)
    ai, ti = const["cell_agent_idx"].values, const["cell_task_idx"].values
    n, cl = const["cell_n_runs"].values, const["task_cluster_idx"].values
    nodes, weights = np.polynomial.hermite_e.hermegauss(40)
    weights = weights / weights.sum()
    expected = np.zeros_like(y, dtype=float)
    for d in range(y.shape[0]):
        p = post.isel(draw=d)
        eta = (p.ability.values[ai] + p.task_effect.values[ti] + p.cluster_effect.values[cl[ti]]
               + p.agent_cluster_effect.values[ai, cl[ti]])  # fmt: skip
        expected[d] = n * (expit(eta[:, None] + float(p.sd_agent_task) * nodes) * weights).sum(-1)
    groups = ai * 100 + cl[ti]
    for g in np.unique(groups):
        sel = groups == g
        obs, exp_ = y[:, sel].sum(1), expected[:, sel].sum(1)
        se = (obs - exp_).std(ddof=1) / np.sqrt(obs.size)
        assert abs((obs - exp_).mean()) < 4 * se + 1e-9, g


def test_variance_components_name_the_agent_x_cluster_part_as_g_theory_does(clustered_fit):
    """Both scales carry agent:cluster; on the probability scale the Bayes 95% interval of each
    component meets G-theory's REML 95% interval of the same log (both estimate what a G-study
    of these five agents targets; a weakly identified component's REML estimate may sit at the
    edge of the posterior, as agent:task:cluster's 0.0049 against [0.0050, 0.0212] here).
    """
    from hierbench.freq import variance_components

    data, _, dt = clustered_fit
    lat = crossed_variance_components(dt)
    assert list(lat.estimate["component"].values) == [
        "agent", "cluster", "task:cluster", "agent:cluster", "agent:task:cluster"
    ]  # fmt: skip
    np.testing.assert_allclose(
        lat.draws.sel(component="agent:cluster").values, dt["posterior"]["sd_agent_cluster"].values ** 2
    )
    prob = crossed_variance_components(dt, scale="probability")
    g = variance_components(data)
    for c in ("agent", "cluster", "task:cluster", "agent:cluster", "agent:task:cluster", "residual"):
        lo, hi = prob.ci.sel(component=c).values
        g_lo, g_hi = g.ci.sel(component=c).values
        assert lo <= g_hi and g_lo <= hi, c


def test_pair_notes_follow_the_fit(clustered_fit):
    from hierbench.freq import variance_components
    from hierbench.report import agent_cluster_note
    from hierbench.report import bayes_pair_note

    data, _, dt = clustered_fit
    note = bayes_pair_note(dt, 10)
    assert "varies by task cluster" not in note and "no agent x cluster term" not in note
    assert "(its agent x cluster effect)" in note
    assert agent_cluster_note(dt, variance_components(data), data) == ""  # nothing left out to size
    old = xr.DataTree()
    old.attrs["hierbench_spec"] = '{"model": "crossed", "options": {"clusters": true}}'  # saved before the term
    assert "no agent x cluster term" in bayes_pair_note(old, 10)


def _cond_mean(loc: float, s: float) -> float:
    """E[expit(loc + s z)], z ~ N(0, 1), by scipy."""
    return _new_task_mean(loc, s)


def _var_over_normal(f, sd: float) -> float:
    """Var of f(x) for x ~ N(0, sd^2), by scipy."""
    dens = lambda x: np.exp(-0.5 * (x / sd) ** 2) / (sd * np.sqrt(2 * np.pi))  # noqa: E731
    m1 = integrate.quad(lambda x: f(x) * dens(x), -10 * sd, 10 * sd, epsabs=1e-12)[0]
    m2 = integrate.quad(lambda x: f(x) ** 2 * dens(x), -10 * sd, 10 * sd, epsabs=1e-12)[0]
    return m2 - m1**2


def test_the_agent_x_cluster_probability_part_is_the_variance_of_the_agent_cluster_means():
    """Random agents: ``Var(E[p | agent, cluster])`` for one draw, against scipy's nested
    quadrature over agents ~ N(0, sd_agent) and the cluster and agent x cluster effects, the
    task within its cluster and the cell's agent x task effect integrated inside. Fixed
    agents: tests/test_freq_gtheory_bayes.py, against a simulated G-study of those agents.
    """
    from hierbench.metrics._crossed import _agent_cluster_part
    from hierbench.metrics._crossed import _probability_components

    mu, va, vc, vac, vt_in, vat = -0.3, 0.8**2, 0.5**2, 0.7**2, 1.1**2, 0.6**2
    a = np.array([[-0.9, 0.1, 0.8]])
    parts = {"mu": np.array([mu]), "a": a, "sd_agent": np.sqrt([va]), "sd_cluster2": np.array([vc]),
             "sd_ac2": np.array([vac]), "sd_task2": np.array([vt_in + vc]), "sd_at": np.sqrt([vat]),
             "opts": {"agents": "random"}, "has_cluster": True, "ac": (np.zeros((1, 3, 2)), np.array([0, 1])),
             "no_ab": False, "n": np.ones((3, 4))}  # fmt: skip
    inner = np.sqrt(vt_in + vat)
    expected = _var_over_normal(lambda x: _cond_mean(mu + x, inner), np.sqrt(va + vc + vac))
    assert float(_agent_cluster_part(parts)[0]) == pytest.approx(expected, abs=2e-5)
    # and the component the decomposition reports is that part less the agent and cluster parts
    comps = _probability_components(parts, {})
    assert float(comps["agent:cluster"][0]) > 0


def test_the_variance_table_says_why_a_fit_folds_agent_x_cluster_into_agent_x_task():
    """The merged row's reason names the fit's own case: asked off, fitted without clusters, or saved
    before the term existed (its options do not name it); a fit with the term merges nothing.
    """
    from hierbench.report._context import _Context
    from hierbench.report._variance import _cluster_merge_reason

    data, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=2, n_clusters=3, rng=0)

    def reason(options: str) -> str | None:
        fit = xr.DataTree()
        fit.attrs = {"hierbench_model": "crossed", "hierbench_spec": '{"model": "crossed", "options": ' + options + "}"}
        return _cluster_merge_reason(_Context(fit=fit, data=data))

    assert reason('{"clusters": true, "agent_cluster": true}') is None
    assert "(agent_cluster=False)" in reason('{"clusters": true, "agent_cluster": false}')
    assert "(it was saved before the term existed)" in reason('{"clusters": true}')
    assert "(it was fitted without clusters)" in reason('{"clusters": false, "agent_cluster": false}')
    fit = xr.DataTree()
    fit.attrs = {"hierbench_model": "crossed", "hierbench_spec": '{"model": "crossed", "options": {"clusters": true}}'}
    assert _cluster_merge_reason(_Context(fit=fit, data=data.drop_vars("cluster"))) is None  # no G-theory row


@pytest.mark.parametrize("effects", [[-0.9, 0.1, 0.8], [-8.0, 0.3, 0.6, 8.0], [-2.0, -1.5, 0.1, 1.8, 2.2]])
def test_fixed_agents_give_what_a_g_study_of_those_agents_estimates_by_scipy(effects):
    """With fixed agents (the builder's default) the components are what a G-study (ANOVA) of
    these A agents estimates over the task population. Reference, by scipy's quadrature for one
    draw, with q the cell probability, P the agents' mean Var(q | agent), B the variance over
    tasks of the agents' mean cell probability (the shared task effect outside, each agent's
    own cell effect adding 1 / A^2 of its variance): agent = the sample variance (ddof=1) of
    E[q | agent]; agent:task = A / (A - 1) (P - B); task = B - agent:task / A; residual = the
    mean of E[q (1 - q) | agent]. The agents far from normal (two near 0 and 1) are where a
    normal population in their place gave a negative agent x task part.
    """
    from hierbench.metrics._crossed import _probability_components

    mu, vt, vat = 0.2, 1.3**2, 0.4**2
    a = np.array([effects]) - np.mean(effects)
    n_agents = a.shape[1]
    parts = {"mu": np.array([mu]), "a": a, "sd_agent": a.std(ddof=1, axis=1), "sd_cluster2": np.zeros(1),
             "sd_ac2": np.zeros(1), "sd_task2": np.array([vt]), "sd_at": np.sqrt([vat]),
             "opts": {"agents": "fixed"}, "has_cluster": False, "ac": None, "no_ab": False,
             "n": np.ones((n_agents, 4))}  # fmt: skip
    s_all, s_t, s_at = np.sqrt(vt + vat), np.sqrt(vt), np.sqrt(vat)
    dens = lambda x, s: np.exp(-0.5 * (x / s) ** 2) / (s * np.sqrt(2 * np.pi))  # noqa: E731
    m1 = np.array([_cond_mean(mu + m + 0.0, s_all) for m in a[0]])
    m2 = np.array([integrate.quad(lambda x, m=m: expit(mu + m + x) ** 2 * dens(x, s_all), -10 * s_all, 10 * s_all,
                                  epsabs=1e-12)[0] for m in a[0]])  # fmt: skip
    p_within = np.mean(m2 - m1**2)
    shared = _var_over_normal(lambda t: np.mean([_cond_mean(mu + m + t, s_at) for m in a[0]]), s_t)
    own = np.mean([_var_over_normal(lambda t, m=m: _cond_mean(mu + m + t, s_at), s_t) for m in a[0]])
    b = shared + (p_within - own) / n_agents
    inter = n_agents / (n_agents - 1) * (p_within - b)
    expected = {"agent": np.var(m1, ddof=1), "task": b - inter / n_agents, "agent:task": inter,
                "residual": np.mean(m1 - m2)}  # fmt: skip
    got = {k: float(v[0]) for k, v in _probability_components(parts, {}).items()}
    assert got == pytest.approx(expected, abs=2e-5)
    assert got["agent:task"] > 0


@pytest.mark.parametrize(("n_agents", "sd_out", "sd_in", "spread"),
                         [(25, 0.6, 1.0, 2.0), (25, 3.0, 0.01, 6.0), (3, 0.1, 3.0, 10.0), (10, 5.0, 5.0, 1.0)])  # fmt: skip
def test_the_tabulated_inner_means_are_the_population_rule_at_every_node(n_agents, sd_out, sd_in, spread):
    """Reference: the population rule applied directly at each (agent, outer node) point,
    ``sum_k w_k expit(loc + sd_out u_q + sd_in u_k)``; the interpolated table agrees within 1e-5
    (spacing^4 error) over narrow and wide outer spreads and a near-degenerate inner one.
    """
    from hierbench._numerics import population_nodes
    from hierbench.metrics._crossed import _agent_means

    u, w = population_nodes()
    loc = np.random.default_rng(1).normal(0.0, spread, (5, n_agents))
    got = _agent_means(loc, np.full(5, sd_out**2), np.full(5, sd_in**2))
    x = loc[:, :, None] + sd_out * u
    direct = (expit(x[..., None] + sd_in * u) * w).sum(-1)
    np.testing.assert_allclose(got, direct, atol=1e-5, rtol=0)
