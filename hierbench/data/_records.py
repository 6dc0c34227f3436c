"""Run records (DataFrame, CSV, JSONL, Parquet) into the eval dataset, and back.

:func:`from_records` works in four steps, each its own function here:

1. reading: :func:`~hierbench.data._table.read_table` (file or DataFrame -> a
   table of raw values, nothing parsed that is not asked for);
2. mapping: the options and columns to their roles (:func:`_roles`), the
   identifiers, the duplicates policy (:mod:`hierbench.data._duplicates`),
   scores and error flags, the run index;
3. validation: each rule with its message (scores, run keys, global run ids);
4. assembly: the agent x task x run cube, its coords and the read report.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from .._base import SOURCE_COLUMN
from .._base import HierbenchWarning
from .._base import counted
from .._base import warn_user
from ._duplicates import _row_keys
from ._duplicates import apply_duplicates
from ._duplicates import warn_split_cells
from ._schema import BATTLES_HINT
from ._schema import MEASURES
from ._schema import REPORT_KEYS
from ._schema import RESERVED
from ._schema import SCHEMA_VERSION
from ._schema import ErroredRunsWarning
from ._schema import EvalDataError
from ._schema import InconsistentAttributeWarning
from ._schema import UnreadColumnWarning
from ._schema import _bad_measure
from ._schema import _fmt_list
from ._schema import _not_kept_attr
from ._schema import battle_columns
from ._schema import check_eval_dataset
from ._schema import check_option
from ._schema import missing_columns_error
from ._schema import score_kind
from ._table import TYPES_BY_FILE
from ._table import _hive_keys as _hive_keys  # for _large
from ._table import read_table
from ._values import NA_TEXT
from ._values import canonical_ints
from ._values import error_flags
from ._values import grade_levels
from ._values import grade_names
from ._values import grade_positions
from ._values import id_labels
from ._values import is_missing
from ._values import numbers
from ._values import warn_similar_labels

__all__ = ["from_records", "read_table", "to_records"]

ErrorPolicy = Literal["fail", "exclude"]
RunIndex = Literal["auto", "label", "within_cell"]
DuplicatePolicy = Literal["refuse", "drop", "keep"]
#: a grade scale and its labels (None: grades written as numbers), :func:`grade_levels`
Grades = tuple[np.ndarray, tuple[str, ...] | None]

#: the column :func:`from_records` reads the agents from unless told otherwise
AGENT_COLUMN = "agent"
#: column names that usually hold a run's agent (model): read as the agent only when named
AGENT_LIKE = ("agent", "model", "model_name", "alias", "agent_name")


# --------------------------------------------------------------------------- reading


def _read(obj, encoding: str) -> tuple[pd.DataFrame, str]:
    """Return (records, source) of a DataFrame or file, refusing an input without records."""
    df, source = read_table(obj, encoding=encoding)
    if len(df) == 0:
        raise EvalDataError(f"`obj` ({source}) holds no records")
    return df.reset_index(drop=True), source


# --------------------------------------------------------------------------- mapping: roles


@dataclass(frozen=True)
class _Roles:
    """The column of each role (None: not given) and the per-run / per-task / per-agent extras."""

    agent: str | None
    task: str
    run: str | None
    score: str
    error: str | None
    tag: str | None
    cluster: str | None
    extra: dict
    annotations: dict
    task_coords: tuple
    agent_coords: tuple


def _check_options(
    errors: str, run_index: str, duplicates: str, agent_name, attrs, score_levels
) -> Grades | None:
    """Check the options that need no records; return the grade scale and labels (None: scores in [0, 1])."""
    check_option(errors, "errors", ("fail", "exclude"))
    check_option(run_index, "run_index", ("auto", "label", "within_cell"))
    check_option(duplicates, "duplicates", ("refuse", "drop", "keep"))
    if not isinstance(agent_name, str) or not agent_name:
        raise EvalDataError(f"`agent_name` must be a non-empty text; got {agent_name!r}")
    if attrs is not None and not isinstance(attrs, Mapping):
        raise EvalDataError(f"`attrs` must be a mapping of provenance; got {type(attrs).__name__}")
    clash = sorted(set(attrs or ()) & set(REPORT_KEYS))
    if clash:
        raise EvalDataError(
            f"`attrs` may add provenance but not overwrite the read report; it sets {clash}"
        )
    return None if score_levels is None else grade_levels(score_levels, "score_levels")


def _name_map(arg, argname: str) -> dict:
    """``{variable: column}`` from a mapping or a list of column names."""
    if arg is None:
        return {}
    if isinstance(arg, Mapping):
        return dict(arg)
    if isinstance(arg, str):
        raise EvalDataError(f"`{argname}` must be a mapping or a list of column names; got a string")
    return {c: c for c in arg}


def _names(arg, argname: str) -> tuple:
    """Return a list of column names (never one string, whose letters would be read as names)."""
    if isinstance(arg, str):
        raise EvalDataError(f"`{argname}` must be a list of column names; got the string {arg!r}: write [{arg!r}]")
    return tuple(arg)


def _is_name(c) -> bool:
    return isinstance(c, (str, int, np.integer)) and not isinstance(c, (bool, np.bool_))


def _check_roles(roles: _Roles) -> None:
    """Each role a column name, the identity roles on different columns, no name taken twice."""
    ident = {k: getattr(roles, k) for k in ("agent", "task", "run", "score", "error")}
    for k, c in {**ident, "tag": roles.tag, "cluster": roles.cluster}.items():
        if (c is not None or k in ("task", "score")) and not _is_name(c):
            raise EvalDataError(f"`{k}` must be a column name (text); got {type(c).__name__} {c!r}")
    given = [(k, c) for k, c in ident.items() if c is not None]
    for i, (k, c) in enumerate(given):
        for k2, c2 in given[i + 1 :]:
            if c == c2:
                raise EvalDataError(f"`{k}` and `{k2}` must be different columns; both are {c!r}")
    taken: dict[str, str] = {}
    for argname, names in (("extra", roles.extra), ("annotations", roles.annotations),
                           ("task_coords", roles.task_coords), ("agent_coords", roles.agent_coords)):  # fmt: skip
        for v in names:
            if v in RESERVED:
                raise EvalDataError(
                    f"`{argname}` names {v!r}, one of the names the dataset gives its own "
                    f"variables and coords {_fmt_list(RESERVED)}; choose another name"
                    + (f" (or pass {v}=...)" if v in ("tag", "cluster") else "")
                )
            if v in taken:
                raise EvalDataError(
                    f"`{argname}` and `{taken[v]}` both name {v!r}: each variable and coord needs its own name"
                )
            taken[v] = argname


def _roles(df: pd.DataFrame, source: str, agent_name: str, **cols) -> _Roles:
    """Return the roles, checked against the columns the records have (:func:`_check_one_agent` too)."""
    roles = _Roles(
        **{k: cols[k] for k in ("agent", "task", "run", "score", "error", "tag", "cluster")},
        extra=_name_map(cols["extra"], "extra"),
        annotations=_name_map(cols["annotations"], "annotations"),
        task_coords=_names(cols["task_coords"], "task_coords"),
        agent_coords=_names(cols["agent_coords"], "agent_coords"),
    )
    _check_roles(roles)
    needed = {"task": roles.task, "score": roles.score}
    if roles.agent is not None:
        needed["agent"] = roles.agent
    for argname in ("run", "error", "tag", "cluster"):
        if getattr(roles, argname) is not None:
            needed[argname] = getattr(roles, argname)
    for v, c in roles.extra.items():
        needed[f"extra[{v!r}]"] = c
    for v, c in roles.annotations.items():
        needed[f"annotations[{v!r}]"] = c
    for c in (*roles.task_coords, *roles.agent_coords):
        needed[c] = c
    missing = {k: c for k, c in needed.items() if c not in df.columns}
    if missing:
        raise missing_columns_error(missing, f" in {source}", list(map(str, df.columns)))
    _check_battles(df, roles, source, set(needed.values()))
    _check_one_agent(df, roles, agent_name, source, set(needed.values()))
    _say_unread(df, source, roles, set(needed.values()))
    return roles


def _check_battles(df: pd.DataFrame, roles: _Roles, source: str, used: set) -> None:
    """Refuse a pairwise battle table read as a run log: the agent column one side, its partner unread.

    LLMFAO read with ``agent='left', score='winner'`` (and its labels as ``score_levels``) passed
    as a run log of 59 agents: each record's score was the left model's verdict against another
    opponent each time, the opponent (``right``) dropped without a word, and ``compare`` set
    left-side win shares over unmatched opponents side by side. ``battle_columns`` tells them
    apart from a run log whose other column happens to be called ``right``.
    """
    unread = [c for c in df.columns if c not in used]
    battle = None if roles.agent is None else battle_columns(df.columns, agent=roles.agent, unread=unread)
    if battle is None:
        return
    side, other, verdict = battle
    one = "/" not in verdict  # a verdict column (not a score per side)
    call = (f"hierbench.data.read_battles(..., left={side!r}, right={other!r}, winner={verdict!r}"
            + (f", task={roles.task!r}" if roles.task not in (side, other) else "") + ")")  # fmt: skip
    raise EvalDataError(
        f"`agent`={side!r} in {source} is one side of pairwise battles ({side}, {other}, {verdict}): "
        f"column {other!r}, which no role reads, holds the other side and {verdict!r} "
        f"{'the verdict' if one else 'a score per side'}, so each record compares two agents; read as a run "
        "log, each score would be one side's result against a different opponent, the opponent dropped. "
        f"Battles are not a run log of scores: {BATTLES_HINT}"
        + (f", e.g. {call} (outcomes= maps verdicts other than left / right / tie)" if one else "")
    )


#: what reading leaves out when a column named like a role is not given it
_UNREAD = {
    "run": "runs are numbered per cell in file order, and a repeated (agent, task, run) is not caught",
    "error": "no run counts as an infrastructure error",
    "cluster": "tasks are taken as independent (no clusters)",
}


def _say_unread(df: pd.DataFrame, source: str, roles: _Roles, used: set) -> None:
    """Warn where the records have a column named like a role (``run``, ``error``, ``cluster``) not read as it.

    agent, task and score are read by their names by default; these three are read only when
    named, so a file written with them (``to_records`` writes ``run`` and ``error``) would
    otherwise lose them without a word. With ``agent=None``, a column named like an agent
    column (``AGENT_LIKE``) holding several values is listed too: its runs are read as
    one agent's.
    """
    unread = {c: c for c in _UNREAD if getattr(roles, c) is None and c in df.columns and c not in used}
    if roles.agent is None:
        for c in AGENT_LIKE:
            if c in df.columns and c not in used and _n_distinct(df[c]) > 1:
                unread[c] = "agent"
    if not unread:
        return
    names = ", ".join(f"'{c}'" for c in unread)
    # `run='run'`: the command line says it as its flag, --run run (cli._user_words)
    kw = ", ".join(f"`{r}='{c}'`" for c, r in unread.items())
    why = [_UNREAD[c] for c, r in unread.items() if r != "agent"]
    agents = [c for c, r in unread.items() if r == "agent"]
    if agents:
        why.append(
            f"every record is read as a run of the one agent `agent_name`, although {_fmt_list(agents)} "
            "hold several values"
        )
    warn_user(
        f"{source} has columns named like roles but not read as them: {names}. So "
        + "; ".join(why)
        + f". To read them, name them: {kw}",
        UnreadColumnWarning,
    )


def _n_distinct(col: pd.Series) -> int:
    try:
        return int(col[~is_missing(col)].nunique())
    except TypeError:  # lists or dicts from JSON
        return int(col[~is_missing(col)].map(repr).nunique())


def _agent_like_split(df: pd.DataFrame, roles: _Roles, used: set) -> tuple[str, int, list] | None:
    """A column outside the roles that splits every (task[, run]) cell into the same k > 1 groups.

    Read with ``agent=None``, its groups (models) would become runs of one agent. Candidates:
    the agent-like names, and every other text column that is not all numbers (a trial number
    splits the cells too) nor one value per record (a run id, a time). Returns (column, k, values).
    """
    cell = [roles.task] + ([roles.run] if roles.run is not None else [])
    keys = df[cell].astype(str)
    for c in df.columns:
        if c in used:
            continue
        col = df[c]
        if c not in AGENT_LIKE:
            if not (col.dtype == object or pd.api.types.is_string_dtype(col.dtype)):
                continue
            _, bad = numbers(col)
            if not bad.any():  # numbers (or missing) only: a trial, a count
                continue
        text = col.astype(str) if col.dtype != object else col.map(repr)
        n = _n_distinct(col)
        if n <= 1 or n == len(df):
            continue
        per_cell = text.groupby([keys[k] for k in cell], sort=False).nunique()
        if per_cell.min() == per_cell.max() > 1:
            return str(c), int(per_cell.iloc[0]), pd.unique(col[~is_missing(col)].to_numpy()).tolist()
    return None


def _check_one_agent(df: pd.DataFrame, roles: _Roles, agent_name: str, source: str, used: set) -> None:
    """Refuse ``agent=None`` on records whose agent column, or a column like it, names several agents.

    Read as one agent's log, their runs would be merged into runs of one agent
    (three models of one task set became three "runs" per cell of ``agent_name``): a column
    ``agent`` holding several values is refused, and so is any column that splits every
    (task, run) cell into the same number of groups (``_agent_like_split``; tau-bench
    names it ``model``, SWE-bench ``model_name``, METR ``alias``).
    """
    col = AGENT_COLUMN
    if roles.agent is not None:
        return
    if col in df.columns and col not in used:
        values = df[col][~is_missing(df[col])]
        distinct = pd.unique(values.to_numpy())
        if len(distinct) > 1:
            raise EvalDataError(
                f"`agent_name`={agent_name!r} with no agent column reads every record as one agent's "
                f"runs, but the records in {source} have an agent column {col!r} holding "
                f"{len(distinct)} distinct values {_fmt_list(distinct.tolist(), 5)}: their runs would "
                f"be merged into one agent's. Read the agents from that column instead (`agent`={col!r}, "
                "without `agent_name`)"
            )
    split = _agent_like_split(df, roles, used)
    if split is not None:
        c, k, values = split
        cell = "(task, run)" if roles.run is not None else "task"
        raise EvalDataError(
            f"`agent_name`={agent_name!r} with no agent column reads every record as one agent's "
            f"runs, but column {c!r} in {source} splits the records of every {cell} cell into the "
            f"same {k} groups ({len(values)} distinct values {_fmt_list(values, 5)}), as an agent "
            f"(model) column does: their runs would be merged into one agent's ({k} times as many "
            f"runs per cell). Read the agents from it (`agent`={c!r}, without `agent_name`), or "
            "keep one agent's records before reading"
        )


# --------------------------------------------------------------------------- mapping: values


@dataclass
class _Records:
    """The kept records mapped to their roles, one entry per record."""

    df: pd.DataFrame
    source: str
    agents: np.ndarray
    tasks: np.ndarray
    score: np.ndarray
    error: np.ndarray
    run: np.ndarray
    run_ids: np.ndarray | None
    n_read: int
    n_copies: int
    n_repeated: int
    levels: np.ndarray | None = None
    labels: tuple[str, ...] | None = None
    n_overwritten: int = 0


def _numeric(df: pd.DataFrame, column: str, role: str, where: str, hint: str = "") -> np.ndarray:
    """The column's values as floats, or an error naming the rows that are not numbers (then ``hint``)."""
    values, bad = numbers(df[column])
    if bad.any():
        rows = np.flatnonzero(bad)
        raise EvalDataError(
            f"`{role}` column {column!r}{where} must be numeric; rows {_fmt_list(rows.tolist())} hold "
            f"{_fmt_list(df[column][bad].astype(str).tolist())}{hint}"
        )
    return values


