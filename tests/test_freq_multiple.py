"""Multiple comparisons that can reach their answer: exact and Monte Carlo sign flips checked
against enumeration, scipy and statsmodels; the CR2 t-test against statsmodels and by simulation;
compare_agents on many agents and on SWE-bench bash-only (25 agents, 300 pairs).
"""

import itertools
import warnings

import numpy as np
import pytest
import statsmodels.api as sm
import statsmodels.stats.multitest as smm
import xarray as xr
from scipy import stats

from hierbench.freq import UndefinedTestWarning
from hierbench.freq import compare_agents
from hierbench.freq import paired_test
from hierbench.freq._kernels import cr2_mean_se
from hierbench.freq._resampling._multiple import PValueResolutionWarning
from hierbench.freq._resampling._signflip import family_permutations
from hierbench.freq._resampling._signflip import sign_flip_pvalues
from hierbench.testing import simulate_eval


def _enumerated_p(u):
    u = np.asarray(u, float)
    u = u[u != 0]
    signs = np.array(list(itertools.product([-1.0, 1.0], repeat=u.size)))
    return float(np.mean(np.abs(signs @ u) >= abs(u.sum()) - 1e-9))


@pytest.mark.parametrize("seed", range(4))
def test_lattice_convolution_equals_enumeration_beyond_the_enumeration_limit(seed):
    # 17 units, differences of per-task means of 2, 3 and 4 runs: past the 14-unit
    # enumeration, so the p-value comes from the exact lattice convolution
    rng = np.random.default_rng(seed)
    grid = np.array([-1, -3 / 4, -2 / 3, -1 / 2, -1 / 3, -1 / 4, 1 / 4, 1 / 3, 1 / 2, 2 / 3, 3 / 4, 1])
    u = rng.choice(grid, 17) + (0.25 if seed == 0 else 0.0) * np.sign(rng.random(17) - 0.3)
    out = sign_flip_pvalues(u[:, None], rng, n_permutations=None, n_tests=1, alpha=0.05)
    assert out["exact"][0] and out["n_permutations"] == 0 and out["mcse"][0] == 0
    assert out["p"][0] == pytest.approx(_enumerated_p(u), rel=1e-12)


def test_lattice_is_the_exact_sign_test_for_binary_single_runs():
    # 300 discordant tasks, 180 won by A: the two-sided exact binomial (McNemar) test
    u = np.r_[np.ones(180), -np.ones(120), np.zeros(40)]
    out = sign_flip_pvalues(u[:, None], np.random.default_rng(0), n_permutations=None, n_tests=1, alpha=0.05)
    assert out["exact"][0] and out["n_nonzero"][0] == 300
    assert out["p"][0] == pytest.approx(stats.binomtest(180, 300, 0.5).pvalue, rel=1e-10)


def test_monte_carlo_sign_flips_agree_with_scipy_permutation_test():
    # continuous differences are not on a lattice: Monte Carlo, with its error stated
    rng = np.random.default_rng(3)
    d = rng.normal(0.25, 1.0, 40)
    out = sign_flip_pvalues(d[:, None], rng, n_permutations=20_000, n_tests=1, alpha=0.05)
    assert not out["exact"][0] and out["n_permutations"] == 20_000
    p = out["p"][0]
    assert out["mcse"][0] == pytest.approx(np.sqrt(p * (1 - p) / 20_000))
    ref = stats.permutation_test(
        (d,), np.sum, permutation_type="samples", n_resamples=20_000, rng=np.random.default_rng(4)
    )
    se_ref = np.sqrt(ref.pvalue * (1 - ref.pvalue) / 20_000)
    assert abs(p - ref.pvalue) < 4 * np.hypot(out["mcse"][0], se_ref)


def test_family_sized_monte_carlo_resolves_holm_threshold():
    for m in (1, 45, 300):
        B = family_permutations(m, 0.05)
        assert B >= 9999 and 1 / (B + 1) <= 0.05 / (20 * m)


