"""Model-assisted evaluation of new agents: adaptive draws with recorded probabilities, or a fixed plan.

:func:`assisted_adaptive` draws each next task at random with probabilities
tilted toward the tasks whose outcome the working model is least sure of
(never zero: a defensive mixture with the uniform), records them, and
estimates each agent's full-benchmark score design-unbiasedly;
:func:`assisted_mean` does the same for the tasks of a :class:`SubsetPlan`
drawn in advance. The estimators and their guarantees are described in
:mod:`hierbench.design._assisted`.

This module imports numpy, scipy and xarray only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from .._base import DEFAULT_PROB
from .._base import HierbenchError
from .._base import check_int
from .._base import check_prob
from .._base import counts
from .._docs import fill_doc
from .._parallel import map_seeded
from ..freq import IRTBank
from ._assisted import AssistedResult
from ._assisted import _AgentOut
from ._assisted import _BankWorking
from ._assisted import _FixedWorking
from ._assisted import _Record
from ._assisted import agent_out
from ._assisted import assemble
from ._assisted import classical
from ._assisted import draw_probs
from ._assisted import model_score
from ._assisted import run_outcome
from ._assisted import term_variance
from ._bracket import bracket_bounds
from ._bracket import design_bracket
from ._bracket import guard_detail
from ._hajek import HAJEK_DETAIL
from ._subset import SubsetPlan
from ._subset import prior_predictive
from ._working import WorkingModel

__all__ = ["assisted_adaptive", "assisted_mean"]


@dataclass(frozen=True)
class _Spec:
    """What every agent of one assisted evaluation shares."""

    bank: IRTBank | None
    fixed: np.ndarray | None
    working: str
    tasks: np.ndarray
    prob: float
    n_runs: int
    n_draws: int
    n_grid: int

    @property
    def T(self) -> int:
        return int(self.tasks.size)

    def make_working(self, gen: np.random.Generator) -> Any:
        """A fresh working model for one agent (``None``: no model, plain means)."""
        if self.bank is not None:
            return _BankWorking(self.bank, self.n_runs, self.n_draws, self.n_grid, gen)
        if self.fixed is not None:
            return _FixedWorking(self.fixed, self.n_runs)
        return None


#: what an assisted estimate does with a bank whose slopes collapsed, said in its warning
COLLAPSED_FALLBACK = (
    "It falls back to the bank's population-average predictions per task, fixed (what flat item curves predict "
    "for every agent; as for a Poisson plan): the estimate stays unbiased whatever the model, with those "
    "predictions as its working model, and the model-based score beside it uses them too"
)


def _spec(working: Any, tasks: np.ndarray | None, *, prob: float, n_runs: int, n_draws: int,
          n_grid: int, who: str = "assisted_adaptive") -> _Spec:
    """Normalise the working model: an IRTBank, a WorkingModel, fixed predictions over ``task``, or None.

    A bank whose slopes collapsed becomes its population-average predictions, fixed (warned).
    """
    prob = check_prob(prob)
    n_runs = check_int(n_runs, "n_runs", min=1)
    kw = {"prob": prob, "n_runs": n_runs, "n_draws": check_int(n_draws, "n_draws", min=1),
          "n_grid": check_int(n_grid, "n_grid", min=11)}
    why = ""
    if isinstance(working, WorkingModel):
        why = f"; chosen by cross-fitting on the calibration agents: {working.reason}"
        working = working.bank
    if isinstance(working, IRTBank) and not working.check_usable(
            f"{who} cannot update the working model from an agent's answers on this bank", fallback=COLLAPSED_FALLBACK):
        return _Spec(None, prior_predictive(working)[0], f"the {working.model.upper()} bank's population-average "
                     f"predictions (its slopes collapsed: not updated from the answers){why}", working.tasks, **kw)
    if isinstance(working, IRTBank):
        return _Spec(working, None, f"{working.model.upper()} IRT bank ({working.method}), ability updated "
                     f"from the tasks drawn before{why}", working.tasks, **kw)
    if isinstance(working, xr.DataArray):
        if working.dims != ("task",) or "task" not in working.coords:
            raise HierbenchError(f"`working` predictions must be a DataArray over a labelled 'task' dim; "
                                 f"got dims {working.dims}")
        m = working.values.astype(float)
        if not np.all(np.isfinite(m)) or (m < 0).any() or (m > 1).any():
            raise HierbenchError("`working` predictions must be success rates in [0, 1], all finite")
        return _Spec(None, m, "fixed predictions per task", np.asarray(working["task"].values).astype(str), **kw)
    if working is None:
        if tasks is None:
            raise HierbenchError("`working=None` (no model) needs the tasks: pass logs or a plan")
        return _Spec(None, None, f"none (plain mean){why}", tasks, **kw)
    raise TypeError(f"`working` must be an IRTBank, a WorkingModel, predictions over 'task' or None; "
                    f"got {type(working).__name__}")


class _Source:
    """One agent's outcomes per task: from its logged counts, or by calling ``run``."""

    def __init__(self, tasks: np.ndarray, n_runs: int, *, call: Callable | None = None,
                 k: np.ndarray | None = None, n: np.ndarray | None = None):
        self.tasks, self.n_runs, self.call, self.k, self.n = tasks, n_runs, call, k, n

    def __call__(self, t: int) -> tuple[int, int]:
        if self.call is not None:
            return run_outcome(self.call, str(self.tasks[t]), self.n_runs, None)
        return int(self.k[t]), int(self.n[t])


