"""The model misfit of adaptive scoring, measured on the calibration agents by cross-fitted replay.

:func:`calibrate_misfit` measures the variance the 2PL posterior misses on
the tasks adaptive selection leaves unasked (the tails of the item curves),
for ``adaptive(..., misfit=...)`` to add to its interval.

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
(:func:`hierbench.freq.fit_irt_ml` at the hyperparameters ``hyper``,
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

This module imports numpy, scipy and xarray only.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import dataclass
from typing import Any
from typing import ClassVar
from typing import Literal

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from .._base import DEFAULT_PROB
from .._base import BoundaryWarning
from .._base import HierbenchError
from .._base import Result
from .._base import SmallSampleWarning
from .._base import ZeroWidthIntervalWarning
from .._base import as_rng
from .._base import check_choice
from .._base import check_int
from .._base import check_prob
from .._base import counts
from .._base import make_interval
from .._base import warn_user
from .._docs import fill_doc
from ..freq import SLOPES_COLLAPSED_WORDS
from ..freq import IRTBank
from ..freq import IRTConvergenceWarning
from ..freq import IRTScoreResult
from ._posterior import _check_complete
from ._posterior import _Posterior
from ._posterior import _Replay
from ._working import first_names
from ._working import fit_counted

__all__ = ["MisfitCalibration", "calibrate_misfit"]


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
    _estimate_label: ClassVar[str] = "misfit sd tau(n) of the score after n adaptive tasks"

    def sd_at(self, n: int) -> float:
        """``tau(n)``: the misfit sd after ``n`` tasks (the last replayed value beyond the budget)."""
        v = self.estimate.values
        return float(v[min(max(int(n), 1), v.size) - 1])


def _check_misfit(misfit: Any, bank: IRTBank, criterion: str, n_runs: int, budget: int | None = None) -> None:
    """Refuse a calibration of another procedure; warn when ``budget`` (runs) reaches past the tasks replayed.

    Past its budget ``sd_at`` carries the last replayed ``tau`` over, unmeasured (a calibration at
    25 tasks gave ``tau = 0`` and was used at 100 without a word).
    """
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
    replayed = misfit.estimate.sizes["n_tasks"]
    tasks = None if budget is None else -(-budget // n_runs)  # the most tasks the budget can run
    if tasks is not None and tasks > replayed:
        warn_user(
            f"adaptive: `budget` {budget} (up to {tasks} tasks at n_runs={n_runs}) exceeds the "
            f"{replayed} tasks calibrate_misfit replayed (its `budget`); past {replayed} tasks its misfit sd "
            f"{misfit.sd_at(replayed):.3g} is carried over, not measured. Calibrate with budget >= {tasks}",
            BoundaryWarning,
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



@fill_doc
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

    See the module docstring for why adaptive scoring needs it and how it is
    measured.

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
        (``fit_irt_ml(data).hyper``); estimated on ``data`` when omitted.
    run_icc : float, optional
        The correlation of a cell's runs (``fit_irt_ml(data).info["run_icc"]``);
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
    %(rng)s

    Returns
    -------
    MisfitCalibration
        ``tau(n)`` for ``n`` = 1..``budget`` with its bootstrap interval,
        ready to pass to :func:`adaptive` as ``misfit`` (with the same
        ``criterion`` and ``n_runs``), and the replayed errors behind it.

        A fold whose bank collapsed (``IRTBank.slopes_collapsed``: every
        discrimination ~0, e.g. two agents whose abilities at the mode
        coincide, even at fixed ``hyper``) is left out, counted and warned
        (:class:`hierbench.freq.IRTConvergenceWarning`): :func:`adaptive`
        refuses such a bank, so nothing adaptive does can be replayed on it.
        Its agents' ``error`` and ``model_sd`` are NaN, and ``tau`` and its
        bootstrap are over the other agents (fewer, and the interval's
        ``ci_detail`` says so); their replays are valid ones of adaptive.

    Raises
    ------
    HierbenchError
        When the bank calibrated on all of ``data`` for ``hyper`` (not
        given) collapsed, or every fold's did: there is no adaptive scoring
        to replay.

    Examples
    --------
    >>> from hierbench.design import simulate_irt_log
    >>> data, _ = simulate_irt_log(12, 30, rng=0)
    >>> mis = calibrate_misfit(data, budget=8, folds=3, n_bank_draws=50, n_draws=20, rng=0)
    >>> mis.estimate.sizes["n_tasks"], mis.error.sizes["agent"]
    (8, 12)
    """
    budget = check_int(budget, "budget", min=1)
    check_choice(criterion, "criterion", ["variance", "fisher"])
    n_runs = check_int(n_runs, "n_runs", min=1)
    prob = check_prob(prob)
    n_boot = check_int(n_boot, "n_boot", min=1)
    c, agents = _misfit_counts(data)
    M = agents.size
    folds = check_int(folds, "folds", min=2, max=M)
    gen = as_rng(rng)
    t0 = time.perf_counter()
    hyper, run_icc = _hyperparameters(c, model=model, hyper=hyper, run_icc=run_icc, gen=gen)
    fold_of = gen.permutation(np.arange(M) % folds)
    err, sds, flat = _replay_folds(data, c, fold_of, budget=budget, criterion=criterion, n_runs=n_runs, model=model,
                                   hyper=hyper, run_icc=run_icc, n_bank_draws=n_bank_draws, n_draws=n_draws,
                                   n_grid=n_grid, gen=gen)
    return _misfit_result(err, sds, agents, n_boot=n_boot, prob=prob, gen=gen, criterion=criterion, n_runs=n_runs,
                          n_tasks_bank=c.sizes["task"], folds=folds, t0=t0, kept=~flat)


