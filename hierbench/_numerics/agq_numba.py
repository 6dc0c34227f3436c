"""Compiled adaptive Gauss-Hermite quadrature (the maths is in :mod:`hierbench._numerics.agq`).

Two kernels use the pieces built here: the model's likelihood Op
(:mod:`hierbench.bayes._ops._agq_op`, value and derivatives per cell) and the node
masses of the per-cell posteriors (:func:`node_masses`, for the posterior
summaries of :mod:`hierbench.metrics._crossed`). They share the node
centring (``centre``) and the log term of one node (``node_term``), so the
likelihood and the summaries place the same nodes.

Both kernels work stage by stage across a row of cells: the Newton steps of
one cell form a chain of dependent exponentials and divisions, and
interleaving independent cells lets the CPU overlap them (1.7x faster than
one cell at a time, measured on 6,000 cells). numba comes with PyTensor.

Each stage is a loop over cells with no branch the compiler cannot turn into
a select, so LLVM runs it on SIMD lanes, provided the loop calls no libm
function: ``math.exp`` and ``math.log`` are scalar calls (numba's pip LLVM
has no vector maths library). :func:`exp_nonpos` and :func:`log_one_two`
are the two the stages need, written as branch-free polynomials on the
ranges the kernels use them on (the arguments of ``exp`` there are never
positive; ``log`` is only taken of ``1 + exp(-|e|)``), and :func:`log_pos`
(any positive normal number, from its exponent bits and
:func:`log_one_two`) for the two per-cell logs outside the nodes. All are
within about one unit in the last place of libm (tested); with the first two
the likelihood kernel was 2.1x faster (25,000 cells, 6.1 to 2.9 ms per value
and gradient), with the third 10-15% more (6,000 cells, 1.30 to 1.10-1.19 ms). The
kernels are compiled with ``error_model="numpy"`` (numba's Python error
model puts a zero-division branch into every division, which stops the
vectoriser) and with fused multiply-add allowed (``fastmath={"contract"}``,
no reassociation: the range reduction in :func:`exp_nonpos` relies on
evaluation order).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from .agq import NEWTON_MAX_STEP
from .agq import NEWTON_TOL

__all__ = ["KERNEL_FLAGS", "centre", "exp_nonpos", "log_one_two", "log_pos", "node_masses", "node_stage", "node_term", "task_means"]

#: compiler options of every kernel that uses the stages here (see the module docstring)
KERNEL_FLAGS = {"boundscheck": False, "error_model": "numpy", "fastmath": {"contract"}}


def njit_kernel(**options):
    """``numba.njit`` with an on-disk cache, or without one when numba has nowhere to write it."""

    def decorate(fn):
        try:
            return numba.njit(cache=True, **KERNEL_FLAGS, **options)(fn)
        except RuntimeError:  # pragma: no cover - no writable cache location: compile each time
            return numba.njit(cache=False, **KERNEL_FLAGS, **options)(fn)

    return decorate


_LOG2E = 1.4426950408889634
# ln 2 split so that k * _LN2_HI is exact for |k| < 2^11 (Cody and Waite's reduction)
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LN2 = 0.6931471805599453
_SQRT2 = 1.4142135623730951
# 1 / k!, k = 13..0 (highest degree first, as :func:`_horner` takes them): the Taylor
# series of exp(r) for |r| <= ln(2) / 2 (truncation < 4e-18)
_EXP_C = tuple(1.0 / math.factorial(k) for k in range(13, -1, -1))
# 1 / (2k + 1), k = 11..0: the series of atanh(s) / s in s^2
_ATANH_C = tuple(1.0 / (2 * k + 1) for k in range(11, -1, -1))


@njit_kernel(inline="always")
def _horner(x, coeffs):
    """The polynomial ``coeffs[0] x^n + ... + coeffs[n]`` by Horner's rule (a fixed-length tuple: unrolled)."""
    p = coeffs[0]
    for c in coeffs[1:]:
        p = p * x + c
    return p


