"""Benchmark: hierbench.freq.bootstrap_ci against scipy.stats.bootstrap.

Two cases, same process, timings are medians of interleaved repeats:

1. SWE-bench Verified bash-only, all 25 agents x 500 tasks (one run each):
   10,000 tasks-scheme resamples, percentile and BCa. hierbench draws one
   task resample shared by every agent (what paired comparisons need) and
   computes all agents with matrix products; scipy is looped over agents
   (each agent its own resample: scipy cannot share one).
2. One agent, T = 2,000 tasks x R = 10 runs (simulated), 10,000 resamples.
   Its per-task means take at most 11 values, so hierbench draws multinomial
   counts over those values (the same bootstrap law, exactly).
3. One agent, T = 2,000 tasks with continuous (partial-credit) scores: every
   task has its own value, so hierbench indexes drawn tasks as scipy does.

Two scipy baselines: ``scipy loop`` calls ``scipy.stats.bootstrap`` once per
agent (each agent its own resamples); ``scipy batched`` makes one call on the
(agents, tasks) array with ``axis=-1`` and ``vectorized=True``, which draws one
set of task indices shared by every agent, as hierbench does (the fair
like-for-like baseline). Both ratios are printed.

All start from the eval dataset (the time includes averaging runs within
tasks), resample single tasks (``cluster=None``: scipy has no cluster level)
and use per-task mean scores. The two sides use different seeds, and the
intervals are compared with a Monte Carlo tolerance: 4 sqrt(2) x the
sampling SD of a bootstrap 2.5% quantile, and at least two lattice steps
2 / T (one binary run per task puts the bootstrap mean on a lattice).

Measured 2026-11-30, 3 repeats, load average 27-30 on 2 cores (absolute
times inflated; ratios from interleaved runs): scipy loop / hierbench and
scipy batched / hierbench =
SWE-bench percentile 22.5x / 26.0x, BCa 19.5x / 17.7x; T=2000 x R=10
percentile 16.1x / 18.2x, BCa 15.8x / 10.4x; partial credit percentile
3.7x / 2.7x, BCa 4.6x / 5.3x; every interval the same within MC tolerance.
(The batched call holds all agents' resamples at once, 25 x 10,000 x 500
floats for SWE-bench, which is why it is no faster than the loop there.)

Run: ``.venv/bin/python benchmarks/bench_bootstrap.py [--repeats 5]``.
Set ``HIERBENCH_SHARED_DATA`` if the data are not in ``../shared/data``.
"""

from __future__ import annotations

import os

# Single-threaded BLAS for both sides: scipy.stats.bootstrap never calls BLAS, and on
# a shared, loaded machine idle BLAS threads spinning after each product slow the
# rest of the computation down (measured: 2x). Set before numpy is imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
from scipy import stats  # noqa: E402

from hierbench.data import load_swebench_bash_only  # noqa: E402
from hierbench.freq import bootstrap_ci  # noqa: E402
from hierbench.testing import simulate_eval  # noqa: E402

B = 10_000


def _mc_tol(sd: np.ndarray, n_tasks: int) -> np.ndarray:
    """4 sqrt(2) MC SDs of a 2.5% bootstrap quantile, and at least two lattice steps.

    With one binary run per task the bootstrap mean lives on the lattice
    ``j / T``, so two independent quantile estimates can differ by whole steps.
    """
    q = 0.025
    cont = 4 * np.sqrt(2) * sd * np.sqrt(q * (1 - q)) / (stats.norm.pdf(stats.norm.ppf(q)) * np.sqrt(B))
    return np.maximum(cont, 2.0 / n_tasks)


def _ours(ds, method: str, seed: int):
    res = bootstrap_ci(ds, method=method, n_resamples=B, cluster=None, rng=seed)
    return res.ci.values.reshape(-1, 2), res.standard_error.values.reshape(-1)


