"""``hierbench fit`` prints what a formula fit estimated after its diagnostics (audit F, F1).

The lines are hierbench.metrics.average_marginal_effects of the fit and the posterior's own sds
(numpy), here of a posterior drawn at random (no sampler) on a tiny simulated log.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from hierbench import metrics
from hierbench.cli import build_parser
from hierbench.cli._fit import _print_effects
from hierbench.data import model_design
from hierbench.testing import simulate_eval


def _fit_and_design():
    data, _ = simulate_eval(4, 12, 3, rng=0)
    data = data.assign_coords(scaffold=("agent", ["s1", "s1", "s2", "s2"]), hard=("task", np.tile([0.0, 1.0], 6)))
    d = model_design("score ~ scaffold + hard + (1|agent) + (1|task)", data)
    rng = np.random.default_rng(0)
    post = xr.Dataset(
        {"beta": (("chain", "draw", "coef"), rng.normal(0, 0.5, (2, 100, 3))),
         "sd": (("chain", "draw", "component"), np.abs(rng.normal(1, 0.1, (2, 100, 2))))},
        coords={"coef": d.coef, "component": ["1|agent", "1|task"]},
    )  # fmt: skip
    dt = xr.DataTree.from_dict({"posterior": post})
    spec = {"model": "mixed", "options": {"formula": d.formula, "family": d.family, "levels": None}}
    dt.attrs = {"hierbench_model": "mixed", "hierbench_spec": json.dumps(spec)}
    return dt, d


def test_fit_prints_each_variables_effect_and_the_sds(capsys, tmp_path):
    dt, d = _fit_and_design()
    args = build_parser().parse_args(["fit", "log.csv", "--formula", d.formula, "-o", str(tmp_path / "f.nc")])
    _print_effects(dt, d, tmp_path / "f.nc", args)
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("effects of the formula's terms: average marginal effect on the points of success rate")
    assert "posterior mean [95% eti]" in out[0]
    for v, c in (("scaffold", "s2 - s1"), ("hard", "1.0 - 0.0")):
        r = metrics.average_marginal_effects(dt, d, v)
        lo, hi = r.ci.sel(contrast=c).values
        assert f"  {v}: {c}  {float(r.estimate.sel(contrast=c)):+.3g} [{lo:.3g}, {hi:.3g}]" in out
    sd = dt["posterior"]["sd"].values.reshape(-1, 2)[:, 1]
    lo, hi = np.quantile(sd, [0.025, 0.975])
    assert f"1|task {sd.mean():.3g} [{lo:.3g}, {hi:.3g}]" in out[-2] and out[-2].startswith("  random terms' sds (logit)")
    assert f"hierbench report {tmp_path / 'f.nc'} --data log.csv" in out[-1]


def test_fit_prints_nothing_more_for_a_model_without_a_formula(capsys, tmp_path):
    dt, d = _fit_and_design()
    dt.attrs = {"hierbench_model": "crossed"}
    args = build_parser().parse_args(["fit", "log.csv", "-o", str(tmp_path / "f.nc")])
    _print_effects(dt, d, tmp_path / "f.nc", args)
    assert capsys.readouterr().out == ""


def test_a_failure_is_said_not_raised(capsys, tmp_path):
    dt, _ = _fit_and_design()
    args = build_parser().parse_args(["fit", "log.csv", "-o", str(tmp_path / "f.nc")])
    _print_effects(dt, object(), tmp_path / "f.nc", args)  # no design: as_design refuses it
    out = capsys.readouterr().out
    assert out.startswith("effects of the formula's terms: not computed (HierbenchError: `design` must be the ModelDesign")
