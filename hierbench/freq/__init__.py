"""Frequentist estimators: the validating counterparts of the Bayesian models."""

from ._betabinom import (
    BetaBinomialResult,
    NoOverdispersionWarning,
    beta_binomial_mle,
    beta_binomial_profile_ci,
)
from ._bootstrap import (
    BootstrapResult,
    DegenerateBootstrapError,
    DegenerateBootstrapWarning,
    UndefinedResampleWarning,
    bootstrap_ci,
)
from ._confseq import (
    ConfidenceSequenceResult,
    EmptyConfidenceSequenceWarning,
    confidence_sequence,
)
from ._gtheory import (
    ConfoundedComponentWarning,
    NegativeVarianceComponentWarning,
    UnbalancedDesignError,
    VarianceComponentsResult,
    variance_components,
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
from ._paired import (
    PairedTestResult,
    PairwiseComparisonResult,
    UndefinedTestWarning,
    compare_agents,
    holm,
    paired_test,
)
from ._passk import InsufficientRunsWarning, PassKResult, pass_at_k, pass_hat_k
from ._power import (
    minimum_detectable_effect,
    optimal_allocation,
    optimal_runs,
    paired_power,
    sample_size_normal,
    sd_paired_diff,
    tasks_for_power,
)
from ._ranking import RankResult, UndefinedScoreWarning, UnequalTaskSetsWarning, rank_uncertainty
from ._resample import task_weights
from ._scorecard import scorecard

__all__: list[str] = [
    "BetaBinomialResult",
    "BootstrapResult",
    "ConfidenceSequenceResult",
    "ConfoundedComponentWarning",
    "DegenerateBootstrapError",
    "DegenerateBootstrapWarning",
    "EmptyConfidenceSequenceWarning",
    "EmptySampleWarning",
    "InsufficientRunsWarning",
    "IntervalResult",
    "NegativeVarianceComponentWarning",
    "NoOverdispersionWarning",
    "PairedTestResult",
    "PairwiseComparisonResult",
    "PassKResult",
    "RankResult",
    "SuccessRateResult",
    "UnbalancedDesignError",
    "UndefinedResampleWarning",
    "UndefinedScoreWarning",
    "UndefinedTestWarning",
    "UnequalTaskSetsWarning",
    "VarianceComponentsResult",
    "beta_binomial_mle",
    "beta_binomial_profile_ci",
    "bootstrap_ci",
    "clustered_se",
    "compare_agents",
    "confidence_sequence",
    "design_effect",
    "exact_interval",
    "finite_population_se",
    "holm",
    "minimum_detectable_effect",
    "optimal_allocation",
    "optimal_runs",
    "paired_power",
    "paired_test",
    "pass_at_k",
    "pass_hat_k",
    "pooled_binomial_interval",
    "proportion_interval",
    "rank_uncertainty",
    "sample_size_normal",
    "scorecard",
    "sd_paired_diff",
    "stratified_mean",
    "success_rate",
    "task_weights",
    "tasks_for_power",
    "variance_components",
    "wald_interval",
    "wilson_interval",
]
