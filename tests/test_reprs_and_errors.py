"""Reprs say what a result is in a few lines; errors name the argument, the rule and the values.

Audit findings: IRTBank printed two 1000 x 500 arrays; plans and anchor sets
dumped whole arrays; the crossed ML fit did not say its scale, the IRT
calibration not that its estimate is difficulty, irt_score lost the agent's
name; fit_beta_binomial_ml printed "[nan, nan]" as a 95% profile interval;
posterior_summary on a DataTree died inside arviz; budget_interval's coord
mismatch did not show the values; SWE-bench's flagged agent loaded silently;
a Bayesian fit printed pytensor's object-mode notice and PyMC's "Sampling: [y]".
"""

from __future__ import annotations

import gzip
import json
import logging
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import optimize
from scipy import stats

from hierbench import HierbenchWarning
from hierbench.data import load_swebench_bash_only
from hierbench.design import anchors
from hierbench.design import budget_interval
from hierbench.design import plan_joint
from hierbench.design import plan_subset
from hierbench.design import plan_uniform
from hierbench.design import simulate_irt_log
from hierbench.freq import IRTBank
from hierbench.freq import beta_binomial_profile_ci
from hierbench.freq import fit_beta_binomial_ml
from hierbench.freq import fit_crossed_ml
from hierbench.freq import fit_irt_ml
from hierbench.freq import irt_score
from hierbench.metrics import posterior_summary
from hierbench.testing import simulate_eval


def _bank(a: np.ndarray, d: np.ndarray, n_draws: int = 4) -> IRTBank:
    tasks = [f"t{i}" for i in range(a.size)]
    tile = lambda v: xr.DataArray(np.tile(v, (n_draws, 1)), dims=("sample", "task"), coords={"task": tasks})  # noqa: E731
    return IRTBank(tile(a), tile(d))


# --------------------------------------------------------------------------- reprs


def test_irt_bank_repr_is_sizes_and_item_spread_not_arrays():
    # a = 2 everywhere, d = (-2, 0, 4): difficulty b = -d / a = (1, 0, -2) by hand,
    # median 0, range [-2, 1]
    bank = _bank(np.full(3, 2.0), np.array([-2.0, 0.0, 4.0]))
    text = repr(bank)
    assert text.startswith("IRTBank: 2PL item bank, 3 tasks x 4 draws")
    assert "difficulty (posterior mean): median 0, range [-2, 1]" in text
    assert "discrimination (posterior mean): median 2, range [2, 2]" in text
    assert "array" not in text and len(text.splitlines()) <= 4


def test_irt_calibration_repr_says_difficulty_and_score_keeps_the_agent():
    log, _ = simulate_irt_log(8, 12, rng=0)
    cal = fit_irt_ml(log, n_draws=50, rng=0)
    head = repr(cal).splitlines()[:2]
    assert head[0] == "IRTCalibrationResult: 2PL penalised (MAP, empirical-Bayes priors) calibration of 12 tasks on 8 agents"
    assert "difficulty b_t per task" in head[1] and "95% eti intervals over 50 laplace draws" in head[1]
    # what the repr calls difficulty is the ability where success is 1/2: b = -d / a at the mode
    np.testing.assert_allclose(cal.estimate, -cal.intercept / cal.discrimination, rtol=1e-10)
    assert len(repr(cal).splitlines()) <= 10

    one = log["score"].isel(agent=[3])  # an agent dim of size one
    name = str(one["agent"].values[0])
    res = irt_score(cal.bank, one, rng=0)
    assert res.agent == name and f"agent {name!r}" in repr(res)
    frame = res.to_frame()
    assert frame.index.name == "agent" and frame.index.tolist() == [name]
    anonymous = irt_score(cal.bank, one.isel(agent=0, drop=True), rng=0)
    assert anonymous.agent is None and "a new agent" in repr(anonymous)


def test_crossed_ml_repr_says_the_logit_scale():
    ds, _ = simulate_eval(n_agents=3, n_tasks=15, n_runs=2, rng=1)
    text = repr(fit_crossed_ml(ds, intervals="wald"))
    lines = text.splitlines()
    assert "ability per agent (logit scale" in lines[1] and "95% normal intervals" in lines[1]
    assert "random terms' sds (logit scale)" in text and "loglik" in lines[-1]


