"""Mixed models by maximum likelihood: the crossed agent x task GLMM and formula models.

The crossed GLMM is the Bayesian crossed model's counterpart; models given by a
formula (binomial, fractional, ordinal) come with answers on the reader's scale.
"""

from ._crossed import BoundaryEstimateWarning
from ._crossed import CrossedMLResult
from ._crossed import IgnoredClusterWarning
from ._crossed import MLConvergenceWarning
from ._crossed import SeparatedAgentWarning
from ._crossed import fit_crossed_ml
from ._effects import AgentVarianceResult
from ._effects import MarginalEffectsResult
from ._effects import MeanResponseResult
from ._effects import agent_variance
from ._effects import average_marginal_effects
from ._effects import mean_response
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
