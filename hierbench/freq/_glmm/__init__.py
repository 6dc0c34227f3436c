"""Mixed models by maximum likelihood: the crossed agent x task GLMM and formula models.

The crossed GLMM is the Bayesian crossed model's counterpart; models given by a
formula (binomial, fractional, ordinal) come with answers on the reader's scale.
"""

from ._crossed import (
    BoundaryEstimateWarning,
    CrossedMLResult,
    IgnoredClusterWarning,
    MLConvergenceWarning,
    SeparatedAgentWarning,
    fit_crossed_ml,
)
from ._effects import (
    AgentVarianceResult,
    MarginalEffectsResult,
    MeanResponseResult,
    agent_variance,
    average_marginal_effects,
    mean_response,
)
from ._mixed import MixedMLResult
from ._warnings import FewLevelsWarning

__all__ = [
    "AgentVarianceResult",
    "BoundaryEstimateWarning",
    "CrossedMLResult",
    "FewLevelsWarning",
    "IgnoredClusterWarning",
    "MLConvergenceWarning",
    "MarginalEffectsResult",
    "MeanResponseResult",
    "MixedMLResult",
    "SeparatedAgentWarning",
    "agent_variance",
    "average_marginal_effects",
    "fit_crossed_ml",
    "mean_response",
]
