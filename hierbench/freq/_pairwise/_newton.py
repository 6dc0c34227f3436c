"""Bradley-Terry maximum likelihood: the log-likelihood, Hunter's MM and Newton's method.

Private to the pairwise wing (see :mod:`._ml` for the model): the scalar Newton
iteration of one fit and the batched one of the bootstrap's refits share the log-likelihood
(its probabilities from ``_numerics.davidson_log_probs``, as the Bayesian model's) and the
assembly of the gradient and of the information blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from ..._numerics import davidson_log_probs

__all__: list[str] = []


@dataclass
class _Fit:
    theta: np.ndarray  # (m,) logit abilities, reference parametrisation (theta[ref] = 0)
    home: float
    log_nu: float  # -inf without Davidson ties
    loglik: float
    iterations: int
    converged: bool
    info: np.ndarray | None = None  # observed information in the free parameters


def _beat_edges(ia: np.ndarray, ib: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 'beat or tied' digraph's edges ``(src, dst)``: an edge a -> b where a beat or tied b."""
    win_a = counts[:, 0] + counts[:, 1] > 0
    win_b = counts[:, 2] + counts[:, 1] > 0
    return np.concatenate([ia[win_a], ib[win_b]]), np.concatenate([ib[win_a], ia[win_b]])


def _strongly_connected(
    ia: np.ndarray, ib: np.ndarray, counts: np.ndarray, m: int
) -> tuple[bool, np.ndarray]:
    """Whether the 'beat or tied' digraph is strongly connected; component labels."""
    src, dst = _beat_edges(ia, ib, counts)
    g = sparse.csr_matrix((np.ones(src.size), (src, dst)), shape=(m, m))
    n, lab = connected_components(g, directed=True, connection="strong")
    return n == 1, lab


def _davidson_terms(w, t, l_, n, pa, pt, pb):
    """Return the Davidson likelihood's gradient (in d and log nu) and information per cell.

    From the counts and the outcome probabilities.
    """
    g_d = (w - l_) / 2 - n * (pa - pb) / 2
    g_l = t - n * pt
    i_dd = n * ((pa + pb) / 4 - (pa - pb) ** 2 / 4)
    i_dl = -n * (pa - pb) * pt / 2
    i_ll = n * pt * (1 - pt)
    return g_d, g_l, i_dd, i_dl, i_ll


def _loglik_parts(d, lam, counts, ties):
    """Return the log-likelihood (summed over the cells) and its gradient and information per cell.

    ``d`` (..., K) the ability gaps, ``lam`` (scalar or ``d.shape[:-1]``) log nu, ``counts``
    (..., K, 3) wins, ties, losses of the first agent. The outcome probabilities come from the one
    owner, :mod:`hierbench._numerics.davidson`; the logistic model is its ``nu = 0`` case, with a
    tie counting as half a win each way (``ties="half"``). The log-likelihood leaves out the
    multinomial coefficients (they do not depend on the parameters).
    """
    w, t, l_ = np.moveaxis(counts, -1, 0)
    n = w + t + l_
    if ties == "davidson":
        lp = davidson_log_probs(d, np.asarray(lam, dtype=float)[..., None])
        ll = np.sum(counts * lp, axis=(-2, -1))
        return ll, *_davidson_terms(w, t, l_, n, *np.moveaxis(np.exp(lp), -1, 0))
    lp = davidson_log_probs(d, -np.inf)
    s = w + t / 2
    ll = np.sum(s * lp[..., 0] + (n - s) * lp[..., 2], axis=-1)
    pa, pb = np.exp(lp[..., 0]), np.exp(lp[..., 2])
    return ll, s - n * pa, None, n * pa * pb, None, None


