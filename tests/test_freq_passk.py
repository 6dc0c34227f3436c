"""pass@k and pass^k: exact combinatorics, published numbers, properties, errors."""

from fractions import Fraction
from math import comb

import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from scipy import stats

from hierbench.data import load_tau_bench_airline
from hierbench.data import to_counts
from hierbench.freq import InsufficientRunsWarning
from hierbench.freq import pass_at_k
from hierbench.freq import pass_hat_k
from hierbench.testing import simulate_eval


def _counts(n, c):
    return xr.Dataset({"n_runs": ("task", np.asarray(n)), "n_success": ("task", np.asarray(c, float))})


GRID = [(n, c, k) for n in (1, 2, 5, 10, 37, 200, 1000, 10_000) for c in sorted({0, 1, n // 3, n - 1, n}) for k in sorted({1, 2, 3, n // 2, n}) if 1 <= k <= n and 0 <= c <= n]


@pytest.mark.parametrize(("n", "c", "k"), GRID)
def test_equals_exact_comb_ratio(n, c, k):
    hat = Fraction(comb(c, k), comb(n, k))
    at = 1 - Fraction(comb(n - c, k), comb(n, k))
    got_hat = float(pass_hat_k(_counts([n], [c]), k).per_task[0])
    got_at = float(pass_at_k(_counts([n], [c]), k).per_task[0])
    assert got_hat == pytest.approx(float(hat), rel=1e-11, abs=1e-300)
    assert got_at == pytest.approx(float(at), rel=1e-11, abs=1e-300)


@pytest.mark.parametrize(("n", "p", "k"), [(5, 0.3, 2), (10, 0.7, 3), (8, 0.5, 5)])
def test_unbiased_and_plugin_biased_by_enumeration(n, p, k):
    c = np.arange(n + 1)
    pmf = stats.binom.pmf(c, n, p)
    cnt = _counts(np.full(n + 1, n), c)
    hat = pass_hat_k(cnt, k).per_task.values
    at = pass_at_k(cnt, k).per_task.values
    assert pmf @ hat == pytest.approx(p**k, rel=1e-12)
    assert pmf @ at == pytest.approx(1 - (1 - p) ** k, rel=1e-12)
    # the plug-in is biased: upward for pass^k, downward for pass@k (Jensen)
    hat_pi = pass_hat_k(cnt, k, plugin=True).per_task.values
    at_pi = pass_at_k(cnt, k, plugin=True).per_task.values
    assert pmf @ hat_pi > p**k + 1e-3
    assert pmf @ at_pi < 1 - (1 - p) ** k - 1e-3


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 60), data=st.data())
def test_monotone_in_k_and_equal_mean_at_k1(n, data):
    c = data.draw(st.integers(0, n))
    cnt = _counts([n], [c])
    ks = list(range(1, n + 1))
    hat = pass_hat_k(cnt, ks).per_task.values[0]
    at = pass_at_k(cnt, ks).per_task.values[0]
    assert hat[0] == pytest.approx(c / n) and at[0] == pytest.approx(c / n)
    assert np.all(np.diff(hat) <= 1e-12)
    assert np.all(np.diff(at) >= -1e-12)


def test_seed003_worked_example():
    # seed 003: tasks (n, c) = (10,3), (10,10), (10,0), (10,7); printed to 3 digits
    cnt = _counts([10, 10, 10, 10], [3, 10, 0, 7])
    printed = {1: (0.500, 0.500), 3: (0.675, 0.325), 5: (0.729, 0.271)}
    at = pass_at_k(cnt, [1, 3, 5]).estimate
    hat = pass_hat_k(cnt, [1, 3, 5]).estimate
    for k, (a, h) in printed.items():
        assert f"{float(at.sel(k=k)):.3f}" == f"{a:.3f}"
        assert f"{float(hat.sel(k=k)):.3f}" == f"{h:.3f}"
    # "C(7,3)/C(10,3) = 35/120 = 0.292"
    assert f"{float(pass_hat_k(_counts([10], [7]), 3).estimate):.3f}" == "0.292"


def test_seed003_reliability_report():
    # seed 003 reliability example: ok per (task, run) for t1..t4 x 3 runs
    ok = np.array([[1, 1, 1], [1, 0, 1], [0, 0, 1], [0, 1, 0]], float)
    da = xr.DataArray(ok, dims=("task", "run"))
    assert f"{float(pass_hat_k(da, 1).estimate):.0%}" == "58%"
    assert f"{float(pass_hat_k(da, 3).estimate):.0%}" == "25%"


def test_tau_bench_readme_row(shared_data):
    ds = load_tau_bench_airline(shared_data)
    res = pass_hat_k(ds, [1, 2, 3, 4])
    got = [round(float(x), 3) for x in res.estimate.isel(agent=0).values]
    assert got == [0.420, 0.273, 0.220, 0.200]  # tau-bench README line 18 (PROVENANCE.md)
    assert int(res.n_tasks.isel(agent=0, k=0)) == 50


def test_dataset_counts_and_dataarray_agree():
    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=5, rng=3)
    a = pass_at_k(ds, 2).estimate
    b = pass_at_k(to_counts(ds), 2).estimate
    c = pass_at_k(ds["score"], 2).estimate
    xr.testing.assert_allclose(a, b)
    xr.testing.assert_allclose(a, c)
    assert a.dims == ("agent",)


