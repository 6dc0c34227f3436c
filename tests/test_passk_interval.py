"""The one logit-t interval and flag ladder of pass@k / pass^k, against independent computations."""

import math
from math import comb

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench.freq import pass_at_k
from hierbench.freq import pass_hat_k
from hierbench.freq._rates._logit_t import logit_t_bounds


def _hand_logit_t(m: float, se: float, df: float, prob: float) -> tuple[float, float]:
    """``expit(logit(m) -+ t * se / (m (1 - m)))`` written out with math.log / math.exp."""
    t = float(stats.t.ppf(0.5 + prob / 2, df))
    half = t * se / (m * (1 - m))
    lg = math.log(m / (1 - m))
    return 1 / (1 + math.exp(-(lg - half))), 1 / (1 + math.exp(-(lg + half)))


def _counts(succ, n_runs, codes=None):
    succ = np.atleast_2d(succ).astype(float)
    coords = {"agent": [f"a{i}" for i in range(succ.shape[0])]}
    if codes is not None:
        coords["cluster"] = ("task", np.asarray(codes).astype(str))
    return xr.Dataset(
        {"n_runs": (("agent", "task"), np.broadcast_to(n_runs, succ.shape).astype(float)),
         "n_success": (("agent", "task"), succ)}, coords=coords,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("m", "se", "df", "prob"),
    [(0.3, 0.05, 9.0, 0.95), (0.02, 0.01, 3.0, 0.9), (0.97, 0.02, 40.5, 0.99), (0.5, 0.2, 1.7, 0.8)],
)
def test_logit_t_bounds_is_the_hand_algebra(m, se, df, prob):
    lo, hi = logit_t_bounds(np.array([m]), np.array([se]), np.array([df]), prob)
    np.testing.assert_allclose([lo[0], hi[0]], _hand_logit_t(m, se, df, prob), rtol=1e-12)
    # df NaN (too few units): NaN ends, no error
    lo, hi = logit_t_bounds(np.array([m]), np.array([se]), np.array([np.nan]), prob)
    assert np.isnan(lo[0]) and np.isnan(hi[0])


@pytest.mark.parametrize("fn", [pass_hat_k, pass_at_k])
def test_task_path_interval_is_the_logit_t_of_sd_over_root_n(fn):
    # 40 tasks, 9 runs, k = 2: per-task values by math.comb, sd / sqrt(n) with n - 1 df
    rng = np.random.default_rng(5)
    succ = rng.binomial(9, rng.beta(3, 2, 40))
    res = fn(_counts(succ, 9), 2, prob=0.9)
    if fn is pass_hat_k:
        y = np.array([comb(int(c), 2) / comb(9, 2) for c in succ])
    else:
        y = np.array([1 - comb(9 - int(c), 2) / comb(9, 2) for c in succ])
    se = y.std(ddof=1) / math.sqrt(40)
    assert res.ci_flag.item() == "" and res.to_frame()["ci_kind"].tolist() == ["t"]
    np.testing.assert_allclose(res.ci.values.ravel(), _hand_logit_t(y.mean(), se, 39, 0.9), rtol=1e-10)


def test_cluster_path_interval_is_the_logit_t_of_statsmodels_cluster_se():
    import statsmodels.api as sm

    # 10 equal clusters of 3 tasks, 8 runs, pass^2: CR2 is statsmodels' CR1 with G - 1 df
    rng = np.random.default_rng(6)
    codes = np.repeat(np.arange(10), 3)
    succ = rng.binomial(8, 1 / (1 + np.exp(-(rng.normal(0.5, 1, 10)[codes] + rng.normal(0, 0.5, 30)))))
    res = pass_hat_k(_counts(succ, 8, codes), 2)
    y = np.array([comb(int(c), 2) / comb(8, 2) for c in succ])
    fit = sm.OLS(y, np.ones_like(y)).fit(cov_type="cluster", cov_kwds={"groups": codes})
    assert res.to_frame()["ci_kind"].tolist() == ["t"]  # the t interval (flagged or not)
    np.testing.assert_allclose(res.ci.values.ravel(), _hand_logit_t(y.mean(), float(fit.bse[0]), 9, 0.95), rtol=1e-10)


