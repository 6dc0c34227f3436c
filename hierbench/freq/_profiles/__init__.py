"""Profiles beyond the mean: reliability over repeated runs, quantiles, cost/accuracy Pareto frontiers."""

from ._quantiles import ParetoResult
from ._quantiles import QuantileResult
from ._quantiles import UnboundedQuantileWarning
from ._quantiles import mean_ci
from ._quantiles import order_statistic_interval
from ._quantiles import pareto_frontier
from ._quantiles import quantile_ci
from ._reliability import ReliabilityResult
from ._reliability import reliability_profile

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
