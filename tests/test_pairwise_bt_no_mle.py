"""Bradley-Terry ML where a maximum is not finite: bootstrap resamples, all-tie and tie-free data (audit D).

Expected values come from exact enumeration (binomial probabilities from scipy), hand-built
comparison graphs, an independent Davidson likelihood written here with numpy, and
scipy's optimiser with a finite-difference Hessian.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.stats import binom
from scipy.stats import norm

from hierbench.data import read_battles
from hierbench.freq import NoFiniteMLEWarning
from hierbench.freq import fit_bradley_terry_ml

ELO = 400 / np.log(10)


def _df(rows):
    return pd.DataFrame(rows, columns=["left", "right", "winner"])


def test_a_resample_where_one_agent_wins_everything_enters_at_infinity():
    """A beat B 3 times in 5 (no ties). Resampling battles, A's wins k ~ Binomial(5, 0.6).

    For 0 < k < 5 the MLE gap is log(k / (5 - k)), so A (centred) sits at 1000 + ELO/2 log(k/(5-k)).
    P(k = 5) = 0.078 > 0.025: the upper 95% percentile bound of the full bootstrap distribution is
    +inf (the old code dropped those resamples and gave the k = 4 value, 1120). P(k = 0) = 0.010
    < 0.025 < P(k <= 1) = 0.087: the lower bound is the k = 1 value. Monte Carlo: 2000 resamples put
    the 2.5% point inside k = 1 with probability > 1 - 1e-9 (binomial tails, scipy).
    """
    pw = read_battles(_df([("A", "B", "left")] * 3 + [("A", "B", "right")] * 2))
    with pytest.warns(NoFiniteMLEWarning, match=r"won or lost every resampled battle") as rec:
        r = fit_bradley_terry_ml(pw, ties="none", n_resamples=2000, rng=0)
    lo_a, hi_a = r.ci.sel(agent="A").values
    assert hi_a == np.inf
    assert lo_a == pytest.approx(1000 + ELO / 2 * np.log(1 / 4), abs=1e-6)
    lo_b, hi_b = r.ci.sel(agent="B").values
    assert lo_b == -np.inf and hi_b == pytest.approx(1000 + ELO / 2 * np.log(4), abs=1e-6)
    p_undefined = binom.pmf(5, 5, 0.6) + binom.pmf(0, 5, 0.6)  # 0.0880
    sd = np.sqrt(2000 * p_undefined * (1 - p_undefined))
    assert abs(r.n_undefined - 2000 * p_undefined) < 5 * sd
    assert r.attrs["undefined_causes"] == {
        "a group of agents that won or lost every resampled battle against the rest": r.n_undefined
    }
    assert str(r.n_undefined) in str(rec[0].message)
    # the infinite resamples are kept in the distribution, with their direction
    assert int(np.isposinf(r.distribution.sel(agent="A")).sum()) > 0
    assert not np.isnan(r.distribution.values).any()
    assert "inf]" in repr(r)
    # relative to B, A sits at 1000 + ELO log(k / (5 - k)); B's own interval is its anchor, which
    # is no zero-width warning while A's interval has width
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        rb = fit_bradley_terry_ml(pw, ties="none", reference="B", n_resamples=2000, rng=0)
    assert not [w for w in seen if "zero width" in str(w.message)]
    lo, hi = rb.ci.sel(agent="A").values
    assert lo == pytest.approx(1000 + ELO * np.log(1 / 4), abs=1e-6) and hi == np.inf
    assert rb.ci.sel(agent="B").values.tolist() == [1000.0, 1000.0]


def test_no_mle_limit_reads_the_direction_and_rank_range_off_the_graph():
    """Hand-built resample: A beat B, C and D; B and C split; D lost to all; E absent.

    Groups {A} > {B, C} > {D}, and E alone, ordered against no one. Centred on the mean of all
    five agents, no ability has a known direction (E's is free); without E, A goes to +inf and D to
    -inf (B, C: free); relative to B, A is +inf, D -inf. Ranks: 1 + the agents of the groups above,
    m - those below.
    """
    from hierbench.freq._pairwise._undefined import _no_mle_limit

    #            A-B  A-C  A-D  B-C  B-D  C-D  (first agent's wins, ties, losses)
    ia = np.array([0, 0, 0, 1, 1, 2])
    ib = np.array([1, 2, 3, 2, 3, 3])
    cnt = np.array([[2, 0, 0], [1, 0, 0], [1, 0, 0], [1, 1, 1], [2, 0, 0], [1, 0, 0]], dtype=float)
    d, rmin, rmax, cause, absent = _no_mle_limit(ia, ib, cnt, 5, None)
    assert np.isnan(d).all() and cause == 0 and absent.tolist() == [False] * 4 + [True]
    assert rmin.tolist() == [1, 2, 2, 4, 1] and rmax.tolist() == [2, 4, 4, 5, 5]
    d4, rmin4, rmax4, cause4, _ = _no_mle_limit(ia, ib, cnt, 4, None)
    assert d4[0] == 1 and d4[3] == -1 and np.isnan(d4[1:3]).all() and cause4 == 1
    assert rmin4.tolist() == [1, 2, 2, 4] and rmax4.tolist() == [1, 3, 3, 4]
    dref, *_ = _no_mle_limit(ia, ib, cnt, 4, 1)
    assert dref[0] == 1 and dref[1] == 0 and np.isnan(dref[2]) and dref[3] == -1


def test_percentile_counts_an_undefined_resample_at_the_unfavourable_end():
    """41 resamples: linear quantile index 0.025 * 40 = 1 exactly (hand count)."""
    from hierbench.freq._pairwise._undefined import _bounds_with_undefined

    x = np.arange(1.0, 42.0)  # 1 .. 41
    one = x.copy()
    one[20] = np.nan  # one undefined: the lower bound moves down one place, the upper up one
    lo, hi = _bounds_with_undefined(one[:, None], 0.95)
    assert (lo[0], hi[0]) == pytest.approx((1.0, 41.0))  # np.quantile without the NaN: 2, 40
    two = x.copy()
    two[[5, 6]] = np.nan  # two undefined decide both bounds: NaN
    lo, hi = _bounds_with_undefined(two[:, None], 0.95)
    assert np.isnan(lo[0]) and np.isnan(hi[0])
    inf2 = x.copy()
    inf2[[5, 6]] = np.inf  # two known +inf: the upper bound is +inf, the lower untouched
    lo, hi = _bounds_with_undefined(inf2[:, None], 0.95)
    assert lo[0] == pytest.approx(2.0) and hi[0] == np.inf
    lo, hi = _bounds_with_undefined(x[:, None], 0.95)
    np.testing.assert_allclose([lo[0], hi[0]], np.quantile(x, [0.025, 0.975]), rtol=1e-12)


def test_an_agent_absent_from_task_resamples_makes_the_centred_intervals_undefined():
    """C plays on one task of four; a task resample leaves it out with probability (3/4)^4 = 0.316.

    Its ability, and so the mean every ability is centred on, is undefined there: far more than
    2.5% of the resamples, so every ability's bound is NaN (the old code kept the 68% of resamples
    that hold C and printed a 95% interval). Monte Carlo: 400 resamples, 5 sd binomial tolerance.
    """
    rows = []
    for t in range(4):
        rows += [("A", "B", "left", t), ("B", "A", "left", t), ("A", "B", "tie", t)]
    rows += [("C", "A", "left", 0), ("A", "C", "left", 0), ("C", "B", "left", 0), ("B", "C", "left", 0)]
    pw = read_battles(pd.DataFrame(rows, columns=["left", "right", "winner", "t"]), task="t")
    with pytest.warns(NoFiniteMLEWarning, match=r"with an agent absent from the resample \('C' in \d+\)"):
        r = fit_bradley_terry_ml(pw, n_resamples=400, rng=2)
    p = 0.75**4
    assert abs(r.n_undefined - 400 * p) < 5 * np.sqrt(400 * p * (1 - p))
    assert np.isnan(r.ci.values).all() and np.isfinite(r.estimate.values).all()
    # C could stand anywhere in those resamples; A and B tie there (see the next test), rank 1
    assert r.rank_ci.sel(agent="C").values.tolist() == [1, 3]
    assert r.rank_ci.sel(ci_bound="lower").values.tolist() == [1, 1, 1]
    assert np.isfinite(r.nu_ci.values).all()  # nu needs no absent agent: refitted on A and B
    assert "with an agent absent from the resample" in repr(r)


def test_a_resample_without_an_agent_is_refitted_on_the_agents_present():
    """The design above (A beating C twice in three), relative to A: refitted without C.

    Without C, every resampled task holds one A win, one B win and one tie: by symmetry
    B - A = 0, and P(tie) = nu / (2 + nu) = 1/3 gives nu = 1 (hand derivation). Those resamples
    enter B's interval and nu's at those values, C's as undefined; with C present B - A moves.
    """
    rows = []
    for t in range(4):
        rows += [("A", "B", "left", t), ("B", "A", "left", t), ("A", "B", "tie", t)]
    rows += [("C", "A", "left", 0), ("A", "C", "left", 0), ("A", "C", "left", 0), ("C", "B", "left", 0),
             ("B", "C", "left", 0)]  # fmt: skip
    pw = read_battles(pd.DataFrame(rows, columns=["left", "right", "winner", "t"]), task="t")
    with pytest.warns(NoFiniteMLEWarning, match=r"with an agent absent"):
        r = fit_bradley_terry_ml(pw, reference="A", n_resamples=300, rng=3)
    without_c = np.isnan(r.distribution.sel(agent="C").values)
    assert without_c.sum() == r.n_undefined > 0
    np.testing.assert_allclose(r.distribution.sel(agent="B").values[without_c], 1000.0, atol=1e-6)
    assert (r.distribution.sel(agent="A").values == 1000.0).all()
    lo_b, hi_b = r.ci.sel(agent="B").values
    assert lo_b < hi_b and np.isnan(r.ci.sel(agent="C").values).all()
    assert np.isfinite(r.nu_ci.values).all()


def _davidson_loglik(ability, log_nu, ia, ib, y):
    d = ability[ia] - ability[ib]
    logits = np.stack([d / 2, np.full_like(d, log_nu), -d / 2], 1)
    return float((logits[np.arange(y.size), y] - np.logaddexp.reduce(logits, axis=1)).sum())


def test_all_ties_nu_is_infinite_and_the_abilities_unidentified():
    """Every battle a tie: the Davidson log-likelihood rises to 0 as nu grows, at any abilities.

    Checked with a Davidson likelihood written here; the old code reported nu = 7.6e10 with
    converged=True and abilities 1000 [1000, 1000].
    """
    df = _df([("A", "B", "tie"), ("B", "C", "tie"), ("C", "A", "tie")] * 3)
    ia, ib = df.left.map({"A": 0, "B": 1, "C": 2}).to_numpy(), df.right.map({"A": 0, "B": 1, "C": 2}).to_numpy()
    y = np.ones(len(df), dtype=int)
    for ability in (np.zeros(3), np.array([1.0, 0.0, -1.0])):
        ll = [_davidson_loglik(ability, np.log(nu), ia, ib, y) for nu in (1, 10, 1e3, 1e6)]
        assert np.all(np.diff(ll) > 0) and -1e-4 < ll[-1] < 0
    with pytest.warns(NoFiniteMLEWarning, match=r"every one of the 9 battles in `pairs` is a tie"):
        r = fit_bradley_terry_ml(read_battles(df), n_resamples=50, rng=0)
    assert float(r.nu) == np.inf and np.isnan(r.nu_ci.values).all()
    assert np.isnan(r.estimate.values).all() and np.isnan(r.ci.values).all()
    assert r.attrs["converged"] is False
    assert "no interval: every battle is a tie" in repr(r)
    with warnings.catch_warnings():  # ties as half wins: a finite MLE, the agents equal
        warnings.simplefilter("error", NoFiniteMLEWarning)
        h = fit_bradley_terry_ml(read_battles(df), ties="half", interval="wald")
    np.testing.assert_allclose(h.estimate.values, 1000.0, atol=1e-9)


@pytest.mark.filterwarnings("ignore:.*resamples had no finite Bradley-Terry MLE")
def test_tie_free_data_under_davidson_say_nu_is_at_its_boundary():
    """No tie in the battles: nu's MLE is 0 (P(tie) = nu / Z is increasing in nu), no interval."""
    from hierbench._base import BoundaryWarning

    pw = read_battles(_df([("A", "B", "left")] * 3 + [("A", "B", "right")] * 2 + [("B", "C", "left"), ("C", "B", "left")]))
    with pytest.warns(BoundaryWarning, match=r"no tie in 7 battles.*nu = 0.*ties='none'") as rec:
        r = fit_bradley_terry_ml(pw, n_resamples=50, rng=0)
    assert not any("nu here" in str(w.message) for w in rec)  # its NaN is the boundary's, not the resamples'
    assert float(r.nu) == 0.0 and np.isnan(r.nu_ci.values).all()
    assert "nu: 0.000 [nan, nan] (no interval: no tie in the data" in repr(r)
    with pytest.warns(BoundaryWarning):
        w = fit_bradley_terry_ml(pw, interval="wald")
    assert np.isnan(w.nu_ci.values).all() and "no tie in the data" in w.nu_ci.attrs["why_undefined"]


