"""Win rates and online Elo: the simplest summaries of pairwise battles.

Online Elo (:func:`online_elo`) is included to be shown for what it is: its
ratings depend on the order in which the battles arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import ClassVar

import numpy as np
import xarray as xr
from scipy import sparse

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import ResampledResult
from ..._base import Result
from ..._base import as_rng
from ..._base import check_choice
from ..._base import check_int
from ..._base import check_number
from ..._base import check_prob
from ..._base import counted
from ..._base import interval_label
from ..._base import make_interval
from ..._docs import fill_doc
from ...data import check_pairwise
from .._kernels import percentile_bounds
from .._kernels import ratio
from ._battles import _agent_codes
from ._battles import _battles
from ._battles import _resample_unit
from ._battles import _resampled_counts
from ._battles import _unit_text
from ._text import _number
from ._text import _ranked_lines

__all__ = ["EloResult", "WinRateResult", "online_elo", "win_rate"]


@dataclass(frozen=True, repr=False)
class WinRateResult(ResampledResult):
    """Result of :func:`win_rate`.

    Attributes
    ----------
    estimate : DataArray (agent, opponent)
        ``(wins + 0.5 * ties) / comparisons`` of ``agent`` against ``opponent``;
        NaN where the two never met.
    ci : DataArray (agent, opponent, ci_bound)
    average : DataArray (agent)
        Mean of the agent's win rates over the opponents it met (evalica's
        ``average_win_rate``).
    average_ci : DataArray (agent, ci_bound)
    n_comparisons : DataArray (agent, opponent)
    distribution : DataArray (resample, agent)
        Resampled ``average``.

    The repr summarises (agents by average win rate, best first; counts);
    ``to_frame()`` holds every (agent, opponent) cell.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    average: xr.DataArray
    average_ci: xr.DataArray
    n_comparisons: xr.DataArray
    attrs: dict = field(default_factory=dict)

    def _repr_lines(self) -> list[str]:
        """Counts, then the agents by average win rate, best first (no agent x opponent dump)."""
        n = self.n_comparisons.values
        m = n.shape[0]
        met = n > 0
        n_pairs, n_met = m * (m - 1) // 2, int(np.triu(met, 1).sum())
        opp = met.sum(1)
        extra = [f"  vs {counted(int(o), 'opponent')}, {counted(round(float(k)), 'battle')}" for o, k in zip(opp, n.sum(1), strict=True)]
        if n_pairs == 1:
            met_text = "the one pair met" if n_met else "the one pair never met"
        else:
            met_text = f"{n_met} of {n_pairs} pairs met"
        return [
            f"WinRateResult: {m} agents, {met_text}, "
            f"{round(float(np.triu(n, 1).sum()))} battles (ties count half a win)",
            f"  {interval_label(self.ci)} intervals: {self.ci.attrs.get('ci_detail', '')}",
            "  average win rate over the opponents met (evalica's average_win_rate), best first:",
            *_ranked_lines(self.average, self.average_ci, _number(3), extra),
            f"  every agent's win rate against every opponent: .estimate, .ci, .to_frame() ({m} x {m}, "
            "NaN where the two never met)",
        ]


