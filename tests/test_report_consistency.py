"""report: a fit and a log that disagree on task clusters, and the two halves' tables that disagree.

The clustered fixtures are tiny crossed fits (draws=100, tune=100, chains=2, no posterior
predictive) of one simulated log with four task clusters, fitted once per module; the report of each
fit on that log (``build``'s defaults, seed 0, 99 resamples, without the sections and frequentist results
no test reads) is written once too, and read by every test that needs it.
"""

import re
import warnings

import pandas as pd
import pytest

from hierbench.report import FitDataMismatchError
from hierbench.report import build
from hierbench.report import check_fit_data
from hierbench.report._match import cluster_note
from hierbench.testing import simulate_eval

pytest.importorskip("pymc")


def _fit(ds):
    from hierbench import bayes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tiny fit does not converge; not what is tested here
        # no posterior predictive: no test here reads the reports' predictive check (the posterior is the same to the bit)
        return bayes.fit(bayes.build_crossed(ds), draws=100, tune=100, chains=2, rng=0, progress=False,
                         posterior_predictive=False)


@pytest.fixture(scope="module")
def clustered():
    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, n_clusters=4, rng=0)
    return ds, _fit(ds)


@pytest.fixture(scope="module")
def unclustered_fit(clustered):
    return _fit(clustered[0].drop_vars("cluster"))


#: what the tests of the module's two reports do not read, left out: their variance and pass^k sections and
#: the note on clusters are the same with these results (the G-study and pass^k's unbiased half are kept)
UNREAD = {"bootstrap": None, "compare": None, "person_fit": None}


#: the sections the tests of the module's two reports read: ``build`` runs these alone (``sections=``, in
#: its order), and writes them, its warnings (the note on clusters among them) and the report as it writes all
READ = ["pass-k", "variance"]


def _report(fit, ds, folder) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build(fit, ds, path=folder / "r.md", n_resamples=99, progress=False, freq=UNREAD,
                     sections=READ).read_text()


@pytest.fixture(scope="module")
def clustered_report(clustered, tmp_path_factory):
    """The clustered fit's report on its own log (built once: two tests read it)."""
    ds, fit = clustered
    return _report(fit, ds, tmp_path_factory.mktemp("clustered"))


@pytest.fixture(scope="module")
def unclustered_report(clustered, unclustered_fit, tmp_path_factory):
    """The report of the fit without clusters on the clustered log (built once: two tests read it)."""
    return _report(unclustered_fit, clustered[0], tmp_path_factory.mktemp("unclustered"))


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_fit_with_clusters_refuses_a_log_read_without_them(clustered):
    ds, fit = clustered
    check_fit_data(fit, ds)  # the log it was fitted to passes
    n_clusters = len(set(map(str, ds["cluster"].values)))  # from the simulated log, not the fit
    with pytest.raises(FitDataMismatchError) as err:
        check_fit_data(fit, ds.drop_vars("cluster"))
    msg = str(err.value)
    assert f"the fit's model has task clusters ({n_clusters} clusters" in msg
    assert "the data has no cluster labels" in msg
    assert "`--cluster`" in msg  # how to fix it


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_fit_with_clusters_refuses_a_task_in_another_cluster(clustered):
    ds, fit = clustered
    task = str(ds["task"].values[5])
    was = str(ds["cluster"].values[5])
    labels = ds["cluster"].values.copy()
    labels[5] = "elsewhere"
    with pytest.raises(FitDataMismatchError, match=rf"1 tasks in another cluster .*'{task}': fit '{was}', data 'elsewhere'"):
        check_fit_data(fit, ds.assign_coords(cluster=("task", labels)))


