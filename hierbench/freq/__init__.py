"""Frequentist estimators: the validating counterparts of the Bayesian models."""

from ._betabinom import BetaBinomialResult, beta_binomial_mle, beta_binomial_profile_ci
from ._bootstrap import (
    BootstrapResult,
    DegenerateBootstrapWarning,
    UndefinedResampleWarning,
    bootstrap_ci,
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
    stratified_mean,
    success_rate,
    wald_interval,
    wilson_interval,
)
from ._paired import (
    PairedTestResult,
    UndefinedTestWarning,
    compare_agents,
    holm,
    paired_test,
)
from ._passk import InsufficientRunsWarning, PassKResult, pass_at_k, pass_hat_k
from ._resample import task_weights

__all__: list[str] = [
    "BetaBinomialResult",
    "BootstrapResult",
    "ConfoundedComponentWarning",
    "DegenerateBootstrapWarning",
    "EmptySampleWarning",
    "InsufficientRunsWarning",
    "IntervalResult",
    "NegativeVarianceComponentWarning",
    "PairedTestResult",
    "PassKResult",
    "SuccessRateResult",
    "UnbalancedDesignError",
    "UndefinedResampleWarning",
    "UndefinedTestWarning",
    "VarianceComponentsResult",
    "beta_binomial_mle",
    "beta_binomial_profile_ci",
    "bootstrap_ci",
    "clustered_se",
    "compare_agents",
    "design_effect",
    "exact_interval",
    "finite_population_se",
    "holm",
    "paired_test",
    "pass_at_k",
    "pass_hat_k",
    "pooled_binomial_interval",
    "stratified_mean",
    "success_rate",
    "task_weights",
    "variance_components",
    "wald_interval",
    "wilson_interval",
]
