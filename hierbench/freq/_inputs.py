"""Input forms shared by the frequentist estimators."""

from __future__ import annotations

import xarray as xr

from .._base import HierbenchError

__all__ = ["data_variable", "score_array"]


def data_variable(
    data: xr.Dataset | xr.DataArray, var: str | None, *, name: str = "data"
) -> xr.DataArray:
    """The variable ``var`` of an eval dataset, or a DataArray as given (``var`` then unused).

    The one reader of "a Dataset and the name of one of its variables, or the
    variable itself" (scores, rubric scores, cost, latency, tokens).

    Examples
    --------
    >>> import numpy as np
    >>> ds = xr.Dataset({"cost": ("task", np.array([1.0, 2.0]))})
    >>> data_variable(ds, "cost").values.tolist()
    [1.0, 2.0]
    >>> data_variable(ds, "latency")
    Traceback (most recent call last):
    ...
    hierbench._base.HierbenchError: `var` must name a variable of `data` ['cost']; got 'latency'
    """
    if isinstance(data, xr.Dataset):
        if var is None or var not in data:
            raise HierbenchError(
                f"`var` must name a variable of `{name}` {sorted(data.data_vars)}; got {var!r}"
            )
        return data[var]
    if isinstance(data, xr.DataArray):
        return data
    raise TypeError(f"`{name}` must be an xarray Dataset or DataArray; got {type(data).__name__}")


def score_array(data: xr.Dataset | xr.DataArray) -> xr.DataArray:
    """The ``score`` of an eval dataset, or a score DataArray as given.

    Counts datasets (``n_runs``, ``n_success``) are the callers' own branch;
    anything else is refused with the forms that are accepted.
    """
    if isinstance(data, xr.Dataset) and "score" not in data:
        raise HierbenchError(
            "`data` must be an eval dataset (with `score`), a counts dataset (with `n_runs` "
            f"and `n_success`) or a score DataArray; got variables {list(data.data_vars)}"
        )
    return data_variable(data, "score")
