"""The demo's convergence warning says what to do, in the demo's own terms (audit C, noticed beside C11)."""

from __future__ import annotations

import json

import xarray as xr

from hierbench._console import convergence_line
from hierbench.bayes import convergence_remedy


def _failed_fixed_draws() -> xr.DataTree:
    dt = xr.DataTree()
    dt.attrs = {
        "diag_converged": 0,
        "diag_failures": json.dumps(["min ESS_bulk 48 < 200 (at `sd_task`)"]),
        "diag_checks": json.dumps([{"check": "ess_bulk", "passed": False}]),
        "sampler_settings": json.dumps({"draws_rule": "fixed", "draws": 300}),
    }
    return dt


def test_a_fast_demo_is_told_to_drop_fast_and_a_full_one_what_the_fit_records():
    from hierbench.bayes import DEMO_FAST
    from hierbench.bayes import MADE_BY

    dt = _failed_fixed_draws()
    full = convergence_remedy(dt, cli=False)  # no mark: the fit's own record, 300 fixed draws
    assert "--fast" not in full and "draws=None" in full
    dt.attrs[MADE_BY] = DEMO_FAST  # as the demo marks its smoke run
    fast = convergence_line(dt, remedy=convergence_remedy(dt, cli=False))
    assert fast.startswith("the fit did not converge: min ESS_bulk 48 < 200")
    assert "What to do: it drew a fixed 300 draws per chain (hierbench demo --fast): run the demo without --fast" in fast
    assert "--draws" not in fast
    dt.attrs["diag_converged"] = 1
    assert convergence_line(dt, remedy=convergence_remedy(dt, cli=False)) is None


def test_the_demo_mark_survives_saving_and_reaches_the_command_lines_remedy(tmp_path):
    # ``hierbench report fit_crossed.nc`` reads the remedy from the saved fit (cli words)
    from hierbench.bayes import DEMO_FAST
    from hierbench.bayes import MADE_BY
    from hierbench.bayes import convergence_remedy
    from hierbench.io import load_fit
    from hierbench.io import save_fit

    dt = _failed_fixed_draws()
    dt.attrs[MADE_BY] = DEMO_FAST
    dt["posterior"] = xr.DataTree(xr.Dataset({"mu": (("chain", "draw"), [[0.0, 1.0]])}))
    save_fit(dt, tmp_path / "fit.nc")
    said = convergence_remedy(load_fit(tmp_path / "fit.nc"), cli=True)
    assert "run the demo without --fast" in said and "--draws" not in said