@njit_kernel(inline="always")
def exp_nonpos(x):
    """``exp(x)`` for ``x <= 0``, branch-free (0 below -708, where exp is under 3.3e-308).

    ``x = k ln 2 + r`` with ``|r| <= ln(2) / 2``; ``exp(r)`` by its Taylor
    polynomial of degree 13; ``2^k`` written into the exponent bits.
    """
    xc = max(x, -708.0)
    k = math.floor(xc * _LOG2E + 0.5)
    r = (xc - k * _LN2_HI) - k * _LN2_LO
    p = _horner(r, _EXP_C)
    scale = np.int64((np.int64(k) + np.int64(1023)) << 52).view(np.float64)
    return p * scale if x >= -708.0 else 0.0


@njit_kernel(inline="always")
def log_one_two(x):
    """``log(x)`` for ``1 <= x <= 2``, branch-free.

    Above sqrt(2) the argument is halved (``+ ln 2``), so ``s = (x - 1) / (x + 1)``
    has ``|s| <= 0.172``, and ``log x = 2 atanh(s)`` by its series to ``s^23``
    (truncation below 1e-18).
    """
    big = x > _SQRT2
    xr = 0.5 * x if big else x
    s = (xr - 1.0) / (xr + 1.0)
    return 2.0 * s * _horner(s * s, _ATANH_C) + (_LN2 if big else 0.0)


@njit_kernel(inline="always")
def log_pos(x):
    """``log(x)`` for a positive normal ``x`` (above 2.2e-308, finite), branch-free.

    ``x = 2^k f`` with ``f`` in ``[1, 2)`` read from the bits; ``k ln 2`` in
    two parts (``k * _LN2_HI`` is exact) plus :func:`log_one_two` of ``f``.
    For the per-cell logs the kernels take of positive quantities, which as
    ``math.log`` calls kept their loops off the SIMD lanes.
    """
    bits = np.float64(x).view(np.int64)
    k = np.float64((bits >> np.int64(52)) - np.int64(1023))
    f = np.int64((bits & np.int64(0x000FFFFFFFFFFFFF)) | np.int64(0x3FF0000000000000)).view(np.float64)
    return k * _LN2_HI + (k * _LN2_LO + log_one_two(f))


# defined at module level: numba's cache then holds the kernel with its helpers inlined
# (built inside a function, the first call of every process recompiled them: 2.3 s
# instead of 1.2 s); inlined, the row kernel is 8% faster than with calls
@njit_kernel(inline="always")
def centre(y, n, eta, prec, steps, m, s):
    """Mode ``m`` and curvature scale ``s`` of each cell of a row (1-D arrays).

    At most ``steps`` clipped Newton steps, stopping when every step of the row
    is below ``NEWTON_TOL`` (the log density is strictly concave, so the
    clipped iteration converges from any start). The step sizes wait in ``s``
    and their largest is taken in a loop of its own: a running maximum inside
    the step loop is a reduction LLVM does not vectorise without fast-math,
    and it kept the whole step loop scalar (2x slower, the same steps).
    """
    for j in range(eta.shape[0]):
        ph = (y[j] + 0.5) / (n[j] + 1.0)
        info = n[j] * ph * (1.0 - ph)
        m[j] = (log_pos(ph / (1.0 - ph)) - eta[j]) * info / (info + prec)
    for _ in range(steps):
        for j in range(eta.shape[0]):
            a = eta[j] + m[j]
            t = exp_nonpos(-abs(a))
            p = (1.0 if a >= 0 else t) / (1.0 + t)
            st = (y[j] - n[j] * p - m[j] * prec) / (-n[j] * p * (1.0 - p) - prec)
            st = min(max(st, -NEWTON_MAX_STEP), NEWTON_MAX_STEP)
            m[j] = m[j] - st
            s[j] = abs(st)
        big = 0.0
        for j in range(eta.shape[0]):
            big = max(big, s[j])
        if big < NEWTON_TOL:
            break
    for j in range(eta.shape[0]):
        a = eta[j] + m[j]
        t = exp_nonpos(-abs(a))
        p = (1.0 if a >= 0 else t) / (1.0 + t)
        s[j] = 1.0 / math.sqrt(n[j] * p * (1.0 - p) + prec)


