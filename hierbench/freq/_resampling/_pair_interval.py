"""A pair's interval: the one rule that chooses it and the paired t interval it mostly is.

:func:`hierbench.freq.compare_agents` (every pair) and :func:`hierbench.freq.paired_test` (one
pair) both take their ``ci`` here (``_per_pair_ci``), so a pair gets one interval from either:
the paired t over tasks (``T - 1`` df; over clusters the CR2 t with Bell-McCaffrey df) unless a
bootstrap ``method`` is asked for over tasks. This module imports neither of theirs.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import stats

from ..._base import make_interval

#: the per-pair ``method`` choices of :func:`hierbench.freq.compare_agents` and :func:`hierbench.freq.paired_test`
PAIR_METHODS = ("t", "percentile", "bca")


def _unit_range(x: np.ndarray) -> bool:
    """Whether every finite score lies in [0, 1] (then a difference of their means lies in [-1, 1])."""
    v = x[np.isfinite(x)]
    return bool(v.size and v.min() >= 0.0 and v.max() <= 1.0)


#: how an interval for a difference of [0, 1] scores is kept to the difference's range
_IN_RANGE = "; intersected with [-1, 1], the range of a difference of scores in [0, 1] (coverage unchanged)"


def _pm_interval(
    mats: dict, half: np.ndarray, prob: float, detail: str, unit_scores: bool, kind: str = "t",
    dims: tuple[str, ...] = ("agent", "opponent"),
) -> xr.DataArray:
    """``mean_diff +- half`` over ``dims`` (``(agent, opponent)``), a t-based interval (``kind``) at ``prob``.

    With ``unit_scores`` (every score in [0, 1]) the ends are kept to [-1, 1], where
    the difference lies: a confidence set cut to the parameter's range covers as
    often, and the detail says so.
    """
    lo, hi = mats["mean_diff"] - half, mats["mean_diff"] + half
    if unit_scores and np.isfinite(half).any():
        lo, hi, detail = np.maximum(lo, -1.0), np.minimum(hi, 1.0), detail + _IN_RANGE  # NaN stays NaN
    return make_interval(
        xr.DataArray(lo, dims=dims),
        xr.DataArray(hi, dims=dims),
        prob=prob,
        kind=kind,
        detail=detail,
        warn_zero_width=False,
    )


def _t_interval(
    mats: dict[str, np.ndarray], prob: float, clustered: bool, unit_scores: bool,
    dims: tuple[str, ...] = ("agent", "opponent"),
) -> xr.DataArray:
    """The paired t interval ``mean +- t_df * se`` of every pair (CR2 / Bell-McCaffrey with clusters).

    Over ``dims``: the (agent, opponent) matrices of :func:`compare_agents`, or ``()`` for the
    one pair of :func:`paired_test` (0-d ``mean_diff``, ``se``, ``df``), so both give the same numbers.
    """
    with np.errstate(invalid="ignore"):
        q = stats.t.ppf(0.5 + prob / 2, np.where(mats["df"] > 0, mats["df"], np.nan))
    return _pm_interval(
        mats, q * mats["se"], prob,
        "paired t interval over "
        + ("clusters: CR2 cluster-robust SE, Bell-McCaffrey df" if clustered else "tasks (T - 1 df)"),
        unit_scores,
        dims=dims,
    )


def _per_pair_kind(method: str, unit: str) -> str:
    """The per-pair interval of :func:`compare_agents` (``ci``): ``"t"`` or ``"bootstrap"``.

    The paired t interval (over clusters the CR2 t with Bell-McCaffrey df) unless ``method``
    asks for a bootstrap interval (``"percentile"``, ``"bca"``) and the units are tasks. The
    percentile interval over few tasks covers less than its level (12 agents, 3 runs, logit
    abilities and task effects N(0, 1): 0.84 at 6 tasks, 0.90 at 10, 0.94 at 30, at 95%;
    BCa no better), where the t interval holds 0.95; over 6 clusters the cluster bootstrap
    held 0.86, the CR2 t 0.95 (``compare_agents``' ``method`` gives the rest). The one rule of
    :func:`compare_agents` and :func:`paired_test` (``_per_pair_ci``).
    """
    return "bootstrap" if method in ("percentile", "bca") and unit != "clusters" else "t"


def _per_pair_ci(
    method: str, unit: str, mats: dict, boot: xr.DataArray, prob: float, unit_scores: bool,
    dims: tuple[str, ...] = ("agent", "opponent"),
) -> xr.DataArray:
    """A pair's ``ci`` by ``_per_pair_kind``: the paired t interval from ``mats`` or a copy of ``boot``.

    ``mats`` holds ``mean_diff``, ``se`` and ``df`` over ``dims`` (``()`` for :func:`paired_test`'s
    one pair); ``boot`` is the bootstrap interval (``ci_bootstrap``). :func:`compare_agents` and
    :func:`paired_test` both call it, so one pair gets one interval from either.
    """
    if _per_pair_kind(method, unit) == "t":
        return _t_interval(mats, prob, unit == "clusters", unit_scores, dims=dims)
    return boot.copy()
