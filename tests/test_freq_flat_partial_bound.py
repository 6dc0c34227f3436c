"""One value strictly inside (0, 1) on every task: the bound, not a zero-width t interval (audit s75 A, finding 3).

An agent passing 1 of 2 runs on every task has per-task values all 0.5: their SD is 0, so the
logit t interval was ``[0.5, 0.5]`` (flag "zero width"), and the bootstrap's warning blamed "an
agent at 0, or 1, on every task" while pointing to ``pass_hat_k(data, 1)`` for "a bound that
holds". ``pass_hat_k`` and ``success_rate`` now give there the distribution-free bound they give at
0 and 1 (``ci_kind`` "bounded-mean"), and the warning names the value.

Expected values are independent of the code: the bound for the mean of ``n`` independent values in
[0, 1] (Hoeffding 1963: their sum is below Binomial(n, p) in the convex order, and Markov's
inequality on ``(m - S)_+`` bounds ``P(S <= s)`` by ``E[(m - B)_+] / (m - s)``) is recomputed here
with scipy's binomial and ``brentq`` (the minimum over real ``m > s`` is at an integer, the ratio
being monotone between the kinks of ``E[(m - B)_+]``), and worked by hand for 2 values; it is
checked to lie between Clopper-Pearson's interval over the tasks (exact for 0/1 values, which it
must contain) and Hoeffding's ``mean +- sqrt(log(2 / alpha) / (2 n))``; its coverage is checked by
exact binomial enumeration, and the repair by a seeded simulation.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr
from scipy import optimize
from scipy import stats

from hierbench._base import ZeroWidthIntervalWarning
from hierbench.freq import DegenerateBootstrapWarning
from hierbench.freq import bootstrap_ci
from hierbench.freq import pass_hat_k
from hierbench.freq import success_rate

SAME = "bound: every task has the same value (no spread to measure)"
SAME_CLUSTERS = "bound: every cluster has the same mean (no spread to measure)"


def _upper(s: float, n: int, a2: float = 0.025) -> float:
    """The convex-order upper bound for the mean of n values in [0, 1] summing to s (scipy, by brentq)."""
    j = np.arange(n + 1)

    def excess(p: float) -> float:  # min over integer m > s of E[(m - B)_+] / (m - s), less a2
        pmf = stats.binom.pmf(j, n, p)
        return min(float(np.sum(np.maximum(m - j, 0) * pmf)) / (m - s) for m in range(1, n + 1) if m > s) - a2

    return optimize.brentq(excess, s / n, 1.0 - 1e-15, xtol=1e-13)


def _counts(succ: np.ndarray, runs: int, codes=None) -> xr.Dataset:
    succ = np.atleast_2d(succ)
    ds = xr.Dataset(
        {"n_runs": (("agent", "task"), np.full(succ.shape, runs)), "n_success": (("agent", "task"), succ)},
        coords={"agent": [f"a{i}" for i in range(succ.shape[0])], "task": [f"t{i}" for i in range(succ.shape[1])]},
    )
    return ds if codes is None else ds.assign_coords(cluster=("task", list(codes)))


def _scores(y: np.ndarray, codes=None) -> xr.Dataset:
    """An eval dataset of scores ``y`` (agent, task, run)."""
    A, T, R = y.shape
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), y.astype(float))},
        coords={"agent": [f"a{i}" for i in range(A)], "task": [f"t{i}" for i in range(T)], "run": np.arange(R)},
    )
    return ds if codes is None else ds.assign_coords(cluster=("task", list(codes)))


def test_half_on_every_task_gets_the_bound_between_clopper_pearson_and_hoeffding():
    """12 tasks, 1 of 2 runs passing on each: [1 - U(6), U(6)] with U by scipy; inside Hoeffding's [0.108, 0.892]."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroWidthIntervalWarning)  # no zero-width interval any more
        res = pass_hat_k(_counts(np.ones(12), 2), 1)
        rate = success_rate(_scores(np.tile([1.0, 0.0], (1, 12, 1))))
    up = _upper(6.0, 12)
    np.testing.assert_allclose(res.ci.values.ravel(), [1 - up, up], atol=1e-9)
    assert res.ci_flag.item() == SAME and res.to_frame()["ci_kind"].tolist() == ["bounded-mean"]
    assert res.ci.attrs["ci_kind"] == "bounded-mean"
    half = np.sqrt(np.log(2 / 0.05) / (2 * 12))  # Hoeffding: [0.108, 0.892]
    cp = stats.beta.ppf([0.025, 0.975], [6, 7], [7, 6])  # Clopper-Pearson over the 12 tasks: [0.211, 0.789]
    assert 0.5 - half < 1 - up < cp[0] and cp[1] < up < 0.5 + half
    # success_rate on the same runs: the same interval, flag and kind
    np.testing.assert_allclose(rate.ci.values, [[1 - up, up]], atol=1e-9)
    assert rate.ci_flag.values.tolist() == [SAME] and rate.to_frame()["ci_kind"].tolist() == ["bounded-mean"]


