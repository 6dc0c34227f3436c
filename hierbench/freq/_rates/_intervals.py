"""Success rates and their intervals.

Wald, Wilson, Clopper-Pearson, pooled binomial, clustered standard errors,
design effect, finite-population and stratified estimates.

Every interval is a DataArray with a trailing dim ``ci_bound = ["lower", "upper"]``
and attrs ``ci_prob`` and ``ci_kind``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr
from numpy.typing import ArrayLike
from scipy import stats

if TYPE_CHECKING:
    import pandas as pd

from ..._base import DEFAULT_PROB
from ..._base import Result
from ..._base import UndefinedWarning
from ..._base import check_dim
from ..._base import check_prob
from ..._base import cluster_codes
from ..._base import interval_label
from ..._base import is_binary
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from ..._docs import fill_doc
from ..._numerics import cluster_robust_se as _cluster_robust_se
from ..._numerics import wilson_bounds as _wilson_bounds
from .._inputs import with_counts_hash
from .._kernels import normal_z
from ._logit_t import warn_no_interval
from ._passk import POPULATION_OVER
from ._passk import POPULATION_OVER_CLUSTERS

__all__ = [
    "EmptySampleWarning",
    "IntervalResult",
    "SuccessRateResult",
    "clustered_se",
    "design_effect",
    "exact_interval",
    "finite_population_se",
    "pooled_binomial_interval",
    "proportion_interval",
    "stratified_mean",
    "success_rate",
    "wald_interval",
    "wilson_interval",
]


class EmptySampleWarning(UndefinedWarning):
    """An estimate or interval was asked for with no observations (n = 0): it is NaN."""


def _z(prob: float) -> float:
    return normal_z(check_prob(prob))


def _as_da(x, name: str) -> xr.DataArray:
    if isinstance(x, xr.DataArray):
        return x.astype(float)
    arr = np.asarray(x, dtype=float)
    return xr.DataArray(arr, dims=[f"dim_{i}" for i in range(arr.ndim)])


def _check_counts(successes, n, *, integer: bool) -> tuple[xr.DataArray, xr.DataArray]:
    s, m = xr.broadcast(_as_da(successes, "successes"), _as_da(n, "n"))
    sv, nv = s.values, m.values
    bad_n = ~np.isfinite(nv) | (nv < 0)  # a NaN or infinite n is no count of trials (audit T finding 8)
    if integer:
        bad_n |= nv != np.round(nv)
    if bad_n.any():
        rule = "a finite non-negative integer" if integer else "a finite non-negative number"
        raise ValueError(
            f"`n` must be {rule}; {int(bad_n.sum())} values are not, e.g. {nv[bad_n][:5].tolist()}"
        )
    bad = (sv < 0) | (sv > nv) | ~np.isfinite(sv)
    if integer:
        bad |= sv != np.round(sv)
    if bad.any():
        rule = "an integer in [0, n]" if integer else "in [0, n]"
        raise ValueError(
            f"`successes` must be {rule}; {int(bad.sum())} values are not, e.g. "
            f"(successes, n) {list(zip(sv[bad][:5].tolist(), nv[bad][:5].tolist(), strict=True))}"
        )
    if (nv == 0).any():
        warn_user(
            f"{int((nv == 0).sum())} intervals have n = 0; they are NaN.", EmptySampleWarning,
        )
    return s, m


def _pack(lo, hi, template: xr.DataArray, prob: float, kind: str, detail: str | None = None) -> xr.DataArray:
    return make_interval(
        np.asarray(lo, dtype=float),
        np.asarray(hi, dtype=float),
        prob=prob,
        kind=kind,
        detail=detail,
        template=template,
    )


def _counts_interval(successes, n, prob, kind: str, bounds, *, integer: bool = False, detail=None):
    """Check the level, then the counts, and pack ``bounds(s, m, prob)`` as an interval of ``kind``.

    The one path of :func:`wald_interval`, :func:`wilson_interval` and :func:`exact_interval`.
    """
    prob = check_prob(prob)
    s, m = _check_counts(successes, n, integer=integer)
    lo, hi = bounds(s, m, prob)
    return _pack(lo, hi, s, prob, kind, detail)


def wald_interval(successes: ArrayLike, n: ArrayLike, *, prob: float = DEFAULT_PROB) -> xr.DataArray:
    """Wald (normal-approximation) interval ``p +- z sqrt(p (1 - p) / n)``.

    Not clipped to [0, 1]: at 9/10 it reaches above 1, which is the point of
    showing it. Prefer :func:`wilson_interval`.

    Parameters
    ----------
    successes, n : array-like or xarray.DataArray
        Success counts (may be fractional, e.g. partial credit sums) and trials.
    prob : float
        Interval probability.

    Returns
    -------
    xarray.DataArray
        Trailing dim ``ci_bound``; NaN (and :class:`EmptySampleWarning`) where n = 0.

    Examples
    --------
    >>> wald_interval(312, 500).round(3).values.tolist()
    [0.582, 0.666]
    """
    return _counts_interval(successes, n, prob, "wald", _wald_bounds)


def _wald_bounds(s: xr.DataArray, m: xr.DataArray, prob: float):
    z = normal_z(prob)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = (s / m.where(m > 0)).values
        half = z * np.sqrt(p * (1 - p) / m.where(m > 0).values)
    return p - half, p + half


def wilson_interval(successes: ArrayLike, n: ArrayLike, *, prob: float = DEFAULT_PROB) -> xr.DataArray:
    """Wilson score interval (Wilson 1927): sensible at 0/n and n/n and for small n.

    ``centre = (p + z^2 / 2n) / (1 + z^2 / n)``, ``half = z sqrt(p (1 - p) / n
    + z^2 / 4n^2) / (1 + z^2 / n)``.

    Examples
    --------
    >>> wilson_interval(9, 10).round(3).values.tolist()
    [0.596, 0.982]
    """
    return _counts_interval(
        successes, n, prob, "wilson", lambda s, m, p: _wilson_bounds(s.values, m.values, normal_z(p))
    )


def exact_interval(successes: ArrayLike, n: ArrayLike, *, prob: float = DEFAULT_PROB) -> xr.DataArray:
    """Clopper-Pearson ("exact") interval from beta quantiles; conservative.

    Examples
    --------
    >>> exact_interval(0, 10).round(4).values.tolist()
    [0.0, 0.3085]
    """
    return _counts_interval(
        successes, n, prob, "exact", _exact_bounds, integer=True,
        detail="Clopper-Pearson (beta quantiles)",
    )


def _exact_bounds(s: xr.DataArray, m: xr.DataArray, prob: float):
    a = (1 - prob) / 2
    sv, nv = s.values, m.values
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(sv > 0, stats.beta.ppf(a, sv, nv - sv + 1), 0.0)
        hi = np.where(sv < nv, stats.beta.ppf(1 - a, sv + 1, nv - sv), 1.0)
    return np.where(nv > 0, lo, np.nan), np.where(nv > 0, hi, np.nan)


@dataclass(frozen=True, repr=False)
class IntervalResult(Result):
    """An estimate with its standard error and interval.

    Attributes
    ----------
    estimate, standard_error : xarray.DataArray
    ci : xarray.DataArray
        Trailing dim ``ci_bound``; attrs ``ci_prob``, ``ci_kind``.
    n : xarray.DataArray
        Number of sampling units the estimate rests on.
    """

    estimate: xr.DataArray
    standard_error: xr.DataArray
    ci: xr.DataArray
    n: xr.DataArray
    ci_kind: xr.DataArray | None = None

    def _repr_lines(self) -> list[str]:
        """The quantity and the unit its interval treats as independent (``estimate.attrs["quantity"]``)."""
        what = self.estimate.attrs.get("quantity", "estimate")
        return [f"{type(self).__name__}: {what}, {interval_label(self.ci)} interval", *self._cell_lines()]

    def _cell_notes(self) -> xr.DataArray | None:
        """Each cell's interval kind where the kinds differ (``ci_kind`` "mixed")."""
        if self.ci_kind is None or self.ci.attrs.get("ci_kind") != "mixed":
            return None
        return self.ci_kind.astype(object) + " interval"

    def to_frame(self) -> pd.DataFrame:
        """One row per cell; with ``ci_kind`` given, the column names each row's kind (not "mixed")."""
        df = super().to_frame()
        if self.ci_kind is not None:
            df["ci_kind"] = np.asarray(self.ci_kind.transpose(*self.estimate.dims).values, dtype=object).ravel()
        return df


