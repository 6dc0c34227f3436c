"""Cost, latency, tokens and steps: quantiles with distribution-free intervals, means, the Pareto frontier.

* :func:`quantile_ci`: p50 / p95 (any quantile) with the order-statistic
  interval ``[X_(l), X_(u)]``, whose coverage ``P(l <= B < u)``,
  ``B ~ Binomial(n, q)``, holds for any continuous distribution (no
  bootstrap, no normality); or a task bootstrap when runs share a task.
* :func:`mean_ci`: the mean of a per-run quantity with the task bootstrap of
  :func:`hierbench.freq.bootstrap_ci` (clustered when tasks have clusters).
* :func:`pareto_frontier`: which agents are on the accuracy-cost Pareto
  frontier, and how often each is under task resampling.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr
from scipy import stats

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import HierbenchWarning
from ..._base import ResampledResult
from ..._base import Result
from ..._base import UndefinedMetricWarning
from ..._base import UndefinedWarning
from ..._base import check_choice
from ..._base import check_int
from ..._base import check_prob
from ..._base import cluster_codes
from ..._base import cluster_label
from ..._base import counted
from ..._base import interval_label
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from ..._docs import fill_doc
from ..._numerics import wilson_bounds
from .._inputs import NONNEGATIVE
from .._inputs import data_variable
from .._inputs import numeric_values
from .._inputs import task_resampling
from .._kernels import bootstrap_detail
from .._kernels import few_clusters_attrs
from .._kernels import normal_z
from .._kernels import percentile_bounds
from .._kernels import ratio
from .._kernels import weight_blocks
from .._rates import EmptySampleWarning
from .._resampling import BootstrapResult
from .._resampling import bootstrap_ci

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "ParetoResult",
    "QuantileResult",
    "UnboundedQuantileWarning",
    "mean_ci",
    "order_statistic_interval",
    "pareto_frontier",
    "quantile_ci",
]


class UnboundedQuantileWarning(UndefinedWarning):
    """Too few values for a finite order-statistic bound at this level: the bound is -inf or +inf."""


def order_statistic_interval(
    n: int, q: float, prob: float = DEFAULT_PROB
) -> tuple[int, int, float]:
    """Ranks ``(l, u)`` (1-based) of the distribution-free interval ``[X_(l), X_(u)]`` for the ``q``-quantile.

    With ``B ~ Binomial(n, q)`` (the number of values below the true
    quantile), ``P(X_(l) <= xi_q <= X_(u)) >= P(l <= B <= u - 1)``, with
    equality for continuous distributions. ``l`` is the largest rank with
    ``P(B <= l - 1) <= (1 - prob) / 2`` and ``u`` the smallest with
    ``P(B >= u) <= (1 - prob) / 2``. ``l = 0`` means no finite lower bound,
    ``u = n + 1`` no finite upper bound.

    Returns
    -------
    (l, u, coverage)
        ``coverage`` is the exact level ``P(l <= B <= u - 1)`` (>= prob
        whenever both bounds are finite).

    Examples
    --------
    >>> order_statistic_interval(100, 0.5)   # the median of 100 values: X_(40) to X_(61)
    (40, 61, 0.9647997997822952)
    """
    n = check_int(n, "n", min=1)
    prob = check_prob(prob)
    if not 0 < q < 1:
        raise ValueError(f"`q` must satisfy 0 < q < 1; got q={q!r}")
    a = (1 - prob) / 2
    cdf = stats.binom.cdf(np.arange(n + 1), n, q)
    lower = int((cdf <= a).sum())  # l - 1 = largest k with F(k) <= a
    u = int(np.argmax(cdf >= 1 - a)) + 1
    cov = (cdf[u - 1] if u - 1 <= n else 1.0) - (cdf[lower - 1] if lower >= 1 else 0.0)
    return lower, u, float(cov)


@dataclass(frozen=True, repr=False)
class QuantileResult(Result):
    """Result of :func:`quantile_ci`.

    Attributes
    ----------
    estimate : DataArray (agent, quantile)
        Sample quantiles (numpy's linear interpolation).
    ci : DataArray (agent, quantile, ci_bound)
    coverage : DataArray (agent, quantile)
        Exact coverage of the order-statistic interval (NaN for the bootstrap).
    n : DataArray (agent)
        Values used (NaN values, runs that did not happen, are not counted).
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    coverage: xr.DataArray
    n: xr.DataArray
    attrs: dict = field(default_factory=dict)

    _estimate_label = "quantiles of {name}"


@fill_doc
def quantile_ci(
    data: xr.Dataset | xr.DataArray,
    q: float | Sequence[float] = (0.5, 0.95),
    *,
    var: str | None = "latency",
    method: str = "order-statistic",
    prob: float = DEFAULT_PROB,
    agent_dim: str = "agent",
    task_dim: str = "task",
    cluster: str | None = "auto",
    n_resamples: int = 2000,
    rng: None | int | np.random.Generator = None,
) -> QuantileResult:
    """Quantiles (p50, p95, ...) of a per-run quantity with intervals, per agent.

    Parameters
    ----------
    data : Dataset or DataArray
        An eval dataset holding ``var`` (e.g. ``latency``, ``cost``,
        ``tokens``, ``steps``) over ``(agent, task, run)``, or that DataArray.
        NaN marks a run that did not happen.
    q : float or sequence of floats
        Quantile levels in (0, 1).
    var : str
        The variable of a Dataset.
    method : {"order-statistic", "bootstrap"}
        ``"order-statistic"``: distribution-free interval assuming the values
        are independent draws (one run per task, or tasks run once). With
        several runs per task the runs of a task are correlated, and so are the
        tasks of one cluster; a :class:`~hierbench.HierbenchWarning` says so
        and ``"bootstrap"`` (resampling tasks, whole clusters when clustered)
        is the safer choice.
    %(prob)s
    agent_dim, task_dim : str
    cluster : str or None
        Task coord naming clusters (``"auto"``: ``cluster`` if present). The
        bootstrap resamples whole clusters; the order-statistic interval cannot
        use them and warns where the tasks have clusters (``cluster=None``
        takes the tasks as independent and says nothing).
    %(n_resamples)s
    %(rng)s

    Returns
    -------
    QuantileResult
        Per agent and quantile level: the sample quantile, its interval at
        ``prob`` (order-statistic or bootstrap, as ``method`` says), the
        order-statistic interval's exact coverage, and the number of values used.
        The bootstrap over fewer than 10 tasks, or clusters worth fewer than 20
        equal ones, warns (a ``SmallSampleWarning``) and records it in ``attrs``
        as :func:`hierbench.freq.pareto_frontier` does.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> lat = xr.DataArray(np.arange(1.0, 101.0)[None, :, None], dims=("agent", "task", "run"),
    ...                    coords={"agent": ["a"]})
    >>> r = quantile_ci(lat, q=0.5, var=None)
    >>> float(r.estimate.squeeze()), r.ci.squeeze().values.tolist()
    (50.5, [40.0, 61.0])
    """
    prob = check_prob(prob)
    check_choice(method, "method", ["order-statistic", "bootstrap"])
    qs = np.atleast_1d(np.asarray(q))
    if (
        qs.dtype.kind not in "iuf"
        or qs.ndim != 1
        or qs.size == 0
        or not np.all((qs > 0) & (qs < 1))
    ):
        raise ValueError(f"`q` must be levels with 0 < q < 1; got {q!r}")
    qs = qs.astype(float)
    da, flat, has_agent = _values(data, var, agent_dim, task_dim)
    est = np.full((flat.shape[0], qs.size), np.nan)
    for a in range(flat.shape[0]):
        v = flat[a][np.isfinite(flat[a])]
        if v.size:
            est[a] = np.quantile(v, qs)
    _warn_empty(flat, da, agent_dim, var, _scored_runs(data, var, agent_dim))
    lo, hi, cov, kind, detail, few = _quantile_bounds(da, flat, qs, prob, method, cluster, task_dim, n_resamples, rng)
    agents = da[agent_dim].values if agent_dim in da.coords else np.arange(flat.shape[0])
    coords = {agent_dim: agents, "quantile": qs}
    est_da = xr.DataArray(est, dims=(agent_dim, "quantile"), coords=coords, name=var or "value")
    n = np.isfinite(flat).sum((1, 2))
    n_da = xr.DataArray(n, dims=(agent_dim,), coords={agent_dim: agents})
    if not has_agent:
        est_da, n_da = est_da.isel({agent_dim: 0}, drop=True), n_da.isel({agent_dim: 0}, drop=True)
        lo, hi, cov = lo[0], hi[0], cov[0]
    ci = make_interval(lo, hi, prob=prob, kind=kind, detail=detail, template=est_da)
    ci.attrs.update(few)
    return QuantileResult(
        estimate=est_da,
        ci=ci,
        coverage=est_da.copy(data=cov).rename("coverage"),
        n=n_da,
        attrs={"method": method, "var": var, **few},
    )


def _quantile_bounds(da, flat, qs, prob, method, cluster, task_dim, n_resamples, rng):
    """``(lower, upper, coverage, kind, detail, few)`` of :func:`quantile_ci` by ``method``.

    ``few`` holds the few-units attrs of a bootstrap (``few_clusters_attrs``, which warns);
    the order-statistic interval warns where the tasks have clusters it cannot use.
    """
    if method == "order-statistic":
        _warn_clusters_ignored(da, cluster, task_dim)
        lo, hi, cov = _order_statistic_bounds(flat, qs, prob)
        return lo, hi, cov, "order-statistic", "distribution-free; exact coverage in `coverage`", {}
    n_resamples = check_int(n_resamples, "n_resamples", min=2)
    codes, gen, unit = task_resampling(da, cluster, task_dim, rng)
    label = cluster_label(da, cluster) if codes is not None else ""
    few = few_clusters_attrs(codes, f"clusters of `{label}`", prob, n_plain=flat.shape[1],
                             then="; the quantiles' intervals look surer than the data allow")  # fmt: skip
    lo, hi = percentile_bounds(_bootstrap_quantiles(flat, qs, codes, gen, n_resamples), prob)
    return lo, hi, np.full(lo.shape, np.nan), "percentile", bootstrap_detail(unit, n_resamples), few


def _warn_clusters_ignored(da: xr.DataArray, cluster: str | None, task_dim: str) -> None:
    """Warn where the tasks have clusters, which the order-statistic interval takes as independent.

    Every task its own cluster is no clustering, and says nothing; ``cluster=None`` neither.
    """
    cc = cluster_codes(da, cluster, dim=task_dim)
    if cc is None or len(cc[1]) == da.sizes[task_dim]:
        return
    warn_user(
        f"the tasks fall in {len(cc[1])} clusters of `{cluster_label(da, cluster)}`, which the order-statistic "
        "interval does not use: it assumes independent values, and tasks of one cluster are alike, so it can be "
        "too narrow; method='bootstrap' resamples whole clusters (cluster=None takes the tasks as independent "
        "and silences this)",
        HierbenchWarning,
    )


def _values(data, var, agent_dim: str, task_dim: str):
    """Return the values as (agent, task, everything else flattened).

    An agent dim is added when there is none; infinite values are refused.
    """
    da = data_variable(data, var)
    if task_dim not in da.dims:
        raise ValueError(
            f"`task_dim` must be a dimension of the values {da.dims}; got {task_dim!r}"
        )
    if da.sizes[task_dim] == 0:
        raise ValueError(f"`data` has no {task_dim}s: there is nothing to take quantiles of")
    has_agent = agent_dim in da.dims
    if not has_agent:
        da = da.expand_dims({agent_dim: ["all"]})
    other = [d for d in da.dims if d not in (agent_dim, task_dim)]
    label = "data" if var is None else f"data.{var}"
    arr = numeric_values(
        da.transpose(agent_dim, task_dim, *other),
        label,
        nonnegative=(var or da.name) in NONNEGATIVE,
    )
    flat = arr.reshape(arr.shape[0], arr.shape[1], -1)
    return da, flat, has_agent


def _scored_runs(data, var, agent_dim: str) -> np.ndarray | None:
    """Scored runs per agent of an eval dataset whose ``var`` is not the score (else None)."""
    if not isinstance(data, xr.Dataset) or var == "score" or "score" not in data:
        return None
    scored = data["score"].notnull()
    return np.atleast_1d(scored.sum([d for d in scored.dims if d != agent_dim]).values)


def _warn_empty(flat: np.ndarray, da: xr.DataArray, agent_dim: str, var, runs=None, what="quantiles") -> np.ndarray:
    """Name the agents with no value of ``var`` at all (their ``what`` are NaN); returns that mask.

    ``runs`` (scored runs per agent, ``_scored_runs``) tells a variable not recorded on
    runs that happened from an agent that never ran.
    """
    empty = ~np.isfinite(flat).any((1, 2))
    if empty.any():
        names = [str(a) for a in np.asarray(da[agent_dim].values)[empty]][:5]
        ran = np.zeros(0) if runs is None or runs.shape != empty.shape else runs[empty & (runs > 0)]
        k, n = ran.size, int(empty.sum())
        who = f"all {k} have" if k == n > 1 else "it has" if k == n else f"{k} of them {'has' if k == 1 else 'have'}"
        lo, hi = (int(ran.min()), int(ran.max())) if k else (0, 0)
        had = (f"; {who} scored runs ({lo if lo == hi else f'{lo} to {hi}'} each): the runs happened, "
               f"their {var} was not recorded" if k else "")  # fmt: skip
        warn_user(
            f"{int(empty.sum())} agents have no {var or 'value'} at all (e.g. {names}): their "
            f"{what} are undefined (NaN){had}",
            EmptySampleWarning,
        )
    return empty


def _order_statistic_bounds(flat: np.ndarray, qs: np.ndarray, prob: float):
    """Return the order-statistic bounds and exact coverage per (agent, quantile).

    With a named warning for correlated runs and for bounds that are infinite.
    """
    A = flat.shape[0]
    lo, hi, cov = (np.full((A, qs.size), np.nan) for _ in range(3))
    if (np.isfinite(flat).sum(2) > 1).any():
        warn_user(
            "some tasks have several runs: runs of one task are not independent draws, so the "
            "order-statistic interval can be too narrow; consider method='bootstrap' (resamples tasks)",
            HierbenchWarning,
        )
    unbounded = 0
    for a in range(A):
        v = np.sort(flat[a][np.isfinite(flat[a])])
        if v.size == 0:
            continue
        for j, qq in enumerate(qs):
            lower, u, c = order_statistic_interval(v.size, float(qq), prob)
            lo[a, j] = v[lower - 1] if lower >= 1 else -np.inf
            hi[a, j] = v[u - 1] if u <= v.size else np.inf
            unbounded += int(lower < 1) + int(u > v.size)
            cov[a, j] = c
    if unbounded:
        tail = max(qs.max(), 1 - qs.min())
        need = int(np.ceil(np.log((1 - prob) / 2) / np.log(tail)))
        warn_user(
            f"{unbounded} interval bounds are infinite: too few values to bound those quantiles "
            f"at level {prob} without assumptions (the q = {tail:g} tail needs n >= {need} "
            "values)",
            UnboundedQuantileWarning,
        )
    return lo, hi, cov


def _bootstrap_quantiles(flat, qs, codes, gen, n_resamples) -> np.ndarray:
    """Quantiles (inverted CDF) of each agent's values under task resampling (B, A, Q)."""
    A, T, R = flat.shape
    dist = np.full((n_resamples, A, qs.size), np.nan)
    for a in range(A):
        vals = flat[a].ravel()
        task_of = np.repeat(np.arange(T), R)
        ok = np.isfinite(vals)
        vals, task_of = vals[ok], task_of[ok]
        if vals.size == 0:
            continue
        order = np.argsort(vals, kind="stable")
        vs, ts = vals[order], task_of[order]
        done = 0
        for w in weight_blocks(T, n_resamples, gen, clusters=codes, elements_per_resample=vs.size):
            b = w.shape[0]
            cw = np.cumsum(w[:, ts], axis=1)  # (b, N)
            tot = cw[:, -1:]
            for j, qq in enumerate(qs):
                k = np.argmax(cw >= qq * tot - 1e-9, axis=1)  # inverted-CDF quantile
                dist[done : done + b, a, j] = np.where(tot[:, 0] > 0, vs[k], np.nan)
            done += b
    return dist


@renamed_kwargs(dim="run_dim")
def mean_ci(
    data: xr.Dataset | xr.DataArray,
    *,
    var: str | None = "cost",
    prob: float = DEFAULT_PROB,
    method: str = "percentile",
    n_resamples: int = 2000,
    cluster: str | None = "auto",
    rng: None | int | np.random.Generator = None,
    run_dim: str = "run",
    task_dim: str = "task",
    agent_dim: str = "agent",
) -> BootstrapResult:
    """Mean of a per-run quantity (cost, latency, tokens, steps) with the task bootstrap.

    The mean is over tasks of each task's mean over its runs (runs of a task
    are not independent draws), resampling tasks (clusters) with
    :func:`hierbench.freq.bootstrap_ci`.

    Parameters
    ----------
    data : xarray.Dataset or xarray.DataArray
        An eval dataset holding ``var`` per run, or the per-run values themselves.
    var : str or None
        The variable of ``data`` (default ``"cost"``); unused for a DataArray.
    prob, method, n_resamples, cluster, rng, run_dim, task_dim, agent_dim
        As in :func:`hierbench.freq.bootstrap_ci`.

    Returns
    -------
    BootstrapResult
        Per agent: the mean over tasks of each task's mean ``var``, with its
        task-bootstrap interval at ``prob`` (``method``) and the resampling
        settings in its attrs; its ``quantity`` (and its repr) name the variable
        (``"mean cost"``; a DataArray by its own name). An agent with no value of
        ``var`` at all is NaN, named in an ``EmptySampleWarning`` that counts the
        scored runs it has (an eval dataset's cost can be missing from every run).
        Fewer than 10 tasks resampled one by one warn (a ``SmallSampleWarning``,
        its text in ``attrs["few_units"]``) as :func:`hierbench.freq.pareto_frontier`
        does; few clusters are warned about by :func:`hierbench.freq.bootstrap_ci`.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> cost = xr.DataArray(np.arange(1.0, 21.0).reshape(1, 10, 2), dims=("agent", "task", "run"))
    >>> float(mean_ci(cost, var=None, n_resamples=500, rng=0).estimate.squeeze())
    10.5
    """
    values, flat, _ = _values(data, var, agent_dim, task_dim)  # checked as quantile_ci's
    da = data_variable(data, var)
    # what the values are of (a DataArray: its own name), which the result's quantity names ("mean cost")
    name = str((da.name if isinstance(data, xr.DataArray) else var) or "value")
    empty = _warn_empty(flat, values, agent_dim, name, _scored_runs(data, var, agent_dim), "means")
    with warnings.catch_warnings():
        if empty.any():  # said above, with the scored runs those agents have; not again as "no cost at all"
            warnings.simplefilter("ignore", EmptySampleWarning)
        res = bootstrap_ci(
            da.rename(name),
            "mean",
            method=method,  # type: ignore[arg-type]
            prob=prob,
            n_resamples=n_resamples,
            cluster=cluster,
            rng=rng,
            run_dim=run_dim,
            task_dim=task_dim,
            agent_dim=agent_dim,
        )
    if "n_clusters" not in res.attrs:  # tasks resampled one by one: bootstrap_ci says nothing of few tasks
        few = few_clusters_attrs(None, "tasks", prob, n_plain=flat.shape[1],
                                 then="; the means' intervals look surer than the data allow")  # fmt: skip
        res.attrs.update(few)
        res.ci.attrs.update(few)
    return res


@dataclass(frozen=True, repr=False)
class ParetoResult(ResampledResult):
    """Result of :func:`pareto_frontier`.

    Attributes
    ----------
    estimate : DataArray (agent)
        Membership probability: share of task resamples in which the agent is
        on the accuracy-cost frontier.
    ci : DataArray (agent, ci_bound)
        Wilson interval of that share (its Monte Carlo uncertainty over
        ``n_resamples``; the sampling uncertainty is the share itself).
    on_frontier : DataArray (agent)
        On the frontier of the observed data.
    accuracy, cost : DataArray (agent)
        Observed mean accuracy over the tasks scored and mean cost over the
        tasks with a recorded cost (per task, the mean over runs).
    accuracy_ci, cost_ci : DataArray (agent, ci_bound)
        Task-bootstrap percentile intervals from the same resamples.
    distribution : DataArray (resample, agent, quantity)
        Resampled accuracy and cost.

    Its ``to_frame()`` gives each interval its own kind: ``ci_kind`` for ``lower`` /
    ``upper`` (the Wilson interval of the share), ``accuracy_ci_kind`` and
    ``cost_ci_kind`` beside ``accuracy_lower`` / ``accuracy_upper`` and
    ``cost_lower`` / ``cost_upper`` (percentile bootstrap).
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    on_frontier: xr.DataArray
    accuracy: xr.DataArray
    cost: xr.DataArray
    accuracy_ci: xr.DataArray
    cost_ci: xr.DataArray
    attrs: dict = field(default_factory=dict)

    def _repr_lines(self) -> list[str]:
        """What the share is and what its interval is not; each agent's accuracy, cost and place."""
        a = self.attrs
        units = (f"{a['n_clusters']} clusters of `{a.get('cluster_column')}`" if a.get("n_clusters")
                 else str(a.get("unit", "tasks")))  # fmt: skip
        head = (
            f"{type(self).__name__}: P(on the {self.accuracy.name}-{self.cost.name} frontier) over "
            f"{a.get('n_resamples', '?')} resamples of {units}; {interval_label(self.ci)} interval: the "
            "Monte Carlo error of that share, not a confidence interval"
        )
        return [head, *self._cell_lines()]

    def to_frame(self) -> pd.DataFrame:
        """One row per agent; each interval's level and kind beside its bounds (``<name>_ci_kind``, ``<name>_ci_prob``)."""
        df = super().to_frame()
        for name, iv in (("accuracy", self.accuracy_ci), ("cost", self.cost_ci)):
            at = list(df.columns).index(f"{name}_upper") + 1
            df.insert(at, f"{name}_ci_kind", iv.attrs.get("ci_kind"))
            df.insert(at, f"{name}_ci_prob", float(iv.attrs.get("ci_prob", np.nan)))
        return df

    def _cell_notes(self) -> xr.DataArray:
        """Each agent's observed accuracy and cost, and whether it is on the observed frontier."""
        text = [
            f"{self.accuracy.name} {acc:.4g}, {self.cost.name} {cost:.4g}" + ("; on the frontier" if on else "")
            for acc, cost, on in zip(self.accuracy.values, self.cost.values, self.on_frontier.values, strict=True)
        ]
        return self.accuracy.copy(data=np.array(text, dtype=object)).rename(None)


def _frontier(acc: np.ndarray, cost: np.ndarray) -> np.ndarray:
    """On-frontier mask (..., A): no other agent at least as accurate and as cheap, and better in one."""
    ai, aj = acc[..., :, None], acc[..., None, :]
    ci, cj = cost[..., :, None], cost[..., None, :]
    dominated = ((aj >= ai) & (cj <= ci) & ((aj > ai) | (cj < ci))).any(-1)
    ok = np.isfinite(acc) & np.isfinite(cost)
    return ok & ~dominated


@renamed_kwargs(dim="run_dim")
@fill_doc
def pareto_frontier(
    data: xr.Dataset,
    *,
    accuracy: str = "score",
    cost: str = "cost",
    prob: float = DEFAULT_PROB,
    n_resamples: int = 2000,
    cluster: str | None = "auto",
    run_dim: str = "run",
    task_dim: str = "task",
    agent_dim: str = "agent",
    rng: None | int | np.random.Generator = None,
) -> ParetoResult:
    """Find the accuracy-cost Pareto frontier across agents, with membership probabilities under task resampling.

    Accuracy and cost are each agent's mean over tasks of the per-task mean
    over runs: accuracy over every task it has a score on (its success rate,
    as :func:`hierbench.freq.success_rate` gives it), cost over every task it
    has a recorded cost on. Where some scored tasks lack a cost, a
    ``HierbenchWarning`` names the agents and counts those tasks: the two
    means then rest on different tasks, and the mean cost leans towards the
    tasks that recorded one (a cost lost on solved tasks only is not a cost
    lost at random). An agent is on the frontier when no other agent is at least as
    accurate and at most as costly, and strictly better in one. Tasks (whole
    clusters when clustered) are resampled, the same draw for every agent,
    and the frontier recomputed in each resample.

    Parameters
    ----------
    data : Dataset
        Eval dataset with ``accuracy`` (score) and ``cost`` over (agent, task, run).
    accuracy, cost : str
        Variable names.
    prob : float
        Level of the accuracy and cost intervals.
    %(n_resamples)s
    cluster : str or None
    run_dim, task_dim, agent_dim : str
    %(rng)s

    Returns
    -------
    ParetoResult
        Where clusters are resampled, its ``attrs`` and its intervals' attrs hold
        ``n_clusters``, ``n_clusters_effective`` and ``few_clusters`` as
        :func:`hierbench.freq.bootstrap_ci`'s do (its ``attrs`` also
        ``cluster_column``, the clusters' name, ``""`` without clusters); clusters worth fewer than
        ``FEW_CLUSTERS`` (20) equal ones are warned about (a ``SmallSampleWarning``).
        An agent with no recorded cost has its accuracy but no place on the
        frontier (NaN share, named in an ``UndefinedMetricWarning``).

    Raises
    ------
    HierbenchError
        Where no run has a recorded cost (a log that records none, such as
        METR's): there is no frontier to find.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> s = np.array([[1, 1, 0, 1], [1, 0, 0, 0], [1, 1, 1, 1.0]])[..., None]
    >>> c = np.array([[1, 1, 1, 1], [2, 2, 2, 2], [5, 5, 5, 5.0]])[..., None]
    >>> ds = xr.Dataset({"score": (("agent", "task", "run"), s), "cost": (("agent", "task", "run"), c)},
    ...                 coords={"agent": ["cheap", "bad", "best"]})
    >>> r = pareto_frontier(ds, n_resamples=500, rng=0)
    >>> r.on_frontier.values.tolist()
    [True, False, True]
    """
    prob = check_prob(prob)
    n_resamples = check_int(n_resamples, "n_resamples", min=2)
    acc_cell, cost_cell, agents = _cell_means(data, accuracy, cost, (agent_dim, task_dim, run_dim))
    # each mean over the cells that record it: accuracy over every scored cell, cost over every costed one
    pa, pc = np.isfinite(acc_cell).astype(float), np.isfinite(cost_cell).astype(float)
    a0 = np.where(pa > 0, acc_cell, 0.0)
    c0 = np.where(pc > 0, cost_cell, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        acc_obs = a0.sum(1) / pa.sum(1)
        cost_obs = c0.sum(1) / pc.sum(1)
    codes, gen, unit = task_resampling(data, cluster, task_dim, rng)
    label = cluster_label(data, cluster) if codes is not None else ""
    few = few_clusters_attrs(codes, f"clusters of `{label}`", prob,
                             then="; P(on frontier) and the accuracy and cost intervals look surer than the data allow",
                             n_plain=a0.shape[1])
    dist = _resampled_means(a0, c0, pa, pc, codes, gen, n_resamples)
    n_on = _frontier(dist[..., 0], dist[..., 1]).sum(0)
    n_on = np.where(np.isfinite(acc_obs) & np.isfinite(cost_obs), n_on, np.nan)
    coords = {agent_dim: agents}
    est = xr.DataArray(n_on / n_resamples, dims=agent_dim, coords=coords, name="p_on_frontier")
    acc_v = xr.DataArray(acc_obs, dims=agent_dim, coords=coords, name=accuracy)
    cost_v = xr.DataArray(cost_obs, dims=agent_dim, coords=coords, name=cost)
    res = _pareto_result(est, n_on, acc_v, cost_v, dist, prob, unit, acc_cell, cost_cell)
    res.attrs["cluster_column"] = label
    for a in (res.attrs, res.ci.attrs, res.accuracy_ci.attrs, res.cost_ci.attrs):
        a.update(few)
    return res


def _resampled_means(a0, c0, pa, pc, codes, gen, n_resamples) -> np.ndarray:
    """Mean accuracy and cost per agent under task resampling (B, A, 2), each over the cells recording it (``pa``, ``pc``)."""
    dist = np.empty((n_resamples, a0.shape[0], 2))
    i0 = 0
    for w in weight_blocks(a0.shape[1], n_resamples, gen, clusters=codes):
        with np.errstate(invalid="ignore", divide="ignore"):
            dist[i0 : i0 + w.shape[0], :, 0] = ratio(w @ a0.T, w @ pa.T)
            dist[i0 : i0 + w.shape[0], :, 1] = ratio(w @ c0.T, w @ pc.T)
        i0 += w.shape[0]
    return dist


def _pareto_result(est, n_on, acc_v, cost_v, dist, prob, unit, acc_cell, cost_cell):
    n_resamples = dist.shape[0]
    qlo, qhi = percentile_bounds(dist, prob)
    detail = bootstrap_detail(unit, n_resamples)
    z = normal_z(prob)
    agent_dim = est.dims[0]
    return ParetoResult(
        estimate=est,
        ci=make_interval(
            *wilson_bounds(n_on, n_resamples, z),
            prob=prob,
            kind="wilson",
            detail=f"Monte Carlo uncertainty of the share over {n_resamples} resamples",
            template=est,
            warn_zero_width=False,
        ),
        on_frontier=est.copy(data=_frontier(acc_v.values, cost_v.values)).rename(None),
        accuracy=acc_v,
        cost=cost_v,
        accuracy_ci=make_interval(
            qlo[:, 0], qhi[:, 0], prob=prob, kind="percentile", detail=detail, template=acc_v
        ),
        cost_ci=make_interval(
            qlo[:, 1], qhi[:, 1], prob=prob, kind="percentile", detail=detail, template=cost_v
        ),
        distribution=xr.DataArray(
            dist,
            dims=("resample", agent_dim, "quantity"),
            coords={agent_dim: est[agent_dim].values, "quantity": [acc_v.name, cost_v.name]},
        ),
        attrs={
            "n_resamples": n_resamples,
            "unit": unit,
            "n_cells_cost_missing": int((np.isfinite(acc_cell) & ~np.isfinite(cost_cell)).sum()),
        },
    )


def _cell_means(data: xr.Dataset, accuracy: str, cost: str, order: tuple[str, str, str]):
    """Return the mean accuracy and cost over runs per (agent, task), and the agents.

    No recorded cost at all is refused; agents with no recorded cost are named in an
    :class:`UndefinedMetricWarning` (left off the frontier), agents whose scored tasks
    lack a cost on some in a ``HierbenchWarning`` (``_warn_cost_gaps``).
    """
    if not isinstance(data, xr.Dataset):
        raise TypeError(
            f"`data` must be an eval Dataset with {accuracy!r} and {cost!r}; got {type(data).__name__}"
        )
    for name, v in (("accuracy", accuracy), ("cost", cost)):
        if v not in data:
            raise ValueError(
                f"`{name}` must name a variable of `data` {sorted(data.data_vars)}; got {v!r}"
            )
    for v in (accuracy, cost):
        if set(data[v].dims) != set(order):
            raise ValueError(f"`data.{v}` must have dims {order}; got {data[v].dims}")
    if data.sizes[order[1]] == 0:
        raise ValueError(f"`data` has no {order[1]}s: there is no frontier to estimate")
    acc = numeric_values(data[accuracy].transpose(*order), f"data.{accuracy}", allow_bool=True)
    cst = numeric_values(data[cost].transpose(*order), f"data.{cost}", nonnegative=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        acc_cell = np.nanmean(acc, axis=2)
        cost_cell = np.nanmean(cst, axis=2)
    agents = [str(a) for a in data[order[0]].values]
    if len(agents) < 2:
        raise HierbenchError(f"`data` must hold at least 2 agents for a frontier; got {agents}")
    if not np.isfinite(cost_cell).any():
        raise HierbenchError(
            f"`data.{cost}` records no value (every run NaN): there is no {accuracy}-{cost} frontier; "
            f"record each run's {cost}, or read the {accuracy}s alone (hierbench.freq.success_rate)"
        )
    pres = np.isfinite(acc_cell) & np.isfinite(cost_cell)
    no_cost = [
        a for i, a in enumerate(agents) if np.isfinite(acc_cell[i]).any() and not pres[i].any()
    ]
    if no_cost:
        warn_user(
            f"agents {no_cost} have no recorded {cost!r}: they are left off the frontier (NaN)",
            UndefinedMetricWarning,
        )
    _warn_cost_gaps(acc_cell, cost_cell, agents, accuracy, cost, no_cost)
    return acc_cell, cost_cell, agents


def _warn_cost_gaps(acc_cell, cost_cell, agents, accuracy: str, cost: str, skip: list[str]) -> None:
    """Name the agents (not in ``skip``) with scored tasks that lack a cost, and how many, in a ``HierbenchWarning``."""
    scored = np.isfinite(acc_cell)
    gap = (scored & ~np.isfinite(cost_cell)).sum(1)
    named = [f"{a} ({int(g)} of {int(n)})" for a, g, n in zip(agents, gap, scored.sum(1), strict=True)
             if g and a not in skip]  # fmt: skip
    if named:
        warn_user(
            f"{counted(len(named), 'agent')} ha{'s' if len(named) == 1 else 've'} scored tasks with no recorded "
            f"{cost!r} (tasks without a {cost} of the tasks scored): {', '.join(named)}; each {accuracy} is over "
            f"every scored task and each {cost} over the tasks with one, so the two rest on different tasks, and "
            f"where the {cost} went missing more on some tasks (solved, or failed) than on others the mean {cost} "
            "leans towards the rest",
            HierbenchWarning,
        )
