"""The MAP kernel of the sampler-free IRT path: counts, the arrow-structured Newton fit, run correlation.

The 2PL (or 1PL) negative log posterior with its analytic gradient and its
Hessian in arrow form (a dense block for the abilities, a small block per
task), damped Newton steps solved through that structure, the Laplace
covariance, the Rao-Scott deflation for correlated runs and the
empirical-Bayes M-step. :mod:`._ml` builds calibration and scoring on these.

This module imports numpy and scipy only (and the shared ``counts`` rule).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit
from scipy.special import log_expit

from ..._base import HierbenchError
from ..._base import counts

# --------------------------------------------------------------------------- data


def _agent_task_counts(data: Any, name: str = "data") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``n`` and ``y`` as (agent, task) int arrays, with the labels; unobserved cells have n = 0."""
    c = counts(data, name=name, purpose="an IRT model")
    for d in ("agent", "task"):
        if d not in c["n_runs"].dims:
            raise HierbenchError(
                f"`{name}` must have dims 'agent' and 'task'; got {c['n_runs'].dims}"
            )
    n = c["n_runs"].transpose("agent", "task").fillna(0).values.astype(np.int64)
    y = np.round(c["n_success"].transpose("agent", "task").fillna(0).values).astype(np.int64)
    agents = np.asarray(c["agent"].values).astype(str) if "agent" in c.coords else np.arange(n.shape[0]).astype(str)
    tasks = np.asarray(c["task"].values).astype(str) if "task" in c.coords else np.arange(n.shape[1]).astype(str)
    return n, y, agents, tasks


# --------------------------------------------------------------------------- MAP kernel


def _split(x: np.ndarray, M: int, T: int, two_pl: bool):
    theta = x[:M]
    d = x[M : M + T]
    la = x[M + T :] if two_pl else x[M + T : M + T + 1]
    return theta, d, la


def _neg_log_post(x, n, y, M, T, two_pl, hyper):
    theta, d, la = _split(x, M, T, two_pl)
    a = np.exp(la)
    eta = theta[:, None] * a[None, :] + d[None, :]
    ll = y * eta + n * log_expit(-eta)  # y eta - n log(1 + e^eta)
    r = y - n * expit(eta)
    mu_d, sd_d, mu_la, sd_la = hyper
    f = -ll.sum() + 0.5 * (theta @ theta) + 0.5 * np.sum((d - mu_d) ** 2) / sd_d**2
    f += 0.5 * np.sum((la - mu_la) ** 2) / sd_la**2
    g_theta = -(r * a[None, :]).sum(1) + theta
    g_d = -r.sum(0) + (d - mu_d) / sd_d**2
    ra = r * theta[:, None] * a[None, :]
    g_la = (-ra.sum(0) if two_pl else -np.array([ra.sum()])) + (la - mu_la) / sd_la**2
    return f, np.concatenate([g_theta, g_d, g_la])


