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
Profile-likelihood intervals from the REML likelihood (components, and E rho^2 /
Phi with the coefficient fixed and the components maximised;
:mod:`hierbench.freq._variance._profile`), for REML fits and balanced ANOVA fits
alike (a balanced fit's profile is of the REML likelihood around its maximum; the
estimates shown stay the ANOVA ones). Wald on the log-variance scale (from the
exact sampling variance of the ANOVA estimators, or the REML information) on
request, ``ci="wald"``; it gives an estimate at 0 the interval ``[0, z * se]``,
which has no coverage guarantee. Measured coverage of nominal 95% intervals on
balanced data, 300 seeded data sets per row (audit G 2's designs; 2026-12-07),
Wald log-normal -> profile ("22 above": the truth was above the Wald interval 22 times):

======================================  ==========  ===============================
design (true components)                component   Wald -> profile
======================================  ==========  ===============================
``rep:batch`` 6 x 5 (batch 0.2, e 1)    batch       0.903 -> 0.980 (Wald: 22 above)
the same, 68 estimates truncated at 0   batch       46/68 -> 68/68
``rep:batch`` 10 x 4 (batch 0.05, e 1)  batch       0.900 -> 0.990 (Wald: 30 below)
``run:(agent*task)`` 10 x 30 x 2 (*)    agent:task  0.900 -> 0.940 (Wald: 21 below)
the same                                agent       0.977 -> 0.973
the same                                task        0.967 -> 0.967
the same                                residual    0.937 -> 0.937
the same                                E rho^2     0.980 -> 0.980
``run:(agent*task)`` 5 x 20 x 3 (*)     agent:task  0.890 -> 0.933 (Wald: 23 below)
the same                                agent       0.987 -> 0.943
the same                                task        0.967 -> 0.947
the same                                residual    0.953 -> 0.950
the same                                E rho^2     0.993 -> 0.940
======================================  ==========  ===============================

(*) agent 0.03, task 0.05, agent:task 0.02, residual 0.15. Seeds 7, 8, 12, 13.
(Monte Carlo SE of a coverage near 0.95 from 300 data sets: 0.013.) The extra time
of the default profile on balanced data, once per result (repr, ``ci``,
``coefficients()``): Brennan's synthetic p x i x o data 0.26 s (components) and 0.09 s
(E rho^2 / Phi), Penicillin 0.09 s, Dyestuff2 0.01 s, tau-bench airline 0.04 s; a
balanced ``run:(agent*task)`` of 20 x 100 x 3 0.38 s + 0.17 s; a fully crossed
``agent*task*run`` at the size limit (10 x 50 x 4: 2,000 cells, 804 levels) 7.2 s +
2.3 s. METR (unbalanced) was profiled before (0.9 s), and SWE-bench with repositories
(12,500 cells) is above the size limit: neither changes. Measured coverage of nominal
95% intervals, 400 unbalanced ``run:task:family`` data sets per row (families of 1-5 tasks, 1-6
runs per task; ``benchmarks/bench_gtheory.py``, seed 12; 2026-12-04, E rho^2's
truth at the sizes the D-study reads: mean tasks per family, harmonic mean of
runs per task), Wald -> profile:

============  ===============  ===============  ===============  ===============
families      family           task:family      residual         E rho^2
============  ===============  ===============  ===============  ===============
10            0.887 -> 0.943   0.970 -> 0.948   0.945 -> 0.958   0.940 -> 0.932
20            0.935 -> 0.953   0.985 -> 0.980   0.950 -> 0.948   0.963 -> 0.955
40            0.985 -> 0.968   0.958 -> 0.960   0.932 -> 0.932   0.970 -> 0.958
============  ===============  ===============  ===============  ===============

(Wilson 95% bands of a coverage from 400 data sets are about +-0.02.) Wald
misses of E rho^2 are one-sided (truth below the interval 24, 15 and 12 times
with 10, 20 and 40 families, never above; profile 16 / 11, 9 / 9, 9 / 8), and
so are the family component's with 40 families (6 below, none above).

``ci="auto"`` therefore profiles every fit, balanced or not, unless its REML problem
has more than 2,000 cell means or 1,000 random-effect levels (then Wald, said in
``note``; ``profile_ci()`` computes the profile; a balanced fit's problem is counted,
not built: ``_fit.balanced_problem_size``). Wald intervals of a REML fit use the
expected information up to 6,000 cell means and the observed information (a
finite-difference Hessian of the REML deviance) above;
``fit_info["information"]`` says which. A result that cannot have intervals
warns :class:`NoIntervalWarning` naming the remedy.

Facets with one level
---------------------
A facet with a single level has no variance to estimate. The object of
measurement with one level (one agent) is left out of the design and the
coefficients are NaN (:class:`UndefinedCoefficientWarning`); one level of the
innermost facet per cell (one run) leaves its component confounded with the
residual (said in ``note``); any other facet with one level (one task) is
refused with :class:`DesignError`, since coefficients computed without it
would silently ignore the facet they are meant to generalise over. So is a
facet nested in others with one level in each of their levels (one task per
cluster): ``task:cluster`` cannot be told apart from ``cluster``; the error
counts the clusters with 2 or more tasks and, when the nesting came from the
``cluster`` coord, says to drop it.

D-study
-------
For an object of measurement ``p`` (default ``agent``): universe-score
variance ``tau`` = components of effects made only of ``p`` and the facets
``p`` is nested in; every other effect ``e`` adds ``s_e / prod n'_f`` (over its
facets outside ``p``) to the absolute error variance ``Delta``, and to the
relative error variance ``delta`` when ``e`` contains ``p``. ``E rho^2 =
tau / (tau + delta)``, ``Phi = tau / (tau + Delta)``; the variance of the
difference of two objects' means on the same tasks is ``2 delta``. Tasks nested in
clusters of unequal sizes: the mean weighs every task alike, so an effect of the cluster
but not the task (agent x cluster) is divided by the effective number of clusters
``N^2 / sum_k n_k^2`` (the observed one at the G-study's own sizes), not by their number;
``d_study(spread=...)`` plans it (as observed, even, or given cluster sizes). Runs of
unequal numbers per agent x task cell: an agent's mean weighs every cell alike, so at the
G-study's own runs the run error is divided by the harmonic mean of runs per cell (over
the cells that were run; an empty cell, a task an agent did not run, is taken as run like
the others), not by their mean; runs asked for are the same in every cell.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import HierbenchWarning
from ..._base import check_choice
from ..._base import check_prob
from ..._base import warn_user
from ..._docs import fill_doc
from .._inputs import with_counts_hash
from . import _fit
from ._design_lang import Design
from ._design_lang import DesignError
from ._design_lang import parse_design
from ._dstudy import pairs_of
from ._fit import LEGACY
from ._fit import Fit
from ._long import Long
from ._long import balanced_dense
from ._long import from_array
from ._long import from_frame
from ._observed import cell_means
from ._observed import long_cluster_ratio
from ._observed import pair_variances
from ._result import VarianceComponentsResult
from ._result import confounded_words
from ._warnings import NegativeVarianceComponentWarning
from ._warnings import NoIntervalWarning
from ._warnings import UnbalancedDesignError

