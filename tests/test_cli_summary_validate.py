"""The CLI findings of audit Q: the summary's order and data-fault flag, validate's unread columns,
remedies in flags, ordinal without levels, and fit --strict.

Expected values come from the logs built here (pandas on the written CSV, the construction of each
shape), never from the code under test.
"""

import json

import numpy as np
import pandas as pd
import pytest

from hierbench.cli import main
from hierbench.data import to_records
from hierbench.testing import simulate_eval

# ---------------------------------------------------------------- finding 5: summary order, person-fit flag


def _log_with_a_broken_record(tmp_path):
    """5 agents x 100 tasks, one run each; agent_02's 100 results shuffled over the tasks (seeded).

    The shuffle keeps its mean and breaks any link to the tasks' difficulty: the data fault person fit
    is for (SWE-bench's Claude 3.7 Sonnet record). Rows of agent_01 put first, so file order is not
    the order of the means.
    """
    ds, _ = simulate_eval(n_agents=5, n_tasks=100, n_runs=1, rng=3)
    df = to_records(ds).drop(columns="error")
    broken = df["agent"] == "agent_02"
    df.loc[broken, "score"] = np.random.default_rng(0).permutation(df.loc[broken, "score"].to_numpy())
    df = pd.concat([df[df.agent == "agent_01"], df[df.agent != "agent_01"]])
    path = tmp_path / "runs.csv"
    df.to_csv(path, index=False)
    return path


def _pandas_order(path) -> list[str]:
    """Agents by the mean over tasks of each task's mean score, highest first, ties by name."""
    df = pd.read_csv(path)
    mean = df.groupby(["agent", "task"]).score.mean().groupby("agent").mean()
    return sorted(mean.index, key=lambda a: (-mean[a], a))


