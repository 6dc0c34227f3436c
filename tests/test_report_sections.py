"""``build(sections=...)`` and ``hierbench report --sections``: a report cut to some sections, said so.

The reference is the full report of the same inputs: each kept section must be its section
there, the others absent, and the sentence under the title must name every section left out.
"""

from __future__ import annotations

import re
import warnings

import pytest

from hierbench import report
from hierbench.cli import main
from hierbench.report._context import _TITLES
from hierbench.testing import simulate_eval

_KW = {"n_resamples": 199, "rng": 3, "progress": False}


def _sections(text: str) -> dict[str, str]:
    """A Markdown report's sections by heading (the heading line to the next one)."""
    parts = re.split(r"^(## .*)$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


@pytest.fixture(scope="module")
def log():
    return simulate_eval(n_agents=3, n_tasks=16, n_runs=2, rng=5)[0]


@pytest.fixture(scope="module")
def full(log, tmp_path_factory):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return report.build(data=log, path=tmp_path_factory.mktemp("full") / "r.md", **_KW).read_text()


def test_kept_sections_are_the_full_reports_and_the_lead_names_every_one_left_out(log, full, tmp_path):
    asked = ["pairwise", "data-summary"]  # out of order: the report keeps its own
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = report.build(data=log, path=tmp_path / "r.md", sections=asked, **_KW).read_text()
    whole, cut = _sections(full), _sections(text)
    assert list(cut) == [h for h in whole if h in cut] and len(cut) == 2
    assert all(cut[h].rstrip() == whole[h].rstrip() for h in cut)  # the last one ends the file
    assert "A partial report" not in full
    lead = text.split("\n## ", 1)[0]
    left = [t for sid, t in _TITLES.items() if sid not in asked and f"## {t}" in "\n".join(whole)]
    assert left and all(t in lead for t in left), (left, lead)
    assert "sections=['pairwise', 'data-summary']" in lead


@pytest.mark.parametrize(("sections", "err", "words"), [
    ("pairwise", TypeError, "must be a list of section ids"),
    ([], ValueError, "at least one"),
    (["ranks", "ranks"], ValueError, "each section once"),
    (["rank"], ValueError, r"no section \['rank'\]; the ids are"),
    (["horizons"], ValueError, "needs a horizon fit or a log with a human_minutes task coord"),
])  # fmt: skip
def test_sections_a_report_cannot_have_are_refused_before_any_is_computed(log, tmp_path, sections, err, words):
    with pytest.raises(err, match=words):
        report.build(data=log, path=tmp_path / "r.md", sections=sections, **_KW)
    assert not (tmp_path / "r.md").exists()


def test_cli_sections_flag_cuts_the_report_and_names_itself_in_refusals(log, tmp_path, capsys):
    from hierbench.io import save_dataset

    save_dataset(log, tmp_path / "log.nc")
    out = tmp_path / "r.md"
    argv = ["report", "--data", str(tmp_path / "log.nc"), "-o", str(out), "--resamples", "199", "--quiet"]
    assert main([*argv, "--sections", "data-summary"]) == 0
    assert list(_sections(out.read_text())) == ["## Data summary"]
    assert main([*argv, "--overwrite", "--sections", "data-summary,effects"]) == 2
    err = capsys.readouterr().err
    assert "--sections" in err and "'effects' needs a formula fit" in err
