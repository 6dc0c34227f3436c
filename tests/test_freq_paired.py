"""Paired comparisons: enumeration, scipy, the seed-003 worked example, type-I error by simulation."""

import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
import statsmodels.stats.multitest as smm
import xarray as xr
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import expit

from hierbench.freq import UndefinedTestWarning
from hierbench.freq import bootstrap_ci
from hierbench.freq import compare_agents
from hierbench.freq import holm
from hierbench.freq import paired_test
from hierbench.freq._resampling._paired import _mcnemar_p
from hierbench.testing import simulate_eval


def _brute_force_sign_flip(d):
    d = np.asarray(d, float)
    obs = abs(d.sum())
    sums = [abs(np.dot(s, d)) for s in itertools.product([-1, 1], repeat=d.size)]
    return np.mean(np.array(sums) >= obs - 1e-9)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.sampled_from([-1.0, -0.5, -1 / 3, 0.0, 0.25, 1 / 3, 0.5, 2 / 3, 1.0]),
        min_size=2,
        max_size=12,
    )
)
@pytest.mark.slow
def test_exact_sign_flip_equals_brute_force_enumeration(d):
    d = np.array(d)
    if np.all(d == 0):
        d[0] = 0.5
    a = xr.DataArray(np.clip(d, 0, 1), dims="task")
    b = xr.DataArray(np.clip(-d, 0, 1), dims="task")
    diff = (a - b).values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedTestWarning)
        res = paired_test(a, b, n_resamples=10, rng=0)
    assert res.counts["exact"]
    assert float(res.p_permutation) == pytest.approx(_brute_force_sign_flip(diff), abs=1e-12)
    assert float(res.p_permutation_mcse) == 0.0


def test_family_sign_flips_of_reordered_columns_equal_brute_force_enumeration(monkeypatch):
    """60 columns: six multisets of 16 |u| on the lattice of halves (4 to 16 non-zero: enumeration
    and lattice convolution), each in ten random orders and signs (columns that share a law and
    columns that do not); each p-value is the share of all 2^16 sign patterns whose |sum| reaches
    the column's own.
    """
    from hierbench.freq._resampling import _signflip
    from hierbench.freq._resampling._signflip import sign_flip_pvalues

    rng = np.random.default_rng(5)
    cols = []
    for n_zero in (0, 2, 5, 8, 11, 12):
        base = rng.choice([0.5, 1.0, 1.5], size=16)
        base[:n_zero] = 0.0
        cols += [rng.permutation(base) * rng.choice([-1.0, 1.0], size=16) for _ in range(10)]
    u = np.array(cols).T
    signs = 1.0 - 2.0 * ((np.arange(2**16)[:, None] >> np.arange(16)) & 1)
    ref = np.mean(np.abs(signs @ u) >= np.abs(u.sum(0)) - 1e-9, axis=0)
    out = sign_flip_pvalues(u, np.random.default_rng(0), n_permutations=None, n_tests=60, alpha=0.05)
    assert out["exact"].all() and out["n_permutations"] == 0
    assert len(set(ref.tolist())) > 12  # laws and observed sums differ between columns
    np.testing.assert_array_equal(out["p"], ref)
    # the same with the columns taken 4 at a time (a law met in an earlier block is reused)
    monkeypatch.setattr(_signflip, "_BLOCK_ELEMS", 64)
    out = sign_flip_pvalues(u, np.random.default_rng(0), n_permutations=None, n_tests=60, alpha=0.05)
    np.testing.assert_array_equal(out["p"], ref)


#: seven tasks in four clusters, for the cluster tests below
_CL = np.array(["r1", "r1", "r2", "r2", "r3", "r4", "r4"])


def _clustered_pair(d: np.ndarray) -> tuple[xr.DataArray, xr.DataArray]:
    """Two agents' scores on the tasks of ``_CL`` whose differences are ``d``."""
    coords = {"cluster": ("task", _CL)}
    return (xr.DataArray(np.clip(d, 0, 1), dims="task", coords=coords),
            xr.DataArray(np.clip(-d, 0, 1), dims="task", coords=coords))


