"""The ``hierbench`` command line: ``validate``, ``summary`` and ``demo``.

A thin layer over :mod:`hierbench.data`: every number it prints comes from
:func:`hierbench.data.describe` or :func:`hierbench.data.summarize`.

``demo`` is a list of section functions (:data:`DEMO_SECTIONS`), each taking
the :class:`DemoContext` and returning its text, so later work adds fit,
compare and report sections by appending to the list.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from .data import EvalDataError, describe, from_records, summarize

__all__ = ["DEMO_SECTIONS", "DemoContext", "load_any", "main"]


# ---------------------------------------------------------------- input


def load_any(path: str, args: argparse.Namespace | None = None) -> tuple[xr.Dataset, list[str]]:
    """Read FILE (CSV, TSV, JSONL, Parquet, netCDF ``.nc`` or Inspect ``.eval``) into an eval dataset.

    Returns the dataset and the warnings raised while reading (as text).
    """
    p = Path(path)
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


def _summary_frame(ds: xr.Dataset) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = summarize(ds)
    df = s.to_dataframe()
    df.index = df.index.astype(str)
    return df


def _summary_text(ds: xr.Dataset) -> str:
    df = _summary_frame(ds)
    cols = {
        "n_tasks_attempted": "tasks",
        "n_missing_cells": "missing",
        "n_runs": "runs",
        "n_error": "errors",
        "error_rate": "error rate",
        "mean_score": "mean (per task)",
        "micro_mean_score": "mean (per run)",
    }
    ann = [c for c in df.columns if c not in cols and c != "n_scored"]
    show = df[[*cols, *ann]].rename(columns=cols)
    fmt = {c: "{:.3f}".format for c in ("error rate", "mean (per task)", "mean (per run)")}
    return show.to_string(formatters=fmt)


def _report_text(rep: dict, msgs: Sequence[str]) -> str:
    rpc = rep["runs_per_cell"]
    lines = [
        f"source: {rep['source']}",
        f"records: {rep['n_records_read']} read, {rep['n_records_kept']} kept",
    ]
    for why, n in (rep["not_kept"] or {}).items():
        lines.append(f"  not kept: {n} ({why})")
    lines += [
        f"agents: {rep['n_agents']}    tasks: {rep['n_tasks']}    runs: {rep['n_runs_total']}"
        f"    scores: {rep['score_kind']}",
        f"runs per cell: min {rpc['min']}, median {rpc['median']:g}, max {rpc['max']}"
        f"    ({'balanced' if rep['balanced'] else 'unbalanced'})",
        f"missing cells: {rep['n_missing_cells']} of {rep['n_cells']} (agent x task never run)",
        f"error runs: {rep['n_error_runs']} (policy errors={rep['errors']!r})",
    ]
    ann = ", ".join(f"{k}: {v}" for k, v in rep["annotations"].items()) or "none"
    lines.append(f"annotations: {ann}")
    extra = [
        v for v in rep["per_run_variables"] if v not in ("score", "error", *rep["annotations"])
    ]
    lines.append(f"per-run variables: {', '.join(extra) or 'none'}")
    if rep["task_coords"]:
        lines.append(f"task coords: {', '.join(rep['task_coords'])}")
    if rep["agent_coords"]:
        lines.append(f"agent coords: {', '.join(rep['agent_coords'])}")
    for what, n in (rep["inconsistent_attributes"] or {}).items():
        lines.append(f"inconsistent: {what} differs between runs of {n} (first value kept)")
    lines += [f"warning: {m}" for m in msgs]
    return "\n".join(lines)


def _jsonable(obj):
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


# ---------------------------------------------------------------- commands


def _cmd_validate(args: argparse.Namespace) -> int:
    ds, msgs = load_any(args.file, args)
    rep = describe(ds)
    if args.json:
        print(json.dumps(_jsonable({**rep, "warnings": list(msgs)}), indent=2))
    else:
        print(f"valid eval dataset ({rep['schema']})")
        print(_report_text(rep, msgs))
    return 0


def _cmd_summary(args: argparse.Namespace) -> int:
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


@dataclass
class DemoContext:
    """State shared by the demo sections; sections may add results to ``extra``."""

    data: xr.Dataset
    truth: xr.Dataset
    extra: dict = field(default_factory=dict)


def _demo_data(ctx: DemoContext) -> str:
    rep = describe(ctx.data)
    return (
        "The embedded default evaluation (hierbench.testing.default_dataset): simulated from\n"
        "the crossed logit model with known parameters, ragged like a real one.\n\n"
        + _report_text(rep, [])
    )


def _demo_summary(ctx: DemoContext) -> str:
    return _summary_text(ctx.data)


def _demo_truth(ctx: DemoContext) -> str:
    t = ctx.truth
    true_mean = t["p"].mean("task")
    obs = _summary_frame(ctx.data)["mean_score"]
    df = pd.DataFrame(
        {
            "true agent effect (logit)": t["agent_effect"].to_series(),
            "true mean p over tasks": true_mean.to_series(),
            "observed mean (per task)": obs,
        }
    )
    df.index = df.index.astype(str)
    scal = ", ".join(
        f"{k} = {float(t[k]):g}"
        for k in ("mu", "sd_agent", "sd_task", "sd_agent_task", "sd_cluster", "sd_run")
    )
    return (
        f"True parameters: {scal}\n\n"
        + df.to_string(float_format="{:.3f}".format)
        + "\n\nThe observed means scatter around the true ones by task sampling and run noise;"
        "\nlater sections fit the hierarchical model and put intervals on that gap."
    )


#: The demo, in order: (title, section function). Append to extend ``hierbench demo``.
DEMO_SECTIONS: list[tuple[str, Callable[[DemoContext], str]]] = [
    ("Data", _demo_data),
    ("Summary per agent", _demo_summary),
    ("What the truth was", _demo_truth),
]


def _analysis_sections() -> None:
    from .demo import ANALYSIS_SECTIONS

    DEMO_SECTIONS.extend(ANALYSIS_SECTIONS)


_analysis_sections()


def _cmd_demo(args: argparse.Namespace) -> int:

    from .demo import write_report
    from .testing import default_dataset

    data, truth = default_dataset()
    ctx = DemoContext(data=data, truth=truth, extra={"seed": args.seed, "fast": args.fast})
    done: list[tuple[str, str]] = []
    for i, (title, section) in enumerate(DEMO_SECTIONS, start=1):
        print(f"\n## {i}. {title}\n", flush=True)
        text = section(ctx)
        print(text, flush=True)
        done.append((f"{i}. {title}", text))
    if args.out:
        path = write_report(ctx, args.out, done)
        print(f"\nReport, figures, fit and data written to {path}")
    return 0


# ---------------------------------------------------------------- parser


def _add_file_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="run records: .csv, .tsv, .jsonl, .parquet, .nc or Inspect .eval")
    g = p.add_argument_group("columns (tabular files)")
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
    p.add_argument("--json", action="store_true", help="machine-readable output")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hierbench", description="Honest statistics for AI and agent evaluations."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    v = sub.add_parser(
        "validate", help="check a run log against the eval-dataset schema and report it"
    )
    _add_file_options(v)
    v.set_defaults(func=_cmd_validate)
    s = sub.add_parser(
        "summary", help="per agent: tasks, runs, mean score, error rate, missing cells"
    )
    _add_file_options(s)
    s.set_defaults(func=_cmd_summary)
    d = sub.add_parser("demo", help="the main job on the embedded default evaluation")
    d.add_argument(
        "--out",
        default="hierbench-demo-report",
        help="folder for the Markdown report, figures, the fit and the data ('' for none)",
    )
    d.add_argument("--seed", type=int, default=20261130, help="seed of the samplers and resamples")
    d.add_argument("--fast", action="store_true", help="fewer draws and resamples (a smoke run)")
    d.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``hierbench`` command; returns the exit status (0 ok, 1 invalid input).

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
    try:
        return int(args.func(args))
    except (EvalDataError, FileNotFoundError) as exc:
        print(f"hierbench {args.command}: invalid input: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
