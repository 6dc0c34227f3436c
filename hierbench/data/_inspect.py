"""Reader for Inspect AI evaluation logs (``.eval`` or ``.json``) into the eval dataset.

inspect-ai is an optional dependency (the ``inspect`` extra) imported only
when a log is read. Only the per-sample summaries are read (scores, error,
limit, token usage, timings), never the transcripts, so large logs stay cheap.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from .._base import HierbenchWarning
from .._base import warn_user
from ._records import from_records
from ._schema import EvalDataError
from ._schema import _fmt_list
from ._schema import _not_kept_attr
from ._schema import check_option

__all__ = ["InspectLogWarning", "read_inspect_log"]

#: what a value Inspect cannot convert needs (the command line has no such option: it says so)
VALUE_MAP_HINT = "map such values with `value_map` (read_inspect_log in Python)"

AgentKey = Literal["auto", "model", "model+task"]


class InspectLogWarning(HierbenchWarning):
    """Some Inspect logs could not be read (left out), or did not finish (cancelled, errored)."""


def _planned_samples(header) -> int | None:
    """Return the samples x epochs the eval set out to run, when the log header says."""
    try:
        n = header.eval.dataset.samples
        sample_ids = header.eval.dataset.sample_ids
        if sample_ids:
            n = len(sample_ids)
        epochs = header.eval.config.epochs or 1
        limit = header.eval.config.limit
    except AttributeError:
        return None
    if n is None:
        return None
    if isinstance(limit, int):
        n = min(n, limit)
    elif isinstance(limit, (tuple, list)) and len(limit) == 2:
        n = min(n, int(limit[1]) - int(limit[0]))
    return int(n) * int(epochs)


def _inspect():
    try:
        from inspect_ai import log as ilog
        from inspect_ai.scorer import value_to_float
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "read_inspect_log needs inspect-ai: pip install 'hierbench[inspect]'"
        ) from exc
    return ilog, value_to_float()


def _log_files(path_or_paths, ilog) -> list[str]:
    if isinstance(path_or_paths, (str, os.PathLike)):
        items = [path_or_paths]
    elif isinstance(path_or_paths, Sequence) and not isinstance(path_or_paths, bytes) and path_or_paths:
        items = list(path_or_paths)
        odd = [v for v in items if not isinstance(v, (str, os.PathLike))]
        if odd:
            raise EvalDataError(
                f"`path_or_paths` must list paths of log files or folders; it holds {_fmt_list(odd, 5)}"
            )
    else:
        raise EvalDataError(
            "`path_or_paths` must be a log file, a folder of logs or a non-empty list of log files; "
            f"got {path_or_paths!r}"
        )
    files: list[str] = []
    for item in items:
        p = Path(item)
        if p.is_dir():
            found = sorted(
                info.name.removeprefix("file://") for info in ilog.list_eval_logs(str(p), recursive=True)
            )
            if not found:
                raise EvalDataError(f"`path_or_paths`: folder {str(p)!r} holds no Inspect logs (.eval or .json)")
            files.extend(found)
        elif p.is_file():
            if p.suffix not in (".eval", ".json"):
                raise EvalDataError(
                    f"`path_or_paths`: {str(p)!r} is not an Inspect log; expected a .eval or .json file"
                )
            files.append(str(p))
        else:
            raise EvalDataError(f"`path_or_paths`: no such file or folder {str(p)!r}")
    return files


def _score_mapper(value_map: Mapping | None, to_float: Callable) -> Callable[[object], float]:
    if value_map is not None and not isinstance(value_map, Mapping):
        raise EvalDataError(
            f"`value_map` must be a mapping {{value: score}}, e.g. {{'P': 0.0}}; got {type(value_map).__name__}"
        )

    def convert(value: object) -> float:
        if value_map is not None:
            key = value if not isinstance(value, list) else tuple(value)
            if isinstance(key, (str, int, float, bool)) and key in value_map:
                return float(value_map[key])
        if value is None:
            return float("nan")
        if isinstance(value, (dict, list, tuple)):
            raise TypeError(f"a {type(value).__name__} value {value!r}")
        return float(to_float(value))

    return convert


def _read_logs(files: list[str], ilog, single: bool) -> tuple[list, dict[str, str]]:
    """(file, header, sample summaries) of each readable log, and why the others could not be read."""
    logs, unreadable = [], {}
    for f in files:
        try:
            header = ilog.read_eval_log(f, header_only=True)
            summaries = ilog.read_eval_log_sample_summaries(f)
        except Exception as exc:  # a corrupt or truncated log: name it, read the others
            if single:
                raise EvalDataError(
                    f"`path_or_paths`: {f} could not be read as an Inspect log "
                    f"({type(exc).__name__}: {exc})"
                ) from exc
            unreadable[f] = f"{type(exc).__name__}: {exc}"
            continue
        logs.append((f, header, summaries))
    if unreadable and not logs:
        raise EvalDataError(
            f"`path_or_paths`: none of the {len(files)} Inspect logs could be read: "
            + "; ".join(f"{f} ({why})" for f, why in list(unreadable.items())[:5])
        )
    if unreadable:
        warn_user(
            f"{len(unreadable)} of {len(files)} Inspect logs could not be read and were left out: "
            + "; ".join(f"{f} ({why})" for f, why in list(unreadable.items())[:5])
            + ("" if len(unreadable) <= 5 else f"; ... ({len(unreadable) - 5} more)")
            + "; the others were read (counted in attrs['unreadable_logs'])",
            InspectLogWarning,
        )
    return logs, unreadable


def _incomplete_logs(logs: list) -> dict[str, str]:
    """Return the logs that did not finish (status, or fewer samples than planned), with a warning."""
    incomplete = {}
    for f, header, summaries in logs:
        planned = _planned_samples(header)
        status = getattr(header, "status", None)
        if status != "success" or (planned is not None and len(summaries) < planned):
            incomplete[f] = (
                f"status {status!r}, {len(summaries)} of "
                f"{planned if planned is not None else '?'} samples"
            )
    if incomplete:
        warn_user(
            f"{len(incomplete)} Inspect logs did not finish, so their tasks have fewer runs than "
            "planned (and the missing samples may not be missing at random): "
            + "; ".join(f"{f} ({why})" for f, why in list(incomplete.items())[:5])
            + ("" if len(incomplete) <= 5 else f"; ... ({len(incomplete) - 5} more)"),
            InspectLogWarning,
        )
    return incomplete


def _choose_scorer(logs: list, files: list[str], scorer: str | None) -> tuple[str, str | None]:
    """Return (scorer, key): the scorer whose value is the score, and the key of a dict value.

    The scorer given, or the only one in the logs; for a scorer giving dict values, the key
    read (``scorer="s1:acc"``; None: none).
    """
    scorers_seen: dict[str, int] = {}
    n_samples = n_errored = 0
    first_error = None
    for _, _, summaries in logs:
        for s in summaries:
            n_samples += 1
            if s.error:
                n_errored += 1
                first_error = first_error or str(getattr(s.error, "message", s.error))
            for name in s.scores or {}:
                scorers_seen[name] = scorers_seen.get(name, 0) + 1
    where = f"in {len(files)} logs {_fmt_list(files, 5)}"
    if not scorers_seen and n_samples and n_errored == n_samples:
        raise EvalDataError(
            f"all {n_samples} samples {where} errored (infrastructure errors, e.g. "
            f"{(first_error or '?')[:200]!r}); nothing to score: fix the cause and run the eval again"
        )
    if not scorers_seen:
        raise EvalDataError(
            f"the Inspect logs hold no scores ({n_samples} samples {where}"
            + (f", {n_errored} of them errored" if n_errored else "")
            + "): score them first (`inspect score`)"
        )
    if scorer is None:
        if len(scorers_seen) > 1:
            raise EvalDataError(
                f"the Inspect logs hold several scorers {_fmt_list(sorted(scorers_seen))}; "
                f"choose one, e.g. scorer={sorted(scorers_seen)[0]!r}"
            )
        return next(iter(scorers_seen)), None
    if scorer not in scorers_seen and isinstance(scorer, str) and ":" in scorer:
        name, key = scorer.rsplit(":", 1)
        if name in scorers_seen and key:
            return name, key
    if scorer not in scorers_seen:
        raise EvalDataError(
            f"`scorer` {scorer!r} is not in the Inspect logs; available scorers "
            f"{_fmt_list(sorted(scorers_seen))} (a scorer giving dict values: 'name:key')"
        )
    return scorer, None


def _score_value(sc, scorer: str, key: str | None, what: str):
    """The value of a sample's score: the whole value, or its ``key`` for a dict-valued scorer."""
    value = sc.value
    if isinstance(value, dict):
        keys = sorted(map(str, value))
        if key is None:
            raise EvalDataError(
                f"scorer {scorer!r} gives dict values ({value!r} {what}): a score is one number, so "
                f"choose the key to read, e.g. scorer={f'{scorer}:{keys[0]}' if keys else scorer!r} "
                f"(keys {_fmt_list(keys)})"
            )
        if key not in value:
            raise EvalDataError(
                f"scorer {scorer!r} value {value!r} {what} has no key {key!r}; its keys are {_fmt_list(keys)}"
            )
        return value[key]
    if key is not None:
        raise EvalDataError(
            f"`scorer` {scorer + ':' + key!r} reads the key {key!r} of dict values, but scorer "
            f"{scorer!r} gives {value!r} {what}, not a dict; give the scorer alone, scorer={scorer!r}"
        )
    if isinstance(value, (list, tuple)):
        raise EvalDataError(
            f"scorer {scorer!r} gives list values ({value!r} {what}): a score is one number, and "
            "list-valued scores are not read; score the log with a scorer that gives one value"
        )
    return value


