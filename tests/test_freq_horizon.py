"""Tests of METR's time horizon and the doubling time (hierbench.freq.time_horizon, doubling_time).

Independent references: the ``invsqrt_task_weight`` column METR ships in its
run file, scikit-learn's ``LogisticRegression(C = 1 / 0.1)`` (the fit METR
describes) and statsmodels' GLM on the raw CSV, numpy's polyfit for the trend,
METR's per-replicate doubling-time rule (``compute_bootstrap_confidence_region``)
re-written here as a loop of polyfits, and hand counts on the raw file.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench._base import HierbenchError
from hierbench._base import HierbenchWarning
from hierbench._base import UndefinedWarning
from hierbench.data import load_metr
from hierbench.freq import ExtrapolatedHorizonWarning
from hierbench.freq import ExtremeHorizonWarning
from hierbench.freq import doubling_time
from hierbench.freq import metr_run_weights
from hierbench.freq import time_horizon


@pytest.fixture(scope="module")
def metr(shared_data):
    csv = pd.read_csv(shared_data / "metr" / "metr_all_runs_2025-02-27_19b0311.csv.gz")
    return load_metr(shared_data), csv[csv["alias"] != "human"]


def test_run_weights_reproduce_the_column_metr_ships(metr):
    ds, csv = metr
    w = metr_run_weights(ds).max("run").to_series().dropna()
    ref = csv.groupby(["alias", "task_id"])["invsqrt_task_weight"].first()
    ref.index.names = ["agent", "task"]
    j = pd.concat([w.rename("ours"), ref.rename("metr")], axis=1, join="inner")
    assert len(j) == len(ref) == len(w)
    np.testing.assert_allclose(j["ours"], j["metr"], rtol=1e-6)
    np.testing.assert_allclose(metr_run_weights(ds).sum(("task", "run")).values, 1.0)


def _sklearn_horizons(csv, reg):
    from sklearn.linear_model import LogisticRegression

    out = {}
    for a, g in csv.groupby("alias"):
        if g["score_binarized"].nunique() < 2:
            continue
        m = LogisticRegression(C=1 / reg, tol=1e-12, max_iter=10_000)
        m.fit(np.log2(g["human_minutes"].to_numpy())[:, None], g["score_binarized"], sample_weight=g["invsqrt_task_weight"])
        out[a] = [2 ** ((np.log(p / (1 - p)) - m.intercept_[0]) / m.coef_[0, 0]) for p in (0.5, 0.8)]
    return out


def test_horizons_match_scikit_learn_on_the_raw_file(metr):
    ds, csv = metr
    with pytest.warns(ExtremeHorizonWarning, match=r"\['davinci-002'\] failed every run \(horizon 0\)"):
        res = time_horizon(ds, n_resamples=0)
    ref = _sklearn_horizons(csv, 0.1)
    assert set(ref) == set(res.estimate.agent.values) - {"davinci-002"}
    for a, (h50, h80) in ref.items():
        np.testing.assert_allclose(res.estimate.sel(agent=a).values, [h50, h80], rtol=1e-6)
    assert float(res.estimate.sel(agent="davinci-002", success=0.5)) == 0.0


def test_unpenalised_horizons_match_statsmodels_glm(metr):
    import statsmodels.api as sm

    ds, csv = metr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtremeHorizonWarning)
        warnings.simplefilter("ignore", ExtrapolatedHorizonWarning)
        res = time_horizon(ds, regularization=0.0, n_resamples=0, success=[0.5])
    for a in ["GPT-4o", "o1", "Claude 3.5 Sonnet (Old)"]:
        g = csv[csv["alias"] == a]
        X = sm.add_constant(np.log2(g["human_minutes"].to_numpy()))
        fit = sm.GLM(g["score_binarized"].to_numpy(), X, family=sm.families.Binomial(),
                     var_weights=g["invsqrt_task_weight"].to_numpy()).fit(tol=1e-12)  # fmt: skip
        a0, b = fit.params
        np.testing.assert_allclose(float(res.estimate.sel(agent=a, success=0.5)), 2 ** (-a0 / b), rtol=1e-6)


def test_bootstrap_is_seeded_and_its_intervals_hold_the_estimates(metr):
    ds, _ = metr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtremeHorizonWarning)
        warnings.simplefilter("ignore", ExtrapolatedHorizonWarning)
        r1 = time_horizon(ds, n_resamples=60, rng=5)
        r2 = time_horizon(ds, n_resamples=60, rng=5)
    np.testing.assert_array_equal(r1.resamples.values, r2.resamples.values)
    assert r1.ci.attrs["ci_kind"] == "percentile" and "family > task > run" in r1.ci.attrs["ci_detail"]
    fin = r1.estimate.sel(success=0.5).drop_sel(agent=["davinci-002", "gpt-3.5-turbo-instruct"])
    ci = r1.ci.sel(success=0.5, agent=fin.agent)
    assert bool(((ci.sel(ci_bound="lower") <= fin) & (fin <= ci.sel(ci_bound="upper"))).all())


@pytest.mark.slow
def test_bootstrap_spread_matches_the_spread_of_refits_on_new_tasks():
    """A simulation with known truth: each replicate data set draws new task lengths and runs;
    the bootstrap sd of log2 h50 (task and run levels) is within 35% of the sd of h50 across
    the refits (Monte Carlo: 150 simulated data sets, sd of an sd estimate ~6%). The refits by
    numpy's Newton (time_horizon's fit on these data; 150 of its calls were 85% of the test).
    """
    rng = np.random.default_rng(11)

    def make():
        mins = 2.0 ** rng.uniform(0, 9, 60)
        p = 1 / (1 + np.exp(-(2.5 - 0.5 * np.log2(mins))))
        y = (rng.random((1, 60, 4)) < p[None, :, None]) * 1.0
        return xr.Dataset({"score": (("agent", "task", "run"), y)},
                          coords={"agent": ["a"], "task": [f"t{i}" for i in range(60)], "human_minutes": ("task", mins),
                                  "cluster": ("task", [f"f{i}" for i in range(60)])})  # fmt: skip

    def log2_h50(ds):
        """The unweighted logistic fit of the runs on log2 minutes by Newton's method (numpy): -a / b.

        Every task has 4 runs and a family of its own, so time_horizon's task weights are equal and
        its unregularised fit is this one (checked below on the first three data sets).
        """
        x = np.log2(ds["human_minutes"].values)
        k, n = ds["score"].values[0].sum(1), ds.sizes["run"]
        X = np.column_stack([np.ones_like(x), x])
        b = np.zeros(2)
        for _ in range(50):
            p = 1 / (1 + np.exp(-X @ b))
            step = np.linalg.solve(X.T @ (X * (n * p * (1 - p))[:, None]), X.T @ (k - n * p))
            b += step
            if np.abs(step).max() < 1e-12:
                break
        return -b[0] / b[1]

    data = [make() for _ in range(150)]
    refits = [log2_h50(ds) for ds in data]
    for ds, want in zip(data[:3], refits[:3], strict=True):
        got = np.log2(float(time_horizon(ds, n_resamples=0, regularization=0.0).estimate[0, 0]))
        assert got == pytest.approx(want, rel=1e-9, abs=1e-12)
    boot = time_horizon(make(), n_resamples=400, regularization=0.0, levels=("task", "run"), rng=3)
    sd_boot = float(np.nanstd(np.log2(boot.resamples.values[:, 0, 0])))
    assert abs(sd_boot / np.std(refits) - 1) < 0.35


def _metr_horizons(metr, shared_data, n_resamples: int, rng: int):
    """METR's horizons (its extreme and extrapolated ones not warned) and its release dates."""
    import yaml

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtremeHorizonWarning)
        warnings.simplefilter("ignore", ExtrapolatedHorizonWarning)
        res = time_horizon(metr[0], n_resamples=n_resamples, rng=rng)
    return res, yaml.safe_load((shared_data / "metr" / "release_dates_19b0311.yaml").read_text())


