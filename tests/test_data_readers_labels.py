"""Audit I (data readers): labels merged or split without a word, and unhelpful errors.

Each input is built here by hand, so every expected label, count and cell follows from its
construction (or from pandas on the same rows), not from the reader under test.
"""

from __future__ import annotations

import json
import warnings

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest

from hierbench._base import UnidentifiedTermWarning
from hierbench.cli import main
from hierbench.data import EvalDataError
from hierbench.data import RepeatedRecordsWarning
from hierbench.data import SimilarLabelsWarning
from hierbench.data import UnreadColumnWarning
from hierbench.data import counts_from_dask
from hierbench.data import counts_from_parquet
from hierbench.data import from_records
from hierbench.data import model_design
from hierbench.data import read_battles
from hierbench.data import read_report
from hierbench.data import to_pair_counts
from hierbench.data._schema import ErroredRunsWarning
from hierbench.data._values import label_clashes


def _ours(rec, category):
    return [str(w.message) for w in rec if issubclass(w.category, category)]


# ---------------------------------------------------------------- finding 3: agent=None


def _two_models(n_tasks=3, runs=2):
    """Two models' runs of the same tasks, the model in a column called ``model``."""
    rows = [
        {"model": m, "task": f"t{t}", "score": float((t + r + (m == "m2")) % 2), "note": "x"}
        for m in ("m1", "m2") for t in range(n_tasks) for r in range(runs)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def test_single_agent_over_a_model_column_is_refused_naming_it():
    df = _two_models()
    with pytest.raises(EvalDataError, match=r"column 'model' in DataFrame splits the records of every task cell "
                       r"into the same 2 groups.*\['m1', 'm2'\].*`agent`='model', without `agent_name`"):
        from_records(df, agent=None, agent_name="m1")
    # the same with a run column: every (task, run) cell holds both models
    df["trial"] = list(range(2)) * 6
    with pytest.raises(EvalDataError, match=r"column 'model' .* every \(task, run\) cell into the same 2 groups"):
        from_records(df, agent=None, agent_name="m1", run="trial")
    # one model's rows alone read as before: 3 tasks x 2 runs, its own mean
    one = df[df.model == "m1"].drop(columns="trial")
    ds = from_records(one, agent=None, agent_name="m1")
    assert dict(ds.score.sizes) == {"agent": 1, "task": 3, "run": 2}
    assert float(ds.score.mean()) == one.score.mean()


def test_any_text_column_that_splits_every_cell_counts_but_numbers_and_run_ids_do_not(tmp_path):
    df = _two_models().rename(columns={"model": "engine"})  # not a usual name: found as a text column
    with pytest.raises(EvalDataError, match=r"column 'engine' .* same 2 groups"):
        from_records(df, agent=None, agent_name="x")
    # a trial number (written as text in a CSV) and a per-record id split every cell too, but are no agents
    one = _two_models()
    one = one[one.model == "m1"].assign(trial=[0, 1] * 3, run_uid=[f"r{i}" for i in range(6)])
    path = tmp_path / "one.csv"
    one.to_csv(path, index=False)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ds = from_records(path, agent=None, agent_name="m1")
    assert dict(ds.score.sizes) == {"agent": 1, "task": 3, "run": 2}
    assert not _ours(rec, UnreadColumnWarning)  # 'model' holds one value: nothing merged


def test_an_agent_like_column_that_does_not_split_every_cell_is_named_among_the_unread():
    df = _two_models()
    df = df[~((df.model == "m2") & (df.task == "t0"))]  # t0 run by m1 only: cells split unevenly
    with pytest.warns(UnreadColumnWarning, match=r"not read as them: 'model'.*one agent `agent_name`.*`agent='model'`"):
        ds = from_records(df, agent=None, agent_name="m")
    assert int(ds.score.notnull().sum()) == len(df)


def test_cli_single_agent_refusal_speaks_in_flags(tmp_path, capsys):
    path = tmp_path / "two.csv"
    _two_models().to_csv(path, index=False)
    assert main(["validate", str(path), "--single-agent", "m1"]) == 2
    err = capsys.readouterr().err
    assert "column 'model'" in err and "--agent" in err and "--single-agent" in err and "agent_name" not in err


# ---------------------------------------------------------------- finding 4 and 5: 1 vs 1.0


def _flt(tmp_path):
    d = tmp_path / "flt"
    d.mkdir()
    pd.DataFrame({"agent": ["a", "a"], "task": [1, 2], "score": [1.0, 0.0]}).to_parquet(d / "p1.parquet")
    pd.DataFrame({"agent": ["b", "b"], "task": [1.0, 2.0], "score": [1.0, 1.0]}).to_parquet(d / "p2.parquet")
    return d


def test_int_and_equal_float_labels_are_refused_by_every_reader(tmp_path):
    d = _flt(tmp_path)
    pair = r"'1' \(int\) and '1\.0' \(float\)"
    with pytest.raises(EvalDataError, match=r"`task` column 'task' in .*flt \(stored as float64 in \['p2\.parquet'\]; "
                       r"int64 in \['p1\.parquet'\]\) mixes ints and floats that are equal.*" + pair):
        from_records(d)
    with pytest.raises(EvalDataError, match=r"in .*flt is stored with different types \(int in \['p1\.parquet'\]; "
                       r"float in \['p2\.parquet'\]\).*" + pair):
        counts_from_parquet(d, threads=1)
    with pytest.raises(EvalDataError, match=r"`task` column 'task' in dask DataFrame mixes ints and floats.*" + pair):
        counts_from_dask(dd.read_parquet(d))
    path = tmp_path / "num.jsonl"
    rows = [{"agent": 1, "task": "t1", "score": 1}, {"agent": 1.0, "task": "t2", "score": 1},
            {"agent": 2, "task": "t1", "score": 0}, {"agent": 2, "task": "t2", "score": 0}]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(EvalDataError, match=r"`agent` column 'agent' in .*num\.jsonl mixes ints and floats.*"
                       + pair + r".*, rows \[0, 1\]\."):
        from_records(path)


def test_floats_alone_and_unequal_numbers_read_as_written(tmp_path):
    d = _flt(tmp_path)
    # what a pandas user gets: the two files concatenated are floats, read as written ("1.0")
    both = pd.concat([pd.read_parquet(f) for f in sorted(d.glob("*.parquet"))], ignore_index=True)
    assert from_records(both).task.values.tolist() == ["1.0", "2.0"]
    mixed = pd.DataFrame({"agent": ["a"] * 2, "task": pd.Series([1, 1.5], dtype=object), "score": [1.0, 0.0]})
    assert from_records(mixed).task.values.tolist() == ["1", "1.5"]  # not equal: two identifiers


def test_dask_partitions_of_int_and_text_are_refused(tmp_path):
    d = tmp_path / "mix"
    d.mkdir()
    pd.DataFrame({"agent": ["a", "a"], "task": [1, 2], "score": [1.0, 0.0]}).to_parquet(d / "p1.parquet")
    pd.DataFrame({"agent": ["b", "b"], "task": ["1", "2"], "score": [1.0, 1.0]}).to_parquet(d / "p2.parquet")
    with pytest.raises(EvalDataError, match=r"`task` column 'task' in dask DataFrame mixes numbers and text.*"
                       r"'1' as number and text"):
        counts_from_dask(dd.read_parquet(d))
    # each partition alone is one kind: read
    ds = counts_from_dask(dd.read_parquet(d / "p2.parquet"))
    assert ds.task.values.tolist() == ["1", "2"] and ds.n_runs.values.tolist() == [[1, 1]]


def test_label_clashes_is_the_one_rule():
    ex, clash = label_clashes(["1", "1.0", "7", "7", "2.5", "3"], ["int", "float", "int", "text", "float", "int"])
    assert sorted(ex) == sorted(["'1' (int) and '1.0' (float)", "'7' as number and text"])
    assert clash == {"1", "1.0", "7"}


# ---------------------------------------------------------------- finding 13: case and invisible characters


@pytest.mark.parametrize(("other", "how"), [
    ("GPT-4o", "case"),
    ("gpt-4o\u200b", "invisible"),
    ("gpt\u20114o", "look-alike"),
    ("gpt-4o ", "spaces"),
])  # fmt: skip
def test_labels_that_differ_by_case_or_invisible_characters_are_warned_and_kept(other, how):
    df = pd.DataFrame({"agent": ["gpt-4o", other] * 2, "task": ["t1", "t1", "t2", "t2"], "score": [1, 0, 1, 0]})
    with pytest.warns(SimilarLabelsWarning, match=how) as rec:
        ds = from_records(df)
    assert ds.agent.values.tolist() == ["gpt-4o", other]  # kept apart, as written
    assert any(repr(other) in t for t in _ours(rec, SimilarLabelsWarning))  # the pair is named


def test_different_names_are_not_warned():
    df = pd.DataFrame({"agent": ["gpt-4o", "gpt-4"] * 2, "task": ["t1", "t1", "t2", "t2"], "score": [1, 0, 1, 0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", SimilarLabelsWarning)
        from_records(df)


# ---------------------------------------------------------------- finding 14 and 8: errored runs


def test_recorded_success_on_an_errored_run_is_counted_and_warned():
    df = pd.DataFrame({"agent": ["a", "a", "a", "b", "b", "b"], "task": ["t1", "t2", "t3"] * 2,
                       "score": [1, 0.5, 0, 1, 0, 1], "error": [True, True, False, False, False, True]})  # fmt: skip
    expected = int((df.error & (df.score > 0)).sum())  # 3, by pandas
    with pytest.warns(ErroredRunsWarning, match=rf"{expected} of 3 runs flagged .* recorded a score > 0"):
        ds = from_records(df, error="error")
    assert ds.attrs["n_error_scores_overwritten"] == expected == 3
    assert read_report(ds)["n_error_scores_overwritten"] == 3
    assert float(ds.score.sel(agent="a").sum()) == 0.0  # the documented rule stands: an errored run scores 0
    ds = from_records(df, error="error", errors="exclude")
    assert "n_error_scores_overwritten" not in ds.attrs  # excluded runs are counted in not_kept


def test_an_agent_whose_every_run_errored_is_warned_under_fail():
    df = pd.DataFrame({"agent": ["a", "a", "b", "b"], "task": ["t1", "t2"] * 2,
                       "score": [1, 0, 0, 0], "error": [False, False, True, True]})  # fmt: skip
    with pytest.warns(ErroredRunsWarning, match=r"1 agent in DataFrame with every run flagged .*\['b \(2 runs\)'\].*"
                      r"measures the infrastructure"):
        from_records(df, error="error")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ErroredRunsWarning)
        from_records(df, error="error", errors="exclude")


def test_metr_overwritten_successes_match_pandas(shared_data):
    path = shared_data / "metr" / "metr_all_runs_2025-02-27_19b0311.csv.gz"
    raw = pd.read_csv(path, usecols=["fatal_error_from", "score_binarized"])
    expected = int((raw.fatal_error_from.notna() & (raw.score_binarized > 0)).sum())
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ds = from_records(path, agent="alias", task="task_id", run="run_id", run_index="within_cell",
                          score="score_binarized", error="fatal_error_from", error_values="nonempty")  # fmt: skip
    assert ds.attrs["n_error_scores_overwritten"] == expected == 51
    assert any(t.startswith(f"{expected} of ") for t in _ours(rec, ErroredRunsWarning))


# ---------------------------------------------------------------- finding 15: a second, different record


def _one_per_cell(n_agents=3, n_tasks=4):
    rng = np.random.default_rng(0)
    cells = [(f"a{i}", f"t{j}") for i in range(n_agents) for j in range(n_tasks)]
    return pd.DataFrame({"agent": [a for a, _ in cells], "task": [t for _, t in cells],
                         "score": rng.integers(0, 2, len(cells)).astype(float)})  # fmt: skip


def test_a_second_different_record_in_a_one_run_per_cell_log_is_named():
    df = _one_per_cell()
    extra = df.iloc[[5]].assign(score=1 - df.iloc[5].score)
    with pytest.warns(RepeatedRecordsWarning, match=r"1 \(agent, task\) cells in DataFrame hold several different "
                      r"records, while 11 of 12 cells hold one.*\['a1/t1 \(2 records\)'\]"):
        ds = from_records(pd.concat([df, extra], ignore_index=True))
    assert read_report(ds)["runs_per_cell"]["max"] == 2  # kept as runs, nothing dropped
    with pytest.raises(EvalDataError, match="repeat an earlier record in every column"):  # a copy: refused as before
        from_records(pd.concat([df, df.iloc[[5]]], ignore_index=True))


def test_logs_with_several_runs_per_cell_are_not_warned():
    df = pd.concat([_one_per_cell(), _one_per_cell().assign(score=lambda d: 1 - d.score)], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RepeatedRecordsWarning)
        ds = from_records(df)
    assert read_report(ds)["runs_per_cell"] == {"min": 2, "median": 2.0, "max": 2}


# ---------------------------------------------------------------- finding 12: (1|agent:task) by formula


def test_formula_agent_task_term_with_one_run_per_cell_is_warned():
    df = _one_per_cell(3, 6)
    ds = from_records(df)
    with pytest.warns(UnidentifiedTermWarning, match=r"\(1\|agent:task\): one run per agent x task cell"):
        d = model_design("score ~ 1 + (1|agent) + (1|task) + (1|agent:task)", ds)
    assert "unidentified (1|agent:task)" in d.decisions
    with warnings.catch_warnings():  # the default formula's term is the builders' to drop
        warnings.simplefilter("error", UnidentifiedTermWarning)
        model_design(None, ds)
        two = from_records(pd.concat([df, df.assign(score=1 - df.score)], ignore_index=True))
        model_design("score ~ 1 + (1|agent) + (1|task) + (1|agent:task)", two)  # two runs per cell: identified


def test_the_bayes_formula_route_warns_of_the_term_once():
    # model_design warned in the formula's words and build_mixed's own agent_task decision again,
    # as if the user had passed agent_task='marginal': one warning, with the same rule's reason
    import hierbench.bayes as hbb

    ds = from_records(_one_per_cell(3, 6))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        m = hbb.build_mixed(ds, "score ~ 1 + (1|agent) + (1|task) + (1|agent:task)")
    said = [str(w.message) for w in seen if issubclass(w.category, UnidentifiedTermWarning)]
    assert len(said) == 1 and said[0].startswith("random term (1|agent:task): one run per agent x task cell")
    assert "one run per agent x task cell" in m.hierbench["structure"]["decisions"]["agent_task"]["reason"]
    # the default formula written out is the user's formula too: model_design leaves its term to the
    # builder, whose decision warns (it did not, when the mute keyed on the formula being given)
    from hierbench.data import DEFAULT_FORMULA

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        hbb.build_mixed(ds, DEFAULT_FORMULA)
    said = [str(w.message) for w in seen if issubclass(w.category, UnidentifiedTermWarning)]
    assert len(said) == 1 and "one run per agent x task cell" in said[0]


# ---------------------------------------------------------------- finding 16: cosmetics


def test_battle_errors_name_the_file_and_pair_counts_keep_the_source(tmp_path):
    path = tmp_path / "b.csv"
    pd.DataFrame({"left": ["x", "y"], "right": ["y", "x"], "winner": ["left", "Right"]}).to_csv(path, index=False)
    with pytest.raises(EvalDataError, match=r"`winner` column 'winner' in .*b\.csv holds values not in `outcomes`"):
        read_battles(path)
    pd.DataFrame({"left": ["x", "y"], "right": ["y", "y"], "winner": ["left", "right"]}).to_csv(path, index=False)
    with pytest.raises(EvalDataError, match=r"`left` and `right` in .*b\.csv must differ"):
        read_battles(path)
    pd.DataFrame({"left": ["x", "y"], "right": ["y", "x"], "winner": ["left", "right"]}).to_csv(path, index=False)
    assert to_pair_counts(read_battles(path)).attrs["source"] == str(path)


def test_semicolon_separated_csv_gets_a_hint(tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("agent;task;score\na;t1;1\n")
    with pytest.raises(EvalDataError, match=r"columns \['agent;task;score'\].*separated by ';'"):
        from_records(path)


def test_read_report_gives_a_list_of_files_as_a_list():
    ds = from_records(_one_per_cell())
    ds.attrs["source"] = json.dumps(["a.eval", "b.eval"])
    assert read_report(ds)["source"] == ["a.eval", "b.eval"]


def test_cli_warnings_speak_in_flags(tmp_path, capsys):
    # a/t1 holds the same record twice beside a different one; the other cells hold two different ones:
    # kept as runs with a warning (no copy pattern), whose remedies the command line names as flags
    df = pd.DataFrame({"agent": ["a"] * 3 + ["b"] * 2, "task": ["t1"] * 3 + ["t1"] * 2, "score": [1, 1, 0, 1, 0]})
    path = tmp_path / "rep.csv"
    df.to_csv(path, index=False)
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    assert "RepeatedRecordsWarning" in err and "--duplicates keep" in err and "(--run)" in err
    assert "duplicates='keep'" not in err