def test_cr2_equals_statsmodels_cluster_robust_t_with_equal_clusters():
    rng = np.random.default_rng(0)
    g = np.repeat(np.arange(8), 6)
    d = rng.normal(0.3, 1.0, 48) + rng.normal(0.0, 0.5, 8)[g]
    ref = sm.OLS(d, np.ones(48)).fit(cov_type="cluster", cov_kwds={"groups": g}, use_t=True)
    se, df, G = cr2_mean_se(d, g)
    assert (G, df) == (8, pytest.approx(7.0))
    assert se == pytest.approx(float(ref.bse[0]), rel=1e-12)
    a = xr.DataArray(d, dims="task", coords={"cluster": ("task", g.astype(str))})
    res = paired_test(a, xr.zeros_like(a), n_resamples=99, rng=0)
    assert float(res.p_t) == pytest.approx(float(ref.pvalues[0]), rel=1e-10)


@pytest.mark.slow
def test_cr2_degrees_of_freedom_match_the_variance_estimators_moments():
    # Bell-McCaffrey df = 2 E[V]^2 / Var[V] for the CR2 variance V under iid normal errors;
    # checked by simulation (20,000 draws: the moment ratio's MC error is about 2%)
    sizes = np.array([231, 75, 44, 34, 32, 22, 22, 19, 10, 8, 2, 1])  # SWE-bench's repos
    g = np.repeat(np.arange(12), sizes)
    rng = np.random.default_rng(11)
    e = rng.normal(size=(20_000, g.size))
    # V for all draws at once, written out (sum_g s_g^2 / (1 - n_g / N) / N^2, s_g cluster g's
    # residual sum), and the kernel's own SE on the first 500 draws: the same V
    s = (e - e.mean(1, keepdims=True)) @ (g[:, None] == np.arange(12)).astype(float)
    V = (s**2 / (1 - sizes / g.size)).sum(1) / g.size**2
    np.testing.assert_allclose([cr2_mean_se(x, g)[0] ** 2 for x in e[:500]], V[:500], rtol=1e-12)
    df = cr2_mean_se(np.zeros(g.size) + rng.normal(size=g.size), g)[1]
    assert 2 * V.mean() ** 2 / V.var() == pytest.approx(df, rel=0.06)
    assert 2.5 < df < 4.5  # far below G - 1 = 11: the data sit in a few clusters


@pytest.mark.slow
def test_cr2_t_holds_its_level_with_few_unequal_clusters_where_cr1_does_not():
    sizes = np.array([231, 75, 44, 34, 32, 22, 22, 19, 10, 8, 2, 1])
    g = np.repeat(np.arange(12), sizes)
    n_rep, alpha = 3000, 0.05
    rng = np.random.default_rng(7)
    D, t_cr2, df_cr2 = np.empty((n_rep, g.size)), np.empty(n_rep), np.empty(n_rep)
    for i in range(n_rep):
        base = rng.normal(0, 1.5, g.size)
        ea, eb = (rng.normal(0, 0.5, 12)[g] for _ in range(2))  # agent x repo interaction
        a = rng.random(g.size) < 1 / (1 + np.exp(-(base + ea)))
        b = rng.random(g.size) < 1 / (1 + np.exp(-(base + eb)))
        D[i] = d = a.astype(float) - b
        se, df_cr2[i], _ = cr2_mean_se(d, g)
        t_cr2[i] = abs(d.mean() / se)
    rej_cr2 = np.sum(2 * stats.t.sf(t_cr2, df_cr2) <= alpha)
    # statsmodels' CR1 (G / (G - 1) sum_g s_g^2 / N^2, t with G - 1 df; its (N - 1) / (N - K) is 1
    # for a mean) written out for every replicate, and statsmodels itself on the first 100: the same p
    s = (D - D.mean(1, keepdims=True)) @ (g[:, None] == np.arange(12)).astype(float)
    p_cr1 = 2 * stats.t.sf(np.abs(D.mean(1)) / np.sqrt(12 / 11 * (s**2).sum(1)) * g.size, 11)
    ref = [sm.OLS(d, np.ones(g.size)).fit(cov_type="cluster", cov_kwds={"groups": g}, use_t=True).pvalues[0]
           for d in D[:100]]  # fmt: skip
    np.testing.assert_allclose(p_cr1[:100], ref, rtol=1e-9)
    rej_cr1 = np.sum(p_cr1 <= alpha)
    tol = 3 * np.sqrt(alpha * (1 - alpha) / n_rep)  # Monte Carlo tolerance: 3 SE = 0.012
    assert rej_cr2 / n_rep <= alpha + tol
    assert rej_cr1 / n_rep > alpha + tol  # statsmodels' CR1 with G - 1 df: about 0.16 here


