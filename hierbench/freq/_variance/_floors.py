"""A plan's floors: the fewest tasks a plan may have, and the warning where it rests on a component at 0.

One owner for the planners (:func:`hierbench.freq.optimal_allocation` and ``optimal_runs``, and
:meth:`hierbench.freq.VarianceComponentsResult.optimal_allocation`): a plan never has fewer tasks
than the paired test it is planned for needs to reach its level, and a plan from an agent x task
component estimated at 0 (a truncated ANOVA estimate, REML at the boundary) says so, with the
component's upper bound and the plan's variance there.
"""

from __future__ import annotations

import math

import numpy as np
import xarray as xr

from ..._base import check_int
from ..._base import check_prob
from ..._base import warn_user
from .._kernels import resolvable
from . import _allocation
from . import _dstudy
from ._warnings import NegativeVarianceComponentWarning


def fewest_tasks(alpha: float) -> int:
    """The fewest tasks whose exact two-sided sign-flip test of a paired difference can reach ``alpha``.

    Its smallest p-value is ``2^(1 - T)`` (every task's difference of one sign), the floor by which
    ``compare_agents`` and ``paired_test`` choose their test (``resolvable``, one owner): 6 tasks
    at 0.05 (0.031; 5 tasks give 0.0625).
    """
    t = 2
    while not resolvable(t, 1, alpha):
        t += 1
    return t


def task_floor(min_tasks: int | None, alpha: float, unit: str = "tasks") -> tuple[int, str]:
    """The fewest units a plan may have (``min_<unit>``, default ``fewest_tasks(alpha)``), and the rule in words.

    ``unit``: ``"tasks"``, or ``"clusters"`` where a clustered plan's paired test is over clusters
    (the sign flips are then the clusters', the same floor).
    """
    alpha = check_prob(alpha, "alpha")
    need = fewest_tasks(alpha)
    n = "T" if unit == "tasks" else "K"
    why = (
        f"the fewest whose exact sign-flip test of the paired difference can reach alpha = {alpha:g} "
        f"two-sided (its smallest p-value is 2^(1 - {n}), {2.0 ** (1 - need):.3g} at {n} = {need})"
    )
    if min_tasks is None:
        return need, f"at least {need} {unit}: {why}"
    t = check_int(min_tasks, f"min_{unit}", min=2)
    return t, f"at least {t} {unit}, as asked (min_{unit}); {need} {unit} are {why}"


def zero_at(vc, names: list[str]) -> tuple[list[str], str, float, float]:
    """The components ``names`` of ``vc`` (each estimated at 0): how each came to 0, their upper bounds.

    Returns the names, how (a negative ANOVA estimate truncated, or REML at the boundary;
    both exactly 0 in the result), the sum of their upper bounds (NaN when the result has
    no finite interval) and the interval's level.
    """
    raw = dict(zip(vc.component_names, vc.estimates_raw, strict=True))
    how = ", ".join(
        ("" if len(names) == 1 else f"{n}: ")
        + (f"its ANOVA estimate {raw[n]:.3g} truncated" if raw[n] < 0 else
           "REML at the boundary 0" if vc.method == "reml" else "an ANOVA estimate of 0")
        for n in names
    )
    ci = vc.ci
    up = float(sum(float(ci.sel(component=n, ci_bound="upper")) for n in names))
    return names, how, (up if math.isfinite(up) else math.nan), float(ci.attrs.get("ci_prob", np.nan))


def zero_words(zero, what: str) -> str:
    """The opening of the warning for a plan from an agent x task side estimated at 0."""
    names, how, up, prob = zero
    bound = (
        f"; its {prob:.0%} upper bound is {up:.4g}" if len(names) == 1 else
        f"; the sum of their {prob:.0%} upper bounds is {up:.4g}"
    ) if math.isfinite(up) else "; the result gives no finite upper bound for it"
    return (
        f"`components`: {' + '.join(names)} is estimated at 0 ({how}){bound}. An estimate at 0 from "
        f"a pilot is not evidence of no agent x task variance, and {what} rests on it"
    )


def paired_var(s_mt: float, s_e: float, tasks, runs) -> np.ndarray:
    """Var of the mean paired difference, ``(2 s_mt + 2 s_e / R) / T``, by the D-study's rule (one owner)."""
    comp = dict(zip(_allocation.PAIRED.effects, (0.0, 0.0, s_mt, s_e), strict=True))
    sizes = {"agent": 1.0, "task": tasks, "run": runs}
    got = _dstudy.coefficients_at(_allocation.PAIRED, "agent", comp, sizes, warn=False)
    return np.asarray(got["var_paired_diff"], dtype=float)