def _sources(run: Any, tasks: np.ndarray, n_runs: int) -> tuple[list[str], list[_Source]]:
    """Agents and their outcome sources: a callback (one agent) or complete logs over the population's tasks."""
    if callable(run) and not isinstance(run, (xr.DataArray, xr.Dataset)):
        return ["agent"], [_Source(tasks, n_runs, call=run)]
    if isinstance(run, xr.DataArray) and "run" not in run.dims and "task" in run.dims:
        run = run.expand_dims(run=[0], axis=-1)
    c = counts(run, name="run", purpose="model-assisted estimation")
    if "agent" not in c["n_runs"].dims:
        c = c.expand_dims(agent=["agent"])
    have = set(np.asarray(c["task"].values).astype(str).tolist())
    missing = sorted(set(tasks.tolist()) - have)
    c = c.sel(task=[t for t in tasks if t in have])
    n = c["n_runs"].transpose("agent", "task").values
    if missing or (n == 0).any():
        bad = missing[:5] or tasks[(n == 0).any(0)][:5].tolist()
        raise HierbenchError(
            f"`run` logs must hold at least one run of every task of the benchmark for every agent (any of them "
            f"may be drawn); {len(missing) or int((n == 0).any(0).sum())} tasks are short, e.g. {bad}"
        )
    k = np.round(c["n_success"].transpose("agent", "task").values).astype(np.int64)
    agents = np.asarray(c["agent"].values).astype(str).tolist()
    return agents, [_Source(tasks, n_runs, k=k[i], n=n[i]) for i in range(len(agents))]


def _single_run(sources: list[_Source], spec: _Spec) -> bool:
    """Every task's outcome is one run (0 or 1), for every agent: what the exact hypergeometric interval needs."""
    return all(bool((s.n == 1).all()) if s.n is not None else spec.n_runs == 1 for s in sources)


