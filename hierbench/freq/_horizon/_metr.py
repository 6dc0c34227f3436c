"""METR's time horizon, rebuilt from its description, and the doubling time of the horizons.

Kwa et al. (2025), "Measuring AI Ability to Complete Long Tasks" (METR),
define an agent's p% time horizon as the human task length at which the
agent succeeds with probability p, read off a logistic regression of the
agent's run outcomes on ``log2(human minutes)``. The facts of their method
(their paper and the public analysis repository), rebuilt here:

- one regression per agent, ``logit P(success) = a + b log2(minutes)``,
  every run weighted by ``1 / (runs of the agent on that task x sqrt(tasks
  of that family the agent ran))``, normalised to sum to one per agent
  (``invsqrt_task_weight``: a family of many near-copies counts like a few
  tasks); the fit minimises the weighted log-loss plus
  ``regularization / 2 x b^2`` (an L2 penalty on the slope only, METR's
  0.1, as scikit-learn's ``C = 1 / 0.1``); a fractional score enters as
  that share of a success (the Bernoulli form);
- the p horizon is ``2 ** ((logit(p) - a) / b)`` minutes; an agent that
  failed every run has horizon 0 (and one that succeeded on every run an
  infinite one);
- intervals from a hierarchical bootstrap: task families resampled with
  replacement, then tasks within each drawn family, then runs; duplicates
  count twice and the weights are not renormalised. Here each drawn copy of
  a task resamples its own runs; METR pools a task's runs across its
  duplicate draws before resampling them, a small difference;
- the trend: an ordinary least-squares line of ``ln`` horizon on release
  date through the agents that were state of the art when released (a
  horizon at least the largest of every agent released on or before that
  date), released on or after 2019-01-01; the doubling time is
  ``ln 2 / slope``. Its interval is METR's bootstrap rule: in each replicate
  the agents whose horizon is NaN, infinite or below 0.001 minutes are left
  out, the line is fitted through the rest (at least 2) and its doubling
  time kept if positive; the interval is the percentiles of those kept.
  The point line follows the same rule (METR's goes through every agent
  with a positive horizon): an agent whose point horizon is below 0.001
  minutes, a value read off its slope far below any task a human times,
  is left out of it (warned), so the estimate is not one its interval
  excludes by construction.

Where METR's code has no answer this module says so. A point estimate
whose slope is not negative is not a horizon (NaN, warned), nor is one
from tasks of a single length or from a fit that did not converge
(separated outcomes without a penalty). A bootstrap replicate in which an
agent had one outcome or a slope not negative enters at the limit horizon
(0, or infinite where its fitted success at the shortest task is at least
p), counted per agent, so the interval is not conditioned on the sign of the
slope.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import ClassVar

import numpy as np
import xarray as xr
from scipy.special import expit

from ..._base import DEFAULT_PROB
from ..._base import BoundaryWarning
from ..._base import ExtrapolatedHorizonWarning
from ..._base import HierbenchError
from ..._base import HierbenchWarning
from ..._base import Result
from ..._base import SmallSampleWarning
from ..._base import UndefinedWarning
from ..._base import as_rng
from ..._base import check_int
from ..._base import check_prob
from ..._base import cluster_codes
from ..._base import make_interval
from ..._base import settle_trend
from ..._base import warn_user
from ..._docs import fill_doc
from ..._numerics import MIN_TREND_HORIZON
from ..._numerics import BootstrapTrend
from ..._numerics import TrendPoints
from ..._numerics import bootstrap_doubling_times
from ..._numerics import extrapolated_cells
from ..._numerics import extrapolated_note
from ..._numerics import horizon_or_limit
from ..._numerics import limit_flags
from ..._numerics import limit_quantiles
from ..._numerics import ols_slopes
from ..._numerics import outside_interval_note
from ..._numerics import outside_lengths
from ..._numerics import trend_agents
from ..._numerics import trend_points
from ...data import task_minutes
from .._inputs import with_counts_hash
from .._kernels import few_units
from .._kernels import few_units_text
from .._kernels import ratio
from ._fit import FIT_BINS
from ._fit import FitCheck
from ._fit import check_rng

__all__ = [
    "DoublingTimeResult",
    "ExtrapolatedHorizonWarning",
    "ExtremeHorizonWarning",
    "TimeHorizonResult",
    "doubling_time",
    "metr_run_weights",
    "time_horizon",
]

#: METR's L2 penalty on the slope (their ``regularization``; scikit-learn ``C = 1 / 0.1``)
METR_REGULARIZATION = 0.1
#: Newton steps before a logistic fit that has not settled is declared not converged
_NEWTON_STEPS = 100


class ExtremeHorizonWarning(BoundaryWarning):
    """An agent failed (or succeeded on) every run: its horizon is 0 (or infinite)."""


@dataclass(frozen=True, repr=False)
class TimeHorizonResult(Result):
    """Time horizons per agent (:func:`time_horizon`).

    Attributes
    ----------
    estimate : DataArray (agent, success)
        Horizon in human minutes at each success probability.
    ci : DataArray (agent, success, ci_bound)
        Hierarchical-bootstrap percentile intervals. Coverage of the nominal
        95% interval in a simulation of METR's design (its 83 task lengths in
        36 families, 8 runs, METR's weights and penalty; 1,200 simulated
        agents, 400 resamples; Monte Carlo se at most 0.008) of the 50% (80%)
        horizon: with the default levels, 0.993 (0.989) for a pure logistic
        curve and 0.969 (0.971) with family and task effects (sd 1 on the
        logit), conservative as the bootstrap counts the within-family and
        run variation again at each level; with ``levels=("task", "run")``,
        0.986 (0.974) and 0.914 (0.917), short where the tasks of a family
        share an effect. At 80% the penalty pulls the estimate: in a
        GPT-4o-like case 0.246 minutes against 0.349 for the curve.
    coef : DataArray (agent, param)
        ``intercept`` and ``slope`` (per doubling of the task length).
    resamples : DataArray (resample, agent, success)
        Bootstrap horizons: 0 or ``inf`` where a replicate left the agent
        with one outcome or a slope not negative (the limit horizon), NaN
        where it was left out (see ``n_skipped``).
    options : dict
        The settings; ``minutes_range``: the shortest and longest task any
        agent ran (minutes); ``agent_minutes_range``: per agent, those of
        the tasks it ran, beyond which its horizon is an extrapolation.
    n_undefined : DataArray (agent)
        Replicates in which the agent took a limit horizon (0 or infinite).
    n_skipped : DataArray (agent)
        Replicates left out for the agent: its drawn tasks had fewer than 2
        lengths, or its fit did not converge with a negative slope.
    extrapolated : DataArray (agent, success)
        Whether the estimate lies outside the agent's own task lengths
        (``agent_minutes_range``: a finite, positive horizon read off its
        line beyond its data).
    fit_check : Dataset or None
        Whether the logistic curve describes each agent's tasks: per
        ``(agent, bin)`` of task length ``observed`` and ``fitted`` weighted
        success, ``n_tasks``, ``weight`` and the bin's ``minutes_lower`` /
        ``minutes_upper``; per agent the ``statistic``, its ``p_value``
        (a centred bootstrap over task families; NaN without resamples),
        ``p_holm`` (Holm over the agents) and ``misfit`` (``p_holm`` below
        0.05), with ``n_resamples_used`` and ``n_families`` (none below 10:
        no p-value). How the bins and the test are made:
        the module ``hierbench.freq._horizon._fit``. None where not asked
        for; ``to_dataset()`` holds it as ``fit_check_<variable>`` (its attrs
        ``fit_check_<attr>``), ``to_frame()`` its per-agent variables.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    coef: xr.DataArray
    resamples: xr.DataArray
    options: dict = field(default_factory=dict)
    n_undefined: xr.DataArray | None = None
    n_skipped: xr.DataArray | None = None
    extrapolated: xr.DataArray | None = None
    fit_check: xr.Dataset | None = None

    _dataset_exclude: ClassVar[tuple[str, ...]] = ("resamples",)
    _estimate_label: ClassVar[str] = "horizon in human minutes"
    _repr_floor: ClassVar[float | None] = 0.01  # a limit horizon (3.9e-110 minutes) reads "<0.01"

    def _cell_notes(self) -> xr.DataArray | None:
        """Which end of the agent's task lengths (``options["agent_minutes_range"]``) an extrapolated horizon passes.

        A result without per-agent ranges (built by hand) reads ``options["minutes_range"]`` for every agent.
        """
        if self.extrapolated is None:
            return None
        est = self.estimate
        own = self.options.get("agent_minutes_range") or {}
        pooled = self.options.get("minutes_range")
        rows = [own.get(str(a), pooled) for a in est["agent"].values]
        ranges = np.asarray(rows, dtype=float) if rows and all(r is not None and len(r) == 2 for r in rows) else pooled
        return est.copy(data=extrapolated_cells(est.values, ranges)).rename(None)

    def _repr_lines(self) -> list[str]:
        lines = super()._repr_lines() + _misfit_line(self.fit_check)
        if self.n_undefined is None:
            return lines
        return lines + limit_flags(self.n_undefined["agent"].values.tolist(), self.n_undefined.values,
                                   self.resamples.values, float(self.ci.attrs.get("ci_prob", DEFAULT_PROB)),
                                   "one outcome or a slope not negative", "resamples")  # fmt: skip


