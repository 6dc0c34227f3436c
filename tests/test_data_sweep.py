"""A sweep of bad inputs over every public reader and dataset check.

``from_records``, ``read_table``, ``to_counts``, ``check_eval_dataset``,
``summarize`` and ``read_report`` get wrong types, NaN / inf, empty files,
unknown columns, mixed and clashing identifiers, bool and out-of-range
scores, unmapped error values, unicode, duplicate names and labels, and more
(``read_inspect_log``'s sweep is in ``test_data_inspect.py``, beside the logs
it needs). Each input must end in one of three ways:

* :class:`EvalDataError` whose message names the argument, file or rows and
  the rule (``Err``);
* a correct result, checked against values written by hand here (``Ok``),
  with a hierbench warning that counts what it reports when the input calls
  for one (``Warns``);

never another library's exception or warning, and never a silent change.
"""

from __future__ import annotations

import decimal
import gzip
import re
import unicodedata
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench._base import HierbenchWarning
from hierbench.data import EvalDataError
from hierbench.data import InconsistentAttributeWarning
from hierbench.data import NoScoredRunsWarning
from hierbench.data import RepeatedRecordsWarning
from hierbench.data import SimilarLabelsWarning
from hierbench.data import check_eval_dataset
from hierbench.data import from_records
from hierbench.data import read_report
from hierbench.data import read_table
from hierbench.data import summarize
from hierbench.data import to_counts
from hierbench.data._schema import ErroredRunsWarning


@dataclass
class Err:
    pattern: str


@dataclass
class Ok:
    check: Callable[[Any], None] = lambda r: None
    warns: tuple = ()  # (category, pattern) of a counting warning the input calls for


def Warns(category, pattern, check=lambda r: None) -> Ok:
    return Ok(check, (category, pattern))


def F(**cols) -> pd.DataFrame:
    """a/t1 1.0, a/t2 0.0, b/t1 1.0, b/t2 0.5 (plus the columns given)."""
    base = {"agent": ["a", "a", "b", "b"], "task": ["t1", "t2", "t1", "t2"], "score": [1.0, 0.0, 1.0, 0.5]}
    return pd.DataFrame({**base, **cols})


def G() -> pd.DataFrame:
    """F with the columns the argument cases name."""
    return F(tag=["x", "y", "x", "y"], cost=[0.1, 0.2, 0.3, 0.4], lim=[0, 1, 0, 0], cl=["p", "q", "p", "q"])


def write(tmp, name, content) -> Any:
    p = tmp / name
    if isinstance(content, bytes):
        p.write_bytes(content)
    else:
        p.write_text(content, encoding="utf-8")
    return p


def tasks(*expected):
    def check(ds):
        assert ds.task.values.tolist() == list(expected)

    return check


def scores(**expected):
    """Per-cell score totals (agent/task -> sum), written by hand."""

    def check(ds):
        c = to_counts(ds)
        for key, v in expected.items():
            a, t = key.split("_")
            assert c.n_success.sel(agent=a, task=t).item() == pytest.approx(v), key

    return check


def kind(k, **more):
    def check(ds):
        assert ds.attrs["score_kind"] == k
        if more:
            scores(**more)(ds)

    return check


ROWS = "rows"  # every refusal of a record names its rows
CASES: dict[str, tuple[Callable, Err | Ok]] = {}


def case(name: str, make: Callable, expect: Err | Ok) -> None:
    assert name not in CASES, name
    CASES[name] = (make, expect)


# ---------------------------------------------------------------- from_records: obj and arguments

for nm, obj in {"int": 5, "None": None, "list of dicts": [{"agent": "a"}], "dict": {"agent": ["a"]},
                "ndarray": np.zeros((2, 3)), "Dataset": xr.Dataset(), "bytes": b"agent,task\n"}.items():  # fmt: skip
    case(f"from_records obj={nm}", lambda tmp, o=obj: from_records(o),
         Err(r"`obj` must be a pandas DataFrame or a path to a CSV, JSONL or Parquet file; got "))  # fmt: skip

