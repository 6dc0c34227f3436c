"""Crossed agent x task model: likelihood, recovery, agreement with the frequentist side."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import integrate
from scipy import stats
from scipy.special import logit

from hierbench._base import PartialCreditError
from hierbench.bayes import ConvergenceWarning
from hierbench.bayes import PriorError
from hierbench.bayes import build_beta_binomial
from hierbench.bayes import build_crossed
from hierbench.bayes import fit
from hierbench.bayes import loo_compare
from hierbench.bayes import predictive_check
from hierbench.freq import pass_hat_k
from hierbench.freq import variance_components
from hierbench.metrics._crossed import agent_task_effects
from hierbench.metrics._crossed import crossed_pass_k
from hierbench.metrics._crossed import crossed_variance_components
from hierbench.testing import simulate_eval


def _quad_loglik(y: int, n: int, eta: float, sd: float) -> float:
    """Log of the binomial pmf integrated against the N(0, sd) density, by scipy's adaptive quadrature.

    The integrand is written out (binomial pmf and normal density, as in any textbook):
    scipy.stats' per-call overhead made these 45 quadratures 2.7 s of the test (now 0.02 s;
    the two agree to 1e-14).
    """
    coef, norm = math.comb(n, y), 1.0 / (sd * math.sqrt(2.0 * math.pi))

    def f(x: float) -> float:
        p = 1.0 / (1.0 + math.exp(-(eta + x)))
        return coef * p**y * (1.0 - p) ** (n - y) * norm * math.exp(-0.5 * (x / sd) ** 2)

    val, _ = integrate.quad(f, -12 * sd, 12 * sd, limit=500, epsabs=0, epsrel=1e-12, points=[0.0])
    return float(np.log(val))


@pytest.mark.slow
def test_marginal_likelihood_matches_adaptive_quadrature():
    """The model's per-cell logit-normal-binomial log-likelihood vs scipy.integrate.quad."""
    data, _ = simulate_eval(n_agents=3, n_tasks=5, n_runs=40, sd_task=2.0, rng=3)
    model = build_crossed(data, centred=("task",))  # the test sets task_dev directly
    ll = model.logp(vars=[model["y"]], sum=False)[0]
    dev = model.replace_rvs_by_values([model["task_effect"] - model["task_offset"]])[0]
    fn = model.compile_fn([ll, dev], inputs=model.value_vars, on_unused_input="ignore")
    point = model.initial_point()
    rng = np.random.default_rng(0)
    abil = np.array([-3.0, 0.3, 2.5])
    n = model["cell_n_runs"].get_value()
    y = model["cell_n_success"].get_value()
    for sd_at in (0.3, 1.0, 2.5):
        point["ability_theta"] = abil
        point["task_dev_zerosum__"] = rng.normal(0.0, 1.5, point["task_dev_zerosum__"].shape)
        point["sd_agent_task_log__"] = np.array(np.log(sd_at))
        got, d = fn(point)
        eta = (abil[:, None] + d[None, :]).ravel()
        want = np.array([_quad_loglik(int(yy), int(nn), e, sd_at) for yy, nn, e in zip(y, n, eta, strict=True)])
        # tolerance: adaptive GH with 7 nodes, checked over 1-100 runs and sd <= 3
        np.testing.assert_allclose(got, want, atol=5e-3)


