"""Resampling over tasks: the cluster bootstrap, paired tests between agents, ranking uncertainty."""

from ._bootstrap import (
    BootstrapResult,
    DegenerateBootstrapError,
    DegenerateBootstrapWarning,
    UndefinedResampleWarning,
    bootstrap_ci,
)
from ._multiple import (
    MaxTApproximationWarning,
    PairwiseComparisonResult,
    PValueResolutionWarning,
    compare_agents,
)
from ._paired import (
    PairedTestResult,
    UndefinedTestWarning,
    holm,
    paired_test,
)
from ._ranking import (
    RankResult,
    UndefinedScoreWarning,
    UnequalTaskSetsWarning,
    rank_uncertainty,
)

__all__ = [
    "BootstrapResult",
    "DegenerateBootstrapError",
    "DegenerateBootstrapWarning",
    "MaxTApproximationWarning",
    "PValueResolutionWarning",
    "PairedTestResult",
    "PairwiseComparisonResult",
    "RankResult",
    "UndefinedResampleWarning",
    "UndefinedScoreWarning",
    "UndefinedTestWarning",
    "UnequalTaskSetsWarning",
    "bootstrap_ci",
    "compare_agents",
    "holm",
    "paired_test",
    "rank_uncertainty",
]
