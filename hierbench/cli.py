"""The ``hierbench`` command line: validate, summary, fit, report, compare, demo.

A thin layer over the library: every number it prints comes from
:mod:`hierbench.data`, :mod:`hierbench.freq`, :mod:`hierbench.bayes` or
:mod:`hierbench.report`. Only the standard library is imported at start-up
(``hierbench --help`` is instant); each command imports what it needs.

Results go to standard output; every warning of a command goes to standard
error, one ``warning: ...`` line each (:func:`hierbench._console.print_warnings`),
so that piping the results never carries a warning along. Errors (bad input, a
missing or unreadable file, a refused overwrite) are printed as one line naming
the file or the flag, and the exit status is 2; no Python traceback (set
``HIERBENCH_DEBUG=1`` to see it).
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
import textwrap
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from ._console import _report_text
from ._console import _summary_frame
from ._console import _summary_text
from ._console import convergence_line
from ._console import diagnostics_line
from ._console import fit_kwargs
from ._console import print_warnings
from ._console import seconds
from ._console import warning_lines

__all__ = ["CliError", "build_parser", "convergence_line", "fit_kwargs", "load_any", "main"]

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
    "rng": "--seed",
    "overwrite": "--overwrite",
    "score_levels": "--levels",
    "levels": "--levels",
}

#: Options whose ``name=value`` in a message is a remedy (not a column's value in a row).
_ASSIGNABLE = frozenset({"errors", "run_index", "duplicates", "encoding", "prob", "draws", "tune"})

#: Python remedies in library messages, said as the flags that do the same.
_REMEDIES = (
    (r"`?error_values=\{[^}`]*\}`?", "--error-values VALUE=error or VALUE=ok (repeatable)"),
    (r"`?error_values='nonempty'`?", "--error-values nonempty"),
    (r"`?overwrite=True`?(?: \(CLI: --overwrite\))?", "--overwrite"),
)


def __getattr__(name: str):
    # the demo's section list and context live in hierbench.demo (numpy, pandas, scipy):
    # imported only when asked for, so `hierbench --help` stays fast
    if name in ("DEMO_SECTIONS", "DemoContext"):
        from . import demo

        return getattr(demo, name)
    raise AttributeError(f"module 'hierbench.cli' has no attribute {name!r}")


class CliError(Exception):
    """An error in the user's words (file or flag names), printed as one line."""


# ---------------------------------------------------------------- input


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


def _formula_levels(text: str | None, ds) -> list[float] | list[str] | None:
    """``--levels`` as ``build_mixed``'s ``levels``: a numeric scale, or the labels as written.

    Labels must be those the dataset's ``score`` was read with (``attrs["score_labels"]``); they go
    on as words, so the saved fit records them as the Python API's fit does (``options.levels``).
    """
    levels = _levels(text)
    if not levels or not isinstance(levels[0], str):
        return levels
    from .data import labels_attr

    have = labels_attr(ds.attrs)
    if have != levels:
        raise CliError(
            f"--levels {text}: the labels the log's score was read with are {have!r}"
            if have else f"--levels {text} names labels, but the log's score was not read from labels"
        )
    return levels


class _Typed(argparse.Action):
    """Store the value and note that the flag was typed (``typed_<dest>``), its default value or not.

    A typed default counts as not given for the reader-flag checks (:func:`_given_reader_flags`),
    but ``--agent agent`` beside ``--single-agent`` still says two different things.
    """

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        setattr(namespace, f"typed_{self.dest}", True)


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
            from .data import read_inspect_log

            ds = read_inspect_log(p, scorer=opts.get("scorer"), errors=opts.get("errors") or "fail")
        elif p.suffix == ".nc":
            from .io import load_dataset

            ds = load_dataset(p)  # a saved fit is refused, naming `hierbench report`
        else:
            from .data import from_records

            ds = from_records(p, **_reader_options(opts))
    return ds, warning_lines(caught)


