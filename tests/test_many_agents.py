"""The demo's and the report's pair tables stay readable with many agents (M (M - 1) / 2 pairs).

A 316-person survey read as agents made 49,770 pairs: the demo printed every one (51,959 lines)
and the report held them twice (31 MB of HTML). The report shows every pair up to the cap (a
25-agent leaderboard's 300 pairs); above it the pairs that differ, with the counts, how many
rows are left out, and the complete table as ``pairs.csv`` beside the report. The demo's
stdout shows every pair up to 45 (10 agents); above that the pairs of agents next to each other
in the ranking by mean score, and where every pair is. Expected values come from
``compare_agents(...).to_frame()`` called on its own with the same seed, from pandas' own sort, or
from counts of pairs; never from the code under test.
"""

import re
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.demo import DemoContext
from hierbench.demo._pairs import _compare_section
from hierbench.freq import compare_agents
from hierbench.testing import simulate_eval

CAP = 300  # the rule's cap: every pair of 25 agents (300 pairs) is shown


def _log(n_agents: int, seed: int = 5):
    ds, _ = simulate_eval(n_agents=n_agents, n_tasks=30, n_runs=2, rng=seed)
    return ds


def _pair_rows(text: str, agents) -> list[str]:
    """The printed rows of a pair table: lines that start with ``a - b`` for two agents of the log."""
    names = "|".join(re.escape(str(a)) for a in agents)
    pat = re.compile(rf"^({names}) - ({names})\s")
    return [line for line in text.splitlines() if pat.match(line)]


def _section(ds, **extra):
    ctx = DemoContext(ds, None, {"seed": 3, **extra})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ctx, _compare_section(ctx)


def _neighbours(ds) -> list[tuple[str, str]]:
    """The pairs of agents next to each other by mean score per task (pandas' stable sort), best first."""
    order = ds["score"].mean(["run", "task"]).to_series().sort_values(ascending=False, kind="stable").index
    return [tuple(sorted((str(order[k]), str(order[k + 1])))) for k in range(len(order) - 1)]


def _row_pairs(rows: list[str]) -> list[tuple[str, str]]:
    return [tuple(sorted(r.split("  ")[0].strip().split(" - "))) for r in rows]


def test_25_agents_print_their_24_neighbour_pairs_and_say_where_the_300_are():
    ds = _log(25)
    _, text = _section(ds, out="somewhere")
    rows = _pair_rows(text, ds["agent"].values)
    assert _row_pairs(rows) == _neighbours(ds) and len(rows) == 24
    flat = " ".join(text.split())
    assert "300 pairs," in flat and "All 300 pairs: somewhere/report.md (its pair table)." in flat
    assert "pairs.csv" not in flat  # the report shows all 300: no file beside it


def test_neighbour_rows_read_higher_minus_lower_with_compare_agents_numbers():
    # a neighbour row kept compare_agents' orientation, so a ranked list read down with some
    # differences negative; each row now reads (higher ranked) - (lower ranked), its numbers those
    # of compare_agents' own table for the same seed, turned round where it named the pair the other way
    ds = _log(25)
    _, text = _section(ds, out="somewhere")
    ref = compare_agents(ds, prob=0.95, rng=3).to_frame()
    order = list(ds["score"].mean(["run", "task"]).to_series().sort_values(ascending=False, kind="stable").index)
    turned = 0
    for row in _pair_rows(text, ds["agent"].values):
        label, nums = row.split("  ")[0].strip(), row.split()[3:6]
        a, b = label.split(" - ")
        assert order.index(a) < order.index(b), row
        diff, lo, hi = map(float, nums)
        if label in ref.index:
            want = ref.loc[label, ["estimate", "simultaneous_lower", "simultaneous_upper"]].to_numpy(float)
        else:
            turned += 1
            r = ref.loc[f"{b} - {a}"]
            want = -np.array([r["estimate"], r["simultaneous_upper"], r["simultaneous_lower"]], float)
        np.testing.assert_allclose([diff, lo, hi], want, atol=5e-4)
    assert turned > 0  # this seed has pairs that compare_agents names the other way round


def test_ten_agents_print_every_pair():
    ds = _log(10)
    _, text = _section(ds, out="somewhere")
    assert len(set(_pair_rows(text, ds["agent"].values))) == 45 and "shown here" not in text


