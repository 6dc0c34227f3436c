"""``hierbench fit``: the model a log asks for, sampled, checked and saved.

The named builders (crossed, beta-binomial) or a formula model, with refusals said in the
shell's words and the fit's stages timed.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

from .._console import convergence_line
from .._console import diagnostics_line
from .._console import fit_kwargs
from .._console import seconds
from .._console import warning_lines
from ._battles import build_battle_model
from ._battles import check_battle_flags
from ._battles import fitted_what
from ._battles import read_one_battle_log
from ._commands import _saved_groups
from ._common import CliError
from ._common import _check_out
from ._common import _progress_wanted
from ._reading import _levels
from ._reading import load_any
from ._reading import say_warnings


def _formula_levels(text: str | None, ds) -> list[float] | list[str] | None:
    """``--levels`` as ``build_mixed``'s ``levels``: a numeric scale, or the labels as written.

    Labels must be those the dataset's ``score`` was read with (``attrs["score_labels"]``); they go
    on as words, so the saved fit records them as the Python API's fit does (``options.levels``).
    """
    levels = _levels(text)
    if not levels or not isinstance(levels[0], str):
        return levels
    from ..data import labels_attr

    have = labels_attr(ds.attrs)
    if have != levels:
        raise CliError(
            f"--levels {text}: the labels the log's score was read with are {have!r}"
            if have else f"--levels {text} names labels, but the log's score was not read from labels"
        )
    return levels


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


def _sample(args: argparse.Namespace, model, progress: bool):
    """``bayes.fit`` with the CLI's settings, its stages shown when watched; (fit, warnings, wall)."""
    from .. import bayes

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
    """Refuse partial credit for a binomial model (--model, or --formula with --family binomial) in the CLI's words.

    The builders' refusals name the Python API: METR's continuous scores were told "use
    hierbench.bayes.build_mixed(data)" (from the shell, ``--formula``), and a formula's
    ``--family binomial`` "binarise them first (e.g. ``ds['score'] = ...``)" with cells as
    (row, run); here the cells are (agent, task, run) and the remedies flags.
    """
    import numpy as np

    from .._base import is_binary
    from .._base import partial_credit

    score = ds["score"].values
    if is_binary(score):
        return
    from ..data import grade_names
    from ..data import labels_attr
    from ..data import levels_attr

    levels = levels_attr(ds.attrs)
    formula = f"--formula {args.formula!r}" if args.formula else "--formula 'score ~ (1|agent) + (1|task)'"
    how = (f"Its grades have the ordinal model: --levels {','.join(grade_names(levels, labels_attr(ds.attrs)))} "
           f"{formula}" if levels else f"For scores in [0, 1] fit {formula} with --family fractional (or auto)")
    n_part, cells = partial_credit(ds["score"].transpose("agent", "task", "run"))
    cells, run = _file_runs(ds, cells)
    model = ("--family binomial" if args.formula else
             f"--model {args.model}{' (the default)' if args.model == 'crossed' else ''}")
    raise CliError(
        f"{model} fits a binomial likelihood: every score "
        f"must be 0 or 1, and {n_part:,} of the {int(np.isfinite(score).sum()):,} scores of "
        f"{', '.join(map(repr, args.file))} are partial credit, e.g. (agent, task, {run}, score) {cells}. "
        f"{how}; or binarise the --score column first"
    )


def _file_runs(ds, cells: list[tuple]) -> tuple[list[tuple], str]:
    """Cells (agent, task, run, score) with the file's own run labels where the reader kept them (``run_id``).

    Runs read from labels that are not shared occasions are numbered within each cell (0, 1, ...)
    and the labels kept as ``run_id``: METR's run '0' was hierbench's number, not the file's
    'mp4-server_...', so the reader could not find the row. Returns the cells and the run's name.
    """
    if "run_id" not in ds:
        return cells, "run"
    rid = ds["run_id"]
    out = [(a, t, str(rid.sel(agent=a, task=t, run=int(r)).values), v) for a, t, r, v in cells]
    return out, "run as the --run column labels it"


