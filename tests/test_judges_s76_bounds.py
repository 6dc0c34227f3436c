"""Audit s76 J, findings 1 and 3: a judge proportion at 0 or 1 gets a bound, not a zero-width interval.

The expected bounds come from scipy's beta quantiles (Clopper-Pearson) or from the closed form
of the no-success bound over G units, 1 - ((1 - prob) / 2)^(1 / G), written here by hand; F-beta's
bound from those by its formula. On the old code the recall of 30 of 30 had the interval [1, 1]
(no warning), and the rubric's bottom share 0 [0, 0] with a warning that read as if of the means.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench._base import HierbenchWarning
from hierbench._base import ZeroWidthIntervalWarning
from hierbench.freq import classification_metrics
from hierbench.freq import cohen_kappa
from hierbench.freq import rubric_summary
from hierbench.freq._kernels import DegenerateBootstrapWarning

A = 0.025  # (1 - prob) / 2 at 95%


def _cp(x: int, n: int) -> tuple[float, float]:
    """Clopper-Pearson's two-sided 95% interval for x of n (scipy's beta quantiles)."""
    lo = stats.beta.ppf(A, x, n - x + 1) if x > 0 else 0.0
    hi = stats.beta.ppf(1 - A, x + 1, n - x) if x < n else 1.0
    return float(lo), float(hi)


def _fbeta(p, r, beta=1.0):
    return (1 + beta**2) * p * r / (beta**2 * p + r)


# a guardrail that catches all 30 violations among 500 transcripts, with 25 false alarms (the audit's)
Y = np.r_[np.ones(30), np.zeros(470)]
CAUGHT_ALL = np.r_[np.ones(30), np.ones(25), np.zeros(445)]


@pytest.mark.parametrize("method", ["studentized", "percentile", "bca"])
def test_recall_30_of_30_gets_clopper_pearson_whatever_the_method(method):
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegenerateBootstrapWarning)  # BCa no longer gives up on it
        r = classification_metrics(Y, CAUGHT_ALL, method=method, n_resamples=200, rng=0)
    np.testing.assert_allclose(r.ci.sel(metric="recall").values, _cp(30, 30), rtol=1e-10)
    assert _cp(30, 30)[0] == pytest.approx(0.8843, abs=1e-4)
    assert r.ci.attrs["ci_kind"] == "mixed"
    kinds = r.to_frame()["ci_kind"].to_dict()
    assert kinds["recall"] == "exact" and kinds["precision"] == {"studentized": "t"}.get(method, method)
    assert "Clopper-Pearson" in str(r.ci_flag.sel(metric="recall").item())
    assert str(r.ci_flag.sel(metric="precision").item()) == ""
    assert "Clopper-Pearson" in r.ci.attrs["ci_detail"]
    assert "Clopper-Pearson" in repr(r)  # the flag after the metric's line


def test_a_classifier_with_no_hit_and_a_perfect_one():
    # no hit: 0 of 30 positives flagged, 0 of 5 flags right; F1 is 0
    p = np.r_[np.zeros(30), np.ones(5), np.zeros(465)]
    r = classification_metrics(Y, p, n_resamples=200, rng=0)
    ci = r.ci.to_pandas()
    np.testing.assert_allclose(ci.loc["recall"], _cp(0, 30), rtol=1e-10)
    np.testing.assert_allclose(ci.loc["precision"], _cp(0, 5), rtol=1e-10)
    # F1 <= F1(upper bound of precision, upper bound of recall): both hold at once at 95% (Bonferroni)
    np.testing.assert_allclose(ci.loc["f1"], [0.0, _fbeta(_cp(0, 5)[1], _cp(0, 30)[1])], rtol=1e-10)
    assert r.ci_kind.sel(metric="f1").item() == "conservative"
    # every verdict right: each proportion on its own denominator, F-beta (beta 2) from the lower bounds
    r = classification_metrics(Y, Y, beta=2.0, n_resamples=200, rng=0)
    ci = r.ci.to_pandas()
    for m, n in (("precision", 30), ("recall", 30), ("specificity", 470), ("accuracy", 500)):
        np.testing.assert_allclose(ci.loc[m], _cp(n, n), rtol=1e-10)
    lo = _cp(30, 30)[0]
    assert ci.loc["f_beta", "lower"] == pytest.approx(_fbeta(lo, lo, 2.0), rel=1e-12)
    assert set(r.to_frame()["ci_kind"]) == {"exact", "conservative"}


def test_with_clusters_the_bound_is_over_the_clusters_holding_a_denominator_item():
    # 30 positives in 6 tasks (5 each), all caught; negatives in 20 other tasks
    tasks = np.r_[np.repeat(np.arange(6), 5), 6 + np.arange(470) % 20]
    r = classification_metrics(Y, CAUGHT_ALL, cluster=tasks, n_resamples=200, rng=0)
    assert r.ci.sel(metric="recall").values.tolist() == pytest.approx([A ** (1 / 6), 1.0], rel=1e-12)
    assert r.ci_kind.sel(metric="recall").item() == "bounded-mean"
    assert "6 clusters" in str(r.ci_flag.sel(metric="recall").item())
    assert "clusters' shares" in r.ci.attrs["ci_detail"]


def test_bca_on_a_flat_kappa_gives_advice_for_judges_not_pass_rates():
    a = np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3])  # the raters agree on every item: kappa 1 in every resample
    with pytest.warns(DegenerateBootstrapWarning, match="BCa is undefined") as seen:
        cohen_kappa(a, a, method="bca", n_resamples=200, rng=0)
    text = " ".join(str(w.message) for w in seen if w.category is DegenerateBootstrapWarning)
    assert "pass_hat_k" not in text and "exact_interval" in text


def _rubric(scores: np.ndarray, agents: list[str], **coords) -> xr.Dataset:
    return xr.Dataset(
        {"score": (("agent", "task", "run"), scores.astype(float))},
        coords={"agent": agents, "task": [f"t{i}" for i in range(scores.shape[1])], **coords},
        attrs={"judge_model": "j1"},
    )


def test_the_bottom_share_at_0_gets_the_bound_and_no_warning_about_the_means():
    g = np.random.default_rng(3)
    s = np.stack([g.integers(1, 6, (18, 1)), g.integers(2, 6, (18, 1))])  # agent "never" gives no 1
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroWidthIntervalWarning)
        r = rubric_summary(_rubric(s, ["any", "never"]), n_resamples=200, rng=0)
    # one run per task: the bound over 18 tasks is Clopper-Pearson's for 0 of 18
    np.testing.assert_allclose(r.bottom_share_ci.sel(agent="never").values, _cp(0, 18), rtol=1e-10)
    assert r.bottom_share_ci_kind.sel(agent="never").item() == "bounded-mean"
    assert r.bottom_share_ci.attrs["ci_kind"] == "mixed"
    assert "bound over 18 tasks" in str(r.bottom_share_ci_flag.sel(agent="never").item())
    assert "never: " in repr(r) and "share <= 1: 0 [0, 0.185" in repr(r)  # 1 - 0.025^(1/18) = 0.1853
    assert r.to_frame().loc["never", "bottom_share_ci_kind"] == "bounded-mean"


def test_a_zero_width_bottom_share_inside_0_1_is_warned_as_the_bottom_share():
    s = np.zeros((2, 12, 2))
    s[0, :, 0], s[0, :, 1] = 1, 4  # one run of two at the bottom on every task: share 0.5 everywhere
    s[1] = np.random.default_rng(0).integers(1, 6, (12, 2))
    with pytest.warns(ZeroWidthIntervalWarning) as seen:
        rubric_summary(_rubric(s, ["half", "mixed"]), n_resamples=200, rng=0)
    texts = [str(w.message) for w in seen if w.category is ZeroWidthIntervalWarning]
    bottom = [t for t in texts if t.startswith("the bottom share's (share of scores <= 1)")]
    assert len(bottom) == 1 and "1 of 2 agents (half)" in bottom[0]


def test_agents_graded_by_different_judges_are_warned_of_by_name():
    s = np.random.default_rng(1).integers(1, 6, (4, 10, 2))
    ds = _rubric(s, ["a", "b", "c", "d"], judge_model=("agent", ["gpt-4o", "gpt-4o", "claude", "claude"]))
    with pytest.warns(HierbenchWarning, match=r"different judge setups: judge_model 'claude' for c, d; "
                                              r"'gpt-4o' for a, b\."):
        r = rubric_summary(ds, n_resamples=100, rng=0)
    assert r.judge == {"judge_model": ("claude", "gpt-4o")}
    with warnings.catch_warnings(record=True) as seen:  # one setup: nothing said of it
        warnings.simplefilter("always")
        rubric_summary(_rubric(s, list("abcd")), n_resamples=50, rng=0)
    assert not [w for w in seen if "judge setups" in str(w.message)]
