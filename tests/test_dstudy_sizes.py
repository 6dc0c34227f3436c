"""D-study sizes: the shorthand's defaults on unbalanced data and ``n_tasks`` as the total.

Expected values are Brennan's D-study formulas for agents crossed with tasks nested in
clusters, runs nested in agent x task cells (p x (t:c), r:(p x t)), written out here from
the components: with N tasks in all, r runs per cell and cluster k holding n_k tasks,

    sigma2_delta = s(a:c) w2 + s(a:t:c) / N + s(res) / (N r)
    sigma2_Delta = sigma2_delta + s(c) w2 + s(t:c) / N
    E rho^2 = s(a) / (s(a) + sigma2_delta),   Phi = s(a) / (s(a) + sigma2_Delta)

where w2 = sum_k (n_k / N)^2 is the sum of the clusters' squared weights in the mean over
tasks (1 / n_c when the n_c clusters are even), and by seeded simulation of two agents'
means from the components over the clusters as they are. With uneven runs per cell an
agent's mean weighs every cell mean alike, so its run error is s(res) / N^2 sum_t 1 / r_t:
on average over agents s(res) / (N H), H the harmonic mean of runs per cell (the ``r``
above at the G-study's own sizes), checked against each pair of agents' exact variance
with its own run counts and a simulation of the cells.
"""

import itertools
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import NegativeVarianceComponentWarning
from hierbench.freq import variance_components


def _brennan(s: dict, n_c: float, n_total: float, r: float, w2: float | None = None) -> dict:
    w2 = 1 / n_c if w2 is None else w2  # even clusters unless the squared weights are given
    delta = s["agent:cluster"] * w2 + s["agent:task:cluster"] / n_total
    delta += s["residual"] / (n_total * r)
    Delta = delta + s["cluster"] * w2 + s["task:cluster"] / n_total
    return {
        "sigma2_delta": delta,
        "sigma2_Delta": Delta,
        "e_rho2": s["agent"] / (s["agent"] + delta),
        "phi": s["agent"] / (s["agent"] + Delta),
    }


@pytest.fixture(scope="module")
def nested():
    """6 agents x 4 clusters x 3 tasks per cluster x 2 runs, normal scores (balanced: ANOVA)."""
    rng = np.random.default_rng(8)
    shape = (6, 4, 3, 2)
    y = (
        rng.normal(0, 0.6, (6, 1, 1, 1))
        + rng.normal(0, 0.5, (1, 4, 1, 1))
        + rng.normal(0, 0.3, (6, 4, 1, 1))
        + rng.normal(0, 0.8, (1, 4, 3, 1))
        + rng.normal(0, 0.4, (6, 4, 3, 1))
        + rng.normal(0, 1.0, shape)
    )
    score = y.reshape(6, 12, 2)  # task t = 3 * cluster + task-in-cluster
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), score)},
        coords={"task": [f"t{i}" for i in range(12)], "cluster": ("task", np.repeat(list("abcd"), 3))},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NegativeVarianceComponentWarning)
        vc = variance_components(ds)
    assert vc.formula == "run:(agent*(task:cluster))"
    assert vc._legacy is not None  # the three-facet shorthand applies
    return vc, dict(zip(vc.component_names, vc.estimate.values, strict=True))


def test_n_tasks_is_the_total_over_the_clusters(nested):
    vc, s = nested
    d = vc.d_study(n_tasks=[12, 40, 100], n_runs=[1, 2])
    for n_total in (12, 40, 100):
        for r in (1, 2):
            want = _brennan(s, 4, n_total, r)
            got = d.sel(n_tasks=n_total, n_runs=r)
            for k, v in want.items():
                assert float(got[k]) == pytest.approx(v, rel=1e-12), (k, n_total, r)
    np.testing.assert_allclose(d.task_per_cluster.values, [3, 10, 25])
    assert "total number of tasks" in d.attrs["dim_n_tasks"]
    assert "held at the G-study's 4" in d.attrs["dim_n_tasks"]
    # the G-study's own sizes (12 tasks in all, 2 runs) give its coefficients
    assert float(d.e_rho2.sel(n_tasks=12, n_runs=2)) == pytest.approx(
        s["agent"] / (s["agent"] + s["agent:cluster"] / 4 + s["agent:task:cluster"] / 12
                      + s["residual"] / 24)
    )


