"""compare: side-by-side tables and coverage studies.

Expected coverages come from the normal distribution (scipy.stats.norm): a
z-interval with known sigma covers with probability 2 Phi(z) - 1 exactly.
"""

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench.compare import MixedLevelError
from hierbench.compare import coverage_study
from hierbench.compare import side_by_side
from hierbench.compare import to_frame


def _interval(lo, hi, prob, kind, dims=("agent",), coords=None):
    lo, hi = np.atleast_1d(lo), np.atleast_1d(hi)
    da = xr.DataArray(
        np.stack([lo, hi], axis=-1),
        dims=(*dims, "ci_bound"),
        coords={**(coords or {}), "ci_bound": ["lower", "upper"]},
        attrs={"ci_prob": prob, "ci_kind": kind},
    )
    return da


def test_side_by_side_stacks_methods_and_scores_truth():
    coords = {"agent": ["a", "b"]}
    est = xr.DataArray([0.5, 0.7], dims="agent", coords=coords)
    r1 = xr.Dataset(
        {"estimate": est, "interval": _interval([0.4, 0.6], [0.6, 0.8], 0.9, "wald", coords=coords)}
    )
    r2 = _interval([0.45, 0.75], [0.55, 0.85], 0.9, "t", coords=coords)
    truth = xr.DataArray([0.58, 0.72], dims="agent", coords=coords)
    t = side_by_side({"m1": r1, "m2": r2}, truth=truth)
    assert list(t.estimator.values) == ["m1", "m2"]
    assert t["ci"].dims[-1] == "ci_bound"
    np.testing.assert_allclose(t["width"].sel(estimator="m1"), [0.2, 0.2])
    assert t["covers"].sel(estimator="m1").values.tolist() == [True, True]
    assert t["covers"].sel(estimator="m2").values.tolist() == [False, False]
    assert np.isnan(t["estimate"].sel(estimator="m2")).all()
    df = to_frame(t)
    assert set(df["ci_kind"]) == {"wald", "t"} and len(df) == 4


def test_frequentist_result_objects_plug_in():
    from hierbench.freq import bootstrap_ci
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=2, n_tasks=30, n_runs=2, rng=3)
    res = bootstrap_ci(ds, n_resamples=199, rng=4)
    t = side_by_side({"boot": res})
    np.testing.assert_array_equal(t["ci"].sel(estimator="boot"), res.ci)
    assert t["ci_kind"].item() == res.ci.attrs["ci_kind"]


def test_side_by_side_refuses_mixed_levels_and_bare_intervals():
    a = _interval([0.1], [0.2], 0.9, "normal")
    b = _interval([0.1], [0.2], 0.95, "normal")
    with pytest.raises(MixedLevelError, match=r"mix interval levels .*allow_mixed_prob=True"):
        side_by_side({"a": a, "b": b})
    assert side_by_side({"a": a, "b": b}, allow_mixed_prob=True).sizes["estimator"] == 2
    bare = a.copy()
    bare.attrs = {"ci_prob": 0.9}
    with pytest.raises(
        ValueError, match=r"must state its level and kind; attr 'ci_kind' is missing"
    ):
        side_by_side({"bare": bare})
    with pytest.raises(ValueError, match=r"must have a `ci_bound` dim"):
        side_by_side({"x": xr.DataArray([1.0, 2.0], dims="agent")})


