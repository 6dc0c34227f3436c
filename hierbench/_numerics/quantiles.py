"""Quantiles of samples that hold infinite values: limits entered where a statistic has no finite value.

A bootstrap replicate or a posterior draw in which a statistic has no finite
value, but whose direction is known (an ability above every other's, a time
horizon beyond every task length), enters its sample at ``+inf`` / ``-inf``
(or at an exact end such as 0) rather than being dropped: dropping it would
condition the interval on the replicate looking like the data. The linear
quantile of such a sample must then treat the infinities exactly, which
numpy's interpolation does not (``-inf`` beside ``+inf`` gives NaN).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["limit_quantiles", "quantile_ext"]


def quantile_ext(x: np.ndarray, q: float) -> np.ndarray:
    """``np.quantile(x, q, axis=0)`` (linear) of values that may be +-inf (no NaN).

    An interpolation that puts weight on an infinite neighbour is that infinity
    (numpy's own would give NaN for ``-inf`` beside ``+inf``, and round near
    huge sentinels).

    Examples
    --------
    >>> quantile_ext(np.array([[0.0], [1.0], [np.inf]]), 0.25).tolist()
    [0.5]
    >>> quantile_ext(np.array([[0.0], [np.inf]]), 0.5).tolist()  # numpy's: nan
    [inf]
    """
    return _sorted_quantile(np.sort(x, axis=0), q)


def _sorted_quantile(s: np.ndarray, q: float) -> np.ndarray:
    """:func:`quantile_ext` of ``s`` already sorted along axis 0 (one sort serves every ``q``)."""
    h = q * (s.shape[0] - 1)
    j = int(np.floor(h))
    t = h - j
    lo = s[j]
    if t == 0.0:
        return lo
    hi = s[min(j + 1, s.shape[0] - 1)]
    with np.errstate(invalid="ignore"):
        v = np.where(t >= 0.5, hi - (hi - lo) * (1.0 - t), lo + (hi - lo) * t)
    return np.where(np.isneginf(lo), -np.inf, np.where(np.isposinf(hi), np.inf, v))


def limit_quantiles(x: np.ndarray, qs: Sequence[float]) -> np.ndarray:
    """Linear quantiles along axis 0 of samples that may hold 0 and +-inf, NaN left out column by column.

    Each column (every index past axis 0) gets :func:`quantile_ext` of its
    non-NaN values; a column with none is NaN. Returns ``(len(qs), *x.shape[1:])``.

    Examples
    --------
    >>> x = np.array([[0.0, 1.0], [2.0, np.nan], [np.inf, 3.0], [4.0, np.nan]])
    >>> limit_quantiles(x, [0.5, 1.0]).tolist()
    [[3.0, 2.0], [inf, 3.0]]
    """
    x = np.asarray(x, dtype=float)
    flat = x.reshape(x.shape[0], int(np.prod(x.shape[1:], dtype=int)))
    out = np.full((len(qs), flat.shape[1]), np.nan)
    for j in range(flat.shape[1]):
        col = np.sort(flat[~np.isnan(flat[:, j]), j])
        if col.size:
            out[:, j] = [float(_sorted_quantile(col, q)) for q in qs]
    return out.reshape(len(qs), *x.shape[1:])
