"""Variance components: G-theory (ANOVA and REML) and what it plans.

The design language, profile intervals, D-studies, power and the cost-optimal allocation.
"""

from ._design_lang import DesignError
from ._gtheory import variance_components
from ._power import (
    minimum_detectable_effect,
    optimal_allocation,
    optimal_runs,
    paired_power,
    sample_size_normal,
    sd_paired_diff,
    tasks_for_power,
)
from ._result import VarianceComponentsResult
from ._warnings import (
    ConfoundedComponentWarning,
    NegativeVarianceComponentWarning,
    NoIntervalWarning,
    RemlConvergenceWarning,
    UnbalancedDesignError,
    UndefinedCoefficientWarning,
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
