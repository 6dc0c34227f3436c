"""Records that repeat another in every column: the one rule for when they look like copies.

A run log without a run column cannot tell two identical runs from one run
recorded twice. ``copies_reason`` says when the repeats look like copies
of one log (and so are refused under ``duplicates="refuse"``); it works on
counts alone, so the in-memory reader and the out-of-core readers
(:mod:`hierbench.data._large`) can apply the same rule. Repeats that do not
look like copies are kept as runs, but never silently: they are counted in
``attrs["n_repeated_records"]`` and, unless ``duplicates="keep"`` says they
are runs, reported by a :class:`RepeatedRecordsWarning`.

What a repeat is (``_row_keys``: equal in every column, values with their
type) and how the repeats are named (``repeat_pairs``) are shared with
:func:`~hierbench.data.read_battles`, whose rule for when repeated battles
look like copies is its own (a battle log has no cells or runs).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .._base import HierbenchWarning
from .._base import warn_user
from ._schema import EvalDataError
from ._schema import _fmt_list

__all__ = ["RepeatedRecordsWarning", "apply_duplicates", "copies_reason", "repeat_pairs", "warn_split_cells"]


class RepeatedRecordsWarning(HierbenchWarning):
    """Records that repeat an earlier one were kept as separate runs (and counted).

    In every column, or, in a log of one run per cell, in their (agent, task) cell: a second,
    different record of a cell most of whose neighbours hold one (a merged or re-run log?).
    """


def _hashable(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with unhashable cells (lists, dicts from JSON) written as text, for row comparison."""
    out = df
    for c in df.columns:
        if df[c].dtype == object:
            try:
                pd.util.hash_pandas_object(df[c], index=False)
            except TypeError:
                if out is df:
                    out = df.copy()
                out[c] = df[c].map(repr)
    return out


def _row_keys(df: pd.DataFrame) -> pd.Series:
    """Hash each row over every column (values with their type) to 64 bits."""
    h = _hashable(df)
    typed = h.assign(
        **{
            f"__kind_{i}": h[c].map(lambda v: type(v).__name__)
            for i, c in enumerate(h.columns)
            if h[c].dtype == object
        }
    )
    return pd.util.hash_pandas_object(typed, index=False)


def copies_reason(
    mult_counts: Mapping[int, int],
    n_rows: int,
    n_cells: int,
    distinct_per_column: Callable[[], Mapping[str, int]],
    n_single_cells: int = 0,
) -> str | None:
    """Why records that repeat another in every column look like copies (None if they do not).

    They do when every distinct record appears a multiple of k >= 2 times (a
    log concatenated k times); when no cell holds two different records yet
    some cells hold a single one (a log of one run per cell, the repeats the
    only runs beyond the first); or when a column tells the distinct records
    apart (a run id, a time, a cost) yet some repeat.

    Parameters
    ----------
    mult_counts : mapping
        multiplicity -> number of distinct records that appear that many times.
    n_rows, n_cells : int
        Records read; (agent, task) cells they fall in.
    distinct_per_column : callable
        Returns, for each column other than agent, task, score and error, its
        number of distinct values (missing counted as one); called only when needed.
    n_single_cells : int
        Cells holding exactly one record.
    """
    n_distinct = int(sum(mult_counts.values()))
    if n_distinct < 2 or n_distinct == n_rows:
        return None
    g = int(np.gcd.reduce(np.array(list(mult_counts), dtype=np.int64)))
    if g >= 2:
        return (
            f"every distinct record appears a multiple of {g} times, as when a log is "
            f"concatenated {g} times (which would make {n_rows - n_rows // g} of them copies)"
        )
    if n_distinct == n_cells and n_single_cells:
        return (
            f"no (agent, task) cell holds two different records and {n_single_cells} of {n_cells} "
            "cells hold a single record, as in a log of one run per cell: the repeats are the "
            "only evidence that any task ran twice"
        )
    if n_distinct > n_cells:
        for c, nu in distinct_per_column().items():
            if nu == n_distinct:
                return (
                    f"column {c!r} tells the distinct records apart (a per-run id, time or cost), "
                    "yet these records repeat another in every column"
                )
    return None


def _distinct_per_column(df: pd.DataFrame, skip: set) -> dict[str, int]:
    out = {}
    for c in df.columns:
        if c in skip:
            continue
        try:
            out[c] = df[c].nunique(dropna=False)
        except TypeError:
            continue
    return out


def repeat_pairs(keys: pd.Series, rows: np.ndarray, limit: int = 5) -> list[tuple[int, int]]:
    """(first, copy) row positions of the first ``limit`` repeats ``rows``: each with the row it repeats.

    ``keys`` are the rows' keys (``_row_keys``); positions count from 0 whatever the index.
    """
    k = keys.to_numpy()
    uniq, first = np.unique(k, return_index=True)
    orig = dict(zip(uniq.tolist(), first.tolist(), strict=True))
    return [(int(orig[k[r]]), int(r)) for r in rows[:limit]]


