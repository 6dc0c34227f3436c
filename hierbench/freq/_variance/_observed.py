"""The model-free cluster inflation of a paired difference: the one owner of the rule.

For each pair of objects (agents), over the tasks both have, the per-task differences of cell
means ``d_t`` of ``n`` tasks in clusters of sizes ``m_g`` (``M = sum m_g^2``), read as a
cluster part (variance ``a``) plus a task part (variance ``b``): the variance of their sum is
``a M + b n`` over the clusters and ``(a + b) n`` were every task its own cluster, and the
inflation is their ratio, ``1 + (m* - 1) ICC`` with ``m* = M / n`` and ``ICC = a / (a + b)``.

``a`` and ``b`` come from two sums of squares by the method of moments, with no fit: ``Q1 =
sum_g S_g^2`` (``S_g`` a cluster's sum of the differences less their mean) and ``Q2 =
sum_t e_t^2`` (each difference less the mean) have expectations

    E Q1 = a (M - 2 sum m_g^3 / n + M^2 / n^2) + b (n - M / n),
    E Q2 = a (n - M / n) + b (n - 1),

pooled over the pairs with weights ``1 / n^2`` (a pair's mean difference's scale). So the ratio's
numerator and denominator are each unbiased. The plain ratio ``Q1 / Q2`` (no small-sample
correction) has expectation ``(n - m*) / (n - 1)`` with no cluster effect: 0.74 on SWE-bench's 12
repositories (m* = 129 of 500 tasks), not 1; audit W. Clusters of one task give exactly 1. The
demo's plan and the D-study's ``cluster_inflation`` attr read it here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._base import as_rng

__all__: list[str] = []


def _pair_cluster_sums(rate: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair (rows, in ``pair_variances``' order) and cluster: the differences' sum, sum of squares, count."""
    g = np.asarray(codes, dtype=np.intp)
    i, j = np.triu_indices(rate.shape[0], 1)
    d = rate[i] - rate[j]
    ok = np.isfinite(d)
    d = np.where(ok, d, 0.0)
    z = np.zeros((g.size, int(g.max()) + 1 if g.size else 0))
    z[np.arange(g.size), g] = 1.0
    return d @ z, (d**2) @ z, ok.astype(float) @ z


def _moment_ratio(s: np.ndarray, q: np.ndarray, m: np.ndarray) -> float | None:
    """The method-of-moments ratio from per pair x cluster sums ``s``, squares ``q`` and counts ``m``."""
    n = m.sum(1)
    use = n >= 2
    s, q, m, n = s[use], q[use], m[use], n[use]
    if not n.size:
        return None
    mean = s.sum(1) / n
    q1 = ((s - m * mean[:, None]) ** 2).sum(1)
    q2 = q.sum(1) - n * mean**2
    w = 1.0 / n**2
    big_m, m3 = (m**2).sum(1), (m**3).sum(1)
    a1, b1 = big_m - 2 * m3 / n + big_m**2 / n**2, n - big_m / n
    b2 = n - 1
    lhs = np.array([[w @ a1, w @ b1], [w @ b1, w @ b2]])
    rhs = np.array([w @ q1, w @ q2])
    den_w = w @ n
    if np.allclose(big_m, n):  # every cluster one task: the two sums are one, the ratio 1
        return 1.0 if rhs[1] > 0 else None
    if np.linalg.cond(lhs) > 1e12:  # one cluster (M = n^2): its part and the tasks' cannot be told apart
        return None
    a, b = np.linalg.solve(lhs, rhs)
    den = (a + b) * den_w
    return float((a * (w @ big_m) + b * den_w) / den) if den > 1e-12 * max(abs(rhs[1]), 1e-300) else None


