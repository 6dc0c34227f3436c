"""Saving and loading eval datasets and fits: netCDF or zarr, never pickle.

An eval dataset holds string coords (agent and task names, tags, clusters)
and JSON attrs (``not_kept``, ``annotations``, ...). netCDF stores strings as
variable-length text and attrs as text, so both survive as they are. Boolean
variables (``error`` and the per-run annotations) are stored as int8 with a
marker attr and restored to bool on load.

A fit is an :class:`xarray.DataTree` (the ArviZ 1.x groups); it is written
with ``DataTree.to_netcdf`` (one netCDF group per node) or ``to_zarr`` (needs
the ``zarr`` package).

What changes on the way: attrs holding a dict or list are stored as JSON text
(hierbench's own such attrs already are text), boolean attrs as 0/1, and a
``None`` inside a text variable becomes ``""``. Numbers, text, bools, NaN and
every coordinate come back as they were.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

import numpy as np
import xarray as xr

from .data._schema import EvalDataError

__all__ = ["load_dataset", "load_fit", "save_dataset", "save_fit"]

_BOOL_MARK = "hierbench_dtype"


def _encode(ds: xr.Dataset) -> xr.Dataset:
    ds = ds.copy()
    for name in list(ds.variables):
        var = ds[name]
        if var.dtype == bool:
            new = var.astype(np.int8)
            new.attrs = {**var.attrs, _BOOL_MARK: "bool"}
            ds[name] = new
        elif var.dtype.kind in "OUT":
            # variable-length text; object arrays may hold None -> ""
            vals = np.array(["" if v is None else str(v) for v in var.values.ravel()], dtype=object)
            ds[name] = var.copy(data=vals.reshape(var.shape))
    for k, v in list(ds.attrs.items()):
        if isinstance(v, (dict, list, tuple)):
            ds.attrs[k] = json.dumps(v)
        elif isinstance(v, bool):
            ds.attrs[k] = int(v)
        elif v is None:
            ds.attrs[k] = ""
    return ds


def _decode(ds: xr.Dataset) -> xr.Dataset:
    ds = ds.copy()
    for name in list(ds.variables):
        var = ds[name]
        if var.attrs.get(_BOOL_MARK) == "bool":
            attrs = {k: v for k, v in var.attrs.items() if k != _BOOL_MARK}
            new = var.astype(bool)
            new.attrs = attrs
            if name in ds.coords:
                ds = ds.assign_coords({name: new})
            else:
                ds[name] = new
    return ds


def _engine_for(path: Path, engine: str | None) -> str:
    if engine is not None:
        if engine not in ("netcdf", "zarr"):
            raise ValueError(f"`engine` must be 'netcdf' or 'zarr'; got {engine!r}")
        return engine
    return "zarr" if path.suffix == ".zarr" else "netcdf"


def save_dataset(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write an eval dataset (or its counts) to a netCDF file.

    Parameters
    ----------
    ds : xarray.Dataset
        Any dataset of plain numbers, bools and strings (an eval dataset, its
        :func:`~hierbench.data.to_counts`, a summary).
    path : str or path-like
        Target file, conventionally ``*.nc``.

    Returns
    -------
    pathlib.Path

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
    _encode(ds).to_netcdf(path, engine="netcdf4")
    return path


def load_dataset(path: str | os.PathLike) -> xr.Dataset:
    """Read a dataset written by :func:`save_dataset` (fully loaded, file closed).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    xarray.Dataset
    """
    path = Path(path)
    if not path.exists():
        raise EvalDataError(f"`path`: no such file {str(path)!r}")
    with xr.open_dataset(path, engine="netcdf4") as f:
        ds = f.load()
    return _decode(ds)


def save_fit(
    fit: xr.DataTree, path: str | os.PathLike, *, engine: Literal["netcdf", "zarr"] | None = None
) -> Path:
    """Write a fit (an ArviZ 1.x :class:`xarray.DataTree`) to netCDF or zarr.

    Parameters
    ----------
    fit : xarray.DataTree
        Groups such as ``posterior``, ``observed_data``; root attrs hold the
        model spec, data hash and version.
    path : str or path-like
        ``*.zarr`` selects zarr, anything else netCDF (one group per node).
    engine : {"netcdf", "zarr"}, optional
        Override the choice made from the suffix.

    Returns
    -------
    pathlib.Path

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
    tree = fit.map_over_datasets(_encode)
    for node in tree.subtree:
        node.attrs = dict(_encode(xr.Dataset(attrs=dict(node.attrs))).attrs)
    if kind == "zarr":
        tree.to_zarr(path, mode="w", consolidated=False)
    else:
        tree.to_netcdf(path, engine="netcdf4")
    return path


def load_fit(
    path: str | os.PathLike, *, engine: Literal["netcdf", "zarr"] | None = None
) -> xr.DataTree:
    """Read a fit written by :func:`save_fit` (fully loaded, file closed).

    Parameters
    ----------
    path : str or path-like
    engine : {"netcdf", "zarr"}, optional

    Returns
    -------
    xarray.DataTree
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"`path`: no such file or folder {str(path)!r}")
    kind = _engine_for(path, engine)
    if kind == "zarr":
        tree = xr.open_datatree(path, engine="zarr", consolidated=False)
    else:
        tree = xr.open_datatree(path, engine="netcdf4")
    tree = tree.load()
    tree.close()
    return tree.map_over_datasets(_decode)
