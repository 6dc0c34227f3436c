"""Scored detectors: the precision-recall curve, its average precision, the threshold that reaches a target recall.

A guardrail or judge that gives a score rather than a verdict is a family of
classifiers, one per threshold, and every distinct score is a threshold. The
items are sorted by score once, so a resample's curve is a cumulative sum of
its weights, and the threshold for a target recall is chosen again in every
resample. The intervals are percentile bootstrap intervals over items (whole
clusters with ``cluster``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from typing import ClassVar

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import ResampledResult
from ..._base import ZeroWidthIntervalWarning
from ..._base import as_rng
from ..._base import check_number
from ..._base import interval_label
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from .._inputs import numeric_values
from .._kernels import percentile_bounds
from .._kernels import ratio
from ._resample import _binary
from ._resample import _check_units
from ._resample import _clusters
from ._resample import _common
from ._resample import _few_clusters
from ._resample import _pair
from ._resample import _warn_nan
from ._resample import _warn_undefined_resamples
from ._resample import _weights

__all__ = ["PRCurveResult", "RecallThresholdResult", "pr_curve", "threshold_for_recall"]


@dataclass
class _Curve:
    """Items sorted by decreasing score, with the resampling units."""

    t: np.ndarray  # truth, item order
    order: np.ndarray  # items by decreasing score
    t_sorted: np.ndarray
    thresholds: np.ndarray  # the distinct scores, decreasing
    ends: np.ndarray  # last sorted position of each distinct score
    codes: np.ndarray | None
    unit: str

    def observed(self, stat):
        """``stat(tp, fp)`` on the data (a batch of one)."""
        return stat(*_ap_curves(np.ones((1, self.t.size)), self.t_sorted, self.ends))[0]

    def resampled(self, stat, n_resamples: int, rng) -> np.ndarray:
        """``stat(tp, fp)`` in each resample of items (clusters)."""
        gen = as_rng(rng)
        return np.concatenate(
            [
                stat(*_ap_curves(w[:, self.order], self.t_sorted, self.ends))
                for w in _weights(self.t.size, n_resamples, gen, self.codes)
            ]
        )


def _sorted_scores(y_true, score, cluster, dim) -> _Curve:
    yt, sc = _pair(y_true, score, ("y_true", "score"), dim)
    t = _binary(yt, "y_true")
    try:
        s = numeric_values(sc, "score", allow_bool=True)
    except ValueError:  # infinite scores: named by item below
        s = np.asarray(sc.values, dtype=float)
    if not np.isfinite(s).all():
        bad = np.flatnonzero(~np.isfinite(s))[:5].tolist()
        raise ValueError(f"`score` must be finite for every item; items {bad} are not")
    order = np.argsort(-s, kind="stable")
    s_sorted = s[order]
    # last position of each distinct score (thresholds: predict positive when score >= s)
    ends = np.r_[np.flatnonzero(np.diff(s_sorted) != 0), s.size - 1]
    codes, unit = _clusters(yt, cluster, dim)
    return _Curve(t, order, t[order], s_sorted[ends], ends, codes, unit)


def _ap_curves(w_sorted, t_sorted, ends):
    """Cumulative tp, fp at each distinct threshold for weight rows (b, n)."""
    tp = np.cumsum(w_sorted * t_sorted, axis=1)[:, ends]
    fp = np.cumsum(w_sorted * (1 - t_sorted), axis=1)[:, ends]
    return tp, fp


def _ap(tp, fp):
    pos = tp[:, -1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = ratio(tp, tp + fp, 1.0)
        rec = tp / pos
    drec = np.diff(np.concatenate([np.zeros((tp.shape[0], 1)), rec], axis=1), axis=1)
    ap = np.sum(drec * prec, axis=1)
    return np.where(pos[:, 0] > 0, ap, np.nan)


@dataclass(frozen=True, repr=False)
class PRCurveResult(ResampledResult):
    """Result of :func:`pr_curve`.

    Attributes
    ----------
    estimate : DataArray (scalar)
        Average precision ``sum_k (R_k - R_{k-1}) P_k`` over the distinct
        thresholds (the step-wise area under the precision-recall curve).
    ci : DataArray (ci_bound)
    precision, recall : DataArray (threshold)
        The curve: flag an item when its score is >= ``threshold``.
    distribution : DataArray (resample)
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    precision: xr.DataArray
    recall: xr.DataArray
    n_undefined: int = 0
    _dataset_exclude: ClassVar[tuple[str, ...]] = ("distribution",)
    _estimate_label: ClassVar[str] = "average precision (area under the precision-recall curve)"


