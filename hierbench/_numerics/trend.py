"""Release-date trends of horizons (METR's doubling time).

Release-date trends of horizons (METR's doubling time), shared by :func:`hierbench.freq.doubling_time`
and its posterior counterpart :func:`hierbench.metrics.doubling_time`.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import NamedTuple

import numpy as np
import pandas as pd

__all__ = [
    "MIN_TREND_HORIZON", "BootstrapTrend", "TrendPoints", "beyond_lengths", "bootstrap_doubling_times",
    "extrapolated_cells", "extrapolated_note", "frontier", "horizon_or_limit", "limit_flags", "missing_dates", "ols_slopes",
    "outside_interval_note", "outside_lengths", "release_days", "trend_agents", "trend_inputs", "trend_points",
]


def _day(date: Any) -> float:
    """A date as days since 1970."""
    return float(pd.Timestamp(date).to_datetime64().astype("datetime64[D]").astype(np.int64))


def release_days(release_dates: Mapping[str, Any], agents: Sequence[Any]) -> tuple[np.ndarray, list[str]]:
    """Each agent's release date as days since 1970 (NaN where absent), and the absent agents.

    METR's ``release_dates.yaml`` layout (``{"date": {agent: date}}``) is read too.

    Examples
    --------
    >>> release_days({"date": {"a": "1970-01-11"}}, ["a", "b"])
    (array([10., nan]), ['b'])
    """
    have = _dated(release_dates)
    names = [str(a) for a in agents]
    days = np.array([_day(have[a]) if a in have else np.nan for a in names], dtype=float)
    return days, [a for a in names if a not in have]


def _dated(release_dates: Mapping[str, Any]) -> dict[str, Any]:
    """Agent -> date, from a plain mapping or METR's ``{"date": {agent: date}}`` layout."""
    if set(release_dates) == {"date"} and isinstance(release_dates["date"], Mapping):
        release_dates = release_dates["date"]
    return {str(k): v for k, v in release_dates.items()}


def missing_dates(release_dates: Mapping[str, Any], absent: Sequence[str]) -> str:
    """The refusal both doubling times give when agents have no release date (``missing='refuse'``).

    Examples
    --------
    >>> missing_dates({"date": {"a": "2024-01-01"}}, ["b"])[:61]
    "`release_dates` has no date for agents ['b'] (it names ['a'])"
    """
    return (
        f"`release_dates` has no date for agents {list(absent)} (it names {sorted(_dated(release_dates))}); "
        "add them, or pass missing='skip' to leave them out (counted in the result)"
    )


def trend_inputs(
    release_dates: Mapping[str, Any], agents: Sequence[Any], success_values: Sequence[float], *, success: float,
    missing: str,
) -> tuple[int, np.ndarray, list[str], str]:
    """The checked inputs of both doubling times: the horizon column, release days, undated agents, a refusal.

    ``refusal`` is the message the caller raises (empty when the inputs are
    usable): ``missing`` outside ``{"refuse", "skip"}``, ``success`` not one of
    the horizons' levels, or (``missing="refuse"``) agents without a date.

    Examples
    --------
    >>> j, days, absent, refusal = trend_inputs({"a": "1970-01-11"}, ["a", "b"], [0.5, 0.8], success=0.8,
    ...                                         missing="skip")
    >>> j, days.tolist(), absent, refusal
    (1, [10.0, nan], ['b'], '')
    >>> trend_inputs({"a": "1970-01-11"}, ["a"], [0.5], success=0.8, missing="skip")[3]
    "`success` must be one of the horizons' [0.5]; got 0.8"
    """
    if missing not in ("refuse", "skip"):
        return -1, np.array([]), [], f"`missing` must be 'refuse' or 'skip'; got {missing!r}"
    hit = np.flatnonzero(np.isclose(np.asarray(success_values, dtype=float), success))
    if not hit.size:
        return -1, np.array([]), [], f"`success` must be one of the horizons' {list(success_values)}; got {success!r}"
    days, absent = release_days(release_dates, agents)
    refusal = missing_dates(release_dates, absent) if absent and missing == "refuse" else ""
    return int(hit[0]), days, absent, refusal


