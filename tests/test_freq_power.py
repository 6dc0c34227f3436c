"""Power and allocation: simulation, seed-003 sample sizes, optimality, bad input."""

import math

import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from scipy import stats

from hierbench.freq import minimum_detectable_effect
from hierbench.freq import optimal_allocation
from hierbench.freq import optimal_runs
from hierbench.freq import paired_power
from hierbench.freq import sample_size_normal
from hierbench.freq import sd_paired_diff
from hierbench.freq import tasks_for_power
from hierbench.freq import variance_components


def test_seed_003_sample_sizes():
    # seed 003: 65% vs 68% -> 3,882 unpaired; 12% discordant tasks -> 1,039 paired
    assert sample_size_normal(0.03, paired=False, p_a=0.65, p_b=0.68) == 3882
    assert sample_size_normal(0.03, paired=True, discordance=0.12) == 1039
    # the same via sd_diff, and the seed's "SD(d) = 0.667" and "0.345"
    assert sample_size_normal(0.03, paired=True, sd_diff=math.sqrt(0.12 - 0.03**2)) == 1039
    # "a 100-item eval can only reliably detect differences of roughly 19 to 20 points" (unpaired)
    assert sample_size_normal(0.19, paired=False, p_a=0.5, p_b=0.69) > 100
    assert sample_size_normal(0.20, paired=False, p_a=0.5, p_b=0.70) <= 100


@pytest.mark.parametrize(("T", "R", "effect"), [(30, 2, 0.08), (80, 4, 0.05), (25, 1, 0.0)])
def test_noncentral_t_power_matches_simulation(T, R, effect):
    # simulate the nested components model itself (normal effects): per-task difference
    # d_t = effect + (ab_At - ab_Bt) + mean_r(e_Atr - e_Btr); reject with scipy's t-test
    s_mt, s_e, n_sim, alpha = 0.02, 0.15, 4000, 0.05
    rng = np.random.default_rng(T * 100 + R)
    ab = rng.normal(0, np.sqrt(s_mt), (n_sim, 2, T))
    e = rng.normal(0, np.sqrt(s_e), (n_sim, 2, T, R)).mean(-1)
    d = effect + (ab[:, 0] - ab[:, 1]) + (e[:, 0] - e[:, 1])
    rate = np.mean(stats.ttest_1samp(d, 0.0, axis=1).pvalue <= alpha)
    pw = float(paired_power(effect, T, n_runs=R, sigma2_interaction=s_mt, sigma2_residual=s_e))
    tol = 3 * np.sqrt(pw * (1 - pw) / n_sim)  # Monte Carlo tolerance: 3 SE (<= 0.024)
    assert abs(rate - pw) <= tol, (rate, pw)
    if effect == 0:
        assert pw == pytest.approx(alpha)


def test_power_from_variance_components_and_var_formula():
    rng = np.random.default_rng(5)
    M, T, R = 2, 400, 3
    y = (
        rng.normal(0, 0.3, (1, T, 1))
        + rng.normal(0, np.sqrt(0.02), (M, T, 1))
        + rng.normal(0, np.sqrt(0.15), (M, T, R))
    )
    vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    s_mt = float(vc.components.sel(component="agent:task"))
    s_e = float(vc.components.sel(component="residual"))
    sd = sd_paired_diff(R, components=vc)
    assert float(sd) == pytest.approx(math.sqrt(2 * s_mt + 2 * s_e / R))
    # Var(dbar) = (s_t + s_e / R) / T is the G-theory paired-difference variance
    assert float(sd) ** 2 / T == pytest.approx(vc.var_paired_diff)
    p1 = paired_power(0.05, 100, n_runs=R, components=vc)
    p2 = paired_power(0.05, 100, n_runs=R, sigma2_interaction=s_mt, sigma2_residual=s_e)
    assert float(p1) == pytest.approx(float(p2))


def test_tasks_for_power_is_minimal_and_mde_inverts_power():
    kw = {"sigma2_interaction": 0.03, "sigma2_residual": 0.2, "n_runs": 3}
    T = tasks_for_power(0.04, power=0.8, **kw)
    assert float(paired_power(0.04, T, **kw)) >= 0.8 > float(paired_power(0.04, T - 1, **kw))
    # close to the normal approximation, slightly above it (t has heavier tails)
    sd = float(sd_paired_diff(3, sigma2_interaction=0.03, sigma2_residual=0.2))
    assert (
        sample_size_normal(0.04, paired=True, sd_diff=sd)
        <= T
        <= sample_size_normal(0.04, paired=True, sd_diff=sd) + 3
    )
    mde = minimum_detectable_effect(T, power=0.8, **kw)
    assert float(paired_power(mde, T, **kw)) == pytest.approx(0.8, abs=1e-9)
    assert mde <= 0.04
    assert tasks_for_power(-0.04, power=0.8, **kw) == T  # two-sided: symmetric
    assert tasks_for_power(0.04, power=0.8, alternative="greater", **kw) < T


