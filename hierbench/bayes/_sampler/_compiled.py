"""Compiled models of this process, reused wherever only the data values differ.

nutpie's numba build of a model costs seconds (8-10 CPU-s for a small crossed
model), far more than sampling a small design. A compiled model is a function
of its shared data, so a second model that differs from a compiled one only
in the *values* of its data (same builder, options, priors, structure,
shapes, graph and constants) is served by swapping its data into the
compiled one (``with_data``), not by compiling again. :func:`hierbench.bayes.fit`
goes through :func:`compiled_for`; :func:`hierbench.bayes.fit_replicates`
stores and looks up its builds under the same key and gives each replicate
its data with :func:`with_values`.

The key (:func:`design_key`) is taken from the model's graph itself: every
operation in topological order with its wiring, every constant by value,
every shared variable that is not swapped by value, every swapped one by
name, type and shape (data that a prior reads count as not swapped, since
the initial point follows them), the initial-value settings, the dims and
the builder's spec. A
builder that branches on the data changes the graph or a constant, so the key;
coordinate labels are carried over from the new model. A reused build gives
the same draws, bit for bit, as a fresh one (a test).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pymc as pm

from ._sampling import compile_and_say

__all__ = [
    "KEEP",
    "clear_compiled",
    "compiled_for",
    "design_key",
    "lookup",
    "model_data",
    "store",
    "with_values",
]

#: how many compiled models a process keeps (oldest dropped first)
KEEP = 4
_CACHE: dict[str, Any] = {}


def _digest(value: Any) -> str:
    try:
        arr = np.ascontiguousarray(value)
        if arr.dtype != object:
            return f"{arr.dtype}{arr.shape}" + hashlib.sha256(arr.tobytes()).hexdigest()[:16]
    except (TypeError, ValueError):
        pass
    return repr(value)


def _leaf(var: Any, swapped: set[str]) -> str:
    """A graph input: swapped data by name, type and shape; anything else by value."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.tensor.random.type import RandomType

    if isinstance(var.type, RandomType):
        return f"rng:{var.type}"  # the sampler does not draw from the graph's generators
    if isinstance(var, SharedVariable):
        value = var.get_value()
        if var.name in swapped:
            return f"data:{var.name}:{var.type}:{np.shape(value)}"
        return f"shared:{var.name}:{var.type}:{_digest(value)}"
    if isinstance(var, Constant):
        return f"const:{var.type}:{_digest(var.data)}"
    return f"input:{var.name}:{var.type}"


def _op_text(op: Any) -> str:
    props = getattr(op, "_props_dict", None)
    return f"{type(op).__module__}.{type(op).__qualname__}:{op}:{props() if props else ''}"


def _transform_text(t: Any) -> str:
    if t is None:
        return "none"
    state = sorted((k, _digest(v)) for k, v in vars(t).items())
    return f"{type(t).__module__}.{type(t).__qualname__}:{state}"


def _graph(model: pm.Model, swapped: set[str], h: Any) -> None:
    """Feed ``h`` the model's generative graph: operations, wiring, constants, leaves."""
    from pytensor.graph.traversal import graph_inputs
    from pytensor.graph.traversal import io_toposort

    observed = [model.rvs_to_values[rv] for rv in model.observed_RVs]
    outputs = [*model.basic_RVs, *model.deterministics, *model.potentials, *observed]
    inputs = list(graph_inputs(outputs))
    index: dict[Any, str] = {}
    for i, node in enumerate(io_toposort(inputs, outputs)):
        wiring = [index.get(x) or _leaf(x, swapped) for x in node.inputs]
        h.update(f"{i}|{_op_text(node.op)}|{wiring}\n".encode())
        for j, out in enumerate(node.outputs):
            index[out] = f"n{i}.{j}"
    for var in outputs:
        h.update(f"out:{var.name}:{index.get(var) or _leaf(var, swapped)}\n".encode())
    transforms = {rv.name: _transform_text(t) for rv, t in model.rvs_to_transforms.items()}
    h.update(json.dumps(transforms, sort_keys=True).encode())


def _prior_data(model: pm.Model) -> set[str]:
    """Data the free variables' priors read: part of the design (the initial point follows them)."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.traversal import graph_inputs

    return {v.name for v in graph_inputs(model.free_RVs) if isinstance(v, SharedVariable)}


def model_data(model: pm.Model) -> dict[str, np.ndarray]:
    """The values of ``model``'s data, by name (what a stored build is given to fit this model)."""
    return {v.name: np.asarray(v.get_value()) for v in model.data_vars}


def design_key(model: pm.Model, info: dict[str, Any]) -> str:
    """What a compiled ``model`` depends on once its data values are taken out.

    Two models with the same key compile to the same function of their data
    (see the module docstring).
    """
    swapped = {v.name for v in model.data_vars}
    h = hashlib.sha256()
    spec = {k: info.get(k) for k in ("model", "options", "priors")}
    decisions = (info.get("structure") or {}).get("decisions") or {}
    spec["structure"] = {
        k: (v.get("choice") if isinstance(v, dict) else v) for k, v in decisions.items()
    }
    spec["dims"] = {k: list(v) for k, v in model.named_vars_to_dims.items()}
    h.update(json.dumps(spec, sort_keys=True, default=str).encode())
    _graph(model, swapped - _prior_data(model), h)
    h.update(
        repr(
            sorted((rv.name, _digest(v)) for rv, v in model.rvs_to_initial_values.items())
        ).encode()
    )
    return h.hexdigest()


def lookup(key: str) -> Any:
    """The compiled model stored under ``key``, or None."""
    return _CACHE.get(key)


def store(key: str, compiled: Any) -> Any:
    """Keep ``compiled`` under ``key`` (dropping the oldest beyond :data:`KEEP`); return it."""
    while len(_CACHE) >= KEEP:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = compiled
    return compiled


def clear_compiled() -> int:
    """Forget the models this process has compiled; the next fit of each builds it again.

    :func:`~hierbench.bayes.fit` and :func:`~hierbench.bayes.fit_replicates`
    keep the last few nutpie builds (up to 4) and reuse one for a model that
    differs from it only in its data values (the fit's ``fit_run`` attr says
    ``"compile": "reused"``). Clear them to free their memory, or to time a
    fit's build.

    Returns
    -------
    int
        How many compiled models were dropped.

    Examples
    --------
    >>> from hierbench.bayes import clear_compiled
    >>> clear_compiled() >= 0
    True
    """
    n = len(_CACHE)
    _CACHE.clear()
    return n


def with_values(compiled: Any, values: Mapping[str, Any]) -> Any:
    """``compiled`` with ``values``' data swapped in (names it does not read are passed over)."""
    shared = {getattr(v, "name", None) for v in compiled.shared_var_keys}
    return compiled.with_data(**{k: v for k, v in values.items() if k in shared})


def _with_model_data(compiled: Any, model: pm.Model) -> Any:
    """``compiled`` with ``model``'s data values and coordinate labels swapped in."""
    import pandas as pd

    out = with_values(compiled, model_data(model))
    coords = dict(out.coords)
    coords.update({k: pd.Index(v) for k, v in model.coords.items() if v is not None})
    return dataclasses.replace(out, _coords=coords)


def compiled_for(model: pm.Model, info: dict[str, Any]) -> tuple[Any, str | None]:
    """``model`` compiled (or a stored build of its design with its data); how it was built (None: reused)."""
    key = design_key(model, info)
    cached = lookup(key)
    if cached is not None:
        return _with_model_data(cached, model), None
    compiled, how = compile_and_say(model)
    return store(key, compiled), how