@renamed_kwargs(dim="item_dim")
def pr_curve(
    y_true: Any,
    score: Any,
    *,
    cluster: Any = None,
    prob: float = DEFAULT_PROB,
    n_resamples: int = 2000,
    item_dim: str = "item",
    rng: None | int | np.random.Generator = None,
) -> PRCurveResult:
    """Compute the precision-recall curve and its area (average precision) with a bootstrap interval.

    Every distinct score is a threshold of the curve. The interval is a
    percentile bootstrap over items (whole clusters with ``cluster``).

    Parameters
    ----------
    y_true : array-like, 0/1
    score : array-like
        The detector's score; an item is flagged when ``score >= threshold``.
    cluster, prob, n_resamples, item_dim, rng
        As in :func:`classification_metrics`.

    Returns
    -------
    PRCurveResult
        ``estimate`` the average precision with its ``ci``; ``precision`` and
        ``recall`` at each threshold.

    Examples
    --------
    >>> r = pr_curve([1, 0, 1, 1, 0], [0.9, 0.8, 0.7, 0.4, 0.2], n_resamples=500, rng=0)
    >>> round(float(r.estimate), 4)   # (1/3)(1 + 2/3 + 3/4)
    0.8056
    """
    prob, n_resamples = _common(prob, n_resamples)
    cv = _sorted_scores(y_true, score, cluster, item_dim)
    _check_units(cv.codes, cv.t.size, cv.unit, "the average precision")
    tp, fp = _ap_curves(np.ones((1, cv.t.size)), cv.t_sorted, cv.ends)
    ap = _ap(tp, fp)[0]
    _warn_nan(ap, "no positive item: the average precision")
    few = _few_clusters(cv.codes, prob, cv.t.size)
    dist = cv.resampled(_ap, n_resamples, rng)
    n_undef = _warn_undefined_resamples(dist, ap, n_resamples, "the average precision", "a resample that draws no positive item has none, 0/0")
    lo, hi = percentile_bounds(dist[:, None], prob)
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = tp[0] / (tp[0] + fp[0])
        rec = tp[0] / tp[0, -1]
    coords = {"threshold": cv.thresholds}
    return PRCurveResult(
        estimate=xr.DataArray(ap, name="average_precision"),
        ci=make_interval(
            lo[0],
            hi[0],
            prob=prob,
            kind="percentile",
            detail=f"bootstrap over {cv.unit}s, {n_resamples} resamples",
        ).assign_attrs(few),
        precision=xr.DataArray(prec, dims="threshold", coords=coords),
        recall=xr.DataArray(rec, dims="threshold", coords=coords),
        distribution=xr.DataArray(dist, dims="resample"),
        n_undefined=n_undef,
    )