def test_cluster_sign_flip_enumerates_cluster_sums():
    d = np.array([0.5, -0.25, 1.0, 0.0, -1.0, 0.75, 0.5])
    cl = _CL
    a, b = _clustered_pair(d)
    res = paired_test(a, b, n_resamples=10, rng=0)
    sums = [d[cl == c].sum() for c in ["r1", "r2", "r3", "r4"]]
    assert float(res.p_permutation) == pytest.approx(_brute_force_sign_flip(sums))
    res_none = paired_test(a, b, cluster=None, n_resamples=10, rng=0)
    assert float(res_none.p_permutation) == pytest.approx(_brute_force_sign_flip(d))


def test_counts_name_tasks_and_clusters_that_differ_apart():
    # notebook 01 printed 'n_nonzero 7' under 'n_tasks 500': 7 repositories, where 57 tasks
    # differ. Here 6 tasks differ, and r1's two cancel: 3 of the 4 clusters differ (by hand)
    d = np.array([0.5, -0.5, 1.0, 0.0, -1.0, 0.75, 0.5])
    a, b = _clustered_pair(d)
    res = paired_test(a, b, n_resamples=10, rng=0)
    assert res.counts["n_tasks_nonzero"] == int(np.count_nonzero(d)) == 6
    assert res.counts["n_clusters_nonzero"] == 3 and "n_nonzero" not in res.counts
    plain = paired_test(a, b, cluster=None, n_resamples=10, rng=0)
    assert plain.counts["n_tasks_nonzero"] == 6 and "n_clusters_nonzero" not in plain.counts


def test_mcnemar_equals_scipy_binomtest_on_discordant_counts():
    rng = np.random.default_rng(4)
    a = (rng.random((80, 3)) < 0.6).astype(float)  # 3 runs: the majority is always defined
    b = (rng.random((80, 3)) < 0.45).astype(float)
    A, B = xr.DataArray(a, dims=("task", "run")), xr.DataArray(b, dims=("task", "run"))
    res = paired_test(A, B, n_resamples=99, n_permutations=99, rng=0)
    ma, mb = a.mean(1) > 0.5, b.mean(1) > 0.5
    n10, n01 = int(np.sum(ma & ~mb)), int(np.sum(~ma & mb))
    assert (res.counts["n_a_only"], res.counts["n_b_only"]) == (n10, n01)
    assert float(res.p_mcnemar) == pytest.approx(stats.binomtest(n10, n10 + n01, 0.5).pvalue)


def test_mcnemar_leaves_out_tasks_without_majority_and_counts_them():
    a = xr.DataArray([[1, 0], [1, 1], [0, 0], [1, 1], [1, 1]], dims=("task", "run")).astype(float)
    b = xr.DataArray([[1, 1], [0, 0], [0, 0], [0, 0], [1, 1]], dims=("task", "run")).astype(float)
    res = paired_test(a, b, n_resamples=99, rng=0)
    assert res.counts["n_mcnemar_ties"] == 1
    assert (res.counts["n_a_only"], res.counts["n_b_only"]) == (2, 0)
    assert float(res.p_mcnemar) == pytest.approx(stats.binomtest(2, 2, 0.5).pvalue)


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_vectorised_mcnemar_equals_binomtest_and_exact_enumeration_up_to_200():
    # every (n10, n01) with 0 < n10 + n01 <= 80, ties included, at once; then every split of
    # a few larger totals up to 200 (binomtest one pair at a time is the cost of this test)
    n10, n01 = (g.ravel() for g in np.meshgrid(np.arange(81), np.arange(81), indexing="ij"))
    keep = (n10 + n01 > 0) & (n10 + n01 <= 80)
    big = np.concatenate([np.arange(n + 1) for n in (99, 128, 157, 200)])
    tot = np.repeat([99, 128, 157, 200], [100, 129, 158, 201])
    n10, n01 = np.concatenate([n10[keep], big]), np.concatenate([n01[keep], tot - big])
    p = _mcnemar_p(n10, n01)
    ref = np.array([stats.binomtest(int(a), int(a + b), 0.5).pvalue for a, b in zip(n10, n01, strict=True)])
    np.testing.assert_allclose(p, ref, rtol=1e-12, atol=0)
    # exact: at 1/2 the outcomes no likelier than the one seen are both tails beyond min(n10, n01)
    # (all of them when n10 = n01), their binomial coefficients summed in integers
    cum = {n: list(itertools.accumulate(math.comb(n, x) for x in range(n + 1))) for n in range(201)}
    exact = [
        1.0 if a == b else float(min(Fraction(1), Fraction(2 * cum[a + b][min(a, b)], 2 ** (a + b))))
        for a, b in zip(n10.tolist(), n01.tolist(), strict=True)
    ]
    np.testing.assert_allclose(p, exact, rtol=1e-13, atol=0)
    assert np.isnan(_mcnemar_p([0], [0])).all()  # no discordant task: no test
    assert (p[n10 == n01] == 1.0).all()


