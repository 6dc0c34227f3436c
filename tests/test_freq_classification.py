"""Judges and guardrails: metrics against scikit-learn / statsmodels, seed 003 numbers, bootstrap coverage."""

from __future__ import annotations

import re

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench.freq import UndefinedMetricWarning
from hierbench.freq import classification_metrics
from hierbench.freq import cohen_kappa
from hierbench.freq import fleiss_kappa
from hierbench.freq import pr_curve
from hierbench.freq import threshold_for_recall

skm = pytest.importorskip("sklearn.metrics")  # in the `test` extra


def _detector(rng, n=400, prev=0.3, tpr=0.8, fpr=0.1):
    y = rng.random(n) < prev
    p = np.where(y, rng.random(n) < tpr, rng.random(n) < fpr)
    return y.astype(int), p.astype(int)


def test_metrics_match_scikit_learn():
    rng = np.random.default_rng(0)
    y, p = _detector(rng)
    r = classification_metrics(y, p, beta=2.0, n_resamples=200, rng=1)
    e = r.estimate.to_series()
    assert e["precision"] == pytest.approx(skm.precision_score(y, p))
    assert e["recall"] == pytest.approx(skm.recall_score(y, p))
    assert e["f1"] == pytest.approx(skm.f1_score(y, p))
    assert e["f_beta"] == pytest.approx(skm.fbeta_score(y, p, beta=2.0))
    assert e["specificity"] == pytest.approx(skm.recall_score(y, p, pos_label=0))
    assert e["accuracy"] == pytest.approx(skm.accuracy_score(y, p))
    assert r.ci.attrs["ci_kind"] == "t"  # studentized (bootstrap-t) by default
    assert bool(
        (
            (r.ci.sel(ci_bound="lower") <= r.estimate) & (r.estimate <= r.ci.sel(ci_bound="upper"))
        ).all()
    )


def test_seed_003_numbers():
    # 100 violations in 1,000 transcripts, TN = 860 of 900: specificity 95.6%
    y = np.r_[np.ones(100), np.zeros(900)]
    p = np.r_[np.ones(80), np.zeros(20), np.ones(40), np.zeros(860)]
    r = classification_metrics(y, p, n_resamples=100, rng=0)
    assert f"{float(r.estimate.sel(metric='specificity')):.1%}" == "95.6%"
    # the detector that never flags is 90% accurate; its precision is 0/0 (NaN, named warning)
    with pytest.warns(UndefinedMetricWarning, match="precision"):
        never = classification_metrics(y, np.zeros(1000), n_resamples=100, rng=0)
    assert float(never.estimate.sel(metric="accuracy")) == pytest.approx(0.9)
    assert np.isnan(float(never.estimate.sel(metric="precision")))
    # P = 1.0, R = 0.1 gives F1 = 0.18, not 0.55
    y2 = np.r_[np.ones(10), np.zeros(10)]
    p2 = np.r_[np.ones(1), np.zeros(19)]
    f1 = float(classification_metrics(y2, p2, n_resamples=100, rng=0).estimate.sel(metric="f1"))
    assert f"{f1:.2f}" == "0.18"


def test_average_precision_and_threshold_match_scikit_learn():
    rng = np.random.default_rng(2)
    y = (rng.random(300) < 0.25).astype(int)
    score = np.round(y * 0.8 + rng.normal(0, 0.5, 300), 1)  # rounded: many tied scores
    r = pr_curve(y, score, n_resamples=200, rng=0)
    assert float(r.estimate) == pytest.approx(skm.average_precision_score(y, score), abs=1e-12)
    prec, _, _ = skm.precision_recall_curve(y, score)
    ours = r.precision.to_series().sort_index()
    np.testing.assert_allclose(ours.to_numpy(), prec[:-1][: ours.size], atol=1e-12)
    t = threshold_for_recall(y, score, target=0.9, n_resamples=200, rng=0)
    # brute force: the highest observed threshold whose recall reaches 0.9
    cands = [s for s in np.unique(score) if (score[y == 1] >= s).mean() >= 0.9]
    assert float(t.estimate) == max(cands)
    flag = score >= max(cands)
    assert float(t.precision) == pytest.approx(y[flag].mean())
    assert float(t.recall) >= 0.9


