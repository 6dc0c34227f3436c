"""IRT on SWE-bench bash-only: leave one agent out, random vs anchors vs adaptive task selection.

For each of the 25 agents: calibrate a 2PL (``--model 1pl``: 1PL) bank on the other 24
(``fit_irt_ml``: MAP with empirical-Bayes hyperparameters and a Laplace
bank of 1000 item-parameter draws; NUTS per fold is too slow on a shared
machine, so it is validated on one fold with ``--nuts-fold``), then predict
the held-out agent's full 500-task score from ``n`` of its tasks chosen

* at random (``--n-repeat`` independent subsets per agent, nested in size),
* by cluster anchors and information anchors (``design.anchors``),
* adaptively (``design.adaptive``, expected posterior variance reduction),
  its interval widened by the misfit variance measured on the 24
  calibration agents (``design.calibrate_misfit``, 5-fold cross-fitted
  replays; the model-only interval is reported beside it),

and record the absolute error of the posterior mean and whether the 90%
interval covered the actual score. Prints the tables of the closing note and
writes them as JSON.

    python benchmarks/bench_irt_adaptive.py --out /tmp/irt_loo.json
    python benchmarks/bench_irt_adaptive.py --quick          # 4 agents, 2 random subsets
    python benchmarks/bench_irt_adaptive.py --summary /tmp/irt_loo.nc   # tables from a saved study
    python benchmarks/bench_irt_adaptive.py --nuts-fold 0    # NUTS vs Laplace bank on one fold
    python benchmarks/bench_irt_adaptive.py --full-fit       # NUTS on all 25 agents vs the MAP fit
    python benchmarks/bench_irt_adaptive.py --model 1pl      # the same study with 1PL banks

Issue 25, design-based and model-assisted (the plain mean of a random subset
as the bar), on every log: ``--selections random_mean,assisted_random,assisted_adaptive``
with ``--data swe`` / ``sim-fit`` / ``sim-misfit`` (``--n-repeat 20``) and
``--data metr`` (``--n-repeat 40``); ``--workers 2`` runs the held-out agents
on a process pool (identical results). 2026-12-02, serially beside other jobs
(load 4-8 on 2 cores): 423 s (SWE), 126 s (METR), 306 s (sim-misfit), 319 s
(sim-fit). MAE in points at the sizes run (assisted adaptive / plain mean;
the estimator and the draws are those of 2026-12-01, so the MAE is unchanged)
and the assisted adaptive interval's 90% coverage per size, before (the plain
t interval, 2026-12-01) and after the model's predicted term variance was
pooled into it (``hierbench.design._assisted``); 95% Wilson half-widths about
0.027 (500 intervals) and 0.036 (METR, 280):

==========  ======================================  ======================================
data        MAE assisted adaptive / plain mean      coverage before -> after
==========  ======================================  ======================================
SWE-bench   8.10/11.58, 5.56/7.57, 4.86/6.95,        0.872, -, 0.896, 0.902, 0.896 ->
            3.27/4.88, 2.24/3.17 (10..100)           0.902, 0.906, 0.900, 0.902, 0.896
METR        4.86/8.94, 3.04/6.22, 1.82/3.45 (10..40) 0.875, 0.904, 0.914 ->
                                                     0.896, 0.904, 0.918
sim-fit     8.63/12.74, 5.89/8.22, 5.16/7.23,        0.882, -, 0.898, 0.894, 0.912 ->
            3.54/5.23, 2.30/3.28                     0.914, 0.896, 0.904, 0.896, 0.912
sim-misfit  8.73/12.08, 6.17/8.36, 5.78/7.62,        0.898, -, 0.884, 0.890, 0.896 ->
            4.05/5.02, 2.67/3.37                     0.920, 0.904, 0.892, 0.890, 0.900
==========  ======================================  ======================================

(sizes 10, 20, 25, 50, 100; "-": not kept.) The misses are now balanced
between the two sides (SWE-bench, 10 tasks: 0.050 below, 0.048 above; in a diagnosis
on 11 of its agents x 30 paths the t interval's misses were four in five on
one side). ``assisted_random`` (uniform
draws, same working model) after: SWE-bench 0.886-0.926, sim-fit
0.908-0.928, sim-misfit 0.900-0.926, METR 0.886 / 0.839 / 0.879 (its 20-task
cell under-covers: 7 agents, repeated runs). The plain floor ``max(s^2,
omega)`` tried first over-covered: SWE-bench 0.950 / 0.938 / 0.938 / 0.924 /
0.922, METR 0.936 / 0.929 / 0.932.

Every gap to the plain mean is negative with its 95% interval (agents
resampled) below zero; against the plain mean of twice the tasks the gap is
within Monte Carlo error on SWE-bench and sim-fit (tasks-to-reach ratio about
0.5), negative on METR, and positive with two skills. The per data set
tables, with standard errors and Wilson bands, are in
``models/irt_2pl/card.md``.

2PL or 1PL bank, 2026-12-01 (this script's defaults: 5 repeats per agent of
every selection that involves chance; 29-30 min each, two at once on 2 cores).
Mean absolute error in points at 10 / 20 / 25 / 50 / 100 tasks, its standard
error over agents at 25 and 50 tasks, and the coverage of adaptive's 90%
interval (misfit variance added):

=========================  =====  =====  =====  =====  =====  ============  ===============
bank, selection            10     20     25     50     100    se 25 / 50    adaptive cover
=========================  =====  =====  =====  =====  =====  ============  ===============
2PL, random (IRT-scored)   7.08   4.93   4.90   3.49   2.28   0.42 / 0.24
2PL, random (plain mean)   10.74  7.53   7.22   4.85   3.34   0.46 / 0.22
2PL, adaptive              4.86   4.13   3.57   2.42   1.79   0.38 / 0.31   0.85-0.96
1PL, random (IRT-scored)   7.33   5.83   5.20   3.79   2.58   0.39 / 0.25
1PL, adaptive              5.81   4.07   3.65   2.67   1.75   0.34 / 0.21   0.90-0.94
=========================  =====  =====  =====  =====  =====  ============  ===============

Adaptive with n tasks minus the IRT-scored random subset with 2n (2PL):
-0.07 [-1.28, +1.14], +0.08 [-0.53, +0.72], +0.14 [-0.42, +0.75] points at
n = 10, 25, 50 (2026-12-01, OLDER METHOD: 95% percentile bootstrap over the
agents, what ``loo_summary`` gave until 2026-12-04; it now gives a Student t
interval over agents, as the bootstrap of a mean over few agents runs narrow;
these three were not recomputed). Today's method on the same comparison:
notebooks/07_irt_adaptive.ipynb (executed 2026-12-04, 3 repeats per agent, its
own seeds): +0.07 [-1.77, +1.91], +0.26 [-1.06, +1.59], +0.51 [-0.27, +1.30]
at 10 vs 20, 25 vs 50, 50 vs 100; ``summarise`` below prints it for a study.
Tasks to reach an MAE of 3 points: 35 against 66, ratio 0.53 [0.38, 0.77]
(this interval is the script's own ``ratio_interval``, still a percentile
bootstrap over agents; not a ``loo_summary`` figure). (2PL rows: stop 13's code with
the MAP-II hyperparameters; 1PL rows: measured just before that change.) Adaptive matches a random
subset twice its size within the study's Monte Carlo error; the point
estimate is a little above one half. The adaptive error is an agent-level
bias more than path noise (sd over an agent's paths 0.7-2.8 points, over
agents' means 2.2-5.5). Stop 12's single-path table (2PL adaptive 5.51 / 4.50
/ 4.19 / 2.86 / 1.93, and a 1PL that looked better) was within that noise.

METR with repeated runs (``--data metr``: the 7 agents that ran all 83 tasks, 8
runs per cell typical, up to 96; sizes 10 / 20 / 40; 2026-12-01), the cell's
runs correlated given the item curve (``--run-icc estimate``, the default;
fit_irt_ml estimates about 0.15) against independent runs (``--run-icc 0``):

===========================  ===================  ===================
90% coverage / MAE (points)  run_icc estimated    run_icc = 0
===========================  ===================  ===================
random, coverage             0.94 / 0.91 / 0.94   0.66 / 0.71 / 0.57
cluster anchors, coverage    0.77 / 0.91 / 0.80   0.80 / 0.66 / 0.57
adaptive, coverage           1.00 / 0.94 / 0.97   0.86 / 0.86 / 0.89
adaptive model-only, cover   0.94 / 0.94 / 0.74   0.37 / 0.49 / 0.80
random, MAE                  3.73 / 2.91 / 1.94   3.93 / 3.14 / 2.24
adaptive, MAE                1.96 / 1.59 / 1.33   3.59 / 2.45 / 0.86
===========================  ===================  ===================

Counting a cell's 8 runs as 8 independent answers made every interval too
narrow; with run_icc the random subsets cover at the nominal rate. Adaptive
with 10 tasks (1.96) has a smaller MAE than a random 20 (2.91; difference -0.95
[-1.78, +0.00], 2026-12-01, OLDER METHOD: ``loo_summary``'s percentile bootstrap
over the 7 agents, which runs narrow over so few, and its upper end is already at
zero; not recomputed, and no Student t figure for it is recorded anywhere: re-run
``--data metr`` and read ``summarise``'s half-gap lines) and with 20 (1.59) than a
random 40 (1.94). Seven agents are a small
sample: each coverage cell holds 35 intervals from 7 agents.

Held out (2026-12-04, the audit of model-leaning defaults; load 5-12 on 2 shared cores): logs
the design code was not developed on, or agents outside the calibration population, each
against the plain mean of a random subset (``loo_summary``'s ``baseline_*``). MAE in points
at each size; coverage of the 90% interval:

==========================  =============================  ============================  ==================
data (held out x repeats)   plain mean                     adaptive (misfit added)       adaptive coverage
==========================  =============================  ============================  ==================
verbagg (40 x 10), 4..12    16.73 / 13.04 / 10.43 / 7.31   10.27 / 8.23 / 7.48 / 5.25    0.92-0.97
swe-later (10 x 3), 10..50  9.57 / 7.25 / 5.07             3.80 / 2.72 / 1.81            0.97-1.00
metr-later (2 x 10), 10..40 11.93 / 7.78 / 3.75            3.71 / 2.80 / 1.91            0.85-1.00
==========================  =============================  ============================  ==================

``--data verbagg --n-repeat 10 --selections random_mean,assisted_random,assisted_adaptive,random,cluster,adaptive``
(1,610 s): assisted adaptive 14.62 / 11.48 / 9.32 / 7.07 (gap to the plain mean -2.11 [-3.66,
-0.53] ... -0.24 [-1.03, +0.53]), coverage 0.92-0.94; IRT-scored random 11.75 / 9.90 / 8.61 /
6.29; cluster anchors 10.03 / 9.10 / 8.02 / 5.86 (coverage 0.975-0.985); the plain mean's exact
interval 0.945-0.98. Against a random subset of twice the size scored by the same IRT model,
adaptive is +1.66 [-0.92, +4.24] and +1.94 [-0.18, +4.07] points worse at 4 and 6 tasks (on
SWE-bench, leave one agent out, it matched it): the "half the tasks" figure does not carry over.
The assisted estimate's gain over the plain mean shrinks to 3-13% of its MAE (SWE-bench, leave one
agent out: 29-33%; swe-later: 22-42%).
``--data swe-later --n-repeat 10 --sizes 10,25,50,100`` (assisted and anchors, 1,062 s):
plain mean 10.22 / 7.78 / 4.72 / 2.93, assisted adaptive 7.96 / 4.52 / 2.89 / 2.23 (coverage
0.93-0.96), cluster anchors 6.37 / 4.95 / 2.98 / 2.04; the adaptive row above is a separate
run (``--n-repeat 3 --sizes 10,25,50 --selections random_mean,random,adaptive``, 305 s, 30
intervals per cell). ``--data metr-later --n-repeat 10`` (204 s): two held-out agents, every
coverage a count of 20 intervals; the IRT-scored random subsets covered 13, 13 and 15 of 20
(0.65-0.75), adaptive's model-only interval 14 of 20 at 40 tasks.

"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import xarray as xr


def tasks_to_reach(sizes, mae, target: float) -> float:
    """Tasks at which the MAE curve first falls to ``target`` (linear in log n between sizes).

    NaN when already below at the smallest size, inf when never reached.
    """
    sizes = np.asarray(sizes, float)
    mae = np.asarray(mae, float)
    if mae[0] <= target:
        return float("nan")
    for i in range(1, sizes.size):
        if mae[i] <= target:
            f = (mae[i - 1] - target) / (mae[i - 1] - mae[i])
            return float(np.exp(np.log(sizes[i - 1]) + f * (np.log(sizes[i]) - np.log(sizes[i - 1]))))
    return float("inf")


def ratio_interval(ds: xr.Dataset, base: str, target: float, n_boot: int = 2000, seed: int = 0,
                   sel: str = "adaptive") -> tuple[float, float]:
    """95% percentile interval of adaptive's tasks-to-reach over ``base``'s, resampling agents.

    Each resample recomputes both MAE curves (agents' errors averaged over
    their repeats) and both interpolated counts; resamples where either count
    is not interpolated (below at the smallest size, or never reached) are
    left out, and the interval is NaN when more than 5% are.
    """
    sizes = [int(v) for v in ds.n_tasks.values]
    ea = 100 * ds.abs_error.sel(selection=sel).mean("repeat").transpose("agent", "n_tasks").values
    eb = 100 * ds.abs_error.sel(selection=base).mean("repeat").transpose("agent", "n_tasks").values
    g = np.random.default_rng(seed)
    out = []
    for _ in range(n_boot):
        idx = g.integers(0, ea.shape[0], ea.shape[0])
        a = tasks_to_reach(sizes, ea[idx].mean(0), target)
        r = tasks_to_reach(sizes, eb[idx].mean(0), target)
        out.append(a / r if np.isfinite([a, r]).all() else np.nan)
    out = np.array(out)
    if np.isnan(out).mean() > 0.05:
        return float("nan"), float("nan")
    lo, hi = np.nanquantile(out, [0.025, 0.975])
    return float(lo), float(hi)


def _ratio_text(a: float, r: float, sizes, base: str) -> str:
    """Adaptive's tasks-to-reach over the baseline's, with the bounds the sizes allow.

    ``nan`` from :func:`tasks_to_reach` means already below at the smallest
    size (at most that many tasks), ``inf`` never reached (more than the
    largest size); the ratio is then a bound, and the verdict against 1/2 is
    given only when the bound decides it.
    """
    lo_n, hi_n = sizes[0], sizes[-1]
    a_txt = f"<= {lo_n}" if np.isnan(a) else (f"> {hi_n}" if np.isinf(a) else f"{a:.1f}")
    r_txt = f"<= {lo_n}" if np.isnan(r) else (f"> {hi_n}" if np.isinf(r) else f"{r:.1f}")
    a_hi = lo_n if np.isnan(a) else a  # an upper bound on adaptive's count (inf if never)
    r_lo = hi_n if np.isinf(r) else (np.nan if np.isnan(r) else r)  # a lower bound on the baseline's
    if np.isnan(r_lo):
        verdict = "undecided (both below at the smallest size)" if np.isnan(a) else "baseline below at the smallest size"
    elif np.isinf(a_hi):
        verdict = "adaptive never reaches it"
    else:
        bound = a_hi / r_lo
        exact = not (np.isnan(a) or np.isinf(r))
        if bound <= 0.5:
            verdict = f"ratio {'' if exact else '<= '}{bound:.2f} (<= 1/2)"
        elif exact:
            verdict = f"ratio {bound:.2f} (> 1/2)"
        else:
            verdict = f"ratio <= {bound:.2f} (undecided against 1/2)"
    return f"adaptive {a_txt} tasks, {base} {r_txt}: {verdict}"


def _cov_cells(summ: xr.Dataset, sel: str) -> list[str]:
    c = summ.sel(selection=sel)
    return [
        f"{float(c.coverage.sel(n_tasks=n)):.3f} [{float(c.coverage_ci.sel(n_tasks=n, ci_bound='lower')):.2f}, "
        f"{float(c.coverage_ci.sel(n_tasks=n, ci_bound='upper')):.2f}] ({int(c.n_intervals.sel(n_tasks=n))})"
        for n in summ.n_tasks.values
    ]


def _agent_errors(ds: xr.Dataset, sel: str) -> np.ndarray:
    """(agent, n_tasks) mean absolute error over repeats, in points."""
    return 100 * ds.abs_error.sel(selection=sel).mean("repeat").transpose("agent", "n_tasks").values


def paired_gap(ds: xr.Dataset, a: str, na: int, b: str, nb: int, n_boot: int = 4000, seed: int = 0):
    """MAE of selection ``a`` with ``na`` tasks minus ``b`` with ``nb`` (points), 95% interval resampling agents."""
    sizes = [int(v) for v in ds.n_tasks.values]
    d = _agent_errors(ds, a)[:, sizes.index(na)] - _agent_errors(ds, b)[:, sizes.index(nb)]
    g = np.random.default_rng(seed)
    bs = d[g.integers(0, d.size, (n_boot, d.size))].mean(1)
    lo, hi = np.quantile(bs, [0.025, 0.975])
    return float(d.mean()), float(lo), float(hi)


def assisted_report(ds: xr.Dataset) -> dict:
    """Issue 25's claims per selection against the plain mean of a random subset: MAE at n and 2n, coverage."""
    from hierbench.freq import wilson_interval

    sizes = [int(v) for v in ds.n_tasks.values]
    out = {}
    if "random_mean" not in ds.selection.values:
        return out
    for sel in ("assisted_adaptive", "assisted_random", "adaptive", "random"):
        if sel not in ds.selection.values:
            continue
        print(f"\n{sel} against the plain mean of a random subset (MAE in points; differences with 95% intervals, "
              "agents resampled; coverage of the 90% interval with its 95% Wilson band over all intervals)")
        rows = {}
        for n in sizes:
            d, lo, hi = paired_gap(ds, sel, n, "random_mean", n)
            cov = ds.covered.sel(selection=sel, n_tasks=n).values.ravel()
            cov = cov[np.isfinite(cov)]
            wl, wh = wilson_interval(int(cov.sum()), cov.size, prob=0.95).values
            row = {"mae": float(_agent_errors(ds, sel)[:, sizes.index(n)].mean()),
                   "plain_mean_mae": float(_agent_errors(ds, "random_mean")[:, sizes.index(n)].mean()),
                   "gap": d, "gap_ci": [lo, hi], "coverage": float(cov.mean()), "coverage_wilson": [wl, wh],
                   "n_intervals": int(cov.size)}
            verdict = "better" if hi < 0 else ("worse" if lo > 0 else "within MC error")
            text = (f"  n={n:4d}: {row['mae']:.2f} vs {row['plain_mean_mae']:.2f}  gap {d:+.2f} [{lo:+.2f}, "
                    f"{hi:+.2f}] {verdict}; coverage {row['coverage']:.3f} [{wl:.3f}, {wh:.3f}] ({cov.size})")
            if 2 * n in sizes:
                d2, lo2, hi2 = paired_gap(ds, sel, n, "random_mean", 2 * n)
                row["half_gap"] = [d2, lo2, hi2]
                text += f"; vs plain mean of {2 * n}: {d2:+.2f} [{lo2:+.2f}, {hi2:+.2f}]"
            print(text)
            rows[n] = row
        for t in (3, 4, 5):
            a = tasks_to_reach(sizes, [rows[n]["mae"] for n in sizes], t)
            r = tasks_to_reach(sizes, [rows[n]["plain_mean_mae"] for n in sizes], t)
            lo, hi = ratio_interval(ds, "random_mean", t, sel=sel)
            band = f"; 95% interval over agents [{lo:.2f}, {hi:.2f}]" if np.isfinite([lo, hi]).all() else ""
            print(f"  tasks to reach MAE {t}: " + _ratio_text(a, r, sizes, "random_mean").replace("adaptive", sel, 1)
                  + band)
            rows[f"reach_{t}"] = {"tasks": a, "plain_mean_tasks": r, "ratio_ci": [lo, hi]}
        out[sel] = rows
    return out


