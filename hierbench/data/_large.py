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

import os
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np
import pandas as pd
import xarray as xr

from ._schema import SCHEMA_VERSION, EvalDataError, _fmt_list, _not_kept_attr

if TYPE_CHECKING:  # pragma: no cover
    import dask.dataframe as dd

__all__ = ["counts_from_dask", "counts_from_parquet"]

ErrorPolicy = Literal["fail", "exclude"]
_FALSE_TEXT = ("", "false", "0", "none", "nan", "null")


def _check_policy(errors: str) -> None:
    if errors not in ("fail", "exclude"):
        raise EvalDataError(f"`errors` must be 'fail' or 'exclude'; got {errors!r}")


def _raise_on_bad(checks: dict[str, int], examples: dict[str, list], *, source: str, cols: dict) -> None:
    """One error listing every broken rule with its count of offending rows."""
    msgs = []
    rules = {
        "agent_null": f"`agent` column {cols['agent']!r} must not be empty",
        "task_null": f"`task` column {cols['task']!r} must not be empty",
        "nonnumeric": f"`score` column {cols['score']!r} must be numeric",
        "out_of_range": f"`score` column {cols['score']!r} must lie in [0, 1]",
        "missing": f"`score` column {cols['score']!r} must not be missing (NaN) on a run not "
        "flagged as an infrastructure error",
        "bad_error": f"error column {cols['error']!r} must be boolean, 0/1 or text (non-empty = error)",
    }
    for key, rule in rules.items():
        n = int(checks.get(key, 0))
        if n:
            ex = examples.get(key, [])
            msgs.append(f"{rule}: {n} rows" + (f", e.g. {_fmt_list(ex, 5)}" if ex else ""))
    if msgs:
        raise EvalDataError(f"invalid run records in {source}: " + "; ".join(msgs))


def _to_dataset(
    table: pd.DataFrame, *, n_read: int, n_err: int, binary: bool, errors: str, source: str, reader: str
) -> xr.Dataset:
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
        "n_records_kept": int(n_read - n_excl),
        "n_error_runs": int(n_err),
        "not_kept": _not_kept_attr({"infrastructure error, excluded (errors='exclude')": n_excl}),
        "binary": int(binary),
    }
    return ds


# ---------------------------------------------------------------- DuckDB


def _parquet_glob(path_or_folder: str | os.PathLike) -> tuple[str, str]:
    p = Path(path_or_folder)
    if p.is_dir():
        files = sorted(p.rglob("*.parquet"))
        if not files:
            raise EvalDataError(f"`path_or_folder`: folder {str(p)!r} holds no .parquet files")
        return str(p / "**" / "*.parquet"), str(p)
    if not p.is_file():
        raise EvalDataError(f"`path_or_folder`: no such file or folder {str(p)!r}")
    return str(p), str(p)


