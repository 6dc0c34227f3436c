"""Planning from an agent x task component at 0, and the floor on a paired plan's tasks (audit s75 A, 1 and 4).

A G-study of a small pilot often puts agent x task at 0 (a negative ANOVA estimate truncated,
or REML at the boundary, where the optimiser stops at 1e-17). The planners then had
``R* = inf`` and bought 2 tasks x 490 runs with no word, a plan whose paired test can never
reject (the sign-flip floor 2^(1 - 2) = 0.5). Expected values here come from the variance of
the mean paired difference written out, ``(2 s_mt + 2 s_e / R) / T``, searched by brute force,
and from enumerating every sign pattern of a sign-flip test.
"""

import itertools
import math
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import NegativeVarianceComponentWarning
from hierbench.freq import cluster_design
from hierbench.freq import optimal_allocation
from hierbench.freq import optimal_runs
from hierbench.freq import variance_components
from hierbench.testing import simulate_eval


def _var(s_mt, s_e, T, R):
    """Var of the mean paired difference over T tasks of R runs, written out."""
    return (2 * s_mt + 2 * s_e / R) / T


def _brute(B, ct, cr, s_mt, s_e, t_min):
    """The best (variance, T, R) over every R, with the most tasks the budget pays for (>= t_min)."""
    best = None
    for R in range(1, int(B / cr) + 2):
        T = int(B // (ct + R * cr))
        if T >= t_min and (best is None or _var(s_mt, s_e, T, R) < best[0] * (1 - 1e-12)):
            best = (_var(s_mt, s_e, T, R), T, R)
    return best


def _quiet_vc(ds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NegativeVarianceComponentWarning)
        return variance_components(ds)


@pytest.fixture(scope="module")
def truncated():
    """3 agents x 12 tasks x 3 runs whose ANOVA agent x task is negative (truncated at 0)."""
    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, rng=0)
    vc = _quiet_vc(ds)
    assert float(vc.components_raw.sel(component="agent:task")) < 0  # the case this file is about
    return vc


def _smallest_exact_p(T):
    """The exact two-sided sign-flip p-value of T equal positive differences: every pattern enumerated."""
    d = np.ones(T)
    obs = abs(d.sum())
    pats = np.array(list(itertools.product((-1.0, 1.0), repeat=T)))
    return float(np.mean(np.abs(pats @ d) >= obs - 1e-12))


@pytest.mark.parametrize(("alpha", "want"), [(0.05, 6), (0.01, 8), (0.1, 5)])
def test_the_floor_is_the_fewest_tasks_a_sign_flip_test_can_reject_with(alpha, want):
    # the smallest p-value by enumeration of all 2^T patterns: 2^(1 - T)
    need = next(T for T in range(2, 11) if _smallest_exact_p(T) <= alpha)
    assert need == want
    a = optimal_allocation(1e4, cost_task=1.0, cost_run=1.0, sigma2_interaction=0.0, sigma2_residual=0.3,
                           alpha=alpha)
    assert a.attrs["min_tasks"] == need and int(a.n_tasks) >= need
    assert f"at least {need} tasks" in a.attrs["min_tasks_rule"]


def test_no_interaction_plans_at_least_six_tasks_and_says_without_it_two():
    B, ct, cr, s_e = 1000.0, 10.0, 1.0, 0.3
    a = optimal_allocation(B, cost_task=ct, cost_run=cr, sigma2_interaction=0.0, sigma2_residual=s_e)
    v, T, R = _brute(B, ct, cr, 0.0, s_e, 6)
    assert (int(a.n_tasks), int(a.n_runs)) == (T, R) == (6, 156)
    assert float(a.var_mean_diff) == pytest.approx(v, rel=1e-12)
    assert a.attrs["floor_binding"] == "without it: 2 tasks x 490 runs"
    # asked for explicitly, fewer tasks are planned: the plan the floor replaced
    two = optimal_allocation(B, cost_task=ct, cost_run=cr, sigma2_interaction=0.0, sigma2_residual=s_e,
                             min_tasks=2)
    assert (int(two.n_tasks), int(two.n_runs)) == _brute(B, ct, cr, 0.0, s_e, 2)[1:] == (2, 490)
    assert "as asked (min_tasks)" in two.attrs["min_tasks_rule"] and two.attrs["floor_binding"] == ""
    with pytest.raises(ValueError, match=r"pays for 5 tasks with one run each.*at least 6 tasks.*min_tasks="):
        optimal_allocation(60.0, cost_task=ct, cost_run=cr, sigma2_interaction=0.0, sigma2_residual=s_e)
    with pytest.raises(ValueError, match=r"`min_tasks` must be"):
        optimal_allocation(B, cost_task=ct, cost_run=cr, sigma2_interaction=0.0, sigma2_residual=s_e,
                           min_tasks=1)


