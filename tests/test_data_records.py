"""from_records / to_records: file formats, run numbering, error policy, bad input, round trip.

Expected values are written by hand from the tiny inputs built here (exact
enumeration of what each record must become), never copied from our output.
"""

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from hierbench.data import EvalDataError
from hierbench.data import InconsistentAttributeWarning
from hierbench.data import from_records
from hierbench.data import to_counts
from hierbench.data import to_records


@pytest.fixture
def frame():
    # agent a: t1 x3 runs, t2 x1 run; agent b: t1 x2 runs (never attempted t2)
    return pd.DataFrame(
        {
            "agent": ["a", "a", "a", "a", "b", "b"],
            "task": ["t1", "t1", "t2", "t1", "t1", "t1"],
            "score": [1.0, 0.0, 0.5, 1.0, 0.0, 1.0],
            "err": [False, False, False, False, True, False],
            "tag": ["x", "x", "y", "x", "x", "x"],
            "cost": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        }
    )


# ---------------------------------------------------------------- formats


def _write(df, path):
    if path.suffix == ".csv":
        df.to_csv(path, index=False)
    elif path.suffix == ".jsonl":
        df.to_json(path, orient="records", lines=True)
    else:
        df.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_paths_read_like_the_frame(frame, tmp_path, suffix):
    path = _write(frame, tmp_path / f"runs{suffix}")
    ds = from_records(path, error="err", tag="tag", extra=["cost"])
    assert ds.attrs["source"] == str(path)
    assert list(ds.agent.values) == ["a", "b"]
    assert list(ds.task.values) == ["t1", "t2"]
    assert list(ds.tag.values) == ["x", "y"]
    # runs numbered per cell in file order: a/t1 -> rows 0, 1, 3; b/t1 -> rows 4, 5
    np.testing.assert_array_equal(ds.score.sel(agent="a", task="t1").values, [1.0, 0.0, 1.0])
    np.testing.assert_array_equal(ds.score.sel(agent="a", task="t2").values, [0.5, np.nan, np.nan])
    np.testing.assert_array_equal(ds.score.sel(agent="b", task="t2").values, [np.nan] * 3)
    # the errored run (b/t1 run 0) counts as a failure under the default policy
    np.testing.assert_array_equal(ds.score.sel(agent="b", task="t1").values, [0.0, 1.0, np.nan])
    np.testing.assert_array_equal(ds.cost.sel(agent="a", task="t1").values, [0.1, 0.2, 0.4])
    assert ds.error.sum().item() == 1
    assert ds.attrs["n_records_read"] == 6
    assert ds.attrs["n_records_kept"] == 6
    assert json.loads(ds.attrs["not_kept"]) == {}
    c = to_counts(ds)
    np.testing.assert_array_equal(c.n_runs.values, [[3, 1], [2, 0]])
    np.testing.assert_array_equal(c.n_success.values, [[2.0, 0.5], [1.0, 0.0]])
    np.testing.assert_array_equal(c.n_error.values, [[0, 0], [1, 0]])


def test_integer_run_column_is_the_run_coordinate(frame):
    df = frame.assign(trial=[0, 2, 0, 5, 0, 1])
    ds = from_records(df, run="trial")
    assert list(ds.run.values) == [0, 1, 2, 5]
    assert ds.score.sel(agent="a", task="t1", run=5).item() == 1.0
    assert np.isnan(ds.score.sel(agent="a", task="t1", run=1).item())


def test_string_run_ids_are_numbered_per_cell_and_kept(frame):
    df = frame.assign(rid=["r1", "r2", "r3", "r4", "r5", "r6"])
    ds = from_records(df, run="rid")
    assert ds.sizes["run"] == 3
    assert list(ds.run_id.sel(agent="a", task="t1").values) == ["r1", "r2", "r4"]