def test_short_cells_nan_warning_and_clip_option():
    cnt = _counts([2, 10, 0], [1, 4, 0])
    with pytest.warns(InsufficientRunsWarning, match=r"fewer runs than k \(n_runs < k; k=3: 1\)"):
        res = pass_hat_k(cnt, 3)
    assert np.isnan(res.per_task.values[0]) and np.isnan(res.per_task.values[2])
    assert int(res.n_insufficient) == 1 and int(res.n_not_run) == 1 and int(res.n_tasks) == 1
    assert float(res.estimate) == pytest.approx(comb(4, 3) / comb(10, 3))
    clip = pass_hat_k(cnt, 3, small_n="clip")  # seed 001: k_eff = min(k, n) -> C(1,2)/C(2,2) = 0
    assert clip.per_task.values[0] == 0.0
    assert int(clip.n_tasks) == 2
    clip_at = pass_at_k(cnt, 3, small_n="clip")  # 1 - C(1,2)/C(2,2) = 1
    assert clip_at.per_task.values[0] == 1.0


def test_all_short_gives_nan_mean_not_zero():
    with pytest.warns(InsufficientRunsWarning):
        res = pass_at_k(_counts([1, 2], [1, 0]), 5)
    assert np.isnan(float(res.estimate))


def test_errors_are_named():
    with pytest.raises(ValueError, match=r"`k` must be a positive integer .* got k=0"):
        pass_at_k(_counts([3], [1]), 0)
    with pytest.raises(ValueError, match=r"`k` must be .*non-empty sequence.*got an empty sequence"):
        pass_hat_k(_counts([3], [1]), [])
    with pytest.raises(ValueError, match=r"`k` must not repeat a value .*got k=\[2, 1, 2\], repeating \[2\]"):
        pass_hat_k(_counts([3], [1]), [2, 1, 2])
    # a whole float is the integer it names, in the result's coordinate too
    assert pass_hat_k(_counts([3], [1]), [2.0]).estimate["k"].values.tolist() == [2]
    with pytest.raises(ValueError, match=r"counts must satisfy 0 <= n_success <= n_runs with whole numbers"):
        pass_at_k(_counts([3], [1.5]), 2)
    with pytest.raises(ValueError, match=r"`small_n` must be one of \['nan', 'clip'\]; got 'drop'"):
        pass_at_k(_counts([3], [1]), 2, small_n="drop")  # type: ignore[arg-type]
    da = xr.DataArray(np.ones((2, 3)), dims=("task", "epoch"))
    with pytest.raises(ValueError, match=r"`dim` must be a dimension of the data .* got 'run'"):
        pass_at_k(da, 1)
    with pytest.raises(ValueError, match=r"must be an eval dataset \(with `score`\)"):
        pass_at_k(xr.Dataset({"x": ("task", [1.0])}), 1)
    with pytest.raises(TypeError, match=r"`data` must be an xarray Dataset or DataArray; got list"):
        pass_at_k([1, 0], 1)  # type: ignore[arg-type]


