"""Reading a log from the command line: the reader's flags, their checks, and ``load_any``.

The reader's column flags (``_add_columns``) and their checks against the file they apply to
(tabular, Inspect, a saved dataset), made before anything is read.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import warnings
from collections.abc import Sequence
from pathlib import Path

from .._console import print_warnings
from .._console import warning_lines
from ._common import CliError

#: Python argument names in library messages -> the flag (or argument) the user typed.
_FLAG_OF = {
    **{n: f"--{n}" for n in ("agent", "task", "run", "score", "error", "tag", "cluster")},
    **{n: f"--{n}" for n in ("prob", "draws", "tune", "chains", "seed", "errors", "scorer")},
    **{n: f"--{n}" for n in ("extra", "encoding", "duplicates")},
    "annotations": "--annotate",
    "error_values": "--error-values",
    "run_index": "--run-index",
    "task_coords": "--task-coord",
    "agent_coords": "--agent-coord",
    "agent_name": "--single-agent",
    "n_resamples": "--resamples",
    "sections": "--sections",
    "rng": "--seed",
    "overwrite": "--overwrite",
    "score_levels": "--levels",
    "levels": "--levels",
    "formula": "--formula",
    "family": "--family",
}


#: Options whose ``name=value`` in a message is a remedy (not a column's value in a row).
_ASSIGNABLE = frozenset({"errors", "run_index", "duplicates", "encoding", "prob", "draws", "tune", "scorer"})


def _inspect_words(msg: str) -> str:
    """An Inspect reader's message with its Python remedies as the command line's.

    ``scorer='s1:acc'`` is ``--scorer s1:acc`` (a name with any character); ``value_map``
    has no flag, so the message says where it is.
    """
    from ..data import VALUE_MAP_HINT

    msg = re.sub(r"`?\bscorer=(['\"])(.*?)\1`?", r"--scorer \2", msg)
    msg = re.sub(r", e\.g\. value_map=\{.*?\}$", "", msg)
    return msg.replace(
        VALUE_MAP_HINT,
        "read the log in Python with hierbench.data.read_inspect_log(..., value_map={value: score}) "
        "(the command line cannot map values)",
    )


def _error_values(items: Sequence[str] | None):
    """``--error-values`` into ``from_records``' ``error_values``: 'nonempty' or VALUE=error|ok pairs."""
    if not items:
        return None
    if "nonempty" in items:
        if len(items) > 1:
            raise CliError(
                "--error-values: give either 'nonempty' or VALUE=error / VALUE=ok pairs, not both; "
                f"got {list(items)}"
            )
        return "nonempty"
    out = {}
    for item in items:
        value, sep, meaning = item.rpartition("=")
        if not sep or meaning.strip().lower() not in ("error", "ok") or not value:
            raise CliError(
                f"--error-values must be 'nonempty' or VALUE=error / VALUE=ok (e.g. "
                f"usageLimits=ok); got {item!r}"
            )
        out[value] = meaning.strip().lower() == "error"
    return out


def _levels(text: str | None) -> list[float] | list[str] | None:
    """``--levels 1,2,3,4,5`` as numbers, ``--levels no,perhaps,yes`` as labels (None when not given).

    Every item a number: a numeric scale. Any other list is passed on as written (never
    stripped): the reader (:func:`hierbench.data.from_records`, ``score_levels``) takes it
    as labels, refusing a list that mixes numbers and words, a repeated label or one with spaces.
    """
    if text is None:
        return None
    items = text.split(",")
    try:
        return [float(v) for v in items]
    except ValueError:
        return items


class _Typed(argparse.Action):
    """Store the value and note that the flag was typed (``typed_<dest>``), its default value or not.

    A typed default counts as not given for the reader-flag checks (:func:`_given_reader_flags`),
    but ``--agent agent`` beside ``--single-agent`` still says two different things.
    """

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, f"typed_{self.dest}", True)


