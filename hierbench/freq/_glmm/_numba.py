"""Compiled kernel of :func:`hierbench.freq.fit_crossed_ml`: the marginal likelihood task by task.

Imported lazily (numba is only needed when the crossed ML fit runs). For
each task ``t`` the kernel

1. finds the mode ``b_t`` of ``sum_a l_at(alpha_a + b) - b^2 / (2 sd_task^2)``
   by safeguarded Newton steps from the previous call's mode (warm start);
2. places ``Q`` Gauss-Hermite nodes at that mode, scaled by the curvature
   (adaptive Gauss-Hermite; ``Q = 1`` is the Laplace approximation);
3. returns the task's log marginal likelihood and, from the normalised node
   masses, its gradient (Fisher's identity: the gradient of the log of an
   integral is the posterior mean of the integrand's log-gradient) and, on
   request, the per-node pieces of Louis' identity for the Hessian.

``l_at(eta)`` is a cell's log-likelihood: the binomial one
(``agent_task="none"``) or the logit-normal-binomial one, the agent x task
effect integrated out by the same adaptive quadrature the Bayesian model
uses (:func:`hierbench._numerics.agq_numba.centre` and ``node_term``, so the two
place the same nodes). Cells with no runs contribute nothing.
"""

from __future__ import annotations

import itertools
import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..._numerics import centre, exp_nonpos, njit_kernel, node_term

__all__ = ["task_pass"]


@njit_kernel()
def _cells(yr, nr, alpha, b, marg, prec, sd, u, c, steps, eta, m, s, vq, gq, hq, kq, out, full):
    """Per-cell log-likelihood and derivatives at ``eta_a = alpha_a + b`` for one task's row.

    ``out`` columns: 0 l, 1 dl/deta, 2 d2l/deta2, 3 dl/dsd, 4 d2l/deta dsd, 5 d2l/dsd2
    (columns 3-5 only for the marginal cell, 4-5 only when ``full``).
    """
    A = yr.shape[0]
    for a in range(A):
        eta[a] = alpha[a] + b
    if not marg:
        for a in range(A):
            if nr[a] == 0:
                for k in range(6):
                    out[a, k] = 0.0
                continue
            e = eta[a]
            t = math.exp(-abs(e))
            p = (1.0 if e >= 0 else t) / (1.0 + t)
            out[a, 0] = yr[a] * e - nr[a] * (max(e, 0.0) + math.log1p(t))
            out[a, 1] = yr[a] - nr[a] * p
            out[a, 2] = -nr[a] * p * (1.0 - p)
            out[a, 3] = 0.0
            out[a, 4] = 0.0
            out[a, 5] = 0.0
        return
    centre(yr, nr, eta, prec, steps, m, s)
    nq = u.shape[0]
    log_sd = math.log(sd)
    for a in range(A):
        if nr[a] == 0:
            for k in range(6):
                out[a, k] = 0.0
            continue
        top = -np.inf
        for q in range(nq):
            z = m[a] + s[a] * u[q]
            v, sig = node_term(yr[a], nr[a], eta[a] + z, z, prec, c[q])
            vq[q] = v
            gq[q] = yr[a] - nr[a] * sig
            hq[q] = -nr[a] * sig * (1.0 - sig)
            kq[q] = z * z * prec / sd - 1.0 / sd
            top = max(top, v)
        tot = 0.0
        e1 = 0.0
        e2 = 0.0
        eh = 0.0
        ek = 0.0
        egk = 0.0
        ekk = 0.0
        ekk2 = 0.0
        for q in range(nq):
            r = exp_nonpos(vq[q] - top)
            tot += r
            e1 += r * gq[q]
            e2 += r * gq[q] * gq[q]
            eh += r * hq[q]
            ek += r * kq[q]
            if full:
                z = m[a] + s[a] * u[q]
                egk += r * gq[q] * kq[q]
                ekk += r * kq[q] * kq[q]
                ekk2 += r * (-3.0 * z * z * prec * prec + prec)
        e1 /= tot
        e2 /= tot
        eh /= tot
        ek /= tot
        out[a, 0] = top + math.log(tot * s[a]) - log_sd
        out[a, 1] = e1
        out[a, 2] = eh + e2 - e1 * e1
        out[a, 3] = ek
        if full:
            out[a, 4] = egk / tot - e1 * ek
            out[a, 5] = ekk2 / tot + ekk / tot - ek * ek
        else:
            out[a, 4] = 0.0
            out[a, 5] = 0.0


