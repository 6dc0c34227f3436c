"""The fused marginal-likelihood Op of the crossed model: values, gradients, backends."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import integrate
from scipy import stats
from scipy.special import expit
from scipy.special import gammaln

from hierbench.bayes._models._crossed import _log_binom
from hierbench.bayes._ops._agq_op import AGQBinomialLogitNormal
from hierbench.bayes._ops._agq_op import agq_logp_numpy

# cells spanning few and many runs, all-fail / all-pass / mixed, logits -4..2
CELLS = [(0, 1, -1.0), (1, 1, 0.5), (3, 10, -0.5), (0, 10, -4.0), (10, 10, 2.0),
         (7, 40, 0.2), (40, 40, 1.0), (55, 100, -0.3), (2, 96, -3.0)]


def _posterior_moments(y: int, n: int, eta: float, sd: float) -> tuple[float, float, float]:
    """Log of the integral, and the exact derivatives of it in eta and sd, by scipy quad.

    d/d eta log L = E[y - n expit(eta + x)], d/d sd log L = E[x^2 / sd^3 - 1 / sd],
    expectations under the cell's posterior of x (prior N(0, sd) times the binomial).
    """
    def dens(x: float) -> float:
        return stats.binom.pmf(y, n, expit(eta + x)) * stats.norm.pdf(x, 0.0, sd)

    kw = {"limit": 500, "epsabs": 0, "epsrel": 1e-12, "points": [0.0]}
    lo, hi = -12 * sd, 12 * sd
    z, _ = integrate.quad(dens, lo, hi, **kw)
    ge, _ = integrate.quad(lambda x: dens(x) * (y - n * expit(eta + x)), lo, hi, **kw)
    gs, _ = integrate.quad(lambda x: dens(x) * (x**2 / sd**3 - 1.0 / sd), lo, hi, **kw)
    return float(np.log(z)), ge / z, gs / z


@functools.cache  # one compile per (mode, nodes, steps) in a process; the tests call each several times
def _compiled(mode: str, n_quad: int = 7, steps: int = 4):
    y, n, e, s = pt.vector("y"), pt.vector("n"), pt.vector("e"), pt.scalar("s")
    logp = AGQBinomialLogitNormal(n_quad, steps)(y, n, e, s)[0]
    total = logp.sum()
    ge, gs = pytensor.grad(total, [e, s])
    return pytensor.function([y, n, e, s], [logp, ge, gs], mode=mode)


@pytest.mark.slow
@pytest.mark.parametrize("sd", [0.3, 1.0, 2.5])
def test_value_and_gradient_match_scipy_quadrature(sd):
    y = np.array([c[0] for c in CELLS], float)
    n = np.array([c[1] for c in CELLS], float)
    eta = np.array([c[2] for c in CELLS], float)
    want = np.array([_posterior_moments(int(a), int(b), e, sd) for a, b, e in CELLS])
    f = _compiled("NUMBA")
    logp, ge, gs = f(y, n, eta, sd)
    log_binom = gammaln(n + 1) - gammaln(y + 1) - gammaln(n - y + 1)
    # 7-node adaptive Gauss-Hermite: log-likelihood within 5e-3 over this range (the
    # builder's documented accuracy); the derivatives of the quadrature sum differ from
    # the exact ones by the same order, measured up to 0.013 (4%) at sd 2.5 for all-pass
    # and all-fail cells; a wrong derivative formula would be off by O(1)
    np.testing.assert_allclose(logp + log_binom, want[:, 0], atol=5e-3)
    np.testing.assert_allclose(ge, want[:, 1], atol=2e-2)
    np.testing.assert_allclose(gs, want[:, 2].sum(), rtol=2e-2, atol=2e-2)


def test_numba_kernel_equals_numpy_perform():
    # the compiled kernel (nutpie) and the NumPy perform (PyMC's NUTS, log-likelihoods)
    # must be the same function, to rounding
    rng = np.random.default_rng(0)
    n = rng.integers(1, 60, 500).astype(float)
    y = np.floor(rng.random(500) * (n + 1))
    eta = rng.normal(0.0, 2.0, 500)
    for sd in (0.05, 0.7, 4.0):
        a = _compiled("NUMBA")(y, n, eta, sd)
        b = _compiled("FAST_COMPILE")(y, n, eta, sd)
        for u, v in zip(a, b, strict=True):
            np.testing.assert_allclose(u, v, rtol=1e-11, atol=1e-11)
        # and the NumPy function itself
        lp, de, ds = agq_logp_numpy(y, n, eta, sd, 7, 4)
        np.testing.assert_allclose(a[0], lp, rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(a[1], de, rtol=1e-11, atol=1e-11)
        np.testing.assert_allclose(a[2], ds.sum(), rtol=1e-11, atol=1e-11)


def test_gradient_is_the_derivative_of_the_value():
    # the gradient includes the movement of the nodes with eta and sd, so it is the
    # derivative of the value (central differences agree to their own error)
    y = np.array([3.0, 0.0, 9.0]), np.array([10.0, 5.0, 10.0])
    eta, sd, h = np.array([-0.4, 1.0, 0.8]), 0.9, 1e-5
    f = _compiled("NUMBA", n_quad=15)
    _, ge, gs = f(*y, eta, sd)
    fd_e = [(f(*y, eta + h * np.eye(3)[i], sd)[0].sum() - f(*y, eta - h * np.eye(3)[i], sd)[0].sum()) / (2 * h)
            for i in range(3)]
    fd_s = (f(*y, eta, sd + h)[0].sum() - f(*y, eta, sd - h)[0].sum()) / (2 * h)
    np.testing.assert_allclose(ge, fd_e, atol=1e-5)
    assert gs == pytest.approx(fd_s, abs=1e-5)


@pytest.mark.parametrize("sd", [0.3, 2.0, 8.0])
def test_gradient_is_the_derivative_of_the_value_where_seven_nodes_are_inaccurate(sd):
    # the default 7-node rule is off by up to ~0.05 per cell at an effect spread of
    # several logits; the nodes move with eta and sd, and the gradient must include
    # that movement to be the derivative of the value NUTS sees (without it, on these
    # cells at sd 8 the directional derivative was off by ~30% and a METR chain stalled)
    rng = np.random.default_rng(3)
    n = rng.integers(1, 97, 300).astype(float)
    eta = rng.normal(-2.0, 4.0, n.size)
    y = rng.binomial(n.astype(int), expit(eta + rng.normal(0.0, sd, n.size))).astype(float)
    d = rng.normal(size=n.size)
    h = 1e-6
    for mode in ("NUMBA", "FAST_COMPILE"):
        f = _compiled(mode, n_quad=7, steps=50)
        _, ge, gs = f(y, n, eta, sd)
        fd_dir = (f(y, n, eta + h * d, sd)[0].sum() - f(y, n, eta - h * d, sd)[0].sum()) / (2 * h)
        fd_sd = (f(y, n, eta, sd + h)[0].sum() - f(y, n, eta, sd - h)[0].sum()) / (2 * h)
        assert float(ge @ d) == pytest.approx(fd_dir, rel=1e-5, abs=1e-4), mode
        assert float(gs) == pytest.approx(fd_sd, rel=1e-5, abs=1e-4), mode


def test_second_derivatives_are_refused():
    e, s = pt.vector("e"), pt.scalar("s")
    _, d_eta, _ = AGQBinomialLogitNormal()(np.ones(2), np.full(2, 3.0), e, s)
    with pytest.raises(NotImplementedError, match="second derivatives"):
        pytensor.grad(d_eta.sum(), e)


def test_op_input_rules():
    with pytest.raises(TypeError, match="scalar sd"):
        AGQBinomialLogitNormal()(np.ones(2), np.ones(2), pt.vector("e"), pt.vector("s"))


def test_log_binomial_constant():
    y, n = np.array([0, 3, 10, 55]), np.array([1, 10, 10, 100])
    want = [math.log(math.comb(int(m), int(k))) for k, m in zip(y, n, strict=True)]
    np.testing.assert_allclose(_log_binom(y, n), want, rtol=1e-12)


@pytest.mark.slow
def test_vectorisable_exp_and_log_are_within_two_ulp_of_numpy():
    # the kernels' own exp (x <= 0) and log (1 <= x <= 2) against NumPy's libm, on a fine
    # grid, random points, and the ends of their ranges
    import numba

    from hierbench._numerics.agq_numba import exp_nonpos
    from hierbench._numerics.agq_numba import log_one_two

    @numba.njit
    def apply_exp(x, out):
        for i in range(x.size):
            out[i] = exp_nonpos(x[i])

    @numba.njit
    def apply_log(x, out):
        for i in range(x.size):
            out[i] = log_one_two(x[i])

    g = np.random.default_rng(0)
    x = -np.concatenate([np.linspace(0.0, 40.0, 400_001), g.exponential(5.0, 200_000), [0.0, 1e-300, 700.0, 708.0]])
    out = np.empty_like(x)
    apply_exp(x, out)
    want = np.exp(x)
    assert np.all(np.abs(out - want) <= 2 * np.spacing(want))
    far = -np.array([708.5, 745.0, 1e300, np.inf])
    out_far = np.empty_like(far)
    apply_exp(far, out_far)
    assert np.all(out_far == 0.0)  # below -708 the result is 0 (exp there is under 3.3e-308)
    v = np.concatenate([np.linspace(1.0, 2.0, 400_001), 1.0 + g.random(200_000), [math.sqrt(2.0), np.nextafter(math.sqrt(2.0), 2.0)]])
    out = np.empty_like(v)
    apply_log(v, out)
    want = np.log(v)
    # absolute: log(1 + t) is added to terms of order one in the kernels
    assert np.abs(out - want).max() <= 2 * np.spacing(1.0)


def test_vectorisable_log_of_any_positive_normal_number_is_within_two_ulp_of_numpy():
    # the kernels' log of a positive quantity (a cell's odds, a quadrature sum times its scale)
    import numba

    from hierbench._numerics.agq_numba import log_pos

    @numba.njit
    def apply(x, out):
        for i in range(x.size):
            out[i] = log_pos(x[i])

    g = np.random.default_rng(1)
    x = np.concatenate([
        np.exp(g.uniform(-700.0, 700.0, 200_000)), np.linspace(0.5, 4.0, 200_001),
        [np.finfo(float).tiny, 1.0, 2.0, math.sqrt(2.0), np.nextafter(1.0, 0.0), np.finfo(float).max],
    ])  # fmt: skip
    out = np.empty_like(x)
    apply(x, out)
    want = np.log(x)
    # within two ulp of the result, or of one where the result is near zero
    assert np.all(np.abs(out - want) <= 2 * np.maximum(np.spacing(np.abs(want)), np.spacing(1.0)))


@pytest.mark.parametrize("sd", [0.05, 0.5, 2.0, 5.0])
def test_node_centre_is_the_mode_to_1e_10(sd):
    # the nodes sit at each cell's mode, found by Newton steps that stop once a step is below
    # NEWTON_TOL: the mode must agree with scipy's root of the score to 1e-10 (quadratic
    # convergence leaves about C tol^2), for both placements (NumPy and the numba kernel's)
    from scipy import optimize

    from hierbench._numerics import agq as shared
    from hierbench._numerics import agq_numba

    rng = np.random.default_rng(11)
    cells = [*CELLS] + [(int(rng.binomial(k, 0.4)), k, float(rng.normal(-1, 2))) for k in (1, 2, 3, 5, 20, 100) * 8]
    y = np.array([c[0] for c in cells], float)
    n = np.array([c[1] for c in cells], float)
    eta = np.array([c[2] for c in cells], float)
    prec = 1.0 / sd**2

    def score(x, yi, ni, ei):
        return yi - ni * expit(ei + x) - x * prec

    # the score falls from +inf to -inf: its root lies within the bracket where it changes sign
    want = np.array([optimize.brentq(score, -60.0, 60.0, args=c, xtol=1e-15, rtol=1e-15) for c in zip(y, n, eta, strict=True)])
    m_np, _, _ = shared.cell_modes(y, n, eta, np.full_like(y, prec))
    m_nb, s_nb = np.empty_like(y), np.empty_like(y)
    agq_numba.centre(y, n, eta, prec, shared.NEWTON_STEPS, m_nb, s_nb)
    assert np.abs(m_np - want).max() < 1e-10
    assert np.abs(m_nb - want).max() < 1e-10
    # and the scale is the curvature's at that mode
    p = expit(eta + want)
    np.testing.assert_allclose(s_nb, 1.0 / np.sqrt(n * p * (1 - p) + prec), rtol=1e-9)
