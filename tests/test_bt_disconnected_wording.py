"""The disconnected-graph warning of a Bradley-Terry model, in words true for every shape (audit P, F9)."""

import pandas as pd
import pytest

from hierbench.bayes import DisconnectedComparisonWarning
from hierbench.bayes import build_bradley_terry
from hierbench.data import read_battles


def test_components_tied_for_the_largest_are_not_called_outside_it():
    # two components of 2 agents each: neither is "the largest"
    df = pd.DataFrame({"left": ["x", "z"], "right": ["y", "w"], "winner": ["left", "tie"]})
    with pytest.warns(DisconnectedComparisonWarning) as rec:
        build_bradley_terry(read_battles(df))
    msg = str(rec[0].message)
    assert "sizes [2, 2]" in msg and "outside the largest" not in msg
    assert "2 of them tie for the largest (2 agents each: ['w', 'z']; ['x', 'y'])" in msg  # agents sorted
    assert "compared with each other only through the prior" in msg


def test_a_single_largest_component_keeps_its_wording():
    df = pd.DataFrame({"left": ["x", "y", "z"], "right": ["y", "w", "v"], "winner": ["left", "tie", "left"]})
    with pytest.warns(DisconnectedComparisonWarning, match=r"sizes \[3, 2\]\); agents outside the largest one "
                      r"\['v', 'z'\] are compared with it only through the prior"):
        build_bradley_terry(read_battles(df))
