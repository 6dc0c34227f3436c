"""Max-T adjustment of a family of comparisons, from the joint null law of their statistics.

Holm and Bonferroni bound the family-wise error as if nothing tied the ``m``
comparisons together, so their first threshold is ``alpha / m`` whatever the
comparisons share. The 300 pairs of 25 agents are 300 contrasts of 25 means,
tied tightly; with a heavy-tailed reference (a cluster-robust t with 3.3 df,
say) the Bonferroni threshold runs away (``|t| > 18.9``). The max-T procedure
(Westfall and Young 1993; Hothorn, Bretz and Westfall 2008, the R package
``multcomp``) takes instead the law of the largest ``|T|`` of the family under
the null, so the penalty grows with how many *different* things the family
says, not with how many rows it has:

* **single step**: ``p_k = P(max_l |T_l| >= |t_k|)``; with ``c`` the
  ``1 - alpha`` quantile of ``max_l |T_l|``, the simultaneous interval
  ``estimate +- c se`` excludes 0 exactly for the pairs with ``p_k < alpha``;
* **free step-down**: the same with successive maxima, for each comparison
  over the comparisons not yet rejected (ordered by ``|t|``), then made
  monotone. Never less powerful than the single step; no matching interval.

Two joint laws of the statistics ``T_k = mean_k / se_k`` (CR2 cluster-robust
``se_k``: :func:`cr2_scores`):

* **shared sign flips** (:func:`signflip_maxt`): one random sign per unit (a
  task, or a cluster of tasks) shared by every comparison, each comparison's
  mean re-studentized under every pattern; all ``2^(n - 1)`` patterns when
  ``n <= 16`` units carry a difference (12 clusters: 2,048, exact), else Monte
  Carlo. Its smallest p-value is ``2^(1 - n)`` (or ``1 / (B + 1)``) whatever
  ``m``. Validity: under a comparison's null the signs of its units'
  differences are fair coins, so each comparison's own law is exact; the shared
  signs give the exact joint law when the null comparisons' unit differences
  are jointly symmetric (agents' scores in a unit symmetric about a common
  centre), and otherwise they are the Rademacher wild (cluster) bootstrap of
  the studentized statistics, whose covariance is the cluster-robust one of
  the comparisons: valid as units grow, and checked by simulation at
  SWE-bench's shape (12 clusters of 1 to 231 binary tasks). A comparison's
  re-studentized statistics use its own data only, so the law of the null
  comparisons does not depend on the others (subset pivotality): the
  step-down controls the family-wise error in the strong sense.
* **multivariate t** (:func:`mvt_maxt`): ``T ~ t_m(df, R)`` with ``R`` the
  correlation of the comparisons from the same cluster-robust covariance that
  gives their SEs (with all tasks shared, ``C V C'`` for ``V`` the CR2
  covariance of the agents' means) and a denominator ``sqrt(chi2_df / df)``
  shared by every comparison (one uniform turned into each comparison's
  ``chi2_df`` quantile when the df differ). Exact for a pooled-variance linear
  model (Dunnett, Tukey); with the estimate's rank below the contrasts' (fewer
  units than agents: 12 clusters give rank 11 for 24 contrasts) or few df it
  is too optimistic (:func:`mvt_reliable`).

Monte Carlo p-values are ``(1 + hits) / (B + 1)`` with standard error
``sqrt(p (1 - p) / B)``; :func:`maxt_draws` chooses ``B`` so that error is at
most 0.0015 at ``p = alpha``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
from scipy import special

from .._kernels import one_blas_thread
from .._kernels import ratio
from ._signflip import _dyadic_sums

__all__ = ["cr2_scores", "maxt_draws", "mvt_maxt", "mvt_reliable", "signflip_maxt"]

#: an infinite |t| as the null strips hold it (``numpy.nan_to_num``): the largest float
_BIG = np.finfo(float).max

#: enumerate the sign patterns up to this many units with a difference (2^15 patterns)
EXACT_UNITS = 16
#: the Monte Carlo standard error of an adjusted p-value at p = alpha is at most this
MC_ERROR = 0.0015
_MIN_DRAWS = 9999
_CHUNK_ELEMS = 2_000_000
#: elements of a block handled at once after its products (256 KB: a strip's temporaries stay in
#: cache; measured at 49,770 pairs, 40 patterns a block: 20 ms a block in strips of 512 pairs, 87
#: ms in one piece)
_STRIP_ELEMS = 2**15


def _strip(rows: int) -> int:
    """Comparisons per strip of a block of ``rows`` patterns (at least 256: short rows cost more)."""
    return max(256, _STRIP_ELEMS // max(rows, 1))
#: the multivariate t needs at least this many df in every comparison
MIN_DF = 30
#: distinct df values turned into chi-square quantiles; more are rounded down on a 2% grid
_MAX_DISTINCT_DF = 16


def maxt_draws(alpha: float) -> int:
    """Null draws for a Monte Carlo max-T p-value: its error at ``p = alpha`` at most 0.0015.

    ``B >= alpha (1 - alpha) / 0.0015^2`` (and ``B >= 9999``), whatever the family's size.

    Examples
    --------
    >>> maxt_draws(0.05), maxt_draws(0.01)
    (21112, 9999)
    """
    return max(_MIN_DRAWS, math.ceil(alpha * (1 - alpha) / MC_ERROR**2))


def cr2_scores(units: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each comparison's mean, CR2 standard error and score matrix from its unit sums.

    Parameters
    ----------
    units, counts : numpy.ndarray
        ``(n_units, n_comparisons)``: the sum of a comparison's per-task
        differences in each unit (task or cluster), and how many of its tasks
        the unit holds (0: none).

    Returns
    -------
    (mean, se, scores)
        ``scores[g, k] = (1 - n_gk / N_k)^(-1/2) (a_gk - n_gk mean_k) / N_k``, so
        ``se_k^2 = sum_g scores[g, k]^2`` is the bias-reduced CR2 variance of
        ``mean_k`` (:func:`hierbench.freq._kernels.cr2_mean_se`) and
        ``scores.T @ scores`` the cluster-robust covariance of the means. NaN for
        a comparison with fewer than 2 units.

    Examples
    --------
    >>> a = np.array([[1.0], [3.0]]); n = np.array([[2.0], [2.0]])
    >>> [round(float(v[0]), 4) for v in cr2_scores(a, n)[:2]]
    [1.0, 0.5]
    """
    units = np.asarray(units, dtype=float)
    counts = np.asarray(counts, dtype=float)
    N = counts.sum(0)
    ok = np.count_nonzero(counts, axis=0) >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = ratio(units.sum(0), N)
        w = np.where(counts > 0, 1.0 / (1.0 - counts / N), 0.0)
        scores = np.sqrt(w) * (units - counts * mean) / N
    scores[:, ~ok] = np.nan
    se = np.sqrt((scores**2).sum(0))
    return np.where(ok, mean, np.nan), se, scores


