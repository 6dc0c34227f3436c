"""Judges and guardrails as classifiers: precision, recall, F-beta, specificity and accuracy of their verdicts, with intervals.

An LLM judge deciding "is this transcript a failure?", a guardrail flagging
dangerous tool calls, a router deciding "escalate": each is a classifier, and
each figure of merit below comes with a bootstrap interval. Items that share
a task (several transcripts of one task, several tool calls of one episode)
are not independent: pass their task as ``cluster`` and whole tasks are
resampled (the cluster bootstrap of :mod:`hierbench.freq._kernels`). Every
metric is a ratio of the four confusion counts, so one resampled confusion
matrix gives all six.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import ResampledResult
from ..._base import UndefinedMetricWarning
from ..._base import as_rng
from ..._base import check_number
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from ..._docs import fill_doc
from ._resample import _binary
from ._resample import _bootstrap
from ._resample import _clusters
from ._resample import _common
from ._resample import _detail
from ._resample import _few_clusters
from ._resample import _pair

__all__ = ["ClassificationResult", "UndefinedMetricWarning", "classification_metrics"]


def _metrics_from_counts(tp, fp, fn, tn, beta):
    with np.errstate(invalid="ignore", divide="ignore"):
        precision = tp / (tp + fp)
        recall = tp / (tp + fn)
        f1 = 2 * tp / (2 * tp + fp + fn)
        b2 = beta * beta
        fb = (1 + b2) * tp / ((1 + b2) * tp + b2 * fn + fp)
        specificity = tn / (tn + fp)
        accuracy = (tp + tn) / (tp + fp + fn + tn)
    return np.stack([precision, recall, f1, fb, specificity, accuracy], axis=-1)


METRICS = ["precision", "recall", "f1", "f_beta", "specificity", "accuracy"]


@dataclass(frozen=True, repr=False)
class ClassificationResult(ResampledResult):
    """Result of :func:`classification_metrics`.

    Attributes
    ----------
    estimate : DataArray (metric)
        precision, recall, f1, f_beta, specificity, accuracy.
    ci : DataArray (metric, ci_bound)
        Bootstrap interval over items (clusters when ``cluster`` is given):
        studentized by default (``ci_kind = "t"``), or percentile or BCa.
    confusion : DataArray (cell)
        tp, fp, fn, tn.
    n_undefined : DataArray (metric)
        Resamples where the metric was 0/0 (left out of its interval).
    distribution : DataArray (resample, metric)
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    confusion: xr.DataArray
    n_undefined: xr.DataArray
    attrs: dict = field(default_factory=dict)

    _estimate_label = "classification metrics of the verdicts"