def _adaptive_agent(source: _Source, gen: np.random.Generator, *, spec: _Spec, n_tasks: int,
                    defensive: float, score_model: bool = True, exact: bool = False) -> _AgentOut:
    """One agent: draw ``n_tasks`` tasks with tilted, recorded probabilities, and estimate its score.

    ``exact``: no model and 0/1 outcomes, so the draws are a simple random sample of a 0/1
    population and the interval is the exact hypergeometric one.
    """
    T = spec.T
    work = spec.make_working(gen)
    rec = _Record(np.zeros(T, np.intp))
    with threadpool_limits(1, user_api="blas"):
        for _ in range(n_tasks):
            m, v = work.predict() if work is not None else (np.zeros(T), np.ones(T))
            q = draw_probs(rec.rem, v, defensive)
            omega = term_variance(work, rec.pool(0), q, v) if work is not None else np.nan
            t = int(gen.choice(T, p=q))
            k, n = source(t)
            rec.add(t, q[t], m, k / n, n, work.pmf(t, n) if work is not None else None, omega)
            if work is not None:
                work.observe(t, k, n)
        model = (model_score(work, rec, bank=spec.bank, prob=spec.prob, n_runs=spec.n_runs, gen=gen)
                 if work is not None and score_model else (np.nan,) * 3)
    fixed = None
    if work is None:  # no model: uniform draws, the plain mean (Rao-Blackwellised Des Raj)
        tab = rec.table()
        y = np.zeros(T)
        y[tab[:, 0].astype(int)] = tab[:, 5]
        fixed = classical(y, np.zeros(T), tab[:, 0].astype(int), np.zeros(T, np.intp), np.ones(T), False)
    # uniform draws only; computed only where the t interval degenerates
    bracket = partial(bracket_bounds, rec.table()[:, 5], T, spec.prob) if work is None else None
    return agent_out(rec, T=T, prob=spec.prob, model=model, fixed=fixed, exact=exact and work is None,
                     bracket=bracket, widen=True)


@fill_doc
def assisted_adaptive(
    working: IRTBank | WorkingModel | xr.DataArray | None,
    run: Callable[[str], float] | xr.DataArray | xr.Dataset,
    *,
    n_tasks: int = 50,
    prob: float = DEFAULT_PROB,
    defensive: float = 0.5,
    n_runs: int = 1,
    n_draws: int = 50,
    n_grid: int = 41,
    tasks: Any = None,
    executor: Any = None,
    progress: bool | None = None,
    rng: None | int | np.random.Generator = None,
) -> AssistedResult:
    """Evaluate agents on ``n_tasks`` adaptively drawn tasks; design-unbiased score, interval and misfit flag.

    Each next task is drawn at random among those not yet run, with
    probability ``defensive / |remaining| + (1 - defensive) * sd_t / sum sd``
    (``sd_t``: the working model's current predictive sd of the task's
    outcome for this agent), and the probability is recorded; the estimate
    is Des Raj's martingale-difference estimator with the working model's
    predictions (exactly unbiased whatever the model, interval by the
    martingale central limit theorem). The model-based score and a
    calibrated per-agent misfit test are reported beside it.

    Parameters
    ----------
    working : IRTBank, WorkingModel, DataArray or None
        The working model: a calibrated bank (predictions updated from the
        agent's answers), :func:`choose_working_model`'s choice, fixed
        predicted success rates over ``task`` (e.g. a crossed model's task
        posteriors), or ``None`` (no model: uniform draws, the plain mean).
        A bank whose slopes collapsed (``IRTBank.slopes_collapsed``) is
        replaced by its population-average predictions, fixed (warned).
    run : callable or Dataset/DataArray
        ``run(task) -> 0/1`` runs one agent once (NaN for a failed run; each
        drawn task is run ``n_runs`` times), or complete logs (``score``
        over agent, task, run, or counts): every agent is replayed, each
        drawn task with all its logged runs.
    n_tasks : int
        Tasks to draw per agent.
    prob : float
        Level of the intervals; the misfit flag's significance is ``1 - prob``.
    defensive : float
        Weight of the uniform in the draw probabilities, ``0 < defensive <= 1``
        (1: simple random sampling).
    n_runs : int
        Runs per drawn task with a callback; runs per task of the full score
        the model-based estimate predicts.
    n_draws, n_grid : int
        Item-parameter draws and ability grid points of the bank's posterior.
    tasks : sequence of str, optional
        The benchmark's tasks when ``working`` is None and ``run`` a callback.
    executor : concurrent.futures.Executor, optional
        Runs the agents (logs) in parallel; results are identical to serial.
    progress : bool or None
        A bar over the agents (None: only when a person watches).
    %(rng)s

    Returns
    -------
    AssistedResult
        Per agent: the Des Raj estimate of the realised full-benchmark
        score over ``n_tasks`` drawn tasks and its ``t`` interval, the
        model-based score beside it, the misfit test, and every draw with
        its recorded probability (``draws``).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> g = np.random.default_rng(0)
    >>> m = xr.DataArray(g.uniform(0.05, 0.95, 200), dims="task", coords={"task": [f"t{i}" for i in range(200)]})
    >>> y = (g.random(200) < m.values).astype(float)
    >>> logs = xr.DataArray(y[None, :, None], dims=("agent", "task", "run"), coords={"agent": ["a"], "task": m.task})
    >>> res = assisted_adaptive(m, logs, n_tasks=40, prob=0.9, rng=1)
    >>> res.ci.attrs["ci_kind"], int(res.n_tasks[0])
    ('t', 40)
    """
    labels = None if tasks is None else np.asarray(list(tasks)).astype(str)
    spec = _spec(working, labels if not isinstance(run, (xr.DataArray, xr.Dataset)) else _log_tasks(run),
                 prob=prob, n_runs=n_runs, n_draws=n_draws, n_grid=n_grid)
    n_tasks = check_int(n_tasks, "n_tasks", min=2, max=spec.T)
    if not (isinstance(defensive, (int, float)) and 0 < defensive <= 1):
        raise HierbenchError(f"`defensive` must be a number with 0 < defensive <= 1; got {defensive!r}")
    agents, sources = _sources(run, spec.tasks, spec.n_runs)
    exact = spec.working.startswith("none") and _single_run(sources, spec)
    outs = map_seeded(_adaptive_agent, sources, rng=rng, executor=executor, progress=progress, desc="agents",
                      kwargs={"spec": spec, "n_tasks": n_tasks, "defensive": float(defensive), "exact": exact},
                      thread_safe=False)
    how = "uniform draws" if defensive == 1 or spec.working.startswith("none") else (
        f"draws tilted to the working model's predictive sd, defensive uniform weight {defensive:g}")
    estimator, detail = _branch(spec, "adaptive", exact)
    return assemble(outs, agents, spec.tasks, prob=spec.prob, working=spec.working,
                    design=f"adaptive: {how}, probabilities recorded", kind="exact" if exact else "t",
                    detail=detail, estimator=estimator)