def _q(name: str) -> str:
    """A SQL identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    """A SQL string literal, quoted."""
    return "'" + text.replace("'", "''") + "'"


def counts_from_parquet(
    path_or_folder: str | os.PathLike,
    *,
    agent: str = "agent",
    task: str = "task",
    score: str = "score",
    error: str | None = None,
    errors: ErrorPolicy = "fail",
    threads: int | None = None,
) -> xr.Dataset:
    """Per agent x task counts of a Parquet run log, reduced inside DuckDB.

    Parameters
    ----------
    path_or_folder : path
        A Parquet file or a folder searched recursively for ``*.parquet``.
    agent, task, score : str
        Column names (one record per run).
    error : str, optional
        Infrastructure-error column: boolean, 0/1, or text where a non-empty
        value means an error.
    errors : {"fail", "exclude"}
        As in :func:`hierbench.data.from_records`.
    threads : int, optional
        DuckDB worker threads (default: DuckDB's choice).

    Returns
    -------
    xarray.Dataset
        ``n_runs``, ``n_success``, ``n_error`` over (agent, task), agents
        and tasks sorted; attrs with records read and kept, error runs and
        the error policy.

    Raises
    ------
    EvalDataError
        Missing columns, or rows breaking the schema (empty agent/task, score
        not numeric, outside [0, 1] or missing without an error flag, bad
        error values): one message with the count of offending rows per rule
        and a few examples.

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
    import duckdb

    _check_policy(errors)
    pattern, source = _parquet_glob(path_or_folder)
    con = duckdb.connect(":memory:")
    try:
        if threads is not None:
            con.execute(f"SET threads TO {int(threads)}")
        con.execute(
            f"CREATE VIEW raw AS SELECT * FROM read_parquet({_lit(pattern)}, union_by_name = true)"
        )
        types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE raw)").fetchall())
        cols = {"agent": agent, "task": task, "score": score, "error": error}
        missing = {k: c for k, c in cols.items() if c is not None and c not in types}
        if missing:
            raise EvalDataError(
                "missing required columns: "
                + ", ".join(f"`{k}`={c!r}" for k, c in missing.items())
                + f"; the records have columns {_fmt_list(list(types), 30)}"
            )
        s_raw = _q(score)
        if error is None:
            e_expr, bad_e = "false", "false"
        else:
            et = types[error].upper()
            ec = _q(error)
            if et == "BOOLEAN":
                e_expr, bad_e = f"coalesce({ec}, false)", "false"
            elif any(k in et for k in ("INT", "DOUBLE", "FLOAT", "DECIMAL")):
                e_expr = f"coalesce({ec} = 1, false)"
                bad_e = f"({ec} IS NOT NULL AND NOT isnan({ec}::DOUBLE) AND {ec} NOT IN (0, 1))"
            else:
                false_text = ", ".join(f"'{v}'" for v in _FALSE_TEXT)
                e_expr = f"coalesce(lower(trim({ec}::VARCHAR)) NOT IN ({false_text}), false)"
                bad_e = "false"
        con.execute(
            f"""CREATE VIEW src AS SELECT
                {_q(agent)}::VARCHAR AS a, {_q(task)}::VARCHAR AS t,
                TRY_CAST({s_raw} AS DOUBLE) AS s, {s_raw} IS NULL AS s_null,
                {e_expr} AS e, {bad_e} AS bad_e
            FROM raw"""
        )
        conds = {
            "agent_null": "a IS NULL",
            "task_null": "t IS NULL",
            "nonnumeric": "s IS NULL AND NOT s_null",
            "out_of_range": "s IS NOT NULL AND NOT isnan(s) AND (s < 0 OR s > 1)",
            "missing": "(s_null OR isnan(s)) AND NOT e",
            "bad_error": "bad_e",
        }
        sel = ", ".join(f"count(*) FILTER (WHERE {c}) AS {k}" for k, c in conds.items())
        row = con.execute(
            f"SELECT count(*) AS n, count(*) FILTER (WHERE e) AS n_err, "
            f"bool_and(s IN (0, 1)) FILTER (WHERE NOT e) AS binary, {sel} FROM src"
        ).fetchone()
        n_read, n_err, binary = int(row[0]), int(row[1]), row[2]
        checks = dict(zip(conds, row[3:], strict=True))
        if n_read == 0:
            raise EvalDataError(f"`path_or_folder` ({source}) holds no records")
        if any(checks.values()):
            examples = {}
            for k, c in conds.items():
                if checks[k]:
                    ex = con.execute(
                        f"SELECT a, t, s FROM src WHERE {c} LIMIT 5"
                    ).fetchall()
                    examples[k] = [f"{a}/{t}: {s}" for a, t, s in ex]
            _raise_on_bad(checks, examples, source=source, cols=cols)
        ran = "count(*)" if errors == "fail" else "count(*) FILTER (WHERE NOT e)"
        table = con.execute(
            f"""SELECT a AS agent, t AS task, {ran} AS n_runs,
                   coalesce(sum(s) FILTER (WHERE NOT e), 0) AS n_success,
                   count(*) FILTER (WHERE e) AS n_error
                FROM src GROUP BY a, t"""
        ).df()
    finally:
        con.close()
    return _to_dataset(
        table,
        n_read=n_read,
        n_err=n_err,
        binary=True if binary is None else bool(binary),
        errors=errors,
        source=source,
        reader="counts_from_parquet",
    )


# ---------------------------------------------------------------- Dask


