"""The beta-binomial grid posterior for the cohort mean, validated against a PyMC fit."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hierbench.design import budget_interval
from hierbench.design import cohort_posterior
from hierbench.design import plan_joint


def _partial_bank(seed: int = 0, M: int = 30, L: int = 4, t: int = 12):
    gen = np.random.default_rng(seed)
    p = gen.beta(2.0, 3.0, M)
    full = (gen.random((M, L)) < p[:, None]).astype(float)
    plan = plan_joint(M, L, M + t, rng=gen)
    labels = xr.DataArray(np.where(plan.slots.values, full, np.nan), dims=("task", "run"))
    return full, plan, labels


@pytest.mark.slow
def test_grid_posterior_matches_pymc():
    import pymc as pm  # only here: hierbench.design never imports PyMC
    full, _plan, labels = _partial_bank()
    M, L = full.shape
    n = labels.notnull().sum("run").values
    k = labels.fillna(0).sum("run").values.astype(int)

    grid = cohort_posterior(labels, prob=0.9)

    with pm.Model(coords={"task": np.arange(M)}):
        mu = pm.Beta("mu", 1.0, 1.0)
        u = pm.Uniform("u", 0.0, 1.0)  # kappa / (1 + kappa): the same prior as the grid
        kappa = pm.Deterministic("kappa", u / (1 - u))
        p = pm.Beta("p", mu * kappa, (1 - mu) * kappa, dims="task")
        pm.Binomial("y", n=n, p=p, observed=k, dims="task")
        idata = pm.sample(
            draws=2000, tune=1000, chains=2, cores=1, random_seed=1, progressbar=False, compute_convergence_checks=False
        )
    pdraw = idata.posterior["p"].values.reshape(-1, M)
    gen = np.random.default_rng(2)
    unbought = gen.binomial(L - n, pdraw)  # posterior predictive of the labels not bought
    theta = (k.sum() + unbought.sum(1)) / (M * L)
    # Monte Carlo error: the draws are autocorrelated; 4000 draws, take an effective size of 800
    se = theta.std() / np.sqrt(800)
    assert abs(float(grid.mean) - theta.mean()) < 4 * se
    assert abs(float(grid.sd) / theta.std() - 1) < 0.1
    lo, hi = np.quantile(theta, [0.05, 0.95])
    np.testing.assert_allclose(grid.interval.values, [lo, hi], atol=0.01)
    assert grid.interval.attrs["ci_prob"] == 0.9


def test_posterior_keeps_bought_labels_and_bounds():
    full, plan, labels = _partial_bank(seed=3)
    res = cohort_posterior(labels)
    N = full.size
    P = np.nansum(labels.values)
    Z = labels.notnull().sum().item() - P
    lo, hi = res.interval.values
    assert P / N - 1e-12 <= lo <= hi <= 1 - Z / N + 1e-12
    assert int(res.n_labels) == plan.n_labels


def test_all_bought_posterior_is_the_point():
    y = np.random.default_rng(0).integers(0, 2, (15, 3)).astype(float)
    res = cohort_posterior(xr.DataArray(y, dims=("task", "run")))
    np.testing.assert_allclose(float(res.mean), y.mean(), atol=1e-9)
    np.testing.assert_allclose(res.interval.values, [y.mean(), y.mean()], atol=1e-9)


def test_posterior_extra_dims_and_design_interval_side_by_side():
    full, plan, labels = _partial_bank(seed=4)
    stacked = xr.concat([labels, labels], dim="agent")
    res = cohort_posterior(stacked)
    assert res.interval.dims == ("agent", "ci_bound")
    design = budget_interval(plan, xr.DataArray(full, dims=("task", "run")))
    both = xr.concat([design.interval, res.interval.isel(agent=0)], dim="method", coords="minimal", compat="override")
    assert both.dims == ("method", "ci_bound")


def test_posterior_errors():
    y = xr.DataArray(np.full((4, 3), 0.5), dims=("task", "run"))
    with pytest.raises(ValueError, match=r"`labels` must be 0, 1 or NaN \(not bought\); got values \[0.5\]"):
        cohort_posterior(y)
    with pytest.raises(ValueError, match=r"`prob` must satisfy 0 < prob < 1; got prob=0"):
        cohort_posterior(y * 0, prob=0)
    with pytest.raises(ValueError, match=r"`grid` must be two integers >= 2"):
        cohort_posterior(y * 0, grid=(1, 5))
    with pytest.raises(ValueError, match=r"dims 'task' and 'run'"):
        cohort_posterior(y.rename(task="item"))


def test_the_interval_says_it_is_model_based_and_when_it_rests_on_the_prior():
    # one label per task: the beta-binomial cannot tell task from run variation, so the interval
    # rests on the prior of kappa (measured on tau-bench: 0.850 coverage of a 95% interval); the
    # detail says so, and how many of the cohorts (extra dims) are in that case
    y = np.full((30, 4), np.nan)
    y[:, 0] = np.r_[np.ones(12), np.zeros(18)]
    one = cohort_posterior(xr.DataArray(y, dims=("task", "run")))
    assert repr(one).startswith("CohortPosteriorResult: model-based estimate (beta-binomial posterior; no "
                                "design-based guarantee")
    detail = one.ci.attrs["ci_detail"]
    assert "model-based" in detail and "in 1 of 1 cohort(s) no task has two labels" in detail
    y2 = y.copy()
    y2[:5, 1] = 1.0  # five tasks with a second label
    both = cohort_posterior(xr.DataArray(np.stack([y, y2]), dims=("cohort", "task", "run")))
    assert "in 1 of 2 cohort(s) no task has two labels" in both.ci.attrs["ci_detail"]
    audited = cohort_posterior(xr.DataArray(y2, dims=("task", "run")))
    assert "no task has two labels" not in audited.ci.attrs["ci_detail"]


@pytest.mark.parametrize(("n", "s"), [(10, 5), (10, 0), (25, 2), (50, 25)])
def test_single_run_interval_matches_the_closed_form_posterior(n, s):
    # with L = 1 kappa drops out: theta = (s + BetaBinomial(T - n, s + 1, n - s + 1)) / T exactly
    # under the uniform prior on mu (scipy.stats.betabinom); the grid keeps every point that carries
    # posterior mass, so only the grid's discretisation and the per-point normal remain (tolerance
    # 0.006 of theta, i.e. 3 tasks in 500; the old 150-point pruning was off by up to 0.07)
    from scipy.stats import betabinom

    T = 500
    y = np.full((T, 1), np.nan)
    y[:n, 0] = np.r_[np.ones(s), np.zeros(n - s)]
    res = cohort_posterior(xr.DataArray(y, dims=("task", "run")), prob=0.9)
    exact = betabinom(T - n, s + 1, n - s + 1)
    lo, hi = (s + exact.ppf([0.05, 0.95])) / T
    np.testing.assert_allclose(res.interval.values, [lo, hi], atol=0.006)
    np.testing.assert_allclose(float(res.mean), (s + exact.mean()) / T, atol=1e-3)


def test_repeated_task_labels_are_refused():
    y = xr.DataArray(np.array([[1.0, np.nan], [0.0, np.nan], [1.0, 1.0]]), dims=("task", "run"),
                     coords={"task": ["a", "a", "b"]})
    with pytest.raises(ValueError, match=r"`labels` coord 'task' must be unique .*repeated: \['a'\]"):
        cohort_posterior(y)