def test_kappas_match_scikit_learn_and_statsmodels():
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    rng = np.random.default_rng(3)
    truth = rng.integers(0, 4, 200)
    a = np.where(rng.random(200) < 0.7, truth, rng.integers(0, 4, 200))
    b = np.where(rng.random(200) < 0.6, truth, rng.integers(0, 4, 200))
    for w in (None, "linear", "quadratic"):
        k = cohen_kappa(a, b, weights=w, categories=[0, 1, 2, 3], n_resamples=200, rng=0)
        assert float(k.estimate) == pytest.approx(skm.cohen_kappa_score(a, b, weights=w), abs=1e-12)
    ratings = np.stack(
        [np.where(rng.random(200) < 0.6, truth, rng.integers(0, 4, 200)) for _ in range(5)], 1
    )
    f = fleiss_kappa(ratings, n_resamples=200, rng=0)
    table, _ = aggregate_raters(ratings)
    assert float(f.estimate) == pytest.approx(sm_fleiss(table, method="fleiss"), abs=1e-12)


def _wilson(hits, n, prob=0.99):
    z = stats.norm.ppf(0.5 + prob / 2)
    p = hits / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return c - h, c + h


@pytest.mark.slow
def test_bootstrap_reaches_nominal_coverage():
    """Percentile bootstrap of precision, recall and F1: 200 simulated detectors, n = 400 items."""
    prev, tpr, fpr = 0.3, 0.8, 0.1
    truth = {
        "precision": prev * tpr / (prev * tpr + (1 - prev) * fpr),
        "recall": tpr,
    }
    truth["f1"] = 2 * truth["precision"] * truth["recall"] / (truth["precision"] + truth["recall"])
    from hierbench.freq._kernels import one_blas_thread

    rng = np.random.default_rng(20261130)
    reps = 200
    hits = dict.fromkeys(truth, 0)
    # one BLAS thread, as the package's fits use: the resamples' small products ran 2-6 times slower
    # on two threads of a busy machine (the 200 x 6 intervals are bit for bit the same)
    with one_blas_thread():
        for _ in range(reps):
            y, p = _detector(rng, prev=prev, tpr=tpr, fpr=fpr)
            r = classification_metrics(y, p, n_resamples=800, rng=rng)
            for m, v in truth.items():
                lo, hi = r.ci.sel(metric=m).values
                hits[m] += lo <= v <= hi
    for m in truth:
        lo, hi = _wilson(hits[m], reps)
        # nominal 0.95 inside the 99% Wilson band of the observed coverage (Monte Carlo tolerance)
        assert lo <= 0.95 <= hi, (m, hits[m] / reps, (lo, hi))


def test_bca_matches_scipy():
    rng = np.random.default_rng(8)
    y, p = _detector(rng)
    r = classification_metrics(y, p, method="bca", n_resamples=4000, rng=1)
    assert r.ci.attrs["ci_kind"] == "bca"

    def recall(yy, pp):
        return (yy * pp).sum() / yy.sum()

    ref = stats.bootstrap(
        (y, p),
        recall,
        paired=True,
        vectorized=False,
        n_resamples=4000,
        method="BCa",
        random_state=2,
    ).confidence_interval
    # two independent Monte Carlo runs of the same BCa interval: 0.01 tolerance (measured < 0.005)
    np.testing.assert_allclose(r.ci.sel(metric="recall").values, [ref.low, ref.high], atol=0.01)


def test_clustered_items_resample_whole_tasks():
    rng = np.random.default_rng(5)
    tasks = np.repeat(np.arange(40), 10)
    # items of one task share their verdict quality: strong within-task correlation
    good = rng.random(40) < 0.5
    y = (rng.random(400) < 0.5).astype(int)
    p = np.where(good[tasks], y, 1 - y)
    naive = classification_metrics(y, p, n_resamples=500, rng=0)
    clus = classification_metrics(y, p, cluster=tasks.astype(str), n_resamples=500, rng=0)

    def w(r):
        return float(
            (r.ci.sel(ci_bound="upper") - r.ci.sel(ci_bound="lower")).sel(metric="accuracy")
        )

    assert w(clus) > 2 * w(naive)
    assert "cluster" in clus.ci.attrs["ci_detail"]
    # the cluster may also be a coord of a DataArray of labels
    da = xr.DataArray(y, dims="item", coords={"task": ("item", tasks.astype(str))})
    via_coord = classification_metrics(da, p, cluster="task", n_resamples=500, rng=0)
    np.testing.assert_allclose(via_coord.ci.values, clus.ci.values)