def _spread_agents(n_agents=16, n_tasks=200, seed=0):
    rng = np.random.default_rng(seed)
    skill = np.linspace(-2.0, 2.0, n_agents)
    logit = skill[:, None] + rng.normal(0, 1.0, n_tasks)[None] + rng.normal(0, 0.5, (n_agents, n_tasks))
    y = 1 / (1 + np.exp(-logit))  # continuous scores: the Monte Carlo path
    return xr.DataArray(
        y[..., None],
        dims=("agent", "task", "run"),
        coords={"agent": [f"a{i:02d}" for i in range(n_agents)]},
    )


@pytest.mark.slow
def test_many_agents_clear_gaps_are_significant_after_holm_with_mc_error_stated():
    data = _spread_agents()
    res = compare_agents(data, n_resamples=999, rng=1)
    assert res.attrs["test"] == "permutation"
    df = res.to_frame()
    m = len(df)  # 120 pairs
    assert res.attrs["n_permutations"] >= 20 * m / 0.05 - 1
    # every p-value is Monte Carlo here, each with its error
    assert (df["p_permutation_mcse"] > 0).all()
    np.testing.assert_allclose(df["p_value_mcse"], df["p_permutation_mcse"])
    np.testing.assert_allclose(df["p_holm"], smm.multipletests(df["p_value"], method="holm")[1])
    # a gap of more than 8 standard errors (paired t) is significant, whatever m
    se = np.abs(df["estimate"]) / stats.t.isf(df["p_t"] / 2, df["n_tasks"] - 1)
    clear = np.abs(df["estimate"]) > 8 * se
    assert clear.sum() > 40
    assert (df.loc[clear, "p_holm"] < 0.05).all()
    # the old fixed resolution could not: 1,999 sign flips for 120 pairs
    with pytest.warns(PValueResolutionWarning, match=r"no pair can be called different.*raise `n_permutations`"):
        old = compare_agents(
            data, test="permutation", adjust="holm", n_resamples=99, n_permutations=1999, rng=1
        )
    assert (old.to_frame()["p_holm"] >= 0.05).all()


