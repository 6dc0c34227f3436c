"""Pairwise ratings: Bradley-Terry by maximum likelihood, online Elo, win rates, position consistency."""

from ._ml import (
    BradleyTerryMLResult,
    NoFiniteMLEWarning,
    fit_bradley_terry_ml,
)
from ._position import PositionConsistencyResult, position_consistency
from ._winrate import EloResult, WinRateResult, online_elo, win_rate

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