class _Scale(argparse.Action):
    """``--levels``: a value that starts with a dash (``-1,0,1``) must be joined to the flag with ``=``.

    argparse reads ``--levels -1,0,1`` as the flag followed by another flag, ``-1,0,1`` (Python
    3.12; only a lone negative number such as ``-1`` passes as a value), and said only "expected
    one argument". The value is optional to the parser (``nargs='?'``) so that a flag given without
    one reaches this action, which names the cause and the form that works.
    """

    def __call__(self, parser, namespace, values, option_string=None):
        if values is None:
            raise argparse.ArgumentError(
                self,
                "give the grade scale, e.g. --levels 1,2,3,4,5; a scale that starts with a minus sign must "
                "be joined to the flag with '=', as in --levels=-1,0,1 or --levels=-2,-1,0,1,2 (after a "
                "space the shell's -1,0,1 is read as another flag)",
            )
        setattr(namespace, self.dest, values)


def _check_single_agent(opts: dict) -> None:
    """Refuse ``--single-agent`` with ``--agent``: one reads the agents from a column, the other has none."""
    single = opts.get("single_agent")
    if single and opts.get("typed_agent"):
        raise CliError(
            f"--single-agent {single} and --agent {opts.get('agent')}: give one, not both "
            "(--agent COLUMN reads each run's agent from COLUMN; --single-agent NAME reads a log "
            "with no agent column as the runs of one agent called NAME)"
        )


def _reader_options(opts: dict) -> dict:
    """The CLI's column and reader flags as ``from_records`` keywords."""
    _check_single_agent(opts)
    single = opts.get("single_agent")
    return {
        "agent": None if single else (opts.get("agent") or "agent"),
        "agent_name": single or "agent",
        "task": opts.get("task") or "task",
        "run": opts.get("run"),
        "score": opts.get("score") or "score",
        "error": opts.get("error"),
        "error_values": _error_values(opts.get("error_values")),
        "tag": opts.get("tag"),
        "cluster": opts.get("cluster"),
        "extra": opts.get("extra") or None,
        "annotations": opts.get("annotate") or None,
        "task_coords": opts.get("task_coord") or (),
        "agent_coords": opts.get("agent_coord") or (),
        "errors": opts.get("errors") or "fail",
        "run_index": opts.get("run_index") or "auto",
        "duplicates": opts.get("duplicates") or "refuse",
        "encoding": opts.get("encoding") or "utf-8",
        "score_levels": _levels(opts.get("levels")),
    }


#: a ``.json`` file in a folder is an Inspect log when its name starts with the ISO time
#: ``inspect eval`` names its logs by (Inspect's own listing skips other JSON, e.g. an index)
_INSPECT_JSON_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}.*\.json$")


def _is_inspect(p: Path) -> bool:
    """An Inspect log (``.eval`` or ``.json``, ``inspect eval``'s two formats), or a folder of them.

    A folder counts when it holds a ``.eval`` log or a time-named ``.json`` one, the files
    :func:`~hierbench.data.read_inspect_log` reads from a folder; any other folder is a table
    (Parquet).
    """
    if not p.is_dir():
        return p.suffix in (".eval", ".json")
    return any(p.rglob("*.eval")) or any(_INSPECT_JSON_NAME.match(f.name) for f in p.rglob("*.json"))


@functools.cache
def _reader_defaults() -> dict:
    """Every reader flag's dest and its default, from the parser group that defines them."""
    p = argparse.ArgumentParser(add_help=False)
    _add_columns(p)
    return vars(p.parse_args([]))


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")  # argparse derived each dest from its flag


def _given_reader_flags(opts: dict) -> dict:
    """The reader flags the user gave (dest -> value), in the parser's order.

    A flag counts as given when its value differs from the parser's default: one typed
    with its default value (``--agent agent``) asks for what the reader does unasked, and
    counts as not given, for every flag and every input alike. ``--errors`` has no parser
    default, so a typed ``--errors fail`` counts as given: a saved eval dataset carries its
    own policy, and the two are compared (:func:`_check_reader_flags`).
    """
    return {
        d: opts[d] for d, default in _reader_defaults().items() if d in opts and opts[d] != default
    }


