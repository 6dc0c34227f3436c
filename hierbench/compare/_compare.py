"""Side-by-side tables and coverage studies over the shared interval convention."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .._base import CI_BOUNDS
from .._base import DEFAULT_PROB
from .._base import HierbenchError
from .._base import Result
from .._base import check_int
from .._base import check_interval
from .._base import check_prob
from .._base import field_alias
from .._docs import fill_doc
from .._parallel import map_seeded
from ..freq import wilson_interval

__all__ = [
    "CoverageStudyResult",
    "MismatchedEstimatesError",
    "MixedLevelError",
    "as_estimate",
    "coverage_study",
    "side_by_side",
    "to_frame",
]



class MixedLevelError(HierbenchError):
    """Intervals of different levels (``ci_prob``) were put side by side."""


class MismatchedEstimatesError(HierbenchError):
    """Estimates of different quantities, or over different task sets, were put side by side."""


def _check_interval(da: xr.DataArray, name: str) -> xr.DataArray:
    return check_interval(da, name)


#: what a result's interval is for, by its ``attrs["tasks"]``: the words of the ``quantity`` label
TASKS_WORDS = {"observed": "these tasks", "population": "a new draw of tasks from the same population"}


def _target(obj: object, estimate: xr.DataArray) -> tuple[str | None, str | None, xr.DataArray | None]:
    """What a result estimates, which tasks its interval is for, and over how many tasks, when it says so.

    ``quantity`` (with ``tasks`` "observed": these tasks / "population": a
    new draw of tasks from the same population) and ``n_tasks`` per cell.
    """
    attrs = dict(getattr(obj, "attrs", None) or {}) if not isinstance(obj, xr.DataArray) else {}
    attrs = {**attrs, **estimate.attrs}
    quantity, tasks = attrs.get("quantity"), attrs.get("tasks")
    if quantity is not None and tasks:
        quantity = f"{quantity} ({TASKS_WORDS.get(str(tasks), f'{tasks} tasks')})"
    n = obj.get("n_tasks") if isinstance(obj, xr.Dataset) else getattr(obj, "n_tasks", None)
    if not isinstance(n, xr.DataArray) or not set(n.dims) <= set(estimate.dims):
        n = None
    return (None if quantity is None else str(quantity)), (str(tasks) if tasks else None), n


def as_estimate(obj: xr.Dataset | xr.DataArray | object, *, name: str = "result") -> xr.Dataset:
    """Normalise a result into a Dataset with ``estimate`` and ``ci`` (the house convention).

    Accepts any hierbench result object (a ``Result``:
    every frequentist ``*Result``), a Dataset holding ``estimate`` and ``ci``
    (the posterior metrics, e.g. :func:`hierbench.metrics.pass_hat_k`; a
    Dataset with ``interval`` instead of ``ci`` is read too), a bare interval
    DataArray (``estimate`` is then NaN: the method gave no point value), or
    any other object with a ``to_dataset()`` returning one of these.

    Parameters
    ----------
    obj : result object, Dataset or DataArray
    name : str
        Used in error messages.

    Returns
    -------
    xarray.Dataset
        ``estimate(...)`` and ``ci(..., ci_bound)``; ``ci_prob`` and
        ``ci_kind`` (and ``ci_detail``) in the attrs of ``ci``.

    Examples
    --------
    >>> from hierbench.freq import wilson_interval
    >>> sorted(as_estimate(wilson_interval(9, 10)).data_vars)
    ['ci', 'estimate']
    """
    if isinstance(obj, Result):
        ci = _check_interval(obj.ci, name)
        return _with_target(xr.Dataset({"estimate": obj.estimate.drop_attrs(), "ci": ci}), obj, obj.estimate)
    if hasattr(obj, "to_dataset") and not isinstance(obj, (xr.Dataset, xr.DataArray)):
        obj = obj.to_dataset()
    if isinstance(obj, xr.DataArray):
        interval = _check_interval(obj, name)
        estimate = xr.full_like(interval.isel(ci_bound=0, drop=True), np.nan, dtype=float)
        return xr.Dataset({"estimate": estimate, "ci": interval})
    if isinstance(obj, xr.Dataset):
        key = "ci" if "ci" in obj else "interval" if "interval" in obj else None
        if key is None:
            raise ValueError(
                f"`{name}`: a Dataset result must hold `ci` (or `interval`); found {list(obj.data_vars)}"
            )
        interval = _check_interval(obj[key], name)
        if "estimate" in obj:
            estimate = obj["estimate"]
        else:
            estimate = xr.full_like(interval.isel(ci_bound=0, drop=True), np.nan, dtype=float)
        out = xr.Dataset({"estimate": estimate.drop_attrs(), "ci": interval})
        return _with_target(out, obj, estimate)
    raise TypeError(
        f"`{name}` must be a hierbench result, an xarray Dataset/DataArray or have .to_dataset(); "
        f"got {type(obj).__name__}"
    )


def _with_target(out: xr.Dataset, obj: object, estimate: xr.DataArray) -> xr.Dataset:
    quantity, tasks, n_tasks = _target(obj, estimate)
    if n_tasks is not None:
        out["n_tasks"] = n_tasks.drop_attrs().astype(float)
    if quantity is not None:
        out.attrs["quantity"] = quantity
    if tasks is not None:
        out.attrs["tasks"] = tasks
    scale = {**dict(getattr(obj, "attrs", None) or {}), **estimate.attrs}.get("scale")
    if scale is not None:
        out.attrs["scale"] = str(scale)
    return out


def _mismatch_message(norm: dict[str, xr.Dataset], stated: dict[str, str]) -> str:
    """Why the stated quantities differ and what to change: the tasks the intervals are for, when only those differ."""
    tasks = {k: norm[k].attrs.get("tasks") for k in stated}
    bare = {stated[k].removesuffix(f" ({TASKS_WORDS.get(str(t), '')})") for k, t in tasks.items()}
    observed = [k for k, t in tasks.items() if t == "observed"]
    if len(bare) > 1 or not observed or "population" not in tasks.values():
        return (
            f"`results` estimate different quantities {stated}: put like with like side by side, "
            "or pass allow_mismatch=True"
        )
    population = [k for k, t in tasks.items() if t == "population"]
    return (
        f"`results` {observed} have intervals for {TASKS_WORDS['observed']} (tasks='observed') and "
        f"{population} for {TASKS_WORDS['population']} (tasks='population'): the second also "
        "counts how tasks vary, so it is wider for that reason alone and the widths do not compare. "
        f"Recompute {observed} with population=True (hierbench.metrics.pass_hat_k / pass_at_k / "
        "crossed_pass_k), the like of the frequentist task-level interval, or pass allow_mismatch=True"
    )


def _check_targets(norm: dict[str, xr.Dataset], allow: bool) -> None:
    """Refuse estimates of different quantities, or over different numbers of tasks."""
    if allow:
        return
    scales = {k: v.attrs["scale"] for k, v in norm.items() if "scale" in v.attrs}
    if len(set(scales.values())) > 1:
        raise MismatchedEstimatesError(
            f"`results` are on different scales {scales}: an Elo point, a logit and a probability do not "
            "compare; put each on one scale (e.g. fit_bradley_terry_ml(..., scale='logit')), or pass "
            "allow_mismatch=True"
        )
    stated = {k: v.attrs["quantity"] for k, v in norm.items() if "quantity" in v.attrs}
    if len(set(stated.values())) > 1:
        raise MismatchedEstimatesError(_mismatch_message(norm, stated))
    counted = {k: v["n_tasks"] for k, v in norm.items() if "n_tasks" in v}
    names = list(counted)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            x, y = xr.align(counted[a], counted[b], join="inner")
            bad = (x != y) & x.notnull() & y.notnull()
            if bool(bad.any()):
                cells = bad.where(bad, drop=True)
                first = {d: cells[d].values[0].item() for d in cells.dims if d in cells.coords}
                raise MismatchedEstimatesError(
                    f"`results` {a!r} and {b!r} average over different task sets: "
                    f"{int(bad.sum())} cells differ in n_tasks, e.g. {first}: "
                    f"{float(x.sel(first).item()):g} vs {float(y.sel(first).item()):g} tasks. Estimate "
                    "both over the same tasks (metrics.pass_hat_k(..., min_runs='k') keeps the tasks "
                    "with at least k runs, those the unbiased estimator averages), or pass "
                    "allow_mismatch=True"
                )


def side_by_side(
    results: Mapping[str, xr.Dataset | xr.DataArray | object],
    *,
    truth: xr.DataArray | None = None,
    allow_mixed_prob: bool = False,
    allow_mismatch: bool = False,
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
    allow_mismatch : bool
        Results that state what they estimate (``quantity``, and ``tasks``:
        an interval for these tasks, ``"observed"``, or for a new draw of
        tasks from the same population, ``"population"``) or over how many
        tasks (``n_tasks``) must agree; by default a
        :class:`MismatchedEstimatesError` names the difference and the
        argument to change. :func:`hierbench.freq.pass_hat_k`'s interval is
        for a new draw of tasks, as is
        ``hierbench.metrics.pass_hat_k(fit, population=True)``: that pair is
        accepted, the posterior over the observed tasks beside it refused.

    Returns
    -------
    xarray.Dataset
        ``estimate(estimator, ...)``, ``ci(estimator, ..., ci_bound)``,
        ``width(estimator, ...)``, ``ci_prob(estimator)``, ``ci_kind(estimator)``,
        ``ci_detail(estimator)``, ``quantity(estimator)`` and ``n_tasks``
        (when the results state them); ``interval`` is a deprecated alias of ``ci``.

    Examples
    --------
    >>> from hierbench.freq import bootstrap_ci, wilson_interval
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=1, n_tasks=40, n_runs=1, rng=0)
    >>> boot = bootstrap_ci(ds.squeeze("agent", drop=True), n_resamples=999, rng=1)
    >>> wil = wilson_interval(ds.score.sum(), ds.score.count())
    >>> t = side_by_side({"bootstrap": boot, "wilson": wil})
    >>> t["ci_kind"].values.tolist()
    ['percentile', 'wilson']
    """
    if not results:
        raise ValueError("`results` must name at least one method")
    norm = {str(k): as_estimate(v, name=f"results[{k!r}]") for k, v in results.items()}
    probs = {k: float(v["ci"].attrs["ci_prob"]) for k, v in norm.items()}
    if len(set(probs.values())) > 1 and not allow_mixed_prob:
        raise MixedLevelError(
            f"`results` mix interval levels {probs}: compare intervals at one `prob`, "
            "or pass allow_mixed_prob=True"
        )
    _check_targets(norm, allow_mismatch)
    kinds = {k: str(v["ci"].attrs["ci_kind"]) for k, v in norm.items()}
    details = {k: str(v["ci"].attrs.get("ci_detail", "")) for k, v in norm.items()}
    quantities = {k: str(v.attrs.get("quantity", "")) for k, v in norm.items()}
    methods = list(norm)
    parts = [v.drop_attrs() if hasattr(v, "drop_attrs") else v for v in norm.values()]
    out = xr.concat(parts, dim="estimator", join="outer")
    out["ci"] = out["ci"].transpose(..., "ci_bound")
    out["width"] = out["ci"].sel(ci_bound="upper") - out["ci"].sel(ci_bound="lower")
    out = out.assign_coords(estimator=np.array(methods, dtype=object))
    out["ci_prob"] = ("estimator", [probs[m] for m in methods])
    out["ci_kind"] = ("estimator", np.array([kinds[m] for m in methods], dtype=object))
    out["ci_detail"] = ("estimator", np.array([details[m] for m in methods], dtype=object))
    out["quantity"] = ("estimator", np.array([quantities[m] for m in methods], dtype=object))
    if truth is not None:
        out["truth"] = truth
        out["error"] = out["estimate"] - truth
        lo = out["ci"].sel(ci_bound="lower", drop=True)
        hi = out["ci"].sel(ci_bound="upper", drop=True)
        out["covers"] = (lo <= truth) & (truth <= hi)
    # deprecated alias for callers written before the house name `ci` (e.g. the demo)
    out["interval"] = out["ci"].assign_attrs(deprecated="alias of `ci`")
    return out


