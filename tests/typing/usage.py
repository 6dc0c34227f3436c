"""The public API as the README and the notebooks use it, for mypy (never run).

``tests/test_typing.py`` runs mypy on this file with ``[tool.mypy]`` from pyproject.toml:
every call below is checked against the public signatures (argument names, keyword-only
arguments, literal choices) and every use of a result against its declared type. A
signature that changes under a user's code fails here first.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

import hierbench as hb
from hierbench import freq
from hierbench.compare import side_by_side
from hierbench.data import from_records
from hierbench.data import load_metr
from hierbench.data import load_swebench_bash_only
from hierbench.data import load_tau_bench_airline
from hierbench.data import read_battles
from hierbench.data import shared_data_dir
from hierbench.data import summarize
from hierbench.data import to_counts
from hierbench.data import to_pair_counts
from hierbench.design import adaptive
from hierbench.design import anchors
from hierbench.design import bank_from_eval
from hierbench.design import replay
from hierbench.design import simulate_stratified_bank
from hierbench.io import load_fit
from hierbench.io import save_dataset
from hierbench.io import save_fit
from hierbench.metrics import head_to_head
from hierbench.metrics import pass_hat_k
from hierbench.metrics import posterior_interval
from hierbench.metrics import posterior_summary
from hierbench.metrics import prob_superiority
from hierbench.metrics import rank_probabilities
from hierbench.testing import simulate_eval


def readers(path: str) -> xr.Dataset:
    """README: read runs, summarise them, count them."""
    ds = from_records(
        path, agent="model", task="task_id", score="reward", error="crashed", cluster="repo"
    )
    per_agent: xr.Dataset = summarize(ds)
    counts: xr.Dataset = to_counts(ds)
    tau = load_tau_bench_airline()
    metr = load_metr(score="score", include_human=False)
    swe = load_swebench_bash_only(shared_data_dir())
    frame = pd.DataFrame({"left": ["a"], "right": ["b"], "winner": ["left"]})
    pairs = to_pair_counts(read_battles(frame, position=False))
    return xr.merge([per_agent, counts["n_runs"].sum(), tau, metr, swe, pairs], join="outer")


def frequentist(ds: xr.Dataset) -> list[xr.DataArray]:
    """README and notebook 01: pass^k, bootstrap, paired comparisons, ranks."""
    pk = freq.pass_hat_k(ds, [1, 2, 3, 4])
    boot = freq.bootstrap_ci(ds, method="bca", prob=0.95, rng=0)
    pairs = freq.compare_agents(ds, rng=1)
    ranks = freq.rank_uncertainty(ds, n_resamples=1000, prob=0.95, rng=2)
    tiers: list[list[str]] = ranks.groups()
    a, b = ds["score"].sel(agent="a"), ds["score"].sel(agent="b")
    paired = freq.paired_test(a, b, n_resamples=999, rng=3)
    pooled = freq.pooled_binomial_interval(ds, prob=0.95)
    band = freq.wilson_interval(9, 10, prob=0.95)
    cs = freq.confidence_sequence(ds["score"].isel(agent=0, run=0), prob=0.95)
    assert tiers
    return [pk.estimate, pk.ci, boot.ci, pairs.estimate, ranks.group, paired.ci, pooled.ci, band,
            cs.bounds]  # fmt: skip


def variance(ds: xr.Dataset) -> float:
    """Notebook 02: G-study, D-study, intervals and allocation."""
    vc = freq.variance_components(ds, design="run:(agent*(task:cluster))", prob=0.95)
    study: xr.Dataset = vc.d_study(n_tasks=np.array([50, 100]), n_runs=3)
    coef: xr.Dataset = vc.coefficients(ci="profile")
    lo_hi: xr.DataArray = vc.profile_ci(0.9)
    plan = freq.optimal_allocation(1000.0, cost_task=5.0, cost_run=1.0, components=vc)
    table: pd.DataFrame = vc.to_frame()
    assert study.sizes and coef.sizes and lo_hi.size and plan.sizes and len(table)
    return vc.e_rho2 + vc.phi


def judges_and_pairs(y: np.ndarray, p: np.ndarray, battles: pd.DataFrame) -> xr.DataArray:
    """Notebook 06 and bench_beyond_coverage: judge metrics, Bradley-Terry ML."""
    m = freq.classification_metrics(y, p, n_resamples=1000, method="percentile", rng=0)
    k = freq.cohen_kappa(y, p, n_resamples=1000, rng=1)
    bt = freq.fit_bradley_terry_ml(
        read_battles(battles, position=False), scale="logit", reference="a0", rng=2
    )
    lower: xr.DataArray = bt.ci.sel(ci_bound="lower")
    return xr.concat([m.ci.sel(metric="f1"), k.ci, lower], dim="what")


def bayes_on_a_saved_fit(path: Path) -> xr.Dataset:
    """README: metrics on a saved fit (no PyMC needed), side by side with the bootstrap."""
    fit = load_fit(path)
    save_fit(fit, path.with_suffix(".zarr"), engine="zarr", groups="compact")
    phk = pass_hat_k(fit, k=[1, 2, 3])
    realised = pass_hat_k(fit, k=2, realised=True, rng=4)
    sup = prob_superiority(fit)
    ranks = rank_probabilities(fit, higher_is_better=True)
    h2h = head_to_head(fit, prob=0.9)
    draws = fit["posterior"]["mean_new_task"]
    assert isinstance(draws, xr.DataArray)
    bayes = posterior_summary(draws, prob=0.95, kind="hdi")
    eti: xr.DataArray = posterior_interval(draws, kind="eti")
    boot = freq.bootstrap_ci(load_metr(), rng=0)
    assert eti.size and sup is not None and ranks is not None and h2h is not None
    return side_by_side({"bootstrap": boot, "Bayes": bayes, "pass^k": phk, "this set": realised})


def design(ds: xr.Dataset, out: Path) -> xr.Dataset:
    """Notebooks 05 and 07: budgeted replay, IRT calibration, anchors, adaptive evaluation."""
    bank = bank_from_eval(ds, "gpt-4o", n_runs=4)
    sim = simulate_stratified_bank(200, 5, rng=0)
    rep = replay(bank, designs=("uniform", "joint"), budgets=[50, 100], n_rep=100, rng=1)
    cal = freq.fit_irt_ml(ds, model="2pl", rng=2)
    chosen = anchors(cal.bank, 20, method="information", rng=3)
    run = adaptive(cal.bank, ds.sel(agent="a"), budget=30, prob=0.9, rng=4)
    score = freq.irt_score(cal.bank, ds.sel(agent=["a"]), prob=0.9, rng=5)
    save_dataset(ds, out / "ds.nc", overwrite=True)
    assert chosen is not None and sim.size
    return xr.merge([rep, run.to_dataset(), score.to_dataset()], compat="override")


def simulated() -> xr.Dataset:
    """Simulate data with its true parameters (the testing helpers)."""
    ds, truth = simulate_eval(n_agents=3, n_tasks=20, n_runs=2, rng=0)
    assert hb.DEFAULT_PROB == 0.95
    return ds.assign(true_mu=truth["mu"] if "mu" in truth else 0.0)