def test_intervals_stay_in_range_and_all_zero_tasks_get_the_exact_bound():
    from statsmodels.stats.proportion import proportion_confint

    # 7 tasks, every per-task pass^3 is 0 (at most 2 successes in 10 runs): a t interval
    # would be [0, 0]; the bound for "every one of 7 values in [0, 1] is 0" is Clopper-Pearson's
    cnt = _counts([10] * 7, [2, 0, 1, 2, 0, 1, 2])
    res = pass_hat_k(cnt, 3)
    lo, hi = proportion_confint(0, 7, alpha=0.05, method="beta")
    np.testing.assert_allclose(res.ci.values, [0.0, hi], rtol=1e-12)
    assert lo == 0.0 and res.ci_flag.item() == "exact bound"
    # every task always solved: mirrored
    top = pass_at_k(_counts([10] * 7, [10] * 7), 2)
    np.testing.assert_allclose(top.ci.values, [1 - hi, 1.0], rtol=1e-12)
    assert top.ci_flag.item() == "exact bound"
    # one task: nothing to estimate the spread from
    one = pass_hat_k(_counts([10], [6]), 2)
    assert np.isnan(one.ci.values).all() and one.ci_flag.item() == "too few tasks"


def test_metr_pass8_counts_its_tasks_and_stays_in_range(metr_eval):
    import warnings

    ds = metr_eval
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pass_hat_k(ds, [1, 8])
    # the tasks each agent ran at least 8 times, counted on the data themselves
    runs = ds.score.notnull().sum("run")
    np.testing.assert_array_equal(res.n_tasks.sel(k=8).values, (runs >= 8).sum("task").values)
    np.testing.assert_array_equal(res.n_tasks.sel(k=1).values, (runs >= 1).sum("task").values)
    assert int(res.n_tasks.sel(k=8).min()) < int(res.n_tasks.sel(k=1).min())
    ci = res.ci.values
    assert np.all((ci[np.isfinite(ci)] >= 0) & (ci[np.isfinite(ci)] <= 1))
    df = res.to_frame()
    assert {"n_tasks", "ci_flag"} <= set(df.columns)
    # no silent [0, 0]: a zero estimate gets the exact bound, too few tasks say so
    zero = df["estimate"] == 0
    assert (df.loc[zero, "ci_flag"] == "exact bound").all() and (df.loc[zero, "upper"] > 0).all()
    assert (df.loc[df["n_tasks"] < 2, "ci_flag"] == "too few tasks").all()


def test_bounded_mean_bounds_contain_clopper_pearson_and_hold_for_any_law():
    from statsmodels.stats.proportion import proportion_confint

    from hierbench._numerics import bounded_mean_bounds

    # on 0/1 values Clopper-Pearson is exact, so a bound valid for every [0, 1] law contains it
    for n in (5, 20):
        x = np.arange(n + 1.0)
        lo, hi = bounded_mean_bounds(x, np.full(n + 1, n), 0.95)
        cp_lo, cp_hi = proportion_confint(x.astype(int), n, alpha=0.05, method="beta")
        assert np.all(lo <= cp_lo + 1e-12) and np.all(hi >= cp_hi - 1e-12)
        np.testing.assert_allclose(hi[0], cp_hi[0], rtol=1e-12)  # no success: the two coincide
    # a sparse law (90% zeros, the rest Beta(1, 20)): each side misses at most 2.5% of the time;
    # Monte Carlo tolerance 3 binomial SEs over 4,000 draws (seed fixed)
    rng = np.random.default_rng(20261204)
    y = (rng.random((4000, 20)) < 0.1) * rng.beta(1.0, 20.0, (4000, 20))
    mu = 0.1 / 21.0
    lo, hi = bounded_mean_bounds(y.sum(1), np.full(4000, 20), 0.95)
    tol = 3 * np.sqrt(0.025 * 0.975 / 4000)
    assert (hi < mu).mean() <= 0.025 + tol and (lo > mu).mean() <= 0.025 + tol


