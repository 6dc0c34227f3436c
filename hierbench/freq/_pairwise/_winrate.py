"""Win rates and online Elo: the simplest summaries of pairwise battles.

Online Elo (:func:`online_elo`) is included to be shown for what it is: its
ratings depend on the order in which the battles arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import ClassVar

import numpy as np
import pandas as pd
import xarray as xr
from scipy import sparse

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import HierbenchWarning
from ..._base import ResampledResult
from ..._base import Result
from ..._base import UndefinedWarning
from ..._base import ZeroWidthIntervalWarning
from ..._base import as_rng
from ..._base import check_choice
from ..._base import check_int
from ..._base import check_number
from ..._base import check_prob
from ..._base import counted
from ..._base import interval_label
from ..._base import make_interval
from ..._base import warn_user
from ..._base import wrap_repr
from ..._docs import fill_doc
from ..._numerics import bounded_mean_bounds
from ...data import check_pairwise
from .._kernels import percentile_bounds
from .._kernels import ratio
from ._battles import _agent_codes
from ._battles import _battles
from ._battles import _few_tasks
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
        Percentile bootstrap interval, a resample in which the pair did not
        meet entering at 0 for the lower bound and 1 for the upper; NaN where
        the bootstrap cannot give one (a pair judged on one task, or with one
        win rate on every task) and, resampling battles, a distribution-free
        bound where every battle of the pair ended alike (``ci_kind`` per
        cell; ``"mixed"`` then).
    ci_kind : DataArray (agent, opponent)
        The kind of each cell's interval (``"percentile"``, ``"bounded-mean"``).
    average : DataArray (agent)
        Mean of the agent's win rates over the opponents it met (evalica's
        ``average_win_rate``).
    average_ci : DataArray (agent, ci_bound)
        Percentile bootstrap interval (a resample in which the agent met no
        one enters at 0, then 1), NaN where the resamples cannot move it.
    n_comparisons : DataArray (agent, opponent)
    n_undefined : DataArray (agent, opponent)
        Resamples in which the pair did not meet (its win rate undefined
        there): they count at the unfavourable end of each bound (0 for the
        lower, 1 for the upper), so the bound holds whatever the win rate
        there; more than ``(1 - prob) / 2`` of the resamples put it at 0 or 1.
    distribution : DataArray (resample, agent)
        Resampled ``average`` (NaN where the agent met no one).

    The repr summarises (agents by average win rate, best first; counts);
    ``to_frame()`` holds every (agent, opponent) cell.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    average: xr.DataArray
    average_ci: xr.DataArray
    n_comparisons: xr.DataArray
    n_undefined: xr.DataArray | None = None
    ci_kind: xr.DataArray | None = None
    attrs: dict = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """One row per (agent, opponent) cell; ``ci_kind`` names each row's interval."""
        df = super().to_frame()
        if self.ci_kind is not None:
            df = df.drop(columns="ci_kind")
            df["ci_kind"] = self.ci_kind.transpose(*self.estimate.dims).values.ravel()
        return df

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
        undefined = np.triu(met & np.isnan(self.ci.values).any(-1), 1).sum()
        # the interval's scheme; the rules for edge cases stay in ci_detail (the repr stays short)
        how, _, rules = str(self.ci.attrs.get("ci_detail", "")).partition(";")
        how += "; how a resample without the pair, or a pair that ended alike, is bounded: .ci.attrs['ci_detail']" * bool(rules)
        return [
            f"WinRateResult: {m} agents, {met_text}, "
            f"{round(float(np.triu(n, 1).sum()))} battles (ties count half a win)",
            *wrap_repr([f"  {interval_label(self.ci)} intervals: {how}"]),
            *([f"  no interval (NaN) for {undefined} of the {n_met} pairs met: see the warning"] if undefined else []),
            "  average win rate over the opponents met (evalica's average_win_rate), best first:",
            *_ranked_lines(self.average, self.average_ci, _number(3), extra),
            *wrap_repr([f"  each pair's win rate: .estimate, .ci, .to_frame() ({m} x {m}, NaN where the two never met)"]),
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


def _pair_units(b, unit: str, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Per pair (symmetric m x m): the resampling units that carry it, and whether they all give one value.

    The units are the tasks the pair met on (``unit="task"``) or its battles; a unit's
    value is the pair's win rate on it. Where every unit gives one value (or there is one
    unit) no resample can move the pair's win rate.
    """
    if unit == "battles":  # a battle's value is its outcome: read off the cell counts
        c = np.zeros((m * m, 3))
        lo, hi = np.minimum(b.ia, b.ib), np.maximum(b.ia, b.ib)
        oriented = np.where((b.ia < b.ib)[:, None], b.counts, b.counts[:, ::-1])
        np.add.at(c, lo * m + hi, oriented)
        n_units, same = c.sum(1), (c > 0).sum(1) == 1
    else:
        cell, cat = b.column // 3, b.column % 3
        a, o = b.ia[cell], b.ib[cell]
        score = np.where(a < o, 1.0 - 0.5 * cat, 0.5 * cat)  # the lower-index agent's score
        pair = np.minimum(a, o) * m + np.maximum(a, o)
        _, u = np.unique(np.asarray(b.task).astype(str), return_inverse=True)
        keys, inv = np.unique(pair * (int(u.max()) + 1) + u, return_inverse=True)
        value = np.bincount(inv, score) / np.bincount(inv)
        key_pair = keys // (int(u.max()) + 1)
        n_units = np.bincount(key_pair, minlength=m * m).astype(float)
        vmin, vmax = np.full(m * m, np.inf), np.full(m * m, -np.inf)
        np.minimum.at(vmin, key_pair, value)
        np.maximum.at(vmax, key_pair, value)
        same = vmin == vmax
    n_units, same = n_units.reshape(m, m), same.reshape(m, m)
    return n_units + n_units.T, same | same.T


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
        when ``pairs`` carries a ``task``, battles otherwise; tasks worth fewer
        than 20 equal ones are warned about and recorded in the attrs, as there.
    rng : None, int or Generator

    Returns
    -------
    WinRateResult
        Percentile-bootstrap intervals, where the bootstrap can give one.
        A resample in which a pair did not meet (its win rate undefined
        there) counts at the unfavourable end of each bound (0 for the lower,
        1 for the upper): a bound such resamples decide is 0 or 1, wide but
        valid. Where no resample can move a pair's
        win rate (a pair judged on one task, or with one win rate on every
        task) its interval is NaN; resampling battles, a pair whose battles
        all ended alike gets the distribution-free bound for the mean of
        independent [0, 1] scores instead (``ci_kind`` per cell). Each case
        is counted in a warning.

    Warns
    -----
    UndefinedWarning
        When some pairs (or averages) have no interval, with the count and
        the cause.

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
    dist, davg = _resampled_rates(b, unit, n_resamples, as_rng(rng))
    lo, hi, kind, why = _pair_intervals(b, unit, dist, pts, n, prob)
    alo, ahi, awhy = _average_intervals(davg, prob)
    coords = {"agent": b.agents, "opponent": b.agents}
    est = xr.DataArray(rate, dims=("agent", "opponent"), coords=coords, name="win_rate")
    est.attrs = {"quantity": "win rate", "scale": "probability", "units": "share of battles won, ties as half"}
    detail = f"bootstrap over {_unit_text(b, unit)}, {n_resamples} resamples"
    kinds = sorted(set(kind[n > 0])) or ["percentile"]
    ci = make_interval(lo, hi, prob=prob, kind=kinds[0] if len(kinds) == 1 else "mixed",
                       detail=detail + _PAIR_DETAIL[unit], template=est)  # fmt: skip
    average = xr.DataArray(
        avg,
        dims="agent",
        coords={"agent": b.agents},
        name="average_win_rate",
        attrs={**est.attrs, "quantity": "average win rate over the opponents met"},
    )
    average_ci = make_interval(
        alo, ahi, prob=prob, kind="percentile", detail=detail + _AVERAGE_DETAIL, template=average
    )
    _warn_win_rate(b, unit, why, awhy, n > 0, ci)
    few = _few_tasks(b, unit, prob, "; the win rates' intervals look surer than the data allow")
    ci.attrs.update(few)
    average_ci.attrs.update(few)
    return WinRateResult(
        estimate=est,
        ci=ci,
        average=average,
        average_ci=average_ci,
        n_comparisons=xr.DataArray(n, dims=("agent", "opponent"), coords=coords),
        n_undefined=xr.DataArray(np.isnan(dist).sum(0), dims=("agent", "opponent"), coords=coords),
        ci_kind=xr.DataArray(kind, dims=("agent", "opponent"), coords=coords, name="ci_kind"),
        distribution=xr.DataArray(davg, dims=("resample", "agent"), coords={"agent": b.agents}),
        attrs={"resample": unit, "resample_unit": _unit_text(b, unit), "n_resamples": n_resamples, **few},
    )


def _resampled_rates(b, unit: str, n_resamples: int, gen) -> tuple[np.ndarray, np.ndarray]:
    """Win rates (resample, agent, opponent) and average win rates (resample, agent) over the resamples.

    NaN where the pair did not meet (the agent met no one) in the resample.
    """
    m = len(b.agents)
    dists, dist_avg = [], []
    for blk in _resampled_counts(b, n_resamples, unit, gen):
        p_b, n_b = _win_matrix(blk, b.ia, b.ib, m)
        with np.errstate(invalid="ignore", divide="ignore"):
            dists.append(ratio(p_b, n_b))
        dist_avg.append(_average_rate(p_b, n_b))
    return np.concatenate(dists), np.concatenate(dist_avg)


#: how a resample without the pair (the agent) enters its bounds
_ABSENT = (
    "a resample in which {who} counts at the unfavourable end of each bound (0 for the lower, 1 for "
    "the upper), so the bound holds whatever the value there (n_undefined counts them; a bound they "
    "decide is 0 or 1)"
)


def _range_bounds(x: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bounds along axis 0 of resampled win rates, NaN (undefined) at 0 for the lower, 1 for the upper.

    A win rate lies in [0, 1], so those are its unfavourable ends: each bound holds
    whatever the undefined values were, and one they decide is 0 or 1, not NaN. A
    cell undefined in every resample (never met) has no bounds.
    """
    a = (1.0 - prob) / 2.0
    nan = np.isnan(x)
    lo = np.quantile(np.where(nan, 0.0, x), a, axis=0)
    hi = np.quantile(np.where(nan, 1.0, x), 1.0 - a, axis=0)
    never = nan.all(0)
    lo[never] = hi[never] = np.nan
    return lo, hi


#: how a pair's interval is made, after the bootstrap's ``ci_detail``, by bootstrap unit
_PAIR_DETAIL = {
    "task": f"; {_ABSENT.format(who='the pair did not meet')}; NaN where no resample can move the win "
    "rate (a pair judged on one task, or with one win rate on every task)",
    "battles": f"; {_ABSENT.format(who='the pair did not meet')}; where every battle of a pair ended "
    "alike, the distribution-free bound for the mean of independent [0, 1] scores instead (ci_kind "
    "'bounded-mean')",
}
_AVERAGE_DETAIL = (
    f"; {_ABSENT.format(who='the agent met no one')}; NaN where no resample moves the average"
)


def _pair_intervals(b, unit: str, dist: np.ndarray, pts: np.ndarray, n: np.ndarray, prob: float):
    """Each cell's bounds and kind, and why a pair met has no percentile interval (``""``: it has one).

    Reasons: ``"one task"``, ``"same"`` (one win rate on every task, or one outcome of
    every battle), ``"flat"`` (no resample moved it). Resampling tasks, these pairs have no interval (NaN);
    resampling battles, taken as independent, they get the distribution-free bound for
    the mean of independent [0, 1] scores (``kind`` ``"bounded-mean"``), which holds there.
    """
    m = n.shape[0]
    met = n > 0
    lo, hi = _range_bounds(dist, prob)
    n_units, same = _pair_units(b, unit, m)
    same &= met
    why = np.full((m, m), "", dtype=object)
    why[same] = np.where((n_units[same] == 1) & (unit == "task"), "one task", "same")
    why[met & (why == "") & (lo == hi)] = "flat"
    kind = np.full((m, m), "percentile", dtype=object)
    off = why != ""
    if unit == "task":
        lo[off] = hi[off] = np.nan
    else:
        lo[off], hi[off] = bounded_mean_bounds(pts[off], np.rint(n[off]).astype(np.int64), prob)
        kind[off] = "bounded-mean"
    return lo, hi, kind, why


def _average_intervals(davg: np.ndarray, prob: float):
    """The average win rates' bounds, and why an agent has none (``"flat"``, or ``""``)."""
    alo, ahi = _range_bounds(davg, prob)
    why = np.full(alo.shape, "", dtype=object)
    flat = alo == ahi
    why[flat], alo[flat], ahi[flat] = "flat", np.nan, np.nan
    return alo, ahi, why


def _warn_win_rate(b, unit: str, why: np.ndarray, awhy: np.ndarray, met: np.ndarray, ci) -> None:
    """Count the pairs (and averages) without a percentile interval, by cause, in one warning."""
    upper = np.triu(met, 1)
    count = {k: int((why[upper] == k).sum()) for k in ("one task", "same", "flat")}
    level = f"{100 * float(ci.attrs['ci_prob']):.4g}%"
    texts = {
        "one task": "judged on one task (a task bootstrap cannot move their win rate)",
        "same": "with one win rate on every task they met on (no resample can move it)" if unit == "task"
        else "that ended every battle alike (no resample can move their win rate)",
        "flat": "that no resample moved",
    }
    parts = [f"{count[k]} {t}" for k, t in texts.items() if count[k]]
    n_off = sum(count.values())
    msg = []
    if n_off and unit == "task":
        msg.append(f"the {level} percentile interval of the win rate is undefined (NaN) "
                   f"for {n_off} of the {int(upper.sum())} pairs met: {'; '.join(parts)}")  # fmt: skip
    elif n_off:
        msg.append(f"the {level} percentile interval of the win rate would be undefined or "
                   f"of no width for {n_off} of the {int(upper.sum())} pairs met: {'; '.join(parts)}. They "
                   "carry instead the distribution-free bound for the mean of independent [0, 1] scores, "
                   "which holds for battles taken as independent (ci_kind 'bounded-mean')")  # fmt: skip
    bad = [b.agents[i] for i in np.flatnonzero(awhy != "")]
    if bad:
        msg.append(f"The average win rate has no interval for {counted(len(bad), 'agent')} ({', '.join(map(repr, bad[:5]))}"
                   f"{', ...' if len(bad) > 5 else ''}): every resample gives one value")  # fmt: skip
    if not msg:
        return
    if unit == "task":  # every interval named above is NaN
        msg.append("Passing resample='battles' takes the battles as independent (an interval for each pair from its "
                   "own battles); hierbench.freq.fit_bradley_terry_ml pools the pairs through one ability "
                   "per agent")  # fmt: skip
    category = UndefinedWarning if (unit == "task" or bad) else ZeroWidthIntervalWarning
    warn_user("win_rate: " + ". ".join(msg), category)


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
    attrs : dict
        The settings, and ``outside_range`` (the agents whose rating in the
        order given lies outside their ``ci``) with ``outside_range_p``: the
        share of the orders, the given one among them, whose ratings lie at
        least as far from the orders' mean ratings (summed squared z-scores
        over the agents; a small value says the order given is atypical).

    The ranks in the repr are those of the ratings in the order given.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    by_order: xr.DataArray
    order_spread: xr.DataArray
    attrs: dict = field(default_factory=dict)
    _dataset_exclude: ClassVar[tuple[str, ...]] = ("by_order",)

    def _repr_lines(self) -> list[str]:
        """The ratings best first (ranked in the order given), each with its range over the random orders."""
        a = self.attrs
        out = set(a.get("outside_range", []))
        extra = None
        if a.get("n_orders"):
            extra = [f"  order spread {_number(0)(x)}" + ("; outside its range" if g in out else "")
                     for g, x in zip(self.estimate["agent"].values.tolist(), self.order_spread.values, strict=True)]  # fmt: skip
        return [
            f"EloResult: {len(self.estimate)} agents, ratings after {a.get('n_battles')} battles in "
            f"the order given (k = {a.get('k'):g}), in {self.estimate.attrs.get('units', '?')}",
            f"  {interval_label(self.ci)} range: {self.ci.attrs.get('ci_detail', '')}",
            "  ranked by the ratings in the order given; another order of the same battles moves them (order spread)",
            *_ranked_lines(self.estimate, self.ci, _number(0), extra),
            *([f"  {_outside_text(self.estimate.size, a['n_orders'], a, float(self.ci.attrs['ci_prob']))}"]
              if "outside_range_p" in a else []),
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
        (``by_order``). The ranks its repr shows are those of the order
        given; ``attrs["outside_range"]`` names the agents whose rating lies
        outside their range.

    Warns
    -----
    HierbenchWarning
        The order given is atypical: its ratings lie farther from the orders'
        mean ratings than random orders' do (a permutation p-value at most
        ``1 - prob``, ``attrs["outside_range_p"]``), naming the agents outside
        their range. For a random order given, ``P(p <= x) <= x``, near uniform
        (300 simulated logs of 6 agents, 300 battles, 99 orders, seed 3:
        P(p <= 0.05) = 0.037, SE 0.013; P(p <= 0.5) = 0.44, SE 0.029); no order
        is warned about with fewer than ``1 / (1 - prob) - 1`` orders (19 at 95%).

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
        raise HierbenchError("`pairs` must be a pairwise dataset (dim 'comparison'): Elo needs the battle order")
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
    orders = np.stack([np.arange(C), *(gen.permutation(C) for _ in range(n_orders))]).astype(np.int64)
    R = _replay(ia[orders], ib[orders], out[orders], m, k, initial, np.log(base) / scale)
    est = xr.DataArray(R[0], dims="agent", coords={"agent": agents}, name="elo", attrs=_elo_attrs(initial, scale, base))
    by = xr.DataArray(R[1:], dims=("order", "agent"), coords={"agent": agents})
    if n_orders:
        lo, hi = percentile_bounds(R[1:], prob)
        spread = R[1:].max(0) - R[1:].min(0)
    else:
        lo = hi = spread = np.full(m, np.nan)
    ci = make_interval(lo, hi, prob=prob, kind="percentile", template=est, warn_zero_width=False,
                       detail=f"spread of the ratings over {n_orders} random orders of the same battles (not a "
                       "sampling interval)")  # fmt: skip
    outside = _outside_range(R, prob, agents) if n_orders else {}
    return EloResult(
        estimate=est,
        ci=ci,
        by_order=by,
        order_spread=xr.DataArray(spread, dims="agent", coords={"agent": agents}),
        attrs={"k": float(k), "initial": initial, "scale": float(scale), "base": float(base),
               "n_orders": n_orders, "n_battles": C, **outside},
    )


