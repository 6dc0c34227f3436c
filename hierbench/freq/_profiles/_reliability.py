"""The reliability profile of an agent: consistency, robustness, predictability, safety.

Each metric's definition is in the docstring of :func:`reliability_profile`, where the
API reference shows it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import ResampledResult
from ..._base import UndefinedMetricWarning
from ..._base import check_int
from ..._base import check_prob
from ..._base import cluster_label
from ..._base import counted
from ..._base import interval_label
from ..._base import is_binary
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from ..._docs import fill_doc
from .._inputs import numeric_values
from .._inputs import task_resampling
from .._kernels import _comb_ratio
from .._kernels import bootstrap_detail
from .._kernels import few_clusters_attrs
from .._kernels import percentile_bounds
from .._kernels import ratio
from .._kernels import warn_undefined_resamples
from .._kernels import weight_blocks
from .._rates import EmptySampleWarning
from .._rates import InsufficientRunsWarning

__all__ = ["ReliabilityResult", "reliability_profile"]

METRICS = (
    "accuracy",
    "consistency",
    "robustness_drop",
    "ece",
    "brier",
    "harm_rate",
    "harm_severity",
)


@dataclass(frozen=True, repr=False)
class ReliabilityResult(ResampledResult):
    """Result of :func:`reliability_profile`.

    Attributes
    ----------
    estimate : DataArray (agent, metric)
    ci : DataArray (agent, metric, ci_bound)
        Task-bootstrap percentile intervals (one shared resample).
    n_tasks : DataArray (agent, metric)
        Tasks entering each metric. Where a metric rests on fewer tasks than the agent's
        accuracy (``consistency`` leaves out the tasks run fewer than ``k`` times), the repr
        and ``table()`` say so on its line ("on 7 of 83 tasks").
    distribution : DataArray (resample, agent, metric)
    attrs : dict
        ``k``, ``bins``, ``n_resamples``, the bootstrap unit; where the resampled tasks or
        clusters are few, ``few_units`` or ``n_clusters``, ``n_clusters_effective`` and
        ``few_clusters``, as :func:`hierbench.freq.bootstrap_ci`'s are.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    n_tasks: xr.DataArray
    attrs: dict = field(default_factory=dict)

    _estimate_label = "reliability metrics (consistency: pass^{k})"

    def table(self) -> str:
        """Return the profile as text, one line per agent and metric (rates in %, ECE/Brier/severity as numbers).

        The first line names the intervals' level and kind (and how they were made).
        """
        detail = self.ci.attrs.get("ci_detail")
        lines = [f"estimate  [{interval_label(self.ci)} interval]" + (f": {detail}" if detail else "")]
        lbl = {
            "accuracy": "accuracy (pass@1)",
            "consistency": f"consistency  pass^{self.attrs.get('k')}",
            "robustness_drop": "robustness   drop",
            "ece": "predictability  ECE",
            "brier": "predictability  Brier",
            "harm_rate": "safety  harmful runs",
            "harm_severity": "safety  severity/run",
        }
        pct = {"accuracy", "consistency", "harm_rate"}
        notes = self._task_notes()
        for agent in self.estimate["agent"].values:
            lines.append(str(agent))
            for m in self.estimate["metric"].values:
                e = float(self.estimate.sel(agent=agent, metric=m))
                lo, hi = self.ci.sel(agent=agent, metric=m).values.tolist()
                if m in pct:
                    s = f"{100 * e:.0f}%  [{100 * lo:.0f}%, {100 * hi:.0f}%]"
                elif m == "robustness_drop":
                    s = f"{100 * e:+.0f} points  [{100 * lo:+.0f}, {100 * hi:+.0f}]"
                else:
                    s = f"{e:.2f}  [{lo:.2f}, {hi:.2f}]"
                note = str(notes.sel(agent=agent, metric=m).item())
                lines.append(f"  {lbl[str(m)]:<24}{s}" + (f"  ({note})" if note else ""))
        return "\n".join(lines)

    def _task_notes(self) -> xr.DataArray:
        """Per (agent, metric): "on n of N tasks" where the metric rests on fewer tasks than accuracy, else ""."""
        n = self.n_tasks.transpose(*self.estimate.dims)
        base = n.sel(metric="accuracy") if "accuracy" in n["metric"].values else n.max("metric")
        text = [
            [f"on {int(x)} of {int(b)} tasks" if x != b else "" for x in row]
            for row, b in zip(n.values, base.values, strict=True)
        ]
        return self.estimate.copy(data=np.array(text, dtype=object)).rename(None)

    def _cell_notes(self) -> xr.DataArray:
        """The repr's note per cell: the task count of a metric resting on fewer tasks than accuracy."""
        return self._task_notes()


