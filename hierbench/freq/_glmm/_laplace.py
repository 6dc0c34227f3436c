"""The Laplace approximation of a GLMM with crossed scalar random effects (``glmer``'s ``nAGQ = 1``).

For design rows ``r`` with fixed-effect rows ``x_r``, random terms ``k`` with
levels ``j_k(r)`` and (for a slope term) values ``z_rk``,

    eta_r = x_r beta + sum_k z_rk sigma_k v_{k, j_k(r)},   v ~ N(0, I),

the marginal log-likelihood ``log int p(y | eta) N(v; 0, I) dv`` is
approximated at the conditional mode ``v_hat`` of the integrand (found by
damped Newton steps, warm-started from the previous call) as

    sum_r l_r(eta_hat_r) - |v_hat|^2 / 2 - log det(I + Lam Z' W Z Lam) / 2,

with ``W = -d2 l / d eta2`` at the mode (the observed information: for the
logit-binomial it is also the expected one, for the cumulative logit it is
what ``clmm``'s Laplace uses). This is the "spherical" form of Bates et al.
(2015, lme4), and for one grouping factor it is the usual one-dimensional
Laplace per level. The random-effects covariance is dense (``q x q``, ``q``
the total number of levels): fine for thousands of levels.

The outer parameters are ``(beta, log sigma_k, family extras)``; the
optimiser is the crossed fit's (:mod:`._optim`: L-BFGS-B on the analytic
gradient, then Newton steps on the gradient's differences).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy import linalg

__all__ = ["LOG_SD_BOUNDS", "Laplace", "chol_inverse", "fd_gradient", "gradient_hessian"]

#: bounds of each log sd (as the crossed fit's)
LOG_SD_BOUNDS = (math.log(1e-4), math.log(50.0))


class Laplace:
    """The Laplace log-likelihood of one data set as a function of the outer parameters."""

    def __init__(self, X: np.ndarray, Z: sp.csr_matrix, term: np.ndarray, family) -> None:
        self.X = np.ascontiguousarray(X, dtype=float)
        self.Z = sp.csr_matrix(Z, dtype=float)
        self.term = np.asarray(term, dtype=np.intp)  # (q,) the term of each level
        self.K = int(self.term.max()) + 1 if self.term.size else 0
        self.family = family
        self.p = self.X.shape[1]
        self.q = self.Z.shape[1]
        self.P = self.p + self.K + family.n_extra
        self.v = np.zeros(self.q)
        self.n_eval = 0

    @property
    def warm(self) -> np.ndarray:
        """The warm start carried between evaluations (the conditional mode)."""
        return self.v

    #: the Hessian (differences of the analytic gradient) is good enough for Newton steps
    newton_ok = True

    def value_grad_hess(self, x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Value, gradient and Hessian (central differences of the gradient)."""
        v, g = self.value_grad(x)
        return v, g, gradient_hessian(self, x)

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(beta, sigma per term, family extras)`` from the outer vector."""
        p, K = self.p, self.K
        return x[:p], np.exp(x[p : p + K]), x[p + K :]

    def mode(self, x: np.ndarray, v0: np.ndarray | None = None) -> dict:
        """The conditional mode ``v_hat`` at ``x`` and the pieces of the approximation there."""
        beta, sd, extra = self.split(x)
        lam = sd[self.term] if self.q else np.zeros(0)
        ZL = self.Z @ sp.diags(lam) if self.q else self.Z
        off = self.X @ beta
        v = (self.v if v0 is None else v0).copy()
        eta = off + ZL @ v
        ll, d1, d2 = self.family.loglik(eta, extra)
        obj = ll - 0.5 * v @ v
        for _ in range(200):
            g = ZL.T @ d1 - v
            H = _penalised_information(ZL, -d2, self.q)
            try:
                cf = linalg.cho_factor(H, lower=True, check_finite=False)
            except linalg.LinAlgError:
                break
            step = linalg.cho_solve(cf, g, check_finite=False)
            dec = float(g @ step)
            if not np.isfinite(dec) or dec < 1e-20:
                break
            t = 1.0
            while t > 1e-8:
                vn = v + t * step
                etan = off + ZL @ vn
                lln, d1n, d2n = self.family.loglik(etan, extra)
                objn = lln - 0.5 * vn @ vn
                if np.isfinite(objn) and objn >= obj - 1e-12:
                    v, eta, ll, d1, d2, obj = vn, etan, lln, d1n, d2n, objn
                    break
                t /= 2
            else:
                break
        H = _penalised_information(ZL, -d2, self.q)
        try:
            cf = linalg.cho_factor(H, lower=True, check_finite=False)
            logdet = 2.0 * float(np.log(np.diag(cf[0])).sum())
        except linalg.LinAlgError:
            cf, logdet = None, np.inf
        self.n_eval += 1
        return {"v": v, "eta": eta, "ll": ll, "obj": obj, "logdet": logdet, "chol": cf, "lam": lam, "ZL": ZL}

    def value(self, x: np.ndarray) -> float:
        """The Laplace log-likelihood at ``x`` (family constants included)."""
        if not np.all(np.isfinite(x)):
            return -np.inf
        m = self.mode(x)
        if np.isfinite(m["obj"]):
            self.v = m["v"]
        return float(m["obj"] - 0.5 * m["logdet"] + self.family.constant())

    def value_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """The Laplace log-likelihood and its gradient in ``x``.

        Analytic in ``(beta, log sigma)``: the envelope theorem for the
        penalised log-likelihood at the mode, and for ``-log det H / 2`` the
        derivative of ``H`` directly and through the mode (implicit function
        theorem, one extra solve); the third derivative of the family's
        log-likelihood comes from differences of its second. The family's own
        parameters (thresholds) by central differences of the value.
        """
        if not np.all(np.isfinite(x)):
            return -np.inf, np.zeros(x.size)
        m = self.mode(x)
        if not np.isfinite(m["obj"]) or m["chol"] is None:
            return -np.inf, np.zeros(x.size)
        self.v = m["v"]
        val = float(m["obj"] - 0.5 * m["logdet"] + self.family.constant())
        g = np.zeros(x.size)
        p, K = self.p, self.K
        _, sd, extra = self.split(x)
        eta, v, ZL = m["eta"], m["v"], m["ZL"]
        _, d1, d2 = self.family.loglik(eta, extra)
        h = 1e-4
        d3 = (self.family.loglik(eta + h, extra)[2] - self.family.loglik(eta - h, extra)[2]) / (2 * h)
        Hinv = chol_inverse(m["chol"])
        lev = _leverages(ZL, Hinv)
        s = -d3 * lev  # d log det H / d eta (through W)
        u = linalg.cho_solve(m["chol"], ZL.T @ s, check_finite=False)
        ZLu = ZL @ u
        g[:p] = self.X.T @ (d1 - 0.5 * (s + d2 * ZLu))
        Zd1 = self.Z.T @ d1
        for k in range(K):
            sel = self.term == k
            vk = np.where(sel, v, 0.0)
            ck = self.Z @ (sd[k] * vk)
            direct = 2.0 * float((1.0 - np.diag(Hinv)[sel]).sum())
            dg = sd[k] * float(u[sel] @ Zd1[sel])
            g[p + k] = sd[k] * float(Zd1[sel] @ v[sel]) - 0.5 * (
                direct + float(s @ ck) + dg + float(ZLu @ (d2 * ck))
            )
        if self.family.n_extra:
            free = np.zeros(x.size, bool)
            free[p + K :] = True
            v_save = self.v.copy()
            g += fd_gradient(self.value, x, free)
            self.v = v_save
        return val, g

    def conditional_sd(self, x: np.ndarray) -> np.ndarray:
        """Conditional sds of the random effects ``sigma v`` at the mode (diagonal of the inverse)."""
        m = self.mode(x)
        if m["chol"] is None or not self.q:
            return np.full(self.q, np.nan)
        inv = chol_inverse(m["chol"])
        return m["lam"] * np.sqrt(np.clip(np.diag(inv), 0, None))


def chol_inverse(cf: tuple[np.ndarray, bool]) -> np.ndarray:
    """The inverse of a matrix from its ``cho_factor``, whole and symmetric.

    LAPACK's ``potri`` (a third of the work of solving against the identity, the Laplace
    gradient's largest cost with thousands of levels); either triangle of the factor.
    """
    c, lower = cf
    if not c.size:  # no random effect: LAPACK refuses an empty matrix
        return np.zeros_like(c)
    inv, info = linalg.lapack.dpotri(c, lower=int(lower))
    if info:
        raise linalg.LinAlgError(f"the Cholesky factor is singular (potri info {info})")
    tri = np.tril(inv) if lower else np.triu(inv)
    return tri + (np.tril(tri, -1).T if lower else np.triu(tri, 1).T)


def _penalised_information(ZL: sp.csr_matrix, w: np.ndarray, q: int) -> np.ndarray:
    """``I + Lam Z' W Z Lam`` as a dense matrix."""
    if not q:
        return np.zeros((0, 0))
    A = (ZL.T @ sp.diags(np.clip(w, 0.0, None)) @ ZL).toarray()
    A[np.diag_indices(q)] += 1.0
    return A


