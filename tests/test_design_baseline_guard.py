"""The no-model plain mean with repeated runs keeps its level where its t interval degenerates.

Audit D, finding 2: on METR (gpt-3.5-turbo-instruct, 76 tasks, 10 drawn, 90%) the plain mean's
t interval was ``0 [0, 0]`` in 133 of 200 plans, all missing. The references here are scipy's
hypergeometric law (the bracket's bounds on the number of tasks with any success / any failure)
and seeded simulations with their binomial tolerance stated.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench._base import ZeroWidthIntervalWarning
from hierbench.design import assisted_adaptive
from hierbench.design import assisted_mean
from hierbench.design import loo_study
from hierbench.design import plan_subset
from hierbench.design._bracket import bracket_bounds


def _h_hi(s: int, n: int, T: int, prob: float) -> int:
    """The largest population count H whose lower tail P(S <= s) exceeds (1 - prob) / 2 (scipy)."""
    H = np.arange(T + 1)
    ok = stats.hypergeom.cdf(s, T, H, n) > (1 - prob) / 2
    return int(H[ok].max())


def _runs(rates: np.ndarray, R: int = 8) -> np.ndarray:
    """(agent, task, run) 0/1 runs whose per-task success rate is ``rates`` (a multiple of 1/R) exactly."""
    k = np.round(np.asarray(rates) * R).astype(int)
    return (np.arange(R) < k[..., None]).astype(float)


def _weak(M: int, T: int = 76) -> np.ndarray:
    """METR-like weak agent (gpt-3.5-turbo-instruct's shape): 3 of 76 tasks with a success in 8 runs, mean 0.0082."""
    r = np.zeros((M, T))
    r[:, :3] = [1 / 8, 2 / 8, 2 / 8]
    return r


def test_bracket_by_hand_and_with_scipy():
    # the finding's example: 10 of 76 drawn, all 0, 90%: at most 18 of 76 tasks with any success
    assert _h_hi(0, 10, 76, 0.9) == 18
    np.testing.assert_allclose(bracket_bounds(np.zeros(10), 76, 0.9), (0.0, 18 / 76))
    # general rates: upper = (sum + D_hi - d) / T, lower = (sum + T - E_hi - (n - e)) / T
    v = np.array([0, 0, 0.25, 0.5, 1, 1, 0, 0.75, 0, 0, 1, 0])
    n, T, d, e = v.size, 50, 6, 9
    want = ((v.sum() + T - _h_hi(e, n, T, 0.8) - (n - e)) / T, (v.sum() + _h_hi(d, n, T, 0.8) - d) / T)
    np.testing.assert_allclose(bracket_bounds(v, T, 0.8), want)
    # 0/1 values: the exact hypergeometric interval (its lower end the smallest H with P(S >= s) > alpha / 2)
    b = (np.arange(12) < 4).astype(float)
    H = np.arange(41)
    lo = H[stats.hypergeom.sf(3, 40, H, 12) > 0.05].min()
    np.testing.assert_allclose(bracket_bounds(b, 40, 0.9), (lo / 40, _h_hi(4, 12, 40, 0.9) / 40))


def test_all_zero_sample_gets_the_bracket_said_as_conservative():
    T = 76
    tasks = [f"t{i:02d}" for i in range(T)]
    y = np.concatenate([_runs(_weak(1)), _runs(np.full((1, T), 3 / 8))])  # weak agent, and a 3/8 one
    logs = xr.DataArray(y, dims=("agent", "task", "run"), coords={"agent": ["weak", "mid"], "task": tasks})
    plan = plan_subset(tasks, 10, rng=next(s for s in range(50) if not set(
        plan_subset(tasks, 10, rng=s).order.values.astype(str)) & set(tasks[:3])))  # a plan missing the 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroWidthIntervalWarning)
        res = assisted_mean(plan, logs.sel(agent=["weak"]), None, prob=0.9, n_runs=8)
    np.testing.assert_allclose(res.ci.values, [[0.0, 18 / 76]])
    assert res.ci.attrs["ci_kind"] == "conservative" and res.ci.attrs["ci_prob"] == 0.9
    assert "distribution-free bracket" in res.ci.attrs["ci_detail"]
    assert "90% conservative interval (distribution-free bracket" in repr(res)
    # an agent at a constant 3/8 rate: both ends from the bracket (none of its tasks at 0 or 1)
    mid = (3 / 8 * 10 + T - _h_hi(10, 10, T, 0.9) - 0) / T, (3 / 8 * 10 + _h_hi(10, 10, T, 0.9) - 10) / T
    np.testing.assert_allclose(assisted_mean(plan, logs, None, prob=0.9, n_runs=8).ci.sel(agent="mid").values, mid)
    # rates that vary: the t interval as before (kind t, no guard); beside the weak agent: "mixed", per row
    g = np.random.default_rng(4)
    var = np.concatenate([_runs(g.integers(0, 9, (1, T)) / 8), y[:1]])
    r = assisted_mean(plan, xr.DataArray(var, dims=("agent", "task", "run"),
                                         coords={"agent": ["v", "weak"], "task": tasks}), None, prob=0.9, n_runs=8)
    v = (var.mean(-1)[0])[[tasks.index(t) for t in plan.order.values.astype(str)]]
    half = stats.t.ppf(0.95, 9) * v.std(ddof=1) / np.sqrt(10) * np.sqrt(1 - 10 / T)
    np.testing.assert_allclose(r.ci.values[0], [v.mean() - half, v.mean() + half])
    assert r.ci.attrs["ci_kind"] == "mixed" and list(r.to_frame()["ci_kind"]) == ["t", "conservative"]
    assert list(r.guard.values) == ["", "bracket"] and "distribution-free bracket (conservative)" in repr(r)


def test_weak_agent_coverage_at_level():
    """Seeded simulation: 150 replicate agents with the METR-like weak population, each its own 40 uniform draws.

    40 tasks exercise both guards (no drawn task off 0: about 0.10 of paths; one: about 0.35).
    Before the guard the t interval covered about 0.67 here (0.77 with the all-0 case fixed
    alone); the guarded one must cover at least 0.90 - 3 binomial sds of 150 (0.826).
    """
    T, M, n = 76, 150, 40
    tasks = [f"t{i:02d}" for i in range(T)]
    logs = xr.DataArray(_runs(_weak(M)), dims=("agent", "task", "run"),
                        coords={"agent": [f"a{i:03d}" for i in range(M)], "task": tasks})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroWidthIntervalWarning)
        res = assisted_adaptive(None, logs, n_tasks=n, prob=0.9, n_runs=8, rng=12)
    truth = _weak(1).mean()
    lo, hi = res.ci.values.T
    cov = float(((lo <= truth + 1e-12) & (truth <= hi + 1e-12)).mean())
    assert cov >= 0.9 - 3 * np.sqrt(0.09 / M), cov
    assert (hi > lo).all()  # never a point short of a census


