"""Intervals and success rates: statsmodels, seed 003's printed numbers, simulation, errors."""

import numpy as np
import pytest
import statsmodels.api as sm
import xarray as xr
from _helpers import seed003_passages
from statsmodels.stats.proportion import proportion_confint

from hierbench._base import HierbenchError
from hierbench._base import HierbenchWarning
from hierbench.freq._rates._intervals import EmptySampleWarning
from hierbench.freq._rates._intervals import clustered_se
from hierbench.freq._rates._intervals import design_effect
from hierbench.freq._rates._intervals import exact_interval
from hierbench.freq._rates._intervals import finite_population_se
from hierbench.freq._rates._intervals import pooled_binomial_interval
from hierbench.freq._rates._intervals import stratified_mean
from hierbench.freq._rates._intervals import success_rate
from hierbench.freq._rates._intervals import wald_interval
from hierbench.freq._rates._intervals import wilson_interval
from hierbench.testing import simulate_eval

S = np.array([0, 1, 3, 9, 10, 17, 49, 50, 312])
N = np.array([10, 10, 10, 10, 10, 40, 50, 50, 500])


@pytest.mark.parametrize("prob", [0.9, 0.95, 0.99])
def test_match_statsmodels(prob):
    for fn, method in ((wilson_interval, "wilson"), (exact_interval, "beta"), (wald_interval, "normal")):
        got = fn(S, N, prob=prob)
        lo, hi = proportion_confint(S, N, alpha=1 - prob, method=method)
        if method == "normal":  # statsmodels clips Wald to [0, 1]; ours does not
            got = got.clip(0, 1)
        np.testing.assert_allclose(got.sel(ci_bound="lower").values, lo, atol=1e-10)
        np.testing.assert_allclose(got.sel(ci_bound="upper").values, hi, atol=1e-10)
        assert got.dims[-1] == "ci_bound" and got.attrs["ci_prob"] == prob


def test_wilson_ends_are_exact_at_zero_and_all_successes():
    # at s = 0 the Wilson lower bound is 0 exactly (centre and half-width are equal: z^2 / 2n
    # over 1 + z^2 / n), at s = n the upper 1; the formula left rounding (4.3e-19 printed in
    # prob_superiority's repr as the lower bound of a 0; statsmodels gives 2.8e-17 here)
    got = wilson_interval(np.array([0, 7, 0]), np.array([7, 7, 40]), prob=0.95)
    lo, hi = proportion_confint(np.array([0, 7, 0]), np.array([7, 7, 40]), alpha=0.05, method="wilson")
    assert got.sel(ci_bound="lower").values[[0, 2]].tolist() == [0.0, 0.0]
    assert got.sel(ci_bound="upper").values[1] == 1.0
    np.testing.assert_allclose(got.sel(ci_bound="lower").values, lo, atol=1e-12)
    np.testing.assert_allclose(got.sel(ci_bound="upper").values, hi, atol=1e-12)


def test_seed003_printed_intervals():
    pct = lambda da: [f"{100 * x:.1f}" for x in da.values]  # noqa: E731
    assert pct(wald_interval(312, 500)) == ["58.2", "66.6"]
    assert pct(wilson_interval(312, 500)) == ["58.1", "66.5"]
    assert pct(wilson_interval(9, 10)) == ["59.6", "98.2"]
    assert pct(wald_interval(9, 10)) == ["71.4", "108.6"]
    assert pct(wilson_interval(10, 10)) == ["72.2", "100.0"]
    w = wald_interval(10, 10).values
    assert w[1] - w[0] == 0  # "100% +- 0"
    se = np.sqrt(0.624 * 0.376 / 500)
    assert f"{se:.4f}" == "0.0217"
    # toolkit output: [0.596, 0.982] and [0.581, 0.665]
    assert [round(float(x), 3) for x in wilson_interval(9, 10).values] == [0.596, 0.982]
    assert [round(float(x), 3) for x in wilson_interval(312, 500).values] == [0.581, 0.665]


