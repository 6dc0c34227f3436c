"""A formula fit beside another log is refused naming the runs (or cells) that differ (audit Q, finding 7).

The fit's observed_data is laid out as ``hierbench.bayes.fit`` stores it (per run for the
fractional family, per agent x task cell for the binomial); the expected cells and values are the
ones this test changes in the log, read back with pandas.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.bayes import build_mixed
from hierbench.data import from_records
from hierbench.report import FitDataMismatchError
from hierbench.report import check_fit_data


def _fit(model, observed: xr.Dataset) -> xr.DataTree:
    info = model.hierbench
    spec = json.dumps({"model": info["model"], "options": info.get("options", {}), "priors": {}}, default=str)
    attrs = {"hierbench_model": info["model"], "hierbench_spec": spec, "hierbench_data_hash": info["data_hash"]}
    return xr.DataTree.from_dict({"/": xr.Dataset(attrs=attrs), "observed_data": observed})


def _read(df: pd.DataFrame) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_records(df, run="run")


def _frame(binary: bool) -> pd.DataFrame:
    g = np.random.default_rng(1)
    rows = [{"agent": a, "task": f"t{t}", "run": r} for a in "AB" for t in range(6) for r in range(3)]
    df = pd.DataFrame(rows)
    df["score"] = (g.random(len(df)) < 0.5).astype(float) if binary else g.uniform(0.05, 0.95, len(df)).round(3)
    return df


def test_a_fractional_fit_names_the_run_whose_score_changed():
    df = _frame(binary=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build_mixed(_read(df), "score ~ (1|agent) + (1|task)", family="fractional")
    obs = xr.Dataset({"y": ("obs", df["score"].to_numpy())},
                     coords={"obs_agent": ("obs", df["agent"]), "obs_task": ("obs", df["task"]),
                             "obs_run": ("obs", df["run"].astype(str))})  # fmt: skip
    fit = _fit(model, obs)
    check_fit_data(fit, _read(df))  # its own log
    changed = df.copy()
    changed.loc[(changed.agent == "B") & (changed.task == "t2") & (changed.run == 1), "score"] = 0.5
    before = df.loc[(df.agent == "B") & (df.task == "t2") & (df.run == 1), "score"].item()
    with pytest.raises(FitDataMismatchError) as err:
        check_fit_data(fit, _read(changed))
    assert f"1 of {len(df)} runs differ, e.g. (B, t2, run 1): fit {before:.4g}, data 0.5" in str(err.value)


def test_a_binomial_fit_names_the_cell_whose_successes_changed():
    df = _frame(binary=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build_mixed(_read(df), "score ~ (1|agent) + (1|task)", family="binomial")
    cells = df.groupby(["agent", "task"])["score"].sum().reset_index()
    obs = xr.Dataset({"y": ("cell", cells["score"].to_numpy())},
                     coords={"cell_agent": ("cell", cells["agent"]), "cell_task": ("cell", cells["task"])})  # fmt: skip
    fit = _fit(model, obs)
    check_fit_data(fit, _read(df))
    flipped = df.copy()
    at = (flipped.agent == "A") & (flipped.task == "t4") & (flipped.run == 0)
    flipped.loc[at, "score"] = 1 - flipped.loc[at, "score"]
    k_fit = cells.loc[(cells.agent == "A") & (cells.task == "t4"), "score"].item()
    k_data = flipped[(flipped.agent == "A") & (flipped.task == "t4")]["score"].sum()
    with pytest.raises(FitDataMismatchError) as err:
        check_fit_data(fit, _read(flipped))
    assert f"1 of {len(cells)} cells (successes) differ, e.g. (A, t4): fit {k_fit:.4g}, data {k_data:.4g}" in str(err.value)
