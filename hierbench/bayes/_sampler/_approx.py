"""Approximate posteriors (ADVI) that always carry their measured error against NUTS.

Variational fits are fast but biased: mean-field ADVI ignores posterior
correlations and typically shrinks standard deviations (the issue measured
the task and agent x task sds of a plain crossed model shrunk by 14% and 29%;
MAP and a Laplace fit around it were degenerate). So an approximate fit here
is never returned bare: it carries either its error against a NUTS fit of
the same data (``reference=``) or the error measured on a mid-size case
(``MEASURED_ERROR`` in this module, reproduced by ``python benchmarks/bench_approx.py``),
in attrs and in an :class:`ApproximationWarning`.

A stored measurement says nothing about another model or log, so every fit
also carries a check of its own: the PSIS diagnostic of Yao, Vehtari, Simpson
& Gelman (2018, "Yes, but did it work?: Evaluating variational inference").
At the S draws returned, the log importance ratios
``log r_s = log p(theta_s, y) - log q(theta_s)`` on the unconstrained space
(the model's joint log density with the transforms' Jacobian, and the fitted
Gaussian's log density) are Pareto-smoothed by ArviZ (``psislw``); the shape
k-hat of their upper tail says whether q is close enough to the posterior for
importance sampling to correct it: k-hat <= 0.5 good, up to ArviZ's
sample-size threshold ``min(1 - 1/log10(S), 0.7)`` usable with the PSIS
weights (``sample_stats.psis_log_weight``), above it q is not to be trusted
(use NUTS). The posterior itself is never reweighted.
k-hat judges the joint distribution: in hundreds of dimensions even a
q whose marginals are close to NUTS's gets a large k-hat (Yao et al. sec. 3),
so a high k-hat means "the joint is not verified", not that every marginal is off.
Measured (``python benchmarks/bench_approx.py psis``, table in its docstring):
mean-field ADVI 0.51 on the crossed MEASURED_ERROR case, 1.29 on SWE-bench's
crossed model, 1.55 on the wine judges' ordinal model (whose ADVI PSIS-LOO elpd
is -99.4 against NUTS's -85.2); full-rank ADVI 1.55 to 4.14.
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
from scipy.linalg import solve_triangular

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
        ``posterior`` (one chain), ``observed_data``, ``constant_data``,
        ``sample_stats`` (``psis_log_weight``: the draws' normalised PSIS
        log weights, offered for reweighting, never applied; absent when
        k-hat could not be computed) (and ``log_likelihood``,
        ``approximation_error``); root attrs as :func:`fit` plus
        ``approximate = 1``, ``method``, ``n_iter``, ``final_loss``,
        ``fit_time``, ``psis_khat`` (this fit's Pareto k-hat of
        ``log p - log q`` at its draws, NaN if not computed, e.g. under 25
        draws), ``psis_khat_threshold`` (ArviZ's ``min(1 - 1/log10(S), 0.7)``),
        ``psis_time`` (seconds the check took, not in ``fit_time``)
        and ``approx_error`` (JSON: measured here, or on the mid-size case
        of ``MEASURED_ERROR``, or a statement that it was never measured for
        this model and method; plus ``psis_khat``, ``psis_khat_threshold``
        and ``psis_verdict``).

    Warns
    -----
    ApproximationWarning
        Always, stating this fit's k-hat with its verdict (good; usable
        only PSIS-reweighted; do not trust, use NUTS) and the measured error.
    """
    info = _check_model(model)
    _check_approx(method, n, draws)
    gen = as_rng(rng)
    t0 = time.perf_counter()
    dt, final_loss, psis = _run_approx(model, method, n, draws, gen)
    fit_time = time.perf_counter() - t0 - psis["time_s"]  # the fit and its draws, as before the check
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
    dt = _marked(dt, method)
    record = _error_record(dt, reference, info, method)
    khat = psis["khat"]
    record |= {"psis_khat": None if np.isnan(khat) else khat, "psis_khat_threshold": psis["threshold"],
               "psis_verdict": psis["verdict"]}  # fmt: skip
    dt.attrs["approx_error"] = json.dumps(record, sort_keys=True)
    dt.attrs["psis_khat"] = khat
    dt.attrs["psis_khat_threshold"] = psis["threshold"]
    dt.attrs["psis_time"] = float(psis["time_s"])
    if psis["log_weight"] is not None:
        dt = _with_log_weight(dt, psis["log_weight"])
    warn_user(_warning_text(method, record, psis), ApproximationWarning)
    return dt


