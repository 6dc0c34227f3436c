"""Audit S findings 5 and 8: the default formula on graded scores, and clear errors for a wrong fit or `like`."""

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import hierbench as hb
from hierbench._base import HierbenchWarning
from hierbench.data import DEFAULT_FORMULA
from hierbench.data import FormulaError


def _graded(runs: int = 2) -> xr.Dataset:
    rng = np.random.default_rng(0)
    agents, tasks = ["a", "b", "c"], [f"t{i}" for i in range(10)]
    df = pd.DataFrame(
        [(a, t, r, int(rng.integers(1, 6))) for a in agents for t in tasks for r in range(runs)],
        columns=["agent", "task", "run", "score"],
    )
    return hb.data.from_records(df, run="run", score_levels=[1, 2, 3, 4, 5]), df


def test_default_formula_builds_on_graded_scores_and_says_so():
    ds, _ = _graded()
    with pytest.warns(HierbenchWarning, match=r"cannot be fitted to ordinal scores.*'0 \+ agent'"):
        d = hb.data.model_design(None, ds)
    assert d.family == "ordinal"
    assert d.formula == "score ~ agent + (1|task) + (1|agent:task)"
    assert "0 + agent" in d.decisions["formula"] and "reference agent" in d.decisions["formula"]
    # independent: treatment coding of the raw agent column (pandas, first level dropped), per design row
    rows = pd.DataFrame({"agent": np.asarray(d.agents)[d.agent_index]})
    dummies = pd.get_dummies(rows["agent"], drop_first=True, dtype=float)
    assert d.coef == [f"agent[{c}]" for c in dummies.columns] == ["agent[b]", "agent[c]"]
    np.testing.assert_array_equal(d.X, dummies.to_numpy())
    # the text of DEFAULT_FORMULA given explicitly is the default too (model_design's existing rule)
    with pytest.warns(HierbenchWarning, match="ordinal"):
        assert hb.data.model_design(DEFAULT_FORMULA, ds).formula == d.formula


def test_default_formula_untouched_on_binary_scores():
    ds = hb.testing.simulate_eval(3, 10, 2, rng=0)[0]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*ordinal.*")
        d = hb.data.model_design(None, ds)
    assert d.family == "binomial" and d.formula == DEFAULT_FORMULA and "formula" not in d.decisions
    assert d.coef == ["agent[agent_00]", "agent[agent_01]", "agent[agent_02]"]


def test_user_formula_with_0_plus_is_refused_with_the_fix_named():
    ds, _ = _graded()
    given = "score ~ 0 + agent + (1|task)+(1|agent:task)"  # written by a user: never rewritten
    with pytest.raises(FormulaError, match=r"drops the intercept with '0 \+'.*write 'score ~ agent \+ \(1\|task\)"):
        hb.data.model_design(given, ds)
    assert hb.data.model_design("score ~ agent + (1|task)+(1|agent:task)", ds).coef == ["agent[b]", "agent[c]"]


def test_build_mixed_default_on_one_run_graded_log_records_the_coding():
    import hierbench.bayes as B

    ds, _ = _graded(runs=1)
    with pytest.warns(HierbenchWarning, match="ordinal"):
        model = B.build_mixed(ds)
    dec = model.hierbench["structure"]["decisions"]["formula"]
    assert dec["choice"] == "score ~ agent + (1|task)"  # one run per cell: no agent x task term
    assert "0 + agent" in dec["reason"] and dec["source"] == "auto"


@pytest.mark.parametrize("fn", ["bayes_variance_components", "bayes_d_study"])
def test_like_must_be_a_g_study(fn):
    ds = hb.testing.simulate_eval(3, 10, 3, rng=0)[0]
    args = (xr.DataTree(), ds) + (({"task": [10]},) if fn == "bayes_d_study" else ())
    with pytest.raises(TypeError, match=r"`like` must be a VarianceComponentsResult.*xarray.*Dataset.*"
                       r"variance_components\(data\)"):  # fmt: skip
        getattr(hb.metrics, fn)(*args)


def test_predictive_check_names_a_fit_without_counts():
    import json

    import hierbench.bayes as B

    obs = xr.Dataset({"y": ("obs", [0.2, 0.7])}, coords={"obs": [0, 1], "obs_agent": ("obs", ["a", "b"])})
    pp = xr.Dataset({"y": (("chain", "draw", "obs"), np.full((1, 3, 2), 0.5))}, coords=obs.coords)
    dt = xr.DataTree.from_dict({"observed_data": obs, "posterior_predictive": pp})
    dt.attrs["hierbench_spec"] = json.dumps({"model": "mixed", "options": {"family": "fractional"}})
    with pytest.raises(ValueError, match=r"`fit` must be a fit of success counts.*'mixed' fit of family "
                       r"'fractional'.*'y' is over dims \['obs'\].*fit\['posterior_predictive'\]\['y'\]"):  # fmt: skip
        B.predictive_check(dt)