@njit_kernel(inline="always")
def node_term(y, n, e, z, prec, cq):
    """Log term of one node at logit ``e`` (effect ``z``), and ``expit(e)``."""
    t = exp_nonpos(-abs(e))
    opt = 1.0 + t
    # softplus(e) = max(e, 0) + log(1 + exp(-|e|)); log(1 + t) rather than
    # log1p(t): its absolute error stays below 1e-16, and 1 + t lies in [1, 2]
    v = y * e - n * (max(e, 0.0) + log_one_two(opt)) - 0.5 * z * z * prec + cq
    return v, (1.0 if e >= 0 else t) / opt


@njit_kernel(inline="always")
def node_stage(y, n, eta, m, s, u, c, prec, nb, lq, zz, sg, top):
    """Run the node stage of a block of ``nb`` cells (1-D views of the block, modes ``m``, scales ``s``).

    Fills ``lq[q, j]`` (log term), ``zz[q, j]`` (effect at the node), ``sg[q, j]``
    (``expit`` of the node's logit) and ``top[j]`` (largest log term): the
    nodes that the likelihood kernel (:mod:`hierbench.bayes._ops._agq_op`) and the
    task averages (:func:`task_means`) both place.
    """
    for j in range(nb):
        top[j] = -np.inf
    for q in range(u.shape[0]):
        for j in range(nb):
            z = m[j] + s[j] * u[q]
            v, sig = node_term(y[j], n[j], eta[j] + z, z, prec, c[q])
            lq[q, j] = v
            zz[q, j] = z
            sg[q, j] = sig
            top[j] = max(top[j], v)


@njit_kernel(inline="always")
def _block_power(x, k, base, out, nb):
    """``out[j] = x[j] ** k`` for the block's ``nb`` cells, by repeated squaring (``k`` a whole number)."""
    for j in range(nb):
        base[j] = x[j]
        out[j] = 1.0
    e = k
    while e > 0:
        if e & 1:
            for j in range(nb):
                out[j] *= base[j]
        e >>= 1
        if e > 0:
            for j in range(nb):
                base[j] *= base[j]


@njit_kernel(inline="always")
def _node_workspace(T, nq, B):
    """The scratch arrays of one draw's node stages: ``m``, ``s`` (T,); ``lq``, ``zz``, ``sg`` (nq, B); ``top``, ``tot`` (B,)."""
    return np.empty(T), np.empty(T), np.empty((nq, B)), np.empty((nq, B)), np.empty((nq, B)), np.empty(B), np.empty(B)


@njit_kernel(inline="always")
def _mass_stage(lq, top, tot, nq, nb):
    """Turn the block's log terms ``lq[q, j]`` into unnormalised masses ``exp(lq - top)``, summed into ``tot[j]``."""
    for j in range(nb):
        tot[j] = 0.0
    for q in range(nq):
        for j in range(nb):
            r = exp_nonpos(lq[q, j] - top[j])
            lq[q, j] = r
            tot[j] += r


_BLOCK = 64  # cells per stage in the draw kernels (as in the likelihood kernel)


@njit_kernel(nogil=True)
def _masses(y, n, eta, sd, u, c, steps, e_out, w_out):
    # one block of draws (see _over_draws); within a draw, one agent's row at a time, in
    # blocks of cells processed stage by stage (as in _means)
    S, A, T = eta.shape
    nq = u.shape[0]
    B = _BLOCK
    for si in range(S):
        prec = 1.0 / (sd[si] * sd[si])
        m, s, lq, zz, sg, top, tot = _node_workspace(T, nq, B)
        for ai in range(A):
            centre(y[ai], n[ai], eta[si, ai], prec, steps, m, s)
            for b0 in range(0, T, B):
                nb = min(B, T - b0)
                blk = slice(b0, b0 + nb)
                node_stage(y[ai, blk], n[ai, blk], eta[si, ai, blk], m[blk], s[blk], u, c, prec, nb, lq, zz, sg, top)
                _mass_stage(lq, top, tot, nq, nb)
                for j in range(nb):
                    for q in range(nq):
                        e_out[si, ai, b0 + j, q] = eta[si, ai, b0 + j] + zz[q, j]
                        w_out[si, ai, b0 + j, q] = lq[q, j] / tot[j]