@njit_kernel(nogil=True)
def _task_range(
    t0, t1, y, n, alpha, prec_t, marg, sd_at, u, c, steps, ut, ct, b_mode, max_newton, tol, full,
    L, s_task, g_alpha, g_lst, g_sat, pi_out, bq_out, d1, d2, ds, dns, dss,
):
    """The tasks ``t0 <= t < t1`` of one evaluation (arguments: see :func:`task_pass`).

    ``_cells`` is called, not inlined: inlined into its three call sites it
    made the first compile 5x longer (79 s against 15 s on a loaded 2-core
    machine) at the same speed per evaluation. The Newton search and the node
    pass stay in this body (114 lines): as kernels of their own they cost 23 s
    to compile against 15 s.
    """
    A = y.shape[1]
    nq_t = ut.shape[0]
    nq = u.shape[0]
    prec = 1.0 / (sd_at * sd_at) if marg else 0.0
    half_log_prec_t = 0.5 * math.log(prec_t)
    for t in range(t0, t1):
        yr = y[t]
        nr = n[t]
        eta = np.empty(A)
        m = np.empty(A)
        s = np.empty(A)
        vq = np.empty(nq)
        gq = np.empty(nq)
        hq = np.empty(nq)
        kq = np.empty(nq)
        out = np.empty((A, 6))
        lq = np.empty(nq_t)
        b = b_mode[t]
        if not np.isfinite(b):
            b = 0.0
        g2 = -prec_t
        converged = False
        for _ in range(max_newton):
            _cells(yr, nr, alpha, b, marg, prec, sd_at, u, c, steps, eta, m, s, vq, gq, hq, kq, out, False)
            g1 = -b * prec_t
            g2 = -prec_t
            for a in range(A):
                g1 += out[a, 1]
                g2 += out[a, 2]
            if g2 > -prec_t:  # guard: the quadrature's curvature can only be loose, never convex
                g2 = -prec_t
            step = g1 / g2
            step = min(max(step, -2.0), 2.0)
            b -= step
            if abs(step) < tol:
                converged = True
                break
        if not converged:
            _cells(yr, nr, alpha, b, marg, prec, sd_at, u, c, steps, eta, m, s, vq, gq, hq, kq, out, False)
            g2 = -prec_t
            for a in range(A):
                g2 += out[a, 2]
            if g2 > -prec_t:
                g2 = -prec_t
        # (after a converged Newton step the curvature is the last one's, |step| < tol away)
        st = 1.0 / math.sqrt(-g2)
        b_mode[t] = b
        s_task[t] = st
        # the node masses are known only once every node is evaluated: accumulate the
        # gradient with a running log-sum-exp (rescaled whenever the largest term moves)
        run_top = -np.inf
        run_tot = 0.0
        for a in range(A):
            g_alpha[t, a] = 0.0
        g_lst[t] = 0.0
        g_sat[t] = 0.0
        for q in range(nq_t):
            bq = b + st * ut[q]
            _cells(yr, nr, alpha, bq, marg, prec, sd_at, u, c, steps, eta, m, s, vq, gq, hq, kq, out, full)
            tot_l = 0.0
            ks = 0.0
            for a in range(A):
                tot_l += out[a, 0]
                ks += out[a, 3]
            lq[q] = ct[q] + tot_l - 0.5 * bq * bq * prec_t
            if full:
                bq_out[t, q] = bq
                for a in range(A):
                    d1[t, q, a] = out[a, 1]
                    d2[t, q, a] = out[a, 2]
                    ds[t, q, a] = out[a, 3]
                    dns[t, q, a] = out[a, 4]
                    dss[t, q, a] = out[a, 5]
            if lq[q] > run_top:
                scale = math.exp(run_top - lq[q]) if run_tot > 0.0 else 0.0
                run_tot *= scale
                for a in range(A):
                    g_alpha[t, a] *= scale
                g_lst[t] *= scale
                g_sat[t] *= scale
                run_top = lq[q]
            w = math.exp(lq[q] - run_top)
            run_tot += w
            for a in range(A):
                g_alpha[t, a] += w * out[a, 1]
            g_lst[t] += w * (bq * bq * prec_t - 1.0)
            g_sat[t] += w * ks
        for a in range(A):
            g_alpha[t, a] /= run_tot
        g_lst[t] /= run_tot
        g_sat[t] /= run_tot
        L[t] = run_top + math.log(run_tot) + math.log(st) + half_log_prec_t
        if full:
            for q in range(nq_t):
                pi_out[t, q] = math.exp(lq[q] - run_top) / run_tot


#: threads that share the tasks of one evaluation (the kernel releases the GIL)
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max(1, min(os.cpu_count() or 1, 8)), thread_name_prefix="hb-ml")
    return _POOL


def task_pass(y, n, alpha, prec_t, marg, sd_at, u, c, steps, ut, ct, b_mode, max_newton, tol, full,
              *outputs) -> None:  # fmt: skip
    """One evaluation of the marginal likelihood, task by task, the tasks shared among threads.

    Inputs: ``y``, ``n`` (T, A) successes and runs; ``alpha`` (A,); ``prec_t``
    = 1 / sd_task^2; ``marg`` (bool) and ``sd_at`` (the cell effect's sd);
    ``u``, ``c`` cell nodes and log weights (``log w + u^2 / 2``); ``steps``
    the cell Newton steps; ``ut``, ``ct`` the task nodes and log weights;
    ``b_mode`` (T,) start values, overwritten with the modes.

    Outputs (preallocated, in this order): ``L`` (T,) log marginal likelihood
    per task (without binomial coefficients); ``s_task`` (T,) curvature
    scale; ``g_alpha`` (T, A), ``g_lst`` (T,), ``g_sat`` (T,) gradient pieces
    (d/d alpha, d/d log sd_task, d/d sd_at); and when ``full`` the node masses
    ``pi_out`` and nodes ``bq_out`` (T, Q) and per node and agent ``d1``,
    ``d2``, ``ds``, ``dns``, ``dss`` (T, Q, A) for Louis' identity.

    Compile time is what a first fit waits for, so the kernel is compiled
    serially (numba's ``parallel=True`` took 14 s to compile against 9 s, on
    a loaded 2-core machine) and the tasks are split among threads here; each
    task writes only its own rows, so the result does not depend on the split.
    """
    args = (y, n, alpha, prec_t, marg, sd_at, u, c, steps, ut, ct, b_mode, max_newton, tol, full,
            *outputs)  # fmt: skip
    T = y.shape[0]
    k = min(_pool()._max_workers, max(1, T // 32))
    if k == 1:
        _task_range(0, T, *args)
        return
    cuts = np.linspace(0, T, k + 1).astype(np.int64)
    jobs = [_pool().submit(_task_range, int(a), int(b), *args) for a, b in itertools.pairwise(cuts)]
    for job in jobs:
        job.result()