# --------------------------------------------------------------------------- adjustment


def _adjust(obs: np.ndarray, chunks: Iterator, plus: int, ordered: bool = False) -> dict:
    """Single-step and free step-down adjusted p-values of ``obs`` from null draws of ``|T|``.

    ``chunks`` yields ``(b, P)`` blocks of null ``|T*|`` (NaN counts as 0; the blocks are
    changed in place), or with ``ordered`` one iterable a block of ``(w, b)`` strips that
    run through the comparisons from the smallest observed ``|t|`` up, with no NaN (changed
    in place too). ``plus`` is 1 for simulated draws (``p = (1 + hits) / (1 + B)``) and 0
    when the rows already hold the observed pattern (sign flips). The single step needs only
    each pattern's maximum, the step-down's last successive maximum: its hits are counted
    once, on the sorted maxima, after the last block.
    """
    P = obs.size
    order = np.argsort(-obs, kind="stable")
    rev = order[::-1]
    thr = obs - 1e-9 * np.maximum(1.0, np.abs(obs))
    thr_r = thr[rev]
    hits_r = np.zeros(P, dtype=np.int64)  # step-down hits, comparisons from the smallest |t| up
    maxima = []
    n_rows = 0
    for block in chunks:
        if not ordered:  # a comparison's null |t| a row, from the smallest observed |t| up
            block = _row_strips(np.nan_to_num(np.ascontiguousarray(block.T), copy=False, nan=0.0)[rev])
        # successive maxima strip by strip, in place (a maximum is exact, so carrying the
        # last one over gives the one accumulation, and the last one is the pattern's maximum)
        carry, c = None, 0
        for succ in block:
            carry = np.full(succ.shape[1], -np.inf) if carry is None else carry
            w = succ.shape[0]
            np.maximum.accumulate(succ, axis=0, out=succ)
            np.maximum(succ, carry, out=succ)
            carry = succ[-1].copy()
            hits_r[c : c + w] += np.count_nonzero(succ >= thr_r[c : c + w, None], axis=1)
            c += w
        maxima.append(carry)
        n_rows += carry.size
    hits_sd = np.empty(P, dtype=np.int64)
    hits_sd[rev] = hits_r
    mx = np.sort(np.concatenate(maxima))
    hits = mx.size - np.searchsorted(mx, thr, side="left")  # rows whose maximum reaches |t| - tol
    p = (plus + hits) / (plus + n_rows)
    p_sd = np.empty(P)
    p_sd[order] = np.maximum.accumulate((plus + hits_sd[order]) / (plus + n_rows))
    return {"p": p, "p_stepdown": p_sd, "maxima": mx, "n_rows": n_rows}


