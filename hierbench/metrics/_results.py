"""Result objects of the posterior metrics, in the house convention of every hierbench result.

Each is a :class:`hierbench._base.Result`: ``estimate`` and ``ci`` (with
``ci_prob`` and ``ci_kind``), a short repr, ``to_frame()`` and
``to_dataset()``, so the Bayesian half reads like the frequentist one and
:func:`hierbench.compare.side_by_side` lines them up.

They also keep working where code used the raw xarray these functions used
to return: a Dataset-like result (``pass_hat_k``, ``head_to_head``, ...)
answers ``res["draws"]``, ``"estimate" in res`` and Dataset methods
(``res.sel(k=2)``) through :meth:`to_dataset`; a DataArray-like result
(``prob_superiority``, ``rank_probabilities``) answers DataArray methods,
arithmetic and ``res.values`` through its ``estimate``.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

import numpy as np
import xarray as xr

if TYPE_CHECKING:
    import pandas as pd

from .._base import K_TASKS_DIFFER
from .._base import Result
from .._base import field_alias
from .._base import interval_label
from .._base import warn_user
from .._base import wrap_repr

__all__ = [
    "HeadToHeadResult",
    "PosteriorPassKResult",
    "PosteriorSummaryResult",
    "ProbSuperiorityResult",
    "RankProbabilityResult",
    "VarianceComponentDrawsResult",
]


#: what ``min_runs=0`` averages, per model (a pass^k result's ``attrs["model"]``): the words of the
#: undefined-cells warning (both models), then the repr's footnote in full
MIN_RUNS_ZERO = {
    "beta_binomial": (
        "every task the agent ran",
        "every task the agent ran, the model extrapolating to k the tasks run fewer times (each "
        "task's success probability from its posterior given its runs); a task the agent never ran "
        "is left out",
    ),
    "crossed": (
        "every task of the dataset",
        "every task of the dataset, the model extrapolating to k the tasks run fewer times; a cell "
        "the agent never ran is drawn from the fitted agent and task effects, its agent x task "
        "effect (where the fit has one) from its prior",
    ),
}


class _DatasetView:
    """Item and attribute access fall through to :meth:`to_dataset` (the old Dataset return)."""

    #: old names still readable, each an alias with a deprecation warning
    _aliases: ClassVar[dict[str, str]] = {}

    def _compat(self) -> xr.Dataset:
        return self.to_dataset()  # type: ignore[attr-defined]

    def __getitem__(self, key: Any) -> Any:
        if not isinstance(key, str):  # a list of names, as a Dataset takes it
            ds = self._compat()
            return ds[[self._aliases.get(k, k) for k in key]]
        if key in self._aliases:
            warn_user(
                f"{type(self).__name__}[{key!r}] is deprecated; use [{self._aliases[key]!r}]",
                DeprecationWarning,
            )
            key = self._aliases[key]
        if key in self._fields():  # type: ignore[attr-defined]
            return getattr(self, key)
        return self._compat()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._aliases or key in self._compat()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return getattr(self._compat(), name)
        except AttributeError:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}") from None


_BINARY = ("add", "sub", "mul", "truediv", "pow", "lt", "le", "gt", "ge", "eq", "ne")


class _DataArrayView:
    """DataArray methods, arithmetic and ``values`` act on ``estimate`` (the old DataArray return)."""

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str) and key in self._fields():  # type: ignore[attr-defined]
            return getattr(self, key)
        return self.estimate[key]  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.estimate, name)  # type: ignore[attr-defined]

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.estimate.values, dtype=dtype)  # type: ignore[attr-defined]

    def __float__(self) -> float:
        return float(self.estimate)  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]


def _forward(op: str):
    fn = getattr(operator, op)

    def direct(self, other):
        return fn(self.estimate, other.estimate if isinstance(other, Result) else other)

    def reflected(self, other):
        return fn(other, self.estimate)

    return direct, reflected


for _op in _BINARY:
    _d, _r = _forward(_op)
    setattr(_DataArrayView, f"__{_op}__", _d)
    if _op in ("add", "sub", "mul", "truediv", "pow"):
        setattr(_DataArrayView, f"__r{_op}__", _r)


def _lines_of(
    est: xr.DataArray, ci: xr.DataArray, head: str, limit: int = 8, notes: xr.DataArray | None = None
) -> list[str]:
    """The ``head`` line, then up to ``limit`` finite cells ``label: estimate [lower, upper]``, the middle elided.

    The head is wrapped at the house repr width (``wrap_repr``), as the other results'
    sentences are. A NaN cell is not listed but counted in a last line (an agent against
    itself, NaN by definition on an ``(agent, opponent)`` result, is not counted).
    ``notes`` (strings, broadcast to ``est``) adds ``  (note)`` after each cell's line.
    """
    lines = wrap_repr([head])
    if notes is not None:
        notes = notes.broadcast_like(est).transpose(*est.dims)
        notes = notes.stack(_cell=est.dims) if est.ndim > 1 else notes.rename({est.dims[0]: "_cell"})
    flat = est.stack(_cell=est.dims) if est.ndim > 1 else est.rename({est.dims[0]: "_cell"})
    lo = ci.sel(ci_bound="lower", drop=True)
    hi = ci.sel(ci_bound="upper", drop=True)
    flo = lo.stack(_cell=est.dims) if est.ndim > 1 else lo.rename({est.dims[0]: "_cell"})
    fhi = hi.stack(_cell=est.dims) if est.ndim > 1 else hi.rename({est.dims[0]: "_cell"})
    keep = np.flatnonzero(np.isfinite(flat.values))
    n = keep.size
    show = keep if n <= limit else np.r_[keep[: limit - 2], keep[-2:]]
    for r, i in enumerate(show):
        if n > limit and r == limit - 2:
            lines.append(f"  ... ({n - limit} more)")
        lab = flat["_cell"].values[i]
        lab = ", ".join(map(str, lab)) if isinstance(lab, tuple) else str(lab)
        note = f"  ({notes.values[i]})" if notes is not None and notes.values[i] else ""
        lines.append(f"  {lab}: {float(flat[i]):.4g} [{float(flo[i]):.4g}, {float(fhi[i]):.4g}]{note}")
    self_pair = np.zeros(est.size, dtype=bool)
    if {"agent", "opponent"} <= set(est.dims):
        self_pair = (est["agent"] == est["opponent"]).broadcast_like(est).transpose(*est.dims).values.ravel()
    n_nan = int((~np.isfinite(flat.values) & ~self_pair).sum())
    if n_nan:
        lines.append(f"  ({n_nan} NaN cell{'s' if n_nan != 1 else ''} not shown: see to_frame())")
    return lines


@dataclass(frozen=True, repr=False)
class PosteriorSummaryResult(_DatasetView, Result):
    """:func:`hierbench.metrics.posterior_summary`: posterior mean and credible interval."""

    estimate: xr.DataArray
    ci: xr.DataArray

    _estimate_label: ClassVar[str] = "posterior mean of {name}"

    def to_frame(self) -> pd.DataFrame:
        """One row per cell, with the variable's name and what it estimates (``quantity``, ``tasks``) as columns.

        Summaries of two variables (``mean_observed``: these tasks; ``mean_new_task``: a new
        task) then differ in a column, not only in the repr.
        """
        df = super().to_frame()
        if self.estimate.name is not None:
            df["variable"] = str(self.estimate.name)
        for name in ("quantity", "tasks"):
            if name in self.estimate.attrs:
                df[name] = self.estimate.attrs[name]
        return df


@dataclass(frozen=True, repr=False)
class PosteriorPassKResult(_DatasetView, Result):
    """Posterior pass^k or pass@k per agent and ``k`` (:func:`hierbench.metrics.pass_hat_k`).

    Attributes
    ----------
    estimate : xarray.DataArray
        ``(agent, k)``: the posterior mean (of the conditional expectations).
    ci : xarray.DataArray
        Equal-tailed credible interval (``ci_kind = "eti"``) of ``draws``.
    draws : xarray.DataArray
        ``(chain, draw, agent, k)``; ``attrs["draws_of"]`` says what they are.
    n_tasks : xarray.DataArray
        ``(agent, k)``: the tasks each value averages over (NaN for a new task
        from the population), so it can be paired only with an estimate over
        the same tasks.
    attrs : dict
        ``quantity`` ("pass^k" / "pass@k"), ``model``, ``tasks``
        ("observed": these tasks / "population": a new draw of tasks from
        the same population), ``over``, ``scale``, ``draws_of`` and
        ``interval_of`` (what the interval is for, in words; the repr's
        header says it).
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    draws: xr.DataArray
    n_tasks: xr.DataArray
    attrs: dict = field(default_factory=dict)

    _aliases: ClassVar[dict[str, str]] = {"mean": "estimate"}

    @property
    def mean(self) -> xr.DataArray:
        """Deprecated alias of ``estimate``."""
        warn_user("`.mean` is deprecated; use `.estimate`", DeprecationWarning)
        return self.estimate

    def to_frame(self) -> pd.DataFrame:
        """One row per (agent, k), with what the values are as columns.

        ``quantity`` (pass^k / pass@k) and ``tasks`` (observed / population),
        then, where the attrs hold them, ``over`` (which tasks), ``draws_of``
        (what the draws, hence the interval, describe) and ``model``: two
        results whose intervals are for different things differ in a column.
        """
        df = super().to_frame()
        for name in ("quantity", "tasks"):
            df[name] = self.attrs.get(name)
        for name in ("over", "draws_of", "model"):
            if name in self.attrs:
                df[name] = self.attrs[name]
        return df

    def _repr_lines(self) -> list[str]:
        """Head, cells and, where the tasks behind a value differ across ``k``, each cell's ``n tasks`` and why."""
        a = self.attrs
        what = f" for {a['interval_of']}" if a.get("interval_of") else ""
        nt, notes = self.n_tasks, None
        differ = "k" in nt.dims and nt.sizes["k"] > 1 and bool(((nt != nt.isel(k=0)) & nt.notnull()).any())
        if differ:
            m = nt.broadcast_like(self.estimate).transpose(*self.estimate.dims)
            text = [f"{int(c)} task{'s' if c != 1 else ''}" if np.isfinite(c) else "" for c in m.values.ravel()]
            notes = m.copy(data=np.array(text, dtype=object).reshape(m.shape))
        lines = _lines_of(
            self.estimate,
            self.ci,
            f"{type(self).__name__}: posterior {a.get('quantity', '?')} over {a.get('over', '?')} "
            f"({a.get('model', '?')} model), mean with {interval_label(self.ci)} interval{what}",
            notes=notes,
        )
        if differ:
            every = MIN_RUNS_ZERO.get(str(a.get("model")))
            lines += wrap_repr([f"  {K_TASKS_DIFFER}" + (f"; min_runs=0 averages {every[1]}" if every else "")])
        return lines


