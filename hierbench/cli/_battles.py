"""Battle logs from the command line: ``validate``, ``summary``, ``fit`` and ``report`` with ``--battles``.

A battle log holds one row per judged comparison (LLMFAO's ``left, right, winner``, an
arena's ``model_a, model_b, winner``); it is read by :func:`hierbench.data.read_battles`
and fitted with the Bradley-Terry model. The run-log flags (``--agent``, ``--score``, ...)
do not apply to it and are refused (so are the run-log options of the commands: the agents'
bootstrap method, the person-fit check); ``--duplicates`` and ``--encoding`` do.
"""

from __future__ import annotations

import argparse
import functools
import warnings

from .._console import warning_lines
from ._common import CliError
from ._reading import _flags_text
from ._reading import _given_reader_flags
from ._reading import _one_or_inspect_logs

#: run-log reader flags read_battles also takes
_SHARED = ("duplicates", "encoding")


def add_battle_flags(p: argparse.ArgumentParser, *, model: bool) -> None:
    """The battle group of ``fit`` (``model``: with the Bradley-Terry model's options) and ``report``."""
    g = p.add_argument_group("battles (--battles: the log holds one row per judged comparison)")
    g.add_argument(
        "--battles", action="store_true",
        help="read LOG as a battle log (hierbench.data.read_battles): a row is one comparison of the "
        "--left and --right agents with its --winner verdict; fit fits the Bradley-Terry model",
    )  # fmt: skip
    g.add_argument("--left", default="left", metavar="COL", help="column of the agent shown first (default: left)")
    g.add_argument("--right", default="right", metavar="COL", help="column of the other agent (default: right)")
    g.add_argument("--winner", default="winner", metavar="COL", help="column of the verdict (default: winner)")
    g.add_argument(
        "--verdict", action=_Verdict, nargs="?", metavar="VALUE=OUTCOME",
        help="what a --winner value means for the --left agent: 1 (won), 0 (lost) or 0.5 (tie), "
        "repeatable (default: left=1, right=0, tie=0.5; an arena log: --verdict model_a=1 --verdict "
        "model_b=0 --verdict tie=0.5 ...); a verdict not listed is refused, naming its rows",
    )  # fmt: skip
    g.add_argument(
        "--prompt", default=None, metavar="COL",
        help="column of the prompt (task) each battle was judged on: the report's maximum-likelihood "
        "intervals resample prompts, not battles",
    )  # fmt: skip
    g.add_argument("--judge", default=None, metavar="COL", help="column naming who judged each battle")
    if not model:
        return
    g.add_argument(
        "--ties", choices=["davidson", "none"], default="davidson",
        help="ties as outcomes of their own (Davidson 1970, default) or none: the logistic model, "
        "which refuses a log with ties",
    )  # fmt: skip
    g.add_argument("--home", action="store_true", help="add a first-position (--left) advantage, home")


class _Verdict(argparse.Action):
    """``--verdict`` (repeatable): a value that starts with a dash (``-1=0``) must be joined with ``=``.

    argparse reads ``--verdict -1=0`` as the flag followed by another flag and said only "expected
    one argument" (football's ``result`` column holds -1, 0 and 1); the value is optional to the
    parser so that this action can name the form that works.
    """

    def __call__(self, parser, namespace, values, option_string=None):
        if values is None:
            raise argparse.ArgumentError(
                self, "give VALUE=OUTCOME, e.g. --verdict model_a=1; a value that starts with a minus sign "
                "must be joined to the flag with '=', as in --verdict=-1=0 (after a space the shell's -1=0 "
                "is read as another flag)",
            )  # fmt: skip
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest, None) or []), values])


def _verdicts(items: list[str] | None) -> dict[str, float] | None:
    """``--verdict VALUE=OUTCOME`` pairs as ``read_battles``' ``outcomes`` (None: its default)."""
    if not items:
        return None
    out: dict[str, float] = {}
    for item in items:
        value, sep, outcome = item.rpartition("=")
        if not sep or not value or outcome.strip() not in ("1", "0", "0.5"):
            raise CliError(f"--verdict must be VALUE=1, VALUE=0 or VALUE=0.5 (the --left agent won, lost, "
                           f"tied); got {item!r}")  # fmt: skip
        if value in out:
            raise CliError(f"--verdict {value}= is given twice ({out[value]:g} and {outcome.strip()})")
        out[value] = float(outcome)
    return out


@functools.cache
def _battle_defaults() -> dict:
    """Every battle flag's dest and its default (``--battles`` aside), from the group that defines them."""
    p = argparse.ArgumentParser(add_help=False)
    add_battle_flags(p, model=True)
    return {d: v for d, v in vars(p.parse_args([])).items() if d != "battles"}


def given_battle_flags(args: argparse.Namespace) -> dict:
    """The battle flags given (dest -> value), those that differ from their defaults."""
    opts = vars(args)
    return {d: opts[d] for d, default in _battle_defaults().items() if d in opts and opts[d] != default}


