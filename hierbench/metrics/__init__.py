"""Posterior-predictive metrics on a fitted model.

pass^k, pass@k, P(i > j), rank probabilities,
variance components on the probability scale; for formula models (:func:`hierbench.bayes.build_mixed`)
the reader's-scale answers (average marginal effects, mean scores, the agents' variance, pass^k on a
graded event) and METR's time horizons with their doubling time.

Pure xarray, numpy and scipy: works on a fit loaded from disk without PyMC.
pass^k and pass@k dispatch on the fit's ``hierbench_model`` attribute
(beta-binomial: exact Beta moments; crossed: the marginal cell likelihood's draws);
the ranking functions take any posterior variable with an agent dimension,
by default ``ability`` (each model's stated scale). Every function returns a
result object: ``estimate``, ``ci``, a
short repr, ``to_frame()`` and ``to_dataset()``, like the frequentist half.
"""

from .._base import ExtrapolatedHorizonWarning  # raised by doubling_time, as by hierbench.freq's
from ._common import UndefinedMetricWarning
from ._common import linear_scale as linear_scale  # for hierbench.bayes (formula models' scales)
from ._common import posterior_interval
from ._common import posterior_summary
from ._crossed import _mean_observed_draws as _mean_observed_draws  # for hierbench.bayes
from ._crossed import cell_logits as cell_logits  # for hierbench.bayes (the predictive)
from ._crossed import (
    crossed_pass_k as crossed_pass_k,  # for the demo; metrics.pass_hat_k dispatches to it
)
from ._crossed import crossed_variance_components
from ._crossed import unidentified_by_design as unidentified_by_design  # bayes (design figures)
from ._crossed import unidentified_components as unidentified_components  # bayes, report
from ._effects import PosteriorAgentVarianceResult
from ._effects import PosteriorEffectsResult
from ._effects import PosteriorMeanResponseResult
from ._effects import agent_variance
from ._effects import average_marginal_effects
from ._effects import graded_pass_hat_k
from ._effects import mean_response
from ._effects import mixed_pass_hat_k
from ._gtheory import bayes_d_study
from ._gtheory import bayes_variance_components
from ._horizon import PosteriorDoublingTimeResult
from ._horizon import PosteriorHorizonResult
from ._horizon import doubling_time
from ._horizon import time_horizon
from ._mixed import MixedDraws as MixedDraws  # for hierbench.bayes (formula models)
from ._mixed import as_design as as_design  # for hierbench.report (the effects section)
from ._mixed import mixed_draws as mixed_draws
from ._mixed import ordinal_probs as ordinal_probs
from ._mixed import row_predictor as row_predictor
from ._mixed import task_codes as task_codes
from ._passk import _bb_observed as _bb_observed  # for hierbench.bayes
from ._passk import beta_moments
from ._passk import pass_at_k
from ._passk import pass_hat_k
from ._ranking import (
    davidson_log_probs as davidson_log_probs,  # for hierbench.report (battles' predictive check)
)
from ._ranking import head_to_head
from ._ranking import prob_superiority
from ._ranking import rank_probabilities
from ._results import HeadToHeadResult
from ._results import PosteriorPassKResult
from ._results import PosteriorSummaryResult
from ._results import ProbSuperiorityResult
from ._results import RankProbabilityResult
from ._results import VarianceComponentDrawsResult

__all__ = [
    "ExtrapolatedHorizonWarning",
    "HeadToHeadResult",
    "PosteriorAgentVarianceResult",
    "PosteriorDoublingTimeResult",
    "PosteriorEffectsResult",
    "PosteriorHorizonResult",
    "PosteriorMeanResponseResult",
    "PosteriorPassKResult",
    "PosteriorSummaryResult",
    "ProbSuperiorityResult",
    "RankProbabilityResult",
    "UndefinedMetricWarning",
    "VarianceComponentDrawsResult",
    "agent_variance",
    "average_marginal_effects",
    "bayes_d_study",
    "bayes_variance_components",
    "beta_moments",
    "crossed_pass_k",
    "crossed_variance_components",
    "doubling_time",
    "graded_pass_hat_k",
    "head_to_head",
    "mean_response",
    "mixed_pass_hat_k",
    "pass_at_k",
    "pass_hat_k",
    "posterior_interval",
    "posterior_summary",
    "prob_superiority",
    "rank_probabilities",
    "time_horizon",
]