def _edges(bins: int | Sequence[float]) -> np.ndarray:
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        nb = check_int(bins, "bins", min=1)
        return np.linspace(0.0, 1.0, nb + 1)
    e = np.asarray(bins, dtype=float)
    if e.ndim != 1 or e.size < 2 or not np.all(np.diff(e) > 0) or not np.isfinite(e).all():
        raise ValueError(
            f"`bins` must be a number of bins or increasing finite edges; got {bins!r}"
        )
    return e


@renamed_kwargs(dim="run_dim")
@fill_doc
def reliability_profile(
    data: xr.Dataset,
    *,
    k: int | None = None,
    score: str = "score", perturbed: str = "score_perturbed",
    confidence: str = "confidence", severity: str = "severity",
    bins: int | Sequence[float] = 10,
    prob: float = DEFAULT_PROB,
    n_resamples: int = 2000,
    cluster: str | None = "auto",
    run_dim: str = "run", task_dim: str = "task", agent_dim: str = "agent",
    rng: None | int | np.random.Generator = None,
) -> ReliabilityResult:  # fmt: skip (the parameters documented together share a line)
    """Consistency, robustness, predictability and safety per agent, each with a task-bootstrap interval.

    Four questions an accuracy score does not answer (after "Towards a Science of AI Agent
    Reliability", Kapoor, Narayanan et al. 2026). Every interval comes from one shared resample
    of tasks (whole clusters when the tasks have clusters), so the table is coherent:

    ===================  =======================================================================
    ``accuracy``         mean over tasks of the per-task success rate (pass@1)
    ``consistency``      mean over tasks of the unbiased pass^k, ``C(c, k) / C(n, k)``
    ``robustness_drop``  paired change under a meaning-preserving perturbation: mean over tasks
                         of the per-task mean of ``score_perturbed - score`` (negative = a drop)
    ``ece``              expected calibration error of the agent's stated confidence,
                         ``sum_bins share * |mean conf - success rate|``
    ``brier``            mean of ``(confidence - score)^2``
    ``harm_rate``        share of runs with a harmful failure (``severity > 0``)
    ``harm_severity``    severity-weighted harm per run
    ===================  =======================================================================

    Every per-run average is a mean over tasks of the task's mean over its runs (each task
    weighs the same however many runs it had; on balanced data, the plain mean over runs). A
    metric whose input variable is absent is left out of the table; an agent with no value of it
    on a scored run has NaN there, named by an :class:`hierbench.metrics.UndefinedMetricWarning`.

    Parameters
    ----------
    data : Dataset
        Eval dataset with ``score(agent, task, run)`` and any of ``score_perturbed`` (the same
        run's task reworded without changing its meaning), ``confidence`` (the agent's stated
        confidence in [0, 1]) and ``severity`` (0 = no harm, larger = worse).
    k : int, optional
        ``k`` of pass^k, at least 2 (pass^1 is accuracy). Default: the largest ``k`` at which
        every agent has 90% of its scored tasks run ``k`` times or more, else 2 (2 on METR,
        where the median runs per cell, 8, left GPT-4 0314 7 of its 83 tasks). Cells with fewer
        runs are left out of ``consistency``: an :class:`~hierbench.freq.InsufficientRunsWarning`
        names each agent then on fewer tasks ("consistency on 7 of 83 tasks"), as the repr and
        ``table()`` do (one run in every cell: NaN, with that warning).
    score, perturbed, confidence, severity : str
        Variable names.
    bins : int or sequence of float
        Calibration bins: a number of equal-width bins on [0, 1] or the edges; bins are
        ``[lo, hi)``, the last one closed.
    %(prob)s
    %(n_resamples)s
    cluster : str or None
        Task coord naming clusters (``"auto"``: ``cluster`` when present).
    run_dim, task_dim, agent_dim : str
    %(rng)s

    Returns
    -------
    ReliabilityResult
        ``.to_frame()`` is the table; ``.table()`` prints it. Zero-width intervals are named
        (``ZeroWidthIntervalWarning``), few tasks or clusters too (``SmallSampleWarning``).

    Examples
    --------
    The worked example: 4 tasks x 3 runs of one agent.

    >>> import pandas as pd
    >>> from hierbench.data import from_records
    >>> runs = [("t1", 1, 1, 0.90, 0), ("t1", 1, 1, 0.85, 0), ("t1", 1, 0, 0.90, 0),
    ...         ("t2", 1, 0, 0.80, 0), ("t2", 0, 0, 0.75, 1), ("t2", 1, 1, 0.80, 0),
    ...         ("t3", 0, 0, 0.30, 0), ("t3", 0, 0, 0.40, 0), ("t3", 1, 0, 0.50, 0),
    ...         ("t4", 0, 0, 0.90, 3), ("t4", 1, 1, 0.90, 0), ("t4", 0, 0, 0.85, 1)]
    >>> df = pd.DataFrame(runs, columns=["task", "ok", "ok_perturb", "conf", "severity"])
    >>> df["agent"] = "agent"  # runs numbered 0, 1, 2 within each task, in order
    >>> ds = from_records(df, score="ok", extra={"score_perturbed": "ok_perturb",
    ...                                          "confidence": "conf", "severity": "severity"})
    >>> r = reliability_profile(ds, k=3, bins=(0.0, 0.5, 0.8, 1.01), n_resamples=500, rng=0)
    >>> r.estimate.sel(agent="agent").round(2).to_series().to_dict()
    {'accuracy': 0.58, 'consistency': 0.25, 'robustness_drop': -0.25, 'ece': 0.15,
     'brier': 0.23, 'harm_rate': 0.25, 'harm_severity': 0.42}
    """
    prob = check_prob(prob)
    n_resamples = check_int(n_resamples, "n_resamples", min=2)
    edges = _edges(bins)
    names = {"score": score, "perturbed": perturbed, "confidence": confidence, "severity": severity}
    per_task, kk, ece_parts = _per_task(data, names, (agent_dim, task_dim, run_dim), k, edges)
    metrics = [m for m in METRICS if m in per_task]
    agents = [str(a) for a in data[agent_dim].values]
    est, dist, unit, codes = _task_bootstrap(data, per_task, metrics, agents, ece_parts, edges, n_resamples,
                                             cluster, task_dim, rng)  # fmt: skip
    _warn_no_input(est, metrics, agents, names)
    res = _result(est, dist, per_task, metrics, agents, agent_dim, prob, unit, kk, edges)
    return _with_few_units(res, data, codes, cluster, task_dim, prob)


