"""The hierbench CLI: validate, summary, fit, report, compare, demo; errors in the user's words."""

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hierbench.cli import main
from hierbench.data import from_records
from hierbench.demo import DEMO_SECTIONS
from hierbench.io import save_dataset
from hierbench.testing import default_dataset

# a: t1 x3 (1, 0, 1), t2 x1 (0.5); b: t1 x2 (error -> 0, 1), never t2.
ROWS = {
    "model": ["a", "a", "a", "a", "b", "b"],
    "item": ["t1", "t1", "t2", "t1", "t1", "t1"],
    "reward": [1.0, 0.0, 0.5, 1.0, np.nan, 1.0],
    "crashed": [False, False, False, False, True, False],
    "repo": ["r1", "r1", "r2", "r1", "r1", "r1"],
}
COLS = [
    "--agent",
    "model",
    "--task",
    "item",
    "--score",
    "reward",
    "--error",
    "crashed",
    "--cluster",
    "repo",
]


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "runs.csv"
    pd.DataFrame(ROWS).to_csv(path, index=False)
    return path


def test_validate_reports_the_schema(log, capsys):
    assert main(["validate", str(log), *COLS]) == 0
    out = capsys.readouterr().out
    assert "valid eval dataset (hierbench.eval/1)" in out
    assert "records: 6 read, 6 kept" in out
    assert "agents: 2    tasks: 2    runs: 6    scores: mixed" in out
    # cells: a/t1 3 runs, a/t2 1, b/t1 2; b/t2 never run
    assert "runs per cell: min 1, median 2, max 3    (unbalanced)" in out
    assert "missing cells: 1 of 4 (agent x task never run)" in out
    assert "error runs: 1 (policy errors='fail')" in out
    assert "task coords: cluster" in out


