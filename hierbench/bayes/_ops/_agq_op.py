"""The crossed model's marginal cell likelihood as one fused PyTensor Op.

Each cell's agent x task effect ``x ~ N(0, sd)`` is integrated out of its
binomial likelihood by adaptive Gauss-Hermite quadrature:

    log L(eta, sd) = log int N(x; 0, sd) Binomial(y | n, expit(eta + x)) dx
                   ~ log sum_q  w_q / phi(u_q) * s * N(z_q; 0, sd) Binomial(y | n, expit(eta + z_q))

with nodes ``z_q = m + s u_q`` placed at the integrand's mode ``m`` and
curvature scale ``s`` (a normal-approximation start and clipped Newton steps
to convergence). With the nodes held fixed,

    d log L / d eta = sum_q pi_q (y - n expit(eta + z_q)),
    d log L / d sd  = sum_q pi_q z_q^2 / sd^3 - 1 / sd,

with ``pi_q`` the normalised node terms; the nodes move with ``eta`` and
``sd``, which adds :func:`placement_terms` (zero for an exact rule). Without
them the gradient was not the derivative of the value wherever the 7-node
rule is inaccurate (a cell's effect spread of several logits), and NUTS
stalled there. Written as elementwise PyTensor ops
this is a graph of some sixty array operations per evaluation, each a pass
over every cell; as one Op, the numba backend (nutpie) runs one loop over
the cells that computes the value and both derivatives together, reusing
each node's exponential (measured on 6,000 cells: see models/crossed/card.md).
The binomial coefficient is not part of the Op: it is a data constant.

The NumPy ``perform`` (PyMC's own NUTS, posterior predictive and
log-likelihood computation) evaluates the same formulas vectorised.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import DisconnectedType
from pytensor.gradient import disconnected_type
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op

from ..._numerics import NEWTON_STEPS
from ..._numerics import gauss_hermite
from ..._numerics import place_nodes
from ._fused import register_jax
from ._fused import source_version

__all__ = ["AGQBinomialLogitNormal", "agq_logp_numpy", "gauss_hermite"]

_BLOCK = 64  # cells per block in the numba kernel


def agq_logp_numpy(
    y: Any, n: Any, eta: Any, sd: Any, n_quad: int, newton_steps: int, xp: Any = np
) -> tuple[Any, Any, Any]:
    """Per-cell marginal log-likelihood (without the binomial coefficient) and its derivatives.

    Returns ``(logp, d logp / d eta, d logp / d sd)``, each shaped like ``eta``.
    ``xp`` is the array namespace: NumPy, or ``jax.numpy`` for the JAX backend
    (every operation here exists in both with the same meaning).
    """
    z, sig, lq, s, m, pm = place_nodes(y, n, eta, sd, n_quad, newton_steps, xp)
    u, _ = gauss_hermite(n_quad)
    y, n = (xp.asarray(v, dtype=float) for v in (y, n))
    prec = 1.0 / sd**2
    top = lq.max(axis=-1, keepdims=True)
    r = xp.exp(lq - top)
    tot = r.sum(axis=-1)
    pi = r / tot[..., None]
    logp = top[..., 0] + xp.log(tot) + xp.log(s) - xp.log(sd)
    # the nodes' own derivatives (held fixed) ...
    g_eta = y[..., None] - n[..., None] * sig
    d_eta = (pi * g_eta).sum(axis=-1)
    d_sd = (pi * z**2).sum(axis=-1) * prec / sd - 1.0 / sd
    # ... plus the placement's: m and s move with (eta, sd), see placement_terms
    fp = g_eta - z * prec  # d/dz of each node's log term
    a_m = (pi * fp).sum(axis=-1)
    b_s = (pi * fp * u).sum(axis=-1) + 1.0 / s
    c_eta, c_sd = placement_terms(n, m, pm, s, prec, sd, a_m, b_s)
    return logp, d_eta + c_eta, d_sd + c_sd


def placement_terms(n: Any, m: Any, pm: Any, s: Any, prec: Any, sd: Any, a_m: Any, b_s: Any) -> tuple[Any, Any]:
    """What moving the nodes adds to ``d logp / d eta`` and ``d logp / d sd``.

    The nodes sit at ``z_q = m + s u_q``, with ``m`` the mode of the cell's log
    integrand ``f(x) = y (eta + x) - n softplus(eta + x) - x^2 / (2 sd^2)`` and
    ``s = h^(-1/2)``, ``h = -f''(m) = n p (1 - p) + 1 / sd^2``, ``p = expit(eta + m)``.
    By the implicit function theorem (``f'(m) = 0``) ``dm/d eta = -n p (1 - p) / h``
    and ``dm/d sd = 2 m / (sd^3 h)``; ``ds = -s^3 dh / 2``. The value
    ``log sum_q exp(c_q + f(z_q)) + log s - log sd`` then changes by
    ``a_m dm + b_s ds`` with ``a_m = E_pi[f'(z_q)]`` and
    ``b_s = E_pi[f'(z_q) u_q] + 1 / s``. Both vanish when the rule is exact (a
    Gaussian integrand), so they are the derivative of the quadrature error:
    small where the rule is accurate, and what keeps the gradient the
    derivative of the value where it is not.
    """
    v = pm * (1.0 - pm)
    nv = n * v
    h = nv + prec
    dm_eta = -nv / h
    dm_sd = 2.0 * m * prec / (sd * h)
    k = nv * (1.0 - 2.0 * pm)  # dh / d(eta + m)
    ds_eta = -0.5 * s**3 * k * (1.0 + dm_eta)
    ds_sd = -0.5 * s**3 * (k * dm_sd - 2.0 * prec / sd)
    return a_m * dm_eta + b_s * ds_eta, a_m * dm_sd + b_s * ds_sd


class AGQBinomialLogitNormal(Op):
    """``(logp, dlogp/deta, dlogp/dsd)`` per cell of a logit-normal-binomial, by adaptive GH.

    Inputs: ``y``, ``n`` (successes and runs per cell), ``eta`` (linear
    predictor per cell), ``sd`` (scalar agent x task scale). Only ``eta`` and
    ``sd`` are differentiable; the second and third outputs exist for the
    gradient and have no gradient of their own.
    """

    __props__ = ("n_quad", "newton_steps")

    def __init__(self, n_quad: int = 7, newton_steps: int = NEWTON_STEPS):
        self.n_quad = int(n_quad)
        self.newton_steps = int(newton_steps)

    def make_node(self, y: Any, n: Any, eta: Any, sd: Any) -> Apply:
        y, n, eta = (pt.as_tensor_variable(v).astype("float64") for v in (y, n, eta))
        sd = pt.as_tensor_variable(sd).astype("float64")
        if not (y.ndim == n.ndim == eta.ndim == 1) or sd.ndim != 0:
            raise TypeError(
                "AGQBinomialLogitNormal needs vectors y, n, eta (one entry per cell) and a scalar sd; "
                f"got ndim {y.ndim}, {n.ndim}, {eta.ndim} and {sd.ndim}"
            )
        outs = [pt.vector(dtype="float64", shape=eta.type.shape) for _ in range(3)]
        return Apply(self, [y, n, eta, sd], outs)

    def perform(self, node: Apply, inputs: list, output_storage: list) -> None:
        y, n, eta, sd = inputs
        res = agq_logp_numpy(y, n, eta, float(sd), self.n_quad, self.newton_steps)
        for store, val in zip(output_storage, res, strict=True):
            store[0] = np.asarray(val, dtype=np.float64)

    def infer_shape(self, node: Apply, shapes: list) -> list:
        return [shapes[2]] * 3

    def connection_pattern(self, node: Apply) -> list[list[bool]]:
        # rows: inputs y, n, eta, sd; columns: the three outputs
        return [[False] * 3, [False] * 3, [True] * 3, [True] * 3]

    def pullback(self, inputs: list, outputs: list, output_grads: list) -> list:
        for g in output_grads[1:]:
            if not isinstance(g.type, DisconnectedType):
                raise NotImplementedError(
                    "AGQBinomialLogitNormal: second derivatives of the marginal likelihood are not implemented"
                )
        g = output_grads[0]
        if isinstance(g.type, DisconnectedType):
            return [disconnected_type(), disconnected_type(), disconnected_type(), disconnected_type()]
        _, d_eta, d_sd = outputs
        return [disconnected_type(), disconnected_type(), g * d_eta, (g * d_sd).sum()]


def _register_numba() -> None:
    """The numba implementation: one pass over the cells (used by nutpie)."""
    import math

    from pytensor.link.numba.dispatch import basic as numba_basic

    @numba_basic.register_funcify_default_op_cache_key(AGQBinomialLogitNormal)
    def _funcify(op: AGQBinomialLogitNormal, node: Any = None, **kwargs: Any) -> Any:
        from ..._numerics import KERNEL_FLAGS
        from ..._numerics import centre
        from ..._numerics import exp_nonpos
        from ..._numerics import log_pos
        from ..._numerics import node_stage

        u, w = gauss_hermite(op.n_quad)
        c = np.log(w) + 0.5 * u**2
        steps = op.newton_steps
        nq = op.n_quad
        block = _BLOCK

        @numba_basic.numba_njit(**KERNEL_FLAGS)
        def agq(y, n, eta, sd_arr):
            # blocks of cells, one stage at a time across the block (see hierbench._numerics.agq_numba)
            sd = sd_arr.item()
            prec = 1.0 / (sd * sd)
            log_sd = math.log(sd)
            ncell = eta.shape[0]
            logp = np.empty(ncell)
            d_eta = np.empty(ncell)
            d_sd = np.empty(ncell)
            m = np.empty(block)
            s = np.empty(block)
            top = np.empty(block)
            tot = np.empty(block)
            ge = np.empty(block)
            gs = np.empty(block)
            am = np.empty(block)
            bs = np.empty(block)
            lq = np.empty((nq, block))
            zz = np.empty((nq, block))
            sg = np.empty((nq, block))
            for b0 in range(0, ncell, block):
                nb = min(block, ncell - b0)
                blk = slice(b0, b0 + nb)
                centre(y[blk], n[blk], eta[blk], prec, steps, m, s)
                node_stage(y[blk], n[blk], eta[blk], m, s, u, c, prec, nb, lq, zz, sg, top)
                for j in range(nb):
                    tot[j] = 0.0
                    ge[j] = 0.0
                    gs[j] = 0.0
                    am[j] = 0.0
                    bs[j] = 0.0
                for q in range(nq):
                    uq = u[q]
                    for j in range(nb):
                        i = b0 + j
                        r = exp_nonpos(lq[q, j] - top[j])
                        g = y[i] - n[i] * sg[q, j]
                        fp = r * (g - zz[q, j] * prec)  # node's d/dz, weighted
                        tot[j] += r
                        ge[j] += r * g
                        gs[j] += r * zz[q, j] * zz[q, j]
                        am[j] += fp
                        bs[j] += fp * uq
                for j in range(nb):
                    i = b0 + j
                    it = 1.0 / tot[j]
                    logp[i] = top[j] + log_pos(tot[j] * s[j]) - log_sd
                    # the placement's terms (see placement_terms), with p at the converged mode
                    a = eta[i] + m[j]
                    t = exp_nonpos(-abs(a))
                    pm = (1.0 if a >= 0 else t) / (1.0 + t)
                    nv = n[i] * pm * (1.0 - pm)
                    h = nv + prec
                    s3 = s[j] * s[j] * s[j]
                    dm_eta = -nv / h
                    dm_sd = 2.0 * m[j] * prec / (sd * h)
                    k = nv * (1.0 - 2.0 * pm)
                    ds_eta = -0.5 * s3 * k * (1.0 + dm_eta)
                    ds_sd = -0.5 * s3 * (k * dm_sd - 2.0 * prec / sd)
                    a_m = am[j] * it
                    b_s = bs[j] * it + 1.0 / s[j]
                    d_eta[i] = ge[j] * it + a_m * dm_eta + b_s * ds_eta
                    d_sd[i] = gs[j] * it * prec / sd - 1.0 / sd + a_m * dm_sd + b_s * ds_sd
            return logp, d_eta, d_sd

        # pytensor caches compiled kernels on disk under the Op's props; the second
        # element salts that key with the kernels' source, so an edited kernel is
        # never served from a stale cache
        return agq, _kernel_version()


def _kernel_version() -> int:
    from ..._numerics import agq as shared
    from ..._numerics import agq_numba as shared_numba

    return source_version(_register_numba, shared, shared_numba)


_register_numba()


def _agq_jax(op: AGQBinomialLogitNormal, jnp: Any) -> Any:
    """The JAX kernel (numpyro through PyMC): the NumPy formulas in ``jax.numpy``."""

    def agq(y, n, eta, sd):
        return agq_logp_numpy(y, n, eta, sd, op.n_quad, op.newton_steps, xp=jnp)

    return agq


register_jax(AGQBinomialLogitNormal, kernel=_agq_jax)
