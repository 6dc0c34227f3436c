"""The report lists the agents in one order, the summary's (audit W, findings 2, 6 and 7).

Expected orders come from pandas on the raw records: each agent's mean over its tasks of the
per-task mean score, highest first, ties by name. The checklist's interval kinds are checked
against the levels and kinds the freq functions themselves report.
"""

import warnings

import pandas as pd
import pytest

from hierbench import freq
from hierbench.data import from_records
from hierbench.report import build
from hierbench.testing import simulate_eval


def _records() -> pd.DataFrame:
    """A log whose file order is not the score order, with a tie (``b_twin`` copies ``zz``)."""
    ds, _ = simulate_eval(n_agents=5, n_tasks=16, n_runs=2, p_missing_task=0.1, rng=7)
    df = ds["score"].to_dataframe().reset_index().dropna(subset=["score"])
    df["agent"] = df["agent"].map(dict(zip(sorted(df["agent"].unique()), ["m", "zz", "c", "q", "a"], strict=True)))
    twin = df[df["agent"] == "zz"].assign(agent="b_twin")
    return pd.concat([df, twin], ignore_index=True)


def _order_by_hand(df: pd.DataFrame) -> list[str]:
    per_task = df.groupby(["agent", "task"])["score"].mean().groupby("agent").mean()
    by = per_task.rename("mean").reset_index().sort_values(["mean", "agent"], ascending=[False, True])
    return by["agent"].tolist()


def _table_agents(md: str, heading: str, known: set[str]) -> list[str]:
    """The first column of the section's first table, the rows naming an agent, in order."""
    body = md.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in body.splitlines() if line.startswith("| ")]
    return list(dict.fromkeys(r for r in rows if r in known))


def _report(tmp_path, records, **kw) -> str:
    ds = from_records(records, agent="agent", task="task", run="run", score="score")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build(data=ds, path=tmp_path / "r.md", n_resamples=99, progress=False, **kw).read_text()


@pytest.fixture(scope="module")
def report_90(tmp_path_factory):
    records = _records()
    return records, _report(tmp_path_factory.mktemp("order"), records, prob=0.9)


@pytest.mark.slow  # the module's report (2 s, most of it the first imports)
def test_tables_in_the_summary_order(report_90):
    records, md = report_90
    want = _order_by_hand(records)
    log = from_records(records, agent="agent", task="task", run="run", score="score")
    assert want != [str(a) for a in log["agent"].values]  # the log's order differs, or the test proves nothing
    assert want.index("b_twin") + 1 == want.index("zz")  # the tie, by name
    for heading in ("Data summary", "Agent abilities", "Reliability"):
        assert _table_agents(md, heading, set(want)) == want, heading
    assert "Agents are listed in one order in this report's tables and figures: agents by mean score per task" in md


@pytest.mark.slow
def test_checklist_names_every_interval_with_its_level(report_90):
    records, md = report_90
    row = next(line for line in md.splitlines() if line.startswith("| interval level and kind"))
    ds = from_records(records, agent="agent", task="task", run="run", score="score")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = freq.compare_agents(ds, prob=0.9, rng=0).to_dataset()
        vc = freq.variance_components(ds, prob=0.9)
    assert f"pairwise differences: 90% {cmp['ci'].attrs['ci_kind']}" in row
    assert f"pairwise, simultaneous over the family: 90% {cmp['ci_simultaneous'].attrs['ci_kind']}" in row
    assert f"variance components: 90% {vc.ci.attrs['ci_kind']}" in row
    assert "agent means: 90% bca" in row and "99 resamples" in row
    assert "pass^k (unbiased): 90% " in row
    assert "95%" not in row  # every level is the results' own (0.9), none hard-coded


def test_single_agent_says_nothing_of_pairs(tmp_path):
    records = _records()
    one = records[records["agent"] == "m"]
    md = _report(tmp_path, one, freq={"compare": None})
    summary = md.split("## Data summary", 1)[1].split("\n## ", 1)[0]
    assert "pair" not in summary  # one agent: no pair to speak of (was "every pair shares 2 or more")
    assert "No flags: the agent ran at least half the tasks" in summary
