"""Leave one agent out on complete logs: every selection of a few tasks against the agent's full score.

For each held-out agent, a bank is calibrated on the other agents (or
once, on a fixed set of calibration agents: ``calibration``, e.g. the
earlier submissions of a leaderboard, the later ones held out)
(:func:`hierbench.freq.fit_irt_ml`: MAP with a Laplace bank) and the
held-out agent's full-benchmark score (its success rate over every task it
ran: the truth here) is predicted from ``n`` of its tasks chosen by each
selection:

``"random"``
    random subsets (nested in size) scored by the IRT model
    (:func:`hierbench.freq.irt_score`, realised target);
``"random_mean"``
    the same subsets scored by their plain mean, with the exact
    hypergeometric interval for the mean over all tasks (what a user
    computes without a model); with repeated runs, the mean of the tasks'
    success rates with a Student t interval and the finite-population
    correction, guarded where it degenerates (as :func:`assisted_mean`'s:
    a distribution-free bracket where the chosen rates do not vary);
``"cluster"``, ``"information"``
    the two anchor sets of :func:`anchors` (one per size), IRT-scored;
``"adaptive"``
    the first ``n`` tasks of :func:`adaptive`, IRT-scored, its interval
    widened by the misfit variance of :func:`calibrate_misfit` measured on
    the calibration agents (the model-only interval kept beside it);
``"assisted_random"``, ``"assisted_adaptive"``
    design-based: the first ``n`` of ``max(n_tasks)`` tasks drawn uniformly,
    or with probabilities tilted toward the working model's uncertainty
    (:func:`assisted_adaptive`, ``defensive`` uniform weight), scored by Des
    Raj's model-assisted estimator with a Student t interval; the working
    model is chosen per held-out agent by :func:`choose_working_model`
    cross-fitted on the calibration agents (``working``). The model-based
    score of the same tasks and the prequential misfit test are kept beside
    it (``model_predicted``, ``misfit_z``, ``misfit_p``).

A held-out agent whose bank, calibrated on the others, collapsed (every
discrimination ~0, ``IRTBank.slopes_collapsed``, as the 2PL's on 2-5
agents; :func:`hierbench.freq.irt_score`, :func:`adaptive` and
:func:`anchors` refuse such a bank) is counted, not fatal: its IRT-scored
selections (``"random"``, ``"cluster"``, ``"information"``, ``"adaptive"``)
are NaN, its design-based ones run as every agent's, ``bank_collapsed``
records it and one warning names the agents. A working model whose bank
collapsed is not chosen, or, given alone, replaced by its population-average
predictions (as :func:`assisted_adaptive` does). A fixed ``calibration``
whose bank collapsed is refused before any agent is scored when IRT-scored
selections are asked for.

With repeated runs every chosen task is run as many times as the logs allow
(the most runs of any cell), so each selection sees the same runs per task
as the full score it predicts. :func:`loo_summary` turns a study into mean
absolute errors and coverages with their Monte Carlo errors, the held-out
agents being the units.

This module imports numpy, scipy and xarray only.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import Literal

import numpy as np
import xarray as xr
from scipy import stats

from .._base import DEFAULT_PROB
from .._base import HierbenchError
from .._base import UndefinedWarning
from .._base import check_choice
from .._base import check_int
from .._base import check_prob
from .._base import counts
from .._base import make_interval
from .._base import warn_user
from .._docs import fill_doc
from .._parallel import map_seeded
from .._parallel import state_seed
from ..freq import SLOPES_COLLAPSED_WORDS
from ..freq import IRTBank
from ..freq import IRTConvergenceWarning
from ..freq import irt_score
from ._adaptive import ModelMisfitWarning
from ._adaptive import adaptive
from ._anchors import anchors
from ._assisted import _FixedWorking
from ._assisted import bounded
from ._assisted import classical
from ._assisted import des_raj
from ._assisted import misfit_test
from ._assisted import model_score
from ._assisted import srs_exact
from ._bracket import GUARD_DETAIL
from ._bracket import guarded_bounds
from ._estimate import _adaptive_agent
from ._estimate import _Source
from ._estimate import _Spec
from ._kernels import wilson
from ._misfit import _add_misfit
from ._misfit import calibrate_misfit
from ._plan import uniform_bounds
from ._posterior import _check_complete
from ._subset import prior_predictive
from ._working import CANDIDATES
from ._working import WorkingModel
from ._working import _choose_working
from ._working import first_names
from ._working import fit_counted

__all__ = ["loo_study", "loo_summary"]

SELECTIONS = ("random", "random_mean", "cluster", "information", "adaptive", "assisted_random", "assisted_adaptive")
#: the selections scored by the IRT model: NaN for a held-out agent whose bank collapsed
_IRT_SCORED = ("random", "cluster", "information", "adaptive")
_KEYS = ("predicted", "lower", "upper", "model_lower", "model_upper", "model_predicted", "misfit_z", "misfit_p")


def _t_fpc(v: np.ndarray, T: int, prob: float) -> tuple[float, float]:
    """Student t interval for the mean of ``T`` values from ``n`` drawn without replacement, kept in [0, 1]."""
    from scipy.stats import t as student_t

    n = v.size
    if n < 2:
        return 0.0, 1.0
    half = student_t.ppf((1 + prob) / 2, n - 1) * v.std(ddof=1) / np.sqrt(n) * np.sqrt(1 - n / T)
    return max(float(v.mean() - half), 0.0), min(float(v.mean() + half), 1.0)


@fill_doc
def loo_study(
    data: xr.Dataset,
    *,
    n_tasks: Sequence[int] = (25, 50, 100),
    selections: Sequence[str] = SELECTIONS,
    prob: float = 0.9,
    n_repeat: int = 1,
    agents: Sequence[str] | None = None,
    calibration: Sequence[str] | None = None,
    model: Literal["2pl", "1pl"] = "2pl",
    criterion: Literal["variance", "fisher"] = "variance",
    n_bank_draws: int = 1000,
    misfit: bool = True,
    run_icc: float | None = None,
    working: str | Sequence[str] = ("2pl", "1pl", "none"),
    defensive: float = 0.5,
    executor: Any = None,
    progress: bool | None = None,
    rng: None | int | np.random.Generator = None,
) -> xr.Dataset:
    """Leave one agent out: calibrate on the others, score it from a few tasks, compare with its full score.

    The selections, and what a bank whose slopes collapsed does to them, are
    described in this module's docstring. Each held-out
    agent is one piece of work with its own random stream spawned from
    ``rng``, so the study is bit-identical whatever ``executor`` runs it.

    Parameters
    ----------
    data : xarray.Dataset
        Complete logs (every agent ran every task at least once; binary
        scores) of at least 3 agents (4 with ``misfit`` or a working-model
        choice). Repeated runs, also ragged ones, are used: the full score
        is the mean over tasks of each cell's success rate.
    n_tasks : sequence of int
        Subset sizes to evaluate.
    selections : sequence of str
        Any of ``"random"``, ``"random_mean"``, ``"cluster"``,
        ``"information"``, ``"adaptive"``, ``"assisted_random"``,
        ``"assisted_adaptive"`` (all by default).
    prob : float
        Level of the intervals whose coverage is measured: 0.9 by default, the
        level this study has always measured (not ``DEFAULT_PROB``, so studies
        run before and after stay comparable).
    n_repeat : int
        Independent repetitions, per held-out agent, of every selection
        that involves chance (information anchors are deterministic and fill
        ``repeat = 0`` only). The misfit calibration and the working-model
        choice are made once per held-out agent.
    agents : sequence of str, optional
        Agents to hold out (default all; with ``calibration``, all the others).
    calibration : sequence of str, optional
        The agents whose logs calibrate the bank, misfit variance and
        working model, made once for every held-out agent (default: every
        agent but the one held out, calibrated anew for each). A fixed set
        tests the selections out of the calibration population, as a new
        leaderboard meets them: e.g. the submissions before a date, the
        later ones held out (a held-out agent may not be among them).
    model, criterion, n_bank_draws
        Passed on to the calibration and to :func:`adaptive`.
    misfit : bool
        Add the misfit variance of :func:`calibrate_misfit` (cross-fitted
        over ``min(5, calibration agents)`` folds) to the adaptive intervals;
        the model-only ones are kept as ``model_lower`` / ``model_upper``.
    run_icc : float, optional
        Passed on to :func:`hierbench.freq.fit_irt_ml`.
    working : str or sequence of str
        Candidate working models of the assisted selections, chosen per
        held-out agent by :func:`choose_working_model` (one name: no choice).
    defensive : float
        Uniform weight of ``"assisted_adaptive"``'s draw probabilities.
    executor : concurrent.futures.Executor, optional
        Runs the held-out agents (e.g. a process pool); None runs them here.
    progress : bool or None
        A bar over the held-out agents (None: only when a person watches).
    %(rng)s

    Returns
    -------
    xarray.Dataset
        Over (``agent``, ``selection``, ``n_tasks``, ``repeat``):
        ``predicted``, ``lower``, ``upper``, ``covered``, ``abs_error``,
        ``model_lower``, ``model_upper``, ``model_covered``,
        ``model_predicted``, ``misfit_z``, ``misfit_p``; over ``agent``:
        ``actual``, ``calibration_seconds``, ``working_model``,
        ``bank_collapsed`` (its IRT-scored selections NaN) and
        ``working_collapsed`` (its working model's population-average
        predictions used); over (``agent``, ``n_tasks``): ``misfit_sd``
        (NaN where the bank collapsed); over (``agent``, ``selection``): ``ci_kind``.
    """
    ctx = _LooContext.checked(data, n_tasks=n_tasks, selections=selections, prob=prob, n_repeat=n_repeat,
                              agents=agents, calibration=calibration, model=model, criterion=criterion,
                              n_bank_draws=n_bank_draws, misfit=misfit, run_icc=run_icc, working=working,
                              defensive=defensive)
    if ctx.calib is not None:
        ctx = _calibrate_once(ctx, rng)
    parts = map_seeded(_loo_agent, list(ctx.hold), rng=rng, executor=executor, progress=progress,
                       desc="held-out agents", kwargs={"ctx": ctx}, thread_safe=False)
    _warn_collapsed(parts, ctx)
    return _loo_dataset(parts, ctx)


@dataclass(frozen=True)
class _LooContext:
    """A leave-one-agent-out study's checked settings and the counts every held-out agent shares."""

    data: xr.Dataset
    c: xr.Dataset
    all_agents: np.ndarray
    hold: np.ndarray
    sizes: list[int]
    sel: list[str]
    runs: int
    prob: float
    n_repeat: int
    model: str
    criterion: str
    n_bank_draws: int
    misfit: bool
    run_icc: float | None
    working: tuple[str, ...]
    defensive: float
    calib: np.ndarray | None = None
    shared: dict[str, Any] | None = None  # a fixed calibration set's bank, misfit and working model

    @classmethod
    def checked(cls, data: xr.Dataset, *, n_tasks, selections, prob, n_repeat, agents, model, criterion,
                n_bank_draws, misfit, run_icc, working, defensive, calibration=None) -> _LooContext:
        prob = check_prob(prob)
        n_repeat = check_int(n_repeat, "n_repeat", min=1)
        for s in selections:
            check_choice(s, "selections", list(SELECTIONS))
        sizes = sorted({check_int(v, "n_tasks", min=1) for v in n_tasks})
        working = (working,) if isinstance(working, str) else tuple(working)
        for w in working:
            check_choice(w, "working", list(CANDIDATES))
        if not (isinstance(defensive, (int, float)) and 0 < defensive <= 1):
            raise HierbenchError(f"`defensive` must be a number with 0 < defensive <= 1; got {defensive!r}")
        c = counts(data, purpose="an IRT study")
        _check_complete(c, "for a replay study")
        all_agents = np.asarray(c["agent"].values).astype(str)
        calib = _calibration_agents(calibration, all_agents)
        _check_agents(c, selections, misfit, working, calib)
        rest = all_agents if calib is None else np.array([a for a in all_agents if a not in set(calib)])
        hold = rest if agents is None else np.asarray(agents).astype(str)
        unknown = sorted(map(str, set(hold) - set(all_agents)))
        if unknown:
            raise HierbenchError(f"`agents` must be agents of `data`; unknown {unknown[:5]}")
        both = sorted(map(str, set(hold) & set(calib if calib is not None else ())))
        if both:
            raise HierbenchError(
                f"`agents` and `calibration` must not share an agent (a held-out agent calibrating its own bank "
                f"is not held out); both hold {both[:5]}"
            )
        T = c.sizes["task"]
        if sizes[-1] > T:
            raise HierbenchError(f"`n_tasks` must be at most the number of tasks ({T}); got {sizes[-1]}")
        if sizes[0] < 2 and any(s.startswith("assisted") for s in selections):
            raise HierbenchError(f"`n_tasks` must be >= 2 for the assisted selections (a variance); got {sizes[0]}")
        # A chosen task is run as often as its logs allow (adaptive replays take up to the most
        # runs of any cell), as the full score, a mean of each cell's success rate, counts it.
        runs = int(c["n_runs"].max())
        return cls(data, c, all_agents, hold, sizes, list(selections), runs, prob, n_repeat, model, criterion,
                   n_bank_draws, misfit, run_icc, working, float(defensive), calib)

    @property
    def T(self) -> int:
        return int(self.c.sizes["task"])

    def train(self, ag: str) -> list[str]:
        """The agents that calibrate held-out agent ``ag``'s bank: the fixed set, or every other agent."""
        if self.calib is not None:
            return list(self.calib)
        return [a for a in self.all_agents if a != ag]

    def n_rep(self, s: str) -> int:
        """Repeats of a selection: information anchors are deterministic."""
        return 1 if s == "information" else self.n_repeat


