"""scorecard on an eval dataset keeps every task and agent of its coords (audit T, finding 3).

Expected values by hand from the hand-built dataset below (pass@2 / pass^2 per task by math.comb).
"""

import math
import warnings
from math import comb

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import EmptySampleWarning
from hierbench.freq import scorecard

nan = np.nan
# A ran every task; B ran only the two "easy" tasks; C never ran
SCORES = [
    [[1, 0], [1, 1], [0, 0], [1, 1]],
    [[1, 1], [0, 1], [nan, nan], [nan, nan]],
    [[nan, nan]] * 4,
]


def _ds():
    return xr.Dataset(
        {"score": (("agent", "task", "run"), np.array(SCORES, float))},
        coords={"agent": ["A", "B", "C"], "task": ["t1", "t2", "t3", "t4"], "tag": ("task", ["easy", "easy", "hard", "hard"])},
    )


def _at(n, c, k=2):
    return 1 - comb(n - c, k) / comb(n, k)


def _hat(n, c, k=2):
    return comb(c, k) / comb(n, k)


def test_every_agent_and_task_of_the_dataset_is_kept_and_counted():
    with pytest.warns(EmptySampleWarning) as rec:
        cards = scorecard(_ds(), 2)
    said = [str(w.message) for w in rec if "no run" in str(w.message)]
    assert len(said) == 1 and "1 of 3 agents have no run in `runs` (C)" in said[0]
    assert list(cards) == ["A", "B", "C"]
    a, b, c = cards["A"], cards["B"], cards["C"]
    assert (a["tasks"], a["tasks_not_run"]) == (4, 0)
    assert a["pass_at_k"] == round((_at(2, 1) + _at(2, 2) + _at(2, 0) + _at(2, 2)) / 4, 4) == 0.75
    assert a["by_tag"] == {"easy": 1.0, "hard": 0.5}
    assert (b["tasks"], b["tasks_not_run"]) == (2, 2)
    assert b["pass_at_k"] == round((_at(2, 2) + _at(2, 1)) / 2, 4)
    assert b["pass_hat_k"] == round((_hat(2, 2) + _hat(2, 1)) / 2, 4) == 0.5
    # B ran no "hard" task: the tag is listed, NaN, not dropped
    assert list(b["by_tag"]) == ["easy", "hard"] and b["by_tag"]["easy"] == 1.0 and math.isnan(b["by_tag"]["hard"])
    assert b["flaky"] == ["t2"]
    assert (c["tasks"], c["tasks_not_run"], c["flaky"]) == (0, 4, [])
    assert math.isnan(c["pass_at_k"]) and math.isnan(c["pass_hat_k"])
    assert list(c["by_tag"]) == ["easy", "hard"] and all(math.isnan(v) for v in c["by_tag"].values())


def test_an_agent_dim_gives_agent_cards_even_when_one_agent_has_runs():
    with pytest.warns(EmptySampleWarning, match=r"\(C\)"):
        cards = scorecard(_ds().sel(agent=["A", "C"]), 2)
    assert list(cards) == ["A", "C"] and cards["A"]["pass_at_k"] == 0.75
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        one = scorecard(_ds().sel(agent=["A"]), 2)
    assert list(one) == ["A"] and one["A"]["tasks"] == 4


def test_without_an_agent_dim_the_card_is_flat_and_counts_the_tasks_not_run():
    card = scorecard(_ds().isel(agent=1), 2)  # agent B, the agent dim dropped
    assert card["tasks"] == 2 and card["tasks_not_run"] == 2
    assert card["pass_at_k"] == round((_at(2, 2) + _at(2, 1)) / 2, 4)


def test_a_task_without_a_tag_is_in_no_tag_as_in_success_rate():
    # a missing tag label read as a tag named 'nan' in scorecard, as no tag in success_rate
    from hierbench.freq import success_rate

    score = np.array([[[1.0], [0.0], [1.0]]])
    ds = xr.Dataset({"score": (("agent", "task", "run"), score)},
                     coords={"agent": ["a"], "task": ["t0", "t1", "t2"], "run": [0], "tag": ("task", ["x", None, "y"])})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        card = scorecard(ds, 1)["a"]
        rate = success_rate(ds, tag="tag")
    assert sorted(card["by_tag"]) == ["x", "y"] == sorted(str(t) for t in rate.by_tag["tag"].values)
    assert card["by_tag"] == {"x": 1.0, "y": 1.0} and card["pass_at_k"] == round(2 / 3, 4)
