"""Profile-likelihood intervals from the REML likelihood of a G-study.

Private: used by :class:`hierbench.freq.VarianceComponentsResult` (``ci="profile"``).

The REML deviance in absolute components is

    D(theta, s_e) = (N - 1) log s_e + (SSW + Q(theta)) / s_e + log|V~(theta)| + log 1'V~^-1 1

(:class:`hierbench.freq._variance._reml.RemlProblem`: ``theta`` the SDs relative to the residual SD,
``V~`` the covariance of the cell means over ``s_e``). The profile deviance of a quantity
``g`` at ``c`` is the minimum of ``D`` over every parameter with ``g = c``; the interval is
``{c : D_prof(c) - D_min <= chi2_1(prob)}`` (Wilks). Quantities:

* a component ``s_j``: ``theta_j = sqrt(c / s_e)`` with ``s_e`` and the other ``theta`` free
  (the residual: ``s_e = c``, every ``theta`` free);
* a coefficient ``tau / (tau + err)`` (E rho^2 with the relative error, Phi with the
  absolute one), ``tau`` and ``err`` linear in the components: the ratio does not depend
  on the scale, so ``s_e`` is profiled out in closed form and the universe-score
  components are set to ``c / (1 - c) * err`` (shared out by free weights when there are
  several).

Each minimisation gets the analytic gradient (through the reparameterisations by the chain
rule) where :class:`hierbench.freq._variance._reml.RemlProblem` gives one.

A bound that the profile never crosses (a component whose profile stays below the cut
down to 0, a coefficient whose profile stays below it up to 0 or 1) is the end of the
parameter space.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize as sopt
from scipy import stats

__all__: list[str] = []

_OPTS = {"ftol": 1e-11, "gtol": 1e-6, "maxiter": 500}
#: warm starts put relative SDs at least here: the deviance is even in each relative SD, so
#: its slope at 0 is 0 and L-BFGS-B started at (or next to) 0 stays there even when the
#: deviance falls inside (a saddle); on SWE-bench a warm start left at 1e-6 made the profile
#: of the agent component path-dependent (7.59 and 1.46 at the same point) and its lower
#: bound 0.0233 where the profile had not reached the cut
_FLOOR = 1e-2


class Profiler:
    """Profile deviances of one fitted :class:`RemlProblem`.

    Parameters
    ----------
    problem : RemlProblem
    theta_hat : array
        The REML estimate of the relative SDs (``problem.n_theta``).
    """

    def __init__(self, problem, theta_hat: np.ndarray):
        self.p = problem
        self.theta_hat = np.asarray(theta_hat, dtype=float)
        _, _, q_, _ = problem.pieces(self.theta_hat)
        self.s2e_hat = (problem.ssw + q_) / (problem.N - 1)
        self.d_min = self.dev_abs(self.theta_hat, self.s2e_hat)

    # ------------------------------------------------------------------ deviances
    def dev_abs(self, theta: np.ndarray, s2e: float) -> float:
        if not (s2e > 0) or not np.isfinite(s2e):
            return np.inf
        return self._abs_of(self.p.pieces(np.abs(theta)), s2e=s2e, theta=theta)[0]

    def dev_rel(self, theta: np.ndarray) -> float:
        """``min over s_e`` of :meth:`dev_abs` (closed form), on the same scale."""
        return self._rel_of(self.p.pieces(np.abs(theta)), theta=theta)[0]

    def dev_abs_grad(self, theta: np.ndarray, s2e: float) -> tuple[float, np.ndarray, float]:
        """Return :meth:`dev_abs` and its gradient in ``theta`` and in ``s2e`` (0 where not finite)."""
        if not (s2e > 0) or not np.isfinite(s2e):
            return np.inf, np.zeros(np.size(theta)), 0.0
        return self._abs_of(*self.p.pieces_grad(np.abs(theta)), s2e=s2e, theta=theta)

    def dev_rel_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Return :meth:`dev_rel` and its gradient in ``theta`` (0 where not finite)."""
        return self._rel_of(*self.p.pieces_grad(np.abs(theta)), theta=theta)

    def _abs_of(self, pieces: tuple, g: np.ndarray | None = None, *, s2e: float, theta: np.ndarray) -> tuple:
        """:meth:`dev_abs` from the pieces at ``|theta|`` (``s2e`` > 0), with ``g``: its gradients in theta and s2e."""
        logdet, logm00, q_, _ = pieces
        if not np.isfinite(logdet):
            return (np.inf,) if g is None else (np.inf, np.zeros(np.size(theta)), 0.0)
        rss = self.p.ssw + q_
        f = (self.p.N - 1) * np.log(s2e) + rss / s2e + logdet + logm00
        if g is None:
            return (f,)
        sign = np.where(np.asarray(theta) < 0, -1.0, 1.0)
        return f, (g[2] / s2e + g[0] + g[1]) * sign, (self.p.N - 1) / s2e - rss / s2e**2

    def _rel_of(self, pieces: tuple, g: np.ndarray | None = None, *, theta: np.ndarray) -> tuple:
        """:meth:`dev_rel` from the pieces at ``|theta|``, with ``g``: and its gradient in theta."""
        logdet, logm00, q_, _ = pieces
        rss = self.p.ssw + q_
        if not np.isfinite(logdet) or rss <= 0:
            return (np.inf,) if g is None else (np.inf, np.zeros(np.size(theta)))
        n1 = self.p.N - 1
        f = n1 * np.log(rss / n1) + n1 + logdet + logm00
        if g is None:
            return (f,)
        sign = np.where(np.asarray(theta) < 0, -1.0, 1.0)
        return f, (n1 * g[2] / rss + g[0] + g[1]) * sign

    def _minimise(self, fun, x0: np.ndarray, bounds, fun_grad=None) -> tuple[float, np.ndarray]:
        """Minimise ``fun`` by L-BFGS-B, with ``fun_grad`` (value and gradient) when it is used."""
        if x0.size == 0:
            return float(fun(x0)), x0
        if fun_grad is not None and self.p.use_gradient():
            r = sopt.minimize(
                fun_grad, x0, jac=True, method="L-BFGS-B", bounds=bounds, options=_OPTS
            )
        else:
            r = sopt.minimize(fun, x0, method="L-BFGS-B", bounds=bounds, options=_OPTS)
        return float(r.fun), np.asarray(r.x, dtype=float)

    # ------------------------------------------------------------------ one component
    def component_profile(self, j: int):
        """Return ``c -> D_prof(c) - D_min`` for component ``j`` in problem order, warm-started.

        ``n_theta`` is the residual.
        """
        k = self.p.n_theta
        state = {"x": None}
        if j == k:  # the residual: s_e fixed, every theta free

            def prof(c: float) -> float:
                x0 = self.theta_hat.copy() if state["x"] is None else state["x"]
                f, x = self._minimise(
                    lambda th: self.dev_abs(th, c),
                    np.maximum(x0, _FLOOR),
                    [(0.0, None)] * k,
                    lambda th: self.dev_abs_grad(th, c)[:2],
                )
                state["x"] = x
                return f - self.d_min

            return prof
        others = [i for i in range(k) if i != j]

        def prof(c: float) -> float:
            if state["x"] is None:
                x0 = np.r_[np.log(self.s2e_hat), self.theta_hat[others]]
            else:
                x0 = state["x"]

            def fun(x):
                s2e = np.exp(x[0])
                th = np.empty(k)
                th[others] = x[1:]
                th[j] = np.sqrt(c / s2e)
                return self.dev_abs(th, s2e)

            def fun_grad(x):
                # x = (log s_e, the other theta); theta_j = sqrt(c / s_e), so
                # d theta_j / d log s_e = -theta_j / 2
                s2e = np.exp(x[0])
                th = np.empty(k)
                th[others] = x[1:]
                th[j] = np.sqrt(c / s2e)
                f, gt, gs = self.dev_abs_grad(th, s2e)
                return f, np.r_[gs * s2e - 0.5 * th[j] * gt[j], gt[others]]

            ls = float(np.log(self.s2e_hat))
            bounds = [(ls - 40.0, ls + 40.0)] + [(0.0, None)] * len(others)
            f, x = self._minimise(fun, np.r_[x0[0], np.maximum(x0[1:], _FLOOR)], bounds, fun_grad)
            state["x"] = x
            return f - self.d_min

        return prof

    # ------------------------------------------------------------------ a coefficient
    def ratio_profile(self, tau_w: np.ndarray, err_w: np.ndarray):
        """Return ``r -> D_prof(r) - D_min`` for ``r = tau / (tau + err)``.

        ``tau = tau_w . s`` and ``err = err_w . s`` over the components ``s`` in problem order
        (residual last); ``tau_w`` and ``err_w`` have disjoint supports, ``tau_w`` none on the
        residual.
        """
        k = self.p.n_theta
        tau_idx = np.flatnonzero(tau_w[:k] > 0)
        free = np.array([i for i in range(k) if i not in set(tau_idx)], dtype=np.int64)
        nt = tau_idx.size
        state = {"x": None}

        def build(x, c):
            th2 = np.zeros(k)
            th2[free] = np.square(x[: free.size])
            err = float(err_w[:k] @ th2 + err_w[k])  # relative to s_e
            tot = c * err
            if nt == 1:
                th2[tau_idx] = tot / tau_w[tau_idx]
            else:
                w = np.abs(x[free.size :]) + 1e-12
                w = w / w.sum()
                th2[tau_idx] = tot * w / tau_w[tau_idx]
            return np.sqrt(th2)

        def grad(x, c):
            """Value and gradient in ``x`` by the chain rule through ``build``."""
            th = build(x, c)
            f, g = self.dev_rel_grad(th)
            th_t = th[tau_idx]
            if not np.isfinite(f):
                return f, np.zeros(x.size)
            if not np.all(th_t > 0):  # d / d theta^2 needs theta > 0: differences there
                return f, _forward_diff(lambda v: self.dev_rel(build(v, c)), x, f)
            nf = free.size
            t = g[tau_idx] / (2.0 * th_t)  # d D / d theta^2 of the universe-score components
            a = np.abs(x[nf:]) + 1e-12
            w = a / a.sum() if nt > 1 else np.ones(1)
            xf = x[:nf]
            gx = np.empty(x.size)
            # theta_f = |x_f|, and through err: d theta_tau^2 / d x_f = 2 c err_w_f x_f w / tau_w
            gx[:nf] = g[free] * np.where(xf < 0, -1.0, 1.0) + 2.0 * c * err_w[free] * xf * float(
                t @ (w / tau_w[tau_idx])
            )
            if nt > 1:  # theta_tau^2 = tot w / tau_w, w = a / sum(a), a = |x_w| + 1e-12
                tot = c * (float(err_w[free] @ np.square(xf)) + float(err_w[k]))
                s = t * tot / tau_w[tau_idx]  # d D / d w
                gx[nf:] = (s - float(s @ w)) / a.sum() * np.where(x[nf:] < 0, -1.0, 1.0)
            return f, gx

        def prof(r: float) -> float:
            c = r / (1.0 - r)
            if state["x"] is None:
                x0 = np.r_[self.theta_hat[free], np.ones(nt if nt > 1 else 0)]
            else:
                x0 = state["x"]
            bounds = [(0.0, None)] * free.size + [(0.0, 1.0)] * (nt if nt > 1 else 0)
            x0 = np.r_[np.maximum(x0[: free.size], _FLOOR), np.maximum(x0[free.size :], 1e-6)]
            f, x = self._minimise(
                lambda x: self.dev_rel(build(x, c)), x0, bounds, lambda x: grad(x, c)
            )
            state["x"] = x
            return f - self.d_min

        return prof


