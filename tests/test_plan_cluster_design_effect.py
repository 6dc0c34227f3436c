"""The plan's cluster design effect, its clustered detectable difference and its per-pair wording (audit W).

Audit W: the plain ratio of cluster-robust to independent-task variance read 0.74 for a true 1 at
SWE-bench's 12 repositories, and the demo said "The clusters add no variance here"; the clustered
detectable difference took 11 df for clusters worth 3.9 equal ones (power 0.60 at the printed
figure); the plan's difference was for one unadjusted pair; the 1.12x inflation was applied to the
R = 1 column too; a fixed held-out sentence and degenerate columns were printed for one pair.
The small clustered log and the components stand-in are the demo's other plan tests'.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import optimize
from scipy import stats
from test_demo_outputs import _clustered
from test_demo_outputs import _Components

from hierbench.demo import DemoContext
from hierbench.demo._plan import _plan_section
from hierbench.freq import cluster_design
from hierbench.freq import minimum_detectable_effect
from hierbench.freq import observed_cluster_ratio

#: SWE-bench Verified bash-only's 12 repositories, tasks in each (audit W's swe_long.csv)
SWE_SIZES = np.array([1, 2, 8, 10, 19, 22, 22, 32, 34, 44, 75, 231])


def _plan(ds, monkeypatch, s_mt=0.03, s_e=0.12) -> str:
    import hierbench.metrics

    monkeypatch.setattr(hierbench.metrics, "crossed_variance_components", lambda fit, scale: _Components(s_mt, s_e))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return " ".join(_plan_section(DemoContext(ds, None, extra={"fit": object()})).split())


def test_ratio_centres_on_the_true_design_effect_at_swe_sizes():
    """Known truth: cell rates = agent x cluster part + agent x task part (normal), so a pair's
    difference has ICC s_c / (s_c + s_w) and DEFF = 1 + (m* - 1) ICC (m* = 129.2 here). 200 data
    sets of 8 agents per truth, seed 4. Over seeds 0-4 the mean at DEFF 1 was 0.96-1.04, MC SE 0.03
    (the old plain ratio: 0.72-0.76); at DEFF 2.28 2.18-2.33, MC SE 0.06 (old: 1.28-1.35). Tolerance
    about 3.3 MC SEs.
    """
    g = np.random.default_rng(4)
    codes = np.repeat(np.arange(12), SWE_SIZES)
    n = SWE_SIZES.sum()
    m_star = (SWE_SIZES**2).sum() / n
    for icc, tol in ((0.0, 0.1), (0.01, 0.2)):
        deff = 1 + (m_star - 1) * icc
        got = []
        for _ in range(200):
            v = g.normal(0, np.sqrt(icc), (8, 12))[:, codes] + g.normal(0, np.sqrt(1 - icc), (8, n))
            got.append(observed_cluster_ratio(v, codes))
        assert np.mean(got) == pytest.approx(deff, abs=tol), (icc, np.mean(got))


def test_ratio_range_brackets_the_ratio_and_is_seeded():
    g = np.random.default_rng(1)
    codes = np.repeat(np.arange(12), 10)
    rate = g.normal(0, 1, (5, 120)) + g.normal(0, 0.5, (5, 12))[:, codes]
    r, lo, hi = observed_cluster_ratio(rate, codes, prob=0.9)
    assert r == observed_cluster_ratio(rate, codes) and lo < r < hi
    assert (r, lo, hi) == observed_cluster_ratio(rate, codes, prob=0.9)  # seed 0 by default


def _signflip_p(d, codes, sizes, flips):
    """The cluster sign-flip test, CR2-studentized, over all 2^12 sign patterns (audit W's script)."""
    s = np.bincount(codes, weights=d)
    n = sizes.sum()
    ss = flips * s
    mean = ss.sum(1) / n
    res = ss - np.outer(mean, sizes)
    t = np.abs(mean / np.sqrt((res**2 / (1 - sizes / n)).sum(1) / n**2))
    return np.mean(t >= t[-1] - 1e-12)  # the last pattern is all +1: the data


def test_clustered_mde_takes_the_df_of_the_clusters_worth_in_equal_ones():
    """SWE-bench's sizes are worth 500^2 / sum m^2 = 3.87 equal clusters: df 2.87 (was 11). By hand
    with scipy's noncentral t; then the cluster sign-flip test's power at that difference, 200 data
    sets (seed 5, no cluster effect, SD 0.487): 0.87 in audit W's 600 (MC SE 0.014), at the old 0.067
    0.60; asserted >= 0.74 (MC SE here about 0.025).
    """
    from hierbench.freq._kernels import effective_clusters

    codes = np.repeat(np.arange(12), SWE_SIZES)
    c_eff = 500**2 / (SWE_SIZES**2).sum()
    assert effective_clusters(codes) == pytest.approx(c_eff, rel=1e-12)
    cd = cluster_design(SWE_SIZES, design_effect=1.0)
    df, crit = c_eff - 1, stats.t.ppf(0.975, c_eff - 1)

    def short(e):
        nc = e * np.sqrt(500) / 0.487  # the far tail (NaN in scipy for a large nc) is ~0
        return stats.nct.sf(crit, df, nc) + np.nan_to_num(stats.nct.cdf(-crit, df, nc)) - 0.8

    want = optimize.brentq(short, 1e-4, 0.5)
    got = minimum_detectable_effect(500, sd_diff=0.487, clusters=cd)
    assert got == pytest.approx(want, rel=1e-7)
    flips = np.array(list(itertools.product([-1.0, 1.0], repeat=12)))
    g = np.random.default_rng(5)
    power = np.mean([_signflip_p(g.normal(got, 0.487, 500), codes, SWE_SIZES, flips) < 0.05 for _ in range(200)])
    assert power >= 0.74


def test_plan_states_the_ratio_its_range_and_the_clustered_figures_by_hand(monkeypatch):
    """The ratio by hand (per pair the within-cluster sums of the differences less their mean; the
    moment equations for a cluster part a and a task part b solved with numpy; (a M + b n) / ((a + b) n));
    the clustered difference by scipy's noncentral t with 6 equal clusters (5 df) and 18 / ratio
    effective tasks; the R = 1 column's factor 1 + (ratio - 1) Var(R=2) / Var(R=1).
    """
    ds = _clustered()
    one = _plan(ds, monkeypatch)
    m = ds["score"].mean("run").values
    groups = np.repeat(np.arange(6), 3)
    q1 = q2 = 0.0
    for i, j in ((0, 1), (0, 2), (1, 2)):
        e = m[i] - m[j]
        e = e - e.mean()
        q1 += (np.bincount(groups, weights=e) ** 2).sum()
        q2 += (e**2).sum()
    n, M, m3 = 18.0, 6 * 9.0, 6 * 27.0
    a, b = np.linalg.solve([[M - 2 * m3 / n + M**2 / n**2, n - M / n], [n - M / n, n - 1]], [q1, q2])
    ratio = (a * M + b * n) / ((a + b) * n)
    assert ratio > 1.2 and abs(ratio - q1 / q2) > 0.05
    assert f"varies {ratio:.2f} times as much over the clusters" in one
    assert "90% cluster-bootstrap percentile range" in one
    var2, var1 = 2 * 0.03 + 2 * 0.12 / 2, 2 * 0.03 + 2 * 0.12
    sd = np.sqrt(var2)
    crit = stats.t.ppf(0.975, 5)

    def short(e):
        nc = e * np.sqrt(18 / ratio) / sd
        return stats.nct.sf(crit, 5, nc) + stats.nct.cdf(-crit, 5, nc) - 0.8

    d_c = optimize.brentq(short, 1e-6, 1.0)
    assert f"18 tasks detect about {d_c:.3f}, not" in one and "t with 5.0 df, not 17" in one
    assert f"the as-run column's counts below are about {ratio:.2f} times too small" in one
    assert f"the R = 1 column's about {1 + (ratio - 1) * var2 / var1:.2f} times" in one
    assert "every count of tasks" not in one


def test_a_ratio_at_or_below_one_is_not_read_as_no_variance(monkeypatch):
    """Each cluster's two tasks differ in opposite directions: the ratio is 0 (by hand: the cluster
    sums vanish, so a = -b / 2 and a M + b n = 0), and the plan says what the range allows.
    """
    s = np.zeros((2, 20, 2))
    s[0, 0::2] = 1.0
    s[1, 1::2] = 1.0
    fam = np.repeat([f"f{i}" for i in range(10)], 2)
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)},
                    coords={"agent": ["a", "b"], "cluster": ("task", fam, {"source_column": "family"})})  # fmt: skip
    one = _plan(ds, monkeypatch)
    assert "varies 0.00 times as much over the clusters" in one
    assert "no variance here" not in one and "does not show that the clusters add no variance" in one
    assert "t with 9.0 df, not 19" in one


