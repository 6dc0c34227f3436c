"""Audit S finding 19: ``save_dataset`` / ``load_dataset`` keep each text variable's dtype, as ``save_fit`` does.

Text held as Python objects (an eval dataset's ``cluster``, a result's ``ci_flag``) came back
as numpy text as wide as its longest label (``<U1`` where every flag is empty), so a longer
label written into the loaded variable was cut without a word: ``"exact bound"`` became
``"e"``. Expected values: the dtypes and labels written (by construction).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from hierbench.freq import pass_hat_k
from hierbench.io import load_dataset
from hierbench.io import save_dataset


def _text_dataset() -> xr.Dataset:
    return xr.Dataset(
        {
            "flag": ("agent", np.array(["", ""], dtype=object)),
            "note": ("agent", np.array(["a", None], dtype=object)),
            "wide": ("agent", np.array(["7", "12"], dtype="<U21")),
            "x": ("agent", [0.5, 1.0]),
        },
        coords={"agent": np.array(["alpha", "b"], dtype=object), "cluster": ("agent", np.array(["r1", "r2"], dtype=object))},
        attrs={"source": "test"},
    )


def test_text_dtypes_come_back_as_saved(tmp_path):
    ds = _text_dataset()
    back = load_dataset(save_dataset(ds, tmp_path / "t.nc"))
    assert back.identical(ds)
    assert {v: back[v].dtype.str for v in ds.variables} == {v: ds[v].dtype.str for v in ds.variables}
    assert back["note"].values[0] == "a" and back["note"].isnull().values.tolist() == [False, True]
    assert back.attrs == {"source": "test"}


def test_a_longer_label_written_into_loaded_text_is_kept_whole(tmp_path):
    ds = _text_dataset()
    back = load_dataset(save_dataset(ds, tmp_path / "t.nc"))
    flag = back["flag"].copy()
    flag[0] = "exact bound"
    assert flag.values[0] == "exact bound"


def test_a_saved_result_keeps_its_object_flags(tmp_path):
    score = np.zeros((2, 6, 2))
    score[1, :3] = 1.0
    res = pass_hat_k(xr.Dataset({"score": (("agent", "task", "run"), score)}, coords={"agent": ["a", "b"]}), 1)
    ds = res.to_dataset()
    back = load_dataset(save_dataset(ds, tmp_path / "r.nc"))
    for name in ("ci_flag", "ci_kind"):
        assert back[name].dtype == ds[name].dtype == object
        assert back[name].values.tolist() == ds[name].values.tolist()


def test_a_file_without_the_layout_reads_as_before(tmp_path):
    ds = _text_dataset().drop_vars("note")
    ds.to_netcdf(tmp_path / "plain.nc", engine="netcdf4")
    back = load_dataset(tmp_path / "plain.nc")
    assert back["flag"].values.tolist() == ["", ""] and back["x"].values.tolist() == [0.5, 1.0]