def test_doubling_time_matches_a_least_squares_line_through_the_frontier(metr, shared_data):
    res, dates = _metr_horizons(metr, shared_data, 50, 2)
    with pytest.raises(HierbenchError, match=r"no date for agents \['davinci-002'\]"):
        doubling_time(res, dates)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        dt = doubling_time(res, dates, missing="skip")
    floor = [str(w.message) for w in seen if w.category is ExtrapolatedHorizonWarning]
    assert any("['gpt-3.5-turbo-instruct'] have a 0.5 horizon below 0.001 minutes" in m for m in floor)
    assert not [w for w in seen if w.category is HierbenchWarning]  # the estimate is not outside its interval
    assert dt.agents_below_floor == ["gpt-3.5-turbo-instruct"]
    # frontier by hand: running maximum of the 50% horizon over release dates, through the agents whose
    # horizon is at least METR's 0.001-minute floor (gpt-3.5-turbo-instruct's is 1.8e-6 minutes)
    h = res.estimate.sel(success=0.5).to_series().drop("davinci-002")
    h = h[h >= 1e-3]
    d = pd.to_datetime(pd.Series({a: dates["date"][a] for a in h.index}))
    order = d.sort_values().index
    best, front = -np.inf, []
    for a in order:
        same = d[d == d[a]].index
        best = max(best, h[same].max())
        if h[a] >= best:
            front.append(a)
    assert sorted(dt.agents) == sorted(front) and dt.agents_without_date == ["davinci-002"]
    days = (d[front] - pd.Timestamp("1970-01-01")).dt.days.to_numpy()
    slope = np.polyfit(days, np.log(h[front].to_numpy()), 1)[0]
    assert abs(float(dt.estimate) - np.log(2) / slope) < 1e-6
    assert dt.ci.attrs["ci_kind"] == "percentile"