def test_report_refuses_the_mismatched_pair(clustered, tmp_path):
    ds, fit = clustered
    with pytest.raises(FitDataMismatchError, match="has no cluster labels"):
        build(fit, ds.drop_vars("cluster"), path=tmp_path / "r.md", n_resamples=99, progress=False)
    assert not (tmp_path / "r.md").exists()


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_clusters_in_the_log_only_are_said_in_the_report(clustered, unclustered_fit, unclustered_report):
    ds, fit = clustered
    assert cluster_note(fit, ds) is None  # both halves use the clusters
    assert cluster_note(unclustered_fit, ds.drop_vars("cluster")) is None  # neither does
    check_fit_data(unclustered_fit, ds)  # a model without clusters is a legitimate fit of this log
    n_clusters = len(set(map(str, ds["cluster"].values)))
    text = unclustered_report  # build(unclustered_fit, ds, n_resamples=99)
    note = re.search(r"Clusters in one half only: [^\n]*", text)
    assert note is not None
    assert f"{n_clusters} clusters" in note.group(0)
    assert "The frequentist half" in note.group(0) and "the Bayesian half" in note.group(0)


def test_variance_rows_flag_other_terms_and_an_estimate_outside_the_interval():
    """Hand-made rows: G-theory 0.07 lies outside Bayes [0.04, 0.06] over the same terms (disagree);
    0.05 lies inside (no flag); other terms are named and not judged; an undefined row keeps its reason.
    """
    from hierbench.report._variance import _agreement

    nan = float("nan")
    table = pd.DataFrame(
        {
            "Bayes estimate": [0.05, 0.05, 0.02, nan],
            "Bayes lower": [0.04, 0.04, 0.01, nan],
            "Bayes upper": [0.06, 0.06, 0.03, nan],
            "Bayes terms": ["agent", "residual", "task", ""],
            "flag": ["", "", "", "undefined: one agent"],
            "G-theory (reml)": [0.07, 0.05, 0.9, nan],
            "G-theory terms": ["agent", "residual", "cluster + task:cluster", ""],
        },
        index=["a", "b", "c", "d"],
    )
    out = _agreement(table.copy())
    # other terms (c) and an undefined row (d) are not judged: NA, shown as "undefined", not "no"
    assert out["disagree"].tolist() == [True, False, pd.NA, pd.NA]
    assert out["flag"].tolist() == [
        "G-theory estimate outside the Bayes interval",
        "",
        "not one component: Bayes sums task, G-theory cluster + task:cluster: not judged",
        "undefined: one agent",
    ]


def _variance_section(md: str) -> tuple[str, dict[str, dict[str, str]]]:
    part = md.split("## Variance components")[1].split("\n## ")[0]
    lines = [r for r in part.splitlines() if r.startswith("| ")]
    cols = [c.strip() for c in lines[0].split("|")[1:-1]]
    rows = {}
    for r in lines[1:]:
        cells = [c.strip() for c in r.split("|")[1:-1]]
        rows[cells[0]] = dict(zip(cols, cells, strict=True))
    return part, rows


@pytest.mark.parametrize("fit_has_clusters", [True, False])
@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_variance_section_does_not_call_rows_with_other_terms_one_component(
    clustered_report, unclustered_report, fit_has_clusters
):
    """With task clusters G-theory also estimates agent:cluster, which a crossed fit without clusters
    folds into its agent x task effect (a fit with clusters has its own agent x cluster effect); a
    fit without clusters also sums `task` where G-theory sums cluster + task:cluster. The section said
    "so both methods describe the same component" of every row.
    """
    # the report of the fit with (or without) clusters on the clustered log (both are module
    # fixtures named here, so that xdist keeps the module's tests on one worker: conftest.py)
    md = clustered_report if fit_has_clusters else unclustered_report
    text, rows = _variance_section(md)
    assert "both methods describe the same component" not in text
    for name, row in rows.items():
        differ = row["Bayes terms"] != row["G-theory terms"]
        assert ("not one component" in row["flag"]) == differ, name
        if differ:
            assert f"Bayes sums {row['Bayes terms']}, G-theory {row['G-theory terms']}" in row["flag"]
            assert row["disagree"] == "undefined"
    if fit_has_clusters:  # agent x cluster is a row of its own, one component on both sides
        assert rows["agent x cluster"]["Bayes terms"] == rows["agent x cluster"]["G-theory terms"] == "agent:cluster"
        assert rows["agent x task"]["Bayes terms"] == rows["agent x task"]["G-theory terms"]
    else:  # in the fit's agent x task effect: one row, whose terms differ
        assert "agent x cluster" not in rows and "agent x task" not in rows
        assert "not one component" in rows["agent x cluster + agent x task"]["flag"]
    assert ("not one component" in rows["task"]["flag"]) != fit_has_clusters