@fill_doc
def proportion_interval(
    successes: ArrayLike, n: ArrayLike, *, method: str = "wilson", prob: float = DEFAULT_PROB
) -> IntervalResult:
    """A success proportion ``successes / n`` with its interval, as a result object.

    The same intervals as :func:`wilson_interval`, :func:`wald_interval` and
    :func:`exact_interval`, with the point estimate beside them (``estimate``,
    ``ci``, ``standard_error = sqrt(p (1 - p) / n)``, ``n``), so that
    :func:`hierbench.compare.side_by_side` lines it up with other results.

    Parameters
    ----------
    successes, n : array-like or xarray.DataArray
        Success counts and trials (``method="exact"`` needs whole counts).
    method : {"wilson", "wald", "exact"}
    %(prob)s

    Returns
    -------
    IntervalResult

    Examples
    --------
    >>> r = proportion_interval(9, 10)
    >>> float(r.estimate), r.ci.round(3).values.tolist()
    (0.9, [0.596, 0.982])
    """
    from ..._base import check_choice

    check_choice(method, "method", ["wilson", "wald", "exact"])
    fn = {"wilson": wilson_interval, "wald": wald_interval, "exact": exact_interval}[method]
    ci = fn(successes, n, prob=prob)
    s, m = xr.broadcast(_as_da(successes, "successes"), _as_da(n, "n"))
    with np.errstate(invalid="ignore", divide="ignore"):
        p = s / m.where(m > 0)
        se = np.sqrt(p * (1 - p) / m.where(m > 0))
    what = "success proportion successes / n, the n trials as independent draws"
    return IntervalResult(p.rename("estimate").assign_attrs(quantity=what), se.rename("standard_error"), ci,
                          m.rename("n"))


def _normal_ci(
    est: xr.DataArray, se: xr.DataArray, prob: float, kind: str, detail: str | None = None
) -> xr.DataArray:
    z = _z(prob)
    return _pack((est - z * se).values, (est + z * se).values, est, prob, kind, detail)


def _scores(data, dim: str, argname: str) -> xr.DataArray:
    if isinstance(data, xr.Dataset):
        if "score" not in data:
            raise ValueError(f"`data` must be an eval dataset with a `score` variable; got {list(data.data_vars)}")
        data = data["score"]
    if not isinstance(data, xr.DataArray):
        raise TypeError(f"`data` must be an xarray Dataset or DataArray; got {type(data).__name__}")
    if dim not in data.dims:
        raise ValueError(f"`{argname}` must be a dimension of the scores {data.dims}; got {dim!r}")
    return data


@fill_doc
def pooled_binomial_interval(
    data: xr.Dataset | xr.DataArray,
    *,
    prob: float = DEFAULT_PROB,
    dims: tuple[str, ...] = ("task", "run"),
) -> IntervalResult:
    """The pooled binomial (Wald) interval over all task x run attempts.

    Treats the ``T R`` attempts as independent. They are not when tasks
    differ: the true variance is larger by the design effect
    ``1 + (R - 1) rho`` (:func:`design_effect`), so this interval undercovers
    more as ``R`` grows. It is provided to show that, and for comparison.
    Where the Wald interval leaves [0, 1] or has zero width (``p`` = 0 or 1),
    the cell carries the Wilson score interval of the same pooled counts
    instead, with a ``SmallSampleWarning`` naming the cells; ``ci_kind`` is then
    ``"wilson"`` or ``"mixed"`` and the field ``ci_kind`` names each cell's kind.

    Parameters
    ----------
    data : xarray.Dataset or xarray.DataArray
        Eval dataset or scores; NaN = not run.
    %(prob)s
    dims : tuple of str
        Dims pooled over.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> y = xr.DataArray(np.r_[np.ones(936), np.zeros(564)].reshape(500, 3), dims=("task", "run"))
    >>> res = pooled_binomial_interval(y)
    >>> round(float(res.ci[1] - res.estimate), 4)
    0.0245
    """
    y = _scores(data, dims[-1], "dims")
    for d in dims:
        if d not in y.dims:
            raise ValueError(f"`dims` must be dimensions of the scores {y.dims}; got {d!r}")
    n = y.notnull().sum(dims)
    s = y.fillna(0.0).sum(dims)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = s / n.where(n > 0)
        se = np.sqrt(p * (1 - p) / n.where(n > 0))
    what = f"success rate pooled over every {' x '.join(dims)} attempt, each attempt an independent draw"
    ci, kind = _pooled_wald_or_wilson(p, se, s, n, prob, dims)
    return IntervalResult(p.rename("estimate").assign_attrs(quantity=what), se.rename("standard_error"),
                          ci, n.rename("n"), kind)


