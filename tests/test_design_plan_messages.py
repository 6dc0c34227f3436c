"""What plan_subset and assisted_mean say when given the wrong object or logs with gaps (audit D5)."""

from __future__ import annotations

import numpy as np
import pytest

from hierbench._base import HierbenchError
from hierbench.design import assisted_mean
from hierbench.design import plan_subset
from hierbench.freq import fit_irt_ml
from hierbench.testing import simulate_eval


def test_a_calibration_result_is_refused_with_its_bank_named():
    ds, _ = simulate_eval(n_agents=6, n_tasks=30, n_runs=1, rng=0)
    cal = fit_irt_ml(ds, rng=0)
    with pytest.raises(TypeError, match=r"got IRTCalibrationResult, which holds a bank: pass its `\.bank`"):
        plan_subset(cal, 10, rng=0)
    assert len(plan_subset(cal.bank, 10, rng=0)) == 10  # what the message asks for works


def test_logs_missing_planned_tasks_name_the_tasks_and_the_agents_as_plain_strings():
    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=2, rng=1)
    tasks = [str(t) for t in ds["task"].values]
    ds["score"][1, :6, :] = np.nan  # the second agent ran none of the first 6 tasks
    with pytest.raises(HierbenchError) as err:
        assisted_mean(plan_subset(tasks, 12, rng=0), ds)  # a census: every task planned
    msg = str(err.value)
    agent = str(ds["agent"].values[1])
    assert "6 planned task(s) lack one: " + ", ".join(sorted(tasks[:6])[:5]) + ", ..." in msg
    assert f"(agents without them: {agent};" in msg and "np.str_" not in msg