def _win_matrix(
    counts: np.ndarray, ia: np.ndarray, ib: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """Win points and comparisons per (agent, opponent) from cell counts (..., K, 3)."""
    lead = counts.shape[:-2]
    c = counts.reshape(-1, *counts.shape[-2:])
    K = c.shape[1]
    idx = np.r_[ia * m + ib, ib * m + ia]
    M = sparse.csr_matrix((np.ones(2 * K), (np.arange(2 * K), idx)), shape=(2 * K, m * m))
    pts = np.concatenate([c[..., 0] + 0.5 * c[..., 1], c[..., 2] + 0.5 * c[..., 1]], axis=1)
    tot = c.sum(-1)
    n = np.concatenate([tot, tot], axis=1)
    pts_m = np.asarray((M.T @ pts.T).T).reshape(*lead, m, m)
    n_m = np.asarray((M.T @ n.T).T).reshape(*lead, m, m)
    return pts_m, n_m


def _average_rate(pts: np.ndarray, n: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = ratio(pts, n)
        met = (n > 0).sum(-1)
        return ratio(np.nansum(rate, -1), met)


def win_rate(
    pairs: xr.Dataset,
    *,
    prob: float = DEFAULT_PROB,
    n_resamples: int = 2000,
    resample: str = "auto",
    rng: None | int | np.random.Generator = None,
) -> WinRateResult:
    """Win rate of every agent against every opponent, ties counted as half a win.

    Parameters
    ----------
    pairs : Dataset
        A pairwise dataset (:func:`hierbench.data.read_battles`,
        :func:`hierbench.data.to_pairwise`) or pair counts.
    prob : float
        Interval level.
    n_resamples : int
        Bootstrap resamples.
    resample : {"auto", "task", "battles"}
        Bootstrap unit, as in :func:`fit_bradley_terry_ml`: by default tasks
        when ``pairs`` carries a ``task``, battles otherwise.
    rng : None, int or Generator

    Returns
    -------
    WinRateResult
        Percentile-bootstrap intervals.

    Examples
    --------
    >>> import pandas as pd
    >>> from hierbench.data import read_battles
    >>> df = pd.DataFrame({"left": ["A"] * 4, "right": ["B"] * 4,
    ...                    "winner": ["left", "left", "tie", "right"]})
    >>> r = win_rate(read_battles(df), n_resamples=200, rng=0)
    >>> float(r.estimate.sel(agent="A", opponent="B"))
    0.625
    """
    prob = check_prob(prob)
    n_resamples = check_int(n_resamples, "n_resamples", min=2)
    check_choice(resample, "resample", ["auto", "task", "battles"])
    b = _battles(pairs)
    unit = _resample_unit(b, resample)
    m = len(b.agents)
    pts, n = _win_matrix(b.counts, b.ia, b.ib, m)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = ratio(pts, n)
    avg = _average_rate(pts, n)
    gen = as_rng(rng)
    dists, dist_avg = [], []
    for blk in _resampled_counts(b, n_resamples, unit, gen):
        p_b, n_b = _win_matrix(blk, b.ia, b.ib, m)
        with np.errstate(invalid="ignore", divide="ignore"):
            dists.append(ratio(p_b, n_b))
        dist_avg.append(_average_rate(p_b, n_b))
    dist = np.concatenate(dists)
    davg = np.concatenate(dist_avg)
    lo, hi = percentile_bounds(dist, prob)
    alo, ahi = percentile_bounds(davg, prob)
    coords = {"agent": b.agents, "opponent": b.agents}
    est = xr.DataArray(rate, dims=("agent", "opponent"), coords=coords, name="win_rate")
    est.attrs = {"quantity": "win rate", "scale": "probability", "units": "share of battles won, ties as half"}
    detail = f"bootstrap over {_unit_text(b, unit)}, {n_resamples} resamples"
    ci = make_interval(lo, hi, prob=prob, kind="percentile", detail=detail, template=est)
    average = xr.DataArray(
        avg,
        dims="agent",
        coords={"agent": b.agents},
        name="average_win_rate",
        attrs={**est.attrs, "quantity": "average win rate over the opponents met"},
    )
    average_ci = make_interval(
        alo, ahi, prob=prob, kind="percentile", detail=detail, template=average
    )
    return WinRateResult(
        estimate=est,
        ci=ci,
        average=average,
        average_ci=average_ci,
        n_comparisons=xr.DataArray(n, dims=("agent", "opponent"), coords=coords),
        distribution=xr.DataArray(davg, dims=("resample", "agent"), coords={"agent": b.agents}),
        attrs={"resample": unit, "resample_unit": _unit_text(b, unit), "n_resamples": n_resamples},
    )


# --------------------------------------------------------------------------- online Elo


@dataclass(frozen=True, repr=False)
class EloResult(Result):
    """Result of :func:`online_elo`.

    Attributes
    ----------
    estimate : DataArray (agent)
        Ratings after the battles in the order given.
    ci : DataArray (agent, ci_bound)
        Central ``prob`` range of the ratings over ``n_orders`` random orders
        of the same battles (``ci_kind = "percentile"``; an order spread, not a
        sampling interval). NaN when ``n_orders = 0``.
    by_order : DataArray (order, agent)
        Ratings under each random order.
    order_spread : DataArray (agent)
        Max minus min rating over the orders: how much the order alone moves
        a rating (Bradley-Terry's is 0).
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    by_order: xr.DataArray
    order_spread: xr.DataArray
    attrs: dict = field(default_factory=dict)
    _dataset_exclude: ClassVar[tuple[str, ...]] = ("by_order",)

    def _repr_lines(self) -> list[str]:
        """The ratings best first, each with its range over the random orders."""
        a = self.attrs
        spread = self.order_spread.values
        extra = [f"  order spread {_number(0)(x)}" for x in spread] if a.get("n_orders") else None
        return [
            f"EloResult: {len(self.estimate)} agents, ratings after {a.get('n_battles')} battles in "
            f"the order given (k = {a.get('k'):g}), in {self.estimate.attrs.get('units', '?')}",
            f"  {interval_label(self.ci)} range: {self.ci.attrs.get('ci_detail', '')}",
            *_ranked_lines(self.estimate, self.ci, _number(0), extra),
        ]


def _replay(A, B, S, m: int, k: float, initial: float, lb: float) -> np.ndarray:
    """Elo ratings (order, agent) after the battles ``(A, B, S)[order, t]``, ``lb = ln(base) / scale``."""
    R = np.full((A.shape[0], m), float(initial))
    rows = np.arange(A.shape[0])
    for t in range(A.shape[1]):
        a, b_, s = A[:, t], B[:, t], S[:, t]
        e = 1.0 / (1.0 + np.exp(lb * (R[rows, b_] - R[rows, a])))
        delta = k * (s - e)
        R[rows, a] += delta
        R[rows, b_] -= delta
    return R


def _elo_attrs(initial: float, scale: float, base: float) -> dict:
    """What online Elo ratings are, on which scale (``"elo"``: 400 points per 10x odds)."""
    return {
        "quantity": "online Elo rating (depends on the battle order)",
        "scale": "elo" if (scale, base) == (400.0, 10.0) else f"elo ({scale:g} per {base:g}x odds)",
        "units": f"Elo points ({scale:g} per {base:g}x odds; start {initial:g})",
    }


@fill_doc
def online_elo(
    pairs: xr.Dataset,
    *,
    k: float = 4.0,
    initial: float = 1000.0,
    scale: float = 400.0,
    base: float = 10.0,
    n_orders: int = 100,
    prob: float = DEFAULT_PROB,
    rng: None | int | np.random.Generator = None,
) -> EloResult:
    """Online Elo ratings, and how much they move when the same battles arrive in another order.

    After each battle, ``R_a += k * (S_a - E_a)`` and ``R_b -= k * (S_a - E_a)``
    with ``E_a = 1 / (1 + base^((R_b - R_a) / scale))`` and ``S_a`` the
    outcome (1, 0.5, 0). Recent battles count more, so the final ratings
    depend on the order: for fixed artefacts (models) prefer
    :func:`fit_bradley_terry_ml`.

    Parameters
    ----------
    pairs : Dataset
        Pairwise dataset, in the order the battles happened.
    k, initial, scale, base : float
        Elo's K-factor, starting rating and scale.
    n_orders : int
        Random permutations of the battles to replay (0: none).
    prob : float
        Central share of the ratings over orders shown as ``ci``.
    %(rng)s

    Returns
    -------
    EloResult
        Ratings after the battles in the order given (``estimate``), their
        central range over ``n_orders`` random orders of the same battles
        (``ci``, with ``order_spread``) and the ratings under each order
        (``by_order``).

    Examples
    --------
    >>> import pandas as pd
    >>> from hierbench.data import read_battles
    >>> df = pd.DataFrame({"left": ["A", "B"], "right": ["B", "A"], "winner": ["left", "left"]})
    >>> r = online_elo(read_battles(df), k=32, n_orders=0)
    >>> r.estimate.round(2).values.tolist()
    [998.53, 1001.47]
    """
    if "comparison" not in pairs.dims:
        raise HierbenchError(
            "`pairs` must be a pairwise dataset (dim 'comparison'): Elo needs the battle order"
        )
    check_pairwise(pairs)
    if pairs.sizes["comparison"] == 0:
        raise HierbenchError("`pairs` holds no comparison: there is nothing to rate")
    for name, v in (("k", k), ("scale", scale)):
        check_number(v, name, low=0, low_open=True)
    check_number(base, "base", low=1, low_open=True)
    initial = check_number(initial, "initial")
    n_orders = check_int(n_orders, "n_orders", min=0)
    prob = check_prob(prob)
    agents = [str(x) for x in pairs["agent"].values]
    ia, ib = _agent_codes(pairs, agents)
    out = pairs["outcome"].values.astype(float)
    C, m = out.size, len(agents)
    gen = as_rng(rng)
    orders = np.empty((n_orders + 1, C), dtype=np.int64)
    orders[0] = np.arange(C)
    for o in range(1, n_orders + 1):
        orders[o] = gen.permutation(C)
    R = _replay(ia[orders], ib[orders], out[orders], m, k, initial, np.log(base) / scale)
    est = xr.DataArray(
        R[0], dims="agent", coords={"agent": agents}, name="elo", attrs=_elo_attrs(initial, scale, base)
    )
    by = xr.DataArray(R[1:], dims=("order", "agent"), coords={"agent": agents})
    if n_orders:
        lo, hi = percentile_bounds(R[1:], prob)
        spread = R[1:].max(0) - R[1:].min(0)
    else:
        lo = hi = spread = np.full(m, np.nan)
    ci = make_interval(
        lo,
        hi,
        prob=prob,
        kind="percentile",
        detail=f"spread of the ratings over {n_orders} random orders of the same battles (not a sampling interval)",
        template=est,
        warn_zero_width=False,
    )
    return EloResult(
        estimate=est,
        ci=ci,
        by_order=by,
        order_spread=xr.DataArray(spread, dims="agent", coords={"agent": agents}),
        attrs={"k": float(k), "initial": initial, "scale": float(scale), "base": float(base),
               "n_orders": n_orders, "n_battles": C},
    )