def _order_distance(R: np.ndarray) -> np.ndarray:
    """Each order's (row of ``R``, order x agent) distance from the others: its summed squared z-scores.

    Each agent's ratings are standardised by their mean and sd over all the orders,
    the given one among them (an agent whose rating no order moves adds 0), so the
    statistic treats every order alike and, being continuous, hardly ever ties.
    """
    sd = R.std(0)
    z = np.divide(R - R.mean(0), sd, out=np.zeros_like(R), where=sd > 0)
    return (z * z).sum(1)


def _outside_range(R: np.ndarray, prob: float, agents: list[str]) -> dict:
    """The agents whose rating in the order given (row 0 of ``R``) lies outside the random orders' range, and how rare the order is.

    ``outside_range_p`` is a Monte Carlo permutation p-value: the share of all
    the orders, the given one among them, at least as far from the orders'
    mean ratings as the given one (``_order_distance``). As the statistic
    treats all orders alike, a given order that is itself random has
    ``P(p <= x) <= x``, near uniform (only exact ties, as when no order moves
    any rating, count against it). Where it is at most ``1 - prob`` the order
    given is atypical: warned, naming the agents outside their range (or, if
    none, the farthest), as their ratings and ranks are those of that order.
    """
    lo, hi = percentile_bounds(R[1:], prob)
    out = (R[0] < lo) | (R[0] > hi)
    dist = _order_distance(R)
    p = int((dist >= dist[0]).sum()) / R.shape[0]
    attrs = {"outside_range": [agents[i] for i in np.flatnonzero(out)], "outside_range_p": float(p)}
    if p <= 1.0 - prob:
        sd = R[1:].std(0)
        z = np.abs(R[0] - R[1:].mean(0)) / np.where(sd > 0, sd, np.inf)
        far = np.flatnonzero(out) if out.any() else np.argsort(-z, kind="stable")[:3]
        named = [f"{agents[i]} {R[0, i]:.0f} {'outside' if out[i] else 'in'} [{lo[i]:.0f}, {hi[i]:.0f}]" for i in far[:5]]
        more = f"; and {int(out.sum()) - len(named)} more" if out.sum() > len(named) else ""
        warn_user(f"online_elo: {_outside_text(R.shape[1], R.shape[0] - 1, attrs, prob)} ({'; '.join(named)}{more}). "
                  "The ratings and ranks reported are those of that order (battles grouped by task or by time give "
                  "such an order); by_order holds the ratings under random orders, and fit_bradley_terry_ml's do not "
                  "depend on the order", HierbenchWarning)  # fmt: skip
    return attrs


def _outside_text(m: int, n: int, attrs: dict, prob: float) -> str:
    """How many agents' ratings in the order given lie outside their range, and how many random orders lie as far."""
    k, p = len(attrs.get("outside_range", [])), attrs.get("outside_range_p", np.nan)
    verdict = "the order given is atypical" if p <= 1.0 - prob else "as a random order would"
    as_far = round(p * (n + 1)) - 1
    return (f"in the order given, {k} of {m} agents' ratings lie outside their {100 * prob:.4g}% range over the "
            f"random orders; {as_far} of the {n} random orders lie as far from the orders' mean ratings (summed "
            f"squared z-scores; p = {p:.2g}): {verdict}")