def test_a_mean_carried_by_few_tasks_gets_the_bound_and_covers():
    """pass^8 with 20 runs per task (per-task rates Beta(0.5, 4), 20 tasks): the logit t interval
    covered 49% in benchmarks/bench_passk_coverage.py; the few-tasks bound restores coverage.

    Each of 1,000 simulated agents is one replication (true pass^8 = E[p^8], a Beta moment from
    scipy); Monte Carlo tolerance: 4 binomial SEs below 95%.
    """
    rng = np.random.default_rng(8)
    p = rng.beta(0.5, 4.0, (1000, 20))
    cnt = xr.Dataset({"n_runs": (("agent", "task"), np.full(p.shape, 20)),
                      "n_success": (("agent", "task"), rng.binomial(20, p).astype(float))})  # fmt: skip
    res = pass_hat_k(cnt, 8)
    truth = stats.beta(0.5, 4.0).moment(8)
    lo, hi = res.ci.sel(ci_bound="lower").values, res.ci.sel(ci_bound="upper").values
    cover = (lo <= truth) & (truth <= hi)
    assert cover.mean() >= 0.95 - 4 * np.sqrt(0.95 * 0.05 / 1000)
    flags = res.ci_flag.values
    assert set(flags) <= {"exact bound", "bound: few tasks carry the mean", ""}
    assert (flags == "bound: few tasks carry the mean").mean() > 0.5
    # the flagged cells' intervals are not the t interval's: they hold without its normal approximation
    y = res.per_task.values
    few = flags == "bound: few tasks carry the mean"
    with np.errstate(invalid="ignore", divide="ignore"):  # all-zero rows: 0 / 0
        n_eff = y.sum(1) ** 2 / (y**2).sum(1)
    assert np.all(n_eff[few] < 10)
    # a mean spread over many tasks keeps the t interval (pass^1 of Beta(2, 2) rates, 80 tasks)
    q = rng.beta(2.0, 2.0, (50, 80))
    many = xr.Dataset({"n_runs": (("agent", "task"), np.full(q.shape, 8)),
                       "n_success": (("agent", "task"), rng.binomial(8, q).astype(float))})  # fmt: skip
    assert (pass_hat_k(many, 1).ci_flag.values == "").all()


def test_each_row_names_the_kind_of_interval_it_carries():
    # by construction: agent "spread" has varied per-task rates over 20 tasks (the logit t
    # interval), "none" fails every run (every per-task value 0: the bound), "one" passes a
    # single task (one task carries the mean: the bound); a log holding both kinds
    T, R = 20, 10
    rng = np.random.default_rng(3)
    succ = np.stack([rng.integers(2, 9, T), np.zeros(T), np.r_[R, np.zeros(T - 1)]]).astype(float)
    d = xr.Dataset(
        {"n_runs": (("agent", "task"), np.full((3, T), R)), "n_success": (("agent", "task"), succ)},
        coords={"agent": ["spread", "none", "one"]},
    )
    res = pass_hat_k(d, 1)
    df = res.to_frame()
    assert df["ci_kind"].tolist() == ["t", "bounded-mean", "bounded-mean"]
    assert res.ci.attrs["ci_kind"] == "mixed"
    assert df.loc["spread", "ci_detail"].startswith("pass_hat_k: Student t")
    assert "distribution-free bound" in df.loc["none", "ci_detail"]
    # the all-zero row's upper end is Clopper-Pearson's for 0 of 20 (closed form)
    assert df.loc["none", "upper"] == pytest.approx(1 - 0.025 ** (1 / T), rel=1e-9)
    # one kind throughout: the attr names it, not "mixed"
    assert pass_hat_k(d.sel(agent=["spread"]), 1).ci.attrs["ci_kind"] == "t"
    assert pass_hat_k(d.sel(agent=["none", "one"]), 1).ci.attrs["ci_kind"] == "bounded-mean"


def _clustered_counts(succ, n_runs, codes):
    succ = np.atleast_2d(succ).astype(float)
    return xr.Dataset(
        {"n_runs": (("agent", "task"), np.full(succ.shape, n_runs)), "n_success": (("agent", "task"), succ)},
        coords={"agent": [f"a{i}" for i in range(succ.shape[0])], "cluster": ("task", np.asarray(codes).astype(str))},
    )