def _hessian_blocks(x, n, y, M, T, two_pl, hyper, observed=True):
    """The negative log posterior's Hessian in arrow form.

    Returns ``(Hgg, Hgi, Hii)``: the dense block of the global parameters
    (abilities, plus the shared log-discrimination for the 1PL), their
    cross terms with each task's parameters (G, T, K) and the per-task blocks
    (T, K, K), K = 2 for the 2PL (intercept, log a) and 1 for the 1PL.
    """
    theta, d, la = _split(x, M, T, two_pl)
    a = np.exp(la)
    aa = np.broadcast_to(a, (T,))
    eta = theta[:, None] * aa[None, :] + d[None, :]
    p = expit(eta)
    w = n * p * (1 - p)
    r = (y - n * p) if observed else np.zeros_like(w)
    _, sd_d, _, sd_la = hyper
    at = theta[:, None] * aa[None, :]  # d eta / d log a
    if two_pl:
        G, K = M, 2
        Hgg = np.diag((w * aa**2).sum(1) + 1.0)
        Hgi = np.empty((G, T, K))
        Hgi[:, :, 0] = w * aa
        Hgi[:, :, 1] = w * aa * at - r * aa
        Hii = np.empty((T, K, K))
        Hii[:, 0, 0] = w.sum(0) + 1.0 / sd_d**2
        Hii[:, 0, 1] = Hii[:, 1, 0] = (w * at).sum(0)
        Hii[:, 1, 1] = (w * at**2).sum(0) - (r * at).sum(0) + 1.0 / sd_la**2
    else:
        G, K = M + 1, 1
        Hgg = np.zeros((G, G))
        Hgg[np.arange(M), np.arange(M)] = (w * aa**2).sum(1) + 1.0
        cross = (w * aa * at - r * aa).sum(1)
        Hgg[:M, M] = Hgg[M, :M] = cross
        Hgg[M, M] = (w * at**2).sum() - (r * at).sum() + 1.0 / sd_la**2
        Hgi = np.empty((G, T, K))
        Hgi[:M, :, 0] = w * aa
        Hgi[M, :, 0] = (w * at).sum(0)
        Hii = np.empty((T, K, K))
        Hii[:, 0, 0] = w.sum(0) + 1.0 / sd_d**2
    return Hgg, Hgi, Hii


def _laplace(Hgg, Hgi, Hii):
    """Schur complement of the arrow Hessian: cov of the globals, and the per-task conditionals."""
    Hii_inv = np.linalg.inv(Hii)
    B = np.einsum("tkl,gtl->tkg", Hii_inv, Hgi)  # Hii^-1 Hig, (T, K, G)
    S = Hgg - np.einsum("gtk,tkh->gh", Hgi, B)
    S = 0.5 * (S + S.T)
    L = np.linalg.cholesky(S)  # raises LinAlgError when not positive definite
    cov_g = np.linalg.inv(S)
    cov_g = 0.5 * (cov_g + cov_g.T)
    # marginal variance of each task parameter: Hii^-1 + B cov_g B^T (diagonal)
    var_i = np.einsum("tkk->tk", Hii_inv) + np.einsum("tkg,gh,tkh->tk", B, cov_g, B)
    return {"Hii_inv": Hii_inv, "B": B, "cov_g": cov_g, "chol_S": L, "var_i": var_i}


def _to_arrow(v, M, T, two_pl):
    """Split a parameter-shaped vector into its global part and its (task, K) part."""
    th, d, la = _split(v, M, T, two_pl)
    if two_pl:
        return th, np.stack([d, la], axis=1)
    return np.concatenate([th, la]), d[:, None]


def _from_arrow(g, it, M, T, two_pl):
    if two_pl:
        return np.concatenate([g, it[:, 0], it[:, 1]])
    return np.concatenate([g[:M], it[:, 0], g[M:]])


def _arrow_solve(Hgg, Hgi, Hii, rg, ri):
    """Solve the arrow system H [u; v] = [rg; ri] (dense global block, K x K task blocks)."""
    Hii_inv = np.linalg.inv(Hii)
    B = np.einsum("tkl,gtl->tkg", Hii_inv, Hgi)
    S = Hgg - np.einsum("gtk,tkh->gh", Hgi, B)
    L = np.linalg.cholesky(0.5 * (S + S.T))
    rhs = rg - np.einsum("tkg,tk->g", B, ri)
    u = np.linalg.solve(L.T, np.linalg.solve(L, rhs))
    v = np.einsum("tkl,tl->tk", Hii_inv, ri) - np.einsum("tkg,g->tk", B, u)
    return u, v


class _Opt:
    def __init__(self, x, success, message, nit):
        self.x, self.success, self.message, self.nit = x, success, message, nit


