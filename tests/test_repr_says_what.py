"""Audit S findings 2 (repr), 15, 16, 18 (repr), 20 and 21: a result's repr says what it shows and hides.

* 2: a horizon read off the line beyond the task lengths was not marked in the repr (7 cells on
  METR, e.g. Claude 3 Opus at 0.8: 0.245 minutes, below the 1-minute shortest task).
* 15: the posterior metric reprs listed the finite cells only: ``pass_hat_k(fit, [1, 2],
  min_runs="k")`` on one run per cell showed the k = 1 rows as if k = 2 had not been asked.
* 16: ``crossed_variance_components`` read "estimate with 95% eti interval" on both scales
  (0.6519 latent, 0.004261 probability); the pass^k / pass@k frames were alike.
* 18: the flagged cells among the elided ones were not counted (as BootstrapResult does).
* 20: reprs reading "estimate with 95% <kind> interval": average precision, the recall
  threshold, the quantiles' variable, the coverage study (whose Monte Carlo level is its own).
* 21: repr lines of 250-460 characters (win_rate, person_fit).

Expected values: by construction (the cells made NaN, beyond the lengths or flagged), by hand.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench._base import make_interval
from hierbench.compare import coverage_study
from hierbench.data import read_battles
from hierbench.freq import TimeHorizonResult
from hierbench.freq import pass_hat_k
from hierbench.freq import person_fit
from hierbench.freq import position_consistency
from hierbench.freq import pr_curve
from hierbench.freq import quantile_ci
from hierbench.freq import success_rate
from hierbench.freq import threshold_for_recall
from hierbench.freq import win_rate
from hierbench.metrics import PosteriorPassKResult
from hierbench.metrics import ProbSuperiorityResult
from hierbench.metrics import VarianceComponentDrawsResult
from hierbench.metrics._horizon import PosteriorHorizonResult


def _horizons() -> xr.DataArray:
    """Horizons (minutes) of two agents at 0.5 and 0.8; tasks run from 1 to 960 minutes."""
    return xr.DataArray([[4.0, 0.25], [60.0, 2000.0]], dims=("agent", "success"),
                        coords={"agent": ["x", "y"], "success": [0.5, 0.8]})


def _ci(est: xr.DataArray, kind: str = "percentile") -> xr.DataArray:
    return make_interval(est.values * 0.5, est.values * 2.0, prob=0.95, kind=kind, template=est)


def _cell_line(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"  {label}:"))


def test_horizon_reprs_mark_the_extrapolated_cells():
    est = _horizons()
    outside = est.copy(data=[[False, True], [False, True]])
    fr = TimeHorizonResult(estimate=est, ci=_ci(est), coef=est, resamples=est.expand_dims(resample=2),
                           options={"minutes_range": [1.0, 960.0]}, extrapolated=outside)
    draws = est.expand_dims(chain=1, draw=4).copy()
    post = PosteriorHorizonResult(estimate=est, ci=_ci(est, "eti"), n_undefined=est.isel(success=0) * 0,
                                  minutes_range=[1.0, 960.0], extrapolated=outside, draws=draws)
    for text in (repr(fr), repr(post)):
        assert _cell_line(text, "x, 0.8").endswith("(extrapolated: below the shortest task, 1 minute)")
        assert _cell_line(text, "y, 0.8").endswith("(extrapolated: beyond the longest task, 960 minutes)")
        assert "extrapolated" not in _cell_line(text, "x, 0.5") + _cell_line(text, "y, 0.5")


def _passk(est: xr.DataArray, **attrs) -> PosteriorPassKResult:
    draws = est.expand_dims(chain=1, draw=3).copy()
    return PosteriorPassKResult(estimate=est, ci=_ci(est, "eti"), draws=draws, n_tasks=est * 0 + 10,
                                attrs={"quantity": "pass^k", "tasks": "observed", "over": "the tasks",
                                       "model": "crossed", **attrs})


def test_posterior_reprs_count_the_nan_cells_they_leave_out():
    est = xr.DataArray([[0.7, np.nan], [0.6, np.nan], [0.5, np.nan]], dims=("agent", "k"),
                       coords={"agent": ["a", "b", "c"], "k": [1, 2]})
    text = repr(_passk(est))
    assert "  (3 NaN cells not shown: see to_frame())" in text.splitlines()
    assert len(_passk(est).to_frame()) == 6
    # P(row > column): NaN on the diagonal by definition (not counted), and one pair more
    p = xr.DataArray([[np.nan, 0.6, np.nan], [0.4, np.nan, 0.3], [np.nan, 0.7, np.nan]], dims=("agent", "opponent"),
                     coords={"agent": ["a", "b", "c"], "opponent": ["a", "b", "c"]})
    ps = ProbSuperiorityResult(estimate=p, ci=_ci(p, "wilson"), ess=p, difference=p, difference_ci=_ci(p, "eti"))
    assert "  (2 NaN cells not shown: see to_frame())" in repr(ps).splitlines()


def test_posterior_variance_components_and_pass_k_say_their_scale_and_quantity():
    est = xr.DataArray([0.65, 1.9], dims="component", coords={"component": ["agent", "task"]})
    for scale in ("latent", "probability"):
        vc = VarianceComponentDrawsResult(estimate=est, ci=_ci(est, "eti"), draws=est.expand_dims(chain=1, draw=3),
                                          attrs={"scale": scale})
        assert repr(vc).splitlines()[0] == (f"VarianceComponentDrawsResult: posterior mean of the variance "
                                            f"components on the {scale} scale with 95% eti interval")
        assert vc.to_frame()["scale"].tolist() == [scale, scale]
    est = xr.DataArray([[0.7], [0.6]], dims=("agent", "k"), coords={"agent": ["a", "b"], "k": [1]})
    df = _passk(est, quantity="pass@k", tasks="population").to_frame()
    assert df["quantity"].tolist() == ["pass@k"] * 2 and df["tasks"].tolist() == ["population"] * 2


def _ten_agents() -> xr.Dataset:
    """Ten agents x 20 tasks x 3 runs; agents 5 and 6 (elided in a repr of 10) solve nothing."""
    rng = np.random.default_rng(2)
    score = (rng.random((10, 20, 3)) < 0.5).astype(float)
    score[5:7] = 0.0
    return xr.Dataset({"score": (("agent", "task", "run"), score)}, coords={"agent": [f"g{i}" for i in range(10)]})


def test_rate_reprs_count_the_flagged_cells_they_elide_and_frames_name_each_kind():
    ds = _ten_agents()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sr, pk = success_rate(ds), pass_hat_k(ds, 1)
    for res in (sr, pk):
        assert "  (2 more flagged: see .ci_flag)" in repr(res).splitlines()
    # every task scored 0: the exact bound (a bounded-mean interval); the others a t interval
    kinds = ["t"] * 5 + ["bounded-mean"] * 2 + ["t"] * 3
    assert sr.ci.attrs["ci_kind"] == "mixed"
    assert sr.to_frame()["ci_kind"].tolist() == kinds
    assert sr.ci_kind.values.tolist() == kinds


def _battles(n: int = 120, seed: int = 0) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    names = np.array(["alpha", "bravo", "charlie", "delta"])
    a, b = rng.integers(0, 4, n), rng.integers(0, 3, n)
    b = np.where(b >= a, b + 1, b)
    df = pd.DataFrame({"left": names[a], "right": names[b], "winner": rng.choice(["left", "right", "tie"], n),
                       "q": [f"t{i % 15}" for i in range(n)]})
    return read_battles(df, task="q")


def test_long_repr_lines_are_wrapped_near_100_columns():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wr = win_rate(_battles(), n_resamples=50, rng=0)
        rng = np.random.default_rng(1)
        logit = rng.normal(0, 1, 40)[None, :] + np.linspace(-1, 1, 8)[:, None]
        y = (rng.random((8, 40, 1)) < 1 / (1 + np.exp(-logit[..., None]))).astype(float)
        pf = person_fit(xr.Dataset({"score": (("agent", "task", "run"), y)}, coords={"agent": [f"g{i}" for i in range(8)]}),
                        n_sim=200, rng=0)
    for res in (wr, pf):
        lines = repr(res).splitlines()
        assert len(lines) > 3, lines  # not the fallback of a repr that raised
        assert max(map(len, lines)) <= 100, (type(res).__name__, max(map(len, lines)))
    # the words are all there, in order, only broken across lines
    flat = " ".join(x.strip() for x in repr(pf).splitlines())
    assert "(slope on the other agents' task logit, 95% Wald interval; bootstrap p, Holm, alpha 0.05)" in flat
    from hierbench._base import wrap_repr

    assert wrap_repr(["  head: " + "word " * 12], width=30) == [
        "  head: word word word word", "    word word word word word", "    word word word"]
    assert wrap_repr(["short"], width=30) == ["short"]


def test_reprs_name_the_quantity():
    y = np.array([1, 0, 1, 1, 0, 1, 0, 0, 1, 1] * 4)
    score = np.linspace(0.05, 0.95, y.size)[np.random.default_rng(0).permutation(y.size)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pc = pr_curve(y, score, n_resamples=50, rng=0)
        rt = threshold_for_recall(y, score, target=0.8, n_resamples=50, rng=0)
        cost = xr.DataArray(np.arange(1.0, 21.0).reshape(1, 10, 2), dims=("agent", "task", "run"),
                            coords={"agent": ["a"]})
        q = quantile_ci(xr.Dataset({"cost": cost}), 0.5, var="cost")
    assert repr(pc).startswith("PRCurveResult: average precision (area under the precision-recall curve) with 95% ")
    assert repr(rt).startswith("RecallThresholdResult: highest score threshold reaching recall 0.8 with 95% ")
    assert repr(q).startswith("QuantileResult: quantiles of cost with 95% order-statistic interval")


def _simulate(rng):
    return rng.normal(size=20), xr.DataArray(0.0)


def _z95(x, rng):
    m, s = x.mean(), x.std(ddof=1) / np.sqrt(x.size)
    return make_interval(m - 1.96 * s, m + 1.96 * s, prob=0.95, kind="normal")


def test_coverage_study_states_its_monte_carlo_level_apart_from_the_level_studied():
    res = coverage_study(_simulate, {"z": _z95}, n_rep=60, prob=0.8, rng=0)
    text = repr(res)
    flat = " ".join(x.strip() for x in text.splitlines())
    assert flat.startswith("CoverageStudyResult: coverage (share of 60 replications whose interval covered the truth), "
                           "with 80% wilson interval: the study's Monte Carlo error")
    assert _cell_line(text, "z").endswith("(nominal 95% normal intervals)")


def test_position_consistency_says_why_its_rate_is_nan():
    df = pd.DataFrame({"left": ["A", "A"], "right": ["B", "B"], "winner": ["left", "right"], "q": ["1", "2"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = position_consistency(read_battles(df, task="q"))
    lines = repr(res).splitlines()
    assert lines[0] == "PositionConsistencyResult: inconsistency rate of 0 both-order matches with 95% wilson interval"
    assert lines[1] == ("  nan [nan, nan]  (none of the 2 judgements has a swapped-order partner (same task and agents, "
                        "other order): no rate)")


@pytest.mark.parametrize("label", ["{missing}", "quantiles of {name}"])
def test_a_label_key_the_result_lacks_reads_a_question_mark(label):
    lat = xr.DataArray(np.arange(1.0, 9.0).reshape(1, 8, 1), dims=("agent", "task", "run"), coords={"agent": ["a"]})
    q = quantile_ci(xr.Dataset({"latency": lat}), 0.5, var="latency")
    cls = type("_Q", (type(q),), {"_estimate_label": label})
    r = cls(estimate=q.estimate.rename(None), ci=q.ci, coverage=q.coverage, n=q.n)
    assert repr(r).splitlines()[0].startswith("_Q: " + label.replace("{missing}", "?").replace("{name}", "?"))
