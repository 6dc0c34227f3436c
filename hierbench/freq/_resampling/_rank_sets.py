"""Marginal confidence sets for ranks from simultaneous intervals of differences.

For agent ``j`` the rank set is built from the ``M - 1`` differences
``theta_j - theta_k`` (Mogstad, Romano, Shaikh and Wilhelm 2024, "Inference for
ranks with applications to mobility across neighbourhoods and academic
achievement across countries", Review of Economic Studies; Klein, Wright and
Wieczorek 2020, "A joint confidence region for an overall ranking of
populations", JRSS C):

* each difference is studentized by its bootstrap standard error ``se_k``
  (the standard deviation of ``d*_k`` over the task or cluster resamples that
  ``rank_uncertainty`` already draws);
* ``c_j`` is the ``prob`` quantile (``inverted_cdf``) over resamples of
  ``max_k |d*_k - d_k| / se_k``, the studentized max-|t| of the family;
* ``k`` is surely better than ``j`` when ``d_k + c_j se_k < 0`` and surely
  worse when ``d_k - c_j se_k > 0``;
* the rank set is ``[1 + #surely better, M - #surely worse]``.

When the ``M - 1`` intervals cover at once (probability ``prob`` as units
grow), no agent is put on the wrong side of ``j``, so the set holds every rank
``j`` can have, ties included (tied agents are never "surely" either side).
The level is per agent (marginal), not for all agents at once.

A difference with zero bootstrap spread (the same in every resample) has no
|t| and its interval is the point ``d_k``; resamples in which ``j`` or ``k``
has no task (``NaN``) are left out of that difference's spread and maximum.
"""

from __future__ import annotations

import numpy as np

#: a bootstrap standard error below this (relative to the largest |score|) is rounding, not spread
_ROUNDING = 1e-12


def simultaneous_rank_sets(s: np.ndarray, observed: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper ends of each agent's marginal rank set (see the module docstring).

    Parameters
    ----------
    s : numpy.ndarray
        Resampled scores ``(B, M)`` (``NaN`` where an agent had no task).
    observed : numpy.ndarray
        Observed scores ``(M,)``, the centre of every difference.
    prob : float
        Level of each agent's family of ``M - 1`` simultaneous intervals.

    Returns
    -------
    tuple of numpy.ndarray
        ``(lower, upper)``, integer ranks (1 = best), each ``(M,)``.
    """
    M = s.shape[1]
    lower = np.ones(M, dtype=np.int64)
    upper = np.full(M, M, dtype=np.int64)
    for j in range(M):
        better, worse = _surely_better_worse(s, observed, j, prob)
        lower[j] = 1 + better
        upper[j] = M - worse
    return lower, upper


def max_t_critical(dev: np.ndarray, se: np.ndarray, prob: float) -> float:
    """The ``prob`` quantile over resamples of ``max_k |dev_bk| / se_k`` (zero-spread columns left out).

    ``dev`` is ``(B, K)`` (bootstrap minus observed difference, ``NaN`` allowed),
    ``se`` is ``(K,)``. Returns 0 when no column has spread.
    """
    live = se > 0
    if not live.any():
        return 0.0
    t = np.abs(dev[:, live]) / se[live]
    with np.errstate(invalid="ignore"):
        tmax = np.fmax.reduce(np.where(np.isfinite(t), t, -np.inf), axis=1)
    tmax = tmax[np.isfinite(tmax)]
    if tmax.size == 0:
        return 0.0
    return float(np.quantile(tmax, prob, method="inverted_cdf"))


def _surely_better_worse(s: np.ndarray, observed: np.ndarray, j: int, prob: float) -> tuple[int, int]:
    """How many agents are surely better and surely worse than agent ``j``."""
    others = np.arange(s.shape[1]) != j
    d_hat = observed[j] - observed[others]
    d_star = s[:, [j]] - s[:, others]
    ok = np.isfinite(d_star)
    n_ok = ok.sum(0)
    mean = np.where(ok, d_star, 0.0).sum(0) / np.maximum(n_ok, 1)
    ss = np.where(ok, d_star - mean, 0.0) ** 2
    se = np.sqrt(ss.sum(0) / np.maximum(n_ok - 1, 1))
    # a spread at rounding level (the same difference in every resample) is no spread
    se = np.where((n_ok > 1) & (se > _ROUNDING * max(1.0, float(np.nanmax(np.abs(s))))), se, 0.0)
    c = max_t_critical(d_star - d_hat, se, prob)
    half = c * se
    return int(np.sum(d_hat + half < 0)), int(np.sum(d_hat - half > 0))
