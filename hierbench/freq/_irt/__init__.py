"""Item response theory without a sampler: MAP calibration of an item bank and scoring a new agent."""

from . import _ml
from ._ml import *  # noqa: F403

__all__ = list(_ml.__all__)  # the module owns the list
