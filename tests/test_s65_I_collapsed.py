"""A bank whose slopes collapsed is refused by what reads its item curves, or replaced honestly (finding I1).

fit_irt_ml records a collapse of the 2PL's slopes (bank.attrs["slopes_collapsed"] = 1, seen on banks of
2-5 agents) and says the bank is not fit for irt_score; irt_score, adaptive and anchors scored agents or
picked tasks from it silently. Now the bank's one rule (IRTBank.check_usable) is read by each: irt_score,
adaptive and anchors refuse (HierbenchError); assisted_adaptive and assisted_mean, whose estimate is
unbiased whatever the model, warn and use the bank's population-average predictions, fixed. A bank whose
slopes did not collapse gives the same results as before.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hierbench.design import assisted_mean
from hierbench.design import plan_subset


def test_assisted_mean_reads_fixed_predictions_by_their_task_labels():
    """The same labelled predictions in reverse order give the same estimate: before, they were read in the
    order given against the plan's tasks (0.509 against 0.451 on a 100-task example). Independent check: on a
    simple random plan the classical difference estimator is the predictions' mean over every task plus the
    drawn tasks' mean residual, by numpy with each prediction read by its label.
    """
    g = np.random.default_rng(1)
    tasks = [f"t{i:03d}" for i in range(60)]
    m = xr.DataArray(g.uniform(0.05, 0.95, 60), dims="task", coords={"task": tasks})
    y = xr.DataArray((g.random((1, 60)) < m.values).astype(float), dims=("agent", "task"),
                     coords={"agent": ["a"], "task": tasks})
    plan = plan_subset(tasks, 15, rng=2)
    drawn = plan.order.values.astype(str)
    expected = float(m.mean()) + float((y.isel(agent=0).sel(task=drawn) - m.sel(task=drawn)).mean())
    for given in (m, m.isel(task=slice(None, None, -1))):
        res = assisted_mean(plan, y, given, prob=0.9)
        assert float(res.estimate.values[0]) == pytest.approx(expected, rel=1e-12)