ROLE = r"must be a column name \(text\); got"
ARGS: dict[str, tuple[dict, Err | Ok]] = {
    "score=None": ({"score": None}, Err(r"`score` " + ROLE)),
    "task=None": ({"task": None}, Err(r"`task` " + ROLE)),
    "agent=['agent']": ({"agent": ["agent"]}, Err(r"`agent` " + ROLE + r" list \['agent'\]")),
    "cluster=1.5": ({"cluster": 1.5}, Err(r"`cluster` " + ROLE + " float")),
    "score='nope'": ({"score": "nope"}, Err(r"missing required columns in DataFrame: `score`='nope'; the records have columns \['agent', 'task', 'score'")),
    "extra='cost'": ({"extra": "cost"}, Err(r"`extra` must be a mapping or a list of column names; got a string")),
    "extra={'cost': 5}": ({"extra": {"cost": 5}}, Err(r"missing required columns in DataFrame: `extra\['cost'\]`=5")),
    "annotations='lim'": ({"annotations": "lim"}, Err(r"`annotations` must be a mapping or a list of column names; got a string")),
    "task_coords='tag'": ({"task_coords": "tag"}, Err(r"`task_coords` must be a list of column names; got the string 'tag'")),
    "agent_coords='tag'": ({"agent_coords": "tag"}, Err(r"`agent_coords` must be a list of column names; got the string 'tag'")),
    "errors='drop'": ({"errors": "drop"}, Err(r"`errors` must be 'fail' or 'exclude'; got 'drop'")),
    "run_index='x'": ({"run_index": "x"}, Err(r"`run_index` must be 'auto', 'label' or 'within_cell'; got 'x'")),
    "duplicates='first'": ({"duplicates": "first"}, Err(r"`duplicates` must be 'refuse', 'drop' or 'keep'; got 'first'")),
    "attrs=[1, 2]": ({"attrs": [1, 2]}, Err(r"`attrs` must be a mapping of provenance; got list")),
    "attrs overwrite the read report": ({"attrs": {"n_records_read": 99}}, Err(r"`attrs` may add provenance but not overwrite the read report; it sets \['n_records_read'\]")),
    "attrs with provenance": ({"attrs": {"dataset": "toy"}}, Ok(lambda ds: ds.attrs["dataset"] == "toy")),
    "error_values=['x']": ({"error": "tag", "error_values": ["x"]}, Err(r"`error_values` must be a mapping \{value: bool\} or 'nonempty'; got list")),
    "error_values={'x': 1}": ({"error": "tag", "error_values": {"x": 1}}, Err(r"`error_values` must map each value to True \(error\) or False \(no error\); got 'x': 1")),
    "agent_name=5": ({"agent": None, "agent_name": 5}, Err(r"`agent_name` must be a non-empty text; got 5")),
    "agent_name=''": ({"agent": None, "agent_name": ""}, Err(r"`agent_name` must be a non-empty text; got ''")),
    "extra named score": ({"extra": {"score": "cost"}}, Err(r"`extra` names 'score', one of the names the dataset gives its own variables and coords")),
    "extra named error": ({"extra": {"error": "cost"}}, Err(r"`extra` names 'error'")),
    "extra named run_id": ({"extra": {"run_id": "cost"}}, Err(r"`extra` names 'run_id'")),
    "annotation named error": ({"annotations": {"error": "lim"}}, Err(r"`annotations` names 'error'")),
    "extra and annotation share a name": ({"extra": {"x": "cost"}, "annotations": {"x": "lim"}}, Err(r"`annotations` and `extra` both name 'x'")),
    "task_coords=['task']": ({"task_coords": ["task"]}, Err(r"`task_coords` names 'task'")),
    "agent_coords=['agent']": ({"agent_coords": ["agent"]}, Err(r"`agent_coords` names 'agent'")),
    "task_coords=['score']": ({"task_coords": ["score"]}, Err(r"`task_coords` names 'score'")),
    "task_coords=['tag'] is the tag's name": ({"task_coords": ["tag"]}, Err(r"`task_coords` names 'tag'.*\(or pass tag=\.\.\.\)")),
    "a column both task and agent coord": ({"task_coords": ["lim"], "agent_coords": ["lim"]}, Err(r"`agent_coords` and `task_coords` both name 'lim'")),
    "score is the task column": ({"score": "task"}, Err(r"`task` and `score` must be different columns; both are 'task'")),
    "agent is the task column": ({"agent": "task"}, Err(r"`agent` and `task` must be different columns; both are 'task'")),
    "error is the score column": ({"error": "score"}, Err(r"`score` and `error` must be different columns")),
    "tag and cluster on one column": ({"tag": "cl", "cluster": "cl"}, Ok(lambda ds: ds.tag.values.tolist() == ds.cluster.values.tolist() == ["p", "q"])),
}  # fmt: skip
for nm, (kw, expect) in ARGS.items():
    case(f"from_records {nm}", lambda tmp, kw=kw: from_records(G(), **kw), expect)

# ---------------------------------------------------------------- scores

