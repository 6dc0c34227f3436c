"""Pairwise (head-to-head) data, frequentist side: win rates, position bias, Elo, Bradley-Terry ML.

The counterpart of :func:`hierbench.bayes.build_bradley_terry`, with the same
model. For an ordered pair (a, b), ``a`` in the first position (left, shown
first, home), ``d = ability_a - ability_b (+ home)`` and

* ``ties="davidson"`` (Davidson 1970): ``P(a) = e^{d/2} / Z``, ``P(tie) = nu / Z``,
  ``P(b) = e^{-d/2} / Z`` with ``Z = e^{d/2} + nu + e^{-d/2}``;
* ``ties="half"``: a tie counts as half a win for each side in the logistic
  likelihood ``P(a) = 1 / (1 + e^{-d})`` (LMArena's and evalica's convention);
* ``ties="none"``: the logistic model; ties are refused.

The log-likelihood is an exponential family in ``(d, log nu)``, hence jointly
concave in the abilities, ``home`` and ``log nu``. It is maximised by the
minorise-maximise (MM) iteration of Hunter (2004) (Zermelo's iteration; with
the home-advantage update of Hunter's section 3) followed by Newton steps on
the concave log-likelihood, which converge quadratically (``method="newton"``,
the default), or by MM alone (``method="mm"``, no Davidson ties). A finite
maximum exists exactly when the "beat or tied" graph of the agents is strongly
connected (Ford 1957; Hunter 2004, Assumption 1); otherwise the abilities are
NaN with a :class:`NoFiniteMLEWarning` naming the agents concerned.

Intervals come from a bootstrap over battles, or over tasks (prompts) with
every battle of a drawn task (``resample="task"``): battles on one prompt are
not independent. Rank intervals come from the same resamples.

Online Elo (:func:`online_elo`) is included to be shown for what it is: its
ratings depend on the order in which the battles arrive.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd
import xarray as xr
from scipy import sparse
from scipy.sparse.csgraph import connected_components
from scipy.special import expit, log_expit, ndtri
from scipy.stats import norm

from ..._base import (
    DEFAULT_PROB,
    BoundaryWarning,
    HierbenchError,
    NotConvergedWarning,
    Result,
    UndefinedMetricWarning,
    as_rng,
    check_choice,
    check_int,
    check_prob,
    make_interval,
)
from ..._numerics import wilson_bounds
from ...data import _pairwise_dataset, check_pairwise
from .._kernels import weight_blocks
from .._profiles._common import check_number, percentile_bounds

__all__ = [
    "ELO_PER_LOGIT",
    "BradleyTerryMLResult",
    "EloResult",
    "NoFiniteMLEWarning",
    "PositionConsistencyResult",
    "WinRateResult",
    "bradley_terry_ml",
    "online_elo",
    "position_consistency",
    "win_rate",
]

#: Elo points per logit: 400 points are 10x odds.
ELO_PER_LOGIT = 400.0 / np.log(10.0)

_CHUNK = 2**21  # elements of the largest weight block drawn at once


class NoFiniteMLEWarning(BoundaryWarning):
    """The Bradley-Terry likelihood has no finite maximum (the comparison graph is not strongly connected)."""


# --------------------------------------------------------------------------- inputs


@dataclass
class _Battles:
    """Battles reduced to ordered-pair cells, plus the map from battles to (cell, outcome)."""

    agents: list[str]
    ia: np.ndarray  # (K,) first agent of each cell
    ib: np.ndarray  # (K,)
    counts: np.ndarray  # (K, 3) wins of a, ties, wins of b
    first_position: bool
    column: np.ndarray | None  # (C,) index cell * 3 + outcome of each battle, None for counts input
    task: np.ndarray | None  # (C,) task label of each battle


def _battles(pairs: xr.Dataset) -> _Battles:
    """Read a pairwise dataset (dim ``comparison``) or a pair-counts dataset (dim ``pair``)."""
    if not isinstance(pairs, xr.Dataset):
        raise TypeError(
            f"`pairs` must be a pairwise dataset (dim 'comparison') or pair counts (dim 'pair'); "
            f"got {type(pairs).__name__}"
        )
    n = pairs.sizes.get("comparison", pairs.sizes.get("pair"))
    if n == 0:
        raise HierbenchError("`pairs` holds no comparison: there is nothing to rate")
    if "comparison" in pairs.dims:
        fast = _fast_codes(pairs)
        if fast is None:  # something is off: the canonical validator names it
            check_pairwise(pairs)
            raise HierbenchError("`pairs` is not a valid pairwise dataset")  # pragma: no cover
        agents, ia, ib = fast
        out = pairs["outcome"].values.astype(float)
        first = "position" in pairs
        flip = pairs["position"].values == -1 if first else ia > ib
        ia, ib = np.where(flip, ib, ia), np.where(flip, ia, ib)
        out = np.where(flip, 1.0 - out, out)
        m = len(agents)
        uniq, inv = np.unique(ia * m + ib, return_inverse=True)
        cat = np.where(out == 1.0, 0, np.where(out == 0.5, 1, 2))
        column = inv * 3 + cat
        counts = np.bincount(column, minlength=3 * uniq.size).reshape(-1, 3).astype(float)
        task = pairs["task"].values if "task" in pairs else None
        return _Battles(agents, uniq // m, uniq % m, counts, first, column, task)
    if "pair" in pairs.dims and {"n_win_a", "n_tie", "n_win_b"} <= set(pairs.data_vars):
        agents = [str(x) for x in pairs["agent"].values]
        index = {a: i for i, a in enumerate(agents)}
        ia = np.array([index[str(x)] for x in pairs["agent_a"].values], dtype=np.int64)
        ib = np.array([index[str(x)] for x in pairs["agent_b"].values], dtype=np.int64)
        counts = np.stack(
            [pairs[v].values.astype(float) for v in ("n_win_a", "n_tie", "n_win_b")], axis=1
        )
        if (counts < 0).any() or not np.isfinite(counts).all():
            raise HierbenchError("`pairs`: counts must be finite and non-negative")
        first = bool(int(pairs.attrs.get("first_position", 0)))
        return _Battles(agents, ia, ib, counts, first, None, None)
    raise HierbenchError(
        "`pairs` must be a pairwise dataset (dim 'comparison', from read_battles / to_pairwise) "
        f"or pair counts (dim 'pair', from to_pair_counts / from_pair_counts); got dims "
        f"{dict(pairs.sizes)} and variables {list(pairs.data_vars)}"
    )


def _fast_codes(pairs: xr.Dataset) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """Agents and the codes of ``agent_a`` / ``agent_b``, checking the pairwise rules vectorised.

    Returns None when any rule of :func:`hierbench.data.check_pairwise` may be
    broken; the caller then runs that validator, whose message names the problem.
    """
    for v in ("agent_a", "agent_b", "outcome"):
        if v not in pairs or pairs[v].dims != ("comparison",):
            return None
    out = pairs["outcome"].values
    if out.dtype.kind not in "fiu" or not np.isin(out, (0.0, 0.5, 1.0)).all():
        return None
    if "position" in pairs and not np.isin(pairs["position"].values, (1, -1)).all():
        return None
    n = pairs.sizes["comparison"]
    codes, uniq = pd.factorize(np.concatenate([pairs["agent_a"].values, pairs["agent_b"].values]))
    names = [str(u) for u in uniq]
    if "agent" in pairs.coords:
        agents = [str(x) for x in pairs["agent"].values]
        pos = {a: i for i, a in enumerate(agents)}
        if any(u not in pos for u in names):
            return None
    else:
        agents = sorted(set(names))
        pos = {a: i for i, a in enumerate(agents)}
    lut = np.array([pos[u] for u in names], dtype=np.int64)
    idx = lut[codes]
    ia, ib = idx[:n], idx[n:]
    if (ia == ib).any():
        return None
    return agents, ia, ib


def _agent_codes(pairs: xr.Dataset, agents: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Index of ``agent_a`` and ``agent_b`` in ``agents`` (hash-based, no per-row Python loop)."""
    ab = np.concatenate([pairs["agent_a"].values, pairs["agent_b"].values])
    codes, uniq = pd.factorize(ab)
    pos = {a: i for i, a in enumerate(agents)}
    lut = np.array([pos[str(u)] for u in uniq], dtype=np.int64)
    idx = lut[codes]
    n = pairs.sizes["comparison"]
    return idx[:n], idx[n:]


