"""The report's section "Effects of the formula's terms" (audit F, F1): what a formula fit estimated.

Each number is the package's own function called directly on the same inputs: the Bayesian average
marginal effects are hierbench.metrics.average_marginal_effects of the fit's draws, the frequentist
ones hierbench.freq.average_marginal_effects of hierbench.freq.fit_crossed_ml called here (the
section asks it for Wald intervals of the sds, a fifth of the profile's time), and the
parameters the posterior's own means and quantiles (numpy). The fits' posteriors are drawn at random
(no sampler): a tiny simulated log, one agent covariate (scaffold) and one task covariate (hard).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench import freq
from hierbench import metrics
from hierbench._base import interval_label
from hierbench.data import model_design
from hierbench.report._context import _TITLES
from hierbench.report._context import SECTIONS
from hierbench.report._context import _Context
from hierbench.report._context import _Skip
from hierbench.report._effects import _sec_effects
from hierbench.report._effects import extreme_levels
from hierbench.report._effects import formula_variables
from hierbench.report._report import Report
from hierbench.testing import simulate_eval

FORMULA = "score ~ scaffold + hard + (1|agent) + (1|task)"


def _data(seed: int = 0) -> xr.Dataset:
    data, _ = simulate_eval(4, 12, 3, rng=seed)
    return data.assign_coords(scaffold=("agent", ["s1", "s1", "s2", "s2"]), hard=("task", np.tile([0.0, 1.0], 6)))


def _fake_fit(design, rng, beta_mean=None, n_draws: int = 200) -> xr.DataTree:
    """A formula fit's posterior drawn at random (no sampler), with the attrs the report reads."""
    p = len(design.coef)
    beta = rng.normal(0, 0.3, (2, n_draws, p)) + (np.zeros(p) if beta_mean is None else np.asarray(beta_mean))
    post = {"beta": (("chain", "draw", "coef"), beta),
            "sd": (("chain", "draw", "component"), np.abs(rng.normal(1, 0.1, (2, n_draws, len(design.random)))))}
    coords = {"coef": list(design.coef), "component": [t.name for t in design.random]}
    for t in design.random:
        dim = ":".join(t.grouping)
        post[f"re[{t.name}]"] = (("chain", "draw", dim), rng.normal(0, 1, (2, n_draws, t.levels.size)))
        coords[dim] = t.levels.tolist()
    if design.family == "fractional":
        post["interior"] = (("chain", "draw", "task"), rng.exponential(2.0, (2, n_draws, design.tasks.size)))
    if design.family == "ordinal":
        post["thresholds"] = (("chain", "draw", "threshold"),
                              np.sort(rng.normal(0, 1, (2, n_draws, design.categories.size - 1)), axis=-1))
        coords["threshold"] = [f"{a:g}|{b:g}" for a, b in zip(design.categories[:-1], design.categories[1:], strict=True)]
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset(post, coords=coords)})
    spec = {"model": "mixed", "options": {"formula": design.formula, "family": design.family, "levels": None}}
    dt.attrs = {"hierbench_model": "mixed", "hierbench_spec": json.dumps(spec)}
    return dt


def _ctx(fit, data, freq_arg="auto") -> _Context:
    return _Context(fit=fit, data=data, prob=0.95, rng=0, n_resamples=199, truth=None, freq=freq_arg,
                    subset=[], say=lambda *_: None)  # fmt: skip


def _run(ctx: _Context) -> dict:
    """The section's blocks: text, table, the folded table (or the reason it was skipped)."""
    rep = Report("t")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _sec_effects(ctx, rep, "effects")
    except _Skip as why:
        return {"skip": str(why)}
    (sec,) = rep.blocks
    return {"text": sec["text"], "table": sec["table"], "more": sec["more"], "flag": sec["flag"]}