# ---------------------------------------------------------------- formatting


def _jsonable(obj):
    import numpy as np

    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating, float)):
        return None if not np.isfinite(obj) else float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def _progress_wanted(args: argparse.Namespace) -> bool:
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


#: What each output flag can write, by suffix.
_SUFFIXES = {
    "fit": ((".nc", ".zarr"), "a fit is saved as netCDF (.nc) or zarr (.zarr)"),
    "report": ((".html", ".htm", ".md"), "a report is written as HTML (.html) or Markdown (.md)"),
}


def _check_out(path: str, overwrite: bool, flag: str = "-o", kind: str | None = None) -> Path:
    out = Path(path)
    if kind is not None:
        suffixes, what = _SUFFIXES[kind]
        if out.suffix.lower() not in suffixes:
            raise CliError(
                f"{flag} {path!r}: {what}; give a path ending in {' or '.join(suffixes)}"
            )
    if out.exists() and not overwrite:
        raise CliError(f"{flag} {path!r} already exists; pass --overwrite to replace it")
    if not out.parent.exists():
        raise CliError(f"{flag} {path!r}: folder {str(out.parent)!r} does not exist")
    return out


class _FitStages:
    """Progress of ``hierbench fit`` between the sampler's own bar: compiling, then after sampling.

    An adapter until :func:`hierbench.bayes.fit` reports its stages itself:
    nutpie's ``progress_callback`` says when the first draw starts (compiling
    is over) and when the last one is in (what follows is the posterior
    predictive draws, the observed-task means and the convergence
    diagnostics, silent otherwise). Each stage is an endless tqdm line whose
    elapsed time ticks once a second.
    """

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar = None
        self.stage = ""
        self.sampled_at: float | None = None
        self._stop = None

    def start(self, stage: str) -> None:
        if not self.enabled:
            return
        import threading

        from tqdm import tqdm

        self.close()
        self.stage = stage
        import shutil

        # a terminal that reports no size (some pseudo-terminals) would hide the line
        size = shutil.get_terminal_size((100, 20))
        self.bar = tqdm(total=None, desc=stage, bar_format="{desc}: {elapsed}", file=sys.stderr,
                        ncols=size.columns, nrows=size.lines)  # fmt: skip
        stop = self._stop = threading.Event()
        bar = self.bar

        def tick():
            while not stop.wait(1.0):
                bar.refresh()

        threading.Thread(target=tick, daemon=True).start()

    def callback(self, chains) -> None:
        """Nutpie's progress callback: one ``ChainProgress`` per chain."""
        if self.stage == "compiling the model":
            self.close()
            self.stage = "sampling"
        if self.sampled_at is None and chains and all(
            c.finished_draws >= c.total_draws for c in chains
        ):
            self.sampled_at = time.perf_counter()
            self.start("after sampling: posterior predictive draws, task means, diagnostics")

    def close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self.bar is not None:
            self.bar.close()
            self.bar = None


# ---------------------------------------------------------------- commands


def _cmd_validate(args: argparse.Namespace) -> int:
    from .data import read_report

    ds, msgs = load_any(args.file, args)
    rep = read_report(ds)
    if args.json:
        print(json.dumps(_jsonable({**rep, "warnings": list(msgs)}), indent=2))
    else:
        print(f"valid eval dataset ({rep['schema']})")
        print(_report_text(rep))
    print_warnings(msgs)
    return 0


def _cmd_summary(args: argparse.Namespace) -> int:
    from .data import read_report

    ds, msgs = load_any(args.file, args)
    msgs = list(msgs) + _marked(ds)  # a saved log's flagged agents (attrs["flagged_agents"]), as compare says them
    rep = read_report(ds)
    df = _summary_frame(ds)
    if args.json:
        agents = [{"agent": a, **row} for a, row in df.to_dict(orient="index").items()]
        print(
            json.dumps(
                _jsonable({"dataset": rep, "agents": agents, "warnings": msgs}), indent=2
            )
        )
    else:
        from ._base import counted

        print(
            f"{counted(rep['n_agents'], 'agent')} x {counted(rep['n_tasks'], 'task')}, {counted(rep['n_runs_total'], 'run')} "
            f"({rep['n_error_runs']} infrastructure errors, errors={rep['errors']!r}); "
            f"{rep['n_missing_cells']} agent x task cells never run"
        )
        print(_summary_text(ds))
    print_warnings(msgs)
    return 0


