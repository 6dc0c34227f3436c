"""Judges and guardrails as classifiers: precision, recall, F-beta, specificity and accuracy of their verdicts, with intervals.

An LLM judge deciding "is this transcript a failure?", a guardrail flagging
dangerous tool calls, a router deciding "escalate": each is a classifier, and
each figure of merit below comes with a bootstrap interval, or a bound where a
resampling interval has no width (a proportion at 0 or 1). Items that share
a task (several transcripts of one task, several tool calls of one episode)
are not independent: pass their task as ``cluster`` and whole tasks are
resampled (the cluster bootstrap of :mod:`hierbench.freq._kernels`). Every
metric is a ratio of the four confusion counts, so one resampled confusion
matrix gives all six.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
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
from ._resample import _edge_bounds
from ._resample import _few_clusters
from ._resample import _pair

if TYPE_CHECKING:
    import pandas as pd

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

#: the metrics that are proportions: the cells (tp, fp, fn, tn) of the numerator and of the
#: denominator, and what the count counts (for ``ci_flag``)
PROPORTIONS = {
    "precision": ((0,), (0, 1), "flagged items positive"),
    "recall": ((0,), (0, 2), "positives flagged"),
    "specificity": ((3,), (3, 1), "negatives not flagged"),
    "accuracy": ((0, 3), (0, 1, 2, 3), "verdicts right"),
}


@dataclass(frozen=True, repr=False)
class ClassificationResult(ResampledResult):
    """Result of :func:`classification_metrics`.

    Attributes
    ----------
    estimate : DataArray (metric)
        precision, recall, f1, f_beta, specificity, accuracy.
    ci : DataArray (metric, ci_bound)
        Bootstrap interval over items (clusters when ``cluster`` is given):
        studentized by default (``ci_kind = "t"``), or percentile or BCa. Where a
        proportion is 0 or 1 (its numerator 0 or its denominator) no resample can
        differ and a resampling interval has no width: there the interval is a bound
        (``ci_flag`` names it), and ``ci_kind`` is ``"mixed"``.
    confusion : DataArray (cell)
        tp, fp, fn, tn.
    n_undefined : DataArray (metric)
        Resamples where the metric was 0/0 (left out of its interval).
    ci_flag : DataArray (metric)
        ``""``, or the bound that replaces the resampling interval: Clopper-Pearson's
        on the denominator count (``"exact bound (Clopper-Pearson): 30 of 30 positives
        flagged"``), over clusters the bound for the mean of the clusters' shares, and
        for F1 and F-beta at 0 or 1 F-beta of the bounds of precision and recall.
    ci_kind : DataArray (metric)
        Each metric's interval kind: the bootstrap's (``"t"``, ``"percentile"``,
        ``"bca"``), ``"exact"`` (Clopper-Pearson), ``"bounded-mean"`` (over clusters)
        or ``"conservative"`` (F-beta's bound); ``to_frame()`` gives each row its own.
    distribution : DataArray (resample, metric)
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    confusion: xr.DataArray
    n_undefined: xr.DataArray
    attrs: dict = field(default_factory=dict)
    ci_flag: xr.DataArray | None = None
    ci_kind: xr.DataArray | None = None

    _estimate_label = "classification metrics of the verdicts"

    def to_frame(self) -> pd.DataFrame:
        """One row per metric; the ``ci_kind`` column names each row's kind (not "mixed")."""
        df = super().to_frame()
        if self.ci_kind is not None:
            df["ci_kind"] = np.asarray(self.ci_kind.values, dtype=object)
        return df

    def _cell_notes(self) -> xr.DataArray | None:
        """Each bounded metric's ``ci_flag``, after its line in the repr."""
        return self.ci_flag


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
        0.95-0.96 (``benchmarks/bench_beyond_coverage.py``). A proportion at
        0 or 1 (recall 30 of 30) has a resampling interval of no width, so it
        gets a bound instead (``ci_flag``; ``ClassificationResult``): at 95%
        [0.884, 1] for 30 of 30, where [1, 1] covered 0.62 of 1,000 simulated
        data sets at true recall 0.97 (``benchmarks/bench_judge_edge_coverage.py``).
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
        lambda S: _metrics_from_counts(*S.T, beta), cells, codes, n_resamples, as_rng(rng), method, prob,
        (0.0, 1.0), skip=(est == 0) | (est == 1),  # a metric at 0 or 1 is bounded below instead
    )
    n_undef = _warn_undefined(est, dist)
    kind, detail = _detail(method, unit, n_resamples)
    lo, hi, kind_of, flag, detail = _edge_intervals(cells, codes, est, (lo, hi), prob, beta, kind, detail)
    kinds = sorted(set(kind_of))
    est_da = xr.DataArray(est, dims="metric", coords={"metric": METRICS}, name="classification")
    est_da.attrs["beta"] = float(beta)
    flat_why = f"every {unit} gives it one value: no resample can differ"
    return ClassificationResult(
        estimate=est_da,
        ci=make_interval(
            lo, hi, prob=prob, kind=kinds[0] if len(kinds) == 1 else "mixed", detail=detail, template=est_da,
            zero_width_why=np.full(len(METRICS), flat_why, dtype=object),
        ).assign_attrs(few),
        confusion=xr.DataArray(cells.sum(0), dims="cell", coords={"cell": ["tp", "fp", "fn", "tn"]}),
        n_undefined=xr.DataArray(n_undef, dims="metric", coords={"metric": METRICS}),
        distribution=xr.DataArray(dist, dims=("resample", "metric"), coords={"metric": METRICS}),
        attrs={"beta": float(beta), "unit": unit, "n_items": int(t.size), **few},
        ci_flag=est_da.copy(data=flag).rename("ci_flag"),
        ci_kind=est_da.copy(data=kind_of).rename("ci_kind"),
    )


def _fbeta(p, r, beta: float):
    """F-beta of precision ``p`` and recall ``r`` (increasing in both)."""
    b2 = beta * beta
    with np.errstate(invalid="ignore", divide="ignore"):
        return (1 + b2) * p * r / (b2 * p + r)


def _edge_intervals(cells, codes, est, bounds, prob: float, beta: float, kind: str, detail: str):
    """Replace the zero-width resampling interval of each metric at 0 or 1 by a bound that holds.

    A proportion at 0 or 1 gets Clopper-Pearson's interval on its denominator count
    (``"exact"``), or with clusters the bound for the mean of the shares of the clusters that
    hold a denominator item (``"bounded-mean"``; ``_edge_bounds``). F1 and F-beta at 1 (no false
    alarm, no miss) get F-beta of the lower bounds of precision and recall, and at 0 (no hit)
    F-beta of their upper bounds, 1 where one is 0/0: F-beta increases in both, and the two
    one-sided bounds, each failing with probability ``(1 - prob) / 2``, hold together with
    probability at least ``prob`` (Bonferroni; ``"conservative"``).
    Returns ``(lo, hi, kind per metric, ci_flag per metric, ci_detail)``.
    """
    lo, hi = (np.array(b, dtype=float) for b in bounds)
    kind_of = np.full(len(METRICS), kind, dtype=object)
    flag = np.full(len(METRICS), "", dtype=object)
    for name, (num_cells, den_cells, what) in PROPORTIONS.items():
        i = METRICS.index(name)
        den = cells[:, den_cells].sum(1)
        x, n = round(float(cells[:, num_cells].sum())), round(float(den.sum()))
        if n == 0 or 0 < x < n:
            continue
        g = n if codes is None else int(np.unique(codes[den > 0]).size)
        lo[i], hi[i] = _edge_bounds(x == n, g, prob)
        kind_of[i] = "exact" if codes is None else "bounded-mean"
        flag[i] = (f"exact bound (Clopper-Pearson): {x} of {n} {what}" if codes is None else
                   f"bound over {g} clusters, each one's share {int(x == n)}: {x} of {n} {what}")
    p, r = METRICS.index("precision"), METRICS.index("recall")
    for i, b in ((METRICS.index("f1"), 1.0), (METRICS.index("f_beta"), beta)):
        if est[i] == 1:
            lo[i], hi[i] = _fbeta(lo[p], lo[r], b), 1.0
        elif est[i] == 0:  # no hit: precision and recall are 0, or 0/0 (no false alarm, or no positive)
            top = [hi[j] if est[j] == 0 else 1.0 for j in (p, r)]
            lo[i], hi[i] = 0.0, _fbeta(top[0], top[1], b)
        else:
            continue
        kind_of[i] = "conservative"
        flag[i] = f"bound from those of precision and recall (Bonferroni): {METRICS[i]} is {int(est[i])}"
    if (flag != "").any():
        a = "a = (1 - prob) / 2"
        how = ("Clopper-Pearson's interval on its denominator count n ('exact'), [0, 1 - a^(1/n)] at 0 and "
               f"[a^(1/n), 1] at 1, {a}" if codes is None else
               "the distribution-free bound for the mean of the G clusters' shares, G the clusters holding a "
               f"denominator item ('bounded-mean'), [0, 1 - a^(1/G)] at 0 and [a^(1/G), 1] at 1, {a}: it bounds "
               "the mean share over clusters, each counting once, which is the pooled share where the clusters "
               "hold alike counts")
        detail += (f"; where a proportion (precision, recall, specificity, accuracy) is 0 or 1 no resample can "
                   f"differ, and its interval is instead {how}; F1 and F-beta at 0 or 1 get F-beta of those "
                   "bounds of precision and recall ('conservative': both hold at once with probability at "
                   "least prob, by Bonferroni); `ci_flag` names each")
    return lo, hi, kind_of, flag, detail


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
