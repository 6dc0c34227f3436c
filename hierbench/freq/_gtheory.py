"""Generalizability theory: variance components from expected mean squares.

Two balanced designs for ``score(agent, task, run)`` (any score scale):

``design="nested"`` (the default)
    runs are nested in agent x task cells (run ``r`` of one cell has nothing to
    do with run ``r`` of another): ``Y_mtr = mu + a_m + b_t + (ab)_mt + e_mtr``
    with components ``agent``, ``task``, ``agent:task`` and ``residual``.
``design="crossed"``
    the run facet is crossed with agents and tasks (run ``r`` is the same seed
    or occasion everywhere, Brennan's p x i x o design): components ``agent``,
    ``task``, ``run``, ``agent:task``, ``agent:run``, ``task:run`` and
    ``residual`` (the three-way interaction confounded with error).

The estimators are the ANOVA (expected-mean-square) estimators; for balanced
data they are unbiased and, when none is negative, equal to REML.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
import xarray as xr

from .._base import HierbenchError, HierbenchWarning

__all__ = [
    "ConfoundedComponentWarning",
    "NegativeVarianceComponentWarning",
    "UnbalancedDesignError",
    "VarianceComponentsResult",
    "variance_components",
]


class UnbalancedDesignError(HierbenchError):
    """The expected-mean-square estimators need a balanced design."""


class NegativeVarianceComponentWarning(HierbenchWarning):
    """An ANOVA estimate of a variance component was negative and was truncated at 0."""


class ConfoundedComponentWarning(HierbenchWarning):
    """A quantity needs a split of components that the design cannot estimate."""


# --------------------------------------------------------------------------- kernels


def _mean_squares_nested(
    y: np.ndarray,
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Sums of squares, df and mean squares of the nested design; ``y`` has shape (M, T, R)."""
    M, T, R = y.shape
    g = y.mean()
    ym = y.mean(axis=(1, 2))
    yt = y.mean(axis=(0, 2))
    ymt = y.mean(axis=2)
    ss = {
        "a": T * R * float(((ym - g) ** 2).sum()),
        "t": M * R * float(((yt - g) ** 2).sum()),
        "at": R * float(((ymt - ym[:, None] - yt[None, :] + g) ** 2).sum()),
    }
    df = {"a": M - 1, "t": T - 1, "at": (M - 1) * (T - 1)}
    if R > 1:
        ss["e"] = float(((y - ymt[..., None]) ** 2).sum())
        df["e"] = M * T * (R - 1)
    ms = {k: (ss[k] / df[k] if df[k] > 0 else np.nan) for k in ss}
    return ss, df, ms


def _mean_squares_crossed(
    y: np.ndarray,
) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """Sums of squares, df and mean squares of the fully crossed three-facet design."""
    M, T, R = y.shape
    g = y.mean()
    ym = y.mean(axis=(1, 2))
    yt = y.mean(axis=(0, 2))
    yr = y.mean(axis=(0, 1))
    ymt = y.mean(axis=2)
    ymr = y.mean(axis=1)
    ytr = y.mean(axis=0)
    resid = (
        y
        - ymt[:, :, None]
        - ymr[:, None, :]
        - ytr[None, :, :]
        + ym[:, None, None]
        + yt[None, :, None]
        + yr[None, None, :]
        - g
    )
    ss = {
        "a": T * R * float(((ym - g) ** 2).sum()),
        "t": M * R * float(((yt - g) ** 2).sum()),
        "r": M * T * float(((yr - g) ** 2).sum()),
        "at": R * float(((ymt - ym[:, None] - yt[None, :] + g) ** 2).sum()),
        "ar": T * float(((ymr - ym[:, None] - yr[None, :] + g) ** 2).sum()),
        "tr": M * float(((ytr - yt[:, None] - yr[None, :] + g) ** 2).sum()),
        "e": float((resid**2).sum()),
    }
    df = {
        "a": M - 1,
        "t": T - 1,
        "r": R - 1,
        "at": (M - 1) * (T - 1),
        "ar": (M - 1) * (R - 1),
        "tr": (T - 1) * (R - 1),
        "e": (M - 1) * (T - 1) * (R - 1),
    }
    ms = {k: ss[k] / df[k] for k in ss}
    return ss, df, ms


