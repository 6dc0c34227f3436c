"""success_rate's macro averages every tag of the data, and untagged tasks are said (audit T finding 2)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench import HierbenchWarning
from hierbench import UndefinedWarning
from hierbench.freq import success_rate

nan = np.nan


def _ds(tags) -> xr.Dataset:
    """A passes 3 of 4 easy runs and no hard run (and task h2 twice); B ran only the easy tasks."""
    y = np.array([[[1, 1], [1, 0], [0, 0], [1, 1]],
                  [[1, 1], [1, 1], [nan, nan], [nan, nan]]], float)  # fmt: skip
    return xr.Dataset({"score": (("agent", "task", "run"), y)},
                      coords={"agent": ["A", "B"], "task": ["e1", "e2", "h1", "h2"],
                              "tag": ("task", np.array(tags, dtype=object))})  # fmt: skip


def test_macro_is_nan_where_an_agent_ran_no_task_of_a_tag_and_the_warning_names_it():
    ds = _ds(["easy", "easy", "hard", "hard"])
    with pytest.warns(UndefinedWarning, match=r"`macro` is NaN for 1 of 2 agents.*B \(no task of \['hard'\]\)") as rec:
        res = success_rate(ds)
    assert any("micro" in str(w.message) and "by_tag" in str(w.message) for w in rec)  # the remedy is named
    # by hand: A's easy rate (1 + 0.5) / 2 = 0.75, hard rate (0 + 1) / 2 = 0.5, macro 0.625
    assert res.macro.sel(agent="A").item() == pytest.approx((0.75 + 0.5) / 2)
    assert np.isnan(res.macro.sel(agent="B").item())  # not 1.0, B's easy rate alone
    assert res.micro.sel(agent="B").item() == pytest.approx(1.0)
    assert res.macro.attrs["n_tags"] == 2


@pytest.mark.parametrize("missing", [None, nan, ""])
def test_a_task_without_a_tag_is_counted_and_named_not_silently_left_out(missing):
    ds = _ds(["easy", "easy", "hard", missing]).sel(agent=["A"])
    with pytest.warns(HierbenchWarning, match=r"1 of 4 tasks have no 'tag' label \('h2'\).*not in `macro`"):
        res = success_rate(ds)
    # by hand: macro over the labelled tasks (easy 0.75, hard 0.0), micro over all four (0.625)
    assert res.macro.item() == pytest.approx(0.375)
    assert res.micro.item() == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert res.macro.attrs["n_untagged_tasks"] == 1
    assert list(res.by_tag["tag"].values) == ["easy", "hard"]


def test_every_agent_with_every_tag_gets_the_mean_over_tags_without_a_warning():
    y = np.array([[[1, 0], [1, 1], [0, 0]], [[0, 0], [1, 0], [1, 1]]], float)
    ds = xr.Dataset({"score": (("agent", "task", "run"), y)},
                    coords={"agent": ["A", "B"], "tag": ("task", np.array(["x", "x", "y"], dtype=object))})
    with warnings.catch_warnings():
        warnings.simplefilter("error", HierbenchWarning)
        res = success_rate(ds)
    # by hand: A (0.5 + 1) / 2 = 0.75 on x, 0 on y; B 0.25 on x, 1 on y
    np.testing.assert_allclose(res.macro.values, [(0.75 + 0.0) / 2, (0.25 + 1.0) / 2])
    assert res.macro.attrs == {"n_tags": 2, "n_untagged_tasks": 0}
