"""Generalizability theory: variance components of any crossed/nested design, and D-studies.

A design names the facets and how they relate: ``"run:(agent*task)"`` (runs
nested in agent x task cells), ``"person*item*occasion"`` (fully crossed),
``"run:(agent*(task:cluster))"`` (tasks nested in task families, crossed with
agents), ``"sample:cask:batch"``, ``"rep:batch"``; see
:func:`hierbench.freq._variance._design_lang.parse_design`. It is read from the data
(dims, plus a task ``cluster`` coord: tasks nested in clusters) or given.

Estimation
----------
Balanced data: the ANOVA (expected-mean-square) estimators by Brennan's rules,
in closed form; negative estimates are truncated at 0 and flagged. Unbalanced
data: REML (the data reduced to cell means when runs are nested in cells; see
:mod:`hierbench.freq._variance._reml`), with Henderson's Method I ANOVA-type estimates
beside them.

Intervals
---------
REML fits: profile-likelihood intervals from the REML likelihood (components,
and E rho^2 / Phi with the coefficient fixed and the components maximised;
:mod:`hierbench.freq._variance._profile`). Balanced ANOVA: Wald on the
log-variance scale from the exact sampling variance of the ANOVA estimators
(profile on request). Measured coverage of nominal 95% intervals, 400
unbalanced ``run:task:family`` data sets per row (families of 1-5 tasks, 1-6
runs per task; ``benchmarks/bench_gtheory.py``, seed 12), Wald -> profile:

============  ===============  ===============  ===============  ===============
families      family           task:family      residual         E rho^2
============  ===============  ===============  ===============  ===============
10            0.885 -> 0.943   0.970 -> 0.948   0.945 -> 0.958   0.795 -> 0.935
20            0.935 -> 0.953   0.985 -> 0.980   0.950 -> 0.948   0.922 -> 0.960
40            0.985 -> 0.968   0.958 -> 0.960   0.932 -> 0.932   0.970 -> 0.958
============  ===============  ===============  ===============  ===============

(Wilson 95% bands of a coverage from 400 data sets are about +-0.02.) Wald
misses are one-sided (E rho^2 with 10 families: truth above the interval 58
times, below 24; profile 10 / 16).

D-study
-------
For an object of measurement ``p`` (default ``agent``): universe-score
variance ``tau`` = components of effects made only of ``p`` and the facets
``p`` is nested in; every other effect ``e`` adds ``s_e / prod n'_f`` (over its
facets outside ``p``) to the absolute error variance ``Delta``, and to the
relative error variance ``delta`` when ``e`` contains ``p``. ``E rho^2 =
tau / (tau + delta)``, ``Phi = tau / (tau + Delta)``; the variance of the
difference of two objects' means on the same tasks is ``2 delta``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from ..._base import (
    DEFAULT_PROB,
    BoundaryWarning,
    HierbenchError,
    HierbenchWarning,
    NotConvergedWarning,
    Result,
    UndefinedWarning,
    check_prob,
    make_interval,
)
from . import _profile, _reml
from ._design_lang import Design, DesignError, parse_design

__all__ = [
    "ConfoundedComponentWarning",
    "DesignError",
    "NegativeVarianceComponentWarning",
    "NoIntervalWarning",
    "RemlConvergenceWarning",
    "UnbalancedDesignError",
    "UndefinedCoefficientWarning",
    "VarianceComponentsResult",
    "variance_components",
]


class UnbalancedDesignError(HierbenchError):
    """The expected-mean-square estimators need a balanced design (``method="anova"``)."""


class NegativeVarianceComponentWarning(BoundaryWarning):
    """An ANOVA estimate of a variance component was negative and was truncated at 0."""


class ConfoundedComponentWarning(HierbenchWarning):
    """A quantity needs a split of components that the design cannot estimate."""


class UndefinedCoefficientWarning(UndefinedWarning):
    """A reliability coefficient is 0 / 0 (no universe-score and no error variance, or no
    object of measurement): it is NaN."""


class RemlConvergenceWarning(NotConvergedWarning):
    """The REML fit is not at a minimum of the deviance: the deviance still to gain by a
    local quadratic model is above 1e-5 (a likelihood-ratio scale, whatever the size of the
    data), or the deviance falls inside from a component at 0."""


class NoIntervalWarning(UndefinedWarning):
    """A variance-components result has no (finite) intervals by default; the message names
    the cause and the remedy."""


#: ``ci="auto"`` profiles REML fits up to this many cell means and random-effect levels (one
#: profile deviance costs a factorisation of that size; METR, 748 cells and 448 levels, takes
#: seconds; SWE-bench with repositories, 12,500 cells and 837 levels, 41 s for all five
#: components at load 6 on 2 cores, so it gets Wald intervals from the observed information)
PROFILE_MAX_CELLS = 2000
PROFILE_MAX_LEVELS = 1000
EXPECTED_INFO_MAX_CELLS = 6000

LEGACY = {"nested": "{r}:({a}*{t})", "crossed": "{a}*{t}*{r}"}


# --------------------------------------------------------------------------- data -> long


@dataclass
class _Long:
    y: np.ndarray
    codes: dict[str, np.ndarray]
    labels: dict[str, np.ndarray]
    dense: np.ndarray | None = None  # balanced fast path: axes in design.facets order


def _factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes of labels as given (distinct values stay distinct; nothing is parsed or merged)."""
    try:
        codes, uniq = pd.factorize(np.asarray(values), sort=True)
    except TypeError:  # labels of mixed types cannot be sorted: keep their order of appearance
        codes, uniq = pd.factorize(np.asarray(values, dtype=object), sort=False)
    return codes.astype(np.int64), np.asarray(uniq, dtype=object)


