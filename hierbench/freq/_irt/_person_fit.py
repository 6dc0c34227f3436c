"""Person fit: whether each agent's record follows the tasks' difficulty as the other agents' records do.

For agent ``m`` the tasks' difficulty comes from the *other* agents only (leave-agent-out):
the task logit ``x_t = logit((S_t + 1/2) / (K_t + 1))``, where ``K_t`` other agents ran task
``t`` and ``S_t`` is the sum of their success rates on it (each agent counts once, whatever
its runs). The add-half keeps a task every other agent solves (or fails) finite: with 24
others it sits at ``logit(24.5 / 25) = 3.9``. The agent's cells are then fitted by a logistic
regression on that logit with its own intercept,

    c_mt ~ Binomial(n_mt, expit(alpha_m + beta_m x_t)),

by Firth's penalised likelihood (Jeffreys prior; finite where the plain MLE is not, as for a
record separated by the logit). An agent with no success, or no failure, in its runs is not
tested: its penalised slope would be the penalty alone, and it is left out of the others'
reference too. The slope ``beta_m`` is the statistic: a genuine agent's record climbs
with the others' solve rates about as steeply as theirs do, a record that does not follow the
tasks' difficulty (a corrupted or shuffled per-task log) has a slope near 0.

Genuine agents differ in slope (on SWE-bench Verified 1.0 to 1.8 among 24 models), so the
verdict is not a test of a model with one shared slope. The null hypothesis for agent ``m`` is
that its true slope is drawn from the distribution of the other agents' true slopes, taken as
log-normal (as discriminations are in IRT): a random-effects meta-analysis of the others' log
slopes (standard errors ``se_j / b_j``; an other agent with a slope of 0 or below is left out)
gives the centre (their weighted mean) and the spread ``tau`` (Paule and Mandel's estimator),
which the result reports. The bootstrap does not plug that ``tau`` in: with 10 agents it is
too uncertain (the test then flagged a sound agent in 0.12 of logs at Holm alpha 0.05 when
agents' slopes differ by a log sd of 0.3). Each replicate draws ``tau^2`` from its Q-profile
confidence distribution, then a new agent's log slope as the weighted mean at that ``tau^2``
plus ``sqrt(tau^2 + var(mean))`` times a Student t with ``K - 1`` degrees of freedom, for ``K``
other agents (after Nagashima, Noma and Furukawa 2019). The p-value is a
parametric bootstrap under that null: each replicate draws a slope, sets the intercept so the
agent's expected successes equal its observed ones, draws the agent's cells with its own runs
per task, and refits; the one-sided p-value is the share of replicate slopes at or below the
observed one (a low slope is the misfit), drawn sequentially (Besag and Clifford 1991). With
the intercept refitted, the agent's log-likelihood under a given slope depends on its record
only through ``sum_t x_t c_t``, as its slope does: under this null the test is the same as a
test on Drasgow, Levine and Williams' ``lz``. The p-values are adjusted over the agents tested
by Holm's step-down method.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import xarray as xr
from scipy import stats
from scipy.optimize import brentq
from scipy.special import expit

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import Result
from ..._base import SmallSampleWarning
from ..._base import as_rng
from ..._base import check_dim
from ..._base import check_int
from ..._base import check_prob
from ..._base import counted
from ..._base import counts
from ..._base import interval_label
from ..._base import make_interval
from ..._base import warn_user
from ..._base import wrap_repr
from ..._docs import fill_doc
from .._inputs import with_counts_hash
from .._resampling import holm

__all__ = ["PersonFitResult", "person_fit"]

#: fewest agents person fit compares (the agent and at least two others to set the reference)
MIN_AGENTS = 3
#: fewest tasks (with a finite leave-agent-out logit) an agent's slope is fitted on
MIN_TASKS = 5
#: the bootstrap's first and largest batch sizes (each batch doubles the last, up to the largest),
#: and the replicates at or below the observed slope that stop it
FIRST_BATCH, BATCH, HITS = 100, 1000, 20


@dataclass(frozen=True, repr=False)
class PersonFitResult(Result):
    """Person fit per agent: its slope on the other agents' task logit, and the verdict.

    ``estimate`` is the slope ``beta_m`` (Firth fit) and ``ci`` its Wald interval.
    ``reference_slope`` (the median) and ``reference_log_sd`` (``tau``, the spread of the log
    slopes) describe the null's slope distribution, from the other agents; ``p_value`` the one-sided bootstrap p-value (low:
    the record does not follow the tasks' difficulty), ``p_adjusted`` Holm's over the agents
    tested, ``flagged`` whether ``p_adjusted < alpha``; ``n_replicates`` the bootstrap
    replicates its p-value rests on. ``n_tasks`` counts the tasks the slope
    rests on; ``success_rate`` is the agent's mean success rate over them. ``n_common`` counts
    the tasks that at least ``common_share`` of the other agents solve (mean success rate) and
    ``common_rate`` is the agent's mean success rate on them; ``lowest_unflagged`` is the
    lowest ``common_rate`` of the agents not flagged (``lowest_unflagged_agent``), for reading
    a flagged agent's rate against. ``note`` says why an agent was not tested (``""`` if it was).
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    reference_slope: xr.DataArray
    reference_log_sd: xr.DataArray
    p_value: xr.DataArray
    p_adjusted: xr.DataArray
    flagged: xr.DataArray
    n_tasks: xr.DataArray
    n_replicates: xr.DataArray
    success_rate: xr.DataArray
    n_common: xr.DataArray
    common_rate: xr.DataArray
    note: xr.DataArray
    lowest_unflagged: float
    lowest_unflagged_agent: str
    alpha: float
    n_sim: int
    common_share: float

    _dataset_exclude: ClassVar[tuple[str, ...]] = ()

    def _repr_lines(self) -> list[str]:
        """The question, then the flagged agents (or the one with the lowest p), each sentence wrapped (``wrap_repr``)."""
        return wrap_repr(self._sentences())

    def _sentences(self) -> list[str]:
        dim = self.estimate.dims[0]
        tested = int(np.isfinite(self.p_value.values).sum())
        head = (
            f"PersonFitResult: do the agents' results follow the tasks' difficulty? {tested} of "
            f"{counted(self.estimate.size, 'agent')} tested (slope on the other agents' task logit, "
            f"{self._ci_words()} interval; bootstrap p, Holm, alpha {self.alpha:g})"
        )
        who = [str(a) for a, f in zip(self.estimate[dim].values, self.flagged.values, strict=True) if f]
        if tested == 0:
            return [head, "  no agent could be tested: " + "; ".join(sorted(set(self.note.values.tolist())))]
        untested = [f"  not tested: {a} ({w})" for a, w in zip(self.estimate[dim].values, self.note.values,
                                                              strict=True) if w]  # fmt: skip
        if not who:
            lo = self.p_value.fillna(np.inf).argmin(dim).item()
            return [head, f"  no agent flagged at Holm alpha {self.alpha:g} (not being flagged is not evidence "
                    "that a record follows the tasks' difficulty: read each slope's interval); the lowest p:",
                    "  " + self._agent_line(str(self.estimate[dim].values[lo])), *untested]  # fmt: skip
        return [head, f"  {counted(len(who), 'agent')} do{'es' if len(who) == 1 else ''} not follow "
                "the tasks' difficulty:", *("  " + self._agent_line(a) for a in who), *untested]

    def _ci_words(self) -> str:
        """The slope interval's level and kind as a reader reads them: ``"95% Wald"`` (``ci_kind`` "normal")."""
        level, kind = interval_label(self.ci).split(" ", 1)
        return f"{level} {'Wald' if kind == 'normal' else kind}"

    def _agent_line(self, agent: str) -> str:
        dim = self.estimate.dims[0]
        at = {dim: agent}
        lo, hi = self.ci.sel(at).values.tolist()
        line = (
            f"{agent}: slope {float(self.estimate.sel(at)):.2f} ({self._ci_words()} [{lo:.2f}, {hi:.2f}]) against "
            f"the others' typical slope {float(self.reference_slope.sel(at)):.2f} (the sd of their log slopes "
            f"beyond their standard errors, tau {float(self.reference_log_sd.sel(at)):.2f}), "
            f"p {float(self.p_value.sel(at)):.2g} (Holm {float(self.p_adjusted.sel(at)):.2g})"
        )
        k = int(self.n_common.sel(at))
        if k:
            rate = float(self.common_rate.sel(at))
            line += (
                f"; solves {rate:.0%} of the {k} tasks that >= {self.common_share:.0%} of the others solve"
            )
            if np.isfinite(self.lowest_unflagged) and bool(self.flagged.sel(at)):
                line += f" (lowest among the agents not flagged: {self.lowest_unflagged:.0%}, {self.lowest_unflagged_agent})"
        return line


