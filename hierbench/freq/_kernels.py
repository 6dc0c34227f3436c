"""The frequentist half's numpy kernels: positional axes, no xarray.

pass@k / pass^k per cell, bootstrap weights over tasks, column quantiles and
the BCa limits. Every wing of :mod:`hierbench.freq` that needs one of these
imports it from here, so each kernel has one owner.

Task-level (cluster) bootstrap weights.

Every bootstrap in hierbench draws whole tasks (or whole clusters of tasks),
and one draw is shared by every agent, so paired comparisons and rankings see
the same resampled benchmark. A resample is represented by integer weights,
``w[b, t]`` = how many times task ``t`` was drawn in resample ``b``, so a
resampled mean is a matrix product and nothing loops over resamples.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator
from typing import Literal

import numpy as np
from scipy import stats
from scipy.special import ndtr
from scipy.special import ndtri

from .._base import ZERO_WIDTH_ADVICE
from .._base import SmallSampleWarning
from .._base import as_rng
from .._base import flat_cause
from .._base import warn_user
from .._docs import fill_doc

__all__ = ["cr2_mean_se", "exact_zero_spread", "normal_z", "ratio", "resolvable", "task_weights", "weight_blocks"]

#: elements of the largest weight block :func:`weight_blocks` yields at once (16 MiB of float64)
BLOCK_ELEMENTS = 2**21


def ratio(num, den, fill: float = np.nan) -> np.ndarray:
    """``num / den`` where ``den > 0``, else ``fill``, with no division by zero (the freq half's one safe ratio).

    A mean over no runs, tasks or resamples is undefined (``fill=nan``) or a
    zero term of a sum (``fill=0``), never a ``RuntimeWarning``.

    Examples
    --------
    >>> ratio(np.array([1.0, 2.0, 3.0]), np.array([2, 0, -1])).tolist()
    [0.5, nan, nan]
    >>> ratio(np.array([1.0, 2.0]), np.array([4.0, 0.0]), 0.0).tolist()
    [0.25, 0.0]
    """
    ok = den > 0
    return np.where(ok, num / np.where(ok, den, 1.0), fill)


def normal_z(prob: float) -> float:
    """The two-sided normal critical value ``z`` with ``P(|Z| <= z) = prob``: every normal interval's factor.

    Examples
    --------
    >>> round(normal_z(0.95), 6)
    1.959964
    """
    return float(stats.norm.ppf(0.5 + prob / 2))


@fill_doc
def task_weights(
    n_tasks: int,
    n_resamples: int,
    rng: None | int | np.random.Generator = None,
    *,
    clusters: np.ndarray | None = None,
) -> np.ndarray:
    """Bootstrap weights over tasks, shape ``(n_resamples, n_tasks)``, int64.

    Parameters
    ----------
    n_tasks : int
        Number of tasks.
    n_resamples : int
        Number of bootstrap resamples.
    %(rng)s
    clusters : array of int, shape (n_tasks,), optional
        Cluster code of each task. When given, whole clusters are drawn with
        replacement (as many draws as there are clusters) and every task of a
        drawn cluster is included once per draw; tasks are not resampled
        again inside a cluster.

    Returns
    -------
    numpy.ndarray
        ``w[b, t]``; each row sums to ``n_tasks`` without clusters.

    Examples
    --------
    >>> w = task_weights(5, 3, rng=0)
    >>> w.shape, w.sum(axis=1).tolist()
    ((3, 5), [5, 5, 5])
    >>> w = task_weights(4, 2, rng=0, clusters=[0, 0, 1, 1])
    >>> bool((w[:, 0] == w[:, 1]).all())  # tasks of one cluster are drawn together
    True
    """
    gen = as_rng(rng)
    if n_tasks < 1:
        raise ValueError(f"`n_tasks` must be >= 1; got {n_tasks}")
    if n_resamples < 1:
        raise ValueError(f"`n_resamples` must be >= 1; got {n_resamples}")
    if clusters is None:
        idx = gen.integers(0, n_tasks, size=(n_resamples, n_tasks), dtype=_index_dtype(n_tasks))
        return _row_counts(idx, n_tasks)
    codes = np.asarray(clusters)
    if codes.shape != (n_tasks,):
        raise ValueError(f"`clusters` must have shape ({n_tasks},); got {codes.shape}")
    uniq, inv = np.unique(codes, return_inverse=True)
    n_c = len(uniq)
    cidx = gen.integers(0, n_c, size=(n_resamples, n_c), dtype=_index_dtype(n_c))
    return _row_counts(cidx, n_c)[:, inv]


def weight_blocks(
    n_tasks: int,
    n_resamples: int,
    rng: None | int | np.random.Generator = None,
    *,
    clusters: np.ndarray | None = None,
    elements_per_resample: int | None = None,
) -> Iterator[np.ndarray]:
    """:func:`task_weights` in float blocks of rows, so memory stays bounded.

    The one chunked resampling loop of the estimators that evaluate a
    statistic on weight rows (classification metrics, agreement, the
    reliability profile, quantiles, the Pareto frontier, Bradley-Terry):
    blocks are drawn in order from one generator. The rows depend on the
    block size (numpy buffers its narrow bounded-integer draws), so an
    estimator keeps its ``elements_per_resample`` to keep its numbers.

    Parameters
    ----------
    n_tasks, n_resamples, rng, clusters
        As in :func:`task_weights`.
    elements_per_resample : int, optional
        Size of the statistic's work array per resample (default
        ``n_tasks``); a block holds ``BLOCK_ELEMENTS // elements_per_resample``
        resamples (at least one).

    Yields
    ------
    numpy.ndarray
        float64 weights, shape ``(block, n_tasks)``; the blocks' rows add up
        to ``n_resamples``.

    Examples
    --------
    >>> blocks = list(weight_blocks(4, 5, rng=0, elements_per_resample=2**20))
    >>> [b.shape for b in blocks]
    [(2, 4), (2, 4), (1, 4)]
    """
    gen = as_rng(rng)
    per = n_tasks if elements_per_resample is None else elements_per_resample
    step = max(1, BLOCK_ELEMENTS // max(int(per), 1))
    for i0 in range(0, n_resamples, step):
        yield task_weights(n_tasks, min(step, n_resamples - i0), gen, clusters=clusters).astype(
            float
        )


def _index_dtype(n: int) -> type:
    """The narrowest index type that holds ``0..n-1``: narrow draws are cheaper.

    Measured for 10,000 x 500 draws: uint16 6.5 ms, int32 8.8 ms, int64 11.7 ms.
    """
    if n <= 2**16:
        return np.uint16
    return np.int32 if n < 2**31 - 1 else np.int64


def _row_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """``out[b, j]`` = number of times ``j`` occurs in ``idx[b]`` (bincount, much faster than add.at)."""
    n_rows = idx.shape[0]
    # the flat index is formed directly in intp, the type bincount works in: an int32
    # flat index would be converted to intp inside bincount (an extra 5M-element copy)
    flat = np.add(idx, (np.arange(n_rows, dtype=np.intp) * n)[:, None], dtype=np.intp).ravel()
    return np.bincount(flat, minlength=n_rows * n).reshape(n_rows, n).astype(np.int64, copy=False)


# pass@k / pass^k per cell


def _comb_ratio(a: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """``C(a, k) / C(n, k)`` for ``0 <= a <= n`` and ``k <= n``, in product form.

    Entries with ``k > n`` come out as garbage and must be masked by the caller.
    """
    a = np.asarray(a, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    out = np.ones(np.broadcast_shapes(a.shape, n.shape))
    # entries with n < k are masked by the caller, so factors beyond the largest n are
    # never needed: the loop is bounded by the data, not by k (k = 10**5 costs nothing)
    n_max = int(np.nanmax(n)) if n.size and np.isfinite(n).any() else 0
    for i in range(min(int(k), max(n_max, 0))):
        # a factor is 0 as soon as i >= a, which makes C(a, k) = 0 for a < k
        out *= np.clip(a - i, 0.0, None) / np.maximum(n - i, 1.0)
    return out


def _pass_kernel(
    n: np.ndarray,
    c: np.ndarray,
    k: int,
    *,
    kind: Literal["at", "hat"],
    plugin: bool = False,
    small_n: Literal["nan", "clip"] = "nan",
) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell pass@k (``kind="at"``) or pass^k (``"hat"``).

    Returns the values and a boolean mask of cells with ``0 < n < k`` (NaN
    under ``small_n="nan"``). Cells with ``n == 0`` are NaN (nothing was run).
    """
    n = np.asarray(n, dtype=np.float64)
    c = np.asarray(c, dtype=np.float64)
    short = (n > 0) & (n < k)
    if plugin:
        p = ratio(c, n)
        val = p**k if kind == "hat" else 1.0 - (1.0 - p) ** k
        if small_n == "nan":
            val = np.where(short, np.nan, val)
        return val, short
    if small_n == "clip":
        # seed 001: k_eff = min(k, n); loop over the distinct k_eff values
        val = np.full(n.shape, np.nan)
        keff = np.minimum(k, n)
        for ke in np.unique(keff[n > 0]).astype(int):
            sel = (keff == ke) & (n > 0)
            a = c[sel] if kind == "hat" else n[sel] - c[sel]
            r = _comb_ratio(a, n[sel], ke)
            val[sel] = r if kind == "hat" else 1.0 - r
        return val, short
    a = c if kind == "hat" else n - c
    r = _comb_ratio(a, n, k)
    val = r if kind == "hat" else 1.0 - r
    val = np.where((n > 0) & ~short, val, np.nan)
    return val, short


