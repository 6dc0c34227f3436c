"""Rubric scores: mean, distribution, bottom share; the judge-setup guard."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import JudgeSetupError
from hierbench.freq import check_same_judge
from hierbench.freq import compare_rubric_means
from hierbench.freq import rubric_summary


def _rubric(values, agents, attrs=None, **coords):
    arr = np.asarray(values, dtype=float)[..., None]
    return xr.Dataset(
        {"score": (("agent", "task", "run"), arr)},
        coords={"agent": agents, "task": [f"t{i}" for i in range(arr.shape[1])], **coords},
        attrs=attrs or {},
    )


def test_same_mean_different_products():
    # seed 003: "a mean of 3.5 can be everything a 3 or 4, or half 1s and half 5s"
    ds = _rubric([[3, 4] * 10, [1, 5] * 10], ["steady", "split"], {"judge_model": "j1"})
    r = rubric_summary(ds, bottom=2, n_resamples=300, rng=0)
    np.testing.assert_allclose(r.estimate.values, [3.5, 3.0])
    np.testing.assert_allclose(r.bottom_share.values, [0.0, 0.5])
    assert r.distribution.sel(agent="split", level=1).item() == pytest.approx(0.5)
    assert r.distribution.sum("level").values.tolist() == [1.0, 1.0]
    assert r.judge == {"judge_model": "j1"}
    # the interval of the split agent's mean is wider (same n, larger spread)
    w = (r.ci.sel(ci_bound="upper") - r.ci.sel(ci_bound="lower")).values
    assert w[1] > 3 * w[0]


def test_values_off_the_scale_are_refused():
    ds = _rubric([[3, 4, 6]], ["a"])
    with pytest.raises(ValueError, match=r"not levels of the scale \[1.0, 2.0, 3.0, 4.0, 5.0\]"):
        rubric_summary(ds)


def test_guard_refuses_different_or_unrecorded_judges():
    a = _rubric([[3, 4, 5, 4]], ["x"], {"judge_model": "gpt-4o", "rubric_version": "v2"})
    b = _rubric([[2, 4, 4, 3]], ["y"], {"judge_model": "claude", "rubric_version": "v2"})
    c = _rubric([[2, 4, 4, 3]], ["y"], {"judge_model": "gpt-4o", "rubric_version": "v2"})
    with pytest.raises(JudgeSetupError, match="judge_model differs"):
        compare_rubric_means([a, b], [("x", "y")])
    res = compare_rubric_means([a, c], [("x", "y")], n_resamples=200, rng=0)
    assert float(res.estimate.item()) == pytest.approx(
        np.mean([3, 4, 5, 4]) - np.mean([2, 4, 4, 3])
    )
    # a key recorded on one side only is a difference too
    d = _rubric([[2, 4, 4, 3]], ["y"], {"judge_model": "gpt-4o"})
    with pytest.raises(JudgeSetupError, match=r"rubric_version differs.*not recorded"):
        check_same_judge(a, d)
    with pytest.raises(JudgeSetupError, match="record no judge setup"):
        check_same_judge(_rubric([[1]], ["z"]))
    assert check_same_judge(_rubric([[1]], ["z"]), allow_unrecorded=True) == {}
    # within one dataset: a per-agent judge coord that varies is refused
    mixed = _rubric([[3, 4], [2, 5]], ["x", "y"], judge_model=("agent", ["gpt-4o", "claude"]))
    with pytest.raises(JudgeSetupError, match="mixes judge setups across agents"):
        compare_rubric_means(mixed)


def test_compare_rubric_means_pairs_tasks_by_label_and_refuses_unlabelled_ones_of_other_sizes():
    # audit H: datasets without task labels, 8 tasks against 5, reached xarray's alignment error;
    # with labels the paired difference is over the 5 shared tasks (numpy by hand)
    from hierbench._base import HierbenchError

    g = np.random.default_rng(4)
    s = g.integers(1, 6, (2, 8, 3)).astype(float)
    a = xr.Dataset({"score": (("agent", "task", "run"), s[:1])}, coords={"agent": ["A"]}, attrs={"judge_model": "x"})
    b = xr.Dataset({"score": (("agent", "task", "run"), s[1:, :5])}, coords={"agent": ["B"]}, attrs={"judge_model": "x"})
    with pytest.raises(HierbenchError, match=r"\[8, 5\] entries along 'task'.*no 'task' labels"):
        compare_rubric_means([a, b], n_resamples=50, rng=0)
    tasks = [f"t{i}" for i in range(8)]
    r = compare_rubric_means([a.assign_coords(task=tasks), b.assign_coords(task=tasks[:5])], n_resamples=50, rng=0)
    want = s[0, :5].mean(1).mean() - s[1, :5].mean(1).mean()
    assert float(r.estimate.squeeze()) == pytest.approx(want)
