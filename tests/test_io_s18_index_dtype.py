"""A reloaded fit's label coords have the pandas index dtype of the fit in memory (audit S18,
finding 6): ``to_frame()`` of a metric on a reloaded beta-binomial fit had an ``object`` index
where the fresh fit's was pandas' ``str``.

Expected values: the indexes pandas builds from the same labels (``pd.Index(labels, dtype=...)``).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.io import load_dataset
from hierbench.io import load_fit
from hierbench.io import save_dataset
from hierbench.io import save_fit

AGENTS = ["gpt-4o/mini", "007", "Ωmega"]
TASKS = ["t1", "t2"]
JUDGES = np.array(["j1", "j22"])  # numpy text: xarray itself indexes it as pandas' str


def _posterior() -> xr.Dataset:
    return xr.Dataset(
        {"ability": (("chain", "draw", "agent", "task", "judge"), np.zeros((2, 3, 3, 2, 2)))},
        coords={
            "agent": pd.Index(AGENTS, dtype="str"),  # pandas' str, as a builder's labels may be
            "task": np.array(TASKS, dtype=object),  # xarray's object index
            "judge": JUDGES,
        },
    )


@pytest.mark.parametrize("ext", ["nc", "zarr"])
def test_label_indexes_come_back_in_their_pandas_dtype(tmp_path, ext):
    back = load_fit(save_fit(xr.DataTree.from_dict({"posterior": _posterior()}), tmp_path / f"fit.{ext}"))
    post = back["posterior"].to_dataset()
    pd.testing.assert_index_equal(post.indexes["agent"], pd.Index(AGENTS, dtype="str", name="agent"))
    pd.testing.assert_index_equal(post.indexes["task"], pd.Index(TASKS, dtype=object, name="task"))
    pd.testing.assert_index_equal(post.indexes["judge"], pd.Index(JUDGES, dtype="str", name="judge"))
    assert post["judge"].dtype == JUDGES.dtype  # numpy text stays numpy text of its width
    frame = back["posterior"]["ability"].mean(("chain", "draw", "judge")).to_pandas()
    assert frame.index.dtype == pd.Index(AGENTS, dtype="str").dtype
    assert post["agent"].dtype == object  # the variable is held as before: Python objects


def test_a_dataset_keeps_its_str_index_and_a_file_without_the_record_reads_as_before(tmp_path):
    ds = _posterior().isel(chain=0, draw=0)
    back = load_dataset(save_dataset(ds, tmp_path / "d.nc"))
    pd.testing.assert_index_equal(back.indexes["agent"], pd.Index(AGENTS, dtype="str", name="agent"))
    # the same file as written before index dtypes were recorded: xarray's object index
    plain = xr.load_dataset(tmp_path / "d.nc")
    layout = json.loads(plain.attrs["hierbench_layout"])
    del layout["index"]
    plain.attrs["hierbench_layout"] = json.dumps(layout)
    plain.to_netcdf(tmp_path / "old.nc")
    old = load_dataset(tmp_path / "old.nc")
    pd.testing.assert_index_equal(old.indexes["agent"], pd.Index(AGENTS, dtype=object, name="agent"))
