"""Tasks in clusters for the paired power functions: the design effect and the unit counted.

The paired tests the package runs on clustered tasks resample (or flip the signs of) whole
clusters, so their precision is that of the clusters. With ``N`` tasks in clusters of sizes
``m_k`` and per-task paired differences ``d_t = delta + u_k + e_t`` (a cluster part ``u_k``,
variance ``s_c``; a task part ``e_t``, variance ``s_w``; ``ICC = s_c / (s_c + s_w)``), the
task-weighted mean difference has

    Var(dbar) = (s_c sum_k m_k^2 + s_w N) / N^2 = (s_c + s_w) DEFF / N,
    DEFF = 1 + (m* - 1) ICC,  m* = sum_k m_k^2 / sum_k m_k

(``m* = m`` for equal sizes: the familiar ``1 + (m - 1) ICC``). The test counts clusters by
their worth in equal ones, ``C_eff = N^2 / sum m_k^2 = N / m*`` (the few-clusters warnings'
rule, ``hierbench.freq``'s ``effective_clusters``): ``C_eff - 1`` degrees of freedom (``K - 1``
for ``K`` equal clusters), ``N / DEFF`` effective tasks. ``K - 1`` df for unequal sizes
promised too much: at SWE-bench's 12 repositories (1-231 of 500 tasks, ``C_eff`` 3.9) the
cluster sign-flip test had power 0.60, not 0.80, at the difference planned that way (audit W).
This is the D-study's rule for a ``task:cluster`` nesting (an effect of the cluster enters
with ``1 / C_eff``) applied to the paired difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..._base import HierbenchWarning
from ..._base import check_number
from ..._base import warn_user
from ._dstudy import spread_pairs
from ._result import VarianceComponentsResult
from ._result import require_components

__all__ = ["ClusterDesign", "cluster_design"]


@dataclass(frozen=True)
class ClusterDesign:
    """How tasks fall into clusters, for :func:`paired_power` and its relatives.

    Build it with :func:`cluster_design`; the attributes say what the plan assumes.
    ``tasks_per_cluster`` is the mean size ``m``, ``size_factor`` the size-weighted mean
    ``m* = sum m_k^2 / sum m_k`` (``N / m*`` tasks are worth that many equal clusters); ``n_tasks`` the total the sizes fix (None: sizes are a
    template for any number of tasks). Exactly one of ``icc``, ``design_effect`` and
    ``sigma2`` (agent x cluster, agent x task within cluster, run-to-run: from a fit with a
    cluster facet) says how alike a cluster's tasks are; ``source`` says where it came from.
    ``one_run_only``: the variances come from one run per cell, the run-to-run one holding the
    agent x task one (``sigma2[1]`` is then 0), so they plan at one run per task only.
    """

    tasks_per_cluster: float
    size_factor: float
    n_tasks: int | None
    n_clusters: int | None
    icc: float | None
    design_effect: float | None
    sigma2: tuple[float, float, float] | None
    source: str
    one_run_only: bool = False

    def deff(self, var_task: np.ndarray | float | None = None) -> np.ndarray | float:
        """The design effect; with ``sigma2``, at the total per-task variance ``var_task``."""
        if self.design_effect is not None:
            return self.design_effect
        if self.icc is not None:
            return 1.0 + (self.size_factor - 1.0) * self.icc
        s_c = 2 * self.sigma2[0]
        with np.errstate(invalid="ignore", divide="ignore"):
            icc = np.where(np.asarray(var_task) > 0, s_c / np.asarray(var_task), 0.0)
        return 1.0 + (self.size_factor - 1.0) * icc

    def var_task(self, n_runs: np.ndarray) -> np.ndarray:
        """Total variance of a per-task paired difference (with ``sigma2``): ``2 s_c + 2 s_t + 2 s_e / R``."""
        s_c, s_t, s_e = self.sigma2
        if self.one_run_only and np.any(np.asarray(n_runs) != 1):
            raise ValueError(
                f"`n_runs` must be 1 with this `clusters` ({self.source}): from one run per cell the "
                "agent x task and run-to-run variances are not told apart, so no plan at more runs "
                f"follows; got n_runs = {', '.join(f'{r:g}' for r in np.unique(n_runs))}"
            )
        return 2 * s_c + 2 * s_t + 2 * s_e / n_runs

    def effective_for(self, n_tasks: np.ndarray) -> np.ndarray:
        """The worth in equal clusters ``C_eff = N / m*`` of ``n_tasks`` in clusters like these (checked).

        ``N^2 / sum m_k^2`` for the sizes themselves; the test's df are ``C_eff - 1``.
        """
        return np.asarray(self.clusters_for(n_tasks) * self.tasks_per_cluster / self.size_factor, dtype=float)

    def clusters_for(self, n_tasks: np.ndarray) -> np.ndarray:
        """Number of clusters ``N / m`` holding ``n_tasks`` (checked against fixed sizes)."""
        T = np.asarray(n_tasks, dtype=float)
        if self.n_tasks is not None and np.any(T != self.n_tasks):
            raise ValueError(
                f"`n_tasks` must equal the sum of the cluster sizes ({self.n_tasks}) given to "
                f"`clusters`; got n_tasks = {', '.join(f'{t:g}' for t in np.unique(T[T != self.n_tasks]))}: pass "
                "cluster_design(..., template=True) to plan other totals with clusters like these"
            )
        K = T / self.tasks_per_cluster
        if np.any(K < 2):
            raise ValueError(
                f"`n_tasks` = {', '.join(f'{t:g}' for t in np.unique(T[K < 2]))} hold fewer than 2 clusters of "
                f"{self.tasks_per_cluster:g} tasks: a cluster-level test needs at least 2"
            )
        return K

    def to_frame(self) -> pd.DataFrame:
        """One row: sizes, the correlation given, the design effect (if fixed) and its source."""
        d = {k: getattr(self, k) for k in ("n_tasks", "n_clusters", "tasks_per_cluster", "size_factor", "icc")}
        d["design_effect"] = float(self.deff()) if self.sigma2 is None else float("nan")  # NaN: runs decide
        d["source"] = self.source
        return pd.DataFrame([d])

    def __repr__(self) -> str:
        what = (
            f"design effect {self.design_effect:.4g}"
            if self.design_effect is not None
            else f"ICC {self.icc:.4g} (design effect {float(self.deff()):.4g})"
            if self.icc is not None
            else f"agent x cluster variance {self.sigma2[0]:.4g} (design effect depends on runs)"
        )
        size = "template" if self.n_tasks is None else f"{self.n_tasks} tasks in {self.n_clusters} clusters"
        return (
            f"ClusterDesign: {size}; mean {self.tasks_per_cluster:.4g} tasks per cluster, "
            f"m* = {self.size_factor:.4g}; {what}; source: {self.source}"
        )


def _sizes(sizes) -> np.ndarray:
    a = np.asarray(sizes)
    if a.ndim != 1 or a.size < 2 or a.dtype.kind not in "iuf" or np.any(a < 1) or np.any(a != np.round(a)):
        raise ValueError(
            "`sizes` must be a 1-D list of at least 2 positive integers (tasks in each cluster); "
            f"got {sizes!r}"
        )
    return a.astype(float)


def clustered_facets(vc) -> tuple[str, str, str, str] | None:
    """``(agent, task, cluster, run)`` of a fit of ``run:(agent*(task:cluster))``; None for any other design.

    Read from the fitted design, not ``vc.facets``: a fit whose clusters came from a task
    ``cluster`` coord (the default on METR and SWE-bench) lists only agent, task and run
    there. Agents crossed with tasks nested in one cluster facet, fresh runs in every cell
    (with one run per cell the run facet is confounded with the residual and left out).
    """
    if not isinstance(vc, VarianceComponentsResult):
        return None
    d, a, pairs = vc._design, vc.measurement, spread_pairs(vc)
    if a is None or len(pairs) != 1 or d.parents[a]:
        return None
    ((t, c),) = pairs  # the measurement is in no spread pair
    rest = set(d.facets) - {a, t, c}
    if not rest and len(vc.confounded) == 1:  # one run per cell: the run facet left the design
        return a, t, c, vc.confounded[0]
    if len(rest) != 1 or d.parents[c] or set(d.parents[t]) != {c} or set(d.parents[next(iter(rest))]) != {a, t, c}:
        return None
    return a, t, c, rest.pop()


def pool_interactions(values, agent: str = "agent", task: str = "task", cluster: str = "cluster"):
    """The agent x task-side parts of a paired difference, by component name, and their sum ``s_mt``.

    The one rule for planning independent tasks from components (``agent:task``; with tasks in
    clusters ``agent:task:cluster`` and ``agent:cluster``): a paired difference on a new task
    of a new cluster carries each, and more runs shrink none. ``values`` maps component names
    to variances; the parts present are returned as given (in that order), and ``s_mt`` sums
    them with each below 0 (a difference of variances near zero) taken as 0.
    """
    names = (f"{agent}:{task}", f"{agent}:{task}:{cluster}", f"{agent}:{cluster}")
    parts = {n: float(values[n]) for n in names if n in values}
    return parts, float(sum(max(v, 0.0) for v in parts.values()))


def component_values(vc) -> dict[str, float]:
    """A fit's components by name (its point estimates, as reported)."""
    c = vc.components
    return dict(zip(map(str, c.component.values), map(float, c.values), strict=True))


