"""METR REML: hierbench's variance components checked against a brute-force dense REML.

statsmodels' MixedLM cannot fit full METR (the dense fit did not finish in 75 min; a singular
Hessian from 6 families on), so the reference here is written from scratch and shares no code
with hierbench's REML: the REML log-likelihood of all runs,

    l_R(s) = -1/2 [ log|V| + log(1'V^-1 1) + y'P y ],   V = sum_k s_k Z_k Z_k' + s_e I,
    P = V^-1 - V^-1 1 1'V^-1 / (1'V^-1 1),

over the N x N covariance of every run (no reduction to cell means, no profiling, no sparse
algebra), with indicator matrices Z_k built from the label strings by pandas. At hierbench's
estimate it evaluates the REML score ``dl/ds_k = -tr(P V_k)/2 + y'P V_k P y/2`` and the expected
information ``I_kl = tr(P V_k P V_l)/2`` and takes Fisher-scoring steps ``s <- s + I^-1 score``
until the step is below 1e-9 relative: the components where that converges are the
independent REML fit, compared with hierbench's to 1e-4 relative. The REML log-likelihood at
both points is printed too.

Design ``run:(agent*(task:cluster))`` on METR's binarised scores (6,852 runs, 748 cells).
Each step costs one dense N x N Cholesky inverse (about 10-30 s on one core, 1.2 GB). The
timing compares, in the same run, one dense evaluation with hierbench's whole fit.

Run: ``nice -n 10 python benchmarks/bench_gtheory_metr_dense.py [--families K] [--steps 6]``;
the smallest run: ``--families 10 --steps 1`` (the first nine families hold one task
each, so fewer cannot separate ``cluster`` from ``task:cluster``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import scipy.linalg as sla
import scipy.sparse as sp
from _harness import Bench
from _harness import parser

from hierbench.data import load_metr
from hierbench.freq import variance_components

#: hierbench's random components -> the label columns whose joint levels are that term's
COLS = {
    "agent": ["agent"],
    "cluster": ["cluster"],
    "agent:cluster": ["agent", "cluster"],
    "task:cluster": ["task", "cluster"],
    "agent:task:cluster": ["agent", "task", "cluster"],
}


def indicator(df: pd.DataFrame, cols: list[str]) -> sp.csr_matrix:
    """N x L 0/1 matrix of the joint levels of ``cols`` (labels joined as strings)."""
    key = df[cols].astype(str).agg("|".join, axis=1)
    codes, uniq = pd.factorize(key)
    n = len(df)
    return sp.csr_matrix((np.ones(n), (np.arange(n), codes)), shape=(n, len(uniq)))


def dense_reml_pieces(y: np.ndarray, Zs: list[sp.csr_matrix], s: np.ndarray):
    """REML log-likelihood, score and expected information at components ``s`` (last: residual)."""
    N = y.size
    V = np.zeros((N, N))
    for Z, sk in zip(Zs, s[:-1], strict=True):
        V += sk * np.asarray((Z @ Z.T).todense())
    V[np.diag_indices(N)] += s[-1]
    c, low = sla.cho_factor(V, lower=True, overwrite_a=True, check_finite=False)
    logdet = 2.0 * float(np.log(np.diag(c)).sum())
    Vi = sla.cho_solve((c, low), np.eye(N), overwrite_b=True, check_finite=False)
    del c, V
    v1 = Vi.sum(axis=1)
    m = float(v1.sum())
    P = Vi
    P -= np.outer(v1, v1) / m  # in place: P = V^-1 - V^-1 1 1'V^-1 / 1'V^-1 1
    Py = P @ y
    llf = -0.5 * (logdet + np.log(m) + float(y @ Py))
    mats = [*Zs, None]  # None: the identity (residual)
    K = len(mats)
    score = np.zeros(K)
    ZtP = []
    for k, Z in enumerate(mats):
        if Z is None:
            trPV = float(np.trace(P))
            quad = float(Py @ Py)
            ZtP.append(None)
        else:
            ZP = np.asarray(Z.T @ P)  # L x N
            trPV = float(np.einsum("ij,ji->", ZP, Z.toarray()))
            zy = Z.T @ Py
            quad = float(zy @ zy)
            ZtP.append(ZP)
        score[k] = -0.5 * trPV + 0.5 * quad
    info = np.zeros((K, K))
    for k in range(K):
        for j in range(k, K):
            if mats[k] is None and mats[j] is None:
                val = float(np.square(P).sum())
            elif mats[k] is None:
                val = float(np.square(ZtP[j]).sum())  # tr(P P Z Z') = ||Z'P||^2
            elif mats[j] is None:
                val = float(np.square(ZtP[k]).sum())
            else:
                G = np.asarray(mats[j].T @ ZtP[k].T)  # Z_j' P Z_k
                val = float(np.square(G).sum())
            info[k, j] = info[j, k] = 0.5 * val
    return llf, score, info


def long_table(ds) -> pd.DataFrame:
    """One row per run, built from the dataset independently of hierbench's data path."""
    df = ds.score.to_dataframe().dropna(subset=["score"]).reset_index()
    df["cluster"] = pd.Series(ds.cluster.values, index=ds.task.values).loc[df.task].to_numpy()
    return df