def test_the_plan_is_the_brute_force_optimum_among_plans_of_six_tasks_or_more():
    # binding or not: the floor leaves every plan of 6 or more tasks as the search found it
    rng = np.random.default_rng(5)
    for _ in range(40):
        B, ct, cr = rng.uniform(80, 1500), rng.uniform(0, 30), rng.uniform(0.5, 4)
        s_mt, s_e = rng.uniform(0, 0.01) * (rng.random() > 0.3), rng.uniform(0.01, 0.5)
        if B // (ct + cr) < 6:
            continue
        got = optimal_allocation(B, cost_task=ct, cost_run=cr, sigma2_interaction=s_mt, sigma2_residual=s_e)
        v = _brute(B, ct, cr, s_mt, s_e, 6)[0]
        assert float(got.var_mean_diff) == pytest.approx(v, rel=1e-12)
        assert int(got.n_tasks) >= 6 and float(got.cost) <= B


def test_components_at_zero_warn_with_the_upper_bound_and_the_plan_there(truncated):
    up = float(truncated.ci.sel(component="agent:task", ci_bound="upper"))
    s_e = float(truncated.components.sel(component="residual"))
    with pytest.warns(NegativeVarianceComponentWarning, match=r"agent:task is estimated at 0 \(its ANOVA "
                      r"estimate -[0-9.]+ truncated\); its 95% upper bound is") as rec:
        a = optimal_allocation(1000.0, cost_task=10.0, cost_run=1.0, components=truncated)
    assert "not evidence of no agent x task variance" in str(rec[0].message)
    T, R = int(a.n_tasks), int(a.n_runs)
    assert (T, R) == _brute(1000.0, 10.0, 1.0, 0.0, s_e, 6)[1:]
    assert float(a.var_mean_diff_upper) == pytest.approx(_var(up, s_e, T, R), rel=1e-12)
    _, Tu, Ru = _brute(1000.0, 10.0, 1.0, up, s_e, 6)
    assert a.attrs["plan_at_upper"].startswith(f"{Tu} tasks x {Ru} runs")
    assert a.attrs["sigma2_interaction_upper"] == pytest.approx(up, rel=1e-12)
    assert f"{Tu} tasks x {Ru} runs" in a.attrs["interaction_at_zero"]
    # optimal_runs: inf as before (the components are not replaced), R* at the bound in the warning
    with pytest.warns(NegativeVarianceComponentWarning, match=r"at that bound R\* = ([0-9.]+)") as rec:
        r = optimal_runs(cost_task=10.0, cost_run=1.0, components=truncated)
    assert r == math.inf
    said = float(str(rec[0].message).rsplit("R* = ", 1)[1])
    assert said == pytest.approx(math.sqrt(s_e * 10.0 / up), rel=1e-3)


def test_a_positive_interaction_plans_as_before_without_a_warning():
    # the docstring's example: R* = sqrt(0.2 x 10 / 0.02) = 10, 1000 / (10 + 10) = 50 tasks
    with warnings.catch_warnings():
        warnings.simplefilter("error", NegativeVarianceComponentWarning)
        a = optimal_allocation(1000.0, cost_task=10.0, cost_run=1.0, sigma2_interaction=0.02,
                               sigma2_residual=0.2)
    assert (int(a.n_tasks), int(a.n_runs)) == (50, 10) and a.attrs["floor_binding"] == ""
    assert float(a.var_mean_diff) == pytest.approx(_var(0.02, 0.2, 50, 10), rel=1e-12)
    assert "var_mean_diff_upper" not in a


