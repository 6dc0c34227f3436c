"""The pairwise section as people read it: p-values, interval-vs-test disagreements, the Bayes caveats, the
heatmap's order, and the figures' labels and colours (audit of the SWE-bench and METR reports).
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

pytest.importorskip("matplotlib")


# ---------------------------------------------------------------- p-values as text


def test_tiny_p_values_read_in_e_notation_and_the_rest_as_before():
    """SWE-bench per task: an exact sign-flip p of 4.2e-29 was printed with 28 zeros."""
    from hierbench.report._pairs import p_text

    # hand-written: 3 decimals; 2 significant figures in [1e-4, 1e-3); e-notation below 1e-4
    cases = {0.1174: "0.117", 0.052: "0.052", 0.00048828: "0.00049", 0.0001: "0.0001",
             4.7e-05: "4.7e-5", 4.2e-29: "4.2e-29", 0.0: "0", 1.0: "1.000", np.nan: "NaN"}  # fmt: skip
    assert {v: p_text(v) for v in cases} == cases
    # no positive p reads 0 and none is wider than 7 characters (down to 1e-99)
    for v in np.logspace(-99, 0, 397):
        assert len(p_text(v)) <= 7 and float(p_text(v)) > 0, v
    # SWE-bench's GPT-5 - o3 read p max-T 0.050 beside "differ (p max-T < 0.05) True": a value that
    # would print as a conventional level without being it gets a fourth decimal
    assert {v: p_text(v) for v in (0.0496, 0.0504, 0.05, 0.0099, 0.01, 0.049976)} == {
        0.0496: "0.0496", 0.0504: "0.0504", 0.05: "0.050", 0.0099: "0.0099", 0.01: "0.010",
        0.049976: "0.04998"}  # SWE-bench's GPT-5 - o3 then read 0.0500


@pytest.fixture(scope="module")
def cmp3():
    from hierbench.freq import compare_agents
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=3, n_tasks=40, n_runs=2, rng=0)
    return compare_agents(ds, n_resamples=199, rng=1)


def test_the_frame_keeps_the_numbers_and_only_the_display_is_text(cmp3):
    from hierbench.report import pair_frame
    from hierbench.report._pairs import pair_display

    full = pair_frame(cmp3)
    raw = cmp3.to_frame()
    # the machine-readable p-values are the result's own floats, unrounded
    np.testing.assert_array_equal(full["p (permutation)"].to_numpy(), raw["p_value"].to_numpy(float))
    np.testing.assert_array_equal(full["p BH"].to_numpy(), raw["p_bh"].to_numpy(float))
    shown = pair_display(full)
    for col in ("p max-T", "p (permutation)", "p Holm", "p BH"):
        assert all(isinstance(v, str) for v in shown[col]), col


# ---------------------------------------------------------------- per-pair interval vs per-pair p


def test_interval_and_p_disagree_exactly_when_their_verdicts_differ():
    from hierbench.freq import ci_p_disagree as _disagree

    # SWE-bench DeepSeek V3.2 Reasoner - Qwen3-Coder: [0.002, 0.090] excludes 0, p = 0.052 does not reach 0.05
    lower = [0.002, -0.010, 0.010, -0.200, -0.100, 0.010]
    upper = [0.090, 0.100, 0.100, -0.010, 0.100, 0.100]
    p = [0.052, 0.030, 0.010, 0.200, 0.400, np.nan]
    assert _disagree(lower, upper, p, 0.05).tolist() == [True, True, False, True, False, False]


def test_the_table_marks_which_way_and_the_text_names_both_procedures(cmp3):
    from hierbench.report import pair_frame
    from hierbench.report._pairs import disagree_note
    from hierbench.report._pairs import pair_display

    full = pair_frame(cmp3, alpha=0.05)
    col = "per-pair CI and p disagree (at 0.05)"
    raw = cmp3.to_frame()
    # independently: the interval's verdict against the test's, from the result's own columns
    excl = (raw["lower"] > 0) | (raw["upper"] < 0)
    assert full[col].tolist() == (excl != (raw["p_value"] < 0.05)).tolist()
    # one pair forced each way shows which way in words
    table = full.copy()
    table.iloc[0, table.columns.get_loc("per-pair lower")] = 0.001
    table.iloc[0, table.columns.get_loc("p (permutation)")] = 0.2
    table.iloc[1, table.columns.get_loc("per-pair lower")] = -0.5
    table.iloc[1, table.columns.get_loc("per-pair upper")] = 0.5
    table.iloc[1, table.columns.get_loc("p (permutation)")] = 0.01
    table.iloc[2, table.columns.get_loc("per-pair lower")] = 0.01
    table.iloc[2, table.columns.get_loc("p (permutation)")] = 0.01
    table[col] = [True, True, False]
    assert pair_display(table)[col].tolist() == ["CI excludes 0 only", "p < 0.05 only", ""]
    note = disagree_note(cmp3, table)
    ci = cmp3.to_dataset()["ci"].attrs
    assert ci["ci_kind"] in note and "sign-flip" in note and "`p (permutation)`" in note
    assert "2 of 3 pairs disagree at 0.05" in note and f"`{col}`" in note


# ---------------------------------------------------------------- the Bayes caveat


def _tree(post: dict, const: dict, spec: dict) -> xr.DataTree:
    fit = xr.DataTree.from_dict({"posterior": xr.Dataset(post), "constant_data": xr.Dataset(const)})
    fit.attrs["hierbench_spec"] = json.dumps(spec)
    return fit


def test_a_model_without_shared_task_effects_says_agents_are_not_paired():
    """METR, beta-binomial: P(Claude 3 Opus > davinci-002) = 1.000 beside a paired p of 0.25, unexplained."""
    from hierbench.report import bayes_pair_note

    d = ("chain", "draw")
    grid = {"n_runs": (("agent", "task"), np.ones((2, 3)))}
    bb = _tree({"mu": ((*d, "agent"), np.zeros((1, 2, 2)))}, grid, {"model": "beta_binomial"})
    crossed = _tree({"mu": ((*d, "agent"), np.zeros((1, 2, 2))), "task_effect": ((*d, "task"), np.zeros((1, 2, 3)))},
                    grid, {"model": "crossed", "options": {"clusters": False}})  # fmt: skip
    battles = _tree({"strength": ((*d, "agent"), np.zeros((1, 2, 2)))}, {"n": (("pair",), [1])}, {"model": "bradley_terry"})
    note = bayes_pair_note(bb, 1)
    assert "beta-binomial model has no task effect shared by the agents" in note
    assert "not paired on tasks" in note and "task clusters are ignored" in note
    assert "not paired" not in bayes_pair_note(crossed, 1)
    assert "not paired" not in bayes_pair_note(battles, 1)  # no tasks: nothing to pair on


def test_an_irt_fit_with_clusters_says_they_move_the_difficulties_alone():
    """IRT clusters shift every agent's difficulty alike: the pair note says there is no agent x
    cluster term and G-theory's agent:cluster variance is put beside it, as for a crossed fit
    without the term; an IRT fit without clusters says nothing of them.
    """
    from hierbench.freq import variance_components
    from hierbench.report import agent_cluster_note
    from hierbench.report import bayes_pair_note
    from hierbench.testing import simulate_eval

    d = ("chain", "draw")
    grid = {"n_runs": (("agent", "task"), np.ones((2, 3)))}
    post = {"ability": ((*d, "agent"), np.zeros((1, 2, 2))), "difficulty": ((*d, "task"), np.zeros((1, 2, 3)))}
    with_cl = _tree(post, grid, {"model": "irt_2pl", "options": {"clusters": True}})
    without = _tree(post, grid, {"model": "irt_1pl", "options": {"clusters": False}})
    assert "IRT model puts task clusters in the difficulties alone but has no agent x cluster term" in (
        bayes_pair_note(with_cl, 1)
    )
    assert "cluster" not in bayes_pair_note(without, 1)
    data, _ = simulate_eval(n_agents=4, n_tasks=40, n_runs=2, n_clusters=5, sd_agent_cluster=0.8, rng=3)
    g = variance_components(data)
    v = float(g.components.sel(component="agent:cluster"))
    assert f"agent x cluster variance at {v:.4f}" in agent_cluster_note(with_cl, g, data)
    assert agent_cluster_note(without, g, data) == ""


# ---------------------------------------------------------------- the section and its heatmap


@pytest.fixture(scope="module")
def bb_report(tmp_path_factory):
    """A beta-binomial fit of 4 agents and its report, with the heatmap's matrix captured.

    A real fit (not a stub): the section's caveat must follow from the fit's own structure. The
    report is ``build``'s own, its sections cut to the pairwise one read here (``sections=``; the
    heatmap captured is that section's, as it is the last one drawn in the whole report).
    """
    import hierbench.report._figures as F
    from hierbench import bayes
    from hierbench.report import build
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=4, n_tasks=12, n_runs=2, rng=5)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "fit failed convergence checks")  # 100 draws: the structure is what counts
        # no posterior predictive: no test here reads the predictive check (the posterior is the same to the bit)
        fit = bayes.fit(bayes.build_beta_binomial(ds), draws=100, tune=100, chains=2, rng=0, progress=False,
                        posterior_predictive=False)
    seen = {}
    original = F.heatmap

    def spy(matrix, **kw):
        seen["matrix"] = matrix
        return original(matrix, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(F, "heatmap", spy)
    try:
        # the pairwise section is read: the bootstrap, person fit and G-study are left out
        path = build(fit, ds, path=tmp_path_factory.mktemp("r") / "r.md", n_resamples=99, progress=False,
                     freq={"bootstrap": None, "person_fit": None, "variance": None}, sections=["pairwise"])
    finally:
        mp.undo()
    return fit, path.read_text(), seen["matrix"]


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_heatmap_rows_follow_the_reports_order_and_the_caption_says_so(bb_report):
    """The heatmap is in the report's one order (audit W): the summary's, by mean score per task (pandas here)."""
    from hierbench.testing import simulate_eval

    _, md, matrix = bb_report
    ds, _ = simulate_eval(n_agents=4, n_tasks=12, n_runs=2, rng=5)  # the fixture's log
    per_task = ds["score"].mean("run").to_pandas().mean(axis=1)
    per_task.index = per_task.index.astype(str)
    expected = sorted(per_task.index, key=lambda a: (-per_task[a], a))
    assert list(matrix.index) == list(matrix.columns) == expected
    assert expected != sorted(expected)  # the order is not the file's (nor the names')
    assert "by expected score on a new task from the task population; rows and columns in the report's order, " \
        "agents by mean score per task" in md


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_the_section_reads_as_sentences_with_its_caveats(bb_report):
    _, md, _ = bb_report
    section = md.split("## Does A beat B?")[1].split("\n## ")[0]
    assert "column compare the agents by `mean_new_task`." in section
    assert "not paired on tasks" in section
    assert "are different procedures: near the level they can disagree" in section
    assert "per-pair CI and p disagree (at 0.05)" in section


# ---------------------------------------------------------------- figures


def test_rank_panels_print_p_as_the_verdict_does():
    """The panel read p=0.00 where the text said p = 0.0025."""
    import matplotlib.pyplot as plt

    from hierbench.report._figures import rank_plot
    from hierbench.report._figures import rank_tests

    gen = np.random.default_rng(7)
    x = gen.normal(size=(4, 400))
    x[0] += 0.35  # one chain off: p of order 1e-3, which two decimals print as 0.00
    post = xr.Dataset({"x": (("chain", "draw"), x), "y": (("chain", "draw"), gen.normal(size=(4, 400)))},
                      coords={"chain": np.arange(4), "draw": np.arange(400)})  # fmt: skip
    worst = [("x", {}), ("y", {})]
    p = rank_tests(post, worst)
    assert 0 < p["x"] < 0.005
    fig = rank_plot(post, worst).viz["figure"].item()
    printed = sorted(t.get_text() for ax in fig.axes for t in ax.texts if t.get_text().startswith("p"))
    plt.close(fig)
    # two significant figures (hand format), never two decimals
    assert printed == sorted(f"p = {v:.2g} (α = 0.01) " for v in p.values())
    assert "p = 0.00 " not in " ".join(printed)
    # and the convergence verdict, which names the flagged panel, prints the same figures
    from hierbench.report._convergence import _check_rows
    from hierbench.report._convergence import _verdict

    checks = [{"check": "r_hat", "value": 1.0, "at": "x", "limit": 1.01, "rule": "<=", "passed": True, "why": "w"}]
    verdict, note = _verdict([], _check_rows(checks, p, 0.01), p, 0.01)
    panel_x = next(t for t in printed if f"{p['x']:.2g}" in t)
    assert verdict == "warning" and f"({panel_x.split(' (α')[0].removeprefix('p = ')}," in note


def test_eleven_agents_get_eleven_distinct_lines():
    """pass^k legend, METR with 11 agents: two entries were two shades of one hue, solid alike."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgb

    from hierbench.report import passk_curves

    agents = [f"agent {i}" for i in range(11)]
    idx = pd.MultiIndex.from_product([agents, [1, 2, 3]], names=["agent", "k"])
    band = pd.DataFrame({"estimate": 0.5, "lower": 0.4, "upper": 0.6}, index=idx)
    fig = passk_curves(band, None, prob=0.95, title="t")
    lines = fig.axes[0].get_legend().get_lines()
    styles = [(to_rgb(h.get_color()), h.get_linestyle()) for h in lines]
    plt.close(fig)
    assert len(styles) == 11 and len(set(styles)) == 11
    # lines of one style are told apart by colour alone: no two closer than 0.2 in RGB
    for ls in {s for _, s in styles}:
        cols = np.array([c for c, s in styles if s == ls])
        gaps = [np.linalg.norm(a - b) for i, a in enumerate(cols) for b in cols[i + 1 :]]
        assert not gaps or min(gaps) > 0.2, ls


