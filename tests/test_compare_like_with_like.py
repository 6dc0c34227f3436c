"""side_by_side sets only like beside like: one scale, one estimand, one set of agents, one log.

Audit I, findings 1, 2 and 10. Every expected value comes from how the inputs were built:
a pair whose scales, quantities, agents or logs differ by construction, and the
fingerprints of two logs simulated from different seeds (``hierbench.bayes.data_hash``,
the one the fit stamps).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from _helpers import fake_fit

from hierbench._base import make_interval
from hierbench.compare import MismatchedEstimatesError
from hierbench.compare import side_by_side
from hierbench.compare import to_frame
from hierbench.data import to_counts
from hierbench.freq import bootstrap_ci
from hierbench.freq import wilson_interval
from hierbench.metrics import posterior_summary
from hierbench.testing import simulate_eval


def _result(agents, est, lo, hi, *, detail="hand-made", **attrs) -> xr.Dataset:
    coords = {"agent": list(agents)}
    estimate = xr.DataArray(np.asarray(est, float), dims="agent", coords=coords, attrs=attrs)
    ci = make_interval(np.asarray(lo, float), np.asarray(hi, float), prob=0.95, kind="normal",
                       template=estimate.drop_attrs(), detail=detail)  # fmt: skip
    return xr.Dataset({"estimate": estimate, "ci": ci})


def _draws(name: str, scale: str, meaning: str, agents=("a", "b"), loc=0.5, seed=0) -> xr.DataArray:
    rng = np.random.default_rng(seed)
    values = loc + 0.05 * rng.standard_normal((2, 200, len(agents)))
    return xr.DataArray(values, dims=("chain", "draw", "agent"), coords={"agent": list(agents)},
                        name=name, attrs={"scale": scale, "meaning": meaning})  # fmt: skip


# ------------------------------------------------------------------ finding 1: scales and estimands


def test_a_logit_beside_a_probability_is_refused_naming_both():
    logit = _result("ab", [0.2, -1.0], [-0.5, -1.8], [0.9, -0.2], scale="logit")
    prob = _result("ab", [0.55, 0.27], [0.45, 0.2], [0.65, 0.35], scale="probability")
    with pytest.raises(MismatchedEstimatesError) as err:
        side_by_side({"ML": logit, "Bayes": prob})
    msg = str(err.value)
    assert "'ML': 'logit'" in msg and "'Bayes': 'probability'" in msg and "allow_mismatch=True" in msg
    t = side_by_side({"ML": logit, "Bayes": prob}, allow_mismatch=True)
    assert t["scale"].values.tolist() == ["logit", "probability"]


def test_a_result_without_a_scale_beside_one_with_a_scale_is_refused_unless_allowed():
    silent = _result("ab", [0.5, 0.3], [0.4, 0.2], [0.6, 0.4])
    prob = _result("ab", [0.55, 0.27], [0.45, 0.2], [0.65, 0.35], scale="probability")
    with pytest.raises(MismatchedEstimatesError, match=r"\['x'\] state no scale.*allow_mismatch=True"):
        side_by_side({"x": silent, "Bayes": prob})
    t = side_by_side({"x": silent, "Bayes": prob}, allow_mismatch=True)
    assert t["scale"].values.tolist() == ["", "probability"]
    # two silent results: nothing to hold them to (the behaviour before)
    assert side_by_side({"x": silent, "y": silent})["estimator"].size == 2


def test_a_wilson_interval_is_one_of_a_proportion_and_asks_no_scale_of_the_others():
    wil = wilson_interval(xr.DataArray([6, 3], dims="agent", coords={"agent": ["a", "b"]}), 10)
    prob = _result("ab", [0.55, 0.27], [0.45, 0.2], [0.65, 0.35], scale="probability")
    logit = _result("ab", [0.2, -1.0], [-0.5, -1.8], [0.9, -0.2], scale="logit")
    silent = _result("ab", [0.5, 0.3], [0.4, 0.2], [0.6, 0.4])
    assert side_by_side({"wilson": wil, "Bayes": prob})["scale"].values.tolist() == ["probability"] * 2
    with pytest.raises(MismatchedEstimatesError, match="different scales"):
        side_by_side({"wilson": wil, "ML": logit})
    side_by_side({"wilson": wil, "x": silent})  # only implied: the silent one is not refused


def test_posterior_summary_keeps_the_variables_scale_and_says_which_tasks_it_is_for():
    new = posterior_summary(_draws("mean_new_task", "probability", "expected success probability on a new task"))
    obs = posterior_summary(_draws("mean_observed", "probability", "average over the dataset's tasks"))
    ability = posterior_summary(_draws("ability", "logit", "log-odds of success", loc=0.0))
    assert new.estimate.attrs["scale"] == "probability" and new.estimate.attrs["tasks"] == "population"
    assert obs.estimate.attrs["scale"] == "probability" and obs.estimate.attrs["tasks"] == "observed"
    assert ability.estimate.attrs["scale"] == "logit"
    # the numbers are those of the draws, whatever the attrs
    d = _draws("mean_new_task", "probability", "expected success probability on a new task")
    np.testing.assert_allclose(new.estimate, d.values.mean((0, 1)))


def test_bootstrap_states_its_scale_and_the_tasks_its_interval_is_for():
    ds, _ = simulate_eval(n_agents=2, n_tasks=25, n_runs=2, rng=1)  # 0/1 scores by construction
    boot = bootstrap_ci(ds, n_resamples=199, rng=0)
    assert (boot.attrs["scale"], boot.attrs["tasks"]) == ("probability", "population")
    runs = bootstrap_ci(ds, scheme="runs", n_resamples=199, rng=0)
    assert runs.attrs["tasks"] == "observed"
    graded = ds.assign(score=ds.score * 0.5)  # scores 0 and 0.5: a mean score, not a probability
    assert bootstrap_ci(graded, n_resamples=199, rng=0).attrs["scale"] == "score"


def test_bootstrap_beside_the_posterior_of_these_tasks_is_refused_and_beside_a_new_task_accepted():
    ds, _ = simulate_eval(n_agents=2, n_tasks=25, n_runs=2, rng=1)
    agents = [str(a) for a in ds.agent.values]
    boot = bootstrap_ci(ds, n_resamples=199, rng=0)
    obs = posterior_summary(_draws("mean_observed", "probability", "average over the dataset's tasks", agents))
    new = posterior_summary(_draws("mean_new_task", "probability", "a new task", agents))
    ability = posterior_summary(_draws("ability", "logit", "log-odds of success", agents, loc=0.0))
    with pytest.raises(MismatchedEstimatesError, match=r"\['Bayes'\] have intervals for these tasks.*mean_new_task"):
        side_by_side({"boot": boot, "Bayes": obs})
    with pytest.raises(MismatchedEstimatesError, match="different scales"):
        side_by_side({"boot": boot, "Bayes": ability})
    t = side_by_side({"boot": boot, "Bayes": new})
    q = t["quantity"].values.tolist()
    assert q[0] == q[1] and "mean score" in q[0]


# ------------------------------------------------------------------ finding 2: agents and logs


def test_different_agents_are_refused_and_joined_only_when_allowed_in_first_seen_order():
    three = _result(["z", "a", "m"], [0.5, 0.3, 0.7], [0.4, 0.2, 0.6], [0.6, 0.4, 0.8], scale="probability")
    two = _result(["z", "a"], [0.52, 0.31], [0.42, 0.21], [0.62, 0.41], scale="probability")
    with pytest.raises(MismatchedEstimatesError, match=r"1 agent only in 'three' \(\['m'\]\)"):
        side_by_side({"three": three, "two": two})
    t = side_by_side({"three": three, "two": two}, allow_mismatch=True)
    assert t["agent"].values.tolist() == ["z", "a", "m"]  # not sorted alphabetically
    assert np.isnan(float(t["estimate"].sel(estimator="two", agent="m")))
    assert "'m'" in t.attrs["joined"]
    # the same agents in another order are the same agents, lined up by label
    swapped = _result(["a", "z"], [0.31, 0.52], [0.21, 0.42], [0.41, 0.62], scale="probability")
    t = side_by_side({"two": two, "swapped": swapped})
    np.testing.assert_allclose(t["estimate"].sel(estimator="swapped", agent="z"), 0.52)
    assert "joined" not in t.attrs


def _fit_of(ds: xr.Dataset, seed: int) -> xr.DataTree:
    """A fake crossed fit of ``ds``: posterior draws of mean_new_task, the log's counts, its fingerprint."""
    from hierbench.bayes import data_hash

    counts = to_counts(ds)
    agents = [str(a) for a in counts.agent.values]
    rng = np.random.default_rng(seed)
    fit = fake_fit("crossed", agents, {"n_runs": counts.n_runs.values, "n_success": counts.n_success.values},
                   tasks=[str(t) for t in counts.task.values],
                   mean_new_task=rng.uniform(0.3, 0.7, (2, 100, len(agents))))  # fmt: skip
    fit["posterior"]["mean_new_task"].attrs = {"scale": "probability", "meaning": "a new task"}
    fit.attrs["hierbench_data_hash"] = data_hash(counts)
    return fit


