"""One report section built alone, as ``hierbench.report.build`` builds it (its ``_run_section``)."""

from __future__ import annotations

import warnings

import xarray as xr

from hierbench.report._build import _run_section
from hierbench.report._context import _Context
from hierbench.report._report import Report


def section_alone(sid: str, data: xr.Dataset | None = None, fit: xr.DataTree | None = None,
                  battles: xr.Dataset | None = None, report: Report | None = None) -> dict:  # fmt: skip
    """The block section ``sid`` writes for ``data``, ``fit`` and ``battles`` (into ``report``, default a plain one).

    The report's defaults (95%, seed 0) with 99 resamples; the section's warnings are not raised
    (the report lists them in its own section).
    """
    ctx = _Context(fit=fit, data=data, battles=battles, prob=0.95, rng=0, n_resamples=99, truth=None, freq="auto",
                   subset=[], say=lambda *_: None)  # fmt: skip
    rep = Report("t") if report is None else report
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run_section(ctx, rep, sid)
    return next(b for b in rep.blocks if b["id"] == sid)
