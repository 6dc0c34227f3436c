"""Variance-component kernels on long data: codes per effect, ANOVA, closed form and REML.

ANOVA (Henderson's Method I) for any crossed/nested design, the balanced closed form
(Brennan's rules), and REML.

Private: the public wrapper is :func:`hierbench.freq.variance_components`.

REML
----
The model is ``y = mu + sum_k Z_k u_k + e`` with ``u_k ~ N(0, s_k^2 I)``, one
term per effect of the design except the residual. When the innermost facet
(runs) is nested in every other facet, the data are first reduced to cell
means ``ybar_c`` (``n_c`` runs each) and the within-cell sum of squares
``SSW``: the REML likelihood factorises exactly into a within-cell part
(``SSW / s_e^2 ~ chi^2_{N - C}``) and the REML likelihood of the cell means,
whose covariance is ``sum_k s_k^2 Z_k Z_k' + diag(s_cell^2 + s_e^2 / n_c)``.
The residual variance is profiled out (relative parameters
``theta_k = s_k / s_e``, bounded below by 0 as in lme4) and the profiled
deviance is minimised by L-BFGS-B. Each evaluation factorises
``A = Lambda Z'W^-1 Z Lambda + I`` (``q x q``, ``q`` the random-effect levels
above the cell): the largest block is diagonal and eliminated, the rest
factorised densely (its coupling to the eliminated block formed sparsely
when sparse), or the whole of ``A`` by a sparse LU when the rest is large.
The minimiser gets the deviance's analytic gradient (``pieces_grad``: the
traces of ``d log|V~|`` are sums of ``A^-1`` at each cell's levels, from the
same factors at about the cost of one more evaluation) instead of
differencing it in every parameter; on the sparse-LU path those entries of
``A^-1`` would take ``q`` solves, so it keeps finite differences.
Convergence is judged by the deviance still to gain under a local quadratic
model (the Newton decrement, a likelihood ratio, so independent of the
number of observations), with parameters at 0 probed inside (the deviance
is even in each relative SD, so its slope at 0 says nothing). Standard
errors come from the expected (Fisher) information of the REML likelihood,
``I_ij = tr(P V_i P V_j) / 2``, up to 6,000 cells, and from the observed
information (finite-difference Hessian of the deviance) above.
"""

from __future__ import annotations

import itertools

import numpy as np
import scipy.linalg as sla
import scipy.optimize as sopt
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .._kernels import ratio
from ._design_lang import Design

__all__: list[str] = []

#: levels outside the largest random-effect block above which the deviance uses a sparse LU
SPARSE_MIN_REST = 3000
#: the fits and profiles minimise with the analytic gradient (``RemlProblem.deviance_grad``);
#: False gives finite differences in scipy, the path before it (kept for comparison)
_ANALYTIC_GRADIENT = True


def _fd_derivatives(fun, x: np.ndarray, h: np.ndarray, free: np.ndarray, f0: float):
    """Return the finite-difference gradient and Hessian of ``fun``.

    Central over the ``free`` coordinates, and one-sided slope and curvature of the others
    (forward, from ``x``), in ``1 + 2 n_free + n_free (n_free - 1) + 2 n_bound``
    evaluations.
    """
    n = x.size
    g = np.zeros(n)
    H = np.zeros((n, n))
    d_b = np.zeros(n)
    c_b = np.zeros(n)
    fi = np.flatnonzero(free)
    nfev = 0
    fp = {}
    fm = {}

    def ev(v):
        nonlocal nfev
        nfev += 1
        return fun(v)

    for i in fi:
        e = np.zeros(n)
        e[i] = h[i]
        fp[i], fm[i] = ev(x + e), ev(x - e)
        g[i] = (fp[i] - fm[i]) / (2 * h[i])
        H[i, i] = (fp[i] - 2 * f0 + fm[i]) / h[i] ** 2
    for a, i in enumerate(fi):
        for j in fi[a + 1 :]:
            e = np.zeros(n)
            e[i], e[j] = h[i], h[j]
            fpp, fmm = ev(x + e), ev(x - e)
            H[i, j] = H[j, i] = (fpp - fp[i] - fp[j] + 2 * f0 - fm[i] - fm[j] + fmm) / (
                2 * h[i] * h[j]
            )
    for i in np.flatnonzero(~free):
        e = np.zeros(n)
        e[i] = h[i]
        f1, f2 = ev(x + e), ev(x + 2 * e)
        d_b[i] = (-3 * f0 + 4 * f1 - f2) / (2 * h[i])
        c_b[i] = (f2 - 2 * f1 + f0) / h[i] ** 2
    return g, H, d_b, c_b, nfev


# --------------------------------------------------------------------------- codes


