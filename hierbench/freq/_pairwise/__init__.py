"""Pairwise ratings: Bradley-Terry by maximum likelihood, online Elo, win rates, position consistency."""

from ._ml import (
    BradleyTerryMLResult,
    EloResult,
    NoFiniteMLEWarning,
    PositionConsistencyResult,
    WinRateResult,
    bradley_terry_ml,
    online_elo,
    position_consistency,
    win_rate,
)

__all__ = [
    "BradleyTerryMLResult",
    "EloResult",
    "NoFiniteMLEWarning",
    "PositionConsistencyResult",
    "WinRateResult",
    "bradley_terry_ml",
    "online_elo",
    "position_consistency",
    "win_rate",
]