def test_matrix_view_marks_the_pairs_of_the_family_wise_verdict():
    ds, _ = simulate_eval(n_agents=6, n_tasks=80, n_runs=2, sd_agent=1.5, rng=2)
    res = compare_agents(ds, n_resamples=199, rng=0)
    assert res.attrs["adjust"] == "maxt"
    mat = res.matrix()
    assert mat.shape == (6, 6)
    order = [r.split(" ", 1)[1] for r in mat.index]
    avg = res.mean_diff.mean("opponent", skipna=True).to_series()
    assert order == avg.sort_values(ascending=False).index.tolist()
    for i, a in enumerate(order):
        for j, b in enumerate(order):
            cell = mat.iloc[i, j]
            if a == b:
                assert cell == ""
                continue
            assert cell.endswith("*") == bool(float(res.p_maxt.sel(agent=a, opponent=b)) < 0.05)
            assert float(cell.rstrip("*")) == pytest.approx(
                float(res.mean_diff.sel(agent=a, opponent=b)), abs=0.005 + 1e-9
            )
    assert len(repr(res).splitlines()) <= 10
    holm_marks = res.matrix(adjust="holm")
    sig = res.significant(adjust="holm")
    a, b = order[0], order[-1]
    assert holm_marks.iloc[0, -1].endswith("*") == bool(sig.sel(agent=a, opponent=b))


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_holm_and_bh_carry_the_monte_carlo_error_of_the_p_value_that_sets_them():
    """Against statsmodels: the derivative of its adjusted p-values along the raw errors."""
    data = _spread_agents(n_agents=6, n_tasks=60)
    res = compare_agents(data, test="permutation", adjust="holm", n_resamples=9, rng=0)
    df = res.to_frame()
    assert (df["p_value_mcse"] > 0).all()
    p, e, h = df["p_value"].to_numpy(), df["p_value_mcse"].to_numpy(), 1e-7
    for key, method in (("p_holm", "holm"), ("p_bh", "fdr_bh")):
        base = smm.multipletests(p, method=method)[1]
        slope = (smm.multipletests(p + h * e, method=method)[1] - base) / h
        np.testing.assert_allclose(df[key + "_mcse"], np.where(base >= 1, 0.0, slope), rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose(df["p_adjusted"], df["p_holm"])
    np.testing.assert_allclose(df["p_adjusted_mcse"], df["p_holm_mcse"])


def test_adjust_choices_are_checked_and_named():
    ds, _ = simulate_eval(n_agents=3, n_tasks=30, n_runs=2, rng=0)
    with pytest.raises(ValueError, match=r"`adjust` must be one of .*; got 'sidak'"):
        compare_agents(ds, adjust="sidak")
    with pytest.raises(ValueError, match=r"`adjust`='maxt' needs the joint null law .* bootstrap"):
        compare_agents(ds, test="bootstrap", adjust="maxt")
    with pytest.warns(PValueResolutionWarning, match="Holm's first threshold"):
        res = compare_agents(ds, test="bootstrap", n_resamples=99, rng=0)
    assert res.attrs["adjust"] == "holm" and "no joint null law" in res.attrs["adjust_reason"]
    with pytest.raises(ValueError, match="no max-T p-values here"):
        res.significant(adjust="maxt")
    assert np.isnan(res.ci_simultaneous.values).all()


def _brute_cluster_maxt(y, agents, codes):
    """Every sign pattern of the clusters: each pair's CR2 t, the family's maximum.

    All 2^(G - 1) patterns at once, with the CR2 SE of a mean written out (cluster g's
    residual sum s_g: SE^2 = sum_g s_g^2 / (1 - n_g / N) / N^2, Bell and McCaffrey);
    on the observed differences it is checked against the kernel (``cr2_mean_se``).
    """
    pairs = list(itertools.combinations(range(len(agents)), 2))
    d = np.stack([y[i] - y[j] for i, j in pairs], 1)  # tasks x pairs
    G, N = int(codes.max()) + 1, d.shape[0]
    n_g = np.bincount(codes, minlength=G).astype(float)
    sums = np.stack([np.bincount(codes, weights=col, minlength=G) for col in d.T], 1)  # clusters x pairs
    signs = np.array([np.r_[1.0, s] for s in itertools.product([1.0, -1.0], repeat=G - 1)])  # patterns x clusters
    mean = signs @ sums / N  # patterns x pairs: the flipped differences' means
    s = signs[:, :, None] * sums[None] - n_g[None, :, None] * mean[:, None, :]  # residual sums by cluster
    t = np.abs(mean) / (np.sqrt((s**2 / (1 - n_g / N)[None, :, None]).sum(1)) / N)
    obs = t[0]  # the identity pattern
    kernel = [abs(d[:, k].mean() / cr2_mean_se(d[:, k], codes)[0]) for k in range(len(pairs))]
    np.testing.assert_allclose(obs, kernel, rtol=1e-12)
    hits = (t.max(1)[:, None] >= obs - 1e-9 * obs).sum(0)
    return {f"{agents[i]} - {agents[j]}": h / 2 ** (G - 1) for (i, j), h in zip(pairs, hits, strict=True)}


@pytest.mark.slow
def test_swebench_bash_only_pairs(shared_data):
    import hierbench as hb

    ds = hb.data.load_swebench_bash_only()
    assert ds.sizes["agent"] == 25 and ds.sizes["task"] == 500
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clustered = compare_agents(ds, n_resamples=999, rng=0)
        tasks = compare_agents(ds, cluster=None, n_resamples=999, rng=0)
        holm_t = compare_agents(ds, test="t", adjust="holm", n_resamples=99, rng=0)
    # 12 repos: the max-T of the family from all 2^11 shared sign patterns of the repos
    a = clustered.attrs
    assert (a["test"], a["adjust"], a["unit"], a["n_units_total"]) == ("permutation", "maxt", "clusters", 12)
    assert a["maxt_exact"] and "all 4096 sign patterns" in a["maxt_method"] and "(2048 computed" in a["maxt_method"]
    dfc = clustered.to_frame()
    assert (dfc["p_maxt_mcse"] == 0).all()
    # its per-pair interval is the CR2 t interval: it excludes 0 exactly when p_t < 0.05
    assert clustered.ci.attrs["ci_kind"] == "t" and "ci_bootstrap" in clustered
    excludes = (dfc["lower"] > 0) | (dfc["upper"] < 0)
    assert (excludes == (dfc["p_t"] < 0.05)).all()
    # the simultaneous interval excludes 0 exactly for the pairs the max-T separates
    sim = clustered.ci_simultaneous
    assert sim.attrs["ci_kind"] == "max-t" and "simultaneous, max-T over 300 comparisons" in sim.attrs["ci_detail"]
    separated = dfc["p_maxt"] < 0.05
    assert (((dfc["simultaneous_lower"] > 0) | (dfc["simultaneous_upper"] < 0)) == separated).all()
    assert (clustered.significant().values[np.triu_indices(25, 1)] == separated.to_numpy()).all()
    # every pair whose per-pair 95% interval clears 0 by more than its own width is separated
    width = dfc["upper"] - dfc["lower"]
    wide = (dfc["lower"] > width) | (dfc["upper"] < -width)
    assert wide.sum() > 100 and separated[wide].all()
    # ... and more than Holm on the same CR2 t-tests (|t| > 18.9), which it contains
    holm_sep = holm_t.to_frame()["p_holm"] < 0.05
    assert separated[holm_sep].all() and separated.sum() > 2 * holm_sep.sum()
    # the max-T p-values against brute force with the CR2 kernel, on five agents' ten pairs
    sub = ds.isel(agent=[0, 5, 10, 15, 20])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        small = compare_agents(sub, n_resamples=9, rng=0).to_frame()
    _, codes = np.unique(sub.cluster.values, return_inverse=True)
    ref = _brute_cluster_maxt(sub.score.isel(run=0).values, list(sub.agent.values), codes)
    np.testing.assert_allclose(small["p_maxt"], [ref[k] for k in small.index], rtol=1e-12)
    # tasks as the unit: the exact sign test, checked against scipy's binomial test
    assert tasks.attrs["test"] == "permutation" and tasks.attrs["n_permutations"] == 0
    dft = tasks.to_frame()
    y = ds.score.isel(run=0)
    row = {str(a): i for i, a in enumerate(ds.agent.values)}
    yv = y.values  # rows picked by position (a label lookup per pair cost more than the binomial tests)
    p_ref = []
    for a_, b_ in zip(dft["agent"], dft["opponent"], strict=True):
        d = yv[row[a_]] - yv[row[b_]]
        p_ref.append(stats.binomtest(int((d > 0).sum()), int((d != 0).sum()), 0.5).pvalue)
    np.testing.assert_allclose(dft["p_permutation"], p_ref, rtol=1e-9)
    np.testing.assert_allclose(dft["p_holm"], smm.multipletests(p_ref, method="holm")[1], rtol=1e-9)
    a_, b_ = dft["agent"].iloc[7], dft["opponent"].iloc[7]
    ref_t = stats.ttest_rel(y.sel(agent=a_), y.sel(agent=b_)).pvalue
    assert float(tasks.p_t.sel(agent=a_, opponent=b_)) == pytest.approx(ref_t, rel=1e-9)
    # Monte Carlo max-T over 500 tasks, with its error; wide pairs separated here too
    assert tasks.attrs["maxt_draws"] >= 21112
    assert (dft["p_maxt_mcse"] > 0).where(dft["p_maxt"] < 1, True).all()
    width = dft["upper"] - dft["lower"]
    wide = (dft["lower"] > width) | (dft["upper"] < -width)
    assert wide.sum() > 150 and (dft.loc[wide, "p_maxt"] < 0.05).all()


def test_every_pair_of_a_ragged_log_has_scipys_paired_t_on_its_shared_tasks():
    """10 agents, 30 tasks, 15% of cells never run: each pair's mean, SE, p_t, d_z and P(superiority)
    over the tasks both ran, against scipy's paired t-test and numpy on those tasks, pair by pair.
    """
    ds, _ = simulate_eval(n_agents=10, n_tasks=30, n_runs=2, p_missing_task=0.15, rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = compare_agents(ds, test="t", adjust="holm", n_resamples=9, rng=0).to_frame()
    y = ds.score.mean("run")
    assert df["n_tasks"].nunique() > 3  # the pairs share different sets of tasks
    for pair, row in df.iterrows():
        a, b = y.sel(agent=row["agent"]).values, y.sel(agent=row["opponent"]).values
        both = np.isfinite(a) & np.isfinite(b)
        d = a[both] - b[both]
        ref = stats.ttest_rel(a[both], b[both])
        assert row["n_tasks"] == both.sum(), pair
        assert row["mean_diff"] == pytest.approx(d.mean(), rel=1e-12, abs=1e-15)
        assert row["se"] == pytest.approx(stats.sem(d), rel=1e-12)
        assert row["p_t"] == pytest.approx(ref.pvalue, rel=1e-9)
        assert row["cohens_dz"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-12, abs=1e-15)
        assert row["prob_superiority"] == pytest.approx(np.mean(d > 0) + 0.5 * np.mean(d == 0))


def test_t_intervals_of_unit_scores_stay_in_minus_one_one():
    """Four clusters, a large difference: the CR2 t interval (scipy's t quantile at the result's own
    Bell-McCaffrey df) reaches past 1; the reported one stops at 1 and says why. Scores outside
    [0, 1] are left as they are.
    """
    st = stats
    a = np.array([1, 1, 1, 0, 1, 1, 1, 1.0])
    b = np.array([0, 0, 0, 0, 1, 0, 0, 0.0])
    cl = np.array([0, 0, 1, 1, 2, 2, 3, 3])

    def ds(scale):
        return xr.Dataset({"score": (("agent", "task", "run"), (np.vstack([a, b]) * scale)[..., None])},
                          coords={"agent": ["a", "b"], "task": [f"t{i}" for i in range(8)], "cluster": ("task", cl)})  # fmt: skip

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = compare_agents(ds(1.0), rng=0)
        wide = compare_agents(ds(2.0), rng=0)
    t = res.table.sel(agent="a", opponent="b")
    raw_hi = float(t.mean_diff + st.t.ppf(0.975, float(t.df)) * t.se)
    assert raw_hi > 1.0 and float(t.ci.sel(ci_bound="upper")) == 1.0
    assert float(t.ci.sel(ci_bound="lower")) == pytest.approx(float(t.mean_diff - st.t.ppf(0.975, float(t.df)) * t.se))
    assert "intersected with [-1, 1]" in res.table.ci.attrs["ci_detail"]
    w = wide.table.sel(agent="a", opponent="b")
    assert float(w.ci.sel(ci_bound="upper")) == pytest.approx(2 * raw_hi)  # twice the scores, not clipped
    assert "intersected" not in wide.table.ci.attrs["ci_detail"]


def test_exact_max_t_states_the_number_of_sign_patterns_it_enumerates():
    # the audit: "all 1024 sign patterns of the 11 clusters", where 11 clusters have 2^11 = 2048;
    # the enumeration fixes one sign (a pattern and its flip of every sign give the same |t|),
    # so the text must say 2^(C-1) enumerated and 2^C counting the flips
    import pandas as pd

    from hierbench.data import from_records

    C, rng = 8, np.random.default_rng(4)
    rows = []
    for g in range(C):
        for t in range(3):
            for agent, p in (("a", 0.9), ("b", 0.5), ("c", 0.2)):
                for r in range(2):
                    # a solves every task, b fails each cluster's first task: a - b differs in all C
                    s = 1.0 if agent == "a" else 0.0 if (agent == "b" and t == 0) else float(rng.random() < p)
                    rows.append({"agent": agent, "task": f"g{g}t{t}", "run": r, "score": s, "repo": f"r{g}"})
    ds = from_records(pd.DataFrame(rows), run="run", cluster="repo")
    res = compare_agents(ds, test="permutation", adjust="maxt", rng=0)
    text = res.attrs["maxt_method"]
    assert res.attrs["maxt_exact"]
    assert text.startswith(f"exact over all {2 ** C} sign patterns of the {C} clusters with a difference "
                           f"({2 ** (C - 1)} computed: flipping every sign leaves |t| as it is)"), text


def test_adjusted_p_below_the_raw_one_is_explained():
    """Audit: SWE-bench's Gemini vs Claude 4 Opus had p_value 0.0078 and max-T p_adjusted 0.0039,
    unexplained. The per-pair sign-flip test ranks the patterns by the summed difference, max-T by the
    CR2 t; with clusters of unequal size they differ. Two agents, 6 clusters of 1-8 tasks: both
    p-values by enumerating the 2^5 patterns here (the sum by plain numpy).
    """
    a = [1, 0, 1, 1, 1, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1]
    b = [0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0]
    codes = np.repeat(np.arange(6), [1, 1, 2, 3, 5, 8])
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), np.array([a, b], dtype=float)[..., None])},
        coords={"agent": ["a", "b"], "task": [f"t{i}" for i in range(20)], "cluster": ("task", codes)},
    )
    d = np.array(a, float) - np.array(b, float)
    sums = np.bincount(codes, d)
    patterns = [np.r_[1.0, s] for s in itertools.product([1.0, -1.0], repeat=5)]
    p_sum = np.mean([abs(p @ sums) >= abs(sums.sum()) - 1e-12 for p in patterns])
    t_obs = abs(d.mean() / cr2_mean_se(d, codes)[0])
    p_t = np.mean([abs((p[codes] * d).mean() / cr2_mean_se(p[codes] * d, codes)[0]) >= t_obs * (1 - 1e-9)
                   for p in patterns])
    assert (p_sum, p_t) == (6 / 32, 3 / 32)  # the two statistics part
    res = compare_agents(ds, adjust="maxt", n_resamples=99, rng=0)
    assert (res.attrs["test"], res.attrs["adjust"], res.attrs["unit"]) == ("permutation", "maxt", "clusters")
    # by default one pair is not adjusted: its verdict is its own sign-flip p, the enumerated 6/32
    own = compare_agents(ds, n_resamples=99, rng=0)
    assert own.attrs["adjust"] == "holm" and own.attrs["adjust_reason"].startswith("none: one pair")
    assert float(own.p_adjusted.sel(agent="a", opponent="b")) == pytest.approx(p_sum, abs=1e-12)
    assert float(res.p_value.sel(agent="a", opponent="b")) == pytest.approx(p_sum, abs=1e-12)
    assert float(res.p_adjusted.sel(agent="a", opponent="b")) == pytest.approx(p_t, abs=1e-12)
    note = res.attrs["p_value_note"]
    assert "CR2-studentized t" in note and "can be below its p_value" in note
    assert res.to_frame().attrs["p_value_note"] == note
    text = " ".join(repr(res).split())
    assert "note: 1 of 1 pairs have p_adjusted below p_value: p_value is each pair's sign-flip test" in text
    # Holm on the same p-values never goes below them: no note; tasks as units order the patterns
    # alike (the studentized t is monotone in the mean): over all 2^9 patterns of the 9 tasks with a
    # difference, one pair's max-T p is its sign-flip p
    holm = compare_agents(ds, adjust="holm", n_resamples=99, rng=0)
    assert holm.attrs["p_value_note"] == "" and "note:" not in repr(holm)
    tasks = compare_agents(ds, cluster=None, adjust="maxt", n_resamples=99, rng=0)
    assert "Monte Carlo error" in tasks.attrs["p_value_note"]
    assert tasks.attrs["maxt_exact"]
    assert float(tasks.p_adjusted.sel(agent="a", opponent="b")) == pytest.approx(
        float(tasks.p_value.sel(agent="a", opponent="b")), abs=1e-12
    )
    assert "note:" not in repr(tasks)