@pytest.fixture(scope="module")
def board():
    """The log, its design and a fake fit whose `hard` effect is far from the data's (+3 logits: none simulated)."""
    data = _data(0)
    design = model_design(FORMULA, data)
    rng = np.random.default_rng(1)
    fit = _fake_fit(design, rng, beta_mean=[0.0, 0.0, 3.0])
    return data, design, fit


def test_the_section_follows_the_abilities_of_a_formula_fit_only_and_is_registered():
    """After the abilities (and the time horizons where they are), for a formula fit; no other report lists it."""
    import xarray as xr

    from hierbench.report._build import _SECTION_FUNCS
    from hierbench.report._effects import with_effects

    mixed, crossed = xr.DataTree(), xr.DataTree()
    mixed.attrs, crossed.attrs = {"hierbench_model": "mixed"}, {"hierbench_model": "crossed"}
    assert "effects" not in SECTIONS
    order = with_effects(SECTIONS, mixed)
    assert order[order.index("abilities") + 1] == "effects" and len(order) == len(SECTIONS) + 1
    horizons = (*SECTIONS[:3], "horizons", *SECTIONS[3:])
    assert with_effects(horizons, mixed)[4] == "effects" and horizons[2:4] == ("abilities", "horizons")
    assert with_effects(SECTIONS, crossed) == SECTIONS and with_effects(SECTIONS, None) == SECTIONS
    assert _TITLES["effects"] == "Effects of the formula's terms" and _SECTION_FUNCS["effects"] is _sec_effects


def test_formula_variables_are_the_fixed_parts_variables():
    data = _data(0)
    d = model_design("score ~ scaffold * np.exp(hard) + (1|task)", data)
    assert formula_variables(d) == ["scaffold", "hard"]  # a transformed variable by its own name
    assert formula_variables(model_design("score ~ 0 + agent + hard + (1|task)", data)) == ["hard"]
    assert formula_variables(model_design("score ~ 1 + (1|agent) + (1|task)", data)) == []


@pytest.mark.slow  # two ML fits and REML refits of each variable (the section's, and the one here): 1-2.5 s
def test_effects_are_the_metrics_and_freq_functions_and_say_their_intervals(board):
    data, design, fit = board
    sec = _run(_ctx(fit, data))
    table, text = sec["table"], sec["text"]
    ml = freq.fit_crossed_ml(data, FORMULA, intervals="wald")
    for v in ("scaffold", "hard"):
        b = metrics.average_marginal_effects(fit, design, v)
        f = freq.average_marginal_effects(ml, v)
        for c in b.estimate["contrast"].values:
            row = table.loc[(v, str(c))]
            np.testing.assert_allclose(row[["Bayes mean", "Bayes lower", "Bayes upper"]].to_numpy(float),
                                       [float(b.estimate.sel(contrast=c)), *b.ci.sel(contrast=c).values], rtol=1e-10)
            np.testing.assert_allclose(row[["REML estimate", "REML lower", "REML upper"]].to_numpy(float),
                                       [float(f.estimate.sel(contrast=c)), *f.ci.sel(contrast=c).values], rtol=1e-5)
            df = float(f.df.sel(contrast=c))
            assert row["REML interval"] == interval_label(f.ci) + (f", {df:g} df" if np.isfinite(df) else "")
            assert row["scale"] == "points"
    # scaffold is agent-level within (1|agent): t on its containment df; hard is task-level within (1|task)
    assert table.loc[("scaffold", "s2 - s1"), "REML interval"] == "95% t, 2 df"
    assert "95% eti interval" in text and "points of success rate" in text and "method='reml'" in text
    # disagree: one estimate outside the other's interval (by hand); the +3-logit hard effect is flagged
    lo_b, hi_b, lo_f, hi_f = (table[c] for c in ("Bayes lower", "Bayes upper", "REML lower", "REML upper"))
    by_hand = (table["Bayes mean"] < lo_f) | (table["Bayes mean"] > hi_f) | (table["REML estimate"] < lo_b) | (
        table["REML estimate"] > hi_b)
    assert table["disagree"].tolist() == by_hand.tolist() and bool(table.loc[("hard", "1.0 - 0.0"), "disagree"])
    assert sec["flag"] == "disagree" and "Where the halves differ" in text and "normal on the logit scale" in text
    # the parameters: the posterior's own mean and 2.5% / 97.5% quantiles, and the ML fit's, each labelled
    params = sec["more"][1]
    beta = fit["posterior"]["beta"].values.reshape(-1, 3)
    np.testing.assert_allclose(params.loc[("fixed", "hard"), ["Bayes mean", "Bayes lower", "Bayes upper"]].to_numpy(float),
                               [beta[:, 2].mean(), *np.quantile(beta[:, 2], [0.025, 0.975])], rtol=1e-10)  # fmt: skip
    assert params.loc[("fixed", "hard"), "ML estimate"] == pytest.approx(float(ml.estimate.sel(coef="hard")), rel=1e-5)
    np.testing.assert_allclose(params.loc[("sd", "1|task"), ["ML estimate", "ML lower", "ML upper"]].to_numpy(float),
                               [float(ml.sd.sel(component="1|task")), *ml.sd_ci.sel(component="1|task").values],
                               rtol=1e-5)  # fmt: skip
    assert params.loc[("sd", "1|task"), "ML interval"] == "95% normal" and "Wald on the log scale, for speed" in text
    assert params.loc[("fixed", "hard"), "ML interval"] == "95% normal" and set(params["scale"]) == {"logit"}


