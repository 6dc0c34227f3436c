"""Approximate posteriors (ADVI) that always carry their measured error against NUTS.

Variational fits are fast but biased: mean-field ADVI ignores posterior
correlations and typically shrinks standard deviations (the issue measured
the task and agent x task sds of a plain crossed model shrunk by 14% and 29%;
MAP and a Laplace fit around it were degenerate). So an approximate fit here
is never returned bare: it carries either its error against a NUTS fit of
the same data (``reference=``) or the error measured on a mid-size case
(``MEASURED_ERROR`` in this module, reproduced by ``python benchmarks/bench_approx.py``),
in attrs and in an :class:`ApproximationWarning`.
"""

from __future__ import annotations

import importlib.util
import json
import time
from collections.abc import Sequence
from typing import Any
from typing import Literal

import numpy as np
import pymc as pm
import xarray as xr

from ..._base import HierbenchWarning
from ..._base import as_rng
from ..._base import warn_user
from ..._docs import fill_doc
from .._registry import model_hook
from ._fit import _check_model
from ._fit import _stamp
from ._fit import _with_log_likelihood
from ._sampling import exact_numba

__all__ = ["MEASURED_ERROR", "ApproximationWarning", "approximation_error", "fit_approx"]

METHODS = ("advi", "fullrank_advi", "pathfinder")

#: Error of each method against NUTS (4 x 1000 draws) on the crossed model,
#: simulate_eval(n_agents=12, n_tasks=200, n_runs=10, rng=1), default
#: options; written by ``python benchmarks/bench_approx.py`` (see its output in
#: models/crossed/card.md). ``sd_ratio`` is approx sd / NUTS sd per scalar,
#: ``max_abs_mean_shift`` the largest absolute mean difference / NUTS sd over elements.
#: Measured 2026-11-30 on the shared 2-core machine under load (times inflated).
MEASURED_ERROR: dict[str, dict[str, Any]] = {
    "crossed/advi": {
        "case": "simulate_eval(n_agents=12, n_tasks=200, n_runs=10, rng=1)",
        "fit_time_s": 31.6,
        "nuts_time_s": 75.5,
        "sd_task_sd_ratio": 0.988,
        "sd_task_mean_shift": 0.1095,
        "sd_agent_task_sd_ratio": 1.012,
        "sd_agent_task_mean_shift": 0.6535,
        "ability_sd_ratio": 1.0687,
        "ability_mean_shift": 0.092,
        "task_effect_sd_ratio": 1.096,
        "task_effect_mean_shift": 0.1111,
        "mean_observed_sd_ratio": 1.0645,
        "mean_observed_mean_shift": 0.0873,
    },
    "crossed/fullrank_advi": {
        "case": "simulate_eval(n_agents=12, n_tasks=200, n_runs=10, rng=1)",
        "fit_time_s": 38.1,
        "nuts_time_s": 75.5,
        "sd_task_sd_ratio": 1.0828,
        "sd_task_mean_shift": 0.1988,
        "sd_agent_task_sd_ratio": 1.0359,
        "sd_agent_task_mean_shift": 1.0633,
        "ability_sd_ratio": 1.1685,
        "ability_mean_shift": 0.0968,
        "task_effect_sd_ratio": 1.1343,
        "task_effect_mean_shift": 0.1164,
        "mean_observed_sd_ratio": 1.3043,
        "mean_observed_mean_shift": 0.1158,
    },
}


class ApproximationWarning(HierbenchWarning):
    """An approximate (variational) posterior is in use: read its measured error."""


def approximation_error(
    approx: xr.DataTree, reference: xr.DataTree, *, var_names: Sequence[str] | None = None
) -> xr.Dataset:
    """Error of an approximate posterior against a NUTS reference of the same model and data.

    Parameters
    ----------
    approx, reference : xarray.DataTree
        The approximate fit and a NUTS fit (same variables).
    var_names : sequence of str, optional
        Variables to compare (default: the scalar and one-dim variables both share).

    Returns
    -------
    xarray.Dataset
        Per variable ``<var>_sd_ratio`` (approx sd / NUTS sd, elementwise,
        summarised by its mean over elements) and ``<var>_mean_shift`` (the
        largest absolute mean difference in NUTS sds), as scalar variables.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> r = np.random.default_rng(0)
    >>> mk = lambda s: xr.DataTree.from_dict({"posterior": xr.Dataset(
    ...     {"x": (("chain", "draw"), r.normal(0, s, (1, 4000)))})})
    >>> err = approximation_error(mk(0.5), mk(1.0))
    >>> round(float(err["x_sd_ratio"]), 1)
    0.5
    """
    a = approx["posterior"].to_dataset()
    b = reference["posterior"].to_dataset()
    if var_names is None:
        var_names = [
            v for v in a.data_vars if v in b and a[v].ndim <= 3 and not str(v).startswith("z_")
        ]
    out = {}
    for v in var_names:
        sa = a[v].std(("chain", "draw"))
        sb = b[v].std(("chain", "draw"))
        ma = a[v].mean(("chain", "draw"))
        mb = b[v].mean(("chain", "draw"))
        with np.errstate(divide="ignore", invalid="ignore"):
            out[f"{v}_sd_ratio"] = float((sa / sb).mean())
            out[f"{v}_mean_shift"] = float(np.nanmax(np.abs((ma - mb) / sb).values))
    return xr.Dataset({k: ((), val) for k, val in out.items()})


