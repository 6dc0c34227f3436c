"""Posterior pass^k against the unbiased estimator, replayed on METR (not the tau-bench log of the pass^k reference).

Cohort: per agent, the tasks with at least 8 binarised runs (agents with at least 20 such tasks and
neither all nor no successes). Truth: the finite cohort's pass^k, the mean over those tasks of
``C(c, k) / C(n, k)`` over every recorded run. Each replicate keeps ``--runs`` runs per task, drawn
without replacement, and fits the beta-binomial at its defaults (:func:`hierbench.bayes.fit_replicates`);
:func:`hierbench.metrics.pass_hat_k` is read three ways (``realised=False``, the default until 2026-12-07;
``realised=True``; ``population=True``) beside :func:`hierbench.freq.pass_hat_k`. Printed per ``k``:
mean absolute error, bias (both in points, with the Monte Carlo SE over replicates), the coverage of
the truth (binomial SE) and the mean width of the ``--prob`` intervals.

Measured (2026-12-06, 60 replicates, 3 runs per task, 90%; 7 agents, 420 intervals a row):

======  ========================  ===========  ===============  ======
k       method                    MAE x100     coverage         width
======  ========================  ===========  ===============  ======
2       unbiased (new tasks)      1.35 (0.06)  1.000            16.5
2       Bayes, realised=False     1.36 (0.06)  0.771 (0.020)    4.0
2       Bayes, realised=True      1.36 (0.06)  0.945 (0.011)    7.2
2       Bayes, population=True    1.76 (0.07)  1.000            15.7
3       unbiased (new tasks)      1.78 (0.08)  1.000            17.1
3       Bayes, realised=False     1.60 (0.07)  0.819 (0.019)    5.3
3       Bayes, realised=True      1.60 (0.07)  0.948 (0.011)    8.3
3       Bayes, population=True    1.90 (0.08)  0.995 (0.003)    16.1
======  ========================  ===========  ===============  ======

The unbiased estimator's interval is for a new draw of tasks, so its coverage of these tasks' value
is not like for like (``population=True`` is its like). Part of the default's shortfall is the truth's
own noise (about 8 runs per task: sd about 0.011, as large as the interval's), which is exactly the
term ``realised=True`` adds.

Usage::

    python benchmarks/bench_passk_realised.py --reps 60 --runs 3
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import xarray as xr
from scipy.special import comb

KS = (2, 3)
METHODS = {"unbiased": None, "realised=False": {"realised": False}, "realised=True": {"realised": True},
           "population=True": {"population": True}}  # fmt: skip


def cohort(min_runs: int = 8, min_tasks: int = 20):
    """METR's binarised scores, the eligible (agent, task) cells, the agents kept and each one's truth per k."""
    from hierbench.data import load_metr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_metr()
    s = m["score"].values
    valid = ~np.isnan(s)
    n, c = valid.sum(2), np.nansum(s, 2)
    elig = n >= min_runs
    keep = [a for a in range(s.shape[0])
            if elig[a].sum() >= min_tasks and 0 < c[a][elig[a]].sum() < n[a][elig[a]].sum()]  # fmt: skip
    truth = {k: np.array([np.mean(comb(c[a][elig[a]], k) / comb(n[a][elig[a]], k)) for a in keep]) for k in KS}
    return m, s, valid, elig, keep, truth


def replicates(m, s, valid, elig, keep, reps: int, runs: int, gen: np.random.Generator) -> list[xr.Dataset]:
    """``reps`` logs of ``runs`` runs per eligible cell, drawn without replacement from its recorded runs."""
    out = []
    for _ in range(reps):
        y = np.full((len(keep), s.shape[1], runs), np.nan)
        for j, a in enumerate(keep):
            for t in np.flatnonzero(elig[a]):
                y[j, t] = s[a, t, gen.choice(np.flatnonzero(valid[a, t]), runs, replace=False)]
        out.append(xr.Dataset({"score": (("agent", "task", "run"), y)},
                              coords={"agent": m["agent"].values[keep], "task": m["task"].values,
                                      "run": np.arange(runs)}))  # fmt: skip
    return out


def with_counts(fit: xr.DataTree, d: xr.Dataset) -> xr.DataTree:
    """The replicate's counts put back (``fit_replicates`` keeps no data groups; the metrics read them)."""
    if "constant_data" not in fit.children:
        cd = xr.Dataset({"n_runs": (~np.isnan(d["score"])).sum("run"), "n_success": d["score"].fillna(0).sum("run")})
        fit["constant_data"] = xr.DataTree(cd)
    return fit


def estimates(fit, d, k: int, prob: float, seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Each method's estimates and intervals, per agent, for one replicate."""
    from hierbench import freq
    from hierbench import metrics

    out = {}
    for name, kw in METHODS.items():
        if kw is None:
            r = freq.pass_hat_k(d, k, prob=prob)
        else:
            r = metrics.pass_hat_k(fit, k, prob=prob, rng=seed, **kw)
        out[name] = (r.estimate.squeeze().values.reshape(-1), r.ci.squeeze().values.reshape(-1, 2))
    return out


def report(rows: dict[str, list], truth: np.ndarray, k: int, reps: int) -> None:
    """Print error, bias, coverage and width per method, with Monte Carlo SEs."""
    print(f"\nk = {k}: {reps} replicates x {truth.size} agents")
    for name, v in rows.items():
        E, C = np.array([x[0] for x in v]), np.array([x[1] for x in v])
        err = E - truth[None]
        cov = (C[..., 0] <= truth[None]) & (truth[None] <= C[..., 1])
        mc = np.std(np.abs(err).mean(1), ddof=1) / np.sqrt(reps)
        mcb = np.std(err.mean(1), ddof=1) / np.sqrt(reps)
        p = cov.mean()
        print(f"  {name:16s} MAE {100 * np.abs(err).mean():5.2f} ({100 * mc:.2f})  bias {100 * err.mean():+5.2f} "
              f"({100 * mcb:.2f})  coverage {p:.3f} ({np.sqrt(p * (1 - p) / cov.size):.3f})  "
              f"width {100 * (C[..., 1] - C[..., 0]).mean():5.1f}")  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--prob", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=20261206)
    a = ap.parse_args(argv)
    from hierbench import bayes

    m, s, valid, elig, keep, truth = cohort()
    reps = replicates(m, s, valid, elig, keep, a.reps, a.runs, np.random.default_rng(a.seed))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fits = bayes.fit_replicates(bayes.build_beta_binomial(reps[0]), reps, rng=1, progress=False)
    fits = [with_counts(f, d) for f, d in zip(fits, reps, strict=True)]
    for k in KS:
        rows: dict[str, list] = {name: [] for name in METHODS}
        for i, (f, d) in enumerate(zip(fits, reps, strict=True)):
            for name, val in estimates(f, d, k, a.prob, i).items():
                rows[name].append(val)
        report(rows, truth[k], k, a.reps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
