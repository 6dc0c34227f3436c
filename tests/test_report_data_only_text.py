"""The data-only report's small texts say what the log has (audit Q, finding 13).

A log alone has no posterior (the pass^k paragraph named "a posterior interval"); a log of one
agent has nothing to rank, whatever the fit (it read "needs a fit with an agent-level variable");
grades 1-3 read onto [0, 1] are graded scores (the summary read "scores mixed"). The logs are
built here; what each report must say follows from them.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest

from hierbench.data import from_records
from hierbench.report import build


def _section(md: str, heading: str) -> str:
    part = md.split(f"## {heading}", 1)[1]
    return part.split("\n## ", 1)[0]


@pytest.mark.slow  # two reports (about 3 s each)
def test_one_agent_log_and_graded_log_are_described_as_they_are(tmp_path):
    g = np.random.default_rng(0)
    one = pd.DataFrame([{"agent": "solo", "task": f"t{t}", "run": r, "score": int(g.random() < 0.6)}
                        for t in range(12) for r in range(3)])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        md = build(data=from_records(one, run="run"), path=tmp_path / "one.md", n_resamples=199,
                   progress=False).read_text()  # fmt: skip
    passk = _section(md, "Reliability: pass^k")
    assert "posterior" not in passk and "marks fewer than 10 tasks, by a letter." in passk
    assert "one agent (solo): nothing to rank" in _section(md, "Rank probabilities")
    assert "agent-level variable" not in _section(md, "Rank probabilities")

    graded = pd.DataFrame([{"agent": a, "task": f"t{t}", "score": int(g.integers(1, 4))}
                           for a in ("a", "b") for t in range(10)])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = from_records(graded, score_levels=[1, 2, 3])
        md = build(data=ds, path=tmp_path / "graded.md", n_resamples=199, progress=False).read_text()
    assert set(graded["score"]) == {1, 2, 3}  # three grades: neither binary nor continuous
    line = next(ln for ln in _section(md, "Data summary").splitlines() if re.search(r"; scores ", ln))
    assert "; scores graded (grades 1, 2, 3" in line and "scores mixed" not in md
