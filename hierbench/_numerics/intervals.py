"""Interval kernels that both halves and the designs share (numpy only).

The Wilson score bounds and the cluster-robust standard error of a mean: the
frequentist intervals, the budgeted designs and the reports all call these,
so each rule has one owner.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bounded_mean_bounds", "cluster_robust_se", "few_carry_side", "wilson_bounds"]


def wilson_bounds(s: np.ndarray, n: np.ndarray, z: float) -> tuple[np.ndarray, np.ndarray]:
    """Return the Wilson score bounds for ``s`` successes in ``n`` trials (NaN where n = 0).

    ``centre = (p + z^2 / 2n) / (1 + z^2 / n)``, ``half = z sqrt(p (1 - p) / n
    + z^2 / 4n^2) / (1 + z^2 / n)``, clipped to [0, 1] (only rounding can
    leave it). At ``s = 0`` the lower bound is exactly 0 and at ``s = n`` the upper
    exactly 1 (the formula gives them up to rounding: 4.3e-19 was printed).

    Examples
    --------
    >>> lo, hi = wilson_bounds(np.array([0.0, 5.0]), np.array([5.0, 5.0]), 1.96)
    >>> float(lo[0]), float(hi[1])
    (0.0, 1.0)
    """
    s = np.asarray(s, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        nn = np.where(np.asarray(n, dtype=float) > 0, np.asarray(n, dtype=float), np.nan)
        p = s / nn
        den = 1 + z * z / nn
        centre = (p + z * z / (2 * nn)) / den
        half = z * np.sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn)) / den
        lo = np.where(s == 0, 0.0, np.clip(centre - half, 0, 1))
        hi = np.where(s == nn, 1.0, np.clip(centre + half, 0, 1))
    return np.where(np.isnan(nn), np.nan, lo), np.where(np.isnan(nn), np.nan, hi)


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


def _convex_order_upper(s: np.ndarray, n: int, alpha_half: float, iters: int = 52) -> np.ndarray:
    """Upper bound for the mean of ``n`` independent [0, 1] values summing to ``s`` (one side).

    The largest ``p`` not refuted at level ``alpha_half``: the bound on
    ``P(S <= s)`` is ``min over m = 1..n of E[(m - B)_+] / (m - s)`` for
    ``m > s``, with ``B ~ Binomial(n, p)`` (see :func:`bounded_mean_bounds`);
    it decreases in ``p``, so bisection finds where it crosses ``alpha_half``.
    The bracket's upper end is returned (never below the bound).
    """
    from scipy import stats

    lo, hi = np.zeros(s.shape), np.ones(s.shape)
    j = np.arange(n + 1.0)
    m = np.arange(1.0, n + 1.0)
    for _ in range(iters):
        p = (lo + hi) / 2
        pmf = stats.binom.pmf(j, n, p[:, None])
        below = m * np.cumsum(pmf, axis=1)[:, :-1] - np.cumsum(pmf * j, axis=1)[:, :-1]  # E[(m - B)_+]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(m > s[:, None], below / (m - s[:, None]), np.inf)
        keep = ratio.min(axis=1) > alpha_half
        lo, hi = np.where(keep, p, lo), np.where(keep, hi, p)
    return np.where(s >= n, 1.0, hi)


def bounded_mean_bounds(s: np.ndarray, n: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided bounds for the mean of ``n`` independent [0, 1] values whose sum is ``s``, any law.

    A value ``Y`` in [0, 1] with mean ``p`` is the conditional mean of a
    Bernoulli(``p``) variable given ``Y`` (draw ``B ~ Bernoulli(Y)``), so by
    Jensen ``E f(Y) <= E f(B)`` for every convex ``f``, and the sum ``S`` of
    ``n`` independent such values is below ``Binomial(n, p)`` in the convex
    order (Hoeffding 1963). Markov's inequality on the convex ``(m - S)_+``
    then gives ``P(S <= s) <= E[(m - B)_+] / (m - s)`` for every ``m > s``:
    each side holds at ``(1 - prob) / 2`` whatever the values' distribution.
    With every value 0 the upper bound is ``1 - ((1 - prob) / 2)^(1 / n)``,
    the Clopper-Pearson bound for no success; for 0/1 values it is a little
    wider than Clopper-Pearson's. NaN where ``n`` is 0.

    Examples
    --------
    >>> lo, hi = bounded_mean_bounds(np.array([0.0, 1.0]), np.array([8, 8]), 0.95)
    >>> [round(float(x), 4) for x in hi], round(1 - 0.025 ** (1 / 8), 4)
    ([0.3694, 0.5335], 0.3694)
    """
    s = np.asarray(s, dtype=float)
    n = np.asarray(n, dtype=np.int64)
    a2 = (1.0 - float(prob)) / 2.0
    lo, hi = np.full(s.shape, np.nan), np.full(s.shape, np.nan)
    for size in np.unique(n[n > 0]):
        at = n == size
        hi[at] = _convex_order_upper(s[at], int(size), a2)
        lo[at] = 1.0 - _convex_order_upper(size - s[at], int(size), a2)
    return lo, hi


def few_carry_side(values: np.ndarray) -> np.ndarray:
    """Rows whose mean of [0, 1] values rests on few of them, and on which side: 1 the mean, -1 the failures.

    The rule: ``n_eff < min(10, n / 2)``. ``values`` has the units (tasks) on its last
    axis, NaN where a unit is absent. ``n_eff = (sum y)^2 / sum y^2`` counts the units
    that carry the total (``n`` equal values: ``n``; one nonzero: 1); ``n`` counts the
    units present. The rule of the pass^k interval (:func:`bounded_mean_bounds` replaces
    the t interval there) and of the bootstrap's flag.

    1 where the rule holds on the values (their total rests on few), -1 where it holds on the
    complements ``1 - y`` (a mean near 1: few units fail), 0 where neither. The two exclude each
    other: ``n_eff >= sum y = n m`` on the values and ``>= n (1 - m)`` on the complements, so the
    first needs ``m < 1/2`` and the second ``m > 1/2``.

    Examples
    --------
    >>> few_carry_side(np.array([[0.0] * 19 + [0.9], [1.0] * 19 + [0.1], [0.5] * 20])).tolist()
    [1, -1, 0]
    """
    y = np.asarray(values, dtype=float)
    present = np.isfinite(y)
    s, c = np.where(present, y, 0.0), np.where(present, 1.0 - y, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        n_s = np.nan_to_num(s.sum(-1) ** 2 / (s**2).sum(-1))
        n_c = np.nan_to_num(c.sum(-1) ** 2 / (c**2).sum(-1))
    n = present.sum(-1)
    limit = np.where(n > 1, np.minimum(10.0, n / 2.0), -np.inf)  # fewer than 2 units: never flagged
    return np.where(n_s < limit, 1, np.where(n_c < limit, -1, 0))
