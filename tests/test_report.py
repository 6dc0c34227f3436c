"""report: tables from result objects, figures confined to the report folder, HTML and Markdown, build()."""

import base64
import re
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from arviz_base import from_dict

from hierbench.report import SECTIONS
from hierbench.report import Report
from hierbench.report import as_table
from hierbench.report import build
from hierbench.report import markdown_table
from hierbench.testing import simulate_eval

#: the frequentist results a test of the abilities or side-by-side section (or of a log's figures) does not
#: read, left out of its report: those sections read the bootstrap and pass^1's bound alone, and their text,
#: tables and figures are the same with these results (checked on these tests' logs)
ABILITIES_ONLY = {"compare": None, "person_fit": None, "variance": None}


def _md_cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]


def test_markdown_table_writes_every_cell_and_nan():
    df = pd.DataFrame({"mean": [0.5, np.nan], "n": [3, 4], "ok": [True, False]}, index=["a", "b|c"])
    text = markdown_table(df, digits=2).splitlines()
    assert _md_cells(text[0]) == ["", "mean", "n", "ok"]
    assert _md_cells(text[2]) == ["a", "0.50", "3", "yes"]
    assert _md_cells(text[3]) == ["b\\|c", "NaN", "4", "no"]


def _posterior_tree():
    rng = np.random.default_rng(0)
    return from_dict(
        {"posterior": {"ability": rng.normal(size=(2, 50, 3))}},
        dims={"ability": ["agent"]},
        coords={"agent": ["a", "b", "c"]},
    )