def test_wide_tables_wrap_their_text_cells():
    """Side by side at 1400 px: the `flag` column sat behind a horizontal scrollbar."""
    from hierbench.report._report import _CSS

    rules = dict(r.split("{", 1) for r in _CSS.replace("\n", "").split("}") if "{" in r)
    assert "overflow-wrap:anywhere" in rules["td.txt"]
    assert "margin-right:min(0px" in rules[".hb-wide"]


def test_pair_matrix_takes_an_order_and_refuses_one_that_is_not_the_agents():
    """Rows follow ``order``; each cell is row minus column (the paired mean difference over common tasks, by hand)."""
    import warnings

    import pytest

    from hierbench.freq import compare_agents
    from hierbench.report import pair_matrix
    from hierbench.testing import simulate_eval

    data, _ = simulate_eval(n_agents=4, n_tasks=12, n_runs=2, rng=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare_agents(data, n_permutations=99, rng=0)
    agents = [str(a) for a in data["agent"].values]
    order = agents[::-1]
    m = pair_matrix(cmp, order=order, numbered=False)
    assert list(m.index) == order and list(m.columns) == order[1:]
    per_task = data["score"].mean("run")
    a, b = order[0], order[2]
    by_hand = float((per_task.sel(agent=a) - per_task.sel(agent=b)).mean())
    assert m.loc[a, b].startswith(f"{by_hand:+.2f}")
    with pytest.raises(ValueError, match=r"missing \['agent_00'\]"):
        pair_matrix(cmp, order=agents[1:])


def test_pair_matrix_columns_name_agents_whose_names_are_numbers(shared_data):
    """The wine judges are agents 1 ... 9. The matrix numbered its columns by row position, so the
    column headed "8" held judge 2's difference and the marked "+0.25*" under "6" was judge 1 minus
    judge 8: short names now head the columns themselves. Each cell is checked against the judges'
    paired mean difference by hand (pandas), looked up by the column's header.
    """
    from hierbench.data import from_records
    from hierbench.freq import compare_agents
    from hierbench.report import pair_matrix
    from hierbench.report import score_order

    df = pd.read_csv(shared_data / "ordinal" / "wine.csv").assign(s=lambda d: (d["rating"] - 1) / 4)
    ds = from_records(df, agent="judge", task="bottle", score="s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare_agents(ds, rng=0)
    m = pair_matrix(cmp, order=score_order(ds))
    wide = df.pivot(index="bottle", columns="judge", values="s")
    wide.columns = wide.columns.astype(str)
    assert sorted(m.columns) == sorted(set(wide.columns) - {m.index[0]})
    for row in m.index:
        for col in m.columns:
            if m.loc[row, col]:
                want = (wide[row] - wide[col]).mean()
                assert float(m.loc[row, col].rstrip("*")) == pytest.approx(want, abs=0.005 + 1e-9), (row, col)
    assert m.loc["1", "8"] == "+0.25*" and m.loc["1", "6"] == "+0.16"
    # long names keep the numbered columns, and the index says what the numbers are
    long = pair_matrix(cmp, order=score_order(ds), numbered=True)
    assert list(long.columns) == [str(i) for i in range(2, 10)] and "numbered as the rows" in long.index.name


def test_marks_note_says_where_max_t_has_a_floor_holm_does_not(max_t_floor_log):
    """Agent `zero` ran only 6 task clusters and failed them all: against an agent that solves some of
    them, its differences flip together on 2 of the 2^6 sign patterns, so the largest |t| of the
    family is large with probability at least 2 / 64 and no pair's p max-T can fall below that
    (METR's davinci-002 - human, 7 clusters, gave 0.0155). Holm's adjustment (statsmodels, on the
    per-pair p-values) has no such floor: the note gives both counts at 0.01 and 0.001.
    """
    from statsmodels.stats.multitest import multipletests

    from hierbench.freq import compare_agents
    from hierbench.report._pairs import marks_holm_note
    from hierbench.report._pairs import pair_frame

    data = max_t_floor_log
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = pair_frame(compare_agents(data, rng=0), alpha=0.05)
    assert table["p max-T"].min() >= 2 / 2**6 - 3 * table["MC error of p max-T"].max()  # the floor
    holm = multipletests(table["p (permutation)"], method="holm")[1]
    note = marks_holm_note(table, 0.05)
    for level, mark in ((0.01, "**"), (0.001, "***")):
        want = f"at {level:g} (`{mark}`) max-T separates {int((table['p max-T'] < level).sum())} pairs and Holm {int((holm < level).sum())}"
        assert want in note
    assert int((holm < 0.001).sum()) >= 3 and note.endswith("Read `p Holm` beside the marks.")
    # in the HTML report the marks read as marks: bare, "(**) ... (***)" became bold text
    from hierbench.report._report import _inline

    shown = _inline(note)
    assert "<b>" not in shown and "(<code>**</code>)" in shown and "(<code>***</code>)" in shown
    # at 0.05 itself max-T misses no pair Holm puts ten times below it: not said at that level
    assert not ((holm < 0.005) & (table["p max-T"] >= 0.05).to_numpy()).any() and "at 0.05 (`*`)" not in note
    only = (holm < 0.01) & (table["p max-T"] >= 0.01).to_numpy()
    assert f"the {int(only.sum())} pairs Holm separates at 0.01 and max-T does not have p max-T of " \
        f"{table['p max-T'][only].min():.2g} or more" in note
    # no note where max-T separates as many (Holm's column never smaller), nor for a near miss
    assert marks_holm_note(table.assign(**{"p Holm": table["p max-T"]}), 0.05) == ""
    assert marks_holm_note(table.assign(**{"p Holm": table["p max-T"] * 0.9}), 0.05) == ""


@pytest.mark.slow  # a small beta-binomial fit
def test_pairs_section_from_a_fit_alone_points_to_no_table():
    """`hierbench report FIT` without the log drew the heatmap and said "the table's `Bayes P(a > b)`
    column", though no table (and no paired test) was there; with the log the table is there.
    """
    from hierbench.bayes import build_beta_binomial
    from hierbench.bayes import fit
    from hierbench.report._context import _Context
    from hierbench.report._report import Report
    from hierbench.report._sec_pairs import _sec_pairwise

    g = np.random.default_rng(2)
    data = xr.Dataset({"score": (("agent", "task", "run"), g.binomial(1, [[[0.3]], [[0.6]], [[0.5]]], (3, 15, 3)).astype(float))},
                      coords={"agent": ["a", "b", "c"]})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(build_beta_binomial(data), draws=150, tune=150, chains=2, rng=1, progress=False)
        texts = {}
        for name, d in (("alone", None), ("with data", data)):
            rep = Report("t")
            ctx = _Context(fit=dt, data=d, prob=0.95, rng=0, n_resamples=199, truth=None, freq="auto",
                           subset=[], say=lambda *_: None)  # fmt: skip
            _sec_pairwise(ctx, rep, "pairwise")
            texts[name] = (rep.blocks[0]["text"], rep.blocks[0].get("table"))
    text, table = texts["alone"]
    assert table is None and "the table's" not in text and "No paired tests here" in text
    text, table = texts["with data"]
    assert table is not None and "the table's `Bayes P(a > b)` column" in text and "No paired tests" not in text


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_pair_sentence_says_how_many_verdicts_monte_carlo_error_could_turn(shared_data):
    """VerbAgg's first 40 persons (grades no / perhaps / yes read as 0, 0.5, 1): "127 of 780 pairs
    differ" from a Monte Carlo max-T law, while four pairs sat at p max-T 0.052 (MC error 0.0015)
    and 100,000 fresh sign patterns put them at 0.0499 (131 differ). The sentence now counts the
    pairs within two Monte Carlo errors of the level, recounted here from the table with pandas.
    """
    from hierbench.data import from_records
    from hierbench.freq import compare_agents
    from hierbench.report import pair_frame
    from hierbench.report import pair_sentence

    df = pd.read_csv(shared_data / "lme4" / "verbagg.csv")
    df = df[df["id"] <= 40].assign(s=lambda d: d["resp"].map({"no": 0.0, "perhaps": 0.5, "yes": 1.0}))
    ds = from_records(df, agent="id", task="item", score="s")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare_agents(ds, rng=0)
    t = pair_frame(cmp)
    near = (t["p max-T"] - 0.05).abs() <= 2 * t["MC error of p max-T"]
    on = int((near & (t["p max-T"] < 0.05)).sum())
    text = pair_sentence(cmp)
    assert near.sum() > 0  # the premise: some verdicts sit at the level
    assert f"Monte Carlo estimates: {int(near.sum())} pairs ({on} counted as differing) lie within two" in text
    assert "n_draws=" in text


# ---------------------------------------------------------------- a pair max-T leaves out


def _top_bottom_mid(n: int = 12) -> xr.Dataset:
    """An agent at 100%, one at 0% and one between, over ``n`` tasks."""
    mid = np.tile([1.0, 0.0, 1.0, 1.0, 0.0, 0.0], n // 6)
    s = np.stack([np.ones(n), np.zeros(n), mid])[..., None]
    return xr.Dataset({"score": (("agent", "task", "run"), s)},
                      coords={"agent": ["top", "bottom", "mid"], "task": [f"t{i}" for i in range(n)]})  # fmt: skip


def test_a_pair_at_100_against_0_percent_differs_under_sign_flip_max_t():
    """An agent at 100% and one at 0% over 12 tasks: every task's difference is +1, so the pair has
    no standard error; max-T used to leave it out (p NaN: a 100-point gap read "not different").
    Under sign flips its |t| is infinite exactly under the 2 patterns that flip all 12 tasks alike
    (the other pairs have zero and nonzero differences, so a finite |t| under every pattern): its
    p max-T is 2 / 2^12, by hand, and it is counted as differing; no note is needed.
    """
    from hierbench.freq import compare_agents
    from hierbench.report import pair_frame
    from hierbench.report import pair_sentence
    from hierbench.report._pairs import no_p_note

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare_agents(_top_bottom_mid(), n_resamples=199, rng=0)
    table = pair_frame(cmp)
    assert table.loc["top - bottom", "p max-T"] == 2 / 2**12
    assert bool(table.loc["top - bottom", "differ (p max-T < 0.05)"]) is True
    assert no_p_note(table) == "" and "counted neither way" not in pair_sentence(cmp)


def test_a_pair_without_an_adjusted_p_value_is_not_called_not_different():
    """The multivariate-t max-T (``test="t"``) has no law for the infinite t of the 100%-0% pair and
    leaves it out (p NaN). The table said `differ` False and the sentence's count skipped it
    silently. Then: "counted neither way", and a note sent the reader to `p (t)` and `p Holm`, both NaN.
    Now the pair is counted apart as untested (the family is the 2 others), with its sign-flip p.
    """
    from hierbench.freq import compare_agents
    from hierbench.report import pair_frame
    from hierbench.report import pair_matrix
    from hierbench.report import pair_sentence
    from hierbench.report import pair_text
    from hierbench.report._pairs import no_p_note

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare_agents(_top_bottom_mid(), test="t", adjust="maxt", rng=0)
    table = pair_frame(cmp)
    col = "differ (p max-T < 0.05)"
    assert table.loc["top - bottom", col] is pd.NA and table.loc["top - bottom", "mean difference"] == 1.0
    assert table.loc["top - mid", col] in (True, False)  # the others keep their verdict
    note = no_p_note(table)
    assert note.startswith("No `p max-T` for 1 pair, so `differ (p max-T < 0.05)` is undefined there, not no: top - bottom")
    # its own p (t) and p Holm are NaN too (no spread): the note no longer sends the reader to them
    assert np.isnan(table.loc["top - bottom", "p (t)"]) and np.isnan(table.loc["top - bottom", "p Holm"])
    assert "read its own p-value" not in note and "no p-value at all" in note
    # +1 on each of 12 tasks: 2 of the 2^12 sign patterns reach |sum| 12, by enumeration 2 / 4096
    assert "sign-flip p-value over the 12 tasks is 0.00049" in note and round(2 / 2**12, 5) == 0.00049
    sentence = " ".join(pair_sentence(cmp).split())
    assert sentence.startswith("2 of the 2 pairs tested differ") and "max-T single-step over the 2 pairs" in sentence
    assert "1 of the 3 pairs cannot be tested: top - bottom differs by +1.000 on every one of its 12" in sentence
    row = next(r for r in pair_text(table).splitlines() if r.startswith("top - bottom"))
    assert "undefined" in row.split()
    assert pair_matrix(cmp, order=["top", "mid", "bottom"]).loc["top", "bottom"] == "+1.00?"


def test_a_difference_that_rounds_to_zero_reads_plus_zero_in_the_matrix():
    """VerbAgg persons 11 and 6 (equal means up to rounding): the matrix cell read "-0.00"."""
    from hierbench.freq import compare_agents
    from hierbench.report import pair_matrix

    s = np.array([[1, 0, 1, 0, 1, 0], [1e-12, 1, 1e-12, 1, 1e-12, 1], [1, 1, 1, 0, 1, 1]])[..., None]
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)},
                    coords={"agent": ["a", "b", "c"], "task": [f"t{i}" for i in range(6)]})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare_agents(ds, n_resamples=99, rng=0)
    assert -1e-11 < float(cmp.to_dataset()["mean_diff"].sel(agent="a", opponent="b")) < 0  # by construction
    assert pair_matrix(cmp, order=["c", "a", "b"]).loc["a", "b"] == "+0.00"  # was "-0.00"
    from hierbench.report import pair_frame
    from hierbench.report import pair_text

    row = next(r for r in pair_text(pair_frame(cmp)).splitlines() if r.startswith("a - b"))
    assert row.split()[3] == "0.000"  # the mean difference in the text table: was "-0.000"


