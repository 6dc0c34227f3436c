"""Audit s76 R findings 3, 6 and 7: JSON coords, text run labels, and the read report after a saved file.

Each expected value comes from pandas on the file the test writes (or is written by hand here),
never from the reader under test.
"""

from __future__ import annotations

import datetime as dt
import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench import HierbenchWarning
from hierbench.data import EvalDataError
from hierbench.data import UnreadColumnWarning
from hierbench.data import from_records
from hierbench.data import model_design
from hierbench.data import read_report
from hierbench.io import load_dataset
from hierbench.io import load_fit
from hierbench.io import save_dataset
from hierbench.io import save_fit


def _records() -> pd.DataFrame:
    """3 agents x 6 tasks; per task an int count, a float time and a flag."""
    n_files = [3, 1, 4, 1, 5, 9]
    minutes = [248.5, 123.4, 165.3, 2.25, 80.0, 7.5]
    rows = [
        {"agent": a, "task": f"t{i}", "score": (i + k) % 2, "n_files": n_files[i], "minutes": minutes[i],
         "hard": i % 2 == 0}
        for k, a in enumerate("abc") for i in range(6)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def _jsonl(df: pd.DataFrame, path) -> None:
    path.write_text("\n".join(json.dumps(r) for r in df.to_dict(orient="records")) + "\n")


# --------------------------------------------------------------------------- finding 3: JSON coords


def test_jsonl_number_coords_are_numbers_as_from_csv(tmp_path):
    df = _records()
    _jsonl(df, tmp_path / "r.jsonl")
    df.to_csv(tmp_path / "r.csv", index=False)
    want = df.groupby("task", sort=False)[["n_files", "minutes"]].first()  # pandas, per task
    for name in ("r.jsonl", "r.csv"):
        ds = from_records(tmp_path / name, task_coords=["n_files", "minutes"])
        for c in ("n_files", "minutes"):
            assert ds[c].dtype == np.float64, (name, c, ds[c].dtype)
            np.testing.assert_array_equal(ds[c].values, want[c].reindex(ds.task.values).to_numpy(float))
        # the formula that failed with "Variable is of an unrecognized type" from JSONL
        assert model_design("score ~ n_files + (1|agent)", ds).coef == ["Intercept", "n_files"]


def test_json_booleans_are_bool_and_never_numbers(tmp_path):
    df = _records()
    _jsonl(df, tmp_path / "r.jsonl")
    ds = from_records(tmp_path / "r.jsonl", task_coords=["hard"])
    assert ds["hard"].dtype == bool
    assert ds["hard"].values.tolist() == [True, False, True, False, True, False]  # i % 2 == 0, by hand
    # a flag missing for one task stays as stored (objects), not 0/1 floats
    df["hard"] = df["hard"].astype(object)
    df.loc[df.task == "t1", "hard"] = None
    _jsonl(df, tmp_path / "m.jsonl")
    ds = from_records(tmp_path / "m.jsonl", task_coords=["hard"])
    assert ds["hard"].dtype == object
    assert ds["hard"].values.tolist() == [True, None, True, False, True, False]


def test_mixed_json_coord_is_kept_and_survives_a_saved_file(tmp_path):
    values = {"t0": 3, "t1": "hard", "t2": True, "t3": None, "t4": "4", "t5": 2.5}
    rows = [{"agent": a, "task": t, "score": 1, "mix": v} for a in "ab" for t, v in values.items()]
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    ds = from_records(tmp_path / "m.jsonl", task_coords=["mix"])
    # text is never read as a number: "4" stays text next to the number 3
    assert ds["mix"].dtype == object
    assert ds["mix"].values.tolist() == list(values.values())
    back = load_dataset(save_dataset(ds, tmp_path / "m.nc"))
    got = back["mix"].values.tolist()
    assert got == list(values.values())
    assert [type(v) for v in got] == [int, str, bool, type(None), str, float]
    assert back.identical(ds)


def test_saved_numbers_in_an_object_coord_come_back_as_numbers(tmp_path):
    df = _records()
    _jsonl(df, tmp_path / "r.jsonl")
    ds = from_records(tmp_path / "r.jsonl", task_coords=["n_files", "minutes"])
    back = load_dataset(save_dataset(ds, tmp_path / "r.nc"))
    assert back["minutes"].dtype == np.float64
    np.testing.assert_array_equal(back["minutes"].values, [248.5, 123.4, 165.3, 2.25, 80.0, 7.5])
    # a dataset built by hand with Python ints held as objects keeps them as ints
    hand = xr.Dataset(coords={"task": ["t0", "t1"], "level": ("task", np.array([3, 12], dtype=object))})
    again = load_dataset(save_dataset(hand, tmp_path / "h.nc"))
    assert again["level"].values.tolist() == [3, 12]
    assert all(type(v) is int for v in again["level"].values)


def test_saving_an_object_that_is_no_text_number_or_bool_is_refused(tmp_path):
    ds = xr.Dataset(coords={"task": ["t0", "t1"], "when": ("task", np.array([dt.date(2024, 1, 1), "x"], dtype=object))})
    with pytest.raises(EvalDataError, match=r"variable 'when' holds values that are not text, numbers or bools \(date"):
        save_dataset(ds, tmp_path / "w.nc")
    assert not (tmp_path / "w.nc").exists()


# --------------------------------------------------------------------------- finding 6: text run labels


def _seeds(tmp_path, rows) -> str:
    p = tmp_path / "seeds.csv"
    pd.DataFrame(rows, columns=["agent", "task", "run", "score"]).to_csv(p, index=False)
    return str(p)


def test_text_run_labels_at_different_numbers_are_warned(tmp_path):
    # agent a has only seed2 on t2: numbered in its cell, seed2 becomes run 0 there
    rows = [("a", "t1", "seed1", 1), ("a", "t1", "seed2", 0), ("a", "t2", "seed2", 0),
            ("b", "t1", "seed1", 1), ("b", "t1", "seed2", 1), ("b", "t2", "seed1", 1), ("b", "t2", "seed2", 0)]  # fmt: skip
    with pytest.warns(HierbenchWarning, match=r"'seed2' is run 1 in a/t1 and run 0 in a/t2") as seen:
        ds = from_records(_seeds(tmp_path, rows), run="run")
    msg = str(seen[0].message)
    assert "1 of 2 labels recur" in msg and "run_index='within_cell'" in msg
    assert ds.attrs["run_index"] == "within_cell"
    # the labels stay with their runs (by hand from the rows above)
    assert ds["run_id"].sel(agent="a").values.tolist() == [["seed1", "seed2"], ["seed2", ""]]
    assert ds["run_id"].sel(agent="b").values.tolist() == [["seed1", "seed2"], ["seed1", "seed2"]]


def test_run_index_is_recorded_and_aligned_or_unique_labels_are_not_warned(tmp_path):
    aligned = [("a", "t1", "seed1", 1), ("a", "t1", "seed2", 0), ("a", "t2", "seed1", 0),
               ("b", "t1", "seed1", 1), ("b", "t1", "seed2", 1), ("b", "t2", "seed1", 1)]  # fmt: skip
    unique = [(a, t, f"{a}-{t}-{k}", 1) for a in "ab" for t in ("t1", "t2") for k in range(2)]
    ints = [(a, t, k, 1) for a in "ab" for t in ("t1", "t2") for k in range(2)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert from_records(_seeds(tmp_path, aligned), run="run").attrs["run_index"] == "within_cell"
        assert from_records(_seeds(tmp_path, unique), run="run").attrs["run_index"] == "within_cell"
        assert from_records(_seeds(tmp_path, ints), run="run").attrs["run_index"] == "label"
        shifted = [("a", "t1", "s1", 1), ("a", "t1", "s2", 0), ("a", "t2", "s2", 0), ("b", "t2", "s1", 1)]
        ds = from_records(_seeds(tmp_path, shifted), run="run", run_index="within_cell")  # asked: no warning
    assert ds.attrs["run_index"] == "within_cell"
    with pytest.warns(UnreadColumnWarning):  # no run column read: nothing recorded
        assert "run_index" not in from_records(_seeds(tmp_path, ints)).attrs
    with pytest.raises(EvalDataError, match="sets \\['run_index'\\]"):
        from_records(_seeds(tmp_path, ints), run="run", attrs={"run_index": "label"})


# --------------------------------------------------------------------------- finding 7: the report after a file


def test_read_report_after_a_saved_file_is_json_ready_and_none_stays_none(tmp_path):
    df = _records()
    df.to_csv(tmp_path / "r.csv", index=False)
    ds = from_records(tmp_path / "r.csv", attrs={"note": None, "seed": 7})
    back = load_dataset(save_dataset(ds, tmp_path / "r.nc"))
    assert back.attrs["note"] is None
    assert type(back.attrs["n_records_read"]) is int and back.attrs["n_records_read"] == len(df)
    assert type(back.attrs["seed"]) is int and back.attrs["seed"] == 7
    json.dumps(read_report(back))  # raised TypeError on numpy int64
    assert back.identical(ds)
    # the encoding: the JSON text "null", listed with the JSON attrs
    with xr.open_dataset(tmp_path / "r.nc") as raw:
        assert raw.attrs["note"] == "null" and "note" in json.loads(raw.attrs["hierbench_json_attrs"])


def test_a_none_attr_of_a_fit_group_reads_back_as_none(tmp_path):
    post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, 3)))}, attrs={"note": None, "n": 4})
    back = load_fit(save_fit(xr.DataTree.from_dict({"posterior": post}), tmp_path / "f.nc"))
    assert back["posterior"].attrs["note"] is None
    assert type(back["posterior"].attrs["n"]) is int


def test_a_run_term_is_refused_where_runs_were_numbered_within_cells():
    """Labels seed1 / seed2 in swapped file order in half the cells: numbered within each cell, run 0
    is seed2 in some cells and seed1 in others, so (1|run) would pool different seeds. Refused there;
    the same design with the labels mapped to integers by hand is accepted at the run level.
    """
    from hierbench.data import FormulaError

    rows = [{"agent": a, "task": f"t{t}", "run": lab, "score": float((t + k) % 2)}
            for a in ("a", "b") for t in range(6)
            for k, lab in enumerate(["seed1", "seed2"] if t % 2 else ["seed2", "seed1"])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = from_records(pd.DataFrame(rows), run="run")
    assert ds.attrs["run_index"] == "within_cell"
    with pytest.raises(FormulaError, match=r"uses `run`, but the runs of `data` were numbered within each"):
        model_design("score ~ agent + (1|run)", ds)
    assert model_design("score ~ agent + (1|task)", ds).row_level == "cell"
    ints = from_records(pd.DataFrame([{**r, "run": int(r["run"][-1])} for r in rows]), run="run")
    assert ints.attrs["run_index"] == "label"
    assert model_design("score ~ agent + (1|run)", ints).row_level == "run"
