"""read_inspect_log on logs that inspect-ai itself writes in the test.

Two mock models answer three samples for three epochs; a solver raises on
sample s2, epoch 2 (an infrastructure error; the eval is told not to fail on
errors). Every expected score below follows by hand from the mock answers and
the targets.
"""

import json

import numpy as np
import pytest
from inspect_ai import Task
from inspect_ai import eval
from inspect_ai.dataset import Sample
from inspect_ai.log import read_eval_log
from inspect_ai.log import write_eval_log
from inspect_ai.model import ModelOutput
from inspect_ai.model import ModelUsage
from inspect_ai.model import get_model
from inspect_ai.scorer import Score
from inspect_ai.scorer import match
from inspect_ai.scorer import mean as mean_metric
from inspect_ai.scorer import scorer
from inspect_ai.solver import solver

from hierbench.data import EvalDataError
from hierbench.data import model_design
from hierbench.data import read_inspect_log
from hierbench.data import to_counts

SAMPLES = [("s1", "one", "yes"), ("s2", "two", "yes"), ("s3", "three one", "no")]
EPOCHS = 3


def _answer(agree: bool):
    def respond(input, tools, tool_choice, config):
        text = input[-1].text
        says_yes = ("one" in text) == agree
        out = ModelOutput.from_content(model="mockllm", content="yes" if says_yes else "no")
        out.usage = ModelUsage(input_tokens=10, output_tokens=len(text), total_tokens=10 + len(text))
        return out

    return respond


@solver
def flaky():
    async def solve(state, generate):
        if state.sample_id == "s2" and state.epoch == 2:
            raise RuntimeError("sandbox died")
        return await generate(state)

    return solve


@scorer(metrics=[mean_metric()])
def mixed():
    """Values of three kinds: a bool, Inspect's "N" (no answer) and "P" (partial)."""

    async def score(state, target):
        return Score(value={"s1": True, "s2": "N", "s3": "P"}[state.sample_id])

    return score


@scorer(metrics=[mean_metric()])
def answer_length():
    async def score(state, target):
        return Score(value=len(state.output.completion) / 10)

    return score


def _task(name):
    return Task(
        dataset=[Sample(id=i, input=x, target=t) for i, x, t in SAMPLES],
        solver=[flaky()],
        scorer=[match(), answer_length(), mixed()],
        epochs=EPOCHS,
        name=name,
    )


# Running Inspect itself takes seconds, so every test that reads these logs is marked slow.
@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("inspect_logs")
    models = [
        get_model("mockllm/agree", custom_outputs=_answer(True)),
        get_model("mockllm/contrary", custom_outputs=_answer(False)),
    ]
    out = eval(
        [_task("toy"), _task("toy_b")],
        model=models,
        log_dir=str(log_dir),
        fail_on_error=False,
        display="none",
        log_format="eval",
    )
    assert len(out) == 4
    by = {(lg.eval.task, lg.eval.model): lg.location for lg in out}
    return log_dir, by


# match scorer, by hand: agree says "yes" to s1, s3; contrary says "yes" to s2.
MATCH = {
    "mockllm/agree": {"s1": 1.0, "s2": 0.0, "s3": 0.0},
    "mockllm/contrary": {"s1": 0.0, "s2": 1.0, "s3": 1.0},
}


@pytest.mark.slow
def test_one_log_counts_exactly(logs):
    _, by = logs
    ds = read_inspect_log(by[("toy", "mockllm/agree")], scorer="match")
    assert list(ds.agent.values) == ["mockllm/agree"]
    assert sorted(ds.task.values) == ["s1", "s2", "s3"]
    assert list(ds.run.values) == [1, 2, 3]
    assert ds.attrs["n_records_read"] == 9
    assert ds.attrs["n_records_kept"] == 9
    assert ds.attrs["n_error_runs"] == 1
    assert ds.error.sel(task="s2", run=2).item()
    assert int(ds.error.sum()) == 1
    for t, v in MATCH["mockllm/agree"].items():
        # the errored run counts as a failure (default errors="fail")
        expected = [v, 0.0, v] if t == "s2" else [v] * 3
        np.testing.assert_array_equal(ds.score.sel(agent="mockllm/agree", task=t).values, expected)
    # tokens = 10 + len(input) on every run that reached the model; none on the errored run
    for t, x, _ in SAMPLES:
        tok = ds.tokens.sel(agent="mockllm/agree", task=t).values
        if t == "s2":
            np.testing.assert_array_equal(tok[[0, 2]], [10 + len(x)] * 2)
            assert np.isnan(tok[1])
        else:
            np.testing.assert_array_equal(tok, [10 + len(x)] * 3)
    assert (ds.latency.fillna(0) >= 0).all() and ds.working_time.notnull().sum() >= 8
    assert not ds.hit_limit.any()
    assert ds.attrs["scorer"] == "match"
    c = to_counts(ds)
    np.testing.assert_array_equal(c.n_runs.sel(task=["s1", "s2", "s3"]).values, [[3, 3, 3]])
    np.testing.assert_array_equal(c.n_success.sel(task=["s1", "s2", "s3"]).values, [[3.0, 0.0, 0.0]])