def _forward_diff(fun, x: np.ndarray, f0: float) -> np.ndarray:
    """Forward-difference gradient (scipy's default step for L-BFGS-B), where the chain rule cannot go."""
    g = np.zeros(x.size)
    for i in range(x.size):
        e = x.copy()
        e[i] += 1e-8
        g[i] = (fun(e) - f0) / 1e-8
    return g


def _side(h, t_hat: float, h_hat: float, t_guess: float, direction: float, span: float, xtol):
    """Find where ``h`` crosses 0 on one side of ``t_hat``; None if it stays below 0 over ``span``.

    ``h`` is the signed root deviance minus the cut: ``h_hat`` < 0 at ``t_hat``, rising away
    from it. Secant steps from ``t_guess`` until the crossing is bracketed, then Brent's
    method.
    """
    memo: dict[float, float] = {t_hat: h_hat}  # at the estimate the profile is D_min itself

    def hh(t: float) -> float:
        if t not in memo:
            memo[t] = h(t)
        return memo[t]

    ta, ha = t_hat, h_hat
    tb = t_guess
    if not np.isfinite(tb) or (tb - t_hat) * direction <= 1e-3:
        tb = t_hat + 0.5 * direction
    limit = t_hat + direction * span
    if (tb - limit) * direction > 0:
        tb = limit
    hb = hh(tb)
    while hb < 0:
        if (tb - limit) * direction >= 0:
            return None
        step = abs(tb - ta)
        slope = (hb - ha) / (tb - ta)
        if slope * direction > 0:  # secant extrapolation, 1.2 to 4 times the last step
            d = min(max(abs(hb / slope), 1.2 * step), 4.0 * step)
        else:
            d = 2.0 * step
        ta, ha = tb, hb
        tb = tb + direction * d
        if (tb - limit) * direction > 0:
            tb = limit
        hb = hh(tb)
    a, b = (ta, tb) if ta < tb else (tb, ta)
    return float(sopt.brentq(hh, a, b, xtol=xtol, rtol=1e-10, maxiter=100))


