"""Max-T adjustment of the pair comparisons, against independent references: brute-force
enumeration of the shared sign flips, Sidak's formula for independent comparisons, the exact
law of the maximum under a shared chi-square denominator (one-dimensional quadrature),
``scipy.stats.dunnett`` (many-to-one), ``scipy.stats.studentized_range`` (all pairs), the
CR2 kernel for the covariance of the comparisons; family-wise error and power by simulation
with clustered binary data of SWE-bench's shape (12 repositories of 1 to 231 tasks).
"""

import itertools
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import integrate
from scipy import stats

from hierbench.freq import MaxTApproximationWarning
from hierbench.freq import compare_agents
from hierbench.freq import holm
from hierbench.freq._kernels import cr2_mean_se
from hierbench.freq._resampling._maxt import cr2_scores
from hierbench.freq._resampling._maxt import maxt_draws
from hierbench.freq._resampling._maxt import mvt_maxt
from hierbench.freq._resampling._maxt import signflip_maxt

#: SWE-bench Verified's 12 repositories: tasks per repository (django 231 of 500)
SWE_SIZES = np.array([22, 231, 34, 2, 1, 8, 22, 10, 19, 32, 44, 75])


def _cluster_data(rng, n_comp, sizes):
    codes = np.repeat(np.arange(sizes.size), sizes)
    d = rng.normal(0.3, 1.0, (codes.size, n_comp)) + rng.normal(0, 0.5, (sizes.size, n_comp))[codes]
    units = np.stack([np.bincount(codes, weights=d[:, k]) for k in range(n_comp)], 1)
    counts = np.repeat(sizes[:, None].astype(float), n_comp, 1)
    return d, codes, units, counts


def _brute_maxt(d, codes, G):
    """Every sign pattern of the clusters: each comparison's CR2 t, their maximum.

    All 2^G patterns at once, with the CR2 SE of a mean written out (cluster g's residual sum
    s_g: SE^2 = sum_g s_g^2 / (1 - n_g / N) / N^2, Bell and McCaffrey); on the observed
    differences it is checked against the kernel (``cr2_mean_se``). Called pattern by pattern
    (38,400 calls, 1.3 s, for 300 comparisons), the kernel gave every pattern the same verdict
    against the observed t (checked on these tests' data when the loop was replaced).
    """
    N = d.shape[0]
    n_g = np.bincount(codes, minlength=G).astype(float)
    sums = np.stack([np.bincount(codes, weights=col, minlength=G) for col in d.T], 1)  # clusters x comparisons
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=G)))  # patterns x clusters
    mean = signs @ sums / N
    s = signs[:, :, None] * sums[None] - n_g[None, :, None] * mean[:, None, :]  # residual sums by cluster
    null = np.abs(mean) / (np.sqrt((s**2 / (1 - n_g / N)[None, :, None]).sum(1)) / N)
    obs = null[0]  # the all-plus pattern
    kernel = [abs(d[:, k].mean() / cr2_mean_se(d[:, k], codes)[0]) for k in range(d.shape[1])]
    np.testing.assert_allclose(obs, kernel, rtol=1e-12)
    return obs, null


@pytest.mark.parametrize("seed", range(3))
def test_shared_sign_flips_equal_brute_force_enumeration(seed):
    rng = np.random.default_rng(seed)
    sizes = np.array([3, 1, 5, 2, 4, 2, 6, 1])
    d, codes, units, counts = _cluster_data(rng, 4, sizes)
    out = signflip_maxt(units, counts, alpha=0.05, gen=np.random.default_rng(0))
    obs, null = _brute_maxt(d, codes, sizes.size)
    np.testing.assert_allclose(out["t"], obs, rtol=1e-10)
    tol = 1e-9 * obs
    p_ref = np.mean(null.max(1)[:, None] >= obs - tol, axis=0)
    np.testing.assert_allclose(out["p"], p_ref, rtol=1e-12)
    # free step-down: successive maxima over the comparisons not yet rejected, then monotone
    order = np.argsort(-obs)
    succ = np.array([np.mean(null[:, order[j:]].max(1) >= obs[order[j]] - tol[order[j]])
                     for j in range(order.size)])
    p_sd = np.empty_like(succ)
    p_sd[order] = np.maximum.accumulate(succ)
    np.testing.assert_allclose(out["p_stepdown"], p_sd, rtol=1e-12)
    assert out["exact"] and out["n_patterns"] == 2 ** (sizes.size - 1)
    assert (out["p_mcse"] == 0).all()
    # the critical value decides exactly as the p-values do
    assert ((out["t"] > out["crit"]) == (out["p"] < 0.05)).all()


