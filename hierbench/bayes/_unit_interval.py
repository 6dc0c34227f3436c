"""A likelihood for scores in [0, 1] with exact 0s and 1s: the zero-one-inflated beta with a common mean.

The fractional logit of the maximum-likelihood half assumes only the mean
model ``E[score] = expit(eta)``; a Bayesian model needs a likelihood. This
one keeps that mean exactly. A run's score is

* at a bound with probability ``zero_one``, then 1 with probability
  ``mu = expit(eta)`` and 0 otherwise;
* else ``Beta(mu phi, (1 - mu) phi)``, whose mean is also ``mu``;

so ``E[score] = mu`` whatever ``zero_one`` and ``phi``, and the coefficients
keep the fractional logit's meaning. A binary score is the special case
``zero_one = 1`` (the binomial model). The likelihood factorises: ``zero_one``
is informed by how many scores sit at the bounds and by nothing else, so
however the share of bound scores varies between tasks (METR mixes
pass/fail tasks with graded ones), it cannot bias ``eta``; ``phi`` is the
precision of the scores strictly inside (0, 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

__all__ = ["draw_scores", "zoib_likelihood", "zoib_logp"]

#: scores are clipped this far inside (0, 1) in the beta branch, which a bound score never takes
_EPS = 1e-12


def zoib_logp(value: Any, eta: Any, phi: Any, zero_one: Any) -> Any:
    """Log density of each score (a mixed measure: point masses at 0 and 1, a beta density inside)."""
    log_mu, log_1m = -pt.softplus(-eta), -pt.softplus(eta)
    at_bound = pt.or_(pt.le(value, 0.0), pt.ge(value, 1.0))
    bound = pt.log(zero_one) + pt.switch(pt.ge(value, 1.0), log_mu, log_1m)
    mu = pt.sigmoid(eta)
    a, b = mu * phi, (1.0 - mu) * phi
    v = pt.clip(value, _EPS, 1.0 - _EPS)
    inside = (
        pt.log1p(-zero_one) + (a - 1.0) * pt.log(v) + (b - 1.0) * pt.log1p(-v)
        - (pt.gammaln(a) + pt.gammaln(b) - pt.gammaln(phi))
    )  # fmt: skip
    return pt.switch(at_bound, bound, inside)


def draw_scores(eta: np.ndarray, phi: Any, zero_one: Any, gen: np.random.Generator) -> np.ndarray:
    """Scores drawn from the likelihood (``eta``, ``phi`` and ``zero_one`` broadcast together).

    Examples
    --------
    >>> s = draw_scores(np.zeros(20_000), 5.0, 0.5, np.random.default_rng(0))
    >>> round(float(s.mean()), 2), round(float(np.isin(s, [0.0, 1.0]).mean()), 2)
    (0.5, 0.5)
    """
    eta, phi, zero_one = np.broadcast_arrays(np.asarray(eta, float), np.asarray(phi, float), np.asarray(zero_one, float))
    mu = 1.0 / (1.0 + np.exp(-eta))
    bound = gen.random(eta.shape) < zero_one
    one = gen.random(eta.shape) < mu
    inside = gen.beta(np.maximum(mu * phi, 1e-300), np.maximum((1.0 - mu) * phi, 1e-300))
    return np.where(bound, one.astype(float), inside)


def zoib_likelihood(eta_obs: Any, phi: Any, zero_one: Any, scores: np.ndarray) -> None:
    """``y(obs)``: every run's score under the zero-one-inflated beta (data ``score_obs``)."""
    obs = pm.Data("score_obs", np.asarray(scores, dtype=float), dims="obs")

    def random(eta: Any, phi: Any, zo: Any, rng: np.random.Generator | None = None, size: Any = None) -> np.ndarray:
        eta = np.asarray(eta)
        return draw_scores(np.broadcast_to(eta, eta.shape if size is None else size), phi, zo, rng)

    pm.CustomDist("y", eta_obs, phi, zero_one, logp=zoib_logp, random=random, observed=obs, dims="obs")
