"""Benchmark: hierbench's G-theory against ``generalizit``, on METR, and its interval coverage.

Balanced closed form vs ``generalizit``; unbalanced METR REML; a coverage study of the
intervals.

1. Brennan (2001) Synthetic Data Set No. 3 (p x i x o, 10 x 4 x 2). Both packages must give
   the same G-study (generalizit rounds its table to 4 decimals). Timed two ways:
   from ready arrays (an xarray DataArray already built) and from the same long
   DataFrame that generalizit receives (hierbench's DataFrame route with a design string, and
   the DataFrame -> xarray conversion route). Median wall times, interleaved repeats, speed-ups
   over generalizit from the same run.
2. METR (runs nested in agent x task cells, tasks nested in 36 families, ragged): the REML fit
   with intervals, median of ``--metr-repeats`` calls.
3. Coverage of the 95% intervals (Wald on the log scale and profile REML likelihood) of each
   component and of E rho^2 on an unbalanced nested design (run:task:family, 10, 20 and 40
   families of 1-5 tasks, 1-6 runs per task), ``--n-sim`` data sets each, fixed seed, Wilson
   95% band of each coverage.

``generalizit`` is a benchmark-only dependency (``pip install hierbench[bench]``); without it
part 1 is skipped with a message.

Run: ``python benchmarks/bench_gtheory.py [--repeats N] [--n-sim N]``; the smallest run:
``--repeats 1 --inner 2 --metr-repeats 1 --n-sim 2 --n-family 10``.
"""

from __future__ import annotations

import contextlib
import io
import warnings

import numpy as np
import pandas as pd
from _harness import Bench
from _harness import parser

from hierbench.data import load_metr
from hierbench.data import shared_data_dir
from hierbench.freq import variance_components
from hierbench.freq import wilson_interval

#: generalizit's component labels -> hierbench's (array route)
NAMES = {
    "p": "person",
    "i": "item",
    "o": "occasion",
    "p x i": "person:item",
    "p x o": "person:occasion",
    "i x o": "item:occasion",
    "p x i x o": "residual",
}
#: hierbench's labels on the array route -> on the DataFrame route (design 'p*i*o')
FRAME_NAMES = {
    "person": "p",
    "item": "i",
    "occasion": "o",
    "person:item": "p:i",
    "person:occasion": "p:o",
    "item:occasion": "i:o",
    "residual": "residual",
}


def run_generalizit(df: pd.DataFrame):
    """Fit the p x i x o G-study with generalizit; return its design object."""
    from generalizit import GeneralizIT

    with contextlib.redirect_stdout(io.StringIO()):  # it prints progress messages
        gt = GeneralizIT(df, "p x i x o", "score")
        gt.calculate_anova()
        gt.calculate_g_coefficients()
    return gt.design


def _contenders(df: pd.DataFrame, da) -> dict:
    def ours_arrays():
        return variance_components(da, design="crossed")

    def ours_frame():  # the same DataFrame generalizit gets, through the design language
        return variance_components(df, design="p*i*o", var="score", measurement="p")

    def ours_frame_xr():  # the same DataFrame, converted to xarray first
        d2 = df.set_index(["p", "i", "o"])["score"].to_xarray()
        return variance_components(d2, design="crossed")

    def with_coefficients(fn):
        def call():
            vc = fn()
            return vc, vc.e_rho2, vc.phi

        return call

    return {
        "generalizit": lambda: run_generalizit(df),
        "ready xarray DataArray": with_coefficients(ours_arrays),
        "same DataFrame, design='p*i*o'": with_coefficients(ours_frame),
        "same DataFrame -> to_xarray -> design='crossed'": with_coefficients(ours_frame_xr),
    }


