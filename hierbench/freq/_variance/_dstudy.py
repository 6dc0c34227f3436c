"""D-studies: error variances and reliability coefficients of a G-study at planned sizes.

Private to the variance-components wing; :class:`VarianceComponentsResult` delegates
here (``d_study``, ``e_rho2``, ``phi``, ``var_paired_diff``), and so do the coefficient
intervals (:mod:`._intervals`) and the cost-optimal allocation (:mod:`._allocation`).

For an object of measurement ``p``: universe-score variance ``tau`` = components of
effects made only of ``p`` and the facets ``p`` is nested in; every other effect ``e``
adds ``s_e / prod n'_f`` (over its facets outside ``p``) to the absolute error variance
``Delta``, and to the relative error variance ``delta`` when ``e`` contains ``p``.

Tasks nested in clusters (``task:cluster``) need not spread evenly. The mean score weighs
every task ``1/N``, so cluster ``k`` weighs ``n_k/N`` and an effect of the cluster but not
the task enters with ``sum_k (n_k/N)^2 = 1/C_eff`` (``C_eff = N^2 / sum_k n_k^2``, ``C``
only for even clusters), while effects of the task keep ``1/N``. :func:`spread_sizes` puts
this in the sizes (clusters -> ``C_eff``, tasks per cluster -> ``N/C_eff``), so every
D-study quantity, interval and allocation reads the spread through the one rule.

Runs need not spread evenly over the agent x task cells either. An agent's mean weighs
every task (cell mean) alike, so the run error enters with ``(1/N^2) sum_t 1/n_t``: on
average over agents ``1 / (N H)``, ``H`` the harmonic mean of runs per cell, which is
smaller than their mean ``n_run`` unless the cells are even. :func:`spread_sizes` puts
this in the sizes too: a run facet (:func:`run_facets`) held at the G-study's own size
counts ``H`` over the cells that were run; empty cells (a task an agent did not run) are
left out, so the D-study keeps its design (every agent on every task, those cells run like
the others) rather than the pairs' different task sets. Runs asked for are even.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np
import xarray as xr

from ..._base import SmallSampleWarning
from ..._base import warn_user
from .._kernels import few_units
from ._design_lang import Design
from ._design_lang import given_formula
from ._design_lang import parse_design
from ._warnings import ConfoundedComponentWarning
from ._warnings import ExtrapolationWarning
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


#: how tasks spread over clusters in a D-study (``spread``; or the planned tasks per cluster)
SPREADS = ("observed", "even")


def spread_pairs(vc) -> list[tuple[str, str]]:
    """Return the (task, cluster) facet pairs whose spread moves the error variances.

    A facet nested in exactly one facet that is nested in none, neither in the universe
    score, with nothing else nested in the cluster (``task:cluster``, runs in the tasks).
    """
    return pairs_of(vc._design, vc.measurement)


def pairs_of(d: Design, measurement: str | None) -> list[tuple[str, str]]:
    """:func:`spread_pairs` of a design and its object of measurement (before a result exists)."""
    M = _universe(d, measurement)
    out = []
    for t in d.facets:
        if len(d.parents[t]) != 1 or t in M:
            continue
        (c,) = d.parents[t]
        below = {g for g in d.facets if c in d.parents[g]}
        inside_t = {t} | {g for g in d.facets if t in d.parents[g]}
        if not d.parents[c] and c not in M and below <= inside_t:
            out.append((t, c))
    return out


def runs_in_tasks(vc) -> set[tuple[str, str]]:
    """The :func:`spread_pairs` that are runs within tasks, not tasks within clusters.

    With one agent (the object of measurement, dropped) ``run:(agent*task)`` leaves
    ``run`` nested in ``task`` alone: a pair by the rule, and the arithmetic is that of
    tasks in clusters, but the words must say runs per task. A pair is one of these when
    its inner facet was also nested in a dropped facet in the design as given.
    """
    if not vc.dropped:
        return set()
    given = parse_design(given_formula(vc.formula))
    return {
        (t, c) for t, c in spread_pairs(vc) if given.parents.get(t, frozenset()) & set(vc.dropped)
    }


def check_spread(vc, spread: Any) -> str | np.ndarray:
    """``spread`` checked: ``"observed"``, ``"even"``, or planned tasks per cluster (floats)."""
    if isinstance(spread, str):
        if spread not in SPREADS:
            raise ValueError(
                "`spread` must be 'observed', 'even' or the planned number of tasks in each "
                f"cluster (positive integers); got {spread!r}"
            )
        return spread
    raw = np.asarray(spread)
    arr = raw.astype(float) if raw.dtype.kind in "iuf" else np.array([np.nan])
    if raw.ndim != 1 or arr.size == 0 or not np.all(arr >= 1) or np.any(arr != np.round(arr)):
        raise ValueError(
            "`spread` as planned cluster sizes must be a 1-D list of positive integers (tasks "
            f"in each cluster); got {raw.tolist() if raw.ndim else spread!r}"
        )
    pairs = spread_pairs(vc)
    if len(pairs) != 1:
        raise ValueError(
            f"`spread`: planned cluster sizes need a design with tasks nested in one cluster "
            f"facet; the design {vc.formula!r} has {len(pairs)} such nestings {pairs}"
        )
    return arr


def observed_ratio(vc, t: str) -> float:
    """The G-study's effective number of clusters over its number: ``N^2 / (C sum n_k^2)``."""
    n = np.asarray(vc._cluster_sizes.get(t, [1.0]), dtype=float)
    return float(n.sum() ** 2 / (n**2).sum() / n.size)


