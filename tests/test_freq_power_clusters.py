"""Power with tasks in clusters: the design effect by hand, statsmodels, and a seeded simulation."""

import numpy as np
import pytest
import xarray as xr
from scipy import stats
from statsmodels.stats.power import TTestPower

from hierbench import HierbenchWarning
from hierbench.freq import cluster_design
from hierbench.freq import minimum_detectable_effect
from hierbench.freq import paired_power
from hierbench.freq import tasks_for_power
from hierbench.freq import variance_components


def _var_mean_by_matrix(sizes, s_c, s_w):
    """Var of the task-weighted mean of d with covariance s_w I + s_c (1 in a cluster block)."""
    g = np.repeat(np.arange(len(sizes)), sizes)
    cov = s_w * np.eye(g.size) + s_c * (g[:, None] == g[None, :])
    w = np.full(g.size, 1 / g.size)
    return float(w @ cov @ w)


def test_design_effect_hand_algebra():
    # equal clusters of 5, ICC 0.3: 1 + 4 x 0.3 = 2.2
    assert float(cluster_design(tasks_per_cluster=5, icc=0.3).deff()) == pytest.approx(2.2, rel=1e-14)
    # sizes 1, 2, 3, 6: sum m^2 = 50, sum m = 12, m* = 50/12; ICC 0.4: 1 + (50/12 - 1) 0.4 = 2.2666...
    cd = cluster_design([1, 2, 3, 6], icc=0.4)
    assert cd.size_factor == pytest.approx(50 / 12, rel=1e-14)
    assert float(cd.deff()) == pytest.approx(1 + (50 / 12 - 1) * 0.4, rel=1e-14)
    assert (cd.n_tasks, cd.n_clusters, cd.tasks_per_cluster) == (12, 4, 3.0)
    # the same from the covariance matrix of the 12 tasks (s_c = 0.4, s_w = 0.6: ICC 0.4)
    assert _var_mean_by_matrix([1, 2, 3, 6], 0.4, 0.6) == pytest.approx(1.0 * float(cd.deff()) / 12, rel=1e-12)


def test_clustered_power_is_the_t_test_on_cluster_means():
    # equal clusters: the cluster-level test is a one-sample t-test on K cluster means, whose SD is
    # sqrt(s_c + s_w / m); statsmodels' power of that test is the expected value
    s_c, s_w, m, K, effect = 0.02, 0.08, 4, 15, 0.06
    cd = cluster_design(tasks_per_cluster=m, icc=s_c / (s_c + s_w))
    sd_cm = np.sqrt(s_c + s_w / m)
    for alt, sm_alt in (("two-sided", "two-sided"), ("greater", "larger")):
        want = TTestPower().power(effect_size=effect / sd_cm, nobs=K, alpha=0.05, alternative=sm_alt)
        got = float(paired_power(effect, K * m, sd_diff=np.sqrt(s_c + s_w), clusters=cd, alternative=alt))
        assert got == pytest.approx(want, rel=1e-6)
    mde = minimum_detectable_effect(K * m, sd_diff=np.sqrt(s_c + s_w), clusters=cd)
    want = TTestPower().solve_power(nobs=K, alpha=0.05, power=0.8) * sd_cm
    assert mde == pytest.approx(want, rel=1e-5)
    # the smallest number of clusters reaching 80% power at 0.03, counted by statsmodels
    pw = [TTestPower().power(effect_size=0.03 / sd_cm, nobs=k, alpha=0.05) for k in range(2, 400)]
    k_need = 2 + int(np.argmax(np.asarray(pw) >= 0.8))
    assert tasks_for_power(0.03, sd_diff=np.sqrt(s_c + s_w), clusters=cd) == k_need * m


def test_clustered_power_matches_simulation_and_the_task_plan_overstates_it():
    # d_t = effect + u_k + e_t, 12 clusters of 4 tasks; the cluster-level paired t-test (scipy, on
    # the cluster means) against the planned power; 4000 replicates: Monte Carlo tolerance 3 SE
    # (<= 0.024). The plan that counts the 48 tasks as independent overstates the power.
    s_c, s_w, m, K, effect, n_sim = 0.03, 0.09, 4, 12, 0.1, 4000
    rng = np.random.default_rng(20240611)
    d = (effect + np.repeat(rng.normal(0, np.sqrt(s_c), (n_sim, K)), m, axis=1)
         + rng.normal(0, np.sqrt(s_w), (n_sim, K * m)))
    cluster_means = d.reshape(n_sim, K, m).mean(-1)
    rate = float(np.mean(stats.ttest_1samp(cluster_means, 0.0, axis=1).pvalue <= 0.05))
    sd = np.sqrt(s_c + s_w)
    cd = cluster_design(tasks_per_cluster=m, icc=s_c / (s_c + s_w))
    planned = float(paired_power(effect, K * m, sd_diff=sd, clusters=cd))
    tol = 3 * np.sqrt(planned * (1 - planned) / n_sim)
    assert abs(rate - planned) <= tol, (rate, planned)
    naive = float(paired_power(effect, K * m, sd_diff=sd))
    assert naive > rate + tol, (naive, rate)  # tasks as independent: 0.50 against 0.27 simulated, 0.28 planned
    # and the tasks it asks for are too few: at them the cluster-level power falls short
    t_naive = tasks_for_power(effect, sd_diff=sd)
    t_clust = tasks_for_power(effect, sd_diff=sd, clusters=cd)
    assert t_clust > t_naive * float(cd.deff()) - m  # about DEFF times as many tasks
    assert float(paired_power(effect, t_clust, sd_diff=sd, clusters=cd)) >= 0.8
    assert float(paired_power(effect, t_clust - m, sd_diff=sd, clusters=cd)) < 0.8


