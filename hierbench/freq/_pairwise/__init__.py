"""Pairwise ratings: Bradley-Terry by maximum likelihood, online Elo, win rates, position consistency."""

from ._ml import BradleyTerryMLResult
from ._ml import NoFiniteMLEWarning
from ._ml import fit_bradley_terry_ml
from ._position import PositionConsistencyResult
from ._position import position_consistency
from ._winrate import EloResult
from ._winrate import WinRateResult
from ._winrate import online_elo
from ._winrate import win_rate

__all__ = [
    "BradleyTerryMLResult",
    "EloResult",
    "NoFiniteMLEWarning",
    "PositionConsistencyResult",
    "WinRateResult",
    "fit_bradley_terry_ml",
    "online_elo",
    "position_consistency",
    "win_rate",
]