NOT_NUMERIC = r"`score` column 'score' in DataFrame must be numeric; rows "
RANGE = r"`score` column 'score' in DataFrame must lie in \[0, 1\]; rows "
SCORES: dict[str, tuple[Any, Err | Ok]] = {
    "NaN without an error flag": ([1.0, np.nan, 0.0, 1.0], Err(r"`score` column 'score' in DataFrame is missing \(NaN\) on 1 runs not flagged as infrastructure errors, rows \[1\]")),
    "None without an error flag": (pd.Series([1.0, None, 0.0, 1.0], dtype=object), Err(r"is missing \(NaN\) on 1 runs .*rows \[1\]")),
    "pd.NA (Float64)": (pd.array([1.0, None, 0.0, 1.0], dtype="Float64"), Err(r"is missing \(NaN\) on 1 runs .*rows \[1\]")),
    "inf": ([1.0, np.inf, 0.0, 1.0], Err(RANGE + r"\[1\] hold \[inf\]")),
    "-inf": ([1.0, -np.inf, 0.0, 1.0], Err(RANGE + r"\[1\] hold \[-inf\]")),
    "just above 1": ([1.0, 1.0000001, 0.0, 1.0], Err(RANGE + r"\[1\] hold \[1\.0000001\]")),
    "negative": ([1.0, -0.1, 0.0, 1.0], Err(RANGE + r"\[1\] hold \[-0\.1\]")),
    "percent": ([100.0, 0.0, 50.0, 100.0], Err(RANGE + r"\[0, 2, 3\] hold \[100\.0, 50\.0, 100\.0\]")),
    "-0.0": ([1.0, -0.0, 0.0, 1.0], Ok(kind("binary", a_t2=0.0))),
    "bool": ([True, False, True, True], Ok(kind("binary", a_t1=1, a_t2=0, b_t1=1, b_t2=1))),
    "bool and numbers in an object column": (pd.Series([True, False, 1.0, 0.0], dtype=object), Ok(kind("binary", a_t1=1, a_t2=0, b_t1=1, b_t2=0))),
    "numbers as text": (["1", "0.5", " 1 ", "1e-1"], Ok(kind("mixed", a_t1=1, a_t2=0.5, b_t1=1, b_t2=0.1))),
    "TRUE / FALSE as text": (["TRUE", "FALSE", "1", "0"], Err(NOT_NUMERIC + r"\[0, 1\] hold \['TRUE', 'FALSE'\]")),
    "comma decimal '0,5'": (["1", "0,5", "0", "1"], Err(NOT_NUMERIC + r"\[1\] hold \['0,5'\]")),
    "pass / fail words": (["pass", "fail", "1", "0"], Err(NOT_NUMERIC + r"\[0, 1\] hold \['pass', 'fail'\]")),
    "Int64": (pd.array([1, 0, 1, 1], dtype="Int64"), Ok(kind("binary", b_t2=1))),
    "categorical": (pd.Categorical([1.0, 0.0, 1.0, 0.0]), Ok(kind("binary", a_t1=1, b_t2=0))),
    "decimal.Decimal": (pd.Series([decimal.Decimal("0.5")] * 4), Ok(kind("continuous", a_t1=0.5))),
    "complex": ([1 + 0j, 0j, 1 + 0j, 0j], Err(NOT_NUMERIC + r"\[0, 1, 2, 3\] hold \['\(1\+0j\)'")),
    "datetime": (pd.to_datetime(["2020-01-01"] * 4), Err(NOT_NUMERIC + r"\[0, 1, 2, 3\] hold \['2020-01-01'")),
    "timedelta": (pd.to_timedelta([1, 2, 3, 4], unit="s"), Err(NOT_NUMERIC + r"\[0, 1, 2, 3\] hold \['0 days 00:00:01'")),
    "a list in a cell": (pd.Series([[1], 0.0, 1.0, 1.0], dtype=object), Err(NOT_NUMERIC + r"\[0\] hold \['\[1\]'\]")),
    "all 0.5": ([0.5] * 4, Ok(kind("continuous", a_t1=0.5))),
    "0 / 0.5 / 1": ([1.0, 0.5, 0.0, 1.0], Ok(kind("mixed", a_t2=0.5))),
    "strictly inside (0, 1)": ([0.2, 0.5, 0.7, 0.9], Ok(kind("continuous", b_t2=0.9))),
}  # fmt: skip
for nm, (sc, expect) in SCORES.items():
    case(f"from_records score {nm}", lambda tmp, sc=sc: from_records(F(score=sc)), expect)

# ---------------------------------------------------------------- identifiers

NOT_EMPTY = r"`task` column 'task' in DataFrame must not be empty; 1 rows are, rows \[1\]"
ODD_ID = r"`task` column 'task' in DataFrame must hold text, numbers or booleans; 4 rows hold other values, e.g. "
MIX = r"`task` column 'task' in DataFrame mixes numbers and text that read the same.*"
SIMILAR = r"`task` column 'task' in DataFrame: 1 groups of labels differ only by spaces or Unicode normalisation"
NFC, NFD = unicodedata.normalize("NFC", "é"), unicodedata.normalize("NFD", "é")
IDS: dict[str, tuple[Any, Err | Ok]] = {
    "NaN": (["t1", np.nan, "t1", "t2"], Err(NOT_EMPTY)),
    "empty text": (["t1", "", "t1", "t2"], Err(NOT_EMPTY)),
    "pd.NA in a string column": (pd.array(["t1", None, "t1", "t2"], dtype="string"), Err(NOT_EMPTY)),
    "float NaN among floats": ([1.0, np.nan, 1.0, 2.0], Err(NOT_EMPTY)),
    "1 and '1'": (pd.Series([1, "1", 1, 2], dtype=object), Err(MIX + r": \[\"'1' as number and text\"\], rows \[0, 1, 2\]")),
    "True and 'True'": (pd.Series([True, "True", True, False], dtype=object), Err(MIX + r": \[\"'True' as bool and text\"\]")),
    # audit I finding 4: an int and an equal float would be two labels ("1", "1.0"): refused, never rewritten
    "1 and 1.0 (written differently)": (pd.Series([1, 1.0, 2, 2.0], dtype=object), Err(r"`task` column 'task' in DataFrame mixes ints and floats that are equal.*'1' \(int\) and '1\.0' \(float\)")),
    "bytes": (pd.Series([b"x", b"y", b"x", b"y"], dtype=object), Err(ODD_ID + r"b'x' \(bytes\)")),
    "tuples": (pd.Series([(1, 2), (3,), (1, 2), (3,)], dtype=object), Err(ODD_ID + r"\(1, 2\) \(tuple\)")),
    "dicts": (pd.Series([{"a": 1}, {"b": 2}, {"a": 1}, {"b": 2}], dtype=object), Err(ODD_ID + r"\{'a': 1\} \(dict\)")),
    "lists": (pd.Series([[1], [2], [1], [2]], dtype=object), Err(ODD_ID + r"\[1\] \(list\)")),
    "timestamps": (pd.to_datetime(["2020-01-01", "2020-01-02"] * 2), Err(ODD_ID + r"Timestamp")),
    "floats": ([1.0, 2.0, 1.0, 2.0], Ok(tasks("1.0", "2.0"))),
    "categorical": (pd.Categorical(["t1", "t2", "t1", "t2"]), Ok(tasks("t1", "t2"))),
    "unicode": (["タスク", "λ", "タスク", "😀"], Ok(tasks("タスク", "λ", "😀"))),
    "NFC and NFD of one letter": ([NFC, NFD, NFC, "x"], Warns(SimilarLabelsWarning, SIMILAR, tasks(NFC, NFD, "x"))),
    "a trailing space": (["t1", "t1 ", "t1", "t2"], Warns(SimilarLabelsWarning, SIMILAR + r", e\.g\. \[\['t1', 't1 '\]\]", tasks("t1", "t1 ", "t2"))),
    "a blank label": (["t1", " ", "t1", "t2"], Ok(tasks("t1", " ", "t2"))),
    "large int64": ([2**62, 2**62 + 1, 2**62, 2**62 + 1], Ok(tasks("4611686018427387904", "4611686018427387905"))),
    "uint64 beyond int64": (np.array([2**64 - 1, 1, 2**64 - 1, 1], dtype=np.uint64), Ok(tasks("18446744073709551615", "1"))),
}  # fmt: skip
for nm, (t, expect) in IDS.items():
    case(f"from_records task {nm}", lambda tmp, t=t: from_records(F(task=t)), expect)

