"""Simulation-based calibration (Talts et al. 2018) of the three models at their default priors.

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
divergent draws.

Posterior draws per replicate are fewer than a default fit (``--chains 2
--draws 400 --tune 400`` by default, thinned to ``L = 99`` for the ranks):
SBC needs a calibrated posterior, not a precise one, and 1,200 fits must run
on a shared 2-core machine.

Usage::

    python benchmarks/sbc.py run --reps 200 --out sbc.jsonl [--models crossed ...] [--designs small]
    python benchmarks/sbc.py report sbc.jsonl [sbc_seed2.jsonl ...]

Many checks are made at once (26 for the six model-design pairs), each with a
95% band, so a calibrated sampler flags one or two of them in a typical
200-replicate study. Independent studies of the same model and design (other
``--seed``) are the answer, not a different band: ``report`` pools every file
given, replicate by replicate, and the pooled bands narrow as sqrt(reps).
"""

from __future__ import annotations

import argparse
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
PARAMS = {
    "beta_binomial": ["logit_mu_mean", "logit_mu_sd", "mu[0]", "rho[0]"],
    "crossed": ["sd_task", "sd_agent_task", "sd_cluster", "ability[0]", "mean_new_task[0]"],
    "bradley_terry": ["sd_ability", "nu", "ability[0]"],
}
MODELS = tuple(PARAMS)
#: formula models (hierbench.bayes.build_mixed, issue 26): run by run_mixed; summarise/report pool them alike
MIXED_PARAMS = {
    "mixed_covariates": ["beta[1]", "beta[2]", "sd[0]", "sd[1]", "sd[2]"],
    "mixed_ordinal": ["beta[0]", "sd[0]", "sd[1]", "sd[2]", "thresholds[0]"],
    "mixed_fractional": ["beta[0]", "sd[0]", "sd[1]", "interior[0]"],
}
MIXED_FORMULAS = {
    "mixed_covariates": ("score ~ scaffold + tier + (1|model) + (1|task) + (1|agent:task)", "binomial"),
    "mixed_ordinal": ("grade ~ tier + (1|agent) + (1|task) + (1|judge)", "ordinal"),
    "mixed_fractional": ("score ~ 0 + agent + (1|task) + (1|agent:task)", "fractional"),
}
MIXED_DESIGNS = {"small": {"n_tasks": 20, "n_runs": 3}}
PARAMS.update(MIXED_PARAMS)
L_RANK = 99


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
    d = dict(DESIGNS[design])
    data, _ = simulate_eval(**d, rng=seed)
    return data


def _value(ds, spec: str):
    name, _, idx = spec.partition("[")
    if name not in ds:
        return None
    da = ds[name]
    if idx:
        da = da.isel({next(d for d in da.dims if d not in ("chain", "draw")): int(idx[:-1])})
    return da


