"""Section 4 of the demo: how good each agent is, by the task-level bootstrap.

With the notes on agents whose intervals are undefined or rest on few tasks.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from .._base import ZERO_WIDTH_ADVICE
from .._base import flag_advice
from .._base import is_binary
from ._context import PROB
from ._context import DemoContext
from ._context import _covers
from ._context import _fast
from ._context import _frame
from ._context import _grade_words
from ._context import _n_runs
from ._context import _one_task
from ._context import _truth_new_task

#: a bootstrap result's ``method`` in words
_METHOD_WORDS = {"bca": "BCa", "percentile": "percentile"}


def _boot_label(boot) -> str:
    """``cluster bootstrap (BCa)`` or ``task bootstrap (percentile)``: what the result resampled, and how."""
    method = _METHOD_WORDS[boot.attrs.get("method", "bca")]
    return f"{boot.attrs.get('resample_unit', 'task')} bootstrap ({method})"


def _bootstrap_section(ctx: DemoContext) -> str:
    if (one := _one_task(ctx)) is not None:
        return one
    from ..compare import side_by_side
    from ..freq import bootstrap_ci

    boot = bootstrap_ci(
        ctx.data,
        method=ctx.extra.get("bootstrap_method", "bca"),
        n_resamples=1999 if _fast(ctx) else 9999,
        prob=PROB,
        rng=ctx.extra.get("seed", 0),
    )
    ctx.extra["bootstrap"] = boot
    truth = _truth_new_task(ctx)
    table = side_by_side({_boot_label(boot): boot}, truth=truth)
    ctx.extra["freq_table"] = table
    unit = (
        f"whole task clusters (of `{boot.attrs['cluster_column']}`)"
        if boot.attrs.get("resample_unit") == "cluster"
        else "tasks (no clusters)"
    )
    text = (
        f"Benchmark mean per agent (mean over tasks of each task's mean score) with a {PROB:.0%} "
        f"{_METHOD_WORDS[boot.attrs['method']]} "
        f"interval from the task-level bootstrap, resampling {unit} and sharing each resample across "
        "agents. The target is the agent's expected score on a new task from the same population"
        + ("; the truth column is that value, computed from the simulation's parameters." if truth is not None else ".")
    )
    bounds = _pass1_bounds(ctx)
    return (
        textwrap.fill(text, 88)
        + "\n\n"
        + _frame(table).to_string()
        + _covers(table)
        + _undefined_note(boot, bounds, _grade_words(ctx))
        + _few_note(boot, bounds, is_binary(ctx.data["score"].values), _grade_words(ctx))
        + _few_units_note(ctx, boot)
    )


def _few_units_note(ctx: DemoContext, boot) -> str:
    """Agents whose bootstrap resampled few units (their tasks, or few clusters), said under the table.

    A resampling interval of a mean over few units is too narrow (a 95% percentile interval
    over 8 normal values covers about 88%): the report flags the same agents. Whether clusters
    are few is the bootstrap's own rule (its ``attrs["few_clusters"]``).
    """
    from ..report import FEW_UNITS

    if boot.attrs.get("resample_unit") == "cluster":
        text = boot.attrs.get("few_clusters", "")
        return "\n\n" + textwrap.fill(f"Few clusters: {text}.", 88) if text else ""
    units = (_n_runs(ctx) > 0).sum("task").to_series()
    units.index = units.index.astype(str)
    word = "tasks"
    few = units[units < FEW_UNITS]
    if few.empty:
        return ""
    who = "every agent" if len(few) == len(units) else ", ".join(few.index)
    counts = ", ".join(sorted({str(int(v)) for v in few}, key=int))
    return "\n\n" + textwrap.fill(
        f"Few {word}: the intervals of {who} rest on {counts} {word} (fewer than {FEW_UNITS}), and a "
        "resampling interval covers less than its level there.",
        88,
    )


def _pass1_bounds(ctx: DemoContext) -> pd.Series:
    """:func:`hierbench.report.pass1_bounds` of the data at the demo's level, computed once."""
    if "pass1_bounds" not in ctx.extra:
        from ..report import pass1_bounds

        ctx.extra["pass1_bounds"] = pass1_bounds(ctx.data, PROB)
    return ctx.extra["pass1_bounds"]


