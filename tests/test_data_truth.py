"""The readers neither invent nor lose data (issue 24, item 10).

Repeated records, negative measures, missing cluster labels and the kind of
the scores. Each expected value is counted by hand from the tiny inputs built
here, with pandas / ``collections.Counter`` over the records as written, or
read from the shared real data's own files; never taken from hierbench.
"""

from __future__ import annotations

import json
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench._base import cluster_codes
from hierbench.data import EvalDataError
from hierbench.data import RepeatedRecordsWarning
from hierbench.data import _labels_from_text
from hierbench.data import _labels_to_text
from hierbench.data import check_eval_dataset
from hierbench.data import from_records
from hierbench.data import read_report
from hierbench.data import score_kind
from hierbench.data import to_counts
from hierbench.data import to_records
from hierbench.testing import simulate_eval

# ---------------------------------------------------------------- 1. repeated records


@pytest.fixture(scope="module")
def swe_rows(shared_data):
    path = shared_data / "swebench_bash_only" / "swebench_verified_bash_only_per_instance.csv.gz"
    return pd.read_csv(path, dtype={"model_name": str, "task_id": str, "folder": str})


SWE = {"agent": "model_name", "task": "task_id", "score": "resolved", "extra": {"cost": "cost"}}


def test_one_copied_record_of_a_one_run_per_cell_log_is_refused_naming_it(swe_rows):
    """SWE-bench bash-only is one run per (model, instance); one row written twice must not
    become a second run of that instance.
    """
    assert swe_rows.groupby(["model_name", "task_id"]).size().max() == 1  # the log as published
    n = len(swe_rows)
    copied = pd.concat([swe_rows, swe_rows.iloc[[17]]], ignore_index=True)
    with pytest.raises(
        EvalDataError,
        match=rf"duplicate records in DataFrame: 1 of {n + 1} records repeat an earlier record in every "
        rf"column \(e\.g\. rows \(first, copy\) \[\(17, {n}\)\]\).*no \(agent, task\) cell holds two "
        rf"different records and {n - 1} of {n} cells hold a single record.*duplicates='drop'",
    ):
        from_records(copied, **SWE)
    ds = from_records(copied, duplicates="drop", **SWE)
    assert ds.attrs["n_records_read"] == n + 1 and ds.attrs["n_records_kept"] == n
    assert json.loads(ds.attrs["not_kept"]) == {"exact copy of an earlier record (duplicates='drop')": 1}
    assert int(to_counts(ds).n_runs.max()) == 1


@pytest.fixture
def minimal_log():
    # one agent: t1 ran three times (1, 0, 1), t2 twice (0, 0): rows 2 and 4 repeat rows 0 and 3
    return pd.DataFrame({"agent": ["a"] * 5, "task": ["t1", "t1", "t1", "t2", "t2"],
                         "score": [1.0, 0.0, 1.0, 0.0, 0.0]})  # fmt: skip


def test_repeats_kept_as_runs_are_warned_named_and_counted(minimal_log, tmp_path, capsys):
    rows = list(zip(minimal_log.agent, minimal_log.task, minimal_log.score, strict=True))
    n_repeats = len(rows) - len(set(rows))
    assert n_repeats == 2
    with pytest.warns(RepeatedRecordsWarning, match=r"2 of 5 records in DataFrame repeat an earlier "
                      r"record in every column \(rows \[2, 4\]\); with no run column they are kept"):  # fmt: skip
        ds = from_records(minimal_log)
    assert ds.attrs["n_repeated_records"] == n_repeats == read_report(ds)["n_repeated_records"]
    assert to_counts(ds).n_runs.values.tolist() == [[3, 2]]
    # the CLI's read report shows the warning
    from hierbench.cli import main

    p = tmp_path / "m.csv"
    minimal_log.to_csv(p, index=False)
    assert main(["validate", str(p)]) == 0
    assert "RepeatedRecordsWarning: 2 of 5 records" in capsys.readouterr().err  # warnings: stderr


