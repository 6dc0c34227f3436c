"""Convergence diagnostics and predictive checks on constructed draws (no sampling)."""

from __future__ import annotations

import json
import warnings

import arviz_stats as azs
import numpy as np
import pytest
import xarray as xr

from hierbench.bayes import ConvergenceWarning
from hierbench.bayes import compute_diagnostics
from hierbench.bayes import predictive_check


def _tree(post: dict, diverging=None, energy=None) -> xr.DataTree:
    C, D = next(iter(post.values())).shape[:2]
    rng = np.random.default_rng(0)
    stats = {
        "diverging": (("chain", "draw"), np.zeros((C, D), bool) if diverging is None else diverging),
        "energy": (("chain", "draw"), rng.normal(size=(C, D)) if energy is None else energy),
    }
    return xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset({k: (("chain", "draw"), v) for k, v in post.items()}),
            "sample_stats": xr.Dataset(stats),
        }
    )


def test_good_chains_pass_without_warning():
    rng = np.random.default_rng(1)
    dt = _tree({"x": rng.normal(size=(4, 1000)), "y": rng.normal(size=(4, 1000))})
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        out = compute_diagnostics(dt)
    assert out.attrs["diag_converged"] == 1
    assert json.loads(out.attrs["diag_failures"]) == []
    assert "diagnostics" not in dt.children  # input untouched
    # the stored values are arviz-stats' rank-normalised R-hat and ESS
    assert float(out["diagnostics/r_hat"]["x"]) == pytest.approx(float(azs.rhat(dt["posterior"].to_dataset())["x"]))


def test_stuck_chain_warns_rhat_and_ess():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 500))
    x[0] += 3.0  # one chain elsewhere
    with pytest.warns(ConvergenceWarning, match=r"R-hat \d\.\d+ > its limit 1\.0\d+ \(at `x`"):
        out = compute_diagnostics(_tree({"x": x}))
    assert out.attrs["diag_converged"] == 0
    assert out.attrs["diag_max_r_hat"] > 1.1


def test_divergences_and_low_bfmi_warn():
    rng = np.random.default_rng(3)
    div = np.zeros((2, 400), bool)
    div[1, :7] = True
    # a random-walk energy has E-BFMI near 0
    energy = np.cumsum(rng.normal(size=(2, 400)), axis=1)
    with pytest.warns(ConvergenceWarning, match=r"7 divergent transitions.*min E-BFMI 0\.\d+ < 0.3"):
        out = compute_diagnostics(_tree({"x": rng.normal(size=(2, 400))}, diverging=div, energy=energy))
    assert out.attrs["diag_n_divergent"] == 7
    # E-BFMI = sum (E_i - E_{i-1})^2 / sum (E_i - mean E)^2 per chain (Betancourt 2016);
    # 1% tolerance for the n vs n - 1 normalisation conventions
    hand = min(np.sum(np.diff(e) ** 2) / np.sum((e - e.mean()) ** 2) for e in energy)
    assert out.attrs["diag_min_bfmi"] == pytest.approx(hand, rel=0.01)


def test_threshold_validation_and_override():
    rng = np.random.default_rng(4)
    dt = _tree({"x": rng.normal(size=(2, 100))})
    with pytest.raises(ValueError, match=r"`thresholds` keys must be among .*got unknown \['rhat'\]"):
        compute_diagnostics(dt, thresholds={"rhat": 1.1})
    with pytest.raises(ValueError, match=r"`var_names` must name posterior variables; not found: \['z'\]"):
        compute_diagnostics(dt, var_names=["z"])
    with pytest.warns(ConvergenceWarning, match="min ESS_bulk"):
        compute_diagnostics(dt, thresholds={"ess_bulk_per_chain": 10_000})


def test_predictive_check_histograms():
    cell = {"cell": np.arange(5), "cell_agent": ("cell", ["a", "a", "a", "b", "b"])}
    obs = xr.Dataset({"y": ("cell", [0, 3, 3, 1, 2])}, coords=cell)
    pred = np.array([[0, 3, 2, 1, 2], [1, 3, 3, 0, 2], [0, 0, 3, 1, 1]])[None]  # 1 chain, 3 draws
    pp = xr.Dataset({"y": (("chain", "draw", "cell"), pred)}, coords=cell)
    const = xr.Dataset({"cell_n_runs": ("cell", [3, 3, 3, 2, 2])}, coords=cell)
    dt = xr.DataTree.from_dict({"observed_data": obs, "posterior_predictive": pp, "constant_data": const})
    pc = predictive_check(dt)
    # agent a, 3 runs: observed successes 0, 3, 3 -> histogram [1, 0, 0, 2]
    np.testing.assert_array_equal(pc["observed"].sel(agent="a", n_runs=3).values, [1, 0, 0, 2])
    # predicted histograms per draw: [1,0,1,1], [0,1,0,2], [2,0,0,1] -> mean
    np.testing.assert_allclose(pc["predicted_mean"].sel(agent="a", n_runs=3).values, [1, 1 / 3, 1 / 3, 4 / 3])
    # P(pred >= obs) at 3 successes: 0, 1, 0 draws have >= 2 -> 1/3
    assert float(pc["p_value"].sel(agent="a", n_runs=3, successes=3)) == pytest.approx(1 / 3)
    np.testing.assert_array_equal(pc["observed"].sel(agent="b", n_runs=2).values[:3], [0, 1, 1])
    with pytest.raises(ValueError, match=r"`group` must be a group of `fit`; 'prior_predictive' not in"):
        predictive_check(dt, group="prior_predictive")