def _hyperparameters(c: xr.Dataset, *, model: str, hyper: dict[str, float] | None, run_icc: float | None,
                     gen: np.random.Generator) -> tuple[dict[str, float], float]:
    """The folds' fixed hyperparameters and run correlation: as given, else from a fit on every agent.

    That fit's bank collapsing is refused: adaptive would refuse the bank calibrated on these agents.
    """
    if run_icc is None and int(c["n_runs"].max()) == 1:
        run_icc = 0.0  # one run per cell: not identified, and fit_irt_ml would say 0
    if hyper is not None and run_icc is not None:
        return hyper, run_icc
    with warnings.catch_warnings():  # one Laplace draw: only the hyperparameters are wanted
        warnings.simplefilter("ignore", ZeroWidthIntervalWarning)
        first = fit_counted(c, model=model, hyper=hyper, n_draws=1, run_icc=run_icc, rng=gen)
    first.bank.check_usable(f"calibrate_misfit cannot measure adaptive's misfit on these {c.sizes['agent']} agents: "
                            "the bank calibrated on all of them (for the `hyper` and `run_icc` not given) is one "
                            "adaptive refuses, so there is no adaptive scoring to replay")
    return first.hyper, first.info["run_icc"]


def _replay_folds(data: xr.Dataset, c: xr.Dataset, fold_of: np.ndarray, *, budget: int, criterion: str,
                  n_runs: int, model: str, hyper: dict[str, float], run_icc: float, n_bank_draws: int,
                  n_draws: int, n_grid: int, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every agent replayed on the bank calibrated without its fold: errors, model sds, and who was left out.

    A fold whose bank collapsed is not replayed (its agents' rows stay NaN, flagged in the third array).
    """
    M = c.sizes["agent"]
    err = np.full((M, budget), np.nan)
    sds = np.full((M, budget), np.nan)
    flat = np.zeros(M, bool)
    rate = (c["n_success"] / c["n_runs"]).transpose("agent", "task").values
    score = data["score"] if "run" in data["score"].dims else data["score"].expand_dims(run=[0], axis=-1)
    for f in range(int(fold_of.max()) + 1):
        out = fold_of == f
        bank = fit_counted(c.isel(agent=np.flatnonzero(~out)), model=model, hyper=hyper, run_icc=run_icc,
                           n_draws=n_bank_draws, rng=gen).bank
        if bank.slopes_collapsed:  # adaptive refuses it: nothing to replay (counted and said by _misfit_result)
            flat |= out
            continue
        for i in np.flatnonzero(out):
            logs = score.isel(agent=i, drop=True).transpose("task", "run")
            with threadpool_limits(1, user_api="blas"):
                mean, sd = _replay_moments(bank, logs, budget=budget, criterion=criterion, n_runs=n_runs,
                                           n_draws=n_draws, n_grid=n_grid, gen=gen)
            err[i, : mean.size] = mean - float(rate[i].mean())
            sds[i, : mean.size] = sd
    if flat.all():
        raise HierbenchError(
            f"calibrate_misfit cannot measure adaptive's misfit on these {M} agents: the bank calibrated without each "
            f"of the {int(fold_of.max()) + 1} folds collapsed ({SLOPES_COLLAPSED_WORDS}), and adaptive refuses "
            "such a bank, so there is no adaptive scoring to replay. "
            "Calibrate on more agents" + (", with model='1pl'" if model == "2pl" else "")
            + ", or with fewer `folds` (more agents per bank)"
        )
    return err, sds, flat


def _misfit_counts(data: Any) -> tuple[xr.Dataset, np.ndarray]:
    """The calibration agents' counts, complete and at least 3 agents, and their labels."""
    if not isinstance(data, xr.Dataset) or "score" not in data:
        raise HierbenchError("`data` must be an eval Dataset with a binary `score` over (agent, task, run)")
    c = counts(data, purpose="misfit calibration")
    _check_complete(c, "to replay")
    agents = np.asarray(c["agent"].values).astype(str)
    if agents.size < 3:
        raise HierbenchError(f"`data` must hold at least 3 agents to cross-fit a misfit calibration; got {agents.size}")
    return c, agents


#: a bootstrap upper bound of tau at least this share of the model's sd makes a tau of 0 uninformative
_UNDETECTED_SHARE = 0.5


def _undetected(tau: np.ndarray, upper: np.ndarray, sds: np.ndarray, M: int) -> str:
    """Where ``tau`` is 0 but its bootstrap upper bound is large next to the model's sd: what to say (or "").

    The moment estimate clipped at 0 is underpowered with few agents (12 calibration agents on
    SWE-bench: ``tau = 0 [0, 0.13]``), and a ``tau`` of 0 then adds nothing to adaptive's interval.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column (no agent got that far)
        msd = np.nanmedian(sds, axis=0)
    bad = (tau == 0) & np.isfinite(upper) & (upper >= _UNDETECTED_SHARE * msd)
    if not bad.any():
        return ""
    n = np.flatnonzero(bad) + 1
    where = f"n = {n[0]}" if n.size == 1 else f"{n.size} of {tau.size} task counts (n = {n[0]} to {n[-1]})"
    worst = int(np.argmax(np.where(bad, upper / msd, -np.inf)))
    return (f"the misfit sd is 0 at {where}, but its bootstrap upper bound is large next to the model's sd "
            f"(at n = {worst + 1}: up to {upper[worst]:.3g} against {msd[worst]:.3g}): no misfit detected is not no "
            f"misfit, with {M} agents the moment estimate is underpowered and adds nothing to adaptive's interval "
            "there")


def _misfit_result(err: np.ndarray, sds: np.ndarray, agents: np.ndarray, *, n_boot: int, prob: float,
                   gen: np.random.Generator, criterion: str, n_runs: int, n_tasks_bank: int, folds: int,
                   t0: float, kept: np.ndarray | None = None) -> MisfitCalibration:
    """tau(n) from the replays' errors and model sds, with its bootstrap over the agents replayed (``kept``: all)."""
    budget = err.shape[1]
    kept = np.ones(err.shape[0], bool) if kept is None else kept
    e, s = err[kept], sds[kept]
    M = e.shape[0]
    raw, tau2 = _misfit_tau2(e, s)
    boot = np.empty((n_boot, budget))
    for b in range(n_boot):
        idx = gen.integers(0, M, M)
        boot[b] = np.sqrt(_misfit_tau2(e[idx], s[idx])[1])
    nt = {"n_tasks": np.arange(1, budget + 1)}
    est = xr.DataArray(np.sqrt(tau2), dims="n_tasks", coords=nt, name="misfit_sd")
    q = (1 - prob) / 2
    upper = np.nanquantile(boot, 1 - q, axis=0)
    detail = f"bootstrap over the {M} replayed agents ({n_boot} resamples)"
    if not kept.all():
        left = agents[~kept]
        said = (f"{left.size} of the {kept.size} agents left out ({first_names(left)}): the bank calibrated "
                f"without their fold collapsed ({SLOPES_COLLAPSED_WORDS}), which adaptive refuses, so there "
                "is nothing of adaptive's to replay for them; their error and model_sd rows are NaN")
        warn_user(f"calibrate_misfit: {said}. The misfit sd is measured on the other {M} agents; calibrate on more "
                  "agents for every fold's bank to hold", IRTConvergenceWarning)
        detail += f"; {said}"
    note = _undetected(np.sqrt(tau2), upper, s, M)
    if note:
        warn_user(f"calibrate_misfit: {note}", SmallSampleWarning)
        detail += f"; {note}"
    ci = make_interval(
        np.nanquantile(boot, q, axis=0), upper, prob=prob, kind="percentile",
        detail=detail, template=est, warn_zero_width=False,
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
        n_tasks_bank=n_tasks_bank,
        folds=folds,
        seconds=time.perf_counter() - t0,
    )