def _flags_text(given: dict) -> str:
    """The given flags as typed: ``--agent model``, a repeated flag once per value."""
    parts = []
    for dest, value in given.items():
        for v in value if isinstance(value, list) else [value]:
            parts.append(f"{_flag(dest)} {v}")
    return ", ".join(parts)


#: Inspect logs: the reader flags read_inspect_log takes; every other one reads tables.
_INSPECT_FLAGS = ("scorer", "errors")


def _check_reader_flags(p: Path | list[Path], opts: dict) -> None:
    """Refuse a reader flag the reader chosen for LOG does not use (rather than ignore it).

    Tables (CSV, TSV, JSONL, Parquet) use every reader flag but ``--scorer``; Inspect
    logs use ``--scorer`` and ``--errors``; a saved eval dataset (``.nc``) uses none.
    ``fit --formula`` also reads ``--levels`` as its model's grade scale (``_build``).
    """
    given = _given_reader_flags(opts)
    if "formula" in opts:
        given.pop("levels", None)  # fit's own: --formula's grade scale (_build refuses it without)
    if isinstance(p, list) or _is_inspect(p):
        unused = {d: v for d, v in given.items() if d not in _INSPECT_FLAGS}
        what = "Inspect logs (samples are the tasks, epochs the runs, the model the agent)"
        todo = (
            "those flags read tables (CSV, TSV, JSONL, Parquet); for Inspect logs only --scorer "
            "(which scorer is the score) and --errors apply: leave the others out"
        )
    elif p.suffix == ".nc":
        saved = _saved_errors(p) if given else "fail"
        # an --errors equal to the policy the dataset holds asks for what it has
        unused = {d: v for d, v in given.items() if not (d == "errors" and v == saved)}
        what = "a saved eval dataset (.nc)"
        todo = (
            "it already carries the columns, coords, grade levels and error policy it was read "
            f"with (errors={saved!r}); leave the flags out, or give the original log with them to "
            "read it anew"
        )
    else:
        unused = {d: v for d, v in given.items() if d == "scorer"}
        what = "a table (CSV, TSV, JSONL or Parquet)"
        todo = "--scorer reads Inspect logs; name the table's score column with --score"
    if unused:
        log = ", ".join(map(str, p)) if isinstance(p, list) else str(p)
        raise CliError(
            f"LOG {log!r} is read as {what}, which does not use {_flags_text(unused)} (a flag "
            f"its reader would ignore is refused, not dropped): {todo}"
        )


def _saved_errors(p: Path) -> str:
    """The error policy a saved eval dataset was read with (its ``errors`` attr)."""
    import xarray as xr

    try:
        with xr.open_dataset(p) as ds:
            return str(ds.attrs.get("errors", "fail"))
    except (OSError, ValueError) as exc:
        raise CliError(f"LOG {str(p)!r} cannot be opened as a saved eval dataset (.nc): {exc}") from exc


def _one_or_inspect_logs(paths: Sequence[str]) -> Path | list[Path]:
    """The one LOG, or several Inspect logs read together; any other several are refused by name."""
    ps = [Path(x) for x in paths]
    missing = [str(x) for x in ps if not x.exists()]
    if missing:
        raise CliError(f"no such file or folder: {', '.join(map(repr, missing))}")
    if len(ps) == 1:
        return ps[0]
    other = [str(x) for x in ps if not _is_inspect(x)]
    if other:
        raise CliError(
            f"LOG: {len(ps)} files given, but only Inspect logs (.eval or .json, or folders of them) are read "
            f"together (one model per log); these are not: {', '.join(other)}. Put every agent's "
            "runs in one table (one row per run, an agent column) and pass that one file"
        )
    return ps


def _check_no_log_flags(args: argparse.Namespace, why: str) -> None:
    """Refuse reader flags given to a command without ``--data LOG``: there is nothing they read."""
    given = _given_reader_flags(vars(args)) if not args.data else {}
    if given:
        raise CliError(
            f"{_flags_text(given)}: reader flags read the run log given with --data, and no --data "
            f"was given ({why}); give --data LOG, or leave them out"
        )