__all__ = ["variance_components"]

#: a REML estimate at most this times the scores' variance is at the boundary 0 (``_warn_zero``)
BOUNDARY_REL = 1e-8


# --------------------------------------------------------------------------- the design


def _resolve_design(
    data: Any, design: str | None, facets: tuple[str, ...] | None, var: str
) -> tuple[Any, Design, tuple[str, str, str] | None, list[str]]:
    """Return (scores array or frame, parsed design, legacy facet triple, confounded facets)."""
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
        dsg = parse_design(design)
        return da, dsg, _legacy_of(dsg), []
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


def _legacy_of(dsg: Design) -> tuple[str, str, str] | None:
    """The (agent, task, run) triple of a design given in words that is the eval shape, else None.

    ``r:(a*t)`` with ``a`` the facet ``measurement="auto"`` picks (so the
    object of measurement stays what it was): the D-study's ``n_tasks`` / ``n_runs`` shorthand
    and the power functions then read it as they read the same design from the dims.
    """
    a = "agent" if "agent" in dsg.facets else dsg.facets[0]
    for t in dsg.facets:
        for r in dsg.facets:
            if len({a, t, r}) < 3:
                continue
            if _same(dsg, parse_design(LEGACY["nested"].format(a=a, t=t, r=r))):
                return a, t, r
    return None