def _from_components(vc) -> tuple[np.ndarray, tuple[float, float, float], str, bool]:
    """Sizes, (agent x cluster, agent x task, run) variances, source and one-run flag of a clustered fit."""
    require_components(vc)
    fac = clustered_facets(vc)
    if fac is None:
        raise ValueError(
            "`components` must come from the design 'run:(agent*(task:cluster))' (agents crossed "
            "with tasks nested in one cluster facet, fresh runs per cell); got the design "
            f"{vc.formula!r} (facets {tuple(vc._design.facets)}, tasks nested in clusters: "
            f"{spread_pairs(vc) or 'none'}): fit data with a task `cluster` coord, or give "
            "`icc` or `design_effect` instead"
        )
    a, t, c, r = fac
    comp = component_values(vc)
    one_run = r in vc.confounded  # one run per cell: the residual holds the agent x task part
    names = [f"{a}:{c}", f"{a}:{t}:{c}", "residual"]
    if lack := [n for n in names if n not in comp and not (one_run and n == names[1])]:
        raise ValueError(f"`components` of {vc.formula!r} lack {lack} (they have {list(comp)})")
    s2 = (comp[names[0]], 0.0 if one_run else comp[names[1]], comp["residual"])
    if not all(np.isfinite(s2)) or min(s2) < 0:
        raise ValueError(
            f"`components`: the variances {dict(zip(names, s2, strict=True))} must be finite and "
            ">= 0 (a negative ANOVA estimate: refit with method='reml', or give `icc`)"
        )
    sizes = _sizes(np.asarray(vc._cluster_sizes.get(t, []), dtype=float))
    src = f"components of {vc.formula} ({vc.method}): {names[0]} {s2[0]:.4g}"
    if one_run:
        src += f", residual {s2[2]:.4g} holding {names[1]} (one run per cell: plans at n_runs=1 only)"
    else:
        src += f", {names[1]} {s2[1]:.4g}, residual {s2[2]:.4g}"
    return sizes, s2, src, one_run