def firth_logistic(
    x: np.ndarray, n: np.ndarray, c: np.ndarray, *, start: tuple | None = None, max_iter: int = 100,
    tol: float = 1e-8,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Firth-penalised logistic fits of ``c ~ Binomial(n, expit(a + b x))``, many at once.

    ``x`` and ``n`` have shape ``(T,)``, ``c`` shape ``(S, T)``: ``S`` data sets on the same
    design. Fisher scoring on Firth's modified score ``sum_t (1, x_t) (c_t - n_t p_t + h_t
    (1/2 - p_t))`` (``h_t`` the leverages), steps capped at 2 in each coefficient. Returns
    ``(a, b, se_b)``, each ``(S,)`` (``se_b`` from the inverse Fisher information at the
    estimate); NaN where the fit did not converge. ``start``: ``(a, b)`` to start from.
    """
    S = c.shape[0]
    a = np.zeros(S) if start is None else np.array(start[0], dtype=float)
    b = np.zeros(S) if start is None else np.array(start[1], dtype=float)
    se = np.full(S, np.nan)
    active = np.arange(S)
    with np.errstate(invalid="ignore", divide="ignore"):
        a, b, se, active = _firth_steps(x, n, c, a, b, se, active, max_iter, tol)
    a[active] = b[active] = np.nan
    b[~np.isfinite(a)] = np.nan
    se[~np.isfinite(b)] = np.nan
    return a, b, se


def _firth_steps(x, n, c, a, b, se, active, max_iter, tol):
    """:func:`firth_logistic`'s iterations; ``active``: the fits still running when they stop."""
    for _ in range(max_iter):
        p = expit(a[active, None] + b[active, None] * x)
        w = n * p * (1.0 - p)
        i00, i01, i11 = w.sum(1), w @ x, w @ (x * x)
        det = i00 * i11 - i01 * i01
        h = w * (i11[:, None] - 2.0 * i01[:, None] * x + i00[:, None] * (x * x)) / det[:, None]
        r = c[active] - n * p + h * (0.5 - p)
        u0, u1 = r.sum(1), r @ x
        d0 = (i11 * u0 - i01 * u1) / det
        d1 = (i00 * u1 - i01 * u0) / det
        scale = np.minimum(1.0, 2.0 / np.maximum(np.maximum(np.abs(d0), np.abs(d1)), 1e-300))
        a[active] += scale * d0
        b[active] += scale * d1
        bad = ~np.isfinite(det) | (det <= 0) | ~np.isfinite(d0 + d1)
        a[active[bad]] = np.nan  # a degenerate information: no fit
        done = (np.maximum(np.abs(d0), np.abs(d1)) < tol) | bad
        se[active[done]] = np.sqrt(i00[done] / det[done])
        active = active[~done]
        if active.size == 0:
            break
    return a, b, se, active