def test_seed003_epochs_floor_and_design_effect():
    # "with 500 questions the 95% half-width near 62% is +-4.25 with one epoch, no less than +-2.45 with three"
    # p = 312/500 = 0.624 as in the worked example, same rate with three epochs
    one = xr.DataArray(np.r_[np.ones(312), np.zeros(188)][:, None], dims=("task", "run"))
    three = xr.DataArray(np.r_[np.ones(936), np.zeros(564)].reshape(500, 3), dims=("task", "run"))
    for y, printed in ((one, "4.25"), (three, "2.45")):
        r = pooled_binomial_interval(y)
        assert f"{100 * float(r.ci[1] - r.estimate):.2f}" == printed
    # "5 questions per passage and rho = 0.5: variance 3x larger, SE sqrt(3) = 1.73x"
    assert float(design_effect(5, 0.5)) == 3.0
    assert f"{np.sqrt(design_effect(5, 0.5)):.2f}" == "1.73"


def test_clustered_se_seed003_and_statsmodels():
    y, c = seed003_passages()
    # printed: naive SE 0.0223, clustered SE 0.0427 (Miller's formula, no small-sample factor)
    assert f"{float(clustered_se(y, c, small_sample=False)):.4f}" == "0.0427"
    assert f"{float(clustered_se(y, np.arange(len(y)), small_sample=True)):.4f}" == "0.0223"
    # with the CR1 factor: statsmodels' cluster-robust SE of an intercept-only OLS
    fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": c})
    assert float(clustered_se(y, c)) == pytest.approx(float(fit.bse[0]), rel=1e-10)


def test_clustered_se_keeps_tasks_without_a_label_apart():
    # two repos of 4 tasks and 6 tasks with no label: each unlabelled task is its own cluster,
    # exactly as if it carried a label of its own (statsmodels as the reference)
    y = np.array([1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 1, 0], float)
    labels = np.array(["r1"] * 4 + ["r2"] * 2 + [None, np.nan, "", None, np.nan, ""], dtype=object)
    distinct = np.array(["r1"] * 4 + ["r2"] * 2 + [f"own{i}" for i in range(6)])
    fit = sm.OLS(y, np.ones_like(y)).fit(
        cov_type="cluster", cov_kwds={"groups": np.unique(distinct, return_inverse=True)[1]}
    )
    with pytest.warns(HierbenchWarning, match="6 of 12 tasks have no '_cluster' label"):
        se = clustered_se(y, labels)
    assert float(se) == pytest.approx(float(fit.bse[0]), rel=1e-10)
    assert se.attrs == {"n_clusters": 8, "n_missing_labels": 6}
    pooled = sm.OLS(y, np.ones_like(y)).fit(
        cov_type="cluster", cov_kwds={"groups": np.r_[[0] * 4, [1] * 2, [2] * 6]}
    )
    assert abs(float(se) - float(pooled.bse[0])) > 0.01  # what merging them gave
    with pytest.raises(HierbenchError, match="6 tasks have no cluster label"):
        clustered_se(y, labels, missing="refuse")


def test_finite_population_se_by_simulation():
    N, n = 500, 100
    pop = np.r_[np.ones(300), np.zeros(200)]  # p = 0.6
    rng = np.random.default_rng(0)
    reps = 10_000
    idx = np.argsort(rng.random((reps, N)), axis=1)[:, :n]  # without replacement
    sd = pop[idx].mean(1).std()
    # MC relative sd of an SD estimate ~ 1/sqrt(2 reps) = 0.5%; tolerance 3%
    assert float(finite_population_se(0.6, n, N)) == pytest.approx(sd, rel=0.03)
    assert float(finite_population_se(0.6, 500, 500)) == 0.0


