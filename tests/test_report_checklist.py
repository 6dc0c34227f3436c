"""The reporting checklist reads the results the report used (audit X, findings 1-4 and 6).

Each expected value comes from the results' own attrs or the simulated log, never from the
checklist code: what a given bootstrap resampled (``resample_unit``, ``n_clusters``), a given
comparison's unit (``unit``, ``n_units_total``), whether its simultaneous interval holds a
number, a person fit's flag and interval, a time horizon's interval, and which seeds are recorded.
"""

import re
import warnings

import numpy as np
import pytest

from hierbench import freq
from hierbench.report import build
from hierbench.testing import simulate_eval

#: what a test does not read is left out (fast: each test under 2 s)
OUT = {"person_fit": None, "variance": None, "horizon": None}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def _entry(md: str, item: str) -> str:
    rows = md.split("## Reporting checklist")[1].split("\n## ")[0].splitlines()
    return next(_cells(r) for r in rows if r.startswith(f"| {item} "))[1]


def _build(tmp_path, data, given: dict, name: str = "r.md") -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = build(data=data, path=tmp_path / name, freq={**OUT, **given}, n_resamples=99, progress=False)
    return path.read_text()


@pytest.fixture(scope="module")
def clustered():
    data, _ = simulate_eval(n_agents=4, n_tasks=24, n_runs=2, n_clusters=6, rng=3)
    return data


def test_clustering_row_says_what_given_results_did_without_clusters(tmp_path, clustered):
    """Finding 1: a bootstrap and a comparison given in `freq`, both computed with cluster=None on a log
    with clusters. The row said "the bootstrap resamples whole clusters and the paired tests take clusters
    as their unit"; it now says what their attrs record: tasks one by one, and the log's tasks as the unit.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = freq.bootstrap_ci(clustered, cluster=None, method="percentile", n_resamples=99, rng=1)
        c = freq.compare_agents(clustered, cluster=None, test="t", adjust="holm", rng=2)
    assert b.attrs["resample_unit"] == "task" and b.attrs["cluster_column"] == ""  # the results' own record
    a = c.to_dataset().attrs
    assert a["unit"] == "tasks" and a["n_units_total"] == clustered.sizes["task"]
    row = _entry(_build(tmp_path, clustered, {"bootstrap": b, "compare": c}), "clustering")
    n_cl = len(set(clustered["cluster"].values.tolist()))
    assert row.startswith(f"tasks in {n_cl} clusters (`cluster`)")  # the data's clusters, counted from the log
    assert "the bootstrap resamples tasks one by one" in row
    assert f"the paired tests take tasks as their unit ({clustered.sizes['task']} tasks)" in row
    assert "whole clusters" not in row and "take clusters" not in row


def test_clustering_row_says_clusters_where_the_results_resampled_them(tmp_path, clustered):
    """The same log with results computed over its clusters (the default): the row names their count."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = freq.bootstrap_ci(clustered, method="percentile", n_resamples=99, rng=1)
        c = freq.compare_agents(clustered, test="t", adjust="holm", rng=2)
    n_cl = len(set(clustered["cluster"].values.tolist()))
    assert b.attrs["resample_unit"] == "cluster" and b.attrs["n_clusters"] == n_cl
    assert c.to_dataset().attrs["unit"] == "clusters" and c.to_dataset().attrs["n_units_total"] == n_cl
    row = _entry(_build(tmp_path, clustered, {"bootstrap": b, "compare": c}), "clustering")
    assert f"the bootstrap resamples whole clusters ({n_cl} of `cluster`)" in row
    assert f"the paired tests take clusters as their unit ({n_cl} of `cluster`)" in row
    assert "one by one" not in row


