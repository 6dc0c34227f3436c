"""D-studies: error variances and reliability coefficients of a G-study at planned sizes.

Private to the variance-components wing; :class:`VarianceComponentsResult` delegates
here (``d_study``, ``e_rho2``, ``phi``, ``var_paired_diff``), and so do the coefficient
intervals (:mod:`._intervals`) and the cost-optimal allocation (:mod:`._allocation`).

For an object of measurement ``p``: universe-score variance ``tau`` = components of
effects made only of ``p`` and the facets ``p`` is nested in; every other effect ``e``
adds ``s_e / prod n'_f`` (over its facets outside ``p``) to the absolute error variance
``Delta``, and to the relative error variance ``delta`` when ``e`` contains ``p``.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np
import xarray as xr

from ..._base import warn_user
from ._design_lang import Design
from ._warnings import ConfoundedComponentWarning
from ._warnings import UndefinedCoefficientWarning

__all__: list[str] = []

#: the D-study quantities, in the order every D-study Dataset holds them
QUANTITIES = ("sigma2_tau", "sigma2_delta", "sigma2_Delta", "e_rho2", "phi", "var_paired_diff")


def broadcast_sizes(sizes: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Each facet's 1-D sizes on its own axis of a grid (facets in the order given)."""
    keys = list(sizes)
    out = {}
    for i, k in enumerate(keys):
        shape = [1] * len(keys)
        shape[i] = sizes[k].size
        out[k] = sizes[k].reshape(shape)
    return out


def _universe(design: Design, measurement: str | None) -> frozenset:
    """Return the facets of the universe score: the object of measurement and what it is nested in."""
    return (
        frozenset()
        if measurement is None
        else frozenset({measurement}) | design.parents[measurement]
    )


def _warn_undefined(p, tau, delta, Delta, stacklevel: int) -> None:
    if p is None:
        warn_user(
            "no object of measurement in the design (e.g. one agent): the universe-score "
            "variance is undefined, so E rho^2, Phi, sigma2_delta and the paired-difference "
            "variance are NaN; sigma2_Delta is the error variance of the mean score",
            UndefinedCoefficientWarning,
        )
    elif np.any(np.asarray(tau + delta) == 0) or np.any(np.asarray(tau + Delta) == 0):
        warn_user(
            "E rho^2 / Phi are 0/0 (no universe-score and no error variance, e.g. constant "
            "scores): NaN",
            UndefinedCoefficientWarning,
        )


def coefficients_at(
    design: Design,
    measurement: str | None,
    comp: dict[frozenset, Any],
    sizes: dict[str, Any],
    confounded: tuple[str, ...] = (),
    *,
    warn: bool = True,
    stacklevel: int = 2,
) -> dict[str, Any]:
    """Return the D-study quantities of components ``comp`` at facet sizes ``sizes``.

    ``comp`` maps effect -> variance, arrays broadcast; NaN where a confounded facet is asked
    at a size other than 1.
    """
    p = measurement
    M = _universe(design, p)
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
    for f in confounded:
        nan_mask = nan_mask | (np.asarray(sizes.get(f, 1.0)) != 1)
    if p is None:
        tau = np.nan
        delta = np.nan
    with np.errstate(invalid="ignore", divide="ignore"):
        e_rho2 = np.asarray(tau / (tau + delta), dtype=float) if p is not None else np.nan
        phi = np.asarray(tau / (tau + Delta), dtype=float) if p is not None else np.nan
    out = dict(
        zip(
            QUANTITIES,
            (tau, delta, Delta, e_rho2, phi, 2 * np.asarray(delta, dtype=float)),
            strict=True,
        )
    )
    if warn:
        _warn_undefined(p, tau, delta, Delta, stacklevel)
    if np.any(nan_mask):
        for k in QUANTITIES[1:]:
            out[k] = np.where(nan_mask, np.nan, out[k])
    return out