def _same(d1: Design, d2: Design) -> bool:
    """Two parsed designs with the same facets nested alike (however the words ordered them)."""
    return set(d1.facets) == set(d2.facets) and d1.parents == d2.parents


def _auto_measurement(dsg: Design, legacy: tuple[str, str, str] | None) -> str:
    """Return the object of measurement ``measurement="auto"`` means.

    The first of the facets triple, else ``agent``, else the design's first facet.
    """
    if legacy is not None:
        return legacy[0]
    return "agent" if "agent" in dsg.facets else dsg.facets[0]


def _refuse_single_level(long: Long, dsg: Design, f: str, formula: str) -> DesignError:
    lab = long.labels.get(f)
    which = f" ({np.asarray(lab, dtype=object)[0]!r})" if lab is not None and len(lab) == 1 else ""
    where = f" in every level of {sorted(dsg.parents[f])}" if dsg.parents[f] else ""
    return DesignError(
        f"`data`: the facet {f!r} of the design {formula!r} has a single level{which}"
        f"{where}: its variance cannot be estimated, and E rho^2 / Phi computed without it "
        f"would ignore the facet they generalise over. Give at least 2 levels of {f!r}, or "
        f"state a design without it (select that level and drop the dimension or column)"
    )


def _refuse_nested_single(dsg: Design, f: str, per: np.ndarray, coord: bool) -> DesignError:
    """The refusal of a nested facet with one level in every level of the facets it is nested in.

    Worded as ``_fit.check_separable`` words the same rule (which meets it later on
    unbalanced data), with the counts and the remedy.
    """
    par = sorted(dsg.parents[f])
    p = dsg.name(dsg.parents[f])
    own = dsg.name(frozenset({f}) | dsg.parents[f])
    how = (
        f"drop the `{p}` coord the design took this nesting from (`data.drop_vars({p!r})`), "
        f"to fit {f!r} without {p!r}"
        if coord
        else f"state a design without {p!r}"
    )
    return DesignError(
        f"`data`: the design {dsg.formula!r} cannot separate {p!r} from {own!r} in these data: "
        f"the facet {f!r} has a single level in every level of {par} ({int(np.sum(per >= 2))} "
        f"of {per.size} levels of {p!r} hold 2 or more {f!r} levels), so neither variance can "
        f"be estimated. Nesting {f!r} in {p!r} needs at least one level of {p!r} with 2 or "
        f"more levels of {f!r}; give such data, or {how}"
    )


def _per_parent(long: Long, dsg: Design, nlev: dict[str, int], f: str) -> np.ndarray:
    """Levels of the nested facet ``f`` in each level of its parents (dense: all alike)."""
    if long.dense is None:
        return _fit.levels_per_parent(long.codes, dsg, f)
    cells = int(np.prod([nlev[g] for g in dsg.parents[f]]))
    return np.full(cells, nlev[f], dtype=np.int64)


