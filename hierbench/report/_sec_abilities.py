"""The agent abilities section: each agent's Bayesian level beside the task bootstrap on one axis, with their flags and the word on what ``mean_new_task`` estimates beside the bootstrap's mean."""

from __future__ import annotations

import pandas as pd

from ._battles import battle_graph
from ._battles import bt_parameters
from ._battles import groups_words
from ._battles import unplayed_words
from ._context import _TITLES
from ._context import _Context
from ._context import _label
from ._context import _Skip
from ._context import clustered_crossed
from ._flags import _add_flag
from ._flags import _bounds
from ._flags import _defined
from ._flags import _few_flag
from ._flags import _few_units_flag
from ._flags import _tasks_scored
from ._flags import _undefined_why
from ._flags import data_flags
from ._flags import data_grades
from ._flags import few_clusters_note
from ._flags import flagged_caption
from ._flags import separated_flags
from ._notes import _grades_note
from ._notes import _mixed_note
from ._notes import _on_grades
from ._notes import _other_scale
from ._notes import _separated_caption
from ._order import in_report_order
from ._order import order_words
from ._report import Report
from ._report import as_table
from ._shift import _abilities_shift
from ._shift import _pooled_cluster_means
from ._shift import cluster_means
from ._twin import ability_columns
from ._twin import score_twin
from ._twin import twin_frame
from ._twin import twin_note