def joint_codes(cols: list[np.ndarray]) -> tuple[np.ndarray, int]:
    """Dense codes 0..L-1 of the joint levels of several integer code columns."""
    if not cols:
        n = 0 if not cols else len(cols[0])
        return np.zeros(n, dtype=np.int64), 1
    code = np.asarray(cols[0], dtype=np.int64)
    _, code = np.unique(code, return_inverse=True)
    nlev = int(code.max()) + 1 if code.size else 0
    for c in cols[1:]:
        c = np.asarray(c, dtype=np.int64)
        cmax = int(c.max()) + 1 if c.size else 1
        code = code * cmax + c
        _, code = np.unique(code, return_inverse=True)
        nlev = int(code.max()) + 1 if code.size else 0
    return code.astype(np.int64), nlev


def effect_codes(codes: dict[str, np.ndarray], design: Design) -> dict[frozenset, np.ndarray]:
    """Level codes of every effect (the joint levels of its facets)."""
    return {e: joint_codes([codes[f] for f in design.facets if f in e])[0] for e in design.effects}


# --------------------------------------------------------------------------- ANOVA


def _subsets(prim: tuple[str, ...]):
    for r in range(len(prim) + 1):
        for s in itertools.combinations(prim, r):
            yield s, (-1) ** r


def anova_method1(
    y: np.ndarray, ecodes: dict[frozenset, np.ndarray], design: Design
) -> dict[str, np.ndarray]:
    """Henderson's Method I for any crossed/nested design (balanced or not).

    Sums of squares ``SS(a) = sum_{S subset prim(a)} (-1)^|S| T(a - S)`` with
    ``T(a) = sum_g (sum of y in g)^2 / n_g``; their expectations are linear in
    the components with coefficients ``sum_c n_c^2 / n_g(c)`` over the joint
    cells ``c`` of two effects. For balanced data this is the
    expected-mean-square solution (Brennan's rules).
    """
    N = y.size
    yc = y - y.mean()
    effs = list(design.effects)
    empty = frozenset()
    all_sets = {empty, *effs}
    T = {empty: 0.0}
    nlev = {empty: 1}
    for e in effs:
        c = ecodes[e]
        n = np.bincount(c)
        s = np.bincount(c, weights=yc)
        T[e] = float((s * s / n).sum())
        nlev[e] = n.size

    def code_of(s: frozenset) -> np.ndarray:
        return np.zeros(N, dtype=np.int64) if not s else ecodes[s]

    # k[a][b] = sum over joint cells of (a u b) of n_c^2 / n_{group of a}
    k = {}
    for a in all_sets:
        ca = code_of(a)
        na = np.bincount(ca).astype(float)
        for b in effs:
            u = a | b
            cu = code_of(u)
            nu = np.bincount(cu).astype(float)
            first = np.zeros(nu.size, dtype=np.int64)
            first[cu[::-1]] = np.arange(N)[::-1]
            k[a, b] = float((nu * nu / na[ca[first]]).sum())
    m = len(effs)
    ss = np.zeros(m)
    df = np.zeros(m)
    coef = np.zeros((m, m))
    for i, a in enumerate(effs):
        for s, sign in _subsets(design.primary(a)):
            sub = a - frozenset(s)
            assert sub in all_sets
            ss[i] += sign * T[sub]
            df[i] += sign * nlev[sub]
            for j, b in enumerate(effs):
                coef[i, j] += sign * k[sub, b]
    with np.errstate(invalid="ignore", divide="ignore"):
        try:
            est = np.linalg.solve(coef, ss)
        except np.linalg.LinAlgError:
            est = np.full(m, np.nan)
    return {"sum_sq": ss, "df": df, "coef": coef, "estimate": est}


def _balanced_plan(design: Design, shape: tuple[int, ...]) -> dict:
    """Return the parts of the balanced closed form that depend only on the design and sizes.

    Reduction axes, the signed subsets of each sum of squares, df, EMS coefficients;
    memoised on the design.
    """
    key = ("balanced_plan", shape)
    plan = design._memo.get(key)
    if plan is not None:
        return plan
    sizes = dict(zip(design.facets, shape, strict=True))
    axis_of = {f: i for i, f in enumerate(design.facets)}
    effs = design.effects
    drops = [tuple(axis_of[f] for f in design.facets if f not in e) for e in effs]
    index = {frozenset(): -1, **{e: i for i, e in enumerate(effs)}}
    m_ = len(effs)
    terms = []
    df = np.zeros(m_)
    for i, a in enumerate(effs):
        prim = design.primary(a)
        terms.append([(index[a - frozenset(sub)], sign) for sub, sign in _subsets(prim)])
        d = 1.0
        for f in a:
            d *= (sizes[f] - 1) if f in prim else sizes[f]
        df[i] = d
    # EMS(a) = sum_{b >= a} pi(b) s_b, pi(b) = product of sizes outside b
    coef = np.zeros((m_, m_))
    for i, a in enumerate(effs):
        for j, b in enumerate(effs):
            if a <= b:
                p = 1.0
                for f in design.facets:
                    if f not in b:
                        p *= sizes[f]
                coef[i, j] = p
    plan = {"drops": drops, "terms": terms, "df": df, "coef": coef, "upper": _upper(coef)}
    design._memo[key] = plan
    return plan