@pytest.mark.parametrize(
    ("policy", "b_t1", "kept", "not_kept"),
    [
        ("fail", [0.0, 1.0], 6, {}),
        ("exclude", [np.nan, 1.0], 5, {"infrastructure error, excluded (errors='exclude')": 1}),
    ],
)
def test_error_policy_counts_affected_runs(frame, policy, b_t1, kept, not_kept):
    ds = from_records(frame, error="err", errors=policy)
    np.testing.assert_array_equal(ds.score.sel(agent="b", task="t1").values[:2], b_t1)
    assert ds.attrs["errors"] == policy
    assert ds.attrs["n_error_runs"] == 1
    assert ds.attrs["n_records_kept"] == kept
    assert json.loads(ds.attrs["not_kept"]) == not_kept
    assert to_counts(ds).n_runs.sel(agent="b", task="t1").item() == (2 if policy == "fail" else 1)


def test_text_error_column_unknown_text_is_refused_unless_mapped(frame):
    df = frame.assign(err=["", None, "timeout", "", "False", "OOM"])
    with pytest.raises(
        EvalDataError,
        match=r"`error` column 'err' in DataFrame must hold booleans.*2 rows hold other values "
        r"\['timeout' \(1 row\), 'OOM' \(1 row\)\], rows \[2, 5\].*error_values=",
    ):
        from_records(df, error="err")
    for how in ({"timeout": True, "oom": True}, "nonempty"):
        ds = from_records(df, error="err", error_values=how)
        assert ds.error.sum().item() == 2
        assert ds.error.sel(agent="a", task="t2", run=0).item()


def test_nan_score_allowed_on_errored_run(frame):
    df = frame.assign(score=[1.0, 0.0, 0.5, 1.0, np.nan, 1.0])
    ds = from_records(df, error="err", errors="exclude")
    assert np.isnan(ds.score.sel(agent="b", task="t1", run=0).item())
    assert ds.error.sel(agent="b", task="t1", run=0).item()


def test_a_tag_with_two_values_in_one_task_is_refused(frame):
    """A per-task column holding two labels in one task was read as its first label with only a
    warning; it is refused, naming the column, the rule, the count of such tasks and their values.
    """
    df = frame.assign(tag=["x", "z", "y", "x", "x", "x"])  # t1 holds x and z; t2 only y
    with pytest.raises(EvalDataError) as e:
        from_records(df, tag="tag")
    msg = str(e.value)
    assert "`tag` column 'tag' in DataFrame must hold one value per task" in msg
    assert "1 of 2 tasks hold two or more, e.g. 't1': 'x' and 'z'." in msg
    assert "a per-run variable, not a task attribute" in msg


def test_an_agent_coord_with_two_values_in_one_agent_is_refused(frame):
    df = frame.assign(scaffold=["react", "react", "react", "plain", "cot", "cot"])  # a: react, plain
    with pytest.raises(EvalDataError, match=r"`agent_coords` column 'scaffold' in DataFrame must hold one "
                       r"value per agent .*; 1 of 2 agents hold two or more, e.g. 'a': 'react' and 'plain'\."):
        from_records(df, agent_coords=["scaffold"])


def test_a_task_coord_of_per_run_numbers_is_refused_with_three_examples():
    """METR's `started_at` (a time per run) as a task attribute: every task holds several values.
    Counts and examples written from the frame: 4 tasks, each with two runs of different times.
    """
    df = pd.DataFrame({"agent": ["a"] * 8, "task": [f"t{i}" for i in range(4)] * 2,
                       "score": [1.0, 0.0] * 4, "t0": [10, 11, 12, 13, 20, 21, 22, 23]})
    with pytest.raises(EvalDataError) as e:
        from_records(df, task_coords=["t0"])
    msg = str(e.value)
    assert "4 of 4 tasks hold two or more, e.g. 't0': 10 and 20; 't1': 11 and 21; 't2': 12 and 22 (1 more)." in msg
    assert "leave it out of `task_coords` (a numeric one can be kept per run with `extra`)" in msg
    ds = from_records(df, extra=["t0"])  # the remedy it names reads
    assert ds["t0"].sel(agent="a", task="t3").values.tolist() == [13.0, 23.0]


def test_a_tag_given_in_some_records_of_a_task_is_the_tasks_counted_and_warned(frame):
    df = frame.assign(tag=["x", None, "y", "x", None, "x"])  # t1: x in 3 records, empty in 2
    with pytest.warns(InconsistentAttributeWarning, match=r"`tag` column 'tag' in DataFrame is empty in some "
                      r"records of 1 task \['t1'\] and holds one value in the others"):
        ds = from_records(df, tag="tag")
    assert ds.tag.values.tolist() == ["x", "y"]
    assert json.loads(ds.attrs["inconsistent_attributes"]) == {"task tag": 1}