def _misfit_line(check: xr.Dataset | None) -> list[str]:
    """One repr line naming the agents whose curve the fit check flags (none: no line)."""
    if check is None or not check["misfit"].any():
        return []
    bad = check["misfit"].values.astype(bool)
    named = ", ".join(f"{a} (p {p:.2g}, Holm {h:.2g})" for a, p, h in zip(
        check["agent"].values[bad], check["p_value"].values[bad], check["p_holm"].values[bad], strict=True))
    return [f"  the logistic curve misfits: {named}; its horizon is a summary of a curve that does not describe "
            "these tasks (fit_check)"]  # fmt: skip


@dataclass(frozen=True, repr=False)
class DoublingTimeResult(Result):
    """Doubling time of the horizons over release dates (:func:`doubling_time`).

    Attributes
    ----------
    estimate : DataArray ()
        Doubling time in days.
    ci : DataArray (ci_bound)
        Bootstrap percentile interval.
    slope : float
        ``ln`` horizon per day.
    agents : list of str
        The agents the line goes through, with ``release_date`` and ``horizon``.
    resamples : DataArray (resample)
        Each replicate's doubling time by METR's rule (NaN where not kept).
    n_resamples_dropped : int
        Replicates not kept: ``n_too_few + n_nonpositive``.
    agents_without_date : list of str
        Agents left out for want of a release date (``missing="skip"``).
    n_kept : int
        Replicates whose doubling time the interval is made of.
    n_too_few : int
        Replicates with fewer than 2 trend agents at a horizon of at least
        0.001 minutes (or all on one date).
    n_nonpositive : int
        Replicates whose line gave a doubling time that is not positive.
    n_agent_dropped : list of int
        Per agent in ``agents``, the replicates that left it out (horizon
        NaN, infinite or below 0.001 minutes).
    agents_below_floor : list of str
        Agents the line would go through but whose point horizon is below
        0.001 minutes: left out of the point line by the rule that leaves
        such a horizon out of every replicate's line.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    slope: float
    agents: list
    release_date: list
    horizon: list
    resamples: xr.DataArray
    n_resamples_dropped: int
    agents_without_date: list = field(default_factory=list)
    n_kept: int = 0
    n_too_few: int = 0
    n_nonpositive: int = 0
    n_agent_dropped: list = field(default_factory=list)
    agents_below_floor: list = field(default_factory=list)

    _dataset_exclude: ClassVar[tuple[str, ...]] = ("resamples",)
    _estimate_label: ClassVar[str] = "doubling time in days"

    def _cell_notes(self) -> xr.DataArray | None:
        """The agents the line goes through, and those left out below the floor."""
        below = f"; left out, horizon below {MIN_TREND_HORIZON:g} minutes: {', '.join(self.agents_below_floor)}"
        return xr.DataArray(f"line through {len(self.agents)} agents" + (below if self.agents_below_floor else ""))


# --------------------------------------------------------------------------- inputs


def _packed(data: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """Scores ``(A, T, R)`` with each cell's runs first (NaN after) and runs per cell ``(A, T)``."""
    if not isinstance(data, xr.Dataset) or "score" not in data:
        raise HierbenchError("`data` must be an eval dataset with `score(agent, task, run)`")
    s = np.asarray(data["score"].transpose("agent", "task", "run").values, dtype=float)
    order = np.argsort(~np.isfinite(s), axis=-1, kind="stable")
    s = np.take_along_axis(s, order, axis=-1)
    return s, np.isfinite(s).sum(-1)