def _beta_binomial_mle(y: np.ndarray, n: np.ndarray) -> float:
    """The mu of the beta-binomial MLE by scipy (Nelder-Mead on log alpha, log beta)."""
    def nll(p):
        return -stats.betabinom.logpmf(y, n, np.exp(p[0]), np.exp(p[1])).sum()

    opt = optimize.minimize(nll, [0.0, 0.0], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-12})
    a, b = np.exp(opt.x)
    return a / (a + b)


def test_beta_binomial_repr_says_the_interval_was_not_computed():
    y, n = np.array([0, 1, 3, 2, 9, 5]), np.full(6, 10)
    mu = _beta_binomial_mle(y, n)
    text = repr(fit_beta_binomial_ml(y, n))
    assert "nan" not in text and "profile interval" not in text
    assert "not computed by fit_beta_binomial_ml" in text and "beta_binomial_profile_ci" in text
    assert f"mu {mu:.4g}," in text
    computed = repr(beta_binomial_profile_ci(y, n))
    assert "95% profile interval" in computed and "nan" not in computed


def test_plans_and_anchor_sets_print_a_few_lines():
    uniform = repr(plan_uniform(50, 4, 80, rng=0))
    assert uniform.splitlines()[0] == (
        "BudgetPlan: design U (uniform), budget 80 labels, 80 bought of 50 tasks x 4 runs = 200 slots"
    )
    assert "array" not in uniform and len(uniform.splitlines()) == 3
    joint = repr(plan_joint(50, 4, 70, rng=0))
    assert "a second in 20 audited tasks" in joint  # t = budget - M = 70 - 50

    # information anchors have no weights: their mean is biased (SWE-bench: 1.4-3.9x a random subset's RMSE)
    info = anchors(_bank(np.linspace(0.5, 2, 10), np.linspace(-2, 2, 10)), 3, method="information")
    anchor_text = repr(info)
    assert np.isnan(info.weights).all()
    assert anchor_text.startswith("AnchorSet: 3 anchor tasks (information), no weights: chosen for their information")
    assert "weighted mean is biased" in anchor_text
    # a third line says that the anchors are the model's choice: only irt_score uses them, model-based
    assert len(anchor_text.splitlines()) == 3
    assert anchor_text.splitlines()[2].startswith("  chosen by the bank's model, not drawn at random: only irt_score "
                                                  "uses them, and its interval is model-based, with no model-free")
    cluster_text = repr(anchors(_bank(np.linspace(0.5, 2, 10), np.linspace(-2, 2, 10)), 3, rng=0))
    assert "(irt_score, or the weighted mean) is model-based, with no model-free guarantee" in cluster_text

    subset = repr(plan_subset(100, 10, rng=0))  # simple random sampling: 10 / 100 each
    assert subset.splitlines()[0] == "SubsetPlan: design 'srs', 10 of 100 tasks drawn; inclusion probability 0.1 each"
    assert "(6 more)" in subset and len(subset.splitlines()) == 2


# --------------------------------------------------------------------------- errors


def test_budget_interval_coord_mismatch_shows_values_and_types():
    plan = plan_uniform(50, 4, 80, rng=0)
    labels = xr.DataArray(np.zeros((50, 4)), dims=("task", "run"),
                          coords={"task": np.arange(50).astype(str), "run": np.arange(4)})
    with pytest.raises(ValueError, match=r"labels \['0', '1', '2', '3', \.\.\. \(46 more\)\] \(str\), "
                                         r"plan \[0, 1, 2, 3, \.\.\. \(46 more\)\] \(int64\)"):
        budget_interval(plan, labels)
    shuffled = labels.assign_coords(task=np.arange(50)[::-1])
    with pytest.raises(ValueError, match="the same labels in another order"):
        budget_interval(plan, shuffled)


def test_posterior_summary_refuses_a_whole_fit_by_name():
    draws = xr.DataArray(np.zeros((2, 5, 3)), dims=("chain", "draw", "agent"))
    tree = xr.DataTree.from_dict({"posterior": xr.Dataset({"sigma": draws.isel(agent=0), "ability": draws})})
    with pytest.raises(TypeError, match=r"`draws` .*got a DataTree.*fit\.posterior\[\"ability\"\]"):
        posterior_summary(tree)
    with pytest.raises(TypeError, match=r"got a Dataset with variables \['ability', 'sigma'\]"):
        posterior_summary(tree["posterior"].to_dataset())
    with pytest.raises(ValueError, match=r"lacks \['chain'\]"):
        posterior_summary(draws.isel(chain=0))


