"""Benchmark: hierbench's G-theory (balanced closed form vs ``generalizit``; unbalanced METR REML)
and a coverage study of its intervals.

1. Brennan (2001) Synthetic Data Set No. 3 (p x i x o, 10 x 4 x 2). Both packages must give
   the same G-study (generalizit rounds its table to 4 decimals). Timed two ways:
   from ready arrays (an xarray DataArray already built) and from the same long
   DataFrame that generalizit receives (hierbench's DataFrame route with a design string, and
   the DataFrame -> xarray conversion route). Median wall times, interleaved repeats.
2. METR (runs nested in agent x task cells, tasks nested in 36 families, ragged): the REML fit
   with intervals, median of ``--metr-repeats`` calls.
3. Coverage of the 95% intervals (Wald on the log scale and profile REML likelihood) of each
   component and of E rho^2 on an unbalanced nested design (run:task:family, 10, 20 and 40
   families of 1-5 tasks, 1-6 runs per task), ``--n-sim`` data sets each, fixed seed, Wilson
   95% band of each coverage.

``generalizit`` is a benchmark-only dependency (``pip install hierbench[bench]``).

Run: ``python benchmarks/bench_gtheory.py [--repeats N] [--n-sim N]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from hierbench.freq import variance_components, wilson_interval

DATA = Path(
    os.environ.get("HIERBENCH_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def run_generalizit(df: pd.DataFrame):
    from generalizit import GeneralizIT

    with contextlib.redirect_stdout(io.StringIO()):  # it prints progress messages
        gt = GeneralizIT(df, "p x i x o", "score")
        gt.calculate_anova()
        gt.calculate_g_coefficients()
    return gt.design


def bench_balanced(repeats: int, inner: int) -> None:
    raw = pd.read_csv(DATA / "gtheory" / "brennan2001_synthetic3_pxixo.csv")
    df = raw.rename(columns={"person": "p", "item": "i", "occasion": "o"})
    da = raw.set_index(["person", "item", "occasion"])["score"].to_xarray()

    def ours_arrays():
        vc = variance_components(da, design="crossed")
        return vc, vc.e_rho2, vc.phi

    def ours_frame():  # the same DataFrame generalizit gets, through the design language
        vc = variance_components(df, design="p*i*o", var="score", measurement="p")
        return vc, vc.e_rho2, vc.phi

    def ours_frame_xr():  # the same DataFrame, converted to xarray first
        d2 = df.set_index(["p", "i", "o"])["score"].to_xarray()
        vc = variance_components(d2, design="crossed")
        return vc, vc.e_rho2, vc.phi

    t = {"generalizit": [], "arrays": [], "frame": [], "frame_xr": []}
    for _ in range(repeats):  # interleaved, so load on the machine hits all alike
        t0 = time.perf_counter()
        design = run_generalizit(df)
        t["generalizit"].append(time.perf_counter() - t0)
        for key, fn in (
            ("arrays", ours_arrays),
            ("frame", ours_frame),
            ("frame_xr", ours_frame_xr),
        ):
            t0 = time.perf_counter()
            for _ in range(inner):
                out = fn()
            t[key].append((time.perf_counter() - t0) / inner)
            if key == "frame":
                vc_frame = out[0]
            if key == "arrays":
                vc = out[0]
    theirs = design.anova_table["Variance"].drop("mean")
    names = {
        "p": "person",
        "i": "item",
        "o": "occasion",
        "p x i": "person:item",
        "p x o": "person:occasion",
        "i x o": "item:occasion",
        "p x i x o": "residual",
    }
    ours = np.array([float(vc.components.sel(component=names[k])) for k in theirs.index])
    same = np.array_equal(np.round(ours, 4), theirs.to_numpy(dtype=float))
    frame_names = {
        "person": "p",
        "item": "i",
        "occasion": "o",
        "person:item": "p:i",
        "person:occasion": "p:o",
        "item:occasion": "i:o",
        "residual": "residual",
    }
    ours_f = np.array(
        [float(vc_frame.components.sel(component=frame_names[names[k]])) for k in theirs.index]
    )
    g = design.g_coeffs_table.loc["p"]
    same_g = round(vc.e_rho2, 4) == float(g["rho^2"]) and round(vc.phi, 4) == float(g["phi^2"])
    print("component      hierbench      generalizit")
    for k, o in zip(theirs.index, ours, strict=True):
        print(f"{names[k]:16s} {o:12.6f} {float(theirs[k]):10.4f}")
    print(
        f"E rho^2 {vc.e_rho2:.6f} vs {float(g['rho^2']):.4f}; Phi {vc.phi:.6f} vs {float(g['phi^2']):.4f}"
    )
    print(
        f"identical at generalizit's 4 decimals: components {same}, coefficients {same_g}; "
        f"DataFrame route equal to array route: {np.allclose(ours_f, ours, rtol=1e-12)}"
    )
    m = {k: statistics.median(v) for k, v in t.items()}
    print(f"generalizit median {m['generalizit'] * 1e3:.1f} ms")
    print("| hierbench input | median | speed-up vs generalizit |")
    print("|---|---|---|")
    for key, label in (
        ("arrays", "ready xarray DataArray"),
        ("frame", "same DataFrame, design='p*i*o'"),
        ("frame_xr", "same DataFrame -> to_xarray -> design='crossed'"),
    ):
        print(f"| {label} | {m[key] * 1e6:.0f} us | {m['generalizit'] / m[key]:.0f}x |")


def bench_metr(repeats: int) -> None:
    from hierbench.data import load_metr

    ds = load_metr()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        vc = variance_components(ds)
        times.append(time.perf_counter() - t0)
    print(
        f"METR REML ({vc.formula}, {vc.n_obs} runs, {vc.fit_info['n_cells']} cells, "
        f"{vc.fit_info['n_random_levels']} random levels above the cell): median "
        f"{statistics.median(times):.2f} s, min {min(times):.2f} s over {repeats} "
        f"(function evaluations {vc.fit_info['nfev']}; converged {vc.fit_info['converged']})"
    )
    print(vc.to_frame().to_string())
    print(f"load average at the end: {os.getloadavg()}")


def _sim_nested(rng, n_family, s):
    rows = []
    fam = rng.normal(0, np.sqrt(s[0]), n_family)
    for f in range(n_family):
        for t in range(rng.integers(1, 6)):
            te = rng.normal(0, np.sqrt(s[1]))
            for r in range(rng.integers(1, 7)):
                rows.append((f"f{f}", f"t{t}", r, 2.0 + fam[f] + te + rng.normal(0, np.sqrt(s[2]))))
    return pd.DataFrame(rows, columns=["family", "task", "run", "y"])


def bench_coverage(n_sim: int, n_family: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = np.array([0.5, 1.0, 0.8])
    # E rho^2 for object of measurement = family, at the design's mean sizes: tasks per family
    # 3, runs per task 3.5 (the D-study uses the G-study's mean sizes per data set)
    kinds = ("wald", "profile")
    hits = {k: np.zeros(4) for k in kinds}
    miss_lo = {k: np.zeros(4) for k in kinds}  # truth below the interval
    width = {k: [] for k in kinds}
    t0 = time.perf_counter()
    for _ in range(n_sim):
        df = _sim_nested(rng, n_family, truth)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vc = variance_components(df, design="run:task:family", var="y", measurement="family")
            nt, nr = vc.sizes["task"], vc.sizes["run"]
            true_rho = truth[0] / (truth[0] + truth[1] / nt + truth[2] / (nt * nr))
            tv = np.r_[truth, true_rho]
            for kind in kinds:
                ci = vc.profile_ci() if kind == "profile" else vc.wald_ci()
                co = vc.coefficients(ci=kind)["ci"].sel(coefficient="e_rho2").values
                b = np.vstack([ci.values, co[None, :]])
                hits[kind] += (b[:, 0] <= tv) & (tv <= b[:, 1])
                miss_lo[kind] += tv < b[:, 0]
                width[kind].append(b[:, 1] - b[:, 0])
    el = time.perf_counter() - t0
    print(
        f"coverage of nominal 95% intervals, {n_sim} unbalanced nested data sets "
        f"({n_family} families of 1-5 tasks, 1-6 runs per task; truth 0.5 / 1.0 / 0.8), "
        f"seed {seed}, {el / n_sim * 1e3:.0f} ms per data set (fit + both kinds)"
    )
    print("| quantity | kind | coverage | Wilson 95% band | truth below / above | median width |")
    print("|---|---|---|---|---|---|")
    for k, name in enumerate(["family", "task:family", "residual", "E rho^2 (family)"]):
        for kind in kinds:
            h = hits[kind][k]
            band = wilson_interval(h, n_sim, prob=0.95)
            lo, hi = np.asarray(getattr(band, "ci", band).values).ravel()[:2]
            below = int(miss_lo[kind][k])
            above = int(n_sim - h - below)
            med = float(np.nanmedian(np.array(width[kind])[:, k]))
            print(
                f"| {name} | {kind} | {h / n_sim:.3f} | [{lo:.3f}, {hi:.3f}] | "
                f"{below} / {above} | {med:.3g} |",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--inner", type=int, default=200, help="hierbench calls per timed repeat")
    ap.add_argument("--metr-repeats", type=int, default=5)
    ap.add_argument("--n-sim", type=int, default=1000)
    ap.add_argument("--n-family", type=int, nargs="*", default=[10, 20, 40])
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--skip", nargs="*", default=[], choices=["balanced", "metr", "coverage"])
    args = ap.parse_args()
    print(f"load average at the start: {os.getloadavg()}")
    if "balanced" not in args.skip:
        bench_balanced(args.repeats, args.inner)
    if "metr" not in args.skip:
        bench_metr(args.metr_repeats)
    if "coverage" not in args.skip:
        for nf in args.n_family:
            bench_coverage(args.n_sim, nf, args.seed)


if __name__ == "__main__":
    main()