def _passk_frames(rows: dict[str, tuple]) -> tuple[pd.DataFrame, pd.DataFrame]:
    index = pd.MultiIndex.from_tuples([(a, 8) for a in rows], names=["agent", "k"])
    unb = pd.DataFrame([r[:3] for r in rows.values()], index=index, columns=["estimate", "lower", "upper"])
    unb["n_tasks"], unb["ci_flag"] = 20, ""
    bay = pd.DataFrame([r[3:] for r in rows.values()], index=index, columns=["estimate", "lower", "upper"])
    return unb, bay


def test_passk_table_marks_where_the_two_methods_part():
    """Hand-made rows, each judged by hand: (unbiased estimate, lower, upper, Bayes estimate, lower, upper)."""
    from hierbench.report._passk import passk_table

    nan = float("nan")
    rows = {
        "outside": (0.390, 0.285, 0.505, 0.347, 0.307, 0.380),  # METR o1 k=8: 0.390 > Bayes upper 0.380
        "inside": (0.300, 0.200, 0.400, 0.310, 0.250, 0.350),  # each estimate in the other's interval
        "apart": (0.000, 0.000, 0.050, 0.200, 0.100, 0.300),  # intervals [0, 0.05] and [0.1, 0.3] apart
        "zero": (0.000, 0.000, 0.206, 0.019, 0.001, 0.059),  # an unbiased 0: no posterior interval holds it
        "bayes_out": (0.800, 0.700, 0.900, 0.650, 0.600, 0.720),  # Bayes 0.65 below the unbiased 0.70
        "undefined": (nan, nan, nan, 0.100, 0.050, 0.150),  # no unbiased interval: not judged
    }
    unb, bay = _passk_frames(rows)
    table = passk_table(unb, bay, "same tasks", 0.95)
    want = {"outside": True, "inside": False, "apart": True, "zero": False, "bayes_out": True, "undefined": pd.NA}
    assert dict(zip(table.index.get_level_values("agent"), table["disagree"].tolist(), strict=True)) == want
    assert "disagree" not in passk_table(unb, bay, "a new task", 0.95)  # another quantity: never paired


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_passk_section_counts_and_explains_disagreement(clustered_report):
    md = clustered_report  # build(fit, ds, n_resamples=99) of the clustered fit and its log
    part = md.split("## Reliability: pass^k")[1].split("\n## ")[0]
    lines = [r for r in part.splitlines() if r.startswith("| ")]
    cols = [c.strip() for c in lines[0].split("|")[1:-1]]
    n_yes = sum(dict(zip(cols, [c.strip() for c in r.split("|")[1:-1]], strict=True))["disagree"] == "yes"
                for r in lines[1:])  # fmt: skip
    assert f"(judged where both are defined, `undefined` elsewhere): {n_yes} of {len(lines) - 1} rows" in part
    assert "pulls each cell toward the population" in part and "does not say which is right" in part