def _sec_abilities(ctx: _Context, rep: Report, sid: str) -> None:
    from . import _figures as F

    prob = ctx.prob
    intervals: dict[str, pd.DataFrame] = {}
    notes = []
    bay = ctx.bayes_frame()
    var = ctx.var
    boot = ctx.bootstrap()
    twin = score_twin(ctx) if boot is not None else None  # IRT: mean_task beside the bootstrap, ability ranks
    if twin:
        bay, var = twin_frame(ctx, twin), twin
    if bay is not None:
        intervals[f"Bayes {ctx.fit.attrs.get('hierbench_model', '')}{' ' + twin if twin else ''} ({prob:.0%} ETI)"] = bay
    gmap = ctx.grade_map()  # a graded fit of the score: the bootstrap goes onto its grades
    same_scale = ctx.score_scale() or gmap is not None or twin is not None
    if boot is not None:
        bf = _on_grades(as_table(boot), gmap)
        kind = bf["ci_kind"].iloc[0] if "ci_kind" in bf else "bootstrap"
        if same_scale:
            unit = getattr(boot, "attrs", {}).get("resample_unit", "task")
            intervals[f"{unit} bootstrap ({kind}, {prob:.0%})"] = bf
            notes += [_grades_note(gmap, kind, ctx.grade_labels())] if gmap else []
        else:
            notes.append(_other_scale(ctx))
    if not intervals:
        raise _Skip("needs a fit with an agent-level variable or data for the bootstrap")
    intervals = {k: in_report_order(v, ctx) for k, v in intervals.items()}
    truth = ctx.truth if same_scale and not twin else None  # the truth is of a new task, not the data's tasks
    if var is not None:
        scale = ctx.agent_draws().attrs.get("scale")
        unit = scale if ctx.mixed else "probability, 0-1" if same_scale else f"{scale} scale" if scale else "model scale"
        # the label's own "(model scale)" gives way to the unit the draws name (a Bradley-Terry fit: logit)
        xlabel = f"{_label(var).removesuffix(' (model scale)')} ({unit}); {prob:.0%} intervals"
    else:
        xlabel = f"mean score per task (0-1); {prob:.0%} intervals"
    drawn, xlabel, targets = _series_targets(ctx, intervals, xlabel)
    fig = F.interval_forest(drawn, truth=truth, xlabel=xlabel, title="Agent abilities")
    wide = pd.concat({k: v[["estimate", "lower", "upper"]] for k, v in intervals.items()}, axis=1)
    wide.columns = [f"{a} {b}" for a, b in wide.columns]
    wide.index = wide.index.astype(str)
    wide.index.name = "agent"
    if truth is not None:
        wide.insert(0, "truth", truth.reindex(wide.index))
    n_tasks = _tasks_scored(ctx)
    if n_tasks is not None:
        wide.insert(0, "tasks scored", n_tasks.reindex(wide.index).astype(int))
    flags = pd.Series("", index=wide.index, dtype=object)
    for name in intervals:
        wide, f = _defined(wide, name, _undefined_why(ctx, boot) if "bootstrap" in name else None)
        flags = _add_flag(flags, f)
        if "bootstrap" in name:
            flags = _add_flag(flags, _few_flag(intervals[name], name, wide.index, _bounds(ctx), ctx.binary(),
                                               data_grades(ctx.data)))  # fmt: skip
            flags = _add_flag(flags, _few_units_flag(ctx, boot, name, n_tasks, wide.index))
    if bay is not None:
        flags = _add_flag(flags, separated_flags(ctx, wide.index))
    flags = _add_flag(flags, data_flags(ctx, wide.index, "levels"))
    graph = battle_graph(ctx) if bay is not None else None
    if graph is not None:
        flags = _add_flag(flags, pd.Series(["in no battle: its ability is the prior's alone" if a in graph["unplayed"]
                                            else "" for a in wide.index], index=wide.index, dtype=object))  # fmt: skip
    if (flags != "").any():
        wide["flag"] = flags
    wide = ability_columns(ctx, wide) if twin else wide
    one = f"Each agent's level with its interval ({next(iter(intervals))})"
    text = (
        ("Each agent's level with its interval from each method on one axis" if len(intervals) > 1 else one)
        + ("; crosses mark the truth." if truth is not None else ".")
        + (" " + " ".join(notes) if notes else "")
        + few_clusters_note(boot)
    )
    if var == "mean_new_task":
        text += _new_task_target(ctx, boot is not None and same_scale, intervals)
    elif ctx.mixed and var is not None:
        text += _mixed_note(ctx, True)
    elif twin:
        text += twin_note(ctx, twin) + f" The `{ctx.var}` columns (model scale) are in the table only; the figure draws `{twin}`."
    text += f" Rows: {order_words(ctx)}."
    if graph is not None:
        said = [groups_words(graph, "a difference of abilities"), unplayed_words(graph, "its ability is", "their abilities are")]
        text += "".join(f" {t}" for t in said if t) + bt_parameters(ctx)
    rep.section(_TITLES[sid], text, table=wide, id=sid)
    rep.figure("abilities_forest", fig, f"Agent abilities: {xlabel}.{targets}{_no_bar(intervals)}"
               + _separated_caption(ctx, "Bayes interval") + flagged_caption(ctx, "levels"))


def _series_targets(ctx: _Context, intervals: dict[str, pd.DataFrame], xlabel: str
                    ) -> tuple[dict[str, pd.DataFrame], str, str]:  # fmt: skip
    """The figure's series named by their own targets where a clustered ``mean_new_task`` stands beside the bootstrap.

    Returns the series to draw (legend names), the axis label and the caption's clause. A crossed fit
    with clusters estimates a new task from a new cluster, every cluster weighing alike; the
    bootstrap's mean is over these tasks, each cluster weighing by its tasks (audit A s17: one axis
    label, the Bayesian target's, stood under both; SWE-bench 0.523 per task against 0.472 per
    cluster). Elsewhere ``intervals``, ``xlabel`` and ``""``.
    """
    boot = [k for k in intervals if "bootstrap" in k]
    if ctx.var != "mean_new_task" or not boot or not clustered_crossed(ctx.fit):
        return intervals, xlabel, ""
    bayes_target, boot_target = "a new task from a new task cluster", "the mean over these tasks"
    drawn = {f"{k}: {boot_target if k in boot else bayes_target}": v for k, v in intervals.items()}
    what = "success probability" if ctx.binary() else "expected score"
    xlabel = f"{what} (0-1){xlabel[xlabel.rindex(';'):]}"
    said = "; ".join(f"{k}: {boot_target + ', each cluster weighing by its tasks' if k in boot else bayes_target + ', every cluster weighing alike'}"
                     for k in intervals)  # fmt: skip
    return drawn, xlabel, f" Each series has its own target ({said}), so the two can differ without either being wrong."


