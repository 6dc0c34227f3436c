"""The report names each model's own population of task rates, and its shared rules have one owner.

Review of s71, findings 1, 2, 3 and 5c: the crossed model's "normal on the logit scale" was said of a
beta-binomial fit too (the predictive check's task side, the abilities' and side-by-side shift
sentences); the rule for "a shift most agents share" was written twice; the two all-pass texts were
two copies; the demo found a note's letter by parsing the legend. The fits here are hand-made
DataTrees whose ``hierbench_model`` attr is all that differs; expected values are by hand (sign
tests with math.comb, letters and shares counted by eye).
"""

from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.report._context import _Context
from hierbench.report._context import most_share
from hierbench.report._passk import MODEL_FREE
from hierbench.report._passk import _all_pass_lean
from hierbench.report._passk import letter_of
from hierbench.report._passk import note_letters
from hierbench.report._ppc_tasks import task_spread_text
from hierbench.report._shift import ClusterWeights
from hierbench.report._shift import _abilities_shift
from hierbench.report._shift import shared_shift

MODELS = ["crossed", "beta_binomial"]
#: by model: words its text must hold, words it must not
OWN = {"crossed": ("normal on the logit scale", "beta"), "beta_binomial": ("a beta", "normal")}
AGENTS = [f"m{i}" for i in range(8)]


def _ctx(model: str) -> _Context:
    """Eight agents whose posterior mean over these tasks is 0.5 (a hand-made fit of ``model``)."""
    post = xr.Dataset({"mean_observed": (("chain", "draw", "agent"), np.full((1, 2, 8), 0.5))},
                      coords={"agent": AGENTS})  # fmt: skip
    fit = xr.DataTree.from_dict({"posterior": post})
    fit.attrs = {"hierbench_model": model}
    return _Context(fit=fit, data=None, battles=None, prob=0.95)


@pytest.mark.parametrize("model", MODELS)
def test_the_shift_its_split_and_which_number_to_quote_name_the_fits_own_population(model):
    """Bayes 0.03 below the bootstrap for 8 of 8 agents: sign test 2 / 2^8 = 0.0078 (by hand), a shared shift."""
    assert 2 / 2**8 < 0.05
    boot = pd.DataFrame({"estimate": [0.6] * 8}, index=AGENTS)
    text = _abilities_shift(_ctx(model), boot - 0.03, boot)
    assert "Bayes lower for 8 of 8 agents" in text and "A shift most agents share" in text
    has, hasnt = OWN[model]
    assert has in text and hasnt not in text
    if model == "beta_binomial":
        assert "unseen tasks: a beta population of task rates per agent" in text  # the split
        assert "the Bayes number rests on the model's beta population of task rates." in text  # the quote
        assert "the model's task population (a beta) differs from the tasks run" in text
    else:
        assert "the Bayes number rests on the model's normal task population." in text


@pytest.mark.parametrize("model", MODELS)
def test_the_other_cause_beside_a_reversed_weighting_names_the_fits_own_population(model):
    """Weighing clusters alike lowers every agent's mean by 0.1, Bayes lies 0.03 above: the other way."""
    words = ClusterWeights(" (cluster sentence)")
    words.means = pd.DataFrame({"per task": [0.6] * 8, "per cluster": [0.5] * 8}, index=AGENTS)
    text = shared_shift(pd.Series([0.03] * 8, index=AGENTS), True, words, model=model)
    assert "would move the data's mean the other way" in text
    has, hasnt = OWN[model]
    assert f"the model's task population ({has}), where it differs" in text and hasnt not in text


def _tree(model: str, T: int = 20) -> xr.DataTree:
    """One run per cell, two agents; 15 of 20 tasks unsolved against draws solving half the cells."""
    y = np.zeros(2 * T, int)
    y[:5] = 1
    pred = (np.random.default_rng(1).random((1, 50, 2 * T)) < 0.5).astype(int)
    cells = {"cell": np.arange(2 * T), "cell_task": ("cell", np.tile([f"t{i}" for i in range(T)], 2))}
    tree = xr.DataTree.from_dict({
        "observed_data": xr.Dataset({"y": ("cell", y)}, coords=cells),
        "constant_data": xr.Dataset({"cell_n_runs": ("cell", np.ones(2 * T, int))}, coords=cells),
        "posterior_predictive": xr.Dataset({"y": (("chain", "draw", "cell"), pred)}, coords=cells),
    })  # fmt: skip
    tree.attrs = {"hierbench_model": model}
    return tree


@pytest.mark.parametrize("model", MODELS)
def test_the_predictive_checks_task_side_names_the_fits_own_population(model):
    """75% of tasks unsolved by both agents against about 25% in the draws (0.5^2): at odds."""
    text = " ".join(task_spread_text(_tree(model), 0.9).split())
    has, hasnt = OWN[model]
    assert f"The model's task population ({has}) does not hold these tasks' spread" in text and hasnt not in text


def _sign_p(k: int, n: int) -> float:
    """By hand: the two-sided binomial(n, 1/2) sign test of k, twice the smaller tail, capped at 1."""
    tail = sum(comb(n, j) for j in range(max(k, n - k), n + 1)) / 2**n
    return min(1.0, 2 * tail)


@pytest.mark.parametrize(("k", "n", "shared"), [(8, 9, True), (1, 9, True), (6, 7, False), (9, 10, True),
                                                (7, 8, False), (3, 4, False), (4, 4, False), (5, 5, False), (6, 6, True)])  # fmt: skip
def test_most_share_is_three_in_four_and_a_sign_test_below_005(k, n, shared):
    assert (max(k, n - k) >= 0.75 * n and _sign_p(k, n) < 0.05) == shared  # the rule, by hand
    assert most_share(k, n) == shared


def test_a_notes_letter_is_read_from_note_letters_own_map():
    """Notes X, Y, Z in order of first use get a, b, c (by eye); X reached through its `unbiased:` prefix."""
    flags = pd.Series(["", "unbiased: X", "Y; unbiased: X", "Bayes: Z"])
    letters, _ = note_letters(flags)
    assert list(letters) == ["", "a", "b,a", "c"]
    assert [letter_of(flags, n) for n in ("X", "Y", "Z", "W")] == ["a", "b", "c", None]


def _data(model: str):
    """Two agents, five tasks, two runs: 3 of the 10 cells passed both runs (by eye); a fit of ``model``."""
    from hierbench.data import from_records

    passes = {("a", "t0"): [1, 1], ("a", "t1"): [1, 1], ("b", "t0"): [1, 1], ("b", "t1"): [1, 0]}
    rows = [{"agent": a, "task": f"t{t}", "run": r, "score": float(passes.get((a, f"t{t}"), [0, 0])[r])}
            for a in "ab" for t in range(5) for r in range(2)]  # fmt: skip
    fit = xr.DataTree()
    fit.attrs = {"hierbench_model": model}
    return _Context(fit=fit, data=from_records(pd.DataFrame(rows), run="run"), battles=None, prob=0.95)


@pytest.mark.parametrize("model", MODELS)
def test_one_all_pass_builder_says_the_fits_own_population_and_ends_model_free(model):
    ctx = _data(model)
    text = _all_pass_lean(ctx, model)
    assert text.startswith(" Here 30% of the agent x task cells with two or more runs passed every run.")
    assert text.endswith(f", {MODEL_FREE}.")
    assert {"crossed": "normal task population puts little mass near 1",
            "beta_binomial": "beta population of task rates puts little mass at exactly 1"}[model] in text
    assert _all_pass_lean(ctx, ({*MODELS} - {model}).pop()) == ""  # said of the fit's own model only
