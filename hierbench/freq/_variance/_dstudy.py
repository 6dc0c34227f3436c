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


def _size_request(vc, sizes, n_tasks, n_runs) -> tuple[dict[str, Any], dict[str, str]]:
    """Facet -> sizes asked and facet -> dim name, from ``sizes`` or the three-facet shorthand."""
    dims: dict[str, str] = {}
    if n_tasks is not None or n_runs is not None:
        if vc._legacy is None:
            raise ValueError(
                "`n_tasks` / `n_runs` are the three-facet shorthand; for the design "
                f"{vc.formula!r} give `sizes` (facet -> planned levels)"
            )
        _, ft, fr = vc._legacy
        sizes = dict(sizes or {})
        sizes[ft] = vc.sizes.get(ft, 1) if n_tasks is None else n_tasks
        sizes[fr] = vc.sizes.get(fr, 1) if n_runs is None else n_runs
        dims = {ft: "n_tasks", fr: "n_runs"}
    elif sizes is None:
        sizes = {}
        if vc._legacy is not None:
            _, ft, fr = vc._legacy
            sizes = {ft: vc.sizes.get(ft, 1), fr: vc.sizes.get(fr, 1)}
            dims = {ft: "n_tasks", fr: "n_runs"}
    return sizes, dims


def size_grid(vc, sizes, n_tasks=None, n_runs=None) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Return the checked grid of planned sizes (facet -> 1-D integers) and its dim names."""
    sizes, dims = _size_request(vc, sizes, n_tasks, n_runs)
    allowed = set(vc._design.facets) | set(vc.confounded)
    grid: dict[str, np.ndarray] = {}
    for f, v in sizes.items():
        if f not in allowed or f == vc.measurement:
            raise _generalization_error(vc, f)
        name = dims.get(f, f"n_{f}")
        raw = np.atleast_1d(np.asarray(v))
        arr = raw.astype(float) if raw.dtype.kind in "iuf" else np.array([np.nan])
        if arr.ndim != 1 or arr.size == 0 or not np.all(arr >= 1) or np.any(arr != np.round(arr)):
            label = name if name.startswith("n_") else f
            shown = arr.tolist() if raw.dtype.kind in "iuf" else raw.tolist()
            raise ValueError(f"`{label}` must be positive integers; got {shown}")
        grid[f] = arr
        dims.setdefault(f, f"n_{f}")
    return grid, dims


def d_study(vc, sizes=None, *, n_tasks=None, n_runs=None, stacklevel: int = 3) -> xr.Dataset:
    """Return the D-study of ``vc`` over a grid of planned sizes.

    See :meth:`VarianceComponentsResult.d_study`.
    """
    d = vc._design
    grid, dims = size_grid(vc, sizes, n_tasks, n_runs)
    confounded_asked = [f for f in vc.confounded if f in grid and np.any(grid[f] != 1)]
    if confounded_asked:
        warn_user(
            f"the G-study had one level of {confounded_asked} per cell, so its component is "
            "confounded with the residual; projections to other sizes are NaN",
            ConfoundedComponentWarning,
        )
    full = {f: np.asarray(vc.sizes.get(f, 1.0)) for f in d.facets}
    b = broadcast_sizes(grid)
    full.update(b)
    for f in vc.confounded:
        if f in b:
            full[f] = b[f]
    out = coefficients_at(
        d, vc.measurement, comp_dict(vc), full, vc.confounded, stacklevel=stacklevel + 1
    )
    shape = tuple(a.size for a in grid.values())
    dnames = tuple(dims[f] for f in grid)
    ds = xr.Dataset(
        {k: (dnames, np.broadcast_to(np.asarray(v, dtype=float), shape)) for k, v in out.items()},
        coords={dims[f]: a.astype(np.int64) for f, a in grid.items()},
    )
    ds.attrs = {
        "design": vc.formula,
        "measurement": str(vc.measurement),
        "facets": list(vc.facets),
        "method": vc.method,
    }
    return ds
