"""Planners, budgets, intervals, replay and banks of hierbench.design."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from scipy.stats import chisquare
from scipy.stats import hypergeom
from statsmodels.stats.proportion import proportion_confint

from hierbench.data import load_tau_bench_airline
from hierbench.design import BudgetPlan
from hierbench.design import BudgetWarning
from hierbench.design import _kernels as K
from hierbench.design import bank_from_eval
from hierbench.design import budget_interval
from hierbench.design import plan_joint
from hierbench.design import plan_uniform
from hierbench.design import replay
from hierbench.design import simulate_stratified_bank


# ---------------------------------------------------------------- budgets
@settings(max_examples=60, deadline=None)
@given(
    M=st.integers(1, 30),
    L=st.integers(1, 6),
    extra=st.integers(0, 200),
    seed=st.integers(0, 2**32 - 1),
)
def test_uniform_plan_never_over_budget(M, L, extra, seed):
    B = extra % (M * L + 5)
    plan = plan_uniform(M, L, B, rng=seed)
    assert plan.slots.dtype == bool  # a slot is bought at most once by construction
    assert plan.n_labels == min(B, M * L) <= B


@settings(max_examples=60, deadline=None)
@given(M=st.integers(1, 30), L=st.integers(2, 6), frac=st.floats(0, 1), seed=st.integers(0, 2**32 - 1))
def test_joint_plan_never_over_budget(M, L, frac, seed):
    t = round(frac * M)
    plan = plan_joint(M, L, M + t, rng=seed)
    per_task = plan.slots.sum("run").values
    assert plan.n_labels == M + t
    assert plan.n_audit == t
    np.testing.assert_array_equal(per_task, 1 + plan.audited.values)  # 1 or 2 distinct slots per task
    assert plan.slots.values[np.arange(M), plan.first_run.values].all()


def test_replay_never_over_budget_and_spends_it():
    bank = simulate_stratified_bank(60, 4, rng=3)
    out = replay(bank, ["uniform", "joint", "joint_split", "uniform_bayes", "joint_bayes"], [60, 75, 120], n_rep=50, rng=4)
    np.testing.assert_array_equal(out.max_labels.values, np.broadcast_to([60, 75, 120], (5, 3)))
    np.testing.assert_array_equal(out.labels_spent.values, out.max_labels.values)


@pytest.mark.slow
def test_joint_plan_law_is_uniform():
    # M = 2, L = 3, t = 1: 2 subsets x 3^2 first paths x 2 second paths = 36 equally likely plans
    gen = np.random.default_rng(11)
    keys = []
    for _ in range(1800):
        p = plan_joint(2, 3, 3, rng=gen)
        keys.append(tuple(p.slots.values.ravel()) + tuple(p.first_run.values))
    _, counts = np.unique(np.array(keys), axis=0, return_counts=True)
    assert counts.size == 36
    assert chisquare(counts).pvalue > 1e-3


@pytest.mark.slow
def test_uniform_plan_law_is_uniform():
    gen = np.random.default_rng(12)
    keys = [tuple(plan_uniform(2, 3, 2, rng=gen).slots.values.ravel()) for _ in range(1500)]
    _, counts = np.unique(np.array(keys), axis=0, return_counts=True)
    assert counts.size == 15  # C(6, 2)
    assert chisquare(counts).pvalue > 1e-3


# ---------------------------------------------------------------- kernels vs references
@pytest.mark.parametrize(("N", "m", "alpha"), [(12, 5, 0.05), (20, 7, 0.1), (30, 29, 0.2), (40, 13, 0.05)])
def test_hypergeom_table_matches_scipy_inversion(N, m, alpha):
    lo, hi = K.hypergeom_table(N, m, alpha)
    H = np.arange(N + 1)
    for s in range(m + 1):
        ok = (hypergeom.sf(s - 1, N, H, m) > alpha / 2) & (hypergeom.cdf(s, N, H, m) > alpha / 2)
        ok &= (H >= s) & (H <= N - m + s)
        assert lo[s] == H[ok].min() and hi[s] == H[ok].max()


def test_wilson_matches_statsmodels():
    k = np.array([0, 3, 50, 97, 100])
    lo, hi = K.wilson(k, np.full(5, 100), 0.95)
    rl, rh = proportion_confint(k, 100, alpha=0.05, method="wilson")
    np.testing.assert_allclose(lo, rl, atol=1e-12)
    np.testing.assert_allclose(hi, rh, atol=1e-12)


def test_kl_upper_solves_the_kl_equation():
    X = np.array([0, 3, 10])
    d = K.kl_upper(X, 20, np.log(1 / 0.025))
    np.testing.assert_allclose(20 * K.kl_bernoulli(X / 20, d), np.log(40), rtol=1e-9)
    np.testing.assert_allclose(d[0], 1 - 0.025 ** (1 / 20), rtol=1e-9)  # closed form at X = 0


# ---------------------------------------------------------------- rates
def test_joint_width_rates_on_pure_cohorts():
    """Pure cohort (X = 0): t = M/4 gives width ~ 1/M, fixed t ~ 1/sqrt(M t), t = 0 ~ 1/sqrt(M) (spec's rates)."""
    widths = {}
    for M in (200, 800):
        for t in (0, M // 4):
            rad = K.joint_radius_table(M, 5, t, 0.05, "mixture")[0] / M
            widths[(M, t)] = 2 * rad
    assert 0.2 < widths[(800, 200)] / widths[(200, 50)] < 0.3  # 1/4 for order 1/M
    assert 0.45 < widths[(800, 0)] / widths[(200, 0)] < 0.55  # 1/2 for order 1/sqrt(M)
    # t fixed and small: order 1/sqrt(M t)
    w = {(M, t): 2 * K.joint_radius_table(M, 5, t, 0.05, "mixture")[0] / M for M, t in [(800, 8), (3200, 8), (3200, 32)]}
    assert 0.45 < w[(3200, 8)] / w[(800, 8)] < 0.55
    assert 0.45 < w[(3200, 32)] / w[(3200, 8)] < 0.55


# ---------------------------------------------------------------- replay matches exact enumeration
def _exact_joint(hs, L, t, prob):
    M = len(hs)
    Y = np.array([[1] * h + [0] * (L - h) for h in hs], float)
    bank = xr.DataArray(Y, dims=("task", "run"))
    rows = []
    for S in itertools.combinations(range(M), t):
        for first in itertools.product(range(L), repeat=M):
            for sec in itertools.product(*[[r for r in range(L) if r != first[i]] for i in S]):
                slots = np.zeros((M, L), bool)
                slots[np.arange(M), first] = True
                for i, r in zip(S, sec, strict=True):
                    slots[i, r] = True
                aud = np.isin(np.arange(M), S)
                c = {"task": np.arange(M)}
                plan = BudgetPlan(
                    "joint",
                    M + t,
                    xr.DataArray(slots, dims=("task", "run")),
                    xr.DataArray(aud, dims="task", coords=c),
                    xr.DataArray(np.array(first), dims="task", coords=c),
                )
                r = budget_interval(plan, bank, prob=prob)
                lo, hi = r.interval.values
                rows.append((hi - lo, lo <= Y.mean() <= hi))
    rows = np.array(rows, float)
    return rows[:, 0].mean(), rows[:, 1].mean()


@pytest.mark.slow
def test_replay_matches_exact_expectation():
    hs, L, t = (0, 1, 2), 3, 1
    w_exact, cov_exact = _exact_joint(hs, L, t, 0.8)
    bank = xr.DataArray(np.array([[1] * h + [0] * (L - h) for h in hs], float), dims=("task", "run"))
    out = replay(bank, ["joint"], [4], n_rep=20000, rng=5, prob=0.8)
    w = float(out.mean_width.squeeze())
    se = float(out.width_se.squeeze())
    assert abs(w - w_exact) < 4 * se
    cov = float(out.coverage.squeeze())
    assert abs(cov - cov_exact) < 4 * np.sqrt(max(cov_exact * (1 - cov_exact), 1e-4) / 20000)


def test_replay_uniform_matches_hypergeometric_expectation():
    bank = simulate_stratified_bank(20, 3, pure_fraction=0.5, mean_disagreement=1 / 3, rng=6)
    N, H, m = 60, int(bank.sum()), 17
    lo, hi = K.hypergeom_table(N, m, 0.1)
    s = np.arange(m + 1)
    pmf = hypergeom.pmf(s, N, H, m)
    w_exact = float((pmf * (hi - lo) / N).sum())
    cov_exact = float((pmf * ((lo <= H) & (H <= hi))).sum())
    out = replay(bank, ["uniform"], [m], n_rep=20000, rng=7, prob=0.9)
    assert abs(float(out.mean_width.squeeze()) - w_exact) < 4 * float(out.width_se.squeeze())
    assert abs(float(out.coverage.squeeze()) - cov_exact) < 4 * np.sqrt(cov_exact * (1 - cov_exact) / 20000)
    assert abs(float(out.bias.squeeze())) < 4 * np.sqrt(float(out.mse.squeeze()) / 20000)


# ---------------------------------------------------------------- width on the stratified cohort
@pytest.mark.slow
def test_joint_beats_uniform_on_stratified_cohort():
    """M = 880, L = 5, ~90% pure, mean pair disagreement 0.05, t = M/4: J/U width <= 0.80 (goal 0.70)."""
    bank = simulate_stratified_bank(880, 5, pure_fraction=0.9, mean_disagreement=0.05, rng=2026)
    out = replay(bank, ["uniform", "joint", "joint_split"], [1100], n_rep=200, rng=8)
    w = out.mean_width.squeeze()
    ratio = float(w.sel(design="joint") / w.sel(design="uniform"))
    # Monte Carlo error of the ratio is about 1% here (width_se / width < 1% for each)
    assert float((out.width_se / out.mean_width).max()) < 0.01
    assert ratio <= 0.70
    assert float(w.sel(design="joint_split") / w.sel(design="uniform")) <= 0.90
    assert (out.coverage.sel(design=["joint", "joint_split"]) >= 0.95 - 4 * np.sqrt(0.05 * 0.95 / 200)).all()


def test_replay_output_contract():
    bank = simulate_stratified_bank(40, 4, rng=1)
    out = replay(bank, ["uniform", "joint"], [40, 50, 80], n_rep=100, rng=2, prob=0.9)
    assert out.coverage_ci.dims == ("design", "budget", "ci_bound")
    assert list(out.ci_bound.values) == ["lower", "upper"]
    assert out.coverage_ci.attrs["ci_kind"] == "wilson" and out.coverage_ci.attrs["ci_prob"] == 0.95
    # the coverage interval is statsmodels' Wilson interval of the covered count over n_rep replays
    lo, hi = proportion_confint(np.rint(out.coverage.values * 100), 100, alpha=0.05, method="wilson")
    np.testing.assert_allclose(out.coverage_ci.sel(ci_bound="lower"), lo, rtol=1e-12)
    np.testing.assert_allclose(out.coverage_ci.sel(ci_bound="upper"), hi, rtol=1e-12)
    np.testing.assert_array_equal(out.n_audit.values, [0, 10, 40])
    assert set(out.data_vars) >= {"mean_width", "bias", "mse", "coverage", "coverage_ci", "labels_spent"}
    np.testing.assert_allclose(out.attrs["theta"], float(bank.mean()))


def test_replay_is_reproducible():
    bank = simulate_stratified_bank(40, 4, rng=1)
    a = replay(bank, ["uniform", "joint"], [50], n_rep=50, rng=9)
    b = replay(bank, ["uniform", "joint"], [50], n_rep=50, rng=9)
    xr.testing.assert_identical(a, b)


# ---------------------------------------------------------------- real banks
def test_tau_bench_bank_and_replay(shared_data):
    ds = load_tau_bench_airline(shared_data)
    agent = ds.agent.values[0]
    bank = bank_from_eval(ds, agent, 4)
    assert bank.shape == (50, 4)
    # published pass^1 for gpt-4o airline (tau-bench README line 18): 0.420
    assert abs(float(bank.mean()) - 0.420) < 0.0051
    out = replay(bank, ["uniform", "joint", "joint_split"], [50, 63, 100], n_rep=400, rng=10)
    tol = 4 * np.sqrt(0.05 * 0.95 / 400)
    assert (out.coverage >= 0.95 - tol).all()


def test_metr_banks_account_for_every_task(metr_eval):
    ds = metr_eval
    for agent in ds.agent.values[:3]:
        bank = bank_from_eval(ds, agent, 6)
        a = bank.attrs
        assert bank.sizes["task"] + a["n_tasks_dropped"] + a["n_tasks_never_run"] == ds.sizes["task"]
        runs = ds.score.sel(agent=agent).notnull().sum("run").values
        assert a["n_runs_dropped"] == int(runs[runs >= 6].sum() - 6 * (runs >= 6).sum())


def test_stratified_bank_hits_its_targets():
    bank = simulate_stratified_bank(880, 5, rng=0)
    assert abs(bank.attrs["pure_fraction"] - 0.9) < 1e-9
    h = bank.sum("run").values
    d = 2 * h * (5 - h) / 20
    np.testing.assert_allclose(d.mean(), 0.05, atol=1e-3)


def test_interval_has_house_attrs_and_extra_dims():
    rng = np.random.default_rng(0)
    bank = xr.DataArray(rng.integers(0, 2, (3, 12, 4)).astype(float), dims=("agent", "task", "run"),
                        coords={"agent": ["a", "b", "c"]})
    plan = plan_joint(12, 4, 15, rng=1)
    res = budget_interval(plan, bank, prob=0.9)
    assert res.interval.dims == ("agent", "ci_bound")
    assert res.interval.attrs["ci_prob"] == 0.9 and "design J" in res.interval.attrs["ci_detail"]
    assert res.feasible.dims == ("agent", "ci_bound") and res.feasible.attrs["ci_prob"] == 1.0
    ds = res.to_dataset()
    assert set(ds.data_vars) == {"estimate", "ci", "feasible", "n_labels", "disagreements"}
    single = budget_interval(plan, bank.sel(agent="b"), prob=0.9)
    np.testing.assert_allclose(single.interval.values, res.interval.sel(agent="b").values)
    assert plan.to_dataset().attrs["n_audit"] == 3


# ---------------------------------------------------------------- errors, pinned
def test_planner_errors():
    with pytest.raises(ValueError, match=r"`budget` must satisfy n_tasks <= budget <= 2 \* n_tasks .*got budget=25"):
        plan_joint(10, 3, 25)
    with pytest.raises(ValueError, match=r"`budget` must satisfy .*got budget=9"):
        plan_joint(10, 3, 9)
    with pytest.raises(ValueError, match=r"needs `runs` >= 2 planned runs; got 1"):
        plan_joint(10, 1, 12)
    with pytest.raises(ValueError, match=r"`budget` must be a non-negative integer number of labels; got -1"):
        plan_uniform(10, 3, -1)
    # audit E 6: NaN, inf and text named as `budget` (were: int(NaN) "cannot convert float NaN")
    for bad in (float("nan"), float("inf"), "12"):
        with pytest.raises(ValueError, match=r"`budget` must be a non-negative integer number of labels; got"):
            plan_uniform(10, 3, bad)
        with pytest.raises(ValueError, match=r"`budget` must be a non-negative integer number of labels; got"):
            plan_joint(10, 3, bad)
    with pytest.raises(ValueError, match=r"`tasks` must be a positive integer .*got 0"):
        plan_uniform(0, 3, 5)
    with pytest.raises(ValueError, match=r"`runs` labels must be unique"):
        plan_uniform(3, ["a", "a"], 2)


def test_interval_errors():
    plan = plan_joint(5, 3, 7, rng=0)
    y = xr.DataArray(np.ones((5, 3)), dims=("task", "run"))
    with pytest.raises(ValueError, match=r"`prob` must satisfy 0 < prob < 1; got prob=1.5"):
        budget_interval(plan, y, prob=1.5)
    with pytest.raises(ValueError, match=r"`method` for design 'joint' must be one of .*got 'exact'"):
        budget_interval(plan, y, method="exact")
    with pytest.raises(ValueError, match=r"planned slot\(s\) are NaN"):
        budget_interval(plan, y.where(~plan.slots.values))
    with pytest.raises(ValueError, match=r"must be binary \(0 or 1\) at the planned slots; got values \[0.5\]"):
        budget_interval(plan, y * 0.5)
    with pytest.raises(ValueError, match=r"dim 'task' has size 4 but the plan has 5"):
        budget_interval(plan, y.isel(task=slice(0, 4)))
    with pytest.raises(ValueError, match=r"dims 'task' and 'run'"):
        budget_interval(plan, y.rename(run="trial"))
    with pytest.raises(TypeError, match=r"`plan` must be a BudgetPlan"):
        budget_interval("joint", y)
    broken = BudgetPlan("joint", 7, plan.slots.copy(data=np.ones((5, 3), bool)), plan.audited, plan.first_run)
    with pytest.raises(ValueError, match=r"not a design-J plan: .*tasks at positions \[0, 1, 2, 3, 4\]"):
        budget_interval(broken, y)
    over = BudgetPlan("uniform", 3, plan.slots, plan.audited, plan.first_run)
    with pytest.raises(ValueError, match=r"`plan` buys 7 slots, above its budget 3"):
        budget_interval(over, y)


def test_zero_budget_warns_and_returns_nan():
    plan = plan_uniform(4, 3, 0, rng=0)
    with pytest.warns(BudgetWarning, match="budget 0"):
        res = budget_interval(plan, xr.DataArray(np.ones((4, 3)), dims=("task", "run")))
    assert np.isnan(float(res.estimate))
    np.testing.assert_array_equal(res.interval.values, [0.0, 1.0])


def test_replay_and_bank_errors(shared_data):
    bank = simulate_stratified_bank(20, 3, pure_fraction=0.5, mean_disagreement=1 / 3, rng=0)
    with pytest.raises(ValueError, match=r"unknown \['pooled'\]"):
        replay(bank, ["pooled"], [25])
    with pytest.raises(ValueError, match=r"20 <= B <= 40\); got \[41\]"):
        replay(bank, ["joint"], [41])
    holed = bank.copy()
    holed[0, 0] = np.nan
    with pytest.raises(ValueError, match=r"`bank` must be complete \(no NaN\); got 1 NaN"):
        replay(holed, ["uniform"], [5])
    with pytest.raises(ValueError, match=r"`bank` must be binary"):
        replay(bank * 0.5, ["uniform"], [5])
    with pytest.raises(ValueError, match=r"`n_rep` must be a positive integer; got 0"):
        replay(bank, ["uniform"], [5], n_rep=0)
    with pytest.raises(ValueError, match=r"must not repeat"):
        replay(bank, ["uniform", "uniform"], [5])
    with pytest.raises(ValueError, match=r"`mean_disagreement` must lie in \[0.04, 0.06\] .*got 0.2"):
        simulate_stratified_bank(100, 5, pure_fraction=0.9, mean_disagreement=0.2)
    ds = load_tau_bench_airline(shared_data)
    with pytest.raises(ValueError, match=r"no task of agent .* has `n_runs` >= 5 recorded runs \(max 4\)"):
        bank_from_eval(ds, ds.agent.values[0], 5)
    with pytest.raises(ValueError, match=r"`agent` must be one of"):
        bank_from_eval(ds, "nobody", 2)


def test_labels_outside_the_plan_are_counted_not_used():
    plan = plan_joint(6, 3, 8, rng=0)
    full = xr.DataArray(np.ones((6, 3)), dims=("task", "run"))
    res_full = budget_interval(plan, full)
    res_plan = budget_interval(plan, full.where(plan.slots.values))
    assert res_full.interval.attrs["n_labels_outside_plan_ignored"] == 18 - 8
    assert res_plan.interval.attrs["n_labels_outside_plan_ignored"] == 0
    np.testing.assert_array_equal(res_full.interval.values, res_plan.interval.values)


@settings(max_examples=40, deadline=None)
@given(
    M=st.integers(1, 25),
    L=st.integers(2, 6),
    frac=st.floats(0, 1),
    seed=st.integers(0, 2**32 - 1),
    prob=st.sampled_from([0.5, 0.8, 0.95]),
)
@pytest.mark.slow
def test_interval_contains_estimate_within_feasible_range(M, L, frac, seed, prob):
    gen = np.random.default_rng(seed)
    bank = xr.DataArray((gen.random((M, L)) < gen.random((M, 1))).astype(float), dims=("task", "run"))
    t = round(frac * M)
    for plan, method in ((plan_joint(M, L, M + t, rng=gen), "mixture"), (plan_joint(M, L, M + t, rng=gen), "split"),
                         (plan_uniform(M, L, M + t, rng=gen), "exact")):
        res = budget_interval(plan, bank, prob=prob, method=method)
        lo, hi = res.interval.values
        flo, fhi = res.feasible.values
        est = float(res.estimate)
        assert flo - 1e-12 <= lo <= est + 1e-12 and est - 1e-12 <= hi <= fhi + 1e-12
        if method != "exact":
            assert flo - 1e-12 <= est <= fhi + 1e-12
