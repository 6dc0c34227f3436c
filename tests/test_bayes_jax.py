"""The JAX route (numpyro through PyMC), run only where jax and numpyro are installed.

jax and numpyro are in the ``test`` extra, so CI runs these; a bare install
without them skips the module. The reference for the AGQ kernel's JAX
implementation is its NumPy implementation, which
tests/test_bayes_agq.py checks against scipy quadrature.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("jax") is None or importlib.util.find_spec("numpyro") is None,
    reason="jax and numpyro are not installed (pip install 'hierbench[jax]')",
)


@pytest.mark.slow
def test_agq_op_jax_matches_numpy():
    import pytensor
    import pytensor.tensor as pt

    from hierbench._numerics.agq import NEWTON_STEPS
    from hierbench.bayes._ops._agq_op import AGQBinomialLogitNormal
    from hierbench.bayes._ops._agq_op import agq_logp_numpy

    rng = np.random.default_rng(0)
    n = rng.integers(1, 30, 50).astype(float)
    y = rng.binomial(n.astype(int), 0.4).astype(float)
    eta = rng.normal(0, 1.5, 50)
    yv, nv, ev = pt.vector("y"), pt.vector("n"), pt.vector("eta")
    sd = pt.scalar("sd")
    logp = AGQBinomialLogitNormal(7)(yv, nv, ev, sd)[0]
    total = logp.sum()
    f = pytensor.function([yv, nv, ev, sd], [logp, pytensor.grad(total, ev), pytensor.grad(total, sd)], mode="JAX")
    got = f(y, n, eta, 0.8)
    ref = agq_logp_numpy(y, n, eta, 0.8, 7, NEWTON_STEPS)  # NumPy stops at convergence, JAX runs 12 steps
    np.testing.assert_allclose(np.asarray(got[0]), ref[0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(np.asarray(got[1]), ref[1], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(float(got[2]), ref[2].sum(), rtol=1e-10, atol=1e-10)



def test_binomial_logit_op_jax_matches_scipy():
    import pytensor
    import pytensor.tensor as pt
    from scipy.special import expit
    from scipy.special import log_expit

    from hierbench.bayes._ops._logit_op import binomial_logit

    rng = np.random.default_rng(1)
    n = rng.integers(1, 30, 50).astype(float)
    eta = rng.normal(0, 3.0, 50)
    y = rng.binomial(n.astype(int), expit(eta)).astype(float)
    yv, nv, ev = pt.vector("y"), pt.vector("n"), pt.vector("eta")
    logp = binomial_logit(yv, nv, ev)
    f = pytensor.function([yv, nv, ev], [logp, pytensor.grad(logp.sum(), ev)], mode="JAX")
    got = f(y, n, eta)
    # y log p + (n - y) log(1 - p), from scipy's log-sigmoid
    ref = y * log_expit(eta) + (n - y) * log_expit(-eta)
    np.testing.assert_allclose(np.asarray(got[0]), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np.asarray(got[1]), y - n * expit(eta), rtol=1e-12, atol=1e-12)


def test_unit_interval_op_jax_matches_numpy():
    import pytensor
    import pytensor.tensor as pt

    from hierbench.bayes._ops._unit_interval_op import unit_interval_logp
    from hierbench.bayes._ops._unit_interval_op import unit_interval_numpy

    rng = np.random.default_rng(2)
    y = np.where(rng.random(60) < 0.5, rng.random(60), rng.integers(0, 2, 60).astype(float))
    eta, w = rng.normal(0, 2.0, 60), rng.exponential(2.0, 60)
    eta[:2] = [1e-3, -0.03]  # inside the series' range
    yv, ev, wv = pt.vector("y"), pt.vector("eta"), pt.vector("w")
    logp = unit_interval_logp(yv, ev, wv)
    f = pytensor.function([yv, ev, wv], [logp, *pytensor.grad(logp.sum(), [ev, wv])], mode="JAX")
    # the NumPy formulas are checked against the normaliser written out in test_bayes_unit_interval_op
    for got, want in zip(f(y, eta, w), unit_interval_numpy(y, eta, w), strict=True):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)

@pytest.mark.slow
def test_fit_with_numpyro_end_to_end():
    from hierbench.bayes import build_crossed
    from hierbench.bayes import fit
    from hierbench.testing import simulate_eval

    data, _ = simulate_eval(n_agents=2, n_tasks=12, n_runs=3, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(
            build_crossed(data), sampler="numpyro", draws=100, tune=100, chains=1, rng=1, log_likelihood=True
        )
    assert dt.attrs["sampler"] == "numpyro"
    for group in ("posterior", "log_likelihood", "posterior_predictive", "sample_stats"):
        assert group in dt.children
    post = dt["posterior"].to_dataset()
    assert post["ability"].sizes == {"chain": 1, "draw": 100, "agent": 2}
    assert np.isfinite(post["sd_task"].values).all()


@pytest.mark.slow  # a compile or a fresh process: the fast lane stays under 2 minutes
def test_jax_loads_only_with_its_backend_and_the_kernels_are_there_when_it_does():
    # a fresh process: importing hierbench.bayes leaves jax alone (0.75 s of the import), and
    # PyTensor's JAX backend imported afterwards finds the fused Ops' kernels registered.
    # Reference: scipy's log-sigmoid for the binomial cells, as above
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys, numpy as np\n"
        "import hierbench.bayes\n"
        "before = 'jax' in sys.modules\n"
        "import pytensor, pytensor.tensor as pt\n"
        "from hierbench.bayes._ops._logit_op import binomial_logit\n"
        "y, n, e = pt.vector('y'), pt.vector('n'), pt.vector('e')\n"
        "f = pytensor.function([y, n, e], binomial_logit(y, n, e), mode='JAX')\n"
        "print(before, *np.asarray(f([1., 2.], [3., 4.], [0.3, -1.])))\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": root, "PATH": ""}, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    from scipy.special import log_expit

    before, *vals = out.stdout.split()
    y, n, e = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([0.3, -1.0])
    assert before == "False"
    np.testing.assert_allclose([float(v) for v in vals], y * log_expit(e) + (n - y) * log_expit(-e), rtol=1e-12)
