"""The crossed agent x task GLMM by maximum likelihood (the Bayesian crossed model's counterpart)."""

from ._crossed import (
    BoundaryEstimateWarning,
    CrossedMLResult,
    IgnoredClusterWarning,
    MLConvergenceWarning,
    SeparatedAgentWarning,
    fit_crossed_ml,
)

__all__ = [
    "BoundaryEstimateWarning",
    "CrossedMLResult",
    "IgnoredClusterWarning",
    "MLConvergenceWarning",
    "SeparatedAgentWarning",
    "fit_crossed_ml",
]
