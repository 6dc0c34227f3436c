"""The posterior metrics as result objects: values against independent counts and simulation,
the house interval convention, side by side with the frequentist half (like with like only),
variance components named as the G-study names them.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import xarray as xr
from _helpers import fake_fit
from scipy.special import expit
from scipy.stats import norm

from hierbench import freq
from hierbench._base import Result
from hierbench._base import UndefinedWarning
from hierbench.compare import MismatchedEstimatesError
from hierbench.compare import side_by_side
from hierbench.metrics import bayes_variance_components
from hierbench.metrics import crossed_variance_components
from hierbench.metrics import head_to_head
from hierbench.metrics import pass_hat_k
from hierbench.metrics import posterior_summary
from hierbench.metrics import prob_superiority
from hierbench.metrics import rank_probabilities
from hierbench.testing import simulate_eval


def _normal_draws(rng, n=500, means=(0.0, 1.0, 3.0)):
    return xr.DataArray(
        rng.normal(means, 1.0, (2, n, len(means))),
        dims=("chain", "draw", "agent"),
        coords={"agent": ["a", "b", "c"][: len(means)]},
        attrs={"scale": "logit"},
    )


@pytest.mark.slow
def test_prob_superiority_is_a_result_with_a_monte_carlo_interval_that_covers():
    # independent normal draws: P(b > a) = Phi(1 / sqrt(2)) exactly; the Monte Carlo interval
    # (Wilson, n = effective sample size) covers it in about 95% of 300 independent draw sets
    rng = np.random.default_rng(2)
    exact = norm.cdf(1 / np.sqrt(2))
    hits = 0
    for _ in range(300):
        ps = prob_superiority(_normal_draws(rng))
        lo, hi = ps.ci.sel(agent="b", opponent="a").values
        hits += lo <= exact <= hi
    assert abs(hits / 300 - 0.95) < 3 * np.sqrt(0.95 * 0.05 / 300)
    d = _normal_draws(np.random.default_rng(0))
    ps = prob_superiority(d)
    assert isinstance(ps, Result) and ps.ci.attrs["ci_kind"] == "wilson"
    assert ps.ci.attrs["ci_prob"] == 0.95 and "effective sample size" in ps.ci.attrs["ci_detail"]
    # the difference beside it: the posterior mean of b - a, counted on the draws
    direct = float((d.sel(agent="b") - d.sel(agent="a")).mean())
    assert float(ps.difference.sel(agent="b", opponent="a")) == pytest.approx(direct)
    assert ps.difference_ci.attrs["ci_kind"] == "eti"
    # still reads as the DataArray it used to be
    assert ps.sel(agent="b", opponent="a").item() == pytest.approx(float((d.sel(agent="b") > d.sel(agent="a")).mean()))
    assert ps.dims == ("agent", "opponent") and ps.attrs["scale"] == "logit"
    assert np.isnan(np.diag(ps.values)).all() and np.isnan(np.diag(np.asarray(ps))).all()
    assert len(repr(ps).splitlines()) <= 10 and "e-0" not in repr(ps)
    assert len(ps.to_frame()) == 9 and {"lower", "upper", "difference"} <= set(ps.to_frame().columns)


def test_rank_probabilities_result_keeps_the_arithmetic_of_a_dataarray():
    d = _normal_draws(np.random.default_rng(1))
    rp = rank_probabilities(d)
    exp_rank = (rp * rp["rank"]).sum("rank")
    np.testing.assert_allclose(exp_rank.values, rp.expected_rank.values)
    # the expected rank counted directly on the draws (1 = largest)
    x = d.values.reshape(-1, 3)
    direct = (1 + (x[:, None, :] > x[:, :, None]).sum(-1)).mean(0)
    np.testing.assert_allclose(rp.expected_rank.values, direct)
    np.testing.assert_allclose(rp.sum("rank"), 1.0)
    assert rp.ci.dims == ("agent", "rank", "ci_bound") and rp.ci.attrs["ci_kind"] == "wilson"
    assert len(repr(rp).splitlines()) <= 10


def test_head_to_head_and_posterior_summary_are_results():
    rng = np.random.default_rng(3)
    h2h = head_to_head(fake_fit("bradley_terry", ["m0", "m1", "m2"], ability=rng.normal(0, 1, (2, 40, 3)),
                                 nu=rng.uniform(0.5, 2, (2, 40))))
    assert isinstance(h2h, Result)
    xr.testing.assert_identical(h2h.estimate, h2h["expected_score"])
    assert h2h.ci.attrs["ci_kind"] == "eti" and "p_tie" in h2h.to_frame().columns
    assert h2h.attrs["agent_first"] == "averaged" and "p_win" in h2h
    d = xr.DataArray(np.linspace(0, 1, 1001)[None, :], dims=("chain", "draw"))
    s = posterior_summary(d, prob=0.9)
    assert isinstance(s, Result) and s.to_frame()[["lower", "upper"]].round(3).values.tolist() == [[0.05, 0.95]]


def test_side_by_side_pairs_only_pass_k_over_the_same_tasks():
    # ragged runs, as on METR: pass^3 is unbiased only on the tasks with >= 3 runs
    rng = np.random.default_rng(4)
    ds, _ = simulate_eval(n_agents=3, n_tasks=40, n_runs=5, p_missing_run=0.5, rng=4)
    cnt = ds.score.notnull().sum("run").values
    succ = ds.score.fillna(0).sum("run").values
    A, T = cnt.shape
    fit = fake_fit("beta_binomial", [f"agent_{i:02d}" for i in range(A)],
                   {"n_runs": cnt, "n_success": succ}, tasks=[f"task_{t:03d}" for t in range(T)],
                   mu=rng.uniform(0.2, 0.8, (2, 50, A)), kappa=rng.uniform(1, 10, (2, 50, A)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unbiased = freq.pass_hat_k(ds, 3)
    bayes_all = pass_hat_k(fit, k=3, min_runs=0, rng=0)  # every task each agent ran
    bayes_same = pass_hat_k(fit, k=3, rng=0)  # the default min_runs="k"
    # the task counts, counted on the data
    np.testing.assert_array_equal(bayes_all.n_tasks.sel(k=3).values, (cnt >= 1).sum(1))
    np.testing.assert_array_equal(bayes_same.n_tasks.sel(k=3).values, (cnt >= 3).sum(1))
    np.testing.assert_array_equal(unbiased.n_tasks.values, (cnt >= 3).sum(1))
    assert bayes_same.attrs["over"] == "the tasks each agent ran at least k times"
    # two posteriors for these tasks, over different tasks
    with pytest.raises(MismatchedEstimatesError, match="different task sets"):
        side_by_side({"all": bayes_all.sel(k=3, drop=True), "same": bayes_same.sel(k=3, drop=True)})
    # the unbiased estimator's t interval (task-level SE) is for a new draw of tasks: the
    # posterior for these tasks is refused beside it, naming the argument that makes the like
    assert unbiased.estimate.attrs["tasks"] == "population"
    # (the unbiased pass^3 leaves out the tasks with fewer than 3 runs, so population=True is not its like)
    with pytest.raises(MismatchedEstimatesError, match=r"\['bayes'\] have intervals for these tasks.*"
                       r"no population=True result is their like"):
        side_by_side({"unbiased": unbiased, "bayes": bayes_same.sel(k=3, drop=True)})
    pop = pass_hat_k(fit, k=3, population=True)
    # over every task beside over the tasks with >= 3 runs: refused (compare s18 finding 3), unless asked
    with pytest.raises(MismatchedEstimatesError, match="over the tasks with at least k runs only"):
        side_by_side({"unbiased": unbiased, "population": pop.sel(k=3, drop=True)})
    t = side_by_side({"unbiased": unbiased, "population": pop.sel(k=3, drop=True)}, allow_mismatch=True)
    assert set(t["quantity"].values) == {"pass^k (a new draw of tasks from the same population)"}
    forced = side_by_side({"unbiased": unbiased, "bayes": bayes_all.sel(k=3, drop=True)}, allow_mismatch=True)
    assert forced.sizes["estimator"] == 2
    # the result itself reads like the frequentist one
    assert isinstance(bayes_same, Result) and "n_tasks" in bayes_same.to_frame().columns
    assert len(repr(bayes_same).splitlines()) <= 10


def _crossed_fit(agent_task="marginal", clusters=False, seed=0, draws=40, max_runs=4):
    g = np.random.default_rng(seed)
    C, A, T = 2, 3, 12
    cd = ("chain", "draw")
    post = {
        "mu": (cd, g.normal(0, 0.3, (C, draws))),
        "agent_effect": ((*cd, "agent"), g.normal(0, 0.5, (C, draws, A))),
        "task_effect": ((*cd, "task"), g.normal(0, 1, (C, draws, T))),
        "sd_task": (cd, g.uniform(0.5, 1.5, (C, draws))),
        "sd_agent": (cd, g.uniform(0.3, 1, (C, draws))),
    }
    if agent_task != "none":
        post["sd_agent_task"] = (cd, g.uniform(0.2, 0.8, (C, draws)))
    n = g.integers(1, max_runs + 1, (A, T))
    const = {"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), g.binomial(n, 0.5))}
    coords = {"agent": [f"agent_{i:02d}" for i in range(A)], "task": [f"task_{t:03d}" for t in range(T)]}
    if clusters:
        post["cluster_effect"] = ((*cd, "cluster"), g.normal(0, 0.4, (C, draws, 3)))
        post["sd_cluster"] = (cd, g.uniform(0.2, 0.6, (C, draws)))
        const["task_cluster_idx"] = (("task",), np.arange(T) % 3)
    pc = {**coords, **({"cluster": ["c0", "c1", "c2"]} if clusters else {})}
    dt = xr.DataTree.from_dict(
        {"posterior": xr.Dataset(post, coords=pc), "constant_data": xr.Dataset(const, coords=coords)}
    )
    dt.attrs["hierbench_model"] = "crossed"
    dt.attrs["hierbench_spec"] = json.dumps({"options": {"agent_task": agent_task, "n_quad": 7}})
    return dt


@pytest.mark.parametrize(
    ("agent_task", "n_runs", "clusters"),
    [("marginal", 3, False), ("none", 1, False), ("marginal", 3, True)],
)
def test_crossed_variance_components_are_named_as_the_g_study(agent_task, n_runs, clusters):
    ds, _ = simulate_eval(
        n_agents=6, n_tasks=40, n_runs=n_runs, n_clusters=5 if clusters else 0,
        sd_cluster=0.5 if clusters else 0.0, rng=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g_names = [str(c) for c in freq.variance_components(ds).estimate["component"].values]
    fit = _crossed_fit(agent_task, clusters)
    prob = crossed_variance_components(fit, scale="probability")
    names = [str(c) for c in prob.estimate["component"].values]
    # the same names for the same facets, in the G-study's order; only what the model lacks is absent
    assert names == [c for c in g_names if c in names]
    assert set(g_names) - set(names) == ({"agent:cluster"} if clusters else set())
    lat = crossed_variance_components(fit, scale="latent")
    assert set(lat.estimate["component"].values) <= set(g_names)
    assert prob.ci.attrs["ci_kind"] == "eti" and prob.ci.attrs["ci_prob"] == 0.95


@pytest.mark.parametrize(("agent_task", "clusters"), [("marginal", False), ("none", False), ("marginal", True)])
def test_probability_components_add_up_to_the_score_variance(agent_task, clusters):
    # Var(Y) of one run = Var(p) + E[p (1 - p)] = E[p] - E[p]^2, by Monte Carlo from the
    # model's normal effects for a few posterior draws (tolerance: 4 Monte Carlo SE)
    fit = _crossed_fit(agent_task, clusters, draws=3)
    res = crossed_variance_components(fit, scale="probability")
    total = res.draws.sum("component").stack(s=("chain", "draw")).values
    post = fit["posterior"].to_dataset().stack(s=("chain", "draw"))
    rng = np.random.default_rng(0)
    for i in range(post.sizes["s"]):
        p_ = post.isel(s=i)
        sd2 = float(p_["sd_agent"] ** 2 + p_["sd_task"] ** 2)
        sd2 += float(p_["sd_agent_task"] ** 2) if "sd_agent_task" in p_ else 0.0
        sd2 += float(p_["sd_cluster"] ** 2) if "sd_cluster" in p_ else 0.0
        y = rng.random(400_000) < expit(float(p_["mu"]) + np.sqrt(sd2) * rng.normal(size=400_000))
        assert abs(total[i] - y.var()) < 4 * np.sqrt(2 * y.var() ** 2 / 400_000) + 1e-3


def test_bayes_variance_components_with_one_run_keep_the_interaction_in_the_residual():
    ds, _ = simulate_eval(n_agents=6, n_tasks=40, n_runs=1, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        like = freq.variance_components(ds)
    fit = _crossed_fit("marginal", draws=3)
    bv = bayes_variance_components(fit, like)
    assert bv["estimate"]["component"].values.tolist() == ["agent", "task", "residual"]
    # with one run per cell the residual holds agent x task and run-to-run variance: the
    # components add up to Var(Y) = E[p] - E[p]^2, the crossed decomposition's total
    cv = crossed_variance_components(fit, scale="probability")
    np.testing.assert_allclose(
        bv["draws"].sum("component").values, cv.draws.sum("component").stack(s=("chain", "draw")).values, rtol=1e-5
    )


# --------------------------------------------------------------------------- one agent (review: "0 [0, 0]")


def _one_agent_fit(n_runs=3, agent_task="none", sd_agent=None, draws=4, seed=1):
    """A crossed fit of one agent as the builder now makes it: no ``sd_agent`` unless given.

    ``agent_effect`` is nonzero (a random-agents fit), so the decomposition must be centred on
    the agent's own logit ``mu + agent_effect``, not on ``mu``.
    """
    g = np.random.default_rng(seed)
    cd, T = ("chain", "draw"), 10
    post = {
        "mu": (cd, g.normal(-0.3, 0.3, (2, draws))),
        "agent_effect": ((*cd, "agent"), g.normal(0.8, 0.2, (2, draws, 1))),
        "task_effect": ((*cd, "task"), g.normal(0, 1, (2, draws, T))),
        "sd_task": (cd, g.uniform(0.5, 1.5, (2, draws))),
    }
    if sd_agent is not None:  # a fit saved before the builder left sd_agent out, or agents="random"
        post["sd_agent"] = (cd, np.full((2, draws), sd_agent))
    if agent_task != "none":
        post["sd_agent_task"] = (cd, g.uniform(0.2, 0.8, (2, draws)))
    n = np.full((1, T), n_runs)
    const = {"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), g.binomial(n, 0.5))}
    coords = {"agent": ["solo"], "task": [f"t{t}" for t in range(T)]}
    dt = xr.DataTree.from_dict(
        {"posterior": xr.Dataset(post, coords=coords), "constant_data": xr.Dataset(const, coords=coords)}
    )
    dt.attrs["hierbench_model"] = "crossed"
    dt.attrs["hierbench_spec"] = json.dumps({"options": {"agent_task": agent_task, "n_quad": 7}})
    return dt


def _logit_normal_moments(loc, sd):
    """E[expit(loc + sd Z)] and E[expit(.)^2] by scipy's adaptive quadrature (independent of the code)."""
    from scipy.integrate import quad

    f = [quad(lambda z, k=k: expit(loc + sd * z) ** k * norm.pdf(z), -12, 12, epsabs=1e-12)[0] for k in (1, 2)]
    return f[0], f[1]