def test_builder_records_cells_and_validates():
    data, _ = simulate_eval(n_agents=3, n_tasks=8, n_runs=2, p_missing_task=0.3, rng=0)
    model = build_crossed(data)
    counts_n = (data.score.notnull().sum("run") > 0).values
    assert model.coords["cell"].__len__() == int(counts_n.sum())
    assert model.hierbench["n_cells_excluded"] == int((~counts_n).sum())
    with pytest.raises(
        ValueError, match=r"`agent_task` must be one of \['auto', 'marginal', 'latent', 'none'\]; got 'x'"
    ):
        build_crossed(data, agent_task="x")
    with pytest.raises(ValueError, match=r"`agents` must be one of \['fixed', 'random'\]; got 'pooled'"):
        build_crossed(data, agents="pooled")
    with pytest.raises(ValueError, match=r"`n_quad` must be >= 5; got n_quad=2"):
        build_crossed(data, n_quad=2)
    with pytest.raises(TypeError, match=r"`n_quad` must be an integer; got 7.5"):
        build_crossed(data, n_quad=7.5)
    with pytest.raises(ValueError, match="`clusters=True` needs a `cluster` task coord"):
        build_crossed(data, clusters=True)
    with pytest.raises(ValueError, match=r"`centred` must be 'auto' or a tuple drawn from"):
        build_crossed(data, centred=("runs",))
    with pytest.raises(PriorError, match=r"`priors` keys must be among .*got unknown \['sd_run'\]"):
        build_crossed(data, priors={"sd_run": {"dist": "HalfNormal", "sigma": 1.0}})
    cont, _ = simulate_eval(n_agents=2, n_tasks=4, n_runs=2, score_kind="continuous", rng=0)
    with pytest.raises(PartialCreditError, match=r"build_crossed .* needs binary scores"):
        build_crossed(cont)


# ---------------------------------------------------------------------------
# one fit on data with many runs per cell, shared by the agreement tests

TRUTH = {"sd_task": 1.2, "sd_agent_task": 0.6}