def _single_levels(
    long: Long, dsg: Design, keep: str | None, confounded: list[str], notes, coord: bool = False
):
    """Handle facets with one level: confound, drop or refuse.

    The innermost one (one run per cell) is confounded with the residual, the object of
    measurement ``keep`` is dropped; any other is refused, as is a facet nested in others
    (not the innermost) with one level in each of their levels (one task per cluster;
    ``coord``: the nesting came from the data's ``cluster`` coord).
    """
    dropped: list[str] = []
    formula = dsg.formula
    if long.dense is not None:
        nlev = dict(zip(dsg.facets, long.dense.shape, strict=True))
    else:
        nlev = {f: int(long.codes[f].max()) + 1 for f in dsg.facets}
    for f in dsg.facets:
        if dsg.parents[f] and dsg.parents[f] != frozenset(dsg.facets) - {f}:
            per = _per_parent(long, dsg, nlev, f)
            if per.size >= 2 and per.max() < 2:  # one parent level: the single-level rule below
                raise _refuse_nested_single(dsg, f, per, coord)
    for f in list(dsg.facets):
        if nlev[f] != 1 or len(dsg.facets) <= 1:
            continue
        leaf_of_all = dsg.parents[f] == frozenset(dsg.facets) - {f}
        if not leaf_of_all and f != keep:
            raise _refuse_single_level(long, dsg, f, formula)
        dsg = dsg.without(f)
        if long.dense is not None:
            long.dense = long.dense.squeeze(axis=list(nlev).index(f))
            nlev.pop(f)
        else:
            long.codes.pop(f)
        if leaf_of_all:
            confounded.append(f)
            notes.append(confounded_words(dsg, f))
        else:
            dropped.append(f)
            notes.append(f"{f} has one level and was dropped from the design")
    return dsg, dropped


@dataclass
class _Plan:
    """The design as estimated: facets with one level handled, the object of measurement."""

    dsg: Design
    long: Long
    legacy: tuple[str, str, str] | None
    measurement: str | None
    confounded: list[str]
    dropped: list[str]
    notes: list[str]
    dense: np.ndarray | None


def _plan(long, dsg, legacy, confounded, measurement, coord: bool = False) -> _Plan:
    if measurement not in ("auto", None) and measurement not in dsg.facets:
        raise ValueError(
            f"`measurement` must be a facet of the design {dsg.formula!r} "
            f"({list(dsg.facets)}) or None; got {measurement!r}"
        )
    keep = _auto_measurement(dsg, legacy) if measurement in ("auto", None) else measurement
    notes = [_missing_note(long)] if long.n_missing else []
    dsg, dropped = _single_levels(long, dsg, keep, confounded, notes, coord)
    if measurement == "auto":
        measurement = keep
    if measurement not in dsg.facets:
        measurement = None
    if len(dsg.facets) < 1 or long.y.size < 2:
        raise ValueError(f"variance_components needs at least 2 observations; got {long.y.size}")
    dense = long.dense if long.dense is not None else balanced_dense(long, dsg)
    return _Plan(dsg, long, legacy, measurement, confounded, dropped, notes, dense)


# --------------------------------------------------------------------------- intervals


def _problem_size(fit: Fit, plan: _Plan, use_anova: bool) -> tuple[int, int]:
    """The REML problem's cell means and random-effect levels (a balanced fit's counted, not built)."""
    if use_anova:
        return _fit.balanced_problem_size(plan.dense.shape, plan.dsg)
    return fit.fit_info.get("n_cells", 0), fit.fit_info.get("n_random_levels", 0)


