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
  replacement, then tasks within each drawn family, then runs within each
  (agent, task); duplicates count twice and the weights are not
  renormalised;
- the trend: an ordinary least-squares line of ``ln`` horizon on release
  date through the agents that were state of the art when released (a
  horizon at least the largest of every agent released on or before that
  date), released on or after 2019-01-01; the doubling time is
  ``ln 2 / slope`` and its interval the percentiles of the same line
  refitted to each bootstrap replicate's horizons.
"""

from __future__ import annotations

import warnings
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
from ..._base import Result
from ..._base import UndefinedWarning
from ..._base import as_rng
from ..._base import check_int
from ..._base import check_prob
from ..._base import cluster_codes
from ..._base import make_interval
from ..._base import settle_trend
from ..._base import warn_user
from ..._docs import fill_doc
from ..._numerics import ols_slopes
from ..._numerics import trend_points
from ...data import task_minutes
from .._kernels import ratio

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
        Hierarchical-bootstrap percentile intervals.
    coef : DataArray (agent, param)
        ``intercept`` and ``slope`` (per doubling of the task length).
    resamples : DataArray (resample, agent, success)
        Bootstrap horizons (NaN where a replicate left an agent with one outcome).
    options : dict
        The settings, and ``minutes_range``: the shortest and longest task
        run (minutes), beyond which a horizon is an extrapolation.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    coef: xr.DataArray
    resamples: xr.DataArray
    options: dict = field(default_factory=dict)

    _dataset_exclude: ClassVar[tuple[str, ...]] = ("resamples",)


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
    n_resamples_dropped : int
        Replicates with an agent's horizon 0, infinite or undefined (left out).
    agents_without_date : list of str
        Agents left out for want of a release date (``missing="skip"``).
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

    _dataset_exclude: ClassVar[tuple[str, ...]] = ("resamples",)


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
    codes, _ = cluster_codes(data, family, missing="singleton")
    ran = n > 0
    fam_size = np.stack([np.bincount(codes, ran[a].astype(float), minlength=codes.max() + 1)[codes]
                         for a in range(ran.shape[0])])  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore"):
        cell = np.where(ran, 1.0 / (n * np.sqrt(fam_size)), 0.0)
    cell = cell / (cell * n).sum(1, keepdims=True)
    raw = np.asarray(data["score"].transpose("agent", "task", "run").values, dtype=float)
    w = np.where(np.isfinite(raw), cell[..., None], np.nan)
    return xr.DataArray(w, dims=("agent", "task", "run"), coords=data["score"].transpose("agent", "task", "run").coords,
                        name="weight")  # fmt: skip


def _weights(data: xr.Dataset, weights: Any, family: str, n: np.ndarray) -> np.ndarray:
    """The weight of one run of each (agent, task) cell, ``(A, T)``."""
    if isinstance(weights, xr.DataArray):
        w = np.asarray(weights.transpose("agent", "task", "run").values, dtype=float)
        per_cell = np.nanmax(np.where(np.isfinite(w), w, -np.inf), axis=-1)
        spread = np.nanmin(np.where(np.isfinite(w), w, np.inf), axis=-1)
        ok = n > 0
        if np.any(ok & (np.abs(per_cell - spread) > 1e-12 * np.abs(per_cell))):
            raise HierbenchError("`weights`: runs of one (agent, task) cell must share one weight")
        return np.where(ok, per_cell, 0.0)
    if weights == "invsqrt":
        w = metr_run_weights(data, family=family).values
        return np.where(n > 0, np.nanmax(np.nan_to_num(w, nan=-1.0), axis=-1), 0.0)
    if weights == "equal" or weights is None:
        cell = ratio(1.0, n, 0.0) if weights == "equal" else (n > 0) * 1.0
        tot = (cell * n).sum(1, keepdims=True)
        return cell / tot
    raise HierbenchError(f"`weights` must be 'invsqrt', 'equal', None or a DataArray of run weights; got {weights!r}")


def _fit_logistic(x: np.ndarray, W1: np.ndarray, W0: np.ndarray, lam: float) -> np.ndarray:
    """``(intercept, slope)`` per row of ``W1`` / ``W0`` (weights of successes / failures at ``x``).

    Weighted log-loss plus ``lam / 2 x slope^2``, by Newton steps (vectorised
    over agents). Rows with no success or no failure weight: NaN.
    """
    A = W1.shape[0]
    ok = (W1.sum(1) > 0) & (W0.sum(1) > 0)
    out = np.full((A, 2), np.nan)
    if not ok.any():
        return out
    W1, W0 = W1[ok], W0[ok]
    Wn = W1 + W0
    m = W1.sum(1) / Wn.sum(1)
    th = np.column_stack([np.log(m / (1 - m)), np.zeros(ok.sum())])
    for _ in range(100):
        p = expit(th[:, :1] + th[:, 1:] * x[None, :])
        r = W1 - Wn * p
        w = Wn * p * (1 - p)
        g = np.column_stack([r.sum(1), (r * x).sum(1) - lam * th[:, 1]])
        h00, h01, h11 = w.sum(1), (w * x).sum(1), (w * x * x).sum(1) + lam
        det = h00 * h11 - h01**2
        step = np.column_stack([(h11 * g[:, 0] - h01 * g[:, 1]) / det, (h00 * g[:, 1] - h01 * g[:, 0]) / det])
        step = np.clip(step, -5.0, 5.0)
        th = th + step
        if np.max(np.abs(step)) < 1e-11:
            break
    out[ok] = th
    return out


def _horizons(coef: np.ndarray, success: np.ndarray, extreme: np.ndarray) -> np.ndarray:
    """Minutes at each success probability; ``extreme`` +1 / -1 marks all-success / all-failure rows."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        h = 2.0 ** ((np.log(success / (1 - success))[None, :] - coef[:, :1]) / coef[:, 1:])
    h[extreme < 0] = 0.0
    h[extreme > 0] = np.inf
    return h