def test_a_rounding_residue_of_the_sd_is_no_spread():
    """Twelve tasks at 1 of 10: their SD came out 4e-18, not 0, and the t interval [0.1, 0.1] went unflagged."""
    res = pass_hat_k(_counts(np.ones(12), 10), 1)
    assert res.ci_flag.item() == SAME and res.standard_error.item() == 0.0
    up, low = _upper(1.2, 12), 1 - _upper(12 - 1.2, 12)
    np.testing.assert_allclose(res.ci.values.ravel(), [low, up], atol=1e-9)


def test_partial_credit_and_a_grid_of_values_are_never_zero_width():
    """success_rate on one partial score per task, and pass_hat_k at every c of 5 runs: the bound, positive width."""
    res = success_rate(_scores(np.full((3, 8, 1), [[[0.3]], [[0.5]], [[0.9]]])))
    for row, v in zip(res.ci.values, (0.3, 0.5, 0.9), strict=True):
        np.testing.assert_allclose(row, [1 - _upper(8 * (1 - v), 8), _upper(8 * v, 8)], atol=1e-9)
    assert res.ci_flag.values.tolist() == [SAME] * 3
    grid = pass_hat_k(_counts(np.repeat(np.arange(1, 5)[:, None], 6, axis=1), 5), [1, 2])
    assert (grid.ci.sel(ci_bound="upper") > grid.ci.sel(ci_bound="lower")).all()
    assert grid.ci_flag.sel(k=1).values.tolist() == [SAME] * 4  # pass^2 of 1 of 5 is 0: the exact bound there
    assert set(grid.ci_flag.sel(k=2).values.tolist()) == {"exact bound", SAME}


def test_clusters_with_one_mean_get_the_bound_over_the_clusters():
    """2 clusters of tasks [1, 0] and [0, 1]: cluster means both 1/2, so by hand the bound over 2 values.

    For 2 values summing to 1, only m = 2 exceeds s: E[(2 - B)_+] = 2 (1 - p)^2 + 2 p (1 - p) = 2 (1 - p),
    which reaches 0.025 at p = 0.9875: the interval is [0.0125, 0.9875].
    """
    y = np.array([1.0, 0.0, 0.0, 1.0])[None, :, None]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ZeroWidthIntervalWarning)
        res = success_rate(_scores(y, [0, 0, 1, 1]))
    assert res.ci_flag.values.tolist() == [SAME_CLUSTERS] and res.ci_kind.values.tolist() == ["bounded-mean"]
    np.testing.assert_allclose(res.ci.values, [[0.0125, 0.9875]], atol=1e-9)
    # every task one value with clusters: the tasks' flag, and the bound over the 3 equal clusters (sums 1 of 2)
    same = pass_hat_k(_counts(np.ones(6), 2, [0, 0, 1, 1, 2, 2]), 1)
    assert same.ci_flag.item() == SAME
    np.testing.assert_allclose(same.ci.values.ravel(), [1 - _upper(1.5, 3), _upper(1.5, 3)], atol=1e-9)


