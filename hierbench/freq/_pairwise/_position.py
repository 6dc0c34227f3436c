"""Position bias: judgements of a pair made in both orders, matched and resolved."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import Result
from ..._base import UndefinedMetricWarning
from ..._base import check_choice
from ..._base import check_prob
from ..._base import make_interval
from ..._base import warn_user
from ..._numerics import wilson_bounds
from ...data import _pairwise_dataset
from ...data import check_pairwise
from .._kernels import normal_z
from ._battles import _task_labels

__all__ = ["PositionConsistencyResult", "position_consistency"]


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

    _estimate_label = "inconsistency rate of {n_matched} both-order matches"

    def _cell_notes(self) -> xr.DataArray | None:
        """Why the rate is NaN where no judgement has a swapped-order partner."""
        if self.n_matched:
            return None
        return xr.DataArray(f"none of the {self.n_unmatched} judgements has a swapped-order partner (same task and "
                            "agents, other order): no rate")


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
        The inconsistency rate with its Wilson interval, the share of the
        inconsistent matches that favoured the agent shown first, the counts,
        and the resolved pairwise dataset (``pairs``).

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
        warn_user(
            "no judgement has a swapped-order partner (same task, same two agents, other order): "
            "the inconsistency rate is undefined (NaN)",
            UndefinedMetricWarning,
        )
    z = normal_z(prob)
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
    """Match the judgements of one task and pair shown in both orders, in order of appearance.

    Return the resolved comparisons (agent_a, agent_b, outcome, task) and the counts.
    """
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
