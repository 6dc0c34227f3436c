"""Reader for Inspect AI evaluation logs (``.eval`` or ``.json``) into the eval dataset.

inspect-ai is an optional dependency (the ``inspect`` extra) imported only
when a log is read. Only the per-sample summaries are read (scores, error,
limit, token usage, timings), never the transcripts, so large logs stay cheap.
"""

from __future__ import annotations

import hashlib
import json
import math
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

AgentKey = Literal["auto", "model", "model+task", "model+variant"]

#: string values Inspect's ``value_to_float`` knows besides finite numbers: its default sentinels
#: (compared exactly) and words (compared lowercased); it reads any other string as 0
_INSPECT_SENTINELS = ("C", "I", "P", "N")
_INSPECT_WORDS = ("yes", "true", "no", "false")

#: sample fields not needed to find a sample's invalidation (the transcript)
_TRANSCRIPT = {"messages", "events", "store", "attachments", "output"}


class InspectLogWarning(HierbenchWarning):
    """What the Inspect logs hold beyond scored samples, said with counts.

    Logs that could not be read (left out) or did not finish (cancelled, errored); samples
    unscored by the scorer (``Score.unscored()``) or invalidated (``invalidate_samples``),
    left out as Inspect leaves them out; errored samples read as failures (``errors="fail"``),
    which Inspect's own metrics leave out.
    """


class _UnknownValue(ValueError):
    """A string score Inspect's ``value_to_float`` does not know (it would read it as 0)."""


def _known_to_inspect(value: str) -> bool:
    """Whether Inspect's default ``value_to_float`` reads the string ``value`` as it means it."""
    if value in _INSPECT_SENTINELS or value.lower() in _INSPECT_WORDS:
        return True
    try:
        return math.isfinite(float(value.lower()))
    except ValueError:
        return False


def _is_unscored(value: object) -> bool:
    """Inspect's "no verdict" (``Score.unscored()``): a NaN value, which its metrics skip."""
    return isinstance(value, float) and math.isnan(value)


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
        if isinstance(value, str) and not _known_to_inspect(value):
            raise _UnknownValue(value)  # value_to_float would read it as 0 with a log line only
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


def _invalidated(logs: list, ilog) -> dict[str, dict]:
    """Per log whose header says ``invalidated``: {(sample id, epoch): reason} of its invalidated samples.

    Inspect's ``invalidate_samples`` marks each sample (``EvalSample.invalidation``) and sets the
    header's ``invalidated``; the sample summaries do not carry the mark, so such a log is read
    whole once, without its transcripts.
    """
    out: dict[str, dict] = {}
    for f, header, _ in logs:
        if not getattr(header, "invalidated", False):
            continue
        full = ilog.read_eval_log(f, exclude_fields=_TRANSCRIPT)
        marks = {
            (str(s.id), s.epoch): getattr(s.invalidation, "reason", None) or "no reason given"
            for s in full.samples or [] if getattr(s, "invalidation", None) is not None
        }  # fmt: skip
        if marks:
            out[f] = marks
    return out


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
    """One record per sample (None: no score and no error); ``read``: (scorer, dict key or None, task key).

    A sample the scorer left unscored (``Score.unscored()``: a NaN value) gets a NaN score and no
    error flag (the caller leaves it out); a string Inspect does not know raises ``_UnknownValue``.
    """
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
            value = np.nan if _is_unscored(raw) else convert(raw)
        except _UnknownValue:
            raise
        except (TypeError, ValueError) as exc:
            raise EvalDataError(
                f"scorer {scorer!r} value {raw!r} {what} cannot be mapped to a score ({exc}); "
                f"{VALUE_MAP_HINT}, e.g. value_map={{{raw!r}: 0.5}}"
            ) from exc
        if not _is_unscored(raw) and not 0.0 <= value <= 1.0:  # NaN too: a value_map giving NaN
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


