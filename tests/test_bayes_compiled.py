"""A compiled model is reused only where it computes the same function of the data.

The reference for a reused build is a fresh build of the same model
(the process's store cleared first): the draws must be the same to the bit.
"""

from __future__ import annotations

import json

import numpy as np
import pymc as pm
import pytest

from hierbench.bayes import build_beta_binomial
from hierbench.bayes import build_crossed
from hierbench.bayes import clear_compiled
from hierbench.bayes import fit
from hierbench.bayes import fit_replicates
from hierbench.bayes._sampler import _compiled
from hierbench.testing import simulate_eval


def _key(model):
    return _compiled.design_key(model, getattr(model, "hierbench", {}))


def _toy(y, *, prior_sd=1.0, offset=None, prior_loc=None):
    """A small model with data `y`; `offset` enters as a constant, `prior_loc` as data a prior reads."""
    with pm.Model() as m:
        yd = pm.Data("y", np.asarray(y, dtype=float))
        loc = pm.Data("loc", np.asarray(prior_loc if prior_loc is not None else 0.0))
        mu = pm.Normal("mu", loc, prior_sd)
        shift = np.asarray(offset if offset is not None else np.zeros(len(y)))
        pm.Normal("obs", mu + shift, 1.0, observed=yd)
    return m


def test_key_follows_what_the_build_depends_on_and_not_the_data_values():
    base = _key(_toy([0.1, 0.2, 0.3]))
    assert _key(_toy([5.0, -1.0, 2.0])) == base  # other data values, same design
    assert _key(_toy([0.1, 0.2, 0.3, 0.4])) != base  # another shape
    assert _key(_toy([0.1, 0.2, 0.3], prior_sd=2.0)) != base  # another prior (a constant)
    assert _key(_toy([0.1, 0.2, 0.3], offset=[0.0, 0.0, 1.0])) != base  # a constant array
    assert _key(_toy([0.1, 0.2, 0.3], prior_loc=1.0)) != base  # data a prior reads


def test_key_of_a_builder_ignores_outcomes_but_not_the_structure():
    d1, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, rng=1)
    d2, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, rng=2)
    assert _key(build_crossed(d1)) == _key(build_crossed(d2))
    assert _key(build_crossed(d1, agent_task="none")) != _key(build_crossed(d1))
    assert _key(build_beta_binomial(d1)) != _key(build_crossed(d1))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::hierbench.bayes.ConvergenceWarning")  # 150 draws of 2 agents
def test_reused_build_draws_what_a_fresh_build_draws_with_the_new_labels():
    d1, _ = simulate_eval(n_agents=2, n_tasks=10, n_runs=3, rng=3)
    d2, _ = simulate_eval(n_agents=2, n_tasks=10, n_runs=3, rng=4)
    d2 = d2.assign_coords(agent=["alpha", "beta"])
    kw = dict(draws=150, tune=150, chains=2, progress=False)
    clear_compiled()
    fit(build_beta_binomial(d1), rng=0, **kw)
    reused = fit(build_beta_binomial(d2), rng=5, **kw)
    clear_compiled()
    fresh = fit(build_beta_binomial(d2), rng=5, **kw)
    assert json.loads(reused.attrs["fit_run"])["compile"] == "reused"
    assert json.loads(fresh.attrs["fit_run"])["compile"] == "built"
    # how the build was made is said; the second build of a design in a process loads its
    # C entry points from the disk cache the first build (this test's or an earlier one's) stored
    assert "build" not in json.loads(reused.attrs["fit_run"])
    assert json.loads(fresh.attrs["fit_run"])["build"] == "hierbench's C entry points, loaded from the disk cache"
    assert list(reused.posterior["agent"].values) == ["alpha", "beta"]
    for name, var in fresh.posterior.data_vars.items():
        np.testing.assert_array_equal(reused.posterior[name].values, var.values, err_msg=name)


def _regression(x, y):
    with pm.Model() as m:
        xd, yd = pm.Data("x", np.asarray(x, dtype=float)), pm.Data("y", np.asarray(y, dtype=float))
        b = pm.Normal("b", 0.0, 1.0)
        pm.Normal("obs", b * xd, 1.0, observed=yd)
    return m


@pytest.mark.slow
def test_replicates_fit_the_same_whatever_build_of_the_design_is_stored():
    """A stored build holds another model's covariate: each replicate still gets its own model's."""
    x = np.linspace(-1.0, 1.0, 8)
    reps = [{"y": np.random.default_rng(s).normal(0.5 * x, 1.0)} for s in (1, 2)]
    kw = dict(draws=100, tune=100, chains=2, rng=9)
    clear_compiled()
    fresh = fit_replicates(_regression(x, reps[0]["y"]), reps, **kw)
    clear_compiled()
    fit(_regression(x[::-1] * 3.0, reps[0]["y"]), draws=100, tune=100, chains=2, rng=0, progress=False)
    reused = fit_replicates(_regression(x, reps[0]["y"]), reps, **kw)
    for a, b in zip(fresh, reused, strict=True):
        np.testing.assert_array_equal(b.posterior["b"].values, a.posterior["b"].values)
