"""The zero-width warning of compare_agents names the intervals it reports (audit Q, finding 9).

The expected pairs come from the shapes built here: an agent at 100% against one at 0% differs by
+1 on every task, so no resample can differ and its standard error is 0.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hierbench._base import ZeroWidthIntervalWarning
from hierbench.freq import compare_agents


def _log(rows: dict[str, list[float]], runs: int = 3) -> xr.Dataset:
    """Agents x tasks of per-task scores, each repeated over ``runs`` runs."""
    s = np.repeat(np.array(list(rows.values()), float)[..., None], runs, axis=-1)
    return xr.Dataset({"score": (("agent", "task", "run"), s)},
                      coords={"agent": list(rows), "task": [f"t{i}" for i in range(s.shape[1])]})  # fmt: skip


def test_zero_width_warning_names_the_interval_computed_and_the_simultaneous_one():
    """A at 100%, C at 0% (+1 on every task). The warning said "95% percentile" beside paired t
    intervals, and was silent on a simultaneous interval [1, 1].
    """
    with pytest.warns(ZeroWidthIntervalWarning) as rec:
        cmp = compare_agents(_log({"A": [1] * 5, "B": [0] * 5}), rng=0)
    msgs = [str(w.message) for w in rec if w.category is ZeroWidthIntervalWarning]
    assert cmp.ci.attrs["ci_kind"] == "t"
    assert len(msgs) == 1 and msgs[0].startswith("every 95% t interval here has zero width: A - B")
    g = np.random.default_rng(0)
    rows = {"A": [1.0] * 30, "B": (g.random(30) < 0.5).astype(float), "C": [0.0] * 30}
    with pytest.warns(ZeroWidthIntervalWarning) as rec:
        cmp = compare_agents(_log(rows, runs=1), n_resamples=199, rng=0)
    msgs = [str(w.message) for w in rec if w.category is ZeroWidthIntervalWarning]
    assert cmp.attrs["adjust"] == "maxt" and cmp.ci_simultaneous.sel(agent="A", opponent="C").values.tolist() == [1, 1]
    assert any(m.startswith("the 95% t interval has zero width for 1 of 3 pairs: A - C") for m in msgs)
    assert any(m.startswith("the 95% max-t simultaneous interval has zero width for 1 of 3 pairs: A - C") for m in msgs)
    assert all("B" not in m.split(":")[1] for m in msgs)  # only the pair whose difference is the same everywhere