def test_results_from_two_logs_are_refused_by_their_fingerprints_in_check_fit_datas_words():
    pytest.importorskip("pymc")
    from hierbench.report import FitDataMismatchError
    from hierbench.report import check_fit_data

    log_a, _ = simulate_eval(n_agents=2, n_tasks=20, n_runs=2, rng=10)
    log_b, _ = simulate_eval(n_agents=2, n_tasks=20, n_runs=2, rng=11)  # same labels, other outcomes
    fit_a, fit_b = _fit_of(log_a, 0), _fit_of(log_b, 1)
    want_a, want_b = fit_a.attrs["hierbench_data_hash"], fit_b.attrs["hierbench_data_hash"]
    assert want_a != want_b
    a = posterior_summary(fit_a, var="mean_new_task")
    b = posterior_summary(fit_b, var="mean_new_task")
    with pytest.raises(MismatchedEstimatesError) as err:
        side_by_side({"A": a, "B": b})
    ours = str(err.value)
    with pytest.raises(FitDataMismatchError) as theirs:
        check_fit_data(fit_a, log_b)
    for phrase in ("are not the same evaluation", f"(fingerprints {want_a[:12]} and {want_b[:12]})",
                   "read with the same options (the error policy and the columns change the counts"):
        assert phrase in ours and phrase in str(theirs.value), phrase
    assert "allow_mismatch=True" in ours
    same = side_by_side({"A": a, "A hdi": posterior_summary(fit_a, var="mean_new_task", kind="hdi")})
    assert want_a[:12] in same.attrs["data_check"] and "same data" in same.attrs["data_check"]