# ---------------------------------------------------------------- error column

OVERWRITTEN = r"{0} of {0} runs flagged as infrastructure errors in `error` column 'err' in DataFrame recorded a score > 0"
ERR = r"`error` column 'err' in DataFrame must hold booleans, 0/1 or one of .*rows hold other values "
ERRS: dict[str, tuple[Any, Err | Ok]] = {
    "unmapped text": (["ok", "timeout", "ok", "crash"], Err(ERR + r"\['timeout' \(1 row\), 'crash' \(1 row\)\], rows \[1, 3\].*error_values=")),
    "2": ([0, 2, 0, 0], Err(ERR + r"\['2' \(1 row\)\], rows \[1\]")),
    "-1": ([0, -1, 0, 0], Err(ERR + r"\['-1' \(1 row\)\], rows \[1\]")),
    "0.5": ([0, 0.5, 0, 0], Err(ERR + r"\['0\.5' \(1 row\)\], rows \[1\]")),
    "a list": (pd.Series([[1], 0, 0, 0], dtype=object), Err(ERR + r"\['\[1\]' \(1 row\)\], rows \[0\]")),
    # F's flagged runs recorded 1.0 (b/t1; a/t1; a/t1 and b/t1): errors='fail' reads them as 0, and says so
    "float NaN (no error)": ([0.0, np.nan, 1.0, 0.0], Warns(ErroredRunsWarning, OVERWRITTEN.format(1), lambda ds: ds.error.values.ravel().tolist() == [False, False, True, False])),
    "boolean with NA": (pd.array([True, None, False, False], dtype="boolean"), Warns(ErroredRunsWarning, OVERWRITTEN.format(1), lambda ds: int(ds.error.sum()) == 1)),
    "words": (["yes", "No", " TRUE ", "ok"], Warns(ErroredRunsWarning, OVERWRITTEN.format(2), lambda ds: ds.error.values.ravel().tolist() == [True, False, True, False])),
}  # fmt: skip
for nm, (e, expect) in ERRS.items():
    case(f"from_records error {nm}", lambda tmp, e=e: from_records(F(err=e), error="err"), expect)

# ---------------------------------------------------------------- per-run measures

MEASURE = r"column 'x' in DataFrame must be finite and >= 0 .*1 rows are not, rows \[1\] hold "
EXTRA: dict[str, tuple[Any, dict, Err | Ok]] = {
    "negative cost": ([0.1, -0.2, 0.3, 0.4], {"cost": "x"}, Err(r"`extra\['cost'\]` " + MEASURE + r"\[-0\.2\]")),
    "infinite cost": ([0.1, np.inf, 0.3, 0.4], {"cost": "x"}, Err(r"`extra\['cost'\]` " + MEASURE + r"\[inf\]")),
    "negative latency": ([1, -5, 2, 3], {"latency": "x"}, Err(r"`extra\['latency'\]` " + MEASURE + r"\[-5\.0\]")),
    "negative tokens": ([1, -5, 2, 3], {"tokens": "x"}, Err(r"`extra\['tokens'\]` " + MEASURE + r"\[-5\.0\]")),
    "negative steps": ([1, -5, 2, 3], {"steps": "x"}, Err(r"`extra\['steps'\]` " + MEASURE + r"\[-5\.0\]")),
    "text cost": (["0.1", "x", "0.3", "0.4"], {"cost": "x"}, Err(r"`extra` column 'x' in DataFrame must be numeric; rows \[1\] hold \['x'\]")),
    "missing cost": ([0.1, np.nan, 0.3, 0.4], {"cost": "x"}, Ok(lambda ds: np.isnan(ds.cost.sel(agent="a", task="t2").item()))),
    "-0.0 cost": ([0.0, -0.0, 0.1, 0.2], {"cost": "x"}, Ok(lambda ds: ds.cost.sel(agent="a", task="t2").item() == 0.0)),
    "negative margin (no measure)": ([1, -5, 2, 3], {"margin": "x"}, Ok(lambda ds: ds.margin.sel(agent="a", task="t2").item() == -5.0)),
}  # fmt: skip
for nm, (x, ex, expect) in EXTRA.items():
    case(f"from_records extra {nm}", lambda tmp, x=x, ex=ex: from_records(F(x=x), extra=ex), expect)

# ---------------------------------------------------------------- repeated records and runs

COPIES = r"duplicate records in DataFrame: 1 of 5 records repeat an earlier record in every column \(e\.g\. rows \(first, copy\) \[\(1, 4\)\]\)"
REPEATS = r"2 of 5 records in DataFrame repeat an earlier record in every column \(rows \[2, 4\]\)"
MINIMAL = {"agent": ["a"] * 5, "task": ["t1", "t1", "t1", "t2", "t2"], "score": [1.0, 0.0, 1.0, 0.0, 0.0]}
case("dup one copied record, one run per cell, with cost",
     lambda tmp: from_records(pd.concat([F(cost=[0.1, 0.2, 0.3, 0.4])] * 2).iloc[[0, 1, 2, 3, 5]].reset_index(drop=True)),
     Err(COPIES + r".*3 of 4 cells hold a single record"))  # fmt: skip
