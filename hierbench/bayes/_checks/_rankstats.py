"""Rank-normalised R-hat and ESS of every posterior element at once.

The statistics of Vehtari, Gelman, Simpson, Carpenter and Bürkner (2021), as
arviz-stats computes them element by element (about 1 ms per element and
statistic: 8 s for the 1,500 elements of a 12 x 500 x 10 crossed fit), here
vectorised over elements and computed in blocks of elements (see
:data:`BLOCK_VALUES`), on threads where the caller has cores to spare. The
default fit's stopping rule and
:func:`~hierbench.bayes.compute_diagnostics` both read them, so the rule that
stops the sampler is the rule that judges the fit;
tests/test_bayes_adaptive.py holds them to arviz-stats' values.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["elements", "rank_diagnostics", "tail_ess"]

#: the values (elements x chains x draws) per block the statistics are computed in. Over all
#: elements at once the temporaries (ranks, FFTs) spill out of the CPU's caches: SWE-bench by
#: repository's crossed fit (1,756 elements x 4 x 1,000 draws) took 5.1 s in one piece and 2.3 s
#: in blocks of 32-64 elements, 1.2 s on two threads. The blocks follow the array's shape alone:
#: the numbers are the same whatever the threads, and those of one block to rounding (a test).
BLOCK_VALUES = 2**17


def _in_blocks(fn: Callable[[np.ndarray, Any], Any], x: np.ndarray, extra: np.ndarray | None, workers: int) -> list:
    """``fn(block, extra's block)`` over blocks of ``x``'s elements (first axis), on up to ``workers`` threads."""
    k, c, n = x.shape
    size = max(1, BLOCK_VALUES // max(c * n, 1))
    starts = range(0, max(k, 1), size)  # no elements: one empty block
    pieces = [(x[i : i + size], None if extra is None else extra[i : i + size]) for i in starts]
    if workers <= 1 or len(pieces) == 1:
        return [fn(*p) for p in pieces]
    # numpy's sorts, FFTs and array arithmetic release the GIL: the blocks run side by side
    with ThreadPoolExecutor(min(int(workers), len(pieces))) as pool:
        return list(pool.map(lambda p: fn(*p), pieces))




def _ranks(v: np.ndarray) -> np.ndarray:
    """1-based ranks along the last axis (2-d ``v``), ties given their average rank (as scipy's rankdata)."""
    order = np.argsort(v, axis=-1)
    srt = np.take_along_axis(v, order, axis=-1)
    n = v.shape[-1]
    ranks = np.empty(v.shape)
    tied = (srt[:, 1:] == srt[:, :-1]).any(axis=1)
    # rows without ties (draws of a continuous parameter, nearly always): the sort order is the rank
    free = np.flatnonzero(~tied)
    if free.size:
        sub = np.empty((free.size, n))
        np.put_along_axis(sub, order[free], np.broadcast_to(np.arange(1.0, n + 1.0), sub.shape), axis=-1)
        ranks[free] = sub
    rows = np.flatnonzero(tied)
    if rows.size:
        ranks[rows] = _tied_ranks(srt[rows], order[rows])
    return ranks


def _tied_ranks(srt: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Average ranks of rows with ties, from their sorted values and sort order."""
    n = srt.shape[-1]
    pos = np.broadcast_to(np.arange(n), srt.shape)
    starts = np.ones(srt.shape, dtype=bool)
    starts[:, 1:] = srt[:, 1:] != srt[:, :-1]
    ends = np.ones(srt.shape, dtype=bool)
    ends[:, :-1] = starts[:, 1:]
    # each sorted value's run of equal values runs from `first` to `last`; its rank is their middle
    first = np.maximum.accumulate(np.where(starts, pos, 0), axis=-1)
    last = np.minimum.accumulate(np.where(ends, pos, n - 1)[:, ::-1], axis=-1)[:, ::-1]
    ranks = np.empty(srt.shape)
    np.put_along_axis(ranks, order, (first + last) / 2.0 + 1.0, axis=-1)
    return ranks


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Rank-normalised values of ``x`` (K, m, n) per element (Blom's offset 3/8), as arviz-stats.

    A rank is a whole or half number from 1 to ``m n``, so the normal quantile
    is looked up in a table of those ``2 m n`` values (the same numbers as
    computing it draw by draw, at a fraction of the cost).
    """
    from scipy import special

    k, m, n = x.shape
    r = _ranks(x.reshape(k, m * n))
    table = special.ndtri((np.arange(2 * m * n + 1) / 2.0 - 0.375) / (m * n - 0.75 + 1.0))
    return table[(2.0 * r).astype(np.intp)].reshape(k, m, n)


def _split(x: np.ndarray) -> np.ndarray:
    """Each chain of ``x`` (K, m, n) cut into its two halves (the middle draw of an odd n dropped)."""
    half = x.shape[2] // 2
    return np.concatenate([x[:, :, :half], x[:, :, x.shape[2] - half :]], axis=1)


def _rhat(z: np.ndarray) -> np.ndarray:
    n = z.shape[2]
    b = n * np.var(z.mean(axis=2), axis=1, ddof=1)
    w = np.var(z, axis=2, ddof=1).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):  # a constant element: NaN, as arviz-stats
        return np.sqrt((b / w + n - 1) / n)


def _geyer_tau(r: np.ndarray, n: int) -> np.ndarray:
    """Integrated autocorrelation time from ``r`` (K, n) with Geyer's initial monotone sequence."""
    k = r.shape[0]
    js = np.arange(1, n)
    js = js[2 * js - 1 < n - 3]
    if js.size == 0:
        return np.ones(k)
    rows = np.arange(k)
    s = r[:, 2 * js] + r[:, 2 * js + 1]  # (K, J) pair sums
    q0 = 1.0 + r[:, 1]
    bad = ~(s > 0)
    first_bad = np.where(bad.any(axis=1), bad.argmax(axis=1), js.size)
    big_j = np.where(q0 > 0, np.minimum(js.size, first_bad + 1), 0)  # iterations run
    pairs = np.hstack([q0[:, None], s])  # Q_0 .. Q_J
    run_min = np.minimum.accumulate(pairs, axis=1)
    total = np.where(np.arange(pairs.shape[1])[None] < big_j[:, None], run_min, 0.0).sum(axis=1)
    last_even = r[rows, 2 * np.maximum(big_j, 1)]
    keep = (big_j >= 1) & ((last_even > 0) | (pairs[rows, big_j] >= 0))
    tail = np.where(big_j == 0, 1.0, np.where(keep, last_even, 0.0))
    tail = np.where(2 * big_j < n, tail, 0.0)
    return -1.0 + 2.0 * total + tail


def _ess(x: np.ndarray) -> np.ndarray:
    """Effective sample size of every element of ``x`` (K elements, m chains, n draws)."""
    from scipy.fft import next_fast_len

    _, m, n = x.shape
    const = (x.max(axis=(1, 2)) - x.min(axis=(1, 2))) < np.finfo(float).resolution
    xc = x - x.mean(axis=2, keepdims=True)
    size = next_fast_len(2 * n)
    f = np.fft.rfft(xc, n=size, axis=2)
    acov = np.fft.irfft(f * np.conjugate(f), n=size, axis=2)[:, :, :n] / n
    mean_var = acov[:, :, 0].mean(axis=1) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus = var_plus + np.var(x.mean(axis=2), axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = 1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]
        tau = np.maximum(_geyer_tau(r, n), 1.0 / np.log10(m * n))
        ess = m * n / tau
    ess = np.where(np.isnan(r).any(axis=1), np.nan, ess)
    return np.where(const, float(m * n), ess)


def tail_ess(x: np.ndarray, *, workers: int = 1) -> np.ndarray:
    """Tail ESS of every element of ``x`` (elements, chains, draws), as :func:`rank_diagnostics` gives it.

    At the quantiles arviz-stats uses (``1 - p`` and ``p``, ``p`` its
    ``stats.ci_prob``); no ranks needed, so the cheapest of the statistics.
    ``workers``: the threads the blocks may run on.
    """
    return np.concatenate(_in_blocks(lambda b, _: _tail_block(b), x, None, workers))


def _tail_block(x: np.ndarray) -> np.ndarray:
    from arviz_base import rcParams

    k, c, n = x.shape
    p = float(rcParams["stats.ci_prob"])
    full = x.reshape(k, c * n)
    tail = [_ess(_split((x <= np.quantile(full, q, axis=1)[:, None, None]).astype(float)))
            for q in sorted((p, 1 - p))]  # fmt: skip
    return np.minimum(*tail)


def rank_diagnostics(x: np.ndarray, tail: np.ndarray | None = None, *, workers: int = 1) -> dict[str, np.ndarray]:
    """Rank R-hat, bulk and tail ESS and the ESS within chains of every element.

    ``x`` has shape (elements, chains, draws); ``tail``, if given, is
    :func:`tail_ess` of the same ``x``. The tail ESS is at the
    quantiles arviz-stats uses (``1 - p`` and ``p``, ``p`` its ``stats.ci_prob``).
    ``ess_within`` sums over chains each chain's own ESS, the smaller of its
    bulk and folded ESS: the Monte Carlo noise the element's R-hat (the larger
    of the bulk and the folded R-hat) would show if its chains agreed.
    ``workers``: the threads the blocks may run on.
    """
    blocks = _in_blocks(_rank_block, x, tail, workers)
    return {key: np.concatenate([b[key] for b in blocks]) for key in blocks[0]}


def _rank_block(x: np.ndarray, tail: np.ndarray | None) -> dict[str, np.ndarray]:
    k, c, n = x.shape
    sx = _split(x)
    z = _z_scale(sx)
    out = {"ess_bulk": _ess(z)}
    out["ess_tail"] = _tail_block(x) if tail is None else tail
    if c > 1:
        folded = np.abs(sx - np.median(sx.reshape(k, -1), axis=1)[:, None, None])
        out["r_hat"] = np.maximum(_rhat(z), _rhat(_z_scale(folded)))
    else:
        out["r_hat"] = np.full(k, np.nan)
    per_chain = _split(x.reshape(k * c, 1, n))  # each chain split alone
    folded = np.abs(per_chain - np.median(per_chain.reshape(k * c, -1), axis=1)[:, None, None])
    within = np.minimum(_ess(_z_scale(per_chain)), _ess(_z_scale(folded)))
    out["ess_within"] = within.reshape(k, c).sum(axis=1)
    return out


def elements(post: xr.Dataset) -> np.ndarray:
    """Every numeric posterior element as an array (elements, chains, draws), variables in order."""
    c, n = post.sizes["chain"], post.sizes["draw"]
    cols = [
        np.moveaxis(post[v].transpose("chain", "draw", ...).values.reshape(c, n, -1), 2, 0)
        for v in post.data_vars
        if np.issubdtype(post[v].dtype, np.number)
    ]
    return np.ascontiguousarray(np.concatenate(cols, axis=0), dtype=np.float64)
