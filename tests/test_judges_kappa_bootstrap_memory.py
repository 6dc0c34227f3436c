"""Audit S finding 2: cohen_kappa's studentized bootstrap in memory linear in the items, and a warning on score-like labels.

Independent checks: statsmodels' large-sample standard error of kappa (Fleiss, Cohen & Everitt 1969),
which the linearised (CR1) standard error equals times sqrt(n / (n - 1)) for unclustered items;
sklearn's cohen_kappa_score for the estimate; tracemalloc for the peak memory.
"""

from __future__ import annotations

import tracemalloc
import warnings

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa

import hierbench as hb
from hierbench.freq import UndefinedMetricWarning
from hierbench.freq._judges._resample import _linearised_se


@pytest.mark.parametrize(("k", "n"), [(3, 60), (40, 120)])  # gradient by coordinates; by directions
def test_linearised_se_is_the_large_sample_se_of_kappa(k, n):
    rng = np.random.default_rng(3)
    a = rng.integers(0, k, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, k, n))

    def kappa(S):
        t = S.reshape(-1, k, k)
        tot = t.sum((1, 2))
        po = np.trace(t, axis1=1, axis2=2) / tot
        pe = (t.sum(2) * t.sum(1)).sum(1) / tot**2
        return ((po - pe) / (1 - pe))[:, None]

    X = np.zeros((n, k * k))
    X[np.arange(n), a * k + b] = 1
    U, inv = np.unique(X, axis=0, return_inverse=True)
    W = np.bincount(inv.ravel(), minlength=U.shape[0])[None].astype(float)
    se = _linearised_se(kappa, X.sum(0)[None], W, U, n)[0, 0]
    tab = np.zeros((k, k))
    np.add.at(tab, (a, b), 1)
    assert se == pytest.approx(cohens_kappa(tab).std_kappa * np.sqrt(n / (n - 1)), rel=1e-6)


def test_forty_partial_credit_scores_fit_in_memory_and_are_warned_about():
    a = np.linspace(0, 1, 40)  # the audit's reproduction: 40 distinct scores, 1,600 confusion cells
    b = a[::-1]
    tracemalloc.start()
    try:
        with pytest.warns(UndefinedMetricWarning, match=r"`rater_a/rater_b` looks like continuous scores.*40 distinct values on 40 items"):
            r = hb.freq.cohen_kappa(a, b, n_resamples=200, rng=0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # before: a (200 x 40^4) array per block, 4 GB (38 GiB at the default 2,000 resamples)
    assert peak < 300e6
    assert float(r.estimate) == pytest.approx(cohen_kappa_score(a.astype(str), b.astype(str)), abs=1e-12)
    assert r.ci.attrs["ci_kind"] == "t"


@pytest.mark.parametrize(
    "labels",
    [np.arange(12), np.tile([0.0, 0.5, 1.0], 4)],  # whole numbers seen once; fractional grades that repeat
)
def test_categories_are_not_called_scores(labels):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedMetricWarning)
        r = hb.freq.cohen_kappa(labels, labels[::-1], n_resamples=50, rng=0, method="percentile")
    assert float(r.estimate) == pytest.approx(cohen_kappa_score(labels.astype(str), labels[::-1].astype(str)))


def test_studentized_refused_above_its_work_limit_with_the_remedy():
    a = np.arange(40) % 40  # 40 categories, 40 distinct (a, b) pairs: 40 directions x 1,600 cells
    b = (a + 1) % 40
    # 100,000 resamples x 40 x 1,600 = 6.4e9 evaluations (counted by hand), over the stated 2e9
    with pytest.raises(hb.HierbenchError, match=r"100000 resamples x 40 directions x 1600 cells = 6.4e\+09.*method='percentile'"):
        hb.freq.cohen_kappa(a, b, n_resamples=100_000, rng=0)
    r = hb.freq.cohen_kappa(a, b, n_resamples=200, rng=0, method="percentile")
    assert float(r.estimate) == pytest.approx(cohen_kappa_score(a, b))


def test_confusion_cells_over_the_memory_limit_are_refused():
    a = np.arange(600)  # 600 items x 600^2 cells = 2.16e8 floats (1.7 GB) > 2^27
    with pytest.raises(hb.HierbenchError, match=r"600 categories and 600 items.*bin the labels"):
        hb.freq.cohen_kappa(a, a[::-1], rng=0)
