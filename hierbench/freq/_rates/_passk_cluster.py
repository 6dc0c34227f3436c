"""The pass@k / pass^k interval when the tasks come in clusters (task families, repositories).

The estimate is still the mean of the per-task unbiased values over the ``N``
tasks a cell can use; only its uncertainty changes unit. Tasks of one cluster
succeed or fail together, so the clusters, not the tasks, are the independent
draws: the standard error is the bias-reduced cluster-robust (CR2) one of that
mean, ``se^2 = sum_g s_g^2 / (1 - n_g / N) / N^2`` with ``s_g`` cluster ``g``'s
sum of deviations from the mean, and its Bell-McCaffrey degrees of freedom
(:func:`hierbench.freq._kernels.cr2_mean_se`, the one compare_agents uses).
With equal cluster sizes that is CR1 (``G / (G - 1)``) with ``G - 1`` df. The
interval is the same logit-scale t interval as without clusters,
``logit(m) +- t_df * se / (m (1 - m))`` mapped back; every task its own cluster
gives the task-level interval exactly (``sd / sqrt(N)``, ``N - 1`` df).

Where the logit is infinite (every per-task value 0, or every one 1), few
tasks carry the mean (the task-level rule, ``hierbench._numerics.few_carry_side``,
calibrated by simulation) or the clusters' means are all equal (the CR2 SE is 0,
so the t interval would have zero width), the interval is the distribution-free bound for the
mean of independent values in [0, 1] taken over the **clusters**: with ``S_g``
the cluster sums and ``n_max`` the largest cluster, ``Y_g = S_g / n_max`` are
independent values in [0, 1] and the task mean is ``(G n_max / N) mean(Y)``,
so the upper end of :func:`hierbench._numerics.bounded_mean_bounds` of the
``Y_g``, scaled by ``G n_max / N`` and cut to [0, 1], holds whatever the law
inside a cluster; the lower end is the same of the failures ``n_g - S_g``,
mirrored. With equal clusters it is the task-level bound over ``G`` values;
with unequal ones wider, by up to ``G n_max / N`` (the task-level bound would
assume independent tasks). Where every value is 0 (or every one 1) the end
is instead the exact no-success bound over clusters of :func:`_none_upper`,
which needs no scaling.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._logit_t import even_clusters
from ._logit_t import flag_ladder
from ._logit_t import logit_t_bounds

__all__: list[str] = []


def cluster_interval(
    per_task: xr.DataArray, mean: xr.DataArray, codes: np.ndarray, prob: float, task_dim: str
) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray, xr.DataArray, xr.DataArray]:
    """``(se, lower, upper, ci_flag, df)`` per cell, clusters as the unit (module notes).

    The interval and the flags are the task path's (``_logit_t.logit_t_bounds``,
    ``_logit_t.flag_ladder``) with the CR2 standard error, its Bell-McCaffrey df and
    the bound over clusters.
    """
    from ..._numerics import few_carry_side
    from .._kernels import cr2_mean_se
    from .._kernels import exact_zero_spread

    y = per_task.transpose(..., task_dim)
    Y = np.asarray(y.values, dtype=float).reshape(-1, y.shape[-1])
    m = np.asarray(mean.transpose(*y.dims[:-1]).values, dtype=float).ravel()
    se, df, G = (np.full(len(Y), np.nan) for _ in range(3))
    n = np.isfinite(Y).sum(1)
    b_lo, b_hi, deff = np.full(len(Y), np.nan), np.full(len(Y), np.nan), np.full(len(Y), np.nan)
    for i, row in enumerate(Y):
        ok = np.isfinite(row)
        if not ok.any():
            G[i] = 0
            continue
        se[i], df[i], G[i] = cr2_mean_se(row[ok], codes[ok])
        deff[i] = cluster_deff(row[ok], se[i])
    df = np.where(G > 1, df, np.nan)  # Bell-McCaffrey's, where 2 or more clusters give one
    lo, hi = logit_t_bounds(m, se, df, prob)
    fin = np.isfinite(Y)  # every task one value (to rounding): the tasks' flag, not the clusters'
    top, low = np.where(fin, Y, -np.inf).max(1), np.where(fin, Y, np.inf).min(1)
    same = (exact_zero_spread(top - low, np.abs(np.where(fin, Y, 0.0)).max(1)) == 0) & fin.any(1)
    flag, bound = flag_ladder(
        m, se, n, few_carry_side(Y), n_clusters=G, even_clust=even_clusters(deff, G), same_tasks=same,
    )
    for i in np.flatnonzero(bound & (G > 0)):  # the bound only where it replaces the t interval
        ok = np.isfinite(Y[i])
        b_lo[i], b_hi[i] = _cluster_bound(Y[i][ok], codes[ok], prob)
    lo, hi = np.where(bound, b_lo, lo), np.where(bound, b_hi, hi)
    shape, dims = y.shape[:-1], y.dims[:-1]
    coords = {c: v for c, v in y.coords.items() if task_dim not in v.dims}
    out = [xr.DataArray(a.reshape(shape), dims=dims, coords=coords) for a in (se, lo, hi, flag, df)]
    out[3] = out[3].astype(object).rename("ci_flag")
    return tuple(x.transpose(*mean.dims) for x in out)


def _cluster_sums(y: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cluster: its size ``n_g``, the sum ``S_g`` of its values, and of their complements ``n_g - S_g``."""
    _, codes = np.unique(codes, return_inverse=True)
    n_g = np.bincount(codes).astype(float)
    S = np.bincount(codes, weights=y, minlength=n_g.size)
    return n_g, S, n_g - S


