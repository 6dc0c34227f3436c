"""summarize / read_report on tiny hand-built datasets (expected values by hand)."""

import numpy as np
import pandas as pd
import pytest

from hierbench.data import NoScoredRunsWarning
from hierbench.data import from_records
from hierbench.data import read_report
from hierbench.data import summarize


@pytest.fixture
def df():
    # a: t1 (1, 0, 1), t2 (0.5); b: t1 (error, 1); c: t1 (error only)
    return pd.DataFrame(
        {
            "agent": ["a", "a", "a", "a", "b", "b", "c"],
            "task": ["t1", "t1", "t2", "t1", "t1", "t1", "t1"],
            "score": [1.0, 0.0, 0.5, 1.0, np.nan, 1.0, np.nan],
            "err": [False, False, False, False, True, False, True],
            "lim": [0, 1, 0, 1, 0, 0, 0],
        }
    )


def test_summary_fail_policy(df):
    s = summarize(from_records(df, error="err", annotations=["lim"]))
    np.testing.assert_array_equal(s.n_tasks_attempted.values, [2, 1, 1])
    np.testing.assert_array_equal(s.n_missing_cells.values, [0, 1, 1])
    np.testing.assert_array_equal(s.n_runs.values, [4, 2, 1])
    np.testing.assert_array_equal(s.n_error.values, [0, 1, 1])
    np.testing.assert_allclose(s.error_rate.values, [0.0, 0.5, 1.0])
    np.testing.assert_allclose(s.mean_score.values, [(2 / 3 + 0.5) / 2, 0.5, 0.0])
    np.testing.assert_allclose(s.micro_mean_score.values, [2.5 / 4, 0.5, 0.0])
    np.testing.assert_array_equal(s.n_lim.values, [2, 0, 0])
    np.testing.assert_array_equal(s.n_tasks_scored.values, [2, 1, 1])  # errored runs score 0 under "fail"


def test_summary_exclude_policy_warns_on_agent_without_scores(df):
    ds = from_records(df, error="err", errors="exclude")
    with pytest.warns(NoScoredRunsWarning, match=r"agents \['c'\] have no scored run; their mean scores are NaN"):
        s = summarize(ds)
    np.testing.assert_array_equal(s.n_runs.values, [4, 2, 1])  # errored runs still happened
    np.testing.assert_array_equal(s.n_scored.values, [4, 1, 0])
    # c ran t1 but every run errored: attempted, not scored, and its per-task mean averages no task
    np.testing.assert_array_equal(s.n_tasks_attempted.values, [2, 1, 1])
    np.testing.assert_array_equal(s.n_tasks_scored.values, [2, 1, 0])
    np.testing.assert_allclose(s.mean_score.values, [(2 / 3 + 0.5) / 2, 1.0, np.nan])
    assert np.isnan(s.micro_mean_score.sel(agent="c").item())


def test_describe(df):
    r = read_report(from_records(df, error="err", annotations=["lim"]))
    assert (r["n_agents"], r["n_tasks"], r["n_runs_total"]) == (3, 2, 7)
    assert r["runs_per_cell"] == {"min": 1, "median": 1.5, "max": 3}  # cells: 3, 1, 2, 1
    assert r["n_missing_cells"] == 2 and r["n_cells"] == 6 and not r["balanced"]
    assert r["annotations"] == {"lim": 2}
    # 0.5 beside exact 0s and 1s: partial credit that is not continuous throughout
    assert r["score_kind"] == "mixed" and r["n_error_runs"] == 2
