"""Power planning from the default clustered G-study (audit T finding 1): METR (9 runs per cell) and
SWE-bench (one run per cell, tasks in 12 repositories), checked against the variances composed by hand
from ``vc.components``, cluster sizes counted with pandas from the loaders' task ``cluster`` coord, and
statsmodels' TTestPower (exact t) with scipy's normal approximation beside it.
"""

import math
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats
from statsmodels.stats.power import TTestPower

from hierbench.freq import ExtrapolationWarning
from hierbench.freq import cluster_design
from hierbench.freq import minimum_detectable_effect
from hierbench.freq import optimal_allocation
from hierbench.freq import optimal_runs
from hierbench.freq import paired_power
from hierbench.freq import sd_paired_diff
from hierbench.freq import tasks_for_power
from hierbench.freq import variance_components


def _quiet(f, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*a, **k)


def _parts(vc, *names):
    return tuple(float(vc.components.sel(component=n)) for n in names)


def _sizes(ds):
    """Tasks per cluster, mean m and m* = sum m_k^2 / sum m_k, from the task cluster coord by pandas."""
    n = ds["cluster"].to_series().value_counts().to_numpy(dtype=float)
    return n, n.mean(), float((n**2).sum() / n.sum())


def _normal_power(effect, n, sd, alpha=0.05):
    z, d = stats.norm.ppf(1 - alpha / 2), effect * math.sqrt(n) / sd
    return stats.norm.sf(z - d) + stats.norm.cdf(-z - d)


@pytest.fixture(scope="module")
def metr(metr_eval):
    return metr_eval, _quiet(variance_components, metr_eval)


@pytest.fixture(scope="module")
def swe():
    from hierbench.data import load_swebench_bash_only

    ds = _quiet(load_swebench_bash_only)
    return ds, _quiet(variance_components, ds)


