"""The report's predictive check of a graded (ordinal) fit: each agent's runs counted by grade.

The section used to be skipped for every graded fit ("this mixed fit has no `cell`
observations") although the fit held its posterior predictive draws. The fast tests hand
the section a graded fit built by hand (the layout a graded formula fit saves: ``y(obs)``,
one run per observation, the rows' agents and run counts in ``constant_data``) and check
its numbers against counts made with pandas, one (agent, grade) at a time; the slow test
fits the wine judges' ratings and checks the observed counts against the raw file.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.report._context import _Context
from hierbench.report._context import _Skip
from hierbench.report._report import Report
from hierbench.report._sec_ppc import _sec_ppc


def _graded_fit(rng, scale: list[float], runs: list[int], agents: list[str], n_draws: int = 300):
    """A graded fit's groups as the layout saves them: each row's runs, grades in increasing order."""
    labels = np.arange(1, len(scale) + 1) if any(v != round(v) for v in scale) else np.asarray(scale, int)
    y, pp = [], []
    for n in runs:
        y.extend(np.sort(rng.choice(labels, n, p=np.linspace(1, 2, len(scale)) / np.linspace(1, 2, len(scale)).sum())))
        pp.append(np.sort(rng.choice(labels, (2, n_draws, n)), axis=-1))
    cd = xr.Dataset(
        {"grade_n": ("cell", np.asarray(runs))},
        coords={"cell_agent": ("cell", agents), "grade": [f"{v:g}" for v in scale]},
    )
    dt = xr.DataTree.from_dict({
        "observed_data": xr.Dataset({"y": ("obs", np.asarray(y))}),
        "posterior_predictive": xr.Dataset({"y": (("chain", "draw", "obs"), np.concatenate(pp, -1))}),
        "constant_data": cd,
    })  # fmt: skip
    dt.attrs = {"hierbench_model": "mixed", "hierbench_spec": json.dumps({"options": {"family": "ordinal"}})}
    return dt, np.repeat(agents, runs), labels


def _run(fit, prob=0.9):
    rep = Report("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _sec_ppc(_Context(fit=fit, data=None, prob=prob), rep, "ppc")
    return rep.blocks[0], rep


@pytest.mark.parametrize("scale", [[1, 2, 3, 4], [0.0, 0.5, 0.75, 1.0]], ids=["integer grades", "places"])
def test_graded_check_counts_each_agents_runs_per_grade(scale):
    rng = np.random.default_rng(4)
    agents = ["a", "a", "b", "c", "c", "c"]  # cells of 1 to 3 runs, agents over several cells
    fit, run_agent, labels = _graded_fit(rng, scale, [3, 1, 2, 2, 3, 1], agents)
    prob = 0.9
    sec, rep = _run(fit, prob)
    rows = sec["more"][1].reset_index()
    y = fit["observed_data"]["y"].values
    pp = fit["posterior_predictive"]["y"].values.reshape(-1, y.size)
    flagged = 0
    for a in ("a", "b", "c"):
        for k, g in enumerate(labels):
            counts = (pp[:, run_agent == a] == g).sum(1)  # one count per draw, by hand
            o = int(((y == g) & (run_agent == a)).sum())
            row = rows[(rows["agent"] == a) & (rows["grade"] == f"{scale[k]:g}")].iloc[0]
            assert row["observed runs"] == o
            np.testing.assert_allclose(row["predicted mean"], counts.mean())
            np.testing.assert_allclose(
                [row["predicted 90% lower"], row["predicted 90% upper"]], np.percentile(counts, [5, 95])
            )
            np.testing.assert_allclose(row["P(predicted >= observed)"], (counts >= o).mean())
            np.testing.assert_allclose(row["P(predicted <= observed)"], (counts <= o).mean())
            flagged += (counts >= o).mean() < 0.025 or (counts <= o).mean() < 0.025
    assert f"{flagged} of 12 observed counts ({flagged / 12:.1%}) fall in a 2.5% tail" in sec["text"]
    # the table sums the agents' runs per grade; its tails are the totals' own
    pooled = pd.Series(y).value_counts().reindex(labels, fill_value=0)
    table = sec["table"]
    assert table["observed runs"].tolist() == pooled.tolist()
    for k, g in enumerate(labels):
        tot = (pp == g).sum(1)
        np.testing.assert_allclose(table["P(predicted <= observed)"].iloc[k], (tot <= pooled[g]).mean())
    holds = "the grade (" if labels[0] == scale[0] else "the grade's place on the scale (1 = lowest)"
    assert holds in sec["text"]
    assert "ppc" in rep.figures and sec["figures"][0][0] == "ppc"


def test_grade_panels_mark_the_grades_alone():
    """VerbAgg's three grades 0, 1, 2 were drawn on ticks 0.0, 0.5, ..., 2.0: half grades that do not exist."""
    from hierbench.report._figures import _rootogram

    rng = np.random.default_rng(7)
    fit, run_agent, labels = _graded_fit(rng, [0, 1, 2], [24, 24], ["p1", "p2"], n_draws=50)
    y = fit["observed_data"]["y"].values
    pp = fit["posterior_predictive"]["y"].values
    pc = _rootogram({a: y[run_agent == a] for a in ("p1", "p2")}, {a: pp[:, :, run_agent == a] for a in ("p1", "p2")},
                    0.95, "grade", "runs", xticks=labels)  # fmt: skip
    fig = pc.viz["figure"]
    fig = fig.item() if hasattr(fig, "item") else fig
    panels = [ax for ax in fig.axes if ax.has_data()]
    assert len(panels) == 2 and all(ax.get_xticks().tolist() == [0, 1, 2] for ax in panels)