def _scipy(ds, method: str, seed: int):
    gen = np.random.default_rng(seed)
    per_task = ds.score.mean("run").values  # both sides start from the eval dataset
    out = []
    for row in per_task:
        row = row[np.isfinite(row)]
        r = stats.bootstrap((row,), np.mean, n_resamples=B, method="BCa" if method == "bca" else "percentile",
                            vectorized=True, rng=gen)
        out.append([r.confidence_interval.low, r.confidence_interval.high])
    return np.asarray(out)


def _scipy_batched(ds, method: str, seed: int):
    """One scipy call over all agents: resamples shared along the task axis."""
    gen = np.random.default_rng(seed)
    per_task = ds.score.mean("run").values
    if not np.isfinite(per_task).all():  # ragged agents cannot share one resample array
        return None
    r = stats.bootstrap((per_task,), np.mean, n_resamples=B, axis=-1,
                        method="BCa" if method == "bca" else "percentile", vectorized=True, rng=gen)
    return np.stack([np.atleast_1d(r.confidence_interval.low), np.atleast_1d(r.confidence_interval.high)], axis=1)


def _time(fn, repeats: int) -> tuple[float, object]:
    times, last = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        last = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), last


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    sw = load_swebench_bash_only()
    one, _ = simulate_eval(n_agents=1, n_tasks=2000, n_runs=10, rng=0)
    gen = np.random.default_rng(1)
    cont = xr.Dataset(
        {"score": (("agent", "task", "run"), gen.beta(2.0, 3.0, size=(1, 2000, 1)))},
        coords={"agent": ["partial-credit"]},
    )
    cases = {
        "swe-bench 25 agents x 500 tasks": sw,
        "one agent T=2000 x R=10": one,
        "one agent T=2000 partial credit": cont,
    }
    print(f"bootstrap_ci vs scipy.stats.bootstrap (looped per agent, and batched), {B} resamples, "
          f"median of {args.repeats} repeats; speed-up = scipy time / hierbench time")
    for name, ds in cases.items():
        per_task = ds.score.mean("run").values  # (agent, task)
        for method in ("percentile", "bca"):
            # interleave: ours, scipy loop, scipy batched, ours, ...
            t_o, t_s, t_b = [], [], []
            ours = ref = bat = None
            for rep in range(args.repeats):
                t, ours = _time(lambda: _ours(ds, method, rep), 1)  # noqa: B023
                t_o.append(t)
                t, ref = _time(lambda: _scipy(ds, method, 1000 + rep), 1)  # noqa: B023
                t_s.append(t)
                t, bat = _time(lambda: _scipy_batched(ds, method, 2000 + rep), 1)  # noqa: B023
                t_b.append(t)
            mo, ms, mb = statistics.median(t_o), statistics.median(t_s), statistics.median(t_b)
            ci, sd = ours  # type: ignore[misc]
            tol = _mc_tol(sd, per_task.shape[1])[:, None]
            diff = np.abs(ci - ref)
            ok = np.isfinite(ci).all(1) & np.isfinite(ref).all(1)
            within = bool((diff[ok] <= tol[ok] + 1e-12).all())
            bat_txt = "scipy batched n/a (ragged)"
            if bat is not None:
                okb = ok & np.isfinite(bat).all(1)
                within_b = bool((np.abs(ci - bat)[okb] <= tol[okb] + 1e-12).all())
                bat_txt = (f"scipy batched {mb * 1e3:8.1f} ms  x{mb / mo:6.1f}  "
                           f"(batched same within MC: {within_b})")
            print(
                f"{name:34s} {method:10s} load {os.getloadavg()[0]:5.2f}  hierbench {mo * 1e3:8.1f} ms  "
                f"scipy loop {ms * 1e3:8.1f} ms  x{ms / mo:6.1f}  {bat_txt}  max |ci diff| {np.nanmax(diff[ok]):.4f} "
                f"(MC tol {np.nanmin(tol[ok]):.4f}-{np.nanmax(tol[ok]):.4f}) loop same within MC: {within}"
                + (f"  [{int((~ok).sum())} agents with a degenerate interval skipped]" if (~ok).any() else "")
            )


if __name__ == "__main__":
    main()
