"""The format of a saved fit: by suffix in any case when writing, by content when reading, and a
file never replaced by a zarr store (a folder) nor a folder by a file (audit S18, finding 5).

Expected values: what is on disk (a folder with ``zarr.json``, a file starting with the HDF5
signature) and the hand-built tree's arrays.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hierbench.cli import main
from hierbench.io import UnreadableFileError
from hierbench.io import load_fit
from hierbench.io import save_fit

HDF5 = b"\x89HDF\r\n\x1a\n"


def _tree() -> xr.DataTree:
    post = xr.Dataset(
        {"mu": (("chain", "draw"), np.arange(10.0).reshape(2, 5))},
        coords={"chain": [0, 1], "draw": np.arange(5)},
    )
    return xr.DataTree.from_dict({"posterior": post})


def test_an_upper_case_zarr_suffix_is_written_as_zarr(tmp_path):
    path = save_fit(_tree(), tmp_path / "fit.ZARR")
    assert path.is_dir() and (path / "zarr.json").is_file()
    np.testing.assert_array_equal(load_fit(path)["posterior"]["mu"].values, np.arange(10.0).reshape(2, 5))


def test_a_zarr_path_that_is_a_file_is_refused_and_left_as_it_was(tmp_path):
    path = save_fit(_tree(), tmp_path / "fit.zarr", engine="netcdf")
    before = path.read_bytes()
    assert before[:8] == HDF5
    with pytest.raises(FileExistsError) as info:
        save_fit(_tree(), path, overwrite=True)
    msg = str(info.value)
    assert "fit.zarr' is an existing netCDF file" in msg and "engine='netcdf'" in msg
    assert path.read_bytes() == before


def test_a_zarr_store_at_nc_is_named_as_one_when_netcdf_would_replace_it(tmp_path):
    store = save_fit(_tree(), tmp_path / "fit.nc", engine="zarr")
    with pytest.raises(FileExistsError) as info:
        save_fit(_tree(), store, overwrite=True)
    msg = str(info.value)
    assert "fit.nc' is an existing zarr store" in msg and "engine='zarr'" in msg
    assert (store / "zarr.json").is_file()


def test_a_fit_whose_suffix_disagrees_with_its_content_is_read_by_its_content(tmp_path):
    want = np.arange(10.0).reshape(2, 5)
    nc_at_zarr = save_fit(_tree(), tmp_path / "a.zarr", engine="netcdf")
    zarr_at_nc = save_fit(_tree(), tmp_path / "b.nc", engine="zarr")
    np.testing.assert_array_equal(load_fit(nc_at_zarr)["posterior"]["mu"].values, want)
    np.testing.assert_array_equal(load_fit(zarr_at_nc)["posterior"]["mu"].values, want)
    with pytest.raises(UnreadableFileError, match=r"engine='netcdf': it is a folder .* pass engine='zarr'"):
        load_fit(zarr_at_nc, engine="netcdf")


def test_cli_refuses_a_zarr_output_that_is_a_file_before_reading_the_log(tmp_path, capsys):
    out = tmp_path / "f2.zarr"
    out.write_bytes(HDF5 + b"rest of a netCDF file")
    # the log does not exist: the output is checked first, so its error is the one given
    code = main(["fit", str(tmp_path / "no_log.csv"), "-o", str(out), "--overwrite"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "-o" in err and "f2.zarr' is an existing netCDF file" in err and "no_log" not in err
    assert out.read_bytes() == HDF5 + b"rest of a netCDF file"