def _choose_ci(ci: str, use_anova: bool, fit: Fit, plan: _Plan) -> str:
    """Return the kind of the intervals ``ci="auto"`` means, and a named warning when there are none.

    ``"auto"`` is the profile whenever the problem is within the profiled sizes, balanced
    or not (module notes); above them Wald, said in ``note``.
    """
    info, cov, notes = fit.fit_info, fit.cov, plan.notes
    ci_method, big = ci, False
    if ci == "auto":
        n_cells, n_levels = _problem_size(fit, plan, use_anova)
        big = n_cells > _fit.PROFILE_MAX_CELLS or n_levels > _fit.PROFILE_MAX_LEVELS
        ci_method = "wald" if big else "profile"
        sizes = f"({_fit.PROFILE_MAX_CELLS} cells, {_fit.PROFILE_MAX_LEVELS} levels)"
        if big and not use_anova and np.isnan(cov).all():
            msg = (
                f"no intervals: the REML information of this problem ({n_cells} "
                "cells) could not be formed (not positive definite at the estimate), and the "
                f"problem is above the size profiled by default {sizes}; remedy: profile_ci() "
                "(slow at this size) or coefficients(ci='profile')"
            )
            notes.append(msg)
            warn_user(msg, NoIntervalWarning)
        elif big:
            src = (
                "the exact sampling variance of the ANOVA estimators"
                if use_anova
                else f"the {info.get('information')} information"
            )
            notes.append(
                f"Wald intervals from {src}: the REML "
                f"problem ({n_cells} cells, {n_levels} "
                f"random-effect levels) is above the size profiled by default {sizes}: "
                "profile_ci() computes the profile intervals (slower, and better coverage with "
                "few levels or a component near 0)"
            )
    if not use_anova and ci_method == "wald" and np.isnan(np.diag(cov)).any() and not big:
        msg = (
            "no Wald intervals: the REML information could not be formed at the estimate; "
            "remedy: ci='profile'"
        )
        notes.append(msg)
        warn_user(msg, NoIntervalWarning)
    return ci_method


# --------------------------------------------------------------------------- the result


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.array(a, copy=True)
    a.setflags(write=False)
    return a


def _legacy_kind(plan: _Plan, sizes: dict[str, float]) -> tuple[str, tuple[str, ...]]:
    """Return the design's short name and the facets in result order.

    The name is ``nested`` / ``crossed`` / the formula; the object of measurement comes
    first.
    """
    dsg, legacy, measurement = plan.dsg, plan.legacy, plan.measurement
    for f in plan.confounded:
        sizes.setdefault(f, 1.0)
    if legacy is None:
        rest = [f for f in dsg.facets if f != measurement]
        return dsg.formula, tuple(([measurement] if measurement else []) + rest)
    fa, ft, fr = legacy
    crossed = LEGACY["crossed"].format(a=fa, t=ft, r=fr)
    nested = LEGACY["nested"].format(a=fa, t=ft, r=fr)
    kind = "crossed" if dsg.formula == crossed else "nested"
    if dsg.formula not in (crossed, nested, f"{fa}*{ft}") and not dsg.formula.startswith(nested):
        kind = dsg.formula
    return kind, legacy


def _assemble(plan: _Plan, fit: Fit, use_anova: bool, ci_method: str, prob: float):
    dsg = plan.dsg
    kind, fac = _legacy_kind(plan, fit.sizes)
    # a balanced fit keeps its array shape: the profile builds the effect codes on first use
    reml_data: tuple = (fit.y, fit.ec) if not use_anova else (fit.y, plan.dense.shape)
    return VarianceComponentsResult(
        _observed_cluster_ratio=_observed_ratio(plan),
        _pair_var=_pair_variances(plan),
        formula=dsg.formula,
        facets=fac,
        measurement=plan.measurement,
        method="anova" if use_anova else "reml",
        component_names=dsg.names,
        estimates_raw=_ro(np.asarray(fit.est, dtype=float)),
        anova_raw=_ro(np.asarray(fit.anova_raw, dtype=float)),
        cov=_ro(np.asarray(fit.cov, dtype=float)),
        sources=dsg.names,
        sum_sq=_ro(np.asarray(fit.sum_sq, dtype=float)),
        df=_ro(np.asarray(np.round(fit.df), dtype=np.int64)),
        mean_sq=_ro(np.asarray(fit.mean_sq, dtype=float)),
        sizes=fit.sizes,
        n_obs=int(fit.y.size),
        grand_mean=float(fit.y.mean()),
        design=kind,
        note="; ".join(plan.notes),
        prob=prob,
        confounded=tuple(plan.confounded),
        dropped=tuple(plan.dropped),
        fit_info=fit.fit_info,
        ci_method=ci_method,
        _design=dsg,
        _legacy=plan.legacy,
        _reml_data=reml_data,
        _cluster_sizes=fit.cluster_sizes,
    )


