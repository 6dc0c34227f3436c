"""A bootstrap interval of zero width for some agents is named, with its reason (audit: tau-bench plus an
agent that failed all its tasks printed ``allfail: 0 [0, 0]`` with no warning and a flag naming another
cause). Every expected value here follows from how the data are built: an agent whose every task has
one value draws that value in every resample.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench._base import ZeroWidthIntervalWarning
from hierbench._base import make_interval
from hierbench.freq import bootstrap_ci

T = 20


def _ds(scores: dict[str, np.ndarray]) -> xr.Dataset:
    """Agents x ``T`` tasks x 2 runs from per-agent (T, 2) score arrays."""
    names = list(scores)
    y = np.stack([scores[a] for a in names])
    return xr.Dataset(
        {"score": (("agent", "task", "run"), y)},
        coords={"agent": names, "task": [f"t{i}" for i in range(T)]},
    )


def _four() -> xr.Dataset:
    mixed = np.zeros((T, 2))
    mixed[::2] = 1.0  # 10 of 20 tasks solved in both runs: mean 0.5, 10 effective tasks of 20
    rare = np.zeros((T, 2))
    rare[0, 0] = 1.0  # one task at 0.5: (0.5)^2 / 0.25 = 1 effective task, below min(10, 20 / 2)
    return _ds({"allfail": np.zeros((T, 2)), "allpass": np.ones((T, 2)), "rare": rare, "mixed": mixed})


def test_zero_width_agents_are_named_with_their_reason_and_flagged():
    with pytest.warns(ZeroWidthIntervalWarning) as seen:
        res = bootstrap_ci(_four(), n_resamples=199, rng=0)
    msg = " ".join(str(w.message) for w in seen if w.category is ZeroWidthIntervalWarning)
    assert "zero width for 2 of 4 agents" in msg
    assert "allfail (every task scored 0: no resample can differ)" in msg
    assert "allpass (every task scored 1: no resample can differ)" in msg
    assert "rare" not in msg and "mixed" not in msg
    ci = res.ci.values
    assert ci[0].tolist() == [0.0, 0.0] and ci[1].tolist() == [1.0, 1.0]
    assert ci[2, 1] > ci[2, 0] and ci[3, 1] > ci[3, 0]
    # the real reason for the two, the few-tasks flag kept for the agent it describes
    assert res.ci_flag.values.tolist() == [
        "every task scored 0", "every task scored 1", "few tasks carry the mean", "",
    ]
    lines = repr(res).splitlines()
    assert lines[1].endswith("allfail: 0 [0, 0]  (every task scored 0)")
    assert lines[2].endswith("(every task scored 1)")
    assert lines[3].endswith("(few tasks carry the mean)")
    assert lines[4].startswith("  mixed: 0.5 [") and lines[4].endswith("]")  # no flag, nothing appended


def test_a_constant_partial_credit_agent_is_named_by_its_value():
    half = np.full((T, 2), 0.5)  # every run 0.5: every cell, hence every resample, 0.5
    mixed = np.tile([[0.0, 1.0]], (T, 1))
    mixed[:5] = 1.0
    ds = _ds({"half": half, "mixed": mixed})
    with pytest.warns(ZeroWidthIntervalWarning, match=r"for 1 of 2 agents: half \(every task scored 0.5"):
        res = bootstrap_ci(ds, n_resamples=99, rng=0)
    assert res.ci_flag.values.tolist() == ["every task scored 0.5", ""]
    # two-stage resamples the runs too: tasks whose runs differ (0 and 1, mean 0.5 each) give width,
    # so an agent whose tasks share the mean 0.5 is not flagged as one value
    runs_differ = _ds({"a": np.tile([[0.0, 1.0]], (T, 1)), "b": mixed})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroWidthIntervalWarning)
        two = bootstrap_ci(runs_differ, scheme="two-stage", n_resamples=99, rng=0)
    assert two.ci.values[0, 1] > two.ci.values[0, 0]
    assert two.ci_flag.values.tolist() == ["", ""]


def test_pass_hat_k_and_pairs_name_their_own_one_value():
    one_of_two = np.tile([[1.0, 0.0]], (T, 1))  # one success in 2 runs on every task: pass^2 = 0 per task
    mixed = np.ones((T, 2))
    mixed[::3, 1] = 0.0
    ds = _ds({"half": one_of_two, "mixed": mixed})
    with pytest.warns(ZeroWidthIntervalWarning, match=r"half \(every task's pass\^2 is 0: no resample"):
        res = bootstrap_ci(ds, "pass_hat_k", k=2, n_resamples=99, rng=0)
    assert res.ci_flag.values.tolist()[0] == "every task's pass^2 is 0"
    # two agents with the same scores everywhere: their difference is 0 in every resample
    same = _ds({"a": mixed, "b": mixed.copy(), "c": one_of_two})
    with pytest.warns(ZeroWidthIntervalWarning, match=r"1 of 3 pairs: a - b \(every task's difference is 0"):
        pairs = bootstrap_ci(same, pairs="all", n_resamples=99, rng=0)
    assert pairs.ci_flag is None


def test_make_interval_names_each_zero_width_entry_only_when_given_reasons():
    lo = xr.DataArray([0.0, 0.2, 0.5], dims="agent", coords={"agent": ["x", "y", "z"]})
    hi = xr.DataArray([0.0, 0.4, 0.5], dims="agent", coords={"agent": ["x", "y", "z"]})
    why = xr.DataArray(["reason x", "reason y", ""], dims="agent", coords={"agent": ["x", "y", "z"]})
    with pytest.warns(ZeroWidthIntervalWarning, match=r"zero width for 2 of 3 agents: x \(reason x\); z\. "):
        make_interval(lo, hi, prob=0.9, kind="percentile", zero_width_why=why)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroWidthIntervalWarning)
        make_interval(lo, hi, prob=0.9, kind="percentile")  # without reasons: only when all are points
        make_interval(lo, hi, prob=1.0, kind="feasible", zero_width_why=why)  # level 1: a point is right
