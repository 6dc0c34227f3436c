"""Benchmark the crossed model as a user runs it, with like-for-like baselines on the same data.

For each size (agents x tasks x runs; default 12x500x10, 13x880x10, 25x1000x8)
one simulated data set (``simulate_eval(..., rng=seed)``) is fitted by

old_default  ``fit(..., draws=1000, tune=1000, init="support_point")``: the
             default before issue 27 (4 x 1,000 draws after 1,000 tuning
             steps from PyMC's jittered start), the same call otherwise;
default      ``fit(build_crossed(data), rng=seed)``: the DEFAULT call, timed
             whole (build, compile, sampling, log-likelihood, posterior
             predictive, ``mean_observed``, diagnostics), with the time of
             each post-processing step measured inside that same call;
latent       the same call on ``build_crossed(data, agent_task="latent")``:
             the same priors, the agent x task effects kept as M x T latent
             parameters (the plain model; the like-for-like baseline);
advi         ``fit_approx(build_crossed(data), reference=<default fit>)``:
             mean-field ADVI and its error against the NUTS fit;
ml_cold      ``fit_crossed_ml(data)`` in a fresh process with an empty numba
             cache: its first call and its second (the likelihood is NumPy since
             issue 27: nothing to compile, numba is not loaded), and the import;
ml           ``hierbench.freq.fit_crossed_ml(data)`` (profile intervals),
             and its Laplace-at-the-mode posterior (estimate, inverse
             Hessian) scored against NUTS like ADVI.

Every configuration of one size runs in the same subprocess one after the
other, so their ratios come from one process on the same data and priors.
Columns: wall s, min ESS bulk/tail over the free parameters and the named
group effects, max R-hat, divergences, and for the default fit the time per
gradient evaluation (sampling time x parallel chains / leapfrog steps) and
per cell. Usage::

    python benchmarks/bench_crossed.py --configs old_default default   # issue 27: same run
    python benchmarks/bench_crossed.py [--sizes 12x500x10 25x1000x8] \
        [--configs old_default default latent advi ml] [--seed 1] [--out results.jsonl]

The load average (``os.getloadavg``) is printed with every line: the machine
may be shared, and only ratios from one run are comparable.

Measured 2026-12-04, a later session on a fresh, quiet machine of the same kind
(``results/bench_crossed_stop46.jsonl``), same run, load 1.1-2.6, seed 1, the code of stop 45:
default 16.4 / 26.2 / 64.3 s against old_default 37.5 / 73.1 / 154.2 s (ratios 0.44 / 0.36 /
0.42); 300 / 300 / 350 draws per chain, min ESS tail 478 / 434 / 586, every fit's checks passed,
0 divergences. Under the 20 / 40 / 90 s targets here; a gradient cost about half what it did
on the machine below, so walls from different sessions are not comparable.

Measured 2026-12-04 (``results/bench_crossed_stop45.jsonl``), the default before (77fb7c5, in a
worktree) and after the vectorised Newton loop and logs of the crossed kernel, alternating, seed 1,
load 1.4-3.3: 46.6 -> 30.9 s at 12x500x10, 64.5 -> 58.4 s and (the other order) 66.3 -> 55.7 s
at 13x880x10, 161.2 -> 132.0 s at 25x1000x8; min ESS tail >= 443, R-hat within its limit,
0 divergences in every run. The 20 / 40 / 90 s targets are 1.5 / 1.4 / 1.5 times away.

Measured 2026-12-03, on another machine of the same kind (AMD EPYC, znver3, AVX2 without
AVX-512; ``results/bench_crossed_stop41.jsonl``), same run, nothing else running (load 0.6-2.6),
seed 1, the sampler of stop 40: default 45.0 / 77.6 / 200.4 s against old_default 113.8 / 225.2 /
490.3 s (ratios 0.40 / 0.34 / 0.41); the same draws per chain at every size (300), min ESS tail
462 / 507 / 454, R-hat within its limit, 0 divergences. A gradient costs about twice what it cost
on the machine below (the crossed kernel alone: 1.6-1.7 ms at 12x500x10 in one thread), so the
20 / 40 / 90 s targets are 1.9-2.3 times away here while the ratios hold.

Measured 2026-12-03, later again (``results/bench_crossed_stop40.jsonl``), same run, nothing else
running (load 0.5-2.4), seed 1, after the Newton tolerance change (1e-10 -> 1e-6): default
21.4 / 42.7 / 101.5 s against old_default 73.4 / 119.2 / 288.7 s (ratios 0.29 / 0.36 / 0.35);
250 / 300 / 300 draws per chain, min ESS tail 461 / 471 / 409, R-hat 1.036 / 1.031 / 1.039
(within their limits), 0 divergences. Still over the 20 / 40 / 90 s targets by 7-13%.

Measured 2026-12-03, later (``results/bench_crossed_stop38.jsonl``), same run, nothing else
running, seed 1, the same code: default 25.8 / 47.4 / 104.1 s against old_default 71.4 / 144.1 /
288.7 s (ratios 0.36 / 0.33 / 0.36); the same draws, ESS and R-hat as below, on a machine slower
per gradient again (old_default 71.4 s against 59.3 s at stop 36).

Measured 2026-12-03 (``results/bench_crossed_stop37.jsonl``), same run, SBC paused, seed 1,
after cheaper checkpoints (Arrow snapshot, chains paused while checked, diagnostics reused):
default 24.3 / 41.3 / 95.1 s against old_default 68.7 / 120.3 / 238.6 s (ratios 0.35 / 0.34 /
0.40); the same draws as before; the machine ran ~15% slower per gradient than in the run
below (old_default 0.32 against 0.28 us per cell at 12x500x10). ml_cold: first call 1.73 s,
second 2.01 s at 12x500x10.

Measured 2026-12-02 (later; ``results/bench_crossed_stop36.jsonl``), same run, nothing else
running, seed 1, after the shape-free cached build (kernel loaded: compile 1.0 s) and the
tail-first checkpoint check: default 21.4 / 41.1 / 89.2 s against old_default 59.3 / 109.9 /
235.2 s at 12x500x10 / 13x880x10 / 25x1000x8; 300 draws per chain each, min ESS tail
467 / 437 / 472, R-hat 1.023 / 1.034 / 1.030 (within their limits), 0 divergences.

Measured 2026-12-02 on a fresh 2-core machine (new caches; the first size paid the cold
compile), nothing else running (load 0.9-2.8), seed 1, default config, code before the cached
nutpie build and the capped checkpoint jump: 65.9 s at 12x500x10 (compile 35.8 cold, sampling
23.0, 300 draws, ESS 1385 / 512, R-hat 1.027), 74.2 s at 13x880x10 (compile 16.2, sampling 52.9,
350 draws) and 170.2 s at 25x1000x8 (compile 12.1, sampling 141.3, 600 draws); 0 divergences.
This machine's CPU draws other bits than the one below (300 draws where it reached 600).

Measured 2026-12-02 (issue 27's same-run table; nothing else running, seed 1):
old_default 58.5 s (1000 draws) against default 35.6 s (600 draws) at 12x500x10;
default 75.5 s at 13x880x10 and 127.0 s at 25x1000x8; every fit 0 divergences,
ESS bulk >= 3133 and tail >= 1029, R-hat within its limit (models/crossed/card.md).

ml_cold measured 2026-12-02 on the shared 2-core machine at load average 7.7-8.1 (so
inflated; the ratio is from one process): first call 1.40 s against a second of 1.38 s
at 12x500x10 (import 2.6 s apart), 9.25 s against 8.19 s at 25x1000x8, numba not
loaded. The numba kernel this replaced took 4.7-6.3 s at the first call and 1.3-1.4 s at
the second (12x500x10, load 2-5, empty cache), of which 3-5 s compiling.

Measured 2026-12-01, seed 1, nothing else running, with the fixed 4 x 1000 draws of the
time (all sizes; kept for the latent and ADVI comparisons):

==========  =======  ======  ========  ======  ===========  ======  =====
size        config   wall s  sampling  mean_o  ESS b / t    R-hat   div
==========  =======  ======  ========  ======  ===========  ======  =====
12x500x10   default    92.8    59.2     12.0   5034 / 1910  1.0080    0
12x500x10   latent    166.0    91.8      0.2   1500 / 1951  1.0097    0
25x1000x8   default   265.2   220.4     11.4   5879 / 1962  1.0090    0
50x2000x8   default  1076.0   948.0     41.1   4287 / 2008  1.0099    0
==========  =======  ======  ========  ======  ===========  ======  =====

advi: 43.3 s (12x500x10) and 117.5 s (25x1000x8), sd_agent_task's mean 1.00
and 0.90 posterior sds off; ml: 1.1 / 3.6 / 12.6 s with profile intervals
(0.15 / 1.1 / 5.1 s Wald only), means within 0.03 (abilities) and 0.15
(variance components) posterior sds of NUTS. ADVI and the latent baseline
were not run at 50x2000x8. The earlier figures of this docstring
(2026-11-30, load 15-28) are superseded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings

SIZES = ["12x500x10", "13x880x10", "25x1000x8"]
CONFIGS = ["old_default", "default", "latent", "advi", "ml", "ml_cold"]
#: fit() arguments of each NUTS configuration: today's default, and the default before issue 27
FIT_ARGS = {
    "default": {},
    "old_default": {"draws": 1000, "tune": 1000, "init": "support_point"},
    "latent": {},
}
KEY = ["sd_task", "sd_agent_task", "ability"]


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _conv(idata, model) -> dict:
    import arviz_stats as azs
    import numpy as np

    post = idata["posterior"].to_dataset()
    free = [v.name for v in model.free_RVs]
    names = [v for v in dict.fromkeys([*free, *KEY, "agent_effect", "task_effect"]) if v in post]
    sub = post[names]
    ess_b, ess_t, rhat = azs.ess(sub, method="bulk"), azs.ess(sub, method="tail"), azs.rhat(sub)

    def mn(ds):
        return float(min(np.nanmin(ds[v].values) for v in ds.data_vars))

    return {
        "min_ess_bulk": round(mn(ess_b), 1),
        "min_ess_tail": round(mn(ess_t), 1),
        "max_r_hat": round(float(max(np.nanmax(rhat[v].values) for v in rhat.data_vars)), 4),
        "divergences": int(idata.attrs.get("diag_n_divergent", -1)),
    }


def _timed_fit(model, seed: int, **fit_args) -> tuple[object, dict]:
    """A ``fit`` call (the default unless ``fit_args``), with the stage times the fit records.

    Every configuration builds its model afresh: the process's compiled models
    are cleared first, so a later configuration is not spared the build.
    """
    from hierbench.bayes import clear_compiled
    from hierbench.bayes import fit

    clear_compiled()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = fit(model, rng=seed, **fit_args)
    wall = time.perf_counter() - t0
    parts = {k: round(v, 2) for k, v in json.loads(idata.attrs["fit_timings"]).items()}
    parts["fit_call_s"] = round(wall, 2)
    parts["draws_per_chain"] = int(idata["posterior"].sizes["draw"])
    parts["fit_notes"] = idata.attrs.get("fit_notes")
    return idata, parts


def _grad_cost(idata, n_cells: int, chains: int = 4) -> dict:
    import numpy as np

    steps = float(idata["sample_stats"]["n_steps"].sum()) if "n_steps" in idata["sample_stats"] else np.nan
    par = min(chains, os.cpu_count() or 1)
    t = float(idata.attrs["sampling_time"]) * par / steps  # post-warmup steps only: an upper bound
    return {
        "leapfrog_steps_kept": int(steps) if np.isfinite(steps) else None,
        "s_per_gradient": round(t, 6),
        "us_per_gradient_per_cell": round(1e6 * t / n_cells, 4),
    }


def _laplace_error(ml, idata) -> dict:
    """Error of the ML estimate +- SE (a Laplace-at-the-mode posterior) against the NUTS posterior."""
    import numpy as np

    post = idata["posterior"].to_dataset()
    out = {}
    ab = post["ability"]
    m, s = ab.mean(("chain", "draw")), ab.std(("chain", "draw"))
    out["ability_sd_ratio"] = round(float((ml.standard_error / s).mean()), 3)
    out["ability_mean_shift"] = round(float(np.abs((ml.estimate - m) / s).max()), 3)
    V = ml.vcov.values
    A = ml.estimate.size
    for j, name in enumerate(ml.sd.component.values):
        d = post[str(name)]
        se = float(ml.sd[j]) * float(np.sqrt(V[A + j, A + j]))  # delta method from the log scale
        out[f"{name}_sd_ratio"] = round(se / float(d.std()), 3)
        out[f"{name}_mean_shift"] = round(abs(float(ml.sd[j]) - float(d.mean())) / float(d.std()), 3)
        lo, hi = ml.sd_ci.values[j]
        q = d.quantile([0.025, 0.975]).values
        out[f"{name}_ml_profile_ci"] = [round(lo, 4), round(hi, 4)]
        out[f"{name}_nuts_eti"] = [round(float(q[0]), 4), round(float(q[1]), 4)]
    return out


def run_size(size: str, configs: list[str], seed: int, keep: str | None = None) -> list[dict]:
    """Every configuration of one size, one after the other in this process, on the same data."""
    import numpy as np

    from hierbench.bayes import approximation_error
    from hierbench.bayes import build_crossed
    from hierbench.bayes import fit_approx
    from hierbench.freq import fit_crossed_ml
    from hierbench.testing import simulate_eval

    M, T, R = (int(v) for v in size.split("x"))
    data, truth = simulate_eval(n_agents=M, n_tasks=T, n_runs=R, rng=seed)
    n_cells = M * T
    rows, ref, ml = [], None, None
    saved = os.path.join(keep, f"{size}_seed{seed}_nuts_posterior.nc") if keep else None
    if "default" not in configs and saved and os.path.exists(saved):
        import xarray as xr

        ref = xr.DataTree.from_dict({"posterior": xr.load_dataset(saved)})
        ref.attrs["hierbench_data_hash"] = build_crossed(data).hierbench["data_hash"]
    for cfg in configs:
        row = {"size": size, "config": cfg, "load_before": _load()}
        t0 = time.perf_counter()
        if cfg in FIT_ARGS:
            model = build_crossed(data, agent_task="latent") if cfg == "latent" else build_crossed(data)
            build = time.perf_counter() - t0
            idata, parts = _timed_fit(model, seed, **FIT_ARGS[cfg])
            row["wall_s"] = round(time.perf_counter() - t0, 2)
            row["build_s"] = round(build, 2)
            row.update(parts)
            row.update(_conv(idata, model))
            row.update(_grad_cost(idata, n_cells))
            if cfg == "default":
                ref = idata
                if keep:  # the NUTS posterior, for scoring approximations in a later run
                    ref["posterior"].to_dataset().to_netcdf(os.path.join(keep, f"{size}_seed{seed}_nuts_posterior.nc"))
        elif cfg == "advi":
            model = build_crossed(data)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ad = fit_approx(model, rng=seed, reference=ref) if ref is not None else fit_approx(model, rng=seed)
            row["wall_s"] = round(time.perf_counter() - t0, 2)
            if ref is not None:
                err = approximation_error(ad, ref, var_names=["sd_task", "sd_agent_task", "ability"])
                row["error_vs_nuts"] = {k: round(float(err[k]), 3) for k in err.data_vars}
        elif cfg == "ml_cold":
            row.update(ml_cold(size, seed))
            row["wall_s"] = round(time.perf_counter() - t0, 2)
        elif cfg == "ml":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ml = fit_crossed_ml(data)
            row["wall_s"] = round(time.perf_counter() - t0, 2)
            t1 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fit_crossed_ml(data, intervals="wald")
            row["wall_wald_only_s"] = round(time.perf_counter() - t1, 2)
            row["n_evaluations"] = ml.n_evaluations
            row["converged"] = bool(ml.converged)
            row["sd_hat"] = {str(k): round(float(v), 4) for k, v in zip(ml.sd.component.values, ml.sd.values, strict=True)}
            row["truth"] = {"sd_task": float(truth["sd_task"]), "sd_agent_task": float(truth["sd_agent_task"])}
            row["ability_rmse_vs_truth"] = round(
                float(np.sqrt(((ml.estimate.values - truth["agent_effect"].values - float(truth["mu"])) ** 2).mean())), 4
            )
            if ref is not None:
                row["laplace_error_vs_nuts"] = _laplace_error(ml, ref)
        row["load_after"] = _load()
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


_ML_COLD = """
import json, os, sys, time, warnings
warnings.simplefilter("ignore")
t_imp = time.perf_counter()
from hierbench.testing import simulate_eval
from hierbench.freq import fit_crossed_ml
t_imp = time.perf_counter() - t_imp
M, T, R = (int(v) for v in sys.argv[1].split("x"))
data, _ = simulate_eval(n_agents=M, n_tasks=T, n_runs=R, rng=int(sys.argv[2]))
load = os.getloadavg()[0]
t0 = time.perf_counter(); fit_crossed_ml(data); t1 = time.perf_counter(); fit_crossed_ml(data)
t2 = time.perf_counter()
print(json.dumps({"import_s": round(t_imp, 2), "first_call_s": round(t1 - t0, 2),
                  "second_call_s": round(t2 - t1, 2), "first_over_second": round((t1 - t0) / (t2 - t1), 2),
                  "numba_loaded": "numba" in sys.modules, "load_at_first_call": round(load, 2)}))
