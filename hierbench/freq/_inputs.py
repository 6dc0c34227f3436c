"""Input forms shared by the frequentist estimators."""

from __future__ import annotations

import xarray as xr

from .._base import HierbenchError

__all__ = ["score_array"]


def score_array(data: xr.Dataset | xr.DataArray) -> xr.DataArray:
    """The ``score`` of an eval dataset, or a score DataArray as given.

    Counts datasets (``n_runs``, ``n_success``) are the callers' own branch;
    anything else is refused with the forms that are accepted.
    """
    if isinstance(data, xr.Dataset):
        if "score" not in data:
            raise HierbenchError(
                "`data` must be an eval dataset (with `score`), a counts dataset (with `n_runs` "
                f"and `n_success`) or a score DataArray; got variables {list(data.data_vars)}"
            )
        return data["score"]
    if isinstance(data, xr.DataArray):
        return data
    raise TypeError(f"`data` must be an xarray Dataset or DataArray; got {type(data).__name__}")
