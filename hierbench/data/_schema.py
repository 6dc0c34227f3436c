"""The canonical evaluation dataset: its contract, validation and reductions.

An *eval dataset* is a plain :class:`xarray.Dataset` with dims ``agent``,
``task`` and ``run``; agent and task labels are strings exactly as the
records wrote them (the readers' rules are in :mod:`hierbench.data._values`):

``score(agent, task, run)``
    float64 in [0, 1] (binary or partial credit); NaN where the run did not
    happen (or was excluded under ``errors="exclude"``).
``error(agent, task, run)``
    bool, True where the run hit an infrastructure failure (crash, timeout,
    environment failure); False where no run happened.
optional per-run variables
    ``cost``, ``latency``, ``tokens``, ``steps``, ``confidence`` (float64) and
    boolean per-run annotations listed in ``attrs["annotations"]``.
task coords
    ``tag``, ``cluster`` (str, exactly as written; a task without a label
    has a missing value, never ``""`` or a shared label), and any other
    per-task attribute.
agent coords
    ``model``, ``scaffold``, ``settings`` or anything constant per agent.
attrs
    ``hierbench_schema``, ``errors`` (the error policy applied to ``score``),
    ``n_records_read``, ``n_records_kept``, ``n_error_runs``, ``source``,
    ``reader``, ``binary`` (1 if every kept score is 0 or 1, else 0: partial
    credit is kept as recorded, never rounded), ``n_tasks_without_cluster``
    (when read with a cluster column), and as JSON text: ``not_kept`` (reason -> count),
    ``inconsistent_attributes`` (attribute -> number of tasks/agents whose
    value differed between records) and ``annotations`` (names of the boolean
    per-run annotation variables).

Unbalanced data is represented as it is: a cell with fewer runs has NaN in
the missing run slots, a task an agent never attempted is all NaN for that
agent. Nothing is ever padded with fake failures.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import numpy as np
import xarray as xr

from .._base import HierbenchError, HierbenchWarning, counts

__all__ = [
    "PER_RUN_FLOATS",
    "SCHEMA_VERSION",
    "EvalDataError",
    "InconsistentAttributeWarning",
    "check_eval_dataset",
    "to_counts",
]

SCHEMA_VERSION = "hierbench.eval/1"
PER_RUN_FLOATS = ("cost", "latency", "tokens", "steps", "confidence")
DIMS = ("agent", "task", "run")


class EvalDataError(HierbenchError):
    """Raised when evaluation records or an eval dataset break the schema."""


class InconsistentAttributeWarning(HierbenchWarning):
    """A per-task or per-agent attribute differs between the records of one task/agent."""


def _fmt_list(values: Iterable, limit: int = 10) -> str:
    values = list(values)
    shown = ", ".join(repr(v) if isinstance(v, str) else str(v) for v in values[:limit])
    more = f", ... ({len(values) - limit} more)" if len(values) > limit else ""
    return f"[{shown}{more}]"


def check_eval_dataset(ds: xr.Dataset, *, name: str = "data") -> xr.Dataset:
    """Validate that ``ds`` follows the eval-dataset contract and return it.

    Parameters
    ----------
    ds : xarray.Dataset
        Candidate eval dataset.
    name : str
        Argument name used in error messages.

    Returns
    -------
    xarray.Dataset
        ``ds`` itself, unchanged.

    Raises
    ------
    EvalDataError
        Naming the rule and the offending values.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> bad = xr.Dataset({"score": (("agent", "task", "run"), np.full((1, 1, 1), 2.0))},
    ...                  coords={"agent": ["a"], "task": ["t"], "run": [0]})
    >>> check_eval_dataset(bad)
    Traceback (most recent call last):
    ...
    hierbench.data._schema.EvalDataError: `data.score` must lie in [0, 1]; 1 values do not, e.g. (agent, task, run, score) [('a', 't', 0, 2.0)]
    """
    if not isinstance(ds, xr.Dataset):
        raise EvalDataError(
            f"`{name}` must be an xarray.Dataset with dims {DIMS}; got {type(ds).__name__}"
        )
    if "score" not in ds:
        raise EvalDataError(f"`{name}` must contain a `score` variable; found {list(ds.data_vars)}")
    missing = [d for d in DIMS if d not in ds["score"].dims]
    if missing:
        raise EvalDataError(
            f"`{name}.score` must have dims {DIMS}; missing {missing} (has {ds['score'].dims})"
        )
    s = ds["score"].values
    bad = np.isfinite(s) & ((s < 0) | (s > 1))
    if bad.any():
        idx = np.argwhere(bad)[:10]
        cells = [
            (str(ds.agent.values[i]), str(ds.task.values[j]), int(ds.run.values[k]), float(s[i, j, k]))
            for i, j, k in idx
        ]
        raise EvalDataError(
            f"`{name}.score` must lie in [0, 1]; {int(bad.sum())} values do not, e.g. "
            f"(agent, task, run, score) {_fmt_list(cells)}"
        )
    if np.isinf(s).any():
        raise EvalDataError(f"`{name}.score` must be finite or NaN; found infinite values")
    return ds


def to_counts(ds: xr.Dataset, *, dim: str = "run") -> xr.Dataset:
    """Reduce an eval dataset to its per agent x task sufficient statistics.

    Parameters
    ----------
    ds : xarray.Dataset
        Eval dataset (see module docstring).
    dim : str
        The run dimension to reduce over.

    Returns
    -------
    xarray.Dataset
        ``n_runs(agent, task)`` (int64, runs that happened and were kept),
        ``n_success(agent, task)`` (float64, sum of scores: the success count
        for binary scores), ``n_error(agent, task)`` (int64, runs flagged as
        infrastructure errors) with the task and agent coords of ``ds``.
        ``attrs["binary"]`` says whether every kept score is 0 or 1.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=2, n_tasks=3, n_runs=4, rng=0)
    >>> c = to_counts(ds)
    >>> int(c.n_runs.sum())
    24
    """
    check_eval_dataset(ds, name="ds")
    if dim not in ds["score"].dims:
        raise EvalDataError(f"`dim` must be a dimension of `ds.score` {ds['score'].dims}; got {dim!r}")
    # the one counts routine of the base layer; partial credit is summed as recorded
    return counts(ds, dim=dim, binary=False, name="ds")


def _not_kept_attr(counts: dict[str, int]) -> str:
    return json.dumps({k: int(v) for k, v in counts.items() if v})