def _resample(
    codes: np.ndarray, s: np.ndarray, n: np.ndarray, levels: set[str], gen: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One hierarchical replicate: task indices drawn (families, then tasks) and run sums per (agent, draw)."""
    T = codes.size
    if "family" in levels:
        fams = gen.integers(0, codes.max() + 1, codes.max() + 1)
    else:
        fams = np.arange(codes.max() + 1)
    members = [np.flatnonzero(codes == f) for f in range(codes.max() + 1)]
    picks = []
    for f in fams:
        mem = members[f]
        picks.append(mem[gen.integers(0, mem.size, mem.size)] if "task" in levels else mem)
    idx = np.concatenate(picks) if picks else np.zeros(0, np.intp)
    if "family" not in levels and "task" not in levels:
        idx = np.arange(T)
    ss, nn = s[:, idx, :], n[:, idx]
    if "run" in levels:
        r = np.floor(gen.random(ss.shape) * nn[..., None]).astype(np.intp)
        r = np.minimum(r, ss.shape[-1] - 1)
        ss = np.take_along_axis(ss, r, axis=-1)
    valid = np.arange(ss.shape[-1])[None, None, :] < nn[..., None]
    return idx, np.where(valid, ss, 0.0).sum(-1)


def _checked(data: xr.Dataset, minutes: str, success: Sequence[float], levels: Sequence[str]) -> tuple:
    x_min = task_minutes(data, minutes)
    succ = np.atleast_1d(np.asarray(success, dtype=float))
    if np.any((succ <= 0) | (succ >= 1)):
        raise HierbenchError(f"`success` probabilities must lie in (0, 1); got {succ.tolist()}")
    lv = set(levels)
    if not lv <= {"family", "task", "run"}:
        raise HierbenchError(f"`levels` must be a subset of ('family', 'task', 'run'); got {list(levels)}")
    return np.log2(x_min), succ, lv


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
) -> TimeHorizonResult:
    """Each agent's time horizon by METR's method, with hierarchical-bootstrap intervals.

    Parameters
    ----------
    data : xarray.Dataset
        An eval dataset (binary or partial-credit scores) with a task coord
        of human minutes and one of task families.
    minutes : str
        The task coord of human completion time in minutes.
    success : sequence of float
        Success probabilities of the horizons (METR: 0.5 and 0.8).
    weights : {"invsqrt", "equal", None} or DataArray
        Run weights: METR's ``invsqrt_task_weight`` (:func:`metr_run_weights`),
        each task equal (``1 / n_at``), each run equal, or given per run
        (normalised per agent as given).
    family : str
        The task coord naming task families (for the weights and the bootstrap).
    regularization : float
        L2 penalty on the slope (METR: 0.1); 0 for plain maximum likelihood.
    n_resamples : int
        Bootstrap replicates (METR: 1000); 0 for none (NaN intervals).
    levels : sequence of {"family", "task", "run"}
        What the bootstrap resamples, outer to inner.
    %(prob)s
    rng : None, int or numpy.random.Generator
        Seeds the bootstrap.

    Returns
    -------
    TimeHorizonResult
        ``estimate`` (agent, success) in minutes, ``ci`` percentile intervals.

    Warns
    -----
    ExtremeHorizonWarning
        An agent that failed (succeeded on) every run: horizon 0 (infinite).

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
    n_resamples = check_int(n_resamples, "n_resamples", min=0)
    if not np.isfinite(regularization) or regularization < 0:
        raise HierbenchError(f"`regularization` must be >= 0; got {regularization!r}")
    x, succ, lv = _checked(data, minutes, success, levels)
    s, n = _packed(data)
    w_cell = _weights(data, weights, family, n)
    y = np.where(np.isfinite(s), s, 0.0).sum(-1)
    agents = np.asarray(data["agent"].values).astype(str)
    coef = _fit_logistic(x, w_cell * y, w_cell * (n - y), regularization)
    extreme = np.where((w_cell * y).sum(1) == 0, -1, np.where((w_cell * (n - y)).sum(1) == 0, 1, 0))
    for sign, what in ((-1, "failed every run (horizon 0)"), (1, "succeeded on every run (horizon infinite)")):
        if np.any(extreme == sign):
            warn_user(f"agents {agents[extreme == sign].tolist()} {what}", ExtremeHorizonWarning)
    if np.any(coef[:, 1] >= 0):
        warn_user(
            f"agents {agents[coef[:, 1] >= 0].tolist()} succeed more often on longer tasks (slope >= 0): "
            "their horizon is not where success falls to p", UndefinedWarning,
        )  # fmt: skip
    est = _horizons(coef, succ, extreme)
    boot = _bootstrap(data, family, s, n, x, w_cell, succ, regularization, n_resamples, lv, as_rng(rng))
    res = _horizon_result(agents, succ, est, coef, boot, prob, n_resamples, lv, weights, regularization)
    ran = (n > 0).any(0)
    res.options["minutes_range"] = [float(2 ** x[ran].min()), float(2 ** x[ran].max())] if ran.any() else []
    return res


def _bootstrap(data, family, s, n, x, w_cell, succ, lam, n_resamples, lv, gen) -> np.ndarray:
    codes, _ = cluster_codes(data, family, missing="singleton")
    out = np.full((n_resamples, s.shape[0], succ.size), np.nan)
    for b in range(n_resamples):
        idx, sums = _resample(codes, s, n, lv, gen)
        nn, ww = n[:, idx], w_cell[:, idx]
        W1, W0 = ww * sums, ww * (nn - sums)
        out[b] = _horizons(_fit_logistic(x[idx], W1, W0, lam), succ, np.zeros(s.shape[0]))
    return out


def _horizon_result(agents, succ, est, coef, boot, prob, n_resamples, lv, weights, lam) -> TimeHorizonResult:
    coords = {"agent": agents, "success": succ}
    da = xr.DataArray(est, dims=("agent", "success"), coords=coords, name="estimate")
    da.attrs = {"units": "human minutes"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        q = np.nanquantile(boot, [0.5 - prob / 2, 0.5 + prob / 2], axis=0) if n_resamples else np.full((2, *est.shape), np.nan)
    order = [lvl for lvl in ("family", "task", "run") if lvl in lv]
    ci = make_interval(q[0], q[1], prob=prob, kind="percentile", template=da, warn_zero_width=False,
                       detail=f"hierarchical bootstrap over {' > '.join(order)}, {n_resamples} resamples "
                       "(METR's method; an agent left with one outcome in a resample is skipped there)")  # fmt: skip
    return TimeHorizonResult(
        estimate=da, ci=ci,
        coef=xr.DataArray(coef, dims=("agent", "param"), coords={"agent": agents, "param": ["intercept", "slope"]}),
        resamples=xr.DataArray(boot, dims=("resample", "agent", "success"), coords=coords, name="resamples"),
        options={"weights": weights if isinstance(weights, str | None) else "given", "regularization": lam,
                 "levels": order, "n_resamples": n_resamples},
    )  # fmt: skip


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
        ``estimate`` in days with a bootstrap percentile ``ci``.

    Warns
    -----
    ExtrapolatedHorizonWarning
        A horizon on the line lies beyond the task lengths run (METR's runs:
        gpt-3.5-turbo-instruct's, far below the shortest task, set by the
        slope penalty, halves the doubling time from 2019).

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
    >>> round(float(dt.estimate))
    182
    """
    prob = check_prob(prob)
    hz = horizons.estimate
    agents = np.asarray(hz["agent"].values).astype(str)
    pts = trend_points(release_dates, agents, hz["success"].values.tolist(), hz.values, success=success,
                       missing=missing, after=after, only_frontier=frontier, lengths=horizons.options.get("minutes_range"))  # fmt: skip
    settle_trend(pts)
    j, days, h, use, absent = pts.column, pts.days, pts.horizons, pts.use, pts.absent
    slope = float(ols_slopes(days[use], np.log(h[use])))
    boot = horizons.resamples.values[:, use, j]
    good = np.all(np.isfinite(boot) & (boot > 0), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        bd = np.log(2.0) / ols_slopes(days[use], np.log(np.where(good[:, None], boot, 1.0))[good])
    return _doubling_result(slope, bd, good, agents[use], days[use], h[use], prob, absent)


def _doubling_result(slope, bd, good, agents, days, h, prob, absent) -> DoublingTimeResult:
    est = xr.DataArray(np.log(2.0) / slope, name="estimate", attrs={"units": "days"})
    if bd.size:
        q = np.quantile(bd, [0.5 - prob / 2, 0.5 + prob / 2])
    else:
        q = np.array([np.nan, np.nan])
    ci = make_interval(q[0], q[1], prob=prob, kind="percentile", warn_zero_width=False,
                       detail=f"the trend refitted to each of {int(good.sum())} bootstrap replicates of the horizons")  # fmt: skip
    ci = ci.rename({"dim_0": "ci_bound"}) if "dim_0" in ci.dims else ci
    dates = [str(np.datetime64(int(d), "D")) for d in days]
    return DoublingTimeResult(
        estimate=est, ci=ci, slope=slope, agents=agents.tolist(), release_date=dates, horizon=h.tolist(),
        resamples=xr.DataArray(bd, dims="resample", name="resamples"),
        n_resamples_dropped=int((~good).sum()), agents_without_date=list(absent),
    )  # fmt: skip
