"""The Davidson (1970) win / tie / loss probabilities the Bayesian likelihood and ``head_to_head`` share.

Reference: the definition itself, ``P(a) = e^{d/2} / Z``, ``P(tie) = nu / Z``, ``P(b) = e^{-d/2} / Z``,
``Z = e^{d/2} + nu + e^{-d/2}``, evaluated directly in numpy's extended precision (``longdouble``,
64-bit mantissa, exponent to 16383: ``e^{750}`` does not overflow there), and scipy's logistic
function for the model without ties.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy.special import log_expit

from hierbench._numerics import davidson_log_probs

if np.finfo(np.longdouble).eps > 1e-18:  # pragma: no cover - platforms whose longdouble is a double
    pytest.skip("the reference needs an extended-precision longdouble", allow_module_level=True)

EPS = np.finfo(float).eps
#: gaps from a tie to 1,500 logits (the double-precision formula overflows past ~1,420) and a dense
#: sweep of +-60; tie parameters from almost no ties (nu = e^-20) to mostly ties (nu = e^5)
GAPS = np.concatenate([[0.0, 1e-8, 0.3, 1.0, 2.5, 10.0, 37.0, 200.0, 1500.0], -np.array([1e-8, 1.0, 37.0, 1500.0]),
                       np.linspace(-60.0, 60.0, 2001)])  # fmt: skip
LOG_NUS = np.array([-20.0, -3.0, -0.5, 0.0, 0.7, 5.0])


def _definition(d: np.ndarray, log_nu: np.ndarray) -> np.ndarray:
    """The three probabilities as Davidson defines them, in extended precision."""
    d, nu = np.asarray(d, np.longdouble), np.exp(np.asarray(log_nu, np.longdouble))
    z = np.exp(d / 2) + nu + np.exp(-d / 2)
    return np.stack([np.exp(d / 2) / z, nu / z, np.exp(-d / 2) / z], axis=-1)


def test_log_probabilities_are_the_definitions_to_a_few_ulps_at_every_gap_and_tie_parameter():
    d, log_nu = np.meshgrid(GAPS, LOG_NUS, indexing="ij")
    got = davidson_log_probs(d, log_nu)
    assert got.shape == (*d.shape, 3) and np.isfinite(got).all()
    want = np.log(_definition(d, log_nu))
    # a log-probability to 2 ulps of its own size, also near 0 (a near-certain outcome: log P = -1.4e-6 at
    # d = 37, nu = e^5), up to the reference's own resolution there (4 longdouble ulps of 1)
    np.testing.assert_array_less(np.abs(got - want), 2 * EPS * np.abs(want) + 4 * np.finfo(np.longdouble).eps)
    # the probabilities to 2 ulps of 1, and each sums to 1
    p = np.exp(got)
    np.testing.assert_array_less(np.abs(p - _definition(d, log_nu)), 2 * EPS)
    np.testing.assert_allclose(p.sum(-1), 1.0, rtol=0, atol=4 * EPS)
    # the naive double-precision formula is not finite at the largest gap: e^{750} overflows
    with np.errstate(over="ignore", invalid="ignore"):
        assert not np.isfinite(np.exp(750.0) / (np.exp(750.0) + 1.0 + np.exp(-750.0)))


def test_symmetry_and_ties_at_equal_abilities():
    """Swapping the agents swaps win and loss; at d = 0, P(tie) = nu / (2 + nu)."""
    d, log_nu = np.meshgrid(GAPS, LOG_NUS, indexing="ij")
    np.testing.assert_array_equal(davidson_log_probs(-d, log_nu), davidson_log_probs(d, log_nu)[..., ::-1])
    nu = np.exp(np.asarray(LOG_NUS, np.longdouble))
    np.testing.assert_allclose(np.exp(davidson_log_probs(0.0, LOG_NUS))[:, 1], (nu / (2 + nu)).astype(float), rtol=2 * EPS)


def test_without_ties_it_is_the_logistic_model_and_a_tie_has_probability_zero():
    got = davidson_log_probs(GAPS, -np.inf)
    np.testing.assert_allclose(got[:, 0], log_expit(GAPS), rtol=4 * EPS, atol=4 * EPS)
    np.testing.assert_allclose(got[:, 2], log_expit(-GAPS), rtol=4 * EPS, atol=4 * EPS)
    assert (got[:, 1] == -np.inf).all()


def test_broadcasts_the_gaps_against_the_tie_parameter_of_each_draw():
    """Draws (4,) x pairs (3,): each draw's nu applies to its own row of gaps."""
    g = np.random.default_rng(0)
    d, log_nu = g.normal(0, 2, (4, 3)), g.normal(0, 1, (4, 1))
    got = davidson_log_probs(d, log_nu)
    assert got.shape == (4, 3, 3)
    for i in range(4):
        np.testing.assert_array_equal(got[i], davidson_log_probs(d[i], log_nu[i, 0]))


def test_head_to_head_takes_its_probabilities_from_the_definition():
    """``hierbench.metrics.head_to_head`` averages the definition's probabilities over the draws."""
    from hierbench.metrics import head_to_head

    g = np.random.default_rng(1)
    ability, log_nu, home = g.normal(0, 1.5, (2, 5, 4)), g.normal(-0.5, 0.3, (2, 5)), g.normal(0.2, 0.1, (2, 5))
    post = xr.Dataset({"ability": (("chain", "draw", "agent"), ability), "nu": (("chain", "draw"), np.exp(log_nu)),
                       "home": (("chain", "draw"), home)}, coords={"agent": list("abcd")})  # fmt: skip
    dt = xr.DataTree.from_dict({"posterior": post})
    dt.attrs["hierbench_model"] = "bradley_terry"
    gap = ability[..., :, None] - ability[..., None, :]
    for first, sign in ((True, 1.0), (False, -1.0)):
        r = head_to_head(dt, agent_first=first)
        want = _definition(gap + sign * home[..., None, None], log_nu[..., None, None]).mean((0, 1))
        off = ~np.eye(4, dtype=bool)
        for k, field in enumerate(("p_win", "p_tie", "p_loss")):
            np.testing.assert_allclose(getattr(r, field).values[off], want[..., k][off].astype(float), rtol=0, atol=8 * EPS)
