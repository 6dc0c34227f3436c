"""Rates and their intervals: success rates, pass@k / pass^k, beta-binomial overdispersion, confidence sequences, the scorecard."""

from ._betabinom import BetaBinomialResult
from ._betabinom import NoOverdispersionWarning
from ._betabinom import beta_binomial_profile_ci
from ._betabinom import fit_beta_binomial_ml
from ._confseq import ConfidenceSequenceResult
from ._confseq import EmptyConfidenceSequenceWarning
from ._confseq import TaskOrderWarning
from ._confseq import confidence_sequence
from ._intervals import EmptySampleWarning
from ._intervals import IntervalResult
from ._intervals import SuccessRateResult
from ._intervals import clustered_se
from ._intervals import design_effect
from ._intervals import exact_interval
from ._intervals import finite_population_se
from ._intervals import pooled_binomial_interval
from ._intervals import proportion_interval
from ._intervals import stratified_mean
from ._intervals import success_rate
from ._intervals import wald_interval
from ._intervals import wilson_interval
from ._passk import InsufficientRunsWarning
from ._passk import PassKResult
from ._passk import pass_at_k
from ._passk import pass_hat_k
from ._scorecard import scorecard

__all__ = [
    "BetaBinomialResult",
    "ConfidenceSequenceResult",
    "EmptyConfidenceSequenceWarning",
    "EmptySampleWarning",
    "InsufficientRunsWarning",
    "IntervalResult",
    "NoOverdispersionWarning",
    "PassKResult",
    "SuccessRateResult",
    "TaskOrderWarning",
    "beta_binomial_profile_ci",
    "clustered_se",
    "confidence_sequence",
    "design_effect",
    "exact_interval",
    "finite_population_se",
    "fit_beta_binomial_ml",
    "pass_at_k",
    "pass_hat_k",
    "pooled_binomial_interval",
    "proportion_interval",
    "scorecard",
    "stratified_mean",
    "success_rate",
    "wald_interval",
    "wilson_interval",
]