def _few_agents(boot) -> dict[str, str]:
    """The agents whose bootstrap interval is flagged, each with its ``ci_flag``.

    Few tasks carry the mean, or every task scored one value.
    """
    if boot.ci_flag is None or "agent" not in boot.ci_flag.dims:
        return {}
    return {str(a): str(f) for a, f in zip(boot.ci_flag["agent"].values, boot.ci_flag.values, strict=True) if f}


def _few_note(boot, bounds: pd.Series | None = None, binary: bool = True, grades: list[str] | None = None) -> str:
    """The agents whose bootstrap mean few tasks carry, named under the table with the bound that holds.

    ``bounds``: :func:`hierbench.report.pass1_bounds` of the data, each named agent's bound given;
    ``binary=False``: the scores are not all 0 or 1, and the advice sends the reader to
    ``success_rate`` (``pass_hat_k`` refuses them); ``grades``: a graded log's grade names (:func:`_grade_words`).
    """
    from ..report import graded_flag

    flags = {a: graded_flag(f, grades) for a, f in _few_agents(boot).items()}
    bounds = pd.Series(dtype=object) if bounds is None else bounds
    notes = []

    def group(f: str) -> str:  # the flag's side: the mean (few successes), the failures, or one score
        if flag_advice(f) == ZERO_WIDTH_ADVICE:
            return "one"
        return "fails" if f.startswith("few tasks carry the failures") else "mean"

    for head, key in (("Few tasks carry the mean of", "mean"), ("Few tasks carry the failures (1 - mean) of", "fails"),
                      ("One score on every task:", "one")):
        kind = key == "one"
        names = [a for a, f in flags.items() if group(f) == key]
        if names:
            said = [f"{a} {bounds[a]}" for a in names if bounds.get(a, "")]
            who = ", ".join(f"{a} ({flags[a]})" if kind else a for a in names)
            text = f"{head} {who}: {flag_advice(flags[names[0]], binary)}" + (": " + "; ".join(said) if said else "")
            notes.append("\n\n" + textwrap.fill(text + ".", 88))
    return "".join(notes)


def _why_undefined(boot, agent, grades: list[str] | None = None) -> str:
    """Why an agent's bootstrap interval is NaN, read from the result (its resamples, z0, acceleration).

    ``grades``: a graded log's grade names, to say an agent at an end of the scale in them.
    """
    est = float(boot.estimate.sel(agent=agent))
    if not np.isfinite(est):
        return "the agent has no scored task"
    dist = boot.distribution.sel(agent=agent).values
    dist = dist[np.isfinite(dist)]
    if not dist.size:
        return "the statistic is undefined in every resample"
    n = int(boot.n_tasks.sel(agent=agent))
    from ..report import scored_words

    every = f" (every run on its {n} tasks {scored_words(est, grades)})" if est in (0.0, 1.0) else ""
    if np.all(dist == est):
        return f"every resample gives {est:.3f}, the estimate itself{every}: the bootstrap has no spread"
    if boot.bias_correction is not None and not np.isfinite(float(boot.bias_correction.sel(agent=agent))):
        return (f"every resample lies on one side of the estimate {est:.3f}, so BCa's bias correction (from the "
                "share of resamples below the estimate) is infinite")
    if boot.acceleration is not None and not np.isfinite(float(boot.acceleration.sel(agent=agent))):
        return "the jackknife values are all equal, so BCa's acceleration is undefined"
    return "the resampling quantiles are undefined"


def _undefined_note(boot, bounds: pd.Series, grades: list[str] | None = None) -> str:
    """Under the table: each NaN interval, which statistic is undefined and why, and what holds instead.

    ``grades``: a graded log's grade names (:func:`_grade_words`).
    """
    if "agent" not in boot.estimate.dims:
        return ""
    bad = boot.ci.isnull().any("ci_bound")
    lines = []
    method = _METHOD_WORDS[boot.attrs.get("method", "bca")]
    for agent in boot.estimate["agent"].values[bad.values]:
        name = str(agent)
        instead = (
            "what holds instead is its distribution-free bound, below"
            if bounds.get(name, "")
            else "the percentile interval (--bootstrap-method percentile) is defined there"
            if method == "BCa"
            else "no interval of its mean can be computed from these data"
        )
        lines.append(
            f"{name}: [nan, nan] because the {method} interval is undefined: "
            f"{_why_undefined(boot, agent, grades)}; {instead}."
        )
    return "".join("\n\n" + textwrap.fill(line, 88) for line in lines)
