"""The side-by-side section: the Bayesian and bootstrap intervals of each agent in one table, where they disagree, which is narrower, and what each column's target is."""

from __future__ import annotations

import pandas as pd

from ._context import _TITLES
from ._context import _Context
from ._context import _Skip
from ._flags import _add_flag
from ._flags import _bounds
from ._flags import _defined
from ._flags import _disagree
from ._flags import _few_flag
from ._flags import _few_units_flag
from ._flags import _tasks_scored
from ._flags import _undefined_why
from ._flags import data_flags
from ._flags import few_clusters_note
from ._flags import separated_flags
from ._notes import _grades_note
from ._notes import _on_grades
from ._notes import _other_scale
from ._order import in_report_order
from ._order import order_words
from ._report import Report
from ._report import as_table
from ._shift import _clustered
from ._shift import _model
from ._shift import cluster_means
from ._shift import cluster_weights
from ._shift import shared_shift
from ._twin import score_twin
from ._twin import twin_frame
from ._twin import twin_note


def _side_missing(ctx: _Context, no_boot: bool) -> str:
    """Why the side-by-side table cannot be drawn, in terms of what the reader gave."""
    if ctx.fit is None or ctx.data is None:
        return "needs both a fit and data (the Bayesian and the frequentist half)"
    if no_boot:
        return "needs the task-level bootstrap of the data, which was not computed (freq=None?)"
    model = ctx.fit.attrs.get("hierbench_model", "custom")
    if model == "mixed":
        return (
            "the formula model's agent means could not be rebuilt from the data (see the report's "
            "warnings): put "
            "hierbench.metrics.mean_response(fit, model) beside the bootstrap with hierbench.compare.side_by_side"
        )
    return (
        f"this {model} fit has no posterior variable of each agent's level (mean_new_task, p_agent, ...): "
        "for a formula model put hierbench.metrics.mean_response(fit, model) beside the bootstrap with "
        "hierbench.compare.side_by_side (notebook 08 does)"
    )


def _narrower_boot(wide: pd.DataFrame, kind: str) -> str:
    """The agents whose bootstrap interval is narrower than their Bayesian one, named ("" if none).

    Audit F, F5: the sentence that the bootstrap's is wider was said of every agent, and on the wine
    judges (8 bottles each) judge 5's was the narrower; with 2 tasks per agent every one was.
    """
    width = {m: pd.to_numeric(wide[f"{m} upper"], errors="coerce") - pd.to_numeric(wide[f"{m} lower"], errors="coerce")
             for m in (f"bootstrap {kind}", "Bayes ETI")}  # fmt: skip
    narrower = wide.index[(width[f"bootstrap {kind}"] < width["Bayes ETI"]).to_numpy()].astype(str).tolist()
    if not narrower:
        return ""
    who = ", ".join(narrower[:5]) + (f" and {len(narrower) - 5} more" if len(narrower) > 5 else "")
    return (f" Here the bootstrap's is the narrower for {who} ({len(narrower)} of {len(wide)} agents): with few "
            "tasks a resampling interval falls short of its level.")