def _pooled_wald_or_wilson(p, se, s, n, prob: float, dims) -> tuple[xr.DataArray, xr.DataArray | None]:
    """``pooled_binomial_interval``'s ``(ci, per-cell kind or None)``: Wald, Wilson where Wald is no interval.

    Where the Wald interval leaves [0, 1] or has zero width (p = 0 or 1, or n = 1), a cut to
    [0, 1] would still claim certainty at 0/n; the package's rule for a binomial proportion
    (``_numerics.wilson_bounds``, :func:`wilson_interval`) on the same pooled counts replaces it
    there, same independence assumption, with a warning naming the cells (audit S finding 6).
    """
    from ..._base import SmallSampleWarning
    from ..._base import entry_names

    z = _z(prob)
    lo, hi = (p - z * se).values, (p + z * se).values
    with np.errstate(invalid="ignore"):
        bad = (n.values > 0) & ((lo < 0) | (hi > 1) | (hi - lo <= 0))
    base = f"pooled binomial over every {' x '.join(dims)} attempt"
    if not bad.any():
        return _pack(lo, hi, p, prob, "wald", f"{base}: Wald p +- z sqrt(p (1 - p) / n)"), None
    w_lo, w_hi = _wilson_bounds(s.values, n.values, z)
    cells = [f"{lab or 'the estimate'} ({s.values[ix]:.4g} of {int(n.values[ix])}: Wald [{lo[ix]:.4g}, "
             f"{hi[ix]:.4g}])" for lab, ix in entry_names(p, bad)]
    shown = ", ".join(cells[:10]) + (f" and {len(cells) - 10} more" if len(cells) > 10 else "")
    why = "the Wald interval leaves [0, 1] or has zero width (p = 0 or 1)"
    kind = p.copy(data=np.where(bad, "wilson", "wald").astype(object)).rename("ci_kind")
    all_bad = bool(bad.all())
    detail = (f"{base}: Wald p +- z sqrt(p (1 - p) / n); in the cells of field `ci_kind` 'wilson' ({len(cells)}) "
              f"{why}, so they carry the Wilson score interval of the same pooled counts")
    warn_user(
        f"pooled_binomial_interval: in {len(cells)} of {bad.size} cells {why}: {shown}. Those cells carry the "
        "Wilson score interval of the same pooled counts instead (inside [0, 1], not zero width; the attempts "
        "still taken as independent); `ci_kind` says which.", SmallSampleWarning,
    )
    ci = _pack(np.where(bad, w_lo, lo), np.where(bad, w_hi, hi), p, prob, "wilson" if all_bad else "mixed", detail)
    return ci, kind


def design_effect(n_runs: ArrayLike, rho: ArrayLike) -> np.ndarray | float:
    """Design effect ``DEFF = 1 + (R - 1) rho`` of ``R`` correlated runs per task.

    ``rho = tau^2 / (p (1 - p))`` is the share of run-level variance that is
    between tasks. A nominal-``z`` pooled interval then covers with
    probability ``2 Phi(z / sqrt(DEFF)) - 1``.

    Examples
    --------
    >>> float(design_effect(5, 0.5))
    3.0
    """
    r = np.asarray(n_runs, dtype=float)
    rho_ = np.asarray(rho, dtype=float)
    if (r < 1).any():
        raise ValueError(f"`n_runs` must be >= 1; got {r[r < 1][:5].tolist()}")
    if ((rho_ < 0) | (rho_ > 1)).any():
        raise ValueError(f"`rho` must lie in [0, 1]; got {rho_[(rho_ < 0) | (rho_ > 1)][:5].tolist()}")
    return 1.0 + (r - 1.0) * rho_


@renamed_kwargs(dim="task_dim")
def clustered_se(
    scores: ArrayLike | xr.DataArray,
    clusters: ArrayLike | xr.DataArray,
    *,
    task_dim: str = "task",
    small_sample: bool = True,
    missing: str = "singleton",
) -> xr.DataArray:
    """Cluster-robust standard error of a mean (Miller 2024).

    ``SE^2 = c / n^2 * sum_g (sum_{i in g} (s_i - mean))^2``, residuals summed
    within each cluster before squaring.

    Small-sample correction: with ``small_sample=True`` (default),
    ``c = G / (G - 1)`` for ``G`` clusters (the CR1 factor that Stata and
    statsmodels use for a mean). With singleton clusters it gives exactly the
    usual ``sd(ddof=1) / sqrt(n)``; without it the SE is biased low by
    ``sqrt((G - 1) / G)``, which matters with few clusters. ``False`` gives
    Miller's formula as printed (``c = 1``).

    Parameters
    ----------
    scores : array-like or xarray.DataArray
        One score per unit along ``task_dim`` (average runs per task first); NaN
        units are left out.
    clusters : array-like or xarray.DataArray
        Cluster label per unit along ``task_dim``; a missing label is ``None``,
        NaN or ``""``.
    task_dim : str
    small_sample : bool
    missing : {"singleton", "refuse"}
        A unit without a label is a cluster of its own (``"singleton"``,
        counted in a warning) or an error. Missing labels are never pooled
        into one shared cluster.

    Returns
    -------
    xarray.DataArray
        The SE; attrs ``n_clusters`` and ``n_missing_labels`` (units made
        clusters of their own).

    Examples
    --------
    >>> round(float(clustered_se([1, 1, 0, 0], [0, 0, 1, 1], small_sample=False)), 4)
    0.3536
    """
    s = scores if isinstance(scores, xr.DataArray) else xr.DataArray(np.asarray(scores, float), dims=(task_dim,))
    if task_dim not in s.dims:
        raise ValueError(f"`task_dim` must be a dimension of `scores` {s.dims}; got {task_dim!r}")
    cl = np.asarray(clusters.values if isinstance(clusters, xr.DataArray) else clusters, dtype=object)
    if cl.shape != (s.sizes[task_dim],):
        raise ValueError(f"`clusters` must have one label per {task_dim!r} ({s.sizes[task_dim]}); got shape {cl.shape}")
    holder = xr.DataArray(np.zeros(cl.size), dims=(task_dim,), coords={"_cluster": (task_dim, cl)})
    if task_dim in s.coords:
        holder = holder.assign_coords({task_dim: s[task_dim].values})
    codes, labels = cluster_codes(holder, "_cluster", dim=task_dim, missing=missing, name="clusters")
    n_missing = sum(str(x).endswith(" (no cluster)") for x in labels)
    y = s.transpose(..., task_dim).values
    n = np.isfinite(y).sum(-1)
    se, g = _cluster_robust_se(y, codes, small_sample=small_sample)
    if (n == 0).any():
        warn_user("clustered_se: some rows have no finite scores; their SE is NaN.", EmptySampleWarning)
    dims = [d for d in s.dims if d != task_dim]
    out = xr.DataArray(se, dims=dims, coords={d: s.coords[d] for d in dims if d in s.coords}, name="clustered_se")
    out.attrs = {"n_clusters": int(np.max(g)) if np.size(g) else 0, "n_missing_labels": int(n_missing)}
    return out


