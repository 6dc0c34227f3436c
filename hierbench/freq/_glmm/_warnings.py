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
    """An agent succeeded (or failed) on every run: its ability's MLE is infinite (reported as NaN)."""


class BoundaryEstimateWarning(BoundaryWarning):
    """A scale's estimate sits at the boundary (zero): its interval is one-sided."""


class IgnoredClusterWarning(HierbenchWarning):
    """The data carry task clusters, which the ML fit does not model (no cluster level)."""


class MLConvergenceWarning(NotConvergedWarning):
    """The optimiser stopped without meeting its convergence criterion."""


class FewLevelsWarning(SmallSampleWarning):
    """An interval rests on a random term with few levels and no small-sample correction covers it.

    The ML delta method (``method="ml"``) treats that term's variance as known; under REML the
    warning remains where no random term contains the variable (no degrees of freedom to use).
    """
