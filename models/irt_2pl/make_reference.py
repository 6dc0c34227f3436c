"""Regenerate ``reference.json`` and ``spec.toml``: the 2PL on SWE-bench bash-only at the zoo spec.

Run from the project root (the shared data folder must be reachable, see
``hierbench.data.shared_data_dir``)::

    python models/irt_2pl/make_reference.py            # fits (about 15 min on 2 busy cores)
    python models/irt_2pl/make_reference.py fit.nc     # summarise a saved fit made with the same settings

The fit runs nutpie for a fixed 4 chains x 1000 draws after 1000 tuning steps
(seed 20261130), the settings ``reference.json`` records: longer than the
default fit, which stops once every element's bulk and tail ESS reach 400, so
that the reference's own MCSE is the smaller part of the combined MCSE a refit
is compared within. Each summary keeps its MCSE. The MAP calibration's
agreement with the posterior means is recorded under ``ml_vs_nuts``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import arviz_stats as azs
import numpy as np
import xarray as xr
from scipy import stats

from hierbench.bayes import build_irt_2pl
from hierbench.bayes import fit
from hierbench.bayes import get_model
from hierbench.bayes import spec_to_toml
from hierbench.data import load_swebench_bash_only
from hierbench.freq import fit_irt_ml

HERE = Path(__file__).resolve().parent
SEED = 20261130
#: the reference run's settings (fixed, not the default fit's run to a target ESS)
SETTINGS = {"draws": 1000, "tune": 1000, "chains": 4}
VARS = ("difficulty", "discrimination", "intercept", "ability", "mu_intercept", "sd_intercept",
        "mu_log_discrimination", "sd_log_discrimination")


def summarise(post: xr.Dataset) -> dict:
    """Summarise the reference posterior."""
    post = post[list(VARS)]
    mean = post.mean(("chain", "draw"))
    sd = post.std(("chain", "draw"))
    mcse = azs.mcse(post, sample_dims=["chain", "draw"], method="mean")
    out = {}
    for v in VARS:
        dims = [d for d in post[v].dims if d not in ("chain", "draw")]
        if not dims:
            out[v] = {"mean": float(mean[v]), "sd": float(sd[v]), "mcse": float(mcse[v])}
        else:
            (dim,) = dims
            out[v] = {
                str(lbl): {
                    "mean": float(mean[v].sel({dim: lbl})),
                    "sd": float(sd[v].sel({dim: lbl})),
                    "mcse": float(mcse[v].sel({dim: lbl})),
                }
                for lbl in post[dim].values
            }
    return out


def main(path: str | None = None) -> None:
    """Fit the reference data and write reference.json."""
    data = load_swebench_bash_only()
    entry = get_model("irt_2pl")
    settings = dict(SETTINGS)
    if path is None:
        dt = fit(build_irt_2pl(data), rng=SEED, posterior_predictive=False, **settings)
    else:
        dt = xr.open_datatree(path)
    post = dt["posterior"].to_dataset()
    cal = fit_irt_ml(data, rng=0)
    ml_vs_nuts = {}
    for v, ml in (("difficulty", cal.estimate), ("discrimination", cal.discrimination), ("ability", cal.ability)):
        pm = post[v].mean(("chain", "draw"))
        ml_vs_nuts[f"spearman_{v}"] = float(stats.spearmanr(pm.values, ml.values).statistic)
        ml_vs_nuts[f"mean_abs_diff_{v}"] = float(np.abs(pm.values - ml.values).mean())
    ref = {
        "model": "irt_2pl",
        "dataset": "SWE-bench Verified bash-only, 25 models x 500 tasks, R = 1",
        "data_file": "swebench_bash_only/swebench_verified_bash_only_per_instance.csv.gz",
        "data_hash": dt.attrs["hierbench_data_hash"],
        "spec": json.loads(dt.attrs["hierbench_spec"]),
        "settings": {**settings, "sampler": dt.attrs["sampler"], "seed": SEED},
        "hierbench_version": dt.attrs["hierbench_version"],
        "sampling_time": float(dt.attrs.get("sampling_time", np.nan)),
        "diagnostics": {
            "n_divergent": int(dt.attrs["diag_n_divergent"]),
            "max_r_hat": float(dt.attrs["diag_max_r_hat"]),
            "min_ess_bulk": float(dt.attrs["diag_min_ess_bulk"]),
            "min_ess_tail": float(dt.attrs["diag_min_ess_tail"]),
            "min_bfmi": float(dt.attrs["diag_min_bfmi"]),
            # the parameter-expansion radius, set aside before the checks (see the card)
            "px_radius_r_hat": float(dt.attrs.get("px_radius_r_hat", np.nan)),
            "px_radius_ess_bulk": float(dt.attrs.get("px_radius_ess_bulk", np.nan)),
        },
        "ml_vs_nuts": ml_vs_nuts,
        "ml_hyper": cal.hyper,
        "summary": summarise(post),
    }
    (HERE / "reference.json").write_text(json.dumps(ref, indent=1) + "\n")
    spec = entry.spec()
    spec["reference_cases"] = {
        "swebench_bash_only": {"data_file": ref["data_file"], "seed": SEED, "sampler": ref["settings"]["sampler"], **settings}
    }
    (HERE / "spec.toml").write_text(spec_to_toml(spec))
    print(json.dumps({"diagnostics": ref["diagnostics"], "ml_vs_nuts": ml_vs_nuts}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