def _fake_pair_fit(pairs: list[str], wins: list[int]) -> xr.DataTree:
    """A minimal fit over a `pair` dim: pointwise log-likelihood and the observed wins."""
    rng = np.random.default_rng(0)
    ll = xr.Dataset(
        {"wins": (("chain", "draw", "pair"), rng.normal(-1.0, 0.1, (2, 50, len(pairs))))},
        coords={"chain": [0, 1], "draw": np.arange(50), "pair": pairs},
    )
    obs = xr.Dataset({"wins": ("pair", np.asarray(wins))}, coords={"pair": pairs})
    return xr.DataTree.from_dict({"log_likelihood": ll, "observed_data": obs})


def test_loo_compare_refuses_fits_of_different_observations_on_any_dim():
    from hierbench.bayes import loo_compare

    a = _fake_pair_fit(["A-B", "A-C", "B-C"], [3, 5, 2])
    other_pairs = _fake_pair_fit(["A-B", "A-D", "B-D"], [3, 5, 2])
    other_wins = _fake_pair_fit(["A-B", "A-C", "B-C"], [3, 5, 4])
    for b in (other_pairs, other_wins):
        with pytest.raises(ValueError, match=r"must share the same observations .*\['b'\] differ"):
            loo_compare({"a": a, "b": b})


