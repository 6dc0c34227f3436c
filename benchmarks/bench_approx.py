"""Measure the error of the approximate fits against NUTS.

The numbers in ``MEASURED_ERROR`` of ``hierbench/bayes/_sampler/_approx.py`` (copy this
script's output there).

Run: ``python benchmarks/bench_approx.py`` (about two minutes).
"""

from __future__ import annotations

import json
import time
import warnings
from typing import Any

from hierbench.bayes import approximation_error
from hierbench.bayes import build_crossed
from hierbench.bayes import fit
from hierbench.bayes import fit_approx
from hierbench.testing import simulate_eval


def measure() -> dict[str, dict[str, Any]]:

    data, _ = simulate_eval(n_agents=12, n_tasks=200, n_runs=10, rng=1)
    model = build_crossed(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        nuts = fit(
            model,
            draws=1000,
            tune=1000,
            chains=4,
            rng=1,
            posterior_predictive=False,
            log_likelihood=False,
        )
        t_nuts = time.perf_counter() - t0
        out = {}
        for method in ("advi", "fullrank_advi"):
            ap = fit_approx(model, method=method, rng=2)
            err = approximation_error(
                ap,
                nuts,
                var_names=["sd_task", "sd_agent_task", "ability", "task_effect", "mean_observed"],
            )
            out[f"crossed/{method}"] = {
                "case": "simulate_eval(n_agents=12, n_tasks=200, n_runs=10, rng=1)",
                "fit_time_s": round(float(ap.attrs["fit_time"]), 1),
                "nuts_time_s": round(t_nuts, 1),
                **{k: round(float(err[k]), 4) for k in err.data_vars},
            }
    return out


if __name__ == "__main__":
    print(json.dumps(measure(), indent=1))
