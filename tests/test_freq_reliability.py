"""Reliability profile: seed 003's report to the printed digits, bins, ragged tasks, tau-bench."""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.data import from_records
from hierbench.data import load_tau_bench_airline
from hierbench.freq import reliability_profile

# seed 003, "Reliability as its own science": task, ok, ok_perturb, conf, severity
RUNS = [
    ("t1", 1, 1, 0.90, 0),
    ("t1", 1, 1, 0.85, 0),
    ("t1", 1, 0, 0.90, 0),
    ("t2", 1, 0, 0.80, 0),
    ("t2", 0, 0, 0.75, 1),
    ("t2", 1, 1, 0.80, 0),
    ("t3", 0, 0, 0.30, 0),
    ("t3", 0, 0, 0.40, 0),
    ("t3", 1, 0, 0.50, 0),
    ("t4", 0, 0, 0.90, 3),
    ("t4", 1, 1, 0.90, 0),
    ("t4", 0, 0, 0.85, 1),
]


def _seed_ds(runs=RUNS):
    df = pd.DataFrame(runs, columns=["task", "ok", "ok_perturb", "conf", "severity"])
    df["agent"] = "agent"
    df["run"] = df.groupby("task").cumcount()
    return from_records(
        df,
        agent="agent",
        task="task",
        run="run",
        score="ok",
        extra={"score_perturbed": "ok_perturb", "confidence": "conf", "severity": "severity"},
    )


def test_seed_003_reliability_report_to_the_printed_digits():
    r = reliability_profile(_seed_ds(), k=3, bins=(0.0, 0.5, 0.8, 1.01), n_resamples=500, rng=0)
    e = r.estimate.sel(agent="agent").to_series()
    # Output of the seed:
    #   accuracy (pass@1) 58% / consistency pass^3 25% / robustness drop -25 points /
    #   predictability ECE 0.15 / safety harmful runs 25% (severity-weighted 0.42 per run)
    assert f"{e['accuracy']:.0%}" == "58%"
    assert f"{e['consistency']:.0%}" == "25%"
    assert f"{100 * e['robustness_drop']:+.0f}" == "-25"
    assert f"{e['ece']:.2f}" == "0.15"
    assert f"{e['harm_rate']:.0%}" == "25%"
    assert f"{e['harm_severity']:.2f}" == "0.42"
    # Brier by hand: mean of (conf - ok)^2 over the 12 runs
    assert e["brier"] == pytest.approx(np.mean([(c - o) ** 2 for _, o, _, c, _ in RUNS]))
    lo, hi = r.ci.sel(agent="agent", ci_bound="lower"), r.ci.sel(agent="agent", ci_bound="upper")
    assert bool(
        ((lo <= r.estimate.sel(agent="agent")) & (r.estimate.sel(agent="agent") <= hi)).all()
    )
    assert "robustness   drop" in r.table() and r.ci.attrs["ci_kind"] == "percentile"
    # audit F 8.1: the table names its intervals' level and kind (it printed bare [lo, hi])
    head = r.table().splitlines()[0]
    assert head == "estimate  [95% percentile interval]: bootstrap over tasks, 500 resamples (shared by all metrics)"
    r90 = reliability_profile(_seed_ds(), k=3, bins=(0.0, 0.5, 0.8, 1.01), n_resamples=200, prob=0.9, rng=0)
    assert r90.table().startswith("estimate  [90% percentile interval]")


def _ece_brute(conf, ok, edges):
    conf, ok = np.asarray(conf), np.asarray(ok)
    ece = 0.0
    for i, (lo, hi) in enumerate(itertools.pairwise(edges)):
        last = i == len(edges) - 2
        m = (conf >= lo) & ((conf <= hi) if last else (conf < hi))
        if m.any():
            ece += m.mean() * abs(conf[m].mean() - ok[m].mean())
    return ece


def test_bins_are_an_argument():
    conf = [c for *_, c, _ in RUNS]
    ok = [o for _, o, *_ in RUNS]
    for bins in (10, 4, (0.0, 0.6, 1.0)):
        r = reliability_profile(_seed_ds(), bins=bins, n_resamples=50, rng=0)
        edges = np.linspace(0, 1, bins + 1) if isinstance(bins, int) else np.asarray(bins)
        assert float(r.estimate.sel(agent="agent", metric="ece")) == pytest.approx(
            _ece_brute(conf, ok, edges)
        )
    with pytest.raises(ValueError, match="do not cover"):
        reliability_profile(_seed_ds(), bins=(0.0, 0.5, 0.8), n_resamples=50)


