"""Fit a hierbench model: one entry point for nutpie, PyMC NUTS and (if installed) numpyro.

The result is an ArviZ 1.x :class:`xarray.DataTree` with the groups
``posterior``, ``posterior_predictive``, ``observed_data``, ``constant_data``,
``log_likelihood``, ``sample_stats`` and ``diagnostics``, and root attrs that
make it self-describing on disk: ``hierbench_model``, ``hierbench_spec``,
``hierbench_data_hash``, ``hierbench_version``, ``sampler`` and the
convergence summary (``diag_*``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
import warnings
from typing import Any, Literal

import numpy as np
import pymc as pm
import xarray as xr

from .._base import as_rng, watched
from ._diagnostics import compute_diagnostics
from ._registry import model_hook

__all__ = ["SAMPLERS", "add_log_likelihood", "fit", "fit_replicates"]

SAMPLERS = ("nutpie", "pymc", "numpyro")


def _version() -> str:
    from .. import __version__

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
    """Attach the non-index cell coords and the variable attrs recorded by the builder."""
    cell_coords = info.get("cell_coords") or {}
    var_attrs = info.get("var_attrs") or {}
    for name, node in dt.children.items():
        ds = node.to_dataset()
        changed = False
        if cell_coords and "cell" in ds.dims:
            ds = ds.assign_coords(
                {k: ("cell", np.asarray(v).astype(str)) for k, v in cell_coords.items()}
            )
            changed = True
        for var, attrs in var_attrs.items():
            if var in ds.data_vars:
                ds[var].attrs.update(attrs)
                changed = True
        if changed:
            dt[name] = xr.DataTree(ds)
    if "n_cells_excluded" in info:
        dt.attrs["n_cells_not_run"] = int(info["n_cells_excluded"])
    return dt


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
        hierbench_data_hash=str(info.get("data_hash", "")),
        hierbench_version=_version(),
        **attrs,
    )
    return dt


def fit(
    model: pm.Model,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    rng: None | int | np.random.Generator = None,
    sampler: Literal["nutpie", "pymc", "numpyro"] = "nutpie",
    target_accept: float | None = None,
    posterior_predictive: bool = True,
    log_likelihood: bool = False,
    progress: bool | None = None,
    prior_predictive: bool = False,
    **sampler_kwargs: Any,
) -> xr.DataTree:
    """Sample a model's posterior with NUTS and return a stamped, diagnosed DataTree.

    Parameters
    ----------
    model : pymc.Model
        A model from a hierbench builder (``build_beta_binomial``,
        ``build_crossed``, ...). Any ``pm.Model`` works; it is then stamped
        ``hierbench_model = "custom"``.
    draws, tune, chains : int
        Draws kept per chain, tuning steps per chain, number of chains.
    rng : None, int or numpy.random.Generator
        Seeds the sampler and the posterior predictive draws.
    sampler : {"nutpie", "pymc", "numpyro"}
        ``"nutpie"`` (default; the model is compiled with numba),
        ``"pymc"`` (PyMC's own NUTS), ``"numpyro"`` (needs jax and numpyro).
    target_accept : float, optional
        Target acceptance rate of the step-size adaptation (0 < x < 1);
        default the model's registered setting (crossed marginal: 0.65),
        else the sampler's (0.8).
    posterior_predictive : bool
        Add the ``posterior_predictive`` group (for
        :func:`~hierbench.bayes.predictive_check`). The count models draw it
        with NumPy from the posterior, vectorised over draws.
    log_likelihood : bool
        Add the pointwise ``log_likelihood`` group (needed by LOO). Off by
        default: it costs a compile and a pass over every draw, and only
        :func:`~hierbench.bayes.loo_compare` needs it; add it later with
        :func:`add_log_likelihood`.
    progress : bool, optional
        Show the sampler's progress bar. Default: only when attached to a
        terminal or a notebook. ``False`` is quiet.
    prior_predictive : bool
        Also draw ``draws`` samples from the prior and the prior predictive
        (groups ``prior``, ``prior_predictive``) for prior predictive checks
        (:func:`hierbench.bayes.predictive_check` with
        ``group="prior_predictive"``).
    **sampler_kwargs
        Passed to the sampler (e.g. ``adaptation="low_rank"`` for nutpie,
        ``cores=1`` for PyMC).

    Returns
    -------
    xarray.DataTree
        Groups ``posterior``, ``posterior_predictive``, ``observed_data``,
        ``constant_data``, ``log_likelihood``, ``sample_stats``,
        ``diagnostics``; root attrs ``hierbench_model``, ``hierbench_spec``
        (JSON of the builder options and priors), ``hierbench_data_hash``,
        ``hierbench_version``, ``sampler``, ``sampler_settings`` (JSON),
        ``seed``, ``compile_time``, ``sampling_time`` and the ``diag_*``
        convergence summary.

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
    >>> idata.attrs["hierbench_model"]
    'beta_binomial'
    """
    info = _check_model(model)
    for name, v, lo in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1)):
        if not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"`{name}` must be an integer >= {lo}; got {v!r}")
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
    if target_accept is None:
        target_accept = (info.get("sampler_defaults") or {}).get("target_accept")
    if progress is None:
        progress = watched()
    gen = as_rng(rng)
    seed = int(gen.integers(2**31 - 1))
    pp_seed = int(gen.integers(2**31 - 1))
    cores = min(chains, os.cpu_count() or 1)
    settings: dict[str, Any] = {"draws": draws, "tune": tune, "chains": chains}
    if target_accept is not None:
        settings["target_accept"] = target_accept
    settings.update(
        {k: v for k, v in sampler_kwargs.items() if isinstance(v, (int, float, str, bool))}
    )
    compile_time = np.nan
    if sampler == "nutpie":
        import nutpie
        from pymc.backends.arviz import patch_nutpie_idata

        t0 = time.perf_counter()
        compiled = nutpie.compile_pymc_model(model, backend="numba")
        compile_time = time.perf_counter() - t0
        kw = dict(sampler_kwargs)
        kw.setdefault("cores", cores)
        if target_accept is not None:
            kw["target_accept"] = target_accept
        t0 = time.perf_counter()
        dt = nutpie.sample(
            compiled,
            draws=draws,
            tune=tune,
            chains=chains,
            seed=seed,
            save_warmup=False,
            progress_bar=progress,
            **kw,
        )
        sampling_time = time.perf_counter() - t0
        patch_nutpie_idata(dt, model, sampling_time=sampling_time)
    else:
        kw = dict(sampler_kwargs)
        kw.setdefault("cores", cores)
        if target_accept is not None:
            kw["target_accept"] = target_accept
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*log_likelihood.*", category=FutureWarning)
            dt = pm.sample(
                draws=draws,
                tune=tune,
                chains=chains,
                random_seed=seed,
                progressbar=progress,
                model=model,
                nuts_sampler="pymc" if sampler == "pymc" else "numpyro",
                compute_convergence_checks=False,
                **kw,
            )
        sampling_time = time.perf_counter() - t0
    dt = _drop_warmup(dt)
    if "observed_cells" in info:
        # a likelihood written over compressed patterns: record the cells themselves
        n_cells = len(next(iter(info["observed_cells"].values())))
        dt["observed_data"] = xr.DataTree(
            xr.Dataset(
                {k: ("cell", np.asarray(v)) for k, v in info["observed_cells"].items()},
                coords={"cell": np.arange(n_cells)},
            )
        )
    if log_likelihood:
        dt = _with_log_likelihood(dt, model, info)
    if posterior_predictive:
        predictive = model_hook(info, "predictive")
        if callable(predictive):
            # vectorised over draws (NumPy); PyMC's loop runs a custom likelihood's
            # random function once per draw in object mode
            dt = predictive(dt, np.random.default_rng(pp_seed))
        else:
            dt = pm.sample_posterior_predictive(
                dt, model=model, random_seed=pp_seed, extend_inferencedata=True, progressbar=False
            )
    if prior_predictive:
        prior_seed = int(gen.integers(2**31 - 1))
        with warnings.catch_warnings():
            # a likelihood written as a weighted potential: its prior predictive is
            # drawn below with the builder's own predictive
            warnings.filterwarnings("ignore", message=".*Potential.*", category=UserWarning)
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
    dt = _stamp(
        dt,
        info,
        sampler=sampler,
        sampler_settings=json.dumps(settings, sort_keys=True),
        seed=seed,
        compile_time=float(compile_time),
        sampling_time=float(sampling_time),
    )
    post = model_hook(info, "postprocess")
    if callable(post):
        dt = post(dt, gen)  # derived quantities may be random (e.g. realised task averages)
    return compute_diagnostics(dt, warn=True)


def _with_log_likelihood(dt: xr.DataTree, model: pm.Model, info: dict[str, Any]) -> xr.DataTree:
    own = model_hook(info, "log_likelihood")
    if callable(own):
        dt["log_likelihood"] = xr.DataTree(own(dt))
        return dt
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


def fit_replicates(
    model: pm.Model,
    replicates: list[xr.Dataset],
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    rng: None | int | np.random.Generator = None,
    target_accept: float | None = None,
    **sampler_kwargs: Any,
) -> list[xr.DataTree]:
    """Fit one compiled model to many datasets of the same design (nutpie, compiled once).

    For simulation-based calibration and coverage studies: the model is
    compiled once and only its data are swapped. Each replicate must have the
    same agents, tasks and the same ``n_runs`` in every cell as the data the
    model was built on; only the success counts differ.

    Parameters
    ----------
    model : pymc.Model
        A hierbench count model (it holds ``n_runs``, ``n_success``,
        ``cell_n_runs`` and ``cell_n_success`` data).
    replicates : list of xarray.Dataset
        Eval datasets or counts datasets.
    draws, tune, chains, rng, target_accept, **sampler_kwargs
        As in :func:`fit`.

    Returns
    -------
    list of xarray.DataTree
        Each with ``posterior`` and ``sample_stats`` and the ``diag_*``
        root attrs (no predictive or log-likelihood groups).

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> from hierbench.bayes import build_beta_binomial, fit_replicates
    >>> sims = [simulate_eval(n_agents=2, n_tasks=10, n_runs=3, rng=s)[0] for s in range(2)]
    >>> fits = fit_replicates(build_beta_binomial(sims[0]), sims, draws=100, tune=100,
    ...                       chains=1, rng=0)  # doctest: +SKIP
    """
    import nutpie

    from ._crossed import _log_binom
    from ._registry import prepare_counts

    info = _check_model(model)
    for name, v, lo in (("draws", draws, 1), ("tune", tune, 0), ("chains", chains, 1)):
        if not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"`{name}` must be an integer >= {lo}; got {v!r}")
    n_ref = np.asarray(model["n_runs"].get_value())
    gen = as_rng(rng)
    compiled = nutpie.compile_pymc_model(model, backend="numba")
    shared = {getattr(v, "name", None) for v in compiled.shared_var_keys}
    kw = dict(sampler_kwargs)
    kw.setdefault("cores", min(chains, os.cpu_count() or 1))
    if target_accept is not None:
        kw["target_accept"] = target_accept
    out = []
    for i, rep in enumerate(replicates):
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
        if "cell_log_binom" in shared:
            # the crossed model's log binomial coefficients follow the success counts
            updates["cell_log_binom"] = _log_binom(cells["cell_y"], cells["cell_n"])
        c = compiled.with_data(**{k: v for k, v in updates.items() if k in shared})
        dt = nutpie.sample(
            c,
            draws=draws,
            tune=tune,
            chains=chains,
            seed=int(gen.integers(2**31 - 1)),
            save_warmup=False,
            progress_bar=False,
            **kw,
        )
        dt = _drop_warmup(dt)
        dt.attrs.update(hierbench_model=str(info["model"]), replicate=i)
        if "structure" in info:
            dt.attrs["hierbench_structure"] = json.dumps(info["structure"], default=str)
        out.append(compute_diagnostics(dt, warn=False))
    failed = [f for f in out if not f.attrs["diag_converged"]]
    if failed:
        from collections import Counter

        from ._diagnostics import ConvergenceWarning

        kinds = Counter(
            msg.split(" (at")[0].split(" ")[0] + " " + msg.split(" ")[1]
            if not msg[0].isdigit()
            else "divergent transitions"
            for f in failed
            for msg in json.loads(f.attrs["diag_failures"])
        )
        warnings.warn(
            f"{len(failed)} of {len(out)} replicates failed their convergence checks "
            f"(replicates {[int(f.attrs['replicate']) for f in failed][:20]}"
            f"{' ...' if len(failed) > 20 else ''}; failures: "
            + ", ".join(f"{k} x{v}" for k, v in kinds.most_common())
            + "). Each replicate's `diag_failures` attr says which check and parameter failed; "
            "drop or refit them before summarising a calibration or coverage study",
            ConvergenceWarning,
            stacklevel=2,
        )
    return out