def _signed(prof, crit: float):
    z = np.sqrt(crit)

    def h(t: float) -> float:
        d = prof(t)
        return np.sqrt(max(d, 0.0)) - z

    return h


def component_interval(
    prof_factory, est: float, scale: float, prob: float, residual: bool, guess=(np.nan, np.nan)
):
    """Return the profile interval of one component (estimate ``est``).

    ``scale`` is a positive size of the data's variance, used when ``est`` is 0; ``guess``
    rough bounds to start from, e.g. Wald.
    """
    crit = float(stats.chi2.ppf(prob, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        g_lo, g_hi = np.log(guess[0]), np.log(guess[1])
    if est <= 0:
        lower = 0.0
        lc = np.log(max(scale, 1e-300)) - 12.0
        g_hi = np.nan if not np.isfinite(g_hi) else g_hi
    else:
        lc = np.log(est)
        lower = None
        # the test at 0 gets its own profile: its optimum (the component's variance moved
        # into the others) is a poor warm start near the estimate (on SWE-bench the profile
        # at 0.0184 came out 11.2 after it, 4.60 from the estimate side)
        if not residual and prof_factory()(0.0) <= crit:
            lower = 0.0
        prof_lo = prof_factory()
        if lower is None:
            h = _signed(lambda t: prof_lo(np.exp(t)), crit)
            t = _side(h, lc, -np.sqrt(crit), g_lo, -1.0, 60.0, 1e-5)
            lower = 0.0 if t is None else float(np.exp(t))
    prof_hi = prof_factory()
    h = _signed(lambda t: prof_hi(np.exp(t)), crit)
    t = _side(h, lc, -np.sqrt(crit), g_hi, 1.0, 60.0 if est > 0 else 40.0, 1e-5)
    upper = np.inf if t is None else float(np.exp(t))
    return lower, upper


def ratio_interval(prof_factory, est: float, prob: float, guess=(np.nan, np.nan)):
    """Profile interval of a coefficient in [0, 1] (search on the logit scale)."""
    crit = float(stats.chi2.ppf(prob, 1))
    if not np.isfinite(est):
        return np.nan, np.nan
    eps = 1e-9
    e = min(max(est, eps), 1 - eps)
    le = np.log(e / (1 - e))
    out = []
    for sign, g in zip((-1.0, 1.0), guess, strict=True):
        prof = prof_factory()
        h = _signed(lambda t, prof=prof: prof(1.0 / (1.0 + np.exp(-t))), crit)
        with np.errstate(divide="ignore", invalid="ignore"):
            tg = np.log(g / (1 - g)) if 0 < g < 1 else np.nan
        t = _side(h, le, -np.sqrt(crit), tg, sign, 40.0, 1e-6)
        if t is None:
            out.append(0.0 if sign < 0 else 1.0)
        else:
            out.append(float(1.0 / (1.0 + np.exp(-t))))
    return out[0], out[1]