def _with_log_weight(dt: xr.DataTree, log_weight: np.ndarray) -> xr.DataTree:
    """``dt`` with the PSIS log weights as ``sample_stats.psis_log_weight`` (the posterior untouched)."""
    post = dt["posterior"].to_dataset()
    stats = dt["sample_stats"].to_dataset() if "sample_stats" in dt.children else xr.Dataset()
    stats["psis_log_weight"] = xr.DataArray(
        log_weight, dims=("chain", "draw"), coords={"chain": post["chain"], "draw": post["draw"]},
        attrs={"description": "normalised PSIS log weights of the draws (Yao et al. 2018), "
               "for reweighting summaries; not applied to the posterior"},
    )  # fmt: skip
    dt["sample_stats"] = xr.DataTree(stats)
    return dt


def _warning_text(method: str, record: dict[str, Any], psis: dict[str, Any]) -> str:
    """The ApproximationWarning: this fit's PSIS check first, then the measured error."""
    shown = {
        k: (round(v, 3) if isinstance(v, float) else v)
        for k, v in record.items()
        if "sd_ratio" in k or k in ("source", "case")
    }
    return (
        f"approximate posterior ({method}): PSIS check of this fit (Yao et al. 2018, "
        f"Pareto k-hat of log p - log q at its {psis['n_draws']} draws, ArviZ's threshold "
        f"{psis['threshold']:.2f}): {psis['verdict']}. Its standard deviations and means differ "
        f"from NUTS; measured error: {shown}. Use NUTS (fit) for final intervals."
    )


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
) -> tuple[xr.DataTree, float, dict[str, Any]]:
    """Fit the approximation and draw from it: (tree, final loss, PSIS check of those draws)."""
    seed1, seed2 = (int(s) for s in gen.integers(2**31 - 1, size=2))
    if method == "pathfinder":  # pragma: no cover - optional dependency
        import pymc_extras as pmx

        dt = pmx.fit(method="pathfinder", model=model, random_seed=seed1, num_draws=draws)
        return dt, float("nan"), {**_pareto_check(None, draws, "not computed for pathfinder here"), "time_s": 0.0}
    with exact_numba():  # compiled as nutpie's log density is: the same bits on cold and warm caches
        approx = _pymc_fit(model, method, n, seed1)
        final_loss = float(approx.hist[-1]) if len(approx.hist) else float("nan")
        dt = approx.sample(draws, random_seed=seed2)
        t0 = time.perf_counter()
        psis = _pareto_check(_psis_log_ratios(model, approx, draws, seed2), draws)
        return dt, final_loss, {**psis, "time_s": time.perf_counter() - t0}


def _marked(dt: xr.DataTree, method: str) -> xr.DataTree:
    """``dt`` with every posterior variable's attrs saying its draws are an approximation's.

    ``hierbench.metrics.posterior_interval`` puts it into each interval's ``ci_detail``, so a
    summary of an approximate fit does not read as one of NUTS draws.
    """
    post = dt["posterior"].to_dataset()
    for v in post.data_vars:
        post[v].attrs["approximation"] = f"{method}, not NUTS"
    dt["posterior"] = xr.DataTree(post)
    return dt


def _pymc_fit(model: pm.Model, method: str, n: int, seed: int) -> Any:
    """``pm.fit``, with its failures said in words: where the optimisation went to NaN, or PyMC could not build it.

    PyTensor's numba backend cannot compile ADVI's step for some small models (a one-agent
    beta-binomial raises an IndexError inside numba's typing); NUTS does not use that path.
    Such a step is compiled again by PyTensor's Python linker (``mode="FAST_COMPILE"``):
    the same optimisation from the same seed, slower per step, which only small models meet.
    """
    try:
        try:
            return pm.fit(n=n, method=method, model=model, random_seed=seed, progressbar=False)
        except (IndexError, TypeError, NotImplementedError):
            return pm.fit(
                n=n, method=method, model=model, random_seed=seed, progressbar=False,
                fn_kwargs={"mode": "FAST_COMPILE"},
            )
    except FloatingPointError as err:
        raise RuntimeError(
            f"fit_approx(method={method!r}): the optimisation diverged ({err}); no approximation to "
            "return. Fit the model with NUTS (hierbench.bayes.fit), or try another `method`"
        ) from err
    except (IndexError, TypeError, ValueError, NotImplementedError) as err:
        n_free = sum(int(np.prod(model.initial_point()[v.name].shape)) for v in model.value_vars)
        raise RuntimeError(
            f"fit_approx(method={method!r}): PyMC could not build the approximation of this model "
            f"({n_free} free parameters): {type(err).__name__}: {str(err)[:200]}. This is the "
            "variational path's failure, not the model's: fit it with NUTS (hierbench.bayes.fit)"
        ) from err


def _unconstrained_draws(approx: Any, draws: int, seed: int) -> dict[str, np.ndarray]:
    """The unconstrained points of the draws ``approx.sample(draws, random_seed=seed)`` returns.

    PyMC's ``Approximation.sample`` turns an int seed into one seed per chain and
    reseeds ``sample_dict_fn`` with it; the same call here gives the same points
    (value-variable names -> arrays with a leading draw axis), before any transform back.
    """
    from pymc.util import _get_seeds_per_chain

    (seed_used,) = _get_seeds_per_chain(seed, 1)
    return approx.sample_dict_fn(draws, random_seed=seed_used)


