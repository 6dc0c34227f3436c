"""Likelihoods of one design row given its linear predictor: binomial, fractional logit, ordinal.

Each family turns the linear predictor ``eta`` of the design rows (one row
per distinct cell, or per run when a covariate varies between runs) into the
summed log-likelihood and its first two derivatives in ``eta``, row by row:
what the Laplace approximation (:mod:`._laplace`) needs. A family may have
parameters of its own besides ``eta`` (the ordinal thresholds), carried as
``extra``.

- **binomial**: ``y_r`` successes in ``n_r`` runs, ``logit p = eta``.
- **fractional**: the Bernoulli form of the binomial with ``y_r`` the sum of
  scores in [0, 1] over ``n_r`` runs, divided by a dispersion ``phi``: the
  quasi-binomial (fractional-logit) quasi-likelihood of Papke & Wooldridge
  (1996), whose mean model ``E[score] = expit(eta)`` is all it assumes.
- **ordinal**: the cumulative logit, ``P(grade <= k) = expit(theta_k - eta)``
  with increasing thresholds ``theta_1 < ... < theta_{K-1}`` (the
  parameterisation of R's ``ordinal::clmm``: a larger ``eta`` moves grades
  up), parameterised as ``theta_1`` and the logs of the gaps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import field

import numpy as np
from scipy.special import expit
from scipy.special import gammaln
from scipy.special import log_expit

__all__ = ["Binomial", "Fractional", "Ordinal", "thresholds_from", "thresholds_of"]


@dataclass
class Binomial:
    """``y`` successes of ``n`` runs per design row (logit link)."""

    y: np.ndarray
    n: np.ndarray
    name: str = "binomial"
    n_extra: int = 0
    scale: float = 1.0

    def constant(self) -> float:
        """The binomial coefficients (``glmer``'s log-likelihood includes them)."""
        n, y = self.n, self.y
        return float((gammaln(n + 1) - gammaln(y + 1) - gammaln(n - y + 1)).sum()) / self.scale

    def loglik(self, eta: np.ndarray, extra: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        p = expit(eta)
        ll = self.y * log_expit(eta) + (self.n - self.y) * log_expit(-eta)
        s = self.scale
        return float(ll.sum()) / s, (self.y - self.n * p) / s, -self.n * p * (1.0 - p) / s

    def start_extra(self) -> np.ndarray:
        return np.zeros(0)

    def working(self) -> tuple[np.ndarray, np.ndarray]:
        """A starting logit per row (the empirical one, shrunk) and its weight."""
        rate = (self.y + 0.5) / (self.n + 1.0)
        return np.log(rate / (1.0 - rate)), self.n


@dataclass
class Fractional(Binomial):
    """Scores in [0, 1]: ``y`` the sum of ``n`` runs' scores; the quasi-likelihood over ``phi``."""

    name: str = "fractional"

    def constant(self) -> float:
        return 0.0


@dataclass
class Ordinal:
    """Graded outcomes: observation ``o`` is category ``cat[o]`` (0..K-1) of design row ``row[o]``.

    ``weight[o]`` counts identical observations.
    """

    row: np.ndarray
    cat: np.ndarray
    weight: np.ndarray
    n_rows: int
    n_categories: int
    name: str = "ordinal"
    scale: float = 1.0
    n_extra: int = field(init=False)

    def __post_init__(self) -> None:
        self.n_extra = self.n_categories - 1

    def constant(self) -> float:
        return 0.0

    def thresholds(self, extra: np.ndarray) -> np.ndarray:
        return thresholds_of(extra)

    def loglik(self, eta: np.ndarray, extra: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        th = np.concatenate([[-np.inf], self.thresholds(extra), [np.inf]])
        e = eta[self.row]
        a = th[self.cat + 1] - e  # upper cut-point
        b = th[self.cat] - e  # lower cut-point
        # P = F(a) - F(b), computed on the side where it does not cancel
        flip = b > 0
        with np.errstate(invalid="ignore"):
            P = np.where(flip, expit(-b) - expit(-a), expit(a) - expit(b))
        Fa, Fb = expit(a), expit(b)
        fa, fb = Fa * (1 - Fa), Fb * (1 - Fb)
        ga, gb = fa * (1 - 2 * Fa), fb * (1 - 2 * Fb)
        P = np.maximum(P, 1e-300)
        d1 = -(fa - fb) / P
        d2 = (ga - gb) / P - d1 * d1
        w = self.weight / self.scale
        ll = float((w * np.log(P)).sum())
        D1 = np.bincount(self.row, w * d1, minlength=self.n_rows)
        D2 = np.bincount(self.row, w * d2, minlength=self.n_rows)
        return ll, D1, D2

    def start_extra(self) -> np.ndarray:
        """Thresholds at the logits of the cumulative shares (no covariates)."""
        return thresholds_from(np.bincount(self.cat, self.weight, minlength=self.n_categories))

    def working(self) -> tuple[np.ndarray, np.ndarray]:
        """A starting ``eta`` of zero per row (the thresholds carry the location)."""
        w = np.bincount(self.row, self.weight, minlength=self.n_rows)
        return np.zeros(self.n_rows), w


def thresholds_of(extra: np.ndarray) -> np.ndarray:
    """``theta`` from ``(theta_1, log gap_2, ..., log gap_{K-1})``."""
    extra = np.asarray(extra, dtype=float)
    th = np.empty(extra.size)
    th[0] = extra[0]
    th[1:] = extra[0] + np.cumsum(np.exp(extra[1:]))
    return th


def thresholds_from(counts: np.ndarray) -> np.ndarray:
    """Starting ``(theta_1, log gaps)``: logits of the cumulative shares of each category."""
    c = np.asarray(counts, dtype=float) + 0.5
    cum = np.cumsum(c)[:-1] / c.sum()
    th = np.log(cum / (1 - cum))
    gaps = np.maximum(np.diff(th), 1e-3)
    return np.concatenate([[th[0]], np.log(gaps)])


def log_gap_bounds(n_extra: int) -> list[tuple[float, float]]:
    """Bounds of ``(theta_1, log gaps)``: thresholds within +-40 logits, gaps above e^-12."""
    return [(-40.0, 40.0)] + [(math.log(1e-6), math.log(80.0))] * (n_extra - 1)