def observed_cluster_ratio(
    rate: np.ndarray, codes: np.ndarray, prob: float | None = None, n_resamples: int = 400, rng: Any = 0
) -> float | tuple[float, float, float] | None:
    """The clusters' inflation of the variance of pairs' mean differences, by the method of moments.

    ``rate``: (objects, tasks) cell means, NaN where a cell was not run; ``codes``: each
    task's cluster (integers). ``1 + (m* - 1) ICC`` with the pairs' cluster and task
    variances estimated from their sums of squares (module docstring), unbiased in numerator
    and denominator; it can fall below 1 by chance (or where a cluster's tasks pull apart).
    None when no pair has two shared tasks with any spread, or with a single cluster. With ``prob``: ``(ratio, low,
    high)``, its cluster-bootstrap percentile range at that level (``cluster_ratio_range``).

    Examples
    --------
    >>> rate = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    >>> observed_cluster_ratio(rate, np.array([0, 0, 1, 1]))  # the differences move with the clusters: m* = 2
    2.0
    """
    ratio = _moment_ratio(*_pair_cluster_sums(rate, codes))
    if prob is None or ratio is None:
        return ratio
    return (ratio, *cluster_ratio_range(rate, codes, prob, n_resamples, rng)[:2])


def cluster_ratio_range(
    rate: np.ndarray, codes: np.ndarray, prob: float = 0.9, n_resamples: int = 400, rng: Any = 0
) -> tuple[float, float, int]:
    """A cluster-bootstrap percentile range of :func:`observed_cluster_ratio`, at level ``prob``.

    Whole clusters are drawn with replacement (each draw a cluster of its own) and the ratio
    recomputed, ``n_resamples`` times (``rng``: a seed or a Generator). Returns (low, high, resamples
    with a ratio); with few clusters the range is itself rough (a bootstrap over few units
    covers less than its level).
    """
    s, q, m = _pair_cluster_sums(rate, codes)
    m_keep = m.sum(0) > 0
    s, q, m = s[:, m_keep], q[:, m_keep], m[:, m_keep]
    rng = as_rng(rng)
    got = []
    for _ in range(n_resamples):
        k = rng.integers(0, s.shape[1], s.shape[1])
        r = _moment_ratio(s[:, k], q[:, k], m[:, k])
        if r is not None:
            got.append(r)
    if not got:
        return float("nan"), float("nan"), 0
    lo, hi = np.quantile(got, [(1 - prob) / 2, (1 + prob) / 2])
    return float(lo), float(hi), len(got)


def long_cluster_ratio(y: np.ndarray, codes: dict[str, np.ndarray], a: str, t: str, c: str) -> float | None:
    """``observed_cluster_ratio`` of long data: scores ``y`` and facet codes (``a`` objects, ``t`` in ``c``)."""
    return observed_cluster_ratio(*cell_means(y, codes, a, [c, t]))


def cell_means(y: np.ndarray, codes: dict[str, np.ndarray], a: str, units: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(objects, units) cell means of long scores (NaN where none) and the units' first-facet codes.

    A unit is a distinct combination of the facets ``units`` (a task, or a task in its cluster).
    """
    key = np.zeros(y.size, dtype=np.int64)
    for f in units:
        key = key * (int(codes[f].max()) + 1) + codes[f]
    unit, u = np.unique(key, return_inverse=True)
    n_a = int(codes[a].max()) + 1
    cell = codes[a] * unit.size + u
    tot = np.bincount(cell, weights=y, minlength=n_a * unit.size)
    cnt = np.bincount(cell, minlength=n_a * unit.size)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(cnt > 0, tot / np.maximum(cnt, 1), np.nan).reshape(n_a, unit.size)
    first = unit // int(np.prod([int(codes[f].max()) + 1 for f in units[1:]]))
    return rate, first


def pair_variances(rate: np.ndarray) -> np.ndarray:
    """Each pair's sample variance (ddof 1) of its per-task differences over shared tasks (>= 3; else NaN)."""
    out = []
    for i in range(rate.shape[0]):
        for j in range(i + 1, rate.shape[0]):
            d = rate[i] - rate[j]
            d = d[np.isfinite(d)]
            out.append(d.var(ddof=1) if d.size >= 3 else np.nan)
    return np.asarray(out, dtype=float)
