"""Item response theory without a sampler: MAP calibration of an item bank and scoring a new agent."""

from . import _ml
from ._ml import *  # noqa: F403

# the module owns the list (``+=``, a form type checkers follow through star imports)
__all__: list[str] = []
__all__ += _ml.__all__