def _sec_side(ctx: _Context, rep: Report, sid: str) -> None:
    boot = ctx.bootstrap()
    twin = score_twin(ctx) if boot is not None else None  # IRT: mean_task on the score scale, not ability
    bay = twin_frame(ctx, twin) if twin else ctx.bayes_frame()
    if boot is None or bay is None:
        raise _Skip(_side_missing(ctx, boot is None))
    gmap = ctx.grade_map()  # a graded fit of the score: the bootstrap goes onto its grades
    bf = _on_grades(as_table(boot), gmap)
    kind = bf["ci_kind"].iloc[0] if "ci_kind" in bf else "bootstrap"
    if not ctx.score_scale() and gmap is None and not twin:
        if ctx.mixed:
            raise _Skip(_other_scale(ctx))
        raise _Skip(
            f"the Bayesian `{ctx.var}` is on the model's scale, the bootstrap on the score scale: not comparable"
        )
    bf.index = bf.index.astype(str)
    bay.index = bay.index.astype(str)
    wide = pd.concat(
        {f"bootstrap {kind}": bf[["estimate", "lower", "upper"]], "Bayes ETI": bay[["estimate", "lower", "upper"]]},
        axis=1,
    )
    wide.columns = [f"{a} {b}" for a, b in wide.columns]
    n_tasks, total = _tasks_scored(ctx), int(ctx.data.sizes["task"])
    wide.insert(0, "tasks scored", n_tasks.reindex(wide.index).astype(int))
    wide["difference"] = wide["Bayes ETI estimate"] - wide[f"bootstrap {kind} estimate"]
    wide["disagree"] = _disagree(wide, kind)
    if ctx.truth is not None:
        t = ctx.truth.reindex(wide.index)
        wide.insert(0, "truth", t)
        for m, lab in ((f"bootstrap {kind}", "bootstrap covers"), ("Bayes ETI", "Bayes covers")):
            lo, hi = (pd.to_numeric(wide[f"{m} {b}"], errors="coerce") for b in ("lower", "upper"))
            wide[lab] = (lo <= t) & (t <= hi)
    wide, flags = _defined(wide, f"bootstrap {kind}", _undefined_why(ctx, boot))
    flags = _add_flag(flags, _few_flag(bf, f"bootstrap {kind}", wide.index, _bounds(ctx), ctx.binary()))
    flags = _add_flag(flags, _few_units_flag(ctx, boot, f"bootstrap {kind}", n_tasks, wide.index))
    scored = "scored on " + wide["tasks scored"].astype(str) + f" of {total} tasks: the bootstrap mean is over those"
    flags = _add_flag(flags, separated_flags(ctx, wide.index))
    flags = _add_flag(flags, data_flags(ctx, wide.index, "means and intervals"))
    wide["flag"] = _add_flag(flags, scored.where(wide["tasks scored"] < total, ""))
    wide = in_report_order(wide, ctx)
    wide = _target_columns(ctx, wide, kind) if ctx.var == "mean_new_task" and not twin else wide
    n_dis = int(wide["disagree"].sum())
    what = "grade" if gmap else "score"
    shift = shared_shift(wide["difference"], ctx.var == "mean_new_task", cluster_weights(ctx.fit, ctx.data),
                         these=_these_gap(wide, kind), clustered=_clustered(ctx), model=_model(ctx))
    rep.section(
        _TITLES[sid],
        (f"Each agent's mean {what} over the tasks it ran" if ctx.mixed
         else "Each agent's mean success probability (Bayes) and mean score (bootstrap)" if twin
         else "The agent's expected score on a new task")
        + f", both methods at {ctx.prob:.0%}.{' ' + _grades_note(gmap, kind, ctx.grade_labels()) if gmap else ''} `disagree` flags "
        "an agent whose point estimate from one method lies outside the other's interval (or whose "
        f"intervals do not overlap), judged only where both intervals are defined (`undefined` elsewhere): "
        f"{n_dis} of {len(wide)} agents flagged. `tasks scored` is the "
        "number of tasks with a scored run of the agent, the tasks its bootstrap mean averages; `flag` "
        "notes an agent scored on only some tasks (its mean rests on those) and an interval a method "
        "could not compute." + few_clusters_note(boot)
        + (
            _side_target(ctx, wide, total)
            if ctx.var == "mean_new_task"
            else f" The Bayesian column is the formula model's expected {what} of each agent averaged over "
            "its own tasks (hierbench.metrics.mean_response, tasks='observed'), the bootstrap's point "
            "estimate; its interval holds these tasks fixed, the bootstrap's is for a new draw of tasks "
            "(usually wider by the tasks' spread, not for want of information)." + _narrower_boot(wide, kind)
            if ctx.mixed
            else twin_note(ctx, twin)
            if twin
            else ""
        )
        + shift
        + f" Rows: {order_words(ctx)}.",
        table=wide,
        id=sid,
        flag="disagree",
    )


def _target_columns(ctx: _Context, wide: pd.DataFrame, kind: str) -> pd.DataFrame:
    """The side-by-side table with the counterparts of each column's target beside it, where the fit has them.

    ``per-cluster mean`` (after the bootstrap's columns): the data's mean with every cluster weighing
    alike, as a clustered crossed fit's new task does (:func:`cluster_means`); ``Bayes mean_observed``
    (after the Bayesian ones): the fit's posterior mean over the data's tasks, the bootstrap's point target.
    """
    means = cluster_means(ctx.fit, ctx.data)
    if means is not None:
        at = wide.columns.get_loc(f"bootstrap {kind} upper") + 1
        wide.insert(at, "per-cluster mean", means["per cluster"].reindex(wide.index))
    if ctx.post is not None and "mean_observed" in ctx.post:
        obs = ctx.post["mean_observed"].mean(("chain", "draw")).to_series()
        obs.index = obs.index.astype(str)
        wide.insert(wide.columns.get_loc("Bayes ETI upper") + 1, "Bayes mean_observed", obs.reindex(wide.index))
    return wide


def _side_target(ctx: _Context, wide: pd.DataFrame, total: int) -> str:
    """The side-by-side section's word on the targets of its columns (a ``mean_new_task`` fit)."""
    if "per-cluster mean" in wide:
        text = (" The bootstrap target is the mean score per task, every task weighing alike; the Bayesian "
                "`mean_new_task` is the model's expected score on a new task from a new cluster, every cluster "
                "weighing alike: not one target where the clusters' means differ with their sizes. `per-cluster "
                "mean` is each agent's mean score with its clusters weighing alike, the data's side of that weighting.")  # fmt: skip
    else:
        text = (" The bootstrap target is the mean score per task; the Bayesian `mean_new_task` is the model's "
                "expected score on a new task, the same target when the tasks run are a sample of the population.")  # fmt: skip
    if "Bayes mean_observed" in wide:
        short = wide["tasks scored"] < total
        text += (" `Bayes mean_observed` is the fit's posterior mean over the data's tasks, the counterpart of the "
                 "bootstrap's mean (its interval, not shown, holds these tasks fixed)"
                 + (f"; for {'an agent' if short.sum() == 1 else 'the agents'} scored on fewer than the {total} tasks it "
                    "also averages the tasks never run, predicted by the model, so there it is not the bootstrap's."
                    if short.any() else "."))  # fmt: skip
    return text


def _these_gap(wide: pd.DataFrame, kind: str) -> pd.Series | None:
    """The fit's own mean over these tasks minus the bootstrap's mean, per agent (None without ``mean_observed``)."""
    if "Bayes mean_observed" not in wide:
        return None
    return (pd.to_numeric(wide["Bayes mean_observed"], errors="coerce")
            - pd.to_numeric(wide[f"bootstrap {kind} estimate"], errors="coerce"))  # fmt: skip
