"""Coverage by simulation (seed 000): which intervals for a benchmark mean are honest.

Truth: tasks have ``p_t ~ Beta(mu kappa, (1 - mu) kappa)`` with ``mu = 0.5``,
``kappa = 4`` (``rho = 1 / (1 + kappa) = 0.2``), ``T = 50`` tasks, ``R``
binary runs each; the estimand is ``mu``. Every study uses a fixed seed and
4,000 independent replications (>= 2,000 required; the runs-only and two-stage study, whose
effects are many times its Monte Carlo error, the first 2,000), vectorised: the replications are the
"agents" of one eval dataset, and the bootstrap is called with
``paired=False`` so every replication gets its own task resamples.

Each coverage is judged with the Wilson interval of the coverage itself
(99.9%, so a study of several checks stays reliable).

Bootstrap intervals use B = 200 resamples per replication. The resampling
noise in a percentile end adds about ``q (1 - q) / (phi(z_q)^2 B) ~ 7 / B``
of the estimator's variance, i.e. it lowers the coverage of a 95% interval
by ~0.4 points at B = 200: small against the 2-point tolerance and against
the effects being shown (tens of points for runs-only, +2.5 for two-stage).
"""

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench.freq import bootstrap_ci
from hierbench.freq import pooled_binomial_interval
from hierbench.freq import wilson_interval
from hierbench.freq._rates._betabinom import _profile_ci_kernel

MU, KAPPA, T = 0.5, 4.0, 50
RHO = 1 / (1 + KAPPA)
REPS = 4000
B = 200
TOL = 0.02  # "reaches nominal within tolerance": the coverage's Wilson interval meets [0.93, 0.97]


def _simulate(rng, reps, R):
    p = rng.beta(MU * KAPPA, (1 - MU) * KAPPA, size=(reps, T))
    y = (rng.random((reps, T, R)) < p[..., None]).astype(float)
    return xr.DataArray(y, dims=("agent", "task", "run"))


def _coverage(ci: np.ndarray, truth: float):
    hit = (ci[..., 0] <= truth) & (truth <= ci[..., 1])
    k = int(hit.sum())
    lo, hi = wilson_interval(k, hit.size, prob=0.999).values
    return k / hit.size, lo, hi


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_pooled_binomial_undercovers_as_design_effect_predicts():
    rng = np.random.default_rng(20261130)
    covs = []
    for R in (1, 2, 5, 10, 20):
        y = _simulate(rng, REPS, R)
        ci = pooled_binomial_interval(y, prob=0.95).ci.values
        cov, lo, hi = _coverage(ci, MU)
        deff = 1 + (R - 1) * RHO
        predicted = 2 * stats.norm.cdf(1.959964 / np.sqrt(deff)) - 1
        # finite T = 50 and the estimated p(1 - p) add ~1 point below the asymptotic value
        assert lo - 0.015 <= predicted <= hi + 0.01, (R, cov, predicted)
        covs.append((cov, hi))
    assert covs[0][0] > covs[2][0] > covs[4][0]
    assert covs[-1][1] < 0.75  # R = 20: DEFF = 4.8, predicted 0.63


@pytest.fixture(scope="module")
def sim_r2():
    return _simulate(np.random.default_rng(7), REPS, 2)


@pytest.mark.slow
def test_tasks_bootstrap_reaches_nominal(sim_r2):
    res = bootstrap_ci(sim_r2, scheme="tasks", n_resamples=B, paired=False, rng=1)
    cov, lo, hi = _coverage(res.ci.values, MU)
    assert lo <= 0.95 + TOL and hi >= 0.95 - TOL, cov


@pytest.mark.slow
def test_runs_only_undercovers_and_two_stage_overcovers(sim_r2):
    # the first 2,000 of the 4,000 replications (the module's minimum): the effects shown are 16 and
    # 2.6 points, and the 99.9% Wilson band of a coverage near 0.976 is +-0.011 at 2,000 (+-0.008 at
    # 4,000; 3.3 binomial SEs either way). A two-stage scheme without the extra run noise (nominal 0.95)
    # would have its band's lower end at 0.934 and fail as before; runs-only's upper end is 0.79 (0.78).
    half = sim_r2.isel(agent=slice(0, 2000))
    runs = bootstrap_ci(half, scheme="runs", n_resamples=B, paired=False, rng=2)
    cov_r, _, hi_r = _coverage(runs.ci.values, MU)
    # runs-only sees E[p(1-p)](1 - 1/R)/R = 0.05 of the true 0.15 (x T): predicted ~0.74
    assert hi_r < 0.90, cov_r
    two = bootstrap_ci(half, scheme="two-stage", n_resamples=B, paired=False, rng=3)
    cov_t, lo_t, _ = _coverage(two.ci.values, MU)
    # two-stage adds the run noise again: variance 0.20 vs 0.15, predicted ~0.976
    assert lo_t > 0.95, cov_t


@pytest.mark.slow
def test_beta_binomial_profile_interval_reaches_nominal(sim_r2):
    c = sim_r2.sum("run").values.astype(np.int64)  # (reps, T)
    R = sim_r2.sizes["run"]
    pairs_c = np.arange(R + 1)
    m = (c[..., None] == pairs_c).sum(1).astype(float)  # histogram of successes per replication
    mu_hat, _, _, lo, hi = _profile_ci_kernel(np.full(R + 1, R), pairs_c, m, 0.95)
    cov, clo, chi = _coverage(np.stack([lo, hi], -1), MU)
    assert clo <= 0.95 + TOL and chi >= 0.95 - TOL, cov
    assert abs(mu_hat.mean() - MU) < 0.005