def _cvc(fit, scale):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = crossed_variance_components(fit, scale=scale)
    return res, [w for w in seen if issubclass(w.category, UndefinedWarning)]


@pytest.mark.parametrize("sd_agent", [None, 0.0, 0.7])
@pytest.mark.parametrize("scale", ["latent", "probability"])
def test_one_agent_has_no_agent_component_it_is_undefined_not_zero(sd_agent, scale):
    # one agent: there is no spread between agents, whatever the posterior holds for sd_agent
    # (absent, the old fits' exact 0, or agents="random"'s prior): NaN with its reason, warned once
    res, seen = _cvc(_one_agent_fit(sd_agent=sd_agent), scale)
    assert np.isnan(res.estimate.sel(component="agent")) and np.isnan(res.ci.sel(component="agent")).all()
    assert len(seen) == 1 and "agent is undefined: one agent" in str(seen[0].message)
    assert str(res.note.sel(component="agent").item()).startswith("undefined: one agent")
    # the task component holds the agent x task interaction (confounded with one agent), and says so
    assert "holds agent:task too" in str(res.note.sel(component="task").item())
    assert "agent:task" not in res.estimate["component"].values
    assert np.isfinite(res.estimate.drop_sel(component="agent")).all()
    assert "note: agent undefined" in repr(res) and "note" in res.to_frame().columns


