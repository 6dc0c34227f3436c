"""Planning fixes from the held-out audit R: one-run components, the shorthand, clusters, pairs."""

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import paired_power
from hierbench.freq import sd_paired_diff
from hierbench.freq import tasks_for_power
from hierbench.freq import variance_components


def _one_run(seed=0, A=4, T=30):
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(A, 1, 1)) + rng.normal(size=(A, T, 1))
    return xr.Dataset({"score": (("agent", "task", "run"), y)})


def test_one_run_components_plan_at_one_run():
    # balanced one-run agent x task: the residual mean square is the residual component, and
    # the per-task difference's variance 2 x residual (numpy, not the package's ANOVA)
    ds = _one_run()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(ds)
    y = ds.score.values[:, :, 0]
    resid = y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + y.mean()
    ms_res = (resid**2).sum() / ((y.shape[0] - 1) * (y.shape[1] - 1))
    assert float(sd_paired_diff(1, components=vc)) == pytest.approx(np.sqrt(2 * ms_res), rel=1e-10)
    assert tasks_for_power(0.5, components=vc) == tasks_for_power(0.5, sd_diff=np.sqrt(2 * ms_res))
    with pytest.raises(ValueError, match="n_runs=1 can"):
        sd_paired_diff([1, 2], components=vc)
    assert paired_power(0.5, 30, components=vc).shape == ()