def _new_task_target(ctx: _Context, beside: bool, intervals: dict[str, pd.DataFrame] | None = None) -> str:
    """Agent abilities' word on what ``mean_new_task`` estimates, and whether the task bootstrap's mean is that.

    ``beside``: the bootstrap stands beside it. Without task clusters in the model the two have one
    target when the tasks run are a sample of the population. A crossed fit with clusters draws its new
    task from a new cluster, every cluster weighing alike, while the bootstrap's mean weighs each cluster
    by its tasks (audit C: SWE-bench's Claude 4.5 Opus, 0.744 per task and 0.671 per repository, Bayes
    0.674): then they are not one target, and the fit's ``mean_observed`` is the bootstrap's counterpart.

    ``intervals``: the section's tables (``Bayes ...`` and ``... bootstrap ...``); beside each other,
    Bayes minus bootstrap is said here too, split at the fit's own mean over these tasks, with which
    number to quote where a shift most agents share parts them (``_abilities_shift``; audit B s71:
    the section framed METR's gap as the cluster weighting, which would move it the other way).
    """
    if not clustered_crossed(ctx.fit):
        return " The Bayesian target is the expected score on a new task drawn from the task population, " + (
            "the same target as the task bootstrap of the benchmark mean."
            if beside
            else "the target the task bootstrap of the benchmark mean also has; give the run log "
            "(`--data`) to put it beside."
        ) + _shift_of(ctx, beside, intervals)
    text = (" The Bayesian target is the expected score on a new task from a new task cluster, every cluster "
            "weighing alike; the task bootstrap's mean weighs each cluster by its number of tasks, so the two are "
            "one target only where the clusters' means do not differ with their sizes")  # fmt: skip
    means = cluster_means(ctx.fit, ctx.data)
    if means is None:
        text += "; give the run log (`--data`) to see how far they differ here."
    else:
        pooled = _pooled_cluster_means(ctx.data)
        text += (f": here, over all agents, {pooled[0]:.3f} per task and {pooled[1]:.3f} per cluster"
                 + (" (each agent's, and how far that weighting accounts for a gap, in the side-by-side section)."
                    if beside else "."))  # fmt: skip
    if ctx.post is not None and "mean_observed" in ctx.post:
        text += (" The fit's `mean_observed`, its posterior mean over the data's tasks, is the counterpart of "
                 "the bootstrap's mean" + (" (in the side-by-side section)." if beside else "."))  # fmt: skip
    return text + _shift_of(ctx, beside, intervals)


def _shift_of(ctx: _Context, beside: bool, intervals: dict[str, pd.DataFrame] | None) -> str:
    """``_abilities_shift`` of the section's Bayes and bootstrap tables, where both stand beside ("" else)."""
    if not beside or not intervals:
        return ""
    bay = next((v for k, v in intervals.items() if k.startswith("Bayes")), None)
    boot = next((v for k, v in intervals.items() if "bootstrap" in k), None)
    return "" if bay is None or boot is None else _abilities_shift(ctx, bay, boot)



def _no_bar(intervals: dict[str, pd.DataFrame]) -> str:
    """The caption's word on a point drawn without a bar: its interval is undefined, not of zero width."""
    said = []
    for name, v in intervals.items():
        bare = [str(a) for a in v.index[v["estimate"].notna() & (v["lower"].isna() | v["upper"].isna())]]
        said += [f"{', '.join(bare)} ({name})"] if bare else []
    return (f" No bar for {'; '.join(said)}: the interval is undefined there, not of zero width "
            "(the table's flag says why and what holds instead).") if said else ""