@pytest.mark.slow
def test_40_agents_print_the_pairs_that_differ_and_say_what_is_left_out(tmp_path, monkeypatch):
    """780 pairs: at most the cap printed, the counts and the rows left out said, and every pair,
    with the same numbers as compare_agents' own table for the same seed, in pairs.csv. The report
    is cut to its pair section (the others are not what this checks, and take the time): the demo's
    ``write_report`` has no ``sections=``, so the ``build_all`` it calls is given ``sections=``, and
    the report says it is partial.
    """
    import hierbench.report
    from hierbench.demo import write_report

    build_all = hierbench.report.build_all
    monkeypatch.setattr(hierbench.report, "build_all", lambda *a, **kw: build_all(*a, sections=["pairwise"], **kw))

    ds = _log(40)
    ref = compare_agents(ds, prob=0.95, rng=3).to_frame()  # the independent call
    n_differ = int((ref["p_adjusted"] < 0.05).sum())
    assert 20 <= n_differ < CAP  # this seed: the pairs that differ are what is shown
    ctx, text = _section(ds, out=str(tmp_path), fast=True)
    rows = _pair_rows(text, ds["agent"].values)
    assert _row_pairs(rows) == _neighbours(ds)  # the demo's stdout: the 39 neighbours
    flat = " ".join(text.split())
    assert f"780 pairs, {n_differ} of which differ: shown here are the 39 pairs" in flat
    assert f"All 780 pairs: {tmp_path / 'pairs.csv'}." in flat

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        write_report(ctx, tmp_path, [("6. Does A beat B?", text)])
    csv = pd.read_csv(tmp_path / "pairs.csv", index_col="pair")
    # the report's rows run in its one order (f42433f), each the earlier agent minus the later: a row
    # is compare_agents' own pair or its reverse, whose differences and bounds change sign and swap
    assert len(csv) == 780 and set(zip(csv["agent"], csv["opponent"], strict=True)) | set(
        zip(csv["opponent"], csv["agent"], strict=True)) >= set(zip(ref["agent"], ref["opponent"], strict=True))
    by_pair = ref.set_index(["agent", "opponent"])
    same = [(a, b) in by_pair.index for a, b in zip(csv["agent"], csv["opponent"], strict=True)]
    key = [(a, b) if s else (b, a) for a, b, s in zip(csv["agent"], csv["opponent"], same, strict=True)]
    theirs_rows = by_pair.loc[key]
    sign = np.where(same, 1.0, -1.0)
    for ours, theirs, signed in (
        ("mean difference", "estimate", "sign"),
        ("simultaneous lower", "simultaneous_lower", "lower"),
        ("simultaneous upper", "simultaneous_upper", "upper"),
        ("p max-T", "p_adjusted", ""),
        ("MC error of p max-T", "p_adjusted_mcse", ""),
        ("per-pair lower", "lower", "lower"),
        ("per-pair upper", "upper", "upper"),
        ("p (permutation)", "p_value", ""),
        ("p Holm", "p_holm", ""),
        ("p BH", "p_bh", ""),
        ("shared tasks", "n_tasks", ""),
    ):
        want = theirs_rows[theirs].to_numpy(float)
        if signed == "sign":
            want = sign * want
        elif signed:  # a reversed pair's lower bound is minus the other's upper
            other = {"lower": "upper", "upper": "lower"}[signed]
            flip = theirs_rows[theirs.replace(signed, other)].to_numpy(float)
            want = np.where(same, want, -flip)
        np.testing.assert_array_equal(csv[ours].to_numpy(float), want, err_msg=ours)
    assert csv["differ (p max-T < 0.05)"].sum() == n_differ
    # every column the printed table has is in the file
    printed = list(ctx.extra["compare_table"].columns)
    assert {"mean difference", "simultaneous lower", "p max-T"} <= set(printed) <= set(csv.columns)

    md = (tmp_path / "report.md").read_text()
    assert "A partial report: only the sections asked for (sections=['pairwise'])" in md  # the cut took effect
    pairwise = md.split("## Does A beat B? ")[1].split("\n## ")[0]
    assert "**All 780 pairs**" not in pairwise and "<details>" not in pairwise  # no folded copy
    table_rows = [r for r in pairwise.splitlines() if re.match(r"^\| agent_\d+ - agent_\d+ ", r)]
    assert len(table_rows) == n_differ
    # the report's rows are exactly the pairs that differ, by p then |difference| (pandas' sort)
    want = ref[ref["p_adjusted"] < 0.05].assign(size=lambda d: -d["estimate"].abs())
    want = want.sort_values(["p_adjusted", "size"], kind="stable").index.tolist()
    # (each row in the report's direction, and pairs tied on both keys in the report's order)
    shown = [frozenset(r.split("|")[1].strip().split(" - ")) for r in table_rows]
    assert sorted(map(sorted, shown)) == sorted(sorted(w.split(" - ")) for w in want)
    key = {frozenset((a, b)): (p, -abs(d)) for a, b, p, d in
           zip(ref["agent"], ref["opponent"], ref["p_adjusted"], ref["estimate"], strict=True)}  # fmt: skip
    assert [key[s] for s in shown] == sorted(key[s] for s in shown)
    assert f"the other {780 - n_differ:,} pairs are not shown here" in pairwise and "`pairs.csv`" in pairwise


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_without_a_report_the_text_says_how_to_get_every_pair():
    ds = _log(40)
    _, text = _section(ds, out=None)
    flat = " ".join(text.split())
    assert "hierbench compare LOG --json --seed 3" in flat
    assert "compare_agents(data, rng=3).to_frame()" in flat
    assert "pairs.csv" not in flat


def _frame(p, d):
    return pd.DataFrame(
        {"mean difference": d, "p max-T": p, "differ (p max-T < 0.05)": np.asarray(p) < 0.05},
        index=[f"a{i} - b{i}" for i in range(len(p))],
    )


