"""What every section of the demo reads.

The evaluation and its truth (:class:`DemoContext`), the one level of every interval, and
the small helpers that turn results into the printed tables.
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from dataclasses import field

import numpy as np
import pandas as pd
import xarray as xr


@dataclass
class DemoContext:
    """State shared by the demo sections; sections may add results to ``extra``.

    ``truth`` is the simulation's true parameters (None on a user's log).
    """

    data: xr.Dataset
    truth: xr.Dataset | None
    extra: dict = field(default_factory=dict)


PROB = 0.95  # one level for every interval in the demo, so they can sit side by side


def _fast(ctx: DemoContext) -> bool:
    """Smoke-run sizes: ``hierbench demo --fast`` (``ctx.extra["fast"]``) or ``HIERBENCH_FAST=1``."""
    return bool(ctx.extra.get("fast")) or os.environ.get("HIERBENCH_FAST", "") not in ("", "0")


def _truth_new_task(ctx: DemoContext) -> xr.DataArray | None:
    """:func:`population_truth` of the context, computed once (None without a truth)."""
    if ctx.truth is None:
        return None
    if "population_truth" not in ctx.extra:
        ctx.extra["population_truth"] = population_truth(ctx.truth)
    return ctx.extra["population_truth"]


def _n_runs(ctx: DemoContext) -> xr.DataArray:
    """Runs per (agent, task) cell, from :func:`hierbench.data.to_counts`, computed once."""
    if "n_runs" not in ctx.extra:
        from ..data import to_counts

        ctx.extra["n_runs"] = to_counts(ctx.data)["n_runs"]
    return ctx.extra["n_runs"]


def population_truth(truth: xr.Dataset) -> xr.DataArray:
    """True expected score of each agent on a new task drawn from the task population.

    The truth's ``p_new_task``: ``E[expit(mu + a_m + s Z)]`` with ``s^2`` the sum of the
    variances of every effect :func:`hierbench.testing.simulate_eval` draws for a cell and a
    run (task, agent x task and run noise, and cluster and agent x cluster with clusters), by
    quadrature, independently of the model code. A truth made before ``p_new_task`` existed
    gets the same quadrature from its scalars.
    """
    if "p_new_task" in truth:
        vals = truth["p_new_task"].transpose("agent").values
    else:
        from ..testing import _p_new_task

        vals = _p_new_task(truth).values
    return xr.DataArray(vals, dims="agent", coords={"agent": truth["agent"].values})


def _frame(table: xr.Dataset, value_fmt: str = "{:.3f}") -> pd.DataFrame:
    est = table["estimate"]
    iv = table["ci"]
    lo = iv.sel(ci_bound="lower", drop=True)
    hi = iv.sel(ci_bound="upper", drop=True)
    cols = {}
    for m in table["estimator"].values:
        cols[f"{m}"] = [
            f"{value_fmt.format(e)} [{value_fmt.format(a)}, {value_fmt.format(b)}]"
            for e, a, b in zip(
                est.sel(estimator=m).values,
                lo.sel(estimator=m).values,
                hi.sel(estimator=m).values,
                strict=True,
            )
        ]
    df = pd.DataFrame(cols, index=[str(a) for a in table["agent"].values])
    if "truth" in table:
        df.insert(0, "truth", [value_fmt.format(v) for v in table["truth"].values])
    return df


def _covers(table: xr.Dataset) -> str:
    """Under a :func:`hierbench.compare.side_by_side` table with a truth: each estimator's count of covers.

    ``_covers_lines`` joined, after a blank line; "" without a truth.
    """
    lines = _covers_lines(table)
    return "\n" + "\n".join(lines) if lines else ""


def _covers_lines(table: xr.Dataset) -> list[str]:
    """``_covers``' printed lines: each estimator's count of covers, a blank line before each.

    One paragraph per estimator (named where the table has more than one), each from
    ``_coverage_words`` wrapped at 90; none without a truth.
    """
    if "covers" not in table:
        return []
    lo = table["ci"].sel(ci_bound="lower", drop=True)
    hi = table["ci"].sel(ci_bound="upper", drop=True)
    rows = [str(a) for a in table["agent"].values]
    names = [str(m) for m in table["estimator"].values]
    lines = []
    for m in names:
        words = _coverage_words(
            pd.Series(table["truth"].values, index=rows),
            pd.Series(lo.sel(estimator=m).values, index=rows),
            pd.Series(hi.sel(estimator=m).values, index=rows),
        )
        lines += ["", *textwrap.wrap(f"{m}: {words}" if len(names) > 1 else words, 90)]
    return lines


#: the misses ``_coverage_words`` names one by one; beyond them it counts the rest
_MISSES_NAMED = 6


def _coverage_words(truth: pd.Series, lower: pd.Series, upper: pd.Series, what: str = "intervals",
                   value_fmt: str = "{:.3f}") -> str:  # fmt: skip
    """Under a table with a truth column beside intervals: how many cover it, the misses named.

    E.g. "5 of 6 intervals cover the truth; the one that misses: agent_04 (truth 0.430, interval
    [0.435, 0.501])." Every table the demo prints with a truth column beside intervals says this under it (section 4
    alone did: audit U, finding 4). The rows are the series' index; a row whose interval or truth
    is not a number is counted apart as undefined, not as a miss. The misses are named with the
    truth and the interval, the first ``_MISSES_NAMED`` of them.
    """
    ok = truth.notna() & lower.notna() & upper.notna()
    hit = ok & (lower <= truth) & (truth <= upper)
    miss = list(truth.index[ok & ~hit])
    text = f"{int(hit.sum())} of {int(ok.sum())} {what} cover the truth"
    if int((~ok).sum()):
        text += f" ({int((~ok).sum())} undefined, not counted)"
    if miss:
        fmt = value_fmt.format
        named = [f"{r} (truth {fmt(truth[r])}, interval [{fmt(lower[r])}, {fmt(upper[r])}])"
                 for r in miss[:_MISSES_NAMED]]  # fmt: skip
        more = f" and {len(miss) - _MISSES_NAMED} more" if len(miss) > _MISSES_NAMED else ""
        text += ("; the one that misses: " if len(miss) == 1 else f"; the {len(miss)} that miss: ") + ", ".join(named) + more
    return text + "."


def _one_task(ctx: DemoContext) -> str | None:
    """A resampling section's word for a log of one task: every resample of tasks would be the data."""
    if int(ctx.data.sizes.get("task", 0)) != 1:
        return None
    return (f"(not applicable: the log holds one task, {ctx.data['task'].values[0]}: every resample of "
            "tasks would be the data, so no interval, test or rank distribution can come from it; add tasks)")