def test_one_agent_probability_components_are_that_agents_own():
    # task = Var_b(expit(mu + a + b)), residual = E[p (1 - p)], b ~ N(0, sd_task), per draw, by
    # scipy quadrature around the agent's own logit (the population rule agrees to ~3e-6)
    fit = _one_agent_fit(sd_agent=0.7)
    res, _ = _cvc(fit, "probability")
    post = fit["posterior"].to_dataset()
    loc = (post["mu"] + post["agent_effect"].isel(agent=0)).values.ravel()
    sd = post["sd_task"].values.ravel()
    m = np.array([_logit_normal_moments(lo, s) for lo, s in zip(loc, sd, strict=True)])
    draws = res.draws.stack(s=("chain", "draw"))
    np.testing.assert_allclose(draws.sel(component="task").values, m[:, 1] - m[:, 0] ** 2, atol=1e-5)
    np.testing.assert_allclose(draws.sel(component="residual").values, m[:, 0] - m[:, 1], atol=1e-5)


def test_one_agent_forced_interaction_is_folded_into_the_task():
    # agent_task="marginal" asked for with one agent: only sd_task^2 + sd_agent_task^2 is identified
    fit = _one_agent_fit(agent_task="marginal")
    res, _ = _cvc(fit, "latent")
    post = fit["posterior"].to_dataset()
    expect = (post["sd_task"] ** 2 + post["sd_agent_task"] ** 2).values.ravel()
    draws = res.draws.stack(s=("chain", "draw"))
    np.testing.assert_allclose(draws.sel(component="task").values, expect, rtol=1e-12)
    assert np.isnan(draws.sel(component="agent:task")).all()
    assert str(res.note.sel(component="agent:task").item()).startswith("undefined: one agent")


