"""The task bootstrap the profiles, judges and pairwise wings share: units and percentile bounds.

Private. :func:`percentile_bounds` is the one percentile-interval rule of these wings
(``np.nanquantile`` at ``(1 - prob) / 2`` and ``(1 + prob) / 2``, resamples where a
statistic is undefined left out); :func:`task_resampling` the one way they turn a
``cluster`` argument and ``rng`` into resampling units.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..._base import as_rng, cluster_codes

__all__: list[str] = []


def percentile_bounds(dist: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap bounds along axis 0, NaN resamples left out (all NaN: NaN)."""
    a = (1.0 - prob) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanquantile(dist, a, axis=0), np.nanquantile(dist, 1.0 - a, axis=0)


def task_resampling(
    data: Any, cluster: str | None, task_dim: str, rng: None | int | np.random.Generator
) -> tuple[np.ndarray | None, np.random.Generator, str]:
    """Cluster codes of the tasks (None: tasks are the units), the generator and the unit's
    name (``"clusters"`` or ``"tasks"``) for :func:`hierbench.freq._kernels.weight_blocks`."""
    res = cluster_codes(data, cluster, dim=task_dim)
    codes = None if res is None else res[0]
    return codes, as_rng(rng), "clusters" if codes is not None else "tasks"


def bootstrap_detail(unit: str, n_resamples: int) -> str:
    """The ``ci_detail`` of a task-bootstrap interval."""
    return f"bootstrap over {unit}, {n_resamples} resamples"
