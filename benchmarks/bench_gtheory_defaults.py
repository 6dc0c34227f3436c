"""Benchmark: ``variance_components`` with its DEFAULTS on real data and awkward shapes.

Every real data set in ``../shared/data`` it applies to, and awkward simulated shapes.

One row per data set: method, converged, the warnings raised (class names), whether the
component intervals and the coefficient intervals are all finite (or the note says why
not), ci kind, and wall times of the fit, of ``vc.ci`` and of ``vc.coefficients()``, with
the 1-minute load average at the start of the row. No peer: the figures are hierbench's own.

Run: ``nice python benchmarks/bench_gtheory_defaults.py [--only NAME ...] [--skip NAME ...]``;
the smallest run: ``--only dyestuff``.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np
import pandas as pd
from _harness import Bench
from _harness import parser

import hierbench as hb
from hierbench.data import from_records
from hierbench.data import shared_data_dir
from hierbench.freq import variance_components
from hierbench.testing import simulate_eval


def _lme4(name):
    return pd.read_csv(shared_data_dir() / "lme4" / name)


def _insteval():
    d = pd.read_csv(shared_data_dir() / "lme4" / "insteval.csv.gz")
    return d, {"design": "s*d", "var": "y"}


def _sim(**kw):
    ds, _ = simulate_eval(**kw)
    return ds


def _near01():
    ds, _ = simulate_eval(n_agents=5, n_tasks=60, n_runs=3, rng=3)
    s = ds["score"].values.copy()
    rng = np.random.default_rng(3)
    s[:] = (rng.random(s.shape) < 0.02).astype(float)
    return ds.assign(score=(ds["score"].dims, s)), {}


def _ragged_fam1():
    rng = np.random.default_rng(4)
    rows = []
    for f in range(30):
        nt = 1 if f < 10 else rng.integers(2, 5)
        for t in range(nt):
            for a in range(5):
                for r in range(rng.integers(1, 6)):
                    rows.append((f"a{a}", f"f{f}t{t}", r, f"f{f}", float(rng.random() < 0.4)))
    df = pd.DataFrame(rows, columns=["agent", "task", "run", "cluster", "score"])
    return from_records(
        df, agent="agent", task="task", run="run", score="score", cluster="cluster"
    ), {}


def _big_sim():  # SWE-bench-like shape, simulated, for held-back-log robustness
    rng = np.random.default_rng(5)
    M, T, K = 30, 800, 40
    fam = rng.integers(0, K, T)
    eta = (
        rng.normal(0, 1, M)[:, None]
        + rng.normal(0, 1.5, T)[None, :]
        + rng.normal(0, 0.7, K)[fam][None, :]
    )
    p = 1 / (1 + np.exp(-(eta - 0.5)))
    y = (rng.random((M, T)) < p).astype(float)
    df = pd.DataFrame(
        {
            "agent": np.repeat(np.arange(M), T),
            "task": np.tile(np.arange(T), M),
            "cluster": np.tile(fam, M),
            "score": y.ravel(),
            "run": 0,
        }
    )
    return from_records(
        df, agent="agent", task="task", run="run", score="score", cluster="cluster"
    ), {}


def cases():
    """Return each case's name and a function making its (data, keyword arguments)."""
    out = {}
    out["tau-bench (1 agent)"] = lambda: (hb.data.load_tau_bench_airline(), {})
    out["swe-bench (no clusters)"] = lambda: (
        hb.data.load_swebench_bash_only().drop_vars("cluster"),
        {},
    )
    out["swe-bench (repos)"] = lambda: (hb.data.load_swebench_bash_only(), {})
    out["metr binarised"] = lambda: (hb.data.load_metr(), {})
    out["metr continuous"] = lambda: (hb.data.load_metr(score="score"), {})
    out["brennan p*i*o"] = lambda: (
        pd.read_csv(shared_data_dir() / "gtheory" / "brennan2001_synthetic3_pxixo.csv"),
        {"design": "person*item*occasion"},
    )
    out["dyestuff rep:batch"] = lambda: (
        _lme4("dyestuff.csv").assign(rep=lambda d: d.groupby("Batch").cumcount()),
        {"design": "rep:Batch", "var": "Yield"},
    )
    out["dyestuff2 rep:batch"] = lambda: (
        _lme4("dyestuff2.csv").assign(rep=lambda d: d.groupby("Batch").cumcount()),
        {"design": "rep:Batch", "var": "Yield"},
    )
    out["pastes"] = lambda: (
        _lme4("pastes.csv").assign(rep=lambda d: d.groupby("sample").cumcount()),
        {"design": "rep:cask:batch", "var": "strength"},
    )
    out["penicillin"] = lambda: (
        _lme4("penicillin.csv"),
        {"design": "plate*sample", "var": "diameter"},
    )
    out["insteval s*d (73k)"] = _insteval
    out["one agent, 1 run"] = lambda: (_sim(n_agents=1, n_tasks=40, n_runs=1, rng=1), {})
    out["1 run/cell 6x40"] = lambda: (_sim(n_agents=6, n_tasks=40, n_runs=1, rng=2), {})
    out["pass rate ~0.02"] = _near01
    out["ragged, 10 families of 1 task"] = _ragged_fam1
    out["sim 30x800, 40 fam, 1 run"] = _big_sim
    return out


def finite(a) -> bool:
    """Tell whether every value of ``a`` is finite."""
    return bool(np.isfinite(np.asarray(a)).all())


def run(name, make) -> dict:
    """Fit one case with the defaults; return its row."""
    load = os.getloadavg()[0]
    data, kw = make()
    row = {"data": name, "load": round(load, 1)}
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            vc = variance_components(data, **kw)
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {str(e)[:80]}"
            return row
        row["fit_s"] = round(time.perf_counter() - t0, 2)
        row["method"] = vc.method
        row["converged"] = vc.fit_info.get("converged", "n/a (anova)")
        t0 = time.perf_counter()
        ci = vc.ci
        row["ci_s"] = round(time.perf_counter() - t0, 2)
        row["ci_kind"] = ci.attrs["ci_kind"]
        row["ci_finite"] = finite(ci)
        t0 = time.perf_counter()
        try:
            co = vc.coefficients()
            row["coef_ci_finite"] = finite(co["ci"]) if vc.measurement else "n/a"
        except Exception as e:
            row["coef_ci_finite"] = f"{type(e).__name__}"
        row["coef_s"] = round(time.perf_counter() - t0, 2)
        try:
            vc.d_study(n_tasks=[100, 500]) if "task" in vc.components.component else None
        except Exception as e:
            row["d_study"] = type(e).__name__
        row["warnings"] = ",".join(sorted({x.category.__name__ for x in w})) or "-"
        row["note"] = (vc.note or "")[:60]
    return row


def main(argv=None):
    """Run every case (or those named) and print the table."""
    ap = parser(__doc__)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--skip", nargs="*", default=[])
    a = ap.parse_args(argv)
    rows = []
    with Bench("gtheory_defaults", argv) as bench:
        for name, make in cases().items():
            if a.only and not any(o in name for o in a.only):
                continue
            if any(s in name for s in a.skip):
                continue
            r = run(name, make)
            bench.record(name, r)
            rows.append(r)
        with pd.option_context("display.width", 250, "display.max_columns", 30):
            print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