def test_marks_note_says_when_max_t_and_holm_part_both_ways():
    """METR's continuous scores: at 0.05 max-T and Holm each separated 33 pairs, 3 of them different.
    The note said "p max-T understates here" and gave only the pairs Holm separates alone; the 3
    davinci-002 pairs max-T separates alone (9 clusters: a per-pair sign-flip p at least 2 / 2^9,
    which Holm multiplies) went unsaid. The counts here are by hand from the table.
    """
    import pandas as pd

    from hierbench.report._pairs import marks_holm_note

    table = pd.DataFrame({"p max-T": [0.0001, 0.06, 0.07, 0.004, 0.3],
                          "p Holm": [0.0002, 0.001, 0.002, 0.082, 0.4]})  # fmt: skip
    note = " ".join(marks_holm_note(table, 0.05).split())
    assert note.startswith("Max-T and Holm part here: at 0.05 (`*`) max-T separates 2 pairs and Holm 3")
    assert "(the 2 pairs Holm separates at 0.05 and max-T does not have p max-T of 0.06 or more)" in note
    assert "The one pair max-T separates at 0.05 and Holm does not (p Holm of 0.082 or more) is the other side" in note
    one_way = marks_holm_note(table.iloc[:3], 0.05)
    assert one_way.startswith("The marks understate here") and "other side" not in one_way
    # METR binarised: the floor shows at 0.01 only and max-T alone separates a pair at 0.05
    # (davinci-002 - human: p max-T 0.014, p Holm 0.328): said at the level where it happens
    table = pd.DataFrame({"p max-T": [0.02, 0.014, 0.3], "p Holm": [0.0005, 0.328, 0.5]})
    note = " ".join(marks_holm_note(table, 0.05).split())
    assert note.startswith("Max-T and Holm part here: at 0.01 (`**`) max-T separates 0 pairs and Holm 1")
    assert "The one pair max-T separates at 0.05 and Holm does not (p Holm of 0.33 or more) is the other side" in note