@pytest.mark.filterwarnings("ignore::hierbench.freq.IRTConvergenceWarning")  # 3 calibration agents: a flat bank
def test_loo_study_baseline_uses_the_guard():
    # repeated runs, a held-out agent at 0 on every task but one (1 success of 3 runs): every
    # random_mean interval whose 5 chosen tasks are all 0 is the bracket [0, H_hi(0) / T] (scipy)
    g = np.random.default_rng(0)
    T, R = 30, 3
    y = (g.random((4, T, R)) < g.uniform(0.2, 0.8, (4, 1, 1))).astype(float)
    y[0] = 0.0
    y[0, 0, 0] = 1.0
    data = xr.Dataset({"score": (("agent", "task", "run"), y)},
                      coords={"agent": [f"m{i}" for i in range(4)], "task": [f"t{i}" for i in range(T)]})
    st = loo_study(data, agents=["m0"], n_tasks=(5,), selections=("random_mean",), n_repeat=12, misfit=False,
                   working="none", n_bank_draws=50, rng=1)
    pred = st.predicted.values.ravel()
    lo, hi = st.lower.values.ravel(), st.upper.values.ravel()
    zero = pred == 0
    assert zero.any() and (~zero).any()
    np.testing.assert_allclose(np.c_[lo, hi][zero], np.tile([0.0, _h_hi(0, 5, T, 0.9) / T], (zero.sum(), 1)))
    assert (hi[~zero] >= (1 / 3 + _h_hi(1, 5, T, 0.9) - 1) / T - 1e-12).all()  # one task off 0: upper end guarded
    assert "distribution-free bracket" in st.attrs["ci_detail"]