def _mm(ia, ib, counts, m, home, theta0, h0, tol, max_iter):
    """Hunter's (2004) MM iteration for the logistic model (ties as half wins), optional home term."""
    w = counts[:, 0] + counts[:, 1] / 2
    lo_ = counts[:, 2] + counts[:, 1] / 2
    n = w + lo_
    wins = np.bincount(ia, w, m) + np.bincount(ib, lo_, m)
    home_wins = w.sum()
    p = np.exp(theta0 - theta0.mean())
    g = np.exp(h0) if home else 1.0
    it = 0
    converged = False
    for it in range(1, max_iter + 1):  # noqa: B007
        den_pair = g * p[ia] + p[ib]
        den = np.bincount(ia, n * g / den_pair, m) + np.bincount(ib, n / den_pair, m)
        with np.errstate(divide="ignore", invalid="ignore"):
            p_new = wins / den
        p_new /= np.exp(np.mean(np.log(p_new)))
        if home:
            g = home_wins / np.sum(n * p_new[ia] / (g * p_new[ia] + p_new[ib]))
        change = np.max(np.abs(np.log(p_new) - np.log(p)))
        p = p_new
        if not np.isfinite(change):
            break
        if change < tol:
            converged = True
            break
    return np.log(p), (np.log(g) if home else 0.0), it, converged


def _free(m: int, ref: int) -> np.ndarray:
    """Return the abilities estimated freely: every agent but the reference (fixed at 0)."""
    return np.r_[np.arange(ref), np.arange(ref + 1, m)]


def _stack_grad(g_th, g_home, g_lam) -> np.ndarray:
    """Stack the gradient in the free parameters: abilities, then home, then log nu.

    None: not in the model; leading batch dims allowed.
    """
    extra = [np.asarray(g)[..., None] for g in (g_home, g_lam) if g is not None]
    return np.concatenate([g_th, *extra], axis=-1)


def _stack_info(h_th, c_home, d_home, c_lam, d_lam, c_hl) -> np.ndarray:
    """Assemble the information in the order of :func:`_stack_grad` from its blocks.

    The blocks: abilities ``h_th``, their cross terms with home ``c_home`` / log nu
    ``c_lam``, the diagonals ``d_home`` / ``d_lam`` and home x log nu ``c_hl`` (None: not
    in the model).
    """
    n_th = h_th.shape[-1]
    k = n_th + (c_home is not None) + (c_lam is not None)
    info = np.zeros((*h_th.shape[:-2], k, k))
    info[..., :n_th, :n_th] = h_th
    j = n_th
    if c_home is not None:
        info[..., :n_th, j] = c_home
        info[..., j, :n_th] = c_home
        info[..., j, j] = d_home
        j += 1
    if c_lam is not None:
        info[..., :n_th, j] = c_lam
        info[..., j, :n_th] = c_lam
        info[..., j, j] = d_lam
        if c_home is not None:
            info[..., j - 1, j] = c_hl
            info[..., j, j - 1] = c_hl
    return info


def _newton(ia, ib, counts, m, ref, ties, home, theta, h, lam, tol, max_iter):
    """Newton's method with backtracking on the concave log-likelihood; theta[ref] fixed at 0."""
    free = _free(m, ref)
    n_th = m - 1
    use_lam = ties == "davidson"
    theta = theta - theta[ref]

    def evaluate(theta, h, lam):
        d = theta[ia] - theta[ib] + (h if home else 0.0)
        return _loglik_parts(d, lam, counts, ties)

    def signed(x):  # per-agent sum with + for the first agent of a pair, - for the second
        return (np.bincount(ia, x, m) - np.bincount(ib, x, m))[free]

    ll, g_d, g_l, i_dd, i_dl, i_ll = evaluate(theta, h, lam)
    converged = False
    info = None
    it = 0
    for it in range(1, max_iter + 1):  # noqa: B007
        grad = _stack_grad(
            (np.bincount(ia, g_d, m) - np.bincount(ib, g_d, m))[free],
            g_d.sum() if home else None,
            g_l.sum() if use_lam else None,
        )
        diag = np.bincount(ia, i_dd, m) + np.bincount(ib, i_dd, m)
        H = -np.bincount(ia * m + ib, i_dd, m * m).reshape(m, m)
        H = H + H.T
        H[np.diag_indices(m)] += diag
        info = _stack_info(
            H[np.ix_(free, free)],
            signed(i_dd) if home else None,
            i_dd.sum(),
            signed(i_dl) if use_lam else None,
            i_ll.sum() if use_lam else None,
            i_dl.sum() if home and use_lam else None,
        )
        if np.max(np.abs(grad)) < tol * max(1.0, counts.sum() ** 0.5):
            converged = True
            break
        try:
            step = np.linalg.solve(info, grad)
        except np.linalg.LinAlgError:
            break
        t = 1.0
        for _ in range(60):
            th_new = theta.copy()
            th_new[free] += t * step[:n_th]
            h_new = h + t * step[n_th] if home else h
            lam_new = lam + t * step[-1] if use_lam else lam
            parts = evaluate(th_new, h_new, lam_new)
            if np.isfinite(parts[0]) and parts[0] >= ll - 1e-12 * abs(ll):
                break
            t /= 2
        else:
            break
        theta, h, lam = th_new, h_new, lam_new
        ll, g_d, g_l, i_dd, i_dl, i_ll = parts
    return _Fit(theta, h, lam if use_lam else -np.inf, float(ll), it, converged, info)