def summarise(ds: xr.Dataset) -> dict:
    """The closing note's tables, Monte Carlo errors over agents (``design.loo_summary``)."""
    import pandas as pd

    from hierbench.design import loo_summary

    sizes = [int(v) for v in ds.n_tasks.values]
    summ = loo_summary(ds)
    mae = summ.mae
    print("\nmean absolute error of the predicted full score (percentage points)")
    print((100 * mae).to_pandas().round(2).to_string())
    print("its standard error over agents (points)")
    print((100 * summ.mae_se).to_pandas().round(2).to_string())
    print("\ncoverage of the 90% interval [95% Wilson interval over agents] (n intervals)")
    rows = {str(s): _cov_cells(summ, str(s)) for s in ds.selection.values}
    has_model = "model_covered" in ds and bool(ds.model_covered.sel(selection="adaptive").notnull().any()) \
        if "adaptive" in ds.selection.values else False
    if has_model:
        model_only = ds.sel(selection=["adaptive"]).assign(
            covered=ds.model_covered, lower=ds.model_lower, upper=ds.model_upper
        ).sel(selection=["adaptive"])
        rows["adaptive, model only"] = _cov_cells(loo_summary(model_only), "adaptive")
    print(pd.DataFrame(rows, index=sizes).T.to_string())
    print("\nmean width of the 90% interval (points)")
    print((100 * summ.width).to_pandas().round(2).to_string())
    if has_model:
        mw = (ds.model_upper - ds.model_lower).sel(selection="adaptive").mean(("agent", "repeat"))
        print("adaptive, model only:", (100 * mw).round(2).values.tolist())
        print("misfit sd (points), mean over folds:", (100 * ds.misfit_sd.mean("agent")).round(2).values.tolist())
    reach = {}
    print("\ntasks needed to reach a mean absolute error of 3, 4, 5 points (log-linear interpolation)")
    for s in ds.selection.values:
        reach[str(s)] = {t: tasks_to_reach(sizes, 100 * mae.sel(selection=s).values, t) for t in (3, 4, 5)}
        print(f"  {s!s:12s}", "  ".join(f"MAE {t}: {v:6.1f}" for t, v in reach[str(s)].items()))
    # two baselines: a random subset scored by the same IRT model, and its plain mean
    # (what a user computes without a model)
    for base in ("random", "random_mean"):
        if "adaptive" in reach and base in reach and "half_gap_ci" in summ:
            for t in (3, 4, 5):
                lo, hi = ratio_interval(ds, base, t)
                band = f"; 95% interval over agents [{lo:.2f}, {hi:.2f}]" if np.isfinite([lo, hi]).all() else ""
                print(f"  MAE {t}: " + _ratio_text(reach["adaptive"][t], reach[base][t], sizes, base) + band)
            print(f"\nadaptive with n tasks vs {base} with 2n tasks (MAE, points; difference with its "
                  "95% Student t interval over agents)")
            for n in sizes:
                if 2 * n in sizes:
                    a = 100 * float(mae.sel(selection="adaptive", n_tasks=n))
                    r = 100 * float(mae.sel(selection=base, n_tasks=2 * n))
                    lo, hi = (100 * summ.half_gap_ci.sel(selection=base, n_tasks=n)).values
                    verdict = "adaptive not worse" if hi <= 0 else ("adaptive worse" if lo > 0 else "within noise")
                    print(f"  adaptive {n:4d}: {a:.2f}   {base} {2 * n:4d}: {r:.2f}   "
                          f"difference {a - r:+.2f} [{lo:+.2f}, {hi:+.2f}]  {verdict}")
    against_plain = assisted_report(ds)
    return {
        "against_plain_mean": against_plain,
        "mae": {str(s): dict(zip(sizes, map(float, mae.sel(selection=s).values), strict=True)) for s in mae.selection.values},
        "mae_se": {str(s): dict(zip(sizes, map(float, summ.mae_se.sel(selection=s).values), strict=True))
                   for s in mae.selection.values},
        "coverage": {str(s): dict(zip(sizes, map(float, summ.coverage.sel(selection=s).values), strict=True))
                     for s in mae.selection.values},
        "coverage_table": rows,
        "n_intervals": {str(s): dict(zip(sizes, map(int, summ.n_intervals.sel(selection=s).values), strict=True))
                        for s in mae.selection.values},
        "width": {str(s): dict(zip(sizes, map(float, summ.width.sel(selection=s).values), strict=True))
                  for s in mae.selection.values},
        "tasks_to_reach_mae": reach,
        "actual": dict(zip(map(str, ds.agent.values), map(float, ds.actual.values), strict=True)),
    }


