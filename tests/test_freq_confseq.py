"""Confidence sequences: time-uniform coverage by simulation, peeking failure, reference loop."""

import math

import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from scipy import stats

from hierbench.freq import EmptyConfidenceSequenceWarning
from hierbench.freq import confidence_sequence
from hierbench.freq._rates._confseq import _in_cs

ALPHA = 0.05


def _reference_bounds(x, alpha=0.05, breaks=20, theta=0.5, c=0.5):
    """Plain loops over candidate means and times, straight from the definitions."""
    grid = [i / breaks for i in range(breaks + 1)]
    T = len(x)
    lam = []
    mu_prev, s2_prev, s_sum, sq_sum = 0.5, 0.25, 0.0, 0.0
    for t in range(1, T + 1):
        lam.append(math.sqrt(2 * math.log(1 / (alpha * theta)) / (s2_prev * t * math.log(1 + t))))
        s_sum += x[t - 1]
        mu_t = min((0.5 + s_sum) / (t + 1), 1.0)
        sq_sum += (x[t - 1] - mu_t) ** 2
        s2_prev = (0.25 + sq_sum) / (t + 1)
        mu_prev = mu_t
    del mu_prev
    out = []
    kp = dict.fromkeys(grid, 1.0)
    kn = dict.fromkeys(grid, 1.0)
    for t in range(T):
        inside = []
        for m in grid:
            lp = min(lam[t], c / m) if m > 0 else lam[t]
            ln = min(lam[t], c / (1 - m)) if m < 1 else lam[t]
            kp[m] *= 1 + lp * (x[t] - m)
            kn[m] *= 1 - ln * (x[t] - m)
            if max(theta * kp[m], (1 - theta) * kn[m]) <= 1 / alpha:
                inside.append(m)
        if inside:
            out.append((max(0.0, inside[0] - 1 / breaks), min(1.0, inside[-1] + 1 / breaks)))
        else:
            out.append((0.0, 1.0))
    return np.array(out)


def test_matches_reference_loop():
    x = np.random.default_rng(7).beta(0.7, 0.9, 60)
    cs = confidence_sequence(xr.DataArray(x, dims="task"), breaks=20, running_intersection=False)
    np.testing.assert_allclose(cs.bounds.values, _reference_bounds(list(x)), atol=1e-12)
    np.testing.assert_allclose(cs.estimate.values, np.cumsum(x) / np.arange(1, 61))


@pytest.mark.slow
def test_exact_capital_never_crosses_at_the_true_mean_more_than_alpha():
    # Ville: P(exists t <= 1000: hedged capital at the true mean >= 1/alpha) <= alpha.
    # 4,000 Bernoulli(0.3) streams (one binary run per task), exact (no grid).
    n_streams, T = 4000, 1000
    x = (np.random.default_rng(1).random((n_streams, T)) < 0.3).astype(float)
    inside = _in_cs(x, np.array([0.3]), ALPHA, 0.5, 0.5, "max")[:, 0, :]
    miss = np.mean(~inside.all(axis=1))
    assert miss <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / n_streams)  # MC tol: 3 SE = 0.010


@pytest.mark.slow
def test_time_uniform_coverage_and_peeking_at_a_fixed_sample_interval_fails():
    n_streams, T = 1000, 1000
    rng = np.random.default_rng(2024)
    x = rng.beta(2, 5, (n_streams, T))  # per-task partial-credit scores, mean 2/7
    m0 = 2 / 7
    da = xr.DataArray(x, dims=("stream", "task"))
    cs = confidence_sequence(da, breaks=50)  # a coarse grid only widens the bounds
    b = cs.bounds.values
    assert b.shape == (n_streams, T, 2)
    covered = ((b[..., 0] <= m0) & (m0 <= b[..., 1])).all(axis=1)
    tol = 3 * math.sqrt(ALPHA * (1 - ALPHA) / n_streams)  # Monte Carlo tolerance: 3 SE = 0.021
    assert covered.mean() >= 1 - ALPHA - tol
    # not vacuous: at t = 1,000 the sequence is narrow
    assert np.median(b[:, -1, 1] - b[:, -1, 0]) < 0.1
    # the fixed-sample t interval, recomputed and peeked at after every task from t = 10
    t = np.arange(1, T + 1)
    mean = np.cumsum(x, axis=1) / t
    var = (np.cumsum(x**2, axis=1) - t * mean**2) / np.maximum(t - 1, 1)
    half = stats.t.ppf(1 - ALPHA / 2, np.maximum(t - 1, 1)) * np.sqrt(var / t)
    peek = slice(9, None)
    fixed_covered = (np.abs(mean - m0) <= half)[:, peek].all(axis=1)
    # at any single fixed t the t interval is fine ...
    assert abs(np.mean(np.abs(mean[:, -1] - m0) <= half[:, -1]) - (1 - ALPHA)) <= tol
    # ... but peeked at every t it misses far more often than alpha
    assert 1 - fixed_covered.mean() > ALPHA + tol
    assert covered.mean() > fixed_covered.mean()