def _log_q(approx: Any, points: dict[str, np.ndarray]) -> np.ndarray:
    """Log density of PyMC's fitted mean-field or full-rank Gaussian at ``points`` (one per draw)."""
    from pymc.variational.approximations import FullRankGroup
    from pymc.variational.approximations import MeanFieldGroup

    if len(approx.groups) != 1 or not isinstance(approx.groups[0], (MeanFieldGroup, FullRankGroup)):
        raise TypeError(f"log q needs one mean-field or full-rank group; got {approx}")
    group = approx.groups[0]
    n_draws = len(next(iter(points.values())))
    z = np.empty((n_draws, group.ddim))
    for name, slc, _shape, _dtype in group.ordering.values():
        z[:, slc] = np.asarray(points[name], dtype=float).reshape(n_draws, -1)
    dev = z - np.asarray(group.mean.eval(), dtype=float)
    if isinstance(group, FullRankGroup):  # q = N(mu, L L'): standardise with the Cholesky factor
        chol = np.asarray(group.L.eval(), dtype=float)
        z0 = solve_triangular(chol, dev.T, lower=True).T
        log_det = np.sum(np.log(np.diag(chol)))
    else:
        sd = np.asarray(group.std.eval(), dtype=float)
        z0 = dev / sd
        log_det = np.sum(np.log(sd))
    return -0.5 * np.sum(z0**2, axis=1) - 0.5 * group.ddim * np.log(2 * np.pi) - log_det


def _psis_log_ratios(model: pm.Model, approx: Any, draws: int, seed: int) -> np.ndarray:
    """``log p(theta_s, y) - log q(theta_s)`` on the unconstrained space at the returned draws.

    ``log p`` is the model's joint log density with the transforms' Jacobian
    (``model.compile_logp(jacobian=True)``, the density ADVI fits q to), evaluated
    at each draw's unconstrained point; ``log q`` that of the fitted Gaussian.
    """
    points = _unconstrained_draws(approx, draws, seed)
    log_p_fn = model.compile_logp(jacobian=True)
    log_p = np.array([float(log_p_fn({k: v[i] for k, v in points.items()})) for i in range(draws)])
    return log_p - _log_q(approx, points)


def _pareto_check(log_ratio: np.ndarray | None, draws: int, why_not: str = "") -> dict[str, Any]:
    """k-hat of the ratios' upper tail and the PSIS log weights, by ArviZ, with its threshold and a verdict.

    ArviZ's ``psislw`` smooths ``exp(-x)``'s tail for a log-likelihood ``x`` (its
    LOO use), so it is handed ``-log_ratio``; ``r_eff = 1``: the draws from q are
    independent. The threshold is ArviZ's (``min(1 - 1/log10(S), 0.7)``).
    """
    import arviz_stats as azs  # noqa: F401  - registers the .azstats accessor
    from arviz_stats.loo.loo_helper import _warn_pareto_k

    threshold = float(_warn_pareto_k(np.array([0.0]), draws, suppress=True)[1])
    out: dict[str, Any] = {"khat": float("nan"), "threshold": threshold, "log_weight": None, "n_draws": draws}
    if log_ratio is not None and not why_not:
        bad = int(np.sum(~np.isfinite(log_ratio)))
        if draws < 25:
            why_not = f"not computed: PSIS needs at least 25 draws (its tail of S/5 >= 5); got {draws}"
        elif bad:
            why_not = f"not computed: {bad} of {draws} draws have a non-finite log p - log q"
    if why_not:
        return {**out, "verdict": why_not}
    ratio = xr.DataArray(-np.asarray(log_ratio)[None, :], dims=("chain", "draw"))
    log_weight, khat = ratio.azstats.psislw(dim=["chain", "draw"], r_eff=1.0)
    return {**out, "khat": float(khat), "log_weight": log_weight.transpose("chain", "draw").values,
            "verdict": _verdict(float(khat), threshold)}  # fmt: skip


def _verdict(khat: float, threshold: float) -> str:
    """What a Pareto k-hat of the importance ratios says about the approximation (Yao et al. 2018)."""
    if khat > threshold:
        return (f"k-hat {khat:.2f} > {threshold:.2f}: do not trust this approximation, "
                "not even reweighted; use NUTS (fit)")  # fmt: skip
    if khat > 0.5:
        return (f"k-hat {khat:.2f} in (0.5, {threshold:.2f}]: usable only reweighted by the PSIS "
                "weights (sample_stats.psis_log_weight); the unweighted draws are biased")  # fmt: skip
    return f"k-hat {khat:.2f} <= 0.5: q is close to the posterior (good)"


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