def _resampled_counts(
    b: _Battles,
    n_resamples: int,
    resample: str,
    gen: np.random.Generator,
):
    """Yield blocks of resampled cell counts, shape (block, K, 3)."""
    K = b.counts.shape[0]
    if b.column is None:
        if resample == "task":
            raise HierbenchError(
                "`resample='task'` needs battles with a `task` (a pairwise dataset); pair counts "
                "carry no task. Use resample='battles'"
            )
        total = round(float(b.counts.sum()))
        p = (b.counts / b.counts.sum()).ravel()
        step = max(1, _CHUNK // max(p.size, 1))
        for i0 in range(0, n_resamples, step):
            size = min(step, n_resamples - i0)
            yield gen.multinomial(total, p, size=size).reshape(size, K, 3).astype(float)
        return
    C = b.column.size
    S = sparse.csr_matrix((np.ones(C), (np.arange(C), b.column)), shape=(C, 3 * K))
    codes = None
    if resample == "task":
        if b.task is None:
            raise HierbenchError(
                "`resample='task'` needs a `task` variable in `pairs` (read_battles(task=...))"
            )
        labels = _task_labels(np.asarray(b.task), "to resample tasks (resample='task')")
        _, codes = np.unique(labels, return_inverse=True)
    for w in weight_blocks(C, n_resamples, gen, clusters=codes):
        yield np.asarray((S.T @ w.T).T).reshape(w.shape[0], K, 3)


# --------------------------------------------------------------------------- win rates


@dataclass(frozen=True, repr=False)
class WinRateResult(Result):
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
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    average: xr.DataArray
    average_ci: xr.DataArray
    n_comparisons: xr.DataArray
    distribution: xr.DataArray
    attrs: dict = field(default_factory=dict)
    _dataset_exclude: ClassVar[tuple[str, ...]] = ("distribution",)


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
        rate = np.where(n > 0, pts / np.where(n > 0, n, 1.0), np.nan)
        met = (n > 0).sum(-1)
        return np.where(met > 0, np.nansum(rate, -1) / np.where(met > 0, met, 1), np.nan)


def win_rate(
    pairs: xr.Dataset,
    *,
    prob: float = DEFAULT_PROB,
    n_resamples: int = 2000,
    resample: str = "battles",
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
    resample : {"battles", "task"}
        Resample battles, or tasks (prompts) with all their battles.
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
    check_choice(resample, "resample", ["battles", "task"])
    b = _battles(pairs)
    m = len(b.agents)
    pts, n = _win_matrix(b.counts, b.ia, b.ib, m)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n > 0, pts / np.where(n > 0, n, 1.0), np.nan)
    avg = _average_rate(pts, n)
    gen = as_rng(rng)
    dists, dist_avg = [], []
    for blk in _resampled_counts(b, n_resamples, resample, gen):
        p_b, n_b = _win_matrix(blk, b.ia, b.ib, m)
        with np.errstate(invalid="ignore", divide="ignore"):
            dists.append(np.where(n_b > 0, p_b / np.where(n_b > 0, n_b, 1.0), np.nan))
        dist_avg.append(_average_rate(p_b, n_b))
    dist = np.concatenate(dists)
    davg = np.concatenate(dist_avg)
    lo, hi = percentile_bounds(dist, prob)
    alo, ahi = percentile_bounds(davg, prob)
    coords = {"agent": b.agents, "opponent": b.agents}
    est = xr.DataArray(rate, dims=("agent", "opponent"), coords=coords, name="win_rate")
    detail = f"bootstrap over {resample}, {n_resamples} resamples"
    ci = make_interval(lo, hi, prob=prob, kind="percentile", detail=detail, template=est)
    average = xr.DataArray(avg, dims="agent", coords={"agent": b.agents}, name="average_win_rate")
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
        attrs={"resample": resample, "n_resamples": n_resamples},
    )


# --------------------------------------------------------------------------- position bias


