"""Fit a hierbench model: one entry point for nutpie, PyMC NUTS and (if installed) numpyro.

The result is an ArviZ 1.x :class:`xarray.DataTree` with the groups
``posterior``, ``posterior_predictive``, ``observed_data``, ``constant_data``,
``log_likelihood``, ``sample_stats`` and ``diagnostics``, and root attrs that
make it self-describing on disk: ``hierbench_model``, ``hierbench_spec``,
``hierbench_data_hash``, ``hierbench_version``, ``sampler`` and the
convergence summary (``diag_*``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import logging
import time
import warnings
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import Literal

import numpy as np
import pymc as pm
import xarray as xr

from ..._base import COUNTS_HASH
from ..._base import DATA_HASH
from ..._base import as_rng
from ..._base import warn_user
from ..._base import watched
from ..._parallel import available_cores
from .._checks._diagnostics import diagnose
from .._registry import model_hook
from . import _compiled as _compiled_store
from ._sampling import DEFAULT_TUNE
from ._sampling import FIT_DEFAULTS
from ._sampling import MAX_DRAWS
from ._sampling import TARGET_ESS
from ._sampling import compile_model
from ._sampling import describe_r_hat
from ._sampling import describe_run
from ._sampling import exact_numba
from ._sampling import find_start
from ._sampling import report_ms
from ._sampling import run_record
from ._sampling import sample_to_target
from ._sampling import with_start

__all__ = ["FIT_DEFAULTS", "INITS", "SAMPLERS", "add_log_likelihood", "fit", "fit_replicates"]

SAMPLERS = ("nutpie", "pymc", "numpyro")
#: where nutpie's chains start (see :func:`hierbench.bayes._sampler._sampling.find_start`)
INITS = ("map", "support_point")


def _version() -> str:
    from ... import __version__

    return __version__


def _check_model(model: Any) -> dict[str, Any]:
    if not isinstance(model, pm.Model):
        raise TypeError(
            f"`model` must be a pymc.Model from a hierbench builder; got {type(model).__name__}"
        )
    info = getattr(model, "hierbench", None)
    if not isinstance(info, dict):
        info = {"model": "custom", "options": {}, "priors": {}, "data_hash": ""}
    return info


def _drop_warmup(dt: xr.DataTree) -> xr.DataTree:
    keep = {k: v for k, v in dt.children.items() if not k.startswith("warmup")}
    out = xr.DataTree(dataset=dt.to_dataset(), children={k: v.copy() for k, v in keep.items()})
    out.attrs = dict(dt.attrs)
    return out


def _decorate(dt: xr.DataTree, info: dict[str, Any]) -> xr.DataTree:
    """Attach the non-index cell and observation coords and the variable attrs recorded by the builder.

    A variable with attrs also gets the data's fingerprints (:func:`_fingerprints`), so its
    draws, taken out of the fit, still say which log they came from.
    """
    by_dim = {"cell": info.get("cell_coords") or {}, "obs": info.get("obs_coords") or {}}
    prints = _fingerprints(info)
    var_attrs = {var: {**attrs, **prints} for var, attrs in (info.get("var_attrs") or {}).items()}
    for name, node in dt.children.items():
        ds = node.to_dataset()
        changed = False
        for dim, coords in by_dim.items():
            if coords and dim in ds.dims and all(len(v) == ds.sizes[dim] for v in coords.values()):
                ds = ds.assign_coords({k: (dim, np.asarray(v).astype(str)) for k, v in coords.items()})
                changed = True
        for var, attrs in var_attrs.items():
            if var in ds.data_vars:
                ds[var].attrs.update(attrs)
                changed = True
        if changed:
            dt[name] = xr.DataTree(ds)
    if "n_cells_excluded" in info:
        dt.attrs["n_cells_not_run"] = int(info["n_cells_excluded"])
    dt.attrs.update(info.get("root_attrs") or {})  # e.g. the labels of grades written as words
    return dt


def _fingerprints(info: dict[str, Any]) -> dict[str, str]:
    """The data's fingerprints, as attrs.

    ``hierbench_data_hash`` (what the model saw) and ``hierbench_counts_hash``
    (the log's score cells, which a frequentist result of the same log carries
    and two models of one log share). A count model's data hash is its counts' fingerprint; a formula model records both.
    """
    counts_hash = str(info.get("counts_hash", ""))
    return {DATA_HASH: str(info.get("data_hash", ""))} | ({COUNTS_HASH: counts_hash} if counts_hash else {})


def _stamp(dt: xr.DataTree, info: dict[str, Any], /, **attrs: Any) -> xr.DataTree:
    """Decorate a fit and stamp its provenance: the model, its spec, the data hash, the version."""
    dt = _decorate(dt, info)
    if "structure" in info:
        dt.attrs["hierbench_structure"] = json.dumps(info["structure"], default=str)
    dt.attrs.update(
        hierbench_model=str(info["model"]),
        hierbench_spec=json.dumps(
            {
                "model": info["model"],
                "options": info.get("options", {}),
                "priors": info.get("priors", {}),
            },
            sort_keys=True,
            default=str,
        ),
        **_fingerprints(info),
        hierbench_version=_version(),
        **attrs,
    )
    return dt


def _rng_seed(rng: object) -> dict[str, int]:
    """``{"rng_seed": rng}`` when ``rng`` is an integer (what re-runs the fit), else nothing."""
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return {"rng_seed": int(rng)}
    return {}


def _check_run(
    draws: int | None, tune: int | None, chains: int, target_ess: float, max_draws: int, init: str
) -> None:
    """Refuse run settings that cannot work, naming the argument and the value."""
    for name, v, lo in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1),
                        ("max_draws", max_draws, 100)):  # fmt: skip
        if v is None and name in ("draws", "tune"):
            continue
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"`{name}` must be an integer >= {lo}; got {v!r}")
    if isinstance(target_ess, bool) or not isinstance(target_ess, (int, float, np.number)) or not (
        np.isfinite(target_ess) and target_ess > 0
    ):
        raise ValueError(f"`target_ess` must be a positive number; got {target_ess!r}")
    if init not in INITS:
        raise ValueError(f"`init` must be one of {INITS}; got {init!r}")


def _check_sampler(sampler: str, target_accept: float | None) -> None:
    if sampler not in SAMPLERS:
        raise ValueError(f"`sampler` must be one of {SAMPLERS}; got {sampler!r}")
    if target_accept is not None and not 0 < target_accept < 1:
        raise ValueError(
            f"`target_accept` must satisfy 0 < target_accept < 1; got {target_accept!r}"
        )
    if sampler == "numpyro":
        missing = [p for p in ("jax", "numpyro") if importlib.util.find_spec(p) is None]
        if missing:
            raise ImportError(
                f"`sampler='numpyro'` needs the package(s) {missing}, which are not installed; "
                "install them (pip install numpyro jax) or use sampler='nutpie'"
            )


def _check_fit_arguments(
    model: Any, sampler: str, draws: int | None, tune: int | None, chains: int,
    target_accept: float | None, init: str, target_ess: float, max_draws: int,
) -> dict[str, Any]:  # fmt: skip
    """The checks :func:`fit` and :func:`fit_replicates` make of their arguments, in one order; the model's info.

    The model first (a hierbench builder's, else stamped custom), then the run settings, then
    the sampler and its acceptance target; each refusal names the argument and the value.
    """
    info = _check_model(model)
    _check_run(draws, tune, chains, target_ess, max_draws, init)
    _check_sampler(sampler, target_accept)
    return info


def _settings(
    info: dict[str, Any], sampler: str, draws: int | None, tune: int | None, chains: int,
    target_accept: float | None, init: str, target_ess: float, max_draws: int,
    sampler_kwargs: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """The run's settings with every default resolved (recorded as the fit's ``sampler_settings``).

    ``target_accept`` is the caller's, else (PyMC's samplers) the one in ``nuts={...}``, else the
    model's registered one, else the sampler's own default (``_sampler_target_accept``):
    the value the sampler runs at, recorded always.
    """
    registered = info.get("sampler_defaults") or {}
    nested = (sampler_kwargs.get("nuts") or {}).get("target_accept") if sampler != "nutpie" else None
    if target_accept is not None and nested is not None:
        raise ValueError(
            f"`target_accept` must be given once: got target_accept={target_accept!r} and "
            f"nuts={{'target_accept': {nested!r}}}; pass one of them"
        )
    if target_accept is None:
        target_accept = nested if nested is not None else registered.get("target_accept")
    if target_accept is None:
        target_accept = _sampler_target_accept(sampler)
    own = sampler == "nutpie"
    out: dict[str, Any] = {
        "draws": draws if draws is not None else (None if own else 1000),
        "tune": tune if tune is not None else (DEFAULT_TUNE if own else 1000),
        "chains": int(chains),
        "init": init if own else "sampler_default",
    }
    if out["draws"] is None:
        out.update(draws_rule="target_ess", target_ess=float(target_ess), max_draws=int(max_draws))
        if "cores" in sampler_kwargs:
            raise ValueError(
                "`cores` applies to a fixed number of draws only: drawing to a target ESS runs "
                "every chain at once; pass draws=... with cores=..."
            )
    else:
        out["draws_rule"] = "fixed"
    if target_accept is not None:
        out["target_accept"] = target_accept
    out.update({k: v for k, v in sampler_kwargs.items() if isinstance(v, (int, float, str, bool))})
    return out


def _sampler_target_accept(sampler: str) -> float | None:
    """The acceptance target ``sampler`` uses when none is given, read from the installed package.

    nutpie: its settings object's step-size target (0.8 in nutpie 0.16, for every adaptation);
    PyMC's NUTS: ``BaseHMC``'s default; numpyro through PyMC: ``sample_numpyro_nuts``'. None
    (not recorded) when the package no longer exposes it where it is read.
    """
    try:
        if sampler == "nutpie":
            from nutpie import _lib

            steps = _lib.PyNutsSettings.Diag(0).as_dict()["settings"]["adapt_options"]["step_size_settings"]
            return float(steps["target_accept"])
        if sampler == "pymc":
            from pymc.step_methods.hmc.base_hmc import BaseHMC

            return float(inspect.signature(BaseHMC.__init__).parameters["target_accept"].default)
        from pymc.sampling.jax import sample_numpyro_nuts

        return float(inspect.signature(sample_numpyro_nuts).parameters["target_accept"].default)
    except (ImportError, AttributeError, KeyError, TypeError, ValueError):
        return None


def _run_nutpie(
    compiled: Any, settings: dict[str, Any], seed: int, progress: bool, kwargs: dict[str, Any],
    working: frozenset[str] = frozenset(),
) -> tuple[xr.DataTree, dict[str, Any], dict[str, xr.Dataset] | None]:
    """Start (at the mode, by default) and run nutpie: the tree, a record, the check's statistics.

    The last are the stopping check's per-element statistics of the kept
    draws (None for fixed draws), for the diagnostics to reuse. ``working``: the model's working
    parameters, which the stopping rule does not check (the fit sets them aside).
    """
    import nutpie

    kw = dict(kwargs)
    if "target_accept" in settings:
        kw["target_accept"] = settings["target_accept"]
    start = find_start(compiled, seed) if settings["init"] == "map" else None
    record = start.info if start is not None else {"init": "support_point"}
    if start is not None:
        compiled = with_start(compiled, start)
    common = dict(tune=settings["tune"], chains=settings["chains"], seed=seed, **kw)
    if settings["draws"] is None:
        dt, run, known = sample_to_target(
            compiled, target_ess=settings["target_ess"], max_draws=settings["max_draws"],
            progress=progress, every_ms=report_ms(record), working=working, **common,
        )  # fmt: skip
        run.update(rule="target_ess", target_ess=settings["target_ess"], max_draws=settings["max_draws"])
    else:
        common.setdefault("cores", min(settings["chains"], available_cores()))
        dt = nutpie.sample(
            compiled, draws=settings["draws"], save_warmup=False, progress_bar=progress, **common
        )
        run, known = {"rule": "fixed", "draws": settings["draws"]}, None
    return _drop_warmup(dt), {**record, **run}, known


def _run_pymc(
    model: pm.Model, sampler: str, settings: dict[str, Any], seed: int, progress: bool,
    kwargs: dict[str, Any],
) -> xr.DataTree:  # fmt: skip
    """PyMC's own NUTS or numpyro through PyMC, with fixed draws.

    PyMC's NUTS compiles its log density with fast-math off (:func:`exact_numba`), as
    nutpie's is: the same draws from a cold or a warm PyTensor cache.
    """
    kw = dict(kwargs)
    kw.setdefault("cores", min(settings["chains"], available_cores()))
    if "target_accept" in settings and "target_accept" not in (kw.get("nuts") or {}):  # given once only
        kw["target_accept"] = settings["target_accept"]
    with warnings.catch_warnings(), exact_numba():
        warnings.filterwarnings("ignore", message=".*log_likelihood.*", category=FutureWarning)
        dt = pm.sample(
            draws=settings["draws"],
            tune=settings["tune"],
            chains=settings["chains"],
            random_seed=seed,
            progressbar=progress,
            model=model,
            nuts_sampler="pymc" if sampler == "pymc" else "numpyro",
            compute_convergence_checks=False,
            **kw,
        )
    return _drop_warmup(dt)


def _sample(
    model: pm.Model, info: dict[str, Any], sampler: str, settings: dict[str, Any], seed: int,
    progress: bool, kwargs: dict[str, Any],
) -> tuple[xr.DataTree, dict[str, Any]]:  # fmt: skip
    """Compile (nutpie) and sample; the tree, timings and the record of the run."""
    times: dict[str, Any] = {"compile_time": np.nan}
    if sampler == "nutpie":
        from pymc.backends.arviz import patch_nutpie_idata

        t0 = time.perf_counter()
        compiled, how = _compiled_store.compiled_for(model, info)
        times["compile_time"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        working = frozenset(info.get("working_vars", ()))
        dt, record, known = _run_nutpie(compiled, settings, seed, progress, kwargs, working)
        record["compile"] = "reused" if how is None else "built"
        if how is not None:
            record["build"] = how
        times["sampling_time"] = time.perf_counter() - t0
        patch_nutpie_idata(dt, model, sampling_time=times["sampling_time"])
        return dt, {**times, "record": record, "known": known}
    t0 = time.perf_counter()
    dt = _run_pymc(model, sampler, settings, seed, progress, kwargs)
    times["sampling_time"] = time.perf_counter() - t0
    return dt, {**times, "record": {"init": "sampler_default", "rule": "fixed", "draws": settings["draws"]}}


def _observed_cells(dt: xr.DataTree, info: dict[str, Any]) -> xr.DataTree:
    if "observed_cells" in info:
        # a likelihood written over compressed patterns: record the cells themselves
        n_cells = len(next(iter(info["observed_cells"].values())))
        dt["observed_data"] = xr.DataTree(
            xr.Dataset(
                {k: ("cell", np.asarray(v)) for k, v in info["observed_cells"].items()},
                coords={"cell": np.arange(n_cells)},
            )
        )
    return dt


def _posterior_predictive(dt: xr.DataTree, model: pm.Model, info: dict[str, Any], pp_seed: int) -> xr.DataTree:
    predictive = model_hook(info, "predictive")
    if callable(predictive):
        # vectorised over draws (NumPy); PyMC's loop runs a custom likelihood's
        # random function once per draw in object mode
        return predictive(dt, np.random.default_rng(pp_seed))
    with _quiet_forward_sampling():
        return pm.sample_posterior_predictive(
            dt, model=model, random_seed=pp_seed, extend_inferencedata=True, progressbar=False
        )


#: pytensor's notice when its numba backend runs a custom distribution's random method in object mode
_OBJECT_MODE_NOTICE = r"Numba will use object mode to run CustomDist"


@contextlib.contextmanager
def _quiet_forward_sampling() -> Iterator[None]:
    """PyMC's forward sampling (predictive draws) without the two lines it prints to no purpose.

    Its ``Sampling: [y]`` line (the ``pymc.sampling.forward`` logger, raised to
    WARNING for the call) and pytensor's numba notice that a ``CustomDist``'s
    random method runs in object mode (a UserWarning matching
    ``_OBJECT_MODE_NOTICE``, the speed of which the fit does not depend on).
    Every other message and warning passes.
    """
    log = logging.getLogger("pymc.sampling.forward")
    level = log.level
    log.setLevel(max(level, logging.WARNING))
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=_OBJECT_MODE_NOTICE, category=UserWarning)
            yield
    finally:
        log.setLevel(level)


def _prior_predictive(dt: xr.DataTree, model: pm.Model, info: dict[str, Any], pp_seed: int, draws: int) -> xr.DataTree:
    # its own seed, from the posterior predictive's and not from the fit's stream: asking for the
    # prior predictive leaves every other group (and the random derived quantities) as they were
    prior_seed = int(np.random.SeedSequence([pp_seed, 1]).generate_state(1)[0] >> 1)
    with warnings.catch_warnings():
        # a likelihood written as a weighted potential: its prior predictive is
        # drawn below with the builder's own predictive
        warnings.filterwarnings("ignore", message=".*Potential.*", category=UserWarning)
        with _quiet_forward_sampling():
            prior = pm.sample_prior_predictive(draws=draws, model=model, random_seed=prior_seed)
    predictive = model_hook(info, "predictive")
    if callable(predictive) and "observed_cells" in info:
        tmp = xr.DataTree(children={"posterior": prior["prior"].copy()})
        tmp = predictive(tmp, np.random.default_rng(prior_seed))
        pp = tmp["posterior_predictive"].to_dataset()
        cell_coords = info.get("cell_coords") or {}
        pp = pp.assign_coords({k: ("cell", np.asarray(v).astype(str)) for k, v in cell_coords.items()})
        prior["prior_predictive"] = xr.DataTree(pp)
    for group in ("prior", "prior_predictive"):
        if group in prior.children:
            dt[group] = prior[group].copy()
    return dt


def _add_groups(
    dt: xr.DataTree, model: pm.Model, info: dict[str, Any], pp_seed: int, draws: int,
    wanted: tuple[bool, bool, bool],
) -> xr.DataTree:  # fmt: skip
    """Add the groups beside the posterior.

    Observed cells, then (as ``wanted``) the pointwise log-likelihood, the
    posterior predictive, the prior and its predictive.
    """
    log_likelihood, posterior_predictive, prior_predictive = wanted
    dt = _observed_cells(dt, info)
    if log_likelihood:
        dt = _with_log_likelihood(dt, model, info)
    with exact_numba():  # compiled as the model was (shared kernels cached once)
        if posterior_predictive:
            dt = _posterior_predictive(dt, model, info, pp_seed)
        if prior_predictive:
            dt = _prior_predictive(dt, model, info, pp_seed, draws)
    return dt


def fit(
    model: pm.Model,
    *,
    draws: int | None = None, tune: int | None = None, chains: int = 4,
    rng: None | int | np.random.Generator = None,
    sampler: Literal["nutpie", "pymc", "numpyro"] = "nutpie",
    target_accept: float | None = None,
    init: Literal["map", "support_point"] = "map",
    target_ess: float = TARGET_ESS, max_draws: int = MAX_DRAWS,
    posterior_predictive: bool = True,
    log_likelihood: bool = False,
    progress: bool | None = None,
    prior_predictive: bool = False,
    **sampler_kwargs: Any,
) -> xr.DataTree:  # fmt: skip (the parameters documented together share a line)
    """Sample a model's posterior with NUTS and return a stamped, diagnosed DataTree.

    By default (nutpie) the chains start around the posterior mode (at PyMC's jittered support
    point when the mode is not found or its curvature is not positive, as ``sampler_settings``
    then records), tune for 300 steps (a model's registered sampler defaults set its
    ``target_accept`` only, never the tuning) and draw until every element's bulk and tail ESS
    reach ``target_ess`` and its R-hat its limit (:func:`hierbench.bayes.compute_diagnostics`'
    rule; a model's working parameters, such as the IRT models' ``z_ability``, are left out).

    Parameters
    ----------
    model : pymc.Model
        A model from a hierbench builder (another is stamped ``"custom"``).
    draws, tune, chains : int
        Draws kept and tuning steps per chain (default: to the target after 300 steps with
        nutpie; 1,000 and 1,000 otherwise); chains.
    rng : None, int or numpy.random.Generator
        Seeds the start, the sampler, the posterior and prior predictive draws and a model's
        random derived quantities (the crossed and beta-binomial models' ``mean_observed``); asking for more
        groups changes none of the others. ``None``: fresh entropy (not reproducible).
    sampler : {"nutpie", "pymc", "numpyro"}
        nutpie (compiled with numba), PyMC's NUTS, or numpyro (needs jax).
    target_accept : float, optional
        Target acceptance rate (0 < x < 1); default the model's registered setting, else the
        sampler's (0.8).
    init : {"map", "support_point"}
        Where nutpie's chains start: around the posterior mode, or at PyMC's jittered support
        point. The other samplers use their own.
    target_ess, max_draws : float, int
        The bulk and tail ESS every element must reach, and the cap on the draws per chain,
        when ``draws`` is None.
    posterior_predictive, log_likelihood, prior_predictive : bool
        Add the ``posterior_predictive`` group; the pointwise ``log_likelihood`` (for LOO; or
        later with :func:`add_log_likelihood`); the ``prior`` and ``prior_predictive`` groups
        (as many draws as each chain kept).
    progress : bool, optional
        The sampler's progress bar (default: when someone watches).
    **sampler_kwargs
        Passed to the sampler (``maxdepth=8``; ``cores=1`` with fixed draws).

    Returns
    -------
    xarray.DataTree
        Groups ``posterior``, ``observed_data``, ``constant_data``, ``sample_stats``,
        ``diagnostics`` and those asked for; root attrs ``hierbench_*`` (model, spec, data
        hash, version), ``sampler``, ``sampler_settings`` (JSON, as run: the draws kept, and
        ``init`` where the chains started, with ``init_requested`` when a start at the mode fell
        back), ``fit_run`` (JSON: start, rule, checkpoints; ``compile``, ``"built"`` or
        ``"reused"``, and for a build, how: hierbench's C entry points loaded from or stored in
        the disk cache, or nutpie's own path and why), ``fit_notes`` (the same in words, the
        largest R-hat against the limit it was held to, and the structure's notes of what rests
        on the priors), ``seed`` (the sampler's,
        drawn from ``rng``), ``rng_seed`` (``rng`` when it is an integer: the seed that re-runs
        the fit), ``compile_time``, ``sampling_time``, the ``diag_*`` summary and
        ``fit_timings`` (JSON, seconds: ``start_s``, the search for the mode, part of
        ``sampling_s``; ``compile_s``; ``groups_s``, the predictive and log-likelihood groups;
        ``postprocess_s``; ``diagnostics_s``).

    Warns
    -----
    ConvergenceWarning
        When R-hat, ESS, divergences or E-BFMI fail their thresholds.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> from hierbench.bayes import build_beta_binomial, fit
    >>> data, _ = simulate_eval(n_agents=2, n_tasks=15, n_runs=3, rng=0)
    >>> idata = fit(build_beta_binomial(data), draws=200, tune=200, chains=2, rng=1)
    >>> idata.attrs["hierbench_model"], idata.posterior.sizes["draw"]
    ('beta_binomial', 200)
    """
    info = _check_fit_arguments(model, sampler, draws, tune, chains, target_accept, init, target_ess, max_draws)
    settings = _settings(info, sampler, draws, tune, chains, target_accept, init, target_ess,
                         max_draws, sampler_kwargs)  # fmt: skip
    gen = as_rng(rng)
    seed, pp_seed = int(gen.integers(2**31 - 1)), int(gen.integers(2**31 - 1))
    progress = watched() if progress is None else progress
    dt, run = _sample(model, info, sampler, settings, seed, progress, sampler_kwargs)
    settings["draws"] = int(dt["posterior"].sizes["draw"])
    wanted = (log_likelihood, posterior_predictive, prior_predictive)
    t0 = time.perf_counter()
    dt = _add_groups(dt, model, info, pp_seed, settings["draws"], wanted)
    groups_s = time.perf_counter() - t0
    return _finish(dt, info, run, settings, gen, sampler=sampler, seed=seed, rng=rng, groups_s=groups_s)


def _finish(
    dt: xr.DataTree, info: dict[str, Any], run: dict[str, Any], settings: dict[str, Any],
    gen: np.random.Generator, *, sampler: str, seed: int, rng: object, groups_s: float,
) -> xr.DataTree:  # fmt: skip
    """The sampled fit stamped, with the model's derived quantities and the diagnostics; each stage timed.

    The root attrs of :func:`fit`: provenance, settings, the run's record and notes, then
    ``fit_timings``. ``gen`` feeds the postprocess hook (derived quantities may be random).
    """
    timings = {"start_s": run["record"].get("map_seconds", 0.0), "compile_s": run["compile_time"],
               "sampling_s": run["sampling_time"], "groups_s": groups_s}  # fmt: skip
    settings = _as_run(settings, run["record"])
    dt = _stamp(
        dt, info, sampler=sampler, sampler_settings=json.dumps(settings, sort_keys=True), seed=seed,
        compile_time=float(run["compile_time"]), sampling_time=float(run["sampling_time"]),
        fit_run=run_record(run["record"]), fit_notes=describe_run(run["record"], settings["tune"]),
        **_rng_seed(rng),
    )  # fmt: skip
    t0 = time.perf_counter()
    post = model_hook(info, "postprocess")
    if callable(post):
        dt = post(dt, gen)  # derived quantities may be random (e.g. realised task averages)
    timings["postprocess_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    dt = diagnose(dt, warn=True, known=run.get("known"))  # the stopping check's statistics reused
    timings["diagnostics_s"] = time.perf_counter() - t0
    dt.attrs["fit_notes"] = _notes(dt, info)
    dt.attrs["fit_timings"] = json.dumps({k: round(float(v), 3) for k, v in timings.items()})
    return dt


def _as_run(settings: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The settings as run: ``init`` where the chains started, ``init_requested`` when that differs.

    A start at the mode falls back to PyMC's support point when the mode is not found (the
    reason in ``fit_run``'s ``init_fallback``); ``sampler_settings`` then says so too, rather
    than the ``"map"`` that was asked for.
    """
    done = record.get("init")
    if done is None or done == settings.get("init"):
        return settings
    return {**settings, "init": done, "init_requested": settings.get("init")}


def _notes(dt: xr.DataTree, info: dict[str, Any]) -> str:
    """``fit_notes``: how the run went, the largest R-hat and its limit, and what rests on the priors.

    The last are the notes of the model's structure (agents the data separate, agents that share
    no task: :func:`hierbench.bayes.describe` shows the same).
    """
    a = dt.attrs
    post = dt["posterior"]
    r_hat = describe_r_hat({**a, "draws": post.sizes["draw"], "chains": post.sizes["chain"]})
    notes = info.get("structure", {}).get("notes", [])
    return "; ".join([str(a.get("fit_notes", "")), r_hat, *notes])


def _with_log_likelihood(dt: xr.DataTree, model: pm.Model, info: dict[str, Any]) -> xr.DataTree:
    own = model_hook(info, "log_likelihood")
    if callable(own):
        dt["log_likelihood"] = xr.DataTree(own(dt))
        return dt
    return pymc_log_likelihood(dt, model)


def pymc_log_likelihood(dt: xr.DataTree, model: pm.Model) -> xr.DataTree:
    """``dt`` with PyMC's pointwise log-likelihood group, compiled as the model was (:func:`exact_numba`)."""
    with exact_numba():
        return pm.compute_log_likelihood(dt, model=model, extend_inferencedata=True, progressbar=False)


def add_log_likelihood(fit: xr.DataTree, model: pm.Model) -> xr.DataTree:
    """Add the pointwise ``log_likelihood`` group to a fit (for LOO), computed on request.

    Parameters
    ----------
    fit : xarray.DataTree
        A fit of ``model`` from :func:`fit`.
    model : pymc.Model
        The model that was fitted (the fit's data hash must match it).

    Returns
    -------
    xarray.DataTree
        The fit with a ``log_likelihood`` group (a new tree).

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> from hierbench.bayes import build_beta_binomial, fit
    >>> data, _ = simulate_eval(n_agents=2, n_tasks=15, n_runs=3, rng=0)
    >>> model = build_beta_binomial(data)
    >>> f = fit(model, draws=100, tune=100, chains=1, rng=1, posterior_predictive=False)
    >>> "log_likelihood" in add_log_likelihood(f, model).children
    True
    """
    info = _check_model(model)
    want = str(fit.attrs.get("hierbench_data_hash", ""))
    if want and info.get("data_hash") and want != str(info["data_hash"]):
        raise ValueError(
            "`model` must be the model that `fit` was fitted to: their data hashes differ "
            f"({info['data_hash'][:12]} vs {want[:12]})"
        )
    out = fit.copy()
    keep = {k: v for k, v in out.children.items() if k != "diagnostics"}
    base = xr.DataTree(dataset=out.to_dataset(), children={k: v.copy() for k, v in keep.items()})
    base.attrs = dict(out.attrs)
    base = _with_log_likelihood(base, model, info)
    out["log_likelihood"] = base["log_likelihood"].copy()
    if "cell" in out["log_likelihood"].dims:
        out = _decorate(out, info)
    return out


@dataclass(frozen=True)
class _Job:
    """What a replicate fit needs besides its data: the model (a key, pickled for workers, its data)."""

    key: str
    blob: bytes | None
    data: dict[str, np.ndarray]  # the model's own data: a stored build of its design may hold others
    settings: dict[str, Any]
    kwargs: dict[str, Any]
    name: str
    structure: str | None


def _compiled(job: _Job) -> Any:
    """The compiled model of ``job`` in this process (unpickled and compiled on first use)."""
    cached = _compiled_store.lookup(job.key)
    if cached is not None:
        return cached
    if job.blob is None:
        raise RuntimeError("a replicate fit reached a process without its model")
    from ._shipping import unship

    return _compiled_store.store(job.key, compile_model(unship(job.blob)))


def _fit_one(item: tuple[int, dict[str, np.ndarray]], gen: np.random.Generator, *, job: _Job) -> xr.DataTree:
    """One replicate: swap its data into the compiled model, start, sample, diagnose (no warning)."""
    i, updates = item
    c = _compiled_store.with_values(_compiled(job), {**job.data, **updates})
    seed = int(gen.integers(2**31 - 1))
    dt, record, known = _run_nutpie(c, job.settings, seed, False, job.kwargs)
    dt.attrs.update(hierbench_model=job.name, replicate=i, seed=seed, fit_run=run_record(record))
    if job.structure is not None:
        dt.attrs["hierbench_structure"] = job.structure
    return diagnose(dt, warn=False, known=known)


def _replicate_updates(model: pm.Model, info: dict[str, Any], replicates: list[Any]) -> list[dict[str, np.ndarray]]:
    """Each replicate's data as the model's shared-variable values (checked against its design)."""
    from .._models._crossed import _log_binom
    from .._registry import prepare_counts

    out = []
    for i, rep in enumerate(replicates):
        if isinstance(rep, Mapping) and not isinstance(rep, xr.Dataset):  # the model's data, by name
            out.append({str(k): np.asarray(v) for k, v in rep.items()})
            continue
        if "n_runs" not in model.named_vars:
            raise ValueError(
                f"`replicates[{i}]` is a dataset, which only a count model takes; give this "
                "model's replicates as mappings from its data names to their values"
            )
        n_ref = np.asarray(model["n_runs"].get_value())
        counts, cells = prepare_counts(rep, name=f"replicates[{i}]")
        if counts["n_runs"].shape != n_ref.shape or not np.array_equal(
            counts["n_runs"].values, n_ref
        ):
            raise ValueError(
                f"`replicates[{i}]` must have the same n_runs grid as the model's data "
                f"(shape {n_ref.shape}); it differs"
            )
        updates = {"n_success": counts["n_success"].values, "cell_n_success": cells["cell_y"]}
        if callable(model_hook(info, "data_updates")):
            updates.update(model_hook(info, "data_updates")(cells))
        # the crossed model's log binomial coefficients follow the success counts
        updates["cell_log_binom"] = _log_binom(cells["cell_y"], cells["cell_n"])
        out.append(updates)
    return out


def _warn_failed(fits: list[xr.DataTree]) -> None:
    """One ConvergenceWarning summarising the replicates that failed their checks."""
    from collections import Counter

    from .._checks._diagnostics import ConvergenceWarning

    failed = [f for f in fits if not f.attrs["diag_converged"]]
    if not failed:
        return
    kinds = Counter(
        msg.split(" (at")[0].split(" ")[0] + " " + msg.split(" ")[1]
        if not msg[0].isdigit()
        else "divergent transitions"
        for f in failed
        for msg in json.loads(f.attrs["diag_failures"])
    )
    warn_user(
        f"{len(failed)} of {len(fits)} replicates failed their convergence checks "
        f"(replicates {[int(f.attrs['replicate']) for f in failed][:20]}"
        f"{' ...' if len(failed) > 20 else ''}; failures: "
        + ", ".join(f"{k} x{v}" for k, v in kinds.most_common())
        + "). Each replicate's `diag_failures` attr says which check and parameter failed; "
        "drop or refit them before summarising a calibration or coverage study",
        ConvergenceWarning,
    )


def fit_replicates(
    model: pm.Model,
    replicates: Sequence[xr.Dataset | Mapping[str, Any]],
    *,
    draws: int | None = None,
    tune: int | None = None,
    chains: int = 4,
    rng: None | int | np.random.Generator = None,
    target_accept: float | None = None,
    init: Literal["map", "support_point"] = "map",
    target_ess: float = TARGET_ESS,
    max_draws: int = MAX_DRAWS,
    executor: Any = None,
    progress: bool | None = None,
    **sampler_kwargs: Any,
) -> list[xr.DataTree]:
    """Fit one compiled model to many datasets of the same design, here or on any executor.

    For simulation-based calibration and coverage studies: the model is
    compiled once per process and design and only its data are swapped;
    each replicate is fitted as :func:`fit` fits. Replicate ``i`` gets the
    ``i``-th Generator spawned from ``rng`` before anything runs, so the fits
    are bit-identical serially, on a process pool or on a Dask cluster.

    Parameters
    ----------
    model : pymc.Model
        A hierbench count model (it holds ``n_runs``, ``n_success``,
        ``cell_n_runs`` and ``cell_n_success`` data).
    replicates : sequence of xarray.Dataset or mapping
        Eval datasets or counts datasets with the model's agents, tasks and
        ``n_runs`` grid (only the successes differ); or mappings from the
        model's data names to their new values (any model).
    draws, tune, chains, rng, target_accept, init, target_ess, max_draws, **sampler_kwargs
        As in :func:`fit`.
    executor : concurrent.futures.Executor, optional
        Where the replicates run (None: here); each worker process compiles
        the model once (it travels pickled with cloudpickle, with the log
        densities of its ``pm.CustomDist`` parts, which PyMC registers only
        in the process that built them). See Notes.
    progress : bool, optional
        A progress bar over the replicates (default: when someone watches).

    Returns
    -------
    list of xarray.DataTree
        In the order of ``replicates``, each with ``posterior`` and
        ``sample_stats``, the ``diag_*`` root attrs, ``replicate``, ``seed``
        and ``fit_run`` (no predictive or log-likelihood groups). One
        ConvergenceWarning lists the replicates that failed their checks.

    Notes
    -----
    **On a Dask cluster** (``pip install "dask[distributed]"``): a
    ``LocalCluster`` uses this machine's cores, a scheduler address any
    machines that reach it; ``Client.get_executor()`` is the executor::

        from dask.distributed import Client, LocalCluster
        with LocalCluster(n_workers=8, threads_per_worker=1) as cluster, Client(cluster) as client:
            fits = fit_replicates(model, sims, rng=0, executor=client.get_executor())

    Give each worker one thread: nutpie runs the chains of a fit on threads
    of its own. A ``concurrent.futures.ProcessPoolExecutor`` works the same
    way; create it with ``mp_context=multiprocessing.get_context("spawn")``
    (a forked child would inherit the sampler's running threads).

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> from hierbench.bayes import build_beta_binomial, fit_replicates
    >>> sims = [simulate_eval(n_agents=2, n_tasks=10, n_runs=3, rng=s)[0] for s in range(2)]
    >>> fits = fit_replicates(build_beta_binomial(sims[0]), sims, draws=100, tune=100,
    ...                       chains=2, rng=0)
    >>> [int(f.attrs["replicate"]) for f in fits]
    [0, 1]
    """
    from ..._parallel import check_executor
    from ..._parallel import map_seeded

    info = _check_fit_arguments(model, "nutpie", draws, tune, chains, target_accept, init, target_ess, max_draws)
    executor = check_executor(executor)
    settings = _settings(info, "nutpie", draws, tune, chains, target_accept, init, target_ess,
                         max_draws, sampler_kwargs)  # fmt: skip
    updates = _replicate_updates(model, info, list(replicates))
    key, data = _compiled_store.design_key(model, info), _compiled_store.model_data(model)
    blob = None
    if executor is None:
        if _compiled_store.lookup(key) is None:  # else a stored build of the design serves
            _compiled_store.store(key, compile_model(model))
    else:
        from ._shipping import ship

        blob = ship(model)
    structure = json.dumps(info["structure"], default=str) if "structure" in info else None
    job = _Job(key, blob, data, settings, dict(sampler_kwargs), str(info["model"]), structure)
    out = map_seeded(_fit_one, list(enumerate(updates)), rng=rng, executor=executor,
                     progress=progress, desc="replicate fits", kwargs={"job": job}, thread_safe=False)  # fmt: skip
    _warn_failed(out)
    return out