def run(models, designs, reps, out, chains, draws, tune, seed, start_rep=0):
    import nutpie
    import pymc as pm

    import hierbench.bayes as hbb
    from hierbench._base import counts as _counts
    from hierbench.bayes._crossed import _log_binom
    from hierbench.bayes._diagnostics import compute_diagnostics

    warnings.simplefilter("ignore")
    for design in designs:
        for model_name in models:
            data = template(model_name, design)
            model = getattr(hbb, f"build_{model_name}")(data)
            info = model.hierbench
            prior = pm.sample_prior_predictive(draws=reps, model=model, random_seed=seed)
            pri = prior["prior"].to_dataset()
            predictive = hbb.model_hook(info, "predictive")
            if predictive is not None:
                # a likelihood written as a weighted potential: simulate its cells
                # with the builder's own vectorised predictive, from the prior draws
                import xarray as xr

                pp = predictive(
                    xr.DataTree(children={"posterior": xr.DataTree(pri)}),
                    np.random.default_rng(seed + 2),
                )["posterior_predictive"].to_dataset()
            else:
                pp = prior["prior_predictive"].to_dataset()
            obs_name = next(iter(pp.data_vars))
            # The structure (centring) is decided from each replicate's own data,
            # as a user's fit would decide it: a replicate whose agents barely
            # differ gets the non-centred form. One compiled model per distinct
            # structure; the data are swapped in.
            compiled_by_key = {}
            if model_name == "bradley_terry":
                from hierbench.bayes._bradley_terry import _as_counts

                cnt = _as_counts(data)
            else:
                cnt = _counts(data)
            gen = np.random.default_rng(seed + 1)
            for r in range(reps):
                if r < start_rep:
                    # resuming an interrupted study: the same prior draws, and the
                    # same sampler seed for every replicate that does run
                    gen.integers(2**31 - 1)
                    continue
                y = pp[obs_name].isel(chain=0, draw=r).values
                if model_name == "bradley_terry":
                    yy = np.asarray(y).astype(np.int64)
                    if yy.ndim == 2:  # (pair, result): wins of a, ties, wins of b
                        upd = {"n_win_a": yy[:, 0], "n_tie": yy[:, 1], "n_win_b": yy[:, 2]}
                    else:
                        n_pair = (cnt["n_win_a"] + cnt["n_tie"] + cnt["n_win_b"]).values
                        upd = {"n_win_a": yy, "n_tie": 0 * yy, "n_win_b": n_pair - yy}
                    rep_model = hbb.build_bradley_terry(
                        cnt.assign({k: ("pair", v) for k, v in upd.items()})
                    )
                else:
                    grid0 = np.zeros(cnt["n_success"].shape, dtype=np.int64)
                    grid0[np.asarray(info["cell_index"][0]), np.asarray(info["cell_index"][1])] = y
                    rep_model = getattr(hbb, f"build_{model_name}")(
                        cnt.assign(n_success=(("agent", "task"), grid0))
                    )
                dec = rep_model.hierbench["structure"]["decisions"]
                key = json.dumps({k: v["choice"] for k, v in dec.items()}, sort_keys=True, default=str)
                if key not in compiled_by_key:
                    compiled_by_key[key] = (
                        rep_model,
                        nutpie.compile_pymc_model(rep_model, backend="numba"),
                    )
                model, compiled = compiled_by_key[key]
                info = model.hierbench
                shared = {getattr(v, "name", None) for v in compiled.shared_var_keys}
                up = {}
                if model_name == "bradley_terry":
                    up[info["observed_data_name"]] = y.astype(np.int64)
                else:
                    n_cell = np.asarray(model["cell_n_runs"].get_value())
                    up["cell_n_success"] = y.astype(np.int64)
                    grid = np.zeros_like(np.asarray(model["n_success"].get_value()))
                    ai = np.asarray(info["cell_index"][0])
                    ti = np.asarray(info["cell_index"][1])
                    grid[ai, ti] = y
                    up["n_success"] = grid
                    if "cell_log_binom" in shared:
                        up["cell_log_binom"] = _log_binom(y, n_cell)
                    if callable(info.get("data_updates")):
                        up.update(
                            info["data_updates"]({"cell_n": n_cell, "cell_y": y.astype(np.int64)})
                        )
                c = compiled.with_data(**{k: v for k, v in up.items() if k in shared})
                kw = {"target_accept": info.get("sampler_defaults", {}).get("target_accept", 0.8)}
                t0 = time.perf_counter()
                dt = nutpie.sample(
                    c,
                    draws=draws,
                    tune=tune,
                    chains=chains,
                    seed=int(gen.integers(2**31 - 1)),
                    save_warmup=False,
                    progress_bar=False,
                    cores=min(chains, os.cpu_count() or 1),
                    **kw,
                )
                wall = time.perf_counter() - t0
                keep = {k: v for k, v in dt.children.items() if not k.startswith("warmup")}
                import xarray as xr

                dt = xr.DataTree(children={k: v.copy() for k, v in keep.items()})
                diag = compute_diagnostics(dt, warn=False).attrs
                post = dt["posterior"].to_dataset()
                rec = {
                    "structure": key,
                    "model": model_name,
                    "design": design,
                    "rep": r,
                    "n_div": int(diag["diag_n_divergent"]),
                    "n_draws": chains * draws,
                    "converged": int(diag["diag_converged"]),
                    "max_r_hat": float(diag["diag_max_r_hat"]),
                    "wall": round(wall, 2),
                    "mean_steps": float(dt["sample_stats"]["n_steps"].mean()),
                    "compiles": len(compiled_by_key),
                    "ranks": {},
                    "in50": {},
                    "in90": {},
                }
                for spec in PARAMS[model_name]:
                    truth = _value(pri, spec)
                    draws_da = _value(post, spec)
                    if truth is None or draws_da is None:
                        continue
                    t = float(truth.isel(chain=0, draw=r).values)
                    x = np.asarray(draws_da.values, dtype=float).ravel()
                    thin = x[np.linspace(0, x.size - 1, L_RANK).round().astype(int)]
                    rec["ranks"][spec] = int((thin < t).sum())
                    lo50, hi50, lo90, hi90 = np.quantile(x, [0.25, 0.75, 0.05, 0.95])
                    rec["in50"][spec] = bool(lo50 <= t <= hi50)
                    rec["in90"][spec] = bool(lo90 <= t <= hi90)
                with open(out, "a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                print(
                    f"{model_name} {design} rep {r}: div {rec['n_div']} wall {wall:.1f}s "
                    f"steps {rec['mean_steps']:.0f} compiles {len(compiled_by_key)} "
                    f"load {os.getloadavg()[0]:.1f}",
                    flush=True,
                )