def test_single_agent_log_and_annotations(frame):
    df = frame[frame.agent == "a"].assign(hit_limit=[1, 0, 0, 1])
    ds = from_records(df, agent=None, agent_name="gpt", annotations=["hit_limit"])
    assert list(ds.agent.values) == ["gpt"]
    assert ds.hit_limit.dtype == bool
    assert ds.hit_limit.sum().item() == 2
    assert json.loads(ds.attrs["annotations"]) == ["hit_limit"]


def test_single_agent_refuses_an_agent_column_of_several_agents(frame):
    # the audit: three models in the `agent` column read with agent=None became one agent with
    # three "runs" per task; frame's agent column holds 'a' and 'b', two agents
    with pytest.raises(EvalDataError, match=r"`agent_name`='X' with no agent column .* in DataFrame have an agent column 'agent' holding 2 distinct values \['a', 'b'\]: their runs would be merged .* \(`agent`='agent', without `agent_name`\)"):
        from_records(frame, agent=None, agent_name="X")
    # six agents: five named, the count says how many more
    many = frame.assign(agent=["a", "b", "c", "d", "e", "f"])
    with pytest.raises(EvalDataError, match=r"holding 6 distinct values \['a', 'b', 'c', 'd', 'e', \.\.\. \(1 more\)\]"):
        from_records(many, agent=None, agent_name="X")
    # an agent column of one agent (or none at all) is a one-agent log
    assert list(from_records(frame.assign(agent="a"), agent=None, agent_name="X").agent.values) == ["X"]
    assert list(from_records(frame.drop(columns="agent"), agent=None, agent_name="X").agent.values) == ["X"]


# ---------------------------------------------------------------- bad input


def test_missing_required_columns(frame):
    with pytest.raises(EvalDataError, match=r"missing required columns in DataFrame: `score`='reward', `error`='crashed'; the records have columns \['agent', 'task'"):
        from_records(frame, score="reward", error="crashed")


def test_duplicate_agent_task_run(frame):
    df = frame.assign(trial=[0, 1, 0, 1, 0, 1])  # a/t1 run 1 appears twice (rows 1, 3)
    with pytest.raises(EvalDataError, match=r"duplicate \(agent, task, run\) in DataFrame: 2 records share a key, rows \[1, 3\] \(e\.g\. \['a/t1/1', 'a/t1/1'\]\)"):
        from_records(df, run="trial")


def test_score_outside_unit_interval(frame):
    df = frame.assign(score=[1.0, 1.5, 0.5, -0.2, 0.0, 1.0])
    with pytest.raises(EvalDataError, match=r"`score` column 'score' in DataFrame must lie in \[0, 1\]; rows \[1, 3\] hold \[1\.5, -0\.2\]"):
        from_records(df)


def test_non_numeric_score(frame):
    df = frame.assign(score=["1", "0", "pass", "1", "0", "n/a"])
    with pytest.raises(EvalDataError, match=r"`score` column 'score' in DataFrame must be numeric; rows \[2\] hold \['pass'\]"):
        from_records(df)


def test_nan_score_without_error_flag(frame):
    df = frame.assign(score=[1.0, np.nan, 0.5, 1.0, np.nan, 1.0])
    # row 4 is flagged as an error, row 1 is not
    with pytest.raises(EvalDataError, match=r"missing \(NaN\) on 1 runs not flagged as infrastructure errors, rows \[1\]"):
        from_records(df, error="err")


@pytest.mark.parametrize("content", ["", "agent,task,score\n"])
def test_empty_file(tmp_path, content):
    path = tmp_path / "empty.csv"
    path.write_text(content)
    with pytest.raises(EvalDataError, match=r"(is an empty file: no records to read|holds no records)"):
        from_records(path)


def test_empty_jsonl_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(EvalDataError, match=r"empty\.jsonl\) is an empty file: no records to read"):
        from_records(path)


