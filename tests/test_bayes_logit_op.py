"""The fused binomial-logit Op against scipy: value, gradient, every backend, extreme logits."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats
from scipy.special import expit
from scipy.special import gammaln

from hierbench.bayes._ops._logit_op import BinomialLogit
from hierbench.bayes._ops._logit_op import binomial_logit


def _compiled(mode: str):
    y, n, e = pt.vector("y"), pt.vector("n"), pt.vector("eta")
    logp = binomial_logit(y, n, e)
    return pytensor.function([y, n, e], [logp, pytensor.grad(logp.sum(), e)], mode=mode)


def _cells(rng: np.random.Generator, size: int = 400) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = rng.integers(1, 40, size).astype(float)
    n[:50] = 1.0  # Bernoulli cells, as one run per agent x task gives
    eta = rng.normal(0.0, 3.0, size)
    # logits where expit saturates or exp(-|eta|) underflows (below -708)
    eta[50:60] = [-800.0, -50.0, -20.0, -1e-12, 0.0, 1e-12, 20.0, 50.0, 709.0, 800.0]
    y = rng.binomial(n.astype(int), expit(eta)).astype(float)
    return y, n, eta


@pytest.mark.parametrize("mode", ["NUMBA", "FAST_COMPILE"])
def test_value_and_gradient_match_scipy(mode):
    y, n, eta = _cells(np.random.default_rng(11))
    logp, grad = _compiled(mode)(y, n, eta)
    # scipy's binomial log pmf without the coefficient; at |eta| >= 50 it loses the
    # tail probability to rounding, so those cells are checked in closed form below
    ok = np.abs(eta) < 50
    coef = gammaln(n + 1) - gammaln(y + 1) - gammaln(n - y + 1)
    ref = stats.binom.logpmf(y, n, expit(eta)) - coef
    np.testing.assert_allclose(logp[ok], ref[ok], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad, y - n * expit(eta), rtol=1e-12, atol=1e-12)
    # far from zero softplus(eta) is max(eta, 0) plus exp(-|eta|) < 2e-22
    far = ~ok
    closed = y[far] * eta[far] - n[far] * (np.maximum(eta[far], 0.0) + np.exp(-np.abs(eta[far])))
    # (the kernel's log(1 + t) has an absolute error below 1e-16 per run: 1 + t is rounded)
    np.testing.assert_allclose(logp[far], closed, rtol=1e-15, atol=1e-16 * n[far].max())
    assert np.all(np.isfinite(logp)) and np.all(np.isfinite(grad))


def test_gradient_is_the_derivative_of_the_value():
    y, n, eta = _cells(np.random.default_rng(12), 60)
    eta = eta[np.abs(eta) < 30]
    y, n = y[: eta.size], n[: eta.size]
    f = _compiled("NUMBA")
    h = 1e-6
    numeric = (f(y, n, eta + h)[0] - f(y, n, eta - h)[0]) / (2 * h)
    np.testing.assert_allclose(f(y, n, eta)[1], numeric, rtol=1e-6, atol=1e-6)


def test_numba_kernel_equals_numpy_perform():
    y, n, eta = _cells(np.random.default_rng(13))
    a, b = _compiled("NUMBA")(y, n, eta), _compiled("FAST_COMPILE")(y, n, eta)
    for x, z in zip(a, b, strict=True):
        np.testing.assert_allclose(x, z, rtol=2e-15, atol=1e-12)


def test_op_input_rules():
    with pytest.raises(TypeError, match="vectors y, n, eta"):
        BinomialLogit()(pt.matrix(), pt.vector(), pt.vector())
    y, n, e = pt.vector("y"), pt.vector("n"), pt.vector("eta")
    g = pytensor.grad(binomial_logit(y, n, e).sum(), e)
    with pytest.raises(NotImplementedError, match="second derivatives"):
        pytensor.grad(g.sum(), e)
