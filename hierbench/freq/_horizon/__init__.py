"""METR's time horizon (per-agent logistic regressions on log human minutes, hierarchical
bootstrap) and the doubling time of horizons over release dates."""

from ._metr import (
    DoublingTimeResult,
    ExtremeHorizonWarning,
    TimeHorizonResult,
    doubling_time,
    metr_run_weights,
    time_horizon,
)

__all__ = [
    "DoublingTimeResult",
    "ExtremeHorizonWarning",
    "TimeHorizonResult",
    "doubling_time",
    "metr_run_weights",
    "time_horizon",
]
