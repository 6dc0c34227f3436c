"""Input forms shared by the frequentist estimators."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import xarray as xr

from .._base import COUNTS_HASH
from .._base import HierbenchError
from .._base import as_rng
from .._base import cluster_codes
from .._base import counts_fingerprint

__all__ = [
    "agent_task_means", "data_variable", "numeric_values", "score_array", "task_resampling", "with_counts_hash",
]


def data_variable(
    data: xr.Dataset | xr.DataArray, var: str | None, *, name: str = "data"
) -> xr.DataArray:
    """The variable ``var`` of an eval dataset, or a DataArray as given (``var`` then unused).

    The one reader of "a Dataset and the name of one of its variables, or the
    variable itself" (scores, rubric scores, cost, latency, tokens).

    Examples
    --------
    >>> import numpy as np
    >>> ds = xr.Dataset({"cost": ("task", np.array([1.0, 2.0]))})
    >>> data_variable(ds, "cost").values.tolist()
    [1.0, 2.0]
    >>> data_variable(ds, "latency")
    Traceback (most recent call last):
    ...
    hierbench._base.HierbenchError: `var` must name a variable of `data` ['cost']; got 'latency'
    """
    if isinstance(data, xr.Dataset):
        if var is None or var not in data:
            raise HierbenchError(
                f"`var` must name a variable of `{name}` {sorted(data.data_vars)}; got {var!r}"
            )
        return data[var]
    if isinstance(data, xr.DataArray):
        return data
    raise TypeError(f"`{name}` must be an xarray Dataset or DataArray; got {type(data).__name__}")


def score_array(data: xr.Dataset | xr.DataArray) -> xr.DataArray:
    """The ``score`` of an eval dataset, or a score DataArray as given.

    Counts datasets (``n_runs``, ``n_success``) are the callers' own branch;
    anything else is refused with the forms that are accepted.
    """
    if isinstance(data, xr.Dataset) and "score" not in data:
        raise HierbenchError(
            "`data` must be an eval dataset (with `score`), a counts dataset (with `n_runs` "
            f"and `n_success`) or a score DataArray; got variables {list(data.data_vars)}"
        )
    return data_variable(data, "score")


def agent_task_means(
    data: xr.Dataset | xr.DataArray, *, agent_dim: str, task_dim: str, run_dim: str, purpose: str
) -> tuple[xr.DataArray, np.ndarray]:
    """The scores and each (agent, task)'s mean over the runs that happened, ``(M, T)``.

    The one reader of "every agent on the tasks" for the estimators that compare
    agents (``purpose`` names the estimator in messages): at least 2 agents, dims
    ``(agent_dim, task_dim[, run_dim])`` only, finite scores or NaN (not run).

    Examples
    --------
    >>> s = xr.DataArray([[[1.0, 0.0]], [[1.0, np.nan]]], dims=("agent", "task", "run"))
    >>> agent_task_means(s, agent_dim="agent", task_dim="task", run_dim="run", purpose="x")[1].tolist()
    [[0.5], [1.0]]
    """
    score = score_array(data)
    for name, d in (("agent_dim", agent_dim), ("task_dim", task_dim)):
        if d not in score.dims:
            raise ValueError(f"`{name}` must be a dimension of the scores {score.dims}; got {d!r}")
    extra = [d for d in score.dims if d not in (agent_dim, task_dim, run_dim)]
    if extra:
        raise ValueError(
            f"the scores must have dims ({agent_dim}, {task_dim}[, {run_dim}]); found extra dims {extra}"
        )
    if score.sizes[agent_dim] < 2:
        held = f" (`data` holds only {str(score[agent_dim].values[0])!r})" if score.sizes[agent_dim] else ""
        raise HierbenchError(f"{purpose} needs >= 2 agents; got {score.sizes[agent_dim]}{held}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        per = score.mean(run_dim, skipna=True) if run_dim in score.dims else score
    y = np.asarray(per.transpose(agent_dim, task_dim).values, dtype=float)
    if np.isinf(y).any():
        raise ValueError("the scores must be finite or NaN (not run); found infinite values")
    return score, y


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


def with_counts_hash(result: Any, data: Any, rng: Any = None) -> Any:
    """``result`` with the fingerprint of ``data``'s score cells in its estimate's attrs (and its own).

    The fingerprint (``hierbench_counts_hash``) is the one a fit of the same log
    records, so ``hierbench.compare.side_by_side`` can refuse a result from
    another log beside it. Data without agent and task dims leave ``result`` as it is.
    An int ``rng`` (the call's seed) is recorded too, as ``rng_seed``: a report shown
    the result states it (a Generator's or None's draws cannot be stated, and are not).
    """
    stamp = {COUNTS_HASH: counts_fingerprint(data)}
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        stamp["rng_seed"] = int(rng)
    for key, value in stamp.items():
        if value == "":
            continue
        result.estimate.attrs[key] = value
        if isinstance(getattr(result, "attrs", None), dict):
            result.attrs[key] = value
    return result
