"""Sufficient statistics of very large run logs, computed where the log lives.

A log of 10^7 or more run records never becomes Python objects: the
validation and the agent x task reduction run inside DuckDB (embedded, over a
Parquet file or a folder of them) or as a Dask graph, and only the small
``agents x tasks`` table of counts comes back. The result is the same Dataset
that :func:`hierbench.data.to_counts` gives for ``from_records`` of the same
records (agents and tasks in sorted order).

What these reducers do not do: per-run annotations, per-task coords (tag,
cluster) and explicit run columns are outside the counts; read a sample of
the log with :func:`hierbench.data.from_records` for those.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from ._duplicates import copies_reason
from ._duplicates import warn_repeats_kept
from ._duplicates import warn_split_counts
from ._records import DuplicatePolicy
from ._records import _check_battles
from ._records import _hive_keys
from ._records import _Roles
from ._records import _row_keys
from ._records import warn_errored_counts
from ._schema import SCHEMA_VERSION
from ._schema import EvalDataError
from ._schema import _fmt_list
from ._schema import _not_kept_attr
from ._schema import check_option
from ._schema import missing_columns_error
from ._table import parquet_folder_files
from ._values import ERROR_FALSE
from ._values import ERROR_MISSING
from ._values import ERROR_TRUE
from ._values import LABEL_KINDS
from ._values import NA_TEXT
from ._values import _label
from ._values import clash_message
from ._values import error_codes
from ._values import error_mapping
from ._values import is_missing
from ._values import label_clashes
from ._values import label_kinds
from ._values import numbers
from ._values import odd_kind_error
from ._values import warn_similar_labels

if TYPE_CHECKING:  # pragma: no cover
    import dask.dataframe as dd

__all__ = ["counts_from_dask", "counts_from_parquet"]

ErrorPolicy = Literal["fail", "exclude"]


def _check_policy(errors: str, duplicates: str, error_values: object) -> tuple:
    """Both readers' policy checks (:func:`check_option`, as the record reader's); returns :func:`error_mapping`."""
    check_option(errors, "errors", ("fail", "exclude"))
    check_option(duplicates, "duplicates", ("refuse", "drop", "keep"))
    return error_mapping(error_values)


def _raise_on_bad(checks: dict[str, int], examples: dict[str, list], *, source: str, cols: dict) -> None:
    """One error listing every broken rule with its count of offending rows."""
    msgs = []
    rules = {
        "agent_null": f"`agent` column {cols['agent']!r} must not be empty",
        "task_null": f"`task` column {cols['task']!r} must not be empty",
        "run_null": f"`run` column {cols.get('run')!r} must not be empty",
        "nonnumeric": f"`score` column {cols['score']!r} must be numeric",
        "out_of_range": f"`score` column {cols['score']!r} must lie in [0, 1]",
        "missing": f"`score` column {cols['score']!r} must not be missing (NaN) on a run not "
        "flagged as an infrastructure error",
        "bad_error": f"`error` column {cols['error']!r} must hold booleans, 0/1 or one of "
        f"{sorted(ERROR_TRUE)} (error) / {sorted(ERROR_FALSE)} (no error), missing = no error",
    }
    for key, rule in rules.items():
        n = int(checks.get(key, 0))
        if n:
            ex = examples.get(key, [])
            if key == "bad_error":
                msgs.append(
                    f"{rule}: {n} rows hold other values"
                    + (f" [{', '.join(ex)}]" if ex else "")
                    + " (unknown text is never counted as an error: say what each value means with "
                    "`error_values={value: True/False, ...}` or pass error_values='nonempty')"
                )
            else:
                msgs.append(f"{rule}: {n} rows" + (f", e.g. {_fmt_list(ex, 5)}" if ex else ""))
    if msgs:
        raise EvalDataError(f"invalid run records in {source}: " + "; ".join(msgs))


def _to_dataset(
    table: pd.DataFrame,
    *,
    n_read: int,
    n_err: int,
    binary: bool,
    errors: str,
    source: str,
    reader: str,
    n_copies: int = 0,
    n_repeated: int | None = None,
    n_overwritten: int | None = None,
) -> xr.Dataset:
    """The counts as a Dataset with from_records' read report.

    ``n_repeated`` and ``n_overwritten`` are written when the reader counts them (without a run
    column; under errors='fail' with an error column), as from_records writes them.
    """
    agents = np.sort(table["agent"].unique()).astype(str)
    tasks = np.sort(table["task"].unique()).astype(str)
    idx = pd.MultiIndex.from_product([agents, tasks], names=["agent", "task"])
    full = table.set_index(["agent", "task"]).reindex(idx)
    shape = (len(agents), len(tasks))

    def grid(col, dtype):
        return full[col].fillna(0).to_numpy().astype(dtype).reshape(shape)

    ds = xr.Dataset(
        {
            "n_runs": (("agent", "task"), grid("n_runs", np.int64)),
            "n_success": (("agent", "task"), grid("n_success", np.float64)),
            "n_error": (("agent", "task"), grid("n_error", np.int64)),
        },
        coords={"agent": agents, "task": tasks},
    )
    n_excl = n_err if errors == "exclude" else 0
    ds.attrs = {
        "hierbench_schema": SCHEMA_VERSION,
        "reader": reader,
        "source": source,
        "errors": errors,
        "n_records_read": int(n_read),
        "n_records_kept": int(n_read - n_copies - n_excl),
        "n_error_runs": int(n_err),
        "not_kept": _not_kept_attr(
            {
                "exact copy of an earlier record (duplicates='drop')": n_copies,
                "infrastructure error, excluded (errors='exclude')": n_excl,
            }
        ),
        "binary": int(binary),
    }
    if n_overwritten is not None:
        ds.attrs["n_error_scores_overwritten"] = int(n_overwritten)
    if n_repeated is not None:
        ds.attrs["n_repeated_records"] = int(n_repeated)
    return ds


# ---------------------------------------------------------------- the read report's warnings
#
# What from_records says beyond the counts, said here by its own functions over the small agent x
# task table (``n_rec``: the records of each cell, errors included): similar labels, the repeated
# records rule (``copies_reason``), cells split into different records, errored runs.


def _warn_similar(table: pd.DataFrame, cols: dict, source: str) -> None:
    """``warn_similar_labels`` on the distinct task and agent labels, as from_records calls it."""
    warn_similar_labels(table["task"].unique(), what="task", column=cols["task"], source=source)
    warn_similar_labels(table["agent"].unique(), what="agent", column=cols["agent"], source=source)


def _repeat_rule(mult: Mapping[int, int], n_read: int, table: pd.DataFrame, per_col: Callable[[], Mapping[str, int]],
                 examples: Callable[[], list[str]], source: str, duplicates: str) -> int:  # fmt: skip
    """The repeated records rule without a run column: refuse copies, warn, count; returns the repeats kept.

    ``mult`` holds how many distinct records appear once, twice, ... (``copies_reason``); the
    cells holding one record come from the agent x task table, as from_records counts them.
    """
    n_rep = n_read - int(sum(mult.values()))
    if n_rep <= 0 or duplicates == "drop":
        return 0
    if duplicates == "refuse":
        n_single = int((table["n_rec"] == 1).sum())
        why = copies_reason(mult, n_read, len(table), per_col, n_single_cells=n_single)
        if why is not None:
            raise _copies_error(source, n_rep, n_read, why)
        warn_repeats_kept(n_rep, n_read, f" in {source}", f"e.g. {_fmt_list(examples(), 5)}")
    return n_rep


def _warn_split(table: pd.DataFrame, distinct: Callable[[], pd.Series], source: str) -> None:
    """``warn_split_counts`` (from_records' rule) on the agent x task table's record counts.

    ``distinct()`` gives the distinct records of each cell holding several, indexed by (agent,
    task); it is a pass over the records, made only where the rule needs it. The split cells
    are named in (agent, task) order.
    """
    size = table.set_index(["agent", "task"])["n_rec"].astype(np.int64)

    def counted() -> pd.Series:
        d = distinct()
        d.index = pd.MultiIndex.from_arrays([d.index.get_level_values(i).astype(str) for i in (0, 1)])
        return d.sort_index()

    warn_split_counts(size, counted, f" in {source}")


def _warn_errors(table: pd.DataFrame, n_overwritten: int, source: str, error: str | None) -> None:
    """``warn_errored_counts`` (from_records' rule, errors='fail') on the agent x task table's counts."""
    per = table.groupby("agent", sort=True)[["n_error", "n_rec"]].sum()
    per = per.rename(columns={"n_error": "sum", "n_rec": "size"}).astype(np.int64)
    warn_errored_counts(int(n_overwritten), per, error, f" in {source}")


def _refuse_battles(columns: list[str], cols: dict[str, str | None], source: str) -> None:
    """Refuse a pairwise battle table read as a run log, named as the record reader names it.

    The record reader's check (``_check_battles``): the agent column one side of battles
    (``left`` / ``right``, ``home`` / ``away`` ...), its partner read by no role, beside a
    verdict or a score per side. Only the column names are read, before any record is.
    """
    roles = _Roles(agent=cols["agent"], task=str(cols["task"]), run=cols["run"], score=str(cols["score"]),
                   error=cols["error"], tag=None, cluster=None, extra={}, annotations={}, task_coords=(),
                   agent_coords=())  # fmt: skip
    used = {c for c in cols.values() if c is not None}
    _check_battles(pd.DataFrame(columns=list(columns)), roles, source, used)


# ---------------------------------------------------------------- DuckDB


def _parquet_files(path_or_folder: str | os.PathLike) -> tuple[list[Path], Path | None, str]:
    p = Path(path_or_folder)
    if p.is_dir():  # the files from_records reads (.parquet, .pq, PAR1 part files); others named
        return parquet_folder_files(p, "path_or_folder"), p, str(p)
    if not p.is_file():
        raise EvalDataError(f"`path_or_folder`: no such file or folder {str(p)!r}")
    return [p], None, str(p)


def _q(name: str) -> str:
    """A SQL identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    """A SQL string literal, quoted."""
    return "'" + text.replace("'", "''") + "'"


def _in(values) -> str:
    return "(" + ", ".join(_lit(v) for v in sorted(values)) + ")" if values else "(NULL)"


_INT_SQL = re.compile(r"U?(TINY|SMALL|BIG|HUGE)?INT(EGER|\d+)?")
_FLOAT_SQL = ("DOUBLE", "FLOAT", "REAL", "FLOAT4", "FLOAT8")


def _sql_kind(t: str) -> str:
    """A column type's kind of label (``hierbench.data._values.LABEL_KINDS``), else the type.

    As pandas holds the values from_records reads: a DECIMAL is a ``decimal.Decimal``, a date a
    date, a BLOB bytes; none is a kind of label (``_refuse_odd_sql`` refuses them as identifiers).
    """
    t = t.upper()
    if t == "BOOLEAN":
        return "bool"
    if _INT_SQL.fullmatch(t):
        return "int"
    if t in _FLOAT_SQL:
        return "float"
    if t == "VARCHAR":
        return "text"
    return t


def _id_sql(col: str, t: str) -> str:
    """An identifier column as its text exactly as written (bool as True/False, as in pandas).

    A float32 value is written as the double it is (``0.10000000149011612``), as Python writes it.
    """
    c = _q(col)
    if t.upper() == "BOOLEAN":
        return f"CASE WHEN {c} THEN 'True' WHEN NOT {c} THEN 'False' END"
    if _sql_kind(t) == "float":
        return f"{c}::DOUBLE::VARCHAR"
    return f"{c}::VARCHAR"


#: Python's whitespace (what ``str.strip`` strips, all of it below U+3001) as an RE2 class: the
#: readers strip NA spellings and error words with it
_PY_SPACE = "[" + "".join(f"\\x{{{i:x}}}" for i in range(0x3001) if chr(i).isspace()) + "]"
#: The text pandas reads as a number (``pd.to_numeric``, as ``_values.numbers`` does): ASCII
#: whitespace around, ASCII digits, no ``_`` separators, no hex; inf / infinity bare. A NaN spelled
#: outside ``NA_TEXT`` is no number (from_records refuses it too).
_NUMBER_RE = (
    r"[ \t\n\x{b}\x{c}\r]*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[ \t\n\x{b}\x{c}\r]*"
    r"|[+-]?[iI][nN][fF]([iI][nN][iI][tT][yY])?"
)


def _strip_sql(expr: str) -> str:
    """``expr`` (text) stripped of whitespace as Python's ``str.strip`` strips it."""
    return f"regexp_replace({expr}, {_lit(f'^{_PY_SPACE}+|{_PY_SPACE}+$')}, '', 'g')"


def _score_sql(col: str, t: str) -> tuple[str, str]:
    """(numeric score or NULL, raw value is missing): the numbers ``_values.numbers`` reads.

    Text is a number only as pandas reads it (``_NUMBER_RE``); a date, a time, bytes or a list
    is never one (its values are refused as not numeric).
    """
    c = _q(col)
    kind = _sql_kind(t)
    if kind in ("int", "float", "bool") or kind.startswith(("DECIMAL", "NUMERIC")):
        return f"{c}::DOUBLE", f"({c} IS NULL)"
    if kind != "text":
        return "NULL::DOUBLE", f"({c} IS NULL)"
    v = f"{c}::VARCHAR"
    na = f"{_strip_sql(v)} IN {_in(NA_TEXT)}"
    return (
        f"CASE WHEN {na} THEN NULL WHEN regexp_full_match({v}, {_lit(_NUMBER_RE)}) "
        f"THEN TRY_CAST({v} AS DOUBLE) END",
        f"({c} IS NULL OR {na})",
    )


def _error_sql(col: str, t: str, mapping: dict[str, bool], nonempty: bool) -> str:
    """1 error, 0 no error, -1 outside the vocabulary (as :func:`hierbench.data._values.error_codes`)."""
    c = _q(col)
    low = f"lower({_strip_sql(f'{c}::VARCHAR')})"
    mapped = [k for k, v in mapping.items() if v], [k for k, v in mapping.items() if not v]
    head = ""
    if mapped[0]:
        head += f"WHEN {low} IN {_in(mapped[0])} THEN 1 "
    if mapped[1]:
        head += f"WHEN {low} IN {_in(mapped[1])} THEN 0 "
    kind = _sql_kind(t)
    if kind == "bool":
        return f"CASE {head}WHEN {c} THEN 1 ELSE 0 END"
    if kind in ("int", "float"):
        x = f"{c}::DOUBLE"
        return (
            f"CASE {head}WHEN {c} IS NULL OR isnan({x}) THEN 0 WHEN {x} = 1 THEN 1 "
            f"WHEN {x} = 0 THEN 0 ELSE -1 END"
        )
    return (
        f"CASE {head}WHEN {c} IS NULL OR {low} IN {_in(ERROR_MISSING | ERROR_FALSE)} THEN 0 "
        f"WHEN {low} IN {_in(ERROR_TRUE)} THEN 1 WHEN TRY_CAST({low} AS DOUBLE) = 1 THEN 1 "
        f"WHEN TRY_CAST({low} AS DOUBLE) = 0 THEN 0 ELSE {1 if nonempty else -1} END"
    )


def _copies_error(source: str, n_copies: int, n_read: int, why: str) -> EvalDataError:
    return EvalDataError(
        f"duplicate records in {source}: {n_copies} of {n_read} records repeat an earlier record "
        f"in every column and there is no run column: {why}. Counting them would add runs that "
        "never happened. Read the log once, give the run or epoch column (`run`), pass "
        "duplicates='drop' to keep one of each set of identical records (right when each run's "
        "record is unique, e.g. carries a run id), or duplicates='keep' if they are distinct runs"
    )


def _describe(con, files: list[Path], root: Path | None) -> list[tuple[Path, dict[str, str], dict[str, str]]]:
    """(file, column types, hive keys) of every Parquet file; an unreadable file is named."""
    import duckdb

    schemas = []
    for f in files:
        try:
            desc = con.execute(
                f"DESCRIBE SELECT * FROM read_parquet({_lit(str(f))}, hive_partitioning = false)"
            ).fetchall()
        except duckdb.Error as exc:
            raise EvalDataError(
                f"`path_or_folder`: {str(f)!r} could not be read as Parquet: {exc}".split("\n")[0]
            ) from exc
        types = {name: t for name, t, *_ in desc}
        hive = _hive_keys(f, root) if root is not None else {}
        hive = {k: v for k, v in hive.items() if k not in types}
        for k in hive:
            types[k] = "VARCHAR"
        schemas.append((f, types, hive))
    return schemas


def _all_columns(schemas: list, cols: dict[str, str | None], source: str) -> list[str]:
    all_cols: list[str] = []
    for _, types, _ in schemas:
        all_cols += [c for c in types if c not in all_cols]
    missing = {k: c for k, c in cols.items() if c is not None and c not in all_cols}
    if missing:
        raise missing_columns_error(missing, f" in {source}", all_cols)
    return all_cols


def _file_select(f: Path, types: dict[str, str], hive: dict[str, str], cols: dict[str, str | None],
                 all_cols: list[str], others: list[str], mapping: dict, nonempty: bool) -> str:  # fmt: skip
    """One file's records in the common form: labels and their kinds, score, error code, row hash."""
    ids = [("a", cols["agent"]), ("t", cols["task"])] + ([("r", cols["run"])] if cols["run"] else [])
    score, error = cols["score"], cols["error"]
    consts = ", ".join(f"{_lit(v)} AS {_q(k)}" for k, v in hive.items())
    base = f"(SELECT *{', ' + consts if consts else ''} FROM read_parquet({_lit(str(f))}, hive_partitioning = false))"
    parts = []
    for key, col in ids:
        if col in types:
            parts += [f"{_id_sql(col, types[col])} AS {key}", f"{_lit(_sql_kind(types[col]))} AS {key}_kind"]
        else:
            parts += [f"NULL::VARCHAR AS {key}", f"NULL::VARCHAR AS {key}_kind"]
    if score in types:
        s_expr, s_null = _score_sql(score, types[score])
        parts += [f"{s_expr} AS s", f"{s_null} AS s_null", f"{_q(score)}::VARCHAR AS s_raw"]
    else:
        parts += ["NULL::DOUBLE AS s", "true AS s_null", "NULL::VARCHAR AS s_raw"]
    if error is not None and error in types:
        parts += [f"{_error_sql(error, types[error], mapping, nonempty)} AS ecode",
                  f"{_q(error)}::VARCHAR AS e_raw"]  # fmt: skip
    else:
        parts += ["0 AS ecode", "NULL::VARCHAR AS e_raw"]
    rowcols = [_q(c) if c in types else "NULL" for c in all_cols]
    parts.append(f"hash({', '.join(rowcols)}) AS h")
    for i, c in enumerate(others):
        parts.append(f"{_q(c)}::VARCHAR AS o{i}" if c in types else f"NULL::VARCHAR AS o{i}")
    return f"SELECT {', '.join(parts)} FROM {base}"


def _arrow_type(f: Path, col: str) -> str | None:
    """``col``'s type in the Arrow schema of ``f`` (what from_records reads the file with), if there."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(f)
    return str(schema.field(col).type) if col in schema.names else None


def _refuse_odd_sql(schemas: list, cols: dict[str, str | None], source: str) -> None:
    """Identifiers stored as dates, times, durations, decimals, bytes ...: refused, as from_records refuses them.

    DuckDB reads an Arrow duration as BIGINT; the file's Arrow schema (read for integer
    identifiers only) says what from_records sees, a timedelta.
    """
    for what in ("agent", "task", "run"):
        col = cols[what]
        odd: dict[str, list[str]] = {}
        for f, types, _ in schemas:
            if col is None or col not in types:
                continue
            t = types[col]
            if _sql_kind(t) == "int":
                arrow = _arrow_type(f, col)
                if arrow is not None and arrow.startswith("duration"):
                    t = arrow
            if _sql_kind(t) not in LABEL_KINDS:
                odd.setdefault(t, []).append(Path(f).name)
        if odd:
            how = "it is stored as " + "; ".join(f"{t} in {_fmt_list(v, 3)}" for t, v in odd.items())
            raise odd_kind_error(what, str(col), f" in {source}", how)


def _check_kinds_sql(con, schemas: list, cols: dict[str, str | None], source: str) -> None:
    """Labels stored as numbers in one file and text in another, or as int and float (``label_clashes``)."""
    ids = [("a", cols["agent"]), ("t", cols["task"])] + ([("r", cols["run"])] if cols["run"] else [])
    for key, col in ids:
        by_kind: dict[str, list[str]] = {}
        for f, types, _ in schemas:
            if col in types:
                by_kind.setdefault(_sql_kind(types[col]), []).append(Path(f).name)
        if len(by_kind) <= 1:
            continue
        x = f"TRY_CAST({key} AS DOUBLE)"
        candidates = con.execute(
            f"SELECT DISTINCT {key}, {key}_kind FROM src0 WHERE {key} IN (SELECT {key} FROM src0 "
            f"WHERE {key} IS NOT NULL GROUP BY {key} HAVING count(DISTINCT {key}_kind) > 1) "
            f"OR ({key}_kind IN ('int', 'float') AND {x} IN (SELECT {x} FROM src0 WHERE {key}_kind = 'int' "
            f"INTERSECT SELECT {x} FROM src0 WHERE {key}_kind = 'float')) LIMIT 200"
        ).fetchall()
        ex, _ = label_clashes([c[0] for c in candidates], [c[1] for c in candidates])
        if ex:
            files = "; ".join(f"{k} in {_fmt_list(v, 3)}" for k, v in by_kind.items())
            fams = {"text" if k == "text" else "numbers" for k in by_kind}
            how = "as numbers in some files and as text in others" if len(fams) > 1 else "with different types"
            where = f" in {source} is stored {how} ({files}): it"
            raise EvalDataError(clash_message(dict(a="agent", t="task", r="run")[key], col, where, ex, len(ex)))


#: the schema rules as SQL conditions over the common form (see :func:`_raise_on_bad`)
_SQL_RULES = {
    "agent_null": "a IS NULL OR a = ''",
    "task_null": "t IS NULL OR t = ''",
    "nonnumeric": "s IS NULL AND NOT s_null",
    "out_of_range": "s IS NOT NULL AND (isinf(s) OR (NOT isnan(s) AND (s < 0 OR s > 1)))",
    "missing": "(s_null OR isnan(s)) AND ecode <> 1",
    "bad_error": "ecode = -1",
}


def _rule_checks_sql(con, run: str | None, source: str, cols: dict) -> tuple[int, int, bool | None, int]:
    """One pass over the records: (records, error runs, all scores binary, error runs scored > 0).

    Broken rules are refused.
    """
    conds = {**_SQL_RULES, "run_null": "false" if run is None else "r IS NULL OR r = ''"}
    sel = ", ".join(f"count(*) FILTER (WHERE {c}) AS {k}" for k, c in conds.items())
    row = con.execute(
        f"SELECT count(*) AS n, count(*) FILTER (WHERE ecode = 1) AS n_err, "
        f"bool_and(s IN (0, 1)) FILTER (WHERE ecode <> 1) AS binary, "
        f"count(*) FILTER (WHERE ecode = 1 AND s > 0 AND NOT isnan(s)) AS n_over, {sel} FROM src"
    ).fetchone()
    checks = dict(zip(conds, row[4:], strict=True))
    if any(checks.values()):
        examples = {}
        for k, c in conds.items():
            if not checks[k]:
                continue
            if k == "bad_error":
                ex = con.execute(
                    f"SELECT e_raw, count(*) FROM src WHERE {c} GROUP BY e_raw ORDER BY 2 DESC LIMIT 10"
                ).fetchall()
                examples[k] = [f"{v!r} ({n} row{'s' if n > 1 else ''})" for v, n in ex]
            else:
                ex = con.execute(f"SELECT a, t, s_raw FROM src WHERE {c} LIMIT 5").fetchall()
                examples[k] = [f"{a}/{t}: {s}" for a, t, s in ex]
        _raise_on_bad(checks, examples, source=source, cols=cols)
    return int(row[0]), int(row[1]), row[2], int(row[3])


def _check_run_dups_sql(con, source: str, duplicates: str) -> None:
    dups = con.execute(
        "SELECT a, t, r, count(*) c FROM src GROUP BY a, t, r HAVING count(*) > 1 ORDER BY c DESC LIMIT 5"
    ).fetchall()
    if not dups:
        return
    n_dup = int(con.execute(
        "SELECT coalesce(sum(c), 0) FROM (SELECT count(*) c FROM src GROUP BY a, t, r HAVING count(*) > 1)"
    ).fetchone()[0])  # fmt: skip
    raise EvalDataError(
        f"duplicate (agent, task, run) in {source}: {n_dup} records share a key "
        f"(e.g. {_fmt_list([f'{a}/{t}/{r} x{c}' for a, t, r, c in dups], 5)}); each "
        "run must appear once"
        + ("; pass duplicates='drop' if they are exact copies" if duplicates == "refuse" else "")
    )


def _repeats_sql(con, source: str, n_read: int, table: pd.DataFrame, others: list[str], duplicates: str) -> int:
    """The repeated records rule (``_repeat_rule``) over the records' row hashes; returns the repeats kept."""
    if duplicates == "drop":
        return 0
    mult = dict(con.execute(
        "SELECT c, count(*) FROM (SELECT count(*) c FROM src GROUP BY h) GROUP BY c"
    ).fetchall())  # fmt: skip

    def per_col() -> dict[str, int]:
        if not others:
            return {}
        nulls = ", ".join(
            f"count(DISTINCT o{i}) + max(CASE WHEN o{i} IS NULL THEN 1 ELSE 0 END)" for i in range(len(others))
        )
        return dict(zip(others, (int(x) for x in con.execute(f"SELECT {nulls} FROM src").fetchone()), strict=True))

    def examples() -> list[str]:
        rows = con.execute(
            "SELECT a, t, count(*) c FROM src GROUP BY h, a, t HAVING count(*) > 1 ORDER BY a, t, c DESC LIMIT 5"
        ).fetchall()
        return [f"{a}/{t} x{c}" for a, t, c in rows]

    return _repeat_rule(mult, n_read, table, per_col, examples, source, duplicates)


def _distinct_in_cells_sql(con) -> pd.Series:
    """The distinct records (row hashes) of each cell holding several records, by (agent, task)."""
    d = con.execute("SELECT a, t, count(DISTINCT h) d FROM src GROUP BY a, t HAVING count(*) > 1").df()
    return d.set_index(["a", "t"])["d"].rename_axis(["agent", "task"])


@contextlib.contextmanager
def _connect(threads: int | None, memory_limit: str, temp_directory: str | os.PathLike | None) -> Iterator[Any]:
    """An in-memory DuckDB that streams: capped memory, spilling to ``temp_directory``.

    Closed after; its spill folder, when none is given, is a fresh one, removed after.
    """
    import duckdb

    spill = tempfile.mkdtemp(prefix="hierbench-duckdb-") if temp_directory is None else str(temp_directory)
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"SET memory_limit = {_lit(str(memory_limit))}")
        con.execute(f"SET temp_directory = {_lit(spill)}")
        con.execute("SET preserve_insertion_order = false")
        if threads is not None:
            con.execute(f"SET threads TO {int(threads)}")
        yield con
    finally:
        con.close()
        if temp_directory is None:
            shutil.rmtree(spill, ignore_errors=True)