def _calibration_agents(calibration: Sequence[str] | None, all_agents: np.ndarray) -> np.ndarray | None:
    """The fixed calibration agents, checked against ``data``'s (None: every agent but the held-out one)."""
    if calibration is None:
        return None
    calib = np.asarray([calibration] if isinstance(calibration, str) else list(calibration)).astype(str)
    unknown = sorted(map(str, set(calib) - set(all_agents)))
    if unknown:
        raise HierbenchError(f"`calibration` must be agents of `data`; unknown {unknown[:5]}")
    if len(set(calib)) < calib.size:
        raise HierbenchError(f"`calibration` must name each agent once; got {[str(a) for a in calib]}")
    return calib


def _check_agents(c: xr.Dataset, selections: Sequence[str], misfit: bool, working: tuple[str, ...],
                  calib: np.ndarray | None = None) -> None:
    """Enough agents for every step, said upfront: 2 to calibrate a bank, 3 to cross-fit on the calibration agents."""
    M = int(c.sizes.get("agent", 1)) if "agent" in c["n_runs"].dims else 1
    need, why = 2, "a bank calibrated on at least 2 agents"
    if misfit and "adaptive" in selections:
        need, why = 3, "the misfit calibration cross-fits on at least 3 calibration agents (or pass misfit=False)"
    if len(working) > 1 and any(s.startswith("assisted") for s in selections):
        need, why = 3, "the working-model choice cross-fits on at least 3 calibration agents (or pass one `working`)"
    if calib is not None:
        if calib.size < need or calib.size >= M:
            raise HierbenchError(
                f"`calibration` must name at least {need} agents ({why}) and leave at least one of the {M} to hold "
                f"out; got {calib.size}"
            )
    elif M < need + 1:
        raise HierbenchError(f"`data` must hold at least {need + 1} agents for loo_study (a held-out agent and {why}); "
                             f"got {M}")