def _check_ordinal_scale(args: argparse.Namespace, ds) -> None:
    """Refuse --family ordinal without a grade scale (--levels, or a saved log read with one).

    The help gives ordinal "with --levels"; without one, the library takes the values seen as
    the grades, so 0/1 scores were fitted as a two-grade ordinal model without a word (the
    binomial model, under other priors), and partial credit would make each distinct score a grade.
    """
    from ..data import levels_attr

    if args.family != "ordinal" or args.levels is not None or levels_attr(ds.attrs):
        return
    raise CliError(
        "--family ordinal fits ordered grades on the scale given with --levels (e.g. --levels 1,2,3,4,5: "
        "each score must be one of them), and no scale was given: the log's scores were not read as "
        "grades. Give the scale with --levels; for 0/1 scores --family binomial (or auto) is the "
        "two-grade model, and for scores in [0, 1] --family fractional"
    )


def _build(args: argparse.Namespace, ds):
    """The model `fit` samples: a named builder (--model) or a formula model (--formula)."""
    from .. import bayes

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
    if args.family == "binomial":
        _check_binary_model(args, ds)
    _check_ordinal_scale(args, ds)
    # with --levels the reader took the --score column as grades of that scale (attrs score_levels)
    return bayes.build_mixed(ds, args.formula, family=args.family, levels=_formula_levels(args.levels, ds))


def _check_sampler_flags(args: argparse.Namespace) -> None:
    """--draws, --tune and --chains refused before the log is read and the model built (was: after both)."""
    for flag, v, low in (("--draws", args.draws, 1), ("--tune", args.tune, 0), ("--chains", args.chains, 1)):
        if v is not None and v < low:
            raise CliError(f"{flag} must be an integer >= {low}; got {v}")


def _read(args: argparse.Namespace):
    """The log and its reading warnings: a battle log (--battles) or a run log."""
    if args.battles:
        return read_one_battle_log(args)
    check_battle_flags(args)
    return load_any(args.file, args)


def _cmd_fit(args: argparse.Namespace) -> int:
    _check_sampler_flags(args)
    out = _check_out(args.out, args.overwrite, kind="fit")
    ds, msgs = _read(args)
    say_warnings(msgs, args)
    from .. import bayes
    from ..io import save_fit

    with warnings.catch_warnings(record=True) as built:  # the builder's (BoundaryWarning: a separated agent)
        warnings.simplefilter("always")
        model = build_battle_model(args, ds) if args.battles else _build(args, ds)
    say_warnings(warning_lines(built), args)  # one `warning: ...` line each, as the sampler's below
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
    print(
        f"{args.model} fit of {fitted_what(args, ds)}: {seconds(wall)} "
        f"(compile {seconds(a.get('compile_time', float('nan')))}, sampling "
        f"{seconds(a.get('sampling_time', float('nan')))}); {diagnostics_line(dt)}"
    )
    print(f"saved to {out} ({size / 1e6:.1f} MB, groups {_saved_groups(out)})")
    # the convergence checks' verdict in the fit's own words (not the sampler's warning)
    from ..bayes import convergence_remedy

    line = convergence_line(dt, remedy=convergence_remedy(dt, cli=True))
    say_warnings(([line] if line else []) + warning_lines(caught, skip=("ConvergenceWarning",)), args)
    if not args.battles:
        _print_effects(dt, model, out, args)
    return _fit_status(dt, args.strict)


def _print_effects(dt, model, out, args: argparse.Namespace) -> None:
    """A formula fit's estimated effects, after its diagnostics: each variable's AME and the random terms' sds.

    The fit is saved by then: a failure here is said, never the command's.
    """
    from .._base import DEFAULT_PROB
    from ..report import effects_lines

    log = str(args.file[0]) if len(args.file) == 1 else "LOG"  # report --data takes one log
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            lines = effects_lines(dt, model, DEFAULT_PROB, fit_path=str(out), data_path=log)
        except (ValueError, KeyError) as exc:  # HierbenchError is a ValueError
            lines = [f"effects of the formula's terms: not computed ({type(exc).__name__}: {exc})"]
    if lines:
        print("\n".join(lines), flush=True)
    say_warnings(warning_lines(caught), args)


def _fit_status(dt, strict: bool) -> int:
    """The exit status of ``fit``: 0, or with --strict 1 unless the fit passed its convergence checks.

    The default stays 0 (the verdict is printed and warned); a script asks for --strict to stop on
    a fit that did not converge (it is saved all the same, for its diagnostics).
    """
    if not strict:
        return 0
    conv = dt.attrs.get("diag_converged")
    return 0 if conv is not None and int(conv) else 1