def anova_balanced(y: np.ndarray, design: Design) -> dict[str, np.ndarray]:
    """Fit the closed form for a balanced dense array (one axis per facet, in ``design.facets`` order)."""
    plan = _balanced_plan(design, tuple(int(n) for n in y.shape))
    N = y.size
    yc = y - y.mean()
    T = np.empty(len(design.effects) + 1)
    T[-1] = 0.0  # the grand mean (of centred data)
    for i, drop in enumerate(plan["drops"]):
        m = yc.mean(axis=drop) if drop else yc
        T[i] = float(np.square(m).sum()) * (N / m.size)
    ss = np.array([sum(sign * T[k] for k, sign in terms) for terms in plan["terms"]])
    df = plan["df"].copy()
    coef = plan["coef"].copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        ms = ss / df
        est = (
            sla.solve_triangular(coef, ms, lower=False)
            if plan["upper"]
            else np.linalg.solve(coef, ms)
        )
    return {"sum_sq": ss, "df": df, "coef": coef, "estimate": est, "mean_sq": ms}


def _upper(a: np.ndarray) -> bool:
    return bool(np.all(np.tril(a, -1) == 0))


def anova_cov(coef_ms: np.ndarray, ms: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Covariance of the balanced ANOVA estimates: ``K^-1 diag(2 MS^2 / df) K^-T``.

    ``coef_ms`` maps components to mean squares (``EMS = coef_ms @ s``); mean
    squares of a balanced design are independent with ``Var(MS) = 2 EMS^2 / df``.
    """
    kinv = np.linalg.inv(coef_ms)
    with np.errstate(invalid="ignore", divide="ignore"):
        v = ratio(2.0 * ms * ms, df)
    return kinv @ np.diag(v) @ kinv.T


# --------------------------------------------------------------------------- REML


class RemlProblem:
    """The profiled REML deviance of a design on long data (see the module notes)."""

    def __init__(self, y: np.ndarray, ecodes: dict[frozenset, np.ndarray], design: Design):
        self.design = design
        full = frozenset(design.facets)
        prim = design.primary(full)
        self.N = y.size
        cell_effect = None
        if len(prim) == 1 and design.parents[prim[0]] == full - {prim[0]} and len(full) > 1:
            cell_effect = full - {prim[0]}
        if cell_effect is not None:
            cc = ecodes[cell_effect]
        else:
            cc = np.arange(self.N)
        n_c = np.bincount(cc).astype(float)
        s_c = np.bincount(cc, weights=y)
        ybar = s_c / n_c
        self.ssw = float(np.square(y - ybar[cc]).sum())
        self.C = n_c.size
        self.n_c = n_c
        self.ybar = ybar
        self.cell_effect = cell_effect
        first = np.zeros(self.C, dtype=np.int64)
        first[cc[::-1]] = np.arange(self.N)[::-1]
        self.terms = [e for e in design.effects if e != full and e != cell_effect]
        blocks = []
        self.block_sizes: list[int] = []
        self._colcodes: list[np.ndarray] = []
        for e in self.terms:
            codes = ecodes[e][first]
            _, codes = np.unique(codes, return_inverse=True)
            L = int(codes.max()) + 1
            blocks.append(
                sp.csr_matrix((np.ones(self.C), (np.arange(self.C), codes)), shape=(self.C, L))
            )
            self._colcodes.append(codes + sum(self.block_sizes))
            self.block_sizes.append(L)
        self.Z = sp.hstack(blocks, format="csr") if blocks else sp.csr_matrix((self.C, 0))
        self.q = self.Z.shape[1]
        self.block_of = np.repeat(np.arange(len(self.terms)), self.block_sizes).astype(np.int64)
        self._bs = np.cumsum([0, *self.block_sizes]).astype(np.int64)
        # each cell's level of each term (its column of Z less the block's start), for the gradient
        self._blockcodes = [c - b for c, b in zip(self._colcodes, self._bs, strict=False)]
        self.n_theta = len(self.terms) + (1 if cell_effect is not None else 0)
        self._sparse = False
        if self.q:
            self._prepare_blocks()
            # the Schur complement on the nr levels outside the largest block is factorised
            # densely (nr^3 / 3 flops); its coupling to the largest block is formed sparsely
            # when few pairs co-occur (InstEval: 1,128 x 2,972, 2% filled; 30 agents x 800
            # tasks in 40 families: 870 x 1,200; SWE-bench with repositories, 337 x 500, is
            # dense). Above SPARSE_MIN_REST levels a sparse LU of the whole system is used.
            self._sparse = self._nr > SPARSE_MIN_REST
            self._Zt = self.Z.T.tocsr()

    def _w(self, theta: np.ndarray) -> np.ndarray:
        if self.cell_effect is None:
            return np.ones(self.C)
        return theta[-1] ** 2 + 1.0 / self.n_c

    def _prepare_blocks(self) -> None:
        """Index arrays for Z'W^-1 Z split into the largest block (b, diagonal) and the rest (r)."""
        bs = np.cumsum([0, *self.block_sizes])
        k_big = int(np.argmax(self.block_sizes))
        self._k_big = k_big
        others = [k for k in range(len(self.block_sizes)) if k != k_big]
        # position of each column inside the "rest" index space
        rest_cols = [
            self._colcodes[k] - bs[k] + sum(self.block_sizes[j] for j in others if j < k)
            for k in others
        ]
        self._nr = sum(self.block_sizes[k] for k in others)
        self._nbig = self.block_sizes[k_big]
        self._bidx = self._colcodes[k_big] - bs[k_big]
        R = np.column_stack(rest_cols) if rest_cols else np.zeros((self.C, 0), np.int64)
        self._ridx = R
        self._rr_idx = (R[:, :, None] * self._nr + R[:, None, :]).reshape(-1)
        self._rb_idx = (R * self._nbig + self._bidx[:, None]).reshape(-1)
        self._rb_rows = R.ravel()
        self._rb_cols = np.repeat(self._bidx, R.shape[1])
        density = np.unique(self._rb_idx).size / max(self._nr * self._nbig, 1)
        self._arb_sparse = bool(density < 0.05)
        self._lam_r_block = (
            np.concatenate([np.full(self.block_sizes[k], k) for k in others]).astype(np.int64)
            if others
            else np.zeros(0, np.int64)
        )
        # for the gradient: the other blocks' order and their columns in the global order
        self._others = others
        self._rest_global = (
            np.concatenate([np.arange(bs[k], bs[k + 1]) for k in others]).astype(np.int64)
            if others
            else np.zeros(0, np.int64)
        )

    def _sparse_factor(self, theta: np.ndarray, winv: np.ndarray, wy: np.ndarray) -> dict | None:
        """Return ``log|A|`` and ``U'A^-1 U`` (``U = Lambda Z'[W^-1 1, W^-1 ybar]``) by a sparse LU.

        The LU is of the symmetric positive definite ``A = Lambda Z'W^-1 Z Lambda + I`` (SuperLU with a
        fill-reducing column order and symmetric, diagonal pivoting, so ``U``'s diagonal
        carries the determinant). Used when the dense Schur complement would be large. None
        at an invalid point; the LU and ``U`` are kept for the gradient.
        """
        lam = theta[: len(self.terms)][self.block_of]
        M = self._Zt @ self.Z.multiply(winv[:, None]).tocsc()
        A = (sp.diags(lam) @ M @ sp.diags(lam) + sp.identity(self.q)).tocsc()
        try:
            lu = spla.splu(
                A, permc_spec="COLAMD", diag_pivot_thresh=0.0, options={"SymmetricMode": True}
            )
        except RuntimeError:  # exactly singular: not a valid point
            return None
        d = lu.U.diagonal()
        if not np.all(d > 0):
            return None
        U = np.column_stack([lam * (self._Zt @ winv), lam * (self._Zt @ wy)])
        return {"logdet_a": float(np.log(d).sum()), "uau": U.T @ lu.solve(U), "lu": lu, "U": U}

    def _dense_factor(self, theta: np.ndarray, winv: np.ndarray, wy: np.ndarray) -> dict | None:
        """Return ``log|A|`` and ``U'A^-1 U`` with the largest block eliminated (Schur complement).

        The largest block's own sub-matrix of ``A`` is diagonal (every cell is in one of its
        levels): it is eliminated and the Schur complement ``S`` on the rest factorised densely.
        None at an invalid point; the factors are kept for the gradient.
        """
        th = theta[: len(self.terms)]
        lb = th[self._k_big]
        lr = th[self._lam_r_block]
        nr, nbg = self._nr, self._nbig
        R = self._ridx
        k = R.shape[1]
        abb = lb * lb * np.bincount(self._bidx, weights=winv, minlength=nbg) + 1.0
        ub = np.column_stack(
            [
                lb * np.bincount(self._bidx, weights=winv, minlength=nbg),
                lb * np.bincount(self._bidx, weights=wy, minlength=nbg),
            ]
        )
        xb = ub / abb[:, None]
        uau = ub.T @ xb  # U' A^-1 U (2 x 2)
        logdet_a = float(np.log(abb).sum())
        fac = {"abb": abb, "xb": xb}
        if nr:
            if self._arb_sparse:  # few (rest, big) pairs co-occur: sparse products
                arb = sp.csr_matrix(
                    (np.repeat(winv, k), (self._rb_rows, self._rb_cols)), shape=(nr, nbg)
                )
                arb = sp.diags(lr * lb) @ arb
            else:
                arb = np.bincount(
                    self._rb_idx, weights=np.repeat(winv, k), minlength=nr * nbg
                ).reshape(nr, nbg) * (lr[:, None] * lb)
            arr = np.bincount(
                self._rr_idx, weights=np.repeat(winv, k * k), minlength=nr * nr
            ).reshape(nr, nr) * (lr[:, None] * lr[None, :])
            arr[np.diag_indices_from(arr)] += 1.0
            rflat = R.ravel()
            ur = np.column_stack(
                [
                    lr * np.bincount(rflat, weights=np.repeat(winv, k), minlength=nr),
                    lr * np.bincount(rflat, weights=np.repeat(wy, k), minlength=nr),
                ]
            )
            if self._arb_sparse:
                S = arr - (arb @ sp.diags(1.0 / abb) @ arb.T).toarray()
            else:
                S = arr - (arb / abb[None, :]) @ arb.T
            ur = ur - arb @ xb
            Lc, info = sla.lapack.dpotrf(S, lower=1, clean=0, overwrite_a=1)
            if info != 0:
                return None
            w_r, _ = sla.lapack.dtrtrs(Lc, ur, lower=1)
            uau = uau + w_r.T @ w_r
            logdet_a += 2.0 * float(np.log(np.diag(Lc)).sum())
            fac.update(arb=arb, Lc=Lc, w_r=w_r)
        fac.update(logdet_a=logdet_a, uau=uau)
        return fac

    def _factor(self, theta: np.ndarray) -> dict | None:
        """Factorise at ``theta``: ``W``, ``log|A|`` and the sums ``m_ij`` of ``V~^-1``; None if invalid."""
        w = self._w(theta)
        winv = 1.0 / w
        wy = winv * self.ybar
        fac: dict = {"w": w, "winv": winv, "wy": wy, "kind": None}
        if self.q:
            part = (self._sparse_factor if self._sparse else self._dense_factor)(theta, winv, wy)
            if part is None:
                return None
            fac.update(part, kind="lu" if self._sparse else "schur")
            uau = fac["uau"]
            fac["m00"] = float(winv.sum() - uau[0, 0])
            fac["m01"] = float(wy.sum() - uau[0, 1])
            fac["m11"] = float((wy * self.ybar).sum() - uau[1, 1])
        else:
            fac["logdet_a"] = 0.0
            fac["m00"] = float(winv.sum())
            fac["m01"] = float(wy.sum())
            fac["m11"] = float((wy * self.ybar).sum())
        if not fac["m00"] > 0:  # 1'V^-1 1 lost to rounding (extreme relative SDs): no valid point
            return None
        return fac

    def pieces(self, theta: np.ndarray) -> tuple[float, float, float, float]:
        """``(log|V~|, log 1'V~^-1 1, Q, mu_hat)`` at relative sds ``theta``."""
        fac = self._factor(theta)
        if fac is None:
            return np.inf, 0.0, 0.0, 0.0
        return self._pieces_of(fac)

    @staticmethod
    def _pieces_of(fac: dict) -> tuple[float, float, float, float]:
        m00, m01 = fac["m00"], fac["m01"]
        q_ = max(fac["m11"] - m01 * m01 / m00, 0.0)
        logdet = float(np.log(fac["w"]).sum()) + fac["logdet_a"]
        return logdet, float(np.log(m00)), q_, m01 / m00

    def _pattern_inverse(self, fac: dict) -> tuple[np.ndarray, np.ndarray]:
        """Return ``A^-1`` at each cell's pairs of levels and ``A^-1 U``.

        ``G[c, a, b]`` is the entry of ``A^-1`` at cell ``c``'s level of term ``a`` (row) and
        of term ``b`` (column), ``C x n_terms x n_terms``; ``A^-1 U`` is ``q x 2`` in the
        global column order. Schur path: ``A^-1``'s rest block is ``S^-1``, its (rest, big)
        block ``-S^-1 A_rb D^-1`` and its big diagonal ``1/D + diag(A_br S^-1 A_rb) / D^2``
        (``D`` the big block's diagonal). Sparse path: columns of ``A^-1`` in chunks.
        """
        nk = len(self.terms)
        G = np.empty((self.C, nk, nk))
        if fac["kind"] == "lu":
            lu = fac["lu"]
            cols = self._colcodes
            for j0 in range(0, self.q, 256):
                j1 = min(self.q, j0 + 256)
                E = np.zeros((self.q, j1 - j0))
                E[np.arange(j0, j1), np.arange(j1 - j0)] = 1.0
                Ainv = lu.solve(E)
                for b in range(nk):
                    sel = (cols[b] >= j0) & (cols[b] < j1)
                    jj = cols[b][sel] - j0
                    for a in range(nk):
                        G[sel, a, b] = Ainv[cols[a][sel], jj]
            return G, lu.solve(fac["U"])
        abb, xb, kb, bidx = fac["abb"], fac["xb"], self._k_big, self._bidx
        X = np.empty((self.q, 2))
        if self._nr:
            Lc, arb = fac["Lc"], fac["arb"]
            xr, _ = sla.lapack.dtrtrs(Lc, fac["w_r"], lower=1, trans=1)
            xb = xb - (arb.T @ xr) / abb[:, None]
            X[self._rest_global] = xr
            Sinv, _ = sla.lapack.dpotri(Lc, lower=1)
            Sinv = np.tril(Sinv) + np.tril(Sinv, -1).T
            if self._arb_sparse:
                Y = np.asarray(arb.T @ Sinv).T  # S^-1 A_rb (nr x nbig)
                yb = np.asarray(arb.multiply(Y).sum(axis=0)).ravel()
            else:
                Y = Sinv @ arb
                yb = (arb * Y).sum(axis=0)
            G[:, kb, kb] = (1.0 / abb + yb / (abb * abb))[bidx]
            R = self._ridx
            for a, ka in enumerate(self._others):
                G[:, ka, kb] = G[:, kb, ka] = -Y[R[:, a], bidx] / abb[bidx]
                for a2, ka2 in enumerate(self._others):
                    G[:, ka, ka2] = Sinv[R[:, a], R[:, a2]]
        else:
            G[:, kb, kb] = 1.0 / abb[bidx]
        X[self._bs[kb] : self._bs[kb + 1]] = xb
        return G, X

    def pieces_grad(
        self, theta: np.ndarray
    ) -> tuple[tuple[float, float, float, float], np.ndarray]:
        """Return :meth:`pieces` and the gradient of its first three in ``theta`` (``3 x n_theta``).

        With ``V~ = sum_k theta_k^2 Z_k Z_k' + W`` and ``p_a = V~^-1 a``: ``d Q / d theta_k =
        -2 theta_k |Z_k' r|^2`` (``r = p_ybar - mu p_1``, ``mu`` at its optimum),
        ``d 1'V~^-1 1 / d theta_k = -2 theta_k |Z_k' p_1|^2``, and ``d log|A| / d theta_k =
        2 tr_k(A^-1 Lambda M)`` (``M = Z'W^-1 Z``, the trace over term ``k``'s levels), a sum
        over cells of ``A^-1`` at the cell's levels, so no division by ``theta``; the cell
        effect's ``d log|V~| / d theta_c = 2 theta_c (tr W^-1 - tr(A^-1 Lambda Z'W^-2 Z
        Lambda))`` and the identity in place of ``Z_k`` in the other two. At an invalid
        point the gradient is 0.
        """
        theta = np.asarray(theta, dtype=float)
        grad = np.zeros((3, self.n_theta))
        fac = self._factor(theta)
        if fac is None:
            return (np.inf, 0.0, 0.0, 0.0), grad
        pcs = self._pieces_of(fac)
        m00, m01, mu = fac["m00"], fac["m01"], pcs[3]
        winv = fac["winv"]
        nk = len(self.terms)
        th = theta[:nk]
        p1 = winv  # V~^-1 1 and r = V~^-1 (ybar - mu)
        r = fac["wy"] - mu * winv
        F = np.zeros((self.C, nk))
        if self.q:
            G, X = self._pattern_inverse(fac)
            zlx = th[0] * X[self._colcodes[0]]  # Z Lambda A^-1 U
            for k in range(1, nk):
                zlx += th[k] * X[self._colcodes[k]]
            p1 = winv - winv * zlx[:, 0]
            r = r - winv * (zlx[:, 1] - mu * zlx[:, 0])
            F = G @ th  # (A^-1 Lambda z_c) at each cell's levels
            grad[0, :nk] = 2.0 * (winv @ F)
            for k in range(nk):  # |Z_k' p1|^2 and |Z_k' r|^2
                L = self.block_sizes[k]
                z1 = np.bincount(self._blockcodes[k], weights=p1, minlength=L)
                zr = np.bincount(self._blockcodes[k], weights=r, minlength=L)
                grad[1, k] = -2.0 * th[k] * float(z1 @ z1) / m00
                grad[2, k] = -2.0 * th[k] * float(zr @ zr)
        if self.cell_effect is not None:
            tc = theta[-1]
            tr_a = float(np.square(winv) @ (F @ th))
            grad[:, -1] = (
                2.0 * tc * (float(winv.sum()) - tr_a),
                -2.0 * tc * float(p1 @ p1) / m00,
                -2.0 * tc * float(r @ r),
            )
        if fac["m11"] - m01 * m01 / m00 < 0.0:  # Q clipped at 0
            grad[2] = 0.0
        return pcs, grad

    def deviance(self, theta: np.ndarray) -> float:
        return self._deviance_of(self.pieces(theta))[0]

    def deviance_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Return :meth:`deviance` and its gradient in ``theta`` (0 where the deviance is not finite)."""
        return self._deviance_of(*self.pieces_grad(theta))

    def _deviance_of(self, pieces: tuple, g: np.ndarray | None = None) -> tuple[float, np.ndarray | None]:
        """The deviance from :meth:`pieces`, and with their gradients ``g`` (:meth:`pieces_grad`) its own."""
        logdet, logm00, q_, _ = pieces
        zero = None if g is None else np.zeros(self.n_theta)
        if not np.isfinite(logdet):
            return np.inf, zero
        rss = self.ssw + q_
        if rss <= 0:
            return -np.inf, zero
        value = (self.N - 1) * np.log(rss) + logdet + logm00
        return value, None if g is None else (self.N - 1) * g[2] / rss + g[0] + g[1]

    def use_gradient(self) -> bool:
        """Tell whether the minimisations take the analytic gradient.

        Not on the sparse-LU path: there its traces need every column of ``A^-1`` (``q``
        solves), dearer than the ``1 + n_theta`` factorisations of finite differences.
        """
        return bool(_ANALYTIC_GRADIENT) and not (self.q and self._sparse)

    def newton_check(self, theta: np.ndarray, polish: int = 3) -> tuple[np.ndarray, float, int]:
        """Scale-free convergence check with Newton polishing.

        The deviance is ``-2 log L``: a change in it is a likelihood ratio, whatever the
        number of observations, so the test is the deviance still to gain, predicted by a
        local quadratic model (finite-difference gradient and Hessian): the Newton
        decrement ``g'H^-1 g / 2`` over the parameters inside the bounds, plus
        ``d^2 / (2c)`` for each parameter at 0 whose one-sided slope ``d`` is negative
        (``c`` its one-sided curvature); a parameter at 0 whose deviance falls by more than
        1e-6 at 0.01 or 0.02 (a saddle: the slope of an SD is 0 at 0) is not converged. A decrement ``delta`` means the optimum is about
        ``sqrt(delta)`` standard errors away. (An absolute gradient bound is not
        scale-free: on SWE-bench, 12,500 observations, a gradient of 0.016 is a Newton
        step of 3e-4 standard errors.) Up to ``polish`` safeguarded Newton steps are taken
        while the decrement is above ``1e-6``.

        Returns ``(theta, decrement, n_evaluations)``.
        """
        nfev = 0
        theta = np.maximum(np.asarray(theta, dtype=float), 0.0)
        f = self.deviance(theta)
        dec = np.inf
        for it in range(polish + 1):
            h = 1e-4 * np.maximum(1.0, theta)
            free = theta > 2 * h
            g, H, d_b, c_b, ne = _fd_derivatives(self.deviance, theta, h, free, f)
            nfev += ne
            fi = np.flatnonzero(free)
            step = np.zeros_like(theta)
            dec = 0.0
            if fi.size:
                Hf = H[np.ix_(fi, fi)]
                try:
                    L = np.linalg.cholesky(Hf)
                except np.linalg.LinAlgError:
                    return theta, np.inf, nfev  # not at a minimum (or flat): not converged
                sf = sla.cho_solve((L, True), g[fi])
                dec += 0.5 * float(g[fi] @ sf)
                step[fi] = -sf
            for i in np.flatnonzero(~free):
                # at the bound the slope in an SD parameter is ~0 whatever the deviance does
                # inside (a variance theta^2 enters quadratically), and the deviance can fall
                # as -a theta^2 (a saddle of the SD parametrisation): also probe it at
                # theta_i = 0.01 and 0.02 (variances 1e-4 and 4e-4 of the residual's)
                for tb in (0.01, 0.02):
                    e = theta.copy()
                    e[i] = tb
                    nfev += 1
                    if self.deviance(e) < f - 1e-6:
                        return theta, np.inf, nfev
                if c_b[i] * h[i] ** 2 < -1e-9:  # the deviance bends down into the interior
                    return theta, np.inf, nfev
                if d_b[i] < 0 and c_b[i] > 0:
                    dec += d_b[i] ** 2 / (2 * c_b[i])
                    step[i] = -d_b[i] / c_b[i]
            if not np.isfinite(dec) or dec < 1e-6 or it == polish:
                break
            t = 1.0
            for _ in range(8):  # backtracking, staying in theta >= 0
                cand = np.maximum(theta + t * step, 0.0)
                fc = self.deviance(cand)
                nfev += 1
                if fc < f:
                    theta, f = cand, fc
                    break
                t /= 2
            else:
                break
        return theta, float(dec), nfev

    def fit(self, init: np.ndarray | None = None) -> dict:
        k = self.n_theta
        x0 = np.ones(k) if init is None else np.asarray(init, dtype=float)
        bounds = [(0.0, None)] * k
        nfev = 0
        if k:
            opts = {"ftol": 1e-13, "gtol": 1e-8, "maxiter": 1000}
            jac = self.use_gradient()
            fun = self.deviance_grad if jac else self.deviance
            res = sopt.minimize(fun, x0, jac=jac, method="L-BFGS-B", bounds=bounds, options=opts)
            nfev += res.nfev
            theta = np.maximum(res.x, 0.0)
            # a parameter that ends near 0 is set to 0 when that does not raise the deviance
            f = self.deviance(theta)
            for i in range(k):
                if 0 < theta[i] < 1e-4:
                    t0 = theta.copy()
                    t0[i] = 0.0
                    f0 = self.deviance(t0)
                    if f0 <= f + 1e-9:
                        theta, f = t0, f0
            theta, dec, ne = self.newton_check(theta)
            nfev += ne
            converged = dec < 1e-5
            if not converged:  # restart once from where it stopped, off the bounds
                res = sopt.minimize(
                    fun,
                    np.maximum(theta, 0.05),
                    jac=jac,
                    method="L-BFGS-B",
                    bounds=bounds,
                    options=opts,
                )
                nfev += res.nfev
                if res.fun < self.deviance(theta):
                    theta = np.maximum(res.x, 0.0)
                theta, dec, ne = self.newton_check(theta)
                nfev += ne
                converged = dec < 1e-5
            message = (
                f"{res.message}; deviance still to gain by the local quadratic model "
                f"{dec:.2g} (converged below 1e-5, i.e. the optimum within ~0.005 standard "
                "errors)"
            )
        else:
            theta = np.zeros(0)
            converged, message = True, "no parameters"
        _, _, q_, mu = self.pieces(theta)
        s2e = (self.ssw + q_) / (self.N - 1)
        s2 = theta**2 * s2e
        return {
            "theta": theta,
            "sigma2_e": s2e,
            "sigma2": s2,
            "mu": mu,
            "deviance": self.deviance(theta),
            "converged": converged,
            "message": message,
            "nfev": nfev,
        }

    def deviance_abs(self, s2: np.ndarray) -> float:
        """Return the REML deviance (``-2 log L`` up to a constant) at absolute components.

        The components: ``(term components..., [cell], residual)``.
        """
        s2e = float(s2[-1])
        if not s2e > 0 or np.any(s2[:-1] < 0):
            return np.inf
        logdet, logm00, q_, _ = self.pieces(np.sqrt(s2[:-1] / s2e))
        if not np.isfinite(logdet):
            return np.inf
        return (self.N - 1) * np.log(s2e) + (self.ssw + q_) / s2e + logdet + logm00

    def observed_information(self, s2_terms: np.ndarray, s2_cell: float, s2e: float) -> np.ndarray:
        """Return the REML observed information of (term components..., [cell], residual).

        Half the finite-difference Hessian of :meth:`deviance_abs`, ``1 + 2n + n(n-1)`` deviance
        evaluations (no ``C x C`` matrix, so it scales like the fit). A component at 0 is
        differenced forward (the stencil starts at 0): its curvature is taken at the bound.
        """
        s2 = np.r_[s2_terms, [s2_cell] if self.cell_effect is not None else [], s2e].astype(float)
        h = 1e-3 * np.maximum(s2, 1e-3 * s2e)
        x = np.where(s2 > 2 * h, s2, h)  # a component at (or near) 0: stencil 0, h, 2h
        f0 = self.deviance_abs(x)
        _, H, _, _, _ = _fd_derivatives(self.deviance_abs, x, h, np.ones(x.size, bool), f0)
        return 0.5 * H

    def expected_information(self, s2_terms: np.ndarray, s2_cell: float, s2e: float) -> np.ndarray:
        """REML Fisher information of (term components..., [cell], residual)."""
        d = 1.0 / self.n_c if self.cell_effect is not None else np.ones(self.C)
        Z = self.Z
        V = np.asarray((Z @ sp.diags(s2_terms[self.block_of]) @ Z.T).todense())
        V[np.diag_indices_from(V)] += s2_cell + s2e * d
        Lc, info = sla.lapack.dpotrf(V, lower=1, clean=1)
        if info != 0:
            raise np.linalg.LinAlgError("covariance of the cell means is not positive definite")
        Vi, info = sla.lapack.dpotri(Lc, lower=1)
        Vi = np.tril(Vi) + np.tril(Vi, -1).T
        v1 = Vi.sum(axis=1)
        P = Vi - np.outer(v1, v1) / v1.sum()
        H = np.asarray(Z.T @ P)  # q x C
        G = np.asarray((Z.T @ H.T).T)  # q x q
        nk = len(self.terms)
        bs = np.cumsum([0, *self.block_sizes])
        sq = np.sqrt(d)
        mats = []
        for i in range(nk):
            mats.append(("z", slice(bs[i], bs[i + 1])))
        if self.cell_effect is not None:
            mats.append(("i", None))
        mats.append(("d", None))
        n = len(mats)
        info = np.zeros((n, n))
        PD = P * sq[None, :]
        DPD = PD * sq[:, None]
        for i, (ki, si) in enumerate(mats):
            for j, (kj, sj) in enumerate(mats):
                if j < i:
                    continue
                if ki == "z" and kj == "z":
                    val = np.square(G[si, sj]).sum()
                elif ki == "z" and kj == "i":
                    val = np.square(H[si]).sum()
                elif ki == "z" and kj == "d":
                    val = np.square(H[si] * sq[None, :]).sum()
                elif ki == "i" and kj == "i":
                    val = np.square(P).sum()
                elif ki == "i" and kj == "d":
                    val = np.square(PD).sum()
                else:  # d, d
                    val = np.square(DPD).sum()
                info[i, j] = info[j, i] = 0.5 * val
        info[-1, -1] += 0.5 * (self.N - self.C) / s2e**2
        return info
