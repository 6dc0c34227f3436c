"""Benchmark the crossed model at 12 agents x 500 tasks x 10 runs.

Measures, per configuration (each in its own subprocess so that peak memory is
its own): compile time, sampling time, total wall time, ESS_bulk per second
of the key parameters, min ESS_bulk and ESS_tail over every free parameter
and the named group effects, max R-hat, divergences and peak RSS.

Configurations
--------------
marginal-nutpie   the hierbench default: agent x task effect integrated out
                  by Gauss-Hermite quadrature, auto (centred) agents and tasks
latent-nutpie     the agent x task effects kept as M x T non-centred latent
                  parameters (with hierbench's offset + zero-sum task
                  parameterisation and fixed agents; target_accept 0.8).
                  The issue's plain non-centred baseline (random agents,
                  iid task effects) measured ~220 s, min ESS_bulk 165,
                  R-hat 1.03 on this machine; the builder no longer
                  produces that exact parameterisation.
marginal-pymc     the default model with PyMC's own NUTS

Always 4 chains x 1000 draws after 1000 tuning steps. Usage::

    python benchmarks/bench_crossed.py [config ...] [--seed 1]

Prints one JSON line per configuration and a table of ratios against
latent-nutpie. numpyro is reported as unavailable unless jax is installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import subprocess
import sys
import time

CONFIGS = {
    "marginal-nutpie": {"agent_task": "marginal", "centred": "auto", "sampler": "nutpie"},
    "latent-nutpie": {"agent_task": "latent", "centred": (), "sampler": "nutpie"},
    "marginal-pymc": {"agent_task": "marginal", "centred": "auto", "sampler": "pymc"},
    "marginal-numpyro": {"agent_task": "marginal", "centred": "auto", "sampler": "numpyro"},
}
KEY = ["mu", "sd_agent", "sd_task", "sd_agent_task", "ability"]


def run_one(name: str, seed: int) -> dict:
    import warnings

    import arviz_stats as azs
    import numpy as np

    from hierbench.bayes import build_crossed, fit
    from hierbench.testing import simulate_eval

    cfg = CONFIGS[name]
    data, _ = simulate_eval(n_agents=12, n_tasks=500, n_runs=10, rng=seed)
    t0 = time.perf_counter()
    model = build_crossed(data, agent_task=cfg["agent_task"], centred=cfg["centred"])
    build_time = time.perf_counter() - t0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idata = fit(
            model,
            draws=1000,
            tune=1000,
            chains=4,
            rng=seed,
            sampler=cfg["sampler"],
            posterior_predictive=False,
            log_likelihood=False,
        )
    wall = time.perf_counter() - t0
    post = idata["posterior"].to_dataset()
    free = [v.name for v in model.free_RVs]
    names = [v for v in dict.fromkeys([*free, *KEY, "agent_effect", "task_effect"]) if v in post]
    if cfg["agent_task"] == "latent":
        names = [v for v in names if v != "z_agent_task"] + ["z_agent_task"]
    sub = post[names]
    ess_b = azs.ess(sub, method="bulk")
    ess_t = azs.ess(sub, method="tail")
    rhat = azs.rhat(sub)
    t_sample = float(idata.attrs["sampling_time"])

    def mn(ds):
        return float(min(np.nanmin(ds[v].values) for v in ds.data_vars))

    out = {
        "config": name,
        "build_s": round(build_time, 2),
        "compile_s": round(float(idata.attrs["compile_time"]), 2) if np.isfinite(idata.attrs["compile_time"]) else None,
        "sampling_s": round(t_sample, 2),
        "wall_s": round(wall, 2),
        "min_ess_bulk": round(mn(ess_b), 1),
        "min_ess_tail": round(mn(ess_t), 1),
        "max_r_hat": round(float(max(np.nanmax(rhat[v].values) for v in rhat.data_vars)), 4),
        "divergences": int(idata.attrs["diag_n_divergent"]),
        "ess_bulk_per_s": {v: round(float(np.nanmin(ess_b[v].values)) / t_sample, 2) for v in KEY if v in ess_b},
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("configs", nargs="*", default=["marginal-nutpie", "latent-nutpie", "marginal-pymc"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.seed)), flush=True)
        return
    results = {}
    for name in args.configs:
        if name == "marginal-numpyro" and importlib.util.find_spec("jax") is None:
            print(json.dumps({"config": name, "skipped": "jax/numpyro not installed"}), flush=True)
            continue
        proc = subprocess.run(
            [sys.executable, __file__, "--one", name, "--seed", str(args.seed)],
            capture_output=True,
            text=True,
        )
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode or not line:
            print(json.dumps({"config": name, "error": proc.stderr[-2000:]}), flush=True)
            continue
        results[name] = json.loads(line[-1])
        print(line[-1], flush=True)
    base = results.get("latent-nutpie")
    if base:
        print("\nratios against latent-nutpie (latent agent x task effects):")
        for name, r in results.items():
            print(
                f"  {name:18s} wall x{r['wall_s'] / base['wall_s']:.2f}  "
                f"sampling x{r['sampling_s'] / base['sampling_s']:.2f}  "
                f"min ESS_bulk x{r['min_ess_bulk'] / base['min_ess_bulk']:.2f}"
            )


if __name__ == "__main__":
    main()
