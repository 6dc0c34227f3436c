"""The commands that read a log or a fit and print: validate, summary, report, compare, demo.

Each imports what it needs when it runs, so that ``hierbench --help`` stays instant.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

from .._console import _report_text
from .._console import _summary_frame
from .._console import _summary_text
from .._console import convergence_line
from .._console import seconds
from .._console import warning_lines
from ._battles import check_battle_flags
from ._battles import cmd_battles_summary
from ._battles import cmd_battles_validate
from ._battles import read_battle_log
from ._common import CliError
from ._common import _check_out
from ._common import _jsonable
from ._common import _progress_wanted
from ._reading import _check_no_log_flags
from ._reading import is_saved_log
from ._reading import load_any
from ._reading import say_warnings

if TYPE_CHECKING:
    import xarray as xr


def _cmd_validate(args: argparse.Namespace) -> int:
    if args.battles:
        return cmd_battles_validate(args)
    check_battle_flags(args)
    from ..data import FormulaError
    from ..data import check_grade_scale
    from ..data import read_report

    ds, msgs = load_any(args.file, args)
    try:  # the ordinal fit's rule (a grade that never occurs), said before any fit; the data stay valid
        check_grade_scale(ds)
    except FormulaError as exc:
        msgs = [*msgs, f"the ordinal fit (fit --formula) will refuse this grade scale: {exc}"]
    rep = read_report(ds)
    if args.json:
        print(json.dumps(_jsonable({**rep, "warnings": list(msgs)}), indent=2))
    else:
        print(f"valid eval dataset ({rep['schema']})")
        print(_report_text(rep))
    say_warnings(msgs, args)
    return 0


def _cmd_summary(args: argparse.Namespace) -> int:
    if args.battles:
        return cmd_battles_summary(args)
    check_battle_flags(args)
    from ..data import read_report
    from ..report import score_order

    ds, msgs = load_any(args.file, args)
    misfit = _misfit(ds, args)  # on the log as read, as the report and compare test it (same draws)
    # the agents in the order compare's matrix and the report use (was: file order, 0.102 between 0.536 and 0.450)
    ds = ds.sel(agent=score_order(ds))
    df = _summary_frame(ds)
    # the report's (and the demo's) coverage flags: a ranking over disjoint task sets was said without a word
    # (METR's davinci-002, 16 of 83 tasks), then a saved log's flagged agents (attrs["flagged_agents"]) and
    # the records person fit flags, as compare says them
    msgs = list(msgs) + _coverage(ds) + _marked(ds, df) + misfit
    rep = read_report(ds)
    order = "agents by mean (per task), highest first, ties by name (the order of compare's matrix and the report)"
    if args.json:
        agents = [{"agent": a, **row} for a, row in df.to_dict(orient="index").items()]
        doc = {"dataset": rep, "agent_order": order, "agents": agents, "warnings": msgs}
        print(json.dumps(_jsonable(doc), indent=2))
    else:
        from .._base import counted

        print(
            f"{counted(rep['n_agents'], 'agent')} x {counted(rep['n_tasks'], 'task')}, {counted(rep['n_runs_total'], 'run')} "
            f"({rep['n_error_runs']} infrastructure errors, errors={rep['errors']!r}); "
            f"{rep['n_missing_cells']} agent x task cells never run"
        )
        print(f"rows: {order}")
        print(_summary_text(ds))
    say_warnings(msgs, args)
    return 0


def _coverage(ds) -> list[str]:
    """The report's coverage flags (agents on fewer than half the tasks, pairs sharing fewer than 2), as warning lines."""
    from ..report import coverage_flags

    said = "; the rows are ordered by each agent's mean over the tasks it ran all the same (hierbench compare tests only tasks both agents of a pair ran)"
    return [f"coverage: {f.replace('`', '')}{said}" for f in coverage_flags(ds)]


def _misfit(ds, args: argparse.Namespace) -> list[str]:
    """The report's person-fit flag (its Data summary; the demo's too), as warning lines of summary and compare.

    :func:`hierbench.freq.person_fit` as the report runs it (at --prob and --seed, the report's
    defaults 0.95 and 0 where the command has none, so the line is the report's), said by the
    report's own ``misfit_agents``; nothing where it does not apply (partial credit, fewer than
    3 agents) or with --no-person-fit. SWE-bench bash-only: Claude 3.7 Sonnet (20250219) "solves
    15% of the 60 tasks that >= 90% of the others solve", ranked like any other agent before.
    """
    if getattr(args, "no_person_fit", False):
        return []
    from ..report import checked_person_fit
    from ..report import misfit_agents

    if _progress_wanted(args):
        print(f"person fit: {ds.sizes['agent']} agents' records ...", file=sys.stderr, flush=True)
    fit = checked_person_fit(ds, prob=getattr(args, "prob", 0.95), rng=getattr(args, "seed", 0))
    return [m.replace("`", "") for m in misfit_agents(fit)]