def test_bad_input_messages():
    with pytest.raises(ValueError, match="`y_true` must hold 0/1 or booleans"):
        classification_metrics([0, 1, 2], [0, 1, 1])
    with pytest.raises(ValueError, match="one value per item"):
        classification_metrics([0, 1], [0, 1, 1])
    with pytest.raises(ValueError, match="`score` must be finite"):
        pr_curve([0, 1], [0.1, np.nan])
    with pytest.raises(ValueError, match="`target` must satisfy"):
        threshold_for_recall([0, 1], [0.1, 0.2], target=1.5)
    with pytest.raises(ValueError, match="`weights` must be None"):
        cohen_kappa([0, 1], [0, 1], weights="cubic")
    with pytest.raises(ValueError, match="labels not in `categories`"):
        cohen_kappa(["a", "b"], ["a", "c"], categories=["a", "b"])


def test_linearised_se_matches_statsmodels_kappa_variance():
    """The studentized interval's standard error: delta method = the Fleiss-Cohen-Everitt variance.

    statsmodels' ``std_kappa`` is the large-sample SE with divisor n; ours carries the
    n / (n - 1) small-sample factor of the cluster-robust (CR1) sandwich.
    """
    from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

    from hierbench.freq._judges._resample import _linearised_se

    rng = np.random.default_rng(3)
    n, k = 300, 3
    a = rng.integers(0, k, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, k, n))
    tab = np.zeros((k, k))
    np.add.at(tab, (a, b), 1)
    dis = 1 - np.eye(k)

    def kappa(S):
        t = S.reshape(-1, k, k)
        tot = t.sum((1, 2))
        obs = (t * dis).sum((1, 2)) / tot
        exp_ = (t.sum(2)[:, :, None] * t.sum(1)[:, None, :] * dis).sum((1, 2)) / tot**2
        return (1 - obs / exp_)[:, None]

    # one-hot item rows: the distinct rows are the cells, each drawn as often as its count
    se = _linearised_se(kappa, tab.reshape(1, -1), tab.reshape(1, -1), np.eye(k * k), n)[0, 0]
    ref = sm_kappa(tab, return_results=True).std_kappa
    assert se * np.sqrt((n - 1) / n) == pytest.approx(ref, rel=1e-8)


def test_linearised_se_matches_cluster_robust_ratio():
    """For precision = sum tp / sum (tp + fp) over clusters: the closed-form CR1 ratio SE."""
    from hierbench.freq._judges._resample import _linearised_se

    rng = np.random.default_rng(4)
    G = 25
    X = rng.poisson([6.0, 2.0, 1.5, 20.0], size=(G, 4)).astype(float)  # tp, fp, fn, tn per cluster
    S = X.sum(0)
    R = S[0] / (S[0] + S[1])
    ref = np.sqrt(G / (G - 1) * ((X[:, 0] - R * (X[:, 0] + X[:, 1])) ** 2).sum()) / (S[0] + S[1])
    se = _linearised_se(
        lambda T: (T[:, 0] / (T[:, 0] + T[:, 1]))[:, None], S[None], np.ones((1, G)), X, G
    )
    assert se[0, 0] == pytest.approx(ref, rel=1e-7)