# the clustered t-test of a mean


#: a spread (SD or SE) at most this share of the largest |value| it came from is the rounding of 0
ZERO_SPREAD = 1e-12


def exact_zero_spread(spread, scale):
    """``spread`` with the rounding residue of an exact 0 set to 0: values <= ``ZERO_SPREAD * scale``.

    Identical differences have no spread, but summing them can leave one: a pair of agents whose
    differences agree in both of two clusters got a CR2 SE of 6.9e-18 beside a difference of 0.29
    (a t of 4e16), where its CR2 scores were exactly 0, and the multivariate-t max-T then failed
    (``SVD did not converge``). ``scale``: the largest |value| the spread was computed from.
    """
    spread = np.asarray(spread, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(spread <= ZERO_SPREAD * np.asarray(scale, dtype=float), 0.0, spread)


def cr2_mean_se(d: np.ndarray, codes: np.ndarray) -> tuple[float, float, int]:
    """Bias-reduced (CR2) cluster-robust SE of ``mean(d)`` and its Bell-McCaffrey df.

    For a mean the CR2 adjustment ``(I - H_gg)^(-1/2)`` scales cluster ``g``'s
    residual sum ``s_g`` by ``(1 - n_g / N)^(-1/2)``, so
    ``SE^2 = sum_g s_g^2 / (1 - n_g / N) / N^2``; the Satterthwaite degrees of
    freedom match the first two moments of that variance estimator under
    independent equal-variance errors, ``df = tr(B)^2 / tr(B^2)`` with
    ``B_gh = (w_g w_h)^(1/2) (n_g [g = h] - n_g n_h / N) / N^2`` and
    ``w_g = 1 / (1 - n_g / N)`` (Bell and McCaffrey 2002; Imbens and Kolesar
    2016; Pustejovsky and Tipton 2018). With equal cluster sizes this is
    exactly CR1 (``G / (G - 1)``) with ``G - 1`` df; with unequal sizes the df
    shrink toward the few clusters that carry the data, where CR1 with ``G - 1``
    df rejects far too often.

    Returns
    -------
    (se, df, G)
        NaN SE and df with fewer than 2 clusters.

    Examples
    --------
    >>> se, df, g = cr2_mean_se(np.array([1.0, 0.0, 1.0, 1.0]), np.array([0, 0, 1, 1]))
    >>> round(se, 4), round(df, 6), g
    (0.25, 1.0, 2)
    """
    _, codes = np.unique(np.asarray(codes), return_inverse=True)
    n_g = np.bincount(codes).astype(float)
    G, N = n_g.size, float(n_g.sum())
    if G < 2:
        return np.nan, np.nan, G
    s = np.bincount(codes, weights=d - d.mean(), minlength=G)
    w = 1.0 / (1.0 - n_g / N)
    se = float(exact_zero_spread(np.sqrt((s**2 * w).sum()) / N, np.abs(d).max()))
    r = np.sqrt(w)
    B = np.outer(r, r) * (np.diag(n_g) - np.outer(n_g, n_g) / N) / N**2
    df = float(np.trace(B) ** 2 / (B * B).sum())
    return se, df, G


# bootstrap intervals


class DegenerateBootstrapWarning(SmallSampleWarning):
    """The bootstrap distribution (or the jackknife) is degenerate; the BCa interval is NaN."""


def _column_quantiles(dist: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Linear-interpolated quantile ``q[..., j]`` of column ``dist[:, j]`` ignoring NaN.

    ``dist``: (B, U); ``q``: (U,) or (U, m). Matches ``np.nanquantile`` (method 'linear').
    """
    srt = np.sort(dist, axis=0)  # NaN last
    m = np.isfinite(srt).sum(0)  # (U,)
    q = np.asarray(q, dtype=float)
    qq = q if q.ndim == 2 else q[:, None]
    pos = np.nan_to_num(qq * (m[:, None] - 1), nan=0.0)
    lo = np.clip(np.floor(pos).astype(np.int64), 0, np.maximum(m[:, None] - 1, 0))
    hi = np.clip(lo + 1, 0, np.maximum(m[:, None] - 1, 0))
    frac = pos - lo
    cols = np.arange(srt.shape[1])[:, None]
    a, b = srt[lo, cols], srt[hi, cols]
    out = a + frac * (b - a)
    out = np.where((m[:, None] > 0) & np.isfinite(qq), out, np.nan)
    return out if q.ndim == 2 else out[:, 0]


class BcaCounts:
    """``_bca_parts``' count of the statistics with no BCa interval, and the one value of each flat one.

    ``counts``: ``[undefined, flat, one_unit]`` (``_bca_parts``); ``flat_values``: the
    estimates of the flat statistics that are not one-unit ones (every task, or cluster, has
    that one value), which :func:`warn_bca_undefined` names. Added up block by block with
    ``+`` (``0 + counts`` too), as a caller that takes the columns in blocks sums them.
    """

    __slots__ = ("counts", "flat_values")

    def __init__(self, counts, flat_values=()) -> None:
        self.counts = np.asarray(counts, dtype=int)
        self.flat_values = np.asarray(flat_values, dtype=float).ravel()

    def __add__(self, other):
        if isinstance(other, BcaCounts):
            return BcaCounts(self.counts + other.counts, np.concatenate([self.flat_values, other.flat_values]))
        return BcaCounts(self.counts + np.asarray(other, dtype=int), self.flat_values)

    __radd__ = __add__


def _bca_parts(
    theta: np.ndarray, dist: np.ndarray, jack: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, BcaCounts]:
    """:func:`_bca` without its warning: limits, z0, a and how many statistics have no BCa interval.

    The count (:class:`BcaCounts`) is ``[undefined, flat, one_unit]``: the statistics with no BCa
    interval; of them those whose every resample equals the estimate, where the percentile interval has no
    width either; and of those the ones whose data lie in one resampled unit (leaving that task or
    cluster out leaves the statistic undefined: an agent whose tasks all sit in one cluster), where
    the cause is not one value on every task; with the values of the flat ones that are not. Every
    output is a function of its own column, so a caller that takes the columns in blocks adds the
    counts up and warns once (:func:`warn_bca_undefined`).
    """
    defined = np.isfinite(dist)
    m = defined.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        # resamples equal to the estimate count half (mid-rank, as scipy.stats.bootstrap does): on 0/1
        # scores about 4% of them tie, and counting none of them put z0 at -0.054 instead of -0.010 on
        # SWE-bench and the 30-task simulated interval's upper end too low 4.2% of the time (2.5% nominal)
        below = np.where(defined, dist < theta, False).sum(0) + 0.5 * np.where(defined, dist == theta, False).sum(0)
        z0 = ndtri(below / m)
        d = np.nanmean(jack, axis=0) - jack
        acc = (d**3).sum(0) / (6.0 * ((d**2).sum(0)) ** 1.5)
        zl, zu = ndtri(alpha / 2), ndtri(1 - alpha / 2)
        ql = ndtr(z0 + (z0 + zl) / (1 - acc * (z0 + zl)))
        qu = ndtr(z0 + (z0 + zu) / (1 - acc * (z0 + zu)))
    q = np.stack([ql, qu], -1)
    bad = ~np.isfinite(q).all(-1)
    flat = bad & np.where(defined, dist == theta, True).all(0)  # no resample differs from the data
    # left out, one unit leaves the statistic undefined: all its data are in that unit, so a resample that
    # draws it repeats the estimate whatever the scores (SWE-bench's o3 at 0.68 on django's tasks alone)
    one = flat & ~np.isfinite(jack).all(0)
    counts = BcaCounts([int(bad.sum()), int(flat.sum()), int(one.sum())], theta[flat & ~one])
    return _column_quantiles(dist, q), z0, acc, counts


#: why a statistic whose data sit in one resampled unit has no resampling interval (the
#: DegenerateBootstrapWarning's words; the report's flag names the agent, its cluster and tasks)
ONE_UNIT_WHY = (
    "all its tasks lie in one resampled unit (an agent whose tasks all sit in one cluster, or that has "
    "one task), so every resample that draws that unit repeats the estimate and none measures its spread"
)
#: what holds instead where a statistic's tasks all sit in one cluster (pass_hat_k's interval over
#: its one cluster was NaN for SWE-bench's o3); with a single task nothing does
ONE_UNIT_ADVICE = (
    "without the clusters the task bootstrap gives an interval over those tasks, taking them as "
    "independent (too narrow if a cluster's tasks are alike): hierbench.freq.bootstrap_ci(data, cluster=None), "
    "or in the CLI a report of the log alone read without --cluster; of a single task no interval can be had: "
    "give more tasks"
)


def warn_bca_undefined(n_bad, n: int) -> None:
    """Warn that some of ``n`` statistics have no BCa interval (nothing when none).

    ``n_bad``: :func:`_bca_parts`' count (:class:`BcaCounts`), or a bare ``[undefined, flat,
    one_unit]`` (a bare number: none flat; the flat values then unknown). The advice differs by
    cause: where the resamples spread to one side of the estimate the percentile interval is
    defined and holds; where every resample equals the estimate because every task (cluster) has
    one mean it is ``[x, x]``, and the bound of ``pass_hat_k(data, 1)`` (the report's table flag:
    ``ZERO_WIDTH_ADVICE``) is the one to use: at 0 or 1 and at any one value between, which the
    warning names (``flat_cause``; it blamed an agent at 0, or 1, where every task scored 0.5);
    where it is because the statistic's tasks all sit in one resampled unit (one cluster), the
    task bootstrap without the clusters gives an interval over those tasks (pass_hat_k's over the
    one cluster is NaN unless few tasks carry the mean).
    """
    values = n_bad.flat_values if isinstance(n_bad, BcaCounts) else None
    counts = np.atleast_1d(n_bad.counts if isinstance(n_bad, BcaCounts) else np.asarray(n_bad, dtype=int))
    bad, flat = int(counts[0]), int(counts[1]) if counts.size > 1 else 0
    one = int(counts[2]) if counts.size > 2 else 0
    if not bad:
        return
    said = []
    if bad > flat:
        said.append(
            f"{bad - flat} of them: the bootstrap distribution lies entirely on one side of the estimate (or "
            "the jackknife values are all equal); use the percentile interval, defined there "
            "(method='percentile'; in hierbench.report.build bootstrap_method='percentile', and in the CLI's report and demo "
            "--bootstrap-method percentile), or more tasks"
        )
    if flat > one:
        said.append(
            f"{flat - one} of them: every resample equals the estimate ({flat_cause(values)}): "
            f"{ZERO_WIDTH_ADVICE} (the percentile interval there is [x, x], which does not hold)"
        )
    if one:
        said.append(f"{one} of them: {ONE_UNIT_WHY}: {ONE_UNIT_ADVICE} (the percentile interval there is [x, x], "
                    "which does not hold)")  # fmt: skip
    warn_user(
        f"BCa is undefined for {bad} of {n} statistics; their interval is NaN. " + "; ".join(said) + ".",
        DegenerateBootstrapWarning,
    )


def _bca(
    theta: np.ndarray, dist: np.ndarray, jack: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BCa limits (U, 2), z0 (U,), a (U,) from the estimate, distribution and jackknife."""
    lims, z0, acc, n_bad = _bca_parts(theta, dist, jack, alpha)
    warn_bca_undefined(n_bad, theta.shape[0])
    return lims, z0, acc


def percentile_bounds(dist: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap bounds along axis 0, NaN resamples left out (all NaN: NaN)."""
    a = (1.0 - prob) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanquantile(dist, a, axis=0), np.nanquantile(dist, 1.0 - a, axis=0)


#: fewer resampled units (tasks, or clusters) than this behind a resampling interval: it covers less
#: than its level (its spread is the plug-in sqrt((n - 1) / n) of the SD, with no t-like tails)
FEW_UNITS = 10


#: below this effective number of clusters a cluster bootstrap is flagged (every one: ``few_units``): the
#: lower end of Cameron and Miller's (2015, section VI) "fewer than 20 to fewer than 50 clusters"
#: for "few" in the balanced case (more in the unbalanced one), not a figure tuned to a data set
FEW_CLUSTERS = 20


def effective_clusters(codes: np.ndarray) -> float:
    """The clusters' worth in equal clusters, by their sizes: ``(sum n_g)^2 / sum n_g^2``.

    ``G`` for equal sizes, toward 1 as one cluster holds most tasks. It is Carter,
    Schnepel and Steigerwald's (2017) effective number of clusters ``G*`` of a mean
    with no correlation within a cluster; a positive correlation lowers ``G*`` further
    where the sizes differ, so this count is the more favourable one.

    Examples
    --------
    >>> effective_clusters(np.repeat(np.arange(4), 5)), round(effective_clusters(np.repeat([0, 1], [9, 1])), 3)
    (4.0, 1.22)
    """
    n_g = np.bincount(np.asarray(codes, dtype=np.intp)).astype(float)
    n_g = n_g[n_g > 0]
    return float(n_g.sum() ** 2 / (n_g**2).sum())


def few_units(codes: np.ndarray | None, n_tasks: int) -> tuple[float, int, int] | None:
    """The resampling rule for few outer units: ``(worth, count, limit)`` where they are few, else None.

    With clusters (``codes``, one per task resampled) their worth in equal clusters
    (:func:`effective_clusters`) against ``FEW_CLUSTERS``; without, the ``n_tasks`` against
    ``FEW_UNITS``. The one rule of every few-units warning (``rank_uncertainty``, ``time_horizon``,
    ``few_clusters_attrs``).

    Examples
    --------
    >>> few_units(None, 8), few_units(np.repeat(np.arange(4), 5), 20), few_units(None, 12)
    ((8.0, 8, 10), (4.0, 4, 20), None)
    """
    if codes is None:
        return None if n_tasks >= FEW_UNITS else (float(n_tasks), int(n_tasks), FEW_UNITS)
    worth = effective_clusters(codes)
    n = int(np.unique(np.asarray(codes)).size)
    return None if worth >= FEW_CLUSTERS else (worth, n, FEW_CLUSTERS)


def few_units_text(few: tuple[float, int, int], what: str, prob: float, clustered: bool = True) -> str:
    """The one sentence of the few-units warnings: how few ``what`` a bootstrap resamples, and what that costs.

    ``few`` is ``few_units``' ``(worth, count, limit)``; ``what`` names the units
    (``"repositories of column 'repo'"``); clusters (``clustered``) are also given their
    worth in equal ones. Callers may add their own consequence after it. The sentence of every
    few-units warning of a bootstrap (``bootstrap_ci``, ``rank_uncertainty``, ``time_horizon``,
    ``few_clusters_attrs``).

    Examples
    --------
    >>> few_units_text((3.87, 12, 20), "clusters of column 'repo'", 0.95)[:80]
    "the bootstrap resamples 12 clusters of column 'repo', worth 3.9 equal ones by th"
    """
    worth, n, limit = few
    by = f", worth {worth:.1f} equal ones by their sizes ((sum n_g)^2 / sum n_g^2)" if clustered else ""
    return (f"the bootstrap resamples {n} {what}{by}, fewer than {limit}: a bootstrap over so few units "
            f"covers less than its {prob:.0%}" + (" (Cameron and Miller 2015)" if clustered else ""))


def few_clusters_attrs(codes: np.ndarray | None, what: str, prob: float, then: str = "", *,
                       n_plain: int | None = None, plain: str = "tasks") -> dict:
    """Count the clusters a cluster bootstrap resamples; warn once where they are few. Returns the attrs.

    ``codes`` has one cluster code per observation resampled; ``what`` names the clusters for
    ``few_units_text``, ``then`` adds a consequence. The attrs are ``bootstrap_ci``'s:
    ``n_clusters``, ``n_clusters_effective`` (``effective_clusters``) and ``few_clusters``, the
    warning's text where ``few_units`` finds them few (a ``SmallSampleWarning``), else ``""``.
    Without clusters (``codes`` None) the ``n_plain`` units resampled one by one (named ``plain``)
    meet ``few_units``' other rule, fewer than ``FEW_UNITS``: the same warning, its text in the
    attr ``few_units``; nothing is said where ``n_plain`` is None.
    """
    if codes is None:
        few = None if n_plain is None else few_units(None, int(n_plain))
        if few is None:
            return {}
        text = few_units_text(few, plain, prob, clustered=False) + then
        warn_user(text + ".", SmallSampleWarning)
        return {"few_units": text}
    codes = np.asarray(codes)
    few = few_units(codes, int(codes.size))
    out = {"n_clusters": int(np.unique(codes).size), "n_clusters_effective": round(effective_clusters(codes), 3),
           "few_clusters": ""}
    if few is not None:
        out["few_clusters"] = few_units_text(few, what, prob) + then
        warn_user(out["few_clusters"] + ".", SmallSampleWarning)
    return out


def bootstrap_detail(unit: str, n_resamples: int) -> str:
    """Return the ``ci_detail`` of a task-bootstrap interval."""
    return f"bootstrap over {unit}, {n_resamples} resamples"


def warn_undefined_resamples(
    dist: np.ndarray, names: list[str], *, cause: str, category: type[Warning], only: np.ndarray | None = None
) -> None:
    """Warn, once, of the outputs a bootstrap left undefined in some resamples: each bootstrap's one rule.

    ``dist`` is (resample, *outputs); ``names`` names the outputs in ``dist``'s order,
    flattened (``"agent 'y'"``, ``"brier of agent 'a'"``); ``cause`` says why a resample can
    leave one undefined; ``only`` (the outputs' shape) restricts the count to outputs that
    are defined on the data (the caller says the rest elsewhere). The percentile and BCa
    limits leave those resamples out (``percentile_bounds``, ``_bca``).
    """
    n = dist.shape[0]
    warn_undefined_counts((~np.isfinite(dist)).reshape(n, -1).sum(0), n, names, cause=cause, category=category, only=only)


def warn_undefined_counts(
    n_undef: np.ndarray, n: int, names: list[str], *, cause: str, category: type[Warning],
    only: np.ndarray | None = None,
    drew: str = "the agent's tasks", more: str = "give the agent more tasks",
) -> None:
    """:func:`warn_undefined_resamples` from the counts: ``n_undef[i]`` of ``n`` resamples undefined.

    For a caller that never holds the whole distribution (it counts block by block).
    ``drew`` and ``more`` name the units and what would lower the share (a judge's items,
    not an agent's tasks).
    """
    if only is not None:
        n_undef = np.where(np.ravel(only), n_undef, 0)
    hit = np.flatnonzero(n_undef)
    if hit.size == 0:
        return
    hit = hit[np.argsort(-n_undef[hit], kind="stable")]  # the worst first
    listed = "; ".join(f"{names[i]} in {int(n_undef[i])} of {n} resamples" for i in hit[:3])
    rest = f"; and {hit.size - 3} more outputs" if hit.size > 3 else ""
    warn_user(
        f"undefined in some resamples: {listed}{rest} ({cause}). Each interval leaves out the "
        "resamples its output was undefined in (NaN in `distribution`) and rests on the rest. If "
        f"they are a large share, the interval describes only the resamples that drew {drew}: "
        f"{more} (or the missing input on more of them); more resamples do not lower the share.",
        category,
    )


def one_blas_thread():
    """Limit BLAS to one thread while fitting, when threadpoolctl is there.

    Small dense factorisations are slower with BLAS threads (and on a shared machine much
    slower).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def resolvable(n_units: int, n_tests: int, alpha: float) -> bool:
    """Whether a sign-flip test on ``n_units`` units can pass Holm's first threshold.

    Its smallest p-value is ``2^(1 - n_units)`` (every unit's difference of one sign);
    Holm's first threshold is ``alpha / n_tests``.

    Examples
    --------
    >>> resolvable(12, 300, 0.05), resolvable(500, 300, 0.05)
    (False, True)
    """
    return n_units >= 1 and (1 - n_units) * math.log(2) <= math.log(alpha / n_tests)
