"""The report of a Bradley-Terry fit reads as one of battles (audit D, 2026-12-06).

The report once told the reader of a battles fit to read P(a > b) "beside each pair's own
p-value" (there is none), that its ranks compare agents "through the model's task effects"
(the model has none) with a counterpart, rank_uncertainty(data), that refuses battles, and
labelled the forest's axis "ability (model scale) (model scale)". The expected texts are the
model's own assumptions (docs/models/bradley_terry.md: battles are independent judgments) and
the counterpart that does take battles (fit_bradley_terry_ml's prompt bootstrap, checked here
to accept the same battles and give rank intervals).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest


@pytest.fixture(scope="module")
def battles_report(tmp_path_factory):
    import hierbench.bayes as hbb
    from hierbench import report
    from hierbench.bayes import ConvergenceWarning
    from hierbench.data import read_battles

    g = np.random.default_rng(0)
    skill = {"a": 1.0, "b": 0.3, "c": -0.2, "d": -1.0}
    names = list(skill)
    rows = []
    for k in range(120):
        left, right = g.choice(names, 2, replace=False)
        p = 1 / (1 + np.exp(skill[right] - skill[left]))
        rows.append({"left": left, "right": right, "winner": "left" if g.random() < p else "right",
                     "prompt": f"p{k % 30}"})
    battles = read_battles(pd.DataFrame(rows), task="prompt")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = hbb.fit(hbb.build_bradley_terry(battles, ties=None), draws=200, tune=200, chains=2, rng=1,
                      progress=False)
    path = tmp_path_factory.mktemp("bt") / "report.md"
    # every section but the convergence diagnostics, which no test of this report reads (the report of
    # the same fit with its log, below, computes them and finds no section that failed)
    report.build(fit, freq=None, path=path, rng=0, sections=[s for s in report.SECTIONS if s != "convergence"])
    return battles, path.read_text(), fit


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_pairwise_text_names_the_independence_the_model_assumes(battles_report):
    _, text, _ = battles_report
    assert "beside each pair's own p-value" not in text
    assert "The Bradley-Terry model counts every battle as an independent judgment" in text
    assert "No paired tests: battles carry no per-task scores to pair." in text
    assert "they need the run log" not in text


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_rank_text_points_to_a_counterpart_that_takes_battles(battles_report):
    from hierbench.freq import fit_bradley_terry_ml

    battles, text, _ = battles_report
    assert "through the model's task effects" not in text and "rank_uncertainty(data)" not in text
    assert "fit_bradley_terry_ml resamples the prompts; its rank_ci is the rank interval" in text
    ml = fit_bradley_terry_ml(battles, ties="none", n_resamples=50, rng=0)  # the counterpart named: it takes battles
    assert ml.rank_ci.sizes["agent"] == 4


def test_forest_axis_names_the_logit_scale_once(battles_report):
    _, text, _ = battles_report
    assert "ability (logit scale); 95% intervals" in text
    assert "(model scale) (model scale)" not in text


@pytest.mark.slow  # a whole report (2.4 s) on the module's fit
def test_a_report_with_its_battle_log_has_no_section_that_failed(battles_report, tmp_path):
    """Audit N: with the battle log beside the fit, 7 sections printed raw exceptions (`score` missing)."""
    from hierbench import report

    battles, _, fit = battles_report
    # 199 resamples of the ML fit's prompt bootstrap, not the default 1999: what is checked (no section
    # failed, the battle counts) does not depend on the count
    text = report.build(fit, battles, path=tmp_path / "r.md", n_resamples=199, progress=False, rng=0).read_text()
    assert "not computed" not in text and "Error" not in text
    outcome = battles["outcome"].to_series()  # 1 a wins, 0.5 tie, 0 b wins (read_battles)
    assert f"{len(outcome)} battles between 4 agents" in text and "no ties" not in text
    assert f"{int((outcome == 0.5).sum())} ties (0.0%)" in text  # the simulation has none
    assert text.count("not to battles") == 3
