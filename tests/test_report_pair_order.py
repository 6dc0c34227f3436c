"""The pair table runs in the report's one order, `a` the earlier agent, as the matrix (audit X, finding 5).

The expected rows come from pandas over the simulated log's records: each agent's mean score per
task (over the tasks it ran), highest first, ties by name; the pairs (earlier, later) in that order;
each pair's mean difference over the tasks both ran. The report, its `pairs.csv` and `hierbench
compare` (text and JSON) must all list the pairs that way.
"""

import io
import json
import re
import warnings

import numpy as np
import pandas as pd

from hierbench import freq
from hierbench.cli import main
from hierbench.io import save_dataset
from hierbench.report import build
from hierbench.testing import simulate_eval

#: only the pairwise section's inputs: what a test does not read is left out
OUT = {"person_fit": None, "variance": None, "horizon": None, "bootstrap": None}


def _expected(data) -> tuple[list[tuple[str, str]], dict, list[str]]:
    """Pairs (a, b) in the order of the agents' mean score per task, and each pair's mean difference, by pandas."""
    rec = data["score"].to_dataframe().dropna(subset=["score"]).reset_index()
    per_task = rec.groupby(["agent", "task"])["score"].mean().unstack("task")  # agent x task, NaN where not run
    mean = per_task.mean(axis=1).rename("mean").reset_index()
    order = mean.sort_values(["mean", "agent"], ascending=[False, True])["agent"].astype(str).tolist()
    pairs = [(order[i], order[j]) for i in range(len(order)) for j in range(i + 1, len(order))]
    diff = {(a, b): float((per_task.loc[a] - per_task.loc[b]).dropna().mean()) for a, b in pairs}
    return pairs, diff, order


def _ragged(n_agents: int, n_tasks: int, rng: int):
    """A log whose score order is not its file (name) order: agents skip some tasks."""
    data, _ = simulate_eval(n_agents=n_agents, n_tasks=n_tasks, n_runs=2, p_missing_task=0.15, rng=rng)
    return data


def _table_rows(md: str) -> list[list[str]]:
    section = md.split("## Does A beat B?")[1].split("\n## ")[0]
    return [[c.strip() for c in r.split("|")[1:-1]] for r in section.splitlines() if re.match(r"\| agent_\d+ - ", r)]


def test_report_pair_rows_follow_the_score_order_with_a_the_earlier_agent(tmp_path):
    data = _ragged(5, 30, rng=11)
    pairs, diff, order = _expected(data)
    assert order != [str(a) for a in data["agent"].values]  # the score order is not the file's
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = freq.compare_agents(data, test="t", adjust="holm")
        md = build(data=data, path=tmp_path / "r.md", freq={**OUT, "compare": c}, progress=False).read_text()
    rows = _table_rows(md)
    assert [r[0] for r in rows] == [f"{a} - {b}" for a, b in pairs]
    got = np.array([float(r[1]) for r in rows])
    want = np.array([diff[p] for p in pairs])
    assert np.max(np.abs(got - want)) <= 0.0005 + 1e-9  # 3 decimals shown
    assert "a is the agent earlier in the report's order" in md


def test_cli_compare_lists_the_pairs_in_the_same_order_and_direction(tmp_path, capsys):
    data = _ragged(5, 30, rng=11)
    pairs, diff, _ = _expected(data)
    path = tmp_path / "log.nc"
    save_dataset(data, path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["compare", str(path), "--json", "--seed", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)["pairs"]
    assert [r["pair"] for r in rows] == [f"{a} - {b}" for a, b in pairs]
    assert np.allclose([r["mean difference"] for r in rows], [diff[p] for p in pairs], atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["compare", str(path), "--seed", "1"]) == 0
    text = capsys.readouterr().out
    listed = [m.group(1) for m in re.finditer(r"^(agent_\d+ - agent_\d+)\s", text, flags=re.M)]
    assert listed == [f"{a} - {b}" for a, b in pairs]


def test_pairs_csv_beside_a_shortened_table_runs_in_the_same_order(tmp_path):
    """Above 300 pairs the table shows the pairs that differ and `pairs.csv` holds every one: in the report's
    order, `agent` the earlier, `mean difference` agent minus opponent (pandas from the log).
    """
    data = _ragged(26, 12, rng=2)  # 325 pairs
    pairs, diff, _ = _expected(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = freq.compare_agents(data, test="t", adjust="holm")
        build(data=data, path=tmp_path / "r.md", freq={**OUT, "compare": c}, progress=False)
    csv = pd.read_csv(io.StringIO((tmp_path / "pairs.csv").read_text()))
    assert list(zip(csv["agent"], csv["opponent"], strict=True)) == pairs
    assert np.allclose(csv["mean difference"], [diff[p] for p in pairs], atol=1e-12, equal_nan=True)