@fill_doc
def fit_approx(
    model: pm.Model,
    *,
    method: Literal["advi", "fullrank_advi", "pathfinder"] = "advi",
    n: int = 30_000,
    draws: int = 1000,
    rng: None | int | np.random.Generator = None,
    reference: xr.DataTree | None = None,
    log_likelihood: bool = False,
) -> xr.DataTree:
    """Fit a model by variational inference, with its error against NUTS attached.

    Parameters
    ----------
    model : pymc.Model
        A hierbench model.
    method : {"advi", "fullrank_advi", "pathfinder"}
        PyMC's mean-field or full-rank ADVI; ``"pathfinder"`` needs the
        package pymc-extras (not installed here: a clear ImportError).
    n : int
        Optimisation iterations.
    draws : int
        Draws from the fitted approximation.
    %(rng)s
    reference : xarray.DataTree, optional
        A NUTS fit of the same model and data; the error is then measured
        here and stored in the ``approximation_error`` group.
    log_likelihood : bool
        Add the pointwise log-likelihood group.

    Returns
    -------
    xarray.DataTree
        ``posterior`` (one chain), ``observed_data``, ``constant_data``
        (and ``log_likelihood``, ``approximation_error``); root attrs as
        :func:`fit` plus ``approximate = 1``, ``method``, ``n_iter``,
        ``final_loss``, ``fit_time`` and ``approx_error`` (JSON: measured
        here, or on the mid-size case of ``MEASURED_ERROR``, or a
        statement that it was never measured for this model and method).

    Warns
    -----
    ApproximationWarning
        Always, quoting the measured error.
    """
    info = _check_model(model)
    _check_approx(method, n, draws)
    gen = as_rng(rng)
    t0 = time.perf_counter()
    dt, final_loss = _run_approx(model, method, n, draws, gen)
    fit_time = time.perf_counter() - t0
    if log_likelihood:
        dt = _with_log_likelihood(dt, model, info)  # the model's own hook where PyMC cannot convert it
    dt = _stamp(
        dt,
        info,
        sampler=method,
        approximate=1,
        method=method,
        n_iter=int(n),
        final_loss=final_loss,
        fit_time=float(fit_time),
    )
    post = model_hook(info, "postprocess")
    if callable(post):
        dt = post(dt, gen)  # derived quantities may be random (e.g. realised task averages)
    record = _error_record(dt, reference, info, method)
    dt.attrs["approx_error"] = json.dumps(record, sort_keys=True)
    shown = {
        k: (round(v, 3) if isinstance(v, float) else v)
        for k, v in record.items()
        if "sd_ratio" in k or k in ("source", "case")
    }
    warn_user(
        f"approximate posterior ({method}): its standard deviations and means differ from NUTS; "
        f"measured error: {shown}. Use NUTS (fit) for final intervals.",
        ApproximationWarning,
    )
    return dt


def _check_approx(method: str, n: int, draws: int) -> None:
    if method not in METHODS:
        raise ValueError(f"`method` must be one of {METHODS}; got {method!r}")
    if method == "pathfinder" and importlib.util.find_spec("pymc_extras") is None:
        raise ImportError(
            "`method='pathfinder'` needs the package pymc-extras, which is not installed; "
            "install it or use method='advi' / 'fullrank_advi'"
        )
    for name, v in (("n", n), ("draws", draws)):
        if not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"`{name}` must be an integer >= 1; got {v!r}")


def _run_approx(
    model: pm.Model, method: str, n: int, draws: int, gen: np.random.Generator
) -> tuple[xr.DataTree, float]:
    """Fit the approximation and draw from it: (tree, final loss)."""
    seed1, seed2 = (int(s) for s in gen.integers(2**31 - 1, size=2))
    if method == "pathfinder":  # pragma: no cover - optional dependency
        import pymc_extras as pmx

        return pmx.fit(method="pathfinder", model=model, random_seed=seed1, num_draws=draws), float("nan")
    with exact_numba():  # compiled as nutpie's log density is: the same bits on cold and warm caches
        approx = pm.fit(n=n, method=method, model=model, random_seed=seed1, progressbar=False)
        final_loss = float(approx.hist[-1]) if len(approx.hist) else float("nan")
        return approx.sample(draws, random_seed=seed2), final_loss


def _error_record(
    dt: xr.DataTree, reference: xr.DataTree | None, info: dict[str, Any], method: str
) -> dict[str, Any]:
    """The approximation's error: measured against ``reference``, or the stored measurement."""
    if reference is not None:
        if reference.attrs.get("hierbench_data_hash") != dt.attrs["hierbench_data_hash"]:
            raise ValueError(
                "`reference` must be a NUTS fit of the same data (its hierbench_data_hash differs)"
            )
        err = approximation_error(dt, reference)
        dt["approximation_error"] = xr.DataTree(err)
        return {
            "source": "measured on this data against the given NUTS reference",
            **{k: float(err[k]) for k in err.data_vars},
        }
    stored = MEASURED_ERROR.get(f"{info['model']}/{method}")
    if stored:
        return {"source": "measured on the mid-size case in MEASURED_ERROR", **stored}
    return {
        "source": f"never measured for {info['model']}/{method}: validate against NUTS before use"
    }
