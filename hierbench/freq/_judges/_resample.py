"""Resampling the judge metrics share: per-item inputs, the cluster bootstrap of a statistic of totals, its interval.

Every resample is a weight vector over items (how often each item, or each
item of a drawn cluster, was drawn), so a resampled confusion matrix is a
matrix product and no Python loop runs per resample. Items that share a task
are resampled as whole tasks (the cluster bootstrap of
:mod:`hierbench.freq._kernels`). The classification metrics, the curves and
the agreement statistics all take their per-item vectors, cluster codes and
intervals from here, and this module imports none of them.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import xarray as xr

from ..._base import HierbenchError
from ..._base import SmallSampleWarning
from ..._base import UndefinedMetricWarning
from ..._base import check_choice
from ..._base import check_int
from ..._base import check_prob
from ..._base import cluster_codes
from ..._base import warn_user
from ..._numerics import bounded_mean_bounds
from .._kernels import BLOCK_ELEMENTS
from .._kernels import BcaCounts
from .._kernels import DegenerateBootstrapWarning
from .._kernels import _bca_parts
from .._kernels import few_clusters_attrs
from .._kernels import percentile_bounds
from .._kernels import warn_undefined_counts
from .._kernels import weight_blocks

# the warning this module's bootstrap raises, handed on by the package
__all__ = ["SmallSampleWarning"]


def _vector(x: Any, name: str, dim: str) -> xr.DataArray:
    if isinstance(x, xr.DataArray):
        if x.ndim != 1:
            raise ValueError(f"`{name}` must be one-dimensional (dim {dim!r}); got dims {x.dims}")
        return x.rename({x.dims[0]: dim}) if x.dims[0] != dim else x
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise ValueError(f"`{name}` must be one-dimensional; got shape {arr.shape}")
    return xr.DataArray(arr, dims=dim)


def _binary(x: xr.DataArray, name: str) -> np.ndarray:
    """0/1 values as floats: numbers 0 or 1 and booleans; text is refused (not parsed)."""
    v = np.asarray(x.values)
    if v.dtype == bool:
        return v.astype(float)
    text = v.dtype.kind in "US" or (
        v.dtype.kind == "O" and any(isinstance(e, (str, bytes)) for e in v.ravel())
    )
    try:
        if text:
            raise TypeError
        f = v.astype(float)
    except (TypeError, ValueError) as err:
        raise ValueError(
            f"`{name}` must hold 0/1 or booleans; got values of type {v.dtype} (text is not "
            "read as numbers: convert it first)"
        ) from err
    bad = ~np.isin(f, [0.0, 1.0])
    if bad.any():
        idx = np.flatnonzero(bad)[:5]
        raise ValueError(
            f"`{name}` must hold 0/1 or booleans (no missing values); {int(bad.sum())} entries are "
            f"not, e.g. (index, value) {[(int(i), v[i].item() if hasattr(v[i], 'item') else v[i]) for i in idx]}"
        )
    return f


def _clusters(template: xr.DataArray, cluster: Any, dim: str) -> tuple[np.ndarray | None, str]:
    """Cluster codes from a coord name of ``template`` or an array of labels."""
    if cluster is None:
        return None, "item"
    if isinstance(cluster, str):
        if cluster not in template.coords:
            raise ValueError(
                f"`cluster` must name a coord along {dim!r} of the labels or be an array of labels; "
                f"got {cluster!r} (coords {list(template.coords)})"
            )
        res = cluster_codes(template, cluster, dim=dim)
    else:
        lab = np.asarray(cluster, dtype=object)
        if lab.shape != (template.sizes[dim],):
            raise ValueError(
                f"`cluster` must have one label per item ({template.sizes[dim]}); got shape {lab.shape}"
            )
        res = cluster_codes(template.assign_coords(cluster=(dim, lab)), "cluster", dim=dim)
    assert res is not None
    return res[0], "cluster"


def _weights(n: int, n_resamples: int, gen: np.random.Generator, codes: np.ndarray | None):
    return weight_blocks(n, n_resamples, gen, clusters=codes)


METHODS = ("studentized", "percentile", "bca")


def _common(prob, n_resamples, method="percentile"):
    check_choice(method, "method", METHODS)
    return check_prob(prob), check_int(n_resamples, "n_resamples", min=2)


def _pair(a: Any, b: Any, names: tuple[str, str], dim: str) -> tuple[xr.DataArray, xr.DataArray]:
    """Return two per-item vectors over the same items, of equal lengths.

    DataArrays labelled along ``dim`` are matched by label (the second put in the first's
    order), and refused when they label different items.
    """
    va, vb = _vector(a, names[0], dim), _vector(b, names[1], dim)
    if va.sizes[dim] == 0:
        raise ValueError(f"`{names[0]}` has no items: there is nothing to evaluate")
    if va.sizes[dim] != vb.sizes[dim]:
        raise ValueError(
            f"`{names[0]}` and `{names[1]}` must have one value per item; got "
            f"{va.sizes[dim]} and {vb.sizes[dim]}"
        )
    if dim in va.indexes and dim in vb.indexes and not va.indexes[dim].equals(vb.indexes[dim]):
        ia, ib = va.indexes[dim], vb.indexes[dim]
        if ia.has_duplicates or ib.has_duplicates or set(ia) != set(ib):
            only = sorted(map(str, set(ia) ^ set(ib)))[:5]
            raise ValueError(
                f"`{names[0]}` and `{names[1]}` label different items along {dim!r} (labels "
                f"in one only, e.g. {only}, or repeated labels): give both the same items"
            )
        vb = vb.reindex({dim: ia})
    return va, vb


#: fewest resampling units (items, or clusters with ``cluster``) a kappa or an average
#: precision is computed on: with 1 the statistic is meaningless (kappa's chance agreement
#: comes from that one item), with 2 half the resamples draw one item twice
MIN_UNITS = 3


def _check_units(codes: np.ndarray | None, n_items: int, unit: str, what: str) -> None:
    """Refuse ``what`` on fewer than ``MIN_UNITS`` items (clusters), naming the count."""
    n = n_items if codes is None else int(np.unique(codes).size)
    if n < MIN_UNITS:
        raise HierbenchError(
            f"{what} needs at least {MIN_UNITS} {unit}s; got {n}. On so few the statistic "
            f"carries almost no information and a bootstrap over {unit}s cannot measure its "
            "uncertainty (many resamples draw one item again and again)"
        )


def _warn_undefined_resamples(dist: np.ndarray, est: float, n_resamples: int, what: str, why: str) -> int:
    """Count the resamples where ``what`` is undefined (0/0), warn by the bootstraps' one rule; return the count.

    They are left out of the interval, which then rests on the other resamples
    only. Nothing is said when ``est`` itself is undefined (its own warning says so).
    """
    n_undef = int((~np.isfinite(dist)).sum())
    warn_undefined_counts(
        np.array([n_undef]), n_resamples, [what], cause=why, category=UndefinedMetricWarning,
        only=np.array([np.isfinite(est)]), drew="items where it is defined", more="give more items",
    )
    return n_undef


def _units(rows: np.ndarray, codes: np.ndarray | None):
    """Return the resampling units: one item index per unit, and the units' total rows (G, d)."""
    if codes is None:
        return np.arange(rows.shape[0]), rows
    _, first, inv = np.unique(codes, return_index=True, return_inverse=True)
    tot = np.zeros((first.size, rows.shape[1]))
    np.add.at(tot, inv, rows)
    return first, tot