def check_battle_flags(args: argparse.Namespace) -> None:
    """Battle flags without --battles, or run-log flags with it, are refused (a flag is never ignored)."""
    if not getattr(args, "battles", False):
        given = given_battle_flags(args)
        if given:
            raise CliError(f"{_flags_text(given)}: these flags read a battle log; give --battles (LOG holds "
                           "one row per judged comparison), or leave them out")  # fmt: skip
        return
    other = [f for f, v in (("--model", getattr(args, "model", None)), ("--formula", getattr(args, "formula", None)))
             if v is not None] + (["--family"] if getattr(args, "family", "auto") != "auto" else [])  # fmt: skip
    if other:
        raise CliError(f"--battles fits the Bradley-Terry model; {', '.join(other)} name(s) a run-log model: "
                       "leave them out")  # fmt: skip
    other = [f for f, given in (("--bootstrap-method", getattr(args, "bootstrap_method", None) is not None),
                                ("--no-person-fit", getattr(args, "no_person_fit", False))) if given]  # fmt: skip
    if other:
        raise CliError(f"--battles: {', '.join(other)} apply to a run log (the agents' bootstrap over tasks, the "
                       "person-fit check of run records); a battle log has neither: leave them out")  # fmt: skip
    runlog = {d: v for d, v in _given_reader_flags(vars(args)).items() if d not in _SHARED}
    if runlog:
        raise CliError(
            f"--battles reads LOG as battles (--left, --right, --winner, --prompt, --judge name its columns), "
            f"which does not use {_flags_text(runlog)}: those flags read a run log; leave them out"
        )


def read_battle_log(path: str, args: argparse.Namespace):
    """The battle log ``path`` read with the command's flags; (dataset, its warnings as text)."""
    from ..data import read_battles

    _one_or_inspect_logs([path])  # the readers' one check that LOG exists
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ds = read_battles(path, left=args.left, right=args.right, winner=args.winner,
                          outcomes=_verdicts(args.verdict), task=args.prompt, judge=args.judge,
                          duplicates=args.duplicates or "refuse", encoding=args.encoding or "utf-8")  # fmt: skip
    return ds, warning_lines(caught)


def build_battle_model(args: argparse.Namespace, ds):
    """The Bradley-Terry model of the battles (``check_battle_flags`` refused the run-log models' flags)."""
    from .. import bayes

    args.model = "bradley_terry"
    return bayes.build_bradley_terry(ds, ties=None if args.ties == "none" else "davidson",
                                     home_advantage=bool(args.home))  # fmt: skip


def fitted_what(args: argparse.Namespace, ds) -> str:
    """What the fit line says was fitted: agents x tasks, or for battles agents and comparisons."""
    from .._base import counted

    if getattr(args, "battles", False):
        n = ds.sizes["comparison"]
        return f"{counted(ds.sizes['agent'], 'agent')}, {n:,} battle{'s' if n != 1 else ''}"
    return f"{counted(ds.sizes['agent'], 'agent')} x {counted(ds.sizes['task'], 'task')}"


def read_one_battle_log(args: argparse.Namespace):
    """LOG of a command given --battles (one file): the dataset and its reading warnings."""
    check_battle_flags(args)
    if len(args.file) != 1:
        raise CliError(f"--battles reads one battle log; got {len(args.file)}: {', '.join(map(repr, args.file))}")
    return read_battle_log(args.file[0], args)


def _read_counts(ds) -> dict:
    """What read_battles read and kept (its attrs), with the prompts and judges it found."""
    import json

    a = ds.attrs
    out = {k: a[k] for k in ("n_records_read", "n_records_kept", "n_repeated_records") if k in a}
    out["not_kept"] = json.loads(a.get("not_kept", "{}"))
    out["agents"], out["battles"] = int(ds.sizes["agent"]), int(ds.sizes["comparison"])
    for name in ("task", "judge"):
        if name in ds:
            out["prompts" if name == "task" else "judges"] = len(set(map(str, ds[name].values)))
    return out


def cmd_battles_validate(args: argparse.Namespace) -> int:
    """``validate --battles``: what read_battles read, kept and why."""
    import json

    from ._common import _jsonable
    from ._reading import say_warnings

    ds, msgs = read_one_battle_log(args)
    counts = _read_counts(ds)
    if args.json:
        print(json.dumps(_jsonable({**counts, "schema": ds.attrs.get("hierbench_schema"), "warnings": msgs}), indent=2))
    else:
        print(f"valid battle log ({ds.attrs.get('hierbench_schema')})")
        print("\n".join(f"{k}: {v}" for k, v in counts.items()))
    say_warnings(msgs, args)
    return 0


def cmd_battles_summary(args: argparse.Namespace) -> int:
    """``summary --battles``: the report's data summary of the battles, each agent's record and the flags."""
    import json

    from ..report import battle_log_summary
    from ._common import _jsonable
    from ._reading import say_warnings

    ds, msgs = read_one_battle_log(args)
    table, text, flags, counts = battle_log_summary(ds)
    if args.json:
        agents = [{"agent": a, **row} for a, row in table.to_dict(orient="index").items()]
        print(json.dumps(_jsonable({"battles": counts, "agents": agents, "flags": flags, "warnings": msgs}), indent=2))
    else:
        print(text)
        print("".join(f"flag: {f}\n" for f in flags) + "rows: agents by battles, most first")
        print(table.to_string())
    say_warnings(msgs, args)
    return 0