def _copies_error(df: pd.DataFrame, keys: pd.Series, dup: np.ndarray, where: str, why: str) -> EvalDataError:
    rows = np.flatnonzero(dup)
    pairs = repeat_pairs(keys, rows)
    return EvalDataError(
        f"duplicate records{where}: {rows.size} of {len(df)} records repeat an earlier "
        f"record in every column (e.g. rows (first, copy) {_fmt_list(pairs, 5)}) and "
        f"there is no run column: {why}. Counting them would add runs that never "
        "happened. Read the log once, give the run or epoch column (`run`), pass "
        "duplicates='drop' to keep one of each set of identical records (right when "
        "each run's record is unique, e.g. carries a run id), or duplicates='keep' "
        "if they are distinct runs"
    )


def _repeats_warning(keys: pd.Series, dup: np.ndarray, where: str) -> None:
    rows = np.flatnonzero(dup)
    warn_repeats_kept(rows.size, len(keys), where, f"rows {_fmt_list(rows.tolist())}")


def warn_repeats_kept(n_rep: int, n_read: int, where: str, shown: str) -> None:
    """The RepeatedRecordsWarning of repeats kept as runs (``shown``: the rows, or example cells), for every reader."""
    warn_user(
        f"{n_rep} of {n_read} records{where} repeat an earlier record in every column "
        f"({shown}); with no run column they are kept as separate runs "
        "(counted in attrs['n_repeated_records']). Give the run column (`run`), say they are "
        "runs with duplicates='keep', or keep one of each with duplicates='drop'",
        RepeatedRecordsWarning,
    )


def warn_split_cells(df: pd.DataFrame, agents: np.ndarray, tasks: np.ndarray, where: str) -> int:
    """Warn about cells holding several different records in a log of one run per cell; return their count.

    Without a run column, a log where most (agent, task) cells hold a single record is a log of
    one run per cell (SWE-bench's): a cell with a second, *different* record (a merged or re-run
    log, a result recorded twice) is as suspect as an exact copy, which ``copies_reason``
    refuses. Such records are kept as runs (nothing is dropped) but named here.
    """
    cells = pd.DataFrame({"a": agents, "t": tasks})
    size = cells.value_counts(sort=False)

    def distinct() -> pd.Series:
        multi = cells.set_index(["a", "t"]).index.isin(size[size > 1].index)
        keys = pd.DataFrame({"a": agents[multi], "t": tasks[multi], "k": _row_keys(df[multi]).to_numpy()})
        return keys.drop_duplicates().groupby(["a", "t"], sort=False).size()

    return warn_split_counts(size, distinct, where)


def warn_split_counts(size: pd.Series, distinct: Callable[[], pd.Series], where: str) -> int:
    """The rule of :func:`warn_split_cells` on counts: every reader's, from records or from a group-by.

    ``size``: records per (agent, task) cell; ``distinct()``: the distinct records of the cells
    holding several, on the same index, asked for only where most cells hold one record and
    some hold more (it may be a pass over the records). Returns the split cells' count.
    """
    n_single = int((size == 1).sum())
    if n_single * 2 <= len(size) or n_single == len(size):
        return 0
    n_diff = distinct()
    split = n_diff[n_diff > 1]
    if not len(split):
        return 0
    ex = [f"{a}/{t} ({int(size[(a, t)])} records)" for a, t in split.index[:5]]
    warn_user(
        f"{len(split)} (agent, task) cells{where} hold several different records, while {n_single} of "
        f"{len(size)} cells hold one, as in a log of one run per cell: {_fmt_list(ex, 5)}"
        + (f" ({len(split)} in all)" if len(split) > 5 else "")
        + ". With no run column they are kept as separate runs; if they are one run recorded twice "
        "(a merged or re-run log), keep one record per cell before reading; if they are runs, give "
        "the run column (`run`)",
        RepeatedRecordsWarning,
    )
    return len(split)


def apply_duplicates(
    df: pd.DataFrame,
    agents: np.ndarray,
    tasks: np.ndarray,
    *,
    duplicates: str,
    has_run: bool,
    skip: set,
    where: str,
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, int, int]:
    """Apply the duplicates policy: (records, agents, tasks, copies dropped, repeats kept as runs).

    ``"drop"`` keeps the first of each set of identical records; ``"refuse"``
    without a run column refuses repeats that look like copies
    (``copies_reason``) and keeps the others with a warning; ``"keep"``
    keeps every record. With a run column a repeat is a repeated (agent,
    task, run), refused later.
    """
    if has_run and duplicates != "drop":  # a repeat is a repeated (agent, task, run): refused later
        return df, agents, tasks, 0, 0
    keys = _row_keys(df)
    dup = keys.duplicated(keep="first").to_numpy()
    if not dup.any():
        return df, agents, tasks, 0, 0
    if duplicates == "drop":
        keep = ~dup
        return df[keep].reset_index(drop=True), agents[keep], tasks[keep], int(dup.sum()), 0
    if duplicates == "refuse":
        cell_sizes = pd.DataFrame({"a": agents, "t": tasks}).value_counts()
        mult = keys.value_counts().value_counts().to_dict()
        why = copies_reason(
            mult, len(df), len(cell_sizes), lambda: _distinct_per_column(df, skip),
            n_single_cells=int((cell_sizes == 1).sum()),
        )  # fmt: skip
        if why is not None:
            raise _copies_error(df, keys, dup, where, why)
        _repeats_warning(keys, dup, where)
    return df, agents, tasks, 0, int(dup.sum())
