"""Adaptive evaluation on a calibrated IRT bank: anchors, one-task-at-a-time selection, replay.

A new agent is scored on a subset of a calibrated bank's tasks
(:func:`hierbench.freq.irt_score`); the question here is which subset.

* :func:`anchors` picks a fixed subset of a given size, the same for every
  agent: ``"cluster"`` (tinyBenchmarks-style: k-means on the tasks' item
  characteristic curves, the task nearest each centre, weights the cluster
  shares) or ``"information"`` (greedy: the task that most lowers the
  population-averaged approximate posterior variance of the expected
  full-benchmark score).
* :func:`adaptive` chooses tasks one at a time for one agent, from its
  answers so far: by expected Fisher information about its ability, or by
  the expected reduction of the posterior variance of its realised
  full-benchmark score (exact for a mixture over item-parameter draws x an
  ability grid); it stops when the interval is narrower than asked or the
  budget is spent. ``run`` is a callback that runs one (agent, task), or
  complete logs to replay.
* :func:`calibrate_misfit` measures, by cross-fitted replay on the
  calibration agents, the variance the 2PL posterior misses on the tasks
  adaptive selection leaves unasked (the tails of the item curves), for
  ``adaptive(..., misfit=...)`` to add to its interval.
* :func:`loo_study` replays all of it leave-one-agent-out on complete logs:
  calibrate on the other agents, score the held-out one from ``n`` tasks
  chosen at random, by anchors and adaptively, and record the error and
  whether the interval covered the agent's actual full score.

No anytime-valid guarantee is claimed: the intervals are Bayesian posterior
intervals (the bank's item parameters and the ability integrated out; for
adaptive selection, plus the measured misfit variance), and their
frequentist coverage, including after adaptive stopping, is what
:func:`loo_study` measures.

This module imports numpy, scipy and xarray only.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
import xarray as xr
from scipy.cluster.vq import kmeans2
from scipy.special import expit, ndtr
from scipy.stats import norm

from .._base import (
    DEFAULT_PROB,
    HierbenchError,
    Result,
    ZeroWidthIntervalWarning,
    as_rng,
    check_choice,
    check_int,
    check_prob,
    counts,
    make_interval,
)
from ..freq import IRTBank, IRTScoreResult, calibrate_irt, cell_loglik, irt_score
from ._plan import uniform_bounds

__all__ = [
    "AdaptiveResult",
    "AnchorSet",
    "MisfitCalibration",
    "adaptive",
    "anchors",
    "calibrate_misfit",
    "loo_study",
    "loo_summary",
]

#: ability points (in calibration-agent sds) where item curves are compared for clustering
_ICC_POINTS = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0])
#: relative weight below which a (draw, ability) row is dropped from the adaptive computations
_PRUNE = 1e-10


def _check_bank(bank: Any) -> IRTBank:
    if not isinstance(bank, IRTBank):
        raise TypeError(
            f"`bank` must be an IRTBank (hierbench.freq.calibrate_irt(...).bank or "
            f"IRTBank.from_posterior(fit)); got {type(bank).__name__}"
        )
    return bank


# --------------------------------------------------------------------------- anchors


@dataclass(frozen=True)
class AnchorSet:
    """A fixed subset of a bank's tasks.

    Attributes
    ----------
    tasks : numpy.ndarray
        Task labels, in the order chosen.
    weights : numpy.ndarray
        Share of the bank each anchor stands for (``"cluster"``: its
        cluster's size / T; ``"information"``: 1 / size).
    method : str
    """

    tasks: np.ndarray
    weights: np.ndarray
    method: str

    def __len__(self) -> int:
        return int(self.tasks.size)


def _score_curve_terms(a: np.ndarray, d: np.ndarray, grid: np.ndarray):
    """At each ability point: the expected-score slope S'(theta) and each task's Fisher information."""
    p = expit(a[None, :] * grid[:, None] + d[None, :])  # (G, T)
    info = a[None, :] ** 2 * p * (1 - p)
    slope = (a[None, :] * p * (1 - p)).mean(1)
    return slope, info


def anchors(
    bank: IRTBank,
    size: int,
    *,
    method: Literal["cluster", "information"] = "cluster",
    rng: None | int | np.random.Generator = None,
) -> AnchorSet:
    """A fixed anchor set of ``size`` tasks, the same for every agent.

    Parameters
    ----------
    bank : IRTBank
    size : int
        Number of anchors, 1 <= size <= number of bank tasks.
    method : {"cluster", "information"}
        ``"cluster"``: k-means (``size`` centres) on each task's item
        characteristic curve, the success probability at abilities
        -2, -1, -0.5, 0, 0.5, 1, 2 (posterior-mean item parameters); the task
        nearest each centre is the anchor and the cluster's share of the bank
        its weight (the tinyBenchmarks recipe, with the curve as the task's
        embedding so that tasks everyone solves, or nobody does, fall
        together however extreme their parameters). ``"information"``:
        greedy, each step adding the task that most lowers
        ``E_theta[S'(theta)^2 / (1 + sum of the anchors' Fisher information at theta)]``
        with ``theta ~ N(0, 1)``: the approximate posterior variance of the
        expected full-benchmark score ``S``, averaged over the agent
        population.
    rng : None, int or numpy.random.Generator
        k-means initialisation.

    Returns
    -------
    AnchorSet

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from hierbench.freq import IRTBank
    >>> g = np.random.default_rng(0)
    >>> bank = IRTBank(xr.DataArray(np.exp(g.normal(0, .2, (50, 40))), dims=("sample", "task")),
    ...                xr.DataArray(g.normal(0, 2, (50, 40)), dims=("sample", "task")))
    >>> len(anchors(bank, 5, method="information"))
    5
    """
    bank = _check_bank(bank)
    size = check_int(size, "size", min=1, max=bank.n_tasks)
    check_choice(method, "method", ["cluster", "information"])
    a, d = bank.point()
    T = bank.n_tasks
    if method == "cluster":
        emb = expit(a[:, None] * _ICC_POINTS[None, :] + d[:, None])
        if size == T:
            idx = np.arange(T)
            w = np.full(T, 1.0 / T)
        else:
            gen = as_rng(rng)
            seed = int(gen.integers(2**31 - 1))
            # the best of a few k-means++ starts (lowest within-cluster sum of squares)
            best = None
            for r in range(5):
                cent, lab = kmeans2(emb, size, minit="++", seed=seed + r)
                sse = float(((emb - cent[lab]) ** 2).sum())
                if best is None or sse < best[0]:
                    best = (sse, cent, lab)
            _, cent, lab = best
            idx, w = [], []
            taken = np.zeros(T, bool)
            for k in range(size):
                members = np.flatnonzero(lab == k)
                if members.size == 0:
                    continue
                dist = ((emb[members] - cent[k]) ** 2).sum(1)
                j = members[np.argmin(dist)]
                idx.append(j)
                taken[j] = True
                w.append(members.size / T)
            # empty clusters (k-means can leave some): fill with the tasks farthest from their centres
            while len(idx) < size:
                far = ((emb - cent[lab]) ** 2).sum(1)
                far[taken] = -1
                j = int(np.argmax(far))
                idx.append(j)
                taken[j] = True
                w.append(0.0)
            idx = np.array(idx)
            w = np.array(w)
        return AnchorSet(bank.tasks[idx], w, "cluster")
    grid = np.linspace(-4, 4, 81)
    pw = norm.pdf(grid)
    pw /= pw.sum()
    slope, info = _score_curve_terms(a, d, grid)
    acc = np.ones_like(grid)
    chosen: list[int] = []
    free = np.ones(T, bool)
    for _ in range(size):
        crit = (pw[:, None] * slope[:, None] ** 2 / (acc[:, None] + info)).sum(0)
        crit[~free] = np.inf
        j = int(np.argmin(crit))
        chosen.append(j)
        free[j] = False
        acc = acc + info[:, j]
    return AnchorSet(bank.tasks[np.array(chosen)], np.full(size, 1.0 / size), "information")


# --------------------------------------------------------------------------- adaptive


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
    ``"exhausted"``.
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

    _dataset_exclude: ClassVar[tuple[str, ...]] = ("trace",)


class _Replay:
    """A callback serving one agent's complete logs: each call to a task returns its next run."""

    def __init__(self, logs: xr.DataArray | xr.Dataset, bank: IRTBank):
        if isinstance(logs, xr.Dataset):
            if "score" not in logs:
                raise HierbenchError(f"`run` logs must hold `score`; got {list(logs.data_vars)}")
            logs = logs["score"]
        if "agent" in logs.dims:
            if logs.sizes["agent"] != 1:
                raise HierbenchError(f"`run` logs must hold one agent; got {logs.sizes['agent']}")
            logs = logs.isel(agent=0, drop=True)
        if "run" not in logs.dims:
            logs = logs.expand_dims(run=[0])
        if set(logs.dims) != {"task", "run"}:
            raise HierbenchError(f"`run` logs must have dims ('task', 'run'); got {logs.dims}")
        counts(logs, name="run", purpose="adaptive replay")  # binary check, names offending cells
        logs = logs.transpose("task", "run")
        labels = np.asarray(logs["task"].values).astype(str)
        bank._index(labels, name="`run` logs' tasks")
        self.values = {t: v[np.isfinite(v)] for t, v in zip(labels, logs.values.astype(float), strict=True)}
        self.used = dict.fromkeys(labels, 0)

    def available(self, task: str) -> int:
        return int(self.values.get(task, np.array([])).size - self.used.get(task, 0))

    def __call__(self, task: str) -> float:
        i = self.used[task]
        self.used[task] = i + 1
        return float(self.values[task][i])


