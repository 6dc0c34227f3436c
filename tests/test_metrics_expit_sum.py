"""The crossed model's probability-scale grid: ``expit(a + b)`` from S x (G + U) exponentials is scipy's expit."""

import numpy as np
from scipy.special import expit

from hierbench.metrics._crossed import _expit_sum


def test_expit_of_a_sum_is_scipys_at_every_scale_the_limits_included():
    g = np.random.default_rng(0)
    for scale in (0.5, 5.0, 40.0, 500.0):  # 500: past the overflow guard, expit itself
        a, b = g.normal(0, scale, (6, 33)), g.normal(0, scale, (6, 11))
        want = expit(a[..., None] + b[:, None, :])
        got = _expit_sum(a, b)
        assert got.shape == (6, 33, 11) and np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-300)
    # one factor tiny, the other huge (below the guard): products of 0 and inf never meet
    a, b = np.array([[-699.0, 699.0, 0.0]]), np.array([[699.0, -699.0]])
    np.testing.assert_allclose(_expit_sum(a, b), expit(a[..., None] + b[:, None, :]), rtol=1e-13, atol=1e-300)