@pytest.fixture(scope="module")
def large_r():
    data, truth = simulate_eval(
        n_agents=5, n_tasks=60, n_runs=200, mu=0.2, sd_agent=0.8, rng=20261130, **TRUTH
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        idata = fit(build_crossed(data), draws=1000, tune=700, chains=4, rng=1, log_likelihood=True)
    return data, truth, idata


@pytest.mark.slow
def test_fit_structure_and_recovery(large_r):
    data, truth, idata = large_r
    assert idata.attrs["hierbench_model"] == "crossed"
    assert idata.attrs["diag_n_divergent"] == 0
    post = idata["posterior"].to_dataset()
    assert post["ability"].attrs["scale"] == "logit"
    # latent sds: the simulation's values inside the 99% posterior interval
    for name, val in TRUTH.items():
        lo, hi = np.quantile(post[name].values, [0.005, 0.995])
        assert lo < val < hi, (name, lo, hi)
    # abilities: mu + a_m of the simulation, each inside its 99% interval
    true_ab = (truth.mu + truth.agent_effect).values
    lo, hi = np.quantile(post["ability"].values, [0.005, 0.995], axis=(0, 1))
    assert np.all((lo < true_ab) & (true_ab < hi))
    # mean over the observed tasks ~ observed success rate (200 runs per cell)
    obs = data.score.mean(("task", "run")).values
    np.testing.assert_allclose(post["mean_observed"].mean(("chain", "draw")).values, obs, atol=0.01)


@pytest.mark.slow
def test_agent_task_effects_recovered(large_r):
    """Recovered (ab)_mt track the simulated ones and the cell proportions."""
    data, truth, idata = large_r
    eff = agent_task_effects(idata)
    est = eff["agent_task_effect"].mean(("chain", "draw")).values
    # Expected correlation about 0.75 here: each cell's logit is known to about
    # +-0.3 from 200 runs, and each task effect only to +-0.6/sqrt(5) because it
    # is confounded with the mean of its 5 agent x task effects.
    r = np.corrcoef(est.ravel(), truth.agent_task.values.ravel())[0, 1]
    assert r > 0.65
    n = data.score.notnull().sum("run").values
    y = data.score.sum("run").values
    p = eff["p"].mean(("chain", "draw")).values
    # shrinkage of 200-run proportions toward the model's cell means stays within 3 binomial ses
    ph = (y + 0.5) / (n + 1)
    assert np.all(np.abs(p - y / n) <= 3 * np.sqrt(ph * (1 - ph) / n) + 0.01)
    # E[p | data, draw] per cell, averaged over tasks, is crossed_pass_k's conditional expectation
    cond = crossed_pass_k(idata, k=1, realised=False, min_runs=0)["draws"].sel(k=1, drop=True)
    np.testing.assert_allclose(eff["p"].mean("task").values, cond.values, rtol=1e-10)
    # the fit's mean_observed is the realised average (one p_mt per cell drawn given the
    # draw), centred on it: paired differences within 5 Monte Carlo standard errors
    d = (idata["posterior"]["mean_observed"] - cond).stack(s=("chain", "draw"))
    assert (abs(d.mean("s")) < 5 * d.std("s") / np.sqrt(d.sizes["s"])).all()


@pytest.mark.slow
def test_pass_hat_k_agrees_with_unbiased_estimator(large_r):
    data, _, idata = large_r
    ks = [1, 2, 4, 8]
    bayes = crossed_pass_k(idata, k=ks)
    freq = pass_hat_k(data, ks).mean.transpose("agent", "k")
    assert bayes["ci"].attrs["ci_kind"] == "eti"
    assert list(bayes["ci"].ci_bound.values) == ["lower", "upper"]
    # With 200 runs per cell, shrinkage of cell probabilities is small; tolerance 0.02 absolute
    np.testing.assert_allclose(bayes["mean"].transpose("agent", "k").values, freq.values, atol=0.02)
    # pass@k the same way (1 - C(n-c,k)/C(n,k))
    from hierbench.freq import pass_at_k

    b_at = crossed_pass_k(idata, k=ks, kind="at")["mean"].transpose("agent", "k").values
    np.testing.assert_allclose(b_at, pass_at_k(data, ks).mean.transpose("agent", "k").values, atol=0.02)
    # population pass^k is decreasing in k, and within [0, 1]
    pop = crossed_pass_k(idata, k=ks, population=True)["mean"].values
    assert np.all(np.diff(pop, axis=-1) < 0) and np.all((pop > 0) & (pop < 1))


@pytest.mark.slow
def test_variance_components_agree_with_gtheory(large_r):
    data, _, idata = large_r
    g = variance_components(data, design="nested").to_dataset()["variance"]
    prob = crossed_variance_components(idata, scale="probability")
    # probability scale: the ANOVA estimates inside the 99% posterior interval
    for ours, theirs in (("task", "task"), ("agent_task", "agent:task"), ("residual", "residual")):
        lo, hi = np.quantile(prob[ours].values, [0.005, 0.995])
        assert lo < float(g.sel(component=theirs)) < hi, (ours, lo, hi, float(g.sel(component=theirs)))
    # latent scale: G-theory on the empirical cell logits (R = 200), with the
    # delta-method binomial noise variance 1 / (n p (1 - p)) subtracted from
    # the interaction, vs the posterior medians (tolerance 30%: the empirical
    # logit is itself biased for p near 0 or 1)
    n = data.score.notnull().sum("run")
    ph = (data.score.sum("run") + 0.5) / (n + 1.0)
    lg = xr.DataArray(logit(ph.values), dims=("agent", "task"))
    g_lat = variance_components(lg, facets=("agent", "task")).to_dataset()["variance"]
    noise = float((1.0 / (n * ph * (1 - ph))).mean())
    lat = crossed_variance_components(idata, scale="latent")
    assert float(lat["task"].median()) == pytest.approx(float(g_lat.sel(component="task")), rel=0.3)
    resid = float(g_lat.sel(component="residual")) - noise
    assert float(lat["agent_task"].median()) == pytest.approx(resid, rel=0.3)


@pytest.mark.slow
def test_predictive_check_and_loo(large_r):
    data, _, idata = large_r
    pc = predictive_check(idata)
    # every observed cell is counted once
    assert int(pc["observed"].sum()) == int(idata["observed_data"]["y"].size)
    # the model reproduces the distribution of per-cell success counts: few bins outside the 90% band
    obs = pc["observed"]
    inside = (obs >= pc["predicted_lower"]) & (obs <= pc["predicted_upper"])
    valid = pc["predicted_mean"].notnull()
    assert float(inside.where(valid).mean()) > 0.8
    # LOO: the beta-binomial on the same cells ignores the agent x task structure and loses
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        bb = fit(
            build_beta_binomial(data, pooling="none"), draws=300, tune=300, chains=2, rng=2,
            log_likelihood=True,
        )
    # every 16th draw (250): leaving out a task integrates its effects per draw (about 4.5 ms a draw
    # here). The margin does not hinge on the draws: crossed leads by elpd 141.5 (dse 20.5, 7 dse) on
    # every 4th draw (1,000) and by 141.6 (dse 20.5) on every 16th; its elpd moved by 0.2
    table = loo_compare({"crossed": idata.isel(draw=slice(None, None, 16)), "beta_binomial": bb})
    assert table.index[0] == "crossed"


@pytest.mark.slow
def test_simulation_based_recovery():
    """90% intervals contain the simulated truth at the expected rate (10 replicates).

    The first 10 of ``benchmarks/bench_coverage_studies.py``'s 20 (part ``crossed``), which
    runs the full study and quotes its figures.
    """
    from bench_coverage_studies import crossed_recovery

    hits = crossed_recovery(10)
    # abilities (40) and sd_agent_task (10): Binomial(n, 0.9) tolerance at the 0.1% level on each side
    for key in ("ability", "sd_agent_task"):
        n = hits[key].size
        lo_ok, hi_ok = stats.binom.ppf([0.001, 0.999], n, 0.9)
        assert lo_ok <= hits[key].sum() <= hi_ok, (key, hits[key].sum(), n)
    # task intervals are correlated within a replicate: the 20-replicate version's band 0.82-0.97
    # was 6.5 binomial sd below 0.9 and 5.7 above (n = 600); the same allowance at n = 300
    n = hits["task_effect"].size
    sd = np.sqrt(0.9 * 0.1 / n)
    assert 0.9 - 6.5 * sd <= np.mean(hits["task_effect"]) <= 0.9 + 5.7 * sd, np.mean(hits["task_effect"])


@pytest.mark.slow
def test_single_run_data_drop_the_unidentified_interaction():
    """R = 1: no agent x task term by default, and pass^k for k > 1 says it rests on an assumption."""
    from hierbench.metrics._crossed import UnidentifiedWarning

    data, _ = simulate_eval(n_agents=4, n_tasks=40, n_runs=1, rng=9)
    model = build_crossed(data)
    assert model.hierbench["options"]["agent_task"] == "none"
    assert "sd_agent_task" not in model.named_vars
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        idata = fit(model, draws=300, tune=300, chains=2, rng=0)
    one = crossed_pass_k(idata, k=1)["mean"].sel(k=1)
    # pass^1 on the observed tasks = the posterior mean success, close to the observed rate
    np.testing.assert_allclose(one.values, data.score.mean(("task", "run")).values, atol=0.1)
    with pytest.warns(UnidentifiedWarning, match="single-run data cannot check"):
        crossed_pass_k(idata, k=[1, 2])


def test_clustered_zero_sum_density_is_the_gaussian_integrated_along_the_ones():
    # r = B - mean(B), B ~ N(0, sd_task^2 I + sd_cluster^2 M M'): the density of r on the
    # zero-sum subspace is int N(r + c 1; 0, Sigma) dc up to one constant (the
    # parametrisation's Jacobian), whatever the sds; computed here by scipy quadrature
    import pytensor
    import pytensor.tensor as pt
    from scipy import integrate
    from scipy.stats import multivariate_normal

    from hierbench.bayes._models._crossed import _clustered_zero_sum_logp

    cl_idx = np.array([0, 0, 0, 1, 2, 2, 1, 0])
    size = np.bincount(cl_idx).astype(float)
    member = np.eye(3)[cl_idx]
    rng = np.random.default_rng(2)
    r = rng.normal(size=cl_idx.size)
    r -= r.mean()
    v, st, sc = pt.vector(), pt.scalar(), pt.scalar()
    f = pytensor.function([v, st, sc], _clustered_zero_sum_logp(v, st, sc, cl_idx, size))
    diffs = []
    for sd_t, sd_c in [(0.5, 0.2), (1.0, 1.0), (2.0, 0.3), (0.7, 3.0)]:
        cov = sd_t**2 * np.eye(cl_idx.size) + sd_c**2 * member @ member.T
        mvn = multivariate_normal(np.zeros(cl_idx.size), cov)
        exact, _ = integrate.quad(lambda c, d=mvn: d.pdf(r + c), -40, 40, epsabs=0, epsrel=1e-12, limit=200)
        diffs.append(float(f(r, sd_t, sd_c)) - np.log(exact))
    np.testing.assert_allclose(diffs, diffs[0], atol=1e-8)


def test_posterior_predictive_in_chunks_draws_the_logit_normal_binomial(monkeypatch):
    # a posterior that is one point, repeated over 2 x 3,000 draws: each cell's predictive
    # is then a logit-normal binomial whose mean and variance scipy.integrate gives; the
    # chunk size is set so the draws run in 15 chunks
    from scipy import integrate
    from scipy import stats
    from scipy.special import expit

    import hierbench.bayes._models._crossed as C

    monkeypatch.setattr(C, "_PREDICTIVE_CHUNK", 2_400)
    ability, task, cluster, sd = np.array([-1.0, 0.5]), np.array([0.3, -2.0, 1.5]), np.array([0.4, -0.4]), 1.2
    ai, ti = np.array([0, 0, 1, 1, 1]), np.array([0, 1, 0, 1, 2])
    cl = np.array([0, 1, 1])
    n = np.array([5, 8, 1, 12, 3])
    S = (2, 3000)

    def rep(v, dim):
        return (("chain", "draw", dim), np.broadcast_to(v, (*S, v.size)).copy())

    post = xr.Dataset(
        {
            "ability": rep(ability, "agent"),
            "task_effect": rep(task, "task"),
            "cluster_effect": rep(cluster, "cluster"),
            "sd_agent_task": (("chain", "draw"), np.full(S, sd)),
        }
    )
    info = {
        "data": {"cell_agent_idx": ai, "cell_task_idx": ti, "cell_n": n, "task_cluster_idx": cl},
        "options": {"agent_task": "marginal"},
    }
    dt = C._predictive(xr.DataTree.from_dict({"posterior": post}), np.random.default_rng(5), info=info)
    y = dt["posterior_predictive"]["y"].values.reshape(-1, n.size)
    assert y.dtype == np.int32 and y.shape == (6000, 5)  # int32: half the memory of int64 at scale
    for c in range(n.size):
        eta = ability[ai[c]] + task[ti[c]] + cluster[cl[ti[c]]]
        m1 = integrate.quad(lambda z, e=eta: expit(e + sd * z) * stats.norm.pdf(z), -10, 10)[0]
        m2 = integrate.quad(lambda z, e=eta: expit(e + sd * z) ** 2 * stats.norm.pdf(z), -10, 10)[0]
        mean = n[c] * m1
        var = n[c] * m1 * (1 - m1) + n[c] * (n[c] - 1) * (m2 - m1**2)
        # 4.5 Monte Carlo standard errors of the mean of 6,000 draws
        assert abs(y[:, c].mean() - mean) < 4.5 * np.sqrt(var / 6000)
        assert abs(y[:, c].var() / var - 1) < 0.12


def test_one_agent_fit_reports_no_agent_spread_end_to_end():
    """Review: a fit of one agent reported the agent component as 0 [0, 0]. Build, sample, summarise:
    no sd_agent in the posterior, the agent component NaN on both scales with its reason.
    """
    from hierbench.metrics import UndefinedMetricWarning

    data, _ = simulate_eval(n_agents=1, n_tasks=12, n_runs=3, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a tiny fit: its checks are not the point
        dt = fit(build_crossed(data), draws=100, tune=100, chains=2, rng=1, progress=False)
    assert "sd_agent" not in dt["posterior"] and "agent_effect" in dt["posterior"]
    for scale in ("latent", "probability"):
        with pytest.warns(UndefinedMetricWarning, match="agent is undefined: one agent"):
            vc = crossed_variance_components(dt, scale=scale)
        assert np.isnan(vc.estimate.sel(component="agent")) and np.isnan(vc.ci.sel(component="agent")).all()
        assert np.isfinite(vc.estimate.sel(component="task"))