def _sample(args: argparse.Namespace, model, progress: bool):
    """``bayes.fit`` with the CLI's settings, its stages shown when watched; (fit, warnings, wall)."""
    from . import bayes

    stages = _FitStages(progress)
    kw = fit_kwargs(bayes.fit, progress)
    if progress:
        kw["progress_callback"] = stages.callback  # nutpie's, passed through by bayes.fit
        draws = f"{args.draws} draws" if args.draws else "draws to the ESS target"
        tune = args.tune or bayes.FIT_DEFAULTS["tune"]
        print(
            f"fitting the {args.model} model: {args.chains} chains x {draws} (+{tune} tuning)",
            file=sys.stderr,
            flush=True,
        )
        stages.start("compiling the model")
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dt = bayes.fit(
                model,
                draws=args.draws,
                tune=args.tune,
                chains=args.chains,
                rng=args.seed,
                log_likelihood=bool(args.log_likelihood),
                **kw,
            )
    finally:
        stages.close()
    return dt, caught, time.perf_counter() - t0


def _check_binary_model(args: argparse.Namespace, ds) -> None:
    """Refuse partial credit for the binomial --model in the CLI's words (the builder's names the Python API).

    METR's continuous scores: the refusal said "use hierbench.bayes.build_mixed(data)"; from the
    shell that model is ``--formula``.
    """
    import numpy as np

    from ._base import is_binary

    score = ds["score"].values
    if is_binary(score):
        return
    from .data import grade_names
    from .data import labels_attr
    from .data import levels_attr

    levels = levels_attr(ds.attrs)
    how = (f"Its grades have the ordinal model: --levels {','.join(grade_names(levels, labels_attr(ds.attrs)))} "
           "--formula 'score ~ (1|agent) + (1|task)'" if levels else
           "For scores in [0, 1] fit --formula 'score ~ (1|agent) + (1|task)' (family fractional)")
    sc = ds["score"].transpose("agent", "task", "run")
    part = np.argwhere(np.isfinite(sc.values) & (sc.values != 0) & (sc.values != 1))
    cells = [(str(sc["agent"].values[i]), str(sc["task"].values[j]), str(sc["run"].values[k]), float(sc.values[i, j, k]))
             for i, j, k in part[:5]]  # fmt: skip
    raise CliError(
        f"--model {args.model}{' (the default)' if args.model == 'crossed' else ''} is binomial: every score "
        f"must be 0 or 1, and {len(part):,} of the {int(np.isfinite(score).sum()):,} scores of "
        f"{', '.join(map(repr, args.file))} are partial credit, e.g. (agent, task, run, score) {cells}. "
        f"{how}; or binarise the --score column first"
    )


def _build(args: argparse.Namespace, ds):
    """The model `fit` samples: a named builder (--model) or a formula model (--formula)."""
    from . import bayes

    if args.formula is None:
        # --levels is also how the reader takes words: N,Y read as 0 and 1 are binary scores the
        # named models fit (VerbAgg's r2 was refused); more grades than two are the ordinal model's
        if args.family != "auto" or (args.levels is not None and len(args.levels.split(",")) != 2):
            raise CliError("--family and --levels (beyond two grades, read as 0 and 1) describe a --formula "
                           "model; give --formula too, e.g. --formula 'score ~ (1|agent) + (1|task)'")
        args.model = args.model or "crossed"
        _check_binary_model(args, ds)
        return {"crossed": bayes.build_crossed, "beta_binomial": bayes.build_beta_binomial}[args.model](ds)
    if args.model is not None:
        raise CliError(f"--model {args.model} and --formula name two models; give one of them")
    args.model = "formula"
    # with --levels the reader took the --score column as grades of that scale (attrs score_levels)
    return bayes.build_mixed(ds, args.formula, family=args.family, levels=_formula_levels(args.levels, ds))