def _sample_rows(logs: list, read: tuple, convert, keys: tuple, invalid: dict) -> tuple[list[dict], dict]:
    """(one record per scored or errored sample, the samples left out by why); ``read`` as ``_sample_row``'s.

    ``keys``: (per log its task label, whether agents are "<model> [<label>]"); ``invalid``: the
    invalidated samples per log (``_invalidated``). Left out: ``"no_score"`` (a count), and lists
    of ``(sample, epoch, file)`` under ``"unscored"`` and ``"invalidated"``. Strings Inspect does
    not know are refused together, naming the values and samples.
    """
    labels, use_task = keys
    rows, left = [], {"no_score": 0, "unscored": [], "invalidated": []}
    unknown: dict[str, list] = {}
    for f, header, summaries in logs:
        model, label = header.eval.model, labels[f]
        key = f"{model} [{label}]" if use_task else model
        marked = invalid.get(f, {})
        for s in summaries:
            where = (s.id, s.epoch, f)
            if (str(s.id), s.epoch) in marked:
                left["invalidated"].append((*where, marked[(str(s.id), s.epoch)]))
                continue
            try:
                row = _sample_row(s, f, key, read, convert, model, label)
            except _UnknownValue as exc:
                unknown.setdefault(exc.args[0], []).append(where)
                continue
            if row is None:
                left["no_score"] += 1
            elif not row["error"] and np.isnan(row["score"]):
                left["unscored"].append(where)
            else:
                rows.append(row)
    if unknown:
        raise _unknown_values_error(unknown, read[0] if read[1] is None else f"{read[0]}:{read[1]}")
    return rows, left


def _where(samples: list, limit: int = 3) -> str:
    """``sample 1 epoch 1 in a.eval; ...`` for (sample, epoch, file, ...) tuples."""
    shown = "; ".join(f"sample {i!r} epoch {e} in {f}" for i, e, f, *_ in samples[:limit])
    return shown + (f"; ... ({len(samples) - limit} more)" if len(samples) > limit else "")


def _unknown_values_error(unknown: dict[str, list], scorer: str) -> EvalDataError:
    """The refusal of string scores Inspect's ``value_to_float`` does not know (it reads them as 0)."""
    n = sum(map(len, unknown.values()))
    each = "; ".join(f"{v!r} on {len(w)} samples ({_where(w, 2)})" for v, w in list(unknown.items())[:5])
    example = ", ".join(f"{v!r}: 0.5" for v in list(unknown)[:3])
    return EvalDataError(
        f"scorer {scorer!r} gives {len(unknown)} string values that are not scores Inspect knows "
        f"(C, I, P, N; yes, no, true, false; numbers): {each}. Inspect's value_to_float reads such a value "
        f"as 0 (a failure) with only a log line, so {n} samples would count as failures unread; say what "
        f"each value scores: {VALUE_MAP_HINT}, e.g. value_map={{{example}}}"
    )


def _warn_left_out(left: dict, scorer: str, n_read: int) -> None:
    """Say which samples were left out as Inspect leaves them out: unscored and invalidated ones."""
    if left["unscored"]:
        u = left["unscored"]
        warn_user(
            f"{len(u)} of {n_read} samples in the Inspect logs are unscored by scorer {scorer!r} "
            f"(Score.unscored(): value NaN, no verdict) ({_where(u)}): read as no score, neither a "
            "failure nor a success, and left out as Inspect's metrics leave them out, so the means "
            "are over the scored samples (counted in attrs['not_kept'])",
            InspectLogWarning,
        )
    if left["invalidated"]:
        v = left["invalidated"]
        reasons = sorted({r for *_, r in v})
        files = sorted({f for _, _, f, _ in v})
        warn_user(
            f"{len(v)} samples are invalidated in {len(files)} Inspect logs {_fmt_list(files, 3)} "
            f"(invalidate_samples; reasons {_fmt_list(reasons, 3)}) ({_where(v)}): their results are "
            "not to be trusted, so they were left out (counted in attrs['not_kept'], listed in "
            "attrs['invalidated_samples']); run them again (an eval set retries them) or "
            "uninvalidate them in the log",
            InspectLogWarning,
        )


def _task_labels(logs: list, agent: str) -> dict[str, str]:
    """Per log, its task's label: the task name, with the version and arguments that differ between its logs.

    Logs of one task at different ``task_version`` or ``task_args`` are results of a changed
    task: refused unless ``agent="model+variant"``, which keys each variant apart
    (``"<task> v2 cot=True"``).
    """
    by_task: dict[str, list] = {}
    for f, h, _ in logs:
        args = {k: json.dumps(v, sort_keys=True, default=str) for k, v in (h.eval.task_args or {}).items()}
        by_task.setdefault(h.eval.task, []).append((f, str(getattr(h.eval, "task_version", 0)), args))
    labels = {}
    for task, items in by_task.items():
        versions = {v for _, v, _ in items}
        differ = sorted(k for k in {k for *_, a in items for k in a} if len({a.get(k) for *_, a in items}) > 1)
        for f, v, a in items:
            parts = ([f"v{v}"] if len(versions) > 1 else []) + [f"{k}={a.get(k, '(unset)')}" for k in differ]
            labels[f] = " ".join([task, *parts])
        first: dict[str, tuple] = {}
        for f, v, a in items:
            first.setdefault(labels[f], (f, v, a))
        if len(first) > 1 and agent != "model+variant":
            ex = "; ".join(
                f"version {v}, task_args {{{', '.join(f'{k}: {x}' for k, x in sorted(a.items()))}}} in {f}"
                for f, v, a in list(first.values())[:4]
            )
            raise EvalDataError(
                f"the Inspect logs hold task {task!r} at {len(first)} different versions or arguments "
                f"({ex}); results of a changed task are not results on the same items, so they are not "
                "merged: read each version's logs separately, or, to compare the variants as agents (an "
                "ablation), read them with agent='model+variant' (read_inspect_log in Python)"
            )
    return labels