def test_compare_agents_refuses_a_family_too_large_before_any_work(monkeypatch):
    from hierbench.freq._resampling import _pair_stats

    # InstEval read as agents x tasks: 1,128 lecturers x 2,972 students, 635,628 pairs
    with pytest.raises(ValueError, match=r"1,128 agents make 635,628 pairs, and over 2,972 tasks") as err:
        _pair_stats._all_pairs(1128, 2972, "agent")
    assert "paired_test" in str(err.value) and "rank_uncertainty" in str(err.value)
    assert len(_pair_stats._all_pairs(316, 24, "agent")) == 316 * 315 // 2  # VerbAgg's 49,770 pairs pass
    # the suggested number of agents is the largest whose pairs fit (brute force)
    for n_tasks in (24, 500, 2972, 10**6):
        fit = [a for a in range(2, 5000) if a * (a - 1) // 2 * n_tasks <= _pair_stats._MAX_PAIR_TASKS]
        assert _pair_stats._agents_within(n_tasks) == (max(fit) if fit else 1)
    # the refusal comes before the resampling, from compare_agents itself
    monkeypatch.setattr(_pair_stats, "_MAX_PAIR_TASKS", 100)
    ds, _ = simulate_eval(n_agents=6, n_tasks=20, n_runs=1, rng=0)
    with pytest.raises(ValueError, match=r"`data`: 6 agents make 15 pairs, and over 20 tasks .* 300 pair x task"):
        compare_agents(ds, n_resamples=99, rng=0)


def test_pairs_without_shared_tasks_are_counted_and_a_few_named():
    # 14 agents on disjoint tasks but the first two: 90 of 91 pairs share no task
    score = np.full((14, 30, 1), np.nan)
    rng = np.random.default_rng(0)
    score[:2, :16, 0] = rng.integers(0, 2, (2, 16))
    for a in range(2, 14):
        score[a, 16 + a - 2, 0] = 1.0
    ds = xr.Dataset({"score": (("agent", "task", "run"), score)},
                    coords={"agent": [f"a{i:02d}" for i in range(14)]})
    with pytest.warns(UndefinedTestWarning, match=r"90 of 91 pairs have fewer than 2 shared tasks .* and 80 more"):
        res = compare_agents(ds, n_resamples=99, rng=0)
    assert np.isfinite(res.mean_diff.values[0, 1]) and np.isnan(res.mean_diff.values[0, 2])


def test_two_clusters_with_a_pair_that_agrees_in_both_give_a_result_not_an_svd_failure():
    """A pair whose mean differences agree in both of two clusters has a CR2 SE of exactly 0; it was
    computed as 6.9e-18 (t = 4e16) beside CR2 scores of exactly 0, and the multivariate-t check
    failed with `LinAlgError: SVD did not converge` (a report's pair section: "not computed").
    By hand (numpy): each pair's difference per cluster; where the two agree the SE is 0 and the
    pair has no p-value; the others keep theirs.
    """
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=3, n_tasks=16, n_runs=3, rng=4)
    ds = ds.drop_vars("cluster", errors="ignore").assign_coords(cluster=("task", ["a"] * 8 + ["b"] * 8))
    means = ds["score"].mean("run").values  # agent x task, every task run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = compare_agents(ds, rng=0)
    fr = res.to_frame()
    agents = [str(a) for a in ds["agent"].values]
    for (i, j), row in zip(itertools.combinations(range(3), 2), fr.itertuples(), strict=True):
        d = means[i] - means[j]
        agree = np.isclose(d[:8].mean(), d[8:].mean(), rtol=0, atol=1e-12)
        assert row.Index == f"{agents[i]} - {agents[j]}"
        assert (row.se == 0) == agree and np.isnan(row.p_value) == agree
    assert (fr["se"] == 0).sum() == 1  # the design has one such pair (checked above by hand)
    assert res.to_dataset().attrs["test"] == "t"