def _sample_row(s, f: str, key: str, read: tuple, convert, model: str, task: str) -> dict | None:
    """One record per sample (None: no score and no error); ``read``: (scorer, dict key or None, task key)."""
    scorer, score_key, sample_key = read
    err = bool(s.error)
    sc = (s.scores or {}).get(scorer)
    if sc is None and not err:
        return None
    if err:
        value = np.nan
    else:
        what = f"of sample {s.id!r} epoch {s.epoch} in {f}"
        raw = _score_value(sc, scorer, score_key, what)
        try:
            value = convert(raw)
        except (TypeError, ValueError) as exc:
            raise EvalDataError(
                f"scorer {scorer!r} value {raw!r} {what} cannot be mapped to a score ({exc}); "
                f"{VALUE_MAP_HINT}, e.g. value_map={{{raw!r}: 0.5}}"
            ) from exc
        if not 0.0 <= value <= 1.0:  # NaN too: a sample with a score object but no score
            raise EvalDataError(
                f"scorer {scorer!r} value {raw!r} {what} maps to {value!r}: a score must lie in "
                f"[0, 1]; rescale the scores, or {VALUE_MAP_HINT}"
            )
    usage = s.model_usage or {}
    tokens = sum(u.total_tokens or 0 for u in usage.values()) if usage else np.nan
    costs = [u.total_cost for u in usage.values() if u.total_cost is not None]
    return {
        "agent": key,
        "task": f"{task}/{s.id}" if sample_key else s.id,
        "run": int(s.epoch),
        "score": value,
        "error": err,
        "hit_limit": s.limit is not None,
        "tokens": float(tokens),
        "latency": np.nan if s.total_time is None else float(s.total_time),
        "working_time": np.nan if s.working_time is None else float(s.working_time),
        "cost": float(sum(costs)) if costs else np.nan,
        "model": model,
        "inspect_task": task,
        "file": f,
    }


