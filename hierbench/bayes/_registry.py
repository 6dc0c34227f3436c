"""Registry of the model builders: name -> builder, hooks, default sampler settings, zoo spec.

A builder registers itself with :func:`register`; :func:`fit` reads the
``hierbench`` dict that every builder attaches to the ``pm.Model`` it returns
(``model.hierbench = {"model": name, "options": ..., "priors": ...,
"data_hash": ..., "hooks": {kind: hook name}, "data": {...}}``) and stamps it
onto the fit. That dict is data only: the steps a model needs after sampling
(its own posterior predictive, pointwise log-likelihood, derived quantities,
data swaps for replicates) are functions registered here under a name
(:func:`register_hook`), which the model names and :func:`model_hook` looks
up, so no closure travels with a model and a saved spec names its hooks. The
zoo files ``models/<name>/spec.toml`` are written from and read into the same
data.
"""

from __future__ import annotations

import functools
import json
import tomllib
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .._base import HierbenchError
from .._base import PartialCreditError
from .._base import cluster_codes
from .._base import counts
from .._base import data_hash as data_hash  # public as hierbench.bayes.data_hash
from .._base import refuse_agents_without_runs
from ._sampler._sampling import FIT_DEFAULTS

__all__ = [
    "HOOK_KINDS",
    "ModelEntry",
    "PriorError",
    "count_coords",
    "count_data",
    "count_info",
    "data_hash",
    "get_model",
    "list_models",
    "log_binom",
    "make_prior",
    "merge_priors",
    "model_hook",
    "normal_group",
    "prepare_counts",
    "read_spec",
    "register",
    "register_hook",
    "spec_to_toml",
]

#: the steps :func:`hierbench.bayes.fit` runs by name, and what each hook is called with
#: (``info`` is the model's ``hierbench`` dict, bound by :func:`model_hook`)
HOOK_KINDS: dict[str, str] = {
    "predictive": "(fit, generator, *, info) -> fit with a posterior_predictive group",
    "log_likelihood": "(fit, *, info) -> pointwise log-likelihood Dataset",
    "postprocess": "(fit, generator, *, info) -> fit with derived quantities added",
    "data_updates": "(cells, *, info) -> new data values for a replicate of the same design",
}

_HOOKS: dict[str, Callable[..., Any]] = {}