def test_clustered_interval_is_the_cluster_robust_mean_on_the_logit_scale():
    import statsmodels.api as sm

    # 12 clusters of 4 tasks, 10 runs each: with equal clusters CR2 is CR1 (statsmodels'
    # cluster-robust variance of a mean) with G - 1 df
    rng = np.random.default_rng(11)
    G, size, R = 12, 4, 10
    codes = np.repeat(np.arange(G), size)
    p = 1 / (1 + np.exp(-(rng.normal(-0.3, 1.0, G)[codes] + rng.normal(0, 0.5, G * size))))
    succ = rng.binomial(R, p)
    res = pass_hat_k(_clustered_counts(succ, R, codes), 1)
    y = succ / R
    fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": codes})
    se = float(fit.bse[0])
    assert float(res.standard_error.item()) == pytest.approx(se, rel=1e-10)
    m = y.mean()
    half = stats.t.ppf(0.975, G - 1) * se / (m * (1 - m))
    lg = np.log(m / (1 - m))
    ref = 1 / (1 + np.exp(-np.array([lg - half, lg + half])))
    np.testing.assert_allclose(res.ci.values.ravel(), ref, rtol=1e-10)
    assert res.to_frame()["ci_kind"].tolist() == ["t"]
    assert "12 clusters of `cluster`" in res.ci.attrs["ci_detail"] and "CR2" in res.ci.attrs["ci_detail"]
    # the tasks one by one: narrower here, where the clusters' tasks move together
    alone = pass_hat_k(_clustered_counts(succ, R, codes), 1, cluster=None)
    assert float(alone.standard_error.item()) < se
    # the header names the unit the interval is for: clusters here, tasks without them
    assert "interval for a new draw of task clusters from the same population" in repr(res)
    assert "interval for a new draw of tasks from the same population" in repr(alone)


def test_without_clusters_the_interval_is_unchanged_bit_for_bit():
    rng = np.random.default_rng(12)
    succ = rng.binomial(8, rng.beta(2, 2, (3, 30)))
    with_singletons = _clustered_counts(succ, 8, np.arange(30))  # every task its own cluster
    bare = with_singletons.drop_vars("cluster")
    for d in (with_singletons, bare):
        a, b = pass_hat_k(d, [1, 2]), pass_hat_k(bare, [1, 2], cluster=None)
        assert np.array_equal(a.ci.values, b.ci.values) and np.array_equal(a.standard_error.values, b.standard_error.values)
        assert a.ci.attrs["ci_detail"] == b.ci.attrs["ci_detail"]
    # clusters named, but cluster=None: the tasks one by one, as without the coord
    grouped = _clustered_counts(succ, 8, np.arange(30) // 3)
    assert np.array_equal(pass_hat_k(grouped, 2, cluster=None).ci.values, pass_hat_k(bare, 2).ci.values)


@pytest.mark.slow
def test_clustered_interval_covers_where_the_task_level_one_falls_short():
    # 600 seeded data sets (one per "agent"): 30 task families of 3 tasks, family effects
    # sd 1.2 and task effects sd 0.3 on the logit scale, 6 runs; the truth E[p^k] by a
    # 2,000,000-draw Monte Carlo (error < 5e-4). Coverage's Monte Carlo sd at 0.95 over
    # 600 sets is 0.009: the cluster interval within 0.03 of 0.95, the task-level one
    # (the old interval) at least 0.05 below it
    rng = np.random.default_rng(2026)
    reps, G, size, R, mu = 600, 30, 3, 6, -0.4
    codes = np.repeat(np.arange(G), size)
    logit_p = mu + rng.normal(0, 1.2, (reps, G))[:, codes] + rng.normal(0, 0.3, (reps, G * size))
    succ = rng.binomial(R, 1 / (1 + np.exp(-logit_p)))
    draws = 1 / (1 + np.exp(-(mu + rng.normal(0, 1.2, 2_000_000) + rng.normal(0, 0.3, 2_000_000))))
    d = _clustered_counts(succ, R, codes)
    for k in (1, 2):
        truth = float(np.mean(draws**k))
        cov = {}
        for name, cl in (("cluster", "auto"), ("task", None)):
            res = pass_hat_k(d, k, cluster=cl)
            lo, hi = res.ci.sel(ci_bound="lower").values, res.ci.sel(ci_bound="upper").values
            cov[name] = float(np.mean((lo <= truth) & (truth <= hi)))
        assert abs(cov["cluster"] - 0.95) <= 0.03, (k, cov)
        assert cov["task"] <= 0.90, (k, cov)


def test_the_bound_over_clusters_of_a_cell_with_no_success():
    from scipy import optimize

    # equal clusters: Clopper-Pearson's no-success bound over the G = 10 clusters, not the 40 tasks
    d = _clustered_counts(np.zeros(40), 5, np.repeat(np.arange(10), 4))
    res = pass_hat_k(d, 1)
    assert res.ci_flag.item() == "exact bound" and res.to_frame()["ci_kind"].tolist() == ["bounded-mean"]
    assert float(res.ci.sel(ci_bound="upper").item()) == pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-9)
    # unequal clusters (sizes 5, 3, 2, 1 x 6): at the bound v the largest chance of no success,
    # max prod(1 - mu_g) over mu in [0, 1]^G with sum_g w_g mu_g = v, is 0.025 (scipy's optimiser)
    sizes = np.array([5, 3, 2, 1, 1, 1, 1, 1, 1])
    d = _clustered_counts(np.zeros(16), 5, np.repeat(np.arange(9), sizes))
    v = float(pass_hat_k(d, 1).ci.sel(ci_bound="upper").item())
    w = sizes / 16
    opt = optimize.minimize(
        lambda mu: -np.sum(np.log1p(-np.minimum(mu, 1 - 1e-12))), np.full(9, v), method="SLSQP",
        bounds=[(0, 1)] * 9, constraints=[{"type": "eq", "fun": lambda mu: w @ mu - v}],
    )
    assert np.exp(-opt.fun) == pytest.approx(0.025, rel=1e-4)
    assert 0 < v < 1


