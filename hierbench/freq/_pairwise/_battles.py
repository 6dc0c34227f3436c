"""Pairwise data read for the frequentist estimators: battles as ordered-pair cells, resampled.

Private to the pairwise wing: a pairwise dataset (dim ``comparison``) or pair counts
(dim ``pair``) become cell counts (wins of the first agent, ties, wins of the second),
and bootstrap resamples of battles or of tasks become blocks of resampled counts.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr
from scipy import sparse

from ..._base import SOURCE_COLUMN
from ..._base import HierbenchError
from ...data import EvalDataError
from ...data import SimilarLabelsWarning
from ...data import check_pairwise
from ...data import from_pair_counts
from ...data import oriented_cells
from .._kernels import few_clusters_attrs
from .._kernels import weight_blocks

__all__: list[str] = []

_CHUNK = 2**21  # elements of the largest weight block drawn at once


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
    task_column: str | None = None  # the column the tasks were read from (read_battles(task=...))


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
        ca, cb, inv, out, first = oriented_cells(pairs, ia, ib, len(agents))
        cat = np.where(out == 1.0, 0, np.where(out == 0.5, 1, 2))
        column = inv * 3 + cat
        counts = np.bincount(column, minlength=3 * ca.size).reshape(-1, 3).astype(float)
        tv = pairs.variables.get("task")
        task = tv.values if tv is not None else None
        column_name = str(tv.attrs.get(SOURCE_COLUMN, "task")) if tv is not None else None
        return _Battles(agents, ca, cb, counts, first, column, task, column_name)
    if "pair" in pairs.dims and {"n_win_a", "n_tie", "n_win_b"} <= set(pairs.data_vars):
        agents = _check_pair_counts(pairs)
        index = {a: i for i, a in enumerate(agents)}
        ia = np.array([index[str(x)] for x in pairs["agent_a"].values], dtype=np.int64)
        ib = np.array([index[str(x)] for x in pairs["agent_b"].values], dtype=np.int64)
        counts = np.stack(
            [pairs[v].values.astype(float) for v in ("n_win_a", "n_tie", "n_win_b")], axis=1
        )
        first = bool(int(pairs.attrs.get("first_position", 0)))
        return _Battles(agents, ia, ib, counts, first, None, None)
    raise HierbenchError(
        "`pairs` must be a pairwise dataset (dim 'comparison', from read_battles / to_pairwise) "
        f"or pair counts (dim 'pair', from to_pair_counts / from_pair_counts); got dims "
        f"{dict(pairs.sizes)} and variables {list(pairs.data_vars)}"
    )


def _check_pair_counts(pairs: xr.Dataset) -> list[str]:
    """Run :func:`hierbench.data.from_pair_counts`' rules on a pair-counts dataset; return its agents.

    Its rules (counts non-negative integers, ``agent_a`` != ``agent_b``, both in the
    ``agent`` coord) have one owner, that reader: a hand-built or edited dataset is
    read through it, its messages kept, with the pairs of the rows they name.
    """
    if "agent" not in pairs.coords or {"agent_a", "agent_b"} - set(pairs.variables):
        raise HierbenchError(
            "`pairs` (pair counts, dim 'pair') needs `agent_a` and `agent_b` along 'pair' and an `agent` coord "
            f"(as to_pair_counts / from_pair_counts make them); got variables {list(pairs.variables)}"
        )
    agents = [str(x) for x in pairs["agent"].values]
    cols = {v: pairs[v].values for v in ("n_win_a", "n_tie", "n_win_b")}
    a, b = (np.array([str(x) for x in pairs[v].values], dtype=object) for v in ("agent_a", "agent_b"))
    df = pd.DataFrame({"agent_a": a, "agent_b": b, **cols})
    try:
        with warnings.catch_warnings():  # labels that look alike were warned of where they were read
            warnings.simplefilter("ignore", SimilarLabelsWarning)
            from_pair_counts(df, agent_a="agent_a", agent_b="agent_b", wins_a="n_win_a", wins_b="n_win_b",
                             ties="n_tie", agents=agents)  # fmt: skip
    except EvalDataError as e:
        msg = str(e).partition(" (Rows are")[0].rstrip(".")  # the rows note comes again at the end
        rows = e.rows or []  # the rows the broken rule names, kept by the reader's check
        if not rows:  # the rule named agents missing from the coord: the pairs that hold them
            known = set(agents)
            rows = [r for r in range(len(a)) if a[r] not in known or b[r] not in known]
        which = f"; the pairs (agent_a, agent_b): {_fmt_pairs([(a[r], b[r]) for r in rows])}" if rows else ""
        raise EvalDataError(
            f"`pairs` (pair counts, dim 'pair'; a row is a pair, counted from 0 along 'pair', and `agents` "
            f"its `agent` coord) breaks a rule of from_pair_counts: {msg}{which}"
        ) from None
    return agents


def _fmt_pairs(pairs: list[tuple[str, str]], limit: int = 10) -> str:
    """The first ``limit`` pairs as ``[('A', 'B'), ...]``, with how many more."""
    more = f", ... ({len(pairs) - limit} more)" if len(pairs) > limit else ""
    return f"[{', '.join(repr(p) for p in pairs[:limit])}{more}]"


def _fast_codes(pairs: xr.Dataset) -> tuple[list[str], np.ndarray, np.ndarray] | None:
    """Agents and the codes of ``agent_a`` / ``agent_b``, checking the pairwise rules vectorised.

    Returns None when any rule of :func:`hierbench.data.check_pairwise` may be
    broken; the caller then runs that validator, whose message names the problem.
    """
    var = pairs.variables  # Variables, not DataArrays: each pairs[v] builds one (~40 us)
    for v in ("agent_a", "agent_b", "outcome"):
        if v not in var or var[v].dims != ("comparison",):
            return None
    out = var["outcome"].values
    if out.dtype.kind not in "fiu" or not ((out == 0.0) | (out == 0.5) | (out == 1.0)).all():
        return None
    if "position" in var and not (np.abs(var["position"].values) == 1).all():
        return None
    n = pairs.sizes["comparison"]
    codes, uniq = pd.factorize(np.concatenate([var["agent_a"].values, var["agent_b"].values]))
    names = [str(u) for u in uniq]
    if "agent" in pairs.coords:
        agents = [str(x) for x in var["agent"].values]
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


def _resample_unit(b: _Battles, resample: str) -> str:
    """``"task"`` or ``"battles"``: the user's choice, or (``"auto"``) tasks when the battles carry them."""
    if resample != "auto":
        return resample
    return "task" if b.task is not None else "battles"