def load_data(args) -> xr.Dataset:
    """The log of the study: SWE-bench, METR's complete agents, or a simulation (the bank fits, or two skills)."""
    from hierbench.data import load_metr
    from hierbench.data import load_swebench_bash_only
    from hierbench.design import simulate_irt_log
    from hierbench.freq import fit_irt_ml

    if args.data in ("metr", "metr-later"):
        # repeated runs (up to 96 per cell, 8 typical); the 7 agents that ran every task
        data = load_metr()
        ran = data.score.notnull().sum("run")
        return data.sel(agent=[a for a in data.agent.values if int((ran.sel(agent=a) == 0).sum()) == 0])
    if args.data == "verbagg":
        return _verbagg()
    swe = load_swebench_bash_only()
    if args.data == "swe":
        return swe
    if args.data == "swe-later":
        # the per-instance record of this agent disagrees with the leaderboard (PROVENANCE.md): left out
        return swe.drop_sel(agent=list(json.loads(swe.attrs.get("flagged_agents", "{}"))))
    # simulations on SWE-bench's item parameters (a 2PL calibrated on all 25 agents), 25 new agents:
    # "sim-fit" answers by that 2PL (the bank's own model), "sim-misfit" with one ability per task
    # cluster (two skills, correlation --skill-correlation), which a one-dimensional bank cannot hold
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bank = fit_irt_ml(swe, n_draws=200, rng=args.seed).bank
    skills = 1 if args.data == "sim-fit" else 2
    data, _ = simulate_irt_log(args.sim_agents, bank=bank, skills=skills, skill_correlation=args.skill_correlation,
                               rng=args.seed + 1)
    return data