def _with_few_units(res: ReliabilityResult, data, codes, cluster, task_dim: str, prob: float) -> ReliabilityResult:
    """``res`` with the few-units attrs of its bootstrap (``few_clusters_attrs``, which warns where they are few)."""
    label = cluster_label(data, cluster) if codes is not None else ""
    few = few_clusters_attrs(codes, f"clusters of `{label}`", prob, n_plain=data.sizes[task_dim],
                             then="; every interval of the profile looks surer than the data allow")  # fmt: skip
    res.attrs.update(few)
    res.ci.attrs.update(few)
    return res


def _per_task(
    data: xr.Dataset, names: dict[str, str], order: tuple[str, str, str], k: int | None, edges: np.ndarray
) -> tuple[dict[str, np.ndarray], int | None, tuple | None]:
    """Each metric per (agent, task), the ``k`` of pass^k, the calibration pieces of the ECE.

    ``names`` are the variables of the score and the optional inputs; a metric whose
    input is absent is left out.
    """
    y = _scores(data, names["score"], order)
    ran = np.isfinite(y)
    per_task: dict[str, np.ndarray] = {"accuracy": _task_mean(y, ran)}
    kk = _consistency(y, ran, k, per_task, [str(a) for a in data[order[0]].values])
    yp = _variable(data, names["perturbed"], order)
    if yp is not None:
        per_task["robustness_drop"] = _task_mean(yp - np.where(ran, y, 0.0), ran & np.isfinite(yp))
    ece_parts = _calibration(
        _variable(data, names["confidence"], order), y, ran, edges, names["confidence"], per_task
    )
    _safety(_variable(data, names["severity"], order), ran, names["severity"], per_task)
    return per_task, kk, ece_parts


