"""A result's Dataset and plain xarray: what ``to_dataset``'s docstring says, and its one build per field.

``Result.to_dataset`` keeps its attrs as Python values (a settings dict stays a dict), which
netCDF cannot hold: a plain ``to_netcdf`` fails with xarray's error, and the docstring sends
users to ``hierbench.io.save_dataset``. Its file is still plain netCDF: ``xr.open_dataset``
reads it, and ``json.loads`` of the attrs it lists in ``hierbench_json_attrs`` gives the
dicts back. The expected values are the ones set here.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import xarray as xr

from hierbench._base import Result
from hierbench.io import load_dataset
from hierbench.io import save_dataset

SETTINGS = {"k": 4, "bins": [0.0, 0.5], "method": "bca"}


class _Bank:
    """An object with its own ``to_dataset``, counting its calls."""

    calls = 0

    def to_dataset(self) -> xr.Dataset:
        type(self).calls += 1
        return xr.Dataset({"x": ("item", [1.0, 2.0])}, attrs={"model": "2pl"})


@dataclasses.dataclass(frozen=True, repr=False)
class _Made(Result):
    estimate: xr.DataArray
    ci: xr.DataArray
    settings: dict
    bank: object = None
    stop: str = "budget"


def _made(bank=None) -> _Made:
    est = xr.DataArray([0.5, 0.7], dims="agent", coords={"agent": ["a", "b"]})
    ci = xr.DataArray([[0.4, 0.6], [0.6, 0.8]], dims=("agent", "ci_bound"),
                      coords={"agent": ["a", "b"], "ci_bound": ["lower", "upper"]},
                      attrs={"ci_prob": 0.95, "ci_kind": "t"})  # fmt: skip
    return _Made(est, ci, SETTINGS, bank)


def test_a_plain_to_netcdf_meets_xarrays_error_and_save_dataset_writes_plain_netcdf(tmp_path):
    ds = _made().to_dataset()
    assert ds.attrs["settings"] == SETTINGS  # in memory, a dict (the docstring's first claim)
    with pytest.raises(TypeError, match="Invalid value for attr 'settings'"):
        ds.to_netcdf(tmp_path / "plain.nc")
    path = save_dataset(ds, tmp_path / "r.nc")
    with xr.open_dataset(path) as f:  # plain xarray reads hierbench's file
        plain = f.load()
    assert json.loads(plain.attrs["hierbench_json_attrs"]) == ["settings"]
    assert json.loads(plain.attrs["settings"]) == SETTINGS and plain.attrs["stop"] == "budget"
    assert plain["estimate"].values.tolist() == [0.5, 0.7]
    assert load_dataset(path).attrs["settings"] == SETTINGS


def test_to_dataset_builds_an_object_fields_dataset_once():
    _Bank.calls = 0
    ds = _made(_Bank()).to_dataset()
    assert _Bank.calls == 1  # it was built twice: once to check it can be stored, once to merge it
    assert ds["bank_x"].values.tolist() == [1.0, 2.0] and ds.attrs["bank_model"] == "2pl"
