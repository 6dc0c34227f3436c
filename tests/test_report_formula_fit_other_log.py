"""A formula (horizon) fit beside another log: the refusal counts only cells the log ran and names what differs.

Audit S, finding 1: ``_formula_cells`` outer-merged the fit's cells with every count cell, so each
cell the log never ran read "fit absent, data 0" (METR: 82 such cells). Doubled minutes were
"82 of 830 cells differ" (none does: the minutes differ), one flipped run "83 of 830", and a dropped
agent "31 of 763" without naming the agent. The fit here is laid out as ``hierbench.bayes.fit``
stores a binomial formula fit (``constant_data`` ``cell_n_runs`` / ``cell_n_success`` over
``cell_agent`` / ``cell_task``); the expected cells, counts and agent are the ones each test
changes in the log, counted with numpy.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench import bayes
from hierbench.report import FitDataMismatchError
from hierbench.report import check_fit_data


def _log() -> xr.Dataset:
    """3 agents x 8 tasks x 3 runs in 4 families; agent c never ran t0-t2 (3 cells with no run)."""
    rng = np.random.default_rng(4)
    y = (rng.random((3, 8, 3)) < 0.5) * 1.0
    y[2, :3] = np.nan
    coords = {"agent": ["a", "b", "c"], "task": [f"t{i}" for i in range(8)],
              "human_minutes": ("task", np.geomspace(1, 300, 8)), "cluster": ("task", [f"f{i // 2}" for i in range(8)])}  # fmt: skip
    return xr.Dataset({"score": (("agent", "task", "run"), y)}, coords=coords)


@pytest.fixture(scope="module")
def fit_and_log():
    ds = _log()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        info = bayes.build_horizon(ds).hierbench
    d = info["design"]
    cells = {"cell": np.arange(len(d.y)), **{k: ("cell", np.asarray(v)) for k, v in info["cell_coords"].items()}}
    attrs = {"hierbench_model": "mixed", "hierbench_data_hash": info["data_hash"],
             "hierbench_counts_hash": info["counts_hash"],
             "hierbench_spec": json.dumps({"model": "mixed", "options": info["options"]}, default=str)}  # fmt: skip
    fit = xr.DataTree.from_dict({
        "/": xr.Dataset(attrs=attrs),
        "constant_data": xr.Dataset({"cell_n_runs": ("cell", d.n), "cell_n_success": ("cell", d.y)}, coords=cells),
        "observed_data": xr.Dataset({"y": ("cell", d.y)}, coords=cells),
    })  # fmt: skip
    assert len(d.y) == 21  # 24 cells, 3 never run
    return fit, ds


def _refusal(fit, ds) -> str:
    with pytest.raises(FitDataMismatchError) as err:
        check_fit_data(fit, ds)
    return str(err.value)


def test_its_own_log_is_accepted(fit_and_log):
    check_fit_data(*fit_and_log)


def test_other_minutes_name_the_covariate_and_no_cell(fit_and_log):
    fit, ds = fit_and_log
    msg = _refusal(fit, ds.assign_coords(human_minutes=ds["human_minutes"] * 2))
    assert "the data's scores are the fit's; the covariate the formula reads, `log2_minutes` (log2 of the task " \
           "coord `human_minutes`), differs from the fit's" in msg
    assert "differ, e.g." not in msg and "absent" not in msg and "cells with other" not in msg


def test_one_flipped_run_is_one_cell_in_the_count_models_words(fit_and_log):
    fit, ds = fit_and_log
    other = ds.copy(deep=True)
    before = ds["score"].values[1, 5]
    other["score"].values[1, 5, 0] = 1.0 - other["score"].values[1, 5, 0]
    k_fit, k_data = int(before.sum()), int(other["score"].values[1, 5].sum())
    msg = _refusal(fit, other)
    assert f"1 agent x task cells with other success / run counts (e.g. (b, t5): fit {k_fit}/3, data {k_data}/3)" in msg
    assert "formula model's design" not in msg  # the cell says it; no second, vaguer reason


def test_a_dropped_agent_is_named(fit_and_log):
    fit, ds = fit_and_log
    msg = _refusal(fit, ds.drop_sel(agent=["c"]))
    assert "1 agent only in the fit (['c'])" in msg
    assert "cells with other" not in msg and "absent" not in msg


def test_a_cell_the_fit_never_saw_run_in_the_data_is_named(fit_and_log):
    """Agent c's t1 (no run in the fit's log) run twice in the data: that cell, 0/0 against 2 runs."""
    fit, ds = fit_and_log
    other = ds.copy(deep=True)
    other["score"].values[2, 1, :2] = [1.0, 0.0]
    msg = _refusal(fit, other)
    assert "1 agent x task cells with other success / run counts (e.g. (c, t1): fit 0/0, data 1/2)" in msg