def _bootstrap_kw(args: argparse.Namespace) -> dict:
    """``--bootstrap-method`` as the keyword of ``report.build`` and ``run_demo`` (not given: their own default)."""
    return {"bootstrap_method": args.bootstrap_method} if args.bootstrap_method else {}


def _saved_groups(path: Path) -> list[str]:
    """The groups a saved fit holds (read from the file, without loading the values)."""
    import xarray as xr

    from ..io import _format_of  # load_fit's rule: the content decides (a folder is zarr)

    kw = {"engine": "zarr", "consolidated": False} if _format_of(path, None) == "zarr" else {}
    tree = xr.open_datatree(path, **kw)
    try:
        return sorted(tree.children)
    finally:
        tree.close()


def _load_fit_arg(path: str) -> xr.DataTree:
    """The saved fit FIT; a saved eval dataset given as FIT is refused in the shell's words."""
    from ..io import UnreadableFileError
    from ..io import load_dataset
    from ..io import load_fit

    try:
        return load_fit(path)
    except UnreadableFileError as exc:
        try:
            ds = load_dataset(path)  # the arbiter of what a saved eval dataset is
        except (OSError, ValueError):
            raise exc from None
        if not is_saved_log(ds):  # another program's netCDF file: load_fit's own words say what it is
            raise exc from None
        raise CliError(
            f"FIT {path!r} looks like a saved eval dataset, not a fit (it has no posterior group): "
            f"report the data alone with `hierbench report --data {path}`, or beside the fit made "
            f"from it with `hierbench report FIT --data {path}`"
        ) from exc


def _cmd_report(args: argparse.Namespace) -> int:
    if args.fit is None and args.data is None:
        raise CliError("give a saved fit (FIT) and/or --data LOG: there is nothing to report")
    _check_no_log_flags(args, "a saved fit carries the data it was fitted to")
    check_battle_flags(args)
    if args.battles and args.data is None:
        raise CliError("--battles reads the battle log given with --data, and no --data was given; "
                       "give --data LOG, or leave --battles out")  # fmt: skip
    out = _check_out(args.out, args.overwrite, kind="report")
    fit = None
    if args.fit is not None:
        if not Path(args.fit).exists():
            raise CliError(f"no such file or folder: {args.fit!r} (FIT)")
        fit = _load_fit_arg(args.fit)
    data = None
    if args.data is not None:
        data, msgs = read_battle_log(args.data, args) if args.battles else load_any(args.data, args)
        say_warnings(msgs, args)
    from ..report import build
    from ..report import check_fit_data

    if fit is not None and data is not None:
        with warnings.catch_warnings(record=True) as caught:  # a pair checked in part only: said on stderr
            warnings.simplefilter("always")
            check_fit_data(fit, data, fit_name=f"FIT {args.fit!r}", data_name=f"--data {args.data!r}")
        say_warnings(warning_lines(caught), args)
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
            sections=args.sections.split(",") if args.sections else None,
            **_bootstrap_kw(args),
        )
    print(
        f"report written to {path} ({path.stat().st_size / 1e6:.1f} MB, {seconds(time.perf_counter() - t0)})"
    )
    line = _verdict_line(fit)
    # the sections' other warnings are in the report's own "Warnings" section
    skipped = [str(w.message) for w in caught if w.category.__name__ == "ReportSectionWarning"]
    say_warnings(([line] if line else []) + skipped, args)
    return 0


def _verdict_line(fit) -> str | None:
    """The saved fit's convergence verdict with what to do (None without a fit, or when it passed)."""
    if fit is None:
        return None
    from ..bayes import convergence_remedy

    return convergence_line(fit, remedy=convergence_remedy(fit, cli=True))


#: why ``compare --battles`` is refused, and what to run instead
COMPARE_NO_BATTLES = (
    "--battles: compare takes paired scores of agents over the same tasks (a run log); a battle log has one "
    "verdict per battle instead. For its agents, `hierbench summary LOG --battles` (who met whom; wins, ties, losses) "
    "and `hierbench report --data LOG --battles -o REPORT` (Bradley-Terry abilities by maximum likelihood, "
    "bootstrapped over prompts, with their rank intervals; give a FIT from `hierbench fit LOG --battles` for "
    "the Bayesian half)"
)