class _Fold:
    """One held-out agent: its bank (calibrated on the others), its counts and how its subsets are scored."""

    def __init__(self, ag: str, ctx: _LooContext, gen: np.random.Generator):
        self.ag, self.ctx, self.gen = ag, ctx, gen
        shared = ctx.shared or {}
        if "cal" in shared:  # a fixed calibration set: calibrated once for every held-out agent
            self.cal, self.seconds = shared["cal"], shared["seconds"]
        else:
            t0 = time.perf_counter()
            self.cal = _calibrate(ctx, ctx.train(ag), gen)
            self.seconds = time.perf_counter() - t0
        self.bank: IRTBank = self.cal.bank
        self.collapsed = self.bank.slopes_collapsed  # its IRT-scored selections stay NaN
        self.own = ctx.c.sel(agent=ag)
        # the tasks not run are predicted as rates over the held-out agent's median runs per cell
        self.target_runs = max(1, round(float(np.median(self.own["n_runs"].values))))
        self.rate = (self.own["n_success"] / self.own["n_runs"])
        self.actual = float(self.rate.mean())
        shape = (len(ctx.sel), len(ctx.sizes), ctx.n_repeat)
        self.out = {k: np.full(shape, np.nan) for k in _KEYS}
        self.tau = np.zeros(len(ctx.sizes))
        self.working: WorkingModel | None = shared.get("working")
        self.working_note = bool(shared.get("working_note"))  # its choice met a collapsed bank
        self.working_collapsed = False  # its bank collapsed: its population-average predictions used
        self.misfit_left_out = 0  # calibration agents its misfit calibration left out (their fold's bank collapsed)

    def put(self, j: int, kk: int, rep: int, vals: tuple[float, ...]) -> None:
        """Store one interval: (predicted, lower, upper[, model_lower, model_upper])."""
        for key, v in zip(_KEYS, vals, strict=False):
            self.out[key][j, kk, rep] = v

    def score_on(self, chosen: np.ndarray, tau: float = 0.0) -> tuple[float, ...]:
        """IRT score from the chosen tasks: estimate, interval (with the misfit sd ``tau``), model-only interval."""
        ctx, gen = self.ctx, self.gen
        sub = self.own.sel(task=chosen)
        r = irt_score(self.bank, sub, prob=ctx.prob, n_runs=self.target_runs, misfit_level=None, rng=gen)
        lo, hi = r.ci.values
        if tau > 0:
            known = float((sub["n_success"] / sub["n_runs"]).sum())
            r2 = _add_misfit(r, tau, known, ctx.T - len(chosen), ctx.T, ctx.prob, gen)
            lo2, hi2 = r2.ci.values
            return float(r.estimate), float(lo2), float(hi2), float(lo), float(hi)
        return float(r.estimate), float(lo), float(hi), float(lo), float(hi)

    def random_mean(self, j: int, perms: list[np.ndarray]) -> None:
        """The plain mean of each random subset, with its design-based interval."""
        ctx = self.ctx
        for rep, perm in enumerate(perms):
            for kk, n in enumerate(ctx.sizes):
                v = self.rate.sel(task=perm[:n]).values
                if ctx.runs == 1:  # binary per task: exact hypergeometric interval (design U)
                    k = round(float(v.sum()))
                    lo, hi = (float(b[0]) for b in uniform_bounds(np.array([k]), ctx.T, n, ctx.prob))
                else:  # rates: the t interval, guarded where it degenerates (as assisted_mean's)
                    lo, hi, _ = guarded_bounds(v, ctx.T, ctx.prob, *_t_fpc(v, ctx.T, ctx.prob))
                self.put(j, kk, rep, (float(v.mean()), lo, hi))

    def agent_logs(self) -> xr.DataArray:
        """The agent's runs per task from its counts (successes first: every run of a chosen task is used)."""
        nr = self.own["n_runs"].values.astype(int)
        ns = self.own["n_success"].values.astype(int)
        runs_ix = np.arange(self.ctx.runs)[None, :]
        return xr.DataArray(
            np.where(runs_ix < ns[:, None], 1.0, np.where(runs_ix < nr[:, None], 0.0, np.nan)),
            dims=("task", "run"),
            coords={"task": np.asarray(self.own["task"].values).astype(str)},
        )

    def adaptive(self, j: int) -> None:
        """Adaptive paths (with the fold's misfit calibration), scored at every size."""
        ctx, gen = self.ctx, self.gen
        logs = self.agent_logs()
        mis = None
        if ctx.misfit:
            mis = ctx.shared["misfit"] if ctx.shared else _misfit(ctx, ctx.train(self.ag), self.cal, gen)
            self.misfit_left_out = int(mis.error.isnull().all("n_tasks").sum())
        for rep in range(ctx.n_repeat):
            with warnings.catch_warnings():  # the study reads the order only: its flags are not the study's
                warnings.simplefilter("ignore", ModelMisfitWarning)
                res = adaptive(self.bank, logs, budget=ctx.sizes[-1] * ctx.runs, criterion=ctx.criterion,
                               n_runs=ctx.runs, prob=ctx.prob, misfit=mis, rng=gen)
            order = np.asarray(res.tasks.values).astype(str)
            for kk, n in enumerate(ctx.sizes):
                tau = mis.sd_at(min(n, order.size)) if mis is not None else 0.0
                self.tau[kk] = tau
                self.put(j, kk, rep, self.score_on(order[:n], tau=tau))


    def assisted(self, j: int, defensive: float) -> None:
        """Design-based estimates from uniform (``defensive`` 1) or tilted draws, with the chosen working model."""
        ctx, gen = self.ctx, self.gen
        if self.working is None:  # chosen once per held-out agent, on its calibration agents only
            self.working, self.working_note = _working(ctx, ctx.train(self.ag), gen)
        bank, fixed = self.working.bank, None
        if bank is not None and bank.slopes_collapsed:  # as assisted_adaptive: the population-average predictions
            bank, fixed, self.working_collapsed = None, prior_predictive(bank)[0], True
        spec = _Spec(bank, fixed, self.working.name, self.bank.tasks, ctx.prob, self.target_runs, 50, 41)
        # the model-based score beside each estimate: 200 of the bank's draws suffice for it (the full
        # bank made these side scores most of the study's time)
        score_bank = bank.thin(200, gen) if bank is not None else None
        nr = self.own["n_runs"].values.astype(np.int64)
        ns = np.round(self.own["n_success"].values).astype(np.int64)
        source = _Source(self.bank.tasks, ctx.runs, k=ns, n=nr)
        for rep in range(ctx.n_repeat):
            out = _adaptive_agent(source, gen, spec=spec, n_tasks=ctx.sizes[-1], defensive=defensive,
                                  score_model=False)  # scored at every size below
            for kk, n in enumerate(ctx.sizes):
                self.put(j, kk, rep, self._assisted_at(out.tab[:n], score_bank, fixed))

    def _assisted_at(self, tab: np.ndarray, bank: IRTBank | None, fixed: np.ndarray | None) -> tuple[float, ...]:
        """Estimate, interval, model-based score and misfit test from the first draws of a path.

        ``fixed``: a collapsed working bank's population-average predictions, scored as
        assisted_adaptive scores fixed predictions (``bank`` None).
        """
        ctx, T = self.ctx, self.ctx.T
        tasks = tab[:, 0].astype(int)
        if bank is None and fixed is None and ctx.runs == 1:  # no model, 0/1 outcomes: assisted_mean's exact one
            z, p = misfit_test(tab)
            return *srs_exact(tab, T, ctx.prob), np.nan, np.nan, np.nan, z, p
        if fixed is not None:
            est, se, df = des_raj(tab, T, floor=True)
            model = model_score(_FixedWorking(fixed, self.target_runs), _Drawn(tab), bank=None, prob=ctx.prob,
                                n_runs=self.target_runs, gen=self.gen)
        elif bank is None:  # no model: the plain mean of uniform draws
            y = np.zeros(T)
            y[tasks] = tab[:, 5]
            est, se, df = classical(y, np.zeros(T), tasks, np.zeros(T, np.intp), np.ones(T), False)
            model = (np.nan,) * 3
        else:
            est, se, df = des_raj(tab, T, floor=True)
            r = irt_score(bank, self.own.sel(task=bank.tasks[tasks]), prob=ctx.prob, n_runs=self.target_runs,
                          misfit_level=None, rng=self.gen)
            model = (float(r.estimate), *map(float, r.ci.values))
        est, lo, hi = bounded(tab, T, est, se, df, ctx.prob)
        if bank is None and fixed is None:  # no model, rates: guarded as assisted_adaptive's plain mean
            lo, hi, _ = guarded_bounds(tab[:, 5], T, ctx.prob, lo, hi)
        z, p = misfit_test(tab)
        return est, lo, hi, model[1], model[2], model[0], z, p


