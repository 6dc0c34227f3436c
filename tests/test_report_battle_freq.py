"""A report of battles shows the ML Bradley-Terry fit (prompt bootstrap) beside the Bayesian abilities.

Audit P, F3 (2026-12-07): on LLMFAO the Bayesian 95% intervals were a median 1.77x narrower than
the prompt bootstrap's of hierbench.freq.fit_bradley_terry_ml, and 1,138 against 749 of 1,711
pairs looked separated; the report named that function in words and never computed it.

The battle table is tiny and built by hand: agents A > B > C > D; on each of 3 prompts every pair
meets 5, 6 or 7 times (the better agent wins 3, 4 or 5, the other 1, one tie), so every prompt on
its own is strongly connected and each bootstrap resample has a finite MLE. The fit is a seeded
zero-sum posterior (no sampler), as a Bradley-Terry fit records one. The expected numbers come
from fit_bradley_terry_ml called directly and from the posterior draws with numpy.
"""

from __future__ import annotations

import json
import warnings
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.report._context import _Context
from hierbench.report._report import Report

AGENTS = ["A", "B", "C", "D"]
PROB = 0.9  # not the default, so a label that states the level is checked


def _rows(prompts=3):
    rows = []
    for k in range(prompts):
        for a, b in combinations(AGENTS, 2):
            rows += [(a, b, "left", f"p{k}")] * (3 + k) + [(b, a, "left", f"p{k}")] + [(a, b, "tie", f"p{k}")]
    return rows


def _battles(rows, agents=None):
    from hierbench.data import read_battles

    df = pd.DataFrame(rows, columns=["left", "right", "winner", "prompt"])
    return read_battles(df, task="prompt", agents=agents)


def _fit(agents=AGENTS, options=None, home=False, sd=0.3) -> xr.DataTree:
    """A seeded zero-sum posterior of ``ability`` (and ``nu``, ``home``), with the spec a fit records."""
    g = np.random.default_rng(5)
    x = g.normal(np.linspace(1, -1, len(agents)), sd, size=(2, 150, len(agents)))
    post = {"ability": (("chain", "draw", "agent"), x - x.mean(-1, keepdims=True)),
            "nu": (("chain", "draw"), g.lognormal(-1.0, 0.2, size=(2, 150)))}  # fmt: skip
    if home:
        post["home"] = (("chain", "draw"), g.normal(0.1, 0.05, size=(2, 150)))
    fit = xr.DataTree.from_dict({"posterior": xr.Dataset(post, coords={"agent": agents})})
    opts = {"ties": "davidson", "home_advantage": home} if options is None else options
    fit.attrs = {"hierbench_model": "bradley_terry",
                 "hierbench_spec": json.dumps({"model": "bradley_terry", "options": opts})}  # fmt: skip
    return fit


