"""Judges and guardrails: metrics against scikit-learn / statsmodels, seed 003 numbers, bootstrap coverage."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench.freq import (
    UndefinedMetricWarning,
    classification_metrics,
    cohen_kappa,
    fleiss_kappa,
    pr_curve,
    threshold_for_recall,
)

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
    assert r.ci.attrs["ci_kind"] == "percentile"
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


def test_bootstrap_reaches_nominal_coverage():
    """Percentile bootstrap of precision, recall and F1: 200 simulated detectors, n = 400 items."""
    prev, tpr, fpr = 0.3, 0.8, 0.1
    truth = {
        "precision": prev * tpr / (prev * tpr + (1 - prev) * fpr),
        "recall": tpr,
    }
    truth["f1"] = 2 * truth["precision"] * truth["recall"] / (truth["precision"] + truth["recall"])
    rng = np.random.default_rng(20261130)
    reps = 200
    hits = dict.fromkeys(truth, 0)
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