def test_ragged_tasks_weigh_the_same_and_missing_inputs_are_left_out():
    runs = RUNS[:3] + RUNS[4:6]  # t1 with 3 runs, t2 with 2
    ds = _seed_ds(runs)[["score"]]
    with pytest.warns(UserWarning, match="fewer runs than k=3"):
        r = reliability_profile(ds, k=3, n_resamples=50, rng=0)
    assert list(r.estimate.metric.values) == ["accuracy", "consistency"]
    assert float(r.estimate.sel(metric="accuracy").item()) == pytest.approx((1 + 0.5) / 2)
    assert float(r.estimate.sel(metric="consistency").item()) == pytest.approx(1.0)  # t2 left out
    assert int(r.n_tasks.sel(metric="consistency").item()) == 1


def test_tau_bench_consistency_is_the_published_pass_hat_4(shared_data):
    ds = load_tau_bench_airline(shared_data)
    r = reliability_profile(ds, n_resamples=300, rng=0)  # defaults: k = 4 runs per task
    e = r.estimate.isel(agent=0).to_series()
    assert round(e["accuracy"], 3) == 0.420  # tau-bench README, pass^1
    assert round(e["consistency"], 3) == 0.200  # pass^4
    assert r.attrs["k"] == 4
    c = ds.score.isel(agent=0).sum("run").values
    assert e["consistency"] == pytest.approx(np.mean([comb(int(x), 4) / comb(4, 4) for x in c]))


def test_bad_input_messages():
    ds = _seed_ds()
    with pytest.raises(ValueError, match="must lie in \\[0, 1\\]"):
        reliability_profile(ds.assign(confidence=ds.confidence * 2))
    with pytest.raises(ValueError, match="must be >= 0"):
        reliability_profile(ds.assign(severity=-ds.severity))
    with pytest.raises(ValueError, match="holding 'score'"):
        reliability_profile(xr.Dataset())
    with pytest.raises(ValueError, match="`bins` must be"):
        reliability_profile(ds, bins=(0.5, 0.2))


def test_one_run_per_cell_has_no_consistency():
    # one run per (agent, task): consistency across runs is undefined; it used to come out
    # equal to accuracy (pass^1) without a word
    from hierbench import UndefinedWarning

    one = _seed_ds([r for i, r in enumerate(RUNS) if i % 3 == 0])[["score"]]
    assert one.sizes["run"] == 1
    with pytest.warns(UndefinedWarning, match="single run: consistency across runs is undefined"):
        r = reliability_profile(one, n_resamples=50, rng=0)
    assert np.isnan(float(r.estimate.sel(metric="consistency").item()))
    assert int(r.n_tasks.sel(metric="consistency").item()) == 0
    # accuracy is still there: t1 1, t2 1, t3 0, t4 0 -> 0.5
    assert float(r.estimate.sel(metric="accuracy").item()) == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"`k` must be >= 2: .* pass\^1 is accuracy; got k=1"):
        reliability_profile(_seed_ds(), k=1, n_resamples=50)


def test_undefined_resamples_are_counted_by_name():
    # agent a stated a confidence on t1 only, so its ECE and Brier are undefined exactly in the
    # resamples that drew no copy of t1; agent b solved t1 and nothing else, so b's accuracy is 0
    # in exactly those resamples too: the hand count, read off another metric. b has no
    # confidence at all: its ECE is NaN on the data itself, not a resample's doing, and is not
    # counted (it used to set the message's "up to" to every resample)
    from hierbench.metrics import UndefinedMetricWarning

    score = np.array([[[1, 0], [0, 1], [1, 1]], [[1, 1], [0, 0], [0, 0]]], dtype=float)
    conf = np.full((2, 3, 2), np.nan)
    conf[0, 0] = 0.7
    dims = ("agent", "task", "run")
    ds = xr.Dataset(
        {"score": (dims, score), "confidence": (dims, conf)},
        coords={"agent": ["a", "b"], "task": ["t1", "t2", "t3"]},
    )
    with pytest.warns(UndefinedMetricWarning) as rec:
        r = reliability_profile(ds, n_resamples=300, rng=0)
    hand = int((r.distribution.sel(agent="b", metric="accuracy") == 0).sum())
    # 300 (2/3)^3 = 88.9 resamples miss t1, binomial SD 7.9 (4 SD)
    assert abs(hand - 300 * (2 / 3) ** 3) < 4 * np.sqrt(300 * (8 / 27) * (19 / 27))
    msg = str(rec[0].message)
    assert f"ece of agent 'a' in {hand} of 300 resamples; brier of agent 'a' in {hand} of 300" in msg
    assert "agent 'b'" not in msg and "300 of 300" not in msg
    assert "give the agent more tasks (or the missing input on more of them)" in msg
    assert np.isnan(float(r.estimate.sel(agent="b", metric="ece")))