def is_saved_log(ds) -> bool:
    """Whether a dataset read from netCDF is a log hierbench reads: runs, counts or battles."""
    dv = set(ds.data_vars)
    return bool(
        "score" in dv or {"n_runs", "n_success"} <= dv or "hierbench_schema" in ds.attrs
        or {"comparison", "pair"} & set(ds.dims)
    )


def check_saved_log(ds, path) -> None:
    """Refuse a netCDF file that is not a saved log (another program's data), naming what it holds."""
    if is_saved_log(ds):
        return
    held = ", ".join(f"{v}{tuple(ds[v].dims)}" for v in list(ds.data_vars)[:6]) or "no variables"
    raise CliError(
        f"LOG {str(path)!r} is a netCDF file but not a saved log: it holds {held}. A saved log "
        "(hierbench.io.save_dataset of a dataset read by hierbench.data) has a `score` variable over "
        "(agent, task, run), the counts `n_runs` and `n_success`, or battles (dim `comparison`, or `pair` "
        "for pair counts); give such a file, or the log itself (CSV, TSV, JSONL, Parquet or Inspect "
        "logs) with its column flags"
    )


def load_any(path: str | Sequence[str], args: argparse.Namespace | None = None):
    """Read LOG (CSV, TSV, JSONL, Parquet, netCDF ``.nc``, or Inspect ``.eval`` / ``.json`` logs) into an eval dataset.

    ``path`` is one path, or several Inspect logs (one per model, as ``inspect eval``
    writes them). Returns the dataset and the warnings raised while reading (as text).
    """
    p = _one_or_inspect_logs([path] if isinstance(path, (str, Path)) else list(path))
    opts = vars(args) if args is not None else {}
    _check_reader_flags(p, opts)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if isinstance(p, list) or _is_inspect(p):
            from ..data import EvalDataError
            from ..data import read_inspect_log

            try:
                ds = read_inspect_log(p, scorer=opts.get("scorer"), errors=opts.get("errors") or "fail")
            except EvalDataError as exc:
                raise EvalDataError(_inspect_words(str(exc))) from exc
        elif p.suffix == ".nc":
            from ..io import load_dataset

            ds = load_dataset(p)  # a saved fit is refused, naming `hierbench report`
            check_saved_log(ds, p)
        else:
            from ..data import from_records

            ds = from_records(p, **_reader_options(opts))
    msgs = warning_lines(caught)
    if args is not None:  # the warnings in the user's words, as the errors are (flags, not arguments)
        msgs = [_user_words(_inspect_words(m), args) for m in msgs]
    if msgs:
        # the reader's words travel with the data: the report (and the demo's data.nc) say them too
        ds.attrs["reading_notes"] = json.dumps(msgs)
    return ds, msgs


