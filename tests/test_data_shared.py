"""The shared real data sets load with the counts and means of PROVENANCE.md.

Numbers printed in PROVENANCE.md are written here with their source; every
other expected number is computed in the test by plain pandas on the raw file,
independently of our readers.
"""

import json

import numpy as np
import pandas as pd
import pytest

from hierbench.data import load_metr
from hierbench.data import load_swebench_bash_only
from hierbench.data import load_tau_bench_airline
from hierbench.data import read_report
from hierbench.data import summarize
from hierbench.data import to_counts

# ------------------------------------------------------------------ tau-bench


def test_tau_bench_airline_counts_and_published_pass1(shared_data):
    ds = load_tau_bench_airline()
    # PROVENANCE.md: gpt-4o, tool-calling, airline: 50 tasks x 4 trials, 200 rows
    assert dict(ds.score.sizes) == {"agent": 1, "task": 50, "run": 4}
    assert ds.attrs["n_records_read"] == 200
    assert ds.attrs["n_records_kept"] == 200
    assert int(ds.score.notnull().sum()) == 200
    # tau-bench README line 18: pass^1 = 0.420
    assert float(ds.score.mean()) == pytest.approx(0.420, abs=5e-4)
    r = read_report(ds)
    assert r["balanced"] and r["runs_per_cell"] == {"min": 4, "median": 4.0, "max": 4}


# ------------------------------------------------------------------ SWE-bench


@pytest.fixture(scope="module")
def swebench(shared_data):
    raw = pd.read_csv(shared_data / "swebench_bash_only" / "swebench_verified_bash_only_per_instance.csv.gz")
    reported = pd.read_csv(shared_data / "swebench_bash_only" / "swebench_leaderboard_reported_resolved.csv")
    return load_swebench_bash_only(), raw, reported


def test_swebench_counts(swebench):
    ds, raw, _ = swebench
    # PROVENANCE.md: 25 models x 500 tasks, 1 run each, 12,500 rows
    assert dict(ds.score.sizes) == {"agent": 25, "task": 500, "run": 1}
    assert ds.attrs["n_records_read"] == 12_500 == len(raw)
    assert int(ds.score.notnull().sum()) == 12_500
    # repositories as clusters: independent count from the instance ids
    assert ds.cluster.to_series().nunique() == raw["task_id"].str.split("__").str[0].nunique()


def test_swebench_means_match_leaderboard_computed_pct(swebench):
    ds, _, reported = swebench
    rep = reported.drop_duplicates("folder").set_index("folder")
    assert len(rep) == 25
    s = summarize(ds)
    folders = ds.folder.sel(agent=s.agent).values
    mean_pct = 100 * s.mean_score.values
    np.testing.assert_allclose(mean_pct, rep.loc[folders, "computed_resolved_pct"].to_numpy(), atol=1e-9)


def test_swebench_surfaces_the_claude_37_discrepancy(swebench):
    ds, _, reported = swebench
    rep = reported.drop_duplicates("folder").set_index("folder")
    s = summarize(ds)
    flagged = s.n_flag_disagrees_with_reported
    # the one flagged entry is claude-3-7-sonnet, every one of its 500 instances
    assert flagged.sum().item() == 500
    who = str(s.agent.values[flagged.values > 0][0])
    assert "3.7 Sonnet" in who
    # PROVENANCE.md: per-instance record gives 10.2% where the leaderboard reports 52.8%
    assert 100 * s.mean_score.sel(agent=who).item() == pytest.approx(10.2, abs=1e-9)
    assert rep.loc[ds.folder.sel(agent=who).item(), "reported_resolved_pct"] == pytest.approx(52.8)
    # everywhere else the per-instance mean is within rounding of the reported %
    others = s.agent.values[flagged.values == 0]
    diff = 100 * s.mean_score.sel(agent=others).values - rep.loc[
        ds.folder.sel(agent=others).values, "reported_resolved_pct"
    ].to_numpy()
    assert np.abs(diff).max() < 0.2


def test_swebench_flag_warning_names_a_remedy_that_runs(shared_data):
    """The loader's warning said ``ds.drop_sel(agent=[...])`` while attrs['flagged_agents'] is JSON (a
    list() of it gives characters); the remedy it now writes out runs and leaves the 24 unflagged agents.
    """
    import re
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = load_swebench_bash_only()
    said = next(str(w.message) for w in caught if "flags the records" in str(w.message))
    remedy = re.search(r"\((ds\.drop_sel\(.*?\)\)\))\) or read", said).group(1)
    kept = eval(remedy, {"json": json, "ds": ds})  # the words as written
    raw = pd.read_csv(shared_data / "swebench_bash_only" / "swebench_verified_bash_only_per_instance.csv.gz")
    flagged = set(raw.loc[raw["flag_per_instance_disagrees_with_reported"].astype(bool), "folder"])  # pandas by hand
    assert flagged and set(map(str, kept["folder"].values)) == set(map(str, ds["folder"].values)) - flagged