def _fingerprint(s) -> str:
    """A short hash of a sample's input and target as its summary holds them (roles and text only)."""
    x = s.input if isinstance(s.input, str) else [(getattr(m, "role", ""), getattr(m, "text", str(m))) for m in s.input]
    return hashlib.sha1(json.dumps([x, s.target], default=str).encode()).hexdigest()[:12]


def _datasets(logs: list, labels: dict[str, str]) -> dict[str, tuple]:
    """Per Inspect task (label): (its dataset's name, its sample ids as text, {id: input fingerprint}).

    The ids are the header's ``eval.dataset.sample_ids`` (the samples the eval set out to
    run), or those of the samples read when the header does not list them. A sample id whose
    input or target differ between logs of one task is refused (the dataset changed).
    """
    out: dict[str, tuple] = {}
    seen: dict[tuple, tuple] = {}
    for f, header, summaries in logs:
        task = labels[f]
        ds = getattr(header.eval, "dataset", None)
        ids = getattr(ds, "sample_ids", None) or [s.id for s in summaries]
        name, known, prints = out.get(task, (getattr(ds, "name", None), frozenset(), {}))
        for s in summaries:
            k, fp = (type(s.id).__name__, str(s.id)), _fingerprint(s)
            first = seen.setdefault((task, *k), (fp, f, s))
            if first[0] != fp:
                raise EvalDataError(
                    f"task {task!r} sample {s.id!r} has another input or target in {f} "
                    f"({str(s.input)[:60]!r}) than in {first[1]} ({str(first[2].input)[:60]!r}): the task's "
                    "dataset changed between the logs (or was shuffled before automatic ids), so one id names "
                    "two items; read the logs separately, or give the changed task a new version"
                )
            prints[k] = fp
        out[task] = (name, known | {(type(i).__name__, str(i)) for i in ids}, prints)
    return out


def _keys_samples_by_task(logs: list, labels: dict[str, str]) -> str | None:
    """Why samples are keyed ``"<task>/<sample id>"`` (None: by their ids, one dataset).

    Logs of several Inspect tasks share sample ids only when the tasks run one dataset (task
    variants: same dataset name, same sample ids, the same input and target under each id);
    otherwise sample 1 of one task and sample 1 of another are different items (Inspect
    numbers unnamed samples 1..N in every task). A key that two (task, id) pairs would share
    (a task name holding '/') is refused.
    """
    per_task = _datasets(logs, labels)
    same_ids = len({(name, ids) for name, ids, _ in per_task.values()}) == 1
    prints = [p for *_, p in per_task.values()]
    clash = [k for k in set().union(*prints) if len({p[k] for p in prints if k in p}) > 1]
    if len(per_task) < 2 or (same_ids and not clash):
        return None
    keys: dict[str, set] = {}
    for task, (_, ids, _) in per_task.items():
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
        for t, (name, ids, _) in sorted(per_task.items())
    )
    why = (f", and {len(clash)} shared sample ids hold other inputs or targets (e.g. sample "
           f"{sorted(clash)[0][1]!r})" if clash else "")  # fmt: skip
    return (
        f"<inspect task>/<sample id>: the logs hold {len(per_task)} Inspect tasks whose datasets differ "
        f"({what}{why}), so a sample id names different items in different tasks"
    )


