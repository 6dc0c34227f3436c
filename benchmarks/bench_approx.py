"""Measure the approximate fits: their error against NUTS and their own PSIS k-hat.

``measure()`` gives the numbers in ``MEASURED_ERROR`` of
``hierbench/bayes/_sampler/_approx.py`` (copy its output there); ``psis_table()``
the table below: the PSIS diagnostic every ``fit_approx`` now carries (Pareto
k-hat of ``log p - log q`` at its 1,000 draws, Yao et al. 2018; ArviZ's
threshold for S = 1000 is 0.67) beside the error against a NUTS fit
(4 x 1000 draws) where that is cheap.

Run: ``python benchmarks/bench_approx.py`` (``measure``, about two minutes) or
``python benchmarks/bench_approx.py psis`` (the table, about 15 minutes;
needs HIERBENCH_SHARED_DATA). Measured 2026-12-05 on the shared 2-core machine, default
``fit_approx`` options (n=30000, draws=1000, rng=2):

=================================  =============  =====  =========  ===========  ==============  ===========
case                               method         k-hat  verdict    sd ratio     max mean shift  fit (check)
                                                                    vs NUTS      (NUTS sds)      seconds
=================================  =============  =====  =========  ===========  ==============  ===========
crossed, MEASURED_ERROR case       advi           0.51   reweight   0.99-1.10    0.66            66 (-)
crossed, MEASURED_ERROR case       fullrank_advi  2.02   use NUTS   1.01-1.37    1.07            58 (-)
beta-binomial, simulated           advi           1.06   use NUTS   0.23-1.33    0.55            8 (0.6)
beta-binomial, simulated           fullrank_advi  -      -          -            -               ADVI NaN
ordinal, wine judges               advi           1.55   use NUTS   0.60-1.38    3.73            9 (0.4)
ordinal, wine judges               fullrank_advi  1.55   use NUTS   0.74-1.51    3.74            19 (0.7)
crossed, SWE-bench bash-only       advi           1.29   use NUTS   0.81-1.12    1.01            19 (1.7)
crossed, SWE-bench bash-only       fullrank_advi  4.14   use NUTS   1.05-1.49    0.92            72 (1.0)
=================================  =============  =====  =========  ===========  ==============  ===========

ArviZ's threshold at S = 1000 is 0.67 ("reweight": 0.5 < k-hat <= 0.67, usable only
with the PSIS weights; "use NUTS": above it). sd ratio: range over variables of
approximation_error's mean elementwise sd ratio; mean shift: its largest |mean
difference| / NUTS sd. Wine judges' PSIS-LOO elpd: NUTS -85.2, advi -99.4,
fullrank_advi -100.5: the k-hat of 1.55 flags what only a NUTS fit showed before.
Cases: crossed = build_crossed(simulate_eval(n_agents=12, n_tasks=200, n_runs=10,
rng=1)) (its row ran before the check's time was split off fit_time);
beta-binomial = build_beta_binomial(simulate_eval(n_agents=4, n_tasks=50, n_runs=4,
rng=3)) (full-rank ADVI diverged to NaN at rng=2; tau-bench's one-agent
beta-binomial is not in the table: PyMC's ADVI fails to compile it, a numba
IndexError inside pm.fit, with or without this check); wine = build_mixed(wine,
"rating ~ temp + contact + (1|judge)", family="ordinal"); SWE-bench =
build_crossed(load_swebench_bash_only()). Every k-hat but one says "do not trust":
k-hat judges the joint, and in hundreds of dimensions the ratios' tail is heavy
even where the marginal sds are close (the crossed case's mean-field fit), as Yao
et al. (2018) show; where the marginals are off (wine, mean shifts of 3.7 sds), it
is the only per-fit signal.
"""

from __future__ import annotations

import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from hierbench.bayes import approximation_error
from hierbench.bayes import build_beta_binomial
from hierbench.bayes import build_crossed
from hierbench.bayes import build_mixed
from hierbench.bayes import fit
from hierbench.bayes import fit_approx
from hierbench.testing import simulate_eval

CROSSED_CASE = "simulate_eval(n_agents=12, n_tasks=200, n_runs=10, rng=1)"


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
                "case": CROSSED_CASE,
                "fit_time_s": round(float(ap.attrs["fit_time"]), 1),
                "nuts_time_s": round(t_nuts, 1),
                **{k: round(float(err[k]), 4) for k in err.data_vars},
            }
    return out


