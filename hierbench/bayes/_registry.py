"""Registry of the model builders: name -> builder, default sampler settings, zoo spec.

A builder registers itself with :func:`register`; :func:`fit` reads the
``hierbench`` dict that every builder attaches to the ``pm.Model`` it returns
(``model.hierbench = {"model": name, "options": ..., "priors": ...,
"data_hash": ...}``) and stamps it onto the fit. The zoo files
``models/<name>/spec.toml`` are written from and read into the same data.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .._base import HierbenchError, cluster_codes

__all__ = [
    "ModelEntry",
    "PriorError",
    "data_hash",
    "get_model",
    "list_models",
    "make_prior",
    "merge_priors",
    "prepare_counts",
    "read_spec",
    "register",
    "spec_to_toml",
]


@dataclass(frozen=True)
class ModelEntry:
    """A registered model: its builder, default priors (a function of the options), sampler settings."""

    name: str
    builder: Callable[..., Any]
    default_priors: Callable[[Mapping[str, Any]], Mapping[str, Any]]
    default_options: Mapping[str, Any] = field(default_factory=dict)
    sampler_settings: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def spec(self, **options: Any) -> dict[str, Any]:
        """The zoo spec (as written to ``spec.toml``) for these options."""
        opts = {**self.default_options, **options}
        return {
            "model": self.name,
            "builder": f"hierbench.bayes.build_{self.name}",
            "description": self.description,
            "options": opts,
            "priors": {k: dict(v) for k, v in self.default_priors(opts).items()},
            "sampler": dict(self.sampler_settings),
        }


_REGISTRY: dict[str, ModelEntry] = {}


def register(entry: ModelEntry) -> ModelEntry:
    """Add a model to the registry (idempotent for the same name)."""
    _REGISTRY[entry.name] = entry
    return entry


def get_model(name: str) -> ModelEntry:
    """The registered model ``name``."""
    if name not in _REGISTRY:
        raise KeyError(f"`name` must be a registered model {sorted(_REGISTRY)}; got {name!r}")
    return _REGISTRY[name]


def list_models() -> list[str]:
    """Names of the registered models."""
    return sorted(_REGISTRY)


def data_hash(counts: xr.Dataset) -> str:
    """sha256 of the count grids and their labels (what a count model sees)."""
    h = hashlib.sha256()
    for name in ("n_runs", "n_success"):
        da = counts[name].transpose("agent", "task")
        h.update(name.encode())
        h.update(np.ascontiguousarray(da.values, dtype=np.float64).tobytes())
    for dim in ("agent", "task"):
        h.update(json.dumps([str(v) for v in counts[dim].values]).encode())
    if "cluster" in counts.coords:
        h.update(json.dumps([str(v) for v in counts["cluster"].values]).encode())
    return h.hexdigest()


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def spec_to_toml(spec: Mapping[str, Any]) -> str:
    """Write a spec dict (scalars and one level of nested tables) as TOML.

    Examples
    --------
    >>> import tomllib
    >>> s = {"model": "m", "priors": {"mu": {"dist": "Normal", "sigma": 1.0}}}
    >>> tomllib.loads(spec_to_toml(s)) == s
    True
    """
    lines: list[str] = []
    tables: list[tuple[str, Mapping[str, Any]]] = []
    for k, v in spec.items():
        if isinstance(v, Mapping):
            tables.append((k, v))
        elif v is not None:
            lines.append(f"{k} = {_toml_value(v)}")
    for name, table in tables:
        flat = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
        sub = {k: v for k, v in table.items() if isinstance(v, Mapping)}
        lines.append("")
        lines.append(f"[{name}]")
        lines.extend(f"{k} = {_toml_value(v)}" for k, v in flat.items() if v is not None)
        for k, v in sub.items():
            lines.append("")
            lines.append(f"[{name}.{k}]")
            lines.extend(f"{kk} = {_toml_value(vv)}" for kk, vv in v.items() if vv is not None)
    return "\n".join(lines) + "\n"


def read_spec(path: str | Path) -> dict[str, Any]:
    """Read a zoo ``spec.toml`` into a dict (``options``, ``priors``, ``sampler``)."""
    with open(path, "rb") as f:
        return tomllib.load(f)


# ---------------------------------------------------------------------------
# helpers shared by the count-model builders


class PriorError(HierbenchError):
    """A prior specification is malformed (unknown name, distribution or parameter)."""


def merge_priors(
    defaults: Mapping[str, Mapping[str, Any]], priors: Mapping[str, Mapping[str, Any]] | None
) -> dict[str, dict[str, Any]]:
    """Defaults overridden by ``priors``; unknown names raise :class:`PriorError`."""
    out = {k: dict(v) for k, v in defaults.items()}
    if priors is None:
        return out
    if not isinstance(priors, Mapping):
        raise PriorError(f"`priors` must be a mapping name -> {{'dist': ..., params}}; got {type(priors).__name__}")
    unknown = sorted(set(priors) - set(defaults))
    if unknown:
        raise PriorError(f"`priors` keys must be among {sorted(defaults)}; got unknown {unknown}")
    for k, v in priors.items():
        if not isinstance(v, Mapping) or "dist" not in v:
            raise PriorError(f"`priors[{k!r}]` must be a mapping with a 'dist' key; got {v!r}")
        out[k] = dict(v)
    return out


def make_prior(name: str, spec: Mapping[str, Any], **kwargs: Any) -> Any:
    """Create the PyMC random variable ``name`` from a prior spec ``{'dist': 'Normal', ...}``."""
    import pymc as pm

    params = {k: v for k, v in spec.items() if k != "dist"}
    dist = getattr(pm, str(spec["dist"]), None)
    if dist is None or not isinstance(dist, type):
        raise PriorError(f"`priors[{name!r}]['dist']` must name a pymc distribution; got {spec['dist']!r}")
    try:
        return dist(name, **params, **kwargs)
    except TypeError as err:
        raise PriorError(f"`priors[{name!r}]` has bad parameters {params}: {err}") from err


def prepare_counts(data: xr.Dataset, *, name: str = "data") -> tuple[xr.Dataset, dict[str, Any]]:
    """Counts of an eval dataset (or a counts dataset) plus the observed-cell index.

    Returns the counts (``n_runs``, ``n_success`` over (agent, task), 0 where
    not run) and a dict with ``cell_agent_idx``, ``cell_task_idx``,
    ``cell_n``, ``cell_y`` (observed cells only, ``n_runs > 0``),
    ``cell_agent``, ``cell_task`` (labels) and ``n_cells_excluded``.
    """
    from ..data import EvalDataError, to_counts

    if not isinstance(data, xr.Dataset):
        raise EvalDataError(f"`{name}` must be an eval dataset or a counts dataset; got {type(data).__name__}")
    if "score" in data:
        counts = to_counts(data)
    elif "n_runs" in data and "n_success" in data:
        counts = data
    else:
        raise EvalDataError(
            f"`{name}` must hold `score(agent, task, run)` or `n_runs` and `n_success` "
            f"over (agent, task); found {list(data.data_vars)}"
        )
    for d in ("agent", "task"):
        if d not in counts["n_runs"].dims:
            raise EvalDataError(f"`{name}` counts must have dims ('agent', 'task'); got {counts['n_runs'].dims}")
    n = counts["n_runs"].transpose("agent", "task").fillna(0).values
    y = counts["n_success"].transpose("agent", "task").fillna(0).values
    if np.any(np.abs(y - np.round(y)) > 1e-9):
        bad = np.argwhere(np.abs(y - np.round(y)) > 1e-9)[:5]
        cells = [(str(counts.agent.values[i]), str(counts.task.values[j]), float(y[i, j])) for i, j in bad]
        raise EvalDataError(
            f"`{name}` must have binary scores (integer success counts) for a count model; "
            f"non-integer n_success in (agent, task, n_success) {cells}"
        )
    if np.any(y < 0) or np.any(y > n) or np.any(n < 0):
        raise EvalDataError(f"`{name}` must satisfy 0 <= n_success <= n_runs in every cell")
    n = n.astype(np.int64)
    y = np.round(y).astype(np.int64)
    obs = n > 0
    if not obs.any():
        raise EvalDataError(f"`{name}` has no observed cells (every n_runs is 0)")
    ai, ti = np.nonzero(obs)
    agents = np.asarray(counts["agent"].values).astype(str)
    tasks = np.asarray(counts["task"].values).astype(str)
    cluster_coord = {}
    if "cluster" in counts.coords:
        # the one cluster-code rule: a task without a label becomes its own cluster (warned),
        # never one pooled "nan" cluster
        codes, labels = cluster_codes(counts, "cluster", dim="task")
        cluster_coord = {"cluster": ("task", np.asarray(labels, dtype=str)[codes])}
    counts = xr.Dataset(
        {"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), y)},
        coords={"agent": agents, "task": tasks} | cluster_coord,
    )
    cells = {
        "cell_agent_idx": ai,
        "cell_task_idx": ti,
        "cell_n": n[obs],
        "cell_y": y[obs],
        "cell_agent": agents[ai],
        "cell_task": tasks[ti],
        "n_cells_excluded": int((~obs).sum()),
    }
    return counts, cells
