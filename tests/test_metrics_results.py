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
    bayes_all = pass_hat_k(fit, k=3)  # every task each agent ran
    bayes_same = pass_hat_k(fit, k=3, min_runs="k")
    # the task counts, counted on the data
    np.testing.assert_array_equal(bayes_all.n_tasks.sel(k=3).values, (cnt >= 1).sum(1))
    np.testing.assert_array_equal(bayes_same.n_tasks.sel(k=3).values, (cnt >= 3).sum(1))
    np.testing.assert_array_equal(unbiased.n_tasks.values, (cnt >= 3).sum(1))
    assert bayes_same.attrs["over"] == "the tasks each agent ran at least k times"
    with pytest.raises(MismatchedEstimatesError, match="different task sets"):
        side_by_side({"unbiased": unbiased, "bayes": bayes_all.sel(k=3, drop=True)})
    t = side_by_side({"unbiased": unbiased, "bayes": bayes_same.sel(k=3, drop=True)})
    np.testing.assert_array_equal(t["n_tasks"].values[0], t["n_tasks"].values[1])
    assert set(t["quantity"].values) == {"pass^k (observed tasks)"}
    # a new task from the population is another quantity
    pop = pass_hat_k(fit, k=3, population=True)
    with pytest.raises(MismatchedEstimatesError, match="different quantities"):
        side_by_side({"unbiased": unbiased, "population": pop.sel(k=3, drop=True)})
    forced = side_by_side({"unbiased": unbiased, "bayes": bayes_all.sel(k=3, drop=True)}, allow_mismatch=True)
    assert forced.sizes["estimator"] == 2
    # the result itself reads like the frequentist one
    assert isinstance(bayes_same, Result) and "n_tasks" in bayes_same.to_frame().columns
    assert len(repr(bayes_same).splitlines()) <= 10


def _crossed_fit(agent_task="marginal", clusters=False, seed=0, draws=40):
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
    n = g.integers(1, 5, (A, T))
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