def bench_balanced(bench: Bench, repeats: int, inner: int) -> None:
    """Part 1: the same G-study as generalizit, and the timings against it."""
    try:
        import generalizit  # noqa: F401
    except ImportError:
        print("part 1 skipped: generalizit is not installed (pip install hierbench[bench])")
        return
    raw = pd.read_csv(shared_data_dir() / "gtheory" / "brennan2001_synthetic3_pxixo.csv")
    df = raw.rename(columns={"person": "p", "item": "i", "occasion": "o"})
    da = raw.set_index(["person", "item", "occasion"])["score"].to_xarray()
    fns = _contenders(df, da)
    # interleaved, so load on the machine hits all alike; hierbench's calls are ~1000x
    # quicker, so each of its timed rounds makes `inner` calls (time reported per call)
    med = bench.compare(
        "Brennan p x i x o G-study",
        fns,
        repeats=repeats,
        baseline="generalizit",
        number={k: inner for k in fns if k != "generalizit"},
    )
    design = bench.last["generalizit"]
    vc = bench.last["ready xarray DataArray"][0]
    vc_frame = bench.last["same DataFrame, design='p*i*o'"][0]
    _check_balanced(bench, design, vc, vc_frame)
    print("| hierbench input | median | speed-up vs generalizit |")
    print("|---|---|---|")
    for key in list(fns)[1:]:
        print(f"| {key} | {med[key] * 1e6:.0f} us | {med['generalizit'] / med[key]:.0f}x |")


def _check_balanced(bench: Bench, design, vc, vc_frame) -> None:
    theirs = design.anova_table["Variance"].drop("mean")
    ours = np.array([float(vc.components.sel(component=NAMES[k])) for k in theirs.index])
    ours_f = np.array(
        [float(vc_frame.components.sel(component=FRAME_NAMES[NAMES[k]])) for k in theirs.index]
    )
    g = design.g_coeffs_table.loc["p"]
    print("component      hierbench      generalizit")
    for k, o in zip(theirs.index, ours, strict=True):
        print(f"{NAMES[k]:16s} {o:12.6f} {float(theirs[k]):10.4f}")
    print(
        f"E rho^2 {vc.e_rho2:.6f} vs {float(g['rho^2']):.4f}; Phi {vc.phi:.6f} vs {float(g['phi^2']):.4f}"
    )
    bench.record(
        "components identical at generalizit's 4 decimals",
        bool(np.array_equal(np.round(ours, 4), theirs.to_numpy(dtype=float))),
    )
    bench.record(
        "coefficients identical at generalizit's 4 decimals",
        bool(round(vc.e_rho2, 4) == float(g["rho^2"]) and round(vc.phi, 4) == float(g["phi^2"])),
    )
    bench.record(
        "DataFrame route equal to array route", bool(np.allclose(ours_f, ours, rtol=1e-12))
    )


def bench_metr(bench: Bench, repeats: int) -> None:
    """Part 2: the REML fit of METR's ragged nested design."""
    ds = load_metr()
    bench.time("METR REML", lambda: variance_components(ds), repeats=repeats, warmup=0)
    vc = bench.last[""]
    bench.record("METR REML formula", vc.formula)
    bench.record("METR runs", int(vc.n_obs))
    bench.record("METR cells", vc.fit_info["n_cells"])
    bench.record("METR random levels above the cell", vc.fit_info["n_random_levels"])
    bench.record("METR function evaluations", vc.fit_info["nfev"])
    bench.record("METR converged", bool(vc.fit_info["converged"]))
    print(vc.to_frame().to_string())


def _sim_nested(rng, n_family, s):
    rows = []
    fam = rng.normal(0, np.sqrt(s[0]), n_family)
    for f in range(n_family):
        for t in range(rng.integers(1, 6)):
            te = rng.normal(0, np.sqrt(s[1]))
            for r in range(rng.integers(1, 7)):
                rows.append((f"f{f}", f"t{t}", r, 2.0 + fam[f] + te + rng.normal(0, np.sqrt(s[2]))))
    return pd.DataFrame(rows, columns=["family", "task", "run", "y"])