@dataclass(frozen=True, repr=False)
class PositionConsistencyResult(Result):
    """Result of :func:`position_consistency`.

    Attributes
    ----------
    estimate : DataArray (scalar)
        Inconsistency rate: share of matched both-order judgements whose
        verdicts disagree once the order is undone.
    ci : DataArray (ci_bound)
        Wilson interval of the inconsistency rate.
    first_position_share : DataArray (scalar)
        Among the inconsistent matches, the share that favoured whichever
        agent was shown first (1 = all inconsistency is position bias).
    pairs : Dataset
        The resolved pairwise dataset: one comparison per matched both-order
        judgement (consistent verdicts kept, inconsistent ones made ties or
        dropped), plus the unmatched judgements if ``unmatched="keep"``.
    n_matched, n_inconsistent, n_unmatched : int
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    first_position_share: xr.DataArray
    pairs: xr.Dataset
    n_matched: int
    n_inconsistent: int
    n_unmatched: int


def position_consistency(
    pairs: xr.Dataset,
    *,
    inconsistent: str = "tie",
    unmatched: str = "keep",
    prob: float = DEFAULT_PROB,
) -> PositionConsistencyResult:
    """Undo position bias when each pair was judged in both orders.

    Judgements of the same task and the same two agents are matched, one
    shown with ``agent_a`` first with one shown in the swapped order, in the
    order they appear. A match is consistent when, with the order undone,
    both verdicts agree (same winner, or both ties).

    Parameters
    ----------
    pairs : Dataset
        Pairwise dataset with ``task`` and ``position``
        (:func:`hierbench.data.read_battles` records the position).
    inconsistent : {"tie", "drop"}
        An inconsistent match becomes a tie (Zheng et al. 2023) or is dropped
        (counted in ``n_inconsistent``).
    unmatched : {"keep", "drop"}
        Judgements without a swapped partner are kept as they are, or dropped;
        either way counted in ``n_unmatched``.
    prob : float
        Level of the Wilson interval on the inconsistency rate.

    Returns
    -------
    PositionConsistencyResult

    Examples
    --------
    >>> import pandas as pd
    >>> from hierbench.data import read_battles
    >>> df = pd.DataFrame({"left": ["A", "B", "A", "B"], "right": ["B", "A", "B", "A"],
    ...                    "winner": ["left", "right", "left", "left"], "q": ["1", "1", "2", "2"]})
    >>> r = position_consistency(read_battles(df, task="q"))
    >>> float(r.estimate), r.pairs.outcome.values.tolist()
    (0.5, [1.0, 0.5])
    """
    check_choice(inconsistent, "inconsistent", ["tie", "drop"])
    check_choice(unmatched, "unmatched", ["keep", "drop"])
    prob = check_prob(prob)
    check_pairwise(pairs)
    missing = [v for v in ("task", "position") if v not in pairs]
    if missing:
        raise HierbenchError(
            f"`pairs` must hold `task` and `position` to match both-order judgements; missing {missing}"
        )
    task = _task_labels(pairs["task"].values, "to match both-order judgements")
    v = _orient(pairs)
    rows, n = _resolve_orders(v, task, inconsistent, unmatched)
    agents = (
        [str(x) for x in pairs["agent"].values]
        if "agent" in pairs.coords
        else sorted(set(v["a"]) | set(v["b"]))
    )
    resolved = _pairwise_dataset(
        *(np.asarray(r, dtype=object) for r in rows[:2]),
        np.asarray(rows[2], dtype=float),
        agents,
        task=np.asarray(rows[3], dtype=object),
        attrs={
            "source": "position_consistency",
            "inconsistent": inconsistent,
            "unmatched": unmatched,
            "n_matched": n["match"],
            "n_inconsistent": n["inc"],
            "n_unmatched": n["unm"],
        },
    )
    if n["match"] == 0:
        warnings.warn(
            "no judgement has a swapped-order partner (same task, same two agents, other order): "
            "the inconsistency rate is undefined (NaN)",
            UndefinedMetricWarning,
            stacklevel=2,
        )
    z = float(norm.ppf(0.5 + prob / 2))
    lo_w, hi_w = wilson_bounds(n["inc"], n["match"], z)
    return PositionConsistencyResult(
        estimate=xr.DataArray(
            n["inc"] / n["match"] if n["match"] else np.nan, name="inconsistency_rate"
        ),
        ci=make_interval(
            lo_w, hi_w, prob=prob, kind="wilson", detail=f"{n['match']} matched judgements"
        ),
        first_position_share=xr.DataArray(n["inc_first"] / n["inc"] if n["inc"] else np.nan),
        pairs=resolved,
        n_matched=n["match"],
        n_inconsistent=n["inc"],
        n_unmatched=n["unm"],
    )


def _task_labels(raw: np.ndarray, why: str) -> np.ndarray:
    """The comparisons' task labels as text; missing labels are refused (as text they would
    all read 'nan' and be taken for one task)."""
    miss = np.asarray(pd.isna(raw), dtype=bool) | (np.asarray(raw, dtype=object) == "")
    if miss.any():
        raise HierbenchError(
            f"`pairs.task` has {int(miss.sum())} missing labels (comparisons "
            f"{np.flatnonzero(miss)[:5].tolist()}); tasks are needed {why}: label them or "
            "drop those comparisons"
        )
    return raw.astype(str)


def _orient(pairs: xr.Dataset) -> dict[str, np.ndarray]:
    """Each judgement seen from its first-shown agent and from the pair ordered by name."""
    a = pairs["agent_a"].values.astype(str)
    bb = pairs["agent_b"].values.astype(str)
    pos = pairs["position"].values.astype(int)
    out = pairs["outcome"].values.astype(float)
    first = np.where(pos == 1, a, bb)
    second = np.where(pos == 1, bb, a)
    out_first = np.where(pos == 1, out, 1.0 - out)  # outcome for the first-shown agent
    lo_first = first <= second  # order each pair by name: "lo" is the smaller name
    return {
        "a": a,
        "b": bb,
        "out": out,
        "out_first": out_first,
        "lo_first": lo_first,
        "lo_name": np.where(lo_first, first, second),
        "hi_name": np.where(lo_first, second, first),
        "out_lo": np.where(lo_first, out_first, 1.0 - out_first),
    }


def _resolve_orders(v, task, inconsistent: str, unmatched: str):
    """Match the judgements of one task and pair shown in both orders, in order of appearance;
    the resolved comparisons (agent_a, agent_b, outcome, task) and the counts."""
    groups: dict[tuple[str, str, str], tuple[list[int], list[int]]] = {}
    for i in range(task.size):
        key = (task[i], v["lo_name"][i], v["hi_name"][i])
        groups.setdefault(key, ([], []))[0 if v["lo_first"][i] else 1].append(i)
    rows: tuple[list, list, list, list] = ([], [], [], [])
    n = {"match": 0, "inc": 0, "unm": 0, "inc_first": 0}
    out_lo, out_first = v["out_lo"], v["out_first"]
    for (t, lo, hi), (fwd, rev) in groups.items():
        k = min(len(fwd), len(rev))
        for i, j in zip(fwd[:k], rev[:k], strict=True):
            n["match"] += 1
            o = out_lo[i]
            if out_lo[i] != out_lo[j]:
                n["inc"] += 1
                # each verdict favours its first-shown agent more than the other verdict does
                n["inc_first"] += int(out_first[i] >= 0.5 and out_first[j] >= 0.5)
                if inconsistent == "drop":
                    continue
                o = 0.5
            for r, x in zip(rows, (lo, hi, o, t), strict=True):
                r.append(x)
        for i in fwd[k:] + rev[k:]:
            n["unm"] += 1
            if unmatched == "keep":
                for r, x in zip(rows, (v["a"][i], v["b"][i], v["out"][i], t), strict=True):
                    r.append(x)
    return rows, n


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
    _dataset_exclude: ClassVar[tuple[str, ...]] = ("by_order",)


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
    :func:`bradley_terry_ml`.

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
    rng : None, int or Generator

    Returns
    -------
    EloResult

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
    R = np.full((n_orders + 1, m), float(initial))
    rows = np.arange(n_orders + 1)
    lb = np.log(base) / scale
    A, B, S = ia[orders], ib[orders], out[orders]
    for t in range(C):
        a, b_, s = A[:, t], B[:, t], S[:, t]
        e = 1.0 / (1.0 + np.exp(lb * (R[rows, b_] - R[rows, a])))
        delta = k * (s - e)
        R[rows, a] += delta
        R[rows, b_] -= delta
    est = xr.DataArray(R[0], dims="agent", coords={"agent": agents}, name="elo")
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
    )


# --------------------------------------------------------------------------- Bradley-Terry ML


@dataclass
class _Fit:
    theta: np.ndarray  # (m,) logit abilities, reference parametrisation (theta[ref] = 0)
    home: float
    log_nu: float  # -inf without Davidson ties
    loglik: float
    iterations: int
    converged: bool
    info: np.ndarray | None = None  # observed information in the free parameters


def _strongly_connected(
    ia: np.ndarray, ib: np.ndarray, counts: np.ndarray, m: int
) -> tuple[bool, np.ndarray]:
    """Whether the 'beat or tied' digraph is strongly connected; component labels."""
    win_a = counts[:, 0] + counts[:, 1] > 0  # a beat (or tied) b: edge a -> b
    win_b = counts[:, 2] + counts[:, 1] > 0
    src = np.concatenate([ia[win_a], ib[win_b]])
    dst = np.concatenate([ib[win_a], ia[win_b]])
    g = sparse.csr_matrix((np.ones(src.size), (src, dst)), shape=(m, m))
    n, lab = connected_components(g, directed=True, connection="strong")
    return n == 1, lab


def _loglik_parts(d, lam, counts, ties):
    w, t, l_ = counts[:, 0], counts[:, 1], counts[:, 2]
    n = w + t + l_
    if ties == "davidson":
        # log Z = log(e^{d/2} + e^{lam} + e^{-d/2}), stably
        stack = np.stack([d / 2, np.full_like(d, lam), -d / 2])
        mx = stack.max(0)
        ex = np.exp(stack - mx)
        z = ex.sum(0)
        logz = mx + np.log(z)
        pa, pt, pb = ex[0] / z, ex[1] / z, ex[2] / z
        ll = np.sum((w - l_) * d / 2 + t * lam - n * logz)
        g_d = (w - l_) / 2 - n * (pa - pb) / 2
        g_l = t - n * pt
        i_dd = n * ((pa + pb) / 4 - (pa - pb) ** 2 / 4)
        i_dl = -n * (pa - pb) * pt / 2
        i_ll = n * pt * (1 - pt)
        return ll, g_d, g_l, i_dd, i_dl, i_ll
    s = w + t / 2
    ll = np.sum(-s * np.logaddexp(0.0, -d) - (n - s) * np.logaddexp(0.0, d))
    p = 0.5 * (1.0 + np.tanh(d / 2))
    return ll, s - n * p, None, n * p * (1 - p), None, None


def _mm(ia, ib, counts, m, home, theta0, h0, tol, max_iter):
    """Hunter's (2004) MM iteration for the logistic model (ties as half wins), optional home term."""
    w = counts[:, 0] + counts[:, 1] / 2
    lo_ = counts[:, 2] + counts[:, 1] / 2
    n = w + lo_
    wins = np.bincount(ia, w, m) + np.bincount(ib, lo_, m)
    home_wins = w.sum()
    p = np.exp(theta0 - theta0.mean())
    g = np.exp(h0) if home else 1.0
    it = 0
    converged = False
    for it in range(1, max_iter + 1):  # noqa: B007
        den_pair = g * p[ia] + p[ib]
        den = np.bincount(ia, n * g / den_pair, m) + np.bincount(ib, n / den_pair, m)
        with np.errstate(divide="ignore", invalid="ignore"):
            p_new = wins / den
        p_new /= np.exp(np.mean(np.log(p_new)))
        if home:
            g = home_wins / np.sum(n * p_new[ia] / (g * p_new[ia] + p_new[ib]))
        change = np.max(np.abs(np.log(p_new) - np.log(p)))
        p = p_new
        if not np.isfinite(change):
            break
        if change < tol:
            converged = True
            break
    return np.log(p), (np.log(g) if home else 0.0), it, converged


