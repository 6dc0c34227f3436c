"""Profiles beyond the mean: reliability over repeated runs, quantiles, cost/accuracy Pareto frontiers."""

from ._quantiles import (
    ParetoResult,
    QuantileResult,
    UnboundedQuantileWarning,
    mean_ci,
    order_statistic_interval,
    pareto_frontier,
    quantile_ci,
)
from ._reliability import (
    ReliabilityResult,
    reliability_profile,
)

__all__ = [
    "ParetoResult",
    "QuantileResult",
    "ReliabilityResult",
    "UnboundedQuantileWarning",
    "mean_ci",
    "order_statistic_interval",
    "pareto_frontier",
    "quantile_ci",
    "reliability_profile",
]