def _log_tasks(run: xr.DataArray | xr.Dataset) -> np.ndarray:
    return np.asarray(run["task"].values).astype(str)


def _takes_hajek(spec: _Spec, design: str) -> bool:
    """Whether a plan's estimate is the Hajek mean with its Korn-Graubard interval: a Poisson plan and no model.

    The one owner of the rule: the agents' estimates (``_plan_agent``), the ``ci_detail``
    (``_branch``) and the interval's kind (``assisted_mean``) all ask it.
    """
    return design == "poisson" and spec.bank is None and spec.fixed is None


def _branch(spec: _Spec, design: str, exact: bool = False) -> tuple[str, str]:
    """The estimator actually used, and the interval's ``ci_detail``, for a design and working model.

    ``design``: ``"adaptive"`` or the plan's design. Des Raj's estimator runs with an IRT bank on
    an ordered plan, with fixed predictions on a PPS plan, and with any model when adaptive; its
    variance is pooled with the model's prediction of it only where every pool's draw
    probabilities are known before the draw (adaptive, srs, stratified). Everything else is a
    classical estimator with its exact design variance: the difference estimator with fixed
    predictions (a bank's population averages on a Poisson plan), and without a model the plain or
    stratified mean, which use no draw probability beyond the design's, or on a Poisson plan the
    Hajek mean (``HAJEK_DETAIL``).
    """
    clip = ", intersected with the range the tasks run allow"
    if exact:
        return "plain mean", ("plain mean of a simple random sample of 0/1 outcomes; exact hypergeometric interval "
                              "(the successes drawn inverted for the population's count, as design U), valid for "
                              "every population")
    none = spec.working.startswith("none")
    # the distribution-free bracket guards every design whose draws are uniform within strata or independent
    guard = f"; {guard_detail(design if design != 'adaptive' else 'srs', none)}" if (
        design != "pps" and (none or design != "adaptive")) else ""
    des_raj = not none and (design == "adaptive" or design == "pps" or (spec.bank is not None and design != "poisson"))
    if des_raj:
        pooled = design in ("adaptive", "srs", "stratified")
        var = ("design-based variance, pooled with the working model's prediction of it where larger" if pooled
               else "design-based variance alone (not pooled: the pool's draw probabilities are not predicted)")
        return "Des Raj", (f"Des Raj martingale-difference estimator with the working model's predictions "
                           f"({spec.working}), unbiased whatever the model; {var}; Student t (martingale central "
                           f"limit theorem, approximate: no finite-sample guarantee){clip}{guard}")
    if _takes_hajek(spec, design):
        return "Hajek", (f"{HAJEK_DETAIL}{clip}; unbiased_estimate: the Horvitz-Thompson mean; "
                         f"{guard_detail('poisson', True, 'korn-graubard')}")
    if none:
        est = {"srs": "plain mean of a simple random sample", "adaptive": "plain mean of uniform draws",
               "stratified": "stratified mean (each stratum's plain mean, weighted by its share of the tasks)"}[design]
    else:
        est = (f"classical difference estimator with fixed predictions ({spec.working}): their mean plus the "
               "design-weighted mean of the drawn residuals")
    fpc = "finite-population correction" if design != "poisson" else "Poisson design variance"
    return "classical", (f"{est}, unbiased whatever the predictions; its exact design variance estimate ({fpc}), "
                         f"Student t (central limit theorem, approximate: no finite-sample guarantee){clip}{guard}")