def _linearised_se(f, S: np.ndarray, W: np.ndarray, U: np.ndarray, G: int) -> np.ndarray:
    """Delta-method standard error of ``f(S)`` from unit totals, in memory linear in the units.

    ``U`` (r, d) holds the distinct rows ``x_g`` of the units' totals, ``W``
    (b, r) how often each was drawn, and ``S = W @ U`` (b, d). With
    ``u = grad f(S)`` the linearised variance is
    ``G / (G - 1) * sum_g (u.x_g - u.S / G)^2``, the cluster-robust (CR1)
    sandwich of a smooth function of totals. Only the products ``u.x_g`` are
    needed, never ``sum_g x_g x_g^T`` (d x d per resample: with kappa's
    d = C^2 confusion cells that grew as C^4 and asked 38 GiB at 40 labels).
    They are central differences (the statistics here are ratios or
    polynomials of shares): along each coordinate when ``d <= r``, else along
    each distinct row ``x_g`` (a directional derivative), whichever needs
    fewer evaluations of ``f``.
    """
    d = S.shape[1]
    scale = 1e-6 * np.maximum(np.abs(S).sum(1, keepdims=True), 1e-300)  # (b, 1)
    dirs = np.eye(d) if d <= U.shape[0] else U
    norms = np.maximum(np.abs(dirs).sum(1), 1e-300)
    cols = []
    for x, nx in zip(dirs, norms, strict=True):
        h = scale / nx
        with np.errstate(invalid="ignore", divide="ignore"):
            cols.append((f(S + h * x) - f(S - h * x)) / (2 * h))
    P = np.stack(cols, axis=-1)  # (b, q, d) gradient, or (b, q, r) products u.x_g
    if d <= U.shape[0]:
        P = P @ U.T  # (b, q, r)
    quad = np.einsum("bqr,br->bq", P * P, W)
    lin = np.einsum("bqr,br->bq", P, W)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (quad - lin**2 / G) * (G / (G - 1) if G > 1 else np.nan)
    return np.sqrt(np.clip(var, 0.0, None))


