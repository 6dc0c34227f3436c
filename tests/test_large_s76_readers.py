"""The count readers give from_records' report as well as its counts (audit s76 R 1, 2, 4, 5).

counts_from_parquet (DuckDB) and counts_from_dask promise what ``to_counts(from_records(...))``
gives: the same counts, and the same refusals, warnings and read-report attrs. Every expected
value here is counted by hand or with pandas on the frame the test writes, never by hierbench.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from hierbench import HierbenchWarning
from hierbench.data import ErroredRunsWarning
from hierbench.data import EvalDataError
from hierbench.data import RepeatedRecordsWarning
from hierbench.data import SimilarLabelsWarning
from hierbench.data import counts_from_dask
from hierbench.data import counts_from_parquet
from hierbench.data import from_records

pytest.importorskip("duckdb")
dd = pytest.importorskip("dask.dataframe")


def _parquet(df: pd.DataFrame, tmp_path, **kw):
    path = tmp_path / "runs.parquet"
    df.to_parquet(path, index=False)
    return counts_from_parquet(path, threads=1, **kw)


def _dask(df: pd.DataFrame, tmp_path, **kw):
    return counts_from_dask(dd.from_pandas(df, npartitions=2), **kw)


READERS = [_parquet, _dask]


def _pandas_counts(df: pd.DataFrame, err: str | None = None, errors: str = "fail") -> pd.DataFrame:
    """Independent counts: runs, summed scores of the runs that did not error, errors, per cell."""
    e = df[err].astype(bool) if err else pd.Series(False, index=df.index)
    frame = pd.DataFrame({
        "agent": df["agent"], "task": df["task"], "n_runs": 1 if errors == "fail" else (~e).astype(int),
        "n_success": df["score"].where(~e, 0.0).fillna(0.0), "n_error": e.astype(int),
    })  # fmt: skip
    return frame.groupby(["agent", "task"]).sum()


def _same_counts(got, exp: pd.DataFrame) -> None:
    for (a, t), row in exp.iterrows():
        assert got.n_runs.sel(agent=a, task=t).item() == row["n_runs"]
        assert got.n_success.sel(agent=a, task=t).item() == pytest.approx(row["n_success"])
        assert got.n_error.sel(agent=a, task=t).item() == row["n_error"]


def _one_per_cell() -> pd.DataFrame:
    """3 agents x 4 tasks, one record each (as SWE-bench's log)."""
    rng = np.random.default_rng(76)
    rows = [(a, t, float(rng.integers(0, 2))) for a in ("a", "b", "c") for t in ("t1", "t2", "t3", "t4")]
    return pd.DataFrame(rows, columns=["agent", "task", "score"])


# ---------------------------------------------------------------- 1. repeated records


@pytest.mark.parametrize("read", READERS)
def test_copies_in_a_log_of_one_run_per_cell_are_refused(read, tmp_path):
    # one record exported twice: no cell holds two different records, 11 of 12 hold one
    df = _one_per_cell()
    copied = pd.concat([df, df.iloc[[5]]], ignore_index=True)
    with pytest.raises(EvalDataError, match=r"1 of 13 records repeat .* no \(agent, task\) cell holds two "
                       r"different records and 11 of 12 cells hold a single record"):  # fmt: skip
        read(copied, tmp_path)
    # duplicates='keep' says they are runs: kept, counted, not warned
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatedRecordsWarning)
        c = read(copied, tmp_path, duplicates="keep")
    assert c.attrs["n_repeated_records"] == len(copied) - len(copied.drop_duplicates())
    _same_counts(c, _pandas_counts(copied))


