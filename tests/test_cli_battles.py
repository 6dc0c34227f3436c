"""``hierbench fit --battles`` and ``report --battles``: a battle log from the shell.

The command line read run logs only: a battle log was refused with a hint to use Python. The
fit must be the Python API's (read_battles, build_bradley_terry, bayes.fit with the same
settings and seed: the same draws), the flags that do not apply are refused, and a verdict
mapping given as flags reads the outcomes written by hand below.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierbench.cli import main
from hierbench.io import load_fit

#: 4 agents, 60 battles; the outcome for the left agent written by hand from its verdict
_G = np.random.default_rng(3)
_LEFT = _G.choice(list("abcd"), 60)
_RIGHT = np.array([_G.choice([x for x in "abcd" if x != a]) for a in _LEFT])
_VERDICT = _G.choice(["model_a", "model_b", "tie"], 60, p=[0.45, 0.35, 0.2])
ARENA = pd.DataFrame({"model_a": _LEFT, "model_b": _RIGHT, "winner": _VERDICT,
                      "question_id": _G.choice(["q1", "q2", "q3", "q4", "q5"], 60)})  # fmt: skip
OUTCOME = {"model_a": 1.0, "model_b": 0.0, "tie": 0.5}
FLAGS = ["--battles", "--left", "model_a", "--right", "model_b", "--prompt", "question_id",
         "--verdict", "model_a=1", "--verdict", "model_b=0", "--verdict", "tie=0.5"]  # fmt: skip
SAMPLER = ["--draws", "100", "--tune", "100", "--chains", "2", "--seed", "5", "--quiet"]


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    folder = tmp_path_factory.mktemp("arena")
    ARENA.to_csv(folder / "arena.csv", index=False)
    return folder


@pytest.mark.slow  # two small fits (CLI and Python) and a report
@pytest.mark.filterwarnings("ignore::hierbench.bayes.ConvergenceWarning")  # 2 x 100 draws: a smoke-size fit
def test_a_battle_log_is_fitted_and_reported_as_in_python(arena, capsys):
    """The report's sections are cut to the two read here, the battles' own section among them, and
    the abilities it follows (``--sections``).
    """
    from hierbench import bayes
    from hierbench.data import read_battles

    log, out = arena / "arena.csv", arena / "fit.nc"
    assert main(["fit", str(log), *FLAGS, *SAMPLER, "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "bradley_terry fit of 4 agents, 60 battles:" in printed
    saved = load_fit(out)
    # the counts the fit holds, per (left, right) pair: win / tie / loss of the left agent, by pandas
    const, names = saved["constant_data"], sorted("abcd")
    got = {(names[a], names[b]): tuple(row) for a, b, row in zip(const["agent_a_idx"].values,
           const["agent_b_idx"].values, const["outcome_obs"].values.tolist(), strict=True)}  # fmt: skip
    tab = pd.crosstab([ARENA["model_a"], ARENA["model_b"]], ARENA["winner"])
    want_counts = {k: (r.get("model_a", 0), r.get("tie", 0), r.get("model_b", 0)) for k, r in tab.iterrows()}
    assert got == want_counts
    ds = read_battles(ARENA, left="model_a", right="model_b", task="question_id", outcomes=OUTCOME)
    want = bayes.fit(bayes.build_bradley_terry(ds), draws=100, tune=100, chains=2, rng=5, progress=False)
    np.testing.assert_array_equal(saved["posterior"]["ability"].values, want["posterior"]["ability"].values)
    report = arena / "report.html"
    assert main(["report", str(out), "--data", str(log), *FLAGS[:-6], "--verdict", "model_a=1", "--verdict",
                 "model_b=0", "--verdict", "tie=0.5", "--resamples", "99", "-o", str(report),
                 "--sections", "data-summary,abilities,battle-freq"]) == 0  # fmt: skip
    html = report.read_text()
    assert 'id="battle-freq"' in html and "60 battles" in html
    # the fit beside another log's battles is refused (the report would mix the two)
    ARENA.iloc[:50].to_csv(arena / "fewer.csv", index=False)
    assert main(["report", str(out), "--data", str(arena / "fewer.csv"), *FLAGS, "-o", str(arena / "r2.html")]) == 2
    assert "FIT" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--left", "model_a"], "--left model_a: these flags read a battle log; give --battles"),
        (["--battles", "--agent", "model_a"], "which does not use --agent model_a"),
        (["--battles", "--model", "crossed"], "--battles fits the Bradley-Terry model; --model"),
        (["--battles", "--verdict", "model_a=2"], "--verdict must be VALUE=1, VALUE=0 or VALUE=0.5"),
        (["--battles", "--left", "model_a", "--right", "model_b"],
         "--winner column 'winner' in"),  # the default verdicts (left, right, tie): model_a is not one
        ([*FLAGS, "--ties", "none"], "--ties none needs data without ties"),
        (["--battles", "--formula", "score ~ (1|agent)"], "--formula name(s) a run-log model"),
    ],
)
def test_flags_that_do_not_apply_are_refused_in_the_shells_words(arena, capsys, argv, said):
    assert main(["fit", str(arena / "arena.csv"), *argv, "-o", str(arena / "never.nc")]) == 2
    err = capsys.readouterr().err
    assert said in err, err
    assert not (arena / "never.nc").exists()


def test_report_battles_needs_the_log(arena, capsys):
    assert main(["report", "--battles", "--prompt", "question_id", "-o", str(arena / "r.html")]) == 2
    assert "nothing to report" in capsys.readouterr().err


def test_a_run_log_reader_points_a_battle_log_to_the_flag(arena, capsys):
    assert main(["fit", str(arena / "arena.csv"), "-o", str(arena / "never.nc")]) == 2
    assert "hierbench fit LOG --battles" in capsys.readouterr().err


def test_a_verdict_written_with_a_minus_sign_is_explained_and_taken_joined(arena, capsys):
    """Football's ``result`` column holds -1, 0 and 1: ``--verdict -1=0`` reads as another flag."""
    with pytest.raises(SystemExit):
        main(["fit", str(arena / "arena.csv"), "--battles", "--verdict", "-1=0", "-o", str(arena / "never.nc")])
    assert "joined to the flag with '=', as in --verdict=-1=0" in capsys.readouterr().err
    from hierbench.cli import build_parser

    args = build_parser().parse_args(["fit", "x.csv", "--battles", "--verdict=-1=0", "--verdict", "1=1", "-o", "f.nc"])
    assert args.verdict == ["-1=0", "1=1"]


