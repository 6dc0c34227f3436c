"""Tests of hierbench.freq.fit_crossed_ml (maximum likelihood of the crossed logistic model).

Independent references: lme4's glmer fit of cbpp (published), nested scipy
quadrature of the marginal likelihood, finite differences of it, scipy's own
optimisers for the profile, and simulations with known parameters.
"""

from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import xarray as xr
from _helpers import agent_task_counts
from scipy import integrate
from scipy import optimize
from scipy import stats
from scipy.special import expit
from scipy.special import gammaln

from hierbench._base import PartialCreditError
from hierbench._base import UnidentifiedWarning
from hierbench.freq import IgnoredClusterWarning
from hierbench.freq import SeparatedAgentWarning
from hierbench.freq import fit_crossed_ml
from hierbench.freq._glmm._crossed import _Lik
from hierbench.testing import simulate_eval


def _cbpp(data) -> xr.Dataset:
    df = pd.read_csv(data / "lme4" / "cbpp.csv")
    df["herd"] = df["herd"].astype(str)
    df["period"] = df["period"].astype(str)
    n = df.pivot(index="period", columns="herd", values="size").fillna(0)
    y = df.pivot(index="period", columns="herd", values="incidence").fillna(0)
    return agent_task_counts(n.values, y.values, agents=n.index.tolist(), tasks=n.columns.tolist())


# --------------------------------------------------------------------------- lme4 reference


def test_cbpp_reproduces_glmer_laplace(shared_data):
    """glmer(cbind(incidence, size - incidence) ~ period + (1 | herd), binomial), nAGQ = 1.

    Herds are tasks; the four periods are the agents (fixed effects): the
    intercept is period 1's ability and period k's coefficient is the
    difference of abilities. Two published references:

    * the printed fit (lme4 docs/reference/cbpp.html @ 32b5bfd, in
      ../shared/data/lme4/reference_values.csv): sd_herd 0.6421, intercept
      -1.3983, periods -0.9919 / -1.1282 / -1.5797, logLik -92.0266;
    * lme4's own regression test (tests/testthat/test-glmer.R @ 071ddfe):
      fixef -1.39854982537216, -0.992335519118859, -1.12867532780426,
      -1.58030423764517; theta 0.642226809144453; -2 logLik 184.05267459802.

    The two differ by up to 5e-4 (lme4's optimiser stops at slightly
    different points across versions; its test allows 5e-4), and the Laplace
    log-likelihood evaluated at the printed estimates is -92.02629, not
    -92.0266 (checked independently below). So the printed digits are
    matched within 1e-3 and lme4's current values within 1e-4.
    """
    res = fit_crossed_ml(_cbpp(shared_data), n_agq=1, agent_task="none", intervals="wald")
    a = res.estimate.values
    est = np.r_[res.sd.values[0], a[0], a[1:] - a[0]]
    printed = np.array([0.6421, -1.3983, -0.9919, -1.1282, -1.5797])
    current = np.array(
        [0.642226809144453, -1.39854982537216, -0.992335519118859, -1.12867532780426, -1.58030423764517]
    )
    np.testing.assert_allclose(est, printed, atol=1e-3)
    np.testing.assert_allclose(est, current, atol=1e-4)
    assert abs(res.loglik - (-92.0266)) < 1e-3
    assert abs(res.loglik - (-184.05267459802 / 2)) < 1e-4
    assert res.converged
    assert res.sd.component.values.tolist() == ["sd_task"]


def test_cbpp_laplace_value_matches_an_independent_laplace(shared_data):
    """The Laplace log-likelihood at lme4's printed estimates, by scipy's scalar optimiser."""
    c = _cbpp(shared_data)
    n, y = c.n_runs.values.astype(float), c.n_success.values
    a0 = -1.3983
    alpha = np.array([a0, a0 - 0.9919, a0 - 1.1282, a0 - 1.5797])
    s = 0.6421
    ref = 0.0
    for t in range(n.shape[1]):
        nn, yy = n[:, t], y[:, t]

        def neg(b, nn=nn, yy=yy):
            return -(np.sum(yy * (alpha + b) - nn * np.logaddexp(0, alpha + b)) - b * b / (2 * s * s))

        b = optimize.minimize_scalar(neg, bracket=(-1, 1), tol=1e-12).x
        p = expit(alpha + b)
        ref += -neg(b) - math.log(s) - 0.5 * math.log(np.sum(nn * p * (1 - p)) + 1 / s**2)
    ref += np.sum(gammaln(n + 1) - gammaln(y + 1) - gammaln(n - y + 1))
    lik = _Lik(y.T, n.T, False, 1, 7)
    ours = lik.value(np.r_[alpha, math.log(s)]) + lik.log_binom
    assert abs(ours - ref) < 1e-8
    assert abs(ours - (-92.02629)) < 1e-5


