"""Adaptive evaluation of one agent on a calibrated IRT bank: one task at a time, from its answers so far.

:func:`adaptive` chooses tasks by expected Fisher information about the
ability, or by the expected reduction of the posterior variance of the
realised full-benchmark score (exact for a mixture over item-parameter
draws x an ability grid); it stops when the interval is narrower than asked
or the budget is spent. ``run`` is a callback that runs one (agent, task),
or complete logs to replay. Its interval is model-based (the 2PL posterior,
plus the misfit variance of :func:`calibrate_misfit` when given); the
design-based alternative, whose estimate is unbiased whatever the
model's quality (its interval approximate, by the martingale central limit
theorem), is :func:`hierbench.design.assisted_adaptive`.

This module imports numpy, scipy and xarray only.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from .._base import DEFAULT_PROB
from .._base import HierbenchError
from .._base import Result
from .._base import as_rng
from .._base import check_choice
from .._base import check_int
from .._base import check_prob
from .._base import interval_label
from .._base import warn_user
from .._docs import fill_doc
from ..freq import IRTBank
from ..freq import IRTScoreResult
from ..freq import ModelMisfitWarning as ModelMisfitWarning  # shared with irt_score (one class)
from ..freq import beyond_calibration
from ..freq import irt_score
from ._assisted import _logscore
from ._assisted import prequential_z
from ._misfit import MisfitCalibration
from ._misfit import _add_misfit
from ._misfit import _check_misfit
from ._posterior import _check_bank
from ._posterior import _Posterior
from ._posterior import _Replay

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AdaptiveResult", "ModelMisfitWarning", "adaptive"]


@dataclass(frozen=True, repr=False)
class AdaptiveResult(Result):
    """An adaptive evaluation of one agent.

    ``estimate`` and ``ci``: the predicted full-benchmark score and its
    interval (from :func:`hierbench.freq.irt_score` on the tasks run, with
    the whole bank). ``score`` holds that result (ability, pass^k, draws).
    ``tasks``, ``n_runs``, ``n_success`` (dim ``step``): what was run, in
    order. ``trace`` (dim ``step``): the running estimate, interval and
    predictive sd after each step (mixture approximation on the thinned
    bank used for selection; with the misfit variance when given). ``stop_reason``: ``"width"``, ``"budget"`` or
    ``"exhausted"``; ``"width"`` means the interval returned is narrower than asked.
    ``misfit_z`` and ``misfit_p``: the prequential person-fit test of the
    outcomes, each predicted before it was seen (standard normal under the
    bank's model; low: misfit; the statistic of
    :func:`hierbench.design.assisted_adaptive`). ``flags``: why the
    model-based interval is not to be trusted for this agent (misfit at
    ``1 - prob``, or an ability beyond the calibration agents'), each also
    warned as :class:`ModelMisfitWarning`.

    ``to_dataset()`` holds every field: ``score``'s as ``score_<variable>``
    (``score_ability``, ``score_ability_ci``), ``trace``'s as ``trace_<variable>``.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    score: IRTScoreResult
    tasks: xr.DataArray
    n_runs: xr.DataArray
    n_success: xr.DataArray
    trace: xr.Dataset
    stop_reason: str
    criterion: str
    seconds: float
    misfit_z: float = np.nan
    misfit_p: float = np.nan
    flags: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """The table of ``Result.to_frame`` (the score's as ``score_*`` columns), with the misfit test's z and p."""
        df = super().to_frame()
        df["misfit_z"], df["misfit_p"] = self.misfit_z, self.misfit_p
        return df

    def _repr_lines(self) -> list[str]:
        """The base lines, the first saying that the interval is model-based and what it trusts."""
        detail = str(self.ci.attrs.get("ci_detail", ""))
        misfit = "misfit variance added" if "model-misfit" in detail else "no misfit variance added"
        head = (
            f"AdaptiveResult: model-based estimate with {interval_label(self.ci)} interval after "
            f"{self.tasks.size} tasks (holds if the bank's IRT model describes this agent on the tasks not run; "
            f"{misfit}; stopped: {self.stop_reason})"
        )
        checks = (f"  prequential misfit z {self.misfit_z:.2f}, p {self.misfit_p:.2g}"
                  if np.isfinite(self.misfit_p) else "  prequential misfit: not computed")  # fmt: skip
        return [head, *self._cell_lines(), checks, *(f"  FLAG: {f}" for f in self.flags)]


#: what an adaptive interval trusts, said in its ``ci_detail``
MODEL_BASED = (
    "model-based: trusts the bank's item curves on the {n} tasks not run, chosen by the model (no "
    "design-based guarantee; the design-unbiased alternative is assisted_adaptive)"
)


@fill_doc
def adaptive(
    bank: IRTBank,
    run: Callable[[str], float] | xr.DataArray | xr.Dataset,
    *,
    budget: int = 100,
    width: float | None = None,
    prob: float = DEFAULT_PROB,
    criterion: Literal["variance", "fisher"] = "variance",
    start: Sequence[str] | None = None,
    n_runs: int = 1,
    n_draws: int = 200,
    n_grid: int = 61,
    min_tasks: int = 5,
    misfit: MisfitCalibration | None = None,
    rng: None | int | np.random.Generator = None,
) -> AdaptiveResult:
    """Evaluate one agent adaptively on a calibrated bank.

    Parameters
    ----------
    bank : IRTBank
        The calibrated bank; one whose slopes collapsed (``IRTBank.slopes_collapsed``) is refused.
    run : callable or DataArray/Dataset
        ``run(task) -> score`` runs the agent once on a task and returns 0 or
        1 (NaN: the run failed; it is counted and the task is not asked
        again). Or the agent's complete logs, ``score`` over (task, run)
        (replay mode): each call to a task serves its next logged run.
    budget : int
        Most runs to spend (calls to ``run``).
    width : float, optional
        Stop once the ``prob`` interval of the full-benchmark score is
        narrower than this (e.g. 0.04 for +-2 points); checked after
        ``min_tasks`` tasks.
    %(prob)s
    criterion : {"variance", "fisher"}
        ``"variance"``: the task whose answer is expected to lower the
        posterior variance of the realised full-benchmark score most (the
        variance of its conditional mean over the answer; exact for the
        mixture over item draws and ability grid). ``"fisher"``: the task
        with the largest Fisher information about the ability, averaged over
        the current posterior.
    start : sequence of str, optional
        Tasks to run first, in order (e.g. anchors).
    n_runs : int
        Runs per chosen task (repeated runs; the criterion is computed for
        one run).
    n_draws, n_grid : int
        Item-parameter draws and ability grid points used for choosing
        (the final interval uses the whole bank).
    min_tasks : int
        Tasks to run before the width rule may stop.
    misfit : MisfitCalibration, optional
        The model-misfit variance of this selection rule, measured on the
        calibration agents (:func:`calibrate_misfit`, same ``criterion`` and
        ``n_runs``). Its variance at the number of tasks run is added to the
        predictive distribution of the tasks not run (the running interval,
        hence the width rule, and the final one); the estimate is unchanged.
        Without it the interval assumes the 2PL holds exactly for the tasks
        never asked, which adaptive selection makes the decisive assumption:
        it asks the tasks near the agent's ability and leaves out the ones
        whose prediction rests on the item curves' tails (see
        :func:`calibrate_misfit`).
    %(rng)s

    Returns
    -------
    AdaptiveResult
        The predicted full-benchmark score and its interval after the
        tasks run, those tasks in order with their outcomes, the running
        estimate after each step (``trace``) and why it stopped.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from hierbench.freq import IRTBank
    >>> g = np.random.default_rng(0)
    >>> T = 60
    >>> bank = IRTBank(xr.DataArray(np.exp(g.normal(0, .1, (100, T))), dims=("sample", "task")),
    ...                xr.DataArray(np.tile(g.normal(0, 2, T), (100, 1)), dims=("sample", "task")))
    >>> truth = (g.random(T) < 0.5).astype(float)
    >>> res = adaptive(bank, lambda t: truth[int(t)], budget=10, rng=0)
    >>> res.tasks.size, res.stop_reason
    (10, 'budget')
    """
    bank = _usable_bank(bank)
    spec = _AdaptiveSpec.checked(bank, budget=budget, width=width, prob=prob, criterion=criterion, n_runs=n_runs,
                                 min_tasks=min_tasks, misfit=misfit)
    n_draws = check_int(n_draws, "n_draws", min=1)
    n_grid = check_int(n_grid, "n_grid", min=11)
    gen = as_rng(rng)
    call, replay = _caller(run, bank)
    start_idx = bank._index(start, name="start") if start is not None else np.array([], np.intp)
    t0 = time.perf_counter()
    # one BLAS thread: the products here are small, and threads sharing a loaded machine made them
    # ten times slower (and a sum's rounding then depends on the thread count)
    with threadpool_limits(1, user_api="blas"):
        post = _Posterior(bank, n_draws, n_grid, gen, n_runs)
        path, score = _scored_path(post, bank, call, replay, start_idx, spec, gen)
        return _adaptive_result(bank, path, spec, score, t0, n_draws=min(n_draws, bank.n_samples), n_grid=n_grid)


def _usable_bank(bank: Any) -> IRTBank:
    """The bank, if it is one whose item curves can choose tasks (its slopes did not collapse)."""
    bank = _check_bank(bank)
    bank.check_usable("adaptive cannot choose tasks on this bank: every task would be equally uninformative, so "
                      "each choice arbitrary and the interval the prior's (assisted_adaptive's design-based "
                      "estimate holds whatever the model)")
    return bank


def _scored_path(post: _Posterior, bank: IRTBank, call, replay, start_idx: np.ndarray, spec: _AdaptiveSpec,
                 gen: np.random.Generator) -> tuple[_Path, IRTScoreResult]:
    """The path and the score it returns; a width stop is confirmed on that score (kept, not recomputed)."""
    last: dict[str, Any] = {}

    def confirm(path: _Path) -> bool:
        last["score"], last["n"] = _final_score(bank, path, spec, gen), len(path.order)
        lo, hi = (float(v) for v in last["score"].ci.values.reshape(-1))
        return hi - lo < spec.width

    path = _adaptive_path(post, bank, call, replay, start_idx, spec, confirm)
    return path, last["score"] if last.get("n") == len(path.order) else _final_score(bank, path, spec, gen)


@dataclass(frozen=True)
class _AdaptiveSpec:
    """The checked stopping and scoring rules of one adaptive evaluation."""

    budget: int
    width: float | None
    prob: float
    criterion: str
    n_runs: int
    min_tasks: int
    misfit: MisfitCalibration | None

    @classmethod
    def checked(cls, bank: IRTBank, *, budget, width, prob, criterion, n_runs, min_tasks, misfit) -> _AdaptiveSpec:
        budget = check_int(budget, "budget", min=1)
        prob = check_prob(prob)
        check_choice(criterion, "criterion", ["variance", "fisher"])
        n_runs = check_int(n_runs, "n_runs", min=1)
        min_tasks = check_int(min_tasks, "min_tasks", min=1)
        if width is not None and not (isinstance(width, (int, float)) and 0 < width <= 1):
            raise ValueError(f"`width` must be a number with 0 < width <= 1 (score units); got {width!r}")
        if misfit is not None:
            _check_misfit(misfit, bank, criterion, n_runs, budget)
        return cls(budget, width, prob, criterion, n_runs, min_tasks, misfit)


def _caller(run: Any, bank: IRTBank) -> tuple[Callable[[str], float], _Replay | None]:
    """The ``run`` callback, or a replay of the logs given instead (then also returned as the replay)."""
    if isinstance(run, (xr.DataArray, xr.Dataset)):
        replay = _Replay(run, bank)
        return replay, replay
    if callable(run):
        return run, None
    raise TypeError(f"`run` must be a callable task -> score or an agent's logs; got {type(run).__name__}")


def _run_task(call: Callable[[str], float], replay: _Replay | None, task: str, runs: int) -> tuple[int, int, int, int]:
    """Up to ``runs`` runs of one task: (successes, valid runs, runs spent, failed runs)."""
    k = n = spent = failed = 0
    for _ in range(runs):
        if replay is not None and replay.available(task) == 0:
            break
        s = call(task)
        spent += 1
        if s is None or (isinstance(s, float) and np.isnan(s)):
            failed += 1
            continue
        s = float(s)
        if s not in (0.0, 1.0):
            raise HierbenchError(
                f"`run` must return a binary score (0 or 1, NaN for a failed run); got {s!r} for task {task!r}"
            )
        k += int(s)
        n += 1
    return k, n, spent, failed


@dataclass
class _Path:
    """What one adaptive evaluation ran, in order, and why it stopped."""

    n_tot: np.ndarray
    y_tot: np.ndarray
    order: list[str] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    succ: list[int] = field(default_factory=list)
    trace: list[tuple[float, float, float, float]] = field(default_factory=list)
    #: per task run: log predictive probability of its outcome, made before it was seen, with
    #: its mean and variance under that prediction (the prequential misfit test's terms)
    scores: list[tuple[float, float, float]] = field(default_factory=list)
    n_failed: int = 0
    reason: str = "exhausted"


def _adaptive_path(post: _Posterior, bank: IRTBank, call, replay, start_idx: np.ndarray,
                   spec: _AdaptiveSpec, confirm: Callable[[_Path], bool]) -> _Path:
    """Choose, run and observe tasks until the width rule, the budget or the bank stops it.

    The width rule is checked on the running interval; where it passes, ``confirm(path)``
    says whether the interval the result will carry passes too (else the path goes on).
    """
    T, tasks = bank.n_tasks, bank.tasks
    asked = np.zeros(T, bool)
    if replay is not None:
        asked |= np.array([replay.available(t) == 0 for t in tasks])
    path = _Path(np.zeros(T, np.int64), np.zeros(T, np.int64))
    spent = 0
    queue = list(start_idx)
    while True:
        if spent >= spec.budget:
            path.reason = "budget"
            return path
        if queue:
            j = int(queue.pop(0))
            if asked[j]:
                continue
        else:
            if asked.all():
                path.reason = "exhausted"
                return path
            crit = post.criterion(spec.criterion)
            crit[asked] = -np.inf
            j = int(np.argmax(crit))
        asked[j] = True
        k, n, used, failed = _run_task(call, replay, str(tasks[j]), min(spec.n_runs, spec.budget - spent))
        spent += used
        path.n_failed += failed
        if n == 0:
            continue
        path.scores.append(_logscore(post.outcome_pmf(j, n), k))
        post.observe(j, k, n)
        path.n_tot[j] += n
        path.y_tot[j] += k
        ran = path.n_tot > 0
        post.known = float((path.y_tot[ran] / path.n_tot[ran]).sum())
        path.order.append(str(tasks[j]))
        path.runs.append(n)
        path.succ.append(k)
        tau = spec.misfit.sd_at(len(path.order)) if spec.misfit is not None else 0.0
        m, lo, hi, sd = post.interval(post.known, spec.prob, tau)
        path.trace.append((m, lo, hi, sd))
        if spec.width is not None and len(path.order) >= spec.min_tasks and hi - lo < spec.width:
            # the running interval (thinned bank) passed; the one returned (whole bank) must too
            if confirm(path):
                path.reason = "width"
                return path


def _final_score(bank: IRTBank, path: _Path, spec: _AdaptiveSpec, gen: np.random.Generator) -> IRTScoreResult:
    """The score the result carries: the tasks run scored on the whole bank, plus the misfit variance."""
    T, tasks, prob, misfit = bank.n_tasks, bank.tasks, spec.prob, spec.misfit
    ran = path.n_tot > 0
    resp = xr.Dataset(
        {"n_runs": ("task", path.n_tot[ran]), "n_success": ("task", path.y_tot[ran].astype(float))},
        coords={"task": tasks[ran]},
    )
    score = irt_score(bank, resp, prob=prob, n_runs=spec.n_runs, misfit_level=None, rng=gen)  # own test: tasks chosen from answers
    if misfit is not None:
        known = float((path.y_tot[ran] / path.n_tot[ran]).sum())
        score = _add_misfit(score, misfit.sd_at(len(path.order)), known, int((~ran).sum()), T, prob, gen)
    detail = f"{score.ci.attrs.get('ci_detail', '')}; {MODEL_BASED.format(n=int((~ran).sum()))}"
    if misfit is None:
        detail += "; no misfit variance added (misfit=calibrate_misfit(...) widens it by what the model misses)"
    return dataclasses.replace(score, ci=score.ci.assign_attrs(ci_detail=detail))


def _adaptive_result(bank: IRTBank, path: _Path, spec: _AdaptiveSpec, score: IRTScoreResult, t0: float, *,
                     n_draws: int, n_grid: int) -> AdaptiveResult:
    """The result: the score of the tasks run (:func:`_final_score`), the path, and the checks on the model."""
    prob, misfit = spec.prob, spec.misfit
    z, p = prequential_z(np.array(path.scores, float).reshape(-1, 4))
    flags = _model_flags(bank, score, z, p, prob)
    for f in flags:
        warn_user(f"adaptive: {f}", ModelMisfitWarning)
    step = np.arange(len(path.order))
    tr = np.array(path.trace).reshape(-1, 4)
    trace_ds = xr.Dataset(
        {
            "estimate": ("step", tr[:, 0]),
            "lower": ("step", tr[:, 1]),
            "upper": ("step", tr[:, 2]),
            "sd": ("step", tr[:, 3]),
            "task": ("step", np.array(path.order, dtype=object)),
        },
        coords={"step": step},
        attrs={"ci_prob": prob, "n_failed_runs": path.n_failed, "n_draws": n_draws, "n_grid": n_grid,
               "misfit_sd": misfit.sd_at(len(path.order)) if misfit is not None and path.order else 0.0},
    )
    return AdaptiveResult(
        estimate=score.estimate,
        ci=score.ci,
        score=score,
        tasks=xr.DataArray(np.array(path.order, dtype=object), dims="step", coords={"step": step}, name="tasks"),
        n_runs=xr.DataArray(np.array(path.runs, np.int64), dims="step", coords={"step": step}, name="n_runs"),
        n_success=xr.DataArray(np.array(path.succ, np.int64), dims="step", coords={"step": step}, name="n_success"),
        trace=trace_ds,
        stop_reason=path.reason,
        criterion=spec.criterion,
        seconds=time.perf_counter() - t0,
        misfit_z=z,
        misfit_p=p,
        flags=tuple(flags),
    )


def _model_flags(bank: IRTBank, score: IRTScoreResult, z: float, p: float, prob: float) -> list[str]:
    """What says the model-based interval should not be trusted for this agent ([] where nothing does).

    The prequential misfit test (as :func:`hierbench.design.assisted_adaptive` runs it), and
    an ability beyond the calibration agents' (the bank's ``attrs["ability_range"]``, where
    the bank records it): there the item curves are extrapolated, and on SWE-bench the
    agents beyond the calibration range were scored 3 to 16 points off with intervals that
    covered 0.2 to 0.3 of the time (held-out check, the model card).
    """
    out = []
    if np.isfinite(p) and p < 1 - prob:
        out.append(
            f"this agent's answers are less likely under the bank than the bank expects (prequential misfit "
            f"z {z:.2f}, one-sided p {p:.2g} < {1 - prob:.2g}): its model-based interval is not to be trusted"
        )
    theta = float(np.asarray(score.ability).reshape(-1)[0]) if score.ability is not None else np.nan
    extrapolated = beyond_calibration(bank.attrs.get("ability_range"), theta)
    if extrapolated is not None:
        out.append(extrapolated)
    if out:
        out[-1] += "; assisted_adaptive's design-based estimate is unbiased whatever the model"
    return out
