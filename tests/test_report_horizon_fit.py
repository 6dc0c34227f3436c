"""A report on a horizon fit rebuilds its design (audit G, finding 8).

The report rebuilt a formula fit's design from the data with the recorded formula, which a
horizon fit writes in ``log2_minutes``, a coord ``build_horizon`` makes from the data's minutes.
The report said the data did not hold it and left out every agent-level section. Expected
values: the design ``build_horizon`` itself built (its fixed-effect matrix), and numpy's log2.
"""

from __future__ import annotations

import json
import types

import numpy as np
import xarray as xr

from hierbench.testing import simulate_eval


def _log():
    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, rng=0)
    return ds.assign_coords(human_minutes=("task", 2.0 ** np.linspace(0, 6, ds.sizes["task"])))


def test_the_report_rebuilds_a_horizon_fits_design_from_the_data():
    import hierbench.bayes as hbb
    from hierbench.report._context import _mixed_design

    ds = _log()
    info = hbb.build_horizon(ds).hierbench
    spec = {"model": info["model"], "options": info["options"], "priors": {}}
    fit = xr.DataTree()
    fit.attrs["hierbench_spec"] = json.dumps(spec, default=str)
    ctx = types.SimpleNamespace(fit=fit, data=ds, warnings=[])
    design = _mixed_design(ctx)
    assert ctx.warnings == [] and design is not None
    np.testing.assert_allclose(np.asarray(design.X), np.asarray(info["design"].X))
    np.testing.assert_allclose(design.frame["log2_minutes"].unique(), np.log2(ds["human_minutes"].values))


def test_the_fit_data_check_compares_a_horizon_fits_design_too():
    # its twin rebuild in report/_match.py lacked log2_minutes: it failed, and the check was skipped
    import hierbench.bayes as hbb
    from hierbench.report._match import _formula_diff

    ds = _log()
    info = hbb.build_horizon(ds).hierbench
    fit = xr.DataTree()
    fit.attrs["hierbench_spec"] = json.dumps({"model": info["model"], "options": info["options"]}, default=str)
    want = info["design"].fingerprint()  # the builder's own design of this log
    assert _formula_diff(fit, ds, want) == (True, [], None)
    other = ds.assign(score=1.0 - ds["score"])
    same, why, unbuilt = _formula_diff(fit, other, want)
    assert not same and "is not the fit's" in why[0] and unbuilt is None
