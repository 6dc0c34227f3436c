"""Cost and latency: order-statistic quantile intervals (exact coverage, simulation), means, Pareto frontier."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench._base import HierbenchWarning
from hierbench.data import load_swebench_bash_only
from hierbench.freq import UnboundedQuantileWarning
from hierbench.freq import bootstrap_ci
from hierbench.freq import mean_ci
from hierbench.freq import order_statistic_interval
from hierbench.freq import pareto_frontier
from hierbench.freq import quantile_ci


def test_order_statistic_ranks_textbook_and_enumeration():
    # the median of 100 values: the 95% interval is X_(40) to X_(61) (standard table)
    assert order_statistic_interval(100, 0.5)[:2] == (40, 61)
    # exact coverage by enumerating the binomial, for a grid of n and q
    for n in (5, 20, 59, 200):
        for q in (0.5, 0.9, 0.95):
            lo, hi, cov = order_statistic_interval(n, q, 0.95)
            pmf = stats.binom.pmf(np.arange(n + 1), n, q)
            assert cov == pytest.approx(pmf[lo:hi].sum())
            if lo >= 1 and hi <= n:
                assert cov >= 0.95
                # each tail at most 2.5%
                assert pmf[:lo].sum() <= 0.025 + 1e-12 and pmf[hi:].sum() <= 0.025 + 1e-12
    # a finite upper bound for p95 in a 95% equal-tailed interval needs 0.95^n <= 0.025: n >= 72
    assert order_statistic_interval(71, 0.95)[1] == 72
    assert order_statistic_interval(72, 0.95)[1] <= 72


def test_order_statistic_interval_reaches_its_exact_coverage_in_simulation():
    rng = np.random.default_rng(11)
    reps, n = 4000, 40
    x = np.sort(rng.lognormal(0.0, 1.0, size=(reps, n)), axis=1)  # skewed, like latency
    for q in (0.5, 0.9):
        lo, hi, cov = order_statistic_interval(n, q, 0.95)
        true_q = stats.lognorm(s=1.0).ppf(q)
        lower = x[:, lo - 1]
        upper = x[:, hi - 1] if hi <= n else np.inf
        hits = int(((lower <= true_q) & (true_q <= upper)).sum())
        res = stats.binomtest(hits, reps).proportion_ci(0.99, method="wilson")
        assert res.low <= cov <= res.high, (q, hits / reps, cov)
        assert cov >= 0.95


def _latency_ds(rng, n_tasks=80, n_runs=1):
    lat = rng.lognormal(0.0, 1.0, size=(2, n_tasks, n_runs))
    return xr.Dataset(
        {
            "latency": (("agent", "task", "run"), lat),
            "score": (("agent", "task", "run"), (lat < 1).astype(float)),
        },
        coords={"agent": ["a", "b"], "task": [f"t{i}" for i in range(n_tasks)]},
    )


def test_quantile_ci_matches_order_statistics_and_numpy():
    ds = _latency_ds(np.random.default_rng(0))
    r = quantile_ci(ds, q=(0.5, 0.95), var="latency")
    v = np.sort(ds.latency.sel(agent="a").values.ravel())
    assert float(r.estimate.sel(agent="a", quantile=0.5)) == pytest.approx(np.quantile(v, 0.5))
    lo, hi, cov = order_statistic_interval(v.size, 0.95)
    assert r.ci.sel(agent="a", quantile=0.95).values.tolist() == [v[lo - 1], v[hi - 1]]
    assert float(r.coverage.sel(agent="a", quantile=0.95)) == pytest.approx(cov)
    assert r.ci.attrs["ci_kind"] == "order-statistic"


def test_small_samples_give_infinite_bounds_with_a_named_warning():
    ds = _latency_ds(np.random.default_rng(1), n_tasks=20)
    with pytest.warns(UnboundedQuantileWarning, match="tail needs n >= 72 values"):
        r = quantile_ci(ds, q=0.95)
    assert np.isinf(r.ci.sel(ci_bound="upper")).all()


def test_several_runs_per_task_warn_and_bootstrap_resamples_tasks():
    ds = _latency_ds(np.random.default_rng(2), n_tasks=60, n_runs=3)
    with pytest.warns(HierbenchWarning, match="not independent"):
        quantile_ci(ds, q=0.5)
    b = quantile_ci(ds, q=0.5, method="bootstrap", n_resamples=400, rng=0)
    assert b.ci.attrs["ci_kind"] == "percentile"
    assert bool((b.ci.sel(ci_bound="lower") <= b.estimate).all())


def test_mean_ci_is_the_task_bootstrap():
    ds = _latency_ds(np.random.default_rng(3), n_runs=2)
    a = mean_ci(ds, var="latency", n_resamples=300, rng=5)
    b = bootstrap_ci(ds["latency"], "mean", n_resamples=300, rng=5)
    np.testing.assert_allclose(a.ci.values, b.ci.values)


def _brute_frontier(acc, cost):
    out = []
    for i in range(len(acc)):
        dom = any(
            acc[j] >= acc[i] and cost[j] <= cost[i] and (acc[j] > acc[i] or cost[j] < cost[i])
            for j in range(len(acc))
            if j != i
        )
        out.append(not dom)
    return out


def test_pareto_on_swebench_bash_only(shared_data):
    ds = load_swebench_bash_only(shared_data)
    r = pareto_frontier(ds, n_resamples=300, rng=0)
    acc = ds.score.mean(("task", "run")).values
    cost = ds.cost.mean(("task", "run")).values
    np.testing.assert_allclose(r.accuracy.values, acc)
    np.testing.assert_allclose(r.cost.values, cost)
    assert r.on_frontier.values.tolist() == _brute_frontier(acc, cost)
    # resampling: the observed frontier agents are usually on it, dominated ones rarely
    assert float(r.estimate.where(r.on_frontier).min()) > 0.2
    assert float(r.estimate.where(~r.on_frontier).max()) < 0.8
    # the membership of the cheapest-by-far and the most accurate agent are near 1
    best = int(np.argmax(acc))
    assert float(r.estimate[best]) > 0.3
    assert (
        r.accuracy_ci.attrs["ci_kind"] == "percentile"
        and "cluster" in r.accuracy_ci.attrs["ci_detail"]
    )


def test_pareto_membership_by_enumeration_on_a_toy():
    # two tasks, two agents: four equally likely task resamples (t1 t1, t1 t2, t2 t1, t2 t2)
    s = np.array([[1.0, 0.0], [0.0, 1.0]])[..., None]
    c = np.array([[1.0, 1.0], [2.0, 0.5]])[..., None]
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), s), "cost": (("agent", "task", "run"), c)},
        coords={"agent": ["x", "y"]},
    )
    r = pareto_frontier(ds, n_resamples=20_000, rng=0)
    # x: acc (1, .5, .5, 0), cost 1; y: acc (0, .5, .5, 1), cost (2, 1.25, 1.25, .5)
    # resample t1t1: x dominates y; mixed: x (acc .5, cost 1) vs y (.5, 1.25): x dominates;
    # t2t2: y dominates -> P(x on) = 3/4, P(y on) = 1/4
    np.testing.assert_allclose(r.estimate.values, [0.75, 0.25], atol=0.015)


def test_bad_input_messages():
    ds = _latency_ds(np.random.default_rng(4))
    with pytest.raises(ValueError, match="`var` must name a variable"):
        quantile_ci(ds, var="tokens")
    with pytest.raises(ValueError, match="`q` must be levels"):
        quantile_ci(ds, q=1.5)
    with pytest.raises(ValueError, match="`cost` must name a variable"):
        pareto_frontier(ds)
