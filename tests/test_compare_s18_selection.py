"""A frequentist pass^k over the tasks with >= k runs is not the pass^k over every task (audit s18 X, finding 3).

The unbiased pass^k leaves out the tasks run fewer than k times. On METR, o1-preview's pass^8
averaged 49 of its 75 tasks (the other 26 had a mean success rate of 0.22 against 0.69), and
side_by_side put it beside the Bayesian population pass^8 (0.408 vs 0.289) under one label:
the population result's n_tasks is NaN, so the task counts were never compared. side_by_side
now refuses such a pair, naming the cells and the task counts; the expected counts below are
counted on the log with numpy.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import xarray as xr
from _helpers import fake_fit

from hierbench import freq
from hierbench._base import make_interval
from hierbench.compare import MismatchedEstimatesError
from hierbench.compare import side_by_side
from hierbench.metrics import pass_hat_k
from hierbench.testing import simulate_eval


def _ragged():
    """Three agents, 40 tasks, up to 5 runs with half the runs missing: many tasks have fewer than 3."""
    ds, _ = simulate_eval(n_agents=3, n_tasks=40, n_runs=5, p_missing_run=0.5, rng=4)
    return ds, ds.score.notnull().sum("run").values


def _stated(agents, ks, *, tasks, quantity="pass^k", n_tasks=None) -> xr.Dataset:
    """A hand-built result over (agent, k) stating its quantity, tasks and scale (a posterior's words)."""
    est = xr.DataArray(np.full((len(agents), len(ks)), 0.5), dims=("agent", "k"), coords={"agent": agents, "k": ks})
    out = xr.Dataset({"estimate": est, "ci": make_interval(est - 0.1, est + 0.1, prob=0.95, kind="eti")})
    if n_tasks is not None:
        out["n_tasks"] = est.copy(data=np.asarray(n_tasks, float))
    return out.assign_attrs(quantity=quantity, tasks=tasks, scale="probability")


def _said_cells(message: str, sym: str) -> list[tuple[str, int, int]]:
    """The (agent, tasks averaged, tasks run) the refusal names for k = 3."""
    found = re.findall(re.escape(sym) + r"3 of (\S+) averages (\d+) of its (\d+) tasks, those with >= 3 runs", message)
    return [(a, int(n), int(m)) for a, n, m in found]


@pytest.mark.parametrize(("fn", "sym"), [(freq.pass_hat_k, "pass^"), (freq.pass_at_k, "pass@")])
def test_pass_k_over_the_tasks_with_k_runs_is_refused_beside_the_population(fn, sym):
    ds, cnt = _ragged()
    agents = [str(a) for a in ds.agent.values]
    n3, ran = (cnt >= 3).sum(1), (cnt >= 1).sum(1)
    assert (n3 < ran).all() and (n3 > 0).all()  # the case: every agent loses tasks at k = 3
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unbiased = fn(ds, [1, 3])
    pop = _stated(agents, [1, 3], tasks="population", n_tasks=np.full((3, 2), np.nan), quantity=sym + "k")
    with pytest.raises(MismatchedEstimatesError) as err:
        side_by_side({"unbiased": unbiased, "population": pop})
    msg = str(err.value)
    said = _said_cells(msg, sym)
    assert len(said) == 3 and "in 3 cells" in msg
    counted = {a: (int(n), int(m)) for a, n, m in zip(agents, n3, ran, strict=True)}
    assert all(counted[a] == (n, m) for a, n, m in said)
    assert "min_runs='k'" in msg and "here k = [1]" in msg and "allow_mismatch=True" in msg
    # the user's word still sets them side by side
    t = side_by_side({"unbiased": unbiased, "population": pop}, allow_mismatch=True)
    np.testing.assert_array_equal(t["n_tasks"].sel(estimator="unbiased", k=3).values, n3)
    # where every task has the runs, nothing is left out and the pair is accepted
    full, _ = simulate_eval(n_agents=3, n_tasks=40, n_runs=5, rng=4)
    side_by_side({"unbiased": fn(full, [1, 3]), "population": pop.assign_coords(agent=full.agent.values)})


def test_a_pass_k_at_one_k_is_refused_beside_a_posterior_population_pass_k():
    ds, cnt = _ragged()
    agents = [str(a) for a in ds.agent.values]
    rng = np.random.default_rng(0)
    succ = ds.score.fillna(0).sum("run").values
    fit = fake_fit("beta_binomial", agents, {"n_runs": cnt, "n_success": succ},
                   mu=rng.uniform(0.2, 0.8, (2, 50, 3)), kappa=rng.uniform(1, 10, (2, 50, 3)))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        unbiased = freq.pass_hat_k(ds, 3)  # one k: the result keeps no k coordinate
    with pytest.raises(MismatchedEstimatesError, match="over the tasks with at least k runs only") as err:
        side_by_side({"unbiased": unbiased, "population": pass_hat_k(fit, k=3, population=True)})
    n3, ran = (cnt >= 3).sum(1), (cnt >= 1).sum(1)
    counted = {a: (int(n), int(m)) for a, n, m in zip(agents, n3, ran, strict=True)}
    said = _said_cells(str(err.value), "pass^")
    assert said and all(counted[a] == (n, m) for a, n, m in said)


def test_without_a_count_of_the_tasks_left_out_the_smallest_k_is_the_reference():
    # a hand-built frequentist result at k = 2 and 4 that states n_tasks only: 10 tasks at k=2, 7 at k=4
    freq_like = _stated(["x"], [2, 4], tasks="population", n_tasks=[[10, 7]])
    everything = _stated(["x"], [2, 4], tasks="observed", n_tasks=[[10, 10]])  # a posterior over all its tasks
    for other in (everything, _stated(["x"], [2, 4], tasks="population", n_tasks=[[np.nan, np.nan]])):
        with pytest.raises(MismatchedEstimatesError,
                           match=r"pass\^4 of x averages 7 of the 10 tasks it averages at k=2, those with >= 4 runs"
                           r".*\(here k = \[2\], where no task is left out\)"):  # fmt: skip
            side_by_side({"freq": freq_like, "other": other})
    # beside a posterior over the same tasks (min_runs="k") the tasks agree; the intervals' targets
    # do not, and the advice no longer sends the reader to population=True, which averages every task
    same = _stated(["x"], [2, 4], tasks="observed", n_tasks=[[10, 7]])
    with pytest.raises(MismatchedEstimatesError, match="no population=True result is their like"):
        side_by_side({"freq": freq_like, "same": same})
