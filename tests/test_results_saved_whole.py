"""Every result keeps what it holds when saved and framed (audit S: findings S2-S14, S17, ``fit_check``).

For a small instance of every public result class, ``to_dataset()`` written by
``hierbench.io.save_dataset`` and read back by ``load_dataset`` holds every field the
class does not name as left out (``_dataset_exclude``, or ``_not_saved`` with the
reason), with the values the result holds in memory; and every second interval over the
estimate's dims is in ``to_frame()``. The reference is the result's own fields, not the
code that saves them. Then the findings' particulars, against values set here or
counted by hand (numpy, pandas).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import pkgutil
import warnings
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from _helpers import fake_fit

import hierbench
from hierbench import compare
from hierbench import design
from hierbench import freq
from hierbench import metrics
from hierbench._base import HierbenchWarning
from hierbench._base import Result
from hierbench._base._results import json_ready
from hierbench.data import model_design
from hierbench.data import read_battles
from hierbench.freq import IRTBank
from hierbench.io import load_dataset
from hierbench.io import save_dataset
from hierbench.testing import simulate_eval

# ----------------------------------------------------------------------------- small instances


def _horizon_log(rng: np.random.Generator) -> xr.Dataset:
    """Three agents on 30 tasks in 12 families, 1-4 runs, success falling with log2 minutes."""
    fam = np.arange(30) % 12
    x = np.clip(rng.uniform(0.5, 9.5, 12)[fam] + rng.normal(0, 1.0, 30), 0.0, 10.0)
    eta = np.array([[2.0], [3.0], [4.0]]) - 0.5 * x + rng.normal(0, 0.7, (3, 30))
    runs = rng.integers(1, 5, (3, 30))
    y = (rng.random((3, 30, 4)) < 1 / (1 + np.exp(-eta[..., None]))).astype(float)
    y[np.arange(4)[None, None, :] >= runs[..., None]] = np.nan
    return xr.Dataset({"score": (("agent", "task", "run"), y)},
                      coords={"agent": ["a", "b", "c"], "task": [f"t{i}" for i in range(30)],
                              "human_minutes": ("task", 2.0**x), "cluster": ("task", [f"f{f}" for f in fam])})  # fmt: skip


def _battles(rng: np.random.Generator) -> xr.Dataset:
    """Thirty questions, each judged in both orders, among four agents."""
    rows = []
    for q in range(30):
        a, b = rng.choice(["A", "B", "C", "D"], 2, replace=False)
        for left, right in ((a, b), (b, a)):
            rows.append((left, right, rng.choice(["left", "right", "tie"], p=[0.45, 0.45, 0.1]), f"q{q}"))
    return read_battles(pd.DataFrame(rows, columns=["left", "right", "winner", "q"]), task="q")


def _freq_results(out: dict) -> None:
    g = np.random.default_rng(1)
    ds, _ = simulate_eval(n_agents=3, n_tasks=24, n_runs=3, n_clusters=6, rng=0)
    ds["cost"] = ds.score * 0 + g.gamma(2.0, 1.0, ds.score.shape)
    x = ds.score.mean("run")
    out["success_rate"] = freq.success_rate(ds)
    out["pass_hat_k"] = freq.pass_hat_k(ds, [1, 2])
    out["proportion_interval"] = freq.proportion_interval([3, 5], [10, 10])
    out["beta_binomial"] = freq.fit_beta_binomial_ml(ds)
    out["confidence_sequence"] = freq.confidence_sequence(x.sel(agent="agent_00"), x.sel(agent="agent_01"))
    out["bootstrap_ci"] = freq.bootstrap_ci(ds, n_resamples=99, rng=0)
    out["compare_agents"] = freq.compare_agents(ds, n_resamples=99, rng=0)
    out["paired_test"] = freq.paired_test(ds.score.sel(agent="agent_00"), ds.score.sel(agent="agent_01"),
                                          n_resamples=99, rng=0)  # fmt: skip
    out["rank_uncertainty"] = freq.rank_uncertainty(ds, n_resamples=99, rng=0)
    out["quantile_ci"] = freq.quantile_ci(ds, 0.5, var="cost")
    out["pareto_frontier"] = freq.pareto_frontier(ds, n_resamples=99, rng=0)
    rel = ds.assign(score_perturbed=ds.score.where(g.random(ds.score.shape) < 0.9, 0.0))
    out["reliability_profile"] = freq.reliability_profile(rel, k=2, n_resamples=99, rng=0)
    y = g.integers(0, 2, 60)
    pred, sc = np.where(g.random(60) < 0.8, y, 1 - y), np.clip(y * 0.3 + g.random(60) * 0.7, 0, 1)
    out["classification_metrics"] = freq.classification_metrics(y, pred, beta=2.0, n_resamples=99, rng=0)
    out["cohen_kappa"] = freq.cohen_kappa(y, pred, n_resamples=99, rng=0)
    out["pr_curve"] = freq.pr_curve(y, sc, n_resamples=99, rng=0)
    out["threshold_for_recall"] = freq.threshold_for_recall(y, sc, target=0.8, n_resamples=99, rng=0)
    out["rubric_summary"] = freq.rubric_summary(ds.assign(score=ds.score * 4 + 1), n_resamples=99, rng=0)
    bat = _battles(g)
    out["bradley_terry_ml"] = freq.fit_bradley_terry_ml(bat, n_resamples=50, rng=0)
    out["online_elo"] = freq.online_elo(bat, k=8.0, n_orders=10, rng=0)
    out["win_rate"] = freq.win_rate(bat, n_resamples=50, rng=0)
    out["position_consistency"] = freq.position_consistency(bat)
    out["variance_components"] = freq.variance_components(ds)
    out["fit_crossed_ml"] = freq.fit_crossed_ml(ds, intervals="wald")
    mx = freq.fit_crossed_ml(ds.assign_coords(size=("agent", [1.0, 2.0, 3.0])), "score ~ size + (1|task)",
                             intervals="wald")  # fmt: skip
    out["fit_crossed_ml formula"] = mx
    out["mean_response"] = freq.mean_response(mx, "agent")
    out["agent_variance"] = freq.agent_variance(out["fit_crossed_ml formula"])
    out["average_marginal_effects"] = freq.average_marginal_effects(mx, "size")
    th = freq.time_horizon(_horizon_log(np.random.default_rng(7)), n_resamples=30, rng=0)
    out["time_horizon"] = th
    out["doubling_time"] = freq.doubling_time(th, {"a": "2023-01-01", "b": "2024-01-01", "c": "2024-09-01"},
                                              frontier=False)  # fmt: skip


def _design_results(out: dict) -> None:
    log, _ = simulate_eval(n_agents=8, n_tasks=30, n_runs=1, rng=3)
    cal = freq.fit_irt_ml(log.isel(agent=slice(0, 7)), n_draws=50, rng=0)
    out["fit_irt_ml"] = cal
    out["irt_score"] = freq.irt_score(cal.bank, log.isel(agent=[7]), rng=0)
    out["person_fit"] = freq.person_fit(log, n_sim=200, rng=0)
    out["adaptive"] = design.adaptive(cal.bank, log.score.isel(agent=7, run=0, drop=True), budget=8, rng=0)
    out["assisted_adaptive"] = design.assisted_adaptive(cal.bank, log.score.isel(agent=[7]), n_tasks=10,
                                                        n_draws=10, rng=1)  # fmt: skip
    plan = design.plan_subset(list(cal.bank.tasks), 12, rng=2)
    out["assisted_mean"] = design.assisted_mean(plan, log.score.isel(agent=[7]), cal.bank, n_draws=10, rng=0)
    ds, _ = simulate_eval(n_agents=1, n_tasks=24, n_runs=3, rng=0)
    labels = ds.score.isel(agent=0, drop=True)
    out["cohort_posterior"] = design.cohort_posterior(labels)
    out["budget_interval"] = design.budget_interval(design.plan_uniform(list(ds.task.values), 3, 30, rng=0), labels)
    irt_log, _ = design.simulate_irt_log(10, 20, rng=0)
    out["calibrate_misfit"] = design.calibrate_misfit(irt_log, budget=6, folds=2, n_bank_draws=20, n_draws=10, rng=0)

    def simulate(rng):
        return rng.normal(size=10), xr.DataArray(0.0)

    def z95(v, rng):
        m, s = v.mean(), v.std(ddof=1) / np.sqrt(v.size)
        return xr.DataArray([m - 1.96 * s, m + 1.96 * s], dims="ci_bound", coords={"ci_bound": ["lower", "upper"]},
                            attrs={"ci_prob": 0.95, "ci_kind": "normal"})  # fmt: skip

    out["coverage_study"] = compare.coverage_study(simulate, {"z": z95}, n_rep=20, rng=0)


def _bayes_results(out: dict) -> None:
    """The posterior metrics on fits written here (draws set at random: no sampler)."""
    g = np.random.default_rng(0)
    C, D, cd = 2, 30, ("chain", "draw")
    n, c = np.array([[4, 4, 4, 0], [3, 5, 2, 4]]), np.array([[0, 2, 4, 0], [3, 1, 2, 0]])
    bb = fake_fit("beta_binomial", ["a0", "a1"], {"n_runs": n, "n_success": c},
                  mu=g.uniform(0.2, 0.8, (C, D, 2)), kappa=g.uniform(1, 20, (C, D, 2)))  # fmt: skip
    out["bayes pass_hat_k"] = metrics.pass_hat_k(bb, [1, 2])
    draws = xr.DataArray(g.normal([0, 1, 2], 1, (C, D, 3)), dims=(*cd, "agent"), coords={"agent": ["a", "b", "c"]})
    out["bayes prob_superiority"] = metrics.prob_superiority(draws)
    out["bayes rank_probabilities"] = metrics.rank_probabilities(draws)
    out["bayes posterior_summary"] = metrics.posterior_summary(draws)
    out["bayes head_to_head"] = metrics.head_to_head(fake_fit("bradley_terry", ["m0", "m1", "m2"],
                                                              ability=g.normal(0, 1, (C, D, 3))))  # fmt: skip
    A, T = 3, 8
    coords = {"agent": [f"agent_{i}" for i in range(A)], "task": [f"task_{t}" for t in range(T)]}
    post = {"mu": (cd, g.normal(0, 0.3, (C, D))), "agent_effect": ((*cd, "agent"), g.normal(0, 0.5, (C, D, A))),
            "task_effect": ((*cd, "task"), g.normal(0, 1, (C, D, T))), "sd_task": (cd, g.uniform(0.5, 1.5, (C, D))),
            "sd_agent": (cd, g.uniform(0.3, 1, (C, D))), "sd_agent_task": (cd, g.uniform(0.2, 0.8, (C, D)))}  # fmt: skip
    runs = g.integers(1, 4, (A, T))
    const = {"n_runs": (("agent", "task"), runs), "n_success": (("agent", "task"), g.binomial(runs, 0.5))}
    crossed = xr.DataTree.from_dict({"posterior": xr.Dataset(post, coords=coords),
                                     "constant_data": xr.Dataset(const, coords=coords)})  # fmt: skip
    crossed.attrs = {"hierbench_model": "crossed",
                     "hierbench_spec": json.dumps({"options": {"agent_task": "marginal", "n_quad": 7}})}  # fmt: skip
    out["bayes crossed_variance_components"] = metrics.crossed_variance_components(crossed)
    ds, _ = simulate_eval(n_agents=3, n_tasks=10, n_runs=2, rng=0)
    ds = ds.assign_coords(agent=["a", "b", "c"], size=("agent", [1.0, 2.0, 3.0]),
                          log2_minutes=("task", np.linspace(0, 6, 10)))  # fmt: skip
    dsg = model_design("score ~ size + (1|agent) + (1|task)", ds)
    p = {"beta": ((*cd, "coef"), g.normal(0, 0.7, (C, D, len(dsg.coef)))),
         "sd": ((*cd, "component"), np.abs(g.normal(1, 0.1, (C, D, len(dsg.random)))))}  # fmt: skip
    co = {"coef": list(dsg.coef), "component": [t.name for t in dsg.random]}
    for t in dsg.random:
        p[f"re[{t.name}]"] = ((*cd, ":".join(t.grouping)), g.normal(0, 1, (C, D, t.levels.size)))
        co[":".join(t.grouping)] = t.levels.tolist()
    mixed = _formula_fit(xr.Dataset(p, coords=co), dsg)
    out["bayes mean_response"] = metrics.mean_response(mixed, dsg)
    out["bayes average_marginal_effects"] = metrics.average_marginal_effects(mixed, dsg, "size")
    out["bayes agent_variance"] = metrics.agent_variance(mixed, dsg)
    hz = model_design("score ~ 0 + agent + agent:center(log2_minutes) + (1|task)", ds, family="binomial")
    beta = np.concatenate([g.normal([0.5, 1.0, -1.0], 0.3, (C, D, 3)), g.normal(-0.5, 0.1, (C, D, 3))], axis=-1)
    sd = np.abs(g.normal(1.0, 0.2, (C, D, 1)))
    horizon = _formula_fit(xr.Dataset({"beta": ((*cd, "coef"), beta), "sd": ((*cd, "component"), sd)},
                                      coords={"coef": hz.coef, "component": ["1|task"]}), hz)  # fmt: skip
    out["bayes time_horizon"] = metrics.time_horizon(horizon, hz)
    out["bayes doubling_time"] = metrics.doubling_time(out["bayes time_horizon"],
                                                       {"a": "2023-01-01", "b": "2024-01-01", "c": "2024-09-01"},
                                                       frontier=False)  # fmt: skip


def _formula_fit(post: xr.Dataset, dsg) -> xr.DataTree:
    fit = xr.DataTree.from_dict({"posterior": post.assign_coords(chain=[0, 1], draw=np.arange(post.sizes["draw"]))})
    spec = {"model": "mixed", "options": {"formula": dsg.formula, "family": dsg.family, "levels": None}}
    fit.attrs = {"hierbench_model": "mixed", "hierbench_spec": json.dumps(spec)}
    return fit


@pytest.fixture(scope="module")
def results() -> dict:
    out: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _freq_results(out)
        _design_results(out)
        _bayes_results(out)
    return out


LABELS = [
    "success_rate", "pass_hat_k", "proportion_interval", "beta_binomial", "confidence_sequence", "bootstrap_ci",
    "compare_agents", "paired_test", "rank_uncertainty", "quantile_ci", "pareto_frontier", "reliability_profile",
    "classification_metrics", "cohen_kappa", "pr_curve", "threshold_for_recall", "rubric_summary",
    "bradley_terry_ml", "online_elo", "win_rate", "position_consistency", "variance_components", "fit_crossed_ml",
    "fit_crossed_ml formula", "mean_response", "agent_variance", "average_marginal_effects", "time_horizon",
    "doubling_time", "fit_irt_ml", "irt_score", "person_fit", "adaptive", "assisted_adaptive", "assisted_mean",
    "cohort_posterior", "budget_interval", "calibrate_misfit", "coverage_study", "bayes pass_hat_k",
    "bayes prob_superiority", "bayes rank_probabilities", "bayes posterior_summary", "bayes head_to_head",
    "bayes crossed_variance_components", "bayes mean_response", "bayes average_marginal_effects",
    "bayes agent_variance", "bayes time_horizon", "bayes doubling_time",
]  # fmt: skip


# ----------------------------------------------------------------------------- the general rule


def _round_trip(ds: xr.Dataset, tmp_path, name: str = "r.nc") -> xr.Dataset:
    return load_dataset(save_dataset(ds, tmp_path / name, overwrite=True))


def _same(a, b) -> bool:
    a, b = np.asarray(getattr(a, "values", a)), np.asarray(getattr(b, "values", b))
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "biuf" and b.dtype.kind in "biuf":
        return bool(np.array_equal(a.astype(float), b.astype(float), equal_nan=True))
    text = [["" if v is None or (isinstance(v, float) and v != v) else str(v) for v in x.ravel().tolist()] for x in (a, b)]
    return text[0] == text[1]


def _same_attr(a, b) -> bool:
    """``a`` as the file gives it back: a bool as 0 / 1, None as ""."""
    if a is None:
        return b in ("", None)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_attr(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same_attr(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and a != a:
        return isinstance(b, float) and b != b
    return a == b


def _not_held(r: Result, back: xr.Dataset) -> list[str]:
    """The fields of ``r`` the loaded Dataset ``back`` does not hold (nor ``r`` name as left out)."""
    left_out = set(r._dataset_exclude) | set(r._not_saved)
    missing = []
    for f in r._fields():
        v = getattr(r, f)
        if f in left_out or v is None:
            continue
        if isinstance(v, xr.DataArray) or (isinstance(v, np.ndarray) and f in back.variables):
            ok = f in back.variables and _same(v, back[f])
        elif isinstance(v, xr.Dataset) or hasattr(type(v), "to_dataset"):
            sub = v if isinstance(v, xr.Dataset) else v.to_dataset()
            ok = all(f"{f}_{n}" in back.variables and _same(sub[n], back[f"{f}_{n}"]) for n in sub.data_vars)
            ok = ok and all(_same_attr(x, back.attrs.get(f"{f}_{k}")) for k, x in json_ready(dict(sub.attrs)).items())
        elif f == "attrs":
            ok = all(k in back.attrs and _same_attr(x, back.attrs[k]) for k, x in json_ready(v).items())
        elif isinstance(v, tuple) and all(isinstance(x, str) for x in v):
            ok = back.attrs.get(f) in ("\n".join(v), list(v))
        else:
            ok = f in back.attrs and _same_attr(json_ready(v), back.attrs[f])
        if not ok:
            missing.append(f"{f} ({type(v).__name__})")
    return missing


def test_every_public_result_class_has_an_instance_here(results):
    classes = set()
    for m in pkgutil.walk_packages(hierbench.__path__, "hierbench."):
        if m.name.startswith(("hierbench.report", "hierbench.cli", "hierbench.demo")):
            continue
        for name, c in vars(importlib.import_module(m.name)).items():
            if inspect.isclass(c) and issubclass(c, Result) and c.__module__ == m.name and not name.startswith("_"):
                classes.add(name)
    bases = {"Result", "ResampledResult", "DrawsResult", "ScalesFit"}
    assert classes - bases - {type(r).__name__ for r in results.values()} == set()
    assert sorted(results) == sorted(LABELS)


@pytest.mark.parametrize("label", LABELS)
def test_a_saved_result_holds_every_field_and_its_frame_every_interval(results, label, tmp_path):
    r = results[label]
    with warnings.catch_warnings():
        warnings.simplefilter("error", HierbenchWarning)  # a field it could not store would warn
        ds = r.to_dataset()
    assert _not_held(r, _round_trip(ds, tmp_path)) == []
    frame, est = r.to_frame(), r.estimate
    for f in r._fields():
        v = getattr(r, f)
        if (isinstance(v, xr.DataArray) and f != "ci" and v is not r.ci and f not in r._dataset_exclude and "ci_bound" in v.dims
                and set(v.dims) - {"ci_bound"} <= set(est.dims)):  # fmt: skip
            assert {f"{f.removesuffix('_ci')}_lower", f"{f.removesuffix('_ci')}_upper"} <= set(frame.columns), f


def test_the_rule_by_hand(tmp_path):
    """A Dataset field joins as prefixed variables (a dim with other labels renamed); objects warn unless named."""

    @dataclasses.dataclass(frozen=True, repr=False)
    class Made(Result):
        estimate: xr.DataArray
        ci: xr.DataArray
        check: xr.Dataset
        other: xr.Dataset
        settings: dict
        attrs: dict
        thing: object = None
        n_draws: int = 5

    agents = {"agent": ["a", "b"]}
    est = xr.DataArray([0.5, 0.7], dims="agent", coords=agents)
    ci = xr.DataArray([[0.4, 0.6], [0.6, 0.8]], dims=("agent", "ci_bound"),
                      coords={**agents, "ci_bound": ["lower", "upper"]}, attrs={"ci_prob": 0.95, "ci_kind": "t"})  # fmt: skip
    check = xr.Dataset({"p": ("agent", [0.2, 0.9]), "n": (("agent", "bin"), [[1, 2], [3, 4]])}, coords=agents,
                       attrs={"alpha": 0.05})  # fmt: skip
    other = xr.Dataset({"x": ("agent", [1.0, 2.0, 3.0])}, coords={"agent": ["a", "b", "z"]})
    made = Made(est, ci, check, other, {"k": np.int64(4), "bins": (0.0, 0.5)}, {"k": 8, "unit": "task"},
                thing=object())  # fmt: skip
    with pytest.warns(HierbenchWarning, match=r"cannot store the field\(s\) thing \(object\)"):
        ds = made.to_dataset()
    back = _round_trip(ds, tmp_path)
    assert back["check_p"].dims == ("agent",) and back["check_n"].dims == ("agent", "bin")
    assert back["other_x"].dims == ("other_agent",) and back["other_agent"].values.tolist() == ["a", "b", "z"]
    assert back.attrs["check_alpha"] == 0.05 and back.attrs["settings"] == {"k": 4, "bins": [0.0, 0.5]}
    # the attrs dict's keys join the attrs; one a field's name already holds stays, as attrs_<key>
    assert back.attrs["unit"] == "task" and back.attrs["n_draws"] == 5
    made2 = dataclasses.replace(made, attrs={"n_draws": 7})
    assert made2._plain_attrs()["attrs_n_draws"] == 7
    frame = made.to_frame()
    assert frame["check_p"].tolist() == [0.2, 0.9] and "other_x" not in frame.columns

    @dataclasses.dataclass(frozen=True, repr=False)
    class Named(Made):
        _not_saved: ClassVar[dict[str, str]] = {"thing": "an object of no stored form"}

    with warnings.catch_warnings():
        warnings.simplefilter("error", HierbenchWarning)
        assert "thing" not in Named(est, ci, check, other, {}, {}, thing=object()).to_dataset().attrs


# ----------------------------------------------------------------------------- the findings' particulars


def test_time_horizon_keeps_its_fit_check_and_settings_when_saved_and_framed(results, tmp_path):
    th = results["time_horizon"]
    back = _round_trip(th.to_dataset(), tmp_path)
    minutes = _horizon_log(np.random.default_rng(7))["human_minutes"].values  # every task was run
    # the settings, the task lengths' range (by hand: the shortest and longest task) among them
    assert back.attrs["options"]["minutes_range"] == pytest.approx([minutes.min(), minutes.max()])
    assert back.attrs["options"]["n_resamples"] == 30 and back.attrs["options"]["weights"] == "invsqrt"
    for v in th.fit_check.data_vars:
        np.testing.assert_array_equal(back[f"fit_check_{v}"].values, th.fit_check[v].values)
    assert back["fit_check_observed"].dims == ("agent", "bin") and back.attrs["fit_check_n_resamples"] == 30
    frame = th.to_frame()
    assert frame.xs(0.5, level="success")["fit_check_p_value"].tolist() == th.fit_check["p_value"].values.tolist()


def test_doubling_times_name_the_agents_of_their_line(results, tmp_path):
    for key in ("doubling_time", "bayes doubling_time"):
        back = _round_trip(results[key].to_dataset(), tmp_path)
        assert back.attrs["agents"] == ["a", "b", "c"]
        assert back.attrs["release_date"] == ["2023-01-01", "2024-01-01", "2024-09-01"]
        assert back.attrs["horizon"] == pytest.approx(results[key].horizon) and len(back.attrs["n_agent_dropped"]) == 3
    assert "line through 3 agents" in repr(results["bayes doubling_time"])
    assert _round_trip(results["bayes time_horizon"].to_dataset(), tmp_path).attrs["minutes_range"] == [1.0, 64.0]


def test_a_saved_calibration_scores_as_the_one_in_memory(results, tmp_path):
    cal = results["fit_irt_ml"]
    back = _round_trip(cal.to_dataset(), tmp_path)
    bank = IRTBank.from_dataset(back, prefix="bank")
    np.testing.assert_array_equal(bank.discrimination.values, cal.bank.discrimination.values)
    assert (bank.method, bank.model, bank.attrs) == ("laplace", "2pl", cal.bank.attrs)
    assert back.attrs["hyper"] == pytest.approx(cal.hyper) and back.attrs["info"]["em_steps"] == cal.info["em_steps"]
    log, _ = simulate_eval(n_agents=8, n_tasks=30, n_runs=1, rng=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = freq.irt_score(bank, log.isel(agent=[7]), rng=0)
    assert repr(again) == repr(results["irt_score"])
    alone = IRTBank.from_dataset(_round_trip(cal.bank.to_dataset(), tmp_path, "bank.nc"))
    np.testing.assert_array_equal(alone.intercept.values, cal.bank.intercept.values)
    with pytest.raises(hierbench.HierbenchError, match="lacks bank_discrimination"):
        IRTBank.from_dataset(back.drop_vars("bank_discrimination"), prefix="bank")


def test_a_saved_g_study_keeps_convergence_sizes_flags_and_covariance(tmp_path):
    g = np.random.default_rng(4)
    y = g.normal(size=(4, 1, 1)) + g.normal(size=(4, 10, 1)) + g.normal(size=(4, 10, 3))
    y[0, 0, 2] = np.nan  # unbalanced: REML
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = freq.variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    back = _round_trip(vc.to_dataset(), tmp_path)
    assert vc.method == "reml" and back.attrs["fit_info"]["converged"] == vc.fit_info["converged"]
    assert back.attrs["fit_info"]["message"] == vc.fit_info["message"] and back.attrs["ci_method"] == vc.ci_method
    assert back.attrs["sizes"] == {"agent": 4, "task": 10, "run": pytest.approx(119 / 40)}  # 119 runs, 40 cells
    assert back.attrs["confounded"] == "" and back.attrs["dropped"] == "" and back.attrs["prob"] == 0.95
    assert back.attrs["design"] == vc.formula and back.attrs["design_kind"] == vc.design
    np.testing.assert_array_equal(back["cov"].values, vc.cov)
    assert back["cov"].dims == ("component", "component_b") and back["component"].values.tolist() == list(vc.component_names)


def test_glmm_fits_keep_formula_options_and_random_effects_and_frame_their_sds(results, tmp_path):
    mx = results["fit_crossed_ml formula"]
    back = _round_trip(mx.to_dataset(), tmp_path)
    assert back.attrs["formula"] == "score ~ size + (1|task)" and back.attrs["family"] == "binomial"
    assert back.attrs["options"]["intervals"] == "wald"
    modes = mx.random_effects["1|task"]
    np.testing.assert_array_equal(back["re_1|task"].values, modes.values)
    assert back["re_1|task_level"].values.tolist() == [f"task_{t:04d}" for t in range(24)]
    np.testing.assert_array_equal(back["re_1|task_conditional_sd"].values, modes["conditional_sd"].values)
    cr = results["fit_crossed_ml"]
    assert _round_trip(cr.to_dataset(), tmp_path, "cr.nc").attrs["options"]["agent_task"] == cr.options["agent_task"]
    frame = cr.to_frame()
    assert frame.index.names == ["part", "term"] and frame.loc[("ability", "agent_01"), "estimate"] == float(cr.estimate[1])
    lo, hi = cr.sd_ci.sel(component="sd_task").values
    assert tuple(frame.loc[("sd", "sd_task"), ["estimate", "lower", "upper"]]) == (float(cr.sd.sel(component="sd_task")), lo, hi)
    assert f"sd(task): {float(cr.sd.sel(component='sd_task')):.4g} [{lo:.4g}, {hi:.4g}]" in repr(cr)


def test_settings_kept_in_attrs_are_saved(results, tmp_path):
    saved = {k: _round_trip(results[k].to_dataset(), tmp_path, f"{k}.nc").attrs
             for k in ("bradley_terry_ml", "online_elo", "win_rate", "quantile_ci", "reliability_profile",
                       "classification_metrics", "pareto_frontier")}  # fmt: skip
    assert saved["bradley_terry_ml"]["ties"] == "davidson" and saved["bradley_terry_ml"]["center"] == 1000.0
    assert saved["bradley_terry_ml"]["n_resamples"] == 50
    assert saved["online_elo"]["k"] == 8.0 and saved["online_elo"]["n_orders"] == 10
    assert saved["online_elo"]["n_battles"] == 60
    assert saved["win_rate"]["n_resamples"] == 50 and saved["quantile_ci"]["var"] == "cost"
    assert saved["reliability_profile"]["k"] == 2 and saved["classification_metrics"]["beta"] == 2.0
    assert saved["classification_metrics"]["n_items"] == 60 and saved["pareto_frontier"]["n_resamples"] == 99
    wr = results["win_rate"]
    frame = wr.to_frame()
    for end in ("lower", "upper"):
        want = wr.average_ci.sel(ci_bound=end).sel(agent=frame.index.get_level_values("agent")).values
        np.testing.assert_array_equal(frame[f"average_{end}"].values, want)


def test_the_precision_recall_curve_is_saved(tmp_path):
    y = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    sc = np.array([0.9, 0.8, 0.7, 0.4, 0.2, 0.4, 0.6, 0.1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        back = _round_trip(freq.pr_curve(y, sc, n_resamples=99, rng=0).to_dataset(), tmp_path)
    t = back["threshold"].values
    assert t.tolist() == [0.9, 0.8, 0.7, 0.6, 0.4, 0.2, 0.1]
    flagged = sc[None, :] >= t[:, None]  # precision and recall by hand at each threshold
    np.testing.assert_allclose(back["precision"].values, (flagged & (y == 1)).sum(1) / flagged.sum(1))
    np.testing.assert_allclose(back["recall"].values, (flagged & (y == 1)).sum(1) / 4)


def test_paired_results_name_the_two_agents(results, tmp_path):
    pt, cs = results["paired_test"], results["confidence_sequence"]
    assert (pt.agent_a, pt.agent_b) == ("agent_00", "agent_01") and "agent_00 - agent_01" in repr(pt).splitlines()[0]
    back = _round_trip(pt.to_dataset(), tmp_path)
    assert (back.attrs["agent_a"], back.attrs["agent_b"], back.attrs["test"]) == ("agent_00", "agent_01", pt.test)
    assert "mean difference agent_00 - agent_01" in repr(cs).splitlines()[0]
    back = _round_trip(cs.to_dataset(), tmp_path, "cs.nc")
    assert (back.attrs["agent_a"], back.attrs["agent_b"], back.attrs["dim"], back.attrs["shuffled"]) == (
        "agent_00", "agent_01", "task", 0)
    ds, _ = simulate_eval(n_agents=2, n_tasks=10, n_runs=1, rng=0)
    s = ds.score.isel(run=0, drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        anon = freq.paired_test(s.isel(agent=0, drop=True), s.isel(agent=1, drop=True), n_resamples=99, rng=0)
        one = freq.confidence_sequence(s, shuffle=True, rng=0)
    assert (anon.agent_a, anon.agent_b) == ("a", "b") and one.agent_a is None
    assert _round_trip(one.to_dataset(), tmp_path, "one.nc").attrs["shuffled"] == 1


def test_dataset_fields_are_saved_as_prefixed_variables(results, tmp_path):
    ad = _round_trip(results["adaptive"].to_dataset(), tmp_path, "ad.nc")
    trace = results["adaptive"].trace
    np.testing.assert_array_equal(ad["trace_estimate"].values, trace["estimate"].values)
    assert ad["trace_estimate"].sizes["step"] == 8 and ad.attrs["misfit_p"] == results["adaptive"].misfit_p
    score = results["adaptive"].score
    assert float(ad["score_ability"]) == float(score.ability)
    frame = results["adaptive"].to_frame()
    assert frame["score_ability_lower"].item() == float(score.ability_ci.sel(ci_bound="lower"))
    assert frame["misfit_z"].item() == results["adaptive"].misfit_z
    am = _round_trip(results["assisted_mean"].to_dataset(), tmp_path, "am.nc")
    np.testing.assert_array_equal(am["draws_outcome"].values, results["assisted_mean"].draws["outcome"].values)
    cov = _round_trip(results["coverage_study"].to_dataset(), tmp_path, "cov.nc")
    assert cov["table_covers"].sizes["rep"] == 20 and cov.attrs["n_rep"] == 20
    assert float(cov["table_covers"].mean()) == results["coverage_study"].coverage.item()
    pc = _round_trip(results["position_consistency"].to_dataset(), tmp_path, "pc.nc")
    assert pc["pairs_outcome"].sizes["comparison"] == results["position_consistency"].pairs.sizes["comparison"]
    sc = results["irt_score"].to_frame()
    k1 = results["irt_score"].pass_hat_k_ci.sel(k=1)
    assert (sc["pass_hat_1_lower"].item(), sc["pass_hat_1_upper"].item()) == tuple(k1.values.tolist())
