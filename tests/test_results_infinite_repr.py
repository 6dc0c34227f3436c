"""A result's repr prints an infinite estimate or bound as inf, not nan (audit S, finding 3).

An agent that succeeded on every run has an infinite time horizon (longer than any task): by
definition, whatever the estimator. The repr printed it "nan [nan, nan]", which reads as no
estimate; NaN still prints nan.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from hierbench._base._results import _fmt
from hierbench.freq import time_horizon


def test_fmt_keeps_nan_for_nan_and_writes_infinities():
    assert [_fmt(np.nan), _fmt(np.inf), _fmt(-np.inf), _fmt(0.5, floor=1.0), _fmt(12345.6)] == [
        "nan", "inf", "-inf", "<1", "1.235e+04"]  # fmt: skip
    assert _fmt(np.inf, floor=1e-3) == "inf"


def test_an_agent_that_passed_every_run_prints_an_infinite_horizon():
    rng = np.random.default_rng(0)
    s = (rng.random((2, 8, 2)) < 0.5) * 1.0
    s[0] = 1.0  # agent "all" succeeded on every run
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)},
                    coords={"agent": ["all", "some"], "task": [f"t{i}" for i in range(8)],
                            "human_minutes": ("task", 2.0 ** np.arange(8)),
                            "cluster": ("task", [f"f{i // 2}" for i in range(8)])})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = time_horizon(ds, n_resamples=20, rng=0)
    lines = repr(r).splitlines()
    assert "  all, 0.5: inf [inf, inf]" in lines and "  all, 0.8: inf [inf, inf]" in lines
    assert "nan" not in repr(r)