@pytest.mark.parametrize("read", READERS)
def test_repeats_kept_as_runs_are_warned_and_counted(read, tmp_path):
    df = pd.DataFrame({"agent": ["a"] * 6 + ["b"] * 3, "task": ["t1", "t1", "t1", "t2", "t2", "t3", "t1", "t1", "t2"],
                       "score": [1.0, 1.0, 0.0, 0.0, 1.0, 0.5, 1.0, 1.0, 0.0]})  # fmt: skip
    n_repeats = len(df) - len(df.drop_duplicates())  # a/t1 1.0 and b/t1 1.0 twice: 2
    with pytest.warns(RepeatedRecordsWarning, match=rf"{n_repeats} of {len(df)} records .* repeat an earlier "
                      r"record in every column .*\['a/t1 x2', 'b/t1 x2'\]"):  # fmt: skip
        c = read(df, tmp_path)
    assert c.attrs["n_repeated_records"] == n_repeats == 2
    _same_counts(c, _pandas_counts(df))
    # dropped: the copies are not kept, so none is kept as a run; a/t1 and a/t2 then hold two
    # different records each while 3 of the 5 cells hold one (a log of one run per cell?)
    with pytest.warns(RepeatedRecordsWarning, match=r"2 \(agent, task\) cells .* while 3 of 5 cells hold one"):
        d = read(df, tmp_path, duplicates="drop")
    assert d.attrs["n_repeated_records"] == 0
    assert d.attrs["n_records_kept"] == len(df.drop_duplicates())
    # with a run column a repeat is a repeated (agent, task, run): no such attr, as from_records
    assert "n_repeated_records" not in read(df.assign(run=range(len(df))), tmp_path, run="run").attrs


@pytest.mark.parametrize("read", READERS)
def test_a_cell_with_two_different_records_in_a_log_of_one_run_per_cell_is_warned(read, tmp_path):
    df = _one_per_cell()
    other = df.iloc[[5]].assign(score=1.0 - df.score.iloc[5])  # b/t2 recorded twice, differently
    split = pd.concat([df, other], ignore_index=True)
    with pytest.warns(RepeatedRecordsWarning, match=r"1 \(agent, task\) cells in .* hold several different "
                      r"records, while 11 of 12 cells hold one, .*\['b/t2 \(2 records\)'\]"):  # fmt: skip
        c = read(split, tmp_path)
    assert c.attrs["n_repeated_records"] == 0  # no record repeats another in every column
    _same_counts(c, _pandas_counts(split))


# ---------------------------------------------------------------- 2. errored runs and labels


def _errored() -> pd.DataFrame:
    return pd.DataFrame({"agent": ["GPT-4o", "gpt-4o ", "z", "z", "GPT-4o", "GPT-4o"],
                         "task": ["t1", "t1", "t1", "t2", "t2", "t3"],
                         "score": [1.0, 0.0, np.nan, 1.0, 0.5, 0.0], "err": [0, 0, 1, 1, 1, 0]})  # fmt: skip


@pytest.mark.parametrize("read", READERS)
def test_errored_runs_scores_read_as_0_are_counted_and_warned(read, tmp_path):
    df = _errored()
    n_over = int(((df.err == 1) & (df.score > 0)).sum())  # z/t2 1.0 and GPT-4o/t2 0.5: 2
    with pytest.warns() as seen:
        c = read(df, tmp_path, error="err")
    said = [(w.category, str(w.message)) for w in seen]
    assert c.attrs["n_error_scores_overwritten"] == n_over == 2
    assert any(cat is ErroredRunsWarning and f"{n_over} of 3 runs flagged as infrastructure errors" in m
               for cat, m in said)  # fmt: skip
    assert any(cat is ErroredRunsWarning and "1 agent" in m and "['z (2 runs)']" in m for cat, m in said)
    assert any(cat is SimilarLabelsWarning and "'GPT-4o', 'gpt-4o '" in m for cat, m in said)
    _same_counts(c, _pandas_counts(df, "err"))


@pytest.mark.parametrize("read", READERS)
def test_errors_excluded_overwrite_nothing_and_labels_are_still_said(read, tmp_path):
    df = _errored()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ErroredRunsWarning)  # excluded runs are not run: nothing to say
        with pytest.warns(SimilarLabelsWarning, match=r"`agent` column 'agent' .* \[\['GPT-4o', 'gpt-4o '\]\]"):
            c = read(df, tmp_path, error="err", errors="exclude")
    assert "n_error_scores_overwritten" not in c.attrs
    _same_counts(c, _pandas_counts(df, "err", errors="exclude"))
    # no error column: nothing to overwrite, no attr (as from_records)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SimilarLabelsWarning)
        assert "n_error_scores_overwritten" not in read(df.drop(columns="err").fillna(0.0), tmp_path).attrs


# ---------------------------------------------------------------- 4. values read alike


