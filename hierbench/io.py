"""Saving and loading eval datasets and fits: netCDF or zarr, never pickle.

An eval dataset holds string coords (agent and task names, tags, clusters)
and JSON attrs (``not_kept``, ``annotations``, ...). netCDF stores strings as
variable-length text and attrs as text, so both survive as they are. Boolean
variables (``error``, the per-run annotations, a fit's ``diverging``) are left
to xarray, which stores them as int8 with its own ``dtype: bool`` attr and
opens them as bool: ``xr.open_datatree`` alone gives arviz-plots the bool
``diverging`` it masks draws with. (Files written before stored them with a
marker of hierbench's own, which :func:`load_fit` and :func:`load_dataset` still
read.)

A fit is an :class:`xarray.DataTree` (the ArviZ 1.x groups); it is written
with ``DataTree.to_netcdf`` (one netCDF group per node) or ``to_zarr`` (needs
the ``zarr`` package).

Nothing is overwritten unless asked (``overwrite=True``), and a folder that
is not a zarr store is never replaced: its files are the user's; nor is a file
replaced by a zarr store (a folder), or a zarr store by a netCDF file. The
format written is ``engine=``, else the suffix (``.zarr`` in any case is zarr,
anything else netCDF); the format read is ``engine=``, else the content (a
folder is a zarr store, a file netCDF). Fits are
saved compact by default: the per-observation groups (``log_likelihood``,
``posterior_predictive``, ``prior_predictive``), which grow with the number of
draws times observations, are left out unless asked for with ``groups="all"``
or by name, and every variable is compressed (zlib in netCDF, zstd in zarr).

A saved fit is plain ArviZ: ``xr.load_datatree("fit.nc")`` alone reads it (and
closes the file) and arviz-plots and arviz-stats work on it. ArviZ's own list attrs (``sample_dims``)
are written as lists, never as JSON text; how :func:`load_fit` restores the
attrs a file cannot hold exactly is one JSON root attr (``hierbench_attr_kinds``),
so the groups ArviZ reads carry no hierbench key.

What changes on the way: attrs holding a dict (or, in an eval dataset, a
list) or ``None`` are stored as JSON text (``None`` as ``"null"``; hierbench's own
such attrs already are text), boolean attrs as 0/1, and a missing label inside
a text variable becomes ``""``; :func:`load_fit` and :func:`load_dataset` undo
all but the boolean attrs. A missing label reads back as ``None`` where every
missing label of the variable was ``None`` (nutpie's ``divergence_message``),
else as NaN. A number attr reads back as a Python ``int`` or ``float`` (the file
gives a numpy scalar). A variable of Python objects that are not all text
(numbers or bools, with text or not: a JSON file's coord) is stored as one JSON
text per value, marked ``hierbench_json_values``, and reads back as the same
objects; one holding anything else (a date, bytes, a list) is refused. Numbers,
text, bools, NaN and every coordinate come back as they were.

A zarr store is written with every chunk, the empty ones too (zarr leaves out
by default a chunk that holds only the fill value), and marked so by a root attr
(``hierbench_zarr_chunks``). zarr reads a missing chunk as the fill value (NaN)
without a word, so :func:`load_fit` reads a marked store strictly: a missing
chunk (an interrupted copy or sync) raises :class:`UnreadableFileError` naming
the store and each group/variable that lacks chunks. A store written before
(no marker) lacks its legitimately empty chunks (``sample_stats/tuning``, all
False, for one), which cannot be told from lost ones: it is read
as before, the missing chunks as the fill value, with a warning naming the
variables that lack chunks.

A loaded fit is the fit in memory for ArviZ: zarr lists groups and variables
in no fixed order and reads text as numpy's ``StringDType``, so
:func:`save_fit` records each group's order and the dtype of each text
variable (Python objects for PyMC's coordinate labels, numpy text of a given
width otherwise) in a second JSON root attr (``hierbench_layout``), and
:func:`load_fit` puts both back: summaries list their rows, and plots their
panels, in the same order as for the fresh fit. The same attr records a coord's
pandas index dtype where numpy has none (pandas' ``str``), so that ``to_frame()``
of a reloaded fit has the index dtype of the fresh one. In a file without that attr,
text read as ``StringDType`` comes back as numpy text. :func:`save_dataset`
records the same layout for a dataset and :func:`load_dataset` restores it: text
held as Python objects (an eval dataset's clusters, a result's ``ci_flag``) comes
back as objects, not as numpy text as wide as its longest label, which would cut
a longer label written into it later.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from ._base import HierbenchError
from ._base import HierbenchWarning
from ._base import warn_user
from .data import EvalDataError

__all__ = [
    "COMPACT_DROP",
    "UnreadableFileError",
    "load_dataset",
    "load_fit",
    "save_dataset",
    "save_fit",
]

#: Groups :func:`save_fit` leaves out by default: one value per draw and observation.
COMPACT_DROP: tuple[str, ...] = ("log_likelihood", "posterior_predictive", "prior_predictive")


class UnreadableFileError(HierbenchError):
    """A file exists but cannot be read as a hierbench dataset or fit (corrupt, truncated, other format)."""


_BOOL_MARK = "hierbench_dtype"
#: a text variable whose missing labels (None or NaN) are stored as "" and read back as NaN
_MISSING_MARK = "hierbench_missing_text"
_JSON_MARK = "hierbench_json_attrs"
#: an object variable holding numbers or bools, stored as one JSON text per value
_VALUES_MARK = "hierbench_json_values"
#: root attr of a saved fit: per group, which attrs were lists or JSON text (JSON)
_ATTR_MARK = "hierbench_attr_kinds"
#: root attr of a saved fit: per group in order, its variables in order, which are coords and
#: the dtype of each text variable (JSON); zarr lists groups and variables in any order
_LAYOUT_MARK = "hierbench_layout"
#: root attr of a zarr store written by save_fit with every chunk, the empty ones too ("all"):
#: load_fit refuses such a store when a chunk is missing
_CHUNKS_MARK = "hierbench_zarr_chunks"
#: what reading a corrupt, truncated or foreign file raises (reported as UnreadableFileError)
_READ_ERRORS = (OSError, ValueError, RuntimeError, KeyError, TypeError)


def _replace_var(ds: xr.Dataset, name: str, new: xr.DataArray) -> xr.Dataset:
    """``ds`` with variable ``name`` replaced by ``new`` (a coordinate stays a coordinate)."""
    if name in ds.coords:
        return ds.assign_coords({name: new})
    ds[name] = new
    return ds


def _encode_vars(ds: xr.Dataset) -> xr.Dataset:
    """``None`` in text variables as ``""``, other objects as JSON (bools are xarray's to encode: it opens them as bool)."""
    ds = ds.copy()
    for name in list(ds.variables):
        var = ds[name]
        if var.dtype.kind == "O" and not _all_text(var.values.ravel()):
            ds = _replace_var(ds, name, _json_values(name, var))
        elif var.dtype.kind in "OUT":
            # variable-length text; a missing label (None or NaN in an object array) is stored
            # as "" and marked, so that it reads back missing, not as the text 'nan'
            flat = var.values.ravel()
            missing = np.array([_is_missing(v) for v in flat], dtype=bool)
            vals = np.array(["" if m else str(v) for v, m in zip(flat, missing, strict=True)], dtype=object)
            new = var.copy(data=vals.reshape(var.shape))
            if missing.any():
                # "none": every missing label was None (nutpie's divergence_message), read back as
                # None; 1: NaN or a mix, read back as NaN
                kind = "none" if all(flat[i] is None for i in np.flatnonzero(missing)) else 1
                new.attrs = {**var.attrs, _MISSING_MARK: kind}
            ds = _replace_var(ds, name, new)
    return ds


def _all_text(flat: np.ndarray) -> bool:
    """Every value of an object array is text or a missing label (None, NaN)."""
    return all(isinstance(v, str) or _is_missing(v) for v in flat)


#: the values an object variable may hold to be stored as JSON, each read back as it was
_JSON_SCALARS = (str, bool, int, float, np.bool_, np.integer, np.floating)


def _json_values(name: str, var: xr.Variable | xr.DataArray) -> xr.DataArray:
    """An object variable holding numbers or bools (with text or not) as one JSON text per value, marked.

    ``str(v)`` made JSON's 3 and 248.5 the text '3' and '248.5' (and ``True`` 'True'); JSON
    keeps each value's type (int, float, bool, text, None; NaN as ``NaN``), and
    :func:`_decode_vars` reads each back. Any other object (a date, bytes, a list) is refused.
    """
    flat = var.values.ravel()
    odd = [v for v in flat if v is not None and not isinstance(v, _JSON_SCALARS)]
    if odd:
        kinds = sorted({type(v).__name__ for v in odd})
        raise EvalDataError(
            f"variable {name!r} holds values that are not text, numbers or bools ({', '.join(kinds)}, e.g. "
            f"{odd[0]!r}), which a netCDF file cannot store as they are; convert them (e.g. to text) before saving"
        )
    vals = np.array([json.dumps(v.item() if isinstance(v, np.generic) else v) for v in flat], dtype=object)
    new = var.copy(data=vals.reshape(var.shape))
    new.attrs = {**var.attrs, _VALUES_MARK: "json"}
    return new


def _is_missing(v: object) -> bool:
    """A missing label in a text variable: None, or a float NaN in an object array."""
    return v is None or (isinstance(v, float) and v != v)


def _plain_list(v: object) -> bool:
    """A list netCDF and zarr store natively: all text or all numbers (never bools)."""
    if not isinstance(v, (list, tuple)):
        return False
    if all(isinstance(x, str) for x in v):
        return True
    return all(isinstance(x, (int, float, np.number)) and not isinstance(x, bool) for x in v)


def _encode_attrs(attrs: dict, *, native_lists: bool) -> tuple[dict, dict[str, str]]:
    """Attrs a file can hold, and how each changed one is restored (``"list"`` or ``"json"``).

    With ``native_lists`` (fits) a list of text or numbers stays a list, so
    ArviZ reads e.g. ``sample_dims`` from the file as it wrote it; dicts and
    mixed lists become JSON text. Booleans become 0/1; ``None`` becomes the JSON text
    ``"null"``, listed with the JSON attrs, and reads back as ``None``.
    """
    out, kinds = {}, {}
    for k, v in attrs.items():
        if native_lists and _plain_list(v):
            out[k], kinds[k] = list(v), "list"
        elif isinstance(v, (dict, list, tuple)) or v is None:
            out[k], kinds[k] = json.dumps(v), "json"
        elif isinstance(v, bool):
            out[k] = int(v)
        else:
            out[k] = v
    return out, kinds


def _layout_of(ds: xr.Dataset) -> dict:
    """The order of ``ds``'s variables, which are coords, and each text and index dtype (:data:`_LAYOUT_MARK`).

    ``"index"`` names the coords whose pandas index has a dtype numpy does not have (pandas'
    ``str``, as in a fit whose labels came from a pandas index): a file holds the values only, and
    xarray rebuilds an ``object`` index from them, so ``to_frame()`` of a reloaded fit had an index
    of another dtype.
    """
    layout = {
        "vars": [str(v) for v in ds.variables],
        "coords": [str(c) for c in ds.coords],
        "text": {str(v): ds[v].dtype.str for v in ds.variables if ds[v].dtype.kind in "OU"},
    }
    index = {}
    for name, idx in ds.indexes.items():
        dtype = idx.dtype
        if isinstance(idx, pd.MultiIndex) or isinstance(dtype, np.dtype):
            continue
        try:
            if pd.api.types.pandas_dtype(str(dtype)) == dtype:  # rebuilt from its name as it was
                index[str(name)] = str(dtype)
        except TypeError:
            continue
    if index:
        layout["index"] = index
    return layout


def _encode(ds: xr.Dataset) -> xr.Dataset:
    """An eval dataset ready for netCDF: its JSON attrs listed in its own marker attr, its layout in another."""
    layout = _layout_of(ds)
    ds = _encode_vars(ds)
    ds.attrs, kinds = _encode_attrs(dict(ds.attrs), native_lists=False)
    listed = _listed_json(ds.attrs)  # a file's own marker, kept where the dataset came from one unread
    if kinds or listed:
        ds.attrs[_JSON_MARK] = json.dumps(sorted(set(kinds) | listed))
    ds.attrs[_LAYOUT_MARK] = json.dumps(layout)
    return ds


def _listed_json(attrs: dict) -> set[str]:
    """The attrs an earlier save listed as JSON text and that are still text (a file opened by plain xarray).

    Without them, saving such a dataset with one new dict attr wrote a marker naming that attr
    alone, and the earlier ones read back as text.
    """
    try:
        names = json.loads(attrs.get(_JSON_MARK, "[]"))
    except (TypeError, ValueError):
        return set()
    return {k for k in names if isinstance(k, str) and isinstance(attrs.get(k), str)} if isinstance(names, list) else set()


def _restore_attr(value: object, kind: str) -> object:
    if kind == "json":
        return json.loads(value) if isinstance(value, str) else value
    if isinstance(value, str):  # a one-element list of text reads back as its text
        return [value]
    return np.asarray(value).tolist()  # numbers, and an empty list (read back as an empty array)


def _decode_vars(ds: xr.Dataset) -> xr.Dataset:
    ds = ds.copy()
    for name in list(ds.variables):
        var = ds[name]
        if var.attrs.get(_VALUES_MARK) == "json":
            attrs = {k: v for k, v in var.attrs.items() if k != _VALUES_MARK}
            vals = np.empty(var.size, dtype=object)
            vals[:] = [json.loads(str(v)) for v in var.values.ravel()]
            new = var.copy(data=vals.reshape(var.shape))
            new.attrs = attrs
            ds = _replace_var(ds, name, new)
            continue
        if _MISSING_MARK in var.attrs:
            attrs = {k: v for k, v in var.attrs.items() if k != _MISSING_MARK}
            gap = None if var.attrs[_MISSING_MARK] == "none" else np.nan
            vals = np.array([gap if v == "" else str(v) for v in var.values.ravel()], dtype=object)
            new = var.copy(data=vals.reshape(var.shape))
            new.attrs = attrs
            ds = _replace_var(ds, name, new)
            continue
        if var.attrs.get(_BOOL_MARK) == "bool":
            attrs = {k: v for k, v in var.attrs.items() if k != _BOOL_MARK}
            new = var.astype(bool)
            new.attrs = attrs
            ds = _replace_var(ds, name, new)
        elif var.dtype.kind == "T":
            # zarr reads text as numpy's StringDType, which code written for fixed-width text
            # cannot cast (np.asarray(x, dtype=str) raises): read it back as numpy text
            ds = _replace_var(ds, name, var.copy(data=var.values.astype(object).astype(str)))
    return ds


def _decode(ds: xr.Dataset, kinds: dict[str, str] | None = None) -> xr.Dataset:
    """Undo :func:`_encode` (``kinds``: a fit node's entry of the root marker)."""
    ds = _decode_vars(ds)
    if _JSON_MARK in ds.attrs:  # eval datasets, and fits written before the root marker
        for k in json.loads(ds.attrs.pop(_JSON_MARK)):
            ds.attrs[k] = _restore_attr(ds.attrs.get(k), "json")
    for k, kind in (kinds or {}).items():
        if k in ds.attrs:
            ds.attrs[k] = _restore_attr(ds.attrs[k], kind)
    sd = ds.attrs.get("sample_dims")
    if isinstance(sd, str) and sd.startswith("["):  # files written before any marker existed
        ds.attrs["sample_dims"] = json.loads(sd)
    # a number attr reads back as a numpy scalar (np.int64): as the Python number it was saved as,
    # so that a read report stays JSON-ready
    ds.attrs = {k: v.item() if isinstance(v, np.generic) else v for k, v in ds.attrs.items()}
    return ds


def _engine_for(path: Path, engine: str | None) -> str:
    """The format a path is written in: ``engine``, else ``.zarr`` (any case) zarr, else netCDF.

    The one rule both :func:`save_fit` and ``hierbench fit -o`` apply (``fit.ZARR`` passed the
    CLI's check as zarr and was then written as netCDF).
    """
    if engine is not None:
        if engine not in ("netcdf", "zarr"):
            raise ValueError(f"`engine` must be 'netcdf' or 'zarr'; got {engine!r}")
        return engine
    return "zarr" if path.suffix.lower() == ".zarr" else "netcdf"


def _format_reason(kind: str, engine: str | None) -> str:
    """What chose the format :func:`_engine_for` gave, in words for an error."""
    if engine is not None:
        return f"engine={engine!r}"
    return "its suffix is .zarr" if kind == "zarr" else "its suffix is not .zarr"


def _is_zarr_store(path: Path) -> bool:
    return path.is_dir() and any((path / m).exists() for m in ("zarr.json", ".zgroup", ".zattrs"))


def _netcdf_signature(path: Path) -> bool:
    """The file starts as netCDF does: HDF5 (netCDF-4) or classic netCDF."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return head.startswith((b"\x89HDF\r\n\x1a\n", b"CDF\x01", b"CDF\x02", b"CDF\x05"))


def _target_conflict(path: Path, kind: str, *, why: str, python: bool) -> str | None:
    """Why the existing ``path`` cannot be replaced by a ``kind`` ("netcdf" or "zarr") write, or None.

    A zarr store is a folder and a netCDF file is a file: one is never replaced by the other,
    and a folder that is not a zarr store is never replaced (its files are the user's).
    ``why`` says what chose the format (:func:`_format_reason`); with ``python`` the remedy
    names :func:`save_fit`'s ``engine=``.
    """
    if not path.exists():
        return None
    if path.is_dir() and not _is_zarr_store(path):
        return (
            f"{str(path)!r} is an existing folder that is not a zarr store; hierbench does not "
            "write over a folder's files: give a new path such as 'fit.zarr' or 'fit.nc'"
        )
    if path.is_dir() and kind == "netcdf":
        fix = "pass engine='zarr' to replace the store, or give" if python else "give"
        return (
            f"{str(path)!r} is an existing zarr store (a folder), and it would be written as a netCDF "
            f"file ({why}); hierbench does not replace a folder with a file: {fix} another path"
        )
    if not path.is_dir() and kind == "zarr":
        what = "netCDF file" if _netcdf_signature(path) else "file"
        fix = "pass engine='netcdf' to replace it with a netCDF file, or give" if python else "give"
        return (
            f"{str(path)!r} is an existing {what}, and it would be written as a zarr store ({why}), "
            f"which is a folder; hierbench does not replace a file with a folder: {fix} another "
            "path (or remove the file first)"
        )
    return None


def _check_target(
    path: Path, overwrite: bool, *, kind: str = "netcdf", why: str = "", python: bool = False
) -> None:
    """Refuse to replace a user's file or folder unless asked; never replace a non-zarr folder.

    Nor a file with a folder or a folder with a file (checked before anything is written).
    """
    if not path.exists():
        if not path.parent.exists():
            raise FileNotFoundError(
                f"cannot write {str(path)!r}: folder {str(path.parent)!r} does not exist"
            )
        return
    conflict = _target_conflict(path, kind, why=why or _format_reason(kind, None), python=python)
    if conflict:
        raise FileExistsError(conflict)
    if not overwrite:
        raise FileExistsError(
            f"{str(path)!r} already exists; pass overwrite=True (CLI: --overwrite) to replace it"
        )


def _write_netcdf(obj, path: Path, overwrite: bool, *, why: str = "", **kw) -> None:
    """Write next to the target, then move it into place (a failed write leaves the old file)."""
    _check_target(path, overwrite, why=why)
    tmp = path.with_name(f".{path.name}.hierbench-tmp")
    try:
        obj.to_netcdf(tmp, engine="netcdf4", **kw)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def _compression(ds: xr.Dataset) -> dict:
    enc = {}
    for name, var in ds.variables.items():
        if var.ndim > 0 and var.dtype.kind in "biuf":
            enc[name] = {"zlib": True, "complevel": 4}
    return enc


def save_dataset(ds: xr.Dataset, path: str | os.PathLike, *, overwrite: bool = False) -> Path:
    """Write an eval dataset (or its counts) to a netCDF file.

    Parameters
    ----------
    ds : xarray.Dataset
        Any dataset of plain numbers, bools and strings (an eval dataset, its
        :func:`~hierbench.data.to_counts`, a summary).
    path : str or path-like
        Target file, conventionally ``*.nc``.
    overwrite : bool
        Replace an existing file (default: refuse with :class:`FileExistsError`).

    Returns
    -------
    pathlib.Path
        The file written (``path``), for :func:`load_dataset`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=2, n_tasks=3, n_runs=2, rng=0)
    >>> p = save_dataset(ds, pathlib.Path(tempfile.mkdtemp()) / "eval.nc")
    >>> load_dataset(p).identical(ds)
    True
    """
    if not isinstance(ds, xr.Dataset):
        raise EvalDataError(f"`ds` must be an xarray.Dataset; got {type(ds).__name__}")
    path = Path(path)
    enc = _encode(ds)
    _write_netcdf(enc, path, overwrite, why="save_dataset writes netCDF only", encoding=_compression(enc))
    return path


def load_dataset(path: str | os.PathLike) -> xr.Dataset:
    """Read a dataset written by :func:`save_dataset` (fully loaded, file closed).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    xarray.Dataset
        The dataset as saved, boolean variables and list or dict attrs
        restored, each text variable in the dtype it had (Python objects stay
        objects: numpy text of a fixed width would cut an edit to its width);
        a missing text label reads back as NaN, a boolean attr as 0/1, a
        ``None`` attr as ``None`` and a number attr as a Python int or float.
    """
    path = Path(path)
    if not path.exists():
        raise EvalDataError(f"no such file: {str(path)!r}")
    try:
        with xr.open_dataset(path, engine="netcdf4") as f:
            ds = f.load()
        groups = [] if ds.data_vars else _netcdf_groups(path)
    except _READ_ERRORS as exc:
        raise UnreadableFileError(
            f"{str(path)!r} cannot be read as a netCDF eval dataset ({type(exc).__name__}: {exc})"
        ) from exc
    if groups:
        raise UnreadableFileError(
            f"{str(path)!r} is a saved fit (groups {', '.join(groups)}), not an eval dataset: read "
            "it with hierbench.io.load_fit, or report it with `hierbench report FIT --data LOG`"
        )
    layout = json.loads(ds.attrs.pop(_LAYOUT_MARK, "{}"))
    return _restore_layout(_decode(ds), layout)


def _netcdf_groups(path: Path) -> list[str]:
    import netCDF4

    with netCDF4.Dataset(path) as f:
        return list(f.groups)


def save_fit(
    fit: xr.DataTree,
    path: str | os.PathLike,
    *,
    engine: Literal["netcdf", "zarr"] | None = None,
    groups: Literal["compact", "all"] | Sequence[str] = "compact",
    overwrite: bool = False,
) -> Path:
    """Write a fit (an ArviZ 1.x :class:`xarray.DataTree`) to netCDF or zarr.

    Parameters
    ----------
    fit : xarray.DataTree
        Groups such as ``posterior``, ``observed_data``; root attrs hold the
        model spec, data hash and version.
    path : str or path-like
        ``*.zarr`` (in any case) selects zarr, anything else netCDF (one
        group per node). A zarr store is written with every chunk, the empty
        ones too, so that :func:`load_fit` can refuse a store that lost one.
    engine : {"netcdf", "zarr"}, optional
        Override the choice made from the suffix.
    groups : {"compact", "all"} or sequence of str
        ``"compact"`` (default) leaves out :data:`COMPACT_DROP` (the
        per-observation ``log_likelihood`` and predictive groups, which LOO
        and predictive checks need: keep them with ``"all"``); ``"all"``
        keeps every group; a sequence keeps the compact groups plus those
        named. The groups left out are listed in the root attr
        ``hierbench_groups_dropped``; leaving out a ``log_likelihood`` group
        (which a fit has only when it was asked for) is warned.
    overwrite : bool
        Replace an existing file or zarr store (default: refuse with
        :class:`FileExistsError`). A folder that is not a zarr store is
        never replaced, nor a file by a zarr store (a ``.zarr`` path that is
        an existing file) or a zarr store by a netCDF file: refused before
        anything is written, naming ``engine=`` as the remedy.

    Returns
    -------
    pathlib.Path
        The netCDF file or zarr store written (``path``), for :func:`load_fit`.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> import numpy as np, xarray as xr
    >>> post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((2, 5)))})
    >>> fit = xr.DataTree.from_dict({"posterior": post})
    >>> p = save_fit(fit, pathlib.Path(tempfile.mkdtemp()) / "fit.nc")
    >>> load_fit(p)["posterior"]["mu"].shape
    (2, 5)
    """
    if not isinstance(fit, xr.DataTree):
        raise TypeError(f"`fit` must be an xarray.DataTree; got {type(fit).__name__}")
    path = Path(path)
    kind = _engine_for(path, engine)
    why = _format_reason(kind, engine)
    _check_target(path, overwrite, kind=kind, why=why, python=True)  # before the fit is encoded
    dropped = _groups_dropped(fit, groups)
    if "log_likelihood" in dropped:  # a fit has one only when it was asked for
        warn_user(
            f"the fit's log_likelihood group is not saved to {str(path)!r} (groups={groups!r} leaves out "
            f"{dropped}): LOO, hierbench.bayes.loo_compare and arviz_stats.loo on the saved fit need it. "
            "Keep it with groups='all' or groups=['log_likelihood'], or add it back after loading with "
            "hierbench.bayes.add_log_likelihood",
            HierbenchWarning,
        )
    tree = fit.copy()
    for g in dropped:
        del tree[g]
    tree = _encode_tree(tree)
    if dropped:
        tree.attrs["hierbench_groups_dropped"] = json.dumps(dropped)
    if kind == "zarr":
        if path.exists():
            import shutil

            shutil.rmtree(path)  # a zarr store (checked above), replaced as asked
        # every chunk written, the empty ones too, and marked so: load_fit then refuses a store
        # that lacks one (zarr would read a lost chunk as the fill value, NaN, without a word)
        tree.attrs[_CHUNKS_MARK] = "all"
        tree.to_zarr(path, mode="w-", consolidated=False, write_empty_chunks=True)
    else:
        tree.attrs.pop(_CHUNKS_MARK, None)
        encoding = {
            node.path if node.path != "/" else "/": _compression(node.to_dataset(inherit=False))
            for node in tree.subtree
        }
        _write_netcdf(tree, path, overwrite, why=why, encoding=encoding)
    return path


def _groups_dropped(fit: xr.DataTree, groups: object) -> list[str]:
    """The per-observation groups :func:`save_fit` leaves out under ``groups``."""
    if isinstance(groups, str):
        if groups not in ("compact", "all"):
            raise ValueError(
                f"`groups` must be 'compact', 'all' or a list of group names; got {groups!r}"
            )
        keep_extra: set[str] = set(COMPACT_DROP) if groups == "all" else set()
    else:
        keep_extra = {str(g) for g in groups}
        unknown = keep_extra - set(fit.children)
        if unknown:
            raise ValueError(
                f"`groups` names groups the fit does not have: {sorted(unknown)}; "
                f"it has {sorted(fit.children)}"
            )
    return [g for g in fit.children if g in COMPACT_DROP and g not in keep_extra]


def _encode_tree(tree: xr.DataTree) -> xr.DataTree:
    """Every node as plain netCDF/zarr content; ArviZ's list attrs stay lists.

    How each changed attr is restored is one JSON root attr (:data:`_ATTR_MARK`),
    so the groups ArviZ reads carry no hierbench key; the order of the groups and
    of their variables, and the dtype of each text variable, another
    (:data:`_LAYOUT_MARK`).
    """
    nodes, kinds, layout = {}, {}, {}
    for node in tree.subtree:
        ds = node.to_dataset(inherit=False)
        layout[node.path] = _layout_of(ds)
        ds = _encode_vars(ds)
        ds.attrs, k = _encode_attrs(dict(node.attrs), native_lists=True)
        nodes[node.path] = ds
        if k:
            kinds[node.path] = k
    out = xr.DataTree.from_dict(nodes)
    if kinds:
        out.attrs[_ATTR_MARK] = json.dumps(kinds)
    out.attrs[_LAYOUT_MARK] = json.dumps(layout)
    return out


def _decode_tree(tree: xr.DataTree) -> xr.DataTree:
    kinds = json.loads(tree.attrs.get(_ATTR_MARK, "{}"))
    layout = json.loads(tree.attrs.get(_LAYOUT_MARK, "{}"))
    nodes = {}
    for node in tree.subtree:
        ds = node.to_dataset(inherit=False)
        ds.attrs = {k: v for k, v in node.attrs.items() if k not in (_ATTR_MARK, _LAYOUT_MARK, _CHUNKS_MARK)}
        nodes[node.path] = _restore_layout(_decode(ds, kinds.get(node.path)), layout.get(node.path))
    # the groups in the order they were saved (zarr lists them in any order)
    order = [p for p in layout if p in nodes] + [p for p in nodes if p not in layout]
    return xr.DataTree.from_dict({p: nodes[p] for p in order})


def _restore_layout(ds: xr.Dataset, layout: dict | None) -> xr.Dataset:
    """``ds`` with its variables in the saved order, its text and index dtypes as they were.

    netCDF and zarr read text back as numpy text as wide as its longest label; a
    fit holds PyMC's coordinate labels as Python objects. Files written before
    the layout was recorded are returned as read (and files written before index
    dtypes were recorded keep xarray's ``object`` index).
    """
    if not layout:
        return ds
    text = layout.get("text", {})
    index = layout.get("index", {})
    saved = [v for v in layout.get("vars", ()) if v in ds.variables]
    order = saved + [v for v in ds.variables if v not in saved]
    variables = {}
    for name in order:
        var = ds.variables[name]
        if name in text and var.dtype.str != text[name] and var.dtype.kind in "OUT":
            # as held: Python objects (PyMC's labels) or numpy text of its width (a label
            # made with astype(str) from integers is <U21, and reads back as wide as its text)
            var = var.copy(data=var.values.astype(object).astype(np.dtype(text[name])))
        if name in index and var.dims == (name,) and var.dtype.kind == "O":
            # xarray indexes Python objects as an object index (numpy text it indexes as pandas'
            # str itself); an IndexVariable holding the pandas index keeps its dtype when the
            # Dataset is built, the variable still of Python objects
            var = xr.IndexVariable(
                var.dims, pd.Index(var.values, dtype=index[name]), attrs=var.attrs, encoding=var.encoding
            )
        variables[name] = var
    coords = [c for c in order if c in ds.coords]
    return xr.Dataset(variables, attrs=ds.attrs).set_coords(coords)


def load_fit(
    path: str | os.PathLike, *, engine: Literal["netcdf", "zarr"] | None = None
) -> xr.DataTree:
    """Read a fit written by :func:`save_fit` (fully loaded, file closed).

    Parameters
    ----------
    path : str or path-like
    engine : {"netcdf", "zarr"}, optional
        The format to read. By default it is taken from the content, not the
        suffix: a folder is read as a zarr store, a file as netCDF (so a
        netCDF file named ``fit.zarr`` or a zarr store named ``fit.nc`` is
        read). An ``engine`` the content contradicts is refused.

    Returns
    -------
    xarray.DataTree
        The fit as saved, less any groups :func:`save_fit` left out (named in
        the root attr ``hierbench_groups_dropped``); ArviZ's list attrs and
        hierbench's JSON attrs restored, the groups and their variables in
        the order they were saved, text in the dtype it had.

    Raises
    ------
    UnreadableFileError
        When the file cannot be read, or holds no ``posterior`` group (a
        saved eval dataset is named as one, with :func:`load_dataset` to read
        it), or is a zarr store written by :func:`save_fit` that lacks a chunk
        (the store is incomplete, e.g. an interrupted copy).

    Warns
    -----
    HierbenchWarning
        When a zarr store written before :func:`save_fit` wrote every chunk
        lacks chunks: they are read as the fill value (NaN), as zarr does,
        since a chunk left out because it was empty cannot be told from a lost
        one.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such file or folder: {str(path)!r}")
    kind = _format_of(path, engine)
    try:
        tree = _read_zarr(path) if kind == "zarr" else _loaded(path, engine="netcdf4")
    except UnreadableFileError:
        raise
    except _READ_ERRORS as exc:
        if isinstance(exc, FileNotFoundError) and not path.exists():
            raise
        what = "zarr store" if kind == "zarr" else "netCDF file"
        raise UnreadableFileError(
            f"{str(path)!r} cannot be read as a {what} holding a fit ({type(exc).__name__}: {exc})"
        ) from exc
    if "posterior" not in tree.children:
        raise UnreadableFileError(_not_a_fit(path, tree))
    return _decode_tree(tree)


def _format_of(path: Path, engine: str | None) -> str:
    """The format of an existing fit: a folder is a zarr store, a file netCDF; ``engine`` must agree."""
    kind = "zarr" if path.is_dir() else "netcdf"
    if engine is None:
        return kind
    _engine_for(path, engine)  # the names it accepts
    if engine != kind:
        held = "a folder (a zarr store is one)" if kind == "zarr" else "a file (a zarr store is a folder)"
        raise UnreadableFileError(
            f"{str(path)!r} cannot be read with engine={engine!r}: it is {held}; leave `engine` out "
            f"to read it by its content, or pass engine={kind!r}"
        )
    return kind


def _read_zarr(path: Path) -> xr.DataTree:
    """A zarr store, loaded and closed; a missing chunk raises.

    In a store from before every chunk was written (no :data:`_CHUNKS_MARK`) a missing chunk is
    read as the fill value, with a warning naming the variables that lack chunks.
    """
    import zarr
    from zarr.errors import ChunkNotFoundError

    try:
        with zarr.config.set({"array.read_missing_chunks": False}):
            return _loaded(path, engine="zarr", consolidated=False)
    except ChunkNotFoundError:
        pass
    missing = _missing_chunks(path)
    where = "; ".join(f"{name} ({n} of {total} chunk{'s' * (total != 1)})" for name, n, total in missing)
    where = where or "a variable"
    if zarr.open_group(path, mode="r").attrs.get(_CHUNKS_MARK) == "all":
        raise UnreadableFileError(
            f"{str(path)!r} is an incomplete zarr store: chunks are missing from {where}. save_fit "
            f"wrote every chunk (root attr {_CHUNKS_MARK!r}), so a chunk file that is not there "
            "was lost (an interrupted copy or sync, a deleted file), and zarr would read it as the "
            "fill value (NaN) without a word. Copy the store again from where it was saved, or fit again"
        )
    warn_user(
        f"{str(path)!r} was written before save_fit wrote every zarr chunk, and it lacks chunks of "
        f"{where}: they are read as the fill value (NaN for numbers, False, empty text), as zarr "
        "does. A chunk left out because it was empty cannot be told from one lost since (an "
        "interrupted copy): check those variables. Saving the fit again with save_fit writes "
        "every chunk, and a later load then refuses a store that lacks one",
        HierbenchWarning,
    )
    return _loaded(path, engine="zarr", consolidated=False)


def _loaded(path: Path, **kw) -> xr.DataTree:
    """The tree at ``path`` read into memory, the file closed (``kw``: ``xarray.open_datatree``'s)."""
    tree = xr.open_datatree(path, **kw)
    try:
        return tree.load()
    finally:
        tree.close()


def _missing_chunks(path: Path) -> list[tuple[str, int, int]]:
    """(group/variable, chunks missing, chunks in all) of each array of a zarr store lacking chunks."""
    import zarr

    out = []
    for name, obj in zarr.open_group(path, mode="r").members(max_depth=None):
        if isinstance(obj, zarr.Array) and obj.nchunks_initialized < obj.nchunks:
            out.append((name, obj.nchunks - obj.nchunks_initialized, obj.nchunks))
    return sorted(out)


def _not_a_fit(path: Path, tree: xr.DataTree) -> str:
    """Why a file with no ``posterior`` group is not a fit: a saved eval dataset, or something else."""
    root = tree.to_dataset(inherit=False)
    looks_like_data = bool(root.data_vars) and (
        "hierbench_schema" in root.attrs or {"score"} <= set(root.data_vars)
        or {"n_runs", "n_success"} <= set(root.data_vars)
    )
    if looks_like_data:
        held = ", ".join(f"{v}{tuple(root[v].dims)}" for v in list(root.data_vars)[:4])
        source = ""
        if "source" in root.attrs and "reader" in root.attrs:
            source = f", read by {root.attrs['reader']} from {root.attrs['source']!r}"
        return (
            f"{str(path)!r} looks like a saved eval dataset ({held}{source}), not a fit: it has no "
            "`posterior` group. Read it with hierbench.io.load_dataset; to report it beside a fit, "
            f"give it as the data (`hierbench report FIT --data {path}`)"
        )
    groups = sorted(tree.children)
    return (
        f"{str(path)!r} holds no `posterior` group (groups {groups}), so it is not a fit; a fit is what "
        "hierbench.bayes.fit returns and hierbench.io.save_fit writes"
    )