class _Drawn:
    """The first draws of a path, read as ``model_score`` reads a record (its ``table()``)."""

    def __init__(self, tab: np.ndarray):
        self.tab = tab

    def table(self) -> np.ndarray:
        return self.tab


def _calibrate(ctx: _LooContext, train: list[str], gen: np.random.Generator):
    """The bank of the calibration agents ``train`` (fit_irt_ml at the study's settings).

    Its warning that the slopes collapsed is left to the study's one (``_warn_collapsed``).
    """
    return fit_counted(ctx.c.sel(agent=train), model=ctx.model, n_draws=ctx.n_bank_draws, run_icc=ctx.run_icc,
                       rng=gen)


def _misfit(ctx: _LooContext, train: list[str], cal, gen: np.random.Generator):
    """The misfit calibration of adaptive scoring, cross-fitted on the calibration agents ``train``.

    Agents it left out (their fold's bank collapsed: NaN error rows) are said once, by the study.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", r"calibrate_misfit: \d+ of the \d+ agents left out", IRTConvergenceWarning)
        return calibrate_misfit(
            ctx.data.sel(agent=train), budget=ctx.sizes[-1], criterion=ctx.criterion, n_runs=ctx.runs,
            model=ctx.model, hyper=cal.hyper, run_icc=cal.info["run_icc"], folds=min(5, len(train)), rng=gen,
        )


def _working(ctx: _LooContext, train: list[str], gen: np.random.Generator) -> tuple[WorkingModel, bool]:
    """The assisted selections' working model, chosen (or the one given) on the calibration agents ``train``.

    Also whether the choice met a collapsed bank (said once, by the study): choose_working_model's
    choice, unwarned, and never refused (a bank that collapsed is replaced by its population-average
    predictions in ``_Fold.assisted``).
    """
    c = ctx.c.sel(agent=train)
    if len(ctx.working) == 1:
        return _forced_working(c, ctx, gen), False
    wm, note = _choose_working(c, candidates=ctx.working, n_tasks=ctx.sizes[-1], defensive=ctx.defensive,
                               folds=min(5, len(train)), n_bank_draws=ctx.n_bank_draws, n_draws=50, n_grid=41,
                               run_icc=ctx.run_icc, rng=gen)
    return wm, bool(note)


def _calibrate_once(ctx: _LooContext, rng: None | int | np.random.Generator) -> _LooContext:
    """A fixed calibration set's bank, misfit calibration and working model, made once for every held-out agent.

    From a stream of their own, apart from the held-out agents' (child ``2**31`` of an int seed's
    :class:`numpy.random.SeedSequence`; a Generator is split once more).
    """
    gen = (np.random.default_rng(state_seed(rng).spawn(1)[0]) if isinstance(rng, np.random.Generator)
           else np.random.default_rng(np.random.SeedSequence(rng, spawn_key=(2**31,))))
    train = list(ctx.calib)
    t0 = time.perf_counter()
    shared: dict[str, Any] = {"cal": _calibrate(ctx, train, gen)}
    shared["seconds"] = time.perf_counter() - t0
    asked = [s for s in ctx.sel if s in _IRT_SCORED]
    if shared["cal"].bank.slopes_collapsed and asked:
        raise HierbenchError(
            f"loo_study: the bank calibrated on the {len(train)} agents of `calibration` collapsed "
            f"({SLOPES_COLLAPSED_WORDS}, so its item curves are flat and no task "
            f"tells one agent's ability from another's), so the IRT-scored `selections` {asked} cannot score any "
            "held-out agent on it. Name more agents in `calibration`"
            + (", pass model='1pl'" if ctx.model == "2pl" else "")
            + ", or leave those selections out (random_mean, assisted_random and assisted_adaptive need no bank)"
        )
    if ctx.misfit and "adaptive" in ctx.sel:
        shared["misfit"] = _misfit(ctx, train, shared["cal"], gen)
    if any(s.startswith("assisted") for s in ctx.sel):
        shared["working"], shared["working_note"] = _working(ctx, train, gen)
    return dataclasses.replace(ctx, shared=shared)


def _forced_working(train: xr.Dataset, ctx: _LooContext, gen: np.random.Generator) -> WorkingModel:
    """The one working model asked for, calibrated on the calibration agents (no choice made)."""
    name = ctx.working[0]
    # a bank that collapsed is replaced by its population-average predictions (_Fold.assisted), said once
    bank = None if name == "none" else fit_counted(train, model=name, n_draws=ctx.n_bank_draws,
                                                   run_icc=ctx.run_icc, rng=gen).bank
    nan = xr.DataArray([np.nan], dims="candidate", coords={"candidate": [name]})
    return WorkingModel(name, bank, nan, nan, f"{name}: given (no choice)")


def _loo_agent(ag: str, gen: np.random.Generator, *, ctx: _LooContext) -> dict[str, Any]:
    """Every selection for one held-out agent: its intervals, misfit sds, actual score and calibration time."""
    fold = _Fold(ag, ctx, gen)
    perms = (
        [gen.permutation(fold.bank.tasks) for _ in range(ctx.n_repeat)]
        if {"random", "random_mean"} & set(ctx.sel) else []
    )
    for j, s in enumerate(ctx.sel):
        if fold.collapsed and s in _IRT_SCORED:
            continue  # NaN: irt_score, adaptive and anchors refuse a bank whose item curves are flat
        if s == "random_mean":
            fold.random_mean(j, perms)
        elif s == "random":
            for rep, perm in enumerate(perms):
                for kk, n in enumerate(ctx.sizes):
                    fold.put(j, kk, rep, fold.score_on(perm[:n])[:3])
        elif s in ("cluster", "information"):
            for rep in range(ctx.n_rep(s)):
                for kk, n in enumerate(ctx.sizes):
                    fold.put(j, kk, rep, fold.score_on(anchors(fold.bank, n, method=s, rng=gen).tasks)[:3])
        elif s == "adaptive":
            fold.adaptive(j)
        else:
            fold.assisted(j, 1.0 if s == "assisted_random" else ctx.defensive)
    if fold.collapsed and "adaptive" in ctx.sel:
        fold.tau[:] = np.nan  # not measured
    return {"out": fold.out, "tau": fold.tau, "actual": fold.actual, "seconds": fold.seconds,
            "working": fold.working.name if fold.working is not None else "", "collapsed": fold.collapsed,
            "working_collapsed": fold.working_collapsed, "working_note": fold.working_note,
            "misfit_left_out": fold.misfit_left_out}


def _loo_dataset(parts: list[dict[str, Any]], ctx: _LooContext) -> xr.Dataset:
    """The study's Dataset from the held-out agents' parts, with coverage, errors and interval kinds."""
    sel = ctx.sel
    coords = {"agent": ctx.hold, "selection": sel, "n_tasks": ctx.sizes, "repeat": np.arange(ctx.n_repeat)}
    dims = ("agent", "selection", "n_tasks", "repeat")
    ds = xr.Dataset({k: (dims, np.stack([p["out"][k] for p in parts])) for k in _KEYS}, coords=coords)
    ds["actual"] = ("agent", np.array([p["actual"] for p in parts]))
    ds["calibration_seconds"] = ("agent", np.array([p["seconds"] for p in parts]))
    ds["abs_error"] = np.abs(ds["predicted"] - ds["actual"])
    ds["covered"] = ((ds["lower"] <= ds["actual"]) & (ds["actual"] <= ds["upper"])).where(ds["predicted"].notnull())
    ds["model_covered"] = ((ds["model_lower"] <= ds["actual"]) & (ds["actual"] <= ds["model_upper"])).where(
        ds["model_lower"].notnull()
    )
    ds["misfit_sd"] = (("agent", "n_tasks"), np.stack([p["tau"] for p in parts]))
    # the interval's kind per agent and selection (CI_KINDS keys): posterior equal-tailed from the IRT
    # model, the design-based exact hypergeometric one of a plain mean of 0/1 outcomes (random_mean, and
    # assisted_* where the agent's working model is "none", as assisted_mean), else Student t
    mean_kind = "exact" if ctx.runs == 1 else "t"
    kinds = [[mean_kind if s == "random_mean" or (s.startswith("assisted") and p["working"] == "none")
              else "t" if s.startswith("assisted") else "eti" for s in sel] for p in parts]  # fmt: skip
    ds["ci_kind"] = (("agent", "selection"), np.array(kinds, dtype=object))
    ds["working_model"] = ("agent", np.array([p["working"] for p in parts], dtype=object))
    ds["bank_collapsed"] = ("agent", np.array([p["collapsed"] for p in parts], dtype=bool))
    ds["working_collapsed"] = ("agent", np.array([p["working_collapsed"] for p in parts], dtype=bool))
    mean_detail = (
        "exact hypergeometric interval for the mean over all tasks (design U of hierbench.design)"
        if ctx.runs == 1
        else "Student t interval of the tasks' mean success rate with the finite-population correction "
        f"(approximate), {GUARD_DETAIL}"
    )
    ds.attrs = {
        "ci_prob": ctx.prob,
        "ci_detail": f"random_mean: {mean_detail}; assisted_*: Des Raj's model-assisted estimator, Student t "
        "interval from its design-based variance pooled with the working model's prediction of it where "
        "larger (the model-based score's equal-tailed interval as model_lower / model_upper), or with the "
        "working model 'none' the plain mean and random_mean's interval; the other selections: equal-tailed "
        "posterior interval of the realised score",
        "working_candidates": ", ".join(ctx.working),
        "defensive": ctx.defensive,
        "max_runs_per_cell": ctx.runs,
        "model": ctx.model,
        "criterion": ctx.criterion,
        "calibration": "fit_irt_ml (MAP, empirical-Bayes hyperparameters, Laplace bank)",
        "calibration_agents": "every agent but the one held out" if ctx.calib is None else ", ".join(ctx.calib),
        "target": "the held-out agent's success rate over all tasks (realised full score)",
    }
    if {k for row in kinds for k in row} == {"eti"}:
        ds.attrs["ci_kind"] = "eti"  # one kind for every selection; else see the ci_kind variable
    return ds


def _warn_collapsed(parts: list[dict[str, Any]], ctx: _LooContext) -> None:
    """One warning for the study: the held-out agents whose bank, or working model, collapsed, and what it did."""
    hold = [str(a) for a in ctx.hold]

    def who(key: str) -> str:
        names = [a for a, p in zip(hold, parts, strict=True) if p[key]]
        return f"{len(names)} of the {len(hold)} held-out agents ({first_names(names)})"

    flat = sum(p["collapsed"] for p in parts)
    said = []
    if flat:
        asked = [s for s in ctx.sel if s in _IRT_SCORED]
        on = "the agents of `calibration`" if ctx.calib is not None else "the agents but the one held out"
        said.append(
            f"the bank calibrated on {on} collapsed for {who('collapsed')} ({SLOPES_COLLAPSED_WORDS}, so the "
            "item curves are flat, and irt_score, adaptive and anchors refuse it; "
            "study['bank_collapsed'])"
            + (f": their {', '.join(asked)} selections are NaN, and loo_summary's figures of those are over the "
               f"other {len(hold) - flat} (its n_agents)" if asked else "")
            + ("; their design-based selections ran as every agent's" if set(ctx.sel) - set(_IRT_SCORED) else ""))
    if any(p["working_collapsed"] for p in parts):
        said.append(f"the working model's bank collapsed for {who('working_collapsed')}: their assisted selections "
                    "used its population-average predictions, fixed, as assisted_adaptive does "
                    "(study['working_collapsed'])")
    if any(p["working_note"] for p in parts):
        said.append(f"the working-model choice met a collapsed bank for {who('working_note')}: a candidate whose bank "
                    "on the calibration agents collapsed was not chosen, and where a bank cross-fitted without a fold "
                    "collapsed its criterion there is that of the population-average predictions")
    if any(p["misfit_left_out"] for p in parts):
        most = max(p["misfit_left_out"] for p in parts)
        said.append(f"the misfit calibration of {who('misfit_left_out')} left out up to {most} calibration agents, "
                    "whose fold's bank collapsed (adaptive refuses such a bank): their adaptive intervals' misfit sd "
                    "is measured on the other calibration agents")
    if said:
        warn_user("loo_study: " + "; ".join(said) + ". For a bank that does not collapse, calibrate on more agents "
                  "(the 2PL's slopes are prior-dominated under about 10)"
                  + (" or pass model='1pl'" if ctx.model == "2pl" else ""), IRTConvergenceWarning)


@fill_doc
def loo_summary(
    study: xr.Dataset,
    *,
    prob: float = DEFAULT_PROB,
    n_boot: int | None = None,
    rng: None | int | np.random.Generator = None,
) -> xr.Dataset:
    """What a :func:`loo_study` says, with its Monte Carlo error: the held-out agents are the units.

    The agents are the units of a leave-one-agent-out study: an agent's
    repeats share its bank and its misfit, so they are averaged within the
    agent first, and the intervals are over agents. Treating the agents x
    repeats intervals as independent would overstate the precision of a
    coverage measured on 25 agents. The intervals are made for few agents:
    a coverage is a proportion, and a percentile bootstrap of one over 8
    agents that all covered is ``[1, 1]``; the Wilson interval is about
    ``[0.68, 1]`` there.

    Parameters
    ----------
    study : xarray.Dataset
        A result of :func:`loo_study`.
    prob : float
        Level of the intervals over agents.
    n_boot, rng : deprecated
        No longer used (the intervals resample nothing); passing them warns,
        and they go in the next release.

    Returns
    -------
    xarray.Dataset
        Over (``selection``, ``n_tasks``), in score units: ``mae`` (mean
        absolute error of the predicted full score) and ``mae_se`` (its
        standard error over agents); ``coverage`` and ``coverage_ci`` (of the
        study's intervals, at the study's level ``study_ci_prob``; the
        interval is Wilson's over the agents, ``ci_kind = "wilson"``, with each
        agent's coverage, averaged over its repeats, counted as its share of a
        success: a mean of 0/1 outcomes varies no more than one of them, so
        the interval is if anything wide); ``width`` (mean interval width);
        ``n_intervals``; ``n_agents``, the held-out agents each figure is
        over (fewer than the study's where a selection is NaN for some, as
        the IRT-scored ones of an agent whose bank collapsed: warned, and
        ``attrs["n_agents"]`` stays the study's). When the study has
        an ``"adaptive"`` selection: ``half_gap`` and ``half_gap_ci``, the
        MAE of adaptive with ``n`` tasks minus the MAE of each selection with
        ``2 n`` tasks (negative: adaptive with half the tasks is more
        accurate; NaN where ``2 n`` was not run), its interval Student t
        over the agents (``ci_kind = "t"``, ``n_agents - 1`` df: a
        percentile bootstrap of a mean over 8 agents covers about 88% at 95%).
        When the study has the plain mean of random subsets
        (``"random_mean"``, the baseline every model-based selection must
        beat): ``baseline_gap`` and ``baseline_gap_ci``, each selection's
        MAE minus the plain mean's at the same ``n`` (negative: better than
        the baseline), Student t over the agents as ``half_gap``; and
        ``baseline_ratio``, the ratio of the two MAEs over the same agents.
        ``attrs["verdict"]``: one sentence naming the selections whose
        ``baseline_gap_ci`` lies above 0 (worse than the baseline, with their
        ``baseline_ratio``) and those whose ``coverage_ci`` lies below the
        study's level, and saying when the baseline's own interval is the
        approximate t one (repeated runs); it shows in the Dataset's repr.

    Examples
    --------
    >>> from hierbench.design import simulate_irt_log
    >>> data, _ = simulate_irt_log(8, 40, rng=0)
    >>> st = loo_study(data, agents=["agent_000", "agent_001", "agent_002"], n_tasks=(5, 10),
    ...                selections=("random", "adaptive"),
    ...                n_bank_draws=50, misfit=False, rng=0)
    >>> s = loo_summary(st)
    >>> s.half_gap.sel(selection="random").dims, s.coverage_ci.attrs["ci_kind"]
    (('n_tasks',), 'wilson')
    """
    prob = check_prob(prob)
    _warn_unused(n_boot, rng)
    need = {"abs_error", "covered", "lower", "upper"}
    if not isinstance(study, xr.Dataset) or not need <= set(study.data_vars) or "agent" not in study.dims:
        raise HierbenchError(f"`study` must be a result of loo_study (variables {sorted(need)} over agent, ...)")
    err = study["abs_error"].mean("repeat").transpose("agent", "selection", "n_tasks")
    cov = study["covered"].mean("repeat").transpose("agent", "selection", "n_tasks")
    M = err.sizes["agent"]
    if M < 2:
        raise HierbenchError(f"`study` must hold at least 2 held-out agents to measure its Monte Carlo error; got {M}")
    out = _summary(study, err, cov, prob)
    out.attrs = {
        "study_ci_prob": study.attrs.get("ci_prob", np.nan),
        "n_agents": M,
        "n_repeat": int(study.sizes.get("repeat", 1)),
        "units": "score (a fraction of tasks; x 100 for points)",
    }
    out.attrs["verdict"] = _verdict(out, study)
    _warn_fewer(out["n_agents"], study)
    return out


def _cells(mask: xr.DataArray, fig: xr.DataArray, name: str) -> str:
    """``sel (n = 10, 25: name 1.09, 1.31)`` for each selection with a flagged size in ``mask`` (selection, n_tasks)."""
    parts = []
    for s in mask["selection"].values:
        m = mask.sel(selection=s).values.astype(bool)
        if m.any():
            ns = mask["n_tasks"].values[m]
            vals = fig.sel(selection=s).values[m]
            parts.append(f"{s} (n = {', '.join(str(int(n)) for n in ns)}: {name} "
                         f"{', '.join(f'{v:.3g}' for v in vals)})")
    return "; ".join(parts)


def _verdict(out: xr.Dataset, study: xr.Dataset) -> str:
    """:func:`loo_summary`'s sentence: the selections that lose to the baseline or under-cover, beyond Monte Carlo error.

    A loss: ``baseline_gap_ci`` entirely above 0 (MAE above the plain random mean's; its
    ``baseline_ratio`` named). Under-coverage: ``coverage_ci`` entirely below the study's level.
    Where the baseline's own interval is the approximate t one (repeated runs), that is said.
    """
    level = float(study.attrs.get("ci_prob", np.nan))
    said = []
    flagged = xr.zeros_like(out["mae"], dtype=bool)
    if "baseline_gap_ci" in out:
        worse = out["baseline_gap_ci"].sel(ci_bound="lower", drop=True) > 0
        flagged = flagged | worse
        text = _cells(worse, out["baseline_ratio"], "MAE ratio")
        said.append(f"worse than the plain random mean (baseline_gap_ci above 0): {text}" if text
                    else "no selection's error is above the plain random mean's beyond the Monte Carlo error")
        within = _cells((out["baseline_ratio"] > 1) & ~worse, out["baseline_ratio"], "MAE ratio")
        if within:
            said.append(f"MAE above the plain random mean's but within the Monte Carlo error: {within}")
    if np.isfinite(level):
        under = out["coverage_ci"].sel(ci_bound="upper", drop=True) < level
        flagged = flagged | under
        text = _cells(under, out["coverage"], "coverage")
        said.append(f"covering below the study's {100 * level:.4g}% level (coverage_ci below it): {text}" if text
                    else f"no selection's coverage is below the study's {100 * level:.4g}% level beyond the Monte "
                    "Carlo error")
    if "random_mean" in out["selection"].values and "ci_kind" in study:
        kinds = set(np.asarray(study["ci_kind"].sel(selection="random_mean").values).astype(str).tolist())
        if kinds - {"exact"}:
            said.append("the baseline's own interval is approximate (repeated runs: a Student t interval with the "
                        "finite-population correction, guarded where it degenerates), so its coverage is not "
                        "guaranteed and a coverage compared with it is compared with an approximation")
    names = [str(x) for x in out["selection"].values if bool(flagged.sel(selection=x).any())]
    head = f"loo_summary flags {', '.join(names)}" if names else "loo_summary flags no selection"
    return f"{head}: " + "; ".join(said) + "." if said else ""


def _summary(study: xr.Dataset, err: xr.DataArray, cov: xr.DataArray, prob: float) -> xr.Dataset:
    """:func:`loo_summary`'s figures, each over the held-out agents that have it (``n_agents``); gaps paired per agent."""
    n = err.notnull().sum("agent")
    with warnings.catch_warnings():  # a selection with at most one agent: its se is NaN, as said by _warn_fewer
        warnings.filterwarnings("ignore", "Degrees of freedom <= 0", RuntimeWarning)
        mae_se = err.std("agent", ddof=1) / np.sqrt(n.where(n > 1))
    out = xr.Dataset(
        {
            "mae": err.mean("agent"),
            "mae_se": mae_se,
            "coverage": cov.mean("agent"),
            "width": (study["upper"] - study["lower"]).mean(("agent", "repeat")),
            "n_intervals": study["covered"].notnull().sum(("agent", "repeat")),
            "n_agents": n,
        }
    )
    out["coverage_ci"] = _coverage_ci(cov, prob)
    if "adaptive" in study["selection"].values:
        gap = _half_gap(err)
        out["half_gap"] = gap.mean("agent")
        out["half_gap_ci"] = _agents_t_ci(gap, prob)
    if "random_mean" in study["selection"].values:
        base = err.sel(selection="random_mean", drop=True)
        gap = err - base
        out["baseline_gap"] = gap.mean("agent")
        out["baseline_gap_ci"] = _agents_t_ci(gap, prob)
        out["baseline_ratio"] = out["mae"] / base.where(err.notnull()).mean("agent")  # over the same agents
    return out