def _metr_rule(days, boot):
    """METR's compute_bootstrap_confidence_region, re-written: per replicate drop NaN / inf / < 1e-3 minute
    horizons, fit ln h on days through the rest if at least 2 remain, keep ln 2 / slope if positive.
    """
    kept, few, nonpos = [], 0, 0
    for r in boot:
        ok = np.isfinite(r) & (r >= 1e-3)
        if ok.sum() < 2:
            few += 1
            continue
        d = np.log(2) / np.polyfit(days[ok], np.log(r[ok]), 1)[0]
        if d > 0:
            kept.append(d)
        else:
            nonpos += 1
    return np.array(kept), few, nonpos


def test_doubling_interval_is_metr_bootstrap_rule_and_the_estimate_follows_the_same_rule(metr, shared_data):
    """gpt-3.5-turbo-instruct's 2019+ horizon is 1.8e-6 minutes: the replicates' rule drops it, and so the point line.

    Before, the point line went through it (44 days) while the replicates mostly dropped it ([71, 299]).
    """
    res, dates = _metr_horizons(metr, shared_data, 200, 21)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        dt = doubling_time(res, dates, missing="skip")
    days = np.array([(pd.Timestamp(dates["date"][a]) - pd.Timestamp("1970-01-01")).days for a in dt.agents], float)
    boot = res.resamples.sel(agent=dt.agents, success=0.5).values
    kept, few, nonpos = _metr_rule(days, boot)
    np.testing.assert_allclose(dt.ci.values, np.percentile(kept, [2.5, 97.5]), rtol=1e-9)
    assert (dt.n_kept, dt.n_too_few, dt.n_nonpositive) == (kept.size, few, nonpos)
    dropped = (~(np.isfinite(boot) & (boot >= 1e-3))).sum(0)
    assert dt.n_agent_dropped == dropped.tolist()
    # the point estimate is METR's per-replicate rule applied to the point horizons of the old line's agents
    old = [*dt.agents, "gpt-3.5-turbo-instruct"]
    old_days = np.array([(pd.Timestamp(dates["date"][a]) - pd.Timestamp("1970-01-01")).days for a in old], float)
    point, _, _ = _metr_rule(old_days, res.estimate.sel(agent=old, success=0.5).values[None, :])
    assert abs(float(dt.estimate) - point[0]) < 1e-9 * point[0]
    assert float(dt.ci[0]) <= float(dt.estimate) <= float(dt.ci[1])
    assert not [w for w in seen if w.category is HierbenchWarning]
    assert "METR's bootstrap rule" in dt.ci.attrs["ci_detail"] and f"{kept.size} kept" in dt.ci.attrs["ci_detail"]


