"""Coverage of ``success_rate``'s 95% interval on partial-credit and 0/1 scores, before and after the skew widening.

Each design: ``T`` tasks, ``R`` runs per task, one simulated agent per replication (one
call of :func:`hierbench.freq.success_rate` scores every replication at once). Task ``t`` has
the logit-scale effect ``b_t ~ N(0, sd_task)`` around a centre ``a0`` chosen so that the mean
score of a task drawn afresh is the design's ``mean`` (exact, by Gauss-Hermite quadrature and
a root find); that mean is the truth. Three score models:

* ``logit-normal``: run score ``expit(a0 + b_t + e_tr)``, ``e_tr ~ N(0, 0.5)`` (the audit's
  law, finding 4); truth ``E expit(a0 + sqrt(sd_task^2 + 0.25) Z)``;
* ``beta``: run score ``~ Beta(mu_t phi, (1 - mu_t) phi)``, ``mu_t = expit(a0 + b_t)``,
  ``phi = 10``; truth ``E expit(a0 + sd_task Z)``;
* ``binary``: run score ``~ Bernoulli(mu_t)``, same truth (the 0/1 rule, which the widening
  leaves alone: the two columns must agree).

``before`` is the interval with the widening switched off (``_intervals._skew_widen``
returning the t interval: the rule before audit T finding 4), ``after`` the default. Printed:
per design coverage (and the share of misses above the truth), mean width, share of rows the
bound replaced, share of rows flagged, then a summary (minimum, designs below 0.93), then the
``after`` t rows of the partial-credit designs pooled, flagged (``_intervals.SKEW_FLAG``: partial credit
with a mean below 0.05 or above 0.95) or not, and the range of coverage by model and mean. Monte Carlo SE of a coverage ``p`` over
``reps`` rows: ``sqrt(p (1 - p) / reps)`` (0.0049 at 0.95 and 2,000). Fixed seeds: design
``i`` draws from ``default_rng(seed + i)``.

Usage::

    python benchmarks/bench_partial_credit_rate.py [--reps 2000] [--seed 7] [--out rows.csv] [--quick]

Measured 2026-12-07 with the defaults (360 designs x 2,000 replications, seed 7, 180 s; MC SE 0.0049):

    model         before: min, designs < 0.93 of 120   after: min, < 0.93   median width after / before
    logit-normal  0.883, 29                            0.920, 3             1.040
    beta          0.912, 3                             0.936, 0             1.026
    binary        0.944, 0                             0.944, 0 (identical) 1.000

The three logit-normal designs still below 0.93 have 10 tasks and a mean of 0.03-0.07 (0.920,
0.924, 0.930); at 20-100 tasks the least is 0.935 (mean 0.03). The widening costs width where
the t interval already covered: at 10 tasks and means 0.3-0.5, 0.942-0.978 became 0.956-0.988
(widths 1.07-1.29 times). Pooled over the partial-credit designs, the t rows ``SKEW_FLAG``
marks (a mean below 0.05) covered 0.887 +- 0.001, the other t rows 0.957 +- 0.0004.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import time
import warnings

import numpy as np
import pandas as pd
import xarray as xr
from scipy.optimize import brentq
from scipy.special import expit

MEANS, TASKS, RUNS, SDS = (0.03, 0.07, 0.15, 0.3, 0.5), (10, 20, 50, 100), (1, 3, 5), (1.0, 2.0)
MODELS = ("logit-normal", "beta", "binary")
RUN_SD, PHI = 0.5, 10.0
_X, _W = np.polynomial.hermite_e.hermegauss(160)
_W = _W / _W.sum()


def truth(a0: float, sd_task: float, model: str) -> float:
    """Mean score of a task drawn afresh: ``E expit(a0 + s Z)`` by Gauss-Hermite quadrature."""
    s = np.hypot(sd_task, RUN_SD) if model == "logit-normal" else sd_task
    return float((expit(a0 + s * _X) * _W).sum())


def centre(mean: float, sd_task: float, model: str) -> float:
    """The ``a0`` whose truth is ``mean``."""
    return brentq(lambda a: truth(a, sd_task, model) - mean, -40, 40, xtol=1e-13)


def draw(rng: np.random.Generator, model: str, a0: float, sd_task: float, reps: int, T: int, R: int) -> np.ndarray:
    """``(reps, T, R)`` run scores of one design."""
    b = rng.normal(0.0, sd_task, (reps, T))[..., None]
    if model == "logit-normal":
        return expit(a0 + b + rng.normal(0.0, RUN_SD, (reps, T, R)))
    mu = np.broadcast_to(expit(a0 + b), (reps, T, R))
    if model == "beta":
        return np.clip(rng.beta(mu * PHI, (1 - mu) * PHI), 0.0, 1.0)
    return (rng.random((reps, T, R)) < mu).astype(float)


@contextlib.contextmanager
def before():
    """The interval before the fix: the widening returns the t interval unchanged."""
    import hierbench.freq._rates._intervals as mod

    saved = mod._skew_widen
    mod._skew_widen = lambda cell, micro, se, df, bounds, *a, **k: (*bounds, 0)
    try:
        yield
    finally:
        mod._skew_widen = saved


def one(y: np.ndarray, tv: float) -> tuple[dict, pd.DataFrame]:
    """Coverage, misses above, width, bound and flag shares of one design; its rows (mean, n_eff, covered)."""
    from hierbench.freq import success_rate

    ds = xr.Dataset({"score": (("agent", "task", "run"), y)})
    out, rows = {}, None
    for name, ctx in (("before", before()), ("after", contextlib.nullcontext())):
        with ctx, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = success_rate(ds)
        lo, hi = res.ci.values[:, 0], res.ci.values[:, 1]
        cov = (lo <= tv) & (tv <= hi)
        out[f"{name}"] = cov.mean()
        out[f"{name}_above"] = np.mean(tv > hi)
        out[f"{name}_width"] = np.nanmean(hi - lo)
        if name == "after":
            flag = np.asarray(res.ci_flag.values, dtype=object)
            out["bound"] = np.mean(res.ci_kind.values == "bounded-mean")
            out["flagged"] = np.mean([f.startswith("skewed") for f in flag])
            rows = pd.DataFrame({"m": res.micro.values, "covered": cov,
                                 "t_row": res.ci_kind.values == "t", "flagged": [f.startswith("skewed") for f in flag]})
    return out, rows


def grid(reps: int, seed: int, quick: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every design of the grid (``quick``: T in 10, 50 and R in 1, 3 only)."""
    tasks, runs = ((10, 50), (1, 3)) if quick else (TASKS, RUNS)
    table, pooled = [], []
    for i, (model, mean, T, R, sd) in enumerate(itertools.product(MODELS, MEANS, tasks, runs, SDS)):
        a0 = centre(mean, sd, model)
        tv = truth(a0, sd, model)
        y = draw(np.random.default_rng(seed + i), model, a0, sd, reps, T, R)
        got, rows = one(y, tv)
        table.append({"model": model, "mean": mean, "T": T, "R": R, "sd_task": sd, **got})
        if model != "binary":
            pooled.append(rows.assign(T=T))
    return pd.DataFrame(table), pd.concat(pooled, ignore_index=True)