@pytest.mark.slow
def test_metr_default_components_plan_independent_tasks_with_the_task_side_parts_pooled(metr):
    _, vc = metr
    s_ac, s_atc, s_e = _parts(vc, "agent:cluster", "agent:task:cluster", "residual")
    s_mt = s_ac + s_atc  # both > 0 on METR (REML)
    sd = {R: math.sqrt(2 * s_mt + 2 * s_e / R) for R in (1, 3, 9)}
    np.testing.assert_allclose(sd_paired_diff([1, 3, 9], components=vc), list(sd.values()), rtol=1e-12)
    tp = TTestPower()
    t = _quiet(tasks_for_power, 0.05, n_runs=3, components=vc)
    assert t == math.ceil(tp.solve_power(effect_size=0.05 / sd[3], alpha=0.05, power=0.8))
    assert abs(t - ((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * sd[3] / 0.05) ** 2) < 3  # t vs z
    assert "s_mt = agent:task:cluster + agent:cluster" in t.note and "residual" in t.note
    p = _quiet(paired_power, 0.1, 83, n_runs=3, components=vc)
    assert float(p) == pytest.approx(tp.power(effect_size=0.1 / sd[3], nobs=83, alpha=0.05), rel=1e-8)
    assert 0 < _normal_power(0.1, 83, sd[3]) - float(p) < 0.015  # z ignores the t's 82 df: a little above
    assert "agent:cluster" in p.note
    mde = _quiet(minimum_detectable_effect, 83, n_runs=3, components=vc)
    assert tp.power(effect_size=mde / sd[3], nobs=83, alpha=0.05) == pytest.approx(0.8, abs=1e-8)
    assert optimal_runs(cost_task=10.0, cost_run=1.0, components=vc) == pytest.approx(
        math.sqrt(s_e * 10.0 / s_mt), rel=1e-12)
    # the allocation: every R by hand, T = floor(B / (c_task + R c_run)), the smallest variance
    a = _quiet(optimal_allocation, 5000.0, cost_task=10.0, cost_run=1.0, components=vc)
    best = min(((2 * s_mt + 2 * s_e / R) / (5000 // (10 + R)), R, 5000 // (10 + R)) for R in range(1, 400))
    assert (int(a.n_runs), int(a.n_tasks)) == (best[1], best[2])
    assert "agent:task:cluster + agent:cluster" in a.attrs["components_pooled"]


@pytest.mark.slow
def test_metr_cluster_design_reads_the_default_fits_cluster_terms(metr):
    ds, vc = metr
    s_ac, s_atc, s_e = _parts(vc, "agent:cluster", "agent:task:cluster", "residual")
    n, m, m_star = _sizes(ds)
    cd = cluster_design(components=vc)
    assert (cd.n_tasks, cd.n_clusters, cd.one_run_only) == (83, 36, False) and n.sum() == 83
    assert cd.sigma2 == pytest.approx((s_ac, s_atc, s_e), rel=1e-12)
    assert (cd.tasks_per_cluster, cd.size_factor) == pytest.approx((m, m_star), rel=1e-12)
    # cluster-level t test: the 36 unequal families are worth C_eff = 83^2 / sum n_k^2 = 83 / m*
    # equal ones (C_eff - 1 df), each of m* tasks; SD of such a cluster's mean difference by hand
    var = 2 * s_ac + 2 * s_atc + 2 * s_e / 3
    deff = 1 + (m_star - 1) * 2 * s_ac / var
    c_eff = n.sum() ** 2 / (n**2).sum()
    want = TTestPower().power(effect_size=0.1 / math.sqrt(var * deff / m_star), nobs=c_eff, alpha=0.05)
    assert float(paired_power(0.1, 83, n_runs=3, clusters=cd)) == pytest.approx(want, rel=1e-8)
    # the cluster facet written in the design gives the same plan
    vc4 = _quiet(variance_components, ds, design="run:(agent*(task:cluster))", method="reml")
    assert cluster_design(components=vc4).sigma2 == pytest.approx(cd.sigma2, rel=1e-10)


@pytest.mark.slow
def test_extrapolation_counts_every_clusters_tasks(metr):
    # 83 tasks fitted (36 families x 2.31): 800 planned is within 10x, 900 is not
    _, vc = metr
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtrapolationWarning)
        minimum_detectable_effect(800, n_runs=3, components=vc)
    with pytest.warns(ExtrapolationWarning, match="the 83 fitted"):
        minimum_detectable_effect(900, n_runs=3, components=vc)


@pytest.mark.slow
def test_swe_one_run_components_plan_at_one_run_only(swe):
    ds, vc = swe
    s_ac, s_e = _parts(vc, "agent:cluster", "residual")
    assert "agent:task:cluster" not in vc.components.component.values  # the residual holds it
    n, m, m_star = _sizes(ds)
    assert (n.size, n.sum()) == (12, 500)
    sd1 = math.sqrt(2 * s_ac + 2 * s_e)
    assert float(sd_paired_diff(1, components=vc)) == pytest.approx(sd1, rel=1e-12)
    t = _quiet(tasks_for_power, 0.05, components=vc)
    assert t == math.ceil(TTestPower().solve_power(effect_size=0.05 / sd1, alpha=0.05, power=0.8))
    assert "s_mt = agent:cluster" in t.note and "holding agent:task:cluster (one run per cell)" in t.note
    with pytest.raises(ValueError, match="one run per cell"):
        sd_paired_diff(2, components=vc)
    cd = cluster_design(components=vc)
    assert cd.one_run_only and cd.sigma2 == pytest.approx((s_ac, 0.0, s_e), rel=1e-12)
    assert (cd.tasks_per_cluster, cd.size_factor) == pytest.approx((m, m_star), rel=1e-12)
    deff = 1 + (m_star - 1) * 2 * s_ac / sd1**2
    # the 12 repositories (1-231 tasks) are worth 500^2 / sum n_k^2 = 3.9 equal ones of m* tasks
    want = TTestPower().power(effect_size=0.1 / math.sqrt(sd1**2 * deff / m_star), nobs=500 / m_star, alpha=0.05)
    assert float(paired_power(0.1, 500, clusters=cd)) == pytest.approx(want, rel=1e-8)
    with pytest.raises(ValueError, match="`n_runs` must be 1 with this `clusters`"):
        paired_power(0.1, 500, n_runs=2, clusters=cd)
    with pytest.raises(ValueError, match="cannot choose runs per task"):
        optimal_allocation(5000.0, cost_task=10.0, cost_run=1.0, clusters=cd)


def test_a_design_without_fresh_runs_per_cell_is_refused_by_its_name():
    # runs crossed with agents (one run index shared by every agent on a task): not a paired plan's design
    g = np.random.default_rng(11)
    y = g.normal(size=(3, 12, 2)) + np.repeat(g.normal(size=(3, 4, 1)), 3, axis=1)  # agent x cluster
    da = xr.DataArray(y, dims=("agent", "task", "run"), coords={"cluster": ("task", np.repeat(list("abcd"), 3))})
    da = xr.Dataset({"score": da})
    vc = _quiet(variance_components, da, design="agent*(run:task:cluster)")
    with pytest.raises(ValueError, match=r"got the design 'agent\*\(run:task:cluster\)' \(facets"):
        cluster_design(components=vc)
    with pytest.raises(ValueError, match=r"got the design 'agent\*\(run:task:cluster\)'"):
        sd_paired_diff(2, components=vc)
    # the same data's default fit (clusters from the coord) is taken, by the sum rule
    d = _quiet(variance_components, da)
    s_ac, s_atc, s_e = _parts(d, "agent:cluster", "agent:task:cluster", "residual")
    want = math.sqrt(2 * max(s_ac, 0) + 2 * max(s_atc, 0) + s_e)
    assert float(sd_paired_diff(2, components=d)) == pytest.approx(want, rel=1e-12)


@pytest.mark.slow
def test_demo_plan_on_metr_takes_freqs_pooled_rule(metr):
    from hierbench.demo import DemoContext
    from hierbench.demo._plan import _plan_section

    ds, vc = metr
    s_ac, s_atc, s_e = _parts(vc, "agent:cluster", "agent:task:cluster", "residual")
    ctx = DemoContext(ds, None, extra={})
    text = " ".join(_quiet(_plan_section, ctx).split())
    sd1 = math.sqrt(2 * (s_ac + s_atc) + 2 * s_e)
    col = ctx.extra["plan_table"]["tasks needed (R=1)"]
    for effect, got in col.items():
        assert got == math.ceil(TTestPower().solve_power(effect_size=effect / sd1, alpha=0.05, power=0.8))
        assert got == _quiet(tasks_for_power, effect, n_runs=1, components=vc)
    assert "s_mt = agent x task + agent x cluster" in text