#: most evaluations of a statistic's cells the studentized standard error may take over all
#: resamples (resamples x directions x cells): about a minute; beyond it the method is refused
MAX_STUDENTIZED_WORK = 2 * 10**9


def _check_studentized_work(d: int, r: int, n_resamples: int) -> None:
    """Refuse the studentized interval when its finite differences would take too long."""
    work = n_resamples * min(d, r) * d
    if work > MAX_STUDENTIZED_WORK:
        raise HierbenchError(
            f"method='studentized' would evaluate the statistic on {n_resamples} resamples x "
            f"{min(d, r)} directions x {d} cells = {work:.3g} values, over the limit of "
            f"{MAX_STUDENTIZED_WORK:.0e} (about a minute); for kappa the cells are the C^2 pairs of "
            f"C categories. Use method='percentile' (one evaluation per resample), fewer "
            "resamples, or fewer categories"
        )


def _bootstrap(
    f,
    rows: np.ndarray,
    codes: np.ndarray | None,
    n_resamples: int,
    gen: np.random.Generator,
    method: str,
    prob: float,
    bounds: tuple[float, float],
    skip: np.ndarray | None = None,
):
    """Estimate, bootstrap distribution and interval of ``f(w @ rows)`` (statistics along the last axis).

    ``skip`` (one bool per statistic) marks those whose interval the caller replaces by a
    bound (a proportion at 0 or 1): BCa's warning leaves them out.

    ``method="studentized"`` is the symmetric bootstrap-t (Hall 1988):
    ``t* = (f* - f) / se*`` with the linearised cluster-robust standard error
    of :func:`_linearised_se`, limits ``f -+ q se`` with ``q`` the ``prob``
    quantile of ``|t*|``, clipped to ``bounds``. Unlike the percentile
    interval it corrects for the heavier tails of a ratio of totals over few
    clusters; the symmetric form covered closer to nominal at 20-40 clusters
    than the equal-tailed one (recall 0.948 vs 0.960, 2,000 replications).
    """
    n = rows.shape[0]
    est = f(rows.sum(0)[None])[0]
    studentized = method == "studentized"
    if studentized:
        first, X = _units(rows, codes)
        G = X.shape[0]
        uniq, uinv = np.unique(X, axis=0, return_inverse=True)
        pick = np.zeros((G, uniq.shape[0]))
        pick[np.arange(G), uinv.ravel()] = 1.0  # unit -> its (distinct) row of totals
        _check_studentized_work(rows.shape[1], uniq.shape[0], n_resamples)
        se = _linearised_se(f, X.sum(0)[None], pick.sum(0)[None], uniq, G)[0]
    dists, ts = [], []
    for w in weight_blocks(n, n_resamples, gen, clusters=codes):
        S = w @ rows
        th = f(S)
        dists.append(th)
        if studentized:
            # a unit's items share its weight: draws of each distinct row of totals
            se_b = _linearised_se(f, S, w[:, first] @ pick, uniq, G)
            with np.errstate(invalid="ignore", divide="ignore"):
                t = (th - est) / se_b
            ts.append(np.where(th == est, 0.0, t))
    dist = np.concatenate(dists)
    if method == "percentile":
        lo, hi = percentile_bounds(dist, prob)
    elif method == "bca":
        lo, hi = _bca_limits(f, rows, codes, est, dist, prob, skip)
    else:
        t = np.abs(np.where(np.isnan(dist), np.nan, np.concatenate(ts)))
        # |t*| = inf: a resample whose drawn units all give the same value (se* = 0) but
        # another estimate. Ranked above every finite |t*| (not interpolated into NaN);
        # when they reach the prob-quantile the interval is the whole range, with a warning
        t = np.where(np.isinf(t), np.finfo(float).max, t)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            q = np.nanquantile(t, prob, axis=0, method="higher")
        wide = np.isfinite(est) & (se > 0) & (q == np.finfo(float).max)
        if wide.any():
            warn_user(
                f"the studentized interval spans the whole range {list(bounds)} for "
                f"{int(wide.sum())} statistic(s): more than {1 - prob:.0%} of the resamples drew "
                f"units that all give the same value (zero standard error), as happens with very "
                f"few items or clusters ({X.shape[0]} here). No bootstrap interval is reliable "
                "with so few; method='percentile' shows the spread of the resampled values",
                SmallSampleWarning,
            )
        with np.errstate(invalid="ignore"):
            lo = np.where(se > 0, est - q * se, est)
            hi = np.where(se > 0, est + q * se, est)
        lo = np.clip(lo, *bounds)
        hi = np.clip(hi, *bounds)
        undefined = ~np.isfinite(est)
        lo, hi = np.where(undefined, np.nan, lo), np.where(undefined, np.nan, hi)
    return est, dist, lo, hi