def summary(table: pd.DataFrame, pooled: pd.DataFrame, reps: int) -> None:
    """Print the design table, the summary by model and the pooled calibration of the flag."""
    pd.set_option("display.width", 200)
    pd.set_option("display.max_rows", 1000)
    show = table.copy()
    for c in show.columns[5:]:
        show[c] = show[c].round(3)
    print(show.to_string(index=False))
    print(f"\nMonte Carlo SE of a coverage near 0.95: {np.sqrt(0.95 * 0.05 / reps):.4f} ({reps} replications)")
    for model, t in table.groupby("model", sort=False):
        print(f"{model}: before min {t.before.min():.3f}, below 0.93 in {int((t.before < 0.93).sum())} of {len(t)}; "
              f"after min {t.after.min():.3f}, below 0.93 in {int((t.after < 0.93).sum())}; "
              f"median width ratio after / before {np.median(t.after_width / t.before_width):.3f}; "
              f"max |after - before| {np.max(np.abs(t.after - t.before)):.4f}")
    t_rows = pooled[pooled.t_row]
    for name, part in (("flagged (SKEW_FLAG)", t_rows[t_rows.flagged]), ("other", t_rows[~t_rows.flagged])):
        p = part.covered.mean()
        print(f"after, partial-credit t rows pooled, {name}: {len(part)} of {len(pooled)} rows, coverage {p:.4f} "
              f"+- {np.sqrt(p * (1 - p) / max(len(part), 1)):.4f}")
    for model, t in table[table.model != "binary"].groupby("model", sort=False):
        for mean, tm in t.groupby("mean"):
            print(f"{model} at mean {mean}: before {tm.before.min():.3f}-{tm.before.max():.3f}, "
                  f"after {tm.after.min():.3f}-{tm.after.max():.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=None, help="write the design table as CSV")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    t0 = time.perf_counter()
    table, pooled = grid(a.reps, a.seed, a.quick)
    summary(table, pooled, a.reps)
    if a.out:
        table.to_csv(a.out, index=False)
    print(f"\n{len(table)} designs x {a.reps} replications in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
