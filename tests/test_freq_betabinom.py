"""Beta-binomial MLE and profile interval: published rat-tumour fit, scipy profile, boundaries."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import optimize
from scipy import stats

from hierbench.data import to_counts
from hierbench.freq._rates._betabinom import beta_binomial_profile_ci
from hierbench.freq._rates._betabinom import fit_beta_binomial_ml
from hierbench.freq._rates._intervals import EmptySampleWarning
from hierbench.testing import simulate_eval


@pytest.fixture(scope="module")
def rats(shared_data):
    df = pd.read_csv(shared_data / "beta_binomial" / "rats_bayesgof_70.csv")
    return df.y.to_numpy(), df.n.to_numpy()


def _nll(y, n, a, b):
    return -stats.betabinom.logpmf(y, n, a, b).sum()


def test_rats_published_mle(rats):
    y, n = rats
    res = fit_beta_binomial_ml(y, n)
    alpha, beta = 2.304768, 14.079707  # BayesGOF vignette (PROVENANCE.md), R Nelder-Mead
    # The likelihood is flat along the ridge: the published point's log-likelihood is
    # 2e-10 below the optimum, so agreement is to ~1e-5 relative, not to the 7th digit.
    assert float(res.alpha) == pytest.approx(alpha, rel=2e-5)
    assert float(res.beta) == pytest.approx(beta, rel=2e-5)
    assert float(res.mu) == pytest.approx(alpha / (alpha + beta), abs=2e-6)
    # our optimum is at least as good as the published one (scipy's betabinom likelihood)
    assert _nll(y, n, float(res.alpha), float(res.beta)) <= _nll(y, n, alpha, beta) + 1e-12
    assert float(res.loglik) == pytest.approx(-_nll(y, n, float(res.alpha), float(res.beta)), rel=1e-12)
    assert int(res.n_tasks) == 70


def test_profile_interval_matches_scipy_profile(rats):
    y, n = rats
    res = beta_binomial_profile_ci(y, n, prob=0.9)
    mh = float(res.mu)

    def prof(mu):
        o = optimize.minimize_scalar(
            lambda lk: _nll(y, n, mu * np.exp(lk), (1 - mu) * np.exp(lk)),
            bounds=(-5, 12), method="bounded", options={"xatol": 1e-9},
        )
        return -o.fun

    cut = prof(mh) - stats.chi2.ppf(0.9, 1) / 2
    lo = optimize.brentq(lambda m: prof(m) - cut, 0.05, mh, xtol=1e-10)
    hi = optimize.brentq(lambda m: prof(m) - cut, mh, 0.4, xtol=1e-10)
    np.testing.assert_allclose(res.ci.values, [lo, hi], atol=1e-6)
    assert res.ci.attrs["ci_prob"] == 0.9 and res.ci.attrs["ci_kind"] == "profile"


@pytest.mark.slow
def test_boundaries():
    allpass = beta_binomial_profile_ci([10] * 6, [10] * 6)
    assert float(allpass.mu) == 1.0 and np.isnan(float(allpass.kappa))
    assert float(allpass.ci[1]) == 1.0 and 0.5 < float(allpass.ci[0]) < 1.0
    allfail = beta_binomial_profile_ci([0] * 6, [10] * 6)
    assert float(allfail.mu) == 0.0 and float(allfail.ci[0]) == 0.0
    # symmetric: the all-fail upper end mirrors the all-pass lower end
    assert float(allfail.ci[1]) == pytest.approx(1 - float(allpass.ci[0]), abs=1e-7)
    # under-dispersed counts: the likelihood is maximised in the binomial limit
    with pytest.warns(RuntimeWarning, match="no overdispersion detected"):
        flat = beta_binomial_profile_ci([5] * 8, [10] * 8)
    assert np.isinf(float(flat.kappa)) and float(flat.mu) == pytest.approx(0.5)
    # there the profile interval is the binomial likelihood-ratio interval on 40/80
    lo, hi = flat.ci.values

    def lr(p):
        return 2 * (stats.binom.logpmf(40, 80, 0.5) - stats.binom.logpmf(40, 80, p)) - stats.chi2.ppf(0.95, 1)

    assert lo == pytest.approx(optimize.brentq(lr, 0.2, 0.5), abs=1e-6)
    assert hi == pytest.approx(optimize.brentq(lr, 0.5, 0.8), abs=1e-6)


def test_eval_dataset_per_agent_and_ragged():
    ds, _ = simulate_eval(n_agents=2, n_tasks=30, n_runs=5, p_missing_task=0.1, p_missing_run=0.2, rng=8)
    res = beta_binomial_profile_ci(ds)
    assert res.mu.dims == ("agent",) and res.ci.dims == ("agent", "ci_bound")
    c = to_counts(ds)
    for a in ds.agent.values:
        sel = c.sel(agent=a)
        keep = sel.n_runs.values > 0
        one = fit_beta_binomial_ml(sel.n_success.values[keep], sel.n_runs.values[keep])
        assert float(res.mu.sel(agent=a)) == pytest.approx(float(one.mu), rel=1e-9)
        assert int(res.n_tasks_not_run.sel(agent=a)) == int((~keep).sum())
    xr.testing.assert_allclose(fit_beta_binomial_ml(c).mu, res.mu)


def test_agent_without_runs_is_nan_with_warning():
    c = xr.Dataset({"n_runs": (("agent", "task"), [[4, 4, 4], [0, 0, 0]]),
                    "n_success": (("agent", "task"), [[1, 3, 4], [0, 0, 0]])})
    with pytest.warns(EmptySampleWarning, match="1 rows .* have no task with a run"):
        res = beta_binomial_profile_ci(c)
    assert np.isnan(res.mu.values[1]) and np.isnan(res.ci.values[1]).all()
    assert res.n_tasks.values.tolist() == [3, 0] and res.n_tasks_not_run.values.tolist() == [0, 3]
    alone = beta_binomial_profile_ci([1, 3, 4], [4, 4, 4])  # fitting jointly changes nothing
    assert float(res.mu[0]) == pytest.approx(float(alone.mu), rel=1e-9)
    np.testing.assert_allclose(res.ci.values[0], alone.ci.values, atol=1e-9)


def test_errors_are_named():
    with pytest.raises(ValueError, match=r"integers with 0 <= successes <= n; 1 are not, e.g. \(successes, n\) \[\(11.0, 10.0\)\]"):
        fit_beta_binomial_ml([11, 2], [10, 10])
    with pytest.raises(ValueError, match=r"must have the same shape; got \(2,\) and \(3,\)"):
        fit_beta_binomial_ml([1, 2], [10, 10, 10])
    with pytest.raises(ValueError, match=r"`prob` must satisfy 0 < prob < 1; got prob=1.5"):
        beta_binomial_profile_ci([1, 2], [10, 10], prob=1.5)
    with pytest.raises(TypeError, match=r"`data` must be an eval dataset, a counts dataset, or success counts"):
        fit_beta_binomial_ml([1, 2])
