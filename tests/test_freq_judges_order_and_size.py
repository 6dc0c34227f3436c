"""Kappa's category order and keys, its refusals on too few items, and the judge results' tables.

Every expected value comes from scikit-learn, statsmodels, an exact enumeration or a hand count.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench import HierbenchError
from hierbench.freq import UndefinedMetricWarning
from hierbench.freq import cohen_kappa
from hierbench.freq import fleiss_kappa
from hierbench.freq import pr_curve
from hierbench.freq import rubric_summary
from hierbench.freq import threshold_for_recall

skm = pytest.importorskip("sklearn.metrics")


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_weighted_kappa_orders_a_0_to_10_scale_numerically(weights):
    # MT-Bench-style grades: sorted as text, 10 came between 1 and 2 (quadratic 0.668, not 0.918)
    rng = np.random.default_rng(3)
    a = rng.integers(0, 11, 200)
    b = np.clip(a + rng.integers(-2, 3, 200), 0, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = cohen_kappa(a, b, weights=weights, n_resamples=50, rng=0)
    assert float(r.estimate) == pytest.approx(skm.cohen_kappa_score(a, b, weights=weights), abs=1e-12)
    assert r.categories == list(range(11))
    assert r.estimate.attrs["category_order"] == "numeric order of the labels"


def test_weighted_kappa_on_negative_and_fractional_grades_matches_sklearn():
    a = np.array([-2, -1, 0, 1, 2, 0.5, -1, 2, 1, 0, -2, 0.5])
    b = np.array([-1, -1, 0, 2, 2, 0.5, -2, 1, 1, 0.5, -2, 0])
    r = cohen_kappa(a, b, weights="linear", n_resamples=50, rng=0)
    # sklearn takes integer labels only: twice the grades have the same order; its weights are by
    # position in `labels`, so every integer from -4 to 4 listed makes them the distance by value
    ref = skm.cohen_kappa_score((2 * a).astype(int), (2 * b).astype(int), weights="linear", labels=np.arange(-4, 5))
    assert float(r.estimate) == pytest.approx(ref, abs=1e-12)
    assert r.categories == [-2, -1, 0, 0.5, 1, 2]


def test_weighted_kappa_on_text_needs_the_order_and_uses_the_one_given():
    a = ["low", "mid", "high", "mid", "low", "high", "mid"]
    b = ["mid", "mid", "high", "low", "low", "mid", "mid"]
    with pytest.raises(HierbenchError, match=r"text labels .* have no order.*categories="):
        cohen_kappa(a, b, weights="quadratic")
    order = ["low", "mid", "high"]
    r = cohen_kappa(a, b, weights="quadratic", categories=order, n_resamples=50, rng=0)
    ref = skm.cohen_kappa_score(a, b, weights="quadratic", labels=order)
    assert float(r.estimate) == pytest.approx(ref, abs=1e-12)
    assert r.estimate.attrs["category_order"] == "as given in `categories`"
    # unweighted kappa does not use the order: text is accepted as it was
    u = cohen_kappa(a, b, n_resamples=50, rng=0)
    assert float(u.estimate) == pytest.approx(skm.cohen_kappa_score(a, b), abs=1e-12)


def test_equal_numbers_written_two_ways_are_one_category():
    # 2 and 2.0 (labels read from JSON): the raters agree on every item, sklearn says 1
    a = np.array([1, 2, 3, 2, 1, 3, 2, 2], dtype=object)
    b = np.array([1, 2.0, 3, 2.0, 1, 3, 2, 2.0], dtype=object)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero width: every resample agrees too
        r = cohen_kappa(a, b, n_resamples=50, rng=0)
    assert float(r.estimate) == pytest.approx(skm.cohen_kappa_score(a.astype(float), b.astype(float)))
    assert r.categories == [1, 2, 3]


def test_fleiss_keys_numbers_by_value_like_statsmodels():
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    rng = np.random.default_rng(5)
    vals = rng.integers(1, 4, (30, 4))
    mixed = vals.astype(object)
    mixed[::3, 1] = mixed[::3, 1] * 1.0  # some 2.0 next to 2
    r = fleiss_kappa(mixed, n_resamples=50, rng=0)
    assert float(r.estimate) == pytest.approx(sm_fleiss(aggregate_raters(vals)[0]), abs=1e-12)
    assert r.categories == [1, 2, 3]


@pytest.mark.parametrize(
    "call, count",
    [
        (lambda: cohen_kappa(["y"], ["n"], n_resamples=50, rng=0), 1),
        (lambda: cohen_kappa(["y", "n"], ["y", "n"], n_resamples=50, rng=0), 2),
        (lambda: fleiss_kappa([["a", "a", "b"]], n_resamples=50, rng=0), 1),
        (lambda: pr_curve([1, 0], [0.3, 0.1], n_resamples=50, rng=0), 2),
        # with clusters the units are the clusters
        (lambda: cohen_kappa(list("yynny"), list("ynnny"), cluster=[0, 0, 1, 1, 1], n_resamples=50), 2),
    ],
)
def test_kappa_and_ap_refuse_fewer_than_three_units(call, count):
    with pytest.raises(HierbenchError, match=rf"needs at least 3 (item|cluster)s; got {count}\b"):
        call()


def test_kappa_counts_its_undefined_resamples():
    # items (y,y), (n,n), (y,n): kappa is 0/0 exactly when a resample draws only item 0 or
    # only item 1 (both raters constant and equal); probability 2 / 3**3 = 2/27
    n_res = 2700
    with pytest.warns(UndefinedMetricWarning, match=r"kappa in (\d+) of 2700 resamples \(a resample whose items all carry one category") as rec:
        r = cohen_kappa(["y", "n", "y"], ["y", "n", "n"], n_resamples=n_res, rng=1)
    expect = n_res * 2 / 27  # 200; binomial sd 13.6: 5 sd
    assert abs(r.n_undefined - expect) < 5 * np.sqrt(n_res * 2 / 27 * 25 / 27)
    assert r.n_undefined == int(np.isnan(r.distribution.values).sum())
    assert any(f"{r.n_undefined} of 2700" in str(w.message) for w in rec)
    assert f"{r.n_undefined} resamples with kappa undefined" in r.ci.attrs["ci_detail"]


def test_zero_width_warning_does_not_claim_the_data_carry_no_uncertainty():
    a = [1, 2, 3, 2, 1, 3, 2, 2]
    with pytest.warns(Warning) as rec:
        cohen_kappa(a, a, n_resamples=50, rng=0)
    texts = [str(w.message) for w in rec if "zero width" in str(w.message)]
    assert texts and not any("no measurable uncertainty" in t for t in texts)
    assert all("not a statement of certainty" in t for t in texts)


def test_one_rater_with_one_category_is_named_with_the_observed_agreement():
    a, b = ["y"] * 10, ["y"] * 7 + ["n"] * 3
    with pytest.warns(UndefinedMetricWarning, match=r"rater_a gives every item the same category \('y'\)"
                      r": kappa is 0 by construction.*0\.7 of items") as rec:
        r = cohen_kappa(a, b, n_resamples=50, rng=0)
    assert float(r.estimate) == pytest.approx(skm.cohen_kappa_score(a, b)) and r.observed_agreement == 0.7
    assert len([w for w in rec if "kappa is 0 by construction" in str(w.message)]) == 1
    # both raters using several categories: no such warning
    with warnings.catch_warnings(record=True) as rec2:
        warnings.simplefilter("always")
        cohen_kappa(["y", "n", "y", "n"], ["y", "n", "n", "n"], n_resamples=50, rng=0)
    assert not [w for w in rec2 if "by construction" in str(w.message) and "rater" in str(w.message)]


def test_bottom_share_is_the_mean_over_tasks_by_hand_count():
    # agent A: task 0 scored once (1), task 1 three times (1, 5, 5), task 2 three times (5, 5, 5)
    s = xr.DataArray(
        np.array([[[1, np.nan, np.nan], [1, 5, 5], [5, 5, 5]]]),
        dims=("agent", "task", "run"), coords={"agent": ["A"]},
    )
    r = rubric_summary(s, bottom=1, n_resamples=200, rng=0)
    per_task = (1 + 1 / 3 + 0) / 3  # 4/9; the share of all runs would be 2/7
    assert float(r.bottom_share.sel(agent="A")) == pytest.approx(per_task)
    df = r.to_frame()
    lo, hi = r.bottom_share_ci.sel(agent="A").values
    assert (df.loc["A", "bottom_share_lower"], df.loc["A", "bottom_share_upper"]) == (lo, hi)
    assert "mean over tasks" in type(r).__doc__


def test_judge_tables_and_reprs_name_what_they_hold():
    rng = np.random.default_rng(0)
    a = rng.integers(1, 6, 40)
    b = np.clip(a + rng.integers(-1, 2, 40), 1, 5)
    r = cohen_kappa(a, b, weights="quadratic", n_resamples=50, rng=0)
    assert "Cohen's kappa, quadratic weights, 40 items" in repr(r)
    row = r.to_frame().iloc[0]
    assert row["statistic"] == "Cohen's kappa, quadratic weights, 40 items"
    # observed agreement of weighted kappa: 1 - mean weighted disagreement, by hand
    assert row["observed_agreement"] == pytest.approx(1 - np.mean(((a - b) / 4.0) ** 2))
    f = fleiss_kappa(np.stack([a, b, a], 1), n_resamples=50, rng=0)
    assert "Fleiss' kappa, 40 items" in repr(f)
    t = threshold_for_recall([1, 0, 1, 1, 0], [0.9, 0.8, 0.7, 0.4, 0.2], target=0.6, n_resamples=100, rng=0)
    df = t.to_frame()
    assert (df["precision_lower"].item(), df["precision_upper"].item()) == tuple(t.precision_ci.values)
    assert "precision 0.6667" in repr(t)  # 2 of the 3 items scored >= 0.7 are positive
