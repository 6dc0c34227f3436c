"""Pairwise battle tables are never read as run logs, also when the user names the columns (audit C, C3).

LLMFAO (``left, right, winner``) read with ``--agent left --score winner --levels right,tie,left``
passed as a run log of 59 agents, the opponent (``right``) dropped without a word; football's
``home, away, result`` got no battle hint at all. The tables here are battles by construction
(each row two sides and a verdict); the run logs are run logs by construction, with a column that
happens to be called ``right``. Counts are by hand.
"""

import pandas as pd
import pytest

from hierbench.cli import main
from hierbench.data import EvalDataError
from hierbench.data import from_records


def _write(tmp_path, df: pd.DataFrame, name: str) -> str:
    path = tmp_path / name
    df.to_csv(path, index=False)
    return str(path)


def _llmfao_like(tmp_path) -> str:
    """Six judged comparisons of three models on two prompts: left vs right, verdict winner."""
    df = pd.DataFrame({
        "prompt": ["p1", "p1", "p1", "p2", "p2", "p2"],
        "winner": ["left", "tie", "right", "left", "left", "tie"],
        "left": ["x", "y", "z", "x", "y", "z"],
        "right": ["y", "z", "x", "z", "x", "y"],
    })  # fmt: skip
    return _write(tmp_path, df, "battles.csv")


def _football_like(tmp_path) -> str:
    df = pd.DataFrame({
        "season": ["s1", "s1", "s2", "s2"],
        "home": ["Hul", "Sto", "Hul", "Wig"],
        "away": ["Sto", "Wig", "Wig", "Hul"],
        "result": [-1.0, 0.0, 1.0, 1.0],
    })  # fmt: skip
    return _write(tmp_path, df, "football.csv")


def test_battles_with_named_columns_are_refused_with_the_read_battles_pointer(tmp_path, capsys):
    """The audit's remedy-following commands: refused (exit 2), read_battles named, no --levels offered."""
    path = _llmfao_like(tmp_path)
    cols = ["--agent", "left", "--task", "prompt", "--score", "winner"]
    for extra in ([], ["--levels", "right,tie,left"]):
        for cmd in ("validate", "summary", "compare"):
            assert main([cmd, path, *cols, *extra]) == 2, (cmd, extra)
            err = capsys.readouterr().err
            assert "pairwise battles (left, right, winner)" in err, err
            assert "column 'right', which no role reads, holds the other side" in err
            assert "hierbench.data.read_battles" in err and "left='left', right='right', winner='winner'" in err
            assert "give their labels in order as --levels" not in err  # the numeric check never ran


def test_the_read_battles_call_the_refusal_names_reads_the_table(tmp_path):
    """What the message says to do works: 6 comparisons of 3 models, ties 0.5 (by hand: 3 left wins, 2 ties)."""
    from hierbench.data import read_battles

    with pytest.raises(EvalDataError, match=r"task='prompt'\)"):
        from_records(_llmfao_like(tmp_path), agent="left", task="prompt", score="winner")
    pw = read_battles(_llmfao_like(tmp_path), left="left", right="right", winner="winner", task="prompt")
    assert sorted(pw["outcome"].values.tolist()) == [0.0, 0.5, 0.5, 1.0, 1.0, 1.0]


def test_football_home_away_is_recognised_with_and_without_column_flags(tmp_path, capsys):
    path = _football_like(tmp_path)
    assert main(["validate", path]) == 2
    err = capsys.readouterr().err
    assert "missing required columns" in err and "pairwise battles (home, away, result)" in err
    # home as the agent, away left unread: each score is home's result against a different opponent
    for agent, other in (("home", "away"), ("away", "home")):
        assert main(["validate", path, "--agent", agent, "--task", "season", "--score", "result",
                     "--levels=-1,0,1"]) == 2  # fmt: skip
        err = capsys.readouterr().err
        assert f"column '{other}', which no role reads, holds the other side" in err, err


def test_baseball_team_columns_with_a_score_per_side_are_battles(tmp_path, capsys):
    df = pd.DataFrame({"home.team": ["Mil", "Det"], "away.team": ["Det", "Tor"],
                       "home.wins": [4, 2], "away.wins": [3, 4]})  # fmt: skip
    path = _write(tmp_path, df, "baseball.csv")
    assert main(["validate", path]) == 2
    assert "pairwise battles (home.team, away.team, home.wins/away.wins)" in capsys.readouterr().err
    assert main(["validate", path, "--agent", "home.team", "--task", "away.wins", "--score", "home.wins"]) == 2
    assert "'home.wins/away.wins' a score per side" in capsys.readouterr().err


def test_an_opponent_read_as_the_task_is_the_users_design_and_is_read(tmp_path, capsys):
    """The home side as the agent and away as the task: nothing is dropped (4 records, 3 home teams, 3 away teams)."""
    path = _football_like(tmp_path)
    assert main(["validate", path, "--agent", "home", "--task", "away", "--score", "result", "--levels=-1,0,1",
                 "--json"]) == 0  # fmt: skip
    import json

    doc = json.loads(capsys.readouterr().out)
    assert (doc["n_agents"], doc["n_tasks"], doc["n_records_kept"]) == (3, 3, 4)


def test_run_logs_with_a_column_called_right_are_not_refused(tmp_path, capsys):
    """Run logs (one agent per row) whose other columns happen to be `left`, `right`, `winner`, `result`."""
    df = pd.DataFrame({
        "agent": ["a", "a", "b", "b"],
        "task": ["t1", "t2", "t1", "t2"],
        "score": [1.0, 0.0, 1.0, 1.0],
        "right": [True, False, True, True],   # the answer was right
        "left": [3, 2, 1, 0],                  # attempts left
        "result": ["ok", "fail", "ok", "ok"],
    })  # fmt: skip
    path = _write(tmp_path, df, "runs.csv")
    assert main(["validate", path, "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert (doc["n_agents"], doc["n_tasks"], doc["n_runs_total"]) == (2, 2, 4)
    # an agent column that is one side of a pair whose partner is read (as a coord) is the user's reading too
    ds = from_records(df.rename(columns={"agent": "model_a"}).assign(model_b="m"), agent="model_a",
                      agent_coords=["model_b"])  # fmt: skip
    assert ds.sizes["agent"] == 2
    # an agent column named like a side, with its partner unread but no verdict or per-side scores
    two = df.drop(columns=["result"]).rename(columns={"agent": "left", "left": "attempts"})
    assert from_records(two, agent="left").sizes["agent"] == 2


def test_compare_refuses_battles_by_name_and_says_where_the_pairs_are(tmp_path, capsys):
    # audit U6: `compare LOG --battles` fell through to argparse's "unrecognized arguments"
    assert main(["compare", _llmfao_like(tmp_path), "--battles"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--battles: compare takes paired scores of agents over the same tasks" in err
    assert "hierbench report --data LOG --battles -o REPORT" in err and "hierbench summary LOG --battles" in err