def _task_logit(r: np.ndarray, ran: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Agent ``m``'s leave-agent-out task logit (NaN where no other agent ran the task) and the others' mean rate."""
    others = np.arange(r.shape[0]) != m
    k = ran[others].sum(0)
    s = np.where(ran[others], r[others], 0.0).sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        x = np.where(k > 0, np.log((s + 0.5) / (k + 0.5 - s)), np.nan)
        return x, np.where(k > 0, s / k, np.nan)


def _slopes(n: np.ndarray, c: np.ndarray, share: float) -> dict[str, np.ndarray]:
    """Every agent's fit on its leave-agent-out logit, and its rates overall and on the commonly solved tasks."""
    M = n.shape[0]
    ran = n > 0
    r = np.where(ran, c / np.maximum(n, 1), np.nan)
    out = {k: np.full(M, np.nan) for k in ("b", "se", "n_tasks", "rate", "n_common", "common")}
    out["x"] = np.full(n.shape, np.nan)
    for m in range(M):
        x, others = _task_logit(r, ran, m)
        use = ran[m] & np.isfinite(x)
        out["x"][m] = np.where(use, x, np.nan)
        out["n_tasks"][m] = use.sum()
        out["rate"][m] = np.mean(r[m, use]) if use.any() else np.nan
        common = use & (others >= share)
        out["n_common"][m] = common.sum()
        out["common"][m] = np.mean(r[m, common]) if common.any() else np.nan
        wins = c[m, use].sum()
        # no success (or no failure): the Firth slope would be its penalty alone, so no slope
        if use.sum() >= MIN_TASKS and np.ptp(x[use]) > 0 and 0 < wins < n[m, use].sum():
            _, b, se = firth_logistic(x[use], n[m, use], c[m, use][None])
            out["b"][m], out["se"][m] = b[0], se[0]
    return out


def _log_slopes(b: np.ndarray, se: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The other agents' log slopes ``log b_j`` and their variances ``(se_j / b_j)^2`` (slopes 0 or below left out)."""
    ok = np.isfinite(b) & np.isfinite(se) & (b > 0) & (np.arange(b.size) != m)
    return np.log(b[ok]), (se[ok] / b[ok]) ** 2


def _reference(b: np.ndarray, se: np.ndarray, m: int) -> tuple[float, float, float, int]:
    """The null's log-slope distribution for agent ``m`` from the other agents' fits, as printed.

    Returns ``(centre, tau, pred_sd, K)``: the others' log slopes ``log b_j`` (standard errors
    ``se_j / b_j``; others with a slope of 0 or below are left out) in a random-effects
    meta-analysis, ``tau^2`` by Paule and Mandel's estimator, ``centre`` their weighted mean,
    ``pred_sd = sqrt(tau^2 + var(centre))``, for ``K`` others. The bootstrap does not plug these
    in: it draws ``tau^2`` from its Q-profile confidence distribution (``_predictive_log_slopes``).
    """
    y, v = _log_slopes(b, se, m)
    k = y.size
    if k < MIN_AGENTS - 1:
        return np.nan, np.nan, np.nan, k

    def excess(tau2: float) -> float:
        w = 1.0 / (v + tau2)
        return float(np.sum(w * (y - np.sum(w * y) / w.sum()) ** 2)) - (k - 1)

    tau2 = 0.0 if excess(0.0) <= 0 else brentq(excess, 0.0, 10.0 * float(np.var(y)) + 1.0)
    w = 1.0 / (v + tau2)
    return float(np.sum(w * y) / w.sum()), float(np.sqrt(tau2)), float(np.sqrt(tau2 + 1.0 / w.sum())), k


def _predictive_log_slopes(y: np.ndarray, v: np.ndarray, size: int, gen: np.random.Generator) -> np.ndarray:
    """``size`` draws of a new agent's log slope from the others' ``y`` (log slopes) and ``v`` (their variances).

    After the confidence-distribution predictive of Nagashima, Noma and Furukawa (2019): ``tau^2``
    is drawn from its Q-profile confidence distribution (``q ~ chi^2_{K-1}``, ``tau^2`` the root
    of ``Q(tau^2) = q`` for the generalised ``Q(tau^2) = sum_j w_j (y_j - mu(tau^2))^2``,
    ``w_j = 1 / (v_j + tau^2)``, and 0 where ``Q(0) <= q``), then the log slope is drawn as
    ``mu(tau^2) + sqrt(tau^2 + 1 / sum_j w_j) t``, ``t`` a Student t with ``K - 1`` degrees of
    freedom (their normal, widened: the ``v_j`` are Wald estimates from the same noisy fits, and
    the Firth fit shrinks the steepest slopes, so the others' log slopes are skewed left; with
    the normal the test flagged sound agents at 1.7 times its level when slopes differ by sd 0.5,
    and with one plugged-in ``tau`` at 2.4 times at sd 0.3; ``benchmarks/bench_person_fit_null.py``).
    ``Q`` decreases in ``tau^2``; the root is read off a grid of 400 values of ``tau^2``
    (geometric), interpolated in ``log Q``.
    """
    scale = max(float(np.var(y)), float(np.median(v)), 1e-12)
    t2 = np.concatenate([[0.0], scale * np.geomspace(1e-8, 1e6, 399)])
    w = 1.0 / (v + t2[:, None])
    mu = (w @ y) / w.sum(1)
    q_grid = np.log(np.maximum(np.sum(w * (y - mu[:, None]) ** 2, 1), 1e-300))
    q = np.log(gen.chisquare(y.size - 1, size))
    tau2 = np.interp(-q, -q_grid, t2)  # Q(0) <= q: 0; below the grid's last Q: its largest tau^2
    w = 1.0 / (v + tau2[:, None])
    wsum = w.sum(1)
    return (w @ y) / wsum + np.sqrt(tau2 + 1.0 / wsum) * gen.standard_t(y.size - 1, size)


def _null_p(
    x: np.ndarray, n: np.ndarray, c: np.ndarray, b_obs: float, others: tuple[np.ndarray, np.ndarray],
    n_sim: int, gen: np.random.Generator,
) -> tuple[float, int]:
    """The one-sided parametric-bootstrap p-value of ``b_obs`` under the reference slope distribution.

    ``others``: the other agents' log slopes and their variances (``_log_slopes``); each
    replicate's slope is a draw of ``_predictive_log_slopes``.

    Sequential (Besag and Clifford 1991), in batches of :data:`FIRST_BATCH` doubling up to
    :data:`BATCH`: replicates are drawn until :data:`HITS` of them fall at or below ``b_obs``
    or ``n_sim`` are drawn; ``p = (1 + hits) / (1 + replicates)``, at least Besag and
    Clifford's ``hits / replicates`` where it stops on hits. Returns ``(p, replicates)``.

    Tasks at the same logit ``x`` are pooled first: their runs, at one success probability, are
    one binomial, and the Firth fit of the pooled counts is the fit of the tasks (the likelihood
    and the information are sums over tasks), so only the draws' stream changes. SWE-bench's 500
    tasks take at most 25 logits (24 other agents, one run each): 20 times fewer cells to draw.
    """
    x, at = np.unique(x, return_inverse=True)
    n, c = np.bincount(at, weights=n), np.bincount(at, weights=c)
    target = np.clip(c.sum(), 0.5, n.sum() - 0.5)  # the observed successes (kept inside the open range)
    hits = done = 0
    batch = FIRST_BATCH
    while done < n_sim and hits < HITS:
        size, batch = min(batch, n_sim - done), min(2 * batch, BATCH)
        # with few other agents tau^2's confidence distribution is wide and a draw can overflow
        # exp: a slope over 1e6 already makes every cell a step at the task logit (its refit is
        # then no hit), so the cap changes no p-value and keeps the intercept's solve finite
        b = np.exp(np.minimum(_predictive_log_slopes(*others, size, gen), np.log(1e6)))
        a = np.zeros(size)
        for _ in range(60):  # the intercept whose expected successes are the observed ones, per slope
            p = expit(a[:, None] + b[:, None] * x)
            step = (target - p @ n) / np.maximum((p * (1 - p)) @ n, 1e-12)
            a += np.clip(step, -5.0, 5.0)
            if np.abs(step).max() < 1e-10:
                break
        sims = gen.binomial(n.astype(np.int64), expit(a[:, None] + b[:, None] * x)).astype(float)
        _, b_sim, _ = firth_logistic(x, n, sims, start=(a, b), tol=1e-6)
        hits += int(np.sum(b_sim <= b_obs))
        done += int(np.isfinite(b_sim).sum())
        if not np.isfinite(b_sim).any():
            break
    return float((1 + hits) / (1 + done)), done


def _as_counts(data, agent_dim: str, task_dim: str, run_dim: str) -> xr.Dataset:
    """The agent x task counts person fit reads, its dims checked."""
    cts = counts(data, dim=run_dim, binary=True, name="data", purpose="person_fit")
    for d, name in ((agent_dim, "agent_dim"), (task_dim, "task_dim")):
        check_dim(cts["n_runs"], d, name=name)
    extra = [d for d in cts["n_runs"].dims if d not in (agent_dim, task_dim)]
    if extra:
        raise HierbenchError(
            f"`data`: person_fit reads (agent, task) cells with runs over {run_dim!r}; "
            f"found other dims {extra}; select or stack them first"
        )
    cts = cts.transpose(agent_dim, task_dim)
    M = cts.sizes[agent_dim]
    if M < MIN_AGENTS:
        agents = cts[agent_dim].values.tolist() if agent_dim in cts.coords else list(range(M))
        raise HierbenchError(
            f"`data`: person_fit needs at least {MIN_AGENTS} agents (each agent is read against the tasks' "
            f"difficulty among the others, and the others' slopes set the reference); got "
            f"{counted(M, 'agent')} {agents}: person fit is not applicable to this log"
        )
    return cts


@fill_doc
def person_fit(
    data: xr.Dataset | xr.DataArray,
    *,
    prob: float = DEFAULT_PROB,
    alpha: float = 0.05,
    n_sim: int = 20_000,
    common_share: float = 0.9,
    agent_dim: str = "agent",
    task_dim: str = "task",
    run_dim: str = "run",
    rng: None | int | np.random.Generator = None,
) -> PersonFitResult:
    """Find the agents whose per-task results do not follow the tasks' difficulty as the other agents' do.

    The statistic is the agent's slope in a logistic regression of its cells on the
    leave-agent-out task logit (the other agents' smoothed solve rates), with its own
    intercept, fitted by Firth's penalised likelihood; the null hypothesis is that this
    agent's true slope is drawn from the distribution of the other agents' slopes, and the
    test is a one-sided parametric bootstrap under it, adjusted over the agents by Holm's
    method (the module's text gives the details). A record whose successes fall on hard and
    easy tasks alike (a corrupted per-task log) has a slope near 0 and is flagged; a genuine
    agent whose slope is merely shallower or steeper than most is not, since the null lets
    agents differ in slope as much as the others do. Nothing outside the scores is read.

    Parameters
    ----------
    data : Dataset or DataArray
        An eval dataset (binary ``score`` over agent, task and run; NaN: not run), a binary
        score DataArray or its counts (``n_runs``, ``n_success``). Runs may be ragged and
        cells missing: each cell is a binomial count.
    %(prob)s
    alpha : float
        Significance level of the flag, on Holm's adjusted p-values.
    n_sim : int
        Most bootstrap replicates per agent. They are drawn in batches (100, then each twice the
        last up to 1,000) until 20 fall at or below the agent's slope (Besag and Clifford's
        sequential p-value), so an agent that fits costs a few hundred and only a misfitting one
        up to ``n_sim``. The smallest p-value is
        ``1 / (n_sim + 1)``: Holm can flag only when ``M / (n_sim + 1) < alpha`` for ``M``
        agents (else a warning).
    common_share : float
        A task counts as commonly solved for an agent when the other agents' mean success
        rate on it is at least this; the agent's rate on those tasks is reported beside the
        lowest such rate among the agents not flagged (for the reader, not the test).
    agent_dim, task_dim, run_dim : str
        The dimensions of agents, tasks and runs.
    %(rng)s

    Returns
    -------
    PersonFitResult
        Per agent: the slope and its Wald interval (``ci_kind`` "normal"), the null's
        reference centre and spread, the p-value, Holm's adjusted p-value, the flag, the tasks
        used and the rates on commonly solved tasks.

    Raises
    ------
    hierbench.PartialCreditError
        When a score is strictly between 0 and 1.
    hierbench.HierbenchError
        With fewer than 3 agents (no other agents to set the reference: not applicable).

    Notes
    -----
    An agent is not tested (NaN p-value, never flagged; its ``note`` says why) when it ran
    fewer than 5 tasks with a finite reference, or when fewer than 2 other agents have a
    positive slope. Tasks no other agent ran are left out of the agent's fit; tasks every
    other agent solves or fails are kept, their logit finite by the add-half smoothing.

    Sound agents whose log slopes differ by sd 0.15-0.5 are flagged at Holm 0.05 in 0.007-0.040 of
    simulated logs (``benchmarks/bench_person_fit_null.py``); a scrambled record is flagged.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=6, n_tasks=80, n_runs=2, rng=1)
    >>> r = person_fit(ds, n_sim=199, rng=0)
    >>> r.estimate.sizes["agent"], bool(r.flagged.any())
    (6, False)
    """
    prob = check_prob(prob)
    alpha = check_prob(alpha, "alpha")
    n_sim = check_int(n_sim, "n_sim", min=99)
    common_share = check_prob(common_share, "common_share")
    gen = as_rng(rng)
    cts = _as_counts(data, agent_dim, task_dim, run_dim)
    n = np.asarray(cts["n_runs"].values, dtype=float)
    c = np.asarray(cts["n_success"].values, dtype=float)
    M = n.shape[0]
    if M / (n_sim + 1) >= alpha:
        warn_user(
            f"person_fit: with n_sim={n_sim} the smallest p-value is 1/{n_sim + 1}, and Holm over {M} agents "
            f"cannot bring it below alpha={alpha:g}: no agent can be flagged; raise `n_sim` above {int(M / alpha)}",
            SmallSampleWarning,
        )
    fit = _slopes(n, c, common_share)
    ref, p, note = _test_agents(fit, n, c, n_sim, gen)
    res = _result(cts, fit, ref, p, note, agent_dim=agent_dim, prob=prob, alpha=alpha, n_sim=n_sim,
                  common_share=common_share)
    return with_counts_hash(res, data, rng)  # the log's fingerprint: the report checks a result given to it


def _test_agents(fit: dict, n: np.ndarray, c: np.ndarray, n_sim: int, gen: np.random.Generator) -> tuple:
    """Each agent's reference and bootstrap p-value (``fit["n_sim"]``: its replicates), or why it is not tested."""
    M = n.shape[0]
    ref = np.full((M, 4), np.nan)
    p = np.full(M, np.nan)
    sims = np.zeros(M, dtype=np.int64)
    note = np.full(M, "", dtype=object)
    for m in range(M):
        ref[m] = _reference(fit["b"], fit["se"], m)
        if not np.isfinite(fit["b"][m]):
            note[m] = _untested_why(n[m], c[m], np.isfinite(fit["x"][m]))
        elif not np.isfinite(ref[m, 0]):
            note[m] = f"fewer than {MIN_AGENTS - 1} other agents with a positive slope"
        else:
            use = np.isfinite(fit["x"][m])
            p[m], sims[m] = _null_p(fit["x"][m, use], n[m, use], c[m, use], fit["b"][m],
                                    _log_slopes(fit["b"], fit["se"], m), n_sim, gen)
    fit["n_sim"] = sims
    return ref, p, note


def _untested_why(n: np.ndarray, c: np.ndarray, use: np.ndarray) -> str:
    """Why an agent's slope was not fitted: too few tasks with a reference, or a record of one outcome."""
    if use.sum() >= MIN_TASKS:
        runs, wins = int(n[use].sum()), int(c[use].sum())
        if wins in (0, runs):
            return (f"{'no successes' if wins == 0 else 'no failures'} in its {counted(runs, 'run')} on "
                    f"{counted(int(use.sum()), 'task')}: no slope to estimate")
    return f"fewer than {MIN_TASKS} tasks with a reference (or no spread in them)"


def _result(cts, fit, ref, p, note, *, agent_dim, prob, alpha, n_sim, common_share) -> PersonFitResult:
    """The per-agent arrays as a :class:`PersonFitResult`."""
    coords = {agent_dim: cts[agent_dim].values} if agent_dim in cts.coords else {}

    def da(v, name, dtype=float):
        return xr.DataArray(np.asarray(v, dtype=dtype), dims=agent_dim, coords=coords, name=name)

    est = da(fit["b"], "slope")
    z = stats.norm.ppf(0.5 + prob / 2)
    ci = make_interval(
        fit["b"] - z * fit["se"], fit["b"] + z * fit["se"], prob=prob, kind="normal", template=est,
        detail="Wald, from the Firth-penalised logistic fit of the agent's cells on the leave-agent-out task logit",
    )
    p_adj = holm(p)
    flagged = np.nan_to_num(p_adj, nan=1.0) < alpha
    common = np.where(~flagged & np.isfinite(p) & (fit["n_common"] > 0), fit["common"], np.nan)
    low = int(np.nanargmin(common)) if np.isfinite(common).any() else -1
    labels = coords[agent_dim] if coords else np.arange(est.size)
    return PersonFitResult(
        estimate=est, ci=ci, reference_slope=da(np.exp(ref[:, 0]), "reference_slope"),
        reference_log_sd=da(ref[:, 1], "reference_log_sd"), p_value=da(p, "p_value"),
        p_adjusted=da(p_adj, "p_adjusted"), flagged=da(flagged, "flagged", bool),
        n_tasks=da(fit["n_tasks"], "n_tasks", np.int64), n_replicates=da(fit["n_sim"], "n_replicates", np.int64),
        success_rate=da(fit["rate"], "success_rate"),
        n_common=da(fit["n_common"], "n_common", np.int64), common_rate=da(fit["common"], "common_rate"),
        note=da(note, "note", object), lowest_unflagged=float(common[low]) if low >= 0 else np.nan,
        lowest_unflagged_agent=str(labels[low]) if low >= 0 else "", alpha=alpha, n_sim=n_sim,
        common_share=common_share,
    )
