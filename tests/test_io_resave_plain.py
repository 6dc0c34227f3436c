"""A hierbench file opened with plain xarray, given a new dict attr and saved again, keeps every dict.

Before, the second save's marker named the new attr alone, so the attrs the first save had
written as JSON text came back from ``load_dataset`` as text.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from hierbench.io import load_dataset
from hierbench.io import save_dataset


def test_resaving_a_plainly_opened_file_keeps_the_earlier_json_attrs(tmp_path):
    ds = xr.Dataset({"x": ("i", np.arange(3.0))}, attrs={"options": {"n": 5, "kind": "bca"}, "label": "a"})
    first = save_dataset(ds, tmp_path / "first.nc")
    with xr.open_dataset(first) as plain:
        opened = plain.load()
    assert isinstance(opened.attrs["options"], str)  # plain xarray reads the JSON text as text
    opened.attrs["notes"] = {"by": "user"}
    back = load_dataset(save_dataset(opened, tmp_path / "second.nc"))
    assert back.attrs["options"] == {"n": 5, "kind": "bca"}
    assert back.attrs["notes"] == {"by": "user"}
    assert back.attrs["label"] == "a"
    np.testing.assert_array_equal(back["x"].values, ds["x"].values)


def test_a_plainly_opened_file_saved_again_without_new_dicts_is_unchanged(tmp_path):
    ds = xr.Dataset({"x": ("i", np.arange(2.0))}, attrs={"options": {"n": 1}})
    with xr.open_dataset(save_dataset(ds, tmp_path / "a.nc")) as plain:
        opened = plain.load()
    assert load_dataset(save_dataset(opened, tmp_path / "b.nc")).attrs["options"] == {"n": 1}