KINDS = ("wald", "profile")
QUANTITIES = ("family", "task:family", "residual", "E rho^2 (family)")


def _one_data_set(rng: np.random.Generator, n_family: int, truth: np.ndarray) -> dict:
    """Simulate, fit and return each kind's (lower, upper) of the 3 components and E rho^2, and the truth."""
    df = _sim_nested(rng, n_family, truth)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(df, design="run:task:family", var="y", measurement="family")
        # E rho^2 for object of measurement = family, at the design's own sizes as the D-study
        # reads them: mean tasks per family, and the harmonic mean of runs per task (a
        # family's mean weighs every task's mean alike)
        nt = vc.sizes["task"]
        nr = 1 / float((1 / df.groupby(["family", "task"]).size()).mean())
        true_rho = truth[0] / (truth[0] + truth[1] / nt + truth[2] / (nt * nr))
        out = {"truth": np.r_[truth, true_rho]}
        for kind in KINDS:
            ci = vc.profile_ci() if kind == "profile" else vc.wald_ci()
            co = vc.coefficients(ci=kind)["ci"].sel(coefficient="e_rho2").values
            out[kind] = np.vstack([ci.values, co[None, :]])
    return out


def bench_coverage(bench: Bench, n_sim: int, n_family: int, seed: int) -> None:
    """Part 3: coverage of the Wald and profile intervals on simulated unbalanced data."""
    rng = np.random.default_rng(seed)
    truth = np.array([0.5, 1.0, 0.8])
    print(
        f"coverage of nominal 95% intervals, {n_sim} unbalanced nested data sets "
        f"({n_family} families of 1-5 tasks, 1-6 runs per task; truth 0.5 / 1.0 / 0.8), seed {seed}"
    )
    sets: list[dict] = []
    bench.time(
        f"one data set, {n_family} families (fit + both kinds)",
        lambda: sets.append(_one_data_set(rng, n_family, truth)),
        repeats=n_sim,
        warmup=0,
    )
    tv = np.array([d["truth"] for d in sets])
    print("| quantity | kind | coverage | Wilson 95% band | truth below / above | median width |")
    print("|---|---|---|---|---|---|")
    for k, name in enumerate(QUANTITIES):
        for kind in KINDS:
            b = np.array([d[kind][k] for d in sets])
            h = int(((b[:, 0] <= tv[:, k]) & (tv[:, k] <= b[:, 1])).sum())
            below = int((tv[:, k] < b[:, 0]).sum())
            lo, hi = wilson_interval(h, n_sim, prob=0.95).values
            med = float(np.nanmedian(b[:, 1] - b[:, 0]))
            bench.record(f"coverage {n_family} families, {name}, {kind}", h / n_sim, show=False)
            print(
                f"| {name} | {kind} | {h / n_sim:.3f} | [{lo:.3f}, {hi:.3f}] | "
                f"{below} / {n_sim - h - below} | {med:.3g} |",
                flush=True,
            )


def main() -> None:
    """Run the parts not skipped."""
    ap = parser(__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--inner", type=int, default=200, help="hierbench calls per timed repeat")
    ap.add_argument("--metr-repeats", type=int, default=5)
    ap.add_argument("--n-sim", type=int, default=1000)
    ap.add_argument("--n-family", type=int, nargs="*", default=[10, 20, 40])
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--skip", nargs="*", default=[], choices=["balanced", "metr", "coverage"])
    args = ap.parse_args()
    with Bench("gtheory") as bench:
        if "balanced" not in args.skip:
            bench_balanced(bench, args.repeats, args.inner)
        if "metr" not in args.skip:
            bench_metr(bench, args.metr_repeats)
        if "coverage" not in args.skip:
            for nf in args.n_family:
                bench_coverage(bench, args.n_sim, nf, args.seed)


if __name__ == "__main__":
    main()
