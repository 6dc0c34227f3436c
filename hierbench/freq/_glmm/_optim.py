"""The optimiser both maximum-likelihood engines share: L-BFGS-B, Newton polish, profile intervals.

It also owns the rules both engines apply to where a fit ended: an estimate at an
optimiser bound (``at_bounds``), a scale at zero (``sd_at_zero``), a fit that is not
a maximum (``not_a_maximum``), and what the profile search tells the reader
(``profile_notes``).

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

from ..._base import warn_user
from ._warnings import MLConvergenceWarning
from ._warnings import SeparatedAgentWarning

__all__ = [
    "BOUND_TOL",
    "SD_AT_ZERO",
    "at_bounds",
    "maximise",
    "newton_polish",
    "not_a_maximum",
    "profile_interval",
    "profile_notes",
    "sd_at_zero",
    "stop_reason",
    "warn_not_a_maximum",
]

#: how close (in the optimiser's coordinates: logits, log sds) an estimate must be to a bound to count as at it
BOUND_TOL = 1e-3
#: an sd (logit scale) below this is estimated at zero. The optimiser's floor is 1e-4, but a fit whose
#: maximum is at zero stops anywhere from there to a few times it (1.1e-4 to 4.3e-4 in 121 simulated fits,
#: audit s76 G); an sd of 1e-3 moves no success probability by more than 1e-7
SD_AT_ZERO = 1e-3
#: the profile search's tolerance on the signed root deviance (and on the checks of its inner fits)
_ROOT_TOL = 1e-3
#: a profile value this far above the maximum means the fit is not at the maximum
_ABOVE_TOL = 1e-4


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


def at_bounds(x: np.ndarray, bounds: list[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Per coordinate of ``x``: at its lower bound, at its upper bound (within ``BOUND_TOL``)."""
    lo = np.array([b[0] for b in bounds])
    hi = np.array([b[1] for b in bounds])
    return x <= lo + BOUND_TOL, x >= hi - BOUND_TOL


def sd_at_zero(log_sd: np.ndarray) -> np.ndarray:
    """Whether each scale (given as log sd) is estimated at zero: sd below ``SD_AT_ZERO``."""
    return np.asarray(log_sd, dtype=float) <= math.log(SD_AT_ZERO)


def stop_reason(msg: str, at_bound: list[str]) -> str:
    """The optimiser's message with what was at a bound when it stopped (scipy's message can be empty)."""
    msg = msg.strip().rstrip(":").strip()
    where = f"{', '.join(at_bound)} at the optimiser's bound" if at_bound else "no estimate at a bound"
    if not msg or msg.upper() == "ABNORMAL":
        return f"L-BFGS-B's line search found no ascent; {where}"
    return f"{msg}; {where}" if at_bound else msg


def not_a_maximum(H: np.ndarray, V: np.ndarray, idx: np.ndarray, names: list[str]) -> str:
    """Why the fit is not at a maximum ("" when it is): ``-H`` not positive definite over ``idx``.

    ``H`` is the Hessian of the log-likelihood, ``V`` the covariance made from it, ``idx`` the
    coordinates checked (those not at a bound and no scale at zero), ``names`` every coordinate's.
    A negative (or NaN) variance among them is the same failure.
    """
    sub = -H[np.ix_(idx, idx)]
    d = np.diag(V)[idx]
    bad = [names[i] for i, v in zip(idx, d, strict=True) if not v > 0]
    try:
        np.linalg.cholesky(sub)
    except np.linalg.LinAlgError:
        pass
    else:
        if not bad:
            return ""
    eig = float(np.linalg.eigvalsh(sub).min()) if np.isfinite(sub).all() else np.nan
    return (
        "the observed information (minus the Hessian of the log-likelihood) at the estimate is not "
        f"positive definite (smallest eigenvalue {eig:.3g}"
        + (f"; a negative or undefined variance for {', '.join(bad)}" if bad else "")
        + ")"
    )


def warn_not_a_maximum(why: str, advice: str) -> None:
    """The warning of a fit that is not a maximum (``why`` from ``not_a_maximum``), with what to do."""
    warn_user(
        f"fit_crossed_ml: the fit did not reach a maximum: {why}. Where the optimiser stopped is a saddle "
        "point or an artefact of the approximation, so the standard errors, Wald intervals and covariance "
        f"are NaN (not 0) and converged is False. {advice}",
        MLConvergenceWarning,
    )


def _monotone(points: list[tuple[float, float]], sign: float, v_hat: float) -> bool:
    """Whether the signed root deviance grows away from the estimate over the points tried (``_ROOT_TOL``)."""
    pts = sorted((sign * (v - v_hat), sign * r) for v, r in points)
    top = -np.inf
    for _, s in pts:
        if s < top - _ROOT_TOL:
            return False
        top = max(top, s)
    return True