def test_an_agent_without_an_input_is_named_with_the_metrics_it_leaves_nan():
    # hand-built: a states a confidence of 0.7 on every run and has perturbed scores; b ran the
    # same tasks with neither; c has no scored run at all (named by its own warning, not again)
    import warnings

    from hierbench.freq import EmptySampleWarning
    from hierbench.metrics import UndefinedMetricWarning

    nan = np.nan
    score = np.array([[[1, 0], [0, 1], [1, 1]], [[1, 1], [0, 0], [0, 0]], [[nan, nan]] * 3])
    conf = np.full((3, 3, 2), nan)
    conf[0] = 0.7
    pert = np.full((3, 3, 2), nan)
    pert[0] = score[0]
    sev = np.where(np.isfinite(score), 0.0, nan)
    dims = ("agent", "task", "run")
    ds = xr.Dataset(
        {"score": (dims, score), "confidence": (dims, conf), "score_perturbed": (dims, pert),
         "severity": (dims, sev)},
        coords={"agent": ["a", "b", "c"], "task": ["t1", "t2", "t3"]},
    )
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        r = reliability_profile(ds, n_resamples=50, rng=0)
    # beside them: the zero-width intervals (a's drop and harm are 0 on every task) and the 3 tasks
    rec = [w for w in rec if w.category in (EmptySampleWarning, UndefinedMetricWarning)]
    assert [w.category for w in rec] == [EmptySampleWarning, UndefinedMetricWarning], rec
    msg = str(rec[1].message)
    assert "robustness_drop of 1 agents ['b'] (no scored run has a `score_perturbed` value)" in msg
    assert "ece and brier of 1 agents ['b'] (no scored run has a `confidence` value)" in msg
    assert "'a'" not in msg and "'c'" not in msg and "harm" not in msg
    e = r.estimate.to_pandas()
    assert e.loc["b", ["robustness_drop", "ece", "brier"]].isna().all()
    # a's by hand: task means 1/2, 1/2, 1 -> accuracy 2/3, all in the bin [0.7, 0.8), so
    # ECE = |0.7 - 2/3|; Brier per task (0.09 + 0.49)/2, the same, 0.09 -> 0.67 / 3
    assert e.loc["a", "ece"] == pytest.approx(0.7 - 2 / 3)
    assert e.loc["a", "brier"] == pytest.approx(0.67 / 3)
    assert e.loc["a", "robustness_drop"] == 0.0 and e.loc["b", "harm_rate"] == 0.0


def test_an_agent_with_no_task_run_k_times_is_named_and_its_consistency_is_nan():
    # agent "b" ran every task once: pass^2 is undefined for it (NaN, named), agent "a" keeps its
    # value, the unbiased C(c, 2) / C(n, 2) averaged over its tasks, computed here by hand
    rows = [("a", "t1", r, s) for r, s in enumerate([1, 1, 0])] + [("a", "t2", r, s) for r, s in enumerate([1, 1, 1])]
    rows += [("b", "t1", 0, 1), ("b", "t2", 0, 0)]
    df = pd.DataFrame(rows, columns=["agent", "task", "run", "ok"])
    ds = from_records(df, agent="agent", task="task", run="run", score="ok")
    with pytest.warns(UserWarning, match=r"consistency of 1 agents \['b'\] \(no task run at least k times\)"):
        r = reliability_profile(ds, k=2, n_resamples=50, rng=0)
    want_a = (comb(2, 2) / comb(3, 2) + comb(3, 2) / comb(3, 2)) / 2
    assert float(r.estimate.sel(agent="a", metric="consistency")) == pytest.approx(want_a)
    assert np.isnan(float(r.estimate.sel(agent="b", metric="consistency")))
