"""An ordinal formula fit beside its log read on another grade scale is refused (audit C of s17, finding 1).

The fit is laid out as ``hierbench.bayes.fit`` keeps what the check reads (the builder's spec and
the design's fingerprint), without sampling. The scales in the expected messages are the ones the
test reads the log on, written out by hand.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench import HierbenchWarning
from hierbench.bayes import build_mixed
from hierbench.cli import main
from hierbench.data import from_records
from hierbench.io import save_fit
from hierbench.report import FitDataMismatchError
from hierbench.report import check_fit_data

FORMULA = "score ~ temp + (1|agent)"


def _frame() -> pd.DataFrame:
    """4 judges x 6 bottles, one grade each on 1..5, every grade used; a task covariate `temp`."""
    rows = [{"agent": f"j{a}", "task": f"b{t}", "temp": "cold" if t % 2 else "warm", "grade": 1 + (a + 2 * t) % 5}
            for a in range(4) for t in range(6)]  # fmt: skip
    return pd.DataFrame(rows)


def _read(df: pd.DataFrame, **kw) -> xr.Dataset:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return from_records(df, score="grade", **kw)


def _fit(ds: xr.Dataset, levels) -> xr.DataTree:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        info = build_mixed(ds, FORMULA, levels=levels).hierbench
    spec = json.dumps({"model": info["model"], "options": info.get("options", {}), "priors": {}}, default=str)
    attrs = {"hierbench_model": info["model"], "hierbench_spec": spec, "hierbench_data_hash": info["data_hash"]}
    post = xr.Dataset({"sd": (("chain", "draw"), np.ones((2, 10)))})
    return xr.DataTree.from_dict({"/": xr.Dataset(attrs=attrs), "posterior": post})


def _scaled(df: pd.DataFrame) -> pd.DataFrame:
    return df.assign(grade=(df["grade"] - 1) / 4)  # the grades 1..5 already scaled to [0, 1]


@pytest.mark.parametrize(
    ("how", "theirs"),
    [
        ({"score_levels": [1, 2, 3, 4, 5, 6]}, "the data's were read as the grades 1, 2, 3, 4, 5, 6 (`score_levels`)"),
        ({"score_levels": [0, 1, 2, 3, 4, 5]}, "the data's were read as the grades 0, 1, 2, 3, 4, 5 (`score_levels`)"),
        ({}, "the data's were read without a grade scale (no `score_levels`: scores in [0, 1], e.g. 0, 0.25, 0.5"),
    ],
)
def test_an_ordinal_fit_refuses_its_log_read_on_another_grade_scale(how, theirs):
    df = _frame()
    fit = _fit(_read(df, task_coords=["temp"], score_levels=[1, 2, 3, 4, 5]), levels=[1, 2, 3, 4, 5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # its own log: no refusal, nothing said
        check_fit_data(fit, _read(df, task_coords=["temp"], score_levels=[1, 2, 3, 4, 5]))
    other = _read(df if how else _scaled(df), task_coords=["temp"], **how)
    with pytest.raises(FitDataMismatchError) as err:
        check_fit_data(fit, other)
    msg = str(err.value)
    assert "the fit's ordinal model reads the scores as the grades 1, 2, 3, 4, 5 and " + theirs in msg
    assert msg.endswith("read on the fit's grade scale (`score_levels=[1, 2, 3, 4, 5]`)")


def test_a_fit_given_levels_on_a_log_without_a_scale_keeps_its_log_and_refuses_the_graded_reading():
    df = _scaled(_frame())
    unscaled = _read(df, task_coords=["temp"])
    fit = _fit(unscaled, levels=[0, 0.25, 0.5, 0.75, 1])  # every score is a grade of this scale
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_fit_data(fit, unscaled)
    graded = _read(_frame(), task_coords=["temp"], score_levels=[1, 2, 3, 4, 5])  # the same file, read on 1..5
    with pytest.raises(FitDataMismatchError, match=r"grades 0, 0\.25, 0\.5, 0\.75, 1 and the data's were read "
                                                   r"as the grades 1, 2, 3, 4, 5 \(`score_levels`\)"):  # fmt: skip
        check_fit_data(fit, graded)


def test_a_design_that_cannot_be_rebuilt_from_the_log_is_said_not_passed_in_silence():
    df = _frame()
    fit = _fit(_read(df, task_coords=["temp"], score_levels=[1, 2, 3, 4, 5]), levels=[1, 2, 3, 4, 5])
    without = _read(df, score_levels=[1, 2, 3, 4, 5])  # the covariate the formula reads not read
    with pytest.warns(HierbenchWarning) as rec:
        check_fit_data(fit, without, fit_name="FIT", data_name="LOG")
    said = [str(w.message) for w in rec if "could not be rebuilt" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in rec]
    assert said[0].startswith("FIT and LOG: the formula model's design could not be rebuilt from the data (")
    assert "['temp']" in said[0] and "only their agents and tasks were compared" in said[0]


def test_the_command_line_refuses_the_other_scale_naming_levels_and_says_an_unrebuilt_design(tmp_path, capsys):
    df = _frame()
    log = tmp_path / "wine.csv"
    df.to_csv(log, index=False)
    fit = save_fit(_fit(_read(df, task_coords=["temp"], score_levels=[1, 2, 3, 4, 5]), levels=[1, 2, 3, 4, 5]),
                   tmp_path / "fit.nc")  # fmt: skip
    out = tmp_path / "r.md"
    cols = ["--score", "grade", "--task-coord", "temp"]
    assert main(["report", str(fit), "--data", str(log), *cols, "--levels", "1,2,3,4,5,6", "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("hierbench report: invalid input: FIT ")
    assert "the data's were read as the grades 1, 2, 3, 4, 5, 6 (--levels)" in err[0]
    assert err[0].endswith("read on the fit's grade scale (--levels 1,2,3,4,5)") and not out.exists()
    # the covariate not read: the report is written, and stderr says the pair was checked in part only
    argv = ["report", str(fit), "--data", str(log), "--score", "grade", "--levels", "1,2,3,4,5", "-o", str(out),
            "--sections", "data-summary", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "warning: HierbenchWarning: FIT " in err and "the formula model's design could not be rebuilt" in err
    assert "only their agents and tasks were compared" in err and out.exists()
