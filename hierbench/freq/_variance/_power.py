"""Power and allocation for paired comparisons of two agents.

With agent x task interaction variance ``sigma2_mt`` and run error variance
``sigma2_e`` (from :func:`variance_components`), the per-task difference
``d_t`` of two agents' run means has variance ``s_t + s_e / R`` with
``s_t = 2 sigma2_mt`` and ``s_e = 2 sigma2_e``, so

    Var(dbar) = (s_t + s_e / R) / T.

Power is that of the paired t-test: noncentral t with ``T - 1`` df and
noncentrality ``effect / sqrt(Var(dbar))``. With cost ``c_task`` per task and
``c_run`` per run (budget ``T (c_task + R c_run)``) the variance is minimised
at ``R* = sqrt(s_e c_task / (s_t c_run))``.

From a fit of ``run:(agent*(task:cluster))`` (the default of :func:`variance_components` on
data with a task ``cluster`` coord) ``sigma2_mt`` pools the agent x task-side parts,
``agent:task:cluster + agent:cluster`` (``pool_interactions``, each below 0 taken as 0): a
paired difference on a new task of a new cluster carries both, so tasks are planned as
independent, each from a new cluster. The planners' ``note`` (``attrs`` of an allocation)
names the parts pooled; for tasks that come in clusters like the fit's, give
``clusters=cluster_design(components=...)`` instead.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

import numpy as np
import xarray as xr
from scipy import optimize
from scipy import stats

from ..._base import HierbenchWarning
from ..._base import check_choice
from ..._base import check_int
from ..._base import check_number
from ..._base import check_prob
from ..._base import warn_user
from ..._docs import fill_doc
from . import _dstudy
from . import _intervals
from ._allocation import allocate_clustered
from ._allocation import allocate_paired
from ._clusters import ClusterDesign
from ._clusters import cluster_design
from ._clusters import clustered_facets
from ._clusters import component_values
from ._clusters import pool_interactions
from ._dstudy import warn_extrapolation
from ._floors import paired_var
from ._floors import task_floor
from ._floors import zero_at
from ._floors import zero_words
from ._result import VarianceComponentsResult
from ._result import require_components
from ._warnings import NegativeVarianceComponentWarning

__all__ = [
    "ClusterDesign",
    "DetectableEffect",
    "PowerArray",
    "TasksNeeded",
    "cluster_design",
    "minimum_detectable_effect",
    "optimal_allocation",
    "optimal_runs",
    "paired_power",
    "sample_size_normal",
    "sd_paired_diff",
    "tasks_for_power",
]

Alternative = Literal["two-sided", "greater"]


def _no_interaction(components, fa: str, ft: str, names: list[str]) -> ValueError:
    """The error for components without the agent x task interaction, naming its cause."""
    dropped = [f for f in (fa, ft) if f in components.dropped]
    if dropped:
        cause = (
            f"the G-study has one level of {' and '.join(map(repr, dropped))} (dropped from "
            f"its design {components.formula!r}), so it has no {fa}:{ft} interaction to plan "
            f"with (not a matter of runs: it has {components.n_runs} per cell); fit the "
            f"components on data with >= 2 levels of {fa!r} and of {ft!r}"
        )
    elif _one_run(components, fa, ft, names):
        cause = (
            "they come from one run per cell: the interaction and run error are confounded, "
            "so no plan at more than one run per cell can be made from them (n_runs=1 can: "
            "its per-task difference has variance 2 x residual)"
        )
    else:
        cause = f"they have no {fa}:{ft} interaction component (components {names})"
    return ValueError(
        f"`components`: {cause}; or give `sigma2_interaction` and `sigma2_residual` explicitly"
    )


def _one_run(components, fa: str, ft: str, names: list[str]) -> bool:
    """Whether ``components`` come from one run per cell (the interaction inside the residual)."""
    return f"{fa}:{ft}" not in names and not [f for f in (fa, ft) if f in components.dropped] and (
        components.n_runs < 2 or components.facets[2] in components.confounded
    )


def _sigmas(
    components: VarianceComponentsResult | None,
    sigma2_interaction: float | None,
    sigma2_residual: float | None,
    one_run_only: bool = False,
) -> tuple[float, float]:
    """``(sigma2_interaction, sigma2_residual)`` of the plan.

    ``one_run_only``: the caller plans at one run per cell only, so components from one run
    per cell serve (``(0, residual)``: the residual holds the interaction, ``2 x residual``
    the per-task difference's variance at ``R = 1``).
    """
    if components is not None:
        if sigma2_interaction is not None or sigma2_residual is not None:
            raise ValueError(
                "give either `components` or `sigma2_interaction`/`sigma2_residual`, not both"
            )
        require_components(components)
        if (four := clustered_facets(components)) is not None:
            return _pooled_sigmas(components, four, one_run_only)
        fac = tuple(components.facets)
        nested_formula = len(fac) == 3 and components.formula == f"{fac[2]}:({fac[0]}*{fac[1]})"
        if not nested_formula and (len(fac) != 3 or components.design not in ("nested", "crossed")):
            raise ValueError(
                "`components` must come from the design 'run:(agent*task)' (design='nested') or "
                "'run:(agent*(task:cluster))'; got the design "
                f"{getattr(components, 'formula', components.design)!r} with facets "
                f"{tuple(components._design.facets)}: refit with one of those designs or give "
                "`sigma2_interaction` and `sigma2_residual` explicitly"
            )
        fa, ft, _ = components.facets
        c = components.components
        names = list(c.component.values)
        if one_run_only and _one_run(components, fa, ft, names):
            return 0.0, float(c.sel(component="residual"))
        if f"{fa}:{ft}" not in names:
            raise _no_interaction(components, fa, ft, names)
        if components.design != "nested" and not nested_formula:
            raise ValueError(
                "`components` must come from design='nested': the planning formulas draw fresh "
                "runs for every task (with crossed runs the agent:run term does not shrink with T)"
            )
        return float(c.sel(component=f"{fa}:{ft}")), float(c.sel(component="residual"))
    if sigma2_interaction is None or sigma2_residual is None:
        raise ValueError(
            "give `components` (a VarianceComponentsResult) or both `sigma2_interaction` and "
            "`sigma2_residual`"
        )
    return (
        check_number(sigma2_interaction, "sigma2_interaction", low=0),
        check_number(sigma2_residual, "sigma2_residual", low=0),
    )


def _pooled_sigmas(components, fac, one_run_only: bool) -> tuple[float, float]:
    """``_sigmas`` of a fit of ``run:(agent*(task:cluster))``: ``pool_interactions``'s ``s_mt``, the residual."""
    a, t, c, r = fac
    comp = component_values(components)
    if f"{a}:{t}:{c}" not in comp and not (one_run_only and r in components.confounded):
        cause = (
            f"they come from one run per cell ({components.formula!r}): the {a}:{t}:{c} "
            "interaction and run error are confounded, so no plan at more than one run per cell "
            f"can be made from them (n_runs=1 can: its per-task difference has variance 2 x "
            f"({a}:{c} + residual))"
            if r in components.confounded
            else f"they have no {a}:{t}:{c} interaction component (components {list(comp)})"
        )
        raise ValueError(f"`components`: {cause}; or give `sigma2_interaction` and `sigma2_residual` explicitly")
    return pool_interactions(comp, a, t, c)[1], comp["residual"]


def _pooled_words(components) -> str:
    """What a clustered fit's plan pooled into ``s_mt``, for the planners' note ("" for other fits)."""
    fac = clustered_facets(components)
    if fac is None:
        return ""
    a, t, c, _ = fac
    comp = component_values(components)
    parts, s_mt = pool_interactions(comp, a, t, c)
    low = [n for n, v in parts.items() if v < 0]
    held = "" if f"{a}:{t}:{c}" in parts else f" holding {a}:{t}:{c} (one run per cell)"
    return (
        f"s_mt = {' + '.join(parts)} = {s_mt:.4g}"
        + (f" ({', '.join(low)} below 0 taken as 0)" if low else "")
        + f" and s_e = residual {comp['residual']:.4g}{held}, from {components.formula}: tasks "
        f"planned as independent, each from a new {c}; for tasks in {c}s like the fit's give "
        "clusters=cluster_design(components=...)"
    )


def _with_note(out, components):
    """``out`` with ``_pooled_words`` put before its ``note`` (an allocation: as attr ``components_pooled``)."""
    words = _pooled_words(components) if isinstance(components, VarianceComponentsResult) else ""
    if words and isinstance(out, xr.Dataset):
        out.attrs["components_pooled"] = words
    elif words:
        out.note = "; ".join(x for x in (words, out.note) if x)
    return out


def _counts(values, name: str, low: int) -> np.ndarray:
    """Numbers of tasks or runs: integers >= ``low`` (arrays allowed), as floats."""
    a = np.asarray(values)
    if a.dtype.kind not in "iuf" or a.size == 0:
        raise TypeError(f"`{name}` must be integers >= {low}; got {values!r}")
    a = a.astype(float)
    if not np.all(a >= low) or np.any(a != np.round(a)):
        raise ValueError(f"`{name}` must be integers >= {low}; got {values!r}")
    return a


def sd_paired_diff(
    n_runs: int | np.ndarray = 1,
    *,
    components: VarianceComponentsResult | None = None,
    sigma2_interaction: float | None = None,
    sigma2_residual: float | None = None,
) -> np.ndarray:
    """Return the standard deviation of a per-task difference ``d_t``: ``sqrt(s_t + s_e / R)``.

    Parameters
    ----------
    n_runs : int or array
        Runs per task and agent, ``R``.
    components : VarianceComponentsResult, optional
        Source of ``sigma2_interaction`` (agent:task) and ``sigma2_residual``.
        Components from one run per cell (the interaction inside the residual)
        serve for ``n_runs=1`` only: ``sqrt(2 residual)``. From a fit of
        ``run:(agent*(task:cluster))`` ``sigma2_interaction`` is
        ``agent:task:cluster + agent:cluster`` (each below 0 taken as 0; with one
        run per cell ``agent:cluster`` alone, the residual holding the rest): tasks
        as independent, each from a new cluster (the planners' ``note`` names the
        parts pooled).
    sigma2_interaction, sigma2_residual : float, optional
        The two variances, when not taken from ``components``.

    Returns
    -------
    numpy.ndarray
        ``sqrt(2 sigma2_interaction + 2 sigma2_residual / R)``.

    Examples
    --------
    >>> round(float(sd_paired_diff(4, sigma2_interaction=0.02, sigma2_residual=0.16)), 4)
    0.3464
    """
    R = _counts(n_runs, "n_runs", 1)
    s_mt, s_e = _sigmas(components, sigma2_interaction, sigma2_residual, one_run_only=bool(np.all(R == 1)))
    return np.sqrt(2 * s_mt + 2 * s_e / R)


def _check_common(alpha: float, alternative: str, power: float | None = None) -> None:
    """``alpha`` is the size of the test (its significance level), not an interval level.

    An ``alpha`` of 0.5 or more is computed as given, with a warning: it reads like a
    level (``prob``) passed as the size.
    """
    check_prob(alpha, "alpha")
    if power is not None:
        check_prob(power, "power")
        if power <= alpha:
            # the power at effect 0 is the size alpha, and it grows with the tasks: a target at or
            # below it asks for nothing (tasks_for_power answered its own floor, 2 tasks)
            raise ValueError(
                f"`power` must exceed `alpha`: a test of size alpha rejects at least that often "
                f"whatever the effect and the number of tasks; got power={power!r}, alpha={alpha!r}"
            )
    check_choice(alternative, "alternative", ["two-sided", "greater"])
    if alpha >= 0.5:
        warn_user(
            f"`alpha`={alpha!r} is the size of the test (the chance of a false positive when the "
            f"agents do not differ), not an interval level: this test rejects {alpha:.0%} of "
            f"comparisons of agents that do not differ. Computed as given; if {alpha!r} was meant "
            f"as a confidence level, pass alpha={1 - alpha:.3g}",
            HierbenchWarning,
        )


def _effect_scale(components=None, sd_diff=None, shares: bool = False) -> tuple[float, str] | None:
    """The width ``b - a`` of the score scale an effect is on, and what says so (None: not known).

    The sd of a difference given directly (``sd_diff``, or ``sigma2_*``) is on whatever scale
    the scores are (a 1-5 rubric, 0-9 ratings, yields), so it bounds no effect; shares (``p_a``,
    ``p_b``, ``discordance``) and components fitted to 0/1 scores put it on [0, 1].
    """
    if sd_diff is not None:
        return None
    if shares:
        return 1.0, "shares of 0/1 outcomes (p_a, p_b, discordance)"
    if isinstance(components, VarianceComponentsResult):  # anything else is refused by ``_sd``
        rng = _intervals.score_range(components)
        if rng is not None:
            return rng[1] - rng[0], "components fitted to 0/1 scores"
    return None


def _check_effect(effect, scale: tuple[float, str] | None, *, nonzero: bool = True):
    """The one rule for an effect's range, for every planner here.

    Finite; one non-zero number where a number of tasks is planned for it; and a
    difference of two mean scores on a scale [a, b], so at most ``b - a`` in size, where
    the scale is known (``_effect_scale``). Returns the effect as a float (array).
    """
    eff = np.asarray(check_number(effect, "effect") if nonzero else effect)  # a planner's: one number
    if eff.dtype.kind not in "iuf" or not np.isfinite(eff).all():
        raise ValueError(f"`effect` must be finite numbers; got {effect!r}")
    if nonzero and (eff == 0).any():
        raise ValueError(f"`effect` must be finite and non-zero; got {effect!r}")
    if scale is not None and (np.abs(eff) > scale[0]).any():
        raise ValueError(
            f"`effect` must satisfy |effect| <= {scale[0]:.4g}: it is a difference of two mean "
            f"scores on a scale {scale[0]:.4g} wide ({scale[1]}); got {effect!r}"
        )
    return eff.astype(float) if eff.ndim else float(eff)


def _power(effect, T, sd, alpha, alternative):
    return _power_df(effect, T, T - 1, sd, alpha, alternative)


def _power_df(effect, n_eff, df, sd, alpha, alternative):
    """Noncentral t power with ``df`` degrees of freedom and ``n_eff`` effective tasks."""
    nc = effect * np.sqrt(n_eff) / sd
    if alternative == "two-sided":
        crit = stats.t.ppf(1 - alpha / 2, df)
        nc = np.abs(nc)  # symmetric in the sign of the effect
        # the far tail underflows to NaN in scipy's nct for large nc; it is then ~0
        far = np.nan_to_num(stats.nct.cdf(-crit, df, nc), nan=0.0)
        return stats.nct.sf(crit, df, nc) + far
    return stats.nct.sf(stats.t.ppf(1 - alpha, df), df, nc)


@fill_doc
def paired_power(
    effect: float | np.ndarray,
    n_tasks: int | np.ndarray,
    *,
    n_runs: int | np.ndarray = 1,
    components: VarianceComponentsResult | None = None,
    sigma2_interaction: float | None = None,
    sigma2_residual: float | None = None,
    sd_diff: float | None = None,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    clusters: ClusterDesign | None = None,
) -> np.ndarray:
    """Power of the paired t-test on per-task differences (noncentral t, ``T - 1`` df).

    With ``clusters`` (tasks in clusters, :func:`cluster_design`) it is the power of the
    cluster-level test: ``C_eff - 1`` df for the ``C_eff = T / m*`` equal clusters the
    clusters are worth (``K - 1`` for ``K`` equal ones) and ``T / DEFF`` effective tasks (see
    :class:`ClusterDesign`).

    Parameters
    ----------
    effect : float or array
        True mean difference between the two agents (score scale; at most 1 in
        size when ``components`` come from 0/1 scores).
    n_tasks : int or array
        Number of tasks ``T`` (>= 2).
    n_runs : int or array
        Runs per task and agent ``R``.
    %(power_components)s
    sd_diff : float, optional
        The SD of a per-task difference directly (instead of components).
    alpha : float
        Size of the test: its significance level, the chance of a false
        positive when the agents do not differ (a test size, not an interval
        level; intervals elsewhere take ``prob``). An ``alpha`` of 0.5 or more
        is computed as given, with a warning (it reads like a level).
    alternative : {"two-sided", "greater"}
    clusters : ClusterDesign, optional
        How the tasks fall into clusters; None (default) takes tasks as independent.

    Returns
    -------
    PowerArray
        Power (a numpy array), broadcast over ``effect``, ``n_tasks`` and ``n_runs``,
        for a pair whose per-task difference has the one SD given or, from
        ``components``, the pooled one (root mean square over the pairs of agents).
        A pair's SD grows with its gap, so with components that carry the observed
        pairs (a fit of the eval shape) ``pair_range`` holds the power at the largest
        and smallest pair SD (lowest, highest) and ``note`` says so: held out (audit R)
        the pooled SD's power was 0.77-0.90 of the realised one for mid gaps.

    Examples
    --------
    >>> p = paired_power(0.05, [100, 400], n_runs=3, sigma2_interaction=0.03,
    ...                  sigma2_residual=0.15)
    >>> p.round(2).tolist()
    [0.24, 0.7]
    """
    _check_common(alpha, alternative)
    T = _counts(n_tasks, "n_tasks", 2)
    eff = np.asarray(_check_effect(effect, _effect_scale(components, sd_diff), nonzero=False))
    if clusters is not None:
        n_eff, df, sd = _cluster_units(clusters, T, n_runs, components, sigma2_interaction,
                                       sigma2_residual, sd_diff)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.asarray(_power_df(eff.astype(float), n_eff, df, sd, alpha, alternative)).view(PowerArray)
        return _with_note(out, components)
    sd = _sd(n_runs, components, sigma2_interaction, sigma2_residual, sd_diff)
    _warn_far(components, T, n_runs)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(_power(eff.astype(float), T, sd, alpha, alternative)).view(PowerArray)
        sds = _pair_sds(components, n_runs)
        if sds is not None and np.ndim(sd) == 0:
            lo, hi = (_power(eff.astype(float), T, x, alpha, alternative) for x in (sds.max(), sds.min()))
            out.pair_range = (np.asarray(lo), np.asarray(hi))
            shown = (f"{float(lo):.2f}", f"{float(hi):.2f}") if np.ndim(lo) == 0 else ("see", "pair_range")
            out.note = _note(float(sd), sds, "power", *shown)
    return _with_note(out, components)


#: what the held-out audits measured of the pooled SD, said by every planner's note
POOLED_AUDIT = (
    "held out (audit R, SWE-bench and METR; audit W, METR's 6 agents on all 83 tasks), the pooled SD "
    "over-asked 1.2-2.1x for close pairs and reached power 0.55-0.75, not 0.80, for distant ones "
    "(a pair's SD grows with its gap)"
)


class TasksNeeded(int):
    """:func:`tasks_for_power`'s count (an ``int``) with ``note``: the pooled SD and the pairs' range."""

    note = ""
    pair_range: tuple = ()

    def __repr__(self) -> str:
        return f"{int(self)}  # {self.note}" if self.note else int.__repr__(self)


class DetectableEffect(float):
    """:func:`minimum_detectable_effect`'s effect (a ``float``) with ``note`` and ``pair_range``."""

    note = ""
    pair_range: tuple = ()

    def __repr__(self) -> str:
        return f"{float(self)!r}  # {self.note}" if self.note else float.__repr__(self)


class PowerArray(np.ndarray):
    """:func:`paired_power`'s power (an array) with ``note`` and ``pair_range`` (lowest, highest)."""

    note = ""
    pair_range: tuple = ()

    def __repr__(self) -> str:
        return super().__repr__() + (f"  # {self.note}" if self.note else "")


def _pair_sds(components, n_runs) -> np.ndarray | None:
    """The observed pairs' own SDs of a per-task difference at ``n_runs`` (None: not carried).

    Each pair's variance at the runs made, its run part moved to ``R``: ``v + 2 s_e (1/R -
    1/R_made)`` (at least 1e-12; ``R_made`` the harmonic mean of runs per cell).
    """
    pv = getattr(components, "_pair_var", None)
    if not isinstance(components, VarianceComponentsResult) or pv is None or not np.isfinite(pv).any():
        return None
    R = float(np.min(_counts(n_runs, "n_runs", 1)))
    _, s_e = _sigmas(components, None, None, one_run_only=R == 1)
    run = _plan_facets(components)[1]
    made = _dstudy.effective_runs(components, run) if run in components._cluster_sizes else components.n_runs
    return np.sqrt(np.maximum(pv[np.isfinite(pv)] + 2 * s_e * (1 / R - 1 / made), 1e-12))


def _note(sd: float, sds: np.ndarray, what: str, lo, hi) -> str:
    """The planner's note: the pooled SD it used and the range over the observed pairs."""
    return (
        f"for a pair with the pooled (RMS over pairs) SD of a per-task difference {sd:.3g}; the "
        f"{sds.size} observed pairs' own SDs ({sds.min():.3g}-{sds.max():.3g}) give {what} {lo}-{hi}; "
        + POOLED_AUDIT
    )


def _check_clusters(cd) -> None:
    """``clusters`` of the power and allocation functions must be a ``ClusterDesign``."""
    if not isinstance(cd, ClusterDesign):
        raise TypeError(
            f"`clusters` must be a ClusterDesign (from cluster_design); got {type(cd).__name__}"
        )


def _cluster_units(cd, T, n_runs, components, s_mt, s_e, sd_diff):
    """Effective tasks ``T / DEFF``, df ``C_eff - 1`` (worth in equal clusters) and per-task SD of a clustered plan."""
    _check_clusters(cd)
    c_eff = cd.effective_for(T)
    if np.any(c_eff <= 1):
        raise ValueError(
            f"`n_tasks` = {', '.join(f'{t:g}' for t in np.unique(np.asarray(T)[c_eff <= 1]))} in clusters "
            f"like these (m* = {cd.size_factor:.4g}) are worth at most one equal cluster "
            "((sum m_k)^2 / sum m_k^2): a cluster-level test needs more"
        )
    if cd.sigma2 is not None:
        if components is not None or s_mt is not None or s_e is not None or sd_diff is not None:
            raise ValueError(
                "`clusters` built from `components` carries the variances it plans with; give no "
                "`components`, `sigma2_interaction`, `sigma2_residual` or `sd_diff` beside it"
            )
        var = cd.var_task(_counts(n_runs, "n_runs", 1))
        if np.any(var <= 0):
            raise ValueError("the per-task differences have zero variance: power is undefined")
        sd = np.sqrt(var)
    else:
        sd = _sd(n_runs, components, s_mt, s_e, sd_diff)
    return T / cd.deff(sd**2), c_eff - 1, sd


def _plan_facets(components) -> tuple[str, str, float]:
    """The task and run facets of a plan's components and the tasks fitted (all clusters' tasks)."""
    fac = clustered_facets(components)
    if fac is None:
        _, t, r = components.facets
        return t, r, float(components.sizes.get(t, 0.0))
    _, t, c, r = fac
    return t, r, _dstudy._observed_total(components, t, c)


def _warn_far(components, n_tasks, n_runs) -> None:
    """Planned tasks beyond 10x those the components were fitted on: ``warn_extrapolation``'s rule."""
    if not isinstance(components, VarianceComponentsResult) or len(components.facets) < 2:
        return
    _, _, fitted = _plan_facets(components)
    R = float(np.min(_counts(n_runs, "n_runs", 1)))
    s_mt, s_e = _sigmas(components, None, None, one_run_only=R == 1)
    tot = 2 * s_mt + 2 * s_e / R
    what = "agent x task" if clustered_facets(components) is None else "agent x task and x cluster"
    parts = f"{what} {2 * s_mt / tot:.0%}, run-to-run {2 * s_e / R / tot:.0%}" if tot > 0 else ""
    warn_extrapolation([("tasks", fitted, float(np.max(n_tasks)))], parts)


def _sd(n_runs, components, s_mt, s_e, sd_diff):
    if sd_diff is not None:
        if components is not None or s_mt is not None or s_e is not None:
            raise ValueError("give either `sd_diff` or variance components, not both")
        return np.asarray(check_number(sd_diff, "sd_diff", low=0, low_open=True))
    sd = sd_paired_diff(n_runs, components=components, sigma2_interaction=s_mt, sigma2_residual=s_e)
    if np.any(sd <= 0):
        raise ValueError("the per-task differences have zero variance: power is undefined")
    return sd


def tasks_for_power(
    effect: float,
    *,
    power: float = 0.8,
    n_runs: int = 1,
    components: VarianceComponentsResult | None = None,
    sigma2_interaction: float | None = None,
    sigma2_residual: float | None = None,
    sd_diff: float | None = None,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    max_tasks: int = 10**7,
    clusters: ClusterDesign | None = None,
) -> int:
    """Smallest number of tasks whose paired t-test reaches ``power`` at ``effect``.

    Parameters are those of :func:`paired_power` (``alpha`` the size of the
    test); ``effect`` must be non-zero, and at most 1 in size when the
    components come from 0/1 scores (a difference of two mean scores on [0, 1]);
    with ``sd_diff`` or ``sigma2_*`` the scale is the scores' own and not bounded
    here (one rule for every planner of this module).
    ``max_tasks`` bounds the search: an effect so small that more tasks than
    that would be needed is refused with the normal-approximation count (the
    search itself is a bisection, so it takes a few dozen power evaluations
    at most). With ``clusters`` the search counts whole clusters ``K`` like
    the given ones (their sizes as a template: mean ``m`` and ``m*``) and
    returns the tasks they hold, ``ceil(K m)``.

    Returns
    -------
    TasksNeeded
        Minimal ``T`` (an ``int``, >= 2) with ``paired_power(effect, T, ...) >= power``
        for a pair whose per-task difference has the SD given or, from
        ``components``, the pooled one (root mean square over the pairs of agents).
        A pair's SD grows with its gap (correlation 0.57 on SWE-bench, 0.76 on METR), so
        held out (audits R and W) the pooled count over-asked 1.2-2.1x for close pairs
        and reached power 0.55-0.75 instead of 0.80 for distant ones. With components that
        carry the observed pairs (a fit of the eval shape) ``pair_range`` holds the
        tasks the pairs' own SDs need (smallest, largest; 0: beyond ``max_tasks``) and
        ``note`` (shown in the repr) says so; for 0/1 scores one pair can also be
        planned from its discordance with :func:`sample_size_normal`.

    Raises
    ------
    ValueError
        When ``T`` would exceed ``max_tasks``.

    Examples
    --------
    >>> tasks_for_power(0.03, sd_diff=0.345)  # the normal approximation says 1,039
    1040
    >>> tasks_for_power(0.03, sd_diff=0.345, clusters=cluster_design(tasks_per_cluster=4, icc=0.2))
    1672
    """
    _check_common(alpha, alternative, power)
    effect = _check_effect(effect, _effect_scale(components, sd_diff))
    if alternative == "greater" and effect < 0:
        raise ValueError(f"`effect` must be > 0 for alternative='greater'; got {effect!r}")
    if clusters is not None:
        max_tasks = check_int(max_tasks, "max_tasks", min=2)
        return _clusters_for_power(effect, power, n_runs, components, sigma2_interaction,
                                   sigma2_residual, sd_diff, alpha, alternative, max_tasks, clusters)
    sd = float(_sd(n_runs, components, sigma2_interaction, sigma2_residual, sd_diff))
    max_tasks = check_int(max_tasks, "max_tasks", min=2)
    out = TasksNeeded(_tasks_at(effect, sd, power, alpha, alternative, max_tasks, raise_=True))
    _warn_far(components, out, n_runs)
    sds = _pair_sds(components, n_runs)
    if sds is not None:
        lo, hi = (_tasks_at(effect, x, power, alpha, alternative, max_tasks) for x in (sds.min(), sds.max()))
        out.pair_range = (lo, hi)
        out.note = _note(sd, sds, "tasks needed", f"{lo:,}", f"{hi:,}" if hi else f">{max_tasks:,}")
    return _with_note(out, components)


def _tasks_at(effect, sd, power, alpha, alternative, max_tasks, raise_=False) -> int:
    """The smallest ``T`` reaching ``power`` at SD ``sd`` (0 past ``max_tasks`` unless ``raise_``)."""
    approx = _normal_tasks(effect, sd, alpha, power, alternative)
    t0 = max(2, int(approx) - 2)

    def pw(T: int) -> float:
        return float(_power(abs(effect), float(T), sd, alpha, alternative))

    if t0 > 4 * max_tasks or pw(max_tasks) < power:
        if raise_:
            raise _too_small(effect, max_tasks, power, sd, approx, "")
        return 0
    return _smallest(pw, power, t0, max_tasks)


def _normal_tasks(effect, sd, alpha, power, alternative) -> float:
    """Tasks the normal approximation needs: ``((z_{1-alpha(/2)} + z_power) sd / |effect|)^2`` (unrounded)."""
    za = stats.norm.ppf(1 - alpha / (2 if alternative == "two-sided" else 1))
    return ((za + stats.norm.ppf(power)) * sd / abs(effect)) ** 2


def _too_small(effect, max_tasks, power, sd, approx, what) -> ValueError:
    return ValueError(
        f"`effect`={effect!r} is too small to detect with at most max_tasks={max_tasks:,} tasks "
        f"(power {power} at SD of a per-task difference {sd:.4g} needs about {approx:,.0f} tasks "
        f"by the normal approximation{what}); raise `max_tasks` if that is meant, or use more runs "
        "per task to lower the SD"
    )


def _smallest(pw, power: float, t0: int, n_max: int) -> int:
    """Smallest ``n`` in [2, n_max] with ``pw(n) >= power`` (``pw`` rising; ``pw(n_max) >= power``)."""
    # power rises with n: bisect on [lo, hi] with pw(lo) < power <= pw(hi)
    if pw(2) >= power:
        return 2
    hi = min(max(t0, 3), n_max)
    lo = 2
    while pw(hi) < power:  # the normal start undershoots: double (bounded by n_max)
        lo, hi = hi, min(2 * hi, n_max)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pw(mid) >= power:
            hi = mid
        else:
            lo = mid
    return hi


def _clusters_for_power(effect, power, n_runs, components, s_mt, s_e, sd_diff, alpha, alt, max_tasks, cd):
    """:func:`tasks_for_power` counting whole clusters of ``cd`` (its sizes as a template)."""
    m = cd.tasks_per_cluster
    tmpl = dataclasses.replace(cd, n_tasks=None, n_clusters=None)
    _, _, sd = _cluster_units(tmpl, np.asarray(2 * cd.size_factor), n_runs, components, s_mt, s_e, sd_diff)
    sd = float(sd)
    deff = float(tmpl.deff(sd**2))
    k_max = int(max_tasks // m)
    approx = _normal_tasks(effect, sd, alpha, power, alt) * deff
    k0 = max(2, int(approx / m) - 2)

    def pw(k: int) -> float:  # df C_eff - 1: none below one equal cluster's worth
        df = k * m / cd.size_factor - 1.0
        return float(_power_df(abs(effect), k * m / deff, df, sd, alpha, alt)) if df > 0 else 0.0

    if k_max < 2 or k0 > 4 * k_max or pw(k_max) < power:
        raise _too_small(effect, max_tasks, power, sd, approx, f" with design effect {deff:.4g}")
    return math.ceil(_smallest(pw, power, k0, k_max) * m - 1e-9)


def minimum_detectable_effect(
    n_tasks: int,
    *,
    power: float = 0.8,
    n_runs: int = 1,
    components: VarianceComponentsResult | None = None,
    sigma2_interaction: float | None = None,
    sigma2_residual: float | None = None,
    sd_diff: float | None = None,
    alpha: float = 0.05,
    alternative: Alternative = "two-sided",
    clusters: ClusterDesign | None = None,
) -> float:
    """Smallest true difference detected with probability ``power`` by ``n_tasks`` tasks.

    Parameters are those of :func:`paired_power` (``alpha`` the size of the test;
    with ``clusters`` the cluster-level test). ``power`` must exceed ``alpha``,
    the power at effect 0. With components fitted to 0/1 scores an answer above
    1 (no difference of mean 0/1 scores is that large) is refused.

    Returns
    -------
    DetectableEffect
        The positive ``effect`` (a ``float``) solving ``paired_power(effect, n_tasks, ...)
        = power`` for a pair with the SD given or the pooled (root mean square over
        pairs) one; ``pair_range`` and ``note`` as in :func:`tasks_for_power` (the
        effect scales with the SD at a fixed number of tasks).

    Examples
    --------
    >>> round(minimum_detectable_effect(100, sd_diff=0.345), 4)
    0.0976
    """
    _check_common(alpha, alternative, power)
    n_tasks = check_int(n_tasks, "n_tasks", min=2)
    if clusters is not None:
        n_eff, df, sd = map(float, _cluster_units(clusters, np.asarray(float(n_tasks)), n_runs,
                                                  components, sigma2_interaction, sigma2_residual,
                                                  sd_diff))
    else:
        sd = float(_sd(n_runs, components, sigma2_interaction, sigma2_residual, sd_diff))
        n_eff = float(n_tasks)
        df = n_eff - 1
        _warn_far(components, n_tasks, n_runs)

    def f(e: float) -> float:
        return float(_power_df(e, n_eff, df, sd, alpha, alternative)) - power

    hi = sd
    while f(hi) < 0:
        hi *= 2
    mde = DetectableEffect(optimize.brentq(f, 0.0, hi, xtol=1e-12))
    scale = _effect_scale(components, sd_diff)
    if scale is not None and mde > scale[0]:
        raise ValueError(
            f"no effect on a scale {scale[0]:.4g} wide ({scale[1]}) is detected with power "
            f"{power!r} by {n_tasks} tasks: it would take {mde:.4g}; plan more tasks or runs"
        )
    sds = _pair_sds(components, n_runs) if clusters is None else None
    if sds is not None:  # at fixed T the power is a function of effect / sd: the effect scales with sd
        mde.pair_range = (mde * sds.min() / sd, mde * sds.max() / sd)
        mde.note = _note(sd, sds, "detectable effects", *(f"{x:.3g}" for x in mde.pair_range))
    return _with_note(mde, components)


def _clustered(clusters, cost_cluster, choose) -> bool:
    """Whether an allocation is asked about clusters (a non-bool ``choose`` is, to be refused)."""
    return clusters is not None or cost_cluster is not None or not (
        isinstance(choose, (bool, np.bool_)) and not choose
    )


def _cluster_setup(clusters, components, s_mt, s_e, cost_task, cost_run, cost_cluster, choose) -> dict:
    """Check a clustered allocation's inputs; return its costs, variance parts, sizes and design effect.

    ``parts`` = (s_c, s_w, s_e) with ``Var(dbar) = (m* s_c + s_w + s_e / R) / (K m)``. From a
    fit with a cluster facet: twice the agent x cluster, agent x task and run variances.
    From an ICC or design effect: ``s_c = 0`` and ``DEFF`` times the task plan's
    ``(2 s_mt, 2 s_e)``, the model of :func:`paired_power` (``DEFF`` fixed whatever ``R``).
    """
    if not isinstance(choose, (bool, np.bool_)):
        raise TypeError(f"`choose_cluster_size` must be True or False; got {choose!r}")
    if clusters is None and (cost_cluster is not None or choose):
        what = "`cost_cluster`" if cost_cluster is not None else "`choose_cluster_size=True`"
        raise ValueError(f"{what} plans clusters: give `clusters` (a ClusterDesign) too")
    _check_clusters(clusters)
    if choose and cost_cluster is None:
        raise ValueError(
            "`choose_cluster_size=True` needs `cost_cluster` (what a new cluster costs beyond its "
            "tasks; 0 allowed): without a price on clusters, clusters of one task always win"
        )
    c_cl = 0.0 if cost_cluster is None else check_number(cost_cluster, "cost_cluster", low=0)
    costs = (c_cl, check_number(cost_task, "cost_task", low=0),
             check_number(cost_run, "cost_run", low=0, low_open=True))
    if clusters.sigma2 is not None:
        if components is not None or s_mt is not None or s_e is not None:
            raise ValueError(
                "`clusters` built from `components` carries the variances it plans with; give no "
                "`components`, `sigma2_interaction` or `sigma2_residual` beside it"
            )
        if clusters.one_run_only:
            raise ValueError(
                f"`clusters` ({clusters.source}) cannot choose runs per task: from one run per cell "
                "the agent x task and run-to-run variances are not told apart; plan the tasks with "
                "tasks_for_power(..., n_runs=1, clusters=...) or fit data with repeated runs"
            )
        parts, deff = tuple(2 * v for v in clusters.sigma2), None
        if parts[0] + parts[1] + parts[2] == 0:
            raise ValueError("`clusters`: its three variances are 0, so every allocation has zero variance")
    elif choose:
        raise ValueError(
            "`choose_cluster_size=True` needs the agent x cluster variance apart from the agent x "
            "task one, and `clusters` gives only "
            f"{'an ICC' if clusters.icc is not None else 'a design effect'} ({clusters.source}): "
            "build it with cluster_design(components=...) from a fit of run:(agent*(task:cluster))"
        )
    else:
        s_mt, s_e = _sigmas(components, s_mt, s_e)
        if s_mt == 0 and s_e == 0:
            raise ValueError(
                "`sigma2_interaction` and `sigma2_residual` are both 0: every allocation has zero "
                "variance, so there is no optimal allocation"
            )
        deff = float(clusters.deff())
        parts = (0.0, 2 * s_mt * deff, 2 * s_e * deff)
    sizes = None if choose else (clusters.tasks_per_cluster, clusters.size_factor)
    return {"costs": costs, "parts": parts, "sizes": sizes, "deff": deff, "source": clusters.source}


def _clustered_r_star(setup: dict) -> float:
    """``R*`` of a clustered plan: ``sqrt(s_e c'_task / (s'_w c_run))`` (see :func:`optimal_runs`)."""
    (c_cl, c_task, c_run), (s_c, s_w, s_e) = setup["costs"], setup["parts"]
    if setup["sizes"] is None:  # sizes chosen too: the cluster terms drop out
        num, den = s_e * c_task, s_w * c_run
    else:
        m, m_star = setup["sizes"]
        num, den = s_e * (c_task + c_cl / m), (s_w + m_star * s_c) * c_run
    return math.inf if den == 0 else math.sqrt(num / den)


# --------------------------------------------------------------------------- a plan's floors
# The rules (the fewest tasks, the words at agent x task 0) are ``_result``'s, one owner for the
# planners here and VarianceComponentsResult.optimal_allocation.


def interaction_at_zero(components) -> tuple[list[str], str, float, float] | None:
    """The agent x task-side components a paired plan reads (``pool_interactions``), when every one is at 0.

    ``zero_at``'s description of them (names, how each came to 0, the sum of their upper
    bounds, the level); None when ``components`` is not a G-study or the pooled ``s_mt`` is
    above 0.
    """
    if not isinstance(components, VarianceComponentsResult) or components.measurement is None:
        return None
    fac = clustered_facets(components)
    a, t, c = fac[:3] if fac is not None else (*components.facets[:2], "cluster")
    parts, s_mt = pool_interactions(component_values(components), a, t, c)
    return zero_at(components, list(parts)) if parts and s_mt == 0 else None


def _paired_plan(budget, cost_task, cost_run, s_mt, s_e, r_star, t_min, rule) -> xr.Dataset:
    """``allocate_paired``'s plan, or where it has fewer than ``t_min`` tasks the best plan of ``t_min`` or more.

    Attrs ``min_tasks`` and ``min_tasks_rule`` state the floor; ``floor_binding`` whether it
    changed the plan (the plan without it, in words).
    """
    out = allocate_paired(budget, cost_task, cost_run, s_mt, s_e, r_star)
    binding = ""
    if int(out["n_tasks"]) < t_min:
        binding = f"without it: {int(out['n_tasks'])} tasks x {int(out['n_runs'])} runs"
        most = int(budget // (cost_task + cost_run))
        if most < t_min:
            raise ValueError(
                f"`budget` {budget} pays for {most} tasks with one run each ({cost_task} + {cost_run} a "
                f"task), fewer than the plan's floor, {rule}; raise the budget, or pass min_tasks= "
                "explicitly to plan with fewer tasks"
            )
        out = allocate_paired(budget, cost_task, cost_run, s_mt, s_e, r_star, t_min)  # the same search, capped
    out.attrs.update({"min_tasks": t_min, "min_tasks_rule": rule, "floor_binding": binding})
    return out


def _r_star(s_mt: float, s_e: float, cost_task: float, cost_run: float) -> float:
    """``R* = sqrt(s_e c_task / (s_mt c_run))``, ``inf`` at ``s_mt = 0`` (see :func:`optimal_runs`)."""
    if s_mt == 0 and s_e == 0:
        raise ValueError(
            "`sigma2_interaction` and `sigma2_residual` are both 0: every allocation has zero "
            "variance, so there is no optimal number of runs"
        )
    if s_mt == 0:
        return math.inf
    return math.sqrt(s_e * cost_task / (s_mt * cost_run))


def _warn_zero_plan(out: xr.Dataset, zero, s_e: float, t_min: int, rule: str) -> None:
    """Warn of a paired plan made at an agent x task side estimated at 0, with the plan at its upper bound.

    ``out`` gains ``var_mean_diff_upper`` (its variance at the bound) and attrs
    ``sigma2_interaction_upper``, ``plan_at_upper`` and ``interaction_at_zero`` (the words).
    """
    T, R, v = int(out["n_tasks"]), int(out["n_runs"]), float(out["var_mean_diff"])
    text = zero_words(zero, f"this plan ({T} tasks x {R} runs, Var(dbar) {v:.3g})")
    up = zero[2]
    if math.isfinite(up):
        v_up = float(paired_var(up, s_e, float(T), float(R)))
        B, c_t, c_r = out.attrs["budget"], out.attrs["cost_task"], out.attrs["cost_run"]
        at = _paired_plan(B, c_t, c_r, up, s_e, _r_star(up, s_e, c_t, c_r), t_min, rule)
        plan = f"{int(at['n_tasks'])} tasks x {int(at['n_runs'])} runs, Var(dbar) {float(at['var_mean_diff']):.3g}"
        text += (
            f": at the upper bound this plan's Var(dbar) is {v_up:.3g} ({v_up / v:.3g} times); the plan at the "
            f"bound is {plan} (sigma2_interaction={up:.4g}, sigma2_residual={s_e:.4g} plans there)"
        )
        out["var_mean_diff_upper"] = v_up
        out.attrs.update({"sigma2_interaction_upper": up, "plan_at_upper": plan})
    else:
        text += ": give sigma2_interaction= a value you trust to plan at it"
    out.attrs["interaction_at_zero"] = text
    warn_user(text, NegativeVarianceComponentWarning)


@fill_doc
def optimal_runs(
    *,
    cost_task: float,
    cost_run: float,
    components: VarianceComponentsResult | None = None,
    sigma2_interaction: float | None = None,
    sigma2_residual: float | None = None,
    clusters: ClusterDesign | None = None,
    cost_cluster: float | None = None,
    choose_cluster_size: bool = False,
) -> float:
    """Cost-optimal runs per task ``R* = sqrt(s_e c_task / (s_t c_run))`` (continuous).

    With ``clusters`` (tasks in clusters of mean size ``m``, size-weighted mean ``m*``; a
    cluster costs ``cost_cluster`` beyond its tasks) the mean difference over ``K`` clusters
    has ``Var = (m* s_c + s_w + s_e / R) / (K m)`` (``s_c``, ``s_w``, ``s_e``: twice the agent
    x cluster, agent x task within a cluster and run variances) at cost
    ``K (c_cluster + m c_task + m R c_run)``: per task, the task plan with ``s_t -> s_w + m* s_c``
    and ``c_task -> c_task + c_cluster / m``, so at the design's sizes

        R* = sqrt(s_e (c_task + c_cluster / m) / ((s_w + m* s_c) c_run)),

    fewer runs than independent tasks need when the clusters differ (``s_c > 0``) and
    clusters are free. With ``choose_cluster_size`` the sizes are chosen too and the
    cluster terms drop out: ``R* = sqrt(s_e c_task / (s_w c_run))`` at
    ``m* = sqrt(s_w c_cluster / (s_c c_task))`` (see :func:`optimal_allocation`). A
    ``clusters`` with only an ICC or a design effect plans as :func:`paired_power` does,
    with the design effect the same whatever ``R``: it multiplies both parts, so ``R*`` is
    the task plan's (``c_task + c_cluster / m`` its task cost) and the sizes cannot be chosen.

    Parameters
    ----------
    cost_task : float
        Cost of adding a task (writing, environment set-up), >= 0.
    cost_run : float
        Cost of one run of one agent on one task, > 0.
    %(power_components)s
        None of them with a ``clusters`` that carries variances.
    clusters : ClusterDesign, optional
        How the tasks fall into clusters (:func:`cluster_design`); None: independent tasks.
    cost_cluster : float, optional
        Cost of a new cluster beyond its tasks (0 when not given), with ``clusters``.
    choose_cluster_size : bool
        Choose the tasks per cluster too (needs ``cost_cluster`` and a ``clusters`` with
        variances); else the design's sizes are kept.

    Returns
    -------
    float
        ``R*``; ``inf`` when there is no variance between tasks (repeats are then
        the only noise to average), 0 when tasks are free. From ``components`` with the
        agent x task side estimated at 0 (a truncated ANOVA estimate, or REML at the
        boundary) ``inf`` rests on that estimate: a :class:`NegativeVarianceComponentWarning`
        gives its upper bound and ``R*`` there.

    Examples
    --------
    >>> optimal_runs(cost_task=10.0, cost_run=1.0, sigma2_interaction=0.02, sigma2_residual=0.2)
    10.0
    >>> cd = cluster_design(tasks_per_cluster=4, sigma2=(0.01, 0.02, 0.2))
    >>> optimal_runs(cost_task=10.0, cost_run=1.0, clusters=cd)  # sqrt(0.4 x 10 / (0.04 + 4 x 0.02))
    5.773502691896258
    """
    if _clustered(clusters, cost_cluster, choose_cluster_size):
        return _clustered_r_star(_cluster_setup(clusters, components, sigma2_interaction,
                                                sigma2_residual, cost_task, cost_run, cost_cluster,
                                                choose_cluster_size))
    s_mt, s_e = _sigmas(components, sigma2_interaction, sigma2_residual)
    cost_task = check_number(cost_task, "cost_task", low=0)
    cost_run = check_number(cost_run, "cost_run", low=0, low_open=True)
    r_star = _r_star(s_mt, s_e, cost_task, cost_run)
    if (zero := interaction_at_zero(components)) is not None:
        up = zero[2]
        at = f": at that bound R* = {_r_star(up, s_e, cost_task, cost_run):.4g}" if math.isfinite(up) else ""
        warn_user(zero_words(zero, f"R* = {r_star:g}") + at, NegativeVarianceComponentWarning)
    return r_star


def _plan_clusters(budget, components, s_mt, s_e, cost_task, cost_run, clusters, cost_cluster, choose,
                   min_tasks, alpha, min_clusters) -> xr.Dataset:
    """:func:`optimal_allocation` with clusters: the floor is on clusters, the units of the paired test."""
    if min_tasks is not None:
        raise ValueError(
            f"`min_tasks` sets the floor of a plan of independent tasks (got min_tasks={min_tasks!r}); with "
            "`clusters` the units of the paired test are clusters: give `min_clusters`"
        )
    budget = check_number(budget, "budget", low=0, low_open=True)
    setup = _cluster_setup(clusters, components, s_mt, s_e, cost_task, cost_run, cost_cluster, choose)
    k_min, rule = task_floor(min_clusters, 0.05 if alpha is None else alpha, unit="clusters")
    out = _clustered_allocation(budget, setup)
    binding = ""
    if int(out["n_clusters"]) < k_min:
        binding = f"without it: {int(out['n_clusters'])} clusters x {int(out['n_runs'])} runs"
        try:
            out = _clustered_allocation(budget, setup, k_min)
        except ValueError as err:
            raise ValueError(f"{err}: the plan's floor is {rule}; raise the budget, or pass min_clusters= "
                             "explicitly to plan with fewer clusters") from None
    out.attrs.update({"min_clusters": k_min, "min_clusters_rule": rule, "floor_binding": binding})
    return _with_note(out, components)


def _plan_tasks(budget, components, s_mt, s_e, cost_task, cost_run, min_tasks, alpha) -> xr.Dataset:
    """:func:`optimal_allocation` of independent tasks: the floor, and the warning at an interaction at 0."""
    s_mt, s_e = _sigmas(components, s_mt, s_e)
    r_star = _r_star(s_mt, s_e, check_number(cost_task, "cost_task", low=0),
                     check_number(cost_run, "cost_run", low=0, low_open=True))
    budget = check_number(budget, "budget", low=0, low_open=True)
    t_min, rule = task_floor(min_tasks, 0.05 if alpha is None else alpha)
    out = _paired_plan(budget, cost_task, cost_run, s_mt, s_e, r_star, t_min, rule)
    if (zero := interaction_at_zero(components)) is not None:
        _warn_zero_plan(out, zero, s_e, t_min, rule)
    return _with_note(out, components)


@fill_doc
def optimal_allocation(
    budget: float,
    *,
    cost_task: float,
    cost_run: float,
    components: VarianceComponentsResult | None = None,
    sigma2_interaction: float | None = None,
    sigma2_residual: float | None = None,
    clusters: ClusterDesign | None = None,
    cost_cluster: float | None = None,
    choose_cluster_size: bool = False,
    min_tasks: int | None = None,
    alpha: float | None = None,
    min_clusters: int | None = None,
) -> xr.Dataset:
    """Integer (tasks, runs) for a budget ``B = T (c_task + R c_run)`` minimising Var(dbar).

    For each number of runs per task ``R`` the most tasks the budget pays for (``T = floor(B /
    (c_task + R c_run))``, at least ``min_tasks``) is taken, and the ``R`` with the smallest
    ``Var(dbar) = (2 s_mt + 2 s_e / R) / T`` wins (the smallest ``R`` on a tie). The search is
    exact: every ``R`` whose continuous bound ``(2 s_mt + 2 s_e / R)(c_task + R c_run) / B`` can
    beat the integers around ``R*`` (``search="exact"``), unless that is more than two million
    values (then the integers around ``R*``, 1 and the most runs ``min_tasks`` tasks allow:
    ``search="integers around R*"``); those integers alone gave up to 20% more variance in a
    quarter of random cases. The paired case of :meth:`VarianceComponentsResult.optimal_allocation`
    (``run:(agent*task)``, criterion ``var_paired_diff``, one agent's runs costed): the same cost
    rule, D-study variance, optimum and floor. An agent x task side estimated at 0 (``R* = inf``)
    is used as given, with a :class:`NegativeVarianceComponentWarning`: its upper bound, this
    plan's variance there, the plan there.

    With ``clusters`` the unit bought is a cluster (``B = K (c_cluster + m c_task + m R c_run)``)
    and ``Var(dbar) = (m* s_c + s_w + s_e / R) / (K m)`` (see :func:`optimal_runs`): the same
    search with the cluster as the task, at the design's sizes (a template: the budget sets
    ``K``). With ``choose_cluster_size`` equal clusters of ``m`` tasks are searched too, every
    ``m`` whose bound ``(sqrt((s_c + s_w / m)(c_cluster + m c_task)) + sqrt(s_e c_run))^2 / B`` can
    win (Cauchy-Schwarz; continuous optimum ``m* = sqrt(s_w c_cluster / (s_c c_task))``, ``R* =
    sqrt(s_e c_task / (s_w c_run))``). The paired test is then over clusters, so the floor is on
    them (``min_clusters``; without it a plan chose 2 clusters where ``s_c`` is near 0 and sizes
    are chosen). The variance is minimised, not the power: check a plan with :func:`paired_power`.

    Parameters
    ----------
    budget : float
        Total budget, > 0.
    cost_task, cost_run, clusters, cost_cluster, choose_cluster_size
        As in :func:`optimal_runs`.
    %(power_components)s
    min_tasks, min_clusters : int, optional
        The fewest tasks (>= 2; with ``clusters``, clusters); default the fewest whose exact
        two-sided sign-flip test can reach ``alpha`` (``2^(1 - T) <= alpha``: 6 at 0.05).
    alpha : float, optional
        The level of the paired test the plan is for (default 0.05).

    Returns
    -------
    xarray.Dataset
        Scalars ``r_star``, ``n_runs``, ``n_tasks``, ``var_mean_diff``, ``cost``; attrs ``budget``,
        ``cost_task``, ``cost_run``, ``search``, ``min_tasks``, ``min_tasks_rule``, ``floor_binding``
        (the plan without the floor where it bound); at agent x task 0 ``var_mean_diff_upper``, attrs
        ``sigma2_interaction_upper``, ``plan_at_upper``, ``interaction_at_zero``. With ``clusters``
        also ``n_clusters``, ``tasks_per_cluster`` (mean), ``design_effect`` (at the runs chosen;
        ``m_star`` when sizes are chosen), ``n_tasks`` the clusters times the mean size (rounded
        up); attrs ``unit="clusters"``, ``cost_cluster``, ``cluster_sizes``, ``design_effect_source``,
        and ``min_clusters``, ``min_clusters_rule``, ``floor_binding`` in place of the task floor's.

    Notes
    -----
    Checked on held-out tasks (``benchmarks/bench_allocation_heldout.py``: METR, 21 pairs, tasks split
    in halves 10 times): runs chosen from one half's components came within 1.2-5.5% of the other
    half's best variance per budget (mean; 90th percentile <= 13%) at ``c_task / c_run`` of 0.5 to
    32, where 1, 3 or 8 runs lost up to 2.4 times at some ratio; at 0.5, 1 run did as well.

    Examples
    --------
    >>> a = optimal_allocation(1000.0, cost_task=10.0, cost_run=1.0,
    ...                        sigma2_interaction=0.02, sigma2_residual=0.2)
    >>> int(a.n_runs), int(a.n_tasks), a.attrs["min_tasks"]
    (10, 50, 6)

    METR-like components (a ``run:(agent*(task:cluster))`` fit of METR's 83 tasks in 36
    families: agent x family 0.016, agent x task 0.028, run 0.059 on the success scale;
    without the family facet agent x task is 0.043), families of 1 to 7 tasks as METR's:

    >>> cd = cluster_design([1] * 19 + [2] * 5 + [3] * 5 + [5] * 4 + [6] * 2 + [7],
    ...                     sigma2=(0.016, 0.028, 0.059))
    >>> c = optimal_allocation(5000.0, cost_task=10.0, cost_run=1.0, clusters=cd)
    >>> int(c.n_clusters), int(c.n_tasks), int(c.n_runs), round(float(c.design_effect), 2)
    (166, 383, 3, 1.67)

    (as independent tasks, 0.043 and 0.059 buy 357 tasks x 4 runs, ``R* = 3.7``; the
    clusters bring ``R*`` to 2.6 and the variance up by 1.72 times).
    """
    if _clustered(clusters, cost_cluster, choose_cluster_size):
        return _plan_clusters(budget, components, sigma2_interaction, sigma2_residual, cost_task, cost_run,
                              clusters, cost_cluster, choose_cluster_size, min_tasks, alpha, min_clusters)
    if min_clusters is not None:
        raise ValueError(f"`min_clusters` ({min_clusters!r}) sets the floor of a plan of clusters: give `clusters` "
                         "too, or `min_tasks` for a plan of independent tasks")
    return _plan_tasks(budget, components, sigma2_interaction, sigma2_residual, cost_task, cost_run, min_tasks,
                       alpha)


def _clustered_allocation(budget: float, setup: dict, k_min: int = 2) -> xr.Dataset:
    """The result of :func:`optimal_allocation` with clusters (at least ``k_min``): the unit counted and the design effect."""
    (c_cl, c_task, c_run), (s_c, s_w, s_e) = setup["costs"], setup["parts"]
    got = allocate_clustered(budget, setup["costs"], setup["parts"], setup["sizes"], k_min)
    m, K, R = got["m"], got["n_clusters"], got["n_runs"]
    m_star = m if setup["sizes"] is None else setup["sizes"][1]
    if setup["deff"] is not None:  # an ICC or design effect: fixed whatever R
        deff, how = setup["deff"], f"{setup['source']}, the same whatever the runs per task"
        r_star = _clustered_r_star(setup)
    else:  # 1 + (m* - 1) ICC(R), ICC(R) = s_c / (s_c + s_w + s_e / R)
        deff = (m_star * s_c + s_w + s_e / R) / (s_c + s_w + s_e / R)
        how = f"1 + (m* - 1) ICC at R = {R}, from {setup['source']}"
        r_star = got["r_star"] if setup["sizes"] is None else _clustered_r_star(setup)
    data = {
        "r_star": r_star,
        "n_runs": R,
        "n_clusters": K,
        "tasks_per_cluster": int(m) if setup["sizes"] is None else m,
        "n_tasks": math.ceil(K * m - 1e-9),
        "var_mean_diff": got["var"],
        "design_effect": float(deff),
        "cost": K * (c_cl + m * (c_task + R * c_run)),
    }
    if setup["sizes"] is None:
        data["m_star"] = got["m_star"]
        sizes = f"chosen: {int(m)} tasks per cluster"
    else:
        sizes = f"fixed by `clusters`: mean {m:.4g} tasks, m* = {m_star:.4g} (a template for any number)"
    attrs = {"budget": budget, "cost_task": c_task, "cost_run": c_run, "cost_cluster": c_cl,
             "search": got["search"], "unit": "clusters", "cluster_sizes": sizes,
             "design_effect_source": how}
    return xr.Dataset(data, attrs=attrs)


def sample_size_normal(
    effect: float,
    *,
    paired: bool,
    sd_diff: float | None = None,
    p_a: float | None = None,
    p_b: float | None = None,
    discordance: float | None = None,
    alpha: float = 0.05,
    power: float = 0.8,
) -> int:
    """Normal-approximation tasks needed: ``ceil(((z_{1-alpha/2} + z_power) sd / effect)^2)``.

    Parameters
    ----------
    effect : float
        Difference to detect (e.g. 0.03 for 65% vs 68%), non-zero; with shares
        (``p_a``, ``p_b``, ``discordance``) ``|effect| <= 1``, with ``sd_diff``
        on the scale of the scores that sd is on.
        With ``p_a`` and ``p_b`` it must be their difference ``p_b - p_a`` (either
        sign: the count depends on ``|effect|``); one that is not is refused.
    paired : bool
        Unpaired: ``sd = sqrt(p_a (1 - p_a) + p_b (1 - p_b))`` (tasks per
        agent). Paired: ``sd = sqrt(discordance - effect^2)`` where
        ``discordance`` is the share of tasks on which the agents disagree.
    sd_diff : float, optional
        Give the SD directly instead.
    p_a, p_b : float, optional
        Success rates (unpaired).
    discordance : float, optional
        Share of discordant tasks (paired, binary scores).
    alpha : float
        Size of the two-sided test (its significance level; not an interval level).
    power : float
        Chance of detecting ``effect``.

    Returns
    -------
    int

    Examples
    --------
    >>> sample_size_normal(0.03, paired=False, p_a=0.65, p_b=0.68)
    3882
    >>> sample_size_normal(0.03, paired=True, discordance=0.12)
    1039
    """
    check_prob(alpha, "alpha")
    check_prob(power, "power")
    effect = _check_effect(effect, _effect_scale(sd_diff=sd_diff, shares=True))
    if not isinstance(paired, (bool, np.bool_)):
        raise TypeError(f"`paired` must be True or False; got {paired!r}")
    if p_a is not None and p_b is not None:
        _check_shares_effect(effect, p_a, p_b)
    if sd_diff is not None:
        sd_diff = check_number(sd_diff, "sd_diff", low=0, low_open=True)
    else:
        sd_diff = _sd_normal(effect, paired, p_a, p_b, discordance)
    return math.ceil(_normal_tasks(effect, sd_diff, alpha, power, "two-sided"))


def _check_shares_effect(effect: float, p_a, p_b) -> None:
    """``effect`` must be ``p_b - p_a`` (up to sign): the shares and the difference describe one comparison."""
    for name, v in (("p_a", p_a), ("p_b", p_b)):
        if not 0 <= check_number(v, name) <= 1:
            raise ValueError(f"`{name}` must lie in [0, 1]; got {v!r}")
    diff = float(p_b) - float(p_a)
    if not math.isclose(abs(effect), abs(diff), rel_tol=1e-9, abs_tol=1e-12):
        raise ValueError(
            f"`effect` must be the difference of `p_a` and `p_b` (p_b - p_a = {diff:.6g}, either "
            f"sign) when both are given; got effect={effect!r}, p_a={p_a!r}, p_b={p_b!r}: give "
            f"p_b = p_a + effect for the rates under the alternative, or `sd_diff` alone"
        )


def _sd_normal(effect: float, paired: bool, p_a, p_b, discordance) -> float:
    """Return the SD of a per-task difference from the shares (see :func:`sample_size_normal`)."""
    if paired:
        if discordance is None:
            raise ValueError("paired=True needs `discordance` (or `sd_diff`)")
        check_number(discordance, "discordance")
        if not 0 <= discordance <= 1 or discordance < effect**2:
            raise ValueError(
                f"`discordance` must satisfy effect^2 <= discordance <= 1; got {discordance!r}"
            )
        sd = math.sqrt(discordance - effect**2)
    else:
        if p_a is None or p_b is None:
            raise ValueError("paired=False needs `p_a` and `p_b` (or `sd_diff`)")
        for name, v in (("p_a", p_a), ("p_b", p_b)):
            if not 0 <= check_number(v, name) <= 1:
                raise ValueError(f"`{name}` must lie in [0, 1]; got {v!r}")
        sd = math.sqrt(p_a * (1 - p_a) + p_b * (1 - p_b))
    if sd == 0:
        raise ValueError(
            "the per-task differences have zero variance at these shares "
            f"(p_a={p_a!r}, p_b={p_b!r}, discordance={discordance!r}): every task would show "
            "the same difference, so no sample size follows"
        )
    return sd