def test_n_clusters_varies_the_clusters(nested):
    vc, s = nested
    d = vc.d_study(n_tasks=[20, 60], n_clusters=[2, 10], n_runs=3)
    assert d.e_rho2.dims == ("n_tasks", "n_runs", "n_clusters")
    for n_total in (20, 60):
        for n_c in (2, 10):
            got = d.sel(n_tasks=n_total, n_clusters=n_c, n_runs=3)
            for k, v in _brennan(s, n_c, n_total, 3).items():
                assert float(got[k]) == pytest.approx(v, rel=1e-12)
    assert float(d.task_per_cluster.sel(n_tasks=60, n_clusters=10)) == 6.0
    assert "varied along n_clusters" in d.attrs["dim_n_tasks"]


def test_tasks_per_cluster_still_reachable_through_sizes(nested):
    vc, s = nested
    d = vc.d_study({"task": [5]}, n_runs=2)  # 5 tasks in each of the 4 clusters: 20 in all
    assert d.e_rho2.dims == ("n_task", "n_runs")
    assert float(d.sigma2_delta.squeeze()) == pytest.approx(
        _brennan(s, 4, 20, 2)["sigma2_delta"], rel=1e-12
    )


def test_sizes_asked_are_checked(nested):
    vc, _ = nested
    with pytest.raises(ValueError, match=r"`n_tasks` must be positive integers; got \[2.5\]"):
        vc.d_study(n_tasks=2.5)
    with pytest.raises(
        ValueError,
        match=r"`n_tasks` is the total number of tasks and must be at least the number of "
        r"clusters .*got \(n_tasks, n_clusters\) = \(3, 4\)",
    ):
        vc.d_study(n_tasks=[3, 12])
    with pytest.raises(ValueError, match=r"`n_clusters` must be positive integers; got \[0.0\]"):
        vc.d_study(n_clusters=0)
    with pytest.raises(ValueError, match=r"give the facet 'task' either in `sizes` or as `n_tasks`"):
        vc.d_study({"task": 3}, n_tasks=12)
    rng = np.random.default_rng(0)
    y = rng.normal(size=(3, 1, 1)) + rng.normal(size=(1, 5, 1)) + rng.normal(size=(3, 5, 2))
    flat = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    with pytest.raises(ValueError, match=r"`n_clusters`: the tasks of the design .* are not nested"):
        flat.d_study(n_clusters=3)