def _sample_rows(logs: list, read: tuple, convert, use_task: bool) -> tuple[list[dict], int]:
    """(one record per scored or errored sample, samples with neither); ``read`` as ``_sample_row``'s."""
    rows, n_unscored = [], 0
    for f, header, summaries in logs:
        model = header.eval.model
        task_name = header.eval.task
        key = f"{model} [{task_name}]" if use_task else model
        for s in summaries:
            row = _sample_row(s, f, key, read, convert, model, task_name)
            if row is None:
                n_unscored += 1
            else:
                rows.append(row)
    return rows, n_unscored


def _datasets(logs: list) -> dict[str, tuple]:
    """Per Inspect task: (its dataset's name, its sample ids as text), from the log headers.

    The ids are the header's ``eval.dataset.sample_ids`` (the samples the eval set out to
    run), or those of the samples read when the header does not list them.
    """
    out: dict[str, tuple] = {}
    for _, header, summaries in logs:
        ds = getattr(header.eval, "dataset", None)
        ids = getattr(ds, "sample_ids", None) or [s.id for s in summaries]
        name, known = out.get(header.eval.task, (getattr(ds, "name", None), frozenset()))
        out[header.eval.task] = (name, known | {(type(i).__name__, str(i)) for i in ids})
    return out


def _keys_samples_by_task(logs: list) -> str | None:
    """Why samples are keyed ``"<task>/<sample id>"`` (None: by their ids, one dataset).

    Logs of several Inspect tasks share sample ids only when the tasks run one dataset (task
    variants: same dataset name, same sample ids); otherwise sample 1 of one task and sample
    1 of another are different items. A key that two (task, id) pairs would share (a task
    name holding '/') is refused.
    """
    per_task = _datasets(logs)
    if len(per_task) < 2 or len(set(per_task.values())) == 1:
        return None
    keys: dict[str, set] = {}
    for task, (_, ids) in per_task.items():
        for kind, i in ids:
            keys.setdefault(f"{task}/{i}", set()).add((task, kind, i))
    shared = {k: v for k, v in keys.items() if len(v) > 1}
    if shared:
        ex = [f"{k!r} from " + " and ".join(f"task {t!r} sample {i!r} ({kd})" for t, kd, i in sorted(v))
              for k, v in list(shared.items())[:3]]  # fmt: skip
        raise EvalDataError(
            f"the Inspect logs hold {len(per_task)} tasks whose datasets differ, so their samples are "
            f"keyed '<task>/<sample id>', but {len(shared)} keys would stand for two samples: {'; '.join(ex)}. "
            "Read each task's logs separately"
        )
    what = "; ".join(
        f"{t}: {'an unnamed dataset' if name is None else f'dataset {name!r}'}, {len(ids)} samples"
        for t, (name, ids) in sorted(per_task.items())
    )
    return (
        f"<inspect task>/<sample id>: the logs hold {len(per_task)} Inspect tasks whose datasets differ "
        f"({what}), so a sample id names different items in different tasks"
    )