@dataclass(frozen=True, repr=False, eq=False)
class _MonteCarloProbabilities(_DataArrayView, Result):
    """Probabilities estimated as shares of posterior draws (:func:`hierbench.metrics._common.mc_interval`).

    ``estimate`` the shares, ``ci`` their Monte Carlo interval (Wilson, ``n`` =
    effective sample size), ``ess`` that effective sample size.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    ess: xr.DataArray


@dataclass(frozen=True, repr=False, eq=False)
class ProbSuperiorityResult(_MonteCarloProbabilities):
    """:func:`hierbench.metrics.prob_superiority`: ``P(row agent > column agent)``.

    ``estimate`` is the probability matrix over ``(agent, opponent)`` (NaN on
    the diagonal), with attrs ``var``, ``ties``, ``n_draws``, ``mcse_max`` (the
    largest Monte Carlo SE, with ``n`` the effective sample size) and
    ``scale``; ``ci`` is its Monte Carlo interval (Wilson, ``n`` = effective
    sample size, in ``ess``). ``difference`` and ``difference_ci`` are the
    posterior mean and equal-tailed interval of ``var_row - var_column``, the
    counterpart of :func:`hierbench.freq.compare_agents`' ``mean_diff``.
    """

    difference: xr.DataArray
    difference_ci: xr.DataArray

    def _repr_lines(self) -> list[str]:
        a = self.estimate.attrs
        what = f"P(row's {a.get('var', '?')} > column's) over {a.get('n_draws', '?')} draws"
        return _lines_of(
            self.estimate,
            self.ci,
            f"{type(self).__name__}: {what}, with {interval_label(self.ci)} Monte Carlo interval",
        )


@dataclass(frozen=True, repr=False, eq=False)
class RankProbabilityResult(_MonteCarloProbabilities):
    """:func:`hierbench.metrics.rank_probabilities`: ``P(agent holds rank r)``, 1 = best.

    ``estimate`` over ``(agent, rank)``; ``ci`` its Monte Carlo interval (as in
    :class:`ProbSuperiorityResult`); ``expected_rank`` per agent.
    """

    expected_rank: xr.DataArray

    def _repr_lines(self) -> list[str]:
        a = self.estimate.attrs
        order = np.argsort(self.expected_rank.values, kind="stable")
        p1 = self.estimate.isel(rank=0)
        lines = [
            f"{type(self).__name__}: P(rank) by {a.get('var', '?')} over {a.get('n_draws', '?')} "
            f"draws; expected rank and P(rank 1), best first"
        ]
        agents = self.estimate[self.estimate.dims[0]].values
        show = order if order.size <= 8 else np.r_[order[:6], order[-2:]]
        for r, i in enumerate(show):
            if order.size > 8 and r == 6:
                lines.append(f"  ... ({order.size - 8} more)")
            lines.append(
                f"  {agents[i]}: expected rank {float(self.expected_rank[i]):.3g}, "
                f"P(rank 1) {float(p1[i]):.3g}"
            )
        return lines


@dataclass(frozen=True, repr=False)
class HeadToHeadResult(_DatasetView, Result):
    """:func:`hierbench.metrics.head_to_head`: predicted outcome of one more battle.

    ``estimate`` is ``expected_score`` (Elo's, ``p_win + p_tie / 2``) and ``ci``
    its equal-tailed interval; ``p_win``, ``p_tie``, ``p_loss`` and ``p_win_ci``
    beside them, all over ``(agent, opponent)``.
    """

    p_win: xr.DataArray
    p_tie: xr.DataArray
    p_loss: xr.DataArray
    expected_score: xr.DataArray
    p_win_ci: xr.DataArray
    expected_score_ci: xr.DataArray
    attrs: dict = field(default_factory=dict)

    estimate = field_alias("expected_score", "The expected score (``expected_score``), under the house name.")
    ci = field_alias("expected_score_ci", "Its equal-tailed interval (``expected_score_ci``).")

    def _repr_lines(self) -> list[str]:
        """The agents by their average expected score against the others (no self-pairs), best first.

        Every pair, with its interval, is in :meth:`to_frame`.
        """
        est = self.expected_score.transpose("agent", "opponent")
        agents = [str(a) for a in est["agent"].values]
        vals = np.where(np.equal.outer(agents, [str(o) for o in est["opponent"].values]), np.nan, est.values)
        with np.errstate(invalid="ignore"):
            mean = np.nanmean(np.where(np.isfinite(vals), vals, np.nan), axis=1)
        order = np.argsort(-np.nan_to_num(mean, nan=-np.inf), kind="stable")
        n = len(agents)
        lines = [
            f"{type(self).__name__}: expected score of one more battle (p_win + p_tie / 2), "
            f"{n} agents, {n * (n - 1)} ordered pairs; {interval_label(self.ci)} interval per pair in to_frame()",
            "  average over the opponents, best first:",
        ]
        show = list(order) if n <= 11 else [*order[:8], *order[-3:]]
        for j, i in enumerate(show):
            if n > 11 and j == 8:
                lines.append(f"  ... ({n - 11} more)")
            lines.append(f"  {agents[i]}: {mean[i]:.3f}")
        return lines


@dataclass(frozen=True, repr=False)
class VarianceComponentDrawsResult(_DatasetView, Result):
    """The result of :func:`hierbench.metrics.crossed_variance_components`.

    Components are named as in :func:`hierbench.freq.variance_components` for
    the same facets.

    ``estimate`` (posterior mean) and ``ci`` (equal-tailed) over ``component``;
    ``draws(chain, draw, component)``; ``note`` over ``component`` says why a
    component is undefined (NaN) or what else it holds. Item and attribute access answer as the
    Dataset of one variable of draws per component that this function used to
    return (``res["task"]``, ``res.data_vars``); ``res["agent_task"]`` is a
    deprecated alias of the agent x task component.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    draws: xr.DataArray
    note: xr.DataArray | None = None
    attrs: dict = field(default_factory=dict)

    _aliases: ClassVar[dict[str, str]] = {"agent_task": "agent:task"}
    _estimate_label: ClassVar[str] = "posterior mean of the variance components on the {scale} scale"

    def to_frame(self) -> pd.DataFrame:
        """One row per component; ``scale`` (latent / probability) says which variances they are."""
        df = super().to_frame()
        df["scale"] = self.attrs.get("scale")
        return df

    def _repr_lines(self) -> list[str]:
        """The components, then what a note says of any (undefined, or holding another too)."""
        said = {} if self.note is None else self.note.to_series().to_dict()
        return super()._repr_lines() + [f"  note: {c} {v}" for c, v in said.items() if v]

    def _compat(self) -> xr.Dataset:
        ds = self.draws.to_dataset("component")
        ds.attrs = dict(self.attrs)
        return ds

    def __getitem__(self, key: str) -> Any:
        names = [str(c) for c in self.draws["component"].values]
        if key == "agent_task" and "agent:task" not in names:
            found = [c for c in names if c.startswith("agent:task")]
            if not found:
                raise KeyError(
                    f"this model has no agent x task component; components {names}"
                )
            key = found[0]
            warn_user(
                f"['agent_task'] is deprecated; the component is named {key!r}",
                DeprecationWarning,
            )
            return self._compat()[key]
        return super().__getitem__(key)