def test_metr_default_d_study_is_the_observed_design(metr_eval):
    # METR is unbalanced: 36 families of 1-7 tasks (83 in all) and 1-96 runs in the 748 agent
    # x task cells that were run (9.16 on average, harmonic mean 6.851). The default D-study
    # (nothing asked) is the design as observed: its runs the harmonic mean of the cells'
    # (the mean 9.16 is the n_runs coord), its families as uneven as they are (w2 = sum_k
    # (n_k / 83)^2, 1 / 22.59 where even families would give 1 / 36)
    vc = variance_components(metr_eval)
    score = metr_eval["score"]
    seen = score.notnull()
    cells = seen.any("run")
    tasks = cells.any("agent")
    n_total = int(tasks.sum())
    _, n_k = np.unique(metr_eval["cluster"].values[tasks.values], return_counts=True)
    n_c = n_k.size
    w2 = float(((n_k / n_total) ** 2).sum())
    n_run = seen.sum("run").values[cells.values]
    mean_r = int(seen.sum()) / int(cells.sum())
    r = 1 / float(np.mean(1 / n_run))
    assert (n_total, n_c) == (83, 36) and mean_r == pytest.approx(9.1604, abs=1e-4)
    assert (n_run.size, n_run.min(), n_run.max()) == (748, 1, 96) and r == pytest.approx(6.8514, abs=1e-4)
    assert (n_k.min(), n_k.max()) == (1, 7) and 1 / w2 == pytest.approx(22.587, abs=1e-3)
    s = dict(zip(vc.component_names, vc.estimate.values, strict=True))
    d = vc.d_study()
    assert d.sizes == {"n_tasks": 1, "n_runs": 1}
    assert d.n_tasks.item() == 83 and d.n_runs.item() == pytest.approx(mean_r, rel=1e-12)
    assert d.effective_n_run.item() == pytest.approx(r, rel=1e-12)
    for k, v in _brennan(s, n_c, n_total, r, w2).items():
        assert d[k].item() == pytest.approx(v, rel=1e-10), k
    assert d.effective_n_cluster.item() == pytest.approx(1 / w2, rel=1e-12)
    assert vc.var_paired_diff == pytest.approx(2 * _brennan(s, n_c, n_total, r, w2)["sigma2_delta"])
    assert "not asked, so the G-study's own size" in d.attrs["as_observed"]
    assert "as unevenly as observed" in d.attrs["spread"] and "hold 1-7 'task'" in d.attrs["spread"]
    assert "'run' per 'agent' x 'task' cell as observed" in d.attrs["run_spread"]
    assert "748 'agent' x 'task' cells with a 'run' hold 1-96" in d.attrs["run_spread"]
    assert "82 of 830 'agent' x 'task' cells have none" in d.attrs["run_spread"]
    # the best case, asked for: even families, the rule before this release
    even = vc.d_study(spread="even")
    for k, v in _brennan(s, n_c, n_total, r).items():
        assert even[k].item() == pytest.approx(v, rel=1e-10), k
    assert "spread evenly" in even.attrs["spread"]
    # uneven families make the SD of a paired difference 14% larger than even ones would
    ratio = np.sqrt(d.var_paired_diff.item() / even.var_paired_diff.item())
    assert ratio == pytest.approx(1.140, abs=0.005)
    # and the runs as uneven as they are: the mean of runs per cell (this release's rule
    # before) gave 0.002253 (SD 0.0475), the harmonic mean 0.002305 (SD 0.0480)
    at_mean = 2 * _brennan(s, n_c, n_total, mean_r, w2)["sigma2_delta"]
    assert (at_mean, vc.var_paired_diff) == pytest.approx((0.0022526, 0.0023051), abs=1e-7)
    # runs asked (the same number in every cell), tasks as observed
    d = vc.d_study(n_runs=[1, 4])
    for r_ in (1, 4):
        want = _brennan(s, n_c, n_total, r_, w2)["e_rho2"]
        assert float(d.e_rho2.sel(n_runs=r_).squeeze()) == pytest.approx(want, rel=1e-10)
    assert d.attrs["as_observed"].startswith("n_tasks = 83:")
    np.testing.assert_array_equal(d.effective_n_run.values, [1, 4])
    assert "as asked, the same number in every cell" in d.attrs["run_spread"]
    # the interval method reads the same design
    co = vc.coefficients(ci="wald")
    want = _brennan(s, n_c, n_total, r, w2)
    assert float(co.estimate.sel(coefficient="e_rho2")) == pytest.approx(want["e_rho2"], rel=1e-10)
    assert "effective_n_cluster = 22.59" in co.attrs["sizes"] and "spread" in co.attrs
    assert "effective_n_run = 6.851" in co.attrs["sizes"] and "(in sizes)" in co.attrs["run_spread"]


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_swebench_n_tasks_500_is_the_benchmark_not_6000(shared_data):
    # SWE-bench Verified: 500 tasks in 12 repositories of 1-231 tasks (django 231), one run
    # per cell (the residual holds agent x task): sigma2_delta = s(a:c) w2 + s(res) / N,
    # with w2 = sum_k (n_k / 500)^2 = 1 / 3.87 (1 / 12 were the repositories even)
    from hierbench.data import load_swebench_bash_only

    ds = load_swebench_bash_only(shared_data)
    vc = variance_components(ds)
    _, n_k = np.unique(ds["cluster"].values, return_counts=True)
    assert n_k.size == 12 and n_k.sum() == 500 and n_k.max() == 231
    w2 = float(((n_k / 500) ** 2).sum())
    assert 1 / w2 == pytest.approx(3.870, abs=1e-3)
    s = dict(zip(vc.component_names, vc.estimate.values, strict=True))
    d = vc.d_study(n_tasks=[42, 500], n_runs=1)
    for n_total in (42, 500):
        # as unevenly as observed: the same effective share of the 12 repositories (42
        # tasks in 12 clusters of at least one task allow it: 42^2 / (31^2 + 11) = 1.8 < 3.87)
        want = s["agent:cluster"] * w2 + s["residual"] / n_total
        assert float(d.sigma2_delta.sel(n_tasks=n_total, n_runs=1)) == pytest.approx(want, rel=1e-12)
    even = vc.d_study(n_tasks=500, n_runs=1, spread="even")
    want = s["agent:cluster"] / 12 + s["residual"] / 500
    assert float(even.sigma2_delta.squeeze()) == pytest.approx(want, rel=1e-12)
    # the SD of a paired difference: 21% larger than the even repositories' best case
    ratio = np.sqrt(float(d.var_paired_diff.sel(n_tasks=500, n_runs=1)) / float(even.var_paired_diff.squeeze()))
    assert ratio == pytest.approx(1.215, abs=0.005)
    # the G-study itself is the 500-task row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert float(d.e_rho2.sel(n_tasks=500, n_runs=1)) == pytest.approx(vc.e_rho2, rel=1e-12)


