"""Time horizons and their doubling time from a fit of :func:`hierbench.bayes.build_horizon`, draw by draw.

An agent's p horizon is the human task length at which its expected
success on a new task of that length is p. With the agent's intercept ``a``
and slope ``b`` per doubling (at a task of average difficulty) and the
other terms' total sd ``tau`` (tasks, task families, agent x task cells),
its success at ``log2`` length ``x`` is ``E[expit(a + b x + tau Z)]``
(the population rule), the counterpart of the marginal curve METR's
per-agent regression fits; so the horizon is ``2 ** ((eta_p - a) / b)``
minutes, with ``eta_p`` solving ``E[expit(eta_p + tau Z)] = p``. Each draw
gives one; a draw whose slope is not negative has no horizon (NaN, counted).

The trend is METR's (:func:`hierbench.freq.doubling_time`): a least-squares
line of ``ln`` horizon on release date through the agents that were state of
the art when released (chosen with the posterior medians), refitted in every
draw; the doubling time is ``ln 2 / slope``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np
import xarray as xr

from .._base import DEFAULT_PROB
from .._base import DrawsResult
from .._base import HierbenchError
from .._base import UndefinedWarning
from .._base import check_prob
from .._base import make_interval
from .._base import settle_trend
from .._base import warn_user
from .._docs import fill_doc
from .._numerics import ols_slopes
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
    ``draws(chain, draw, agent, success)``; ``n_undefined(agent)``: draws without a horizon;
    ``minutes_range``: the shortest and longest task in the design (minutes).
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    n_undefined: xr.DataArray
    minutes_range: list = field(default_factory=list)


@dataclass(frozen=True, repr=False)
class PosteriorDoublingTimeResult(DrawsResult):
    """Posterior doubling time of the horizons in days (:func:`doubling_time`).

    The fields of :class:`hierbench.freq.DoublingTimeResult`: ``estimate`` (posterior median),
    ``ci``, the agents on the line with their release dates and median horizons, and the draws
    left out.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    slope: float
    agents: list
    release_date: list
    horizon: list
    n_draws_dropped: int
    agents_without_date: list = field(default_factory=list)


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
        posterior is skewed on the minutes scale; the median is the draw-wise
        horizon of the median line); ``ci``; ``draws``.

    Warns
    -----
    UndefinedWarning
        Draws whose slope is not negative (no horizon there).
    """
    design, prob = as_design(design), check_prob(prob)
    succ = np.atleast_1d(np.asarray(success, dtype=float))
    if np.any((succ <= 0) | (succ >= 1)):
        raise HierbenchError(f"`success` probabilities must lie in (0, 1); got {succ.tolist()}")
    dr = mixed_draws(fit, design)
    minutes = "log2_minutes"
    a, b, tau = _agent_lines(dr, design, minutes)
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.stack([(_eta_at(tau, p)[:, None] - a) / b for p in succ], axis=-1)
    with np.errstate(over="ignore"):  # a nearly flat slope: a horizon beyond any length (inf)
        h = np.where((b < 0)[..., None], 2.0**x, np.nan)
    agents = [str(v) for v in np.asarray(design.agents)[np.unique(design.agent_index)]]
    undefined = (b >= 0).sum(0)
    if undefined.any():
        warn_user(f"agents {[g for g, u in zip(agents, undefined, strict=True) if u]} have draws whose slope is "
                      "not negative (no horizon there; left out of their intervals)", UndefinedWarning)  # fmt: skip
    draws = dr.as_draws(h, ("agent", "success"), {"agent": agents, "success": succ}).rename("draws")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        est = draws.median(("chain", "draw"), skipna=True).rename("estimate")
        q = draws.quantile([0.5 - prob / 2, 0.5 + prob / 2], dim=("chain", "draw"), skipna=True)
    est.attrs = {"units": "human minutes", "estimate": "posterior median"}
    ci = make_interval(q.isel(quantile=0, drop=True), q.isel(quantile=1, drop=True), prob=prob, kind="eti",
                       detail="equal-tailed posterior interval over (chain, draw); draws without a horizon left out",
                       warn_zero_width=False)  # fmt: skip
    nu = xr.DataArray(undefined, dims="agent", coords={"agent": agents}, name="n_undefined")
    lengths = 2.0 ** design.frame[minutes].to_numpy(dtype=float)
    return PosteriorHorizonResult(estimate=est, ci=ci, draws=draws, n_undefined=nu,
                                  minutes_range=[float(lengths.min()), float(lengths.max())])  # fmt: skip


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
    its point estimates), and the line is refitted in every draw.

    Returns
    -------
    PosteriorDoublingTimeResult
        ``estimate`` in days (the posterior median) with an equal-tailed ``ci``.

    Warns
    -----
    ExtrapolatedHorizonWarning
        A median horizon on the line lies beyond the design's task lengths.
    UndefinedWarning
        Dated agents whose posterior median horizon is 0, infinite or
        undefined: left out of the trend.
    """
    prob = check_prob(prob)
    hz = horizons.estimate
    agents = [str(a) for a in hz["agent"].values]
    pts = trend_points(release_dates, agents, hz["success"].values.tolist(), hz.values, success=success,
                       missing=missing, after=after, only_frontier=frontier, lengths=horizons.minutes_range)  # fmt: skip
    settle_trend(pts, by=" (by the posterior median)")
    j, days, h, use, absent = pts.column, pts.days, pts.horizons, pts.use, pts.absent
    d = horizons.draws.isel(success=j).transpose("chain", "draw", "agent").values[..., use]
    with np.errstate(divide="ignore", invalid="ignore"):  # a horizon of 0 or none: the draw is left out
        flat = np.log(d.reshape(-1, use.sum()))
    good = np.all(np.isfinite(flat), axis=1)
    slope = ols_slopes(days[use], flat[good])
    lo, hi = np.quantile(slope, [0.5 - prob / 2, 0.5 + prob / 2])
    est = xr.DataArray(np.log(2.0) / float(np.median(slope)), name="estimate", attrs={"units": "days", "estimate": "posterior median"})
    ci = make_interval(np.log(2.0) / hi, np.log(2.0) / lo if lo > 0 else np.inf, prob=prob, kind="eti", warn_zero_width=False,
                       detail=f"equal-tailed interval of ln 2 / slope over {int(good.sum())} of {good.size} draws (the slope's "
                       "quantiles mapped; a draw in which an agent on the trend has no positive horizon is left out)")  # fmt: skip
    ci = ci.rename({"dim_0": "ci_bound"}) if "dim_0" in ci.dims else ci
    full = np.full(good.size, np.nan)
    full[good] = np.log(2.0) / slope
    return PosteriorDoublingTimeResult(
        estimate=est, ci=ci, slope=float(np.median(slope)), agents=np.asarray(agents)[use].tolist(),
        release_date=[str(np.datetime64(int(x), "D")) for x in days[use]], horizon=h[use].tolist(),
        draws=xr.DataArray(full, dims="draws_flat", name="draws"), n_draws_dropped=int((~good).sum()),
        agents_without_date=absent,
    )  # fmt: skip
