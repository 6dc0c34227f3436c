"""Design J: buying audit labels never widens the mixture interval at X = 0 (audit D 1).

The t = 0 tilt (kappa = 0) stays in the t > 0 family. Its validity for t > 0 rests on
b_h <= a_h (the mean of two distinct labels has an MGF at most one label's), checked here by
literal path enumeration; every tilt of the family (and of both of its parts) is checked to be an
e-value by exact enumeration of the design; coverage is enumerated where the flat tilt's weight is
strictly between 0 and 1.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import xarray as xr
from scipy.optimize import minimize_scalar

from hierbench.design import _kernels as K
from hierbench.design import budget_interval
from hierbench.design import plan_joint
from hierbench.design._plan import joint_bounds


def _task_factor(h: int, L: int, audited: bool, lam: float, kap: float, sign: float) -> float:
    """``E exp(sign lam (A - p) - kap D)`` for one task, by literal enumeration of its paths."""
    row = [1] * h + [0] * (L - h)
    p = h / L
    if not audited:
        return float(np.mean([np.exp(sign * lam * (y - p)) for y in row]))
    vals = [np.exp(sign * lam * ((row[a] + row[b]) / 2 - p) - kap * (row[a] != row[b]))
            for a in range(L) for b in range(L) if a != b]  # fmt: skip
    return float(np.mean(vals))


def _max_e_value(M: int, L: int, t: int, lam: float, kap: float, gam: float) -> float:
    """``max`` over cohorts and tails of ``E exp(sign lam M (theta_hat - theta) - kap X - M gam)``, exactly."""
    worst = 0.0
    subsets = list(itertools.combinations(range(M), t))
    for hs in itertools.combinations_with_replacement(range(L + 1), M):
        for sign in (1.0, -1.0):
            f1 = [_task_factor(h, L, False, lam, kap, sign) for h in hs]
            f2 = [_task_factor(h, L, True, lam, kap, sign) for h in hs]
            e = np.mean([np.prod([f2[i] if i in S else f1[i] for i in range(M)]) for S in subsets])
            worst = max(worst, e * np.exp(-M * gam))
    return worst


def test_two_label_mean_mgf_is_at_most_one_labels():
    """``b_h <= a_h`` for L = 2..8, every h, 60 tilts, both tails (literal paths), so the flat tilt's
    gamma for t > 0 is at most the lattice Hoeffding gamma.
    """
    for L in range(2, 9):
        for lam in np.geomspace(1e-3, 40, 60):
            for h in range(L + 1):
                for sign in (1.0, -1.0):
                    b = _task_factor(h, L, True, lam, 0.0, sign)
                    a = _task_factor(h, L, False, lam, 0.0, sign)
                    assert b <= a * (1 + 1e-12), (L, lam, h, sign)
            for rho in (0.01, 0.5, 1.0):
                assert K.pair_tilt_gamma(lam, L, rho) <= K.hoeffding_gamma(lam, L) + 1e-15


def test_every_tilt_is_an_e_value_by_enumeration():
    """Flat tilt, every audit tilt (whatever the weights) and the chosen family: E exp(...) <= 1 exactly
    for every cohort with M <= 3, L in {2, 3, 5}, every t >= 1, alpha in {0.05, 0.2}.
    """
    for M, L in itertools.product((2, 3), (2, 3, 5)):
        for t in range(1, M + 1):
            for alpha in (0.05, 0.2):
                lam0, gam0 = K._flat_tilt(M, L, t, alpha)
                lam, kap, _ = K._audit_tilts(M, L, t, alpha)
                tilts = [(lam0, 0.0, gam0), *[(a, k, 0.0) for a, k in zip(lam, kap, strict=True) if np.isfinite(k)]]
                for a, k, g in tilts[:4]:  # the flat tilt and the three largest audit tilts
                    assert _max_e_value(M, L, t, a, k, g) <= 1 + 1e-12, (M, L, t, alpha, a, k, g)


def _task_law(h: int, L: int, audited: bool) -> dict[int, float]:
    """Law of the number of positives among the task's bought labels, counted from its paths."""
    row = [1] * h + [0] * (L - h)
    draws = [row[a] + row[b] for a in range(L) for b in range(L) if a != b] if audited else row
    return {k: draws.count(k) / len(draws) for k in set(draws)}