def effective_clusters(vc, t: str, n_c: Any, total: Any, spread: str | np.ndarray) -> Any:
    """Return ``C_eff = N^2 / sum n_k^2`` of ``total`` tasks in ``n_c`` clusters under ``spread``.

    ``"observed"``: ``n_c`` x the G-study's ratio (the same coefficient of variation of
    cluster sizes), at least ``N^2 / ((N - C + 1)^2 + C - 1)`` (one cluster holding every
    task beyond one per cluster: the most uneven spread there is).
    """
    if isinstance(spread, np.ndarray):
        return np.asarray(total, dtype=float) ** 2 / float((spread**2).sum())
    if spread == "even":
        return n_c
    most_uneven = total**2 / ((total - n_c + 1) ** 2 + n_c - 1)
    return np.maximum(n_c * observed_ratio(vc, t), most_uneven)


def run_facets(vc) -> list[str]:
    """Return the facets counted per cell whose spread moves the error variances (runs).

    Innermost facets (nothing nested in them) nested in others, outside the universe score
    and not the tasks of a ``task:cluster`` nesting (:func:`spread_pairs`), whose levels per
    cell the G-study kept: runs in agent x task cells.
    """
    d = vc._design
    M = _universe(d, vc.measurement)
    tasks = {t for t, _ in spread_pairs(vc)}
    return [
        f
        for f in d.facets
        if d.parents[f]
        and f not in M
        and f not in tasks
        and not any(f in d.parents[g] for g in d.facets)
        and f in vc._cluster_sizes
    ]


def run_counts(vc, f: str) -> tuple[np.ndarray, int]:
    """The G-study's levels of ``f`` in each cell that has any, and how many cells there are."""
    n = np.asarray(vc._cluster_sizes[f], dtype=float)
    cells = float(np.prod([vc.sizes.get(g, 1.0) for g in vc._design.parents[f]]))
    return n, max(round(cells), n.size)


def effective_runs(vc, f: str) -> float:
    """The harmonic mean of the G-study's levels of ``f`` per cell, over the cells that have any."""
    n, _ = run_counts(vc, f)
    return float(n.size / (1.0 / n).sum())


