"""load_fit and ``hierbench report`` refuse a saved eval dataset given as a fit (audit I, 11).

Before, ``load_fit("data.nc")`` returned a DataTree with no groups and ``hierbench report
data.nc`` exited 0 with a report of "a custom model" whose every section failed. The
files here are written by ``save_dataset`` and ``save_fit``, so what each one is is
known by construction.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hierbench.cli import main
from hierbench.io import UnreadableFileError
from hierbench.io import load_dataset
from hierbench.io import load_fit
from hierbench.io import save_dataset
from hierbench.io import save_fit
from hierbench.testing import simulate_eval


@pytest.fixture
def saved_data(tmp_path):
    ds, _ = simulate_eval(n_agents=2, n_tasks=6, n_runs=2, rng=0)
    return save_dataset(ds, tmp_path / "data.nc"), ds


def test_load_fit_names_a_saved_dataset_and_the_reader_that_opens_it(saved_data):
    path, ds = saved_data
    xr.testing.assert_equal(load_dataset(path)["score"], ds["score"])  # it is a dataset
    with pytest.raises(UnreadableFileError) as err:
        load_fit(path)
    msg = str(err.value)
    assert str(path) in msg and "looks like a saved eval dataset" in msg
    assert "hierbench.io.load_dataset" in msg and "--data" in msg


def test_load_fit_refuses_a_tree_without_a_posterior(tmp_path):
    tree = xr.DataTree.from_dict({"constant_data": xr.Dataset({"n_runs": ("agent", np.array([2, 3]))})})
    path = save_fit(tree, tmp_path / "nopost.nc")
    with pytest.raises(UnreadableFileError, match=r"holds no `posterior` group \(groups \['constant_data'\]\)"):
        load_fit(path)


def test_load_fit_still_reads_a_fit(tmp_path):
    post = xr.Dataset({"mu": (("chain", "draw"), np.arange(6.0).reshape(2, 3))})
    path = save_fit(xr.DataTree.from_dict({"posterior": post}), tmp_path / "fit.nc")
    np.testing.assert_array_equal(load_fit(path)["posterior"]["mu"].values, np.arange(6.0).reshape(2, 3))


def test_hierbench_report_refuses_a_dataset_given_as_fit(saved_data, tmp_path, capsys):
    path, _ = saved_data
    out = tmp_path / "r.md"
    assert main(["report", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"FIT {str(path)!r} looks like a saved eval dataset" in err and f"--data {path}" in err
    assert not out.exists()


@pytest.mark.parametrize("cmd", [["report", "--data"], ["compare"], ["fit"], ["validate"]])
def test_another_programs_netcdf_file_is_neither_called_a_log_nor_read_as_one(cmd, tmp_path, capsys):
    # audit S 4: a plain xarray file was called "a saved eval dataset" (report FIT) and, given as
    # --data, made a report of 8 "not computed" notes with exit 0; compare failed on a bare 'agent'
    path = tmp_path / "weather.nc"
    xr.Dataset({"temperature": (("lat", "lon"), np.zeros((3, 4)))}).to_netcdf(path)
    out = tmp_path / ("f.nc" if cmd == ["fit"] else "r.md")
    extra = ["-o", str(out)] if cmd[0] in ("report", "fit") else []
    assert main([*cmd, str(path), *extra]) == 2
    err = capsys.readouterr().err
    assert f"LOG {str(path)!r} is a netCDF file but not a saved log: it holds temperature('lat', 'lon')" in err
    assert not out.exists()


def test_another_programs_netcdf_file_given_as_fit_keeps_load_fits_words(tmp_path, capsys):
    path = tmp_path / "weather.nc"
    xr.Dataset({"temperature": (("lat", "lon"), np.zeros((3, 4)))}).to_netcdf(path)
    assert main(["report", str(path), "-o", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert "holds no `posterior` group" in err and "looks like a saved eval dataset" not in err