def _plan_agent(source: _Source, gen: np.random.Generator, *, spec: _Spec, plan: SubsetPlan,
                exact: bool = False) -> _AgentOut:
    """One agent on a fixed plan: sequential with an IRT bank, the classical difference estimator otherwise."""
    T = spec.T
    pos = {t: i for i, t in enumerate(spec.tasks)}
    order = np.array([pos[t] for t in plan.order.values.astype(str)], np.intp)
    work = spec.make_working(gen)
    stratum = plan.stratum.values.astype(np.intp)
    poisson = plan.design == "poisson"
    if poisson and spec.bank is not None:  # no order: the bank's population-average predictions, fixed
        work = _FixedWorking(prior_predictive(spec.bank)[0], spec.n_runs)
    rec = _Record(stratum if not poisson else np.zeros(T, np.intp))
    with threadpool_limits(1, user_api="blas"):
        for t, q in zip(order, plan.draw_prob.values, strict=True):
            m, v = work.predict() if work is not None else (np.zeros(T), None)
            pool = rec.pool(int(rec.stratum[t]))
            # srs and stratified plans draw uniformly from the stratum's pool: the term's variance is predictable
            omega = term_variance(work, pool, pool / pool.sum(), v) if work is not None and plan.design in (
                "srs", "stratified") else np.nan
            k, n = source(int(t))
            rec.add(int(t), float(q), m, k / n, n, work.pmf(int(t), n) if work is not None else None, omega)
            if work is not None:
                work.observe(int(t), k, n)
        model = (model_score(work, rec, bank=spec.bank if not poisson else None, prob=spec.prob,
                             n_runs=spec.n_runs, gen=gen) if work is not None else (np.nan,) * 3)
    fixed = None
    if isinstance(work, _FixedWorking) or work is None:
        if plan.design != "pps":
            y = np.zeros(T)
            y[order] = rec.table()[:, 5]
            fixed = classical(y, work.m if work is not None else np.zeros(T), order, stratum,
                              plan.inclusion.values, poisson)
        elif work is None:
            raise HierbenchError("a PPS plan needs a working model (`working`): with none, use design='srs'")
    bracket = None
    if plan.design != "pps":  # draws uniform within strata, or independent: a bracket for every population
        tab = rec.table()
        bracket = partial(design_bracket, plan.design, tab[:, 5], tab[:, 0].astype(int), stratum,
                          plan.inclusion.values, spec.prob)  # computed only where the t interval degenerates
    return agent_out(rec, T=T, prob=spec.prob, model=model, fixed=fixed, exact=exact, bracket=bracket,
                     widen=work is None, hajek=_takes_hajek(spec, plan.design))


