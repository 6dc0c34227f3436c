"""METR REML: hierbench's variance components against statsmodels' MixedLM on the same model.

Design ``run:(agent*(task:cluster))`` on METR's binarised scores (6,852 runs, ragged,
missing cells). statsmodels fits it as one group with five crossed variance
components (dense, slow: minutes to hours on a loaded machine). Two checks:

1. statsmodels' REML fit started at hierbench's estimate: hierbench's estimate is a
   stationary point of statsmodels' REML criterion if that fit does not move. The two
   fits are timed in the same run (one call each: statsmodels' takes minutes).
2. statsmodels started from its own default start (skipped with ``--skip-default-start``).

Run: ``python benchmarks/bench_gtheory_metr_statsmodels.py [--skip-default-start] [--families K]``;
the smallest run: ``--families 10 --skip-default-start`` (the first nine families hold
one task each, so fewer cannot separate ``cluster`` from ``task:cluster``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from _harness import Bench
from _harness import parser

from hierbench.data import load_metr
from hierbench.freq import variance_components

#: statsmodels' variance-component formulas and the hierbench component each one is
VC_FORMULA = {
    "g1_agent": "0 + C(agent)",
    "g2_cluster": "0 + C(cluster)",
    "g3_ac": "0 + C(ac)",
    "g4_task": "0 + C(task)",
    "g5_at": "0 + C(at)",
}
NAMES = {
    "g1_agent": "agent",
    "g2_cluster": "cluster",
    "g3_ac": "agent:cluster",
    "g4_task": "task:cluster",
    "g5_at": "agent:task:cluster",
}


def long_table(ds) -> pd.DataFrame:
    """One row per run with the labels statsmodels' formulas need."""
    df = ds.score.to_dataframe().dropna().reset_index()
    df["cluster"] = ds.cluster.sel(task=df.task.values).values
    df["ac"] = df.agent + "|" + df.cluster
    df["at"] = df.agent + "|" + df.task
    df["one"] = 1
    return df


def sm_fit(md, **kw) -> tuple[object, dict]:
    """Fit statsmodels' REML quietly; return the result and its components by hierbench name."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = md.fit(reml=True, method=["bfgs"], gtol=1e-10, **kw)
    comps = dict(zip([NAMES[n] for n in md.exog_vc.names], np.asarray(r.vcomp), strict=True))
    comps["residual"] = float(r.scale)
    return r, comps


def compare_components(bench: Bench, label: str, ours: dict, theirs: dict) -> None:
    """Print both fits side by side and record the largest relative difference."""
    worst = 0.0
    for k, o in ours.items():
        rel = abs(theirs[k] - o) / o
        worst = max(worst, rel)
        print(f"  {k:20s} hierbench {o:.8f}  statsmodels {theirs[k]:.8f}  rel diff {rel:.2e}")
    bench.record(f"max relative difference, {label}", worst)


def main() -> None:
    """Fit METR (or a subset) with both packages and compare."""
    ap = parser(__doc__)
    ap.add_argument("--skip-default-start", action="store_true")
    ap.add_argument(
        "--families",
        type=int,
        default=0,
        help="fit only the first 3 agents and this many families (sorted); 0: all of METR",
    )
    args = ap.parse_args()
    import statsmodels.formula.api as smf
    from statsmodels.regression.mixed_linear_model import MixedLMParams

    ds = load_metr()
    if args.families:
        fams = sorted(np.unique(ds.cluster.values))[: args.families]
        ds = ds.isel(agent=slice(0, 3)).sel(task=ds.task[ds.cluster.isin(fams)].values)
        print(
            f"subset: first 3 agents, first {args.families} families, "
            f"{int(ds.score.notnull().sum())} runs"
        )
    with Bench("gtheory_metr_statsmodels") as bench:
        vc = variance_components(ds)  # the start for statsmodels (and a warm-up)
        ours = {k: float(v) for k, v in zip(vc.component_names, vc.estimate.values, strict=True)}
        md = smf.mixedlm(
            "score ~ 1", long_table(ds), groups="one", re_formula="0", vc_formula=VC_FORMULA
        )
        start = MixedLMParams.from_components(
            fe_params=np.array([vc.fit_info["mu"]]),
            cov_re=np.zeros((0, 0)),
            vcomp=np.array([ours[NAMES[n]] / ours["residual"] for n in md.exog_vc.names]),
        )
        bench.compare(
            "METR REML fit",
            {
                "statsmodels (from hierbench's estimate)": lambda: sm_fit(
                    md, start_params=start, maxiter=200
                ),
                "hierbench": lambda: variance_components(ds),
            },
            repeats=1,
            warmup=0,
            baseline="statsmodels (from hierbench's estimate)",
        )
        r, sm = bench.last["statsmodels (from hierbench's estimate)"]
        print(f"hierbench REML: {ours}")
        print(f"statsmodels from hierbench's estimate: converged={r.converged}")
        compare_components(bench, "statsmodels from hierbench's estimate", ours, sm)
        if not args.skip_default_start:
            bench.time(
                "statsmodels from its default start",
                lambda: sm_fit(md, maxiter=500),
                repeats=1,
                warmup=0,
            )
            r2, sm2 = bench.last[""]
            print(
                f"statsmodels from its default start: converged={r2.converged}, "
                f"REML llf {r2.llf:.6f} (from hierbench's estimate: {r.llf:.6f})"
            )
            compare_components(bench, "statsmodels from its default start", ours, sm2)


if __name__ == "__main__":
    main()
