"""Cost-optimal allocation of a D-study under a budget: the one owner of the job.

Private to the variance-components wing. Two entry points share one cost rule
(:func:`design_cost`), one criterion (the D-study quantities of :mod:`._dstudy`) and one
choice of the optimum (:func:`pick`):

* :meth:`VarianceComponentsResult.optimal_allocation` (:func:`allocate_grid`): any
  design, any facet costs, any D-study criterion, by enumeration of a size grid;
* :func:`hierbench.freq.optimal_allocation` (:func:`allocate_paired`): the paired
  comparison of two agents in ``run:(agent*task)`` (one agent's runs costed), tasks and
  runs per task around the continuous optimum ``R*``, each with the largest number of
  tasks the budget pays for.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import xarray as xr

from ..._base import SmallSampleWarning
from ..._base import check_int
from ..._base import check_number
from ._design_lang import Design
from ._design_lang import parse_design
from ._dstudy import SPREADS
from ._dstudy import broadcast_sizes
from ._dstudy import coefficients_at
from ._dstudy import d_study
from ._warnings import ConfoundedComponentWarning
from ._warnings import ExtrapolationWarning

__all__: list[str] = []

CRITERIA = ("var_paired_diff", "sigma2_Delta", "e_rho2", "phi")
MAXIMISED = ("e_rho2", "phi")

#: the paired-comparison design of :func:`allocate_paired`: runs nested in agent x task cells
PAIRED = parse_design("run:(agent*task)")


def generalization_facets(design: Design, measurement: str | None) -> list[str]:
    """Return the facets whose number of levels a D-study can plan.

    Not the object of measurement nor a facet it is nested in.
    """
    return [
        f
        for f in design.facets
        if f != measurement and (measurement is None or f not in design.parents[measurement])
    ]


def check_costs(cost: dict[str, float], facets: list[str]) -> None:
    """Check each cost names a facet of generalization and is a finite number >= 0, one > 0.

    A design that costs nothing has no optimum, only the largest size tried.
    """
    if not isinstance(cost, dict):
        raise TypeError(f"`cost` must be a dict facet -> cost per level; got {type(cost).__name__}")
    for f, c in cost.items():
        if f not in facets:
            raise ValueError(f"`cost`: {f!r} is not a facet of generalization; facets {facets}")
        check_number(c, f"cost[{f!r}]", low=0)
    if not any(c > 0 for c in cost.values()):
        raise ValueError(
            f"`cost` must give at least one facet a cost > 0 (facets {facets}); got {cost!r}"
        )


def design_cost(
    design: Design,
    measurement: str | None,
    cost: dict[str, float],
    sizes: dict[str, Any],
    n_objects: float,
) -> Any:
    """Return the cost of a design: each facet's cost per level times the levels bought.

    A level is counted once per level of every facet it is nested in (a run of one agent
    on one task).
    """
    total: Any = 0.0
    for f, c in cost.items():
        cnt: Any = 1.0
        for g in {f} | design.parents[f]:
            cnt = cnt * (n_objects if g == measurement else sizes[g])
        total = total + c * cnt
    return total


def pick(values: np.ndarray, criterion: str) -> tuple[int, ...]:
    """Return the index of the best finite value.

    The largest coefficient or the smallest variance (the first one on a tie).
    """
    flat = np.nanargmax(values) if criterion in MAXIMISED else np.nanargmin(values)
    return np.unravel_index(flat, values.shape)


def _grid(vc, gen: list[str], max_sizes: dict[str, int] | None) -> dict[str, np.ndarray]:
    max_sizes = dict(max_sizes or {})
    for f, v in max_sizes.items():
        if f not in gen:
            raise ValueError(f"`max_sizes`: {f!r} is not a facet of generalization; facets {gen}")
        check_int(v, f"max_sizes[{f!r}]", min=1)
    grid = {}
    for f in gen:
        m = int(max_sizes.get(f, max(16, int(np.ceil(4 * vc.sizes.get(f, 1))))))
        grid[f] = np.arange(1, m + 1)
    return grid


def allocate_grid(
    vc, budget, cost, n_objects, max_sizes, criterion, spread="observed"
) -> xr.Dataset:
    """Return the cost-optimal D-study of ``vc`` on a size grid.

    See :meth:`VarianceComponentsResult.optimal_allocation`. Tasks spread over clusters
    as ``spread`` says (the D-study's rule); the cost counts the tasks bought.
    """
    d = vc._design
    if criterion not in CRITERIA:
        raise ValueError(f"`criterion` must be one of {CRITERIA}; got {criterion!r}")
    if not isinstance(spread, str) or spread not in SPREADS:
        raise ValueError(
            f"`spread` must be one of {SPREADS} for an allocation (its grid varies the number "
            f"of clusters, so planned cluster sizes do not apply); got {spread!r}"
        )
    budget = check_number(budget, "budget", low=0, low_open=True)
    gen = generalization_facets(d, vc.measurement)
    check_costs(cost, gen)
    if n_objects is not None:
        n_objects = check_int(n_objects, "n_objects", min=1)
    grid = _grid(vc, gen, max_sizes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfoundedComponentWarning)
        warnings.simplefilter("ignore", ExtrapolationWarning)  # the grid's far corners: of the optimum, warn_optimum_far
        ds = d_study(vc, grid, spread=spread, stacklevel=4)
    M = float(vc.sizes.get(vc.measurement, 1) if n_objects is None else n_objects)
    b = broadcast_sizes({f: grid[f].astype(float) for f in gen})
    total = design_cost(d, vc.measurement, cost, b, M)
    shape = tuple(a.size for a in grid.values())
    ds["cost"] = (tuple(f"n_{f}" for f in gen), np.broadcast_to(np.asarray(total, float), shape))
    ds["feasible"] = ds["cost"] <= budget
    vals = ds[criterion].where(ds["feasible"]).values
    if np.all(np.isnan(vals)):
        raise ValueError(
            f"`budget` {budget} buys no design on the grid (cheapest costs "
            f"{float(ds['cost'].min()):.4g})"
        )
    where = pick(vals, criterion)
    ds.attrs.update(
        {
            "optimum": {f: int(grid[f][i]) for f, i in zip(gen, where, strict=True)},
            "optimum_value": float(vals[where]),
            "optimum_cost": float(ds["cost"].values[where]),
            "budget": float(budget),
            "criterion": criterion,
            "n_objects": M,
            "cost_per_level": dict(cost),
        }
    )
    return ds


def warn_optimum_far(vc, optimum: dict[str, int], spread: str) -> None:
    """The extrapolation warning of the chosen design alone (the D-study's rule), not of every size searched.

    Said of the design returned, after the floor on tasks (``_floors.floor_grid``) has had its
    say: before, it described the design the floor replaced (2 tasks x 175 runs where 6 x 8 was
    returned).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfoundedComponentWarning)
        warnings.simplefilter("ignore", SmallSampleWarning)  # said already by the grid's D-study
        d_study(vc, {f: np.array([n]) for f, n in optimum.items()}, spread=spread, stacklevel=4)


#: most runs-per-task values :func:`allocate_paired` searches (beyond: the integers around R*)
PAIRED_MAX_CANDIDATES = 2_000_000


def _heuristic_runs(budget, cost_task, cost_run, r_star, t_min: int = 2) -> tuple[np.ndarray, int]:
    """Return runs per task 1, the integers around ``R*`` and the most ``t_min`` tasks allow (``r_max``)."""
    r_max = max(1, int((budget / t_min - cost_task) // cost_run))  # at least t_min tasks
    cands = {1, r_max}
    if math.isfinite(r_star):
        cands |= {max(1, min(r_max, math.floor(r_star))), max(1, min(r_max, math.ceil(r_star)))}
    return np.array(sorted(cands), dtype=float), r_max


def _search_interval(v, budget, cost_task, cost_run, s_mt, s_e, r_max) -> tuple[int, int]:
    """Return the runs per task ``R`` that can beat variance ``v``.

    With ``T <= B / (c_task + R c_run)``, ``Var >= (2 s_mt + 2 s_e / R)(c_task + R c_run) /
    B``, a convex bound; the ``R`` where it is ``<= v`` solve ``a R^2 - K R + c <= 0``.
    """
    a, c = s_mt * cost_run, s_e * cost_task
    k = v * budget / 2 - s_mt * cost_task - s_e * cost_run
    return _quadratic_integers(a, k, c, r_max)


def _quadratic_integers(a: float, k: float, c: float, x_max: int) -> tuple[int, int]:
    """The integers ``x`` in ``[1, x_max]`` where ``a x^2 - k x + c <= 0`` may hold, one integer of slack each side.

    ``a >= 0``, ``c >= 0``; no real root (or ``a = 0`` and ``k <= 0``) gives the whole range.
    """
    if a > 0 and k * k >= 4 * a * c:
        root = math.sqrt(k * k - 4 * a * c)
        lo, hi = (k - root) / (2 * a), (k + root) / (2 * a)
    elif a == 0 and k > 0:
        lo, hi = c / k, math.inf
    else:
        lo, hi = 1.0, math.inf
    lo = max(1, math.floor(lo) - 1)  # one integer of slack each side for rounding
    hi = x_max if not math.isfinite(hi) else min(x_max, math.ceil(hi) + 1)
    return lo, hi


def _paired_candidates(budget, cost_task, cost_run, s_mt, s_e, r_star, t_min: int = 2):
    """Return the candidate (runs per task, tasks).

    Every ``R`` whose variance bound can beat the best of the integers around ``R*`` (all of
    them when that is at most ``PAIRED_MAX_CANDIDATES``), each with the most tasks the
    budget pays for (>= ``t_min``).
    """
    runs, r_max = _heuristic_runs(budget, cost_task, cost_run, r_star, t_min)
    tasks = np.floor_divide(budget, cost_task + runs * cost_run)
    runs, tasks = runs[tasks >= t_min], tasks[tasks >= t_min]
    if runs.size == 0:
        return runs, tasks, "exact"
    v = float(np.min((2 * s_mt + 2 * s_e / runs) / tasks))
    lo, hi = _search_interval(v * (1 + 1e-12), budget, cost_task, cost_run, s_mt, s_e, r_max)
    if hi - lo + 1 > PAIRED_MAX_CANDIDATES:
        return runs, tasks, "integers around R*"
    runs = np.union1d(runs, np.arange(lo, hi + 1, dtype=float))
    tasks = np.floor_divide(budget, cost_task + runs * cost_run)
    return runs[tasks >= t_min], tasks[tasks >= t_min], "exact"


def allocate_paired(
    budget: float, cost_task: float, cost_run: float, s_mt: float, s_e: float, r_star: float, t_min: int = 2
) -> xr.Dataset:
    """Return the integer (tasks, runs per task) minimising a paired mean difference's variance.

    Among the plans of at least ``t_min`` tasks (the runs per task capped where the budget
    leaves ``t_min`` tasks). See :func:`hierbench.freq.optimal_allocation`.
    """
    runs, tasks, search = _paired_candidates(budget, cost_task, cost_run, s_mt, s_e, r_star, t_min)
    if runs.size == 0:
        raise ValueError(
            f"`budget` {budget} cannot pay for {t_min} tasks with one run each "
            f"({t_min} x ({cost_task} + {cost_run}))"
        )
    comp = dict(zip(PAIRED.effects, (0.0, 0.0, s_mt, s_e), strict=True))
    sizes = {"agent": 1.0, "task": tasks, "run": runs}
    var = coefficients_at(PAIRED, "agent", comp, sizes, warn=False)["var_paired_diff"]
    cost = design_cost(PAIRED, "agent", {"task": cost_task, "run": cost_run}, sizes, 1.0)
    (i,) = pick(np.asarray(var, dtype=float), "var_paired_diff")
    return xr.Dataset(
        {
            "r_star": r_star,
            "n_runs": int(runs[i]),
            "n_tasks": int(tasks[i]),
            "var_mean_diff": float(var[i]),
            "cost": float(np.asarray(cost)[i]),
        },
        attrs={"budget": budget, "cost_task": cost_task, "cost_run": cost_run, "search": search},
    )


#: most tasks-per-cluster values :func:`allocate_clustered` searches (beyond: the integers around m*)
CLUSTER_MAX_SIZES = 5_000


def _size_best(budget, costs, parts, m_bar, m_star, k_min: int = 2):
    """Return (variance, runs per task, clusters, search, R*) for clusters of mean size ``m_bar``.

    The clustered plan is the paired one with the cluster as the unit: ``Var = (a + b / R) / K``
    with ``a = (m* s_c + s_w) / m``, ``b = s_e / m``, a cluster costing ``c_cl + m c_task`` and
    a run on each of its tasks ``m c_run``, at least ``k_min`` clusters; None when ``k_min``
    clusters with one run are unaffordable.
    """
    c_cl, c_task, c_run = costs
    s_c, s_w, s_e = parts
    a, b = (m_star * s_c + s_w) / m_bar, s_e / m_bar
    cu, cr = c_cl + m_bar * c_task, m_bar * c_run
    r_star = math.inf if a == 0 else math.sqrt(b * cu / (a * cr))
    runs, k, search = _paired_candidates(budget, cu, cr, a / 2, b / 2, r_star, k_min)
    if runs.size == 0:
        return None
    var = (a + b / runs) / k
    i = int(np.argmin(var))  # the first (fewest runs) on a tie
    return float(var[i]), int(runs[i]), int(k[i]), search, r_star


def _size_interval(v, budget, costs, parts, m_max) -> tuple[int, int]:
    """Return the cluster sizes ``m`` whose continuous bound can beat variance ``v``.

    For a size ``m``, ``Var B >= (sqrt((s_c + s_w / m)(c_cl + m c_task)) + sqrt(s_e c_run))^2``
    (Cauchy-Schwarz over (K, R)); ``h(m) = (s_c + s_w / m)(c_cl + m c_task) <= H`` is
    ``s_c c_task m^2 - (H - s_c c_cl - s_w c_task) m + s_w c_cl <= 0``.
    """
    c_cl, c_task, c_run = costs
    s_c, s_w, s_e = parts
    h_max = (math.sqrt(v * budget) - math.sqrt(s_e * c_run)) ** 2
    a, k, c = s_c * c_task, h_max - s_c * c_cl - s_w * c_task, s_w * c_cl
    return _quadratic_integers(a, k, c, m_max)


def allocate_clustered(budget, costs, parts, sizes=None, k_min: int = 2) -> dict:
    """Return the integer (clusters, tasks per cluster, runs per task) minimising Var(dbar).

    ``costs`` = (per cluster, per task, per run of one agent); ``parts`` = (s_c, s_w, s_e):
    ``Var = (m* s_c + s_w + s_e / R) / (K m)`` for ``K`` clusters of mean size ``m``
    (``m*`` their size-weighted mean). ``sizes`` = (m, m*) fixes the sizes; None chooses
    equal sizes ``m`` (then ``m* = m``) with the runs. ``k_min``: the fewest clusters. See
    :func:`hierbench.freq.optimal_allocation`.
    """
    c_cl, c_task, c_run = costs
    if sizes is not None:
        best = _size_best(budget, costs, parts, *sizes, k_min)
        if best is None:
            raise ValueError(
                f"`budget` {budget} cannot pay for {k_min} clusters of {sizes[0]:.4g} tasks with one run "
                f"each ({k_min} x ({c_cl} + {sizes[0]:.4g} x ({c_task} + {c_run})))"
            )
        v, r, k, search, r_star = best
        return {"var": v, "n_runs": r, "n_clusters": k, "m": sizes[0], "search": search, "r_star": r_star}
    s_c, s_w, s_e = parts
    m_max = int((budget / k_min - c_cl) // (c_task + c_run)) if c_task + c_run > 0 else 0
    if m_max < 1:
        raise ValueError(
            f"`budget` {budget} cannot pay for {k_min} clusters of one task with one run each "
            f"({k_min} x ({c_cl} + {c_task} + {c_run}))"
        )
    num, den = s_w * c_cl, s_c * c_task
    m_star = math.sqrt(num / den) if den > 0 else (math.inf if num > 0 else math.nan)
    r_star = math.sqrt(s_e * c_task / (s_w * c_run)) if s_w > 0 else math.inf
    near = {1, m_max}
    if math.isfinite(m_star):
        near |= {max(1, min(m_max, math.floor(m_star))), max(1, min(m_max, math.ceil(m_star)))}
    if math.isfinite(r_star):  # and the most tasks k_min clusters hold at the runs around R*
        near |= {max(1, min(m_max, int((budget / k_min - c_cl) // (c_task + r * c_run))))
                 for r in (max(1, math.floor(r_star)), max(1, math.ceil(r_star)))}
    found = {m: _size_best(budget, costs, parts, float(m), float(m), k_min) for m in sorted(near)}
    v = min(f[0] for f in found.values() if f is not None)
    lo, hi = _size_interval(v * (1 + 1e-12), budget, costs, parts, m_max)
    search = "integers around m*"
    if hi - lo + 1 <= CLUSTER_MAX_SIZES:
        search = "exact"
        found |= {m: _size_best(budget, costs, parts, float(m), float(m), k_min) for m in range(lo, hi + 1)
                  if m not in found}
    found = {m: f for m, f in found.items() if f is not None}
    m = min(found, key=lambda m: (found[m][0], m))  # the smallest variance, then the fewest tasks
    v, r, k, _, _ = found[m]
    if any(f[3] != "exact" for f in found.values()):
        search += "; runs per task: integers around R*"
    return {"var": v, "n_runs": r, "n_clusters": k, "m": float(m), "search": search,
            "r_star": r_star, "m_star": m_star}
