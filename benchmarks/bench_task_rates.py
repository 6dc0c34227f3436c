"""The Bayesian per-task rates against the raw ones, on runs the fit did not see (METR, tau-bench).

:func:`hierbench.bayes.task_posteriors` shrinks each (agent, task) rate towards its agent's
beta-binomial mean. Does that predict an agent's next runs on a task better than the plain share of
its runs that passed? Each replicate splits every cell's recorded runs at random: ``k`` runs are
seen (cells with fewer than ``k + 2`` runs are left out whole, as are agents left with none), the rest
are held out. The beta-binomial is fitted at its defaults to the seen runs, and four rates are scored
on the held-out runs:

bayes    the posterior mean of ``task_posteriors``
raw      the seen runs' share of successes, ``c / k``
laplace  ``(c + 1) / (k + 2)``: the raw share under a uniform prior of its own, no pooling
pooled   the agent's share over all its seen runs (every task alike)

Scores per held-out run: the Brier score and the log loss (rates clipped to [0.001, 0.999], or a raw
0 or 1 would score infinitely). Also the share of cells whose held-out success count lies inside the
central 90% posterior predictive interval (the beta-binomial mixture over draws; discrete, so at
least 90% is the honest reading), beside the plug-in binomial interval at the raw rate.

Measured 2026-12-06 (20 splits each; means over splits; for the differences, in brackets their sd
over splits and how many splits the Bayesian rate scored lower in; splits share the data, so the sd
is the split's, not a standard error of the method):

=========  ===  =====  ======  ======  =======  ======  =======================  =======================  =============
data       k    cells  Brier   Brier   Brier    Brier   bayes - raw              bayes - laplace          90% predictive
                       bayes   raw     laplace  pooled  (Brier)                  (Brier)                  bayes / raw
=========  ===  =====  ======  ======  =======  ======  =======================  =======================  =============
METR       2    717    0.0819  0.0855  0.1124   0.194   -0.0036 (0.0015), 20/20  -0.0305 (0.0007), 20/20  0.968 / 0.777
METR       4    628    0.0649  0.0658  0.0805   0.193   -0.0009 (0.0004), 20/20  -0.0156 (0.0006), 20/20  0.971 / 0.892
tau-bench  1    50     0.209   0.290   0.208    0.249   -0.081 (0.014), 20/20    +0.0012 (0.0067), 13/20  0.994 / 0.480
tau-bench  2    50     0.193   0.223   0.192    0.247   -0.029 (0.010), 20/20    +0.0016 (0.0057), 11/20  0.995 / 0.766
=========  ===  =====  ======  ======  =======  ======  =======================  =======================  =============

Log loss tells the same story (METR k = 2: bayes 0.288, laplace 0.397, raw 0.472; tau-bench k = 1:
0.611 against 0.607 and 2.00). On METR, where agents differ and most of an agent's tasks are nearly
all-pass or all-fail, the fitted spread of the task rates is wide, so the Bayesian rate stays near the
raw share (a uniform prior pulls too far towards 1/2) and still beats it in every split, by little at
4 seen runs. On tau-bench (one agent, 50 tasks) the fitted
beta-binomial is close to uniform over tasks and the Bayesian rate ties ``(c + 1) / (k + 2)``; it
still beats the raw share and the agent's pooled mean. The predictive intervals cover at least their
level; the plug-in binomial one does not.

Usage::

    python benchmarks/bench_task_rates.py --data metr --seen 2 --reps 20
"""

from __future__ import annotations

import argparse
import json
import warnings

import numpy as np
from scipy import stats

RATES = ("bayes", "raw", "laplace", "pooled")