def test_grades_written_as_words_are_named_by_their_labels(monkeypatch):
    """A fit of a score read from labels (attrs score_labels, as `hierbench fit` saves it) holds
    grades 0..L-1: the check names them by the labels, in its rows, its text and its panels'
    ticks; the counts stay those of the grades (counted here by hand). Labels that do not fit
    the fit's scale (another count) are not used.
    """
    rng = np.random.default_rng(8)
    fit, run_agent, grades = _graded_fit(rng, [0, 1, 2], [5, 4, 6], ["p1", "p2", "p1"], n_draws=60)
    fit.attrs["score_labels"] = json.dumps(["no", "perhaps", "yes"])
    from hierbench.report import _figures

    drawn = []
    real = _figures._rootogram
    monkeypatch.setattr(_figures, "_rootogram", lambda *a, **kw: drawn.append(real(*a, **kw)) or drawn[-1])
    sec, _ = _run(fit)
    assert "the x axis is the grade (0 = no, 1 = perhaps, 2 = yes)" in sec["text"]
    y = fit["observed_data"]["y"].values
    assert sec["table"].index.tolist() == ["no", "perhaps", "yes"]
    assert sec["table"]["observed runs"].tolist() == [int((y == g).sum()) for g in grades]
    rows = sec["more"][1].reset_index()
    for a in ("p1", "p2"):
        for g, word in zip(grades, ["no", "perhaps", "yes"], strict=True):
            row = rows[(rows["agent"] == a) & (rows["grade"] == word)].iloc[0]
            assert row["observed runs"] == int(((y == g) & (run_agent == a)).sum())
    fig = drawn[0].viz["figure"]
    fig = fig.item() if hasattr(fig, "item") else fig
    ticks = [[t.get_text() for t in ax.get_xticklabels()] for ax in fig.axes if ax.has_data()]
    assert ticks and all(t == ["no", "perhaps", "yes"] for t in ticks)
    fit.attrs["score_labels"] = json.dumps(["no", "yes"])
    sec, _ = _run(fit)
    assert sec["table"].index.tolist() == ["0", "1", "2"] and "(0, 1, 2)" in sec["text"]


@pytest.mark.parametrize("attrs", [True, False], ids=["with score_labels", "coord alone"])
def test_a_fit_whose_grade_coord_holds_the_labels_is_named_by_them(attrs):
    """`build_mixed` on grades written as words names the fit's `grade` coord by the labels (y holds
    their places 0..L-1): the check reads that scale, with or without the fit's attrs, and counts
    the grades (by hand here) under their labels.
    """
    rng = np.random.default_rng(9)
    fit, run_agent, _ = _graded_fit(rng, [0, 1, 2], [5, 4, 6], ["p1", "p2", "p1"], n_draws=60)
    cd = fit["constant_data"].to_dataset().assign_coords(grade=["no", "perhaps", "yes"])
    fit["constant_data"] = xr.DataTree(cd)
    if attrs:
        fit.attrs["score_labels"] = json.dumps(["no", "perhaps", "yes"])
    sec, _ = _run(fit)
    assert "the x axis is the grade (0 = no, 1 = perhaps, 2 = yes)" in sec["text"]
    y = fit["observed_data"]["y"].values
    assert sec["table"].index.tolist() == ["no", "perhaps", "yes"]
    assert sec["table"]["observed runs"].tolist() == [int((y == g).sum()) for g in (0, 1, 2)]
    rows = sec["more"][1].reset_index()
    row = rows[(rows["agent"] == "p2") & (rows["grade"] == "perhaps")].iloc[0]
    assert row["observed runs"] == int(((y == 1) & (run_agent == "p2")).sum())