def _map_fit(n, y, two_pl, hyper, x0, maxiter=200, tol=1e-8):
    """Posterior mode by damped Newton steps solved through the arrow structure.

    Each step solves with the observed Hessian when it is positive definite,
    else with the expected information (Fisher scoring, always positive
    definite here); a backtracking line search keeps the objective falling.
    Converged when the largest gradient entry is below ``tol``.
    """
    M, T = n.shape
    x = np.asarray(x0, dtype=float).copy()
    f, g = _neg_log_post(x, n, y, M, T, two_pl, hyper)
    for it in range(1, maxiter + 1):
        if np.max(np.abs(g)) < tol:
            return _Opt(x, True, "gradient below tolerance", it - 1)
        rg, ri = _to_arrow(g, M, T, two_pl)
        try:
            u, v = _arrow_solve(*_hessian_blocks(x, n, y, M, T, two_pl, hyper), rg, ri)
        except np.linalg.LinAlgError:
            u, v = _arrow_solve(*_hessian_blocks(x, n, y, M, T, two_pl, hyper, observed=False), rg, ri)
        step = _from_arrow(u, v, M, T, two_pl)
        if not g @ step > 0:  # not a descent direction: fall back to Fisher scoring
            u, v = _arrow_solve(*_hessian_blocks(x, n, y, M, T, two_pl, hyper, observed=False), rg, ri)
            step = _from_arrow(u, v, M, T, two_pl)
        t = 1.0
        big = np.max(np.abs(step))
        if big > 5.0:
            t = 5.0 / big
        # Near the mode the decrease a step promises, g @ step / 2, falls below the rounding
        # error of f (a sum of thousands of terms): the Armijo test then fails or passes by
        # chance, and the search shrinks a good Newton step to nothing. There the objective
        # cannot judge the step, so the gradient does: the step is taken when it lowers the
        # largest gradient entry.
        flat = 0.5 * (g @ step) <= 1e3 * np.finfo(float).eps * max(abs(f), 1.0)
        while True:
            xn = x - t * step
            fn, gn = _neg_log_post(xn, n, y, M, T, two_pl, hyper)
            if np.isfinite(fn) and fn <= f - 1e-4 * t * (g @ step):
                break
            if flat and np.isfinite(fn) and np.max(np.abs(gn)) < np.max(np.abs(g)):
                break
            t *= 0.5
            if t < 1e-10:
                return _Opt(x, False, "line search failed", it)
        x, f, g = xn, fn, gn
    return _Opt(x, bool(np.max(np.abs(g)) < tol), f"stopped after {maxiter} Newton steps", maxiter)


def _deflate(n: np.ndarray, y: np.ndarray, icc: float) -> tuple[np.ndarray, np.ndarray]:
    """Deflate counts by their design effect (Rao-Scott).

    A cell's ``n`` runs with within-cell correlation ``icc`` weigh as
    ``n / (1 + (n - 1) icc)`` independent ones, successes in proportion.
    """
    if icc <= 0:
        return n, y
    f = 1.0 / (1.0 + (np.maximum(n, 1) - 1.0) * icc)
    return n * f, y * f


def _run_icc_moment(n: np.ndarray, y: np.ndarray, p: np.ndarray, n_params: int) -> float:
    """Moment estimate of the correlation of a cell's runs given the model's probability.

    For runs exchangeable within a cell, ``Var(y) = n p (1 - p) (1 + (n - 1) icc)``
    (the beta-binomial's form). The fitted probabilities follow the cells a little
    (``n_params`` parameters for the cells run), which shrinks the residuals
    by about ``1 - n_params / cells``, as in a GLM's dispersion estimate; so,
    with ``v = n p (1 - p)``, ``icc = (sum (y - n p)^2 / (1 - n_params / cells)
    - sum v) / sum v (n - 1)``, clipped to [0, 0.95]. It holds what the item curves leave out for an
    agent on a task (the crossed model's agent x task term), which a binomial
    likelihood would count as fresh evidence with every run.
    """
    run = n > 0
    cells = int(run.sum())
    if cells <= n_params:
        return 0.0
    v = (n * p * (1 - p))[run]
    den = float((v * (n[run] - 1)).sum())
    if den <= 0:
        return 0.0
    ss = float(((y - n * p) ** 2)[run].sum()) / (1 - n_params / cells)
    return float(np.clip((ss - v.sum()) / den, 0.0, 0.95))