# --------------------------------------------------------------------------- the likelihood itself


def _tiny():
    n = np.array([[3, 5, 0, 2], [4, 1, 6, 2], [2, 2, 2, 7]])
    y = np.array([[1, 5, 0, 0], [2, 0, 3, 1], [0, 1, 2, 6]], dtype=float)
    return n, y


@pytest.mark.slow
def test_marginal_likelihood_matches_nested_simpson_quadrature():
    """Both integrals by scipy's Simpson rule on fine grids over +-10 sd (error far below 1e-8).

    401 points a side (spacing 0.05 sd): the reference is the 1,601-point grid's to 2e-15
    (measured; 201 points too), at a sixteenth of the binomial pmf evaluations.
    """
    n, y = _tiny()
    alpha = np.array([0.3, -0.5, 0.8])
    sd_t, sd_at = 1.3, 0.6
    b = np.linspace(-10 * sd_t, 10 * sd_t, 401)
    e = np.linspace(-10 * sd_at, 10 * sd_at, 401)
    ref = 0.0
    for t in range(n.shape[1]):
        prod = stats.norm.pdf(b, 0, sd_t)
        for a in range(3):
            if n[a, t] == 0:
                continue
            p = expit(alpha[a] + b[:, None] + e[None, :])
            f = stats.norm.pdf(e, 0, sd_at)[None, :] * stats.binom.pmf(y[a, t], n[a, t], p)
            prod = prod * integrate.simpson(f, x=e, axis=1)
        ref += math.log(integrate.simpson(prod, x=b))
    lik = _Lik(y.T, n.T, True, 21, 21)
    ours = lik.value(np.r_[alpha, math.log(sd_t), math.log(sd_at)]) + lik.log_binom
    assert abs(ours - ref) < 1e-6


@pytest.mark.parametrize("marg", [False, True])
def test_gradient_and_hessian_match_finite_differences(marg):
    n, y = _tiny()
    x = np.r_[0.3, -0.5, 0.8, math.log(1.3)] if not marg else np.r_[0.3, -0.5, 0.8, math.log(1.3), math.log(0.6)]
    lik = _Lik(y.T, n.T, marg, 25, 25)
    _v, g, H = lik.value_grad_hess(x)
    h = 1e-5
    fd_g = np.array([(lik.value(x + h * e) - lik.value(x - h * e)) / (2 * h) for e in np.eye(x.size)])
    np.testing.assert_allclose(g, fd_g, rtol=1e-5, atol=1e-7)
    h = 1e-4
    fd_h = np.array([(lik.value_grad(x + h * e)[1] - lik.value_grad(x - h * e)[1]) / (2 * h) for e in np.eye(x.size)])
    np.testing.assert_allclose(H, 0.5 * (fd_h + fd_h.T), rtol=1e-4, atol=1e-6)


def _cell_loglik(y, n, eta, sd):
    """The log of int N(e; 0, sd) expit(eta + e)^y (1 - expit(eta + e))^(n - y) de, by scipy's quad."""
    def f(e):
        return math.exp(y * (eta + e) - n * np.logaddexp(0.0, eta + e) - 0.5 * (e / sd) ** 2) / (sd * math.sqrt(2 * math.pi))

    return math.log(integrate.quad(f, -12 * sd, 12 * sd, epsabs=0, epsrel=1e-13, limit=200)[0])


_CELLS = [(0, 1, 0.0, 0.4), (3, 4, -1.0, 1.5), (0, 10, 2.0, 0.8), (10, 10, -2.5, 0.8), (7, 30, 0.7, 2.5), (0, 0, 1.0, 1.0)]


