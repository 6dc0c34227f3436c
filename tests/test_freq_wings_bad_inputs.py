"""Bad inputs to the variance, profiles, judges and pairwise wings end in a clear error.

Each case is a call with one bad input (empty, NaN, one level, wrong dims, bool, text,
out of range, mismatched labels); the expectation is a property, not a value: an
error of hierbench's own kinds whose message names the argument (or the data
variable) and the rule. Cases marked ``was:`` ended before in another library's
traceback (numpy, scipy, xarray) or returned a number without a word.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import hierbench.freq as F
from hierbench.data import read_battles
from hierbench.testing import simulate_eval

DS, _ = simulate_eval(3, 8, 3, rng=0)
DSC, _ = simulate_eval(3, 8, 3, score_kind="continuous", sd_run=0.5, rng=0)
DA = DSC.score
KW = {"sigma2_interaction": 0.03, "sigma2_residual": 0.2}
LAT = DS.assign(latency=np.exp(DS.score + 0.1), cost=DS.score * 0 + 1.0)
BAT = read_battles(
    pd.DataFrame(
        {
            "left": list("ABCABCAB"),
            "right": list("BCACABCA"),
            "winner": ["left", "right", "tie", "left", "left", "right", "left", "right"],
            "q": list("11223344"),
        }
    ),
    task="q",
)
Y = np.array([1, 0, 1, 1, 0, 0, 1, 0])
P = np.array([1, 1, 0, 1, 0, 0, 1, 1])
SC = np.array([0.9, 0.2, 0.7, 0.8, 0.1, 0.3, 0.6, 0.4])
RUB = xr.DataArray(
    np.array([[3, 4, 3, 4], [1, 5, 1, 5.0]])[..., None],
    dims=("agent", "task", "run"),
    coords={"agent": ["a", "b"]},
)


def _vc():
    return F.variance_components(DSC)


CASES = [
    # ---- variance components and D-studies
    (
        "vc all NaN",
        lambda: F.variance_components(DA * np.nan),
        ValueError,
        r"`data` has no observed score",
    ),
    (
        "vc one task (was: E rho^2 without the task facet)",
        lambda: F.variance_components(DA.isel(task=[0])),
        F.DesignError,
        r"facet 'task' .* single level",
    ),
    (
        "vc infinite",
        lambda: F.variance_components(DA.where(DA.task != DA.task[1], np.inf)),
        ValueError,
        r"`data`: the scores must be finite",
    ),
    (
        "vc design not text",
        lambda: F.variance_components(DA, design=3),
        TypeError,
        r"`design` must be a string",
    ),
    (
        "vc method",
        lambda: F.variance_components(DA, method="ml"),
        ValueError,
        r"`method` must be one of",
    ),
    (
        "vc prob bool",
        lambda: F.variance_components(DA, prob=True),
        TypeError,
        r"`prob` must be a number",
    ),
    (
        "vc measurement",
        lambda: F.variance_components(DA, measurement="judge"),
        ValueError,
        r"`measurement` must be a facet",
    ),
    (
        "d_study bool size (was: one task)",
        lambda: _vc().d_study({"task": True}),
        ValueError,
        r"`n_task` must be positive integers",
    ),
    (
        "d_study empty sizes (was: an empty grid)",
        lambda: _vc().d_study({"task": []}),
        ValueError,
        r"`n_task` must be positive integers",
    ),
    (
        "d_study NaN",
        lambda: _vc().d_study({"task": [np.nan]}),
        ValueError,
        r"`n_task` must be positive integers",
    ),
    (
        "alloc budget text (was: numpy ufunc error)",
        lambda: _vc().optimal_allocation("100", {"task": 1.0}),
        TypeError,
        r"`budget` must be a number",
    ),
    (
        "alloc cost text (was: numpy ufunc error)",
        lambda: _vc().optimal_allocation(100, {"task": "1"}),
        TypeError,
        r"`cost\['task'\]` must be a number",
    ),
    (
        "alloc no cost (was: the largest grid point)",
        lambda: _vc().optimal_allocation(100, {}),
        ValueError,
        r"`cost` must give at least one facet a cost > 0",
    ),
    (
        "alloc n_objects 0 (was: silent)",
        lambda: _vc().optimal_allocation(100, {"task": 1.0}, n_objects=0),
        ValueError,
        r"`n_objects` must be >= 1",
    ),
    (
        "alloc max_sizes 0 (was: numpy reduction error)",
        lambda: _vc().optimal_allocation(100, {"task": 1.0}, max_sizes={"task": 0}),
        ValueError,
        r"`max_sizes\['task'\]` must be >= 1",
    ),
    (
        "alloc max_sizes facet (was: ignored)",
        lambda: _vc().optimal_allocation(100, {"task": 1.0}, max_sizes={"judge": 3}),
        ValueError,
        r"`max_sizes`: 'judge' is not a facet",
    ),
    ("coefficients ci", lambda: _vc().coefficients(ci="bca"), ValueError, r"`ci` must be one of"),
    # ---- power and allocation
    (
        "power n_runs 1.5 (was: silent)",
        lambda: F.paired_power(0.1, 10, n_runs=1.5, **KW),
        ValueError,
        r"`n_runs` must be integers >= 1",
    ),
    (
        "power effect NaN (was: NaN power)",
        lambda: F.paired_power(np.nan, 10, **KW),
        ValueError,
        r"`effect` must be finite numbers",
    ),
    (
        "power sigma inf (was: silent)",
        lambda: F.paired_power(0.1, 10, sigma2_interaction=np.inf, sigma2_residual=0.1),
        ValueError,
        r"`sigma2_interaction` must be a finite number",
    ),
    (
        "power n_tasks text (was: parsed)",
        lambda: F.paired_power(0.1, "10", **KW),
        TypeError,
        r"`n_tasks` must be integers >= 2",
    ),
    (
        "sd n_runs NaN (was: NaN)",
        lambda: F.sd_paired_diff(np.nan, **KW),
        ValueError,
        r"`n_runs` must be integers >= 1",
    ),
    (
        "sigma list (was: a list repeated by 2 *)",
        lambda: F.sd_paired_diff(1, sigma2_interaction=[0.1, 0.2], sigma2_residual=0.1),
        TypeError,
        r"`sigma2_interaction` must be a number",
    ),
    (
        "tfp effect array (was: numpy truth value)",
        lambda: F.tasks_for_power([0.1, 0.2], **KW),
        TypeError,
        r"`effect` must be a number",
    ),
    (
        "tfp max_tasks bool",
        lambda: F.tasks_for_power(0.1, max_tasks=True, **KW),
        TypeError,
        r"`max_tasks` must be an integer",
    ),
    (
        "mde n_tasks NaN (was: int(NaN))",
        lambda: F.minimum_detectable_effect(np.nan, **KW),
        TypeError,
        r"`n_tasks` must be an integer",
    ),
    (
        "runs cost inf (was: R* = inf)",
        lambda: F.optimal_runs(cost_task=np.inf, cost_run=1.0, **KW),
        ValueError,
        r"`cost_task` must be a finite number",
    ),
    (
        "runs no variance (was: inf)",
        lambda: F.optimal_runs(
            cost_task=1.0, cost_run=1.0, sigma2_interaction=0, sigma2_residual=0
        ),
        ValueError,
        r"both 0",
    ),
    (
        "alloc budget inf (was: int(NaN))",
        lambda: F.optimal_allocation(np.inf, cost_task=1.0, cost_run=1.0, **KW),
        ValueError,
        r"`budget` must be a finite number",
    ),
    (
        "n normal sd 0 (was: 0 tasks)",
        lambda: F.sample_size_normal(0.1, paired=True, sd_diff=0.0),
        ValueError,
        r"`sd_diff` must be > 0",
    ),
    (
        "n normal sd < 0 (was: squared away)",
        lambda: F.sample_size_normal(0.1, paired=True, sd_diff=-1.0),
        ValueError,
        r"`sd_diff` must be > 0",
    ),
    (
        "n normal paired text (was: truthy)",
        lambda: F.sample_size_normal(0.1, paired="yes", discordance=0.2),
        TypeError,
        r"`paired` must be True or False",
    ),
    (
        "n normal no variance (was: 0 tasks)",
        lambda: F.sample_size_normal(1.0, paired=False, p_a=0.0, p_b=1.0),
        ValueError,
        r"zero variance",
    ),
    (
        "n normal sd NaN (was: int(NaN))",
        lambda: F.sample_size_normal(0.1, paired=True, sd_diff=np.nan),
        ValueError,
        r"`sd_diff` must be a finite number",
    ),
    # ---- profiles
    (
        "quantiles no task (was: numpy reshape)",
        lambda: F.quantile_ci(LAT.isel(task=[])),
        ValueError,
        r"`data` has no tasks",
    ),
    (
        "quantiles q empty (was: empty result)",
        lambda: F.quantile_ci(LAT, q=[]),
        ValueError,
        r"`q` must be levels",
    ),
    (
        "quantiles text values (was: parsed)",
        lambda: F.quantile_ci(LAT.latency.astype(str), var=None),
        TypeError,
        r"`data` must hold numbers",
    ),
    (
        "quantiles booleans (was: taken as 0/1)",
        lambda: F.quantile_ci(LAT.latency > 1, var=None),
        TypeError,
        r"got booleans",
    ),
    (
        "quantiles negative latency (was: silent)",
        lambda: F.quantile_ci(LAT.assign(latency=-LAT.latency)),
        ValueError,
        r"`data.latency` must be >= 0",
    ),
    (
        "mean negative cost (was: silent)",
        lambda: F.mean_ci(LAT.assign(cost=-LAT.cost), n_resamples=50, rng=0),
        ValueError,
        r"`data.cost` must be >= 0",
    ),
    (
        "mean text (was: numpy conversion)",
        lambda: F.mean_ci(LAT.cost.astype(str), var=None),
        TypeError,
        r"`data` must hold numbers",
    ),
    (
        "frontier negative cost (was: silent)",
        lambda: F.pareto_frontier(LAT.assign(cost=-LAT.cost), n_resamples=50, rng=0),
        ValueError,
        r"`data.cost` must be >= 0",
    ),
    (
        "frontier infinite cost (was: silent)",
        lambda: F.pareto_frontier(
            LAT.assign(cost=LAT.cost.where(LAT.task != LAT.task[0], np.inf)), n_resamples=50, rng=0
        ),
        ValueError,
        r"`data.cost` must be finite",
    ),
    (
        "frontier text cost (was: parsed)",
        lambda: F.pareto_frontier(LAT.assign(cost=LAT.cost.astype(str)), n_resamples=50, rng=0),
        TypeError,
        r"`data.cost` must hold numbers",
    ),
    (
        "frontier dims (was: xarray error)",
        lambda: F.pareto_frontier(LAT.rename(run="trial"), n_resamples=50, rng=0),
        ValueError,
        r"`data.score` must have dims",
    ),
    (
        "frontier no task (was: `n_tasks`)",
        lambda: F.pareto_frontier(LAT.isel(task=[]), n_resamples=50, rng=0),
        ValueError,
        r"`data` has no tasks",
    ),
    (
        "reliability no task (was: `n_tasks`)",
        lambda: F.reliability_profile(DS.isel(task=[]), n_resamples=50, rng=0),
        ValueError,
        r"`data` has no tasks",
    ),
    (
        "reliability k=1 (was: accuracy as consistency)",
        lambda: F.reliability_profile(DS, k=1),
        ValueError,
        r"`k` must be >= 2",
    ),
    (
        "reliability text confidence (was: parsed)",
        lambda: F.reliability_profile(
            DS.assign(confidence=DS.score.astype(str)), n_resamples=50, rng=0
        ),
        TypeError,
        r"`data.confidence` must hold numbers",
    ),
    (
        "reliability bins",
        lambda: F.reliability_profile(DS, bins=[0, np.nan, 1]),
        ValueError,
        r"`bins` must be",
    ),
    # ---- judges
    (
        "metrics empty (was: numpy reshape)",
        lambda: F.classification_metrics([], []),
        ValueError,
        r"`y_true` has no items",
    ),
    (
        "metrics text 0/1 (was: parsed)",
        lambda: F.classification_metrics(Y.astype(str), P),
        ValueError,
        r"`y_true` must hold 0/1 or booleans",
    ),
    (
        "metrics beta text (was: numpy ufunc)",
        lambda: F.classification_metrics(Y, P, beta="2"),
        TypeError,
        r"`beta` must be a number",
    ),
    (
        "metrics beta bool",
        lambda: F.classification_metrics(Y, P, beta=True),
        TypeError,
        r"`beta` must be a number",
    ),
    (
        "metrics labelled items differ",
        lambda: F.classification_metrics(
            xr.DataArray(Y, dims="item", coords={"item": list("abcdefgh")}),
            xr.DataArray(P, dims="item", coords={"item": list("abcdefgz")}),
        ),
        ValueError,
        r"label different items",
    ),
    (
        "curve empty (was: IndexError)",
        lambda: F.pr_curve([], []),
        ValueError,
        r"`y_true` has no items",
    ),
    (
        "curve text scores (was: parsed)",
        lambda: F.pr_curve(Y, SC.astype(str)),
        TypeError,
        r"`score` must hold numbers",
    ),
    (
        "threshold target bool (was: 1)",
        lambda: F.threshold_for_recall(Y, SC, target=True),
        TypeError,
        r"`target` must be a number",
    ),
    (
        "kappa empty (was: numpy reshape)",
        lambda: F.cohen_kappa([], []),
        ValueError,
        r"`rater_a` has no items",
    ),
    (
        "kappa 1 and '1' (was: merged)",
        lambda: F.cohen_kappa([1, 2, 1, 2], ["1", "2", "2", "2"]),
        ValueError,
        r"mixes labels of kinds",
    ),
    (
        "kappa repeated categories (was: an empty category)",
        lambda: F.cohen_kappa(["a", "b"], ["a", "b"], categories=["a", "a", "b"]),
        ValueError,
        r"`categories` must not repeat",
    ),
    ("fleiss empty", lambda: F.fleiss_kappa(np.empty((0, 3))), ValueError, r"`ratings` is empty"),
    (
        "rubric text (was: numpy ufunc)",
        lambda: F.rubric_summary(RUB.astype(str)),
        TypeError,
        r"must hold numbers",
    ),
    (
        "rubric bottom above the scale (was: all at the bottom)",
        lambda: F.rubric_summary(RUB, bottom=7),
        ValueError,
        r"`bottom` must be <= 5",
    ),
    (
        "rubric bottom NaN (was: silent)",
        lambda: F.rubric_summary(RUB, bottom=np.nan),
        ValueError,
        r"`bottom` must be a finite number",
    ),
    (
        "judge setup of a dict (was: AttributeError)",
        lambda: F.check_same_judge({"judge_model": "x"}),
        TypeError,
        r"`datasets` must be xarray",
    ),
    # ---- pairwise
    (
        "win rate empty (was: numpy reshape)",
        lambda: F.win_rate(BAT.isel(comparison=[]), n_resamples=20, rng=0),
        ValueError,
        r"`pairs` holds no comparison",
    ),
    (
        "elo empty (was: the initial ratings)",
        lambda: F.online_elo(BAT.isel(comparison=[])),
        ValueError,
        r"`pairs` holds no comparison",
    ),
    (
        "elo initial NaN (was: NaN ratings)",
        lambda: F.online_elo(BAT, initial=np.nan, n_orders=0),
        ValueError,
        r"`initial` must be a finite number",
    ),
    (
        "bt center text (was: numpy ufunc)",
        lambda: F.fit_bradley_terry_ml(BAT, center="1000"),
        TypeError,
        r"`center` must be a number",
    ),
    (
        "bt center NaN (was: NaN abilities)",
        lambda: F.fit_bradley_terry_ml(BAT, center=np.nan),
        ValueError,
        r"`center` must be a finite number",
    ),
    (
        "bt home text (was: truthy)",
        lambda: F.fit_bradley_terry_ml(BAT, home="yes"),
        TypeError,
        r"`home` must be True or False",
    ),
    (
        "bt tol bool",
        lambda: F.fit_bradley_terry_ml(BAT, tol=True),
        TypeError,
        r"`tol` must be a number",
    ),
    (
        "bt task NaN (was: one task 'nan')",
        lambda: F.fit_bradley_terry_ml(
            BAT.assign(task=BAT.task.astype(object).where(BAT.comparison > 0)),
            resample="task",
            n_resamples=20,
            rng=0,
        ),
        ValueError,
        r"`pairs.task` has 1 missing labels",
    ),
    (
        "position task NaN (was: one task 'nan')",
        lambda: F.position_consistency(
            BAT.assign(task=BAT.task.astype(object).where(BAT.comparison > 1))
        ),
        ValueError,
        r"`pairs.task` has 2 missing labels",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "pattern"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_refused_naming_the_argument(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_labelled_items_are_matched_by_label():
    # the same items in another order: paired by label, as scikit-learn on aligned arrays
    skm = pytest.importorskip("sklearn.metrics")
    items = list("abcdefgh")
    yt = xr.DataArray(Y, dims="item", coords={"item": items})
    yp = xr.DataArray(P[::-1], dims="item", coords={"item": items[::-1]})
    r = F.classification_metrics(yt, yp, n_resamples=50, rng=0, method="percentile")
    assert float(r.estimate.sel(metric="precision")) == pytest.approx(skm.precision_score(Y, P))
    assert float(r.estimate.sel(metric="recall")) == pytest.approx(skm.recall_score(Y, P))


def test_agents_without_values_are_named():
    from hierbench.freq import EmptySampleWarning

    with pytest.warns(EmptySampleWarning, match="3 agents have no latency"):
        r = F.quantile_ci(LAT.assign(latency=LAT.latency * np.nan))
    assert np.isnan(r.estimate.values).all()
    with pytest.warns(EmptySampleWarning, match="3 agents have no scored run"):
        F.reliability_profile(DS.assign(score=DS.score * np.nan), n_resamples=20, rng=0)
