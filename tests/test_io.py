"""save/load of eval datasets (netCDF) and fits (DataTree; netCDF or zarr): lossless, no pickle."""

import json
import pickle
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from test_data_records import run_frames

from hierbench.data import EvalDataError
from hierbench.data import from_records
from hierbench.data import to_counts
from hierbench.io import load_dataset
from hierbench.io import load_fit
from hierbench.io import save_dataset
from hierbench.io import save_fit
from hierbench.testing import simulate_eval


@pytest.fixture
def eval_ds():
    df = pd.DataFrame(
        {
            "agent": ["gpt-4o", "gpt-4o", "claude ü", "claude ü"],
            "task": ["django__django-1", "astropy__a-2", "django__django-1", "django__django-1"],
            "rid": ["r-1", "r-2", "r-3", "r-4"],
            "score": [1.0, 0.25, np.nan, 1.0],
            "err": [False, False, True, False],
            "tag": ["web", "astro", "web", "web"],
            "hit": [True, False, False, True],
            "cost": [0.5, np.nan, 1.5, 2.0],
        }
    )
    return from_records(
        df, run="rid", error="err", errors="exclude", tag="tag", annotations=["hit"], extra=["cost"]
    )


def _assert_same(a: xr.Dataset, b: xr.Dataset):
    assert a.identical(b)
    for v in a.variables:
        assert a[v].dtype.kind == b[v].dtype.kind or {a[v].dtype.kind, b[v].dtype.kind} <= set(
            "OUT"
        ), v


def test_eval_dataset_round_trip(eval_ds, tmp_path):
    path = save_dataset(eval_ds, tmp_path / "eval.nc")
    back = load_dataset(path)
    _assert_same(back, eval_ds)
    assert back.error.dtype == bool and back.hit.dtype == bool
    assert list(back.agent.values) == ["gpt-4o", "claude ü"]
    assert list(back.tag.values) == ["web", "astro"]
    assert back.run_id.sel(agent="claude ü", task="django__django-1").values.tolist() == [
        "r-3",
        "r-4",
    ]
    assert json.loads(back.attrs["not_kept"]) == {
        "infrastructure error, excluded (errors='exclude')": 1
    }
    assert json.loads(back.attrs["annotations"]) == ["hit"]
    # netCDF, not a pickle
    assert path.read_bytes()[:4] == b"\x89HDF"
    with pytest.raises(pickle.UnpicklingError):
        pickle.loads(path.read_bytes())


def test_simulated_and_counts_round_trip(tmp_path):
    ds, _ = simulate_eval(
        n_agents=3, n_tasks=7, n_runs=4, n_clusters=2, p_missing_run=0.3, p_error=0.1, rng=3
    )
    _assert_same(load_dataset(save_dataset(ds, tmp_path / "sim.nc")), ds)
    c = to_counts(ds)
    _assert_same(load_dataset(save_dataset(c, tmp_path / "counts.nc")), c)


def test_bad_arguments(tmp_path):
    with pytest.raises(EvalDataError, match=r"`ds` must be an xarray.Dataset; got DataFrame"):
        save_dataset(pd.DataFrame(), tmp_path / "x.nc")
    with pytest.raises(EvalDataError, match=r"no such file: '.*missing.nc'"):
        load_dataset(tmp_path / "missing.nc")
    with pytest.raises(TypeError, match=r"`fit` must be an xarray.DataTree; got Dataset"):
        save_fit(xr.Dataset(), tmp_path / "f.nc")
    with pytest.raises(ValueError, match=r"`engine` must be 'netcdf' or 'zarr'; got 'hdf'"):
        save_fit(xr.DataTree(), tmp_path / "f.nc", engine="hdf")
    with pytest.raises(FileNotFoundError, match=r"no such file or folder: '.*nope.zarr'"):
        load_fit(tmp_path / "nope.zarr")
    with pytest.raises(ValueError, match=r"`groups` must be 'compact', 'all' or a list"):
        save_fit(xr.DataTree(), tmp_path / "f.nc", groups="some")