def test_malformed_json_lines_are_named(tmp_path):
    path = tmp_path / "runs.jsonl"
    path.write_text(
        '{"agent": "a", "task": "t1", "score": 1}\n'
        '{"agent": "a", "task": "t1", "score": \n'
        "\n"
        '{"agent": "a", "task": "t2", "score": 0}\n'
        "[1, 2]\n"
    )
    with pytest.raises(EvalDataError, match=r"2 malformed JSON lines .* line numbers \[2, 5\]\. Nothing was read"):
        from_records(path)


def test_bad_error_policy_and_unknown_file_type(frame, tmp_path):
    with pytest.raises(EvalDataError, match=r"`errors` must be 'fail' or 'exclude'; got 'drop'"):
        from_records(frame, errors="drop")
    path = tmp_path / "runs.xlsx"
    path.write_text("x")
    with pytest.raises(EvalDataError, match=r"unknown file type \.xlsx"):
        from_records(path)
    with pytest.raises(EvalDataError, match=r"`obj`: no such file"):
        from_records(tmp_path / "nope.csv")


def test_bad_error_column_values(frame):
    df = frame.assign(err=[0, 1, 2, 0, 0, 0])
    with pytest.raises(EvalDataError, match=r"`error` column 'err' in DataFrame must hold booleans, 0/1 .* rows hold other values \['2' \(1 row\)\], rows \[2\]"):
        from_records(df, error="err")


# ---------------------------------------------------------------- round trip


def _canonical(df: pd.DataFrame) -> pd.DataFrame:
    df = df[["agent", "task", "run", "score", "error", "cost", "tag"]].copy()
    df["agent"] = df["agent"].astype(str)
    df["task"] = df["task"].astype(str)
    df["tag"] = df["tag"].astype(str)
    df["run"] = df["run"].astype(np.int64)
    df["error"] = df["error"].astype(bool)
    return df.sort_values(["agent", "task", "run"]).reset_index(drop=True)


@st.composite
def run_frames(draw):
    """Unbalanced run records: ragged cells, agents skipping tasks, errors, partial credit."""
    n_agents = draw(st.integers(1, 4))
    n_tasks = draw(st.integers(1, 5))
    tags = {t: draw(st.sampled_from(["easy", "hard", "ü-λ"])) for t in range(n_tasks)}
    rows = []
    for a in range(n_agents):
        for t in range(n_tasks):
            runs = draw(st.sets(st.integers(0, 6), max_size=4))  # empty set: task never attempted
            for r in sorted(runs):
                err = draw(st.booleans())
                score = draw(st.one_of(st.sampled_from([0.0, 1.0]), st.floats(0, 1)))
                cost = draw(st.one_of(st.just(np.nan), st.floats(0, 100)))
                rows.append((f"agent {a}", f"task/{t}", r, score, err, cost, tags[t]))
    if not rows:
        rows.append(("agent 0", "task/0", 0, 1.0, False, 1.0, tags[0]))
    cols = ["agent", "task", "run", "score", "error", "cost", "tag"]
    order = draw(st.permutations(range(len(rows))))
    return pd.DataFrame([rows[i] for i in order], columns=cols)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=run_frames(), policy=st.sampled_from(["fail", "exclude"]))
def test_round_trip_is_lossless(df, policy):
    """DataFrame -> Dataset -> DataFrame returns every record unchanged.

    The error policy is applied on read, so the one field that changes is the
    score of an errored run: it becomes 0 under ``errors="fail"`` and NaN
    under ``errors="exclude"``; the record itself, its error flag and every
    other column come back exactly, and no run that did not happen appears.
    """
    ds = from_records(
        df, run="run", error="error", tag="tag", extra=["cost"], errors=policy, run_index="label"
    )
    back = _canonical(to_records(ds))
    expected = df.copy()
    expected.loc[expected["error"], "score"] = 0.0 if policy == "fail" else np.nan
    expected = _canonical(expected)
    pd.testing.assert_frame_equal(back, expected, check_dtype=False)
    assert ds.attrs["n_records_read"] == len(df)
    assert ds.attrs["n_error_runs"] == int(df["error"].sum())


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(df=run_frames())
def test_round_trip_without_run_column_keeps_file_order(df):
    """Without a run column runs are numbered 0, 1, ... per cell in file order, so the
    round trip returns, per (agent, task), the same records in the same order.
    """
    ds = from_records(
        df.drop(columns="run"), error="error", tag="tag", extra=["cost"], duplicates="keep"
    )
    back = to_records(ds)
    expected = df.drop(columns="run").copy()
    expected.loc[expected["error"], "score"] = 0.0
    expected["run"] = expected.groupby(["agent", "task"], sort=False).cumcount()
    pd.testing.assert_frame_equal(_canonical(back), _canonical(expected), check_dtype=False)
    assert ds.sizes["run"] == int(expected.groupby(["agent", "task"]).size().max())