def template_mixed(model: str, design: str, seed: int = 0):
    """A leaderboard of the design: 2 scaffolds x 3 models, a task tier, a judge per run, grades 1-4,
    [0, 1] scores with exact 0s and 1s (outcomes irrelevant beyond the structure they imply)."""
    import xarray as xr

    d = MIXED_DESIGNS[design]
    rng = np.random.default_rng(seed)
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


def _mixed_updates(model, y: np.ndarray) -> dict:
    """The data a replicate's outcome ``y`` (in the likelihood's dims) replaces in a formula model."""
    from hierbench.bayes._ordinal import grade_log_coefficient
    from hierbench.bayes._registry import log_binom

    fam = model.hierbench["design"].family
    if fam == "ordinal":
        return {"grade_counts": y.astype(np.int64), "grade_log_coef": grade_log_coefficient(y)}
    if fam == "fractional":
        return {"score_obs": y.astype(float)}
    if "run_success" in model.named_vars:
        return {"run_success": y.astype(np.int64)}
    n = np.asarray(model["cell_n_runs"].get_value())
    return {"cell_n_success": y.astype(np.int64), "cell_log_binom": log_binom(y, n)}


def _record(model_name, design, r, dt, pri, wall):
    """One replicate's ranks, interval hits and diagnostics (the record ``run`` writes)."""
    from hierbench.bayes._diagnostics import compute_diagnostics

    diag = compute_diagnostics(dt, warn=False).attrs
    post = dt["posterior"].to_dataset()
    n = post.sizes["chain"] * post.sizes["draw"]
    rec = {"model": model_name, "design": design, "rep": r, "n_div": int(diag["diag_n_divergent"]), "n_draws": n,
           "converged": int(diag["diag_converged"]), "max_r_hat": float(diag["diag_max_r_hat"]),
           "wall": round(wall, 2), "ranks": {}, "in50": {}, "in90": {}}  # fmt: skip
    for spec in PARAMS[model_name]:
        truth, draws_da = _value(pri, spec), _value(post, spec)
        if truth is None or draws_da is None:
            continue
        t = float(truth.isel(chain=0, draw=r).values)
        x = np.asarray(draws_da.values, dtype=float).ravel()
        rec["ranks"][spec] = int((x[np.linspace(0, x.size - 1, L_RANK).round().astype(int)] < t).sum())
        lo50, hi50, lo90, hi90 = np.quantile(x, [0.25, 0.75, 0.05, 0.95])
        rec["in50"][spec], rec["in90"][spec] = bool(lo50 <= t <= hi50), bool(lo90 <= t <= hi90)
    return rec


