"""Confidence sequences with and without replacement over a finite benchmark's tasks in random orders.

Width: SWE-bench bash-only (24 agents, the flagged one left out), 5 random orders, 90%, the mean
width of each sequence at 50 / 100 / 250 / 375 / 450 of the 500 tasks, and their ratio. Coverage:
a grouped 200-task benchmark (8 groups of 25 tasks, success rising group by group; 4 agents),
150 random orders: the share of paths whose running set ever excludes the benchmark mean before
the census.

    python benchmarks/bench_confseq_wor.py

Measured 2026-12-07: width ratio (without / with replacement) 0.97 / 0.93 / 0.83 / 0.69 / 0.50;
path misses 4.0% without replacement, 2.8% with (nominal 10%).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import xarray as xr
from _harness import Bench
from _harness import parser

from hierbench.data import load_swebench_bash_only
from hierbench.freq import confidence_sequence

STEPS = (49, 99, 249, 374, 449)


def widths(n_orders: int) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_swebench_bash_only()
    x = ds["score"].mean("run").drop_sel(agent=list(json.loads(ds.attrs["flagged_agents"])))
    out = {}
    for pop in (None, "infinite"):
        w = []
        for seed in range(n_orders):
            ci = confidence_sequence(x, shuffle=True, rng=seed, prob=0.9, n_population=pop).ci
            w.append([float((ci.isel(task=t).sel(ci_bound="upper") - ci.isel(task=t).sel(ci_bound="lower")).mean())
                      for t in STEPS])
        out[pop] = np.nanmean(w, 0)
    return out


def misses(n_orders: int) -> dict:
    g = np.random.default_rng(2059)
    rates = np.repeat(np.linspace(0.1, 0.95, 8), 25)
    bench = xr.DataArray(g.random((4, 200)) < rates, dims=("agent", "task")).astype(float)
    truth = bench.mean("task").values[:, None]
    out = {}
    for pop in (200, "infinite"):
        miss = []
        for seed in range(n_orders):
            b = confidence_sequence(bench, shuffle=True, rng=seed, breaks=100, prob=0.9, n_population=pop).ci.values
            lo, hi = b[..., :-1, 0], b[..., :-1, 1]
            miss.append(((lo > truth + 1e-12) | (hi < truth - 1e-12) | np.isnan(lo)).any(-1))
        out[pop] = float(np.mean(miss))
    return out


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--orders", type=int, default=5)
    ap.add_argument("--paths", type=int, default=150)
    args = ap.parse_args()
    with warnings.catch_warnings(), Bench("confseq_wor") as bench:
        warnings.simplefilter("ignore")
        w = widths(args.orders)
        bench.record("width ratio at " + "/".join(str(t + 1) for t in STEPS),
                     " / ".join(f"{r:.2f}" for r in w[None] / w["infinite"]))
        m = misses(args.paths)
        bench.record("path misses without replacement", round(m[200], 3))
        bench.record("path misses with replacement", round(m["infinite"], 3))


if __name__ == "__main__":
    main()