def fisher_scoring(y, Zs, s, steps: int, score, info) -> np.ndarray:
    """Take Fisher-scoring steps from ``s`` (score and information there given).

    Stops when a step moves every component by less than 1e-9 relative, or after ``steps``.
    """
    for it in range(steps):
        if it:
            _, score, info = dense_reml_pieces(y, Zs, s)
        s_new = np.maximum(s + np.linalg.solve(info, score), 0.0)
        rel = np.max(np.abs(s_new - s) / np.maximum(s, 1e-12))
        s = s_new
        print(f"Fisher step {it + 1}: max relative move {rel:.2e}", flush=True)
        if rel < 1e-9:
            break
    return s


def at_estimate(names, ours, llf, score, info) -> None:
    """Print the REML score at hierbench's estimate (scaled by the standard error)."""
    se = np.sqrt(np.diag(np.linalg.inv(info)))
    step0 = np.linalg.solve(info, score)
    print(f"at hierbench's estimate: REML log-lik {llf:.6f}")
    print("| component | hierbench | score dl/ds | score x se | first Fisher step (rel) |")
    print("|---|---|---|---|---|")
    for k, n in enumerate(names):
        print(
            f"| {n} | {ours[k]:.8f} | {score[k]:.3e} | {score[k] * se[k]:.2e} | "
            f"{step0[k] / ours[k]:.2e} |"
        )


def main() -> None:
    """Check hierbench's METR REML estimate against the dense REML from scratch."""
    ap = parser(__doc__)
    ap.add_argument(
        "--families", type=int, default=0, help="only the first K families (sorted); 0: all"
    )
    ap.add_argument("--steps", type=int, default=6, help="most Fisher-scoring steps")
    args = ap.parse_args()
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:  # pragma: no cover
        pass
    ds = load_metr()
    if args.families:
        fams = sorted(np.unique(ds.cluster.values))[: args.families]
        ds = ds.sel(task=ds.task[ds.cluster.isin(fams)].values)
    with Bench("gtheory_metr_dense") as bench:
        vc = variance_components(ds)
        names = list(vc.component_names)
        ours = vc.estimate.values.astype(float)
        assert names == [*COLS, "residual"], names
        df = long_table(ds)
        y = df.score.to_numpy(float)
        Zs = [indicator(df, c) for c in COLS.values()]
        print(
            f"hierbench REML ({vc.formula}), {vc.n_obs} runs; dense N = {y.size}; "
            f"levels {[Z.shape[1] for Z in Zs]}",
            flush=True,
        )
        bench.compare(
            "METR REML",
            {
                "dense (one evaluation)": lambda: dense_reml_pieces(y, Zs, ours),
                "hierbench (whole fit)": lambda: variance_components(ds),
            },
            repeats=1,
            warmup=0,
            baseline="dense (one evaluation)",
        )
        llf0, score0, info0 = bench.last["dense (one evaluation)"]
        at_estimate(names, ours, llf0, score0, info0)
        s = fisher_scoring(y, Zs, ours.copy(), args.steps, score0, info0)
        llf1, score1, _ = dense_reml_pieces(y, Zs, s)
        print(
            f"dense REML fit: log-lik {llf1:.6f} (hierbench's estimate {llf0:.6f}, difference "
            f"{llf1 - llf0:.2e}); max |score| {np.max(np.abs(score1)):.2e}"
        )
        print("| component | hierbench | dense REML (Fisher scoring) | relative difference |")
        print("|---|---|---|---|")
        rel = np.abs(s - ours) / s
        for k, n in enumerate(names):
            print(f"| {n} | {ours[k]:.8f} | {s[k]:.8f} | {rel[k]:.2e} |")
        bench.record("REML log-lik difference (dense fit - hierbench)", llf1 - llf0)
        bench.record("max relative difference (acceptance: < 1e-4)", float(rel.max()))


if __name__ == "__main__":
    main()