def split_runs(score: np.ndarray, k: int, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``(seen, held)`` of the shape of ``score``: ``k`` runs of each cell with ``k + 2`` or more, the rest."""
    seen, held = np.full_like(score, np.nan), np.full_like(score, np.nan)
    for a, t in zip(*np.nonzero(np.isfinite(score).sum(2) >= k + 2), strict=True):
        idx = gen.permutation(np.flatnonzero(np.isfinite(score[a, t])))
        seen[a, t, idx[:k]] = score[a, t, idx[:k]]
        held[a, t, idx[k:]] = score[a, t, idx[k:]]
    return seen, held


def baselines(seen: np.ndarray) -> dict[str, np.ndarray]:
    """The rates that need no fit, per (agent, task)."""
    c, n = np.nansum(seen, 2), np.isfinite(seen).sum(2)
    return {"raw": c / np.maximum(n, 1), "laplace": (c + 1) / (n + 2),
            "pooled": np.broadcast_to((c.sum(1) / n.sum(1))[:, None], c.shape)}  # fmt: skip


def scores(rate: np.ndarray, hc: np.ndarray, hn: np.ndarray, cell: np.ndarray) -> tuple[float, float]:
    """Brier score and log loss per held-out run over the cells ``cell``."""
    brier = hc * (1 - rate) ** 2 + (hn - hc) * rate**2
    p = np.clip(rate, 1e-3, 1 - 1e-3)
    loss = -(hc * np.log(p) + (hn - hc) * np.log1p(-p))
    return float(brier[cell].sum() / hn[cell].sum()), float(loss[cell].sum() / hn[cell].sum())


def covered(pmf: np.ndarray, count: int, prob: float) -> bool:
    """Whether ``count`` lies in the central ``prob`` interval of the discrete ``pmf`` over 0, 1, ..."""
    cdf = np.cumsum(pmf)
    lo = int(np.searchsorted(cdf, (1 - prob) / 2 - 1e-12))
    hi = int(np.searchsorted(cdf, 1 - (1 - prob) / 2 - 1e-12))
    return lo <= count <= hi


def one_split(ds, k: int, seed: int, prob: float = 0.9) -> dict:
    """Fit the seen runs of one split and score every rate on the held-out ones."""
    from hierbench.bayes import build_beta_binomial
    from hierbench.bayes import fit
    from hierbench.bayes import task_posteriors

    seen, held = split_runs(ds["score"].values, k, np.random.default_rng(seed))
    ta = np.isfinite(seen).any(axis=(0, 2))
    ag = np.isfinite(seen[:, ta]).any(axis=(1, 2))
    seen, held = seen[ag][:, ta], held[ag][:, ta]
    sub = ds[["score"]].isel(agent=ag, task=ta).copy()
    sub["score"] = (("agent", "task", "run"), seen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        post = task_posteriors(fit(build_beta_binomial(sub), rng=seed), prob=prob, rng=seed)
    rates = {"bayes": post["mean"].transpose("agent", "task").values, **baselines(seen)}
    hc, hn = np.nansum(held, 2), np.isfinite(held).sum(2)
    cell = (np.isfinite(seen).sum(2) > 0) & (hn > 0)
    out = {"k": k, "seed": seed, "cells": int(cell.sum()), "held_runs": int(hn[cell].sum())}
    for name in RATES:
        out[f"brier_{name}"], out[f"logloss_{name}"] = scores(rates[name], hc, hn, cell)
    al, be = (post[v].stack(s=("chain", "draw")).transpose("s", "agent", "task").values for v in ("alpha", "beta"))
    bayes_cov, raw_cov = [], []
    for a, t in zip(*np.nonzero(cell), strict=True):
        m = int(hn[a, t])
        pmf = stats.betabinom.pmf(np.arange(m + 1)[None, :], m, al[:, a, t, None], be[:, a, t, None]).mean(0)
        bayes_cov.append(covered(pmf, int(hc[a, t]), prob))
        raw_cov.append(covered(stats.binom.pmf(np.arange(m + 1), m, rates["raw"][a, t]), int(hc[a, t]), prob))
    out["predictive_bayes"], out["predictive_raw"] = float(np.mean(bayes_cov)), float(np.mean(raw_cov))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", choices=("metr", "tau"), default="metr")
    ap.add_argument("--seen", type=int, default=2, help="runs per cell the fit sees")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1000)
    args = ap.parse_args()
    from hierbench.data import load_metr
    from hierbench.data import load_tau_bench_airline

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_metr() if args.data == "metr" else load_tau_bench_airline()
    rows = []
    for r in range(args.reps):
        rows.append(one_split(ds, args.seen, args.seed + r))
        print(json.dumps(rows[-1]), flush=True)
    for metric in ("brier", "logloss"):
        means = {n: np.mean([row[f"{metric}_{n}"] for row in rows]) for n in RATES}
        d = np.array([row[f"{metric}_bayes"] - row[f"{metric}_laplace"] for row in rows])
        print(metric, {n: round(float(v), 4) for n, v in means.items()},
              f"bayes - laplace {d.mean():+.4f} ({d.std(ddof=1):.4f}), bayes lower in {(d < 0).sum()} of {len(d)}")  # fmt: skip
    print("predictive 90%: bayes", round(float(np.mean([r["predictive_bayes"] for r in rows])), 3),
          "raw", round(float(np.mean([r["predictive_raw"] for r in rows])), 3))  # fmt: skip


if __name__ == "__main__":
    main()
