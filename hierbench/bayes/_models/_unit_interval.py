"""A proper likelihood for scores in [0, 1] with exact 0s and 1s.

A proper likelihood for scores in [0, 1] with exact 0s and 1s, whose mean is estimated as robustly as
the fractional logit's.

A run of task ``t`` with linear predictor ``eta`` has the density

    p(y) = exp(theta y) / Z_t(theta)   with respect to   delta_0 + delta_1 + w_t dy on (0, 1),

``theta = kappa(w_t) eta``: an exponential family with sufficient statistic
``y`` (point masses at 0 and 1, and for ``w_t > 0`` a continuous part on
(0, 1): the continuous Bernoulli of Loaiza-Ganem & Cunningham (2019) with
atoms at the bounds). Its normaliser is ``Z = 1 + e^theta + w (e^theta - 1) / theta``, so

    log Z = softplus(theta) + log1p(w r(theta)),   r(theta) = tanh(theta / 2) / theta,

and its mean ``E[y] = d log Z / d theta = expit(theta) + w r'(theta) / (1 + w r(theta))``,
whose slope at ``theta = 0`` is ``1/4 - w / (12 + 6 w)``. The scale
``kappa(w) = (3 + 1.5 w) / (3 + 0.5 w)`` (1 for ``w = 0``, at most 3) makes
the slope in ``eta`` the logit's 1/4 at mean 1/2 on every task, so one
normal distribution of task effects fits pass/fail and graded tasks alike
near the middle (without it, METR's graded tasks needed effects three times
as large and ``sd[1|task]`` came out at 7.9). A pass/fail task has ``w_t =
0``: the Bernoulli with ``logit p = eta``.

``eta`` is **not** the logit away from mean 1/2 on a task with ``w_t > 0``:
kappa matches only the slope at the middle. Inverting the mean exactly, a
mean of 0.01 (logit -4.6) needs ``eta`` -5.2 at ``w`` = 0.2, -7.4 at 1 and
-9.5 at 3; a mean of 0.002 (logit -6.2) needs -9.4, -17.0 and -22.4. So the
fit's coefficients, random-term sds and agents' variance are on this
family's own linear-predictor scale, stretched against the logit in the
tails (METR's continuous scores: agents' variance 45.6 here against the
quasi-binomial fit's 11.0 logit^2, while both halves' mean scores agree
within about 2 points). Compare the two halves on the points scale
(``mean_response``, ``average_marginal_effects``), not on ``eta``.

Why this family: the fractional logit of the maximum-likelihood half assumes
nothing but a mean model, and its estimating equation ``sum x (y - mean) =
0`` reproduces the data's means. A likelihood whose sufficient statistic is
the score keeps that property (the score of an exponential family is ``y -
E[y]``), however the scores spread inside the interval. The zero-one-inflated
beta does not: with one mean for its bound and interior parts, METR's graded
tasks (partial scores running well above their rate of full successes)
pulled each agent's mean score 0.01 to 0.03 above the task-level bootstrap's,
twice its posterior sd, and a task-level gap between the parts overshot the
other way. ``w_t`` (the weight of the interior, per task) sets how often a
run of the task ends strictly inside (0, 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from .._ops._unit_interval_op import unit_interval_logp
from .._registry import make_prior

__all__ = ["draw_scores", "kappa", "tilt_logp", "unit_interval_likelihood"]

#: |eta| below this uses the series of r(eta) = tanh(eta / 2) / eta (its value at 0 is 1/2)
_SMALL = 1e-4


def _r(eta: Any) -> Any:
    safe = pt.switch(pt.lt(pt.abs(eta), _SMALL), _SMALL, eta)
    return pt.switch(pt.lt(pt.abs(eta), _SMALL), 0.5 - eta**2 / 24.0, pt.tanh(safe / 2.0) / safe)


def kappa(interior: Any) -> Any:
    """``theta / eta``: the scale that gives the mean a slope of 1/4 in ``eta`` at 1/2."""
    return (3.0 + 1.5 * interior) / (3.0 + 0.5 * interior)


def tilt_logp(value: Any, eta: Any, interior: Any) -> Any:
    """Log density of each score with respect to ``delta_0 + delta_1 + dy`` (``interior`` = ``w``).

    The PyTensor graph of the density; the model evaluates the same density
    through the fused Op of :mod:`hierbench.bayes._ops._unit_interval_op`, which is
    tested against this graph.
    """
    eta = kappa(interior) * eta
    log_z = pt.softplus(eta) + pt.log1p(interior * _r(eta))
    inside = pt.and_(pt.gt(value, 0.0), pt.lt(value, 1.0))
    return eta * value - log_z + pt.switch(inside, pt.log(interior), 0.0)


def draw_scores(eta: Any, interior: Any, gen: np.random.Generator) -> np.ndarray:
    """Scores drawn from the family (``eta`` and ``interior`` broadcast together).

    Examples
    --------
    >>> s = draw_scores(np.zeros(40_000), 2.0, np.random.default_rng(0))  # P(inside) = w / (2 + w)
    >>> round(float(s.mean()), 2), round(float(((s > 0) & (s < 1)).mean()), 2)
    (0.5, 0.5)
    """
    eta, w = np.broadcast_arrays(np.asarray(eta, dtype=float), np.asarray(interior, dtype=float))
    eta = kappa(w) * eta
    a = np.abs(eta)
    # masses relative to the largest of 1 and e^eta: atoms, and the interior w (e^eta - 1) / eta
    p0, p1 = np.exp(-np.maximum(eta, 0.0)), np.exp(np.minimum(eta, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        mid = w * np.where(a < 1e-8, np.exp(-np.maximum(eta, 0.0)), -np.expm1(-a) / a)
    u = gen.random(eta.shape) * (p0 + p1 + mid)
    v = gen.random(eta.shape)
    with np.errstate(invalid="ignore", divide="ignore"):  # inverse CDF of the interior, e^(eta y) on (0, 1)
        inside = np.where(a < 1e-8, v, np.log1p(v * np.expm1(eta)) / eta)
    return np.where(u < p0, 0.0, np.where(u < p0 + p1, 1.0, np.clip(inside, 1e-12, 1 - 1e-12)))


def unit_interval_likelihood(eta_obs: Any, obs_task: np.ndarray, scores: np.ndarray, pri: dict) -> None:
    """``y(obs)``: every run's score (data ``score_obs``), each task's interior weight ``interior(task)``."""
    obs = pm.Data("score_obs", np.asarray(scores, dtype=float), dims="obs")
    interior = make_prior("interior", pri["interior"], dims="task")

    def random(eta: Any, w: Any, rng: np.random.Generator | None = None, size: Any = None) -> np.ndarray:
        return draw_scores(np.broadcast_to(eta, np.shape(eta) if size is None else size), w, rng)

    def logp(value: Any, eta: Any, w: Any) -> Any:
        # tilt_logp's density, value and gradient in one compiled pass (see _unit_interval_op)
        return unit_interval_logp(value, eta, w)

    pm.CustomDist("y", eta_obs, interior[obs_task], logp=logp, random=random, observed=obs, dims="obs")
