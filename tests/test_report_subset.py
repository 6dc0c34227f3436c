"""The report's "Subset estimates" section (issue 25, item 4): per-agent misfit is visible.

The log is simulated from a one-skill 2PL (``design.simulate_irt_log``,
fixed seed) and one agent's answers are reversed on every task (it fails
what the others solve and solves what they fail): a planted misfit. (Reversed
on the easy tasks only, its Edgeworth-corrected p-value, 0.020, no longer
passes Holm over 12 agents at 0.01; Phi(z) had given 0.009.) The bank is calibrated on the other
agents only. With ``prob = 0.99`` a fitting agent is flagged with
probability about 0.01 (the misfit test's p-value is close to uniform under
the model), so at this seed only the planted agent is flagged; the tests
also check that the report marks exactly the rows the result itself flags.
No PyMC: ``fit=None`` and ``freq=None`` keep each report to a second or two.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench.design import assisted_adaptive
from hierbench.design import assisted_mean
from hierbench.design import plan_subset
from hierbench.design import simulate_irt_log
from hierbench.freq import fit_irt_ml
from hierbench.report import FitDataMismatchError
from hierbench.report import build
from hierbench.report._subset import FLAG_TEXT
from hierbench.report._subset import MODEL_COLUMN

PROB = 0.99
BAD = "agent_000"


@pytest.fixture(scope="module")
def log():
    ds, _ = simulate_irt_log(12, 80, rng=0)
    score = ds["score"].values.copy()
    score[0] = 1 - score[0]
    return ds.assign(score=(ds["score"].dims, score))


@pytest.fixture(scope="module")
def result(log):
    bank = fit_irt_ml(log.isel(agent=slice(1, None)), model="1pl", rng=0).bank
    return assisted_adaptive(bank, log, n_tasks=40, prob=PROB, rng=1)


def _build(tmp_path, log, subset, suffix, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build(data=log, path=tmp_path / f"r{suffix}", freq=None, subset=subset, prob=PROB,
                     progress=False, **kw).read_text()


@pytest.fixture(scope="module")
def reports(log, result, tmp_path_factory) -> dict[str, str]:
    """The report of ``log`` with ``result``, as Markdown and as HTML (each built once: three tests read them)."""
    folder = tmp_path_factory.mktemp("subset")
    return {suffix: _build(folder, log, result, suffix) for suffix in (".md", ".html")}


def _md_rows(text: str, heading: str = "## Subset estimates") -> dict[str, list[str]]:
    """The section's Markdown table as agent -> cells, and the header under key ''."""
    part = text.split(heading + "\n", 1)[1].split("\n## ", 1)[0]
    lines = [ln for ln in part.splitlines() if ln.startswith("|")]
    rows = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines]
    return {"": rows[0][1:], **{r[0]: r[1:] for r in rows[2:]}}


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_section_in_html_and_markdown(reports):
    md, html = reports[".md"], reports[".html"]
    assert "## Subset estimates" in md
    assert 'id="subset-estimates"' in html and MODEL_COLUMN in html
    # before the checklist, after the sections every report has
    assert md.index("## Subset estimates") < md.index("## Reporting checklist")
    sentence = next(ln for ln in md.split("## Subset estimates\n", 1)[1].splitlines() if ln.startswith("Design:"))
    assert "40 of 80 tasks per agent" in sentence and "probability is recorded" in sentence
    assert "design-unbiased, model-assisted" in sentence and "1PL IRT bank" in sentence
    assert "Interval: 99% t" in sentence
    # the bank's adaptive draws: Des Raj divides by each draw's probability, and the interval is a CLT's
    assert "and used by the estimator" in sentence and "martingale central limit theorem, approximate" in sentence


def test_flag_marks_the_misfit_agent_only(result, reports):
    assert result.flagged == [BAD]  # the planted misfit, and no false flag at this seed
    rows = _md_rows(reports[".md"])
    flag = rows[""].index("flag")
    marked = [a for a, cells in rows.items() if a and cells[flag] == FLAG_TEXT]
    assert marked == result.flagged
    assert all(cells[flag] == "" for a, cells in rows.items() if a and a != BAD)
    html = reports[".html"]
    table = html.split('id="subset-estimates"', 1)[1].split("</table>", 1)[0]
    trs = {re.search(r">(agent_\d+)<", tr).group(1): tr for tr in table.split("<tr>")[2:]}
    assert sorted(a for a, tr in trs.items() if re.search(r'class="[^"]*\bflag\b', tr)) == [BAD]


def test_table_numbers_are_the_results_own(result, reports):
    rows = _md_rows(reports[".md"])
    want = result.to_frame()
    cols = {"design-based estimate": "estimate", "lower": "lower", "upper": "upper", "tasks run": "n_tasks",
            MODEL_COLUMN: "model_estimate", "misfit p": "misfit_p", "misfit p (Holm)": "misfit_p_holm"}
    assert set(cols) <= set(rows[""])
    for agent in want.index:
        for col, field in cols.items():
            shown = float(rows[agent][rows[""].index(col)])
            # shown with 3 decimals (0.0625 prints as 0.062): half a unit of the last digit
            assert shown == pytest.approx(float(want.loc[agent, field]), abs=5.0001e-4), (agent, col)


def test_refuses_results_not_from_the_reports_data(tmp_path, log, result):
    with pytest.raises(FitDataMismatchError, match=rf"agent only in the result \(\['{BAD}'\]\)"):
        _build(tmp_path, log.isel(agent=slice(1, None)), result, ".md")
    # the same agents and tasks, one drawn outcome changed
    step0 = result.draws.isel(agent=1, step=0)
    agent, task = str(result.draws["agent"].values[1]), str(step0["task"].item())
    score = log["score"].copy()
    score.loc[{"agent": agent, "task": task}] = 1 - score.sel(agent=agent, task=task)
    with pytest.raises(FitDataMismatchError, match=rf"1 agent x task cells .*\({agent}, {task}\)"):
        _build(tmp_path, log.assign(score=score), result, ".md")
    with pytest.raises(TypeError, match="`subset` must be an AssistedResult"):
        _build(tmp_path, log, result.to_frame(), ".md")
    fit = xr.DataTree.from_dict({"posterior": xr.Dataset(coords={"agent": log["agent"].values})})
    with pytest.raises(ValueError, match="`subset` needs `data`"):
        build(fit=fit, path=tmp_path / "x.md", subset=result)


def test_several_results_and_no_working_model(tmp_path, log):
    plain = assisted_adaptive(None, log, n_tasks=20, prob=PROB, rng=2)
    plan = plan_subset(list(log["task"].values.astype(str)), 30, rng=3)
    fixed = assisted_mean(plan, log, log["score"].mean(("agent", "run")), prob=PROB)
    md = _build(tmp_path, log, [plain, fixed], ".md")
    first = _md_rows(md)
    assert "flag" not in first[""] and MODEL_COLUMN not in first[""]
    head = md.split("## Subset estimates (2)", 1)[0]
    assert "no working model" in head
    # a plain mean uses no draw probability: the sentence must not say it does
    plain_sentence = next(ln for ln in head.split("## Subset estimates\n", 1)[1].splitlines() if ln.startswith("Design:"))
    assert "used by the estimator" not in plain_sentence and "uses only each stratum's share drawn" in plain_sentence
    second = _md_rows(md, "## Subset estimates (2)")
    assert "a simple random sample drawn in advance" in md and "30 of 80 tasks" in md
    np.testing.assert_allclose([float(second[a][0]) for a in fixed.to_frame().index],
                               fixed.estimate.values, atol=5.0001e-4)