def _inspect_report(ds, files, logs, scorer, left, unreadable, incomplete) -> dict:
    """Return the read report of the Inspect logs: which were read, the scorer, samples read and kept."""
    not_kept = json.loads(ds.attrs["not_kept"])
    not_kept[f"no score from scorer {scorer!r} (and no error)"] = left["no_score"]
    not_kept[f"unscored by scorer {scorer!r} (Score.unscored, NaN): excluded, as Inspect's metrics do"] = len(
        left["unscored"]
    )
    not_kept["invalidated in the log (invalidate_samples): excluded"] = len(left["invalidated"])
    return {
        "reader": "read_inspect_log",
        "source": json.dumps(files),
        "scorer": scorer,
        "inspect_tasks": json.dumps(sorted({h.eval.task for _, h, _ in logs})),
        "inspect_status": json.dumps({f: h.status for f, h, _ in logs}),
        "n_logs_read": len(logs),
        "unreadable_logs": json.dumps(unreadable),
        "incomplete_logs": json.dumps(dict(incomplete)),
        "invalidated_samples": json.dumps(
            [{"sample": i, "epoch": e, "file": f, "reason": r} for i, e, f, r in left["invalidated"]]
        ),
        "n_records_read": int(sum(len(s) for *_, s in logs)),
        "n_records_kept": int(ds.attrs["n_records_kept"]),
        "not_kept": _not_kept_attr(not_kept),
    }


def _warn_errors_counted_as_failures(ds: xr.Dataset, errors: str) -> None:
    """Under ``errors="fail"``, say how many samples errored and that Inspect's metrics leave them out."""
    n_err = int(ds["error"].sum()) if "error" in ds else 0
    if errors != "fail" or not n_err:
        return
    per = ds["error"].sum([d for d in ds["error"].dims if d != "agent"]).to_series()
    per_agent = ", ".join(f"{a}: {int(n)}" for a, n in per[per > 0].items())
    warn_user(
        f"{n_err} samples in the Inspect logs errored (infrastructure errors; per agent {per_agent}); "
        "under errors='fail' (the default) each scores 0, but Inspect's own metrics (e.g. accuracy, "
        "mean) leave errored samples out, so these means are lower than the logs' results; pass "
        "errors='exclude' to leave them out as Inspect does (counted either way in attrs['n_error_runs'])",
        InspectLogWarning,
    )


def _same_evaluation(files: list[str], logs: list) -> str:
    """Say which of ``files`` are logs of one evaluation (one ``eval.task_id``): an eval-retry supersedes."""
    headers = {f: h for f, h, _ in logs}
    by_id: dict[str, list] = {}
    for f in dict.fromkeys(files):
        task_id = getattr(headers[f].eval, "task_id", None)
        if task_id:
            by_id.setdefault(task_id, []).append(f)
    groups = [sorted(fs, key=lambda f: str(headers[f].eval.created)) for fs in by_id.values() if len(fs) > 1]
    if not groups:
        return "pass each evaluation's log once (a re-run of the same model and task is a separate dataset)"
    said = "; ".join(
        f"{', '.join(repr(f) for f in fs[:-1])} and the later {fs[-1]!r} (task id {headers[fs[-1]].eval.task_id!r}, "
        f"statuses {', '.join(str(headers[f].status) for f in fs)})"
        for fs in groups[:3]
    )
    return (
        f"these logs are of one evaluation (the same eval.task_id): {said}. A log of `inspect eval-retry` holds "
        "the original's completed samples and the re-run ones, so it supersedes the original (a converted "
        "copy of a log has the same task id too): pass only the latest log of each task id, or move the "
        "superseded logs out of the folder (an eval set's folder keeps one log per task)"
    )


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
            f"(e.g. {_fmt_list(ex, 4)}), in {_fmt_list(where, 5)}; {_same_evaluation(where, logs)}"
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