def _grade_words(ctx: DemoContext) -> list[str] | None:
    """The names of a graded log's grades (its labels, or the numbers of its scale), None for plain scores."""
    from ..report import data_grades

    return data_grades(ctx.data)


def _score_levels(ctx: DemoContext) -> list[float] | None:
    """The grade scale the log's scores were read on (``--levels``), None for scores read as they are.

    Two grades are read as 0 and 1, a fail and a pass (VerbAgg's N / Y): None too, so the crossed
    model and pass^k run on them as on any 0/1 log (they said "not run: these scores are grades").
    """
    from ..data import levels_attr

    levels = levels_attr(ctx.data.attrs)
    return levels if levels and len(levels) > 2 else None


def _partial_credit(ctx: DemoContext) -> tuple[int, int, list[tuple]] | None:
    """A log of partial credit: how many scores lie strictly between 0 and 1, of how many, two examples.

    The examples are the first two partial scores of different cells. None when every score is 0
    or 1 (a graded log: :func:`_score_levels` says so first).
    """
    from .._base import partial_credit

    score = ctx.data["score"].transpose("agent", "task", "run")
    n, first = partial_credit(score, first=200)
    cells: dict[tuple, float] = {}
    for a, t, _, v in first:
        cells.setdefault((a, t), v)  # each cell's first partial score
    return (n, int(np.isfinite(score.values).sum()), list(cells.items())[:2]) if n else None


def _partial_credit_words(found: tuple[int, int, list[tuple]]) -> str:
    """"1,442 of the 6,852 scores are partial credit, strictly between 0 and 1 (e.g. ...)"."""
    n, total, first = found
    eg = "; ".join(f"{a} on {t}: {v:.3g}" for (a, t), v in first)
    return f"{n:,} of the {total:,} scores are partial credit, strictly between 0 and 1 (e.g. {eg})"


def _one_agent(ctx: DemoContext, why: str) -> str | None:
    """A section's word for a log of one agent (tau-bench's gpt-4o): what does not apply, not an error."""
    if int(ctx.data.sizes.get("agent", 0)) != 1:
        return None
    return f"(not applicable: the log holds one agent, {ctx.data['agent'].values[0]}: {why})"