#: tasks per cluster of the uneven fixture: 16 tasks in 6 clusters, sum n_k^2 = 72
UNEVEN = np.array([1, 1, 1, 2, 4, 7])


@pytest.fixture(scope="module")
def uneven():
    """6 agents x 16 tasks in 6 clusters of 1-7 tasks x 2 runs, normal scores (REML)."""
    rng = np.random.default_rng(21)
    k_of_t = np.repeat(np.arange(UNEVEN.size), UNEVEN)
    n_t = k_of_t.size
    y = (
        rng.normal(0, 0.6, (6, 1, 1))
        + rng.normal(0, 0.5, (1, UNEVEN.size, 1))[:, k_of_t]
        + rng.normal(0, 0.5, (6, UNEVEN.size, 1))[:, k_of_t]
        + rng.normal(0, 0.8, (1, n_t, 1))
        + rng.normal(0, 0.4, (6, n_t, 1))
        + rng.normal(0, 1.0, (6, n_t, 2))
    )
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), y)},
        coords={"task": [f"t{i:02d}" for i in range(n_t)], "cluster": ("task", k_of_t.astype(str))},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(ds)
    assert vc.formula == "run:(agent*(task:cluster))" and vc.method == "reml"
    s = dict(zip(vc.component_names, vc.estimate.values, strict=True))
    assert s["agent:cluster"] > 0.05  # the term the spread moves is there
    return vc, s


def _simulated_var_paired_diff(s, n_k, r, rng, n_sim=200_000):
    """Variance (and its Monte Carlo SE) of two agents' mean over tasks, fresh effects each draw.

    Cluster k holds n_k tasks; the mean weighs every task alike; runs enter as a cell mean.
    """
    k_of_t = np.repeat(np.arange(n_k.size), n_k)
    diff = np.zeros(n_sim)
    for sign in (1, -1):
        ac = rng.normal(0, np.sqrt(s["agent:cluster"]), (n_sim, n_k.size))[:, k_of_t]
        at = rng.normal(0, np.sqrt(s["agent:task:cluster"]), (n_sim, k_of_t.size))
        e = rng.normal(0, np.sqrt(s["residual"] / r), (n_sim, k_of_t.size))
        diff += sign * (ac + at + e).mean(axis=1)
    v = diff.var(ddof=1)
    return v, v * np.sqrt(2 / (n_sim - 1))


def test_uneven_clusters_match_a_simulation_of_the_design(uneven):
    # the G-study's own design (clusters of 1-7 tasks): var_paired_diff, the default
    # D-study and a simulation of two agents' means from the components agree within
    # 4 Monte Carlo SEs (0.6% of the variance at 200,000 draws); even clusters would give
    # s(a:c) / 6 in place of s(a:c) * 72 / 256, far outside that band
    vc, s = uneven
    w2 = float(((UNEVEN / 16) ** 2).sum())
    want = 2 * _brennan(s, 6, 16, 2, w2)["sigma2_delta"]
    assert vc.var_paired_diff == pytest.approx(want, rel=1e-12)
    assert vc.d_study().var_paired_diff.item() == pytest.approx(want, rel=1e-12)
    got, se = _simulated_var_paired_diff(s, UNEVEN, 2, np.random.default_rng(5))
    assert abs(got - vc.var_paired_diff) < 4 * se
    even = vc.d_study(spread="even").var_paired_diff.item()
    assert abs(got - even) > 20 * se
    # a planned list of cluster sizes, 3 runs: the same check at that design
    plan = np.array([10, 3, 2, 1])
    d = vc.d_study(n_runs=3, spread=plan)
    assert d.var_paired_diff.dims == ("n_runs",)
    got, se = _simulated_var_paired_diff(s, plan, 3, np.random.default_rng(6))
    assert abs(got - d.var_paired_diff.item()) < 4 * se
    assert d.effective_n_cluster.item() == pytest.approx(16**2 / 114, rel=1e-12)
    assert "as given: [10, 3, 2, 1]" in d.attrs["spread"]
    assert "held_at_g_study" not in d.attrs
    # E rho^2 at that plan (2 runs) with its interval: Brennan's formula, w2 = 114 / 256
    co = vc.coefficients(sizes={"run": 2}, spread=plan, ci="wald")
    want = _brennan(s, 4, 16, 2, 114 / 256)["e_rho2"]
    assert float(co.estimate.sel(coefficient="e_rho2")) == pytest.approx(want, rel=1e-10)
    assert "effective_n_cluster = 2.246" in co.attrs["sizes"]