def _free(m: int, ref: int) -> np.ndarray:
    """The abilities estimated freely: every agent but the reference (fixed at 0)."""
    return np.r_[np.arange(ref), np.arange(ref + 1, m)]


def _stack_grad(g_th, g_home, g_lam) -> np.ndarray:
    """The gradient in the free parameters: abilities, then home, then log nu (None: not in
    the model); leading batch dims allowed."""
    extra = [np.asarray(g)[..., None] for g in (g_home, g_lam) if g is not None]
    return np.concatenate([g_th, *extra], axis=-1)


def _stack_info(h_th, c_home, d_home, c_lam, d_lam, c_hl) -> np.ndarray:
    """The information in the order of :func:`_stack_grad`, from its blocks: abilities
    ``h_th``, their cross terms with home ``c_home`` / log nu ``c_lam``, the diagonals
    ``d_home`` / ``d_lam`` and home x log nu ``c_hl`` (None: not in the model)."""
    n_th = h_th.shape[-1]
    k = n_th + (c_home is not None) + (c_lam is not None)
    info = np.zeros((*h_th.shape[:-2], k, k))
    info[..., :n_th, :n_th] = h_th
    j = n_th
    if c_home is not None:
        info[..., :n_th, j] = c_home
        info[..., j, :n_th] = c_home
        info[..., j, j] = d_home
        j += 1
    if c_lam is not None:
        info[..., :n_th, j] = c_lam
        info[..., j, :n_th] = c_lam
        info[..., j, j] = d_lam
        if c_home is not None:
            info[..., j - 1, j] = c_hl
            info[..., j, j - 1] = c_hl
    return info


def _newton(ia, ib, counts, m, ref, ties, home, theta, h, lam, tol, max_iter):
    """Newton's method with backtracking on the concave log-likelihood; theta[ref] fixed at 0."""
    free = _free(m, ref)
    n_th = m - 1
    use_lam = ties == "davidson"
    theta = theta - theta[ref]

    def evaluate(theta, h, lam):
        d = theta[ia] - theta[ib] + (h if home else 0.0)
        return _loglik_parts(d, lam, counts, ties)

    def signed(x):  # per-agent sum with + for the first agent of a pair, - for the second
        return (np.bincount(ia, x, m) - np.bincount(ib, x, m))[free]

    ll, g_d, g_l, i_dd, i_dl, i_ll = evaluate(theta, h, lam)
    converged = False
    info = None
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        grad = _stack_grad(
            (np.bincount(ia, g_d, m) - np.bincount(ib, g_d, m))[free],
            g_d.sum() if home else None,
            g_l.sum() if use_lam else None,
        )
        diag = np.bincount(ia, i_dd, m) + np.bincount(ib, i_dd, m)
        H = -np.bincount(ia * m + ib, i_dd, m * m).reshape(m, m)
        H = H + H.T
        H[np.diag_indices(m)] += diag
        info = _stack_info(
            H[np.ix_(free, free)],
            signed(i_dd) if home else None,
            i_dd.sum(),
            signed(i_dl) if use_lam else None,
            i_ll.sum() if use_lam else None,
            i_dl.sum() if home and use_lam else None,
        )
        if np.max(np.abs(grad)) < tol * max(1.0, counts.sum() ** 0.5):
            converged = True
            break
        try:
            step = np.linalg.solve(info, grad)
        except np.linalg.LinAlgError:
            break
        t = 1.0
        for _ in range(60):
            th_new = theta.copy()
            th_new[free] += t * step[:n_th]
            h_new = h + t * step[n_th] if home else h
            lam_new = lam + t * step[-1] if use_lam else lam
            parts = evaluate(th_new, h_new, lam_new)
            if np.isfinite(parts[0]) and parts[0] >= ll - 1e-12 * abs(ll):
                break
            t /= 2
        else:
            break
        theta, h, lam = th_new, h_new, lam_new
        ll, g_d, g_l, i_dd, i_dl, i_ll = parts
    return _Fit(theta, h, lam if use_lam else -np.inf, float(ll), it, converged, info)


