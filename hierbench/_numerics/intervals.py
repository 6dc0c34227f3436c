"""Interval kernels that both halves and the designs share (numpy only).

The Wilson score bounds and the cluster-robust standard error of a mean: the
frequentist intervals, the budgeted designs and the reports all call these,
so each rule has one owner.
"""

from __future__ import annotations

import numpy as np

__all__ = ["cluster_robust_se", "wilson_bounds"]


def wilson_bounds(s: np.ndarray, n: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the Wilson score bounds for ``s`` successes in ``n`` trials (NaN where n = 0).

    ``centre = (p + z^2 / 2n) / (1 + z^2 / n)``, ``half = z sqrt(p (1 - p) / n
    + z^2 / 4n^2) / (1 + z^2 / n)``, clipped to [0, 1] (only rounding can
    leave it).
    """
    s = np.asarray(s, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        nn = np.where(np.asarray(n, dtype=float) > 0, np.asarray(n, dtype=float), np.nan)
        p = s / nn
        den = 1 + z * z / nn
        centre = (p + z * z / (2 * nn)) / den
        half = z * np.sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / den
    return np.clip(centre - half, 0, 1), np.clip(centre + half, 0, 1)


def cluster_robust_se(
    y: np.ndarray, codes: np.ndarray | None, *, small_sample: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Return the clustered SE of the mean of ``y`` along its last axis, and the cluster count.

    ``SE^2 = c / n^2 * sum_g (sum_{i in g} (y_i - mean))^2`` over the finite
    entries, ``c = G / (G - 1)`` (CR1) with ``small_sample``, else 1;
    ``codes=None`` makes every unit its own cluster (then, with CR1, the usual
    ``sd(ddof=1) / sqrt(n)``). NaN where fewer than 2 clusters (CR1) or no
    finite entry.
    """
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(y)
    n = ok.sum(-1)
    if codes is None:
        codes = np.arange(y.shape[-1])
    codes = np.asarray(codes, dtype=np.intp)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.where(ok, y, 0).sum(-1) / n
        res = np.where(ok, y - m[..., None], 0.0)
    onehot = (codes[:, None] == np.arange(codes.max() + 1)[None, :]).astype(float)
    csum = res @ onehot  # (..., G)
    g = (ok.astype(float) @ onehot > 0).sum(-1)
    c = np.where(g > 1, g / np.maximum(g - 1, 1), np.nan) if small_sample else 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(c * (csum**2).sum(-1)) / n
    return se, g