def metr_run_weights(data: xr.Dataset, *, family: str = "cluster") -> xr.DataArray:
    """METR's ``invsqrt_task_weight`` of every run, from its definition.

    A run of agent ``a`` on task ``t`` of family ``f`` weighs
    ``1 / (n_at x sqrt(F_af))``, with ``n_at`` the agent's runs on the task
    and ``F_af`` the number of tasks of family ``f`` the agent ran,
    normalised to sum to one over the agent's runs.

    Parameters
    ----------
    data : xarray.Dataset
        An eval dataset with a task-family coord.
    family : str
        The coord along ``task`` naming each task's family.

    Returns
    -------
    xarray.DataArray
        ``weight(agent, task, run)``, NaN where no run happened.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> ds = xr.Dataset({"score": (("agent", "task", "run"), [[[1.0, 0.0], [1.0, np.nan], [0.0, np.nan]]])},
    ...                 coords={"agent": ["a"], "task": ["t1", "t2", "t3"], "cluster": ("task", ["f", "f", "g"])})
    >>> w = metr_run_weights(ds)
    >>> np.round(w.sel(agent="a").values, 4).tolist()
    [[0.1464, 0.1464], [0.2929, nan], [0.4142, nan]]
    """
    _, n = _packed(data)
    codes, _ = cluster_codes(data, family, missing="singleton", name="family")
    ran = n > 0
    fam_size = np.stack([np.bincount(codes, ran[a].astype(float), minlength=codes.max() + 1)[codes]
                         for a in range(ran.shape[0])])  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore"):
        cell = np.where(ran, 1.0 / (n * np.sqrt(fam_size)), 0.0)
    cell = ratio(cell, (cell * n).sum(1, keepdims=True))  # an agent with no run: NaN weights
    raw = np.asarray(data["score"].transpose("agent", "task", "run").values, dtype=float)
    w = np.where(np.isfinite(raw), cell[..., None], np.nan)
    return xr.DataArray(w, dims=("agent", "task", "run"), coords=data["score"].transpose("agent", "task", "run").coords,
                        name="weight")  # fmt: skip


def _weights(data: xr.Dataset, weights: Any, family: str, n: np.ndarray) -> np.ndarray:
    """The weight of one run of each (agent, task) cell, ``(A, T)``, summing to one over each agent's runs."""
    if isinstance(weights, xr.DataArray):
        return _given_weights(data, weights, n)
    if weights == "invsqrt":
        w = metr_run_weights(data, family=family).values
        return np.where(n > 0, np.nanmax(np.nan_to_num(w, nan=-1.0), axis=-1), 0.0)
    if weights == "equal" or weights is None:
        cell = ratio(1.0, n, 0.0) if weights == "equal" else (n > 0) * 1.0
        tot = (cell * n).sum(1, keepdims=True)
        return cell / tot
    raise HierbenchError(f"`weights` must be 'invsqrt', 'equal', None or a DataArray of run weights; got {weights!r}")


def _given_weights(data: xr.Dataset, weights: xr.DataArray, n: np.ndarray) -> np.ndarray:
    """Run weights given per run, one per (agent, task) cell, normalised to sum to one over each agent's runs.

    The fit's penalty ``regularization / 2 x b^2`` is set against a weighted
    log-loss whose weights sum to one per agent (METR asserts it); weights
    of another scale would change the slope's pull and so the horizon. A run
    whose weight is missing, negative or infinite, or an agent whose weights
    sum to 0, is refused.
    """
    agents = np.asarray(data["agent"].values).astype(str)
    w = np.asarray(weights.transpose("agent", "task", "run").values, dtype=float)
    run = np.isfinite(np.asarray(data["score"].transpose("agent", "task", "run").values, dtype=float))
    bad = run & ~(np.isfinite(w) & (w >= 0))
    if bad.any():
        a, t, _ = np.nonzero(bad)
        raise HierbenchError(f"`weights`: every run needs a finite weight >= 0; {int(bad.sum())} runs have "
                             f"{np.unique(w[bad]).tolist()[:5]} (first: agent {agents[a[0]]!r}, task index {t[0]})")  # fmt: skip
    per_cell = np.where(run, w, -np.inf).max(-1)
    spread = np.where(run, w, np.inf).min(-1)
    ok = n > 0
    if np.any(ok & (np.abs(per_cell - spread) > 1e-12 * np.abs(per_cell))):
        raise HierbenchError("`weights`: runs of one (agent, task) cell must share one weight")
    cell = np.where(ok, per_cell, 0.0)
    tot = (cell * n).sum(1, keepdims=True)
    zero = ok.any(1) & (tot[:, 0] <= 0)
    if zero.any():
        raise HierbenchError(f"`weights`: the runs of agents {agents[zero].tolist()} weigh 0 in all; each agent's "
                             "weights are normalised to sum to one, so each needs a positive weight")  # fmt: skip
    return ratio(cell, tot, 0.0)