def test_report_writes_markdown_and_a_forest_png(tmp_path):
    r = Report("Test report")
    r.section("Agents", "Three agents.", table=pd.DataFrame({"x": [1.0]}, index=["a"]))
    r.forest(_posterior_tree(), ["ability"], "forest", "Posterior abilities")
    path = r.write(tmp_path, metadata={"seed": 0})
    body = path.read_text()
    assert path.name == "report.md" and body.startswith("# Test report")
    assert "## Agents" in body and "![Posterior abilities](forest.png)" in body
    png = (tmp_path / "forest.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def test_table_from_a_bootstrap_result_one_row_per_agent(tmp_path):
    """Issue 14: `section(table=bootstrap_result)` raised AttributeError; now one row per agent."""
    from hierbench.freq import bootstrap_ci

    ds, _ = simulate_eval(n_agents=3, n_tasks=15, n_runs=2, rng=1)
    res = bootstrap_ci(ds, n_resamples=199, prob=0.95, rng=0)
    r = Report("t")
    r.section("Bootstrap", table=res)
    df = r.blocks[0]["table"]
    assert list(df.index.astype(str)) == [str(a) for a in ds.agent.values]
    np.testing.assert_array_equal(df["lower"].to_numpy(), res.ci.sel(ci_bound="lower").values)
    np.testing.assert_array_equal(df["upper"].to_numpy(), res.ci.sel(ci_bound="upper").values)
    text = r.write(tmp_path / "r.md").read_text()
    first = str(ds.agent.values[0])
    row = next(line for line in text.splitlines() if line.startswith(f"| {first} |"))
    assert f"{float(res.ci.sel(agent=first, ci_bound='upper')):.3f}" in row


def test_table_from_an_interval_dataarray_puts_ends_in_columns():
    ci = xr.DataArray(
        [[0.1, 0.3], [0.2, 0.5]],
        dims=("agent", "ci_bound"),
        coords={"agent": ["x", "y"], "ci_bound": ["lower", "upper"]},
        attrs={"ci_prob": 0.95, "ci_kind": "wilson"},
    )
    df = as_table(ci)
    assert df.loc["y", "upper"] == 0.5 and df.loc["x", "lower"] == 0.1
    assert (df["ci_kind"] == "wilson").all() and (df["ci_prob"] == 0.95).all()
    with pytest.raises(TypeError, match=r"a report table must be a DataFrame"):
        as_table(object())


@pytest.mark.parametrize("name", ["../../x", "a/b", "/abs", "..", ".hidden", ""])
def test_figure_names_are_confined_to_the_report_folder(name):
    import matplotlib.pyplot as plt

    fig = plt.figure()
    with pytest.raises(ValueError, match=r"plain file name inside the report folder"):
        Report("t").figure(name, fig)
    plt.close(fig)


@pytest.mark.parametrize("suffix", [".html", ".md"])
def test_write_refuses_to_overwrite_unless_asked(tmp_path, suffix):
    path = tmp_path / f"report{suffix}"
    path.write_text("mine")
    r = Report("t")
    r.section("A", "text")
    with pytest.raises(FileExistsError, match=r"would replace existing files"):
        r.write(path)
    assert path.read_text() == "mine"
    r.write(path, overwrite=True)
    assert "mine" not in path.read_text()


def test_overwriting_a_markdown_report_leaves_no_earlier_figures_beside_it(tmp_path):
    """An earlier report drew a trace plot; the new one, written over it, draws only `a`: the
    `<stem>_figures/` folder must then hold `a.png` alone, not the earlier log's trace.
    """
    import matplotlib.pyplot as plt

    figs = tmp_path / "r_figures"
    figs.mkdir()
    (figs / "trace_worst.png").write_bytes(b"an earlier log's trace")
    (figs / "notes.txt").write_text("not a figure: kept")
    r = Report("t")
    r.section("A", "text")
    fig = plt.figure()
    r.figure("a", fig)
    plt.close(fig)
    r.write(tmp_path / "r.md", overwrite=True)
    assert sorted(p.name for p in figs.iterdir()) == ["a.png", "notes.txt"]


def test_contents_number_the_sections_and_list_an_appendix_apart():
    # the demo appends its printed walk-through, whose headings carry their own numbers
    # ("1. Data"): in one numbered list they read "11. 1. Data"
    from html.parser import HTMLParser

    r = Report("t")
    r.section("Data summary", "x")
    r.section("Abilities", "y")
    r.section("1. Data", "z", id="appendix-1", appendix=True)
    r.section("2. Summary", "w", id="appendix-2", appendix=True)

    class Lists(HTMLParser):
        def __init__(self):
            super().__init__()
            self.lists, self.inside = [], False

        def handle_starttag(self, tag, attrs):
            if tag == "nav":
                self.inside = True
            elif self.inside and tag in ("ol", "ul"):
                self.lists.append((tag, []))
            elif self.inside and tag == "a":
                self.lists[-1][1].append(dict(attrs)["href"])

        def handle_endtag(self, tag):
            self.inside = self.inside and tag != "nav"

    parser = Lists()
    parser.feed(r.to_html())
    assert parser.lists == [("ol", ["#data-summary", "#abilities"]), ("ul", ["#appendix-1", "#appendix-2"])]
    r2 = Report("t")
    r2.section("Only", "x")
    parser = Lists()
    parser.feed(r2.to_html())
    assert parser.lists == [("ol", ["#only"])]


def test_html_is_self_contained(tmp_path):
    import matplotlib.pyplot as plt

    r = Report("t <&>")
    r.section("Figures", "Some `code` and **bold**.")
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    r.figure("line", fig, "a line")
    html = r.write(tmp_path / "r.html").read_text()
    assert "<title>t &lt;&amp;&gt;</title>" in html
    srcs = re.findall(r'(?:src|href)="([^"#]*)"', html)
    assert srcs and all(s.startswith("data:image/png;base64,") for s in srcs)
    png = base64.b64decode(srcs[0].split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<script" not in html and "http" not in html
    assert not list(tmp_path.glob("*.png"))


@pytest.mark.slow
def test_build_from_data_alone_writes_every_section(tmp_path):
    ds, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=3, n_clusters=4, rng=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = build(data=ds, path=tmp_path / "r.html", n_resamples=199, progress=False)
    html = out.read_text()
    for sid in SECTIONS:
        assert f'id="{sid}"' in html, sid
    # the Bayesian sections say why they are empty instead of vanishing
    conv = html.split('id="convergence"')[1].split("</section>")[0]
    assert "no fit given" in conv
    md = build(data=ds, path=tmp_path / "r.md", n_resamples=199, progress=False)
    assert "## Data summary" in md.read_text()
    assert (tmp_path / "r_figures" / "abilities_forest.png").exists()
    with pytest.raises(FileExistsError):  # the refusal is read, not the report it would write: no frequentist half
        build(data=ds, path=tmp_path / "r.html", freq=None, progress=False)
    with pytest.raises(ValueError, match=r"give `fit`, `data` or both"):
        build(path=tmp_path / "x.html")


@pytest.fixture(scope="module")
def one_agent(tmp_path_factory):
    """The report of one simulated agent's log (15 tasks, 99 resamples), by runs per cell: ``one_agent(n_runs)``
    gives ``(ds, md)``, each built once (three tests read the 3-run report).
    """
    built = {}

    def get(n_runs: int = 3):
        if n_runs not in built:
            ds, _ = simulate_eval(n_agents=1, n_tasks=15, n_runs=n_runs, rng=2)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                path = build(data=ds, path=tmp_path_factory.mktemp("one") / "r.md", n_resamples=99, progress=False)
            built[n_runs] = ds, path.read_text()
        return built[n_runs]

    return get


def test_one_agent_says_there_is_nothing_to_pair(one_agent):
    """tau-bench's airline trials hold one model: the pairwise section says so, not an error's text."""
    ds, md = one_agent(3)
    pairs = md.split("## Does A beat B?")[1].split("\n## ")[0]
    assert f"one agent ({ds.agent.values[0]}): no pair to compare" in pairs
    assert "Error" not in pairs


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_data_summary_says_what_runs_the_models_see_when_errors_are_excluded(tmp_path):
    # METR read with errors='exclude' said "runs per cell ... max 96" and "82 of 913 cells never
    # run" while the fit saw at most 18 scored runs per cell and 56 more empty cells: the runs
    # attempted (errored included) and the runs scored are now both said; expected values by
    # pandas from the records themselves
    from hierbench.data import from_records
    from hierbench.data import read_report

    rng = np.random.default_rng(4)
    rows = [(a, t, r, float(rng.random() < 0.5), bool(rng.random() < p_err))
            for a, p_err in (("a", 0.0), ("b", 0.4), ("c", 0.9)) for t in range(6) for r in range(1 + t % 3)]
    df = pd.DataFrame(rows, columns=["agent", "task", "run", "score", "error"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = from_records(df, error="error", errors="exclude")
    attempted = df.groupby(["agent", "task"]).size()
    scored = df[~df["error"]].groupby(["agent", "task"]).size()
    rep = read_report(ds)
    assert rep["runs_per_cell"] == {"min": attempted.min(), "median": attempted.median(), "max": attempted.max()}
    assert rep["scored_runs_per_cell"] == {"min": scored.min(), "median": scored.median(), "max": scored.max()}
    assert rep["n_cells_without_score"] == len(attempted) - len(scored) > 0
    assert rep["scored_differs"] and not read_report(from_records(df.assign(error=False), error="error"))["scored_differs"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the data summary's counts are read, not the frequentist half: left out (freq=None)
        md = build(data=ds, path=tmp_path / "r.md", freq=None, progress=False).read_text()
    summary = md.split("## Data summary")[1].split("\n## ")[0]
    assert (f"the same counting only runs with a score (errored runs excluded; what the models see): "
            f"min {scored.min()}, median {scored.median():g}, max {scored.max()}, and "
            f"{len(attempted) - len(scored)} attempted cells left without any score") in summary  # fmt: skip
    # without errors the sentence is not there
    clean = df.assign(error=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        md = build(data=from_records(clean, error="error"), path=tmp_path / "c.md", freq=None, progress=False).read_text()
    assert "only runs with a score" not in md


@pytest.mark.slow
def test_diagnostic_plots_take_labels_with_slashes():
    """METR task ids hold '/' (``blackbox/charm``); DataTree variable names cannot."""
    from hierbench.report._figures import rank_plot
    from hierbench.report._figures import trace_plot

    rng = np.random.default_rng(3)
    post = xr.Dataset(
        {"task_effect": (("chain", "draw", "task"), rng.normal(size=(2, 60, 2)))},
        coords={"chain": [0, 1], "draw": np.arange(60), "task": ["blackbox/charm", "a/b/c"]},
    )
    worst = [("task_effect", {"task": "blackbox/charm"}), ("task_effect", {"task": "a/b/c"})]
    r = Report("t")
    r.section("Diagnostics")
    r.figure("rank", rank_plot(post, worst))
    r.figure("trace", trace_plot(post, worst))
    assert all(png[:4] == b"\x89PNG" for png in r.figures.values())



@pytest.mark.slow
def test_trace_plot_of_long_task_names_keeps_its_labels_apart():
    """Five long 2PL names (34 characters once shortened): no label runs into the next row's."""
    from figure_overlap import overlaps

    from hierbench.report._figures import trace_plot

    tasks = ["swe/easy_see=true", "astropy__astropy_cumsum/main", "django__django-11099/long_name_x",
             "sympy__sympy-20590", "t5"]  # fmt: skip
    rng = np.random.default_rng(4)
    post = xr.Dataset(
        {"z_log_discrimination": (("chain", "draw", "task"), rng.normal(size=(2, 60, 5)))},
        coords={"chain": [0, 1], "draw": np.arange(60), "task": tasks},
    )
    pc = trace_plot(post, [("z_log_discrimination", {"task": t}) for t in tasks])
    fig = pc.viz["figure"]
    fig = fig.item() if hasattr(fig, "item") else fig
    fig.canvas.draw()
    assert overlaps(fig) == []
    # each row still names its parameter (on the density panel's x axis)
    labels = [ax.get_xlabel() for ax in fig.axes]
    assert sum(lab.startswith("z_log_discrimina") for lab in labels) == 5


def test_energy_plot_names_its_axes_and_counts_chains_in_whole_numbers():
    # arviz-plots drew the E-BFMI panel's chains on a continuous axis (ticks -0.5, 0, 0.5, ...)
    # and neither horizontal axis said what it measured
    from figure_overlap import overlaps

    from hierbench.report._figures import energy_plot

    rng = np.random.default_rng(5)
    energy = np.cumsum(rng.normal(size=(3, 200)), axis=1)
    fit = xr.DataTree.from_dict({
        "posterior": xr.Dataset({"mu": (("chain", "draw"), rng.normal(size=(3, 200)))}),
        "sample_stats": xr.Dataset({"energy": (("chain", "draw"), energy)}),
    })  # fmt: skip
    fig = energy_plot(fit).viz["figure"].item()
    fig.canvas.draw()
    (bfmi,) = [ax for ax in fig.axes if ax.get_title() == "BFMI"]
    assert [t.get_text() for t in bfmi.get_yticklabels()] == ["0", "1", "2"]
    assert all(ax.get_xlabel() for ax in fig.axes)
    assert overlaps(fig) == []


def test_ppc_plot_takes_a_mean_outside_its_quantile_band():
    """A skewed count (most draws 0) has its mean above its 95% quantile: still plotted."""
    from hierbench.report import ppc_plot

    dims = ("agent", "n_runs", "successes")
    shape = (1, 1, 3)
    check = xr.Dataset(
        {
            "observed": (dims, np.array([[[5.0, 1.0, 0.0]]])),
            "predicted_mean": (dims, np.array([[[4.0, 0.3, 0.1]]])),
            "predicted_lower": (dims, np.zeros(shape)),
            "predicted_upper": (dims, np.array([[[6.0, 0.0, 0.0]]])),
            "p_value": (dims, np.full(shape, 0.5)),
        },
        coords={"agent": ["a"], "n_runs": [2], "successes": [0, 1, 2]},
        attrs={"band_prob": 0.9},
    )
    fig = ppc_plot(check, title="t")
    assert fig.axes[0].get_xlabel() == "successes out of 2 runs"


def _synthetic_fit(rng=0):
    """A fit-shaped DataTree (no sampling): draws of each agent's expected score, energies, counts."""
    gen = np.random.default_rng(rng)
    agents = ["a", "b", "c"]
    level = np.array([0.3, 0.5, 0.7])
    post = xr.Dataset(
        {
            "mean_new_task": (
                ("chain", "draw", "agent"),
                level + 0.05 * gen.normal(size=(2, 300, 3)),
            ),
            # chain 1 stuck elsewhere: a genuine R-hat failure the report must find
            "sd_task": (
                ("chain", "draw"),
                np.abs(gen.normal(1.5, 0.1, size=(2, 300))) + np.array([[0.0], [0.5]]),
            ),
        },
        coords={"chain": [0, 1], "draw": np.arange(300), "agent": agents},
    )
    stats = xr.Dataset(
        {
            "energy": (("chain", "draw"), gen.normal(size=(2, 300))),
            "diverging": (("chain", "draw"), np.zeros((2, 300), bool)),
        },
        coords={"chain": [0, 1], "draw": np.arange(300)},
    )
    n_runs = xr.DataArray(
        [[3, 3, 0, 3], [3, 3, 3, 3], [3, 1, 3, 3]],
        dims=("agent", "task"),
        coords={"agent": agents, "task": ["t1", "t2", "t3", "t4"]},
    )
    dt = xr.DataTree.from_dict(
        {"posterior": post, "sample_stats": stats, "constant_data": xr.Dataset({"n_runs": n_runs})}
    )
    dt.attrs = {
        "hierbench_model": "custom",
        "diag_converged": 0,
        "diag_failures": '["max R-hat 1.05 > 1.01"]',
    }
    return dt, level


def _cells(html: str, sid: str) -> list[str]:
    """Every table cell of a report section, as text, in reading order."""
    from html_tables import read_tables

    part = html.split(f'id="{sid}"')[1].split("</section>")[0]
    return [str(v) if not isinstance(v, float) else f"{v:.3f}" for t in read_tables(part)
            for v in t.to_numpy().ravel()]  # fmt: skip


@pytest.fixture(scope="module")
def fit_alone_report(tmp_path_factory):
    """The report of the synthetic fit without data, built once: the fit, its HTML, and the
    overlapping text of each figure as it was rendered (``_collect_overlaps``).
    """
    dt, _ = _synthetic_fit()
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        found = _collect_overlaps(mp)
        warnings.simplefilter("ignore")
        out = build(dt, path=tmp_path_factory.mktemp("fit_alone") / "fit.html", progress=False)
    return dt, out.read_text(), found


@pytest.mark.slow  # recomputes the synthetic fit's diagnostics (the report is shared with the overlap test)
def test_build_from_a_fit_alone(fit_alone_report):
    """The Bayesian sections from a fit without data; the numbers are the draws' own summaries."""
    dt, html, _ = fit_alone_report
    for sid in SECTIONS:
        assert f'id="{sid}"' in html, sid
    summary = html.split('id="data-summary"')[1].split("</section>")[0]
    # from constant_data: 3 agents x 4 tasks, 9 + 12 + 10 = 31 runs, one cell never run
    assert "3 agents x 4 tasks, 31 runs, 1 agent x task cells never run" in summary
    conv = html.split('id="convergence"')[1].split("</section>")[0]
    assert "FAILED convergence checks: R-hat" in conv and "Verdict: not converged" in conv
    # and said under the title, before any section (audit Q, finding 12: it was in this section only)
    top = html.split("</h1>", 1)[1].split("<nav>", 1)[0]
    assert '<p class="note"><b>Fit not converged: R-hat' in top
    assert "Do not trust its summaries" in top
    # every check states its limit and why; the R-hat limit names its formula
    assert "chi2(m - 1) / (m - 1)" in conv and "Vehtari et al. 2021" in conv
    assert 'data-name="rank_worst"' in conv and 'data-name="energy"' in conv
    # the abilities table: posterior mean and 95% equal-tailed interval, by numpy
    abil = _cells(html, "abilities")
    draws = dt["posterior"]["mean_new_task"].values.reshape(-1, 3)
    lo, hi = np.quantile(draws, [0.025, 0.975], axis=0)
    for j in range(3):
        for v in (draws[:, j].mean(), lo[j], hi[j]):
            assert f"{v:.3f}" in abil
    # no bootstrap is in this report: its text must not speak of one as if it stood beside
    abil_text = html.split('id="abilities"')[1].split("</section>")[0]
    assert "the same target as the task bootstrap" not in abil_text
    assert "give the run log (<code>--data</code>) to put it beside" in abil_text
    # P(c > a) is 1 in every draw here; the ranks follow the levels
    pair = html.split('id="pairwise"')[1].split("</section>")[0]
    assert 'data-name="prob_superiority"' in pair
    # three agents, three pairs: the probabilities are per pair and say they are not adjusted
    assert "pair by pair: not adjusted for the 3 pairs" in pair
    ranks = _cells(html, "ranks")
    assert ranks.index("c") < ranks.index("b") < ranks.index("a")
    # sections that need data say so
    side = html.split('id="side-by-side"')[1].split("</section>")[0]
    assert "needs both a fit and data" in side


def test_rank_test_is_the_p_value_the_rank_plot_prints_and_a_flag_is_a_warning():
    """The verdict never contradicts the rank plots: a flagged panel is a warning in the verdict."""
    import matplotlib.pyplot as plt

    from hierbench.report._convergence import _check_rows
    from hierbench.report._convergence import _verdict
    from hierbench.report._figures import RANK_ENVELOPE
    from hierbench.report._figures import rank_plot
    from hierbench.report._figures import rank_tests

    gen = np.random.default_rng(7)
    x = gen.normal(size=(4, 400))
    x[0] += 1.0  # one chain sits a posterior sd away: the chains' ranks are not uniform
    post = xr.Dataset(
        {"x": (("chain", "draw"), x), "y": (("chain", "draw"), gen.normal(size=(4, 400)))},
        coords={"chain": np.arange(4), "draw": np.arange(400)},
    )
    worst = [("x", {}), ("y", {})]
    p = rank_tests(post, worst)
    pc = rank_plot(post, worst)
    fig = pc.viz["figure"].item() if hasattr(pc.viz["figure"], "item") else pc.viz["figure"]
    printed = sorted(t.get_text() for ax in fig.axes for t in ax.texts if t.get_text().startswith("p ="))
    assert printed == sorted(f"p = {v:.2g} (α = {1 - RANK_ENVELOPE:g}) " for v in p.values())
    plt.close(fig)
    assert p["x"] < 1 - RANK_ENVELOPE < p["y"]
    checks = [{"check": "r_hat", "value": 1.0, "at": "x", "limit": 1.01, "rule": "<=",
               "passed": True, "why": "w"}]  # fmt: skip
    table = _check_rows(checks, p, 1 - RANK_ENVELOPE)
    assert not table["passes"].iloc[-1]
    verdict, note = _verdict([], table)
    assert verdict == "warning" and "rank plots" in note
    assert _verdict([], _check_rows(checks, {"y": p["y"]}, 0.01))[0].startswith("converged")


def test_rank_check_allows_for_the_number_of_elements_the_plotted_ones_were_picked_from():
    """The most extreme of P elements is checked at 0.01 / P (Bonferroni), the R-hat check's P.

    Under convergence the smallest of P uniform p-values is below 0.01 / P with probability
    at most 0.01 (a union bound), so a fit with 1,130 elements whose worst panel shows
    p = 0.001 (a per-panel mark) passes, and the note says why the plot marks it.
    """
    from hierbench.report._convergence import _check_rows
    from hierbench.report._convergence import _verdict

    checks = [{"check": "r_hat", "value": 1.015, "at": "x", "limit": 1.025, "rule": "<=",
               "passed": True, "why": "w", "n_elements": 1130}]  # fmt: skip
    ranks = {"task_dev[a]": 0.001, "task_dev[b]": 0.2}
    table = _check_rows(checks, ranks, 0.01)
    row = table.iloc[-1]
    assert row["passes"] and row["limit"] == f"≥ {0.01 / 1130:.2g}" and row["value"] == "0.001"
    verdict, note = _verdict([], table, ranks, 0.01)
    assert verdict.startswith("converged") and "`task_dev[a]` (p = 0.001)" in note
    assert "task_dev[b]" not in note
    # the note is printed above the section's table and plots (the wine judges' report said "the
    # check above" of the table below it): where it points must be where they are
    rep = Report("t")
    rep.section("Convergence diagnostics", "text", table=table, note=note)
    import matplotlib.pyplot as plt

    rep.figure("rank_worst", plt.figure())
    md = rep.to_markdown()
    assert md.index(note) < md.index("| check") < md.index("rank_worst.png")
    assert "above" not in note and "table below" in note and "rank plots below" in note
    # below 0.01 / 1130 it is flagged, and the verdict is a warning
    low = {"task_dev[a]": 1e-6}
    assert _verdict([], _check_rows(checks, low, 0.01), low, 0.01)[0] == "warning"


# ---------------------------------------------------------------- issue 24: figures a reader can read


@pytest.mark.slow
def test_the_overlap_finder_sees_crowded_labels_and_a_legend_on_tick_labels():
    import matplotlib.pyplot as plt
    from figure_overlap import overlaps

    fig, ax = plt.subplots(figsize=(3, 3))
    ax.set_xticks(range(30), [f"label number {i}" for i in range(30)])
    assert len(overlaps(fig)) >= 25  # neighbours collide all along the axis
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(8, 3))  # 45-degree labels judged by their glyph boxes
    ax.set_xticks(range(10), [f"lab {i}" for i in range(10)], rotation=45, ha="right")
    assert overlaps(fig) == []
    plt.close(fig)
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="a long legend entry")
    ax.legend(loc="lower right", bbox_to_anchor=(1.0, -0.1))
    assert any("legend" in o for o in overlaps(fig))
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(4, 3))  # a short log axis: its minor labels collide
    ax.plot([1, 8], [1, 2])
    ax.set_xscale("log")
    assert any("tick label" in o for o in overlaps(fig))
    plt.close(fig)
    fig, ax = plt.subplots()  # an annotation is judged by its text, not by its arrow
    ax.annotate("a", (0.1, 0.1), xytext=(0.9, 0.9), arrowprops={"arrowstyle": "-"})
    ax.annotate("b", (0.9, 0.1), xytext=(0.1, 0.9), arrowprops={"arrowstyle": "-"})
    assert overlaps(fig) == []
    plt.close(fig)


def _collect_overlaps(monkeypatch) -> dict:
    """Check every figure a report renders for overlapping text, as it is rendered."""
    from figure_overlap import overlaps

    import hierbench.report._report as R

    found, orig = {}, R._png_bytes

    def checked(obj, name):
        found[name] = overlaps(R.figure_of(obj))
        return orig(obj, name)

    monkeypatch.setattr(R, "_png_bytes", checked)
    return found


@pytest.mark.slow  # renders a full report (and reads the fit's, built once for the test above)
def test_report_figures_have_no_overlapping_text(fit_alone_report, tmp_path, monkeypatch):
    found = _collect_overlaps(monkeypatch)
    ds, _ = simulate_eval(n_agents=12, n_tasks=30, n_runs=3, n_clusters=5, rng=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # its figures are read, which draw no paired test, person fit or G-study (the same PNGs without them)
        build(data=ds, path=tmp_path / "data.html", n_resamples=199, progress=False, freq=ABILITIES_ONLY)
    assert {"rank_worst", "trace_worst", "energy", "abilities_forest", "passk_curves"} <= set(found) | set(fit_alone_report[2])
    found = {**{f"fit report: {k}": v for k, v in fit_alone_report[2].items()}, **found}
    assert not {k: v for k, v in found.items() if v}


@pytest.mark.slow  # a small crossed fit
def test_variance_rows_hold_every_component_of_both_halves():
    """With tasks in clusters both halves name task:cluster and agent:task:cluster; the table's rows
    must still add up to every component each half estimated (the report once summed only the
    cluster part into the Bayesian task row, a tenth of the task variance).
    """
    from hierbench.bayes import build_crossed
    from hierbench.bayes import fit
    from hierbench.freq import variance_components
    from hierbench.metrics import crossed_variance_components
    from hierbench.report._context import _Context
    from hierbench.report._variance import _bayes_part
    from hierbench.report._variance import _gtheory_part
    from hierbench.report._variance import _rows
    from hierbench.testing import simulate_eval

    data, _ = simulate_eval(4, 40, 3, n_clusters=5, sd_cluster=0.5, rng=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(build_crossed(data), draws=150, tune=150, chains=2, rng=1, progress=False)
        ctx = _Context(fit=dt, data=data, prob=0.95, freq="auto")
        rows = _rows()
        bayes = _bayes_part(ctx, rows)
        gt, _ = _gtheory_part(ctx, rows)
        g = variance_components(data)
    vc = crossed_variance_components(dt, scale="probability")
    assert {"task:cluster", "agent:task:cluster"} <= {str(c) for c in vc.estimate["component"].values}
    np.testing.assert_allclose(bayes["Bayes estimate"].sum(), float(vc.estimate.sum()), rtol=1e-9)
    assert "task:cluster" in bayes.loc["task", "Bayes terms"]
    comp = (g.components if hasattr(g, "components") else g.estimate).to_series()
    np.testing.assert_allclose(gt.filter(like="G-theory (").iloc[:, 0].sum(), float(comp.sum()), rtol=1e-9)
    # nothing failed; G-theory's own notice of a REML component at 0 is the one note it may add
    assert not [w for w in ctx.warnings if "at the boundary 0" not in w]


@pytest.mark.slow  # a small formula-model fit
def test_side_by_side_holds_a_formula_models_agent_means(tmp_path):
    """A build_mixed fit given with its data: the side-by-side section puts each agent's posterior
    mean score over its own tasks (metrics.mean_response, tasks='observed', in points / 100)
    beside the task bootstrap, instead of saying a fit or data is missing. The report is
    ``build``'s own, its sections cut to that one (``sections=``).
    """
    from hierbench.bayes import build_mixed
    from hierbench.bayes import fit
    from hierbench.metrics import mean_response
    from hierbench.testing import simulate_eval

    data, _ = simulate_eval(3, 30, 3, rng=4)
    model = build_mixed(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # 100 draws: the section's numbers are compared with mean_response of the same draws, whatever their number
        dt = fit(model, draws=100, tune=100, chains=2, rng=2, progress=False)
        # the side-by-side section reads the bootstrap alone: the paired tests, person fit and G-study are left out
        out = build(dt, data, path=tmp_path / "mixed.html", progress=False, n_resamples=199, freq=ABILITIES_ONLY,
                    sections=["side-by-side"])
    html = out.read_text()
    side = html.split('id="side-by-side"')[1].split("</section>")[0]
    assert "mean_response" in side and "needs both" not in side
    cells = _cells(html, "side-by-side")
    mr = mean_response(dt, model, tasks="observed")
    for v in mr.estimate.values / 100:
        assert f"{v:.3f}" in cells


def test_side_by_side_says_how_the_model_and_the_tasks_run_weigh_clusters():
    """SWE-bench by repository: Bayes lay 0.054 below the bootstrap for 23 of 25 agents, put down to
    the logit-normal task population alone; about 0.02 of it is that the model's new task comes from
    a new cluster (every cluster alike) while the tasks run weigh django's 231 tasks 231 times. By
    hand: cluster A's three tasks score 1, 1, 0.5 and B's one task 0 (mean over two agents, one run):
    0.625 per task, (5/6 + 0) / 2 = 0.417 per cluster. A fit without clusters says nothing of it.
    """
    from hierbench.report._shift import cluster_weights

    s = np.array([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])[:, :, None]
    tasks = ["t1", "t2", "t3", "t4"]
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)},
                    coords={"agent": ["a", "b"], "task": tasks, "cluster": ("task", ["A", "A", "A", "B"])})  # fmt: skip
    cd = xr.Dataset({"task_cluster_idx": ("task", [0, 0, 0, 1])}, coords={"task": tasks, "cluster": ["A", "B"]})
    fit = xr.DataTree.from_dict({"constant_data": cd})
    fit.attrs["hierbench_spec"] = '{"model": "crossed", "options": {"clusters": true}}'  # as fit() records it
    text = cluster_weights(fit, ds)
    assert "each of the 2 clusters weighs alike" in text
    assert "the mean score is 0.625 per task and 0.417 per cluster" in text
    bare = xr.DataTree.from_dict({"constant_data": cd.drop_vars("task_cluster_idx")})
    bare.attrs["hierbench_spec"] = '{"model": "crossed", "options": {"clusters": false}}'
    assert cluster_weights(bare, ds) == ""
    d = pd.Series([-0.04, -0.03, -0.03, -0.02, 0.01, -0.01, -0.04, -0.03, -0.02, -0.05])
    assert text in _shared_shift_of(d, text) and "clusters weighing alike" in _shared_shift_of(d, text)


def _shared_shift_of(d, clusters):
    from hierbench.report._shift import shared_shift

    return shared_shift(d, population=True, clusters=clusters)


def test_pair_note_sizes_the_agent_x_cluster_spread_the_crossed_model_leaves_out():
    """The note said the crossed model "has no agent x cluster term" and left the reader to guess
    whether it matters (SWE-bench: G-theory 0.0008; METR's task families: 0.016). It now gives
    G-theory's estimate and the SD it adds to a pair's mean difference, sqrt(2 v sum_c w_c^2):
    by hand, 3 clusters holding 20, 10 and 10 of 40 tasks give sum w^2 = 1/4 + 1/16 + 1/16 = 3/8.
    """
    from hierbench.freq import variance_components
    from hierbench.report._pairs import agent_cluster_note
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=4, n_tasks=40, n_runs=3, rng=2)
    ds = ds.assign_coords(cluster=("task", ["a"] * 20 + ["b"] * 10 + ["c"] * 10))
    g = variance_components(ds)
    v = float(g.components.sel(component="agent:cluster"))
    assert v > 0.001  # a spread to size (the simulation's clusters were drawn apart from its agents)
    fit = xr.DataTree()
    fit.attrs["hierbench_spec"] = '{"model": "crossed", "options": {"clusters": true}}'
    text = agent_cluster_note(fit, g, ds)
    assert f"variance at {v:.4f}" in text and "over these tasks' 3 clusters" in text
    assert f"an SD of about {np.sqrt(2 * v * 3 / 8):.3f} to a pair's mean difference" in text
    fit.attrs["hierbench_spec"] = '{"model": "crossed", "options": {"clusters": false}}'
    assert agent_cluster_note(fit, g, ds) == ""  # the model has no clusters: the caveat is not made
    assert agent_cluster_note(fit, None, ds) == ""


def test_characters_the_plotting_font_lacks_are_one_warning_line_not_one_per_glyph(tmp_path):
    """Two Chinese model names gave 16 "Glyph N missing from font(s) DejaVu Sans" lines (one per glyph
    and section). Now one line names the characters: those the font matplotlib picks has no glyph
    for (asked of the font file itself here), or no line where it has them all.
    """
    from matplotlib import font_manager
    from matplotlib import rcParams
    from matplotlib.ft2font import FT2Font

    from hierbench.report import build

    ds, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=2, rng=1)
    ds = ds.assign_coords(agent=["通义千问", "文心一言", "GPT-4o"])
    # 99 resamples (default 1999): the names the figures draw are read here, which the resamples do not change
    text = build(data=ds, path=tmp_path / "r.md", n_resamples=99, progress=False).read_text()
    font = FT2Font(font_manager.findfont(font_manager.FontProperties(family=rcParams["font.family"])))
    lacking = sorted({c for c in "通义千问文心一言" if font.get_char_index(ord(c)) == 0})
    assert "Glyph" not in text
    if lacking:
        assert f"Figures: {len(lacking)} characters of the labels are not in the plotting font" in text
        assert f"drawn as boxes: {', '.join(lacking)}." in text
    else:
        assert "drawn as boxes" not in text


def test_variance_figure_draws_g_theory_beside_the_bayes_bars():
    """The variance figure drew the crossed fit alone beside a table of both methods. G-theory's
    estimates are now diamonds on the same rows (whiskers where it has an interval), with a legend.
    """
    import matplotlib.pyplot as plt

    from hierbench.report import variance_plot

    bars = pd.DataFrame({"estimate": [0.004, 0.08, 0.15], "lower": [0.002, 0.06, 0.14], "upper": [0.007, 0.09, 0.16]},
                        index=["agent", "task", "run-to-run"])  # fmt: skip
    g = pd.DataFrame({"estimate": [0.0036, 0.076, 0.155], "lower": [0.001, "none", 0.147], "upper": [0.019, "none", 0.164]},
                     index=["agent", "task", "run-to-run"])  # fmt: skip
    fig = variance_plot(bars, title="t", xlabel="x", beside=g, labels=("Bayes", "G-theory"))
    ax = fig.axes[0]
    diamonds = next(line for line in ax.lines if line.get_marker() == "D")
    assert diamonds.get_xdata().tolist() == [0.0036, 0.076, 0.155]
    assert diamonds.get_ydata().tolist() == [2, 1, 0]  # the rows of the bars, top to bottom
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["G-theory", "Bayes"]
    plt.close(fig)


def test_side_by_side_names_a_shift_most_agents_share():
    """Differences of one sign for most agents are said to be the model's, with the count and median.

    "Most": 3 in 4 and a two-sided sign test below 0.05 (scipy: 9 of 10 gives 0.021, 7 of 8 0.070).
    """
    from scipy.stats import binomtest

    from hierbench.report._shift import shared_shift

    d = pd.Series([-0.04, -0.03, -0.03, -0.02, 0.01, -0.01, -0.04, -0.03, -0.02, -0.05])
    assert binomtest(9, 10).pvalue < 0.05 < binomtest(7, 8).pvalue
    text = shared_shift(d, population=True)
    assert f"median {d.median():+.3f}" in text and "lower for 9 of 10 agents" in text
    assert "task population" in text
    assert "task population" not in shared_shift(d[:8], population=True)  # 7 of 8: a coin gives it
    mixed = pd.Series([-0.02, 0.01, 0.02, -0.01, 0.03, -0.02])
    assert "task population" not in shared_shift(mixed, population=True)
    assert "task population" not in shared_shift(d, population=False)  # not the population target
    assert shared_shift(d[:3], population=True) == ""  # too few agents to speak of a shared shift


def _checklist_entry(md: str, item: str) -> str:
    rows = md.split("## Reporting checklist")[1].split("\n## ")[0].splitlines()
    cells = next(_md_cells(r) for r in rows if r.startswith(f"| {item} "))
    return cells[1]


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_checklist_pairs_entry_is_the_comparison_the_report_ran(tmp_path, one_agent):
    """The checklist once said "yes: each pair compared ... max-T ..., else Holm" whatever ran, and
    "yes" for tau-bench's one model, which has no pair: it now quotes the comparison's own sentence.
    """
    from hierbench.freq import compare_agents
    from hierbench.report import pair_sentence

    one, md1 = one_agent(3)  # the one-agent log's report (1 agent x 15 tasks x 3 runs, 99 resamples)
    three, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=2, rng=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        md3 = build(data=three, path=tmp_path / "three.md", n_resamples=99, progress=False).read_text()
        cmp = compare_agents(three, prob=0.95, rng=0)
    assert _checklist_entry(md1, "paired deltas") == f"none: one agent ({one.agent.values[0]}), no pair to compare"
    assert _checklist_entry(md3, "paired deltas") == f"yes: {pair_sentence(cmp, 0.05)} See the pairwise section."


def test_checklist_clustering_says_pass_k_intervals_take_the_clusters(tmp_path):
    """The clustering entry says which intervals take the task clusters as their unit; pass^k's
    unbiased interval now does too (cluster-robust over the clusters), and the entry says so for binary scores.
    """
    data, _ = simulate_eval(n_agents=2, n_tasks=12, n_runs=3, n_clusters=4, rng=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        md = build(data=data, path=tmp_path / "r.md", n_resamples=99, progress=False).read_text()
    n_cl = len(set(data["cluster"].values.tolist()))  # the simulation's own labels
    assert _checklist_entry(md, "clustering") == (  # each result's unit, as the report computed them (audit X)
        f"tasks in {n_cl} clusters (`cluster`); the bootstrap resamples whole clusters ({n_cl} of `cluster`); "
        f"the paired tests take clusters as their unit ({n_cl} of `cluster`); pass^k's unbiased intervals "
        "(computed here from the data) take the clusters as their unit"
    )


def test_variance_section_of_partial_credit_scores_speaks_of_scores_not_successes():
    """Wine-judge-like grades (0, 0.25, ..., 1), one per judge x bottle: the section said "variance of
    the cell success probability ... (binomial) parts". It now speaks of the score, and its G-theory
    row values are the two-way ANOVA's (by hand: (MS_agent - MS_res) / T, (MS_task - MS_res) / A, MS_res).
    """
    from hierbench.report._context import _Context
    from hierbench.report._variance import _sec_variance

    g = np.random.default_rng(6)
    y = np.clip(np.round((g.normal(0, 0.15, (9, 1)) + g.normal(0.5, 0.2, (1, 8)) + g.normal(0, 0.15, (9, 8))) * 4), 0, 4) / 4
    data = xr.Dataset({"score": (("agent", "task", "run"), y[..., None])},
                      coords={"agent": [f"j{i}" for i in range(9)], "task": [f"w{i}" for i in range(8)]})  # fmt: skip
    rep = Report("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _sec_variance(_Context(fit=None, data=data, prob=0.95, freq="auto"), rep, "variance")
    block = rep.blocks[0]
    assert "success probability" not in block["text"] and "binomial" not in block["text"]
    assert block["text"].startswith("Variance of the score (partial credit in [0, 1]")
    A, T = y.shape
    m, ra, ct = y.mean(), y.mean(1), y.mean(0)
    ms_a, ms_t = T * ((ra - m) ** 2).sum() / (A - 1), A * ((ct - m) ** 2).sum() / (T - 1)
    ms_r = ((y - ra[:, None] - ct[None, :] + m) ** 2).sum() / ((A - 1) * (T - 1))
    got = block["table"].iloc[:, 0].to_numpy(dtype=float)
    np.testing.assert_allclose(got, [(ms_a - ms_r) / T, (ms_t - ms_r) / A, ms_r], rtol=1e-9)


def test_variance_section_of_graded_scores_says_their_units(shared_data):
    """The wine judges' 1-5 ratings read with --levels: the section called them "partial credit in
    [0, 1], so score units squared", beside abilities on the grade scale. It now names the reading
    ((grade - 1) / 4) and the factor to squared grades, 16; the agent row is statsmodels' two-way
    ANOVA on the ratings themselves, divided by that factor.
    """
    import pandas as pd
    import statsmodels.api as sm
    import statsmodels.formula.api as smf

    from hierbench.data import from_records
    from hierbench.report._context import _Context
    from hierbench.report._variance import _sec_variance

    df = pd.read_csv(shared_data / "ordinal" / "wine.csv")
    data = from_records(df, agent="judge", task="bottle", score="rating", score_levels=[1, 2, 3, 4, 5])
    rep = Report("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _sec_variance(_Context(fit=None, data=data, prob=0.95, freq="auto"), rep, "variance")
    block = rep.blocks[0]
    assert "partial credit" not in block["text"]
    assert "the grades 1, 2, 3, 4, 5 read as (grade - 1) / 4, so in those units squared; times 16 for squared grades" in block["text"]
    aov = sm.stats.anova_lm(smf.ols("rating ~ C(judge) + C(bottle)", df).fit())
    ms_a, ms_r = aov.loc["C(judge)", "mean_sq"], aov.loc["Residual", "mean_sq"]
    np.testing.assert_allclose(block["table"].iloc[0, 0] * 16, (ms_a - ms_r) / 8, rtol=1e-9)


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_abilities_flag_a_bootstrap_over_fewer_than_ten_units(tmp_path):
    """A resampling interval over 8 tasks covers less than its level: the 95% percentile bootstrap
    (999 resamples) of the mean of 8 normal values covered 0.8825 of 400 samples here (seed 0; 0.8825
    of 4000 too, seed 1), over 5 Monte Carlo SEs below 0.95. The abilities table flags such agents
    (8 tasks) and not those with 12; with clusters the count is the clusters' (4 here), not the tasks'.
    The reports are ``build``'s own, their sections cut to that one (``sections=``).
    """
    g = np.random.default_rng(0)
    hits = 0
    for _ in range(400):  # 400 x 999 keeps the test quick; the SE of a rate near 0.95 is about 0.011
        x = g.normal(size=8)
        b = x[g.integers(0, 8, (999, 8))].mean(1)
        lo, hi = np.quantile(b, [0.025, 0.975])
        hits += lo <= 0 <= hi
    assert hits / 400 < 0.95 - 2 * np.sqrt(0.95 * 0.05 / 400)  # the premise the flag rests on
    s = g.binomial(1, 0.5, (2, 12, 2)).astype(float)
    s[1, 8:, :] = np.nan  # agent b ran 8 tasks
    data = xr.Dataset({"score": (("agent", "task", "run"), s)}, coords={"agent": ["a", "b"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        md = build(data=data, path=tmp_path / "r.md", n_resamples=99, progress=False, freq=ABILITIES_ONLY,
                   sections=["abilities"]).read_text()
        part = md.split("## Agent abilities")[1].split("\n## ")[0]
        rows = {r.split("|")[1].strip(): r for r in part.splitlines() if r.startswith("| a ") or r.startswith("| b ")}
        assert "over 8 tasks, fewer than 10" in rows["b"] and "fewer than 10" not in rows["a"]
        clustered = data.assign_coords(cluster=("task", np.repeat(["w", "x", "y", "z"], 3)))
        md = build(data=clustered, path=tmp_path / "c.md", n_resamples=99, progress=False, freq=ABILITIES_ONLY,
                   sections=["abilities"]).read_text()
    part = md.split("## Agent abilities")[1].split("\n## ")[0]
    assert part.count("resamples 4 clusters worth 4.0 equal ones") == 1 and "over 4 clusters" not in part


def test_variance_section_names_the_design_the_g_study_used():
    """With one run per cell the G-study's design is ``run:(agent*task) (without run)``; the report
    said "design nested" (the keyword, not the design estimated).
    """
    from hierbench.freq import variance_components
    from hierbench.report._context import _Context
    from hierbench.report._variance import _gtheory_part
    from hierbench.report._variance import _rows

    data, _ = simulate_eval(4, 30, 1, rng=3)
    ctx = _Context(fit=None, data=data, prob=0.95, freq="auto")
    _, desc = _gtheory_part(ctx, _rows([("agent x task", "run-to-run")]))
    g = variance_components(data)
    assert desc.startswith(f"G-theory ({g.method}), design {g.formula}; its 95% intervals ({g.ci.attrs['ci_detail']})")
    assert g.formula == "run:(agent*task) (without run)"


def test_checklist_seed_is_the_rng_that_reruns_the_fit():
    """A fit stamps ``seed`` (the sampler's, drawn from ``rng``) and ``rng_seed`` (``rng`` itself);
    the checklist gave the first as "fit seed", which `hierbench fit --seed` does not reproduce.
    """
    from hierbench.report._sec_checklist import _fit_seed

    fit = xr.DataTree()
    fit.attrs = {"seed": 1826701614, "rng_seed": 0}
    assert _fit_seed(fit) == "; fit rng=0 (sampler seed 1826701614, drawn from it)"
    fit.attrs = {"seed": 5}
    assert _fit_seed(fit) == "; fit sampler seed 5 (drawn from the fit's rng, which was not recorded)"
    assert _fit_seed(None) == ""


def test_data_summary_says_every_cell_holds_one_run_when_every_cell_does(tmp_path):
    """SWE-bench's log has one run per cell; the flag read "some cells hold a single run"."""
    from hierbench.data import from_records
    from hierbench.data import read_report

    rows = pd.DataFrame({"agent": np.repeat(["a", "b", "c"], 12), "task": np.tile([f"t{i}" for i in range(12)], 3)})
    rows["score"] = (np.arange(len(rows)) % 3 == 0).astype(float)
    one = from_records(rows)
    extra = rows.iloc[:1].assign(score=1.0 - rows["score"].iloc[0])  # a second run of one cell
    mixed = from_records(pd.concat([rows, extra]))
    flags = {}
    for name, ds in (("one", one), ("mixed", mixed)):
        assert read_report(ds)["runs_per_cell"]["max"] == (1 if name == "one" else 2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the data summary's flags are read: no frequentist half (freq=None)
            md = build(data=ds, path=tmp_path / f"{name}.md", freq=None, progress=False).read_text()
        flags[name] = md.split("## Data summary")[1].split("\n## ")[0]
    assert "every cell holds a single run" in flags["one"] and "some cells" not in flags["one"]
    assert "some cells hold a single run" in flags["mixed"]


def test_ppc_bars_are_the_reports_level():
    """The rootogram's bars were arviz-plots' default interval (its rcParam, 0.89), unstated, in a
    report whose every interval is at `prob`: the bars are now the `prob` equal-tailed interval of
    each count over the draws (np.percentile by hand), and the section says so.
    """
    from hierbench.report._context import _Context
    from hierbench.report._figures import ppc_rootogram
    from hierbench.report._sec_ppc import _sec_ppc

    rng = np.random.default_rng(0)
    n_cells, n = 12, 4
    obs = xr.Dataset({"y": ("cell", rng.binomial(n, 0.4, n_cells))}, coords={"cell_agent": ("cell", ["a"] * n_cells)})
    pp = rng.binomial(n, 0.4, size=(2, 100, n_cells))
    fit = xr.DataTree.from_dict({
        "observed_data": obs,
        "posterior_predictive": xr.Dataset({"y": (("chain", "draw", "cell"), pp)}),
        "constant_data": xr.Dataset({"cell_n_runs": ("cell", np.full(n_cells, n))}),
    })
    prob = 0.5
    pc, n_main, _ = ppc_rootogram(fit, prob=prob)
    assert n_main == n
    fig = pc.viz["figure"]
    ax = next(a for a in (fig.item() if hasattr(fig, "item") else fig).axes if a.lines)
    counts = (pp.reshape(-1, n_cells)[:, :, None] == np.arange(n + 1)).sum(1)  # draws x value
    want = np.percentile(counts, [25, 75], axis=0)
    for line in ax.lines:
        (x, lo), (_, hi) = line.get_xydata()
        np.testing.assert_allclose([lo, hi], want[:, int(x)])
    # every count 0..n is on the axis, one with no task at n too (METR's panel stopped at 7 of 8)
    assert list(ax.get_xticks()) == list(range(n + 1)) and ax.get_xlim()[1] >= n
    ctx = _Context(fit=fit, data=None, prob=prob)
    rep = Report("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _sec_ppc(ctx, rep, "ppc")
    assert "its mean as a diamond and its 50% equal-tailed interval as a bar" in rep.blocks[0]["text"]


def test_pair_settings_name_the_per_pair_interval_the_result_holds():
    """With task clusters compare_agents' per-pair interval (`ci`, the table's per-pair columns) is a
    CR2 t over clusters, yet the settings line said "per-pair intervals from 9,999 bootstrap
    resamples": it now quotes the interval's own ci_detail, with clusters and without.
    """
    from hierbench.freq import compare_agents
    from hierbench.report import pair_frame
    from hierbench.report import settings_text

    for n_clusters in (0, 6):
        ds, _ = simulate_eval(n_agents=3, n_tasks=24, n_runs=2, rng=1, **({"n_clusters": n_clusters} if n_clusters else {}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cmp = compare_agents(ds, n_resamples=199, rng=0)
        ci = cmp.to_dataset()["ci"]
        text = settings_text(cmp)
        assert f"per-pair intervals: {ci.attrs['ci_detail']}" in text
        np.testing.assert_array_equal(
            pair_frame(cmp)["per-pair lower"].values,
            [float(ci.sel(agent=a, opponent=b, ci_bound="lower")) for a, b in (p.split(" - ") for p in pair_frame(cmp).index)],
        )
        if n_clusters:
            assert ci.attrs["ci_kind"] == "t" and "bootstrap" not in text.split("per-pair intervals: ")[1].split(",")[0]


def test_side_by_side_says_an_undefined_interval_is_not_judged():
    """METR's davinci-002 never succeeds: its bootstrap interval is undefined and `disagree` read "no"
    although its bootstrap mean (0) lies outside the Bayesian interval, against the rule the text
    stated; the text now says the rule needs both intervals.
    """
    from hierbench import freq
    from hierbench.report._context import _Context
    from hierbench.report._sec_side import _sec_side

    data, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=2, rng=5)
    data["score"] = data["score"].where(data["agent"] != data["agent"][0], 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        boot = freq.bootstrap_ci(data, method="bca", n_resamples=199, rng=0)
    draws = np.full((1, 50, 3), 0.5)
    draws[..., 0] = np.linspace(0.02, 0.1, 50)  # the never-succeeding agent: a Bayesian interval above 0
    post = xr.Dataset({"mean_new_task": (("chain", "draw", "agent"), draws)}, coords={"agent": data["agent"].values})
    fit = xr.DataTree.from_dict({"posterior": post})
    ctx = _Context(fit=fit, data=data, prob=0.95, rng=0, n_resamples=199, truth=None, freq={"bootstrap": boot})
    rep = Report("t")
    _sec_side(ctx, rep, "side-by-side")
    sec = rep.blocks[0]
    first = str(data["agent"].values[0])
    assert sec["table"].loc[first, f"bootstrap {boot.ci.attrs['ci_kind']} lower"] == "undefined"
    assert sec["table"].loc[first, "disagree"] is pd.NA  # not judged: "undefined", not "no"
    assert "judged only where both intervals are defined (`undefined` elsewhere)" in sec["text"]


def test_side_by_side_counts_the_tasks_scored_where_errored_runs_are_excluded():
    """With errors='exclude' a task whose every run errored is run but holds no score: the
    side-by-side said "ran 15 of 20 tasks" of an agent the data summary said ran all 20. Its
    column and flag now count the tasks scored, the tasks the bootstrap mean averages (counted
    here with pandas from the records).
    """
    from hierbench import freq
    from hierbench.data import from_records
    from hierbench.report._context import _Context
    from hierbench.report._sec_side import _sec_side

    g = np.random.default_rng(3)
    rows = pd.DataFrame(
        [(f"a{m}", f"t{t:02d}", r) for m in range(3) for t in range(20) for r in range(2)],
        columns=["agent", "task", "run"],
    )
    rows["score"] = g.integers(0, 2, len(rows)).astype(float)
    rows["error"] = (rows["agent"] == "a0") & (rows["task"] < "t05")  # a0: every run of 5 tasks errors
    data = from_records(rows, run="run", error="error", errors="exclude")
    scored = rows[~rows["error"]].groupby("agent")["task"].nunique()
    run = rows.groupby("agent")["task"].nunique()
    assert scored["a0"] == 15 and run["a0"] == 20
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        boot = freq.bootstrap_ci(data, n_resamples=199, rng=0)
    post = xr.Dataset({"mean_new_task": (("chain", "draw", "agent"), np.full((1, 50, 3), 0.5))},
                      coords={"agent": data["agent"].values})  # fmt: skip
    ctx = _Context(fit=xr.DataTree.from_dict({"posterior": post}), data=data, prob=0.95, rng=0,
                   n_resamples=199, truth=None, freq={"bootstrap": boot})  # fmt: skip
    rep = Report("t")
    _sec_side(ctx, rep, "side-by-side")
    table = rep.blocks[0]["table"]
    assert "tasks run" not in table.columns
    assert table["tasks scored"].to_dict() == scored.to_dict()
    assert table.loc["a0", "flag"] == "scored on 15 of 20 tasks: the bootstrap mean is over those"
    assert table.loc["a1", "flag"] == ""


def test_worst_r_hat_list_names_each_parameter_once():
    # a formula model stores sd[1|agent] and the stack sd(component) with the same draws: the
    # convergence section listed (and plotted) the one parameter twice; expected by numpy
    from hierbench.report._convergence import _worst

    rng = np.random.default_rng(3)
    a = rng.normal(size=(2, 50)) + np.array([[0.0], [1.0]])  # chains apart: a high R-hat
    b = rng.normal(size=(2, 50)) + np.array([[0.0], [0.5]])
    c = rng.normal(size=(2, 50))
    post = xr.Dataset({
        "sd[1|agent]": (("chain", "draw"), a), "sd[1|task]": (("chain", "draw"), b),
        "sd": (("chain", "draw", "component"), np.stack([a, b], -1)), "mu": (("chain", "draw"), c),
    }, coords={"component": ["1|agent", "1|task"]})  # fmt: skip
    dt = xr.DataTree.from_dict({"posterior": post})
    worst = _worst(dt, post, n=3)
    picked = [post[v].sel(s).values if s else post[v].values for v, s, _ in worst]
    assert len(worst) == 3
    assert not any(np.array_equal(picked[i], picked[j]) for i in range(3) for j in range(i))
    assert {v for v, _, _ in worst} >= {"mu"}  # the third distinct parameter, not a copy


# --------------------------------------------------------------------------- one agent (review: "0 [0, 0]")


def _variance_rows(md: str) -> dict[str, list[str]]:
    """The variance section's table, row label -> cells, and its text."""
    part = md.split("## Variance components")[1].split("\n## ")[0]
    header = next(line for line in part.splitlines() if line.startswith("| component"))
    cols = _md_cells(header)
    rows = {_md_cells(r)[0]: dict(zip(cols, _md_cells(r), strict=True))
            for r in part.splitlines() if r.startswith("| ") and not r.startswith(("| component", "|:"))}  # fmt: skip
    return rows


def test_variance_rows_fold_what_the_design_cannot_split():
    from hierbench.report._variance import COMPONENT_ROWS
    from hierbench.report._variance import _rows

    assert _rows() == COMPONENT_ROWS
    one_agent = _rows([("agent x task", "task")])
    assert list(one_agent) == ["agent", "task + agent x task", "agent x cluster", "run-to-run"]
    assert one_agent["task + agent x task"] == COMPONENT_ROWS["task"] + COMPONENT_ROWS["agent x task"]
    both = _rows([("agent x task", "task"), ("task", "run-to-run")])
    assert list(both) == ["agent", "task + agent x task + run-to-run", "agent x cluster"]
    # a crossed fit without an agent x cluster effect: its agent x task effect holds that spread
    folded = _rows([("agent x cluster", "agent x task")])
    assert list(folded) == ["agent", "task", "agent x cluster + agent x task", "run-to-run"]
    assert folded["agent x cluster + agent x task"] == ("agent:cluster", "agent:task", "agent:task:cluster")


@pytest.mark.parametrize("n_runs", [3, 1])
def test_one_agent_variance_section_says_undefined_not_zero(one_agent, n_runs):
    """Data alone: the G-study drops the agent facet, and its agent row went missing without a word;
    it is now shown undefined with the reason, and the task row says it holds agent x task.
    """
    from hierbench.freq import variance_components

    ds, md = one_agent(n_runs)  # simulate_eval(n_agents=1, n_tasks=15, n_runs, rng=2), 99 resamples
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = variance_components(ds).estimate.to_series()
    rows = _variance_rows(md)
    assert rows["agent"]["flag"] == "undefined: one agent, so there is no spread between agents to estimate"
    assert rows["agent"]["G-theory (anova)"] == "NaN"
    assert rows["agent"]["G-theory terms"] == ""  # no terms summed, not "NaN"
    merged = "task + agent x task" if n_runs > 1 else "task + agent x task + run-to-run"
    assert set(rows) == {"agent", merged} | ({"run-to-run"} if n_runs > 1 else set())
    assert float(rows[merged]["G-theory (anova)"]) == pytest.approx(float(g.iloc[0]), abs=5e-5)
    assert "The agent row is undefined (NaN), not 0" in md


@pytest.mark.slow  # a small crossed fit
def test_one_agent_variance_section_from_a_fit(tmp_path):
    """The crossed fit of one agent gave its agent row 0.0000 [0.0000, 0.0000] beside G-theory's NaN.

    The report is ``build``'s own, its sections cut to the variance one read here (``sections=``):
    it and the warning it raises are written as in the whole report.
    """
    from hierbench.bayes import build_crossed
    from hierbench.bayes import fit

    ds, _ = simulate_eval(n_agents=1, n_tasks=12, n_runs=3, rng=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # no posterior predictive: nothing here reads the predictive check (the posterior is the same to the bit)
        dt = fit(build_crossed(ds), draws=100, tune=100, chains=2, rng=1, progress=False, posterior_predictive=False)
        md = build(dt, ds, path=tmp_path / "r.md", n_resamples=99, progress=False, sections=["variance"]).read_text()
    rows = _variance_rows(md)
    assert [rows["agent"][c] for c in ("Bayes estimate", "Bayes lower", "Bayes upper")] == ["NaN"] * 3
    assert rows["agent"]["flag"].startswith("undefined: one agent")
    assert rows["agent"]["Bayes terms"] == rows["agent"]["G-theory terms"] == ""
    assert rows["task + agent x task"]["Bayes terms"] == "task"
    assert "UndefinedMetricWarning: crossed_variance_components: agent is undefined" in md


def test_abilities_flag_a_bootstrap_mean_few_tasks_carry(tmp_path, rare_and_common):
    """An agent that succeeded once on each of three of 60 tasks: its bootstrap interval is flagged.

    The report is ``build``'s own, its sections cut to the abilities (``sections=``).
    """
    ds = rare_and_common
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        md = build(data=ds, path=tmp_path / "r.md", n_resamples=99, progress=False, freq=ABILITIES_ONLY,
                   sections=["abilities"]).read_text()
    abil = md.split("## Agent abilities")[1].split("\n## ")[0]
    rare = next(r for r in abil.splitlines() if r.startswith("| rare "))
    common = next(r for r in abil.splitlines() if r.startswith("| common "))
    assert "few tasks carry the mean (a resampling interval covers less than its level there" in rare
    assert "few tasks carry" not in common


def test_the_abilities_caption_says_which_points_have_no_bar():
    """An agent at 100% and one at 0%: BCa is undefined for both, the forest drew two bare points
    under a caption of "95% intervals", which reads as certainty. The caption now names them.
    """
    from hierbench.report._sec_abilities import _no_bar

    boot = pd.DataFrame({"estimate": [1.0, 0.0, 0.4], "lower": [np.nan, np.nan, 0.2], "upper": [np.nan, np.nan, 0.6]},
                        index=pd.Index(["top", "zero", "mid"], name="agent"))  # fmt: skip
    said = _no_bar({"task bootstrap (bca, 95%)": boot})
    assert said == (" No bar for top, zero (task bootstrap (bca, 95%)): the interval is undefined there, not of "
                    "zero width (the table's flag says why and what holds instead).")  # fmt: skip
    assert _no_bar({"task bootstrap (bca, 95%)": boot.loc[["mid"]]}) == ""


def test_the_data_summary_flags_agents_the_data_themselves_mark():
    """SWE-bench bash-only read with --annotate flag_per_instance_disagrees_with_reported: the file
    marks every run of one model (10.2% here, 52.8% on the leaderboard), and the report showed only a
    count column with no flag. Now the Flags list names it (here a hand-made 3-agent log).
    """
    from hierbench.data import from_records

    rows = [{"agent": a, "task": f"t{t}", "score": float(t % 2), "disputed": a == "bad" or (a == "some" and t == 0)}
            for a in ("good", "bad", "some") for t in range(6)]  # fmt: skip
    ds = from_records(pd.DataFrame(rows), annotations=["disputed"])
    ds.attrs["flagged_agents"] = '{"other": 6}'
    from report_section import section_alone

    flags = section_alone("data-summary", ds)["text"].split("**Flags:**")[1]
    assert "the per-run annotation `disputed` marks at least half the runs of: bad (6 of 6 runs):" in flags
    assert "some" not in flags and "good" not in flags  # 1 of 6 runs: not flagged
    assert "the data's own source flags the records of: other (6 runs) (attrs['flagged_agents'])" in flags
    # a loader's flag of the annotated agents themselves (SWE-bench's loader): one flag, not two
    ds.attrs["flagged_agents"], ds.attrs["flag_column"] = '{"bad": 6}', "disputed"
    flags = section_alone("data-summary", ds)["text"].split("**Flags:**")[1]
    assert "annotation `disputed`" not in flags and flags.count("bad (6") == 1
    assert "the data's own source flags the records of: bad (6 runs) (its column `disputed`)" in flags


def test_graded_pairs_say_their_units_and_abilities_keep_the_logs_agent_order():
    """VerbAgg's no / perhaps / yes (first 12 persons): Agent abilities gave mean grades 1.167 and
    1.333 (0..2) for persons 10 and 12, the pair table -0.083 (the score on 0..1) with nothing said;
    and the abilities table listed the persons 1, 10, 11, 12, 2, ... (a formula fit sorts its
    levels as text) where the log and the summary have 1, 2, ..., 12.
    """
    from hierbench.data import from_records
    from hierbench.report._context import _Context
    from hierbench.report._order import in_report_order
    from hierbench.report._sec_pairs import graded_units

    rows = [{"agent": str(a), "task": f"t{t}", "score": ["no", "perhaps", "yes"][(a + t) % 3]}
            for a in range(1, 13) for t in range(3)]  # fmt: skip
    ds = from_records(pd.DataFrame(rows), score_levels=["no", "perhaps", "yes"])
    said = graded_units(ds)
    assert said == (" The differences are of the score, the grades no, perhaps, yes read as 0, 0.5, 1 respectively; "
                    "times 2 for differences of grades (the grades numbered 0 = no, 1 = perhaps, 2 = yes), the scale "
                    "of Agent abilities.")  # fmt: skip
    plain = {k: v for k, v in ds.attrs.items() if k not in ("score_levels", "score_labels")}
    five = ds.copy()
    five.attrs = {**plain, "score_levels": "[1.0, 2.0, 3.0, 4.0, 5.0]"}
    assert graded_units(five, "") == (" The differences are of the score, the grades 1, 2, 3, 4, 5 read as "
                                       "(grade - 1) / 4; times 4 for differences of grades.")  # fmt: skip
    five.attrs = plain
    assert graded_units(five) == ""
    five.attrs = {**plain, "score_levels": "[0.0, 1.0]", "score_labels": '["N", "Y"]'}  # N / Y: a fail, a pass
    assert graded_units(five) == ""
    fit_order = sorted(str(a) for a in range(1, 13))  # "1", "10", "11", "12", "2", ...
    bayes = pd.DataFrame({"estimate": np.arange(12.0)}, index=pd.Index(fit_order, name="agent"))
    got = in_report_order(bayes, _Context(data=ds, fit=None))
    # the report's one order (audit W), by pandas: mean grade per task, highest first, ties by name as text
    means = pd.DataFrame(rows).assign(g=lambda d: d["score"].map({"no": 0, "perhaps": 1, "yes": 2}))
    means = means.groupby("agent")["g"].mean()
    assert got.index.tolist() == sorted(means.index, key=lambda a: (-means[a], a))
    assert got.loc["10", "estimate"] == fit_order.index("10")  # rows moved, not relabelled


def test_the_abilities_flag_says_a_graded_agent_at_an_end_of_the_scale_in_its_grade():
    """The report's abilities flag said "every task scored 0" for an agent graded `no` on every task
    (its log never held a 0); now "every task graded no (score 0)". 0/1 scores keep "scored 0".
    """
    from hierbench.report._flags import _few_flag
    from hierbench.report._flags import data_grades

    rows = [{"agent": a, "task": f"t{t}", "score": g} for a, g in (("never", "no"), ("always", "yes")) for t in range(4)]
    ds = from_records_words(rows)
    grades = data_grades(ds)
    assert grades == ["no", "perhaps", "yes"]
    table = pd.DataFrame({"ci_flag": ["every task scored 0", "every task scored 1"]}, index=["never", "always"])
    got = _few_flag(table, "task bootstrap", pd.Index(["never", "always"]), pd.Series(dtype=object), False, grades)
    assert got["never"].startswith("task bootstrap: every task graded no (score 0) (")
    assert got["always"].startswith("task bootstrap: every task graded yes (score 1) (")
    plain = _few_flag(table, "task bootstrap", pd.Index(["never", "always"]), pd.Series(dtype=object))
    assert plain["never"].startswith("task bootstrap: every task scored 0 (")


def from_records_words(rows):
    from hierbench.data import from_records

    return from_records(pd.DataFrame(rows), score_levels=["no", "perhaps", "yes"])


def test_a_formula_fits_own_task_level_is_not_called_the_bootstraps_target():
    """METR's continuous scores, fractional formula fit: Bayes intervals over the agents' own tasks
    were about a fifth of the task bootstrap's (Claude 3 Opus [0.289, 0.327] vs [0.202, 0.418]) while
    the text called the former "the estimand of the task bootstrap"; the intervals have different
    targets (these tasks fixed, a new draw of tasks), and the text now says which.
    """
    from hierbench.report._notes import _MIXED_LEVEL

    text = _MIXED_LEVEL.format(what="expected mean score over the tasks it ran")
    assert "estimand of the task bootstrap" not in text
    assert "Its interval holds these tasks fixed; the bootstrap's is for a new draw of tasks" in text


def test_a_nonzero_value_never_reads_zero_in_a_report_table():
    """The rat tumours' pass^8: unbiased 1.1e-6, Bayes [3.2e-6, 4.5e-5], printed "0.000 [0.000, 0.000]"
    and flagged as disagreeing, which nothing on the page showed. Values that round to zero at the
    table's decimals keep two significant digits; zero and the rest are as before.
    """
    df = pd.DataFrame({"v": [1.1e-6, 4.5e-5, 0.0, 0.123, -2e-4, 0.0004]}, index=list("abcdef"))
    cells = [r.split("|")[2].strip() for r in markdown_table(df).splitlines()[2:]]
    assert cells == ["1.1e-6", "4.5e-5", "0.000", "0.123", "-0.0002", "0.0004"]
    assert markdown_table(df, digits=4).splitlines()[2 + 4].split("|")[2].strip() == "-0.0002"


def test_variance_text_says_why_run_to_run_can_part_on_uneven_runs():
    """Cells of 1 to 4 runs: G-theory's residual pools the runs (a busy cell weighs more), the Bayes
    run-to-run part averages over agents and the task population alike; the section says so, with
    the range. Balanced runs (or a spread under twofold): nothing said.
    """
    from hierbench.report._context import _Context
    from hierbench.report._variance import _uneven_runs_text

    g = np.random.default_rng(3)
    y = (g.random((3, 10, 4)) < 0.5).astype(float)
    even = xr.Dataset({"score": (("agent", "task", "run"), y)}, coords={"agent": ["a", "b", "c"]})
    assert _uneven_runs_text(_Context(fit=None, data=even, prob=0.95, freq="auto")) == ""
    y[0, :5, 1:] = np.nan  # agent a ran its first five tasks once
    ragged = even.assign(score=(("agent", "task", "run"), y))
    text = _uneven_runs_text(_Context(fit=None, data=ragged, prob=0.95, freq="auto"))
    assert text.startswith("Runs per cell range 1-4 here: G-theory's run-to-run row pools the runs")


def test_a_figure_caption_reads_its_inline_code_as_the_paragraphs_do(tmp_path):
    """The HTML caption was escaped whole, so a caption's `code` (the heatmap's "`hierbench summary`'s
    order") showed its backticks, while the Markdown twin and every paragraph rendered them as code.
    """
    import matplotlib.pyplot as plt

    from hierbench.report import Report

    rep = Report("t")
    rep.section("s", "see `x` here", id="s")
    fig, _ = plt.subplots()
    rep.figure("f", fig, "by `hierbench summary`'s order, a < b & c")
    html = rep.write(tmp_path / "r.html").read_text()
    cap = html.split("<figcaption>", 1)[1].split("</figcaption>", 1)[0]
    assert cap == "by <code>hierbench summary</code>&#x27;s order, a &lt; b &amp; c"
    assert "<p>see <code>x</code> here</p>" in html


def test_a_table_cell_reads_its_inline_code_as_the_markdown_table_does(tmp_path):
    """The HTML table escaped each cell whole, so the checklist's `cluster` showed its backticks
    where the Markdown table renders code; the rest of a cell stays escaped (html.escape's text).
    """
    import pandas as pd

    from hierbench.report import Report

    rep = Report("t")
    table = pd.DataFrame({"value": ["resampled by `cluster`", "a < b & c", "**not** bold? `x<y`"]})
    rep.section("s", "", table=table, index=False, id="s")
    html = rep.write(tmp_path / "r.html").read_text()
    body = html.split('class="hb-table"', 1)[1].split("</table>", 1)[0]
    cells = [c.split(">", 1)[1].split("</td>", 1)[0] for c in body.split("<td")[1:]]
    assert cells == [
        "resampled by <code>cluster</code>",
        "a &lt; b &amp; c",
        "<b>not</b> bold? <code>x&lt;y</code>",
    ]
    md = rep.to_markdown()
    assert "resampled by `cluster`" in md and "a < b & c" in md


def test_a_prose_columns_heading_is_left_aligned_over_its_text():
    """A prose column's cells are left-aligned (td.txt) while every heading was right-aligned, so the
    checklist's "value" heading sat at the far right above text starting at the left.
    """
    import re

    import pandas as pd

    from hierbench.report._report import html_table

    df = pd.DataFrame({"item": ["n"], "value": ["a sentence well over twenty-four characters"], "x": [1.5]})
    html = html_table(df, index=False)
    left = re.findall(r"th\.(col\d+) \{\s*text-align: left;", html)
    assert left == ["col1"]  # "value" is the second column; "item" is short, "x" a number
    assert '<td class="data row0 col1 txt" >' in html
