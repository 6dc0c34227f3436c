"""Runs-vs-tasks allocation with tasks in clusters: brute-force integer searches, a grid search
of the continuous optimum, a seeded simulation of the mean paired difference, and METR.
"""

import math
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import cluster_design
from hierbench.freq import optimal_allocation
from hierbench.freq import optimal_runs
from hierbench.freq import variance_components


def _var(s2, m, m_star, R, K):
    """Var of a pair's mean difference over K clusters (mean size m, size-weighted m*), by hand."""
    s_ac, s_at, s_e = s2
    return (2 * s_ac * m_star + 2 * s_at + 2 * s_e / R) / (K * m)


def _brute(B, c_cl, c_t, c_r, s2, sizes, k_min=2):
    """Smallest variance over every affordable (m, R), K = floor(B / cost of a cluster) >= k_min."""
    best = (math.inf,)
    for m, m_star in sizes:
        for R in range(1, int(B / (2 * m * c_r)) + 2):
            K = B // (c_cl + m * c_t + m * R * c_r)
            if K >= k_min:
                best = min(best, (_var(s2, m, m_star, R, K), m, R, K))
    return best


def test_continuous_optimum_against_a_grid_search():
    s2, c_cl, c_t, c_r = (0.012, 0.03, 0.15), 40.0, 8.0, 1.0
    # sizes fixed (mean 3, m* = 11/3 for sizes 1, 3, 5): minimise Var x cost per task over a fine grid of R
    cd = cluster_design([1, 3, 5], sigma2=s2)
    R = np.linspace(0.05, 60, 1_200_001)
    per_task = (2 * s2[0] * 35 / 9 + 2 * s2[1] + 2 * s2[2] / R) * (c_cl / 3 + c_t + R * c_r)
    r_fixed = optimal_runs(cost_task=c_t, cost_run=c_r, clusters=cd, cost_cluster=c_cl)
    assert r_fixed == pytest.approx(R[np.argmin(per_task)], abs=1e-4)
    # sizes chosen: Var x budget over a (m, R) grid; R* is the task plan's with the within-cluster
    # agent x task part alone, whatever s_c and c_cluster
    m = np.linspace(0.2, 30, 1491)[:, None]
    R = np.linspace(0.2, 30, 1491)[None, :]
    vb = (2 * s2[0] + (2 * s2[1] + 2 * s2[2] / R) / m) * (c_cl + m * c_t + m * R * c_r)
    i, j = np.unravel_index(np.argmin(vb), vb.shape)
    r_free = optimal_runs(cost_task=c_t, cost_run=c_r, clusters=cd, cost_cluster=c_cl,
                          choose_cluster_size=True)
    assert r_free == pytest.approx(float(R[0, j]), abs=0.02)
    assert r_free == pytest.approx(optimal_runs(cost_task=c_t, cost_run=c_r, sigma2_interaction=s2[1],
                                                sigma2_residual=s2[2]), rel=1e-14)
    a = optimal_allocation(1e6, cost_task=c_t, cost_run=c_r, clusters=cd, cost_cluster=c_cl,
                           choose_cluster_size=True)
    assert float(a.m_star) == pytest.approx(float(m[i, 0]), abs=0.02)
    # with the sizes kept and free clusters, the clusters' variance lowers R* (3.96 against 6.32)
    assert optimal_runs(cost_task=c_t, cost_run=c_r, clusters=cd) < r_free - 2


def test_integer_allocation_against_brute_force():
    """Every affordable plan enumerated, at the default floor of 6 clusters (the paired test is over
    clusters: 2^(1 - K) <= 0.05) and at min_clusters=2.
    """
    rng = np.random.default_rng(11)
    n_checked = 0
    for _ in range(60):
        B, c_cl, c_t, c_r = rng.uniform(60, 1500), rng.uniform(0, 40), rng.uniform(0, 15), rng.uniform(0.3, 3)
        s2 = (rng.uniform(0, 0.03) * (rng.random() > 0.15), rng.uniform(0, 0.05), rng.uniform(0.01, 0.4))
        for k_min, floor in ((6, {}), (2, {"min_clusters": 2})):
            n_checked += _check_against_brute(B, (c_cl, c_t, c_r), s2, k_min, floor)
    assert n_checked > 250