@pytest.mark.parametrize("sizes", [np.array([3, 1, 5, 2, 4, 2, 1]), np.ones(7, dtype=int)], ids=["clusters", "tasks"])
@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_many_comparisons_in_strips_equal_brute_force_enumeration(sizes):
    # 300 comparisons: the block's arithmetic and the successive maxima run in strips of 256
    rng = np.random.default_rng(7)
    d, codes, units, counts = _cluster_data(rng, 300, sizes)
    out = signflip_maxt(units, counts, alpha=0.05, gen=np.random.default_rng(0))
    obs, null = _brute_maxt(d, codes, sizes.size)
    tol = 1e-9 * obs
    np.testing.assert_allclose(out["t"], obs, rtol=1e-10)
    np.testing.assert_allclose(out["p"], np.mean(null.max(1)[:, None] >= obs - tol, axis=0), rtol=1e-12)
    order = np.argsort(-obs)
    run = np.maximum.accumulate(null[:, order[::-1]], axis=1)[:, ::-1]  # max over order[j:]
    succ = np.mean(run >= (obs - tol)[order], axis=0)
    p_sd = np.empty_like(succ)
    p_sd[order] = np.maximum.accumulate(succ)
    np.testing.assert_allclose(out["p_stepdown"], p_sd, rtol=1e-12)
    assert out["exact"] and ((out["t"] > out["crit"]) == (out["p"] < 0.05)).all()


def test_binary_tasks_in_rank_ordered_strips_equal_scipy_t_by_enumeration():
    """Per-task differences on the lattice of halves (binary scores, 2 runs): every signed sum is
    exact, so each strip forms its own product in rank order. Reference: scipy's one-sample t of
    every comparison under every sign pattern of the 9 tasks (with tasks as units the CR2 t is the
    paired t); one comparison has equal |d| everywhere, so one pattern has no spread (|t| infinite).
    """
    rng = np.random.default_rng(3)
    d = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=(9, 300), p=[0.2, 0.15, 0.2, 0.15, 0.3])
    d[:, 0] = [1, -1, 1, 1, -1, 1, 1, 1, -1]
    d = d[:, d.std(0) > 0]
    out = signflip_maxt(d, np.ones_like(d), alpha=0.05, gen=np.random.default_rng(0))
    obs = np.abs(stats.ttest_1samp(d, 0.0).statistic)
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=9)))
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy: no spread under two patterns
        null = np.abs(stats.ttest_1samp(signs[:, :, None] * d[None], 0.0, axis=1).statistic)
    assert np.isinf(null[:, 0]).sum() == 2  # all +1 and all -1 of the first comparison's signs
    thr = obs - 1e-9 * np.maximum(1.0, obs)
    np.testing.assert_allclose(out["t"], obs, rtol=1e-10)
    np.testing.assert_array_equal(out["p"], np.mean(null.max(1)[:, None] >= thr, axis=0))
    order = np.argsort(-obs, kind="stable")
    run = np.maximum.accumulate(null[:, order[::-1]], axis=1)[:, ::-1]  # max over order[j:]
    p_sd = np.empty(obs.size)
    p_sd[order] = np.maximum.accumulate(np.mean(run >= thr[order], axis=0))
    np.testing.assert_array_equal(out["p_stepdown"], p_sd)
    assert out["exact"] and out["n_patterns"] == 2**8 and ((out["t"] > out["crit"]) == (out["p"] < 0.05)).all()