def _section(fit, battles, freq="auto", n_resamples=99):
    """The section's block and the context it was computed in."""
    from hierbench.report._battle_freq import SECTION_ID
    from hierbench.report._build import _run_section

    ctx = _Context(fit=fit, data=None, battles=battles, prob=PROB, rng=0, n_resamples=n_resamples, truth=None,
                   freq=freq, subset=[], say=lambda *_: None)  # fmt: skip
    rep = Report("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run_section(ctx, rep, SECTION_ID)
    return rep.blocks[0], ctx


def _ml(battles, **kw):
    from hierbench.freq import fit_bradley_terry_ml

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fit_bradley_terry_ml(battles, scale="logit", prob=PROB, n_resamples=99, rng=0, **kw)
    return r, caught


@pytest.fixture(scope="module")
def connected():
    battles, fit = _battles(_rows()), _fit()
    block, ctx = _section(fit, battles)
    return battles, fit, block, ctx


def test_the_numbers_are_the_ml_fit_and_the_posterior(connected):
    battles, fit, block, _ = connected
    t = block["table"]
    r, _ = _ml(battles, ties="davidson", home=False)
    np.testing.assert_allclose(t["ML estimate"], r.estimate.to_series()[t.index], rtol=1e-12)
    np.testing.assert_allclose(t["ML 90% percentile lower"], r.ci.sel(ci_bound="lower").to_series()[t.index])
    np.testing.assert_allclose(t["ML 90% percentile upper"], r.ci.sel(ci_bound="upper").to_series()[t.index])
    x = pd.DataFrame(fit.posterior["ability"].values.reshape(-1, 4), columns=AGENTS)[list(t.index)].to_numpy()
    lo, hi = np.quantile(x, [0.05, 0.95], axis=0)
    np.testing.assert_allclose(t["Bayes mean"], x.mean(0))
    np.testing.assert_allclose(t["Bayes 90% eti lower"], lo)
    np.testing.assert_allclose(t["Bayes 90% eti upper"], hi)
    np.testing.assert_allclose(t["width ratio (ML / Bayes)"],
                               (t["ML 90% percentile upper"] - t["ML 90% percentile lower"]) / (hi - lo))
    assert list(t.index) == ["A", "B", "C", "D"]  # by posterior mean, highest first
    assert abs(r.estimate.sum()) < 1e-9  # the ML estimate is centred like the zero-sum posterior


def test_the_text_counts_the_widths_and_the_pairs_each_separates(connected):
    battles, fit, block, _ = connected
    t, text = block["table"], block["text"]
    r, _ = _ml(battles, ties="davidson", home=False)
    x = pd.DataFrame(fit.posterior["ability"].values.reshape(-1, 4), columns=AGENTS)
    d = r.distribution.to_pandas()
    n_bayes = n_ml = 0
    for a, b in combinations(AGENTS, 2):
        p = (x[a] > x[b]).mean()
        n_bayes += p > 0.95 or p < 0.05
        lo, hi = np.quantile(d[a] - d[b], [0.05, 0.95])
        n_ml += lo > 0 or hi < 0
    assert (f"Of the 6 pairs of agents, {n_bayes} are separated by the Bayesian fit (P(a > b) above 0.95 or "
            f"below 0.05) and {n_ml} by the ML bootstrap (its 90% percentile interval") in text  # fmt: skip
    ratio = t["width ratio (ML / Bayes)"]
    assert f"The ML interval is a median {ratio.median():.2f}x as wide as the Bayesian one" in text


def test_labels_state_level_kind_model_and_centring(connected):
    _, _, block, _ = connected
    text = block["text"]
    assert {"Bayes 90% eti lower", "ML 90% percentile upper"} <= set(block["table"].columns)
    assert "posterior mean and 90% eti interval" in text and "estimate and 90% percentile interval" in text
    assert "bootstrap over tasks (3 tasks of column 'prompt', each drawn with all its battles), 99 resamples" in text
    assert "Davidson ties, no first-position advantage, as the fit records" in text
    assert "centred on the mean ability of all agents (sum zero)" in text


@pytest.mark.parametrize("sd", [0.3, 0.01])
def test_the_take_away_follows_the_ratio_of_widths(sd):
    block, _ = _section(_fit(sd=sd), _battles(_rows()))
    median = block["table"]["width ratio (ML / Bayes)"].median()
    trust = "trust the bootstrap's, and read the Bayesian intervals, ranks and pairwise probabilities as surer"
    assert (median > 1.25) == (sd == 0.01)  # the posterior 30x narrower: the bootstrap is the wider
    assert (trust in block["text"]) == (median > 1.25)
    assert ("The prompt bootstrap's intervals are the narrower here" in block["text"]) == (median < 0.8)


def test_without_a_fit_the_ml_fit_alone_with_its_defaults():
    battles = _battles(_rows())
    block, _ = _section(None, battles)
    r, _ = _ml(battles)
    t = block["table"]
    assert list(t.columns) == ["ML estimate", "ML 90% percentile lower", "ML 90% percentile upper"]
    np.testing.assert_allclose(t["ML estimate"], r.estimate.to_series()[t.index])
    assert list(t.index) == ["A", "B", "C", "D"]  # by ML estimate, highest first
    assert "No Bayesian fit given: the ML fit alone" in block["text"]


def test_the_fits_home_advantage_is_fitted_by_ml_too():
    battles = _battles(_rows())
    block, ctx = _section(_fit(home=True), battles)
    r, _ = _ml(battles, ties="davidson", home=True)
    assert ctx.cache["battle_ml"][0].attrs["home"] is True
    np.testing.assert_allclose(block["table"]["ML estimate"], r.estimate.to_series()[block["table"].index])
    assert "a first-position advantage, as the fit records" in block["text"]


def test_the_section_is_in_a_battle_report_only_with_freq():
    from hierbench.report._battle_freq import SECTION_ID
    from hierbench.report._battle_freq import with_battle_freq
    from hierbench.report._context import SECTIONS

    battles = _battles(_rows())
    on = with_battle_freq(SECTIONS, battles, "auto")
    assert on[on.index("abilities") + 1] == SECTION_ID and len(on) == len(SECTIONS) + 1
    assert with_battle_freq(SECTIONS, battles, None) == SECTIONS
    assert with_battle_freq(SECTIONS, None, "auto") == SECTIONS  # a run log, or a fit alone
    block, ctx = _section(_fit(), battles, freq=None)
    assert block["table"] is None and "battle_ml" not in ctx.cache


def test_a_disconnected_table_shows_nan_and_the_ml_fits_own_warning():
    rows = [r for r in _rows() if {r[0], r[1]} in ({"A", "B"}, {"C", "D"})]
    battles = _battles(rows)
    block, ctx = _section(_fit(), battles)
    r, caught = _ml(battles, ties="davidson", home=False)
    assert r.estimate.isnull().all()
    t = block["table"]
    assert sorted(t.index) == AGENTS and t["ML estimate"].isna().all()
    assert (t["flag"] == "no finite ML estimate (see the text)").all()
    assert "width ratio (ML / Bayes)" in t and t["width ratio (ML / Bayes)"].isna().all()
    said = [str(w.message) for w in caught if w.category.__name__ == "NoFiniteMLEWarning"]
    assert said and all(s.rstrip(".") in block["text"] for s in said)
    assert "No agent has both intervals finite: the widths cannot be compared." in block["text"]
    assert any("NoFiniteMLEWarning" in w for w in ctx.warnings)


def test_tie_free_battles_under_a_davidson_fit_say_how_to_drop_ties_in_a_report():
    # the ML half's warning says "pass ties='none'"; a report has no such argument: it says to refit
    from hierbench.report._battle_freq import REFIT_WITHOUT_TIES

    rows = [r for r in _rows() if r[2] != "tie"]
    block, _ = _section(_fit(), _battles(rows))
    assert "holds no tie in" in block["text"] and REFIT_WITHOUT_TIES in block["text"]
    assert "--ties none" in REFIT_WITHOUT_TIES and "ties=None" in REFIT_WITHOUT_TIES
    block, _ = _section(_fit(), _battles(_rows()))  # ties present: no such advice
    assert REFIT_WITHOUT_TIES not in block["text"]


def test_an_agent_in_no_battle_keeps_its_row_and_the_refusal_is_quoted():
    from hierbench._base import HierbenchError
    from hierbench.freq import fit_bradley_terry_ml

    battles = _battles(_rows(), agents=[*AGENTS, "E"])
    block, _ = _section(_fit([*AGENTS, "E"]), battles)
    with pytest.raises(HierbenchError) as err:
        fit_bradley_terry_ml(battles, n_resamples=99, rng=0)
    t = block["table"]
    assert "E" in t.index and t["ML estimate"].isna().all()
    assert str(err.value) in block["text"]
    assert t.loc["E", "flag"].startswith("not estimated: fit_bradley_terry_ml refused the battles")


def test_a_model_the_ml_fit_does_not_have_is_not_compared():
    block, ctx = _section(_fit(options={"ties": "rao-kupper", "home_advantage": False}), _battles(_rows()))
    assert block["table"] is None and "cannot match" in block["note"] and "battle_ml" not in ctx.cache


@pytest.fixture(scope="module")
def real_fit():
    import hierbench.bayes as hbb

    battles = _battles(_rows())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = hbb.fit(hbb.build_bradley_terry(battles), draws=200, tune=200, chains=2, rng=0, progress=False)
    return battles, fit


@pytest.mark.slow  # a real Bradley-Terry fit and a whole report (about 6 s)
def test_a_built_report_shows_the_section_after_the_abilities(real_fit, tmp_path):
    from hierbench import report

    battles, fit = real_fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = report.build(fit, battles, path=tmp_path / "r.md", prob=PROB, n_resamples=99, rng=0,
                            progress=False).read_text()  # fmt: skip
    at = text.index("## Bradley-Terry abilities: Bayesian and maximum likelihood side by side")
    assert text.index("## Agent abilities") < at < text.index("## Reliability: pass^k")
    assert "not computed" not in text
    r, _ = _ml(battles, ties="davidson", home=False)
    x = fit.posterior["ability"].sel(agent="A").values.ravel()
    row = next(line for line in text[at:].splitlines() if line.split("|")[1:2] and line.split("|")[1].strip() == "A")
    cells = [float(c) for c in row.strip("|").split("|")[1:8]]
    np.testing.assert_allclose(cells[:3], [x.mean(), *np.quantile(x, [0.05, 0.95])], atol=5e-4)  # 3 decimals
    np.testing.assert_allclose(cells[3:6], [float(r.estimate.sel(agent="A")), *r.ci.sel(agent="A").values],
                               atol=5e-4)  # fmt: skip
    assert "frequentist counterpart: the section \"Bradley-Terry abilities" in text  # the side-by-side note
    # the checklist says it was computed (it said "which this report does not compute")
    row = next(line for line in text.splitlines() if line.startswith("| frequentist results"))
    assert row.split("|")[2].strip().startswith("computed:") and "in the section \"Bradley-Terry abilities: Bayesian and maximum likelihood side by side\"" in row
    assert "does not compute" not in row
    kinds = next(line for line in text.splitlines() if line.startswith("| interval level and kind"))
    assert f"Bradley-Terry abilities by ML: {PROB:.0%} percentile" in kinds and f"Bayes: {PROB:.0%} equal-tailed" in kinds


@pytest.mark.slow  # a report on the module's real fit
def test_a_built_report_with_freq_none_has_no_section(real_fit, tmp_path):
    """The report is ``build``'s own, its sections cut to the abilities the section would follow
    (``sections=``); the sentence under its title names every section it has and left out, so the
    battles' section, had ``build`` inserted it, would be named there.
    """
    from hierbench import report

    battles, fit = real_fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = report.build(fit, battles, path=tmp_path / "r.md", freq=None, rng=0, progress=False,
                            sections=["abilities", "pass-k"]).read_text()  # fmt: skip
    assert "## Agent abilities" in text and "## Bradley-Terry abilities: Bayesian" not in text
    left = text.split("A partial report: only the sections asked for (sections=['abilities', 'pass-k']); left out: ")[1]
    assert "Data summary" in left.split("\n")[0] and "Bradley-Terry" not in left.split("\n")[0]
