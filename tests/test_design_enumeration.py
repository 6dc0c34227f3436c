"""Exact enumeration of the budgeted designs on every small cohort.

Every cohort with M <= 4 tasks and 3 <= L <= 5 runs (all h vectors up to
task permutation), every audit size t, alpha in {0.05, 0.1, 0.2}: every audit
subset S and every path choice is enumerated with its exact probability
(counted from the paths themselves, not from the package's formulas), the
public ``budget_interval`` is evaluated on each leaf, and coverage and
unbiasedness are summed exactly. Design U is checked against
``scipy.stats.hypergeom`` over every (N, H, m).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import xarray as xr
from scipy.stats import hypergeom

from hierbench.design import BudgetPlan
from hierbench.design import budget_interval
from hierbench.design import plan_uniform

ALPHAS = (0.05, 0.1, 0.2)
TOL = 1e-12


def _task_outcomes(h: int, L: int, audited: bool) -> dict[tuple[int, ...], float]:
    """Law of the bought labels of one task, by literal enumeration of its paths.

    Returns {labels in slot order: probability}; the task's planned labels are
    h ones then L - h zeros (a within-task relabelling changes nothing, since
    paths are drawn uniformly).
    """
    row = [1] * h + [0] * (L - h)
    out: dict[tuple[int, ...], float] = {}
    if audited:
        pairs = [(a, b) for a in range(L) for b in range(L) if a != b]
        for a, b in pairs:
            key = (row[a], row[b])
            out[key] = out.get(key, 0.0) + 1.0 / len(pairs)
    else:
        for a in range(L):
            out[(row[a],)] = out.get((row[a],), 0.0) + 1.0 / L
    return out


def _fixed_joint_plan(M: int, L: int, t: int) -> BudgetPlan:
    """The plan with S = the first t tasks and bought slots 0 (and 1 if audited).

    Random S and random paths on a fixed cohort are equivalent to this fixed
    plan on the correspondingly permuted cohort, which is what the leaves
    below build.
    """
    slots = np.zeros((M, L), bool)
    slots[:, 0] = True
    slots[:t, 1] = True
    aud = np.arange(M) < t
    c = {"task": np.arange(M), "run": np.arange(L)}
    return BudgetPlan(
        "joint",
        M + t,
        xr.DataArray(slots, dims=("task", "run"), coords=c),
        xr.DataArray(aud, dims="task", coords={"task": c["task"]}),
        xr.DataArray(np.zeros(M, int), dims="task", coords={"task": c["task"]}),
    )


def _joint_leaves(hs: tuple[int, ...], L: int, t: int):
    """All leaves (label matrix under the fixed plan, probability) for one cohort and t."""
    M = len(hs)
    subsets = list(itertools.combinations(range(M), t))
    mats, probs = [], []
    for S in subsets:
        order = list(S) + [i for i in range(M) if i not in S]  # plan position -> cohort task
        laws = [_task_outcomes(hs[i], L, pos < t) for pos, i in enumerate(order)]
        for combo in itertools.product(*[list(law.items()) for law in laws]):
            mat = np.zeros((M, L))
            pr = 1.0 / len(subsets)
            for pos, (lab, p) in enumerate(combo):
                h = hs[order[pos]]
                rest = h - sum(lab)
                mat[pos, : len(lab)] = lab
                mat[pos, len(lab) : len(lab) + rest] = 1  # the unbought slots hold the remaining positives
                pr *= p
            mats.append(mat)
            probs.append(pr)
    return np.array(mats), np.array(probs)


@pytest.mark.slow
@pytest.mark.parametrize("L", [3, 4, 5])
@pytest.mark.parametrize("M", [1, 2, 3, 4])
@pytest.mark.parametrize("method", ["mixture", "split"])
def test_joint_exact_coverage_and_unbiasedness(L, M, method):
    _check_joint(L, M, method, ALPHAS)


@pytest.mark.slow
@pytest.mark.parametrize(("L", "M"), [(2, 4), (6, 3), (6, 4)])
def test_joint_exact_coverage_beyond_the_spec_grid(L, M):
    """Also L = 2 (audited task fully observed) and L = 6, at alpha = 0.01 too."""
    _check_joint(L, M, "mixture", (0.01, *ALPHAS))


def _check_joint(L, M, method, alphas):
    worst = {}
    for t in range(M + 1):
        plan = _fixed_joint_plan(M, L, t)
        leaves, probs, owner, thetas = [], [], [], []
        for c, hs in enumerate(itertools.combinations_with_replacement(range(L + 1), M)):
            mats, pr = _joint_leaves(hs, L, t)
            np.testing.assert_allclose(pr.sum(), 1.0, atol=1e-12)
            leaves.append(mats)
            probs.append(pr)
            owner.append(np.full(pr.size, c))
            thetas.append(sum(hs) / (M * L))
        mats = np.concatenate(leaves)
        pr = np.concatenate(probs)
        own = np.concatenate(owner)
        theta = np.array(thetas)
        # every leaf matrix is a permutation of its cohort's labels
        np.testing.assert_array_equal(mats.sum(axis=(1, 2)) / (M * L), theta[own])
        labels = xr.DataArray(mats, dims=("leaf", "task", "run"))
        for alpha in alphas:
            res = budget_interval(plan, labels, prob=1 - alpha, method=method)
            est = res.estimate.values
            lo, hi = res.interval.sel(ci_bound="lower").values, res.interval.sel(ci_bound="upper").values
            covered = (lo <= theta[own] + TOL) & (theta[own] - TOL <= hi)
            cov = np.bincount(own, weights=pr * covered)
            mean_est = np.bincount(own, weights=pr * est)
            np.testing.assert_allclose(mean_est, theta, atol=1e-12, rtol=0)
            assert (res.n_labels.values == M + t).all()
            assert cov.min() >= 1 - alpha - 1e-12, (t, alpha, cov.min())
            worst[(t, alpha)] = cov.min()
    assert len(worst) == len(alphas) * (M + 1)


@pytest.mark.parametrize("L", [3, 4, 5])
@pytest.mark.parametrize("M", [1, 2, 3, 4])
def test_uniform_exact_coverage_and_unbiasedness(L, M):
    N = M * L
    for m in range(1, N + 1):
        slots = np.zeros(N, bool)
        slots[:m] = True  # a fixed slot set; the cohort is permuted instead (exchangeability)
        c = {"task": np.arange(M), "run": np.arange(L)}
        plan = BudgetPlan(
            "uniform",
            m,
            xr.DataArray(slots.reshape(M, L), dims=("task", "run"), coords=c),
            xr.DataArray(np.zeros(M, bool), dims="task", coords={"task": c["task"]}),
            xr.DataArray(np.full(M, -1), dims="task", coords={"task": c["task"]}),
        )
        # leaves: cohort total H, s positives among the bought slots
        Hs, ss, mats = [], [], []
        for H in range(N + 1):
            for s in range(max(0, H - (N - m)), min(H, m) + 1):
                flat = np.zeros(N)
                flat[:s] = 1
                flat[m : m + H - s] = 1
                Hs.append(H)
                ss.append(s)
                mats.append(flat.reshape(M, L))
        Hs, ss = np.array(Hs), np.array(ss)
        pr = hypergeom.pmf(ss, N, Hs, m)
        np.testing.assert_allclose(np.bincount(Hs, weights=pr), 1.0, atol=1e-12)
        labels = xr.DataArray(np.array(mats), dims=("leaf", "task", "run"))
        for alpha in ALPHAS:
            res = budget_interval(plan, labels, prob=1 - alpha)
            lo = res.interval.sel(ci_bound="lower").values
            hi = res.interval.sel(ci_bound="upper").values
            covered = (lo <= Hs / N + TOL) & (Hs / N - TOL <= hi)
            cov = np.bincount(Hs, weights=pr * covered)
            assert cov.min() >= 1 - alpha - 1e-12, (m, alpha, cov.min())
            np.testing.assert_allclose(np.bincount(Hs, weights=pr * res.estimate.values), np.arange(N + 1) / N, atol=1e-12)
            if m == N:  # census: the interval is the point
                np.testing.assert_allclose(lo, hi)


@pytest.mark.slow
@pytest.mark.parametrize("L", [3, 4, 5])
@pytest.mark.parametrize("M", [1, 2, 3, 4])
def test_joint_tilts_are_e_values(L, M):
    """Each tilt of the mixture certificate: E exp(lam M (theta_hat - theta) - kappa X - M gamma) <= 1, exactly."""
    from hierbench.design import _kernels as K

    for t in range(M + 1):
        lam, kap, gam, _ = K.joint_family(M, L, t, 0.05)
        for hs in itertools.combinations_with_replacement(range(L + 1), M):
            mats, pr = _joint_leaves(hs, L, t)
            theta = sum(hs) / (M * L)
            n = np.where(np.arange(M) < t, 2, 1)
            k = mats[:, :, 0] + np.where(np.arange(M) < t, mats[:, :, 1], 0)
            dev = M * ((k / n).mean(axis=1) - theta)
            X = (k[:, :t] == 1).sum(axis=1)
            for sign in (1.0, -1.0):  # both tails use the same (kappa, gamma)
                e = np.exp(sign * lam[None, :] * dev[:, None] - kap[None, :] * X[:, None] - M * gam[None, :])
                assert (pr @ e).max() <= 1 + 1e-12, (hs, t, sign)


def test_joint_interval_is_named_conservative_as_its_coverage_shows():
    """Audit E 5: design J's certificate covers well above its level, so its kind is not "exact".

    A seeded simulation of the design on a 50 x 4 cohort (random audit subset and paths are a
    fixed plan on a randomly permuted cohort, as above): 4,000 randomisations, coverage counted
    by hand against the cohort mean. Monte Carlo SE at a coverage of 0.9 is 0.0047; J covers
    above 0.9 + 4 SE (0.9985 with this seed), the slack of a bound, not of discreteness.
    """
    M, L, t, R = 50, 4, 25, 4000
    g = np.random.default_rng(59)
    h = g.integers(0, L + 1, M)
    theta = h.sum() / (M * L)
    cohort = (np.arange(L)[None, :] < h[:, None]).astype(float)
    perm_t = np.argsort(g.random((R, M)), axis=1)
    perm_r = np.argsort(g.random((R, M, L)), axis=2)
    mats = cohort[perm_t][np.arange(R)[:, None, None], np.arange(M)[None, :, None], perm_r]
    res = budget_interval(_fixed_joint_plan(M, L, t), xr.DataArray(mats, dims=("rep", "task", "run")), prob=0.9)
    lo, hi = res.interval.values[..., 0], res.interval.values[..., 1]
    coverage = float(((lo <= theta + TOL) & (theta - TOL <= hi)).mean())
    assert coverage > 0.9 + 4 * np.sqrt(0.9 * 0.1 / R), coverage
    assert res.ci.attrs["ci_kind"] == "conservative"
    assert "at least the level" in res.ci.attrs["ci_detail"] and "not exact" in res.ci.attrs["ci_detail"]
    assert repr(res).startswith("BudgetIntervalResult: estimate with 90% conservative interval")
    # design U keeps the exact hypergeometric inversion's name
    u = budget_interval(plan_uniform(M, L, M + t, rng=0), xr.DataArray(cohort, dims=("task", "run")), prob=0.9)
    assert u.ci.attrs["ci_kind"] == "exact"