def test_independent_comparisons_give_sidak_exactly_with_sign_flips():
    """Comparisons on disjoint units: P(max >= x) = 1 - prod_l (1 - P(|T_l| >= x)), Sidak's formula."""
    rng = np.random.default_rng(4)
    blocks = [np.array([2, 1, 3, 2]), np.array([1, 4, 2, 2]), np.array([3, 3, 1, 2])]
    G = sum(b.size for b in blocks)
    units, counts = np.zeros((G, 3)), np.zeros((G, 3))
    marg = []
    start = 0
    for k, sizes in enumerate(blocks):
        d, codes, u, n = _cluster_data(rng, 1, sizes)
        units[start : start + sizes.size, k], counts[start : start + sizes.size, k] = u[:, 0], n[:, 0]
        marg.append(_brute_maxt(d, codes, sizes.size))
        start += sizes.size
    out = signflip_maxt(units, counts, alpha=0.05, gen=np.random.default_rng(0))
    for k in range(3):
        x = out["t"][k]
        tail = [np.mean(null[:, 0] >= x - 1e-9 * x) for _, null in marg]
        assert out["p"][k] == pytest.approx(1 - np.prod([1 - q for q in tail]), rel=1e-12)


def test_independent_normal_comparisons_give_the_sidak_critical_value():
    m, B = 10, 200_000
    out = mvt_maxt(np.linspace(0.5, 4.0, m), np.eye(m), np.full(m, np.inf),
                   alpha=0.05, gen=np.random.default_rng(1), n_draws=B)
    sidak = stats.norm.ppf((1 + 0.95 ** (1 / m)) / 2)
    # the quantile's Monte Carlo error: sqrt(a (1 - a) / B) / density of the maximum at it
    dens = m * 2 * stats.norm.pdf(sidak) * (0.95 ** ((m - 1) / m))
    assert out["crit"] == pytest.approx(sidak, abs=4 * np.sqrt(0.05 * 0.95 / B) / dens)
    p_marg = 2 * stats.norm.sf(out["t"])
    np.testing.assert_allclose(out["p"], 1 - (1 - p_marg) ** m, atol=4 * np.sqrt(0.25 / B) + 1 / B)


def test_uncorrelated_t_comparisons_with_one_shared_denominator():
    """With a shared chi-square the maximum's law is a 1-d integral, below Sidak's t value."""
    m, df, B = 6, 5.0, 200_000
    out = mvt_maxt(np.zeros(m), np.eye(m), np.full(m, df),
                   alpha=0.05, gen=np.random.default_rng(2), n_draws=B)

    def cdf(c):  # P(max_k |Z_k| / S <= c), S = sqrt(chi2_df / df)
        def f(s):
            return (2 * stats.norm.cdf(c * s) - 1) ** m * stats.chi.pdf(s * np.sqrt(df), df) * np.sqrt(df)

        return integrate.quad(f, 0, np.inf)[0]

    from scipy.optimize import brentq

    exact = brentq(lambda c: cdf(c) - 0.95, 1.0, 20.0)
    h = 1e-4
    dens = (cdf(exact + h) - cdf(exact - h)) / (2 * h)
    assert out["crit"] == pytest.approx(exact, abs=4 * np.sqrt(0.05 * 0.95 / B) / dens)
    # Sidak's t value treats the denominators as independent: conservative here
    assert exact < stats.t.ppf((1 + 0.95 ** (1 / m)) / 2, df)


