"""What the pair results print and return on their own (audit R, findings 2, 5 and 7).

Each expected value is independent of the code under test: the bootstrap floor ``2 / (B + 1)``
against Holm's ``alpha / m`` and statsmodels' Holm; scipy's exact binomial test and the exact
multinomial law of a bootstrap mean; by-hand sign-flip counts; numpy's means on the shared tasks.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats
from statsmodels.stats import multitest as smm

from hierbench.freq import PValueResolutionWarning
from hierbench.freq import compare_agents
from hierbench.freq import paired_test


def _ds(y) -> xr.Dataset:
    y = np.asarray(y, dtype=float)
    M, T = y.shape
    coords = {"agent": [f"A{i}" for i in range(M)], "task": [f"t{j}" for j in range(T)]}
    return xr.Dataset({"score": (("agent", "task", "run"), y[..., None])}, coords=coords)


def _spread(n_agents=4, n_tasks=30, seed=0) -> xr.Dataset:
    """Continuous scores off any lattice, agents 0.25 apart: every gap is large."""
    rng = np.random.default_rng(seed)
    y = rng.uniform(0.0, 0.25, (n_agents, n_tasks)) + 0.25 * np.arange(n_agents)[::-1, None]
    return _ds(y)


def _resolution_messages(rec) -> list[str]:
    return [str(w.message) for w in rec if issubclass(w.category, PValueResolutionWarning)]


def test_own_holm_that_cannot_reach_its_first_threshold_is_said_by_repr_significant_and_matrix():
    """F2: 4 agents, 6 pairs, bootstrap B = 199: floor 2 / 200 = 0.01 above Holm's 0.05 / 6 = 0.00833.

    The gaps are large (every raw p at its floor), yet Holm calls none: statsmodels' Holm over the
    raw p-values agrees, and every display of the result says why, each time.
    """
    floor, m, alpha = 2 / 200, 6, 0.05
    assert floor >= alpha / m
    with pytest.warns(PValueResolutionWarning) as rec:
        res = compare_agents(_spread(), cluster=None, test="bootstrap", adjust="holm", n_resamples=199, rng=0)
    (said,) = _resolution_messages(rec)
    df = res.to_frame()
    assert (df["p_value"] == floor).all()
    assert not smm.multipletests(df["p_value"], alpha=alpha, method="holm")[0].any()
    need = math.floor(2 * m / alpha)  # 2 / (B + 1) < alpha / m needs B + 1 > 2 m / alpha = 240: B = 240
    assert f"no bootstrap p-value here can go below {floor:.3g}" in said
    assert f"{m} pairs put Holm's first threshold at {alpha / m:.3g}" in said
    assert f"raise `n_resamples` to at least {need}" in said
    text = " ".join(repr(res).split())
    assert "0 of 6 pairs differ (Holm, family-wise 0.05)" in text
    assert "note: " + " ".join(said.split()) in text
    for name in ("significant", "matrix"):  # the result's own adjustment: warned every time
        with pytest.warns(PValueResolutionWarning) as rec:
            out = getattr(res, name)()
        assert _resolution_messages(rec) == [said]
        marks = out.values if name == "significant" else out.apply(lambda c: c.str.endswith("*")).values
        assert not np.asarray(marks).any()
    # at B = 240 the floor 2 / 241 is below 0.05 / 6: no note, no warning, and pairs are called
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        ok = compare_agents(_spread(), cluster=None, test="bootstrap", adjust="holm", n_resamples=need, rng=0)
        text, called = repr(ok), ok.significant()
        out = ok.matrix()
    assert not _resolution_messages(rec) and "can go below" not in text
    assert int(np.triu(called.values, 1).sum()) == int(
        smm.multipletests(ok.to_frame()["p_value"], alpha=alpha, method="holm")[0].sum()) > 0
    assert out.apply(lambda c: c.str.endswith("*")).values.any()


def test_paired_test_repr_says_when_its_interval_and_p_value_disagree():
    """F5: 20 tasks, A0 alone passes 7, A1 alone 1: the exact sign test p is scipy's binomtest(7, 8).

    The bootstrap mean of the differences (+1 w.p. 7/20, -1 w.p. 1/20, else 0) is at most 0 with
    exact multinomial probability 0.0131 < 0.025, so the 95% percentile interval excludes 0 (B =
    1999: Monte Carlo sd of that share 0.0025, so 0.025 is 4.7 of them above it) while p = 0.0703 > 0.05.
    The default interval, the paired t (mean 0.3 +- t_0.975,19 sd / sqrt(20), by hand with scipy's
    quantile), excludes 0 too, and the note names it.
    """
    a, b = np.zeros(20), np.zeros(20)
    a[:7], b[7], a[10:15], b[10:15] = 1, 1, 1, 1
    n, probs = 20, (7 / 20, 1 / 20, 12 / 20)
    at_most_0 = sum(stats.multinomial.pmf([i, j, n - i - j], n, probs)
                    for i in range(n + 1) for j in range(n + 1 - i) if i <= j)
    assert 0.013 < at_most_0 < 0.0135
    p_exact = stats.binomtest(7, 8).pvalue
    ds = _ds([a, b])
    res = paired_test(ds.score.sel(agent="A0"), ds.score.sel(agent="A1"), n_resamples=1999, rng=0,
                      method="percentile")  # fmt: skip
    assert float(res.p_value) == pytest.approx(p_exact, abs=1e-12) and p_exact > 0.05
    assert float(res.ci.values[0]) > 0
    text = " ".join(repr(res).split())
    assert "note: per-pair CI and p disagree (at 0.05): CI excludes 0 only." in text
    assert "95% percentile interval and p_permutation are different procedures" in text
    t_res = paired_test(ds.score.sel(agent="A0"), ds.score.sel(agent="A1"), n_resamples=99, rng=0)
    d = a - b
    lower = d.mean() - stats.t.ppf(0.975, 19) * np.std(d, ddof=1) / np.sqrt(20)
    assert float(t_res.ci.values[0]) == pytest.approx(lower, rel=1e-12) and lower > 0
    t_text = " ".join(repr(t_res).split())
    assert "note: per-pair CI and p disagree (at 0.05): CI excludes 0 only." in t_text
    assert "95% t interval and p_permutation are different procedures" in t_text
    # 12 against 1: p = binomtest(12, 13) < 0.05 and the interval excludes 0 too; they agree, no note
    a2 = a.copy()
    a2[15:20] = 1
    ds2 = _ds([a2, b])
    agree = paired_test(ds2.score.sel(agent="A0"), ds2.score.sel(agent="A1"), n_resamples=999, rng=0)
    assert float(agree.p_value) == pytest.approx(stats.binomtest(12, 13).pvalue, abs=1e-12)
    assert stats.binomtest(12, 13).pvalue < 0.05
    assert float(agree.ci.values[0]) > 0 and "disagree" not in repr(agree)


def test_max_t_p_is_one_where_a_pair_ties_on_every_task_with_the_reason():
    """F7: a pair with no difference on any task has max-T p 1 (its |t| = 0 is reached by every pattern).

    All three agents pass everything: every pair ties, there is no family, p_maxt is still 1 and
    the simultaneous interval is the shared 0. Beside a family (A2 fails 10 of 30 tasks), the tied
    pair is 1 and the two others are 2 / 2^10 by hand: the one sign pattern of their 10 differing
    tasks (and its mirror) that reaches their |t|.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero-width intervals and p-value floors: warned elsewhere
        res = compare_agents(_ds(np.ones((3, 30))), n_resamples=99, rng=0)
    df = res.to_frame()
    assert res.attrs["adjust"] == "maxt"
    assert (df["p_adjusted"] == 1).all() and (df["p_maxt_stepdown"] == 1).all()
    assert (df[["simultaneous_lower", "simultaneous_upper"]] == 0).all().all()
    assert df.attrs["p_maxt_tie_note"].startswith("3 of 3 pairs: a pair whose difference is 0 on every unit")
    assert "0 of 3 pairs differ" in repr(res)
    assert "-0.00" not in res.matrix().to_string()
    y = np.ones((3, 30))
    y[2, :10] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mixed = compare_agents(_ds(y), n_resamples=99, rng=0).to_frame()
    np.testing.assert_allclose(mixed["p_adjusted"], [1.0, 2 / 2**10, 2 / 2**10], rtol=1e-12)
    assert mixed.loc["A0 - A1", "p_maxt_stepdown"] == 1
    assert mixed.attrs["p_maxt_tie_note"].startswith("1 of 3 pairs")


