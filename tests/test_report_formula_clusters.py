"""A formula fit without a cluster term beside a clustered log: the remedy names the formula (audit Q, finding 4).

The fit had `--cluster task_family`, and the report told the reader to fit "with the clusters
(`--cluster` when fitting)": a formula model has a cluster effect only if its formula names one.
The term suggested, `(1|cluster)`, is checked against the log built here: the design accepts it,
with as many levels as pandas counts distinct cluster labels in the raw frame.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import xarray as xr

from hierbench.data import from_records
from hierbench.data import model_design
from hierbench.report._match import cluster_note


def _log():
    g = np.random.default_rng(0)
    rows = pd.DataFrame([{"agent": a, "task": f"t{t}", "fam": f"f{t % 4}", "run": r, "score": float(g.random() < 0.5)}
                         for a in "ABC" for t in range(16) for r in range(2)])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rows, from_records(rows, run="run", cluster="fam")


def _fit(model: str, formula: str | None = None) -> xr.DataTree:
    fit = xr.DataTree()
    fit.attrs["hierbench_model"] = model
    fit.attrs["hierbench_spec"] = json.dumps({"model": model, "options": {"formula": formula} if formula else {}})
    return fit


def test_a_formula_fit_is_told_to_add_a_cluster_term_that_the_design_accepts():
    rows, ds = _log()
    note = cluster_note(_fit("mixed", "score ~ (1|agent) + (1|task)"), ds)
    assert note.startswith(f"Clusters in one half only: the data's tasks sit in {rows['fam'].nunique()} clusters (`fam`)")
    assert "fit's formula ('score ~ (1|agent) + (1|task)') has no cluster term" in note
    assert "add a cluster term to the formula, e.g. `(1|cluster)`" in note and "`--cluster` when fitting" not in note
    # the term suggested is one the design builds on this log, by the name the log's clusters take
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        design = model_design("score ~ (1|agent) + (1|task) + (1|cluster)", ds, family="binomial")
    term = next(t for t in design.random if t.name == "1|cluster")
    assert sorted(map(str, term.levels)) == sorted(rows["fam"].unique())
    # with the term, the fit has clusters: nothing to say
    assert cluster_note(_fit("mixed", "score ~ (1|agent) + (1|task) + (1|cluster)"), ds) is None


def test_a_model_fit_without_clusters_is_still_told_to_fit_with_them():
    _, ds = _log()
    note = cluster_note(_fit("crossed"), ds)
    assert "fit's crossed model has no cluster effect" in note and "(`--cluster` when fitting)" in note