def test_an_interval_end_that_rounds_to_zero_keeps_its_sign():
    """SWE-bench, GPT-5 - o3: 'simultaneous lower 0.000 ... differ True' read as an interval touching 0;
    its end was 0.00024. An end that rounds to 0.000 without being 0 keeps two significant digits.
    """
    import pandas as pd

    from hierbench.report import pair_text

    table = pd.DataFrame({"mean difference": [0.066, 0.0], "simultaneous lower": [0.00024, -0.00031],
                          "simultaneous upper": [0.132, 0.0]}, index=["a - b", "c - d"])  # fmt: skip
    rows = {r.split()[0]: r.split()[3:] for r in pair_text(table).splitlines()[1:] if r[:1] in "ac"}
    assert rows["a"] == ["0.066", "0.00024", "0.132"] and rows["c"] == ["0.000", "-0.00031", "0.000"]


def test_two_chains_get_no_rank_uniformity_p_value_rather_than_a_false_pass():
    """Audit N: with 2 chains arviz-stats' multi-chain test printed p = 1 for chains scipy's KS test separates."""
    import arviz_stats as azs  # noqa: F401
    import matplotlib.pyplot as plt
    from scipy import stats

    from hierbench.report._convergence import _check_rows
    from hierbench.report._convergence import _verdict
    from hierbench.report._figures import rank_plot
    from hierbench.report._figures import rank_tests

    gen = np.random.default_rng(1)  # a seed where the test's p comes out at 1 (it does for about half)
    x = gen.normal(size=(2, 500))
    x[0] += 0.4
    assert stats.ks_2samp(x[0], x[1]).pvalue < 1e-3  # the chains disagree
    post = xr.Dataset({"x": (("chain", "draw"), x)}, coords={"chain": [0, 1], "draw": np.arange(500)})
    raw = post.azstats.compute_ranks(dim=("chain", "draw"), relative=True)
    assert float(raw.azstats.mchain_uniformity_test(dim=("chain", "draw"))[0]["x"]) > 0.5  # the degenerate p
    p = rank_tests(post, [("x", {})])
    assert np.isnan(p["x"])
    checks = [{"check": "r_hat", "value": 1.0, "at": "x", "limit": 1.01, "rule": "<=", "passed": True, "why": "w"}]
    table = _check_rows(checks, p, 0.01)
    assert not any("uniform" in c for c in table.index)
    verdict, _ = _verdict([], table, p, 0.01)
    assert verdict == "converged: every check passes (the rank plots' uniformity test was not run)"
    fig = rank_plot(post, [("x", {})], p).viz["figure"].item()
    printed = [t.get_text() for ax in fig.axes for t in ax.texts]
    plt.close(fig)
    assert "not tested: 2 chains " in printed


