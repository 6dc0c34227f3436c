"""freq.doubling_time: the point line follows the replicates' rule on horizons below 0.001 minutes.

Independent references: numpy's polyfit for the least-squares lines, METR's per-replicate rule
(``compute_bootstrap_confidence_region``) re-written as a loop, and a seeded set of replicates built here.
Last, a saved horizon result (no resamples) is refused with its reason.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench._base import HierbenchWarning
from hierbench.freq import ExtrapolatedHorizonWarning
from hierbench.freq import TimeHorizonResult
from hierbench.freq import doubling_time

AGENTS = ["a", "b", "c", "d", "e"]
DATES = {"a": "2022-01-01", "b": "2022-09-01", "c": "2023-06-01", "d": "2024-01-01", "e": "2024-09-01"}
#: a's horizon (2e-5 minutes) is read off its slope far below the 1-minute shortest task; b-e lie inside 1-480
POINT = np.array([2e-5, 2.0, 6.0, 15.0, 50.0])


def _result(seed: int = 0, n: int = 400) -> TimeHorizonResult:
    """Point horizons ``POINT`` and ``n`` replicates: each agent's log horizon moved by N(0, 0.5^2), a's by N(0, 4^2).

    a's replicates cross the 0.001-minute floor in about 16% of them (P(Z > ln(50) / 4)), as a slope-set
    extrapolation does.
    """
    gen = np.random.default_rng(seed)
    sd = np.array([4.0, 0.5, 0.5, 0.5, 0.5])
    boot = np.exp(np.log(POINT)[None, :] + gen.normal(size=(n, 5)) * sd)
    coords = {"agent": AGENTS, "success": [0.5]}
    h = xr.DataArray(POINT[:, None], dims=("agent", "success"), coords=coords)
    ci = h.expand_dims(ci_bound=["lower", "upper"], axis=-1)
    return TimeHorizonResult(estimate=h, ci=ci, coef=h, options={"minutes_range": [1.0, 480.0]},
                             resamples=xr.DataArray(boot[:, :, None], dims=("resample", "agent", "success"),
                                                    coords=coords))  # fmt: skip


def _days(agents):
    return np.array([np.datetime64(DATES[a], "D").astype(int) for a in agents], dtype=float)


def _metr_rule(days, boot):
    """Per replicate: drop NaN / inf / < 1e-3 minute horizons, fit ln h on days if at least 2 remain, keep ln 2 / slope > 0."""
    out = []
    for r in boot:
        ok = np.isfinite(r) & (r >= 1e-3)
        if ok.sum() >= 2:
            d = np.log(2) / np.polyfit(days[ok], np.log(r[ok]), 1)[0]
            out.append(d if d > 0 else np.nan)
        else:
            out.append(np.nan)
    return np.array(out)


def test_a_horizon_below_the_floor_leaves_the_point_line_as_it_leaves_every_replicate():
    res = _result()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        dt = doubling_time(res, DATES)
    # the line through b-e by numpy; a (on the frontier: first released) is left out
    slope = np.polyfit(_days("bcde"), np.log(POINT[1:]), 1)[0]
    assert dt.agents == ["b", "c", "d", "e"] and dt.agents_below_floor == ["a"]
    assert abs(float(dt.estimate) - np.log(2) / slope) < 1e-9 * float(dt.estimate)
    # the interval: METR's rule over the replicates of the same agents
    kept = _metr_rule(_days("bcde"), res.resamples.values[:, 1:, 0])
    np.testing.assert_allclose(dt.ci.values, np.percentile(kept[np.isfinite(kept)], [2.5, 97.5]), rtol=1e-9)
    assert float(dt.ci[0]) <= float(dt.estimate) <= float(dt.ci[1])
    msg = [str(w.message) for w in seen if w.category is ExtrapolatedHorizonWarning]
    assert len(msg) == 1 and "agents ['a'] have a 0.5 horizon below 0.001 minutes (a 2e-05 minutes" in msg[0]
    assert "the shortest task measured takes 1 minutes" in msg[0]
    assert not [w for w in seen if w.category is HierbenchWarning]
    assert "left out, horizon below 0.001 minutes: a" in repr(dt)
    # the set-up shows the defect the rule removes: the line through a's 2e-5 minutes (numpy) lies outside
    through_a = np.log(2) / np.polyfit(_days(AGENTS), np.log(POINT), 1)[0]
    assert not float(dt.ci[0]) <= through_a <= float(dt.ci[1])


def test_an_agent_below_the_floor_that_is_not_on_the_line_is_not_warned():
    """Released before ``after``, a is off the line whatever its horizon: no notice, nothing listed."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtrapolatedHorizonWarning)
        dt = doubling_time(_result(), DATES, after="2022-06-01")
    assert dt.agents == ["b", "c", "d", "e"] and dt.agents_below_floor == []
    assert repr(dt).endswith("(line through 4 agents)")


def test_below_the_floor_is_not_called_a_horizon_of_zero():
    """A horizon of 0 is 'unusable' (its own notice); 2e-5 minutes is positive, left out by the floor instead."""
    res = _result()
    h = res.estimate.copy(data=np.r_[0.0, POINT[1:]][:, None])
    zero = TimeHorizonResult(estimate=h, ci=res.ci, coef=h, resamples=res.resamples, options=res.options)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        doubling_time(zero, DATES)
        doubling_time(res, DATES)
    texts = [str(w.message) for w in seen]
    assert sum("agents ['a'] have a horizon of 0, infinite or undefined" in t for t in texts) == 1
    assert sum("below 0.001 minutes" in t for t in texts) == 1


def test_a_saved_horizon_result_is_refused_by_doubling_time_saying_why(tmp_path):
    """A horizon result saved and loaded back keeps the horizons, not the resamples the interval refits on.

    It failed with an AttributeError ('Dataset' object has no attribute 'estimate').
    """
    from hierbench.io import load_dataset
    from hierbench.io import save_dataset

    h = xr.DataArray([[1.0], [2.0], [4.0]], dims=("agent", "success"),
                     coords={"agent": ["a", "b", "c"], "success": [0.5]})  # fmt: skip
    boot = xr.DataArray(np.tile(h.values, (10, 1, 1)), dims=("resample", "agent", "success"), coords=h.coords)
    res = TimeHorizonResult(estimate=h, ci=h.expand_dims(ci_bound=["lower", "upper"], axis=-1), coef=h, resamples=boot)
    dates = {"a": "2024-01-01", "b": "2024-07-01", "c": "2024-12-30"}
    assert round(float(doubling_time(res, dates).estimate)) == 182  # 2x per ~182 days, by hand
    save_dataset(res.to_dataset(), tmp_path / "h.nc")
    with pytest.raises(TypeError, match=r"got Dataset \(a result saved and loaded back keeps the horizons, not the "
                                        r"resamples\).*run time_horizon on the log again"):  # fmt: skip
        doubling_time(load_dataset(tmp_path / "h.nc"), dates)
