"""Compiled adaptive Gauss-Hermite node masses for the crossed model's per-cell posteriors.

The same computation as :func:`hierbench.metrics._crossed._agq_weights`
(normal-approximation start, damped Newton steps to the mode of
``N(x; 0, sd) Binomial(y | n, expit(eta + x))``, nodes at the mode scaled by
the curvature, normalised node masses), compiled with numba and run in
parallel over posterior draws. On a 12 x 500 fit with 4,000 draws the NumPy
version spends about 8 s here, in temporaries of shape (draws, agents, tasks,
nodes); this one visits each cell once. numba is installed with PyMC's
PyTensor; when it cannot be imported the NumPy version is used.
"""

from __future__ import annotations

import math

import numpy as np

_KERNEL = None


def _compile(max_step: float, cache: bool = True):
    import numba

    @numba.njit(parallel=True, boundscheck=False, cache=cache)
    def kernel(y, n, eta, sd, u, c, steps, e_out, w_out):
        # parallel over draws; within a draw, one agent's tasks are processed stage by
        # stage across the row, so the dependent exponentials of different cells overlap
        S, A, T = eta.shape
        nq = u.shape[0]
        for si in numba.prange(S):
            prec = 1.0 / (sd[si] * sd[si])
            m = np.empty(T)
            s = np.empty(T)
            top = np.empty(T)
            tot = np.empty(T)
            for ai in range(A):
                for ti in range(T):
                    ph = (y[ai, ti] + 0.5) / (n[ai, ti] + 1.0)
                    info = n[ai, ti] * ph * (1.0 - ph)
                    m[ti] = (math.log(ph / (1.0 - ph)) - eta[si, ai, ti]) * info / (info + prec)
                for _ in range(steps):
                    for ti in range(T):
                        a = eta[si, ai, ti] + m[ti]
                        t = math.exp(-abs(a))
                        p = (1.0 if a >= 0 else t) / (1.0 + t)
                        yi = y[ai, ti]
                        ni = n[ai, ti]
                        st = (yi - ni * p - m[ti] * prec) / (-ni * p * (1.0 - p) - prec)
                        m[ti] = m[ti] - min(max(st, -max_step), max_step)
                for ti in range(T):
                    a = eta[si, ai, ti] + m[ti]
                    t = math.exp(-abs(a))
                    p = (1.0 if a >= 0 else t) / (1.0 + t)
                    s[ti] = 1.0 / math.sqrt(n[ai, ti] * p * (1.0 - p) + prec)
                    top[ti] = -np.inf
                    tot[ti] = 0.0
                for q in range(nq):
                    for ti in range(T):
                        z = m[ti] + s[ti] * u[q]
                        e = eta[si, ai, ti] + z
                        t = math.exp(-abs(e))
                        v = y[ai, ti] * e - n[ai, ti] * (max(e, 0.0) + math.log(1.0 + t)) - 0.5 * z * z * prec + c[q]
                        e_out[si, ai, ti, q] = e
                        w_out[si, ai, ti, q] = v
                        top[ti] = max(top[ti], v)
                for q in range(nq):
                    for ti in range(T):
                        r = math.exp(w_out[si, ai, ti, q] - top[ti])
                        w_out[si, ai, ti, q] = r
                        tot[ti] += r
                for q in range(nq):
                    for ti in range(T):
                        w_out[si, ai, ti, q] /= tot[ti]

    return kernel


def agq_weights_numba(
    y: np.ndarray, n: np.ndarray, eta: np.ndarray, sd: np.ndarray, u: np.ndarray, log_w: np.ndarray,
    steps: int, max_step: float,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Node logits ``e`` and masses ``wt``, each (S, A, T, q), or None when numba is unavailable.

    ``y``, ``n``: (A, T); ``eta``: (S, A, T); ``sd``: (S,).
    """
    global _KERNEL
    if _KERNEL is None:
        try:
            _KERNEL = _compile(float(max_step))
        except ImportError:  # pragma: no cover - numba ships with pytensor
            _KERNEL = False
        except RuntimeError:  # pragma: no cover - no writable cache location: compile each time
            _KERNEL = _compile(float(max_step), cache=False)
    if _KERNEL is False:  # pragma: no cover
        return None
    S, A, T = eta.shape
    q = u.size
    e = np.empty((S, A, T, q))
    wt = np.empty((S, A, T, q))
    c = np.asarray(log_w, dtype=float) + 0.5 * np.asarray(u, dtype=float) ** 2
    _KERNEL(
        np.ascontiguousarray(y, dtype=float),
        np.ascontiguousarray(n, dtype=float),
        np.ascontiguousarray(eta, dtype=float),
        np.ascontiguousarray(sd, dtype=float),
        np.asarray(u, dtype=float),
        c,
        int(steps),
        e,
        wt,
    )
    return e, wt
