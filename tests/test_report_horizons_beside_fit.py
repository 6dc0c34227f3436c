"""The Time horizons section beside a fit that is not a horizon fit, and its sentence on the two methods.

Audit S, finding 2: a crossed fit given with a METR log made the section vanish (the minutes were
read from the fit's spec only), though METR's half is a computation on the log. Its table is
checked against hierbench.freq.time_horizon called directly with the report's settings.
Finding 4: "so the 80% horizons differ more" was false for 5 of 9 METR agents; the sentence now
counts, and the count is checked against |log(Bayes / METR)| worked out here by hand.
"""

from __future__ import annotations

import json
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import xarray as xr
from test_report_horizons import N_RES
from test_report_horizons import PROB
from test_report_horizons import RNG
from test_report_horizons import _fake_fit
from test_report_horizons import _log
from test_report_horizons import _section

from hierbench import freq
from hierbench.report import SECTIONS
from hierbench.report._horizons import _apart_text
from hierbench.report._horizons import with_horizons


@pytest.fixture
def no_figure(monkeypatch):
    """The section without its figure (drawing it is most of the time; the figure is not what is checked)."""
    monkeypatch.setattr("hierbench.report._horizons.horizon_figure", lambda results, data: (None, ""))
    monkeypatch.setattr("hierbench.report.Report.figure", lambda self, *a, **k: None)


def _crossed_fit() -> xr.DataTree:
    fit = xr.DataTree.from_dict({"posterior": xr.Dataset()})
    fit.attrs = {"hierbench_model": "crossed", "hierbench_spec": json.dumps({"model": "crossed", "options": {}})}
    return fit


def test_beside_a_crossed_fit_the_section_shows_metrs_half_and_says_why_not_the_bayesian(no_figure):
    ds, fit = _log(), _crossed_fit()
    listed = with_horizons(SECTIONS, fit, ds)
    assert listed[listed.index("abilities") + 1] == "horizons"
    assert with_horizons(SECTIONS, fit, None) == SECTIONS  # no log, no minutes: no section
    block, _ = _section(fit, ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = freq.time_horizon(ds, minutes="human_minutes", success=(0.5, 0.8), n_resamples=N_RES, prob=PROB, rng=RNG)
    table = block["table"]
    assert not any(c.startswith("Bayes") for c in table.columns)
    for a in ("a", "b", "c"):
        for p in (0.5, 0.8):
            assert table.loc[(a, f"{p:.0%}"), "METR estimate"] == float(ref.estimate.sel(agent=a, success=p))
    assert ("Not computed: Bayesian half: the fit is a crossed fit, not hierbench.bayes.build_horizon's"
            in block["text"])  # fmt: skip


def _res(est: dict) -> SimpleNamespace:
    agents = list(est)
    vals = np.array([est[a] for a in agents], dtype=float)
    return SimpleNamespace(estimate=xr.DataArray(vals, dims=("agent", "success"),
                                                 coords={"agent": agents, "success": [0.5, 0.8]}))  # fmt: skip


def test_the_sentence_counts_the_agents_whose_80_percent_horizons_are_further_apart():
    """By hand: x |ln 2| = 0.69 at 50% > |ln 1.2| = 0.18 at 80%; y |ln 1.1| = 0.10 < |ln 2| = 0.69; z's
    infinite and w's zero horizon are left out (no ratio); v is Bayes's only (no METR row).
    """
    bayes = _res({"x": (10, 1), "y": (10, 1), "z": (10, np.inf), "w": (0, 0), "v": (5, 1)})
    metr = _res({"x": (20, 1.2), "y": (11, 2), "z": (10, 1), "w": (1, 1)})
    text = _apart_text(bayes, metr)
    assert text.endswith("at 80% than at 50% for 1 of the 2 agents with a finite positive estimate from both.")
    assert _apart_text(_res({"w": (0, 0)}), metr) == ""


def test_the_section_no_longer_claims_the_80_percent_horizons_differ_more(no_figure):
    ds = _log()
    fit, _ = _fake_fit(ds)
    block, _ = _section(fit, ds)
    t = block["table"]
    apart = {p: np.abs(np.log(t.xs(p, level="success")["Bayes median"] / t.xs(p, level="success")["METR estimate"]))
             for p in ("50%", "80%")}  # fmt: skip
    ok = np.isfinite(apart["50%"]) & np.isfinite(apart["80%"])
    more = int((apart["80%"][ok] > apart["50%"][ok]).sum())
    assert "so the 80% horizons differ more" not in block["text"]
    assert f"for {more} of the {int(ok.sum())} agents with a finite positive estimate from both." in block["text"]