def _row_strips(rows: np.ndarray) -> Iterator[np.ndarray]:
    """``rows`` (comparisons x patterns) in strips of :func:`_strip` comparisons (views)."""
    width = _strip(rows.shape[1])
    return (rows[c : c + width] for c in range(0, rows.shape[0], width))


def _critical(maxima: np.ndarray, alpha: float, plus: int) -> float:
    """The ``c`` with ``|t| > c`` exactly when the single-step ``p < alpha``.

    ``p < alpha`` means fewer than ``h = alpha (plus + n) - plus`` maxima reach ``|t|``,
    i.e. the ``ceil(h)``-th largest maximum is below ``|t|``.
    """
    h = alpha * (plus + maxima.size) - plus
    k = math.ceil(h - 1e-12)
    if k < 1:
        return np.inf
    return float(np.sort(maxima)[::-1][k - 1])


def _finish(
    obs: np.ndarray, chunks: Iterator, alpha: float, plus: int, n_draws: int, ordered: bool = False
) -> dict:
    """Adjusted p-values, their Monte Carlo errors (0 when exact) and the critical value.

    From the null blocks ``chunks`` of :func:`_adjust` (``ordered`` as there); ``n_patterns``
    counts their rows.
    """
    adj = _adjust(obs, chunks, plus, ordered)
    c = _critical(adj["maxima"], alpha, plus)
    out = {"t": obs, "p": adj["p"], "p_stepdown": adj["p_stepdown"], "crit": c, "n_patterns": adj["n_rows"]}
    for key in ("p", "p_stepdown"):
        out[key + "_mcse"] = (
            np.sqrt(out[key] * (1 - out[key]) / n_draws) if n_draws else np.zeros(obs.size)
        )
    return out


# --------------------------------------------------------------------------- sign flips


