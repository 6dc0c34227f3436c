"""success_rate states what it estimates, and a scale implied by a quantity asks as a stated one (audit s18 X, finding 4).

success_rate's estimate stated no scale, quantity or tasks, so side_by_side refused it beside a
fit's mean_new_task or population pass^1 (asking the user to set attrs['scale'] on the
library's own result) yet accepted it beside the frequentist pass^1, whose scale is only
implied by its quantity. It now states them in bootstrap_ci's words ("probability" for 0/1
scores, else "score"; "mean score"; "population"), pass^1 reads as the mean score, and a scale
implied by a quantity asks a silent result for its scale as a stated one does.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hierbench import freq
from hierbench._base import make_interval
from hierbench.compare import MismatchedEstimatesError
from hierbench.compare import side_by_side
from hierbench.testing import simulate_eval


def _log(scores) -> xr.Dataset:
    """One agent, tasks x runs of the given scores."""
    y = np.asarray(scores, float)[None]
    return xr.Dataset(
        {"score": (("agent", "task", "run"), y)},
        coords={"agent": ["a"], "task": [f"t{i}" for i in range(y.shape[1])], "run": np.arange(y.shape[2])},
    )


def _result(value, **attrs) -> xr.Dataset:
    """A hand-built result for agent 'a' (a posterior summary's shape) with the given attrs."""
    est = xr.DataArray([value], dims="agent", coords={"agent": ["a"]})
    ci = make_interval(est - 0.1, est + 0.1, prob=0.95, kind="eti")
    return xr.Dataset({"estimate": est, "ci": ci}).assign_attrs(attrs)


BINARY = [[1, 0], [1, 1], [0, 0], [1, 0], [0, 1], [1, 1]]
PARTIAL = [[1, 0.5], [1, 1], [0, 0.25], [1, 0], [0, 1], [0.75, 1]]


def test_success_rate_states_its_scale_quantity_and_tasks_in_bootstrap_cis_words():
    attrs = freq.success_rate(_log(BINARY)).estimate.attrs
    assert (attrs["scale"], attrs["quantity"], attrs["tasks"]) == ("probability", "mean score", "population")
    assert freq.success_rate(_log(PARTIAL)).estimate.attrs["scale"] == "score"
    # strict=True counts a run a success only at score 1: 0/1 values, a probability
    assert freq.success_rate(_log(PARTIAL), strict=True).estimate.attrs["scale"] == "probability"
    # the same words as the task bootstrap of the same log
    boot = freq.bootstrap_ci(_log(PARTIAL), n_resamples=99, rng=0).estimate.attrs
    assert {k: boot[k] for k in ("scale", "quantity", "tasks")} == {"scale": "score", "quantity": "mean score",
                                                                    "tasks": "population"}


def test_success_rate_sits_beside_a_fits_mean_new_task_and_population_pass_1():
    sr = freq.success_rate(_log(BINARY))
    assert float(sr.estimate.item()) == pytest.approx(7 / 12)  # by hand: task means 1/2, 1, 0, 1/2, 1/2, 1
    new_task = _result(0.57, quantity="mean score", tasks="population", scale="probability")
    t = side_by_side({"success_rate": sr, "mean_new_task": new_task})
    assert t["scale"].values.tolist() == ["probability", "probability"]
    pass1 = _result(0.57, quantity="pass^k", tasks="population", scale="probability").expand_dims(k=[1])
    pass1["ci"] = pass1["ci"].transpose(..., "ci_bound")
    side_by_side({"success_rate": sr, "pass^1": pass1})
    # a pass^k at another k is not the mean score
    with pytest.raises(MismatchedEstimatesError, match="estimate different quantities"):
        side_by_side({"success_rate": sr, "pass^2": pass1.assign_coords(k=[2])})
    # graded scores are on the score scale, not a probability's
    with pytest.raises(MismatchedEstimatesError, match="different scales"):
        side_by_side({"success_rate": freq.success_rate(_log(PARTIAL)), "mean_new_task": new_task})


def test_a_scale_implied_by_a_quantity_asks_a_silent_result_as_a_stated_one_does():
    ds, _ = simulate_eval(n_agents=1, n_tasks=20, n_runs=2, rng=0)
    silent = _result(0.5)  # states no scale; an eti interval implies none
    silent = silent.assign_coords(agent=ds.agent.values)
    stated = _result(0.5, quantity="pass^k", tasks="population", scale="probability").assign_coords(agent=ds.agent.values)
    implied = freq.pass_hat_k(ds, 1)  # its scale only implied by its quantity, pass^k
    for other in (stated, implied):
        with pytest.raises(MismatchedEstimatesError, match=r"\['silent'\] state no scale"):
            side_by_side({"silent": silent, "other": other})
    # a scale implied by an interval's kind alone (a Wilson interval's) still asks nothing
    wil = freq.wilson_interval(ds.score.sum(), ds.score.count())
    side_by_side({"silent": silent.squeeze("agent", drop=True), "wilson": wil})
