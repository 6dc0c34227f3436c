"""Posterior-predictive metrics on a fitted model.

pass^k, pass@k, P(i > j), rank probabilities, and variance components on the
probability scale.

Pure xarray, numpy and scipy: works on a fit loaded from disk without PyMC.
pass^k and pass@k dispatch on the fit's ``hierbench_model`` attribute
(beta-binomial: exact Beta moments; crossed: :func:`crossed_pass_k`);
the ranking functions take any posterior variable with an agent dimension,
by default ``ability`` (each model's stated scale). Every function returns a
result object: ``estimate``, ``ci``, a
short repr, ``to_frame()`` and ``to_dataset()``, like the frequentist half.
"""

from . import _results
from ._common import UndefinedMetricWarning, posterior_interval, posterior_summary
from ._crossed import _mean_observed_draws as _mean_observed_draws  # for hierbench.bayes
from ._crossed import crossed_pass_k, crossed_variance_components
from ._gtheory import bayes_d_study, bayes_variance_components
from ._passk import beta_moments, pass_at_k, pass_hat_k
from ._ranking import head_to_head, prob_superiority, rank_probabilities
from ._results import *  # noqa: F403

__all__ = [
    "UndefinedMetricWarning",
    "bayes_d_study",
    "bayes_variance_components",
    "beta_moments",
    "crossed_pass_k",
    "crossed_variance_components",
    "head_to_head",
    "pass_at_k",
    "pass_hat_k",
    "posterior_interval",
    "posterior_summary",
    "prob_superiority",
    "rank_probabilities",
    *_results.__all__,
]