def test_each_check_records_its_value_place_limit_and_reason():
    """Issue 24: the thresholds explain themselves; values are arviz-stats' own, places by numpy."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 500, 3))
    x[1, :, 2] += 0.4  # one element whose chains disagree a little
    post = xr.Dataset({"x": (("chain", "draw", "k"), x)}, coords={"k": ["a", "b", "c"]})
    dt = xr.DataTree.from_dict({"posterior": post, "sample_stats": _tree({"z": x[..., 0]})["sample_stats"].to_dataset()})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        out = compute_diagnostics(dt)
    checks = {c["check"]: c for c in json.loads(out.attrs["diag_checks"])}
    assert list(checks) == ["r_hat", "ess_bulk", "ess_tail", "divergences", "bfmi"]
    rhat = azs.rhat(post)["x"].values
    assert checks["r_hat"]["value"] == pytest.approx(rhat.max())
    assert checks["r_hat"]["at"] == f"x[{['a', 'b', 'c'][int(np.argmax(rhat))]}]"
    ess = azs.ess(post, method="bulk")["x"].values
    assert checks["ess_bulk"]["value"] == pytest.approx(ess.min())
    assert checks["ess_bulk"]["limit"] == 400.0 and checks["bfmi"]["limit"] == 0.3
    assert "chi2(m - 1) / (m - 1)" in checks["r_hat"]["why"] and "1.05" in checks["r_hat"]["why"]
    assert "Betancourt 2017" in checks["divergences"]["why"]
    # the verdict and the rows come from one computation
    assert bool(out.attrs["diag_converged"]) == all(c["passed"] for c in checks.values())
    if not checks["r_hat"]["passed"]:
        assert checks["r_hat"]["over_limit_at"].startswith("x[")


def test_loo_compare_returns_full_precision():
    """arviz-stats rounds its compare table for display (elpd -1170.0 for -1167.86): not here."""
    from hierbench.bayes import loo_compare

    a = _fake_pair_fit(["A-B", "A-C", "B-C"], [3, 5, 2])
    mu = np.random.default_rng(1).normal(size=(2, 50))
    a["posterior"] = xr.DataTree(xr.Dataset({"mu": (("chain", "draw"), mu)}))  # loo reads it
    b = a.copy()
    b["log_likelihood"] = xr.DataTree(a["log_likelihood"].to_dataset() - 0.123456)
    table = loo_compare({"a": a, "b": b})
    # the elpd of `a` from the pointwise values arviz-stats itself computes, unrounded
    direct = azs.loo(a)
    assert table.loc["a", "elpd"] == pytest.approx(float(direct.elpd), rel=1e-12)
    assert abs(table.loc["b", "elpd_diff"]) == pytest.approx(3 * 0.123456, rel=1e-6)


def test_per_element_statistics_equal_arviz_stats_element_by_element():
    """compute_diagnostics computes every element at once; arviz-stats, one at a time, is the reference.

    The draws mix random walks (slow mixing), integers (ties), a coordinate-labelled
    2-d variable and a variable with a NaN draw (which goes to arviz-stats itself).
    """
    rng = np.random.default_rng(20261202)
    post = xr.Dataset(
        {
            "walk": (("chain", "draw", "k", "j"), rng.normal(size=(4, 300, 3, 5)).cumsum(axis=1)),
            "iid": (("chain", "draw"), rng.normal(size=(4, 300))),
            "count": (("chain", "draw", "m"), rng.integers(0, 3, size=(4, 300, 2))),
            "gap": (("chain", "draw"), np.where(rng.random((4, 300)) < 0.01, np.nan, 1.0)),
        },
        coords={"k": ["x", "y", "z"]},
    )
    stats = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((4, 300), bool)),
                        "energy": (("chain", "draw"), rng.normal(size=(4, 300)))})  # fmt: skip
    out = compute_diagnostics(xr.DataTree.from_dict({"posterior": post, "sample_stats": stats}), warn=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = {"r_hat": azs.rhat(post), "ess_bulk": azs.ess(post, method="bulk"),
               "ess_tail": azs.ess(post, method="tail")}  # fmt: skip
    for key, want in ref.items():
        got = out["diagnostics"][key].to_dataset()
        assert list(got.data_vars) == list(post.data_vars)
        for v in post.data_vars:
            assert got[v].dims == want[v].dims
            np.testing.assert_allclose(got[v].values, want[v].values, rtol=1e-10, err_msg=f"{key}/{v}")
    assert list(out["diagnostics"]["r_hat"]["k"].values) == ["x", "y", "z"]


def test_advice_says_a_shared_cause_once_naming_every_variable_it_explains():
    """One agent with one run per task gave the same cause and fix three times (sd_task, z_task,
    task_effect), one sentence each; a cause is said once, with the failing variables it explains.
    """
    from hierbench.bayes._checks._diagnostics import _advice

    shared, other = ["why", "the fix"], ["mu's own cause", "mu's fix"]
    dt = xr.DataTree()
    dt.attrs["hierbench_structure"] = json.dumps({"hints": {"sd_task": shared, "z_task": shared, "mu": other}})
    advice = _advice(dt, ["z_task[3]", "sd_task", "mu", "sd_task"], diverged=False)
    assert advice == "`z_task`, `sd_task`: likely cause: why; fix: the fix. `mu`: likely cause: mu's own cause; fix: mu's fix."


def test_advice_for_a_run_that_hit_its_draw_cap_raises_the_cap():
    """METR's continuous scores under the formula model stopped at the 2,000-draw cap with ESS 385
    and were told to refit with draws=2000: the draws it had already made. A run to a target that
    did not reach it is told to double its cap; a fixed run keeps the old advice.
    """
    from hierbench.bayes._checks._diagnostics import _advice

    capped = xr.DataTree()
    capped.attrs["fit_run"] = json.dumps({"rule": "target_ess", "reached": False, "draws": 2000, "max_draws": 2000})
    text = _advice(capped, ["dev[1|task][t1]"], diverged=False)
    assert "stopped at its cap of 2000 draws per chain" in text and "max_draws=4000" in text
    assert "draws=2000," not in text
    fixed = xr.DataTree()
    fixed.attrs["fit_run"] = json.dumps({"rule": "fixed", "draws": 500})
    assert "draws=2000, tune=2000" in _advice(fixed, ["mu"], diverged=False)


def test_a_bracketed_variable_is_named_whole_in_the_failure():
    """A formula model's `re[1|task]` failed as "(at `re`)": the name was cut at its first bracket,
    which is also where an element's label starts. The variable's own name is kept whole.
    """
    rng = np.random.default_rng(2)
    x = rng.normal(size=(4, 500))
    x[0] += 3.0  # one chain elsewhere: R-hat and ESS both fail
    with pytest.warns(ConvergenceWarning) as rec:
        out = compute_diagnostics(_tree({"re[1|task]": x}))
    fails = json.loads(out.attrs["diag_failures"])
    assert any("R-hat" in f and "(at `re[1|task]`;" in f for f in fails), fails
    assert any("min ESS_bulk" in f and f.endswith("(at `re[1|task]`)") for f in fails), fails
    assert "(at `re`" not in " ".join(str(w.message) for w in rec)