def test_rule_when_few_pairs_differ_shows_the_most_significant_and_counts_the_rest():
    from hierbench.report._pair_rows import shown_pairs

    g = np.random.default_rng(0)
    p = np.round(g.uniform(0.02, 1, 400), 2)  # ties on p: |difference| decides
    d = g.normal(0, 0.3, 400)
    t = _frame(p, d)
    n_differ = int((p < 0.05).sum())
    assert 0 < n_differ < 20
    shown, note = shown_pairs(t, "in `pairs.csv`")
    want = t.assign(size=-np.abs(d)).sort_values(["p max-T", "size"], kind="stable").index[:20]
    assert list(shown.index) == list(want)
    assert f"400 pairs, {n_differ} of which differ" in note
    assert "the other 380 pairs are not shown here" in note and note.endswith("in `pairs.csv`.")
    # at the cap nothing is left out, and nothing is said
    same, quiet = shown_pairs(t.iloc[:CAP], "x")
    assert same.equals(t.iloc[:CAP]) and quiet == ""


def test_rule_when_more_than_the_cap_differ_shows_the_cap():
    from hierbench.report._pair_rows import shown_pairs

    p = np.linspace(0, 0.04, 500)
    shown, note = shown_pairs(_frame(p, np.ones(500)), "x")
    assert len(shown) == CAP and list(shown.index) == [f"a{i} - b{i}" for i in range(CAP)]
    assert "the 300 of the 500 that differ" in note and "the other 200 pairs are not shown here" in note


@pytest.mark.parametrize(("n", "named"), [(60, True), (61, False)])
def test_heatmap_names_its_axes_only_where_they_can_be_read(n, named):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from hierbench.report import heatmap

    m = pd.DataFrame(np.full((n, n), 0.5), index=[f"p{i}" for i in range(n)], columns=[f"p{i}" for i in range(n)])
    fig = heatmap(m, title="t", xlabel="opponent", ylabel="agent", cbar_label="c")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert (labels == list(m.index)) if named else labels == []
    assert fig.get_size_inches()[0] <= (0.6 * n + 3 if named else 10.0)
    plt.close(fig)


def test_attached_file_same_bytes_is_not_a_replacement(tmp_path):
    """The HTML and its Markdown twin both write pairs.csv: the second finds its own bytes and goes on;
    another report's different file is refused without overwrite.
    """
    from hierbench.report import Report

    r = Report("x")
    r.section("s", "text")
    r.attach("pairs.csv", "a,b\n1,2\n")
    r.write(tmp_path / "report.html")
    r.write(tmp_path / "report.md")  # same bytes there: no refusal
    assert (tmp_path / "pairs.csv").read_text() == "a,b\n1,2\n"
    other = Report("y")
    other.attach("pairs.csv", "a,b\n3,4\n")
    with pytest.raises(FileExistsError, match=r"pairs\.csv"):
        other.write(tmp_path / "other.md")
    with pytest.raises(ValueError, match="plain file name"):
        other.attach("../pairs.csv", "")


def test_demo_refuses_and_with_overwrite_removes_an_earlier_logs_pairs_csv(tmp_path, capsys):
    """A pairs.csv from an earlier, larger log beside this run's report would pass for this log's
    pairs: without --overwrite the demo refuses (naming it); with it, a 3-agent run (3 pairs, no file
    of its own) removes it. Partial-credit scores: no Bayesian fit, so the run is short.
    """
    from hierbench.demo import run_demo

    g = np.random.default_rng(4)
    s = g.integers(0, 5, (3, 12, 1)) / 4
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)}, coords={"agent": ["a", "b", "c"]})
    (tmp_path / "pairs.csv").write_text("an earlier log's pairs")
    with pytest.raises(FileExistsError, match=r"pairs\.csv"):
        run_demo(ds, out=tmp_path, fast=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run_demo(ds, out=tmp_path, fast=True, overwrite=True) == 0
    out = capsys.readouterr().out
    assert not (tmp_path / "pairs.csv").exists() and (tmp_path / "report.md").exists()
    assert "pairs.csv" not in out


def test_cli_compare_shortens_the_pair_list_above_the_cap_and_all_pairs_prints_every_row(tmp_path, capsys):
    # 26 agents (325 pairs): past the numbered matrix's 300 pairs; the list shows the pairs that
    # differ (compare_agents' own verdict, same seed) and says how many are left out
    from hierbench.cli import main
    from hierbench.data import to_records

    ds, _ = simulate_eval(n_agents=26, n_tasks=10, n_runs=1, rng=2)
    path = tmp_path / "log.csv"
    to_records(ds).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = compare_agents(ds, rng=0).to_frame()
    differ = ref["p_adjusted"] < 0.05  # the verdict the table's `differ` column states
    assert main(["compare", str(path)]) == 0
    out = capsys.readouterr().out
    rows = _pair_rows(out, ds["agent"].values)
    assert len(rows) == max(int(differ.sum()), 20) < 325
    assert f"the other {325 - len(rows):,} pairs are not shown" in " ".join(out.split())
    assert main(["compare", str(path), "--all-pairs"]) == 0
    assert len(_pair_rows(capsys.readouterr().out, ds["agent"].values)) == 325
