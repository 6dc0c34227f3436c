"""Priors that both halves use: one owner for each number.

The PyMC builders (:mod:`hierbench.bayes`) put these distributions on their
hyperparameters; the sampler-free fits (:mod:`hierbench.freq`) take their
mode. Keeping them here means the two can never drift apart.
"""

from __future__ import annotations

from typing import Any

__all__ = ["IRT_HYPERPRIORS"]


#: Hyperpriors of the item parameters' population (mean: normal; sd: half-normal), shared
#: by the PyMC builders (``hierbench.bayes.IRT_PRIORS``) and the empirical-Bayes steps of
#: :func:`fit_irt_ml`, which take their mode (see ``models/irt_2pl/card.md``).
IRT_HYPERPRIORS: dict[str, dict[str, Any]] = {
    "mu_intercept": {"dist": "Normal", "mu": 0.0, "sigma": 2.5},
    "sd_intercept": {"dist": "HalfNormal", "sigma": 3.0},
    "mu_log_discrimination": {"dist": "Normal", "mu": 0.0, "sigma": 1.0},
    "sd_log_discrimination": {"dist": "HalfNormal", "sigma": 0.5},
}
