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
from ._values import canonical_ints, error_flags, id_labels, numbers

__all__ = ["from_records", "read_table", "to_records"]

ErrorPolicy = Literal["fail", "exclude"]
RunIndex = Literal["auto", "label", "within_cell"]
DuplicatePolicy = Literal["refuse", "drop", "keep"]


class _JsonFloat(float):
    """A JSON number with a fraction or exponent, remembering its text as written."""

    __slots__ = ("text",)

    def __new__(cls, text: str):
        obj = super().__new__(cls, text)
        obj.text = text
        return obj

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


def _opener(path: Path):
    if path.suffix.lower() == ".gz":
        import gzip

        return gzip.open
    return open


def _read_jsonl(path: Path, encoding: str) -> pd.DataFrame:
    rows, bad = [], []
    with _opener(path)(path, "rt", encoding=encoding) as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line, parse_float=_JsonFloat)
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
    if not rows:
        return pd.DataFrame()
    # object columns: each value keeps its JSON type (7 and "7" stay apart, 1.50 keeps its text)
    cols = list(dict.fromkeys(k for r in rows for k in r))
    return pd.DataFrame(
        {c: pd.Series([r.get(c) for r in rows], dtype=object) for c in cols}, dtype=object
    )


def _read_csv(path: Path, sep: str, encoding: str) -> pd.DataFrame:
    # every column as text exactly as written; each reader converts a column by its role
    return pd.read_csv(
        path, sep=sep, dtype=str, keep_default_na=False, na_filter=False, encoding=encoding
    )


def _hive_keys(path: Path, root: Path) -> dict[str, str]:
    keys = {}
    for part in path.relative_to(root).parts[:-1]:
        if "=" in part:
            k, v = part.split("=", 1)
            keys[k] = v
    return keys


def _read_parquet(path: Path) -> pd.DataFrame:
    """A Parquet file, or every ``*.parquet`` under a folder (hive keys ``k=v`` kept as text).

    A column whose type differs between the files is kept as Python objects,
    so ``1`` (int in one file) and ``"1"`` (text in another) stay apart and
    are refused as identifiers rather than merged.
    """
    import pyarrow.parquet as pq

    if path.is_file():
        return pq.read_table(path).to_pandas()
    files = sorted(path.rglob("*.parquet"))
    if not files:
        raise EvalDataError(f"`obj`: folder {str(path)!r} holds no .parquet files")
    frames, types = [], {}
    for f in files:
        try:
            tab = pq.read_table(f, partitioning=None)
        except Exception as exc:
            raise _file_error(f, exc) from exc
        df = tab.to_pandas()
        for k, v in _hive_keys(f, path).items():
            if k not in df.columns:
                df[k] = pd.Series([v] * len(df), dtype=object)
        for c in df.columns:
            types.setdefault(c, set()).add(str(df[c].dtype))
        frames.append(df)
    mixed = [c for c, t in types.items() if len(t) > 1]
    if mixed:
        frames = [df.astype({c: object for c in mixed if c in df.columns}) for df in frames]
    return pd.concat(frames, ignore_index=True)


def _file_error(path: Path | str, exc: BaseException, encoding: str = "utf-8") -> EvalDataError:
    """A reader error that names the file, for an exception raised while decoding it."""
    if isinstance(exc, UnicodeDecodeError):
        return EvalDataError(
            f"`obj` ({path}) is not valid {encoding} text: it holds bytes such as "
            f"{exc.object[exc.start:exc.start + 1]!r} that {encoding} does not allow there; if the "
            "file is written in another encoding, pass it, e.g. `encoding='latin-1'` (or "
            "'cp1252', 'utf-16')"
        )
    if isinstance(exc, EOFError) or "compressed file ended" in str(exc).lower():
        return EvalDataError(
            f"`obj` ({path}) is truncated: the compressed stream ends before its end marker "
            f"({type(exc).__name__}: {exc}); the file was cut off while being written or copied"
        )
    return EvalDataError(
        f"`obj` ({path}) could not be read as {''.join(Path(path).suffixes) or 'a table'}: "
        f"{type(exc).__name__}: {exc}"
    )