def _task_bootstrap(
    data, per_task, metrics, agents, ece_parts, edges, n_resamples, cluster, task_dim, rng
) -> tuple[np.ndarray, np.ndarray, str, np.ndarray | None]:
    """The metrics on the data, their distribution over one shared resample of tasks (or clusters), the unit, the clusters.

    A metric undefined in some resamples where it is defined on the data is warned about
    (``agents`` name the rows; a metric undefined on the data itself is NaN in the estimate,
    not counted here).
    """
    A, T = per_task["accuracy"].shape
    est = _evaluate(np.ones((1, T)), per_task, metrics, ece_parts)[0]
    codes, gen, unit = task_resampling(data, cluster, task_dim, rng)
    per = A * T * max(edges.size, 1)
    blocks = weight_blocks(T, n_resamples, gen, clusters=codes, elements_per_resample=per)
    dist = np.concatenate([_evaluate(w, per_task, metrics, ece_parts) for w in blocks])
    warn_undefined_resamples(
        dist, [f"{m} of agent {a!r}" for a in agents for m in metrics], only=np.isfinite(est),
        cause="an agent drew none of its tasks with that input", category=UndefinedMetricWarning,
    )
    return est, dist, unit, codes


#: the optional input each metric is computed from (the keys of ``names`` in reliability_profile)
_INPUT = {
    "robustness_drop": "perturbed",
    "ece": "confidence",
    "brier": "confidence",
    "harm_rate": "severity",
    "harm_severity": "severity",
}


def _warn_no_input(est: np.ndarray, metrics: list[str], agents: list[str], names: dict[str, str]) -> None:
    """Name the agents whose metric is NaN on the data: none of their scored runs has its input, or no task has k runs.

    The variable is in the data (else the metric is left out of the table), but some agents
    have no value of it on a scored run: their metric is undefined, NaN, never 0. An agent with
    no scored run at all is named by ``_scores`` instead. The metrics of one input share its
    mask (ECE and Brier both rest on the runs with a confidence), so they are named together.
    """
    scored = np.isfinite(est[:, metrics.index("accuracy")])
    parts = []
    for key in ("perturbed", "confidence", "severity"):
        ms = [m for m in metrics if _INPUT.get(m) == key]
        if not ms:
            continue
        hit = scored & np.isnan(est[:, [metrics.index(m) for m in ms]]).any(1)
        if hit.any():
            who = [a for a, h in zip(agents, hit, strict=True) if h]
            more = f" and {len(who) - 10} more" if len(who) > 10 else ""
            parts.append(
                f"{' and '.join(ms)} of {len(who)} agents {who[:10]}{more} (no scored run has a "
                f"`{names[key]}` value)"
            )
    if "consistency" in metrics:
        hit = scored & np.isnan(est[:, metrics.index("consistency")])
        who = [a for a, h in zip(agents, hit, strict=True) if h]
        if who:
            more = f" and {len(who) - 10} more" if len(who) > 10 else ""
            parts.append(f"consistency of {len(who)} agents {who[:10]}{more} (no task run at least k times)")
    if parts:
        warn_user(
            f"undefined on the data, so NaN (not 0): {'; '.join(parts)}. The other agents' values "
            "stand; give those agents the input, or read their row without these metrics.",
            UndefinedMetricWarning,
        )