def _cmd_compare(args: argparse.Namespace) -> int:
    if args.battles:
        raise CliError(COMPARE_NO_BATTLES)
    ds, msgs = load_any(args.file, args)
    from .._base import check_prob
    from ..freq import compare_agents
    from ..report import MATRIX_ABOVE
    from ..report import PAIR_ROWS
    from ..report import marks_holm_note
    from ..report import marks_legend
    from ..report import no_p_note
    from ..report import pair_frame
    from ..report import pair_matrix
    from ..report import pair_text
    from ..report import score_order
    from ..report import shown_pairs

    check_prob(args.prob)  # a bad flag is said before what the log lacks
    m = ds.sizes["agent"]
    _check_comparable(ds, ", ".join(map(repr, args.file)))
    if _progress_wanted(args):
        print(f"paired tests: {m * (m - 1) // 2} pairs ...", file=sys.stderr, flush=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # compare_agents' own defaults: the report uses the same, so both agree
        cmp = compare_agents(ds, prob=args.prob, rng=args.seed)
    alpha = 1.0 - args.prob
    table = pair_frame(cmp, alpha=alpha, order=score_order(ds))  # the matrix's and the report's order
    # the numbered matrix reads up to the pair-row cap (25 agents); above it the pair list, shortened
    matrix = MATRIX_ABOVE < m and m * (m - 1) // 2 <= PAIR_ROWS and not args.all_pairs
    if args.json:
        rows = [{"pair": k, **v} for k, v in table.to_dict(orient="index").items()]
        head = _json_head(cmp.to_dataset())
        # the sentences the text prints under its table (a pair without a p-value; max-T's floor)
        head["notes"] = [n.replace("`", "") for n in (no_p_note(table), marks_holm_note(table, alpha)) if n]
        print(json.dumps(_jsonable({"prob": args.prob, "alpha": round(alpha, 12), **head, "pairs": rows}), indent=2))
    else:
        print(_compare_text(cmp, args, matrix, ds))
        if matrix:
            print(pair_matrix(cmp, alpha=alpha, order=score_order(ds)).to_string())
            name = cmp.to_dataset().attrs.get("adjust_name", "Holm")
            print("\n" + textwrap.fill(f"{marks_legend(alpha, name, table).replace('`', '')}.", 100))
        else:
            shown, said = (table, "") if args.all_pairs else shown_pairs(
                table, "hierbench compare with --all-pairs (one row each) or --json")
            if said:
                print(textwrap.fill(said.replace("`", ""), 100) + "\n")
            print(pair_text(shown))
        for note in (no_p_note(table), marks_holm_note(table, alpha)):
            if note:
                print("\n" + textwrap.fill(note.replace("`", ""), 100))
    say_warnings(msgs + _pair_warnings(warning_lines(caught)) + _marked(ds) + _misfit(ds, args), args)
    return 0


def _pair_warnings(lines: list[str]) -> list[str]:
    """``compare_agents``' warnings, a pair without shared tasks said once and with what to do.

    The bootstrap's EmptySampleWarning ("no task both agents ran") and the tests'
    UndefinedTestWarning ("fewer than 2 shared tasks") said the same fact twice, neither with
    a remedy: the first is left out where the second names those pairs (and more), which is
    told what the pairs' rows hold and what would compare them.
    """
    undefined = any(m.startswith("UndefinedTestWarning:") and "fewer than 2 shared tasks" in m for m in lines)
    out = []
    for m in lines:
        same = m.startswith("EmptySampleWarning:") and "no task both agents ran" in m and "no runs at all" not in m
        if undefined and same:
            continue
        if m.startswith("UndefinedTestWarning:") and "fewer than 2 shared tasks" in m:
            m += (" (a paired difference stands on the tasks both agents ran: their rows hold no test, interval "
                  "or verdict; to compare them, run both agents on at least 2 common tasks)")
        out.append(m)
    return out


def _json_head(res) -> dict:
    """The settings ``compare --json`` prints above its rows, as they took effect (as the text says them).

    One pair: no adjustment (the result records Holm, which over one pair leaves its p as it is,
    and the text said "adjustment: none: one pair" beside ``"adjust": "holm"``). An interval
    that was not computed (every end NaN: the max-T interval under Holm) has no kind.
    """
    import numpy as np

    keys = ("test", "adjust", "adjust_reason", "unit", "cluster_column", "maxt_crit", "maxt_method")
    head = {k: res.attrs.get(k) for k in keys}
    n_pairs = res.sizes["agent"] * (res.sizes["agent"] - 1) // 2
    if n_pairs == 1:
        head["adjust"] = "none"
    # what the rows' per-pair and simultaneous ends are, as the result describes them
    for k, v in (("per_pair", "ci"), ("simultaneous", "ci_simultaneous")):
        # the level is "prob"; the kind is said apart, since the detail need not name it
        ran = bool(np.isfinite(np.asarray(res[v].values, dtype=float)).any())
        head |= {f"{k}_interval": res[v].attrs.get("ci_detail"),
                 f"{k}_interval_kind": res[v].attrs.get("ci_kind") if ran else None}  # fmt: skip
    return head


def _check_comparable(ds, log: str) -> None:
    """Refuse a log ``compare`` has nothing to compare in: one agent, one task, or no pair sharing 2 tasks.

    Said here, in the command's words: the library names its own function (``compare_agents``) and
    `scheme`, no flag of this command. A log whose pairs each share fewer than 2 tasks (SWE-bench's
    Gemini and o3 on disjoint tasks) printed a table of NaN, a test that never ran, and exit 0.
    """
    import numpy as np

    from .._base import shared_tasks_per_pair

    names = [str(a) for a in ds["agent"].values]
    if len(names) < 2:
        raise CliError(
            f"compare needs at least 2 agents: it compares every pair of agents on the tasks both ran, and "
            f"{log} holds {len(names)} ({', '.join(map(repr, names)) or 'none'}). Put every agent's runs in one log (one row per "
            "run, an agent column: --agent) and pass that; hierbench summary describes one agent's runs"
        )
    if ds.sizes["task"] < 2:  # the library's refusal names its own `scheme`, no flag of this command
        raise CliError(
            f"compare needs at least 2 tasks: the paired tests and intervals resample tasks, and "
            f"{log} holds 1 ({str(ds['task'].values[0])!r}): every resample would "
            "be the data. Add tasks (hierbench summary shows each agent's mean and runs)"
        )
    # a task counts for a pair where both agents have a score on it (the paired difference's rule)
    scored = np.isfinite(ds["score"].transpose("agent", "task", "run").values).any(axis=2)
    i, j, shared = shared_tasks_per_pair(scored)
    if len(shared) and shared.max() < 2:
        ex = ", ".join(f"{names[a]} and {names[b]}: {n}" for a, b, n in list(zip(i, j, shared, strict=True))[:3])
        said = (f"the two agents share {shared[0]} task{'' if shared[0] == 1 else 's'}" if len(shared) == 1 else
                f"no pair of the {len(names)} agents shares 2 (shared tasks: {ex}{', ...' if len(shared) > 3 else ''})")
        raise CliError(
            f"compare needs a pair of agents with a score on at least 2 of the same tasks: a paired difference "
            f"stands on the tasks both ran, and in {log} {said}, so no test or interval can be computed. Run "
            "the agents on common tasks; hierbench summary shows how many tasks each agent ran and its mean "
            "(over different tasks: not a comparison)"
        )


def _marked(ds, summary=None) -> list[str]:
    """The agents the log itself marks (an --annotate column on at least half their runs; a loader's flag).

    SWE-bench bash-only: Claude 3.7 Sonnet's 500 runs are flagged by the file as disagreeing with
    the leaderboard; its pairs are compared like any other's. ``summary``: the log's per-agent
    summary frame when the caller has it (``summary`` computed it twice).
    """
    from ..report import marked_agents

    s = _summary_frame(ds) if summary is None else summary  # summarize's notices are the summary command's
    return [f"the log marks agents: {m.replace('`', '')}" for m in marked_agents(s, ds)]


def _compare_text(cmp, args: argparse.Namespace, matrix: bool, data=None) -> str:
    """The sentence, the settings and (as a matrix) the matrix's order; ``data``: the log (a graded one's units)."""
    from ..report import SCORE_ORDER_WORDS
    from ..report import graded_units
    from ..report import pair_sentence
    from ..report import settings_text

    sentence = pair_sentence(cmp, 1 - args.prob)
    head = "\n".join(
        textwrap.wrap(sentence + graded_units(data, ""), 100)  # the report's sentence, word for word
        + textwrap.wrap(f"How: {settings_text(cmp)}.", 100)
        + textwrap.wrap(_mc_remedy(sentence), 100)
    ) + "\n"
    if matrix:
        head += "\n".join(textwrap.wrap(
            f"{cmp.to_dataset().sizes['agent']} agents: the pairs as a matrix, {SCORE_ORDER_WORDS}; the "
            "full table: --all-pairs or --json.", 100, break_on_hyphens=False,
        )) + "\n"  # fmt: skip
    return head


def _mc_remedy(sentence: str) -> str:
    """What a command-line user can do where the pair sentence's Monte Carlo remedy is a Python argument ("" if none).

    "more max-T null draws could move it across (a setting of the Python call:
    compare_agents(..., n_draws=...))": compare has no flag for the number of draws, so the
    command line was told what only Python can do. The sentence stays the report's, word for
    word; this line follows it.
    """
    import re

    m = re.search(r"a setting of the Python call: compare_agents\(\.\.\., (\w+)=\.\.\.\)", sentence)
    if m is None:
        return ""
    return (f"From the command line: compare has no flag for the number of Monte Carlo draws ({m.group(1)} in "
            "Python); rerun with other --seed values to see whether that verdict moves with them.")


def _cmd_demo(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    data = truth = None
    _check_no_log_flags(args, "without it the demo runs on its embedded evaluation")
    if args.data:
        data, msgs = load_any(args.data, args)
        say_warnings(msgs, args)
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