def _pair_operators(ia: np.ndarray, ib: np.ndarray, m: int):
    """Return the sparse maps from per-pair values to per-agent sums.

    ``inc`` (K, m) with +1 for the first agent and -1 for the second (d = theta[ia] -
    theta[ib]), ``hess`` (K, m * m) onto the ability block of the information.
    """
    K = ia.size
    rows = np.arange(K)
    inc = sparse.csr_matrix(
        (np.r_[np.ones(K), -np.ones(K)], (np.r_[rows, rows], np.r_[ia, ib])), shape=(K, m)
    )
    hess = sparse.csr_matrix(
        (
            np.r_[np.ones(2 * K), -np.ones(2 * K)],
            (np.tile(rows, 4), np.r_[ia * m + ia, ib * m + ib, ia * m + ib, ib * m + ia]),
        ),
        shape=(K, m * m),
    )
    return inc, hess


def _solve_rows(info: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """Take Newton steps on a batch.

    A singular system stops its own row only (NaN), as in :func:`_newton`.
    """
    try:
        return np.linalg.solve(info, grad[..., None])[..., 0]
    except np.linalg.LinAlgError:
        step = np.full_like(grad, np.nan)
        for i in range(grad.shape[0]):
            try:
                step[i] = np.linalg.solve(info[i], grad[i])
            except np.linalg.LinAlgError:
                pass
        return step


def _line_search(evaluate, x, active, step, ll, free, home, use_lam):
    """Backtracking, row by row: halve the step until the log-likelihood does not drop.

    Returns the accepted parameters (theta, home, lam) of the active rows, their
    likelihood parts, and the rows that found no ascent step (``pending``).
    """
    theta, h, lam = x
    n_th = free.size
    b = active.size
    t = np.ones(b)
    new = (theta[active].copy(), h[active].copy(), lam[active].copy())
    pending = np.arange(b)
    new_parts = [None] * 6
    for _ in range(60):
        th_c = theta[active[pending]].copy()
        th_c[:, free] += t[pending, None] * step[pending, :n_th]
        h_c = h[active[pending]] + (t[pending] * step[pending, n_th] if home else 0.0)
        lam_c = lam[active[pending]] + (t[pending] * step[pending, -1] if use_lam else 0.0)
        cand = evaluate(active[pending], th_c, h_c, lam_c)
        ok = np.isfinite(cand[0]) & (cand[0] >= ll[pending] - 1e-12 * np.abs(ll[pending]))
        ok &= np.isfinite(step[pending]).all(1)
        acc = pending[ok]
        new[0][acc], new[1][acc], new[2][acc] = th_c[ok], h_c[ok], lam_c[ok]
        for q in range(6):
            if cand[q] is None:
                continue
            if new_parts[q] is None:
                new_parts[q] = np.empty((b, *cand[q].shape[1:]))
            new_parts[q][acc] = cand[q][ok]
        pending = pending[~ok]
        if pending.size == 0:
            break
        t[pending] /= 2
    return new, new_parts, pending


def _newton_batch(ia, ib, counts, m, ref, ties, home, start, tol, max_iter):
    """:func:`_newton` on a batch of count tables ``counts`` (B, K, 3) sharing the cells (ia, ib).

    The same iteration, step by step, with the per-pair sums done as sparse
    products and the B Newton systems solved at once: the bootstrap's refits
    cost a few array operations instead of a Python loop over resamples.
    Returns theta (B, m) in the reference parametrisation, home (B,), lam (B,).
    """
    B = counts.shape[0]
    free = _free(m, ref)
    use_lam = ties == "davidson"
    inc, hess = _pair_operators(ia, ib, m)
    th0, h0, lam0 = start
    theta = np.tile(th0 - th0[ref], (B, 1))
    h = np.full(B, float(h0) if home else 0.0)
    lam = np.full(B, float(lam0) if use_lam else -np.inf)
    scale = tol * np.maximum(1.0, counts.sum((1, 2)) ** 0.5)

    def evaluate(idx, theta, h, lam):
        d = theta[:, ia] - theta[:, ib] + (h[:, None] if home else 0.0)
        return _loglik_parts(d, lam, counts[idx], ties)

    def signed(x):  # per-agent sums with + for the first agent of a pair, - for the second
        return np.asarray(inc.T @ x.T).T[:, free]

    active = np.arange(B)
    parts = evaluate(active, theta, h, lam)
    for _ in range(max_iter):
        ll, g_d, g_l, i_dd, i_dl, i_ll = parts
        grad = _stack_grad(
            signed(g_d), g_d.sum(1) if home else None, g_l.sum(1) if use_lam else None
        )
        keep = ~(np.max(np.abs(grad), axis=1) < scale[active])
        if not keep.all():
            active = active[keep]
            if active.size == 0:
                break
            grad = grad[keep]
            ll, g_d, i_dd = ll[keep], g_d[keep], i_dd[keep]
            if use_lam:
                g_l, i_dl, i_ll = g_l[keep], i_dl[keep], i_ll[keep]
        b = active.size
        info = _stack_info(
            np.asarray(hess.T @ i_dd.T).T.reshape(b, m, m)[:, free][:, :, free],
            signed(i_dd) if home else None,
            i_dd.sum(1),
            signed(i_dl) if use_lam else None,
            i_ll.sum(1) if use_lam else None,
            i_dl.sum(1) if home and use_lam else None,
        )
        step = _solve_rows(info, grad)
        new, new_parts, pending = _line_search(
            evaluate, (theta, h, lam), active, step, ll, free, home, use_lam
        )
        move = np.ones(b, dtype=bool)
        move[pending] = False  # no ascent step found: stop these rows where they are
        theta[active[move]], h[active[move]], lam[active[move]] = (
            new[0][move],
            new[1][move],
            new[2][move],
        )
        active = active[move]
        if active.size == 0:
            break
        parts = tuple(None if x is None else x[move] for x in new_parts)
    return theta, h, lam


def _fit(counts, ia, ib, m, ref, ties, home, method, tol, max_iter, start=None):
    ok, _ = _strongly_connected(ia, ib, counts, m)
    if not ok:
        return None
    if start is None:
        th0, h0, it_mm, conv_mm = _mm(
            ia,
            ib,
            counts,
            m,
            home,
            np.zeros(m),
            0.0,
            tol=(tol if method == "mm" else 1e-3),
            max_iter=(max_iter if method == "mm" else 30),
        )
        th0 = th0 - th0[ref]
        lam0 = np.log(max(counts[:, 1].sum(), 0.5) / max(counts[:, [0, 2]].sum(), 1.0)) + np.log(
            2.0
        )
    else:
        th0, h0, lam0 = start
        it_mm, conv_mm = 0, False
    if method == "mm":
        ll, *_ = _loglik_parts(th0[ia] - th0[ib] + h0, -np.inf, counts, ties)
        f = _newton(ia, ib, counts, m, ref, ties, home, th0, h0, lam0, tol=np.inf, max_iter=1)
        return _Fit(th0 - th0[ref], h0, -np.inf, float(ll), it_mm, conv_mm, f.info)
    f = _newton(ia, ib, counts, m, ref, ties, home, th0, h0, lam0, tol=tol, max_iter=max_iter)
    f.iterations += it_mm
    return f


def _inverse(info: np.ndarray) -> np.ndarray:
    """Inverse of the (positive definite) information; pseudo-inverse if it is singular."""
    try:
        return np.linalg.inv(info)
    except np.linalg.LinAlgError:
        return np.linalg.pinv(info)