def _over_draws(n_draws: int, run: Callable[[slice], None]) -> None:
    """``run(block)`` over contiguous blocks of draws, one block per thread, all at once.

    The draw kernels are compiled with ``nogil``, so the blocks run in
    parallel on Python threads; each draw's arithmetic does not depend on the
    block it falls in, so the result is bit-identical whatever the number of
    threads (``NUMBA_NUM_THREADS``, default the number of CPUs). Written
    with ``parallel=True`` (numba's parfors) instead, ``task_means``' first
    call against an empty cache took 19.3 s against 5.3 s now, and a block of
    64 draws of a 12 x 500 design 0.075 s against 0.051 s (issue 27; fresh
    processes on 2 cores at load 7, so inflated; the fit-level figures come
    from ``benchmarks/bench_first_fit.py``).
    """
    k = max(1, min(int(numba.config.NUMBA_NUM_THREADS), n_draws))
    if k == 1:
        run(slice(0, n_draws))
        return
    edges = np.linspace(0, n_draws, k + 1).round().astype(int)
    with ThreadPoolExecutor(max_workers=k) as pool:
        for fut in [pool.submit(run, slice(lo, hi)) for lo, hi in itertools.pairwise(edges)]:
            fut.result()


def _row_inputs(y, n, eta, sd, u, log_w, steps) -> tuple:
    """The arguments the draw kernels share, as the compiled signature wants them (float, contiguous).

    ``c = log w + u^2 / 2`` is the node's log weight with the Gauss-Hermite factor taken out.
    """
    u = np.asarray(u, dtype=float)
    c = np.asarray(log_w, dtype=float) + 0.5 * u**2
    rows = (np.ascontiguousarray(a, dtype=float) for a in (y, n, eta, sd))
    return (*rows, u, c, int(steps))