def spread_sizes(
    vc, sizes: dict[str, Any], spread: str | np.ndarray = "observed", held: Any = ()
):
    """Return (sizes with the spreads put in, facet -> its effective size).

    ``sizes`` holds clusters and (mean) tasks per cluster, arrays broadcast: clusters ->
    ``C_eff``, tasks -> ``N/C_eff`` (the products over the task, ``N``, and every deeper
    facet kept). A run facet (:func:`run_facets`) in ``held`` (the facets at the G-study's
    own size) -> the harmonic mean of its levels per cell (:func:`effective_runs`); asked
    for, the same in every cell.
    """
    out = dict(sizes)
    eff = {}
    for t, c in spread_pairs(vc):
        n_c = np.asarray(sizes[c], dtype=float)
        total = n_c * np.asarray(sizes[t], dtype=float)
        ceff = effective_clusters(vc, t, n_c, total, spread)
        per = total / ceff
        out[c] = float(ceff) if np.ndim(ceff) == 0 else ceff
        out[t] = float(per) if np.ndim(per) == 0 else per
        eff[c] = ceff
    for f in run_facets(vc):
        if f in held:
            out[f] = effective_runs(vc, f)
        eff[f] = out[f]
    return out, eff


def planned_clusters(vc, sizes: dict[str, Any], spread: np.ndarray, asked: list[str]) -> None:
    """Put planned cluster sizes into ``sizes`` (clusters, mean tasks per cluster); refuse both."""
    ((t, c),) = spread_pairs(vc)
    if asked:
        raise ValueError(
            f"`spread` gives the tasks of each planned cluster ({spread.size} {c!r}, "
            f"{_fmt_size(float(spread.sum()))} {t!r} in all); do not also ask {asked}"
        )
    sizes[c] = float(spread.size)
    sizes[t] = float(spread.sum()) / spread.size


def spread_words(vc, spread: str | np.ndarray) -> str:
    """What the D-study assumed about the spread of tasks over clusters ("" when nothing)."""
    out = []
    runs = runs_in_tasks(vc)
    for t, c in spread_pairs(vc):
        # runs within tasks (one agent): the same arithmetic, told as runs per task
        groups = "tasks" if (t, c) in runs else "clusters"
        n = np.asarray(vc._cluster_sizes.get(t, []), dtype=float)
        seen = (
            f"the G-study's {n.size} {c!r} hold {_fmt_size(n.min())}-{_fmt_size(n.max())} "
            f"{t!r} (effective number {n.sum() ** 2 / (n**2).sum():.4g})"
            if n.size
            else f"the G-study's {c!r} sizes were not recorded (ratio 1)"
        )
        if isinstance(spread, np.ndarray):
            shown = ", ".join(_fmt_size(x) for x in spread[:12]) + (", ..." if spread.size > 12 else "")
            head = (
                f"planned {t!r} per {c!r} as given: [{shown}] ({_fmt_size(spread.sum())} in "
                f"{spread.size}, effective number {spread.sum() ** 2 / (spread**2).sum():.4g})"
            )
        elif spread == "even":
            head = (
                f"{t!r} spread evenly over {c!r} (spread='even'; the best case: uneven "
                f"{groups} give a larger error)"
            )
        else:
            head = (
                f"{t!r} spread over {c!r} as unevenly as observed (spread='observed': "
                f"effective {groups} = {groups} x {observed_ratio(vc, t):.4g}, the G-study's "
                "ratio, at least what the most uneven spread allows)"
            )
        if (t, c) in runs:
            head = (
                f"{t!r} per {c!r} (one {vc.dropped[0]!r}, no task clusters: {t!r} within {c!r} "
                f"take the place of tasks within clusters): {head}"
            )
        out.append(
            f"{head}; {seen}. The mean weighs every {t!r} alike, so an effect of {c!r} without "
            f"{t!r} enters with sum_k (n_k/N)^2 = 1 / effective_n_{c} (coord), not 1 / (number of "
            f"{c!r})"
        )
    return "; ".join(out)