@pytest.mark.slow
def test_numeric_scorer_and_exclude_policy(logs):
    _, by = logs
    ds = read_inspect_log(by[("toy", "mockllm/contrary")], scorer="answer_length", errors="exclude")
    # contrary answers: s1 "no" (0.2), s2 "yes" (0.3), s3 "no" (0.2)
    np.testing.assert_allclose(ds.score.sel(task="s1").values.ravel(), [0.2] * 3)
    np.testing.assert_allclose(ds.score.sel(task="s2").values.ravel(), [0.3, np.nan, 0.3])
    assert ds.attrs["n_records_kept"] == 8
    assert json.loads(ds.attrs["not_kept"]) == {"infrastructure error, excluded (errors='exclude')": 1}


@pytest.mark.slow
def test_list_of_logs_same_task_keys_agents_by_model(logs):
    _, by = logs
    ds = read_inspect_log([by[("toy", "mockllm/agree")], by[("toy", "mockllm/contrary")]], scorer="match")
    assert sorted(ds.agent.values) == ["mockllm/agree", "mockllm/contrary"]
    for m, per_task in MATCH.items():
        for t, v in per_task.items():
            got = ds.score.sel(agent=m, task=t).values
            assert np.all(got[[0, 2]] == v)
    assert ds.attrs["n_records_read"] == 18 and int(ds.error.sum()) == 2
    assert list(ds.model.values) == list(ds.agent.values)


@pytest.mark.slow
def test_folder_with_several_tasks_keys_agents_by_model_and_task(logs):
    log_dir, _ = logs
    ds = read_inspect_log(log_dir, scorer="match")
    assert sorted(ds.agent.values) == sorted(
        f"{m} [{t}]" for m in ("mockllm/agree", "mockllm/contrary") for t in ("toy", "toy_b")
    )
    assert ds.attrs["n_records_read"] == 36
    assert ds.attrs["n_error_runs"] == 4
    assert sorted(json.loads(ds.attrs["inspect_tasks"])) == ["toy", "toy_b"]
    assert set(ds.inspect_task.values) == {"toy", "toy_b"}
    # the agent is the log's model, not a column of records: no agent_column to point a formula at
    assert "agent_column" not in ds.attrs and "task_column" not in ds.attrs
    # (1|model) groups by the coord model: 2 models, each shared by its 2 agents (one per task), as stated
    d = model_design("score ~ 1 + (1|model) + (1|task)", ds)
    assert d.random[0].levels.tolist() == ["mockllm/agree", "mockllm/contrary"]
    assert "2 levels for 4 agents" in d.decisions["grouping (1|model)"]


@pytest.mark.slow
def test_value_map_overrides_inspect_conversion(logs):
    _, by = logs
    ds = read_inspect_log(by[("toy", "mockllm/agree")], scorer="match", value_map={"C": 0.75})
    np.testing.assert_array_equal(ds.score.sel(task="s1").values.ravel(), [0.75] * 3)


@pytest.mark.slow
def test_several_scorers_require_a_choice(logs):
    _, by = logs
    with pytest.raises(EvalDataError, match=r"several scorers \['answer_length', 'match', 'mixed'\]; choose one, e\.g\. scorer='answer_length'"):
        read_inspect_log(by[("toy", "mockllm/agree")])
    with pytest.raises(EvalDataError, match=r"`scorer` 'accuracy' is not in the Inspect logs; available scorers \['answer_length', 'match', 'mixed'\]"):
        read_inspect_log(by[("toy", "mockllm/agree")], scorer="accuracy")