def coef_weights(
    design: Design, measurement: str | None, sizes: dict[str, float]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Return the components' weights (design order) in ``tau`` and the error variances.

    The relative and absolute error variances at ``sizes``: E rho^2 = w_tau.s / (w_tau.s +
    w_rel.s), Phi with w_abs.
    """
    p = measurement
    M = _universe(design, p)
    m = len(design.effects)
    tau, rel, ab = np.zeros(m), np.zeros(m), np.zeros(m)
    for i, e in enumerate(design.effects):
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


def comp_dict(vc, values: np.ndarray | None = None) -> dict[frozenset, Any]:
    """Effect -> component of a G-study (its estimates truncated at 0, or ``values``)."""
    v = np.maximum(vc.estimates_raw, 0.0) if values is None else values
    return dict(zip(vc._design.effects, v, strict=True))


def at_g_study(vc, key: str, stacklevel: int = 3) -> float:
    """One D-study quantity at the G-study's own sizes."""
    out = coefficients_at(
        vc._design,
        vc.measurement,
        comp_dict(vc),
        dict(vc.sizes),
        vc.confounded,
        stacklevel=stacklevel + 1,
    )
    return float(np.asarray(out[key]))


def var_paired_diff(vc, stacklevel: int = 3) -> float:
    """Variance of the difference of two objects' means at the G-study sizes."""
    if vc.measurement is None:
        warn_user(
            "no object of measurement (e.g. one agent): the interaction with the object is "
            "confounded with the other components, so the paired-difference variance is NaN",
            ConfoundedComponentWarning,
        )
        return float("nan")
    return at_g_study(vc, "var_paired_diff", stacklevel=stacklevel + 1)


def _generalization_error(vc, f: str) -> ValueError:
    facets = [g for g in vc._design.facets if g != vc.measurement]
    return ValueError(
        f"`sizes`: {f!r} is not a facet of generalization of the design {vc.formula!r} "
        f"(facets {facets})"
    )


def planned_sizes(vc, sizes: dict[str, float] | None) -> dict[str, float]:
    """Return the G-study sizes with the planned ones (one positive integer per facet) put in."""
    out = dict(vc.sizes)
    for f, v in (sizes or {}).items():
        if f not in vc._design.facets or f == vc.measurement:
            raise _generalization_error(vc, f)
        if f in vc.confounded:
            raise ValueError(f"`sizes`: {f!r} is confounded with the residual in this G-study")
        if not (np.ndim(v) == 0 and float(v) >= 1 and float(v) == round(float(v))):
            raise ValueError(f"`sizes`: {f!r} must be one positive integer; got {v!r}")
        out[f] = float(v)
    return out


def _cluster_facet(vc, ft: str) -> str | None:
    """The facet the tasks are nested in (a task cluster), or None when tasks are not nested."""
    par = [g for g in vc._design.facets if g in vc._design.parents.get(ft, ()) and g != vc.measurement]
    return par[0] if len(par) == 1 else None


def _observed(vc, f: str) -> float:
    """The G-study's own size of ``f`` (a mean per parent level when unbalanced), as it stands."""
    return float(vc.sizes.get(f, 1.0))


def _observed_total(vc, ft: str, fc: str) -> float:
    """The observed number of tasks over all clusters (clusters x mean tasks per cluster)."""
    total = _observed(vc, ft) * _observed(vc, fc)
    return float(round(total)) if abs(total - round(total)) < 1e-9 * max(total, 1.0) else total


@dataclass
class SizeGrid:
    """A D-study's size grid, as the user reads it.

    ``axes``: facet -> 1-D sizes; ``dims``: facet -> dim name; ``observed``: facets whose
    axis is the G-study's own size (not asked; may be a non-integer mean); ``total_over``:
    the cluster facet when the task axis holds the total number of tasks (``n_tasks``).
    """

    axes: dict[str, np.ndarray]
    dims: dict[str, str]
    observed: set[str] = field(default_factory=set)
    total_over: str | None = None


def _shorthand(vc, sizes: dict, n_tasks, n_runs, n_clusters) -> tuple[dict, dict, set, str | None]:
    """Sizes, dims and not-asked facets of the three-facet shorthand (``n_tasks`` is the total)."""
    if vc._legacy is None:
        raise ValueError(
            "`n_tasks` / `n_runs` / `n_clusters` are the three-facet shorthand; for the design "
            f"{vc.formula!r} give `sizes` (facet -> planned levels)"
        )
    _, ft, fr = vc._legacy
    fc = _cluster_facet(vc, ft)
    if n_clusters is not None and fc is None:
        raise ValueError(
            f"`n_clusters`: the tasks of the design {vc.formula!r} are not nested in clusters; "
            f"got n_clusters={n_clusters!r}"
        )
    total_over = fc if ft not in sizes else None
    dims: dict[str, str] = {}
    observed: set[str] = set()
    asks = (("n_tasks", ft, n_tasks), ("n_runs", fr, n_runs), ("n_clusters", fc, n_clusters))
    for name, f, v in asks:
        if f is None or (f in sizes and v is None):
            continue
        if f in sizes:
            raise ValueError(f"give the facet {f!r} either in `sizes` or as `{name}`, not both")
        if v is None and (name == "n_clusters" or f not in vc._design.facets):
            continue  # held at the G-study's number (or a facet the G-study dropped)
        if v is None:
            v = _observed_total(vc, ft, fc) if f == ft and fc is not None else _observed(vc, f)
            observed.add(f)
        sizes[f] = v
        dims[f] = name
    return sizes, dims, observed, total_over


def size_grid(vc, sizes, n_tasks=None, n_runs=None, n_clusters=None) -> SizeGrid:
    """Return the checked grid of planned sizes and its dim names.

    Sizes the user asked for must be positive integers; a size not asked for is the
    G-study's own (for unbalanced data a mean, possibly not an integer).
    """
    shorthand = any(v is not None for v in (n_tasks, n_runs, n_clusters))
    observed: set[str] = set()
    total_over = None
    dims: dict[str, str] = {}
    if shorthand or (sizes is None and vc._legacy is not None):
        sizes, dims, observed, total_over = _shorthand(
            vc, dict(sizes or {}), n_tasks, n_runs, n_clusters
        )
    sizes = dict(sizes or {})
    allowed = set(vc._design.facets) | set(vc.confounded)
    axes: dict[str, np.ndarray] = {}
    for f, v in sizes.items():
        if f not in allowed or f == vc.measurement:
            raise _generalization_error(vc, f)
        name = dims.setdefault(f, f"n_{f}")
        raw = np.atleast_1d(np.asarray(v))
        arr = raw.astype(float) if raw.dtype.kind in "iuf" else np.array([np.nan])
        whole = f in observed or np.all(arr == np.round(arr))
        if arr.ndim != 1 or arr.size == 0 or not np.all(arr >= 1) or not whole:
            shown = arr.tolist() if raw.dtype.kind in "iuf" else raw.tolist()
            raise ValueError(f"`{name}` must be positive integers; got {shown}")
        axes[f] = arr
    return SizeGrid(axes, dims, observed, total_over)


def _fmt_size(x: float) -> str:
    return f"{x:.0f}" if x == round(x) else f"{x:.4g}"


def _per_cluster(vc, grid: SizeGrid, full: dict[str, Any]) -> Any:
    """Tasks per cluster from the total ``n_tasks`` and the clusters (asked or held); checked."""
    _, ft, _ = vc._legacy
    fc = grid.total_over
    total, clusters = full[ft], full[fc]
    per = total / clusters
    bad = np.broadcast_to(per < 1, np.broadcast_shapes(np.shape(total), np.shape(clusters)))
    if np.any(bad):
        t = np.broadcast_to(total, bad.shape)[bad]
        c = np.broadcast_to(clusters, bad.shape)[bad]
        pairs = sorted({(_fmt_size(a), _fmt_size(b)) for a, b in zip(t, c, strict=True)})
        raise ValueError(
            "`n_tasks` is the total number of tasks and must be at least the number of "
            f"clusters ({fc!r}: one task each at least); got (n_tasks, n_clusters) = "
            + ", ".join(f"({a}, {b})" for a, b in pairs)
        )
    return per


def _describe(vc, grid: SizeGrid) -> dict[str, str]:
    """The attrs that say what each dim varies and what was held (and at which size)."""
    d = vc._design
    words = {}
    for f, name in grid.dims.items():
        par = [g for g in d.facets if g in d.parents.get(f, ())]
        per = f" per level of {' x '.join(par)}" if par else ""
        words[name] = f"levels of {f!r}{per}"
    if grid.total_over is not None:
        fc = grid.total_over
        _, ft, _ = vc._legacy
        held = (
            f"varied along {grid.dims[fc]}"
            if fc in grid.axes
            else f"held at the G-study's {_fmt_size(_observed(vc, fc))}"
        )
        words["n_tasks"] = (
            f"total number of tasks {ft!r} over all clusters {fc!r} ({held}), spread evenly: "
            f"{ft!r} per cluster = n_tasks / n_clusters (sizes={{{ft!r}: k}} gives k per "
            "cluster instead)"
        )
    held = [
        f"{f} = {_fmt_size(_observed(vc, f))}"
        for f in d.facets
        if f != vc.measurement and f not in grid.axes and f != grid.total_over
    ]
    out = {f"dim_{k}": v for k, v in words.items()}
    if held:
        out["held_at_g_study"] = ", ".join(held) + " (levels per parent level)"
    if grid.observed:
        shown = ", ".join(
            f"{grid.dims[f]} = {_fmt_size(float(grid.axes[f][0]))}"
            for f in grid.axes
            if f in grid.observed
        )
        out["as_observed"] = (
            f"{shown}: not asked, so the G-study's own size (for unbalanced data the mean "
            "levels per parent level, which may not be an integer); with the other sizes also "
            "the G-study's, this row reproduces its coefficients"
        )
    return out


def _coord(a: np.ndarray) -> np.ndarray:
    return a.astype(np.int64) if np.all(a == np.round(a)) else a


def d_study(
    vc, sizes=None, *, n_tasks=None, n_runs=None, n_clusters=None, stacklevel: int = 3
) -> xr.Dataset:
    """Return the D-study of ``vc`` over a grid of planned sizes.

    See :meth:`VarianceComponentsResult.d_study`.
    """
    d = vc._design
    grid = size_grid(vc, sizes, n_tasks, n_runs, n_clusters)
    confounded_asked = [f for f in vc.confounded if f in grid.axes and np.any(grid.axes[f] != 1)]
    if confounded_asked:
        warn_user(
            f"the G-study had one level of {confounded_asked} per cell, so its component is "
            "confounded with the residual; projections to other sizes are NaN",
            ConfoundedComponentWarning,
        )
    full = {f: np.asarray(vc.sizes.get(f, 1.0)) for f in d.facets}
    full.update(broadcast_sizes(grid.axes))
    if grid.total_over is not None:
        full[vc._legacy[1]] = _per_cluster(vc, grid, full)
    out = coefficients_at(
        d, vc.measurement, comp_dict(vc), full, vc.confounded, stacklevel=stacklevel + 1
    )
    shape = tuple(a.size for a in grid.axes.values())
    dnames = tuple(grid.dims[f] for f in grid.axes)
    ds = xr.Dataset(
        {k: (dnames, np.broadcast_to(np.asarray(v, dtype=float), shape)) for k, v in out.items()},
        coords={grid.dims[f]: _coord(a) for f, a in grid.axes.items()},
    )
    if grid.total_over is not None:
        ft = vc._legacy[1]
        per_dims = tuple(grid.dims[f] for f in grid.axes if f in (ft, grid.total_over))
        per = np.asarray(full[ft], dtype=float).reshape(tuple(ds.sizes[k] for k in per_dims))
        ds = ds.assign_coords({f"{ft}_per_cluster": (per_dims, per)})
    ds.attrs = {
        "design": vc.formula,
        "measurement": str(vc.measurement),
        "facets": list(vc.facets),
        "method": vc.method,
        **_describe(vc, grid),
    }
    return ds
