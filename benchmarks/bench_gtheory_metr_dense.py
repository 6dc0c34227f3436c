"""METR REML: hierbench's variance components checked against a brute-force dense REML.

statsmodels' MixedLM cannot fit full METR (the dense fit did not finish in 75 min; a singular
Hessian from 6 families on), so the reference here is written from scratch and shares no code
with ``hierbench.freq._variance._reml``: the REML log-likelihood of all runs,

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
Each step costs one dense N x N Cholesky inverse (about 10-30 s on one core, 1.2 GB).

Run: ``nice -n 10 python benchmarks/bench_gtheory_metr_dense.py [--families K] [--steps 6]``
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd
import scipy.linalg as sla
import scipy.sparse as sp


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


def main() -> None:
    ap = argparse.ArgumentParser()
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
    from hierbench.data import load_metr
    from hierbench.freq import variance_components

    print(f"load average at the start: {os.getloadavg()}")
    ds = load_metr()
    if args.families:
        fams = sorted(np.unique(ds.cluster.values))[: args.families]
        ds = ds.sel(task=ds.task[ds.cluster.isin(fams)].values)
    t0 = time.perf_counter()
    vc = variance_components(ds)
    t_ours = time.perf_counter() - t0
    names = list(vc.component_names)
    ours = vc.estimate.values.astype(float)
    print(f"hierbench REML ({vc.formula}): {t_ours:.2f} s, {vc.n_obs} runs")
    # the long table, independently of hierbench's data path
    df = ds.score.to_dataframe().dropna(subset=["score"]).reset_index()
    df["cluster"] = pd.Series(ds.cluster.values, index=ds.task.values).loc[df.task].to_numpy()
    cols = {
        "agent": ["agent"],
        "cluster": ["cluster"],
        "agent:cluster": ["agent", "cluster"],
        "task:cluster": ["task", "cluster"],
        "agent:task:cluster": ["agent", "task", "cluster"],
    }
    assert names == [*cols, "residual"], names
    y = df.score.to_numpy(float)
    Zs = [indicator(df, c) for c in cols.values()]
    print(f"dense N = {y.size}; levels {[Z.shape[1] for Z in Zs]}", flush=True)
    s = ours.copy()
    llf0 = None
    for it in range(args.steps + 1):
        t0 = time.perf_counter()
        llf, score, info = dense_reml_pieces(y, Zs, s)
        el = time.perf_counter() - t0
        if llf0 is None:
            llf0 = llf
            # score scaled by the standard error: a dimensionless size of the gradient
            se = np.sqrt(np.diag(np.linalg.inv(info)))
            print(f"at hierbench's estimate: REML log-lik {llf:.6f} ({el:.0f} s per evaluation)")
            print("| component | hierbench | score dl/ds | score x se | first Fisher step (rel) |")
            print("|---|---|---|---|---|")
            step0 = np.linalg.solve(info, score)
            for k, n in enumerate(names):
                print(
                    f"| {n} | {ours[k]:.8f} | {score[k]:.3e} | {score[k] * se[k]:.2e} | "
                    f"{step0[k] / ours[k]:.2e} |"
                )
        if it == args.steps:
            break
        step = np.linalg.solve(info, score)
        s_new = np.maximum(s + step, 0.0)
        rel = np.max(np.abs(s_new - s) / np.maximum(s, 1e-12))
        s = s_new
        print(f"Fisher step {it + 1}: max relative move {rel:.2e}", flush=True)
        if rel < 1e-9:
            break
    llf1, score1, _ = dense_reml_pieces(y, Zs, s)
    print(
        f"dense REML fit: log-lik {llf1:.6f} (hierbench's estimate {llf0:.6f}, difference "
        f"{llf1 - llf0:.2e}); max |score| {np.max(np.abs(score1)):.2e}"
    )
    print("| component | hierbench | dense REML (Fisher scoring) | relative difference |")
    print("|---|---|---|---|")
    worst = 0.0
    for k, n in enumerate(names):
        rel = abs(s[k] - ours[k]) / s[k]
        worst = max(worst, rel)
        print(f"| {n} | {ours[k]:.8f} | {s[k]:.8f} | {rel:.2e} |")
    print(f"max relative difference {worst:.2e} (acceptance: < 1e-4)")
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