@pytest.mark.slow
def test_log_without_scores_is_a_clear_error(logs, tmp_path):
    _, by = logs
    log = read_eval_log(by[("toy", "mockllm/agree")])
    for s in log.samples:
        s.scores = None
    log.results = None
    path = tmp_path / "unscored.eval"
    write_eval_log(log, str(path))
    with pytest.raises(EvalDataError, match=r"the Inspect logs hold no scores \(9 samples in 1 logs .*\): score them first"):
        read_inspect_log(path)


def test_bad_paths(tmp_path):
    with pytest.raises(EvalDataError, match=r"`path_or_paths`: no such file or folder"):
        read_inspect_log(tmp_path / "missing.eval")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(EvalDataError, match=r"is not an Inspect log; expected a .eval or .json file"):
        read_inspect_log(tmp_path / "notes.txt")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(EvalDataError, match=r"holds no Inspect logs"):
        read_inspect_log(empty)
    with pytest.raises(EvalDataError, match=r"`errors` must be 'fail' or 'exclude'; got 'skip'"):
        read_inspect_log(empty, errors="skip")


@pytest.mark.slow
def test_json_log_reads_like_the_eval_log(logs, tmp_path):
    _, by = logs
    src = by[("toy", "mockllm/agree")]
    path = tmp_path / "same.json"
    write_eval_log(read_eval_log(src), str(path))  # inspect-ai's own .json format
    a = read_inspect_log(src, scorer="match")
    b = read_inspect_log(path, scorer="match")
    assert a.drop_attrs().identical(b.drop_attrs())


@pytest.mark.slow
def test_cli_reads_json_logs_a_file_and_a_folder_as_the_library_does(logs, tmp_path, capsys):
    # the CLI once took only .eval as Inspect: a .json log was refused as an unknown table type
    # and a folder of them was read as a Parquet folder
    from hierbench.cli import main

    _, by = logs
    folder = tmp_path / "json_logs"
    folder.mkdir()
    for name in ("agree", "contrary"):  # named as inspect eval names them (a folder is read by name)
        path = folder / f"2026-01-02T03-04-05+00-00_toy_{name}.json"
        write_eval_log(read_eval_log(by[("toy", f"mockllm/{name}")]), str(path))
    (folder / "logs.json").write_text("{}")  # not a log: Inspect's listing skips it, and so does the CLI
    one = next(folder.glob("*agree.json"))
    for target in (one, folder):
        assert main(["summary", str(target), "--scorer", "match", "--json"]) == 0
        got = {r["agent"]: r["mean_score"] for r in json.loads(capsys.readouterr().out)["agents"]}
        lib = read_inspect_log(str(target), scorer="match")
        want = lib["score"].mean("run").mean("task")  # per-task means, then over tasks
        assert got == pytest.approx({str(a): float(want.sel(agent=a)) for a in lib["agent"].values})
    assert main(["summary", str(one), "--agent", "model"]) == 2  # a table flag
    assert "is read as Inspect logs" in capsys.readouterr().err


@pytest.mark.slow
def test_bool_noanswer_and_partial_values_use_inspects_conversion(logs):
    _, by = logs
    ds = read_inspect_log(by[("toy", "mockllm/agree")], scorer="mixed")
    # inspect's value_to_float: True -> 1, "N" -> 0, "P" -> 0.5
    np.testing.assert_array_equal(ds.score.sel(task="s1").values.ravel(), [1.0] * 3)
    np.testing.assert_array_equal(ds.score.sel(task="s2").values.ravel(), [0.0] * 3)  # run 2 errored: 0
    np.testing.assert_array_equal(ds.score.sel(task="s3").values.ravel(), [0.5] * 3)


@pytest.mark.slow
def test_same_log_twice_is_a_named_duplicate(logs):
    _, by = logs
    f = by[("toy", "mockllm/agree")]
    with pytest.raises(EvalDataError, match=r"duplicate \(agent, sample, epoch\): 18 samples appear in more than one log"):
        read_inspect_log([f, f], scorer="match")