def test_many_to_one_matches_scipy_dunnett():
    rng = np.random.default_rng(5)
    n, k = 12, 5  # a control and 4 treatments, equal sizes
    samples = [rng.normal(mu, 1.0, n) for mu in (0.0, 0.2, 0.9, 1.3, -0.1)]
    ref = stats.dunnett(*samples[1:], control=samples[0], rng=np.random.default_rng(0))
    df = k * (n - 1)
    sd = np.sqrt(sum(((s - s.mean()) ** 2).sum() for s in samples) / df)
    se = sd * np.sqrt(2 / n)
    t = np.array([(s.mean() - samples[0].mean()) / se for s in samples[1:]])
    np.testing.assert_allclose(t, ref.statistic, rtol=1e-10)
    corr = np.full((k - 1, k - 1), 0.5) + 0.5 * np.eye(k - 1)  # equal sizes: rho = 1/2
    B = 200_000
    out = mvt_maxt(t, np.linalg.cholesky(corr).T, np.full(k - 1, df),
                   alpha=0.05, gen=np.random.default_rng(6), n_draws=B)
    # scipy integrates the multivariate t numerically (its own error about 1e-3)
    np.testing.assert_allclose(out["p"], ref.pvalue, atol=4 * np.sqrt(0.25 / B) + 2e-3)
    ci = ref.confidence_interval(0.95)
    crit_ref = (ci.high - ci.low) / (2 * se)
    assert out["crit"] == pytest.approx(crit_ref[0], rel=0.01)


def test_all_pairs_with_pooled_variance_match_the_studentized_range():
    k, df, B = 6, 20.0, 200_000
    pairs = list(itertools.combinations(range(k), 2))
    C = np.zeros((len(pairs), k))
    for p, (i, j) in enumerate(pairs):
        C[p, i], C[p, j] = 1.0, -1.0
    out = mvt_maxt(np.ones(len(pairs)), C.T, np.full(len(pairs), df),
                   alpha=0.05, gen=np.random.default_rng(7), n_draws=B)
    tukey = stats.studentized_range.ppf(0.95, k, df) / np.sqrt(2)
    assert out["crit"] == pytest.approx(tukey, rel=0.01)


def test_comparison_covariance_is_the_cr2_covariance():
    """Diagonal: the CR2 kernel; off-diagonal by polarisation, Var(d_ij + d_jk) = Var(d_ik)."""
    rng = np.random.default_rng(8)
    codes = np.repeat(np.arange(SWE_SIZES.size), SWE_SIZES)
    y = rng.uniform(size=(3, codes.size)) + rng.normal(0, 0.3, (3, SWE_SIZES.size))[:, codes]
    d = np.stack([y[0] - y[1], y[1] - y[2], y[0] - y[2]], 1)
    units = np.stack([np.bincount(codes, weights=d[:, k]) for k in range(3)], 1)
    counts = np.repeat(SWE_SIZES[:, None].astype(float), 3, 1)
    mean, _, scores = cr2_scores(units, counts)
    cov = scores.T @ scores
    var = np.array([cr2_mean_se(d[:, k], codes)[0] ** 2 for k in range(3)])
    np.testing.assert_allclose(mean, d.mean(0), rtol=1e-12)
    np.testing.assert_allclose(np.diag(cov), var, rtol=1e-10)
    np.testing.assert_allclose(cov[0, 1], (var[2] - var[0] - var[1]) / 2, rtol=1e-10)
    # tasks as units: the sample covariance of the per-task differences over T
    tasks = cr2_scores(d, np.ones_like(d))[2]
    np.testing.assert_allclose(tasks.T @ tasks, np.cov(d, rowvar=False) / d.shape[0], rtol=1e-10)


def test_monte_carlo_draws_meet_the_stated_error():
    B = maxt_draws(0.05)
    assert np.sqrt(0.05 * 0.95 / B) <= 0.0015 < 0.002


# --------------------------------------------------------------------------- simulation


def _swe_shape(rng, skill, sd_repo=0.5, n_tasks=500):
    """Binary single runs ``(agent, task)``: task difficulty, agent x repository interaction."""
    codes = np.repeat(np.arange(SWE_SIZES.size), SWE_SIZES)
    M = skill.size
    logit = (skill[:, None] + rng.normal(-0.3, 2.0, n_tasks)[None]
             + rng.normal(0, sd_repo, (M, SWE_SIZES.size))[:, codes])
    return (rng.uniform(size=logit.shape) < 1 / (1 + np.exp(-logit))).astype(float)


