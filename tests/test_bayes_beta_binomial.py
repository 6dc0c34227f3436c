"""Beta-binomial model: rat tumours vs published MLE and the profile likelihood; recovery."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import stats

from hierbench import DEFAULT_PROB
from hierbench.bayes import ConvergenceWarning
from hierbench.bayes import PriorError
from hierbench.bayes import build_beta_binomial
from hierbench.bayes import fit
from hierbench.bayes import fit_replicates
from hierbench.bayes import task_posteriors
from hierbench.freq import beta_binomial_profile_ci


def rats_counts(shared_data, file: str = "rats_bayesgof_70.csv") -> xr.Dataset:
    df = pd.read_csv(shared_data / "beta_binomial" / file)
    return xr.Dataset(
        {
            "n_runs": (("agent", "task"), df["n"].to_numpy()[None, :]),
            "n_success": (("agent", "task"), df["y"].to_numpy()[None, :]),
        },
        coords={"agent": ["rats"], "task": [f"exp_{i:02d}" for i in df["experiment"]]},
    )


@pytest.fixture(scope="module")
def rats_fit(shared_data):
    counts = rats_counts(shared_data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        idata = fit(build_beta_binomial(counts, pooling="none"), draws=1000, tune=1000, chains=2, rng=5)
    return counts, idata


@pytest.mark.slow
def test_rats_published_mle_inside_posterior(rats_fit):
    _, idata = rats_fit
    post = idata["posterior"].to_dataset()
    alpha = (post["mu"] * post["kappa"]).values.ravel()
    beta = ((1 - post["mu"]) * post["kappa"]).values.ravel()
    # BayesGOF vignette MLE on the 70 historical groups (PROVENANCE.md)
    for draws, mle in ((alpha, 2.304768), (beta, 14.079707)):
        lo, hi = np.quantile(draws, [0.05, 0.95])
        assert lo < mle < hi
    assert idata.attrs["diag_n_divergent"] == 0


@pytest.mark.slow
def test_rats_mu_interval_vs_profile_likelihood(rats_fit):
    counts, idata = rats_fit
    prof = beta_binomial_profile_ci(counts, prob=0.9)
    p_lo, p_hi = (float(v) for v in np.asarray(prof.ci).ravel())
    b_lo, b_hi = np.quantile(idata["posterior"]["mu"].values, [0.05, 0.95])
    # Bayes (flat prior on mu, weak prior on log kappa) and profile likelihood
    # differ at O(1/T) with T = 70 groups: tolerance 20% of the interval width
    width = p_hi - p_lo
    assert abs(b_lo - p_lo) < 0.2 * width and abs(b_hi - p_hi) < 0.2 * width
    # and an independent direct scipy maximisation agrees with the MLE point
    y, n = counts.n_success.values[0], counts.n_runs.values[0]

    def nll(th):
        m, k = 1 / (1 + np.exp(-th[0])), np.exp(th[1])
        return -stats.betabinom.logpmf(y, n, m * k, (1 - m) * k).sum()

    from scipy.optimize import minimize

    th = minimize(nll, [-1.8, 2.8], method="Nelder-Mead", options={"xatol": 1e-8, "fatol": 1e-10}).x
    mu_hat = 1 / (1 + np.exp(-th[0]))
    assert mu_hat == pytest.approx(float(prof.mu.squeeze()), abs=1e-4)
    assert b_lo < mu_hat < b_hi


@pytest.mark.slow
def test_task_posteriors_by_conjugacy(rats_fit):
    counts, idata = rats_fit
    tp = task_posteriors(idata, prob=0.9, rng=0)
    assert tp["ci"].attrs["ci_prob"] == 0.9 and tp["ci"].attrs["ci_kind"] == "eti"
    assert tp["ci"].dims == ("agent", "task", "ci_bound")
    # the level defaults to the package's one default
    assert task_posteriors(idata, rng=0)["ci"].attrs["ci_prob"] == DEFAULT_PROB
    # a tree whose posterior is one point: the task posteriors are exact Beta laws
    mu, kappa = 0.14, 16.0
    one = idata.copy()
    post = idata["posterior"].to_dataset()
    post["mu"] = xr.full_like(post["mu"], mu)
    post["kappa"] = xr.full_like(post["kappa"], kappa)
    one["posterior"] = xr.DataTree(post)
    tp1 = task_posteriors(one, prob=0.9, rng=1)
    y, n = counts.n_success.values[0], counts.n_runs.values[0]
    a, b = mu * kappa + y, (1 - mu) * kappa + n - y
    np.testing.assert_allclose(tp1["mean"].values[0], stats.beta.mean(a, b), rtol=1e-12)
    # stratified quantiles of 2000 draws: within 0.005 of the exact Beta quantiles
    np.testing.assert_allclose(tp1["ci"].values[0, :, 0], stats.beta.ppf(0.05, a, b), atol=0.005)
    np.testing.assert_allclose(tp1["ci"].values[0, :, 1], stats.beta.ppf(0.95, a, b), atol=0.005)
    # the fit's mean_observed draws each task's p_t (the realised task average): its posterior
    # mean is the conjugate one within Monte Carlo error, 4 sqrt(mean_s V_s / S) with
    # V_s = sum_t Var(Beta(a_st, b_st)) / T^2 the variance of one realisation given the draw
    post = idata["posterior"]
    a = (post["mu"] * post["kappa"] + counts.n_success).values
    b = ((1 - post["mu"]) * post["kappa"] + counts.n_runs - counts.n_success).values
    v = (a * b / ((a + b) ** 2 * (a + b + 1))).sum(-1) / a.shape[-1] ** 2
    assert abs(post["mean_observed"].mean().item() - tp["mean"].mean().item()) < 4 * np.sqrt(v.mean() / v.size)


@pytest.mark.slow
def test_simulation_based_recovery_beta_binomial():
    """90% intervals for mu contain the truth at the expected rate (20 replicates x 2 agents)."""
    rng = np.random.default_rng(42)
    mus, kappa, T, R = np.array([0.3, 0.65]), 8.0, 40, 6
    reps = []
    for _ in range(20):
        p = rng.beta(mus[:, None] * kappa, (1 - mus[:, None]) * kappa, (2, T))
        c = rng.binomial(R, p)
        reps.append(
            xr.Dataset(
                {"n_runs": (("agent", "task"), np.full((2, T), R)), "n_success": (("agent", "task"), c)},
                coords={"agent": ["a", "b"], "task": [f"t{j}" for j in range(T)]},
            )
        )
    model = build_beta_binomial(reps[0], pooling="none")
    fits = fit_replicates(model, reps, draws=400, tune=400, chains=2, rng=3)
    hits_mu, hits_k = [], []
    for f in fits:
        mu = f["posterior"]["mu"].values
        lo, hi = np.quantile(mu, [0.05, 0.95], axis=(0, 1))
        hits_mu.extend((lo < mus) & (mus < hi))
        k = f["posterior"]["kappa"].values
        lo, hi = np.quantile(k, [0.05, 0.95], axis=(0, 1))
        hits_k.extend((lo < kappa) & (kappa < hi))
    for hits in (hits_mu, hits_k):
        lo_ok, hi_ok = stats.binom.ppf([0.001, 0.999], len(hits), 0.9)
        assert lo_ok <= sum(hits) <= hi_ok, (sum(hits), len(hits))


def test_builder_validation(shared_data):
    counts = rats_counts(shared_data)
    with pytest.raises(ValueError, match=r"`pooling` must be one of \['auto', 'partial', 'none'\]; got 'full'"):
        build_beta_binomial(counts, pooling="full")
    with pytest.raises(ValueError, match=r"`centred` must be one of \['auto', True, False\]; got 'yes'"):
        build_beta_binomial(counts, centred="yes")
    with pytest.raises(PriorError, match=r"`priors\['mu'\]\['dist'\]` must name a pymc distribution; got 'Betta'"):
        build_beta_binomial(counts, pooling="none", priors={"mu": {"dist": "Betta", "alpha": 1, "beta": 1}})
    with pytest.raises(PriorError, match=r"`priors\['mu'\]` must be a mapping with a 'dist' key"):
        build_beta_binomial(counts, pooling="none", priors={"mu": 0.5})
    bad = counts.copy()
    bad["n_success"] = bad["n_success"] + 100
    with pytest.raises(ValueError, match="must satisfy 0 <= n_success <= n_runs"):
        build_beta_binomial(bad)
    with pytest.raises(ValueError, match=r"must hold `score\(agent, task, run\)` or `n_runs` and `n_success`"):
        build_beta_binomial(xr.Dataset({"x": ("agent", [1])}))
