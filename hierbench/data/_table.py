"""Reading run records: a DataFrame or a CSV / TSV / JSONL / Parquet file -> a table of raw values.

Nothing is parsed here that a reader has not asked for (see :func:`read_table`);
:mod:`hierbench.data._records` maps the columns to their roles.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pandas as pd

from .._base import HierbenchWarning
from .._base import warn_user
from ._schema import EvalDataError
from ._schema import _fmt_list

__all__ = ["read_table"]


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
    # a byte-order mark (as spreadsheet exports write) is not part of the first record
    enc = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    with _opener(path)(path, "rt", encoding=enc) as fh:
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
    # every column as text exactly as written; each reader converts a column by its role.
    # index_col=False: a row with more fields than the header is an error, never an index.
    header = pd.read_csv(
        path, sep=sep, header=None, nrows=1, dtype=str, keep_default_na=False, na_filter=False,
        encoding=encoding,
    ).iloc[0].tolist()  # fmt: skip
    if len(set(header)) < len(header):  # pandas would rename a repeated name to "name.1"
        dup = sorted({h for h in header if header.count(h) > 1})
        raise EvalDataError(
            f"`obj` ({path}): columns {_fmt_list(dup)} appear more than once in the header; "
            "each column must have its own name"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            return pd.read_csv(
                path, sep=sep, dtype=str, keep_default_na=False, na_filter=False,
                encoding=encoding, index_col=False,
            )  # fmt: skip
        except pd.errors.ParserWarning as exc:
            raise EvalDataError(
                f"`obj` ({path}): rows hold more fields than the header names ({exc}); nothing "
                f"was read: a field holding the separator {sep!r} must be quoted (a file separated "
                "by another character, e.g. ';' with decimal commas, must be written with "
                f"{'tabs' if sep == chr(9) else 'commas'} first)"
            ) from exc


def _hive_keys(path: Path, root: Path) -> dict[str, str]:
    keys = {}
    for part in path.relative_to(root).parts[:-1]:
        if "=" in part:
            k, v = part.split("=", 1)
            keys[k] = v
    return keys


#: ``DataFrame.attrs`` key: per column stored with different types in a Parquet folder's files,
#: ``{type: [file names]}``
TYPES_BY_FILE = "hierbench_types_by_file"


#: The suffixes of a Parquet file (case aside); in a folder, a file that begins with Parquet's
#: mark ``PAR1`` is Parquet whatever its name (Hive's part files ``000000_0`` have no suffix)
PARQUET_SUFFIXES = (".parquet", ".pq")


def _begins_par1(f: Path) -> bool:
    try:
        with open(f, "rb") as fh:
            return fh.read(4) == b"PAR1"
    except OSError:
        return False


def parquet_folder_files(folder: Path, argname: str) -> list[Path]:
    """The Parquet files under ``folder``, searched recursively: every file each reader reads.

    A file is read when its name ends in ``.parquet`` or ``.pq`` or when it begins with
    Parquet's mark ``PAR1`` (part files without a suffix). Files and folders whose names begin
    with ``.`` or ``_`` are the writers' metadata (``_SUCCESS``, ``_metadata``, ``.crc``,
    ``_temporary/``) and are not read; any other file that is left out, and any such hidden
    file named as Parquet, is named in a warning: no file of records is left out without a word.
    """
    files, left_out = [], []
    for f in sorted(folder.rglob("*")):
        if not f.is_file():
            continue
        hidden = any(part.startswith((".", "_")) for part in f.relative_to(folder).parts)
        named = f.suffix.lower() in PARQUET_SUFFIXES
        if hidden:
            if named:
                left_out.append(f"{f.relative_to(folder)} (a hidden or '_' name: metadata, or an unfinished write)")
        elif named or _begins_par1(f):
            files.append(f)
        else:
            left_out.append(f"{f.relative_to(folder)} (not Parquet: no .parquet or .pq suffix, no PAR1 mark)")
    if not files:
        raise EvalDataError(
            f"`{argname}`: folder {str(folder)!r} holds no .parquet files (nor .pq files or files that "
            "begin with Parquet's mark PAR1)" + (f"; it holds {_fmt_list(left_out, 5)}" if left_out else "")
        )
    if left_out:
        warn_user(
            f"`{argname}`: {len(left_out)} files in folder {str(folder)!r} were not read: "
            f"{_fmt_list(left_out, 5)}; the records read (n_records_read) are those of its "
            f"{len(files)} Parquet files. Move the files out, or rename a Parquet file to *.parquet",
            HierbenchWarning,
        )
    return files


def _read_parquet(path: Path) -> pd.DataFrame:
    """Read a Parquet file, or every Parquet file under a folder (hive keys ``k=v`` kept as text).

    The folder's files are those of ``parquet_folder_files``. A column whose
    type differs between the files is kept as Python objects, so ``1`` (int in
    one file) and ``"1"`` (text in another) stay apart and are refused as
    identifiers rather than merged.
    """
    import pyarrow.parquet as pq

    if path.is_file():
        return pq.read_table(path).to_pandas()
    files = parquet_folder_files(path, "obj")
    frames, by_type = [], {}  # by_type: per column, {dtype: [the files that stored it so]}
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
            by_type.setdefault(c, {}).setdefault(str(df[c].dtype), []).append(f.name)
        frames.append(df)
    mixed = [c for c, t in by_type.items() if len(t) > 1]
    if mixed:
        frames = [df.astype({c: object for c in mixed if c in df.columns}) for df in frames]
    out = pd.concat(frames, ignore_index=True)
    if mixed:  # which file stored which type: a refusal of the column names them
        out.attrs[TYPES_BY_FILE] = {c: dict(sorted(by_type[c].items())) for c in mixed}
    return out


def _gzip_cut_in_magic(path: Path | str) -> bool:
    """A ``.gz`` file cut off inside gzip's two-byte signature (zlib calls it "not a gzipped file")."""
    p = Path(path)
    if not p.name.lower().endswith(".gz") or not p.is_file() or p.stat().st_size >= 2:
        return False
    with open(p, "rb") as fh:
        head = fh.read(2)
    return b"\x1f\x8b".startswith(head)


