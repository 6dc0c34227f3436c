"""``rank_uncertainty(method="simultaneous")``: marginal rank sets from simultaneous max-|t| intervals."""

import math
import statistics
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import rank_uncertainty


def _data(y: np.ndarray) -> xr.DataArray:
    M, T = y.shape
    return xr.DataArray(
        y, dims=("agent", "task"), coords={"agent": [f"a{i}" for i in range(M)], "task": np.arange(T)}
    )


def _by_hand_sets(s: np.ndarray, obs: np.ndarray, prob: float) -> list[tuple[int, int]]:
    """Rank sets by plain loops: stdev of each difference, the ceil(prob B)-th largest max |t|."""
    B, M = s.shape
    sets = []
    for j in range(M):
        ks = [k for k in range(M) if k != j]
        d_hat = {k: obs[j] - obs[k] for k in ks}
        se = {k: statistics.stdev([s[b, j] - s[b, k] for b in range(B)]) for k in ks}
        tmax = sorted(max(abs(s[b, j] - s[b, k] - d_hat[k]) / se[k] for k in ks) for b in range(B))
        c = tmax[math.ceil(prob * B) - 1]
        better = sum(d_hat[k] + c * se[k] < 0 for k in ks)
        worse = sum(d_hat[k] - c * se[k] > 0 for k in ks)
        sets.append((1 + better, M - worse))
    return sets


def test_rank_sets_match_a_by_hand_max_t_on_the_results_own_resamples():
    """The sets equal a loop-by-loop max-|t| computation on the resampled scores the result returns.

    Five agents on 40 binary tasks with success rates 0.2 to 0.8 (two of them
    equal), 200 resamples: the expected sets come from ``statistics.stdev`` and
    the order statistic of the largest |t|, not from the package's code.
    """
    gen = np.random.default_rng(3)
    p = np.array([0.8, 0.6, 0.6, 0.4, 0.2])
    y = (gen.random((5, 40)) < p[:, None]).astype(float)
    r = rank_uncertainty(_data(y), n_resamples=200, rng=5, method="simultaneous")
    want = _by_hand_sets(r.distribution.values, r.score.values, 0.95)
    got = list(zip(r.rank_ci.sel(ci_bound="lower").values.tolist(),
                   r.rank_ci.sel(ci_bound="upper").values.tolist(), strict=True))
    assert got == [(float(a), float(b)) for a, b in want]
    # same resamples for both methods: the percentile run draws the same scores
    pct = rank_uncertainty(_data(y), n_resamples=200, rng=5)
    np.testing.assert_array_equal(pct.distribution.values, r.distribution.values)


def test_tied_agents_share_their_ranks_and_a_separated_agent_is_pinned():
    """Exact case by hand: a0 and a1 identical (12 of 16 tasks solved), a2 solves none.

    a0 - a1 is 0 in every resample (no spread: never "surely" either way), so
    a0 and a1 may hold rank 1 or 2. a0 - a2 has per-task differences 1 (12)
    and 0 (4): estimate 0.75, bootstrap SE sqrt(0.75 x 0.25 / 16) = 0.108, so
    its interval reaches 0 only if the 95% quantile of |t| reaches 0.75 / 0.108
    = 6.9, i.e. if at least 5% of resamples drew no solved task (probability
    0.25^16 each). Hence a2 is surely worse than both: sets [1, 2], [1, 2], [3, 3].
    """
    y = np.zeros((3, 16))
    y[0, :12] = 1
    y[1, :12] = 1
    r = rank_uncertainty(_data(y), n_resamples=200, rng=0, method="simultaneous")
    assert r.rank_ci.values.tolist() == [[1, 2], [1, 2], [3, 3]]


def test_constant_difference_without_spread_is_decided_by_its_sign():
    """a0 solves every task, a1 none: the difference is 1 in every resample (no spread), so a0 is surely better."""
    y = np.vstack([np.ones(10), np.zeros(10)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # whatever it says about degenerate data
        r = rank_uncertainty(_data(y), n_resamples=50, rng=0, method="simultaneous")
    assert r.rank_ci.values.tolist() == [[1, 1], [2, 2]]


def test_attrs_and_repr_state_level_kind_and_what_each_method_promises():
    """The kind and level are in ci attrs and the repr; percentile says it is not guaranteed near ties."""
    gen = np.random.default_rng(1)
    y = (gen.random((4, 30)) < 0.5).astype(float)
    sim = rank_uncertainty(_data(y), n_resamples=100, rng=0, method="simultaneous")
    pct = rank_uncertainty(_data(y), n_resamples=100, rng=0)
    assert sim.rank_ci.attrs["ci_kind"] == "max-t" and sim.rank_ci.attrs["ci_prob"] == 0.95
    assert "marginal" in sim.rank_ci.attrs["ci_detail"] and "whatever the ties" in sim.rank_ci.attrs["ci_detail"]
    head = repr(sim).splitlines()
    assert "95% max-t rank set" in head[0] and "whatever the ties" in head[1]
    assert pct.rank_ci.attrs["ci_kind"] == "percentile"
    assert "not guaranteed near ties" in pct.rank_ci.attrs["ci_detail"]
    assert "not guaranteed near ties" in repr(pct).splitlines()[1]
    assert sim.attrs["method"] == "simultaneous" and pct.attrs["method"] == "percentile"


def test_missing_cells_give_sets_that_hold_the_observed_rank():
    """With a missing cell the sets stay inside [1, M] and hold each agent's observed rank (mid-rank)."""
    gen = np.random.default_rng(2)
    y = (gen.random((4, 25)) < np.array([0.9, 0.6, 0.5, 0.1])[:, None]).astype(float)
    y[2, 3] = np.nan
    r = rank_uncertainty(_data(y), n_resamples=150, rng=0, method="simultaneous")
    lo, hi = r.rank_ci.sel(ci_bound="lower").values, r.rank_ci.sel(ci_bound="upper").values
    assert (lo >= 1).all() and (hi <= 4).all()
    assert ((lo <= r.observed_rank.values) & (r.observed_rank.values <= hi)).all()


def test_unknown_method_is_refused_by_name():
    """A method outside the two is refused, naming the argument and the value."""
    with pytest.raises(ValueError, match=r"`method` must be one of \['percentile', 'simultaneous'\]; got 'bca'"):
        rank_uncertainty(_data(np.eye(3)), n_resamples=10, method="bca")