def test_columns_named_like_roles_are_said_when_not_read():
    """An audit's log with `run`, `error` and `cluster` columns, read with the defaults: the summary said
    "0 infrastructure errors" where pandas counts 107, a repeated (agent, task, run 0) with opposite
    scores became an extra run, and nothing said the columns were not read.
    """
    import warnings

    from hierbench.data import UnreadColumnWarning

    df = pd.DataFrame({"agent": ["a", "a", "b", "b"], "task": ["t1", "t1", "t1", "t2"], "run": [0, 0, 0, 0],
                       "score": [1.0, 0.0, 1.0, 0.0], "error": [0, 1, 0, 0], "cluster": ["x", "x", "x", "y"]})  # fmt: skip
    with pytest.warns(UnreadColumnWarning, match=r"not read as them: 'run', 'error', 'cluster'") as rec:
        ds = from_records(df)
    text = str(rec[0].message)
    assert "name them: `run='run'`, `error='error'`, `cluster='cluster'`" in text and "no run counts as an infrastructure error" in text
    assert int(ds["score"].notnull().sum()) == 4 and "cluster" not in ds.coords  # read as they were told
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnreadColumnWarning)
        from_records(df.iloc[2:], run="run", error="error", cluster="cluster")  # named: nothing to say
        from_records(df.drop(columns=["run", "error", "cluster"]))  # none there
        from_records(df.iloc[2:], run="run", error="error", tag="cluster")  # read as another role


def test_labels_apart_only_by_a_run_of_spaces_are_warned():
    """An audit: agents 'gpt 4o', 'gpt  4o' (two spaces) and ' gpt 4o' read apart (right), but the warning
    named only the leading-space pair, and an HTML report shows all three as 'gpt 4o'.
    """
    from hierbench.data import SimilarLabelsWarning

    df = pd.DataFrame({"agent": ["gpt 4o", "gpt  4o", " gpt 4o", "other"], "task": ["t"] * 4, "score": [1.0, 0, 1, 0]})
    with pytest.warns(SimilarLabelsWarning, match=r"1 groups of labels differ only by spaces") as rec:
        ds = from_records(df)
    assert ds.sizes["agent"] == 4  # kept apart, as written
    text = str(next(w.message for w in rec if w.category is SimilarLabelsWarning))
    assert "'gpt  4o'" in text and "' gpt 4o'" in text and "'gpt 4o'" in text


def test_row_numbers_in_errors_say_how_they_are_counted(tmp_path):
    """An audit: 'rows [2] hold [1.7]' for a value on line 4 of a CSV (header, then records 0, 1, 2) and
    of a JSONL file with a blank line, while the JSONL reader's own malformed-line message gives file
    lines. The count is now said: records read, from 0, header and blank lines not among them.
    """
    csv = tmp_path / "r.csv"
    csv.write_text("agent,task,score\na,t1,1\na,t2,0\na,t3,1.7\n")
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text('{"agent":"a","task":"t1","score":1}\n{"agent":"a","task":"t2","score":0}\n\n'
                     '{"agent":"a","task":"t3","score":1.7}\n')  # fmt: skip
    for path, line in ((csv, 4), (jsonl, 4)):
        assert path.read_text().splitlines()[line - 1].count("1.7") == 1  # the value's file line, by hand
        with pytest.raises(EvalDataError, match=r"rows \[2\] hold \[1\.7\].*\(Rows are the records read, counted from 0"):
            from_records(path)