def test_bad_inputs_are_named():
    ds = xr.Dataset({"score": (("agent", "task", "run"), np.ones((1, 2, 1)))},
                    coords={"agent": ["a"], "task": ["t1", "t2"], "human_minutes": ("task", [1.0, 0.0]),
                            "cluster": ("task", ["f", "f"])})  # fmt: skip
    with pytest.raises(HierbenchError, match=r"`human_minutes` must be positive.*\['t2'\]"):
        time_horizon(ds)
    with pytest.raises(HierbenchError, match="`minutes` must name a coord along task"):
        time_horizon(ds, minutes="length")
    with pytest.raises(HierbenchError, match=r"`success` probabilities must lie in \(0, 1\)"):
        time_horizon(ds.assign_coords(human_minutes=("task", [1.0, 2.0])), success=[1.0])


def test_a_trend_through_horizons_beyond_the_task_lengths_is_flagged(metr, shared_data):
    """gpt-3.5-turbo-instruct (3 successes in 485 runs) is the only frontier agent before 2023; its 50% horizon
    lies below the shortest task in the raw file and below METR's 0.001-minute floor, so the 2019+ trend leaves it
    out, saying so, and the 2023+ one never had it. The 80% horizons of GPT-4 0314 and GPT-4o lie below the
    shortest task but above the floor: the 80% line goes through them, flagged.
    """
    import yaml

    ds, csv = metr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExtremeHorizonWarning)
        warnings.simplefilter("ignore", ExtrapolatedHorizonWarning)
        res = time_horizon(ds, n_resamples=0)
    shortest, longest = csv["human_minutes"].min(), csv["human_minutes"].max()
    assert res.options["minutes_range"] == pytest.approx([shortest, longest])
    assert float(res.estimate.sel(agent="gpt-3.5-turbo-instruct", success=0.5)) < shortest
    dates = yaml.safe_load((shared_data / "metr" / "release_dates_19b0311.yaml").read_text())
    measured = f"{shortest:g}-{longest:g} minutes"
    span = re.escape(measured)
    below = re.escape("(gpt-3.5-turbo-instruct ") + r"[0-9.e-]+" + re.escape(
        f" minutes; the shortest task measured takes {shortest:g} minutes)")
    with pytest.warns(ExtrapolatedHorizonWarning, match=below):
        assert "gpt-3.5-turbo-instruct" not in doubling_time(res, dates, missing="skip").agents
    with pytest.warns(ExtrapolatedHorizonWarning, match=span) as seen:
        at80 = doubling_time(res, dates, missing="skip", success=0.8)
    h80 = res.estimate.sel(success=0.8, agent=at80.agents).to_series()
    low80 = h80[(h80 >= 1e-3) & (h80 < shortest)]
    assert len(low80) == 2  # GPT-4 0314 and GPT-4o, about 0.3 minutes
    note = next(str(w.message) for w in seen if measured in str(w.message))
    assert all(f"{a} {v:.3g}" in note for a, v in low80.items())
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtrapolatedHorizonWarning)
        late = doubling_time(res, dates, missing="skip", after="2023-01-01")
    assert "gpt-3.5-turbo-instruct" not in late.agents