@pytest.mark.slow
def test_coverage_study_matches_normal_theory():
    # X_1..X_n ~ N(theta, 1) with theta = 0.3, n = 25; z-interval with known sigma.
    from hierbench import spawn_generators

    n, theta, n_rep = 25, 0.3, 500

    def simulate(rng):
        x = rng.normal(theta, 1.0, n)
        return x, xr.DataArray(theta)

    def z_interval(z):
        def method(x, rng):
            m = x.mean()
            half = z / np.sqrt(n)
            iv = xr.DataArray(
                [m - half, m + half],
                dims="ci_bound",
                coords={"ci_bound": ["lower", "upper"]},
                attrs={"ci_prob": 0.95, "ci_kind": "normal"},
            )
            return xr.Dataset({"estimate": xr.DataArray(m), "interval": iv})

        return method

    res = coverage_study(
        simulate,
        {"z1.96": z_interval(stats.norm.ppf(0.975)), "z1.00": z_interval(1.0)},
        n_rep=n_rep,
        rng=20261130,
    )
    # exactly what the replications hold (replication i's data are the i-th spawned stream's
    # first draws), counted by numpy: the study's shares, widths and bias are these, not
    # merely near them
    means = np.array([g.normal(theta, 1.0, n).mean() for g in spawn_generators(20261130, n_rep)])
    z = {"z1.96": stats.norm.ppf(0.975), "z1.00": 1.0}
    expected = {"z1.96": 0.95, "z1.00": 2 * stats.norm.cdf(1.0) - 1}
    for m, p in expected.items():
        cov = float(res.coverage.sel(estimator=m))
        assert cov == np.mean(np.abs(means - theta) <= z[m] / np.sqrt(n)), m
        # and near normal theory. Monte Carlo tolerance: 4 binomial standard errors of a share
        # over 500 replications (0.039 at 0.95, 0.083 at 0.683; the shares are 0.944 and
        # 0.706 here); a 95% interval as the tolerance would fail one seed in ten over the two
        assert abs(cov - p) <= 4 * np.sqrt(p * (1 - p) / n_rep), (m, cov, p)
        lo, hi = res.coverage_interval.sel(estimator=m).values
        assert lo < cov < hi
        np.testing.assert_allclose(
            res.mean_width.sel(estimator=m), 2 * float(m[1:]) / np.sqrt(n), rtol=1e-2
        )
    np.testing.assert_allclose(float(res.bias.sel(estimator="z1.96")), means.mean() - theta, rtol=1e-9)
    # bias of the sample mean: sd 1/sqrt(n * n_rep) = 0.0089 (0.0087 here); 4 sd tolerance
    assert abs(float(res.bias.sel(estimator="z1.96"))) < 4 / np.sqrt(n * n_rep)
    assert res.to_dataset().attrs["n_rep"] == n_rep
    with pytest.raises(ValueError, match=r"`n_rep` must be >= 1; got n_rep=0"):
        coverage_study(simulate, {}, n_rep=0)


def _simulate_normal(rng):
    return rng.normal(0.3, 1.0, 25), xr.DataArray(0.3)


def _z95(x, rng):
    m, h = x.mean(), stats.norm.ppf(0.975) / 5
    iv = xr.DataArray([m - h, m + h], dims="ci_bound", coords={"ci_bound": ["lower", "upper"]},
                      attrs={"ci_prob": 0.95, "ci_kind": "normal"})  # fmt: skip
    return xr.Dataset({"estimate": xr.DataArray(m), "interval": iv})


def _jittered(x, rng):
    # a method that draws from the stream after the data: the stream must be the replication's
    return _z95(x + rng.normal(0.0, 1e-3, x.size), rng)


@pytest.mark.slow
def test_coverage_study_is_bit_identical_on_a_process_pool():
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    methods = {"z": _z95, "jittered": _jittered}
    serial = coverage_study(_simulate_normal, methods, n_rep=40, rng=7, progress=False)
    # spawned workers (a forked child would inherit this process's threads)
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        pooled = coverage_study(_simulate_normal, methods, n_rep=40, rng=7, executor=pool, progress=False)
    xr.testing.assert_identical(serial.table, pooled.table)
    xr.testing.assert_identical(serial.to_dataset(), pooled.to_dataset())
    # replication i is the i-th spawned stream: its first draws are replication i's data
    from hierbench import spawn_generators

    first = [g.normal(0.3, 1.0, 25).mean() for g in spawn_generators(7, 40)]
    np.testing.assert_array_equal(serial.table["estimate"].sel(estimator="z").values, first)
    with pytest.raises(TypeError, match=r"concurrent\.futures\.Executor"):
        coverage_study(_simulate_normal, methods, n_rep=2, executor=object())