def _inspect_report(ds, files, logs, scorer, n_unscored, unreadable, incomplete) -> dict:
    """Return the read report of the Inspect logs: which were read, the scorer, samples read and kept."""
    not_kept = json.loads(ds.attrs["not_kept"])
    if n_unscored:
        not_kept[f"no score from scorer {scorer!r} (and no error)"] = n_unscored
    return {
        "reader": "read_inspect_log",
        "source": json.dumps(files),
        "scorer": scorer,
        "inspect_tasks": json.dumps(sorted({h.eval.task for _, h, _ in logs})),
        "inspect_status": json.dumps({f: h.status for f, h, _ in logs}),
        "n_logs_read": len(logs),
        "unreadable_logs": json.dumps(unreadable),
        "incomplete_logs": json.dumps(dict(incomplete)),
        "n_records_read": int(sum(len(s) for *_, s in logs)),
        "n_records_kept": int(ds.attrs["n_records_kept"]),
        "not_kept": _not_kept_attr(not_kept),
    }


def _in_log_words(text: str, logs: list) -> str:
    """A record reader's message about the sample records, in the words of the Inspect logs."""
    names = _fmt_list([f for f, *_ in logs], 5)
    return (
        text.replace("in DataFrame", f"in the Inspect logs {names}")
        .replace("`task` column 'task'", "sample id")
        .replace("`agent` column 'agent'", "agent (model)")
        .replace("`error` column 'error'", "the samples' `error`")
    )


def _samples_dataset(rows: list[dict], logs: list, errors: str, by_task: bool = False) -> xr.Dataset:
    """Return the eval dataset of the sample records (epochs are the runs), errors naming the logs.

    ``by_task``: samples keyed ``"<task>/<id>"``, so ``inspect_task`` is a task coord (else an agent coord).
    """
    df = pd.DataFrame(rows)
    dup = df.duplicated(["agent", "task", "run"], keep=False)
    if dup.any():
        where = sorted({r["file"] for r, d in zip(rows, dup, strict=True) if d})
        ex = df.loc[dup, ["agent", "task", "run"]].astype(str).agg("/".join, axis=1).tolist()
        raise EvalDataError(
            f"duplicate (agent, sample, epoch): {int(dup.sum())} samples appear in more than one log "
            f"(e.g. {_fmt_list(ex, 4)}), in {_fmt_list(where, 5)}; pass each evaluation's log once "
            "(a re-run of the same model and task is a separate dataset)"
        )
    df = df.drop(columns="file")
    extra = ["tokens", "latency", "working_time"]
    if df["cost"].notna().any():
        extra.append("cost")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ds = from_records(
                df, agent="agent", task="task", run="run", score="score", error="error", extra=extra,
                annotations=["hit_limit"], agent_coords=["model"] if by_task else ["model", "inspect_task"],
                task_coords=["inspect_task"] if by_task else [], errors=errors,
                run_index="label",  # epochs are shared occasions, however few samples a log holds
            )
    except EvalDataError as exc:
        raise EvalDataError(_in_log_words(str(exc), logs)) from exc
    for w in caught:  # said again in the logs' words
        warn_user(_in_log_words(str(w.message), logs), w.category)
    return ds