def _leverages(ZL: sp.csr_matrix, Hinv: np.ndarray) -> np.ndarray:
    """``diag(ZL Hinv ZL')`` row by row, from the few non-zeros of each row of ``ZL``."""
    coo = ZL.tocoo()
    r, c, val = coo.row, coo.col, coo.data
    out = np.zeros(ZL.shape[0])
    # every pair of non-zeros within a row: rows hold one entry per term, so this is R x K^2
    order = np.argsort(r, kind="stable")
    r, c, val = r[order], c[order], val[order]
    starts = np.searchsorted(r, np.arange(ZL.shape[0]))
    counts = np.diff(np.append(starts, r.size))
    kmax = int(counts.max()) if counts.size else 0
    for a in range(kmax):
        for b in range(kmax):
            ok = (counts > a) & (counts > b)
            ia, ib = starts[ok] + a, starts[ok] + b
            out[ok] += val[ia] * val[ib] * Hinv[c[ia], c[ib]]
    return out


def fd_gradient(f, x: np.ndarray, free: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Central differences of ``f`` in the ``free`` coordinates (zero elsewhere)."""
    g = np.zeros(x.size)
    for i in np.flatnonzero(free):
        e = np.zeros(x.size)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def gradient_hessian(lik: Laplace, x: np.ndarray, free: np.ndarray | None = None, h: float = 1e-5) -> np.ndarray:
    """Central differences of the analytic gradient in the ``free`` coordinates, symmetrised."""
    n = x.size
    free = np.ones(n, bool) if free is None else free
    H = np.zeros((n, n))
    v_save = lik.v.copy()
    for i in np.flatnonzero(free):
        e = np.zeros(n)
        e[i] = h
        H[i] = (lik.value_grad(x + e)[1] - lik.value_grad(x - e)[1]) / (2 * h)
        lik.v = v_save.copy()
    H = 0.5 * (H + H.T)
    H[~free] = 0.0
    H[:, ~free] = 0.0
    return H
