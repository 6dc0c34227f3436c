"""Issue 11 / 14, estimator half: no silent wrong figures, bounded work, readable results.

Each test here failed on main before the base-layer migration. Expected
values are independent of the code under test: hand counts, scipy /
statsmodels references, exact Beta moments, or a brute-force search.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
import xarray as xr
from _helpers import fake_fit
from scipy import stats
from scipy.special import betaln
from scipy.special import expit
from scipy.special import logit

from hierbench._base import HierbenchError
from hierbench._base import PartialCreditError
from hierbench._base import ZeroWidthIntervalWarning
from hierbench.compare import MismatchedEstimatesError
from hierbench.compare import side_by_side
from hierbench.compare import to_frame
from hierbench.freq import DegenerateBootstrapError
from hierbench.freq import InsufficientRunsWarning
from hierbench.freq import UnequalTaskSetsWarning
from hierbench.freq import bootstrap_ci
from hierbench.freq import compare_agents
from hierbench.freq import confidence_sequence
from hierbench.freq import fit_beta_binomial_ml
from hierbench.freq import pass_at_k
from hierbench.freq import pass_hat_k
from hierbench.freq import proportion_interval
from hierbench.freq import rank_uncertainty
from hierbench.freq import success_rate
from hierbench.freq import tasks_for_power
from hierbench.testing import simulate_eval


def _ds(score, error=None, agents=None):
    score = np.asarray(score, float)
    coords = {"agent": agents or [f"a{i}" for i in range(score.shape[0])]}
    data = {"score": (("agent", "task", "run"), score)}
    if error is not None:
        data["error"] = (("agent", "task", "run"), np.asarray(error, bool))
    return xr.Dataset(data, coords=coords)


# ---------------------------------------------------------------- silent wrong figures


def test_partial_credit_never_passes_as_binary():
    # four 0.5 scores sum to 2 "successes": main returned pass@2 = 1 - C(2,2)/C(4,2) = 0.8333
    half = xr.DataArray([[0.5, 0.5, 0.5, 0.5]], dims=("task", "run"))
    for fn in (pass_at_k, pass_hat_k):
        with pytest.raises(PartialCreditError, match=r"4 scores are partial credit"):
            fn(half, 2)
    with pytest.raises(PartialCreditError, match=r"beta-binomial fit needs binary scores"):
        fit_beta_binomial_ml(half)
    with pytest.raises(PartialCreditError, match=r"statistic='pass_hat_k' needs binary scores"):
        bootstrap_ci(_ds([[[0.5, 0.5, 0.5, 0.5], [1, 0, 1, 1]]]), "pass_hat_k", k=2, n_resamples=99)
    # counts made from partial credit carry that fact with them
    from hierbench.data import to_counts

    cnt = to_counts(_ds([[[0.5, 0.5, 0.5, 0.5], [1, 0, 1, 1]]]))
    with pytest.raises(PartialCreditError, match=r"made from partial-credit scores"):
        pass_at_k(cnt, 2)
    with pytest.raises(PartialCreditError):
        fit_beta_binomial_ml(cnt)
    # binary data are untouched: pass@2 of 2 successes in 4 runs = 1 - C(2,2)/C(4,2)
    ok = xr.DataArray([[1.0, 1.0, 0.0, 0.0]], dims=("task", "run"))
    assert float(pass_at_k(ok, 2).estimate) == pytest.approx(1 - 1 / 6)


def test_error_rate_under_errors_exclude_counts_attempted_runs():
    # 3 runs, 2 of them infrastructure errors excluded from the scores (NaN): rate 2/3, not 2/1
    ds = _ds([[[1.0, np.nan, np.nan]]], error=[[[False, True, True]]])
    res = success_rate(ds)
    assert res.error_rate.item() == pytest.approx(2 / 3)
    assert res.n_errors.item() == 2 and res.n_runs.item() == 1
    # under errors="zero" (scores kept as 0) the rate is the same 2/3
    kept = _ds([[[1.0, 0.0, 0.0]]], error=[[[False, True, True]]])
    assert success_rate(kept).error_rate.item() == pytest.approx(2 / 3)


def test_degenerate_bootstraps_refuse_and_say_what_to_do():
    one_task = _ds([[[1.0, 0.0, 1.0]], [[0.0, 0.0, 1.0]]])
    with pytest.raises(DegenerateBootstrapError, match=r"only 1 task: every resample equals the data.*scheme='two-stage'"):
        bootstrap_ci(one_task, n_resamples=99, rng=0)
    # the run-level noise of that one task is still measurable
    res = bootstrap_ci(one_task, scheme="two-stage", n_resamples=999, rng=0)
    assert (res.ci.sel(ci_bound="upper") > res.ci.sel(ci_bound="lower")).all()
    one_run = _ds(np.random.default_rng(0).integers(0, 2, (2, 10, 1)))
    with pytest.raises(DegenerateBootstrapError, match=r"every cell has at most one run.*scheme='tasks'"):
        bootstrap_ci(one_run, scheme="runs", n_resamples=99, rng=0)
    one_cluster = one_run.assign_coords(cluster=("task", ["repo"] * 10))
    with pytest.raises(DegenerateBootstrapError, match=r"only 1 cluster.*cluster=None"):
        bootstrap_ci(one_cluster, n_resamples=99, rng=0)
    with pytest.raises(HierbenchError, match=r"only 1 cluster.*cluster=None"):
        rank_uncertainty(one_cluster, n_resamples=99, rng=0)
    assert rank_uncertainty(one_cluster, cluster=None, n_resamples=99, rng=0).rank_ci.sizes["agent"] == 2
    # a constant statistic is not refused, but the zero width is said aloud
    with pytest.warns(ZeroWidthIntervalWarning, match=r"zero width"):
        bootstrap_ci(_ds(np.ones((1, 10, 2))), n_resamples=99, rng=0)


def test_diagnostics_fail_a_posterior_with_nan_draws():
    from hierbench.bayes import ConvergenceWarning
    from hierbench.bayes import compute_diagnostics

    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 500))
    x[2, 7] = np.nan
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset({"x": (("chain", "draw"), x)})})
    with pytest.warns(ConvergenceWarning, match=r"1 non-finite .* in `x` \(1\)"):
        out = compute_diagnostics(dt)
    assert out.attrs["diag_converged"] == 0


# ---------------------------------------------------------------- bounded work


def test_pass_at_k_huge_k_costs_nothing():
    cnt = xr.Dataset({"n_runs": ("task", [5, 8]), "n_success": ("task", [2, 8])})
    t0 = time.perf_counter()
    with pytest.warns(InsufficientRunsWarning):
        res = pass_at_k(cnt, 10**7)
    clip = pass_at_k(cnt, 10**7, small_n="clip")
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.0, elapsed  # main looped k = 10**7 times
    assert np.isnan(float(res.estimate))
    # k_eff = n: pass@n is 1 when any run succeeded
    assert float(clip.estimate) == pytest.approx(1.0)


def _tasks_brute(effect, sd, power=0.8, alpha=0.05):
    """Smallest T by direct scan of the noncentral-t power (scipy), from T = 2."""
    T = 2
    while True:
        df = T - 1
        nc = effect * np.sqrt(T) / sd
        crit = stats.t.ppf(1 - alpha / 2, df)
        pw = stats.nct.sf(crit, df, nc) + stats.nct.cdf(-crit, df, nc)
        if pw >= power:
            return T
        T += 1


def test_tasks_for_power_is_exact_and_bounded():
    for effect in (0.5, 0.2, 0.08):
        assert tasks_for_power(effect, sd_diff=0.345) == _tasks_brute(effect, 0.345)
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"too small to detect with at most max_tasks=10,000,000 tasks"):
        tasks_for_power(1e-7, sd_diff=0.345)
    with pytest.raises(ValueError, match=r"max_tasks=100 tasks"):
        tasks_for_power(0.05, sd_diff=0.345, max_tasks=100)
    assert time.perf_counter() - t0 < 2.0


def test_rank_uncertainty_warns_when_agents_ran_different_tasks():
    rng = np.random.default_rng(0)
    y = (rng.random((3, 20, 2)) < 0.5).astype(float)
    y[2, 2:] = np.nan  # agent a2 ran 2 of 20 tasks
    with pytest.warns(UnequalTaskSetsWarning, match=r"different sets of tasks .*a2 2"):
        rank_uncertainty(_ds(y), n_resamples=200, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnequalTaskSetsWarning)
        rank_uncertainty(_ds(y[:2]), n_resamples=200, rng=0)
        # a few missing cells (19 of 20 tasks: above the documented 90% rule) are not warned
        y2 = y[:2].copy()
        y2[1, 0] = np.nan
        rank_uncertainty(_ds(y2), n_resamples=200, rng=0)
    y3 = y[:2].copy()
    y3[1, :3] = np.nan  # 17 of 20 tasks: below 90% of the most complete agent's 20
    with pytest.warns(UnequalTaskSetsWarning, match=r"a1 17"):
        rank_uncertainty(_ds(y3), n_resamples=200, rng=0)


# ---------------------------------------------------------------- one convention, readable


def test_side_by_side_bayes_bootstrap_and_wilson_at_defaults_without_nan():
    from hierbench.metrics import pass_hat_k as bayes_pass_hat_k

    ds, _ = simulate_eval(n_agents=2, n_tasks=60, n_runs=1, rng=5)
    agents = [str(a) for a in ds.agent.values]
    rng = np.random.default_rng(1)
    mu = rng.uniform(0.3, 0.7, (2, 400, 2))
    kappa = rng.uniform(2, 8, (2, 400, 2))
    bayes = bayes_pass_hat_k(fake_fit("beta_binomial", agents, mu=mu, kappa=kappa), k=1, population=True).sel(k=1, drop=True)
    boot = bootstrap_ci(ds, n_resamples=999, rng=2)
    s = ds.score.sum(("task", "run"))
    n = ds.score.count(("task", "run"))
    wil = proportion_interval(s, n)
    # pass^1 and the mean score are one number for 0/1 scores, but once k is dropped the
    # table cannot see k = 1: it refuses the pair by its stated quantities, and allow_mismatch
    # is the caller's word that they agree
    with pytest.raises(MismatchedEstimatesError, match=r"pass\^k .*mean score"):
        side_by_side({"bayes": bayes, "bootstrap": boot, "wilson": wil})
    t = side_by_side({"bayes": bayes, "bootstrap": boot, "wilson": wil}, allow_mismatch=True)
    assert not t["estimate"].isnull().any() and not t["ci"].isnull().any()
    assert t["ci_prob"].values.tolist() == [0.95, 0.95, 0.95]
    assert t["ci_kind"].values.tolist() == ["eti", "percentile", "wilson"]
    # values from independent references
    ex = np.exp(betaln(mu * kappa + 1, (1 - mu) * kappa) - betaln(mu * kappa, (1 - mu) * kappa))
    np.testing.assert_allclose(t["estimate"].sel(estimator="bayes"), ex.mean((0, 1)), rtol=1e-10)
    np.testing.assert_allclose(
        t["ci"].sel(estimator="bayes"),
        np.quantile(ex.reshape(-1, 2), [0.025, 0.975], axis=0).T,
        rtol=1e-6,
    )
    np.testing.assert_allclose(t["estimate"].sel(estimator="bootstrap"), ds.score.mean(("task", "run")))
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(s.values, n.values, alpha=0.05, method="wilson")
    np.testing.assert_allclose(t["ci"].sel(estimator="wilson"), np.stack([lo, hi], -1), rtol=1e-10)
    np.testing.assert_allclose(t["estimate"].sel(estimator="wilson"), s / n)
    df = to_frame(t)
    assert len(df) == 6 and not df[["estimate", "lower", "upper"]].isna().any().any()


def test_results_print_short_and_frame_one_row_per_agent_or_pair():
    ds, _ = simulate_eval(n_agents=30, n_tasks=40, n_runs=2, sd_agent=1.0, rng=0)
    r = rank_uncertainty(ds, n_resamples=200, rng=1)
    assert len(repr(r).splitlines()) <= 12
    df = r.to_frame()
    assert len(df) == 30 and {"rank", "lower", "upper", "score", "tier"} <= set(df.columns)
    assert (df["lower"] <= df["rank"]).all() and (df["rank"] <= df["upper"]).all()
    cs = confidence_sequence(ds.score.mean("run").isel(agent=0))
    assert len(repr(cs).splitlines()) <= 3 and len(cs.to_frame()) == 1
    sub = ds.isel(agent=slice(0, 4))
    ca = compare_agents(sub, n_resamples=199, n_permutations=199, rng=0)
    tab = ca.to_frame()
    assert len(tab) == 6 and tab.index[0] == "agent_00 - agent_01"
    m = sub.score.mean("run")
    d = (m.sel(agent="agent_00") - m.sel(agent="agent_01")).mean()
    assert tab.loc["agent_00 - agent_01", "estimate"] == pytest.approx(float(d))
    assert {"lower", "upper", "p_holm", "p_bh", "n_tasks"} <= set(tab.columns)
    assert len(repr(ca).splitlines()) <= 10
    assert ca.sel(agent="agent_00", opponent="agent_01")["mean_diff"].item() == pytest.approx(float(d))
    b = bootstrap_ci(ds, n_resamples=199, rng=0)
    assert len(repr(b).splitlines()) <= 10 and len(b.to_frame()) == 30
    assert "distribution" not in b.to_frame().columns and "distribution" in b.to_dataset()


def test_pass_hat_k_interval_is_the_t_interval_of_per_task_estimates_and_covers():
    from math import comb

    n_succ = [6, 7, 5, 8, 6, 4, 7, 5, 6, 9, 5, 7]
    cnt = xr.Dataset({"n_runs": ("task", [10] * 12), "n_success": ("task", n_succ)})
    res = pass_hat_k(cnt, 3)
    per = np.array([comb(c, 3) / comb(10, 3) for c in n_succ])
    # the t interval on the logit scale (delta method), written out with scipy
    m = per.mean()
    half = stats.t.ppf(0.975, 11) * stats.sem(per) / (m * (1 - m))
    ref = expit(logit(m) + np.array([-half, half]))
    np.testing.assert_allclose(res.ci.values, ref, rtol=1e-10)
    assert res.ci.attrs["ci_kind"] == "t" and res.ci.attrs["ci_prob"] == 0.95
    assert res.ci_flag.item() == "" and int(res.n_tasks) == 12
    # one task of five carries the mean (per-task 0.008, 1, 0, 0.29, 0.08; the plain t interval
    # would start below 0): the distribution-free bound, re-derived here with scipy's brentq over
    # P(S <= s) <= min_m E[(m - B)_+] / (m - s), B ~ Binomial(5, p), each side at 2.5%
    skew = pass_hat_k(xr.Dataset({"n_runs": ("task", [10] * 5), "n_success": ("task", [3, 10, 0, 7, 5])}), 3)
    s = sum(comb(c, 3) / comb(10, 3) for c in [3, 10, 0, 7, 5])

    def tail(p, s, n=5):
        b = stats.binom(n, p)
        return min(sum((mm - j) * b.pmf(j) for j in range(mm)) / (mm - s) for mm in range(1, n + 1) if mm > s)

    from scipy.optimize import brentq

    upper = brentq(lambda p: tail(p, s) - 0.025, 1e-12, 1 - 1e-12, xtol=1e-14)
    lower = 1 - brentq(lambda p: tail(p, 5 - s) - 0.025, 1e-12, 1 - 1e-12, xtol=1e-14)
    assert skew.ci_flag.item() == "bound: few tasks carry the mean"
    np.testing.assert_allclose(skew.ci.values, [lower, upper], rtol=1e-9)
    # coverage of the population pass^2 = E[p^2], p ~ Beta(2, 2): B(4, 2) / B(2, 2) = 0.3;
    # 1,000 replications of 50 tasks x 5 runs; tolerance 3 MC SE below 0.93
    rng = np.random.default_rng(11)
    p = rng.beta(2.0, 2.0, (1000, 50))
    c = rng.binomial(5, p).astype(float)
    reps = xr.Dataset(
        {"n_runs": (("rep", "task"), np.full(c.shape, 5)), "n_success": (("rep", "task"), c)}
    )
    ci = pass_hat_k(reps, 2).ci
    cov = float(((ci.sel(ci_bound="lower") <= 0.3) & (0.3 <= ci.sel(ci_bound="upper"))).mean())
    assert cov > 0.93 - 3 * np.sqrt(0.95 * 0.05 / 1000), cov