def test_freq_none_leaves_the_frequentist_half_out(board):
    data, design, fit = board
    sec = _run(_ctx(fit, data, freq_arg=None))
    assert not any(c.startswith(("REML", "ML")) for c in [*sec["table"].columns, *sec["more"][1].columns])
    assert "disagree" not in sec["table"] and "The frequentist half is left out (freq=None)." in sec["text"]
    want = metrics.average_marginal_effects(fit, design, "scaffold").estimate.sel(contrast="s2 - s1")
    assert sec["table"].loc[("scaffold", "s2 - s1"), "Bayes mean"] == pytest.approx(float(want), rel=1e-12)


def test_without_the_data_the_posteriors_parameters_alone(board):
    _, _, fit = board
    sec = _run(_ctx(fit, None))
    assert "need the data the fit was made from" in sec["text"] and sec["more"] is None
    sd = fit["posterior"]["sd"].values.reshape(-1, 2)[:, 1]
    got = sec["table"].loc[("sd", "1|task"), ["Bayes mean", "Bayes lower", "Bayes upper"]].to_numpy(float)
    np.testing.assert_allclose(got, [sd.mean(), *np.quantile(sd, [0.025, 0.975])], rtol=1e-10)


def test_a_fit_without_a_formula_or_no_fit_skips_saying_why(board):
    data, _, fit = board
    crossed = fit.copy()
    crossed.attrs = {"hierbench_model": "crossed"}
    assert "Only for a formula fit" in _run(_ctx(crossed, data))["skip"]
    assert "a crossed fit" in _run(_ctx(crossed, data))["skip"]
    assert "no fit given" in _run(_ctx(None, data))["skip"]


def test_an_ordinal_fit_shows_grades_and_its_thresholds():
    rng = np.random.default_rng(3)
    data = _data(1)
    data["score"] = data["score"].copy(data=rng.integers(1, 4, data["score"].shape).astype(float))
    design = model_design("score ~ hard + (1|agent)", data, family="ordinal", levels=[1, 2, 3])
    fit = _fake_fit(design, rng)
    sec = _run(_ctx(fit, data, freq_arg=None))
    assert sec["table"]["scale"].tolist() == ["grades"] and "grades: the mean grade" in sec["text"]
    want = metrics.average_marginal_effects(fit, design, "hard")
    assert sec["table"]["Bayes mean"].iloc[0] == pytest.approx(float(want.estimate[0]), rel=1e-12)
    th = fit["posterior"]["thresholds"].values.reshape(-1, 2)[:, 1]
    got = sec["more"][1].loc[("threshold", "2|3"), ["scale", "Bayes mean"]]
    assert got["scale"] == "logit" and got["Bayes mean"] == pytest.approx(th.mean(), rel=1e-12)
    assert "P(grade <= k) = expit(threshold_k - eta)" in sec["text"]