@pytest.mark.filterwarnings("ignore::hierbench.freq.NegativeVarianceComponentWarning")  # main effects: unused
def test_clusters_from_components_use_the_cluster_facet():
    # a balanced run:(agent*(task:cluster)) G-study: the plan's ICC of a per-task paired difference
    # is 2 s_ac / (2 s_ac + 2 s_at + 2 s_e / R), by hand from the fitted components
    rng = np.random.default_rng(7)
    M, K, m, R = 3, 10, 3, 2
    y = (rng.normal(0, 0.2, (M, 1, 1, 1)) + rng.normal(0, 0.2, (1, K, 1, 1)) + rng.normal(0, 0.2, (1, K, m, 1))
         + rng.normal(0, 0.15, (M, K, 1, 1)) + rng.normal(0, 0.15, (M, K, m, 1))
         + rng.normal(0, 0.3, (M, K, m, R))).reshape(M, K * m, R)
    da = xr.DataArray(y, dims=("agent", "task", "run"),
                      coords={"cluster": ("task", np.repeat([f"c{k}" for k in range(K)], m))})
    vc = variance_components(da, design="run:(agent*(task:cluster))")
    cd = cluster_design(components=vc)
    c = vc.components
    s_ac, s_at, s_e = (float(c.sel(component=n)) for n in ("agent:cluster", "agent:task:cluster", "residual"))
    total = 2 * s_ac + 2 * s_at + 2 * s_e / R
    deff = 1 + (m - 1) * 2 * s_ac / total
    sd_cm = np.sqrt(total * deff / m)  # SD of a cluster's mean difference
    want = TTestPower().power(effect_size=0.1 / sd_cm, nobs=K, alpha=0.05)
    assert float(paired_power(0.1, K * m, n_runs=R, clusters=cd)) == pytest.approx(want, rel=1e-6)
    assert "agent:cluster" in cd.source and cd.n_tasks == K * m
    with pytest.raises(ValueError, match="carries the variances"):
        paired_power(0.1, K * m, n_runs=R, clusters=cd, sd_diff=0.3)
    with pytest.raises(ValueError, match=r"run:\(agent\*\(task:cluster\)\)"):
        cluster_design(components=variance_components(da.drop_vars("cluster")))


def test_no_clusters_and_icc_zero_singletons_agree_with_the_task_plan():
    # clusters of one task with ICC 0 are independent tasks: the same counts and power
    cd = cluster_design(tasks_per_cluster=1, icc=0.0)
    assert tasks_for_power(0.05, sd_diff=0.3, clusters=cd) == tasks_for_power(0.05, sd_diff=0.3)
    assert float(paired_power(0.05, 120, sd_diff=0.3, clusters=cd)) == pytest.approx(
        float(paired_power(0.05, 120, sd_diff=0.3)), rel=1e-12)


def test_inconsistent_cluster_input_is_refused():
    cd = cluster_design([2, 3, 5], icc=0.2)
    with pytest.raises(ValueError, match=r"`n_tasks` must equal the sum of the cluster sizes \(10\).*n_tasks = 12:"):
        paired_power(0.1, 12, sd_diff=0.3, clusters=cd)
    tmpl = cluster_design([2, 3, 5], icc=0.2, template=True)  # the spread only: any total
    assert tmpl.n_tasks is None and float(paired_power(0.1, 30, sd_diff=0.3, clusters=tmpl)) > 0
    with pytest.raises(ValueError, match="`icc` must be"):
        cluster_design(tasks_per_cluster=3, icc=-0.1)
    with pytest.raises(ValueError, match=r"`icc` must lie in \[0, 1\]"):
        cluster_design(tasks_per_cluster=3, icc=1.5)
    with pytest.raises(ValueError, match="`design_effect` must be >= 1"):
        cluster_design(tasks_per_cluster=3, design_effect=0.8)
    with pytest.warns(HierbenchWarning, match=r"exceeds m\* = 3"):
        cluster_design(tasks_per_cluster=3, design_effect=3.5)
    with pytest.raises(ValueError, match="exactly one of `icc`, `design_effect`"):
        cluster_design(tasks_per_cluster=3, icc=0.1, design_effect=1.2)
    with pytest.raises(ValueError, match="exactly one of `sizes` and `tasks_per_cluster`"):
        cluster_design([2, 2], tasks_per_cluster=2, icc=0.1)
    with pytest.raises(ValueError, match="`sizes` must be"):
        cluster_design([2, 0, 3], icc=0.1)
    with pytest.raises(ValueError, match="`tasks_per_cluster` must be an integer"):
        cluster_design(tasks_per_cluster=2.5, icc=0.1)
    with pytest.raises(ValueError, match="fewer than 2 clusters"):
        paired_power(0.1, 4, sd_diff=0.3, clusters=cluster_design(tasks_per_cluster=4, icc=0.1))
    with pytest.raises(TypeError, match="`clusters` must be a ClusterDesign"):
        paired_power(0.1, 4, sd_diff=0.3, clusters=2.0)
