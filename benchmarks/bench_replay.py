"""Benchmark: replay the budgeted designs on 12 banks x 6 budgets x 1,000 randomisations.

Banks (fixed before looking at any result): tau-bench airline (gpt-4o, 50 x 4),
the 10 METR models (tasks with >= 4 recorded runs, the first 4), and the
synthetic LiveCodeBench-like cohort (M = 880, L = 5, 90% pure, mean pair
disagreement 0.05). Budgets: B = M + t with t in {0, ceil(sqrt M),
ceil(M/10), ceil(M/4), ceil(M/2), M} (every design spends exactly B).

Usage::

    python benchmarks/bench_replay.py [--n-rep 1000] [--bayes] [--seed 20261130] [--workers 2]

``--workers N`` runs each replay's budgets on a process pool of N workers
(``replay(executor=...)``); every budget has its own random stream spawned
from the seed, so the tables are identical to the serial run.

Prints the wall time of the replay (design-based methods; with ``--bayes``
also the beta-binomial posteriors, timed separately) and the J/U mean-width
ratio table.
"""

from __future__ import annotations

import argparse
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import xarray as xr

from hierbench.data import load_metr
from hierbench.data import load_tau_bench_airline
from hierbench.design import bank_from_eval
from hierbench.design import replay
from hierbench.design import simulate_stratified_bank

METR_RUNS = 4


def budgets_for(M: int) -> list[int]:
    ts = [0, math.ceil(math.sqrt(M)), math.ceil(M / 10), math.ceil(M / 4), math.ceil(M / 2), M]
    return [M + t for t in ts]


def load_banks(seed: int) -> dict[str, xr.DataArray]:
    banks: dict[str, xr.DataArray] = {}
    tau = load_tau_bench_airline()
    banks["tau-bench airline"] = bank_from_eval(tau, tau.agent.values[0], 4)
    metr = load_metr()
    for agent in metr.agent.values:
        banks[f"METR {agent}"] = bank_from_eval(metr, agent, METR_RUNS)
    banks["synthetic LCB-like"] = simulate_stratified_bank(
        880, 5, pure_fraction=0.9, mean_disagreement=0.05, rng=seed
    )
    return banks


def run(n_rep: int, seed: int, designs: list[str], workers: int = 1) -> tuple[dict[str, xr.Dataset], float]:
    banks = load_banks(seed)
    gen = np.random.default_rng(seed)
    out = {}
    pool = ProcessPoolExecutor(workers) if workers > 1 else None
    t0 = time.perf_counter()
    try:
        for name, bank in banks.items():
            out[name] = replay(bank, designs, budgets_for(bank.sizes["task"]), n_rep=n_rep, rng=gen, executor=pool)
    finally:
        if pool is not None:
            pool.shutdown()
    return out, time.perf_counter() - t0


def ratio_table(results: dict[str, xr.Dataset], design: str = "joint") -> str:
    head = "| bank | M | theta | pure | dbar | " + " | ".join(
        ["t=0", "t~sqrt M", "t~M/10", "t~M/4", "t~M/2", "t=M"]
    ) + " |"
    lines = [head, "|" + "---|" * 11]
    for name, ds in results.items():
        w = ds.mean_width
        r = (w.sel(design=design) / w.sel(design="uniform")).values
        a = ds.attrs
        lines.append(
            f"| {name} | {a['n_tasks']} | {a['theta']:.3f} | {a['pure_fraction']:.2f} | "
            f"{a['mean_pair_disagreement']:.3f} | " + " | ".join(f"{v:.2f}" for v in r) + " |"
        )
    return "\n".join(lines)


def min_coverage(results: dict[str, xr.Dataset]) -> dict[str, float]:
    cov = xr.concat([ds.coverage.min("budget") for ds in results.values()], dim="bank")
    return {str(k): round(float(v), 3) for k, v in cov.min("bank").to_pandas().items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n-rep", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=20261130)
    ap.add_argument("--bayes", action="store_true")
    ap.add_argument("--workers", type=int, default=1, help="process-pool workers (1: serial)")
    args = ap.parse_args()
    designs = ["uniform", "joint", "joint_split"]
    res, secs = run(args.n_rep, args.seed, designs, args.workers)
    print(f"design-based replay, 12 banks x 6 budgets x {args.n_rep} randomisations "
          f"({', '.join(designs)}; {args.workers} worker(s)): {secs:.1f} s")
    print()
    print("J/U mean width (mixture certificate)")
    print(ratio_table(res, "joint"))
    print()
    print("J/U mean width (split Bernstein certificate)")
    print(ratio_table(res, "joint_split"))
    print()
    print("minimum empirical coverage per method:", min_coverage(res))
    if args.bayes:
        res_b, secs_b = run(args.n_rep, args.seed, ["uniform", "joint", "uniform_bayes", "joint_bayes"], args.workers)
        print(f"\nwith the beta-binomial posteriors: {secs_b:.1f} s")
        print("minimum empirical coverage per method:", min_coverage(res_b))


if __name__ == "__main__":
    main()