def _observed_ratio(plan: _Plan) -> float | None:
    """The data's model-free cluster inflation of a paired difference (``_observed``), or None.

    Only for one ``task:cluster`` nesting under an object of measurement; read by the
    D-study's ``cluster_inflation`` beside the model's.
    """
    pairs = pairs_of(plan.dsg, plan.measurement)
    if plan.measurement is None or len(pairs) != 1:
        return None
    (t, c), (y, codes) = pairs[0], _long_codes(plan)
    return long_cluster_ratio(y, codes, plan.measurement, t, c)


def _long_codes(plan: _Plan) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The scores and each facet's codes, also on the balanced fast path (dense, design order)."""
    long = plan.long
    if long.codes:
        return np.asarray(long.y, dtype=float), long.codes
    idx = np.indices(long.dense.shape).reshape(long.dense.ndim, -1)
    return np.asarray(long.dense.ravel(), dtype=float), dict(zip(plan.dsg.facets, idx, strict=True))


def _pair_variances(plan: _Plan) -> np.ndarray | None:
    """Each pair of agents' variance of per-task differences of cell means (the runs made), or None.

    For the eval shape (``legacy``): the power functions' per-pair range beside the pooled SD.
    """
    if plan.legacy is None or plan.measurement != plan.legacy[0] or plan.legacy[1] not in plan.dsg.facets:
        return None
    y, codes = _long_codes(plan)
    a, t, _ = plan.legacy
    units = [f for f in plan.dsg.facets if f in plan.dsg.parents[t] and f != a] + [t]
    return pair_variances(cell_means(y, codes, a, units)[0])


def _warn_truncated(est: np.ndarray, names: tuple[str, ...]) -> None:
    trunc = est < 0
    if trunc.any():
        warn_user(
            "negative variance-component estimates truncated at 0: "
            + ", ".join(f"{n}={v:.4g}" for n, v, t in zip(names, est, trunc, strict=True) if t),
            NegativeVarianceComponentWarning,
        )


def _warn_zero(fit: Fit, names: tuple[str, ...], use_anova: bool) -> np.ndarray:
    """Say when every score is equal, or (REML) when components are estimated at 0; return the latter.

    ANOVA's zeros are named by ``_warn_truncated``; a REML estimate on the boundary is
    the same finding (no variance for the component beyond the others), so it is named
    with the same warning. The rule: an estimate at most ``BOUNDARY_REL`` x the scores'
    variance. The components it finds are held at exactly 0 in the result (the optimiser
    stops a rounding error away from the boundary, 1.5e-17, which code downstream would
    read as a positive variance); the mask returned says which.
    """
    y = np.asarray(fit.y, dtype=float)
    est = np.asarray(fit.est, dtype=float)
    none = np.zeros(est.shape, dtype=bool)
    if y.size and float(np.ptp(y)) == 0.0:
        warn_user(
            f"every score equals {y[0]:.4g}: every variance component is 0 and the data show "
            "no variation to split (the coefficients E rho^2 and Phi are 0 / 0)",
            NegativeVarianceComponentWarning,
        )
        return none
    zero = est <= BOUNDARY_REL * float(np.var(y))
    if use_anova or not zero.any():
        return none
    # the residual is kept as fitted: the other components are fitted relative to it
    held = [f"{n} {v:.2g}" for n, v, z in zip(names, est, zero, strict=True) if z and v != 0 and n != "residual"]
    warn_user(
        "REML estimates of variance components at the boundary 0: "
        + ", ".join(n for n, z in zip(names, zero, strict=True) if z)
        + " (the likelihood is largest at 0: the data show no variance for them beyond the "
        "other components); their intervals are one-sided"
        + (f"; held at exactly 0 in the result (the fit stopped at {', '.join(held)})" if held else ""),
        NegativeVarianceComponentWarning,
    )
    return zero & (np.asarray(names) != "residual")


