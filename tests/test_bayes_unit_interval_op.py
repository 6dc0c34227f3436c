"""The [0, 1]-score family's fused Op against its normaliser in closed form and its PyTensor graph."""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from hierbench.bayes._models._unit_interval import tilt_logp
from hierbench.bayes._ops._unit_interval_op import SERIES_BELOW
from hierbench.bayes._ops._unit_interval_op import UnitIntervalLogp
from hierbench.bayes._ops._unit_interval_op import unit_interval_logp


def _compiled(mode: str):
    y, e, w = pt.vector("y"), pt.vector("eta"), pt.vector("w")
    logp = unit_interval_logp(y, e, w)
    return pytensor.function([y, e, w], [logp, *pytensor.grad(logp.sum(), [e, w])], mode=mode)


def _reference(y: np.ndarray, eta: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``theta y - log Z + [0 < y < 1] log w`` with ``Z = 1 + e^theta + w expm1(theta) / theta`` as written."""
    theta = eta * (3.0 + 1.5 * w) / (3.0 + 0.5 * w)
    z = 1.0 + np.exp(theta) + w * np.expm1(theta) / theta
    inside = (y > 0) & (y < 1)
    return theta * y - np.log(z) + np.where(inside, np.log(np.where(inside, w, 1.0)), 0.0)


def _runs(rng: np.random.Generator, size: int = 600) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y = np.where(rng.random(size) < 0.5, rng.random(size), rng.integers(0, 2, size).astype(float))
    eta = rng.normal(0.0, 3.0, size)
    eta[:8] = [1e-3, -1e-3, 0.02, -0.02, 0.049, 0.051, 12.0, -12.0]
    w = rng.exponential(3.0, size)
    return y, eta, w


@pytest.mark.parametrize("mode", ["NUMBA", "FAST_COMPILE"])
def test_value_matches_the_normaliser_written_out(mode):
    y, eta, w = _runs(np.random.default_rng(21))
    logp, _, _ = _compiled(mode)(y, eta, w)
    np.testing.assert_allclose(logp, _reference(y, eta, w), rtol=1e-12, atol=1e-12)


def test_derivatives_match_finite_differences_of_the_written_out_density():
    y, eta, w = _runs(np.random.default_rng(22), 200)
    _, d_eta, d_w = _compiled("NUMBA")(y, eta, w)
    h = 1e-6
    num_eta = (_reference(y, eta + h, w) - _reference(y, eta - h, w)) / (2 * h)
    hw = 1e-5 * w  # relative: log w curves like 1 / w^2 where w is small
    num_w = (_reference(y, eta, w + hw) - _reference(y, eta, w - hw)) / (2 * hw)
    np.testing.assert_allclose(d_eta, num_eta, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(d_w, num_w, rtol=1e-6, atol=1e-6)


def test_op_agrees_with_the_pytensor_graph_and_its_gradient():
    y, eta, w = _runs(np.random.default_rng(23))
    yv, ev, wv = pt.vector("y"), pt.vector("eta"), pt.vector("w")
    graph = tilt_logp(yv, ev, wv)
    ref = pytensor.function([yv, ev, wv], [graph, *pytensor.grad(graph.sum(), [ev, wv])])(y, eta, w)
    for got, want in zip(_compiled("NUMBA")(y, eta, w), ref, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_numba_kernel_equals_numpy_perform_and_is_continuous_at_the_series_switch():
    y, eta, w = _runs(np.random.default_rng(24))
    for a, b in zip(_compiled("NUMBA")(y, eta, w), _compiled("FAST_COMPILE")(y, eta, w), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)
    # theta = kappa(w) eta just below and above the switch, on both sides of zero, for every output
    eps, w2 = 1e-9, 2.5
    kappa = (3.0 + 1.5 * w2) / (3.0 + 0.5 * w2)
    e2 = np.array([SERIES_BELOW - eps, SERIES_BELOW + eps, -SERIES_BELOW - eps, -SERIES_BELOW + eps]) / kappa
    out = _compiled("NUMBA")(np.array([0.3, 0.3, 0.3, 0.3]), e2, np.full(4, w2))
    for o in out:
        assert abs(o[0] - o[1]) < 1e-8 and abs(o[2] - o[3]) < 1e-8


def test_op_input_rules():
    with pytest.raises(TypeError, match="vectors y, eta, w"):
        UnitIntervalLogp()(pt.matrix(), pt.vector(), pt.vector())
    y, e, w = pt.vector("y"), pt.vector("eta"), pt.vector("w")
    g = pytensor.grad(unit_interval_logp(y, e, w).sum(), e)
    with pytest.raises(NotImplementedError, match="second derivatives"):
        pytensor.grad(g.sum(), e)
