"""scorecard refuses partial credit in an eval dataset as pass_at_k does, and counts and says the tasks it
takes at k_eff = min(k, n_runs) (audit K finding 4).

Expected values by hand: which tasks have fewer than k runs, and the per-task values by ``math.comb``.
"""

import warnings
from math import comb

import numpy as np
import pytest
import xarray as xr

from hierbench import PartialCreditError
from hierbench.freq import InsufficientRunsWarning
from hierbench.freq import pass_at_k
from hierbench.freq import scorecard


def _eval(scores):
    s = np.asarray(scores, dtype=float)
    return xr.Dataset(
        {"score": (("agent", "task", "run"), s)},
        coords={"agent": [f"m{i}" for i in range(s.shape[0])], "task": [f"t{j}" for j in range(s.shape[1])]},
    )


def test_partial_credit_is_refused_with_the_same_error_as_pass_at_k():
    ds = _eval([[[1, 0.5, 0], [1, 1, 0.25], [0, 0, 1]]])
    with pytest.raises(PartialCreditError, match=r"`runs`: scorecard needs binary scores .* 2 scores are partial "
                                                 r"credit, e\.g\. \(agent, task, run, score\) \[\('m0', 't0', 1, 0\.5\), "
                                                 r"\('m0', 't1', 2, 0\.25\)\], which it would count as failures\. "
                                                 r"Binarise them first"):
        scorecard(ds, 1)
    with pytest.raises(PartialCreditError, match="2 scores are partial credit"):
        pass_at_k(ds, 1)
    binary = ds.assign(score=(ds.score >= 1).astype(float))
    assert scorecard(binary, 1)["m0"]["pass_at_k"] == round((1 / 3 + 2 / 3 + 1 / 3) / 3, 4)


def test_tasks_short_of_k_are_counted_and_warned_of():
    runs = [{"task_id": "a", "passed": p} for p in (True, False, True)] + [
        {"task_id": "b", "passed": False}] + [{"task_id": "c", "passed": p} for p in (True, True)]
    with pytest.warns(InsufficientRunsWarning, match=r"scorecard: tasks ran fewer than k=2 times \(1 of 3 tasks; "
                                                     r"counted in 'tasks_with_fewer_runs_than_k'\)\. They enter at "
                                                     r"k_eff = min\(k, n_runs\).* not pass@k / pass\^k at k=2"):
        card = scorecard(runs, 2)
    assert card["tasks_with_fewer_runs_than_k"] == 1
    # b (1 run, a failure) enters at k_eff 1
    at = [1 - comb(1, 2) / comb(3, 2), 0.0, 1.0]
    hat = [comb(2, 2) / comb(3, 2), 0.0, 1.0]
    assert card["pass_at_k"] == round(float(np.mean(at)), 4) and card["pass_hat_k"] == round(float(np.mean(hat)), 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert scorecard(runs, 1)["tasks_with_fewer_runs_than_k"] == 0


def test_one_warning_per_call_names_the_agents_and_a_ragged_dataset_is_counted():
    nan = np.nan
    ds = _eval([[[1, 0, 1], [1, nan, nan], [0, 1, nan]], [[1, 1, 1], [0, 1, 1], [1, 0, 0]]])
    with pytest.warns(InsufficientRunsWarning) as rec:
        cards = scorecard(ds, 3)
    said = [str(w.message) for w in rec if "scorecard" in str(w.message)]
    assert len(said) == 1 and "(m0: 2 of 3 tasks; counted in" in said[0] and "m1" not in said[0]
    assert cards["m0"]["tasks_with_fewer_runs_than_k"] == 2 and cards["m1"]["tasks_with_fewer_runs_than_k"] == 0
    # m0 at "k = 3": t0 at 3, t1 at k_eff 1 (1 run, a pass), t2 at k_eff 2 (1 pass of 2)
    assert cards["m0"]["pass_at_k"] == round((1 + 1 + 1) / 3, 4)
    assert cards["m0"]["pass_hat_k"] == round((0 + 1 + comb(1, 2) / comb(2, 2)) / 3, 4)
