"""loo_summary says in words which selections lose to the plain random mean or cover below the level.

Audit D, finding 5: information anchors had MAE ratio 1.09 and 1.31 against the plain random mean
and 90% coverage 0.625, and the summary said so only as numbers. The study is built by hand, so
which selections must be named is known by construction.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from hierbench.design import loo_summary


def _study(err: np.ndarray, covered: np.ndarray, mean_kind: str) -> xr.Dataset:
    """A loo_study-shaped Dataset over (agent, selection, n_tasks, repeat), with its ci_kind per selection."""
    M = err.shape[0]
    dims = ("agent", "selection", "n_tasks", "repeat")
    sel = ["random_mean", "information", "adaptive"]
    lower = np.zeros(err.shape)
    return xr.Dataset(
        {"abs_error": (dims, err), "covered": (dims, covered), "lower": (dims, lower), "upper": (dims, lower + 0.1),
         "ci_kind": (("agent", "selection"), np.array([[mean_kind, "eti", "eti"]] * M, dtype=object))},
        coords={"agent": [f"m{i}" for i in range(M)], "selection": sel, "n_tasks": [10, 20], "repeat": [0, 1]},
        attrs={"ci_prob": 0.9},
    )


def test_verdict_names_the_losers_and_the_under_coverers():
    g = np.random.default_rng(5)
    M = 12
    err = g.uniform(0.04, 0.06, (M, 3, 2, 2))
    err[:, 1, 1] += 0.05  # information at 20: MAE about twice the baseline's, for every agent
    err[:, 2] -= 0.02  # adaptive: better everywhere
    covered = np.ones((M, 3, 2, 2))
    covered[: M // 2, 1, :, :] = 0.0  # information: 6 of 12 cover at both sizes (Wilson upper about 0.75 < 0.9)
    s = loo_summary(_study(err, covered, "t"))
    v = s.attrs["verdict"]
    ratio = float(s.baseline_ratio.sel(selection="information", n_tasks=20))
    assert ratio > 1.5 and float(s.baseline_gap_ci.sel(selection="information", n_tasks=20, ci_bound="lower")) > 0
    assert f"worse than the plain random mean (baseline_gap_ci above 0): information (n = 20: MAE ratio {ratio:.3g})" in v
    assert "covering below the study's 90% level (coverage_ci below it): information (n = 10, 20: coverage 0.5, 0.5)" in v
    assert "adaptive" not in v  # better than the baseline and covering: not named
    assert "the baseline's own interval is approximate" in v and "verdict:        loo_summary flags information:" in repr(s)
    # an exact baseline, nobody worse, nobody under: said so, and no approximation note
    ok = loo_summary(_study(g.uniform(0.04, 0.06, (M, 3, 2, 2)) * np.array([1, 0.5, 0.5])[None, :, None, None],
                            np.ones((M, 3, 2, 2)), "exact"))
    assert ok.attrs["verdict"] == (
        "loo_summary flags no selection: no selection's error is above the plain random mean's beyond the Monte Carlo error; "
        "no selection's coverage is below the study's 90% level beyond the Monte Carlo error."
    )
