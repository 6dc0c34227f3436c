"""Item response theory without a sampler: MAP calibration of an item bank and scoring a new agent."""

from ._ml import (
    IRTBank,
    IRTCalibrationResult,
    IRTConvergenceWarning,
    IRTScoreResult,
    fit_irt_ml,
    irt_score,
)

__all__ = [
    "IRTBank",
    "IRTCalibrationResult",
    "IRTConvergenceWarning",
    "IRTScoreResult",
    "fit_irt_ml",
    "irt_score",
]
