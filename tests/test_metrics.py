"""hierbench.metrics: exact Beta moments, posterior pass^k / pass@k, P(i > j), rank probabilities."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from _helpers import fake_fit
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.stats import betabinom
from scipy.stats import rankdata

import hierbench.metrics as hm
from hierbench.metrics import UndefinedMetricWarning
from hierbench.metrics import beta_moments
from hierbench.metrics import pass_at_k
from hierbench.metrics import pass_hat_k
from hierbench.metrics import posterior_interval
from hierbench.metrics import prob_superiority
from hierbench.metrics import rank_probabilities

# ---------------------------------------------------------------------------
# exact Beta moments


@pytest.mark.parametrize(("alpha", "beta"), [(0.7, 2.5), (3.0, 3.0), (40.0, 9.0)])
@pytest.mark.parametrize("k", [1, 2, 5])
def test_beta_moments_equal_betabinomial_probabilities(alpha, beta, k):
    # E[p^k] = P(k successes in k trials) and E[(1-p)^k] = P(0 successes) under
    # BetaBinomial(k, alpha, beta): scipy's betabinom is the independent reference
    np.testing.assert_allclose(
        beta_moments(alpha, beta, k), betabinom.pmf(k, k, alpha, beta), rtol=1e-10
    )
    np.testing.assert_allclose(
        beta_moments(alpha, beta, k, complement=True), betabinom.pmf(0, k, alpha, beta), rtol=1e-10
    )


def test_beta_moments_vs_monte_carlo():
    rng = np.random.default_rng(7)
    n = 400_000
    for alpha, beta, k in [(1.5, 4.0, 3), (8.0, 2.0, 4)]:
        p = rng.beta(alpha, beta, n)
        for comp, x in ((False, p**k), (True, (1 - p) ** k)):
            mc, se = x.mean(), x.std() / np.sqrt(n)
            # Monte Carlo tolerance: 4 standard errors of the sample mean
            assert abs(beta_moments(alpha, beta, k, complement=comp) - mc) < 4 * se


# ---------------------------------------------------------------------------
# pass^k / pass@k on a hand-built beta-binomial fit (expected values exact via scipy)


def _bb_fit(mu, kappa, n_runs, n_success, agents=("a0", "a1")):
    data = {"n_runs": n_runs, "n_success": n_success}
    return fake_fit("beta_binomial", agents, data, mu=mu, kappa=kappa)


@pytest.fixture
def hand_fit():
    rng = np.random.default_rng(1)
    mu = rng.uniform(0.2, 0.8, (2, 5, 2))
    kappa = rng.uniform(1.0, 20.0, (2, 5, 2))
    n = np.array([[4, 4, 4, 0], [3, 5, 2, 4]])
    c = np.array([[0, 2, 4, 0], [3, 1, 2, 0]])
    return _bb_fit(mu, kappa, n, c), mu, kappa, n, c


def test_pass_hat_and_at_k_observed_tasks_exact(hand_fit):
    dt, mu, kappa, n, c = hand_fit
    # the conditional expectations over every task each agent ran (the defaults are realised, min_runs="k")
    hat = pass_hat_k(dt, k=[1, 2, 3], realised=False, min_runs=0)
    at = pass_at_k(dt, k=[1, 2, 3], realised=False, min_runs=0)
    assert hat["draws"].dims == ("chain", "draw", "agent", "k")
    for m in range(2):
        ran = n[m] > 0  # agent a0 never ran t3: excluded, not counted as a failure
        a = (mu[..., m] * kappa[..., m])[..., None]
        b = ((1 - mu[..., m]) * kappa[..., m])[..., None]
        for i, k in enumerate([1, 2, 3]):
            ex_hat = betabinom.pmf(k, k, a + c[m], b + n[m] - c[m])[..., ran].mean(-1)
            ex_at = 1 - betabinom.pmf(0, k, a + c[m], b + n[m] - c[m])[..., ran].mean(-1)
            np.testing.assert_allclose(hat["draws"].isel(agent=m, k=i), ex_hat, rtol=1e-10)
            np.testing.assert_allclose(at["draws"].isel(agent=m, k=i), ex_at, rtol=1e-10)
    # k = 1: pass^1 = pass@1 = posterior mean success probability
    np.testing.assert_allclose(hat["draws"].sel(k=1), at["draws"].sel(k=1), rtol=1e-12)
    # pass^k decreasing and pass@k increasing in k in every draw
    assert (hat["draws"].diff("k") <= 1e-15).all() and (at["draws"].diff("k") >= -1e-15).all()
    # house interval convention
    assert hat["ci"].dims == ("agent", "k", "ci_bound")
    assert hat["ci"].ci_bound.values.tolist() == ["lower", "upper"]
    # the one default level (0.95) and the fixed ci_kind vocabulary
    assert hat["ci"].attrs["ci_prob"] == 0.95 and hat["ci"].attrs["ci_kind"] == "eti"
    np.testing.assert_allclose(hat["estimate"], hat["draws"].mean(("chain", "draw")))
    with pytest.warns(DeprecationWarning, match=r"\['mean'\] is deprecated"):
        np.testing.assert_allclose(hat["mean"], hat["estimate"])  # deprecated alias


def test_pass_k_population_exact_and_default_k(hand_fit):
    dt, mu, kappa, n, _ = hand_fit
    pop = pass_hat_k(dt, population=True)
    assert pop["k"].values.tolist() == list(range(1, int(n.max()) + 1))  # default 1..max n_runs
    a, b = mu * kappa, (1 - mu) * kappa
    for i, k in enumerate(pop["k"].values):
        np.testing.assert_allclose(pop["draws"].isel(k=i), betabinom.pmf(k, k, a, b), rtol=1e-10)
    np.testing.assert_allclose(pop["draws"].sel(k=1), mu, rtol=1e-12)
    pat = pass_at_k(dt, k=2, population=True)
    np.testing.assert_allclose(pat["draws"].sel(k=2), 1 - betabinom.pmf(0, 2, a, b), rtol=1e-10)
    assert pat.attrs["tasks"] == "population"


def test_realised_draws_follow_the_law_of_total_variance():
    # Var(realised average) = Var(conditional expectation) + E[sum_t Var(p_t^k | draw)] / T^2,
    # with Var(p^k) = E[p^2k] - E[p^k]^2 exact from scipy's betabinom
    rng = np.random.default_rng(5)
    s, t = 4000, 6
    mu = rng.uniform(0.3, 0.6, (1, s, 2))
    kappa = rng.uniform(2.0, 8.0, (1, s, 2))
    n = np.array([[5] * t, [5] * t])
    c = np.array([[0, 1, 2, 3, 4, 5], [5, 5, 4, 0, 1, 2]])
    dt = _bb_fit(mu, kappa, n, c)
    for at in (False, True):
        fn = pass_at_k if at else pass_hat_k
        exp_ = fn(dt, k=[1, 3], realised=False)
        real = fn(dt, k=[1, 3], realised=True, rng=9)
        assert real.attrs["draws_of"] == "realised task average"
        xr.testing.assert_allclose(real["estimate"], exp_["estimate"])  # mean stays exact
        for m in range(2):
            a = (mu[0, :, m] * kappa[0, :, m])[:, None] + c[m]
            b = ((1 - mu[0, :, m]) * kappa[0, :, m])[:, None] + n[m] - c[m]
            for k in (1, 3):
                if at:  # 1 - (1-p)^k: variance of (1-p)^k
                    m1, m2 = betabinom.pmf(0, k, a, b), betabinom.pmf(0, 2 * k, a, b)
                else:
                    m1, m2 = betabinom.pmf(k, k, a, b), betabinom.pmf(2 * k, 2 * k, a, b)
                cond_var = ((m2 - m1**2).sum(axis=1) / t**2).mean()
                total = float(exp_["draws"].isel(agent=m).sel(k=k).var()) + cond_var
                got_draws = real["draws"].isel(agent=m).sel(k=k).values.ravel()
                got = got_draws.var()
                # Monte Carlo tolerance: 5 sd of a sample variance, sd ~ var * sqrt(2 / (S - 1))
                # inflated by 1.5 for non-normal tails
                assert abs(got - total) < 5 * 1.5 * total * np.sqrt(2 / (s - 1)), (
                    at,
                    m,
                    k,
                    got,
                    total,
                )
                # and the realised draws are centred on the exact mean: 4 standard errors
                se = got_draws.std() / np.sqrt(s)
                assert abs(got_draws.mean() - float(exp_["estimate"].isel(agent=m).sel(k=k))) < 4 * se
    # the realised interval is wider than the conditional-expectation one
    w_real = pass_hat_k(dt, k=3, realised=True, rng=1)["ci"].diff("ci_bound")
    w_exp = pass_hat_k(dt, k=3, realised=False)["ci"].diff("ci_bound")
    assert (w_real > w_exp).all()
    with pytest.raises(
        ValueError, match=r"`realised=True` applies to the observed tasks \(population=False\)"
    ):
        pass_hat_k(dt, k=1, population=True, realised=True)


def test_pass_k_on_saved_fit(hand_fit, tmp_path):
    from hierbench.io import load_fit
    from hierbench.io import save_fit

    dt = hand_fit[0]
    path = save_fit(dt, tmp_path / "fit.nc")
    back = load_fit(path)
    xr.testing.assert_allclose(
        pass_hat_k(back, k=[1, 4], rng=0)["draws"], pass_hat_k(dt, k=[1, 4], rng=0)["draws"]
    )


def test_pass_k_agent_without_tasks_is_nan_with_warning():
    mu = np.full((1, 3, 2), 0.5)
    kappa = np.full((1, 3, 2), 4.0)
    dt = _bb_fit(mu, kappa, [[2, 2], [0, 0]], [[1, 2], [0, 0]])
    with pytest.warns(UndefinedMetricWarning, match=r"agents \['a1'\] ran no task"):
        res = pass_hat_k(dt, k=2)
    assert np.isnan(res["draws"].sel(agent="a1")).all()
    assert np.isfinite(res["draws"].sel(agent="a0")).all()


def test_pass_k_bad_input(hand_fit):
    dt = hand_fit[0]
    with pytest.raises(
        ValueError, match=r"`k` must be an integer >= 1 or a non-empty sequence of them; got 0"
    ):
        pass_hat_k(dt, k=0)
    with pytest.raises(ValueError, match=r"`k` must be an integer >= 1 .*; got 1.5"):
        pass_at_k(dt, k=1.5)
    with pytest.raises(ValueError, match=r"`k` must be an integer >= 1 .*; got \[\]"):
        pass_at_k(dt, k=[])
    with pytest.raises(ValueError, match=r"`prob` must satisfy 0 < prob < 1; got prob=1.2"):
        pass_hat_k(dt, k=1, prob=1.2)
    with pytest.raises(TypeError, match=r"`fit` must be an xarray.DataTree"):
        pass_hat_k(dt["posterior"].to_dataset(), k=1)
    bt = dt.copy()
    bt.attrs["hierbench_model"] = "bradley_terry"
    with pytest.raises(
        ValueError, match=r"not defined for hierbench_model='bradley_terry': a Bradley-Terry fit"
    ):
        pass_hat_k(bt, k=1)
    other = dt.copy()
    other.attrs["hierbench_model"] = "custom"
    with pytest.raises(
        ValueError,
        match=r"implemented for hierbench_model 'beta_binomial' and 'crossed'; .*'custom'",
    ):
        pass_at_k(other, k=1)
    nokappa = _bb_fit(
        np.full((1, 2, 2), 0.5), np.full((1, 2, 2), 3.0), [[1, 1], [1, 1]], [[0, 1], [1, 1]]
    )
    nokappa["posterior"] = xr.DataTree(nokappa["posterior"].to_dataset().drop_vars("kappa"))
    with pytest.raises(ValueError, match=r"must have `kappa` in its posterior"):
        pass_hat_k(nokappa, k=1)


def test_crossed_fit_dispatches_to_crossed_module(hand_fit, monkeypatch):
    import sys
    import types

    calls = []

    def fake(fit, *, k, kind, population, prob, realised, rng, min_runs):
        calls.append((tuple(k), kind, population, prob, realised, rng, min_runs))
        return types.SimpleNamespace(estimate=xr.DataArray(0.0))  # a result: its estimate gets the fingerprints

    # a stand-in module: this checks the dispatch, not the crossed maths
    monkeypatch.setitem(
        sys.modules, "hierbench.metrics._crossed", types.SimpleNamespace(crossed_pass_k=fake)
    )
    dt = hand_fit[0].copy()
    dt.attrs["hierbench_model"] = "crossed"
    pass_at_k(dt, k=[1, 3], population=True, prob=0.8)
    pass_hat_k(dt, k=2)
    pass_hat_k(dt, k=1, realised=True, rng=7)  # realised draws are the crossed module's too
    assert calls == [  # the defaults resolved per population: realised and min_runs="k" on these tasks only
        ((1, 3), "at", True, 0.8, False, None, 0),
        ((2,), "hat", False, 0.95, True, None, "k"),
        ((1,), "hat", False, 0.95, True, 7, "k"),
    ]


# ---------------------------------------------------------------------------
# agreement with the unbiased estimator on simulated data (a real beta-binomial fit)


@pytest.mark.slow
def test_posterior_pass_hat_k_agrees_with_unbiased_estimator():
    from hierbench.bayes import build_beta_binomial
    from hierbench.bayes import fit
    from hierbench.freq import pass_hat_k as freq_pass_hat_k

    rng = np.random.default_rng(42)
    n_tasks, n_runs = 1500, 8
    true = {"a0": (0.35, 3.0), "a1": (0.7, 6.0)}  # (mu, kappa)
    p = np.stack([rng.beta(m * k, (1 - m) * k, n_tasks) for m, k in true.values()])
    c = rng.binomial(n_runs, p)
    counts = xr.Dataset(
        {
            "n_runs": (("agent", "task"), np.full_like(c, n_runs)),
            "n_success": (("agent", "task"), c),
        },
        coords={"agent": list(true), "task": [f"t{i}" for i in range(n_tasks)]},
    )
    # 250 draws a chain: the Monte Carlo error of a posterior mean from 500 draws is under 0.05 of
    # the tolerance's se (sd of the per-draw values / sqrt(500); 0.03 at the former 1,000 draws,
    # whose post-processing took twice the time), against a tolerance of 4 se
    dt = fit(
        build_beta_binomial(counts),
        draws=250,
        tune=500,
        chains=2,
        rng=3,
        posterior_predictive=False,
        log_likelihood=False,
    )
    ks = [1, 2, 4, 8]
    post = pass_hat_k(dt, k=ks)
    unbiased = freq_pass_hat_k(counts, ks)
    mu = dt["posterior"]["mu"].stack(s=("chain", "draw")).transpose("s", "agent").values
    kap = dt["posterior"]["kappa"].stack(s=("chain", "draw")).transpose("s", "agent").values
    for m, agent in enumerate(true):
        a = (mu[:, m] * kap[:, m])[:, None]
        b = ((1 - mu[:, m]) * kap[:, m])[:, None]
        for k in ks:
            # per-task posterior mean E[p_t^k | data], independently via scipy
            per_task = betabinom.pmf(k, k, a + c[m], b + n_runs - c[m]).mean(axis=0)
            np.testing.assert_allclose(
                float(post["estimate"].sel(agent=agent, k=k)), per_task.mean(), rtol=1e-8
            )
            u = unbiased.per_task.sel(agent=agent, k=k).values
            np.testing.assert_allclose(unbiased.estimate.sel(agent=agent, k=k), u.mean())
            # tolerance: 4 standard errors of the mean per-task difference
            # (tasks are independent given the hyperparameters)
            d = per_task - u
            se = d.std(ddof=1) / np.sqrt(n_tasks)
            assert abs(d.mean()) < 4 * se + 1e-12, (agent, k, d.mean(), se)
            # and the realised truth mean(p_t^k), same tolerance construction
            dt_true = per_task - p[m] ** k
            se_t = dt_true.std(ddof=1) / np.sqrt(n_tasks)
            assert abs(dt_true.mean()) < 4 * se_t, (agent, k, dt_true.mean(), se_t)


# ---------------------------------------------------------------------------
# P(i > j) and rank probabilities


def _draws(x, agents=None):
    x = np.asarray(x, float)
    agents = agents or [f"m{i}" for i in range(x.shape[-1])]
    return xr.DataArray(x[None], dims=("chain", "draw", "agent"), coords={"agent": agents})


def test_rank_probabilities_by_enumeration():
    # all 6 orderings of 3 distinct values, each once, plus one draw where
    # m0 and m1 tie for first: exact probabilities by hand
    perms = [[3, 2, 1], [3, 1, 2], [2, 3, 1], [1, 3, 2], [2, 1, 3], [1, 2, 3], [5, 5, 0]]
    rp = rank_probabilities(_draws(perms))
    expected = np.array(
        [
            [2 / 7 + 0.5 / 7, 2 / 7 + 0.5 / 7, 2 / 7],
            [2 / 7 + 0.5 / 7, 2 / 7 + 0.5 / 7, 2 / 7],
            [2 / 7, 2 / 7, 3 / 7],
        ]
    )
    np.testing.assert_allclose(rp.values, expected, rtol=1e-12)
    assert rp.dims == ("agent", "rank") and rp["rank"].values.tolist() == [1, 2, 3]
    low = rank_probabilities(_draws([[1.0, 2.0, 3.0]]), higher_is_better=False)
    np.testing.assert_array_equal(low.values, np.eye(3))


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.int64, st.tuples(st.integers(1, 30), st.integers(2, 6)), elements=st.integers(0, 3))
)
@pytest.mark.slow
def test_rank_probabilities_properties(x):
    rp = rank_probabilities(_draws(x))
    np.testing.assert_allclose(rp.sum("rank"), 1.0, atol=1e-12)  # each agent has some rank
    np.testing.assert_allclose(rp.sum("agent"), 1.0, atol=1e-12)  # each rank is held
    # expected rank equals the mean of scipy's average ranks (ties averaged)
    avg_rank = rankdata(-x, method="average", axis=1).mean(axis=0)
    np.testing.assert_allclose((rp * rp["rank"]).sum("rank"), avg_rank, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    arrays(np.int64, st.tuples(st.integers(1, 30), st.integers(2, 5)), elements=st.integers(0, 3))
)
@pytest.mark.slow
def test_prob_superiority_properties(x):
    gt = prob_superiority(_draws(x))
    tie = (x[:, :, None] == x[:, None, :]).mean(axis=0)
    total = gt.values + gt.values.T + tie
    off = ~np.eye(x.shape[1], dtype=bool)
    np.testing.assert_allclose(total[off], 1.0, atol=1e-12)  # P(i>j) + P(j>i) + P(tie) = 1
    assert np.isnan(np.diag(gt.values)).all()  # no self-comparison, as in compare_agents
    split = prob_superiority(_draws(x), ties="split")
    np.testing.assert_allclose((split.values + split.values.T)[off], 1.0, atol=1e-12)
    assert np.isnan(np.diag(split.values)).all()
    # direct count for one pair
    assert gt.values[0, 1] == pytest.approx(np.mean(x[:, 0] > x[:, 1]))


def test_prob_superiority_on_a_fit_and_scale_attr():
    rng = np.random.default_rng(0)
    ab = xr.DataArray(
        rng.normal([0.0, 1.0, 3.0], 1.0, (2, 2000, 3)),
        dims=("chain", "draw", "agent"),
        coords={"agent": ["a", "b", "c"]},
        attrs={"scale": "logit"},
    )
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset({"ability": ab})})
    ps = prob_superiority(dt)
    assert ps.attrs["scale"] == "logit" and ps.dims == ("agent", "opponent")
    # independent value: for independent normals, P(b > a) = Phi(1 / sqrt(2));
    # Monte Carlo tolerance 4 * sqrt(p (1 - p) / 4000)
    from scipy.stats import norm

    expected = norm.cdf(1 / np.sqrt(2))
    assert abs(ps.sel(agent="b", opponent="a").item() - expected) < 4 * np.sqrt(
        expected * (1 - expected) / 4000
    )
    rp = rank_probabilities(dt)
    assert int(np.argmax(rp.sel(agent="c").values)) == 0  # c is most likely first


def test_ranking_bad_input():
    d = _draws([[1.0, 2.0]])
    with pytest.raises(ValueError, match=r"`ties` must be one of \['exclude', 'split'\]; got 'half'"):
        prob_superiority(d, ties="half")
    with pytest.raises(
        ValueError,
        match=r"`agent_dim` must be a dimension of 'ability' \('chain', 'draw', 'agent'\); got 'model'",
    ):
        rank_probabilities(d, agent_dim="model")
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": d})})
    with pytest.raises(
        ValueError, match=r"`var` must be a posterior variable of `fit` \['mu'\]; got 'ability'"
    ):
        prob_superiority(dt)
    with pytest.raises(ValueError, match=r"`fit` has no `posterior` group"):
        rank_probabilities(xr.DataTree())
    with pytest.raises(TypeError, match=r"`fit` must be an xarray.DataTree fit"):
        rank_probabilities(np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"missing \['chain'\]"):
        rank_probabilities(xr.DataArray(np.zeros((3, 2)), dims=("draw", "agent")))
    extra = xr.DataArray(np.zeros((1, 3, 2, 4)), dims=("chain", "draw", "agent", "task"))
    with pytest.raises(ValueError, match=r"select the extra dims \['task'\] first"):
        prob_superiority(extra)
    nan = _draws([[1.0, np.nan]])
    with pytest.raises(ValueError, match=r"'ability' draws contain NaN"):
        rank_probabilities(nan)


def test_posterior_interval_convention_and_errors():
    d = xr.DataArray(np.linspace(0, 1, 1001)[None, :], dims=("chain", "draw"))
    ci = posterior_interval(d, prob=0.8)
    np.testing.assert_allclose(ci.values, [0.1, 0.9], atol=1e-9)  # quantiles of a uniform grid
    assert ci.attrs["ci_prob"] == 0.8 and ci.attrs["ci_kind"] == "eti"
    h = posterior_interval(d, prob=0.8, kind="hdi")
    assert h.attrs["ci_kind"] == "hdi"
    with pytest.raises(ValueError, match=r"`prob` must satisfy 0 < prob < 1; got prob=0"):
        posterior_interval(d, prob=0)
    with pytest.raises(ValueError, match=r"`kind` must be one of \['eti', 'hdi'\]; got 'quantile'"):
        posterior_interval(d, kind="quantile")


@pytest.mark.slow
def test_metrics_import_is_light():
    import subprocess
    import sys

    code = "import sys, hierbench.metrics; print(sorted(m for m in ('pymc', 'pytensor', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert set(hm.__all__) >= {"pass_hat_k", "pass_at_k", "prob_superiority", "rank_probabilities"}


# ---------------------------------------------------------------------------
# head-to-head predictions of a Bradley-Terry fit


def _bt_fit(ability, nu=None, home=None):
    agents = [f"m{i}" for i in range(np.shape(ability)[-1])]
    return fake_fit("bradley_terry", agents, ability=ability, nu=nu, home=home)


def test_head_to_head_davidson_probabilities_exact():
    from scipy.special import softmax

    rng = np.random.default_rng(3)
    ab = rng.normal(0, 1, (2, 50, 3))
    nu = rng.uniform(0.2, 2.0, (2, 50))
    home = rng.normal(0.3, 0.1, (2, 50))
    for agent_first in (True, False, None):
        h2h = hm.head_to_head(_bt_fit(ab, nu, home), agent_first=agent_first)
        for i in range(3):
            for j in range(3):
                if i == j:
                    assert np.isnan(h2h["p_win"].values[i, j])
                    continue
                d = ab[..., i] - ab[..., j]
                orders = {True: [home], False: [-home], None: [home, -home]}[agent_first]
                p = np.mean(
                    [
                        softmax(np.stack([(d + h) / 2, np.log(nu), -(d + h) / 2], -1), axis=-1)
                        for h in orders
                    ],
                    axis=0,
                )
                np.testing.assert_allclose(h2h["p_win"].values[i, j], p[..., 0].mean(), rtol=1e-10)
                np.testing.assert_allclose(h2h["p_tie"].values[i, j], p[..., 1].mean(), rtol=1e-10)
                np.testing.assert_allclose(h2h["p_loss"].values[i, j], p[..., 2].mean(), rtol=1e-10)
                np.testing.assert_allclose(
                    h2h["expected_score"].values[i, j],
                    (p[..., 0] + 0.5 * p[..., 1]).mean(),
                    rtol=1e-10,
                )
    # averaged over orders, the expected scores of i vs j and j vs i add to 1
    h2h = hm.head_to_head(_bt_fit(ab, nu, home))
    off = ~np.eye(3, dtype=bool)
    np.testing.assert_allclose(
        (h2h["expected_score"] + h2h["expected_score"].T.values).values[off], 1.0
    )
    assert h2h["p_win_ci"].dims == ("agent", "opponent", "ci_bound")
    assert h2h["p_win_ci"].attrs["ci_prob"] == 0.95 and h2h["p_win_ci"].attrs["ci_kind"] == "eti"


def test_head_to_head_without_ties_is_logistic_and_errors():
    from scipy.special import expit

    ab = np.array([[[0.4, -0.4], [1.0, -1.0]]])
    h2h = hm.head_to_head(_bt_fit(ab))
    np.testing.assert_allclose(
        h2h["p_win"].sel(agent="m0", opponent="m1"), expit([0.8, 2.0]).mean()
    )
    np.testing.assert_allclose(h2h["p_tie"].sel(agent="m0", opponent="m1"), 0.0)
    bb = _bt_fit(ab)
    bb.attrs["hierbench_model"] = "beta_binomial"
    with pytest.raises(
        ValueError, match=r"`fit` must be a bradley_terry fit; got hierbench_model='beta_binomial'"
    ):
        hm.head_to_head(bb)
    with pytest.raises(ValueError, match=r"`agent_first` must be None, True or False; got 'left'"):
        hm.head_to_head(_bt_fit(ab), agent_first="left")
    with pytest.raises(TypeError, match=r"`fit` must be an xarray.DataTree"):
        hm.head_to_head(_bt_fit(ab)["posterior"].to_dataset())


def test_head_to_head_repr_ranks_agents_without_self_pairs():
    """The repr lists each agent's average expected score over its opponents (by hand), best first, no self-pair."""
    rng = np.random.default_rng(8)
    ab = rng.normal(0, 1, (2, 40, 3)) + np.array([0.0, 2.0, -1.0])
    h2h = hm.head_to_head(_bt_fit(ab))
    text = repr(h2h)
    assert "nan" not in text and "3 agents, 6 ordered pairs" in text
    es = h2h.expected_score.transpose("agent", "opponent").values
    by_hand = {f"m{i}": np.mean([es[i, j] for j in range(3) if j != i]) for i in range(3)}
    lines = text.splitlines()[2:]
    assert [ln.split(":")[0].strip() for ln in lines] == sorted(by_hand, key=lambda a: -by_hand[a])
    assert lines[0].endswith(f"{by_hand['m1']:.3f}")