def finite_population_se(p: ArrayLike, n: ArrayLike, population_size: ArrayLike) -> np.ndarray | float:
    """SE of a success rate from ``n`` tasks drawn without replacement from ``N``.

    ``SE = sqrt(p (1 - p) / n * (N - n) / (N - 1))``: zero at ``n = N`` (the
    full-benchmark score is then known exactly; it still estimates the
    agent's skill with its own uncertainty).

    Examples
    --------
    >>> float(finite_population_se(0.6, 500, 500))
    0.0
    """
    p_, n_, N = (np.asarray(x, dtype=float) for x in (p, n, population_size))
    if ((n_ < 1) | (n_ > N)).any():
        raise ValueError(f"`n` must satisfy 1 <= n <= population_size; got n={n_.tolist()}, population_size={N.tolist()}")
    if ((p_ < 0) | (p_ > 1)).any():
        raise ValueError(f"`p` must lie in [0, 1]; got {p_.tolist()}")
    fpc = np.where(N > 1, (N - n_) / np.maximum(N - 1, 1), 0.0)
    return np.sqrt(p_ * (1 - p_) / n_ * fpc)


@renamed_kwargs(dim="task_dim")
@fill_doc
def stratified_mean(
    scores: ArrayLike | xr.DataArray,
    strata: ArrayLike | xr.DataArray,
    *,
    population_sizes: dict | None = None,
    task_dim: str = "task",
    prob: float = DEFAULT_PROB,
) -> IntervalResult:
    """Stratified estimate of a mean: per-stratum means weighted by stratum shares.

    ``est = sum_h W_h ybar_h``, ``SE^2 = sum_h W_h^2 s_h^2 / n_h (1 - n_h / N_h)``.
    A stratum with one unit has no ``s_h``: the SE and interval are NaN there, and an
    ``UndefinedWarning`` names the strata (unless ``population_sizes`` says the stratum
    was sampled whole, ``n_h = N_h``, when it adds nothing to the variance).

    Parameters
    ----------
    scores : array-like or xarray.DataArray
        One score per sampled unit along ``task_dim``.
    strata : array-like
        Stratum label per unit.
    population_sizes : dict, optional
        ``N_h`` per stratum (the full benchmark's mix): gives the weights
        ``W_h = N_h / N`` and the finite-population correction. Default: the
        sample itself is the population mix, without correction.
    task_dim : str
    %(prob)s

    Examples
    --------
    >>> res = stratified_mean([1, 0, 1, 1, 0, 0], ["a", "a", "a", "b", "b", "b"],
    ...                       population_sizes={"a": 50, "b": 150})
    >>> round(float(res.estimate), 4)
    0.4167
    """
    s = scores if isinstance(scores, xr.DataArray) else xr.DataArray(np.asarray(scores, float), dims=(task_dim,))
    if task_dim not in s.dims:
        raise ValueError(f"`task_dim` must be a dimension of `scores` {s.dims}; got {task_dim!r}")
    lab = np.asarray(strata.values if isinstance(strata, xr.DataArray) else strata).astype(str)
    if lab.shape != (s.sizes[task_dim],):
        raise ValueError(f"`strata` must have one label per {task_dim!r} ({s.sizes[task_dim]}); got shape {lab.shape}")
    uniq = sorted(set(lab.tolist()))
    if population_sizes is not None:
        pops = {str(k): float(v) for k, v in population_sizes.items()}
        missing = [h for h in uniq if h not in pops]
        if missing:
            raise ValueError(f"`population_sizes` lacks strata present in the sample: {missing}")
        small = [h for h in uniq if pops[h] < (lab == h).sum()]
        if small:
            raise ValueError(f"`population_sizes` must be >= the sampled units per stratum; too small for {small}")
        total = sum(pops.values())
        w = {h: pops[h] / total for h in pops}
        fpc = {h: 1 - (lab == h).sum() / pops[h] for h in uniq}
        absent = [h for h in pops if h not in uniq and pops[h] > 0]
        if absent:
            raise ValueError(f"strata {absent} have population units but no sampled units: the estimate is undefined")
    else:
        w = {h: (lab == h).mean() for h in uniq}
        fpc = dict.fromkeys(uniq, 1.0)
    y = s.transpose(..., task_dim)
    est = 0.0
    var = 0.0
    thin = {}  # stratum -> rows (of the other dims) where it holds fewer than 2 units and is not a census
    for h in uniq:
        yh = y.isel({task_dim: np.flatnonzero(lab == h)})
        nh = yh.notnull().sum(task_dim)
        est = est + w[h] * yh.mean(task_dim)
        if fpc[h] == 0:  # sampled whole (n_h = N_h): known exactly, it adds no variance
            continue
        var = var + w[h] ** 2 * yh.var(task_dim, ddof=1) / nh * fpc[h]
        if bool((nh < 2).any()):
            thin[h] = int((nh < 2).sum())
    if thin:
        _warn_thin_strata(thin, int(np.prod([n for d, n in y.sizes.items() if d != task_dim])))
    se = np.sqrt(var)
    n = s.notnull().sum(task_dim)
    what = f"stratified mean over {len(uniq)} strata, the {task_dim}s drawn independently within each stratum"
    return IntervalResult(est.rename("estimate").assign_attrs(quantity=what), se.rename("standard_error"),
                          _normal_ci(est, se, prob, "normal", "stratified estimate, normal approximation"), n.rename("n"))


def _warn_thin_strata(thin: dict, n_rows: int) -> None:
    """Name the strata with fewer than 2 units (``{stratum: rows affected}``): their variance, so the SE, is NaN."""
    shown = ", ".join(f"{h!r}" + (f" ({k} of {n_rows} rows)" if k < n_rows else "") for h, k in list(thin.items())[:10])
    more = f" and {len(thin) - 10} more" if len(thin) > 10 else ""
    warn_user(
        f"stratified_mean: {len(thin)} strata hold fewer than 2 units: {shown}{more}. A stratum's variance needs "
        "2 units, so the standard error and the interval are NaN wherever one holds 1 (the estimate too where "
        "one holds none). Merge each with a like stratum (collapsed strata, which overstate the SE a little), or "
        "give `population_sizes` where a stratum was sampled whole (n_h = N_h adds no variance).",
        UndefinedWarning,
    )