def test_summary_and_validate_count_the_battles_as_pandas_does(arena, capsys):
    """Each agent's battles, wins, ties and losses from the verdicts, counted with pandas."""
    import json

    log = str(arena / "arena.csv")
    assert main(["summary", log, *FLAGS, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    got = {row["agent"]: (row["battles"], row["wins"], row["ties"], row["losses"]) for row in doc["agents"]}
    side = pd.concat([
        pd.DataFrame({"agent": ARENA["model_a"], "w": ARENA["winner"] == "model_a", "l": ARENA["winner"] == "model_b"}),
        pd.DataFrame({"agent": ARENA["model_b"], "w": ARENA["winner"] == "model_b", "l": ARENA["winner"] == "model_a"}),
    ])  # fmt: skip
    side["t"] = ~(side["w"] | side["l"])
    want = {a: (len(g), int(g["w"].sum()), int(g["t"].sum()), int(g["l"].sum())) for a, g in side.groupby("agent")}
    assert got == want
    assert doc["battles"]["battles"] == 60 and doc["battles"]["ties"] == int((ARENA["winner"] == "tie").sum())
    assert main(["validate", log, *FLAGS, "--json"]) == 0
    read = json.loads(capsys.readouterr().out)
    assert (read["n_records_read"], read["battles"], read["agents"], read["prompts"]) == (60, 60, 4, 5)
    assert main(["summary", log, *FLAGS, "--score", "winner"]) == 2  # a run-log flag with --battles
    assert "which does not use --score winner" in capsys.readouterr().err
    assert main(["summary", log, *FLAGS, "--no-person-fit"]) == 2  # and a run-log option of the command
    assert "--battles: --no-person-fit apply to a run log" in capsys.readouterr().err
    assert main(["report", "--data", log, *FLAGS, "--bootstrap-method", "percentile", "-o",
                 str(arena / "never.html")]) == 2  # fmt: skip
    assert "--bootstrap-method apply to a run log" in capsys.readouterr().err