def test_both_paths_share_the_ladder_rungs():
    # the same rungs with and without clusters: all-zero -> exact bound, one task -> too few tasks,
    # equal values inside (0, 1) -> the bound (audit A s75, finding 3: it was a zero-width t
    # interval); clusters add "too few clusters"
    codes = np.repeat(np.arange(4), 3)
    succ = np.array([np.zeros(12), np.full(12, 4.0), np.full(12, 8.0)])
    flat = "bound: every task has the same value (no spread to measure)"
    for cl in ("auto", None):
        res = pass_hat_k(_counts(succ, 8, codes), 1, cluster=cl)
        assert res.ci_flag.values.tolist() == ["exact bound", flat, "exact bound"], cl
        assert res.ci_kind.values.tolist() == ["bounded-mean"] * 3, cl
    one = _counts(np.array([[3.0, 0.0, 0.0]]), np.array([8.0, 0.0, 0.0]), [0, 0, 1])
    assert pass_hat_k(one, 1).ci_flag.item() == "too few tasks"
    two = _counts(np.array([[3.0, 5.0, 0.0]]), np.array([8.0, 8.0, 0.0]), [0, 0, 1])
    assert pass_hat_k(two, 1).ci_flag.item() == "too few clusters"


def test_even_clusters_flag_matches_the_documented_threshold():
    from fractions import Fraction

    from hierbench.freq._rates._logit_t import EVEN_CLUSTERS_FLAG

    # 8 clusters of 5 tasks, 4 runs; in cluster g the first a_g tasks pass every run, the rest
    # fail every one (at least 10 tasks pass and 10 fail: not few tasks, the t interval is kept).
    # The documented rule (since audit T, finding 1): flagged iff deff < 1/2, with deff the CR2
    # variance of the mean, sum_g (a_g - 5 m)^2 / (1 - 5 / 40) / 40^2, over s^2 / 40, s^2 the
    # tasks' sample variance 40 m (1 - m) / 39. The rule before (n_eff of the cluster sums
    # >= 0.75 G) flagged patterns 1, 3 and 5; pattern 3's clusters differ more than independent
    # tasks would (deff 1.56), so it is no longer flagged.
    patterns = [
        [1, 2, 2, 2, 3, 3, 2, 2],  # deff 0.328: flagged
        [1, 1, 4, 4, 1, 1, 4, 4],  # 2.006: not
        [1, 1, 1, 4, 4, 4, 2, 3],  # 1.560: not (the old rule flagged it)
        [1, 1, 1, 1, 4, 4, 4, 4],  # 2.006: not
        [2, 2, 2, 2, 2, 2, 2, 3],  # 0.100: flagged
        [1, 1, 1, 1, 1, 4, 4, 4],  # 1.924: not
    ]

    def deff(a):
        m = Fraction(sum(a), 40)
        cr2 = sum((x - 5 * m) ** 2 for x in a) / (1 - Fraction(5, 40)) / 40**2
        return cr2 / (40 * m * (1 - m) / 39 / 40)

    exact = [deff(a) < Fraction(1, 2) for a in patterns]
    assert exact == [True, False, False, False, True, False]
    codes = np.repeat(np.arange(8), 5)
    succ = np.array([np.concatenate([np.r_[np.full(x, 4), np.zeros(5 - x)] for x in a]) for a in patterns])
    res = pass_hat_k(_counts(succ, 4, codes), 1)
    assert (res.ci_flag.values == EVEN_CLUSTERS_FLAG).tolist() == exact
    assert set(res.ci_flag.values[~np.array(exact)]) == {""}
    assert "below 0.5 times the independent-task variance" in EVEN_CLUSTERS_FLAG
    assert "benchmarks/bench_even_clusters_flag.py" in EVEN_CLUSTERS_FLAG
    assert set(res.ci_kind.values) == {"t"}
    # the same tasks one by one: no cluster flag
    assert set(pass_hat_k(_counts(succ, 4, codes), 1, cluster=None).ci_flag.values) == {""}