def _cell_words(vc, f: str) -> tuple[str, str]:
    """The cell a run facet is counted in (``'agent' x 'task'``) and its observed counts."""
    d = vc._design
    par = [g for g in d.parents[f] if not any(g in d.parents[h] for h in d.parents[f])]
    cell = " x ".join(repr(g) for g in d.facets if g in par)
    n, cells = run_counts(vc, f)
    lo, hi = _fmt_size(n.min()), _fmt_size(n.max())
    harmonic = n.size / (1.0 / n).sum()
    each = f"{lo} each" if lo == hi else f"{lo}-{hi} (mean {n.mean():.4g}, harmonic {harmonic:.4g})"
    seen = f"the G-study's {n.size} {cell} cells with a {f!r} hold {each}"
    if cells > n.size:
        seen += (
            f"; {cells - n.size} of {cells} {cell} cells have none (e.g. a task an agent did not "
            f"run): the D-study's design still has every {cell} cell, those run like the others "
            "(the harmonic mean is over the cells that were run), not the tasks two agents both "
            "ran (fewer tasks: a larger error)"
        )
    return cell, seen


def run_words(vc, held: Any) -> str:
    """What the D-study assumed about the runs per cell ("" when the design has no run facet)."""
    whose = "the mean" if vc.measurement is None else f"the mean of each {vc.measurement!r}"
    out = []
    for f in run_facets(vc):
        cell, seen = _cell_words(vc, f)
        if f in held:
            head = (
                f"{f!r} per {cell} cell as observed (held at the G-study's): {whose} weighs "
                f"every cell alike, so the {f!r} error enters with (1/N^2) sum 1/n_cell = 1 / "
                f"(N x effective_n_{f}), effective_n_{f} = {effective_runs(vc, f):.4g} (coord) "
                "the harmonic mean of the cells' counts, not their mean"
            )
        else:
            head = (
                f"{f!r} per {cell} cell as asked, the same number in every cell (even; uneven "
                "counts of the same mean give a larger error)"
            )
        out.append(f"{head}; {seen}")
    return "; ".join(out)


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
    fixed: frozenset = frozenset(),
) -> dict[str, Any]:
    """Return the D-study quantities of components ``comp`` at facet sizes ``sizes``.

    ``comp`` maps effect -> variance, arrays broadcast; NaN where a confounded facet is asked
    at a size other than 1. ``fixed``: facets whose levels are the G-study's own (these
    clusters): an effect of the object and fixed facets only joins the universe score
    (divided by the fixed sizes), one of fixed facets only is a constant, not error
    (Brennan 2001, section 4.4).
    """
    p = measurement
    M = _universe(design, p)
    tau: Any = np.float64(0.0)  # numpy zeros: 0/0 is NaN, not ZeroDivisionError
    delta: Any = np.float64(0.0)
    Delta: Any = np.float64(0.0)
    for e, s in comp.items():
        if p is not None and e <= M:
            tau = tau + s
            continue
        div: Any = 1.0
        for f in e - M:
            div = div * sizes[f]
        if fixed and e <= M | fixed:
            if p is not None and p in e:
                tau = tau + s / div
            continue
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
    """One D-study quantity at the G-study's own sizes, its clusters and runs as observed."""
    out = coefficients_at(
        vc._design,
        vc.measurement,
        comp_dict(vc),
        spread_sizes(vc, dict(vc.sizes), held=vc._design.facets)[0],
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
    the cluster facet when the task axis holds the total number of tasks (``n_tasks``);
    ``planned``: facets set by planned cluster sizes (``spread`` a list), on no axis.
    """

    axes: dict[str, np.ndarray]
    dims: dict[str, str]
    observed: set[str] = field(default_factory=set)
    total_over: str | None = None
    planned: set[str] = field(default_factory=set)


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
            f"total number of tasks {ft!r} over all clusters {fc!r} ({held}); {ft!r} per "
            "cluster on average = n_tasks / n_clusters, spread over the clusters as attr "
            f"'spread' says (sizes={{{ft!r}: k}} gives k per cluster on average instead)"
        )
    held = [
        f"{f} = {_fmt_size(_observed(vc, f))}"
        for f in d.facets
        if f != vc.measurement
        and f not in grid.axes
        and f != grid.total_over
        and f not in grid.planned
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


def _drop_planned(vc, grid: SizeGrid, spread: np.ndarray) -> None:
    """Take the task and cluster facets off the grid: planned cluster sizes fix them."""
    ((t, c),) = spread_pairs(vc)
    asked = [grid.dims[f] for f in (t, c) if f in grid.axes and f not in grid.observed]
    planned_clusters(vc, {}, spread, asked)
    for f in (t, c):
        grid.axes.pop(f, None)
        grid.dims.pop(f, None)
        grid.observed.discard(f)
    grid.total_over = None
    grid.planned = {t, c}


def _pair_coords(vc, ds, grid, full, eff) -> xr.Dataset:
    """Coords ``<task>_per_cluster``, ``effective_n_<cluster>`` and ``effective_n_<run>``.

    The first only for the shorthand's total ``n_tasks``.
    """
    dnames = tuple(grid.dims[f] for f in grid.axes)
    shape = tuple(ds.sizes[k] for k in dnames)

    def over(arr, facets):
        da = xr.DataArray(np.broadcast_to(np.asarray(arr, dtype=float), shape), dims=dnames)
        return da.isel({grid.dims[f]: 0 for f in grid.axes if f not in facets})

    if grid.total_over is not None:
        ft = vc._legacy[1]
        ds = ds.assign_coords({f"{ft}_per_cluster": over(full[ft], (ft, grid.total_over))})
    for t, c in spread_pairs(vc):
        ds = ds.assign_coords({f"effective_n_{c}": over(eff[c], (t, c))})
    for f in run_facets(vc):
        ds = ds.assign_coords({f"effective_n_{f}": over(eff[f], (f,))})
    return ds


#: how the clusters of a ``task:cluster`` nesting are generalised over (``universe``)
UNIVERSES = ("new_clusters", "these_clusters")

#: planned levels beyond this multiple of the G-study's own: an :class:`ExtrapolationWarning`. The
#: held-out audit (R) checked the D-study up to 10x in tasks (SWE-bench 50 -> 500, METR 20 -> 83:
#: SE ratios 0.98-1.00 without clusters) and 4x in runs; nothing beyond was checked
EXTRAPOLATION_FACTOR = 10


def check_universe(vc, universe: Any, grid: SizeGrid, spread: Any) -> frozenset:
    """The fixed facets ``universe`` means (``"these_clusters"``: the clusters), checked."""
    if universe not in UNIVERSES:
        raise ValueError(f"`universe` must be one of {list(UNIVERSES)}; got {universe!r}")
    if universe == "new_clusters":
        return frozenset()
    pairs = spread_pairs(vc)
    if not pairs:
        raise ValueError(
            f"`universe`='these_clusters' needs tasks nested in clusters; the design {vc.formula!r} "
            "has none (its tasks are independent draws already)"
        )
    for t, c in pairs:
        n_seen = len(vc._cluster_sizes.get(t, [])) or _observed(vc, c)
        asked = grid.axes.get(c) if c in grid.axes and c not in grid.observed else None
        planned = spread.size if isinstance(spread, np.ndarray) else None
        if (asked is not None and np.any(asked != n_seen)) or planned not in (None, n_seen):
            got = asked.tolist() if asked is not None else planned
            raise ValueError(
                f"`universe`='these_clusters' keeps the G-study's {_fmt_size(n_seen)} {c!r}: "
                f"other numbers of clusters ({got}) are new clusters (universe='new_clusters')"
            )
    return frozenset(c for _, c in pairs)


def universe_words(vc, fixed: frozenset) -> str:
    """Which universe the D-study predicts for, in words (attr ``universe``)."""
    pairs = spread_pairs(vc)
    if not pairs:
        return "new tasks drawn independently (the design has no task clusters)"
    out = []
    runs = runs_in_tasks(vc)
    for t, c in pairs:
        n = len(vc._cluster_sizes.get(t, [])) or _observed(vc, c)
        terms = [vc._design.name(e) for e in vc._design.effects if c in e and t not in e]
        if (t, c) in runs:
            out.append(_runs_universe_words(t, c, n, terms, c in fixed))
        elif c in fixed:
            out.append(
                f"these clusters, more tasks in each (universe='these_clusters'): the G-study's "
                f"{_fmt_size(n)} {c!r} kept, new {t!r} drawn within them; the {c!r} terms {terms} "
                "are part of what is measured, not error, so the prediction generalises to new "
                f"{t!r} of these {c!r} only"
            )
        else:
            out.append(
                f"new clusters (universe='new_clusters'): a benchmark of newly drawn {c!r}, as many as "
                f"dim n_clusters says or else the G-study's {_fmt_size(n)}, holding the planned {t!r}; "
                f"the {c!r} terms {terms} are error over the effective number of {c!r} and do not "
                f"shrink with more {t!r} per {c!r} (for more {t!r} in these {c!r}: "
                "universe='these_clusters')"
            )
    return "; ".join(out)


def _runs_universe_words(t: str, c: str, n: float, terms: list[str], fixed: bool) -> str:
    """:func:`universe_words` for runs ``t`` within tasks ``c`` (one agent: no task clusters)."""
    if fixed:
        return (
            f"these {c!r}, more {t!r} of each (universe='these_clusters'; the design has no task "
            f"clusters, {t!r} are nested in {c!r}): the G-study's {_fmt_size(n)} {c!r} kept; the "
            f"{c!r} terms {terms} are part of what is measured, not error, so the prediction is "
            f"for new {t!r} of these {c!r} only"
        )
    return (
        f"new {c!r} drawn independently (the design has no task clusters: {t!r} are nested in "
        f"{c!r}), as many as the planned {c!r} or else the G-study's {_fmt_size(n)}, each with "
        f"the planned {t!r} per {c!r}; the {c!r} terms {terms} are error over the effective "
        f"number of {c!r} (coord effective_n_{c})"
    )


def cluster_inflation(vc) -> tuple[float, float | None, float] | None:
    """The model's and the data's inflation of a paired difference by the clusters, and ``C_eff``.

    Model: ``var_paired_diff`` at the G-study's sizes with the cluster terms over its
    effective clusters, against the same components with every task its own cluster.
    Data: the method-of-moments inflation of the pairs' mean differences (``_observed``,
    unbiased in numerator and denominator; None when not recorded). None without one ``task:cluster`` nesting.
    """
    pairs = spread_pairs(vc)
    if vc.measurement is None or len(pairs) != 1:
        return None
    ((t, c),) = pairs
    g = spread_sizes(vc, dict(vc.sizes), held=vc._design.facets)[0]
    alone = {**g, c: float(g[c] * g[t]), t: 1.0}
    args = (vc._design, vc.measurement, comp_dict(vc))
    num = coefficients_at(*args, g, vc.confounded, warn=False)["var_paired_diff"]
    den = coefficients_at(*args, alone, vc.confounded, warn=False)["var_paired_diff"]
    model = float(num / den) if den > 0 else float("nan")
    return model, vc._observed_cluster_ratio, float(g[c])


def inflation_words(vc) -> str:
    """Attr ``cluster_inflation``: the model's ratio beside the data's, and whether they disagree."""
    got = cluster_inflation(vc)
    if got is None:
        return ""
    model, seen, ceff = got
    ((t, c),) = spread_pairs(vc)
    out = (
        f"model {model:.2f}x (var_paired_diff at the G-study's sizes, its {c!r} terms over "
        f"{ceff:.3g} effective {c!r}, against every {t!r} its own {c!r})"
    )
    if seen is None:
        return out + "; the data's own ratio was not recorded"
    out += (
        f"; observed {seen:.2f}x (1 + (m* - 1) ICC with the ICC of the fitted data's per-{t} paired "
        f"differences from their within- and between-{c!r} sums of squares, pooled over pairs, no fit)"
    )
    if max(model / seen, seen / model) > 1.25:
        out += f": they disagree by {max(model / seen, seen / model):.2f} times"
    return out


def _error_parts(vc, sizes: dict[str, Any], fixed: frozenset) -> dict[str, float]:
    """Each effect's share of the pair-difference (else absolute) error at the largest ``sizes``."""
    top = {f: float(np.max(v)) for f, v in sizes.items()}
    key = "var_paired_diff" if vc.measurement is not None else "sigma2_Delta"
    parts = {}
    for e, v in comp_dict(vc).items():
        one = coefficients_at(vc._design, vc.measurement, {e: v}, top, (), warn=False, fixed=fixed)
        parts[vc._design.name(e)] = float(np.nan_to_num(one[key]))
    total = sum(parts.values())
    return {k: v / total for k, v in parts.items()} if total > 0 else {}