def _bca_limits(f, rows, codes, est, dist, prob: float, skip: np.ndarray | None):
    """BCa limits ``(lo, hi)`` with a jackknife over items (clusters); warns of those left undefined.

    The statistics ``skip`` marks are left out of the warning (their caller gives a bound).
    """
    n = rows.shape[0]
    groups = np.arange(n) if codes is None else np.asarray(codes)
    g = int(groups.max()) + 1
    step = max(1, BLOCK_ELEMENTS // max(n, 1))
    jack = []
    for g0 in range(0, g, step):
        ids = np.arange(g0, min(g, g0 + step))
        jack.append(f((groups[None, :] != ids[:, None]).astype(float) @ rows))
    theta, jack = np.atleast_1d(np.asarray(est, dtype=float)), np.concatenate(jack)
    lim, _, _, counts = _bca_parts(theta, dist, jack, 1 - prob)
    if skip is not None and np.any(skip):  # counted again without them
        keep = ~np.asarray(skip, dtype=bool)
        counts = BcaCounts([0, 0, 0]) if not keep.any() else _bca_parts(
            theta[keep], dist[:, keep], jack[:, keep], 1 - prob)[3]
    _warn_bca_undefined(counts, theta.size)
    return lim[:, 0], lim[:, 1]


#: what to do where every resample of a judge statistic equals its estimate (BCa's warning)
FLAT_ADVICE = (
    "every item, or cluster, gives the statistic one value (a kappa of 1 where the raters agree on every "
    "item, say), so no resample can differ from the data and a resampling interval has no width (BCa: none "
    "at all), which does not hold. Give more items or clusters, or report the counts behind the statistic "
    "with an exact interval of a proportion, hierbench.freq.exact_interval(successes, n) (the items the "
    "raters agree on, say)"
)


def _warn_bca_undefined(counts: BcaCounts, n: int) -> None:
    """Warn that some of ``n`` judge statistics have no BCa interval, with advice that fits a judge.

    ``counts``: ``_bca_parts``' count ``[undefined, flat, one_unit]``. The package's
    ``warn_bca_undefined`` advises ``pass_hat_k``, which is for pass rates, not for a
    confusion matrix or a kappa.
    """
    bad, flat, one = (int(c) for c in counts.counts)
    if not bad:
        return
    said = []
    if bad > flat:
        said.append(
            f"{bad - flat} of them: the bootstrap distribution lies entirely on one side of the estimate (or the "
            "jackknife values are all equal); use method='studentized' (the default) or 'percentile', or more items"
        )
    if flat > one:
        said.append(f"{flat - one} of them: {FLAT_ADVICE}")
    if one:
        said.append(
            f"{one} of them: all the items it rests on lie in one cluster, so every resample that draws that "
            "cluster repeats the estimate; without `cluster` the items are resampled one by one (taken as "
            "independent: too narrow if a cluster's items are alike)"
        )
    warn_user(
        f"BCa is undefined for {bad} of {n} statistics; their interval is NaN. " + "; ".join(said) + ".",
        DegenerateBootstrapWarning,
    )


def _edge_bounds(at_one: Any, n_units: Any, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided bounds of a proportion observed at 0 (``at_one`` False) or 1 over ``n_units`` units.

    The package's one bound for a mean of values in [0, 1] (``bounded_mean_bounds`` of
    ``hierbench._numerics``) at a total of 0 or ``n``: with ``a = (1 - prob) / 2``, ``[0, 1 -
    a^(1/n)]`` at 0 and ``[a^(1/n), 1]`` at 1. Over ``n`` independent items this is
    Clopper-Pearson's interval for 0 (or ``n``) of ``n``; over ``n`` clusters the bound for the
    mean of their shares (every cluster's share 0, or 1): ``P(every share is 0) <= (1 - mean)^n``.

    Examples
    --------
    >>> lo, hi = _edge_bounds(True, 30, 0.95)
    >>> round(float(lo), 4), float(hi)
    (0.8843, 1.0)
    """
    one, n = np.broadcast_arrays(np.asarray(at_one, dtype=bool), np.asarray(n_units, dtype=np.int64))
    lo, hi = bounded_mean_bounds(np.where(one, n, 0).astype(float), n, prob)
    return lo.reshape(one.shape), hi.reshape(one.shape)


def _few_clusters(codes: np.ndarray | None, prob: float, n_items: int) -> dict:
    """Warn where the items' clusters, or the ``n_items`` items themselves, are few (``few_clusters_attrs``).

    The interval's attrs.
    """
    return few_clusters_attrs(codes, "clusters of the items", prob, "; the interval looks surer than the data allow",
                              n_plain=n_items, plain="items")


def _detail(method: str, unit: str, n_resamples: int) -> tuple[str, str]:
    """``ci_kind`` and ``ci_detail`` of a bootstrap interval of this module."""
    base = f"bootstrap over {unit}s, {n_resamples} resamples"
    if method == "studentized":
        return "t", (
            f"symmetric studentized bootstrap (bootstrap-t) over {unit}s, {n_resamples} resamples: "
            f"estimate -+ q se, q the prob-quantile of |theta* - theta| / se*, se the linearised "
            f"(delta-method) {unit}-robust standard error"
        )
    return method, base


def _warn_nan(value: float, why: str) -> None:
    """Say why a point estimate is undefined (``"<why> is undefined (NaN)"``), when it is NaN."""
    if not np.isfinite(value):
        warn_user(f"{why} is undefined (NaN)", UndefinedMetricWarning)
