"""read_inspect_log on what an Inspect log says beyond a score: no verdict, unknown words, invalidated
samples, unnamed datasets, task versions, errors, eval-retry (audit I of the Inspect reader).

The logs are written here by inspect-ai itself (mock model, a solver that answers without the
model): task ``verdicts`` (automatic ids 1..6) has scorer ``verdict`` (sample 1
``Score.unscored()``, then C, I, C, P; sample 6 errors) and scorer ``words`` (sample 1 "maybe",
2 "c", then strings Inspect knows); tasks ``arith`` and ``poetry`` run unnamed in-memory datasets
with automatic ids and other questions; task ``calc`` runs at versions 1 and 2. Expected values
come from Inspect's own results in the log headers, its ``value_to_float``, or by hand.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC
from datetime import datetime

import numpy as np
import pytest
from inspect_ai import Task
from inspect_ai import eval
from inspect_ai import eval_retry
from inspect_ai import task
from inspect_ai.dataset import MemoryDataset
from inspect_ai.dataset import Sample
from inspect_ai.log import ProvenanceData
from inspect_ai.log import invalidate_samples
from inspect_ai.log import read_eval_log
from inspect_ai.log import write_eval_log
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import Score
from inspect_ai.scorer import accuracy
from inspect_ai.scorer import scorer
from inspect_ai.scorer import value_to_float
from inspect_ai.solver import solver

from hierbench.data import EvalDataError
from hierbench.data import InspectLogWarning
from hierbench.data import read_inspect_log

#: per sample of ``verdicts``: (verdict value, words value); sample 6 errors (no score)
VERDICTS = {1: ("unscored", "maybe"), 2: ("C", "c"), 3: ("I", "yes"), 4: ("C", "0.25"), 5: ("P", "N")}
#: strings value_to_float knows, each read as Inspect reads it
KNOWN = ["C", "I", "P", "N", "yes", "No", "TRUE", "false", "0.25", "1", "1e-1"]


@solver
def answer(fail_on=()):
    async def solve(state, generate):
        if state.sample_id in fail_on:
            raise RuntimeError(f"sandbox died on sample {state.sample_id}")
        state.output = ModelOutput.from_content(model=str(state.model), content="x")
        return state

    return solve


@scorer(metrics=[accuracy()])
def verdict():
    async def score(state, target):
        v = VERDICTS[state.sample_id][0]
        return Score.unscored(reason="grader refused") if v == "unscored" else Score(value=v)

    return score


@scorer(metrics=[accuracy()])
def words():
    async def score(state, target):
        return Score(value=VERDICTS[state.sample_id][1])

    return score


@scorer(metrics=[accuracy()])
def half():
    async def score(state, target):
        return Score(value="C" if state.sample_id % 2 else "I")

    return score


def _unnamed(name, word, n=3, fail_on=()):
    """A task on an unnamed in-memory dataset whose samples have no ids (Inspect numbers them 1..n)."""
    data = MemoryDataset([Sample(input=f"{word} {i}", target="x") for i in range(n)])
    return Task(dataset=data, solver=answer(fail_on), scorer=half(), name=name)


@task
def flaky():
    """A registered task (eval-retry finds a task by its registry name): sample 2 always errors."""
    return _unnamed("flaky", "q", fail_on=(2,))


# Running Inspect itself takes seconds (about 4 s for these logs, once), so the tests reading them
# are marked slow, as tests/test_data_inspect.py's are.
@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inspect_trust")
    verdicts = Task(
        dataset=MemoryDataset([Sample(input=f"q{i}", target="x") for i in range(1, 7)]),
        solver=answer(fail_on=(6,)), scorer=[verdict(), words()], name="verdicts", epochs=2,
    )  # fmt: skip
    calc1, calc2 = (Task(dataset=_unnamed("c", "add").dataset, solver=answer(), scorer=half(), name="calc",
                         version=v) for v in (1, 2))  # fmt: skip
    tasks = [verdicts, _unnamed("arith", "add"), _unnamed("poetry", "rhyme"), calc1, calc2]
    out = eval(tasks, model="mockllm/model", log_dir=str(d / "main"), fail_on_error=False, display="none")
    by = {}
    for lg in out:
        by.setdefault(lg.eval.task, []).append(lg.location)
    # an eval that stops at its first error, then `inspect eval-retry` of it (the same task id)
    (first,) = eval(flaky(), model="mockllm/model", log_dir=str(d / "retry"), display="none")
    (retry,) = eval_retry(first.location, log_dir=str(d / "retry"), display="none", fail_on_error=False)
    by["retry"] = [first.location, retry.location]
    return d, by


@pytest.fixture(scope="module")
def invalidated(logs, tmp_path_factory):
    """The verdicts log with samples 3 and 4 (both epochs) invalidated, written by Inspect."""
    _, by = logs
    log = read_eval_log(by["verdicts"][0])
    uuids = [s.uuid for s in log.samples if s.id in (3, 4)]
    when = datetime(2026, 1, 1, tzinfo=UTC)
    log = invalidate_samples(log, uuids, ProvenanceData(timestamp=when, author="me", reason="leaked answers"))
    path = tmp_path_factory.mktemp("inspect_invalidated") / "invalidated.eval"
    write_eval_log(log, str(path))
    return path


def _read(path, **kw):
    with pytest.warns(InspectLogWarning) as caught:
        ds = read_inspect_log(path, **kw)
    return ds, [str(w.message) for w in caught if issubclass(w.category, InspectLogWarning)]


@pytest.mark.slow
def test_unscored_samples_are_no_score_and_the_mean_is_inspects(logs):
    _, by = logs
    (f,) = by["verdicts"]
    ds, said = _read(f, scorer="verdict", errors="exclude")
    # Inspect's own result: accuracy over the scored samples, the unscored one counted apart
    (res,) = [s for s in read_eval_log(f, header_only=True).results.scores if s.name == "verdict"]
    assert (res.scored_samples, res.unscored_samples) == (4, 1)
    got = float(ds.score.mean("run").mean("task").item())
    assert got == pytest.approx(res.metrics["accuracy"].value)
    assert got == pytest.approx((1 + 0 + 1 + 0.5) / 4)  # by hand: C, I, C, P
    assert "1" not in ds.task.values.tolist()  # no score in any epoch: not a task read
    assert json.loads(ds.attrs["not_kept"])[
        "unscored by scorer 'verdict' (Score.unscored, NaN): excluded, as Inspect's metrics do"] == 2
    assert any("2 of 12 samples in the Inspect logs are unscored by scorer 'verdict' (Score.unscored(): "
               "value NaN, no verdict) (sample 1 epoch 1 in" in m and "neither a failure nor a success" in m
               for m in said)  # fmt: skip


@pytest.mark.slow
def test_unknown_strings_are_refused_naming_values_samples_and_value_map(logs):
    _, by = logs
    (f,) = by["verdicts"]
    with pytest.raises(EvalDataError, match=(
        r"scorer 'words' gives 2 string values that are not scores Inspect knows .*: 'maybe' on 2 samples "
        r"\(sample 1 epoch 1 in .*\); 'c' on 2 samples \(sample 2 epoch 1 in .*\)\. Inspect's value_to_float "
        r"reads such a value as 0 .* map such values with `value_map` .*, e\.g\. value_map=\{'maybe': 0\.5, 'c': 0\.5\}"
    )):  # fmt: skip
        read_inspect_log(f, scorer="words", errors="exclude")
    ds = read_inspect_log(f, scorer="words", errors="exclude", value_map={"maybe": 0.5, "c": 1.0})
    to_float = value_to_float()
    for i, (_, v) in VERDICTS.items():
        want = {"maybe": 0.5, "c": 1.0}.get(v, None)
        want = to_float(v) if want is None else want
        np.testing.assert_array_equal(ds.score.sel(task=str(i)).values.ravel(), [want, want])


def test_strings_inspect_knows_read_as_value_to_float_reads_them():
    from hierbench.data._inspect import _score_mapper

    to_float = value_to_float()
    convert = _score_mapper(None, to_float)
    assert [convert(v) for v in KNOWN] == [to_float(v) for v in KNOWN]
    assert [convert(v) for v in KNOWN] == [1.0, 0.0, 0.5, 0.0, 1.0, 0.0, 1.0, 0.0, 0.25, 1.0, 0.1]  # by hand
    for v in ("maybe", "c", "Correct", "nan", "inf", ""):
        assert to_float(v) == 0.0  # what Inspect would have read
        with pytest.raises(ValueError) as exc:
            convert(v)
        assert exc.value.args == (v,)


@pytest.mark.slow
def test_invalidated_samples_are_left_out_counted_and_said(logs, invalidated):
    assert read_eval_log(str(invalidated), header_only=True).invalidated
    ds, said = _read(invalidated, scorer="verdict", errors="exclude")
    # 1 unscored and 3, 4 invalidated: not read; 6 errored: read, not run (errors="exclude")
    assert sorted(ds.task.values.tolist()) == ["2", "5", "6"]
    assert json.loads(ds.attrs["not_kept"])["invalidated in the log (invalidate_samples): excluded"] == 4
    assert {(r["sample"], r["epoch"], r["reason"]) for r in json.loads(ds.attrs["invalidated_samples"])} == {
        (i, e, "leaked answers") for i in (3, 4) for e in (1, 2)}  # fmt: skip
    assert any(m.startswith("4 samples are invalidated in 1 Inspect logs") and "reasons ['leaked answers']" in m
               and "left out" in m for m in said)  # fmt: skip
    assert float(ds.score.mean("run").mean("task").item()) == pytest.approx((1 + 0.5) / 2)  # C and P, by hand


@pytest.mark.slow
def test_unnamed_datasets_with_automatic_ids_are_different_items(logs):
    _, by = logs
    ds = read_inspect_log([*by["arith"], *by["poetry"]])
    assert ds.task.values.tolist() == [f"{t}/{i}" for t in ("arith", "poetry") for i in (1, 2, 3)]
    assert ds.agent.values.tolist() == ["mockllm/model"]
    assert "3 shared sample ids hold other inputs or targets" in ds.attrs["sample_key"]


@pytest.mark.slow
def test_one_task_at_two_versions_is_refused_or_keyed_apart_on_request(logs):
    _, by = logs
    a, b = by["calc"]
    with pytest.raises(EvalDataError, match=(
        r"task 'calc' at 2 different versions or arguments \(version [12], task_args \{\} in .*; version [12], "
        r"task_args \{\} in .*\); results of a changed task .* agent='model\+variant'"
    )):  # fmt: skip
        read_inspect_log([a, b])
    ds = read_inspect_log([a, b], agent="model+variant")
    assert sorted(ds.agent.values.tolist()) == ["mockllm/model [calc v1]", "mockllm/model [calc v2]"]
    assert ds.task.values.tolist() == ["1", "2", "3"]  # the same items (same inputs under each id)


@pytest.mark.slow
def test_changed_dataset_under_one_task_is_refused(logs, tmp_path):
    _, by = logs
    log = read_eval_log(by["arith"][0])
    log.eval.model = "mockllm/other"
    for s in log.samples:
        s.input = s.input.replace("add", "subtract")
    write_eval_log(log, str(tmp_path / "other.eval"))
    with pytest.raises(EvalDataError, match=r"task 'arith' sample 1 has another input or target in .*other\.eval "
                       r"\('subtract 0'\) than in .* \('add 0'\): the task's dataset changed"):
        read_inspect_log([by["arith"][0], tmp_path / "other.eval"])


@pytest.mark.slow
def test_errors_as_failures_are_said_with_inspects_rule(logs):
    _, by = logs
    (f,) = by["verdicts"]
    ds, said = _read(f, scorer="verdict")
    assert ("2 samples in the Inspect logs errored (infrastructure errors; per agent mockllm/model: 2); under "
            "errors='fail' (the default) each scores 0, but Inspect's own metrics (e.g. accuracy, mean) leave "
            "errored samples out") in " ".join(said)  # fmt: skip
    assert "pass errors='exclude' to leave them out as Inspect does" in " ".join(said)
    # by hand: samples 2..5 (C, I, C, P) and the errored 6 as 0
    assert float(ds.score.mean("run").mean("task").item()) == pytest.approx(2.5 / 5)


@pytest.mark.slow
def test_cli_says_the_errors_rule_in_the_reading_notes(logs, capsys):
    from hierbench.cli import main

    _, by = logs
    assert main(["validate", by["arith"][0], "--json"]) == 0  # no error: nothing said
    assert "errored" not in capsys.readouterr().err
    log = by["verdicts"][0]
    assert main(["validate", log, "--scorer", "verdict"]) == 0
    err = capsys.readouterr().err
    assert "Inspect's own metrics" in err and "--errors exclude to leave them out as Inspect does" in err
    assert "unscored by scorer 'verdict'" in err


@pytest.mark.slow
def test_an_eval_retry_and_its_original_name_the_log_to_keep(logs):
    _, by = logs
    first, retry = by["retry"]
    assert read_eval_log(first, header_only=True).status == "error"
    with pytest.raises(EvalDataError, match=(
        r"these logs are of one evaluation \(the same eval\.task_id\): .* and the later '" + re.escape(retry)
        + r"' .*statuses error, success\)\. A log of `inspect eval-retry` holds the original's completed samples "
        r".* supersedes the original .* pass only the latest log of each task id"
    )), pytest.warns(InspectLogWarning, match="did not finish"):  # fmt: skip
        read_inspect_log([first, retry])  # the original stopped at its error
    ds, _ = _read(retry)
    assert ds.attrs["n_records_read"] == 3 and math.isclose(float(ds.error.sum()), 1.0)