def _tasks_text(b: _Battles) -> str:
    """The battles' tasks counted and named by their column: "13 tasks of column 'prompt'"."""
    n = int(pd.unique(np.asarray(b.task, dtype=object)).size)
    return f"{n} tasks of column {b.task_column!r}"


def _unit_text(b: _Battles, unit: str) -> str:
    """The bootstrap unit in words, for an interval's ``ci_detail`` and a repr."""
    if unit == "task":
        return f"tasks ({_tasks_text(b)}, each drawn with all its battles)"
    return f"battles ({round(float(b.counts.sum()))}, taken as independent)"


def _few_tasks(b: _Battles, unit: str, prob: float, then: str) -> dict:
    """Where tasks (each with its battles) are resampled, their count and worth in equal tasks; warn where few.

    Each task is a cluster of its battles (``few_clusters_attrs``: its sizes are the
    battles per task). The attrs, as ``bootstrap_ci``'s; ``{}`` for ``unit="battles"``.
    """
    if unit != "task" or b.task is None or b.column is None:
        return {}
    labels = _task_labels(np.asarray(b.task), "to resample tasks")
    return few_clusters_attrs(np.unique(labels, return_inverse=True)[1], f"tasks of column {b.task_column!r}",
                              prob, then)


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
        labels = _task_labels(
            np.asarray(b.task),
            "to resample tasks (resample='task', the default when `pairs` has a task)",
            ", or pass resample='battles' to take the battles as independent",
        )
        _, codes = np.unique(labels, return_inverse=True)
    for w in weight_blocks(C, n_resamples, gen, clusters=codes):
        yield np.asarray((S.T @ w.T).T).reshape(w.shape[0], K, 3)


def _task_labels(raw: np.ndarray, why: str, or_else: str = "") -> np.ndarray:
    """Return the comparisons' task labels as text; refuse missing labels.

    As text, missing labels would all read 'nan' and be taken for one task.
    """
    miss = np.asarray(pd.isna(raw), dtype=bool) | (np.asarray(raw, dtype=object) == "")
    if miss.any():
        raise HierbenchError(
            f"`pairs.task` has {int(miss.sum())} missing labels (comparisons "
            f"{np.flatnonzero(miss)[:5].tolist()}); tasks are needed {why}: label them or "
            f"drop those comparisons{or_else}"
        )
    return raw.astype(str)