def register_hook(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the hook ``name`` (``"<model>.<what>"``).

    Examples
    --------
    >>> @register_hook("example.noop")
    ... def _noop(dt, gen, *, info):
    ...     return dt
    >>> model_hook({"hooks": {"postprocess": "example.noop"}}, "postprocess")(1, None)
    1
    """

    def add(fn: Callable[..., Any]) -> Callable[..., Any]:
        _HOOKS[name] = fn
        return fn

    return add


def model_hook(info: Mapping[str, Any] | None, kind: str) -> Callable[..., Any] | None:
    """The hook of kind ``kind`` a model names, bound to the model's data; None if it names none.

    Parameters
    ----------
    info : mapping or None
        A model's ``hierbench`` dict (a builder's model carries it).
    kind : str
        One of :data:`HOOK_KINDS`.

    Returns
    -------
    callable or None
        The registered function with the model's dict bound as ``info``.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> from hierbench.bayes import build_crossed
    >>> data, _ = simulate_eval(n_agents=2, n_tasks=6, n_runs=2, rng=0)
    >>> info = build_crossed(data).hierbench
    >>> info["hooks"]["predictive"], model_hook(info, "log_likelihood") is None
    ('crossed.predictive', True)
    """
    if kind not in HOOK_KINDS:
        raise ValueError(f"`kind` must be one of {sorted(HOOK_KINDS)}; got {kind!r}")
    name = ((info or {}).get("hooks") or {}).get(kind)
    if name is None:
        return None
    if name not in _HOOKS:
        raise KeyError(f"the model names the {kind} hook {name!r}, which is not registered {sorted(_HOOKS)}")
    return functools.partial(_HOOKS[name], info=info)


@dataclass(frozen=True)
class ModelEntry:
    """A registered model: builder, default priors, sampler settings and hook names.

    The default priors are a function of the options; the hooks are named by
    :data:`HOOK_KINDS`.
    """

    name: str
    builder: Callable[..., Any]
    default_priors: Callable[[Mapping[str, Any]], Mapping[str, Any]]
    default_options: Mapping[str, Any] = field(default_factory=dict)
    #: the model's own sampler settings, on top of ``FIT_DEFAULTS`` (e.g. ``target_accept``)
    sampler_settings: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    hooks: Mapping[str, str] = field(default_factory=dict)

    def spec(self, **options: Any) -> dict[str, Any]:
        """The zoo spec (as written to ``spec.toml``) for these options."""
        opts = {**self.default_options, **options}
        return {
            "model": self.name,
            "builder": f"hierbench.bayes.build_{self.name}",
            "description": self.description,
            "options": opts,
            "priors": {k: dict(v) for k, v in self.default_priors(opts).items()},
            "sampler": {**FIT_DEFAULTS, **self.sampler_settings},
            "hooks": dict(self.hooks),
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


#: what a fit keeps of its data's reading record (the reader's attrs), as root attrs ``hierbench_data_<name>``
PROVENANCE = ("source", "reader", "errors", "agent_column", "task_column", "score_kind")


def data_provenance(attrs: Mapping[str, Any]) -> dict[str, str]:
    """``hierbench_data_<name>`` for each of ``PROVENANCE`` the data's attrs hold: where a fit's data came from.

    A saved fit then says which file and reader its data came from, besides
    the hash of what the model saw.

    Examples
    --------
    >>> data_provenance({"source": "runs.csv", "reader": "from_records", "n_records_read": 9})
    {'hierbench_data_source': 'runs.csv', 'hierbench_data_reader': 'from_records'}
    """
    return {f"hierbench_data_{k}": str(attrs[k]) for k in PROVENANCE if attrs.get(k) is not None}


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


def count_coords(
    counts: xr.Dataset, cells: Mapping[str, Any], *, clusters: bool = False
) -> tuple[dict[str, Any], np.ndarray | None]:
    """A count model's coords (agent, task, cell; cluster when used) and each task's cluster index.

    Clusters follow the one cluster-code rule (:func:`hierbench._base.cluster_codes`): a
    task without a label is a cluster of its own, never pooled.
    """
    coords: dict[str, Any] = {
        "agent": counts.agent.values.tolist(),
        "task": counts.task.values.tolist(),
        "cell": np.arange(cells["cell_n"].size),
    }
    if not clusters:
        return coords, None
    cl_idx, cl_labels = cluster_codes(counts, "cluster", dim="task")
    coords["cluster"] = cl_labels.tolist()
    return coords, cl_idx


def normal_group(name: str, z_name: str, loc: Any, scale: Any, *, centred: bool, dims: str) -> Any:
    """Levels ``N(loc, scale)``: the variable ``name`` (centred) or ``loc + scale * z_name`` (not).

    A group whose levels are well informed by their own data samples better
    centred; a weakly informed one needs the non-centred form to avoid the
    funnel (the choice: :mod:`hierbench.bayes._structure`).
    """
    import pymc as pm

    if centred:
        return pm.Normal(name, loc, scale, dims=dims)
    z = pm.Normal(z_name, 0.0, 1.0, dims=dims)
    return loc + scale * z


def count_info(
    name: str,
    structure: Any,
    counts: xr.Dataset,
    cells: Mapping[str, Any],
    priors: Mapping[str, Any],
    hooks: Mapping[str, str],
    **extra: Any,
) -> dict[str, Any]:
    """The ``model.hierbench`` dict of a count model: data only, its hooks named.

    Holds the model's name, priors, structure (``structure.to_dict()``),
    data hash, the observed cells' labels and (agent, task) positions, how many cells were never run,
    the hook names (:data:`HOOK_KINDS`), and ``extra`` (options, the data the
    hooks read, sampler defaults, variable attrs).
    """
    fingerprint = data_hash(counts)
    return {
        "model": name,
        "priors": priors,
        "structure": structure.to_dict(),
        "data_hash": fingerprint,
        "counts_hash": fingerprint,  # the counts are what the model saw
        "cell_coords": {"cell_agent": cells["cell_agent"], "cell_task": cells["cell_task"]},
        "cell_index": (cells["cell_agent_idx"], cells["cell_task_idx"]),
        "n_cells_excluded": cells["n_cells_excluded"],
        "hooks": dict(hooks),
        "root_attrs": dict(counts.attrs),  # the data's reading record (prepare_counts)
        **extra,
    }


def count_data(counts: xr.Dataset, cells: Mapping[str, Any]) -> tuple[Any, Any, Any, Any]:
    """Put a count model's data inside its ``pm.Model``.

    ``n_runs``, ``n_success`` over (agent, task) and ``cell_n_runs``,
    ``cell_n_success`` over the observed cells (the names
    :func:`hierbench.bayes.fit_replicates` swaps).
    """
    import pymc as pm

    n_grid = pm.Data("n_runs", counts.n_runs.values, dims=("agent", "task"))
    y_grid = pm.Data("n_success", counts.n_success.values, dims=("agent", "task"))
    n_cell = pm.Data("cell_n_runs", cells["cell_n"], dims="cell")
    y_cell = pm.Data("cell_n_success", cells["cell_y"], dims="cell")
    return n_grid, y_grid, n_cell, y_cell


def log_binom(y: np.ndarray, n: np.ndarray) -> np.ndarray:
    """``log C(n, y)`` per cell: a data constant of a binomial likelihood.

    Examples
    --------
    >>> float(np.exp(log_binom(np.array([2]), np.array([4])))[0])
    6.0
    """
    from scipy.special import gammaln

    y, n = np.asarray(y, dtype=float), np.asarray(n, dtype=float)
    return gammaln(n + 1.0) - gammaln(y + 1.0) - gammaln(n - y + 1.0)


def _binary_counts(data: xr.Dataset, name: str, model: str) -> xr.Dataset:
    """Counts of binary scores through the base layer's one counts routine; partial credit refused."""
    from ..data import EvalDataError
    from ..data import to_counts

    purpose = (
        f"{model} (a binomial likelihood on success counts; for scores in [0, 1] use the "
        "[0, 1]-score model, hierbench.bayes.build_mixed(data), whose likelihood has atoms at 0 and 1 and "
        "the crossed model's terms)"
    )
    if "score" in data:
        tally = to_counts(data)  # the eval dataset's schema checks
        if not int(tally.attrs.get("binary", 1)):
            counts(data, binary=True, name=name, purpose=purpose)  # raises, naming the cells
        return tally
    if not ("n_runs" in data and "n_success" in data):
        raise EvalDataError(
            f"`{name}` must hold `score(agent, task, run)` or `n_runs` and `n_success` "
            f"over (agent, task); found {list(data.data_vars)}"
        )
    for d in ("agent", "task"):
        if d not in data["n_runs"].dims:
            raise EvalDataError(f"`{name}` counts must have dims ('agent', 'task'); got {data['n_runs'].dims}")
    filled = data.assign(n_runs=data["n_runs"].fillna(0), n_success=data["n_success"].fillna(0))
    y = filled["n_success"].transpose("agent", "task").values
    frac = np.abs(y - np.round(y)) > 1e-9
    if frac.any():
        cells = [
            (str(data.agent.values[i]), str(data.task.values[j]), float(y[i, j]))
            for i, j in np.argwhere(frac)[:5]
        ]
        raise PartialCreditError(
            f"`{name}`: {purpose} needs whole success counts (binary scores); {int(frac.sum())} "
            f"cells have fractional n_success (partial credit), e.g. (agent, task, n_success) "
            f"{cells}. Binarise the scores with a threshold before counting (e.g. score >= 1), "
            "or use an estimator for continuous scores (bootstrap_ci)."
        )
    return counts(filled, binary=True, name=name, purpose=purpose)