def _dominant(shares: dict[str, float]) -> str:
    top = sorted(shares.items(), key=lambda kv: -kv[1])[:3]
    return ", ".join(f"{k} {v:.0%}" for k, v in top if v > 0)


def warn_extrapolation(items: list[tuple[str, float, float]], dominant: str) -> None:
    """Warn of planned levels beyond ``EXTRAPOLATION_FACTOR`` x the fitted ones: the one rule.

    ``items``: (what, fitted, planned); ``dominant``: the error's main parts at that size.
    """
    far = [(w, a, b) for w, a, b in items if a > 0 and b > EXTRAPOLATION_FACTOR * a]
    if not far:
        return
    said = "; ".join(f"{_fmt_size(b)} {w} planned, {b / a:.0f}x the {_fmt_size(a)} fitted" for w, a, b in far)
    warn_user(
        f"{said}: more than {EXTRAPOLATION_FACTOR}x, beyond what was checked on held-out data (the "
        "D-study up to 10x in tasks: SWE-bench 50 -> 500, METR 20 -> 83, standard errors within 2% "
        "without clusters); there the prediction rests on the components' model alone"
        + (f"; the error's main parts there: {dominant}" if dominant else ""),
        ExtrapolationWarning,
    )


def _warn_few_clusters(vc, shares: dict[str, float], fixed: frozenset, inflation: str) -> None:
    """Warn when cluster terms enter the error from fewer than ``FEW_CLUSTERS`` effective clusters.

    ``inflation``: :func:`inflation_words` of ``vc``, said in the warning.
    """
    for t, c in spread_pairs(vc):
        n = np.asarray(vc._cluster_sizes.get(t, []), dtype=int)
        few = few_units(np.repeat(np.arange(n.size), n), int(n.sum())) if n.size else None
        names = [vc._design.name(e) for e in vc._design.effects if c in e and t not in e]
        share = sum(shares.get(k, 0.0) for k in names)
        if c in fixed or few is None or share <= 0:
            continue
        est = dict(zip(vc.component_names, np.maximum(vc.estimates_raw, 0.0), strict=True))
        warn_user(
            f"the D-study's {c!r} terms ({', '.join(f'{k} {est[k]:.3g}' for k in names)}) rest on "
            f"the G-study's {few[1]} {c!r}, worth {few[0]:.1f} equal clusters (fewer than {few[2]}); "
            f"they are error over that effective number whatever the {t!r} planned (new clusters), "
            f"and make {share:.0%} of the error at the largest size planned. Cluster inflation of a "
            f"paired difference: {inflation or 'not computed'}. For more {t!r} in these "
            f"{c!r}: universe='these_clusters'",
            SmallSampleWarning,
        )