def _verbagg() -> xr.Dataset:
    """lme4's VerbAgg as a complete log: 316 persons (agents) x 24 items (tasks), binary ``r2``, one run.

    A person x item log the design code was never developed on (the held-out log of the audit).
    """
    import pandas as pd

    from hierbench.data import from_records

    root = os.environ.get("HIERBENCH_SHARED_DATA", "")
    df = pd.read_csv(os.path.join(root, "lme4", "verbagg.csv"))
    df = pd.DataFrame({"agent": "p" + df["id"].astype(str).str.zfill(3), "task": df["item"],
                       "score": (df["r2"] == "Y").astype(float)})
    return from_records(df)


def split_agents(args, data: xr.Dataset) -> tuple[list[str], list[str] | None]:
    """The held-out agents and the fixed calibration agents (None: every agent but the one held out).

    ``swe-later``: the submissions after 2025-08-22 (10 agents, the two best above every calibration
    agent) against a bank of the 14 before; ``metr-later``: o1 and Claude 3.5 Sonnet (New), the two
    released last, against the five older; ``verbagg``: 40 persons drawn with the seed, against the
    other 276.
    """
    agents = [str(a) for a in data.agent.values]
    if args.data == "swe-later":
        day = {str(a): str(f)[:8] for a, f in zip(data.agent.values, data.folder.values, strict=True)}
        later = [a for a in agents if day[a] > "20250822"]
        return later, [a for a in agents if a not in later]
    if args.data == "metr-later":
        later = ["Claude 3.5 Sonnet (New)", "o1"]
        return later, [a for a in agents if a not in later]
    if args.data == "verbagg":
        held = sorted(np.random.default_rng(args.seed).choice(agents, 40, replace=False).tolist())
        return held, [a for a in agents if a not in held]
    return agents, None