def test_optimal_runs_minimises_variance_at_fixed_budget():
    s_mt, s_e, c_task, c_run = 0.01, 0.2, 20.0, 1.0
    r_star = optimal_runs(
        cost_task=c_task, cost_run=c_run, sigma2_interaction=s_mt, sigma2_residual=s_e
    )
    assert r_star == pytest.approx(math.sqrt(s_e * c_task / (s_mt * c_run)))
    # brute force over a fine grid of (continuous) R at budget B: T = B / (c_task + R c_run)
    B = 10_000.0
    grid = np.linspace(0.5, 100, 200_001)
    var = (2 * s_mt + 2 * s_e / grid) * (c_task + grid * c_run) / B
    assert grid[np.argmin(var)] == pytest.approx(r_star, abs=1e-3)
    alloc = optimal_allocation(
        B, cost_task=c_task, cost_run=c_run, sigma2_interaction=s_mt, sigma2_residual=s_e
    )
    # integer brute force over every affordable R
    best = min(
        ((2 * s_mt + 2 * s_e / R) / int(B // (c_task + R * c_run)), R)
        for R in range(1, 200)
        if B // (c_task + R * c_run) >= 2
    )
    assert int(alloc.n_runs) == best[1]
    assert float(alloc.var_mean_diff) == pytest.approx(best[0])
    assert float(alloc.cost) <= B
    # free tasks: more tasks always beat more repeats
    assert (
        optimal_runs(cost_task=0.0, cost_run=1.0, sigma2_interaction=s_mt, sigma2_residual=s_e)
        == 0.0
    )
    assert (
        optimal_runs(cost_task=1.0, cost_run=1.0, sigma2_interaction=0.0, sigma2_residual=s_e)
        == math.inf
    )


@pytest.mark.filterwarnings("ignore::hierbench.freq.NegativeVarianceComponentWarning")
def test_bad_input_messages():
    kw = {"sigma2_interaction": 0.03, "sigma2_residual": 0.2}
    with pytest.raises(ValueError, match=r"`n_tasks` must be integers >= 2; got 1"):
        paired_power(0.1, 1, **kw)
    with pytest.raises(ValueError, match=r"`alpha` must satisfy 0 < alpha < 1; got alpha=0"):
        paired_power(0.1, 10, alpha=0, **kw)
    with pytest.raises(
        ValueError, match=r"`alternative` must be one of \['two-sided', 'greater'\]; got 'less'"
    ):
        paired_power(0.1, 10, alternative="less", **kw)
    with pytest.raises(
        ValueError, match=r"give `components` \(a VarianceComponentsResult\) or both"
    ):
        paired_power(0.1, 10, sigma2_interaction=0.1)
    with pytest.raises(ValueError, match=r"`sigma2_residual` must be >= 0; got sigma2_residual=-1"):
        paired_power(0.1, 10, sigma2_interaction=0.1, sigma2_residual=-1)
    with pytest.raises(ValueError, match=r"give either `sd_diff` or variance components, not both"):
        paired_power(0.1, 10, sd_diff=0.3, **kw)
    with pytest.raises(ValueError, match=r"`effect` must be finite and non-zero; got 0"):
        tasks_for_power(0, **kw)
    with pytest.raises(ValueError, match=r"`power` must satisfy 0 < power < 1; got power=1.2"):
        minimum_detectable_effect(50, power=1.2, **kw)
    with pytest.raises(ValueError, match=r"`cost_run` must be > 0; got cost_run=0"):
        optimal_runs(cost_task=1.0, cost_run=0, **kw)
    with pytest.raises(ValueError, match=r"`budget` 5.0 cannot pay for 2 tasks"):
        optimal_allocation(5.0, cost_task=10.0, cost_run=1.0, **kw)
    with pytest.raises(ValueError, match=r"paired=True needs `discordance`"):
        sample_size_normal(0.03, paired=True)
    with pytest.raises(
        ValueError, match=r"`discordance` must satisfy effect\^2 <= discordance <= 1; got 0.0001"
    ):
        sample_size_normal(0.03, paired=True, discordance=0.0001)
    with pytest.raises(
        TypeError, match=r"`components` must be a VarianceComponentsResult from .*; got dict: run "
    ):
        paired_power(0.1, 10, components={"agent": 1.0})
    one_run = variance_components(
        xr.DataArray(np.random.default_rng(0).normal(size=(3, 5)), dims=("agent", "task"))
    )
    with pytest.raises(
        ValueError, match=r"one run per cell: the interaction and run error are confounded"
    ):
        paired_power(0.1, 10, n_runs=2, components=one_run)  # n_runs=1 is planned (2 x residual)
    # one agent with 4 runs per task: the agent facet is dropped, the runs are not the cause
    one_agent = variance_components(
        xr.DataArray(np.random.default_rng(0).normal(size=(1, 6, 4)), dims=("agent", "task", "run"))
    )
    assert one_agent.dropped == ("agent",)
    calls = (
        lambda: paired_power(0.1, 10, components=one_agent),
        lambda: minimum_detectable_effect(100, components=one_agent, n_runs=4),
    )
    for call in calls:
        with pytest.raises(ValueError) as err:
            call()
        msg = str(err.value)
        assert "one level of 'agent'" in msg and "it has 4 per cell" in msg
        assert "one run per cell" not in msg
    crossed = variance_components(
        xr.DataArray(
            np.random.default_rng(0).normal(size=(3, 5, 2)), dims=("agent", "task", "run")
        ),
        design="crossed",
    )
    with pytest.raises(ValueError, match=r"`components` must come from design='nested'"):
        paired_power(0.1, 10, components=crossed)


def test_audit_e6_refusals_and_the_size_warning():
    """Audit E 6: each call that was answered (or failed inside scipy) is refused or warned, by name."""
    from statsmodels.stats.power import TTestPower

    from hierbench._base import HierbenchWarning

    # statsmodels: the paired t-test's power at effect 0 is alpha, so no effect has power 0.01
    assert TTestPower().power(effect_size=0.0, nobs=100, alpha=0.05) == pytest.approx(0.05)
    with pytest.raises(ValueError, match=r"`power` must exceed `alpha`.*got power=0.01, alpha=0.05"):
        minimum_detectable_effect(100, sd_diff=0.3, power=0.01)  # was scipy's "f(a) and f(b)"
    with pytest.raises(ValueError, match=r"`power` must exceed `alpha`.*got power=0.05, alpha=0.05"):
        minimum_detectable_effect(100, sd_diff=0.3, power=0.05, alternative="greater")
    # the same target at or below the size: tasks_for_power answered its floor, 2 tasks
    with pytest.raises(ValueError, match=r"`power` must exceed `alpha`.*got power=0.04, alpha=0.05"):
        tasks_for_power(0.05, sd_diff=0.3, power=0.04)
    # 65% vs 68% is a difference of 0.03; 0.3 was answered with 39 tasks (0.03 gives 3,882)
    with pytest.raises(ValueError, match=r"`effect` must be the difference of `p_a` and `p_b` "
                                         r"\(p_b - p_a = 0.03, .*got effect=0.3, p_a=0.65, p_b=0.68"):
        sample_size_normal(0.3, paired=False, p_a=0.65, p_b=0.68)
    assert sample_size_normal(-0.03, paired=False, p_a=0.65, p_b=0.68) == 3882  # either sign
    # a difference of two mean 0/1 scores lies in [-1, 1] (2.0 was answered with 3 tasks); with
    # sd_diff alone the scale is the scores' own (test_freq_power_effect_scale.py)
    for eff in (2.0, -1.5):
        with pytest.raises(ValueError, match=r"`effect` must satisfy \|effect\| <= 1.*got " + str(eff)):
            sample_size_normal(eff, paired=True, discordance=0.5)
    need = TTestPower().solve_power(effect_size=1.0 / 0.3, alpha=0.05, power=0.8)  # 2.8: 3 tasks
    assert tasks_for_power(1.0, sd_diff=0.3) == math.ceil(need)  # |effect| = 1 is still allowed
    # alpha = 0.95 reads like a level: computed as given (statsmodels' power at that size), with a warning
    with pytest.warns(HierbenchWarning, match=r"`alpha`=0.95 is the size of the test .* pass alpha=0.05"):
        p = float(paired_power(0.05, 100, sd_diff=0.3, alpha=0.95))
    assert p == pytest.approx(TTestPower().power(effect_size=0.05 / 0.3, nobs=100, alpha=0.95), abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(
    effect=st.floats(0.005, 0.5),
    T=st.integers(2, 2000),
    R=st.integers(1, 10),
    s_mt=st.floats(0.0, 0.2),
    s_e=st.floats(0.01, 0.3),
)
def test_power_is_monotone_and_bounded(effect, T, R, s_mt, s_e):
    kw = {"sigma2_interaction": s_mt, "sigma2_residual": s_e}
    p = float(paired_power(effect, T, n_runs=R, **kw))
    assert 0.05 - 1e-9 <= p <= 1.0
    assert float(paired_power(effect, T + 10, n_runs=R, **kw)) >= p - 1e-9
    assert float(paired_power(effect * 1.5, T, n_runs=R, **kw)) >= p - 1e-9
    assert float(paired_power(effect, T, n_runs=R + 1, **kw)) >= p - 1e-9
    assert float(paired_power(-effect, T, n_runs=R, **kw)) == pytest.approx(p)


def test_planning_from_a_loaded_g_study_is_refused_saying_what_to_give(tmp_path):
    """A G-study saved and loaded back is a Dataset: named, with the two ways on (refit, or the variances)."""
    from hierbench.freq import cluster_design
    from hierbench.io import load_dataset
    from hierbench.io import save_dataset

    rng = np.random.default_rng(3)
    y = xr.DataArray(rng.normal(size=(3, 6, 2)), dims=("agent", "task", "run"))
    save_dataset(variance_components(y).to_dataset(), tmp_path / "g.nc")
    loaded = load_dataset(tmp_path / "g.nc")
    for call in (lambda: paired_power(0.1, 10, components=loaded), lambda: cluster_design(components=loaded)):
        with pytest.raises(TypeError, match=r"got Dataset \(a saved result loaded back keeps the components.*"
                                            r"sigma2_interaction= and sigma2_residual= .*sizes= and sigma2="):
            call()