def _graded(sc: np.ndarray, levels: np.ndarray, score: str, where: str) -> np.ndarray:
    """Grades of the scale ``levels`` as scores in [0, 1] (:func:`grade_positions`); any other value refused."""
    off = np.isfinite(sc) & ~np.isin(sc, levels) | np.isinf(sc)
    if off.any():
        rows = np.flatnonzero(off)
        # as the reader gave them (--levels 1,2,3,4 read "[1.0, 2.0, 3.0, 4.0]"); a value exactly, never rounded
        held = [int(v) if float(v).is_integer() else float(v) for v in sc[rows]]
        raise EvalDataError(
            f"`score` column {score!r}{where} holds grades outside `score_levels` {', '.join(grade_names(levels))} "
            f"(each grade must be one of them); rows {_fmt_list(rows.tolist())} hold {_fmt_list(held)}"
        )
    return grade_positions(sc, levels)


def _labelled(col: pd.Series, labels: tuple[str, ...], score: str, where: str) -> np.ndarray:
    """Grades written as words: each label's place ``k`` in ``labels`` (NaN: missing); any other value refused.

    A label is matched exactly as written: ``'Yes'`` and ``' yes'`` are not ``'yes'``
    (the message names such near misses). Missing: an empty cell or a missing-value
    spelling (:data:`NA_TEXT`) that is not itself a label.
    """
    place = {v: k for k, v in enumerate(labels)}
    obj = col.astype(object)
    na_text = obj.map(lambda v: isinstance(v, str) and v not in place and v.strip() in NA_TEXT)
    known = obj.map(lambda v: isinstance(v, str) and v in place).to_numpy(dtype=bool)
    off = ~(obj.isna().to_numpy(dtype=bool) | na_text.to_numpy(dtype=bool) | known)
    if off.any():
        rows = np.flatnonzero(off)
        bad = obj.iloc[rows].tolist()
        folded = {v.strip().casefold(): v for v in labels}
        near = {str(v): folded[v.strip().casefold()] for v in bad if isinstance(v, str) and v.strip().casefold() in folded}
        hint = (
            "; near misses (labels are matched exactly, never case-folded or stripped): "
            + ", ".join(f"{v!r} is not {lab!r}" for v, lab in near.items())
            if near else ""
        )  # fmt: skip
        tally: dict[str, int] = {}
        for v in bad:
            tally[repr(v)] = tally.get(repr(v), 0) + 1
        distinct = ", ".join(f"{v} ({n} row{'s' * (n > 1)})" for v, n in list(tally.items())[:10])
        raise EvalDataError(
            f"`score` column {score!r}{where} holds values that are not labels of `score_levels` "
            f"{list(labels)!r} (each grade must be one of them, written exactly): rows "
            f"{_fmt_list(rows.tolist())} hold {distinct}{', ...' if len(tally) > 10 else ''}{hint}"
        )
    return np.array([place.get(v, np.nan) if isinstance(v, str) else np.nan for v in obj], dtype=float)