def _search(root, sign: float, v_hat: float, se: float, zq: float, edge: float, bounds_j: tuple, x_hat: np.ndarray,
            check) -> tuple[float, bool]:  # fmt: skip
    """One side's secant search; returns the bound found (NaN: none, +-inf: the profile never reaches it).

    ``check`` is None (the robust search: ``root`` already takes the better of two starts) or a
    function ``(v, r) -> bool`` that re-fits the bound found from the estimate; the second value
    is False when the search ran into trouble (a profile value above the maximum, a deviance
    that falls away from the estimate, or a bound the re-fit does not confirm).
    """
    target = sign * zq
    v0, r0, x0 = v_hat, 0.0, x_hat
    v1 = v_hat + sign * zq * se
    if sign < 0 and v_hat - 2.0 * zq * se < edge:
        v1 = edge  # the Wald interval reaches zero: try the boundary first
    v1 = max(min(v1, bounds_j[1]), bounds_j[0])
    r1, x1, ok = root(v1, x0)
    points = [(v_hat, 0.0), (v1, r1)]
    for _ in range(30):
        if not ok or (check is not None and not _monotone(points, sign, v_hat)):
            return np.nan, False
        if abs(r1 - target) < _ROOT_TOL:
            return v1, check is None or check(v1, r1)
        if abs(v1 - edge) < 1e-9 and abs(r1) < abs(target):
            return (-np.inf if sign < 0 else np.inf), True  # the profile never reaches the cut-off
        slope = (r1 - r0) / (v1 - v0) if v1 != v0 else 0.0
        if not np.isfinite(slope) or slope <= 0:
            v2 = v1 + sign * se
        else:
            v2 = v1 + (target - r1) / slope
        # stay on the right side of the estimate and inside the bounds
        v2 = v_hat + sign * max(sign * (v2 - v_hat), 1e-6)
        v2 = max(min(v2, bounds_j[1]), bounds_j[0])
        v0, r0, x0 = v1, r1, x1
        v1 = v2
        r1, x1, ok = root(v1, x0)
        points.append((v1, r1))
    return np.nan, check is None


def profile_interval(
    lik: Any, x_hat: np.ndarray, ll: float, j: int, bounds: list, prob: float, se: float, info: dict | None = None
) -> tuple[float, float]:
    """Profile-likelihood interval of ``exp(x[j])``: signed root deviance = -+z, found by secant steps.

    ``lik`` keeps its warm start in ``warm`` (restored between the two sides). Each side is
    first searched with every inner fit started from the previous point (fast). If that
    search fails, finds a profile value above the maximum ``ll`` or a deviance that falls
    away from the estimate, or if a re-fit from ``x_hat`` at the bound it found has a higher
    maximum, the side is searched again with each inner fit started both from ``x_hat``
    (warm start reset) and from the previous point, the better kept. A side with still no
    bound gets the Wald bound on the log scale (``exp(x_hat[j] -+ z se)``; NaN if ``se`` is
    not finite). A profile value above ``ll`` (the fit is not at the maximum) counts as
    deviance 0 in the second search. ``info``, if given, receives ``"redone"`` and
    ``"wald"`` (the sides, ``"lower"`` / ``"upper"``), ``"above"`` and ``"above_at"`` (the
    most a profile value rose above ``ll``, 0 if none did, and the sd where), and
    ``"edge_deviance"`` (the deviance at the upper bound when the profile never reaches the
    cut-off there; ``"edge"`` is that bound as an sd).
    """
    zq = math.sqrt(stats.chi2.ppf(prob, 1))
    free = np.ones(x_hat.size, bool)
    free[j] = False
    v_hat = x_hat[j]
    b_save = lik.warm.copy()
    se_wald = se
    se = se if np.isfinite(se) and se > 1e-3 else 0.3
    info = {} if info is None else info
    info.update(redone=[], wald=[], above=0.0, above_at=np.nan, edge_deviance=np.nan, edge=math.exp(bounds[j][1]))
    last: dict[str, float] = {}

    def fit(v: float, x_start: np.ndarray) -> tuple[np.ndarray, float]:
        xs = x_start.copy()
        xs[j] = v
        x, val, _, _ = maximise(lik, xs, free, bounds, lbfgs=False)
        return x, val

    def signed(v: float, val: float) -> float:
        last["dev"] = 2.0 * (ll - val)
        return math.copysign(math.sqrt(max(last["dev"], 0.0)), v - v_hat)

    def note(v: float, val: float) -> None:
        if val - ll > info["above"]:
            info["above"], info["above_at"] = val - ll, math.exp(v)

    def root(v: float, x_start: np.ndarray) -> tuple[float, np.ndarray, bool]:
        x, val = fit(v, x_start)
        note(v, val)
        return signed(v, val), x, val <= ll + _ABOVE_TOL

    def robust_root(v: float, x_start: np.ndarray) -> tuple[float, np.ndarray, bool]:
        x, val = fit(v, x_start)
        if x_start is not x_hat:
            warm = lik.warm.copy()
            lik.warm[:] = b_save
            xb, vb = fit(v, x_hat)
            if vb > val:
                x, val = xb, vb
            else:
                lik.warm[:] = warm
        note(v, val)
        return signed(v, val), x, True  # a value above the maximum counts as deviance 0 (and is reported)

    def check(v: float, r: float) -> bool:
        lik.warm[:] = b_save
        _, val = fit(v, x_hat)
        return not (val > ll - 0.5 * r * r and abs(signed(v, val) - r) >= _ROOT_TOL)

    out = []
    for sign, side in ((-1.0, "lower"), (1.0, "upper")):
        edge = bounds[j][0] if sign < 0 else bounds[j][1]
        lik.warm[:] = b_save
        found, fine = _search(root, sign, v_hat, se, zq, edge, bounds[j], x_hat, check)
        if not fine:
            info["redone"].append(side)
            lik.warm[:] = b_save
            found, _ = _search(robust_root, sign, v_hat, se, zq, edge, bounds[j], x_hat, None)
        if found == np.inf:
            info["edge_deviance"] = last["dev"]
        if np.isnan(found):
            info["wald"].append(side)
            found = v_hat + sign * zq * se_wald if np.isfinite(se_wald) and se_wald > 0 else np.nan
        out.append(found)
    lik.warm[:] = b_save
    lo = 0.0 if out[0] == -np.inf else math.exp(out[0]) if np.isfinite(out[0]) else np.nan
    hi = np.inf if out[1] == np.inf else math.exp(out[1]) if np.isfinite(out[1]) else np.nan
    return lo, hi


