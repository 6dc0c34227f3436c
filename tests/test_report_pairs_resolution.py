"""The pair sentence, the marks legend and the max-T / Holm note say when a count is resolution or Monte Carlo noise.

Audit R1: a bootstrap comparison with Holm, given to the report in ``freq``, read "0 of 300 pairs
differ" on SWE-bench although no bootstrap p-value could go below 2 / (B + 1) = 0.0002, above
Holm's first threshold 0.05 / 300; nothing said so, and the report's warnings list did not hold it.
Audit R4: the ``***`` marks and METR's "at 0.001 max-T separates 13 pairs and Holm 10" rested on
Monte Carlo p-values whose error is about a quarter of 0.001; nothing said so.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr


@pytest.fixture(scope="module")
def floored():
    """9 agents at solve rates 0.1 ... 0.9 (by task position) on 30 tasks: the bootstrap test with Holm at B = 199."""
    from hierbench.freq import compare_agents

    n_agents, n_tasks = 9, 30
    rate = np.linspace(0.1, 0.9, n_agents)
    pos = (np.arange(n_tasks) + 0.5) / n_tasks
    s = (pos[None, :] < rate[:, None]).astype(float)[..., None]  # agent k solves the first 10k % of the tasks
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)},
                    coords={"agent": [f"a{k}" for k in range(n_agents)], "task": [f"t{i:02d}" for i in range(n_tasks)]})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare_agents(ds, test="bootstrap", adjust="holm", n_resamples=199, rng=0)
    return ds, cmp


def test_a_count_the_bootstrap_floor_decides_says_so(floored):
    """Floor 2 / (199 + 1) = 0.01 by hand, Holm's first threshold 0.05 / 36 = 0.00139: no pair can pass, so
    the "0 of 36" is resolution. The top and bottom agents part on 24 of 30 tasks, all one way: the exact
    sign test (scipy) gives 1.2e-7, so the count is not evidence that they are alike.
    """
    from scipy.stats import binomtest

    from hierbench.report import pair_sentence

    _, cmp = floored
    assert binomtest(24, 24).pvalue < 1e-6 and 2 / 200 > 0.05 / 36  # the premise, by hand and scipy
    text = " ".join(pair_sentence(cmp).split())
    assert text.startswith("0 of 36 pairs differ at family-wise level 0.05, a count the p-values' resolution caps")
    assert "Resolution: no bootstrap p-value here can go below 0.01, and 36 pairs put Holm's first threshold at" in text
    assert "no pair can be called different at this resolution (raise `n_resamples` to at least" in text
    # the Monte Carlo sentence no longer sends the reader to more resamples of any number
    if "within two Monte Carlo errors of 0.05" in text:
        assert "only once there are at least as many as the resolution above asks for" in text
    # at another level the result's own words for that level (its significant() warning): 0.01 / 36
    other = " ".join(pair_sentence(cmp, 0.01).split())
    assert "a count the p-values' resolution caps" in other and "no bootstrap p-value here can go below 0.01" in other


def test_a_given_comparison_puts_its_floor_in_the_reports_warnings(floored):
    """``compare_agents`` warned when the result was made; given in ``freq`` the report raises the note again
    (once) inside its section, so the list "Warnings raised while computing the report" holds it.
    """
    from hierbench.freq import PValueResolutionWarning
    from hierbench.report._context import _Context
    from hierbench.report._sec_pairs import _compare

    ds, cmp = floored
    ctx = _Context(fit=None, data=ds, prob=0.95, rng=0, n_resamples=199, truth=None, freq={"compare": cmp},
                   subset=[], say=lambda *_: None)  # fmt: skip
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _compare(ctx) is cmp and _compare(ctx) is cmp
    said = [str(w.message) for w in caught if issubclass(w.category, PValueResolutionWarning)]
    assert len(said) == 1 and "no pair can be called different at this resolution" in said[0]


def test_an_exact_comparison_has_no_resolution_clause():
    """Sign flips, 3 agents on 30 tasks, each pair apart on 12 or 24 of them: the exact floors 2^(1 - 12) and
    2^(1 - 24) are below Holm's first threshold 0.05 / 3 = 0.0167 (by hand), so there is nothing to say.
    """
    from hierbench.freq import compare_agents
    from hierbench.report import pair_sentence

    s = np.stack([np.ones(30), np.r_[np.ones(6), np.zeros(24)], np.r_[np.zeros(12), np.ones(18)]])[..., None]
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)}, coords={"agent": ["a", "b", "c"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = pair_sentence(compare_agents(ds, test="permutation", adjust="holm", rng=0))
    assert "Resolution:" not in text and "resolution caps" not in text


def _marks_table() -> pd.DataFrame:
    """A max-T pair table by hand: p max-T, its MC error, p Holm, and Holm's MC error in attrs."""
    t = pd.DataFrame({
        "mean difference": [0.5, 0.4, 0.6, 0.2, 0.3, 0.1],
        "p max-T": [0.0009, 0.0011, 0.0005, 0.02, 0.0095, 0.0016],
        "MC error of p max-T": [0.0002, 0.0002, 0.00001, 0.001, 0.0004, 0.0001],
        "differ (p max-T < 0.05)": [True] * 6,
        "p Holm": [0.0008, 0.002, 0.0004, 0.03, 0.02, 0.00005],
    }, index=[f"p{i}" for i in range(6)])  # fmt: skip
    t.attrs["MC error of p Holm"] = pd.Series([0.00015, 0, 0, 0, 0, 0], index=t.index, dtype=float)
    return t


