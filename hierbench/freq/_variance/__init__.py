"""Variance components: G-theory (ANOVA and REML) and what it plans.

The design language, profile intervals, D-studies, power and the cost-optimal allocation.
"""

from . import _power
from . import _warnings
from ._clusters import pool_interactions as pool_interactions  # for hierbench.demo; not in __all__
from ._design_lang import DesignError as DesignError
from ._gtheory import variance_components as variance_components
from ._observed import observed_cluster_ratio as observed_cluster_ratio  # for hierbench.demo
from ._observed import pair_variances as pair_variances  # for hierbench.demo; not in __all__
from ._power import *  # noqa: F403
from ._result import VarianceComponentsResult as VarianceComponentsResult
from ._warnings import *  # noqa: F403

__all__ = ["DesignError", "VarianceComponentsResult", "variance_components"]
__all__ += _power.__all__
__all__ += _warnings.__all__