def _given_sigma2(sigma2) -> tuple[float, float, float]:
    a = np.asarray(sigma2, dtype=object)
    if a.shape != (3,) or not all(isinstance(v, (int, float, np.integer, np.floating)) for v in a):
        raise ValueError(
            "`sigma2` must be three numbers (agent x cluster, agent x task within a cluster, "
            f"run-to-run variances); got {sigma2!r}"
        )
    s2 = tuple(float(v) for v in a)
    if not all(np.isfinite(s2)) or min(s2) < 0:
        raise ValueError(f"`sigma2` must be finite and >= 0; got {s2}")
    return s2


def cluster_design(
    sizes: Sequence[int] | np.ndarray | None = None,
    *,
    tasks_per_cluster: int | None = None,
    icc: float | None = None,
    design_effect: float | None = None,
    components: VarianceComponentsResult | None = None,
    sigma2: tuple[float, float, float] | None = None,
    template: bool = False,
    source: str | None = None,
) -> ClusterDesign:
    """Describe how tasks fall into clusters, for the ``clusters`` argument of the power functions.

    The paired tests on clustered tasks resample or flip whole clusters: the power functions
    given a design count clusters by their worth in equal ones (``C_eff - 1`` degrees of
    freedom, ``C_eff = N^2 / sum m_k^2``) and ``N / DEFF`` effective tasks, ``DEFF = 1 + (m* - 1) ICC`` with ``m* = sum m_k^2 / sum m_k`` (``m`` for equal
    sizes) and ``ICC`` the share of a per-task paired difference's variance that its cluster
    shares.

    Parameters
    ----------
    sizes : sequence of int, optional
        Tasks in each cluster. They fix the number of tasks to their sum unless ``template``.
    tasks_per_cluster : int, optional
        Equal clusters of this many tasks (any number of tasks: a template).
    icc : float, optional
        Intra-cluster correlation of per-task paired differences, in [0, 1].
    design_effect : float, optional
        The design effect directly (e.g. one observed), in [1, m*].
    components : VarianceComponentsResult, optional
        A fit of ``run:(agent*(task:cluster))`` (the default of :func:`variance_components` on
        data with a task ``cluster`` coord): its sizes (unless given) and its agent x cluster,
        agent x task and run variances (then give no other components to the power functions;
        the design effect depends on the runs per task). From one run per cell the residual
        holds the agent x task part: such a design plans at one run per task only.
    sigma2 : (float, float, float), optional
        Those three variances given directly (agent x cluster, agent x task within a
        cluster, run-to-run; e.g. from a published fit), with ``sizes`` or
        ``tasks_per_cluster``.
    template : bool
        ``sizes`` describe the spread only (mean size and ``m*``), for any number of tasks.
    source : str, optional
        Where ``icc`` or ``design_effect`` came from, for the plan's statement.

    Returns
    -------
    ClusterDesign

    Examples
    --------
    >>> cd = cluster_design([2, 2, 4], icc=0.5)   # m* = 24 / 8 = 3
    >>> float(cd.deff())
    2.0
    """
    if (sizes is None) == (tasks_per_cluster is None) and components is None:
        raise ValueError("give exactly one of `sizes` and `tasks_per_cluster`")
    if sum(x is not None for x in (icc, design_effect, components, sigma2)) != 1:
        raise ValueError("give exactly one of `icc`, `design_effect`, `components` and `sigma2`")
    s2, one_run = None, False
    if sigma2 is not None:
        s2, auto = _given_sigma2(sigma2), "given variances"
    if components is not None:
        obs, s2, auto, one_run = _from_components(components)
        sizes = obs if sizes is None and tasks_per_cluster is None else sizes
    if tasks_per_cluster is not None:
        if sizes is not None:
            raise ValueError("give exactly one of `sizes` and `tasks_per_cluster`")
        m = float(check_number(tasks_per_cluster, "tasks_per_cluster", low=1))
        if m != round(m):
            raise ValueError(f"`tasks_per_cluster` must be an integer >= 1; got {tasks_per_cluster!r}")
        mean, factor, n, k = m, m, None, None
    else:
        a = _sizes(sizes)  # m* = sum m^2 / N = N / C_eff, C_eff the few-clusters rule's worth in equal clusters
        mean, factor = float(a.mean()), float(np.sum(a**2) / np.sum(a))
        n, k = (None, None) if template else (int(a.sum()), int(a.size))
    if icc is not None:
        icc = float(check_number(icc, "icc", low=0))
        if icc > 1:
            raise ValueError(f"`icc` must lie in [0, 1]; got {icc!r}")
        auto = "given ICC"
    if design_effect is not None:
        design_effect = float(check_number(design_effect, "design_effect", low=0))
        if design_effect < 1:
            raise ValueError(
                f"`design_effect` must be >= 1 (clusters that made tasks more alike than independent "
                f"ones cannot shrink the variance in this model); got {design_effect!r}: plan with 1"
            )
        if design_effect > factor:
            warn_user(
                f"`design_effect` {design_effect:.4g} exceeds m* = {factor:.4g}, the most an "
                "exchangeable ICC <= 1 gives these cluster sizes: the clusters differ in how alike "
                "their tasks are, or the sizes are not those the design effect was measured on",
                HierbenchWarning,
            )
        auto = "given design effect"
    return ClusterDesign(mean, factor, n, k, icc, design_effect, s2, auto if source is None else str(source), one_run)