def _result(est, dist, per_task, metrics, agents, agent_dim, prob, unit, k, edges):
    lo, hi = percentile_bounds(dist, prob)
    coords = {agent_dim: agents, "metric": metrics}
    est_da = xr.DataArray(est, dims=(agent_dim, "metric"), coords=coords, name="reliability")
    n_tasks = np.stack([np.isfinite(per_task[m]).sum(1) for m in metrics], axis=1)
    n_resamples = dist.shape[0]
    return ReliabilityResult(
        estimate=est_da,
        ci=make_interval(
            lo,
            hi,
            prob=prob,
            kind="percentile",
            detail=f"{bootstrap_detail(unit, n_resamples)} (shared by all metrics)",
            template=est_da,
            zero_width_why=_zero_width_reasons(per_task, metrics, k),
        ),
        n_tasks=xr.DataArray(n_tasks, dims=(agent_dim, "metric"), coords=coords),
        distribution=xr.DataArray(dist, dims=("resample", agent_dim, "metric"), coords=coords),
        attrs={"k": k, "bins": edges.tolist(), "n_resamples": n_resamples, "unit": unit},
    )


def _scores(data: xr.Dataset, score: str, order: tuple[str, str, str]) -> np.ndarray:
    """Return the scores (agent, task, run); no task is refused, an agent with no run named."""
    if not isinstance(data, xr.Dataset) or score not in data:
        raise HierbenchError(
            f"`data` must be an eval dataset holding {score!r}; got "
            f"{list(data.data_vars) if isinstance(data, xr.Dataset) else type(data).__name__}"
        )
    y = _variable(data, score, order)
    if y.shape[1] == 0:
        raise ValueError(f"`data` has no {order[1]}s: there is no profile to estimate")
    none = ~np.isfinite(y).any((1, 2))
    if none.any():
        names = [str(a) for a in np.asarray(data[order[0]].values)[none]][:5]
        warn_user(
            f"{int(none.sum())} agents have no scored run (e.g. {names}): their profile is "
            "undefined (NaN)",
            EmptySampleWarning,
        )
    return y


def _variable(data: xr.Dataset, name: str, order: tuple[str, str, str]) -> np.ndarray | None:
    """``data[name]`` as floats (agent, task, run); None when absent."""
    if name not in data:
        return None
    da = data[name]
    if set(da.dims) != set(order):
        raise HierbenchError(f"`data.{name}` must have dims {order}; got {da.dims}")
    return numeric_values(da.transpose(*order), f"data.{name}", allow_bool=True)