def test_compare_agents_mcnemar_is_binomtest_per_pair_on_ragged_runs():
    # 2 runs: per-task means of 1/2 (no majority, left out), tasks one agent never ran
    ds, _ = simulate_eval(n_agents=6, n_tasks=40, n_runs=2, p_missing_task=0.2, rng=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = compare_agents(ds, n_resamples=99, rng=0)
    m = ds.score.mean("run").values
    for i, j in itertools.combinations(range(6), 2):
        both = np.isfinite(m[i]) & np.isfinite(m[j])
        a, b = m[i, both], m[j, both]
        n10, n01 = int(np.sum((a > 0.5) & (b < 0.5))), int(np.sum((a < 0.5) & (b > 0.5)))
        ref = stats.binomtest(n10, n10 + n01, 0.5).pvalue if n10 + n01 else np.nan
        got = res.p_mcnemar.values[i, j]
        assert got == pytest.approx(ref, rel=1e-12, nan_ok=True) and res.p_mcnemar.values[j, i] == got


def test_seed_003_paired_worked_example():
    # 500 questions: both right 300, A only 40, B only 22, neither 138 (seed 003)
    a = np.array([1] * 300 + [1] * 40 + [0] * 22 + [0] * 138, float)
    b = np.array([1] * 300 + [0] * 40 + [1] * 22 + [0] * 138, float)
    res = paired_test(xr.DataArray(a, dims="task"), xr.DataArray(b, dims="task"), rng=0)
    assert round(float(res.mean_diff), 3) == 0.036
    assert round(float(res.se), 4) == 0.0157  # "SE = 1.57 points"
    assert round(float(res.p_t), 3) == 0.022  # "two-sided p ~ 0.022"
    assert round(float(res.p_mcnemar), 3) == 0.030  # "exact McNemar ... p ~ 0.030"
    # "95% CI = [+0.5, +6.7]" (Wald); ``ci`` is the paired t (499 df, scipy's quantile), and the
    # bootstrap percentile interval (``ci_bootstrap``) agrees to within its Monte Carlo error
    # (9,999 resamples: ~0.001) plus the Wald/percentile difference.
    d = a - b
    half = stats.t.ppf(0.975, 499) * np.std(d, ddof=1) / np.sqrt(500)
    np.testing.assert_allclose(res.ci.values, [d.mean() - half, d.mean() + half], rtol=1e-12)
    np.testing.assert_allclose(res.ci.values, [0.005, 0.067], atol=0.002)
    np.testing.assert_allclose(res.ci_bootstrap.values, [0.005, 0.067], atol=0.002)
    # with +-1 differences the sign-flip test is the exact two-sided sign (McNemar) test:
    # 62 non-zero units put it on the integer lattice, so it is computed exactly, no draws
    assert res.counts["exact"] and res.counts["n_permutations"] == 0
    assert float(res.p_permutation_mcse) == 0.0
    assert float(res.p_permutation) == pytest.approx(stats.binomtest(40, 62, 0.5).pvalue, rel=1e-12)
    assert float(res.prob_superiority) == pytest.approx(0.5 + 0.036 / 2)
    assert float(res.cohens_dz) == pytest.approx(0.036 / np.std(a - b, ddof=1))
    assert res.ci.attrs["ci_prob"] == 0.95 and res.ci.attrs["ci_kind"] == "t"
    assert res.ci.attrs["ci_detail"].startswith("paired t interval over tasks (T - 1 df)")
    assert res.ci_bootstrap.attrs["ci_prob"] == 0.95 and res.ci_bootstrap.attrs["ci_kind"] == "percentile"
    assert "bootstrap" in res.ci_bootstrap.attrs["ci_detail"]


@pytest.mark.slow
def test_type_one_error_under_h0_with_interaction_and_pooled_test_exceeds_it():
    # H0: two agents with the same skill; agent x task interaction sd 1.5 (logit), 5 runs.
    n_rep, T, R, alpha = 400, 60, 5, 0.05
    rng = np.random.default_rng(2026)
    eta = rng.normal(0, 1.5, (n_rep, 1, T, 1)) + rng.normal(0, 1.5, (n_rep, 2, T, 1))
    y = (rng.random((n_rep, 2, T, R)) < expit(eta)).astype(float)
    rej = {k: 0 for k in ("permutation", "bootstrap", "t", "mcnemar", "pooled")}
    for i in range(n_rep):
        a = xr.DataArray(y[i, 0], dims=("task", "run"))
        b = xr.DataArray(y[i, 1], dims=("task", "run"))
        res = paired_test(a, b, n_resamples=499, n_permutations=499, rng=i)
        rej["permutation"] += float(res.p_permutation) <= alpha
        rej["bootstrap"] += float(res.p_bootstrap) <= alpha
        rej["t"] += float(res.p_t) <= alpha
        rej["mcnemar"] += float(res.p_mcnemar) <= alpha
    # the pooled test: all T*R run pairs (task t, run r) as independent paired units
    d = (y[:, 0] - y[:, 1]).reshape(n_rep, T * R)
    p_pooled = stats.ttest_1samp(d, 0.0, axis=1).pvalue
    rej["pooled"] = int(np.sum(p_pooled <= alpha))
    rate = {k: v / n_rep for k, v in rej.items()}
    tol = 3 * np.sqrt(alpha * (1 - alpha) / n_rep)  # Monte Carlo tolerance: 3 SE = 0.033
    for k in ("permutation", "bootstrap", "t"):
        assert abs(rate[k] - alpha) <= tol, rate
    # exact McNemar is conservative (discrete): it must not exceed alpha
    assert rate["mcnemar"] <= alpha + tol, rate
    assert rate["pooled"] > alpha + tol, rate  # 0.175 at this seed


@pytest.mark.slow
def test_compare_agents_holm_bh_against_statsmodels_and_symmetry():
    ds, _ = simulate_eval(n_agents=4, n_tasks=60, n_runs=3, sd_agent=0.6, rng=8)
    res = compare_agents(ds, n_resamples=999, n_permutations=999, rng=3)
    iu = np.triu_indices(4, 1)
    p = res.p_permutation.values[iu]
    np.testing.assert_allclose(res.p_holm.values[iu], smm.multipletests(p, method="holm")[1])
    np.testing.assert_allclose(res.p_bh.values[iu], smm.multipletests(p, method="fdr_bh")[1])
    np.testing.assert_allclose(res.mean_diff.values, -res.mean_diff.values.T)
    ps = res.prob_superiority.values
    np.testing.assert_allclose((ps + ps.T)[~np.eye(4, dtype=bool)], 1.0)
    np.testing.assert_allclose(res.ci.sel(ci_bound="lower"), -res.ci.sel(ci_bound="upper").T)
    assert np.isnan(np.diag(res.p_value.values)).all()
    assert res.ci.attrs["ci_prob"] == 0.95
    # the same pair through paired_test gives the same deterministic statistics
    one = paired_test(
        ds.score.sel(agent="agent_00"), ds.score.sel(agent="agent_02"), n_resamples=99, rng=0
    )
    r = res.sel(agent="agent_00", opponent="agent_02")
    assert float(r.p_t) == pytest.approx(float(one.p_t))
    assert float(r.p_mcnemar) == pytest.approx(float(one.p_mcnemar))
    assert float(r.mean_diff) == pytest.approx(float(one.mean_diff))
    # the ttest agrees with scipy on the per-task means
    m = ds.score.mean("run")
    ref = stats.ttest_rel(m.sel(agent="agent_00"), m.sel(agent="agent_02")).pvalue
    assert float(r.p_t) == pytest.approx(ref)


@pytest.mark.slow
def test_holm_matches_statsmodels_with_nan():
    p = np.array([0.01, np.nan, 0.04, 0.03, 0.2])
    ok = np.isfinite(p)
    out = holm(p)
    assert np.isnan(out[1])
    np.testing.assert_allclose(out[ok], smm.multipletests(p[ok], method="holm")[1])


def test_missing_tasks_are_excluded_and_counted():
    a = xr.DataArray([[1, 0], [np.nan, np.nan], [1, 1], [0, 1], [1, 1]], dims=("task", "run"))
    b = xr.DataArray([[0, 0], [1, 0], [1, np.nan], [0, 0], [0, 1]], dims=("task", "run"))
    with pytest.warns(UndefinedTestWarning, match="p_mcnemar undefined"):  # no discordant majority
        res = paired_test(a, b, n_resamples=99, rng=0)
    assert res.counts["n_excluded"] == 1 and res.counts["n_tasks"] == 4
    assert float(res.mean_diff) == pytest.approx(np.mean([0.5, 0.0, 0.5, 0.5]))


def test_undefined_effect_size_is_nan_with_warning():
    a = xr.DataArray([1.0, 1.0, 0.0], dims="task")
    with pytest.warns(UndefinedTestWarning, match=r"p_t, cohens_dz, p_mcnemar undefined"):
        res = paired_test(a, a.copy(), n_resamples=9, rng=0)
    assert np.isnan(float(res.cohens_dz)) and np.isnan(float(res.p_mcnemar))
    assert float(res.p_permutation) == 1.0


def test_bad_input_messages():
    a = xr.DataArray(np.ones((5, 2)), dims=("task", "run"))
    with pytest.raises(ValueError, match=r"`prob` must satisfy 0 < prob < 1; got prob=1.5"):
        paired_test(a, a, prob=1.5)
    with pytest.raises(ValueError, match=r"`n_permutations` must be a positive integer; got 0"):
        paired_test(a, a, n_permutations=0)
    with pytest.raises(TypeError, match=r"`b` must be an xarray.DataArray of scores; got ndarray"):
        paired_test(a, np.ones((5, 2)))
    with pytest.raises(
        ValueError, match=r"`a` must have dims \('task'\[, 'run'\]\); found extra dims \['agent'\]"
    ):
        paired_test(a.expand_dims(agent=["x"]), a)
    with pytest.raises(ValueError, match=r"`a` and `b` must have the same 'task' labels"):
        paired_test(a.assign_coords(task=list("abcde")), a.assign_coords(task=list("vwxyz")))
    with pytest.raises(ValueError, match=r"must share at least 2 tasks that both ran; got 1"):
        paired_test(a, a.where(a.task == 0))
    with pytest.raises(ValueError, match=r"`cluster` must name a coord along 'task'; got 'repo'"):
        paired_test(a, a, cluster="repo")
    ds, _ = simulate_eval(n_agents=3, n_tasks=5, n_runs=2, rng=0)
    with pytest.raises(ValueError, match=r"`test` must be one of .*; got 'wilcoxon'"):
        compare_agents(ds, test="wilcoxon")
    with pytest.raises(ValueError, match=r"compare_agents needs >= 2 agents; got 1"):
        compare_agents(ds.isel(agent=[0]))


def test_bca_interval_passes_through_to_bootstrap_ci():
    # 12 tasks: the sign-flip test is exact (no random draws), so with the same seed the
    # bootstrap inside paired_test sees exactly the draws bootstrap_ci sees
    ds, _ = simulate_eval(n_agents=2, n_tasks=12, n_runs=3, rng=1)
    a, b = ds.score.sel(agent="agent_00"), ds.score.sel(agent="agent_01")
    res = paired_test(a, b, method="bca", n_resamples=999, rng=7)
    assert res.counts["exact"]
    ref = bootstrap_ci(ds, pairs=[("agent_00", "agent_01")], method="bca", n_resamples=999, rng=7)
    np.testing.assert_allclose(res.ci.values, ref.ci.values[0])
    assert res.ci.attrs["ci_kind"] == ref.ci.attrs["ci_kind"]


@pytest.mark.slow
def test_type_one_error_with_clustered_tasks():
    # H0 again, now with agent x cluster interaction (10 repos of 6 tasks): the cluster is the
    # unit. Cluster-level sign flips (exact: 10 units) and the cluster-robust t hold alpha;
    # the same tests at the task level (cluster=None) do not.
    n_rep, G, per, R, alpha = 300, 10, 6, 3, 0.05
    T = G * per
    cl = np.repeat([f"repo{g}" for g in range(G)], per)
    rng = np.random.default_rng(77)
    eta = (
        rng.normal(0, 1.0, (n_rep, 1, T, 1))
        + np.repeat(rng.normal(0, 1.0, (n_rep, 2, G, 1)), per, axis=2)
        + rng.normal(0, 0.3, (n_rep, 2, T, 1))
    )
    y = (rng.random((n_rep, 2, T, R)) < expit(eta)).astype(float)
    rej = {"perm_cluster": 0, "t_cluster": 0, "perm_task": 0, "t_task": 0}
    for i in range(n_rep):
        a = xr.DataArray(y[i, 0], dims=("task", "run"), coords={"cluster": ("task", cl)})
        b = xr.DataArray(y[i, 1], dims=("task", "run"), coords={"cluster": ("task", cl)})
        rc = paired_test(a, b, n_resamples=9, rng=i)
        rt = paired_test(a, b, cluster=None, n_resamples=9, n_permutations=199, rng=i)
        rej["perm_cluster"] += float(rc.p_permutation) <= alpha
        rej["t_cluster"] += float(rc.p_t) <= alpha
        rej["perm_task"] += float(rt.p_permutation) <= alpha
        rej["t_task"] += float(rt.p_t) <= alpha
    rate = {k: v / n_rep for k, v in rej.items()}
    tol = 3 * np.sqrt(alpha * (1 - alpha) / n_rep)  # Monte Carlo tolerance: 3 SE = 0.038
    assert rate["perm_cluster"] <= alpha + tol, rate
    assert rate["t_cluster"] <= alpha + tol, rate
    assert rate["perm_task"] > alpha + tol, rate
    assert rate["t_task"] > alpha + tol, rate


def test_identical_differences_have_no_spread_whatever_the_rounding():
    """Three tasks each with difference 0.1: numpy's SD is 1.7e-17, not 0, so the paired t-test gave
    p ~ 0 and d_z ~ 6e15 from rounding alone. Identical differences have SE 0 (no p-value, no d_z),
    in the row-wise path too (bit for bit the one-row values), and 1/3 stays exact as before.
    """
    from hierbench.freq._resampling._paired import _task_stats
    from hierbench.freq._resampling._paired import _task_stats_rows

    d = np.full(3, 0.1)
    assert np.std(d, ddof=1) > 0  # the rounding this is about
    one = _task_stats(d)
    assert one["se"] == 0 and np.isnan(one["p_t"]) and np.isnan(one["cohens_dz"]) and one["mean_diff"] == pytest.approx(0.1)
    rows = np.array([[0.1, 0.1, 0.1], [0.1, 0.2, 0.4], [1 / 3, 1 / 3, 1 / 3]])
    many = _task_stats_rows(rows)
    for r, row in enumerate(rows):
        single = _task_stats(row)
        for key, v in many.items():
            np.testing.assert_array_equal(v[r], single[key], err_msg=key)
    assert many["se"][1] == pytest.approx(np.std([0.1, 0.2, 0.4], ddof=1) / np.sqrt(3), rel=1e-15)
