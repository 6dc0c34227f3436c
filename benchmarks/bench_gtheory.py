"""Benchmark: hierbench ``variance_components`` vs the ``generalizit`` package.

Brennan (2001) Synthetic Data Set No. 3 (p x i x o, 10 x 4 x 2, read from the
shared data folder). Both must give the same G-study (generalizit rounds its
table to 4 decimals, so values are compared at 4 decimals); the ratio of
median wall times is reported. ``generalizit`` is a benchmark-only
dependency (``pip install generalizit``), not a hierbench requirement.

Run: ``.venv/bin/python benchmarks/bench_gtheory.py [--repeats N]``
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd

from hierbench.freq import variance_components

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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--inner", type=int, default=200, help="hierbench calls per timed repeat")
    args = ap.parse_args()
    raw = pd.read_csv(DATA / "gtheory" / "brennan2001_synthetic3_pxixo.csv")
    df = raw.rename(columns={"person": "p", "item": "i", "occasion": "o"})
    da = raw.set_index(["person", "item", "occasion"])["score"].to_xarray()

    t_gen, t_ours, t_ours_df = [], [], []
    for _ in range(args.repeats):  # interleaved, so load on the machine hits both alike
        t0 = time.perf_counter()
        design = run_generalizit(df)
        t_gen.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(args.inner):
            vc = variance_components(da, design="crossed")
            vc.e_rho2, vc.phi  # noqa: B018  (the coefficients are part of the work)
        t_ours.append((time.perf_counter() - t0) / args.inner)
        t0 = time.perf_counter()
        for _ in range(args.inner):
            da2 = raw.set_index(["person", "item", "occasion"])["score"].to_xarray()
            variance_components(da2, design="crossed")
        t_ours_df.append((time.perf_counter() - t0) / args.inner)

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
    g = design.g_coeffs_table.loc["p"]
    same_g = round(vc.e_rho2, 4) == float(g["rho^2"]) and round(vc.phi, 4) == float(g["phi^2"])
    print("component      hierbench      generalizit")
    for k, o in zip(theirs.index, ours, strict=True):
        print(f"{names[k]:16s} {o:12.6f} {float(theirs[k]):10.4f}")
    print(
        f"E rho^2 {vc.e_rho2:.6f} vs {float(g['rho^2']):.4f}; Phi {vc.phi:.6f} vs {float(g['phi^2']):.4f}"
    )
    print(f"identical at generalizit's 4 decimals: components {same}, coefficients {same_g}")
    m_gen, m_ours, m_df = (statistics.median(t) for t in (t_gen, t_ours, t_ours_df))
    print(
        f"generalizit median {m_gen * 1e3:.1f} ms; hierbench {m_ours * 1e6:.0f} us "
        f"(from a DataFrame incl. conversion: {m_df * 1e6:.0f} us)"
    )
    print(f"speed-up: {m_gen / m_ours:.0f}x (incl. DataFrame conversion: {m_gen / m_df:.0f}x)")


if __name__ == "__main__":
    main()