@pytest.mark.slow
def test_studentized_reaches_nominal_coverage_with_few_clusters():
    """20 clustered tasks x 10 items, task shift sd 1 on the judge's logit: the default interval.

    Truth: the population metrics of the same process by Monte Carlo (2e6 items, MC sd < 0.001).
    200 replications; nominal 0.95 must lie in the 99% Wilson band of the observed coverage
    (the percentile interval covered 0.91-0.92 here in benchmarks/bench_beyond_coverage.py).
    """
    from scipy.special import expit
    from scipy.special import logit

    # the logistic cdf and quantile as scipy.special's expit and logit: bit for bit stats.logistic's
    # cdf and ppf (checked on this truth's 2e6 items), without a distribution's overhead on each call

    def sample(rng, n):
        tasks = np.repeat(np.arange(n // 10), 10)
        shift = rng.normal(0, 1, n // 10)[tasks]
        y = rng.random(n) < 0.3
        p = np.where(
            y,
            rng.random(n) < expit(logit(0.8) + shift),
            rng.random(n) < expit(logit(0.1) + shift),
        )
        fa = rng.random(n) < expit(logit(0.15) + shift)
        fb = rng.random(n) < expit(logit(0.2) + shift)
        return y.astype(int), p.astype(int), (y ^ fa).astype(int), (y ^ fb).astype(int), tasks

    rng = np.random.default_rng(20261130)
    y, p, a, b, _ = sample(rng, 2_000_000)
    tp, fp, fn = (y * p).sum(), ((1 - y) * p).sum(), (y * (1 - p)).sum()
    t = np.bincount(2 * a + b, minlength=4).reshape(2, 2) / a.size
    pe = (t.sum(1) * t.sum(0)).sum()
    truth = {
        "precision": tp / (tp + fp),
        "recall": tp / (tp + fn),
        "f1": 2 * tp / (2 * tp + fp + fn),
        "kappa": (np.trace(t) - pe) / (1 - pe),
    }
    reps = 200
    hits = dict.fromkeys(truth, 0)
    for _ in range(reps):
        y, p, a, b, tasks = sample(rng, 200)
        r = classification_metrics(y, p, cluster=tasks, n_resamples=500, rng=rng)
        for m in ("precision", "recall", "f1"):
            lo, hi = r.ci.sel(metric=m).values
            hits[m] += lo <= truth[m] <= hi
        lo, hi = cohen_kappa(a, b, cluster=tasks, n_resamples=500, rng=rng).ci.values
        hits["kappa"] += lo <= truth["kappa"] <= hi
    for m in truth:
        lo, hi = _wilson(hits[m], reps)
        assert lo <= 0.95 <= hi, (m, hits[m] / reps, (lo, hi))


def test_method_choices_and_kinds():
    y = np.r_[np.ones(30), np.zeros(70)].astype(int)
    p = np.r_[np.ones(25), np.zeros(5), np.ones(10), np.zeros(60)].astype(int)
    r = classification_metrics(y, p, n_resamples=300, rng=0)
    assert r.ci.attrs["ci_kind"] == "t" and "studentized" in r.ci.attrs["ci_detail"]
    assert bool(((r.ci >= 0) & (r.ci <= 1)).all())  # clipped to the metrics' range
    assert (
        cohen_kappa(y, p, method="percentile", n_resamples=300, rng=0).ci.attrs["ci_kind"]
        == "percentile"
    )
    with pytest.raises(
        ValueError, match=r"`method` must be one of \['studentized', 'percentile', 'bca'\]"
    ):
        fleiss_kappa([["a", "b"], ["a", "a"]], method="basic")


def test_too_few_units_for_the_studentized_interval_warn_and_span_the_range():
    from hierbench.freq import SmallSampleWarning

    y, p = np.array([1, 0, 1, 1, 0]), np.array([1, 0, 0, 1, 1])
    with pytest.warns(SmallSampleWarning, match="spans the whole range"):
        r = classification_metrics(y, p, cluster=["a", "a", "b", "b", "b"], n_resamples=300, rng=0)
    np.testing.assert_array_equal(r.ci.sel(metric="recall").values, [0.0, 1.0])
    with pytest.warns(SmallSampleWarning, match=r"\[-1.0, 1.0\]"):
        k = cohen_kappa(y, p, n_resamples=300, rng=0)
    assert np.isfinite(k.ci.values).all()


@pytest.mark.parametrize(
    ("call", "why"),
    [
        # no positive item: recall's denominator is 0, so AP and the recall threshold are 0/0
        (lambda: pr_curve([0, 0, 0, 0], [0.9, 0.5, 0.4, 0.1], n_resamples=50, rng=0),
         "no positive item: the average precision is undefined"),
        (lambda: threshold_for_recall([0, 0, 0, 0], [0.9, 0.5, 0.4, 0.1], n_resamples=50, rng=0),
         "no positive item: the threshold is undefined"),
        # one category: expected (dis)agreement is 1 (0), kappa = 0/0 by its definition
        (lambda: cohen_kappa(["y"] * 4, ["y"] * 4, n_resamples=50, rng=0),
         r"expected disagreement is 0 \(one category only\): kappa is undefined"),
        (lambda: fleiss_kappa([["a", "a"]] * 4, n_resamples=50, rng=0),
         "all ratings in one category: Fleiss' kappa is undefined"),
    ],
)
def test_an_undefined_point_estimate_is_nan_and_says_why(call, why):
    with pytest.warns(UndefinedMetricWarning, match=why) as seen:
        res = call()
    assert np.isnan(float(res.estimate))
    assert {w.filename for w in seen if re.search(why, str(w.message))} == {__file__}  # the caller's line