def test_a_fit_and_data_whose_grades_have_other_labels_are_refused():
    """The same numbers under other words: the data hash cannot tell them apart, the labels can."""
    from hierbench.data import from_records
    from hierbench.report import check_fit_data
    from hierbench.report._match import FitDataMismatchError

    df = pd.DataFrame({"agent": ["a", "a", "b"], "task": ["t1", "t2", "t1"], "score": ["lo", "hi", "lo"]})
    data = from_records(df, score_levels=["lo", "hi"])
    fit = xr.DataTree(xr.Dataset(attrs={"score_labels": json.dumps(["fail", "pass"])}))
    with pytest.raises(FitDataMismatchError, match=r"the fit's grades are labelled \['fail', 'pass'\] and the data's \['lo', 'hi'\]"):
        check_fit_data(fit, data, fit_name="FIT", data_name="--data")


def test_with_many_agents_the_panels_are_the_most_extreme_and_the_text_says_so():
    from hierbench.report import _ppc_graded

    rng = np.random.default_rng(5)
    agents = [f"m{i:02d}" for i in range(15)]
    fit, _, _ = _graded_fit(rng, [1, 2, 3], [6] * 15, agents, n_draws=100)
    sec, _ = _run(fit)
    assert f"only {_ppc_graded.PPC_GRADE_PANELS} have a panel" in sec["text"]
    rows = sec["more"][1]
    assert len(rows) == 45  # every (agent, grade): under the row cap


def test_a_fractional_fit_says_why_it_has_no_check():
    rng = np.random.default_rng(6)
    dt = xr.DataTree.from_dict({
        "observed_data": xr.Dataset({"y": ("obs", rng.random(20))}),
        "posterior_predictive": xr.Dataset({"y": (("chain", "draw", "obs"), rng.random((2, 10, 20)))}),
        "constant_data": xr.Dataset(),
    })  # fmt: skip
    dt.attrs = {"hierbench_model": "mixed", "hierbench_spec": json.dumps({"options": {"family": "fractional"}})}
    with pytest.raises(_Skip, match=r"one score in \[0, 1\] per run.*arviz_plots.plot_ppc_dist"):
        _sec_ppc(_Context(fit=dt, data=None, prob=0.95), Report("t"), "ppc")


@pytest.mark.slow  # one small ordinal fit
def test_the_wine_judges_report_checks_their_grades(shared_data):
    """A real graded fit: the section's observed counts are the raw file's ratings per judge.

    The section is run as ``build(fit)`` runs each of its sections (``_run_section``: a section that
    cannot be computed gets a note) and written as its Markdown; the report's other sections, which
    nothing here reads, are left out.
    """
    from hierbench import bayes
    from hierbench.data import from_records
    from hierbench.report._build import _run_section

    df = pd.read_csv(shared_data / "ordinal" / "wine.csv")
    ds = from_records(df.assign(s=(df["rating"] - 1) / 4), agent="judge", task="bottle", score="s",
                      extra=["rating"], task_coords=["temp", "contact"])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # 100 draws: what is read (the observed counts per judge and grade, how many cells there are, and
        # that the section is drawn) does not depend on their number
        fit = bayes.fit(bayes.build_mixed(ds, "rating ~ temp + contact + (1|agent)", family="ordinal"),
                        draws=100, tune=100, chains=2, rng=1, progress=False)  # fmt: skip
        # the context build(fit) gives its sections
        ctx = _Context(fit=fit, data=None, battles=None, prob=0.95, bootstrap_method="bca", truth=None, subset=[],
                       say=lambda *_: None, freq="auto", rng=0, n_resamples=1999)  # fmt: skip
        rep = Report("t")
        _run_section(ctx, rep, "ppc")
    md = rep.to_markdown()
    sec = md.split("## Posterior predictive checks")[1].split("\n## ")[0]
    assert "**Note:**" not in sec and "of 45 observed counts" in sec
    want = pd.crosstab(df["judge"], df["rating"])  # by hand from the file
    for judge, row in want.iterrows():
        for grade, n in row.items():
            assert f"| {judge}       |       {grade} |               {n} |" in sec