def test_few_clusters_but_not_few_tasks_keep_the_t_interval_unflagged():
    # 20 clusters of 5 tasks; every run passes in the 15 tasks of 3 clusters and fails elsewhere:
    # 15 tasks carry the mean (not few: at least min(10, 100 / 2)) but only 3 of 20 clusters do;
    # the t interval covers there (bench_passk_coverage.py --clusters), so no flag
    codes = np.repeat(np.arange(20), 5)
    res = pass_hat_k(_clustered_counts(np.where(codes < 3, 4, 0), 4, codes), 1)
    assert res.ci_flag.item() == ""
    assert res.to_frame()["ci_kind"].tolist() == ["t"]
    # the same tasks one by one: no flag at all
    assert pass_hat_k(_clustered_counts(np.where(codes < 3, 4, 0), 4, codes), 1, cluster=None).ci_flag.item() == ""


def test_the_bound_flag_says_which_side_few_tasks_carry():
    """Audit F 8.2: "few tasks carry the mean" was also printed where few tasks *fail* (tau2
    qwen3-max telecom, pass^1 98.25%). Hand counts, 40 tasks x 4 runs: 38 all-pass and 2
    all-fail tasks give per-task pass^1 of 1 and 0, mean 0.95; the failures' n_eff is
    2^2 / 2 = 2 < min(10, 40 / 2), the successes' 38. The mirror (2 all-pass) flags the mean.
    """
    hi = np.r_[np.full(38, 4), np.zeros(2)]
    cnt = xr.Dataset({"n_runs": (("agent", "task"), np.full((2, 40), 4)),
                      "n_success": (("agent", "task"), np.stack([hi, 4 - hi]))},
                     coords={"agent": ["mostly pass", "mostly fail"]})
    res = pass_hat_k(cnt, 1)
    assert res.estimate.values.ravel().tolist() == [0.95, 0.05]
    assert res.ci_flag.values.ravel().tolist() == ["bound: few tasks carry the failures (1 - mean)",
                                                   "bound: few tasks carry the mean"]
    assert res.to_frame()["ci_kind"].tolist() == ["bounded-mean", "bounded-mean"]  # both are the bound
    # the bound of the one mirrors the other's (1 - y): the side changes the words only
    lo, hi_ = res.ci.values.reshape(2, 2)
    np.testing.assert_allclose(lo, 1 - hi_[::-1], atol=1e-12)
