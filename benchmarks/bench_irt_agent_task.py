"""The 2PL's agent x task effect (models/irt_2pl/card.md, "Agent x task effect"): simulation and real logs.

* ``sim``: 2PL logs with a logit-normal agent x task effect (``--sd-at``; 0 is the control),
  abilities standardised over the agents, log slopes ``N(0.3, 0.3)``, intercepts ``N(-0.5, 2)``,
  fitted with :func:`hierbench.bayes.build_irt_2pl` at ``--agent-task``: the posterior of
  ``sd_log_discrimination`` against the truth 0.3, the slopes' geometric-mean ratio to the truth and
  their 90% coverage;
* ``real``: METR or SWE-bench bash-only at ``--agent-task`` (seed 20261130), beside ``fit_irt_ml``.

Each appends JSON rows to ``--out``. Usage::

    python benchmarks/bench_irt_agent_task.py sim --design 10 80 8 --sd-at 0.7 0 --agent-task none --out s.jsonl
    python benchmarks/bench_irt_agent_task.py real --data metr --agent-task marginal --out real.jsonl
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np

MU_LA, SD_LA = 0.3, 0.3


def simulate(M: int, T: int, R: int, seed: int, sd_at: float):
    """A 2PL log with an agent x task effect, and its true slopes."""
    import xarray as xr

    g = np.random.default_rng(seed)
    th = g.standard_normal(M)
    th = (th - th.mean()) / th.std()
    a, d = np.exp(MU_LA + SD_LA * g.standard_normal(T)), g.normal(-0.5, 2.0, T)
    eta = th[:, None] * a[None] + d[None] + sd_at * g.standard_normal((M, T))
    y = g.binomial(R, 1 / (1 + np.exp(-eta)))
    ds = xr.Dataset({"n_runs": (("agent", "task"), np.full((M, T), R)), "n_success": (("agent", "task"), y)},
                    coords={"agent": [f"a{i}" for i in range(M)], "task": [f"t{i}" for i in range(T)]})  # fmt: skip
    return ds, a


def _summary(dt, row: dict) -> dict:
    post = dt["posterior"]
    row.update(n_div=int(dt.attrs["diag_n_divergent"]), max_r_hat=float(dt.attrs["diag_max_r_hat"]),
               min_ess_bulk=float(dt.attrs["diag_min_ess_bulk"]), draws_per_chain=int(post.sizes["draw"]))  # fmt: skip
    for v in ("mu_log_discrimination", "sd_log_discrimination", "sd_agent_task"):
        if v in post:
            s = post[v].values.ravel()
            row[v] = [float(s.mean()), float(np.quantile(s, 0.05)), float(np.quantile(s, 0.95))]
    return row


def _append(out: str, row: dict) -> None:
    print(json.dumps(row), flush=True)
    with open(out, "a") as fh:
        fh.write(json.dumps(row) + "\n")


def sim(design: list[int], sd_ats: list[float], seeds: list[int], agent_task: str, out: str) -> None:
    from hierbench.bayes import build_irt_2pl
    from hierbench.bayes import fit

    M, T, R = design
    for seed in seeds:
        for sd_at in sd_ats:
            ds, a = simulate(M, T, R, seed, sd_at)
            t0 = time.perf_counter()
            dt = fit(build_irt_2pl(ds, agent_task=agent_task), rng=seed + 1, progress=False)
            row = {"design": design, "seed": seed, "sd_at": sd_at, "agent_task": agent_task,
                   "wall": time.perf_counter() - t0}  # fmt: skip
            disc = dt["posterior"]["discrimination"].values.reshape(-1, T)
            lo, hi = np.quantile(disc, [0.05, 0.95], axis=0)
            row.update(slope_ratio_geo=float(np.exp(np.mean(np.log(disc.mean(0)) - np.log(a)))),
                       cov90_slopes=float(((lo <= a) & (a <= hi)).mean()))  # fmt: skip
            _append(out, _summary(dt, row))


def real(data_name: str, agent_task: str, out: str) -> None:
    from hierbench.bayes import build_irt_2pl
    from hierbench.bayes import fit
    from hierbench.data import load_metr
    from hierbench.data import load_swebench_bash_only
    from hierbench.freq import fit_irt_ml

    data = load_swebench_bash_only() if data_name == "swe" else load_metr()
    m = build_irt_2pl(data, agent_task=agent_task)
    t0 = time.perf_counter()
    dt = fit(m, rng=20261130, progress=False)
    row = {"data": data_name, "asked": agent_task, "agent_task": m.hierbench["options"]["agent_task"],
           "wall": time.perf_counter() - t0}  # fmt: skip
    ml = fit_irt_ml(data, rng=0)
    row.update(ml_sd_la=float(ml.hyper["sd_la"]), ml_mu_la=float(ml.hyper["mu_la"]), ml_run_icc=float(ml.info["run_icc"]))
    _append(out, _summary(dt, row))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sim")
    s.add_argument("--design", type=int, nargs=3, default=[10, 80, 8])
    s.add_argument("--sd-at", type=float, nargs="+", default=[0.7, 0.0])
    s.add_argument("--seeds", type=int, nargs="+", default=[21, 22, 23, 24])
    s.add_argument("--agent-task", default="none")
    s.add_argument("--out", required=True)
    r = sub.add_parser("real")
    r.add_argument("--data", choices=["metr", "swe"], required=True)
    r.add_argument("--agent-task", default="auto")
    r.add_argument("--out", required=True)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    if a.cmd == "sim":
        sim(a.design, a.sd_at, a.seeds, a.agent_task, a.out)
    else:
        real(a.data, a.agent_task, a.out)


if __name__ == "__main__":
    main()
