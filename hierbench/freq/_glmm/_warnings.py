"""The mixed-model wing's warnings (one class per meaning, under the base's four)."""

from __future__ import annotations

from ..._base import BoundaryWarning
from ..._base import HierbenchWarning
from ..._base import NotConvergedWarning
from ..._base import SmallSampleWarning

__all__ = [
    "BoundaryEstimateWarning",
    "FewLevelsWarning",
    "IgnoredClusterWarning",
    "MLConvergenceWarning",
    "SeparatedAgentWarning",
]


class SeparatedAgentWarning(BoundaryWarning):
    """The data separate an ability or a fixed effect: its MLE is infinite (reported as NaN).

    An agent that succeeded (or failed) on every run; in a formula fit, any fixed effect along a
    direction whose design rows all sit at one end of the scale (all scores 0 or 1, every grade
    the lowest or the highest), or whose grades split cleanly at a cut between two middle grades.
    Also any estimate of a formula fit that ended at the optimiser's bound (its MLE at infinity,
    or not identified), which the separation rule did not foresee, and in either fit a random
    term's sd at its upper bound or whose profile likelihood does not fall below the interval's
    cut-off up to it (levels all successes or all failures pull the spread to infinity).
    """


class BoundaryEstimateWarning(BoundaryWarning):
    """A scale's estimate sits at the boundary (zero, below 1e-3 on the logit scale): its interval is one-sided."""


class IgnoredClusterWarning(HierbenchWarning):
    """The data carry task clusters, which the ML fit does not model (no cluster level)."""


class MLConvergenceWarning(NotConvergedWarning):
    """The optimiser stopped without meeting its convergence criterion."""


class FewLevelsWarning(SmallSampleWarning):
    """An interval rests on a random term with few levels and no small-sample correction covers it.

    The ML delta method (``method="ml"``) treats that term's variance as known; under REML the
    warning remains where no random term contains the variable (no degrees of freedom to use).
    """