def test_marks_legend_counts_the_marks_within_two_monte_carlo_errors():
    """By hand: at 0.001, |p - 0.001| <= 2 MC errors for p0 (0.0001 <= 0.0004) and p1 (0.0001 <= 0.0004), of
    which p0 is marked; p2 (0.0005 > 0.00002) and p5 (0.0006 > 0.0002) are not near. At 0.01, p4 (0.0005 <=
    0.0008), marked. At 0.05 the sentence says it (not the legend). An exact table (errors 0) adds nothing.
    """
    from hierbench.report import marks_legend

    table = _marks_table()
    plain = marks_legend(0.05, "max-T")
    text = marks_legend(0.05, "max-T", table)
    assert text.startswith(plain) and "so some marks can come or go with the seed or more draws: " in text
    assert text.endswith("at 0.01 (`**`) 1 pair (1 marked) lies within two Monte Carlo errors of the level; "
                         "at 0.001 (`***`) 2 pairs (1 marked) lie within two Monte Carlo errors of the level")
    assert marks_legend(0.05, "max-T", table.assign(**{"MC error of p max-T": 0.0})) == plain


def test_max_t_and_holm_counts_say_when_they_are_monte_carlo_uncertain():
    """At 0.001 p5 has Holm 0.00005 (ten times below) and max-T 0.0016: the note gives both counts, 2 (p0, p2)
    and 3 (p0, p2, p5), by hand; near 0.001 are p0 and p1 for max-T and p0 for Holm (0.0002 <= 0.0003).
    """
    from hierbench.report._pairs import marks_holm_note

    note = " ".join(marks_holm_note(_marks_table(), 0.05).split())
    assert ("at 0.001 (`***`) max-T separates 2 pairs and Holm 3 (Monte Carlo-uncertain: 2 pairs' `p max-T` and "
            "1 pair's `p Holm` lie within two Monte Carlo errors of 0.001, so either count can move") in note
    exact = _marks_table().assign(**{"MC error of p max-T": 0.0})
    exact.attrs = {}
    note = " ".join(marks_holm_note(exact, 0.05).split())
    assert "at 0.001 (`***`) max-T separates 2 pairs and Holm 3 (`p Holm`" in note and "Monte Carlo-uncertain" not in note
