"""One population integral: mean_new_task and population pass^k use the same rule, accurate to 1e-4."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import integrate
from scipy.special import expit

from hierbench._numerics.agq import logit_normal_expectation
from hierbench._numerics.agq import population_nodes


def exact(m: float, s: float, k: int) -> float:
    """E[expit(m + s Z)^k] by adaptive quadrature (scipy), independent of the rule under test."""
    f = lambda z: expit(m + s * z) ** k * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)  # noqa: E731
    return integrate.quad(f, -np.inf, np.inf, epsabs=1e-13, epsrel=1e-12, limit=200)[0]


@pytest.mark.parametrize("s", [0.05, 0.5, 1.0, 2.0, 3.5, 5.0])
def test_rule_within_1e4_of_quad_for_spreads_up_to_5(s):
    worst = 0.0
    for m in np.linspace(-8, 8, 9):
        for k in (1, 2, 5, 20):
            got = float(logit_normal_expectation(m, s, lambda p, k=k: p**k))
            worst = max(worst, abs(got - exact(m, s, k)))
    assert worst < 1e-4, worst


def test_gauss_hermite_of_the_old_sizes_was_not_accurate_enough():
    # why the rule changed: 7 and 31 Gauss-Hermite nodes miss by far more than 1e-4 at s = 5
    x, w = np.polynomial.hermite_e.hermegauss(31)
    w = w / np.sqrt(2 * np.pi)
    assert abs((expit(1.0 + 5.0 * x) * w).sum() - exact(1.0, 5.0, 1)) > 1e-4


@pytest.mark.slow
def test_model_and_metrics_use_the_one_rule():
    from hierbench.bayes import build_crossed
    from hierbench.bayes import fit
    from hierbench.metrics._crossed import crossed_pass_k
    from hierbench.testing import simulate_eval

    data, _ = simulate_eval(n_agents=2, n_tasks=12, n_runs=3, sd_task=3.0, rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = fit(build_crossed(data), draws=30, tune=30, chains=1, rng=0, progress=False)
    post = f["posterior"].to_dataset()
    s = np.sqrt(post["sd_task"] ** 2 + post["sd_agent_task"] ** 2)
    want = logit_normal_expectation(post["ability"].values, s.values[..., None])
    np.testing.assert_allclose(post["mean_new_task"].values, want, rtol=0, atol=1e-12)
    pk = crossed_pass_k(f, k=1, kind="hat", population=True)
    np.testing.assert_allclose(
        pk["draws"].sel(k=1).transpose("chain", "draw", "agent").values,
        post["mean_new_task"].transpose("chain", "draw", "agent").values,
        rtol=0,
        atol=1e-12,
    )
    # and both equal the exact integral for a draw
    a, sd = float(post["ability"].values[0, 0, 0]), float(s.values[0, 0])
    assert abs(float(post["mean_new_task"].values[0, 0, 0]) - exact(a, sd, 1)) < 1e-4


def test_nodes_integrate_normal_moments():
    u, w = population_nodes()
    for j, mom in ((0, 1.0), (2, 1.0), (4, 3.0), (6, 15.0)):
        assert (w * u**j).sum() == pytest.approx(mom, abs=1e-10)
