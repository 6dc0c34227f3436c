"""prob_superiority's ``mcse_max`` from the effective sample size its own ``ci`` uses (audit X, finding 5).

The attribute was ``sqrt(p (1 - p) / S)`` with ``S`` the number of draws; autocorrelated draws
hold less. Expected values: a chain built of blocks of ``m`` repeated iid values, whose
autocorrelation is ``1 - t / m`` for ``t < m``, so its integrated autocorrelation time is
``1 + 2 sum_{t=1}^{m-1} (1 - t / m) = m`` and its ESS about ``S / m`` (by formula); and the
ESS of the per-draw indicator computed here with arviz-stats.
"""

from __future__ import annotations

import arviz_stats as azs
import numpy as np
import pytest
import xarray as xr

from hierbench import metrics


def _blocked(seed: int, chains: int = 2, draws: int = 1000, m: int = 20) -> np.ndarray:
    g = np.random.default_rng(seed)
    return np.repeat(g.normal(size=(chains, draws // m)), m, axis=1)


def test_mcse_max_uses_the_effective_sample_size_of_the_indicator():
    a = _blocked(0)  # 2 chains x 1000 draws, blocks of 20: ESS about 2000 / 20 = 100
    d = xr.DataArray(np.stack([a, np.zeros_like(a)], -1), dims=("chain", "draw", "agent"),
                     coords={"agent": ["a", "b"]})  # fmt: skip
    res = metrics.prob_superiority(d)
    p = float((a > 0).mean())
    ind = xr.DataArray((a > 0).astype(float), dims=("chain", "draw"))
    ess = float(azs.ess(ind, sample_dims=["chain", "draw"], method="mean"))
    # both pairs have p (1 - p) equal (P(b > a) = 1 - p), and the same ESS
    assert res.estimate.attrs["mcse_max"] == pytest.approx(np.sqrt(p * (1 - p) / ess), rel=1e-12)
    # the formula's ESS (2000 / 20 = 100), within a third either way for the estimate's noise
    assert np.sqrt(p * (1 - p) / 133) < res.estimate.attrs["mcse_max"] < np.sqrt(p * (1 - p) / 75)
    # the raw count gave sqrt(p (1 - p) / 2000), about 0.011: 4.5 times too small
    assert res.estimate.attrs["mcse_max"] > 4 * np.sqrt(p * (1 - p) / a.size)
    # it agrees with the result's own Wilson interval: half-width / z near the SE at n = ESS
    half = float(res.ci.sel(agent="a", opponent="b").diff("ci_bound").squeeze()) / 2 / 1.959964
    assert res.estimate.attrs["mcse_max"] == pytest.approx(half, rel=0.05)


def test_mcse_max_is_the_largest_over_the_pairs_with_each_pairs_own_ess():
    """Three agents: a blocked (ESS about 100), c iid draws (ESS about 2000), b = 0; split ties.

    The largest SE is a pair with a, not the pair b, c whose draws are independent.
    """
    g = np.random.default_rng(3)
    a = _blocked(1)
    c = g.normal(size=a.shape)
    d = xr.DataArray(np.stack([a, np.zeros_like(a), c], -1), dims=("chain", "draw", "agent"),
                     coords={"agent": ["a", "b", "c"]})  # fmt: skip
    res = metrics.prob_superiority(d, ties="split")
    x = {"a": a, "b": np.zeros_like(a), "c": c}
    want = []
    for i in x:
        for j in x:
            if i == j:
                continue
            ind = (x[i] > x[j]) + 0.5 * (x[i] == x[j])
            p = float(ind.mean())
            e = float(azs.ess(xr.DataArray(ind.astype(float), dims=("chain", "draw")),
                              sample_dims=["chain", "draw"], method="mean"))  # fmt: skip
            want.append(np.sqrt(p * (1 - p) / min(e, a.size)))
    assert res.estimate.attrs["mcse_max"] == pytest.approx(max(want), rel=1e-12)
