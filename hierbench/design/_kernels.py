"""Private numpy kernels for the budgeted designs (positional arrays, no xarray).

Everything here is data-independent where it can be: the radius of the
task-covering intervals depends on the data only through the disagreement
count ``X``, so it is tabulated once per ``(M, L, t, alpha)`` and looked up.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import gammaln
from scipy.special import ndtr
from scipy.special import ndtri
from scipy.special import xlogy

from .._numerics import wilson_bounds

__all__: list[str] = []


# --------------------------------------------------------------------------
# design U: exact hypergeometric inversion
# --------------------------------------------------------------------------
@lru_cache(maxsize=256)
def hypergeom_table(N: int, m: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Integer bounds ``(H_lo[s], H_hi[s])`` for ``s = 0..m`` positives in ``m`` of ``N`` slots.

    ``H_lo[s]`` is the smallest ``H`` with ``P_H(S >= s) > alpha/2`` and
    ``H_hi[s]`` the largest with ``P_H(S <= s) > alpha/2``, clipped to the
    feasible range ``s <= H <= N - m + s``. Both tail probabilities are
    monotone in ``H``, so the accepted set is this integer interval.
    """
    if m <= 0:
        s = np.zeros(1, dtype=np.int64)
        return s, np.full(1, N, dtype=np.int64)
    if m >= N:
        s = np.arange(N + 1, dtype=np.int64)
        return s, s.copy()
    H = np.arange(N + 1)[:, None]
    s = np.arange(m + 1)[None, :]

    def lchoose(n, k):
        ok = (k >= 0) & (k <= n)
        kk = np.where(ok, k, 0)
        return np.where(ok, gammaln(n + 1) - gammaln(kk + 1) - gammaln(n - kk + 1), -np.inf)

    logp = lchoose(H, s) + lchoose(N - H, m - s) - lchoose(np.float64(N), np.float64(m))
    pmf = np.exp(logp)  # (N+1, m+1)
    cdf = np.cumsum(pmf, axis=1)  # P_H(S <= s)
    sf = np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1]  # P_H(S >= s)
    half = alpha / 2.0
    # P_H(S <= s) is non-increasing in H: accepted H are 0..H_hi
    hi = (cdf > half).sum(axis=0) - 1
    # P_H(S >= s) is non-decreasing in H: accepted H are H_lo..N
    lo = N + 1 - (sf > half).sum(axis=0)
    s1 = s[0]
    lo = np.clip(lo, s1, N - m + s1)
    hi = np.clip(hi, s1, N - m + s1)
    return lo.astype(np.int64), hi.astype(np.int64)


