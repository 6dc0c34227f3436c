"""A zarr fit store that lost a chunk file is refused, not read as NaN (audit S18, finding 1).

zarr reads a missing chunk as the fill value without a word, and by default does not write a
chunk holding only the fill value. save_fit writes every chunk and marks the store; load_fit
then refuses a marked store that lacks one. A store from before (no marker) reads as before,
with a warning. The damaged stores here are made by deleting a chunk file, as an interrupted
copy leaves them; expected values are the arrays the hand-built tree was made of.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench import HierbenchWarning
from hierbench.io import UnreadableFileError
from hierbench.io import load_fit
from hierbench.io import save_fit


def _tree() -> xr.DataTree:
    rng = np.random.default_rng(3)
    post = xr.Dataset(
        {"ability": (("chain", "draw", "agent"), rng.normal(size=(2, 6, 3)))},
        coords={"chain": [0, 1], "draw": np.arange(6), "agent": ["a", "b", "c"]},
    )
    # all False and all NaN: chunks holding only the fill value, which zarr leaves out by default
    stats = xr.Dataset(
        {
            "tuning": (("chain", "draw"), np.zeros((2, 6), dtype=bool)),
            "energy_gap": (("chain", "draw"), np.full((2, 6), np.nan)),
        }
    )
    return xr.DataTree.from_dict({"posterior": post, "sample_stats": stats})


def test_every_chunk_is_written_and_an_intact_store_reads_exactly(tmp_path):
    tree = _tree()
    store = save_fit(tree, tmp_path / "fit.zarr")
    # one chunk per variable here (small arrays): its file is named by its grid position
    assert (store / "sample_stats" / "tuning" / "c" / "0" / "0").is_file()
    assert (store / "sample_stats" / "energy_gap" / "c" / "0" / "0").is_file()
    with warnings.catch_warnings():
        warnings.simplefilter("error", HierbenchWarning)
        back = load_fit(store)
    np.testing.assert_array_equal(back["posterior"]["ability"].values, tree["posterior"]["ability"].values)
    assert not back["sample_stats"]["tuning"].values.any()
    assert np.isnan(back["sample_stats"]["energy_gap"].values).all()
    assert "hierbench_zarr_chunks" not in back.attrs


def test_a_store_that_lost_a_chunk_is_refused_naming_the_variable(tmp_path):
    store = save_fit(_tree(), tmp_path / "fit.zarr")
    (store / "posterior" / "ability" / "c" / "0" / "0" / "0").unlink()  # the variable's one chunk
    with pytest.raises(UnreadableFileError) as info:
        load_fit(store)
    msg = str(info.value)
    assert "fit.zarr' is an incomplete zarr store" in msg
    assert "posterior/ability (1 of 1 chunk)" in msg
    assert "sample_stats" not in msg  # the empty chunks were written: only the lost one is named
    assert "interrupted copy" in msg


def test_a_store_written_before_reads_as_before_with_a_warning(tmp_path):
    tree = _tree()
    store = save_fit(tree, tmp_path / "old.zarr")
    # as written before: no marker, and the chunk that held only the fill value left out
    meta = json.loads((store / "zarr.json").read_text())
    meta["attributes"].pop("hierbench_zarr_chunks", None)
    (store / "zarr.json").write_text(json.dumps(meta))
    (store / "sample_stats" / "tuning" / "c" / "0" / "0").unlink(missing_ok=True)
    with pytest.warns(HierbenchWarning, match=r"written before .* lacks chunks of sample_stats/tuning \(1 of 1 chunk\)"):
        back = load_fit(store)
    assert back["sample_stats"]["tuning"].dtype == bool
    assert not back["sample_stats"]["tuning"].values.any()  # the fill value, False, as before
    np.testing.assert_array_equal(back["posterior"]["ability"].values, tree["posterior"]["ability"].values)
