"""The optimiser both maximum-likelihood engines share: L-BFGS-B, Newton polish, profile intervals.

A likelihood object offers ``value(x)``, ``value_grad(x)``,
``value_grad_hess(x)``, a warm start ``warm`` (an array updated in place
between evaluations), and ``newton_ok`` (whether its Hessian is good enough
for Newton steps): the crossed model's quadrature likelihood
(:class:`._crossed._Lik`) and the Laplace approximation
(:class:`._laplace.Laplace`) both do.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy import optimize
from scipy import stats

__all__ = ["maximise", "newton_polish", "profile_interval"]


def maximise(
    lik: Any,
    x0: np.ndarray,
    free: np.ndarray,
    bounds: list[tuple[float, float]],
    newton: bool = True,
    lbfgs: bool = True,
) -> tuple[np.ndarray, float, bool, str]:
    """Maximise over the ``free`` coordinates of ``x`` from ``x0``: L-BFGS-B, then Newton polish.

    ``lbfgs=False`` (a warm start close to the optimum, as in a profile) goes
    straight to Newton and falls back to L-BFGS-B only if Newton fails.
    """
    x = x0.astype(float).copy()
    idx = np.flatnonzero(free)
    use_newton = newton and lik.newton_ok
    if use_newton and not lbfgs:
        xn, v, ok_n = newton_polish(lik, x, idx, bounds, steps=30)
        if ok_n:
            return xn, v, True, "Newton"

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        x[idx] = z
        v, g = lik.value_grad(x)
        if not np.isfinite(v):
            return 1e300, np.zeros(idx.size)
        return -v, -g[idx]

    res = optimize.minimize(
        fun,
        x[idx],
        jac=True,
        method="L-BFGS-B",
        bounds=[bounds[i] for i in idx],
        options={"maxiter": 2000, "ftol": 1e-13, "gtol": 1e-7},
    )
    x[idx] = res.x
    ok, msg = bool(res.success), str(res.message)
    if use_newton:
        x, v, ok_n = newton_polish(lik, x, idx, bounds)
        ok = ok or ok_n
        if ok_n:
            msg = "Newton decrement below 1e-8"
    else:
        v = lik.value(x)
    return x, v, ok, msg


def newton_polish(
    lik: Any, x: np.ndarray, idx: np.ndarray, bounds: list[tuple[float, float]], steps: int = 8
) -> tuple[np.ndarray, float, bool]:
    """Newton steps with backtracking on the free coordinates; True when the Newton decrement is tiny.

    A coordinate held at its bound (a scale at zero) is left out of the step.
    """
    lo = np.array([bounds[i][0] for i in idx])
    hi = np.array([bounds[i][1] for i in idx])
    v, g, H = lik.value_grad_hess(x)
    for _ in range(steps):
        gi = g[idx]
        Hi = H[np.ix_(idx, idx)]
        act = ~(((x[idx] <= lo + 1e-9) & (gi < 0)) | ((x[idx] >= hi - 1e-9) & (gi > 0)))
        step = np.zeros(idx.size)
        try:
            step[act] = np.linalg.solve(-Hi[np.ix_(act, act)], gi[act])
        except np.linalg.LinAlgError:
            return x, v, False
        dec = float(gi @ step)
        if not np.isfinite(dec) or dec < 0:  # not an ascent direction: the Hessian is not negative definite
            return x, v, False
        if dec < 1e-8:  # predicted gain below 1e-8 log-likelihood units
            return x, v, True
        t = 1.0
        while t > 1e-4:
            xn = x.copy()
            xn[idx] = np.clip(x[idx] + t * step, lo, hi)
            vn, gn, Hn = lik.value_grad_hess(xn)
            if np.isfinite(vn) and vn >= v - 1e-12:
                x, v, g, H = xn, vn, gn, Hn
                break
            t /= 2
        else:
            # no gain along the Newton step: converged up to the quadrature's consistency
            # between value and (fixed-node) gradient if the predicted gain is small
            return x, v, dec < 1e-5
    return x, v, False



def profile_interval(
    lik: Any, x_hat: np.ndarray, ll: float, j: int, bounds: list, prob: float, se: float
) -> tuple[float, float]:
    """Profile-likelihood interval of ``exp(x[j])``: signed root deviance = -+z, found by secant steps.

    ``lik`` keeps its warm start in ``warm`` (restored between the two sides).
    """
    zq = math.sqrt(stats.chi2.ppf(prob, 1))
    free = np.ones(x_hat.size, bool)
    free[j] = False
    v_hat = x_hat[j]
    b_save = lik.warm.copy()
    se = se if np.isfinite(se) and se > 1e-3 else 0.3
    def root(v: float, x_start: np.ndarray) -> tuple[float, np.ndarray]:
        xs = x_start.copy()
        xs[j] = v
        x, val, _, _ = maximise(lik, xs, free, bounds, lbfgs=False)
        dev = max(2.0 * (ll - val), 0.0)
        return math.copysign(math.sqrt(dev), v - v_hat), x

    out = []
    for sign in (-1.0, 1.0):
        lik.warm[:] = b_save
        target = sign * zq
        edge = bounds[j][0] if sign < 0 else bounds[j][1]
        v0, r0, x0 = v_hat, 0.0, x_hat
        v1 = v_hat + sign * zq * se
        if sign < 0 and v_hat - 2.0 * zq * se < edge:
            v1 = edge  # the Wald interval reaches zero: try the boundary first
        v1 = max(min(v1, bounds[j][1]), bounds[j][0])
        r1, x1 = root(v1, x0)
        found = np.nan
        for _ in range(30):
            if abs(r1 - target) < 1e-3:
                found = v1
                break
            if abs(v1 - edge) < 1e-9 and abs(r1) < abs(target):
                found = -np.inf if sign < 0 else np.inf  # the profile never reaches the cut-off
                break
            slope = (r1 - r0) / (v1 - v0) if v1 != v0 else 0.0
            if not np.isfinite(slope) or slope <= 0:
                v2 = v1 + sign * se
            else:
                v2 = v1 + (target - r1) / slope
            # stay on the right side of the estimate and inside the bounds
            v2 = v_hat + sign * max(sign * (v2 - v_hat), 1e-6)
            v2 = max(min(v2, bounds[j][1]), bounds[j][0])
            v0, r0, x0 = v1, r1, x1
            v1 = v2
            r1, x1 = root(v1, x0)
        out.append(found)
    lik.warm[:] = b_save
    lo = 0.0 if out[0] == -np.inf else math.exp(out[0]) if np.isfinite(out[0]) else np.nan
    hi = np.inf if out[1] == np.inf else math.exp(out[1]) if np.isfinite(out[1]) else np.nan
    return lo, hi