def test_a_rescaled_parameter_is_not_plotted_twice_among_the_highest_r_hats():
    """Audit N: a BT report's worst-R-hat panels showed elo[X] and ability[X], one parameter (elo an affine map)."""
    from hierbench.report._convergence import _distinct

    gen = np.random.default_rng(0)
    ab = gen.normal(size=(4, 200, 2))
    post = xr.Dataset(
        {"ability": (("chain", "draw", "agent"), ab), "elo": (("chain", "draw", "agent"), 1000 + 400 / np.log(10) * ab),
         "x": (("chain", "draw"), gen.normal(size=(4, 200)))},
        coords={"agent": ["a", "b"]},
    )
    rows = [("elo", {"agent": "a"}, 1.05), ("ability", {"agent": "a"}, 1.05), ("ability", {"agent": "b"}, 1.04),
            ("x", {}, 1.01)]
    assert [(n, s) for n, s, _ in _distinct(rows, post, 3)] == [("elo", {"agent": "a"}), ("ability", {"agent": "b"}), ("x", {})]


def test_the_rank_test_reads_draws_thinned_to_their_ess_so_agreeing_autocorrelated_chains_pass():
    """The test takes draws as independent: 4 agreeing AR(1) chains (lag-1 correlation 0.8, same law)
    get p < 1e-4 from arviz-stats on every draw, a false flag past the report's Bonferroni limit;
    thinned to about their ESS (draws per chain over the chains' mean own ESS, by arviz-stats) they do not.
    """
    import arviz_stats as azs

    from hierbench.report._figures import rank_tests
    from hierbench.report._figures import rank_thinning

    gen = np.random.default_rng(2)
    x = np.zeros((4, 800))
    x[:, 0] = gen.normal(size=4)
    for t in range(1, 800):
        x[:, t] = 0.8 * x[:, t - 1] + gen.normal(size=4) * 0.6
    post = xr.Dataset({"x": (("chain", "draw"), x)}, coords={"chain": np.arange(4), "draw": np.arange(800)})
    raw = post.azstats.compute_ranks(dim=("chain", "draw"), relative=True)
    assert float(raw.azstats.mchain_uniformity_test(dim=("chain", "draw"))[0]["x"]) < 1e-4
    ess = np.mean([float(azs.ess(post.isel(chain=[c]), sample_dims=["chain", "draw"])["x"]) for c in range(4)])
    assert rank_thinning(post, [("x", {})]) == round(800 / ess) > 4
    assert rank_tests(post, [("x", {})])["x"] > 0.01