@renamed_kwargs(dim="item_dim")
@fill_doc
def classification_metrics(
    y_true: Any,
    y_pred: Any,
    *,
    beta: float = 1.0,
    cluster: Any = None,
    prob: float = DEFAULT_PROB,
    n_resamples: int = 2000,
    method: str = "studentized",
    item_dim: str = "item",
    rng: None | int | np.random.Generator = None,
) -> ClassificationResult:
    """Precision, recall, F1, F-beta, specificity and accuracy with bootstrap intervals.

    Parameters
    ----------
    y_true, y_pred : array-like or DataArray, one value per item
        The truth (1 = positive, e.g. "a real policy violation") and the
        verdict (1 = flagged), 0/1 or booleans.
    beta : float
        ``F_beta = (1 + beta^2) P R / (beta^2 P + R)``; beta > 1 weighs recall more.
    cluster : str or array-like, optional
        A coord of ``y_true`` naming each item's task, or one label per item:
        whole tasks are resampled.
    %(prob)s
    %(n_resamples)s
    method : {"studentized", "percentile", "bca"}
        ``"studentized"`` (the default): the symmetric bootstrap-t, with
        each resample's linearised (delta-method) item- or cluster-robust
        standard error (``ci_kind = "t"``), clipped to [0, 1];
        ``"percentile"``; or BCa with a jackknife over items (clusters).
        Every metric here is a ratio of totals, skewed and heavy-tailed over
        few clusters: with 20-40 clustered tasks the percentile and BCa
        intervals covered 0.91-0.94 at nominal 0.95, the studentized one
        0.95-0.96 (``benchmarks/bench_beyond_coverage.py``).
    item_dim : str
        Name of the item dim.
    %(rng)s

    Returns
    -------
    ClassificationResult

    Examples
    --------
    The detector of the worked example: 100 violations among 1,000 transcripts,
    80 caught, 40 false alarms.

    >>> import numpy as np
    >>> y = np.r_[np.ones(100), np.zeros(900)]
    >>> p = np.r_[np.ones(80), np.zeros(20), np.ones(40), np.zeros(860)]
    >>> r = classification_metrics(y, p, n_resamples=500, rng=0)
    >>> r.estimate.round(3).to_series().to_dict()
    {'precision': 0.667, 'recall': 0.8, 'f1': 0.727, 'f_beta': 0.727, 'specificity': 0.956, 'accuracy': 0.94}
    """
    prob, n_resamples = _common(prob, n_resamples, method)
    beta = check_number(beta, "beta", low=0, low_open=True)
    yt, yp = _pair(y_true, y_pred, ("y_true", "y_pred"), item_dim)
    t, p = _binary(yt, "y_true"), _binary(yp, "y_pred")
    codes, unit = _clusters(yt, cluster, item_dim)
    cells = np.stack([t * p, (1 - t) * p, t * (1 - p), (1 - t) * (1 - p)], axis=1)  # (n, 4)
    est = _metrics_from_counts(*cells.sum(0), beta)
    _warn_undefined(est)
    few = _few_clusters(codes, prob, cells.shape[0])
    _, dist, lo, hi = _bootstrap(
        lambda S: _metrics_from_counts(*S.T, beta),
        cells,
        codes,
        n_resamples,
        as_rng(rng),
        method,
        prob,
        (0.0, 1.0),
    )
    n_undef = _warn_undefined(est, dist)
    kind, detail = _detail(method, unit, n_resamples)
    est_da = xr.DataArray(est, dims="metric", coords={"metric": METRICS}, name="classification")
    est_da.attrs["beta"] = float(beta)
    return ClassificationResult(
        estimate=est_da,
        ci=make_interval(lo, hi, prob=prob, kind=kind, detail=detail, template=est_da).assign_attrs(few),
        confusion=xr.DataArray(
            cells.sum(0), dims="cell", coords={"cell": ["tp", "fp", "fn", "tn"]}
        ),
        n_undefined=xr.DataArray(n_undef, dims="metric", coords={"metric": METRICS}),
        distribution=xr.DataArray(dist, dims=("resample", "metric"), coords={"metric": METRICS}),
        attrs={"beta": float(beta), "unit": unit, "n_items": int(t.size), **few},
    )


def _warn_undefined(est: np.ndarray, dist: np.ndarray | None = None) -> np.ndarray | None:
    """Name the metrics that are 0/0 on the data, or (with ``dist``) in some resamples.

    With the number of resamples each was undefined in.
    """
    if dist is None:
        undefined_here = [METRICS[i] for i in np.flatnonzero(~np.isfinite(est))]
        if undefined_here:
            warn_user(
                f"{undefined_here} are 0/0 on these data (e.g. no positive item or no positive "
                "verdict): NaN",
                UndefinedMetricWarning,
            )
        return None
    n_undef = (~np.isfinite(dist)).sum(0)
    if (n_undef[np.isfinite(est)] > 0).any():
        warn_user(
            f"metrics were 0/0 in some resamples "
            f"({dict(zip(METRICS, n_undef.tolist(), strict=True))}); those resamples are left "
            "out of the metric's interval",
            UndefinedMetricWarning,
        )
    return n_undef