def test_repr_says_how_many_tasks_the_pairs_share_and_what_a_negative_upper_cell_means():
    """F7: A0 ran 10 of 40 tasks. Each cell is numpy's mean difference on the tasks both ran.

    The rows follow the mean paired difference against the others, so a cell above the diagonal is
    negative here; the repr says the pairs share 10 to 40 of the 40 tasks and reads that cell.
    """
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, (3, 40)).astype(float)
    y[0, :30] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = compare_agents(_ds(y), n_resamples=99, rng=0)
    d = np.array([[np.nanmean(y[i] - y[j]) for j in range(3)] for i in range(3)])
    np.fill_diagonal(d, np.nan)
    order = np.argsort(-np.nanmean(d, axis=1), kind="stable")
    upper = d[np.ix_(order, order)][np.triu_indices(3, 1)]
    assert (np.round(upper, 2) < 0).any()
    mat = res.matrix()
    for r, i in enumerate(order):
        for c, j in enumerate(order):
            if i != j:
                assert float(mat.iloc[r, c].rstrip("*")) == pytest.approx(d[i, j], abs=0.005 + 1e-9)
    text = " ".join(repr(res).split())
    assert "note: the pairs share different numbers of tasks, 10 to 40 of the 40 tasks" in text
    assert "a cell above the diagonal can be negative: every cell is row minus column" in text
    full = y.copy()
    full[0, :30] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same = compare_agents(_ds(full), n_resamples=99, rng=0)
    assert "share different" not in repr(same)