@pytest.mark.parametrize("y, n, eta, sd", _CELLS)
def test_cell_quadrature_and_its_derivatives_match_scipy(y, n, eta, sd, monkeypatch):
    """Each cell's logit-normal-binomial term and its five derivatives against scipy's quad.

    The value against ``integrate.quad`` (25 nodes, so the quadrature error is
    negligible); the derivatives in ``eta`` and ``sd`` against central differences
    of that reference. A cell without runs contributes exactly nothing.
    """
    from hierbench._numerics import gauss_hermite
    from hierbench.freq._glmm import _quadrature

    monkeypatch.setattr(_quadrature, "BLOCK", 1)  # one cell per block, on the thread pool
    u, w = gauss_hermite(25)
    c = np.log(w) + 0.5 * u**2
    arr = [np.array([v, v], dtype=float) for v in (y, n, eta)]  # two blocks: the threaded route
    got = np.array(_quadrature.cell_terms(*arr, True, sd, u, c, True))[:, 0]
    if n == 0:
        assert np.all(got == 0.0)
        return
    f = _cell_loglik
    h = 1e-3
    ref = [
        f(y, n, eta, sd),
        (f(y, n, eta + h, sd) - f(y, n, eta - h, sd)) / (2 * h),
        (f(y, n, eta + h, sd) - 2 * f(y, n, eta, sd) + f(y, n, eta - h, sd)) / h**2,
        (f(y, n, eta, sd + h) - f(y, n, eta, sd - h)) / (2 * h),
        (f(y, n, eta + h, sd + h) - f(y, n, eta + h, sd - h) - f(y, n, eta - h, sd + h) + f(y, n, eta - h, sd - h))
        / (4 * h * h),
        (f(y, n, eta, sd + h) - 2 * f(y, n, eta, sd) + f(y, n, eta, sd - h)) / h**2,
    ]
    assert abs(got[0] - ref[0]) < 1e-10
    np.testing.assert_allclose(got[1:], ref[1:], rtol=1e-5, atol=1e-6)


def test_binomial_cells_match_scipy():
    """Without the cell effect a cell is a binomial likelihood: scipy's logpmf less the coefficient."""
    from hierbench.freq._glmm._quadrature import cell_terms

    y, n = np.array([0.0, 3.0, 5.0, 0.0]), np.array([4.0, 4.0, 5.0, 0.0])
    eta = np.array([-1.2, 0.4, 3.0, 0.5])
    u, c = np.zeros(1), np.zeros(1)
    got = cell_terms(y, n, eta, False, 1.0, u, c, False)
    p = expit(eta)
    coef = gammaln(n + 1) - gammaln(y + 1) - gammaln(n - y + 1)
    np.testing.assert_allclose(got[0], np.where(n > 0, stats.binom.logpmf(y, n, p) - coef, 0.0), atol=1e-12)
    np.testing.assert_allclose(got[1], y - n * p, atol=1e-12)  # the score of the logit
    np.testing.assert_allclose(got[2], -n * p * (1 - p), atol=1e-12)  # its Fisher information
    assert np.all(got[3] == 0.0)


def test_the_likelihood_does_not_depend_on_the_thread_count(monkeypatch):
    """Blocks are fixed, threads only share them out: one thread and the pool give the same bits."""
    from concurrent.futures import ThreadPoolExecutor

    from hierbench.freq._glmm import _quadrature

    n, y = np.full((4, 300), 3.0), np.random.default_rng(5).binomial(3, 0.6, (4, 300)).astype(float)
    n[1, :40] = 0.0  # ragged: cells without runs
    x = np.r_[0.5, 0.1, -0.3, 0.9, math.log(1.2), math.log(0.6)]
    monkeypatch.setattr(_quadrature, "BLOCK", 256)
    outs = []
    monkeypatch.setattr(_quadrature, "_POOL_PID", os.getpid())
    for workers in (1, 3):
        monkeypatch.setattr(_quadrature, "_POOL", ThreadPoolExecutor(workers))
        outs.append(_Lik(y.T, n.T, True, 9, 7).value_grad_hess(x))
    for a, b in zip(*outs, strict=True):
        np.testing.assert_array_equal(a, b)


def _fit_in_worker(seed: int) -> float:
    # 200 tasks x 9 task nodes x 3 agents: two blocks of cells, so the block threads run
    data, _ = simulate_eval(n_agents=3, n_tasks=200, n_runs=3, rng=seed)
    return float(fit_crossed_ml(data, intervals="wald").loglik)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs the fork start method")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")  # the case tested
