"""Simulation-based calibration (Talts et al. 2018) of the zoo's models at their default priors.

For each model and design, the model is built with every default on a
template data set of the design, the parameters and data of ``R``
replicates are drawn from its prior predictive, and each replicate is
fitted (compiled once; only the data are swapped). Per replicate and
top-level parameter we record the rank of the true value among ``L``
thinned posterior draws and whether the 50% and 90% central intervals hold
it, plus divergences.

If the sampler computes the posterior right, the ranks are uniform on
``0..L``, and the intervals cover at their nominal rates. The report gives,
per parameter, the chi-square p-value of the rank histogram (``bins`` equal
bins), the 50% / 90% coverage with its Wilson 95% band (the check: the
band contains the nominal level), and per model and design the share of
divergent draws, of replicates that failed the fit's checks (by kind), the
median draws per chain and the median wall (:func:`overview`).

The models: the count models ``beta_binomial``, ``crossed``,
``bradley_terry`` (small and medium designs) and ``irt_2pl`` (small), run
by :func:`run`; the formula families ``mixed_covariates``,
``mixed_ordinal``, ``mixed_fractional`` and ``horizon``
(:func:`hierbench.bayes.build_horizon`; small designs), run by
:func:`run_mixed`. Every replicate is fitted at the defaults of
:func:`hierbench.bayes.fit` (4 chains, a start at the mode, 300 tuning
steps, draws until every element's bulk and tail ESS >= 400 and R-hat
within its limit, cap 2000), through :func:`hierbench.bayes.fit_replicates`,
which compiles each design once per process; the draws are thinned to
``L = 99`` for the ranks. Each record states the rule (``rule``,
``target_ess``, ``max_draws``), the draws per chain the replicate ended
with, its start (``init``, ``init_fallback``) and the checks it failed
(``failures``). ``--draws`` / ``--tune`` / ``--chains`` give other settings;
``--priors '{"name": {"dist": ..., ...}}'`` (count models) studies the model at
other priors than its builder's defaults: the truths are drawn from them and
the replicates fitted with them, and each record keeps them (``priors``).

The replicates run on any executor: ``--workers N`` starts a Dask
``LocalCluster`` of N one-thread workers, ``--scheduler tcp://host:8786``
uses a running cluster (count models and formula families alike). Each
replicate's seed is drawn from ``--seed`` before anything runs, so the records
are the same serially and on a cluster
(``time`` runs one study both ways, checks that and gives the wall ratio).
Every replicate is submitted at once and its record appended as soon as it and
those before it are in; a local worker is warmed up (imports, the design's
build) while this process draws the replicates, and exits without the
interpreter's teardown.

Usage::

    python benchmarks/sbc.py run --reps 200 --out sbc.jsonl [--models crossed ...] [--designs small] [--workers 2]
    python benchmarks/sbc.py run --models irt_2pl --designs small --out x.jsonl --priors '{"sd_log_discrimination": ...}'
    python benchmarks/sbc.py report sbc.jsonl [sbc_seed2.jsonl ...]
    python benchmarks/sbc.py time --reps 200 --workers 2 [--models beta_binomial] [--designs small]
    python benchmarks/sbc.py stale results/sbc_defaults_*.jsonl [--first 2]

A stored study replays bit for bit only on the code that made it. Each record
carries its study (``study``: seed, replicate count, fit settings, and the
commit it ran at); ``stale`` draws and fits a study's first replicates again
on today's code and says, per file, model and design, whether they come out
the same (:data:`REPLAYED`: ranks, coverage, divergences, draws, start). A
study whose replicates differ ran on another default; its verdict is not today's.
For the larger models (crossed medium) a replay is exact on the same BLAS
kernels only; records carry them (``blas``) and ``stale`` prints both.

Many checks are made at once (three per parameter: 138 for the eleven
model-design pairs), so a calibrated sampler flags a few of them in a typical
200-replicate study. Independent studies of the same model and design (other
``--seed``) are the answer, not a different band: ``report`` pools every file
given, replicate by replicate, and the pooled bands narrow as sqrt(reps).
Beside each check's own band, ``report`` gives the family-wise view of all the
checks it was handed (:func:`familywise`): each check's p-value (the rank
histogram's chi-square; an exact two-sided binomial test of each coverage
against its nominal level), Holm-adjusted over every check of the report. A
check whose adjusted p is below 0.05 fails at a 5% chance that any of a
calibrated sampler's checks does; a band that misses its nominal level alone
is what one check in twenty does by chance.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
import time
import warnings

import numpy as np

DESIGNS = {
    "small": {"n_agents": 4, "n_tasks": 30, "n_runs": 5, "n_clusters": 0},
    "medium": {"n_agents": 10, "n_tasks": 200, "n_runs": 4, "n_clusters": 20},
}
BT_DESIGNS = {"small": {"n_agents": 4, "n_battles": 120}, "medium": {"n_agents": 15, "n_battles": 1500}}
#: the 2PL standardises the abilities over the agents: a few more of them than the count models' small design
IRT_DESIGNS = {"small": {"n_agents": 6, "n_tasks": 30, "n_runs": 3, "n_clusters": 0}}
PARAMS = {
    "beta_binomial": ["logit_mu_mean", "logit_mu_sd", "mu[0]", "rho[0]"],
    "crossed": ["sd_task", "sd_agent_task", "sd_cluster", "sd_agent_cluster", "ability[0]", "mean_new_task[0]"],
    "bradley_terry": ["sd_ability", "nu", "ability[0]"],
    "irt_2pl": ["mu_intercept", "sd_intercept", "sd_log_discrimination", "ability[0]", "discrimination[0]", "sd_agent_task"],
}
MODELS = tuple(PARAMS)
#: formula models (hierbench.bayes.build_mixed, issue 26): run by run_mixed; summarise/report pool them alike
MIXED_PARAMS = {
    "mixed_covariates": ["beta[1]", "beta[2]", "sd[0]", "sd[1]", "sd[2]"],
    "mixed_ordinal": ["beta[0]", "sd[0]", "sd[1]", "sd[2]", "thresholds[0]"],
    "mixed_fractional": ["beta[0]", "sd[0]", "sd[1]", "interior[0]"],
    # build_horizon (4 agents): agent 0's logit at the mean log2 length and its slope, the task and cell sds
    "horizon": ["beta[0]", "beta[4]", "sd[0]", "sd[1]"],
}
MIXED_FORMULAS = {
    "mixed_covariates": ("score ~ scaffold + tier + (1|model) + (1|task) + (1|agent:task)", "binomial"),
    "mixed_ordinal": ("grade ~ tier + (1|agent) + (1|task) + (1|judge)", "ordinal"),
    "mixed_fractional": ("score ~ 0 + agent + (1|task) + (1|agent:task)", "fractional"),
}
MIXED_DESIGNS = {"small": {"n_tasks": 20, "n_runs": 3}}
#: build_horizon: agents x tasks x runs, human minutes log-spaced over 1 minute to 8 hours
HORIZON_DESIGNS = {"small": {"n_agents": 4, "n_tasks": 20, "n_runs": 3}}
PARAMS.update(MIXED_PARAMS)
L_RANK = 99


def _per_process(fn):
    """``fn`` remembered for the life of this process (the study's, or a worker's).

    Not ``functools.lru_cache``: cloudpickle ships this module's functions by value
    to the workers (:func:`_executor`), but an ``lru_cache`` wrapper by reference to
    ``__main__``, which a worker started on its own (``dask worker``) cannot resolve.
    The memo lives on ``sys``, so each unpickled copy of ``fn`` finds the process's.
    """

    @functools.wraps(fn)
    def remembered(*args):
        memo = sys.__dict__.setdefault("_sbc_memo", {})
        key = (fn.__name__, *args)
        if key not in memo:
            memo[key] = fn(*args)
        return memo[key]

    return remembered


@_per_process
def template(model: str, design: str, seed: int = 0):
    """A data set of the design (its outcomes are irrelevant: only the design is used)."""
    from hierbench.testing import simulate_eval

    if model == "bradley_terry":
        import pandas as pd

        from hierbench.data import read_battles

        d = BT_DESIGNS[design]
        rng = np.random.default_rng(seed)
        m, nb = d["n_agents"], d["n_battles"]
        a = rng.integers(0, m, nb)
        b = (a + rng.integers(1, m, nb)) % m
        names = np.array([f"m{i:02d}" for i in range(m)])
        w = rng.choice(["left", "tie", "right"], nb)
        return read_battles(pd.DataFrame({"left": names[a], "right": names[b], "winner": w}))
    data, _ = simulate_eval(**design_table(model)[design], rng=seed)
    return data


def design_table(model: str) -> dict:
    """The designs a model is calibrated at (name -> the template's sizes)."""
    tables = {"bradley_terry": BT_DESIGNS, "irt_2pl": IRT_DESIGNS, "horizon": HORIZON_DESIGNS}
    return tables.get(model, MIXED_DESIGNS if model in MIXED_PARAMS else DESIGNS)


def _value(ds, spec: str):
    name, _, idx = spec.partition("[")
    if name not in ds:
        return None
    da = ds[name]
    if idx:
        da = da.isel({next(d for d in da.dims if d not in ("chain", "draw")): int(idx[:-1])})
    return da


def replicate_items(model_name: str, design: str, reps: int, seed: int, priors: dict | None = None) -> list[dict]:
    """Each replicate's truth and data, drawn from the prior predictive of the design's model (at ``priors``)."""
    import pymc as pm
    import xarray as xr

    import hierbench.bayes as hbb
    from hierbench import spawn_generators

    model = getattr(hbb, f"build_{model_name}")(template(model_name, design), **_prior_kw(priors))
    info = model.hierbench
    prior = pm.sample_prior_predictive(draws=reps, model=model, random_seed=seed)
    pri = prior["prior"].to_dataset()
    predictive = hbb.model_hook(info, "predictive")
    if callable(predictive):
        # a likelihood written as a weighted potential: simulate its cells
        # with the builder's own vectorised predictive, from the prior draws
        tree = xr.DataTree(children={"posterior": xr.DataTree(pri)})
        pp = predictive(tree, np.random.default_rng(seed + 2))["posterior_predictive"]
        pp = pp.to_dataset()
    else:
        pp = prior["prior_predictive"].to_dataset()
    y = pp[next(iter(pp.data_vars))].isel(chain=0).values
    seeds = [int(g.integers(2**31 - 1)) for g in spawn_generators(seed + 1, reps)]
    truths = {spec: _value(pri, spec) for spec in PARAMS[model_name]}
    return [
        {"rep": r, "seed": seeds[r], "y": y[r],
         "truth": {k: float(v.isel(chain=0, draw=r)) for k, v in truths.items() if v is not None}}
        for r in range(reps)
    ]  # fmt: skip


def _prior_kw(priors: dict | None) -> dict:
    """The builder's keyword for a study at other priors than its defaults (none: the defaults)."""
    return {"priors": priors} if priors else {}


@_per_process
def _template_cells(model_name: str, design: str, priors_json: str):
    """The template's counts and the (agent, task) index of its model's cells (count models).

    The same for every replicate of the design: built once per process, not
    once per replicate (a model build is about a tenth of a small replicate's CPU).
    """
    import hierbench.bayes as hbb
    from hierbench.data import to_counts

    cnt = to_counts(template(model_name, design))
    model = getattr(hbb, f"build_{model_name}")(cnt, **_prior_kw(json.loads(priors_json)))
    ai, ti = (np.asarray(v) for v in model.hierbench["cell_index"])
    return cnt, ai, ti


def _replicate_model(model_name: str, design: str, y: np.ndarray, priors: dict | None = None):
    """Build the replicate's model and its data in the form ``fit_replicates`` takes.

    The structure is decided from the replicate's own data, as a user's fit would.
    """
    import hierbench.bayes as hbb

    data = template(model_name, design)
    if model_name == "bradley_terry":
        from hierbench.data import to_pair_counts

        cnt = to_pair_counts(data)
        yy = np.asarray(y).astype(np.int64)
        if yy.ndim == 2:  # (pair, result): wins of a, ties, wins of b
            upd = {"n_win_a": yy[:, 0], "n_tie": yy[:, 1], "n_win_b": yy[:, 2]}
        else:
            n_pair = (cnt["n_win_a"] + cnt["n_tie"] + cnt["n_win_b"]).values
            upd = {"n_win_a": yy, "n_tie": 0 * yy, "n_win_b": n_pair - yy}
        model = hbb.build_bradley_terry(cnt.assign({k: ("pair", v) for k, v in upd.items()}), **_prior_kw(priors))
        return model, {model.hierbench["observed_data_name"]: yy}
    cnt, ai, ti = _template_cells(model_name, design, json.dumps(priors, sort_keys=True))
    grid = np.zeros(cnt["n_success"].shape, dtype=np.int64)
    grid[ai, ti] = y
    rep = cnt.assign(n_success=(("agent", "task"), grid))
    return getattr(hbb, f"build_{model_name}")(rep, **_prior_kw(priors)), rep


def one_replicate(item: dict, gen, *, model_name: str, design: str, settings: dict, priors: dict | None = None) -> dict:
    """Fit one replicate at the fit's defaults and record its ranks and coverage (worker side)."""
    from hierbench.bayes import fit_replicates

    model, data = _replicate_model(model_name, design, item["y"], priors)
    dec = model.hierbench["structure"]["decisions"]
    key = json.dumps({k: v["choice"] for k, v in dec.items()}, sort_keys=True, default=str)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (dt,) = fit_replicates(model, [data], rng=item["seed"], progress=False, **settings)
    rec = _record(model_name, design, item["rep"], dt, item["truth"], time.perf_counter() - t0)
    return {"structure": key, **rec, **({"priors": priors} if priors else {})}


def _record(model_name: str, design: str, rep: int, dt, truth: dict, wall: float) -> dict:
    """One replicate's ranks, interval hits and the fit's run: its draws rule, draws per chain, diagnostics."""
    post = dt["posterior"].to_dataset()
    run = json.loads(dt.attrs["fit_run"])
    rec = {
        "model": model_name, "design": design, "rep": rep,
        "n_div": int(dt.attrs["diag_n_divergent"]),
        "n_draws": int(post.sizes["chain"] * post.sizes["draw"]),
        "chains": int(post.sizes["chain"]), "draws_per_chain": int(post.sizes["draw"]),
        "rule": run.get("rule"), "target_ess": run.get("target_ess"), "max_draws": run.get("max_draws"),
        "init": run.get("init"), "init_fallback": run.get("init_fallback"),
        "converged": int(dt.attrs["diag_converged"]), "max_r_hat": float(dt.attrs["diag_max_r_hat"]),
        "failures": json.loads(dt.attrs.get("diag_failures", "[]")),
        "wall": round(wall, 2),
        "mean_steps": float(dt["sample_stats"]["n_steps"].mean()),
        "ranks": {}, "in50": {}, "in90": {},
    }  # fmt: skip
    for spec, t in truth.items():
        draws_da = _value(post, spec)
        if draws_da is None:
            continue
        x = np.asarray(draws_da.values, dtype=float).ravel()
        thin = x[np.linspace(0, x.size - 1, L_RANK).round().astype(int)]
        rec["ranks"][spec] = int((thin < t).sum())
        lo50, hi50, lo90, hi90 = np.quantile(x, [0.25, 0.75, 0.05, 0.95])
        rec["in50"][spec] = bool(lo50 <= t <= hi50)
        rec["in90"][spec] = bool(lo90 <= t <= hi90)
    return rec


def _warm(k: int, model_name: str, design: str, priors_json: str, settings: dict, parent: int) -> int:
    """A worker's cold start, run while the parent draws the replicates; its process id.

    The imports, the template's cells (:func:`_template_cells`) and the build of
    the template's model, which every replicate whose structure is the
    template's reuses (all of the small count designs'); ``k`` only tells the
    copies apart (a Dask executor runs identical calls once). Changes no record:
    a reused build gives the draws of a fresh one. In a worker process (not
    ``parent``, the one running the study) it also arranges :func:`_exit_now`.
    """
    import atexit

    import hierbench.bayes as hbb

    if os.getpid() != parent and not getattr(sys, "_sbc_exit_now", False):
        sys._sbc_exit_now = True
        atexit.register(_exit_now)
    if model_name == "bradley_terry":  # its replicates are built from their own pair counts
        template(model_name, design)
        return os.getpid()
    cnt, _, _ = _template_cells(model_name, design, priors_json)
    model = getattr(hbb, f"build_{model_name}")(cnt, **_prior_kw(json.loads(priors_json)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hbb.fit_replicates(model, [], progress=False, **settings)  # compiles and keeps the build
    return os.getpid()


def _exit_now() -> None:
    """End a worker process at exit without the interpreter's teardown (registered by :func:`_warm`).

    A spawned worker that has fitted spends seconds freeing its compiled code
    and modules after it has closed (1-3 s in a plain process, over 4 s in a
    Dask worker on a busy machine, which its nanny then kills), while the pool or
    the cluster waits for it; a forked one skips this, as here: logs and output
    flushed, then ``os._exit``.
    """
    import logging

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _append_to(fh, study: dict):
    """An ``on_result`` writing each record, with its ``study``, to ``fh`` as a JSON line, flushed.

    A stopped study keeps what it wrote.
    """

    def write(_i: int, rec: dict) -> None:
        rec["study"] = study
        fh.write(json.dumps(rec) + "\n")
        fh.flush()

    return write


def _code_id() -> str:
    """The commit this script runs at (``+dirty`` with uncommitted changes), else hierbench's version."""
    import subprocess

    git = ["git", "-C", os.path.dirname(os.path.abspath(__file__))]
    try:
        sha = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, check=True)  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        import hierbench

        return f"hierbench {hierbench.__version__}"
    return sha.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _blas_id() -> str:
    """The BLAS this process runs, its version and the CPU kernels it chose.

    A start at the mode of a model with some hundreds of parameters or more runs dense
    linear algebra (the Hessian's eigendecomposition) whose last bits follow the kernels:
    crossed medium's replicate 1 replays exactly on one CPU and not on another (the chains
    then part). A replay is a check of the code only where this is the same.
    """
    from threadpoolctl import threadpool_info

    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    return "; ".join(f"{i['internal_api']} {i['version']} {i.get('architecture')}" for i in blas) or "none"


def _study(seed: int, reps: int, settings: dict) -> dict:
    """What a record needs for its replicate to be drawn and fitted again (:func:`stale`): code, BLAS."""
    return {"seed": seed, "reps": reps, "settings": settings, "code": _code_id(), "blas": _blas_id()}


def run(models, designs, reps, out, *, chains=4, draws=None, tune=None, seed=2026, start_rep=0,
        executor=None, progress=None, init="map", priors=None, warm=0) -> list[dict]:  # fmt: skip
    """Fit every replicate of every model and design at the fit's defaults; append records to ``out``.

    ``executor`` (any concurrent.futures.Executor, e.g. a Dask client's)
    runs the replicates in parallel; each replicate's seed is spawned from
    ``seed`` before anything runs, so the records are the same whatever the
    executor (``wall`` aside). ``start_rep`` resumes an interrupted study;
    each record is appended as soon as it and every one before it are done
    (a study stopped early keeps what it fitted; no replicate waits for
    another's). ``priors``: overrides of the builder's default priors, for the
    truths and the fits alike. ``warm``: how many workers ``executor`` has; each
    gets a warm-up task (:func:`_warm`: its imports and the design's build) while
    this process draws the replicates (serially there is nothing to overlap).
    """
    from hierbench import map_seeded

    warnings.simplefilter("ignore")
    settings = {"chains": chains, "draws": draws, "tune": tune, "init": init}
    recs = []
    for design in designs:
        for model_name in (m for m in models if design in design_table(m)):
            pj = json.dumps(priors, sort_keys=True)
            # the workers' cold starts while this process draws the replicates
            warming = [executor.submit(_warm, k, model_name, design, pj, settings, os.getpid())
                       for k in range(warm if executor is not None else 0)]  # fmt: skip
            items = [i for i in replicate_items(model_name, design, reps, seed, priors) if i["rep"] >= start_rep]
            kw = {"model_name": model_name, "design": design, "settings": settings, "priors": priors}
            with open(out, "a") as fh:
                # every replicate submitted at once, each record written (and flushed) in order as
                # soon as it and those before it are in (a replicate's seed is its item's: the
                # order the fits finish in does not change a record)
                got = map_seeded(one_replicate, items, rng=seed, executor=executor, progress=progress,
                                 desc=f"SBC {model_name} {design}", kwargs=kw,
                                 on_result=_append_to(fh, _study(seed, reps, settings)))  # fmt: skip
            for f in warming:  # done long before the replicates (a failure would show here)
                f.result()
            recs += got
            walls = [r["wall"] for r in got]
            print(
                f"{model_name} {design}: {len(got)} replicates, median wall {np.median(walls):.1f}s, "
                f"divergent {sum(r['n_div'] for r in got)}, not converged "
                f"{sum(1 - r['converged'] for r in got)}, load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    return recs


def template_mixed(model: str, design: str, seed: int = 0):
    """Build a leaderboard of the design.

    2 scaffolds x 3 models, a task tier, a judge per run, grades 1-4, [0, 1]
    scores with exact 0s and 1s (outcomes irrelevant beyond the structure they imply);
    for ``horizon``, binary scores and a task coord of human minutes.
    """
    import xarray as xr

    rng = np.random.default_rng(seed)
    if model == "horizon":
        A, T, R = (HORIZON_DESIGNS[design][k] for k in ("n_agents", "n_tasks", "n_runs"))
        return xr.Dataset(
            {"score": (("agent", "task", "run"), (rng.random((A, T, R)) < 0.5) * 1.0)},
            coords={"agent": [f"a{i}" for i in range(A)], "task": [f"t{i}" for i in range(T)],
                    "human_minutes": ("task", np.geomspace(1.0, 480.0, T))},
        )  # fmt: skip
    d = MIXED_DESIGNS[design]
    T, R = d["n_tasks"], d["n_runs"]
    sc, mo = np.repeat(["s1", "s2"], 3), np.tile(["m1", "m2", "m3"], 2)
    u = rng.random((6, T, R))
    score = np.where(u < 0.3, 0.0, np.where(u > 0.8, 1.0, u)) if model == "mixed_fractional" else (u < 0.5) * 1.0
    return xr.Dataset(
        {"score": (("agent", "task", "run"), score),
         "grade": (("agent", "task", "run"), rng.integers(1, 5, (6, T, R)).astype(float)),
         "judge": (("agent", "task", "run"), rng.choice(["j1", "j2", "j3", "j4"], (6, T, R)))},
        coords={"agent": [f"{a}/{b}" for a, b in zip(sc, mo, strict=True)], "task": [f"t{i}" for i in range(T)],
                "scaffold": ("agent", sc), "model": ("agent", mo), "tier": ("task", ["easy", "hard"] * (T // 2))},
    )  # fmt: skip


def _build_formula(name: str, data, **kw):
    """The formula model ``name`` on ``data`` at its builder's defaults."""
    import hierbench.bayes as hbb

    if name == "horizon":
        return hbb.build_horizon(data)
    formula, family = MIXED_FORMULAS[name]
    return hbb.build_mixed(data, formula, family=family, **kw)


def _mixed_updates(model, y: np.ndarray) -> dict:
    """The data a replicate's outcome ``y`` (in the likelihood's dims) replaces in a formula model."""
    from scipy.special import gammaln

    fam = model.hierbench["design"].family
    if fam == "ordinal":  # the multinomial coefficient of each row's grade counts, on the log scale
        coef = gammaln(y.sum(1) + 1.0) - gammaln(y + 1.0).sum(1)
        return {"grade_counts": y.astype(np.int64), "grade_log_coef": coef}
    if fam == "fractional":
        return {"score_obs": y.astype(float)}
    if "run_success" in model.named_vars:
        return {"run_success": y.astype(np.int64)}
    n = np.asarray(model["cell_n_runs"].get_value())
    return {"cell_n_success": y.astype(np.int64),
            "cell_log_binom": gammaln(n + 1.0) - gammaln(y + 1.0) - gammaln(n - y + 1.0)}  # fmt: skip


def _replicate_data(name: str, template, model, y: np.ndarray):
    """The replicate's outcome written into the template's dataset (graded and horizon models), or None."""
    ds = template.copy()
    design = model.hierbench["design"]
    if name == "horizon" or (design.family == "binomial" and design.row_level == "cell"):
        # y: successes per (agent, task) cell; the first y runs succeed
        cc = model.hierbench["cell_coords"]
        a = ds.indexes["agent"].get_indexer(cc["cell_agent"])
        t = ds.indexes["task"].get_indexer(cc["cell_task"])
        score = np.zeros(ds["score"].shape)
        score[a, t] = np.arange(score.shape[2])[None, :] < np.asarray(y)[:, None]
        ds["score"] = (ds["score"].dims, score)
        return ds
    if design.family != "ordinal":
        return None
    cats = design.categories
    ds["grade"] = (ds["grade"].dims, cats[y.argmax(1)].reshape(ds["grade"].shape))  # rows are runs, in order
    return ds


def _replicate_form(name: str, template, model, y: np.ndarray):
    """The model a replicate is fitted with: the builder's own choice on its data, where it can be made.

    Graded (``mixed_ordinal``), binary-cell (``mixed_covariates``) and ``horizon`` replicates are rebuilt
    from their own outcomes and fitted in the centring and step size their builder chooses for them (the
    fit's defaults: a parameterisation and a sampler setting, not a different posterior; ``fit_replicates``
    compiles each choice once); a replicate the builder refuses (a grade that never occurs: its
    thresholds rest on the prior) keeps the template's. Other families keep the template's. Returns the model and its form (the centred terms, or ``"template"``).
    """
    from hierbench.data import FormulaError

    ds = _replicate_data(name, template, model, y)
    if ds is None:
        return model, "template"
    try:
        kw = {"levels": model.hierbench["design"].categories} if model.hierbench["design"].family == "ordinal" else {}
        built = _build_formula(name, ds, **kw)
    except FormulaError:
        return model, "template"
    return built, list(built.hierbench["options"]["centred"])


def _mixed_prior(model, reps: int, seed: int):
    """Prior draws and the builder's predictive outcome of each (formula models)."""
    import pymc as pm
    import xarray as xr

    import hierbench.bayes as hbb

    pri = pm.sample_prior_predictive(draws=reps, model=model, random_seed=seed)["prior"].to_dataset()
    if "thresholds" in pri:
        # forward sampling ignores the ordered transform: `thresholds_seen` comes out iid, unsorted
        # (the model sorts it for the likelihood and `thresholds`, already ordered here). The prior
        # the logp states (iid, restricted to the ordered set) is the law of their order statistics
        for v in ("thresholds", "thresholds_seen"):
            pri[v] = pri[v].copy(data=np.sort(pri[v].values, axis=-1))
    pp = hbb.model_hook(model.hierbench, "predictive")(
        xr.DataTree(children={"posterior": xr.DataTree(pri)}), np.random.default_rng(seed + 2)
    )["posterior_predictive"]["y"]
    return pri, pp


def mixed_items(name: str, design: str, reps: int, seed: int) -> list[dict]:
    """Each formula-model replicate's outcome, truth and sampler seed, drawn from the design's prior."""
    _, model = _mixed_template_model(name, design)  # the one a serial run's replicates then reuse
    pri, pp = _mixed_prior(model, reps, seed)
    gen = np.random.default_rng(seed + 1)
    seeds = [int(gen.integers(2**31 - 1)) for _ in range(reps)]
    return [
        {"rep": r, "seed": seeds[r], "y": pp.isel(chain=0, draw=r).values,
         "truth": {k: float(v.isel(chain=0, draw=r)) for k in PARAMS[name] if (v := _value(pri, k)) is not None}}
        for r in range(reps)
    ]  # fmt: skip


@_per_process
def _mixed_template_model(name: str, design: str):
    """The design's leaderboard and its model (once per process)."""
    tmpl = template_mixed(name, design)
    return tmpl, _build_formula(name, tmpl)


def one_mixed_replicate(item: dict, _gen, *, name: str, design: str, settings: dict) -> dict:
    """Fit one formula-model replicate at the fit's defaults and record it (worker side)."""
    from hierbench.bayes import fit_replicates

    tmpl, model = _mixed_template_model(name, design)
    fm, form = _replicate_form(name, tmpl, model, item["y"])
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (dt,) = fit_replicates(fm, [_mixed_updates(fm, item["y"])], rng=item["seed"], progress=False, **settings)
    return {**_record(name, design, item["rep"], dt, item["truth"], time.perf_counter() - t0), "form": form}


def run_mixed(models, designs, reps, out, *, chains=4, draws=None, tune=None, seed=2026, start_rep=0,
              init="map", executor=None, progress=None) -> list[dict]:  # fmt: skip
    """Run SBC of the formula models at the fit's defaults, as :func:`run` does the count models.

    Each replicate's outcome, drawn by the builder's own predictive from a
    prior draw, is swapped into its model through
    :func:`hierbench.bayes.fit_replicates` (compiled once per form and process). Graded
    and horizon replicates are fitted in the centring their builder chooses
    on their own data (:func:`_replicate_form`; binary-cell families too), so their divergences are
    those of the fit's defaults; the record's ``form`` says which. ``executor`` runs the
    replicates as :func:`run` does; a replicate's sampler seed is drawn here in replicate
    order, so the records are the serial run's whatever the executor (``wall`` aside).
    """
    from hierbench import map_seeded

    warnings.simplefilter("ignore")
    settings = {"chains": chains, "draws": draws, "tune": tune, "init": init}
    recs = []
    for design in designs:
        for name in (m for m in models if design in design_table(m)):
            items = [i for i in mixed_items(name, design, reps, seed) if i["rep"] >= start_rep]
            kw = {"name": name, "design": design, "settings": settings}
            with open(out, "a") as fh:
                got = map_seeded(one_mixed_replicate, items, rng=seed, executor=executor, progress=progress,
                                 desc=f"SBC {name} {design}", kwargs=kw,
                                 on_result=_append_to(fh, _study(seed, reps, settings)))  # fmt: skip
            recs += got
            print(f"{name} {design}: {len(got)} replicates, divergent {sum(r['n_div'] for r in got)}, not converged "
                  f"{sum(1 - r['converged'] for r in got)}, load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    return recs


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return c - h, c + h


def summarise(path: str | list[str], bins: int | None = None) -> list[dict]:
    """Per (model, design, parameter): rank chi-square p, coverage with Wilson band; per (model, design): divergences."""
    from scipy.stats import binomtest
    from scipy.stats import chisquare

    paths = [path] if isinstance(path, str) else list(path)
    # several files: independent studies (different --seed) pooled, replicate by replicate
    recs = [json.loads(line) for p in paths for line in open(p)]
    out = []
    keys = sorted({(r["model"], r["design"]) for r in recs})
    for model, design in keys:
        rs = [r for r in recs if r["model"] == model and r["design"] == design]
        n = len(rs)
        nb = bins or int(min(10, max(2, n // 10)))
        div = sum(r["n_div"] for r in rs) / max(sum(r["n_draws"] for r in rs), 1)
        for spec in PARAMS[model]:
            ranks = np.array([r["ranks"][spec] for r in rs if spec in r["ranks"]])
            if ranks.size == 0:
                continue
            # L_RANK draws -> ranks 0..L_RANK (L_RANK + 1 values), binned evenly
            h = np.bincount((ranks * nb) // (L_RANK + 1), minlength=nb)
            p = float(chisquare(h).pvalue)
            c50 = sum(r["in50"][spec] for r in rs if spec in r["in50"])
            c90 = sum(r["in90"][spec] for r in rs if spec in r["in90"])
            m = ranks.size
            w50, w90 = wilson(c50, m), wilson(c90, m)
            out.append(
                {
                    "model": model,
                    "design": design,
                    "param": spec,
                    "reps": int(m),
                    "chi2_p": p,
                    "hist": h.tolist(),
                    "cov50": c50 / m,
                    "cov50_band": w50,
                    "cov90": c90 / m,
                    "cov90_band": w90,
                    "ok": bool(p > 0.01 and w50[0] <= 0.5 <= w50[1] and w90[0] <= 0.9 <= w90[1]),
                    "p50": float(binomtest(c50, m, 0.5).pvalue),
                    "p90": float(binomtest(c90, m, 0.9).pvalue),
                    "div_share": div,
                    "not_converged": sum(1 - r["converged"] for r in rs),
                }
            )
    return out


def familywise(rows: list[dict], alpha: float = 0.05) -> int:
    """Holm-adjust every check of ``rows`` (rank p, 50% and 90% coverage p) together; the number failing.

    Adds to each row ``holm`` (the smallest adjusted p of its three checks) and
    ``fw_ok`` (``holm >= alpha``).
    """
    ps = np.array([[r["chi2_p"], r["p50"], r["p90"]] for r in rows], dtype=float).ravel()
    order = np.argsort(ps, kind="stable")
    k = ps.size
    # step-down: the i-th smallest p times (k - i), made monotone, capped at 1
    adj = np.minimum(1.0, np.maximum.accumulate(ps[order] * (k - np.arange(k))))
    holm = np.empty(k)
    holm[order] = adj
    for r, h in zip(rows, holm.reshape(-1, 3), strict=True):
        r["holm"], r["fw_ok"] = float(h.min()), bool(h.min() >= alpha)
    return int((holm < alpha).sum())


def report(path: str | list[str]) -> None:
    rows = summarise(path)
    n_fail = familywise(rows)
    print(
        f"{'model':<14} {'design':<7} {'param':<17} {'reps':>4} {'chi2 p':>7} {'cov50':>6} "
        f"{'band50':>13} {'cov90':>6} {'band90':>13} {'ok':>3} {'holm p':>7} {'div %':>6} {'unconv':>6}"
    )
    for r in rows:
        print(
            f"{r['model']:<14} {r['design']:<7} {r['param']:<17} {r['reps']:>4} {r['chi2_p']:>7.3f} "
            f"{r['cov50']:>6.3f} [{r['cov50_band'][0]:.3f},{r['cov50_band'][1]:.3f}] "
            f"{r['cov90']:>6.3f} [{r['cov90_band'][0]:.3f},{r['cov90_band'][1]:.3f}] "
            f"{'yes' if r['ok'] else 'NO':>3} {r['holm']:>7.3f} {100 * r['div_share']:>6.3f} {r['not_converged']:>6}"
        )
    print(f"\nfamily-wise: {n_fail} of {3 * len(rows)} checks fail at 5% after Holm's adjustment over all of them\n")
    for r in overview(path):
        print(json.dumps(r))


def overview(path: str | list[str]) -> list[dict]:
    """Per (model, design): the checks' spread, and how the fits ran (draws, walls, failed checks by kind)."""
    from collections import Counter

    paths = [path] if isinstance(path, str) else list(path)
    recs = [json.loads(line) for p in paths for line in open(p)]
    rows = summarise(paths)
    familywise(rows)
    out = []
    for model, design in sorted({(r["model"], r["design"]) for r in recs}):
        rs = [r for r in recs if r["model"] == model and r["design"] == design]
        ch = [r for r in rows if r["model"] == model and r["design"] == design]
        kinds = Counter(
            "divergent" if f[0].isdigit() else " ".join(f.split()[: 2 if f.startswith("min ") else 1])
            for r in rs
            for f in r.get("failures", [])
        )
        out.append({
            "model": model, "design": design, "reps": len(rs), "rules": sorted({str(r.get("rule")) for r in rs}),
            "chi2_p": [round(min(c["chi2_p"] for c in ch), 3), round(max(c["chi2_p"] for c in ch), 3)],
            "checks_out": [f"{c['param']}: p {c['chi2_p']:.3f} cov50 {c['cov50']:.3f} cov90 {c['cov90']:.3f}"
                           for c in ch if not c["ok"]],
            "checks_failing_familywise": [f"{c['param']}: Holm p {c['holm']:.3f}" for c in ch if not c["fw_ok"]],
            "div_share": round(sum(r["n_div"] for r in rs) / sum(r["n_draws"] for r in rs), 5),
            "reps_with_div": sum(r["n_div"] > 0 for r in rs),
            "failed_share": round(sum(1 - r["converged"] for r in rs) / len(rs), 3), "failures": dict(kinds),
            "init_map_share": round(sum(r.get("init") == "map" for r in rs) / len(rs), 3),
            "median_draws_per_chain": float(np.median([r.get("draws_per_chain", 0) for r in rs])),
            "median_wall": float(np.median([r["wall"] for r in rs])),
        })  # fmt: skip
    return out


def _executor(workers: int, scheduler: str | None):
    """A Dask executor (a LocalCluster of ``workers`` one-thread processes, or a scheduler's), or None."""
    import contextlib

    if not workers and not scheduler:
        return contextlib.nullcontext(None)
    import cloudpickle
    from dask.distributed import Client
    from dask.distributed import LocalCluster

    # the workers need this module's functions, and they may not find benchmarks/ on their path
    cloudpickle.register_pickle_by_value(sys.modules[__name__])

    @contextlib.contextmanager
    def cluster():
        if scheduler:
            with Client(scheduler) as client:
                yield client.get_executor()
            return
        import dask

        # Dask starts its workers with MALLOC_TRIM_THRESHOLD_=65536 (freed memory back to the system
        # at once): a fit allocates and frees much, and its workers then spent about a fifth of their
        # fitting CPU in the kernel (0.21-0.28 CPU-s of 1.24-1.53 per crossed-small replicate; 0.06-0.14
        # without). The study holds little memory: the workers keep malloc's own default
        with dask.config.set({"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}), \
                LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=None) as lc, \
                Client(lc) as client:  # fmt: skip
            yield client.get_executor()

    return cluster()


def _cpu() -> float:
    """User + sys CPU seconds of this process (all its threads) and of its children that have exited."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def time_study(reps: int, workers: int, models, designs, seed: int, out: str | None) -> dict:
    """The same study serially and on a local cluster: walls, their ratio, identical records."""
    import tempfile

    walls, recs, cpus = {}, {}, {}
    for label, n in (("serial", 0), (f"{workers} workers", workers)):
        path = os.path.join(tempfile.mkdtemp(), "sbc.jsonl")
        t0, c0 = time.perf_counter(), _cpu()
        with _executor(n, None) as ex:
            recs[label] = run(models, designs, reps, path, seed=seed, executor=ex, warm=n)
        walls[label], cpus[label] = time.perf_counter() - t0, _cpu() - c0
    strip = [[{k: v for k, v in r.items() if k != "wall"} for r in rs] for rs in recs.values()]
    row = {"reps": reps, "models": list(models), "designs": list(designs),
           "wall_s": {k: round(v, 1) for k, v in walls.items()},
           "ratio": round(walls[f"{workers} workers"] / walls["serial"], 3),
           # CPU seconds (user + sys, this process's threads and its reaped children: the
           # cluster's workers); serial_cores is what the serial run already used in parallel
           "cpu_s": {k: round(v, 1) for k, v in cpus.items()},
           "serial_cores": round(cpus["serial"] / walls["serial"], 2),
           "identical": strip[0] == strip[1], "load": [round(x, 2) for x in os.getloadavg()]}  # fmt: skip
    print(json.dumps(row), flush=True)
    if out:
        with open(out, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        with open(out.removesuffix(".jsonl") + "_records.jsonl", "a") as fh:  # for `report`
            fh.writelines(json.dumps(r) + "\n" for r in recs["serial"])
    return row


#: what a replayed replicate must give again for its stored record to be today's (wall and wording aside)
REPLAYED = ("ranks", "in50", "in90", "n_div", "draws_per_chain", "init")


def _stored_study(path: str, rec: dict, n_recs: int, seed: int | None, reps: int | None) -> dict:
    """The seed, replicate count and fit settings a stored record's study ran with.

    Records written by :func:`run` and :func:`run_mixed` carry them (``study``). For older
    ones: the seed is ``seed``, else the file name's ``_seed<N>``, else 2026; the count
    ``reps``, else the study's records in the file (a study stopped early needs ``reps``:
    the prior draws depend on it); the settings are read off the record (its chains, a
    fixed rule's draws, a support-point start that was asked for) at the default tuning.
    """
    import re

    if "study" in rec:
        st = dict(rec["study"])
        return {**st, "seed": seed if seed is not None else st["seed"], "reps": reps or st["reps"]}
    named = re.search(r"_seed(\d+)", os.path.basename(path))
    fixed = rec.get("rule") != "target_ess"
    asked_sp = rec.get("init") == "support_point" and not rec.get("init_fallback")
    settings = {"chains": rec["chains"], "draws": rec["draws_per_chain"] if fixed else None, "tune": None,
                "init": "support_point" if asked_sp else "map"}  # fmt: skip
    return {"seed": seed if seed is not None else int(named.group(1)) if named else 2026,
            "reps": reps or n_recs, "settings": settings, "code": "unrecorded"}  # fmt: skip


def replay(model: str, design: str, study: dict, reps: list[int], priors: dict | None = None) -> list[dict]:
    """Replicates ``reps`` of a stored study, drawn and fitted again on today's code, serially."""
    st = study["settings"]
    if model in MIXED_PARAMS:
        items = mixed_items(model, design, study["reps"], study["seed"])
        return [one_mixed_replicate(items[r], None, name=model, design=design, settings=st) for r in reps]
    items = replicate_items(model, design, study["reps"], study["seed"], priors)
    return [one_replicate(items[r], None, model_name=model, design=design, settings=st, priors=priors) for r in reps]


def first_difference(stored: dict, now: dict) -> str | None:
    """The first of :data:`REPLAYED` where a replayed record differs from the stored one, or None.

    A dict field is compared on the stored record's keys (a study that checked fewer
    parameters than today's is not stale for that).
    """
    for k in REPLAYED:
        old, new = stored.get(k), now.get(k)
        if isinstance(old, dict) and isinstance(new, dict):
            new = {p: new.get(p) for p in old}
        if old != new:
            return f"{k}: stored {old!r}, now {new!r}"
    return None


def _studies(recs: list[dict]) -> dict[tuple, list[dict]]:
    """A file's records by (model, design, priors as JSON), each study's in replicate order."""
    out: dict[tuple, list[dict]] = {}
    for r in recs:
        out.setdefault((r["model"], r["design"], json.dumps(r.get("priors"), sort_keys=True)), []).append(r)
    return {k: sorted(v, key=lambda r: r["rep"]) for k, v in out.items()}


def stale(paths: list[str], first: int = 2, seed: int | None = None, reps: int | None = None) -> list[dict]:
    """Whether each stored study's first ``first`` replicates come out the same on today's code.

    A study replays bit for bit only on the code that made it: one whose replicates
    differ ran on an older default (or other settings than its records say) and its
    verdict is not today's. For models whose start does dense linear algebra (a few
    hundred parameters and more) that holds on the same BLAS kernels only (``blas``,
    ``blas_here``: :func:`_blas_id`): where they differ, a difference may be the CPU's.
    One row per file, model, design and priors.
    """
    warnings.simplefilter("ignore")
    rows, here = [], _blas_id()
    for path in paths:
        for key, group in _studies([json.loads(line) for line in open(path)]).items():
            study = _stored_study(path, group[0], len(group), seed, reps)
            # a resumed study's file may start past replicate 0: its own first records are replayed
            now = replay(key[0], key[1], study, [r["rep"] for r in group[:first]], json.loads(key[2]))
            diffs = [first_difference(s, n) for s, n in zip(group, now, strict=False)]
            row = {"file": os.path.basename(path), "model": key[0], "design": key[1], "seed": study["seed"],
                   "reps": study["reps"], "code": study.get("code"), "blas": study.get("blas", "unrecorded"),
                   "blas_here": here, "replayed": len(now),
                   "same": sum(d is None for d in diffs), "first_difference": next((d for d in diffs if d), None)}  # fmt: skip
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("run")
    pr.add_argument("--reps", type=int, default=200)
    pr.add_argument("--out", required=True)
    pr.add_argument("--models", nargs="*", default=list(MODELS), help=f"or formula models: {list(MIXED_PARAMS)}")
    pr.add_argument("--designs", nargs="*", default=list(DESIGNS))
    pr.add_argument("--chains", type=int, default=4)
    pr.add_argument("--draws", type=int, default=None, help="fixed draws (default: fit's target-ESS rule)")
    pr.add_argument("--tune", type=int, default=None, help="tuning steps (default: fit's)")
    pr.add_argument("--init", default="map", choices=["map", "support_point"], help="the chains' start")
    pr.add_argument("--seed", type=int, default=2026)
    pr.add_argument("--workers", type=int, default=0, help="a Dask LocalCluster of this many workers")
    pr.add_argument("--scheduler", default=None, help="a Dask scheduler address (tcp://host:8786)")
    pr.add_argument(
        "--start-rep", type=int, default=0,
        help="skip the replicates before this one (resume a study; append to its --out)",
    )
    pr.add_argument("--priors", type=json.loads, default=None,
                    help="JSON overrides of the builder's priors (count models): truths and fits alike")
    tp = sub.add_parser("time", help="the same study serially and on a local cluster")
    tp.add_argument("--reps", type=int, default=200)
    tp.add_argument("--workers", type=int, default=2)
    tp.add_argument("--models", nargs="*", default=["beta_binomial"])
    tp.add_argument("--designs", nargs="*", default=["small"])
    tp.add_argument("--seed", type=int, default=2026)
    tp.add_argument("--out", default=None, help="append the timing row here (not results/sbc_*.jsonl: those are studies)")
    sp = sub.add_parser("stale", help="replay the first replicates of stored studies on today's code")
    sp.add_argument("path", nargs="+")
    sp.add_argument("--first", type=int, default=2, help="replicates replayed per study")
    sp.add_argument("--seed", type=int, default=None, help="for records that do not carry their study")
    sp.add_argument("--reps", type=int, default=None, help="the study's replicate count, if stopped early")
    rp = sub.add_parser("report")
    rp.add_argument("path", nargs="+", help="one study, or several independent ones (pooled)")
    a = p.parse_args(argv)
    if a.cmd == "run":
        # count and formula models alike on any executor, at the fit's defaults unless given
        kw = {"chains": a.chains, "draws": a.draws, "tune": a.tune, "seed": a.seed, "start_rep": a.start_rep,
              "init": a.init}  # fmt: skip
        formula = [m for m in a.models if m in MIXED_PARAMS]
        if formula and a.priors:
            p.error("--priors applies to the count models only")
        counted = [m for m in a.models if m not in MIXED_PARAMS]
        with _executor(a.workers, a.scheduler) as ex:
            if counted:
                # a warm-up per local worker (not on a running cluster: its workers outlive the study)
                warm = 0 if a.scheduler else a.workers
                run(counted, a.designs, a.reps, a.out, executor=ex, priors=a.priors, warm=warm, **kw)
            if formula:
                run_mixed(formula, a.designs, a.reps, a.out, executor=ex, **kw)
    elif a.cmd == "stale":
        stale(a.path, a.first, a.seed, a.reps)
    elif a.cmd == "time":
        time_study(a.reps, a.workers, a.models, a.designs, a.seed, a.out)
    else:
        report(a.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
