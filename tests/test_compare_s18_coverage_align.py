"""coverage_study takes every replication's cells by label, as side_by_side does (audit s18 X, finding 2).

Before, it stacked each replication's values by position and broadcast the truth onto the
first method's order: a method listing its agents b, a scored coverage 0 against a truth
listed a, b, and a method whose order changed between replications about 0.5, with no error.
The expected values below are by hand: every interval is the truth +- 0.01, so it covers.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hierbench._base import make_interval
from hierbench.compare import MismatchedEstimatesError
from hierbench.compare import coverage_study

TRUTH = {"a": 0.2, "b": 0.8, "c": 0.5}


def _exact(order, *, prob=0.95, kind="normal"):
    """An interval of half-width 0.01 around each agent's truth, the agents in ``order``."""
    est = xr.DataArray([TRUTH[x] for x in order], dims="agent", coords={"agent": list(order)})
    return xr.Dataset({"estimate": est, "ci": make_interval(est - 0.01, est + 0.01, prob=prob, kind=kind)})


def _simulate(rng):
    return None, xr.DataArray([0.2, 0.8], dims="agent", coords={"agent": ["a", "b"]})


def _simulate_ba(rng):  # the truth listed in a third order (b, a): aligned by label too
    return None, xr.DataArray([0.8, 0.2], dims="agent", coords={"agent": ["b", "a"]})


def test_a_method_listing_its_agents_in_another_order_is_scored_by_label():
    res = coverage_study(_simulate_ba, {"ab": lambda d, g: _exact("ab"), "ba": lambda d, g: _exact("ba")},
                         n_rep=20, rng=0, progress=False)  # fmt: skip
    assert res.coverage.sel(estimator="ab").values.tolist() == [1.0, 1.0]
    assert res.coverage.sel(estimator="ba").values.tolist() == [1.0, 1.0]  # old: [0.0, 0.0]
    assert np.abs(res.bias.values).max() < 1e-12  # old: +-0.6 for "ba"
    # the stacked table holds each agent's own estimate under its label
    est = res.table["estimate"].sel(estimator="ba")
    assert est.sel(agent="a").values.tolist() == [0.2] * 20 and est.sel(agent="b").values.tolist() == [0.8] * 20
    assert res.table["truth"].sel(estimator="ab", agent="a").values.tolist() == [0.2] * 20


def test_an_order_that_changes_between_replications_still_covers_every_time():
    def shuffled(data, rng):
        return _exact("ab" if rng.random() < 0.5 else "ba")

    res = coverage_study(_simulate, {"shuffled": shuffled}, n_rep=200, rng=0, progress=False)
    assert res.coverage.values.ravel().tolist() == [1.0, 1.0]  # old: 0.52
    np.testing.assert_allclose(res.mean_width.values, 0.02, atol=1e-12)


@pytest.mark.parametrize(
    ("later", "said"),
    [
        (lambda: _exact("ac"), r"agents \['a', 'c'\] where replication 0 had \['a', 'b'\]"),
        (lambda: _exact("ab", prob=0.9), "level 0.9 where replication 0 had 0.95"),
        (lambda: _exact("ab", kind="t"), "kind 't' where replication 0 had 'normal'"),
    ],
)
def test_a_replication_with_other_labels_level_or_kind_is_refused_naming_it(later, said):
    calls = []

    def method(data, rng):
        calls.append(1)
        return _exact("ab") if len(calls) < 4 else later()  # replications 0-2 as the first, 3 on: other

    with pytest.raises(MismatchedEstimatesError, match=r"`methods\['m'\]` gave in replication 3 " + said):
        coverage_study(_simulate, {"m": method}, n_rep=6, rng=0, progress=False)
