"""An IRT fit's report sets `mean_task` (probability scale) beside the bootstrap; `ability` still ranks (audit N, 5).

The fit here is a posterior of draws set in the test (no sampling): the Bayesian columns are checked
against numpy's mean and quantiles of those draws, the bootstrap columns against
hierbench.freq.bootstrap_ci called directly with the report's settings.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench import freq
from hierbench.report import Report
from hierbench.report._context import _Context
from hierbench.report._context import _Skip
from hierbench.report._sec_abilities import _sec_abilities
from hierbench.report._sec_side import _sec_side
from hierbench.testing import simulate_eval

PROB, RNG, N_RES = 0.95, 2, 99


def _log() -> xr.Dataset:
    """3 agents x 16 tasks x 2 runs; agent_02 never ran the first 3 tasks."""
    ds, _ = simulate_eval(n_agents=3, n_tasks=16, n_runs=2, rng=0)
    ds["score"][2, :3, :] = np.nan
    return ds


def _fit(ds: xr.Dataset, with_mean_task: bool = True) -> tuple[xr.DataTree, dict]:
    rng = np.random.default_rng(4)
    C, D, A = 2, 50, ds.sizes["agent"]
    ability = rng.normal([-1.0, 0.0, 1.0], 0.3, (C, D, A))
    mean_task = 1 / (1 + np.exp(-ability))  # any probability-scale draws: the report only summarises them
    coords = {"chain": np.arange(C), "draw": np.arange(D), "agent": ds["agent"].values, "task": ds["task"].values}
    post = xr.Dataset(
        {"ability": (("chain", "draw", "agent"), ability, {"scale": "logit per unit discrimination"}),
         "intercept": (("chain", "draw", "task"), rng.normal(0, 1, (C, D, ds.sizes["task"])))},
        coords=coords,
    )  # fmt: skip
    if with_mean_task:
        post["mean_task"] = (("chain", "draw", "agent"), mean_task,
                             {"scale": "probability", "meaning": "mean success probability over the data's tasks"})  # fmt: skip
    fit = xr.DataTree.from_dict({"posterior": post})
    fit.attrs = {"hierbench_model": "irt_2pl"}
    return fit, {"ability": ability, "mean_task": mean_task}


_SID = {_sec_side: "side-by-side", _sec_abilities: "abilities"}


def _run(section, fit, ds):
    ctx = _Context(fit=fit, data=ds, prob=PROB, bootstrap_method="percentile", truth=None, subset=[],
                   say=lambda *a: None, freq="auto", rng=RNG, n_resamples=N_RES)  # fmt: skip
    rep = Report("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        section(ctx, rep, _SID[section])
    return rep.blocks[-1]


def _by_hand(draws: np.ndarray) -> np.ndarray:
    """(agent, [mean, 2.5%, 97.5%]) over chain and draw."""
    flat = draws.reshape(-1, draws.shape[-1])
    return np.column_stack([flat.mean(0), np.quantile(flat, 0.025, axis=0), np.quantile(flat, 0.975, axis=0)])


def _boot(ds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return freq.bootstrap_ci(ds, method="percentile", n_resamples=N_RES, prob=PROB, rng=RNG)


def test_side_by_side_puts_mean_task_beside_the_bootstrap_and_says_which_tasks_it_averages():
    ds = _log()
    fit, dr = _fit(ds)
    block = _run(_sec_side, fit, ds)
    t = block["table"]
    t = t.loc[[str(a) for a in ds["agent"].values]]  # the report's order (by mean score) back to the draws' (the log's)
    np.testing.assert_allclose(t[["Bayes ETI estimate", "Bayes ETI lower", "Bayes ETI upper"]].to_numpy(float),
                               _by_hand(dr["mean_task"]), rtol=1e-12)  # fmt: skip
    ref = _boot(ds)
    np.testing.assert_allclose(t["bootstrap percentile estimate"].to_numpy(float), ref.estimate.values, rtol=1e-12)
    np.testing.assert_allclose(t["bootstrap percentile lower"].to_numpy(float),
                               ref.ci.sel(ci_bound="lower").values, rtol=1e-12)  # fmt: skip
    text = block["text"]
    assert "`mean_task`" in text and "all 16 of them" in text and "including tasks it never ran" in text
    assert "agent_02 (13 of 16)" in text and "ranks and pairwise sections use `ability`" in text


def test_abilities_draw_mean_task_with_the_bootstrap_and_keep_ability_in_the_table():
    ds = _log()
    fit, dr = _fit(ds)
    t = _run(_sec_abilities, fit, ds)["table"]
    t = t.loc[[str(a) for a in ds["agent"].values]]  # the report's order (by mean score) back to the draws' (the log's)
    got = t[[f"Bayes irt_2pl mean_task (95% ETI) {c}" for c in ("estimate", "lower", "upper")]].to_numpy(float)
    np.testing.assert_allclose(got, _by_hand(dr["mean_task"]), rtol=1e-12)
    got = t[[f"Bayes ability (95% ETI, model scale) {c}" for c in ("estimate", "lower", "upper")]].to_numpy(float)
    np.testing.assert_allclose(got, _by_hand(dr["ability"]), rtol=1e-12)
    assert any(c.startswith("cluster bootstrap") or c.startswith("task bootstrap") for c in t.columns)


def test_ranks_still_use_ability_and_a_fit_without_mean_task_keeps_the_old_refusal():
    ds = _log()
    fit, _ = _fit(ds)
    ctx = _Context(fit=fit, data=ds, prob=PROB, freq="auto")
    assert ctx.var == "ability" and ctx.agent_draws().name == "ability"  # what the ranks and pairs sections rank
    bare, _ = _fit(ds, with_mean_task=False)
    with pytest.raises(_Skip, match="on the model's scale, the bootstrap on the score scale"):
        _run(_sec_side, bare, ds)