#: the repr's last line: what ``micro`` averages, for "micro" means per run in summarize's ``micro_mean_score``
_MICRO_WORDS = (
    "(`micro` and the estimate: every task counts once, micro over tags against `macro`; not "
    "hierbench.data.summarize's `micro_mean_score`, which counts every run once)"
)


@dataclass(frozen=True, repr=False)
class SuccessRateResult(Result):
    """Success rates of each agent.

    Attributes
    ----------
    estimate : xarray.DataArray
        The same as ``micro`` (the house name of the point estimate).
    micro : xarray.DataArray
        Mean over tasks of each task's mean score (every task counts once): "micro" over tags,
        against ``macro``, so per task, not per run; it is ``hierbench.data.summarize``'s
        ``mean_score``, not its ``micro_mean_score`` (the mean over runs, where tasks with more
        runs weigh more).
    macro : xarray.DataArray
        Mean over every tag of the data of the agent's per-tag rates (``by_tag``: each the mean
        over the tag's tasks of their mean scores), every tag counting once. NaN where the agent
        ran no task of some tag (an ``UndefinedWarning`` names the agents and tags: compare
        ``micro`` instead, or read ``by_tag``), and NaN without tags. A task without a tag
        (None, NaN or ``""``) is in ``micro`` but in no tag, so not in ``macro``: a warning names
        such tasks. Attrs: ``n_tags`` (the tags averaged) and ``n_untagged_tasks``.
    by_tag : xarray.DataArray or None
        Per-tag rates (dims ``agent``, ``tag``).
    ci : xarray.DataArray
        The interval of ``pass_hat_k(data, 1)`` (:class:`hierbench.freq.PassKResult`), the
        package's one rule for a mean of values in [0, 1], taken on the per-task mean scores:
        for a new draw of tasks (task clusters) from the same population, Student t on the
        logit scale, ``expit(logit(m) +- t_df * standard_error / (m (1 - m)))`` (always inside
        [0, 1]), and in the cells ``ci_flag`` names a bound (every task scored 0 or 1, every
        task, or cluster, has the same mean score, or few tasks carry the mean) the
        distribution-free bound that holds there. ``ci_kind``
        ``"t"``, ``"bounded-mean"`` or ``"mixed"``; ``ci_detail`` names the standard error,
        the df and the clusters. For 0/1 scores it equals ``pass_hat_k(data, 1).ci``. With
        partial credit the t interval reaches, on the side of the skew, as far as Hall's
        skewness-corrected t where that is further (``success_rate``: measured coverage).
    standard_error : xarray.DataArray
        With clusters, the bias-reduced cluster-robust (CR2) SE; without, the
        task-level ``sd / sqrt(n)`` (the same CR2 with each task its own cluster).
    error_rate : xarray.DataArray
        Share of attempted runs flagged as infrastructure errors (NaN without
        ``error``). An attempted run is one with a score or an error flag, so
        the rate is right under ``errors="exclude"`` too (where an errored
        run's score is NaN).
    n_tasks, n_runs, n_errors, n_tasks_not_run : xarray.DataArray
        ``n_runs`` counts runs with a score.
    df : xarray.DataArray or None
        The t's degrees of freedom per agent: Bell-McCaffrey's with clusters,
        ``n_tasks - 1`` without (NaN with fewer than 2 clusters or tasks).
    ci_flag : xarray.DataArray or None
        Per agent, ``""`` or the flag of ``pass_hat_k``'s ladder (``PassKResult.ci_flag``):
        ``"exact bound"`` (every task scored 0, or every one 1), ``"bound: few tasks carry
        the mean"`` / ``"bound: few tasks carry the failures (1 - mean)"`` / ``"bound: every
        task has the same value (no spread to measure)"`` / ``"bound: every cluster has the same
        mean (no spread to measure)"`` (the interval is the bound: in the last two, every task, or
        every cluster, has one mean strictly inside (0, 1), where the t interval would have zero
        width), ``SKEW_FLAG`` ("skewed partial credit (mean below 0.05 or above 0.95): ...", the
        t interval kept, where it still falls short; the text gives the measured coverage),
        ``"the clusters carry the mean more evenly than independent tasks would (cluster-robust
        variance below 0.5 times the independent-task variance): the t interval is kept, ..."``
        (``EVEN_CLUSTERS_FLAG``), ``"too few clusters"`` / ``"too few
        tasks"`` (fewer than 2: no interval, NaN).
    ci_kind : xarray.DataArray or None
        Per agent, the kind of its interval: ``"t"`` (the logit t interval) or
        ``"bounded-mean"`` (the bound, where ``ci_flag`` names one), as ``PassKResult.ci_kind``;
        ``to_frame()`` gives each row its own kind where ``ci.attrs["ci_kind"]`` is ``"mixed"``.
    """

    micro: xr.DataArray
    macro: xr.DataArray
    by_tag: xr.DataArray | None
    ci: xr.DataArray
    standard_error: xr.DataArray
    error_rate: xr.DataArray
    n_tasks: xr.DataArray
    n_runs: xr.DataArray
    n_errors: xr.DataArray
    n_tasks_not_run: xr.DataArray
    df: xr.DataArray | None = None
    ci_flag: xr.DataArray | None = None
    ci_kind: xr.DataArray | None = None

    @property
    def estimate(self) -> xr.DataArray:
        """The micro success rate (``micro``), under the house name."""
        return self.micro.rename("estimate")

    def to_frame(self) -> pd.DataFrame:
        """One row per agent; with ``ci_kind`` given, the column names each row's kind (not "mixed")."""
        df = super().to_frame()
        if self.ci_kind is not None:
            df["ci_kind"] = np.asarray(self.ci_kind.transpose(*self.estimate.dims).values, dtype=object).ravel()
        return df

    def _repr_lines(self) -> list[str]:
        """The quantity, the interval's level and kind, and what it is for (tasks or clusters as the unit)."""
        over = str(self.micro.attrs.get("over", POPULATION_OVER))
        unit = over.split("(the ")[1].split(" as the sampling unit")[0] if "(the " in over else "tasks"
        return [f"{type(self).__name__}: success rate, mean over tasks of each task's mean score, "
                f"{interval_label(self.ci)} interval for {over.split(' (')[0]} (the {unit} as the unit)",
                *self._cell_lines(), *self._elided_flags(self.ci_flag), f"  {_MICRO_WORDS}"]

    def _cell_notes(self) -> xr.DataArray | None:
        """Each flagged agent's ``ci_flag``, after its line in the repr."""
        flag = self.ci_flag
        return flag if flag is not None and flag.ndim == 1 else None


