"""METR's time horizon and the doubling time of horizons over release dates.

Per-agent logistic regressions on log human minutes with a hierarchical
bootstrap, as METR describes them.
"""

from . import _metr
from ._metr import *  # noqa: F403

# the module owns the list (``+=``, a form type checkers follow through star imports)
__all__: list[str] = []
__all__ += _metr.__all__
