"""A grade scale that starts with a minus sign on the command line (audit C, C10).

``--levels -1,0,1`` stopped with argparse's "argument --levels: expected one argument" (the
shell's ``-1,0,1`` reads as a flag); ``--levels=-1,0,1`` works. The error and the help now say
the form that works. Expected scores by hand: grade g of -1, 0, 1 is (g + 1) / 2.
"""

import json

import pandas as pd
import pytest

from hierbench.cli import build_parser
from hierbench.cli import main


def _likert(tmp_path) -> str:
    df = pd.DataFrame({"agent": ["a", "a", "b", "b"], "task": ["t1", "t2", "t1", "t2"], "score": [-1, 1, 0, 1]})
    path = tmp_path / "likert.csv"
    df.to_csv(path, index=False)
    return str(path)


def test_a_negative_scale_after_a_space_is_refused_naming_the_form_that_works(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["validate", _likert(tmp_path), "--levels", "-1,0,1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --levels:" in err and "--levels=-1,0,1" in err, err
    assert "expected one argument" not in err


def test_the_joined_form_reads_the_grades(tmp_path, capsys):
    assert main(["summary", _likert(tmp_path), "--levels=-1,0,1", "--json", "--no-person-fit"]) == 0
    doc = json.loads(capsys.readouterr().out)
    means = {a["agent"]: a["mean_score"] for a in doc["agents"]}
    # a: grades -1 and 1 -> 0 and 1, mean 0.5; b: 0 and 1 -> 0.5 and 1, mean 0.75
    assert means == {"a": 0.5, "b": 0.75}


def test_the_help_shows_the_joined_form():
    sub = build_parser()._subparsers._group_actions[0].choices["validate"]
    assert "--levels=-2,-1,0,1,2" in " ".join(sub.format_help().split())