def run_mixed(models, designs, reps, out, chains, draws, tune, seed, start_rep=0):
    """SBC of the formula models: the template's model is compiled once (its structure, the
    centring, fixed by the template: a parameterisation, not a different posterior) and each
    replicate's outcome, drawn by the builder's own predictive from a prior draw, swapped in."""
    import nutpie
    import pymc as pm
    import xarray as xr

    import hierbench.bayes as hbb

    warnings.simplefilter("ignore")
    for design in designs:
        for name in models:
            formula, family = MIXED_FORMULAS[name]
            model = hbb.build_mixed(template_mixed(name, design), formula, family=family)
            pri = pm.sample_prior_predictive(draws=reps, model=model, random_seed=seed)["prior"].to_dataset()
            if "thresholds" in pri:
                # forward sampling ignores the ordered transform: iid draws, unsorted. The prior the
                # logp states (iid, restricted to the ordered set) is the law of their order statistics
                for v in ("thresholds", "thresholds_seen"):
                    pri[v] = pri[v].copy(data=np.sort(pri[v].values, axis=-1))
            pp = hbb.model_hook(model.hierbench, "predictive")(
                xr.DataTree(children={"posterior": xr.DataTree(pri)}), np.random.default_rng(seed + 2)
            )["posterior_predictive"]["y"]
            compiled = nutpie.compile_pymc_model(model, backend="numba")
            gen = np.random.default_rng(seed + 1)
            for r in range(reps):
                sampler_seed = int(gen.integers(2**31 - 1))
                if r < start_rep:
                    continue
                c = compiled.with_data(**_mixed_updates(model, pp.isel(chain=0, draw=r).values))
                t0 = time.perf_counter()
                dt = nutpie.sample(c, draws=draws, tune=tune, chains=chains, seed=sampler_seed, progress_bar=False,
                                   cores=min(chains, os.cpu_count() or 1))  # fmt: skip
                wall = time.perf_counter() - t0
                dt = xr.DataTree(children={k: v.copy() for k, v in dt.children.items() if not k.startswith("warmup")})
                rec = _record(name, design, r, dt, pri, wall)
                with open(out, "a") as fh:
                    fh.write(json.dumps(rec) + "\n")
                print(f"{name} {design} rep {r}: div {rec['n_div']} wall {wall:.1f}s load {os.getloadavg()[0]:.1f}",
                      flush=True)  # fmt: skip


def wilson(k: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    p = k / n
    c = (p + z * z / (2 * n)) / (1 + z * z / n)
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return c - h, c + h


def summarise(path: str | list[str], bins: int | None = None) -> list[dict]:
    """Per (model, design, parameter): rank chi-square p, coverage with Wilson band; per (model, design): divergences."""
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
                    "div_share": div,
                    "not_converged": sum(1 - r["converged"] for r in rs),
                }
            )
    return out


def report(path: str | list[str]) -> None:
    rows = summarise(path)
    print(
        f"{'model':<14} {'design':<7} {'param':<17} {'reps':>4} {'chi2 p':>7} {'cov50':>6} "
        f"{'band50':>13} {'cov90':>6} {'band90':>13} {'ok':>3} {'div %':>6} {'unconv':>6}"
    )
    for r in rows:
        print(
            f"{r['model']:<14} {r['design']:<7} {r['param']:<17} {r['reps']:>4} {r['chi2_p']:>7.3f} "
            f"{r['cov50']:>6.3f} [{r['cov50_band'][0]:.3f},{r['cov50_band'][1]:.3f}] "
            f"{r['cov90']:>6.3f} [{r['cov90_band'][0]:.3f},{r['cov90_band'][1]:.3f}] "
            f"{'yes' if r['ok'] else 'NO':>3} {100 * r['div_share']:>6.3f} {r['not_converged']:>6}"
        )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("run")
    pr.add_argument("--reps", type=int, default=200)
    pr.add_argument("--out", required=True)
    pr.add_argument("--models", nargs="*", default=list(MODELS), help=f"or formula models: {list(MIXED_PARAMS)}")
    pr.add_argument("--designs", nargs="*", default=list(DESIGNS))
    pr.add_argument("--chains", type=int, default=2)
    pr.add_argument("--draws", type=int, default=400)
    pr.add_argument("--tune", type=int, default=400)
    pr.add_argument("--seed", type=int, default=2026)
    pr.add_argument(
        "--start-rep", type=int, default=0,
        help="skip the replicates before this one (resume a study; append to its --out)",
    )
    rp = sub.add_parser("report")
    rp.add_argument("path", nargs="+", help="one study, or several independent ones (pooled)")
    a = p.parse_args(argv)
    if a.cmd == "run" and set(a.models) <= set(MIXED_PARAMS):
        designs = [d for d in a.designs if d in MIXED_DESIGNS]
        run_mixed(a.models, designs, a.reps, a.out, a.chains, a.draws, a.tune, a.seed, a.start_rep)
    elif a.cmd == "run":
        run(a.models, a.designs, a.reps, a.out, a.chains, a.draws, a.tune, a.seed, a.start_rep)
    else:
        report(a.path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