def _codes_of_column(col: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Codes of one facet column: numpy's sort-based unique for integer/bool labels (the same
    sorted codes as :func:`_factorize`, without pandas' per-call overhead), else
    :func:`_factorize`; missing labels are refused."""
    if col.dtype.kind in "iub":  # cannot hold a missing value
        if col.size and col.dtype.kind != "b":
            lo, hi = int(col.min()), int(col.max())
            if hi - lo < 4 * col.size + 64:  # small range: a presence table, O(n), no sort
                present = np.zeros(hi - lo + 1, dtype=bool)
                shifted = col - lo
                present[shifted] = True
                rank = np.cumsum(present) - 1
                uniq = np.flatnonzero(present) + lo
                return rank[shifted].astype(np.int64), uniq.astype(col.dtype).astype(object)
        uniq, codes = np.unique(col, return_inverse=True)
        return codes.astype(np.int64, copy=False), uniq.astype(object)
    if pd.isna(col).any():
        raise ValueError(f"`data`: facet column {name!r} has missing labels")
    return _factorize(col)


def _from_frame(df: pd.DataFrame, design: Design, var: str) -> _Long:
    missing = [c for c in (*design.facets, var) if c not in df.columns]
    if missing:
        raise ValueError(
            f"`data`: a DataFrame must have a column for every facet of the design "
            f"{design.formula!r} and the score column `var`={var!r}; missing {missing} "
            f"(columns {list(df.columns)})"
        )
    ycol = df[var]
    if isinstance(ycol.dtype, np.dtype) and ycol.dtype.kind in "iufb":  # numeric: no parsing
        y = ycol.to_numpy(dtype=float)
    else:
        y = pd.to_numeric(ycol, errors="coerce").to_numpy(dtype=float)
    keep = np.isfinite(y)
    if np.isinf(y).any():
        raise ValueError(f"`data`: column {var!r} must be finite or NaN; found infinite values")
    all_kept = bool(keep.all())
    codes, labels = {}, {}
    for f in design.facets:
        col = df[f].to_numpy()
        codes[f], labels[f] = _codes_of_column(col if all_kept else col[keep], f)
    return _Long(y=y if all_kept else y[keep], codes=codes, labels=labels)


def _coord_facet(da: xr.DataArray, name: str) -> str:
    if name in da.dims:
        return name
    if name in da.coords and da.coords[name].ndim == 1:
        return str(da.coords[name].dims[0])
    raise ValueError(
        f"`design`: facet {name!r} must be a dimension of the scores {tuple(da.dims)} or a 1-D "
        f"coord along one (coords {list(da.coords)})"
    )


def _from_array(da: xr.DataArray, design: Design) -> _Long:
    vals = np.asarray(da.values, dtype=float)
    if np.isinf(vals).any():
        raise ValueError("the scores must be finite or NaN; found infinite values")
    home = {f: _coord_facet(da, f) for f in design.facets}
    dims_used = {h for h in home.values()}
    extra = [d for d in da.dims if d not in dims_used]
    if extra:
        raise ValueError(
            f"the scores must have only dimensions named in the design {design.formula!r}; "
            f"extra dimensions {extra} (select or average them first)"
        )
    dim_facets = [f for f in design.facets if f in da.dims]
    if len(dim_facets) == len(design.facets) and np.isfinite(vals).all():
        # fast path: every facet is a dim and nothing is missing: balanced and dense
        order = [da.dims.index(f) for f in design.facets]
        dense = vals.transpose(order) if order != sorted(order) else vals
        return _Long(y=dense.ravel(), codes={}, labels={}, dense=dense)
    obs = np.isfinite(vals)
    idx = np.nonzero(obs)
    codes, labels = {}, {}
    pos = {d: idx[i] for i, d in enumerate(da.dims)}
    for f in design.facets:
        d = home[f]
        if f == d:
            lab = da[d].values if d in da.coords else np.arange(da.sizes[d])
            c, u = _factorize(lab)
        else:
            raw = np.asarray(da.coords[f].values, dtype=object)
            miss = np.array(
                [v is None or (isinstance(v, float) and np.isnan(v)) or v == "" for v in raw]
            )
            if miss.any():
                raise ValueError(
                    f"`data`: coord {f!r} has {int(miss.sum())} missing labels (e.g. "
                    f"{d} {list(np.asarray(da[d].values)[miss][:3])}); label them or drop "
                    f"{f!r} from the design"
                )
            c, u = _factorize(raw)
        # levels with no observed score (an agent that ran none of these tasks) are left out:
        # codes stay dense 0..L-1 over the observed levels
        used, dense_c = np.unique(c[pos[d]], return_inverse=True)
        codes[f] = dense_c.astype(np.int64)
        labels[f] = u[used]
    return _Long(y=vals[obs], codes=codes, labels=labels)


def _balanced_dense(long: _Long, design: Design) -> np.ndarray | None:
    """The dense array (axes in ``design.facets`` order) if the long data are balanced."""
    if long.dense is not None:
        return long.dense
    N = long.y.size
    ranks = {}
    sizes = []
    for f in design.facets:
        if not design.parents[f]:  # a crossed facet: its codes are already 0..n-1
            ranks[f] = long.codes[f]
            sizes.append(int(long.codes[f].max()) + 1)
            continue
        par = [g for g in design.facets if g in design.parents[f]]
        pc, _ = _reml.joint_codes([long.codes[g] for g in par])
        jc, nj = _reml.joint_codes([pc, long.codes[f]])
        first = np.zeros(nj, dtype=np.int64)
        first[jc[::-1]] = np.arange(N)[::-1]
        parent_of = pc[first]
        per = np.bincount(parent_of)
        per = per[per > 0]
        if per.min() != per.max():
            return None
        order = np.lexsort((long.codes[f][first], parent_of))
        rank = np.empty(nj, dtype=np.int64)
        sorted_par = parent_of[order]
        starts = np.r_[0, np.nonzero(np.diff(sorted_par))[0] + 1]
        grp = np.zeros(nj, dtype=np.int64)
        grp[starts[1:]] = 1
        grp = np.cumsum(grp)
        rank[order] = np.arange(nj) - starts[grp]
        ranks[f] = rank[jc]
        sizes.append(int(per[0]))
    if N != int(np.prod(sizes)):
        return None
    flat = np.ravel_multi_index(tuple(ranks[f] for f in design.facets), sizes)
    if np.bincount(flat, minlength=N).max() != 1:
        return None
    dense = np.empty(N)
    dense[flat] = long.y
    return dense.reshape(sizes)


# --------------------------------------------------------------------------- result


def _broadcast_sizes(sizes: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    keys = list(sizes)
    out = {}
    for i, k in enumerate(keys):
        shape = [1] * len(keys)
        shape[i] = sizes[k].size
        out[k] = sizes[k].reshape(shape)
    return out


@dataclass(frozen=True, repr=False)
class VarianceComponentsResult(Result):
    """A G-study: variance components with intervals, the ANOVA table, D-studies.

    ``estimate`` and ``ci`` (and the other DataArray views) are built when asked
    for, so a balanced G-study costs microseconds.

    Attributes
    ----------
    estimate : xarray.DataArray
        Variance components over ``component`` (ANOVA estimates truncated at 0,
        or REML estimates).
    ci : xarray.DataArray
        Intervals (``ci_bound``) of kind ``ci_method``: profile REML likelihood
        (``ci_kind`` ``"profile"``, computed on first use: milliseconds on small
        designs, seconds on METR) or Wald on the log-variance scale
        (``"normal"``; an estimate at 0 gets ``[0, z * se]``).
    ci_method : {"profile", "wald"}
        The kind behind ``ci`` and :meth:`coefficients`.
    formula : str
        The design.
    measurement : str or None
        The object of measurement (None: the design has no such facet, e.g.
        one agent).
    method : {"anova", "reml"}
    """

    formula: str
    facets: tuple[str, ...]
    measurement: str | None
    method: str
    component_names: tuple[str, ...]
    estimates_raw: np.ndarray
    anova_raw: np.ndarray
    cov: np.ndarray
    sources: tuple[str, ...]
    sum_sq: np.ndarray
    df: np.ndarray
    mean_sq: np.ndarray
    sizes: dict[str, float]
    n_obs: int
    grand_mean: float
    design: str = ""
    note: str = ""
    prob: float = DEFAULT_PROB
    confounded: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    fit_info: dict = field(default_factory=dict)
    ci_method: str = "wald"
    _design: Design | None = None
    _legacy: tuple[str, str, str] | None = None
    # the long data (y, effect codes) for profile intervals; a memo of computed intervals
    _reml_data: tuple | None = field(default=None, compare=False)
    _memo: dict = field(default_factory=dict, compare=False)

    _dataset_exclude = ()

    # -- views -----------------------------------------------------------------
    def _attrs(self) -> dict:
        attrs: dict = {
            "facets": list(self.facets),
            "design": self.formula,
            "method": self.method,
            "measurement": str(self.measurement),
        }
        if self.note:
            attrs["note"] = self.note
        return attrs

    def _comp(self, values: np.ndarray) -> xr.DataArray:
        return xr.DataArray(
            values,
            dims="component",
            coords={"component": list(self.component_names)},
            attrs=self._attrs(),
        )

    @property
    def estimate(self) -> xr.DataArray:
        """Variance components (ANOVA estimates truncated at 0, or REML)."""
        return self._comp(np.maximum(self.estimates_raw, 0.0))

    @property
    def se(self) -> xr.DataArray:
        """Standard errors of the components (sqrt of the diagonal of ``cov``)."""
        with np.errstate(invalid="ignore"):
            return self._comp(np.sqrt(np.diag(self.cov)))

    @property
    def ci(self) -> xr.DataArray:
        """Intervals at level ``prob``: profile-likelihood (``ci_method="profile"``) or Wald
        on the log-variance scale (``"wald"``)."""
        if self.ci_method == "profile":
            return self.profile_ci()
        return self.wald_ci()

    def wald_ci(self, prob: float | None = None) -> xr.DataArray:
        """Wald intervals on the log-variance scale (``ci_kind`` ``"normal"``)."""
        prob = self.prob if prob is None else check_prob(prob)
        est = np.maximum(self.estimates_raw, 0.0)
        se = np.sqrt(np.clip(np.diag(self.cov), 0, None))
        z = float(stats.norm.ppf(0.5 + prob / 2))
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            slog = se / est
            lo = np.where(est > 0, est * np.exp(-z * slog), 0.0)
            hi = np.where(est > 0, est * np.exp(z * slog), z * se)
        src = (
            "the exact sampling variance of the balanced ANOVA estimators"
            if self.method == "anova"
            else f"the {self.fit_info.get('information') or 'expected'} REML information"
        )
        return make_interval(
            lo,
            hi,
            prob=prob,
            kind="normal",
            detail=(
                f"Wald on log(variance) with standard errors from {src}; an estimate at 0 "
                "gets [0, z * se]"
            ),
            template=self._comp(est),
            warn_zero_width=False,
        )

    def _profiler(self):
        """The REML problem, its fit and the map design order -> problem order (memoised)."""
        if "profiler" in self._memo:
            return self._memo["profiler"]
        if self._reml_data is None or self._design is None:
            raise ValueError(
                "profile intervals need the data of the fit (this result was built without them)"
            )
        y, ec = self._reml_data
        dsg = self._design
        if isinstance(ec, tuple):  # a balanced fit keeps its array shape: codes built on demand
            ec = _reml.effect_codes(
                {f: np.indices(ec)[i].ravel() for i, f in enumerate(dsg.facets)}, dsg
            )
        with _reml.one_blas_thread():
            problem = _reml.RemlProblem(y, ec, dsg)
            order = [dsg.effects.index(e) for e in problem.terms]
            if problem.cell_effect is not None:
                order.append(dsg.effects.index(problem.cell_effect))
            order.append(dsg.effects.index(frozenset(dsg.facets)))
            if self.method == "reml":
                s2e = float(self.estimates_raw[order[-1]])
                theta = np.sqrt(np.maximum(self.estimates_raw[order[:-1]], 0.0) / s2e)
            else:  # balanced ANOVA: the profile is of the REML likelihood, around its maximum
                _, _, fi = _fit_reml(y, ec, dsg, self.anova_raw, need_cov=False)
                theta = np.asarray(fi["theta"], dtype=float)
            prof = _profile.Profiler(problem, theta)
        self._memo["profiler"] = (prof, order)
        return prof, order

    def profile_ci(self, prob: float | None = None) -> xr.DataArray:
        """Profile-likelihood intervals of the components from the REML likelihood.

        ``{s : D_prof(s) - D_min <= chi2_1(prob)}`` with ``D`` the REML deviance and the
        other components (and the residual) maximised out; a bound the profile never
        reaches is 0 (or infinity). Computed on first use and kept.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> rng = np.random.default_rng(3)
        >>> df = pd.DataFrame({"batch": np.repeat(np.arange(6), 5), "rep": np.tile(np.arange(5), 6)})
        >>> df["y"] = rng.normal(0, 1, 6)[df.batch] + rng.normal(0, 1, 30)
        >>> vc = variance_components(df.iloc[:-2], design="rep:batch", var="y")  # unbalanced
        >>> vc.method, vc.ci_method
        ('reml', 'profile')
        >>> ci = vc.profile_ci()
        >>> ci.attrs["ci_kind"], bool((ci.sel(ci_bound="lower") <= vc.estimate).all())
        ('profile', True)
        """
        prob = self.prob if prob is None else check_prob(prob)
        key = ("profile_ci", prob)
        if key not in self._memo:
            est = np.maximum(self.estimates_raw, 0.0)
            m = est.size
            lo = np.full(m, np.nan)
            hi = np.full(m, np.nan)
            if self._reml_data is not None and float(np.ptp(self._reml_data[0])) == 0.0:
                lo[:] = 0.0
                hi[:] = 0.0
            else:
                prof, order = self._profiler()
                k = prof.p.n_theta
                s2_hat = np.r_[prof.theta_hat**2 * prof.s2e_hat, prof.s2e_hat]
                scale = float(np.var(self._reml_data[0]))
                with warnings.catch_warnings():  # Wald bounds: only where the search starts
                    warnings.simplefilter("ignore")
                    wald = self.wald_ci(prob).values
                with _reml.one_blas_thread():
                    for jp, jd in enumerate(order):
                        lo[jd], hi[jd] = _profile.component_interval(
                            lambda jp=jp: prof.component_profile(jp),
                            float(s2_hat[jp]),
                            scale,
                            prob,
                            residual=jp == k,
                            guess=tuple(wald[jd]),
                        )
            self._memo[key] = (lo, hi)
        lo, hi = self._memo[key]
        return make_interval(
            lo.copy(),
            hi.copy(),
            prob=prob,
            kind="profile",
            detail=(
                "profile REML likelihood (Wilks, chi2 with 1 df); the other components "
                "maximised out; a bound the profile never reaches is 0 or inf"
            ),
            template=self._comp(np.maximum(self.estimates_raw, 0.0)),
            warn_zero_width=False,
        )

    @property
    def components(self) -> xr.DataArray:
        """Alias of :attr:`estimate` (negative ANOVA estimates truncated at 0)."""
        return self.estimate

    @property
    def components_raw(self) -> xr.DataArray:
        """The untruncated estimates (ANOVA may be negative; REML is >= 0)."""
        return self._comp(self.estimates_raw.copy())

    @property
    def truncated(self) -> xr.DataArray:
        """True where a negative ANOVA estimate was set to 0."""
        return self._comp(self.estimates_raw < 0)

    @property
    def anova_estimate(self) -> xr.DataArray:
        """ANOVA-type estimates (Henderson's Method I; Brennan's for balanced data), untruncated."""
        return self._comp(self.anova_raw.copy())

    @property
    def anova(self) -> xr.Dataset:
        """The ANOVA table: ``sum_sq``, ``df``, ``mean_sq`` over ``source``."""
        return xr.Dataset(
            {
                "sum_sq": ("source", self.sum_sq.copy()),
                "df": ("source", self.df.copy()),
                "mean_sq": ("source", self.mean_sq.copy()),
            },
            coords={"source": list(self.sources)},
        )

    # legacy accessors -----------------------------------------------------------
    @property
    def n_agents(self) -> int:
        return round(self.sizes.get(self.facets[0], 1))

    @property
    def n_tasks(self) -> int:
        return round(self.sizes.get(self.facets[1], 1)) if len(self.facets) > 1 else 1

    @property
    def n_runs(self) -> int:
        if self._legacy is not None:
            return round(self.sizes.get(self._legacy[2], 1))
        return round(self.sizes.get(self.facets[-1], 1))

    # -- D-study ------------------------------------------------------------------
    def _comp_dict(self, values: np.ndarray | None = None) -> dict[frozenset, Any]:
        v = np.maximum(self.estimates_raw, 0.0) if values is None else values
        assert self._design is not None
        return dict(zip(self._design.effects, v, strict=True))

    def _coefficients(
        self, sizes: dict[str, Any], comp: dict[frozenset, Any] | None = None, warn: bool = True
    ) -> dict[str, Any]:
        d = self._design
        assert d is not None
        comp = self._comp_dict() if comp is None else comp
        p = self.measurement
        M = frozenset() if p is None else frozenset({p}) | d.parents[p]
        tau: Any = 0.0
        delta: Any = 0.0
        Delta: Any = 0.0
        for e, s in comp.items():
            if p is not None and e <= M:
                tau = tau + s
                continue
            div: Any = 1.0
            for f in e - M:
                div = div * sizes[f]
            Delta = Delta + s / div
            if p is not None and p in e:
                delta = delta + s / div
        nan_mask: Any = False
        for f in self.confounded:
            nan_mask = nan_mask | (np.asarray(sizes.get(f, 1.0)) != 1)
        if p is None:
            tau = np.nan
            delta = np.nan
        with np.errstate(invalid="ignore", divide="ignore"):
            e_rho2 = np.asarray(tau / (tau + delta), dtype=float) if p is not None else np.nan
            phi = np.asarray(tau / (tau + Delta), dtype=float) if p is not None else np.nan
        out = {
            "sigma2_tau": tau,
            "sigma2_delta": delta,
            "sigma2_Delta": Delta,
            "e_rho2": e_rho2,
            "phi": phi,
            "var_paired_diff": 2 * np.asarray(delta, dtype=float),
        }
        if warn:
            if p is None:
                warnings.warn(
                    "no object of measurement in the design (e.g. one agent): the universe-score "
                    "variance is undefined, so E rho^2, Phi, sigma2_delta and the paired-difference "
                    "variance are NaN; sigma2_Delta is the error variance of the mean score",
                    UndefinedCoefficientWarning,
                    stacklevel=3,
                )
            elif np.any(np.asarray(tau + delta) == 0) or np.any(np.asarray(tau + Delta) == 0):
                warnings.warn(
                    "E rho^2 / Phi are 0/0 (no universe-score and no error variance, e.g. constant "
                    "scores): NaN",
                    UndefinedCoefficientWarning,
                    stacklevel=3,
                )
        if np.any(nan_mask):
            for k in ("sigma2_delta", "sigma2_Delta", "e_rho2", "phi", "var_paired_diff"):
                out[k] = np.where(nan_mask, np.nan, out[k])
        return out

    def _g_sizes(self) -> dict[str, float]:
        return dict(self.sizes)

    def _at_g_study(self, key: str) -> float:
        return float(np.asarray(self._coefficients(self._g_sizes())[key]))

    @property
    def e_rho2(self) -> float:
        """Generalizability coefficient at the G-study sizes (NaN + warning when undefined)."""
        return self._at_g_study("e_rho2")

    @property
    def phi(self) -> float:
        """Dependability coefficient at the G-study sizes."""
        return self._at_g_study("phi")

    @property
    def var_paired_diff(self) -> float:
        """Variance of the difference of two objects' means at the G-study sizes."""
        if self.measurement is None:
            warnings.warn(
                "no object of measurement (e.g. one agent): the interaction with the object is "
                "confounded with the other components, so the paired-difference variance is NaN",
                ConfoundedComponentWarning,
                stacklevel=2,
            )
            return float("nan")
        return self._at_g_study("var_paired_diff")

    def d_study(
        self,
        sizes: dict[str, Any] | None = None,
        *,
        n_tasks: int | np.ndarray | None = None,
        n_runs: int | np.ndarray | None = None,
    ) -> xr.Dataset:
        """Project error variances and coefficients to planned sample sizes.

        Parameters
        ----------
        sizes : dict, optional
            Facet -> planned number(s) of levels *per level of the facets it is
            nested in* (tasks per family, runs per cell); arrays give a grid
            with dims ``n_<facet>``. Facets not given keep their G-study size
            (for unbalanced data, the mean number of levels per parent level).
        n_tasks, n_runs : int or array, optional
            The three-facet shorthand (second and third facet; dims ``n_tasks``
            and ``n_runs``).

        Returns
        -------
        xarray.Dataset
            ``sigma2_tau``, ``sigma2_delta``, ``sigma2_Delta``, ``e_rho2``,
            ``phi`` and ``var_paired_diff`` over the size grid.

        Examples
        --------
        >>> import numpy as np, xarray as xr
        >>> y = np.random.default_rng(0).normal(size=(5, 8, 3))
        >>> vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
        >>> vc.d_study({"task": [10, 20], "run": [1, 4]})["e_rho2"].dims
        ('n_task', 'n_run')
        """
        d = self._design
        assert d is not None
        grid: dict[str, np.ndarray] = {}
        dims: dict[str, str] = {}
        if n_tasks is not None or n_runs is not None:
            if self._legacy is None:
                raise ValueError(
                    "`n_tasks` / `n_runs` are the three-facet shorthand; for the design "
                    f"{self.formula!r} give `sizes` (facet -> planned levels)"
                )
            _, ft, fr = self._legacy
            sizes = dict(sizes or {})
            sizes[ft] = self.sizes.get(ft, 1) if n_tasks is None else n_tasks
            sizes[fr] = self.sizes.get(fr, 1) if n_runs is None else n_runs
            dims = {ft: "n_tasks", fr: "n_runs"}
        elif sizes is None:
            sizes = {}
            if self._legacy is not None:
                _, ft, fr = self._legacy
                sizes = {ft: self.sizes.get(ft, 1), fr: self.sizes.get(fr, 1)}
                dims = {ft: "n_tasks", fr: "n_runs"}
        allowed = set(d.facets) | set(self.confounded)
        for f, v in sizes.items():
            if f not in allowed or f == self.measurement:
                raise ValueError(
                    f"`sizes`: {f!r} is not a facet of generalization of the design "
                    f"{self.formula!r} (facets {[g for g in d.facets if g != self.measurement]})"
                )
            arr = np.atleast_1d(np.asarray(v, dtype=float))
            name = dims.get(f, f"n_{f}")
            if arr.ndim != 1 or np.any(arr < 1) or np.any(arr != np.round(arr)):
                label = name if name.startswith("n_") else f
                raise ValueError(f"`{label}` must be positive integers; got {arr.tolist()}")
            grid[f] = arr
            dims.setdefault(f, f"n_{f}")
        confounded_asked = [f for f in self.confounded if f in grid and np.any(grid[f] != 1)]
        if confounded_asked:
            warnings.warn(
                f"the G-study had one level of {confounded_asked} per cell, so its component is "
                "confounded with the residual; projections to other sizes are NaN",
                ConfoundedComponentWarning,
                stacklevel=2,
            )
        full = {f: np.asarray(self.sizes.get(f, 1.0)) for f in d.facets}
        b = _broadcast_sizes(grid)
        full.update(b)
        for f in self.confounded:
            if f in b:
                full[f] = b[f]
        out = self._coefficients(full, warn=True)
        shape = tuple(a.size for a in grid.values())
        dnames = tuple(dims[f] for f in grid)
        ds = xr.Dataset(
            {
                k: (dnames, np.broadcast_to(np.asarray(v, dtype=float), shape))
                for k, v in out.items()
            },
            coords={dims[f]: a.astype(np.int64) for f, a in grid.items()},
        )
        ds.attrs = {
            "design": self.formula,
            "measurement": str(self.measurement),
            "facets": list(self.facets),
            "method": self.method,
        }
        return ds

    def optimal_allocation(
        self,
        budget: float,
        cost: dict[str, float],
        *,
        n_objects: int | None = None,
        max_sizes: dict[str, int] | None = None,
        criterion: str = "var_paired_diff",
    ) -> xr.Dataset:
        """The cost-optimal D-study under a budget, by enumeration of a size grid.

        Parameters
        ----------
        budget : float
            Total budget.
        cost : dict
            Facet -> cost of one new level of it, levels counted as in the
            D-study: one run of one agent on one task (``"run"`` with runs nested
            in cells), one new task (``"task"``), one new family, ...
            Facets not named cost nothing.
        n_objects : int, optional
            Number of objects of measurement (agents) evaluated; default the
            G-study's.
        max_sizes : dict, optional
            Largest size tried per facet (default: 4 x the G-study size, at
            least 16).
        criterion : {"var_paired_diff", "sigma2_Delta", "e_rho2", "phi"}
            Minimised (variances) or maximised (coefficients).

        Returns
        -------
        xarray.Dataset
            The D-study variables over dims ``n_<facet>`` plus ``cost`` and
            ``feasible``; attrs ``optimum`` (facet -> size), ``optimum_value``,
            ``optimum_cost``, ``budget``, ``criterion``.

        Examples
        --------
        >>> import numpy as np, xarray as xr
        >>> y = np.random.default_rng(1).normal(size=(4, 10, 3))
        >>> vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
        >>> opt = vc.optimal_allocation(1000, {"task": 5.0, "run": 1.0})
        >>> sorted(opt.attrs["optimum"])
        ['run', 'task']
        """
        d = self._design
        assert d is not None
        valid = ("var_paired_diff", "sigma2_Delta", "e_rho2", "phi")
        if criterion not in valid:
            raise ValueError(f"`criterion` must be one of {valid}; got {criterion!r}")
        if not np.isfinite(budget) or budget <= 0:
            raise ValueError(f"`budget` must be a positive number; got {budget!r}")
        gen = [
            f
            for f in d.facets
            if f != self.measurement
            and (self.measurement is None or f not in d.parents[self.measurement])
        ]
        for f, c in cost.items():
            if f not in gen:
                raise ValueError(f"`cost`: {f!r} is not a facet of generalization; facets {gen}")
            if not np.isfinite(c) or c < 0:
                raise ValueError(f"`cost`: cost of {f!r} must be >= 0; got {c!r}")
        max_sizes = dict(max_sizes or {})
        grid = {}
        for f in gen:
            m = int(max_sizes.get(f, max(16, int(np.ceil(4 * self.sizes.get(f, 1))))))
            grid[f] = np.arange(1, m + 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConfoundedComponentWarning)
            ds = self.d_study(grid)
        M = float(self.sizes.get(self.measurement, 1) if n_objects is None else n_objects)
        b = _broadcast_sizes({f: grid[f].astype(float) for f in gen})
        total: Any = 0.0
        for f, c in cost.items():
            cnt: Any = 1.0
            for g in {f} | d.parents[f]:
                cnt = cnt * (M if g == self.measurement else b[g])
            total = total + c * cnt
        shape = tuple(a.size for a in grid.values())
        ds["cost"] = (
            tuple(f"n_{f}" for f in gen),
            np.broadcast_to(np.asarray(total, float), shape),
        )
        ds["feasible"] = ds["cost"] <= budget
        crit = ds[criterion].where(ds["feasible"])
        vals = crit.values
        if np.all(np.isnan(vals)):
            raise ValueError(
                f"`budget` {budget} buys no design on the grid (cheapest costs "
                f"{float(ds['cost'].min()):.4g})"
            )
        flat = np.nanargmax(vals) if criterion in ("e_rho2", "phi") else np.nanargmin(vals)
        where = np.unravel_index(flat, vals.shape)
        opt = {f: int(grid[f][i]) for f, i in zip(gen, where, strict=True)}
        ds.attrs.update(
            {
                "optimum": opt,
                "optimum_value": float(vals[where]),
                "optimum_cost": float(ds["cost"].values[where]),
                "budget": float(budget),
                "criterion": criterion,
                "n_objects": M,
                "cost_per_level": dict(cost),
            }
        )
        return ds

    def coefficients(
        self,
        *,
        prob: float | None = None,
        ci: str | None = None,
        sizes: dict[str, float] | None = None,
    ) -> xr.Dataset:
        """E rho^2 and Phi with intervals, at the G-study sizes or at planned ones.

        Parameters
        ----------
        prob : float, optional
            Level (default the result's ``prob``).
        ci : {"profile", "wald"}, optional
            ``"profile"``: profile REML likelihood of the coefficient (the
            components maximised under the coefficient fixed); ``"wald"``: the
            delta method on the logit scale. Default: the result's ``ci_method``.
        sizes : dict, optional
            Facet -> planned number of levels (one D-study point, as in
            :meth:`d_study`); facets not given keep their G-study size.

        Returns
        -------
        xarray.Dataset
            ``estimate`` and ``ci`` over ``coefficient = ["e_rho2", "phi"]``.

        Examples
        --------
        >>> import numpy as np, xarray as xr
        >>> rng = np.random.default_rng(2)
        >>> y = rng.normal(size=(6, 1, 1)) + rng.normal(size=(6, 12, 3))
        >>> vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
        >>> co = vc.coefficients(sizes={"task": 48})
        >>> bool(co["estimate"].sel(coefficient="e_rho2") > vc.e_rho2)
        True
        """
        prob = self.prob if prob is None else check_prob(prob)
        ci = self.ci_method if ci is None else ci
        if ci not in ("profile", "wald"):
            raise ValueError(f"`ci` must be 'profile' or 'wald'; got {ci!r}")
        sizes = self._planned_sizes(sizes)
        if ci == "profile":
            return self._coefficients_profile(prob, sizes)
        return self._coefficients_wald(prob, sizes)

    def _coefficients_wald(self, prob: float, sizes: dict[str, float]) -> xr.Dataset:
        base = np.maximum(self.estimates_raw, 0.0)
        names = ("e_rho2", "phi")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedCoefficientWarning)
            f0 = np.array(
                [float(np.asarray(self._coefficients(sizes, warn=False)[k])) for k in names]
            )
            grad = np.zeros((2, base.size))
            for j in range(base.size):
                h = max(1e-7, 1e-5 * abs(base[j]))
                up = base.copy()
                up[j] += h
                f1 = np.array(
                    [
                        float(
                            np.asarray(
                                self._coefficients(sizes, self._comp_dict(up), warn=False)[k]
                            )
                        )
                        for k in names
                    ]
                )
                grad[:, j] = (f1 - f0) / h
        var = np.einsum("ij,jk,ik->i", grad, np.nan_to_num(self.cov), grad)
        # a coefficient whose components have no covariance (not computed) has no interval
        for i in range(grad.shape[0]):
            used = np.flatnonzero(grad[i] != 0)
            if np.isnan(self.cov[np.ix_(used, used)]).any():
                var[i] = np.nan
        z = float(stats.norm.ppf(0.5 + prob / 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            lg = np.log(f0 / (1 - f0))
            slg = np.sqrt(var) / (f0 * (1 - f0))
            lo = 1 / (1 + np.exp(-(lg - z * slg)))
            hi = 1 / (1 + np.exp(-(lg + z * slg)))
            # a coefficient at a bound (a universe-score component truncated at 0) has no
            # logit: [0, z * se] (or [1 - z * se, 1]) with the delta-method se, as the
            # components at 0 get [0, z * se]
            se_raw = np.sqrt(var)
            at0 = f0 == 0
            at1 = f0 == 1
            lo = np.where(at0, 0.0, np.where(at1, np.maximum(1 - z * se_raw, 0.0), lo))
            hi = np.where(at0, np.minimum(z * se_raw, 1.0), np.where(at1, 1.0, hi))
        est = xr.DataArray(f0, dims="coefficient", coords={"coefficient": list(names)})
        ci = make_interval(
            lo,
            hi,
            prob=prob,
            kind="normal",
            template=est,
            warn_zero_width=False,
            detail=(
                "delta method on the logit scale from the components' covariance; a "
                "coefficient at 0 (1) gets [0, z * se] ([1 - z * se, 1])"
            ),
        )
        return xr.Dataset({"estimate": est, "ci": ci})

    def _coef_weights(self, sizes: dict[str, float]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Weights (design order) of the components in ``tau`` and in the relative and
        absolute error variances at ``sizes``."""
        d = self._design
        assert d is not None
        p = self.measurement
        M = frozenset() if p is None else frozenset({p}) | d.parents[p]
        m = len(d.effects)
        tau, rel, ab = np.zeros(m), np.zeros(m), np.zeros(m)
        for i, e in enumerate(d.effects):
            if p is not None and e <= M:
                tau[i] = 1.0
                continue
            div = 1.0
            for f in e - M:
                div *= float(sizes[f])
            ab[i] = 1.0 / div
            if p is not None and p in e:
                rel[i] = 1.0 / div
        return {"e_rho2": (tau, rel), "phi": (tau, ab)}

    def _planned_sizes(self, sizes: dict[str, float] | None) -> dict[str, float]:
        out = self._g_sizes()
        if not sizes:
            return out
        d = self._design
        assert d is not None
        for f, v in sizes.items():
            if f not in d.facets or f == self.measurement:
                raise ValueError(
                    f"`sizes`: {f!r} is not a facet of generalization of the design "
                    f"{self.formula!r} (facets {[g for g in d.facets if g != self.measurement]})"
                )
            if f in self.confounded:
                raise ValueError(f"`sizes`: {f!r} is confounded with the residual in this G-study")
            if not (np.ndim(v) == 0 and float(v) >= 1 and float(v) == round(float(v))):
                raise ValueError(f"`sizes`: {f!r} must be one positive integer; got {v!r}")
            out[f] = float(v)
        return out

    def _coefficients_profile(self, prob: float, sizes: dict[str, float]) -> xr.Dataset:
        names = ("e_rho2", "phi")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UndefinedCoefficientWarning)
            co = self._coefficients(sizes, warn=False)
            f0 = np.array([float(np.asarray(co[k])) for k in names])
        key = ("profile_coef", prob, tuple(sorted(sizes.items())))
        if key not in self._memo:
            lo = np.full(2, np.nan)
            hi = np.full(2, np.nan)
            if self.measurement is not None and np.all(np.isfinite(f0)):
                prof, order = self._profiler()
                w = self._coef_weights(sizes)
                # the coefficient at the REML fit the profile is built around
                s2_hat = np.r_[prof.theta_hat**2 * prof.s2e_hat, prof.s2e_hat]
                with warnings.catch_warnings():  # Wald bounds: only where the search starts
                    warnings.simplefilter("ignore")
                    wald = self._coefficients_wald(prob, sizes)["ci"].values
                with _reml.one_blas_thread():
                    for i, k in enumerate(names):
                        tw, ew = (np.asarray(a)[order] for a in w[k])
                        r_hat = float(tw @ s2_hat / (tw @ s2_hat + ew @ s2_hat))
                        lo[i], hi[i] = _profile.ratio_interval(
                            lambda tw=tw, ew=ew: prof.ratio_profile(tw, ew),
                            r_hat,
                            prob,
                            guess=tuple(wald[i]),
                        )
            self._memo[key] = (lo, hi)
        lo, hi = self._memo[key]
        est = xr.DataArray(f0, dims="coefficient", coords={"coefficient": list(names)})
        ci = make_interval(
            lo.copy(),
            hi.copy(),
            prob=prob,
            kind="profile",
            template=est,
            warn_zero_width=False,
            detail=(
                "profile REML likelihood of the coefficient at the sizes asked (default the "
                "G-study's) (Wilks, chi2 "
                "with 1 df); the components maximised with the coefficient fixed"
            ),
        )
        return xr.Dataset({"estimate": est, "ci": ci})

    def to_dataset(self) -> xr.Dataset:
        """``estimate``, ``ci``, ``se``, ``variance`` (= estimate), ``variance_raw``,
        ``truncated``, ``anova_estimate`` over ``component``; ``sum_sq``, ``df``,
        ``mean_sq`` over ``source``."""
        anova = self.anova
        ds = xr.Dataset(
            {
                "estimate": self.estimate,
                "ci": self.ci,
                "se": self.se,
                "variance": self.estimate,
                "variance_raw": self.components_raw,
                "truncated": self.truncated,
                "anova_estimate": self.anova_estimate,
                "sum_sq": anova["sum_sq"],
                "df": anova["df"],
                "mean_sq": anova["mean_sq"],
            }
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HierbenchWarning)
            ds.attrs = {
                "design": self.formula,
                "method": self.method,
                "measurement": str(self.measurement),
                "facets": list(self.facets),
                "n_obs": self.n_obs,
                "grand_mean": self.grand_mean,
                "e_rho2": self.e_rho2,
                "phi": self.phi,
            }
        return ds

    def to_frame(self):
        """One row per component: estimate, lower, upper, se, ANOVA-type estimate."""
        df = super().to_frame()
        df["anova_estimate"] = self.anova_raw
        return df


# --------------------------------------------------------------------------- public


def _resolve_design(
    data: Any, design: str | None, facets: tuple[str, ...] | None, var: str
) -> tuple[Any, Design, tuple[str, str, str] | None, list[str]]:
    """Returns (scores array or frame, parsed design, legacy facet triple, confounded facets)."""
    if isinstance(data, pd.DataFrame):
        if design is None or design in LEGACY:
            raise ValueError(
                "`design` must be a design description (e.g. 'run:(agent*task)') for a DataFrame; "
                f"got {design!r}"
            )
        return data, parse_design(design), None, []
    if isinstance(data, xr.Dataset):
        if var not in data:
            raise ValueError(
                f"`data` must contain the variable {var!r}; found {list(data.data_vars)}"
            )
        da = data[var]
        if (facets is None and design is None) or design in LEGACY:
            facets = facets or ("agent", "task", "run")
    elif isinstance(data, xr.DataArray):
        da = data
    else:
        raise TypeError(
            f"`data` must be an xarray Dataset or DataArray or a pandas DataFrame; got "
            f"{type(data).__name__}"
        )
    if design is not None and design not in LEGACY:
        if facets is not None:
            raise ValueError("give either `design` (a description) or `facets`, not both")
        return da, parse_design(design), None, []
    if facets is None:
        facets = tuple(str(d) for d in da.dims)
    facets = tuple(facets)
    if len(facets) not in (2, 3) or len(set(facets)) != len(facets):
        raise ValueError(f"`facets` must name 2 or 3 distinct dimensions; got {facets}")
    missing = [f for f in facets if f not in da.dims]
    if missing:
        raise ValueError(f"`facets` must be dimensions of the scores {da.dims}; missing {missing}")
    extra = [d for d in da.dims if d not in facets]
    if extra:
        raise ValueError(
            f"the scores must have exactly the dimensions named in `facets` {facets}; "
            f"extra dimensions {extra} (select or average them first)"
        )
    confounded: list[str] = []
    if len(facets) == 2:
        a, t = facets
        legacy = (a, t, "run")
        if design == "crossed":
            raise ValueError(
                "design='crossed' needs >= 2 levels of the run facet `run`; got 1 "
                "(with one run per cell use design='nested')"
            )
        confounded = ["run"]
        return da, parse_design(f"{a}*{t}"), legacy, confounded
    a, t, r = facets
    legacy = (a, t, r)
    kind = design or "nested"
    if kind == "crossed" and da.sizes[r] < 2:
        raise ValueError(
            f"design='crossed' needs >= 2 levels of the run facet `{r}`; got {da.sizes[r]} "
            "(with one run per cell use design='nested')"
        )
    if (
        design is None
        and isinstance(data, xr.Dataset)
        and "cluster" in da.coords
        and da.coords["cluster"].dims == (t,)
    ):
        return da, parse_design(f"{r}:({a}*({t}:cluster))"), legacy, confounded
    return da, parse_design(LEGACY[kind].format(a=a, t=t, r=r)), legacy, confounded


def variance_components(
    data: xr.Dataset | xr.DataArray | pd.DataFrame,
    *,
    design: str | None = None,
    facets: tuple[str, ...] | None = None,
    var: str = "score",
    measurement: str | None = "auto",
    method: str = "auto",
    prob: float = DEFAULT_PROB,
    ci: str = "auto",
) -> VarianceComponentsResult:
    """G-study variance components of any crossed/nested design, balanced or not.

    Parameters
    ----------
    data : xarray.Dataset, xarray.DataArray or pandas.DataFrame
        An eval dataset (``data[var]`` with dims agent, task, run; a task
        ``cluster`` coord nests tasks in clusters), any score array whose
        dims (and 1-D coords) are the facets, or a long table with one column
        per facet and the score column ``var``.
    design : str, optional
        A design description such as ``"run:(agent*task)"``,
        ``"run:(agent*(task:cluster))"``, ``"person*item*occasion"``,
        ``"sample:cask:batch"`` (``*`` crossed, ``:`` left nested in right;
        facets are dims, 1-D coords or columns). ``"nested"`` / ``"crossed"``
        are shorthands for ``run:(agent*task)`` / ``agent*task*run`` over
        ``facets``. Default: read from the data (an eval dataset: runs in
        agent x task cells, tasks in clusters when there is a ``cluster``
        coord; a 2-D array: its two dims crossed, one observation per cell).
    facets : tuple of str, optional
        With the shorthands: the dims in the order (object of measurement,
        task-like, run-like).
    var : str
        The score variable (Dataset) or column (DataFrame).
    measurement : str or None
        The object of measurement for the coefficients and D-studies;
        ``"auto"``: ``agent`` if it is a facet, else the first facet of the
        design. A facet with a single level (one agent) is dropped from the
        design; if it was the object of measurement, the coefficients are NaN
        (with :class:`UndefinedCoefficientWarning`) and ``sigma2_Delta`` is the
        error variance of its mean.
    method : {"auto", "anova", "reml"}
        ``"auto"``: the closed-form ANOVA estimators for balanced data (negative
        estimates truncated at 0 with :class:`NegativeVarianceComponentWarning`),
        REML otherwise. ``"anova"`` refuses unbalanced data with
        :class:`UnbalancedDesignError`.
    prob : float
        Level of the intervals.
    ci : {"auto", "profile", "wald"}
        Kind of the intervals (of the components and of E rho^2 / Phi in
        :meth:`VarianceComponentsResult.coefficients`). ``"auto"``: profile
        REML likelihood for REML fits (unbalanced data), where Wald intervals
        undercover with few levels (``benchmarks/bench_gtheory.py``: see the
        module notes), unless the problem has more than 2,000 cell means or
        1,000 random-effect levels (then Wald, said in ``note``; call
        ``profile_ci()`` for the profile); Wald with the exact sampling
        variance of the ANOVA estimators for balanced data. Wald intervals of a
        REML fit use the expected information up to 6,000 cell means and the
        observed information (a finite-difference Hessian of the REML
        deviance) above; ``fit_info["information"]`` says which. A result
        that cannot have intervals warns :class:`NoIntervalWarning` naming the
        remedy.

    Returns
    -------
    VarianceComponentsResult

    Notes
    -----
    For binary scores this is a linear-probability decomposition (exact for
    variances of means, hence for E rho^2, Phi and the paired difference);
    the Bayesian crossed model gives the latent (logit) scale.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=4, n_tasks=30, n_runs=3, score_kind="continuous",
    ...                       sd_run=0.5, rng=0)
    >>> vc = variance_components(ds)
    >>> vc.components.component.values.tolist()
    ['agent', 'task', 'agent:task', 'residual']
    >>> 0 <= vc.e_rho2 <= 1
    True
    >>> vc.d_study(n_tasks=[30, 100], n_runs=[1, 5])["e_rho2"].shape
    (2, 2)
    """
    if design is not None and not isinstance(design, str):
        raise TypeError(f"`design` must be a string; got {type(design).__name__}")
    if method not in ("auto", "anova", "reml"):
        raise ValueError(f"`method` must be 'auto', 'anova' or 'reml'; got {method!r}")
    prob = check_prob(prob)
    if ci not in ("auto", "profile", "wald"):
        raise ValueError(f"`ci` must be 'auto', 'profile' or 'wald'; got {ci!r}")
    src, dsg, legacy, confounded = _resolve_design(data, design, facets, var)
    long = _from_frame(src, dsg, var) if isinstance(src, pd.DataFrame) else _from_array(src, dsg)
    if long.y.size == 0:
        raise UnbalancedDesignError("no observed scores")
    # facets with a single level carry no variance: drop them, recording it
    dropped: list[str] = []
    note_parts: list[str] = []
    if long.dense is not None:
        nlev = dict(zip(dsg.facets, long.dense.shape, strict=True))
    else:
        nlev = {f: int(long.codes[f].max()) + 1 for f in dsg.facets}
    for f in list(dsg.facets):
        if nlev[f] == 1 and len(dsg.facets) > 1:
            leaf_of_all = dsg.parents[f] == frozenset(dsg.facets) - {f}
            dsg = dsg.without(f)
            if long.dense is not None:
                long.dense = long.dense.squeeze(axis=list(nlev).index(f))
                nlev.pop(f)
            else:
                long.codes.pop(f)
            if leaf_of_all:
                confounded.append(f)
                note_parts.append(f"one {f} per cell: residual is confounded with the {f} error")
            else:
                dropped.append(f)
                note_parts.append(f"{f} has one level and was dropped from the design")
    if measurement == "auto":
        if legacy is not None and legacy[0] in dsg.facets:
            measurement = legacy[0]
        elif "agent" in dsg.facets:
            measurement = "agent"
        elif "agent" in dropped or (legacy is not None and legacy[0] in dropped):
            measurement = None
        else:
            measurement = dsg.facets[0]
    elif measurement is not None and measurement not in dsg.facets:
        if measurement in dropped:
            measurement = None
        else:
            raise ValueError(
                f"`measurement` must be a facet of the design {dsg.formula!r} "
                f"({list(dsg.facets)}) or None; got {measurement!r}"
            )
    if len(dsg.facets) < 1 or long.y.size < 2:
        raise ValueError(f"variance_components needs at least 2 observations; got {long.y.size}")
    # balanced? -> dense array
    if long.dense is not None:
        dense = long.dense
    else:
        dense = _balanced_dense(long, dsg)
    if dense is not None:
        sizes = dict(zip(dsg.facets, (float(s) for s in dense.shape), strict=True))
    if method == "anova" and dense is None:
        raise UnbalancedDesignError(
            f"method='anova' needs a balanced design {dsg.formula!r} (the same number of levels of "
            "every facet within each level of the facets it is nested in, every crossed cell "
            "observed); use method='reml' (the default for unbalanced data)"
        )
    use_anova = dense is not None and method in ("auto", "anova")
    names = dsg.names
    fit_info: dict = {}
    if dense is not None:
        bal = _reml.anova_balanced(dense, dsg)
        anova_raw = bal["estimate"]
        ss, df = bal["sum_sq"], bal["df"]
        with np.errstate(invalid="ignore", divide="ignore"):
            ms = np.where(df > 0, ss / df, np.nan)
        y = dense.ravel()
        if use_anova:
            est = anova_raw
            cov = _reml.anova_cov(bal["coef"], ms, df)
            if np.any(df <= 0):
                bad = [n for n, d in zip(names, df, strict=True) if d <= 0]
                raise ValueError(
                    f"the design {dsg.formula!r} leaves no degrees of freedom for {bad} "
                    f"(facet sizes {sizes}); every facet needs >= 2 levels"
                )
    else:
        ec = _reml.effect_codes(long.codes, dsg)
        _check_separable(ec, dsg)
        m1 = _reml.anova_method1(long.y, ec, dsg)
        anova_raw = m1["estimate"]
        ss, df = m1["sum_sq"], m1["df"]
        with np.errstate(invalid="ignore", divide="ignore"):
            ms = np.where(df > 0, ss / df, np.nan)
        y = long.y
        sizes = {}
        N = y.size
        for f in dsg.facets:
            par = [g for g in dsg.facets if g in dsg.parents[f]]
            npar = _reml.joint_codes([long.codes[g] for g in par])[1] if par else 1
            nown = _reml.joint_codes([long.codes[g] for g in [*par, f]])[1]
            sizes[f] = nown / npar
        del N
    if not use_anova:
        if dense is not None:
            ec = _reml.effect_codes(
                {f: np.indices(dense.shape)[i].ravel() for i, f in enumerate(dsg.facets)}, dsg
            )
        est, cov, fit_info = _fit_reml(y, ec, dsg, anova_raw)
    ci_method = ci
    if ci == "auto":
        ci_method = "wald" if use_anova else "profile"
        big = fit_info.get("n_cells", 0) > PROFILE_MAX_CELLS or (
            fit_info.get("n_random_levels", 0) > PROFILE_MAX_LEVELS
        )
        if not use_anova and big and np.isnan(cov).all():
            ci_method = "wald"
            msg = (
                f"no intervals: the REML information of this problem ({fit_info['n_cells']} "
                "cells) could not be formed (not positive definite at the estimate), and the "
                f"problem is above the size profiled by default ({PROFILE_MAX_CELLS} cells, "
                f"{PROFILE_MAX_LEVELS} levels); remedy: profile_ci() (slow at this size) or "
                "coefficients(ci='profile')"
            )
            note_parts.append(msg)
            warnings.warn(msg, NoIntervalWarning, stacklevel=2)
        elif not use_anova and big:
            ci_method = "wald"
            note_parts.append(
                f"Wald intervals from the {fit_info.get('information')} information: the REML "
                f"problem ({fit_info['n_cells']} cells, {fit_info['n_random_levels']} "
                f"random-effect levels) is above the size profiled by default "
                f"({PROFILE_MAX_CELLS} cells, {PROFILE_MAX_LEVELS} levels); profile_ci() "
                "computes the profile intervals (slower; better coverage with few levels)"
            )
    if not use_anova and ci_method == "wald" and np.isnan(np.diag(cov)).any() and not big:
        msg = (
            "no Wald intervals: the REML information could not be formed at the estimate; "
            "remedy: ci='profile'"
        )
        note_parts.append(msg)
        warnings.warn(msg, NoIntervalWarning, stacklevel=2)
    if use_anova and ci_method == "profile":
        ec = _reml.effect_codes(
            {f: np.indices(dense.shape)[i].ravel() for i, f in enumerate(dsg.facets)}, dsg
        )
    trunc = est < 0
    if trunc.any():
        warnings.warn(
            "negative variance-component estimates truncated at 0: "
            + ", ".join(f"{n}={v:.4g}" for n, v, t in zip(names, est, trunc, strict=True) if t),
            NegativeVarianceComponentWarning,
            stacklevel=2,
        )
    if legacy is not None:
        fa, ft, fr = legacy
        kind = "crossed" if dsg.formula == LEGACY["crossed"].format(a=fa, t=ft, r=fr) else "nested"
        if dsg.formula not in (
            LEGACY["crossed"].format(a=fa, t=ft, r=fr),
            LEGACY["nested"].format(a=fa, t=ft, r=fr),
            f"{fa}*{ft}",
        ) and not dsg.formula.startswith(LEGACY["nested"].format(a=fa, t=ft, r=fr)):
            kind = dsg.formula
        fac: tuple[str, ...] = legacy
        legacy_t: tuple[str, str, str] | None = legacy
        if confounded and fr in confounded:
            sizes.setdefault(fr, 1.0)
    else:
        kind = dsg.formula
        fac = tuple(
            ([measurement] if measurement else []) + [f for f in dsg.facets if f != measurement]
        )
        legacy_t = None
    for f in confounded:
        sizes.setdefault(f, 1.0)
    res = VarianceComponentsResult(
        formula=dsg.formula,
        facets=fac,
        measurement=measurement,
        method="anova" if use_anova else "reml",
        component_names=names,
        estimates_raw=_ro(np.asarray(est, dtype=float)),
        anova_raw=_ro(np.asarray(anova_raw, dtype=float)),
        cov=_ro(np.asarray(cov, dtype=float)),
        sources=names,
        sum_sq=_ro(np.asarray(ss, dtype=float)),
        df=_ro(np.asarray(np.round(df), dtype=np.int64)),
        mean_sq=_ro(np.asarray(ms, dtype=float)),
        sizes=sizes,
        n_obs=int(y.size),
        grand_mean=float(y.mean()),
        design=kind,
        note="; ".join(note_parts),
        prob=prob,
        confounded=tuple(confounded),
        dropped=tuple(dropped),
        fit_info=fit_info,
        ci_method=ci_method,
        _design=dsg,
        _legacy=legacy_t,
        _reml_data=(y, ec) if (ci_method == "profile" or not use_anova) else (y, dense.shape),
    )
    return res


def _check_separable(ec: dict[frozenset, np.ndarray], dsg: Design) -> None:
    """Refuse two effects with the same levels (e.g. every family has one task): the data
    cannot split their variance, and no estimate of either would mean anything."""
    nlev = {e: int(c.max()) + 1 for e, c in ec.items()}
    names = dict(zip(dsg.effects, dsg.names, strict=True))
    for b in dsg.effects:
        for a in dsg.effects:
            if a < b and nlev[a] == nlev[b]:  # b refines a: equal counts = the same partition
                raise DesignError(
                    f"the design {dsg.formula!r} cannot separate {names[a]!r} from {names[b]!r} "
                    f"in these data: both have the same {nlev[a]} levels (e.g. every level of "
                    f"{names[a]!r} holds a single level of {names[b]!r}); drop a facet from "
                    "the design"
                )


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


def _fit_reml(
    y: np.ndarray,
    ec: dict[frozenset, np.ndarray],
    dsg: Design,
    anova_raw: np.ndarray,
    need_cov: bool = True,
) -> tuple[np.ndarray, np.ndarray, dict]:
    m = len(dsg.effects)
    if float(np.ptp(y)) == 0.0:
        return np.zeros(m), np.zeros((m, m)), {"converged": True, "message": "constant scores"}
    with _reml.one_blas_thread():
        prob = _reml.RemlProblem(y, ec, dsg)
        # start from the ANOVA-type estimates (relative to the residual), floored
        full = frozenset(dsg.facets)
        s2e0 = max(float(anova_raw[-1]), 1e-3 * float(np.var(y)), 1e-12)
        init = []
        for e in prob.terms:
            init.append(np.sqrt(max(float(anova_raw[dsg.effects.index(e)]), 0.05 * s2e0) / s2e0))
        if prob.cell_effect is not None:
            i = dsg.effects.index(prob.cell_effect)
            init.append(np.sqrt(max(float(anova_raw[i]), 0.05 * s2e0) / s2e0))
        r = prob.fit(np.array(init))
        s2e = r["sigma2_e"]
        s2_terms = r["sigma2"][: len(prob.terms)]
        s2_cell = float(r["sigma2"][-1]) if prob.cell_effect is not None else 0.0
        est = np.zeros(m)
        for e, v in zip(prob.terms, s2_terms, strict=True):
            est[dsg.effects.index(e)] = v
        if prob.cell_effect is not None:
            est[dsg.effects.index(prob.cell_effect)] = s2_cell
        est[dsg.effects.index(full)] = s2e
        order = [dsg.effects.index(e) for e in prob.terms]
        if prob.cell_effect is not None:
            order.append(dsg.effects.index(prob.cell_effect))
        order.append(dsg.effects.index(full))
        cov = np.full((m, m), np.nan)
        info_kind = None
        if need_cov:
            # expected (Fisher) information needs the C x C inverse covariance of the cell
            # means: up to EXPECTED_INFO_MAX_CELLS; above, the observed information (a
            # finite-difference Hessian of the deviance, the cost of ~n^2 deviance evaluations)
            if prob.C <= EXPECTED_INFO_MAX_CELLS:
                info = prob.expected_information(s2_terms, s2_cell, s2e)
                info_kind = "expected"
            else:
                info = prob.observed_information(s2_terms, s2_cell, s2e)
                info_kind = "observed"
            if np.all(np.isfinite(info)) and np.all(np.linalg.eigvalsh(info) > 0):
                cov[np.ix_(order, order)] = np.linalg.inv(info)
            else:
                try:
                    cov[np.ix_(order, order)] = np.linalg.pinv(info)
                except np.linalg.LinAlgError:
                    info_kind = None
    if not r["converged"]:
        warnings.warn(
            f"REML did not report convergence ({r['message']}); estimates may be inaccurate",
            RemlConvergenceWarning,
            stacklevel=3,
        )
    info_out = {k: r[k] for k in ("converged", "message", "nfev", "deviance", "mu", "theta")}
    info_out["information"] = info_kind
    info_out["n_cells"] = prob.C
    info_out["n_random_levels"] = prob.q
    return est, cov, info_out


# keep names used by older callers
def _mean_squares_nested(y: np.ndarray):
    """Sums of squares, df and mean squares of ``r:(a*t)`` for a dense (M, T, R) array."""
    d = parse_design(LEGACY["nested"].format(a="a", t="t", r="r"))
    bal = _reml.anova_balanced(y, d)
    keys = ["a", "t", "at", "e"]
    ss = dict(zip(keys, bal["sum_sq"].tolist(), strict=True))
    df = dict(zip(keys, bal["df"].tolist(), strict=True))
    ms = {k: ss[k] / df[k] if df[k] > 0 else np.nan for k in keys}
    return ss, df, ms