def test_a_g_theory_variance_at_zero_is_not_called_outside_the_bayes_interval():
    """The awkward log (no task effect): G-theory's REML task variance stopped at 0.0000 and was
    flagged as outside the Bayes interval [2.5e-6, 0.0106], which no posterior of a variance can
    help (its draws are positive). A boundary zero is now not judged, and said so.
    """
    from hierbench.report._variance import _agreement

    table = pd.DataFrame(
        {"Bayes estimate": [0.0019, 0.1059], "Bayes lower": [2.5e-6, 0.0794], "Bayes upper": [0.0106, 0.1378],
         "Bayes terms": ["task", "residual"], "flag": ["", ""], "G-theory (reml)": [0.0, 0.1408],
         "G-theory terms": ["task", "residual"]},
        index=["task", "run-to-run"],
    )  # fmt: skip
    out = _agreement(table.copy())
    # 0.1408 > 0.1378 is a disagreement; 0 at the boundary is not judged (undefined, not "no")
    assert out["disagree"].tolist() == [pd.NA, True]
    assert out.loc["task", "flag"].startswith("G-theory at 0, the boundary")


def test_variance_rows_with_a_g_theory_interval_are_judged_by_both_intervals():
    """Rows of one component now carry G-theory's own interval (profile REML or Wald), judged by the
    abilities table's rule. By hand:
    - agent: G 0.045 [0.010, 0.090], Bayes 0.050 [0.040, 0.060]: each estimate inside the other's
      interval, the intervals overlap: no;
    - residual: G 0.100 [0.090, 0.110], Bayes 0.150 [0.130, 0.170]: apart: yes;
    - task at the boundary: G 0 [0, 0.004], Bayes 0.002 [2.5e-6, 0.0106]: the zero is left out, the
      Bayes estimate lies inside [0, 0.004], the intervals overlap: no (it was "undefined");
    - cluster at the boundary: G 0 [0, 0.01], Bayes 0.08 [0.05, 0.12]: apart: yes (it was "undefined");
    - a sum of components has no G-theory interval: G 0.07 against Bayes [0.04, 0.06]: yes, as before.
    """
    from hierbench.report._variance import _agreement

    nan = float("nan")
    table = pd.DataFrame(
        {"Bayes estimate": [0.05, 0.15, 0.002, 0.08, 0.05], "Bayes lower": [0.04, 0.13, 2.5e-6, 0.05, 0.04],
         "Bayes upper": [0.06, 0.17, 0.0106, 0.12, 0.06], "Bayes terms": ["agent", "residual", "task", "cluster", "t"],
         "flag": [""] * 5, "G-theory (reml)": [0.045, 0.10, 0.0, 0.0, 0.07],
         "G-theory lower": [0.01, 0.09, 0.0, 0.0, nan], "G-theory upper": [0.09, 0.11, 0.004, 0.01, nan],
         "G-theory terms": ["agent", "residual", "task", "cluster", "t"]},
        index=["agent", "run-to-run", "task", "cluster", "sum"],
    )  # fmt: skip
    out = _agreement(table.copy())
    assert out["disagree"].tolist() == [False, True, False, True, True]
    assert out.loc["task", "flag"].endswith("judged by the intervals and the Bayes estimate")
    assert out.loc["sum", "flag"] == "G-theory estimate outside the Bayes interval"
    assert out.loc["run-to-run", "flag"] == "an estimate outside the other method's interval, or the intervals apart"


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_report_variance_table_shows_g_theory_intervals_of_one_component(tmp_path):
    """The report's G-theory column had no interval. Rows of one component now show the
    result's own interval (``variance_components(data, prob=...).ci``, read here apart from the
    report); a row summing components shows none and its flag says why.
    """
    from hierbench.freq import variance_components
    from hierbench.report import build
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=4, n_tasks=30, n_runs=3, rng=5, n_clusters=6, sd_cluster=0.5)
    # the G-study's section is read: build runs it alone
    out = build(data=ds, path=tmp_path / "r.md", progress=False, prob=0.9, freq=UNREAD, sections=["variance"])
    part = out.read_text().split("## Variance components")[1].split("\n## ")[0]
    lines = [r for r in part.splitlines() if r.startswith("| ")]
    cols = [c.strip() for c in lines[0].split("|")[1:-1]]
    rows = {r.split("|")[1].strip(): [c.strip() for c in r.split("|")[1:-1]] for r in lines[1:]}
    ci = variance_components(ds, prob=0.9).ci
    for row, comp in (("agent", "agent"), ("run-to-run", "residual")):
        got = [float(rows[row][cols.index(f"G-theory {b}")]) for b in ("lower", "upper")]
        assert got == pytest.approx(ci.sel(component=comp).values, abs=6e-5)  # 4 digits shown
    assert rows["task"][cols.index("G-theory lower")] == "none"  # in words: the browser check refuses NaN cells
    assert "a sum of components" in rows["task"][cols.index("flag")]
    assert "90% intervals" in part