case("dup one copied record, minimal log", lambda tmp: from_records(pd.concat([F(), F().iloc[[1]]], ignore_index=True)),
     Err(COPIES))  # fmt: skip
case("dup log concatenated twice", lambda tmp: from_records(pd.concat([F(), F()], ignore_index=True)),
     Err(r"4 of 8 records repeat .*every distinct record appears a multiple of 2 times"))  # fmt: skip
case("dup repeats among real runs", lambda tmp: from_records(pd.DataFrame(MINIMAL)),
     Warns(RepeatedRecordsWarning, REPEATS, lambda ds: ds.attrs["n_repeated_records"] == 2))  # fmt: skip
case("dup repeats, keep", lambda tmp: from_records(pd.DataFrame(MINIMAL), duplicates="keep"),
     Ok(lambda ds: ds.attrs["n_repeated_records"] == 2 and int(to_counts(ds).n_runs.sum()) == 5))  # fmt: skip
case("dup repeats, drop", lambda tmp: from_records(pd.DataFrame(MINIMAL), duplicates="drop"),
     Ok(lambda ds: ds.attrs["n_records_kept"] == 3 and int(to_counts(ds).n_runs.sum()) == 3))  # fmt: skip
case("dup same agent/task/run twice", lambda tmp: from_records(F(run=[0, 0, 0, 0]).iloc[[0, 0, 1]], run="run"),
     Err(r"duplicate \(agent, task, run\) in DataFrame: 2 records share a key, rows \[0, 1\].*exact copies"))  # fmt: skip
case("dup same key, different scores", lambda tmp: from_records(F(run=[0, 0, 0, 0], task=["t"] * 4, agent=["a"] * 4), run="run"),
     Err(r"duplicate \(agent, task, run\) in DataFrame: 4 records share a key, rows \[0, 1, 2, 3\]"))  # fmt: skip
case("dup run column, drop copies", lambda tmp: from_records(F(run=[0, 0, 0, 0]).iloc[[0, 0, 1]], run="run", duplicates="drop"),
     Ok(lambda ds: ds.attrs["n_records_kept"] == 2))  # fmt: skip
case("dup DataFrame column names", lambda tmp: from_records(pd.concat([F(), F()[["score"]]], axis=1)),
     Err(r"`obj` \(DataFrame\): columns \['score'\] appear more than once"))  # fmt: skip
case("run NaN", lambda tmp: from_records(F(run=[0, np.nan, 1, 0]), run="run"),
     Err(r"`run` column 'run' in DataFrame must not be empty; 1 rows are, rows \[1\]"))  # fmt: skip
case("run 1.5", lambda tmp: from_records(F(run=[0, 1.5, 1, 0]), run="run"),
     Ok(lambda ds: ds.run_id.sel(agent="a", task="t2").values.tolist() == ["1.5"]))  # fmt: skip
case("run global ids", lambda tmp: from_records(F(run=[0, -1, 1, 0]), run="run"),
     Err(r"`run` column 'run' in DataFrame holds 3 distinct run labels, but no \(agent, task\) cell has more than 1 runs"))  # fmt: skip
case("run bool", lambda tmp: from_records(F(run=[True, False, True, False]), run="run"),
     Ok(lambda ds: ds.run_id.sel(agent="a").values.ravel().tolist() == ["True", "False"]))  # fmt: skip
case("run 1 and '1'", lambda tmp: from_records(F(run=pd.Series([1, "1", 1, 2], dtype=object), task=["t1"] * 4), run="run"),
     Err(r"`run` column 'run' in DataFrame mixes numbers and text"))  # fmt: skip

# ---------------------------------------------------------------- cluster and tag labels


def _clusters(*expected, missing=0):
    def check(ds):
        vals = ds.cluster.values.tolist()
        assert [None if pd.isna(v) else v for v in vals] == list(expected)
        assert ds.attrs["n_tasks_without_cluster"] == missing

    return check


INCONSISTENT = (r"`cluster` column 'cl' in DataFrame is empty in some records of 1 task \['t1'\] and holds one "
                r"value in the others \(a task attribute: one value per task\): each of these tasks takes that value")
case("cluster missing beside a text 'nan'", lambda tmp: from_records(F(cl=["x", None, "nan", np.nan]), cluster="cl"),
     Err(r"`cluster` column 'cl' in DataFrame must hold one value per task .*; 1 of 2 tasks hold two or more, "
         r"e\.g\. 't1': 'x' and 'nan'\."))  # fmt: skip (the text 'nan' is a label, not a missing value)
case("cluster missing in one record", lambda tmp: from_records(F(cl=["x", None, None, np.nan]), cluster="cl"),
     Warns(InconsistentAttributeWarning, INCONSISTENT, _clusters("x", None, missing=1)))  # fmt: skip
case("cluster labelled in one run only", lambda tmp: from_records(F(cl=[None, "x", "y", "x"]), cluster="cl"),
     Warns(InconsistentAttributeWarning, INCONSISTENT, _clusters("y", "x")))  # fmt: skip
case("cluster two labels in one task", lambda tmp: from_records(F(cl=["x", "y", "z", "y"]), cluster="cl"),
     Err(r"`cluster` column 'cl' in DataFrame must hold one value per task .*; 1 of 2 tasks hold two or more, "
         r"e\.g\. 't1': 'x' and 'z'\."))  # fmt: skip
