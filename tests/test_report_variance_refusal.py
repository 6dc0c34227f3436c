"""The report keeps G-theory's refusal whole, remedy included (audit C6).

METR's 3 tasks, each its own family: the report printed "G-theory not computed: DesignError: ... (0 of 3
levels of 'cluste." (the message cut at 200 characters, mid-word, no mark), losing the remedy that
follows it. The expected text is the refusal of hierbench.freq.variance_components itself.
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


def test_the_refusal_is_shown_whole_with_the_cli_remedy():
    from hierbench.report._variance import _sec_variance

    g = np.random.default_rng(0)
    data = xr.Dataset({"score": (("agent", "task", "run"), (g.random((4, 3, 3)) < 0.5).astype(float))},
                      coords={"agent": list("abcd"), "task": ["t0", "t1", "t2"], "cluster": ("task", ["f0", "f1", "f2"])})  # fmt: skip
    with pytest.raises(ValueError) as refused:
        freq.variance_components(data)
    whole = str(refused.value)
    assert len(whole) > 200 and "drop the `cluster` coord" in whole  # the remedy lies past the old cut
    ctx = _Context(fit=None, data=data, prob=0.95, rng=0, n_resamples=99, truth=None, freq="auto")
    with warnings.catch_warnings(), pytest.raises(_Skip) as skipped:
        warnings.simplefilter("ignore")
        _sec_variance(ctx, Report("t"), "variance")
    said = str(skipped.value)
    assert f"{type(refused.value).__name__}: {whole.rstrip('.')}" in said
    assert said.endswith("(in the CLI: read the log without --cluster))")