def _file_error(path: Path | str, exc: BaseException, encoding: str = "utf-8") -> EvalDataError:
    """Return a reader error that names the file, for an exception raised while decoding it."""
    if isinstance(exc, UnicodeDecodeError):
        return EvalDataError(
            f"`obj` ({path}) is not valid {encoding} text: it holds bytes such as "
            f"{exc.object[exc.start:exc.start + 1]!r} that {encoding} does not allow there; if the "
            "file is written in another encoding, pass it, e.g. `encoding='latin-1'` (or "
            "'cp1252', 'utf-16')"
        )
    if isinstance(exc, EOFError) or "compressed file ended" in str(exc).lower() or _gzip_cut_in_magic(path):
        return EvalDataError(
            f"`obj` ({path}) is truncated: the compressed stream ends before its end marker "
            f"({type(exc).__name__}: {exc}); the file was cut off while being written or copied"
        )
    return EvalDataError(
        f"`obj` ({path}) could not be read as {''.join(Path(path).suffixes) or 'a table'}: "
        f"{type(exc).__name__}: {exc}"
    )


def _read_path(path: Path, encoding: str) -> pd.DataFrame:
    """Read the records of a file or Parquet folder, by its suffix."""
    suffixes = "".join(path.suffixes).lower()
    if path.is_dir() or suffixes.endswith(".parquet") or suffixes.endswith(".pq"):
        return _read_parquet(path)
    if ".jsonl" in suffixes or ".ndjson" in suffixes:
        return _read_jsonl(path, encoding)
    if ".csv" in suffixes or ".tsv" in suffixes:
        try:
            return _read_csv(path, "\t" if ".tsv" in suffixes else ",", encoding)
        except pd.errors.EmptyDataError as exc:
            raise EvalDataError(f"`obj` ({path}) is an empty file: no records to read") from exc
    raise EvalDataError(
        f"`obj` ({path}): unknown file type {suffixes or '(none)'}; "
        "use .csv, .tsv, .jsonl, .ndjson or .parquet (optionally .gz)"
    )


def _check_column_names(df: pd.DataFrame, source: str) -> None:
    """Each column name once: a repeated name would make a column ambiguous."""
    dup = df.columns[df.columns.duplicated()].unique().tolist()
    if dup:
        raise EvalDataError(
            f"`obj` ({source}): columns {_fmt_list(list(map(str, dup)))} appear more than once; "
            "each column must have its own name"
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
    its role (the rules in :mod:`hierbench.data`).

    Parameters
    ----------
    obj : DataFrame or path
        A DataFrame (returned as is), a file (``.csv``, ``.tsv``, ``.jsonl``,
        ``.ndjson``, ``.parquet`` or ``.pq``, optionally ``.gz``) or a folder
        of Parquet files (searched recursively: files named ``*.parquet`` or
        ``*.pq`` and files beginning with Parquet's mark ``PAR1``; names
        beginning with ``.`` or ``_`` are metadata, not read; other files are
        named in a warning; hive keys ``key=value`` in folder names become
        text columns).
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
        _check_column_names(obj, "DataFrame")
        return obj, "DataFrame"
    if not isinstance(obj, (str, os.PathLike)):
        raise EvalDataError(
            f"`obj` must be a pandas DataFrame or a path to a CSV, JSONL or Parquet file; "
            f"got {type(obj).__name__}"
        )
    if not isinstance(encoding, str):
        raise EvalDataError(f"`encoding` must be the name of a text encoding, e.g. 'utf-8'; got {encoding!r}")
    path = Path(obj)
    if not path.exists():
        raise EvalDataError(f"`obj`: no such file {str(path)!r}")
    if path.is_file() and path.stat().st_size == 0:
        raise EvalDataError(f"`obj` ({path}) is an empty file: no records to read")
    try:
        df = _read_path(path, encoding)
    except EvalDataError:
        raise
    except LookupError as exc:
        raise EvalDataError(f"`encoding`: unknown text encoding {encoding!r} ({exc})") from exc
    except Exception as exc:  # decoding errors of every kind: name the file
        raise _file_error(path, exc, encoding) from exc
    _check_column_names(df, str(path))
    return df, str(path)