def _warn_fewer(n: xr.DataArray, study: xr.Dataset) -> None:
    """Say which selections' figures are over fewer held-out agents than the study's, and why where it is known."""
    M = study.sizes["agent"]
    short = [str(s) for s in n["selection"].values if int(n.sel(selection=s).min()) < M]
    if not short:
        return
    why = ""
    if "bank_collapsed" in study and bool(study["bank_collapsed"].any()):
        flat = [str(a) for a in study["agent"].values[study["bank_collapsed"].values.astype(bool)]]
        why = (f"; the banks of {len(flat)} ({first_names(flat)}) collapsed, so their "
               "IRT-scored selections are NaN (study['bank_collapsed'])")
    warn_user(
        f"loo_summary: the figures of {short} are over fewer than the study's {M} held-out agents, as few as "
        f"{int(n.min())} (n_agents){why}. Each is a mean over the agents that have it, so two selections' mae "
        "may be over different agents: compare them by baseline_gap and half_gap, paired per agent",
        UndefinedWarning,
    )


def _warn_unused(n_boot: int | None, rng: object) -> None:
    """:func:`loo_summary`'s ``n_boot`` and ``rng`` resample nothing any more: say so when given."""
    given = [name for name, v in (("n_boot", n_boot), ("rng", rng)) if v is not None]
    if given:
        warn_user(
            f"{' and '.join(f'`{g}`' for g in given)} of loo_summary() no longer do anything (its "
            "intervals, Wilson for coverage and Student t for the half gap, resample nothing) and "
            "will be removed in the next release; leave them out",
            DeprecationWarning,
        )