def frontier(days: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Agents whose horizon is at least the largest of every agent released on or before their date.

    Examples
    --------
    >>> frontier(np.array([1.0, 2.0, 3.0]), np.array([5.0, 4.0, 6.0])).tolist()
    [True, False, True]
    """
    keep = np.zeros(days.size, bool)
    best = -np.inf
    for d in np.unique(days[np.isfinite(days)]):
        on = days == d
        best = max(best, float(np.max(h[on])))
        keep |= on & (h >= best)
    return keep


def beyond_lengths(agents: Sequence[Any], h: np.ndarray, lengths: Sequence[float] | None) -> str:
    """The notice for horizons on a trend outside the measured task lengths ``(shortest, longest)`` minutes.

    Empty when every horizon lies within them (or the lengths are unknown).
    Such a horizon is read off the agent's line beyond its data, so its value,
    and a doubling time through it, rest on the slope (and on any penalty or
    prior on it) rather than on runs at that length.

    Examples
    --------
    >>> beyond_lengths(["a", "b"], np.array([0.01, 30.0]), (1.0, 960.0))[:71]
    'the trend goes through horizons beyond the 1-960 minutes of the tasks m'
    >>> beyond_lengths(["a", "b"], np.array([2.0, 30.0]), (1.0, 960.0))
    ''
    """
    if lengths is None or len(lengths) != 2:
        return ""
    lo, hi = float(lengths[0]), float(lengths[1])
    out = (h < lo) | (h > hi)
    if not out.any():
        return ""
    which = ", ".join(f"{a} {v:.3g}" for a, v in zip(np.asarray(agents)[out], h[out], strict=True))
    return (f"the trend goes through horizons beyond the {lo:g}-{hi:g} minutes of the tasks measured ({which} minutes): "
            "extrapolations along each agent's slope, on which the doubling time then leans; `after=` a later date "
            "leaves them out")


def trend_agents(days: np.ndarray, h: np.ndarray, *, after: Any = None, only_frontier: bool = True) -> np.ndarray:
    """Which agents a release-date trend goes through, the one rule of both halves.

    An agent with a release date and a finite, positive horizon, released on or after
    ``after`` (when given) and, with ``only_frontier``, on the :func:`frontier`.

    Examples
    --------
    >>> trend_agents(np.array([1.0, 2.0, np.nan, 4.0]), np.array([5.0, 4.0, 9.0, 0.0])).tolist()
    [True, False, False, False]
    """
    use = np.isfinite(days) & np.isfinite(h) & (h > 0)
    if after is not None:
        use &= days >= _day(after)
    if only_frontier:
        use &= frontier(np.where(use, days, np.nan), np.where(use, h, -np.inf))
    return use


def ols_slopes(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slopes of each row of ``y`` on ``t`` (the trend of log horizons on days).

    Examples
    --------
    >>> ols_slopes(np.array([0.0, 1.0, 2.0]), np.array([[1.0, 3.0, 5.0], [0.0, 0.0, 0.0]])).tolist()
    [2.0, 0.0]
    """
    tc = t - t.mean()
    return ((y - y.mean(-1, keepdims=True)) * tc).sum(-1) / (tc**2).sum()


class TrendPoints(NamedTuple):
    """The agents a doubling time fits its line through (:func:`trend_points`)."""

    column: int  #: the horizons' column of the chosen success level
    days: np.ndarray  #: release day of every agent (NaN: undated)
    horizons: np.ndarray  #: every agent's horizon at that level (empty after an input refusal)
    use: np.ndarray  #: which agents the line goes through
    absent: list[str]  #: agents without a release date
    unusable: list[str]  #: dated agents whose horizon is 0, infinite or undefined (left out)
    refusal: str  #: the error the caller raises (empty: the line can be fitted)
    note: str  #: :func:`beyond_lengths`' notice (empty: none)

    @property
    def unusable_note(self) -> str:
        """The notice that ``unusable`` agents are left out of the trend (empty: none)."""
        if not self.unusable:
            return ""
        return f"agents {self.unusable} have a horizon of 0, infinite or undefined: left out of the trend"


def trend_points(
    release_dates: Mapping[str, Any], agents: Sequence[Any], success_values: Sequence[float], horizons: np.ndarray,
    *, success: float, missing: str, after: Any, only_frontier: bool, lengths: Sequence[float] | None,
) -> TrendPoints:
    """The checked inputs and the agents of both doubling times' trend, with their refusal and notices.

    ``horizons`` is (agent, success level). The inputs are checked by
    :func:`trend_inputs`, the agents chosen by :func:`trend_agents`; fewer
    than two agents on the line is a refusal too.

    Examples
    --------
    >>> pts = trend_points({"a": "1970-01-02", "b": "1970-01-03", "c": "1970-01-04"}, ["a", "b", "c"], [0.5],
    ...                    np.array([[1.0], [0.0], [4.0]]), success=0.5, missing="refuse", after=None,
    ...                    only_frontier=True, lengths=(1.0, 2.0))
    >>> pts.use.tolist(), pts.unusable, pts.refusal, pts.note[:41]
    ([True, False, True], ['b'], '', 'the trend goes through horizons beyond th')
    """
    names = np.asarray([str(a) for a in agents])
    j, days, absent, refusal = trend_inputs(release_dates, names, success_values, success=success, missing=missing)
    if refusal:
        return TrendPoints(j, days, np.array([]), np.zeros(names.size, bool), absent, [], refusal, "")
    h = np.asarray(horizons, dtype=float)[:, j]
    unusable = names[np.isfinite(days) & ~(np.isfinite(h) & (h > 0))].tolist()
    use = trend_agents(days, h, after=after, only_frontier=only_frontier)
    if use.sum() < 2:
        refusal = f"the trend needs at least 2 agents with a date and a positive horizon; got {names[use].tolist()}"
        return TrendPoints(j, days, h, use, absent, unusable, refusal, "")
    return TrendPoints(j, days, h, use, absent, unusable, "", beyond_lengths(names[use], h[use], lengths))


#: METR's floor on a horizon a bootstrap trend goes through (minutes): below it the agent is left out of that replicate
MIN_TREND_HORIZON = 1e-3


def horizon_or_limit(x: np.ndarray, slope: np.ndarray, reaches: np.ndarray) -> np.ndarray:
    """Minutes ``2 ** x`` where the slope is negative; elsewhere the limit horizon (the one convention of both halves).

    ``x`` is the ``log2`` length at which the line crosses success p,
    ``slope`` the line's slope per doubling and ``reaches`` whether the
    agent's fitted success at the shortest task length of the design is at
    least p. Where the slope is not negative success never falls to p as
    tasks get longer: the horizon is ``+inf`` where it is at least p at the
    shortest length (so at every length), else 0 (it does not reach p even
    there). A NaN slope stays NaN. All broadcast together.

    Examples
    --------
    >>> horizon_or_limit(np.array([3.0, 3.0, 3.0, 3.0]), np.array([-1.0, 0.5, 0.5, np.nan]),
    ...                  np.array([False, True, False, True])).tolist()
    [8.0, inf, 0.0, nan]
    """
    neg = slope < 0
    with np.errstate(over="ignore", invalid="ignore"):
        h = 2.0 ** np.where(neg, x, 0.0)
    return np.where(np.isnan(slope), np.nan, np.where(neg, h, np.where(reaches, np.inf, 0.0)))


def _ends(lengths: Any, shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray] | None:
    """The shortest and longest task of each horizon: one ``(shortest, longest)`` pair, or one row per agent ``(A, 2)``."""
    if lengths is None or len(lengths) == 0:
        return None
    L = np.asarray(lengths, dtype=float)
    if L.ndim == 1:
        return (np.full(shape, L[0]), np.full(shape, L[1])) if L.size == 2 else None
    lo, hi = L[:, 0].reshape((-1,) + (1,) * (len(shape) - 1)), L[:, 1].reshape((-1,) + (1,) * (len(shape) - 1))
    return np.broadcast_to(lo, shape), np.broadcast_to(hi, shape)


def outside_lengths(h: np.ndarray, lengths: Any) -> np.ndarray:
    """Which finite, positive horizons lie outside the task lengths (0 and inf are limits, not extrapolations).

    ``lengths``: ``(shortest, longest)`` for every horizon, or one such row per agent (the
    first axis of ``h``): the lengths of the tasks that agent ran.

    Examples
    --------
    >>> outside_lengths(np.array([0.5, 2.0, 0.0, np.inf, 9.0]), (1.0, 8.0)).tolist()
    [True, False, False, False, True]
    >>> outside_lengths(np.array([[0.5], [0.5]]), [[1.0, 8.0], [0.25, 8.0]]).tolist()
    [[True], [False]]
    """
    h = np.asarray(h, dtype=float)
    ends = _ends(lengths, h.shape)
    if ends is None:
        return np.zeros(h.shape, bool)
    fin = np.isfinite(h) & (h > 0)
    return fin & ((h < ends[0]) | (h > ends[1]))


def extrapolated_cells(h: np.ndarray, lengths: Any) -> np.ndarray:
    """Per horizon, the repr's note of an extrapolation (:func:`outside_lengths`): which end it passes; ``""`` inside.

    Examples
    --------
    >>> extrapolated_cells(np.array([0.5, 2.0, 0.0, 9.0]), (1.0, 8.0)).tolist()
    ['extrapolated: below the shortest task, 1 minute', '', '', 'extrapolated: beyond the longest task, 8 minutes']
    """
    h = np.asarray(h, dtype=float)
    out = np.full(h.shape, "", dtype=object)
    ends = _ends(lengths, h.shape)
    if ends is None:
        return out
    beyond = outside_lengths(h, lengths)
    for idx in zip(*np.nonzero(beyond), strict=True):
        lo, hi = float(ends[0][idx]), float(ends[1][idx])
        out[idx] = (f"extrapolated: below the shortest task, {lo:g} minute{'' if lo == 1 else 's'}" if h[idx] < lo
                    else f"extrapolated: beyond the longest task, {hi:g} minute{'' if hi == 1 else 's'}")  # fmt: skip
    return out


def extrapolated_note(agents: Sequence[Any], success: Sequence[float], h: np.ndarray, lengths: Any) -> str:
    """The notice both ``time_horizon`` functions give for horizons ``(agent, success)`` outside the task lengths.

    ``lengths`` as :func:`outside_lengths` takes them (one pair, or one row per agent: the
    tasks each agent ran). Empty when none is outside.

    Examples
    --------
    >>> print(extrapolated_note(["a", "b"], [0.5], np.array([[0.01], [3.0]]), (1.0, 960.0))[:82])
    agents ['a'] have horizons outside the 1-960 minutes of the tasks measured (a 0.01
    """
    out = outside_lengths(h, lengths)
    if not out.any():
        return ""
    names = np.asarray([str(a) for a in agents])
    L = np.asarray(lengths, dtype=float)
    if L.ndim == 1:
        which = "; ".join(f"{names[i]} {h[i, j]:.3g} at {float(success[j]):g}" for i, j in zip(*np.nonzero(out), strict=True))
        where = f"the {L[0]:g}-{L[1]:g} minutes of the tasks measured"
    else:
        which = "; ".join(f"{names[i]} {h[i, j]:.3g} at {float(success[j]):g}, its tasks {L[i, 0]:.4g}-{L[i, 1]:.4g} "
                          "minutes" for i, j in zip(*np.nonzero(out), strict=True))  # fmt: skip
        where = "the lengths of the tasks they ran"
    return (f"agents {names[out.any(1)].tolist()} have horizons outside {where} "
            f"({which}): each is read off the agent's fitted line beyond its data, so it rests on the slope (and on any "
            "penalty or prior on it) rather than on runs at that length")


class BootstrapTrend(NamedTuple):
    """Doubling times of bootstrap replicates or posterior draws by METR's rule (:func:`bootstrap_doubling_times`)."""

    doubling: np.ndarray  #: days per replicate, NaN where not kept
    kept: np.ndarray  #: which replicates are kept
    n_too_few: int  #: replicates with fewer than 2 agents left (or all left on one date)
    n_nonpositive: int  #: replicates whose doubling time is not positive
    agent_dropped: np.ndarray  #: per agent on the trend, the replicates that left it out

    @property
    def detail(self) -> str:
        """The rule in a sentence, with the counts (an interval's ``ci_detail``)."""
        n = self.kept.size
        return (f"METR's bootstrap rule: in each of {n} samples the agents whose horizon is NaN, infinite or below "
                f"{MIN_TREND_HORIZON:g} minutes are left out, the line is fitted through the rest if at least 2 remain "
                f"and its doubling time kept if positive; {int(self.kept.sum())} kept, {self.n_too_few} with fewer "
                f"than 2 agents, {self.n_nonpositive} with a doubling time <= 0")


def bootstrap_doubling_times(days: np.ndarray, samples: np.ndarray) -> BootstrapTrend:
    """METR's doubling time in every sample of the trend agents' horizons (the one owner of the rule).

    ``samples`` is ``(n, k)`` horizons in minutes of the ``k`` agents on the
    trend, released on ``days``. In each row (a bootstrap replicate or a
    posterior draw) the agents whose horizon is NaN, infinite or below
    ``MIN_TREND_HORIZON`` are dropped; with at least 2 left (on at least 2
    dates) the least-squares line of ``ln`` horizon on day is fitted through
    them and ``ln 2 / slope`` kept if positive (METR's
    ``compute_bootstrap_confidence_region``).

    Examples
    --------
    >>> r = bootstrap_doubling_times(np.array([0.0, 10.0, 20.0]),
    ...                              np.array([[1.0, 2.0, 4.0], [1e-6, 1.0, 2.0], [1.0, np.inf, 0.0], [4.0, 2.0, 1.0]]))
    >>> r.doubling.round(6).tolist(), r.n_too_few, r.n_nonpositive, r.agent_dropped.tolist()
    ([10.0, 10.0, nan, nan], 1, 1, [1, 1, 1])
    """
    days = np.asarray(days, dtype=float)
    x = np.asarray(samples, dtype=float)
    ok = np.isfinite(x) & (x >= MIN_TREND_HORIZON)
    m = ok.astype(float)
    cnt = m.sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.log(np.where(ok, x, 1.0))
        tc = (days[None, :] - (m * days).sum(1, keepdims=True) / cnt[:, None]) * m
        yc = (y - (m * y).sum(1, keepdims=True) / cnt[:, None]) * m
        sxx = (tc**2).sum(1)
        dt = np.log(2.0) / ((tc * yc).sum(1) / sxx)
    few = (cnt < 2) | ~(sxx > 0)
    kept = ~few & (dt > 0)
    return BootstrapTrend(np.where(kept, dt, np.nan), kept, int(few.sum()), int((~few & ~kept).sum()),
                          (~ok).sum(0))  # fmt: skip


def outside_interval_note(estimate: float, lo: float, hi: float, agents: Sequence[Any], trend: BootstrapTrend,
                          sample: str = "replicates") -> str:  # fmt: skip
    """The notice when a doubling time's point estimate lies outside its own interval (empty otherwise).

    It names the trend agent that the samples dropped most often: the point
    line goes through every agent, each sample's line only through those kept.

    Examples
    --------
    >>> t = bootstrap_doubling_times(np.array([0.0, 10.0, 20.0]), np.array([[1.0, 2.0, 4.0], [1e-6, 1.0, 2.0]]))
    >>> outside_interval_note(5.0, 10.0, 10.0, ["a", "b", "c"], t)[:60]
    'the doubling time 5 days lies outside its interval [10, 10]:'
    """
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= estimate <= hi:
        return ""
    n = trend.kept.size
    i = int(np.argmax(trend.agent_dropped))
    share = trend.agent_dropped[i] / n if n else 0.0
    return (f"the doubling time {estimate:.3g} days lies outside its interval [{lo:.3g}, {hi:.3g}]: the point line goes "
            f"through every trend agent, each sample's line only through the agents with a horizon of at least "
            f"{MIN_TREND_HORIZON:g} minutes there, and {agents[i]} was left out of {share:.0%} of the {n} {sample}")


def limit_flags(agents: Sequence[Any], n_limit: np.ndarray, values: np.ndarray, prob: float, reason: str,
                sample: str) -> list[str]:  # fmt: skip
    """A horizon result's repr lines for the agents at a limit (0 or inf) in more than ``(1 - prob) / 2`` of the samples.

    ``values`` is ``(n, agent, ...)``: the samples (to say which limit).
    Past that share a limit decides a bound of the interval.

    Examples
    --------
    >>> v = np.array([[0.0, 1.0], [0.0, 2.0], [3.0, 2.0]])
    >>> limit_flags(["a", "b"], np.array([2, 0]), v, 0.95, "slope not negative", "draws")
    ['  a: slope not negative in 2 of 3 draws; horizon 0 there']
    """
    out = []
    total = int(values.shape[0])
    for i, a in enumerate(agents):
        c = int(n_limit[i])
        if total and c > (1.0 - prob) / 2.0 * total:
            v = values[:, i]
            zero, inf = bool((v == 0).any()), bool(np.isposinf(v).any())
            side = "0 or infinite" if zero and inf else "infinite" if inf else "0"
            out.append(f"  {a}: {reason} in {c:,} of {total:,} {sample}; horizon {side} there")
    return out
