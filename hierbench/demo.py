"""The analysis sections of ``hierbench demo``: fit, compare, plan, report.

Each section takes the :class:`hierbench.cli.DemoContext` (the simulated
evaluation and its true parameters), returns the text it prints, and leaves
its tables in ``ctx.extra`` for the report. Because the data are simulated
from known parameters, every interval is printed beside the truth it is
meant to cover.

PyMC is imported only by the Bayesian section, and plotting only by the
report section.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr
from scipy import integrate
from scipy.special import expit

if TYPE_CHECKING:  # pragma: no cover
    from .cli import DemoContext

__all__ = ["ANALYSIS_SECTIONS", "population_truth"]

PROB = 0.95  # one level for every interval in the demo, so they can sit side by side


def _fast() -> bool:
    return os.environ.get("HIERBENCH_FAST", "") not in ("", "0")


def population_truth(truth: xr.Dataset) -> xr.DataArray:
    """True expected score of each agent on a new task drawn from the task population.

    ``E[expit(mu + a_m + c + b + ab)]`` with the cluster, task and agent x task
    effects normal with the true standard deviations, integrated with
    adaptive quadrature (scipy), independently of the model code.
    """
    s = float(
        np.sqrt(truth["sd_task"] ** 2 + truth["sd_cluster"] ** 2 + truth["sd_agent_task"] ** 2)
    )
    mu = float(truth["mu"])
    vals = []
    for a in truth["agent_effect"].values:
        f = lambda z, a=a: expit(mu + a + s * z) * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)  # noqa: E731
        vals.append(integrate.quad(f, -12, 12)[0])
    return xr.DataArray(vals, dims="agent", coords={"agent": truth["agent"].values})


def _frame(table: xr.Dataset, value_fmt: str = "{:.3f}") -> pd.DataFrame:
    est = table["estimate"]
    lo = table["interval"].sel(ci_bound="lower", drop=True)
    hi = table["interval"].sel(ci_bound="upper", drop=True)
    cols = {}
    for m in table["estimator"].values:
        cols[f"{m}"] = [
            f"{value_fmt.format(e)} [{value_fmt.format(a)}, {value_fmt.format(b)}]"
            for e, a, b in zip(
                est.sel(estimator=m).values,
                lo.sel(estimator=m).values,
                hi.sel(estimator=m).values,
                strict=True,
            )
        ]
    df = pd.DataFrame(cols, index=[str(a) for a in table["agent"].values])
    if "truth" in table:
        df.insert(0, "truth", [value_fmt.format(v) for v in table["truth"].values])
    return df


def _bootstrap_section(ctx: DemoContext) -> str:
    from .compare import side_by_side
    from .freq import bootstrap_ci

    boot = bootstrap_ci(
        ctx.data,
        method="bca",
        n_resamples=1999 if _fast() else 9999,
        prob=PROB,
        rng=ctx.extra.get("seed", 0),
    )
    ctx.extra["bootstrap"] = boot
    truth = population_truth(ctx.truth)
    ctx.extra["population_truth"] = truth
    table = side_by_side({"cluster bootstrap (BCa)": boot}, truth=truth)
    ctx.extra["freq_table"] = table
    covered = int(table["covers"].sum())
    return (
        f"Benchmark mean per agent (mean over tasks of each task's mean score) with a {PROB:.0%}\n"
        "BCa interval from the task-level bootstrap, resampling whole task clusters (the\n"
        "cluster coord) and sharing each resample across agents. The target is the agent's\n"
        "expected score on a new task from the same population; the truth column is that\n"
        "value, computed from the simulation's parameters.\n\n"
        + _frame(table).to_string()
        + f"\n\n{covered} of {table.sizes['agent']} intervals cover the truth."
    )


def _bayes_section(ctx: DemoContext) -> str:
    import warnings

    from .bayes import build_crossed, fit
    from .compare import side_by_side
    from .metrics import posterior_interval

    model = build_crossed(ctx.data)
    draws, tune, chains = (300, 300, 2) if _fast() else (1000, 1000, 4)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dt = fit(model, draws=draws, tune=tune, chains=chains, rng=ctx.extra.get("seed", 0))
    wall = time.perf_counter() - t0
    ctx.extra["fit"] = dt
    conv = [str(w.message) for w in caught if type(w).__name__ == "ConvergenceWarning"]
    post = dt["posterior"].to_dataset()
    new = posterior_interval(post["mean_new_task"], prob=PROB)
    truth = ctx.extra.get("population_truth", population_truth(ctx.truth))
    results = {
        "Bayes crossed (new task)": xr.Dataset(
            {"estimate": post["mean_new_task"].mean(("chain", "draw")), "interval": new}
        )
    }
    if "bootstrap" in ctx.extra:
        results = {"cluster bootstrap (BCa)": ctx.extra["bootstrap"], **results}
    table = side_by_side(results, truth=truth)
    ctx.extra["population_table"] = table
    true_obs = ctx.truth["p"].where(ctx.data["score"].notnull().any("run")).mean("task")
    obs = side_by_side(
        {
            "Bayes crossed (these tasks)": xr.Dataset(
                {
                    "estimate": post["mean_observed"].mean(("chain", "draw")),
                    "interval": posterior_interval(post["mean_observed"], prob=PROB),
                }
            )
        },
        truth=true_obs,
    )
    ctx.extra["observed_table"] = obs
    diag = {k.removeprefix("diag_"): v for k, v in dt.attrs.items() if k.startswith("diag_")}
    sd_rows = []
    for name in ("sd_agent", "sd_task", "sd_agent_task", "sd_cluster"):
        if name in post:
            d = post[name]
            q = d.quantile([(1 - PROB) / 2, (1 + PROB) / 2], dim=("chain", "draw")).values
            sd_rows.append(
                {
                    "parameter": name,
                    "truth": float(ctx.truth[name]),
                    "posterior mean": float(d.mean()),
                    f"{PROB:.0%} lower": q[0],
                    f"{PROB:.0%} upper": q[1],
                }
            )
    sds = pd.DataFrame(sd_rows).set_index("parameter")
    ctx.extra["sd_table"] = sds
    lines = [
        f"Crossed logistic model (agent + task + cluster + agent x task, the agent x task effect\n"
        f"integrated out by Gauss-Hermite quadrature), {chains} chains x {draws} draws with\n"
        f"{dt.attrs.get('sampler', 'nutpie')}: {wall:.0f} s wall "
        f"(compile {float(dt.attrs.get('compile_time', np.nan)):.0f} s).",
        "Diagnostics: "
        + ", ".join(f"{k} = {v}" for k, v in diag.items() if not isinstance(v, str) or len(v) < 40),
        "",
        "Expected score on a new task, both methods beside the truth:",
        _frame(table).to_string(),
        "",
        "Mean over the tasks each agent ran (the finite benchmark), Bayes only:",
        _frame(obs).to_string(),
        "",
        "Logit-scale standard deviations:",
        sds.to_string(float_format="{:.3f}".format),
    ]
    if conv:
        lines += ["", "Convergence warnings: " + "; ".join(conv)]
    return "\n".join(lines)


def _passk_section(ctx: DemoContext) -> str:
    from .freq import pass_hat_k
    from .metrics import pass_hat_k as post_pass_hat_k

    ks = [1, 2, 3, 4, 5]
    freq = pass_hat_k(ctx.data, ks)
    n_runs = ctx.data["score"].notnull().sum("run")
    frames = []
    for k in ks:
        # the truth over the cells the unbiased estimator can use (at least k runs)
        p = ctx.truth["p"].where(n_runs >= k)
        df = pd.DataFrame(
            {
                "truth": (p**k).mean("task").to_series(),
                "unbiased C(c,k)/C(n,k)": freq.mean.sel(k=k).to_series(),
            }
        )
        if "fit" in ctx.extra:
            bay = post_pass_hat_k(ctx.extra["fit"], k=k, prob=PROB)
            df["Bayes posterior mean"] = bay["mean"].sel(k=k).to_series()
            ci = bay["ci"].sel(k=k)
            df[f"Bayes {PROB:.0%} lower"] = ci.sel(ci_bound="lower").to_series()
            df[f"Bayes {PROB:.0%} upper"] = ci.sel(ci_bound="upper").to_series()
        df.insert(0, "k", k)
        frames.append(df)
    table = pd.concat(frames)
    table.index = table.index.astype(str)
    ctx.extra["passk_table"] = table
    return (
        "pass^k, the chance that k independent attempts all succeed (tau-bench's reliability\n"
        "metric), averaged over the tasks each agent ran: the truth, the unbiased estimator and\n"
        "the posterior-predictive value of the crossed model.\n\n"
        + table.to_string(float_format="{:.3f}".format)
    )


#: Analysis sections appended to the CLI's data sections.
ANALYSIS_SECTIONS = [
    ("How good is each agent? (frequentist)", _bootstrap_section),
    ("How good is each agent? (Bayesian, beside the frequentist)", _bayes_section),
    ("Reliability: pass^k", _passk_section),
]