def _studentized(signs: np.ndarray, units: np.ndarray, parts: dict, pos: np.ndarray | None = None) -> np.ndarray:
    """``|mean* / se*|`` of every comparison under each sign pattern (rows of ``signs``).

    With the cluster sums flipped to ``s_g a_g`` the CR2 variance is
    ``sum_g w_g (s_g a_g - n_g m*)^2 / N^2
    = (sum w a^2 - 2 m* sum_g s_g w_g n_g a_g + m*^2 sum w n^2) / N^2``.
    The products are one BLAS call per block (patterns x comparisons, 16 MB); the rest runs
    in strips of ``_strip`` comparisons, in place, so a strip's temporaries stay in cache
    (the elementwise steps are the formula's, in its order: each value is rounded as before).

    Returns ``(patterns, comparisons)``; with ``pos`` (each comparison's row, from the
    smallest observed ``|t|`` up) ``(comparisons, patterns)`` in that order, NaN made 0 and
    infinity the largest float (``numpy.nan_to_num``), as :func:`_adjust` reads it with
    ``ordered``: each strip is written to its rows while in cache.
    """
    m = signs @ units
    # with tasks as units w is one number per comparison and n is 0 or 1: the middle sum is w N m*
    cross_all = signs @ parts["wna"] if parts["wna"] is not None else None
    out = np.empty(m.shape[::-1])  # (comparisons, patterns): _adjust reads a comparison's row at once
    width = _strip(m.shape[0])
    for c in range(0, m.shape[1], width):
        s = slice(c, c + width)
        t = _t_strip(m[:, s], None if cross_all is None else cross_all[:, s], parts, s)
        if pos is None:
            out[s] = t.T
            continue
        if not np.isfinite(t.max()):  # |t| >= 0: only a NaN or an infinity makes the maximum so
            np.nan_to_num(t, copy=False, nan=0.0)
        out[pos[s]] = t.T
    return out.T if pos is None else out


def _t_strip(ms: np.ndarray, cross: np.ndarray | None, parts: dict, s: slice) -> np.ndarray:
    """:func:`_studentized` on one strip ``s`` of the comparisons (``ms``, ``cross`` changed in place)."""
    N, wa2, wn2 = parts["N"][s], parts["wa2"][s], parts["wn2"][s]
    ms /= N
    cross = np.multiply(parts["w"][s] * N, ms) if cross is None else cross
    v = np.multiply(2, ms)
    v *= cross
    np.subtract(wa2, v, out=v)
    np.multiply(ms, ms, out=cross)
    cross *= wn2
    v += cross
    v /= N**2
    flat = v <= 1e-12 * wa2 / N**2
    any_flat = bool(flat.any())
    if any_flat:
        v[flat] = 1.0
    t = np.abs(ms, out=cross)
    with np.errstate(divide="ignore", invalid="ignore"):
        t /= np.sqrt(v, out=v)
    if any_flat:
        t[flat] = np.where(np.abs(ms[flat]) > 0, np.inf, 0.0)
    return t


def _ranked_strips(signs: np.ndarray, units_r: np.ndarray, parts_r: dict) -> Iterator[np.ndarray]:
    """:func:`_studentized` strip by strip with the comparisons already in rank order.

    For units whose signed sums are exact (``_dyadic_sums``; tasks as units, so
    ``parts_r["wna"]`` is None): each strip's product is formed on its own, in cache, and the
    strip's ``|t|`` (NaN made 0, infinity the largest float) is yielded as ``(w, b)``, ready
    for :func:`_adjust` with ``ordered``; no block-sized product, no scatter.
    """
    P = units_r.shape[1]
    width = _strip(signs.shape[0])
    for c in range(0, P, width):
        s = slice(c, c + width)
        t = _t_strip(signs @ units_r[:, s], None, parts_r, s)
        if not np.isfinite(t.max()):
            np.nan_to_num(t, copy=False, nan=0.0)
        yield t.T


def _sign_parts(units: np.ndarray, counts: np.ndarray, live: np.ndarray) -> dict:
    """The pattern-free pieces of :func:`_studentized` (one per comparison; rows ``live``)."""
    N = counts.sum(0)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(counts > 0, 1.0 / (1.0 - counts / N), 0.0)
    parts = {"N": N, "wa2": (w * units**2).sum(0), "wn2": (w * counts**2).sum(0)}
    if counts.max(initial=0) <= 1:  # tasks as units
        parts.update(wna=None, w=w.max(0, initial=0.0))
    else:
        parts.update(wna=(w * counts * units)[live], w=None)
    return parts


