"""The demo's convergence warning says what to do, in the demo's own terms (audit C, noticed beside C11)."""

from __future__ import annotations

import json

import xarray as xr

from hierbench._console import convergence_line
from hierbench.demo import _bayes


def _failed_fixed_draws() -> xr.DataTree:
    dt = xr.DataTree()
    dt.attrs = {
        "diag_converged": 0,
        "diag_failures": json.dumps(["min ESS_bulk 48 < 200 (at `sd_task`)"]),
        "diag_checks": json.dumps([{"check": "ess_bulk", "passed": False}]),
        "sampler_settings": json.dumps({"draws_rule": "fixed", "draws": 300}),
    }
    return dt


def test_a_fast_demo_is_told_to_drop_fast_and_a_full_one_what_the_fit_records(monkeypatch):
    dt = _failed_fixed_draws()
    monkeypatch.setattr(_bayes, "_fast", lambda ctx: True)
    fast = convergence_line(dt, remedy=_bayes._demo_remedy(None, dt))
    assert fast.startswith("the fit did not converge: min ESS_bulk 48 < 200")
    assert "What to do: run the demo without --fast" in fast
    monkeypatch.setattr(_bayes, "_fast", lambda ctx: False)
    full = _bayes._demo_remedy(None, dt)
    assert "--fast" not in full and "draws=None" in full  # the fit's own record: 300 fixed draws
    dt.attrs["diag_converged"] = 1
    assert convergence_line(dt, remedy=_bayes._demo_remedy(None, dt)) is None
