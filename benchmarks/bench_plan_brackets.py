"""Coverage of ``assisted_mean``'s interval for stratified and Poisson plans without a model.

Each agent's target is its full score over the tasks every agent ran (METR's 9 agents with at
least 70 tasks, 75 tasks, 8 runs per task read; SWE-bench bash-only, 25 x 500, one run). Per
replicate one plan is drawn (stratified: 4 strata, METR's by task family code, SWE-bench's by
task index; Poisson: sizes 1-5 cycling over the tasks, and "Poisson sd" sizes the task's success sd
over the agents, floored at 0.05, so that the weights follow the outcomes), every agent estimated
on it at 90%;
reported per design and size: coverage averaged over agents, the worst agent's, and how many
intervals were a point short of a census.

    python benchmarks/bench_plan_brackets.py --data metr --reps 200
    python benchmarks/bench_plan_brackets.py --data swe --reps 100

Measured 2026-12-07 (seed 7; "before" is the design-based t interval alone, commit 57f43ea; "after"
the intervals since: stratified plans guarded by the distribution-free bracket, Poisson plans the
Hajek mean with its Korn-Graubard interval at Kish's effective size, guarded by the bracket,
hierbench/design/_hajek.py):

==========  ============  ==============================  ==============================
data        plan          before: mean / worst (points)   after: mean / worst (points)
==========  ============  ==============================  ==============================
METR        strat. 20     0.893 / 0.660 (68)              0.931 / 0.905 (0)
METR        strat. 40     0.888 / 0.655 (26)              0.927 / 0.895 (0)
METR        Poiss. 20     0.808 / 0.590 (82)              0.998 / 0.990 (0)
METR        Poiss. sd 40  not run                         0.985 / 0.960 (0)
SWE-bench   strat. 20     0.894 / 0.840 (27)              0.910 / 0.840 (0)
SWE-bench   strat. 40     0.912 / 0.850 (5)               0.920 / 0.850 (0)
SWE-bench   Poiss. 20     0.862 / 0.720 (23)              0.971 / 0.920 (0)
SWE-bench   Poiss. sd 40  not run                         0.897 / 0.810 (0)
==========  ============  ==============================  ==============================

The worst agent on METR is gpt-3.5-turbo-instruct before (its drawn tasks all failed in a third of
the plans) and a mid-range agent after. Poisson plans of 20 tasks with the Horvitz-Thompson mean and
the bracket guard covered 0.854 / 0.800 (METR) and 0.885 / 0.800 (SWE-bench): that mean over a
random number of tasks is skewed where the t interval is not degenerate. Where the weights follow
the outcomes ("Poiss. sd", inclusion probabilities about tenfold apart) SWE-bench's best agents
stay near 0.81, as they did under the Horvitz-Thompson t (0.81-0.83 in the session's scratch
comparison): the interval says so in its ci_detail. METR's 8 runs per task make its rates less
variable than a proportion's, so the Korn-Graubard interval (a proportion's) is conservative there.
"""

from __future__ import annotations

import warnings

import numpy as np
from _harness import Bench
from _harness import parser

from hierbench.data import load_metr
from hierbench.data import load_swebench_bash_only
from hierbench.design import assisted_mean
from hierbench.design import plan_subset


def _log(which: str):
    """The scores (agent, task, run), the runs per task read, and the stratum labels."""
    if which == "metr":
        s = load_metr()["score"]
        has = s.notnull().any("run")
        s = s.sel(agent=(has.sum("task") >= 70).values)
        s = s.sel(task=s.notnull().any("run").all("agent").values)
        fam = load_metr()["cluster"].sel(task=s.task).values.astype(str)
        return s, 8, np.array([str(sum(map(ord, f)) % 4) for f in fam])
    s = load_swebench_bash_only()["score"]
    return s, 1, (np.arange(s.sizes["task"]) % 4).astype(str)


def study(which: str, reps: int, seed: int) -> dict:
    s, runs, strata = _log(which)
    tasks, T = s.task.values.astype(str), s.sizes["task"]
    truth = s.mean("run").mean("task").values
    out = {}
    m = s.mean("run").mean("agent").values
    sizes = {"poisson": 1 + np.arange(T) % 5, "poisson-sd": np.sqrt(np.clip(m * (1 - m), 0.0025, None))}
    for design, n in (("stratified", 20), ("stratified", 40), ("poisson", 20), ("poisson-sd", 40)):
        g = np.random.default_rng(seed)
        hit, points = np.zeros(truth.size), np.zeros(truth.size)
        for _ in range(reps):
            kw = {"strata": strata} if design == "stratified" else {"size": sizes[design]}
            plan = plan_subset(tasks, n, design=design.split("-")[0], rng=g, **kw)
            lo, hi = assisted_mean(plan, s, prob=0.9, n_runs=runs).ci.values.T
            hit += (lo - 1e-12 <= truth) & (truth <= hi + 1e-12)
            points += lo == hi
        out[f"{design} {n}"] = (hit / reps, points)
    return out


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--data", choices=("metr", "swe"), default="metr")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    with warnings.catch_warnings(), Bench(f"plan_brackets_{args.data}") as bench:
        warnings.simplefilter("ignore")
        for key, (cov, points) in study(args.data, args.reps, args.seed).items():
            bench.record(f"{key}: mean coverage", round(float(cov.mean()), 3))
            bench.record(f"{key}: worst coverage", round(float(cov.min()), 3))
            bench.record(f"{key}: point intervals", int(points.sum()))


if __name__ == "__main__":
    main()