def _check_against_brute(B, costs, s2, k_min, floor) -> int:
    """One budget's plans (sizes fixed two ways, then chosen) against :func:`_brute`; the plans checked."""
    c_cl, c_t, c_r = costs
    n_checked = 0
    # sizes fixed: equal clusters of 3, or sizes 1 and 4 (mean 2.5, m* = 17/5) as a template
    for sizes, mm in (({"tasks_per_cluster": 3}, (3.0, 3.0)), ({"sizes": [1, 4]}, (2.5, 3.4))):
        cd = cluster_design(**sizes, sigma2=s2, template="sizes" in sizes)
        want = _brute(B, c_cl, c_t, c_r, s2, [mm], k_min)
        if not math.isfinite(want[0]):
            with pytest.raises(ValueError, match=rf"`budget`.*cannot pay for {k_min} clusters"):
                optimal_allocation(B, cost_task=c_t, cost_run=c_r, clusters=cd, cost_cluster=c_cl, **floor)
            continue
        got = optimal_allocation(B, cost_task=c_t, cost_run=c_r, clusters=cd, cost_cluster=c_cl, **floor)
        assert float(got.var_mean_diff) == pytest.approx(want[0], rel=1e-12)
        assert (int(got.n_runs), int(got.n_clusters)) == (want[2], want[3])
        assert float(got.cost) <= B * (1 + 1e-12) and got.attrs["unit"] == "clusters"
        assert got.attrs["min_clusters"] == k_min
        n_checked += 1
    # sizes chosen: every m from 1 to the most k_min clusters allow
    cd = cluster_design(tasks_per_cluster=1, sigma2=s2)
    m_max = int((B / k_min - c_cl) // (c_t + c_r))
    if m_max < 1:
        return n_checked
    want = _brute(B, c_cl, c_t, c_r, s2, [(m, m) for m in range(1, m_max + 1)], k_min)
    got = optimal_allocation(B, cost_task=c_t, cost_run=c_r, clusters=cd, cost_cluster=c_cl,
                             choose_cluster_size=True, **floor)
    assert float(got.var_mean_diff) == pytest.approx(want[0], rel=1e-12)
    assert int(got.n_tasks) == int(got.n_clusters) * int(got.tasks_per_cluster) and int(got.n_clusters) >= k_min
    assert float(got.cost) <= B * (1 + 1e-12)
    return n_checked + 1


def test_a_plan_of_few_clusters_is_floored_and_says_so():
    """s_c near 0 and a price on clusters: the variance alone buys 2 clusters of 60 tasks, a paired test
    over 2 clusters; the floor takes 6 (by enumeration, the best plan of 6 or more) and names the other.
    """
    s2, B, c_cl, c_t, c_r = (1e-6, 0.03, 0.06), 2000.0, 100.0, 10.0, 1.0
    cd = cluster_design(tasks_per_cluster=1, sigma2=s2)
    free = optimal_allocation(B, cost_task=c_t, cost_run=c_r, clusters=cd, cost_cluster=c_cl,
                              choose_cluster_size=True, min_clusters=2)
    assert int(free.n_clusters) == 2
    got = optimal_allocation(B, cost_task=c_t, cost_run=c_r, clusters=cd, cost_cluster=c_cl, choose_cluster_size=True)
    m_max = int((B / 6 - c_cl) // (c_t + c_r))
    want = _brute(B, c_cl, c_t, c_r, s2, [(m, m) for m in range(1, m_max + 1)], 6)
    assert float(got.var_mean_diff) == pytest.approx(want[0], rel=1e-12) and int(got.n_clusters) == want[3] == 6
    assert got.attrs["floor_binding"] == f"without it: 2 clusters x {int(free.n_runs)} runs"
    assert got.attrs["min_clusters_rule"].startswith("at least 6 clusters: the fewest whose exact sign-flip test")
    assert optimal_allocation(B, cost_task=c_t, cost_run=c_r, clusters=cd, cost_cluster=c_cl, choose_cluster_size=True,
                              alpha=0.01).attrs["min_clusters"] == 8  # 2^(1 - 8) = 0.0078 <= 0.01 < 2^(1 - 7)
    with pytest.raises(ValueError, match=r"cannot pay for 6 clusters.*pass min_clusters= explicitly"):
        optimal_allocation(60.0, cost_task=c_t, cost_run=c_r, clusters=cd, cost_cluster=0.0, choose_cluster_size=True)
    with pytest.raises(ValueError, match=r"`min_clusters` \(4\) sets the floor of a plan of clusters"):
        optimal_allocation(B, cost_task=c_t, cost_run=c_r, sigma2_interaction=0.03, sigma2_residual=0.06, min_clusters=4)


def test_icc_only_plans_runs_as_independent_tasks_and_counts_clusters():
    # a fixed design effect multiplies both parts of the per-task variance: R* is the task plan's,
    # with the cost of a cluster spread over its m tasks; the tasks per cluster cannot be chosen
    s_mt, s_e, c_t, c_r = 0.02, 0.2, 10.0, 1.0
    cd = cluster_design(tasks_per_cluster=4, icc=0.25)  # DEFF = 1.75
    assert optimal_runs(cost_task=c_t, cost_run=c_r, sigma2_interaction=s_mt, sigma2_residual=s_e,
                        clusters=cd) == pytest.approx(math.sqrt(s_e * c_t / (s_mt * c_r)), rel=1e-14)
    assert optimal_runs(cost_task=c_t, cost_run=c_r, sigma2_interaction=s_mt, sigma2_residual=s_e,
                        clusters=cd, cost_cluster=20.0) == pytest.approx(math.sqrt(s_e * 15 / s_mt), rel=1e-14)
    B = 2000.0
    got = optimal_allocation(B, cost_task=c_t, cost_run=c_r, sigma2_interaction=s_mt, sigma2_residual=s_e,
                             clusters=cd)
    best = min(((2 * s_mt + 2 * s_e / R) * 1.75 / (4 * (B // (4 * (c_t + R * c_r)))), R)
               for R in range(1, 200) if B // (4 * (c_t + R * c_r)) >= 2)
    assert float(got.var_mean_diff) == pytest.approx(best[0], rel=1e-12) and int(got.n_runs) == best[1]
    assert float(got.design_effect) == 1.75 and "given ICC" in got.attrs["design_effect_source"]
    with pytest.raises(ValueError, match="`choose_cluster_size=True` needs the agent x cluster variance"):
        optimal_allocation(B, cost_task=c_t, cost_run=c_r, sigma2_interaction=s_mt, sigma2_residual=s_e,
                           clusters=cd, cost_cluster=5.0, choose_cluster_size=True)


@pytest.mark.parametrize("choose", [False, True])
def test_variance_at_the_allocation_matches_a_simulation(choose):
    # two agents, y = agent x cluster + agent x task + run noise (normal), K clusters of m tasks,
    # R runs: the variance over 20,000 seeded replicates of the mean paired difference against
    # var_mean_diff; Monte Carlo tolerance 4 SE of a normal sample variance, var sqrt(2 / (n - 1))
    s2, n_sim = (0.01, 0.02, 0.12), 20_000
    cd = cluster_design(tasks_per_cluster=3, sigma2=s2)
    a = optimal_allocation(400.0, cost_task=4.0, cost_run=1.0, clusters=cd, cost_cluster=12.0,
                           choose_cluster_size=choose)
    K, m, R = int(a.n_clusters), int(a.tasks_per_cluster), int(a.n_runs)
    rng = np.random.default_rng(314 + choose)
    y = (np.repeat(rng.normal(0, math.sqrt(s2[0]), (n_sim, 2, K)), m, axis=2)
         + rng.normal(0, math.sqrt(s2[1]), (n_sim, 2, K * m))
         + rng.normal(0, math.sqrt(s2[2]), (n_sim, 2, K * m, R)).mean(-1))
    dbar = (y[:, 0] - y[:, 1]).mean(-1)
    want = float(a.var_mean_diff)
    assert want == pytest.approx(_var(s2, m, m, R, K), rel=1e-12)
    assert abs(dbar.var(ddof=1) - want) <= 4 * want * math.sqrt(2 / (n_sim - 1)), (dbar.var(ddof=1), want)


def test_unequal_sizes_variance_by_covariance_matrix():
    # template sizes 1 and 4: at a budget whose K is even, K/2 copies of the template have the
    # variance w' S w of the task-weighted mean (S: the per-task differences' covariance)
    s2 = (0.015, 0.025, 0.1)
    cd = cluster_design([1, 4], sigma2=s2, template=True)
    a = next(a for B in range(300, 400) if int((a := optimal_allocation(
        float(B), cost_task=5.0, cost_run=1.0, clusters=cd)).n_clusters) % 2 == 0)
    K, R = int(a.n_clusters), int(a.n_runs)
    g = np.repeat(np.arange(K), [1, 4] * (K // 2))
    S = 2 * s2[0] * (g[:, None] == g[None, :]) + (2 * s2[1] + 2 * s2[2] / R) * np.eye(g.size)
    w = np.full(g.size, 1 / g.size)
    assert float(a.var_mean_diff) == pytest.approx(float(w @ S @ w), rel=1e-12)
    assert int(a.n_tasks) == g.size


def test_inconsistent_inputs_are_refused_by_name():
    kw = {"sigma2_interaction": 0.02, "sigma2_residual": 0.2}
    cd = cluster_design(tasks_per_cluster=3, sigma2=(0.01, 0.02, 0.2))
    with pytest.raises(ValueError, match="`cost_cluster` plans clusters: give `clusters`"):
        optimal_runs(cost_task=1.0, cost_run=1.0, cost_cluster=3.0, **kw)
    with pytest.raises(ValueError, match="`choose_cluster_size=True` plans clusters"):
        optimal_allocation(100.0, cost_task=1.0, cost_run=1.0, choose_cluster_size=True, **kw)
    with pytest.raises(ValueError, match="`choose_cluster_size=True` needs `cost_cluster`"):
        optimal_allocation(100.0, cost_task=1.0, cost_run=1.0, clusters=cd, choose_cluster_size=True)
    with pytest.raises(TypeError, match="`choose_cluster_size` must be True or False"):
        optimal_runs(cost_task=1.0, cost_run=1.0, clusters=cd, choose_cluster_size="yes")
    with pytest.raises(TypeError, match="`clusters` must be a ClusterDesign"):
        optimal_allocation(100.0, cost_task=1.0, cost_run=1.0, clusters=3, **kw)
    with pytest.raises(ValueError, match="carries the variances it plans with"):
        optimal_allocation(100.0, cost_task=1.0, cost_run=1.0, clusters=cd, **kw)
    with pytest.raises(ValueError, match="`cost_cluster` must be >= 0"):
        optimal_runs(cost_task=1.0, cost_run=1.0, clusters=cd, cost_cluster=-1.0)
    with pytest.raises(ValueError, match=r"`budget` 20.0 cannot pay for 2 clusters of 3 tasks"):
        optimal_allocation(20.0, cost_task=3.0, cost_run=1.0, clusters=cd)
    with pytest.raises(ValueError, match="`sigma2` must be three numbers"):
        cluster_design(tasks_per_cluster=3, sigma2=(0.1, 0.2))
    with pytest.raises(ValueError, match="`sigma2` must be finite and >= 0"):
        cluster_design(tasks_per_cluster=3, sigma2=(0.1, -0.2, 0.1))


@pytest.mark.filterwarnings("ignore::hierbench.freq.NegativeVarianceComponentWarning")
def test_metr_allocation_with_and_without_families(metr_eval):
    # METR: 83 tasks in 36 families; REML fits with and without the family facet. The clustered
    # plan (families as in METR, free) against a brute-force search over R of the variance by hand,
    # and the task plan's allocation is worse under the clustered variance
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(metr_eval, design="run:(agent*(task:cluster))", method="reml")
        vc0 = variance_components(metr_eval.drop_vars("cluster"), design="run:(agent*task)", method="reml")
    cd = cluster_design(components=vc)
    c = vc.components
    s2 = tuple(float(c.sel(component=n)) for n in ("agent:cluster", "agent:task:cluster", "residual"))
    m, m_star = 83 / 36, 305 / 83  # family sizes 1 (x19), 2 (x5), 3 (x5), 5 (x4), 6 (x2), 7
    B, c_t, c_r = 5000.0, 10.0, 1.0
    got = optimal_allocation(B, cost_task=c_t, cost_run=c_r, clusters=cd)
    want = _brute(B, 0.0, c_t, c_r, s2, [(m, m_star)])
    assert (float(got.var_mean_diff), int(got.n_runs), int(got.n_clusters)) == pytest.approx((want[0], want[2], want[3]), rel=1e-12)
    plain = optimal_allocation(B, cost_task=c_t, cost_run=c_r, components=vc0)
    R0, T0 = int(plain.n_runs), int(plain.n_tasks)
    assert _var(s2, m, m_star, R0, T0 / m) > float(got.var_mean_diff)
    assert isinstance(got, xr.Dataset) and got.attrs["unit"] == "clusters"
