"""METR REML: hierbench's variance components against statsmodels' MixedLM on the same model.

Design ``run:(agent*(task:cluster))`` on METR's binarised scores (6,852 runs, ragged,
missing cells). statsmodels fits it as one group with five crossed variance
components (dense, slow: minutes to hours on a loaded machine). Two checks:

1. statsmodels started from its own default start (if it finishes within ``--budget`` s);
2. statsmodels' REML log-likelihood and score (gradient) at hierbench's estimate, and a
   statsmodels fit started there: hierbench's estimate is a stationary point of
   statsmodels' REML criterion if that fit does not move.

Run: ``python benchmarks/bench_gtheory_metr_statsmodels.py [--budget 3600]``
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from hierbench.data import load_metr
from hierbench.freq import variance_components


def main() -> None:
    ap = argparse.ArgumentParser()
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
    t0 = time.perf_counter()
    vc = variance_components(ds)
    t_ours = time.perf_counter() - t0
    ours = dict(zip(vc.component_names, vc.estimate.values, strict=True))
    print(f"hierbench REML {t_ours:.2f} s: {ours}", flush=True)
    df = ds.score.to_dataframe().dropna().reset_index()
    df["cluster"] = ds.cluster.sel(task=df.task.values).values
    df["ac"] = df.agent + "|" + df.cluster
    df["at"] = df.agent + "|" + df.task
    df["one"] = 1
    vcf = {
        "g1_agent": "0 + C(agent)",
        "g2_cluster": "0 + C(cluster)",
        "g3_ac": "0 + C(ac)",
        "g4_task": "0 + C(task)",
        "g5_at": "0 + C(at)",
    }
    names = {
        "g1_agent": "agent",
        "g2_cluster": "cluster",
        "g3_ac": "agent:cluster",
        "g4_task": "task:cluster",
        "g5_at": "agent:task:cluster",
    }
    md = smf.mixedlm("score ~ 1", df, groups="one", re_formula="0", vc_formula=vcf)
    order = [names[n] for n in md.exog_vc.names]
    s2e = ours["residual"]
    start = MixedLMParams.from_components(
        fe_params=np.array([vc.fit_info["mu"]]),
        cov_re=np.zeros((0, 0)),
        vcomp=np.array([ours[n] / s2e for n in order]),
    )
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = md.fit(reml=True, start_params=start, method=["bfgs"], gtol=1e-10, maxiter=200)
    t_sm = time.perf_counter() - t0
    sm = dict(zip(order, np.asarray(r.vcomp), strict=True))
    sm["residual"] = float(r.scale)
    print(f"statsmodels from hierbench's estimate, {t_sm:.0f} s, converged={r.converged}")
    worst = 0.0
    for k in vc.component_names:
        rel = abs(sm[k] - ours[k]) / ours[k]
        worst = max(worst, rel)
        print(f"  {k:20s} hierbench {ours[k]:.8f}  statsmodels {sm[k]:.8f}  rel diff {rel:.2e}")
    print(f"max relative difference {worst:.2e}", flush=True)
    if not args.skip_default_start:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r2 = md.fit(reml=True, method=["bfgs"], gtol=1e-10, maxiter=500)
        t2 = time.perf_counter() - t0
        sm2 = dict(zip(order, np.asarray(r2.vcomp), strict=True))
        sm2["residual"] = float(r2.scale)
        print(
            f"statsmodels from its default start, {t2:.0f} s, converged={r2.converged}, "
            f"REML llf {r2.llf:.6f} (from hierbench's estimate: {r.llf:.6f})"
        )
        for k in vc.component_names:
            print(
                f"  {k:20s} hierbench {ours[k]:.8f}  statsmodels {sm2[k]:.8f}  rel diff "
                f"{abs(sm2[k] - ours[k]) / ours[k]:.2e}"
            )


if __name__ == "__main__":
    main()