def _fit_logistic(x: np.ndarray, W1: np.ndarray, W0: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """``(intercept, slope)`` per row of ``W1`` / ``W0`` (weights of successes / failures at ``x``), and which converged.

    Weighted log-loss plus ``lam / 2 x slope^2``, by Newton steps (vectorised
    over agents), a row settling once its step is below 1e-9. Rows with no
    success or no failure weight: NaN. Without a penalty, a row whose
    outcomes are separated by length has no maximum: its slope is ``-inf``
    (every success on shorter tasks than every failure) or ``+inf`` (the
    reverse), not converged. A row whose Hessian turns singular or whose
    steps do not settle keeps where it stopped, marked not converged.
    """
    A = W1.shape[0]
    ok = (W1.sum(1) > 0) & (W0.sum(1) > 0)
    out, conv = np.full((A, 2), np.nan), np.zeros(A, bool)
    if lam == 0:
        sep = _separation(x, W1, W0)
        out[ok & (sep != 0), 1] = sep[ok & (sep != 0)] * np.inf
        ok &= sep == 0
    if not ok.any():
        return out, conv
    W1, W0 = W1[ok], W0[ok]
    Wn = W1 + W0
    m = W1.sum(1) / Wn.sum(1)
    th = np.column_stack([np.log(m / (1 - m)), np.zeros(ok.sum())])
    done, stuck = np.zeros(th.shape[0], bool), np.zeros(th.shape[0], bool)
    for _ in range(_NEWTON_STEPS):
        p = expit(th[:, :1] + th[:, 1:] * x[None, :])
        r = W1 - Wn * p
        w = Wn * p * (1 - p)
        g = np.column_stack([r.sum(1), (r * x).sum(1) - lam * th[:, 1]])
        h00, h01, h11 = w.sum(1), (w * x).sum(1), (w * x * x).sum(1) + lam
        det = h00 * h11 - h01**2
        stuck |= ~done & ~(det > 1e-12 * h00 * h11)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.column_stack([h11 * g[:, 0] - h01 * g[:, 1], h00 * g[:, 1] - h01 * g[:, 0]]) / det[:, None]
        step = np.where((done | stuck)[:, None], 0.0, np.clip(step, -5.0, 5.0))
        th = th + step
        done |= ~stuck & (np.max(np.abs(step), axis=1) < 1e-9)
        if np.all(done | stuck):
            break
    out[ok], conv[ok] = th, done & ~stuck
    return out, conv


def _separation(x: np.ndarray, W1: np.ndarray, W0: np.ndarray) -> np.ndarray:
    """Per row: -1 where every success is at a length at most every failure's, +1 the reverse, else 0.

    Such outcomes (complete or quasi-complete separation) have no
    unpenalised maximum-likelihood fit: the slope runs to ``-inf`` / ``+inf``.
    """
    s_lo, s_hi = np.where(W1 > 0, x, np.inf).min(1), np.where(W1 > 0, x, -np.inf).max(1)
    f_lo, f_hi = np.where(W0 > 0, x, np.inf).min(1), np.where(W0 > 0, x, -np.inf).max(1)
    return np.where(s_hi <= f_lo, -1, np.where(f_hi <= s_lo, 1, 0))


def _horizons(coef: np.ndarray, success: np.ndarray, x_short: np.ndarray) -> np.ndarray:
    """Minutes at each success probability, the limit (0 / inf) where the slope is not negative.

    The limit is ``inf`` where the line's success at ``x_short`` (per agent
    ``(A, 1)``, the ``log2`` minutes of the shortest task it ran) is at least p, else 0.
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = (np.log(success / (1 - success))[None, :] - coef[:, :1]) / coef[:, 1:]
        reaches = expit(coef[:, :1] + coef[:, 1:] * x_short) >= success[None, :]
    return horizon_or_limit(x, coef[:, 1:], reaches)


def _spread(x: np.ndarray, ran: np.ndarray) -> np.ndarray:
    """Per row of ``ran`` (agent, task): whether the tasks it ran have at least 2 distinct lengths."""
    return np.where(ran, x, np.inf).min(1) < np.where(ran, x, -np.inf).max(1)


def _resample(
    codes: np.ndarray | None, s: np.ndarray, n: np.ndarray, levels: set[str], gen: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One replicate: task indices drawn and run sums per (agent, draw).

    With ``"family"`` in ``levels`` the families (``codes``) are drawn, then
    (``"task"``) tasks within each drawn family. Without it (``codes`` None)
    ``"task"`` draws tasks from all the tasks of the data, families ignored,
    as METR's ``bootstrap_sample`` does over ``task_id``. ``"run"``: each
    drawn copy's runs are drawn again.
    """
    T = s.shape[1]
    if "family" in levels:
        F = codes.max() + 1
        members = [np.flatnonzero(codes == f) for f in range(F)]
        picks = [members[f][gen.integers(0, members[f].size, members[f].size)] if "task" in levels else members[f]
                 for f in gen.integers(0, F, F)]  # fmt: skip
        idx = np.concatenate(picks) if picks else np.zeros(0, np.intp)
    elif "task" in levels:
        idx = gen.integers(0, T, T)
    else:
        idx = np.arange(T)
    ss, nn = s[:, idx, :], n[:, idx]
    if "run" in levels:
        r = np.floor(gen.random(ss.shape) * nn[..., None]).astype(np.intp)
        r = np.minimum(r, ss.shape[-1] - 1)
        ss = np.take_along_axis(ss, r, axis=-1)
    valid = np.arange(ss.shape[-1])[None, None, :] < nn[..., None]
    return idx, np.where(valid, ss, 0.0).sum(-1)


def _checked(data: xr.Dataset, minutes: str, success: Sequence[float], levels: Sequence[str], n_resamples: int,
             regularization: float, fit_check: bool | int) -> tuple:
    """``log2`` minutes, the success levels, the levels set, ``n_resamples`` and the fit check's bins (0: none)."""
    n_resamples = check_int(n_resamples, "n_resamples", min=0)
    if not np.isfinite(regularization) or regularization < 0:
        raise HierbenchError(f"`regularization` must be >= 0; got {regularization!r}")
    x_min = task_minutes(data, minutes)
    succ = np.atleast_1d(np.asarray(success, dtype=float))
    if np.any((succ <= 0) | (succ >= 1)):
        raise HierbenchError(f"`success` probabilities must lie in (0, 1); got {succ.tolist()}")
    lv = set(levels)
    if not lv <= {"family", "task", "run"}:
        raise HierbenchError(f"`levels` must be a subset of ('family', 'task', 'run'); got {list(levels)}")
    if isinstance(fit_check, bool | np.bool_):
        bins = FIT_BINS if fit_check else 0
    elif isinstance(fit_check, int | np.integer) and fit_check >= 2:
        bins = int(fit_check)
    else:
        raise HierbenchError(f"`fit_check` must be True, False or a number of length bins >= 2; got {fit_check!r}")
    return np.log2(x_min), succ, lv, n_resamples, bins


def _fit_check(data, family, agents, arrays, coef, conv, lam, n_resamples, n_bins, rng) -> xr.Dataset | None:
    """The fit check's table (``hierbench.freq._horizon._fit``), None where ``n_bins`` is 0.

    ``arrays``: ``x``, ``n``, ``w_cell``, ``y``. Its replicates (none where
    ``n_resamples`` is 0: no p-value) draw from ``check_rng`` of ``rng``, which
    leaves ``rng``'s stream where it was.
    """
    if not n_bins:
        return None
    x, n, w_cell, y = arrays
    coef0, conv0 = _fit_logistic(x, w_cell * y, w_cell * (n - y), 0.0)
    nan = np.full_like(coef, np.nan)
    check = FitCheck(x, n, w_cell, y, np.where(conv[:, None], coef, nan), np.where(conv0[:, None], coef0, nan), n_bins)
    if n_resamples:
        codes, _ = cluster_codes(data, family, missing="singleton", name="family")
        check.replicate(codes, _fit_logistic, lam, n_resamples, check_rng(as_rng(rng)))
    return check.result(agents)


@fill_doc
def time_horizon(
    data: xr.Dataset,
    *,
    minutes: str = "human_minutes",
    success: Sequence[float] = (0.5, 0.8),
    weights: Any = "invsqrt",
    family: str = "cluster",
    regularization: float = METR_REGULARIZATION,
    n_resamples: int = 1000,
    levels: Sequence[str] = ("family", "task", "run"),
    prob: float = DEFAULT_PROB,
    rng: None | int | np.random.Generator = None,
    fit_check: bool | int = True,
) -> TimeHorizonResult:
    """Each agent's time horizon by METR's method, with hierarchical-bootstrap intervals.

    Parameters
    ----------
    data : xarray.Dataset
        An eval dataset (binary or partial-credit scores), task coords of human minutes and families.
    minutes : str
        The task coord of human completion time in minutes.
    success : sequence of float
        Success probabilities of the horizons (METR: 0.5 and 0.8).
    weights : {"invsqrt", "equal", None} or DataArray
        Run weights: METR's ``invsqrt_task_weight`` (:func:`metr_run_weights`), each task equal (``1 / n_at``),
        each run equal, or given per run (one per agent and task; normalised to sum to one per agent, as the
        penalty assumes).
    family : str
        The task coord naming task families (for the weights and the bootstrap).
    regularization : float
        L2 penalty on the slope (METR: 0.1); 0 for plain maximum likelihood.
    n_resamples : int
        Bootstrap replicates (METR: 1000); 0 for none (NaN intervals).
    levels : sequence of {"family", "task", "run"}
        What the bootstrap resamples, outer to inner (without ``"family"``,
        tasks are drawn from all the tasks, as METR's code does).
    %(prob)s
    rng : None, int or numpy.random.Generator
        Seeds the bootstrap.
    fit_check : bool or int
        Whether the curve fits each agent, by 4 (or this many) bins of task length (``fit_check``); False: no check.

    Returns
    -------
    TimeHorizonResult
        ``estimate`` (agent, success) in minutes, ``ci`` percentile intervals,
        ``n_undefined`` / ``n_skipped`` per agent, ``extrapolated``, ``fit_check``.

    Warns
    -----
    ExtremeHorizonWarning
        An agent that failed (succeeded on) every run: horizon 0 (infinite), interval [0, 0] ([inf, inf]).
    UndefinedWarning
        A fitted slope not negative, tasks of fewer than 2 lengths, or a fit
        that did not converge (separated outcomes without a penalty): NaN.
    ExtrapolatedHorizonWarning
        A horizon outside the lengths of the tasks the agent ran (marked in ``extrapolated``).
    SmallSampleWarning
        Few outer units: families worth < 20 equal ones, or < 10 tasks (also in ``ci_detail``).

    Notes
    -----
    A replicate in which an agent had one outcome or a slope not negative
    enters at the limit horizon (0, or infinite where success at the
    agent's shortest task is at least p), counted in ``n_undefined`` and
    ``ci_detail``. An extreme agent's interval, METR's, measures no
    uncertainty (warned). Coverage: :class:`TimeHorizonResult`'s ``ci``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> rng = np.random.default_rng(0)
    >>> mins = np.geomspace(1, 480, 40)
    >>> p = 1 / (1 + np.exp(-(3.0 - 0.6 * np.log2(mins))))
    >>> y = (rng.random((1, 40, 6)) < p[None, :, None]) * 1.0
    >>> ds = xr.Dataset({"score": (("agent", "task", "run"), y)},
    ...                 coords={"agent": ["a"], "task": [f"t{i}" for i in range(40)],
    ...                         "human_minutes": ("task", mins), "cluster": ("task", [f"f{i // 2}" for i in range(40)])})
    >>> res = time_horizon(ds, n_resamples=200, rng=1)
    >>> h = float(res.estimate.sel(agent="a", success=0.5))
    >>> bool(10 < h < 80)  # the true 50% horizon is 2 ** 5 = 32 minutes
    True
    """
    prob = check_prob(prob)
    x, succ, lv, n_resamples, n_bins = _checked(data, minutes, success, levels, n_resamples, regularization, fit_check)
    s, n = _packed(data)
    w_cell = _weights(data, weights, family, n)
    y = np.where(np.isfinite(s), s, 0.0).sum(-1)
    agents = np.asarray(data["agent"].values).astype(str)
    x_short, ranges = _own_lengths(x, n)
    coef, conv = _fit_logistic(x, w_cell * y, w_cell * (n - y), regularization)
    est = _point_horizons(agents, succ, coef, conv, (x, n, w_cell, y), x_short, ranges, regularization)
    boot = _bootstrap(data, family, s, n, x, w_cell, succ, regularization, n_resamples, lv, as_rng(rng), x_short)
    check = _fit_check(data, family, agents, (x, n, w_cell, y), coef, conv, regularization, n_resamples, n_bins, rng)
    few = _few_units(data, family, n, lv, prob) if n_resamples else ""
    # the tasks any agent ran: the agents' own ranges pooled
    lengths = [float(np.nanmin(ranges[:, 0])), float(np.nanmax(ranges[:, 1]))] if np.isfinite(ranges).any() else []
    settings = (weights, regularization, lengths, ranges, few)
    return with_counts_hash(_horizon_result(agents, succ, est, coef, boot, prob, lv, settings, check), data, rng)


def _own_lengths(x: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per agent, the ``log2`` minutes of the shortest task it ran ``(A, 1)`` and its tasks' minutes range ``(A, 2)``.

    NaN for an agent that ran no task. The limit rule (success at the
    shortest task) and the extrapolation flag read the agent's own tasks.
    """
    ran = n > 0
    with np.errstate(invalid="ignore"):
        lo, hi = np.where(ran, x, np.inf).min(1), np.where(ran, x, -np.inf).max(1)
    lo, hi = np.where(ran.any(1), lo, np.nan), np.where(ran.any(1), hi, np.nan)
    return lo[:, None], np.column_stack([2.0**lo, 2.0**hi])


def _point_horizons(agents, succ, coef, conv, arrays, x_short, ranges, lam) -> np.ndarray:
    """The point horizons ``(agent, success)``: limits for extreme agents, NaN where undefined; each case warned."""
    x, n, w_cell, y = arrays
    extreme = np.where((w_cell * y).sum(1) == 0, -1, np.where((w_cell * (n - y)).sum(1) == 0, 1, 0))
    est = _horizons(coef, succ, x_short)
    est[extreme < 0], est[extreme > 0] = 0.0, np.inf
    est[_undefined_agents(agents, coef, conv, extreme, _spread(x, n > 0), lam, (n > 0).any(1))] = np.nan
    if note := extrapolated_note(agents, succ, est, ranges):  # each agent's own task lengths
        warn_user(note, ExtrapolatedHorizonWarning)
    return est


def _few_units(data: xr.Dataset, family: str, n: np.ndarray, lv: set, prob: float) -> str:
    """The warning (given here) where the bootstrap's outer units are few, else ``""``.

    The outer unit is the task family when families are resampled (judged by their worth in
    equal families, ``effective_clusters``, against ``FEW_CLUSTERS``, as the cluster bootstrap
    is), else the task (against ``FEW_UNITS``); only tasks some agent ran count.
    """
    ran = (n > 0).any(0)
    if not ran.any() or not {"family", "task"} & lv:
        return ""
    codes = cluster_codes(data, family, missing="singleton", name="family")[0][ran] if "family" in lv else None
    few = few_units(codes, int(ran.sum()))
    if few is None:
        return ""
    text = few_units_text(few, f"task families (`{family}`)" if codes is not None else "tasks", prob, codes is not None)
    warn_user(text + ".", SmallSampleWarning)
    return text


def _undefined_agents(agents, coef, conv, extreme, spread, lam, ran) -> np.ndarray:
    """The agents without a horizon (estimate and interval NaN), each cause warned; extreme agents keep 0 / inf.

    ``ran`` (agent): whether the agent ran any task of the data.
    """
    for sign, what, end, other in ((-1, "failed every run (horizon 0)", "0", "a horizon above 0"),
                                   (1, "succeeded on every run (horizon infinite)", "inf", "a finite horizon")):
        if np.any((extreme == sign) & spread):
            warn_user(f"agents {agents[(extreme == sign) & spread].tolist()} {what}. Every bootstrap resample of "
                      f"their runs does too, so their interval is [{end}, {end}] by METR's convention: it measures no "
                      f"uncertainty (their runs do not rule out {other})", ExtremeHorizonWarning)
    causes = [
        (~ran, "ran no task of this data (estimate and interval NaN)"),
        (~spread & ran, "ran tasks of fewer than 2 distinct lengths: the slope, and so the horizon, is not "
                        "identified (estimate and interval NaN)"),
        (spread & (extreme == 0) & ~conv,
         f"have a fit that did not converge (regularization={lam:g}): where their successes and failures are "
         "separated by task length the likelihood has no maximum and the slope runs off to infinity; estimate and "
         "interval NaN. regularization > 0 (METR: 0.1) gives a horizon"),
        (spread & (extreme == 0) & conv & (coef[:, 1] >= 0),
         "succeed more often on longer tasks (slope >= 0): success never falls to p as tasks get longer, so this is "
         "not a horizon (estimate and interval NaN)"),
    ]  # fmt: skip
    for mask, why in causes:
        if mask.any():
            warn_user(f"agents {agents[mask].tolist()} {why}", UndefinedWarning)
    return np.logical_or.reduce([m for m, _ in causes])


def _bootstrap(data, family, s, n, x, w_cell, succ, lam, n_resamples, lv, gen, x_short) -> tuple:
    """Replicate horizons ``(resample, agent, success)``, with per agent the limit and the skipped counts."""
    codes = cluster_codes(data, family, missing="singleton", name="family")[0] if "family" in lv else None
    A = s.shape[0]
    out = np.full((n_resamples, A, succ.size), np.nan)
    n_limit, n_skip = np.zeros(A, int), np.zeros(A, int)
    for b in range(n_resamples):
        idx, sums = _resample(codes, s, n, lv, gen)
        nn, ww = n[:, idx], w_cell[:, idx]
        W1, W0 = ww * sums, ww * (nn - sums)
        coef, conv = _fit_logistic(x[idx], W1, W0, lam)
        h = _horizons(coef, succ, x_short)
        fail, win = (W1.sum(1) == 0) & (W0.sum(1) > 0), (W0.sum(1) == 0) & (W1.sum(1) > 0)
        h[fail], h[win] = 0.0, np.inf
        skip = ~_spread(x[idx], ww * nn > 0) | (~fail & ~win & ~conv & (coef[:, 1] < 0)) | ((W1 + W0).sum(1) == 0)
        h[skip] = np.nan
        n_limit += ~skip & (fail | win | (coef[:, 1] >= 0))
        n_skip += skip
        out[b] = h
    return out, n_limit, n_skip


def _horizon_result(agents, succ, est, coef, boot, prob, lv, settings, check=None) -> TimeHorizonResult:
    boot, n_limit, n_skip = boot
    weights, lam, lengths, ranges, few = settings
    n_resamples = boot.shape[0]
    coords = {"agent": agents, "success": succ}
    da = xr.DataArray(est, dims=("agent", "success"), coords=coords, name="estimate")
    da.attrs = {"units": "human minutes"}
    q = limit_quantiles(boot, [0.5 - prob / 2, 0.5 + prob / 2]) if n_resamples else np.full((2, *est.shape), np.nan)
    q[:, np.isnan(est)] = np.nan
    order = [lvl for lvl in ("family", "task", "run") if lvl in lv]

    def per_agent(c: np.ndarray) -> str:
        return ", ".join(f"{a} {int(k)}" for a, k in zip(agents, c, strict=True) if k) or "none"

    why, pinned_note = _limit_intervals(agents, est, q)
    ci = make_interval(q[0], q[1], prob=prob, kind="percentile", template=da, zero_width_why=why,
                       detail=f"hierarchical bootstrap over {_levels_text(order)}, {n_resamples} resamples "
                       f"(METR's method{_coverage_text(order)}); an agent with one outcome or a slope not negative in a resample enters it at the "
                       "limit horizon (0, or infinite where its fitted success at its shortest task is at least p): "
                       f"{per_agent(n_limit)} of {n_resamples}; left out (fewer than 2 task lengths, or a fit that did "
                       f"not converge with a negative slope): {per_agent(n_skip)}" + pinned_note
                       + (f"; {few}" if few else ""))  # fmt: skip
    by_agent = {"dims": "agent", "coords": {"agent": agents}}
    return TimeHorizonResult(
        estimate=da, ci=ci,
        coef=xr.DataArray(coef, dims=("agent", "param"), coords={"agent": agents, "param": ["intercept", "slope"]}),
        resamples=xr.DataArray(boot, dims=("resample", "agent", "success"), coords=coords, name="resamples"),
        options={"weights": weights if isinstance(weights, str | None) else "given (normalised per agent)",
                 "regularization": lam, "levels": order, "n_resamples": n_resamples, "minutes_range": lengths,
                 "agent_minutes_range": {a: r.tolist() for a, r in zip(agents, ranges, strict=True)}},
        n_undefined=xr.DataArray(n_limit, name="n_undefined", **by_agent),
        n_skipped=xr.DataArray(n_skip, name="n_skipped", **by_agent),
        extrapolated=xr.DataArray(outside_lengths(est, ranges), dims=("agent", "success"), coords=coords,
                                  name="extrapolated"),
        fit_check=check,
    )  # fmt: skip


def _limit_intervals(agents: np.ndarray, est: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, str]:
    """The intervals a limit horizon decides alone: per cell why (for ``make_interval``'s warning), a ci_detail note.

    An agent that failed (succeeded on) every run has every resample at 0
    (infinite): METR's code gives it the interval [0, 0] ([inf, inf]) and so
    does this one, said here. ``make_interval`` warns of the finite ones; the
    infinite ones are in the ``ExtremeHorizonWarning``.
    """
    with np.errstate(invalid="ignore"):
        flat = q[0] == q[1]
    pinned = flat & ((q[0] == 0) | np.isposinf(q[0]))
    why = np.where(pinned & (est == q[0]), "every resample at the limit horizon, as the estimate: METR's convention, "
                   "not a measured interval", np.where(pinned, "the resamples at the limit horizon decide both "
                                                        "bounds", "every resample gave this horizon"))  # fmt: skip
    if not pinned.any():
        return why, ""
    named = "; ".join(f"{', '.join(agents[pinned.any(1) & (q[0] == v).any(1)])} [{t}, {t}]"
                      for v, t in ((0.0, "0"), (np.inf, "inf")) if (pinned & (q[0] == v)).any())  # fmt: skip
    return why, (f"; not a measured interval (the limit horizon decides both bounds, METR's convention): "
                         f"{named}")


def _levels_text(order: list[str]) -> str:
    """What the bootstrap resampled, outer to inner."""
    if "task" in order and "family" not in order:
        return " > ".join(order) + " (tasks drawn from all the tasks, families ignored, as METR's code does)"
    return " > ".join(order)


def _coverage_text(order: list[str]) -> str:
    """The interval's coverage on METR's design where simulated (``time_horizon``'s Notes), else ``""``."""
    if order == ["family", "task", "run"]:
        return ("; conservative: it counts the within-family and run variation again at each level, and a nominal 95% "
                "interval covered 0.97-0.99 in simulations of METR's design")
    if order == ["task", "run"]:
        return ("; where a family's tasks share an effect it covers less, a nominal 95% interval "
                "0.91 in a simulation of METR's design")
    return ""


# --------------------------------------------------------------------------- trend


@fill_doc
def doubling_time(
    horizons: TimeHorizonResult,
    release_dates: Mapping[str, Any],
    *,
    success: float = 0.5,
    after: Any = "2019-01-01",
    frontier: bool = True,
    missing: str = "refuse",
    prob: float = DEFAULT_PROB,
) -> DoublingTimeResult:
    """How fast horizons grow: the doubling time of a log-linear trend over release dates.

    Parameters
    ----------
    horizons : TimeHorizonResult
        From :func:`time_horizon` (its bootstrap replicates give the interval).
    release_dates : mapping
        Agent -> release date (text such as ``"2024-05-13"``, a date or a
        timestamp); METR's ``{"date": {...}}`` layout is read too.
    success : float
        Which horizon (a value of ``horizons.estimate.success``).
    after : date-like or None
        Only agents released on or after this date (METR: 2019-01-01).
    frontier : bool
        Only agents that were state of the art when released (METR's choice).
    missing : {"refuse", "skip"}
        An agent without a release date: an error, or left out (listed in
        the result's ``agents_without_date``).
    %(prob)s

    Returns
    -------
    DoublingTimeResult
        ``estimate`` in days (the line through the point horizons) with a
        bootstrap percentile ``ci`` by METR's rule, and its counts.

    Warns
    -----
    ExtrapolatedHorizonWarning
        A horizon on the line lies beyond the task lengths run; or an agent
        the line would go through has a point horizon below 0.001 minutes
        and is left out of it (listed in ``agents_below_floor``).
    HierbenchWarning
        The estimate still lies outside its own interval (the replicates'
        horizons cross the 0.001-minute floor, or many are not kept): the
        warning names the agent the replicates dropped most often.

    Notes
    -----
    The interval is METR's bootstrap rule (``compute_bootstrap_confidence_region``
    in METR's analysis code): in each replicate, each trend agent whose
    horizon is NaN, infinite or below 0.001 minutes is left out, the line is
    fitted through the rest if at least 2 remain, and the doubling time is
    kept if positive; the interval is the percentiles of the kept ones.

    The point line follows the same rule: an agent whose point horizon is
    below 0.001 minutes (0.06 seconds, a value read off its slope far below
    any task a human times) is left out before the frontier is chosen.
    METR's own point line goes through it, and then the estimate is one
    its interval can exclude by construction: on METR's runs (2019+,
    default settings) gpt-3.5-turbo-instruct's 50% horizon of 1.8e-6
    minutes pulled the line to 44 days while the replicates, dropping it
    from about 85% of their lines, gave [71, 299]; without it the line
    gives 152 days (the 2023+ line, which never had it, the same).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from hierbench.freq import TimeHorizonResult, doubling_time
    >>> agents = ["a", "b", "c"]
    >>> h = xr.DataArray([[1.0], [2.0], [4.0]], dims=("agent", "success"),
    ...                  coords={"agent": agents, "success": [0.5]})
    >>> boot = xr.DataArray(np.tile(h.values, (10, 1, 1)), dims=("resample", "agent", "success"), coords=h.coords)
    >>> ci = h.expand_dims(ci_bound=["lower", "upper"], axis=-1)
    >>> res = TimeHorizonResult(estimate=h, ci=ci, coef=h, resamples=boot)
    >>> dt = doubling_time(res, {"a": "2024-01-01", "b": "2024-07-01", "c": "2024-12-30"})
    >>> round(float(dt.estimate)), dt.n_kept
    (182, 10)
    """
    if not isinstance(horizons, TimeHorizonResult):
        loaded = " (a result saved and loaded back keeps the horizons, not the resamples)" if isinstance(
            horizons, xr.Dataset) else ""  # fmt: skip
        raise TypeError(f"`horizons` must be the TimeHorizonResult of time_horizon; got {type(horizons).__name__}"
                        f"{loaded}: the interval of the doubling time refits the trend on each bootstrap "
                        "replicate of the horizons, so run time_horizon on the log again")  # fmt: skip
    prob = check_prob(prob)
    hz = horizons.estimate
    agents = np.asarray(hz["agent"].values).astype(str)
    pts, below = _floored_points(release_dates, agents, hz, success=success, missing=missing, after=after,
                                 only_frontier=frontier, lengths=horizons.options.get("minutes_range"))  # fmt: skip
    settle_trend(pts)
    j, days, h, use, absent = pts.column, pts.days, pts.horizons, pts.use, pts.absent
    slope = float(ols_slopes(days[use], np.log(h[use])))
    trend = bootstrap_doubling_times(days[use], horizons.resamples.values[:, use, j])
    return _doubling_result(slope, trend, agents[use], days[use], h[use], prob, (absent, below))


def _floored_points(release_dates, agents: np.ndarray, hz: xr.DataArray, **kw) -> tuple[TrendPoints, list[str]]:
    """The trend's points by the replicates' own rule: a horizon below ``MIN_TREND_HORIZON`` minutes stays off the line.

    Every replicate's line leaves out an agent whose horizon there is below
    the floor (``bootstrap_doubling_times``); the point line does the same
    with the point horizons, before the frontier is chosen, so that the
    estimate and its interval are one statistic. Returns the points (those
    agents not counted as ``unusable``: their horizon is positive) and the
    agents the floor took off the line, warned.
    """
    h = np.asarray(hz.values, dtype=float)
    low = np.isfinite(h) & (h > 0) & (h < MIN_TREND_HORIZON)
    pts = trend_points(release_dates, agents, hz["success"].values.tolist(), np.where(low, np.nan, h), **kw)
    if not pts.horizons.size:  # an input refusal: no column chosen
        return pts, []
    j = pts.column
    on = trend_agents(pts.days, h[:, j], after=kw["after"], only_frontier=kw["only_frontier"])
    cut = agents[on & low[:, j]].tolist()
    pts = pts._replace(unusable=[a for a in pts.unusable if a not in set(agents[low[:, j]])])
    if cut:
        lo = float(kw["lengths"][0]) if kw["lengths"] else np.nan
        shortest = f"; the shortest task measured takes {lo:g} minutes" if np.isfinite(lo) else ""
        read = ", read off the slope below every task run" if lo > MIN_TREND_HORIZON else ""
        which = ", ".join(f"{a} {h[agents == a, j][0]:.3g}" for a in cut)
        warn_user(f"agents {cut} have a {float(hz['success'][j]):g} horizon below {MIN_TREND_HORIZON:g} minutes "
                  f"({which} minutes{shortest}){read}. Each bootstrap replicate leaves such a horizon out of its "
                  "line (METR's rule), so the point line leaves them out too and the estimate follows the rule of "
                  "its interval (listed in agents_below_floor)", ExtrapolatedHorizonWarning)  # fmt: skip
    return pts, cut


def _doubling_result(slope, trend: BootstrapTrend, agents, days, h, prob, left) -> DoublingTimeResult:
    est = xr.DataArray(np.log(2.0) / slope, name="estimate", attrs={"units": "days"})
    q = limit_quantiles(trend.doubling, [0.5 - prob / 2, 0.5 + prob / 2])
    ci = make_interval(q[0], q[1], prob=prob, kind="percentile", warn_zero_width=False, detail=trend.detail)
    ci = ci.rename({"dim_0": "ci_bound"}) if "dim_0" in ci.dims else ci
    note = outside_interval_note(float(est), float(q[0]), float(q[1]), agents.tolist(), trend)
    if note:
        warn_user(note, HierbenchWarning)
    dates = [str(np.datetime64(int(d), "D")) for d in days]
    return DoublingTimeResult(
        estimate=est, ci=ci, slope=slope, agents=agents.tolist(), release_date=dates, horizon=h.tolist(),
        resamples=xr.DataArray(trend.doubling, dims="resample", name="resamples"),
        n_resamples_dropped=int((~trend.kept).sum()), agents_without_date=list(left[0]), n_kept=int(trend.kept.sum()),
        n_too_few=trend.n_too_few, n_nonpositive=trend.n_nonpositive, n_agent_dropped=trend.agent_dropped.tolist(),
        agents_below_floor=list(left[1]),
    )  # fmt: skip
