"""success_rate's CR2 t interval, bootstrap_ci's few-clusters warning, success_rate at 0% / 100% (audit K: F1, F2, F8).

Since audit T (finding 6) success_rate's interval is pass_hat_k(data, 1)'s rule on the per-task
means: the same CR2 SE and Bell-McCaffrey df, the t taken on the logit scale, and the bound where
every task scored 0 (1) or few tasks carry the mean; the expected ends below map the matrices'
SE and df through ``expit(logit(m) +- t se / (m (1 - m)))``.

Expected values come from formulas written out here (the CR2 variance and the
Bell-McCaffrey df from the explicit n x n matrices of Imbens and Kolesar 2016),
from statsmodels (the one-sample t interval) and from exact arithmetic, never from
the code under test. Coverage was checked by a simulation outside the suite (its
figures are in the message of the commit that added this file).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench import SmallSampleWarning
from hierbench._base import ZeroWidthIntervalWarning
from hierbench.freq import bootstrap_ci
from hierbench.freq import success_rate

#: SWE-bench bash-only's 12 repositories' task counts (500 tasks; django holds 231)
SWE_SIZES = [231, 75, 44, 34, 32, 22, 22, 19, 10, 8, 2, 1]


def _log(y: np.ndarray, codes: np.ndarray | None = None, column: str | None = None) -> xr.Dataset:
    """An eval dataset of scores ``y`` (agent, task, run), with cluster labels ``codes`` when given."""
    A, T, R = y.shape
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), y.astype(float))},
        coords={"agent": [f"a{i}" for i in range(A)], "task": [f"t{i}" for i in range(T)], "run": np.arange(R)},
    )
    if codes is not None:
        attrs = {"source_column": column} if column else {}
        ds = ds.assign_coords(cluster=("task", [f"c{c}" for c in codes], attrs))
    return ds


def _cr2_t_by_matrices(y: np.ndarray, codes: np.ndarray, prob: float) -> tuple[float, float, float, float]:
    """``(lower, upper, se, df)``: the CR2 t interval of ``mean(y)``, from the n x n matrices themselves.

    The mean is OLS on a column of ones: ``H = 1 1' / n``; CR2 adjusts cluster ``g``'s
    residuals by ``(I - H_gg)^(-1/2)``; Bell-McCaffrey's df are ``tr(M)^2 / tr(M^2)`` with
    ``M = sum_g (I - H)' A_g w_g w_g' A_g (I - H)`` and ``w = 1 / n``.
    """
    n = y.size
    Hm = np.eye(n) - np.full((n, n), 1.0 / n)
    e = Hm @ y
    var, M = 0.0, np.zeros((n, n))
    for g in np.unique(codes):
        idx = np.flatnonzero(codes == g)
        ig = np.eye(idx.size) - np.full((idx.size, idx.size), 1.0 / n)
        vals, vecs = np.linalg.eigh(ig)
        a_g = vecs @ np.diag(vals**-0.5) @ vecs.T
        s = np.full(idx.size, 1.0 / n) @ a_g  # w_g' A_g
        var += float(s @ e[idx]) ** 2
        v = np.zeros(n)
        v[idx] = s
        u = Hm.T @ v
        M += np.outer(u, u)
    se, df = np.sqrt(var), np.trace(M) ** 2 / np.sum(M * M)
    return (*_logit_t(y.mean(), se, df, prob), se, df)


def _logit_t(m: float, se: float, df: float, prob: float) -> tuple[float, float]:
    """The t interval on the logit scale (delta method), written out: ``expit(logit(m) -+ t se / (m (1 - m)))``."""
    half = stats.t.ppf(0.5 + prob / 2, df) * se / (m * (1 - m))
    lg = np.log(m / (1 - m))
    return 1 / (1 + np.exp(-(lg - half))), 1 / (1 + np.exp(-(lg + half)))


def test_clustered_interval_is_the_cr2_t_on_bell_mccaffrey_df():
    rng = np.random.default_rng(4)
    codes = np.repeat(np.arange(5), [12, 6, 4, 2, 1])
    y = rng.binomial(1, 0.3 + 0.12 * codes).astype(float)  # 12 of 25 succeed: no few-carry bound
    res = success_rate(_log(y[None, :, None], codes, column="repo"), prob=0.9)
    lo, hi, se, df = _cr2_t_by_matrices(y, codes, 0.9)
    assert res.ci_flag.values.tolist() == [""]
    np.testing.assert_allclose(res.ci.values[0], [lo, hi], rtol=1e-10)
    assert float(res.standard_error[0]) == pytest.approx(se, rel=1e-12)
    assert float(res.df[0]) == pytest.approx(df, rel=1e-10)
    assert res.ci.attrs["ci_kind"] == "t" and res.ci.attrs["ci_prob"] == 0.9
    detail = res.ci.attrs["ci_detail"]
    assert "CR2" in detail and "Bell-McCaffrey" in detail and f"{df:.3g} df" in detail and "`repo`" in detail


def test_swebench_sizes_give_the_audits_df():
    # the df depend on the cluster sizes only: 3.3308 at SWE-bench's 12 repositories (audit K, s04)
    codes = np.repeat(np.arange(12), SWE_SIZES)
    y = np.random.default_rng(0).binomial(1, 0.45, codes.size).astype(float)
    res = success_rate(_log(y[None, :, None], codes))
    assert float(res.df[0]) == pytest.approx(_cr2_t_by_matrices(y, codes, 0.95)[3], rel=1e-10)
    assert round(float(res.df[0]), 4) == 3.3308


def test_without_clusters_the_interval_is_the_one_sample_t_over_tasks():
    from statsmodels.stats.weightstats import DescrStatsW

    rng = np.random.default_rng(5)
    y = rng.binomial(1, rng.beta(1.2, 1.8, (2, 20, 1)).repeat(3, -1)).astype(float)  # 2 agents, 20 tasks, 3 runs
    y[1, 3] = np.nan  # agent a1 did not run task t3: 19 tasks, 18 df
    res = success_rate(_log(y))
    for a, n in ((0, 20), (1, 19)):
        cell = y[a][np.isfinite(y[a]).all(1)].mean(1)
        d = DescrStatsW(cell)
        np.testing.assert_allclose(res.ci.values[a], _logit_t(d.mean, d.std_mean, n - 1, 0.95), rtol=1e-10)
        assert float(res.df[a]) == n - 1
    assert res.ci.attrs["ci_kind"] == "t" and "n - 1 = 18 to 19 df" in res.ci.attrs["ci_detail"]
    # every task its own cluster: the same construction as the clustered path, to rounding
    one_each = success_rate(_log(y[:1], np.arange(20)))
    np.testing.assert_allclose(one_each.ci.values, res.ci.values[:1], rtol=1e-12)
    assert float(one_each.df[0]) == pytest.approx(19.0, rel=1e-12)


def test_all_solved_or_none_gives_the_exact_bound():
    rng = np.random.default_rng(1)
    y = rng.binomial(1, 0.5, (3, 15, 2)).astype(float)
    y[0], y[1] = 1.0, 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroWidthIntervalWarning)  # no zero-width interval any more
        res = success_rate(_log(y))
    assert res.ci_flag.values.tolist()[:2] == ["exact bound", "exact bound"]
    assert "exact bound" in repr(res)
    # for 15 independent tasks all solved (none), Clopper-Pearson's end (alpha/2)^(1/15) (1 - that)
    cp = 0.025 ** (1 / 15)
    np.testing.assert_allclose(res.ci.values[:2], [[cp, 1.0], [0.0, 1 - cp]], rtol=1e-6)


def test_equal_cluster_means_with_different_tasks_are_named():
    """Each cluster's mean is 1/2: no spread between clusters, so the bound over the 2 clusters (audit s75 A, 3).

    By hand: for 2 values summing to 1 only m = 2 exceeds s, E[(2 - B)_+] = 2 (1 - p), which is
    0.025 at p = 0.9875 (the t interval was [0.5, 0.5]).
    """
    y = np.array([1.0, 0.0, 0.0, 1.0])[None, :, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroWidthIntervalWarning)
        res = success_rate(_log(y, np.array([0, 0, 1, 1])))
    assert res.ci_flag.values.tolist() == ["bound: every cluster has the same mean (no spread to measure)"]
    assert res.ci_kind.values.tolist() == ["bounded-mean"]
    np.testing.assert_allclose(res.ci.values, [[0.0125, 0.9875]], atol=1e-9)


def test_one_cluster_gives_no_interval_and_says_why():
    y = np.array([1.0, 0.0, 1.0, 0.0])[None, :, None]  # 2 of 4 succeed: no few-carry bound either
    res = success_rate(_log(y, np.zeros(4, dtype=int)))
    assert np.isnan(res.ci.values).all() and res.ci_flag.values.tolist() == ["too few clusters"]


def _swe_log(agents: int = 1) -> xr.Dataset:
    codes = np.repeat(np.arange(12), SWE_SIZES)
    y = np.random.default_rng(2).binomial(1, 0.45, (agents, codes.size, 1)).astype(float)
    return _log(y, codes, column="repo")


def test_bootstrap_over_few_unequal_clusters_warns_once_and_records_it():
    ds = _swe_log()
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = bootstrap_ci(ds, n_resamples=199, rng=0)
    few = [w for w in rec if issubclass(w.category, SmallSampleWarning) and "equal ones" in str(w.message)]
    assert len(few) == 1
    g_eff = 500**2 / sum(n * n for n in SWE_SIZES)  # 250000 / 64600
    assert res.attrs["n_clusters"] == 12 and res.attrs["n_clusters_effective"] == pytest.approx(g_eff, abs=5e-4)
    text = res.attrs["few_clusters"]
    assert f"worth {g_eff:.1f} equal ones" in text and "`repo`" in text and "fewer than 20" in text
    assert "success_rate(data).ci takes the CR2 SE" in text and text in str(few[0].message)
    # the interval itself is the bootstrap's, unchanged: its ends are the distribution's quantiles
    np.testing.assert_allclose(
        res.ci.values[0], np.quantile(res.distribution.values[:, 0], [0.025, 0.975]), rtol=1e-12
    )


def test_bootstrap_over_many_even_clusters_is_quiet_and_says_how_many():
    codes = np.repeat(np.arange(25), 4)  # 25 equal clusters: worth 25, not few
    y = np.random.default_rng(4).binomial(1, 0.5, (1, 100, 1)).astype(float)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = bootstrap_ci(_log(y, codes), n_resamples=99, rng=0)
    assert not [w for w in rec if issubclass(w.category, SmallSampleWarning)]
    assert res.attrs["few_clusters"] == "" and res.attrs["n_clusters_effective"] == 25.0
    # tasks as the unit: no cluster count at all
    assert "n_clusters" not in bootstrap_ci(_log(y), n_resamples=99, rng=0).attrs


def test_bootstrap_pairs_point_to_compare_agents():
    with pytest.warns(SmallSampleWarning, match=r"compare_agents\(data\)\.ci"):
        bootstrap_ci(_swe_log(2), pairs="all", n_resamples=99, rng=0)
