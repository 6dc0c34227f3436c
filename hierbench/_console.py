"""Text the command line and the demo both print: data summaries, read reports, fit status.

The CLI (:mod:`hierbench.cli`) and the demo (:mod:`hierbench.demo`) share
these, so neither imports the other for them.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from collections.abc import Iterable
from collections.abc import Sequence

__all__ = ["convergence_line", "fit_kwargs"]


def warning_lines(caught: Iterable, skip: Sequence[str] = ()) -> list[str]:
    """The user warnings recorded by ``warnings.catch_warnings(record=True)`` as ``Category: message``.

    ``skip``: category names left out (a warning the command says in its own words).
    """
    return [
        f"{w.category.__name__}: {w.message}"
        for w in caught
        if issubclass(w.category, UserWarning) and w.category.__name__ not in skip
    ]


def print_warnings(lines: Iterable[str]) -> None:
    """Every warning of a command, one ``warning: ...`` line each, on standard error.

    The one channel for them: standard output holds only the command's results, so that
    piping them (``hierbench compare --json ... | jq``) never carries a warning along.
    """
    for line in lines:
        print(f"warning: {line}", file=sys.stderr, flush=True)


def _summary_frame(ds):
    from .data import summarize

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = summarize(ds)
    df = s.to_dataframe()
    df.index = df.index.astype(str)
    return df


def _summary_text(ds) -> str:
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
    if (df["n_tasks_scored"] != df["n_tasks_attempted"]).any():  # the tasks the per-task mean averages
        cols = {"n_tasks_attempted": "tasks", "n_tasks_scored": "tasks scored", **cols}
    ann = [c for c in df.columns if c not in cols and c not in ("n_scored", "n_tasks_scored")]
    show = df[[*cols, *ann]].rename(columns=cols)
    fmt = {c: "{:.3f}".format for c in ("error rate", "mean (per task)", "mean (per run)")}
    return show.to_string(formatters=fmt)


def _grades_text(levels, labels=None) -> str:
    """How scores read from ordinal grades (numbers or labels) came to be (empty for scores read as they are)."""
    if not levels:
        return ""
    from .data import grade_reading

    return f", {grade_reading(levels, labels)}"


def _scored_lines(rep: dict) -> list[str]:
    """Runs with a score per cell, where excluded error runs make it differ from runs attempted."""
    spc = rep["scored_runs_per_cell"]
    if not rep["scored_differs"]:
        return []
    return [
        f"runs with a score per cell (errored runs excluded; what the models see): min {spc['min']}, "
        f"median {spc['median']:g}, max {spc['max']}; attempted cells without any score: "
        f"{rep['n_cells_without_score']}"
    ]


def _balance_text(rep: dict) -> str:
    """``balanced``, or why not: "unbalanced" beside min = max runs per cell read as a contradiction.

    A log with cells never run (the awkward log: 8 of 100) has every run cell at 2 runs.
    """
    if rep["balanced"]:
        return "balanced"
    rpc = rep["runs_per_cell"]
    if rpc["min"] == rpc["max"] and rep["n_missing_cells"]:
        n = rep["n_missing_cells"]
        return f"unbalanced: {n} cell{'s' if n != 1 else ''} never run"
    return "unbalanced"


def _report_text(rep: dict) -> str:
    rpc = rep["runs_per_cell"]
    lines = [
        f"source: {rep['source']}",
        f"records: {rep['n_records_read']} read, {rep['n_records_kept']} kept",
    ]
    for why, n in (rep["not_kept"] or {}).items():
        lines.append(f"  not kept: {n} ({why})")
    lines += [
        f"agents: {rep['n_agents']}    tasks: {rep['n_tasks']}    runs: {rep['n_runs_total']}"
        f"    scores: {rep['score_kind']}{_grades_text(rep.get('score_levels'), rep.get('score_labels'))}",
        f"runs per cell: min {rpc['min']}, median {rpc['median']:g}, max {rpc['max']}"
        f"    ({_balance_text(rep)})",
        *_scored_lines(rep),
        f"missing cells: {rep['n_missing_cells']} of {rep['n_cells']} (agent x task never run)",
        f"error runs: {rep['n_error_runs']} (policy errors={rep['errors']!r})",
    ]
    ann = ", ".join(f"{k}: {v}" for k, v in rep["annotations"].items()) or "none"
    lines.append(f"annotations: {ann}")
    # as the JSON lists them (score and error among them): text and --json agree
    lines.append(f"per-run variables: {', '.join(rep['per_run_variables'])}")
    if rep.get("columns_not_read") is not None:  # None: the reader did not say (an Inspect log)
        lines.append(f"columns not read: {', '.join(rep['columns_not_read']) or 'none'}")
    if rep["task_coords"]:
        lines.append(f"task coords: {', '.join(rep['task_coords'])}")
    if rep["agent_coords"]:
        lines.append(f"agent coords: {', '.join(rep['agent_coords'])}")
    for what, n in (rep["inconsistent_attributes"] or {}).items():
        # two values in one task or agent are refused by the reader: only empty records remain
        lev = str(what).split(" ")[0]  # "task cluster": per task
        lines.append(f"{what}: empty in some records of {n} {lev}{'s' * (n != 1)} (each took the one value "
                     "its other records hold)")
    return "\n".join(lines)


def fit_kwargs(fit_fn, progress: bool) -> dict:
    """The progress keyword ``hierbench.bayes.fit`` takes (``progress`` or, before it, ``progressbar``)."""
    import inspect

    params = inspect.signature(fit_fn).parameters
    if "progress" in params:
        return {"progress": progress}
    if "progressbar" in params:
        return {"progressbar": progress}
    return {}


def seconds(x) -> str:
    """A duration for people: one decimal under 10 s (a 0.4 s sampling run is not "0 s").

    Examples
    --------
    >>> seconds(0.44), seconds(12.6), seconds(float("nan"))
    ('0.4 s', '13 s', 'nan s')
    """
    x = float(x)
    return f"{x:.1f} s" if x < 10 else f"{x:.0f} s"


def stale_diagnostics(dt) -> str:
    """Says that a fit's recorded convergence checks are of other draws than its posterior holds ("" if not).

    ``diag_n_chains`` / ``diag_n_draws`` record the draws the checks were computed on; draws cut
    with ``isel`` or ``sel`` after fitting leave them stale. A fit that records no counts (older
    files) is taken as it is. This room cannot recompute them (it does not import
    ``hierbench.bayes``): the sentence says who does.
    """
    from ._base import stale_counts

    counts = stale_counts(dt)
    if counts is None:
        return ""
    was, now = counts
    return (
        f"the convergence checks saved with this fit are stale: they were computed on {was[0]} chains x "
        f"{was[1]:,} draws, but its posterior holds {now[0]} x {now[1]:,} (draws cut after fitting), so its "
        "recorded verdict is not this posterior's; hierbench.bayes.compute_diagnostics(fit) recomputes them "
        "on the draws there are (hierbench report does, in its Convergence section)"
    )


def _verdict_word(a) -> str:
    """``converged``, ``NOT converged`` or ``NOT fully checked`` (a check that could not be made)."""
    from ._base import fit_verdict

    verdict = fit_verdict(a)
    return verdict if verdict == "converged" else verdict.replace("not", "NOT", 1)


def _unchecked(a) -> bool:
    """Whether the fit's verdict is that some checks could not be made (and every one made passed)."""
    from ._base import NOT_FULLY_CHECKED
    from ._base import fit_verdict

    return fit_verdict(a) == NOT_FULLY_CHECKED