def _components_nested(ms: dict[str, float], M: int, T: int, R: int) -> dict[str, float]:
    if R > 1:
        return {
            "a": (ms["a"] - ms["at"]) / (T * R),
            "t": (ms["t"] - ms["at"]) / (M * R),
            "at": (ms["at"] - ms["e"]) / R,
            "e": ms["e"],
        }
    # one observation per cell: the interaction is confounded with the error
    return {"a": (ms["a"] - ms["at"]) / T, "t": (ms["t"] - ms["at"]) / M, "e": ms["at"]}


def _components_crossed(ms: dict[str, float], M: int, T: int, R: int) -> dict[str, float]:
    e = ms["e"]
    return {
        "a": (ms["a"] - ms["at"] - ms["ar"] + e) / (T * R),
        "t": (ms["t"] - ms["at"] - ms["tr"] + e) / (M * R),
        "r": (ms["r"] - ms["ar"] - ms["tr"] + e) / (M * T),
        "at": (ms["at"] - e) / R,
        "ar": (ms["ar"] - e) / T,
        "tr": (ms["tr"] - e) / M,
        "e": e,
    }


# --------------------------------------------------------------------------- result


def _coefficients(
    design: str, facets: tuple[str, str, str], comp: dict[str, float], T, R
) -> dict[str, np.ndarray]:
    """Relative/absolute error variances and coefficients, broadcast over ``T`` and ``R``."""
    fa, ft, fr = facets
    if design == "crossed":
        delta = comp[f"{fa}:{ft}"] / T + comp[f"{fa}:{fr}"] / R + comp["residual"] / (T * R)
        Delta = delta + comp[ft] / T + comp[fr] / R + comp[f"{ft}:{fr}"] / (T * R)
    elif f"{fa}:{ft}" in comp:
        delta = comp[f"{fa}:{ft}"] / T + comp["residual"] / (T * R)
        Delta = delta + comp[ft] / T
    else:  # single run: residual is agent:task confounded with run error
        delta = comp["residual"] / T * np.where(R == 1, 1.0, np.nan)
        Delta = delta + comp[ft] / T
    s2a = comp[fa]
    with np.errstate(invalid="ignore", divide="ignore"):
        e_rho2 = s2a / (s2a + delta)
        phi = s2a / (s2a + Delta)
    return {
        "sigma2_delta": delta,
        "sigma2_Delta": Delta,
        "e_rho2": e_rho2,
        "phi": phi,
        "var_paired_diff": 2 * delta,
    }


