"""Side-by-side tables and coverage studies over the shared interval convention."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from .._base import HierbenchError, as_rng
from ..freq import wilson_interval

__all__ = [
    "CoverageStudyResult",
    "MixedLevelError",
    "as_estimate",
    "coverage_study",
    "side_by_side",
    "to_frame",
]

CI_BOUNDS = ["lower", "upper"]


class MixedLevelError(HierbenchError):
    """Intervals of different levels (``ci_prob``) were put side by side."""


def _check_interval(da: xr.DataArray, name: str) -> xr.DataArray:
    if "ci_bound" not in da.dims:
        raise ValueError(
            f"`{name}`: an interval must have a `ci_bound` dim (['lower', 'upper']); got dims {da.dims}"
        )
    for key in ("ci_prob", "ci_kind"):
        if key not in da.attrs:
            raise ValueError(
                f"`{name}`: an interval must state its level and kind; attr {key!r} is missing"
            )
    bounds = [str(b) for b in da["ci_bound"].values]
    if bounds != CI_BOUNDS:
        raise ValueError(f"`{name}`: `ci_bound` must be {CI_BOUNDS}; got {bounds}")
    return da


def as_estimate(obj: xr.Dataset | xr.DataArray | object, *, name: str = "result") -> xr.Dataset:
    """Normalise a result into a Dataset with ``estimate`` and ``interval``.

    Accepts a Dataset holding ``estimate`` and ``interval`` (or ``ci``, as the
    frequentist results name it); a bare interval
    DataArray (``estimate`` is then NaN: the method gave no point value); or
    any object with a ``to_dataset()`` method returning one of these (the
    frequentist ``*Result`` classes).

    Parameters
    ----------
    obj : Dataset, DataArray or result object
    name : str
        Used in error messages.

    Returns
    -------
    xarray.Dataset
        ``estimate(...)`` and ``interval(..., ci_bound)``; ``ci_prob`` and
        ``ci_kind`` in the attrs of ``interval``.
    """
    if hasattr(obj, "to_dataset") and not isinstance(obj, (xr.Dataset, xr.DataArray)):
        obj = obj.to_dataset()
    if isinstance(obj, xr.DataArray):
        interval = _check_interval(obj, name)
        estimate = xr.full_like(interval.isel(ci_bound=0, drop=True), np.nan, dtype=float)
        return xr.Dataset({"estimate": estimate, "interval": interval})
    if isinstance(obj, xr.Dataset):
        key = "interval" if "interval" in obj else "ci" if "ci" in obj else None
        if key is None:
            raise ValueError(
                f"`{name}`: a Dataset result must hold `interval` (or `ci`); found {list(obj.data_vars)}"
            )
        interval = _check_interval(obj[key], name)
        if "estimate" in obj:
            estimate = obj["estimate"]
        else:
            estimate = xr.full_like(interval.isel(ci_bound=0, drop=True), np.nan, dtype=float)
        return xr.Dataset({"estimate": estimate, "interval": interval})
    raise TypeError(
        f"`{name}` must be an xarray Dataset/DataArray or have .to_dataset(); got {type(obj).__name__}"
    )


def side_by_side(
    results: Mapping[str, xr.Dataset | xr.DataArray | object],
    *,
    truth: xr.DataArray | None = None,
    allow_mixed_prob: bool = False,
) -> xr.Dataset:
    """Put several methods' estimates and intervals along an ``estimator`` dim.

    Parameters
    ----------
    results : mapping of name -> result
        Each result as accepted by :func:`as_estimate`; they must share their
        other dims (e.g. ``agent``).
    truth : DataArray, optional
        Known values (a simulation's truth): adds ``error = estimate - truth``
        and ``covers`` (bool).
    allow_mixed_prob : bool
        Intervals of different levels are not comparable; by default a
        :class:`MixedLevelError` is raised.

    Returns
    -------
    xarray.Dataset
        ``estimate(estimator, ...)``, ``interval(estimator, ..., ci_bound)``,
        ``width(estimator, ...)``, ``ci_prob(estimator)``, ``ci_kind(estimator)``.

    Examples
    --------
    >>> import xarray as xr
    >>> iv = xr.DataArray([0.1, 0.3], dims="ci_bound", coords={"ci_bound": ["lower", "upper"]},
    ...                   attrs={"ci_prob": 0.95, "ci_kind": "Wilson"})
    >>> side_by_side({"wilson": iv, "other": iv}).sizes["estimator"]
    2
    """
    if not results:
        raise ValueError("`results` must name at least one method")
    norm = {str(k): as_estimate(v, name=f"results[{k!r}]") for k, v in results.items()}
    probs = {k: float(v["interval"].attrs["ci_prob"]) for k, v in norm.items()}
    if len(set(probs.values())) > 1 and not allow_mixed_prob:
        raise MixedLevelError(
            f"`results` mix interval levels {probs}: compare intervals at one `prob`, "
            "or pass allow_mixed_prob=True"
        )
    kinds = {k: str(v["interval"].attrs["ci_kind"]) for k, v in norm.items()}
    methods = list(norm)
    parts = [v.drop_attrs() if hasattr(v, "drop_attrs") else v for v in norm.values()]
    out = xr.concat(parts, dim="estimator", join="outer")
    out["interval"] = out["interval"].transpose(..., "ci_bound")
    out["width"] = out["interval"].sel(ci_bound="upper") - out["interval"].sel(ci_bound="lower")
    out = out.assign_coords(estimator=np.array(methods, dtype=object))
    out["ci_prob"] = ("estimator", [probs[m] for m in methods])
    out["ci_kind"] = ("estimator", np.array([kinds[m] for m in methods], dtype=object))
    if truth is not None:
        out["truth"] = truth
        out["error"] = out["estimate"] - truth
        lo = out["interval"].sel(ci_bound="lower", drop=True)
        hi = out["interval"].sel(ci_bound="upper", drop=True)
        out["covers"] = (lo <= truth) & (truth <= hi)
    return out


def to_frame(table: xr.Dataset) -> pd.DataFrame:
    """A tidy pandas table of a :func:`side_by_side` result (one row per method and cell)."""
    cols = {
        "estimate": table["estimate"],
        "lower": table["interval"].sel(ci_bound="lower", drop=True),
        "upper": table["interval"].sel(ci_bound="upper", drop=True),
        "width": table["width"],
    }
    for extra in ("truth", "covers"):
        if extra in table:
            cols[extra] = table[extra]
    df = xr.Dataset(cols).to_dataframe()
    keep = [c for c in df.columns if c in cols]
    df = df[keep]
    kinds = table["ci_kind"].to_series()
    probs = table["ci_prob"].to_series()
    methods = df.index.get_level_values("estimator")
    df["ci_kind"] = kinds.reindex(methods).to_numpy()
    df["ci_prob"] = probs.reindex(methods).to_numpy()
    return df


@dataclass(frozen=True)
class CoverageStudyResult:
    """Outcome of :func:`coverage_study`.

    Attributes
    ----------
    coverage : DataArray
        Share of replications whose interval covered the truth, per estimator (and cell).
    coverage_interval : DataArray
        Wilson interval for that share (the Monte Carlo uncertainty of the study).
    mean_width, bias, rmse : DataArray
    n_rep : int
    table : Dataset
        Every replication's ``side_by_side`` table, stacked along ``rep``.
    """

    coverage: xr.DataArray
    coverage_interval: xr.DataArray
    mean_width: xr.DataArray
    bias: xr.DataArray
    rmse: xr.DataArray
    n_rep: int
    table: xr.Dataset

    def to_dataset(self) -> xr.Dataset:
        ds = xr.Dataset(
            {
                "coverage": self.coverage,
                "coverage_interval": self.coverage_interval,
                "mean_width": self.mean_width,
                "bias": self.bias,
                "rmse": self.rmse,
            }
        )
        ds.attrs["n_rep"] = self.n_rep
        return ds


def coverage_study(
    simulate: Callable[[np.random.Generator], tuple[object, xr.DataArray]],
    methods: Mapping[str, Callable[[object, np.random.Generator], object]],
    *,
    n_rep: int,
    prob: float = 0.95,
    rng: None | int | np.random.Generator = None,
) -> CoverageStudyResult:
    """Empirical coverage, width, bias and RMSE of interval methods against a known truth.

    Parameters
    ----------
    simulate : callable
        ``simulate(rng) -> (data, truth)``; ``truth`` is a DataArray aligned
        with the methods' estimates.
    methods : mapping of name -> callable
        ``method(data, rng) -> result`` (anything :func:`as_estimate` accepts).
    n_rep : int
        Number of replications.
    prob : float
        Level of the Wilson interval reported for each coverage share.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    CoverageStudyResult
    """
    if int(n_rep) != n_rep or n_rep < 1:
        raise ValueError(f"`n_rep` must be a positive integer; got {n_rep!r}")
    if not 0 < prob < 1:
        raise ValueError(f"`prob` must satisfy 0 < prob < 1; got {prob!r}")
    gen = as_rng(rng)
    names = list(methods)
    est_rows, lo_rows, hi_rows, truth_rows = [], [], [], []
    template = None
    for _ in range(int(n_rep)):
        data, truth = simulate(gen)
        norm = [as_estimate(methods[m](data, gen), name=f"methods[{m!r}]") for m in names]
        if template is None:
            template = side_by_side(dict(zip(names, norm, strict=True)), truth=truth)
        est_rows.append([r["estimate"].values for r in norm])
        lo_rows.append([r["interval"].sel(ci_bound="lower").values for r in norm])
        hi_rows.append([r["interval"].sel(ci_bound="upper").values for r in norm])
        shape_like = norm[0]["estimate"]
        t_da = truth if isinstance(truth, xr.DataArray) else xr.DataArray(truth)
        truth_rows.append(t_da.broadcast_like(shape_like).transpose(*shape_like.dims).values)
    assert template is not None
    dims = ("rep", *template["estimate"].dims)
    coords = {k: v for k, v in template["estimate"].coords.items()}
    est = xr.DataArray(np.asarray(est_rows, float), dims=dims, coords=coords)
    lo = xr.DataArray(np.asarray(lo_rows, float), dims=dims, coords=coords)
    hi = xr.DataArray(np.asarray(hi_rows, float), dims=dims, coords=coords)
    tru = xr.DataArray(
        np.broadcast_to(np.asarray(truth_rows, float)[:, None], est.shape), dims=dims, coords=coords
    )
    table = xr.Dataset(
        {
            "estimate": est,
            "interval": xr.concat([lo, hi], dim="ci_bound")
            .assign_coords(ci_bound=CI_BOUNDS)
            .transpose(..., "ci_bound"),
            "width": hi - lo,
            "truth": tru,
            "error": est - tru,
            "covers": (lo <= tru) & (tru <= hi),
            "ci_prob": template["ci_prob"],
            "ci_kind": template["ci_kind"],
        }
    )
    n = int(n_rep)
    hits = table["covers"].sum("rep")
    cov = hits / n
    cov_iv = wilson_interval(hits, n, prob=prob).rename(None)
    cov_iv.attrs = {
        "ci_prob": prob,
        "ci_kind": "Wilson score (Monte Carlo uncertainty of the coverage)",
    }
    return CoverageStudyResult(
        coverage=cov,
        coverage_interval=cov_iv,
        mean_width=table["width"].mean("rep"),
        bias=table["error"].mean("rep"),
        rmse=np.sqrt((table["error"] ** 2).mean("rep")),
        n_rep=n,
        table=table,
    )
