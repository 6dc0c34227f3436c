"""The posterior pass^k / pass@k defaults on the observed tasks (audit K, finding 2).

By default (``population=False``) the interval is for these tasks' own pass^k (``realised=True``)
and each ``k`` averages the tasks run at least ``k`` times (``min_runs="k"``), as the unbiased
estimator does; ``population=True`` takes neither.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from _helpers import crossed_fit_without_agent_task
from _helpers import fake_fit
from scipy import stats
from scipy.special import betaln
from scipy.special import expit

from hierbench.metrics import crossed_pass_k
from hierbench.metrics import pass_at_k
from hierbench.metrics import pass_hat_k

MU_GRID = np.linspace(0.1, 0.9, 9)
KAPPA_GRID = np.array([0.5, 1.0, 2.0, 4.0, 8.0])


def _exact_posterior_fit(n_agents: int, n_tasks: int, draws: int, seed: int):
    """Agents as independent replicates with a known truth, and their exact posterior.

    Each agent's (mu, kappa) is drawn from a uniform prior on a 9 x 5 grid, its tasks'
    ``p_t ~ Beta(mu kappa, (1 - mu) kappa)``, 1-4 runs per task and ``c_t ~ Binomial(n_t, p_t)``.
    The posterior of (mu, kappa) on the grid is the prior times ``prod_t betabinom.pmf(c_t; n_t,
    a, b)`` (scipy), sampled ``draws`` times: exact posterior draws of the hyperparameters, so the
    beta-binomial posterior is exact and its credible intervals cover at their level on average
    over this prior (Bayesian calibration), with nothing from hierbench in the construction.
    """
    rng = np.random.default_rng(seed)
    mu_g, ka_g = (g.ravel() for g in np.meshgrid(MU_GRID, KAPPA_GRID, indexing="ij"))
    pick = rng.integers(mu_g.size, size=n_agents)
    a, b = (mu_g * ka_g)[pick], ((1 - mu_g) * ka_g)[pick]
    p = rng.beta(a[:, None], b[:, None], (n_agents, n_tasks))
    n = rng.integers(1, 5, (n_agents, n_tasks))
    c = rng.binomial(n, p)
    ag, bg = mu_g * ka_g, (1 - mu_g) * ka_g
    loglik = stats.betabinom.logpmf(c[:, None, :], n[:, None, :], ag[None, :, None], bg[None, :, None]).sum(-1)
    w = np.exp(loglik - loglik.max(1, keepdims=True))
    w /= w.sum(1, keepdims=True)
    idx = np.stack([rng.choice(mu_g.size, size=draws, p=w[m]) for m in range(n_agents)], -1)  # (draw, agent)
    fit = fake_fit("beta_binomial", [f"m{i}" for i in range(n_agents)], {"n_runs": n, "n_success": c},
                   mu=mu_g[idx][None], kappa=ka_g[idx][None])  # fmt: skip
    return fit, p, n


def test_default_interval_covers_these_tasks_own_pass_k_at_its_level():
    """300 agents x 20 tasks, exact posterior (see ``_exact_posterior_fit``); truth: each agent's
    mean of ``p_t^k`` over its tasks with at least ``k`` runs.

    Monte Carlo tolerance: the 300 agents are independent replicates, so the coverage count is
    Binomial(300, 0.95) up to the quantile error of 250 draws; the band is its 0.05%-99.95%
    quantiles (0.903-0.987), widened by 0.01 below for the draws' quantile error. Measured at this
    seed: 0.94 for k = 1, 2, 3 (default; 0.927-0.957 over seeds 11-14), against 0.74 at k = 1
    for ``realised=False`` (0.70-0.75 over those seeds), whose
    interval is the conditional expectation's: below the band, so the band has power.
    """
    T, A = 20, 300
    fit, p, n = _exact_posterior_fit(A, T, draws=250, seed=11)
    ks = [1, 2, 3]
    res = pass_hat_k(fit, k=ks, rng=1)
    old = pass_hat_k(fit, k=1, realised=False)
    assert res.attrs["draws_of"] == "realised task average" and res.attrs["over"] == (
        "the tasks each agent ran at least k times")
    lo_ok = stats.binom.ppf(0.0005, A, 0.95) / A - 0.01
    hi_ok = stats.binom.ppf(0.9995, A, 0.95) / A
    for k in ks:
        truth = np.where(n >= k, p**k, np.nan)
        truth = np.nanmean(truth, 1)
        np.testing.assert_array_equal(res.n_tasks.sel(k=k).values, (n >= k).sum(1))

        def cover(r, k=k, truth=truth):
            lo, hi = (r.ci.sel(k=k, ci_bound=s).values for s in ("lower", "upper"))
            return float(np.mean((lo <= truth) & (truth <= hi)))

        got = cover(res)
        assert lo_ok <= got <= hi_ok, (k, got, lo_ok, hi_ok)
        if k == 1:  # same tasks at k = 1 (every task ran at least once): the narrow interval undercovers
            assert cover(old) < lo_ok, cover(old)


def _ragged_bb_fit():
    """2 agents, 4 tasks, runs (3, 1, 2, 0) and (2, 2, 1, 3); a, b fixed at (2, 3), (1, 1) in 2 draws."""
    n = np.array([[3, 1, 2, 0], [2, 2, 1, 3]])
    c = np.array([[2, 1, 0, 0], [2, 1, 1, 0]])
    mu = np.tile([[0.4, 0.5]], (1, 2, 1))
    kappa = np.tile([[5.0, 2.0]], (1, 2, 1))
    return fake_fit("beta_binomial", ["a0", "a1"], {"n_runs": n, "n_success": c}, mu=mu, kappa=kappa), n, c


def test_default_min_runs_averages_the_tasks_with_at_least_k_runs_by_hand():
    fit, n, c = _ragged_bb_fit()
    ab = {0: (2.0, 3.0), 1: (1.0, 1.0)}
    res = pass_hat_k(fit, k=[1, 2, 3], rng=0)
    at = pass_at_k(fit, k=[1, 2, 3], rng=0)
    # tasks with >= k runs, counted by hand: a0 (3, 1, 2, 0 runs) 3, 2, 1; a1 (2, 2, 1, 3) 4, 3, 1
    assert res.n_tasks.values.tolist() == [[3.0, 2.0, 1.0], [4.0, 3.0, 1.0]]
    for m in (0, 1):
        a, b = ab[m]
        for k in (1, 2, 3):
            use = n[m] >= k
            # E[p^k | c, n] = B(a + c + k, b + n - c) / B(a + c, b + n - c), averaged over those tasks
            hat = np.exp(betaln(a + c[m] + k, b + n[m] - c[m]) - betaln(a + c[m], b + n[m] - c[m]))[use].mean()
            miss = np.exp(betaln(a + c[m], b + n[m] - c[m] + k) - betaln(a + c[m], b + n[m] - c[m]))[use].mean()
            assert float(res.estimate.isel(agent=m).sel(k=k)) == pytest.approx(hat, rel=1e-12)
            assert float(at.estimate.isel(agent=m).sel(k=k)) == pytest.approx(1 - miss, rel=1e-12)
    # k = 3: a0's one task with 3 runs (2 of 3): Beta(4, 4), E[p^3] = (4 * 5 * 6) / (8 * 9 * 10) = 1/6
    assert float(res.estimate.sel(agent="a0", k=3)) == pytest.approx(1 / 6, rel=1e-12)
    # the old min_runs=0: every task the agent ran, the same count at every k
    assert pass_hat_k(fit, k=[1, 3], min_runs=0, rng=0).n_tasks.values.tolist() == [[3.0, 3.0], [4.0, 4.0]]
    # the repr says each cell's task count and why they differ
    text = repr(res)
    assert "a0, 3: 0.1667" in text and "(1 task)" in text and "(3 tasks)" in text
    assert "n_tasks differs across k" in " ".join(text.split())
    assert "n_tasks" in res.to_frame().columns


def test_defaults_per_population_and_rng():
    fit, _, _ = _ragged_bb_fit()
    pop = pass_hat_k(fit, k=[1, 2], population=True)  # neither realised nor min_runs applies
    assert pop.attrs["draws_of"] == "parameter" and np.isnan(pop.n_tasks.values).all()
    assert "tasks)" not in repr(pop) and "n_tasks differs" not in repr(pop)  # no task counts for a new task
    with pytest.raises(ValueError, match="`min_runs` selects observed tasks"):
        pass_hat_k(fit, k=2, population=True, min_runs="k")
    with pytest.raises(TypeError, match="`realised` must be True, False or None"):
        pass_hat_k(fit, k=2, realised="yes")
    # rng: a seed reproduces the interval; None is fresh entropy (the package's rule), the estimate
    # never depends on it
    one, two = pass_hat_k(fit, k=2, rng=5), pass_hat_k(fit, k=2, rng=5)
    xr.testing.assert_identical(one.ci, two.ci)
    fresh = [pass_hat_k(fit, k=2) for _ in range(2)]
    xr.testing.assert_identical(fresh[0].estimate, one.estimate)
    assert not np.array_equal(fresh[0].draws.values, fresh[1].draws.values)


def test_crossed_defaults_by_hand():
    """Crossed fit without the agent x task effect: ``p_mt = expit(mu + a_m + b_t)`` per draw, so the
    default draws are the mean of ``p_mt^k`` over the tasks with at least k runs, written out here.
    """
    dt, n = crossed_fit_without_agent_task()
    post = dt["posterior"]
    mu, a, b, S = post["mu"].values, post["agent_effect"].values, post["task_effect"].values, post.sizes["draw"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # k > 1 without the agent x task effect: said, not under test
        res = crossed_pass_k(dt, k=[1, 2, 3])
        every = crossed_pass_k(dt, k=[1, 2], min_runs=0, realised=False)
    assert res.attrs["draws_of"] == "realised task average"
    assert res.n_tasks.values.tolist() == [[2, 1, 0], [3, 2, 2]]
    p = expit(mu[0][:, None, None] + a[0][:, :, None] + b[0][:, None, :])  # (draw, agent, task)
    for m in (0, 1):
        for k in (1, 2, 3):
            use = n[m] >= k
            want = (p[:, m, use] ** k).mean(-1) if use.any() else np.full(S, np.nan)
            np.testing.assert_allclose(res.draws.isel(chain=0, agent=m).sel(k=k).values, want, rtol=1e-12)
    # min_runs=0: every task of the dataset, m0's never-run t2 included
    np.testing.assert_allclose(every.draws.isel(chain=0).sel(k=2).values, (p**2).mean(-1), rtol=1e-12)