def _start_hyper(two_pl: bool) -> tuple[float, float, float, float]:
    """Weak starting hyperparameters (mu_d, sd_d, mu_la, sd_la): where empirical Bayes starts, and the pilot fits' prior."""
    return (0.0, 2.0, 0.0, 0.5 if two_pl else 1.0)


def _start(n: np.ndarray, y: np.ndarray, two_pl: bool) -> np.ndarray:
    """Starting point: abilities from each agent's logit success rate (standardised), intercepts from each task's."""
    T = n.shape[1]
    rate_a = (y.sum(1) + 0.5) / (n.sum(1) + 1.0)
    rate_t = (y.sum(0) + 0.5) / (n.sum(0) + 1.0)
    th0 = np.log(rate_a / (1 - rate_a))
    th0 = (th0 - th0.mean()) / (th0.std() or 1.0)
    return np.concatenate([th0, np.log(rate_t / (1 - rate_t)), np.zeros(T if two_pl else 1)])


def _estimate_run_icc(n: np.ndarray, y: np.ndarray, two_pl: bool) -> float:
    """The runs' within-cell correlation: a moment estimate at a pilot MAP fit, refitted once on deflated counts.

    The pilot fits use fixed weak hyperparameters (no empirical Bayes): only
    the cells' probabilities are needed, and a fit on the undeflated counts
    follows the cells too closely, so the estimate is refined once.
    """
    M, T = n.shape
    h = _start_hyper(two_pl)
    icc = 0.0
    x = _start(n, y, two_pl)
    for _ in range(2):
        nn, yy = _deflate(n, y, icc)
        x = _map_fit(nn, yy, two_pl, h, x).x
        theta, d, la = _split(x, M, T, two_pl)
        p = expit(theta[:, None] * np.exp(la)[None, :] + d[None, :])
        icc = _run_icc_moment(n, y, p, M + (2 * T if two_pl else T + 1))
    return icc


def _m_step(x: np.ndarray, var: np.ndarray, sd_now: float, mu_prior: dict, sd_prior: dict) -> tuple[float, float]:
    """One Laplace-EM update of a group's (mean, log sd) at the mode of their hyperpriors (MAP-II).

    ``x`` are the group members' modes and ``var`` their Laplace variances.
    The mean's normal hyperprior and the sd's half-normal one are
    :data:`IRT_HYPERPRIORS`, the PyMC builders' own. Plain empirical Bayes
    (ML-II) has no such term, and with few agents it is not identified:
    with 2 agents the log-discriminations' mean ran to -698 and the
    intercepts' sd to its floor.

    The mean is the precision-weighted compromise between the members and
    its prior, at the current sd. The sd maximises
    ``-T log sd - S / (2 sd^2) - sd^2 / (2 s^2)`` with ``S = sum (x - mean)^2 + var``
    (``S / T`` when ``T`` is large).
    """
    T = x.size
    m0, s0 = mu_prior["mu"], mu_prior["sigma"]
    mu = (x.sum() / sd_now**2 + m0 / s0**2) / (T / sd_now**2 + 1 / s0**2)
    S = float(((x - mu) ** 2 + var).sum())
    h2 = sd_prior["sigma"] ** 2
    sd2 = 0.5 * h2 * (np.sqrt(T**2 + 4 * S / h2) - T)
    return float(mu), 0.5 * float(np.log(max(sd2, 1e-12)))


def _standardise(theta: np.ndarray, d: np.ndarray, a: np.ndarray):
    """Rescale so the abilities have mean 0 and sd 1 (last axis); the predictions are unchanged."""
    m = theta.mean(-1, keepdims=True)
    s = theta.std(-1, keepdims=True)
    s = np.where(s > 0, s, 1.0)
    return (theta - m) / s, d + a * m, a * s