def _over(n: xr.DataArray, M: int) -> str:
    """Whom an interval over the held-out agents is over (``n`` agents per cell, of ``M``), in words."""
    some = n.values[n.values > 0]
    lo = int(some.min()) if some.size else M
    hi = int(some.max()) if some.size else M
    return f"the {M} held-out agents" if lo == M else (
        f"the held-out agents that have the figure ({lo if lo == hi else f'{lo} to {hi}'} of the {M}: n_agents)")


def _coverage_ci(cov: xr.DataArray, prob: float) -> xr.DataArray:
    """Wilson interval over the agents of the per-agent coverage ``cov`` (agent, ...), NaN agents left out."""
    n = cov.notnull().sum("agent")
    ci = wilson(cov.sum("agent", skipna=True).values, n.values, prob)
    return make_interval(
        *ci, prob=prob, kind="wilson", template=n.astype(float),
        detail=f"Wilson interval over {_over(n, cov.sizes['agent'])}, each agent's coverage (averaged "
        "over its repeats) counted as its share of a success",
    )


def _agents_t_ci(per_agent: xr.DataArray, prob: float) -> xr.DataArray:
    """Student t interval of the mean over agents (``n - 1`` df, NaN agents left out; NaN below 2)."""
    n = per_agent.notnull().sum("agent")
    m = per_agent.mean("agent", skipna=True)
    se = per_agent.std("agent", ddof=1, skipna=True) / np.sqrt(n.where(n > 1))
    q = stats.t.ppf(0.5 + prob / 2, n.where(n > 1) - 1)
    return make_interval(
        m - q * se, m + q * se, prob=prob, kind="t",
        detail=f"Student t interval of the mean over {_over(n, per_agent.sizes['agent'])} "
        "(n_agents - 1 df; repeats averaged within agent)",
    )


def _half_gap(err: xr.DataArray) -> xr.DataArray:
    """Per agent: adaptive's error with ``n`` tasks minus each selection's with ``2 n`` (NaN where not run)."""
    sizes = [int(v) for v in err["n_tasks"].values]
    ad = err.sel(selection="adaptive").values  # (agent, n_tasks)
    gap = np.full(err.shape, np.nan)  # (agent, selection, n_tasks)
    for k, n in enumerate(sizes):
        if 2 * n in sizes:
            gap[:, :, k] = ad[:, k, None] - err.sel(n_tasks=2 * n).values
    return xr.DataArray(gap, dims=err.dims, coords=err.coords)
