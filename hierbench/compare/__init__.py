"""Bayes and frequentist side by side, and coverage studies of any interval method.

Every interval in hierbench, Bayesian or not, is a DataArray with a trailing
dim ``ci_bound = ["lower", "upper"]`` and attrs ``ci_prob`` and ``ci_kind``.
That shared convention is what lets this module put methods next to each
other along an ``estimator`` dim and score them against a known truth.

The dim is called ``estimator``, not ``method``: ``DataArray.sel(method=...)``
is xarray's own keyword for inexact lookups, so ``table.sel(method="bayes")``
would silently select nothing and return everything.
"""

from . import _compare
from ._compare import *  # noqa: F403

# the module owns the list (``+=``, a form type checkers follow through star imports)
__all__: list[str] = []
__all__ += _compare.__all__