@pytest.mark.slow
def test_paired_difference_coverage():
    n_streams, T = 1000, 300
    rng = np.random.default_rng(9)
    p = rng.beta(1, 1, (n_streams, T))  # task difficulty shared by both agents
    a = (rng.random((n_streams, T)) < p).astype(float)
    b = (rng.random((n_streams, T)) < p).astype(float)  # same skill: true difference 0
    A = xr.DataArray(a, dims=("stream", "task"))
    B = xr.DataArray(b, dims=("stream", "task"))
    cs = confidence_sequence(A, B, breaks=50)
    lo, hi = cs.bounds.sel(ci_bound="lower").values, cs.bounds.sel(ci_bound="upper").values
    assert lo.min() >= -1 and hi.max() <= 1
    covered = ((lo <= 0) & (hi >= 0)).all(axis=1)
    assert covered.mean() >= 1 - ALPHA - 3 * math.sqrt(ALPHA * (1 - ALPHA) / n_streams)
    np.testing.assert_allclose(cs.estimate.values[:, -1], (a - b).mean(axis=1))
    assert "paired difference" in cs.bounds.attrs["ci_detail"]


def test_running_intersection_is_monotone_and_sum_hedge_is_never_wider():
    x = xr.DataArray(np.random.default_rng(3).beta(3, 2, 400), dims="task")
    cs = confidence_sequence(x)
    lo, hi = cs.bounds.values[:, 0], cs.bounds.values[:, 1]
    assert (np.diff(lo) >= 0).all() and (np.diff(hi) <= 0).all()
    raw = confidence_sequence(x, running_intersection=False).bounds.values
    sm = confidence_sequence(x, running_intersection=False, combine="sum").bounds.values
    assert (sm[:, 0] >= raw[:, 0] - 1e-12).all() and (sm[:, 1] <= raw[:, 1] + 1e-12).all()
    ds = cs.to_dataset()
    assert ds.bounds.attrs["ci_prob"] == 0.95 and list(ds.ci_bound.values) == ["lower", "upper"]
    assert int(ds.n[-1]) == 400


def test_bad_input_messages():
    x = xr.DataArray(np.full(5, 0.5), dims="task")
    with pytest.raises(
        ValueError, match=r"`x` values must lie in \[0, 1\]; 1 do not, e.g. \[1.5\]"
    ):
        confidence_sequence(x.copy(data=[0.1, 0.2, 1.5, 0.3, 0.4]))
    with pytest.raises(
        ValueError, match=r"`x` must have no NaN .* 1 NaN, e.g. at positions \[\[1\]\]"
    ):
        confidence_sequence(x.copy(data=[0.1, np.nan, 0.5, 0.3, 0.4]))
    with pytest.raises(ValueError, match=r"`prob` must satisfy 0 < prob < 1; got prob=0"):
        confidence_sequence(x, prob=0)
    with pytest.raises(ValueError, match=r"`breaks` must be an integer >= 2; got 1"):
        confidence_sequence(x, breaks=1)
    with pytest.raises(ValueError, match=r"`theta` must satisfy 0 <= theta <= 1; got 2"):
        confidence_sequence(x, theta=2)
    with pytest.raises(ValueError, match=r"`trunc_scale` must satisfy 0 < trunc_scale <= 1; got 0"):
        confidence_sequence(x, trunc_scale=0)
    with pytest.raises(ValueError, match=r"`combine` must be 'max' or 'sum'; got 'mean'"):
        confidence_sequence(x, combine="mean")
    with pytest.raises(
        ValueError, match=r"`task_dim` must be a dimension of `x` \('task',\); got 'item'"
    ):
        confidence_sequence(x, task_dim="item")
    with pytest.raises(ValueError, match=r"`x` has a 'run' dim: .* average the runs"):
        confidence_sequence(x.expand_dims(run=[0, 1], axis=1))
    with pytest.raises(TypeError, match=r"`y` must be an xarray.DataArray; got list"):
        confidence_sequence(x, [0.5] * 5)
    # audit E 6: no task at all (was: numpy's "cannot reshape array of size 0")
    with pytest.raises(ValueError, match=r"`x` has no tasks along 'task' \(size 0\)"):
        confidence_sequence(x.isel(task=slice(0, 0)))
    with pytest.raises(ValueError, match=r"`x` and `y` must have the same 'task' labels"):
        confidence_sequence(
            x.assign_coords(task=list("vwxyz")), x.assign_coords(task=list("abcde"))
        )


@settings(max_examples=20, deadline=None)
@given(
    x=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=80),
    combine=st.sampled_from(["max", "sum"]),
)
def test_bounds_are_ordered_and_mirror_under_one_minus_x(x, combine):
    # theta = 1/2: the sequence for 1 - x is the mirror image of the one for x
    # (breaks = 64 keeps the grid exact in binary, so the mirror grid is the same grid)
    da = xr.DataArray(np.array(x), dims="task")
    b = confidence_sequence(da, breaks=64, combine=combine).bounds.values
    m = confidence_sequence(1 - da, breaks=64, combine=combine).bounds.values
    assert (0 <= b[:, 0]).all() and (b[:, 0] <= b[:, 1]).all() and (b[:, 1] <= 1).all()
    np.testing.assert_allclose(m[:, 0], 1 - b[:, 1], atol=1e-12)
    np.testing.assert_allclose(m[:, 1], 1 - b[:, 0], atol=1e-12)