def test_observed_spread_keeps_the_coefficient_of_variation(uneven):
    # "as unevenly as observed" at other sizes means cluster sizes with the G-study's
    # coefficient of variation: the observed clusters repeated (twice as many clusters) or
    # scaled (twice the tasks in each); checked against those planned lists
    vc, s = uneven
    twice = vc.d_study(n_tasks=32, n_clusters=12, n_runs=2).var_paired_diff.item()
    w2 = float(((np.tile(UNEVEN, 2) / 32) ** 2).sum())
    assert twice == pytest.approx(2 * _brennan(s, 12, 32, 2, w2)["sigma2_delta"], rel=1e-12)
    assert twice == pytest.approx(
        vc.d_study(n_runs=2, spread=np.tile(UNEVEN, 2)).var_paired_diff.item(), rel=1e-12
    )
    scaled = vc.d_study(n_tasks=32, n_runs=2).var_paired_diff.item()
    w2 = float(((2 * UNEVEN / 32) ** 2).sum())
    assert scaled == pytest.approx(2 * _brennan(s, 6, 32, 2, w2)["sigma2_delta"], rel=1e-12)
    # one task per cluster can only be even; 7 tasks in 6 clusters at most [2, 1, 1, 1, 1, 1]
    # (49 / 9 = 5.44 effective clusters, above the observed share's 6 x 256 / 432 = 3.56)
    d = vc.d_study(n_tasks=[6, 7], n_runs=2)
    np.testing.assert_allclose(d.effective_n_cluster.values, [6, 49 / 9], rtol=1e-12)
    w2 = 9 / 49
    assert float(d.var_paired_diff.sel(n_tasks=7).squeeze()) == pytest.approx(
        2 * _brennan(s, 6, 7, 2, w2)["sigma2_delta"], rel=1e-12
    )
    # the general form (3 tasks per cluster on average) reads the same rule
    g = vc.d_study({"cluster": [12], "task": [3]}, n_runs=2)
    w2 = 1 / (12 * 256 / 432)
    assert g.var_paired_diff.item() == pytest.approx(
        2 * _brennan(s, 12, 36, 2, w2)["sigma2_delta"], rel=1e-12
    )


def test_allocation_reads_the_spread(uneven):
    # the cost-optimal design's variance is the D-study's at its sizes, clusters as unevenly
    # as observed (C_eff = C x 256 / (6 x 72), never below what the most uneven spread allows)
    vc, s = uneven
    cost = {"cluster": 20.0, "task": 5.0, "run": 1.0}
    opt = vc.optimal_allocation(2000, cost)
    c, t, r = (opt.attrs["optimum"][f] for f in ("cluster", "task", "run"))
    n = c * t
    c_eff = max(c * 256 / 432, n**2 / ((n - c + 1) ** 2 + c - 1))
    want = 2 * _brennan(s, c, n, r, 1 / c_eff)["sigma2_delta"]
    assert opt.attrs["optimum_value"] == pytest.approx(want, rel=1e-12)
    assert opt.attrs["optimum_cost"] == pytest.approx(20 * c + 5 * n + 6 * n * r)
    assert "as unevenly as observed" in opt.attrs["spread"]
    even = vc.optimal_allocation(2000, cost, spread="even")
    assert even.attrs["optimum_value"] < opt.attrs["optimum_value"]
    with pytest.raises(ValueError, match=r"`spread` must be one of \('observed', 'even'\) for an allocation"):
        vc.optimal_allocation(2000, cost, spread=[3, 2])