def test_a_trend_through_fewer_than_two_agents_is_refused_after_naming_the_unusable_ones():
    """By hand: b's horizon is 0 (unusable), c (2 min, released after a's 4 min) is off the frontier: only a is left."""
    from hierbench._base import UndefinedWarning
    from hierbench.freq import TimeHorizonResult

    h = xr.DataArray([[4.0], [0.0], [2.0]], dims=("agent", "success"), coords={"agent": list("abc"), "success": [0.5]})
    boot = xr.DataArray(np.tile(h.values, (5, 1, 1)), dims=("resample", "agent", "success"), coords=h.coords)
    res = TimeHorizonResult(estimate=h, ci=h.expand_dims(ci_bound=["lower", "upper"], axis=-1), coef=h, resamples=boot)
    dates = {"a": "2024-01-01", "b": "2024-07-01", "c": "2024-12-30"}
    with pytest.warns(UndefinedWarning, match=r"agents \['b'\] have a horizon of 0"):
        with pytest.raises(HierbenchError, match=r"at least 2 agents with a date and a positive horizon; got \['a'\]"):
            doubling_time(res, dates)
    with pytest.warns(UndefinedWarning, match=r"\['b'\]"):
        assert doubling_time(res, dates, frontier=False).agents == ["a", "c"]  # c back on the line, b still out


def _one_agent(scores, mins, agents=("a",)):
    T = len(mins)
    return xr.Dataset({"score": (("agent", "task", "run"), np.asarray(scores, float))},
                      coords={"agent": list(agents), "task": [f"t{i}" for i in range(T)],
                              "human_minutes": ("task", np.asarray(mins, float)),
                              "cluster": ("task", [f"f{i}" for i in range(T)])})  # fmt: skip


def test_a_replicate_whose_slope_is_not_negative_enters_at_the_limit_horizon():
    """levels=() resamples nothing: every replicate is the data. Agent r's success rises with length (sklearn's
    slope > 0) and its fitted success at the shortest task is 0.08 (sklearn), so its replicates sit at inf for
    p = 0.05 and at 0 for p = 0.5; z failed every run (0), w succeeded on every run (inf). Hand counts: all 30.
    """
    from sklearn.linear_model import LogisticRegression

    mins = np.geomspace(1, 480, 12)
    k = np.array([0, 1, 0, 1, 1, 2, 1, 2, 3, 2, 3, 4])
    rise = (np.arange(4)[None, :] < k[:, None]) * 1.0
    ds = _one_agent(np.stack([rise, np.zeros((12, 4)), np.ones((12, 4))]), mins, agents=("r", "z", "w"))
    x = np.repeat(np.log2(mins), 4)
    m = LogisticRegression(C=10, tol=1e-12, max_iter=10_000).fit(x[:, None], rise.ravel(), sample_weight=np.full(48, 1 / 48))
    at_shortest = 1 / (1 + np.exp(-(m.intercept_[0] + m.coef_[0, 0] * x.min())))
    assert m.coef_[0, 0] > 0 and 0.05 < at_shortest < 0.5
    with pytest.warns(UndefinedWarning, match=r"agents \['r'\] succeed more often on longer tasks .*not a horizon"):
        res = time_horizon(ds, success=(0.05, 0.5), levels=(), n_resamples=30, rng=0)
    np.testing.assert_array_equal(res.resamples.sel(agent="r").values, np.tile([np.inf, 0.0], (30, 1)))
    assert np.isnan(res.estimate.sel(agent="r")).all() and np.isnan(res.ci.sel(agent="r")).all()
    assert res.n_undefined.values.tolist() == [30, 30, 30] and res.n_skipped.values.tolist() == [0, 0, 0]
    assert res.ci.sel(agent="z").values.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert np.isposinf(res.ci.sel(agent="w").values).all() and np.isposinf(res.estimate.sel(agent="w")).all()
    text = repr(res)
    assert "horizon in human minutes" in text
    assert "r: one outcome or a slope not negative in 30 of 30 resamples; horizon 0 or infinite there" in text
    assert "z: one outcome or a slope not negative in 30 of 30 resamples; horizon 0 there" in text
    assert "r 30, z 30, w 30 of 30" in res.ci.attrs["ci_detail"]