def test_without_a_fingerprint_on_one_side_the_table_says_the_data_were_not_checked():
    log_a, _ = simulate_eval(n_agents=2, n_tasks=20, n_runs=2, rng=10)
    fit = _fit_of(log_a, 0)
    bare = fit["posterior"]["mean_new_task"].copy()
    bare.attrs = {"scale": "probability", "meaning": "a new task"}  # draws from a fit made elsewhere
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        boot = bootstrap_ci(log_a, n_resamples=199, rng=0)
    t = side_by_side({"boot": boot, "Bayes": posterior_summary(bare)})
    assert t.attrs["data_check"].startswith("not checked: ['Bayes']")


def _stamped_fit(ds: xr.Dataset, seed: int) -> xr.DataTree:
    """``_fit_of`` with both fingerprints, as ``fit`` stamps them (root attrs and the variable's)."""
    from hierbench.bayes._sampler._fit import _decorate
    from hierbench.bayes._sampler._fit import _fingerprints

    fit = _fit_of(ds, seed)
    info = {"data_hash": fit.attrs["hierbench_data_hash"], "counts_hash": fit.attrs["hierbench_data_hash"],
            "var_attrs": {"mean_new_task": {"scale": "probability", "meaning": "a new task"}}}  # fmt: skip
    fit = _decorate(fit, info)
    fit.attrs.update(_fingerprints(info))
    return fit


