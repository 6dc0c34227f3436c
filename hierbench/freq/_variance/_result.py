"""The result of a G-study: components and their views.

D-study, allocation and intervals delegate to the wing's functions (:mod:`._dstudy`,
:mod:`._allocation`, :mod:`._intervals`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import HierbenchWarning
from ..._base import Result
from ..._docs import fill_doc
from . import _allocation
from . import _dstudy
from . import _intervals
from ._design_lang import Design
from ._floors import floor_grid

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

__all__ = ["VarianceComponentsResult"]


@dataclass(frozen=True, repr=False)
class VarianceComponentsResult(Result):
    """A G-study: variance components with intervals, the ANOVA table, D-studies.

    ``estimate`` and ``ci`` (and the other DataArray views) are built when asked
    for: a balanced G-study's estimates cost microseconds; its default profile
    intervals are computed when first read (a fraction of a second on Brennan's
    or Penicillin's designs, seconds near the size limit: the module notes).

    Attributes
    ----------
    estimate : xarray.DataArray
        Variance components over ``component`` (ANOVA estimates truncated at 0,
        or REML estimates).
    ci : xarray.DataArray
        Intervals (``ci_bound``) of kind ``ci_method``: profile REML likelihood
        (``ci_kind`` ``"profile"``, computed on first use: milliseconds on small
        designs, seconds on METR) or Wald on the log-variance scale
        (``ci_kind`` ``"log-normal"``: normal on log(variance), so
        ``estimate * exp(+-z * se / estimate)``, lopsided on the variance scale;
        an estimate at 0 gets ``[0, z * se]``). Attr ``ci_flags`` names the
        intervals that cannot be read at face value (see :attr:`ci_flags`).
    ci_method : {"profile", "wald"}
        The kind behind ``ci`` and :meth:`coefficients`.
    formula : str
        The design.
    measurement : str or None
        The object of measurement (None: the design has no such facet, e.g.
        one agent).
    method : {"anova", "reml"}
    attrs : dict
        Put in the views' attrs: ``hierbench_counts_hash``, the fingerprint of the eval
        dataset's score cells (``hierbench.report.build`` checks a result given to it by it).
    """

    formula: str
    facets: tuple[str, ...]
    measurement: str | None
    method: str
    component_names: tuple[str, ...]
    estimates_raw: np.ndarray
    anova_raw: np.ndarray
    cov: np.ndarray
    sources: tuple[str, ...]
    sum_sq: np.ndarray
    df: np.ndarray
    mean_sq: np.ndarray
    sizes: dict[str, float]
    n_obs: int
    grand_mean: float
    design: str = ""
    note: str = ""
    prob: float = DEFAULT_PROB
    confounded: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    fit_info: dict = field(default_factory=dict)
    ci_method: str = "wald"
    #: what the views' attrs carry besides the design (``hierbench_counts_hash``: the log's fingerprint)
    attrs: dict = field(default_factory=dict, compare=False)
    _design: Design | None = None
    _legacy: tuple[str, str, str] | None = None
    # the long data (y, effect codes) for profile intervals; a memo of computed intervals
    _reml_data: tuple | None = field(default=None, compare=False)
    _memo: dict = field(default_factory=dict, compare=False)
    # facet -> its levels in each level of the one facet it is nested in (tasks per cluster)
    _cluster_sizes: dict = field(default_factory=dict, compare=False)
    # the data's cluster-robust / independent-task variance of pairs' mean differences (``_observed``)
    _observed_cluster_ratio: float | None = field(default=None, compare=False)
    # each pair of objects' variance of per-task differences of cell means (the power functions' range)
    _pair_var: np.ndarray | None = field(default=None, compare=False)

    _dataset_exclude = ()
    _not_saved: ClassVar[dict[str, str]] = {
        "component_names": "the coordinate component",
        "sources": "the coordinate source",
        "estimates_raw": "the variable variance_raw",
        "anova_raw": "the variable anova_estimate",
        "design": "the attr design_kind (the attr design holds the formula, as the views' attrs do)",
    }

    # -- views -----------------------------------------------------------------
    def _attrs(self) -> dict:
        attrs: dict = {
            "facets": list(self.facets),
            "design": self.formula,
            "method": self.method,
            "measurement": str(self.measurement),
        }
        # the scale of the score whose variance is split (a variance of 0/1 scores is on the
        # probability scale, as crossed_variance_components(scale="probability")'s), for side_by_side
        if self._reml_data is not None:
            attrs["scale"] = "probability" if _intervals.score_range(self) == (0.0, 1.0) else "score"
        if self.note:
            attrs["note"] = self.note
        return attrs | self.attrs

    def _comp(self, values: np.ndarray) -> xr.DataArray:
        return xr.DataArray(
            values,
            dims="component",
            coords={"component": list(self.component_names)},
            attrs=self._attrs(),
        )

    @property
    def estimate(self) -> xr.DataArray:
        """Variance components (ANOVA estimates truncated at 0, or REML)."""
        return self._comp(np.maximum(self.estimates_raw, 0.0))

    @property
    def se(self) -> xr.DataArray:
        """Standard errors of the components (sqrt of the diagonal of ``cov``)."""
        with np.errstate(invalid="ignore"):
            return self._comp(np.sqrt(np.diag(self.cov)))

    @property
    def ci(self) -> xr.DataArray:
        """Return the intervals at level ``prob``.

        Profile-likelihood (``ci_method="profile"``) or Wald on the log-variance scale
        (``"wald"``).
        """
        ci = self.profile_ci() if self.ci_method == "profile" else self.wald_ci()
        flags = _intervals.ci_flags(self, ci)
        if any(flags):
            ci.attrs["ci_flags"] = "; ".join(
                f"{n}: {w}" for n, w in zip(self.component_names, flags, strict=True) if w
            )
        return ci

    @property
    def ci_flags(self) -> xr.DataArray:
        """Why a component's interval in :attr:`ci` cannot be read at face value ("" if fine).

        An upper end above 1/4 for 0/1 scores (no variance of a score on the scale [0, 1]
        can be larger; the observed range of other scores is not a bound of their scale, so
        they get no such flag), or ends more than three orders of magnitude apart; the
        reason names the component's degrees of freedom and its facet with fewest levels
        (e.g. 2 occasions).
        """
        return self._comp(np.array(_intervals.ci_flags(self, self.ci), dtype=object))

    def wald_ci(self, prob: float | None = None) -> xr.DataArray:
        """Wald intervals on the log-variance scale (``ci_kind`` ``"log-normal"``)."""
        return _intervals.wald_ci(self, prob)

    def profile_ci(self, prob: float | None = None, components: str | Sequence[str] | None = None) -> xr.DataArray:
        """Profile-likelihood intervals of the components from the REML likelihood.

        ``{s : D_prof(s) - D_min <= chi2_1(prob)}`` with ``D`` the REML deviance and the
        other components (and the residual) maximised out; a bound the profile never
        reaches is 0 (or infinity). Each component's interval is computed on first use and
        kept; ``components`` (names) profiles those only and returns them alone (a large
        design's six profiles can take seconds: METR's took 5 s).

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from hierbench.freq import variance_components
        >>> rng = np.random.default_rng(3)
        >>> df = pd.DataFrame({"batch": np.repeat(np.arange(6), 5), "rep": np.tile(np.arange(5), 6)})
        >>> df["y"] = rng.normal(0, 1, 6)[df.batch] + rng.normal(0, 1, 30)
        >>> vc = variance_components(df.iloc[:-2], design="rep:batch", var="y")  # unbalanced
        >>> vc.method, vc.ci_method
        ('reml', 'profile')
        >>> ci = vc.profile_ci()
        >>> ci.attrs["ci_kind"], bool((ci.sel(ci_bound="lower") <= vc.estimate).all())
        ('profile', True)
        """
        return _intervals.profile_ci(self, prob, components)

    def _profiler(self):
        return _intervals.profiler(self)

    @property
    def components(self) -> xr.DataArray:
        """Alias of :attr:`estimate` (negative ANOVA estimates truncated at 0)."""
        return self.estimate

    @property
    def components_raw(self) -> xr.DataArray:
        """The untruncated estimates (ANOVA may be negative; REML is >= 0)."""
        return self._comp(self.estimates_raw.copy())

    @property
    def truncated(self) -> xr.DataArray:
        """True where a negative ANOVA estimate was set to 0."""
        return self._comp(self.estimates_raw < 0)

    @property
    def anova_estimate(self) -> xr.DataArray:
        """ANOVA-type estimates (Henderson's Method I; Brennan's for balanced data), untruncated."""
        return self._comp(self.anova_raw.copy())

    @property
    def anova(self) -> xr.Dataset:
        """The ANOVA table: ``sum_sq``, ``df``, ``mean_sq`` over ``source``."""
        return xr.Dataset(
            {
                "sum_sq": ("source", self.sum_sq.copy()),
                "df": ("source", self.df.copy()),
                "mean_sq": ("source", self.mean_sq.copy()),
            },
            coords={"source": list(self.sources)},
        )

    # legacy accessors -----------------------------------------------------------
    @property
    def n_agents(self) -> int:
        return round(self.sizes.get(self.facets[0], 1))

    @property
    def n_tasks(self) -> int:
        """Tasks (the second facet) in the G-study: all of them where they are nested in clusters.

        ``sizes`` holds the mean tasks per cluster there (2.3 on METR), which this returned
        until the default clustered fit; now the clusters' tasks summed (83).
        """
        if len(self.facets) < 2:
            return 1
        per_cluster = self._cluster_sizes.get(self.facets[1])
        if per_cluster is not None:
            return int(np.sum(per_cluster))
        return round(self.sizes.get(self.facets[1], 1))

    @property
    def n_runs(self) -> int:
        if self._legacy is not None:
            return round(self.sizes.get(self._legacy[2], 1))
        return round(self.sizes.get(self.facets[-1], 1))

    # -- D-study (the wing's functions do the work) ---------------------------------
    def _comp_dict(self, values: np.ndarray | None = None) -> dict[frozenset, Any]:
        return _dstudy.comp_dict(self, values)

    def _coefficients(
        self, sizes: dict[str, Any], comp: dict[frozenset, Any] | None = None, warn: bool = True
    ) -> dict[str, Any]:
        """Return the D-study quantities at ``sizes`` (arrays broadcast) of ``comp``.

        ``comp`` defaults to the estimates; :func:`hierbench.metrics.bayes_d_study` feeds it
        posterior draws.
        """
        comp = self._comp_dict() if comp is None else comp
        return _dstudy.coefficients_at(
            self._design, self.measurement, comp, sizes, self.confounded, warn=warn, stacklevel=3
        )

    def _spread_sizes(
        self, sizes: dict[str, Any], spread: str = "observed", held: Sequence[str] = ()
    ) -> dict[str, Any]:
        """Return ``sizes`` (clusters, mean tasks per cluster) with the spreads put in.

        For :meth:`_coefficients`: clusters -> their effective number, and runs per cell held
        at the G-study's own size (facets in ``held``) -> their harmonic mean over the cells
        that were run (see :meth:`d_study`).
        """
        spread = _dstudy.check_spread(self, spread)
        return _dstudy.spread_sizes(self, sizes, spread, held)[0]

    @property
    def e_rho2(self) -> float:
        """Generalizability coefficient at the G-study sizes (NaN + warning when undefined).

        The G-study's own design: tasks in clusters and runs in cells as observed (see
        :meth:`d_study`).
        """
        return _dstudy.at_g_study(self, "e_rho2")

    @property
    def phi(self) -> float:
        """Dependability coefficient at the G-study sizes, clusters and runs as observed."""
        return _dstudy.at_g_study(self, "phi")

    @property
    def var_paired_diff(self) -> float:
        """Variance of the difference of two objects' means at the G-study sizes.

        The G-study's own design, tasks in clusters and runs in cells as observed: the agent
        x cluster component enters with ``sum_k (n_k/N)^2``, not ``1 / n_clusters``, and the
        run error with the harmonic mean of runs per cell, not their mean (see
        :meth:`d_study`). Two agents on the same tasks: cells no run was made in (a task an
        agent did not run) are taken as run like the others, not as a comparison on the
        tasks two agents both ran (fewer tasks, a larger variance).
        """
        return _dstudy.var_paired_diff(self)

    @fill_doc
    def d_study(
        self,
        sizes: dict[str, Any] | None = None,
        *,
        n_tasks: int | np.ndarray | None = None,
        n_runs: int | np.ndarray | None = None,
        n_clusters: int | np.ndarray | None = None,
        spread: str | Sequence[int] = "observed",
        universe: str = "new_clusters",
    ) -> xr.Dataset:
        """Project error variances and coefficients to planned sample sizes.

        With tasks in clusters the prediction is for one of two universes (attr
        ``universe``): ``"new_clusters"`` (default), newly drawn clusters, whose
        terms err over the effective number of clusters, however many tasks
        each holds; ``"these_clusters"``, more tasks of these clusters, whose
        terms are then measured (Brennan's fixed facet). Held out (SWE-bench, 12 repositories; METR), the default's SE of a pair's
        difference at 2-10x the fitted tasks was 1.2-1.45x the realised one (an
        agent's mean 1.35-2.2x); ``"these_clusters"`` 0.99x on SWE-bench (a
        50-task subset holds every repository) but 0.87-0.90x (agent: 0.73-0.78x)
        on METR, whose 20-task subsets miss most task families: it is too sure
        where new tasks come from unseen clusters, so the default is the
        cautious one. A cluster term from fewer than 20 effective
        clusters gives a :class:`~hierbench.SmallSampleWarning` (attr
        ``cluster_inflation``: the model's inflation of a paired difference beside
        the data's); over 10x the fitted levels, an ``ExtrapolationWarning``.

        Parameters
        ----------
        sizes : dict, optional
            Facet -> planned number(s) of levels *per level of the facets it is
            nested in* (tasks per cluster on average, runs per cell); arrays
            give a grid with dims ``n_<facet>``. Facets not given keep their
            G-study size (for unbalanced data, the mean number of levels per
            parent level).
        n_tasks : int or array, optional
            The three-facet shorthand: the *total* number of tasks (dim
            ``n_tasks``). When tasks are nested in clusters, the clusters
            (the G-study's number, or ``n_clusters``) hold ``n_tasks /
            n_clusters`` on average (coord ``<task>_per_cluster``), spread
            as ``spread`` says; before this release ``n_tasks`` meant tasks
            per cluster there, which ``sizes={"task": k}`` still gives.
        n_runs : int or array, optional
            Runs per agent x task cell (dim ``n_runs``), the same number in
            every cell. Not asked (nor ``sizes["run"]``): the G-study's runs
            as observed. An agent's mean weighs every cell alike, so the run
            error enters with the harmonic mean of runs per cell (coord
            ``effective_n_<run>``), not their mean (the ``n_runs`` coord);
            cells with no run (a task an agent did not run) are left out, so
            the design stays every agent on every task (attr ``run_spread``).
        n_clusters : int or array, optional
            Number of task clusters (dim ``n_clusters``), only when tasks are
            nested in clusters; default the G-study's.
        spread : {"observed", "even"} or sequence of int
            How tasks nested in clusters spread over them. The mean weighs
            every task alike, so an effect of the cluster but not the task
            (agent x cluster) enters with ``sum_k (n_k/N)^2 = 1 / C_eff``,
            ``C_eff = N^2 / sum_k n_k^2`` the effective number of clusters
            (coord ``effective_n_<cluster>``; ``C_eff = C`` only when even).
            ``"observed"`` (default): as unevenly as the G-study's clusters
            (``C_eff / C`` as observed, i.e. the same coefficient of
            variation of cluster sizes; at least the most uneven spread of
            ``N`` tasks in ``C`` clusters), so the G-study's own sizes give
            its design exactly. ``"even"``: every cluster ``N / C`` tasks, the
            best case (this method's rule for clusters before this release;
            runs per cell as ``n_runs`` says). A sequence:
            the planned number of tasks in each cluster (then the task and
            cluster facets are not asked otherwise). No effect without clusters.
        universe : {"new_clusters", "these_clusters"}
            With tasks in clusters: generalise over new clusters (default) or
            over new tasks of these clusters. Refused without clusters.

        Returns
        -------
        xarray.Dataset
            ``sigma2_tau``, ``sigma2_delta``, ``sigma2_Delta``, ``e_rho2``,
            ``phi`` and ``var_paired_diff`` over the size grid. Attrs
            ``dim_<dim>`` say what each dim counts, ``held_at_g_study`` the
            facets kept at their G-study size, ``as_observed`` a size not
            asked for (the shorthand's default: the G-study's own, a
            non-integer mean for unbalanced data, which reproduces its
            coefficients), with clusters ``spread`` (the spread assumed, in
            words) and ``spread_kind`` (``"observed"``, ``"even"`` or
            ``"planned"``), and with runs nested in cells ``run_spread`` (runs
            per cell as observed or even, in words) and ``run_spread_kind``
            (``"observed"`` or ``"even"``). Attr ``universe`` says in words
            which universe the prediction is for; with one task:cluster nesting,
            ``cluster_inflation`` the model's and the data's cluster inflation.
            Sizes asked for must be positive integers.

        Examples
        --------
        %(vc_example)s
        >>> vc.d_study({"task": [10, 20], "run": [1, 4]})["e_rho2"].dims
        ('n_task', 'n_run')
        """
        return _dstudy.d_study(
            self, sizes, n_tasks=n_tasks, n_runs=n_runs, n_clusters=n_clusters, spread=spread,
            universe=universe,
        )

    @fill_doc
    def optimal_allocation(
        self,
        budget: float,
        cost: dict[str, float],
        *,
        n_objects: int | None = None,
        max_sizes: dict[str, int] | None = None,
        criterion: str = "var_paired_diff",
        spread: str = "observed",
        min_tasks: int | None = None,
        alpha: float | None = None,
    ) -> xr.Dataset:
        """Find the cost-optimal D-study under a budget, by enumeration of a size grid.

        The same cost rule, choice of the optimum and floor on the tasks as
        :func:`hierbench.freq.optimal_allocation` (the paired two-agent case): on the eval
        shape (agent, task, run; tasks not in clusters) the optimum has at least ``min_tasks``
        tasks, and an agent x task component estimated at 0 is warned of with its upper bound.

        Parameters
        ----------
        budget : float
            Total budget.
        cost : dict
            Facet -> cost of one new level of it, levels counted as in the
            D-study: one run of one agent on one task (``"run"`` with runs nested
            in cells), one new task (``"task"``), one new family, ...
            Facets not named cost nothing.
        n_objects : int, optional
            Number of objects of measurement (agents) evaluated; default the
            G-study's.
        max_sizes : dict, optional
            Largest size tried per facet (default: 4 x the G-study size, at
            least 16).
        criterion : {"var_paired_diff", "sigma2_Delta", "e_rho2", "phi"}
            Minimised (variances) or maximised (coefficients).
        spread : {"observed", "even"}
            How tasks nested in clusters spread over them, as in
            :meth:`d_study` (default: as unevenly as observed).
        min_tasks, alpha : int, float, optional
            The floor on the tasks, as in :func:`hierbench.freq.optimal_allocation` (default
            the fewest whose sign-flip test can reach ``alpha`` = 0.05: 6); eval shape only.

        Returns
        -------
        xarray.Dataset
            The D-study variables over dims ``n_<facet>`` plus ``cost`` and
            ``feasible``; attrs ``optimum`` (facet -> size), ``optimum_value``,
            ``optimum_cost``, ``budget``, ``criterion`` and (with clusters)
            ``spread``; on the eval shape ``min_tasks``, ``min_tasks_rule``,
            ``floor_binding`` and, at agent x task 0, ``interaction_at_zero``.

        Examples
        --------
        %(vc_example)s
        >>> opt = vc.optimal_allocation(1000, {"task": 5.0, "run": 1.0})
        >>> sorted(opt.attrs["optimum"])
        ['run', 'task']
        """
        grid = _allocation.allocate_grid(self, budget, cost, n_objects, max_sizes, criterion, spread)
        grid = floor_grid(self, grid, criterion, min_tasks, alpha)
        _allocation.warn_optimum_far(self, grid.attrs["optimum"], spread)
        return grid

    def coefficients(
        self,
        *,
        prob: float | None = None,
        ci: str | None = None,
        sizes: dict[str, float] | None = None,
        spread: str | Sequence[int] = "observed",
    ) -> xr.Dataset:
        """E rho^2 and Phi with intervals, at the G-study sizes or at planned ones.

        Parameters
        ----------
        prob : float, optional
            Level (default the result's ``prob``).
        ci : {"profile", "wald"}, optional
            ``"profile"``: profile REML likelihood of the coefficient (the
            components maximised under the coefficient fixed); ``"wald"``: the
            delta method on the logit scale. Default: the result's ``ci_method``.
        sizes : dict, optional
            Facet -> planned number of levels (one D-study point, as in
            :meth:`d_study`); facets not given keep their G-study size.
        spread : {"observed", "even"} or sequence of int
            How tasks nested in clusters spread over them, as in :meth:`d_study`.

        Returns
        -------
        xarray.Dataset
            ``estimate`` and ``ci`` over ``coefficient = ["e_rho2", "phi"]``;
            attrs ``ci_prob``, ``ci_kind``, ``ci_detail`` (also on ``ci``),
            ``sizes`` (the facet sizes the coefficients are at) and, with
            clusters, ``spread``.

        Examples
        --------
        >>> import numpy as np, xarray as xr
        >>> from hierbench.freq import variance_components
        >>> rng = np.random.default_rng(2)
        >>> y = rng.normal(size=(6, 1, 1)) + rng.normal(size=(6, 12, 3))
        >>> vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
        >>> co = vc.coefficients(sizes={"task": 48})
        >>> bool(co["estimate"].sel(coefficient="e_rho2") > vc.e_rho2)
        True
        """
        return _intervals.coefficients(self, prob, ci, sizes, spread)

    # -- tables -------------------------------------------------------------------
    def to_dataset(self) -> xr.Dataset:
        """Return the result as an ``xr.Dataset``.

        ``estimate``, ``ci``, ``se``, ``variance`` (= estimate), ``variance_raw``,
        ``truncated``, ``anova_estimate`` over ``component``; ``cov`` (the estimates'
        covariance) over ``(component, component_b)``; ``sum_sq``, ``df``, ``mean_sq``
        over ``source``. The attrs hold the design (``design`` the formula, ``design_kind``),
        ``e_rho2``, ``phi`` and every plain field: the fit's record (``fit_info``: REML's
        ``converged`` and ``message``), ``ci_method``, ``prob``, ``sizes`` (the facet sizes a
        D-study is at), ``confounded``, ``dropped``, ``note``.
        """
        anova = self.anova
        ds = xr.Dataset(
            {
                "estimate": self.estimate,
                "ci": self.ci,
                "se": self.se,
                "variance": self.estimate,
                "variance_raw": self.components_raw,
                "truncated": self.truncated,
                "anova_estimate": self.anova_estimate,
                "sum_sq": anova["sum_sq"],
                "df": anova["df"],
                "mean_sq": anova["mean_sq"],
                "cov": xr.DataArray(
                    self.cov, dims=("component", "component_b"),
                    coords={"component": list(self.component_names), "component_b": list(self.component_names)},
                ),
            }
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", HierbenchWarning)
            ds.attrs = {
                **self._plain_attrs(),
                "design": self.formula,
                "design_kind": self.design,
                "method": self.method,
                "measurement": str(self.measurement),
                "facets": list(self.facets),
                "n_obs": self.n_obs,
                "grand_mean": self.grand_mean,
                "e_rho2": self.e_rho2,
                "phi": self.phi,
            }
        return ds

    def to_frame(self) -> pd.DataFrame:
        """One row per component: estimate, lower, upper, se, ANOVA-type estimate, ci_flag, scale, note.

        ``scale``: the scale of the score whose variance is split (``"probability"`` for 0/1
        scores, else ``"score"``; None when the result does not know it); ``note``: what
        else a component holds (the residual, with one run per cell: the interaction of
        the other facets too), else "".
        """
        df = super().to_frame()
        df["anova_estimate"] = self.anova_raw
        df["ci_flag"] = _intervals.ci_flags(self, self.ci)
        df["scale"] = self._attrs().get("scale")
        df["note"] = [self._component_note(str(c)) for c in self.component_names]
        return df

    def _component_note(self, name: str) -> str:
        """What the component ``name`` holds besides its own variance ("" when nothing)."""
        if name != "residual" or not self.confounded:
            return ""
        return "; ".join(confounded_words(self._design, f) for f in self.confounded)

    def _repr_lines(self) -> list[str]:
        ci = self.ci
        lines = super()._repr_lines()
        lines[0] = (
            f"{type(self).__name__}: {self.formula} ({self.method}), "
            f"{_intervals.interval_words(ci)}"
        )
        flags = _intervals.ci_flags(self, ci)
        for i, w in enumerate(flags):
            if w:
                lines[i + 1] += "  (!)"
        lines += [
            f"  (!) {n}: {w}" for n, w in zip(self.component_names, flags, strict=True) if w
        ]
        scale = self._attrs().get("scale")
        if scale is not None:
            lines[0] += f"; variances on the {scale} scale"
        return lines + [f"  note: {p}" for p in note_parts(self.note)]


def note_parts(note: str) -> list[str]:
    """The notes ``note`` joins with ``"; "``, split where no parenthesis is open (a note may hold "; " in one)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(note):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and note.startswith("; ", i):
            parts.append(note[start:i])
            start = i + 2
    parts.append(note[start:])
    return [p for p in parts if p]


def confounded_words(design: Design | None, facet: str) -> str:
    """The ``note`` on a facet with one level per cell (one run): what the residual holds.

    The residual is then the interaction of the other facets (agent x task) plus the
    ``facet``-to-``facet`` noise, which one level per cell cannot tell apart.
    """
    if design is None or not design.facets:
        inter = "the interaction of the other facets"
    else:
        whole = frozenset(design.facets)
        name = ":".join(design.primary(whole) + design.nesting(whole))
        inter = f"the {name} interaction" if len(design.facets) > 1 else f"the {name} component"
    return (
        f"one {facet} per cell: the residual holds {inter} and {facet}-to-{facet} noise, "
        f"which are confounded (no separate {facet} row, and a D-study with more {facet}s is NaN)"
    )


def require_components(vc: Any) -> None:
    """Refuse ``components`` that are not a :class:`VarianceComponentsResult`, saying what to give instead.

    The one owner of the planners' rule. A result saved and loaded back
    (:func:`hierbench.io.load_dataset`) is a Dataset: it keeps the components but not all
    that planning reads (each pair's variance, the cluster sizes, the score range), so it
    is named and the two ways on are given.
    """
    if isinstance(vc, VarianceComponentsResult):
        return
    loaded = isinstance(vc, xr.Dataset)  # what load_dataset gives back
    hint = (" (a saved result loaded back keeps the components, not each pair's variance, the cluster sizes "
            "and the score range that planning also reads)") if loaded else ""  # fmt: skip
    raise TypeError(
        f"`components` must be a VarianceComponentsResult from hierbench.freq.variance_components; got "
        f"{type(vc).__name__}{hint}: run variance_components on the pilot log again (a cheap fit), or give "
        "the variances read from its components (sigma2_interaction= and sigma2_residual= to the power "
        "functions, sizes= and sigma2= to cluster_design)"
    )
