"""Coverage of ``compare_agents``' per-pair 95% interval: the paired t (default) against the task bootstrap.

Per data set, the share of the pairs whose interval holds the true difference; reported as the
mean and its standard error over data sets, for the default ``ci`` (the paired t over tasks, or
the CR2 t over clusters), the percentile and BCa bootstrap ``ci`` (``method=``), and the default
over the pairs whose interval has width above 0, with the share of zero-width pairs.

Settings (``--setting``):

- ``logit``: 12 agents, 3 runs, abilities N(0, 1) on the logit scale fixed over data sets, task
  effects N(0, 1) drawn per data set; truth: the difference of the population means (quadrature).
- ``swe``: SWE-bench bash-only's 25 agents x 500 tasks (binary, one run); ``--tasks`` of them drawn
  with replacement per data set; truth: the difference over the full 500.
- ``cluster``: ``hierbench.testing.simulate_eval`` with 8 agents, one binary run, ``tasks // 5``
  clusters (sd_cluster 1, sd_agent_cluster 0.5, sd_task 1, sd_agent_task 0.7); truth: population
  difference (quadrature over the summed logit sd).

    python benchmarks/bench_pair_interval.py --setting logit --tasks 10 --reps 300
    python benchmarks/bench_pair_interval.py --setting swe --tasks 6 --reps 200

Measured 2026-12-07 (seed 7; 999 resamples; "percentile" was the default ``ci`` before):

=======  =====  ====  ==============  ==============  ===============  ==========  =========
setting  tasks  reps  percentile      BCa             t (default)      t, width>0  zero-wide
=======  =====  ====  ==============  ==============  ===============  ==========  =========
logit    6      300   0.844 +- .005   0.853 +- .005   0.948 +- .003                0.002
logit    10     300   0.898 +- .004   0.895 +- .004   0.950 +- .003                0
logit    30     200   0.939 +- .004   0.939 +- .004   0.954 +- .004                0
logit    100    100   0.939 +- .006   0.938 +- .006   0.943 +- .006                0
swe      6      200   0.681 +- .007   0.699 +- .007   0.807 +- .007   0.987        0.184
swe      10     200   0.820 +- .005   0.817 +- .005   0.902 +- .004   0.966        0.068
swe      30     200   0.927 +- .003   0.922 +- .003   0.950 +- .002   0.952        0.002
swe      100    100   0.949 +- .004   0.947 +- .004   0.954 +- .004   0.954        0
cluster  30     100   0.855 +- .011                   0.950 +- .006   0.951        0.001
cluster  60     100   0.911 +- .009                   0.956 +- .006   0.956        0
=======  =====  ====  ==============  ==============  ===============  ==========  =========

(cluster rows: the percentile column is the cluster bootstrap's ``ci_bootstrap``; with clusters
``ci`` is the CR2 t whatever ``method`` says, as before.) On binary SWE-bench draws of 6 or 10
tasks the t's misses are the pairs that agree on every task drawn: their interval has zero width
(warned by ``ZeroWidthIntervalWarning``); the other pairs' t held 0.99 and 0.97.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import xarray as xr

from hierbench import freq
from hierbench.data import load_swebench_bash_only
from hierbench.testing import simulate_eval

_Z, _W = np.polynomial.hermite_e.hermegauss(80)
_W = _W / _W.sum()


def _pop_mean(eta: float, sd: float) -> float:
    """E[inv_logit(eta + sd Z)], Z standard normal (Gauss-Hermite, 80 nodes)."""
    return float((_W / (1 + np.exp(-(eta + sd * _Z)))).sum())


def _maker(setting: str, T: int, rng: np.random.Generator):
    """A function of no argument returning one data set and every agent's true mean."""
    if setting == "logit":
        ab = rng.normal(0, 1, 12)
        pop = np.array([_pop_mean(a, 1.0) for a in ab])

        def make():
            pr = 1 / (1 + np.exp(-(ab[:, None] + rng.normal(0, 1, T)[None, :])))
            y = (rng.random((12, T, 3)) < pr[:, :, None]).astype(float)
            coords = {"agent": [f"a{m:02d}" for m in range(12)], "task": [f"t{t}" for t in range(T)], "run": range(3)}
            return xr.Dataset({"score": (("agent", "task", "run"), y)}, coords=coords), pop
        return make
    if setting == "swe":
        full = load_swebench_bash_only()
        Y, names = full.score.values[:, :, 0], [str(a) for a in full.agent.values]

        def make():
            y = Y[:, rng.integers(0, Y.shape[1], T)]
            coords = {"agent": names, "task": [f"t{t}" for t in range(T)], "run": [0]}
            return xr.Dataset({"score": (("agent", "task", "run"), y[:, :, None])}, coords=coords), Y.mean(1)
        return make

    def make():
        ds, tr = simulate_eval(n_agents=8, n_tasks=T, n_runs=1, sd_agent=1.0, sd_task=1.0, sd_agent_task=0.7,
                               n_clusters=max(2, T // 5), sd_cluster=1.0, sd_agent_cluster=0.5, rng=rng)  # fmt: skip
        sd = np.sqrt(1 + 0.7**2 + 1 + 0.5**2)
        return ds, np.array([_pop_mean(float(tr.mu) + float(a), sd) for a in tr.agent_effect.values])
    return make


def _covered(frame, truth_of) -> np.ndarray:
    """Per pair of ``frame`` (a to_frame()), whether its interval holds the true difference."""
    tru = np.array([truth_of[a] - truth_of[o] for a, o in zip(frame.agent, frame.opponent, strict=True)])
    return (frame.lower.values <= tru + 1e-12) & (tru - 1e-12 <= frame.upper.values)


def study(setting: str, T: int, reps: int, seed: int) -> dict[str, tuple[float, float]]:
    """Mean and standard error over data sets of each interval's share of pairs covered."""
    rng = np.random.default_rng(seed)
    make = _maker(setting, T, rng)
    rows: dict[str, list[float]] = {k: [] for k in ("percentile", "bca", "t (default)", "t, width>0", "zero-wide")}
    for i in range(reps):
        ds, pop = make()
        truth_of = dict(zip([str(a) for a in ds.agent.values], pop, strict=True))
        fits = {m: freq.compare_agents(ds, rng=i, n_resamples=999, **kw).to_frame()
                for m, kw in (("t (default)", {}), ("percentile", {"method": "percentile"}), ("bca", {"method": "bca"}))}  # fmt: skip
        for m, f in fits.items():
            rows[m].append(float(_covered(f, truth_of).mean()))
        d = fits["t (default)"]
        wide = (d.upper - d.lower).values > 1e-12
        rows["t, width>0"].append(float(_covered(d, truth_of)[wide].mean()) if wide.any() else np.nan)
        rows["zero-wide"].append(float(1 - wide.mean()))
    return {k: (float(np.nanmean(v)), float(np.nanstd(v, ddof=1) / np.sqrt(len(v)))) for k, v in rows.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--setting", choices=["logit", "swe", "cluster"], default="logit")
    ap.add_argument("--tasks", type=int, default=10)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    t0 = time.time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = study(a.setting, a.tasks, a.reps, a.seed)
    print(f"{a.setting}, {a.tasks} tasks, {a.reps} data sets, seed {a.seed} ({time.time() - t0:.0f} s)")
    for k, (m, se) in res.items():
        print(f"  {k:12s} {m:.3f} +- {se:.3f}")


if __name__ == "__main__":
    main()