@dataclass(frozen=True, repr=False)
class RecallThresholdResult(ResampledResult):
    """Result of :func:`threshold_for_recall`.

    The threshold is chosen on the data and chosen again in every resample,
    so both intervals include the uncertainty of choosing it.

    Attributes
    ----------
    estimate : DataArray (scalar)
        The highest threshold whose recall reaches ``target``.
    ci : DataArray (ci_bound)
        Percentile bootstrap interval of that threshold.
    precision, recall : DataArray (scalar)
        Precision and recall at the threshold.
    precision_ci : DataArray (ci_bound)
        Bootstrap interval of the precision obtained at the target recall
        (the threshold re-chosen in each resample).
    n_undefined : int
        Resamples that drew no positive item, where no threshold reaches the
        target: left out of both intervals (an :class:`UndefinedMetricWarning`
        and ``ci_detail`` count them).
    distribution : DataArray (resample, quantity)
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    precision: xr.DataArray
    recall: xr.DataArray
    precision_ci: xr.DataArray
    n_undefined: int = 0

    _estimate_label: ClassVar[str] = "highest score threshold reaching recall {target_recall}"

    def _cell_notes(self) -> xr.DataArray:
        lo, hi = (float(x) for x in self.precision_ci.values)
        return xr.DataArray(f"precision {float(self.precision):.4g} [{lo:.4g}, {hi:.4g}]")



@renamed_kwargs(dim="item_dim")
def threshold_for_recall(
    y_true: Any,
    score: Any,
    *,
    target: float = 0.95,
    cluster: Any = None,
    prob: float = DEFAULT_PROB,
    n_resamples: int = 2000,
    item_dim: str = "item",
    rng: None | int | np.random.Generator = None,
) -> RecallThresholdResult:
    """Find the threshold that reaches a target recall, with intervals for it and for the precision there.

    Both intervals are percentile bootstrap intervals over items (whole
    clusters with ``cluster``), the threshold chosen again in each resample.

    Parameters
    ----------
    y_true, score : array-like
    target : float
        Recall to reach, 0 < target <= 1 ("catch at least 95%").
    cluster, prob, n_resamples, item_dim, rng
        As in :func:`classification_metrics`.

    Returns
    -------
    RecallThresholdResult
        ``estimate`` the highest threshold whose recall reaches ``target``,
        with its ``ci``; ``precision`` and ``recall`` there, and ``precision_ci``.

    Examples
    --------
    >>> r = threshold_for_recall([1, 0, 1, 1, 0], [0.9, 0.8, 0.7, 0.4, 0.2], target=0.6,
    ...                          n_resamples=500, rng=0)
    >>> float(r.estimate), round(float(r.precision), 3)
    (0.7, 0.667)
    """
    prob, n_resamples = _common(prob, n_resamples)
    if not (0 < check_number(target, "target") <= 1):
        raise ValueError(f"`target` must satisfy 0 < target <= 1; got target={target!r}")
    cv = _sorted_scores(y_true, score, cluster, item_dim)
    _check_units(cv.codes, cv.t.size, cv.unit, "the threshold for a target recall")

    def pick(tp, fp):
        return _at_recall(tp, fp, target, cv.thresholds)

    obs = cv.observed(pick)
    _warn_nan(obs[0], "no positive item: the threshold")
    few = _few_clusters(cv.codes, prob, cv.t.size)
    dist = cv.resampled(pick, n_resamples, rng)
    # a resample without a positive item leaves all three undefined at once (no recall to reach)
    n_undef = _warn_undefined_resamples(
        dist[:, 0], obs[0], n_resamples, "the threshold (and the precision there)",
        "a resample that draws no positive item has no recall to reach, 0/0",
    )
    lo, hi = percentile_bounds(dist, prob)
    detail = f"bootstrap over {cv.unit}s, {n_resamples} resamples; threshold re-chosen in each"
    if n_undef:
        detail += (f"; {n_resamples - n_undef} resamples used: {n_undef} drew no positive item (no threshold "
                   "reaches the target) and are left out")
    ivs = [make_interval(lo[i], hi[i], prob=prob, kind="percentile", detail=detail, warn_zero_width=False)
           .assign_attrs(few) for i in (0, 1)]
    _warn_flat(ivs, int(cv.t.sum()))
    q = ["threshold", "precision", "recall"]
    return RecallThresholdResult(
        estimate=xr.DataArray(obs[0], name="threshold", attrs={"target_recall": float(target)}),
        ci=ivs[0],
        precision=xr.DataArray(obs[1]),
        recall=xr.DataArray(obs[2]),
        precision_ci=ivs[1],
        distribution=xr.DataArray(dist, dims=("resample", "quantity"), coords={"quantity": q}),
        n_undefined=n_undef,
    )


def _warn_flat(intervals: list[xr.DataArray], n_pos: int) -> None:
    """Warn once of :func:`threshold_for_recall`'s intervals that have zero width, naming each (threshold, precision)."""
    why = [f"every resample that drew a positive item chose the same threshold, as when few positive items set "
           f"it ({n_pos} here)",
           "the precision at the threshold was the same in every resample that drew a positive item (1 where the "
           "scores put every positive item above every negative one, say)"]
    flat = [f"{name} ({w})" for name, w, iv in zip(("the threshold", "the precision there"), why, intervals, strict=True)
            if np.isfinite(iv.values).all() and iv.values[0] == iv.values[1]]
    if flat:
        warn_user(
            f"the {interval_label(intervals[0])} interval of " + " and of ".join(flat) + " has zero width. Zero width "
            "at a level below one measures no uncertainty; it is not a statement of certainty.",
            ZeroWidthIntervalWarning,
        )


def _at_recall(tp, fp, target: float, thr: np.ndarray) -> np.ndarray:
    """Threshold, precision and recall (b, 3) at the highest threshold reaching ``target``."""
    pos = tp[:, -1:]
    with np.errstate(invalid="ignore", divide="ignore"):
        reach = tp >= target * pos - 1e-12 * pos
    k = np.argmax(reach, axis=1)
    ok = pos[:, 0] > 0
    rows = np.arange(tp.shape[0])
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = tp[rows, k] / (tp[rows, k] + fp[rows, k])
        rec = tp[rows, k] / pos[:, 0]
    return np.stack(
        [np.where(ok, thr[k], np.nan), np.where(ok, prec, np.nan), np.where(ok, rec, np.nan)], 1
    )