def to_frame(table: xr.Dataset) -> pd.DataFrame:
    """A tidy pandas table of a :func:`side_by_side` result (one row per method and cell).

    Examples
    --------
    >>> from hierbench.freq import wilson_interval
    >>> t = side_by_side({"wilson": wilson_interval(9, 10)})
    >>> to_frame(t)[["lower", "upper"]].round(3).values.tolist()
    [[0.596, 0.982]]
    """
    cols = {
        "estimate": table["estimate"],
        "lower": table["ci"].sel(ci_bound="lower", drop=True),
        "upper": table["ci"].sel(ci_bound="upper", drop=True),
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


@dataclass(frozen=True, repr=False)
class CoverageStudyResult(Result):
    """Outcome of :func:`coverage_study`.

    ``estimate`` is the coverage and ``ci`` its Wilson interval (the Monte
    Carlo uncertainty of the study), one row per estimator (and cell).

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

    estimate = field_alias("coverage", "The coverage (``coverage``), under the house name.")
    ci = field_alias("coverage_interval", "Its Wilson interval (``coverage_interval``).")

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


def _coverage_replication(
    _: int, gen: np.random.Generator, *, simulate: Callable, methods: Mapping[str, Callable]
) -> tuple[list[xr.Dataset], object]:
    """One replication of :func:`coverage_study`: simulate, then every method on the same data and stream."""
    data, truth = simulate(gen)
    return [as_estimate(methods[m](data, gen), name=f"methods[{m!r}]") for m in methods], truth


def _coverage_table(reps: list, names: list[str]) -> xr.Dataset:
    """The replications' estimates, intervals and truths over ``(rep, estimator, ...)``, with hits and errors."""
    est_rows, lo_rows, hi_rows, truth_rows = [], [], [], []
    template = None
    for norm, truth in reps:
        if template is None:
            template = side_by_side(dict(zip(names, norm, strict=True)), truth=truth)
        est_rows.append([r["estimate"].values for r in norm])
        lo_rows.append([r["ci"].sel(ci_bound="lower").values for r in norm])
        hi_rows.append([r["ci"].sel(ci_bound="upper").values for r in norm])
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
    return xr.Dataset(
        {
            "estimate": est,
            "ci": xr.concat([lo, hi], dim="ci_bound")
            .assign_coords(ci_bound=list(CI_BOUNDS))
            .transpose(..., "ci_bound"),
            "width": hi - lo,
            "truth": tru,
            "error": est - tru,
            "covers": (lo <= tru) & (tru <= hi),
            "ci_prob": template["ci_prob"],
            "ci_kind": template["ci_kind"],
        }
    )


@fill_doc
def coverage_study(
    simulate: Callable[[np.random.Generator], tuple[object, xr.DataArray]],
    methods: Mapping[str, Callable[[object, np.random.Generator], object]],
    *,
    n_rep: int,
    prob: float = DEFAULT_PROB,
    executor: Any = None,
    progress: bool | None = None,
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
    executor : concurrent.futures.Executor, optional
        Runs the replications (a process pool, a Dask ``Client.get_executor()``);
        None runs them here, one after another. ``simulate`` and the methods
        must then be picklable (module-level functions).
    progress : bool or None
        A bar over the replications (None: only when a person watches).
    %(rng)s
        Replication ``i`` draws from the ``i``-th generator spawned from it
        (:func:`hierbench.spawn_generators`): its data, then each method in
        the order given. The study is therefore bit-identical whatever the
        executor and the number of workers.

    Returns
    -------
    CoverageStudyResult

    Examples
    --------
    A z-interval for a normal mean with known SD covers 95% of the time:

    >>> import numpy as np, xarray as xr
    >>> from hierbench._base import make_interval
    >>> def simulate(rng):
    ...     return rng.normal(0.3, 1.0, 25), xr.DataArray(0.3)
    >>> def z95(x, rng):
    ...     m, h = x.mean(), 1.96 / 5
    ...     return xr.Dataset({"estimate": xr.DataArray(m), "ci": make_interval(m - h, m + h, prob=0.95, kind="normal")})
    >>> res = coverage_study(simulate, {"z": z95}, n_rep=400, rng=0)
    >>> bool(0.9 < float(res.coverage.sel(estimator="z")) < 0.99)
    True
    """
    n_rep = check_int(n_rep, "n_rep", min=1)
    prob = check_prob(prob)
    names = list(methods)
    reps = map_seeded(
        _coverage_replication, range(int(n_rep)), rng=rng, executor=executor, progress=progress,
        desc="coverage study", kwargs={"simulate": simulate, "methods": methods},
    )  # fmt: skip
    table = _coverage_table(reps, names)
    n = int(n_rep)
    hits = table["covers"].sum("rep")
    cov = hits / n
    cov_iv = wilson_interval(hits, n, prob=prob).rename(None)
    cov_iv.attrs["ci_detail"] = "Wilson score interval: the Monte Carlo uncertainty of the coverage"
    return CoverageStudyResult(
        coverage=cov,
        coverage_interval=cov_iv,
        mean_width=table["width"].mean("rep"),
        bias=table["error"].mean("rep"),
        rmse=np.sqrt((table["error"] ** 2).mean("rep")),
        n_rep=n,
        table=table,
    )
