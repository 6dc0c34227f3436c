"""The report's task side of the predictive check: its numbers are task_spread_check's, its verdict the stated rule.

References: the statistics counted by hand with numpy on a hand-made fit (one run per cell, two
agents, predictive draws chosen so that the data hold far more unsolved tasks than any draw).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from hierbench.report._ppc_tasks import task_spread_text


def _tree(y: np.ndarray, pred: np.ndarray, T: int) -> xr.DataTree:
    cells = {"cell": np.arange(2 * T), "cell_task": ("cell", np.tile([f"t{i}" for i in range(T)], 2))}
    return xr.DataTree.from_dict({
        "observed_data": xr.Dataset({"y": ("cell", y)}, coords=cells),
        "constant_data": xr.Dataset({"cell_n_runs": ("cell", np.ones(2 * T, int))}, coords=cells),
        "posterior_predictive": xr.Dataset({"y": (("chain", "draw", "cell"), pred)}, coords=cells),
    })  # fmt: skip


def test_numbers_and_verdict():
    T = 20
    g = np.random.default_rng(1)
    y = np.zeros(2 * T, int)
    y[:5] = 1  # agent 1 solved tasks 0-4; agent 2 nothing: 15 of 20 tasks unsolved by both (75%)
    pred = (g.random((1, 50, 2 * T)) < 0.5).astype(int)  # draws: about a quarter of tasks unsolved
    text = " ".join(task_spread_text(_tree(y, pred, T), 0.9).split())
    draws = pred[0].reshape(50, 2, T).sum(1)
    share = (draws == 0).mean(1)
    assert f"the share no run solved 75.0% against {share.mean():.1%} predicted" in text
    assert f"[{np.quantile(share, 0.05):.1%}, {np.quantile(share, 0.95):.1%}], p 0)" in text
    assert "does not hold these tasks' spread (p below 0.05 / 3 for" in text and "numbers to quote" in text
    # the data drawn like the draws: no verdict against the population (each two-sided p checked by hand)
    y2 = (g.random(2 * T) < 0.5).astype(int)
    text2 = task_spread_text(_tree(y2, pred, T), 0.9)
    sums = y2.reshape(2, T).sum(0)
    obs = [(sums == 0).mean(), (sums == 2).mean(), (sums / 2).std()]
    stats = np.c_[share, (draws == 2).mean(1), (draws / 2).std(1)]
    p = [min(1, 2 * min((stats[:, i] >= obs[i]).mean(), (stats[:, i] <= obs[i]).mean())) for i in range(3)]
    assert ("None of the three is at odds" in text2) == (min(p) >= 0.05 / 3)


def test_no_predictive_group_gives_nothing():
    T = 3
    dt = _tree(np.zeros(2 * T, int), np.zeros((1, 2, 2 * T), int), T)
    assert task_spread_text(xr.DataTree.from_dict({k: dt[k].to_dataset() for k in ("observed_data", "constant_data")}),
                            0.9) is None