def test_davinci_002_failed_every_run_so_every_replicate_is_0_and_flagged(metr):
    ds, csv = metr
    runs = csv[csv["alias"] == "davinci-002"]["score_binarized"]
    assert len(runs) == 68 and runs.sum() == 0  # hand count on the raw file
    with pytest.warns(ExtremeHorizonWarning), pytest.warns(ExtrapolatedHorizonWarning, match=r"\['o1'\]"):
        res = time_horizon(ds.sel(agent=["davinci-002", "o1"]), n_resamples=40, rng=3)
    assert res.ci.sel(agent="davinci-002").values.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert int(res.n_undefined.sel(agent="davinci-002")) == 40
    assert "davinci-002: one outcome or a slope not negative in 40 of 40 resamples; horizon 0 there" in repr(res)


def test_tasks_of_one_length_give_no_horizon_rather_than_0_or_infinity(metr):
    """Finding 3: every task 30 minutes (1 distinct length, by np.unique), so the slope is not identified."""
    ds, _ = metr
    same = ds.sel(agent=["GPT-4o", "o1", "Claude 3 Opus"]).assign_coords(human_minutes=("task", np.full(83, 30.0)))
    assert np.unique(same["human_minutes"].values).size == 1
    with pytest.warns(UndefinedWarning, match=r"\['GPT-4o', 'o1', 'Claude 3 Opus'\] ran tasks of fewer than 2 distinct"):
        res = time_horizon(same, n_resamples=20, rng=0)
    assert np.isnan(res.estimate.values).all() and np.isnan(res.ci.values).all()
    assert res.n_skipped.values.tolist() == [20, 20, 20]


def test_separated_outcomes_without_a_penalty_have_no_horizon_and_leak_no_numpy_warning():
    """Finding 4: successes only below 30 minutes (hand: the longest success 25.8 < the shortest failure 35.7),
    so the unpenalised likelihood has no maximum. METR's penalty gives scikit-learn's C = 10 fit.
    """
    from sklearn.linear_model import LogisticRegression

    mins = np.geomspace(1, 480, 20)
    y = np.repeat((mins < 30)[:, None] * 1.0, 3, axis=1)
    assert mins[mins < 30].max() < mins[mins >= 30].min()
    ds = _one_agent(y[None], mins)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.warns(UndefinedWarning, match=r"did not converge \(regularization=0\).*regularization > 0"):
            res = time_horizon(ds, regularization=0.0, n_resamples=50, rng=0)
        assert np.isnan(res.estimate.values).all() and np.isnan(res.ci.values).all()
        pen = time_horizon(ds, n_resamples=0)
    x = np.repeat(np.log2(mins), 3)
    m = LogisticRegression(C=10, tol=1e-12, max_iter=10_000).fit(x[:, None], y.ravel(), sample_weight=np.full(60, 1 / 60))
    np.testing.assert_allclose(float(pen.estimate.sel(agent="a", success=0.5)), 2 ** (-m.intercept_[0] / m.coef_[0, 0]), rtol=1e-6)


def test_time_horizon_flags_horizons_outside_the_task_lengths(metr):
    """Finding 6: scikit-learn's horizons against the raw file's shortest and longest task."""
    ds, csv = metr
    ref = _sklearn_horizons(csv, 0.1)
    lo, hi = csv["human_minutes"].min(), csv["human_minutes"].max()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = time_horizon(ds, n_resamples=0)
    msg = [str(w.message) for w in seen if w.category is ExtrapolatedHorizonWarning]
    assert len(msg) == 1 and "gpt-3.5-turbo-instruct 1.84e-06 at 0.5" in msg[0]
    for a, (h50, h80) in ref.items():
        want = [not (lo <= h <= hi) for h in (h50, h80)]
        assert res.extrapolated.sel(agent=a).values.tolist() == want, a
    frame = res.to_frame()
    assert bool(frame.loc[("gpt-3.5-turbo-instruct", 0.5), "extrapolated"])


