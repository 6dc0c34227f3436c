"""Limit horizons and METR's per-replicate doubling-time rule: the shared numerics and the posterior half.

Independent references: numpy's quantile on finite samples and a hand
enumeration where samples hold infinities; METR's
``compute_bootstrap_confidence_region`` re-written as a loop of
``np.polyfit``; posteriors built by hand (every draw's parameters known), whose
horizons follow from the symmetric logit-normal (``E[expit(eta + s Z)] = 1/2``
exactly at ``eta = 0``, so the 50% horizon is ``2 ** (-a / b)`` and a draw
with a slope that is not negative reaches 1/2 at the shortest task iff
``a + b x_min >= 0``), with hand counts.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench._base import UndefinedWarning
from hierbench._numerics import bootstrap_doubling_times
from hierbench._numerics import limit_quantiles
from hierbench._numerics import quantile_ext
from hierbench.data import model_design
from hierbench.metrics import ExtrapolatedHorizonWarning
from hierbench.metrics import doubling_time
from hierbench.metrics import time_horizon


def _metr_rule(days, samples):
    """METR's rule, re-written: per row drop NaN / inf / < 1e-3 minutes, polyfit ln h on days, keep ln 2 / slope > 0."""
    out, few, nonpos = np.full(len(samples), np.nan), 0, 0
    for i, r in enumerate(samples):
        ok = np.isfinite(r) & (r >= 1e-3)
        if ok.sum() < 2:
            few += 1
            continue
        d = np.log(2) / np.polyfit(days[ok], np.log(r[ok]), 1)[0]
        out[i] = d if d > 0 else np.nan
        nonpos += d <= 0
    return out, few, nonpos


def test_quantiles_with_limits_match_numpy_and_a_hand_enumeration():
    rng = np.random.default_rng(0)
    x = rng.lognormal(size=(201, 3))
    np.testing.assert_allclose(limit_quantiles(x, [0.025, 0.5, 0.975]), np.quantile(x, [0.025, 0.5, 0.975], axis=0))
    # 0, 1, 2, 3, inf: the 0.9 quantile sits between 3 and inf (position 3.6) -> inf; the 0.5 is 2; numpy gives nan
    v = np.array([2.0, np.inf, 0.0, 3.0, 1.0])
    assert limit_quantiles(v, [0.5, 0.7, 0.9]).tolist() == pytest.approx([2.0, 2.8, np.inf])
    with np.errstate(invalid="ignore"):
        assert np.isnan(np.quantile(v, 0.9))
    # NaN is left out column by column: the second column is the quantile of [1, 3]
    w = np.array([[0.0, 1.0], [np.nan, np.nan], [5.0, 3.0]])
    assert limit_quantiles(w, [0.5]).tolist() == [[2.5, 2.0]]
    from hierbench.freq._pairwise import _undefined

    assert _undefined._quantile_ext is quantile_ext  # one owner: the pairwise wing imports it


def test_bootstrap_doubling_times_follow_metr_rule():
    rng = np.random.default_rng(1)
    days = np.array([0.0, 200.0, 400.0, 650.0, 900.0])
    h = np.exp(rng.normal(np.log(2.0) * days / 180.0, 1.5, size=(300, 5)) - 4.0)
    h[rng.random(h.shape) < 0.1] = np.nan
    h[rng.random(h.shape) < 0.05] = 0.0
    h[rng.random(h.shape) < 0.05] = np.inf
    h[:3, 1:] = 1e-4  # three rows with one agent left: too few
    want, few, nonpos = _metr_rule(days, h)
    got = bootstrap_doubling_times(days, h)
    np.testing.assert_allclose(got.doubling, want, rtol=1e-9)
    assert (got.n_too_few, got.n_nonpositive, int(got.kept.sum())) == (few, nonpos, int(np.isfinite(want).sum()))
    assert got.agent_dropped.tolist() == (~(np.isfinite(h) & (h >= 1e-3))).sum(0).tolist()
    assert few >= 3 and nonpos > 0


def _posterior(design, beta) -> xr.DataTree:
    """Every draw's parameters given: beta (draws, coef), the task sd 0.8 in every draw."""
    n = beta.shape[0]
    post = {"beta": (("chain", "draw", "coef"), beta[None]), "sd": (("chain", "draw", "component"), np.full((1, n, 1), 0.8))}
    coords = {"coef": list(design.coef), "component": [t.name for t in design.random]}
    return xr.DataTree.from_dict({"posterior": xr.Dataset(post, coords=coords)})