@dataclass(frozen=True)
class VarianceComponentsResult:
    """A G-study: variance components, the ANOVA table and reliability coefficients.

    The estimates are stored as read-only numpy arrays; the DataArray views
    below are built when asked for, so a G-study costs microseconds.

    Attributes
    ----------
    components : xarray.DataArray
        Variance components (truncated at 0), dim ``component``.
        ``attrs["facets"]`` names the three facets (object of measurement first).
    components_raw : xarray.DataArray
        The untruncated ANOVA estimates (may be negative).
    truncated : xarray.DataArray
        Bool, True where a negative estimate was set to 0.
    anova : xarray.Dataset
        ``sum_sq``, ``df``, ``mean_sq`` over dim ``source``.
    design : str
        ``"nested"`` or ``"crossed"``.
    facets : tuple of str
        Names of the (object of measurement, task-like, run-like) facets.
    n_agents, n_tasks, n_runs : int
        Sizes of the G-study (levels of the three facets).
    grand_mean : float
        Mean of all scores.
    """

    design: str
    facets: tuple[str, str, str]
    n_agents: int
    n_tasks: int
    n_runs: int
    grand_mean: float
    component_names: tuple[str, ...]
    estimates_raw: np.ndarray
    sources: tuple[str, ...]
    sum_sq: np.ndarray
    df: np.ndarray
    mean_sq: np.ndarray
    note: str = ""

    def _attrs(self) -> dict:
        attrs: dict = {"facets": list(self.facets), "design": self.design}
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
    def components(self) -> xr.DataArray:
        """Variance components, negative estimates truncated at 0."""
        return self._comp(np.maximum(self.estimates_raw, 0.0))

    @property
    def components_raw(self) -> xr.DataArray:
        """The untruncated ANOVA estimates."""
        return self._comp(self.estimates_raw.copy())

    @property
    def truncated(self) -> xr.DataArray:
        """True where a negative estimate was set to 0."""
        return self._comp(self.estimates_raw < 0)

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

    def _comp_dict(self) -> dict[str, float]:
        est = np.maximum(self.estimates_raw, 0.0)
        return {k: float(v) for k, v in zip(self.component_names, est, strict=True)}

    def d_study(
        self, n_tasks: int | np.ndarray | None = None, n_runs: int | np.ndarray | None = None
    ) -> xr.Dataset:
        """Project relative/absolute error variances and coefficients to other sizes.

        Parameters
        ----------
        n_tasks, n_runs : int or array of int, optional
            Numbers of tasks and runs of the decision study (default: the
            G-study's). Arrays give a grid over dims ``n_tasks`` and ``n_runs``.

        Returns
        -------
        xarray.Dataset
            ``sigma2_delta`` (relative error variance of an agent's mean),
            ``sigma2_Delta`` (absolute error variance), ``e_rho2``
            (generalizability coefficient), ``phi`` (dependability) and
            ``var_paired_diff`` (variance of the difference between two
            agents' means on the same tasks and runs: ``2 sigma2_delta``).

        Notes
        -----
        With one run per cell (nested design) the agent:task interaction
        and the run error are confounded; projections to ``n_runs != 1``
        are then NaN with a :class:`ConfoundedComponentWarning`.
        """
        nt = np.atleast_1d(np.asarray(self.n_tasks if n_tasks is None else n_tasks, dtype=float))
        nr = np.atleast_1d(np.asarray(self.n_runs if n_runs is None else n_runs, dtype=float))
        for name, v in (("n_tasks", nt), ("n_runs", nr)):
            if v.ndim != 1 or np.any(v < 1) or np.any(v != np.round(v)):
                raise ValueError(f"`{name}` must be positive integers; got {v.tolist()}")
        comp = self._comp_dict()
        fa, ft, _ = self.facets
        if self.design == "nested" and f"{fa}:{ft}" not in comp and np.any(nr != 1):
            warnings.warn(
                "the G-study had one run per cell, so the agent:task interaction and the run "
                "error are confounded; projections to n_runs != 1 are NaN",
                ConfoundedComponentWarning,
                stacklevel=2,
            )
        out = _coefficients(self.design, self.facets, comp, nt[:, None], nr[None, :])
        ds = xr.Dataset(
            {
                k: (("n_tasks", "n_runs"), np.broadcast_to(v, (nt.size, nr.size)))
                for k, v in out.items()
            },
            coords={"n_tasks": nt.astype(np.int64), "n_runs": nr.astype(np.int64)},
        )
        ds.attrs = {"design": self.design, "facets": list(self.facets)}
        return ds

    def _at_g_study(self, key: str) -> float:
        out = _coefficients(
            self.design, self.facets, self._comp_dict(), float(self.n_tasks), float(self.n_runs)
        )
        return float(out[key])

    @property
    def e_rho2(self) -> float:
        """Generalizability coefficient at the G-study sizes."""
        return self._at_g_study("e_rho2")

    @property
    def phi(self) -> float:
        """Dependability coefficient at the G-study sizes."""
        return self._at_g_study("phi")

    @property
    def var_paired_diff(self) -> float:
        """Variance of the difference of two agents' means at the G-study sizes."""
        return self._at_g_study("var_paired_diff")

    def to_dataset(self) -> xr.Dataset:
        """Everything in one Dataset: ``variance``, ``variance_raw``, ``truncated`` over
        ``component``; ``sum_sq``, ``df``, ``mean_sq`` over ``source``."""
        anova = self.anova
        ds = xr.Dataset(
            {
                "variance": self.components,
                "variance_raw": self.components_raw,
                "truncated": self.truncated,
                "sum_sq": anova["sum_sq"],
                "df": anova["df"],
                "mean_sq": anova["mean_sq"],
            }
        )
        ds.attrs = {
            "design": self.design,
            "facets": list(self.facets),
            "n_agents": self.n_agents,
            "n_tasks": self.n_tasks,
            "n_runs": self.n_runs,
            "grand_mean": self.grand_mean,
            "e_rho2": self.e_rho2,
            "phi": self.phi,
        }
        return ds


