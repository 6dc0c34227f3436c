"""Confidence sequences for a finite benchmark drawn without replacement (Waudby-Smith and Ramdas 2020).

References: a plain loop over candidate means and times written from the definitions (the
capital bets against the mean of the values not yet drawn), and exact enumeration of every
order of a small population for the time-uniform coverage.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import confidence_sequence


def _wor_loop(x, N, alpha=0.1, breaks=20, theta=0.5, c=0.5):
    """Membership of each grid mean at each time, by plain loops; the i.i.d. plug-in bets."""
    grid = [i / breaks for i in range(breaks + 1)]
    lam, s2_prev, s_sum, sq_sum = [], 0.25, 0.0, 0.0
    for t in range(1, len(x) + 1):
        lam.append(math.sqrt(2 * math.log(1 / (alpha * theta)) / (s2_prev * t * math.log(1 + t))))
        s_sum += x[t - 1]
        mu_t = min((0.5 + s_sum) / (t + 1), 1.0)
        sq_sum += (x[t - 1] - mu_t) ** 2
        s2_prev = (0.25 + sq_sum) / (t + 1)
    out = []
    for g in grid:
        kp = kn = 1.0
        seen, dead, row = 0.0, False, []
        for t in range(1, len(x) + 1):
            m = (N * g - seen) / (N - t + 1)  # mean of the N - t + 1 values not yet drawn, if g is the truth
            dead = dead or not (-1e-9 <= m <= 1 + 1e-9)
            m = min(max(m, 0.0), 1.0)
            lp = min(lam[t - 1], c / m) if m > 0 else lam[t - 1]
            ln = min(lam[t - 1], c / (1 - m)) if m < 1 else lam[t - 1]
            kp *= 1 + lp * (x[t - 1] - m)
            kn *= 1 - ln * (x[t - 1] - m)
            seen += x[t - 1]
            dead = dead or not (seen - 1e-9 <= N * g <= seen + (N - t) + 1e-9)  # the mean's range given what was seen
            row.append(not dead and max(theta * kp, (1 - theta) * kn) <= 1 / alpha)
        out.append(row)
    return np.array(out)  # (grid, time)


def _bounds_of(member, breaks):
    """Grid membership (grid, time) as the widened bounds the function reports (no running intersection)."""
    grid = np.arange(breaks + 1) / breaks
    lo = [max(0.0, grid[c].min() - 1 / breaks) if c.any() else 0.0 for c in member.T]
    hi = [min(1.0, grid[c].max() + 1 / breaks) if c.any() else 1.0 for c in member.T]
    return np.c_[lo, hi]


def test_matches_a_plain_loop_from_the_definitions():
    x = np.random.default_rng(11).beta(0.8, 0.6, 30)
    cs = confidence_sequence(xr.DataArray(x, dims="task"), prob=0.9, breaks=20, running_intersection=False,
                             n_population=40)
    np.testing.assert_allclose(cs.ci.values, _bounds_of(_wor_loop(list(x), 40), 20), atol=1e-12)
    assert cs.n_population == 40 and cs.ci.attrs["n_population"] == 40
    assert "without replacement from 40" in cs.ci.attrs["ci_detail"] and "without replacement from 40" in repr(cs)


def test_every_order_of_a_small_benchmark_covers_at_the_level():
    # all 7! = 5040 orders of 7 task rates: the share of orders whose running set ever excludes the
    # benchmark mean is at most alpha (exact enumeration, no Monte Carlo); alpha 0.3 for some teeth
    pop = np.array([0.0, 0.0, 1.0, 1.0, 1.0, 0.5, 0.25])
    orders = np.array(list(itertools.permutations(range(7))))
    x = xr.DataArray(pop[orders], dims=("order", "task"))
    cs = confidence_sequence(x, prob=0.7, breaks=56, n_population=7)
    mean = pop.mean()
    lo, hi = cs.ci.values[..., 0], cs.ci.values[..., 1]
    miss = ((lo > mean + 1e-12) | (hi < mean - 1e-12) | np.isnan(lo)).any(-1)
    assert miss.mean() <= 0.3, miss.mean()


def test_sets_close_in_on_the_benchmark_mean_where_the_iid_ones_do_not():
    g = np.random.default_rng(4)
    bench = xr.DataArray((g.random((3, 300)) < np.array([[0.2], [0.5], [0.8]])).astype(float), dims=("agent", "task"))
    wor = confidence_sequence(bench, shuffle=True, rng=9, prob=0.9)
    iid = confidence_sequence(bench, shuffle=True, rng=9, prob=0.9, n_population="infinite")
    width = lambda c, t: np.diff(c.ci.isel(task=t).values, axis=-1)[:, 0]  # noqa: E731
    assert (width(wor, 149) <= width(iid, 149) + 1e-12).all()  # halfway: never wider
    assert (width(wor, 289) < 0.5 * width(iid, 289)).all()  # 10 tasks left: far narrower
    mean = bench.mean("task").values
    lo, hi = wor.ci.isel(task=289).values.T
    assert ((lo <= mean) & (mean <= hi)).all()
    np.testing.assert_allclose(wor.ci.isel(task=-1).values, np.c_[mean, mean], atol=1e-12)  # the census
    with pytest.raises(ValueError, match=r"`n_population` must be 'infinite' or an integer at least the number of "
                                         r"tasks in `x` \(300\).*got 299"):
        confidence_sequence(bench, n_population=299)
