"""A fit whose builder left the clusters out is not told to fit with them (audit C5).

METR's 3 tasks, each its own family, fitted with `--cluster task_family`: the crossed builder drops the
clusters (every task alone in its cluster), and the report said "fit with the clusters (`--cluster`
when fitting)", which gives the same fit again. The fits here carry the structure the builder itself
records (``build_crossed(...).hierbench``), so the rule is the builder's, not the report's.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import xarray as xr

from hierbench.bayes import build_crossed
from hierbench.report._match import cluster_note


def _log(clusters: list[str]) -> xr.Dataset:
    g = np.random.default_rng(1)
    n = len(clusters)
    return xr.Dataset({"score": (("agent", "task", "run"), (g.random((3, n, 2)) < 0.5).astype(float))},
                      coords={"agent": ["a", "b", "c"], "task": [f"t{i}" for i in range(n)],
                              "cluster": ("task", clusters)})  # fmt: skip


def _fit_of(data: xr.Dataset, **kw) -> xr.DataTree:
    """A fit carrying the structure the crossed builder records for ``data`` (no sampling needed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = build_crossed(data, **kw)
    fit = xr.DataTree()
    fit.attrs["hierbench_model"] = "crossed"
    fit.attrs["hierbench_spec"] = json.dumps({"model": "crossed", "options": {"clusters": False}})
    fit.attrs["hierbench_structure"] = json.dumps(model.hierbench["structure"], default=str)
    return fit


def test_clusters_the_builder_dropped_get_only_the_remedy_that_works():
    """Every one of 3 tasks alone in its cluster: the builder, asked "auto" (the CLI's --cluster), drops them."""
    data = _log(["f0", "f1", "f2"])
    fit = _fit_of(data, clusters="auto")
    decision = json.loads(fit.attrs["hierbench_structure"])["decisions"]["clusters"]
    assert decision["choice"] is False  # refitting as the CLI does leaves them out again
    note = cluster_note(fit, data)
    assert "100% of tasks are alone in their cluster" in note
    assert "`--cluster` when fitting" not in note and "fit with the clusters" not in note
    assert "read the log without them (`--cluster` left out" in note


def test_clusters_the_user_turned_off_still_get_the_refit_remedy():
    """Two clusters of 4 tasks: the design carries a cluster effect; the user turned it off, so fitting with it helps."""
    data = _log(["f0"] * 4 + ["f1"] * 4)
    fit = _fit_of(data, clusters=False)
    assert "fit with the clusters (`--cluster` when fitting)" in cluster_note(fit, data)