def cluster_deff(y: np.ndarray, se: float) -> float:
    """The design effect of the mean of ``y``: ``deff = se^2 / (s^2 / N)``, ``se`` its cluster-robust SE.

    ``s^2`` is the sample variance of the ``N`` values, so ``s^2 / N`` is the variance of their
    mean were the tasks independent; with every task its own cluster ``deff`` is 1 (the CR2 SE is
    then ``s / sqrt(N)``), whatever the cluster sizes. NaN where ``s^2`` is 0 or ``se`` is NaN.
    Its flag: ``_logit_t.even_clusters``.
    """
    n = y.size
    var = float(y.var(ddof=1)) if n > 1 else np.nan
    return float(se**2 * n / var) if var > 0 else np.nan


def _cluster_bound(y: np.ndarray, codes: np.ndarray, prob: float) -> tuple[float, float]:
    """The distribution-free bound for the mean of ``y`` over its clusters (module notes): ``(lower, upper)``."""
    from ..._numerics import bounded_mean_bounds

    n_g, S, C = _cluster_sums(y, codes)
    G, N, n_max = n_g.size, float(n_g.sum()), float(n_g.max())
    # each end from its own side: the successes' sums for the upper, the failures' for the lower
    # (their mirror), so an all-1 cell gets the mirror of an all-0 one
    _, up = bounded_mean_bounds(np.array([S.sum(), C.sum()]) / n_max, np.array([G, G]), prob)
    scale = G * n_max / N
    up = np.minimum(1.0, up * scale)
    w, a2 = n_g / N, (1.0 - prob) / 2.0
    if S.sum() == 0:  # every value 0: the no-success bound over clusters, tighter than the scaled one
        up[0] = _none_upper(w, a2)
    if C.sum() == 0:
        up[1] = _none_upper(w, a2)
    return float(max(0.0, 1.0 - up[1])), float(up[0])


def _none_upper(w: np.ndarray, a2: float) -> float:
    """The largest task mean ``v = sum_g w_g mu_g`` under which no success at all has chance ``>= a2``.

    Every value 0 means every cluster sum is 0, of chance ``prod_g P(S_g = 0) <= prod_g (1 - mu_g)``
    (a value in [0, 1] with mean ``mu`` is 0 with chance at most ``1 - mu``). The largest product
    with ``sum_g w_g mu_g = v`` is at ``mu_g = max(0, 1 - 1 / (lam w_g))`` (the concave
    ``sum log(1 - mu_g)`` on that plane), decreasing in ``v``; the bound is the ``v`` where it
    reaches ``a2``. Equal ``w``: ``1 - a2^(1 / G)``, Clopper-Pearson's over the ``G`` clusters.
    """
    ws = np.sort(np.asarray(w, dtype=float))[::-1]
    k = np.arange(1, ws.size + 1)
    W = np.cumsum(ws)
    enter = np.r_[1.0 / ws[1:], np.inf]  # lam at which the (k+1)-th largest w joins the active set

    def worst(v: float) -> float:  # the largest chance of no success at task mean v
        # with the k largest w active, sum w mu = W_k - k / lam: lam = k / (W_k - v) on its own piece
        with np.errstate(divide="ignore", invalid="ignore"):
            lam = k / (W - v)
        ok = (W > v) & (lam * ws >= 1.0 - 1e-12) & (lam <= enter * (1.0 + 1e-12))  # rounding at a piece's ends
        j = int(np.argmax(ok))
        return float(np.prod(1.0 / (lam[j] * ws[: j + 1])))

    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if worst(mid) > a2 else (lo, mid)
    return hi
