"""loo_summary's intervals over the held-out agents keep their level with few agents (audit: 8 of 8
agents covered gave coverage_ci [1.0, 1.0] from a percentile bootstrap; Clopper-Pearson is about
[0.63, 1]). The study here is built by hand; the references are statsmodels' Wilson interval and
scipy's Student t interval.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from hierbench.design import loo_summary


def _study(covered: np.ndarray, err: np.ndarray) -> xr.Dataset:
    """A loo_study-shaped Dataset: (agent, selection, n_tasks, repeat), intervals 0.1 wide."""
    M, _, _, R = covered.shape
    dims = ("agent", "selection", "n_tasks", "repeat")
    lower = np.zeros(covered.shape)
    return xr.Dataset(
        {"abs_error": (dims, err), "covered": (dims, covered), "lower": (dims, lower), "upper": (dims, lower + 0.1)},
        coords={"agent": [f"m{i}" for i in range(M)], "selection": ["random", "adaptive"], "n_tasks": [5, 10],
                "repeat": np.arange(R)},
        attrs={"ci_prob": 0.9},
    )


def test_coverage_of_every_agent_gets_a_wilson_interval_not_a_point():
    g = np.random.default_rng(3)
    M = 8
    covered = np.ones((M, 2, 2, 1))
    covered[:3, 1, 1, 0] = 0.0  # adaptive at 10: 5 of 8 covered
    s = loo_summary(_study(covered, g.uniform(0, 0.1, covered.shape)))
    ci = s.coverage_ci
    assert ci.attrs["ci_kind"] == "wilson" and ci.attrs["ci_prob"] == 0.95
    assert float(s.coverage.sel(selection="random", n_tasks=5)) == 1.0
    np.testing.assert_allclose(
        ci.sel(selection="random", n_tasks=5).values, proportion_confint(8, 8, alpha=0.05, method="wilson"),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        ci.sel(selection="adaptive", n_tasks=10).values, proportion_confint(5, 8, alpha=0.05, method="wilson"),
        rtol=1e-12,
    )
    # the level is the summary's own
    s90 = loo_summary(_study(covered, g.uniform(0, 0.1, covered.shape)), prob=0.9)
    np.testing.assert_allclose(
        s90.coverage_ci.sel(selection="random", n_tasks=5).values,
        proportion_confint(8, 8, alpha=0.10, method="wilson"), rtol=1e-12,
    )


def test_repeats_count_as_shares_and_the_half_gap_is_a_t_interval_over_agents():
    g = np.random.default_rng(4)
    M, R = 6, 4
    covered = (g.random((M, 2, 2, R)) < 0.8).astype(float)
    covered[0, 0, 0, 0] = np.nan  # one interval missing: the agent's coverage is the mean of its 3
    err = g.uniform(0, 0.1, (M, 2, 2, R))
    s = loo_summary(_study(covered, err))
    per_agent = np.nanmean(covered[:, 0, 0], axis=1)  # random, n = 5
    np.testing.assert_allclose(
        s.coverage_ci.sel(selection="random", n_tasks=5).values,
        proportion_confint(per_agent.sum(), M, alpha=0.05, method="wilson"), rtol=1e-12,
    )
    # adaptive at 5 against random at 10, per agent (repeats averaged), then a t interval over the 6
    e = err.mean(3)
    d = e[:, 1, 0] - e[:, 0, 1]
    ref = stats.t.interval(0.95, M - 1, loc=d.mean(), scale=stats.sem(d))
    got = s.half_gap_ci.sel(selection="random", n_tasks=5)
    assert got.attrs["ci_kind"] == "t"
    np.testing.assert_allclose(got.values, ref, rtol=1e-10)
    assert s.half_gap_ci.sel(n_tasks=10).isnull().all()  # 20 was not run


def test_n_boot_and_rng_no_longer_resample_and_say_so():
    g = np.random.default_rng(5)
    covered = np.ones((3, 2, 2, 1))
    study = _study(covered, g.uniform(0, 0.1, covered.shape))
    with pytest.warns(DeprecationWarning, match=r"`n_boot` and `rng` of loo_summary\(\) no longer do anything"):
        old = loo_summary(study, n_boot=500, rng=0)
    xr.testing.assert_identical(old, loo_summary(study))


def test_every_selection_is_set_against_the_plain_mean_of_a_random_subset():
    # the baseline every model-based selection must beat: each selection's MAE minus the plain
    # mean's at the same size, per agent (repeats averaged), with a Student t interval over the
    # agents (scipy), and the ratio of the two MAEs
    g = np.random.default_rng(7)
    M, R = 5, 3
    covered = np.ones((M, 3, 2, R))
    err = g.uniform(0, 0.1, (M, 3, 2, R))
    dims = ("agent", "selection", "n_tasks", "repeat")
    study = xr.Dataset(
        {"abs_error": (dims, err), "covered": (dims, covered), "lower": (dims, np.zeros(err.shape)),
         "upper": (dims, np.full(err.shape, 0.1))},
        coords={"agent": [f"m{i}" for i in range(M)], "selection": ["random_mean", "random", "assisted_adaptive"],
                "n_tasks": [5, 10], "repeat": np.arange(R)},
        attrs={"ci_prob": 0.9},
    )
    s = loo_summary(study)
    e = err.mean(3)
    for j, sel in enumerate(["random", "assisted_adaptive"], start=1):
        for k, n in enumerate([5, 10]):
            d = e[:, j, k] - e[:, 0, k]
            ref = stats.t.interval(0.95, M - 1, loc=d.mean(), scale=stats.sem(d))
            np.testing.assert_allclose(s.baseline_gap_ci.sel(selection=sel, n_tasks=n).values, ref, rtol=1e-10)
            np.testing.assert_allclose(float(s.baseline_gap.sel(selection=sel, n_tasks=n)), d.mean(), rtol=1e-12)
            np.testing.assert_allclose(float(s.baseline_ratio.sel(selection=sel, n_tasks=n)),
                                       e[:, j, k].mean() / e[:, 0, k].mean(), rtol=1e-12)
    np.testing.assert_allclose(s.baseline_gap.sel(selection="random_mean").values, 0.0)
    # without the baseline in the study there is nothing to set against it
    assert "baseline_gap" not in loo_summary(study.sel(selection=["random", "assisted_adaptive"]))
