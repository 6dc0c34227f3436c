"""Coverage studies behind three slow tests, at the size the tests used to run (or larger).

The test suite runs a few replicates of each study through the functions below
(the same seeds, so its replicates are the first ones of this script's); the
full studies run here, where their cost does not weigh on every CI run.

1. ``crossed``: recovery by the crossed model (``build_crossed``, 300 + 300
   draws, 2 chains) of the simulated truth on a 4 x 30 x 5 design (sd_agent
   0.8, sd_task 1.2, sd_agent_task 0.6): the share of 90% intervals holding
   each agent's ability, each task effect and sd_agent_task.
2. ``realised``: the 90% realised interval (``crossed_pass_k(realised=True)``)
   and the conditional-expectation interval of each agent's mean over the
   observed tasks, against the simulated ``mean_t p_mt``; 8 agents x 20 tasks
   x 3 runs with a large cell spread (sd_agent_task 2), where the two differ.
3. ``irt``: the 90% interval of ``freq.irt_score``'s realised full score (a
   known 60-item 2PL bank, 15 items answered) for agents drawn from the
   prior N(0, 1).

Each coverage is printed with its 95% Wilson band (scipy's). Intervals of one
replicate share its task effects, so bands for the pooled agents and tasks
are narrower than the correlation allows; the tests widen theirs (see each).

Run: ``python benchmarks/bench_coverage_studies.py [--reps N] [parts]`` (default
20 replicates for ``crossed``, 30 for ``realised``, 10 x 20 = 200 agents for
``irt``; ``--reps`` scales all three: crossed N, realised 1.5 N, irt 10 N).
The smallest run: ``--reps 2``.

Measured 2026-12-02, the default size, seeds as in the tests (load 10-12 on 2 shared cores:
wall inflated about 4x; user CPU 26 s, 31 s and 6 s with the imports), coverage [95% Wilson]:

========  ==========================================  ======================  =====
part      interval                                    coverage                n
========  ==========================================  ======================  =====
crossed   ability                                     0.950 [0.878, 0.980]    80
crossed   task effect                                 0.902 [0.875, 0.923]    600
crossed   sd_agent_task                               0.900 [0.699, 0.972]    20
realised  realised task mean                          0.900 [0.856, 0.932]    240
realised  conditional expectation (undercovers)       0.633 [0.571, 0.692]    240
irt       realised full score                         0.950 [0.910, 0.973]    200
========  ==========================================  ======================  =====

The tests run 10 (crossed) and 16 (realised) of these replicates and all 200 IRT agents.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import xarray as xr
from _harness import Bench
from _harness import parser
from scipy import stats
from scipy.special import expit

from hierbench.bayes import ConvergenceWarning
from hierbench.bayes import build_crossed
from hierbench.bayes import fit_replicates
from hierbench.data import to_counts
from hierbench.freq import IRTBank
from hierbench.freq import irt_score
from hierbench.metrics import crossed_pass_k
from hierbench.testing import simulate_eval

PARTS = ("crossed", "realised", "irt")


def crossed_recovery(n_rep: int) -> dict[str, np.ndarray]:
    """Hits of the 90% intervals of the abilities, task effects and sd_agent_task (part 1)."""
    sims = [
        simulate_eval(n_agents=4, n_tasks=30, n_runs=5, sd_agent=0.8, sd_task=1.2, sd_agent_task=0.6, rng=100 + s)
        for s in range(n_rep)
    ]
    model = build_crossed(sims[0][0])
    fits = fit_replicates(model, [d for d, _ in sims], draws=300, tune=300, chains=2, rng=7, progress=False)
    hits: dict[str, list] = {"ability": [], "task_effect": [], "sd_agent_task": []}
    for f, (_, truth) in zip(fits, sims, strict=True):
        post = f["posterior"].to_dataset()
        for name, t in (("ability", (truth.mu + truth.agent_effect).values),
                        ("task_effect", truth.task_effect.values), ("sd_agent_task", np.array([0.6]))):  # fmt: skip
            lo, hi = np.quantile(post[name].values, [0.05, 0.95], axis=(0, 1))
            hits[name].extend(np.atleast_1d((lo < t) & (t < hi)))
    return {k: np.asarray(v) for k, v in hits.items()}


def realised_coverage(n_rep: int) -> dict[str, np.ndarray]:
    """Hits of the realised and the conditional-expectation 90% intervals (part 2)."""
    sims = [
        simulate_eval(n_agents=8, n_tasks=20, n_runs=3, sd_agent=0.8, sd_task=1.2, sd_agent_task=2.0, rng=500 + s)
        for s in range(n_rep)
    ]
    model = build_crossed(sims[0][0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fits = fit_replicates(model, [d for d, _ in sims], draws=300, tune=300, chains=2, rng=11, progress=False)
    spec = json.dumps({"options": model.hierbench["options"]})
    gen = np.random.default_rng(12)
    hits: dict[str, list] = {"realised": [], "conditional": []}
    for f, (d, truth) in zip(fits, sims, strict=True):
        # fit_replicates keeps only the posterior: add the counts and the options it needs
        f = f.copy()
        f["constant_data"] = xr.DataTree(to_counts(d)[["n_runs", "n_success"]])
        f.attrs["hierbench_spec"] = spec
        target = truth["p"].mean("task").values  # every cell was run (no missing cells)
        for key, realised in (("realised", True), ("conditional", False)):
            ci = crossed_pass_k(f, k=1, prob=0.9, realised=realised, rng=gen)["ci"].sel(k=1).values
            hits[key].extend((ci[:, 0] < target) & (target < ci[:, 1]))
    return {k: np.asarray(v) for k, v in hits.items()}


def irt_score_coverage(n_agents: int) -> np.ndarray:
    """Hits of the 90% realised full-score interval of ``irt_score`` (part 3)."""
    g = np.random.default_rng(11)
    n_items = 60
    a = np.exp(g.normal(0.3, 0.3, n_items))
    d = g.normal(0, 2, n_items)
    tasks = {"task": [f"t{j}" for j in range(n_items)]}
    bank = IRTBank(xr.DataArray(np.tile(a, (100, 1)), dims=("sample", "task"), coords=tasks),
                   xr.DataArray(np.tile(d, (100, 1)), dims=("sample", "task"), coords=tasks))  # fmt: skip
    hits = np.zeros(n_agents, bool)
    for i in range(n_agents):
        th = g.normal()
        y = (g.random(n_items) < expit(a * th + d)).astype(float)
        idx = g.choice(n_items, 15, replace=False)
        resp = xr.DataArray(y[idx, None], dims=("task", "run"), coords={"task": [f"t{j}" for j in idx]})
        lo, hi = irt_score(bank, resp, prob=0.9, rng=g).ci.values
        hits[i] = lo <= y.mean() <= hi
    return hits


def _line(bench: Bench, label: str, hits: np.ndarray, target: float) -> None:
    """Print and record one coverage with its 95% Wilson band (scipy's)."""
    n, h = hits.size, int(hits.sum())
    band = stats.binomtest(h, n).proportion_ci(0.95, method="wilson")
    print(f"  {label:<36} coverage {h / n:.3f} of {n}  [{band.low:.3f}, {band.high:.3f}]  target {target}")
    bench.record(label, {"coverage": h / n, "n": n, "wilson95": [band.low, band.high], "target": target},
                 show=False)  # fmt: skip


def main() -> None:
    """Run the parts asked for."""
    ap = parser(__doc__)
    ap.add_argument("--reps", type=int, default=20, help="crossed replicates (realised 1.5x, irt 10x)")
    ap.add_argument("parts", nargs="?", default="all", help="comma-separated parts, or all")
    args = ap.parse_args()
    parts = PARTS if args.parts == "all" else tuple(args.parts.split(","))
    if set(parts) - set(PARTS):
        ap.error(f"unknown parts {sorted(set(parts) - set(PARTS))}; choose from {list(PARTS)} or all")
    with Bench("coverage_studies") as bench:
        if "crossed" in parts:
            bench.time("crossed", lambda: crossed_recovery(args.reps), repeats=1, warmup=0)
            for k, v in bench.last[""].items():
                _line(bench, f"crossed {k}", v, 0.9)
        if "realised" in parts:
            bench.time("realised", lambda: realised_coverage(max(2, 3 * args.reps // 2)), repeats=1, warmup=0)
            for k, v in bench.last[""].items():
                _line(bench, f"realised task mean, {k}", v, 0.9)
        if "irt" in parts:
            bench.time("irt", lambda: irt_score_coverage(10 * args.reps), repeats=1, warmup=0)
            _line(bench, "irt realised full score", bench.last[""], 0.9)


if __name__ == "__main__":
    main()