def test_wald_nu_interval_is_log_normal_from_the_observed_information():
    """Against scipy: BFGS on a Davidson likelihood written here, and a central-difference Hessian.

    The interval nu x exp(+- z se(log nu)), se from the inverse Hessian of the negative
    log-likelihood in (abilities B..E relative to A, log nu); the old code printed [nan, nan].
    """
    rng = np.random.default_rng(5)
    ability, nu = np.array([0.6, 0.2, 0.0, -0.3, -0.5]), 0.8
    ia = rng.integers(0, 5, 500)
    ib = (ia + rng.integers(1, 5, 500)) % 5
    d = ability[ia] - ability[ib]
    p = np.stack([np.exp(d / 2), np.full_like(d, nu), np.exp(-d / 2)], 1)
    y = np.array([rng.choice(3, p=q / q.sum()) for q in p])
    names = np.array(list("ABCDE"))
    df = _df(zip(names[ia], names[ib], np.array(["left", "tie", "right"])[y], strict=True))
    r = fit_bradley_terry_ml(read_battles(df, position=False), scale="logit", reference="A", interval="wald")

    def nll(x):
        return -_davidson_loglik(np.r_[0.0, x[:4]], x[4], ia, ib, y)

    opt = minimize(nll, np.zeros(5), method="BFGS", options={"gtol": 1e-10})
    h, k = 1e-4, opt.x.size
    hess = np.empty((k, k))
    for i in range(k):
        for j in range(k):
            e_i, e_j = np.eye(k)[i] * h, np.eye(k)[j] * h
            hess[i, j] = (nll(opt.x + e_i + e_j) - nll(opt.x + e_i - e_j) - nll(opt.x - e_i + e_j)
                          + nll(opt.x - e_i - e_j)) / (4 * h * h)  # fmt: skip
    se = np.sqrt(np.linalg.inv(hess)[4, 4])
    z = norm.ppf(0.975)
    want = np.exp(opt.x[4]) * np.exp([-z * se, z * se])
    np.testing.assert_allclose(r.nu_ci.values, want, rtol=1e-4)
    assert r.nu_ci.attrs["ci_kind"] == "log-normal"
    frame = r.to_frame()
    np.testing.assert_allclose(frame[["nu_lower", "nu_upper"]].to_numpy(), np.tile(want, (5, 1)), rtol=1e-4)
    assert (frame["nu_ci_kind"] == "log-normal").all()
    assert frame[["rank_lower", "rank_upper"]].to_numpy().tolist() == r.rank_ci.values.tolist()


