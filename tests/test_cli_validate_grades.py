"""``hierbench validate`` says what the fit would refuse, in the fit's words (audit F6).

A grade scale with a grade that never occurs (``--levels 1,2,3,4`` on grades 1-3) passed validate
without a word, and ``fit --formula`` then refused it; validate now warns with the ordinal fit's own
message (the data stay valid: exit 0). And the refusal of an ``--agent-coord`` that varies within an
agent reads "an agent attribute".
"""

from __future__ import annotations

import pandas as pd
import pytest

from hierbench.cli import main
from hierbench.data import FormulaError
from hierbench.data import from_records
from hierbench.data import model_design

COLS = ["--agent", "agent", "--task", "task", "--score", "grade"]


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.fixture
def graded(tmp_path):
    df = pd.DataFrame({"agent": ["a", "a", "b", "b"], "task": ["t1", "t2", "t1", "t2"], "grade": [1, 2, 3, 2],
                       "tier": ["x", "y", "x", "y"]})
    path = tmp_path / "grades.csv"
    df.to_csv(path, index=False)
    return df, path


def test_validate_warns_of_a_grade_that_never_occurs_in_the_fits_words(graded, capsys):
    """Grades 1, 2, 3 occur (by hand, from the table); 4 does not."""
    df, path = graded
    assert main(["validate", str(path), *COLS, "--levels", "1,2,3"]) == 0
    assert "never occur" not in capsys.readouterr().err
    assert main(["validate", str(path), *COLS, "--levels", "1,2,3,4"]) == 0
    err = capsys.readouterr().err
    ds = from_records(df, score="grade", score_levels=[1, 2, 3, 4])
    with pytest.raises(FormulaError) as fit_refusal:
        model_design("score ~ (1|agent)", ds)
    assert "grades [4.0] of the scale [1.0, 2.0, 3.0, 4.0] never occur" in str(fit_refusal.value)
    said = str(fit_refusal.value).replace("`levels`", "--levels")
    assert f"warning: the ordinal fit (fit --formula) will refuse this grade scale: {said}" in err


def test_an_agent_coord_that_varies_within_an_agent_is_an_agent_attribute(graded, capsys):
    """The refusal read "a agent attribute"."""
    _, path = graded
    assert main(["validate", str(path), *COLS, "--levels", "1,2,3", "--agent-coord", "tier"]) == 2
    line = _error_line(capsys)
    assert "(an agent attribute, the same in every record of the agent)" in line
    assert "not an agent attribute" in line and "a agent" not in line