"""


def ml_cold(size: str, seed: int) -> dict:
    """``fit_crossed_ml``'s first call in a fresh process with an empty numba cache, then its second.

    The import time is reported apart (``import_s``); the ratio of the two calls is from
    the same process, so the load hits both alike.
    """
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "NUMBA_CACHE_DIR": tmp}
        out = subprocess.run([sys.executable, "-c", _ML_COLD, size, str(seed)], env=env,
                             capture_output=True, text=True, check=True)  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    """The same-run comparison of the NUTS configurations (wall, ESS, R-hat, divergences)."""
    head = f"{'size':<11} {'config':<12} {'wall s':>7} {'compile':>7} {'sample':>7} {'diag':>6} " \
        f"{'draws':>5} {'ESS bulk / tail':>16} {'R-hat':>7} {'div':>4}"  # fmt: skip
    lines = [head]
    for r in rows:
        if "wall_s" not in r or "min_ess_bulk" not in r:
            continue
        lines.append(
            f"{r['size']:<11} {r['config']:<12} {r['wall_s']:>7.1f} {r.get('compile_s', 0):>7.1f} "
            f"{r.get('sampling_s', 0):>7.1f} {r.get('diagnostics_s', 0):>6.1f} {r.get('draws_per_chain', 0):>5} "
            f"{r['min_ess_bulk']:>7.0f} / {r['min_ess_tail']:<6.0f} {r['max_r_hat']:>7.4f} {r['divergences']:>4}"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="*", default=SIZES)
    ap.add_argument("--configs", nargs="*", default=CONFIGS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None)
    ap.add_argument("--keep", default=None, help="directory to save / read the NUTS posterior")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        run_size(args.one, args.configs, args.seed, args.keep)
        return
    rows = []
    for size in args.sizes:
        proc = subprocess.run(
            [sys.executable, __file__, "--one", size, "--seed", str(args.seed), "--configs", *args.configs]
            + (["--keep", args.keep] if args.keep else []),
            capture_output=True,
            text=True,
        )
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        for ln in lines:
            print(ln, flush=True)
            rows.append(json.loads(ln))
            if args.out:
                with open(args.out, "a") as fh:
                    fh.write(ln + "\n")
        if proc.returncode:
            print(json.dumps({"size": size, "error": proc.stderr[-3000:]}), flush=True)
    print(table(rows))


if __name__ == "__main__":
    main()
