"""bootstrap_ci's pass^k states its k and counts the tasks short of k runs apart (``n_insufficient``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import bootstrap_ci
from hierbench.freq import pass_hat_k

nan = np.nan


def _ds() -> xr.Dataset:
    """3 agents x 5 tasks x 8 runs; runs cut by hand (NaN) so that, per agent, tasks are not run or short of 8."""
    y = np.ones((3, 5, 8))
    y[0, 0, 3:] = nan  # A: t0 has 3 runs (short), t1 not run, t2-t4 full
    y[0, 1, :] = nan
    y[0, 4, ::2] = 0.0
    y[1, 2, 5:] = nan  # B: t2 has 5 runs (short), t3 has 7 (short), others full
    y[1, 3, 7:] = nan
    y[2, :2, :] = nan  # C: t0, t1 not run, the rest full
    return xr.Dataset({"score": (("agent", "task", "run"), y)}, coords={"agent": ["A", "B", "C"]})


def test_pass_hat_k_bootstrap_states_k_and_counts_short_tasks_apart():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bootstrap_ci(_ds(), "pass_hat_k", k=8, n_resamples=199, rng=0)
        unb = pass_hat_k(_ds(), 8)
    # by hand: short of 8 runs A 1 (t0), B 2 (t2, t3), C 0; not run A 1, B 0, C 2
    assert res.n_insufficient.values.tolist() == [1, 2, 0]
    assert res.n_excluded.values.tolist() == [1 + 1, 2 + 0, 0 + 2]
    assert res.n_tasks.values.tolist() == [3, 3, 3]
    np.testing.assert_array_equal(res.n_insufficient.values, unb.n_insufficient.values)  # the same count
    assert res.attrs["k"] == 8 and res.estimate.attrs["k"] == 8
    assert "n_insufficient" in res.to_frame().columns


def test_pairs_count_the_tasks_both_ran_where_one_is_short():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bootstrap_ci(_ds(), "pass_at_k", k=8, pairs=[("A", "B"), ("B", "C")], n_resamples=199, rng=0)
    # A - B: both ran t0 (A short), t2 (B short), t3 (B short), t4; t1 A never ran -> 3 short, 1 used
    # B - C: both ran t2 (B short), t3 (B short), t4 -> 2 short, 1 used, t0 and t1 C never ran
    assert res.n_insufficient.values.tolist() == [3, 2]
    assert res.n_tasks.values.tolist() == [1, 1]
    assert res.n_excluded.values.tolist() == [4, 4]
    assert res.attrs["k"] == 8


def test_the_mean_has_no_k_and_no_short_count():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = bootstrap_ci(_ds(), n_resamples=199, rng=0)
    assert res.n_insufficient is None and "k" not in res.attrs
    with pytest.warns(UserWarning, match=r"counted in `n_insufficient`"):
        bootstrap_ci(_ds(), "pass_hat_k", k=4, n_resamples=99, rng=0)