def _as_data(y):
    codes = np.repeat(np.arange(SWE_SIZES.size), SWE_SIZES)
    return xr.DataArray(
        y[..., None], dims=("agent", "task", "run"),
        coords={"agent": [f"a{i}" for i in range(y.shape[0])],
                "cluster": ("task", [f"repo{c:02d}" for c in codes])},
    )


def _family_verdicts(y, rng, draws):
    """The pairs' rejections at 0.05 by each adjustment, from the kernels compare_agents calls.

    (That compare_agents returns these kernels' p-values is checked against brute force in
    tests/test_freq_multiple.py; calling them directly keeps 600 data sets within seconds.)
    """
    codes = np.repeat(np.arange(SWE_SIZES.size), SWE_SIZES)
    i, j = np.triu_indices(y.shape[0], 1)
    d = y[i].T - y[j].T  # (tasks, pairs)
    units = np.stack([np.bincount(codes, weights=d[:, k], minlength=SWE_SIZES.size)
                      for k in range(d.shape[1])], 1)
    counts = np.repeat(SWE_SIZES[:, None].astype(float), d.shape[1], 1)
    mean, se, scores = cr2_scores(units, counts)
    df = cr2_mean_se(d[:, 0], codes)[1]  # Bell-McCaffrey df: the same for every pair (3.33)
    t = mean / se
    flips = signflip_maxt(units, counts, alpha=0.05, gen=rng)
    out = {
        "maxt": flips["p"] < 0.05,
        "maxt-stepdown": flips["p_stepdown"] < 0.05,
        "holm_t": holm(2 * stats.t.sf(np.abs(t), df)) < 0.05,
    }
    if draws:
        out["mvt"] = mvt_maxt(t, scores, np.full(t.size, df), alpha=0.05, gen=rng, n_draws=draws)["p"] < 0.05
    return out


def _family_errors(skill, reps, seed, draws=0):
    """Share of data sets with any true null rejected, and false nulls rejected per data set."""
    rng = np.random.default_rng(seed)
    i, j = np.triu_indices(skill.size, 1)
    null = skill[i] == skill[j]
    err, power = {}, {}
    for _ in range(reps):
        for k, r in _family_verdicts(_swe_shape(rng, skill), rng, draws).items():
            err[k] = err.get(k, 0) + bool(r[null].any())
            power[k] = power.get(k, 0) + int(r[~null].sum())
    return {k: v / reps for k, v in err.items()}, {k: v / reps for k, v in power.items()}


@pytest.mark.slow
def test_family_wise_error_and_power_at_swebench_shape():
    """12 repositories (1 to 231 tasks), 8 agents (28 pairs), binary scores, agent x repo noise.

    Complete null and a partial null (4 equal agents, 4 spread): the sign-flip max-T
    rejection of any true null stays within Monte Carlo error of 0.05 (300 data sets: sd
    0.0126, tolerance 0.05 + 2.6 sd = 0.083); under the partial null it separates more false
    nulls than Holm on the CR2 t (the former default). The multivariate t of the CR2 t
    (multcomp with a sandwich covariance) over-rejects here: why it is not the default.
    """
    reps, tol = 300, 0.05 + 2.6 * np.sqrt(0.05 * 0.95 / 300)
    fw0, _ = _family_errors(np.zeros(8), reps, seed=11, draws=1000)
    assert fw0["maxt"] <= tol and fw0["maxt-stepdown"] <= tol, fw0
    assert fw0["mvt"] > tol, fw0
    fw, power = _family_errors(np.r_[np.zeros(4), 0.6, 1.2, 1.8, 2.4], reps, seed=12)
    assert fw["maxt"] <= tol and fw["maxt-stepdown"] <= tol, fw
    assert power["maxt-stepdown"] >= power["maxt"] > power["holm_t"], power