def test_a_forked_worker_fits_after_the_parent_did():
    """The block threads are per process: a forked worker (no threads inherited) still fits."""
    import multiprocessing

    here = _fit_in_worker(1)  # the parent's block threads exist now
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    worker = ctx.Process(target=lambda: queue.put(_fit_in_worker(1)))
    worker.start()
    worker.join(120)
    if worker.is_alive():  # waiting on threads it did not inherit
        worker.terminate()
        worker.join()
        pytest.fail("a forked worker hung in fit_crossed_ml")
    assert queue.get(timeout=10) == here


@pytest.mark.slow
def test_fit_compiles_nothing():
    """A fresh process fits without loading numba (the first call costs what later ones do)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from hierbench.testing import simulate_eval\n"
        "from hierbench.freq import fit_crossed_ml\n"
        "data, _ = simulate_eval(n_agents=3, n_tasks=30, n_runs=4, rng=0)\n"
        "fit_crossed_ml(data)\n"
        "fit_crossed_ml(data, agent_task='none', n_agq=1, intervals='wald')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_conditional_modes_match_scipy(shared_data):
    c = _cbpp(shared_data)
    res = fit_crossed_ml(c, agent_task="none", intervals="wald")
    n, y = c.n_runs.values.astype(float), c.n_success.values
    alpha, s = res.estimate.values, float(res.sd[0])
    for t in range(n.shape[1]):
        f = lambda b, t=t: -(np.sum(y[:, t] * (alpha + b) - n[:, t] * np.logaddexp(0, alpha + b)) - b * b / (2 * s * s))  # noqa: E731
        b = optimize.minimize_scalar(f, bracket=(-1, 1), tol=1e-12).x
        assert abs(float(res.task_effect[t]) - b) < 1e-6


# --------------------------------------------------------------------------- intervals


@pytest.mark.slow
def test_profile_interval_matches_a_scipy_profile(shared_data):
    """The profile interval's ends against a profile made with scipy's Nelder-Mead and brentq."""
    c = _cbpp(shared_data)
    res = fit_crossed_ml(c, agent_task="none", n_agq=9)
    lo, hi = res.sd_ci.values[0]
    n, y = c.n_runs.values.astype(float), c.n_success.values
    lik = _Lik(y.T, n.T, False, 9, 7)
    ll_max = res.loglik - lik.log_binom
    cut = stats.chi2.ppf(0.95, 1) / 2
    start = res.estimate.values

    def prof(v):
        r = optimize.minimize(lambda a: -lik.value(np.r_[a, v]), start, method="L-BFGS-B",
                              options={"ftol": 1e-14, "gtol": 1e-9})
        return ll_max - (-r.fun) - cut

    v_hat = math.log(float(res.sd[0]))
    # brackets 10% either side of our ends (brentq fails loudly if the crossing is not inside)
    ref_lo = math.exp(optimize.brentq(prof, math.log(lo) - 0.1, math.log(lo) + 0.1, xtol=1e-7))
    ref_hi = math.exp(optimize.brentq(prof, math.log(hi) - 0.1, math.log(hi) + 0.1, xtol=1e-7))
    assert ref_lo < math.exp(v_hat) < ref_hi
    assert res.sd_ci.attrs["ci_kind"] == "profile"
    assert abs(lo - ref_lo) < 2e-3 * ref_lo
    assert abs(hi - ref_hi) < 2e-3 * ref_hi


@pytest.mark.slow
def test_parametric_bootstrap_is_seeded(shared_data):
    c = _cbpp(shared_data)
    r1 = fit_crossed_ml(c, agent_task="none", intervals="bootstrap", n_resamples=10, rng=3)
    r2 = fit_crossed_ml(c, agent_task="none", intervals="bootstrap", n_resamples=10, rng=3)
    np.testing.assert_array_equal(r1.sd_resamples.values, r2.sd_resamples.values)
    assert r1.sd_ci.attrs["ci_kind"] == "percentile"
    assert r1.sd_resamples.sizes["resample"] == 10


# --------------------------------------------------------------------------- simulation


def test_estimates_recover_known_parameters():
    """6 agents x 400 tasks x 4 runs: every estimate within 4 of its standard errors of the truth.

    With 10 estimates each off by more than 4 SE with probability 6e-5
    (if the SEs are right), a failure means bias or wrong SEs, not chance.
    """
    data, truth = simulate_eval(n_agents=6, n_tasks=400, n_runs=4, sd_task=1.2, sd_agent_task=0.6, rng=11)
    res = fit_crossed_ml(data, intervals="wald")
    assert res.converged
    true_alpha = truth["agent_effect"].values + float(truth["mu"])
    z = (res.estimate.values - true_alpha) / res.standard_error.values
    assert np.all(np.abs(z) < 4), z
    A = res.estimate.size
    se_log = np.sqrt(np.diag(res.vcov.values)[A:])
    z_sd = (np.log(res.sd.values) - np.log([1.2, 0.6])) / se_log
    assert np.all(np.abs(z_sd) < 4), z_sd
    # the Wald interval covers what the estimate +- 1.96 SE says
    np.testing.assert_allclose(
        res.ci.sel(ci_bound="upper") - res.estimate, stats.norm.ppf(0.975) * res.standard_error, rtol=1e-12
    )


def test_side_by_side_with_a_posterior():
    from hierbench.compare import side_by_side

    data, _ = simulate_eval(n_agents=3, n_tasks=60, n_runs=3, rng=2)
    res = fit_crossed_ml(data, intervals="wald")
    # a stand-in posterior in the Bayesian fit's shape (estimate + eti interval)
    post = xr.Dataset({"estimate": res.estimate + 0.01, "interval": res.ci + 0.01})
    post["interval"].attrs = {"ci_prob": 0.95, "ci_kind": "eti"}
    t = side_by_side({"ML (glmer-style)": res, "Bayes": post})
    assert t.sizes["estimator"] == 2
    assert t["ci_kind"].values.tolist() == ["normal", "eti"]
    t2 = side_by_side({"ML": res.variance_components})
    assert t2["estimate"].sel(component="sd_task").item() == pytest.approx(float(res.sd[0]))


# --------------------------------------------------------------------------- awkward shapes and bad input


@pytest.mark.parametrize("intervals", ["wald", "profile", "bootstrap"])
def test_one_agent_with_one_run_per_task_leaves_the_task_effect_out(intervals):
    # nothing repeats within a task: each task's success probability is the same function of
    # the ability and sd_task (a flat ridge; before, sd_task came out near its start value with
    # the interval [0, inf) and the ability's interval spanned [-6, 6] at a 46% success rate)
    data, _ = simulate_eval(n_agents=1, n_tasks=80, n_runs=1, p_missing_task=0.1, rng=4)
    with pytest.warns(UnidentifiedWarning, match=r"sd_task is undefined \(one agent with one run per task"):
        res = fit_crossed_ml(data, intervals=intervals, rng=0)
    assert res.options["agent_task"] == "none" and res.options["task_effect"] == "none"
    # the intercept-only logistic regression of the runs (statsmodels), estimate and Wald interval
    y = data["score"].values.ravel()
    y = y[np.isfinite(y)]
    glm = sm.GLM(y, np.ones((y.size, 1)), family=sm.families.Binomial()).fit()
    assert float(res.estimate[0]) == pytest.approx(float(glm.params[0]), abs=1e-10)
    assert float(res.standard_error[0]) == pytest.approx(float(glm.bse[0]), rel=1e-8)
    np.testing.assert_allclose(res.ci.values[0], glm.conf_int(0.05)[0], rtol=1e-8)
    assert "pooled" in res.estimate.attrs["meaning"]
    assert np.isnan(res.sd.values).all() and np.isnan(res.sd_ci.values).all()
    assert res.task_effect.sizes["task"] == 80 and np.isnan(res.task_effect.values).all()
    assert res.loglik == pytest.approx(float(glm.llf), rel=1e-10)


def test_marginal_asked_on_one_agent_with_one_run_per_task_warns_once_with_the_pooled_rule():
    # the single-agent "use agent_task='none'" warning came first, then the pooled path ignored
    # the request: one warning now says what was asked and what was fitted, and the fit is the
    # same as the default's
    data, _ = simulate_eval(n_agents=1, n_tasks=60, n_runs=1, rng=5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fit_crossed_ml(data, agent_task="marginal", intervals="wald")
    assert [w.category for w in caught] == [UnidentifiedWarning], [str(w.message) for w in caught]
    assert "agent_task='marginal' is not used" in str(caught[0].message)
    with pytest.warns(UnidentifiedWarning) as default_warns:
        ref = fit_crossed_ml(data, intervals="wald")
    assert "agent_task='marginal'" not in str(default_warns[0].message)
    assert res.options["agent_task"] == "none" and float(res.estimate[0]) == float(ref.estimate[0])


def test_one_agent_with_two_runs_per_task_keeps_the_task_spread():
    data, _ = simulate_eval(n_agents=1, n_tasks=80, n_runs=2, rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnidentifiedWarning)
        res = fit_crossed_ml(data, intervals="wald")
    assert res.options["task_effect"] == "random" and np.isfinite(res.sd.values).all()
    assert "average difficulty" in res.estimate.attrs["meaning"]


def test_separated_agent_is_nan_with_a_warning():
    n = np.full((3, 30), 4)
    rng = np.random.default_rng(0)
    y = rng.binomial(4, 0.5, size=(3, 30)).astype(float)
    y[2] = 4.0
    with pytest.warns(SeparatedAgentWarning, match="a2"):
        res = fit_crossed_ml(agent_task_counts(n, y), intervals="wald")
    assert np.isnan(res.estimate.sel(agent="a2"))
    assert np.isfinite(res.estimate.sel(agent=["a0", "a1"])).all()
    assert res.options["n_separated_agents"] == 1


def test_clusters_are_not_dropped_silently():
    data, _ = simulate_eval(n_agents=2, n_tasks=30, n_runs=2, n_clusters=3, sd_cluster=0.5, rng=5)
    with pytest.warns(IgnoredClusterWarning, match="cluster"):
        fit_crossed_ml(data, intervals="wald")


def test_bad_input_is_refused_with_named_messages():
    data, _ = simulate_eval(n_agents=2, n_tasks=10, n_runs=2, rng=0)
    with pytest.raises(ValueError, match="`n_agq` must be >= 1"):
        fit_crossed_ml(data, n_agq=0)
    with pytest.raises(ValueError, match="`intervals` must be one of"):
        fit_crossed_ml(data, intervals="exact")
    with pytest.raises(ValueError, match="`agent_task` must be one of"):
        fit_crossed_ml(data, agent_task="latent")
    part = data.copy()
    part["score"] = part["score"] * 0.5
    with pytest.raises(PartialCreditError):
        fit_crossed_ml(part)
    n = np.zeros((2, 5), dtype=int)
    n[0] = 3
    with pytest.raises(ValueError, match=r"agent\(s\) \['a1'\] have no runs"):
        fit_crossed_ml(agent_task_counts(n, np.zeros((2, 5))))
    with pytest.raises(ValueError, match="at least 2 tasks"):
        fit_crossed_ml(agent_task_counts(np.array([[3], [2]]), np.array([[1.0], [1.0]])))
    clean, _ = simulate_eval(n_agents=3, n_tasks=60, n_runs=4, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit_crossed_ml(clean, intervals="wald")  # clean data: no warning


def test_single_agent_leaves_out_the_unidentified_cell_effect():
    data, _ = simulate_eval(n_agents=1, n_tasks=50, n_runs=4, rng=6)
    res = fit_crossed_ml(data, intervals="wald")
    assert res.options["agent_task"] == "none"
    with pytest.warns(UserWarning, match="only sd_task\\^2 \\+ sd_agent_task\\^2 is identified"):
        fit_crossed_ml(data, agent_task="marginal", intervals="wald")


# --------------------------------------------------------------------------- formulas (issue 26)


def _verbagg(data):
    from hierbench.data import from_records

    df = pd.read_csv(data / "lme4" / "verbagg.csv")
    df["y"] = (df["r2"] == "Y").astype(float)
    return from_records(df, agent="id", task="item", score="y", agent_coords=["Anger", "Gender"],
                        task_coords=["btype", "situ", "mode"])  # fmt: skip


@pytest.mark.slow
def test_verbagg_laplace_deviance_matches_mixedmodels(shared_data):
    """MixedMLResult of r2 ~ 1 + Anger + Gender + btype + situ + (1|id) + (1|item), Laplace.

    Reference: deviance 8151.40 (JuliaStats/MixedModels.jl test/pirls.jl, rtol 1e-5;
    docs/src/optimization.md prints 8151.400), in ../shared/data/lme4/reference_values.csv.
    Persons are agents (Anger, Gender agent-level), items tasks (btype, situ task-level).
    """
    fit = fit_crossed_ml(_verbagg(shared_data), "score ~ 1 + Anger + Gender + btype + situ + (1|agent) + (1|task)",
                         intervals="wald")  # fmt: skip
    assert abs(fit.deviance - 8151.40) < 0.01
    assert fit.converged
    assert fit.design.variables["Anger"] == "agent" and fit.design.variables["btype"] == "task"


def _wine(data, judge_as: str):
    from hierbench.data import from_records

    df = pd.read_csv(data / "ordinal" / "wine.csv")
    df["grade"] = (df["rating"] - 1) / 4.0
    if judge_as == "agent":
        return from_records(df, agent="judge", task="bottle", score="grade", extra={"rating": "rating"},
                            task_coords=["temp", "contact"])  # fmt: skip
    df["treatment"] = df["temp"] + "/" + df["contact"]
    return from_records(df, agent="treatment", task="bottle", score="grade",
                        extra={"rating": "rating", "judge": "judge"}, agent_coords=["temp", "contact"])  # fmt: skip


WINE_CLMM = {  # R ordinal::clmm(rating ~ temp + contact + (1|judge)), ../shared/data/ordinal/reference_values.csv
    "thresholds": [-1.62366694779619, 1.51336520227968, 4.22852671695733, 6.08877259115472],
    "temp": 3.0629966560421,
    "contact": 1.83488493779128,
    "judge_var": 1.2798,
}


@pytest.mark.slow
@pytest.mark.parametrize("judge_as", ["agent", "run variable"])
def test_wine_ordinal_reproduces_clmm(shared_data, judge_as):
    """The judge as the agent dim, or as a per-run label (each bottle graded by 9 judges): same fit."""
    ds = _wine(shared_data, judge_as)
    group = "agent" if judge_as == "agent" else "judge"
    fit = fit_crossed_ml(ds, f"rating ~ temp + contact + (1|{group})", family="ordinal", intervals="wald")
    np.testing.assert_allclose(fit.thresholds.values, WINE_CLMM["thresholds"], atol=1e-3)
    assert abs(float(fit.estimate.sel(coef="temp[warm]")) - WINE_CLMM["temp"]) < 1e-3
    assert abs(float(fit.estimate.sel(coef="contact[yes]")) - WINE_CLMM["contact"]) < 1e-3
    assert abs(float(fit.sd[0]) ** 2 - WINE_CLMM["judge_var"]) < 1e-3
    assert fit.design.row_level == ("cell" if judge_as == "agent" else "run")
    assert fit.thresholds.threshold.values.tolist() == ["1|2", "2|3", "3|4", "4|5"]


@pytest.mark.slow
def test_formula_laplace_matches_glmer_on_cbpp(shared_data):
    """Cbpp as a formula: ``score ~ 0 + agent + (1|task)`` is today's crossed model (quadrature
    path), and ``score ~ agent + (1|task)`` the same model fitted by the formula's Laplace path:
    both reproduce lme4's printed glmer fit (sd_herd 0.6421, logLik -92.0266).
    """
    c = _cbpp(shared_data)
    n, y = c.n_runs.values, c.n_success.values
    R = int(n.max())
    score = np.full((*n.shape, R), np.nan)
    for i, j in np.ndindex(n.shape):
        score[i, j, : int(n[i, j])] = 0.0
        score[i, j, : int(y[i, j])] = 1.0
    ds = xr.Dataset({"score": (("agent", "task", "run"), score)}, coords={"agent": c.agent.values, "task": c.task.values})
    default = fit_crossed_ml(ds, "score ~ 0 + agent + (1|task)", n_agq=1, intervals="wald")
    assert type(default).__name__ == "CrossedMLResult" and default.options["agent_task"] == "none"
    lap = fit_crossed_ml(ds, "score ~ agent + (1|task)", intervals="wald")
    assert type(lap).__name__ == "MixedMLResult"
    assert abs(float(lap.sd[0]) - 0.6421) < 1e-3
    assert abs(lap.loglik - (-92.0266)) < 1e-3
    np.testing.assert_allclose(lap.estimate.values, [-1.3983, -0.9919, -1.1282, -1.5797], atol=1e-3)


def test_laplace_gradient_matches_finite_differences():
    """The analytic gradient of the Laplace log-likelihood against central differences of its value
    (tight inner mode, h = 1e-5), on a small crossed design with an agent covariate.
    """
    from hierbench.data import model_design
    from hierbench.freq._glmm._laplace import Laplace
    from hierbench.freq._glmm._laplace import fd_gradient
    from hierbench.freq._glmm._mixed import family_of
    from hierbench.freq._glmm._mixed import random_matrix

    data, _ = simulate_eval(n_agents=6, n_tasks=20, n_runs=2, rng=4)
    data = data.assign_coords(kind=("agent", ["x", "y", "x", "y", "x", "y"]))
    d = model_design("score ~ kind + (1|agent) + (1|task)", data)
    Z, term = random_matrix(d)
    lik = Laplace(d.X, Z, term, family_of(d))
    x = np.array([0.2, -0.3, math.log(0.7), math.log(1.2)])
    _, g = lik.value_grad(x)
    np.testing.assert_allclose(g, fd_gradient(lik.value, x, np.ones(4, bool)), atol=1e-5)



@pytest.fixture(scope="module")
def verbagg_six_ordinal(shared_data):
    """The ordinal GLMM of VerbAgg's first 6 persons, grades read from the file's no / perhaps / yes.

    Fitted once: two tests read it (its thresholds' names and repr, its mean response's repr).
    """
    from hierbench.data import from_records

    raw = pd.read_csv(shared_data / "lme4" / "verbagg.csv", dtype=str, keep_default_na=False)
    raw = raw[raw["id"].isin(list(dict.fromkeys(raw["id"]))[:6])]
    ds = from_records(raw, agent="id", task="item", score="resp", score_levels=["no", "perhaps", "yes"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fit_crossed_ml(ds, "score ~ (1|agent) + (1|task)", family="ordinal", intervals="wald")


def test_ordinal_thresholds_of_grades_written_as_words_are_named_by_their_labels(verbagg_six_ordinal):
    """VerbAgg's `resp` (no / perhaps / yes) read as labels: the ML fit named its thresholds "0|1",
    "1|2" (the places) where the Bayesian fit says "no|perhaps"; now both name the labels, and the
    repr gives each threshold with its interval's level and kind.
    """
    fit = verbagg_six_ordinal
    want = ["no|perhaps", "perhaps|yes"]  # the file's labels, lowest first
    assert fit.thresholds.threshold.values.tolist() == want == fit.thresholds_ci.threshold.values.tolist()
    text = repr(fit)
    assert "thresholds (logit scale), 95% normal intervals:" in text
    lo, hi = fit.thresholds_ci.sel(threshold="no|perhaps").values
    assert f"no|perhaps: {float(fit.thresholds[0]):.4g} [{lo:.4g}, {hi:.4g}]" in text
    assert "fixed effects: none" in text  # no covariates: the thresholds hold the intercept


def test_the_readers_scale_names_the_grades_not_a_list_repr():
    """The wine judges' marginal effect of temp read "mean grade (of score, scale [1.0, 2.0, 3.0, 4.0,
    5.0])"; the grades are now written as the outputs write them, labels with their numbers.
    """
    from hierbench.data import from_records
    from hierbench.data import model_design

    rows = [{"agent": a, "task": f"t{t}", "g": (i + t) % 5 + 1, "w": ["no", "perhaps", "yes"][(i + t) % 3]}
            for i, a in enumerate("abcd") for t in range(6)]  # fmt: skip
    five = from_records(pd.DataFrame(rows), score="g", score_levels=[1, 2, 3, 4, 5])
    words = from_records(pd.DataFrame(rows), score="w", score_levels=["no", "perhaps", "yes"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        d5 = model_design("score ~ (1|agent)", five, levels=[1, 2, 3, 4, 5])
        dw = model_design("score ~ (1|agent)", words, levels=["no", "perhaps", "yes"])
    assert d5.reader_scale() == (1.0, "mean grade (of score, scale 1, 2, 3, 4, 5)")
    assert dw.reader_scale() == (1.0, "mean grade (of score, scale 0 = no, 1 = perhaps, 2 = yes)")


def test_mean_response_repr_says_what_it_estimates(verbagg_six_ordinal):
    """Its repr read "MeanResponseResult: estimate with 95% normal interval": the quantity (a mean grade
    on which scale, or a success rate) was left out. VerbAgg's first 6 persons, no / perhaps / yes.
    """
    from hierbench.freq import mean_response

    fit = verbagg_six_ordinal
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = mean_response(fit, by="agent")
    assert repr(res).splitlines()[0] == (
        "MeanResponseResult: mean grade (of score, scale 0 = no, 1 = perhaps, 2 = yes) (95% logit-normal interval)"
    )
