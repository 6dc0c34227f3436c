"""Regenerate ``reference.json``: the Bradley-Terry posterior on LLMFAO at the zoo spec.

Run from the project root (the shared data folder must be reachable, see
``hierbench.data.shared_data_dir``)::

    .venv/bin/python models/bradley_terry/make_reference.py

A longer run than the regression test's (8 chains x 2000 draws), so the
reference's own Monte Carlo error is small; each summary keeps its MCSE so
the test can compare within the combined MCSE.
"""

from __future__ import annotations

import json
from pathlib import Path

import arviz_stats as azs
import numpy as np

from hierbench.bayes import build_bradley_terry
from hierbench.bayes import fit
from hierbench.bayes import read_spec
from hierbench.data import read_battles
from hierbench.data import shared_data_dir

HERE = Path(__file__).resolve().parent
VARS = ("ability", "elo", "sd_ability", "nu")


def summaries(dt, var_names=VARS) -> dict:
    """Summarise the reference fit's variables."""
    post = dt["posterior"].to_dataset()[list(var_names)]
    mean = post.mean(("chain", "draw"))
    sd = post.std(("chain", "draw"))
    mcse = azs.mcse(post, sample_dims=["chain", "draw"], method="mean")
    ess = azs.ess(post, sample_dims=["chain", "draw"], method="bulk")
    rhat = azs.rhat(post, sample_dims=["chain", "draw"])
    out = {}
    for v in var_names:
        if "agent" in post[v].dims:
            out[v] = {
                str(a): {
                    "mean": float(mean[v].sel(agent=a)),
                    "sd": float(sd[v].sel(agent=a)),
                    "mcse_mean": float(mcse[v].sel(agent=a)),
                    "ess_bulk": float(ess[v].sel(agent=a)),
                    "r_hat": float(rhat[v].sel(agent=a)),
                }
                for a in post.agent.values
            }
        else:
            out[v] = {
                "mean": float(mean[v]),
                "sd": float(sd[v]),
                "mcse_mean": float(mcse[v]),
                "ess_bulk": float(ess[v]),
                "r_hat": float(rhat[v]),
            }
    return out


def main() -> None:
    """Fit the reference data and write reference.json."""
    spec = read_spec(HERE / "spec.toml")
    path = shared_data_dir() / "evalica" / "llmfao_pairwise.csv"
    pairs = read_battles(path, task="prompt")
    opts = dict(spec["options"])
    opts["ties"] = None if opts["ties"] == "none" else opts["ties"]
    model = build_bradley_terry(pairs, priors=spec["priors"], **opts)
    settings = {"draws": 2000, "tune": 1000, "chains": 8}
    seed = 20261130
    dt = fit(model, rng=seed, posterior_predictive=False, log_likelihood=False, **settings)
    ref = {
        "model": "bradley_terry",
        "dataset": "LLMFAO crowd pairwise judgments (dustalov/evalica @ 2ebe79e, evalica/llmfao_pairwise.csv)",
        "n_comparisons": int(pairs.sizes["comparison"]),
        "n_agents": int(pairs.sizes["agent"]),
        "data_hash": dt.attrs["hierbench_data_hash"],
        "spec": json.loads(dt.attrs["hierbench_spec"]),
        "settings": {**settings, "sampler": dt.attrs["sampler"], "seed": seed},
        "hierbench_version": dt.attrs["hierbench_version"],
        "diagnostics": {
            "n_divergent": int(dt.attrs["diag_n_divergent"]),
            "max_r_hat": float(dt.attrs["diag_max_r_hat"]),
            "min_ess_bulk": float(dt.attrs["diag_min_ess_bulk"]),
        },
        "summaries": summaries(dt),
    }
    ref["summaries"]["rank_by_mean_ability"] = [
        str(a) for a in np.asarray(list(ref["summaries"]["ability"]))[
            np.argsort([-v["mean"] for v in ref["summaries"]["ability"].values()], kind="stable")
        ]
    ]
    (HERE / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    print(json.dumps(ref["diagnostics"]))


if __name__ == "__main__":
    main()