@pytest.mark.parametrize("text", ["0_1", "0.5\u00a0", "+nan"])
def test_score_text_pandas_does_not_read_as_a_number_is_refused(text, tmp_path):
    # pandas' own parser is the reference: it reads none of these as a number
    assert np.isnan(pd.to_numeric(pd.Series([text], dtype=object), errors="coerce").iloc[0])
    df = pd.DataFrame({"agent": ["a", "a"], "task": ["t1", "t2"], "score": [text, "1"], "err": [1, 0]})
    for read in READERS:  # on an errored run too: refused as no number, not taken as missing
        with pytest.raises(EvalDataError, match=r"`score` column 'score' must be numeric: 1 rows"):
            read(df, tmp_path, error="err")


def test_error_words_are_stripped_as_python_strips_them(tmp_path):
    df = pd.DataFrame({"agent": ["a"] * 3, "task": ["t1", "t2", "t3"], "score": [0.0, 1.0, 0.0],
                       "err": ["error\t", "ok\u00a0", "\u3000TRUE"]})  # fmt: skip
    flags = [w.strip().lower() in ("error", "true") for w in df.err]  # [True, False, True]
    for read in READERS:
        c = read(df, tmp_path, error="err")
        assert c.n_error.values.ravel().tolist() == [int(f) for f in flags] == [1, 0, 1]


@pytest.mark.parametrize("read", READERS)
def test_dates_and_durations_are_no_identifiers(read, tmp_path):
    for col in (pd.to_datetime(["2024-01-01", "2024-01-02"]), pd.to_timedelta([1, 2], unit="D")):
        df = pd.DataFrame({"agent": ["a", "a"], "task": col, "score": [1.0, 0.0]})
        with pytest.raises(EvalDataError, match=r"`task` column 'task' in .* must hold text, numbers or booleans"):
            read(df, tmp_path)


def test_a_float32_label_is_written_as_the_double_it_is(tmp_path):
    tasks = np.array([0.1, 2.5], dtype=np.float32)
    df = pd.DataFrame({"agent": ["a", "a"], "task": tasks, "score": [1.0, 0.0]})
    # Python's own text of each stored value (float32 0.1 is 0.100000001490116119384765625)
    expected = sorted(repr(float(x)) for x in tasks)
    assert expected == ["0.10000000149011612", "2.5"]
    assert [read(df, tmp_path).task.values.tolist() for read in READERS] == [expected, expected]


# ---------------------------------------------------------------- 5. Parquet folders


def test_every_parquet_file_of_a_folder_is_read_and_others_named(tmp_path):
    parts = {"part-0.parquet": "a", "part-1.pq": "b", "part-2": "c"}  # the last as Hive names its files
    frames = []
    for name, agent in parts.items():
        f = pd.DataFrame({"agent": [agent] * 2, "task": ["t1", "t2"], "score": [1.0, 0.0]})
        f.to_parquet(tmp_path / name, index=False)
        frames.append(f)
    (tmp_path / "_SUCCESS").write_text("")  # a writer's marker: metadata, not read
    (tmp_path / "notes.txt").write_text("written by hand")
    everything = pd.concat(frames, ignore_index=True)
    for read in (from_records, counts_from_parquet):
        with pytest.warns(HierbenchWarning, match=r"1 files in folder .* were not read: \['notes\.txt \(not "
                          r"Parquet.*\]; .* those of its 3 Parquet files"):  # fmt: skip
            ds = read(tmp_path)
        assert ds.attrs["n_records_read"] == len(everything) == 6
        assert sorted(ds.agent.values.tolist()) == sorted(parts.values())
    empty = tmp_path / "none"
    empty.mkdir()
    (empty / "notes.txt").write_text("x")
    with pytest.raises(EvalDataError, match=r"holds no \.parquet files .*\['notes\.txt"):
        counts_from_parquet(empty)


def test_a_folder_named_like_a_parquet_file_is_read_once(tmp_path):
    # Spark writes a data set as a folder runs.parquet/ of part files: each record once
    (tmp_path / "runs.parquet").mkdir()
    df = pd.DataFrame({"agent": ["a", "b"], "task": ["t", "t"], "score": [1.0, 0.0]})
    df.to_parquet(tmp_path / "runs.parquet" / "part-0.snappy.parquet", index=False)
    for read in (from_records, counts_from_parquet):
        ds = read(tmp_path, duplicates="keep")
        assert ds.attrs["n_records_read"] == len(df) == 2