def loo(args) -> dict:
    from hierbench.design import loo_study

    data = load_data(args)
    agents, calibration = split_agents(args, data)
    if args.quick:
        agents = agents[:: max(1, len(agents) // 4)][:4]
    default_sizes = {"metr": "10,20,40", "metr-later": "10,20,40", "verbagg": "4,6,8,12"}.get(args.data,
                                                                                          "10,20,25,50,100")
    sizes = tuple(int(v) for v in (args.sizes or default_sizes).split(","))
    selections = tuple(args.selections.split(","))
    t0 = time.perf_counter()
    pool = ProcessPoolExecutor(args.workers) if args.workers > 1 else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = loo_study(
                data,
                agents=agents,
                calibration=calibration,
                n_tasks=sizes,
                selections=selections,
                n_repeat=args.n_repeat,
                prob=0.9,
                criterion=args.criterion,
                n_bank_draws=args.bank_draws,
                model=args.model,
                misfit=not args.no_misfit,
                run_icc=None if args.run_icc == "estimate" else float(args.run_icc),
                working=tuple(args.working.split(",")),
                defensive=args.defensive,
                executor=pool,
                rng=args.seed,
            )
    finally:
        if pool is not None:
            pool.shutdown()
    secs = time.perf_counter() - t0
    if args.save:
        ds.to_netcdf(args.save)
    print(f"leave-one-agent-out on {args.data}: {len(agents)} agents x {args.n_repeat} repeats, {secs:.0f} s "
          f"({args.workers} worker(s)), load {os.getloadavg()}")
    print("working models chosen:", dict(zip(*np.unique(ds.working_model.values.astype(str), return_counts=True),
                                             strict=True)))
    out = summarise(ds)
    out.update({"agents": agents, "sizes": list(sizes), "seconds": secs, "load": os.getloadavg(),
                "misfit": not args.no_misfit, "data": args.data, "n_repeat": args.n_repeat,
                "working_models": ds.working_model.values.astype(str).tolist()})
    return out


def nuts_fold(args) -> dict:
    """NUTS bank vs Laplace bank on one fold: same held-out agent, same random subsets."""
    from hierbench.bayes import build_irt_2pl
    from hierbench.bayes import fit
    from hierbench.data import load_swebench_bash_only
    from hierbench.freq import IRTBank
    from hierbench.freq import fit_irt_ml
    from hierbench.freq import irt_score

    data = load_swebench_bash_only()
    ag = str(data.agent.values[args.nuts_fold])
    train = data.sel(agent=[a for a in data.agent.values if str(a) != ag])
    own = data.sel(agent=ag)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(build_irt_2pl(train), rng=args.seed, posterior_predictive=False, log_likelihood=False)
    t_nuts = time.perf_counter() - t0
    t0 = time.perf_counter()
    cal = fit_irt_ml(train, rng=args.seed)
    t_map = time.perf_counter() - t0
    banks = {"nuts": IRTBank.from_posterior(dt).thin(1000, args.seed), "laplace": cal.bank}
    g = np.random.default_rng(args.seed)
    actual = float(own.score.mean())
    rows = []
    for _rep in range(args.n_repeat):
        idx = np.sort(g.choice(data.sizes["task"], 100, replace=False))
        sub = own.isel(task=idx)
        rec = {}
        for name, bank in banks.items():
            r = irt_score(bank, sub, prob=0.9, rng=g)
            lo, hi = map(float, r.ci.values)
            rec[name] = (float(r.estimate), lo, hi)
        rows.append(rec)
    diff = [abs(r["nuts"][0] - r["laplace"][0]) for r in rows]
    wn = [r["nuts"][2] - r["nuts"][1] for r in rows]
    wl = [r["laplace"][2] - r["laplace"][1] for r in rows]
    post = dt["posterior"].to_dataset()
    from scipy import stats

    rho = stats.spearmanr(post["difficulty"].mean(("chain", "draw")).values, cal.estimate.values).statistic
    out = {
        "held_out": ag,
        "actual": actual,
        "nuts_seconds": t_nuts,
        "map_seconds": t_map,
        "nuts_diag": {k: dt.attrs[k] for k in ("diag_max_r_hat", "diag_min_ess_bulk", "diag_n_divergent")},
        "spearman_difficulty": float(rho),
        "mean_abs_diff_prediction": float(np.mean(diff)),
        "max_abs_diff_prediction": float(np.max(diff)),
        "mean_width_nuts": float(np.mean(wn)),
        "mean_width_laplace": float(np.mean(wl)),
        "covered_nuts": float(np.mean([r["nuts"][1] <= actual <= r["nuts"][2] for r in rows])),
        "covered_laplace": float(np.mean([r["laplace"][1] <= actual <= r["laplace"][2] for r in rows])),
        "load": os.getloadavg(),
    }
    print(json.dumps(out, indent=1, default=float))
    return out


def full_fit(args) -> dict:
    """The 2PL by NUTS on all 25 agents with defaults, against the MAP calibration."""
    from scipy import stats

    from hierbench.bayes import build_irt_2pl
    from hierbench.bayes import fit
    from hierbench.data import load_swebench_bash_only
    from hierbench.freq import fit_irt_ml

    data = load_swebench_bash_only()
    t0 = time.perf_counter()
    dt = fit(build_irt_2pl(data), rng=args.seed, posterior_predictive=False)
    secs = time.perf_counter() - t0
    if args.save:
        dt.to_netcdf(args.save)
    t0 = time.perf_counter()
    cal = fit_irt_ml(data, rng=args.seed)
    t_map = time.perf_counter() - t0
    post = dt["posterior"].to_dataset()
    out = {
        "nuts_seconds": secs,
        "map_seconds": t_map,
        "diag": {k: (v if isinstance(v, str) else float(v)) for k, v in dt.attrs.items() if k.startswith("diag_")},
        "load": os.getloadavg(),
    }
    for v, ml in (("difficulty", cal.estimate), ("discrimination", cal.discrimination), ("ability", cal.ability)):
        pm = post[v].mean(("chain", "draw"))
        out[f"spearman_{v}"] = float(stats.spearmanr(pm.values, ml.values).statistic)
        out[f"mean_abs_diff_{v}"] = float(np.abs(pm.values - ml.values).mean())
    print(json.dumps(out, indent=1))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--sizes", default=None, help="subset sizes (default 10,20,25,50,100; METR 10,20,40)")
    p.add_argument("--data", default="swe",
                   choices=["swe", "metr", "sim-fit", "sim-misfit", "swe-later", "metr-later", "verbagg"],
                   help="SWE-bench bash-only (one run per cell), METR's complete agents (repeated runs), or 25 "
                   "simulated agents on SWE-bench's item parameters: answering by the bank's 2PL (sim-fit) or "
                   "with one ability per task cluster (sim-misfit). Held out: swe-later / metr-later (banks "
                   "calibrated on the earlier submissions / releases only, the later ones scored) and verbagg "
                   "(lme4's VerbAgg, 316 persons x 24 items, a log the design code was not developed on)")
    p.add_argument("--selections", default="random_mean,assisted_random,assisted_adaptive,random,adaptive",
                   help="loo_study selections, comma-separated")
    p.add_argument("--working", default="2pl,1pl,none", help="candidate working models of the assisted selections")
    p.add_argument("--defensive", type=float, default=0.5, help="uniform weight of the assisted adaptive draws")
    p.add_argument("--workers", type=int, default=1, help="process-pool workers (1: serial; results identical)")
    p.add_argument("--sim-agents", type=int, default=25, help="simulated agents (sim-fit, sim-misfit)")
    p.add_argument("--skill-correlation", type=float, default=0.3, help="sim-misfit: correlation of the two skills")
    p.add_argument("--run-icc", default="estimate",
                   help="correlation of a cell's runs: 'estimate' (fit_irt_ml's default) or a number (0: binomial)")
    p.add_argument("--n-repeat", type=int, default=5,
                   help="repeats per agent of each selection that involves chance (random subsets, adaptive paths)")
    p.add_argument("--no-misfit", action="store_true", help="adaptive intervals without the misfit variance")
    p.add_argument("--summary", default=None, help="print the tables of a study saved with --save")
    p.add_argument("--criterion", default="variance", choices=["variance", "fisher"])
    p.add_argument("--seed", type=int, default=20261130)
    p.add_argument("--bank-draws", type=int, default=1000, help="Laplace draws per calibrated bank")
    p.add_argument("--model", default="2pl", choices=["2pl", "1pl"], help="the banks' IRT model")
    p.add_argument("--nuts-fold", type=int, default=None)
    p.add_argument("--full-fit", action="store_true")
    p.add_argument("--save", default=None, help="write the study Dataset / the fit as netCDF")
    p.add_argument("--out", default=None, help="write the summary as JSON")
    args = p.parse_args()
    os.environ.setdefault("HIERBENCH_SHARED_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
    if args.summary:
        res = summarise(xr.open_dataset(args.summary))
    elif args.full_fit:
        res = full_fit(args)
    elif args.nuts_fold is not None:
        res = nuts_fold(args)
    else:
        res = loo(args)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1, default=float)


if __name__ == "__main__":
    xr.set_options(keep_attrs=True)
    main()
