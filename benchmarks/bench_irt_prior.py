"""The 2PL slope-prior study (models/irt_2pl/card.md, "Open"): the checks beside the SBC.

The SBC of each prior is ``sbc.py run --models irt_2pl --designs small --priors ...``;
this script runs the rest, each appending JSON rows to ``--out``:

* ``real``: the default Bayesian fit (:func:`hierbench.bayes.fit`, seed 20261130; ``default_s2``
  is the default prior at seed 20261131, the Monte Carlo floor) on SWE-bench bash-only and METR,
  with its diagnostics, hyperparameters, PSIS-LOO, and the posterior means saved to an ``.npz``
  beside ``--out`` for the comparisons;
* ``truths``: fixed truths outside a prior's bulk at the small design (6 x 30 x 3): ``flat``
  (typical slope 0.25 per agent sd: agents the tasks barely tell apart), ``steep`` (4.5, spread 0.5)
  and ``spread`` (1.65, spread 0.6); the 90% coverage of each agent's ``mean_task``, of the slopes,
  and of the gap between the best and worst agent's ``mean_task``;
* ``crossfit``: the default prior's SBC data sets (seed 3101) fitted at another prior, with the
  same sampler seeds: its divergences on the same data;
* ``mapii``: :func:`hierbench.freq.fit_irt_ml` on small simulated designs (4-12 agents x 30 tasks,
  1 or 3 runs) at each slope-spread hyperprior: how often the empirical-Bayes steps warn or
  collapse the slopes to zero.

Usage::

    python benchmarks/bench_irt_prior.py real --data metr --priors default A --out real.jsonl
    python benchmarks/bench_irt_prior.py truths --scenario flat --reps 30 --priors default A B C --out t.jsonl
    python benchmarks/bench_irt_prior.py crossfit --priors A --out c.jsonl
    python benchmarks/bench_irt_prior.py mapii --out m.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np

A = {"sd_log_discrimination": {"dist": "HalfNormal", "sigma": 0.3}}
B = {"mu_log_discrimination": {"dist": "Normal", "mu": 0.5, "sigma": 0.5}}
PRIORS = {"default": None, "default_s2": None, "A": A, "B": B, "C": {**A, **B}}
#: (mu_la, sd_la) of the fixed truths, and the seed of their data
SCENARIOS = {"flat": (np.log(0.25), 0.3, 777), "steep": (1.5, 0.5, 778), "spread": (0.5, 0.6, 779)}


def _kw(label: str) -> dict:
    return {"priors": PRIORS[label]} if PRIORS[label] else {}


def _append(out: str, row: dict) -> None:
    print(json.dumps(row), flush=True)
    with open(out, "a") as fh:
        fh.write(json.dumps(row) + "\n")


def real(data_name: str, labels: list[str], out: str) -> None:
    """The default fit of each prior on a real log: diagnostics, hyperparameters, LOO; means to an npz."""
    import arviz_stats as azs

    from hierbench.bayes import build_irt_2pl
    from hierbench.bayes import fit
    from hierbench.data import load_metr
    from hierbench.data import load_swebench_bash_only

    data = load_swebench_bash_only() if data_name == "swe" else load_metr()
    for lab in labels:
        t0 = time.perf_counter()
        dt = fit(build_irt_2pl(data, **_kw(lab)), rng=20261131 if lab.endswith("_s2") else 20261130,
                 log_likelihood=True, posterior_predictive=False, progress=False)  # fmt: skip
        wall = time.perf_counter() - t0
        post = dt["posterior"].to_dataset()
        lo = azs.loo(dt, pointwise=True)
        row = {"data": data_name, "prior": lab, "wall": wall, "sampling_time": float(dt.attrs["sampling_time"]),
               "n_div": int(dt.attrs["diag_n_divergent"]), "max_r_hat": float(dt.attrs["diag_max_r_hat"]),
               "min_ess_bulk": float(dt.attrs["diag_min_ess_bulk"]), "min_ess_tail": float(dt.attrs["diag_min_ess_tail"]),
               "min_bfmi": float(dt.attrs["diag_min_bfmi"]), "converged": int(dt.attrs["diag_converged"]),
               "draws_per_chain": int(post.sizes["draw"]), "elpd": float(lo.elpd), "elpd_se": float(lo.se),
               "k_gt_07": int((np.asarray(lo.pareto_k) > 0.7).sum()),
               "disc_max_draw": float(post["discrimination"].max())}  # fmt: skip
        for v in ("mu_log_discrimination", "sd_log_discrimination", "mu_intercept", "sd_intercept"):
            row[v] = [float(post[v].mean()), float(post[v].std())]
        np.savez(os.path.splitext(out)[0] + f"_{data_name}_{lab}.npz", elpd_i=np.asarray(lo.elpd_i).ravel(),
                 **{v: post[v].mean(("chain", "draw")).values for v in ("discrimination", "ability", "difficulty")})
        _append(out, row)


def truths(scenario: str, reps: int, labels: list[str], out: str) -> None:
    """Fixed truths at 6 x 30 x 3, fitted at each prior: coverage of agents, slopes and the agents' gap."""
    import xarray as xr

    from hierbench.bayes import build_irt_2pl
    from hierbench.bayes import fit_replicates

    mu, sd, seed = SCENARIOS[scenario]
    M, T, R = 6, 30, 3
    g = np.random.default_rng(seed)
    for rep in range(reps):
        th = g.standard_normal(M)
        th = (th - th.mean()) / th.std()
        a, d = np.exp(mu + sd * g.standard_normal(T)), g.normal(0.0, 1.5, T)
        p = 1 / (1 + np.exp(-(th[:, None] * a[None] + d[None])))
        y, mt = g.binomial(R, p), p.mean(1)
        ds = xr.Dataset({"n_runs": (("agent", "task"), np.full((M, T), R)), "n_success": (("agent", "task"), y)},
                        coords={"agent": [f"a{i}" for i in range(M)], "task": [f"t{i}" for i in range(T)]})  # fmt: skip
        for lab in labels:
            (dt,) = fit_replicates(build_irt_2pl(ds, **_kw(lab)), [ds], rng=1000 + rep, progress=False)
            post = dt["posterior"]
            lo, hi = np.quantile(post["mean_task"].values.reshape(-1, M), [0.05, 0.95], axis=0)
            alo, ahi = np.quantile(post["discrimination"].values.reshape(-1, T), [0.05, 0.95], axis=0)
            gap = (post["mean_task"].max("agent") - post["mean_task"].min("agent")).values.ravel()
            _append(out, {"scenario": scenario, "rep": rep, "prior": lab, "n_div": int(dt.attrs["diag_n_divergent"]),
                          "cov_mt": float(((lo <= mt) & (mt <= hi)).mean()), "cov_a": float(((alo <= a) & (a <= ahi)).mean()),
                          "true_gap": float(mt.max() - mt.min()), "gap_mean": float(gap.mean()),
                          "gap_q05": float(np.quantile(gap, 0.05)), "gap_q95": float(np.quantile(gap, 0.95)),
                          "mu_la": float(post["mu_log_discrimination"].mean())})  # fmt: skip