def _check_sampler_flags(args: argparse.Namespace) -> None:
    """--draws, --tune and --chains refused before the log is read and the model built (was: after both)."""
    for flag, v, low in (("--draws", args.draws, 1), ("--tune", args.tune, 0), ("--chains", args.chains, 1)):
        if v is not None and v < low:
            raise CliError(f"{flag} must be an integer >= {low}; got {v}")


def _cmd_fit(args: argparse.Namespace) -> int:
    _check_sampler_flags(args)
    out = _check_out(args.out, args.overwrite, kind="fit")
    ds, msgs = load_any(args.file, args)
    print_warnings(msgs)
    from . import bayes
    from .io import save_fit

    model = _build(args, ds)
    # the structure the builder chose from the design, and why (before the long part)
    print(bayes.describe(model), flush=True)
    dt, caught, wall = _sample(args, model, _progress_wanted(args))
    groups: str | list[str] = "compact"
    if args.keep_all:
        groups = "all"
    else:
        wanted = ["posterior_predictive"] if args.keep_predictive else []
        wanted += ["log_likelihood"] if args.log_likelihood else []
        groups = [g for g in wanted if g in dt.children] or "compact"
    if _progress_wanted(args):
        print(f"saving the fit to {out}", file=sys.stderr, flush=True)
    save_fit(dt, out, groups=groups, overwrite=args.overwrite)
    size = (
        out.stat().st_size
        if out.is_file()
        else sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    )
    a = dt.attrs
    from ._base import counted

    print(
        f"{args.model} fit of {counted(ds.sizes['agent'], 'agent')} x {counted(ds.sizes['task'], 'task')}: {seconds(wall)} "
        f"(compile {seconds(a.get('compile_time', float('nan')))}, sampling "
        f"{seconds(a.get('sampling_time', float('nan')))}); {diagnostics_line(dt)}"
    )
    print(f"saved to {out} ({size / 1e6:.1f} MB, groups {_saved_groups(out)})")
    # the convergence checks' verdict in the fit's own words (not the sampler's warning)
    line = convergence_line(dt)
    print_warnings(([line] if line else []) + warning_lines(caught, skip=("ConvergenceWarning",)))
    return 0


def _bootstrap_kw(args: argparse.Namespace) -> dict:
    """``--bootstrap-method`` as the keyword of ``report.build`` and ``run_demo`` (not given: their own default)."""
    return {"bootstrap_method": args.bootstrap_method} if args.bootstrap_method else {}


def _saved_groups(path: Path) -> list[str]:
    """The groups a saved fit holds (read from the file, without loading the values)."""
    import xarray as xr

    kw = {"engine": "zarr", "consolidated": False} if path.suffix == ".zarr" else {}
    tree = xr.open_datatree(path, **kw)
    try:
        return sorted(tree.children)
    finally:
        tree.close()