# --------------------------------------------------------------------------- SWE-bench's own flag


def _write_swebench(root, flagged_resolved: list[int]) -> None:
    rows = []
    for model, folder, resolved, flag in (("A", "fa", [1, 0, 1], 0), ("B", "fb", flagged_resolved, 1)):
        for i, r in enumerate(resolved):
            rows.append({"leaderboard": "bash-only", "model_name": model, "folder": folder, "date": "2025-01-01",
                         "task_id": f"repo__repo-{i}", "resolved": r, "api_calls": 3, "cost": 0.1,
                         "flag_per_instance_disagrees_with_reported": flag})
    (root / "swebench_bash_only").mkdir()
    with gzip.open(root / "swebench_bash_only" / "swebench_verified_bash_only_per_instance.csv.gz", "wt") as fh:
        pd.DataFrame(rows).to_csv(fh, index=False)
    pd.DataFrame({"leaderboard": ["bash-only"], "name": ["B"], "folder": ["fb"], "reported_resolved_pct": [60.0]}).to_csv(
        root / "swebench_bash_only" / "swebench_leaderboard_reported_resolved.csv", index=False
    )


def test_swebench_loader_names_the_agents_its_file_flags(tmp_path):
    _write_swebench(tmp_path, [1, 0, 0])
    with pytest.warns(HierbenchWarning, match=r"'B' on 3 of 3 runs \(resolved 33\.3% here, the leaderboard "
                                              r"reports 60\.0%\)") as seen:
        ds = load_swebench_bash_only(tmp_path)
    assert "flag_per_instance_disagrees_with_reported" in str(seen[0].message)
    assert json.loads(ds.attrs["flagged_agents"]) == {"B": 3}
    assert ds.attrs["flag_column"] == "flag_per_instance_disagrees_with_reported"
    # nothing dropped or changed: both agents, B's scores as written
    assert ds.sizes["agent"] == 2
    np.testing.assert_array_equal(ds["score"].sel(agent="B").values.ravel(), [1, 0, 0])


def test_swebench_real_file_flags_claude_3_7_sonnet(shared_data):
    raw = pd.read_csv(shared_data / "swebench_bash_only" / "swebench_verified_bash_only_per_instance.csv.gz")
    flagged = raw[raw["flag_per_instance_disagrees_with_reported"] == 1].groupby("model_name").size().to_dict()
    with pytest.warns(HierbenchWarning, match="Claude 3.7 Sonnet"):
        ds = load_swebench_bash_only(shared_data)
    assert json.loads(ds.attrs["flagged_agents"]) == flagged == {"Claude 3.7 Sonnet (20250219)": 500}


# --------------------------------------------------------------------------- Bayes fit output


def test_forward_sampling_drops_only_the_object_mode_notice_and_the_sampling_line(caplog):
    pm = pytest.importorskip("pymc")
    from hierbench.bayes._sampler._fit import _quiet_forward_sampling

    with pm.Model() as model:
        mu = pm.Normal("mu")
        pm.CustomDist("y", mu, logp=lambda v, m: -0.5 * (v - m) ** 2,
                      random=lambda m, rng=None, size=None: rng.normal(m, 1.0, size=size), observed=np.zeros(3))
    post = xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, 5)))})})

    def run(quiet: bool) -> tuple[list[str], str, int]:
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="pymc.sampling.forward"), warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            if quiet:
                with _quiet_forward_sampling():
                    pm.sample_posterior_predictive(post, model=model, random_seed=0, progressbar=False)
                    warnings.warn("another notice", UserWarning)  # noqa: B028 - must still pass
            else:
                pm.sample_posterior_predictive(post, model=model, random_seed=0, progressbar=False)
            level = logging.getLogger("pymc.sampling.forward").level
        return [str(w.message) for w in seen], caplog.text, level

    loud, loud_log, _ = run(False)  # the noise exists without the filter (PyMC logs at INFO) ...
    assert any("object mode" in m for m in loud) and "Sampling: [y]" in loud_log
    quiet, quiet_log, level = run(True)  # ... and only it goes; the logger's level is restored
    assert quiet == ["another notice"] and "Sampling" not in quiet_log
    assert level == logging.INFO
