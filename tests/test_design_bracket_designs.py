"""Stratified and Poisson plans keep their level where the design-based t interval degenerates.

Before, a stratified or Poisson plan without a model printed ``0 [0, 0]`` for a weak agent whose
drawn tasks all failed (METR's 9 x 75 complete part, gpt-3.5-turbo-instruct, 20 tasks: coverage
0.66 stratified, 0.59 Poisson at 90%). The references are scipy's hypergeometric and binomial laws
and seeded simulations with their binomial tolerance stated.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench._base import ZeroWidthIntervalWarning
from hierbench.design import assisted_mean
from hierbench.design import plan_subset
from hierbench.design._bracket import poisson_bracket
from hierbench.design._bracket import stratified_bracket
from hierbench.freq import prequential_z


def _hyper_hi(s: int, n: int, T: int, tail: float) -> int:
    """Largest population count H with P(S <= s) > tail, S hypergeometric (T, H, n) (scipy)."""
    H = np.arange(T + 1)
    return int(H[stats.hypergeom.cdf(s, T, H, n) > tail].max())


def _binom_hi(d: int, p: float, cap: int, tail: float) -> int:
    """Largest count D in [d, d + cap] with P(Binomial(D, p) <= d) > tail (scipy)."""
    D = np.arange(d, d + cap + 1)
    return int(D[stats.binom.cdf(d, D, p) > tail].max())


def test_stratified_bracket_is_the_union_bound_of_hypergeometric_brackets():
    # two strata of 20 tasks, 4 drawn from each, all 0: each stratum's count of tasks with any
    # success is bounded at error 0.10 / (2 * 2) per tail
    T, tasks = 40, [f"t{i}" for i in range(40)]
    y = xr.DataArray(np.zeros((1, T)), dims=("agent", "task"), coords={"agent": ["a"], "task": tasks})
    plan = plan_subset(tasks, 8, design="stratified", strata=np.arange(T) % 2, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroWidthIntervalWarning)
        res = assisted_mean(plan, y, prob=0.9)
    want = 2 * _hyper_hi(0, 4, 20, 0.025) / T
    np.testing.assert_allclose(res.ci.values, [[0.0, want]])
    assert res.ci.attrs["ci_kind"] == "conservative" and list(res.guard.values) == ["bracket"]
    assert "union bound over the strata" in res.ci.attrs["ci_detail"]
    # rates: a stratum drawn whole is known and spends no error; the other gets all of it
    v = np.array([0.5, 0.0, 1.0, 0.25, 0.0, 0.0])
    drawn = np.array([0, 0, 0, 1, 1, 1])
    stratum = np.r_[np.zeros(3, int), np.ones(30, int)]
    lo1 = (0.25 + 30 - _hyper_hi(3, 3, 30, 0.05) - 0) / 30
    hi1 = (0.25 + _hyper_hi(1, 3, 30, 0.05) - 1) / 30
    np.testing.assert_allclose(stratified_bracket(v, drawn, stratum, 0.9),
                               ((1.5 + 30 * lo1) / 33, (1.5 + 30 * hi1) / 33))


def test_poisson_bracket_by_scipy():
    incl = np.r_[1.0, np.linspace(0.1, 0.5, 19)]  # task 0 always drawn
    v, drawn_incl = np.array([1.0, 0.0, 0.5, 0.0]), incl[[0, 3, 7, 12]]
    left = 19 - 3
    up = _binom_hi(1, 0.1, left, 0.05) - 1
    ones = left - (_binom_hi(3, 0.1, left, 0.05) - 3)
    np.testing.assert_allclose(poisson_bracket(v, drawn_incl, incl, 0.9), ((1.5 + max(ones, 0)) / 20, (1.5 + up) / 20))


def _weak_logs(T: int) -> xr.DataArray:
    """One METR-like weak agent: 3 of ``T`` tasks with a success in 8 runs, every other task 0."""
    k = np.zeros(T, int)
    k[[5, 30, 61]] = [1, 2, 2]
    y = (np.arange(8) < k[:, None]).astype(float)[None]
    return xr.DataArray(y, dims=("agent", "task", "run"),
                        coords={"agent": ["weak"], "task": [f"t{i:02d}" for i in range(T)]})


@pytest.mark.slow  # 240 plans end to end (about 5 s): the guarantee is over plans
def test_stratified_and_poisson_plans_cover_a_weak_agent():
    """Seeded simulation, 120 plans per design, 20 of 76 tasks, 90%.

    The all-0 draws (about 0.4 of stratified plans, 0.6 of Poisson) were points before. The
    intervals (stratified: guarded by the bracket; Poisson: the Hajek mean's Korn-Graubard interval,
    tests/test_design_poisson_hajek.py) must cover at least 0.90 - 3 binomial sds of 120 (0.82), and
    be a point nowhere.
    """
    T, n_plan = 76, 120
    logs = _weak_logs(T)
    truth = float(logs.mean(("task", "run")).item())
    tasks = logs["task"].values
    g = np.random.default_rng(3)
    for design, kw in (("stratified", {"strata": np.arange(T) % 4}), ("poisson", {"size": 1 + np.arange(T) % 5})):
        hits, points = 0, 0
        with warnings.catch_warnings():
            warnings.simplefilter("error", ZeroWidthIntervalWarning)
            for _ in range(n_plan):
                lo, hi = assisted_mean(plan_subset(tasks, 20, design=design, rng=g, **kw), logs, prob=0.9,
                                       n_runs=8).ci.values[0]
                hits += lo - 1e-12 <= truth <= hi + 1e-12
                points += lo == hi
        assert points == 0 and hits / n_plan >= 0.9 - 3 * np.sqrt(0.09 / n_plan), (design, hits)


def test_prequential_z_with_sure_predictions():
    # predictions of 0: a failure is no surprise (z ~ 0), a success is the largest one (p 0); the
    # skewness term's (sum Var)^(3/2) underflows and the p-value is Phi(z) (it divided by 0 before)
    sure = np.array([[0.0, -1e-300 * np.log(1e-300), 1e-300 * np.log(1e-300) ** 2, 0.0]] * 3)
    z, p = prequential_z(sure)
    assert abs(z) < 1e-100 and abs(p - 0.5) < 1e-12
    surprised = sure.copy()
    surprised[0, 0] = np.log(1e-300)
    z, p = prequential_z(surprised)
    assert z < -1e100 and p == 0.0