def _cmd_report(args: argparse.Namespace) -> int:
    if args.fit is None and args.data is None:
        raise CliError("give a saved fit (FIT) and/or --data LOG: there is nothing to report")
    _check_no_log_flags(args, "a saved fit carries the data it was fitted to")
    out = _check_out(args.out, args.overwrite, kind="report")
    fit = None
    if args.fit is not None:
        if not Path(args.fit).exists():
            raise CliError(f"no such file or folder: {args.fit!r} (FIT)")
        from .io import load_fit

        fit = load_fit(args.fit)
    data = None
    if args.data is not None:
        data, msgs = load_any(args.data, args)
        print_warnings(msgs)
    from .report import build
    from .report import check_fit_data

    if fit is not None and data is not None:
        check_fit_data(fit, data, fit_name=f"FIT {args.fit!r}", data_name=f"--data {args.data!r}")
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = build(
            fit,
            data,
            path=out,
            prob=args.prob,
            n_resamples=args.resamples,
            rng=args.seed,
            overwrite=args.overwrite,
            progress=_progress_wanted(args),
            **_bootstrap_kw(args),
        )
    print(
        f"report written to {path} ({path.stat().st_size / 1e6:.1f} MB, {seconds(time.perf_counter() - t0)})"
    )
    line = convergence_line(fit) if fit is not None else None
    # the sections' other warnings are in the report's own "Warnings" section
    skipped = [str(w.message) for w in caught if w.category.__name__ == "ReportSectionWarning"]
    print_warnings(([line] if line else []) + skipped)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    ds, msgs = load_any(args.file, args)
    from .freq import compare_agents
    from .report import MATRIX_ABOVE
    from .report import PAIR_ROWS
    from .report import marks_holm_note
    from .report import marks_legend
    from .report import no_p_note
    from .report import pair_frame
    from .report import pair_matrix
    from .report import pair_text
    from .report import score_order
    from .report import shown_pairs

    m = ds.sizes["agent"]
    if ds.sizes["task"] < 2:  # said here: the library's refusal names its own `scheme`, no flag of this command
        raise CliError(
            f"compare needs at least 2 tasks: the paired tests and intervals resample tasks, and "
            f"{', '.join(map(repr, args.file))} holds 1 ({str(ds['task'].values[0])!r}): every resample would "
            "be the data. Add tasks (hierbench summary shows each agent's mean and runs)"
        )
    if _progress_wanted(args):
        print(f"paired tests: {m * (m - 1) // 2} pairs ...", file=sys.stderr, flush=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # compare_agents' own defaults: the report uses the same, so both agree
        cmp = compare_agents(ds, prob=args.prob, rng=args.seed)
    alpha = 1.0 - args.prob
    table = pair_frame(cmp, alpha=alpha)
    # the numbered matrix reads up to the pair-row cap (25 agents); above it the pair list, shortened
    matrix = MATRIX_ABOVE < m and m * (m - 1) // 2 <= PAIR_ROWS and not args.all_pairs
    if args.json:
        rows = [{"pair": k, **v} for k, v in table.to_dict(orient="index").items()]
        res = cmp.to_dataset()
        keys = ("test", "adjust", "unit", "cluster_column", "maxt_crit", "maxt_method")
        head = {k: res.attrs.get(k) for k in keys}
        # what the rows' per-pair and simultaneous ends are, as the result describes them
        for k, v in (("per_pair", "ci"), ("simultaneous", "ci_simultaneous")):
            # the level is "prob"; the kind is said apart, since the detail need not name it
            head |= {f"{k}_interval": res[v].attrs.get("ci_detail"), f"{k}_interval_kind": res[v].attrs.get("ci_kind")}
        # the sentences the text prints under its table (a pair without a p-value; max-T's floor)
        head["notes"] = [n.replace("`", "") for n in (no_p_note(table), marks_holm_note(table, alpha)) if n]
        print(json.dumps(_jsonable({"prob": args.prob, "alpha": round(alpha, 12), **head, "pairs": rows}), indent=2))
    else:
        print(_compare_text(cmp, args, matrix, ds))
        if matrix:
            print(pair_matrix(cmp, alpha=alpha, order=score_order(ds)).to_string())
            name = cmp.to_dataset().attrs.get("adjust_name", "Holm")
            print(f"\n{marks_legend(alpha, name).replace('`', '')}.")
        else:
            shown, said = (table, "") if args.all_pairs else shown_pairs(
                table, "hierbench compare with --all-pairs (one row each) or --json")
            if said:
                print(textwrap.fill(said.replace("`", ""), 100) + "\n")
            print(pair_text(shown))
        for note in (no_p_note(table), marks_holm_note(table, alpha)):
            if note:
                print("\n" + textwrap.fill(note.replace("`", ""), 100))
    print_warnings(msgs + warning_lines(caught) + _marked(ds))
    return 0


def _marked(ds) -> list[str]:
    """The agents the log itself marks (an --annotate column on at least half their runs; a loader's flag).

    SWE-bench bash-only: Claude 3.7 Sonnet's 500 runs are flagged by the file as disagreeing with
    the leaderboard; its pairs are compared like any other's.
    """
    import warnings as _w

    from .data import summarize
    from .report import marked_agents

    with _w.catch_warnings():
        _w.simplefilter("ignore")  # summarize's notices are the summary command's business
        s = summarize(ds).to_dataframe()
    s.index = s.index.astype(str)
    return [f"the log marks agents: {m.replace('`', '')}" for m in marked_agents(s, ds)]


def _compare_text(cmp, args: argparse.Namespace, matrix: bool, data=None) -> str:
    """The sentence, the settings and (as a matrix) the matrix's order; ``data``: the log (a graded one's units)."""
    from .report import SCORE_ORDER_WORDS
    from .report import graded_units
    from .report import pair_sentence
    from .report import settings_text

    head = "\n".join(
        textwrap.wrap(pair_sentence(cmp, 1 - args.prob) + graded_units(data, ""), 100)
        + textwrap.wrap(f"How: {settings_text(cmp)}.", 100)
    ) + "\n"
    if matrix:
        head += "\n".join(textwrap.wrap(
            f"{cmp.to_dataset().sizes['agent']} agents: the pairs as a matrix, {SCORE_ORDER_WORDS}; the "
            "full table: --all-pairs or --json.", 100, break_on_hyphens=False,
        )) + "\n"  # fmt: skip
    return head


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    data = truth = None
    _check_no_log_flags(args, "without it the demo runs on its embedded evaluation")
    if args.data:
        data, msgs = load_any(args.data, args)
        print_warnings(msgs)
    return run_demo(
        data=data,
        truth=truth,
        out=args.out,
        seed=args.seed,
        fast=args.fast,
        overwrite=args.overwrite,
        progress=_progress_wanted(args),
        **_bootstrap_kw(args),
    )


# ---------------------------------------------------------------- parser


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
        "and when an 'agent' column holds several agents)",
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
        "--levels", default=None, metavar="G1,G2,...",
        help="the --score column holds ordinal grades of this scale, e.g. 1,2,3,4,5: each score must "
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


def _add_file_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        metavar="LOG",
        nargs="+",
        help="run records: .csv, .tsv, .jsonl, .parquet, .nc, or Inspect .eval or .json logs (several "
        "Inspect logs, one per model, are read together)",
    )
    _add_columns(p)