def test_validate_json_and_exclude_policy(log, capsys):
    assert main(["validate", str(log), *COLS, "--errors", "exclude", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["n_records_read"] == 6 and rep["n_records_kept"] == 5
    assert rep["not_kept"] == {"infrastructure error, excluded (errors='exclude')": 1}
    assert rep["runs_per_cell"] == {"min": 1, "median": 2.0, "max": 3}
    assert rep["balanced"] is False and rep["n_missing_cells"] == 1


def test_validate_shows_warnings(tmp_path, capsys):
    rows = dict(ROWS, repo=["r1", None, "r2", "r1", "r1", "r1"])  # t1's second record: no repo
    path = tmp_path / "w.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    assert main(["validate", str(path), *COLS]) == 0
    cap = capsys.readouterr()
    assert "task cluster: empty in some records of 1 task (each took the one value its other records hold)" in cap.out
    # the reader's warning on stderr, the one channel of warnings; the report alone on stdout
    assert (
        f"warning: InconsistentAttributeWarning: --cluster column 'repo' in {path} is empty in some records "
        "of 1 task ['t1'] and holds one value in the others" in cap.err
    )
    assert "warning:" not in cap.out


def test_a_cluster_column_that_varies_within_a_task_is_refused(tmp_path, capsys):
    """`compare --cluster started_at` (a time per run) took each task's first time as its cluster
    and tested on those, with only a stderr warning; it is refused, exit 2, in the flags' words.
    The counts are the file's: 3 tasks, each run at two different times.
    """
    df = pd.DataFrame({"agent": ["a", "b"] * 6, "task": ["t1", "t1", "t2", "t2", "t3", "t3"] * 2,
                       "score": [1, 0] * 6, "started_at": range(100, 112)})
    path = tmp_path / "runs.csv"
    df.to_csv(path, index=False)
    assert main(["compare", str(path), "--cluster", "started_at"]) == 2
    line = _one_line_error(capsys, "hierbench compare: invalid input: --cluster column 'started_at' in")
    assert "must hold one value per task" in line
    assert "3 of 3 tasks hold two or more, e.g. 't1': '100' and '101'; 't2': '102' and '103'; " in line
    assert "per-run variable, not a task attribute: leave it out of --cluster (a numeric one can be kept per run with --extra)" in line
    assert main(["validate", str(path), "--agent-coord", "started_at"]) == 2
    line = _one_line_error(capsys, "--agent-coord column 'started_at'", "2 of 2 agents hold two or more")


def _one_line_error(capsys, *words):
    err = capsys.readouterr().err
    assert "Traceback" not in err and "`obj`" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def test_invalid_input_exits_2_with_one_line_in_the_users_words(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    pd.DataFrame(dict(ROWS, reward=[1.0, 2.0, 0.5, 1.0, 0.0, 1.0])).to_csv(path, index=False)
    assert main(["validate", str(path), *COLS]) == 2
    _one_line_error(capsys, "hierbench validate: invalid input:", "--score", "'reward'", "[2.0]")
    assert main(["summary", str(tmp_path / "none.csv")]) == 2
    _one_line_error(capsys, "hierbench summary: error: no such file or folder:", "none.csv")
    assert main(["validate", str(path)]) == 2
    _one_line_error(capsys, "missing required columns", "--task", "--score", "--agent")
    # a battle log (LLMFAO's columns) is told where battles are read: not silently a run log
    battles = tmp_path / "battles.csv"
    pd.DataFrame({"prompt": ["p1"], "left": ["a"], "right": ["b"], "winner": ["left"]}).to_csv(battles, index=False)
    assert main(["fit", str(battles), "-o", str(tmp_path / "f.nc")]) == 2
    line = _one_line_error(capsys, "missing required columns", "look like pairwise battles (left, right, winner)")
    assert "hierbench.data.read_battles" in line and "fit_bradley_terry_ml" in line


def test_single_agent_is_refused_beside_agent_and_on_a_log_of_several_agents(log, tmp_path, capsys):
    # the audit: --single-agent X on a log whose agent column held 3 models printed "agents: 1",
    # the models read as 3 runs per task of X; an --agent beside it was silently ignored
    multi = tmp_path / "multi.csv"
    pd.DataFrame(ROWS).rename(columns={"model": "agent"}).to_csv(multi, index=False)
    cols = ["--task", "item", "--score", "reward"]
    for agent in (["--agent", "agent"], ["--agent", "model"]):  # typed default or not: both refused
        assert main(["validate", str(log), *cols, "--single-agent", "X", *agent]) == 2
        _one_line_error(capsys, "hierbench validate: error:", f"--single-agent X and {' '.join(agent)}",
                        "give one, not both")  # fmt: skip
    assert main(["summary", str(multi), *cols, "--single-agent", "X"]) == 2
    _one_line_error(capsys, "hierbench summary: invalid input:", "--single-agent='X'", "column 'agent'",
                    "2 distinct values ['a', 'b']", "merged", "(--agent='agent', without --single-agent)")  # fmt: skip
    # one agent in the agent column: a one-agent log, renamed as asked
    one = tmp_path / "one.csv"
    pd.DataFrame(ROWS).assign(model="a").rename(columns={"model": "agent"}).to_csv(one, index=False)
    assert main(["summary", str(one), *cols, "--error", "crashed", "--single-agent", "X"]) == 0
    assert re.search(r"^X +2 +0 +6 ", capsys.readouterr().out, flags=re.M)  # 2 tasks, 0 missing, 6 runs


def test_unreadable_files_and_refused_overwrites_exit_2(tmp_path, log, capsys):
    bad = tmp_path / "fit.nc"
    bad.write_bytes(b"\x89HDF\r\n\x1a\n truncated")
    assert main(["report", str(bad), "-o", str(tmp_path / "r.html")]) == 2
    _one_line_error(capsys, "hierbench report:", "fit.nc", "cannot be read")
    assert main(["summary", str(bad)]) == 2
    _one_line_error(capsys, "fit.nc")
    (tmp_path / "r.html").write_text("mine")
    assert main(["report", "--data", str(log), *COLS, "-o", str(tmp_path / "r.html")]) == 2
    _one_line_error(capsys, "-o", "r.html", "already exists", "--overwrite")
    assert (tmp_path / "r.html").read_text() == "mine"
    assert main(["compare", str(log), *COLS, "--prob", "1.5"]) == 2
    _one_line_error(capsys, "--prob")
    assert main(["report", "-o", str(tmp_path / "x.html")]) == 2
    _one_line_error(capsys, "give a saved fit (FIT) and/or --data LOG")


def test_a_hierbench_warning_raised_as_error_exits_2(log, capsys, monkeypatch):
    import hierbench.cli as cli
    from hierbench import HierbenchWarning

    def raising(args):
        raise HierbenchWarning(f"{args.file[0]}: something undefined")  # LOG is nargs="+"

    parser = cli.build_parser

    def patched():
        p = parser()
        p._subparsers._group_actions[0].choices["summary"].set_defaults(func=raising)
        return p

    monkeypatch.setattr(cli, "build_parser", patched)
    assert main(["summary", str(log)]) == 2
    _one_line_error(capsys, "hierbench summary: invalid input:", "runs.csv: something undefined")


def test_help_is_fast_because_nothing_heavy_is_imported():
    code = (
        "import sys, hierbench.cli;"
        "print(','.join(m for m in ('numpy', 'pandas', 'xarray', 'scipy', 'pymc') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    res = subprocess.run(
        [sys.executable, "-m", "hierbench", "--help"], capture_output=True, text=True
    )
    assert res.returncode == 0
    for cmd in ("validate", "summary", "fit", "report", "compare", "demo"):
        assert cmd in res.stdout


def test_several_logs_that_are_not_inspect_logs_are_refused_by_name(tmp_path, capsys):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    for p in (a, b):
        pd.DataFrame(ROWS).to_csv(p, index=False)
    assert main(["compare", str(a), str(b), *COLS]) == 2
    _one_line_error(capsys, "hierbench compare: error: LOG: 2 files given", "only Inspect logs", "a.csv, ")


def test_compare_on_a_one_agent_log_names_the_file_and_the_agent(tmp_path, capsys):
    path = tmp_path / "one.csv"
    pd.DataFrame({"agent": ["a"] * 4, "task": ["t1", "t2", "t3", "t4"], "score": [1, 0, 1, 1]}).to_csv(path, index=False)
    assert main(["compare", str(path)]) == 2
    _one_line_error(capsys, "hierbench compare: error: compare needs at least 2 agents", "holds 1 ('a')", "one.csv")


def test_compare_prints_the_paired_table(tmp_path, capsys):
    """Mean paired differences against an independent pandas computation on the shared tasks."""
    from hierbench.data import to_records
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=3, n_tasks=30, n_runs=2, p_missing_task=0.1, rng=4)
    df = to_records(ds)
    path = tmp_path / "log.csv"
    df.to_csv(path, index=False)
    assert main(["compare", str(path), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    per_task = df.groupby(["agent", "task"])["score"].mean().unstack("agent")
    agents = sorted(per_task.columns)
    pairs = {p["pair"]: p for p in res["pairs"]}
    assert len(pairs) == 3
    for i, x in enumerate(agents):
        for y in agents[i + 1 :]:
            a, b = (x, y) if f"{x} - {y}" in pairs else (y, x)  # rows in the report's order (audit X)
            both = per_task[[a, b]].dropna()
            row = pairs[f"{a} - {b}"]
            assert row["mean difference"] == pytest.approx((both[a] - both[b]).mean(), abs=1e-12)
            assert row["per-pair lower"] < row["mean difference"] < row["per-pair upper"]
            # the simultaneous interval is the per-pair one widened to the family
            assert row["simultaneous lower"] <= row["per-pair lower"] or row["per-pair lower"] < 0
            assert row["shared tasks"] == len(both)
    assert res["adjust"] == "maxt" and res["unit"] == "tasks"
    assert res["alpha"] == 0.05  # not 1 - 0.95 = 0.050000000000000044
    # what the interval columns are: the result's own descriptions (a CR2 t, not a bootstrap, with clusters)
    from hierbench.freq import compare_agents

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = compare_agents(from_records(path), rng=0).to_dataset()
    assert res["per_pair_interval"] == ref["ci"].attrs["ci_detail"]
    assert res["simultaneous_interval"] == ref["ci_simultaneous"].attrs["ci_detail"]
    # and their kinds: the per-pair detail ("bootstrap, tasks scheme, ...") does not name percentile
    assert (res["per_pair_interval_kind"], res["simultaneous_interval_kind"]) == (
        ref["ci"].attrs["ci_kind"], ref["ci_simultaneous"].attrs["ci_kind"])
    assert main(["compare", str(path)]) == 0
    out = capsys.readouterr().out
    assert "p Holm" in out and "simultaneous lower" in out and "agent_00 - agent_01" in out
    # the one sentence: the unit, the test and the adjustment
    assert "over the 30 tasks, adjusted by max-T single-step over the 3 pairs" in " ".join(out.split())
    # differences on a lattice (per-task means of 2 runs): every pair's sign-flip law is counted
    # exactly, which the settings line says without claiming 2^30 patterns were listed one by one
    assert "per-pair p-values exact (every sign pattern counted" in " ".join(out.split())


def _hard_half_log(path):
    """8 agents on 24 tasks (12 easy, 12 hard; 2 runs), 'few' on the hard 12 only, 'b2' a copy of 'b'."""
    rng = np.random.default_rng(0)
    rates = {"h": (0.95, 0.5), "c": (0.9, 0.3), "g": (0.85, 0.3), "a": (0.8, 0.2), "i": (0.7, 0.2),
             "b": (0.6, 0.1), "e": (0.5, 0.1), "d": (0.4, 0.05)}  # fmt: skip
    rows = [
        {"agent": agent, "task": f"t{t:02d}", "run": r, "score": int(rng.random() < rate[t >= 12])}
        for agent, rate in rates.items() for t in range(24) for r in range(2)
    ]
    rows += [{"agent": "few", "task": f"t{t:02d}", "run": r, "score": int(rng.random() < 0.7)}
             for t in range(12, 24) for r in range(2)]  # fmt: skip
    df = pd.DataFrame(rows)
    df = pd.concat([df, df[df.agent == "b"].assign(agent="b2")])
    df.to_csv(path, index=False)
    return df


def test_compare_matrix_orders_agents_by_mean_score(tmp_path, capsys):
    """METR's matrix put davinci-002 (0.000) above gpt-3.5-turbo-instruct (0.008), ordered by the
    mean paired difference: an agent run on hard tasks only rose. Rows go by mean score per task
    (highest first, ties by name), each cell the row minus column difference of pandas' own mean
    over the shared tasks, marked by the pair's max-T p-value of --json.
    """
    df = _hard_half_log(tmp_path / "log.csv")
    per_task = df.groupby(["agent", "task"])["score"].mean().unstack("agent")
    mean = per_task.mean()  # over the tasks each ran (NaN skipped)
    order = sorted(mean.index, key=lambda a: (-mean[a], a))
    assert mean["c"] == mean["i"] == 0.5 and mean["b"] == mean["b2"]  # two ties, broken by name
    diff = {(a, b): (per_task[a] - per_task[b]).mean() for a in order for b in order}
    paired = {a: np.mean([diff[a, b] for b in order if b != a]) for a in order}
    assert max(paired, key=paired.get) == "few" != order[0]  # the old order would put 'few' first
    args = ["compare", str(tmp_path / "log.csv"), "--run", "run", "--seed", "1"]
    assert main([*args, "--json"]) == 0
    p = {r["pair"]: r["p max-T"] for r in json.loads(capsys.readouterr().out)["pairs"]}
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "agents in order of their mean score per task" in " ".join(out.split())
    lines = out.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("agent (row minus column)")) + 1
    assert lines[top - 2].split() == order[1:]  # short names head the columns themselves
    rows = [re.match(r"(\S+)\s*(.*)$", line).groups() for line in lines[top : top + len(order)]]
    assert [r[0] for r in rows] == order
    for i, (a, cells) in enumerate(rows):
        cells = cells.split()
        assert len(cells) == len(order) - 1 - i
        for b, cell in zip(order[i + 1 :], cells, strict=True):
            assert float(cell.rstrip("*")) == pytest.approx(diff[a, b], abs=0.005 + 1e-9), (a, b)
            pv = p.get(f"{a} - {b}", p.get(f"{b} - {a}"))
            if pv is None:  # b and b2 ran the same runs: no difference to test, no mark
                pv = 1.0
            marks = "***" if pv < 0.001 else "**" if pv < 0.01 else "*" if pv < 0.05 else ""
            assert cell[len(cell.rstrip("*")) :] == marks, (a, b, cell, pv)


def test_bootstrap_method_help_points_an_all_zero_agent_to_pass_hat_k(capsys):
    """The help recommended percentile where BCa is undefined; for 0 of 120 that is [0, 0]. It
    now names pass_hat_k(data, 1), whose bound for 0 of 120 at 95% is 1 - 0.025^(1/120) = 0.0303.
    """
    from hierbench._base import ZeroWidthIntervalWarning
    from hierbench.freq import bootstrap_ci
    from hierbench.freq import pass_hat_k

    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "no resampling interval has width (percentile gives [0, 0] for 0 of 120)" in text
    assert "hierbench.freq.pass_hat_k(data, 1) gives a distribution-free bound instead" in text
    ds = from_records(pd.DataFrame({"agent": "z", "task": [f"t{i}" for i in range(120)], "score": 0.0}))
    with pytest.warns(ZeroWidthIntervalWarning, match="percentile interval here has zero width"):
        pct = bootstrap_ci(ds, method="percentile", n_resamples=99, rng=0).ci.values.ravel()
    assert pct.tolist() == [0.0, 0.0]
    res = pass_hat_k(ds, 1)
    assert res.ci.values.ravel() == pytest.approx([0.0, 1 - 0.025 ** (1 / 120)], abs=1e-12)
    assert res.ci_flag.values.ravel().tolist() == ["exact bound"]


def test_summary_text(log, capsys):
    assert main(["summary", str(log), *COLS]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (
        "2 agents x 2 tasks, 6 runs (1 infrastructure errors, errors='fail'); 1 agent x task cells never run"
    )
    row_a = next(line for line in out.splitlines() if line.startswith("a "))
    # a: per-task means (2/3, 0.5) -> 0.583; per-run mean 2.5/4 = 0.625
    assert row_a.split() == ["a", "2", "0", "4", "0", "0.000", "0.583", "0.625"]
    row_b = next(line for line in out.splitlines() if line.startswith("b "))
    # b: error counts as failure: (0 + 1)/2; error rate 1/2; t2 missing
    assert row_b.split() == ["b", "1", "1", "2", "1", "0.500", "0.500", "0.500"]


def test_summary_says_how_many_tasks_the_per_task_mean_averages(tmp_path, capsys):
    """Under --errors exclude a task with only errored runs was attempted but not scored: on METR the
    summary said GPT-4 0314 ran 83 tasks, 0 missing, beside a per-task mean over 72. The column
    `tasks scored` (summarize's n_tasks_scored) says so when the two counts differ.
    """
    path = tmp_path / "runs.csv"
    pd.DataFrame({"agent": ["a", "a", "b", "b"], "task": ["t1", "t2", "t1", "t2"],
                  "score": [1.0, 0.0, 1.0, 0.0], "err": [False, False, False, True]}).to_csv(path, index=False)
    assert main(["summary", str(path), "--error", "err", "--errors", "exclude"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].split()[:5] == ["tasks", "tasks", "scored", "missing", "runs"]
    assert next(x for x in lines if x.startswith("b ")).split()[:4] == ["b", "2", "1", "0"]
    assert next(x for x in lines if x.startswith("b ")).split()[-2] == "1.000"  # its one scored task
    assert main(["summary", str(path), "--error", "err"]) == 0  # errors fail: every task scored
    assert "scored" not in capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["jsonl", "parquet", "nc"])
def test_summary_json_from_every_format(log, tmp_path, fmt, capsys):
    df = pd.read_csv(log)
    if fmt == "jsonl":
        path = tmp_path / "r.jsonl"
        df.to_json(path, orient="records", lines=True)
    elif fmt == "parquet":
        path = tmp_path / "r.parquet"
        df.to_parquet(path)
    else:
        path = tmp_path / "r.nc"
        save_dataset(
            from_records(
                df, agent="model", task="item", score="reward", error="crashed", cluster="repo"
            ),
            path,
        )
    args = ["summary", str(path), "--json"] + ([] if fmt == "nc" else COLS)
    assert main(args) == 0
    res = json.loads(capsys.readouterr().out)
    agents = {r["agent"]: r for r in res["agents"]}
    assert agents["a"]["mean_score"] == pytest.approx((2 / 3 + 0.5) / 2)
    assert agents["a"]["micro_mean_score"] == pytest.approx(2.5 / 4)
    assert agents["b"]["n_error"] == 1 and agents["b"]["error_rate"] == pytest.approx(0.5)
    assert agents["b"]["n_missing_cells"] == 1 and agents["b"]["n_tasks_attempted"] == 1
    assert res["dataset"]["n_records_read"] == 6


@pytest.mark.slow
def test_summary_reports_annotation_counts(shared_data, tmp_path, capsys):
    from hierbench.data import load_metr

    path = save_dataset(load_metr(), tmp_path / "metr.nc")
    assert main(["summary", str(path), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    raw = pd.read_csv(shared_data / "metr" / "metr_all_runs_2025-02-27_19b0311.csv.gz")
    raw = raw[raw["alias"] != "human"]
    expected = raw["fatal_error_from"].eq("usageLimits").groupby(raw["alias"]).sum()
    got = {r["agent"]: r["n_usage_limit"] for r in res["agents"]}
    assert got == expected.to_dict()
    assert res["dataset"]["annotations"] == {"usage_limit": int(expected.sum())}


@pytest.mark.slow  # a full demo: fit, bootstraps, two reports
def test_demo_and_its_report_show_the_same_bayes_pass_k(demo_fast):
    """The demo's pass^k table drew each k's posterior with seed + k and the report with the seed, so
    the terminal and the report gave two intervals for one quantity (METR Claude 3 Opus pass^1:
    [0.255, 0.295] and [0.253, 0.296]); both now use the same draws and print the same numbers.
    """
    out = demo_fast.out.split("Reliability: pass^k")[1].split("\n## ")[0]
    md = (demo_fast.folder / "report.md").read_text().split("## Reliability: pass^k")[1].split("\n## ")[0]
    rows = [[c.strip() for c in r.strip("|").split("|")] for r in md.splitlines() if r.startswith("| ") and "---" not in r]
    head, body = rows[0], rows[1:]
    col = {name: head.index(name) for name in ("agent", "k", "Bayes (same tasks)", "Bayes (same tasks) 95% lower")}
    report = {(r[col["agent"]], int(r[col["k"]])): (r[col["Bayes (same tasks)"]], r[col["Bayes (same tasks) 95% lower"]])
              for r in body}  # fmt: skip
    demo = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 6 and parts[1].isdigit():  # agent, k, tasks, [truth,] unbiased, Bayes mean, lower, upper
            demo[(parts[0], int(parts[1]))] = (parts[-3], parts[-2].strip("[,"))  # mean, [lower, upper]
    shared = set(report) & set(demo)
    assert len(shared) >= 6
    assert {key: demo[key] for key in shared} == {key: report[key] for key in shared}


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_demo_prints_sections_and_the_truth(demo_fast, capsys):
    # the run is conftest's demo_fast (shared with the browser check of its report)
    out_dir, out = demo_fast.folder, demo_fast.out
    assert demo_fast.code == 0
    # the main job uses no deprecated name of its own package
    root = str(Path(__file__).resolve().parents[1])
    assert not [str(w.message) for w in demo_fast.warnings if issubclass(w.category, DeprecationWarning)
                and w.filename.startswith(root) and "site-packages" not in w.filename]  # fmt: skip
    for i, (title, _) in enumerate(DEMO_SECTIONS, start=1):
        assert f"## {i}. {title}" in out
    data, truth = default_dataset()
    # independent numpy count of the runs that happened
    happened = np.isfinite(data.score.values) | data.error.values
    assert f"runs: {int(happened.sum())}" in out
    assert f"sd_task = {float(truth.sd_task):g}" in out
    truth_part = out.split("What the truth was")[1].split("\n## ")[0]
    for agent, eff in zip(truth.agent.values, truth.agent_effect.values, strict=True):
        line = next(x for x in truth_part.splitlines() if x.startswith(str(agent)))
        assert line.split()[1] == f"{eff:.3f}"
    # the analysis sections print intervals beside the truth and write a report with the fit
    assert "cluster bootstrap (BCa)" in out and "Bayes crossed (new task)" in out
    # every interval of the Bayesian section and of pass^k says its level and kind
    bayes = " ".join(out.split("## 5.")[1].split("\n## ")[0].split())
    assert "both methods, 95% intervals (Bayes: equal-tailed posterior)" in bayes
    assert "Bayes only, 95% equal-tailed posterior intervals" in bayes
    assert "standard deviations (95% equal-tailed posterior intervals)" in bayes
    assert "so the 95% equal-tailed interval is for these cells' true pass^k" in " ".join(
        out.split("## 6.")[1].split("\n## ")[0].split())
    assert "p max-T" in out and "simultaneous lower" in out and "tasks needed" in out
    # pass^k names the columns it has; the pairs' Bayes column says it is per pair, not adjusted
    passk = " ".join(out.split("## 6.")[1].split("\n## ")[0].split())
    assert "at least k times (`tasks`): the truth, the unbiased estimator and the crossed model's" in passk
    n_pairs = data.sizes["agent"] * (data.sizes["agent"] - 1) // 2
    pairs_text = " ".join(out.split("## 7.")[1].split("\n## ")[0].split())
    assert f"pair by pair: not adjusted for the {n_pairs} pairs" in pairs_text
    # the embedded default has task clusters: the crossed fit carries an agent x cluster effect, and says so
    assert "(its agent x cluster effect)" in pairs_text and "has no agent x cluster term" not in pairs_text
    from hierbench.io import load_dataset
    from hierbench.io import load_fit

    fit = load_fit(out_dir / "fit_crossed.nc")
    assert fit.attrs["hierbench_model"] == "crossed"
    # a fit that failed its checks says so, with the reason, on a warning line (stderr)
    assert "warning:" not in out
    if not int(fit.attrs["diag_converged"]):
        err = demo_fast.err.splitlines()
        warn = [x for x in err if x.startswith("warning: the fit did not converge: ")]
        assert warn and (
            "R-hat" in warn[0] or "ESS" in warn[0] or "diverg" in warn[0] or "BFMI" in warn[0]
        )
    html = (out_dir / "report.html").read_text()
    assert 'id="abilities"' in html and "How good is each agent? (frequentist)" in html
    report = (out_dir / "report.md").read_text()
    assert "## 4. How good is each agent? (frequentist)" in report
    assert (out_dir / "report_figures" / "abilities_forest.png").stat().st_size > 5000
    assert int(load_dataset(out_dir / "data.nc").score.notnull().sum()) == int(
        np.isfinite(data.score.values).sum()
    )
    # a second run refuses to replace the first one's files
    assert main(["demo", "--fast", "--out", str(out_dir)]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_demo_warning_filter_reads_the_category():
    """`type(w)` of a recorded warning is WarningMessage; the demo must read `w.category`."""
    import inspect
    import warnings

    from hierbench.demo import _bayes as demo

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("x", UserWarning, stacklevel=1)
    assert type(caught[0]).__name__ == "WarningMessage"
    src = inspect.getsource(demo._fit_crossed)
    assert "type(w).__name__" not in src and "w.category" in src


@pytest.mark.slow  # two fresh interpreters
def test_installed_entry_point(log, capsys, monkeypatch):
    import runpy

    exe = Path(sys.executable).parent / "hierbench"
    out = subprocess.run(
        [str(exe), "summary", str(log), *COLS, "--json"], capture_output=True, text=True, check=True
    )
    res = json.loads(out.stdout)
    assert [r["agent"] for r in res["agents"]] == ["a", "b"]
    bad = subprocess.run([str(exe), "validate", str(log)], capture_output=True, text=True)
    assert bad.returncode == 2
    assert "missing required columns" in bad.stderr and "Traceback" not in bad.stderr
    # `python -m hierbench`: its __main__ run as -m runs it, in this process (a fresh interpreter
    # running -m is test_help_is_fast's)
    capsys.readouterr()
    monkeypatch.setattr(sys, "argv", ["hierbench", "summary", str(log), *COLS, "--json"])
    with pytest.raises(SystemExit) as done:
        runpy.run_module("hierbench", run_name="__main__")
    assert done.value.code == 0
    assert json.loads(capsys.readouterr().out) == res


def test_extra_and_annotation_columns(tmp_path, capsys):
    path = tmp_path / "x.csv"
    pd.DataFrame(dict(ROWS, cost=[1, 2, 3, 4, 5, 6], hit=[1, 0, 0, 1, 0, 1])).to_csv(
        path, index=False
    )
    assert main(["validate", str(path), *COLS, "--extra", "cost", "--annotate", "hit"]) == 0
    out = capsys.readouterr().out
    assert "annotations: hit: 3" in out
    assert "per-run variables: cost" in out
    assert main(["summary", str(path), *COLS, "--annotate", "hit", "--json"]) == 0
    agents = {r["agent"]: r for r in json.loads(capsys.readouterr().out)["agents"]}
    assert (agents["a"]["n_hit"], agents["b"]["n_hit"]) == (2, 1)


# ---------------------------------------------------------------- issue 24: the CLI speaks the shell


def _metr_csv(shared_data, tmp_path):
    raw = pd.read_csv(shared_data / "metr" / "metr_all_runs_2025-02-27_19b0311.csv.gz")
    path = tmp_path / "metr.csv"
    raw.to_csv(path, index=False)
    return raw, path


METR_COLS = ["--agent", "alias", "--task", "task_id", "--run", "run_id", "--score",
             "score_binarized", "--cluster", "task_family", "--error", "fatal_error_from"]  # fmt: skip


@pytest.mark.slow
def test_metr_error_column_is_mapped_from_the_shell(shared_data, tmp_path, capsys):
    raw, path = _metr_csv(shared_data, tmp_path)
    n_limit = int(raw["fatal_error_from"].eq("usageLimits").sum())  # pandas, not the reader
    assert main(["validate", str(path), *METR_COLS]) == 2
    err = _one_line_error(capsys, "--error column 'fatal_error_from'", "--error-values")
    assert "error_values" not in err and "`" not in err.split("--error-values")[1][:40]
    for meaning, n_err in (("ok", 0), ("error", n_limit)):
        args = ["validate", str(path), *METR_COLS, "--error-values", f"usageLimits={meaning}"]
        assert main([*args, "--json"]) == 0
        rep = json.loads(capsys.readouterr().out)
        assert rep["n_error_runs"] == n_err and rep["n_records_read"] == len(raw)
    assert main(["validate", str(path), *METR_COLS, "--error-values", "nonempty", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_error_runs"] == n_limit
    assert main(["validate", str(path), *METR_COLS, "--error-values", "usageLimits"]) == 2
    _one_line_error(capsys, "--error-values must be 'nonempty' or VALUE=error / VALUE=ok")
    # the other reader options: a per-task coord and runs numbered within each cell
    args = [*METR_COLS, "--error-values", "usageLimits=ok", "--task-coord", "human_minutes"]
    assert main(["validate", str(path), *args, "--run-index", "within_cell", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert "human_minutes" in rep["task_coords"]
    assert rep["runs_per_cell"]["max"] == int(raw.groupby(["alias", "task_id"]).size().max())


def test_outputs_in_a_format_the_command_cannot_write_are_refused_first(log, tmp_path, capsys):
    assert main(["fit", str(log), *COLS, "-o", str(tmp_path / "tau.txt")]) == 2
    _one_line_error(capsys, "-o", "tau.txt", "netCDF (.nc) or zarr (.zarr)")
    assert not (tmp_path / "tau.txt").exists()
    assert main(["report", "--data", str(log), *COLS, "-o", str(tmp_path / "r.pdf")]) == 2
    _one_line_error(capsys, "-o", "r.pdf", ".html", ".md")


def _fake_fit(ds):
    """A fit-shaped tree of a dataset (no sampling): its counts and fingerprint, as fit() keeps them."""
    import xarray as xr

    from hierbench.bayes import data_hash
    from hierbench.data import to_counts

    c = to_counts(ds)
    post = xr.Dataset(
        {"mean_new_task": (("chain", "draw", "agent"), np.full((2, 20, c.sizes["agent"]), 0.5))},
        coords={"agent": c["agent"].values},
    )
    tree = xr.DataTree.from_dict(
        {"posterior": post, "constant_data": c[["n_runs", "n_success"]].astype("int32")}
    )
    tree.attrs = {"hierbench_model": "crossed", "hierbench_data_hash": data_hash(c)}
    return tree


def test_a_fit_with_another_log_is_refused_naming_what_differs(tmp_path, capsys):
    from hierbench.data import to_records
    from hierbench.io import save_fit
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=2, rng=0)
    fit = save_fit(_fake_fit(ds), tmp_path / "fit.nc")
    df = to_records(ds)
    # another log: one agent gone, one task added, one run's score flipped
    other = df[df["agent"] != "agent_02"].copy()
    other = pd.concat([other, other.iloc[:1].assign(task="new_task")])
    flip = other.index[(other["agent"] == "agent_00") & (other["task"] == "task_0003")][0]
    other.loc[flip, "score"] = 1 - other.loc[flip, "score"]
    bad = tmp_path / "other.csv"
    other.to_csv(bad, index=False)
    out = tmp_path / "r.html"
    # to_records writes `run` and `error`: read as such (unread, they are a warning on stderr)
    cols = ["--run", "run", "--error", "error"]
    assert main(["report", str(fit), "--data", str(bad), *cols, "-o", str(out), "--quiet"]) == 2
    line = _one_line_error(capsys, "FIT", "fit.nc", "--data", "other.csv", "not the same evaluation")
    assert "1 agent only in the fit (['agent_02'])" in line
    assert "1 task only in the data (['new_task'])" in line
    assert "1 agent x task cells with other success / run counts" in line
    assert "(agent_00, task_0003)" in line and not out.exists()
    # the same log in another row order is the same evaluation
    same = tmp_path / "same.csv"
    df.sample(frac=1.0, random_state=1).to_csv(same, index=False)
    from hierbench.report import check_fit_data

    check_fit_data(_fake_fit(ds), from_records(same, run="run"))


def test_a_cell_whose_scores_differ_by_a_fraction_shows_the_fraction():
    """METR's continuous `score` beside a fit of `score_binarized`: the message's example read
    "fit 0/35, data 0/35" for a cell it called different (its scores summed to 0.0004).
    """
    from hierbench.data import to_records
    from hierbench.report import FitDataMismatchError
    from hierbench.report import check_fit_data
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=2, n_tasks=5, n_runs=2, rng=0)
    df = to_records(ds)
    first = df.index[0]
    df.loc[first, "score"] += 0.0004 if df.loc[first, "score"] == 0 else -0.0004
    other = from_records(df, run="run")
    fit_y = float(ds["score"].sel(agent=df.loc[first, "agent"], task=df.loc[first, "task"]).sum())
    data_y = float(other["score"].sel(agent=df.loc[first, "agent"], task=df.loc[first, "task"]).sum())
    with pytest.raises(FitDataMismatchError) as err:
        check_fit_data(_fake_fit(ds), other)
    assert f"fit {fit_y:g}/2, data {data_y:g}/2" in str(err.value)


def test_validate_of_a_saved_fit_says_what_it_is(tmp_path, capsys):
    from hierbench.io import save_fit
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=2, n_tasks=5, n_runs=2, rng=0)
    fit = save_fit(_fake_fit(ds), tmp_path / "fit.nc")
    assert main(["validate", str(fit)]) == 2
    line = _one_line_error(capsys, "fit.nc", "is a saved fit", "hierbench report")
    assert "`ds`" not in line


def _pairs_of_report(html: str) -> pd.DataFrame:
    """The full pair table of a report's pairwise section, read back from its HTML."""
    from html_tables import read_tables

    part = html.split('id="pairwise"')[1].split("</section>")[0]
    return next(t for t in read_tables(part) if "p max-T" in t.columns).set_index("pair")


@pytest.mark.slow
def test_cli_and_report_agree_on_every_pair_and_many_agents_get_a_matrix(tmp_path, capsys):
    """The report is ``build``'s own, its sections cut to the pairwise one read here
    (``sections=``): it is computed and written as in the whole report.
    """
    from html import unescape

    from hierbench.data import to_records
    from hierbench.report import build
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=9, n_tasks=25, n_runs=1, sd_agent=1.5, rng=5)
    path = tmp_path / "log.csv"
    to_records(ds).to_csv(path, index=False)
    assert main(["compare", str(path), "--seed", "3", "--json"]) == 0
    cli = pd.DataFrame(json.loads(capsys.readouterr().out)["pairs"]).set_index("pair")
    assert len(cli) == 36
    assert main(["compare", str(path), "--seed", "3"]) == 0
    text = capsys.readouterr().out
    assert "9 agents: the pairs as a matrix" in text and "max-T single-step adjusted p < 0.05" in text
    html = build(data=ds, path=tmp_path / "r.html", rng=3, progress=False, sections=["pairwise"]).read_text()
    rep = _pairs_of_report(html)
    assert "<details><summary>All 36 pairs</summary>" in html
    assert sorted(rep.index) == sorted(cli.index)
    cols = ("mean difference", "simultaneous lower", "simultaneous upper", "p max-T",
            "MC error of p max-T", "p Holm", "shared tasks")
    for col in cols:
        np.testing.assert_allclose(rep.loc[cli.index, col], cli[col], atol=6e-4)
    differ = "differ (p max-T < 0.05)"
    assert (rep.loc[cli.index, differ].map({"yes": True, "no": False}) == cli[differ]).all()
    # the same sentence above both tables, and the matrix marks follow the same verdict
    sentence = " ".join(text.split()).split(" How:")[0]
    assert sentence in " ".join(unescape(html).split())
    section = html.split('id="pairwise"')[1].split("</section>")[0]
    n_marked = int(cli[differ].sum())
    assert len(re.findall(r"\d\*+</td>", section)) == len(re.findall(r"\d\*+(?=\s)", text)) == n_marked
    # pandas' own paired differences on the shared tasks
    per_task = to_records(ds).groupby(["agent", "task"])["score"].mean().unstack("agent")
    a, b = cli.index[0].split(" - ")
    assert cli.iloc[0]["mean difference"] == pytest.approx((per_task[a] - per_task[b]).mean())


def test_fit_stages_name_compiling_and_what_follows_sampling(capsys):
    from types import SimpleNamespace

    from hierbench.cli._fit import _FitStages

    st = _FitStages(True)
    st.start("compiling the model")
    chains = [SimpleNamespace(finished_draws=10, total_draws=20) for _ in range(2)]
    st.callback(chains)
    assert st.stage == "sampling" and st.bar is None
    for c in chains:
        c.finished_draws = 20
    st.callback(chains)
    st.close()
    err = capsys.readouterr().err
    assert "compiling the model" in err
    assert "after sampling: posterior predictive draws, task means, diagnostics" in err
    assert st.sampled_at is not None


@pytest.mark.slow  # a fast demo on a real one-agent log
def test_demo_on_a_one_agent_log_says_what_it_cannot_compute(capsys, tmp_path, shared_data):
    """tau-bench's gpt-4o airline trials: one agent, 50 tasks x 4 trials, no clusters.

    Every section prints; the ones that compare agents say why they cannot; warnings come once
    each as notes at the end, never as tracebacks; the bootstrap text does not claim clusters.
    """
    log = shared_data / "tau_bench" / "tau_bench_gpt-4o_airline_trials.csv"
    args = ["demo", "--fast", "--quiet", "--data", str(log), "--agent", "model", "--task", "task_id",
            "--run", "trial", "--score", "success", "--out", ""]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert main(args) == 0
    cap = capsys.readouterr()
    out = cap.out
    # a user's log has no truth: its section is left out (not printed empty), the rest numbered on
    titles = [t for t, _ in DEMO_SECTIONS if t != "What the truth was"]
    assert len(titles) == len(DEMO_SECTIONS) - 1 and "What the truth was" not in out
    for i, title in enumerate(titles, start=1):
        assert f"## {i}. {title}" in out
    assert "Traceback" not in out + cap.err and "sys.exit" not in cap.err
    plan = out.split("How many more tasks or runs to buy?")[1]
    # one agent: the plan is for its own interval by tasks and runs (audit D, F4; it said "not applicable")
    assert "One agent (gpt-4o): no pair to compare, so the plan is for its own mean score" in " ".join(plan.split())
    assert "resampling tasks (no" in out and "task bootstrap (BCa)" in out
    # the model line names the terms the builder kept (one agent: no agent x task term, no clusters)
    sections = out.split("## 5.")[0].split("## 3.")[1]
    assert "cluster bootstrap" not in sections and "(agent + task; no agent x task effect" in sections
    # the logit-scale SDs: none the design cannot estimate, each said with its reason (the table
    # left sd_agent out without a word)
    assert "sd_agent is not shown: one agent, so there is no spread between agents to estimate." in sections
    assert "sd_task holds the agent x task spread too: one agent" in sections
    # a user's log has no truth: the pass^k text names only the columns the table has
    passk = " ".join(out.split("## 5.")[1].split("\n## ")[0].split())
    assert "truth" not in passk and "at least k times (`tasks`): the unbiased estimator and the crossed" in passk
    notes = [x for x in cap.err.splitlines() if x.startswith("warning: section")]
    assert len(notes) == len(set(notes)) and "warning:" not in out
    # sections that do not apply to one agent are said so in their text, not warned about as failures
    assert not any(t in x for x in notes for t in ("Does A beat B", "Ranking", "How many more"))


@pytest.mark.slow  # a small fit and a report through the command line
def test_fit_and_report_of_a_one_agent_log_say_the_agent_spread_is_undefined(tmp_path, capsys, shared_data):
    """Review: `hierbench fit` + `hierbench report` of tau-bench's one model gave the agent variance
    component 0.0000 [0.0000, 0.0000]; one agent has no spread to estimate. The report's sections
    are cut to the two read here (``--sections``).
    """
    log = shared_data / "tau_bench" / "tau_bench_gpt-4o_airline_trials.csv"
    cols = ["--agent", "model", "--task", "task_id", "--run", "trial", "--score", "success"]
    fit_path, rep = tmp_path / "fit.nc", tmp_path / "r.md"
    args = ["fit", str(log), *cols, "-o", str(fit_path), "--draws", "100", "--tune", "100", "--chains", "2", "--quiet"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "no sd_agent: one agent, so there is no spread between agents to estimate" in out
    assert "crossed fit of 1 agent x 50 tasks:" in out  # not "1 agents"
    assert main(["report", str(fit_path), "--data", str(log), *cols, "-o", str(rep), "--resamples", "99", "--quiet",
                 "--sections", "data-summary,variance"]) == 0  # fmt: skip
    assert "1 agent x 50 tasks; 200 runs;" in rep.read_text()
    section = rep.read_text().split("## Variance components")[1].split("\n## ")[0]
    agent_row = next(r for r in section.splitlines() if r.startswith("| agent "))
    assert "undefined: one agent" in agent_row and "0.0000" not in agent_row
    assert any(r.startswith("| task + agent x task ") for r in section.splitlines())


def test_fit_help_states_the_package_defaults():
    """`hierbench fit --help` writes the default run's numbers out (so that --help imports no
    PyMC); they must be the ones bayes.fit uses.
    """
    from hierbench.bayes._sampler._sampling import FIT_DEFAULTS
    from hierbench.cli import build_parser

    fit_parser = build_parser()._subparsers._group_actions[0].choices["fit"]
    text = " ".join(fit_parser.format_help().split())
    assert f"reach {FIT_DEFAULTS['target_ess']}" in text
    assert f"at most {FIT_DEFAULTS['max_draws']}" in text
    assert f"(default: {FIT_DEFAULTS['tune']}, from the posterior mode)" in text


def test_fit_refuses_two_models_and_formula_options_without_a_formula(log, tmp_path, capsys):
    out = str(tmp_path / "f.nc")
    assert main(["fit", str(log), *COLS, "-o", out, "--model", "crossed", "--formula", "score ~ 1 + (1|task)"]) == 2
    assert "--model crossed and --formula name two models" in capsys.readouterr().err
    assert main(["fit", str(log), *COLS, "-o", out, "--family", "ordinal"]) == 2
    assert "give --formula too" in capsys.readouterr().err
    assert main(["fit", str(log), *COLS, "-o", out, "--formula", "score ~ 1 + (1|task)", "--levels", "1,b"]) == 2
    assert "--levels mixes numbers and words: ['1', 'b']" in capsys.readouterr().err


@pytest.mark.slow  # two tiny fits
def test_fit_with_a_formula_reads_agent_coords_and_saves_what_the_api_fits(tmp_path, capsys):
    """A log with a per-agent scaffold column: `fit --formula` reads it through --agent-coord and
    saves the same posterior as bayes.build_mixed + bayes.fit with the same seed (the API call is
    the independent route to the CLI's wiring), and the report of the saved fit with the log says
    which formula it fitted (its title: the report's sections, none of which is read, are cut to
    the data summary, by ``--sections``).
    """
    from hierbench import bayes
    from hierbench.cli import build_parser
    from hierbench.cli import load_any
    from hierbench.io import load_fit

    rng = np.random.default_rng(5)
    agents = [f"a{i}" for i in range(6)]
    scaffold = {a: ("s1" if i < 3 else "s2") for i, a in enumerate(agents)}
    p = {a: (0.35 if scaffold[a] == "s1" else 0.6) for a in agents}
    rows = [{"agent": a, "task": f"t{j:02d}", "score": float(rng.random() < p[a]), "scaffold": scaffold[a]}
            for a in agents for j in range(30)]  # fmt: skip
    path = tmp_path / "runs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    formula = "score ~ scaffold + (1|task)"
    # 100 draws: the two routes' draws are compared bit for bit, whatever their number
    args = ["fit", str(path), "--agent-coord", "scaffold", "--formula", formula, "--draws", "100",
            "--tune", "100", "--chains", "2", "--quiet", "-o", str(tmp_path / "fit.nc")]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args) == 0
        printed = capsys.readouterr().out
        saved = load_fit(tmp_path / "fit.nc")
        ds, _ = load_any(str(path), build_parser().parse_args(args))
        direct = bayes.fit(bayes.build_mixed(ds, formula), draws=100, tune=100, chains=2, rng=0, progress=False)
    assert "formula fit of 6 agents x 30 tasks" in printed
    for name in direct.posterior.data_vars:
        np.testing.assert_array_equal(saved.posterior[name].values, direct.posterior[name].values)
    report = tmp_path / "r.md"
    assert main(["report", str(tmp_path / "fit.nc"), "--data", str(path), "--agent-coord", "scaffold",
                 "--resamples", "199", "-o", str(report), "--sections", "data-summary"]) == 0  # fmt: skip
    assert report.read_text().splitlines()[0] == f"# hierbench report: mixed model ({formula}, binomial)"


# ---------------------------------------------------------------- one channel for warnings


def _log_with_a_reading_warning(tmp_path) -> Path:
    """A binary log whose one task has no cluster label in one record: reading it warns (InconsistentAttributeWarning)."""
    from hierbench.data import to_records
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=2, n_tasks=8, n_runs=2, rng=0)
    df = to_records(ds)
    df["repo"] = np.where(df["task"] < "task_0004", "r1", "r2")
    df.loc[df.index[0], "repo"] = None  # task_0000: no repo in one record, r1 in the others
    path = tmp_path / "runs.csv"
    df.to_csv(path, index=False)
    return path


READ_WARNING = "warning: InconsistentAttributeWarning: --cluster column 'repo' in "


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_every_warning_goes_to_stderr_and_stdout_holds_only_results(tmp_path, capsys):
    """`fit` printed its convergence warning on stdout (and `report`, `summary` theirs) while other
    warnings went to stderr: piped results carried warnings along. Every command's warnings are
    `warning:` lines on stderr, the results alone on stdout (--json: stdout is one JSON document).
    """
    from hierbench.io import load_fit

    path = _log_with_a_reading_warning(tmp_path)
    cols = ["--run", "run", "--error", "error", "--cluster", "repo"]
    commands = (["summary"], ["validate"], ["summary", "--json"], ["validate", "--json"])
    for cmd in (*commands, ["compare", "--json"]):
        assert main([cmd[0], str(path), *cols, *cmd[1:]]) == 0
        cap = capsys.readouterr()
        assert cap.err.startswith(READ_WARNING), (cmd, cap.err)
        assert "warning:" not in cap.out, (cmd, cap.out)
        if "--json" in cmd:
            json.loads(cap.out)  # nothing but the document
    # a fit too short to converge (30 draws): its verdict, with the reasons, is a warning on stderr; under
    # --strict it exits 1 and is saved all the same (without --strict such a fit exits 0:
    # test_cli_fit_remedies.py's 30-draw fit)
    fit = tmp_path / "fit.nc"
    short = ["--draws", "30", "--tune", "30", "--chains", "2", "--quiet", "--strict"]
    args = ["fit", str(path), *cols, *short, "-o", str(fit)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args) == 1
    cap = capsys.readouterr()
    assert not int(load_fit(fit).attrs["diag_converged"])  # the premise: it did not converge
    assert "saved to" in cap.out and "NOT converged" in cap.out  # the result states the verdict
    assert not [x for x in cap.out.splitlines() if x.startswith("warning")], cap.out
    err = cap.err.splitlines()
    assert err[0].startswith(READ_WARNING)
    said = [x for x in err if x.startswith("warning: the fit did not converge: ")]
    assert len(said) == 1 and "R-hat" in said[0], err
    # the command's own channels are read, not the sections (each one's warnings go into the report):
    # they are cut to the one on convergence (``--sections``)
    assert main(["report", str(fit), "--quiet", "-o", str(tmp_path / "r.md"), "--sections", "convergence"]) == 0
    cap = capsys.readouterr()
    assert cap.out.startswith("report written to") and len(cap.out.splitlines()) == 1
    assert cap.err.startswith("warning: the fit did not converge: ")


# ---------------------------------------------------------------- clusters by the column the user named


def test_clusters_are_called_by_the_column_given_to_cluster(tmp_path, capsys):
    """`--cluster task_family` is stored as the coord `cluster`; compare and the report said
    "clusters of `cluster`". They say the column the user named, and so does --json.
    """
    from hierbench.data import to_records
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=2, rng=1)
    df = to_records(ds)
    df["task_family"] = "fam_" + (df["task"].str[-2:].astype(int) % 4).astype(str)
    path = tmp_path / "runs.csv"
    df.to_csv(path, index=False)
    args = ["--run", "run", "--cluster", "task_family", "--seed", "1"]
    assert main(["compare", str(path), *args]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "over the 4 task clusters of `task_family`: fam_0, fam_1, fam_2, fam_3" in text
    assert "`cluster`" not in text
    assert main(["compare", str(path), *args, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert (res["unit"], res["cluster_column"]) == ("clusters", "task_family")
    out = tmp_path / "r.md"
    args += ["--resamples", "99", "--quiet"]
    assert main(["report", "--data", str(path), *args, "-o", str(out)]) == 0
    md = out.read_text()
    assert "tasks in 4 clusters (`task_family`)" in md
    assert "task clusters of `task_family`" in md and "`cluster`" not in md


# ---------------------------------------------------------------- the bootstrap interval from the shell


def test_a_degenerate_bca_interval_names_the_flag_that_avoids_it(tmp_path, capsys):
    """An agent that solved no task: every resample mean is 0, BCa is undefined. The warning said
    "Use method='percentile'", which a CLI user cannot set; it names --bootstrap-method, which
    `report` (and `demo`) take, and with it the agent's interval is the percentile one, [0, 0].
    """
    import inspect

    from html_tables import read_tables

    from hierbench.cli import build_parser
    from hierbench.data import to_records
    from hierbench.demo import run_demo
    from hierbench.report import build
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=2, rng=2)
    df = to_records(ds)
    df.loc[df["agent"] == "agent_02", "score"] = 0.0  # never solved a task
    path = tmp_path / "runs.csv"
    df.to_csv(path, index=False)
    common = ["--data", str(path), "--run", "run", "--resamples", "99", "--quiet"]
    bca, pct = tmp_path / "bca.html", tmp_path / "pct.html"
    assert main(["report", *common, "-o", str(bca)]) == 0
    warned = bca.read_text().split('id="warnings"')[1]
    assert "DegenerateBootstrapWarning: BCa is undefined for 1 of 3" in warned
    # an agent at 0 on every task: the percentile interval is [0, 0] (below), so the advice is the bound's (audit W)
    assert "pass_hat_k(data, 1) gives a bound that holds" in warned and "use the percentile" not in warned.lower()
    assert main(["report", *common, "--bootstrap-method", "percentile", "-o", str(pct)]) == 0
    html = pct.read_text()
    assert "DegenerateBootstrapWarning" not in html
    part = html.split('id="abilities"')[1].split("</section>")[0]
    col = "task bootstrap (percentile, 95%)"
    table = next(t for t in read_tables(part) if f"{col} lower" in t.columns)
    row = table.set_index("agent").loc["agent_02"]
    assert (float(row[f"{col} lower"]), float(row[f"{col} upper"])) == (0.0, 0.0)
    # the default the help states is the one report.build and run_demo use
    for cmd, fn in (("report", build), ("demo", run_demo)):
        sub = build_parser()._subparsers._group_actions[0].choices[cmd]
        assert "bca (default)" in " ".join(sub.format_help().split())
        assert inspect.signature(fn).parameters["bootstrap_method"].default == "bca"


# ---------------------------------------------------------------- graded scores from the shell

WINE_COLS = ["--agent", "judge", "--task", "bottle", "--score", "rating",
             "--task-coord", "temp", "--task-coord", "contact"]  # fmt: skip
WINE_FORMULA = "score ~ temp + contact + (1|agent)"


def test_graded_scores_are_read_on_their_levels_and_refused_off_them(shared_data, capsys):
    """The wine ratings (1-5): the reader refused them (scores in [0, 1]) before `fit --levels`
    was ever read. With --levels each grade is read as (grade - 1) / 4 and the ordinal design
    fits the grades; grades off the scale are refused naming the file, flag, rule, rows, values.
    """
    from hierbench.cli import build_parser
    from hierbench.cli import load_any
    from hierbench.data import model_design

    wine = shared_data / "ordinal" / "wine.csv"
    raw = pd.read_csv(wine)
    assert main(["validate", str(wine), *WINE_COLS]) == 2
    _one_line_error(capsys, "wine.csv", "--score column 'rating'", "must lie in [0, 1]",
                    "give their scale as --levels")  # fmt: skip
    assert main(["validate", str(wine), *WINE_COLS, "--levels", "1,2,3,4"]) == 2
    line = _one_line_error(capsys, "wine.csv", "--score column 'rating'",
                           "grades outside --levels 1, 2, 3, 4 (each grade must be one of them)")  # fmt: skip
    fives = raw.index[raw["rating"] == 5].tolist()  # pandas, not the reader
    assert f"rows {fives} hold {[5] * len(fives)}" in line
    assert main(["validate", str(wine), *WINE_COLS, "--levels", "5,4,3,2,1"]) == 2
    _one_line_error(capsys, "--levels must list at least 2 increasing, finite grade values")
    assert main(["validate", str(wine), *WINE_COLS, "--levels", "1,2,3,4,5"]) == 0
    assert "scores: mixed, grades 1, 2, 3, 4, 5 read as (grade - 1) / 4" in capsys.readouterr().out
    graded = [*WINE_COLS, "--levels", "1,2,3,4,5", "--formula", WINE_FORMULA]
    args = build_parser().parse_args(["fit", str(wine), *graded, "-o", "f.nc"])
    ds, _ = load_any(str(wine), args)
    got = ds.score.isel(run=0).to_series()
    want = raw.assign(agent=raw.judge.astype(str), task=raw.bottle.astype(str))
    want = ((want.set_index(["agent", "task"])["rating"] - 1) / 4).reindex(got.index)
    np.testing.assert_array_equal(got.values, want.values)
    d = model_design(WINE_FORMULA, ds, levels=[1, 2, 3, 4, 5])
    assert d.family == "ordinal" and d.categories.tolist() == [1, 2, 3, 4, 5]
    assert d.grade_counts.sum(0).tolist() == raw["rating"].value_counts().sort_index().tolist()


@pytest.mark.slow  # one small ordinal fit (its compiled build is cached after the first run)
def test_fit_of_graded_scores_from_the_shell_is_the_api_fit_of_the_grades(
    shared_data, tmp_path, capsys
):
    """`fit --levels 1,2,3,4,5 --formula 'score ~ ...'` on the wine ratings saves the posterior of
    the library's documented route (the grades as a per-run variable, fitted with family='ordinal'),
    same seed: the same grade counts fitted the same way.
    """
    from hierbench import bayes
    from hierbench.io import load_fit

    wine = shared_data / "ordinal" / "wine.csv"
    out = tmp_path / "fit.nc"
    run = ["--draws", "100", "--tune", "100", "--chains", "2", "--seed", "3", "--quiet"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graded = [*WINE_COLS, "--levels", "1,2,3,4,5", "--formula", WINE_FORMULA]
        assert main(["fit", str(wine), *graded, *run, "-o", str(out)]) == 0
        df = pd.read_csv(wine).assign(grade01=lambda d: (d["rating"] - 1) / 4)
        ds = from_records(df, agent="judge", task="bottle", score="grade01", extra=["rating"],
                          task_coords=["temp", "contact"])  # fmt: skip
        model = bayes.build_mixed(ds, "rating ~ temp + contact + (1|agent)", family="ordinal")
        direct = bayes.fit(model, draws=100, tune=100, chains=2, rng=3, progress=False)
    assert "formula fit of 9 agents x 8 tasks" in capsys.readouterr().out
    saved = load_fit(out)
    assert json.loads(saved.attrs["hierbench_spec"])["options"]["levels"] == [1, 2, 3, 4, 5]
    for name in ("beta", "thresholds"):
        np.testing.assert_array_equal(saved.posterior[name].values, direct.posterior[name].values)


VERBAGG_COLS = ["--agent", "id", "--task", "item", "--score", "resp"]


def _verbagg(shared_data, tmp_path, n_persons: int):
    """VerbAgg's first persons (their 24 items each), as the file writes them, in a temp file."""
    raw = pd.read_csv(shared_data / "lme4" / "verbagg.csv", dtype=str, keep_default_na=False)
    sub = raw[raw["id"].isin(list(dict.fromkeys(raw["id"]))[:n_persons])]
    path = tmp_path / "verbagg.csv"
    sub.to_csv(path, index=False)
    return sub, path


def test_grades_written_as_words_are_read_from_the_shell_and_refused_off_their_labels(shared_data, tmp_path, capsys):
    """VerbAgg's `resp` (no / perhaps / yes): a reader's audit had to recode it to 0/1/2 in a temp
    file. --levels no,perhaps,yes reads the words as their places 0, 0.5, 1; anything not exactly
    a label is refused in one line naming the file, the flag, the rule, the rows (pandas') and values.
    """
    from hierbench.cli import build_parser
    from hierbench.cli import load_any

    sub, path = _verbagg(shared_data, tmp_path, 5)
    assert main(["validate", str(path), *VERBAGG_COLS, "--levels", "no,perhaps,yes"]) == 0
    assert "scores: mixed, grades no, perhaps, yes read as 0, 0.5, 1 respectively" in capsys.readouterr().out
    args = build_parser().parse_args(["validate", str(path), *VERBAGG_COLS, "--levels", "no,perhaps,yes"])
    ds, _ = load_any(str(path), args)
    got = ds.score.isel(run=0).to_series()
    want = sub.set_index(["id", "item"])["resp"].map({"no": 0.0, "perhaps": 0.5, "yes": 1.0})
    np.testing.assert_array_equal(got.values, want.reindex(got.index).values)
    assert main(["validate", str(path), *VERBAGG_COLS, "--levels", "no,perhaps,Yes"]) == 2
    line = _one_line_error(capsys, "verbagg.csv", "--score column 'resp'", "not labels of --levels ['no', 'perhaps', 'Yes']",
                           "'yes' is not 'Yes'")  # fmt: skip
    yes = np.flatnonzero(sub["resp"].to_numpy() == "yes").tolist()  # pandas, not the reader
    assert f"rows {yes[:10]}"[:-1] in line and f"hold 'yes' ({len(yes)} rows)" in line
    assert main(["validate", str(path), *VERBAGG_COLS, "--levels", "no, perhaps, yes"]) == 2
    _one_line_error(capsys, "--levels labels [' perhaps', ' yes'] are empty or have surrounding spaces",
                    "e.g. no,perhaps,yes")  # fmt: skip
    assert main(["validate", str(path), *VERBAGG_COLS, "--levels", "0,perhaps,yes"]) == 2
    _one_line_error(capsys, "--levels mixes numbers and words")
    assert main(["validate", str(path), *VERBAGG_COLS]) == 2
    _one_line_error(capsys, "must be numeric", "grades written as words: give their labels in order as --levels")
    # a saved dataset keeps its labels: `fit --formula --levels` must name those, in that order
    save_dataset(ds, tmp_path / "ds.nc")
    fit = ["fit", str(tmp_path / "ds.nc"), "--formula", "score ~ 1 + (1|task)", "-o", str(tmp_path / "f.nc")]
    assert main([*fit, "--levels", "yes,perhaps,no"]) == 2
    _one_line_error(capsys, "--levels yes,perhaps,no: the labels the log's score was read with are ['no', 'perhaps', 'yes']")


def test_fit_levels_as_words_records_the_words_as_the_python_api_does(shared_data, tmp_path):
    """`fit --levels no,perhaps,yes --formula ...` built its model with levels [0.0, 1.0, 2.0], so the
    saved fit's options.levels were numbers where `build_mixed(ds, f, levels=[words])` records the
    words: the model the CLI builds now records the labels as typed (no sampling here).
    """
    from hierbench.cli import build_parser
    from hierbench.cli import load_any
    from hierbench.cli._fit import _build

    _, path = _verbagg(shared_data, tmp_path, 4)
    args = build_parser().parse_args(["fit", str(path), *VERBAGG_COLS, "--levels", "no,perhaps,yes",
                                      "--formula", "score ~ (1|agent) + (1|task)", "-o", "f.nc"])  # fmt: skip
    ds, _ = load_any(str(path), args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = _build(args, ds)
    assert model.hierbench["options"]["levels"] == ["no", "perhaps", "yes"]  # as typed on the command line
    assert list(model.coords["threshold"]) == ["no|perhaps", "perhaps|yes"]


@pytest.mark.slow  # two small ordinal fits and a report
def test_a_fit_of_labelled_grades_is_the_fit_of_their_numbers_and_its_report_names_them(shared_data, tmp_path, capsys):
    """VerbAgg's first 10 persons: `fit --levels no,perhaps,yes` draws bit for bit what the fit of
    the same log recoded to 0/1/2 by pandas (`--levels 0,1,2`) draws, same seed; the saved fit
    keeps the labels, so `report FIT` alone names the grades, and its per-grade counts are
    pandas' crosstab of the raw file. The report's sections are cut to the predictive check read
    here (``--sections``).
    """
    from hierbench.io import load_fit

    sub, path = _verbagg(shared_data, tmp_path, 10)
    coded = tmp_path / "coded.csv"
    sub.assign(resp=sub["resp"].map({"no": 0, "perhaps": 1, "yes": 2})).to_csv(coded, index=False)
    run = ["--formula", "score ~ (1|agent) + (1|task)", "--draws", "100", "--tune", "100", "--chains", "2",
           "--seed", "5", "--quiet", "--keep-predictive"]  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", str(path), *VERBAGG_COLS, "--levels", "no,perhaps,yes", *run, "-o", str(tmp_path / "w.nc")]) == 0
        assert main(["fit", str(coded), *VERBAGG_COLS, "--levels", "0,1,2", *run, "-o", str(tmp_path / "n.nc")]) == 0
        assert main(["report", str(tmp_path / "w.nc"), "-o", str(tmp_path / "r.md"), "--quiet", "--sections", "ppc"]) == 0
    capsys.readouterr()
    words, nums = load_fit(tmp_path / "w.nc"), load_fit(tmp_path / "n.nc")
    assert words.attrs["score_labels"] == '["no", "perhaps", "yes"]' and "score_labels" not in nums.attrs
    for name in words.posterior.data_vars:
        np.testing.assert_array_equal(words.posterior[name].values, nums.posterior[name].values)
    md = (tmp_path / "r.md").read_text()
    sec = md.split("## Posterior predictive checks")[1].split("\n## ")[0]
    assert "the x axis is the grade (0 = no, 1 = perhaps, 2 = yes)" in sec
    rows = {}
    for line in sec.split("runs per grade")[1].splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 3 and cells[1] in ("no", "perhaps", "yes"):
            rows[(cells[0], cells[1])] = int(cells[2])
    want = pd.crosstab(sub["id"], sub["resp"])  # by hand from the file
    assert rows == {(a, g): int(want.loc[a, g]) for a in want.index for g in want.columns}


# ---------------------------------------------------------------- reader flags the input does not use

# Every reader flag of the parser (_add_columns), with a value other than its default.
TABLE_FLAGS = [
    ["--agent", "model"], ["--task", "item"], ["--run", "r"], ["--score", "reward"],
    ["--error", "crashed"], ["--error-values", "timeout=error"], ["--tag", "kind"],
    ["--cluster", "repo"], ["--extra", "tokens"], ["--annotate", "hit"], ["--task-coord", "temp"],
    ["--agent-coord", "org"], ["--single-agent", "solo"], ["--run-index", "label"],
    ["--duplicates", "drop"], ["--levels", "1,2,3"], ["--encoding", "latin-1"],
]  # fmt: skip


def test_every_reader_flag_is_listed_with_a_value_other_than_its_default():
    from hierbench.cli._reading import _reader_defaults

    # the lists below stay complete as flags are added: the parser's reader flags are
    # these table flags, --errors and --scorer
    flags = {f[0] for f in TABLE_FLAGS} | {"--errors", "--scorer"}
    assert {"--" + d.replace("_", "-") for d in _reader_defaults()} == flags
    assert all(_reader_defaults()[f[0][2:].replace("-", "_")] != f[1] for f in TABLE_FLAGS)


@pytest.fixture
def saved(log, tmp_path):
    """The ROWS log read with COLS and saved as a netCDF eval dataset."""
    ds = from_records(pd.read_csv(log), agent="model", task="item", score="reward",
                      error="crashed", cluster="repo")  # fmt: skip
    return save_dataset(ds, tmp_path / "runs.nc")


@pytest.mark.parametrize("flag", [*TABLE_FLAGS, ["--errors", "exclude"], ["--scorer", "match"]],
                         ids=lambda f: f[0])  # fmt: skip
def test_a_saved_dataset_refuses_every_reader_flag(saved, flag, capsys):
    # a .nc carries what it was read with: no reader flag applies, so each is refused by name
    assert main(["summary", str(saved), *flag]) == 2
    _one_line_error(capsys, "hierbench summary: error:", f"LOG {str(saved)!r}", "saved eval dataset (.nc)",
                    f"does not use {flag[0]} {flag[1]}", "give the original log")  # fmt: skip


def test_a_saved_dataset_names_every_unused_flag_and_takes_defaults_as_not_given(saved, capsys):
    assert main(["validate", str(saved), "--extra", "a", "--extra", "b", "--agent", "model"]) == 2
    _one_line_error(capsys, "does not use --agent model, --extra a, --extra b")
    # a flag typed with its default value asks for what the reader does unasked: not given;
    # --errors equal to the policy the dataset was saved with asks for what it holds
    assert main(["validate", str(saved), "--errors", "fail", "--agent", "agent"]) == 0
    assert "error runs: 1 (policy errors='fail')" in capsys.readouterr().out


def test_a_saved_dataset_refuses_an_errors_policy_other_than_its_own(log, tmp_path, capsys):
    # saved with errors='exclude', read with --errors fail: the CLI used to take the typed
    # default as not given and go on with 'exclude' (the crashed run dropped, not a failure)
    ds = from_records(pd.read_csv(log), agent="model", task="item", score="reward",
                      error="crashed", cluster="repo", errors="exclude")  # fmt: skip
    path = save_dataset(ds, tmp_path / "excluded.nc")
    assert main(["validate", str(path), "--errors", "fail"]) == 2
    _one_line_error(capsys, f"LOG {str(path)!r}", "saved eval dataset (.nc)", "does not use --errors fail",
                    "error policy it was read with (errors='exclude')", "give the original log")  # fmt: skip
    assert main(["validate", str(path), "--errors", "exclude"]) == 0
    assert "policy errors='exclude'" in capsys.readouterr().out


@pytest.mark.parametrize("flag", [*TABLE_FLAGS], ids=lambda f: f[0])
def test_inspect_logs_refuse_the_table_flags(tmp_path, flag, capsys):
    # refused before the log is read: an empty file named .eval is an Inspect log to the CLI
    path = tmp_path / "a.eval"
    path.write_bytes(b"")
    assert main(["summary", str(path), *flag, "--scorer", "match", "--errors", "exclude"]) == 2
    line = _one_line_error(capsys, f"LOG {str(path)!r}", "Inspect logs", f"does not use {flag[0]} {flag[1]}",
                           "only --scorer", "and --errors apply")  # fmt: skip
    assert "--scorer match" not in line and "--errors exclude" not in line  # both are the reader's


def test_several_inspect_logs_and_a_folder_of_them_refuse_the_table_flags(tmp_path, capsys):
    a, b = tmp_path / "logs" / "a.eval", tmp_path / "b.eval"
    a.parent.mkdir()
    a.write_bytes(b"")
    b.write_bytes(b"")
    assert main(["compare", str(a), str(b), "--task", "item"]) == 2
    _one_line_error(capsys, f"LOG '{a}, {b}'", "Inspect logs", "does not use --task item")
    assert main(["validate", str(a.parent), "--levels", "1,2"]) == 2
    _one_line_error(capsys, f"LOG {str(a.parent)!r}", "Inspect logs", "does not use --levels 1,2")


def test_every_command_reading_a_table_refuses_scorer(log, tmp_path, capsys):
    out = tmp_path / "out"
    for cmd in (["validate", str(log)], ["summary", str(log)], ["compare", str(log)],
                ["fit", str(log), "-o", f"{out}.nc"], ["report", "--data", str(log), "-o", f"{out}.html"],
                ["demo", "--data", str(log), "--out", str(out)]):  # fmt: skip
        assert main([*cmd, *COLS, "--scorer", "match"]) == 2, cmd
        _one_line_error(capsys, f"hierbench {cmd[0]}: error: LOG {str(log)!r}", "a table (CSV, TSV, JSONL or Parquet)",
                        "does not use --scorer match", "--scorer reads Inspect logs", "--score")  # fmt: skip
    assert not list(tmp_path.glob("out*"))  # refused before anything was written


def test_a_table_reads_the_grade_scale_and_error_policy_it_is_given(tmp_path, capsys):
    # graded scores 1-3 on the scale --levels gives, errors excluded: the flags the table reader uses
    path = tmp_path / "graded.csv"
    pd.DataFrame({"who": ["a", "a", "a", "b"], "item": ["t1", "t2", "t2", "t1"], "grade": [1, 3, 2, 3],
                  "bad": [0, 0, 1, 0]}).to_csv(path, index=False)  # fmt: skip
    cols = ["--agent", "who", "--task", "item", "--score", "grade", "--error", "bad"]
    assert main(["validate", str(path), *cols, "--levels", "1,2,3", "--errors", "exclude", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["n_records_read"] == 4 and rep["n_records_kept"] == 3  # the error run not kept
    assert rep["score_levels"] == [1, 2, 3]


def test_fit_reads_levels_as_its_formula_scale_whatever_the_log(saved):
    from hierbench.cli import build_parser
    from hierbench.cli import load_any

    # `fit --formula --levels` gives the model its grade scale (build_mixed): not a reader flag
    # there, so a .nc is read; without --formula _build refuses --levels (test above)
    args = build_parser().parse_args(["fit", str(saved), "--formula", "score ~ (1|agent)",
                                      "--levels", "0,1", "-o", "f.nc"])  # fmt: skip
    ds, _ = load_any(str(saved), args)
    assert ds.sizes["agent"] == 2


def test_report_and_demo_without_data_refuse_reader_flags(tmp_path, capsys):
    # no --data: no log for the flags to read, so they are refused rather than dropped
    fit = tmp_path / "fit.nc"
    fit.write_bytes(b"")  # refused before it is read
    assert main(["report", str(fit), "--agent", "model", "--errors", "exclude", "-o", str(tmp_path / "r.html")]) == 2
    _one_line_error(capsys, "hierbench report: error: --agent model, --errors exclude:", "no --data was given",
                    "a saved fit carries the data it was fitted to")  # fmt: skip
    assert main(["demo", "--levels", "1,2,3", "--out", str(tmp_path / "d")]) == 2
    _one_line_error(capsys, "hierbench demo: error: --levels 1,2,3:", "no --data was given", "embedded evaluation")
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "d").exists()


def test_demo_names_the_agents_whose_bootstrap_mean_few_tasks_carry(rare_and_common):
    """The demo's note under its bootstrap table names the flagged agent, not the other, with the advice."""
    from hierbench.demo._bootstrap import _few_note
    from hierbench.freq import bootstrap_ci

    ds = rare_and_common
    note = " ".join(_few_note(bootstrap_ci(ds, n_resamples=99, rng=0)).split())
    assert note.startswith("Few tasks carry the mean of rare: a resampling interval covers less than its level there")
    assert "common" not in note and "pass_hat_k(data, 1) gives a bound that holds." in note


def test_fit_refuses_partial_credit_for_the_binomial_model_in_the_shells_words(tmp_path, capsys):
    """METR's continuous scores: `fit` (the crossed model by default) was refused with "use
    hierbench.bayes.build_mixed(data)", a Python call; the shell's model for them is --formula.
    A graded log saved as a dataset is pointed to the ordinal model with its own grades.
    """
    path = tmp_path / "log.csv"
    scores = [1.0, 0.0, 0.25, 1.0, 0.0, 0.5, 1.0, 0.0]  # 2 of 8 not 0 or 1
    pd.DataFrame({"agent": list("aabbccdd"), "task": ["t1", "t2"] * 4, "score": scores}).to_csv(path, index=False)
    assert main(["fit", str(path), "-o", str(tmp_path / "f.nc"), "--quiet"]) == 2
    _one_line_error(capsys, "--model crossed (the default) fits a binomial likelihood", "2 of the 8 scores", "partial credit, e.g. (agent, task, run, score) [('b', 't1', '0', 0.25), ('c', 't2', '0', 0.5)]",
                    "fit --formula 'score ~ (1|agent) + (1|task)' with --family fractional (or auto)")  # fmt: skip
    rows = [{"agent": a, "task": f"t{t}", "score": ["no", "perhaps", "yes"][(i + t) % 3]}
            for i, a in enumerate("abc") for t in range(3)]  # fmt: skip
    save_dataset(from_records(pd.DataFrame(rows), score_levels=["no", "perhaps", "yes"]), tmp_path / "g.nc")
    assert main(["fit", str(tmp_path / "g.nc"), "--model", "beta_binomial", "-o", str(tmp_path / "f.nc")]) == 2
    _one_line_error(capsys, "--model beta_binomial fits a binomial likelihood", "--levels no,perhaps,yes --formula 'score ~ (1|agent) + (1|task)'")
    assert not (tmp_path / "f.nc").exists()


def test_compare_names_the_agents_the_log_itself_marks(tmp_path, capsys):
    """SWE-bench bash-only with --annotate flag_per_instance_disagrees_with_reported: the file flags
    every run of Claude 3.7 Sonnet (10.2% here, 52.8% reported); `compare` ranked its pairs like any
    other's and said nothing. It now names the agent (an annotation on at least half its runs).
    """
    rows = [{"agent": a, "task": f"t{t}", "score": float((t + i) % 2), "disputed": a == "odd one"}
            for i, a in enumerate(["good", "odd one", "fine"]) for t in range(6)]  # fmt: skip
    path = tmp_path / "log.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    assert main(["compare", str(path), "--annotate", "disputed", "--quiet"]) == 0
    line = next(x for x in capsys.readouterr().err.splitlines() if x.startswith("warning: the log marks agents"))
    assert line == ("warning: the log marks agents: the per-run annotation disputed marks at least half the runs of: "
                    "odd one (6 of 6 runs): what it marks bears on every number of these agents")  # fmt: skip


def test_summary_of_a_saved_log_names_the_agents_its_loader_flagged(tmp_path, capsys):
    """A saved SWE-bench bash-only dataset carries the loader's attrs["flagged_agents"] (Claude 3.7
    Sonnet's 500 runs disagree with the leaderboard); `summary LOG.nc` said nothing of it (the report
    and `compare` did). The agent and count below are the ones written into the attrs by hand.
    """
    rows = [{"agent": a, "task": f"t{t}", "score": float((t + i) % 2)} for i, a in enumerate("abc") for t in range(4)]
    ds = from_records(pd.DataFrame(rows))
    ds.attrs["flagged_agents"] = json.dumps({"b": 4})
    path = save_dataset(ds, tmp_path / "flagged.nc")
    assert main(["summary", str(path)]) == 0
    err = capsys.readouterr().err
    assert "warning: the log marks agents: the data's own source flags the records of: b (4 runs)" in err
    assert main(["summary", str(path), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)["warnings"]
    assert [w for w in said if "flags the records of: b (4 runs)" in w]
    plain = save_dataset(from_records(pd.DataFrame(rows)), tmp_path / "plain.nc")
    assert main(["summary", str(plain)]) == 0
    assert "marks agents" not in capsys.readouterr().err  # nothing flagged: nothing said


def test_validate_says_why_a_log_with_equal_runs_per_cell_is_unbalanced(tmp_path, capsys):
    """Every run cell held 2 runs and the line read "min 2, median 2, max 2 (unbalanced)": the
    imbalance is the cells never run (here 1 of 4), and the line now says so.
    """
    rows = [{"agent": a, "task": t, "run": r, "score": 1.0} for a, t in [("a", "x"), ("a", "y"), ("b", "x")] for r in range(2)]
    path = tmp_path / "log.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    assert main(["validate", str(path), "--run", "run"]) == 0
    assert "runs per cell: min 2, median 2, max 2    (unbalanced: 1 cell never run)" in capsys.readouterr().out


def test_compare_on_one_task_is_refused_in_the_commands_words(tmp_path, capsys):
    """Three agents x one task x 5 runs: the refusal named `scheme='tasks'` and `scheme='runs'`,
    options no flag of `compare` sets; it now says what the command needs, naming the file and task.
    """
    path = tmp_path / "one.csv"
    pd.DataFrame({"agent": list("aabbcc"), "task": "only", "score": [1.0, 0.0] * 3}).to_csv(path, index=False)
    assert main(["compare", str(path)]) == 2
    line = _one_line_error(capsys, "compare needs at least 2 tasks", f"{str(path)!r} holds 1 ('only')")
    assert "scheme" not in line


def test_fit_refuses_sampler_flags_before_reading_the_log(tmp_path, capsys):
    """`fit --draws 0` printed the model's description (the log read, the model built) before the
    refusal; the flags are checked first now, so a log that does not even exist is not reached.
    """
    for flag, value, low in (("--draws", "0", 1), ("--tune", "-1", 0), ("--chains", "0", 1)):
        assert main(["fit", str(tmp_path / "no such log.csv"), "-o", str(tmp_path / "f.nc"), flag, value]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert f"{flag} must be an integer >= {low}; got {value}" in captured.err


def test_fit_takes_two_word_grades_as_binary_scores_for_the_crossed_model(shared_data, tmp_path, monkeypatch):
    """VerbAgg's binary `r2` is written N / Y: reading it needs --levels N,Y, and `fit` then refused
    ("--levels describe a --formula model"), though N, Y are read as 0, 1, the crossed model's scores.
    Two grades now pass to the named model (its builder stubbed: what reaches it is checked); three
    still need --formula.
    """
    from hierbench import bayes
    from hierbench.cli import build_parser
    from hierbench.cli import load_any
    from hierbench.cli._fit import _build

    monkeypatch.setattr(bayes, "build_crossed", lambda data: {"model": "crossed", "scores": data["score"]})

    sub, path = _verbagg(shared_data, tmp_path, 3)
    args = build_parser().parse_args(["fit", str(path), "--agent", "id", "--task", "item", "--score", "r2",
                                      "--levels", "N,Y", "-o", "f.nc"])  # fmt: skip
    ds, _ = load_any(str(path), args)
    model = _build(args, ds)
    assert args.model == "crossed" and model["model"] == "crossed"
    got = model["scores"].isel(run=0).to_series()
    want = sub.set_index(["id", "item"])["r2"].map({"N": 0.0, "Y": 1.0})  # pandas, not the reader
    np.testing.assert_array_equal(got.values, want.reindex(got.index).values)
    three = build_parser().parse_args(["fit", str(path), *VERBAGG_COLS, "--levels", "no,perhaps,yes", "-o", "f.nc"])
    ds3, _ = load_any(str(path), three)
    with pytest.raises(Exception, match=r"--levels \(beyond two grades, read as 0 and 1\) describe a --formula"):
        _build(three, ds3)