def test_interval_row_lists_a_simultaneous_interval_only_where_the_comparison_computed_one(tmp_path, clustered):
    """Finding 2: under Holm the simultaneous interval is all NaN ("not computed"); the checklist listed
    "pairwise, simultaneous over the family: 95% max-t" anyway. Under max-T it holds numbers and is listed.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        holm = freq.compare_agents(clustered, cluster=None, test="t", adjust="holm", rng=2)
        maxt = freq.compare_agents(clustered, cluster=None, adjust="maxt", n_draws=2000, rng=2)
    sim_h, sim_m = holm.to_dataset()["ci_simultaneous"], maxt.to_dataset()["ci_simultaneous"]
    assert bool(np.isnan(sim_h.values).all()) and "not computed" in sim_h.attrs["ci_detail"]
    assert bool(np.isfinite(sim_m.values).any())
    row_h = _entry(_build(tmp_path, clustered, {"compare": holm, "bootstrap": None}, "h.md"), "interval level and kind")
    row_m = _entry(_build(tmp_path, clustered, {"compare": maxt, "bootstrap": None}, "m.md"), "interval level and kind")
    assert "simultaneous" not in row_h
    assert f"pairwise, simultaneous over the family: {sim_m.attrs['ci_prob']:.0%} {sim_m.attrs['ci_kind']}" in row_m


def test_interval_row_names_the_person_fit_interval_the_data_summary_flags(tmp_path):
    """Finding 3: an agent whose successes fall on the hard tasks (its scores the others' reversed) is
    flagged by person fit in the Data summary with a Wald interval; the checklist now lists that interval.
    """
    data, _ = simulate_eval(n_agents=6, n_tasks=40, n_runs=2, rng=5)
    score = data["score"].values.copy()
    others = np.nanmean(score[:5], axis=(0, 2))  # each task's success rate among the other agents
    score[5] = (others < np.median(others)).astype(float)[:, None]  # succeeds on the hard half only
    data = data.assign(score=(data["score"].dims, score))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pf = freq.person_fit(data, rng=1)
    assert bool(pf.flagged.any())  # the case the Data summary flags
    md = _build(tmp_path, data, {"person_fit": pf, "bootstrap": None, "compare": None})
    assert "results that do not follow the tasks' difficulty" in md  # the flag shown
    row = _entry(md, "interval level and kind")
    level, detail = f"{pf.ci.attrs['ci_prob']:.0%}", pf.ci.attrs["ci_detail"].split(";")[0]
    assert f"person fit slope (Data summary flag): {level}" in row and detail in row


def test_interval_row_names_the_time_horizons_interval(tmp_path):
    """Finding 3: the Time horizons table shows METR's method's bootstrap interval; the checklist now lists
    it with its level and kind from the result (a log with human minutes and task families, simulated).
    """
    data, _ = simulate_eval(n_agents=3, n_tasks=30, n_runs=2, n_clusters=10, rng=4)
    g = np.random.default_rng(0)
    data = data.assign_coords(human_minutes=("task", np.exp(g.uniform(0, 6, data.sizes["task"]))))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        h = freq.time_horizon(data, n_resamples=50, rng=0)
    md = _build(tmp_path, data, {"horizon": h, "bootstrap": None, "compare": None})
    assert "## Time horizons" in md
    row = _entry(md, "interval level and kind")
    kind = f"{h.ci.attrs['ci_prob']:.0%} {h.ci.attrs['ci_kind']}"
    assert f"time horizons: {kind}" in row and "50 resamples" in row


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_seed_row_says_the_given_results_were_not_drawn_with_the_reports_rng(tmp_path, clustered):
    """Finding 4: a bootstrap given with rng=5 and a comparison with rng=3: the row said only "rng=0".
    The freq functions record an int seed (``rng_seed``), which the row quotes; a result drawn from a
    Generator records none, and the row says "seed not recorded".
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        b = freq.bootstrap_ci(clustered, method="percentile", n_resamples=99, rng=5)
        c = freq.compare_agents(clustered, test="t", adjust="holm", rng=3)
        g = freq.bootstrap_ci(clustered, method="percentile", n_resamples=99, rng=np.random.default_rng(5))
    assert (b.attrs["rng_seed"], c.to_dataset().attrs["rng_seed"]) == (5, 3)
    assert not {"rng", "seed", "rng_seed"} & set(g.attrs)
    row = _entry(_build(tmp_path, clustered, {"bootstrap": b, "compare": c}), "seed")
    assert "rng=0 for the results it computed" in row
    assert "bootstrap (given: rng_seed=5)" in row and "compare (given: rng_seed=3)" in row
    row = _entry(_build(tmp_path, clustered, {"bootstrap": g}, "s.md"), "seed")
    assert "bootstrap (given: seed not recorded)" in row and "compare" not in row


def test_texts_of_finding_6(tmp_path, clustered):
    """Finding 6: a log-only report has no rank section, so its order sentence names none; a variance
    section given as None says it was left out; a BH bootstrap comparison near its level speaks of resamples.
    """
    from hierbench.report import pair_sentence

    md = _build(tmp_path, clustered, {"bootstrap": None, "compare": None})
    assert "## Rank probabilities\n\n> **Note:**" in md  # no rank section: a note says why
    assert "rank probabilities alone" not in md
    variance = md.split("## Variance components")[1].split("\n## ")[0]
    assert "left out: `freq['variance']` is None" in variance and "needs a crossed fit" not in variance
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = freq.compare_agents(clustered, cluster=None, test="bootstrap", adjust="bh", n_resamples=99, rng=1)
    ds = c.to_dataset()
    # force a pair within two Monte Carlo errors of 0.05, as the audit's METR comparison had
    p = ds["p_adjusted"].values.copy()
    p[0, 1] = p[1, 0] = 0.05
    ds["p_adjusted"] = (ds["p_adjusted"].dims, p)
    ds["p_adjusted_mcse"] = ds["p_adjusted_mcse"].fillna(0) + 0.01
    text = pair_sentence(ds, 0.05)
    assert ds.attrs["test"] == "bootstrap" and "more bootstrap resamples could move" in text
    assert "sign patterns could" not in text and "n_resamples=..." in text


def test_seed_row_finds_a_seed_recorded_on_the_estimate_only(clustered):
    """A person fit records its seed on its estimate (the result has no attrs of its own): the demo's
    seed row said "seed not recorded" for the person fit it had drawn with its seed.
    """
    from hierbench.report._sec_checklist import _recorded_seed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pf = freq.person_fit(clustered, n_sim=99, rng=7)
    assert pf.estimate.attrs["rng_seed"] == 7
    assert _recorded_seed(pf) == "given: rng_seed=7"
