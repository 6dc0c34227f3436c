"""The [0, 1]-score family's log density as one fused Op: value and both derivatives per run.

The family is :mod:`hierbench.bayes._models._unit_interval`'s: with ``theta = kappa(w) eta``,
``kappa(w) = (3 + 1.5 w) / (3 + 0.5 w)`` and ``r(theta) = tanh(theta / 2) / theta``,

    log p(y) = theta y - softplus(theta) - log(1 + w r(theta)) + [0 < y < 1] log w,
    d / d eta = kappa (y - E),     E = expit(theta) + w r'(theta) / (1 + w r(theta)),
    d / d w   = eta kappa'(w) (y - E) - r / (1 + w r) + [0 < y < 1] / w,

``kappa'(w) = 3 / (3 + 0.5 w)^2``. As PyTensor's elementwise graph
(:func:`~hierbench.bayes._models._unit_interval.tilt_logp`, kept as the reference the
Op is tested against) each run cost scalar ``exp``, ``log1p``, ``tanh`` and
``log`` calls in the value and more in the gradient: 0.6 ms per gradient
over METR's 6,852 scored runs. Here one loop computes all three from one
exponential and two logs, branch-free (:mod:`hierbench._numerics.agq_numba`),
on SIMD lanes. Near ``theta = 0``, where ``tanh(a / 2) / a`` from the
exponential would cancel, ``r`` and ``r'`` come from their series (below
``|theta| = 0.05``; the truncation is under 1e-17).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._fused import FusedVectorOp
from ._fused import register_jax
from ._fused import source_version

__all__ = ["UnitIntervalLogp", "unit_interval_logp"]

#: below this |theta|, r and r' from their series in x = |theta| / 2
SERIES_BELOW = 0.05


def _r_and_slope(a: Any, xp: Any = np) -> tuple[Any, Any]:
    """``r(a)`` and ``r'(a)`` for ``a = |theta| >= 0`` (NumPy or JAX)."""
    x2 = (a / 2.0) ** 2
    # tanh(x) / x = 1 - x^2/3 + 2x^4/15 - 17x^6/315 + 62x^8/2835, and its derivative
    r_ser = 0.5 * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * 62.0 / 2835.0))))
    d_ser = 0.25 * (a / 2.0) * (-2.0 / 3.0 + x2 * (8.0 / 15.0 + x2 * (-102.0 / 315.0 + x2 * 496.0 / 2835.0)))
    big = a >= SERIES_BELOW
    safe = xp.where(big, a, 1.0)
    t = xp.exp(-safe)
    th = (1.0 - t) / (1.0 + t)
    r_big = th / safe
    d_big = (0.5 * safe * (1.0 - th * th) - th) / (safe * safe)
    return xp.where(big, r_big, r_ser), xp.where(big, d_big, d_ser)


def unit_interval_numpy(y: Any, eta: Any, w: Any, xp: Any = np) -> tuple[Any, Any, Any]:
    """``(log p(y), d / d eta, d / d w)`` per run (the formulas of the module docstring)."""
    den = 3.0 + 0.5 * w
    kap = (3.0 + 1.5 * w) / den
    theta = kap * eta
    a = xp.abs(theta)
    r, dr_abs = _r_and_slope(a, xp)
    dr = xp.where(theta >= 0, dr_abs, -dr_abs)  # r is even, r' odd
    t = xp.exp(-a)
    softplus = xp.maximum(theta, 0.0) + xp.log1p(t)
    sig = xp.where(theta >= 0, 1.0, t) / (1.0 + t)
    one_wr = 1.0 + w * r
    inside = (y > 0.0) & (y < 1.0)
    safe_w = xp.where(inside, w, 1.0)
    logp = theta * y - softplus - xp.log(one_wr) + xp.where(inside, xp.log(safe_w), 0.0)
    resid = y - (sig + w * dr / one_wr)
    d_eta = kap * resid
    d_w = eta * 3.0 / (den * den) * resid - r / one_wr + xp.where(inside, 1.0 / safe_w, 0.0)
    return logp, d_eta, d_w


class UnitIntervalLogp(FusedVectorOp):
    """``(logp, d/d eta, d/d w)`` per run of the [0, 1]-score family.

    Inputs: ``y`` (scores, data), ``eta`` (logit-scale predictor per run),
    ``w`` (the run's task's interior weight, per run). ``eta`` and ``w`` are
    differentiable; the derivative outputs have no gradient of their own.
    """

    inputs = ("y", "eta", "w")
    n_data = 1
    unit = "run"
    numpy_form = staticmethod(unit_interval_numpy)


_OP = UnitIntervalLogp()


def unit_interval_logp(y: Any, eta: Any, w: Any) -> Any:
    """Per-run log density of the [0, 1]-score family (a vector), through the fused Op."""
    return _OP(y, eta, w)[0]


def _register_numba() -> None:
    """The numba implementation: one SIMD loop over the runs (used by nutpie)."""
    from pytensor.link.numba.dispatch import basic as numba_basic

    @numba_basic.register_funcify_default_op_cache_key(UnitIntervalLogp)
    def _funcify(op: UnitIntervalLogp, node: Any = None, **kwargs: Any) -> Any:
        from ..._numerics import KERNEL_FLAGS
        from ..._numerics import exp_nonpos
        from ..._numerics import log_one_two
        from ..._numerics import log_pos

        cut = SERIES_BELOW

        @numba_basic.numba_njit(**KERNEL_FLAGS)
        def kernel(y, eta, w):
            n = eta.shape[0]
            logp = np.empty(n)
            d_eta = np.empty(n)
            d_w = np.empty(n)
            for i in range(n):
                wi = w[i]
                den = 3.0 + 0.5 * wi
                kap = (3.0 + 1.5 * wi) / den
                theta = kap * eta[i]
                a = abs(theta)
                t = exp_nonpos(-a)
                opt = 1.0 + t
                x = 0.5 * a
                x2 = x * x
                r_ser = 0.5 * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0 + x2 * (-17.0 / 315.0 + x2 * 62.0 / 2835.0))))
                d_ser = 0.25 * x * (-2.0 / 3.0 + x2 * (8.0 / 15.0 + x2 * (-102.0 / 315.0 + x2 * 496.0 / 2835.0)))
                big = a >= cut
                safe = a if big else 1.0
                th = (1.0 - t) / opt
                r = th / safe if big else r_ser
                dr = (0.5 * safe * (1.0 - th * th) - th) / (safe * safe) if big else d_ser
                dr = dr if theta >= 0 else -dr
                one_wr = 1.0 + wi * r
                inside = (y[i] > 0.0) & (y[i] < 1.0)
                safe_w = wi if inside else 1.0
                softplus = max(theta, 0.0) + log_one_two(opt)
                logp[i] = theta * y[i] - softplus - log_pos(one_wr) + (log_pos(safe_w) if inside else 0.0)
                resid = y[i] - ((1.0 if theta >= 0 else t) / opt + wi * dr / one_wr)
                d_eta[i] = kap * resid
                d_w[i] = eta[i] * 3.0 / (den * den) * resid - r / one_wr + (1.0 / safe_w if inside else 0.0)
            return logp, d_eta, d_w

        # salted with the source it is built from (see _fused.source_version)
        return kernel, _kernel_version()


def _kernel_version() -> int:
    from ..._numerics import agq_numba

    return source_version(_register_numba, agq_numba, SERIES_BELOW)


_register_numba()


register_jax(UnitIntervalLogp, unit_interval_numpy)
