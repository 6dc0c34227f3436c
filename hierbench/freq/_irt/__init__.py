"""Item response theory without a sampler: MAP calibration of an item bank, scoring a new agent, person fit."""

from . import _ml
from . import _person_fit
from ._ml import *  # noqa: F403
from ._person_fit import *  # noqa: F403

# the module owns the list (``+=``, a form type checkers follow through star imports)
__all__: list[str] = []
__all__ += _ml.__all__
__all__ += _person_fit.__all__