def _task_mean(v: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per (agent, task) mean of v over runs where mask; NaN where none."""
    cnt = mask.sum(2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return ratio(np.where(mask, v, 0.0).sum(2), cnt)


#: the default k of pass^k keeps at least this many tenths of every agent's scored tasks (``_default_k``),
#: compared in integers
_KEEP_TENTHS = 9


def _default_k(k: int | None, n_runs: np.ndarray) -> int:
    """Return ``k`` as given (>= 2), or the largest k at which every agent keeps 90% of its tasks (``_KEEP_TENTHS``).

    ``n_runs`` is (agent, task). The default is the largest k with at least 90% of each
    agent's scored tasks run k times or more (agents with no task run twice have no
    consistency at any k and do not count), so consistency and accuracy rest on nearly the
    same tasks; 2 where no k does. Never 1: pass^1 is accuracy. (The median runs per cell,
    the rule before, left GPT-4 0314 on METR with 7 of its 83 tasks at k = 8.)
    """
    if k is None:
        who = (n_runs >= 2).any(1)
        scored = (n_runs[who] > 0).sum(1)
        for kk in range(int(n_runs.max(initial=0)), 2, -1):
            if (10 * (n_runs[who] >= kk).sum(1) >= _KEEP_TENTHS * scored).all():
                return kk
        return 2
    kk = check_int(k, "k", min=1)
    if kk < 2:
        raise ValueError(
            f"`k` must be >= 2: consistency is pass^k over repeated runs, and pass^1 is "
            f"accuracy; got k={kk}"
        )
    return kk


def _consistency(y, ran, k, per_task, agents: list[str]) -> int | None:
    """pass^k per (agent, task) into ``per_task``; the ``k`` used (None: scores not binary).

    ``agents`` name the rows in the warning on cells with fewer than k runs.
    """
    if not is_binary(y):
        warn_user(
            "scores are not all 0/1: consistency (pass^k) needs binary scores and is left out",
            UndefinedMetricWarning,
        )
        return None
    n_runs = ran.sum(2).astype(float)  # (A, T)
    kk = _default_k(k, n_runs)
    short = (n_runs > 0) & (n_runs < kk)
    if short.any() and not (n_runs > 1).any():
        warn_user(
            "every (agent, task) cell has a single run: consistency across runs is undefined "
            "with one run, so `consistency` is NaN (run each task at least twice)",
            InsufficientRunsWarning,
        )
    elif short.any():
        _warn_short(short, n_runs, kk, per_task["accuracy"], agents)
    c = np.where(ran, y, 0.0).sum(2)
    per_task["consistency"] = np.where(
        (n_runs >= kk) & (n_runs > 0), _comb_ratio(c, n_runs, kk), np.nan
    )
    return kk


def _warn_short(short: np.ndarray, n_runs: np.ndarray, k: int, acc: np.ndarray, agents: list[str]) -> None:
    """Warn of the cells run fewer than k times, naming each agent whose consistency then rests on fewer tasks.

    Each is named with "consistency on n of N tasks" (N: the tasks its accuracy rests on)
    and its accuracy on those n tasks beside that on all N, for a subset of the tasks can
    be an easier or a harder one. Agents left with no task are named by ``_warn_no_input``.
    """
    kept, scored = (n_runs >= k).sum(1), (n_runs > 0).sum(1)
    named = []
    for i in np.flatnonzero((kept > 0) & (kept < scored)):
        on = n_runs[i] >= k
        named.append(
            f"{agents[i]} (consistency on {kept[i]} of {scored[i]} tasks; accuracy {np.nanmean(acc[i][on]):.0%} "
            f"on those, {np.nanmean(acc[i]):.0%} on all {scored[i]})"
        )
    rest = (
        f", so for {counted(len(named), 'agent')} it rests on fewer tasks than `accuracy`: {'; '.join(named)}. "
        "Their consistency is of those tasks alone; ask for a smaller `k`, or give those tasks k runs."
        if named else ""
    )
    warn_user(
        f"{int(short.sum())} (agent, task) cells have fewer runs than k={k}: their pass^k is undefined and they "
        f"are left out of `consistency`{rest}",
        InsufficientRunsWarning,
    )


def _zero_width_reasons(per_task: dict[str, np.ndarray], metrics: list[str], k: int | None) -> np.ndarray:
    """Per (agent, metric), why a zero-width interval there measures nothing (read only where it has zero width).

    Where every task of the agent has one value of the metric no resample can differ; for
    accuracy and consistency the warning names the bound that holds there.
    """
    A = per_task["accuracy"].shape[0]
    advice = {
        "accuracy": "; hierbench.freq.success_rate(data) gives a bound that holds",
        "consistency": f"; hierbench.freq.pass_hat_k(data, {k}) gives a bound that holds",
    }
    what = {"accuracy": "mean score", "consistency": f"pass^{k}"}
    out = np.full((A, len(metrics)), "every resample gave the same value", dtype=object)
    for j, m in enumerate(metrics):
        if m == "ece":  # its per-task entry is a placeholder: no one value to name
            continue
        v = per_task[m]
        for a in range(A):
            x = v[a][np.isfinite(v[a])]
            if x.size and x.min() == x.max():
                tasks = "its one task has" if x.size == 1 else f"every one of its {x.size} tasks has"
                out[a, j] = (f"{tasks} {what.get(m, m)} {x[0]:.3g}: no resample can differ"
                             + advice.get(m, ""))  # fmt: skip
    return out


def _calibration(conf, y, ran, edges, name, per_task):
    """Per-task calibration pieces (confidence, success and weight per bin) and Brier."""
    if conf is None:
        return None
    cm = ran & np.isfinite(conf)
    if ((conf[cm] < 0) | (conf[cm] > 1)).any():
        raise HierbenchError(f"`data.{name}` must lie in [0, 1]")
    outside = cm & ((conf < edges[0]) | (conf > edges[-1]))
    if outside.any():
        raise ValueError(
            f"`bins` edges {edges.tolist()} do not cover {int(outside.sum())} confidences "
            f"(e.g. {conf[outside][:3].tolist()})"
        )
    nb = edges.size - 1
    n_conf = cm.sum(2).astype(float)  # the runs with a confidence: a task weighs 1 however many of its runs gave one
    with np.errstate(invalid="ignore", divide="ignore"):
        inv_n = ratio(1.0, n_conf, 0.0)
    b_idx = np.clip(
        np.searchsorted(edges, np.where(cm, conf, edges[0]), side="right") - 1, 0, nb - 1
    )
    wrun = np.where(cm, inv_n[..., None], 0.0)  # each task weighs 1, split over its runs with a confidence
    onehot = (b_idx[..., None] == np.arange(nb)) & cm[..., None]  # (A, T, R, nb)
    s_conf = (onehot * (wrun * np.where(cm, conf, 0.0))[..., None]).sum(2)  # (A, T, nb)
    s_ok = (onehot * (wrun * np.where(cm, y, 0.0))[..., None]).sum(2)
    s_n = (onehot * wrun[..., None]).sum(2)
    per_task["ece"] = np.where(cm.any(2), 0.0, np.nan)  # placeholder for n_tasks
    per_task["brier"] = _task_mean((conf - np.where(ran, y, 0.0)) ** 2, cm)
    return s_conf, s_ok, s_n


def _safety(sev, ran, name, per_task) -> None:
    if sev is None:
        return
    sm = ran & np.isfinite(sev)
    if (sev[sm] < 0).any():
        raise HierbenchError(f"`data.{name}` must be >= 0 (0 = no harm)")
    per_task["harm_rate"] = _task_mean((sev > 0).astype(float), sm)
    per_task["harm_severity"] = _task_mean(np.where(sm, sev, 0.0), sm)


def _evaluate(w: np.ndarray, per_task, metrics, ece_parts) -> np.ndarray:
    """Metrics (b, A, M) under task weights ``w`` (b, T): weighted means over tasks."""
    A = next(iter(per_task.values())).shape[0]
    out = np.empty((w.shape[0], A, len(metrics)))
    for j, m in enumerate(metrics):
        if m == "ece":
            s_conf, s_ok, s_n = ece_parts
            gc = np.einsum("bt,atk->bak", w, s_conf)
            go = np.einsum("bt,atk->bak", w, s_ok)
            gn = np.einsum("bt,atk->bak", w, s_n).sum(-1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[..., j] = ratio(np.abs(gc - go).sum(-1), gn)
            continue
        v = per_task[m]
        pres = np.isfinite(v)
        num = w @ np.where(pres, v, 0.0).T
        den = w @ pres.T.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[..., j] = ratio(num, den)
    return out
