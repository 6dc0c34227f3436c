"""Audit I (Inspect logs): tasks of different datasets, logs whose samples all errored, dict scores.

The logs are written here by inspect-ai itself with mock models: task ``qa`` holds samples
1, 2, 3 and task ``quiz`` samples 1, 2 (other questions, so sample 1 is another item); the
scorer ``parts`` gives dict values ``{"acc": ..., "fmt": ...}`` by hand, and a solver raises on
every sample of model ``mockllm/broken``. Every expected label and value follows from that.
"""

from __future__ import annotations

import json

import pytest
from inspect_ai import Task
from inspect_ai import eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput
from inspect_ai.scorer import Score
from inspect_ai.scorer import mean as mean_metric
from inspect_ai.scorer import scorer
from inspect_ai.solver import solver

from hierbench.cli import main
from hierbench.data import EvalDataError
from hierbench.data import read_inspect_log
from hierbench.data._schema import ErroredRunsWarning

#: the dict value scorer ``parts`` gives each sample of each task (acc, fmt)
PARTS = {("qa", 1): (1.0, 0.0), ("qa", 2): (0.0, 1.0), ("qa", 3): (1.0, 1.0), ("quiz", 1): (0.0, 0.0), ("quiz", 2): (1.0, 0.0)}


@solver
def answer():
    async def solve(state, generate):
        if str(state.model) == "mockllm/broken":
            raise RuntimeError("sandbox never started")
        state.output = ModelOutput.from_content(model=str(state.model), content="x")
        return state

    return solve


def _parts(task_name):
    @scorer(metrics=[mean_metric()])
    def parts():
        async def score(state, target):
            acc, fmt = PARTS[(task_name, state.sample_id)]
            return Score(value={"acc": acc, "fmt": fmt})

        return score

    return parts()


def _task(name, ids):
    return Task(
        dataset=[Sample(id=i, input=f"{name} question {i}", target="x") for i in ids],
        solver=[answer()], scorer=[_parts(name)], name=name,
    )  # fmt: skip


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    d = tmp_path_factory.mktemp("audit_i_inspect")
    out = {}
    for name, ids, model in (("qa", [1, 2, 3], "mockllm/model"), ("quiz", [1, 2], "mockllm/model"),
                             ("qa", [1, 2, 3], "mockllm/broken")):  # fmt: skip
        sub = d / f"{name}_{model.split('/')[1]}"
        (log,) = eval(_task(name, ids), model=model, log_dir=str(sub), fail_on_error=False, display="none")
        out[(name, model)] = log.location
    return out


@pytest.mark.slow
def test_tasks_of_different_datasets_key_samples_by_task(logs):
    ds = read_inspect_log([logs[("qa", "mockllm/model")], logs[("quiz", "mockllm/model")]], scorer="parts:acc")
    assert ds.task.values.tolist() == ["qa/1", "qa/2", "qa/3", "quiz/1", "quiz/2"]
    assert ds.agent.values.tolist() == ["mockllm/model"]  # one model over both tasks' samples
    assert ds.attrs["sample_key"].startswith("<inspect task>/<sample id>: the logs hold 2 Inspect tasks")
    assert ds.inspect_task.values.tolist() == ["qa", "qa", "qa", "quiz", "quiz"]  # a task coord now
    got = {t: float(ds.score.sel(task=t).item()) for t in ds.task.values}
    assert got == {f"{n}/{i}": PARTS[(n, i)][0] for n, i in PARTS}
    assert ds.attrs["scorer"] == "parts:acc"


@pytest.mark.slow
def test_dict_scores_need_a_key_and_a_key_needs_a_dict(logs):
    log = logs[("qa", "mockllm/model")]
    with pytest.raises(EvalDataError, match=r"scorer 'parts' gives dict values .*choose the key to read, e\.g\. "
                       r"scorer='parts:acc' \(keys \['acc', 'fmt'\]\)"):
        read_inspect_log(log, scorer="parts")
    with pytest.raises(EvalDataError, match=r"has no key 'x'; its keys are \['acc', 'fmt'\]"):
        read_inspect_log(log, scorer="parts:x")
    fmt = read_inspect_log(log, scorer="parts:fmt")
    assert fmt.score.values.ravel().tolist() == [PARTS[("qa", i)][1] for i in (1, 2, 3)]


@pytest.mark.slow
def test_a_log_whose_every_sample_errored_says_so(logs):
    broken = logs[("qa", "mockllm/broken")]
    for errors in ("fail", "exclude"):
        with pytest.raises(EvalDataError, match=r"all 3 samples in 1 logs .* errored \(infrastructure errors, e\.g\. "
                           r".*sandbox never started.*\); nothing to score"):
            read_inspect_log(broken, errors=errors)
    # beside a scored log of the same task: read, its 0s said to measure the infrastructure
    with pytest.warns(ErroredRunsWarning, match=r"1 agent in the Inspect logs .* with every run flagged as an "
                      r"infrastructure error: \['mockllm/broken \(3 runs\)'\]"):
        ds = read_inspect_log([logs[("qa", "mockllm/model")], broken], scorer="parts:acc")
    assert ds.error.sel(agent="mockllm/broken").values.ravel().tolist() == [True] * 3


@pytest.mark.slow
def test_cli_names_the_flag_for_a_key_and_json_source_is_a_list(logs, capsys):
    log = logs[("qa", "mockllm/model")]
    assert main(["validate", log, "--scorer", "parts"]) == 2
    err = capsys.readouterr().err
    assert "--scorer parts:acc" in err and "scorer=" not in err
    assert main(["summary", "--json", log, logs[("quiz", "mockllm/model")], "--scorer", "parts:acc"]) == 0
    rep = json.loads(capsys.readouterr().out)["dataset"]
    assert rep["source"] == [log, logs[("quiz", "mockllm/model")]]
    assert rep["sample_key"].startswith("<inspect task>/<sample id>")