@pytest.fixture
def fit(eval_ds):
    rng = np.random.default_rng(0)
    post = xr.Dataset(
        {
            "theta": (("chain", "draw", "agent"), rng.normal(size=(2, 10, 2))),
            "sigma": (("chain", "draw"), rng.gamma(2.0, size=(2, 10))),
        },
        coords={"chain": [0, 1], "draw": np.arange(10), "agent": eval_ds.agent.values},
        attrs={"sampler": "nutpie"},
    )
    stats = xr.Dataset({"diverging": (("chain", "draw"), rng.random((2, 10)) < 0.1)})
    tree = xr.DataTree.from_dict(
        {"posterior": post, "sample_stats": stats, "observed_data": eval_ds[["score", "error"]]}
    )
    tree.attrs = {
        "spec": json.dumps({"model": "crossed", "priors": {"sd": 1.0}}),
        "data_hash": "abc123",
    }
    return tree


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_fit_round_trip(fit, tmp_path, suffix):
    path = save_fit(fit, tmp_path / f"fit{suffix}")
    back = load_fit(path)
    assert set(back.children) == {"posterior", "sample_stats", "observed_data"}
    assert back.attrs == fit.attrs
    for group in fit.children:
        _assert_same(back[group].to_dataset(), fit[group].to_dataset())
    assert back["sample_stats"]["diverging"].dtype == bool
    assert back["posterior"].attrs["sampler"] == "nutpie"


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=run_frames())
def test_any_read_dataset_survives_save_and_load(df):
    """Property: every dataset from_records can build (ragged, NaN, errors) round-trips exactly."""
    # run labels as the coordinate however sparse (the reader refuses sparse ones by default)
    ds = from_records(
        df, run="run", error="error", tag="tag", extra=["cost"], errors="exclude", run_index="label"
    )
    with tempfile.TemporaryDirectory() as tmp:
        back = load_dataset(save_dataset(ds, Path(tmp) / "x.nc"))
    _assert_same(back, ds)


# ---------------------------------------------------------------- issue 11: files never destroyed


def _with_predictive(fit):
    rng = np.random.default_rng(1)
    tree = fit.copy()
    ll = xr.Dataset({"y": (("chain", "draw", "cell"), rng.normal(size=(2, 10, 30)))})
    pp = xr.Dataset({"y": (("chain", "draw", "cell"), rng.integers(0, 5, size=(2, 10, 30)))})
    tree["log_likelihood"] = xr.DataTree(ll)
    tree["posterior_predictive"] = xr.DataTree(pp)
    return tree