def test_every_disagree_column_reads_undefined_where_it_did_not_judge():
    """The audit: variance rows at the boundary, rows with other terms and pairs without a p-value read
    `disagree: no`. Each table's rendered cell is now "yes", "no" or "undefined", judged by hand here.
    """
    from hierbench.freq import disagree_label as _disagree_label
    from hierbench.report import markdown_table
    from hierbench.report._pairs import _disagree_words
    from hierbench.report._variance import _agreement

    nan = float("nan")
    table = pd.DataFrame(
        {"Bayes estimate": [0.0019, 0.1059, 0.05, 0.02], "Bayes lower": [2.5e-6, 0.0794, 0.04, nan],
         "Bayes upper": [0.0106, 0.1378, 0.06, nan], "Bayes terms": ["task", "residual", "agent", "x"],
         "flag": ["", "", "", ""], "G-theory (reml)": [0.0, 0.1408, 0.05, 0.03],
         "G-theory terms": ["task", "residual", "agent", "x"]},
        index=["task", "run-to-run", "agent", "agent x task"],
    )  # fmt: skip
    # boundary 0: not judged; 0.1408 > 0.1378: yes; 0.05 in [0.04, 0.06]: no; no Bayes interval: not judged
    cells = [r.split("|")[-3].strip() for r in markdown_table(_agreement(table)).splitlines()[2:]]
    assert cells == ["undefined", "yes", "no", "undefined"]
    # a pair's interval and p: [0.002, 0.09] excludes 0 beside p = 0.052 (yes), no p-value (undefined)
    col = _disagree_label(0.05)
    pairs = pd.DataFrame({"per-pair lower": [0.002, 0.01], "per-pair upper": [0.09, 0.1],
                          col: pd.array([True, pd.NA], dtype="boolean")})  # fmt: skip
    assert _disagree_words(pairs, col) == ["CI excludes 0 only", "undefined"]


def _stamped(model):
    """A fit's provenance as hierbench.bayes.fit stamps it from a built model (no draws needed here)."""
    import json

    import xarray as xr

    info = model.hierbench
    spec = json.dumps({"model": info["model"], "options": info.get("options", {}), "priors": {}}, default=str)
    return xr.DataTree(xr.Dataset(attrs={"hierbench_model": info["model"], "hierbench_spec": spec,
                                         "hierbench_data_hash": info["data_hash"]}))  # fmt: skip


def test_formula_fit_is_held_to_its_own_log_and_a_binomial_fit_to_binary_scores():
    """An audit paired a formula fit with another log of the same agents and tasks (other scores):
    the report put one log's Bayes level beside the other's bootstrap (alpha 0.275 vs 0.833), exit 0,
    no warning. A formula fit's fingerprint is its design's, which never equalled the log's count
    hash, so only the labels were compared. And a binary crossed fit passed beside a log whose runs
    were replaced by their cell means: the per-cell sums agree.
    """
    import numpy as np

    from hierbench.bayes import build_crossed
    from hierbench.bayes import build_mixed

    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, rng=4)
    fit = _stamped(build_mixed(ds, "score ~ (1|agent) + (1|task)"))
    check_fit_data(fit, ds)  # its own log
    g = np.random.default_rng(0)
    shuffled = ds.isel(agent=g.permutation(3), task=g.permutation(12))
    check_fit_data(fit, shuffled)  # the same records in another order are the same log
    flipped = ds.copy(deep=True)
    flipped["score"][0, :4] = 1 - flipped["score"][0, :4]
    with pytest.raises(FitDataMismatchError, match=r"formula model's design built from the data .* is not the fit's"):
        check_fit_data(fit, flipped)
    means = ds.assign(score=ds["score"].mean("run").broadcast_like(ds["score"]).where(ds["score"].notnull()))
    assert not np.isin(means["score"].values[np.isfinite(means["score"].values)], [0, 1]).all()
    crossed = _stamped(build_crossed(ds))
    crossed["constant_data"] = _xr_counts(ds)
    check_fit_data(crossed, ds)
    with pytest.raises(FitDataMismatchError, match=r"binomial \(every score 0 or 1\) and \d+ of the data's scores are partial credit"):
        check_fit_data(crossed, means)