def test_spread_is_checked(uneven, nested):
    vc, _ = uneven
    with pytest.raises(ValueError, match=r"`spread` must be 'observed', 'even' or .*got 'uneven'"):
        vc.d_study(spread="uneven")
    with pytest.raises(ValueError, match=r"`spread` as planned cluster sizes .* got \[3, 0\]"):
        vc.d_study(spread=[3, 0])
    with pytest.raises(ValueError, match=r"do not also ask \['n_tasks'\]"):
        vc.d_study(n_tasks=20, spread=[3, 2])
    with pytest.raises(ValueError, match=r"do not also ask \[\"sizes\['task'\]\"\]"):
        vc.coefficients(sizes={"task": 2}, spread=[3, 2], ci="wald")
    rng = np.random.default_rng(0)
    y = rng.normal(size=(3, 1, 1)) + rng.normal(size=(1, 5, 1)) + rng.normal(size=(3, 5, 2))
    flat = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    with pytest.raises(ValueError, match=r"`spread`: planned cluster sizes need a design with tasks nested"):
        flat.d_study(spread=[3, 2])
    assert "spread" not in flat.d_study(n_tasks=10).attrs  # no clusters: nothing to say
    # balanced clusters: observed is even
    bal, _ = nested
    np.testing.assert_allclose(
        bal.d_study(n_tasks=[12, 40]).var_paired_diff, bal.d_study(n_tasks=[12, 40], spread="even").var_paired_diff
    )


def test_plot_names_the_spread(uneven):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from hierbench.report import plot_d_study

    vc, _ = uneven
    # runs not asked are held as observed; asked, the same number in every cell
    for spread, runs, want in (
        ("observed", None, ["tasks over clusters: observed spread", "runs per cell: observed spread"]),
        ("even", None, ["tasks over clusters: even spread", "runs per cell: observed spread"]),
        ("observed", [2, 4], ["tasks over clusters: observed spread", "runs per cell: even spread"]),
    ):
        ax = plot_d_study(vc.d_study(n_tasks=[16, 32], n_runs=runs, spread=spread))
        assert ax.get_legend().get_title().get_text().split("\n") == want
        plt.close(ax.figure)


def test_plot_saves_its_legend_whole(uneven, tmp_path):
    """Audit E 7: the legend (with the spreads in its title) sits outside the axes; a plain savefig
    cut it off. Matplotlib's own extents of the saved figure must hold the whole legend.
    """
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from hierbench.report import plot_d_study

    ax = plot_d_study(uneven[0].d_study(n_tasks=[16, 32], n_runs=[1, 2, 4]), hue="n_runs")
    fig = ax.figure
    fig.savefig(tmp_path / "d.png", dpi=80)  # plain: no bbox_inches
    box = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width and 0 <= box.y0 and box.y1 <= fig.bbox.height, (box, fig.bbox)
    assert box.x0 >= ax.get_window_extent().x1  # still beside the lines, not over them
    plt.close(fig)


def test_plot_names_the_run_spread_without_clusters(uneven_runs):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from hierbench.report import plot_d_study

    vc = uneven_runs[0]  # run:(agent*task), 1-6 runs per cell: no clusters to name
    for sizes, want in (({"task": [12, 40]}, "runs per cell: observed spread"),
                        ({"task": [12, 40], "run": [3]}, "runs per cell: even spread")):
        ax = plot_d_study(vc.d_study(sizes))
        assert ax.get_legend().get_title().get_text() == want
        plt.close(ax.figure)


def _pairs_exact(s, n, k_of_t):
    """Each pair of agents' exact variance of the difference of their means on the tasks both ran.

    ``n``: runs per agent x task cell (0: not run); a mean weighs every task's cell mean
    alike, so with N tasks in common, m_k of them in cluster k: 2 s(a:c) sum_k (m_k/N)^2 +
    2 s(a:t:c) / N + s(res) / N^2 sum_t (1 / n_at + 1 / n_bt).
    """
    out = []
    for a, b in itertools.combinations(range(n.shape[0]), 2):
        both = (n[a] > 0) & (n[b] > 0)
        N = both.sum()
        _, m_k = np.unique(k_of_t[both], return_counts=True)
        run = s["residual"] / N**2 * (1 / n[a, both] + 1 / n[b, both]).sum()
        out.append(2 * (s["agent:cluster"] * ((m_k / N) ** 2).sum() + s["agent:task:cluster"] / N) + run)
    return np.array(out)