def assisted_mean(
    plan: SubsetPlan,
    outcomes: xr.Dataset | xr.DataArray,
    working: IRTBank | WorkingModel | xr.DataArray | None = None,
    *,
    prob: float = DEFAULT_PROB,
    n_runs: int = 1,
    n_draws: int = 50,
    n_grid: int = 41,
    executor: Any = None,
    rng: None | int | np.random.Generator = None,
) -> AssistedResult:
    """Design-unbiased full-benchmark scores from the tasks of a :class:`SubsetPlan`, model-assisted.

    With fixed predictions (or none) and a simple random, stratified or
    Poisson plan: the classical difference estimator and its exact design
    variance (with ``working=None``, the plain or stratified mean, and on a
    Poisson plan the Hajek mean with its Korn-Graubard interval, which kept
    its level where the Horvitz-Thompson mean's t interval did not; its
    ``se`` is the linearised one, and the interval comes from an effective
    sample size of at most the tasks drawn, so it can be wider than
    ``se`` implies. Without a model a Poisson plan is the widest of the
    three: at 20 tasks and 90% its intervals were 1.3-1.9x as wide as a
    simple random sample's on METR, SWE-bench and tau-bench; unequal
    probabilities pay with a working model). With
    an IRT bank, or a PPS plan: Des Raj's estimator over the plan's draws in
    order, the bank's predictions updated from the earlier draws (Poisson
    plans have no order and use the bank's population-average predictions).

    Parameters
    ----------
    plan : SubsetPlan
        From :func:`plan_subset`, drawn before any outcome was seen.
    outcomes : Dataset or DataArray
        The agents' logs (``score`` over agent, task, run, or counts) for
        at least the plan's tasks; other tasks are not used.
    working : IRTBank, WorkingModel, DataArray or None
        As in :func:`assisted_adaptive`.
    prob : float
        Level of the intervals (and ``1 - prob`` the misfit test's).
    n_runs, n_draws, n_grid, executor, rng
        As in :func:`assisted_adaptive`.

    Returns
    -------
    AssistedResult
        Per agent: the estimate from the plan's tasks (the estimator named
        in ``ci.attrs["ci_detail"]``) and its interval, the model-based
        score and the misfit test; ``design`` names the plan's design.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> g = np.random.default_rng(1)
    >>> tasks = [f"t{i}" for i in range(300)]
    >>> m = xr.DataArray(g.uniform(0.05, 0.95, 300), dims="task", coords={"task": tasks})
    >>> y = xr.DataArray((g.random((1, 300)) < m.values).astype(float), dims=("agent", "task"),
    ...                  coords={"agent": ["a"], "task": tasks})
    >>> from hierbench.design import plan_subset
    >>> plan = plan_subset(tasks, 60, rng=2)
    >>> res = assisted_mean(plan, y, m, prob=0.9)
    >>> bool(res.ci.sel(ci_bound="lower") < res.estimate)
    True
    """
    if not isinstance(plan, SubsetPlan):
        raise TypeError(f"`plan` must be a SubsetPlan (design.plan_subset); got {type(plan).__name__}")
    spec = _spec(working, plan.tasks, prob=prob, n_runs=n_runs, n_draws=n_draws, n_grid=n_grid, who="assisted_mean")
    if set(spec.tasks) != set(plan.tasks):
        raise HierbenchError(f"`working`'s tasks must be the plan's tasks ({plan.n_tasks}); they differ in "
                             f"{len(set(spec.tasks) ^ set(plan.tasks))} tasks")
    fixed = spec.fixed
    if fixed is not None:  # labelled predictions, read in the plan's task order (they may come in any order)
        pos = {t: i for i, t in enumerate(spec.tasks)}
        fixed = fixed[[pos[t] for t in plan.tasks]]
    spec = _Spec(spec.bank, fixed, spec.working, plan.tasks if spec.bank is None else spec.tasks, spec.prob,
                 spec.n_runs, spec.n_draws, spec.n_grid)
    if spec.bank is not None and not np.array_equal(spec.tasks, plan.tasks):
        raise HierbenchError("`working`'s bank must list its tasks in the plan's order (plan_subset(bank, ...))")
    if plan.design == "poisson" and spec.bank is not None:  # no draw order: nothing to update from
        spec = replace(spec, working=spec.working.replace(
            "ability updated from the tasks drawn before", "its population-average predictions (a Poisson "
            "plan has no draw order to update along)"))
    agents, sources = _sources(_plan_logs(outcomes, plan), spec.tasks, spec.n_runs)
    exact = spec.working.startswith("none") and plan.design == "srs" and _single_run(sources, spec)
    outs = map_seeded(_plan_agent, sources, rng=rng, executor=executor,
                      desc="agents", kwargs={"spec": spec, "plan": plan, "exact": exact}, thread_safe=False)
    estimator, detail = _branch(spec, plan.design, exact)
    kind = "exact" if exact else "korn-graubard" if _takes_hajek(spec, plan.design) else "t"
    return assemble(outs, agents, spec.tasks, prob=spec.prob, working=spec.working, design=f"plan: {plan.design}",
                    detail=detail, kind=kind, estimator=estimator)


