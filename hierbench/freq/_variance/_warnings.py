"""The variance-components wing's warnings and errors (one class per meaning, under the base's four)."""

from __future__ import annotations

from ..._base import BoundaryWarning
from ..._base import HierbenchError
from ..._base import HierbenchWarning
from ..._base import NotConvergedWarning
from ..._base import UndefinedWarning

__all__ = [
    "ConfoundedComponentWarning",
    "ExtrapolationWarning",
    "NegativeVarianceComponentWarning",
    "NoIntervalWarning",
    "RemlConvergenceWarning",
    "UnbalancedDesignError",
    "UndefinedCoefficientWarning",
]


class UnbalancedDesignError(HierbenchError):
    """The expected-mean-square estimators need a balanced design (``method="anova"``)."""


class NegativeVarianceComponentWarning(BoundaryWarning):
    """A variance component was estimated at 0.

    An ANOVA estimate was negative and was truncated at 0, a REML estimate is on the
    boundary 0, or every score is equal.
    """


class ConfoundedComponentWarning(UndefinedWarning):
    """A quantity needs a split of components that the design cannot estimate: it is NaN."""


class UndefinedCoefficientWarning(UndefinedWarning):
    """A reliability coefficient is 0 / 0: it is NaN.

    No universe-score and no error variance, or no object of measurement.
    """


class RemlConvergenceWarning(NotConvergedWarning):
    """The REML fit is not at a minimum of the deviance.

    The deviance still to gain by a local quadratic model is above 1e-5 (a likelihood-ratio
    scale, whatever the size of the data), or the deviance falls inside from a component at 0.
    """


class NoIntervalWarning(UndefinedWarning):
    """A variance-components result has no (finite) intervals by default.

    The message names the cause and the remedy.
    """


class ExtrapolationWarning(HierbenchWarning):
    """A plan asks for far more tasks (or other levels) than the components were fitted on.

    More than ``EXTRAPOLATION_FACTOR`` (10) times: the held-out audit of the D-study checked
    up to 10x in tasks; beyond, the prediction rests on the components' model alone.
    """