@pytest.mark.slow
def test_cli_reads_inspect_logs(logs, capsys):
    from hierbench.cli import main

    log_dir, _ = logs
    assert main(["summary", str(log_dir), "--scorer", "match", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    agents = {r["agent"]: r for r in res["agents"]}
    assert agents["mockllm/agree [toy]"]["n_runs"] == 9
    assert agents["mockllm/agree [toy]"]["n_error"] == 1
    # agree: s1 always right; s2, s3 wrong -> per-task means (1, 0, 0)
    assert agents["mockllm/agree [toy]"]["mean_score"] == pytest.approx(1 / 3)
    assert main(["validate", str(log_dir)]) == 2  # the CLI exits 2 on invalid input
    assert "several scorers" in capsys.readouterr().err


@pytest.mark.slow
def test_cli_uses_scorer_and_errors_on_inspect_logs_and_refuses_table_flags(logs, capsys):
    from hierbench.cli import main

    log_dir, _ = logs
    # 4 logs x 3 samples x 3 epochs; s2's epoch 2 errors in each log, not kept under exclude
    for policy, kept in (("fail", 36), ("exclude", 32)):
        assert main(["validate", str(log_dir), "--scorer", "match", "--errors", policy, "--json"]) == 0
        rep = json.loads(capsys.readouterr().out)
        assert (rep["n_records_read"], rep["n_records_kept"], rep["errors"]) == (36, kept, policy)
    # a table's column flag names no column of an Inspect log: refused, not ignored
    assert main(["summary", str(log_dir), "--scorer", "match", "--agent", "model"]) == 2
    err = capsys.readouterr().err
    assert f"LOG {str(log_dir)!r} is read as Inspect logs" in err and "does not use --agent model" in err


@pytest.mark.slow
def test_cli_reads_several_inspect_logs_given_one_by_one(logs, capsys):
    """`hierbench summary a.eval b.eval` reads what `read_inspect_log([a, b])` reads."""
    from hierbench.cli import main

    _, by = logs
    paths = [str(by[("toy", "mockllm/agree")]), str(by[("toy", "mockllm/contrary")])]
    assert main(["summary", *paths, "--scorer", "match", "--json"]) == 0
    got = {r["agent"]: r["mean_score"] for r in json.loads(capsys.readouterr().out)["agents"]}
    # by hand (MATCH above; s2's second epoch errors and counts as a failure under errors='fail'):
    # agree (1, 0, 0) per task; contrary (0, 2/3, 1)
    assert got == pytest.approx({"mockllm/agree": 1 / 3, "mockllm/contrary": 5 / 9})


@pytest.mark.slow
def test_corrupt_log_in_a_folder_is_named_counted_and_the_rest_read(logs, tmp_path):
    import shutil

    from hierbench.data import InspectLogWarning

    log_dir, _ = logs
    folder = tmp_path / "logs"
    shutil.copytree(log_dir, folder)
    bad = folder / "2026-01-01T00-00-00_broken_abc.eval"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.warns(InspectLogWarning, match=r"1 of 5 Inspect logs could not be read and were left out: .*broken_abc\.eval"):
        ds = read_inspect_log(folder, scorer="match")
    assert ds.attrs["n_records_read"] == 36  # the four good logs, 9 samples each
    assert ds.attrs["n_logs_read"] == 4
    assert list(json.loads(ds.attrs["unreadable_logs"])) == [str(bad)]
    with pytest.raises(EvalDataError, match=r"`path_or_paths`: .*broken_abc\.eval could not be read as an Inspect log"):
        read_inspect_log(bad, scorer="match")


@pytest.mark.slow
def test_cancelled_log_warns_with_its_sample_count(logs, tmp_path):
    from hierbench.data import InspectLogWarning

    _, by = logs
    log = read_eval_log(by[("toy", "mockllm/agree")])
    log.samples = log.samples[:3]
    log.status = "cancelled"
    path = tmp_path / "cancelled.eval"
    write_eval_log(log, str(path))
    with pytest.warns(InspectLogWarning, match=r"1 Inspect logs did not finish.*cancelled\.eval \(status 'cancelled', 3 of 9 samples\)"):
        ds = read_inspect_log(path, scorer="match")
    assert ds.attrs["n_records_read"] == 3
    assert json.loads(ds.attrs["incomplete_logs"]) == {str(path): "status 'cancelled', 3 of 9 samples"}


@pytest.mark.slow
def test_sample_ids_int_and_text_across_logs_are_refused_naming_the_logs(logs, tmp_path):
    _, by = logs
    a = read_eval_log(by[("toy", "mockllm/agree")])
    b = read_eval_log(by[("toy", "mockllm/contrary")])
    for s in a.samples:
        s.id = {"s1": 1, "s2": 2, "s3": 3}[s.id]
    for s in b.samples:
        s.id = {"s1": "1", "s2": "2", "s3": "3"}[s.id]
    write_eval_log(a, str(tmp_path / "ints.eval"))
    write_eval_log(b, str(tmp_path / "texts.eval"))
    with pytest.raises(EvalDataError, match=r"sample id in the Inspect logs \[.*ints\.eval.*texts\.eval.*\] mixes numbers and text"):
        read_inspect_log(tmp_path, scorer="match")


# ---------------------------------------------------------------- bad inputs (the readers' sweep)

AGREE = ("toy", "mockllm/agree")
INSPECT_SWEEP = {
    "a list of numbers": (lambda f, tmp: read_inspect_log([1, 2]), r"`path_or_paths` must list paths of log files or folders; it holds \[1, 2\]"),
    "bytes": (lambda f, tmp: read_inspect_log(str(f).encode()), r"`path_or_paths` must be a log file, a folder of logs or a non-empty list"),
    "an empty list": (lambda f, tmp: read_inspect_log([]), r"`path_or_paths` must be a log file, a folder of logs or a non-empty list of log files; got \[\]"),
    "None": (lambda f, tmp: read_inspect_log(None), r"`path_or_paths` must be a log file.*got None"),
    "a list with a missing file": (lambda f, tmp: read_inspect_log([f, tmp / "nope.eval"]), r"`path_or_paths`: no such file or folder '.*nope\.eval'"),
    "value_map a list": (lambda f, tmp: read_inspect_log(f, scorer="match", value_map=["C"]), r"`value_map` must be a mapping \{value: score\}, e\.g\. \{'P': 0\.0\}; got list"),
    "value_map to 2": (lambda f, tmp: read_inspect_log(f, scorer="match", value_map={"C": 2.0}), r"scorer 'match' value 'C' of sample 's1' epoch 1 in .*\.eval maps to 2\.0: a score must lie in \[0, 1\]"),
    "value_map to -1": (lambda f, tmp: read_inspect_log(f, scorer="match", value_map={"I": -1}), r"value 'I' of sample 's2' epoch 1 in .* maps to -1\.0: a score must lie in \[0, 1\]"),
    "value_map to NaN": (lambda f, tmp: read_inspect_log(f, scorer="match", value_map={"C": float("nan")}), r"value 'C' of sample 's1' epoch 1 in .* maps to nan: a score must lie in \[0, 1\]"),
    "value_map to text": (lambda f, tmp: read_inspect_log(f, scorer="match", value_map={"C": "x"}), r"value 'C' of sample 's1' epoch 1 in .* cannot be mapped to a score \(could not convert string to float: 'x'\); map such values with `value_map`"),
    "scorer a number": (lambda f, tmp: read_inspect_log(f, scorer=5), r"`scorer` 5 is not in the Inspect logs; available scorers \['answer_length', 'match', 'mixed'\]"),
    "agent unknown": (lambda f, tmp: read_inspect_log(f, scorer="match", agent="x"), r"`agent` must be 'auto', 'model', 'model\+task' or 'model\+variant'; got 'x'"),
    "errors None": (lambda f, tmp: read_inspect_log(f, scorer="match", errors=None), r"`errors` must be 'fail' or 'exclude'; got None"),
    "a text file named .eval": (lambda f, tmp: read_inspect_log(_text(tmp / "x.eval")), r"`path_or_paths`: .*x\.eval could not be read as an Inspect log"),
}  # fmt: skip


def _text(p):
    p.write_text("not a log")
    return p


@pytest.mark.slow
@pytest.mark.parametrize(("make", "pattern"), list(INSPECT_SWEEP.values()), ids=list(INSPECT_SWEEP))
def test_bad_inputs_are_refused_by_name(make, pattern, logs, tmp_path):
    _, by = logs
    with pytest.raises(EvalDataError, match=pattern):
        make(by[AGREE], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(("scorer", "kind"), [("match", "binary"), ("mixed", "mixed"), ("answer_length", "mixed")])
def test_the_score_kind_is_recorded(logs, scorer, kind):
    """match: 1/0; mixed: 1 / 0.5 / 0 ("P" is partial credit); answer_length: len/10 beside the
    errored run's 0 (the answers "yes"/"no" are 3 and 2 characters: 0.3 and 0.2).
    """
    _, by = logs
    ds = read_inspect_log(by[AGREE], scorer=scorer)
    assert ds.attrs["score_kind"] == kind