def test_duplicates_keep_says_they_are_runs_and_drop_keeps_one(minimal_log):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatedRecordsWarning)
        ds = from_records(minimal_log, duplicates="keep")
    assert ds.attrs["n_repeated_records"] == 2 and to_counts(ds).n_runs.values.tolist() == [[3, 2]]
    ds = from_records(minimal_log, duplicates="drop")
    assert to_counts(ds).n_runs.values.tolist() == [[2, 1]]
    assert ds.attrs["n_repeated_records"] == 0 and ds.attrs["n_records_kept"] == 3


@pytest.mark.parametrize("duplicates", ["refuse", "keep", "drop"])
def test_same_agent_task_run_twice_is_never_an_extra_run(duplicates):
    df = pd.DataFrame({"agent": ["a", "a", "a"], "task": ["t", "t", "u"], "run": [0, 0, 0],
                       "score": [1.0, 0.0, 1.0]})  # fmt: skip
    with pytest.raises(EvalDataError, match=r"duplicate \(agent, task, run\) in DataFrame: 2 records share a key, rows \[0, 1\]"):
        from_records(df, run="run", duplicates=duplicates)


# ---------------------------------------------------------------- 2. measures are never negative


@pytest.mark.parametrize("var", ["cost", "latency", "tokens", "steps"])
def test_negative_measures_are_refused_naming_the_rows(var):
    df = pd.DataFrame({"agent": ["a"] * 4, "task": ["t1", "t2", "t3", "t4"], "score": [1.0, 0, 1, 0],
                       "x": [0.1, -2.0, 3.0, -0.5]})  # fmt: skip
    with pytest.raises(EvalDataError, match=rf"`extra\['{var}'\]` column 'x' in DataFrame must be finite "
                       rf"and >= 0 .*2 rows are not, rows \[1, 3\] hold \[-2\.0, -0\.5\]"):  # fmt: skip
        from_records(df, extra={var: "x"})
    with pytest.raises(EvalDataError, match=r"rows \[2\] hold \[inf\]"):
        from_records(df.assign(x=[0.1, 2.0, np.inf, np.nan]), extra={var: "x"})
    ds = from_records(df.assign(x=[0.1, np.nan, 3.0, 0.0]), extra={var: "x"})  # NaN: not recorded
    assert np.isnan(ds[var].sel(task="t2").item()) and ds[var].sel(task="t4").item() == 0.0
    # a column that is no measure keeps its sign (a margin, a reward difference)
    assert from_records(df, extra={"margin": "x"}).margin.sel(task="t2").item() == -2.0


def test_a_dataset_with_a_negative_cost_is_refused_naming_the_cells():
    ds = from_records(pd.DataFrame({"agent": ["a", "b"], "task": ["t", "t"], "score": [1.0, 0.0],
                                    "cost": [0.5, 0.2]}), extra=["cost"])  # fmt: skip
    ds["cost"] = ds.cost * xr.DataArray([1.0, -1.0], dims="agent", coords={"agent": ["a", "b"]})
    with pytest.raises(EvalDataError, match=r"`data\.cost` must be finite and >= 0 .*1 values are not, "
                       r"e\.g\. \(agent, task, run, cost\) \[\('b', 't', 0, -0\.2\)\]"):  # fmt: skip
        check_eval_dataset(ds)


# ---------------------------------------------------------------- 3. missing cluster labels


@pytest.fixture
def clustered(tmp_path):
    p = tmp_path / "c.jsonl"
    rows = [("t1", "nan"), ("t2", None), ("t3", "x"), ("t4", None), ("t5", "x")]
    p.write_text("".join(json.dumps({"agent": "a", "task": t, "score": 1, "family": c}) + "\n"
                         for t, c in rows))  # fmt: skip
    return from_records(p, cluster="family")


def test_a_missing_label_is_no_cluster_and_a_nan_text_is_a_label(clustered):
    vals = clustered.cluster.values
    assert vals[0] == "nan" and isinstance(vals[0], str)  # the file wrote the text "nan"
    assert pd.isna(vals[1]) and pd.isna(vals[3]) and not isinstance(vals[1], str)
    assert clustered.attrs["n_tasks_without_cluster"] == 2 == read_report(clustered)["n_tasks_without_cluster"]
    # named by the column the records were read from (cluster="family"), not the coord `cluster`
    with pytest.warns(UserWarning, match=r"2 of 5 tasks have no 'family' label"):
        codes, _ = cluster_codes(clustered)
    # clusters: "nan", "x" (t3, t5), and t2, t4 each on its own
    assert len(set(codes.tolist())) == 4 and codes[2] == codes[4]