def crossfit(labels: list[str], out: str, seed: int = 3101, reps: int = 200) -> None:
    """The default prior's SBC data sets, fitted at another prior with the same sampler seeds."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import sbc

    items = sbc.replicate_items("irt_2pl", "small", reps, seed)
    settings = {"chains": 4, "draws": None, "tune": None, "init": "map"}
    for lab in labels:
        for it in items:
            rec = sbc.one_replicate(it, None, model_name="irt_2pl", design="small", settings=settings,
                                    priors=PRIORS[lab])  # fmt: skip
            keep = ("rep", "n_div", "n_draws", "draws_per_chain", "converged", "wall", "mean_steps")
            _append(out, {"prior": lab, "data": f"default prior, seed {seed}", **{k: rec[k] for k in keep}})


def mapii(out: str, sigmas=(0.5, 0.3)) -> None:
    """fit_irt_ml on small designs at each slope-spread hyperprior: warnings and collapsed slopes."""
    from scipy.special import expit

    import hierbench._priors as P
    from hierbench.freq import fit_irt_ml

    keep = dict(P.IRT_HYPERPRIORS["sd_log_discrimination"])
    try:
        for sig in sigmas:
            P.IRT_HYPERPRIORS["sd_log_discrimination"] = {"dist": "HalfNormal", "sigma": sig}
            for M in (4, 6, 8, 12):
                for R in (1, 3):
                    for s in range(10):
                        g = np.random.default_rng(100 * M + 10 * R + s)
                        th, a, d = g.normal(size=M), np.exp(g.normal(0.3, 0.3, 30)), g.normal(0, 1.5, 30)
                        y = g.binomial(R, expit(th[:, None] * a + d))
                        cnt = _counts(np.full((M, 30), R), y)
                        with warnings.catch_warnings(record=True) as w:
                            warnings.simplefilter("always")
                            cal = fit_irt_ml(cnt, n_draws=10, rng=0)
                        warned = any("fit_irt_ml" in str(x.message) for x in w)
                        _append(out, {"sigma": sig, "M": M, "R": R, "rep": s, "warned": warned,
                                      "collapsed": bool(cal.hyper["mu_la"] < -5), **cal.hyper})  # fmt: skip
    finally:
        P.IRT_HYPERPRIORS["sd_log_discrimination"] = keep


def _counts(n: np.ndarray, y: np.ndarray):
    """An agents x tasks counts dataset (``n_runs``, ``n_success``)."""
    import xarray as xr

    M, T = n.shape
    return xr.Dataset({"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), y.astype(float))},
                      coords={"agent": [f"a{i}" for i in range(M)], "task": [f"t{i}" for i in range(T)]})  # fmt: skip


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("real", "truths", "crossfit", "mapii"):
        sp = sub.add_parser(name)
        sp.add_argument("--out", required=True)
        if name != "mapii":
            sp.add_argument("--priors", nargs="+", default=["default", "A", "B", "C"], choices=list(PRIORS))
    sub.choices["real"].add_argument("--data", choices=["swe", "metr"], required=True)
    sub.choices["truths"].add_argument("--scenario", choices=list(SCENARIOS), required=True)
    sub.choices["truths"].add_argument("--reps", type=int, default=30)
    a = p.parse_args(argv)
    warnings.simplefilter("ignore")
    if a.cmd == "real":
        real(a.data, a.priors, a.out)
    elif a.cmd == "truths":
        truths(a.scenario, a.reps, a.priors, a.out)
    elif a.cmd == "crossfit":
        crossfit(a.priors, a.out)
    else:
        mapii(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
