"""An agent absent from some prompt resamples leaves the ML pairwise differences of the others defined.

Audit P (s17), finding 1: with sum-zero abilities (the default, and the report's call), an agent absent
from more than the tail share of prompt resamples left every agent's interval NaN (right: the absent
agent's ability moves the centre), and the report then counted 0 of 1,711 LLMFAO pairs separated,
all undefined, while the differences a - b between present agents were defined in those resamples.
Finding 3: without a Bayesian fit the section dropped the few-prompts caveat.

The battles are built so that the answer is known without the code under test: A, B and C play the
same battles on each of 8 prompts, and D plays only A, on prompt p0. D's term of the likelihood then
involves D - A alone, so in every resample (D drawn or not) the MLE of the differences among A, B and C
is that of their per-prompt counts (scipy below), and D - A is log(D's wins / A's wins against D).
D is absent from a resample with probability (7/8)^8 = 0.34, far above the 5% tails of a 90% interval.
"""

from __future__ import annotations

import warnings
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import log_expit

from hierbench.data import read_battles
from hierbench.freq import NoFiniteMLEWarning
from hierbench.freq import fit_bradley_terry_ml
from hierbench.report._context import _Context
from hierbench.report._report import Report

#: per prompt: (winner, loser, times); every prompt the same among A, B, C
ABC = [("A", "B", 3), ("B", "A", 1), ("B", "C", 3), ("C", "B", 1), ("A", "C", 4), ("C", "A", 1)]
#: D's battles, on prompt p0 only
DA = [("D", "A", 2), ("A", "D", 3)]
PROB = 0.9


def _battles():
    rows = [(w, lo, "left", f"p{k}") for k in range(8) for w, lo, n in ABC for _ in range(n)]
    rows += [(w, lo, "left", "p0") for w, lo, n in DA for _ in range(n)]
    return read_battles(pd.DataFrame(rows, columns=["left", "right", "winner", "prompt"]), task="prompt")


def _abc_mle() -> dict[str, float]:
    """The logistic Bradley-Terry MLE of A, B, C from one prompt's counts (A fixed at 0), by scipy."""
    idx = {"A": 0, "B": 1, "C": 2}

    def nll(free):
        th = np.r_[0.0, free]
        return -sum(n * log_expit(th[idx[w]] - th[idx[lo]]) for w, lo, n in ABC)

    th = np.r_[0.0, minimize(nll, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x]
    return dict(zip("ABC", th, strict=True))


@pytest.fixture(scope="module")
def fitted():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = fit_bradley_terry_ml(_battles(), ties="none", scale="logit", prob=PROB, n_resamples=200, rng=0)
    return r, caught


def test_sum_zero_intervals_stay_undefined_but_the_differences_of_present_agents_are_kept(fitted):
    r, _ = fitted
    theta = _abc_mle()
    rel = r.relative_distribution.to_pandas()
    absent = rel["D"].isna()
    assert 0.2 < absent.mean() < 0.5  # D absent from about 34% of resamples
    assert np.isnan(r.ci.values).all()  # sum-zero: the absent agent moves the centre of every ability
    assert r.distribution.to_pandas()[absent].isna().all().all()
    for a, b in combinations("ABC", 2):  # every resample, D drawn or not: the ABC-only MLE (scipy)
        np.testing.assert_allclose(rel[a] - rel[b], theta[a] - theta[b], atol=1e-6)
    np.testing.assert_allclose((rel["D"] - rel["A"])[~absent], np.log(2 / 3), atol=1e-6)


def test_the_warning_names_reference_and_an_agent_present_in_every_resample(fitted):
    _, caught = fitted
    msg = next(str(w.message) for w in caught if issubclass(w.category, NoFiniteMLEWarning))
    assert "Passing reference= an agent present in every resample (e.g. 'A')" in msg
    assert "relative_distribution" in msg


def _section():
    from hierbench.report._battle_freq import SECTION_ID
    from hierbench.report._build import _run_section

    ctx = _Context(fit=None, data=None, battles=_battles(), prob=PROB, rng=0, n_resamples=200, truth=None,
                   freq="auto", subset=[], say=lambda *_: None)  # fmt: skip
    rep = Report("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run_section(ctx, rep, SECTION_ID)
    return rep.blocks[0]["text"]


@pytest.fixture(scope="module")
def section_text():
    return _section()


def test_the_report_without_a_bayesian_fit_counts_the_pairs_the_ml_bootstrap_separates(section_text):
    text = section_text
    # A-B, A-C, B-C: the same nonzero difference in every resample, so separated; D's 3 pairs: D absent from
    # about 34% of resamples, more than the 5% tail, so their bound is undefined
    assert "Of the 6 pairs of agents, 3 are separated by the ML bootstrap" in text
    assert "3 pairs' interval is undefined" in text


def test_the_report_without_a_bayesian_fit_says_the_few_prompts_caveat_once(section_text):
    text = section_text
    # 8 prompts are fewer than 20 equal ones: the caveat is said once, in the section's own words
    assert text.count("Even the bootstrap's intervals may be too narrow: the bootstrap resamples 8 tasks") == 1
    assert text.count("fewer than 20") == 1