def test_a_frequentist_result_of_another_log_is_refused_beside_a_fit():
    log_a, _ = simulate_eval(n_agents=2, n_tasks=20, n_runs=2, rng=10)
    log_b, _ = simulate_eval(n_agents=2, n_tasks=20, n_runs=2, rng=11)  # same labels, other outcomes
    fit_a = _stamped_fit(log_a, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        boot_a, boot_b = (bootstrap_ci(d, n_resamples=199, rng=0) for d in (log_a, log_b))
    # the README's form: the draws taken out of the fit still carry the log's fingerprint
    bayes = posterior_summary(fit_a["posterior"]["mean_new_task"])
    same = side_by_side({"boot": boot_a, "Bayes": bayes})
    assert same.attrs["data_check"].startswith("every result comes from the same data")
    with pytest.raises(MismatchedEstimatesError, match="are not the same evaluation"):
        side_by_side({"boot": boot_b, "Bayes": bayes})


def test_the_log_fingerprint_is_one_for_every_estimator_and_model_of_a_log():
    pytest.importorskip("pymc")
    from hierbench._base import counts_fingerprint
    from hierbench.bayes import build_crossed
    from hierbench.bayes import build_mixed
    from hierbench.freq import pass_hat_k
    from hierbench.freq import success_rate

    log, _ = simulate_eval(n_agents=2, n_tasks=12, n_runs=3, rng=3)
    log["score"] = log["score"].where(log["score"].run < 2)  # one cell short of runs is still the log
    fp = counts_fingerprint(log)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stamped = {
            "bootstrap": bootstrap_ci(log, n_resamples=99, rng=0).estimate.attrs,
            "pass^k": pass_hat_k(log, 2).estimate.attrs,
            "success rate": success_rate(log).estimate.attrs,
            "counts": pass_hat_k(to_counts(log), 2).estimate.attrs,
        }
        models = {"crossed": build_crossed(log).hierbench, "mixed": build_mixed(log).hierbench}
    assert {k: a["hierbench_counts_hash"] for k, a in stamped.items()} == dict.fromkeys(stamped, fp)
    assert {k: m["counts_hash"] for k, m in models.items()} == dict.fromkeys(models, fp)
    # the crossed model saw the counts (its data hash is theirs); the formula model saw a design
    assert models["crossed"]["data_hash"] == fp != models["mixed"]["data_hash"]
    other = log.copy(deep=True)
    other["score"][0, 0, 0] = 1 - other["score"][0, 0, 0]  # one run's outcome flipped
    assert counts_fingerprint(other) != fp


# ------------------------------------------------------------------ finding 10: to_frame


def test_to_frame_keeps_what_each_row_estimates():
    pop = _result("ab", [0.5, 0.3], [0.4, 0.2], [0.6, 0.4], detail="t over tasks",
                  quantity="pass^k", tasks="population", scale="probability")  # fmt: skip
    pop["n_tasks"] = xr.DataArray([12.0, 11.0], dims="agent", coords={"agent": ["a", "b"]})
    obs = _result("ab", [0.52, 0.31], [0.47, 0.27], [0.57, 0.35], detail="posterior",
                  quantity="pass^k", tasks="observed", scale="probability")  # fmt: skip
    t = side_by_side({"freq": pop, "bayes": obs}, allow_mismatch=True)
    df = to_frame(t)
    assert {"quantity", "n_tasks", "ci_detail"} <= set(df.columns)
    assert df.loc[("a", "freq"), "quantity"] != df.loc[("a", "bayes"), "quantity"]
    assert df.loc[("b", "freq"), "n_tasks"] == 11.0 and np.isnan(df.loc[("b", "bayes"), "n_tasks"])
    assert df.loc[("a", "freq"), "ci_detail"] == "t over tasks" and df.loc[("a", "bayes"), "ci_detail"] == "posterior"