def _rate_interval(
    micro: xr.DataArray, cell: xr.DataArray, data, cluster, prob: float, task_dim: str, partial: xr.DataArray
) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray, xr.DataArray, str | None, xr.DataArray]:
    """:func:`success_rate`'s ``(standard_error, df, ci, ci_flag, unit, ci_kind)``: ``pass_hat_k``'s interval on the task means.

    The one rule of ``_passk.mean_interval`` (``_interval`` with tasks as the unit, ``cluster_interval`` with
    task clusters; their flags ``_logit_t.flag_ladder``), applied to the per-task mean scores:
    for 0/1 scores this is ``pass_hat_k(data, 1).ci`` and its ``ci_flag`` exactly. In the rows
    with partial credit (``partial``) the t interval reaches, on the side of the skew, as far
    as the skewness-corrected t (``_skew_widen``). ``unit`` names the clusters (None: tasks
    are the unit).
    """
    from ._logit_t import BOUND_FLAGS
    from ._passk import _clusters
    from ._passk import mean_interval

    n_tasks = cell.notnull().sum(task_dim)
    codes, unit = _clusters(data, cluster, task_dim, cell.sizes[task_dim])
    se, lo, hi, flag, df = mean_interval(cell, micro, n_tasks, codes, prob, task_dim)
    kind_of = xr.where(flag.isin(BOUND_FLAGS), "bounded-mean", "t").astype(object).rename("ci_kind")
    lo, hi, n_wide = _skew_widen(cell, micro, se, df, (lo, hi), partial & (kind_of == "t"), codes, prob, task_dim)
    flag = _flag_skewed(flag.astype(object), micro, partial & (kind_of == "t"))
    ok = df.values[np.isfinite(df.values)]
    how = ("task-level standard error sd / sqrt(n), Student t on n - 1 = {} on the logit scale" if codes is None
           else f"CR2 (bias-reduced cluster-robust) standard error over the {unit}, Student t on "
           "Bell-McCaffrey degrees of freedom ({}) on the logit scale")
    df_text = "no df (too few units)" if ok.size == 0 else (
        f"{ok.min():.3g} df" if np.ptp(ok) < 5e-4 * ok.min() else f"{ok.min():.3g} to {ok.max():.3g} df by agent (`df`)"
    )
    kinds = sorted(set(np.asarray(kind_of.values, dtype=object).ravel().tolist()))
    kind = kinds[0] if len(kinds) == 1 else "mixed"
    detail = (f"success_rate, pass_hat_k(data, 1)'s rule on the per-task mean scores: {how.format(df_text)}, "
              "expit(logit(m) +- t * se / (m (1 - m)))"
              + (f"; with partial credit ({n_wide} of {kind_of.size} rows) reaching on the side of the skew as far "
                 "as Hall's skewness-corrected t, where that is further" if n_wide else "")
              + "; in the cells whose `ci_flag` names a bound (every task scored 0 or 1, every task or cluster has "
              "the same mean score, or few tasks carry the mean) the distribution-free bound of the mean of values "
              "in [0, 1] instead" + ("" if codes is None else ", taken over the clusters"))
    ci = make_interval(lo, hi, prob=prob, kind=kind, detail=detail)
    return se.rename("standard_error"), df.rename("df"), ci, flag.astype(object).rename("ci_flag"), unit, kind_of


#: ``success_rate``'s ``ci_flag`` of a partial-credit row whose mean is within ``SKEW_EDGE`` of 0 or 1 (t kept)
SKEW_EDGE = 0.05
#: the flag's text: what it marks and the coverage measured there (no "; ", no "bound": the report reads both)
SKEW_FLAG = (
    f"skewed partial credit (mean below {SKEW_EDGE:g} or above {1 - SKEW_EDGE:g}): the skew-corrected t interval "
    "is kept, and in benchmarks/bench_partial_credit_rate.py 0.89 of the 95% intervals of rows so flagged "
    "covered (all rows of the worst design, flagged or not, 0.92: a mean of 0.03 over 10 tasks)"
)


def _flag_skewed(flag: xr.DataArray, micro: xr.DataArray, rows: xr.DataArray) -> xr.DataArray:
    """``flag`` with ``SKEW_FLAG`` in the unflagged ``rows`` (partial credit, t interval) whose mean is near 0 or 1.

    There the per-task values are most skewed and a sample that misses their long tail looks
    like one without it: no rule read from the sample widens it enough. In
    ``benchmarks/bench_partial_credit_rate.py`` (2,000 replications a design, seed 7, MC SE
    0.005) the 95% intervals of the partial-credit designs at a mean of 0.03 covered 0.920-0.994
    with the skew widening (0.883-0.994 without); pooled over its partial-credit designs, the
    t rows this flags covered 0.887 +- 0.001, the others 0.957. A ``SmallSampleWarning`` names
    the agents.
    """
    from ..._base import SmallSampleWarning
    from ..._base import entry_names

    with np.errstate(invalid="ignore"):
        hit = (rows & (np.minimum(micro, 1 - micro) < SKEW_EDGE)).transpose(*flag.dims).values & (flag.values == "")
    if not hit.any():
        return flag
    out = flag.copy(data=np.where(hit, SKEW_FLAG, flag.values).astype(object))
    names = [f"{lab or 'the estimate'} ({micro.transpose(*flag.dims).values[ix]:.3g})" for lab, ix in entry_names(flag, hit)]
    shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
    warn_user(
        f"success_rate: {len(names)} of {hit.size} agents have partial credit with a mean below {SKEW_EDGE:g} or "
        f"above {1 - SKEW_EDGE:g}: {shown}. Their per-task scores are skewed, and a sample that misses the few "
        "high (low) tasks looks like one without them: in simulation (benchmarks/bench_partial_credit_rate.py) "
        "0.89 of the 95% intervals of rows so flagged covered (all rows of the worst design, flagged or not, 0.92: "
        "a mean of 0.03 over 10 tasks). `ci_flag` marks them.",
        SmallSampleWarning,
    )
    return out


