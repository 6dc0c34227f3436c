"""Pairs that cannot be tested, and one pair, as the pair text says them (audit Q, findings 1 and 10).

Every expected value comes from the shapes built here: the sign-flip p-values by enumerating the
sign patterns (or the binomial law they follow for 0/1 differences), the t-test p-values and
Holm's adjustment from scipy.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench.freq import compare_agents
from hierbench.report import pair_frame
from hierbench.report import pair_sentence
from hierbench.report import settings_text
from hierbench.report._pairs import no_p_note


def _log(rows: dict[str, list[float]], runs: int = 3) -> xr.Dataset:
    """Agents x tasks of per-task scores, each repeated over ``runs`` runs."""
    s = np.repeat(np.array(list(rows.values()), float)[..., None], runs, axis=-1)
    return xr.Dataset({"score": (("agent", "task", "run"), s)},
                      coords={"agent": list(rows), "task": [f"t{i}" for i in range(s.shape[1])]})  # fmt: skip


def _sign_flip_p(d: np.ndarray) -> float:
    """The two-sided sign-flip p of the summed difference, over every sign pattern."""
    obs = abs(d.sum())
    hits = [abs(np.dot(s, d)) >= obs - 1e-12 for s in itertools.product([1.0, -1.0], repeat=d.size)]
    return float(np.mean(hits))


def _quiet(ds, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compare_agents(ds, rng=0, **kw)


def test_a_pair_that_cannot_be_tested_is_not_said_to_not_differ():
    """2 agents x 5 tasks, A solves every run and B none: +1 on every task. The text said "The one pair
    does not differ", pointed to a `p (t)` and `p Holm` that were NaN and called the p-values exact sign
    patterns beside a t-test.
    """
    cmp = _quiet(_log({"A": [1] * 5, "B": [0] * 5}))
    floor = _sign_flip_p(np.ones(5))
    assert floor == 2 / 2**5  # by enumeration: only the two all-alike patterns reach |sum| 5
    text = " ".join(pair_sentence(cmp).split())
    assert text.startswith("The one pair cannot be tested at level 0.05") and "does not differ" not in text
    assert "A - B differs by +1.000 on every one of its 5 shared tasks" in text
    assert f"cannot give a p-value below 2^(1 - 5) = {floor:.3g}, above the level 0.05" in text
    how = settings_text(cmp)
    assert "every sign pattern counted" not in how and "max-T" not in how  # a t-test, one pair: neither applies
    table = pair_frame(cmp)
    note = no_p_note(table)
    assert np.isnan(table.iloc[0]["p (t)"]) and "read its own p-value" not in note
    assert "no p-value at all" in note and f"2^(1 - 5) = {floor:.3g}, above the level 0.05" in note
    assert repr(cmp).splitlines()[1].strip().startswith("the pair cannot be tested")


def test_holm_is_said_over_the_pairs_it_ran_over():
    """A third agent: Holm ran over the 2 pairs with a p-value, the text said "over the 3 pairs"."""
    rows = {"A": [1] * 5, "B": [0] * 5, "C": [1, 0, 1, 0, 1]}
    cmp = _quiet(_log(rows))
    a, b, c = (np.array(v, float) for v in rows.values())
    p = np.array([stats.ttest_rel(a, c).pvalue, stats.ttest_rel(b, c).pvalue])
    holm = np.maximum.accumulate((2 - np.arange(2)) * np.sort(p))[np.argsort(np.argsort(p))]  # Holm by hand
    table = pair_frame(cmp)
    np.testing.assert_allclose(table.loc[["A - C", "B - C"], "p Holm"], np.minimum(holm, 1), rtol=1e-9)
    text = " ".join(pair_sentence(cmp).split())
    assert text.startswith("0 of the 2 pairs tested differ") and "adjusted by Holm over the 2 pairs;" in text
    assert "over the 3 pairs" not in text and "1 of the 3 pairs cannot be tested: A - B" in text


def test_one_pair_is_judged_by_its_own_exact_p_value():
    """Two agents, 30 tasks: the verdict was max-T's Monte Carlo p (its floor 1 / 21,112 = 4.7e-5) beside
    an exact per-pair p of 3.9e-6, under "one pair, so no adjustment" and "adjustment: max-T single step".
    With 0/1 differences the sign-flip law of the sum over the K tasks with a difference is the binomial
    (K, 1/2) law of the positive ones, so the exact p is scipy's two-sided binomial test.
    """
    g = np.random.default_rng(3)
    a, b = (g.random(30) < 0.9).astype(float), (g.random(30) < 0.3).astype(float)
    cmp = _quiet(_log({"A": a, "B": b}, runs=1))
    d = a - b
    k, pos = int(np.count_nonzero(d)), int((d > 0).sum())
    exact = stats.binomtest(pos, k, 0.5).pvalue
    table = pair_frame(cmp)
    assert list(table.columns[:3]) == ["mean difference", "p (permutation)", "MC error of p (permutation)"]
    assert table.iloc[0]["p (permutation)"] == pytest.approx(exact, rel=1e-9)
    assert "p Holm" not in table and "p max-T" not in table
    assert bool(table.iloc[0]["differ (p (permutation) < 0.05)"]) is bool(exact < 0.05) and exact < 1 / 21112
    assert "max-T" not in settings_text(cmp) and "max-T" not in pair_sentence(cmp)
    assert "one pair, so no adjustment" in " ".join(pair_sentence(cmp).split())
    # asked for, max-T stays
    assert _quiet(_log({"A": a, "B": b}, runs=1), adjust="maxt").attrs["adjust"] == "maxt"