def _scores(
    df: pd.DataFrame, roles: _Roles, source: str, error_values, levels: Grades | None
) -> tuple[np.ndarray, np.ndarray]:
    """(score, error flag) per record, validated: numeric, in [0, 1] (or grades), NaN only on an error."""
    where = f" in {source}"
    score = roles.score
    if levels is not None and levels[1] is not None:  # grades written as words: their place in order
        sc = grade_positions(_labelled(df[score], levels[1], score, where), levels[0])
    else:
        words = "; grades written as words: give their labels in order as `score_levels`"
        sc = _numeric(df, score, "score", where, words)
        if levels is not None:
            sc = _graded(sc, levels[0], score, where)
    err = (
        error_flags(
            df[roles.error], what="error", column=roles.error, source=source, error_values=error_values
        )
        if roles.error is not None
        else np.zeros(len(df), bool)
    )
    out_of_range = np.isfinite(sc) & ((sc < 0) | (sc > 1)) | np.isinf(sc)
    if out_of_range.any():
        rows = np.flatnonzero(out_of_range)
        raise EvalDataError(
            f"`score` column {score!r}{where} must lie in [0, 1]; rows {_fmt_list(rows.tolist())} hold "
            f"{_fmt_list(sc[rows].tolist())}; ordinal grades (e.g. 1 to 5): give their scale as "
            "`score_levels`"
        )
    nan_no_err = np.isnan(sc) & ~err
    if nan_no_err.any():
        rows = np.flatnonzero(nan_no_err)
        raise EvalDataError(
            f"`score` column {score!r}{where} is missing (NaN) on {len(rows)} runs not flagged as "
            f"infrastructure errors, rows {_fmt_list(rows.tolist())}: a run without a score must "
            "be flagged in the `error` column, or dropped before reading"
        )
    return sc, err


