"""Audit s76 J, findings 4, 5 and 7: weighted kappa by value, threshold_for_recall's guards, Fleiss' floor.

Expected values: weighted kappa by its definition written here (1 - mean disagreement of the
pairs rated over the mean disagreement of all pairs of ratings), sklearn for the positions of a
given order, a binomial count of the resamples that draw no positive item, and statsmodels'
Fleiss' kappa over every table of a small design for its least value.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from hierbench._base import HierbenchError
from hierbench._base import UndefinedMetricWarning
from hierbench._base import ZeroWidthIntervalWarning
from hierbench.freq import cohen_kappa
from hierbench.freq import fleiss_kappa
from hierbench.freq import threshold_for_recall

skm = pytest.importorskip("sklearn.metrics")


def _kappa_by_value(a, b, power):
    """Weighted kappa with disagreement |x - y|^power by value: observed pairs over all pairs of ratings."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return 1 - np.mean(np.abs(a - b) ** power) / np.mean(np.abs(a[:, None] - b[None, :]) ** power)


# a 1-5 rubric on which neither rater gave a 4 (the audit's example)
A = [1, 2, 3, 5, 5, 3, 2, 1, 5, 3, 2, 5]
B = [1, 3, 3, 5, 3, 2, 2, 2, 5, 5, 1, 3]


@pytest.mark.parametrize(("weights", "power"), [("linear", 1), ("quadratic", 2)])
def test_weighted_kappa_on_numbers_measures_distance_by_value(weights, power):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few items
        r = cohen_kappa(A, B, weights=weights, n_resamples=50, rng=0)
    assert float(r.estimate) == pytest.approx(_kappa_by_value(A, B, power), abs=1e-12)
    assert r.estimate.attrs["distance"].startswith("by value")
    if weights == "quadratic":
        assert float(r.estimate) == pytest.approx(0.6811, abs=1e-4)  # 0.741 when 3 and 5 were one step apart


def test_unequally_spaced_number_labels_and_the_order_given_in_categories():
    g = np.random.default_rng(7)
    levels = np.array([0, 0.5, 1, 5])
    a = levels[g.integers(0, 4, 40)]
    b = np.where(g.random(40) < 0.6, a, levels[g.integers(0, 4, 40)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = cohen_kappa(a, b, weights="quadratic", n_resamples=50, rng=0)
        given = cohen_kappa(a, b, weights="quadratic", categories=[0, 0.5, 1, 5], n_resamples=50, rng=0)
    assert float(r.estimate) == pytest.approx(_kappa_by_value(a, b, 2), abs=1e-12)
    # categories= still sets the order, and the distance is by position in it (sklearn's, on the codes)
    codes = {v: i for i, v in enumerate(levels)}
    ref = skm.cohen_kappa_score([codes[x] for x in a], [codes[x] for x in b], weights="quadratic")
    assert float(given.estimate) == pytest.approx(ref, abs=1e-12)
    assert given.estimate.attrs["distance"].startswith("by position")
    assert abs(float(r.estimate) - float(given.estimate)) > 0.05


def _forty_items():
    g = np.random.default_rng(0)
    y = np.zeros(40)
    y[[3, 17, 29]] = 1
    s = g.random(40)
    s[[3, 17, 29]] += 0.4
    return y, s


def test_threshold_counts_and_says_the_resamples_without_a_positive_item():
    y, s = _forty_items()
    with pytest.warns(UndefinedMetricWarning, match=r"the threshold \(and the precision there\) in \d+ of 2000"):
        r = threshold_for_recall(y, s, n_resamples=2000, rng=0)
    n_nan = int(np.isnan(r.distribution.sel(quantity="threshold").values).sum())
    assert r.n_undefined == n_nan
    # a resample draws no positive with probability (37/40)^40; 4 binomial SDs of Monte Carlo tolerance
    p = (37 / 40) ** 40
    assert abs(r.n_undefined - 2000 * p) < 4 * np.sqrt(2000 * p * (1 - p))
    assert f"{2000 - n_nan} resamples used: {n_nan} drew no positive item" in r.ci.attrs["ci_detail"]
    assert r.precision_ci.attrs["ci_detail"] == r.ci.attrs["ci_detail"]


def test_threshold_refuses_fewer_than_three_items_as_pr_curve_does():
    with pytest.raises(HierbenchError, match="needs at least 3 items; got 2"):
        threshold_for_recall([0, 1], [0.1, 0.2], n_resamples=100, rng=0)


def test_threshold_warns_once_of_the_interval_that_has_zero_width():
    # one positive: every resample that draws it chooses its score; the precision there varies
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        r = threshold_for_recall([0, 1, 0, 0, 0, 0], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], target=0.9,
                                 n_resamples=200, rng=0)
    flat = [str(w.message) for w in seen if w.category is ZeroWidthIntervalWarning]
    assert len(flat) == 1
    assert flat[0].startswith("the 95% percentile interval of the threshold (") and "precision there" not in flat[0]
    lo, hi = r.precision_ci.values
    assert lo < hi


def test_fleiss_kappa_lower_end_is_clipped_at_its_least_value():
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    # the least Fleiss' kappa of 3 raters, by statsmodels over every table of 3 items and 3 categories
    rows = [c for c in itertools.product(range(4), repeat=3) if sum(c) == 3]  # one item's counts per category
    least = min(
        sm_fleiss(np.array(t, dtype=float), method="fleiss")
        for t in itertools.product(rows, repeat=3)
        if np.array(t).sum(0).min() > 0  # every category used
    )
    assert least == pytest.approx(-0.5, abs=1e-12)  # -1/(r - 1), reached where each item's ratings all differ
    ratings = np.random.default_rng(0).integers(0, 3, (12, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = fleiss_kappa(ratings, n_resamples=300, rng=0)  # the studentized lower end was -0.525
        pct = fleiss_kappa(ratings, method="percentile", n_resamples=300, rng=0)
    assert float(r.ci.sel(ci_bound="lower")) == pytest.approx(least, abs=1e-12)
    assert "lower end clipped at -1/(r - 1) = -0.5" in r.ci.attrs["ci_detail"]
    assert float(pct.ci.sel(ci_bound="lower")) >= least - 1e-12
