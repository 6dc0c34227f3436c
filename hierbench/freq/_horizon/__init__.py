"""METR's time horizon and the doubling time of horizons over release dates.

Per-agent logistic regressions on log human minutes with a hierarchical
bootstrap, as METR describes them.
"""

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