case("cluster CSV 'NA' is a label, empty is missing",
     lambda tmp: from_records(write(tmp, "c.csv", "agent,task,score,cl\na,t1,1,NA\na,t2,0,\na,t3,1,x\n"), cluster="cl"),
     Ok(_clusters("NA", None, "x", missing=1)))  # fmt: skip
case("cluster JSON null is missing",
     lambda tmp: from_records(write(tmp, "c.jsonl", '{"agent":"a","task":"t1","score":1,"cl":null}\n'
                                    '{"agent":"a","task":"t2","score":1,"cl":"x"}\n'), cluster="cl"),
     Ok(_clusters(None, "x", missing=1)))  # fmt: skip
case("cluster numbers", lambda tmp: from_records(F(cl=[1, 2, 1, 2]), cluster="cl"), Ok(_clusters("1", "2")))
case("cluster 1 and '1'", lambda tmp: from_records(F(cl=pd.Series([1, "1", 1, "1"], dtype=object)), cluster="cl"),
     Err(r"`cluster` column 'cl' in DataFrame mixes numbers and text"))  # fmt: skip
case("cluster a trailing space", lambda tmp: from_records(F(cl=["x", "x ", "x", "x "]), cluster="cl"),
     Warns(SimilarLabelsWarning, r"`cluster` column 'cl' in DataFrame: 1 groups of labels differ", _clusters("x", "x ")))  # fmt: skip
case("task coord with an empty field",
     lambda tmp: from_records(write(tmp, "tc.csv", "agent,task,score,fam\na,t1,1,x\na,t2,0,\n"), task_coords=["fam"]),
     Ok(lambda ds: ds.fam.values[0] == "x" and pd.isna(ds.fam.values[1])))  # fmt: skip

# ---------------------------------------------------------------- files

FILES: dict[str, tuple[str, Any, Err | Ok]] = {
    "empty CSV": ("e.csv", "", Err(r"e\.csv\) is an empty file: no records to read")),
    "header only": ("h.csv", "agent,task,score\n", Err(r"`obj` \(.*h\.csv\) holds no records")),
    "blank lines only (CSV)": ("w.csv", "  \n\n", Err(r"w\.csv\) is an empty file")),
    "blank lines only (JSONL)": ("b.jsonl", "\n\n  \n", Err(r"`obj` \(.*b\.jsonl\) holds no records")),
    "a JSON line that is a number": ("n.jsonl", "5\n", Err(r"n\.jsonl\): 1 malformed JSON lines .*line numbers \[1\]")),
    "JSON NaN score": ("nan.jsonl", '{"agent":"a","task":"t","score":NaN}\n', Err(r"`score` column 'score' in .*nan\.jsonl is missing \(NaN\) on 1 runs .*rows \[0\]")),
    "JSON Infinity score": ("inf.jsonl", '{"agent":"a","task":"t","score":Infinity}\n', Err(r"inf\.jsonl must lie in \[0, 1\]; rows \[0\] hold \[inf\]")),
    "JSON bool scores": ("bo.jsonl", '{"agent":"a","task":"t","score":true}\n{"agent":"a","task":"u","score":false}\n', Ok(kind("binary", a_t=1, a_u=0))),
    "JSON text score": ("s.jsonl", '{"agent":"a","task":"t","score":"0.5"}\n', Ok(kind("continuous", a_t=0.5))),
    "JSON object as a task": ("ni.jsonl", '{"agent":"a","task":{"id":1},"score":1}\n', Err(r"`task` column 'task' in .*ni\.jsonl must hold text, numbers or booleans; 1 rows hold other values, e\.g\. \{'id': 1\} \(dict\), rows \[0\]")),
    "JSON list as a task": ("li.jsonl", '{"agent":"a","task":[1,2],"score":1}\n', Err(r"li\.jsonl must hold text, numbers or booleans.*\[1, 2\] \(list\)")),
    "JSON with a byte-order mark": ("bom.jsonl", '\ufeff{"agent":"a","task":"t","score":1}\n', Ok(tasks("t"))),
    "JSON unknown columns only": ("u.jsonl", '{"x":1}\n', Err(r"missing required columns in .*u\.jsonl: `task`='task', `score`='score', `agent`='agent'; the records have columns \['x'\]")),
    "CSV with a byte-order mark": ("bom.csv", "\ufeffagent,task,score\na,t,1\n", Ok(tasks("t"))),
    "CSV unknown columns": ("uc.csv", "model,item,reward\na,t,1\n", Err(r"uc\.csv: .*the records have columns \['model', 'item', 'reward'\]")),
    "TSV named .csv": ("tab.csv", "agent\ttask\tscore\na\tt\t1\n", Err(r"tab\.csv: `task`='task'.*the records have columns \['agent\\ttask\\tscore'\]")),
    "CSV row longer than the header": ("r.csv", "agent,task,score\na,t,1,9\n", Err(r"`obj` \(.*r\.csv\): rows hold more fields than the header names")),
    "CSV later row longer": ("r2.csv", "agent,task,score\na,t,1\nb,t,1,9\n", Err(r"`obj` \(.*r2\.csv\) could not be read as \.csv: ParserError: .*Expected 3 fields in line 3, saw 4")),
    "CSV row shorter (no score)": ("s.csv", "agent,task,score\na,t\n", Err(r"s\.csv is missing \(NaN\) on 1 runs .*rows \[0\]")),
    "CSV unicode": ("uni.csv", "agent,task,score\nモデル,タスク,1\nmodèle,tâche,0\n", Ok(lambda ds: ds.agent.values.tolist() == ["モデル", "modèle"])),
    "CSV CRLF": ("crlf.csv", "agent,task,score\r\na,t,1\r\n", Ok(tasks("t"))),
    "CSV repeated header name": ("dh.csv", "agent,task,score,score\na,t,1,0\n", Err(r"dh\.csv\): columns \['score'\] appear more than once in the header")),
    "CSV quoted numbers": ("q.csv", 'agent,task,score\n"a","t","1"\n', Ok(kind("binary", a_t=1))),
    "CSV NA score": ("na.csv", "agent,task,score\na,t,NA\n", Err(r"na\.csv is missing \(NaN\) on 1 runs")),
    "upper-case suffix": ("U.CSV", "agent,task,score\na,t,1\n", Ok(tasks("t"))),
    "no suffix": ("runs", "agent,task,score\na,t,1\n", Err(r"runs\): unknown file type \(none\); use \.csv")),
    ".txt suffix": ("runs.txt", "agent,task,score\na,t,1\n", Err(r"runs\.txt\): unknown file type \.txt")),
    "plain text named .gz": ("x.csv.gz", "agent,task,score\na,t,1\n", Err(r"x\.csv\.gz\) could not be read as \.csv\.gz: BadGzipFile")),
    "empty gzip": ("e.csv.gz", gzip.compress(b""), Err(r"e\.csv\.gz\) is an empty file")),
    "gzip JSONL": ("ok.jsonl.gz", gzip.compress(b'{"agent":"a","task":"t","score":1}\n'), Ok(tasks("t"))),
    "binary junk": ("j.csv", bytes(range(256)), Err(r"`obj` \(.*j\.csv\) (could not be read|is not valid utf-8)")),
    "UTF-16 CSV": ("u16.csv", "agent,task,score\na,t,1\n".encode("utf-16"), Err(r"u16\.csv\) is not valid utf-8 text.*'utf-16'")),
}  # fmt: skip
for nm, (fn, content, expect) in FILES.items():
    case(f"from_records file {nm}", lambda tmp, fn=fn, c=content: from_records(write(tmp, fn, c)), expect)