def _skew_widen(
    cell: xr.DataArray, micro: xr.DataArray, se: xr.DataArray, df: xr.DataArray, bounds: tuple,
    rows: xr.DataArray, codes: np.ndarray | None, prob: float, task_dim: str,
) -> tuple[xr.DataArray, xr.DataArray, int]:
    """The t interval of ``rows`` reaching, on the side of the skew, as far as Hall's skewness-corrected t.

    ``(lower, upper, rows widened)``. Partial credit near 0 is skewed (a few tasks score well
    above the rest): a sample that misses them has a small mean and a small SE together, and
    the logit t interval, whose logit corrects the skew of 0/1 scores, fell short above the
    mean (audit T finding 4: 0.92-0.94 at 95% for means 0.07-0.11, misses above). Where the
    skewness of the mean (``_passk.mean_skewness``, over the tasks or the
    clusters) is positive the upper end becomes the larger of the t's and Hall's
    (``_passk.skew_t_bounds``, same SE and df), where negative the lower end the
    smaller: the interval never narrows. Measured in ``benchmarks/bench_partial_credit_rate.py``.
    """
    from ._passk import mean_skewness
    from ._passk import skew_t_bounds

    lo, hi = bounds
    dims = micro.dims
    use = rows.transpose(*dims).values & np.isfinite(lo.transpose(*dims).values) & np.isfinite(
        hi.transpose(*dims).values)
    if not use.any():
        return lo, hi, 0
    m = micro.transpose(*dims).values
    u = (cell - micro).transpose(*dims, task_dim).values
    if codes is not None:  # each cluster's sum of deviations; a cluster with no task run is absent (NaN)
        onehot = (np.asarray(codes)[:, None] == np.arange(int(np.max(codes)) + 1)[None, :]).astype(float)
        ran = np.isfinite(u).astype(float) @ onehot > 0
        u = np.where(ran, np.nan_to_num(u) @ onehot, np.nan)
    k = mean_skewness(u)
    s_lo, s_hi = skew_t_bounds(m, se.transpose(*dims).values, k, df.transpose(*dims).values, prob)
    l0, h0 = lo.transpose(*dims).values, hi.transpose(*dims).values
    new_lo = np.where(use & (k < 0) & (s_lo < l0), s_lo, l0)
    new_hi = np.where(use & (k > 0) & (s_hi > h0), s_hi, h0)
    n = int(((new_lo != l0) | (new_hi != h0)).sum())
    return micro.copy(data=new_lo), micro.copy(data=new_hi), n


def _errors(data, run_dim: str, task_dim: str, n_runs: xr.DataArray, micro: xr.DataArray) -> tuple:
    """``(n_errors, error_rate)`` per agent: errored runs over the runs attempted (NaN without an ``error`` var)."""
    if not (isinstance(data, xr.Dataset) and "error" in data):
        return xr.full_like(n_runs, 0), xr.full_like(micro, np.nan)
    err = data["error"].astype(bool)
    n_err = err.sum((run_dim, task_dim))
    # an errored run excluded from the scores (errors="exclude") was still attempted
    attempted = (data["score"].notnull() | err).sum((run_dim, task_dim))
    return n_err, n_err / attempted.where(attempted > 0)


def _rate_target(y: xr.DataArray, unit: str | None) -> dict[str, str]:
    """What :func:`success_rate`'s estimate is, in ``bootstrap_ci``'s words (``hierbench.compare`` reads them).

    ``scale`` is ``"probability"`` where every score is 0 or 1 (after ``strict``), else ``"score"``;
    ``quantity`` the ``"mean score"``; ``tasks`` ``"population"``: the interval takes tasks (or their
    clusters) as the sampling unit, so it is for a new draw of tasks from the same population (``over``).
    """
    over = POPULATION_OVER if unit is None else POPULATION_OVER_CLUSTERS.format(unit=unit)
    scale = "probability" if is_binary(y.values) else "score"
    return {"over": over, "scale": scale, "quantity": "mean score", "tasks": "population"}


def _by_tag_macro(
    cell: xr.DataArray, y: xr.DataArray, tag: str | None, task_dim: str, micro: xr.DataArray
) -> tuple[xr.DataArray | None, xr.DataArray]:
    """:func:`success_rate`'s ``(by_tag, macro)``: per-tag rates, and their mean over every tag of the data.

    ``macro`` is NaN where an agent ran no task of some tag (``skipna=False``): a mean over fewer
    tags is another quantity, and it took agent B, who ran only the easy tasks, to 1.0 beside
    agent A's 0.375 (audit T finding 2). A task without a tag (None, NaN or ``""``) is in no
    tag's rate, so not in ``macro`` (it is in ``micro``): counted in ``macro.attrs`` and warned,
    naming the tasks. ``macro.attrs``: ``n_tags`` and ``n_untagged_tasks``.
    """
    from ..._base import HierbenchWarning
    from ..._base import entry_names

    none = xr.full_like(micro, np.nan).rename("macro")
    if tag is None or tag not in y.coords:
        return None, none
    coord = y.coords[tag]
    if coord.dims != (task_dim,):
        raise ValueError(f"`tag`: coord {tag!r} must lie along {task_dim!r} (one tag per task); it has dims {coord.dims}")
    from ..._base import missing_labels

    lab = missing_labels(coord.values)  # as a missing cluster label
    if lab.any():
        names = (np.asarray(y[task_dim].values).astype(str) if task_dim in y.coords
                 else np.arange(lab.size).astype(str))  # fmt: skip
        shown = ", ".join(repr(t) for t in names[lab][:10].tolist()) + (f" and {int(lab.sum()) - 10} more" if lab.sum() > 10 else "")
        warn_user(
            f"success_rate: {int(lab.sum())} of {lab.size} tasks have no {tag!r} label ({shown}): they are in "
            "`micro` (the estimate) but in no tag's rate, so not in `macro` (the mean over the tags); "
            "label them to have them in `macro` (macro.attrs['n_untagged_tasks'] counts them).",
            HierbenchWarning,
        )
    attrs = {"n_tags": 0, "n_untagged_tasks": int(lab.sum())}
    if lab.all():
        return None, none.assign_attrs(attrs)
    keep = cell.isel({task_dim: np.flatnonzero(~lab)})
    by_tag = keep.groupby(keep.coords[tag].rename("tag")).mean(task_dim)
    macro = by_tag.mean("tag", skipna=False)
    attrs["n_tags"] = int(by_tag.sizes["tag"])
    lacking = by_tag.isnull().transpose(*macro.dims, "tag").values
    gaps = lacking.any(-1)
    if gaps.any():
        tags = np.asarray(by_tag["tag"].values).astype(str)
        said = [f"{lab_ or 'the estimate'} (no task of {tags[lacking[ix]][:5].tolist()}"
                + (f" and {int(lacking[ix].sum()) - 5} more" if lacking[ix].sum() > 5 else "") + ")"
                for lab_, ix in entry_names(macro, gaps)]
        shown = "; ".join(said[:10]) + (f"; and {len(said) - 10} more" if len(said) > 10 else "")
        warn_user(
            f"success_rate: `macro` is NaN for {len(said)} of {gaps.size} agents, each of which ran no task of "
            f"some tag: {shown}. `macro` averages every one of the {attrs['n_tags']} tags, and a mean over "
            "fewer tags is not comparable with it. Compare `micro` (every task the agent ran counts once), or "
            "read `by_tag` for the tags each ran.",
            UndefinedWarning,
        )
    return by_tag, macro.rename("macro").assign_attrs(attrs)