def test_empty_running_intersection_is_nan_with_warning():
    # a mean that jumps from 0 to 1: no constant mean fits, the intersection empties
    x = xr.DataArray(np.r_[np.zeros(200), np.ones(200)], dims="task")
    with pytest.warns(EmptyConfidenceSequenceWarning, match=r"running intersection is empty"):
        cs = confidence_sequence(x)
    b = cs.bounds.values
    assert np.isnan(b[-1]).all() and np.isfinite(b[:150]).all()
    # without the intersection every set is an interval
    raw = confidence_sequence(x, running_intersection=False).bounds.values
    assert (raw[:, 0] <= raw[:, 1]).all()


def test_file_order_miss_is_warned_and_the_order_is_said(shared_data):
    """Audit E 3: in SWE-bench's file order (tasks grouped by repository) Claude 4.5 Opus's final
    90% set excludes its own 500-task mean, counted by hand here; that is warned, and the repr
    says the order was the data's.
    """
    import warnings

    from hierbench.data import load_swebench_bash_only
    from hierbench.freq import TaskOrderWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader's note on a flagged agent
        ds = load_swebench_bash_only()
    x = ds.score.isel(run=0).sel(agent="Claude 4.5 Opus medium (20251101)")
    full_mean = int((x.values == 1).sum()) / x.size  # 372 of 500 resolved
    assert full_mean == 0.744
    assert list(ds.cluster.values[:2]) == ["astropy", "astropy"]  # the file is grouped by repository
    with pytest.warns(TaskOrderWarning, match=r"0.744 outside \[0.644, 0.724\].*uniformly random order"):
        cs = confidence_sequence(x, prob=0.9)
    lo, hi = cs.ci.isel(task=-1).values
    assert not lo <= full_mean <= hi
    assert "in the order given" in repr(cs) and cs.ci.attrs["task_order"].startswith("as given")
    assert (cs.order.values == np.arange(500)).all() and not cs.shuffled


def test_shuffle_draws_a_recorded_random_order_and_covers_a_finite_benchmark():
    """``shuffle=True``: one uniformly random permutation, recorded, the same as taking the tasks in
    that order by hand; over random orders of a finite benchmark (sampling without replacement) the
    whole path covers the benchmark mean at least at the level (seeded simulation, MC tolerance).
    """
    g = np.random.default_rng(2059)
    # a grouped benchmark: 8 groups of 25 tasks, success rates rising group by group (file order drifts)
    rates = np.repeat(np.linspace(0.1, 0.95, 8), 25)
    bench = xr.DataArray(g.random((4, 200)) < rates, dims=("agent", "task"),
                         coords={"task": [f"t{i}" for i in range(200)]}).astype(float)
    truth = bench.mean("task").values
    cs = confidence_sequence(bench, shuffle=True, rng=5, breaks=100, prob=0.9)
    assert sorted(cs.order.values.tolist()) == list(range(200)) and cs.shuffled
    assert (cs.ci.task.values == bench.task.values[cs.order.values]).all()
    by_hand = confidence_sequence(bench.isel(task=cs.order.values), breaks=100, prob=0.9, n_population=200)
    np.testing.assert_array_equal(cs.ci.values[:, :-1], by_hand.ci.values[:, :-1])
    # audit D 3: after the last task every task is in, and the set is the benchmark mean itself
    np.testing.assert_allclose(cs.ci.values[:, -1], np.c_[truth, truth], rtol=0, atol=1e-12)
    assert "in a random order drawn by shuffle=True" in repr(cs)
    again = confidence_sequence(bench, shuffle=True, rng=5, breaks=100, prob=0.9)
    np.testing.assert_array_equal(again.order.values, cs.order.values)
    with pytest.raises(ValueError, match=r"`rng` draws the random task order of shuffle=True; got rng=5"):
        confidence_sequence(bench, rng=5)
    with pytest.raises(TypeError, match=r"`shuffle` must be True or False; got 'yes'"):
        confidence_sequence(bench, shuffle="yes")
    # 150 random orders x 4 agents: ever-miss of the benchmark mean over the whole path
    miss = []
    for seed in range(150):
        c = confidence_sequence(bench, shuffle=True, rng=seed, breaks=100, prob=0.9)
        lo, hi = c.ci.values[..., 0], c.ci.values[..., 1]
        miss.append(((lo > truth[:, None] + 1e-12) | (hi < truth[:, None] - 1e-12) | np.isnan(lo)).any(-1))
    rate = np.mean(miss)
    assert rate <= 0.1 + 3 * np.sqrt(0.1 * 0.9 / 600), rate  # streams of one order share it: 600 is generous