case("from_records a folder without Parquet", lambda tmp: from_records(tmp), Err(r"`obj`: folder '.*' holds no \.parquet files"))
case("from_records empty DataFrame", lambda tmp: from_records(pd.DataFrame()), Err(r"`obj` \(DataFrame\) holds no records"))
case("from_records columns but no rows", lambda tmp: from_records(pd.DataFrame(columns=["agent", "task", "score"])),
     Err(r"`obj` \(DataFrame\) holds no records"))  # fmt: skip
case("from_records integer column names", lambda tmp: from_records(pd.DataFrame({0: ["a"], 1: ["t"], 2: [1.0]}), agent=0, task=1, score=2),
     Ok(tasks("t")))  # fmt: skip
case("from_records MultiIndex columns",
     lambda tmp: from_records(pd.DataFrame([["a", "t", 1.0]], columns=pd.MultiIndex.from_tuples([("x", "agent"), ("x", "task"), ("x", "score")]))),
     Err(r"missing required columns in DataFrame: .*the records have columns \[\"\('x', 'agent'\)\""))  # fmt: skip
case("from_records a Parquet file", lambda tmp: from_records(_parquet(tmp)), Ok(kind("mixed", a_t2=0, b_t2=0.5)))


def _parquet(tmp):
    F().to_parquet(tmp / "f.parquet")
    return tmp / "f.parquet"


# ---------------------------------------------------------------- read_table

for nm, obj in {"int": 5, "None": None, "a list of paths": ["a.csv"]}.items():
    case(f"read_table obj={nm}", lambda tmp, o=obj: read_table(o), Err(r"`obj` must be a pandas DataFrame or a path"))
for nm, enc in {"None": None, "5": 5}.items():
    case(f"read_table encoding={nm}", lambda tmp, e=enc: read_table(write(tmp, "a.csv", "agent,task,score\na,t,1\n"), encoding=e),
         Err(r"`encoding` must be the name of a text encoding, e\.g\. 'utf-8'; got "))  # fmt: skip
case("read_table encoding='klingon'", lambda tmp: read_table(write(tmp, "a.csv", "x\n1\n"), encoding="klingon"),
     Err(r"`encoding`: unknown text encoding 'klingon'"))  # fmt: skip
case("read_table a missing file", lambda tmp: read_table(tmp / "nope.jsonl"), Err(r"`obj`: no such file '.*nope\.jsonl'"))
case("read_table latin-1 with its encoding", lambda tmp: read_table(write(tmp, "l.csv", "agent\nJosé\n".encode("latin-1")), encoding="latin-1"),
     Ok(lambda r: r[0].agent.tolist() == ["José"]))  # fmt: skip

# ---------------------------------------------------------------- datasets: to_counts, check, summarize, read_report


def _ds():
    return from_records(F())


def _with(**over):
    def make():
        ds = _ds()
        for k, fn in over.items():
            ds[k] = fn(ds)
        return ds

    return make