def _derive(part: pd.DataFrame, agent: str, task: str, score: str, error: str | None) -> pd.DataFrame:
    """Per-partition, vectorised: numeric score, error flag, rule-violation flags."""
    raw = part[score]
    s = pd.to_numeric(raw, errors="coerce").astype("float64")
    if error is None:
        e = pd.Series(False, index=part.index)
        bad_e = e
    else:
        col = part[error]
        if col.dtype == bool:
            e, bad_e = col.fillna(False).astype(bool), pd.Series(False, index=part.index)
        elif pd.api.types.is_numeric_dtype(col.dtype):
            v = col.astype("float64")
            e = v.eq(1)
            bad_e = v.notna() & v.ne(0) & v.ne(1)
        else:
            low = col.astype("string").str.strip().str.lower()
            e = ~(low.isna() | low.isin(list(_FALSE_TEXT))).astype(bool)
            bad_e = pd.Series(False, index=part.index)
    s_missing = s.isna()  # NaN after coercion: missing or not a number
    return pd.DataFrame(
        {
            "agent": part[agent].astype("string"),
            "task": part[task].astype("string"),
            "ran": ~e,
            "e": e.astype(bool),
            "succ": s.where(~e, 0.0).fillna(0.0),
            "nonbinary": (~e & s.notna() & ~s.isin([0.0, 1.0])).astype(bool),
            "agent_null": part[agent].isna(),
            "task_null": part[task].isna(),
            "nonnumeric": (s_missing & raw.notna()).astype(bool),
            "out_of_range": (s.notna() & ((s < 0) | (s > 1))).astype(bool),
            "missing": (raw.isna() & ~e).astype(bool),
            "bad_error": bad_e.astype(bool),
        },
        index=part.index,
    )


def counts_from_dask(
    ddf: dd.DataFrame,
    *,
    agent: str = "agent",
    task: str = "task",
    score: str = "score",
    error: str | None = None,
    errors: ErrorPolicy = "fail",
) -> xr.Dataset:
    """Per agent x task counts of a Dask DataFrame of run records.

    The same reduction as :func:`counts_from_parquet`, as one Dask graph:
    each partition is validated and reduced where it lives and only the
    agent x task table is gathered.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
        One row per run.
    agent, task, score, error, errors
        As in :func:`counts_from_parquet`.

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
    import dask
    import dask.dataframe as dd

    _check_policy(errors)
    if not isinstance(ddf, dd.DataFrame):
        raise EvalDataError(f"`ddf` must be a dask DataFrame; got {type(ddf).__name__}")
    cols = {"agent": agent, "task": task, "score": score, "error": error}
    missing = {k: c for k, c in cols.items() if c is not None and c not in ddf.columns}
    if missing:
        raise EvalDataError(
            "missing required columns: "
            + ", ".join(f"`{k}`={c!r}" for k, c in missing.items())
            + f"; the records have columns {_fmt_list(list(map(str, ddf.columns)), 30)}"
        )
    meta = _derive(ddf._meta, agent, task, score, error)
    der = ddf.map_partitions(_derive, agent, task, score, error, meta=meta)
    flags = ["agent_null", "task_null", "nonnumeric", "out_of_range", "missing", "bad_error"]
    totals = der[[*flags, "e", "nonbinary"]].sum()
    n_rows = der.shape[0]
    keyed = der[["agent", "task", "ran", "succ", "e"]]
    grouped = keyed.groupby(["agent", "task"]).agg({"ran": "sum", "succ": "sum", "e": "sum"})
    totals, n_read, table = dask.compute(totals, n_rows, grouped)
    checks = {k: int(totals[k]) for k in flags}
    if int(n_read) == 0:
        raise EvalDataError("`ddf` holds no records")
    _raise_on_bad(checks, {}, source="dask DataFrame", cols=cols)
    n_err = int(totals["e"])
    table = table.reset_index().rename(columns={"succ": "n_success", "e": "n_error"})
    table["n_runs"] = table["ran"] + (table["n_error"] if errors == "fail" else 0)
    table["agent"] = table["agent"].astype(str)
    table["task"] = table["task"].astype(str)
    return _to_dataset(
        table,
        n_read=int(n_read),
        n_err=n_err,
        binary=int(totals["nonbinary"]) == 0,
        errors=errors,
        source="dask DataFrame",
        reader="counts_from_dask",
    )