def test_the_bound_covers_by_exact_enumeration():
    """0/1 per-task values (the extreme of the convex order): the 95% bound over 12 tasks covers >= 0.95 at every p."""
    from hierbench._numerics import bounded_mean_bounds

    s = np.arange(13.0)
    lo, hi = bounded_mean_bounds(s, np.full(13, 12), 0.95)
    p = np.linspace(0.001, 0.999, 999)
    pmf = stats.binom.pmf(s[None, :], 12, p[:, None])
    cover = (pmf * ((lo[None, :] <= p[:, None]) & (p[:, None] <= hi[None, :]))).sum(1)
    assert cover.min() >= 0.95
    np.testing.assert_allclose(hi[6], _upper(6.0, 12), atol=1e-9)


def test_seeded_simulation_the_flat_cells_are_covered():
    """Per-task score 0.5 w.p. 0.8, else 1, one run, 8 tasks (mean 0.6): 2,000 data sets (seed 7).

    About 0.8^8 = 17% of them score 0.5 on every task. The old [0.5, 0.5] missed the mean 0.6 in
    every one; the bound over 8 tasks at 0.5 ([0.151, 0.849]) holds it in every one.
    Overall coverage must be at least 0.95 less 3 Monte Carlo SEs (sqrt(0.95 x 0.05 / 2000) = 0.0049).
    """
    y = np.where(np.random.default_rng(7).random((2000, 8)) < 0.8, 0.5, 1.0)
    res = success_rate(_scores(y[:, :, None]), tag=None)
    lo, hi = (res.ci.sel(ci_bound=b).values for b in ("lower", "upper"))
    flat = (y == 0.5).all(1)
    assert 250 < flat.sum() < 430  # binomial(2000, 0.168): mean 336, sd 17
    assert (res.ci_flag.values[flat] == SAME).all() and ((lo <= 0.6) & (0.6 <= hi))[flat].all()
    assert ((lo <= 0.6) & (0.6 <= hi)).mean() >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / 2000)


def _bca_warning(ds) -> str:
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        bootstrap_ci(ds, method="bca", n_resamples=199, rng=0)
    said = [str(w.message) for w in got if issubclass(w.category, DegenerateBootstrapWarning)]
    assert len(said) == 1
    return said[0]


def test_the_bca_warning_names_the_one_value_not_an_agent_at_0_or_1():
    """Agents at 0.5 and 0.25 on every task (2 and 4 runs), one varying: the warning names 0.25 and 0.5."""
    y = np.full((3, 6, 4), np.nan)
    y[0, :, :2] = [1.0, 0.0]
    y[1] = [1.0, 0.0, 0.0, 0.0]
    y[2] = np.random.default_rng(2).integers(0, 2, (6, 4))
    said = _bca_warning(_scores(y))
    assert "2 of them: every resample equals the estimate (every task, or cluster, has one value strictly " \
           "between 0 and 1 (0.25, 0.5)" in said
    assert "an agent at 0, or 1" not in said and "pass_hat_k(data, 1) gives a bound that holds" in said
    # an agent at 0 beside one at 0.5: both causes said, each with its count
    y[1] = 0.0
    said = _bca_warning(_scores(y))
    assert "0 or 1 for 1 of them (an agent at 0, or 1, on every task), and strictly between 0 and 1 for 1 (0.5)" in said


def test_bca_counts_add_up_over_blocks():
    """The engine sums the blocks' counts from 0: the counts add and the flat values are kept, by hand."""
    from hierbench.freq._kernels import BcaCounts

    total = 0 + BcaCounts([2, 1, 0], [0.5]) + BcaCounts([1, 1, 1], [0.25])
    assert total.counts.tolist() == [3, 2, 1] and total.flat_values.tolist() == [0.5, 0.25]