def _sign_blocks(n: int, n_draws: int | None, gen: np.random.Generator, P: int):
    """Sign patterns: all ``2^(n-1)`` (first sign +1) or the identity and ``B`` random ones."""
    rows = max(1, _CHUNK_ELEMS // max(n, P, 1))
    if n <= EXACT_UNITS:
        total = 2 ** max(n - 1, 0)
        for start in range(0, total, rows):
            idx = np.arange(start, min(total, start + rows))
            bits = (idx[:, None] >> np.arange(max(n - 1, 0))[None, :]) & 1
            yield np.hstack([np.ones((idx.size, 1)), 1.0 - 2.0 * bits])[:, :n]
        return
    yield np.ones((1, n))
    done = 0
    while done < n_draws:
        b = min(rows, n_draws - done)
        yield gen.integers(0, 2, size=(b, n)).astype(float) * 2 - 1
        done += b


def signflip_maxt(
    units: np.ndarray,
    counts: np.ndarray,
    *,
    alpha: float,
    gen: np.random.Generator,
    n_draws: int | None = None,
) -> dict:
    """Max-T adjusted p-values from sign flips shared by the comparisons (see the module notes).

    Parameters
    ----------
    units, counts : numpy.ndarray
        As in :func:`cr2_scores`; only comparisons with a finite, positive SE
        should be passed.
    alpha : float
        Family-wise level of the critical value.
    gen : numpy.random.Generator
        For the Monte Carlo patterns (unused when enumerated).
    n_draws : int or None
        Monte Carlo patterns; None: :func:`maxt_draws`.

    Returns
    -------
    dict
        ``t`` (observed ``|t|``), ``p``, ``p_stepdown`` and their ``*_mcse``,
        ``crit`` (on the ``|t|`` scale), ``exact``, ``n_patterns`` (null rows, the
        observed pattern included), ``n_draws`` (random ones; 0 when exact),
        ``n_units`` (units with a difference).

    Examples
    --------
    >>> u = np.array([[1.0, 0.0], [0.0, 2.0], [1.5, 1.0], [0.5, 0.5], [2.0, 1.0], [1.0, 1.5]])
    >>> out = signflip_maxt(u, np.ones_like(u), alpha=0.05, gen=np.random.default_rng(0))
    >>> out["exact"], out["n_patterns"], float(out["p"].min()) >= 1 / 32
    (True, 32, True)
    """
    units = np.asarray(units, dtype=float)
    counts = np.asarray(counts, dtype=float)
    live = np.flatnonzero(np.any(units != 0, axis=1))
    parts = _sign_parts(units, counts, live)
    sub = units[live]
    t_obs = _studentized(np.ones((1, live.size)), sub, parts)[0]
    # an infinite |t| (SE 0: the same nonzero difference on every unit) is the largest float,
    # as the null strips hold it, so the patterns that reach it count as reaching it
    obs = np.nan_to_num(t_obs, nan=0.0, posinf=_BIG)
    exact = live.size <= EXACT_UNITS
    B = 0 if exact else int(n_draws if n_draws is not None else maxt_draws(alpha))
    rev = np.argsort(-obs, kind="stable")[::-1]  # the comparisons from the smallest |t| up
    signs = _sign_blocks(live.size, B, gen, units.shape[1])
    # binary scores, or means of 1, 2, 4, 8 runs: a pattern's sums are exact in any order, so
    # BLAS may form them strip by strip, on the comparisons already in rank order
    if parts["wna"] is None and _dyadic_sums(sub, 2.0**52):
        for row in sub:  # into rank order in place, a row at a time (`sub` is this call's copy)
            row[:] = row[rev]
        parts_r = {k: None if v is None else v[rev] for k, v in parts.items()}
        # a strip's product is small: BLAS threads only wait on each other (on a busy machine, ms)
        with one_blas_thread():
            out = _finish(obs, (_ranked_strips(s, sub, parts_r) for s in signs), alpha, 0, B, ordered=True)
    else:
        pos = np.empty(obs.size, dtype=np.intp)  # each comparison's row in rank order
        pos[rev] = np.arange(obs.size)
        out = _finish(obs, (_row_strips(_studentized(s, sub, parts, pos)) for s in signs), alpha, 0, B, ordered=True)
    out.update(exact=exact, n_draws=B, n_units=int(live.size), t=t_obs)
    if out["crit"] >= _BIG:  # as many patterns reach an infinite |t| as the level allows: c is infinite
        out["crit"] = np.inf
    return out


# --------------------------------------------------------------------------- multivariate t


def _factor(scores: np.ndarray) -> np.ndarray:
    """``F`` (rank x P) with ``F.T @ F`` the correlation of the comparisons."""
    se = np.sqrt((scores**2).sum(0))
    L = scores / se
    _, s, vt = np.linalg.svd(L, full_matrices=False)
    keep = s > 1e-10 * s.max(initial=0.0)
    return s[keep, None] * vt[keep]


def _df_levels(df: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct df values (rounded down on a 2% grid when there are many) and each one's index."""
    levels, idx = np.unique(df, return_inverse=True)
    if levels.size > _MAX_DISTINCT_DF:
        grid = 1.02 ** np.floor(np.log(df) / np.log(1.02))
        levels, idx = np.unique(np.minimum(grid, df), return_inverse=True)
    return levels, idx


def mvt_reliable(scores: np.ndarray, df: np.ndarray, contrast_rank: int) -> str | None:
    """Why the multivariate t is too optimistic here (None when it is not).

    Its correlation is an estimate treated as known and its denominator is one
    chi-square shared by every comparison; both fail when the covariance is
    estimated from fewer units than the contrasts span or with few df.
    """
    rank = _factor(scores).shape[0]
    if rank < contrast_rank:
        return (
            f"the correlation of the comparisons is estimated with rank {rank} from "
            f"{scores.shape[0]} units, below the {contrast_rank} the contrasts span"
        )
    if np.nanmin(df) < MIN_DF:
        return f"the comparisons have {np.nanmin(df):.3g} df (fewer than {MIN_DF})"
    return None


def mvt_maxt(
    t: np.ndarray,
    scores: np.ndarray,
    df: np.ndarray,
    *,
    alpha: float,
    gen: np.random.Generator,
    n_draws: int | None = None,
) -> dict:
    """Max-T adjusted p-values from the multivariate t (see the module notes).

    Parameters
    ----------
    t : numpy.ndarray
        Observed statistics, one per comparison.
    scores : numpy.ndarray
        ``(n_units, P)`` with ``scores.T @ scores`` the covariance of the
        comparisons (:func:`cr2_scores`); any factor of the covariance, or of
        the correlation, will do (e.g. ``numpy.linalg.cholesky(R).T``).
    df : numpy.ndarray
        Degrees of freedom of each comparison (``inf``: normal).
    alpha, gen, n_draws
        As in :func:`signflip_maxt`.

    Returns
    -------
    dict
        As :func:`signflip_maxt` (``exact`` False; ``n_patterns`` and ``n_draws`` the draws,
        ``n_units`` the rows of ``scores``).

    Examples
    --------
    >>> out = mvt_maxt(np.array([3.0, 1.0]), np.eye(2), np.array([np.inf, np.inf]),
    ...                alpha=0.05, gen=np.random.default_rng(0), n_draws=20000)
    >>> round(out["crit"], 1)   # Sidak: norm.ppf((1 + 0.95 ** 0.5) / 2) = 2.236
    2.2
    """
    obs = np.abs(np.asarray(t, dtype=float))
    F = _factor(np.asarray(scores, dtype=float))
    df = np.asarray(df, dtype=float)
    levels, idx = _df_levels(df)
    B = int(n_draws if n_draws is not None else maxt_draws(alpha))
    rows = max(1, _CHUNK_ELEMS // max(F.shape[1], 1))

    def blocks():
        done = 0
        while done < B:
            b = min(rows, B - done)
            z = np.abs(gen.standard_normal((b, F.shape[0])) @ F)
            u = gen.uniform(size=b)
            scale = np.ones((b, levels.size))
            fin = np.isfinite(levels)
            scale[:, fin] = np.sqrt(special.chdtri(levels[fin], 1.0 - u[:, None]) / levels[fin])
            yield z / scale[:, idx]
            done += b

    out = _finish(obs, blocks(), alpha, 1, B)
    out.update(exact=False, n_draws=B, n_units=int(scores.shape[0]))
    return out