def test_the_multivariate_t_is_refused_by_default_with_twelve_clusters_and_warns_when_asked():
    data = _as_data(_swe_shape(np.random.default_rng(13), np.zeros(8)))
    with pytest.warns(MaxTApproximationWarning, match=r"3.33 df \(fewer than 30\)"):
        compare_agents(data, test="t", adjust="maxt", n_resamples=9, rng=0)
    auto = compare_agents(data, test="t", n_resamples=9, rng=0)
    assert auto.attrs["adjust"] == "holm" and "3.33 df" in auto.attrs["adjust_reason"]


def test_t_path_uses_the_multivariate_t_when_clusters_are_many_against_scipy():
    """60 equal clusters (59 df): the max-T law of the pairs' CR2 t-statistics is that of
    ``C x / se`` with ``x ~ scipy.stats.multivariate_t(0, V, 59)``, ``V`` the CR2 covariance of
    the agents' means computed here from the cluster sums; its 95% quantile from 200,000
    scipy draws matches the result's critical value within Monte Carlo error.
    """
    rng = np.random.default_rng(21)
    M, G, n = 4, 60, 5
    codes = np.repeat(np.arange(G), n)
    y = (np.array([0.0, 0.1, 0.3, 0.35])[:, None] + rng.normal(0, 0.3, (M, G))[:, codes]
         + rng.normal(0, 1.0, (M, G * n)))
    data = xr.DataArray(
        y[..., None], dims=("agent", "task", "run"),
        coords={"agent": [f"a{i}" for i in range(M)], "cluster": ("task", codes.astype(str))},
    )
    res = compare_agents(data, test="t", n_resamples=9, rng=0)
    a = res.attrs
    assert (a["test"], a["adjust"]) == ("t", "maxt") and "multivariate t" in a["maxt_method"]
    N = G * n
    s = np.stack([np.bincount(codes, weights=y[i] - y[i].mean()) for i in range(M)], 1)
    V = (s / N).T @ (s / N) / (1 - n / N)  # CR2 for a mean: each cluster sum scaled by (1 - n_g/N)^-1/2
    iu = np.triu_indices(M, 1)
    C = np.zeros((iu[0].size, M))
    C[np.arange(iu[0].size), iu[0]], C[np.arange(iu[0].size), iu[1]] = 1.0, -1.0
    se = np.sqrt(np.diag(C @ V @ C.T))
    np.testing.assert_allclose(res.se.values[iu], se, rtol=1e-10)
    df = float(res.df.values[0, 1])
    assert df == pytest.approx(G - 1)
    B = 200_000
    x = stats.multivariate_t(np.zeros(M), V, df=df).rvs(B, random_state=np.random.default_rng(22))
    mx = np.abs(x @ C.T / se).max(1)
    ref = np.quantile(mx, 0.95)
    dens = np.mean(np.abs(mx - ref) < 0.02) / 0.04
    assert a["maxt_crit"] == pytest.approx(ref, abs=4 * np.sqrt(0.05 * 0.95 / B) / dens + 0.01)
    t = np.abs(res.mean_diff.values[iu] / se)
    p_ref = np.array([np.mean(mx >= v) for v in t])
    df_pairs = res.to_frame()
    np.testing.assert_allclose(df_pairs["p_maxt"], p_ref, atol=0.01)  # 3 sd of 21,112 draws at p = 0.5
    # a Monte Carlo p-value carries its error; the simultaneous interval matches the verdict
    assert (df_pairs["p_maxt_mcse"] > 0).where(df_pairs["p_maxt"] < 1, True).all()
    assert (df_pairs["p_maxt_mcse"] <= 0.0015 + 1e-12).where(df_pairs["p_maxt"] <= 0.05, True).all()
    half = a["maxt_crit"] * se
    np.testing.assert_allclose(df_pairs["simultaneous_upper"] - df_pairs["estimate"], half, rtol=1e-10)
    outside = (df_pairs["simultaneous_lower"] > 0) | (df_pairs["simultaneous_upper"] < 0)
    assert (outside == (df_pairs["p_maxt"] < 0.05)).all()