def prepare_counts(
    data: xr.Dataset, *, name: str = "data", model: str = "a Bayesian count model"
) -> tuple[xr.Dataset, dict[str, Any]]:
    """Counts of an eval dataset (or a counts dataset) plus the observed-cell index.

    Scores must be binary: partial credit (a score strictly between 0 and 1,
    or counts made from such scores) is refused with
    :class:`hierbench._base.PartialCreditError` naming the cells, even when a
    cell's scores sum to a whole number (four runs scoring 0.5 are not "2 of
    4 succeeded").

    Returns the counts (``n_runs``, ``n_success`` over (agent, task), 0 where
    not run) and a dict with ``cell_agent_idx``, ``cell_task_idx``,
    ``cell_n``, ``cell_y`` (observed cells only, ``n_runs > 0``),
    ``cell_agent``, ``cell_task`` (labels) and ``n_cells_excluded``.
    """
    from ..data import EvalDataError

    if not isinstance(data, xr.Dataset):
        raise EvalDataError(f"`{name}` must be an eval dataset or a counts dataset; got {type(data).__name__}")
    tally = _binary_counts(data, name, model)
    n = tally["n_runs"].transpose("agent", "task").fillna(0).values
    y = tally["n_success"].transpose("agent", "task").fillna(0).values
    n = n.astype(np.int64)
    y = np.round(y).astype(np.int64)
    obs = n > 0
    if not obs.any():
        raise EvalDataError(f"`{name}` has no observed cells (every n_runs is 0)")
    ai, ti = np.nonzero(obs)
    agents = np.asarray(tally["agent"].values).astype(str)
    refuse_agents_without_runs(n, agents, name, model)
    tasks = np.asarray(tally["task"].values).astype(str)
    cluster_coord = {}
    if "cluster" in tally.coords:
        # the one cluster-code rule: a task without a label becomes its own cluster (warned),
        # never one pooled "nan" cluster
        codes, labels = cluster_codes(tally, "cluster", dim="task")
        cluster_coord = {"cluster": ("task", np.asarray(labels, dtype=str)[codes])}
    out = xr.Dataset(
        {"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), y)},
        coords={"agent": agents, "task": tasks} | cluster_coord,
        attrs=data_provenance(data.attrs),
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
    return out, cells