def test_extreme_levels_count_the_tasks_every_run_of_which_is_at_an_end():
    data = _data(2)
    s = data["score"].values.copy()
    s[:, 0], s[:, 1] = 0.0, 1.0  # task 0 failed by all, task 1 passed by all
    data["score"] = data["score"].copy(data=s)
    said = extreme_levels(model_design(FORMULA, data))
    want = []  # by hand: per term (agent, then task), the levels with every run at 0, then at 1
    for axes, term, n in (((1, 2), "1|agent", 4), ((0, 2), "1|task", 12)):
        for v in (0.0, 1.0):
            k = int((s == v).all(axis=axes).sum())
            want += [f"{k} of {n} levels of ({term}) have every run at {v:g}"] if k else []
    assert said == want and any("of 12 levels of (1|task) have every run at 1" in x for x in said)


def test_a_fractional_fit_says_its_parameters_scale():
    rng = np.random.default_rng(4)
    data = _data(3)
    data["score"] = data["score"] * 0.6 + 0.2 * (rng.random(data["score"].shape) < 0.5)
    design = model_design(FORMULA, data, family="fractional")
    sec = _run(_ctx(_fake_fit(design, rng), data, freq_arg=None))
    assert set(sec["more"][1]["scale"]) == {"the [0, 1] family's linear predictor"}
    assert "points of mean score" in sec["text"] and "the logit only at mean 1/2" in sec["text"]


def test_a_missing_bound_is_said_in_words_not_nan():
    """An ML sd at 0 has no Wald upper bound: the cell says undefined and the flag why (notebook 08 showed NaN)."""
    from types import SimpleNamespace

    from hierbench.report._effects import params_table

    frame = pd.DataFrame({"part": ["sd"], "term": ["1|model"], "estimate": [1e-4], "lower": [0.0],
                          "upper": [np.nan], "ci_prob": [0.95], "ci_kind": ["normal"]}).set_index(["part", "term"])  # fmt: skip
    table = params_table(None, SimpleNamespace(to_frame=lambda: frame), "binomial", 0.95)
    row = table.loc[("sd", "1|model")]
    assert row["ML upper"] == "undefined" and row["ML lower"] == 0.0
    assert row["flag"].startswith("ML sd at 0: its Wald interval has no upper bound")


def test_why_skips_an_sd_only_one_half_gives():
    """A term the posterior lacks reads "not fitted" in the table; the sentence on the sds names only the pairs."""
    from types import SimpleNamespace

    from hierbench.report._effects import _why
    from hierbench.report._effects import params_table

    post = xr.Dataset({"sd": (("chain", "draw", "component"), np.full((1, 4, 1), 0.5))},
                      coords={"component": ["1|task"]})  # fmt: skip
    frame = pd.DataFrame({"part": ["sd", "sd"], "term": ["1|task", "1|model"], "estimate": [0.4, 0.3],
                          "lower": [0.2, 0.1], "upper": [0.8, 0.9], "ci_prob": [0.95, 0.95],
                          "ci_kind": ["normal", "normal"]}).set_index(["part", "term"])  # fmt: skip
    table = params_table(post, SimpleNamespace(to_frame=lambda: frame), "binomial", 0.95)
    assert table.loc[("sd", "1|model"), "Bayes mean"] == "not fitted"
    text = _why(SimpleNamespace(family="binomial"), table, [])
    assert "sd(1|task) 0.5 against 0.4" in text and "1|model" not in text
