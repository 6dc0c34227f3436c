"""The warning and error classes of hierbench, and the one way a warning reaches the user.

Every warning hierbench issues sits under one of a few meanings (:class:`UndefinedWarning`,
:class:`NotConvergedWarning`, :class:`SmallSampleWarning`, :class:`BoundaryWarning`), all
under :class:`HierbenchWarning`; its own input errors derive from :class:`HierbenchError`.
:func:`warn_user` names the user's line (the first frame outside :data:`OUTSIDE_PACKAGE`).
"""

from __future__ import annotations

import os
import warnings

#: the package's own files: a warning names the first frame outside them (the user's line,
#: whatever the depth of the call inside hierbench); :func:`warn_user` applies the rule.
#: The folder of the whole package (hierbench/), not of this ground floor (hierbench/_base/)
OUTSIDE_PACKAGE = (os.path.dirname(os.path.dirname(__file__)) + os.sep,)


class HierbenchWarning(UserWarning):
    """Base class of every warning hierbench issues (filter them all with this class)."""


class HierbenchError(ValueError):
    """Base class of hierbench's own input errors (a ``ValueError``)."""


class PartialCreditError(HierbenchError):
    """Binary scores were required, but some scores are strictly between 0 and 1."""


# Every warning hierbench issues sits under one of a few meanings, so a user can filter
# by meaning (``warnings.simplefilter("error", NotConvergedWarning)``) across both halves.


class UndefinedWarning(HierbenchWarning):
    """Something asked for is undefined on these data: it is NaN there, never a silent 0."""


class UnidentifiedWarning(UndefinedWarning):
    """A quantity is asked for that the data cannot identify (it rests on an assumption)."""


class UnidentifiedTermWarning(HierbenchWarning):
    """A term was requested explicitly that the data's design cannot identify.

    One meaning across the builders: a term asked for by name (a builder
    option such as ``agent_task="marginal"``, or a ``(1|agent:task)`` term
    written in a formula) that the design cannot separate from the others
    (one run per cell, one agent); it is fitted as asked and rests on its
    prior. A formula's own identification rules belong to
    :func:`hierbench.data.model_design`, shared with the maximum-likelihood
    half: a random term whose every level holds one run warns with this class
    (its sd cannot be told apart from run-to-run noise), a term no design could
    identify is refused
    (:class:`hierbench.data.FormulaError`), and factor levels seen in one
    combination only are reported by
    :class:`hierbench.data.ConfoundedTermWarning` (identified by the others'
    levels, estimated from that one combination).
    """


class NotConvergedWarning(HierbenchWarning):
    """A fit or an iteration stopped short of its convergence criterion: its numbers may be off."""


class SmallSampleWarning(HierbenchWarning):
    """Too few observations (tasks, clusters, items) for a method's guarantee to be trusted."""


class BoundaryWarning(HierbenchWarning):
    """An estimate sits on the edge of its parameter space (a variance at 0, an infinite MLE)."""


class UndefinedMetricWarning(UndefinedWarning):
    """A metric is 0/0 or undefined for some entries: NaN there, here or in some resamples.

    For example precision with no positive prediction, or a posterior quantity that does not
    exist for a model.
    """


class ZeroWidthIntervalWarning(SmallSampleWarning):
    """An interval has zero width although its level is below one: it carries no uncertainty."""


class ExtrapolatedHorizonWarning(BoundaryWarning):
    """A time horizon lies beyond the task lengths measured: an extrapolation along the fitted slope."""


# the classes are caught and printed as hierbench._base.<name> (a traceback's last line, the
# docstring examples that show one), the name they had before the ground floor was split
for _cls in (HierbenchWarning, HierbenchError, PartialCreditError, UndefinedWarning,
             UnidentifiedWarning, UnidentifiedTermWarning, NotConvergedWarning,
             SmallSampleWarning, BoundaryWarning, UndefinedMetricWarning,
             ZeroWidthIntervalWarning, ExtrapolatedHorizonWarning):  # fmt: skip
    _cls.__module__ = "hierbench._base"
del _cls


def warn_user(message: str, category: type[Warning]) -> None:
    """Issue a hierbench warning at the user's line: the first frame outside the package.

    Whatever the depth of the call inside hierbench, the warning names the line
    that called into it (``skip_file_prefixes``), so a filter or a ``-W error``
    on that module sees it.

    Parameters
    ----------
    message : str
    category : type of Warning

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     warn_user("a notice", UserWarning)
    >>> str(seen[0].message)
    'a notice'
    """
    warnings.warn(message, category, stacklevel=2, skip_file_prefixes=OUTSIDE_PACKAGE)