def test_a_p_value_floor_from_few_tasks_says_no_setting_lowers_it():
    """Two agents differing on 5 tasks: max-T's exact sign flips give 2^5 / 2 = 16 distinct patterns,
    so no p goes below 1/16 = 0.0625 > 0.05. The warning said "Leave `test`, `adjust`,
    `n_permutations` and `n_draws` at their defaults", which they were, and named no cause.
    """
    s = np.zeros((2, 9, 1))
    s[0, :5] = 1.0  # a passes 5 tasks b fails; the other 4 tie
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)}, coords={"agent": ["a", "b"]})
    with pytest.warns(PValueResolutionWarning) as rec:
        compare_agents(ds, adjust="maxt", rng=0)
    text = next(str(w.message) for w in rec if w.category is PValueResolutionWarning)
    assert f"can go below {1 / 2 ** (5 - 1):.3g}" in text
    assert "the 5 tasks (or clusters) with a difference give 16 distinct sign patterns" in text
    assert "no setting does" in text and "Leave `test`" not in text
    # by default (one pair: its own sign-flip p) the same floor, over the 5 tasks with a difference,
    # not the 9 tasks (2^(1 - 9) = 0.0039 said nothing); 2 of the 2^5 patterns reach |sum| 5
    with pytest.warns(PValueResolutionWarning) as rec:
        res = compare_agents(ds, rng=0)
    text = next(str(w.message) for w in rec if w.category is PValueResolutionWarning)
    assert res.attrs["adjust"] == "holm" and float(res.p_value_floor.sel(agent="a", opponent="b")) == 2 / 2**5
    assert f"can go below {2 / 2**5:.3g}" in text and "no setting does" in text
    assert "chooses its test" not in text  # the test was chosen for this one pair already
