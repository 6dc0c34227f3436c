"""Binomial cells on the logit scale as one fused PyTensor Op: value and gradient in one pass.

For a cell with ``n`` runs, ``y`` successes and logit ``eta``,

    log L = y eta - n softplus(eta),      d log L / d eta = y - n expit(eta)

(the binomial coefficient is a data constant, added outside). Written as
PyTensor's elementwise graph, each cell costs scalar ``exp`` and ``log1p``
library calls in the value and again in the gradient: about 0.6 ms per
gradient of the SWE-bench crossed model (25 x 500 Bernoulli cells), most of
its cost. Here one loop computes both from one exponential, with the
branch-free ``exp`` and ``log`` of :mod:`hierbench._numerics.agq_numba`, so
LLVM runs it on SIMD lanes (the likelihood of the quadrature Op,
:mod:`hierbench.bayes._ops._agq_op`, at a single node with no effect).

The NumPy ``perform`` (PyMC's own NUTS, predictive and log-likelihood
groups) and the JAX implementation (numpyro) evaluate the same formulas.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._fused import FusedVectorOp
from ._fused import register_jax
from ._fused import source_version

__all__ = ["BinomialLogit", "binomial_logit"]


def binomial_logit_numpy(y: Any, n: Any, eta: Any, xp: Any = np) -> tuple[Any, Any]:
    """``(y eta - n softplus(eta), y - n expit(eta))`` per cell, stable for any ``eta``."""
    t = xp.exp(-xp.abs(eta))
    softplus = xp.maximum(eta, 0.0) + xp.log1p(t)
    sig = xp.where(eta >= 0, 1.0, t) / (1.0 + t)
    return y * eta - n * softplus, y - n * sig


class BinomialLogit(FusedVectorOp):
    """``(logp, d logp / d eta)`` per cell of ``Binomial(n, expit(eta))`` without its coefficient.

    Inputs: ``y``, ``n`` (successes and runs per cell, data) and ``eta``
    (logit per cell). Only ``eta`` is differentiable; the second output
    exists for the gradient and has no gradient of its own.
    """

    inputs = ("y", "n", "eta")
    n_data = 2
    unit = "cell"
    numpy_form = staticmethod(binomial_logit_numpy)


_OP = BinomialLogit()


def binomial_logit(y: Any, n: Any, eta: Any) -> Any:
    """Per-cell ``y eta - n softplus(eta)`` (a vector), through the fused Op."""
    return _OP(y, n, eta)[0]


def _register_numba() -> None:
    """The numba implementation: one SIMD loop over the cells (used by nutpie)."""
    from pytensor.link.numba.dispatch import basic as numba_basic

    @numba_basic.register_funcify_default_op_cache_key(BinomialLogit)
    def _funcify(op: BinomialLogit, node: Any = None, **kwargs: Any) -> Any:
        from ..._numerics import KERNEL_FLAGS
        from ..._numerics import exp_nonpos
        from ..._numerics import log_one_two

        @numba_basic.numba_njit(**KERNEL_FLAGS)
        def kernel(y, n, eta):
            ncell = eta.shape[0]
            logp = np.empty(ncell)
            d_eta = np.empty(ncell)
            for i in range(ncell):
                e = eta[i]
                t = exp_nonpos(-abs(e))
                opt = 1.0 + t
                # softplus(e) = max(e, 0) + log(1 + exp(-|e|)), with 1 + t in [1, 2]
                logp[i] = y[i] * e - n[i] * (max(e, 0.0) + log_one_two(opt))
                d_eta[i] = y[i] - n[i] * (1.0 if e >= 0 else t) / opt
            return logp, d_eta

        # salted with the source it is built from (see _fused.source_version)
        return kernel, _kernel_version()


def _kernel_version() -> int:
    from ..._numerics import agq_numba

    return source_version(_register_numba, agq_numba)


_register_numba()


register_jax(BinomialLogit, binomial_logit_numpy)
