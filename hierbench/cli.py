"""The ``hierbench`` command line: validate, summary, fit, report, compare, demo.

A thin layer over the library: every number it prints comes from
:mod:`hierbench.data`, :mod:`hierbench.freq`, :mod:`hierbench.bayes` or
:mod:`hierbench.report`. Only the standard library is imported at start-up
(``hierbench --help`` is instant); each command imports what it needs.

Errors (bad input, a missing or unreadable file, a refused overwrite) are
printed as one line naming the file or the flag, and the exit status is 2;
no Python traceback (set ``HIERBENCH_DEBUG=1`` to see it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from ._console import _report_text, _summary_frame, _summary_text, convergence_line, fit_kwargs

__all__ = ["CliError", "build_parser", "convergence_line", "fit_kwargs", "load_any", "main"]

#: Column flags of the tabular readers: the Python argument name -> the flag the user typed.
_FLAG_OF = {
    **{n: f"--{n}" for n in ("agent", "task", "run", "score", "error", "tag", "cluster")},
    **{n: f"--{n}" for n in ("prob", "draws", "tune", "chains", "seed")},
    "n_resamples": "--resamples",
    "n_permutations": "--resamples",
    "rng": "--seed",
}


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


def load_any(path: str, args: argparse.Namespace | None = None):
    """Read FILE (CSV, TSV, JSONL, Parquet, netCDF ``.nc`` or Inspect ``.eval``) into an eval dataset.

    Returns the dataset and the warnings raised while reading (as text).
    """
    p = Path(path)
    if not p.exists():
        raise CliError(f"no such file or folder: {path!r}")
    opts = vars(args) if args is not None else {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if p.suffix == ".nc":
            from .io import load_dataset

            ds = load_dataset(p)
        elif p.suffix == ".eval" or (p.is_dir() and any(p.rglob("*.eval"))):
            from .data import read_inspect_log

            ds = read_inspect_log(p, scorer=opts.get("scorer"), errors=opts.get("errors") or "fail")
        else:
            from .data import from_records

            ds = from_records(
                p,
                agent=opts.get("agent") or "agent",
                task=opts.get("task") or "task",
                run=opts.get("run"),
                score=opts.get("score") or "score",
                error=opts.get("error"),
                tag=opts.get("tag"),
                cluster=opts.get("cluster"),
                extra=opts.get("extra") or None,
                annotations=opts.get("annotate") or None,
                errors=opts.get("errors") or "fail",
            )
    msgs = [
        f"{w.category.__name__}: {w.message}" for w in caught if issubclass(w.category, UserWarning)
    ]
    return ds, msgs


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


def _check_out(path: str, overwrite: bool, flag: str = "-o") -> Path:
    out = Path(path)
    if out.exists() and not overwrite:
        raise CliError(f"{flag} {path!r} already exists; pass --overwrite to replace it")
    if not out.parent.exists():
        raise CliError(f"{flag} {path!r}: folder {str(out.parent)!r} does not exist")
    return out


# ---------------------------------------------------------------- commands


def _cmd_validate(args: argparse.Namespace) -> int:
    from .data import describe

    ds, msgs = load_any(args.file, args)
    rep = describe(ds)
    if args.json:
        print(json.dumps(_jsonable({**rep, "warnings": list(msgs)}), indent=2))
    else:
        print(f"valid eval dataset ({rep['schema']})")
        print(_report_text(rep, msgs))
    return 0


def _cmd_summary(args: argparse.Namespace) -> int:
    from .data import describe

    ds, msgs = load_any(args.file, args)
    rep = describe(ds)
    df = _summary_frame(ds)
    if args.json:
        agents = [{"agent": a, **row} for a, row in df.to_dict(orient="index").items()]
        print(
            json.dumps(
                _jsonable({"dataset": rep, "agents": agents, "warnings": list(msgs)}), indent=2
            )
        )
    else:
        print(
            f"{rep['n_agents']} agents x {rep['n_tasks']} tasks, {rep['n_runs_total']} runs "
            f"({rep['n_error_runs']} infrastructure errors, errors={rep['errors']!r}); "
            f"{rep['n_missing_cells']} agent x task cells never run"
        )
        print(_summary_text(ds))
        for m in msgs:
            print(f"warning: {m}")
    return 0


def _cmd_fit(args: argparse.Namespace) -> int:
    out = _check_out(args.out, args.overwrite)
    ds, msgs = load_any(args.file, args)
    for m in msgs:
        print(f"warning: {m}", file=sys.stderr)
    from . import bayes
    from .io import save_fit

    builder = {"crossed": bayes.build_crossed, "beta_binomial": bayes.build_beta_binomial}[
        args.model
    ]
    model = builder(ds)
    t0 = time.perf_counter()
    progress = _progress_wanted(args)
    if progress:
        print(
            f"fitting the {args.model} model: {args.chains} chains x {args.draws} draws "
            f"(+{args.tune} tuning); compiling first",
            file=sys.stderr,
            flush=True,
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dt = bayes.fit(
            model,
            draws=args.draws,
            tune=args.tune,
            chains=args.chains,
            rng=args.seed,
            **fit_kwargs(bayes.fit, progress),
        )
    wall = time.perf_counter() - t0
    groups = (
        "all"
        if args.keep_all
        else (["posterior_predictive"] if args.keep_predictive else "compact")
    )
    if groups != "compact" and isinstance(groups, list):
        groups = [g for g in groups if g in dt.children]
    save_fit(dt, out, groups=groups, overwrite=args.overwrite)
    size = (
        out.stat().st_size
        if out.is_file()
        else sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    )
    a = dt.attrs
    print(
        f"{args.model} fit of {ds.sizes['agent']} agents x {ds.sizes['task']} tasks: {wall:.0f} s "
        f"(compile {float(a.get('compile_time', float('nan'))):.0f} s, sampling "
        f"{float(a.get('sampling_time', float('nan'))):.0f} s); max R-hat "
        f"{float(a.get('diag_max_r_hat', float('nan'))):.3f}, min ESS bulk "
        f"{float(a.get('diag_min_ess_bulk', float('nan'))):.0f}, divergences {a.get('diag_n_divergent', '?')}"
    )
    print(f"saved to {out} ({size / 1e6:.1f} MB, groups {groups!r})")
    line = convergence_line(dt)
    if line:
        print(f"warning: {line}")
    for w in caught:
        if issubclass(w.category, UserWarning) and w.category.__name__ != "ConvergenceWarning":
            print(f"warning: {w.category.__name__}: {w.message}", file=sys.stderr)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    if args.fit is None and args.data is None:
        raise CliError("give a saved fit (FIT) and/or --data LOG: there is nothing to report")
    out = _check_out(args.out, args.overwrite)
    fit = None
    if args.fit is not None:
        if not Path(args.fit).exists():
            raise CliError(f"no such file or folder: {args.fit!r} (FIT)")
        from .io import load_fit

        fit = load_fit(args.fit)
    data = None
    if args.data is not None:
        data, msgs = load_any(args.data, args)
        for m in msgs:
            print(f"warning: {m}", file=sys.stderr)
    from .report import build

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
        )
    print(
        f"report written to {path} ({path.stat().st_size / 1e6:.1f} MB, {time.perf_counter() - t0:.0f} s)"
    )
    if fit is not None:
        line = convergence_line(fit)
        if line:
            print(f"warning: {line}")
    for w in caught:
        if w.category.__name__ == "ReportSectionWarning":
            print(f"warning: {w.message}")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    ds, msgs = load_any(args.file, args)
    from .freq import compare_agents
    from .report import _pair_table

    if _progress_wanted(args):
        m = ds.sizes["agent"]
        print(
            f"paired tests: {m * (m - 1) // 2} pairs x {args.resamples} resamples and permutations ...",
            file=sys.stderr,
            flush=True,
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cmp = compare_agents(
            ds,
            prob=args.prob,
            n_resamples=args.resamples,
            n_permutations=args.resamples,
            rng=args.seed,
        )
    table = _pair_table(cmp, args.prob)
    if args.json:
        rows = [{"pair": k, **v} for k, v in table.to_dict(orient="index").items()]
        print(json.dumps(_jsonable({"prob": args.prob, "pairs": rows}), indent=2))
    else:
        table = table.rename(
            columns={"lower": f"{args.prob:.0%} lower", "upper": f"{args.prob:.0%} upper"}
        )
        print(
            f"Every pair on the tasks both ran (row agent minus column agent), task as the unit:\n"
            f"mean paired difference, {args.prob:.0%} paired cluster-bootstrap interval "
            f"({args.resamples} resamples), sign-flip permutation p-value, Holm and BH adjusted.\n"
        )
        print(table.to_string(float_format="{:.3f}".format))
    for m in msgs + [
        f"{w.category.__name__}: {w.message}" for w in caught if issubclass(w.category, UserWarning)
    ]:
        print(f"warning: {m}", file=sys.stderr)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    data = truth = None
    if args.data:
        data, msgs = load_any(args.data, args)
        for m in msgs:
            print(f"warning: {m}", file=sys.stderr)
    return run_demo(
        data=data,
        truth=truth,
        out=args.out,
        seed=args.seed,
        fast=args.fast,
        overwrite=args.overwrite,
        progress=_progress_wanted(args),
    )


# ---------------------------------------------------------------- parser


def _add_columns(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("columns (tabular logs)")
    g.add_argument("--agent", default="agent", help="agent column (default: agent)")
    g.add_argument("--task", default="task", help="task column (default: task)")
    g.add_argument(
        "--run", default=None, help="run column (default: number runs per cell in file order)"
    )
    g.add_argument(
        "--score", default="score", help="score column, values in [0, 1] (default: score)"
    )
    g.add_argument("--error", default=None, help="infrastructure-error column (bool, 0/1 or text)")
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
    p.add_argument(
        "--errors",
        choices=["fail", "exclude"],
        default="fail",
        help="errored runs count as failures (fail, default) or as not run (exclude)",
    )
    p.add_argument("--scorer", default=None, help="Inspect logs: which scorer is the score")


def _add_file_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "file",
        metavar="LOG",
        help="run records: .csv, .tsv, .jsonl, .parquet, .nc or Inspect .eval",
    )
    _add_columns(p)


def _add_stats_options(p: argparse.ArgumentParser, resamples: int = 1999) -> None:
    p.add_argument(
        "--prob", type=float, default=0.95, help="level of every interval (default 0.95)"
    )
    p.add_argument(
        "--resamples",
        type=int,
        default=resamples,
        help=f"bootstrap resamples and permutations (default {resamples})",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the resamples (default 0)")


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

    f = sub.add_parser("fit", help="fit a hierarchical Bayesian model to a run log and save it")
    _add_file_options(f)
    f.add_argument(
        "--model",
        choices=["crossed", "beta_binomial"],
        default="crossed",
        help="crossed agent x task logit model (default) or per-agent beta-binomial",
    )
    f.add_argument(
        "-o", "--out", required=True, metavar="FIT", help="where to save the fit (.nc or .zarr)"
    )
    f.add_argument("--draws", type=int, default=1000, help="draws per chain (default 1000)")
    f.add_argument("--tune", type=int, default=1000, help="tuning steps per chain (default 1000)")
    f.add_argument("--chains", type=int, default=4, help="chains (default 4)")
    f.add_argument("--seed", type=int, default=0, help="sampler seed (default 0)")
    f.add_argument(
        "--keep-predictive",
        action="store_true",
        help="also save the posterior_predictive group (for the report's predictive check)",
    )
    f.add_argument(
        "--keep-all", action="store_true", help="save every group the fit has (fits compute log_likelihood only when asked: hbb.fit(..., log_likelihood=True))"
    )
    f.add_argument("--overwrite", action="store_true", help="replace FIT if it exists")
    f.add_argument("--quiet", action="store_true", help="no sampler progress")
    f.set_defaults(func=_cmd_fit)

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
    r.add_argument("--overwrite", action="store_true", help="replace REPORT if it exists")
    r.add_argument("--quiet", action="store_true", help="no progress lines")
    r.set_defaults(func=_cmd_report)

    c = sub.add_parser(
        "compare", help="every pair of agents: paired differences, intervals, Holm/BH tests"
    )
    _add_file_options(c)
    _add_stats_options(c, resamples=9999)
    c.add_argument("--json", action="store_true", help="machine-readable output")
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
    d.add_argument(
        "--overwrite", action="store_true", help="replace an earlier demo's files in --out"
    )
    d.add_argument("--quiet", action="store_true", help="no sampler progress")
    d.set_defaults(func=_cmd_demo)
    return parser


def _user_words(msg: str, args: argparse.Namespace) -> str:
    """Replace Python argument names in a library message by the flags the user typed."""
    msg = msg.replace(
        "`obj`", repr(getattr(args, "file", None) or getattr(args, "data", None) or "LOG")
    )
    for name, flag in _FLAG_OF.items():
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
    1 agents x 2 tasks, 2 runs (0 infrastructure errors, errors='fail'); 0 agent x task cells never run
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