def profile_notes(
    names: list[str], infos: list[dict], at_infinity: np.ndarray, advice: str
) -> tuple[str, np.ndarray, bool]:
    """What the profile searches of the scales ``names`` tell the reader: warnings, a ``ci_detail`` suffix.

    Warned of: a profile value above the fit's maximum (the fit is not at the maximum); a
    side with no bound found (the Wald bound on the log scale stands in, said in the
    detail); a profile that never falls by the cut-off below the optimiser's upper bound
    (no upper limit). Where the profile is as high at that bound as at the estimate, the
    maximum likelihood estimate is at infinity: the caller reports it as NaN with a NaN
    interval, as an estimate that ended at its bound. ``at_infinity`` marks the scales
    already reported at their bound (skipped); ``advice`` says what to do about an
    irregular profile. Returns the suffix, the scales found at infinity, and whether the
    fit is not at the maximum.
    """
    where = "fit_crossed_ml"
    notes, wald = [], []
    rising = np.zeros(len(names), bool)
    above = False
    for k, (name, inf_, done) in enumerate(zip(names, infos, at_infinity, strict=True)):
        if done or not inf_:
            continue
        rising[k] = inf_["edge_deviance"] <= 2.0 * _ABOVE_TOL  # NaN: the profile reached its cut-off
        above |= bool(rising[k] or inf_["above"] > _ABOVE_TOL)
        if rising[k]:
            warn_user(
                f"{where}: the profile likelihood of {name} rises to the optimiser's upper bound "
                f"({inf_['edge']:g}; {-inf_['edge_deviance'] / 2:.3g} above the fit's maximum there): its maximum "
                "likelihood estimate lies at infinity, so it is reported as NaN with a NaN interval, and the fit "
                "is not at the maximum (converged is False; the other estimates are where the optimiser stopped). "
                "This happens when tasks (levels) are solved by every agent on every run or by none: the Bayesian "
                "model's prior keeps the spread finite",
                SeparatedAgentWarning,
            )
            continue
        if inf_["above"] > _ABOVE_TOL:
            warn_user(
                f"{where}: the profile likelihood of {name} reached a log-likelihood {inf_['above']:.3g} above the "
                f"fit's (at {name} = {inf_['above_at']:.4g}): the fit is not at the maximum (converged is False), "
                "and the interval is measured from it (the profile's values above it count as deviance 0)",
                MLConvergenceWarning,
            )
        if inf_["wald"]:
            wald.append(f"{name} ({' and '.join(inf_['wald'])})")
            notes.append(f"{name}'s {' and '.join(inf_['wald'])} bound: Wald on the log scale (no profile bound found)")
        if np.isfinite(inf_["edge_deviance"]):
            warn_user(
                f"{where}: the profile likelihood of {name} stays within the interval's cut-off up to the "
                f"optimiser's upper bound {inf_['edge']:g} (deviance {inf_['edge_deviance']:.3g} there), so its "
                "upper bound is infinite: the data set no upper limit on it, and its maximum likelihood estimate "
                "may lie at infinity. This happens when tasks (levels) are solved by every agent on every run or "
                "by none: the Bayesian model's prior keeps the spread finite",
                SeparatedAgentWarning,
            )
    if wald:
        warn_user(
            f"{where}: the profile-likelihood search found no bound for {', '.join(wald)}, even with every inner "
            "fit also started from the estimate; the Wald bound on the log scale stands in (said in ci_detail), "
            f"or NaN where the standard error is undefined. The profile may be irregular there: {advice}",
            MLConvergenceWarning,
        )
    return "".join(f"; {n}" for n in notes), rising, above