def read_table(
    obj: pd.DataFrame | str | os.PathLike, *, encoding: str = "utf-8"
) -> tuple[pd.DataFrame, str]:
    """Read run records from a DataFrame or a CSV / TSV / JSONL / Parquet path.

    Nothing is parsed that a reader has not asked for: CSV and TSV columns
    are read as text exactly as written (``"001"`` stays ``"001"``, empty
    fields are ``""``), JSONL values keep their JSON type (the number ``7``
    and the text ``"7"`` stay apart, a number's text is kept), Parquet
    columns keep their stored type. The readers then convert each column by
    its role (:mod:`hierbench.data._values`).

    Parameters
    ----------
    obj : DataFrame or path
        A DataFrame (returned as is), a file (``.csv``, ``.tsv``, ``.jsonl``,
        ``.ndjson``, ``.parquet``, optionally ``.gz``) or a folder of Parquet
        files (searched recursively; hive keys ``key=value`` in folder names
        become text columns).
    encoding : str
        Text encoding of a CSV, TSV or JSONL file (default UTF-8).

    Returns
    -------
    (pandas.DataFrame, str)
        The records and a short description of the source.

    Raises
    ------
    EvalDataError
        No such file, an empty file, an unknown file type, malformed JSON
        lines (all their line numbers are named; nothing is read), a file
        that is not valid text in ``encoding``, a truncated or corrupt
        compressed or Parquet file: always naming the file.

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
    try:
        if path.is_dir() or suffixes.endswith(".parquet") or suffixes.endswith(".pq"):
            df = _read_parquet(path)
        elif ".jsonl" in suffixes or ".ndjson" in suffixes:
            df = _read_jsonl(path, encoding)
        elif ".csv" in suffixes or ".tsv" in suffixes:
            try:
                df = _read_csv(path, "\t" if ".tsv" in suffixes else ",", encoding)
            except pd.errors.EmptyDataError as exc:
                raise EvalDataError(f"`obj` ({path}) is an empty file: no records to read") from exc
        else:
            raise EvalDataError(
                f"`obj` ({path}): unknown file type {suffixes or '(none)'}; "
                "use .csv, .tsv, .jsonl, .ndjson or .parquet (optionally .gz)"
            )
    except EvalDataError:
        raise
    except LookupError as exc:
        raise EvalDataError(f"`encoding`: unknown text encoding {encoding!r} ({exc})") from exc
    except Exception as exc:  # decoding errors of every kind: name the file
        raise _file_error(path, exc, encoding) from exc
    return df, str(path)


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
    """A 64-bit hash per row over every column (values with their type)."""
    h = _hashable(df)
    typed = h.assign(
        **{
            f"__kind_{i}": h[c].map(lambda v: type(v).__name__)
            for i, c in enumerate(h.columns)
            if h[c].dtype == object
        }
    )
    return pd.util.hash_pandas_object(typed, index=False)


def _suspect_copies(df: pd.DataFrame, keys: pd.Series, skip: set[str], n_cells: int) -> str | None:
    """Why the exact duplicate records look like copies of one log (None if they do not)."""
    mult = keys.value_counts()
    n_distinct = len(mult)
    if n_distinct < 2 or n_distinct == len(df):
        return None
    g = int(np.gcd.reduce(mult.to_numpy()))
    if g >= 2:
        return (
            f"every distinct record appears a multiple of {g} times, as when a log is "
            f"concatenated {g} times (which would make {len(df) - len(df) // g} of them copies)"
        )
    if n_distinct > n_cells:
        for c in df.columns:
            if c in skip:
                continue
            try:
                nu = df[c].nunique(dropna=False)
            except TypeError:
                continue
            if nu == n_distinct:
                return (
                    f"column {c!r} tells the distinct records apart (a per-run id, time or cost), "
                    "yet these records repeat another in every column"
                )
    return None


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
    error_values: Mapping[object, bool] | str | None = None,
    run_index: RunIndex = "auto",
    duplicates: DuplicatePolicy = "refuse",
    encoding: str = "utf-8",
    attrs: Mapping[str, object] | None = None,
) -> xr.Dataset:
    """Read run records into the canonical eval dataset.

    One record is one run of one agent on one task. Nothing is merged,
    coerced or dropped silently: identifiers are kept exactly as written,
    scores as recorded (partial credit stays partial), and every record not
    kept is counted in ``attrs["not_kept"]``.

    Parameters
    ----------
    obj : DataFrame or path
        A pandas DataFrame, or a path to a CSV, TSV, JSONL or Parquet file
        (or a folder of Parquet files); see :func:`read_table`.
    agent, task, run, score : str
        Column names. ``agent=None`` reads a single-agent log and names the
        agent ``agent_name``. Agent, task and run labels are strings exactly
        as written: ``"001"`` and ``"1"`` are two tasks; a column stored as
        integers (Parquet, a DataFrame) gives its decimal text; a column
        mixing a number and a text that read the same (JSON ``7`` and
        ``"7"``) is refused. ``run=None`` numbers runs 0, 1, ... per
        (agent, task) cell in file order.
    error : str, optional
        Column flagging infrastructure failures: booleans, 0/1, or text from
        the vocabulary true/t/yes/y/1/error (an error) and
        false/f/no/n/0/ok (no error), case-insensitive and stripped; missing
        values (empty, none, null, nan, na) mean no error. Other values are
        refused, with the distinct values listed (see ``error_values``).
    tag, cluster : str, optional
        Per-task columns (category, repository or task family), labels as
        written. The first value per task is kept; tasks whose value differs
        between runs are counted and reported by an
        :class:`InconsistentAttributeWarning`. A task with no label keeps a
        missing label (NaN; never ``""`` or a shared label), counted in ``attrs["n_tasks_without_cluster"]``
        (``..._tag``); :func:`hierbench.cluster_codes` makes each such task a
        cluster of its own, with a warning.
    extra : mapping or sequence, optional
        Numeric per-run columns to keep, as ``{variable: column}`` or a list
        of names (e.g. ``cost``, ``latency``, ``tokens``, ``steps``).
    annotations : mapping or sequence, optional
        Boolean per-run annotations (e.g. METR's token-budget flag), read
        with the error-column vocabulary, kept as bool variables and listed
        in ``attrs["annotations"]``.
    task_coords, agent_coords : sequence of str
        Further columns constant per task / per agent, kept as coords (text
        read from a CSV becomes numbers when every value is a number).
    errors : {"fail", "exclude"}
        ``"fail"`` (default): an infrastructure error counts as a failure
        (score 0); ``"exclude"``: the run is treated as not run (score NaN).
        Either way ``error`` marks the run and ``attrs["n_error_runs"]``
        counts them; under ``"exclude"`` they are also counted in
        ``attrs["not_kept"]`` and left out of ``attrs["n_records_kept"]``.
    error_values : mapping or "nonempty", optional
        What other values of the ``error`` column mean, e.g.
        ``{"timeout": True, "success": False}`` (matched as text,
        case-insensitive, stripped; it overrides the vocabulary), or
        ``"nonempty"``: any non-empty value outside the no-error vocabulary
        is an error (a column of error messages).
    run_index : {"auto", "label", "within_cell"}
        How a run column becomes the ``run`` coordinate. ``"auto"``: labels
        that are all integers (written without leading zeros, or an integer
        column) are the coordinate, so run r is the same occasion (epoch,
        seed) in every cell; any other labels are numbered 0, 1, ... per
        cell in file order and kept as the per-run variable ``run_id``.
        Integer labels that look like global run ids (more than twice as
        many distinct labels as the most runs any cell has) are refused,
        with the size and fill of the cube they would make. ``"label"``:
        integer labels are the coordinate however sparse. ``"within_cell"``:
        number runs per cell and keep the labels as ``run_id``.
    duplicates : {"refuse", "drop", "keep"}
        Records that repeat another in every column. Without a run column
        they are refused (``"refuse"``, default) when they look like copies
        of one log: every distinct record appears a multiple of k >= 2
        times (a log concatenated k times), or a column such as a run id or
        a timestamp tells the distinct records apart yet some repeat.
        ``"drop"`` keeps the first of each set of identical records (counted
        in ``attrs["not_kept"]``); ``"keep"`` keeps them all as distinct
        runs. With a run column a repeated (agent, task, run) is always an
        error unless ``"drop"`` removes exact copies first.
    encoding : str
        Text encoding of a CSV / TSV / JSONL file.
    attrs : mapping, optional
        Provenance to add to the dataset attrs.

    Returns
    -------
    xarray.Dataset
        The eval dataset; ``attrs`` record ``n_records_read``,
        ``n_records_kept``, ``binary`` (1 if every kept score is 0 or 1),
        ``n_tasks_without_cluster`` and, as JSON, why any were not kept.

    Raises
    ------
    EvalDataError
        Missing columns, empty or clashing identifiers, duplicate (agent,
        task, run), copies of records, global run ids, scores outside
        [0, 1] or not numeric, a missing score on a run not flagged as an
        error, error values outside the vocabulary, an empty input or a file
        that cannot be decoded: naming the file, the column and the rows.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"agent": ["a", "a", "b"], "task": ["t1", "t1", "t1"],
    ...                    "score": [1.0, 0.0, 1.0]})
    >>> ds = from_records(df)
    >>> ds.score.sizes["run"], int(ds.score.notnull().sum())
    (2, 3)

    Task labels are kept as written:

    >>> df = pd.DataFrame({"agent": ["a", "a"], "task": ["001", "1"], "score": [1.0, 0.0]})
    >>> from_records(df).task.values.tolist()
    ['001', '1']
    """
    if errors not in ("fail", "exclude"):
        raise EvalDataError(f"`errors` must be 'fail' or 'exclude'; got {errors!r}")
    if run_index not in ("auto", "label", "within_cell"):
        raise EvalDataError(
            f"`run_index` must be 'auto', 'label' or 'within_cell'; got {run_index!r}"
        )
    if duplicates not in ("refuse", "drop", "keep"):
        raise EvalDataError(f"`duplicates` must be 'refuse', 'drop' or 'keep'; got {duplicates!r}")
    df, source = read_table(obj, encoding=encoding)
    n_read = len(df)
    if n_read == 0:
        raise EvalDataError(f"`obj` ({source}) holds no records")
    df = df.reset_index(drop=True)
    where = f" in {source}"

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
            f"missing required columns{where}: "
            + ", ".join(f"`{k}`={c!r}" for k, c in missing.items())
            + f"; the records have columns {_fmt_list(list(map(str, df.columns)), 30)}"
        )

    tasks = id_labels(df[task], what="task", column=task, source=source)
    agents = (
        id_labels(df[agent], what="agent", column=agent, source=source)
        if agent is not None
        else np.full(n_read, agent_name, dtype=object)
    )

    # records that repeat another in every column
    n_copies = 0
    if duplicates != "keep":
        keys = _row_keys(df)
        dup = keys.duplicated(keep="first").to_numpy()
        if dup.any():
            if duplicates == "drop":
                n_copies = int(dup.sum())
                keep = ~dup
                df = df[keep].reset_index(drop=True)
                tasks, agents = tasks[keep], agents[keep]
            elif run is None:
                n_cells = len(pd.DataFrame({"a": agents, "t": tasks}).drop_duplicates())
                skip = {c for c in (agent, task, score, error) if c is not None}
                why = _suspect_copies(df, keys, skip, n_cells)
                if why is not None:
                    rows = np.flatnonzero(dup)
                    first = keys.drop_duplicates(keep="first")
                    orig = pd.Series(first.index, index=first.to_numpy())
                    pairs = [(int(orig[keys.iloc[r]]), int(r)) for r in rows[:5]]
                    raise EvalDataError(
                        f"duplicate records{where}: {rows.size} of {n_read} records repeat an earlier "
                        f"record in every column (e.g. rows (first, copy) {_fmt_list(pairs, 5)}) and "
                        f"there is no run column: {why}. Counting them would add runs that never "
                        "happened. Read the log once, give the run or epoch column (run=...), pass "
                        "duplicates='drop' to keep one of each set of identical records (right when "
                        "each run's record is unique, e.g. carries a run id), or duplicates='keep' "
                        "if they are distinct runs"
                    )
    n_rec = len(df)

    # scores
    sc, nonnum = numbers(df[score])
    if nonnum.any():
        rows = np.flatnonzero(nonnum)
        raise EvalDataError(
            f"`score` column {score!r}{where} must be numeric; rows {_fmt_list(rows.tolist())} hold "
            f"{_fmt_list(df[score][nonnum].astype(str).tolist())}"
        )
    err = (
        error_flags(df[error], what="error", column=error, source=source, error_values=error_values)
        if error is not None
        else np.zeros(n_rec, bool)
    )
    out_of_range = np.isfinite(sc) & ((sc < 0) | (sc > 1)) | np.isinf(sc)
    if out_of_range.any():
        rows = np.flatnonzero(out_of_range)
        raise EvalDataError(
            f"`score` column {score!r}{where} must lie in [0, 1]; rows {_fmt_list(rows.tolist())} hold "
            f"{_fmt_list(sc[rows].tolist())}"
        )
    nan_no_err = np.isnan(sc) & ~err
    if nan_no_err.any():
        rows = np.flatnonzero(nan_no_err)
        raise EvalDataError(
            f"`score` column {score!r}{where} is missing (NaN) on {len(rows)} runs not flagged as "
            f"infrastructure errors, rows {_fmt_list(rows.tolist())}: a run without a score must "
            "be flagged in the `error` column, or dropped before reading"
        )

    # runs
    cell = pd.DataFrame({"a": agents, "t": tasks})
    within = cell.groupby(["a", "t"], sort=False).cumcount().to_numpy()
    run_ids = None
    if run is None:
        run_idx = within
    else:
        rcol = df[run]
        labels = id_labels(rcol, what="run", column=run, source=source)
        if pd.api.types.is_integer_dtype(rcol.dtype) or (
            pd.api.types.is_float_dtype(rcol.dtype) and np.all(np.mod(rcol.to_numpy(), 1) == 0)
        ):
            ints = rcol.to_numpy().astype(np.int64)
            labels = ints.astype(str).astype(object)
        else:
            ints = canonical_ints(labels)
        key = cell.assign(r=labels)
        dup = key.duplicated(["a", "t", "r"], keep=False).to_numpy()
        if dup.any():
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
        if run_index == "label" and ints is None:
            bad = [v for v in pd.unique(labels) if canonical_ints(np.array([v])) is None]
            raise EvalDataError(
                f"`run_index='label'` needs integer run labels; `run` column {run!r}{where} holds "
                f"{_fmt_list(bad, 5)}; use run_index='within_cell'"
            )
        if run_index == "within_cell" or ints is None:
            run_idx = within
            run_ids = labels
        else:
            n_lab = len(pd.unique(ints))
            most = int(within.max()) + 1
            if run_index == "auto" and n_lab > 2 * most:
                n_a, n_t = len(pd.unique(agents)), len(pd.unique(tasks))
                size = n_a * n_t * n_lab
                raise EvalDataError(
                    f"`run` column {run!r}{where} holds {n_lab} distinct run labels, but no "
                    f"(agent, task) cell has more than {most} runs: the labels look like global run "
                    f"ids, not occasions shared by the cells. As the run coordinate they would make "
                    f"a {n_a} x {n_t} x {n_lab} cube ({size:,} slots, about "
                    f"{size * 17 / 1e6:,.0f} MB, {100 * n_rec / size:.2g}% filled). Pass "
                    "run_index='within_cell' to number runs 0, 1, ... within each cell (the labels "
                    "are kept as `run_id`), or run_index='label' to keep them as the coordinate"
                )
            run_idx = ints

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
        vals, bad = numbers(df[c])
        if bad.any():
            rows = np.flatnonzero(bad)
            raise EvalDataError(
                f"`extra` column {c!r}{where} must be numeric; rows {_fmt_list(rows.tolist())} hold "
                f"{_fmt_list(df[c][bad].astype(str).tolist())}"
            )
        data_vars[v] = (dims, _cube(vals, np.nan, float))
    for v, c in ann_map.items():
        flags = error_flags(df[c], what=f"annotations[{v!r}]", column=c, source=source)
        data_vars[v] = (dims, _cube(flags, False, bool))
    if run_ids is not None:
        data_vars["run_id"] = (dims, _cube(run_ids, "", object))

    coords: dict[str, object] = {
        "agent": np.asarray(agent_labels, dtype=str),
        "task": np.asarray(task_labels, dtype=str),
        "run": run_labels.astype(np.int64),
    }
    n_inconsistent: dict[str, int] = {}
    n_unlabelled: dict[str, int] = {}
    tframe = pd.DataFrame({"__task": tasks})
    for name, col in (("tag", tag), ("cluster", cluster), *((c, c) for c in task_coords)):
        if col is None:
            continue
        if name in ("tag", "cluster"):
            tframe[col] = id_labels(df[col], what=name, column=col, source=source, allow_missing=True)
        else:
            tframe[col] = _coord_values(df[col])
        first, n_bad = _first_per_group(tframe, "__task", col, "task")
        vals = first.reindex(task_labels).to_numpy()
        if name in ("tag", "cluster"):
            vals = np.array([None if pd.isna(v) else str(v) for v in vals], dtype=object)
            n_unlabelled[name] = int(sum(v is None for v in vals))
        coords[name] = ("task", vals)
        n_inconsistent[f"task {name}"] = n_bad
    aframe = pd.DataFrame({"__agent": agents})
    for col in agent_coords:
        aframe[col] = _coord_values(df[col])
        first, n_bad = _first_per_group(aframe, "__agent", col, "agent")
        coords[col] = ("agent", first.reindex(agent_labels).to_numpy())
        n_inconsistent[f"agent {col}"] = n_bad

    ds = xr.Dataset(data_vars, coords=coords)
    not_kept = {}
    if n_copies:
        not_kept["exact copy of an earlier record (duplicates='drop')"] = n_copies
    if errors == "exclude":
        not_kept["infrastructure error, excluded (errors='exclude')"] = n_error
    kept_scores = sc[np.isfinite(sc)]
    ds.attrs = {
        "hierbench_schema": SCHEMA_VERSION,
        "reader": "from_records",
        "source": source,
        "errors": errors,
        "n_records_read": int(n_read),
        "n_records_kept": int(n_rec) - (n_error if errors == "exclude" else 0),
        "n_error_runs": n_error,
        "binary": int(bool(np.all((kept_scores == 0.0) | (kept_scores == 1.0)))),
        "not_kept": _not_kept_attr(not_kept),
        "inconsistent_attributes": json.dumps({k: v for k, v in n_inconsistent.items() if v}),
        "annotations": json.dumps(sorted(ann_map)),
    }
    for name, k in n_unlabelled.items():
        ds.attrs[f"n_tasks_without_{name}"] = k
    if attrs:
        ds.attrs.update(dict(attrs))
    return check_eval_dataset(ds)


def _coord_values(col: pd.Series) -> np.ndarray:
    """A per-task / per-agent attribute: as stored, or numbers when text that is all numbers."""
    if col.dtype == object or pd.api.types.is_string_dtype(col.dtype):
        if pd.api.types.infer_dtype(col.to_numpy(dtype=object), skipna=True) == "string":
            vals, bad = numbers(col)
            if not bad.any() and np.isfinite(vals).any():
                return vals
            return col.to_numpy(dtype=object)
    return col.to_numpy()


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