# --------------------------------------------------------------------------- public


def _as_array(
    data: xr.Dataset | xr.DataArray, facets: tuple[str, ...] | None, var: str
) -> tuple[xr.DataArray, np.ndarray, tuple[str, str, str]]:
    if isinstance(data, xr.Dataset):
        if var not in data:
            raise ValueError(
                f"`data` must contain the variable {var!r}; found {list(data.data_vars)}"
            )
        da = data[var]
        if facets is None:
            facets = ("agent", "task", "run")
    elif isinstance(data, xr.DataArray):
        da = data
        if facets is None:
            facets = tuple(str(d) for d in da.dims)
    else:
        raise TypeError(f"`data` must be an xarray Dataset or DataArray; got {type(data).__name__}")
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
    axes = [da.dims.index(f) for f in facets]
    y = np.asarray(da.values, dtype=float)
    if axes != sorted(axes):
        y = y.transpose(axes)
    if len(facets) == 2:
        y = y[:, :, None]
        facets = (*facets, "run")
    return da, y, facets  # type: ignore[return-value]


def variance_components(
    data: xr.Dataset | xr.DataArray,
    *,
    design: Literal["nested", "crossed"] = "nested",
    facets: tuple[str, ...] | None = None,
    var: str = "score",
) -> VarianceComponentsResult:
    """G-study variance components of a balanced three-facet (or two-facet) design.

    Parameters
    ----------
    data : xarray.Dataset or xarray.DataArray
        An eval dataset (``data[var]`` with dims agent, task, run) or any
        array of scores on any scale whose dims are the facets: e.g. Brennan's
        persons x items x occasions. A two-way crossed table with one
        observation per cell (e.g. lme4's Penicillin, plate x sample) is a
        2-D array, or a 3-D array whose run facet has length 1; it is analysed
        with one run per cell, where the interaction is confounded with the
        error and reported as ``residual``.
    design : {"nested", "crossed"}
        ``"nested"``: runs nested in agent x task cells (run labels carry no
        meaning; each cell needs the same number of runs, in any slots).
        ``"crossed"``: run r is the same occasion for every agent and task
        (needs every cell of the full cube and at least two runs).
    facets : tuple of str, optional
        The dims in the order (object of measurement, task-like, run-like).
        Default ``("agent", "task", "run")`` for a Dataset, the array's own
        dims for a DataArray. Component names are built from them
        (``"agent"``, ``"agent:task"``, ...; the highest-order term is
        ``"residual"``).
    var : str
        The score variable of a Dataset.

    Returns
    -------
    VarianceComponentsResult
        Components (negative estimates truncated at 0 and flagged in
        ``truncated`` with a :class:`NegativeVarianceComponentWarning`), the
        ANOVA table, E rho^2, Phi, the variance of a paired difference and a
        ``d_study(n_tasks=..., n_runs=...)`` projection.

    Notes
    -----
    For binary scores this is a linear-probability decomposition: exact for
    the variances of means (and hence for E rho^2, Phi and the paired
    difference), not a latent (logit) scale decomposition; the Bayesian
    crossed model gives the latter.

    Raises
    ------
    UnbalancedDesignError
        Naming the unbalanced cells: balance the data explicitly or fit the
        Bayesian crossed model, which does not need balance.

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
    if design not in ("nested", "crossed"):
        raise ValueError(f"`design` must be 'nested' or 'crossed'; got {design!r}")
    da, y, (fa, ft, fr) = _as_array(data, facets, var)
    fa, ft, fr = str(fa), str(ft), str(fr)
    if np.isinf(y).any():
        raise ValueError("the scores must be finite or NaN; found infinite values")
    M, T, R = y.shape
    if M < 2 or T < 2:
        raise ValueError(
            f"variance_components needs >= 2 levels of `{fa}` and of `{ft}`; got {M} and {T}"
        )
    obs = np.isfinite(y)
    n_cell = obs.sum(axis=2)
    advice = (
        "Balance the data explicitly (e.g. keep the same number of runs in every cell, or drop "
        "the agents/tasks with missing cells) or fit the Bayesian crossed model "
        "(hierbench.bayes), which handles unbalanced data."
    )
    if design == "crossed":
        if R < 2:
            raise ValueError(
                f"design='crossed' needs >= 2 levels of the run facet `{fr}`; got {R} "
                "(with one run per cell use design='nested')"
            )
        if not obs.all():
            bad = np.argwhere(~obs)
            cells = [
                (da[fa].values[i].item(), da[ft].values[j].item(), da[fr].values[k].item())
                for i, j, k in bad[:10]
            ]
            raise UnbalancedDesignError(
                f"design='crossed' needs every ({fa}, {ft}, {fr}) cell observed; "
                f"{len(bad)} are missing, e.g. {cells}. {advice}"
            )
    else:
        r_max = int(n_cell.max())
        if r_max == 0:
            raise UnbalancedDesignError("no observed scores")
        if (n_cell != r_max).any():
            bad = np.argwhere(n_cell != r_max)
            cells = [
                (da[fa].values[i].item(), da[ft].values[j].item(), int(n_cell[i, j]))
                for i, j in bad[:10]
            ]
            raise UnbalancedDesignError(
                f"variance_components needs a balanced design: every ({fa}, {ft}) cell must have "
                f"the same number of runs ({r_max}); {len(bad)} cells do not, e.g. "
                f"({fa}, {ft}, n_runs) {cells}. {advice}"
            )
        if r_max < R:  # nested runs carry no label: move observed runs to the front
            order = np.argsort(~obs, axis=2, kind="stable")
            y = np.take_along_axis(y, order, axis=2)[..., :r_max]
            R = r_max
    if design == "nested":
        ss, df, ms = _mean_squares_nested(y)
        raw = _components_nested(ms, M, T, R)
        names = {"a": fa, "t": ft, "at": f"{fa}:{ft}", "e": "residual"}
        src = {"a": fa, "t": ft, "at": f"{fa}:{ft}", "e": "residual"}
        if R == 1:
            src["at"] = "residual"
    else:
        ss, df, ms = _mean_squares_crossed(y)
        raw = _components_crossed(ms, M, T, R)
        names = {
            "a": fa,
            "t": ft,
            "r": fr,
            "at": f"{fa}:{ft}",
            "ar": f"{fa}:{fr}",
            "tr": f"{ft}:{fr}",
            "e": "residual",
        }
        src = names
    keys = list(raw)
    raw_v = np.array([raw[k] for k in keys])
    trunc = raw_v < 0
    if trunc.any():
        warnings.warn(
            "negative variance-component estimates truncated at 0: "
            + ", ".join(f"{names[k]}={raw[k]:.4g}" for k, t in zip(keys, trunc, strict=True) if t),
            NegativeVarianceComponentWarning,
            stacklevel=2,
        )
    note = ""
    if design == "nested" and R == 1:
        note = f"one run per cell: residual is {fa}:{ft} confounded with the run error"
    skeys = list(ss)

    def _ro(a: np.ndarray) -> np.ndarray:
        a.setflags(write=False)
        return a

    return VarianceComponentsResult(
        design=design,
        facets=(fa, ft, fr),
        n_agents=M,
        n_tasks=T,
        n_runs=R,
        grand_mean=float(y.mean()),
        component_names=tuple(names[k] for k in keys),
        estimates_raw=_ro(raw_v),
        sources=tuple(src[k] for k in skeys),
        sum_sq=_ro(np.array([ss[k] for k in skeys])),
        df=_ro(np.array([df[k] for k in skeys], dtype=np.int64)),
        mean_sq=_ro(np.array([ms[k] for k in skeys])),
        note=note,
    )