class _Posterior:
    """Weights over (item-parameter draw x ability grid point) for one agent.

    Rows whose weight has fallen below ``_PRUNE`` times the largest are left
    out of the criterion and the interval (their total mass is below
    ``rows * _PRUNE`` of the largest row's, negligible at 1e-10).
    """

    def __init__(self, bank: IRTBank, n_draws: int, n_grid: int, gen: np.random.Generator, n_runs: int = 1):
        b = bank.thin(n_draws, gen)
        # runs correlated within a cell (calibrate_irt's run_icc): an observed cell is
        # beta-binomial (cell_loglik), and a task not run contributes the variance of a
        # mean of n_runs correlated runs, p (1 - p) (1 + (n_runs - 1) icc) / n_runs
        self.icc = float(bank.attrs.get("run_icc", 0.0))
        a = b.discrimination.values
        d = b.intercept.values
        grid = np.linspace(-5.0, 5.0, n_grid)
        S, T = a.shape
        self.T = T
        eta = (a[:, None, :] * grid[None, :, None] + d[:, None, :]).reshape(S * n_grid, T)
        self.eta = eta
        self.P = expit(eta)
        self.V = self.P * (1 - self.P) * (1 + (n_runs - 1) * self.icc) / n_runs  # variance of a task's rate
        self.Q = (np.repeat(a, n_grid, axis=0) ** 2) * self.V  # Fisher information
        self.P2 = self.P * self.P
        lw = np.tile(-0.5 * grid**2, S)
        self.logw = lw - lw.max()
        self.unrun = np.ones(T, bool)  # tasks not run at all
        self.known = 0.0  # sum over run tasks of their observed success rate
        self.ptot = self.P.sum(1)  # sum over unrun tasks of p
        self.vtot = self.V.sum(1)  # sum over unrun tasks of their rate's variance

    def weights(self) -> np.ndarray:
        w = np.exp(self.logw - self.logw.max())
        return w / w.sum()

    def _active(self) -> tuple[np.ndarray, np.ndarray]:
        w = self.weights()
        rows = np.flatnonzero(w > _PRUNE * w.max())
        wa = w[rows]
        return rows, wa / wa.sum()

    def observe(self, t: int, k: int, n: int) -> None:
        self.logw = self.logw + cell_loglik(self.eta[:, t], k, n, self.icc)
        if self.unrun[t]:
            self.unrun[t] = False
            self.ptot = self.ptot - self.P[:, t]
            self.vtot = self.vtot - self.V[:, t]

    def criterion(self, kind: str) -> np.ndarray:
        rows, w = self._active()
        if rows.size > 0.25 * self.P.shape[0]:  # a zero-padded product beats copying most rows
            wf = np.zeros(self.P.shape[0])
            wf[rows] = w
            rows, w = slice(None), wf
        if kind == "fisher":
            return w @ self.Q[rows]
        P = self.P[rows]
        q, A = np.stack([w, w * self.ptot[rows]]) @ P
        C = w @ self.P2[rows]
        Ep = float(w @ self.ptot[rows])
        q = np.clip(q, 1e-12, 1 - 1e-12)
        m1 = 1.0 + (A - C) / q
        m0 = (Ep - q - A + C) / (1 - q)
        return q * (1 - q) * (m1 - m0) ** 2

    def moments(self, known: float, misfit_sd: float = 0.0) -> tuple[float, float]:
        """Mean and sd of the realised score (with the misfit variance)."""
        rows, w = self._active()
        m = (known + self.ptot[rows]) / self.T
        v = np.maximum(self.vtot[rows], 0.0) / self.T**2 + misfit_sd**2
        mean = float(w @ m)
        return mean, float(np.sqrt(w @ v + w @ (m - mean) ** 2))

    def interval(self, known: float, prob: float, misfit_sd: float = 0.0) -> tuple[float, float, float, float]:
        """Mean, equal-tailed interval and sd of the realised score (normal per mixture component).

        ``misfit_sd`` (score units) is added in quadrature to every
        component's sd: the model-misfit variance of :func:`calibrate_misfit`.
        The quantiles are found on three rounds of a 64-point grid, both
        tails at once in the first (resolution: range / 64 / 32^2).
        """
        mean, sd_tot = self.moments(known, misfit_sd)
        rows, w = self._active()
        m = (known + self.ptot[rows]) / self.T
        sd = np.sqrt(np.maximum(np.maximum(self.vtot[rows], 0.0) / self.T**2 + misfit_sd**2, 1e-18))
        targets = np.array([(1 - prob) / 2, (1 + prob) / 2])
        x = np.linspace(float((m - 6 * sd).min()), float((m + 6 * sd).max()), 64)
        brackets = []
        cdf = w @ ndtr((x[None, :] - m[:, None]) / sd[:, None])
        for tg in targets:
            i = int(np.searchsorted(cdf, tg))
            brackets.append((x[max(i - 1, 0)], x[min(i, 63)]))
        for _ in range(2):
            xs = np.concatenate([np.linspace(lo, hi, 32) for lo, hi in brackets])
            cdf = w @ ndtr((xs[None, :] - m[:, None]) / sd[:, None])
            new = []
            for r, tg in enumerate(targets):
                xr_, cr = xs[32 * r:32 * (r + 1)], cdf[32 * r:32 * (r + 1)]
                i = int(np.searchsorted(cr, tg))
                new.append((xr_[max(i - 1, 0)], xr_[min(i, 31)]))
            brackets = new
        return mean, 0.5 * sum(brackets[0]), 0.5 * sum(brackets[1]), sd_tot


