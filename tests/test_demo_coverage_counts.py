"""Every demo table with a truth column beside intervals counts its covers and names its misses (audit U, finding 4).

Section 4 alone printed "6 of 6 intervals cover the truth"; sections 5 and 6 showed misses
uncounted. The expected counts here are by hand from the numbers each test writes down.
"""

import numpy as np
import pandas as pd
import xarray as xr

from hierbench.demo._context import _coverage_words
from hierbench.demo._context import _covers
from hierbench.demo._pairs import _pair_covers
from hierbench.demo._pairs import _rank_covers
from hierbench.demo._passk import _passk_covers


def test_coverage_words_count_the_defined_intervals_and_name_each_miss():
    """By hand: a covers (0.4 <= 0.5 <= 0.6), b misses (0.2 < 0.3), c covers, d has no truth."""
    idx = ["a", "b", "c", "d"]
    truth = pd.Series([0.5, 0.2, 0.9, np.nan], index=idx)
    lo = pd.Series([0.4, 0.3, 0.1, 0.1], index=idx)
    hi = pd.Series([0.6, 0.4, 0.95, 0.2], index=idx)
    assert _coverage_words(truth, lo, hi) == (
        "2 of 3 intervals cover the truth (1 undefined, not counted); the one that misses: "
        "b (truth 0.200, interval [0.300, 0.400])."
    )
    # an end equal to the truth covers it (a closed interval)
    assert _coverage_words(truth[:1], truth[:1], truth[:1]) == "1 of 1 intervals cover the truth."


def test_a_table_of_two_methods_counts_each_beside_the_truth():
    """Section 5's new-task table: the bootstrap and Bayes each get their own count, named.

    By hand: truth 0.43 for x lies below Bayes' [0.44, 0.50] and inside the bootstrap's [0.40, 0.55].
    """
    from hierbench.compare import side_by_side

    def result(lo, hi):
        ci = xr.DataArray(np.array([lo, hi]).T, dims=("agent", "ci_bound"),
                          coords={"agent": ["x", "y"], "ci_bound": ["lower", "upper"]},
                          attrs={"ci_prob": 0.95, "ci_kind": "percentile", "ci_detail": "written by hand"})
        return xr.Dataset({"estimate": ci.mean("ci_bound"), "ci": ci})

    truth = xr.DataArray([0.43, 0.30], dims="agent", coords={"agent": ["x", "y"]})
    table = side_by_side({"boot": result([0.40, 0.25], [0.55, 0.35]), "Bayes": result([0.44, 0.28], [0.50, 0.33])},
                         truth=truth)
    lines = [t for t in _covers(table).split("\n\n") if t]
    assert lines == [
        "boot: 2 of 2 intervals cover the truth.",
        "Bayes: 1 of 2 intervals cover the truth; the one that misses: x (truth 0.430, interval\n[0.440, 0.500]).",
    ]


def test_passk_pairs_and_ranks_count_their_truth_columns():
    """Sections 6, 7 and 8, each on a table written by hand (the column names the sections print)."""
    from hierbench.report._passk import unbiased_label

    passk = pd.DataFrame(
        {"k": [1, 2], "truth": [0.434, 0.266],
         unbiased_label(0.95, "lower"): [0.390, 0.236], unbiased_label(0.95, "upper"): [0.560, 0.431],
         "Bayes 95% lower": [0.441, 0.250], "Bayes 95% upper": [0.505, 0.349]},
        index=["agent_04", "agent_04"],
    )  # fmt: skip
    text = " ".join(_passk_covers(passk).split())
    assert "unbiased 95%: 2 of 2 intervals cover the truth." in text
    assert ("Bayes 95% ETI: 1 of 2 intervals cover the truth; the one that misses: agent_04 at k = 1 "
            "(truth 0.434, interval [0.441, 0.505]).") in text  # fmt: skip
    pairs = pd.DataFrame({"true diff": [0.068, -0.20], "simultaneous lower": [-0.010, -0.15],
                          "simultaneous upper": [0.179, 0.02]}, index=["a - b", "a - c"])  # fmt: skip
    assert " ".join(_pair_covers(pairs).split()) == (
        "1 of 2 simultaneous intervals cover the truth; the one that misses: a - c (truth -0.200, "
        "interval [-0.150, 0.020])."
    )
    ranks = pd.DataFrame({"true rank": [1, 4], "rank 95% lower": [1, 1], "rank 95% upper": [3, 3]}, index=["p", "q"])
    assert " ".join(_rank_covers(ranks).split()) == (
        "1 of 2 rank intervals cover the truth; the one that misses: q (truth 4, interval [1, 3])."
    )
    # no truth column: nothing said
    assert _passk_covers(passk.drop(columns="truth")) == "" and _rank_covers(ranks.drop(columns="true rank")) == ""
