"""The demo's coverage counts as lines (``_covers_lines``), which ``_covers`` joins and section 5 prints.

Review s71, finding 5e: section 5 sliced ``_covers``' text at its blank lines.
"""

from __future__ import annotations

import numpy as np
import xarray as xr


def _result(lo, hi):
    ci = xr.DataArray(np.array([lo, hi]).T, dims=("agent", "ci_bound"),
                      coords={"agent": ["x", "y"], "ci_bound": ["lower", "upper"]},
                      attrs={"ci_prob": 0.95, "ci_kind": "percentile", "ci_detail": "written by hand"})  # fmt: skip
    return xr.Dataset({"estimate": ci.mean("ci_bound"), "ci": ci})


def test_covers_lines_are_the_printed_lines_a_blank_before_each_estimator():
    """By hand: truth 0.43 for x lies below Bayes' [0.44, 0.50] and inside the bootstrap's [0.40, 0.55]; y's 0.30
    is inside both. The Bayes line is wrapped at 90 characters.
    """
    from hierbench.compare import side_by_side
    from hierbench.demo._context import _covers
    from hierbench.demo._context import _covers_lines

    truth = xr.DataArray([0.43, 0.30], dims="agent", coords={"agent": ["x", "y"]})
    results = {"boot": _result([0.40, 0.25], [0.55, 0.35]), "Bayes": _result([0.44, 0.28], [0.50, 0.33])}
    table = side_by_side(results, truth=truth)
    assert _covers_lines(table) == [
        "",
        "boot: 2 of 2 intervals cover the truth.",
        "",
        "Bayes: 1 of 2 intervals cover the truth; the one that misses: x (truth 0.430, interval",
        "[0.440, 0.500]).",
    ]
    assert _covers(table) == "\n" + "\n".join(_covers_lines(table))
    one = side_by_side({"Bayes": results["Bayes"]}, truth=truth)  # one estimator: not named
    assert _covers_lines(one) == ["", "1 of 2 intervals cover the truth; the one that misses: x (truth 0.430, "
                                  "interval [0.440,", "0.500])."]
    no_truth = side_by_side(results)
    assert _covers_lines(no_truth) == [] and _covers(no_truth) == ""
