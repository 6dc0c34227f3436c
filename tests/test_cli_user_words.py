"""The command line's errors and remedies name its flags, never a Python keyword (audit C of s17, findings 3, 4).

Each expected line is the flag the parser takes, written out by hand; the Python messages keep their
keywords (checked beside them).
"""

from __future__ import annotations

import argparse
import json

import pandas as pd
import pytest
import xarray as xr

from hierbench.bayes._checks._diagnostics import _advice
from hierbench.cli import main
from hierbench.cli._commands import _verdict_line
from hierbench.cli._reading import _user_words
from hierbench.data import from_records


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "ok.csv"
    pd.DataFrame({"agent": ["a", "a", "b", "b"], "task": ["t1", "t2", "t1", "t2"], "score": [1, 0, 0, 1]}).to_csv(
        path, index=False
    )
    return path


def test_duplicate_records_name_the_run_flag(tmp_path, capsys):
    rows = pd.DataFrame({"agent": ["a", "a", "b"], "task": ["t1", "t1", "t1"], "score": [1, 1, 0]})
    path = tmp_path / "dups.csv"
    rows.to_csv(path, index=False)
    assert main(["summary", str(path)]) == 2
    line = _one_line(capsys)
    assert "give the run or epoch column (--run), pass --duplicates drop" in line and "run=" not in line
    with pytest.raises(ValueError, match=r"give the run or epoch column \(`run`\), pass duplicates='drop'"):
        from_records(rows)  # Python: the keyword


def test_a_checked_count_and_a_seed_are_said_as_their_flags(log, tmp_path, capsys):
    assert main(["report", "--data", str(log), "-o", str(tmp_path / "r.md"), "--resamples", "0"]) == 2
    assert _one_line(capsys) == "hierbench report: invalid input: --resamples must be >= 1; got --resamples 0"
    assert main(["compare", str(log), "--seed", "-1"]) == 2
    assert _one_line(capsys) == "hierbench compare: invalid input: --seed must be a non-negative integer; got -1"


def _short_fixed_fit() -> xr.DataTree:
    """A fit of a fixed 200 draws per chain whose ESS failed at a variable its builder has a hint for."""
    dt = xr.DataTree()
    dt.attrs = {
        "diag_converged": 0,
        "diag_failures": json.dumps(["min ESS_bulk 86 < 200 (at `sd_ability`)"]),
        "diag_checks": json.dumps([{"check": "ess_bulk", "passed": False}]),
        "sampler_settings": json.dumps({"draws_rule": "fixed", "draws": 200}),
        "hierbench_structure": json.dumps({"hints": {"sd_ability": ["weakly identified", "a fixed scale"]}}),
    }
    dt.attrs["diag_advice"] = _advice(dt, ["sd_ability"], diverged=False)
    return dt


def test_the_convergence_remedy_says_leave_draws_out_never_draws_none():
    dt = _short_fixed_fit()
    assert "with nutpie, draws=None draws to the target ESS; else draws=2000" in dt.attrs["diag_advice"]  # Python
    line = _user_words(_verdict_line(dt), argparse.Namespace(file="LOG"))
    assert "--draws None" not in line and "None" not in line
    assert "refit with more draws first (with nutpie, leave --draws out to draw to the target ESS; else --draws 2000)" in line


@pytest.mark.parametrize(("prompt", "unit"), [([], "battles"), (["--prompt", "prompt"], "prompts")])
def test_a_battle_report_without_a_fit_names_the_fit_command_and_what_it_resamples(tmp_path, capsys, prompt, unit):
    pairs = [("a", "b"), ("b", "c"), ("c", "a"), ("a", "c")] * 3
    battles = pd.DataFrame({"prompt": [f"p{i % 4}" for i in range(len(pairs))], "left": [p[0] for p in pairs],
                            "right": [p[1] for p in pairs], "winner": ["left", "right", "tie"] * 4})  # fmt: skip
    path = tmp_path / "battles.csv"
    battles.to_csv(path, index=False)
    out = tmp_path / "r.md"
    assert main(["report", "--data", str(path), "--battles", *prompt, "-o", str(out), "--sections", "abilities",
                 "--quiet"]) == 0  # fmt: skip
    text = out.read_text()
    assert "the command line fits run logs only" not in text
    assert "from the command line `hierbench fit LOG --battles -o FIT`, then `hierbench report FIT --data LOG --battles`" in text
    assert f"rank intervals under resampling of the {unit}," in text
    assert "--ties none (battles that cannot end in a tie) or --home" in text
