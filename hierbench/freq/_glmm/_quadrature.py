"""The marginal likelihood of :func:`hierbench.freq.fit_crossed_ml`, task by task, in NumPy.

For each task ``t`` one evaluation

1. finds the mode ``b_t`` of ``sum_a l_at(alpha_a + b) - b^2 / (2 sd_task^2)``
   by safeguarded Newton steps from the previous evaluation's mode (warm
   start), every task at once (a task leaves the iteration when its step is
   below ``TOL``);
2. places ``Q`` Gauss-Hermite nodes at that mode, scaled by the curvature
   (adaptive Gauss-Hermite; ``Q = 1`` is the Laplace approximation);
3. returns the task's log marginal likelihood and, from the normalised node
   masses, its gradient (Fisher's identity: the gradient of the log of an
   integral is the posterior mean of the integrand's log-gradient) and, on
   request, the per-node pieces of Louis' identity for the Hessian.

``l_at(eta)`` is a cell's log-likelihood: the binomial one
(``agent_task="none"``) or the logit-normal-binomial one, the agent x task
effect integrated out by adaptive quadrature with the node placement of the
Bayesian model (:func:`hierbench._numerics.cell_modes`). Cells with no runs
contribute nothing.

No compiler: the cells of all tasks (and of all task nodes) go through the
quadrature together, in blocks of ``BLOCK`` cells whose node arrays stay in
cache, with the arithmetic done in place. On 12 x 500 x 10 an evaluation with
the Louis pieces took 11-15 ms against 22-24 ms for the numba kernel it
replaced (same process, interleaved, load average 6 on 2 cores), whose first
call compiled for 3-5 s.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..._numerics import cell_modes
from ..._parallel import available_cores

__all__ = ["task_pass"]

#: cells per block of the cell quadrature (its node arrays, Q x BLOCK, stay in cache)
BLOCK = 4096
#: Newton steps towards each task's mode, and the step below which a task has converged
MAX_NEWTON = 100
TOL = 1e-10
#: a Newton step of a task's mode is clipped to this (logits)
MAX_STEP = 2.0


#: threads that share the blocks of one evaluation (each block writes only its own cells, so
#: the result does not depend on how many there are), and the process that started them
_POOL: ThreadPoolExecutor | None = None
_POOL_PID = -1


def _pool() -> ThreadPoolExecutor:
    """The block threads of this process (a forked worker gets its own: it inherits no threads)."""
    global _POOL, _POOL_PID
    if _POOL is None or _POOL_PID != os.getpid():
        _POOL = ThreadPoolExecutor(max(1, min(available_cores(), 8)), thread_name_prefix="hb-ml")
        _POOL_PID = os.getpid()
    return _POOL


def _binomial_cells(y: np.ndarray, n: np.ndarray, eta: np.ndarray) -> list[np.ndarray]:
    """``l``, ``dl/deta`` and ``d2l/deta2`` of binomial cells (no binomial coefficient)."""
    t = np.exp(-np.abs(eta))
    p = np.where(eta >= 0, 1.0, t) / (1.0 + t)
    return [y * eta - n * (np.maximum(eta, 0.0) + np.log1p(t)), y - n * p, -n * p * (1.0 - p)]


def _node_moments(y, n, eta, sd, u, c, full):
    """One block of logit-normal-binomial cells: ``l`` and its derivatives in ``eta`` and ``sd``.

    Node arrays are (Q, cells), computed in place. With the normalised node masses ``w``
    and ``sig = expit(eta + z)``: ``dl/deta = y - n E[sig]``, ``d2l/deta2 = -n E[sig(1 - sig)]
    + n^2 Var[sig]``, ``dl/dsd = (prec E[z^2] - 1) / sd``; with ``full`` also
    ``d2l/deta dsd = -n prec / sd Cov[sig, z^2]`` and ``d2l/dsd2 = prec - 3 prec^2 E[z^2]
    + (prec / sd)^2 Var[z^2]``.
    """
    prec = 1.0 / (sd * sd)
    m, _, s = cell_modes(y, n, eta, prec)
    z = np.multiply.outer(u, s)
    z += m
    e = z + eta
    t = np.abs(e)
    np.negative(t, out=t)
    np.exp(t, out=t)
    opt = t + 1.0
    sig = np.where(e >= 0, 1.0, t)
    sig /= opt
    # the node's log term y e - n softplus(e) - prec z^2 / 2 + c (hierbench._numerics.place_nodes)
    lq = np.log(opt, out=opt)
    lq += np.maximum(e, 0.0, out=t)
    lq *= -n
    e *= y
    lq += e
    z2 = np.multiply(z, z, out=z)
    lq -= np.multiply(z2, 0.5 * prec, out=e)
    lq += c[:, None]
    top = lq.max(0)
    lq -= top
    w = np.exp(lq, out=lq)
    tot = w.sum(0)
    w *= 1.0 / tot
    ws = np.multiply(w, sig, out=t)
    s1 = ws.sum(0)
    ws *= sig
    s2 = ws.sum(0)
    w *= z2
    ez2 = w.sum(0)
    out = [
        top + np.log(tot * s) - math.log(sd),
        y - n * s1,
        -n * (s1 - s2) + n * n * (s2 - s1 * s1),
        (prec * ez2 - 1.0) / sd,
    ]
    if full:  # w holds w z^2 now
        e_sig_z2 = np.multiply(w, sig, out=sig).sum(0)
        e_z4 = np.multiply(w, z2, out=w).sum(0)
        out.append(-n * (prec / sd) * (e_sig_z2 - s1 * ez2))
        out.append(prec - 3.0 * prec * prec * ez2 + (prec / sd) ** 2 * (e_z4 - ez2 * ez2))
    return out


def cell_terms(
    y: np.ndarray, n: np.ndarray, eta: np.ndarray, marg: bool, sd: float, u: np.ndarray, c: np.ndarray,
    full: bool,
) -> list[np.ndarray]:
    """Per-cell ``l``, ``dl/deta``, ``d2l/deta2``, ``dl/dsd`` [, ``d2l/deta dsd``, ``d2l/dsd2``].

    ``y``, ``n``, ``eta`` have one shape; cells with ``n = 0`` get zeros. The
    ``sd`` derivatives are zero for binomial cells (``marg`` False); the
    last two only with ``full``. ``u``, ``c``: the cell nodes and their log
    weights ``log w + u^2 / 2``.
    """
    k = 6 if full else 4
    outs = [np.zeros(eta.shape) for _ in range(k)]
    ran = n > 0
    yr, nr, er = y[ran], n[ran], eta[ran]
    if not marg:
        vals = _binomial_cells(yr, nr, er)
        for o, v in zip(outs, vals, strict=False):
            o[ran] = v
        return outs
    flat = [np.empty(er.size) for _ in range(k)]

    def block(a: int) -> None:
        b = slice(a, a + BLOCK)
        for f, v in zip(flat, _node_moments(yr[b], nr[b], er[b], sd, u, c, full), strict=True):
            f[b] = v

    starts = range(0, er.size, BLOCK)
    if len(starts) > 1:  # NumPy releases the GIL in its loops: the blocks share the cores
        for job in [_pool().submit(block, a) for a in starts]:
            job.result()
    elif starts:
        block(0)
    for o, f in zip(outs, flat, strict=True):
        o[ran] = f
    return outs


def _task_modes(y, n, alpha, prec_t, marg, sd_at, u, c, b_mode):
    """Each task's mode ``b`` (warm start ``b_mode``) and the curvature ``g2`` there (<= -prec_t).

    After a converged step the curvature is the last step's (``|step| < TOL`` away); a
    task that has not converged in ``MAX_NEWTON`` steps gets it at its last ``b``.
    """
    b = np.where(np.isfinite(b_mode), b_mode, 0.0)
    g2 = np.full(b.size, -prec_t)
    act = np.arange(b.size)
    for _ in range(MAX_NEWTON):
        _, d1, d2, *_ = cell_terms(y[act], n[act], alpha + b[act, None], marg, sd_at, u, c, False)
        g1 = d1.sum(1) - b[act] * prec_t
        # guard: the quadrature's curvature can only be loose, never convex
        g2[act] = curv = np.minimum(d2.sum(1) - prec_t, -prec_t)
        step = np.clip(g1 / curv, -MAX_STEP, MAX_STEP)
        b[act] -= step
        act = act[np.abs(step) >= TOL]
        if act.size == 0:
            break
    else:
        _, _, d2, *_ = cell_terms(y[act], n[act], alpha + b[act, None], marg, sd_at, u, c, False)
        g2[act] = np.minimum(d2.sum(1) - prec_t, -prec_t)
    return b, g2


def task_pass(
    y: np.ndarray, n: np.ndarray, alpha: np.ndarray, prec_t: float, marg: bool, sd_at: float,
    u: np.ndarray, c: np.ndarray, ut: np.ndarray, ct: np.ndarray, b_mode: np.ndarray, full: bool,
) -> dict[str, np.ndarray]:
    """One evaluation of the marginal likelihood, task by task.

    Inputs: ``y``, ``n`` (T, A) successes and runs; ``alpha`` (A,); ``prec_t``
    = 1 / sd_task^2; ``marg`` (bool) and ``sd_at`` (the cell effect's sd);
    ``u``, ``c`` cell nodes and log weights (``log w + u^2 / 2``); ``ut``,
    ``ct`` the task nodes and log weights; ``b_mode`` (T,) start values,
    overwritten with the modes.

    Returns ``L`` (T,) log marginal likelihood per task (without binomial
    coefficients); ``s`` (T,) curvature scale; ``g_alpha`` (T, A), ``g_lst``
    (T,), ``g_sat`` (T,) gradient pieces (d/d alpha, d/d log sd_task, d/d
    sd_at); and when ``full`` the node masses ``pi`` and nodes ``bq`` (T, Q)
    and per node and agent ``d1``, ``d2``, ``ds``, ``dns``, ``dss`` (T, Q, A)
    for Louis' identity.
    """
    b, g2 = _task_modes(y, n, alpha, prec_t, marg, sd_at, u, c, b_mode)
    st = 1.0 / np.sqrt(-g2)
    b_mode[:] = b
    bq = b[:, None] + st[:, None] * ut  # (T, Q)
    shape = (*bq.shape, alpha.size)
    yq, nq = (np.broadcast_to(v[:, None, :], shape) for v in (y, n))
    cells = cell_terms(yq, nq, alpha + bq[..., None], marg, sd_at, u, c, full)
    lq = ct + cells[0].sum(-1) - 0.5 * bq * bq * prec_t
    top = lq.max(1, keepdims=True)
    pi = np.exp(lq - top)
    tot = pi.sum(1)
    pi /= tot[:, None]
    out = {
        "L": top[:, 0] + np.log(tot) + np.log(st) + 0.5 * math.log(prec_t),
        "s": st,
        "g_alpha": np.einsum("tq,tqa->ta", pi, cells[1]),
        "g_lst": (pi * (bq * bq * prec_t - 1.0)).sum(1),
        "g_sat": (pi * cells[3].sum(-1)).sum(1),
    }
    if full:
        out |= {"pi": pi, "bq": bq, **dict(zip(("d1", "d2", "ds", "dns", "dss"), cells[1:], strict=True))}
    return out
