"""P(i > j) and rank probabilities over many agents: computed in blocks of agents, the same values.

A report on 316 agents asked for (chain, draw, agent, opponent) arrays of 4.8 GiB and was
killed for memory; the functions now work through blocks of agents. Expected values: plain numpy
comparisons of the draws (P(i > j), the tie-split rank shares), and the one-block computation.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hierbench import metrics
from hierbench.metrics import _ranking


def _draws(seed: int = 5, chains: int = 2, draws: int = 60, agents: int = 9) -> xr.DataArray:
    g = np.random.default_rng(seed)
    x = np.round(g.normal(np.linspace(-1, 1, agents), 1.0, (chains, draws, agents)), 1)  # rounded: ties
    return xr.DataArray(x, dims=("chain", "draw", "agent"), coords={"agent": [f"a{i}" for i in range(agents)]})


def _fields(res) -> dict[str, np.ndarray]:
    names = ("estimate", "ci", "ess", "difference", "difference_ci", "expected_rank")
    return {n: np.asarray(getattr(res, n).values) for n in names if hasattr(res, n)}


@pytest.mark.parametrize("ties", ["exclude", "split"])
@pytest.mark.parametrize("block_values", [1, 2 * 120 * 9, 10**12])
def test_prob_superiority_in_blocks_equals_one_block_and_numpy(monkeypatch, ties, block_values):
    d = _draws()
    whole = metrics.prob_superiority(d, ties=ties)
    monkeypatch.setattr(_ranking, "_BLOCK_VALUES", block_values)
    parts = metrics.prob_superiority(d, ties=ties)
    for name, v in _fields(whole).items():
        assert np.array_equal(v, _fields(parts)[name], equal_nan=True), name
    x = d.values.reshape(-1, d.sizes["agent"])
    gt = (x[:, :, None] > x[:, None, :]).mean(0) + (0.5 * (x[:, :, None] == x[:, None, :]).mean(0) if ties == "split" else 0)
    np.fill_diagonal(gt, np.nan)
    np.testing.assert_allclose(parts.estimate.values, gt, rtol=1e-12, atol=1e-15)
    assert parts.ci.attrs == whole.ci.attrs


@pytest.mark.parametrize("block_values", [1, 2 * 120 * 9, 10**12])
def test_rank_probabilities_in_blocks_equal_one_block_and_numpy(monkeypatch, block_values):
    d = _draws(seed=8)
    whole = metrics.rank_probabilities(d)
    monkeypatch.setattr(_ranking, "_BLOCK_VALUES", block_values)
    parts = metrics.rank_probabilities(d)
    for name, v in _fields(whole).items():
        assert np.array_equal(v, _fields(parts)[name], equal_nan=True), name
    # numpy: in each draw an agent tied with e others at b better ones shares ranks b+1..b+e equally
    x = d.values.reshape(-1, d.sizes["agent"])
    s, m = x.shape
    want = np.zeros((m, m))
    for row in x:
        for i in range(m):
            b, e = int((row > row[i]).sum()), int((row == row[i]).sum())
            want[i, b : b + e] += 1.0 / e
    np.testing.assert_allclose(parts.estimate.values, want / s, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(parts.estimate.sum("rank").values, 1.0, rtol=1e-12)
