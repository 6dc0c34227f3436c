"""Adaptive Gauss-Hermite quadrature of a cell's agent x task effect: the shared numerics.

For a cell with ``n`` runs, ``y`` successes and linear predictor ``eta``, the
effect ``x ~ N(0, sd)`` has the unnormalised posterior
``N(x; 0, sd) Binomial(y | n, expit(eta + x))``. Its nodes are placed at the
mode ``m`` (a normal-approximation start and damped Newton steps) and scaled
by the curvature ``s``: ``z_q = m + s u_q``. The model's likelihood
(:mod:`hierbench.bayes._ops._agq_op`) sums the node terms; the posterior summaries
(:mod:`hierbench.metrics._crossed`) normalise them into node masses. Both use
the functions here, so the two can never place nodes differently. No PyMC is
imported: the metrics work on a saved fit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "NEWTON_MAX_STEP",
    "NEWTON_STEPS",
    "NEWTON_TOL",
    "cell_modes",
    "expit_pair",
    "gauss_hermite",
    "logit_normal_expectation",
    "node_terms",
    "place_nodes",
    "population_nodes",
]

#: Newton steps towards each cell's mode: at most NEWTON_STEPS, stopping once every
#: step of a block is below NEWTON_TOL. A converged mode makes the node placement a
#: smooth function of (eta, sd), so the likelihood's gradient (which differentiates
#: through the placement, by the implicit function theorem) is the exact derivative
#: of its value. With a fixed 4 steps and the nodes held fixed in the gradient, the
#: gradient of a cell whose effect spread is large was off by up to 30%: not the
#: derivative of any function, so NUTS's energy error did not shrink with the step
#: size and a METR chain that wandered to sd_agent_task = 7.9 in warmup stayed there
#: (step size 1.6e-4, 1,023 steps per draw, 394 nats below the other chains).
#: Newton's convergence is quadratic, so once a step is under 1e-6 the mode is far closer than
#: that: within 3e-13 of the fully converged mode over 1-100 runs, effect spreads 0.1-5 and
#: logits -8..7 (6,000 cells each), and within 1e-10 of scipy's root in a test. The extra step
#: that 1e-10 waited for cost 15-20% of the crossed gradient (12 x 500 x 10, at draws around
#: the start: median 844-935 against 1,089-1,126 us per evaluation, three runs each).
NEWTON_STEPS = 50
NEWTON_TOL = 1e-6
#: JAX traces the loop, so it runs a fixed number of steps (no early exit)
NEWTON_STEPS_TRACED = 12
NEWTON_MAX_STEP = 1.0  # logits; a Newton step is clipped to this


def gauss_hermite(n_quad: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights for E[f(Z)], Z ~ N(0, 1): ``sum(w * f(u))``."""
    x, w = np.polynomial.hermite_e.hermegauss(n_quad)
    return x, w / np.sqrt(2.0 * np.pi)


#: spacing and half-width (in SDs) of the population rule, see :func:`population_nodes`
POPULATION_STEP = 0.2
POPULATION_HALF_WIDTH = 8.6