def test_summary_lists_agents_by_mean_per_task_and_says_so(tmp_path, capsys):
    path = _log_with_a_broken_record(tmp_path)
    want = _pandas_order(path)
    assert pd.read_csv(path).agent.unique().tolist() != want  # the premise: file order differs
    assert main(["summary", str(path), "--run", "run", "--no-person-fit"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == ("rows: agents by mean (per task), highest first, ties by name (the order of "
                      "compare's matrix and the report)")
    assert [x.split()[0] for x in out[4:]] == want
    assert main(["summary", str(path), "--run", "run", "--json", "--no-person-fit"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [a["agent"] for a in doc["agents"]] == want
    assert doc["agent_order"].startswith("agents by mean (per task), highest first")


def _flag_lines(err: str) -> list[str]:
    return [x for x in err.splitlines() if "do not follow the tasks' difficulty" in x]


def _named(line: str) -> list[str]:
    return [a for a in ("agent_00", "agent_01", "agent_02", "agent_03", "agent_04") if f"{a}: slope" in line]


def test_summary_warns_of_a_record_that_ignores_task_difficulty(tmp_path, capsys):
    """The report's and demo's person-fit flag, from summary too: on stderr, naming the shuffled
    agent (the construction's) and no other; --no-person-fit leaves it out.
    """
    path = _log_with_a_broken_record(tmp_path)
    assert main(["summary", str(path), "--run", "run"]) == 0
    cap = capsys.readouterr()
    lines = _flag_lines(cap.err)
    assert len(lines) == 1 and lines[0].startswith("warning: results that do not follow the tasks' difficulty")
    assert _named(lines[0]) == ["agent_02"]
    assert "solves" in lines[0] and "difficulty" not in cap.out
    assert main(["summary", str(path), "--run", "run", "--no-person-fit"]) == 0
    assert "difficulty" not in capsys.readouterr().err


def test_compare_warns_of_a_record_that_ignores_task_difficulty(tmp_path, capsys):
    path = _log_with_a_broken_record(tmp_path)
    assert main(["compare", str(path), "--run", "run", "--json"]) == 0
    cap = capsys.readouterr()
    lines = _flag_lines(cap.err)
    assert len(lines) == 1 and _named(lines[0]) == ["agent_02"]
    json.loads(cap.out)  # the document alone on stdout


def test_no_person_fit_flag_where_it_does_not_apply(tmp_path, capsys):
    """Two agents (person fit needs 3) and partial credit: no flag, no error."""
    df = pd.DataFrame({"agent": ["a"] * 6 + ["b"] * 6, "task": [f"t{i}" for i in range(6)] * 2,
                       "score": [1, 0, 1, 1, 0, 1, 0, 0, 1, 0, 0, 1]})
    path = tmp_path / "two.csv"
    df.to_csv(path, index=False)
    assert main(["summary", str(path)]) == 0
    assert "difficulty" not in capsys.readouterr().err
    path = tmp_path / "partial.csv"
    pd.concat([df, df[df.agent == "a"].assign(agent="c", score=0.5)]).to_csv(path, index=False)
    assert main(["summary", str(path)]) == 0
    assert "difficulty" not in capsys.readouterr().err


# ---------------------------------------------------------------- finding 6: validate names the columns it did not read


def test_validate_lists_the_columns_it_did_not_read_and_text_agrees_with_json(tmp_path, capsys):
    """`validate` said nothing of `latency_ms` and `notes`, and its text said "per-run variables: none"
    where --json listed ["error", "score"]. Expected: the written columns minus those named by flags
    (pandas on the CSV), in file order; the text's per-run variables are the JSON's.
    """
    df = pd.DataFrame({"agent": ["A", "A", "B", "B"], "latency_ms": [501, 766, 12, 40], "task": ["t1", "t2"] * 2,
                       "run": [0, 0, 0, 0], "score": [0, 1, 1, 1], "notes": ["x", "y", "x", "y"],
                       "cost": [0.1, 0.2, 0.3, 0.4]})
    path = tmp_path / "runs.csv"
    df.to_csv(path, index=False)
    flags = ["--run", "run", "--extra", "cost"]
    read = {"agent", "task", "run", "score", "cost"}
    want = [c for c in pd.read_csv(path).columns if c not in read]
    assert want == ["latency_ms", "notes"]
    assert main(["validate", str(path), *flags, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["columns_not_read"] == want
    assert main(["validate", str(path), *flags]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "columns not read: latency_ms, notes" in out
    assert f"per-run variables: {', '.join(rep['per_run_variables'])}" in out
    assert rep["per_run_variables"] == ["cost", "error", "score"]
    # every column read: "none"; a saved dataset keeps what its reader said
    assert main(["validate", str(path), *flags, "--extra", "latency_ms", "--task-coord", "notes"]) == 0
    assert "columns not read: none" in capsys.readouterr().out.splitlines()
    from hierbench.data import from_records
    from hierbench.io import save_dataset

    nc = tmp_path / "runs.nc"
    save_dataset(from_records(path, run="run", extra=["cost"]), nc)
    assert main(["validate", str(nc), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["columns_not_read"] == want


# ---------------------------------------------------------------- finding 8: remedies as flags


def _stderr_of(capsys, argv, code):
    assert main(argv) == code
    err = capsys.readouterr().err
    for python in ("attrs[", "from_records(", "model_design(", "ds['score']", "bootstrap_ci", "='"):
        assert python not in err, (python, err)
    return err


def test_a_binomial_formula_on_partial_credit_is_refused_in_flags_naming_agent_and_task(tmp_path, capsys):
    """It said "(row, run, score) [(0, 0, 0.27...)] ... Binarise them first (e.g. `ds['score'] = ...`)".
    The cells named: the first partial-credit records of the CSV in (agent, task, run) order (pandas).
    """
    df = pd.DataFrame({"agent": ["b", "b", "a", "a", "c", "c"], "task": ["t1", "t2"] * 3,
                       "score": [1, 0.25, 0, 1, 0.5, 0.75]})
    path = tmp_path / "runs.csv"
    df.to_csv(path, index=False)
    part = df[(df.score > 0) & (df.score < 1)].sort_values(["agent", "task"])
    cells = str([(a, t, "0", s) for a, t, s in part[["agent", "task", "score"]].itertuples(index=False)])
    err = _stderr_of(capsys, ["fit", str(path), "--formula", "score ~ (1|agent) + (1|task)", "--family",
                              "binomial", "-o", str(tmp_path / "f.nc")], 2)
    assert len(err.strip().splitlines()) == 1
    assert f"{len(part)} of the 6 scores" in err and f"(agent, task, run, score) {cells}" in err
    assert "with --family fractional (or auto); or binarise the --score column first" in err


def test_a_formula_naming_an_unknown_variable_points_to_the_coord_flags(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    pd.DataFrame({"agent": ["a", "a", "b", "b"], "task": ["t1", "t2"] * 2, "score": [1, 0, 0, 1]}).to_csv(path, index=False)
    err = _stderr_of(capsys, ["fit", str(path), "--formula", "score ~ (1|nosuch)", "-o", str(tmp_path / "f.nc")], 2)
    assert "--formula uses ['nosuch']" in err
    assert "(add agent / task covariates as coords, e.g. --agent-coord COL)" in err
    assert "on the dims agent and task" in err  # the dims, not the flags --agent and --task


def test_reading_warnings_give_flags_and_the_validate_json_key(tmp_path, capsys):
    """Warnings said "run='run' (--run run)" and "counted in attrs['n_repeated_records']". The count the
    JSON holds is the written file's (pandas: rows repeating an earlier row).
    """
    df = pd.DataFrame({"agent": ["a"] * 4 + ["b"] * 4, "task": ["t1", "t2"] * 4, "run": [0, 0, 1, 1] * 2,
                       "score": [1, 0, 1, 1, 0, 0, 1, 0]})
    path = tmp_path / "runs.csv"
    df.drop(columns="run").to_csv(path, index=False)  # no run column: rows 2 and 7 repeat earlier ones
    n_rep = int(pd.read_csv(path).duplicated().sum())
    err = _stderr_of(capsys, ["validate", str(path), "--json"], 0)
    assert f"{n_rep} of 8 records in {path} repeat an earlier record" in err
    assert "(counted in n_repeated_records of `hierbench validate --json`)" in err
    assert "--duplicates keep" in err and "--duplicates drop" in err
    df.to_csv(path, index=False)
    err = _stderr_of(capsys, ["validate", str(path)], 0)
    assert "To read them, name them: --run run" in err
    df.drop(columns="run").to_csv(path, index=False)
    assert main(["validate", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["n_repeated_records"] == n_rep
    df.assign(err=[0, 0, 0, 0, 0, 0, 1, 1]).to_csv(path, index=False)  # b's last two runs errored, one scored 1
    err = _stderr_of(capsys, ["validate", str(path), "--run", "run", "--error", "err"], 0)
    assert "(counted in n_error_scores_overwritten of `hierbench validate --json`)" in err
    assert "--error-values" in err and "--errors exclude" in err


# ---------------------------------------------------------------- finding 11: ordinal needs its scale


def _binary_log(tmp_path):
    path = tmp_path / "runs.csv"
    pd.DataFrame({"agent": list("aaabbbccc"), "task": ["t1", "t2", "t3"] * 3,
                  "score": [1, 0, 1, 0, 0, 1, 1, 1, 0]}).to_csv(path, index=False)
    return path


class _Stop(Exception):
    pass


def test_family_ordinal_without_levels_is_refused(tmp_path, capsys):
    """0/1 scores with --family ordinal and no --levels were fitted as a two-grade ordinal model
    without a word ("family: 'ordinal' [user] - ordinal (as requested)"); the help gives ordinal
    "with --levels". Refused, exit 2, nothing written.
    """
    out = tmp_path / "f.nc"
    args = ["fit", str(_binary_log(tmp_path)), "--formula", "score ~ (1|agent) + (1|task)", "--family", "ordinal"]
    assert main([*args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hierbench fit: error: --family ordinal fits ordered grades on the scale given with --levels")
    assert "--family binomial (or auto) is the two-grade model" in err
    assert not out.exists()


def test_family_ordinal_with_levels_goes_on_to_sample(tmp_path, capsys, monkeypatch):
    """With --levels 0,1 the scale is given: the check lets it through to the model (sampling stubbed)."""
    import hierbench.cli._fit as fit_mod

    def stop(*a, **k):
        raise _Stop

    monkeypatch.setattr(fit_mod, "_sample", stop)
    args = ["fit", str(_binary_log(tmp_path)), "--formula", "score ~ (1|agent) + (1|task)", "--family", "ordinal",
            "--levels", "0,1", "-o", str(tmp_path / "f.nc")]
    with pytest.raises(_Stop):
        main(args)
    assert "family: 'ordinal' [user]" in capsys.readouterr().out


# ---------------------------------------------------------------- finding 12: fit --strict


def test_strict_maps_the_convergence_verdict_to_the_exit_status():
    """Exit 1 under --strict unless the fit's attrs say it passed; 0 without --strict, whatever the verdict."""
    import xarray as xr

    from hierbench.cli._fit import _fit_status

    cases = {"1": 0, "0": 1, None: 1}  # converged, not converged, never checked
    for conv, strict_status in cases.items():
        dt = xr.DataTree()
        if conv is not None:
            dt.attrs["diag_converged"] = int(conv)
        assert (_fit_status(dt, False), _fit_status(dt, True)) == (0, strict_status)


def test_strict_is_documented_in_fit_help():
    from hierbench.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["fit"]
    text = " ".join(sub.format_help().split())
    assert "--strict exit status 1 when the fit did not pass its convergence checks" in text


# A fit that does not converge exits 1 under --strict and is saved: test_cli.py's
# test_every_warning_goes_to_stderr_and_stdout_holds_only_results makes every check of the test that
# stood here (exit 1, the file saved and not converged, "NOT converged" on stdout, the warning on stderr)
# on its own 30-draw fit, and needs no second one.