def diagnostics_line(dt) -> str:
    """The fit's convergence checks in one sentence: verdict, R-hat against its limit, ESS, divergences.

    A check that could not be computed or was not recorded is said so, never as a number;
    recorded checks of other draws than the posterior holds are said to be stale.
    """
    a = dt.attrs
    if "diag_converged" not in a:
        return "convergence not checked"
    if stale := stale_diagnostics(dt):
        return stale

    def num(key: str) -> float:
        return float(a.get(key, float("nan")))

    def ess(key: str) -> str:
        return "not computed" if math.isnan(num(key)) else f"{num(key):.0f}"

    none = "not checked" if _unchecked(a) else "not computed (no element has a finite R-hat)"
    rhat = (f"R-hat {none}" if math.isnan(num("diag_max_r_hat")) else
            f"max R-hat {num('diag_max_r_hat'):.3f} (limit {num('diag_r_hat_limit'):.3f} "
            f"for {int(a.get('diag_n_checked', 0))} elements checked)")  # fmt: skip
    div = num("diag_n_divergent") if "diag_n_divergent" in a else 0.0
    bfmi = num("diag_min_bfmi")
    return (
        f"{_verdict_word(a)}: {rhat}, min ESS bulk {ess('diag_min_ess_bulk')} / tail {ess('diag_min_ess_tail')}, "
        + ("divergences not recorded" if math.isnan(div) else f"{int(div)} divergences")
        + (", E-BFMI not recorded" if math.isnan(bfmi) else f", min E-BFMI {bfmi:.2f}")
    )


def convergence_line(dt, remedy: str = "") -> str | None:
    """One line saying why a fit failed its convergence checks (None when it passed).

    ``remedy``: what to do, added after the reasons (``hierbench fit`` and ``hierbench report``
    give ``hierbench.bayes.convergence_remedy(dt, cli=True)``). A fit whose checks could not
    all be made is said to be not fully checked; recorded checks of other draws than the
    posterior holds are said to be stale (the remedy, drawn from them, is left out).
    """
    conv = dt.attrs.get("diag_converged")
    if conv is None:
        return None
    if stale := stale_diagnostics(dt):
        return stale
    if int(conv):
        return None
    fails = dt.attrs.get("diag_failures", "")
    try:
        fails = "; ".join(json.loads(fails)) if isinstance(fails, str) else "; ".join(fails)
    except ValueError:
        pass
    if _unchecked(dt.attrs):
        return f"the fit was not fully checked: {fails}" + (f". What to do: {remedy}" if remedy else "")
    return f"the fit did not converge: {fails}" + (f". What to do: {remedy}" if remedy else "")