def _board(n_agents=5):
    rng = np.random.default_rng(7)
    mins = np.geomspace(2, 300, 10)
    agents = list("abcde")[:n_agents]
    ds = xr.Dataset({"score": (("agent", "task", "run"), (rng.random((n_agents, 10, 2)) < 0.5) * 1.0)},
                    coords={"agent": agents, "task": [f"t{i}" for i in range(10)],
                            "log2_minutes": ("task", np.log2(mins))})  # fmt: skip
    return model_design("score ~ 0 + agent + agent:log2_minutes + (1|task)", ds), np.log2(mins).min()


def _draws(n=40):
    """Intercepts and slopes per draw of a-e: b's slope is positive in 10 draws with a + b x_min < 0 (horizon 0),
    c's in 10 draws with a + b x_min > 0 (infinite); a, d, e always negative; a's 50% horizon below 1e-3 minutes
    in draws 0-4.
    """
    rng = np.random.default_rng(3)
    a = np.column_stack([rng.normal(m, 0.3, n) for m in (1.0, 2.0, 3.0, 3.5, 4.0)])
    b = np.column_stack([rng.normal(m, 0.05, n) for m in (-0.5, -0.45, -0.5, -0.5, -0.5)])
    b[:10, 1], a[:10, 1] = 0.2, -3.0
    b[10:20, 2], a[10:20, 2] = 0.1, 1.0
    a[:5, 0], b[:5, 0] = -6.0, -0.5  # 2 ** (-12) minutes
    return a, b


def test_posterior_draws_without_a_negative_slope_enter_at_the_limit_horizon():
    d, x_min = _board()
    a, b = _draws()
    with pytest.warns(UndefinedWarning, match=r"b 10, c 10 of 40"):
        h = time_horizon(_posterior(d, np.hstack([a, b])), d, success=(0.5,))
    with np.errstate(divide="ignore"):
        want = np.where(b < 0, 2.0 ** (-a / np.where(b < 0, b, -1.0)), np.where(a + b * x_min >= 0, np.inf, 0.0))
    assert (want[:10, 1] == 0).all() and np.isposinf(want[10:20, 2]).all()
    np.testing.assert_allclose(h.draws.isel(chain=0, success=0).values, want, rtol=1e-8)
    assert h.n_undefined.values.tolist() == [0, 10, 10, 0, 0]
    # median and 2.5% by numpy (their neighbours are finite); c's 97.5% lies among its 10 infinities: inf
    np.testing.assert_allclose(h.estimate.sel(success=0.5).values, np.median(want, axis=0), rtol=1e-8)
    np.testing.assert_allclose(h.ci.sel(success=0.5, ci_bound="lower").values, np.quantile(want, 0.025, axis=0), rtol=1e-8)
    assert np.isposinf(float(h.ci.sel(agent="c", success=0.5, ci_bound="upper")))
    text = repr(h)
    assert "horizon in human minutes" in text
    assert "  b: slope not negative in 10 of 40 draws; horizon 0 there" in text
    assert "  c: slope not negative in 10 of 40 draws; horizon infinite there" in text
    assert "median line" not in (time_horizon.__doc__ or "")


def test_posterior_doubling_time_is_metr_rule_per_draw_without_agents_at_a_limit():
    d, _ = _board()
    a, b = _draws()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedWarning)
        warnings.simplefilter("ignore", ExtrapolatedHorizonWarning)
        h = time_horizon(_posterior(d, np.hstack([a, b])), d, success=(0.5,))
    dates = {"a": "2023-01-01", "b": "2023-06-01", "c": "2023-09-01", "d": "2024-01-01", "e": "2024-07-01"}
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        dt = doubling_time(h, dates, frontier=False)
    msg = [str(w.message) for w in seen if w.category is UndefinedWarning]
    assert len(msg) == 1 and "['b', 'c'] take a limit horizon" in msg[0] and "b 10, c 10 of 40" in msg[0]
    assert dt.agents == ["a", "d", "e"]
    days = np.array([np.datetime64(dates[x], "D").astype(int) for x in "ade"], dtype=float)
    per_draw, few, nonpos = _metr_rule(days, 2.0 ** (-a[:, [0, 3, 4]] / b[:, [0, 3, 4]]))
    kept = per_draw[np.isfinite(per_draw)]
    assert abs(float(dt.estimate) - np.median(kept)) < 1e-8 * np.median(kept)
    np.testing.assert_allclose(dt.ci.values, np.quantile(kept, [0.025, 0.975]), rtol=1e-9)
    assert (dt.n_kept, dt.n_too_few, dt.n_nonpositive) == (kept.size, few, nonpos)
    assert dt.n_agent_dropped == [5, 0, 0]  # a's horizon below 1e-3 minutes in draws 0-4
    assert "doubling time in days" in repr(dt)
