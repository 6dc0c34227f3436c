"""The report's pass^k table shows the unbiased estimator's own interval, description and flags.

The expected values are hierbench.freq.pass_hat_k called directly on the same data: the report
must neither re-label its interval (it is a Student t on the logit scale, not a clipped t) nor
re-derive its flags (an agent that never succeeds gets the exact bound, flagged as such).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench import freq
from hierbench.report._context import _Context
from hierbench.report._context import _Skip
from hierbench.report._passk import FEW_TASKS
from hierbench.report._passk import _sec_passk
from hierbench.report._report import Report


def _data() -> xr.Dataset:
    """Three agents x 12 tasks x 4 runs; agent ``never`` fails every run (its interval is the exact bound)."""
    rng = np.random.default_rng(3)
    score = rng.binomial(1, [[[0.3]], [[0.7]], [[0.0]]], size=(3, 12, 4)).astype(float)
    return xr.Dataset(
        {"score": (("agent", "task", "run"), score)},
        coords={"agent": ["low", "high", "never"], "task": [f"t{i}" for i in range(12)], "run": np.arange(4)},
    )


def _section(data: xr.Dataset | None, fit: xr.DataTree | None = None) -> dict:
    ctx = _Context(fit=fit, data=data, prob=0.9, rng=0, n_resamples=199, truth=None, freq="auto",
                   subset=[], say=lambda *_: None)  # fmt: skip
    rep = Report("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _sec_passk(ctx, rep, "pass-k")
        except _Skip as why:  # pragma: no cover - the data above have 4 runs per cell
            raise AssertionError(f"section skipped: {why}") from None
    return rep.blocks[0]


@pytest.fixture(scope="module")
def data_section() -> dict:
    """The section of ``_data()`` alone (no fit), computed once: seven tests read it."""
    return _section(_data())


def test_unbiased_columns_are_the_estimators_interval_and_flags(data_section):
    data = _data()
    sec = data_section
    table = sec["table"]
    # each note once in the text, a letter per row: read the rows' flags back from the letters
    legend = sec["text"].split("`note` marks a row's interval notes by letter: ")[1].rstrip(".")
    words = {}
    for entry in legend.split("; "):
        key, what = entry.split(": ", 1)
        words[key[0]] = ("unbiased: " if "(the unbiased estimator's interval)" in key else "") + what
    table = table.assign(flag=["; ".join(words[x] for x in str(n).split(",") if x) for n in table["note"]])
    ref = freq.pass_hat_k(data, [1, 2, 3, 4], prob=0.9).to_frame()
    for (agent, k), row in table.iterrows():
        want = ref.loc[(agent, k)]
        assert row["unbiased"] == want["estimate"]
        assert row["unbiased 90% lower (new tasks; logit t or bound)"] == want["lower"]
        assert row["unbiased 90% upper (new tasks; logit t or bound)"] == want["upper"]
        flag = str(want["ci_flag"] or "")
        expected = flag + ("; " if flag else "") + f"fewer than {FEW_TASKS} tasks" if want["n_tasks"] < FEW_TASKS else flag
        assert row["flag"] == (f"unbiased: {expected}" if expected else "")
    assert set(table.loc["never", "flag"]) == {"unbiased: exact bound"}
    assert (table.loc["never", "unbiased 90% lower (new tasks; logit t or bound)"] == 0).all()


def test_text_describes_the_interval_the_estimator_computed(data_section):
    data = _data()
    detail = freq.pass_hat_k(data, [1], prob=0.9).ci.attrs["ci_detail"]
    text = data_section["text"]
    assert detail.split(": ", 1)[1] in text
    assert "logit scale" in text and "shown inside [0, 1]" not in text


def test_text_without_a_fit_sets_the_unbiased_estimate_beside_nothing(data_section):
    """With data alone there is no posterior: the text must not say the unbiased estimate is of
    these tasks' pass^k "too" (beside a model that was not fitted).
    """
    text = data_section["text"]
    assert "The unbiased estimate is of these tasks' pass^k (each cell's" in text and "pass^k too" not in text


def test_text_says_the_unbiased_interval_takes_the_task_clusters(data_section):
    """Tasks in 4 clusters of 3 where a cluster succeeds or fails together: the text says the unbiased
    interval takes the clusters as its unit, and gives the clusters' design effect on an agent's mean (median
    over agents of statsmodels' cluster-robust, uncorrected, against HC0 variance of the mean).
    Without clusters it says nothing of them.
    """
    import statsmodels.api as sm

    rng = np.random.default_rng(8)
    fam = np.repeat(["a", "b", "c", "d"], 3)
    p = np.repeat(rng.uniform(0.05, 0.95, (3, 4)), 3, axis=1)  # one rate per agent x cluster
    score = rng.binomial(1, p[..., None], size=(3, 12, 4)).astype(float)
    data = _data().assign(score=(("agent", "task", "run"), score)).assign_coords(
        cluster=("task", fam, {"source_column": "family"})
    )
    text = _section(data)["text"]
    m = score.mean(2)
    ratios = []
    for y in m:
        x = np.ones((12, 1))
        cl = sm.OLS(y, x).fit(cov_type="cluster", cov_kwds={"groups": np.repeat(np.arange(4), 3), "use_correction": False})
        ratios.append(float(cl.bse[0] ** 2 / sm.OLS(y, x).fit(cov_type="HC0").bse[0] ** 2))
    assert np.median(ratios) > 1.5  # the clusters matter here, so the sentence is tested
    assert "come in 4 clusters (`family`), which that interval takes as its unit" in text
    assert "4 clusters of `family` as the unit: CR2 cluster-robust" in text  # the estimator's own detail
    assert f"varies {np.median(ratios):.2f} times as much over the clusters" in text
    assert "clusters" not in data_section["text"]


@pytest.mark.slow  # a small beta-binomial fit
def test_a_beta_binomial_fits_columns_are_these_tasks_pass_k():
    """The section called ``pass_hat_k(fit, k)`` (the conditional expectation over the observed tasks)
    and labelled it "a new task": on tau-bench pass^1 came out 0.42 [0.39, 0.45] beside the fit's
    own new-task mean 0.43 [0.33, 0.53]. It is now these tasks' own pass^k, as for the crossed model.
    """
    from hierbench import metrics
    from hierbench.bayes import build_beta_binomial
    from hierbench.bayes import fit

    data = _data().sel(agent=["low", "high"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(build_beta_binomial(data), draws=150, tune=150, chains=2, rng=1, progress=False)
    sec = _section(data, fit=dt)
    ref = metrics.pass_hat_k(dt, k=[1, 2, 3, 4], prob=0.9, min_runs="k", realised=True, rng=0)
    assert ref.attrs["tasks"] == "observed" and ref.attrs["draws_of"] == "realised task average"
    want = ref.to_frame()
    for (agent, k), row in sec["table"].iterrows():
        assert row["Bayes (same tasks)"] == want.loc[(agent, k), "estimate"]
        assert row["Bayes (same tasks) 90% lower"] == want.loc[(agent, k), "lower"]
        assert row["Bayes (same tasks) 90% upper"] == want.loc[(agent, k), "upper"]
    assert "beta_binomial model's posterior mean and 90% equal-tailed interval are of these tasks' own" in sec["text"]
    assert "a new task" not in sec["text"]


@pytest.mark.slow  # a small beta-binomial fit
def test_a_fit_alone_says_how_many_tasks_each_row_used():
    """With a fit and no data the table had no `tasks (>= k runs)` column, though the text points to it,
    and an agent with no task run k times showed a row of NaN with no word. The counts now come from
    the fit's runs per cell (by hand below), and such a row is dropped and named.
    """
    from hierbench.bayes import build_beta_binomial
    from hierbench.bayes import fit

    data = _data().sel(agent=["low", "high"])
    score = data["score"].values.copy()
    score[1, 6:, 1:] = np.nan  # `high` ran tasks 6-11 once
    data = data.assign(score=(("agent", "task", "run"), score))
    data = xr.concat([data, data.sel(agent=["low"]).assign_coords(agent=["once"])], dim="agent")
    once = data["score"].values
    once[2, :, 1:] = np.nan  # `once` ran every task once
    data = data.assign(score=(("agent", "task", "run"), once))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(build_beta_binomial(data), draws=150, tune=150, chains=2, rng=1, progress=False)
    block = _section(None, fit=dt)
    table, text = block["table"], block["text"]
    runs = np.isfinite(once).sum(2)  # runs per (agent, task), by hand
    for (agent, k), row in table.iterrows():
        i = ["low", "high", "once"].index(agent)
        assert row["tasks (>= k runs)"] == int((runs[i] >= k).sum())
    assert ("once", 2) not in table.index and "No task was run k times by: once (k = 2)" in text


def test_text_says_where_k_stops(data_section):
    """METR's cells hold up to 96 runs and the section shows k = 1..8; the text said "the figure every k"."""
    rng = np.random.default_rng(4)
    data = xr.Dataset(
        {"score": (("agent", "task", "run"), rng.binomial(1, 0.6, size=(2, 12, 10)).astype(float))},
        coords={"agent": ["a", "b"], "task": [f"t{i}" for i in range(12)], "run": np.arange(10)},
    )
    text = _section(data)["text"]
    assert "The table shows k = 1, 2, 8; the figure every k from 1 to 8. k stops at 8; the busiest cells hold 10 runs." in text
    assert "k stops at" not in data_section["text"]  # 4 runs per cell: every k is shown


def test_tau_bench_table_shows_every_k_the_paper_does(shared_data):
    """With four runs per task the table shows pass^1..4 (it showed k = 1, 2, 4), so a reader can
    hold it against tau-bench's published table: 0.420, 0.273, 0.220, 0.200 (README line 18,
    ``PROVENANCE.md``), which the unbiased column reproduces to its three decimals.
    """
    from hierbench.data import load_tau_bench_airline

    data = load_tau_bench_airline(shared_data)
    sec = _section(data)
    table = sec["table"]
    assert list(table.index.get_level_values("k")) == [1, 2, 3, 4]
    assert np.round(table["unbiased"].to_numpy(), 3).tolist() == [0.420, 0.273, 0.220, 0.200]
    assert "The table shows k = 1, 2, 3, 4; the figure every k from 1 to 4." in sec["text"]


def test_the_pass1_bound_beside_a_flag_is_over_the_clusters_and_says_so():
    """An agent that failed all 12 tasks, in 4 clusters of 3: the bound the report puts beside the
    bootstrap's flag is Clopper-Pearson's no-success bound over the 4 clusters (1 - 0.025^(1/4)),
    not over 12 independent tasks, and its text counts the clusters.
    """
    from hierbench.report import pass1_bounds

    score = np.zeros((2, 12, 3))
    score[1] = np.random.default_rng(4).integers(0, 2, (12, 3))
    data = xr.Dataset(
        {"score": (("agent", "task", "run"), score)},
        coords={"agent": ["zero", "mixed"], "cluster": ("task", np.repeat(list("abcd"), 3))},
    )
    text = pass1_bounds(data, 0.95)
    assert text["zero"] == f"[0.000, {1 - 0.025 ** 0.25:.3f}] at 95% over 12 tasks in 4 clusters"
    assert text["mixed"] == ""
    assert pass1_bounds(data.drop_vars("cluster"), 0.95)["zero"] == f"[0.000, {1 - 0.025 ** (1 / 12):.3f}] at 95% over 12 tasks"


def test_the_figure_of_a_log_alone_draws_the_intervals_its_caption_names(data_section):
    """A log alone (no fit): the caption said "(90% bands)" where the figure drew bare points. Now the
    unbiased estimates carry their intervals as bars (the table's own ends), and the caption says so.
    """
    import matplotlib.pyplot as plt
    from matplotlib.container import ErrorbarContainer

    from hierbench.report._figures import passk_curves

    data = _data()
    sec = data_section
    (name, caption), = sec["figures"]
    assert name == "passk_curves" and "bands" not in caption
    assert caption == "pass^k against k per agent (the unbiased estimates with their 90% intervals as bars)."
    ref = freq.pass_hat_k(data, [1, 2], prob=0.9).to_frame()[["estimate", "lower", "upper"]]
    fig = passk_curves(None, ref, prob=0.9, title="t")
    bars = [c for c in fig.axes[0].containers if isinstance(c, ErrorbarContainer)]
    assert len(bars) == 3  # one per agent
    for c, agent in zip(bars, ["low", "high", "never"], strict=True):
        seg = np.array([s[:, 1] for s in c.lines[2][0].get_segments()])  # (k, [low end, high end])
        np.testing.assert_allclose(seg, ref.loc[agent][["lower", "upper"]].to_numpy())
    plt.close(fig)


def test_a_numeric_grade_scale_reads_as_grades_not_a_python_list():
    """The wine judges' 1-5 ratings: the pass^k note said `score` is graded "on [1.0, 2.0, 3.0, 4.0,
    5.0]" (a list's repr), and the abilities axis the same; now "1, 2, 3, 4, 5".
    """
    from types import SimpleNamespace

    from hierbench.report._passk import _scale_text

    design = SimpleNamespace(categories=np.array([1.0, 2.0, 3.0, 4.0, 5.0]), response="score")
    assert _scale_text(SimpleNamespace(grade_labels=lambda: None), design) == "1, 2, 3, 4, 5"
    words = SimpleNamespace(grade_labels=lambda: ["no", "perhaps", "yes"])
    three = SimpleNamespace(categories=np.array([0.0, 1.0, 2.0]), response="score")
    assert _scale_text(words, three) == "0 = no, 1 = perhaps, 2 = yes (the threshold g is the grade's number)"


def test_the_table_keeps_the_logs_agent_order(data_section):
    """The pass^k table sorted the agents by name ("<b>mid</b> & co" first, '<' sorting before letters)
    where every other table keeps one order; now the report's one order (audit W: the summary's, by
    mean score per task, highest first, ties by name; pandas on the log below), then k.
    """
    data = _data()
    means = data["score"].mean("run").to_pandas().mean(axis=1)
    want = sorted(means.index, key=lambda a: (-means[a], a))
    assert want == ["high", "low", "never"]  # not the log's order (low, high, never)
    table = data_section["table"]
    assert list(dict.fromkeys(table.index.get_level_values("agent"))) == want
    assert table.loc["low"].index.tolist() == [1, 2, 3, 4]


def test_a_posterior_mean_outside_its_interval_is_said():
    """METR binarised, GPT-4 0314 at k = 8: the report's Bayes column read 3e-9 beside [1.5e-23, 5e-10]
    with no note. Draws in (0, 1) where 2% sit at 0.5 and the rest below 1e-9 (a product of small
    probabilities, now and then not small), summarised by numpy, must be flagged; a symmetric
    posterior must not.
    """
    import numpy as np
    import pandas as pd

    from hierbench.report._passk import _interval_flags

    g = np.random.default_rng(0)
    d = np.where(g.random(40_000) < 0.02, 0.5, 1e-9 * g.random(40_000))
    skewed = (d.mean(), *np.quantile(d, [0.025, 0.975]))
    assert skewed[0] > skewed[2]  # the premise, from numpy alone
    mean, lo, hi = (pd.Series([skewed[i], 0.2]) for i in range(3))
    lo[1], hi[1] = 0.1, 0.3
    _, _, flags = _interval_flags(lo, hi, mean)
    assert flags[0].startswith("mean outside the interval: a skewed posterior") and flags[1] == ""


def test_the_report_says_when_pass_k_rows_stand_on_fewer_tasks_as_k_grows(tmp_path):
    """METR binarised in the report too: the human's pass^k curve fell from 0.825 to 0.129, largely because
    k = 4 kept 8 of its 83 tasks. The agents named are those whose count of tasks with >= k runs
    changes with k (numpy, by hand); an agent with every task at 5 runs is not named.
    """
    import warnings

    import numpy as np
    import xarray as xr

    from hierbench.report import build

    g = np.random.default_rng(4)
    s = (g.random((3, 12, 5)) < 0.6).astype(float)
    s[1, :1, 2:] = np.nan  # "slight": 1 of its 12 tasks holds 2 runs
    s[2, :7, 2:] = np.nan  # "ragged": 7 of them
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)}, coords={"agent": ["full", "slight", "ragged"]})
    runs = (~np.isnan(s)).sum(-1)
    assert [len({int((r >= k).sum()) for k in range(1, 6)}) > 1 for r in runs] == [False, True, True]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the pass^k section is read: no frequentist half (the same section with it)
        md = build(data=ds, path=tmp_path / "r.md", freq=None, progress=False).read_text()
    section = " ".join(md.split("## Reliability")[1].split("\n## ")[0].split())
    # the agent that loses most named first (7 of 12 tasks against 1 of 12)
    assert "fewer as k grows for ragged, slight: their pass^k at different k are over different tasks" in section