def _parts_batch(d, lam, counts, ties):
    """:func:`_loglik_parts` for a batch: ``d`` (B, K), ``lam`` (B,), ``counts`` (B, K, 3)."""
    w, t, l_ = counts[..., 0], counts[..., 1], counts[..., 2]
    n = w + t + l_
    if ties == "davidson":
        # relative to the larger of e^{d/2}, e^{-d/2}: terms 1, nu * a, a^2 with a = e^{-|d|/2}
        # (one exp and one log per cell, where the scalar version takes three exps)
        a = np.exp(-0.5 * np.abs(d))
        nu_a = np.exp(lam)[:, None] * a
        a2 = a * a
        z = 1.0 + nu_a + a2
        pos = d >= 0
        pa = np.where(pos, 1.0, a2) / z
        pb = np.where(pos, a2, 1.0) / z
        pt = nu_a / z
        ll = np.sum((w - l_) * d / 2 + t * lam[:, None] - n * (0.5 * np.abs(d) + np.log(z)), axis=1)
        g_d = (w - l_) / 2 - n * (pa - pb) / 2
        g_l = t - n * pt
        i_dd = n * ((pa + pb) / 4 - (pa - pb) ** 2 / 4)
        i_dl = -n * (pa - pb) * pt / 2
        i_ll = n * pt * (1 - pt)
        return ll, g_d, g_l, i_dd, i_dl, i_ll
    s_ = w + t / 2
    p = expit(d)
    ll = np.sum(s_ * log_expit(d) + (n - s_) * log_expit(-d), axis=1)
    return ll, s_ - n * p, None, n * p * (1 - p), None, None


def _pair_operators(ia: np.ndarray, ib: np.ndarray, m: int):
    """Sparse maps from per-pair values to per-agent sums: ``inc`` (K, m) with +1 for the
    first agent and -1 for the second (d = theta[ia] - theta[ib]), ``hess`` (K, m * m) onto
    the ability block of the information."""
    K = ia.size
    rows = np.arange(K)
    inc = sparse.csr_matrix(
        (np.r_[np.ones(K), -np.ones(K)], (np.r_[rows, rows], np.r_[ia, ib])), shape=(K, m)
    )
    hess = sparse.csr_matrix(
        (
            np.r_[np.ones(2 * K), -np.ones(2 * K)],
            (np.tile(rows, 4), np.r_[ia * m + ia, ib * m + ib, ia * m + ib, ib * m + ia]),
        ),
        shape=(K, m * m),
    )
    return inc, hess


