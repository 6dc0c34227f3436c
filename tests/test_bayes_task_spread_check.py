"""task_spread_check: the tasks' success shares, observed against predictive draws.

References: pandas group-bys of the same cells (uneven runs, missing cells), and a seeded
simulation from a known logit-normal task population: data drawn from it get calibrated
p-values; data whose tasks are bimodal (SWE-bench's shape: many tasks no or every model
solves) get a small one for the all-fail share. No fit is needed: the predictive draws are
drawn from the generating model itself.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.special import expit

from hierbench.bayes import task_spread_check


def _tree(task: np.ndarray, n: np.ndarray, y: np.ndarray, pred: np.ndarray) -> xr.DataTree:
    cells = {"cell": np.arange(task.size), "cell_task": ("cell", task)}
    return xr.DataTree.from_dict({
        "observed_data": xr.Dataset({"y": ("cell", y)}, coords=cells),
        "constant_data": xr.Dataset({"cell_n_runs": ("cell", n)}, coords=cells),
        "posterior_predictive": xr.Dataset({"y": (("chain", "draw", "cell"), pred)}, coords=cells),
    })  # fmt: skip


def _by_hand(task, n, y) -> list[float]:
    g = pd.DataFrame({"t": task, "n": n, "y": y}).groupby("t")[["n", "y"]].sum()
    share = g["y"] / g["n"]
    return [float((g["y"] == 0).mean()), float((g["y"] == g["n"]).mean()), float(share.std(ddof=0))]


def test_statistics_match_pandas_on_uneven_cells():
    g = np.random.default_rng(0)
    task = g.choice(np.array(["t0", "t1", "t2", "t3", "t4", "t5"]), 40)  # unsorted, uneven cells per task
    n = g.integers(1, 5, 40)
    y = g.binomial(n, g.uniform(0, 1, 40))
    y[task == "t2"] = 0
    y[task == "t5"] = n[task == "t5"]
    pred = g.binomial(n, 0.5, size=(2, 7, 40))
    chk = task_spread_check(_tree(task, n, y, pred), prob=0.8)
    np.testing.assert_allclose(chk["observed"].values, _by_hand(task, n, y))
    draws = np.array([_by_hand(task, n, d) for d in pred.reshape(14, 40)])
    np.testing.assert_allclose(chk["predicted_mean"].values, draws.mean(0))
    np.testing.assert_allclose(chk["p_value"].values, (draws >= _by_hand(task, n, y)).mean(0))
    np.testing.assert_allclose(chk["predicted_upper"].values, np.quantile(draws, 0.9, axis=0))
    assert chk.attrs["n_tasks"] == 6 and chk.attrs["n_draws"] == 14 and chk.attrs["band_prob"] == 0.8


@pytest.mark.slow  # 200 simulated data sets x 99 predictive draws (about 3 s): calibration needs the replicates
def test_calibrated_under_the_model_and_small_for_bimodal_tasks():
    """Seeded simulation, 100 data sets of 12 agents x 200 tasks, one run per cell, 99 predictive draws each.

    Under the generating logit-normal population the two-sided p-value of the all-fail share
    is below 0.05 in at most 0.05 + 3 binomial sds of 100 (0.115) of the data sets. Tasks drawn
    from a two-point population (30% hopeless at logit -8, the rest at +0.5), with predictive
    draws from the normal population of the same logit mean and sd: below 0.05 in at least 0.8
    of them (0.98 in a pilot run of 100 other data sets).
    """
    g = np.random.default_rng(7)
    M, T, S = 12, 200, 99
    a = np.linspace(-1, 1, M)
    task = np.tile(np.arange(T).astype(str), M)
    n = np.ones(M * T, int)

    def outcomes(u):
        return (g.random((M, T)) < expit(a[:, None] + u[None, :])).astype(int).ravel()

    def two_sided(u, draw_u):
        pred = np.stack([outcomes(draw_u()) for _ in range(S)])[None]
        c = task_spread_check(_tree(task, n, outcomes(u), pred))
        return 2 * min(c["p_value"].values[0], c["p_value_low"].values[0])

    small_null = small_alt = 0
    for _ in range(100):
        small_null += two_sided(g.normal(0, 2, T), lambda: g.normal(0, 2, T)) < 0.05
        u2 = np.where(g.random(T) < 0.3, -8.0, 0.5)
        small_alt += two_sided(u2, lambda u2=u2: g.normal(u2.mean(), u2.std(), T)) < 0.05
    assert small_null / 100 <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 100), small_null
    assert small_alt / 100 >= 0.8, small_alt


def test_refuses_a_fit_without_task_labels():
    cells = {"cell": [0, 1]}
    dt = xr.DataTree.from_dict({
        "observed_data": xr.Dataset({"y": ("cell", [0, 1])}, coords=cells),
        "constant_data": xr.Dataset({"cell_n_runs": ("cell", [1, 1])}, coords=cells),
        "posterior_predictive": xr.Dataset({"y": (("chain", "draw", "cell"), np.zeros((1, 2, 2), int))}, coords=cells),
    })  # fmt: skip
    with pytest.raises(ValueError, match=r"coord `cell_task`"):
        task_spread_check(dt)
