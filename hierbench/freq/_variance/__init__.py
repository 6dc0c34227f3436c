"""Variance components: G-theory (ANOVA and REML), the design language, profile intervals,
D-studies, power and the cost-optimal allocation."""

from ._gtheory import (
    ConfoundedComponentWarning,
    DesignError,
    NegativeVarianceComponentWarning,
    NoIntervalWarning,
    RemlConvergenceWarning,
    UnbalancedDesignError,
    UndefinedCoefficientWarning,
    VarianceComponentsResult,
    variance_components,
)
from ._power import (
    minimum_detectable_effect,
    optimal_allocation,
    optimal_runs,
    paired_power,
    sample_size_normal,
    sd_paired_diff,
    tasks_for_power,
)

__all__ = [
    "ConfoundedComponentWarning",
    "DesignError",
    "NegativeVarianceComponentWarning",
    "NoIntervalWarning",
    "RemlConvergenceWarning",
    "UnbalancedDesignError",
    "UndefinedCoefficientWarning",
    "VarianceComponentsResult",
    "minimum_detectable_effect",
    "optimal_allocation",
    "optimal_runs",
    "paired_power",
    "sample_size_normal",
    "sd_paired_diff",
    "tasks_for_power",
    "variance_components",
]