def _solve_rows(info: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """Newton steps of a batch; a singular system stops its own row only (NaN), as in
    :func:`_newton`."""
    try:
        return np.linalg.solve(info, grad[..., None])[..., 0]
    except np.linalg.LinAlgError:
        step = np.full_like(grad, np.nan)
        for i in range(grad.shape[0]):
            try:
                step[i] = np.linalg.solve(info[i], grad[i])
            except np.linalg.LinAlgError:
                pass
        return step


def _line_search(evaluate, x, active, step, ll, free, home, use_lam):
    """Backtracking, row by row: halve the step until the log-likelihood does not drop.

    Returns the accepted parameters (theta, home, lam) of the active rows, their
    likelihood parts, and the rows that found no ascent step (``pending``)."""
    theta, h, lam = x
    n_th = free.size
    b = active.size
    t = np.ones(b)
    new = (theta[active].copy(), h[active].copy(), lam[active].copy())
    pending = np.arange(b)
    new_parts = [None] * 6
    for _ in range(60):
        th_c = theta[active[pending]].copy()
        th_c[:, free] += t[pending, None] * step[pending, :n_th]
        h_c = h[active[pending]] + (t[pending] * step[pending, n_th] if home else 0.0)
        lam_c = lam[active[pending]] + (t[pending] * step[pending, -1] if use_lam else 0.0)
        cand = evaluate(active[pending], th_c, h_c, lam_c)
        ok = np.isfinite(cand[0]) & (cand[0] >= ll[pending] - 1e-12 * np.abs(ll[pending]))
        ok &= np.isfinite(step[pending]).all(1)
        acc = pending[ok]
        new[0][acc], new[1][acc], new[2][acc] = th_c[ok], h_c[ok], lam_c[ok]
        for q in range(6):
            if cand[q] is None:
                continue
            if new_parts[q] is None:
                new_parts[q] = np.empty((b, *cand[q].shape[1:]))
            new_parts[q][acc] = cand[q][ok]
        pending = pending[~ok]
        if pending.size == 0:
            break
        t[pending] /= 2
    return new, new_parts, pending


def _newton_batch(ia, ib, counts, m, ref, ties, home, start, tol, max_iter):
    """:func:`_newton` on a batch of count tables ``counts`` (B, K, 3) sharing the cells (ia, ib).

    The same iteration, step by step, with the per-pair sums done as sparse
    products and the B Newton systems solved at once: the bootstrap's refits
    cost a few array operations instead of a Python loop over resamples.
    Returns theta (B, m) in the reference parametrisation, home (B,), lam (B,).
    """
    B = counts.shape[0]
    free = _free(m, ref)
    use_lam = ties == "davidson"
    inc, hess = _pair_operators(ia, ib, m)
    th0, h0, lam0 = start
    theta = np.tile(th0 - th0[ref], (B, 1))
    h = np.full(B, float(h0) if home else 0.0)
    lam = np.full(B, float(lam0) if use_lam else -np.inf)
    scale = tol * np.maximum(1.0, counts.sum((1, 2)) ** 0.5)

    def evaluate(idx, theta, h, lam):
        d = theta[:, ia] - theta[:, ib] + (h[:, None] if home else 0.0)
        return _parts_batch(d, lam, counts[idx], ties)

    def signed(x):  # per-agent sums with + for the first agent of a pair, - for the second
        return np.asarray(inc.T @ x.T).T[:, free]

    active = np.arange(B)
    parts = evaluate(active, theta, h, lam)
    for _ in range(max_iter):
        ll, g_d, g_l, i_dd, i_dl, i_ll = parts
        grad = _stack_grad(
            signed(g_d), g_d.sum(1) if home else None, g_l.sum(1) if use_lam else None
        )
        keep = ~(np.max(np.abs(grad), axis=1) < scale[active])
        if not keep.all():
            active = active[keep]
            if active.size == 0:
                break
            grad = grad[keep]
            ll, g_d, i_dd = ll[keep], g_d[keep], i_dd[keep]
            if use_lam:
                g_l, i_dl, i_ll = g_l[keep], i_dl[keep], i_ll[keep]
        b = active.size
        info = _stack_info(
            np.asarray(hess.T @ i_dd.T).T.reshape(b, m, m)[:, free][:, :, free],
            signed(i_dd) if home else None,
            i_dd.sum(1),
            signed(i_dl) if use_lam else None,
            i_ll.sum(1) if use_lam else None,
            i_dl.sum(1) if home and use_lam else None,
        )
        step = _solve_rows(info, grad)
        new, new_parts, pending = _line_search(
            evaluate, (theta, h, lam), active, step, ll, free, home, use_lam
        )
        move = np.ones(b, dtype=bool)
        move[pending] = False  # no ascent step found: stop these rows where they are
        theta[active[move]], h[active[move]], lam[active[move]] = (
            new[0][move],
            new[1][move],
            new[2][move],
        )
        active = active[move]
        if active.size == 0:
            break
        parts = tuple(None if x is None else x[move] for x in new_parts)
    return theta, h, lam


def _fit(counts, ia, ib, m, ref, ties, home, method, tol, max_iter, start=None):
    ok, _ = _strongly_connected(ia, ib, counts, m)
    if not ok:
        return None
    if start is None:
        th0, h0, it_mm, conv_mm = _mm(
            ia,
            ib,
            counts,
            m,
            home,
            np.zeros(m),
            0.0,
            tol=(tol if method == "mm" else 1e-3),
            max_iter=(max_iter if method == "mm" else 30),
        )
        th0 = th0 - th0[ref]
        lam0 = np.log(max(counts[:, 1].sum(), 0.5) / max(counts[:, [0, 2]].sum(), 1.0)) + np.log(
            2.0
        )
    else:
        th0, h0, lam0 = start
        it_mm, conv_mm = 0, False
    if method == "mm":
        ll, *_ = _loglik_parts(th0[ia] - th0[ib] + h0, -np.inf, counts, ties)
        f = _newton(ia, ib, counts, m, ref, ties, home, th0, h0, lam0, tol=np.inf, max_iter=1)
        return _Fit(th0 - th0[ref], h0, -np.inf, float(ll), it_mm, conv_mm, f.info)
    f = _newton(ia, ib, counts, m, ref, ties, home, th0, h0, lam0, tol=tol, max_iter=max_iter)
    f.iterations += it_mm
    return f


@dataclass(frozen=True, repr=False)
class BradleyTerryMLResult(Result):
    """Result of :func:`bradley_terry_ml`.

    Attributes
    ----------
    estimate : DataArray (agent)
        Abilities on ``scale`` (Elo points or logits), sum-zero or relative
        to ``reference``.
    ci : DataArray (agent, ci_bound)
        Bootstrap percentile interval (or Wald, ``interval="wald"``).
    ability : DataArray (agent)
        Logit abilities (the Bayesian model's ``ability`` scale).
    standard_error : DataArray (agent)
        Wald standard error on ``scale`` from the observed information.
    home, home_ci, home_se : DataArray or None
        First-position (home) advantage in logits, with ``home=True``.
    nu, nu_ci : DataArray or None
        Davidson tie parameter (0 when the data hold no ties).
    rank : DataArray (agent)
        Rank of the estimate (1 = best).
    rank_ci : DataArray (agent, ci_bound)
        Percentile interval of the rank over the resamples.
    distribution : DataArray (resample, agent)
        Resampled abilities on ``scale`` (NaN where the resample had no finite MLE).
    n_comparisons : int
    loglik : float
    n_undefined : int
        Resamples with no finite MLE (left out of the intervals).
    attrs : dict
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    ability: xr.DataArray
    standard_error: xr.DataArray
    rank: xr.DataArray
    rank_ci: xr.DataArray
    distribution: xr.DataArray
    home: xr.DataArray | None = None
    home_ci: xr.DataArray | None = None
    home_se: xr.DataArray | None = None
    nu: xr.DataArray | None = None
    nu_ci: xr.DataArray | None = None
    n_comparisons: int = 0
    loglik: float = np.nan
    n_undefined: int = 0
    attrs: dict = field(default_factory=dict)
    _dataset_exclude: ClassVar[tuple[str, ...]] = ("distribution",)


def bradley_terry_ml(
    pairs: xr.Dataset,
    *,
    ties: str = "davidson",
    home: bool = False,
    scale: str = "elo",
    reference: str | None = None,
    center: float = 1000.0,
    interval: str = "bootstrap",
    resample: str = "battles",
    n_resamples: int = 1000,
    prob: float = DEFAULT_PROB,
    method: str = "newton",
    tol: float = 1e-10,
    max_iter: int = 500,
    rng: None | int | np.random.Generator = None,
) -> BradleyTerryMLResult:
    """Bradley-Terry abilities by maximum likelihood, with bootstrap intervals and rank intervals.

    Parameters
    ----------
    pairs : Dataset
        A pairwise dataset (dim ``comparison``) or pair counts (dim ``pair``).
    ties : {"davidson", "half", "none"}
        Davidson ties (the default, as in the Bayesian model; with no ties in
        the data ``nu`` is 0, its maximum), ties as half a win each way, or
        no ties (refused if present).
    home : bool
        Estimate a first-position (home) advantage; needs positions
        (``read_battles`` records them, ``from_pair_counts(first_position=True)``).
    scale : {"elo", "logit"}
        Scale of ``estimate``: Elo points (``center + 400 / ln 10 * ability``) or logits.
    reference : str, optional
        Agent fixed at 0 logits (``center`` Elo); default: abilities sum to zero.
    center : float
        Elo of the reference (or of the mean ability).
    interval : {"bootstrap", "wald"}
        Percentile bootstrap, or ``estimate +- z * standard_error``.
    resample : {"battles", "task"}
        Bootstrap unit: battles, or tasks (prompts) with all their battles.
    n_resamples : int
    prob : float
    method : {"newton", "mm"}
        ``"newton"``: a few MM steps (Hunter 2004), then Newton's method to
        ``tol``. ``"mm"``: MM alone until the largest change of a log
        ability is below ``tol`` (ties "half" or "none" only).
    tol : float
        Convergence tolerance (gradient, scaled by sqrt(n), for Newton).
    max_iter : int
    rng : None, int or Generator

    Returns
    -------
    BradleyTerryMLResult

    Examples
    --------
    The worked example: A beats B and B beats C 64% of the time, A beats C 76%.

    >>> import pandas as pd
    >>> from hierbench.data import read_battles
    >>> rows = ([("A", "B")] * 64 + [("B", "A")] * 36 + [("B", "C")] * 64 + [("C", "B")] * 36
    ...         + [("A", "C")] * 76 + [("C", "A")] * 24)
    >>> df = pd.DataFrame(rows, columns=["left", "right"]).assign(winner="left")
    >>> r = bradley_terry_ml(read_battles(df, position=False), ties="none", n_resamples=200, rng=0)
    >>> r.estimate.round().astype(int).to_series().to_dict()
    {'A': 1100, 'B': 1000, 'C': 900}
    """
    check_choice(ties, "ties", ["davidson", "half", "none"])
    check_choice(scale, "scale", ["elo", "logit"])
    check_choice(interval, "interval", ["bootstrap", "wald"])
    check_choice(resample, "resample", ["battles", "task"])
    check_choice(method, "method", ["newton", "mm"])
    prob = check_prob(prob)
    n_resamples = check_int(n_resamples, "n_resamples", min=2)
    max_iter = check_int(max_iter, "max_iter", min=1)
    tol = check_number(tol, "tol", low=0, low_open=True)
    if not isinstance(home, (bool, np.bool_)):
        raise TypeError(f"`home` must be True or False; got {home!r}")
    center = check_number(center, "center")
    b = _battles(pairs)
    st = _settings(b, ties, home, scale, reference, center, method, tol, max_iter)
    fit = _fit(b.counts, b.ia, b.ib, st.m, st.ref, st.eff_ties, home, method, st.tol, st.max_iter)
    if fit is None:
        _warn_no_mle(b)
    elif not fit.converged and method == "newton":
        warnings.warn(
            f"Bradley-Terry ML did not reach tol={tol} in {max_iter} iterations",
            NotConvergedWarning,
            stacklevel=2,
        )
    boot = _Boot.empty(n_resamples, st.m)
    if fit is not None and interval == "bootstrap":
        boot = _bootstrap(b, st, fit, n_resamples, resample, as_rng(rng))
    return _bt_result(b, st, fit, boot, interval, resample, prob)


@dataclass
class _Settings:
    """The model and scale of a Bradley-Terry fit, checked against the battles."""

    ties: str
    eff_ties: str  # "half" for Davidson ties on data without ties (nu at 0, its maximum)
    home: bool
    scale: str
    reference: str | None
    ref: int
    center: float
    method: str
    tol: float
    max_iter: int
    m: int
    n_ties: float

    def normalise(self, theta: np.ndarray) -> np.ndarray:
        """Abilities on the reported scale (sum-zero or relative to the reference)."""
        th = theta - (theta[self.ref] if self.reference is not None else theta.mean())
        return th if self.scale == "logit" else self.center + ELO_PER_LOGIT * th

    def normalise_rows(self, th: np.ndarray) -> np.ndarray:
        """:meth:`normalise` of each row of ``th`` (B, m)."""
        shift = th[:, [self.ref]] if self.reference is not None else th.mean(1, keepdims=True)
        logit = self.scale == "logit"
        return (th - shift) * (1.0 if logit else ELO_PER_LOGIT) + (0.0 if logit else self.center)


def _settings(b, ties, home, scale, reference, center, method, tol, max_iter) -> _Settings:
    """The checks that need the battles, and the settings of the fit."""
    m = len(b.agents)
    if m < 2:
        raise HierbenchError(f"`pairs` must involve at least 2 agents; got {b.agents}")
    n_ties = float(b.counts[:, 1].sum())
    if ties == "none" and n_ties > 0:
        raise HierbenchError(
            f"`ties='none'` needs data without ties; `pairs` holds {int(n_ties)} ties. "
            "Use ties='davidson' or ties='half'"
        )
    if method == "mm" and ties == "davidson" and n_ties > 0:
        raise ValueError(
            "`method='mm'` fits the logistic model (ties 'half' or 'none'); Davidson ties need method='newton'"
        )
    if home and not b.first_position:
        raise HierbenchError(
            "`home=True` needs to know which agent held the first position: give `pairs` a `position` "
            "variable (read_battles records it) or pair counts with first_position=1"
        )
    if reference is not None and reference not in b.agents:
        raise ValueError(f"`reference` must be one of the agents {b.agents}; got {reference!r}")
    present = np.zeros(m, dtype=bool)
    present[b.ia] = present[b.ib] = True
    if not present.all():
        missing = [b.agents[i] for i in np.flatnonzero(~present)]
        raise HierbenchError(
            f"agents {missing} are in the `agent` coord of `pairs` but in no comparison: their ability "
            "is not estimable; drop them from the coord"
        )
    eff_ties = ties if (ties != "davidson" or n_ties > 0) else "half"
    ref = b.agents.index(reference) if reference is not None else 0
    return _Settings(
        ties, eff_ties, bool(home), scale, reference, ref, center, method, tol, max_iter, m, n_ties
    )


def _warn_no_mle(b: _Battles) -> None:
    _, lab = _strongly_connected(b.ia, b.ib, b.counts, len(b.agents))
    comps: dict[int, list[str]] = {}
    for i, c in enumerate(lab):
        comps.setdefault(int(c), []).append(b.agents[i])
    warnings.warn(
        "the Bradley-Terry likelihood has no finite maximum: the agents split into groups none "
        "of which both beat (or tied) and lost to another group "
        f"({len(comps)} groups, e.g. {list(comps.values())[:3]}); abilities are NaN. Use the "
        "Bayesian model (hierbench.bayes.build_bradley_terry), whose prior keeps them finite",
        NoFiniteMLEWarning,
        stacklevel=3,
    )


@dataclass
class _Boot:
    """Resampled abilities (on the reported scale), home advantage and nu (NaN: no MLE)."""

    dist: np.ndarray
    home: np.ndarray
    nu: np.ndarray
    n_undefined: int = 0

    @classmethod
    def empty(cls, n_resamples: int, m: int) -> _Boot:
        return cls(
            np.full((n_resamples, m), np.nan),
            np.full(n_resamples, np.nan),
            np.full(n_resamples, np.nan),
        )


def _refit_mm(b: _Battles, st: _Settings, blk: np.ndarray, r: int, boot: _Boot) -> None:
    """MM refits of one block of resampled counts, one at a time, into ``boot`` from row ``r``."""
    for cnt in blk:
        keep = cnt.sum(1) > 0
        f = _fit(
            cnt[keep],
            b.ia[keep],
            b.ib[keep],
            st.m,
            st.ref,
            st.eff_ties,
            st.home,
            st.method,
            st.tol,
            st.max_iter,
        )
        if f is not None and np.all(np.isfinite(f.theta)):
            boot.dist[r] = st.normalise(f.theta)
            boot.home[r] = f.home
            boot.nu[r] = np.exp(f.log_nu) if st.ties == "davidson" else np.nan
        r += 1


def _refit_newton(b, st: _Settings, blk: np.ndarray, r: int, start, boot: _Boot) -> None:
    """Batched Newton refits of one block of resampled counts into ``boot`` from row ``r``;
    a resample has a finite MLE when its "beat or tied" graph is strongly connected."""
    ok = np.array([_strongly_connected(b.ia, b.ib, c, st.m)[0] for c in blk])
    has_ties = blk[:, :, 1].sum(1) > 0
    for model in ("davidson", "half") if st.eff_ties == "davidson" else (st.eff_ties,):
        sel = ok & (has_ties if model == "davidson" else ~has_ties)
        if st.eff_ties != "davidson":
            sel = ok
        if not sel.any():
            continue
        th, hh, lm = _newton_batch(
            b.ia, b.ib, blk[sel], st.m, st.ref, model, st.home, start, st.tol, st.max_iter
        )
        good_rows = np.all(np.isfinite(th), axis=1)
        idx = r + np.flatnonzero(sel)[good_rows]
        boot.dist[idx] = st.normalise_rows(th[good_rows])
        boot.home[idx] = hh[good_rows] if st.home else 0.0
        if st.ties == "davidson":
            boot.nu[idx] = np.exp(lm[good_rows]) if model == "davidson" else 0.0


def _bootstrap(b, st: _Settings, fit: _Fit, n_resamples: int, resample: str, gen) -> _Boot:
    boot = _Boot.empty(n_resamples, st.m)
    start = (fit.theta, fit.home, fit.log_nu if np.isfinite(fit.log_nu) else 0.0)
    r = 0
    for blk in _resampled_counts(b, n_resamples, resample, gen):
        if st.method == "mm":
            _refit_mm(b, st, blk, r, boot)
        else:
            _refit_newton(b, st, blk, r, start, boot)
        r += blk.shape[0]
    boot.n_undefined = int((~np.isfinite(boot.dist).all(1)).sum())
    if boot.n_undefined:
        warnings.warn(
            f"{boot.n_undefined} of {n_resamples} resamples had no finite Bradley-Terry MLE (some "
            "agent won or lost every resampled battle); they are left out of the intervals",
            NoFiniteMLEWarning,
            stacklevel=3,
        )
    return boot


def _wald_se(fit: _Fit, st: _Settings):
    """Wald SEs on the reported scale and of home: the covariance in the reference
    parametrisation, mapped to the reported one."""
    m, sc = st.m, (1.0 if st.scale == "logit" else ELO_PER_LOGIT)
    cov = _inverse(fit.info) if fit.info is not None else None
    full = np.zeros((m, m))
    if cov is not None:
        full[np.ix_(_free(m, st.ref), _free(m, st.ref))] = cov[: m - 1, : m - 1]
    if st.reference is None:
        cmat = np.eye(m) - 1.0 / m
        full = cmat @ full @ cmat.T
    se_v = sc * np.sqrt(np.clip(np.diag(full), 0, None))
    home_se = np.sqrt(cov[m - 1, m - 1]) if (st.home and cov is not None) else np.nan
    return se_v, home_se, cov


def _bt_result(b, st: _Settings, fit, boot: _Boot, interval: str, resample: str, prob: float):
    nan_m = np.full(st.m, np.nan)
    n_resamples = boot.dist.shape[0]
    if fit is None:
        est_v = se_v = theta_n = nan_m
        home_v = home_se = nu_v = ll = np.nan
        cov, converged, iters = None, False, 0
    else:
        theta_n = fit.theta - (fit.theta[st.ref] if st.reference is not None else fit.theta.mean())
        est_v = st.normalise(fit.theta)
        se_v, home_se, cov = _wald_se(fit, st)
        home_v = fit.home if st.home else np.nan
        nu_v = float(np.exp(fit.log_nu)) if st.ties == "davidson" else np.nan
        ll, converged, iters = fit.loglik, fit.converged, fit.iterations
    est = xr.DataArray(
        est_v,
        dims="agent",
        # a ready pandas Index: xarray builds the coordinate without inferring object dtypes (~0.4 ms)
        coords={"agent": pd.Index(b.agents, dtype=object, name="agent")},
        name="ability",
    )
    iv = _bt_intervals(est, st, fit, cov, boot, interval, resample, prob, se_v, home_v, home_se)
    return BradleyTerryMLResult(
        estimate=est,
        ability=est.copy(deep=False, data=theta_n).rename("ability_logit"),
        standard_error=est.copy(deep=False, data=se_v).rename("standard_error"),
        rank=est.copy(deep=False, data=_ranks(est_v[None])[0]).rename("rank"),
        distribution=xr.DataArray(boot.dist, dims=("resample", "agent"), coords=est.coords),
        home=xr.DataArray(home_v, name="home") if st.home else None,
        home_se=xr.DataArray(home_se, name="home_se") if st.home else None,
        nu=xr.DataArray(nu_v, name="nu") if st.ties == "davidson" else None,
        n_comparisons=round(float(b.counts.sum())),
        loglik=ll,
        n_undefined=boot.n_undefined,
        attrs={
            "ties": st.ties,
            "home": st.home,
            "scale": st.scale,
            "reference": st.reference or "mean",
            "center": st.center,
            "method": st.method,
            "iterations": iters,
            "converged": bool(converged),
            "interval": interval,
            "resample": resample,
            "n_resamples": n_resamples,
        },
        **iv,
    )


def _bt_intervals(est, st, fit, cov, boot, interval, resample, prob, se_v, home_v, home_se):
    """``ci``, ``rank_ci``, ``home_ci`` and ``nu_ci``: percentile bootstrap, or Wald (normal)
    from the observed information; rank intervals from the same resamples (Wald: the agents a
    two-sided test at ``1 - prob`` does not separate)."""
    est_v, nan_m = est.values, np.full(st.m, np.nan)
    z = float(ndtri(0.5 + prob / 2))  # scipy.special: no distribution-object overhead

    def like(x: np.ndarray) -> xr.DataArray:  # bounds shaped like est (cheaper than a template)
        return est.copy(deep=False, data=np.asarray(x, dtype=float))

    detail_boot = f"bootstrap over {resample}, {boot.dist.shape[0]} resamples"
    good = np.isfinite(boot.dist).all(1)
    boot_ok = interval == "bootstrap" and good.any()
    out: dict = {"home_ci": None, "nu_ci": None}
    if interval == "bootstrap":
        lo, hi = percentile_bounds(boot.dist[good], prob) if good.any() else (nan_m, nan_m)
        out["ci"] = make_interval(
            like(lo), like(hi), prob=prob, kind="percentile", detail=detail_boot
        )
    else:
        out["ci"] = make_interval(
            like(est_v - z * se_v),
            like(est_v + z * se_v),
            prob=prob,
            kind="normal",
            detail="Wald: estimate +- z * standard error from the observed information at the MLE",
        )
    if boot_ok:
        rlo, rhi = percentile_bounds(_ranks(boot.dist[good]), prob)
        rlo, rhi, rank_kind, rank_detail = np.floor(rlo), np.ceil(rhi), "percentile", detail_boot
    else:
        sc = 1.0 if st.scale == "logit" else ELO_PER_LOGIT
        rlo, rhi = _wald_rank_interval(cov, est_v / sc, st.m, st.ref, z) if fit else (nan_m, nan_m)
        rank_kind = "normal"
        rank_detail = "Wald: the agents not separated by a two-sided Wald test at 1 - prob"
    out["rank_ci"] = make_interval(
        like(rlo), like(rhi), prob=prob, kind=rank_kind, detail=rank_detail, warn_zero_width=False
    )
    if st.home:
        if boot_ok:
            hl, hh = percentile_bounds(boot.home[good], prob)
            out["home_ci"] = make_interval(hl, hh, prob=prob, kind="percentile", detail=detail_boot)
        else:
            out["home_ci"] = make_interval(
                home_v - z * home_se, home_v + z * home_se, prob=prob, kind="normal"
            )
    if st.ties == "davidson":
        if boot_ok:
            nl, nh = percentile_bounds(boot.nu[good], prob)
            out["nu_ci"] = make_interval(
                nl,
                nh,
                prob=prob,
                kind="percentile",
                detail=detail_boot,
                warn_zero_width=st.n_ties > 0,
            )
        else:
            out["nu_ci"] = make_interval(
                np.nan, np.nan, prob=prob, kind="normal", detail="no Wald interval for nu"
            )
    return out


def _ranks(x: np.ndarray) -> np.ndarray:
    """Competition ranks along the last axis, 1 = largest (ties share the best rank)."""
    return (x[..., None, :] > x[..., :, None]).sum(-1) + 1.0


def _inverse(info: np.ndarray) -> np.ndarray:
    """Inverse of the (positive definite) information; pseudo-inverse if it is singular."""
    try:
        return np.linalg.inv(info)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(info)


def _wald_rank_interval(cov, theta, m, ref, z):
    free = np.r_[np.arange(ref), np.arange(ref + 1, m)]
    full = np.zeros((m, m))
    full[np.ix_(free, free)] = cov[: m - 1, : m - 1]
    var = np.diag(full)
    vd = var[:, None] + var[None, :] - 2 * full
    diff = theta[None, :] - theta[:, None]  # j - i
    sig_better = diff > z * np.sqrt(np.clip(vd, 0, None))
    sig_worse = -diff > z * np.sqrt(np.clip(vd, 0, None))
    return 1.0 + sig_better.sum(1), float(m) - sig_worse.sum(1)