# name -> (dataset maker, expected message after "`<name>`", or a check of each function's result)
DSS: dict[str, tuple[Callable, str | None]] = {
    "a DataFrame": (F, r"` must be an xarray\.Dataset with dims \('agent', 'task', 'run'\); got DataFrame"),
    "None": (lambda: None, r"` must be an xarray\.Dataset with dims .*got NoneType"),
    "a DataArray": (lambda: _ds().score, r"` must be an xarray\.Dataset with dims .*got DataArray"),
    "no score": (lambda: xr.Dataset({"x": ("agent", [1.0])}), r"` must contain a `score` variable; found \['x'\]"),
    "2-d score": (lambda: xr.Dataset({"score": (("agent", "task"), [[1.0]])}), r"\.score` must have dims \('agent', 'task', 'run'\); missing \['run'\]"),
    "an extra judge dim": (lambda: _ds().expand_dims(judge=["j1", "j2"]), r"\.score` must have exactly the dims \('agent', 'task', 'run'\); it also has \['judge'\]"),
    "infinite score": (_with(score=lambda d: d.score.where(d.score != 0.5, np.inf)), r"\.score` must be finite or NaN; found infinite values"),
    "score 2": (_with(score=lambda d: d.score * 2), r"\.score` must lie in \[0, 1\]; 2 values do not, e\.g\. \(agent, task, run, score\) \[\('a', 't1', 0, 2\.0\), \('b', 't1', 0, 2\.0\)\]"),
    "score 2, dims reordered": (lambda: _with(score=lambda d: d.score * 2)().transpose("run", "task", "agent"), r"\.score` must lie in \[0, 1\]; 2 values do not, e\.g\. \(agent, task, run, score\) \[\('a', 't1', 0, 2\.0\), \('b', 't1', 0, 2\.0\)\]"),
    "text scores": (_with(score=lambda d: d.score.astype(str)), r"\.score` must hold numbers \(float64, or bool\); got dtype <U"),
    "object scores": (_with(score=lambda d: d.score.astype(object)), r"\.score` must hold numbers \(float64, or bool\); got dtype object"),
    "float error flags": (_with(error=lambda d: d.score.where(d.score > 2)), r"\.error` must be bool \(True: an infrastructure error\); got dtype float64"),
    "int error flags": (_with(error=lambda d: d.error.astype(int)), r"\.error` must be bool .*got dtype int64"),
    "text error flags": (_with(error=lambda d: d.error.astype(str)), r"\.error` must be bool .*got dtype <U"),
    "a negative cost": (_with(cost=lambda d: -d.score), r"\.cost` must be finite and >= 0 .*3 values are not, e\.g\. \(agent, task, run, cost\) \[\('a', 't1', 0, -1\.0\), \('b', 't1', 0, -1\.0\), \('b', 't2', 0, -0\.5\)\]"),
    "text tokens": (_with(tokens=lambda d: d.score.astype(str)), r"\.tokens` must hold numbers; got dtype <U"),
    "repeated task labels": (lambda: xr.concat([_ds(), _ds()], dim="task"), r"`: each task label must appear once; \['t1', 't2'\] appear more than once"),
    "bool scores": (_with(score=lambda d: d.score > 0.6), None),
    "no agent coord": (lambda: _ds().drop_vars("agent"), None),
    "no agents": (lambda: _ds().isel(agent=slice(0, 0)), None),
    "dims reordered": (lambda: _ds().transpose("task", "run", "agent"), None),
    "numeric cluster labels": (lambda: _ds().assign_coords(cluster=("task", [1, 2])), None),
}  # fmt: skip
FUNCS = {"to_counts": (to_counts, "ds"), "check_eval_dataset": (check_eval_dataset, "data"),
         "summarize": (summarize, "ds"), "read_report": (read_report, "ds")}  # fmt: skip
for fname, (fn, argname) in FUNCS.items():
    for nm, (mk, msg) in DSS.items():
        expect = Err(f"`{argname}" + msg) if msg is not None else Ok()
        case(f"{fname} {nm}", lambda tmp, fn=fn, mk=mk: fn(mk()), expect)
    case(f"{fname} all runs excluded", lambda tmp, fn=fn: fn(_with(score=lambda d: d.score * np.nan)()),
         Warns(NoScoredRunsWarning, r"agents \['a', 'b'\] have no scored run") if fname == "summarize" else Ok())  # fmt: skip
case("to_counts run_dim='nope'", lambda tmp: to_counts(_ds(), run_dim="nope"), Err(r"`run_dim` must be a dimension of `ds\.score` .*got 'nope'"))
case("to_counts run_dim=5", lambda tmp: to_counts(_ds(), run_dim=5), Err(r"`run_dim` must be a dimension of `ds\.score` .*got 5"))
case("to_counts bool scores count", lambda tmp: to_counts(_with(score=lambda d: d.score > 0.6)()),
     Ok(lambda c: c.n_success.values.tolist() == [[1.0, 0.0], [1.0, 0.0]]))  # fmt: skip
case("read_report counts no unlabelled task among numeric labels", lambda tmp: read_report(_ds().assign_coords(cluster=("task", [1, 2]))),
     Ok(lambda r: r["n_tasks_without_cluster"] == 0))  # fmt: skip


# ---------------------------------------------------------------- the test


@pytest.mark.parametrize(("make", "expect"), list(CASES.values()), ids=list(CASES))
def test_bad_input_is_refused_by_name_warned_and_counted_or_read_right(make, expect, tmp_path):
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        if isinstance(expect, Err):
            with pytest.raises(EvalDataError, match=expect.pattern):
                make(tmp_path)
        else:
            result = make(tmp_path)
            assert expect.check(result) is not False
    foreign = [f"{w.category.__name__}: {w.message}" for w in rec if not issubclass(w.category, HierbenchWarning)]
    assert not foreign, foreign  # never another library's warning
    ours = [w for w in rec if issubclass(w.category, HierbenchWarning)]
    if isinstance(expect, Ok) and expect.warns:
        category, pattern = expect.warns
        assert any(issubclass(w.category, category) and re.search(pattern, str(w.message)) for w in ours), ours
    elif isinstance(expect, Ok):
        assert not ours, [str(w.message) for w in ours]  # a clean input reads without a word


def test_the_sweep_is_wide():
    assert len(CASES) >= 230