def _plan_notes(vc, full: dict[str, Any], eff_sizes: dict[str, Any], fixed: frozenset) -> dict[str, str]:
    """The D-study's warnings (few clusters, extrapolation) and attr ``cluster_inflation``."""
    shares = _error_parts(vc, eff_sizes, fixed)
    words = inflation_words(vc)  # once: the few-clusters warning and the attr both say it
    _warn_few_clusters(vc, shares, fixed, words)
    d, M = vc._design, _universe(vc._design, vc.measurement)
    items = []
    for f in d.facets:
        if f in M:
            continue
        inner = [f, *(g for g in d.parents[f] if g not in M)]
        if any(f in d.parents[g] for g in d.facets if g not in M) and f in dict(spread_pairs(vc)).values():
            continue  # clusters: counted with their tasks
        fitted = float(np.prod([_observed(vc, g) for g in inner]))
        planned = float(np.max(np.prod(np.broadcast_arrays(*[np.asarray(full[g], float) for g in inner]), axis=0)))
        items.append((f"levels of {f!r}" + (" (over all clusters)" if len(inner) > 1 else ""), fitted, planned))
    warn_extrapolation(items, _dominant(shares))
    return {"cluster_inflation": words} if words else {}


def d_study(
    vc,
    sizes=None,
    *,
    n_tasks=None,
    n_runs=None,
    n_clusters=None,
    spread="observed",
    universe="new_clusters",
    stacklevel: int = 3,
) -> xr.Dataset:
    """Return the D-study of ``vc`` over a grid of planned sizes.

    See :meth:`VarianceComponentsResult.d_study`.
    """
    d = vc._design
    spread = check_spread(vc, spread)
    grid = size_grid(vc, sizes, n_tasks, n_runs, n_clusters)
    fixed = check_universe(vc, universe, grid, spread)
    if isinstance(spread, np.ndarray):
        _drop_planned(vc, grid, spread)
    confounded_asked = [f for f in vc.confounded if f in grid.axes and np.any(grid.axes[f] != 1)]
    if confounded_asked:
        warn_user(
            f"the G-study had one level of {confounded_asked} per cell, so its component is "
            "confounded with the residual; projections to other sizes are NaN",
            ConfoundedComponentWarning,
        )
    full = {f: np.asarray(vc.sizes.get(f, 1.0)) for f in d.facets}
    full.update(broadcast_sizes(grid.axes))
    if grid.planned:
        planned_clusters(vc, full, spread, [])
    if grid.total_over is not None:
        full[vc._legacy[1]] = _per_cluster(vc, grid, full)
    held = {f for f in d.facets if f not in grid.axes and f not in grid.planned} | grid.observed
    eff_sizes, eff = spread_sizes(vc, full, spread, held)
    out = coefficients_at(
        d, vc.measurement, comp_dict(vc), eff_sizes, vc.confounded, stacklevel=stacklevel + 1,
        fixed=fixed,
    )
    notes = _plan_notes(vc, full, eff_sizes, fixed)
    shape = tuple(a.size for a in grid.axes.values())
    dnames = tuple(grid.dims[f] for f in grid.axes)
    ds = xr.Dataset(
        {k: (dnames, np.broadcast_to(np.asarray(v, dtype=float), shape)) for k, v in out.items()},
        coords={grid.dims[f]: _coord(a) for f, a in grid.axes.items()},
    )
    ds = _pair_coords(vc, ds, grid, full, eff)
    ds.attrs = {
        "design": vc.formula,
        "measurement": str(vc.measurement),
        "facets": list(vc.facets),
        "method": vc.method,
        **_describe(vc, grid),
    }
    if spread_pairs(vc):
        ds.attrs["spread"] = spread_words(vc, spread)
        ds.attrs["spread_kind"] = spread if isinstance(spread, str) else "planned"
    if run_facets(vc):
        ds.attrs["run_spread"] = run_words(vc, held)
        ds.attrs["run_spread_kind"] = "observed" if any(f in held for f in run_facets(vc)) else "even"
    ds.attrs["universe"] = universe_words(vc, fixed)
    ds.attrs.update(notes)
    return ds