def test_explicit_design_keeps_the_shorthand():
    ds = _one_run(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        by_dims = variance_components(ds)
        by_words = variance_components(ds, design="run:(agent*task)")
    a = by_dims.d_study(n_tasks=[60, 300])["var_paired_diff"].values
    b = by_words.d_study(n_tasks=[60, 300])["var_paired_diff"].values
    # 2 x residual / T for one run per cell, by hand
    y = ds.score.values[:, :, 0]
    resid = y - y.mean(1, keepdims=True) - y.mean(0, keepdims=True) + y.mean()
    ms_res = (resid**2).sum() / ((y.shape[0] - 1) * (y.shape[1] - 1))
    np.testing.assert_allclose(b, 2 * ms_res / np.array([60, 300]), rtol=1e-10)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    assert by_words.measurement == "agent"


def _clustered(C, n=4, A=3, R=2, seed=0, s_ac=0.3):
    """Balanced run:(agent*(task:cluster)) scores: C clusters of n tasks, agent x cluster sd sqrt(s_ac)."""
    rng = np.random.default_rng(seed)
    ac = rng.normal(0, np.sqrt(s_ac), (A, C, 1, 1))
    y = rng.normal(size=(A, 1, 1, 1)) + ac + rng.normal(size=(A, C, n, 1)) + rng.normal(size=(A, C, n, R))
    y = y.reshape(A, C * n, R)
    return xr.Dataset(
        {"score": (("agent", "task", "run"), y)}, coords={"cluster": ("task", np.repeat(np.arange(C), n))}
    )


def test_universe_new_vs_these_clusters_exact_algebra():
    from hierbench import SmallSampleWarning

    ds = _clustered(C=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(ds)
    est = {str(k): float(v) for k, v in zip(vc.estimate.component.values, vc.estimate.values, strict=True)}
    T = np.array([20, 80])
    with pytest.warns(SmallSampleWarning, match=r"worth 5.0 equal clusters \(fewer than 20\)"):
        new = vc.d_study(n_tasks=T)
    these = vc.d_study(n_tasks=T, universe="these_clusters")
    within = est["agent:task:cluster"] + est["residual"] / 2  # per task, 2 runs per cell
    # Brennan: p x (i:h), h random: delta = s_ph / n_h + s_pi:h / (n_i n_h); h fixed: s_ph joins tau
    np.testing.assert_allclose(new["var_paired_diff"].values.ravel(), 2 * (est["agent:cluster"] / 5 + within / T), rtol=1e-10)
    np.testing.assert_allclose(these["var_paired_diff"].values.ravel(), 2 * within / T, rtol=1e-10)
    np.testing.assert_allclose(these["sigma2_tau"].values.ravel(), est["agent"] + est["agent:cluster"] / 5, rtol=1e-10)
    assert "new clusters" in new.attrs["universe"] and "these clusters" in these.attrs["universe"]
    with pytest.raises(ValueError, match="keeps the G-study's 5 'cluster'"):
        vc.d_study(n_tasks=40, n_clusters=10, universe="these_clusters")


def test_few_clusters_rule_is_the_kernels_and_many_clusters_are_quiet():
    from hierbench import SmallSampleWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(_clustered(C=25, n=2, seed=3))
    assert vc.estimate.sel(component="agent:cluster") > 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallSampleWarning)
        vc.d_study(n_tasks=[50, 200])  # 25 equal clusters >= 20: no warning


def test_observed_cluster_inflation_matches_pandas():
    ds = _clustered(C=6, seed=5, s_ac=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(ds)
        attrs = vc.d_study(n_tasks=24).attrs
    # by hand with pandas: per pair, per-task differences of cell means less their mean; their
    # within-cluster sums S_g and the expectations of sum S_g^2 and sum e^2 under a cluster part a
    # and a task part b (n tasks, sizes m_g, M = sum m_g^2): solve for a, b; the ratio is
    # (a M + b n) / ((a + b) n). Every pair has all 24 tasks, so the pairs pool by plain sums.
    df = ds.score.mean("run").to_dataframe().reset_index()
    wide = df.pivot(index="task", columns="agent", values="score")
    cl = ds.cluster.to_series()
    q1 = q2 = 0.0
    for i in range(3):
        for j in range(i + 1, 3):
            e = wide[i] - wide[j]
            e = e - e.mean()
            q1 += (e.groupby(cl).sum() ** 2).sum()
            q2 += (e**2).sum()
    m = cl.value_counts().to_numpy(float)
    n, M = m.sum(), (m**2).sum()
    coef = 3 * np.array([[M - 2 * (m**3).sum() / n + M**2 / n**2, n - M / n], [n - M / n, n - 1]])
    a, b = np.linalg.solve(coef, [q1, q2])
    want = (a * M + b * n) / ((a + b) * n)
    assert want > 1.5 and abs(want - q1 / q2) > 0.1  # a cluster effect, and not the old plain ratio
    assert vc._observed_cluster_ratio == pytest.approx(want, rel=1e-10)
    assert f"observed {want:.2f}x" in attrs["cluster_inflation"]


def test_extrapolation_warning_beyond_ten_times():
    from hierbench.freq import ExtrapolationWarning

    rng = np.random.default_rng(7)
    y = rng.normal(size=(4, 1, 1)) + rng.normal(size=(4, 20, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtrapolationWarning)
        vc.d_study(n_tasks=[20, 200])  # 10x: the checked range
        paired_power(0.3, 200, components=vc)
    with pytest.warns(ExtrapolationWarning, match="201 tasks planned, 10x the 20 fitted"):
        paired_power(0.3, 201, components=vc)
    with pytest.warns(ExtrapolationWarning, match="levels of 'task' planned, 250x"):
        vc.d_study(n_tasks=5000)
    with pytest.warns(ExtrapolationWarning, match="tasks planned"):
        tasks_for_power(0.01, components=vc)


def test_per_pair_range_from_the_observed_pairs():
    from scipy import stats

    from hierbench.freq import minimum_detectable_effect

    rng = np.random.default_rng(11)
    y = rng.normal(size=(4, 1, 1)) + rng.normal(0, [[[0.3]], [[0.6]], [[0.9]], [[1.2]]], (4, 40, 1))
    ds = xr.Dataset({"score": (("agent", "task", "run"), y)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(ds)
    # each pair's SD of per-task differences, by pandas from the raw scores
    wide = ds.score.isel(run=0).to_pandas()  # agent x task
    sds = np.array([(wide.loc[i] - wide.loc[j]).std(ddof=1) for i in range(4) for j in range(i + 1, 4)])
    pooled = float(sd_paired_diff(1, components=vc))
    assert pooled == pytest.approx(np.sqrt(np.mean(sds**2)), rel=1e-10)  # balanced: RMS = 2 x MS_res
    t = tasks_for_power(0.4, components=vc)
    lo, hi = t.pair_range
    assert "pooled (RMS over pairs)" in t.note and f"{lo:,}-{hi:,}" in t.note
    for T, sd in ((lo, sds.min()), (hi, sds.max())):  # scipy's noncentral t, two-sided 0.05
        crit = stats.t.ppf(0.975, T - 1)
        assert stats.nct.sf(crit, T - 1, 0.4 * np.sqrt(T) / sd) >= 0.8
        crit = stats.t.ppf(0.975, T - 2)
        assert stats.nct.sf(crit, T - 2, 0.4 * np.sqrt(T - 1) / sd) + stats.nct.cdf(
            -crit, T - 2, 0.4 * np.sqrt(T - 1) / sd
        ) < 0.8
    assert lo < t < hi
    p = paired_power(0.4, 40, components=vc)
    assert float(p.pair_range[0]) < float(p) < float(p.pair_range[1])
    m = minimum_detectable_effect(40, components=vc)
    np.testing.assert_allclose(m.pair_range, (m * sds.min() / pooled, m * sds.max() / pooled), rtol=1e-12)
    assert repr(tasks_for_power(0.4, sd_diff=1.0)) == str(tasks_for_power(0.4, sd_diff=1.0))  # no pairs: a plain count


def test_an_allocation_warns_of_extrapolation_for_the_design_it_returns_not_the_sizes_it_searched():
    """4 agents x 20 tasks x 2 runs; a search box to 400 tasks (20x). A budget that buys about the fitted
    design's cost picks an optimum within 10x (no warning); one 40 times larger buys beyond 10x (warned).
    """
    from hierbench.freq import ExtrapolationWarning

    rng = np.random.default_rng(7)
    y = rng.normal(size=(4, 1, 1)) + rng.normal(0, 0.7, size=(4, 20, 1)) + rng.normal(size=(4, 20, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    cost, box = {"task": 5.0, "run": 1.0}, {"task": 400, "run": 8}
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtrapolationWarning)
        near = vc.optimal_allocation(4 * (20 * 5.0 + 40 * 1.0), cost, max_sizes=box)
    assert near.attrs["optimum"]["task"] <= 10 * 20  # what the quiet call may say nothing about
    with pytest.warns(ExtrapolationWarning, match="levels of 'task'") as rec:
        far = vc.optimal_allocation(40 * 4 * (20 * 5.0 + 40 * 1.0), cost, max_sizes=box)
    assert far.attrs["optimum"]["task"] > 10 * 20 and len(rec) == 1