# --------------------------------------------------------------------------
# design J: per-task laws
# --------------------------------------------------------------------------
def pair_law(L: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``p_h`` and the law ``(q0, q1, q2)`` of the positives among two distinct paths, ``h = 0..L``."""
    h = np.arange(L + 1, dtype=float)
    p = h / L
    if L < 2:
        return p, np.full_like(p, np.nan), np.full_like(p, np.nan), np.full_like(p, np.nan)
    den = L * (L - 1.0)
    q0 = (L - h) * (L - h - 1) / den
    q1 = 2 * h * (L - h) / den
    q2 = h * (h - 1) / den
    return p, q0, q1, q2


def _one_label_log_mgf(lam: np.ndarray, p: np.ndarray) -> np.ndarray:
    """``log E exp(lam (Y - p))`` for ``Y ~ Bernoulli(p)``, broadcast."""
    return np.log((1 - p) * np.exp(-lam * p) + p * np.exp(lam * (1 - p)))


def kappa_for_tilt(lam: np.ndarray, L: int, rho: float) -> np.ndarray:
    """Smallest ``kappa >= 0`` making ``g_h(lam, kappa) <= 0`` for every ``h``; ``inf`` if none.

    ``g_h = log a_h + rho (b_h / a_h - 1)`` with ``a_h = E exp(lam (Y - p_h))``
    (one label) and ``b_h = E exp(lam (A - p_h) - kappa D)`` (two distinct
    labels, ``A`` their mean, ``D`` their disagreement). ``b_h`` is affine in
    ``exp(-kappa)``, so the condition is solved in closed form per ``h``.
    """
    lam = np.asarray(lam, float)[..., None]
    p, q0, q1, q2 = pair_law(L)
    p, q0, q1, q2 = (v[1:-1] for v in (p, q0, q1, q2))  # impure h only; pure give g = 0
    if p.size == 0:
        return np.zeros(lam.shape[:-1])
    a = (1 - p) * np.exp(-lam * p) + p * np.exp(lam * (1 - p))
    c = q0 * np.exp(-lam * p) + q2 * np.exp(lam * (1 - p))
    mid = q1 * np.exp(lam * (0.5 - p))
    num = a * (rho - np.log(a)) / rho - c
    with np.errstate(divide="ignore", invalid="ignore"):
        kap = np.where(num > 0, -np.log(np.minimum(num / mid, 1.0)), np.inf)
    return np.maximum(kap.max(axis=-1), 0.0)


def hoeffding_gamma(lam: np.ndarray, L: int) -> np.ndarray:
    """``max_h log E exp(lam (Y - p_h))`` over ``h = 0..L`` (one label per task)."""
    lam = np.asarray(lam, float)[..., None]
    p = np.arange(L + 1) / L
    return _one_label_log_mgf(lam, p).max(axis=-1)


def pair_tilt_gamma(lam: np.ndarray, L: int, rho: float) -> np.ndarray:
    """``max_h g_h(lam, 0)``: the tilt's cost with penalty ``kappa = 0`` and ``t = rho M`` audited tasks.

    ``g_h = log a_h + rho (b_h / a_h - 1)`` as in ``kappa_for_tilt``, with
    ``b_h = E exp(lam (A - p_h))`` (no disagreement penalty). The mean ``A``
    of two distinct labels is the conditional expectation of either label
    given the pair, so by Jensen ``b_h <= a_h`` for every ``h`` and ``lam``:
    the result is at most ``hoeffding_gamma(lam, L)`` and non-increasing
    in ``rho``.
    """
    lam = np.asarray(lam, float)[..., None]
    p, q0, q1, q2 = pair_law(L)
    a = (1 - p) * np.exp(-lam * p) + p * np.exp(lam * (1 - p))
    b = q0 * np.exp(-lam * p) + q1 * np.exp(lam * (0.5 - p)) + q2 * np.exp(lam * (1 - p))
    return (np.log(a) + rho * (np.minimum(b / a, 1.0) - 1)).max(axis=-1)


def _flat_tilt(M: int, L: int, t: int, alpha: float) -> tuple[float, float]:
    """The one ``kappa = 0`` tilt ``(lam, gamma)`` minimising ``(log(2/alpha) + M gamma) / lam``.

    ``t = 0``: ``gamma = hoeffding_gamma`` (the lattice Hoeffding bound);
    ``t > 0``: ``gamma = pair_tilt_gamma`` (never larger). Its radius does
    not depend on ``X`` and never exceeds the ``t = 0`` radius.
    """
    lam = np.exp(np.linspace(np.log(1e-4), np.log(50.0), 4001))
    gam = hoeffding_gamma(lam, L) if t == 0 else pair_tilt_gamma(lam, L, t / M)
    j = int(np.argmin((np.log(2.0 / alpha) + M * gam) / lam))
    return float(lam[j]), float(gam[j])


def _audit_tilts(M: int, L: int, t: int, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``gamma = 0`` tilts ``(lam_j, kappa_j, log w_j)`` that pay off on nearly pure cohorts (``t > 0``)."""
    logterm = np.log(2.0 / alpha)
    rho = t / M
    # largest tilt with a finite kappa: kappa_for_tilt is finite on (0, lam_max)
    lo, hi = 0.0, 1.0
    while np.isfinite(kappa_for_tilt(np.array(hi), L, rho)) and hi < 1e3:
        lo, hi = hi, 2 * hi
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if np.isfinite(kappa_for_tilt(np.array(mid), L, rho)):
            lo = mid
        else:
            hi = mid
    lam_max = lo
    lam_floor = 0.5 * np.sqrt(logterm / M)
    n = max(1, int(np.ceil(2 * np.log2(max(lam_max, lam_floor) / lam_floor))) + 1)
    j = np.arange(n)
    lam = lam_max * 2.0 ** (-(j + 0.5) / 2)
    w = 1.0 / ((j / 2 + 1) * (j / 2 + 2))
    return lam, kappa_for_tilt(lam, L, rho), np.log(w / w.sum())


# weights tried for the kappa = 0 tilt (the rest goes to the audit tilts): 1, 0 and dyadic steps between
_FLAT_WEIGHTS = np.unique(np.r_[0.0, 1.0, 2.0 ** -np.arange(1, 11), 1 - 2.0 ** -np.arange(1, 11)])


@lru_cache(maxsize=1024)
def joint_family(M: int, L: int, t: int, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The data-independent tilt family ``(lam_j, kappa_j, gamma_j, log w_j)`` for the mixture interval.

    Two kinds of tilt. The *flat* tilt (``_flat_tilt``): ``kappa = 0``, one
    ``lam`` minimising ``(log(2/alpha) + M gamma) / lam``, with ``gamma`` the
    lattice Hoeffding bound ``max_h log a_h`` at ``t = 0`` and
    ``max_h g_h(lam, 0)`` for ``t > 0`` (``pair_tilt_gamma``). It stays
    valid when tasks are audited: the mean ``A`` of two distinct labels is
    the conditional expectation of one label given the pair, so
    ``b_h = E exp(lam (A - p_h)) <= a_h`` (Jensen), hence
    ``g_h(lam, 0) <= log a_h``: its radius is free of ``X`` and never above
    the ``t = 0`` radius. The *audit* tilts (``t > 0``, ``_audit_tilts``):
    ``lam_max`` is the largest tilt for which a finite penalty exists
    (``kappa_for_tilt``); the tilts are ``lam_max 2^{-(j + 1/2)/2}`` down to
    ``0.5 sqrt(log(2/alpha) / M)``, with ``kappa_j = kappa(lam_j)``,
    ``gamma_j = 0`` and weights proportional to ``1 / ((j/2 + 1)(j/2 + 2))``.
    They pay off on nearly pure cohorts (small ``X``) once ``t`` is large
    enough, and cost more than the flat tilt when ``t`` is small.

    The flat tilt gets weight ``w0`` and the audit tilts share ``1 - w0``;
    ``w0`` is chosen from ``_FLAT_WEIGHTS`` (0, 1 and dyadic steps) from
    ``(M, L, t, alpha)`` alone, never from labels, so the mixture is a fixed
    mixture of e-values: among the weights whose radius at ``X = 0`` is not
    above the flat tilt's alone, the one minimising the worst ratio, over
    ``X = 0..t``, of its radius to the smaller of the two pure radii
    (``w0 = 1`` and ``w0 = 0``). ``w0 = 1`` always qualifies, so the radius
    at ``X = 0`` is never above the ``t = 0`` radius; when the audit tilts
    cannot beat the flat one (a few audited tasks) ``w0 = 1`` and the
    radius is at most the ``t = 0`` radius for every ``X``.
    """
    lam0, gam0 = _flat_tilt(M, L, t, alpha)
    flat = (np.array([lam0]), np.zeros(1), np.array([gam0]), np.zeros(1))
    if t == 0:
        return flat
    lam, kap, logw = _audit_tilts(M, L, t, alpha)
    logterm = float(np.log(2.0 / alpha))
    X = np.arange(t + 1, dtype=float)
    lam_all, kap_all, gam_all = np.r_[lam0, lam], np.r_[0.0, kap], np.r_[gam0, np.zeros(lam.size)]
    radii = []
    for w0 in _FLAT_WEIGHTS:
        with np.errstate(divide="ignore"):
            lw = np.r_[np.log(w0), np.log1p(-w0) + logw]
        radii.append(_solve_mixture_radius(lam_all, kap_all, gam_all, lw, X, M, logterm))
    radii = np.array(radii)  # (weights, X); _FLAT_WEIGHTS[0] = 0, [-1] = 1
    best = np.minimum(radii[0], radii[-1])
    regret = (radii / best).max(axis=1)
    ok = radii[:, 0] <= radii[-1, 0] * (1 + 1e-12)
    k = int(np.argmin(np.where(ok, regret, np.inf)))
    w0 = _FLAT_WEIGHTS[k]
    keep = np.r_[w0 > 0, np.full(lam.size, w0 < 1)]
    with np.errstate(divide="ignore"):
        lw = np.r_[np.log(w0), np.log1p(-w0) + logw]
    return lam_all[keep], kap_all[keep], gam_all[keep], lw[keep]


def _solve_mixture_radius(lam, kap, gam, logw, X: np.ndarray, M: int, logterm: float) -> np.ndarray:
    """Smallest ``y >= 0`` with ``log sum_j w_j exp(lam_j y - kap_j X - M gam_j) >= logterm``."""
    X = np.asarray(X, float)[..., None]
    c = logw - kap * X - M * gam  # (..., J)
    with np.errstate(invalid="ignore"):
        c = np.where(np.isfinite(kap), c, -np.inf)

    def f(y):
        z = c + lam * y[..., None]
        zmax = z.max(axis=-1)
        return zmax + np.log(np.exp(z - zmax[..., None]).sum(axis=-1)) - logterm

    lo = np.zeros(X.shape[:-1])
    hi = np.full(X.shape[:-1], float(M))
    ok = f(hi) >= 0
    for _ in range(70):
        mid = 0.5 * (lo + hi)
        up = f(mid) >= 0
        hi = np.where(up, mid, hi)
        lo = np.where(up, lo, mid)
    return np.where(ok, hi, np.inf)


def kl_bernoulli(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Bernoulli Kullback-Leibler divergence ``kl(x, d)``."""
    x = np.asarray(x, float)
    d = np.clip(np.asarray(d, float), 1e-300, 1 - 1e-16)
    return xlogy(x, x / d) + xlogy(1 - x, (1 - x) / (1 - d))


def kl_upper(X: np.ndarray, t: int, logterm: float) -> np.ndarray:
    """``sup{d in [X/t, 1] : t kl(X/t, d) <= logterm}`` (1 when ``t = 0``)."""
    X = np.asarray(X, float)
    if t == 0:
        return np.ones_like(X)
    xh = X / t
    lo = xh.copy()
    hi = np.ones_like(xh)
    full = t * kl_bernoulli(xh, hi) <= logterm
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        inside = t * kl_bernoulli(xh, mid) <= logterm
        lo = np.where(inside, mid, lo)
        hi = np.where(inside, hi, mid)
    return np.where(full, 1.0, lo)


@lru_cache(maxsize=1024)
def joint_radius_table(M: int, L: int, t: int, alpha: float, method: str) -> np.ndarray:
    """Half-width (in label-sum units, ``M * (theta_hat - theta)``) for ``X = 0..t``.

    ``method="mixture"``: the mixture-of-tilts certificate; ``method="split"``:
    the union-bound Bernstein + KL construction (``alpha`` split in halves).
    """
    X = np.arange(t + 1, dtype=float)
    if method == "split":
        a_d = a_m = alpha / 2
        dbar_u = kl_upper(X, t, np.log(1.0 / a_d))
        v_u = np.minimum(M / 4.0, M * dbar_u * (L - 1) / (2.0 * L))
        lm = np.log(2.0 / a_m)
        return lm / 3 + np.sqrt((lm / 3) ** 2 + 2 * v_u * lm)
    lam, kap, gam, logw = joint_family(M, L, t, alpha)
    return _solve_mixture_radius(lam, kap, gam, logw, X, M, float(np.log(2.0 / alpha)))


# --------------------------------------------------------------------------
# misc
# --------------------------------------------------------------------------
def wilson(k: np.ndarray, n: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for ``k`` successes in ``n`` trials (the one kernel, in _numerics)."""
    return wilson_bounds(np.asarray(k, float), np.asarray(n, float), float(ndtri(0.5 + prob / 2)))


def normal_mixture_quantiles(
    weights: np.ndarray,
    means: np.ndarray,
    sds: np.ndarray,
    qs: np.ndarray,
    lo: np.ndarray | float,
    hi: np.ndarray | float,
    n_iter: int = 50,
) -> np.ndarray:
    """Quantiles of ``sum_g w_g N(m_g, s_g)`` along the last axis, by bisection in ``[lo, hi]``."""
    qs = np.asarray(qs, float)
    shape = (*weights.shape[:-1], qs.size)
    a = np.broadcast_to(np.asarray(lo, float)[..., None], shape).copy()
    b = np.broadcast_to(np.asarray(hi, float)[..., None], shape).copy()
    sd = np.maximum(sds, 1e-12)[..., None, :]
    w = weights[..., None, :]
    m = means[..., None, :]
    for _ in range(n_iter):
        mid = 0.5 * (a + b)
        cdf = (w * ndtr((mid[..., None] - m) / sd)).sum(-1)
        below = cdf < qs
        a = np.where(below, mid, a)
        b = np.where(below, b, mid)
    return 0.5 * (a + b)