def test_without_a_finite_mle_no_bootstrap_runs_and_the_home_interval_says_so():
    """A beat B in all four battles, two at home each way (hand count): the "beat or tied" graph has
    no edge B -> A, so no finite MLE (Ford 1957) and no bootstrap. The home interval is NaN for that
    reason, not because resamples decided it; nu's MLE is 0 on tie-free battles, as printed.
    """
    from hierbench._base import BoundaryWarning

    pw = read_battles(_df([("A", "B", "left"), ("B", "A", "right")] * 2))
    with pytest.warns(BoundaryWarning) as rec:  # NoFiniteMLEWarning is one too
        r = fit_bradley_terry_ml(pw, home=True, n_resamples=50, rng=0)
    assert any(w.category is NoFiniteMLEWarning and "no finite maximum" in str(w.message) for w in rec)
    assert any("holds no tie in 4 battles" in str(w.message) for w in rec)
    assert r.n_undefined == 0 and np.isnan(r.home_ci.values).all()
    assert r.home_ci.attrs["why_undefined"] == "no finite MLE"
    assert "home) advantage, logits: nan [nan, nan] (no interval: no finite MLE)" in repr(r)
    assert float(r.nu) == 0.0 and "nu: 0.000 [nan, nan] (no interval: no tie in the data" in repr(r)
