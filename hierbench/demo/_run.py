"""Running the demo: its sections in order, their warnings, and what it writes.

The report (HTML and Markdown), the fit and the data go to one folder.
"""

from __future__ import annotations

import os
import textwrap
import warnings
from collections.abc import Callable
from typing import Any

import pandas as pd
import xarray as xr

from .._console import print_warnings
from ._bayes import _bayes_section
from ._bootstrap import _METHOD_WORDS
from ._bootstrap import _bootstrap_section
from ._context import PROB
from ._context import DemoContext
from ._context import _fast
from ._context import _truth_new_task
from ._pairs import _compare_section
from ._pairs import _rank_section
from ._passk import _passk_section
from ._plan import _plan_section


def write_report(
    ctx: DemoContext,
    out: str | os.PathLike,
    sections: list[tuple[str, str]],
    *,
    overwrite: bool = False,
) -> str:
    """Write the demo's report, fit and data.

    The report comes from :func:`hierbench.report.build` (HTML and its Markdown
    twin) with the walk-through text as an appendix; the fit (compact) and the
    data are saved as netCDF. Without a fit, ``overwrite=True`` removes an earlier
    run's ``fit_crossed.nc`` from ``out``, which would otherwise sit beside this
    run's report and data as if it were their fit.
    """
    from pathlib import Path

    from ..io import save_dataset
    from ..io import save_fit
    from ..report import PAIRS_CSV
    from ..report import build_all

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    freq = {k: ctx.extra[k] for k in ("bootstrap", "compare") if k in ctx.extra} or "auto"
    if freq != "auto" and "person_fit" in ctx.extra:
        freq["person_fit"] = ctx.extra["person_fit"]  # computed once, for section 2
    kw = dict(
        freq=freq,
        truth=_truth_new_task(ctx),
        prob=PROB,
        rng=ctx.extra.get("seed", 0),
        n_resamples=1999 if _fast(ctx) else 9999,
        overwrite=overwrite,
        progress=bool(ctx.extra.get("progress")),
        title="hierbench demo"
        + (": an evaluation simulated from known parameters" if ctx.truth is not None else ""),
        appendix=_with_order_note(sections),
    )
    fit = ctx.extra.get("fit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # printed already by the sections
        # computed once, written twice: the sections' work (a 316-agent log's pairs) is not done again
        (html, _), rep = build_all(fit, ctx.data, paths=[folder / "report.html", folder / "report.md"], **kw)
    ctx.extra["wrote_pairs"] = PAIRS_CSV in rep.files
    if not ctx.extra["wrote_pairs"]:
        # an earlier, larger log's pairs beside this run's report would pass for this log's
        _drop_stale(folder / PAIRS_CSV, overwrite)
    if fit is not None:
        save_fit(
            fit, folder / "fit_crossed.nc", groups=["posterior_predictive"], overwrite=overwrite
        )
    elif _drop_stale(folder / "fit_crossed.nc", overwrite):
        # an earlier run's fit beside this run's report and data would pass for this log's fit
        ctx.extra["removed_fit"] = True
    save_dataset(ctx.data, folder / "data.nc", overwrite=overwrite)
    return str(html)


#: the appendix's word on its order: the Data summary's "one order" is of the report's own tables and figures
APPENDIX_ORDER_NOTE = (
    "(The walk-through below is the demo's console output as it printed it: its tables list the agents "
    "by name, the ranking by observed rank, not in the report's one order above.)\n\n"
)


def _with_order_note(sections: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The appendix's sections, the first one opening with :data:`APPENDIX_ORDER_NOTE`."""
    return [(h, APPENDIX_ORDER_NOTE + t if i == 0 else t) for i, (h, t) in enumerate(sections)]


def _drop_stale(path: Any, overwrite: bool) -> bool:
    """Remove an earlier run's file this run does not write (only with ``overwrite``); whether one was removed."""
    if overwrite and path.exists():
        path.unlink()
        return True
    return False


def _written_line(ctx: DemoContext, folder: str) -> str:
    """The closing line: what was written where, naming the fit only when there was one."""
    from ..report import PAIRS_CSV

    report = "Report (HTML and Markdown" + (f", every pair in {PAIRS_CSV})" if ctx.extra.get("wrote_pairs") else ")")
    what = f"{report}, fit and data" if "fit" in ctx.extra else f"{report} and data"
    line = f"\n{what} written to {folder}"
    if "fit" not in ctx.extra:
        line += " (no fit: the Bayesian section did not run"
        line += "; an earlier run's fit_crossed.nc there was removed)" if ctx.extra.get("removed_fit") else ")"
    return line


#: Analysis sections appended to the data sections.
ANALYSIS_SECTIONS = [
    ("How good is each agent? (frequentist)", _bootstrap_section),
    ("How good is each agent? (Bayesian, beside the frequentist)", _bayes_section),
    ("Reliability: pass^k", _passk_section),
    ("Does A beat B?", _compare_section),
    ("Ranking and its uncertainty", _rank_section),
    ("How many more tasks or runs to buy?", _plan_section),
]


def _demo_data(ctx: DemoContext) -> str:
    from .._console import _report_text
    from ..data import read_report

    rep = read_report(ctx.data)
    if ctx.truth is None:
        return _report_text(rep)
    return (
        "The embedded default evaluation (hierbench.testing.default_dataset): simulated from\n"
        "the crossed logit model with known parameters, ragged like a real one.\n\n"
        + _report_text(rep)
    )


def _demo_summary(ctx: DemoContext) -> str:
    from .._console import _summary_text
    from ..report import coverage_flags

    return _summary_text(ctx.data) + _flag_lines(coverage_flags(ctx.data)) + _misfit_text(ctx)


def _flag_lines(flags: list[str]) -> str:
    """The report's data-summary flags as the demo prints them: a paragraph each."""
    return "".join("\n\n" + textwrap.fill("Flag: " + f, 90) for f in flags)


def _misfit_text(ctx: DemoContext) -> str:
    """The report's person-fit flag under the summary ("" where none is flagged or it does not apply)."""
    from ..report import checked_person_fit
    from ..report import misfit_agents

    ctx.extra["person_fit"] = checked_person_fit(ctx.data, rng=ctx.extra.get("seed", 0))
    return _flag_lines(misfit_agents(ctx.extra["person_fit"]))


def _demo_truth(ctx: DemoContext) -> str:
    from .._console import _summary_frame

    t = ctx.truth
    if t is None:  # run_demo leaves this section out on a user's log (demo_sections)
        return "(a user's log: the truth is unknown)"
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
    names = ("mu", "sd_agent", "sd_task", "sd_agent_task", "sd_cluster", "sd_agent_cluster", "sd_run")
    # a simulation without an agent x cluster effect has none (0); without clusters it is not said
    scal = ", ".join(f"{k} = {float(t.get(k, 0.0)):g}" for k in names if k in t or "cluster" in ctx.data.coords)
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
    *ANALYSIS_SECTIONS,
]


_OUTPUTS = ("report.html", "report.md", "fit_crossed.nc", "data.nc", "pairs.csv")


def demo_sections(truth: xr.Dataset | None) -> list[tuple[str, Callable[[DemoContext], str]]]:
    """The sections a run prints, in order: :data:`DEMO_SECTIONS`, less the truth's on a user's log."""
    return [(t, f) for t, f in DEMO_SECTIONS if truth is not None or f is not _demo_truth]


def _note_warnings(ctx: DemoContext, i: int, caught: list) -> None:
    """A section's warnings, each said once at the end (with its section), not as tracebacks."""
    said = ctx.extra.setdefault("warnings", [])
    for w in caught:
        if issubclass(w.category, DeprecationWarning):  # for the developer: passed on as raised
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            continue
        line = f"section {i}: {w.category.__name__}: {w.message}"
        if line not in said:
            said.append(line)


def run_demo(
    data: xr.Dataset | None = None,
    truth: xr.Dataset | None = None,
    *,
    out: str | os.PathLike | None = "hierbench-demo-report",
    seed: int = 20261130,
    fast: bool = False,
    overwrite: bool = False,
    progress: bool = False,
    bootstrap_method: str = "bca",
) -> int:
    """Run every demo section, print it, and write the report; return the exit status.

    ``data=None`` runs the embedded default (with its truth). ``bootstrap_method``:
    the agents' bootstrap interval, ``"bca"`` or ``"percentile"`` (defined where
    BCa is not: every resample on one side of the estimate). The sections go to
    standard output; their warnings (a fit that did not converge, with the
    reasons) to standard error, one ``warning:`` line each, after the sections.
    """
    from pathlib import Path

    if bootstrap_method not in _METHOD_WORDS:
        raise ValueError(f"`bootstrap_method` must be 'bca' or 'percentile'; got {bootstrap_method!r}")
    if data is None:
        from ..testing import default_dataset

        data, truth = default_dataset()
    if out:
        there = [f for f in _OUTPUTS if (Path(out) / f).exists()]
        if there and not overwrite:
            raise FileExistsError(
                f"--out {str(out)!r} already holds {there} from an earlier run; pass --overwrite "
                "or choose another --out"
            )
    extra = {"seed": seed, "fast": fast, "progress": progress, "bootstrap_method": bootstrap_method, "out": out}
    ctx = DemoContext(data=data, truth=truth, extra=extra)
    done: list[tuple[str, str]] = []
    for i, (title, section) in enumerate(demo_sections(truth), start=1):
        print(f"\n## {i}. {title}\n", flush=True)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                text = section(ctx)
        except (ValueError, ArithmeticError) as exc:  # one section's failure never hides the rest
            text = f"(not computed: {type(exc).__name__}: {exc})"
            ctx.extra.setdefault("warnings", []).append(f"section {i}. {title} not computed: {exc}")
        _note_warnings(ctx, i, caught)
        print(text, flush=True)
        done.append((f"{i}. {title}", text))
    if out:
        path = write_report(ctx, out, done, overwrite=overwrite)
        print(_written_line(ctx, str(Path(path).parent)))
    print_warnings(ctx.extra.get("warnings", []))
    return 0
