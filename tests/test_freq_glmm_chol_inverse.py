"""The Laplace fit's inverse from its Cholesky factor (LAPACK potri) is numpy's inverse, whole and symmetric."""

import numpy as np
from scipy import linalg

from hierbench.freq._glmm._laplace import chol_inverse


def test_chol_inverse_is_numpys_inverse_from_either_triangle_and_of_an_empty_matrix():
    g = np.random.default_rng(0)
    for q in (1, 2, 7, 150):
        a = g.normal(size=(q, q))
        h = a @ a.T + np.eye(q)
        for lower in (True, False):
            inv = chol_inverse(linalg.cho_factor(h, lower=lower, check_finite=False))
            np.testing.assert_allclose(inv, np.linalg.inv(h), rtol=1e-10, atol=1e-13)
            assert np.array_equal(inv, inv.T)
    assert chol_inverse(linalg.cho_factor(np.zeros((0, 0)), lower=True)).shape == (0, 0)