def test_one_agent_one_run_leaves_only_the_score_variance():
    # one agent, one run per task: the task spread is not identified; what is, is Var(Y) of one
    # run = E[p] (1 - E[p]), all of it in the residual (as the G-study of these data has it)
    fit = _one_agent_fit(n_runs=1)
    lat, _ = _cvc(fit, "latent")
    prob, seen = _cvc(fit, "probability")
    for res in (lat, prob):
        assert np.isnan(res.estimate.sel(component=["agent", "task"])).all()
        assert "nothing repeats within a task" in str(res.note.sel(component="task").item())
    assert len(seen) == 1 and "task is undefined" in str(seen[0].message)
    post = fit["posterior"].to_dataset()
    loc = (post["mu"] + post["agent_effect"].isel(agent=0)).values.ravel()
    m = np.array([_logit_normal_moments(lo, s) for lo, s in zip(loc, post["sd_task"].values.ravel(), strict=True)])
    resid = prob.draws.sel(component="residual").stack(s=("chain", "draw")).values
    np.testing.assert_allclose(resid, m[:, 0] * (1 - m[:, 0]), atol=1e-5)


def test_two_or_more_agents_have_every_component_and_no_note():
    res, seen = _cvc(_crossed_fit("marginal"), "probability")
    assert not seen and np.isfinite(res.estimate).all()
    assert (res.note == "").all() and "note" not in res.attrs