def _plan_logs(outcomes: Any, plan: SubsetPlan) -> Any:
    """The outcomes with every plan task present (tasks not in the plan filled with a dummy run, never read)."""
    if not isinstance(outcomes, (xr.DataArray, xr.Dataset)):
        raise TypeError(f"`outcomes` must be logs or counts (xarray); got {type(outcomes).__name__}")
    run = outcomes
    if isinstance(run, xr.DataArray) and "run" not in run.dims:
        run = run.expand_dims(run=[0], axis=-1)
    c = counts(run, name="outcomes", purpose="model-assisted estimation")
    drawn = set(plan.order.values.astype(str))
    have = set(np.asarray(c["task"].values).astype(str))
    missing = sorted(drawn - have)
    if missing:
        raise HierbenchError(f"`outcomes` must hold every task of the plan; missing {len(missing)}: "
                             f"{', '.join(missing[:5])}{', ...' if len(missing) > 5 else ''}")
    c = c.reindex(task=list(plan.tasks))
    nr = c["n_runs"].fillna(0)
    zero = (nr == 0).any([d for d in nr.dims if d != "task"]) if nr.ndim > 1 else nr == 0
    short = sorted(drawn & set(np.asarray(nr["task"].values[zero.values]).astype(str).tolist()))
    if short:
        who = sorted(str(a) for a in nr["agent"].values[(nr.sel(task=short) == 0).any("task").values]) if (
            "agent" in nr.dims) else []
        raise HierbenchError(
            f"`outcomes` must hold a run of every planned task for every agent; {len(short)} planned task(s) lack "
            f"one: {', '.join(short[:5])}{', ...' if len(short) > 5 else ''}"
            + (f" (agents without them: {', '.join(who[:5])}{', ...' if len(who) > 5 else ''}; estimate them "
               "apart, or keep the agents that ran every planned task: outcomes.sel(agent=[...]))" if who else ""))
    # tasks outside the plan are never read: give them one dummy run so the source can be built
    return c.assign(n_runs=nr.where(nr > 0, 1), n_success=c["n_success"].fillna(0))
