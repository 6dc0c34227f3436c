"""The variance section when data are given but their design does not allow the G-study (audit F6).

Each task run by one agent only (bottles nested in treatments): the section said "needs a crossed fit
or data (G-theory not computed: DesignError ...)", although the data were given. It now says the data
were given and the design refused, in the refusal's own words (those of
hierbench.freq.variance_components itself).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench import freq
from hierbench.report import Report
from hierbench.report._context import _Context
from hierbench.report._context import _Skip


def test_data_given_and_a_design_without_a_g_study_is_said_so():
    from hierbench.report._variance import _sec_variance

    y = np.full((2, 4, 2), np.nan)
    y[0, :2], y[1, 2:] = [[1, 0], [1, 1]], [[0, 0], [1, 0]]  # tasks t0, t1 run by a only; t2, t3 by b only
    data = xr.Dataset({"score": (("agent", "task", "run"), y)}, coords={"agent": ["a", "b"], "task": ["t0", "t1", "t2", "t3"]})
    with warnings.catch_warnings(), pytest.raises(ValueError) as refused:
        warnings.simplefilter("ignore")
        freq.variance_components(data)
    whole = f"{type(refused.value).__name__}: {str(refused.value).strip().rstrip('.')}"
    ctx = _Context(fit=None, data=data, prob=0.95, rng=0, n_resamples=99, truth=None, freq="auto")
    with warnings.catch_warnings(), pytest.raises(_Skip) as skipped:
        warnings.simplefilter("ignore")
        _sec_variance(ctx, Report("t"), "variance")
    said = str(skipped.value)
    assert said == f"data given, but the design does not allow the G-study, and no crossed fit was given (G-theory not computed: {whole})"
    assert "needs a crossed fit or data" not in said