def _simulated_pairs(s, n, k_of_t, rng, n_sim=40_000, chunk=5_000):
    """The pairs' average variance of the difference of means on the tasks both ran, simulated.

    Fresh agent x cluster and agent x task effects and each cell's mean of its n runs
    (normal, variance s(res) / n) every draw; per draw the mean over pairs of the squared
    difference, whose expectation is the pairs' average variance. Returns it and its
    Monte Carlo SE.
    """
    M, T = n.shape
    pairs = list(itertools.combinations(range(M), 2))
    sd_cell = np.sqrt(s["residual"] / np.where(n > 0, n, 1))
    stats = []
    for _ in range(n_sim // chunk):
        cell = (
            rng.normal(0, np.sqrt(s["agent:cluster"]), (chunk, M, k_of_t.max() + 1))[:, :, k_of_t]
            + rng.normal(0, np.sqrt(s["agent:task:cluster"]), (chunk, M, T))
            + rng.normal(0, 1, (chunk, M, T)) * sd_cell
        )
        sq = np.zeros(chunk)
        for a, b in pairs:
            both = (n[a] > 0) & (n[b] > 0)
            sq += (cell[:, a, both].mean(axis=1) - cell[:, b, both].mean(axis=1)) ** 2
        stats.append(sq / len(pairs))
    st = np.concatenate(stats)
    return st.mean(), st.std(ddof=1) / np.sqrt(st.size)


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_metr_runs_as_observed_are_the_pairs_average(metr_eval):
    # the 7 METR agents that ran all 83 tasks (no empty cell; 1-96 runs per cell): the default
    # var_paired_diff is the average over their 21 pairs of each pair's exact variance with
    # its own runs per cell, and a seeded simulation of the cells (40,000 draws) agrees
    # within 4 Monte Carlo SEs (about 0.4% of the variance); the mean runs per cell (the rule
    # before this release) is many SEs off
    n_all = metr_eval["score"].notnull().sum("run")
    full = n_all.agent.values[(n_all > 0).all("task").values]
    sub = metr_eval.sel(agent=full)
    vc = variance_components(sub)
    s = dict(zip(vc.component_names, vc.estimate.values, strict=True))
    n = n_all.sel(agent=full).values.astype(float)
    k_of_t = np.unique(sub["cluster"].values, return_inverse=True)[1]
    assert n.shape == (7, 83) and (n.min(), n.max()) == (1, 96)
    want = _pairs_exact(s, n, k_of_t).mean()
    assert vc.var_paired_diff == pytest.approx(want, rel=1e-10)
    assert vc.d_study().var_paired_diff.item() == pytest.approx(want, rel=1e-10)
    got, se = _simulated_pairs(s, n, k_of_t, np.random.default_rng(11))
    assert abs(got - want) < 4 * se
    w2 = float(((np.bincount(k_of_t) / 83) ** 2).sum())
    at_mean = 2 * _brennan(s, 36, 83, n.mean(), w2)["sigma2_delta"]
    assert abs(got - at_mean) > 6 * se


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_metr_empty_cells_keep_every_agent_on_every_task(metr_eval):
    # 82 of the 830 METR cells were not run (davinci-002 ran 16 tasks, o1-preview 75,
    # gpt-3.5-turbo-instruct 76). The default D-study keeps its design, every agent on all 83
    # tasks with the empty cells run like the others (harmonic mean over the 748 that were),
    # and says so. Two agents compared on the tasks both ran (the pair formula, checked by
    # simulation within 4 Monte Carlo SEs) have 0.00407 on average over the 45 pairs (median
    # 0.00260, up to 0.0110 for a pair with davinci-002): not what the D-study describes
    vc = variance_components(metr_eval)
    s = dict(zip(vc.component_names, vc.estimate.values, strict=True))
    n = metr_eval["score"].notnull().sum("run").values.astype(float)
    k_of_t = np.unique(metr_eval["cluster"].values, return_inverse=True)[1]
    assert int((n == 0).sum()) == 82
    pairs = _pairs_exact(s, n, k_of_t)
    assert (pairs.mean(), np.median(pairs), pairs.max()) == pytest.approx((0.00407, 0.00260, 0.0110), abs=5e-5)
    got, se = _simulated_pairs(s, n, k_of_t, np.random.default_rng(12), n_sim=20_000)
    assert abs(got - pairs.mean()) < 4 * se
    assert vc.var_paired_diff == pytest.approx(0.002305, abs=1e-6)
    words = vc.d_study().attrs["run_spread"]
    assert "the D-study's design still has every 'agent' x 'task' cell" in words
    assert "not the tasks two agents both ran" in words


@pytest.fixture(scope="module")
def uneven_runs():
    """5 agents x 12 tasks, 1-6 runs per cell and two cells not run, normal scores (REML)."""
    rng = np.random.default_rng(31)
    A, T, R = 5, 12, 6
    n = rng.integers(1, R + 1, (A, T))
    n[0, 3] = n[4, 7] = 0
    y = (
        rng.normal(0, 0.6, (A, 1, 1))
        + rng.normal(0, 0.8, (1, T, 1))
        + rng.normal(0, 0.5, (A, T, 1))
        + rng.normal(0, 1.0, (A, T, R))
    )
    y[np.arange(R)[None, None, :] >= n[:, :, None]] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    assert vc.formula == "run:(agent*task)" and vc.method == "reml"
    s = dict(zip(vc.component_names, vc.estimate.values, strict=True))
    ran = n[n > 0].astype(float)
    return vc, s, ran.mean(), 1 / float(np.mean(1 / ran))


def _crossed(s, n_t, r):
    """Brennan's run:(p x t): sigma2_delta = s(a:t) / n_t + s(res) / (n_t r), E rho^2."""
    delta = s["agent:task"] / n_t + s["residual"] / (n_t * r)
    return {"sigma2_delta": delta, "e_rho2": s["agent"] / (s["agent"] + delta)}


def test_runs_held_are_the_harmonic_mean_asked_are_even(uneven_runs):
    vc, s, mean_r, h = uneven_runs
    assert h < mean_r - 0.5  # uneven enough for the rule to matter
    d = vc.d_study()
    assert d.n_runs.item() == pytest.approx(mean_r) and d.effective_n_run.item() == pytest.approx(h)
    assert d.sigma2_delta.item() == pytest.approx(_crossed(s, 12, h)["sigma2_delta"], rel=1e-12)
    assert vc.var_paired_diff == pytest.approx(2 * _crossed(s, 12, h)["sigma2_delta"], rel=1e-12)
    assert "2 of 60 'agent' x 'task' cells have none" in d.attrs["run_spread"]
    # runs held while the tasks vary (shorthand and general form) keep the harmonic mean
    d = vc.d_study(n_tasks=[12, 40])
    for t in (12, 40):
        got = float(d.sigma2_delta.sel(n_tasks=t).squeeze())
        assert got == pytest.approx(_crossed(s, t, h)["sigma2_delta"], rel=1e-12)
    g = vc.d_study({"task": [40]})
    assert g.sigma2_delta.item() == pytest.approx(_crossed(s, 40, h)["sigma2_delta"], rel=1e-12)
    assert "as observed (held at the G-study's)" in g.attrs["run_spread"]
    assert g.attrs["run_spread_kind"] == "observed"
    # runs asked: the same number in every cell
    d = vc.d_study(n_runs=[2, 5])
    for r in (2, 5):
        got = float(d.sigma2_delta.sel(n_runs=r).squeeze())
        assert got == pytest.approx(_crossed(s, 12, r)["sigma2_delta"], rel=1e-12)
    assert "as asked, the same number in every cell" in d.attrs["run_spread"]
    assert d.attrs["run_spread_kind"] == "even"
    # the coefficients with intervals read the same rule
    co = vc.coefficients(sizes={"task": 40}, ci="wald")
    assert float(co.estimate.sel(coefficient="e_rho2")) == pytest.approx(_crossed(s, 40, h)["e_rho2"])
    co = vc.coefficients(sizes={"run": 3}, ci="wald")
    assert float(co.estimate.sel(coefficient="e_rho2")) == pytest.approx(_crossed(s, 12, 3)["e_rho2"])
    assert "effective_n_run = 3" in co.attrs["sizes"]


def test_allocation_plans_even_runs(uneven_runs):
    # the allocation asks every size, so its runs are even: its optimum's variance is
    # Brennan's at those sizes, and the D-study's attrs say the runs were asked
    vc, s, _, _ = uneven_runs
    opt = vc.optimal_allocation(3000, {"task": 10.0, "run": 1.0})
    t, r = opt.attrs["optimum"]["task"], opt.attrs["optimum"]["run"]
    assert opt.attrs["optimum_value"] == pytest.approx(2 * _crossed(s, t, r)["sigma2_delta"], rel=1e-12)
    assert opt.attrs["optimum_cost"] == pytest.approx(10 * t + 5 * t * r)
    assert "as asked, the same number in every cell" in opt.attrs["run_spread"]


def test_balanced_runs_are_even(nested):
    vc, _ = nested
    d = vc.d_study()
    assert d.effective_n_run.item() == 2 and d.n_runs.item() == 2
    assert "hold 2 each" in d.attrs["run_spread"] and "have none" not in d.attrs["run_spread"]
