"""Binomial draws with one-trial cells taken as uniforms: the binomial law, cell by cell."""

import numpy as np
import pytest
from scipy import stats

from hierbench._numerics import binomial_draws


@pytest.mark.parametrize("n", [np.array([1, 1, 1]), np.array([1, 3, 0]), np.array([2, 5, 4])])
def test_each_cell_follows_its_binomial_law(n):
    """20,000 draws per cell: every count's frequency within 4.5 Monte Carlo SDs of scipy's pmf
    (over the 3 x 6 counts checked, a false alarm has probability about 1e-4).
    """
    p = np.array([0.07, 0.5, 0.83])
    draws = 20_000
    y = binomial_draws(np.random.default_rng(20261205), n, np.broadcast_to(p, (draws, 3)).copy())
    assert y.shape == (draws, 3) and y.dtype == np.int64
    for j in range(3):
        for k in range(6):
            want = stats.binom.pmf(k, n[j], p[j])
            sd = np.sqrt(want * (1 - want) / draws)
            assert abs(np.mean(y[:, j] == k) - want) <= 4.5 * sd + 1e-12, (n[j], p[j], k)


def test_a_seed_gives_the_same_counts_and_the_ends_of_p_are_certain():
    n, p = np.array([1, 2, 1, 1]), np.array([[0.0, 0.3, 1.0, 0.6]] * 50)
    a = binomial_draws(np.random.default_rng(1), n, p)
    np.testing.assert_array_equal(a, binomial_draws(np.random.default_rng(1), n, p))
    assert (a[:, 0] == 0).all() and (a[:, 2] == 1).all()