def _reduce_sql(con, files: list[Path], root: Path | None, source: str, cols: dict,
                errors: str, duplicates: str, mapping: dict, nonempty: bool) -> tuple[pd.DataFrame, dict]:  # fmt: skip
    """The validated agent x task table of a Parquet log, and its record counts."""
    schemas = _describe(con, files, root)
    all_cols = _all_columns(schemas, cols, source)
    _refuse_battles(all_cols, cols, source)
    others = [c for c in all_cols if c not in (cols["agent"], cols["task"], cols["score"], cols["error"])]
    selects = [_file_select(f, types, hive, cols, all_cols, others, mapping, nonempty) for f, types, hive in schemas]
    _refuse_odd_sql(schemas, cols, source)
    con.execute("CREATE VIEW src0 AS " + " UNION ALL ".join(selects))
    _check_kinds_sql(con, schemas, cols, source)
    n_all = None
    if duplicates == "drop":
        n_all = int(con.execute("SELECT count(*) FROM src0").fetchone()[0])
        con.execute(
            "CREATE VIEW src AS SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY h) "
            "AS k FROM src0) WHERE k = 1"
        )
    else:
        con.execute("CREATE VIEW src AS SELECT * FROM src0")
    n_kept, n_err, binary, n_over = _rule_checks_sql(con, cols["run"], source, cols)
    n_read = n_all if n_all is not None else n_kept
    if n_read == 0:
        raise EvalDataError(f"`path_or_folder` ({source}) holds no records")
    if cols["run"] is not None:
        _check_run_dups_sql(con, source, duplicates)
    e = "ecode = 1"
    ran = "count(*)" if errors == "fail" else f"count(*) FILTER (WHERE NOT ({e}))"
    table = con.execute(
        f"""SELECT a AS agent, t AS task, {ran} AS n_runs,
               coalesce(sum(s) FILTER (WHERE NOT ({e})), 0) AS n_success,
               count(*) FILTER (WHERE {e}) AS n_error, count(*) AS n_rec
            FROM src GROUP BY a, t"""
    ).df()
    _warn_similar(table, cols, source)
    n_rep = None
    if cols["run"] is None:
        n_rep = _repeats_sql(con, source, n_read, table, others, duplicates)
        _warn_split(table, lambda: _distinct_in_cells_sql(con), source)
    if errors == "fail":
        _warn_errors(table, n_over, source, cols["error"])
    return table, {"n_read": n_read, "n_err": n_err, "n_copies": n_read - n_kept, "n_repeated": n_rep,
                   "n_over": n_over if errors == "fail" and cols["error"] is not None else None,
                   "binary": True if binary is None else bool(binary)}  # fmt: skip