# ------------------------------------------------------------------ METR


@pytest.fixture(scope="module")
def metr(shared_data):
    raw = pd.read_csv(shared_data / "metr" / "metr_all_runs_2025-02-27_19b0311.csv.gz")
    return load_metr(include_human=True), raw


def test_metr_counts(metr):
    ds, raw = metr
    # PROVENANCE.md: 7,063 rows; 10 models + human baselines x 83 tasks in 36 families
    assert ds.attrs["n_records_read"] == 7_063
    assert ds.attrs["n_records_kept"] == 7_063
    assert int(ds.score.notnull().sum()) == 7_063
    assert ds.sizes["agent"] == 11 and "human" in ds.agent.values
    assert ds.sizes["task"] == 83
    assert ds.cluster.to_series().nunique() == 36
    # task families as clusters, checked task by task against the raw file
    fam = raw.groupby("task_id")["task_family"].first()
    assert (ds.cluster.to_series() == fam.reindex(ds.task.values).to_numpy()).all()
    # runs per cell: 1 to 96, median 8 (PROVENANCE.md), recomputed from the raw file
    per_cell = raw.groupby(["alias", "task_id"]).size()
    r = read_report(ds)
    assert r["runs_per_cell"] == {"min": 1, "median": 8.0, "max": 96}
    assert (per_cell.min(), per_cell.median(), per_cell.max()) == (1, 8.0, 96)
    assert r["n_missing_cells"] == 11 * 83 - len(per_cell)
    assert not r["balanced"]
    # per-agent micro means of the binarised score
    expected = raw.groupby("alias")["score_binarized"].mean()
    s = summarize(ds)
    np.testing.assert_allclose(
        s.micro_mean_score.values, expected.reindex(s.agent.values).to_numpy(), rtol=1e-12
    )
    # per-agent macro means: mean over tasks of the per-task mean
    macro = raw.groupby(["alias", "task_id"])["score_binarized"].mean().groupby("alias").mean()
    np.testing.assert_allclose(s.mean_score.values, macro.reindex(s.agent.values).to_numpy(), rtol=1e-12)


def test_metr_usage_limits_are_an_annotation_not_an_error(metr):
    ds, raw = metr
    # issue 2 (from the raw file): 1,912 usageLimits runs, 51 of them successes; the score stands
    hit = raw["fatal_error_from"].eq("usageLimits")
    assert hit.sum() == 1_912 and raw.loc[hit, "score_binarized"].sum() == 51
    assert int(ds.usage_limit.sum()) == 1_912
    assert int((ds.usage_limit & (ds.score == 1)).sum()) == 51
    assert int(ds.error.sum()) == 0
    assert ds.attrs["n_error_runs"] == 0
    s = summarize(ds)
    ul = raw.assign(ul=raw["fatal_error_from"].eq("usageLimits")).groupby("alias")["ul"].sum()
    np.testing.assert_array_equal(s.n_usage_limit.values, ul.reindex(s.agent.values).to_numpy())
    assert read_report(ds)["annotations"] == {"usage_limit": 1_912}


def test_metr_without_humans_reports_what_was_not_kept(metr):
    _, raw = metr
    n_human = int((raw["alias"] == "human").sum())
    ds = load_metr()
    assert ds.sizes["agent"] == 10 and "human" not in ds.agent.values
    assert ds.attrs["n_records_read"] == 7_063
    assert ds.attrs["n_records_kept"] == 7_063 - n_human
    assert json.loads(ds.attrs["not_kept"]) == {"human baseline rows (include_human=False)": n_human}
    c = to_counts(ds)
    assert int(c.n_runs.sum()) == 7_063 - n_human


def test_metr_continuous_score_as_recorded(metr):
    _, raw = metr
    ds = load_metr(score="score", include_human=True)
    s = summarize(ds)
    expected = raw.groupby("alias")["score"].mean()
    np.testing.assert_allclose(
        s.micro_mean_score.values, expected.reindex(s.agent.values).to_numpy(), rtol=1e-12
    )
    # partial credit beside exact 0s and 1s, counted from the CSV: "mixed", and the reader says so
    sc = raw["score"].dropna()
    assert ((sc > 0) & (sc < 1)).any() and sc.isin([0.0, 1.0]).any()
    assert read_report(ds)["score_kind"] == ds.attrs["score_kind"] == "mixed"


def test_shared_data_dir_resolution(shared_data, tmp_path, monkeypatch):
    from hierbench.data import shared_data_dir

    monkeypatch.chdir(tmp_path)  # ../shared/data from here does not exist
    monkeypatch.delenv("HIERBENCH_SHARED_DATA", raising=False)
    found = shared_data_dir()
    assert (found / "PROVENANCE.md").is_file()
    monkeypatch.setenv("HIERBENCH_SHARED_DATA", str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError, match=r"shared data folder not found .*nope.*HIERBENCH_SHARED_DATA"):
        shared_data_dir()