def test_beta_binomial_k_above_one_on_single_run_agents_says_it_rests_on_rhos_prior():
    from hierbench._base import UnidentifiedWarning

    rng = np.random.default_rng(5)
    mu = rng.uniform(0.3, 0.5, (2, 200, 2))
    kappa = rng.uniform(0.5, 5.0, (2, 200, 2))
    n = np.array([[1, 1, 1, 1], [2, 1, 2, 1]])  # a0 ran every task once; a1 ran two tasks twice
    dt = _bb_fit(mu, kappa, n, np.array([[1, 0, 1, 0], [2, 0, 1, 1]]))
    with pytest.warns(UnidentifiedWarning, match=r"k > 1 of 1 of 2 agents \(a0\) rests on the prior of rho"):
        pass_hat_k(dt, k=[1, 2])
    with pytest.warns(UnidentifiedWarning, match=r"pass@k for k > 1"):
        pass_at_k(dt, k=[3], population=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnidentifiedWarning)
        pass_hat_k(dt, k=1)  # k = 1 is the success rate: identified
        pass_hat_k(dt.sel(agent=["a1"]), k=2)


def test_a_fit_without_counts_is_told_how_to_give_them_and_the_remedy_works():
    """fit_replicates' fits keep only their posterior; the error says how to attach the counts, and
    with them the estimate is the Beta posterior moment by hand: E[p^2 | c, n] = a'(a'+1) / ((a'+b')(a'+b'+1)).
    """
    import xarray as xr

    from hierbench.data import to_counts
    from hierbench.metrics import pass_hat_k

    post = xr.Dataset({"mu": (("chain", "draw", "agent"), np.full((1, 2, 1), 0.5)),
                       "kappa": (("chain", "draw", "agent"), np.full((1, 2, 1), 2.0))},
                      coords={"agent": ["a"]})  # fmt: skip
    dt = xr.DataTree.from_dict({"posterior": post})
    dt.attrs["hierbench_model"] = "beta_binomial"
    with pytest.raises(ValueError, match=r"to_counts\(replicate\)\), or pass population=True"):
        pass_hat_k(dt, k=2)
    y = np.array([[[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]])  # agent a: 2 of 3, then 0 of 3
    log = xr.Dataset({"score": (("agent", "task", "run"), y)}, coords={"agent": ["a"], "task": ["t0", "t1"]})
    dt["constant_data"] = xr.DataTree(to_counts(log))
    want = np.mean([(1 + c) * (2 + c) / (5 * 6) for c in (2, 0)])  # a' = 1 + c, b' = 1 + 3 - c
    assert float(pass_hat_k(dt, k=2).estimate.squeeze()) == pytest.approx(want, rel=1e-12)
