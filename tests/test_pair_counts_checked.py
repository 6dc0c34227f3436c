"""A hand-built pair-counts dataset (dim ``pair``) is held to from_pair_counts' rules, the offending pairs named.

Audit P (s17), finding 5: fractional counts were silently rounded (win_rate reported 3.5 comparisons,
the ML fit 10 for counts summing to 9.5), a pair of an agent with itself was counted, an agent missing
from the ``agent`` coord gave a bare KeyError, and negative counts were refused without naming a row.
The expected values are the tables written here and the sums of their counts by hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.data import EvalDataError
from hierbench.data import from_pair_counts
from hierbench.freq import fit_bradley_terry_ml
from hierbench.freq import win_rate


def _counts(a, b, wa, wb, agents=("A", "B", "C"), ties=None):
    n = len(a)
    return xr.Dataset(
        {"n_win_a": ("pair", np.asarray(wa, float)), "n_tie": ("pair", np.asarray(ties or [0] * n, float)),
         "n_win_b": ("pair", np.asarray(wb, float))},
        coords={"agent_a": ("pair", list(a)), "agent_b": ("pair", list(b)), "agent": list(agents)},
    )  # fmt: skip


FITS = [lambda d: win_rate(d, n_resamples=20, rng=0),
        lambda d: fit_bradley_terry_ml(d, ties="half", n_resamples=20, rng=0)]  # fmt: skip


@pytest.mark.parametrize("fit", FITS)
def test_fractional_counts_are_refused_naming_the_pair(fit):
    d = _counts(["A", "B"], ["B", "C"], [2.5, 2], [1, 4])
    with pytest.raises(EvalDataError, match=r"non-negative integer counts; rows \[0\].*\('A', 'B'\)"):
        fit(d)


@pytest.mark.parametrize("fit", FITS)
def test_negative_counts_are_refused_naming_the_pair(fit):
    d = _counts(["A", "B"], ["B", "C"], [2, 3], [1, -1])
    with pytest.raises(EvalDataError, match=r"`wins_b` column 'n_win_b'.*rows \[1\].*\('B', 'C'\)"):
        fit(d)


@pytest.mark.parametrize("fit", FITS)
def test_a_pair_of_an_agent_with_itself_is_refused_naming_it(fit):
    d = _counts(["A", "B", "A"], ["B", "C", "A"], [2, 2, 3], [1, 4, 1])
    with pytest.raises(EvalDataError, match=r"must differ; rows \[2\].*\('A', 'A'\)"):
        fit(d)


@pytest.mark.parametrize("fit", FITS)
def test_an_agent_missing_from_the_coord_is_named_with_its_pairs(fit):
    d = _counts(["A", "Z"], ["B", "C"], [2, 2], [1, 4])
    with pytest.raises(EvalDataError, match=r"missing \['Z'\].*\('Z', 'C'\)"):
        fit(d)


def test_a_valid_hand_built_dataset_fits_as_from_pair_counts_of_the_same_table():
    table = pd.DataFrame({"a": ["A", "B", "A"], "b": ["B", "C", "C"], "wa": [3, 2, 4], "wb": [1, 2, 1]})
    hand = _counts(table["a"], table["b"], table["wa"], table["wb"])
    read = from_pair_counts(table, agent_a="a", agent_b="b", wins_a="wa", wins_b="wb")
    r_hand = fit_bradley_terry_ml(hand, ties="none", n_resamples=20, rng=0)
    r_read = fit_bradley_terry_ml(read, ties="none", n_resamples=20, rng=0)
    assert r_hand.n_comparisons == 3 + 1 + 2 + 2 + 4 + 1
    np.testing.assert_allclose(r_hand.estimate.values, r_read.estimate.values, rtol=1e-10)


def test_the_reader_hands_the_offending_rows_to_its_caller():
    # the rows the message names are kept on the error, so callers need not parse the text
    table = pd.DataFrame({"a": ["A", "B", "C"], "b": ["B", "B", "A"], "wa": [1, 2, -3], "wb": [1, 1, 1]})
    with pytest.raises(EvalDataError) as e:
        from_pair_counts(table, agent_a="a", agent_b="b", wins_a="wa", wins_b="wb")
    assert e.value.rows == [2]
    table.loc[2, "wa"] = 3
    with pytest.raises(EvalDataError) as e:
        from_pair_counts(table, agent_a="a", agent_b="b", wins_a="wa", wins_b="wb")
    assert e.value.rows == [1]
    assert EvalDataError("no rows named").rows is None
