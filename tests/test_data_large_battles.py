"""The large-log count readers refuse a pairwise battle table read as a run log, as the record reader does.

A battle table (``left, right, winner`` or ``home, away, result``) read with ``agent`` one side
and a numeric verdict as the score passed the DuckDB and Dask readers as a run log: each
record one side's result against another opponent each time, the opponent dropped. They now
call the record reader's check (``_check_battles``), which names the columns and points to
``read_battles``; a run log with a column that happens to be called ``right`` still reads.
"""

from __future__ import annotations

import pandas as pd
import pytest

from hierbench.data import EvalDataError
from hierbench.data import counts_from_dask
from hierbench.data import counts_from_parquet
from hierbench.data import from_records

pytest.importorskip("duckdb")
dd = pytest.importorskip("dask.dataframe")


def _battles(side: str, other: str, verdict: str) -> pd.DataFrame:
    """Four battles on two questions, the verdict 1 / 0 (the side won or lost): numbers a score would take."""
    return pd.DataFrame({side: ["A", "B", "A", "C"], other: ["B", "A", "C", "A"], "q": ["q1", "q1", "q2", "q2"],
                         verdict: [1.0, 0.0, 1.0, 0.0]})  # fmt: skip


def _read_parquet(df: pd.DataFrame, tmp_path, **kw):
    df.to_parquet(tmp_path / "battles.parquet")
    return counts_from_parquet(tmp_path / "battles.parquet", **kw)


def _read_dask(df: pd.DataFrame, tmp_path, **kw):
    df.to_csv(tmp_path / "battles.csv", index=False)
    return counts_from_dask(dd.read_csv(tmp_path / "battles.csv"), **kw)


@pytest.mark.parametrize("read", [_read_parquet, _read_dask])
@pytest.mark.parametrize(("side", "other", "verdict"), [("left", "right", "winner"), ("home", "away", "result")])
def test_a_battle_table_is_refused_naming_its_columns(read, side, other, verdict, tmp_path):
    df = _battles(side, other, verdict)
    with pytest.raises(EvalDataError, match=f"`agent`='{side}' in .* is one side of pairwise battles "
                                            f"\\({side}, {other}, {verdict}\\): column '{other}'") as err:  # fmt: skip
        read(df, tmp_path, agent=side, task="q", score=verdict)
    assert "hierbench.data.read_battles(" in str(err.value)
    # the record reader refuses the same table with the same words (one owner of the check)
    with pytest.raises(EvalDataError) as rec:
        from_records(df, agent=side, task="q", score=verdict)
    assert str(err.value).split(" is one side", 1)[1] == str(rec.value).split(" is one side", 1)[1]


@pytest.mark.parametrize("read", [_read_parquet, _read_dask])
def test_a_run_log_with_a_column_called_right_still_reads(read, tmp_path):
    df = pd.DataFrame({"agent": ["A", "A", "B"], "task": ["t1", "t2", "t1"], "score": [1.0, 0.0, 1.0],
                       "right": ["x", "y", "z"], "winner": ["x", "x", "z"]})  # fmt: skip
    got = read(df, tmp_path, duplicates="keep")
    assert got["n_runs"].values.tolist() == [[1, 1], [1, 0]]  # by hand: A ran t1 and t2, B t1