def test_the_paired_repr_rule_and_words_are_the_pair_tables():
    """F5: the repr's rule and words are those of the report's and the CLI's pair table, case by case.

    Every verdict combination by hand: an interval above 0, below 0, across 0, touching 0, and
    undefined ends or p-values, against p below, at and above alpha.
    """
    import pandas as pd

    from hierbench.freq._resampling._paired import ci_p_disagree
    from hierbench.freq._resampling._paired import disagree_label
    from hierbench.freq._resampling._paired import disagree_way
    from hierbench.report._pairs import pair_display

    ends = [(0.1, 0.5), (-0.5, -0.1), (-0.1, 0.2), (0.0, 0.3), (np.nan, 0.2)]
    ps = [0.01, 0.05, 0.2, np.nan]
    lo, hi, p = (np.array(v) for v in zip(*[(a, b, q) for a, b in ends for q in ps], strict=True))
    by_hand = [bool(np.isfinite([a, b, q]).all() and ((a > 0 or b < 0) != (q < 0.05)))
               for a, b, q in zip(lo, hi, p, strict=True)]
    assert ci_p_disagree(lo, hi, p, 0.05).tolist() == by_hand
    assert sum(by_hand) == 6
    label = disagree_label(0.05)
    table = pd.DataFrame({"per-pair lower": lo, "per-pair upper": hi, label: pd.array(by_hand, dtype="boolean")})
    shown = pair_display(table)[label].tolist()
    assert [w for w, f in zip(shown, by_hand, strict=True) if f] == [
        disagree_way(a, b, 0.05) for a, b, f in zip(lo, hi, by_hand, strict=True) if f]
    assert {disagree_way(0.1, 0.5, 0.05), disagree_way(-0.1, 0.2, 0.05)} == {"CI excludes 0 only", "p < 0.05 only"}
