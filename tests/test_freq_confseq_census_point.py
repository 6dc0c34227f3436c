"""confidence_sequence with shuffle=True: the census set is the benchmark mean; a miss on the path is said.

Audit D 3: over every task of SWE-bench bash-only, Kimi K2 Instruct's 90% sequence in the random
order of seed 53 ended at [0.328, 0.411], excluding the 500-task mean 0.438 it had just computed.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench._base import HierbenchWarning
from hierbench.freq import confidence_sequence


def test_census_set_is_the_mean_and_a_path_miss_is_warned(shared_data):
    from hierbench.data import load_swebench_bash_only

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the loader's note on a flagged agent
        ds = load_swebench_bash_only()
    y = ds.score.isel(run=0).sel(agent="Kimi K2 Instruct").values
    x = xr.DataArray(y[~np.isnan(y)], dims="task")
    assert x.size == 500 and int((x.values == 1).sum()) == 219  # 219 of 500 resolved: mean 0.438
    with pytest.warns(HierbenchWarning, match=r"missed on its path .*mean 0.438 first outside after task \d+ of 500"):
        cs = confidence_sequence(x, prob=0.9, shuffle=True, rng=53)
    np.testing.assert_allclose(cs.ci.isel(task=-1).values, [0.438, 0.438], atol=1e-12)
    assert "0.438 [0.438, 0.438]" in repr(cs)
    # without replacement (the default with shuffle=True) the sets close in on the benchmark mean, so
    # a path that excluded it empties before the census (said, and NaN); the i.i.d. sequence of the
    # same order kept the audit's [0.328, 0.411] to the end, beside a final mean of 0.438
    assert np.isnan(cs.ci.isel(task=-2).values).all()
    iid = confidence_sequence(x, prob=0.9, shuffle=True, rng=53, n_population="infinite")
    assert tuple(iid.ci.isel(task=-2).values) == pytest.approx((0.328, 0.411), abs=1e-9)
    assert iid.n_population is None and "without replacement" not in iid.ci.attrs["ci_detail"]


def test_census_point_for_a_paired_difference_and_no_warning_without_a_miss():
    """A small benchmark (a by-hand mean), paired: the last set is mean(x - y); no path miss, no warning."""
    g = np.random.default_rng(3)
    x = xr.DataArray((g.random(60) < 0.7).astype(float), dims="task")
    y = xr.DataArray((g.random(60) < 0.4).astype(float), dims="task")
    d = float(np.sum(x.values - y.values)) / 60
    with warnings.catch_warnings():
        warnings.simplefilter("error", HierbenchWarning)
        cs = confidence_sequence(x, y, prob=0.9, shuffle=True, rng=0)
    lo, hi = cs.ci.isel(task=-2).values
    assert lo < d < hi  # no miss on this path: no warning (raised as an error above)
    np.testing.assert_allclose(cs.ci.isel(task=-1).values, [d, d], atol=1e-12)
    assert "set there is its mean" in cs.ci.attrs["ci_detail"]
    # in the data's order the last set stays the betting set (the stream may be a sample of a larger pool)
    plain = confidence_sequence(x, y, prob=0.9)
    assert plain.ci.isel(task=-1).values[1] - plain.ci.isel(task=-1).values[0] > 0.1
