"""Why the Bayesian METR horizons disagreed with METR's method: one change at a time (issue 26 item 6).

On METR's runs (binarised scores, ``$HIERBENCH_SHARED_DATA/metr``) every variant
below estimates each agent's 50% time horizon (minutes) and the doubling time of
the frontier horizons over release dates (days; METR's rule: agents state of the
art when released, from 2019 on, and from 2023 on). The variants walk from METR's
estimator to the Bayesian model one step at a time:

- METR's per-agent weighted, penalised logistic regression (``hierbench.freq``),
  then without the penalty, without the weights, on the continuous scores;
- one logistic regression with a slope shared by all agents (statsmodels GLM);
- maximum-likelihood GLMMs (Laplace, ``hierbench.freq.fit_crossed_ml``) with
  agent-specific slopes and task, agent x task and task-family effects;
- with ``--bayes``: the Bayesian model (``hierbench.bayes.build_horizon``) as it
  was (uncentred length, ``Normal(0, 2.5)`` coefficients), centred with the same
  prior, and as it is now (centred, ``Normal(0, 10)``); 300 draws x 2 chains each
  (about 40 s a fit on a loaded 2-core machine).

Run: ``python benchmarks/bench_horizon_variants.py [--bayes]``; the table is in
``models/horizon/card.md``.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
import xarray as xr
import yaml

from hierbench import bayes
from hierbench import freq
from hierbench import metrics
from hierbench.data import load_metr
from hierbench.data import shared_data_dir

AGENTS = ["Claude 3.5 Sonnet (New)", "o1", "o1-preview", "Claude 3.5 Sonnet (Old)", "GPT-4o", "GPT-4 0314",
          "gpt-3.5-turbo-instruct"]  # fmt: skip
BASE = "score ~ 0 + agent + agent:log2_minutes"


def _doubling(h50: pd.Series, dates: dict, after: str) -> float:
    """METR's trend through point estimates (frontier agents, ``ln`` horizon on release date)."""
    est = xr.DataArray(h50.to_numpy()[:, None], dims=("agent", "success"), coords={"agent": h50.index, "success": [0.5]})
    res = freq.TimeHorizonResult(estimate=est, ci=est, coef=est, resamples=est.expand_dims(resample=1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(freq.doubling_time(res, dates, missing="skip", after=after).estimate)


def _metr(ds: xr.Dataset, **kw) -> pd.Series:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return freq.time_horizon(ds, n_resamples=0, success=[0.5], **kw).estimate.sel(success=0.5).to_series()


def _shared_slope_glm(ds: xr.Dataset) -> pd.Series:
    """One logistic regression, an intercept per agent and one slope (statsmodels, each run equal)."""
    import statsmodels.api as sm

    df = ds["score"].to_dataframe().dropna(subset=["score"]).reset_index()
    df["x"] = np.log2(df["human_minutes"])
    X = pd.get_dummies(df["agent"], dtype=float).assign(x=df["x"])
    b = sm.GLM(df["score"], X, family=sm.families.Binomial()).fit().params
    return pd.Series({a: 2 ** (-b[a] / b["x"]) for a in ds.agent.values})


def _glmm(ds: xr.Dataset, formula: str) -> pd.Series:
    """Maximum-likelihood GLMM (Laplace); the 50% point of a symmetric effect is the line's zero."""
    d = ds.sel(agent=[a for a in ds.agent.values if a != "davinci-002"])  # all failures: no ML estimate
    d = d.assign_coords(log2_minutes=("task", np.log2(d["human_minutes"].values)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e = freq.fit_crossed_ml(d, formula, intervals="wald").estimate.to_series()
    slope = {a: e.get(f"agent[{a}]:log2_minutes", e.get("log2_minutes")) for a in d.agent.values}
    return pd.Series({a: 2 ** (-e[f"agent[{a}]"] / slope[a]) for a in d.agent.values})


def _bayes(ds: xr.Dataset, formula: str | None, sigma: float, rng: int) -> pd.Series:
    pri = {"beta": {"dist": "Normal", "mu": 0.0, "sigma": sigma}}
    if formula is None:
        m = bayes.build_horizon(ds, priors=pri)
    else:  # the model as built before the fix: uncentred length
        d = ds.assign_coords(log2_minutes=("task", np.log2(ds["human_minutes"].values)))
        m = bayes.build_mixed(d, formula, family="binomial", priors=pri)
    fit = bayes.fit(m, draws=300, tune=300, chains=2, rng=rng, progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return metrics.time_horizon(fit, m, success=[0.5]).estimate.sel(success=0.5).to_series()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bayes", action="store_true", help="add the three Bayesian fits (about 2 minutes)")
    args = p.parse_args()
    ds = load_metr()
    with open(shared_data_dir() / "metr" / "release_dates_19b0311.yaml") as fh:
        dates = yaml.safe_load(fh)
    full = BASE + " + (1|task) + (1|cluster) + (1|agent:task)"
    rows = {
        "METR (weights, penalty 0.1)": lambda: _metr(ds),
        "METR, no penalty": lambda: _metr(ds, regularization=0.0),
        "METR, no penalty, runs equal": lambda: _metr(ds, regularization=0.0, weights=None),
        "METR on continuous scores": lambda: _metr(load_metr(score="score")),
        "GLM, one shared slope": lambda: _shared_slope_glm(ds),
        "GLMM + (1|task)": lambda: _glmm(ds, BASE + " + (1|task)"),
        "GLMM + (1|task) + (1|agent:task)": lambda: _glmm(ds, BASE + " + (1|task) + (1|agent:task)"),
        "GLMM + (1|task) + (1|cluster)": lambda: _glmm(ds, BASE + " + (1|task) + (1|cluster)"),
        "GLMM, Bayesian model's terms": lambda: _glmm(ds, full),
        "GLMM, those terms, shared slope": lambda: _glmm(ds, full.replace("agent:log2_minutes", "log2_minutes")),
    }
    if args.bayes:
        rows["Bayes before (uncentred, N(0, 2.5))"] = lambda: _bayes(ds, full, 2.5, 1)
        rows["Bayes centred, N(0, 2.5)"] = lambda: _bayes(ds, None, 2.5, 1)
        rows["Bayes now (centred, N(0, 10))"] = lambda: _bayes(ds, None, 10.0, 1)
    table = {}
    for name, run in rows.items():
        t0 = time.perf_counter()
        h = run()
        table[name] = {**{a: h.get(a, np.nan) for a in AGENTS}, "doubling 2019+": _doubling(h, dates, "2019-01-01"),
                       "doubling 2023+": _doubling(h, dates, "2023-01-01"), "seconds": time.perf_counter() - t0}  # fmt: skip
        print(f"{name}: {time.perf_counter() - t0:.1f} s", flush=True)
    out = pd.DataFrame(table).T
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print(out.round(2).to_string())


if __name__ == "__main__":
    main()