def _xr_counts(ds):
    """The per-cell counts a count model's constant_data keeps."""
    import xarray as xr

    from hierbench.data import to_counts

    return xr.DataTree(to_counts(ds)[["n_runs", "n_success"]])


def test_pairs_that_share_no_task_are_not_called_alike(tmp_path):
    """An audit's log where A ran t0-t3 and B t4-t7: the report and `hierbench compare` said "The one pair
    does not differ ... over the 8 tasks", the disagreement note "For the one pair they agree", and the
    data summary "No flags: every agent ran most tasks". With a third agent on other tasks, "adjusted by
    max-T single-step over the 3 pairs" where one pair was tested.
    """
    import numpy as np
    import xarray as xr

    from hierbench.freq import compare_agents
    from hierbench.report import pair_sentence

    g = np.random.default_rng(2)
    s = np.full((2, 8, 3), np.nan)
    s[0, :4], s[1, 4:] = g.integers(0, 2, (4, 3)), g.integers(0, 2, (4, 3))
    two = xr.Dataset({"score": (("agent", "task", "run"), s)}, coords={"agent": ["A", "B"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp_two = compare_agents(two, rng=0)
        assert pair_sentence(cmp_two).startswith("The one pair cannot be compared")
        assert cmp_two.to_frame()["n_tasks"].tolist() == [0]  # a count, not "undefined"
        md = build(data=two, path=tmp_path / "two.md", n_resamples=199, progress=False).read_text()
    assert "does not differ" not in md and "they agree" not in md and "No flags" not in md
    assert "the two agents share 0 tasks: they cannot be compared by a paired difference" in md

    s = np.full((3, 20, 3), np.nan)
    s[0, :12] = g.integers(0, 2, (12, 3))
    s[1, :12] = np.minimum(1, s[0, :12] + (g.random((12, 3)) < 0.5))  # B solves what A solves, and more
    s[2, 12:] = g.integers(0, 2, (8, 3))
    three = xr.Dataset({"score": (("agent", "task", "run"), s)}, coords={"agent": ["A", "B", "C"]})
    ran = ~np.isnan(s[..., 0])
    shared = (ran[:, None, :] & ran[None, :, :]).sum(-1)[np.triu_indices(3, 1)]  # by hand: 12, 0, 0
    assert shared.tolist() == [12, 0, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = " ".join(pair_sentence(compare_agents(three, rng=0)).split())
    assert "over the 3 pairs" not in text and "one pair tested, so no adjustment" in text
    assert text.endswith("2 of the 3 pairs share fewer than 2 tasks: not tested (NaN in the table).")


def test_predictive_check_is_skipped_with_its_reason_when_no_agent_has_a_panel():
    """3 agents x 4 tasks x 3 runs: every agent was left out of the rootogram (fewer than 5 cells), and
    arviz-plots, handed an empty tree, failed the section with "Invalid value for sample_dims".
    """
    import numpy as np
    import xarray as xr

    from hierbench.report._figures import PPC_MIN_CELLS
    from hierbench.report._figures import ppc_rootogram

    g = np.random.default_rng(1)
    agents = np.repeat(["a", "b", "c"], 4)
    cell = {"cell_agent": ("cell", agents)}
    fit = xr.DataTree.from_dict({
        "observed_data": xr.Dataset({"y": ("cell", g.integers(0, 4, 12))}, coords=cell),
        "posterior_predictive": xr.Dataset({"y": (("chain", "draw", "cell"), g.integers(0, 4, (2, 20, 12)))}),
        "constant_data": xr.Dataset({"cell_n_runs": ("cell", np.full(12, 3))}),
    })  # fmt: skip
    assert 4 < PPC_MIN_CELLS
    pc, n_main, left_out = ppc_rootogram(fit)
    assert pc is None and n_main == 3 and left_out == ["a", "b", "c"]


@pytest.mark.slow  # a report and a demo section on 8 x 300 x 2
def test_report_and_demo_flag_a_record_that_does_not_follow_the_tasks_difficulty(tmp_path):
    """SWE-bench's Claude 3.7 Sonnet record (10.2% per instance, 52.8% reported) went through every pair
    and rank unqualified unless the user passed --annotate on the file's own flag column. A record
    redrawn at its own mean rate (the corruption) is now a data-summary flag, in the report and in
    the demo's section 2, from the scores alone; the genuine agents are not named.
    """
    import numpy as np
    import xarray as xr

    from hierbench.demo import DemoContext
    from hierbench.demo._run import _demo_summary

    g = np.random.default_rng(1)
    z, a = g.normal(0, 1.5, 300), np.exp(g.normal(0, 0.3, 8))
    p = 1 / (1 + np.exp(-(g.normal(-0.3, 1, (8, 1)) + a[:, None] * z)))
    s = (g.random((8, 300, 2)) < p[..., None]).astype(float)
    s[0] = g.random((300, 2)) < s[0].mean()  # agent "a0": a record that ignores the tasks
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)}, coords={"agent": [f"a{i}" for i in range(8)]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the data summary's flags are read (the person fit's): the other frequentist results are left out
        md = build(data=ds, path=tmp_path / "r.md", n_resamples=199, progress=False, rng=0,
                   freq={"bootstrap": None, "compare": None, "variance": None}).read_text()
        demo = _demo_summary(DemoContext(ds, None, extra={"seed": 0}))
    flags = md.split("**Flags:**")[1].split("\n\n|")[0]
    line = next(f for f in flags.splitlines() if "do not follow the tasks' difficulty" in f)
    assert "a0: slope" in line and not any(f"a{i}: slope" in line for i in range(1, 8))
    assert "Flag: results that do not follow the tasks' difficulty" in demo and "a0: slope" in " ".join(demo.split())


def test_the_readers_warnings_reach_the_report(tmp_path, capsys):
    """A second audit: `hierbench demo --data` on a log with unread `run`, `error` and `cluster`
    columns warned on stderr only; the saved report said '0 infrastructure-error runs' with nothing
    beside it. The command line's reading notes travel in the data's attrs to the data summary,
    the log named by its file name.
    """
    import pandas as pd

    from hierbench.cli import main

    df = pd.DataFrame({"agent": list("aabbcc") * 2, "task": ["t1", "t2"] * 6, "run": [0] * 6 + [1] * 6,
                       "score": [1, 0, 1, 1, 0, 0] * 2, "error": [0, 1] + [0] * 10})  # fmt: skip
    log = tmp_path / "runs.csv"
    df.to_csv(log, index=False)
    out = tmp_path / "r.md"
    assert main(["report", "--data", str(log), "-o", str(out), "--resamples", "199", "--quiet"]) == 0
    assert "UnreadColumnWarning" in capsys.readouterr().err
    summary = out.read_text().split("## Data summary")[1].split("\n## ")[0]
    line = next(x for x in summary.splitlines() if "the reader said" in x)
    assert "UnreadColumnWarning: runs.csv has columns named like roles but not read as them: 'run', 'error'" in line
    assert str(tmp_path) not in summary
