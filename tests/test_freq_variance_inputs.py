"""Variance components and allocation: inputs that used to be invented or lost (issue 24, item 10).

Each test failed on the code before the fix; the expected values are by hand
(the task count, the rows named) or by brute-force enumeration.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.freq import DesignError
from hierbench.freq import VarianceComponentsResult
from hierbench.freq import optimal_allocation
from hierbench.freq import variance_components


def _long_frame(n_agent=4, n_task=5, n_run=2, seed=0) -> pd.DataFrame:
    idx = np.indices((n_agent, n_task, n_run)).reshape(3, -1).T
    df = pd.DataFrame(idx, columns=["agent", "task", "run"]).astype(str)
    df["score"] = np.random.default_rng(seed).random(len(df)).round(2)
    return df


def test_text_scores_are_refused_naming_rows_and_values():
    # 40 rows; 21 of them hold a decimal comma, which used to become NaN and be dropped
    # (the fit then silently ran REML on the 19 rows left)
    df = _long_frame()
    df["score"] = df["score"].astype(object)
    bad = [*range(0, 40, 2), 39]
    df.loc[bad, "score"] = "0,5"
    assert len(bad) == 21 and len(df) == 40
    with pytest.raises(ValueError) as err:
        variance_components(df, design="run:(agent*task)", var="score")
    msg = str(err.value)
    assert "`data`: column 'score' must hold numbers" in msg
    assert "21 of 40 rows" in msg
    assert f"({bad[0]}, '0,5')" in msg


def test_numeric_text_and_missing_scores_are_read_and_counted():
    df = _long_frame()
    ref = variance_components(df, design="run:(agent*task)", var="score")
    as_text = df.assign(score=df["score"].map(repr).astype(object))
    got = variance_components(as_text, design="run:(agent*task)", var="score")
    np.testing.assert_array_equal(got.estimate.values, ref.estimate.values)
    # two rows with no score: left out, and the note says how many
    gaps = df.astype({"score": object})
    gaps.loc[[3, 17], "score"] = None
    vc = variance_components(gaps, design="run:(agent*task)", var="score")
    assert vc.n_obs == 38
    assert "2 rows with no score (NaN) were left out" in vc.note


def test_single_task_is_refused():
    # one task: the G-study used to drop the task facet and report E rho^2 without a word
    y = np.array(
        [[1, 0, 1, 1], [1, 1, 1, 0], [0, 0, 0, 1]],
        dtype=float,
    )[:, None, :]
    ds = xr.Dataset({"score": (("agent", "task", "run"), y)}, coords={"task": ["t1"]})
    with pytest.raises(DesignError, match=r"the facet 'task' .* has a single level \('t1'\)"):
        variance_components(ds)
    # the same data with the facet stated away is a plain one-facet G-study over runs
    vc = variance_components(ds.score.isel(task=0), design="run:agent")
    assert list(vc.component_names) == ["agent", "residual"]


def test_single_level_nested_facet_is_refused_but_one_agent_and_one_run_are_not():
    rng = np.random.default_rng(1)
    df = pd.DataFrame(
        np.indices((3, 4, 1, 2)).reshape(4, -1).T, columns=["agent", "task", "cluster", "run"]
    ).assign(y=rng.normal(size=24))
    with pytest.raises(DesignError, match="'cluster'"):
        variance_components(df, design="run:(agent*(task:cluster))", var="y")
    # one agent (the object of measurement): left out, coefficients undefined (NaN)
    one_agent = xr.DataArray(rng.normal(size=(1, 6, 3)), dims=("agent", "task", "run"))
    vc = variance_components(one_agent)
    assert vc.measurement is None and vc.dropped == ("agent",)
    # one run per cell: confounded with the residual, said in the note
    one_run = xr.DataArray(rng.normal(size=(4, 6, 1)), dims=("agent", "task", "run"))
    assert "confounded" in variance_components(one_run).note


def test_paired_allocation_finds_the_integer_optimum():
    # B = 100, c_task = 5, c_run = 1, s_mt = 0.01, s_e = 0.2: R* = 10 gives 6 tasks and
    # Var = (0.02 + 0.04) / 6 = 0.01, but 9 runs buy 7 tasks: (0.02 + 0.4 / 9) / 7 = 0.00921
    a = optimal_allocation(
        100.0, cost_task=5.0, cost_run=1.0, sigma2_interaction=0.01, sigma2_residual=0.2
    )
    assert (int(a.n_runs), int(a.n_tasks)) == (9, 7)
    assert float(a.var_mean_diff) == pytest.approx((0.02 + 0.4 / 9) / 7, rel=1e-12)
    assert a.attrs["search"] == "exact"
    # brute force over a grid of cases: never worse than the best affordable (R, T)
    rng = np.random.default_rng(0)
    for _ in range(100):
        B, ct, cr = rng.uniform(20, 2000), rng.uniform(0, 30), rng.uniform(0.2, 4)
        s_mt, s_e = rng.uniform(0, 0.05) * (rng.random() > 0.1), rng.uniform(0.01, 0.5)
        if B // (ct + cr) < 2:
            continue
        best = min(
            (2 * s_mt + 2 * s_e / R) / (B // (ct + R * cr))
            for R in range(1, int(B / 2 / cr) + 2)
            if B // (ct + R * cr) >= 2
        )
        got = optimal_allocation(
            B, cost_task=ct, cost_run=cr, sigma2_interaction=s_mt, sigma2_residual=s_e, min_tasks=2
        )  # the brute force is over T >= 2; the default floor is the sign-flip test's (6 tasks)
        assert float(got.var_mean_diff) <= best * (1 + 1e-12)
        assert float(got.cost) <= B


def test_grid_and_paired_allocation_agree():
    # one owner: the result's grid search (one agent costed) and the paired entry point
    # find the same design when the grid holds it
    rng = np.random.default_rng(2)
    y = rng.normal(0, 0.3, (2, 30, 1)) + rng.normal(0, 1.0, (2, 30, 4))
    vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    assert isinstance(vc, VarianceComponentsResult)
    grid = vc.optimal_allocation(
        300.0, {"task": 4.0, "run": 1.0}, n_objects=1, max_sizes={"task": 80, "run": 80}
    )
    paired = optimal_allocation(300.0, cost_task=4.0, cost_run=1.0, components=vc)
    assert grid.attrs["optimum"] == {"task": int(paired.n_tasks), "run": int(paired.n_runs)}
    assert grid.attrs["optimum_value"] == pytest.approx(float(paired.var_mean_diff), rel=1e-12)