def test_missing_labels_survive_to_records_and_back(clustered):
    back = from_records(to_records(clustered), run="run", cluster="cluster")
    assert back.cluster.values[0] == "nan" and pd.isna(back.cluster.values[[1, 3]]).all()
    assert back.attrs["n_tasks_without_cluster"] == 2


def test_the_storage_convention_round_trips_through_a_text_file(clustered, tmp_path):
    """On disk a missing label is "" (never a label) and comes back missing; "nan" stays a label."""
    enc = clustered.assign_coords(cluster=("task", _labels_to_text(clustered.cluster.values)))
    assert enc.cluster.values.tolist() == ["nan", "", "x", "", "x"]
    enc.to_netcdf(tmp_path / "c.nc", engine="netcdf4")
    with xr.open_dataset(tmp_path / "c.nc", engine="netcdf4") as f:
        raw = f.load()
    back = raw.assign_coords(cluster=("task", _labels_from_text(raw.cluster.values)))
    assert back.cluster.values[0] == "nan" and pd.isna(back.cluster.values[[1, 3]]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert (cluster_codes(back)[0] == cluster_codes(clustered)[0]).all()


def test_an_empty_field_in_a_text_coord_is_missing_not_empty_text(tmp_path):
    p = tmp_path / "tc.csv"
    p.write_text("agent,task,score,family\na,t1,1,web\na,t2,0,\n")
    ds = from_records(p, task_coords=["family"])
    assert ds.family.values[0] == "web" and pd.isna(ds.family.values[1])


# ---------------------------------------------------------------- 4. the kind of the scores


KINDS = [([1.0, 0.0, 1.0, 0.0], "binary"), ([0.2, 0.5, 0.9, 0.7], "continuous"),
         ([1.0, 0.5, 0.0, 1.0], "mixed")]  # fmt: skip


@pytest.mark.parametrize(("scores", "kind"), KINDS)
def test_the_reader_records_the_score_kind_and_validate_agrees(scores, kind, tmp_path, capsys):
    from hierbench.cli import main

    df = pd.DataFrame({"agent": ["a", "a", "b", "b"], "task": ["t1", "t2", "t1", "t2"], "score": scores})
    ds = from_records(df)
    assert ds.attrs["score_kind"] == kind == read_report(ds)["score_kind"] == score_kind(ds)
    assert ds.attrs["binary"] == int(kind == "binary")
    p = tmp_path / "s.csv"
    df.to_csv(p, index=False)
    assert main(["validate", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["score_kind"] == kind


def test_score_kind_reads_the_values_not_a_stale_attr():
    ds = from_records(pd.DataFrame({"agent": ["a"] * 3, "task": ["t1", "t2", "t3"], "score": [0.5, 1, 0]}))
    assert ds.attrs["score_kind"] == "mixed"
    ds["score"] = (ds.score >= 1).astype(float)  # binarised after reading
    assert score_kind(ds) == read_report(ds)["score_kind"] == "binary"


def test_simulated_data_record_their_score_kind():
    assert simulate_eval(2, 5, 3, rng=0)[0].attrs["score_kind"] == "binary"
    assert simulate_eval(2, 5, 3, score_kind="continuous", rng=0)[0].attrs["score_kind"] == "continuous"
    # an error scores 0 under errors="fail": partial credit beside exact zeros
    ds, _ = simulate_eval(2, 40, 3, score_kind="continuous", p_error=0.2, rng=0)
    assert int(ds.error.sum()) > 0 and ds.attrs["score_kind"] == "mixed" == read_report(ds)["score_kind"]


def test_real_logs_record_their_kind(shared_data):
    from hierbench.data import load_metr
    from hierbench.data import load_swebench_bash_only

    path = shared_data / "metr" / "metr_all_runs_2025-02-27_19b0311.csv.gz"
    raw = pd.read_csv(path)
    s = raw.loc[raw.alias != "human", "score_binarized"]
    assert set(Counter(s)) <= {0, 1}
    assert load_metr().attrs["score_kind"] == "binary"
    assert load_swebench_bash_only().attrs["score_kind"] == "binary"
