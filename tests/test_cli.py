"""The hierbench CLI: validate, summary, demo; expected numbers by hand from tiny logs."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from hierbench.cli import DEMO_SECTIONS, main
from hierbench.data import from_records
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
    assert "agents: 2    tasks: 2    runs: 6    scores: continuous" in out
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
    rows = dict(ROWS, repo=["r1", "r9", "r2", "r1", "r1", "r1"])
    path = tmp_path / "w.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    assert main(["validate", str(path), *COLS]) == 0
    out = capsys.readouterr().out
    assert "inconsistent: task cluster differs between runs of 1 (first value kept)" in out
    assert (
        "warning: InconsistentAttributeWarning: task attribute 'repo' differs between runs of 1 tasks ['t1']"
        in out
    )


def test_invalid_input_exits_nonzero_with_the_message(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    pd.DataFrame(dict(ROWS, reward=[1.0, 2.0, 0.5, 1.0, 0.0, 1.0])).to_csv(path, index=False)
    assert main(["validate", str(path), *COLS]) == 1
    err = capsys.readouterr().err
    assert (
        "hierbench validate: invalid input: `score` column 'reward' must lie in [0, 1]; rows [1] hold [2.0]"
        in err
    )
    assert main(["summary", str(tmp_path / "none.csv")]) == 1
    assert "invalid input: `obj`: no such file" in capsys.readouterr().err
    assert main(["validate", str(path)]) == 1
    assert (
        "missing required columns: `task`='task', `score`='score', `agent`='agent'"
        in capsys.readouterr().err
    )


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


def test_demo_prints_sections_and_the_truth(capsys, tmp_path):
    out_dir = tmp_path / "report"
    assert main(["demo", "--fast", "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
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
    assert "p Holm" in out and "tasks needed" in out
    report = (out_dir / "report.md").read_text()
    assert "## 4. How good is each agent? (frequentist)" in report
    assert (out_dir / "forest_mean_new_task.png").stat().st_size > 5000
    from hierbench.io import load_dataset, load_fit

    assert load_fit(out_dir / "fit_crossed.nc").attrs["hierbench_model"] == "crossed"
    assert int(load_dataset(out_dir / "data.nc").score.notnull().sum()) == int(
        np.isfinite(data.score.values).sum()
    )


def test_installed_entry_point(log):
    exe = Path(sys.executable).parent / "hierbench"
    out = subprocess.run(
        [str(exe), "summary", str(log), *COLS, "--json"], capture_output=True, text=True, check=True
    )
    res = json.loads(out.stdout)
    assert [r["agent"] for r in res["agents"]] == ["a", "b"]
    bad = subprocess.run([str(exe), "validate", str(log)], capture_output=True, text=True)
    assert bad.returncode == 1
    assert "missing required columns: `task`='task', `score`='score', `agent`='agent'" in bad.stderr


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
