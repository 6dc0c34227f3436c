"""Limit horizons and METR's per-replicate doubling-time rule: the shared numerics.

Independent references: numpy's quantile on finite samples and a hand
enumeration where samples hold infinities; METR's
``compute_bootstrap_confidence_region`` re-written as a loop of
``np.polyfit``.
"""

from __future__ import annotations

import numpy as np
import pytest

from hierbench._numerics import bootstrap_doubling_times
from hierbench._numerics import limit_quantiles
from hierbench._numerics import quantile_ext


def _metr_rule(days, samples):
    """METR's rule, re-written: per row drop NaN / inf / < 1e-3 minutes, polyfit ln h on days, keep ln 2 / slope > 0."""
    out, few, nonpos = np.full(len(samples), np.nan), 0, 0
    for i, r in enumerate(samples):
        ok = np.isfinite(r) & (r >= 1e-3)
        if ok.sum() < 2:
            few += 1
            continue
        d = np.log(2) / np.polyfit(days[ok], np.log(r[ok]), 1)[0]
        out[i] = d if d > 0 else np.nan
        nonpos += d <= 0
    return out, few, nonpos


def test_quantiles_with_limits_match_numpy_and_a_hand_enumeration():
    rng = np.random.default_rng(0)
    x = rng.lognormal(size=(201, 3))
    np.testing.assert_allclose(limit_quantiles(x, [0.025, 0.5, 0.975]), np.quantile(x, [0.025, 0.5, 0.975], axis=0))
    # 0, 1, 2, 3, inf: the 0.9 quantile sits between 3 and inf (position 3.6) -> inf; the 0.5 is 2; numpy gives nan
    v = np.array([2.0, np.inf, 0.0, 3.0, 1.0])
    assert limit_quantiles(v, [0.5, 0.7, 0.9]).tolist() == pytest.approx([2.0, 2.8, np.inf])
    with np.errstate(invalid="ignore"):
        assert np.isnan(np.quantile(v, 0.9))
    # NaN is left out column by column: the second column is the quantile of [1, 3]
    w = np.array([[0.0, 1.0], [np.nan, np.nan], [5.0, 3.0]])
    assert limit_quantiles(w, [0.5]).tolist() == [[2.5, 2.0]]
    from hierbench.freq._pairwise import _undefined

    assert _undefined._quantile_ext is quantile_ext  # one owner: the pairwise wing imports it


def test_bootstrap_doubling_times_follow_metr_rule():
    rng = np.random.default_rng(1)
    days = np.array([0.0, 200.0, 400.0, 650.0, 900.0])
    h = np.exp(rng.normal(np.log(2.0) * days / 180.0, 1.5, size=(300, 5)) - 4.0)
    h[rng.random(h.shape) < 0.1] = np.nan
    h[rng.random(h.shape) < 0.05] = 0.0
    h[rng.random(h.shape) < 0.05] = np.inf
    h[:3, 1:] = 1e-4  # three rows with one agent left: too few
    want, few, nonpos = _metr_rule(days, h)
    got = bootstrap_doubling_times(days, h)
    np.testing.assert_allclose(got.doubling, want, rtol=1e-9)
    assert (got.n_too_few, got.n_nonpositive, int(got.kept.sum())) == (few, nonpos, int(np.isfinite(want).sum()))
    assert got.agent_dropped.tolist() == (~(np.isfinite(h) & (h >= 1e-3))).sum(0).tolist()
    assert few >= 3 and nonpos > 0
