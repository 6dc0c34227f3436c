"""Rules the profiles, judges, pairwise and variance wings share, each with one owner here.

Private. :func:`percentile_bounds` is the one percentile-interval rule of these wings
(``np.nanquantile`` at ``(1 - prob) / 2`` and ``(1 + prob) / 2``, resamples where a
statistic is undefined left out); :func:`task_resampling` the one way they turn a
``cluster`` argument and ``rng`` into resampling units; :func:`check_number` and
:func:`numeric_values` the checks of scalar arguments and of data values that
:mod:`hierbench._base` does not (yet) own.
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
    """Return the tasks' cluster codes, the generator and the unit's name, for resampling.

    Cluster codes None: tasks are the units; the name is ``"clusters"`` or ``"tasks"``; all
    for :func:`hierbench.freq._kernels.weight_blocks`.
    """
    res = cluster_codes(data, cluster, dim=task_dim)
    codes = None if res is None else res[0]
    return codes, as_rng(rng), "clusters" if codes is not None else "tasks"


def bootstrap_detail(unit: str, n_resamples: int) -> str:
    """Return the ``ci_detail`` of a task-bootstrap interval."""
    return f"bootstrap over {unit}, {n_resamples} resamples"


def check_number(
    value: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
) -> float:
    """Return ``value`` as a float, or raise an error naming the argument.

    It must be a real, finite number (not a bool, not text) within the bounds (``low``
    excluded when ``low_open``).
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"`{name}` must be a number; got {value!r}")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"`{name}` must be a finite number; got {name}={value!r}")
    if low is not None and (v <= low if low_open else v < low):
        raise ValueError(
            f"`{name}` must be {'>' if low_open else '>='} {low:g}; got {name}={value!r}"
        )
    if high is not None and v > high:
        raise ValueError(f"`{name}` must be <= {high:g}; got {name}={value!r}")
    return v


#: per-run quantities that cannot be negative, by their canonical variable names
NONNEGATIVE = ("cost", "latency", "tokens", "steps")


def numeric_values(
    da: Any, name: str, *, nonnegative: bool = False, allow_bool: bool = False
) -> np.ndarray:
    """Return the values of ``da`` as floats: numbers only, finite or NaN.

    Text is refused, not parsed; booleans unless ``allow_bool`` (e.g. for 0/1 scores); and
    >= 0 when ``nonnegative``.
    """
    v = np.asarray(getattr(da, "values", da))
    if v.dtype.kind not in ("iufb" if allow_bool else "iuf"):
        what = "booleans" if v.dtype.kind == "b" else f"values of type {v.dtype}"
        raise TypeError(f"`{name}` must hold numbers (NaN for a missing value); got {what}")
    v = v.astype(float, copy=False)
    if np.isinf(v).any():
        raise ValueError(f"`{name}` must be finite or NaN (not run); found infinite values")
    if nonnegative and (v < 0).any():
        bad = np.sort(v[v < 0])[:3].tolist()
        raise ValueError(
            f"`{name}` must be >= 0 (a cost, latency, token or step count); "
            f"{int((v < 0).sum())} values are negative, e.g. {bad}"
        )
    return v
