"""What summary and compare say about agents that share few tasks (audit C: C9, C13, C14).

- summary ranked agents over disjoint task sets without a word (C9): it now warns the report's
  coverage flags;
- compare with no pair sharing 2 tasks printed a NaN table, a test that never ran, and exit 0
  (C13): it refuses (exit 2), as for one task; with one agent it named the Python function;
- the JSON header of one pair said "adjust": "holm" and a max-T kind for an interval not computed;
- a pair without shared tasks was warned twice, with no remedy; the Monte Carlo remedy named a
  Python argument (C14).

The logs are built here; which pairs share which tasks is known by construction.
"""

import json

import numpy as np
import pandas as pd
import xarray as xr

from hierbench.cli import main


def _log(tmp_path, tasks: dict[str, range], name: str = "runs.csv", seed: int = 0) -> str:
    """One run per (agent, task) for the tasks each agent ran; scores 0/1, seeded."""
    gen = np.random.default_rng(seed)
    rows = [(a, f"t{t:02d}", float(gen.integers(0, 2))) for a, ts in tasks.items() for t in ts]
    path = tmp_path / name
    pd.DataFrame(rows, columns=["agent", "task", "score"]).to_csv(path, index=False)
    return str(path)


def _warnings(err: str) -> list[str]:
    return [x for x in err.splitlines() if x.startswith("warning: ")]


def test_summary_warns_the_coverage_flags(tmp_path, capsys):
    # a and b share tasks 0-19; c ran 20-29 only: 10 of 30 tasks, sharing none with a or b
    path = _log(tmp_path, {"a": range(20), "b": range(20), "c": range(20, 30)})
    assert main(["summary", path, "--no-person-fit"]) == 0
    said = [x for x in _warnings(capsys.readouterr().err) if "coverage:" in x]
    assert len(said) == 2, said
    assert "fewer than half of the 30 tasks: ['c']" in said[0]
    assert "2 of 3 pairs of agents share fewer than 2 tasks (e.g. a and c: 0, b and c: 0)" in said[1]
    assert all("ordered by each agent's mean over the tasks it ran" in x for x in said)
    assert main(["summary", path, "--no-person-fit", "--json"]) == 0
    assert sum("coverage:" in w for w in json.loads(capsys.readouterr().out)["warnings"]) == 2


def test_summary_of_a_fully_crossed_log_has_no_coverage_flag(tmp_path, capsys):
    assert main(["summary", _log(tmp_path, {"a": range(5), "b": range(5)}), "--no-person-fit"]) == 0
    assert not [x for x in _warnings(capsys.readouterr().err) if "coverage:" in x]


def test_compare_refuses_a_log_without_a_comparable_pair(tmp_path, capsys):
    # disjoint (0 shared), then 1 shared task: a paired difference needs 2
    for tasks, shared in (({"a": range(10), "b": range(10, 20)}, 0), ({"a": range(10), "b": range(9, 19)}, 1)):
        assert main(["compare", _log(tmp_path, tasks), "--no-person-fit"]) == 2
        cap = capsys.readouterr()
        assert cap.out == ""  # no table of NaN, no "How: test ..." of a test that never ran
        assert f"the two agents share {shared} task{'' if shared == 1 else 's'}" in cap.err, cap.err
        assert "compare: error: compare needs a pair of agents with a score on at least 2 of the same tasks" in cap.err
    # three agents, none sharing 2 tasks with another
    assert main(["compare", _log(tmp_path, {"a": range(3), "b": range(3, 6), "c": range(6, 9)})]) == 2
    assert "no pair of the 3 agents shares 2 (shared tasks: a and b: 0, a and c: 0, b and c: 0)" in capsys.readouterr().err


def test_compare_refuses_one_agent_in_the_commands_words(tmp_path, capsys):
    assert main(["compare", _log(tmp_path, {"solo": range(5)})]) == 2
    err = capsys.readouterr().err
    assert "compare needs at least 2 agents" in err and "holds 1 ('solo')" in err
    assert "compare_agents" not in err


def test_compare_json_header_says_the_settings_that_took_effect(tmp_path, capsys):
    """One pair: no adjustment; the max-T interval was not computed, so it has no kind."""
    assert main(["compare", _log(tmp_path, {"a": range(12), "b": range(12)}), "--json", "--no-person-fit"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["adjust"] == "none" and doc["adjust_reason"].startswith("none: one pair")
    assert doc["simultaneous_interval_kind"] is None and "not computed" in doc["simultaneous_interval"]
    assert doc["per_pair_interval_kind"] == "t"  # computed: its kind stays (the paired t by default since s75)
    # three agents on shared tasks: max-T, its interval computed, its kind said
    path = _log(tmp_path, {"a": range(30), "b": range(30), "c": range(30)}, name="three.csv", seed=1)
    assert main(["compare", path, "--json", "--no-person-fit"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["adjust"], doc["simultaneous_interval_kind"]) == ("maxt", "max-t")


def test_a_pair_without_shared_tasks_is_warned_once_with_what_to_do(tmp_path, capsys):
    # a and b share 0-19; c ran 20-29: the pairs (a, c) and (b, c) share no task
    path = _log(tmp_path, {"a": range(20), "b": range(20), "c": range(20, 30)})
    assert main(["compare", path, "--no-person-fit"]) == 0
    said = _warnings(capsys.readouterr().err)
    assert not [x for x in said if "EmptySampleWarning" in x], said
    undefined = [x for x in said if "UndefinedTestWarning" in x]
    assert len(undefined) == 1 and "2 of 3 pairs have fewer than 2 shared tasks" in undefined[0]
    assert "run both agents on at least 2 common tasks" in undefined[0]


def test_the_monte_carlo_remedy_is_said_in_the_commands_words():
    """The pair sentence's "more max-T null draws could move it across": compare says what the shell can do."""
    from hierbench.cli._commands import _mc_remedy
    from hierbench.report._pairs import _near_level

    agents = ["a", "b"]
    mat = xr.DataArray([[np.nan, 0.051], [0.051, np.nan]], dims=("agent", "opponent"),
                       coords={"agent": agents, "opponent": agents})  # fmt: skip
    ds = xr.Dataset({"p_adjusted": mat, "p_adjusted_mcse": mat * 0 + 0.002})
    text = _near_level(ds, 0.05, "maxt")
    assert "a setting of the Python call: compare_agents(..., n_draws=...)" in text  # the premise
    said = _mc_remedy(text)
    assert said.startswith("From the command line: compare has no flag for the number of Monte Carlo draws")
    assert "(n_draws in Python)" in said and "rerun with other --seed values" in said
    assert _mc_remedy("2 of 3 pairs differ at family-wise level 0.05.") == ""