def test_a_missing_family_coord_is_refused_under_its_own_name(metr):
    ds, _ = metr
    with pytest.raises(ValueError, match="`family` must name a coord along 'task'; got 'task_family'"):
        time_horizon(ds, family="task_family", n_resamples=0)


def test_a_bootstrap_over_few_families_or_tasks_is_warned_and_stated_in_the_interval(metr):
    """Families' worth by the raw file's task counts ((sum n)^2 / sum n^2, by pandas): METR's 36 are worth
    22.6, at least the cluster bootstrap's 20, so silent; 6 of them, or 8 tasks resampled alone, are not.
    """
    from hierbench._base import SmallSampleWarning

    ds, csv = metr
    sizes = csv.groupby("task_family")["task_id"].nunique()
    assert len(sizes) == 36 and sizes.sum() ** 2 / (sizes**2).sum() == pytest.approx(22.587, abs=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SmallSampleWarning)
        warnings.simplefilter("ignore", HierbenchWarning)
        time_horizon(ds, n_resamples=5, rng=0)
    six = sorted(sizes.index)[:6]
    worth = sizes[six].sum() ** 2 / (sizes[six] ** 2).sum()
    sub = ds.isel(task=np.flatnonzero(np.isin(ds["cluster"].values, six)))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = time_horizon(sub, n_resamples=5, rng=0)
    few = [str(w.message) for w in seen if w.category is SmallSampleWarning]
    assert len(few) == 1 and f"6 task families (`cluster`), worth {worth:.1f} equal ones" in few[0]
    assert few[0].rstrip(".") in res.ci.attrs["ci_detail"]
    with pytest.warns(SmallSampleWarning, match=r"resamples 8 tasks, fewer than 10"):
        time_horizon(ds.isel(task=slice(0, 8)), n_resamples=5, levels=("task", "run"), rng=0)


def test_an_agent_that_ran_no_task_is_named_as_such_and_leaks_no_numpy_warning(metr):
    ds, _ = metr
    two = ds.sel(agent=["GPT-4o", "o1"]).copy(deep=True)
    two["score"].loc[{"agent": "o1"}] = np.nan
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        warnings.simplefilter("error", RuntimeWarning)
        res = time_horizon(two, n_resamples=5, rng=0)
    undefined = [str(w.message) for w in seen if w.category is UndefinedWarning]
    assert undefined == ["agents ['o1'] ran no task of this data (estimate and interval NaN)"]
    assert np.isnan(res.estimate.sel(agent="o1").values).all() and np.isfinite(res.estimate.sel(agent="GPT-4o").values).all()


def test_a_horizon_below_a_hundredth_of_a_minute_reads_as_such_in_the_repr(metr):
    """gpt-3.5-turbo-instruct's 80% horizon is about 1e-8 minutes (its fitted line barely falls): printed "<0.01",
    not in e-notation; a horizon of minutes keeps its 4 significant digits.
    """
    ds, _ = metr
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = time_horizon(ds.sel(agent=["gpt-3.5-turbo-instruct", "o1-preview"]), n_resamples=20, rng=0)
    tiny = float(res.estimate.sel(agent="gpt-3.5-turbo-instruct", success=0.8))
    assert 0 < tiny < 0.01
    text = repr(res)
    assert "gpt-3.5-turbo-instruct, 0.8: <0.01 [" in text and "e-" not in text
    big = float(res.estimate.sel(agent="o1-preview", success=0.5))
    assert f"o1-preview, 0.5: {big:.4g} [" in text