def population_nodes() -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights for ``E[f(Z)]``, ``Z ~ N(0, 1)``: the one population rule.

    Every expectation over a new task from the population (a logit-normal
    integral: ``mean_new_task``, population pass^k / pass@k, variance
    components on the probability scale) uses this rule, so they agree to
    its accuracy. It is the trapezoid rule with step 0.2 on [-8.6, 8.6] (87
    nodes). For an integrand analytic in a strip, the trapezoid rule with a
    Gaussian weight converges geometrically in the step; ``expit(m + s z)``
    has its nearest poles at imaginary distance ``pi / s``, which at a logit
    spread ``s = 5`` is still well resolved at step 0.2 (error <= 3e-6 for
    ``E[expit(m + s Z)^k]``, ``|m| <= 8``, ``s <= 5``, ``k <= 50``, against
    ``scipy.integrate.quad``; see ``tests/test_bayes_population.py``).
    Gauss-Hermite rules of the same size are far worse at large spreads
    (31 nodes: 6e-3, 81 nodes: 3e-4) because their nodes spread out to
    where the integrand is flat. The truncation beyond 8.6 SDs loses
    under 1e-17 of the mass.

    Examples
    --------
    >>> u, w = population_nodes()
    >>> u.size, round(float(w.sum()), 12), round(float((w * u**2).sum()), 12)
    (87, 1.0, 1.0)
    """
    n = round(2 * POPULATION_HALF_WIDTH / POPULATION_STEP) + 1
    u = np.linspace(-POPULATION_HALF_WIDTH, POPULATION_HALF_WIDTH, n)
    w = POPULATION_STEP * np.exp(-0.5 * u**2) / np.sqrt(2.0 * np.pi)
    return u, w


def logit_normal_expectation(loc: Any, scale: Any, f: Any = None) -> np.ndarray:
    """``E[f(expit(loc + scale Z))]``, ``Z ~ N(0, 1)``, by :func:`population_nodes`.

    ``loc`` and ``scale`` broadcast together; ``f`` defaults to the identity
    (the logit-normal mean).

    Examples
    --------
    >>> round(float(logit_normal_expectation(0.0, 2.0)), 12)  # symmetric about 1/2
    0.5
    """
    loc, scale = np.broadcast_arrays(np.asarray(loc, dtype=float), np.asarray(scale, dtype=float))
    # each distinct (loc, scale) pair once: a design's rows share few linear predictors (a
    # complex key sorts as the pairs do, far faster than unique rows; NaN pairs, merged, give NaN)
    key, back = np.unique(loc.ravel() + 1j * scale.ravel(), return_inverse=True)
    u, w = population_nodes()
    e = key.real[:, None] + key.imag[:, None] * u
    p = _expit_from(e, np.exp(-np.abs(e)), np)
    v = p if f is None else f(p)
    return (v * w).sum(-1)[back.ravel()].reshape(loc.shape)


def expit_pair(e: Any, xp: Any = np) -> tuple[Any, Any]:
    """``(expit(e), softplus(e))`` from one exponential, stable for any ``e``."""
    t = xp.exp(-xp.abs(e))
    return _expit_from(e, t, xp), xp.maximum(e, 0.0) + xp.log1p(t)


def _expit_from(e: Any, t: Any, xp: Any) -> Any:
    """``expit(e)`` given ``t = exp(-|e|)``."""
    return xp.where(e >= 0, 1.0 / (1.0 + t), t / (1.0 + t))


def node_terms(
    y: Any, n: Any, eta: Any, sd: Any, n_quad: int, newton_steps: int = NEWTON_STEPS, xp: Any = np
) -> tuple[Any, Any, Any, Any]:
    """Centre the nodes of each cell and evaluate their log terms.

    ``y``, ``n``, ``eta`` and ``sd`` broadcast together (``sd`` may be a
    scalar). Returns ``z`` (node effects), ``sig`` (``expit(eta + z)``), ``lq``
    (log of ``w_q / phi(u_q) N(z_q; 0, sd) Binomial(y | n, expit(eta + z_q))``
    without the binomial coefficient and the ``1 / sd`` of the normal), each
    with a trailing node axis, and ``s`` (the curvature scale per cell).
    ``xp`` is the array namespace (NumPy, or ``jax.numpy``).
    """
    z, sig, lq, s, _, _ = place_nodes(y, n, eta, sd, n_quad, newton_steps, xp)
    return z, sig, lq, s


def place_nodes(y: Any, n: Any, eta: Any, sd: Any, n_quad: int, newton_steps: int, xp: Any) -> tuple:
    """:func:`node_terms` and also each cell's mode ``m`` and ``expit(eta + m)``."""
    u, w = gauss_hermite(n_quad)
    c = np.log(w) + 0.5 * u**2  # w_q / phi(u_q), on the log scale
    y, n, eta = (xp.asarray(v, dtype=float) for v in (y, n, eta))
    prec = 1.0 / xp.asarray(sd, dtype=float) ** 2
    m, p, s = cell_modes(y, n, eta, prec, newton_steps, xp)
    z = m[..., None] + s[..., None] * u
    e = eta[..., None] + z
    sig, sp = expit_pair(e, xp)
    lq = y[..., None] * e - n[..., None] * sp - 0.5 * z**2 * prec[..., None] + c
    return z, sig, lq, s, m, p


def cell_modes(y: Any, n: Any, eta: Any, prec: Any, newton_steps: int = NEWTON_STEPS, xp: Any = np) -> tuple:
    """Mode ``m`` of each cell's effect, ``expit(eta + m)`` and the curvature scale ``s``: the node placement.

    Starts from the normal approximation and takes clipped Newton steps
    (at most ``newton_steps``, stopping once every step of the array is below
    ``NEWTON_TOL``; JAX runs a fixed ``NEWTON_STEPS_TRACED``). ``y``, ``n``,
    ``eta`` and ``prec = 1 / sd^2`` are float arrays that broadcast together.

    Examples
    --------
    >>> m, p, s = cell_modes(np.array([3.0]), np.array([4.0]), np.array([0.0]), np.array([1.0]))
    >>> bool(abs(3.0 - 4.0 * p[0] - m[0]) < 1e-10)  # the score of the mode is zero
    True
    """
    ph = (y + 0.5) / (n + 1.0)
    info = n * ph * (1.0 - ph)
    m = (xp.log(ph) - xp.log1p(-ph) - eta) * info / (info + prec)
    traced = xp is not np
    for _ in range(min(newton_steps, NEWTON_STEPS_TRACED) if traced else newton_steps):
        e = eta + m
        p = _expit_from(e, xp.exp(-xp.abs(e)), xp)
        g = y - n * p - m * prec
        h = -n * p * (1.0 - p) - prec
        step = xp.clip(g / h, -NEWTON_MAX_STEP, NEWTON_MAX_STEP)
        m = m - step
        if not traced and (np.size(step) == 0 or np.max(np.abs(step)) < NEWTON_TOL):
            break
    e = eta + m
    p = _expit_from(e, xp.exp(-xp.abs(e)), xp)
    return m, p, 1.0 / xp.sqrt(n * p * (1.0 - p) + prec)