def counts_from_parquet(
    path_or_folder: str | os.PathLike,
    *,
    agent: str = "agent",
    task: str = "task",
    score: str = "score",
    run: str | None = None,
    error: str | None = None,
    errors: ErrorPolicy = "fail",
    error_values: Mapping[object, bool] | str | None = None,
    duplicates: DuplicatePolicy = "refuse",
    threads: int | None = None,
    memory_limit: str = "4GB",
    temp_directory: str | os.PathLike | None = None,
) -> xr.Dataset:
    """Per agent x task counts of a Parquet run log, reduced inside DuckDB.

    The rules are those of :func:`hierbench.data.from_records`: identifiers
    are their text exactly as written (an integer column gives its decimal
    text; a label stored as a number in one file and as the same text in
    another is refused, never merged), error columns are read with the same
    vocabulary, partial credit is summed as recorded (``attrs["binary"]``
    says whether every kept score is 0 or 1), and duplicates are refused.
    Text scores are numbers as pandas reads them (not ``"0_1"``); dates,
    durations, decimals and bytes are refused as identifiers. The warnings
    and report attrs are from_records' (its functions, over the counts).

    Parameters
    ----------
    path_or_folder : path
        A Parquet file or a folder searched recursively for the Parquet
        files from_records reads (see :func:`hierbench.data.read_table`;
        folder names ``key=value`` below it become text columns).
    agent, task, score : str
        Column names (one record per run).
    run : str, optional
        Run column: a repeated (agent, task, run) is an error, as in
        :func:`hierbench.data.from_records`.
    error : str, optional
        Infrastructure-error column: booleans, 0/1 or the text vocabulary of
        :func:`hierbench.data.from_records`.
    errors, error_values, duplicates
        As in :func:`hierbench.data.from_records`. Without a run column,
        records repeating another in every column are refused when they
        look like copies of one log (``duplicates="refuse"``, the others
        kept and warned), kept once (``"drop"``) or all kept (``"keep"``).
    threads : int, optional
        DuckDB worker threads (default: DuckDB's choice).
    memory_limit : str
        DuckDB's memory cap (``"4GB"``, ``"25%"``): beyond it the large
        aggregations (the duplicate checks group by every record) spill to
        ``temp_directory``, so a log of 10^9 records is reduced without being
        held in memory (``benchmarks/bench_ingest.py --n 1000000000``).
    temp_directory : path, optional
        Where DuckDB spills (default: a fresh temporary folder, removed after).

    Returns
    -------
    xarray.Dataset
        ``n_runs``, ``n_success``, ``n_error`` over (agent, task), agents
        and tasks sorted; attrs: from_records' read report (records read and
        kept, ``not_kept``, error runs, ``n_repeated_records``,
        ``n_error_scores_overwritten``).

    Raises
    ------
    EvalDataError
        A file that is not Parquet (named), missing columns, a table of
        pairwise battles (``agent`` one side, its partner read by no role:
        :func:`hierbench.data.read_battles` reads those), clashing
        identifiers, duplicates, or rows breaking the schema (empty
        agent/task, score not numeric, outside [0, 1] or missing without an
        error flag, error values outside the vocabulary): one message with
        the count of offending rows per rule and a few examples.

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "runs.parquet"
    >>> pd.DataFrame({"agent": ["a", "a", "b"], "task": ["t", "t", "t"],
    ...               "score": [1.0, 0.0, 1.0]}).to_parquet(p)
    >>> c = counts_from_parquet(p)
    >>> c.n_runs.values.tolist(), c.n_success.values.tolist()
    ([[2], [1]], [[1.0], [1.0]])
    """
    mapping, nonempty = _check_policy(errors, duplicates, error_values)
    files, root, source = _parquet_files(path_or_folder)
    cols = {"agent": agent, "task": task, "score": score, "run": run, "error": error}
    with _connect(threads, memory_limit, temp_directory) as con:
        table, n = _reduce_sql(con, files, root, source, cols, errors, duplicates, mapping, nonempty)
    return _to_dataset(
        table, n_read=n["n_read"], n_err=n["n_err"], n_copies=n["n_copies"], binary=n["binary"],
        errors=errors, source=source, reader="counts_from_parquet", n_repeated=n["n_repeated"],
        n_overwritten=n["n_over"],
    )  # fmt: skip