def _coverage(M: int, L: int, t: int, alpha: float) -> float:
    """Worst exact coverage of the mixture interval over every cohort (own enumerator of S and paths)."""
    worst = 1.0
    subsets = list(itertools.combinations(range(M), t))
    for hs in itertools.combinations_with_replacement(range(L + 1), M):
        theta = sum(hs) / (M * L)
        rows = []  # (probability, estimate, X, P) per leaf
        for S in subsets:
            laws = [list(_task_law(h, L, i in S).items()) for i, h in enumerate(hs)]
            for combo in itertools.product(*laws):
                ks = [k for k, _ in combo]
                n = [2 if i in S else 1 for i in range(M)]
                rows.append((np.prod([q for _, q in combo]) / len(subsets), np.mean(np.divide(ks, n)),
                             sum(k == 1 for i, k in enumerate(ks) if i in S), sum(ks)))  # fmt: skip
        pr, est, X, P = (np.array(v) for v in zip(*rows, strict=True))
        np.testing.assert_allclose(pr.sum(), 1.0, atol=1e-12)
        lo, hi = joint_bounds(est, X.astype(int), P, M + t - P, M, L, t, 1 - alpha)
        worst = min(worst, float(pr @ ((lo - 1e-12 <= theta) & (theta <= hi + 1e-12))))
    return worst


@pytest.mark.parametrize(("M", "L", "t", "alpha"), [(4, 2, 3, 0.2), (4, 3, 3, 0.2), (4, 3, 4, 0.2), (4, 5, 4, 0.2), (4, 2, 4, 0.1)])
def test_coverage_by_enumeration_where_the_flat_weight_is_interior(M, L, t, alpha):
    """Cases where the flat tilt's weight is strictly between 0 and 1: coverage >= 1 - alpha, exactly."""
    _, kap, gam, logw = K.joint_family(M, L, t, alpha)
    assert gam[0] > 0 and kap[0] == 0 and 0 < np.exp(logw[0]) < 1 and kap.size > 1
    assert _coverage(M, L, t, alpha) >= 1 - alpha - 1e-12


@pytest.mark.parametrize(("M", "L"), [(50, 4), (880, 5)])
def test_radius_at_no_disagreement_never_grows_with_the_audit(M, L):
    """At X = 0 the half-width is non-increasing in t = 0..12; for t <= 3 it is at most the t = 0 one at
    every X. The t = 0 half-width is the lattice Hoeffding bound, minimised over the tilt by scipy.
    """
    logterm = np.log(2 / 0.05)
    p = np.arange(L + 1) / L

    def hoeffding(lam):
        return (logterm + M * np.log((1 - p) * np.exp(-lam * p) + p * np.exp(lam * (1 - p))).max()) / lam

    ref = minimize_scalar(hoeffding, bounds=(1e-3, 50), method="bounded", options={"xatol": 1e-10}).fun
    r = [K.joint_radius_table(M, L, t, 0.05, "mixture") for t in range(13)]
    np.testing.assert_allclose(r[0][0], ref, rtol=1e-3)  # the tilt grid is 4001 log-spaced points
    r0 = np.array([x[0] for x in r])
    assert (np.diff(r0) <= 1e-12 * r0[0]).all(), r0 / M
    assert r0[12] < 0.9 * r0[0]  # and the audit does pay off by t = 12
    for t in range(1, 4):
        assert (r[t] <= r0[0] * (1 + 1e-12)).all(), (t, r[t] / M)


def test_one_audit_label_on_an_all_pass_cohort_does_not_widen():
    """Audit D 1's public-API case: 10 x 4 all-pass cohort, budget 10 (t = 0) then 11 (t = 1)."""
    ones = xr.DataArray(np.ones((10, 4)), dims=("task", "run"))
    w = []
    for B in (10, 11, 12, 13):
        ci = budget_interval(plan_joint(10, 4, B, rng=0), ones).interval.values
        assert ci[1] == 1.0
        w.append(ci[1] - ci[0])
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(w)), w
    assert w[0] == pytest.approx(1 - 0.5916, abs=1e-4)  # the audit's t = 0 interval [0.5916, 1]