def read_inspect_log(
    path_or_paths: str | os.PathLike | Sequence[str | os.PathLike],
    *,
    scorer: str | None = None,
    value_map: Mapping[object, float] | None = None,
    errors: Literal["fail", "exclude"] = "fail",
    agent: AgentKey = "auto",
) -> xr.Dataset:
    """Read Inspect AI evaluation logs into the canonical eval dataset.

    Samples become tasks, epochs become runs and the model becomes the agent.

    Parameters
    ----------
    path_or_paths : path, folder or list of paths
        ``.eval`` or ``.json`` logs written by ``inspect eval``; a folder is
        searched recursively.
    scorer : str, optional
        Which scorer's value is the score. Required when the logs hold more
        than one scorer; the error lists those available. A scorer giving
        dict values (``Score(value={"acc": 1.0, "fmt": 0.0})``) is read
        through one key, written ``"name:key"`` (``scorer="s1:acc"``); without
        a key such a scorer is refused, naming its keys.
    value_map : mapping, optional
        Values to map before Inspect's own conversion, e.g.
        ``{"P": 0.0}`` to count partial credit as failure. Otherwise Inspect's
        ``inspect_ai.scorer.value_to_float`` maps ``"C"``/``"I"``/``"P"``/
        ``"N"`` to 1 / 0 / 0.5 / 0, booleans, ``"yes"``/``"no"`` and numbers.
    errors : {"fail", "exclude"}
        Policy for samples whose ``error`` is set (infrastructure errors):
        count as a failure (default) or as not run. Either way they are
        flagged in ``error`` and counted.
    agent : {"auto", "model", "model+task"}
        The agent key. ``"auto"`` uses the model when every log runs the same
        task and ``"<model> [<task>]"`` when the logs hold several tasks on one
        dataset (task variants such as different solvers: the same dataset
        name and sample ids). Tasks whose datasets differ are different items
        under the same sample ids: their samples are keyed
        ``"<task>/<sample id>"`` (``attrs["sample_key"]`` says so and why) and
        ``"auto"`` uses the model.

    Returns
    -------
    xarray.Dataset
        The eval dataset with per-run ``tokens`` (total over models),
        ``latency`` (the sample's total time, s), ``working_time`` (s),
        ``cost`` when the log records it, and the annotation ``hit_limit``
        (the sample stopped at a token/message/time limit: the agent's own
        failure, so its score stands). Agent coords ``model`` and
        ``inspect_task``. ``attrs`` record the scorer, the files, records read
        and kept, why any were not kept (e.g. samples without a score), and
        how samples were keyed as tasks (``sample_key``).

    Warns
    -----
    InspectLogWarning
        Logs of a folder or list that could not be read (corrupt, truncated:
        left out, named and counted in ``attrs["unreadable_logs"]``; the
        others are read), and logs that did not finish (status other than
        ``success``, or fewer samples than the dataset x epochs planned;
        listed in ``attrs["incomplete_logs"]``).

    Raises
    ------
    EvalDataError
        A single log file that cannot be read (named), no readable logs, no
        logs, a log with no scores (or whose every sample errored: nothing
        to score), several scorers and no ``scorer``, an unknown scorer, a
        dict value without a key, or a value that cannot be mapped to a number.

    Examples
    --------
    A folder of logs written by ``inspect eval ... --epochs 5``, scored by two
    scorers (tests/test_data_inspect.py runs this on logs inspect-ai writes)::

        ds = read_inspect_log("logs/", scorer="match")
        ds.score.sizes      # {'agent': ..., 'task': <samples>, 'run': 5}
    """
    check_option(errors, "errors", ("fail", "exclude"))
    check_option(agent, "agent", ("auto", "model", "model+task"))
    ilog, to_float = _inspect()
    convert = _score_mapper(value_map, to_float)
    files = _log_files(path_or_paths, ilog)
    logs, unreadable = _read_logs(files, ilog, isinstance(path_or_paths, (str, os.PathLike)) and Path(path_or_paths).is_file())
    incomplete = _incomplete_logs(logs)
    by_task = _keys_samples_by_task(logs)
    several = len({h.eval.task for _, h, _ in logs}) > 1
    use_task = agent == "model+task" or (agent == "auto" and several and by_task is None)
    scorer, score_key = _choose_scorer(logs, files, scorer)
    rows, n_unscored = _sample_rows(logs, (scorer, score_key, by_task is not None), convert, use_task)
    if not rows:
        n_read = sum(len(s) for *_, s in logs)
        raise EvalDataError(f"no sample in the Inspect logs has a score for scorer {scorer!r} ({n_read} samples read)")
    ds = _samples_dataset(rows, logs, errors, by_task is not None)
    scorer_read = scorer if score_key is None else f"{scorer}:{score_key}"
    ds.attrs.update(_inspect_report(ds, files, logs, scorer_read, n_unscored, unreadable, incomplete))
    ds.attrs["sample_key"] = by_task or "<sample id>: the samples of one dataset"
    for key in ("agent_column", "task_column"):  # the agent is the log's model, not a column
        ds.attrs.pop(key, None)
    return ds
