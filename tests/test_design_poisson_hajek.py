"""A Poisson plan without a model: the Hajek mean and its Korn-Graubard interval.

The Horvitz-Thompson mean's t interval covered 0.81 of METR's agents' scores at 90% (20 tasks,
sizes 1-5; worst agent 0.59) because the number of tasks drawn is random. References: the
estimators written out here from their textbook formulas, statsmodels' Clopper-Pearson interval,
and a seeded simulation with its binomial tolerance stated.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from hierbench.design import assisted_mean
from hierbench.design import plan_subset
from hierbench.design._hajek import korn_graubard
from hierbench.design._hajek import poisson_hajek


def _logs(rates: np.ndarray, seed: int, runs: int = 1) -> xr.DataArray:
    """One agent per row of ``rates`` (agent x task), ``runs`` Bernoulli runs per task."""
    g = np.random.default_rng(seed)
    M, T = rates.shape
    y = (g.random((M, T, runs)) < rates[:, :, None]).astype(float)
    return xr.DataArray(y, dims=("agent", "task", "run"),
                        coords={"agent": [f"a{i}" for i in range(M)], "task": [f"t{i}" for i in range(T)]})  # fmt: skip


def test_korn_graubard_is_clopper_pearson_at_the_effective_size():
    # statsmodels' Clopper-Pearson ("beta") at x = p n_eff of n_eff, n_eff = p (1 - p) / se^2 shrunk by (z / t_{n-1})^2
    p, se, n, prob = 0.3, 0.08, 40, 0.9
    n_eff = p * (1 - p) / se**2 * (stats.norm.ppf(0.95) / stats.t.ppf(0.95, n - 1)) ** 2
    np.testing.assert_allclose(korn_graubard(p, se, n, prob), proportion_confint(p * n_eff, n_eff, 0.1, "beta"),
                               rtol=1e-10)  # fmt: skip
    # capped at the n drawn where the design variance is small (rates averaged over runs), or at n_max
    n_cap = n * (stats.norm.ppf(0.95) / stats.t.ppf(0.95, n - 1)) ** 2
    np.testing.assert_allclose(korn_graubard(p, 0.01, n, prob), proportion_confint(p * n_cap, n_cap, 0.1, "beta"))
    np.testing.assert_allclose(korn_graubard(p, 0.01, n, prob, n_max=25.0),
                               proportion_confint(p * 25 * n_cap / n, 25 * n_cap / n, 0.1, "beta"))  # fmt: skip
    # no success drawn: [0, 1 - (alpha / 2)^(1 / n_eff)], never a point
    assert korn_graubard(0.0, 0.0, n, prob) == pytest.approx((0.0, 1 - 0.05 ** (1 / n_cap)))


def test_estimate_interval_and_unbiased_estimate_are_hajek_korn_graubard_and_horvitz_thompson():
    T = 60
    rates = np.linspace(0.05, 0.9, T)[None, :]
    logs = _logs(rates, seed=1, runs=4)
    size = 1 + np.arange(T) % 5
    plan = plan_subset(logs["task"].values, 15, design="poisson", size=size, rng=4)
    res = assisted_mean(plan, logs, prob=0.9, n_runs=4)
    drawn = [int(t[1:]) for t in plan.order.values.astype(str)]
    y = logs.mean("run").values[0, drawn]
    pi = plan.inclusion.values[drawn]
    hajek = (y / pi).sum() / (1 / pi).sum()
    se = np.sqrt(((1 - pi) / pi**2 * (y - hajek) ** 2).sum()) / T  # Sarndal et al. 1992, (5.7.x), N known
    assert float(res.estimate[0]) == pytest.approx(hajek)
    assert float(res.unbiased_estimate[0]) == pytest.approx((y / pi).sum() / T)  # Horvitz-Thompson
    assert float(res.se[0]) == pytest.approx(se)
    kish = (1 / pi).sum() ** 2 / (1 / pi**2).sum()  # Kish's effective size of the weights drawn
    assert kish < len(drawn)
    np.testing.assert_allclose(res.ci.values[0], korn_graubard(hajek, se, len(drawn), 0.9, n_max=kish))
    assert res.ci.attrs["ci_kind"] == "korn-graubard" and res.estimator == "Hajek"
    assert "Hajek mean" in res.ci.attrs["ci_detail"] and "no finite-sample guarantee" in res.ci.attrs["ci_detail"]
    assert "Hajek estimate" in repr(res) and "clipped" not in repr(res)
    # a census is its own mean
    census = plan_subset(logs["task"].values, T, design="poisson", size=np.ones(T), rng=0)
    full = assisted_mean(census, logs, prob=0.9, n_runs=4)
    m = float(logs.mean("run").mean("task")[0])
    np.testing.assert_allclose([float(full.estimate[0]), *full.ci.values[0]], [m, m, m])


def test_poisson_plans_keep_their_level_where_the_horvitz_thompson_t_did_not():
    """Seeded simulation: 300 Poisson plans of about 20 of 80 one-run tasks (sizes 1-5), 90%.

    Three agents (task rates around 0.07, 0.3 and 0.6). Each agent's interval (``poisson_hajek``,
    which the test above shows is what ``assisted_mean`` returns) must cover its realised mean in
    at least 0.90 - 3 binomial sds of 300 (0.848) of the plans. The old interval (the
    Horvitz-Thompson mean +- t_{n-1} se, computed here) must fall below that for the weak agent:
    the defect this guards against.
    """
    T, n_plan = 80, 300
    g = np.random.default_rng(11)
    rates = np.clip(np.array([0.07, 0.3, 0.6])[:, None] + g.normal(0, 0.15, (3, T)), 0.01, 0.99)
    logs = _logs(rates, seed=12)
    truth = logs.mean(("task", "run")).values
    size = 1 + np.arange(T) % 5
    hits, ht_hits = np.zeros(3), np.zeros(3)
    for _ in range(n_plan):
        plan = plan_subset(logs["task"].values, 20, design="poisson", size=size, rng=g)
        drawn = [int(t[1:]) for t in plan.order.values.astype(str)]
        y, pi = logs.values[:, drawn, 0], plan.inclusion.values[drawn]
        tab = np.zeros((len(drawn), 8))
        tab[:, 2] = pi
        for a in range(3):
            tab[:, 5] = y[a]
            lo, hi = poisson_hajek(tab, T, 0.9)[2:]
            hits[a] += lo <= truth[a] + 1e-12 and truth[a] - 1e-12 <= hi
        ht, se = (y / pi).sum(1) / T, np.sqrt(((1 - pi) / pi**2 * y**2).sum(1)) / T
        half = stats.t.ppf(0.95, len(drawn) - 1) * se
        ht_hits += (ht - half <= truth + 1e-12) & (truth - 1e-12 <= ht + half)
    floor = 0.9 - 3 * np.sqrt(0.09 / n_plan)
    assert (hits / n_plan >= floor).all(), hits / n_plan
    assert ht_hits[0] / n_plan < floor, ht_hits / n_plan


@pytest.mark.slow  # 200 plans through assisted_mean: about 3 s
def test_the_bracket_guards_draws_that_miss_where_the_weight_lies():
    """Seeded simulation (audit D1): 200 Poisson plans of about 30 of 300 tasks, sizes 1-5, 90%.

    The agent's 50 successes all lie on size-1 tasks, the least likely to be drawn: the estimate
    is 0 in many plans, where the Korn-Graubard interval alone (``poisson_hajek``) is too short
    (0.805 here). Through ``assisted_mean`` (the distribution-free bracket guarding draws whose
    rates hardly vary) the coverage must reach 0.90 - 3 binomial sds of 200 (0.836); the interval
    alone must fall below it: the defect guarded against.
    """
    T, n_plan = 300, 200
    size = 1.0 + np.arange(T) % 5
    y = np.zeros(T)
    y[np.flatnonzero(size == 1)[:50]] = 1.0
    truth = y.mean()
    logs = xr.DataArray(y[None, :, None], dims=("agent", "task", "run"),
                        coords={"agent": ["a"], "task": [f"t{i}" for i in range(T)]})  # fmt: skip
    g = np.random.default_rng(5)
    hits = alone = 0
    for _ in range(n_plan):
        plan = plan_subset(logs["task"].values, 30, design="poisson", size=size, rng=g)
        lo, hi = assisted_mean(plan, logs, prob=0.9).ci.values[0]
        hits += lo <= truth <= hi
        drawn = [int(t[1:]) for t in plan.order.values.astype(str)]
        tab = np.zeros((len(drawn), 8))
        tab[:, 2], tab[:, 5] = plan.inclusion.values[drawn], y[drawn]
        lo, hi = poisson_hajek(tab, T, 0.9)[2:]
        alone += lo <= truth <= hi
    floor = 0.9 - 3 * np.sqrt(0.09 / n_plan)
    assert hits / n_plan >= floor > alone / n_plan, (hits, alone)