def test_the_simultaneous_interval_and_the_max_t_verdict_agree_at_the_boundary():
    # one pair, 5 tasks, every difference positive: by hand, the all-plus sign pattern (and
    # its mirror) gives the largest |t| of the 32, so p = 2/32 = 0.0625 >= 0.05 (no
    # verdict) and the 95% critical value is that |t| itself: the interval's lower end is
    # exactly 0, not a rounding's 3.2e-15 above it (which said "differs" against the test)
    d = np.array([0.83, 0.57, 0.67, 0.51, 0.84])
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=5)))
    t = np.abs((signs * d).mean(1) / ((signs * d).std(1, ddof=1) / np.sqrt(5)))
    assert np.mean(t >= t[0] * (1 - 1e-12)) == pytest.approx(1 / 16)  # the brute-force p
    data = xr.DataArray(
        np.stack([d, np.zeros(5)])[..., None], dims=("agent", "task", "run"), coords={"agent": ["a", "b"]}
    )
    res = compare_agents(data, test="permutation", adjust="maxt", n_resamples=99, rng=0)
    pair = {"agent": "a", "opponent": "b"}
    assert float(res.p_maxt.sel(pair)) == pytest.approx(1 / 16)
    assert not bool(res.significant().sel(pair))
    lo, hi = res.ci_simultaneous.sel(pair).values
    assert lo == 0.0 and hi == min(1.0, 2 * d.mean())  # 1.368 cut to 1, a difference's range
    assert float(res.ci_simultaneous.sel(agent="b", opponent="a", ci_bound="upper")) == 0.0


def test_a_pair_with_the_same_difference_on_every_task_is_in_the_sign_flip_family():
    """An agent right on every task against one wrong on every task: SE 0, |t| infinite.

    It was left out of max-T (p NaN: 'differ' undefined beside a 100-point gap). Reference:
    the max over the three pairs of the paired |t| (SE s / sqrt(n), infinite where s is 0 and
    the mean is not) under all 2^7 sign patterns of the tasks, enumerated here.
    """
    import itertools

    import xarray as xr

    from hierbench.freq import compare_agents

    T = 7
    score = np.zeros((3, T, 1))
    score[0] = 1.0
    score[2, :, 0] = [1, 0, 1, 1, 0, 1, 0]
    ds = xr.Dataset({"score": (("agent", "task", "run"), score)},
                    coords={"agent": ["a", "b", "c"], "task": [f"t{i}" for i in range(T)]})  # fmt: skip
    d = {"a - b": score[0, :, 0] - score[1, :, 0], "a - c": score[0, :, 0] - score[2, :, 0],
         "b - c": score[1, :, 0] - score[2, :, 0]}  # fmt: skip

    def abs_t(x):
        s = x.std(ddof=1) / np.sqrt(x.size)
        return abs(x.mean() / s) if s > 0 else (np.inf if x.mean() != 0 else 0.0)

    obs = {k: abs_t(v) for k, v in d.items()}
    mx = np.array([max(abs_t(np.array(s) * v) for v in d.values()) for s in itertools.product([1, -1], repeat=T)])
    res = compare_agents(ds).to_frame()
    for k, t in obs.items():
        want = np.mean(mx == np.inf) if np.isinf(t) else np.mean(mx >= t * (1 - 1e-9))
        assert res.loc[k, "p_maxt"] == want, k
    assert obs["a - b"] == np.inf and res.loc["a - b", "p_maxt"] == 2 / 2**T
    # its simultaneous interval is the difference itself (SE 0), which excludes 0 as the test does
    assert res.loc["a - b", ["simultaneous_lower", "simultaneous_upper"]].tolist() == [1.0, 1.0]