def node_masses(
    y: np.ndarray, n: np.ndarray, eta: np.ndarray, sd: np.ndarray, u: np.ndarray, log_w: np.ndarray,
    steps: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Node logits ``e`` and normalised masses ``wt``, each (S, A, T, q).

    ``y``, ``n``: (A, T); ``eta``: (S, A, T); ``sd``: (S,), one per draw. The
    same values as :func:`hierbench.metrics._crossed._agq_weights` computes
    with NumPy, without its (draws, agents, tasks, nodes) temporaries (about
    8 s of NumPy against 2 s here for 4,000 draws of a 12 x 500 fit).
    """
    S, A, T = eta.shape
    q = u.size
    e = np.empty((S, A, T, q))
    wt = np.empty((S, A, T, q))
    y, n, eta, sd, u, c, steps = _row_inputs(y, n, eta, sd, u, log_w, steps)
    _over_draws(S, lambda b: _masses(y, n, eta[b], sd[b], u, c, steps, e[b], wt[b]))
    return e, wt


@njit_kernel(nogil=True)
def _means(y, n, eta, sd, u, c, steps, unif, wmask, ks, at_least, realised, exp_out, real_out):
    # one block of draws (see _over_draws); within a draw, one agent's row at a time, in
    # blocks of cells processed stage by stage (each stage a SIMD loop over the block's cells)
    S, A, T = eta.shape
    nq = u.shape[0]
    K = ks.shape[0]
    B = _BLOCK
    for si in range(S):
        prec = 1.0 / (sd[si] * sd[si])
        m, s, lq, zz, sg, top, tot = _node_workspace(T, nq, B)
        cum = np.empty(B)
        target = np.empty(B)
        pick = np.empty(B, np.int64)
        base = np.empty(B)
        pw = np.empty(B)
        acc = np.empty(B)
        pp = np.empty(B)
        for ai in range(A):
            centre(y[ai], n[ai], eta[si, ai], prec, steps, m, s)
            for k in range(K):
                exp_out[si, ai, k] = 0.0
                real_out[si, ai, k] = 0.0
            for b0 in range(0, T, B):
                nb = min(B, T - b0)
                blk = slice(b0, b0 + nb)
                node_stage(y[ai, blk], n[ai, blk], eta[si, ai, blk], m[blk], s[blk], u, c, prec, nb, lq, zz, sg, top)
                if at_least:  # pass@k averages 1 - (1 - p)^k: powers of 1 - p
                    for q in range(nq):
                        for j in range(nb):
                            sg[q, j] = 1.0 - sg[q, j]
                _mass_stage(lq, top, tot, nq, nb)
                if realised:
                    # inverse CDF: the first node whose cumulative mass exceeds the uniform
                    for j in range(nb):
                        target[j] = unif[si, ai, b0 + j] * tot[j]
                        cum[j] = 0.0
                        pick[j] = 0
                    for q in range(nq - 1):
                        for j in range(nb):
                            cum[j] += lq[q, j]
                            pick[j] += 1 if cum[j] <= target[j] else 0
                    for j in range(nb):
                        pp[j] = sg[pick[j], j]
                for k in range(K):
                    kk = ks[k]
                    for j in range(nb):
                        acc[j] = 0.0
                    for q in range(nq):
                        _block_power(sg[q], kk, base, pw, nb)
                        for j in range(nb):
                            acc[j] += lq[q, j] * pw[j]
                    ex = 0.0
                    for j in range(nb):
                        f = acc[j] / tot[j]
                        ex += wmask[ai, b0 + j] * (1.0 - f if at_least else f)
                    exp_out[si, ai, k] += ex
                    if realised:
                        rl = 0.0
                        _block_power(pp, kk, base, pw, nb)
                        for j in range(nb):
                            rl += wmask[ai, b0 + j] * (1.0 - pw[j] if at_least else pw[j])
                        real_out[si, ai, k] += rl


def task_means(
    y: np.ndarray, n: np.ndarray, eta: np.ndarray, sd: np.ndarray, u: np.ndarray, log_w: np.ndarray,
    steps: int, wmask: np.ndarray, ks: np.ndarray, at_least: bool, unif: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per draw and agent, task averages of ``f_k(p_mt)``: expected and (with ``unif``) realised.

    ``f_k(p) = p^k`` (pass^k) or ``1 - (1 - p)^k`` (``at_least``, pass@k).
    ``y``, ``n``, ``wmask``: (A, T), the averaging weights per agent;
    ``eta``: (S, A, T); ``sd``: (S,); ``unif``: (S, A, T) uniforms choosing
    one node per cell for the realised average (the same rule as
    :func:`hierbench.metrics._crossed._draw_nodes`). Returns two (S, A, K)
    arrays; the second is zeros without ``unif``. The same numbers as
    node masses followed by NumPy averages, without their (S, A, T, q)
    temporaries. ``ks`` are whole numbers of an integer dtype (their rule,
    ``k >= 1``, is :func:`hierbench.metrics._crossed._ks`'s).
    """
    ks = np.asarray(ks)
    if ks.ndim != 1 or not np.issubdtype(ks.dtype, np.integer):
        raise TypeError(f"`ks` must be a 1-D array of integers (powers by repeated squaring); got {ks!r}")
    S, A, _ = eta.shape
    K = len(ks)
    exp_out = np.empty((S, A, K))
    real_out = np.empty((S, A, K))
    realised = unif is not None
    y, n, eta, sd, u, c, steps = _row_inputs(y, n, eta, sd, u, log_w, steps)
    unif = np.ascontiguousarray(unif, dtype=float) if realised else None
    wmask, ks = np.ascontiguousarray(wmask, dtype=float), ks.astype(np.int64)
    none = np.zeros((1, 1, 1))

    def block(b: slice) -> None:
        _means(y, n, eta[b], sd[b], u, c, steps, unif[b] if realised else none, wmask, ks,
               bool(at_least), realised, exp_out[b], real_out[b])  # fmt: skip

    _over_draws(S, block)
    return exp_out, real_out