@pytest.mark.parametrize("n_runs", [3, 1])
def test_one_agent_fit_matches_the_g_study_of_that_agent(n_runs):
    # the G-study drops a facet of one level (agent; with one run, run too): the adapter gives the
    # same decomposition as crossed_variance_components, row for row (it used to refuse, and
    # needed an sd_agent a one-agent fit does not have)
    ds, _ = simulate_eval(n_agents=1, n_tasks=10, n_runs=n_runs, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        like = freq.variance_components(ds)
    fit = _one_agent_fit(n_runs=n_runs, sd_agent=0.7)
    bv = bayes_variance_components(fit, like)
    names = bv["estimate"]["component"].values.tolist()
    assert names == ([str(c) for c in like.estimate["component"].values])
    assert names == (["task", "residual"] if n_runs > 1 else ["residual"])
    cv, _ = _cvc(fit, "probability")
    ours = cv.draws.sel(component=names).stack(s=("chain", "draw")).transpose("component", "s").values
    np.testing.assert_allclose(bv["draws"].values, ours, atol=2e-5)


@pytest.mark.parametrize("agent_task", ["marginal", "none"])
def test_one_run_per_cell_keeps_agent_x_task_inside_the_residual(agent_task):
    # one run per cell: only agent x task + run-to-run is identified. The same posterior read with
    # repeated runs splits the two; with one run the residual is their sum, and an agent x task
    # component fitted anyway (agent_task="marginal", warned at build) is undefined
    split, _ = _cvc(_crossed_fit(agent_task, max_runs=4), "probability")
    one, seen = _cvc(_crossed_fit(agent_task, max_runs=1), "probability")
    assert "one run per agent x task cell" in str(one.note.sel(component="residual").item())
    if agent_task == "none":  # the model has no such term: the residual held it already
        np.testing.assert_allclose(one.draws.values, split.draws.values, rtol=1e-12)
        assert not seen
        return
    total = split.draws.sel(component=["agent:task", "residual"]).sum("component")
    np.testing.assert_allclose(one.draws.sel(component="residual").values, total.values, rtol=1e-12)
    assert np.isnan(one.estimate.sel(component="agent:task"))
    assert len(seen) == 1 and "agent:task is undefined: one run per agent x task cell" in str(seen[0].message)
    lat, _ = _cvc(_crossed_fit(agent_task, max_runs=1), "latent")
    assert np.isnan(lat.estimate.sel(component="agent:task")) and np.isfinite(lat.estimate.sel(component="task"))
