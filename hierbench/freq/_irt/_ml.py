"""Item response theory without a sampler: MAP item calibration, a Laplace bank, scoring a new agent.

The model is the two-parameter logistic (2PL) on binomial counts per cell,
in slope-intercept form: agent ``m`` on task ``t`` with ``n_mt`` runs and
``y_mt`` successes,

    logit p_mt = a_t * theta_m + d_t,      y_mt ~ Binomial(n_mt, p_mt),

with ability ``theta_m``, discrimination ``a_t > 0`` and intercept ``d_t``;
the difficulty (the ability at which ``p = 1/2``) is ``b_t = -d_t / a_t``.
The 1PL has one discrimination shared by every task. Repeated runs enter as
binomial counts, never collapsed to a single 0/1.

Identification (the same as :func:`hierbench.bayes.build_irt_2pl`): the
calibration agents' abilities are standardised, mean 0 and (population) sd
1, so a unit of ability is one sd of the calibration agents; ``a_t > 0``
removes the reflection. A new agent's ability has the prior ``N(0, 1)``.

:func:`fit_irt_ml` finds the joint posterior mode by Newton steps
(analytic gradient and Hessian) (priors ``theta ~ N(0, 1)``, ``d_t ~ N(mu_d, sd_d)``,
``log a_t ~ N(mu_la, sd_la)``, the four hyperparameters set by empirical
Bayes: Laplace-EM updates), then draws item parameters from the Laplace
approximation, using the arrow structure of the Hessian (a dense block for
the abilities, a 2 x 2 block per task), so the cost is ``O(M^2 T)`` and
large banks are cheap. Every draw is standardised on its own abilities.
The result holds an :class:`IRTBank`: draws of the item parameters, which is
also what :meth:`IRTBank.from_posterior` makes of a NUTS fit.

:func:`irt_score` scores a new agent on any subset of a bank's tasks: for
each draw of the item parameters, the ability's posterior is computed on a
grid (exact up to the grid) and one ability is drawn from it, so the item
parameters' uncertainty is carried through rather than plugged in. It gives
the predicted full-benchmark score (the tasks run count as run, the others
are predicted), the expected score and pass^k, as draws and intervals.

Person fit. The interval is model-based: it trusts the bank's item curves on
every task not run. :func:`irt_score` tests whether they describe the agent on
its own responses, prequentially: the tasks run are taken in the bank's task
order, and each one's count is predicted from the responses before it (the
ability starting from the bank's population prior N(0, 1) on a grid, the item
parameters averaged over the bank's draws: a mixture over (draw, ability)
pairs, each reweighted by the responses; a cell of several runs is predicted
as a binomial count, beta-binomial with the bank's ``run_icc``). With ``l``
the log predictive probability of the observed count and ``E l``, ``Var l``
its mean and variance under that predictive, ``misfit_z = sum (l - E l) /
sqrt(sum Var l)`` is standard normal under the model (martingale central limit
theorem) and ``misfit_p`` its one-sided p-value (``Phi(misfit_z)`` with a one-term
Edgeworth correction for the skew of ``l``: ``prequential_z``); a low value means the answers are
less likely under the bank than the bank itself expects. A model-free route
is a random subset of tasks with :func:`hierbench.design.assisted_mean`, or
running more tasks. The test sees only what the tasks run can show. On
SWE-bench bash-only (banks on 12 agents, 13 held out, 8 random splits), on
uniform random subsets of 25 tasks the 3% of agents flagged at 0.01 had 90%
intervals covering 0.23 (mean abs error 0.144) against 0.86 (0.056) for the
rest; on 25 to 100 information anchors (tasks of like difficulty) it flagged
0 to 1%, and the unflagged intervals still covered 0.71 to 0.77: within one
band of difficulty a record with a flat curve (Claude 3.7 Sonnet, 10% solved,
scored 0.23 to 0.30 on average) looks like a weaker agent's. A pass is no check of
anchors.

This module imports numpy, scipy and xarray only.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import Literal

import numpy as np
import xarray as xr
from scipy.special import betaln
from scipy.special import expit
from scipy.special import log_expit

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import HierbenchWarning
from ..._base import Result
from ..._base import as_rng
from ..._base import check_choice
from ..._base import check_int
from ..._base import check_prob
from ..._base import counts
from ..._base import interval_label
from ..._base import make_interval
from ..._base import warn_user
from ..._docs import fill_doc
from ..._priors import IRT_HYPERPRIORS
from ._bank import IRTBank
from ._bank import IRTConvergenceWarning
from ._newton import _agent_task_counts
from ._newton import _deflate
from ._newton import _estimate_run_icc
from ._newton import _hessian_blocks
from ._newton import _laplace
from ._newton import _m_step
from ._newton import _map_fit
from ._newton import _split
from ._newton import _standardise
from ._newton import _start
from ._newton import _start_hyper
from ._prequential import ModelMisfitWarning
from ._prequential import beyond_calibration
from ._prequential import prequential_scores
from ._prequential import prequential_z
from ._prequential import warn_misfit

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "IRTBank",
    "IRTCalibrationResult",
    "IRTConvergenceWarning",
    "IRTScoreResult",
    "fit_irt_ml",
    "irt_score",
]


# --------------------------------------------------------------------------- calibration


@dataclass(frozen=True, repr=False)
class IRTCalibrationResult(Result):
    """Penalised (MAP, empirical-Bayes priors) item calibration with a Laplace bank: not maximum likelihood.

    ``estimate`` is the difficulty ``b_t`` at the mode (standardised
    abilities) and ``ci`` its equal-tailed interval over the Laplace draws.
    ``discrimination``, ``intercept`` (task) and ``ability`` (agent) are
    the mode, standardised; ``bank`` holds the draws; ``hyper`` the
    empirical-Bayes hyperparameters; ``info`` the optimiser's record, its
    ``"fit"`` what was fitted (also ``bank.attrs["fit"]``).

    ``info["slopes_collapsed"]`` (also ``bank.attrs``, as 0 / 1): every
    discrimination at the mode is below 1e-3 per calibration-agent sd, as
    the 2PL's were on simulated logs of 2-5 agents; the abilities explain none
    of the scores and the difficulties and their intervals are meaningless
    (warned, and said in the interval's ``ci_detail`` and the repr).
    ``info["outside_own_interval"]``: the tasks whose difficulty at the
    mode lies outside its own interval (not warned alone: the mode of the
    ratio ``-d/a`` can, the more so with few draws).
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    discrimination: xr.DataArray
    intercept: xr.DataArray
    ability: xr.DataArray
    bank: IRTBank
    hyper: dict[str, float]
    info: dict[str, Any]

    _dataset_exclude: ClassVar[tuple[str, ...]] = ()

    def _repr_lines(self) -> list[str]:
        M = self.ability.sizes["agent"]
        fit = self.info.get("fit", FIT_EMPIRICAL_BAYES).split(", not ")[0]  # "penalised (MAP, ...)"
        return [
            f"IRTCalibrationResult: {self.bank.model.upper()} {fit} calibration of {self.estimate.size} tasks "
            f"on {M} agents",
            f"  difficulty b_t per task at the mode (ability units: the calibration agents' sd), "
            f"{interval_label(self.ci)} intervals over {self.bank.n_samples} {self.bank.method} draws:",
            *self._cell_lines(),
            *self._identification_lines(),
        ]

    def _identification_lines(self) -> list[str]:
        """The collapse or the points outside their own interval, said where the numbers are printed."""
        out = self.info.get("outside_own_interval", [])
        if self.info.get("slopes_collapsed"):
            return [f"  NOT IDENTIFIED: the discriminations collapsed to zero (largest "
                    f"{self.info['max_discrimination']:.2g}); these difficulties and intervals are meaningless "
                    f"({len(out)} of {self.estimate.size} outside their own interval)"]
        return [f"  {len(out)} of {self.estimate.size} difficulties at the mode lie outside their own interval "
                "(info['outside_own_interval']): a ratio's mode can, the more so with few draws"] if out else []


_HYPER_NAMES = ("mu_d", "sd_d", "mu_la", "sd_la")

#: what :func:`fit_irt_ml` fits (its ``info["fit"]`` and ``bank.attrs["fit"]``): the ``_ml`` of the name is the
#: package's word for a fit without a sampler; this one is the posterior mode under priors
FIT_EMPIRICAL_BAYES = "penalised (MAP, empirical-Bayes priors), not maximum likelihood"
FIT_FIXED_PRIORS = "penalised (MAP, priors fixed by `hyper`), not maximum likelihood"


@dataclass
class _CalibrationInputs:
    """What :func:`fit_irt_ml` works on, checked: raw counts, labels, run correlation, hyperparameters."""

    n: np.ndarray
    y: np.ndarray
    agents: np.ndarray
    tasks: np.ndarray
    icc: float
    icc_source: str
    hyper: tuple[float, float, float, float]
    fixed: bool


def _check_hyper(hyper: dict[str, float]) -> tuple[float, float, float, float]:
    unknown = sorted(set(hyper) - set(_HYPER_NAMES))
    missing = sorted(set(_HYPER_NAMES) - set(hyper))
    if unknown or missing:
        raise HierbenchError(f"`hyper` must give exactly {list(_HYPER_NAMES)}; unknown {unknown}, missing {missing}")
    if hyper["sd_d"] <= 0 or hyper["sd_la"] <= 0:
        raise HierbenchError(f"`hyper` sds must be positive; got {hyper}")
    return tuple(float(hyper[k]) for k in _HYPER_NAMES)


def _calibration_inputs(data: Any, two_pl: bool, hyper: dict[str, float] | None,
                        run_icc: float | None) -> _CalibrationInputs:
    """Counts with every agent and task run, the run correlation (given or estimated) and the start hyperparameters."""
    n, y, agents, tasks = _agent_task_counts(data)
    M = n.shape[0]
    if M < 2:
        raise HierbenchError(
            f"`data` must hold at least 2 agents to calibrate an IRT bank (abilities are standardised "
            f"to sd 1 over the calibration agents); got {M}"
        )
    never = n.sum(0) == 0
    if never.any():
        raise HierbenchError(
            f"`data`: every task must have been run by at least one agent to be calibrated; "
            f"{int(never.sum())} were not, e.g. {tasks[never][:5].tolist()}"
        )
    if (n.sum(1) == 0).any():
        raise HierbenchError(
            f"`data`: every agent must have at least one run; {agents[n.sum(1) == 0][:5].tolist()} have none"
        )
    if run_icc is not None and not (isinstance(run_icc, (int, float)) and 0 <= run_icc < 1):
        raise HierbenchError(f"`run_icc` must be a number with 0 <= run_icc < 1; got {run_icc!r}")
    if run_icc is None:
        icc = _estimate_run_icc(n, y, two_pl) if n.max() >= 2 else 0.0
        icc_source = "estimated" if n.max() >= 2 else "one run per cell"
    else:
        icc, icc_source = float(run_icc), "given"
    h = _check_hyper(hyper) if hyper is not None else _start_hyper(two_pl)
    return _CalibrationInputs(n, y, agents, tasks, icc, icc_source, h, hyper is not None)


class _EmpiricalBayes:
    """MAP fits at given hyperparameters, each starting from the last mode, and the Laplace-EM map between them."""

    def __init__(self, n: np.ndarray, y: np.ndarray, two_pl: bool):
        self.n, self.y, self.two_pl = n, y, two_pl
        self.M, self.T = n.shape
        self.x = _start(n, y, two_pl)
        self.n_map = 0
        self.last: Any = None

    def fit_at(self, hh: tuple[float, ...]) -> tuple[np.ndarray, dict, str]:
        """The mode at ``hh``, its Laplace pieces and which information they use."""
        n, y, M, T, two_pl = self.n, self.y, self.M, self.T, self.two_pl
        res = _map_fit(n, y, two_pl, hh, self.x)
        self.n_map += 1
        self.last = res
        try:
            lp, kind = _laplace(*_hessian_blocks(res.x, n, y, M, T, two_pl, hh)), "observed"
        except np.linalg.LinAlgError:
            lp, kind = _laplace(*_hessian_blocks(res.x, n, y, M, T, two_pl, hh, observed=False)), "expected"
        self.x = res.x
        return res.x, lp, kind

    def em_map(self, z: np.ndarray) -> np.ndarray:
        """One EM update of the hyperparameters z = (mu_d, log sd_d, mu_la, log sd_la)."""
        M, T, two_pl = self.M, self.T, self.two_pl
        hh = (z[0], np.exp(z[1]), z[2], np.exp(z[3]))
        xx, lp, _ = self.fit_at(hh)
        # The abilities' location and scale are pinned only by their N(0, 1) prior, so
        # the hyperparameters would drift along that ridge; update them in the
        # standardised frame (abilities mean 0, sd 1), where predictions are reported.
        th_, d_, la_ = _split(xx, M, T, two_pl)
        th_, d_, a_ = _standardise(th_, d_, np.exp(la_))
        self.x = np.concatenate([th_, d_, np.log(a_)])
        _, dd, ll = _split(self.x, M, T, two_pl)
        hp = IRT_HYPERPRIORS
        out = list(_m_step(dd, lp["var_i"][:, 0], hh[1], hp["mu_intercept"], hp["sd_intercept"]))
        if two_pl:
            out += list(_m_step(ll, lp["var_i"][:, 1], hh[3], hp["mu_log_discrimination"],
                                hp["sd_log_discrimination"]))
        else:
            out += [0.0, 0.0]  # one shared slope: a fixed weak prior N(0, 1) on its log
        return np.array(out)

    def squarem(self, h: tuple[float, ...], em_iter: int) -> tuple[np.ndarray, int, bool]:
        """Empirical-Bayes hyperparameters by EM with SQUAREM (Varadhan & Roland 2008) acceleration.

        Returns the hyperparameters as ``z``, the EM steps taken and whether
        they settled (every one moving by < 1e-3 on its own scale: an sd
        heading for 0, e.g. equal slopes, moves ever less in sd while its log
        keeps falling). A plain EM step that leaves the finite range ends the
        search at the starting ``z``, not settled, with ``ran_away`` set to
        the EM steps taken (the caller warns).
        """
        z = z0 = np.array([h[0], np.log(h[1]), h[2], np.log(h[3])])
        x0, self.ran_away = self.x, 0
        converged = em_iter == 0
        n_em = 0
        nat = lambda v: np.array([v[0], np.exp(v[1]), v[2], np.exp(v[3])])  # noqa: E731
        while not converged and n_em < em_iter:
            # extrapolate two EM steps, then stabilise with one
            with np.errstate(invalid="ignore", over="ignore"):  # a runaway is caught just below
                z1 = self.em_map(z)
                z2 = self.em_map(z1)
            n_em += 2
            if not (np.all(np.isfinite(z2)) and np.all(np.isfinite(self.x))):
                # a plain EM step left the finite range (a runaway along the 2PL's scale ridge, where
                # the slopes collapse): back to the starting hyperparameters, not settled (the caller warns)
                self.x, self.ran_away = x0, n_em
                return z0, n_em, False
            r = z1 - z
            v = z2 - 2 * z1 + z
            if np.linalg.norm(v) > 0:
                alpha = min(-np.linalg.norm(r) / np.linalg.norm(v), -1.0)
                z_ext = z - 2 * alpha * r + alpha**2 * v
                z_ext[[1, 3]] = np.clip(z_ext[[1, 3]], np.log(1e-3), np.log(20.0))
                x_before = self.x
                z_new = self.em_map(z_ext)
                n_em += 1
                if not (np.all(np.isfinite(z_new)) and np.all(np.isfinite(self.x))):
                    # an extrapolation too far (slopes underflowing to 0): back to the plain EM step,
                    # and to its mode as the next start (a non-finite start would poison every fit)
                    self.x, z_new = x_before, z2
            else:
                z_new = z2
            converged = np.max(np.abs(nat(z_new) - nat(z))) < 1e-3
            z = z_new
        return z, n_em, converged


def _laplace_draws(x: np.ndarray, lap: dict, M: int, T: int, two_pl: bool, n_draws: int,
                   gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Laplace draws (standardised): globals from N(mode, S^-1), tasks from their conditional given the globals."""
    theta, d, la = _split(x, M, T, two_pl)
    G = lap["cov_g"].shape[0]
    zg = gen.standard_normal((n_draws, G))
    g_mode = np.concatenate([theta, la] if not two_pl else [theta])
    g_draw = g_mode + np.linalg.solve(lap["chol_S"].T, zg.T).T
    K = 2 if two_pl else 1
    chol_ii = np.linalg.cholesky(lap["Hii_inv"])  # (T, K, K)
    zi = gen.standard_normal((n_draws, T, K))
    g_dev = g_draw - g_mode
    i_mode = np.stack([d, la], axis=1) if two_pl else d[:, None]
    i_draw = i_mode[None] - np.einsum("tkg,sg->stk", lap["B"], g_dev) + np.einsum("tkl,stl->stk", chol_ii, zi)
    th_draw = g_draw[:, :M]
    d_draw = i_draw[:, :, 0]
    a_draw = np.exp(i_draw[:, :, 1]) if two_pl else np.repeat(np.exp(g_draw[:, M:]), T, axis=1)
    return _standardise(th_draw, d_draw, a_draw)


def _calibration_result(x, draws, inp: _CalibrationInputs, *, model: str, two_pl: bool, prob: float,
                        hess_kind: str, h: tuple, info: dict) -> IRTCalibrationResult:
    """The bank, the difficulties at the mode with their Laplace interval, and the record."""
    M, T = inp.n.shape
    theta, d, la = _split(x, M, T, two_pl)
    a = np.broadcast_to(np.exp(la), (T,)).copy()
    _, d_draw, a_draw = draws
    th_s, d_s, a_s = _standardise(theta[None], d[None], a[None])
    task_c = {"task": inp.tasks}
    bank = IRTBank(
        xr.DataArray(a_draw, dims=("sample", "task"), coords=task_c),
        xr.DataArray(d_draw, dims=("sample", "task"), coords=task_c),
        "laplace",
        model,
        {"n_agents": M, "hessian": hess_kind, "max_runs_per_cell": int(inp.n.max()), "run_icc": inp.icc,
         "fit": FIT_FIXED_PRIORS if inp.fixed else FIT_EMPIRICAL_BAYES,
         # the calibration agents' abilities at the mode: beyond them a new agent's score extrapolates
         "ability_range": [float(th_s.min()), float(th_s.max())]},
    )
    b_mode = xr.DataArray(-d_s[0] / a_s[0], dims="task", coords=task_c, name="difficulty")
    b_draw = -d_draw / a_draw
    q = (1 - prob) / 2
    lo, hi = np.quantile(b_draw, q, axis=0), np.quantile(b_draw, 1 - q, axis=0)
    ident = _identification(b_mode.values, lo, hi, a_s[0], inp.tasks)
    bank.attrs.update(slopes_collapsed=int(ident["slopes_collapsed"]),
                      n_outside_own_interval=len(ident["outside_own_interval"]))
    ci = make_interval(
        lo,
        hi,
        prob=prob,
        kind="eti",
        detail=f"Laplace approximation at the {model.upper()} posterior mode (penalised MAP; {hess_kind} information), "
        f"{d_draw.shape[0]} draws" + ("; NOT IDENTIFIED: the discriminations collapsed to zero, so the difficulties "
                                      "and these intervals are meaningless" if ident["slopes_collapsed"] else ""),
        template=b_mode,
    )
    return IRTCalibrationResult(
        estimate=b_mode,
        ci=ci,
        discrimination=xr.DataArray(a_s[0], dims="task", coords=task_c, name="discrimination"),
        intercept=xr.DataArray(d_s[0], dims="task", coords=task_c, name="intercept"),
        ability=xr.DataArray(th_s[0], dims="agent", coords={"agent": inp.agents}, name="ability"),
        bank=bank,
        hyper=dict(zip(_HYPER_NAMES, h, strict=True)),
        info={**info, **ident, "hessian": hess_kind, "n_agents": M, "n_tasks": T, "run_icc": inp.icc,
              "run_icc_source": inp.icc_source, "fit": FIT_FIXED_PRIORS if inp.fixed else FIT_EMPIRICAL_BAYES},
    )


#: the largest discrimination at the mode (per calibration-agent sd) below which the slopes have collapsed: an
#: agent one sd abler is then predicted a log-odds of success at most 0.001 higher on every task, so the abilities
#: explain none of the scores and each difficulty ``-intercept / discrimination`` is a ratio of noise to ~0. On
#: simulate_eval logs of 2-25 agents x 15 tasks x 3 runs the fits that collapsed had every slope below 1e-6 and
#: the others none below 0.04, so the rule does not sit on a knife edge
_COLLAPSED_SLOPE = 1e-3


def _identification(b_mode: np.ndarray, lo: np.ndarray, hi: np.ndarray, a: np.ndarray,
                    tasks: np.ndarray) -> dict[str, Any]:
    """Whether the slopes collapsed at the mode, and which tasks' difficulty lies outside its own interval."""
    outside = (b_mode < lo) | (b_mode > hi)
    return {"slopes_collapsed": bool(np.max(a) < _COLLAPSED_SLOPE), "max_discrimination": float(np.max(a)),
            "outside_own_interval": np.asarray(tasks)[outside].astype(str).tolist()}


def _warn_identification(cal: IRTCalibrationResult, model: str) -> IRTCalibrationResult:
    """Warn what the calibration's numbers are worth, judged on the result; return it."""
    for msg in _identification_problems(cal, model):
        warn_user("fit_irt_ml: " + msg, IRTConvergenceWarning)
    return cal


def _identification_problems(cal: IRTCalibrationResult, model: str) -> list[str]:
    """The calibration's identification failures in words (empty when none): what happened, what to do."""
    info, M, T = cal.info, cal.info["n_agents"], cal.info["n_tasks"]
    out = info["outside_own_interval"]
    where = (f"{len(out)} of {T} difficulties at the mode lie outside their own {interval_label(cal.ci)} "
             f"interval (e.g. {out[:5]})")
    if info["slopes_collapsed"]:
        big = float(np.max(np.abs(cal.estimate.values)))
        what = ("the 2PL's discriminations collapsed to zero" if model == "2pl"
                else "the 1PL's shared discrimination collapsed to zero")
        fix = ("a task's own discrimination cannot be identified from so few agents' answers: fit model='1pl' "
               "(one discrimination shared by all tasks) or calibrate on more agents (models/irt_2pl/card.md: "
               "under about 10 the slopes are prior-dominated)" if model == "2pl" else
               "the agents' answers do not separate them: calibrate on more agents, whose scores differ")
        return [f"{what} at the mode (largest {info['max_discrimination']:.2g} per calibration-agent sd, below "
                f"{_COLLAPSED_SLOPE:g}): with {M} agents the abilities explain none of the scores, so every "
                f"difficulty (-intercept / discrimination, up to {big:.3g} here) and its interval is meaningless"
                + (f"; {where}" if out else "") + f"; {fix}. Recorded in info['slopes_collapsed'] and "
                "bank.attrs['slopes_collapsed']; the bank is not fit for irt_score: it, adaptive and anchors refuse "
                "it, and assisted_adaptive / assisted_mean use its population-average predictions instead"]
    # a few modes outside their own interval alone are not warned: the mode of the ratio -d/a may fall outside
    # the draws' equal-tailed interval by chance, more so with few draws (2 of 500 SWE-bench tasks at 10 draws
    # on 24 agents); they are recorded in info['outside_own_interval'] and shown in the repr
    return []


def _calibration_problems(h: tuple, n_em: int, converged: bool, last: Any, hess_kind: str, M: int,
                          *, ran_away: int = 0) -> list[str]:
    """What did not settle in a calibration, for its one warning (empty when all did).

    ``ran_away``: the EM steps after which the search left the finite range
    (0: it did not), so that ``h`` are the starting hyperparameters.
    """
    values = ", ".join(f"{k} {v:.3g}" for k, v in zip(_HYPER_NAMES, h, strict=True))
    if ran_away:
        msgs = [f"empirical-Bayes hyperparameters ran out of the finite range after {ran_away} EM steps, "
                f"so the fit uses its starting hyperparameters ({values}): with {M} agents the item "
                "population is not identified; use model='1pl', pass `hyper` fixed, or calibrate on more agents"]
    else:
        msgs = [] if converged else [
            f"empirical-Bayes hyperparameters still moving after {n_em} EM steps (now {values}): with {M} "
            "agents the item population is weakly identified; use model='1pl', pass `hyper` fixed, or "
            "calibrate on more agents"
        ]
    if not last.success:
        msgs.append(f"MAP (Newton): {last.message}")
    if hess_kind == "expected":
        msgs.append("the observed Hessian at the mode was not positive definite; the Laplace "
                    "approximation uses the expected information")
    return msgs


def fit_irt_ml(
    data: xr.Dataset,
    *,
    model: Literal["2pl", "1pl"] = "2pl",
    n_draws: int = 1000,
    prob: float = DEFAULT_PROB,
    hyper: dict[str, float] | None = None,
    em_iter: int = 100,
    run_icc: float | None = None,
    rng: None | int | np.random.Generator = None,
) -> IRTCalibrationResult:
    """Calibrate an item bank by a penalised fit (MAP, empirical-Bayes priors), with a Laplace approximation.

    Not maximum likelihood, despite the name (``_ml`` names the package's
    fits without a sampler): the joint posterior mode under priors on the
    abilities (``N(0, 1)``), intercepts and log discriminations, their means
    and sds set by empirical Bayes (or fixed by ``hyper``). The priors shrink
    the item parameters toward their common means, the more so the fewer the
    agents. Recorded as ``info["fit"]`` and ``bank.attrs["fit"]``.

    Parameters
    ----------
    data : xarray.Dataset
        An eval dataset with binary scores over (agent, task, run), or its
        counts (``n_runs``, ``n_success``). Cells never run are left out.
        At least two agents are needed (the abilities are standardised).
    model : {"2pl", "1pl"}
        One discrimination per task (2PL) or one shared by all (1PL).
    n_draws : int
        Laplace draws of the item parameters kept in the bank.
    prob : float
        Level of the difficulty intervals.
    hyper : dict, optional
        Fix the hyperparameters ``mu_d``, ``sd_d``, ``mu_la``, ``sd_la``
        (intercepts ``N(mu_d, sd_d)``, log discriminations
        ``N(mu_la, sd_la)``); by default they are set by empirical Bayes
        (Laplace-EM: each iteration refits the mode and sets each mean and
        sd to the moments of the modes plus their Laplace variances, with
        SQUAREM acceleration). The 1PL's single log discrimination keeps a
        fixed N(0, 1) prior.
    em_iter : int
        Maximum number of empirical-Bayes iterations.
    run_icc : float, optional
        The correlation of an agent's repeated runs on one task given the
        model's success probability (what the item curves leave out for
        that agent on that task). By default it is estimated from the cells
        with two or more runs (a moment estimate at a pilot fit, refined
        once), and 0 when every cell has one run, where it cannot be
        identified. Each cell's counts are then deflated by its design
        effect ``1 + (n - 1) run_icc`` (Rao and Scott), so ``n`` correlated
        runs weigh as the independent runs they are worth; the bank keeps
        the value (``bank.attrs["run_icc"]``) and :func:`irt_score` uses it
        for the new agent. ``0`` is the plain binomial likelihood.
    rng : None, int or numpy.random.Generator
        For the Laplace draws.

    Returns
    -------
    IRTCalibrationResult

    Warns
    -----
    IRTConvergenceWarning
        When the optimiser or the EM iterations did not converge, the
        observed Hessian was not positive definite (then the expected
        information is used), or the slopes collapsed (its ``info["slopes_collapsed"]``).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> g = np.random.default_rng(0)
    >>> th, b = g.normal(size=30), g.normal(size=40)
    >>> y = g.binomial(4, 1 / (1 + np.exp(-(th[:, None] - b[None, :]))))
    >>> cnt = xr.Dataset({"n_runs": (("agent", "task"), np.full((30, 40), 4)),
    ...                   "n_success": (("agent", "task"), y.astype(float))})
    >>> cal = fit_irt_ml(cnt, n_draws=200, rng=1)
    >>> bool(np.corrcoef(cal.estimate, b)[0, 1] > 0.9)
    True
    """
    check_choice(model, "model", ["2pl", "1pl"])
    n_draws = check_int(n_draws, "n_draws", min=1)
    prob = check_prob(prob)
    em_iter = check_int(em_iter, "em_iter", min=0)
    two_pl = model == "2pl"
    inp = _calibration_inputs(data, two_pl, hyper, run_icc)
    gen = as_rng(rng)
    n, y = _deflate(inp.n, inp.y, inp.icc)
    M, T = n.shape
    t0 = time.perf_counter()
    eb = _EmpiricalBayes(n, y, two_pl)
    z, n_em, converged = eb.squarem(inp.hyper, 0 if inp.fixed else em_iter)
    h = (float(z[0]), float(np.exp(z[1])), float(z[2]), float(np.exp(z[3])))
    x, lap, hess_kind = eb.fit_at(h)
    elapsed = time.perf_counter() - t0
    msgs = _calibration_problems(h, n_em, converged, eb.last, hess_kind, M, ran_away=eb.ran_away)
    if msgs:
        warn_user("fit_irt_ml: " + "; ".join(msgs), IRTConvergenceWarning)
    draws = _laplace_draws(x, lap, M, T, two_pl, n_draws, gen)
    return _warn_identification(_calibration_result(x, draws, inp, model=model, two_pl=two_pl, prob=prob,
        hess_kind=hess_kind, h=h, info={"seconds": elapsed, "em_steps": n_em, "map_fits": eb.n_map}), model)


# --------------------------------------------------------------------------- scoring a new agent


def _agent_responses(bank: IRTBank, responses: Any, name: str = "responses") -> tuple[np.ndarray, np.ndarray]:
    """Per bank task: runs and successes of one agent (0 runs where not run)."""
    if isinstance(responses, xr.Dataset) and "agent" in responses.dims:
        if responses.sizes["agent"] != 1:
            raise HierbenchError(f"`{name}` must hold one agent; got {responses.sizes['agent']}")
        responses = responses.isel(agent=0, drop=True)
    if isinstance(responses, xr.DataArray) and "agent" in responses.dims:
        if responses.sizes["agent"] != 1:
            raise HierbenchError(f"`{name}` must hold one agent; got {responses.sizes['agent']}")
        responses = responses.isel(agent=0, drop=True)
    if isinstance(responses, xr.DataArray) and "run" not in responses.dims:
        responses = responses.expand_dims(run=[0])
    c = counts(responses, name=name, purpose="IRT scoring")
    if c["n_runs"].dims != ("task",):
        raise HierbenchError(f"`{name}` must have the dim 'task' (and 'run'); got {c['n_runs'].dims}")
    idx = bank._index(c["task"].values, name=f"{name} task labels")
    n = np.zeros(bank.n_tasks, np.int64)
    y = np.zeros(bank.n_tasks, np.int64)
    n[idx] = c["n_runs"].values
    y[idx] = np.round(c["n_success"].values).astype(np.int64)
    return n, y


def cell_loglik(eta: np.ndarray, y: Any, n: Any, icc: float = 0.0) -> np.ndarray:
    """Log-likelihood of ``y`` successes in ``n`` runs of a cell whose item curve gives logit ``eta``.

    Binomial when ``icc == 0``; with runs correlated within the cell, the
    beta-binomial with the curve's mean and intraclass correlation ``icc``
    (the cell's own probability is Beta around the curve's). Constants in
    ``y`` are dropped. The one likelihood of a new agent's cells, shared by
    :func:`irt_score` and the adaptive posterior.
    """
    if icc <= 0:
        return y * eta + n * log_expit(-eta)
    c = 1.0 / icc - 1.0
    # both beta parameters from their own tail (1 - expit(eta) loses p near 1), kept off 0,
    # where betaln is infinite and a far grid point would turn the weights to NaN
    pc = np.maximum(expit(eta), 1e-300) * c
    qc = np.maximum(expit(-eta), 1e-300) * c
    return betaln(y + pc, n - y + qc) - betaln(pc, qc)


def _grid_posterior(a, d, n, y, *, n_grid=61, lim=8.0, n_probe=64, icc=0.0):
    """Per draw s: grid points and normalised weights of the ability posterior (prior N(0, 1)).

    Two passes: a coarse grid on [-lim, lim], over a subset of the draws,
    finds where the posterior lives; then a grid of ``n_grid`` points
    covering it (for every draw) carries the weights. With ``icc > 0`` a
    cell's likelihood is the beta-binomial with the curve's mean and that
    correlation of its runs (cells of one run are binomial either way).
    """
    obs = np.flatnonzero(n > 0)
    ao, do, no, yo = a[:, obs], d[:, obs], n[obs], y[obs]

    def logpost(g, rows):  # g: (G,) -> (len(rows), G)
        if not obs.size:
            return np.broadcast_to(-0.5 * g[None, :] ** 2, (len(rows), g.size)).copy()
        eta = ao[rows, None, :] * g[None, :, None] + do[rows, None, :]
        return cell_loglik(eta, yo, no, icc).sum(-1) - 0.5 * g[None, :] ** 2

    S = a.shape[0]
    probe = np.unique(np.linspace(0, S - 1, min(S, n_probe)).astype(int))
    coarse = np.linspace(-lim, lim, 81)
    lp = logpost(coarse, probe)
    lp -= lp.max(1, keepdims=True)
    keep = (lp > -25).any(0)
    i0, i1 = np.flatnonzero(keep)[[0, -1]]
    lo, hi = coarse[max(i0 - 2, 0)], coarse[min(i1 + 2, coarse.size - 1)]
    grid = np.linspace(lo, hi, n_grid)
    lp = logpost(grid, slice(None))
    lp -= lp.max(1, keepdims=True)
    w = np.exp(lp)
    w /= w.sum(1, keepdims=True)
    return grid, w


@dataclass(frozen=True, repr=False)
class IRTScoreResult(Result):
    """A new agent scored on a calibrated bank.

    ``estimate`` is the posterior mean of the target score (``target``) and
    ``ci`` its equal-tailed interval. Draws (dim ``sample``):
    ``score_draws`` (the target), ``expected_score_draws`` (mean over all
    bank tasks of the success probability), ``ability_draws``;
    ``pass_hat_k`` (dim ``k``) and its interval ``pass_hat_k_ci``;
    ``ability`` and ``ability_ci``; ``n_tasks_run``; ``agent``, the
    agent's label when the responses carried one (an ``agent`` dim of size
    one or coord), which indexes :meth:`to_frame`'s row. ``misfit_z`` and
    ``misfit_p``: the prequential person-fit statistic of the responses and
    its one-sided p-value (low: the bank does not describe the agent; NaN
    when not computed), see :func:`irt_score`. ``flags``: why the
    model-based interval is not to be trusted (misfit, or an ability beyond
    the calibration agents'), empty when nothing says so or not checked.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    ability: xr.DataArray
    ability_ci: xr.DataArray
    pass_hat_k: xr.DataArray
    pass_hat_k_ci: xr.DataArray
    n_tasks_run: int
    target: str
    score_draws: xr.DataArray
    expected_score_draws: xr.DataArray
    ability_draws: xr.DataArray
    agent: str | None = None
    misfit_z: float = np.nan
    misfit_p: float = np.nan
    flags: tuple[str, ...] = ()

    _dataset_exclude: ClassVar[tuple[str, ...]] = ("score_draws", "expected_score_draws", "ability_draws")

    def _repr_lines(self) -> list[str]:
        who = "a new agent" if self.agent is None else f"agent {self.agent!r}"
        lines = [
            f"IRTScoreResult: {who} scored on {self.n_tasks_run} bank tasks run; {self.target} "
            f"full-bank score with {interval_label(self.ci)} interval",
            *self._cell_lines(),
        ]
        lo, hi = self.ability_ci.values.tolist()
        lines.append(f"  ability: {float(self.ability):.4g} [{lo:.4g}, {hi:.4g}] (calibration agents' sd)")
        lines.append(f"  prequential misfit z {self.misfit_z:.2f}, one-sided p {self.misfit_p:.2g} (a low p would "
                     "flag misfit; the interval is model-based either way)" if np.isfinite(self.misfit_p)
                     else "  prequential misfit: not computed")
        lines += [f"  not to be trusted: {f}" for f in self.flags]
        return lines

    def to_frame(self) -> pd.DataFrame:
        """One row, indexed by the agent's name (``agent``; None when the responses had none).

        Beside ``Result.to_frame``'s columns (``ability`` with ``ability_lower`` /
        ``ability_upper``): pass^k at each ``k`` (``pass_hat_<k>``, its interval's ends
        ``pass_hat_<k>_lower`` / ``_upper``) and the misfit test (``misfit_z``, ``misfit_p``).
        """
        import pandas as pd

        df = super().to_frame()
        for k in self.pass_hat_k["k"].values.tolist():
            df[f"pass_hat_{k}"] = float(self.pass_hat_k.sel(k=k))
            for end in ("lower", "upper"):
                df[f"pass_hat_{k}_{end}"] = float(self.pass_hat_k_ci.sel(k=k, ci_bound=end))
        df["misfit_z"] = self.misfit_z
        df["misfit_p"] = self.misfit_p
        df.index = pd.Index([self.agent], name="agent")
        return df


def _eti(draws: np.ndarray, prob: float, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    q = (1 - prob) / 2
    return np.quantile(draws, q, axis=axis), np.quantile(draws, 1 - q, axis=axis)


@fill_doc
def irt_score(
    bank: IRTBank,
    responses: xr.Dataset | xr.DataArray,
    *,
    prob: float = DEFAULT_PROB,
    target: Literal["realised", "expected"] = "realised",
    n_runs: int = 1,
    k: Any = (1,),
    n_grid: int = 61,
    misfit_level: float | None = 0.01,
    rng: None | int | np.random.Generator = None,
) -> IRTScoreResult:
    """Ability, predicted full-benchmark score and pass^k of a new agent from any subset of a bank's tasks.

    Parameters
    ----------
    bank : IRTBank
        A calibrated bank (:func:`fit_irt_ml` or
        :meth:`IRTBank.from_posterior`); one whose slopes collapsed
        (``IRTBank.slopes_collapsed``) is refused.
    responses : Dataset or DataArray
        The agent's binary scores over (task, run) (NaN: not run), or its
        counts ``n_runs``, ``n_success`` over task; tasks must be bank
        tasks; bank tasks absent here count as not run. An ``agent`` dim
        of size one is allowed.
    prob : float
        Level of the equal-tailed intervals.
    target : {"realised", "expected"}
        ``"realised"``: the score the agent would get on the whole bank, its
        observed success rate on the tasks run and a predicted
        Binomial(``n_runs``, p) rate on the others (what a full run would
        have shown). ``"expected"``: the mean success probability over all
        bank tasks.
    n_runs : int
        Runs per task of the full benchmark, for the realised target.
    k : int or sequence of int
        pass^k = mean over bank tasks of p_t^k (all k runs succeed).
    n_grid : int
        Grid points for each draw's ability posterior.
    misfit_level : float or None
        Level of the prequential person-fit test (module docstring, "Person fit"): a one-sided p
        below it warns ``ModelMisfitWarning`` (the interval is model-based), except at a census;
        so does an ability beyond the calibration agents' (the bank's ``ability_range``: held
        out on SWE-bench, 90% intervals covered 0.44 to 0.69 there, 0.75 to 0.93 inside); both
        go into ``flags``. None: neither check runs (``misfit_z`` / ``misfit_p`` NaN), for callers
        with their own (the design room's adaptive and assisted evaluations).
    %(rng)s

    When the bank was calibrated on repeated runs, its ``run_icc`` (see
    :func:`fit_irt_ml`) is used here too: the agent's cells are
    beta-binomial around the item curves (:func:`cell_loglik`), the tasks
    not run are predicted as beta-binomial rates, and pass^k is the beta's
    k-th moment. On simulated beta-binomial agents (8 runs, correlation 0.3)
    the 90% interval of the realised score covered 0.896 of 1,000; scored
    as if the runs were independent, 0.652.

    Returns
    -------
    IRTScoreResult
        One ability drawn per item-parameter draw: the item parameters'
        uncertainty is carried through (the new agent's responses update
        its ability, not the bank's item parameters: the bank is frozen).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> g = np.random.default_rng(0)
    >>> a = xr.DataArray(np.exp(g.normal(0, .1, (100, 50))), dims=("sample", "task"))
    >>> d = xr.DataArray(np.tile(g.normal(0, 2, 50), (100, 1)), dims=("sample", "task"))
    >>> bank = IRTBank(a, d)
    >>> resp = xr.DataArray([[1.0], [0.0], [1.0]], dims=("task", "run"),
    ...                     coords={"task": ["0", "1", "2"]})
    >>> r = irt_score(bank, resp, rng=0)
    >>> r.n_tasks_run, bool(0 < float(r.estimate) < 1)
    (3, True)
    """
    bank = _scoring_bank(bank)
    prob = check_prob(prob)
    check_choice(target, "target", ["realised", "expected"])
    n_runs = check_int(n_runs, "n_runs", min=1)
    n_grid = check_int(n_grid, "n_grid", min=11)
    ks = np.atleast_1d(np.asarray(k))
    ks = np.array([check_int(v, "k", min=1) for v in ks.tolist()], dtype=int)
    gen = as_rng(rng)
    if (ks > 1).any() and bank.attrs.get("max_runs_per_cell") == 1:
        warn_user(
            "pass^k for k > 1 assumes a cell's runs are independent given its success probability; "
            "the bank was calibrated on one run per cell, which cannot check that (an agent x task "
            "effect would make pass^k larger)",
            HierbenchWarning,
        )
    misfit_level = None if misfit_level is None else check_prob(misfit_level, "misfit_level")
    n, y = _agent_responses(bank, responses)
    a = bank.discrimination.values
    d = bank.intercept.values
    res = _score_from_counts(a, d, n, y, bank, prob=prob, target=target, n_runs=n_runs, ks=ks,
                             n_grid=n_grid, gen=gen)
    name = _agent_name(responses)
    z, p, flags = _person_fit(bank, n, y, res, misfit_level, name, census=target == "realised")
    return dataclasses.replace(res, agent=name, misfit_z=z, misfit_p=p, flags=flags)


def _scoring_bank(bank: Any) -> IRTBank:
    """The bank, if it is one whose item curves can score an agent (its slopes did not collapse)."""
    if not isinstance(bank, IRTBank):
        raise TypeError(f"`bank` must be an IRTBank; got {type(bank).__name__}")
    bank.check_usable("irt_score cannot score an agent on this bank: the ability's interval would be its N(0, 1) "
                      "prior's, and every task not run predicted alike for every agent")
    return bank


def _person_fit(bank: IRTBank, n: np.ndarray, y: np.ndarray, res: IRTScoreResult, level: float | None,
                name: str | None, census: bool) -> tuple[float, float, tuple[str, ...]]:
    """The prequential person fit ``(z, p)`` (NaN without a ``level``) and the flags on the score, each warned.

    Flags: ``p`` below ``level``, and an ability beyond the calibration agents'
    (``beyond_calibration``). Neither where every bank task was run and ``census``
    (the realised target): the score is then known.
    """
    if level is None:
        return np.nan, np.nan, ()
    a, d = bank.discrimination.values, bank.intercept.values
    z, p = prequential_z(prequential_scores(a, d, n, y, float(bank.attrs.get("run_icc", 0.0))))
    if census and res.n_tasks_run == bank.n_tasks:
        return z, p, ()
    flags = []
    if np.isfinite(p) and p < level:
        warn_misfit(z, p, level, name, interval_label(res.ci), bank.n_tasks - res.n_tasks_run)
        flags.append(f"prequential misfit (one-sided p {p:.2g} < misfit_level {level:g})")
    extrapolated = beyond_calibration(bank.attrs.get("ability_range"), float(res.ability))
    if extrapolated is not None:
        who = "" if name is None else f" (agent {name!r})"
        warn_user(f"irt_score{who}: {extrapolated}", ModelMisfitWarning)
        flags.append(extrapolated)
    return z, p, tuple(flags)


def _agent_name(responses: Any) -> str | None:
    """The agent's label when the responses carry one (an ``agent`` dim of size one or a scalar coord)."""
    if not isinstance(responses, (xr.Dataset, xr.DataArray)) or "agent" not in responses.coords:
        return None
    label = np.asarray(responses["agent"].values).ravel()
    return str(label[0]) if label.size == 1 else None


def _score_from_counts(a, d, n, y, bank, *, prob, target, n_runs, ks, n_grid, gen) -> IRTScoreResult:
    S, T = a.shape
    icc = float(bank.attrs.get("run_icc", 0.0))
    c = 1.0 / icc - 1.0 if icc > 0 else np.inf  # a cell's beta: shapes p c and (1 - p) c
    grid, w = _grid_posterior(a, d, n, y, n_grid=n_grid, icc=icc)
    cdf = np.cumsum(w, 1)
    u = gen.random(S)
    j = np.minimum((cdf < u[:, None]).sum(1), grid.size - 1)
    step = grid[1] - grid[0]
    theta = grid[j] + (gen.random(S) - 0.5) * step
    p = expit(a * theta[:, None] + d)
    expected = p.mean(1)
    run = n > 0
    if target == "realised":
        rate = np.where(run, y / np.maximum(n, 1), 0.0)
        pu = p[:, ~run]
        if icc > 0 and n_runs > 1:  # the cell's own probability varies around the curve's (beta, correlation icc)
            pu = gen.beta(np.maximum(pu * c, 1e-12), np.maximum((1 - pu) * c, 1e-12))
        pred = gen.binomial(n_runs, pu) / n_runs
        score = (rate[run].sum() + pred.sum(1)) / T
    else:
        score = expected
    if icc > 0:  # pass^k = E[p_cell^k], the beta's k-th moment around the curve's p
        pk = np.stack([np.prod([(p * c + i) / (c + i) for i in range(kk)], axis=0).mean(1) for kk in ks], axis=1)
    else:
        pk = np.stack([(p**kk).mean(1) for kk in ks], axis=1)
    est = xr.DataArray(float(score.mean()), name="score")
    lo, hi = _eti(score, prob)
    detail = (
        f"{bank.model.upper()} IRT bank ({bank.method}, {S} item-parameter draws), ability posterior "
        f"on a grid per draw; target {target}"
        + (f"; runs correlated within a cell (beta-binomial cells, run_icc {icc:.3f})" if icc > 0 else "")
    )
    ci = make_interval(lo, hi, prob=prob, kind="eti", detail=detail, warn_zero_width=False)
    th_lo, th_hi = _eti(theta, prob)
    kc = {"k": ks}
    pk_da = xr.DataArray(pk.mean(0), dims="k", coords=kc, name="pass_hat_k")
    pk_lo, pk_hi = _eti(pk, prob)
    return IRTScoreResult(
        estimate=est,
        ci=ci,
        ability=xr.DataArray(float(theta.mean()), name="ability"),
        ability_ci=make_interval(th_lo, th_hi, prob=prob, kind="eti", detail=detail, name="ability_ci"),
        pass_hat_k=pk_da,
        pass_hat_k_ci=make_interval(pk_lo, pk_hi, prob=prob, kind="eti", detail=detail, template=pk_da,
                                    name="pass_hat_k_ci", warn_zero_width=False),
        n_tasks_run=int(run.sum()),
        target=target,
        score_draws=xr.DataArray(score, dims="sample", name="score_draws"),
        expected_score_draws=xr.DataArray(expected, dims="sample", name="expected_score_draws"),
        ability_draws=xr.DataArray(theta, dims="sample", name="ability_draws"),
    )