def test_stratified_mean_by_simulation():
    rng = np.random.default_rng(1)
    pop = {"easy": rng.random(400) < 0.85, "hard": rng.random(100) < 0.2}
    alloc = {"easy": 20, "hard": 20}
    reps = 5000
    ests, ses = [], []
    for h in pop:
        p = pop[h].astype(float)
        idx = np.argsort(rng.random((reps, len(p))), axis=1)[:, : alloc[h]]
        ests.append(p[idx])
    est_true = np.mean(np.r_[pop["easy"], pop["hard"]])
    sample = np.concatenate(ests, axis=1)
    labels = ["easy"] * 20 + ["hard"] * 20
    da = xr.DataArray(sample, dims=("rep", "task"))
    res = stratified_mean(da, labels, population_sizes={"easy": 400, "hard": 100})
    assert float(res.estimate.mean()) == pytest.approx(est_true, abs=0.003)  # unbiased
    ses = res.standard_error.values
    assert np.sqrt(np.mean(ses**2)) == pytest.approx(float(res.estimate.std()), rel=0.05)
    # without population sizes, one stratum = the plain mean and its CLT SE
    one = stratified_mean([1, 0, 1, 1], ["a"] * 4)
    assert float(one.estimate) == 0.75
    assert float(one.standard_error) == pytest.approx(np.std([1, 0, 1, 1], ddof=1) / 2)


def test_success_rate_micro_macro_error():
    ds, _ = simulate_eval(n_agents=3, n_tasks=40, n_runs=4, p_error=0.05, p_missing_run=0.1,
                          p_missing_task=0.05, n_clusters=8, sd_cluster=0.5, rng=2)
    tags = np.array(["billing"] * 30 + ["refund"] * 10)
    ds = ds.assign_coords(tag=("task", tags))
    res = success_rate(ds)
    df = ds[["score", "error"]].to_dataframe().reset_index().dropna(subset=["score"])
    cell = df.groupby(["agent", "task"]).score.mean().reset_index()
    cell["tag"] = cell.task.map(dict(zip(ds.task.values, tags, strict=True)))
    micro = cell.groupby("agent").score.mean()
    macro = cell.groupby(["agent", "tag"]).score.mean().groupby("agent").mean()
    np.testing.assert_allclose(res.micro.values, micro.values)
    np.testing.assert_allclose(res.macro.values, macro.values)
    err = df.groupby("agent").error.mean()
    np.testing.assert_allclose(res.error_rate.values, err.values)
    assert (res.n_runs.values == df.groupby("agent").size().values).all()
    assert res.ci.attrs["ci_kind"] == "t" and "CR2 (bias-reduced cluster-robust)" in res.ci.attrs["ci_detail"]
    strict = success_rate(ds.assign(score=ds.score * 0.5 + 0.5 * (ds.score == 1)), strict=True)
    np.testing.assert_allclose(strict.micro.values, micro.values)


def test_errors_and_empty():
    with pytest.raises(ValueError, match=r"`successes` must be in \[0, n\]; 1 values are not, e.g. \(successes, n\) \[\(11.0, 10.0\)\]"):
        wilson_interval(11, 10)
    with pytest.raises(ValueError, match=r"`successes` must be an integer in \[0, n\]"):
        exact_interval(2.5, 10)
    with pytest.raises(ValueError, match=r"`prob` must satisfy 0 < prob < 1; got prob=95"):
        wilson_interval(1, 10, prob=95)
    with pytest.raises(ValueError, match=r"`n` must satisfy 1 <= n <= population_size"):
        finite_population_se(0.5, 600, 500)
    with pytest.raises(ValueError, match=r"`rho` must lie in \[0, 1\]"):
        design_effect(3, 1.5)
    with pytest.raises(ValueError, match=r"`clusters` must have one label per 'task' \(3\)"):
        clustered_se([1, 0, 1], [0, 1])
    with pytest.raises(ValueError, match=r"`population_sizes` lacks strata present in the sample: \['b'\]"):
        stratified_mean([1, 0], ["a", "b"], population_sizes={"a": 10})
    with pytest.warns(EmptySampleWarning, match="n = 0"):
        out = wilson_interval([0, 3], [0, 5])
    assert np.isnan(out.values[0]).all() and np.isfinite(out.values[1]).all()
    with pytest.raises(ValueError, match=r"`run_dim` must be a dimension of the scores"):
        success_rate(xr.Dataset({"score": (("task", "epoch"), np.ones((2, 2)))}))