def _add_columns(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("columns (tabular logs)")
    g.add_argument("--agent", default="agent", action=_Typed, help="agent column (default: agent)")
    g.add_argument("--task", default="task", help="task column (default: task)")
    g.add_argument(
        "--run", default=None, help="run column (default: number runs per cell in file order)"
    )
    g.add_argument(
        "--score", default="score",
        help="score column, values in [0, 1], or ordinal grades with --levels (default: score)",
    )  # fmt: skip
    g.add_argument(
        "--error",
        default=None,
        help="infrastructure-error column: booleans, 0/1, true/false/yes/no/error/ok; "
        "other values need --error-values",
    )
    g.add_argument(
        "--error-values",
        action="append",
        metavar="VALUE=error|ok",
        help="what another value of the --error column means, e.g. usageLimits=ok or "
        "timeout=error (repeatable); or 'nonempty': every non-empty value is an error",
    )
    g.add_argument("--tag", default=None, help="per-task tag column")
    g.add_argument("--cluster", default=None, help="per-task cluster column (repository, family)")
    g.add_argument(
        "--extra",
        action="append",
        metavar="COL",
        help="numeric per-run column to keep (repeatable)",
    )
    g.add_argument(
        "--annotate",
        action="append",
        metavar="COL",
        help="boolean per-run annotation to keep and count, e.g. a budget-hit flag (repeatable)",
    )
    g.add_argument(
        "--task-coord",
        action="append",
        metavar="COL",
        help="column constant per task to keep as a task coord (repeatable)",
    )
    g.add_argument(
        "--agent-coord",
        action="append",
        metavar="COL",
        help="column constant per agent to keep as an agent coord (repeatable)",
    )
    g.add_argument(
        "--single-agent",
        metavar="NAME",
        default=None,
        help="the log holds one agent and no agent column: call it NAME (refused with --agent, "
        "when an 'agent' column holds several agents, and when a column such as 'model' splits "
        "every task's runs into the same groups)",
    )
    r = p.add_argument_group("reading (tables; --errors also Inspect logs, --scorer Inspect logs only)")
    r.add_argument(
        "--run-index",
        choices=["auto", "label", "within_cell"],
        default="auto",
        help="how --run labels become runs: integer labels as occasions shared by cells (auto), "
        "always the labels (label), or numbered within each cell (within_cell)",
    )
    r.add_argument(
        "--duplicates",
        choices=["refuse", "drop", "keep"],
        default="refuse",
        help="records repeated in every column: refuse (default), drop the copies, keep them as runs",
    )
    r.add_argument(
        "--levels", default=None, metavar="G1,G2,...", nargs="?", action=_Scale,
        help="the --score column holds ordinal grades of this scale, e.g. 1,2,3,4,5 (a scale that "
        "starts with a minus sign is joined with '=': --levels=-2,-1,0,1,2): each score must "
        "be one of them (any other is refused, naming the rows); each is read as its place "
        "(grade - first) / (last - first) in [0, 1], and `fit --formula 'score ~ ...'` fits the "
        "grades themselves (family ordinal). Grades written as words: their labels in order, lowest "
        "first, e.g. no,perhaps,yes: label k of L (the first k = 0) is read as k / (L - 1) (equally spaced; the ordinal "
        "fit uses their order only), matched exactly as written (Yes or ' yes' is not yes: refused, "
        "never case-folded or stripped), and the outputs name the grades by them. A list of numbers "
        "keeps its spacing (1,2,4); one mixing numbers and words is refused",
    )  # fmt: skip
    r.add_argument("--encoding", default="utf-8", help="text encoding of CSV/TSV/JSONL (utf-8)")
    r.add_argument(
        "--errors",
        choices=["fail", "exclude"],
        default=None,  # "fail" when not typed; None tells a typed --errors fail apart (_check_reader_flags)
        help="errored runs count as failures (fail, default) or as not run (exclude); a saved "
        "eval dataset (.nc) keeps the policy it was saved with",
    )
    r.add_argument("--scorer", default=None, help="Inspect logs: which scorer is the score")


def _levels_remedy(m: re.Match) -> str:
    """``score_levels=[1, 2, 3]`` (or ``['no', 'yes']``) -> ``--levels 1,2,3``: the scale as the flag takes it."""
    return "--levels " + ",".join(v.strip().strip("'\"") for v in m.group(1).split(","))


#: Python remedies in library messages, said as the flags that do the same.
_REMEDIES = (
    (r"`?\bscore_levels=\[([^\]`]*)\]`?", _levels_remedy),
    # a sampler option's None is its flag left out, never "--draws None" (which the parser refuses)
    (r"`?\bdraws=None`? draws to", "leave --draws out to draw to"),
    (r"`?\b(draws|tune)=None`?", r"--\1 left out"),
    # as_rng's "`rng` seed must be": the flag is --seed already
    (r"`rng` seed must be a non-negative int\b", "--seed must be a non-negative integer"),
    (r"`?error_values=\{[^}`]*\}`?", "--error-values VALUE=error or VALUE=ok (repeatable)"),
    (r"`?error_values='nonempty'`?", "--error-values nonempty"),
    (r"`?overwrite=True`?(?: \(CLI: --overwrite\))?", "--overwrite"),
    # a covariate table has no flag: the reader's coords (from_records(name=...) below) are the CLI's
    (r" or model_design\(\w+=table\)", ""),
    # the dataset's dims are names in a formula, not the flags of the same name
    (r"\bdims `(\w+)` and `(\w+)`", r"dims \1 and \2"),
)

#: read-report attrs a message points to, which ``hierbench validate --json`` prints under the same key
_REPORTED = (
    "n_repeated_records", "n_error_scores_overwritten", "not_kept", "inconsistent_attributes",
    "columns_not_read", "n_error_runs", "score_levels", "score_labels", "sample_key",
    "n_tasks_without_cluster", "annotations",
)  # fmt: skip


def _reader_remedy(m: re.Match) -> str:
    """``from_records(agent_coords=[...])`` -> ``--agent-coord COL``: a reader keyword as its flag."""
    flag = _FLAG_OF.get(m.group(1))
    return f"{flag} COL" if flag else m.group(0)


def _attrs_remedy(m: re.Match) -> str:
    """``attrs['n_repeated_records']`` -> where the shell shows it: ``hierbench validate --json``."""
    key = m.group(2)
    return f"{key} of `hierbench validate --json`" if key in _REPORTED else m.group(0)


#: read_battles' argument names in its messages -> the flag that sets them from the shell
_BATTLE_FLAG_OF = {"task": "--prompt", "winner": "--winner", "left": "--left", "right": "--right", "judge": "--judge",
                   "outcomes": "--verdict", "agents": "the agents"}  # fmt: skip


def _battle_words(msg: str) -> str:
    """A battle reader's (or model's) message with its argument names as the flags (``task`` is ``--prompt``)."""
    msg = msg.replace("`ties=None`", "--ties none").replace("ties='davidson'", "--ties davidson")
    msg = msg.replace("`pairs`", "the battle log")
    for name, flag in _BATTLE_FLAG_OF.items():
        msg = msg.replace(f"`{name}`", flag)
    return msg


def _user_words(msg: str, args: argparse.Namespace) -> str:
    """Say a library message in the user's words: flags for Python arguments, files for objects.

    The one translation of the library's Python remedies for the shell (errors and warnings of
    every command): ``obj`` / ``ds`` / ``data`` are the file; `` `name` `` and `` `name='value'` ``
    of a reader or command argument are its flag (``--run run``); ``from_records(name=...)`` is
    the flag; a read-report ``attrs['key']`` is the key ``hierbench validate --json`` prints.
    """
    if getattr(args, "battles", False):  # read_battles' names first: its `task` is --prompt
        msg = _battle_words(msg)
    log = getattr(args, "file", None) or getattr(args, "data", None) or "LOG"
    if isinstance(log, list):
        log = ", ".join(log)
    for name in ("obj", "ds", "data"):
        msg = msg.replace(f"`{name}`", repr(log))
    for pattern, flag in _REMEDIES:
        msg = re.sub(pattern, flag, msg)
    msg = re.sub(r"`?\bfrom_records\((\w+)=[^)]*\)`?", _reader_remedy, msg)
    # "counted in attrs['n_repeated_records']" -> "counted in n_repeated_records of `hierbench validate --json`"
    msg = re.sub(r"\battrs\[(['\"])(\w+)\1\]", _attrs_remedy, msg)
    for name, flag in _FLAG_OF.items():
        # a checked value, "got n_resamples=0" -> "got --resamples 0"
        msg = re.sub(rf"\bgot {name}=", f"got {flag} ", msg)
        if name in _ASSIGNABLE:  # a remedy `name='value'` -> "--flag value"
            msg = re.sub(rf"`?\b{name}=(['\"]?)([\w.-]+)\1`?", rf"{flag} \2", msg)
        else:  # a column named in quotes and backticks, `run='trial'` -> "--run trial"
            msg = re.sub(rf"`\b{name}=(['\"])([^'\"`]+)\1`", rf"{flag} \2", msg)
        msg = re.sub(rf"`{name}`", flag, msg)
    # a message naming the flag and its Python keyword ("`--cluster` or from_records(cluster=...)") says it once
    return re.sub(r"`?(--[\w-]+)`? or \1 COL\b", r"\1 COL", msg)


def say_warnings(lines, args: argparse.Namespace) -> None:
    """Every warning of a command on stderr (``print_warnings``), in the user's words (``_user_words``)."""
    print_warnings(_user_words(str(m), args) for m in lines)
