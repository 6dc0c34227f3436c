"""Readers from tabular run records (DataFrame, CSV, JSONL, Parquet) into an eval dataset."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from ._schema import (
    SCHEMA_VERSION,
    EvalDataError,
    InconsistentAttributeWarning,
    _fmt_list,
    _not_kept_attr,
    check_eval_dataset,
)

__all__ = ["from_records", "read_table", "to_records"]

ErrorPolicy = Literal["fail", "exclude"]


def _read_jsonl(path: Path) -> pd.DataFrame:
    rows, bad = [], []
    opener = open
    if path.suffix == ".gz":
        import gzip

        opener = gzip.open  # type: ignore[assignment]
    with opener(path, "rt", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                bad.append(lineno)
                continue
            if not isinstance(obj, dict):
                bad.append(lineno)
                continue
            rows.append(obj)
    if bad:
        raise EvalDataError(
            f"`obj` ({path}): {len(bad)} malformed JSON lines (each line must be one JSON object); "
            f"line numbers {_fmt_list(bad)}. Nothing was read; fix or remove those lines."
        )
    return pd.DataFrame(rows)


def read_table(obj: pd.DataFrame | str | os.PathLike) -> tuple[pd.DataFrame, str]:
    """Read run records from a DataFrame or a CSV / TSV / JSONL / Parquet path.

    Parameters
    ----------
    obj : DataFrame or path
        A DataFrame (returned as is), a file (``.csv``, ``.tsv``, ``.jsonl``,
        ``.ndjson``, ``.parquet``, optionally ``.gz``) or a folder of Parquet
        files.

    Returns
    -------
    (pandas.DataFrame, str)
        The records and a short description of the source.

    Raises
    ------
    EvalDataError
        No such file, an empty file, an unknown file type, malformed JSON
        lines (all their line numbers are named; nothing is read).

    Examples
    --------
    >>> import pandas as pd
    >>> df, source = read_table(pd.DataFrame({"agent": ["a"], "task": ["t"], "score": [1.0]}))
    >>> source, len(df)
    ('DataFrame', 1)
    """
    if isinstance(obj, pd.DataFrame):
        return obj, "DataFrame"
    if not isinstance(obj, (str, os.PathLike)):
        raise EvalDataError(
            f"`obj` must be a pandas DataFrame or a path to a CSV, JSONL or Parquet file; "
            f"got {type(obj).__name__}"
        )
    path = Path(obj)
    if not path.exists():
        raise EvalDataError(f"`obj`: no such file {str(path)!r}")
    if path.is_file() and path.stat().st_size == 0:
        raise EvalDataError(f"`obj` ({path}) is an empty file: no records to read")
    suffixes = "".join(path.suffixes).lower()
    if path.is_dir() or suffixes.endswith(".parquet") or suffixes.endswith(".pq"):
        df = pd.read_parquet(path)
    elif ".jsonl" in suffixes or ".ndjson" in suffixes:
        df = _read_jsonl(path)
    elif ".csv" in suffixes or ".tsv" in suffixes:
        try:
            df = pd.read_csv(path, sep="\t" if ".tsv" in suffixes else ",")
        except pd.errors.EmptyDataError as exc:
            raise EvalDataError(f"`obj` ({path}) is an empty file: no records to read") from exc
    else:
        raise EvalDataError(
            f"`obj` ({path}): unknown file type {suffixes or '(none)'}; "
            "use .csv, .tsv, .jsonl, .ndjson or .parquet (optionally .gz)"
        )
    return df, str(path)


def _as_error_flags(col: pd.Series, name: str) -> np.ndarray:
    """Map an error column to bool: bool/0-1 numbers, or strings where non-empty means error."""
    if col.dtype == bool:
        return col.to_numpy()
    if pd.api.types.is_numeric_dtype(col.dtype):
        v = col.to_numpy(dtype=float)
        bad = ~np.isnan(v) & (v != 0) & (v != 1)
        if bad.any():
            raise EvalDataError(
                f"error column {name!r} must be boolean, 0/1 or text (non-empty = error); "
                f"rows {_fmt_list(np.flatnonzero(bad).tolist())} hold {_fmt_list(v[bad].tolist())}"
            )
        return np.nan_to_num(v, nan=0.0).astype(bool)
    s = col.astype("string")
    lowered = s.str.strip().str.lower()
    false_like = lowered.isna() | lowered.isin(["", "false", "0", "none", "nan", "null"])
    return ~false_like.to_numpy(dtype=bool)


def _first_per_group(
    df: pd.DataFrame, key: str, col: str, what: str
) -> tuple[pd.Series, int]:
    """The first value of ``col`` per ``key``; warn and count keys whose values differ."""
    sub = df[[key, col]]
    first = sub.groupby(key, sort=False)[col].first()
    nunique = sub.groupby(key, sort=False)[col].nunique(dropna=False)
    inconsistent = nunique[nunique > 1]
    if len(inconsistent):
        warnings.warn(
            f"{what} attribute {col!r} differs between runs of {len(inconsistent)} {what}s "
            f"{_fmt_list(inconsistent.index.tolist())}; kept the first value seen for each",
            InconsistentAttributeWarning,
            stacklevel=3,
        )
    return first, len(inconsistent)


def from_records(
    obj: pd.DataFrame | str | os.PathLike,
    *,
    agent: str | None = "agent",
    task: str = "task",
    run: str | None = None,
    score: str = "score",
    error: str | None = None,
    tag: str | None = None,
    cluster: str | None = None,
    extra: Mapping[str, str] | Sequence[str] | None = None,
    annotations: Mapping[str, str] | Sequence[str] | None = None,
    task_coords: Sequence[str] = (),
    agent_coords: Sequence[str] = (),
    agent_name: str = "agent",
    errors: ErrorPolicy = "fail",
    attrs: Mapping[str, object] | None = None,
) -> xr.Dataset:
    """Read run records into the canonical eval dataset.

    One record is one run of one agent on one task.

    Parameters
    ----------
    obj : DataFrame or path
        A pandas DataFrame, or a path to a CSV, TSV, JSONL or Parquet file
        (or a folder of Parquet files).
    agent, task, run, score : str
        Column names. ``agent=None`` reads a single-agent log and names the
        agent ``agent_name``. ``run=None`` numbers runs 0, 1, ... per
        (agent, task) cell in file order. A run column of integers becomes
        the ``run`` coordinate (run r is then the same occasion in every
        cell); any other run column is numbered per cell and kept as the
        per-run variable ``run_id``.
    error : str, optional
        Column flagging infrastructure failures: boolean, 0/1, or text where
        a non-empty value means an error.
    tag, cluster : str, optional
        Per-task columns (category, repository or task family). The first
        value per task is kept; tasks whose value differs between runs are
        counted and reported by an :class:`InconsistentAttributeWarning`.
    extra : mapping or sequence, optional
        Numeric per-run columns to keep, as ``{variable: column}`` or a list
        of names (e.g. ``cost``, ``latency``, ``tokens``, ``steps``).
    annotations : mapping or sequence, optional
        Boolean per-run annotations (e.g. METR's token-budget flag), kept as
        bool variables and listed in ``attrs["annotations"]``.
    task_coords, agent_coords : sequence of str
        Further columns constant per task / per agent, kept as coords.
    errors : {"fail", "exclude"}
        ``"fail"`` (default): an infrastructure error counts as a failure
        (score 0); ``"exclude"``: the run is treated as not run (score NaN).
        Either way ``error`` marks the run and ``attrs["n_error_runs"]``
        counts them; under ``"exclude"`` they are also counted in
        ``attrs["not_kept"]`` and left out of ``attrs["n_records_kept"]``.
    attrs : mapping, optional
        Provenance to add to the dataset attrs.

    Returns
    -------
    xarray.Dataset
        The eval dataset; ``attrs`` record ``n_records_read``,
        ``n_records_kept`` and, as JSON, why any were not kept.

    Raises
    ------
    EvalDataError
        Missing columns, duplicate (agent, task, run), scores outside [0, 1]
        or not numeric, a missing score on a run not flagged as an error, an
        empty input.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"agent": ["a", "a", "b"], "task": ["t1", "t1", "t1"],
    ...                    "score": [1.0, 0.0, 1.0]})
    >>> ds = from_records(df)
    >>> ds.score.sizes["run"], int(ds.score.notnull().sum())
    (2, 3)
    """
    if errors not in ("fail", "exclude"):
        raise EvalDataError(f"`errors` must be 'fail' or 'exclude'; got {errors!r}")
    df, source = read_table(obj)
    n_read = len(df)
    if n_read == 0:
        raise EvalDataError(f"`obj` ({source}) holds no records")
    df = df.reset_index(drop=True)

    def _mapping(arg, argname):
        if arg is None:
            return {}
        if isinstance(arg, Mapping):
            return dict(arg)
        if isinstance(arg, str):
            raise EvalDataError(f"`{argname}` must be a mapping or a list of column names; got a string")
        return {c: c for c in arg}

    extra_map = _mapping(extra, "extra")
    ann_map = _mapping(annotations, "annotations")
    needed = {"task": task, "score": score}
    if agent is not None:
        needed["agent"] = agent
    for argname, col in (("run", run), ("error", error), ("tag", tag), ("cluster", cluster)):
        if col is not None:
            needed[argname] = col
    for v, c in extra_map.items():
        needed[f"extra[{v!r}]"] = c
    for v, c in ann_map.items():
        needed[f"annotations[{v!r}]"] = c
    for c in (*task_coords, *agent_coords):
        needed[c] = c
    missing = {k: c for k, c in needed.items() if c not in df.columns}
    if missing:
        raise EvalDataError(
            "missing required columns: "
            + ", ".join(f"`{k}`={c!r}" for k, c in missing.items())
            + f"; the records have columns {_fmt_list(list(map(str, df.columns)), 30)}"
        )

    agents = (
        df[agent].astype(str).to_numpy() if agent is not None else np.full(n_read, agent_name)
    )
    tasks = df[task].astype(str).to_numpy()
    for argname, _arr, col in (("agent", agents, agent), ("task", tasks, task)):
        if col is not None and df[col].isna().any():
            rows = np.flatnonzero(df[col].isna().to_numpy())
            raise EvalDataError(
                f"`{argname}` column {col!r} must not be empty; rows {_fmt_list(rows.tolist())}"
            )

    # scores
    raw = df[score]
    if raw.dtype == bool:
        sc = raw.to_numpy(dtype=float)
    else:
        num = pd.to_numeric(raw, errors="coerce")
        nonnum = num.isna() & raw.notna()
        if nonnum.any():
            rows = np.flatnonzero(nonnum.to_numpy())
            raise EvalDataError(
                f"`score` column {score!r} must be numeric; rows {_fmt_list(rows.tolist())} hold "
                f"{_fmt_list(raw[nonnum].astype(str).tolist())}"
            )
        sc = num.to_numpy(dtype=float)
    err = _as_error_flags(df[error], error) if error is not None else np.zeros(n_read, bool)
    out_of_range = np.isfinite(sc) & ((sc < 0) | (sc > 1)) | np.isinf(sc)
    if out_of_range.any():
        rows = np.flatnonzero(out_of_range)
        raise EvalDataError(
            f"`score` column {score!r} must lie in [0, 1]; rows {_fmt_list(rows.tolist())} hold "
            f"{_fmt_list(sc[rows].tolist())}"
        )
    nan_no_err = np.isnan(sc) & ~err
    if nan_no_err.any():
        rows = np.flatnonzero(nan_no_err)
        raise EvalDataError(
            f"`score` column {score!r} is missing (NaN) on {len(rows)} runs not flagged as "
            f"infrastructure errors, rows {_fmt_list(rows.tolist())}: a run without a score must "
            "be flagged in the `error` column, or dropped before reading"
        )

    # runs
    run_ids = None
    if run is None:
        run_idx = (
            pd.DataFrame({"a": agents, "t": tasks}).groupby(["a", "t"], sort=False).cumcount().to_numpy()
        )
    else:
        rcol = df[run]
        if rcol.isna().any():
            rows = np.flatnonzero(rcol.isna().to_numpy())
            raise EvalDataError(f"`run` column {run!r} must not be empty; rows {_fmt_list(rows.tolist())}")
        if pd.api.types.is_integer_dtype(rcol.dtype) or (
            pd.api.types.is_float_dtype(rcol.dtype) and np.all(np.mod(rcol.to_numpy(), 1) == 0)
        ):
            run_idx = rcol.to_numpy().astype(np.int64)
        else:
            run_ids = rcol.astype(str).to_numpy()
            run_idx = None
    key = pd.DataFrame({"agent": agents, "task": tasks})
    if run_ids is not None:
        key["rid"] = run_ids
        dup = key.duplicated(["agent", "task", "rid"], keep=False).to_numpy()
        what = "(agent, task, run)"
    else:
        key["run"] = run_idx
        dup = key.duplicated(["agent", "task", "run"], keep=False).to_numpy()
        what = "(agent, task, run)"
    if dup.any():
        rows = np.flatnonzero(dup)
        ex = key.iloc[rows[:5]].astype(str).agg("/".join, axis=1).tolist()
        raise EvalDataError(
            f"duplicate {what}: {len(rows)} records share a key, rows {_fmt_list(rows.tolist())} "
            f"(e.g. {_fmt_list(ex, 5)}); each run must appear once"
        )
    if run_ids is not None:
        run_idx = key.groupby(["agent", "task"], sort=False).cumcount().to_numpy()

    # error policy
    n_error = int(err.sum())
    sc = sc.copy()
    sc[err] = 0.0 if errors == "fail" else np.nan

    agent_labels = pd.unique(agents)
    task_labels = pd.unique(tasks)
    run_labels = np.sort(pd.unique(run_idx))
    ai = pd.Index(agent_labels).get_indexer(agents)
    ti = pd.Index(task_labels).get_indexer(tasks)
    ri = pd.Index(run_labels).get_indexer(run_idx)
    shape = (len(agent_labels), len(task_labels), len(run_labels))

    def _cube(values, fill, dtype):
        arr = np.full(shape, fill, dtype=dtype)
        arr[ai, ti, ri] = values
        return arr

    dims = ("agent", "task", "run")
    data_vars = {
        "score": (dims, _cube(sc, np.nan, float)),
        "error": (dims, _cube(err, False, bool)),
    }
    for v, c in extra_map.items():
        vals = pd.to_numeric(df[c], errors="coerce")
        bad = vals.isna() & df[c].notna()
        if bad.any():
            rows = np.flatnonzero(bad.to_numpy())
            raise EvalDataError(
                f"`extra` column {c!r} must be numeric; rows {_fmt_list(rows.tolist())} hold "
                f"{_fmt_list(df[c][bad].astype(str).tolist())}"
            )
        data_vars[v] = (dims, _cube(vals.to_numpy(dtype=float), np.nan, float))
    for v, c in ann_map.items():
        data_vars[v] = (dims, _cube(_as_error_flags(df[c], c), False, bool))
    if run_ids is not None:
        data_vars["run_id"] = (dims, _cube(run_ids, "", object))

    coords: dict[str, object] = {
        "agent": agent_labels.astype(str),
        "task": task_labels.astype(str),
        "run": run_labels.astype(np.int64),
    }
    n_inconsistent: dict[str, int] = {}
    tframe = df.assign(__task=tasks)
    for name, col in (("tag", tag), ("cluster", cluster), *((c, c) for c in task_coords)):
        if col is None:
            continue
        first, n_bad = _first_per_group(tframe, "__task", col, "task")
        vals = first.reindex(task_labels).to_numpy()
        if name in ("tag", "cluster"):
            vals = np.array([("" if pd.isna(v) else str(v)) for v in vals], dtype=object)
        coords[name] = ("task", vals)
        n_inconsistent[f"task {name}"] = n_bad
    aframe = df.assign(__agent=agents)
    for col in agent_coords:
        first, n_bad = _first_per_group(aframe, "__agent", col, "agent")
        coords[col] = ("agent", first.reindex(agent_labels).to_numpy())
        n_inconsistent[f"agent {col}"] = n_bad

    ds = xr.Dataset(data_vars, coords=coords)
    not_kept = {"infrastructure error, excluded (errors='exclude')": n_error} if errors == "exclude" else {}
    ds.attrs = {
        "hierbench_schema": SCHEMA_VERSION,
        "reader": "from_records",
        "source": source,
        "errors": errors,
        "n_records_read": int(n_read),
        "n_records_kept": int(n_read) - (n_error if errors == "exclude" else 0),
        "n_error_runs": n_error,
        "not_kept": _not_kept_attr(not_kept),
        "inconsistent_attributes": json.dumps({k: v for k, v in n_inconsistent.items() if v}),
        "annotations": json.dumps(sorted(ann_map)),
    }
    if attrs:
        ds.attrs.update(dict(attrs))
    return check_eval_dataset(ds)


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