def _wine() -> Any:
    """The wine judges' log as tests/test_ordinal_loglik.py reads it."""
    from hierbench.data import from_records

    root = Path(os.environ.get("HIERBENCH_SHARED_DATA", "../shared/data"))
    df = pd.read_csv(root / "ordinal" / "wine.csv")
    df["grade"], df["treatment"] = (df["rating"] - 1) / 4.0, df["temp"] + "/" + df["contact"]
    return from_records(df, agent="treatment", task="bottle", score="grade",
                        extra={"rating": "rating", "judge": "judge"}, agent_coords=["temp", "contact"])  # fmt: skip


def _cases() -> dict[str, tuple[Any, bool]]:
    """The cases by name: (model, whether a NUTS reference is fitted)."""
    from hierbench.data import load_swebench_bash_only

    crossed = simulate_eval(n_agents=12, n_tasks=200, n_runs=10, rng=1)[0]
    binary = simulate_eval(n_agents=4, n_tasks=50, n_runs=4, rng=3)[0]
    return {
        "crossed (MEASURED_ERROR case)": (build_crossed(crossed), True),
        # tau-bench's one agent: PyMC's ADVI itself fails to compile (numba IndexError), before any check
        "beta-binomial, simulated 4 agents x 50 tasks x 4 runs": (build_beta_binomial(binary), True),
        "ordinal, wine judges": (build_mixed(_wine(), "rating ~ temp + contact + (1|judge)", family="ordinal"), True),
        "crossed, SWE-bench bash-only": (build_crossed(load_swebench_bash_only()), True),
    }  # fmt: skip


def _elpd(dt: Any) -> float:
    import arviz_stats as azs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return round(float(azs.loo(dt).elpd), 1)


def _row(name: str, method: str, ap: Any, nuts: Any, loo: bool) -> dict[str, Any]:
    row = {"case": name, "method": method, "khat": round(float(ap.attrs["psis_khat"]), 2),
           "threshold": round(float(ap.attrs["psis_khat_threshold"]), 2),
           "fit_s": round(float(ap.attrs["fit_time"]), 1),
           "psis_s": round(float(ap.attrs.get("psis_time", float("nan"))), 1)}  # fmt: skip
    if nuts is not None:
        err = approximation_error(ap, nuts)
        ratios = [float(err[k]) for k in err.data_vars if k.endswith("_sd_ratio") and np.isfinite(float(err[k]))]
        shifts = [float(err[k]) for k in err.data_vars if k.endswith("_mean_shift") and np.isfinite(float(err[k]))]
        row |= {"sd_ratio_min": round(min(ratios), 2), "sd_ratio_max": round(max(ratios), 2),
                "max_mean_shift": round(max(shifts), 2)}  # fmt: skip
        if loo:
            row |= {"elpd_loo": _elpd(ap), "elpd_loo_nuts": _elpd(nuts)}
    return row


def psis_table(skip: int = 0) -> pd.DataFrame:
    """k-hat of advi and fullrank_advi on four cases (after the first ``skip``), beside the error against NUTS."""
    rows = []
    for name, (model, with_nuts) in list(_cases().items())[skip:]:
        loo = name.startswith("ordinal")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nuts = None
            if with_nuts:
                nuts = fit(model, draws=1000, tune=1000, chains=4, rng=1, posterior_predictive=False,
                           log_likelihood=loo)  # fmt: skip
            for method in ("advi", "fullrank_advi"):
                try:
                    ap = fit_approx(model, method=method, rng=2, log_likelihood=loo)
                except FloatingPointError as e:  # PyMC's ADVI diverged: no fit to check
                    rows.append({"case": name, "method": method, "failed": str(e).splitlines()[0]})
                else:
                    rows.append(_row(name, method, ap, nuts, loo))
                print(json.dumps(rows[-1]), flush=True)
    return pd.DataFrame(rows)


if __name__ == "__main__":
    if sys.argv[1:2] == ["psis"]:
        print(psis_table(int(sys.argv[2]) if len(sys.argv) > 2 else 0).to_string(index=False))
    else:
        print(json.dumps(measure(), indent=1))