# ---------------------------------------------------------------- Dask


def _fast_labels(col: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Labels (pandas string dtype) and each label's kind (``hierbench.data._values.LABEL_KINDS``).

    Every partition says its kinds, whatever the meta says: a column of ints in one partition
    and of text (or floats) in another is checked by the one rule (``label_clashes``).
    """
    idx = col.index

    def kind(k):
        return pd.Series(np.where(is_missing(col), None, k), index=idx, dtype="string")

    if col.dtype == object:
        labels, kinds = label_kinds(col)
        return pd.Series(labels, index=idx, dtype="string"), pd.Series(kinds, index=idx, dtype="string")
    if pd.api.types.is_bool_dtype(col.dtype):
        return col.map({True: "True", False: "False"}).astype("string"), kind("bool")
    if pd.api.types.is_integer_dtype(col.dtype):
        return col.astype("Int64").astype("string"), kind("int")
    if pd.api.types.is_float_dtype(col.dtype):
        return pd.Series(label_kinds(col)[0], index=idx, dtype="string"), kind("float")
    if pd.api.types.is_string_dtype(col.dtype):
        return col, kind("text")  # text already: kept as written (empty labels are flagged by *_null)
    # dates, durations, categories ...: each value's kind as from_records reads it (a date is refused)
    labels, kinds = label_kinds(col)
    return pd.Series(labels, index=idx, dtype="string"), pd.Series(kinds, index=idx, dtype="string")


def _derive(
    part: pd.DataFrame,
    agent: str,
    task: str,
    score: str,
    run: str | None,
    error: str | None,
    mapping: dict,
    nonempty: bool,
    need_hash: bool,
) -> pd.DataFrame:
    """Per-partition: labels (and kinds of object columns), score, error code, rule flags."""
    s, nonnum = numbers(part[score])
    s = pd.Series(s, index=part.index)
    nonnum = pd.Series(nonnum, index=part.index)
    if error is None:
        code = np.zeros(len(part), dtype=np.int8)
    else:
        code = error_codes(part[error], mapping, nonempty)
    e = pd.Series(code == 1, index=part.index)
    bad_e = pd.Series(code == -1, index=part.index)
    out: dict[str, pd.Series] = {}
    for name, col in (("agent", agent), ("task", task), ("run", run)):
        if col is None:
            continue
        labels, kinds = _fast_labels(part[col])
        out[name] = labels
        out[f"{name}_kind"] = kinds
        out[f"{name}_null"] = pd.Series(is_missing(part[col]), index=part.index)
    if "run_null" not in out:
        out["run_null"] = pd.Series(False, index=part.index)
    out.update(
        {
            "ran": ~e,
            "e": e,
            "succ": s.where(~e, 0.0).fillna(0.0),
            "nonbinary": (~e & s.notna() & ~s.isin([0.0, 1.0])).astype(bool),
            "nonnumeric": nonnum,
            "out_of_range": ((s.notna() & ((s < 0) | (s > 1))) | np.isinf(s)).astype(bool),
            "missing": (s.isna() & ~nonnum & ~e).astype(bool),
            "bad_error": bad_e,
            "ovr": (e & (s > 0)).astype(bool),  # a score > 0 on an errored run, read as 0 under "fail"
        }
    )
    if error is not None:
        raw = np.full(len(part), None, dtype=object)
        idx = np.flatnonzero(code == -1)
        if idx.size:
            vals = part[error].to_numpy(dtype=object)
            raw[idx] = [_label(v) for v in vals[idx]]
        out["e_raw"] = pd.Series(raw, index=part.index, dtype="string")
    if need_hash:
        out["h"] = (
            _row_keys(part).astype(np.uint64) if len(part) else pd.Series([], dtype=np.uint64)
        )
    if run is not None:  # one 64-bit key per (agent, task, run): a cheap thing to group by
        keys = pd.DataFrame({"a": out["agent"], "t": out["task"], "r": out["run"]})
        out["k"] = pd.util.hash_pandas_object(keys, index=False).astype(np.uint64)
    return pd.DataFrame(out, index=part.index)


def _kind_ids(cols: dict) -> list[tuple[str, str]]:
    """The identifier roles read, with their columns: whose value kinds ``_check_dask_kinds`` checks."""
    return [(name, cols[name]) for name in ("agent", "task", "run") if cols[name] is not None]


def _refuse_odd_dask(full: dd.DataFrame, ids: list[tuple[str, str]], kinds: tuple, source: str) -> None:
    """Identifiers holding dates, times, decimals, bytes, lists ...: refused, as from_records refuses them."""
    for (c, col), k in zip(ids, kinds, strict=True):
        odd = sorted(set(map(str, k)) - set(LABEL_KINDS))
        if odd:
            bad = full[full[f"{c}_kind"].isin(odd)][[c, f"{c}_kind"]]
            ex = [f"{v!r} ({kd})" for v, kd in bad.head(3, npartitions=-1).itertuples(index=False)]
            how = f"{int(bad.shape[0].compute())} rows hold other values, e.g. {', '.join(ex)}"
            raise odd_kind_error(c, col, f" in {source}", how)


def _check_dask_kinds(der: dd.DataFrame, ids: list[tuple[str, str]], kinds: tuple, source: str) -> None:
    """Identifiers whose values are of different kinds across rows or partitions (``label_clashes``).

    ``kinds`` holds each identifier's distinct kinds, computed with the totals (``_dask_totals``):
    only a column of several kinds is read again, for its values.
    """
    import dask

    mixed = [(c, col) for (c, col), k in zip(ids, kinds, strict=True) if len(k) > 1]
    tables = dask.compute(*[der[[c, f"{c}_kind"]].dropna().drop_duplicates() for c, _ in mixed])
    for (c, col), table in zip(mixed, tables, strict=True):
        ex, _ = label_clashes(table[c].to_numpy(dtype=object), table[f"{c}_kind"].to_numpy(dtype=object))
        if ex:
            raise EvalDataError(clash_message(c, col, f" in {source}", ex, len(ex)))


def _flagged(part: pd.DataFrame, args: tuple, flag: str, cols: list) -> pd.DataFrame:
    """The records of a partition that break the rule ``flag`` (``_derive``), as text."""
    bad = _derive(part, *args)[flag].to_numpy(dtype=bool)
    return part.loc[bad, cols].astype(str)


def _dask_examples(ddf: dd.DataFrame, der: dd.DataFrame, args: tuple, totals, cols: dict) -> dict[str, list]:
    """Up to 5 offending records per broken rule, ``agent/task: value`` as DuckDB's reader says them.

    Computed only on the error path (the rules are evaluated again on the partitions).
    """
    examples: dict[str, list] = {}
    if int(totals["bad_error"]):
        vc = der[der["bad_error"]]["e_raw"].value_counts().compute().head(10)
        examples["bad_error"] = [f"{v!r} ({n} row{'s' if n > 1 else ''})" for v, n in vc.items()]
    which = {"agent_null": "agent", "task_null": "task", "run_null": "run", "nonnumeric": "score",
             "out_of_range": "score", "missing": "score"}  # fmt: skip
    for flag, role in which.items():
        if not int(totals[flag]) or cols[role] is None:
            continue
        show = list(dict.fromkeys([cols["agent"], cols["task"], cols[role]]))
        meta = pd.DataFrame({c: pd.Series(dtype=object) for c in show})
        rows = ddf.map_partitions(_flagged, args, flag, show, meta=meta).head(5, npartitions=-1)
        examples[flag] = [f"{r[cols['agent']]}/{r[cols['task']]}: {r[cols[role]]}" for _, r in rows.iterrows()]
    return examples


def _shuffle_method() -> str | None:
    """Disk on Dask's local schedulers (its in-memory task shuffle would hold every key), else Dask's."""
    try:
        from dask.distributed import default_client

        default_client()
        return None  # a distributed cluster: its peer-to-peer shuffle spills to disk
    except (ImportError, ValueError):
        return "disk"


_FLAGS = ["agent_null", "task_null", "run_null", "nonnumeric", "out_of_range", "missing", "bad_error"]


def _dask_totals(der: dd.DataFrame, full: dd.DataFrame, duplicates: str, run: str | None, ids: list) -> tuple:
    """One compute: rule totals, the agent x task table, records kept, the duplicate summary, kinds.

    The kinds are the distinct value kinds of each identifier in ``ids``, for
    ``_check_dask_kinds``: read in the same pass over the partitions as the totals.
    """
    import dask

    totals = der[[*_FLAGS, "e", "nonbinary", "ovr"]].sum()
    keyed = der[["agent", "task", "ran", "succ", "e"]]
    grouped = keyed.groupby(["agent", "task"]).agg({"ran": "sum", "succ": "sum", "e": "sum"})
    extra = None
    if duplicates == "drop":
        extra = full.shape[0]
    elif run is None:  # the repeats, refused or counted
        extra = _by_key(der, "h").map_partitions(_multiplicities, meta=("n", "int64"))
    kinds = [full[f"{c}_kind"].dropna().unique() for c, _ in ids]
    totals, grouped, n_kept, extra, *kinds = dask.compute(totals, grouped, der.shape[0], extra, *kinds)
    if duplicates != "drop" and run is None:  # per-shard counts of multiplicities, summed
        extra = extra.groupby(level=0).sum()
    return totals, grouped, n_kept, extra, tuple(kinds)


def _by_key(der: dd.DataFrame, key: str) -> dd.DataFrame:
    """``der[[key]]`` shuffled so that equal keys share a partition (through disk when local)."""
    return der[[key]].shuffle(key, npartitions=der.npartitions, shuffle_method=_shuffle_method())


def _multiplicities(part: pd.DataFrame) -> pd.Series:
    """How many keys of this shard occur once, twice, ... (index: multiplicity)."""
    return part.iloc[:, 0].value_counts().value_counts().rename("n")


def _repeated(part: pd.DataFrame) -> pd.Series:
    """The keys of this shard that occur more than once, with their counts."""
    vc = part.iloc[:, 0].value_counts()
    return vc[vc > 1].rename("n")


def _check_dask_run_dups(der: dd.DataFrame, source: str, duplicates: str) -> None:
    """Refuse a repeated (agent, task, run); grouped by its 64-bit key, labels fetched only then."""
    repeated = _by_key(der, "k").map_partitions(_repeated, meta=("n", "int64")).compute()
    if len(repeated):
        rows = der[der["k"].isin(repeated.index.to_numpy())][["agent", "task", "run"]].compute()
        dups = rows.groupby(["agent", "task", "run"]).size()
        dups = dups[dups > 1]
    if len(repeated) and len(dups):
        ex = [f"{a}/{t}/{r} x{c}" for (a, t, r), c in dups.sort_values(ascending=False).head(5).items()]
        raise EvalDataError(
            f"duplicate (agent, task, run) in {source}: {int(dups.sum())} records share a key "
            f"(e.g. {_fmt_list(ex, 5)}); each run must appear once"
            + ("; pass duplicates='drop' if they are exact copies" if duplicates == "refuse" else "")
        )


def _dask_repeats(ddf: dd.DataFrame, der: dd.DataFrame, mult: pd.Series, n_read: int, table: pd.DataFrame,
                  cols: dict, source: str, duplicates: str) -> int:  # fmt: skip
    """The repeated records rule (``_repeat_rule``) over the records' row hashes; returns the repeats kept."""
    import dask

    if duplicates == "drop":
        return 0

    def per_col() -> dict[str, int]:
        others = [c for c in ddf.columns if c not in (cols["agent"], cols["task"], cols["score"], cols["error"])]
        return dict(zip(others, map(int, dask.compute(*[ddf[c].nunique(dropna=False) for c in others])), strict=True))

    def examples() -> list[str]:
        keys = _by_key(der, "h").map_partitions(_repeated, meta=("n", "int64")).compute().head(5)
        rows = der[der["h"].isin(keys.index.to_numpy())][["agent", "task", "h"]].compute()
        rows = rows.groupby(["agent", "task", "h"]).size().reset_index(name="c").sort_values(
            ["agent", "task", "c"], ascending=[True, True, False]
        )
        return [f"{a}/{t} x{c}" for a, t, c in rows[["agent", "task", "c"]].itertuples(index=False)]

    mult_counts = {int(k): int(v) for k, v in mult.items()}
    return _repeat_rule(mult_counts, n_read, table, per_col, examples, source, duplicates)


def _dask_distinct_in_cells(der: dd.DataFrame) -> pd.Series:
    """The distinct records (row hashes) of each cell, by (agent, task)."""
    distinct = der[["agent", "task", "h"]].drop_duplicates(shuffle_method=_shuffle_method())
    return distinct.groupby(["agent", "task"]).size().compute()


def counts_from_dask(
    ddf: dd.DataFrame,
    *,
    agent: str = "agent",
    task: str = "task",
    score: str = "score",
    run: str | None = None,
    error: str | None = None,
    errors: ErrorPolicy = "fail",
    error_values: Mapping[object, bool] | str | None = None,
    duplicates: DuplicatePolicy = "refuse",
) -> xr.Dataset:
    """Per agent x task counts of a Dask DataFrame of run records.

    The same reduction and the same rules as :func:`counts_from_parquet`, as
    one Dask graph: each partition is validated and reduced where it lives
    and only small tables (the agent x task counts, the labels with their
    kinds, counts of repeated records) are gathered.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
        One row per run. Note that Dask converts object columns to text when
        a DataFrame is built (``dask.config`` ``dataframe.convert-string``),
        before hierbench sees them: an object column holding the number 7
        and the text ``"7"`` reaches this reader as two ``"7"``, and dates,
        decimals or bytes held as Python objects reach it as their text.
        Build the frame with that option off to have such labels refused.
    agent, task, score, run, error, errors, error_values, duplicates
        As in :func:`counts_from_parquet`. The duplicate checks group by
        every record; that grouping is shuffled through disk on Dask's local
        schedulers (through its peer-to-peer shuffle on a distributed
        cluster), so a log of 10^9 records is not held in memory.

    Returns
    -------
    xarray.Dataset
        ``n_runs``, ``n_success``, ``n_error`` over (agent, task), sorted.

    Examples
    --------
    >>> import pandas as pd, dask.dataframe as dd
    >>> df = pd.DataFrame({"agent": ["a", "a", "b"], "task": ["t", "t", "t"],
    ...                    "score": [1.0, 0.0, 1.0]})
    >>> counts_from_dask(dd.from_pandas(df, npartitions=2)).n_runs.values.tolist()
    [[2], [1]]
    """
    import dask.dataframe as dd

    mapping, nonempty = _check_policy(errors, duplicates, error_values)
    if not isinstance(ddf, dd.DataFrame):
        raise EvalDataError(f"`ddf` must be a dask DataFrame; got {type(ddf).__name__}")
    source = "dask DataFrame"
    cols = {"agent": agent, "task": task, "score": score, "run": run, "error": error}
    missing = {k: c for k, c in cols.items() if c is not None and c not in ddf.columns}
    if missing:
        raise missing_columns_error(missing, "", list(map(str, ddf.columns)))
    _refuse_battles(list(map(str, ddf.columns)), cols, source)
    need_hash = duplicates == "drop" or run is None
    args = (agent, task, score, run, error, mapping, nonempty, need_hash)
    meta = _derive(ddf._meta, *args)
    full = ddf.map_partitions(_derive, *args, meta=meta)
    der = full.drop_duplicates(subset=["h"], shuffle_method=_shuffle_method()) if duplicates == "drop" else full
    ids = _kind_ids(cols)
    totals, table, n_kept, extra, kinds = _dask_totals(der, full, duplicates, run, ids)
    _refuse_odd_dask(full, ids, kinds, source)
    _check_dask_kinds(full, ids, kinds, source)
    n_kept = int(n_kept)
    n_read = int(extra) if duplicates == "drop" else n_kept
    if n_read == 0:
        raise EvalDataError("`ddf` holds no records")
    if any(int(totals[k]) for k in _FLAGS):
        _raise_on_bad({k: int(totals[k]) for k in _FLAGS}, _dask_examples(ddf, der, args, totals, cols),
                      source=source, cols=cols)  # fmt: skip
    if run is not None:
        _check_dask_run_dups(der, source, duplicates)
    table = table.reset_index().rename(columns={"succ": "n_success", "e": "n_error"})
    table["n_rec"] = table["ran"] + table["n_error"]
    table["n_runs"] = table["ran"] + (table["n_error"] if errors == "fail" else 0)
    table["agent"] = table["agent"].astype(str)
    table["task"] = table["task"].astype(str)
    _warn_similar(table, cols, source)
    n_rep = None
    if run is None:
        n_rep = _dask_repeats(ddf, der, extra, n_read, table, cols, source, duplicates)
        _warn_split(table, lambda: _dask_distinct_in_cells(der), source)
    n_over = int(totals["ovr"]) if errors == "fail" else 0
    if errors == "fail":
        _warn_errors(table, n_over, source, error)
    return _to_dataset(
        table, n_read=n_read, n_err=int(totals["e"]), n_copies=n_read - n_kept,
        binary=int(totals["nonbinary"]) == 0, errors=errors, source=source, reader="counts_from_dask",
        n_repeated=n_rep, n_overwritten=n_over if errors == "fail" and error is not None else None,
    )  # fmt: skip