def _replay_moments(bank: IRTBank, logs: xr.DataArray, *, budget: int, criterion: str, n_runs: int,
                    n_draws: int, n_grid: int, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """:func:`adaptive`'s selection replayed on complete logs: mean and sd of the realised score per step.

    The same choices as ``adaptive(bank, logs, budget=budget * n_runs, ...)``
    without the quantiles and the final scoring (what
    :func:`calibrate_misfit` needs, at a fraction of the cost).
    """
    replay = _Replay(logs, bank)
    post = _Posterior(bank, n_draws, n_grid, gen, n_runs)
    asked = np.array([replay.available(t) == 0 for t in bank.tasks])
    known = 0.0
    means, sds = [], []
    while len(means) < budget and not asked.all():
        crit = post.criterion(criterion)
        crit[asked] = -np.inf
        j = int(np.argmax(crit))
        asked[j] = True
        vals = []
        for _ in range(n_runs):
            if replay.available(bank.tasks[j]) == 0:
                break
            v = replay(str(bank.tasks[j]))
            if np.isfinite(v):
                vals.append(v)
        if not vals:
            continue
        post.observe(j, int(sum(vals)), len(vals))
        known += float(np.mean(vals))
        m, sd = post.moments(known)
        means.append(m)
        sds.append(sd)
    return np.array(means), np.array(sds)


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
        The calibrated bank.
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
    prob : float
        Level of the intervals.
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
    rng : None, int or numpy.random.Generator

    Returns
    -------
    AdaptiveResult

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
    bank = _check_bank(bank)
    budget = check_int(budget, "budget", min=1)
    prob = check_prob(prob)
    check_choice(criterion, "criterion", ["variance", "fisher"])
    n_runs = check_int(n_runs, "n_runs", min=1)
    n_draws = check_int(n_draws, "n_draws", min=1)
    n_grid = check_int(n_grid, "n_grid", min=11)
    min_tasks = check_int(min_tasks, "min_tasks", min=1)
    if width is not None and not (isinstance(width, (int, float)) and 0 < width <= 1):
        raise ValueError(f"`width` must be a number with 0 < width <= 1 (score units); got {width!r}")
    if misfit is not None:
        _check_misfit(misfit, bank, criterion, n_runs)
    gen = as_rng(rng)
    replay = None
    if isinstance(run, (xr.DataArray, xr.Dataset)):
        replay = _Replay(run, bank)
        call: Callable[[str], float] = replay
    elif callable(run):
        call = run
    else:
        raise TypeError(f"`run` must be a callable task -> score or an agent's logs; got {type(run).__name__}")
    start_idx = bank._index(start, name="start") if start is not None else np.array([], np.intp)
    t0 = time.perf_counter()
    post = _Posterior(bank, n_draws, n_grid, gen, n_runs)
    T = bank.n_tasks
    tasks = bank.tasks
    asked = np.zeros(T, bool)
    if replay is not None:
        asked |= np.array([replay.available(t) == 0 for t in tasks])
    n_tot = np.zeros(T, np.int64)
    y_tot = np.zeros(T, np.int64)
    order: list[str] = []
    runs: list[int] = []
    succ: list[int] = []
    trace: list[tuple[float, float, float]] = []
    spent = 0
    n_failed = 0
    reason = "exhausted"
    queue = list(start_idx)
    while True:
        if spent >= budget:
            reason = "budget"
            break
        if queue:
            j = int(queue.pop(0))
            if asked[j]:
                continue
        else:
            if asked.all():
                reason = "exhausted"
                break
            crit = post.criterion(criterion)
            crit[asked] = -np.inf
            j = int(np.argmax(crit))
        asked[j] = True
        k = n = 0
        for _ in range(min(n_runs, budget - spent)):
            if replay is not None and replay.available(tasks[j]) == 0:
                break
            s = call(str(tasks[j]))
            spent += 1
            if s is None or (isinstance(s, float) and np.isnan(s)):
                n_failed += 1
                continue
            s = float(s)
            if s not in (0.0, 1.0):
                raise HierbenchError(
                    f"`run` must return a binary score (0 or 1, NaN for a failed run); got {s!r} "
                    f"for task {tasks[j]!r}"
                )
            k += int(s)
            n += 1
        if n == 0:
            continue
        post.observe(j, k, n)
        n_tot[j] += n
        y_tot[j] += k
        post.known = float((y_tot[n_tot > 0] / n_tot[n_tot > 0]).sum())
        order.append(str(tasks[j]))
        runs.append(n)
        succ.append(k)
        tau = misfit.sd_at(len(order)) if misfit is not None else 0.0
        m, lo, hi, sd = post.interval(post.known, prob, tau)
        trace.append((m, lo, hi, sd))
        if width is not None and len(order) >= min_tasks and hi - lo < width:
            reason = "width"
            break
    ran = n_tot > 0
    resp = xr.Dataset(
        {"n_runs": ("task", n_tot[ran]), "n_success": ("task", y_tot[ran].astype(float))},
        coords={"task": tasks[ran]},
    )
    score = irt_score(bank, resp, prob=prob, n_runs=n_runs, rng=gen)
    if misfit is not None:
        known = float((y_tot[ran] / n_tot[ran]).sum())
        score = _add_misfit(score, misfit.sd_at(len(order)), known, int((~ran).sum()), T, prob, gen)
    step = np.arange(len(order))
    tr = np.array(trace).reshape(-1, 4)
    trace_ds = xr.Dataset(
        {
            "estimate": ("step", tr[:, 0]),
            "lower": ("step", tr[:, 1]),
            "upper": ("step", tr[:, 2]),
            "sd": ("step", tr[:, 3]),
            "task": ("step", np.array(order, dtype=object)),
        },
        coords={"step": step},
        attrs={"ci_prob": prob, "n_failed_runs": n_failed, "n_draws": min(n_draws, bank.n_samples), "n_grid": n_grid,
               "misfit_sd": misfit.sd_at(len(order)) if misfit is not None and order else 0.0},
    )
    return AdaptiveResult(
        estimate=score.estimate,
        ci=score.ci,
        score=score,
        tasks=xr.DataArray(np.array(order, dtype=object), dims="step", coords={"step": step}, name="tasks"),
        n_runs=xr.DataArray(np.array(runs, np.int64), dims="step", coords={"step": step}, name="n_runs"),
        n_success=xr.DataArray(np.array(succ, np.int64), dims="step", coords={"step": step}, name="n_success"),
        trace=trace_ds,
        stop_reason=reason,
        criterion=criterion,
        seconds=time.perf_counter() - t0,
    )


# --------------------------------------------------------------------------- model misfit


@dataclass(frozen=True, repr=False)
class MisfitCalibration(Result):
    """The model-misfit sd of adaptive scoring, measured by replay on calibration agents.

    ``estimate`` (dim ``n_tasks``, 1..budget): the misfit sd ``tau(n)`` of
    the realised full-benchmark score (score units) after ``n`` adaptively
    chosen tasks; ``ci`` its percentile bootstrap interval over agents.
    ``error`` and ``model_sd`` (``agent``, ``n_tasks``): each replayed
    agent's prediction error (predicted minus actual) and the model's
    predictive sd. ``raw`` the unsmoothed moment estimate of ``tau^2``.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    error: xr.DataArray
    model_sd: xr.DataArray
    raw: xr.DataArray
    criterion: str
    n_runs: int
    n_tasks_bank: int
    folds: int
    seconds: float

    _dataset_exclude: ClassVar[tuple[str, ...]] = ()

    def sd_at(self, n: int) -> float:
        """``tau(n)``: the misfit sd after ``n`` tasks (the last replayed value beyond the budget)."""
        v = self.estimate.values
        return float(v[min(max(int(n), 1), v.size) - 1])


def _check_misfit(misfit: Any, bank: IRTBank, criterion: str, n_runs: int) -> None:
    if not isinstance(misfit, MisfitCalibration):
        raise TypeError(f"`misfit` must be a MisfitCalibration (design.calibrate_misfit); got {type(misfit).__name__}")
    bad = {
        k: (mine, theirs)
        for k, mine, theirs in (
            ("criterion", misfit.criterion, criterion),
            ("n_runs", misfit.n_runs, n_runs),
            ("number of bank tasks", misfit.n_tasks_bank, bank.n_tasks),
        )
        if mine != theirs
    }
    if bad:
        raise HierbenchError(
            "`misfit` was measured for another procedure; (misfit's, this call's) values differ for "
            + ", ".join(f"{k} {v}" for k, v in bad.items())
        )


def _add_misfit(score: IRTScoreResult, tau: float, known: float, n_unrun: int, T: int, prob: float,
                gen: np.random.Generator) -> IRTScoreResult:
    """Convolve the realised-score draws with N(0, tau^2), kept inside the attainable range.

    The estimate (posterior mean under the model) is kept: the misfit is
    taken as mean zero, only the spread of the tasks not run widens.
    """
    if tau <= 0 or n_unrun == 0:
        return score
    draws = score.score_draws.values + tau * gen.standard_normal(score.score_draws.size)
    draws = np.clip(draws, known / T, (known + n_unrun) / T)
    lo, hi = _eti_1d(draws, prob)
    detail = f"{score.ci.attrs.get('ci_detail', '')}; plus model-misfit sd {tau:.4f} (calibrate_misfit)"
    ci = make_interval(lo, hi, prob=prob, kind="eti", detail=detail, warn_zero_width=False)
    return dataclasses.replace(score, ci=ci, score_draws=xr.DataArray(draws, dims="sample", name="score_draws"))


def _eti_1d(x: np.ndarray, prob: float) -> tuple[float, float]:
    q = (1 - prob) / 2
    return float(np.quantile(x, q)), float(np.quantile(x, 1 - q))


def _check_complete(c: xr.Dataset, purpose: str) -> None:
    """Refuse logs with unrun cells, naming the agents and tasks short of complete and the way out."""
    n = c["n_runs"].transpose("agent", "task")
    miss = n == 0
    if not bool(miss.any()):
        return
    agents = np.asarray(c["agent"].values).astype(str)
    tasks = np.asarray(c["task"].values).astype(str)
    per_agent = miss.sum("task").values
    per_task = miss.sum("agent").values
    short = ", ".join(f"{str(a)!r} ({int(k)} unrun)" for a, k in zip(agents, per_agent, strict=True) if k)
    complete = agents[per_agent == 0]
    hint = (
        f"data.sel(agent=[...]) with the {complete.size} complete agents (e.g. {complete.tolist()[:4]}) "
        "makes a complete log"
        if complete.size >= 3
        else f"data.sel(task=...) without the {int((per_task > 0).sum())} tasks some agent did not run "
        f"(e.g. {tasks[per_task > 0][:5].tolist()})"
    )
    raise HierbenchError(
        f"`data` must be complete logs (every agent ran every task at least once) {purpose}; "
        f"{int(miss.sum())} cells were not run, by {short}. Each held-out agent's full score is its mean "
        f"over all tasks, which unrun cells would leave undefined. {hint}"
    )


def _misfit_tau2(err: np.ndarray, sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Moment estimate of tau^2(n), raw and smoothed over n in [n / 1.25, 1.25 n], clipped at 0."""
    with np.errstate(invalid="ignore"):
        raw = np.nanmean(err**2 - sd**2, axis=0)
    n = np.arange(1, raw.size + 1)
    sm = np.empty_like(raw)
    for i, k in enumerate(n):
        win = (n >= k / 1.25) & (n <= k * 1.25) & np.isfinite(raw)
        sm[i] = raw[win].mean() if win.any() else np.nan
    return raw, np.maximum(sm, 0.0)


def calibrate_misfit(
    data: xr.Dataset,
    *,
    budget: int = 100,
    criterion: Literal["variance", "fisher"] = "variance",
    n_runs: int = 1,
    model: Literal["2pl", "1pl"] = "2pl",
    hyper: dict[str, float] | None = None,
    run_icc: float | None = None,
    folds: int = 5,
    prob: float = DEFAULT_PROB,
    n_bank_draws: int = 200,
    n_draws: int = 100,
    n_grid: int = 41,
    n_boot: int = 1000,
    rng: None | int | np.random.Generator = None,
) -> MisfitCalibration:
    """Measure, on the calibration agents, the error adaptive scoring's model interval leaves out.

    Why. The interval of :func:`adaptive` is the posterior of the realised
    score under the 2PL: tasks run count exactly, tasks not run are
    Bernoulli with the agent's predicted probabilities, the ability and the
    item parameters integrated out. Adaptive selection is ignorable for
    that posterior *if the 2PL holds* (the choices depend on observed
    answers only), but it decides where the model has to be right: it asks
    the tasks near the agent's ability and leaves unasked exactly those
    whose prediction rests on the item curves' tails (a weak agent's
    occasional success on hard tasks, a strong agent's failures on easy
    ones). A random subset puts the agent's idiosyncrasies into the data
    and the ability absorbs them; an adaptive one does not. So the misfit
    concentrated on the unasked tasks is a variance the posterior does not
    have, and only data on other agents can measure it.

    How. Cross-fitting over agents: the agents are split into ``folds``;
    for each, a bank is calibrated on the other agents
    (:func:`hierbench.freq.calibrate_irt` at the hyperparameters ``hyper``,
    one MAP fit) and every agent of the fold is replayed through
    :func:`adaptive` with the same criterion, recording after each of
    ``n = 1..budget`` tasks its prediction error ``e(n)`` (predicted minus
    actual realised score) and the model's predictive sd ``s(n)``. The
    misfit variance is the method-of-moments excess
    ``tau^2(n) = mean over agents of (e^2 - s^2)``, averaged over a window
    ``n / 1.25 .. 1.25 n`` and clipped at 0: zero when the model's interval
    already accounts for the errors. It is added to the predictive
    variance of the unasked tasks (``adaptive(..., misfit=...)``). The
    held-out banks are calibrated on fewer agents than the final one, so
    their item uncertainty is a little larger; it is part of ``s^2`` and
    does not inflate ``tau``.

    Parameters
    ----------
    data : xarray.Dataset
        The calibration agents' complete logs: binary ``score`` over
        (agent, task, run), every agent ran every task.
    budget : int
        Tasks per replay (the largest adaptive budget to be used).
    criterion, n_runs : as in :func:`adaptive`
    model : {"2pl", "1pl"}
    hyper : dict, optional
        The empirical-Bayes hyperparameters of the main calibration
        (``calibrate_irt(data).hyper``); estimated on ``data`` when omitted.
    run_icc : float, optional
        The correlation of a cell's runs (``calibrate_irt(data).info["run_icc"]``);
        estimated on ``data`` when omitted (0 with one run per cell).
    folds : int
        Cross-fitting folds (at most the number of agents).
    prob : float
        Level of the bootstrap interval of ``tau``.
    n_bank_draws, n_draws, n_grid : int
        Laplace draws per held-out bank, and the draws and ability grid
        points :func:`adaptive` uses (smaller than its defaults: the replays
        measure an error, they do not report an interval).
    n_boot : int
        Bootstrap resamples of the agents for the interval of ``tau``.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    MisfitCalibration

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from scipy.special import expit
    >>> g = np.random.default_rng(0)
    >>> th, a, d = g.normal(size=12), np.exp(g.normal(0.3, 0.3, 30)), g.normal(0, 1.5, 30)
    >>> y = (g.random((12, 30)) < expit(th[:, None] * a + d)).astype(float)
    >>> data = xr.Dataset({"score": (("agent", "task", "run"), y[:, :, None])},
    ...                   coords={"agent": [f"m{i}" for i in range(12)], "task": [f"t{j}" for j in range(30)]})
    >>> mis = calibrate_misfit(data, budget=8, folds=3, n_bank_draws=50, n_draws=20, rng=0)
    >>> mis.estimate.sizes["n_tasks"], mis.error.sizes["agent"]
    (8, 12)
    """
    from ..freq import calibrate_irt as _calibrate

    budget = check_int(budget, "budget", min=1)
    check_choice(criterion, "criterion", ["variance", "fisher"])
    n_runs = check_int(n_runs, "n_runs", min=1)
    prob = check_prob(prob)
    n_boot = check_int(n_boot, "n_boot", min=1)
    if not isinstance(data, xr.Dataset) or "score" not in data:
        raise HierbenchError("`data` must be an eval Dataset with a binary `score` over (agent, task, run)")
    c = counts(data, purpose="misfit calibration")
    _check_complete(c, "to replay")
    agents = np.asarray(c["agent"].values).astype(str)
    M = agents.size
    if M < 3:
        raise HierbenchError(f"`data` must hold at least 3 agents to cross-fit a misfit calibration; got {M}")
    folds = check_int(folds, "folds", min=2, max=M)
    gen = as_rng(rng)
    t0 = time.perf_counter()
    if run_icc is None and int(c["n_runs"].max()) == 1:
        run_icc = 0.0  # one run per cell: not identified, and calibrate_irt would say 0
    if hyper is None or run_icc is None:
        with warnings.catch_warnings():  # one Laplace draw: only the hyperparameters are wanted
            warnings.simplefilter("ignore", ZeroWidthIntervalWarning)
            first = _calibrate(c, model=model, hyper=hyper, n_draws=1, run_icc=run_icc, rng=gen)
        hyper, run_icc = first.hyper, first.info["run_icc"]
    score = data["score"]
    if "run" not in score.dims:
        score = score.expand_dims(run=[0], axis=-1)
    rate = (c["n_success"] / c["n_runs"]).transpose("agent", "task").values
    fold_of = gen.permutation(np.arange(M) % folds)
    err = np.full((M, budget), np.nan)
    sds = np.full((M, budget), np.nan)
    T = c.sizes["task"]
    for f in range(folds):
        out = fold_of == f
        bank = _calibrate(c.isel(agent=np.flatnonzero(~out)), model=model, hyper=hyper, run_icc=run_icc,
                          n_draws=n_bank_draws, rng=gen).bank
        for i in np.flatnonzero(out):
            logs = score.isel(agent=i, drop=True).transpose("task", "run")
            mean, sd = _replay_moments(bank, logs, budget=budget, criterion=criterion, n_runs=n_runs,
                                       n_draws=n_draws, n_grid=n_grid, gen=gen)
            actual = float(rate[i].mean())
            err[i, : mean.size] = mean - actual
            sds[i, : mean.size] = sd
    raw, tau2 = _misfit_tau2(err, sds)
    boot = np.empty((n_boot, budget))
    for b in range(n_boot):
        idx = gen.integers(0, M, M)
        boot[b] = np.sqrt(_misfit_tau2(err[idx], sds[idx])[1])
    nt = {"n_tasks": np.arange(1, budget + 1)}
    est = xr.DataArray(np.sqrt(tau2), dims="n_tasks", coords=nt, name="misfit_sd")
    q = (1 - prob) / 2
    ci = make_interval(
        np.nanquantile(boot, q, axis=0), np.nanquantile(boot, 1 - q, axis=0), prob=prob, kind="percentile",
        detail=f"bootstrap over the {M} replayed agents ({n_boot} resamples)", template=est, warn_zero_width=False,
    )
    ac = {"agent": agents, **nt}
    return MisfitCalibration(
        estimate=est,
        ci=ci,
        error=xr.DataArray(err, dims=("agent", "n_tasks"), coords=ac, name="error"),
        model_sd=xr.DataArray(sds, dims=("agent", "n_tasks"), coords=ac, name="model_sd"),
        raw=xr.DataArray(raw, dims="n_tasks", coords=nt, name="misfit_var_raw"),
        criterion=criterion,
        n_runs=n_runs,
        n_tasks_bank=T,
        folds=folds,
        seconds=time.perf_counter() - t0,
    )


# --------------------------------------------------------------------------- leave-one-agent-out replay


def _t_fpc(v: np.ndarray, T: int, prob: float) -> tuple[float, float]:
    """Student t interval for the mean of ``T`` values from ``n`` drawn without replacement, kept in [0, 1]."""
    from scipy.stats import t as student_t

    n = v.size
    if n < 2:
        return 0.0, 1.0
    half = student_t.ppf((1 + prob) / 2, n - 1) * v.std(ddof=1) / np.sqrt(n) * np.sqrt(1 - n / T)
    return max(float(v.mean() - half), 0.0), min(float(v.mean() + half), 1.0)


def loo_study(
    data: xr.Dataset,
    *,
    n_tasks: Sequence[int] = (25, 50, 100),
    selections: Sequence[str] = ("random", "random_mean", "cluster", "information", "adaptive"),
    prob: float = 0.9,
    n_repeat: int = 1,
    agents: Sequence[str] | None = None,
    model: Literal["2pl", "1pl"] = "2pl",
    criterion: Literal["variance", "fisher"] = "variance",
    n_bank_draws: int = 1000,
    misfit: bool = True,
    run_icc: float | None = None,
    rng: None | int | np.random.Generator = None,
) -> xr.Dataset:
    """Leave one agent out: calibrate on the others, score it from a few tasks, compare with its full score.

    For each held-out agent, the bank is calibrated on the other agents
    (:func:`hierbench.freq.calibrate_irt`: MAP with a Laplace bank), and the
    held-out agent's full-benchmark score (its success rate over every task
    it ran: the truth here) is predicted from ``n`` of its tasks chosen by
    each selection, with :func:`hierbench.freq.irt_score` (realised target).

    Parameters
    ----------
    data : xarray.Dataset
        Complete logs (every agent ran every task at least once; binary
        scores). Repeated runs, also ragged ones, are used: the full score
        is the mean over tasks of each cell's success rate.
    n_tasks : sequence of int
        Subset sizes to evaluate.
    selections : sequence of {"random", "random_mean", "cluster", "information", "adaptive"}
        Random subsets (nested in size) scored by the IRT model; the same
        subsets scored by their plain mean with the exact hypergeometric
        interval for the mean over all tasks (``"random_mean"``: what a
        user computes without a model; with repeated runs, the mean of the
        tasks' success rates with a Student t interval and the
        finite-population correction); the two anchor
        sets of :func:`anchors` (one per size); and :func:`adaptive` (its
        first ``n`` tasks). With repeated runs every chosen task is run as
        many times as the logs allow (the most runs of any cell), so each
        selection sees the same runs per task as the full score it predicts.
    prob : float
        Level of the intervals whose coverage is measured.
    n_repeat : int
        Independent repetitions, per held-out agent, of every selection
        that involves chance: random subsets, cluster anchors (k-means
        starts) and adaptive paths (the selection thins the bank at random,
        and a near-tie between two tasks then sends the path one way or the
        other, so one path per agent is a noisy measure of the rule's
        error). Information anchors are deterministic and fill
        ``repeat = 0`` only. The misfit calibration depends on the
        calibration agents only and is made once per held-out agent.
    agents : sequence of str, optional
        Agents to hold out (default all).
    model, criterion, n_bank_draws
        Passed on to the calibration and to :func:`adaptive`.
    run_icc : float, optional
        Passed on to :func:`hierbench.freq.calibrate_irt` (by default each
        fold estimates it; 0 treats a cell's runs as independent).
    misfit : bool
        Measure the adaptive rule's misfit variance on the calibration
        agents of each fold (:func:`calibrate_misfit`, at the fold's
        hyperparameters) and add it to the adaptive intervals; the model-only
        intervals are kept as ``model_lower`` / ``model_upper``.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    xarray.Dataset
        Over (``agent``, ``selection``, ``n_tasks``, ``repeat``):
        ``predicted``, ``lower``, ``upper``, ``covered``, ``abs_error``
        (and ``model_lower``, ``model_upper``, ``model_covered``: the
        adaptive intervals without the misfit variance); over ``agent``:
        ``actual`` (the full score) and ``calibration_seconds``; over
        (``agent``, ``n_tasks``): ``misfit_sd``.
        Information anchors fill ``repeat = 0`` only (NaN elsewhere).
    """
    prob = check_prob(prob)
    n_repeat = check_int(n_repeat, "n_repeat", min=1)
    for s in selections:
        check_choice(s, "selections", ["random", "random_mean", "cluster", "information", "adaptive"])
    sizes = sorted({check_int(v, "n_tasks", min=1) for v in n_tasks})
    gen = as_rng(rng)
    c = counts(data, purpose="an IRT study")
    n_all = c["n_runs"].transpose("agent", "task").values
    _check_complete(c, "for a replay study")
    all_agents = np.asarray(c["agent"].values).astype(str)
    hold = all_agents if agents is None else np.asarray(agents).astype(str)
    unknown = sorted(set(hold) - set(all_agents))
    if unknown:
        raise HierbenchError(f"`agents` must be agents of `data`; unknown {unknown[:5]}")
    T = c.sizes["task"]
    if sizes[-1] > T:
        raise HierbenchError(f"`n_tasks` must be at most the number of tasks ({T}); got {sizes[-1]}")
    sel = list(selections)
    # A chosen task is run as often as its logs allow (adaptive replays take up to the most
    # runs of any cell), as the full score, a mean of each cell's success rate, counts it.
    # The tasks not run are predicted as rates over the held-out agent's median runs per cell.
    runs = int(n_all.max())
    shape = (len(hold), len(sel), len(sizes), n_repeat)
    out = {k: np.full(shape, np.nan) for k in ("predicted", "lower", "upper", "model_lower", "model_upper")}
    tau_out = np.zeros((len(hold), len(sizes)))
    n_rep = {s: (1 if s == "information" else n_repeat) for s in sel}
    actual = np.full(len(hold), np.nan)
    cal_s = np.full(len(hold), np.nan)
    rate = (c["n_success"] / c["n_runs"]).transpose("agent", "task")

    def put(i: int, j: int, kk: int, rep: int, vals: tuple[float, ...]) -> None:
        """Store one interval: (predicted, lower, upper[, model_lower, model_upper])."""
        for key, v in zip(("predicted", "lower", "upper", "model_lower", "model_upper"), vals, strict=False):
            out[key][i, j, kk, rep] = v

    for i, ag in enumerate(hold):
        train = c.sel(agent=[a for a in all_agents if a != ag])
        t0 = time.perf_counter()
        cal = calibrate_irt(train, model=model, n_draws=n_bank_draws, run_icc=run_icc, rng=gen)
        cal_s[i] = time.perf_counter() - t0
        bank = cal.bank
        own = c.sel(agent=ag)
        target_runs = max(1, round(float(np.median(own["n_runs"].values))))
        actual[i] = float(rate.sel(agent=ag).mean())
        task_labels = bank.tasks

        def score_on(
            chosen: np.ndarray, _own: xr.Dataset = own, _bank: IRTBank = bank, tau: float = 0.0,
            _runs: int = target_runs,
        ) -> tuple[float, ...]:
            sub = _own.sel(task=chosen)
            r = irt_score(_bank, sub, prob=prob, n_runs=_runs, rng=gen)
            lo, hi = r.ci.values
            if tau > 0:
                known = float((sub["n_success"] / sub["n_runs"]).sum())
                r2 = _add_misfit(r, tau, known, T - len(chosen), T, prob, gen)
                lo2, hi2 = r2.ci.values
                return float(r.estimate), float(lo2), float(hi2), float(lo), float(hi)
            return float(r.estimate), float(lo), float(hi), float(lo), float(hi)

        # the random subsets, shared by "random" and "random_mean" (nested in size)
        perms = [gen.permutation(task_labels) for _ in range(n_repeat)] if {"random", "random_mean"} & set(sel) else []
        for j, s in enumerate(sel):
            if s == "random_mean":
                own_rate = rate.sel(agent=ag)
                for rep, perm in enumerate(perms):
                    for kk, n in enumerate(sizes):
                        v = own_rate.sel(task=perm[:n]).values
                        if runs == 1:  # binary per task: exact hypergeometric interval (design U)
                            k = round(float(v.sum()))
                            lo, hi = (float(b[0]) for b in uniform_bounds(np.array([k]), T, n, prob))
                        else:
                            lo, hi = _t_fpc(v, T, prob)
                        put(i, j, kk, rep, (float(v.mean()), lo, hi))
            elif s == "random":
                for rep, perm in enumerate(perms):
                    for kk, n in enumerate(sizes):
                        put(i, j, kk, rep, score_on(perm[:n])[:3])
            elif s in ("cluster", "information"):
                for rep in range(n_rep[s]):
                    for kk, n in enumerate(sizes):
                        put(i, j, kk, rep, score_on(anchors(bank, n, method=s, rng=gen).tasks)[:3])
            else:
                # the agent's runs per task from its counts (successes first: every run of a
                # chosen task is used, so their order does not matter)
                nr = own["n_runs"].values.astype(int)
                ns = own["n_success"].values.astype(int)
                runs_ix = np.arange(runs)[None, :]
                logs = xr.DataArray(
                    np.where(runs_ix < ns[:, None], 1.0, np.where(runs_ix < nr[:, None], 0.0, np.nan)),
                    dims=("task", "run"),
                    coords={"task": np.asarray(own["task"].values).astype(str)},
                )
                mis = None
                if misfit:
                    mis = calibrate_misfit(
                        data.sel(agent=[a for a in all_agents if a != ag]), budget=sizes[-1], criterion=criterion,
                        n_runs=runs, model=model, hyper=cal.hyper, run_icc=cal.info["run_icc"], rng=gen,
                    )
                for rep in range(n_repeat):
                    res = adaptive(bank, logs, budget=sizes[-1] * runs, criterion=criterion, n_runs=runs, prob=prob,
                                   misfit=mis, rng=gen)
                    order = np.asarray(res.tasks.values).astype(str)
                    for kk, n in enumerate(sizes):
                        tau = mis.sd_at(min(n, order.size)) if mis is not None else 0.0
                        tau_out[i, kk] = tau
                        put(i, j, kk, rep, score_on(order[:n], tau=tau))
    coords = {"agent": hold, "selection": sel, "n_tasks": sizes, "repeat": np.arange(n_repeat)}
    dims = ("agent", "selection", "n_tasks", "repeat")
    ds = xr.Dataset({k: (dims, v) for k, v in out.items()}, coords=coords)
    ds["actual"] = ("agent", actual)
    ds["calibration_seconds"] = ("agent", cal_s)
    ds["abs_error"] = np.abs(ds["predicted"] - ds["actual"])
    ds["covered"] = ((ds["lower"] <= ds["actual"]) & (ds["actual"] <= ds["upper"])).where(ds["predicted"].notnull())
    ds["model_covered"] = ((ds["model_lower"] <= ds["actual"]) & (ds["actual"] <= ds["model_upper"])).where(
        ds["model_lower"].notnull()
    )
    ds["misfit_sd"] = (("agent", "n_tasks"), tau_out)
    # the interval's kind per selection (CI_KINDS keys): posterior equal-tailed from the
    # IRT model, or the design-based exact hypergeometric one of the plain mean
    mean_kind = "exact" if runs == 1 else "t"
    ds["ci_kind"] = ("selection", np.array([mean_kind if s == "random_mean" else "eti" for s in sel], dtype=object))
    mean_detail = (
        "exact hypergeometric interval for the mean over all tasks (design U of hierbench.design)"
        if runs == 1
        else "Student t interval of the tasks' mean success rate with the finite-population correction "
        "(zero width when every chosen task has the same rate)"
    )
    ds.attrs = {
        "ci_prob": prob,
        "ci_detail": f"random_mean: {mean_detail}; the other selections: equal-tailed posterior interval of "
        "the realised score",
        "max_runs_per_cell": runs,
        "model": model,
        "criterion": criterion,
        "calibration": "calibrate_irt (MAP, empirical-Bayes hyperparameters, Laplace bank)",
        "target": "the held-out agent's success rate over all tasks (realised full score)",
    }
    if "random_mean" not in sel:
        ds.attrs["ci_kind"] = "eti"  # one kind for every selection; else see the ci_kind variable
    return ds


def loo_summary(
    study: xr.Dataset,
    *,
    prob: float = 0.95,
    n_boot: int = 2000,
    rng: None | int | np.random.Generator = None,
) -> xr.Dataset:
    """What a :func:`loo_study` says, with its Monte Carlo error: the held-out agents are resampled.

    The agents are the units of a leave-one-agent-out study: an agent's
    repeats share its bank and its misfit, so they are averaged within the
    agent first, and the intervals come from resampling agents (percentile
    bootstrap). Treating the agents x repeats intervals as independent would
    overstate the precision of a coverage measured on 25 agents.

    Parameters
    ----------
    study : xarray.Dataset
        A result of :func:`loo_study`.
    prob : float
        Level of the bootstrap intervals.
    n_boot : int
        Agent resamples.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    xarray.Dataset
        Over (``selection``, ``n_tasks``), in score units: ``mae`` (mean
        absolute error of the predicted full score) and ``mae_se`` (its
        standard error over agents); ``coverage`` and ``coverage_ci`` (of the
        study's intervals, at the study's level ``study_ci_prob``);
        ``width`` (mean interval width); ``n_intervals``. When the study has
        an ``"adaptive"`` selection: ``half_gap`` and ``half_gap_ci``, the
        MAE of adaptive with ``n`` tasks minus the MAE of each selection with
        ``2 n`` tasks (negative: adaptive with half the tasks is more
        accurate; NaN where ``2 n`` was not run).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from scipy.special import expit
    >>> g = np.random.default_rng(0)
    >>> th, a, d = g.normal(size=8), np.exp(g.normal(0.3, 0.3, 40)), g.normal(0, 1.5, 40)
    >>> y = (g.random((8, 40)) < expit(th[:, None] * a + d)).astype(float)
    >>> data = xr.Dataset({"score": (("agent", "task", "run"), y[:, :, None])},
    ...                   coords={"agent": [f"m{i}" for i in range(8)], "task": [f"t{j}" for j in range(40)]})
    >>> st = loo_study(data, agents=["m0", "m1", "m2"], n_tasks=(5, 10), selections=("random", "adaptive"),
    ...                n_bank_draws=50, misfit=False, rng=0)
    >>> s = loo_summary(st, rng=0)
    >>> s.half_gap.sel(selection="random").dims
    ('n_tasks',)
    """
    prob = check_prob(prob)
    n_boot = check_int(n_boot, "n_boot", min=1)
    need = {"abs_error", "covered", "lower", "upper"}
    if not isinstance(study, xr.Dataset) or not need <= set(study.data_vars) or "agent" not in study.dims:
        raise HierbenchError(f"`study` must be a result of loo_study (variables {sorted(need)} over agent, ...)")
    gen = as_rng(rng)
    err = study["abs_error"].mean("repeat").transpose("agent", "selection", "n_tasks")
    cov = study["covered"].mean("repeat").transpose("agent", "selection", "n_tasks")
    M = err.sizes["agent"]
    if M < 2:
        raise HierbenchError(f"`study` must hold at least 2 held-out agents to measure its Monte Carlo error; got {M}")
    idx = gen.integers(0, M, (n_boot, M))
    q = ((1 - prob) / 2, (1 + prob) / 2)
    detail = f"percentile bootstrap over the {M} held-out agents ({n_boot} resamples; repeats averaged within agent)"

    def boot_ci(per_agent: np.ndarray, template: xr.DataArray) -> xr.DataArray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN cells (e.g. a size not run)
            bs = np.nanmean(per_agent[idx], axis=1)
            lo, hi = np.nanquantile(bs, q[0], axis=0), np.nanquantile(bs, q[1], axis=0)
        return make_interval(lo, hi, prob=prob, kind="percentile", detail=detail, template=template,
                             warn_zero_width=False)

    mae = err.mean("agent")
    out = xr.Dataset(
        {
            "mae": mae,
            "mae_se": err.std("agent", ddof=1) / np.sqrt(M),
            "coverage": cov.mean("agent"),
            "width": (study["upper"] - study["lower"]).mean(("agent", "repeat")),
            "n_intervals": study["covered"].notnull().sum(("agent", "repeat")),
        }
    )
    out["coverage_ci"] = boot_ci(cov.values, out["coverage"])
    if "adaptive" in study["selection"].values:
        sizes = [int(v) for v in study["n_tasks"].values]
        ad = err.sel(selection="adaptive").values  # (agent, n_tasks)
        gap = np.full(err.shape, np.nan)  # (agent, selection, n_tasks)
        for k, n in enumerate(sizes):
            if 2 * n in sizes:
                gap[:, :, k] = ad[:, k, None] - err.sel(n_tasks=2 * n).values
        gap_da = xr.DataArray(gap, dims=err.dims, coords=err.coords)
        out["half_gap"] = gap_da.mean("agent")
        out["half_gap_ci"] = boot_ci(gap, out["half_gap"])
    out.attrs = {
        "study_ci_prob": study.attrs.get("ci_prob", np.nan),
        "n_agents": M,
        "n_repeat": int(study.sizes.get("repeat", 1)),
        "units": "score (a fraction of tasks; x 100 for points)",
    }
    return out