@renamed_kwargs(dim="run_dim")
@fill_doc
def success_rate(
    data: xr.Dataset,
    *,
    run_dim: str = "run",
    task_dim: str = "task",
    tag: str | None = "tag",
    cluster: str | None = "cluster",
    strict: bool = False,
    prob: float = DEFAULT_PROB,
) -> SuccessRateResult:
    """Success rate per agent: micro and macro over tags, error rate beside it.

    Runs are averaged within a task first: ``micro`` (the estimate) is the mean over tasks of
    each task's mean score, every task counting once (``hierbench.data.summarize``'s
    ``micro_mean_score`` is instead the mean over runs); ``macro`` is the mean over every tag
    of the data of the per-tag ``micro``. Scores may be partial credit (fraction of checks
    passed); ``strict=True`` counts a run as a success only when its score is 1.

    The interval is ``pass_hat_k(data, 1)``'s (the package's one rule for a mean of
    values in [0, 1]) taken on the per-task mean scores, so for 0/1 scores the two agree
    exactly: Student t on the logit scale, inside [0, 1], with task clusters on the CR2
    SE and Bell-McCaffrey df (the SE ``compare_agents`` uses for pairs; at SWE-bench's 12
    repositories a 95% normal interval on the CR1 SE covered 0.78-0.82 in simulation),
    without them on ``sd / sqrt(n)`` and ``n - 1`` df. Where every task scored 0 (or 1)
    or few tasks carry the mean, the t interval falls short and the distribution-free
    bound replaces it (``ci_flag`` says so: METR's gpt-3.5-turbo-instruct, 3 tasks
    succeeding of 83, had a plain t interval reaching below 0). ``ci_detail`` names the SE
    and df; ``df`` holds them per agent. Where every task (or cluster) has one mean inside
    (0, 1) there is no spread to measure (a t interval of zero width): the bound, flagged.
    With partial credit the t interval reaches, on the side of the skew, as far as Hall's
    (1992) skewness-corrected t where that is further (an agent's 0/1 scores keep
    ``pass_hat_k``'s interval): in ``benchmarks/bench_partial_credit_rate.py`` (means 0.03-0.5,
    10-100 tasks, 1-5 runs, logit-normal and Beta scores; 2,000 replications, MC SE 0.005) 95%
    intervals covered 0.920-0.994 (0.883-0.994 before), below 0.93 only at means 0.03-0.07
    over 10 tasks; at a mean below 0.05 (above 0.95) ``ci_flag`` says it still falls short.
    The estimate's attrs say what it is, in :func:`hierbench.freq.bootstrap_ci`'s words:
    ``scale`` (``"probability"`` where every score is 0 or 1, else ``"score"``),
    ``quantity`` (``"mean score"``) and ``tasks`` (``"population"``), so
    :func:`hierbench.compare.side_by_side` sets it beside a fit's ``mean_new_task``.

    Parameters
    ----------
    data : xarray.Dataset
        Eval dataset.
    run_dim, task_dim : str
        Run and task dims.
    tag : str or None
        Task coord of the tags (ignored when absent): ``macro`` is NaN for an agent that ran
        no task of some tag, and a task without a tag is in ``micro`` only (both warned).
    cluster : str or None
        Task coord for the clustered SE. The default ``"cluster"`` is used
        when the data have it; any other name must exist. A task without a
        cluster label is a cluster of its own (with a warning).
    strict : bool
    %(prob)s

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=2, n_tasks=30, n_runs=3, rng=0)
    >>> res = success_rate(ds)
    >>> res.ci.dims, res.ci.attrs["ci_kind"], res.df.values.tolist()
    (('agent', 'ci_bound'), 't', [29.0, 29.0])
    """
    prob = check_prob(prob)
    y = _scores(data, run_dim, "run_dim")
    check_dim(y, task_dim, "task_dim")
    out = np.asarray(y.values, dtype=float)
    out = out[np.isfinite(out) & ((out < 0) | (out > 1))]
    if out.size:  # the interval's rule (logit t, bound) is for values in [0, 1], the eval schema's scores
        raise ValueError(f"`data` scores must lie in [0, 1]; {out.size} do not, e.g. {out[:5].tolist()}")
    if strict:
        y = (y == 1).astype(float).where(y.notnull())
    cell = y.mean(run_dim)
    n_runs = y.notnull().sum((run_dim, task_dim))
    ran = cell.notnull()
    n_tasks = ran.sum(task_dim)
    micro = cell.mean(task_dim)
    key = "auto" if cluster == "cluster" else cluster
    partial = ((y > 0) & (y < 1)).any([d for d in y.dims if d in (run_dim, task_dim)])  # the rows with partial credit
    se, df, ci, flag, unit, kind_of = _rate_interval(micro, cell, y, key, prob, task_dim, partial)
    warn_no_interval("success_rate", flag, ci, n_tasks)
    by_tag, macro = _by_tag_macro(cell, y, tag, task_dim, micro)
    n_err, err_rate = _errors(data, run_dim, task_dim, n_runs, micro)
    res = SuccessRateResult(
        micro=micro.rename("micro").assign_attrs(_rate_target(y, unit)),
        macro=macro.rename("macro"),
        by_tag=None if by_tag is None else by_tag.rename("by_tag"),
        ci=ci,
        standard_error=se,
        error_rate=err_rate.rename("error_rate"),
        n_tasks=n_tasks.rename("n_tasks"),
        n_runs=n_runs.rename("n_runs"),
        n_errors=n_err.rename("n_errors"),
        n_tasks_not_run=(~ran).sum(task_dim).rename("n_tasks_not_run"),
        df=df,
        ci_flag=flag,
        ci_kind=kind_of,
    )
    return with_counts_hash(res, data)