def test_the_grid_plan_shares_the_floor_and_the_warning(truncated):
    s_e = float(truncated.components.sel(component="residual"))
    M, ct, cr, B = 3, 10.0, 1.0, 1000.0  # the grid costs every agent's runs: T c_task + M T R c_run
    with pytest.warns(NegativeVarianceComponentWarning, match=r"agent:task is estimated at 0"):
        g = truncated.optimal_allocation(B, {"task": ct, "run": cr}, max_sizes={"task": 48, "run": 400})
    best = min((_var(0.0, s_e, T, R), T, R) for T in range(6, 49) for R in range(1, 401)
               if T * ct + M * T * R * cr <= B)
    assert g.attrs["optimum"] == {"task": best[1], "run": best[2]}
    assert g.attrs["optimum_value"] == pytest.approx(best[0], rel=1e-12)
    assert g.attrs["floor_binding"].startswith("without it: task = ")
    assert int(g.attrs["floor_binding"].split("task = ")[1].split(",")[0]) < 6


def test_clusters_refuse_the_task_floor():
    cd = cluster_design([2] * 10, sigma2=(0.01, 0.02, 0.2))
    with pytest.raises(ValueError, match=r"`min_tasks` sets the floor of a plan of independent tasks.*give `min_clusters`"):
        optimal_allocation(1000.0, cost_task=10.0, cost_run=1.0, clusters=cd, min_tasks=2)


def test_a_reml_estimate_at_the_boundary_is_exactly_zero():
    # unequal runs (REML); with this seed the fit stops at agent:task 5e-17, which the rule calls 0
    rng = np.random.default_rng(55)
    y = (rng.random((3, 8, 3)) < 0.5).astype(float)
    y[0, :3, 2] = np.nan
    with pytest.warns(NegativeVarianceComponentWarning, match=r"boundary 0: .*agent:task.*held at exactly 0 in "
                      r"the result \(the fit stopped at agent:task [0-9.e-]+\)"):
        vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    assert vc.method == "reml"
    assert float(vc.estimate.sel(component="agent:task")) == 0.0
    assert float(vc.components_raw.sel(component="agent:task")) == 0.0
    assert float(vc.ci.sel(component="agent:task", ci_bound="lower")) == 0.0
    assert float(vc.to_frame().loc["agent:task", "estimate"]) == 0.0
    # R* = sqrt(s_e c_task / (s_mt c_run)) at s_mt = 0: inf, not 4e8
    with pytest.warns(NegativeVarianceComponentWarning, match="REML at the boundary 0"):
        assert optimal_runs(cost_task=10.0, cost_run=1.0, components=vc) == math.inf


def test_the_extrapolation_warning_speaks_of_the_design_the_floor_returns():
    """4 agents x 12 tasks x 2 runs (24 runs a pair of agents fitted per agent). Tasks at 300, runs at 1:
    without the floor the grid's optimum is 2 tasks of many runs, over 10x the 24 runs fitted; the floor
    returns 6 tasks of few runs, within 10x, and the warning is said of that design (it was said of the
    one replaced). The rule checked by hand: warned exactly when tasks x runs of the design returned
    exceed 10 x 24.
    """
    from hierbench.freq import ExtrapolationWarning

    rng = np.random.default_rng(0)
    y = rng.normal(0, 0.3, (4, 1, 1)) + rng.normal(0, 0.5, (1, 12, 1)) + rng.normal(0, 1, (4, 12, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    box = {"task": 50, "run": 200}
    for min_tasks in (None, 2):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            got = vc.optimal_allocation(2000.0, {"task": 300.0, "run": 1.0}, max_sizes=box, min_tasks=min_tasks)
        opt = got.attrs["optimum"]
        far = [w for w in rec if issubclass(w.category, ExtrapolationWarning)]
        assert bool(far) == (opt["task"] * opt["run"] > 10 * 24), (opt, [str(w.message) for w in far])
        if far:
            assert f"{opt['task'] * opt['run']} levels of 'run'" in str(far[0].message)
            assert far[0].filename == __file__  # the warning points at the caller
    assert got.attrs["optimum"]["task"] < 6 and far  # min_tasks=2: the unfloored design, warned
