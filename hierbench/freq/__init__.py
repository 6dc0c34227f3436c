"""Frequentist estimators: the validating counterparts of the Bayesian models."""

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
from ._passk import InsufficientRunsWarning, PassKResult, pass_at_k, pass_hat_k
from ._resample import task_weights

__all__: list[str] = [
    "BootstrapResult",
    "ConfoundedComponentWarning",
    "DegenerateBootstrapWarning",
    "InsufficientRunsWarning",
    "NegativeVarianceComponentWarning",
    "PassKResult",
    "UnbalancedDesignError",
    "UndefinedResampleWarning",
    "VarianceComponentsResult",
    "bootstrap_ci",
    "pass_at_k",
    "pass_hat_k",
    "task_weights",
    "variance_components",
]
