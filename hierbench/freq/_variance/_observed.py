"""The model-free cluster inflation of a paired difference: the one owner of the rule.

For each pair of objects (agents), over the tasks both have, with ``e`` the per-task
differences of cell means less their mean and ``n`` their number: the cluster-robust
variance of the mean ``sum_g (sum_{t in g} e_t)^2 / n^2`` against the independent-task one
``sum_t e_t^2 / n^2`` (neither with small-sample corrections, so clusters of one task give
exactly 1); the ratio of their sums over the pairs. The demo's plan and the D-study's
``cluster_inflation`` attr read it here.
"""

from __future__ import annotations

import numpy as np

__all__: list[str] = []


def observed_cluster_ratio(rate: np.ndarray, codes: np.ndarray) -> float | None:
    """Cluster-robust / independent-task variance of pairs' mean differences, summed over pairs.

    ``rate``: (objects, tasks) cell means, NaN where a cell was not run; ``codes``: each
    task's cluster (integers). None when no pair has two shared tasks with any spread.

    Examples
    --------
    >>> rate = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    >>> observed_cluster_ratio(rate, np.array([0, 0, 1, 1]))  # the differences move with the clusters
    2.0
    """
    g = np.asarray(codes, dtype=np.intp)
    v_cl = v_iid = 0.0
    for i in range(rate.shape[0]):
        for j in range(i + 1, rate.shape[0]):
            d = rate[i] - rate[j]
            ok = np.isfinite(d)
            if ok.sum() < 2:
                continue
            e = d[ok] - d[ok].mean()
            v_cl += float(np.sum(np.bincount(g[ok], weights=e) ** 2)) / ok.sum() ** 2
            v_iid += float(np.sum(e**2)) / ok.sum() ** 2
    return float(v_cl / v_iid) if v_iid > 0 else None


def long_cluster_ratio(y: np.ndarray, codes: dict[str, np.ndarray], a: str, t: str, c: str) -> float | None:
    """:func:`observed_cluster_ratio` of long data: scores ``y`` and facet codes (``a`` objects, ``t`` in ``c``)."""
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