def _run_labels(rcol: pd.Series, run: str, source: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(labels as text, integers or None) of a run column."""
    labels = id_labels(rcol, what="run", column=run, source=source)
    if pd.api.types.is_integer_dtype(rcol.dtype) or (
        pd.api.types.is_float_dtype(rcol.dtype) and np.all(np.mod(rcol.to_numpy(), 1) == 0)
    ):
        ints = rcol.to_numpy().astype(np.int64)
        return ints.astype(str).astype(object), ints
    return labels, canonical_ints(labels)


def _check_run_keys(df: pd.DataFrame, cell: pd.DataFrame, labels, where: str, duplicates: str) -> None:
    """Each (agent, task, run) once."""
    key = cell.assign(r=labels)
    dup = key.duplicated(["a", "t", "r"], keep=False).to_numpy()
    if not dup.any():
        return
    rows = np.flatnonzero(dup)
    ex = key.iloc[rows[:5]].astype(str).agg("/".join, axis=1).tolist()
    raise EvalDataError(
        f"duplicate (agent, task, run){where}: {len(rows)} records share a key, rows "
        f"{_fmt_list(rows.tolist())} (e.g. {_fmt_list(ex, 5)}); each run must appear once"
        + (
            "; they are exact copies of one record (a log read twice?): pass "
            "duplicates='drop' to keep one of each"
            if duplicates == "refuse" and _row_keys(df.iloc[rows]).duplicated(keep=False).all()
            else ""
        )
    )


def _check_global_ids(ints, within, agents, tasks, run: str, where: str) -> None:
    """Refuse integer run labels that look like global run ids rather than shared occasions."""
    n_lab = len(pd.unique(ints))
    most = int(within.max()) + 1
    if n_lab <= 2 * most:
        return
    n_a, n_t = len(pd.unique(agents)), len(pd.unique(tasks))
    size = n_a * n_t * n_lab
    raise EvalDataError(
        f"`run` column {run!r}{where} holds {n_lab} distinct run labels, but no "
        f"(agent, task) cell has more than {most} runs: the labels look like global run "
        f"ids, not occasions shared by the cells. As the run coordinate they would make "
        f"a {n_a} x {n_t} x {n_lab} cube ({size:,} slots, about "
        f"{size * 17 / 1e6:,.0f} MB, {100 * len(agents) / size:.2g}% filled). Pass "
        "run_index='within_cell' to number runs 0, 1, ... within each cell (the labels "
        "are kept as `run_id`), or run_index='label' to keep them as the coordinate"
    )


def _runs(
    df: pd.DataFrame, agents, tasks, run: str | None, source: str, run_index: str, duplicates: str
) -> tuple[np.ndarray, np.ndarray | None]:
    """(run coordinate per record, run_id per record or None)."""
    cell = pd.DataFrame({"a": agents, "t": tasks})
    within = cell.groupby(["a", "t"], sort=False).cumcount().to_numpy()
    if run is None:
        return within, None
    where = f" in {source}"
    labels, ints = _run_labels(df[run], run, source)
    _check_run_keys(df, cell, labels, where, duplicates)
    if run_index == "label" and ints is None:
        bad = [v for v in pd.unique(labels) if canonical_ints(np.array([v])) is None]
        raise EvalDataError(
            f"`run_index='label'` needs integer run labels; `run` column {run!r}{where} holds "
            f"{_fmt_list(bad, 5)}; use run_index='within_cell'"
        )
    if run_index == "within_cell" or ints is None:
        if run_index == "auto":  # asked for by name, within_cell is said by attrs["run_index"] alone
            _warn_cell_numbered(labels, within, cell, run, where)
        return within, labels
    if run_index == "auto":
        _check_global_ids(ints, within, agents, tasks, run, where)
    return ints, None


def _warn_cell_numbered(labels: np.ndarray, within: np.ndarray, cell: pd.DataFrame, run: str, where: str) -> None:
    """Warn where text run labels numbered within each cell put one label at different run numbers.

    Under ``run_index="auto"`` labels that are not integers (``seed1``, ``epoch-2``) are numbered
    0, 1, ... per (agent, task) cell in file order and kept as ``run_id``. Where a label recurs in
    several cells (a seed, an epoch: an occasion) and lands on different numbers, run r is not
    the same occasion in every cell, and a ``(1|run)`` term would pool different labels. Labels
    each in one cell (METR's run ids) or in the same place in every cell are numbered without a word.
    """
    frame = cell.assign(lab=labels, r=within)
    spread = frame.groupby("lab", sort=False)["r"].agg(["size", "nunique"])
    shifted = spread[(spread["size"] > 1) & (spread["nunique"] > 1)]
    if shifted.empty:
        return
    lab = shifted.index[0]
    rows = frame[frame["lab"] == lab]
    one, two = rows.iloc[0], rows[rows["r"] != rows["r"].iloc[0]].iloc[0]
    warn_user(
        f"`run` column {run!r}{where} holds labels that are not integers, so under run_index='auto' the "
        "runs were numbered 0, 1, ... within each (agent, task) cell in file order, the labels kept as "
        f"the per-run variable `run_id`. {len(shifted)} of "
        f"{len(spread)} labels recur in several cells at different run numbers (e.g. {lab!r} is run "
        f"{one['r']} in {one['a']}/{one['t']} and run {two['r']} in {two['a']}/{two['t']}): run r is not "
        "the same occasion in every cell, and a (1|run) term or a comparison by run pools different "
        "labels. If the labels are occasions shared by the cells (seeds, epochs), map them to integers "
        "before reading (e.g. 'seed1' -> 1) to make them the run coordinate; run_index='within_cell' "
        "numbers them per cell without this warning",
        HierbenchWarning,
    )


def _id_source(df: pd.DataFrame, col, source: str) -> str:
    """``source``, naming the files of a Parquet folder that stored ``col`` with different types."""
    by_type = df.attrs.get(TYPES_BY_FILE, {}).get(col)
    if not by_type:
        return source
    return f"{source} (stored as " + "; ".join(f"{t} in {_fmt_list(fs, 3)}" for t, fs in by_type.items()) + ")"


def _map_records(
    df: pd.DataFrame, source: str, roles: _Roles, *, agent_name: str, errors: str,
    error_values, run_index: str, duplicates: str, levels: Grades | None,
) -> _Records:  # fmt: skip
    """Return identifiers, the duplicates policy, scores and error flags, runs: one entry per kept record."""
    n_read = len(df)
    tasks = id_labels(df[roles.task], what="task", column=roles.task, source=_id_source(df, roles.task, source))
    agents = (
        id_labels(df[roles.agent], what="agent", column=roles.agent, source=_id_source(df, roles.agent, source))
        if roles.agent is not None
        else np.full(n_read, agent_name, dtype=object)
    )
    warn_similar_labels(tasks, what="task", column=roles.task, source=source)
    if roles.agent is not None:
        warn_similar_labels(agents, what="agent", column=roles.agent, source=source)
    skip = {c for c in (roles.agent, roles.task, roles.score, roles.error) if c is not None}
    df, agents, tasks, n_copies, n_repeated = apply_duplicates(
        df, agents, tasks, duplicates=duplicates, has_run=roles.run is not None, skip=skip,
        where=f" in {source}",
    )  # fmt: skip
    if roles.run is None:
        warn_split_cells(df, agents, tasks, f" in {source}")
    sc, err = _scores(df, roles, source, error_values, levels)
    run_idx, run_ids = _runs(df, agents, tasks, roles.run, source, run_index, duplicates)
    sc = sc.copy()
    # a recorded score > 0 on an errored run: read as 0 under "fail" (the documented rule), counted and said
    n_over = int((err & (np.nan_to_num(sc) > 0)).sum()) if errors == "fail" else 0
    sc[err] = 0.0 if errors == "fail" else np.nan
    scale, labels = levels or (None, None)
    recs = _Records(df, source, agents, tasks, sc, err, run_idx, run_ids, n_read, n_copies, n_repeated, scale, labels)
    recs.n_overwritten = n_over
    if errors == "fail":
        _warn_errored_runs(recs, roles)
    return recs


def _warn_errored_runs(recs: _Records, roles: _Roles) -> None:
    """Say what ``errors="fail"`` does beyond counting failures: scores > 0 overwritten, all-error agents."""
    frame = pd.DataFrame({"a": recs.agents, "e": recs.error})
    per = frame.groupby("a", sort=False)["e"].agg(["sum", "size"])
    warn_errored_counts(recs.n_overwritten, per, roles.error, f" in {recs.source}")


def warn_errored_counts(n_overwritten: int, per: pd.DataFrame, error: str | None, where: str) -> None:
    """The rule of :func:`_warn_errored_runs` on counts: every reader's, from records or from a group-by.

    ``per``: per agent (its index, in the order to name them), ``sum`` the runs flagged as errors
    and ``size`` the runs; ``n_overwritten``: errored runs whose score > 0 was read as 0.
    """
    if n_overwritten:
        warn_user(
            f"{n_overwritten} of {int(per['sum'].sum())} runs flagged as infrastructure errors in "
            f"`error` column {error!r}{where} recorded a score > 0; under errors='fail' an errored "
            "run scores 0, so those scores were read as 0 (counted in "
            "attrs['n_error_scores_overwritten']). If they are the agent's results, the flag is not an "
            "infrastructure error: map it with `error_values`, or pass errors='exclude'",
            ErroredRunsWarning,
        )
    all_err = per[(per["sum"] == per["size"]) & (per["size"] > 0)]
    if len(all_err):
        ex = [f"{a} ({n} runs)" for a, n in all_err["size"].items()]
        warn_user(
            f"{counted(len(all_err), 'agent')}{where} with every run flagged as an infrastructure error: "
            f"{_fmt_list(ex, 5)}; under errors='fail' each scores 0, which measures the "
            "infrastructure, not the agent. Leave them out, or pass errors='exclude' (they are then not run)",
            ErroredRunsWarning,
        )


# --------------------------------------------------------------------------- assembly


def _a(word: str) -> str:
    """``word`` with its indefinite article: "a task", "an agent"."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _one_per_group(
    df: pd.DataFrame, key: str, col: str, what: str, arg: str, source: str
) -> tuple[pd.Series, int]:
    """Return the one value of ``col`` per ``key`` (a task's or an agent's attribute), and how many were filled.

    The rule for per-task and per-agent columns (``tag``, ``cluster``, ``task_coords``,
    ``agent_coords``): one value per task (agent). Two differing values in one task are
    refused (the first seen would be an arbitrary label: METR's per-run ``started_at`` read as
    clusters gave every task the time of its first run); a value given in some of a task's
    records and missing in the others is that value, warned and counted; a task with no
    value stays missing.
    """
    sub = df[[key, col]]
    given = sub[sub[col].notna()]
    n_values = given.groupby(key, sort=False)[col].nunique()
    bad = n_values[n_values > 1]
    if len(bad):
        raise _differing_error(given, key, col, bad, (what, sub[key].nunique()), arg, source)
    first = sub.groupby(key, sort=False)[col].first()
    filled = sub[col].isna().groupby(sub[key], sort=False).any() & first.notna()
    n_filled = int(filled.sum())
    if n_filled:
        warn_user(
            f"`{arg}` column {col!r} in {source} is empty in some records of {counted(n_filled, what)} "
            f"{_fmt_list(filled.index[filled].tolist())} and holds one value in the others ({_a(what)} "
            f"attribute: one value per {what}): each of these {what}s takes that value",
            InconsistentAttributeWarning,
        )
    return first, n_filled


def _differing_error(given: pd.DataFrame, key: str, col: str, bad: pd.Series, of: tuple[str, int], arg: str,
                     source: str) -> EvalDataError:  # fmt: skip
    """The refusal of a per-task (per-agent) column holding two values in one task: how many, and examples.

    ``of``: ("task" or "agent", how many of them the records hold).
    """
    what, n_all = of
    ex = []
    for k in bad.index[:3]:
        two = pd.unique(given.loc[given[key] == k, col])[:2]
        ex.append(f"{k!r}: " + " and ".join(repr(v) if isinstance(v, str) else str(v) for v in two))
    per_run = (
        f"A quantity measured in each run (a time, a count) is a per-run variable, not {_a(what)} "
        f"attribute: leave it out of `{arg}` (a numeric one can be kept per run with `extra`)"
    )
    return EvalDataError(
        f"`{arg}` column {col!r} in {source} must hold one value per {what} ({_a(what)} attribute, the "
        f"same in every record of the {what}); {len(bad)} of {n_all} {what}s hold two or more, e.g. "
        f"{'; '.join(ex)}{f' ({len(bad) - 3} more)' if len(bad) > 3 else ''}. {per_run}; if it is {_a(what)} attribute, "
        f"fix the records so that each {what} has one value"
    )


def _real_number(v: object) -> bool:
    """A number a JSON file or an object column holds as a number: int or float, never a bool."""
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _coord_values(col: pd.Series) -> np.ndarray:
    """Return a per-task / per-agent attribute, numbers as float64 whatever the file held them as.

    Text that is all numbers (a CSV's) and a column of numbers held as Python objects (JSON's
    ints and floats, an object column of a DataFrame) become float64, as a numeric column is
    read; an empty value is missing (NaN). A column of JSON booleans with none missing becomes
    bool, as a Parquet boolean column is; booleans are never read as 0/1 here. A column mixing
    numbers with text or booleans is kept as stored, never read as numbers.
    """
    if col.dtype == object or pd.api.types.is_string_dtype(col.dtype):
        obj = col.to_numpy(dtype=object)
        if pd.api.types.infer_dtype(obj, skipna=True) == "string":
            vals, bad = numbers(col)
            if not bad.any() and np.isfinite(vals).any():
                return vals
            return np.where(obj == "", np.nan, obj)  # an empty field is a missing value
        missing = is_missing(col)
        given = obj[~missing]
        if given.size and all(_real_number(v) for v in given):
            return numbers(col)[0]  # every value given is a number (checked): none flagged
        if given.size == obj.size and all(isinstance(v, (bool, np.bool_)) for v in given):
            return obj.astype(bool)
    return col.to_numpy()


def _per_run_vars(recs: _Records, roles: _Roles) -> dict:
    """Return the agent x task x run variables: score, error, extra columns, annotations, run ids."""
    df, source, where = recs.df, recs.source, f" in {recs.source}"
    agent_labels, task_labels = pd.unique(recs.agents), pd.unique(recs.tasks)
    run_labels = np.sort(pd.unique(recs.run))
    ai = pd.Index(agent_labels).get_indexer(recs.agents)
    ti = pd.Index(task_labels).get_indexer(recs.tasks)
    ri = pd.Index(run_labels).get_indexer(recs.run)
    shape = (len(agent_labels), len(task_labels), len(run_labels))

    def _cube(values, fill, dtype):
        arr = np.full(shape, fill, dtype=dtype)
        arr[ai, ti, ri] = values
        return arr

    dims = ("agent", "task", "run")
    data_vars = {
        "score": (dims, _cube(recs.score, np.nan, float)),
        "error": (dims, _cube(recs.error, False, bool)),
    }
    for v, c in roles.extra.items():
        vals = _numeric(df, c, "extra", where)
        if v in MEASURES and _bad_measure(vals).any():
            rows = np.flatnonzero(_bad_measure(vals))
            raise EvalDataError(
                f"`extra[{v!r}]` column {c!r}{where} must be finite and >= 0 ({v} counts or "
                f"measures: never negative); {rows.size} rows are not, rows {_fmt_list(rows.tolist())} hold "
                f"{_fmt_list(vals[rows].tolist())}"
            )
        data_vars[v] = (dims, _cube(vals, np.nan, float))
    for v, c in roles.annotations.items():
        flags = error_flags(df[c], what=f"annotations[{v!r}]", column=c, source=source)
        data_vars[v] = (dims, _cube(flags, False, bool))
    if recs.run_ids is not None:
        data_vars["run_id"] = (dims, _cube(recs.run_ids, "", object))
    return data_vars


def _coords(recs: _Records, roles: _Roles) -> tuple[dict, dict[str, int], dict[str, int]]:
    """(coords, inconsistent attributes per coord, tasks without a label per tag / cluster)."""
    df, source = recs.df, recs.source
    agent_labels, task_labels = pd.unique(recs.agents), pd.unique(recs.tasks)
    coords: dict[str, object] = {
        "agent": np.asarray(agent_labels, dtype=str),
        "task": np.asarray(task_labels, dtype=str),
        "run": np.sort(pd.unique(recs.run)).astype(np.int64),
    }
    n_inconsistent: dict[str, int] = {}
    n_unlabelled: dict[str, int] = {}
    tframe = pd.DataFrame({"__task": recs.tasks})
    per_task = (("tag", roles.tag), ("cluster", roles.cluster), *((c, c) for c in roles.task_coords))
    for name, col in per_task:
        if col is None:
            continue
        if name in ("tag", "cluster"):
            tframe[col] = id_labels(df[col], what=name, column=col, source=source, allow_missing=True)
            warn_similar_labels(tframe[col].to_numpy(), what=name, column=col, source=source)
        else:
            tframe[col] = _coord_values(df[col])
        arg = name if name in ("tag", "cluster") else "task_coords"
        first, n_bad = _one_per_group(tframe, "__task", col, "task", arg, source)
        vals, attrs = first.reindex(task_labels).to_numpy(), {}
        if name in ("tag", "cluster"):
            vals = np.array([None if pd.isna(v) else str(v) for v in vals], dtype=object)
            n_unlabelled[name] = int(sum(v is None for v in vals))
            # the column the user named: what messages call the clusters (_base.cluster_label)
            attrs = {SOURCE_COLUMN: str(col)}
        coords[name] = ("task", vals, attrs)
        n_inconsistent[f"task {name}"] = n_bad
    aframe = pd.DataFrame({"__agent": recs.agents})
    for col in roles.agent_coords:
        aframe[col] = _coord_values(df[col])
        first, n_bad = _one_per_group(aframe, "__agent", col, "agent", "agent_coords", source)
        coords[col] = ("agent", first.reindex(agent_labels).to_numpy())
        n_inconsistent[f"agent {col}"] = n_bad
    return coords, n_inconsistent, n_unlabelled


def _read_report(recs: _Records, roles: _Roles, errors: str, n_inconsistent, n_unlabelled) -> dict:
    """Return the attrs that say what was read, kept and not kept."""
    n_error = int(recs.error.sum())
    not_kept = {}
    if recs.n_copies:
        not_kept["exact copy of an earlier record (duplicates='drop')"] = recs.n_copies
    if errors == "exclude":
        not_kept["infrastructure error, excluded (errors='exclude')"] = n_error
    kind = score_kind(recs.score)
    attrs = {
        "hierbench_schema": SCHEMA_VERSION,
        "reader": "from_records",
        "source": recs.source,
        "errors": errors,
        "n_records_read": int(recs.n_read),
        "n_records_kept": len(recs.df) - (n_error if errors == "exclude" else 0),
        "n_error_runs": n_error,
        "score_kind": kind,
        "binary": int(kind == "binary"),
        "not_kept": _not_kept_attr(not_kept),
        "inconsistent_attributes": json.dumps({k: v for k, v in n_inconsistent.items() if v}),
        "annotations": json.dumps(sorted(roles.annotations)),
    }
    # the columns put on the dims `agent` / `task`: a formula naming one is told to write the dim
    if roles.agent is not None:
        attrs["agent_column"] = str(roles.agent)
    attrs["task_column"] = str(roles.task)
    if errors == "fail" and roles.error is not None:
        attrs["n_error_scores_overwritten"] = recs.n_overwritten
    if roles.run is None:
        attrs["n_repeated_records"] = recs.n_repeated
    else:  # the labels as the run coordinate, or numbered within each cell (the labels kept as run_id)
        attrs["run_index"] = "label" if recs.run_ids is None else "within_cell"
    if recs.levels is not None:  # the scale the grades were read on, for an ordinal fit of `score`
        attrs["score_levels"] = json.dumps(recs.levels.tolist())
    if recs.labels is not None:  # grades written as words: the label of each grade of score_levels
        attrs["score_labels"] = json.dumps(list(recs.labels))
    for name, k in n_unlabelled.items():
        attrs[f"n_tasks_without_{name}"] = k
    return attrs


def _role_columns(roles: _Roles) -> set:
    """Every column the roles read: identity, score, error, tag, cluster, extra, annotations, coords."""
    named = (roles.agent, roles.task, roles.run, roles.score, roles.error, roles.tag, roles.cluster)
    return {c for c in named if c is not None} | {
        *roles.extra.values(), *roles.annotations.values(), *roles.task_coords, *roles.agent_coords
    }


def _assemble(recs: _Records, roles: _Roles, errors: str, attrs: Mapping | None) -> xr.Dataset:
    """Return the eval dataset of the mapped records, with its read report in ``attrs``."""
    data_vars = _per_run_vars(recs, roles)
    coords, n_inconsistent, n_unlabelled = _coords(recs, roles)
    ds = xr.Dataset(data_vars, coords=coords)
    ds.attrs = _read_report(recs, roles, errors, n_inconsistent, n_unlabelled)
    # the columns no role read, in file order: validate says them ("what was read, kept and why")
    used = _role_columns(roles)
    ds.attrs["columns_not_read"] = json.dumps([str(c) for c in recs.df.columns if c not in used])
    if attrs:
        ds.attrs.update(dict(attrs))
    return ds


# --------------------------------------------------------------------------- the reader


def from_records(
    obj: pd.DataFrame | str | os.PathLike,
    *,
    agent: str | None = AGENT_COLUMN, task: str = "task",
    run: str | None = None, score: str = "score",
    error: str | None = None,
    tag: str | None = None, cluster: str | None = None,
    extra: Mapping[str, str] | Sequence[str] | None = None,
    annotations: Mapping[str, str] | Sequence[str] | None = None,
    task_coords: Sequence[str] = (), agent_coords: Sequence[str] = (),
    agent_name: str = "agent", errors: ErrorPolicy = "fail",
    error_values: Mapping[object, bool] | str | None = None,
    run_index: RunIndex = "auto", duplicates: DuplicatePolicy = "refuse", encoding: str = "utf-8",
    attrs: Mapping[str, object] | None = None,
    score_levels: Sequence[float] | Sequence[str] | None = None,
) -> xr.Dataset:  # fmt: skip (the parameters documented together share a line)
    """Read run records (one per run of one agent on one task) into the canonical eval dataset.

    Nothing is merged, coerced or dropped silently: labels are kept as written, scores as
    recorded (partial credit stays partial), every record not kept is counted in
    ``attrs["not_kept"]``; the reading rules are in :mod:`hierbench.data`.

    Parameters
    ----------
    obj : DataFrame or path
        A DataFrame, or a CSV, TSV, JSONL or Parquet file or folder (:func:`read_table`).
    agent, task, run, score : str
        Column names; ``run=None``: runs numbered 0, 1, ... per cell in file order.
    error : str, optional
        Column flagging infrastructure failures (error-flag vocabulary).
    tag, cluster : str, optional
        Per-task labels: one per task (a task whose records hold two different labels is
        refused; one given in some records and empty in others is the task's, counted and
        warned), a task with none stays missing. The coord records the column in its
        ``source_column`` attr: messages and reports call the clusters by that name.
    extra, annotations : mapping or sequence, optional
        Per-run numeric columns (``cost``, ``latency``, ``tokens``, ``steps``) and boolean
        flags, as ``{variable: column}`` or a list of names.
    task_coords, agent_coords : sequence of str
        Columns constant per task / per agent, kept as coords (two values in one task or agent
        are refused, as for ``cluster``).
    agent_name : str
        The agent's label when ``agent=None`` (a one-agent log; refused if an ``"agent"`` column holds
        several, or a column such as ``model`` splits every task's runs into the same groups).
    errors : {"fail", "exclude"}
        An errored run scores 0 (``"fail"``) or is not run (``"exclude"``: NaN, counted in
        ``not_kept``); ``attrs["n_error_runs"]`` counts them.
    error_values : mapping or "nonempty", optional
        What other ``error`` values mean, e.g. ``{"timeout": True}``, or ``"nonempty"`` (see Error flags).
    run_index : {"auto", "label", "within_cell"}
        ``"auto"``: integer labels are the ``run`` coordinate (refused if they look like global ids), others
        are numbered per cell in file order, kept as ``run_id`` (warned where a label gets two numbers);
        ``"label"``: integer labels always; ``"within_cell"``: numbered; ``attrs["run_index"]`` says which.
    duplicates : {"refuse", "drop", "keep"}
        Records repeating another in every column: refused when they look like copies, one of
        each kept (the others counted), or all kept as runs.
    encoding : str
        Text encoding of a CSV / TSV / JSONL file.
    attrs : mapping, optional
        Provenance to add to the dataset attrs.
    score_levels : sequence of float or str, optional
        Ordinal grades in ``score``, in order: numbers (``[1, 2, 3, 4, 5]``), each kept as its place
        ``(grade - first) / (last - first)`` in [0, 1], or words lowest first (``["no", "yes"]``,
        matched exactly), label ``k`` of ``L`` kept as ``k / (L - 1)`` (``attrs["score_labels"]``);
        any other value refused, naming the rows. The scale: ``attrs["score_levels"]``; an errored
        run under ``errors="fail"``: the lowest grade; an ordinal formula fit of ``score`` fits them.

    Returns
    -------
    xarray.Dataset
        The eval dataset; ``attrs``: the read report (``agent_column``, ``task_column``: the columns read as the dims).

    Raises
    ------
    EvalDataError
        Input that breaks a rule, naming the file, the column and the rows.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"agent": ["a", "a", "b"], "task": ["t1"] * 3, "score": [1.0, 0.0, 1.0]})
    >>> ds = from_records(df)
    >>> ds.score.sizes["run"], int(ds.score.notnull().sum())
    (2, 3)
    >>> df = pd.DataFrame({"agent": ["a", "a"], "task": ["001", "1"], "score": [1.0, 0.0]})
    >>> from_records(df).task.values.tolist()  # labels as written
    ['001', '1']
    """
    grades = _check_options(errors, run_index, duplicates, agent_name, attrs, score_levels)
    df, source = _read(obj, encoding)
    roles = _roles(
        df, source, agent_name, agent=agent, task=task, run=run, score=score, error=error, tag=tag,
        cluster=cluster, extra=extra, annotations=annotations, task_coords=task_coords,
        agent_coords=agent_coords,
    )  # fmt: skip
    recs = _map_records(
        df, source, roles, agent_name=agent_name, errors=errors, error_values=error_values,
        run_index=run_index, duplicates=duplicates, levels=grades,
    )  # fmt: skip
    return check_eval_dataset(_assemble(recs, roles, errors, attrs))


def to_records(ds: xr.Dataset) -> pd.DataFrame:
    """Flatten an eval dataset back to one row per run that happened.

    A run "happened" when its score is not NaN or it is flagged as an error
    (under ``errors="exclude"`` an errored run has a NaN score). Columns:
    ``agent, task, run, score, error`` then every other per-run variable,
    then task and agent coords.

    Parameters
    ----------
    ds : xarray.Dataset
        Eval dataset.

    Returns
    -------
    pandas.DataFrame
        One row per run; :func:`from_records` of it (with ``run="run"``)
        rebuilds ``ds``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"agent": ["a", "a", "b"], "task": ["t1", "t2", "t1"],
    ...                    "score": [1.0, 0.0, 0.5]})
    >>> to_records(from_records(df))[["agent", "task", "run", "score"]].values.tolist()
    [['a', 't1', 0, 1.0], ['a', 't2', 0, 0.0], ['b', 't1', 0, 0.5]]
    """
    check_eval_dataset(ds, name="ds")
    happened = ds["score"].notnull()
    if "error" in ds:
        happened = happened | ds["error"]
    per_run = [v for v in ds.data_vars if ds[v].dims == ("agent", "task", "run")]
    flat = ds[per_run].stack(_row=("agent", "task", "run"))
    mask = happened.stack(_row=("agent", "task", "run")).values
    out = {
        "agent": flat["agent"].values[mask],
        "task": flat["task"].values[mask],
        "run": flat["run"].values[mask],
    }
    for v in per_run:
        out[v] = flat[v].values[mask]
    for c, coord in ds.coords.items():
        if c in ("agent", "task", "run"):
            continue
        if coord.dims == ("task",):
            out[c] = coord.sel(task=out["task"]).values
        elif coord.dims == ("agent",):
            out[c] = coord.sel(agent=out["agent"]).values
    return pd.DataFrame(out)
