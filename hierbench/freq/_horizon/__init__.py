"""METR's time horizon and the doubling time of horizons over release dates.

Per-agent logistic regressions on log human minutes with a hierarchical
bootstrap, as METR describes them.
"""

from . import _metr
from ._metr import *  # noqa: F403

__all__ = list(_metr.__all__)  # the module owns the list