def _read(path_or_paths, scorer, value_map, errors: str, agent: str) -> xr.Dataset:
    """The body of ``read_inspect_log``: read, check and key the logs, then build the dataset."""
    ilog, to_float = _inspect()
    convert = _score_mapper(value_map, to_float)
    files = _log_files(path_or_paths, ilog)
    single = isinstance(path_or_paths, (str, os.PathLike)) and Path(path_or_paths).is_file()
    logs, unreadable = _read_logs(files, ilog, single)
    incomplete = _incomplete_logs(logs)
    labels = _task_labels(logs, agent)
    by_task = _keys_samples_by_task(logs, labels)
    several = len(set(labels.values())) > 1
    use_task = agent in ("model+task", "model+variant") or (agent == "auto" and several and by_task is None)
    scorer, score_key = _choose_scorer(logs, files, scorer)
    scorer_read = scorer if score_key is None else f"{scorer}:{score_key}"
    invalid = _invalidated(logs, ilog)
    read = (scorer, score_key, by_task is not None)
    rows, left = _sample_rows(logs, read, convert, (labels, use_task), invalid)
    n_read = sum(len(s) for *_, s in logs)
    _warn_left_out(left, scorer_read, n_read)
    if not rows:
        raise EvalDataError(
            f"no sample in the Inspect logs has a score for scorer {scorer_read!r} ({n_read} samples read"
            + "".join(f", {len(left[k])} {k}" for k in ("unscored", "invalidated") if left[k])
            + ")"
        )
    ds = _samples_dataset(rows, logs, errors, by_task is not None)
    _warn_errors_counted_as_failures(ds, errors)
    ds.attrs.update(_inspect_report(ds, files, logs, scorer_read, left, unreadable, incomplete))
    ds.attrs["sample_key"] = by_task or "<sample id>: the samples of one dataset"
    for key in ("agent_column", "task_column"):  # the agent is the log's model, not a column
        ds.attrs.pop(key, None)
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
        ``{"P": 0.0}`` to count partial credit as failure. Otherwise the
        values Inspect's ``inspect_ai.scorer.value_to_float`` knows are read
        as it reads them: ``"C"``/``"I"``/``"P"``/``"N"`` as 1 / 0 / 0.5 / 0,
        booleans, ``"yes"``/``"no"``/``"true"``/``"false"`` (any case) and
        numbers or numeric strings. Any other string (``"maybe"``, ``"c"``),
        which Inspect reads as 0, is refused unless mapped here. A sample the
        scorer left unscored (``Score.unscored()``, a NaN value) has no score:
        it is left out, as Inspect's metrics leave it out, and counted.
    errors : {"fail", "exclude"}
        Policy for samples whose ``error`` is set (infrastructure errors):
        count as a failure (default) or as not run (``"exclude"``, which is
        what Inspect's own metrics do). Either way they are flagged in
        ``error`` and counted; under ``"fail"`` a warning says so.
    agent : {"auto", "model", "model+task", "model+variant"}
        The agent key. ``"auto"`` uses the model when every log runs the same
        task and ``"<model> [<task>]"`` when the logs hold several tasks on one
        dataset (task variants such as different solvers: the same dataset
        name, sample ids, and inputs and targets under each id). Tasks whose
        datasets differ are different items under the same sample ids: their
        samples are keyed ``"<task>/<sample id>"`` (``attrs["sample_key"]``
        says so and why) and ``"auto"`` uses the model. Logs of one task at
        different ``task_version`` or ``task_args`` are refused unless
        ``"model+variant"``: the agent is then ``"<model> [<task> v2 cot=true]"``
        (the version and arguments that differ), e.g. for an ablation.

    Returns
    -------
    xarray.Dataset
        The eval dataset with per-run ``tokens`` (total over models),
        ``latency`` (the sample's total time, s), ``working_time`` (s),
        ``cost`` when the log records it, and the annotation ``hit_limit``
        (the sample stopped at a token/message/time limit: the agent's own
        failure, so its score stands). Agent coords ``model`` and
        ``inspect_task``. ``attrs`` record the scorer, the files, records read
        and kept, why any were not kept (no score, unscored, invalidated,
        excluded errors), the invalidated samples, and how samples were keyed
        as tasks (``sample_key``).

    Warns
    -----
    InspectLogWarning
        Logs left out as unreadable (``attrs["unreadable_logs"]``) or that did
        not finish (``attrs["incomplete_logs"]``); samples left out as
        unscored or invalidated (``invalidate_samples``; the log is then read
        whole once, as summaries do not carry the mark); errored samples
        read as failures under ``errors="fail"``, which Inspect's metrics
        leave out.

    Raises
    ------
    EvalDataError
        A single log file that cannot be read (named), no readable logs, no
        logs, a log with no scores (or whose every sample errored), several
        scorers and no ``scorer``, an unknown scorer, a dict value without a
        key, a value that cannot be mapped to a number (a string Inspect
        does not know included), one sample id with different inputs in logs
        of one task, one task at several versions or arguments (without
        ``agent="model+variant"``), or one sample in several logs (logs of
        one evaluation, e.g. an ``inspect eval-retry`` and its original).

    Examples
    --------
    A folder of logs written by ``inspect eval ... --epochs 5``, scored by two
    scorers (tests/test_data_inspect.py runs this on logs inspect-ai writes)::

        ds = read_inspect_log("logs/", scorer="match")
        ds.score.sizes      # {'agent': ..., 'task': <samples>, 'run': 5}
    """
    check_option(errors, "errors", ("fail", "exclude"))
    check_option(agent, "agent", ("auto", "model", "model+task", "model+variant"))
    return _read(path_or_paths, scorer, value_map, errors, agent)
