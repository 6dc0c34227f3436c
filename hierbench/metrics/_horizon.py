"""Time horizons and their doubling time from a fit of :func:`hierbench.bayes.build_horizon`, draw by draw.

An agent's p horizon is the human task length at which its expected
success on a new task of that length is p. With the agent's intercept ``a``
and slope ``b`` per doubling (at a task of average difficulty) and the
other terms' total sd ``tau`` (tasks, task families, agent x task cells),
its success at ``log2`` length ``x`` is ``E[expit(a + b x + tau Z)]``
(the population rule), the counterpart of the marginal curve METR's
per-agent regression fits; so the horizon is ``2 ** ((eta_p - a) / b)``
minutes, with ``eta_p`` solving ``E[expit(eta_p + tau Z)] = p``. Each draw
gives one. In a draw whose slope is not negative success never falls to p
as tasks get longer: the draw enters at the limit horizon, infinite where
the agent's success at the shortest task of the design is at least p (so at
every length), else 0, and is counted (``n_undefined``); it is never dropped,
which would condition the posterior on the slope's sign.

The trend is METR's (:func:`hierbench.freq.doubling_time`): a least-squares
line of ``ln`` horizon on release date through the agents that were state of
the art when released (chosen with the posterior medians), refitted in every
draw by METR's bootstrap rule (agents below 0.001 minutes, at 0 or infinite
left out of that draw); the doubling time is ``ln 2 / slope``.
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

from .._base import DEFAULT_PROB
from .._base import DrawsResult
from .._base import ExtrapolatedHorizonWarning
from .._base import HierbenchError
from .._base import UndefinedWarning
from .._base import check_prob
from .._base import make_interval
from .._base import settle_trend
from .._base import warn_user
from .._docs import fill_doc
from .._numerics import bootstrap_doubling_times
from .._numerics import extrapolated_cells
from .._numerics import extrapolated_note
from .._numerics import horizon_or_limit
from .._numerics import limit_flags
from .._numerics import limit_quantiles
from .._numerics import outside_lengths
from .._numerics import trend_points
from ._mixed import as_design
from ._mixed import integrated_sd
from ._mixed import mixed_draws
from ._mixed import population_mean
from ._mixed import row_predictor

__all__ = ["PosteriorDoublingTimeResult", "PosteriorHorizonResult", "doubling_time", "time_horizon"]


@dataclass(frozen=True, repr=False)
class PosteriorHorizonResult(DrawsResult):
    """Posterior time horizons (:func:`time_horizon`).

    Posterior time horizons (:func:`time_horizon`): ``estimate`` (posterior median, minutes) and
    ``ci`` (equal-tailed) over ``(agent, success)``, as :class:`hierbench.freq.TimeHorizonResult`;
    ``draws(chain, draw, agent, success)``; ``n_undefined(agent)``: draws whose slope is not
    negative (at the limit horizon, 0 or infinite); ``minutes_range``: the shortest and longest
    task in the design (minutes); ``agent_minutes_range``: per agent (in ``estimate``'s order),
    those of the tasks it ran; ``extrapolated(agent, success)``: the estimate lies outside them.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    n_undefined: xr.DataArray
    minutes_range: list = field(default_factory=list)
    extrapolated: xr.DataArray | None = None
    agent_minutes_range: list = field(default_factory=list)

    _estimate_label: ClassVar[str] = "horizon in human minutes"
    _repr_floor: ClassVar[float | None] = 0.01  # a limit horizon (3.9e-110 minutes) reads "<0.01"

    def _cell_notes(self) -> xr.DataArray | None:
        """Which end of the agent's task lengths (``agent_minutes_range``) an extrapolated horizon passes."""
        if self.extrapolated is None:
            return None
        est = self.estimate
        own = self.agent_minutes_range
        return est.copy(data=extrapolated_cells(est.values, own if own else self.minutes_range)).rename(None)

    def _repr_lines(self) -> list[str]:
        lines = super()._repr_lines()
        d = self.draws.transpose("chain", "draw", "agent", ...).values
        return lines + limit_flags(self.n_undefined["agent"].values.tolist(), self.n_undefined.values,
                                   d.reshape(-1, *d.shape[2:]), float(self.ci.attrs.get("ci_prob", DEFAULT_PROB)),
                                   "slope not negative", "draws")  # fmt: skip


@dataclass(frozen=True, repr=False)
class PosteriorDoublingTimeResult(DrawsResult):
    """Posterior doubling time of the horizons in days (:func:`doubling_time`).

    The fields of :class:`hierbench.freq.DoublingTimeResult`: ``estimate`` (the posterior median
    of the doubling times the draws keep by METR's rule), ``ci``, the agents on the line with their
    release dates and median horizons, ``n_draws_dropped`` (draws not kept), ``n_kept``,
    ``n_too_few``, ``n_nonpositive`` and ``n_agent_dropped`` (per agent on the line, the draws
    that left it out); ``draws`` holds each draw's doubling time (NaN where not kept).
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    slope: float
    agents: list
    release_date: list
    horizon: list
    n_draws_dropped: int
    agents_without_date: list = field(default_factory=list)
    n_kept: int = 0
    n_too_few: int = 0
    n_nonpositive: int = 0
    n_agent_dropped: list = field(default_factory=list)

    _estimate_label: ClassVar[str] = "doubling time in days"

    def _cell_notes(self) -> xr.DataArray:
        """How many agents the line goes through (their names are ``agents``), as the frequentist repr says."""
        return xr.DataArray(f"line through {len(self.agents)} agents")


def _eta_at(tau: np.ndarray, p: float) -> np.ndarray:
    """Per draw, the ``eta`` with ``E[expit(eta + tau Z)] = p`` (bisection; the mean rises with eta)."""
    lo, hi = np.full(tau.shape, -60.0), np.full(tau.shape, 60.0)
    for _ in range(70):
        mid = 0.5 * (lo + hi)
        up = population_mean(mid, tau) < p
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    return 0.5 * (lo + hi)


def _agent_lines(dr: Any, design: Any, minutes: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per draw and agent: intercept ``a`` and slope ``b`` in log2 minutes; per draw the others' sd."""
    if design.family != "binomial" or minutes not in design.frame.columns:
        raise HierbenchError(
            f"`fit` must be a binary-score fit with the task covariate {minutes!r} (hierbench.bayes.build_horizon); "
            f"this one is {design.family} over {sorted(design.variables)}"
        )
    held = np.array([t.level == "agent" for t in design.random], bool)
    for t in design.random:
        if not t.intercept:
            raise HierbenchError(f"random slope ({t.name}): the horizon needs agent slopes as fixed effects")
    first = design.agent_rows()
    at = [design.matrix(design.frame.iloc[first].assign(**{minutes: float(v)})) for v in (0.0, 1.0, 2.0)]
    if not np.allclose(at[2] - at[1], at[1] - at[0]):
        raise HierbenchError(f"the formula {design.formula!r} is not linear in {minutes!r}")
    X = np.asarray(design.X)
    a = row_predictor(dr, design, at[0], np.arange(first.size), np.zeros(held.size, bool))
    a = a + (row_predictor(dr, design, X, first, held) - dr.beta @ X[first].T)
    b = dr.beta @ (at[1] - at[0]).T
    return a, b, integrated_sd(dr, design, first[:1], ~held)[:, 0]


@fill_doc
def time_horizon(
    fit: xr.DataTree,
    design: Any,
    *,
    success: Sequence[float] = (0.5, 0.8),
    prob: float = DEFAULT_PROB,
) -> PosteriorHorizonResult:
    """Each agent's time horizons in human minutes, with equal-tailed posterior intervals.

    Parameters
    ----------
    fit : xarray.DataTree
        A fit of :func:`hierbench.bayes.build_horizon`.
    design : ModelDesign or pymc.Model
        Its design (or the model).
    success : sequence of float
        Success probabilities (METR: 0.5 and 0.8).
    %(prob)s

    Returns
    -------
    PosteriorHorizonResult
        ``estimate(agent, success)``: the posterior median (a horizon's
        posterior is skewed on the minutes scale); ``ci``; ``draws``;
        ``n_undefined``; ``extrapolated``.

    Warns
    -----
    UndefinedWarning
        Draws whose slope is not negative: they enter at the limit horizon
        (0, or infinite where the agent's success at the shortest task is at
        least p), counted per agent; the repr flags an agent past
        ``(1 - prob) / 2`` of the draws (the limit then decides a bound).
    ExtrapolatedHorizonWarning
        A posterior median outside the lengths of the tasks the agent ran.
    """
    design, prob = as_design(design), check_prob(prob)
    succ = np.atleast_1d(np.asarray(success, dtype=float))
    if np.any((succ <= 0) | (succ >= 1)):
        raise HierbenchError(f"`success` probabilities must lie in (0, 1); got {succ.tolist()}")
    dr = mixed_draws(fit, design)
    minutes = "log2_minutes"
    a, b, tau = _agent_lines(dr, design, minutes)
    logs = design.frame[minutes].to_numpy(dtype=float)
    eta = np.stack([_eta_at(tau, p) for p in succ], axis=-1)[:, None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        x = (eta - a[..., None]) / b[..., None]
    h = horizon_or_limit(x, b[..., None], a[..., None] + b[..., None] * logs.min() >= eta)
    agents = [str(v) for v in np.asarray(design.agents)[np.unique(design.agent_index)]]
    limit = (b >= 0).sum(0)
    which = ", ".join(f"{g} {u}" for g, u in zip(agents, limit, strict=True) if u)
    if limit.any():
        warn_user(f"draws whose slope is not negative ({which} of {b.shape[0]}): success never falls to p there, so "
                  "they enter at the limit horizon (0, or infinite where the agent's success at the shortest task is "
                  "at least p), counted in n_undefined", UndefinedWarning)  # fmt: skip
    draws = dr.as_draws(h, ("agent", "success"), {"agent": agents, "success": succ}).rename("draws")
    q = limit_quantiles(h, [0.5, 0.5 - prob / 2, 0.5 + prob / 2])
    coords = {"agent": agents, "success": succ}
    est = xr.DataArray(q[0], dims=("agent", "success"), coords=coords, name="estimate",
                       attrs={"units": "human minutes", "estimate": "posterior median"})  # fmt: skip
    ci = make_interval(q[1], q[2], prob=prob, kind="eti", template=est, warn_zero_width=False,
                       detail="equal-tailed posterior interval over (chain, draw); a draw whose slope is not negative "
                       "enters at the limit horizon (0, or infinite where the agent's success at the shortest task is "
                       f"at least p): {which or 'none'} of {b.shape[0]}")  # fmt: skip
    lengths = [float(2.0 ** logs.min()), float(2.0 ** logs.max())]
    codes = np.unique(design.agent_index)
    own = np.array([[2.0 ** logs[design.agent_index == c].min(), 2.0 ** logs[design.agent_index == c].max()]
                    for c in codes])  # the lengths of the tasks each agent ran  # fmt: skip
    note = extrapolated_note(agents, succ, q[0], own)
    if note:
        warn_user(note, ExtrapolatedHorizonWarning)
    nu = xr.DataArray(limit, dims="agent", coords={"agent": agents}, name="n_undefined")
    out = xr.DataArray(outside_lengths(q[0], own), dims=("agent", "success"), coords=coords, name="extrapolated")
    return PosteriorHorizonResult(estimate=est, ci=ci, draws=draws, n_undefined=nu, minutes_range=lengths,
                                  extrapolated=out, agent_minutes_range=own.tolist())  # fmt: skip


def doubling_time(
    horizons: PosteriorHorizonResult,
    release_dates: Mapping[str, Any],
    *,
    success: float = 0.5,
    after: Any = "2019-01-01",
    frontier: bool = True,
    missing: str = "refuse",
    prob: float = DEFAULT_PROB,
) -> PosteriorDoublingTimeResult:
    """The doubling time of the horizons over release dates, draw by draw (METR's trend).

    Parameters are those of :func:`hierbench.freq.doubling_time`; the agents on
    the line are chosen with the posterior medians (as METR chooses them with
    its point estimates), and the line is refitted in every draw by METR's
    bootstrap rule: in each draw the agents whose horizon is NaN, infinite or
    below 0.001 minutes are left out, the line goes through the rest if at
    least 2 remain, and the doubling time is kept if positive.

    Returns
    -------
    PosteriorDoublingTimeResult
        ``estimate`` in days (the posterior median of the kept doubling
        times) with an equal-tailed ``ci`` of them, and the counts.

    Warns
    -----
    ExtrapolatedHorizonWarning
        A median horizon on the line lies beyond the design's task lengths.
    UndefinedWarning
        Dated agents whose posterior median horizon is 0, infinite or
        undefined, or whose horizon takes a limit value (0 or infinite: slope
        not negative) in more than ``(1 - prob) / 2`` of the draws: left out
        of the trend (METR's runs: davinci-002, which failed every run and
        whose slope the prior sets).
    """
    prob = check_prob(prob)
    hz = horizons.estimate
    agents = [str(a) for a in hz["agent"].values]
    n_draws = int(horizons.draws.sizes["chain"] * horizons.draws.sizes["draw"])
    limited = horizons.n_undefined.sel(agent=agents).values > (1.0 - prob) / 2.0 * n_draws
    h_all = np.where(limited[:, None], np.nan, hz.values)
    pts = trend_points(release_dates, agents, hz["success"].values.tolist(), h_all, success=success,
                       missing=missing, after=after, only_frontier=frontier, lengths=horizons.minutes_range)  # fmt: skip
    out = [a for a, lim in zip(agents, limited, strict=True) if lim and a in pts.unusable]
    if out:
        counts = ", ".join(f"{a} {int(horizons.n_undefined.sel(agent=a))}" for a in out)
        warn_user(f"agents {out} take a limit horizon (0 or infinite: slope not negative) in more than (1 - prob) / 2 "
                  f"of the draws ({counts} of {n_draws}): left out of the trend", UndefinedWarning)  # fmt: skip
        pts = pts._replace(unusable=[a for a in pts.unusable if a not in out])
    settle_trend(pts, by=" (by the posterior median)")
    j, days, h, use, absent = pts.column, pts.days, pts.horizons, pts.use, pts.absent
    d = horizons.draws.isel(success=j).transpose("chain", "draw", "agent").values[..., use]
    trend = bootstrap_doubling_times(days[use], d.reshape(-1, use.sum()))
    q = limit_quantiles(trend.doubling, [0.5, 0.5 - prob / 2, 0.5 + prob / 2])
    est = xr.DataArray(q[0], name="estimate", attrs={"units": "days", "estimate": "posterior median"})
    ci = make_interval(q[1], q[2], prob=prob, kind="eti", warn_zero_width=False,
                       detail="equal-tailed posterior interval of the kept doubling times; " + trend.detail)  # fmt: skip
    ci = ci.rename({"dim_0": "ci_bound"}) if "dim_0" in ci.dims else ci
    return PosteriorDoublingTimeResult(
        estimate=est, ci=ci, slope=float(np.log(2.0) / q[0]), agents=np.asarray(agents)[use].tolist(),
        release_date=[str(np.datetime64(int(x), "D")) for x in days[use]], horizon=h[use].tolist(),
        draws=xr.DataArray(trend.doubling, dims="draws_flat", name="draws"), n_draws_dropped=int((~trend.kept).sum()),
        agents_without_date=absent, n_kept=int(trend.kept.sum()), n_too_few=trend.n_too_few,
        n_nonpositive=trend.n_nonpositive, n_agent_dropped=trend.agent_dropped.tolist(),
    )  # fmt: skip
