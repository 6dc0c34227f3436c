"""``optimal_allocation`` on METR tasks it did not see: its runs per task against fixed choices.

For each pair of METR agents with at least 50 tasks of 8 or more binarised runs each (7 agents, 21
pairs), the tasks both ran 8+ times are split at random into halves. The first half gives the
variance components (``variance_components``, design ``run:(agent*task)``, REML); from them the
D-study predicts the variance of a task's paired difference with ``R`` runs per agent,
``P_R = 2 s_mt + 2 s_e / R``, and ``optimal_allocation`` picks ``R`` for a cost ratio
``c_task / c_run``. The second half measures that variance: ``V_R``, the variance across its tasks
of the difference of ``R``-run means, averaged over 200 draws of the runs. A design's loss is its
measured variance per unit budget, ``V_R (c_task + R c_run)``, over the best of ``R = 1..8``
(1 = the best there is; ``R`` above 8 is read at 8, the most the log holds).

Measured 2026-12-06 (10 splits x 21 pairs = 210; seed 500 + split):

- ``P_R / V_R``: median 0.92, 0.95, 0.98, 1.00 at R = 1, 2, 3, 4 and 0.99-1.00 beyond; the log
  of the ratio has sd 0.28 (R = 1) to 0.51 (R = 8) over pairs and splits: a half of 37 tasks
  predicts the other's variance to within about a third either way, without bias.
- loss, mean (90th percentile) over the 210:

====================  =============  =============  =============  =============
c_task / c_run        0.5            2              8              32
====================  =============  =============  =============  =============
optimal_allocation    1.034 (1.109)  1.055 (1.130)  1.048 (1.112)  1.012 (1.028)
R = 1                 1.022 (1.062)  1.212 (1.449)  1.736 (2.322)  2.370 (3.391)
R = 3                 1.262 (1.490)  1.048 (1.100)  1.080 (1.208)  1.267 (1.522)
R = 8                 2.215 (3.011)  1.491 (1.805)  1.098 (1.204)  1.003 (1.012)
====================  =============  =============  =============  =============

The components of one half choose a design within about 5% of the other half's best at every cost
ratio; each fixed choice is near best at one ratio and up to 2.4 times worse at another. Where runs
cost more than tasks (0.5) one run per task did as well (1.022 against 1.034: the allocation chose
2 or 3 runs in 17 of the 165 cases where 1 was best); at 32 the allocation asked for more than 8 runs in
74 cases, read at 8.

Usage::

    python benchmarks/bench_allocation_heldout.py --splits 10
"""

from __future__ import annotations

import argparse
import itertools
import json
import warnings

import numpy as np

RMAX, NSUB = 8, 200
COSTS = (0.5, 2.0, 8.0, 32.0)
FIXED = (1, 3, 8)


def measured(sa: np.ndarray, sb: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """``V_R``, R = 1..RMAX: the across-task variance of the R-run paired difference, over NSUB draws of runs."""
    v = np.zeros(RMAX)
    T = sa.shape[0]
    for _ in range(NSUB):
        ya, yb = (np.take_along_axis(x, np.array([gen.permutation(np.flatnonzero(np.isfinite(x[t])))[:RMAX]
                                                   for t in range(T)]), 1) for x in (sa, sb))  # fmt: skip
        for r in range(1, RMAX + 1):
            v[r - 1] += (ya[:, :r].mean(1) - yb[:, :r].mean(1)).var(ddof=1)
    return v / NSUB


def one_pair(m, a: int, b: int, tasks: np.ndarray, gen: np.random.Generator) -> dict:
    """Components from one half of the pair's tasks, the other half's measured variances, the losses."""
    from hierbench.freq import optimal_allocation
    from hierbench.freq import variance_components

    perm = gen.permutation(tasks)
    h1, h2 = np.sort(perm[: len(perm) // 2]), np.sort(perm[len(perm) // 2:])
    sub = m[["score"]].isel(agent=[a, b], task=h1)
    sub = sub.drop_vars([c for c in sub.coords if c not in ("agent", "task", "run")])
    est = variance_components(sub).estimate.to_series()
    smt, se = float(est["agent:task"]), float(est["residual"])
    s = m["score"].values
    v = measured(s[a, h2], s[b, h2], gen)
    row = {"a": str(m.agent.values[a]), "b": str(m.agent.values[b]), "s_mt": smt, "s_e": se,
           "P": [2 * smt + 2 * se / r for r in range(1, RMAX + 1)], "V": v.tolist()}  # fmt: skip
    for c in COSTS:
        per_budget = v * (c + np.arange(1, RMAX + 1))
        r = int(optimal_allocation(1e6, cost_task=c, cost_run=1.0, sigma2_interaction=max(smt, 1e-9),
                                   sigma2_residual=se)["n_runs"])  # fmt: skip
        row[f"cost {c:g}"] = {"r": r, "optimal_allocation": float(per_budget[min(r, RMAX) - 1] / per_budget.min()),
                              **{f"R = {k}": float(per_budget[k - 1] / per_budget.min()) for k in FIXED}}  # fmt: skip
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", type=int, default=10)
    ap.add_argument("--seed", type=int, default=500)
    args = ap.parse_args()
    from hierbench.data import load_metr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_metr()
        n = np.isfinite(m["score"].values).sum(2)
        agents = [i for i in range(n.shape[0]) if (n[i] >= RMAX).sum() >= 50]
        rows = []
        for split in range(args.splits):
            gen = np.random.default_rng(args.seed + split)
            for a, b in itertools.combinations(agents, 2):
                rows.append(one_pair(m, a, b, np.flatnonzero((n[a] >= RMAX) & (n[b] >= RMAX)), gen))
                print(json.dumps(rows[-1]), flush=True)
    ratio = np.array([r["P"] for r in rows]) / np.array([r["V"] for r in rows])
    print("P_R / V_R median by R:", np.round(np.median(ratio, 0), 3), "sd of log:", np.round(np.log(ratio).std(0), 3))
    for c in COSTS:
        for how in ("optimal_allocation", *(f"R = {k}" for k in FIXED)):
            loss = np.array([r[f"cost {c:g}"][how] for r in rows])
            print(f"cost {c:g} {how}: mean {loss.mean():.3f} (90% {np.quantile(loss, 0.9):.3f})")


if __name__ == "__main__":
    main()