def _grid_task_facet(vc) -> str | None:
    """The task facet a paired comparison of ``vc``'s objects stands on, for a grid plan; None for other designs.

    The eval shape (agent, task, run) with tasks not nested in clusters (with clusters the
    units of the comparison are clusters, which the floor does not count).
    """
    if vc._legacy is None or vc.measurement != vc._legacy[0]:
        return None
    t = vc._legacy[1]
    return t if t in vc._design.facets and not vc._design.parents[t] else None


def floor_grid(vc, ds: xr.Dataset, criterion: str, min_tasks: int | None, alpha: float | None) -> xr.Dataset:
    """:meth:`VarianceComponentsResult.optimal_allocation`'s floor on tasks, and its warning at agent x task 0.

    The rule of :func:`hierbench.freq.optimal_allocation` (``task_floor``, ``zero_at``), for
    the paired criterion ``var_paired_diff`` (another criterion: only when ``min_tasks`` or
    ``alpha`` is given): where the grid's optimum has fewer tasks than the floor, the best
    feasible design with enough tasks is taken instead (attr ``floor_binding`` names the one
    without the floor).
    """
    t = _grid_task_facet(vc)
    if t is None:
        if min_tasks is not None or alpha is not None:
            raise ValueError(
                f"`min_tasks` and `alpha` set the floor on the tasks of a design of the eval shape (agent, "
                f"task, run, tasks not in clusters); this design is {vc.formula!r} (got min_tasks={min_tasks!r}, "
                f"alpha={alpha!r})"
            )
        return ds
    if criterion != "var_paired_diff" and min_tasks is None and alpha is None:
        return ds  # a coefficient's plan is not a paired test's: a floor only when asked
    t_min, rule = task_floor(min_tasks, 0.05 if alpha is None else alpha)
    opt, binding = ds.attrs["optimum"], ""
    if opt[t] < t_min:
        vals = ds[criterion].where(ds["feasible"] & (ds[f"n_{t}"] >= t_min)).values
        if np.all(np.isnan(vals)):
            raise ValueError(
                f"`budget` {ds.attrs['budget']} buys no design on the grid with the plan's floor, {rule}; raise "
                "the budget, or pass min_tasks= explicitly to plan with fewer tasks"
            )
        where = _allocation.pick(vals, criterion)
        binding = "without it: " + ", ".join(f"{f} = {n}" for f, n in opt.items())
        ds.attrs.update({
            "optimum": {f: int(ds[f"n_{f}"].values[i]) for f, i in zip(opt, where, strict=True)},
            "optimum_value": float(vals[where]), "optimum_cost": float(ds["cost"].values[where]),
        })  # fmt: skip
    ds.attrs.update({"min_tasks": t_min, "min_tasks_rule": rule, "floor_binding": binding})
    a = vc._legacy[0]
    if f"{a}:{t}" in vc.component_names and float(vc.components.sel(component=f"{a}:{t}")) == 0:
        _warn_zero_grid(vc, ds, zero_at(vc, [f"{a}:{t}"]), t)
    return ds


def _warn_zero_grid(vc, ds: xr.Dataset, zero, t: str) -> None:
    """The grid plan's warning at agent x task 0, with its var_paired_diff at the upper bound.

    Also kept as attr ``interaction_at_zero``. The variance at the bound is given for runs
    nested in agent x task cells, the design of :func:`hierbench.freq.optimal_allocation`.
    """
    opt = ds.attrs["optimum"]
    sizes = ", ".join(f"{f} = {n}" for f, n in opt.items())
    text = zero_words(zero, f"this design ({sizes})")
    (a, _, r), up = vc._legacy, zero[2]
    s_e = float(vc.components.sel(component="residual"))
    if math.isfinite(up) and set(opt) == {t, r} and vc._design.parents.get(r) == frozenset({a, t}):
        v = float(ds["var_paired_diff"].sel({f"n_{f}": n for f, n in opt.items()}))
        v_up = float(paired_var(up, s_e, float(opt[t]), float(opt[r])))
        text += (
            f": at the upper bound its var_paired_diff is {v_up:.3g}, not {v:.3g}; optimal_allocation(..., "
            f"sigma2_interaction={up:.4g}, sigma2_residual={s_e:.4g}) plans at the bound"
        )
    ds.attrs["interaction_at_zero"] = text
    warn_user(text, NegativeVarianceComponentWarning)