def test_zarr_into_a_users_folder_keeps_its_files(fit, tmp_path):
    folder = tmp_path / "my_results"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    for overwrite in (False, True):
        with pytest.raises(FileExistsError, match=r"existing folder that is not a zarr store"):
            save_fit(fit, folder, engine="zarr", overwrite=overwrite)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    assert (folder / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("suffix", [".nc", ".zarr"])
def test_save_fit_refuses_to_overwrite_unless_asked(fit, tmp_path, suffix):
    path = save_fit(fit, tmp_path / f"fit{suffix}")
    with pytest.raises(FileExistsError, match=r"already exists; pass overwrite=True"):
        save_fit(fit, path)
    changed = fit.copy()
    changed.attrs = {**fit.attrs, "data_hash": "new"}
    save_fit(changed, path, overwrite=True)
    assert load_fit(path).attrs["data_hash"] == "new"


def test_save_dataset_refuses_to_overwrite_unless_asked(eval_ds, tmp_path):
    path = tmp_path / "eval.nc"
    path.write_bytes(b"user data")
    with pytest.raises(FileExistsError, match=r"eval.nc' already exists"):
        save_dataset(eval_ds, path)
    assert path.read_bytes() == b"user data"
    save_dataset(eval_ds, path, overwrite=True)
    _assert_same(load_dataset(path), eval_ds)


@pytest.mark.parametrize("make", ["garbage", "truncated"])
def test_corrupt_files_name_the_file(eval_ds, fit, tmp_path, make):
    from hierbench import HierbenchError

    good = save_fit(fit, tmp_path / "good.nc")
    bad = tmp_path / "bad.nc"
    bad.write_bytes(b"not a netcdf file" if make == "garbage" else good.read_bytes()[:2000])
    with pytest.raises(
        HierbenchError, match=r"'.*bad.nc' cannot be read as a netCDF file holding a fit"
    ):
        load_fit(bad)
    with pytest.raises(HierbenchError, match=r"'.*bad.nc' cannot be read as a netCDF eval dataset"):
        load_dataset(bad)


def test_corrupt_zarr_names_the_store(fit, tmp_path):
    from hierbench import HierbenchError

    store = save_fit(fit, tmp_path / "fit.zarr")
    (store / "zarr.json").write_text("{not json")
    with pytest.raises(HierbenchError, match=r"'.*fit.zarr' cannot be read as a zarr store"):
        load_fit(store)


def test_compact_default_drops_per_observation_groups_and_compresses(fit, tmp_path):
    full = _with_predictive(fit)
    compact = load_fit(save_fit(full, tmp_path / "c.nc"))
    assert set(compact.children) == {"posterior", "sample_stats", "observed_data"}
    assert json.loads(compact.attrs["hierbench_groups_dropped"]) == [
        "log_likelihood",
        "posterior_predictive",
    ]
    everything = load_fit(save_fit(full, tmp_path / "a.nc", groups="all"))
    assert set(everything.children) == set(full.children)
    xr.testing.assert_identical(
        everything["log_likelihood"].to_dataset(), full["log_likelihood"].to_dataset()
    )
    some = load_fit(save_fit(full, tmp_path / "s.nc", groups=["posterior_predictive"]))
    assert "posterior_predictive" in some.children and "log_likelihood" not in some.children
    # compressed: a constant posterior compresses to far less than its 8 bytes per value
    big = xr.DataTree.from_dict(
        {"posterior": xr.Dataset({"z": (("chain", "draw", "x"), np.zeros((4, 1000, 200)))})}
    )
    size = save_fit(big, tmp_path / "z.nc").stat().st_size
    assert size < 4 * 1000 * 200 * 8 / 20


def test_arviz_list_attrs_round_trip(fit, tmp_path):
    tree = fit.copy()
    tree["posterior"].attrs["sample_dims"] = ["chain", "draw"]
    back = load_fit(save_fit(tree, tmp_path / "f.nc"))
    assert back["posterior"].attrs["sample_dims"] == ["chain", "draw"]


# ---------------------------------------------------------------- issue 24: a saved fit is plain ArviZ

_ARVIZ_SCRIPT = """
import json, sys
import matplotlib
matplotlib.use("Agg")
import xarray as xr
import arviz_plots as azp
import arviz_stats as azs

dt = xr.open_datatree(sys.argv[1])  # no hierbench import: what any ArviZ user does
calls = [
    ("plot_forest", {"var_names": ["mean_new_task"]}),
    ("plot_trace", {"var_names": ["sd_task"]}),
    ("plot_trace_dist", {"var_names": ["sd_task"]}),
    ("plot_rank", {"var_names": ["sd_task"]}),
    ("plot_ess", {"var_names": ["sd_task"]}),
    ("plot_energy", {}),
    ("plot_ppc_rootogram", {}),
    ("plot_ppc_dist", {}),
    ("plot_loo_pit", {}),
]
done = []
for name, kw in calls:
    getattr(azp, name)(dt, backend="matplotlib", **kw)
    done.append(name)
summ = azs.summary(dt, var_names=["sd_task"], kind="stats")
loo = azs.loo(dt)
print(json.dumps({
    "plotted": done,
    "sample_dims": dt["posterior"].attrs["sample_dims"],
    "sd_task_mean": float(summ.loc["sd_task", "mean"]),
    "elpd": float(loo.elpd),
    "n_obs": int(loo.n_data_points),
    "hierbench_loaded": "hierbench" in sys.modules,
}))
"""


@pytest.mark.slow  # samples a small crossed model through the CLI
def test_a_fit_saved_by_the_cli_opens_in_plain_arviz(tmp_path, capsys):
    """`hierbench fit` saves a file that ArviZ reads without hierbench (a fresh interpreter that never imports it).

    The fit is the command's own ``main`` in this process (the command line's entry points are
    tested in test_cli.py); what is read apart is the file it saved.
    """
    import subprocess
    import sys

    from hierbench.cli import main
    from hierbench.data import to_records

    ds, _ = simulate_eval(n_agents=3, n_tasks=15, n_runs=3, rng=0)
    log = tmp_path / "runs.csv"
    df = to_records(ds)
    df.to_csv(log, index=False)
    out = tmp_path / "fit.nc"
    # 100 draws: what is read (the groups and dims ArviZ opens, its mean of the file's own draws, one
    # pointwise log-likelihood per observed cell) does not depend on their number
    args = ["fit", str(log), "-o", str(out), "--draws", "100", "--tune", "100", "--chains", "2", "--keep-all",
            "--log-likelihood", "--quiet"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 100 draws: its verdict is not what is read here
        assert main(args) == 0, capsys.readouterr().err
    assert "model as fitted: crossed" in capsys.readouterr().out  # the structure it chose, and why
    res = subprocess.run(
        [sys.executable, "-c", _ARVIZ_SCRIPT, str(out)], capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert len(got["plotted"]) >= 6 and not got["hierbench_loaded"]
    assert got["sample_dims"] == ["chain", "draw"]
    # the numbers ArviZ reads are the file's own draws, and LOO sees one value per observed cell
    draws = xr.open_datatree(out)["posterior"]["sd_task"].values
    assert got["sd_task_mean"] == pytest.approx(draws.mean(), abs=5e-3)
    n_cells = int(df.dropna(subset=["score"]).groupby(["agent", "task"]).ngroups)
    assert got["n_obs"] == n_cells and np.isfinite(got["elpd"])


@pytest.mark.parametrize("ext", ["nc", "zarr"])
def test_missing_cluster_labels_survive_a_saved_file(tmp_path, ext):
    # issue 24: missing labels came back as the text 'nan' and pooled into one cluster; the
    # expected value is the same analysis on the dataset in memory, before saving
    import numpy as np

    from hierbench.freq import bootstrap_ci
    from hierbench.io import load_dataset
    from hierbench.io import save_dataset
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=2, n_clusters=3, rng=0)
    labels = ds["cluster"].values.astype(object)
    labels[[0, 4]], labels[7] = np.nan, None
    ds = ds.assign_coords(cluster=("task", labels))
    back = load_dataset(save_dataset(ds, tmp_path / f"d.{ext}"))
    missing = [v is None or (isinstance(v, float) and np.isnan(v)) for v in back["cluster"].values]
    assert missing == [i in (0, 4, 7) for i in range(12)]
    assert "nan" not in {str(v) for v in back["cluster"].values if isinstance(v, str)}
    mem = bootstrap_ci(ds, n_resamples=200, rng=0)
    disk = bootstrap_ci(back, n_resamples=200, rng=0)
    np.testing.assert_array_equal(disk.ci.values, mem.ci.values)


def test_saving_compact_says_a_log_likelihood_group_is_left_out(tmp_path):
    from hierbench._base import HierbenchWarning

    post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((2, 5)))})
    ll = xr.Dataset({"y": (("chain", "draw", "cell"), np.zeros((2, 5, 3)))})
    fit = xr.DataTree.from_dict({"posterior": post, "log_likelihood": ll})
    with pytest.warns(HierbenchWarning, match=r"log_likelihood group is not saved.*groups='all'"):
        save_fit(fit, tmp_path / "compact.nc")
    assert "log_likelihood" not in load_fit(tmp_path / "compact.nc").children
    with warnings.catch_warnings():
        warnings.simplefilter("error", HierbenchWarning)
        save_fit(fit, tmp_path / "all.nc", groups="all")
        save_fit(fit.drop_nodes("log_likelihood"), tmp_path / "none.nc")
    assert "log_likelihood" in load_fit(tmp_path / "all.nc").children