def _add_stats_options(p: argparse.ArgumentParser, resamples: int | None = 1999) -> None:
    p.add_argument(
        "--prob", type=float, default=0.95, help="level of every interval (default 0.95)"
    )
    if resamples is not None:
        p.add_argument(
            "--resamples",
            type=int,
            default=resamples,
            help=f"bootstrap resamples of the agents' intervals (default {resamples})",
        )
    p.add_argument("--seed", type=int, default=0, help="seed of the resamples (default 0)")


def _add_bootstrap_method(p: argparse.ArgumentParser) -> None:
    """``--bootstrap-method``: the agents' bootstrap interval of a command that bootstraps them."""
    p.add_argument(
        "--bootstrap-method", choices=["bca", "percentile"], default=None,
        help="the agents' bootstrap interval: bca (default) or percentile, which is defined where "
        "BCa is not (every resample on one side of the estimate). Where an agent scores 0 on every "
        "task (or 1 on every one) no resampling interval has width (percentile gives [0, 0] for 0 of "
        "120): hierbench.freq.pass_hat_k(data, 1) gives a distribution-free bound instead",
    )  # fmt: skip


def _add_fit(sub) -> None:
    """The `fit` command's parser."""
    f = sub.add_parser("fit", help="fit a hierarchical Bayesian model to a run log and save it")
    _add_file_options(f)
    f.add_argument(
        "--model",
        choices=["crossed", "beta_binomial"],
        default=None,
        help="crossed agent x task logit model (default) or per-agent beta-binomial",
    )
    f.add_argument(
        "--formula", default=None, metavar="FORMULA",
        help="fit a formula model instead (lme4 / Bambi syntax, hierbench.bayes.build_mixed), e.g. "
        "'score ~ scaffold + (1|model) + (1|task)'; its agent and task variables are the log's "
        "--agent-coord and --task-coord columns",
    )  # fmt: skip
    f.add_argument(
        "--family", choices=["auto", "binomial", "fractional", "ordinal"], default="auto",
        help="the formula model's likelihood (default auto: ordinal with --levels, binomial when every "
        "score is 0 or 1, else fractional for scores in [0, 1])",
    )  # fmt: skip
    f.add_argument(
        "-o", "--out", required=True, metavar="FIT", help="where to save the fit (.nc or .zarr)"
    )
    f.add_argument(
        "--draws", type=int, default=None,
        help="draws per chain (default: the package's rule, until every element's bulk and tail ESS "
        "reach 400 and R-hat its limit, at most 2000)",
    )  # fmt: skip
    f.add_argument(
        "--tune", type=int, default=None,
        help="tuning steps per chain (default: 300, from the posterior mode)",
    )  # fmt: skip
    f.add_argument("--chains", type=int, default=4, help="chains (default 4)")
    f.add_argument("--seed", type=int, default=0, help="sampler seed (default 0)")
    f.add_argument(
        "--keep-predictive",
        action="store_true",
        help="also save the posterior_predictive group (for the report's predictive check)",
    )
    f.add_argument(
        "--log-likelihood",
        action="store_true",
        help="also compute and save the pointwise log_likelihood group (for LOO: "
        "arviz_stats.loo, hierbench.bayes.loo_compare)",
    )
    f.add_argument(
        "--keep-all",
        action="store_true",
        help="save every group the fit has (the per-observation groups are left out by default)",
    )
    f.add_argument("--overwrite", action="store_true", help="replace FIT if it exists")
    f.add_argument("--quiet", action="store_true", help="no sampler progress")
    f.set_defaults(func=_cmd_fit)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``hierbench`` command."""
    parser = argparse.ArgumentParser(
        prog="hierbench", description="Honest statistics for AI and agent evaluations."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    v = sub.add_parser(
        "validate", help="check a run log against the eval-dataset schema and report it"
    )
    _add_file_options(v)
    v.add_argument("--json", action="store_true", help="machine-readable output")
    v.set_defaults(func=_cmd_validate)
    s = sub.add_parser(
        "summary", help="per agent: tasks, runs, mean score, error rate, missing cells"
    )
    _add_file_options(s)
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=_cmd_summary)

    _add_fit(sub)

    r = sub.add_parser(
        "report", help="write the HTML (or Markdown) report of a saved fit and/or a log"
    )
    r.add_argument("fit", nargs="?", metavar="FIT", help="a fit saved by `hierbench fit`")
    r.add_argument(
        "--data", metavar="LOG", help="the run log (data summary and the frequentist half)"
    )
    r.add_argument("-o", "--out", required=True, metavar="REPORT", help="report.html or report.md")
    _add_columns(r)
    _add_stats_options(r)
    _add_bootstrap_method(r)
    r.add_argument("--overwrite", action="store_true", help="replace REPORT if it exists")
    r.add_argument("--quiet", action="store_true", help="no progress lines")
    r.set_defaults(func=_cmd_report)

    c = sub.add_parser(
        "compare",
        help="every pair of agents: paired differences, simultaneous intervals, max-T "
        "(and Holm/BH) adjusted tests",
    )
    _add_file_options(c)
    _add_stats_options(c, resamples=None)  # compare_agents' own resampling defaults
    c.add_argument("--json", action="store_true", help="machine-readable output")
    c.add_argument(
        "--all-pairs",
        action="store_true",
        help="one row per pair even with many agents (default: a matrix above 8 agents)",
    )
    c.add_argument("--quiet", action="store_true", help="no progress line")
    c.set_defaults(func=_cmd_compare)

    d = sub.add_parser(
        "demo", help="the main job, on the embedded default evaluation or on --data LOG"
    )
    d.add_argument(
        "--data", metavar="LOG", help="run the analysis on this log instead (no truth then)"
    )
    _add_columns(d)
    d.add_argument(
        "--out",
        default="hierbench-demo-report",
        help="folder for the report (HTML and Markdown), the fit and the data ('' for none)",
    )
    d.add_argument("--seed", type=int, default=20261130, help="seed of the samplers and resamples")
    d.add_argument("--fast", action="store_true", help="fewer draws and resamples (a smoke run)")
    _add_bootstrap_method(d)
    d.add_argument(
        "--overwrite", action="store_true", help="replace an earlier demo's files in --out"
    )
    d.add_argument("--quiet", action="store_true", help="no sampler progress")
    d.set_defaults(func=_cmd_demo)
    return parser


def _user_words(msg: str, args: argparse.Namespace) -> str:
    """Say a library message in the user's words: flags for Python arguments, files for objects."""
    log = getattr(args, "file", None) or getattr(args, "data", None) or "LOG"
    if isinstance(log, list):
        log = ", ".join(log)
    for name in ("obj", "ds", "data"):
        msg = msg.replace(f"`{name}`", repr(log))
    for pattern, flag in _REMEDIES:
        msg = re.sub(pattern, flag, msg)
    for name, flag in _FLAG_OF.items():
        if name in _ASSIGNABLE:  # a remedy `name='value'` -> "--flag value"
            msg = re.sub(rf"`?\b{name}=(['\"]?)([\w.-]+)\1`?", rf"{flag} \2", msg)
        msg = re.sub(rf"`{name}`", flag, msg)
    return msg


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hierbench`` command; returns the exit status (0 ok, 2 bad input or an error).

    Examples
    --------
    >>> import tempfile, pathlib, pandas as pd
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "runs.csv"
    >>> pd.DataFrame({"agent": ["a", "a"], "task": ["t1", "t2"], "score": [1, 0]}).to_csv(f)
    >>> main(["summary", str(f)])  # doctest: +NORMALIZE_WHITESPACE
    1 agent x 2 tasks, 2 runs (0 infrastructure errors, errors='fail'); 0 agent x task cells never run
           tasks  missing  runs  errors error rate mean (per task) mean (per run)
    agent
    a          2        0     2       0      0.000           0.500          0.500
    0
    """
    parser = build_parser()
    args = parser.parse_args(list(argv) if argv is not None else None)
    import os

    os.environ.setdefault("MPLBACKEND", "Agg")  # figures go into files, never to a window
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print(f"hierbench {args.command}: interrupted", file=sys.stderr)
        return 130
    except CliError as exc:
        print(f"hierbench {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, ValueError, TypeError, KeyError, EOFError, UnicodeError, Warning) as exc:
        # HierbenchError derives from ValueError; a HierbenchWarning raised as an error under
        # -W error is a Warning; unreadable or refused files are OSError
        if os.environ.get("HIERBENCH_DEBUG"):  # the full traceback, for bug reports
            raise
        kind = "invalid input" if isinstance(exc, (ValueError, Warning)) else "error"
        text = str(exc) if str(exc) else type(exc).__name__
        if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in text:
            text = f"{exc.filename}: {text}"
        print(f"hierbench {args.command}: {kind}: {_user_words(text, args)}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