def test_one_pair_gets_one_sd_and_one_column_and_no_family(monkeypatch):
    g = np.random.default_rng(2)
    s = (g.random((2, 30, 3)) < [[[0.8]], [[0.4]]]).astype(float)
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)}, coords={"agent": ["a", "b"]})
    one = _plan(ds, monkeypatch)
    own = np.sqrt(np.var(s[0].mean(1) - s[1].mean(1), ddof=1))
    mde = minimum_detectable_effect(30, sd_diff=own)
    assert f"at the pair's own SD (no model), {mde:.3f}" in one and "the pair's own SD, R=3" in one
    assert "least / median / most" not in one and " to " not in one.split("own SD (no model)")[1][:12]
    assert "family-wise" not in one and "held out" not in one


def test_many_pairs_get_the_family_wise_figure_and_this_logs_sd_gap_correlation(monkeypatch):
    """Four agents, six pairs: the Bonferroni figure by statsmodels' t power at 0.05 / 6; the
    pairs' SD against their gap by scipy's Spearman correlation; no fixed held-out sentence.
    """
    from statsmodels.stats.power import TTestPower

    g = np.random.default_rng(8)
    p = np.array([0.15, 0.4, 0.6, 0.9])[:, None, None]
    s = (g.random((4, 40, 2)) < p).astype(float)
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)}, coords={"agent": list("abcd")})
    one = _plan(ds, monkeypatch)
    sd = np.sqrt(2 * 0.03 + 2 * 0.12 / 2)
    fw = TTestPower().solve_power(nobs=40, alpha=0.05 / 6, power=0.8, alternative="two-sided") * sd
    assert "tests all 6 pairs at a family-wise 0.05 (max-T): at alpha 0.05 / 6" in one
    assert f"the same tasks detect {fw:.3f}" in one and "one pre-chosen pair" in one
    m = s.mean(2)
    pairs = list(itertools.combinations(range(4), 2))
    sds = [np.std(m[i] - m[j], ddof=1) for i, j in pairs]
    gaps = [abs(np.mean(m[i] - m[j])) for i, j in pairs]
    rho = stats.spearmanr(sds, gaps)[0]
    assert f"absolute mean difference {rho:.2f} over 6 pairs" in one
    assert "held out" not in one and "SWE-bench and METR" not in one
