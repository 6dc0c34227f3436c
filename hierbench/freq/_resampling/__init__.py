"""Resampling over tasks: the cluster bootstrap, paired tests between agents, ranking uncertainty."""

from ._bootstrap import BootstrapResult
from ._bootstrap import DegenerateBootstrapError
from ._bootstrap import DegenerateBootstrapWarning
from ._bootstrap import UndefinedResampleWarning
from ._bootstrap import bootstrap_ci
from ._multiple import MaxTApproximationWarning
from ._multiple import PValueResolutionWarning
from ._multiple import compare_agents
from ._paired import PairedTestResult
from ._paired import UndefinedTestWarning
from ._paired import holm
from ._paired import paired_test
from ._pairwise_result import PairwiseComparisonResult
from ._ranking import RankResult
from ._ranking import UndefinedScoreWarning
from ._ranking import UnequalTaskSetsWarning
from ._ranking import rank_uncertainty

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
