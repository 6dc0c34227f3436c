"""scorecard: seed 001's contract against a direct math.comb implementation of the seed's steps."""

import math
from math import comb

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from hierbench.data import load_tau_bench_airline
from hierbench.freq._rates._intervals import EmptySampleWarning
from hierbench.freq._rates._scorecard import scorecard


def _reference(runs, k):
    """Seed 001, step by step, with exact binomial coefficients."""
    stats = {}
    for r in runs:
        s = stats.setdefault(r["task_id"], {"n": 0, "c": 0, "tag": r["tag"]})
        s["n"] += 1
        s["c"] += 1 if r["passed"] else 0
    scores, by_tag, hat, hat_tag, flaky = [], {}, [], {}, []
    for t, s in stats.items():
        ke = min(k, s["n"])
        v = 1.0 if s["n"] - s["c"] < ke else 1 - comb(s["n"] - s["c"], ke) / comb(s["n"], ke)
        h = comb(s["c"], ke) / comb(s["n"], ke)
        scores.append(v)
        hat.append(h)
        by_tag.setdefault(s["tag"], []).append(v)
        hat_tag.setdefault(s["tag"], []).append(h)
        if 0 < s["c"] < s["n"]:
            flaky.append(t)
    return {
        "tasks": len(stats),
        "tasks_with_fewer_runs_than_k": sum(s["n"] < k for s in stats.values()),
        "pass_at_k": round(sum(scores) / len(scores), 4),
        "pass_hat_k": round(sum(hat) / len(hat), 4),
        "by_tag": {g: round(sum(by_tag[g]) / len(by_tag[g]), 4) for g in sorted(by_tag)},
        "pass_hat_k_by_tag": {g: round(sum(hat_tag[g]) / len(hat_tag[g]), 4) for g in sorted(hat_tag)},
        "flaky": sorted(flaky),
    }


run_st = st.fixed_dictionaries(
    {"task_id": st.sampled_from([f"t{i}" for i in range(8)]), "tag": st.sampled_from(["db", "api", "ui"]),
     "passed": st.booleans()}
)


@settings(max_examples=60, deadline=None)
@given(runs=st.lists(run_st, min_size=1, max_size=40), k=st.integers(1, 6))
def test_matches_seed001_reference(runs, k):
    got = scorecard(runs, k)
    assert got == _reference(runs, k)
    assert list(got["by_tag"]) == sorted(got["by_tag"])  # sorted keys


def test_tag_from_first_run_and_flaky():
    runs = [
        {"task_id": "b", "tag": "z", "passed": True},
        {"task_id": "b", "tag": "a", "passed": False},  # later tag ignored
        {"task_id": "a", "tag": "a", "passed": True},
        {"task_id": "a", "tag": "a", "passed": True},
        {"task_id": "c", "tag": "a", "passed": False},
    ]
    card = scorecard(runs, 1)
    assert list(card["by_tag"]) == ["a", "z"]
    assert card["by_tag"] == {"a": 0.5, "z": 0.5}
    assert card["flaky"] == ["b"]
    assert card["tasks"] == 3


def test_several_agents_and_eval_dataset(shared_data):
    runs = [{"agent": ag, "task_id": t, "tag": "x", "passed": p}
            for ag, t, p in [("m2", "a", True), ("m1", "a", False), ("m1", "a", True), ("m2", "b", False)]]
    cards = scorecard(pd.DataFrame(runs), 2)
    assert list(cards) == ["m1", "m2"]
    assert cards["m1"] == _reference([r for r in runs if r["agent"] == "m1"], 2)
    ds = load_tau_bench_airline(shared_data)
    cards = scorecard(ds, 4)  # an agent dim: {agent: card} even for one agent
    assert list(cards) == [str(ds.agent.values[0])]
    card = cards[str(ds.agent.values[0])]
    assert card["tasks"] == 50 and card["tasks_not_run"] == 0 and card["pass_hat_k"] == 0.2  # tau-bench README pass^4
    assert card["pass_at_k"] == pytest.approx(_reference(
        [{"task_id": str(t), "tag": None, "passed": bool(s == 1)}
         for t, row in zip(ds.task.values, ds.score.isel(agent=0).values, strict=True) for s in row], 4
    )["pass_at_k"])


def test_errors_and_empty():
    with pytest.raises(ValueError, match=r"`k` must be an integer >= 1; got k=0"):
        scorecard([], 0)
    with pytest.raises(ValueError, match=r"records must be mappings with keys 'task_id' and 'passed'; records \[1\]"):
        scorecard([{"task_id": "a", "passed": True}, {"task": "b", "passed": True}], 1)
    with pytest.raises(ValueError, match=r"field 'passed' must be a bool \(or 0/1\); records \[0\]"):
        scorecard([{"task_id": "a", "passed": "yes"}], 1)
    with pytest.raises(ValueError, match=r"some records name an 'agent' and others do not; records without: \[1\]"):
        scorecard([{"agent": "x", "task_id": "a", "passed": 1}, {"task_id": "a", "passed": 0}], 1)
    with pytest.raises(TypeError, match=r"`runs` must be a list of run records"):
        scorecard("runs.jsonl", 1)
    with pytest.warns(EmptySampleWarning, match="no runs"):
        card = scorecard([], 3)
    assert card["tasks"] == 0 and math.isnan(card["pass_at_k"]) and card["flaky"] == []
