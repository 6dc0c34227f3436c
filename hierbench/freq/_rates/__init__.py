"""Rates and their intervals: success rates, pass@k / pass^k, beta-binomial overdispersion, confidence sequences, the scorecard."""

from ._betabinom import (
    BetaBinomialResult,
    NoOverdispersionWarning,
    beta_binomial_profile_ci,
    fit_beta_binomial_ml,
)
from ._confseq import (
    ConfidenceSequenceResult,
    EmptyConfidenceSequenceWarning,
    confidence_sequence,
)
from ._intervals import (
    EmptySampleWarning,
    IntervalResult,
    SuccessRateResult,
    clustered_se,
    design_effect,
    exact_interval,
    finite_population_se,
    pooled_binomial_interval,
    proportion_interval,
    stratified_mean,
    success_rate,
    wald_interval,
    wilson_interval,
)
from ._passk import (
    InsufficientRunsWarning,
    PassKResult,
    pass_at_k,
    pass_hat_k,
)
from ._scorecard import (
    scorecard,
)

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
