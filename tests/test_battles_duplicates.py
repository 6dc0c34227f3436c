"""Battle records repeated in every column: ``read_battles(duplicates=...)`` (audit P, F5)."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from hierbench.data import EvalDataError
from hierbench.data import read_battles
from hierbench.data import to_pair_counts

DROP_KEY = "exact copy of an earlier record (duplicates='drop')"

# four distinct battles (ids 0-3), then verbatim copies of rows 1 and 3 (rows 4 and 5)
BASE = pd.DataFrame(
    {
        "id": [0, 1, 2, 3],
        "prompt": ["p1", "p1", "p2", "p2"],
        "worker": ["w1", "w2", "w1", "w2"],
        "left": ["A", "A", "B", "C"],
        "right": ["B", "C", "C", "A"],
        "winner": ["left", "tie", "right", "left"],
    }
)
DUP = pd.concat([BASE, BASE.iloc[[1, 3]]], ignore_index=True)


def _counted(ds) -> tuple:
    a = ds.attrs
    return a["n_records_read"], a["n_records_kept"], json.loads(a["not_kept"]), a["n_repeated_records"]


def _as_file(tmp_path, kind: str):
    if kind == "frame":
        return DUP
    path = tmp_path / f"battles.{kind}"
    DUP.to_csv(path, index=False) if kind == "csv" else DUP.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("kind", ["frame", "csv", "parquet"])
def test_copies_in_a_table_with_an_id_are_refused_naming_rows_and_count(tmp_path, kind):
    obj = _as_file(tmp_path, kind)
    with pytest.raises(EvalDataError) as err:
        read_battles(obj, task="prompt", judge="worker")
    msg = str(err.value)
    # by hand: rows 4 and 5 repeat rows 1 and 3; 'id' is the one column not read
    assert "2 of 6 records repeat an earlier record in every column" in msg
    assert "(first, copy) [(1, 4), (3, 5)]" in msg
    assert "including ['id']" in msg and "duplicates='drop'" in msg and "duplicates='keep'" in msg
    # an unread judge or prompt column counts as one the battles could be told apart by
    with pytest.raises(EvalDataError, match=r"including \['id', 'prompt', 'worker'\]"):
        read_battles(obj)


@pytest.mark.parametrize("kind", ["frame", "csv", "parquet"])
def test_drop_keeps_the_first_of_each_set_and_counts_the_rest(tmp_path, kind):
    got = read_battles(_as_file(tmp_path, kind), task="prompt", judge="worker", duplicates="drop")
    want = read_battles(BASE, task="prompt", judge="worker")  # the four distinct rows, by hand
    assert got.sizes["comparison"] == 4
    for v in ("agent_a", "agent_b", "outcome", "task", "judge", "position"):
        np.testing.assert_array_equal(got[v].values, want[v].values)
    assert _counted(got) == (6, 4, {DROP_KEY: 2}, 0)


def test_keep_keeps_every_record_and_counts_the_repeats():
    got = read_battles(DUP, task="prompt", judge="worker", duplicates="keep")
    assert _counted(got) == (6, 6, {}, 2)
    c = to_pair_counts(got)
    # by hand (first position first): A-C holds the tie twice (rows 1, 4); C-A the left win twice (3, 5)
    cells = {(a, b): (w, t, lo) for a, b, w, t, lo in zip(
        c.agent_a.values, c.agent_b.values, c.n_win_a.values, c.n_tie.values, c.n_win_b.values, strict=True)}
    assert cells == {("A", "B"): (1, 0, 0), ("A", "C"): (0, 2, 0), ("B", "C"): (0, 0, 1), ("C", "A"): (2, 0, 0)}


def test_repeats_in_a_table_of_only_the_columns_read_are_battles_kept():
    # 3 wins of A over B and 2 of B over A, no id: a repeat is another battle, kept without a word
    df = pd.DataFrame([("A", "B", "left")] * 3 + [("A", "B", "right")] * 2, columns=["left", "right", "winner"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = read_battles(df)
    assert got.sizes["comparison"] == 5
    assert _counted(got) == (5, 5, {}, 3)  # by hand: 2 repeats of the first row, 1 of the fourth
    assert _counted(read_battles(df, duplicates="drop")) == (5, 2, {DROP_KEY: 3}, 0)


def test_same_pair_prompt_judge_and_verdict_with_another_id_is_no_duplicate():
    df = BASE.iloc[[0, 0]].assign(id=[7, 8])
    assert _counted(read_battles(df, task="prompt", judge="worker")) == (2, 2, {}, 0)
    # values with their type: the id 1 and the text "1" differ
    typed = BASE.iloc[[0, 0]].assign(id=pd.Series([1, "1"], dtype=object).to_numpy())
    assert read_battles(typed).sizes["comparison"] == 2


def test_duplicates_option_is_checked():
    with pytest.raises(EvalDataError, match=r"`duplicates` must be 'refuse', 'drop' or 'keep'; got 'ignore'"):
        read_battles(BASE, duplicates="ignore")


def test_llmfao_has_no_exact_duplicate_and_reads_as_before(shared_data):
    path = shared_data / "evalica" / "llmfao_pairwise.csv"
    raw = pd.read_csv(path)
    assert int(raw.duplicated().sum()) == 0  # pandas, not the reader
    got = read_battles(path, task="prompt", judge="worker")
    assert _counted(got) == (len(raw), len(raw), {}, 0)
    want = raw["winner"].map({"left": 1.0, "right": 0.0, "tie": 0.5}).to_numpy()
    np.testing.assert_array_equal(got.outcome.values, want)
    np.testing.assert_array_equal(got.agent_a.values.astype(str), raw["left"].to_numpy().astype(str))


def test_equal_numbers_with_other_text_are_no_duplicate_and_distinct_numbers_settle_it():
    """The shortcut (records distinct on their numeric columns are distinct) decides only when it can.

    Two records with the same id but another verdict are distinct (the full comparison says so);
    two with the same id and every other column equal are a copy, refused as before.
    """
    same_id = BASE.assign(id=[0, 0, 1, 1])
    assert read_battles(same_id).attrs["n_repeated_records"] == 0  # by hand: no two rows equal in every column
    copy = pd.concat([same_id, same_id.iloc[[2]]], ignore_index=True)
    with pytest.raises(EvalDataError, match=r"1 of 5 records repeat an earlier record in every column.*\(2, 4\)"):
        read_battles(copy)


def test_repeats_counted_from_the_readers_codes_are_pandas_duplicates(shared_data):
    """The repeat count of a table of read columns only (built from the codes the reader already has).

    Expected: pandas' own ``duplicated`` on the same columns; on LLMFAO's three columns, with the
    prompt read as the task, and on a table whose agents are integers (hashed, not coded).
    """
    raw = pd.read_csv(shared_data / "evalica" / "llmfao_pairwise.csv")
    three = raw[["left", "right", "winner"]]
    assert read_battles(three).attrs["n_repeated_records"] == int(three.duplicated().sum()) > 0
    four = raw[["left", "right", "winner", "prompt"]]
    got = read_battles(four, task="prompt", duplicates="drop")
    assert got.attrs["n_records_kept"] == int((~four.duplicated()).sum())
    g = np.random.default_rng(0)
    ints = pd.DataFrame({"left": g.integers(0, 4, 300), "right": g.integers(4, 8, 300),
                         "winner": g.choice(["left", "right", "tie"], 300)})  # fmt: skip
    assert read_battles(ints).attrs["n_repeated_records"] == int(ints.duplicated().sum())