def _missing_note(long: Long) -> str:
    """The ``note`` on NaN scores: rows of a table are missing scores; cells of an eval dataset are runs not made."""
    if long.missing_what == "rows":
        return f"{long.n_missing} rows with no score (NaN) were left out"
    return (f"{long.n_missing} {long.missing_what} hold no run (NaN, as the eval layout pads runs not made, "
            "e.g. ragged runs per cell)")  # fmt: skip


def _warn_missing(long: Long, n_used: int) -> None:
    """Warn of table rows left out for a NaN score; an eval dataset's NaN cells are runs not made (``note`` only)."""
    if long.n_missing and long.missing_what == "rows":
        warn_user(
            f"variance_components: {long.n_missing} {long.missing_what} with no score (NaN) were "
            f"left out; the fit uses the other {n_used} (also said in `note`)",
            HierbenchWarning,
        )


def _check_args(design: Any, method: str, prob: float, ci: str) -> float:
    if design is not None and not isinstance(design, str):
        raise TypeError(f"`design` must be a string; got {type(design).__name__}")
    check_choice(method, "method", ["auto", "anova", "reml"])
    check_choice(ci, "ci", ["auto", "profile", "wald"])
    return check_prob(prob)


@fill_doc
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
        per facet and the score column ``var`` (numbers; a row or array cell
        with a missing score is left out, counted in ``note`` and a warning;
        text that is not a number is refused).
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
        ``"auto"``: the first of ``facets``, else ``agent`` if it is a facet,
        else the first facet of the design. With a single level (one agent)
        it is dropped from the design and the coefficients are NaN (with
        :class:`UndefinedCoefficientWarning`); any other facet with one
        level is refused (see the module notes).
    method : {"auto", "anova", "reml"}
        ``"auto"``: the closed-form ANOVA estimators for balanced data (negative
        estimates truncated at 0 with :class:`NegativeVarianceComponentWarning`),
        REML otherwise (an estimate at the boundary 0 gets the same warning).
        ``"anova"`` refuses unbalanced data (:class:`UnbalancedDesignError`).
    %(prob)s
    ci : {"auto", "profile", "wald"}
        Kind of the intervals (of the components and of E rho^2 / Phi).
        ``"auto"``: profile REML likelihood, balanced or not, up to a problem size
        (module notes; Wald above it, said in ``note``): Wald under-covers with few
        levels or a component near 0 (one-way 6 x 5: 0.90 against the profile's
        0.98 at 95%). ``"wald"``: normal on log(variance).

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
    prob = _check_args(design, method, prob, ci)
    src, dsg, legacy, confounded = _resolve_design(data, design, facets, var)
    long = from_frame(src, dsg, var) if isinstance(src, pd.DataFrame) else from_array(src, dsg)
    if long.y.size == 0:
        raise UnbalancedDesignError("`data` has no observed score (every value is NaN, or no cell)")
    coord = design is None and dsg.formula.endswith(":cluster))") and "cluster" in dsg.facets
    plan = _plan(long, dsg, legacy, confounded, measurement, coord)
    if method == "anova" and plan.dense is None:
        raise UnbalancedDesignError(
            f"method='anova' needs a balanced design {plan.dsg.formula!r} (the same number of "
            "levels of every facet within each level of the facets it is nested in, every "
            "crossed cell observed); use method='reml' (the default for unbalanced data)"
        )
    use_anova = plan.dense is not None and method in ("auto", "anova")
    fit = _fit.estimate(plan.long, plan.dsg, plan.dense, use_anova)
    ci_method = _choose_ci(ci, use_anova, fit, plan)
    _warn_missing(long, int(np.asarray(fit.y).size))
    _warn_truncated(fit.est, plan.dsg.names)
    fit.est = np.where(_warn_zero(fit, plan.dsg.names, use_anova), 0.0, fit.est)  # what the rule calls 0 is 0
    return with_counts_hash(_assemble(plan, fit, use_anova, ci_method, prob), data)  # the report checks it
