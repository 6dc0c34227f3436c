"""Input integrity of the readers (issue 11): nothing merged, coerced, invented or dropped silently.

Each test is a reproducer of one class of silent corruption or foreign
traceback. Expected values are counted by hand or with plain Python
(``collections.Counter`` over the records as written), never with hierbench.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from hierbench._base import PartialCreditError
from hierbench._base import cluster_codes
from hierbench._base import counts
from hierbench.data import EvalDataError
from hierbench.data import counts_from_dask
from hierbench.data import counts_from_parquet
from hierbench.data import from_pair_counts
from hierbench.data import from_records
from hierbench.data import read_battles
from hierbench.data import read_report
from hierbench.data import summarize
from hierbench.data import to_counts

# ---------------------------------------------------------------- 1. labels as written


def test_zero_padded_task_is_not_merged_with_its_number(tmp_path):
    p = tmp_path / "z.csv"
    p.write_text("agent,task,score\na,001,1\na,1,0\n")
    ds = from_records(p)
    assert sorted(ds.task.values.tolist()) == ["001", "1"]
    c = to_counts(ds)
    assert c.n_runs.sel(agent="a", task="001").item() == 1
    assert c.n_runs.sel(agent="a", task="1").item() == 1
    assert c.n_success.sel(agent="a", task="001").item() == 1.0


def test_csv_labels_keep_their_text(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text('agent,task,score\n007,1.0,1\n7,1,0\n" 7",NA,1\n')
    ds = from_records(p)
    assert sorted(ds.agent.values.tolist()) == [" 7", "007", "7"]
    assert sorted(ds.task.values.tolist()) == ["1", "1.0", "NA"]


def test_jsonl_number_and_text_that_read_the_same_are_refused(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"agent": "a", "task": 7, "score": 1}\n{"agent": "a", "task": "7", "score": 0}\n')
    with pytest.raises(EvalDataError, match=r"`task` column 'task' in .*r\.jsonl mixes numbers and text .*'7' as number and text.*rows \[0, 1\]"):
        from_records(p)


def test_jsonl_numbers_keep_their_text(tmp_path):
    p = tmp_path / "r.jsonl"
    p.write_text('{"agent": 1, "task": 1.50, "score": 1}\n{"agent": 1, "task": 1.5e0, "score": 0}\n')
    ds = from_records(p)
    assert ds.agent.values.tolist() == ["1"]
    assert sorted(ds.task.values.tolist()) == ["1.50", "1.5e0"]


def test_dataframe_with_mixed_agent_types_is_refused():
    df = pd.DataFrame({"agent": [1, "1", "b"], "task": ["t", "t", "t"], "score": [1.0, 0.0, 1.0]})
    with pytest.raises(EvalDataError, match=r"`agent` column 'agent' in DataFrame mixes numbers and text.*'1' as number and text"):
        from_records(df)


def test_parquet_integer_ids_read_as_their_decimal_text(tmp_path):
    p = tmp_path / "r.parquet"
    pd.DataFrame({"agent": [10, 10, 2], "task": [1, 1, 30], "score": [1.0, 0.0, 1.0]}).to_parquet(p)
    ds = from_records(p)
    assert ds.agent.values.tolist() == ["10", "2"]
    assert ds.task.values.tolist() == ["1", "30"]
    c = counts_from_parquet(p)
    assert c.agent.values.tolist() == ["10", "2"] and c.task.values.tolist() == ["1", "30"]
    assert c.n_runs.sel(agent="10", task="1").item() == 2


def _folder_int_and_text(tmp_path, text):
    d = tmp_path / "log"
    d.mkdir()
    pd.DataFrame({"agent": ["a", "a"], "task": [1, 2], "score": [1.0, 0.0]}).to_parquet(d / "p1.parquet")
    pd.DataFrame({"agent": ["a"], "task": [text], "score": [0.0]}).to_parquet(d / "p2.parquet")
    return d


def test_parquet_folder_number_in_one_file_text_in_another(tmp_path):
    d = _folder_int_and_text(tmp_path, "1")
    with pytest.raises(EvalDataError, match=r"`task` column 'task' in .*log is stored as numbers in some files and as text in others.*'1' as number and text"):
        counts_from_parquet(d)
    with pytest.raises(EvalDataError, match=r"`task` column 'task' in .*log \(stored as int64 in \['p1\.parquet'\]; .* in \['p2\.parquet'\]\) mixes numbers and text.*'1' as number and text"):
        from_records(d)


def test_parquet_folder_zero_padded_text_stays_apart(tmp_path):
    d = _folder_int_and_text(tmp_path, "001")
    c = counts_from_parquet(d)
    assert c.task.values.tolist() == ["001", "1", "2"]
    assert c.n_runs.sel(agent="a").values.tolist() == [1, 1, 1]
    ds = from_records(d)
    assert sorted(ds.task.values.tolist()) == ["001", "1", "2"]


def test_dask_mixed_ids_across_partitions_refused():
    import dask

    df = pd.DataFrame({"agent": ["a", "a"], "task": pd.Series([1, "1"], dtype=object), "score": [1.0, 0.0]})
    with dask.config.set({"dataframe.convert-string": False}):  # else dask itself makes both "1"
        ddf = dd.from_pandas(df, npartitions=2)
        with pytest.raises(EvalDataError, match=r"`task` column 'task' in dask DataFrame mixes numbers and text.*'1' as number and text"):
            counts_from_dask(ddf)


def test_read_battles_keeps_names_as_written(tmp_path):
    p = tmp_path / "b.csv"
    p.write_text("left,right,winner\n001,1,left\n1,01,tie\n")
    b = read_battles(p)
    assert b.agent.values.tolist() == ["001", "01", "1"]
    assert b.agent_a.values.tolist() == ["001", "1"]
    df = pd.DataFrame({"left": [1, "x"], "right": ["1", "y"], "winner": ["left", "right"]})
    with pytest.raises(EvalDataError, match=r"`left` column 'left' and `right` column 'right' in DataFrame write the same agent as a number in one and as text in the other \(\['1'\]\)"):
        read_battles(df)
    q = tmp_path / "c.csv"
    q.write_text("a,b,wa,wb\n01,1,3,2\n")
    c = from_pair_counts(q, agent_a="a", agent_b="b", wins_a="wa", wins_b="wb")
    assert c.agent.values.tolist() == ["01", "1"]


# ---------------------------------------------------------------- 2. error columns


VOCAB = {
    True: True, False: False, np.int64(1): True, np.int64(0): False, 1.5 - 0.5: True, 0.5 - 0.5: False,
    "true": True, "TRUE": True, " yes ": True, "Y": True, "1": True, "1.0": True, "error": True,
    "false": False, "No": False, "n": False, "0": False, "0.0": False, "ok": False, "OK": False,
    "": False, None: False, "none": False, "null": False, "NaN": False, "n/a": False,
}  # fmt: skip


@pytest.mark.parametrize("value", list(VOCAB), ids=lambda v: f"{type(v).__name__}:{v!r}")
def test_error_vocabulary(value):
    df = pd.DataFrame({"agent": ["a", "a"], "task": ["t", "u"], "score": [1.0, 1.0],
                       "err": pd.Series([value, False], dtype=object)})
    ds = from_records(df, error="err")
    assert bool(ds.error.sel(task="t").any()) is VOCAB[value]


def test_issue_example_ok_no_success_are_not_errors_unless_said(tmp_path):
    p = tmp_path / "e.csv"
    p.write_text("agent,task,score,status\na,t1,1,ok\na,t2,1,no\na,t3,0,0.0\na,t4,1,success\n")
    with pytest.raises(EvalDataError, match=r"`error` column 'status' in .*e\.csv must hold booleans.*1 rows hold other values \['success' \(1 row\)\], rows \[3\]\..*error_values="):
        from_records(p, error="status")
    ds = from_records(p, error="status", error_values={"success": False})
    assert int(ds.error.sum()) == 0
    s = summarize(ds)
    assert s.mean_score.item() == pytest.approx(0.75) and s.error_rate.item() == 0.0


def test_unknown_error_text_refused_by_the_large_readers(tmp_path):
    df = pd.DataFrame({"agent": ["a"] * 3, "task": ["t", "u", "v"], "score": [1.0, 0.0, 1.0],
                       "err": ["ok", "timeout", "crash"]})
    df.to_parquet(tmp_path / "e.parquet")
    msg = r"`error` column 'err' must hold booleans.*2 rows hold other values \[('timeout'|'crash') \(1 row\), ('crash'|'timeout') \(1 row\)\]"
    with pytest.raises(EvalDataError, match=msg):
        counts_from_parquet(tmp_path / "e.parquet", error="err")
    with pytest.raises(EvalDataError, match=msg):
        counts_from_dask(dd.from_pandas(df, npartitions=2), error="err")
    for how in ({"timeout": True, "crash": True}, "nonempty"):
        c = counts_from_parquet(tmp_path / "e.parquet", error="err", error_values=how)
        assert c.n_error.values.tolist() == [[0, 1, 1]]
        c = counts_from_dask(dd.from_pandas(df, npartitions=2), error="err", error_values=how)
        assert c.n_error.values.tolist() == [[0, 1, 1]]


# ---------------------------------------------------------------- 3. partial credit


def test_partial_credit_stays_partial_and_binary_counts_refuse_it(tmp_path):
    df = pd.DataFrame({"agent": ["a"] * 4, "task": ["t"] * 4, "run": [0, 1, 2, 3], "score": [0.5] * 4})
    ds = from_records(df, run="run")
    assert ds.attrs["binary"] == 0
    assert ds.score.values.ravel().tolist() == [0.5] * 4
    assert to_counts(ds).n_success.item() == 2.0 and to_counts(ds).attrs["binary"] == 0
    with pytest.raises(PartialCreditError):
        counts(ds)
    df.to_parquet(tmp_path / "p.parquet")
    c = counts_from_parquet(tmp_path / "p.parquet", run="run")
    assert c.n_success.item() == 2.0 and c.attrs["binary"] == 0
    with pytest.raises(PartialCreditError):
        counts(c)
    c = counts_from_dask(dd.from_pandas(df, npartitions=2), run="run")
    assert c.n_success.item() == 2.0 and c.attrs["binary"] == 0
    assert from_records(df.assign(score=[1.0, 0.0, 1.0, 1.0]), run="run").attrs["binary"] == 1


# ---------------------------------------------------------------- 4. summarize under exclude


def test_summarize_error_rate_under_exclude_is_errors_over_runs_attempted():
    df = pd.DataFrame({"agent": ["a"] * 3, "task": ["t"] * 3, "run": [0, 1, 2],
                       "score": [1.0, np.nan, np.nan], "err": [False, True, True]})
    s = summarize(from_records(df, run="run", error="err", errors="exclude"))
    assert s.n_runs.item() == 3 and s.n_error.item() == 2
    assert s.error_rate.item() == pytest.approx(2 / 3)
    assert s.mean_score.item() == 1.0


# ---------------------------------------------------------------- 5. duplicates and run ids


@pytest.fixture
def log():
    rng = np.random.default_rng(5)
    n = 60
    return pd.DataFrame({
        "agent": rng.choice(["a", "b", "c"], n), "task": rng.choice([f"t{i}" for i in range(8)], n),
        "score": rng.integers(0, 2, n).astype(float),
    })  # fmt: skip


def test_log_concatenated_twice_is_refused(log, tmp_path):
    twice = pd.concat([log, log], ignore_index=True)
    rows = list(zip(twice.agent, twice.task, twice.score, strict=True))
    n_repeats = len(rows) - len(set(rows))  # records equal to an earlier one, counted by hand
    p = tmp_path / "twice.csv"
    twice.to_csv(p, index=False)
    with pytest.raises(EvalDataError, match=rf"duplicate records in .*twice\.csv: {n_repeats} of 120 records repeat an earlier record.*multiple of 2 times.*would make 60 of them copies.*`run`.*duplicates='drop'"):
        from_records(p)
    sorted_twice = twice.sort_values(["agent", "task"])  # the copies need not be in blocks
    with pytest.raises(EvalDataError, match=r"duplicate records in DataFrame"):
        from_records(sorted_twice)
    twice.to_parquet(tmp_path / "twice.parquet")
    with pytest.raises(EvalDataError, match=rf"duplicate records in .*twice\.parquet: {n_repeats} of 120.*60 of them copies"):
        counts_from_parquet(tmp_path / "twice.parquet")
    with pytest.raises(EvalDataError, match=rf"duplicate records in dask DataFrame: {n_repeats} of 120.*60 of them copies"):
        counts_from_dask(dd.from_pandas(twice, npartitions=3))


def test_copies_with_a_run_id_column_are_refused_and_drop_keeps_one(tmp_path):
    df = pd.DataFrame({"agent": ["a"] * 4, "task": ["t", "t", "u", "u"], "score": [1.0, 0.0, 1.0, 1.0],
                       "uuid": ["r1", "r2", "r3", "r4"]})
    appended = pd.concat([df, df.iloc[:2]], ignore_index=True)  # a resumed log appended again
    with pytest.raises(EvalDataError, match=r"2 of 6 records repeat .*column 'uuid' tells the distinct records apart"):
        from_records(appended)
    ds = from_records(appended, duplicates="drop")
    assert to_counts(ds).n_runs.values.tolist() == [[2, 2]]
    assert json.loads(ds.attrs["not_kept"]) == {"exact copy of an earlier record (duplicates='drop')": 2}
    assert ds.attrs["n_records_read"] == 6 and ds.attrs["n_records_kept"] == 4
    appended.to_parquet(tmp_path / "a.parquet")
    with pytest.raises(EvalDataError, match=r"column 'uuid' tells the distinct records apart"):
        counts_from_parquet(tmp_path / "a.parquet")
    c = counts_from_parquet(tmp_path / "a.parquet", duplicates="drop")
    assert c.n_runs.values.tolist() == [[2, 2]] and c.attrs["n_records_kept"] == 4


def test_repeated_records_of_a_minimal_log_are_runs(log):
    # tau-bench style: identical (agent, task, score) records are different runs when nothing
    # says otherwise; counted by hand with Counter
    ds = from_records(log)
    c = to_counts(ds)
    for (a, t), n in Counter(zip(log.agent, log.task, strict=True)).items():
        assert c.n_runs.sel(agent=a, task=t).item() == n


def test_duplicate_agent_task_run_refused_by_counts_from_parquet(tmp_path):
    df = pd.DataFrame({"agent": ["a", "a", "a"], "task": ["t", "t", "t"], "run": [0, 1, 1], "score": [1.0, 0.0, 1.0]})
    with pytest.raises(EvalDataError, match=r"duplicate \(agent, task, run\) in DataFrame: 2 records share a key"):
        from_records(df, run="run")
    df.to_parquet(tmp_path / "d.parquet")
    with pytest.raises(EvalDataError, match=r"duplicate \(agent, task, run\) in .*d\.parquet: 2 records share a key \(e\.g\. \['a/t/1 x2'\]\)"):
        counts_from_parquet(tmp_path / "d.parquet", run="run")
    with pytest.raises(EvalDataError, match=r"duplicate \(agent, task, run\) in dask DataFrame: 2 records"):
        counts_from_dask(dd.from_pandas(df, npartitions=2), run="run")


def test_global_run_ids_are_refused_with_the_cube_figures():
    agents, tasks, runs = 10, 200, 10
    n = agents * tasks * runs
    df = pd.DataFrame({
        "agent": np.repeat([f"m{i}" for i in range(agents)], tasks * runs),
        "task": np.tile(np.repeat([f"t{j}" for j in range(tasks)], runs), agents),
        "run": np.arange(n),  # one global id per run: 0 .. 19,999
        "score": np.random.default_rng(0).integers(0, 2, n).astype(float),
    })  # fmt: skip
    with pytest.raises(EvalDataError, match=r"`run` column 'run' in DataFrame holds 20000 distinct run labels, but no \(agent, task\) cell has more than 10 runs.*10 x 200 x 20000 cube \(40,000,000 slots.*0\.05% filled\).*run_index='within_cell'"):
        from_records(df, run="run")
    ds = from_records(df, run="run", run_index="within_cell")
    assert dict(ds.sizes) == {"agent": 10, "task": 200, "run": 10}
    assert ds.run_id.sel(agent="m1", task="t0").values.tolist() == [str(i) for i in range(2000, 2010)]
    assert int(to_counts(ds).n_runs.sum()) == n


def test_shared_integer_runs_stay_the_run_coordinate():
    df = pd.DataFrame({"agent": ["a", "a", "b"], "task": ["t", "t", "t"], "run": [3, 5, 5], "score": [1.0, 0.0, 1.0]})
    ds = from_records(df, run="run")
    assert ds.run.values.tolist() == [3, 5]
    text = df.assign(run=["03", "5", "5"])  # not canonical integers: numbered per cell, kept
    ds = from_records(text, run="run")
    assert ds.run.values.tolist() == [0, 1]
    assert ds.run_id.sel(agent="a", task="t").values.tolist() == ["03", "5"]
    with pytest.raises(EvalDataError, match=r"`run_index='label'` needs integer run labels; `run` column 'run' in DataFrame holds \['03'\]"):
        from_records(text, run="run", run_index="label")


# ---------------------------------------------------------------- 6. missing cluster labels


def test_missing_cluster_labels_stay_missing_and_are_counted(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("agent,task,score,repo\na,t1,1,x\na,t2,0,\na,t3,1,x\na,t4,1,\n")
    ds = from_records(p, cluster="repo")
    assert ds.cluster.values[[0, 2]].tolist() == ["x", "x"]
    assert pd.isna(ds.cluster.values[[1, 3]]).all()  # missing, not "" and not one shared label
    assert ds.attrs["n_tasks_without_cluster"] == 2
    assert read_report(ds)["n_tasks_without_cluster"] == 2
    with pytest.warns(UserWarning, match=r"2 of 4 tasks have no 'repo' label"):  # the column read
        codes, _ = cluster_codes(ds)
    assert len(set(codes.tolist())) == 3  # x, and each unlabelled task on its own


# ---------------------------------------------------------------- 7. files that cannot be decoded


def _csv_bytes():
    return b"agent,task,score\n" + b"".join(f"a,t{i},{i % 2}\n".encode() for i in range(200))


def test_truncated_gzip_names_the_file(tmp_path):
    p = tmp_path / "runs.csv.gz"
    p.write_bytes(gzip.compress(_csv_bytes())[:-30])
    with pytest.raises(EvalDataError, match=r"`obj` \(.*runs\.csv\.gz\) is truncated"):
        from_records(p)
    j = tmp_path / "runs.jsonl.gz"
    j.write_bytes(gzip.compress(b'{"agent": "a", "task": "t", "score": 1}\n' * 50)[:-12])
    with pytest.raises(EvalDataError, match=r"`obj` \(.*runs\.jsonl\.gz\) is truncated"):
        from_records(j)


def test_a_gzip_cut_inside_its_header_is_truncated_too(tmp_path):
    # a property test found it: cut to its first byte (b"\x1f", half of gzip's signature) the file
    # was called "not a gzipped file"; every cut shorter than the 10-byte header is a truncation
    whole = gzip.compress(_csv_bytes())
    for keep in range(1, 12):
        p = tmp_path / f"cut{keep}.csv.gz"
        p.write_bytes(whole[:keep])
        with pytest.raises(EvalDataError, match=rf"`obj` \(.*cut{keep}\.csv\.gz\) is truncated"):
            from_records(p)
    other = tmp_path / "other.csv.gz"
    other.write_bytes(b"x")  # one byte that is not gzip's: not a truncated gzip file
    with pytest.raises(EvalDataError, match=r"could not be read as \.csv\.gz") as info:
        from_records(other)
    assert "truncated" not in str(info.value)


def test_latin1_csv_says_encoding_and_reads_with_it(tmp_path):
    p = tmp_path / "l.csv"
    p.write_bytes("agent,task,score\nJosé,t1,1\nJosé,t2,0\n".encode("latin-1"))
    with pytest.raises(EvalDataError, match=r"`obj` \(.*l\.csv\) is not valid utf-8 text: it holds bytes such as b'\\xe9'.*encoding='latin-1'"):
        from_records(p)
    assert from_records(p, encoding="latin-1").agent.values.tolist() == ["José"]
    with pytest.raises(EvalDataError, match=r"`encoding`: unknown text encoding 'klingon'"):
        from_records(p, encoding="klingon")


def test_corrupt_parquet_names_the_file(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    pd.DataFrame({"agent": ["a"], "task": ["t"], "score": [1.0]}).to_parquet(d / "good.parquet")
    (d / "bad.parquet").write_bytes(b"PAR1" + b"\x00" * 64 + b"PAR1")
    with pytest.raises(EvalDataError, match=r"bad\.parquet"):
        from_records(d / "bad.parquet")
    with pytest.raises(EvalDataError, match=r"bad\.parquet"):
        from_records(d)
    with pytest.raises(EvalDataError, match=r"`path_or_folder`: '.*bad\.parquet' could not be read as Parquet"):
        counts_from_parquet(d)


def test_malformed_csv_names_the_file(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text('agent,task,score\na,t,1\na,"t,0\n')
    with pytest.raises(EvalDataError, match=r"`obj` \(.*m\.csv\) could not be read"):
        from_records(p)


# ---------------------------------------------------------------- 9. the CLI


@pytest.mark.parametrize(
    "name, content, ok",
    [
        ("z.csv", b"agent,task,score\na,001,1\na,1,0\n", True),
        ("bad_err.csv", b"agent,task,score,e\na,t,1,success\n", False),
        ("trunc.csv.gz", gzip.compress(_csv_bytes())[:-40], False),
        ("latin.csv", "agent,task,score\nJosé,t,1\n".encode("latin-1"), False),
        ("mixed.jsonl", b'{"agent": "a", "task": 7, "score": 1}\n{"agent": "a", "task": "7", "score": 1}\n', False),
    ],
)
def test_cli_validate_names_the_file_or_reports_the_labels(tmp_path, capsys, name, content, ok):
    from hierbench.cli import main

    p = tmp_path / name
    p.write_bytes(content)
    args = ["validate", str(p)] + (["--error", "e"] if name == "bad_err.csv" else [])
    code = main(args)
    out = capsys.readouterr()
    if ok:
        assert code == 0
        assert "tasks: 2" in out.out
    else:
        assert code != 0
        assert name in out.err and "Traceback" not in out.err
        assert len(out.err.strip().splitlines()) == 1
