"""The report's other sections: data, abilities, pass^k, ranks, variance, predictive checks, side by side, checklist."""

from __future__ import annotations

import platform

import numpy as np
import pandas as pd
import xarray as xr

from .._base import cluster_label
from .._base import counted
from .._base import fit_record
from .._base import flag_advice
from ..data import grade_key
from ..freq import FEW_UNITS  # the one count of few resampled units, owned by freq
from ._battles import _battle_rank_flags
from ._battles import _sec_battles
from ._battles import battle_graph
from ._battles import bt_parameters
from ._battles import groups_words
from ._battles import never_met_words
from ._battles import of_battles
from ._battles import unplayed_words
from ._context import _TITLES
from ._context import _Context
from ._context import _label
from ._context import _Skip
from ._context import clustered_crossed
from ._context import file_name
from ._context import g_interval
from ._context import most_share
from ._context import population_words
from ._order import agent_order
from ._order import in_report_order
from ._order import order_words
from ._pair_rows import link_caption
from ._pair_rows import rank_link_flags
from ._ppc_tasks import task_spread_text
from ._report import Report
from ._report import as_table
from ._report import judged
from ._twin import ability_columns
from ._twin import score_twin
from ._twin import twin_frame
from ._twin import twin_note


def _sec_data(ctx: _Context, rep: Report, sid: str) -> None:
    if of_battles(ctx):
        return _sec_battles(ctx, rep, sid)
    if ctx.data is None:
        if (
            ctx.fit is not None
            and "constant_data" in ctx.fit.children
            and "n_runs" in ctx.fit["constant_data"]
        ):
            n = ctx.fit["constant_data"]["n_runs"]
            df = pd.DataFrame(
                {
                    "tasks run": (n > 0).sum("task").to_series(),
                    "runs": n.sum("task").to_series(),
                    "cells never run": (n == 0).sum("task").to_series(),
                }
            )
            df.index = df.index.astype(str)
            df = in_report_order(df, ctx)
            rep.section(
                _TITLES[sid],
                f"{counted(n.sizes['agent'], 'agent')} x {counted(n.sizes['task'], 'task')}, {counted(int(n.sum()), 'run')}, "
                f"{int((n == 0).sum())} agent x task cells never run (from the fit's constant data; "
                "give the data for the error rates and the frequentist half)."
                + _order_sentence(ctx)
                + "".join(f"\n\n- {f}" for f in prior_decisions(ctx.fit)),
                table=df,
                id=sid,
            )
            return
        raise _Skip("no data given")
    d = ctx.data_report()
    s = ctx.data_summary()
    rename = {
        "n_tasks_attempted": "tasks run",
        "n_tasks_scored": "tasks scored",
        "n_missing_cells": "cells never run",
        "n_runs": "runs",
        "n_scored": "scored runs",
        "n_error": "error runs",
        "error_rate": "error rate",
        "mean_score": "mean score (per task)",
        "micro_mean_score": "mean score (per run)",
    }
    s = in_report_order(s.rename(columns=rename), ctx)
    flags = []
    flags += coverage_flags(ctx.data)
    if "error rate" in s:
        high = s.index[s["error rate"] > 0.05].tolist()
        if high:
            flags.append(
                f"agents with infrastructure error rate above 5%: {high} (policy errors={d['errors']!r})"
            )
    rpc = d["runs_per_cell"]
    if rpc["max"] <= 1:
        flags.append("every cell holds a single run: run-to-run variation cannot be separated from agent x task")
    elif rpc["min"] <= 1:
        flags.append("some cells hold a single run: run-to-run variation cannot be separated there")
    if d["score_kind"] != "binary":
        flags.append(
            f"scores are {_kind_words(d)}: pass^k and the binomial models need binary scores"
        )
    if d["not_kept"]:
        flags.append(f"records not kept by the reader: {d['not_kept']}")
    flags += marked_agents(s, ctx.data)
    flags += prior_decisions(ctx.fit)
    flags += misfit_agents(ctx.person_fit())
    flags += reading_notes(ctx.data)
    text = (
        f"{counted(d['n_agents'], 'agent')} x {counted(d['n_tasks'], 'task')}; {counted(d['n_runs_total'], 'run')}; runs per cell "
        f"min {rpc['min']}, median {rpc['median']:g}, max {rpc['max']}; {_scored_text(d)}"
        f"{d['n_missing_cells']} of {d['n_cells']} agent x task cells never run; "
        f"{d['n_error_runs']} infrastructure-error runs ({d['n_error_runs'] / max(d['n_runs_total'], 1):.1%}, "
        f"policy errors={d['errors']!r}); scores {_kind_words(d)}{_graded_text(d)}; source {file_name(d['source'])}."
        + _order_sentence(ctx)
    )
    if flags:
        text += "\n\n**Flags:**\n\n" + "\n".join(f"- {f}" for f in flags)
    elif d["n_agents"] == 1:  # no pair: nothing to say of pairs (was: "every pair shares 2 or more")
        text += "\n\nNo flags: the agent ran at least half the tasks, its error rate is low."
    else:
        text += "\n\nNo flags: every agent ran at least half the tasks, every pair shares 2 or more, error rates are low."
    rep.section(_TITLES[sid], text, table=s, id=sid)


def _order_sentence(ctx: _Context) -> str:
    """The data summary's word on the one order of the agents in this report's tables and figures."""
    if ctx.single_agent() is not None:
        return ""
    ranks = " (the rank probabilities alone go by expected rank, as they say)" if ctx.var is not None else ""
    return f" Agents are listed in one order in this report's tables and figures: {order_words(ctx)}{ranks}."


def _rank_basis(ctx: _Context) -> str:
    """What the ranks rest on, by the model fitted, and their counterpart without the model (battles or per-task data).

    Only a model with task effects shared by the agents (crossed, IRT) adjusts for which tasks an
    agent ran; the beta-binomial has none, and a formula model's ``mean_own_tasks`` holds each
    agent's own tasks fixed (audit N: METR's o1-preview skipped 8 hard tasks and ranked above
    Claude 3.5 Sonnet (Old) with rank interval [4, 4], while the paired test on shared tasks gave p 0.36).
    """
    from ._match import battles_fit
    from ._pairs import BATTLES_INDEPENDENT
    from ._pairs import unpaired_fit

    if battles_fit(ctx.fit):
        return "Model-based: the ranks of the fit's abilities. " + BATTLES_INDEPENDENT.format(
            what="these ranks", extra="; its rank_ci is the rank interval under that resampling"
        )
    if ctx.mixed:
        basis = (
            "Model-based: the ranks of the formula model's expected mean of each agent over its own tasks, "
            "those tasks held fixed: they are not adjusted for which tasks an agent ran, so agents that ran "
            "different tasks are ranked on different tasks"
        )
    elif unpaired_fit(ctx.fit):
        model = str(ctx.fit.attrs.get("hierbench_model", "this")).replace("_", "-")
        basis = (
            f"Model-based: the ranks of the fit's levels, each from the agent's own tasks: the {model} "
            "model has no task effects, so they are not adjusted for which tasks an agent ran"
        )
    else:
        basis = (
            "Model-based: the ranks of the fit's levels, which compare agents that ran different tasks "
            "through the model's task effects"
        )
    return basis + (
        "; with no model, hierbench.freq.rank_uncertainty(data) gives the ranks under task resampling "
        "(`hierbench demo` shows both)."
    )


def prior_decisions(fit: xr.DataTree | None) -> list[str]:
    """The fit's recorded structure decisions that leave a parameter to its prior, as the data summary flags them.

    The beta-binomial of a log with one run per cell records ``overdispersion``: "rho from its prior"
    (one Bernoulli run has the same law for every rho); the report said so nowhere (audit N).
    """
    if fit is None:
        return []
    decisions = fit_record(fit, "hierbench_structure").get("decisions", {})
    return [f"the fit's model, {name}: {d['choice']} ({d.get('reason', 'no reason recorded')}): read those "
            "numbers as the prior's, not the data's" for name, d in decisions.items()
            if isinstance(d, dict) and "prior" in str(d.get("choice", ""))]  # fmt: skip


def coverage_flags(data: xr.Dataset) -> list[str]:
    """Flags for agents that ran fewer than half the log's tasks, and for pairs that share fewer than 2.

    The report's data summary and the demo's section 2 say both (METR's davinci-002 ran 16 of 83).
    """
    from ..data import to_counts

    ran = (to_counts(data)["n_runs"].transpose("agent", "task").values > 0).astype(np.int64)
    names = [str(a) for a in data["agent"].values]
    few = [a for a, k in zip(names, ran.sum(axis=1), strict=True) if k < 0.5 * ran.shape[1]]
    flags = [f"agents that ran fewer than half of the {ran.shape[1]} tasks: {few} (their means and ranks rest "
             "on other tasks than the rest's)"] if few else []  # fmt: skip
    return flags + _unshared_pairs(ran, names)


def _unshared_pairs(ran: np.ndarray, names: list[str]) -> list[str]:
    """A flag for the pairs of agents that share fewer than 2 tasks (``ran``: agent x task, 1 where run)."""
    from .._base import shared_tasks_per_pair

    i, j, shared = shared_tasks_per_pair(ran)
    bad = np.flatnonzero(shared < 2)
    if not bad.size:
        return []
    ex = ", ".join(f"{names[i[k]]} and {names[j[k]]}: {shared[k]}" for k in bad[:3])
    if len(shared) == 1:
        return [f"the two agents share {shared[0]} task{'' if shared[0] == 1 else 's'}: they cannot be "
                "compared by a paired difference"]  # fmt: skip
    return [f"{len(bad)} of {len(shared)} pairs of agents share fewer than 2 tasks (e.g. {ex}): they cannot "
            "be compared by a paired difference"]  # fmt: skip


def marked_agents(s: pd.DataFrame, data: xr.Dataset) -> list[str]:
    """Flags for the agents the data themselves mark, by an annotation or by their loader.

    A per-run annotation on at least half an agent's runs (``--annotate``: SWE-bench's
    ``flag_per_instance_disagrees_with_reported`` on every run of one model), and the agents a
    loader records in ``attrs["flagged_agents"]``.

    ``s``: the summary table as :func:`_sec_data` shows it (``runs``, ``n_<annotation>``), or
    :func:`hierbench.data.summarize`'s as a frame (``n_runs``).
    """
    import json

    out = []
    names = data.attrs.get("annotations", "[]")
    col = "runs" if "runs" in s else "n_runs"
    flagged = data.attrs.get("flagged_agents")
    said = json.loads(flagged) if isinstance(flagged, str) else dict(flagged or {})
    for name in json.loads(names) if isinstance(names, str) else list(names or []):
        if f"n_{name}" not in s or col not in s:
            continue
        n, runs = s[f"n_{name}"].astype(float), s[col].astype(float)
        marks = [(str(a), k, r) for a, k, r in zip(s.index, n, runs, strict=True) if r > 0 and k >= r / 2]
        most = [f"{a} ({int(k)} of {int(r)} runs)" for a, k, r in marks]
        # agents the loader flags too are named once, by the loader's line below (SWE-bench: said twice)
        if most and not (said and {a for a, _, _ in marks} <= set(map(str, said))):
            out.append(f"the per-run annotation `{name}` marks at least half the runs of: {'; '.join(most)}: "
                       "what it marks bears on every number of these agents")
    if said:
        col = data.attrs.get("flag_column")
        out.append("the data's own source flags the records of: " + "; ".join(f"{a} ({k} runs)" for a, k in said.items())
                   + (f" (its column `{col}`)" if col else "") + " (attrs['flagged_agents']): read their scores as suspect")
    return out


def reading_notes(data: xr.Dataset) -> list[str]:
    """What the reader said while reading the log (``attrs["reading_notes"]``, set by the command line).

    A column named like a role and not read, labels apart only by spaces, repeated records: said
    on the terminal when the log was read, and here so that the report carries them.
    """
    import json

    raw = data.attrs.get("reading_notes")
    notes = json.loads(raw) if isinstance(raw, str) else list(raw or [])
    src = str(data.attrs.get("source", ""))
    # the log by its file name, as the summary names it: a report travels, its folder does not
    return [f"the reader said: {n.replace(src, file_name(src)) if src else n}" for n in notes]


def misfit_agents(fit) -> list[str]:
    """A flag for the agents :func:`hierbench.freq.person_fit` finds do not follow the tasks' difficulty.

    ``fit``: its result, or None where it does not apply (partial credit, fewer than 3 agents).
    A per-task record whose successes fall on hard and easy tasks alike is a broken log (SWE-bench's
    Claude 3.7 Sonnet entry) or an agent unlike the others (METR's human baselines): the flag says
    to check which before reading its numbers.
    """
    if fit is None or not bool(fit.flagged.any()):
        return []
    who = [str(a) for a, f in zip(fit.estimate[fit.estimate.dims[0]].values, fit.flagged.values, strict=True) if f]
    lines = "; ".join(fit._agent_line(a) for a in who)
    return [f"results that do not follow the tasks' difficulty as the other agents' do (person fit: the slope "
            f"on the other agents' task logit with its {fit._ci_words()} interval, bootstrap test, Holm over the "
            f"agents at {fit.alpha:g}): {lines}. "
            "A record like this is a broken log, or an agent unlike the others (a human baseline, another kind "
            f"of system): check which before reading {'its' if len(who) == 1 else 'their'} numbers"]  # fmt: skip


def _scored_text(d: dict) -> str:
    """Where excluded error runs make the runs a model sees differ from the runs attempted, say so."""
    spc = d["scored_runs_per_cell"]
    if not d["scored_differs"]:
        return ""
    return (
        f"the same counting only runs with a score (errored runs excluded; what the models see): "
        f"min {spc['min']}, median {spc['median']:g}, max {spc['max']}, and "
        f"{d['n_cells_without_score']} attempted cells left without any score; "
    )


#: what a formula model's agent level is, said wherever the report uses it
_MIXED_LEVEL = (
    "The formula model's level of each agent is its {what}: the posterior of each design row's "
    "expected outcome, every fitted effect at its drawn value, averaged over the agent's own rows "
    "(hierbench.metrics.mean_response with tasks='observed'; the task bootstrap's point estimate). "
    "Its interval holds these tasks fixed; the bootstrap's is for a new draw of tasks, so it is usually "
    "wider, by the tasks' spread, not by less information (with few tasks the bootstrap's can be the "
    "narrower one: a resampling interval then falls short of its level)."
)
#: the same, where Agent abilities has said it already
_MIXED_SHORT = "(the formula model's expected mean over each agent's own tasks; see Agent abilities)."


def _mixed_note(ctx: _Context, full: bool) -> str:
    """What a formula model's agent level is, and whether the agents' tasks differ."""
    text = " " + (_MIXED_LEVEL.format(what=_label(ctx.var)) if full else _MIXED_SHORT)
    n = _tasks_scored(ctx)
    if n is not None and n.nunique() > 1:
        text += " The agents were scored on different numbers of tasks, so their levels average over different tasks."
    return text


def _other_scale(ctx: _Context) -> str:
    """Why the Bayesian level and the bootstrap of the mean score are not drawn on one axis."""
    if ctx.mixed:
        return (
            f"The formula model describes `{ctx.agent_draws().attrs['response']}` on "
            f"{ctx.agent_draws().attrs['scale']}, the bootstrap the data's `score`: they are not drawn on one "
            "axis (nor compared in the side-by-side section)."
        )
    return (
        f"The Bayesian variable `{ctx.var}` is on the model's scale, not the score scale, so the "
        "bootstrap intervals of the mean score are not drawn on its axis (see the side-by-side table)."
    )


def _kind_words(d: dict) -> str:
    """The scores' kind as the data summary says it: ``graded`` for ordinal grades (wine's 1-5: "mixed")."""
    return "graded" if d.get("score_levels") and d["score_kind"] == "mixed" else str(d["score_kind"])


def _graded_text(d: dict) -> str:
    """How the scores were read from ordinal grades (numbers or labels), for the data summary; empty otherwise."""
    if not d.get("score_levels"):
        return ""
    from ..data import grade_reading

    return f" ({grade_reading(d['score_levels'], d.get('score_labels'))})"


def _on_grades(bf: pd.DataFrame, gmap: tuple[float, float] | None) -> pd.DataFrame:
    """A bootstrap table of the mean score on the grades, ``first + span x score`` (as it is without ``gmap``)."""
    if gmap is None:
        return bf
    bf = bf.copy()
    for col in ("estimate", "lower", "upper"):
        bf[col] = gmap[0] + gmap[1] * bf[col].astype(float)
    return bf


def _grades_note(gmap: tuple[float, float], kind: str, labels: list[str] | None = None) -> str:
    """How the bootstrap of the mean score came onto the grades (named by their labels), said where it is drawn there."""
    key = f" ({grade_key(gmap[0] + np.arange(len(labels)), labels)})" if labels else ""
    return (
        f"The task bootstrap of the mean score is on the grades{key} as {gmap[0]:g} + {gmap[1]:g} x score (the "
        f"reading of the grades undone): an increasing linear map, under which the mean and its {kind} "
        "interval map exactly."
    )


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
    fig = F.interval_forest(intervals, truth=truth, xlabel=xlabel, title="Agent abilities")
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
    rep.figure("abilities_forest", fig, f"Agent abilities: {xlabel}.{_no_bar(intervals)}"
               + _separated_caption(ctx, "Bayes interval"))


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


def _separated_caption(ctx: _Context, what: str) -> str:
    """A caption's word on the agents the fit's data separate: their ``what`` is the prior's ("" if none)."""
    sep = separated_agents(ctx.fit)
    if not sep:
        return ""
    note_separation(ctx)
    return f" {', '.join(sep)}: " + _SEPARATED_WHY.format(whose="its" if len(sep) == 1 else "their", number=what) + "."


def _no_bar(intervals: dict[str, pd.DataFrame]) -> str:
    """The caption's word on a point drawn without a bar: its interval is undefined, not of zero width."""
    said = []
    for name, v in intervals.items():
        bare = [str(a) for a in v.index[v["estimate"].notna() & (v["lower"].isna() | v["upper"].isna())]]
        said += [f"{', '.join(bare)} ({name})"] if bare else []
    return (f" No bar for {'; '.join(said)}: the interval is undefined there, not of zero width "
            "(the table's flag says why and what holds instead).") if said else ""


def _no_level(ctx: _Context) -> str:
    """Why the report has no posterior level per agent to rank or compare."""
    if ctx.mixed and ctx.data is None:
        return (
            "a formula model's agent levels are computed from its design, which the report rebuilds from "
            "the data: give the data (or call hierbench.metrics.mean_response(fit, model) and rank its draws)"
        )
    if ctx.mixed:
        return (
            "the formula model's agent means could not be rebuilt from the data (see the report's "
            "warnings): rank the draws of "
            "hierbench.metrics.mean_response(fit, model) with hierbench.metrics.rank_probabilities"
        )
    return "needs a fit with an agent-level variable"


#: above this many agents the rank section tabulates a summary per agent, not every rank
RANKS_AS_TABLE = 8


def _rank_summary(df: pd.DataFrame, prob: float) -> pd.DataFrame:
    """Per agent: expected rank, the ranks covering ``prob`` (a central interval), P(1), P(top 3)."""
    p = df.to_numpy(float)
    ranks = np.arange(1, p.shape[1] + 1)
    cdf = np.cumsum(p, axis=1)
    lo = ranks[np.argmax(cdf >= (1 - prob) / 2 - 1e-12, axis=1)]
    hi = ranks[np.argmax(cdf >= (1 + prob) / 2 - 1e-12, axis=1)]
    return pd.DataFrame(
        {
            "expected rank": (p * ranks).sum(1),
            f"rank {prob:.0%} lower": lo,
            f"rank {prob:.0%} upper": hi,
            "P(rank 1)": p[:, 0],
            "P(top 3)": p[:, :3].sum(1),
        },
        index=df.index,
    )


def _sec_ranks(ctx: _Context, rep: Report, sid: str) -> None:
    from . import _figures as F

    if (one := ctx.single_agent()) is not None:  # first: with one agent no fit would give a ranking
        raise _Skip(f"one agent ({one}): nothing to rank")
    if ctx.var is None:
        raise _Skip(_no_level(ctx))
    from .. import metrics

    rp = metrics.rank_probabilities(ctx.agent_draws())
    rp = rp if isinstance(rp, xr.DataArray) else rp.to_dataset()["estimate"]
    df = rp.transpose("agent", "rank").to_pandas()
    df.index = df.index.astype(str)
    df.columns = [str(c) for c in df.columns]
    exp_rank = (df.to_numpy() * np.arange(1, df.shape[1] + 1)).sum(1)
    df = df.iloc[np.argsort(exp_rank, kind="stable")]
    fig = F.heatmap(
        df,
        title=f"P(agent holds rank) by {_label(ctx.var)}",
        xlabel="rank (1 = best)",
        ylabel="agent",
        cbar_label="posterior probability (0-1)",
    )
    text = (
        f"Posterior probability of each rank by `{ctx.var}` ({_label(ctx.var)}); rows sum to 1, "
        "agents sorted by expected rank. " + _rank_basis(ctx)
    )
    if ctx.mixed:
        text = text[:-1] + " " + _mixed_note(ctx, False).lstrip()
    table = df
    if len(df) > RANKS_AS_TABLE:
        table = _rank_summary(df, ctx.prob)
        text += (
            f" With {len(df)} agents the table summarises each row: the expected rank, the "
            f"equal-tailed {ctx.prob:.0%} interval of the rank (its (1 - {ctx.prob:g}) / 2 and "
            f"(1 + {ctx.prob:g}) / 2 quantiles), and the chance of the first place and of the top "
            "three; the figure shows every probability."
        )
    sep = separated_flags(ctx, table.index, what="rank", number="rank")
    ran = ctx.ran()  # agents no common task links: their order is the model's (audit C, C8)
    sep = _add_flag(sep, rank_link_flags(ran, table.index))
    if (graph := battle_graph(ctx)) is not None:  # agents no battle links: their order is the prior's (audit P)
        said = [never_met_words(graph, "order", the="the "), groups_words(graph, "the order of two agents"),
                unplayed_words(graph, "its rank probabilities are", "their rank probabilities are")]
        text += "".join(f" {t}" for t in said if t)
        sep = _add_flag(sep, _battle_rank_flags(graph, table.index))
    if (sep != "").any():
        table = table.assign(flag=sep)
    rep.section(_TITLES[sid], text, table=table, id=sid)
    caption = "Rank probabilities (posterior)." + _separated_caption(ctx, "rank") + link_caption(ran, "rank order")
    if len(df) > F.LABELS_MAX:
        caption += (
            f" With {len(df)} agents (more than {F.LABELS_MAX}) the axes carry no names, which could not "
            "be read: rows are agents by expected rank, best at the top, columns ranks 1 to "
            f"{df.shape[1]}; each agent's numbers are in the table."
        )
    rep.figure("rank_probabilities", fig, caption)


def _sec_ppc(ctx: _Context, rep: Report, sid: str) -> None:
    from . import _figures as F
    from ._match import battles_fit

    if ctx.fit is None:
        raise _Skip("no fit given")
    if battles_fit(ctx.fit):  # was: a skip, "this report makes no check of the Bradley-Terry fit" (audit P, F3)
        from ._battle_ppc import sec_battle_ppc

        return sec_battle_ppc(ctx, rep, sid)
    if _one_run_per_cell(ctx.fit):  # the per-agent counts say nothing; the task side still can
        return _ppc_one_run(ctx, rep, sid)
    if "posterior_predictive" not in ctx.fit.children:
        dropped = ctx.fit.attrs.get("hierbench_groups_dropped", "")
        raise _Skip(
            "the fit has no posterior_predictive group"
            + (
                f" (left out when it was saved compact: {dropped}; save with groups='all' or "
                "`hierbench fit --keep-predictive` to check it)"
                if dropped
                else ""
            )
        )
    from ._ppc_graded import is_graded
    from ._ppc_graded import sec_ppc_graded

    if is_graded(ctx.fit):
        return sec_ppc_graded(ctx, rep, sid)
    obs = ctx.fit["observed_data"].to_dataset() if "observed_data" in ctx.fit.children else None
    if obs is None or not any("cell" in v.dims for v in obs.data_vars.values()):
        raise _Skip(_no_ppc_reason(ctx))
    from ..bayes import predictive_check

    chk = predictive_check(ctx.fit)
    pc, n_main, left_out = F.ppc_rootogram(ctx.fit, prob=ctx.prob, order=agent_order(ctx))
    if pc is None:
        raise _Skip(
            f"every agent has fewer than {F.PPC_MIN_CELLS} tasks run {n_main} times (the most common number of "
            "runs per cell): too few counts per agent to set against their predictive distribution"
        )
    hi, lo = chk["p_value"], chk["p_value_low"]
    seen = hi.notnull()
    extreme = int(((hi < 0.025) | (lo < 0.025)).where(seen, False).sum())
    text = (
        "For each agent, how many tasks had c successes out of its n runs: observed (black dots) "
        "against the posterior predictive distribution of that number (its mean as a diamond and "
        f"its {ctx.prob:.0%} equal-tailed interval as a bar), on a square-root scale (a rootogram, drawn by arviz-plots), at the "
        f"most common number of runs, n = {n_main}. Observed dots above the bars at 0 and n mean "
        "more all-fail and all-pass tasks than the model predicts (overdispersion). Over every "
        f"(agent, n, c), {extreme} of {int(seen.sum())} observed counts fall in a 2.5% tail of "
        "their predictive distribution (P(predicted >= observed) or P(predicted <= observed) "
        "below 0.025); at most about 5% would by chance (the counts are discrete)."
    )
    if left_out:
        text += (
            f" Agents with fewer than {F.PPC_MIN_CELLS} tasks run {n_main} times have no panel: "
            + ", ".join(map(str, left_out)) + "."
        )
    text += task_spread_text(ctx.fit, ctx.prob) or ""
    rep.section(_TITLES[sid], text, id=sid)
    rep.figure("ppc", pc, f"Posterior predictive rootogram of the success counts out of {n_main} runs.")


#: why the per-agent rootogram says nothing about a fit of one run per cell
ONE_RUN_PPC = ("every agent x task cell holds one run: the predictive check of success counts per cell reduces "
               "to each agent's success rate, which the agent's own effect fits by construction, so it cannot "
               "show misfit here")


def _ppc_one_run(ctx: _Context, rep: Report, sid: str) -> None:
    """A fit of one run per cell: no rootogram, the task side of the check alone (or a skip that says why)."""
    text = task_spread_text(ctx.fit, ctx.prob)
    if text is None:
        raise _Skip(ONE_RUN_PPC + "; the task side needs the fit's posterior_predictive group (`hierbench fit "
                    "--keep-predictive`, or save with groups='all')")
    rep.section(_TITLES[sid], f"Per agent, {ONE_RUN_PPC}; the tasks' side can.{text}", id=sid)


def _one_run_per_cell(fit: xr.DataTree) -> bool:
    """Whether a count model's fit holds one run in every (agent, task) cell (its ``cell_n_runs``)."""
    const = fit["constant_data"].to_dataset() if "constant_data" in fit.children else None
    if const is None or "cell_n_runs" not in const:
        return False
    n = np.asarray(const["cell_n_runs"].values)
    return bool(n.size) and int(n.max()) < 2


def _no_ppc_reason(ctx: _Context) -> str:
    """Why a fit with a posterior_predictive group gets no check: the two the report draws, and what this one holds."""
    family = fit_record(ctx.fit, "hierbench_spec").get("options", {}).get("family")
    what = {
        "fractional": "one score in [0, 1] per run, a continuous distribution with atoms at 0 and 1 "
        "that neither check describes (arviz_plots.plot_ppc_dist(fit) draws its score distribution)",
        "binomial": "one pass or fail per run, not a count per (agent, task) cell",
    }.get(family, "neither a count per `cell` nor a graded `y(obs)`")
    return (
        "the report checks success counts per (agent, task) cell (the count models) and grades per agent "
        f"(graded fits); this {ctx.fit.attrs.get('hierbench_model', 'custom')} fit's outcome is {what}"
    )


def _tasks_scored(ctx: _Context) -> pd.Series | None:
    """How many tasks hold a scored run of each agent (the tasks its bootstrap mean averages).

    With ``errors='exclude'`` a task whose every run errored counts among the data
    summary's tasks run but not its tasks scored: the means see no score of it. Read
    from the data summary (:meth:`_Context.data_summary`), which the Data summary
    section prints.
    """
    s = ctx.data_summary()
    return None if s is None else s["n_tasks_scored"]


def _defined(wide: pd.DataFrame, method: str, why: pd.Series | None = None) -> tuple[pd.DataFrame, pd.Series]:
    """Interval ends a method could not compute shown as "undefined", with the reason.

    ``why``: per agent, the reason where the data say more than "every resample gives the same
    value" (``_undefined_why``; ``""`` elsewhere).
    """
    lo, hi = wide[f"{method} lower"], wide[f"{method} upper"]
    bad = lo.isna() | hi.isna()
    flags = pd.Series("", index=wide.index, dtype=object)
    flags[bad] = f"{method}: interval undefined (every resample gives the same value)"
    if why is not None:
        why = why.reindex(wide.index).fillna("")
        flags[bad & (why != "")] = f"{method}: interval undefined: " + why[bad & (why != "")]
    wide = wide.astype({f"{method} lower": object, f"{method} upper": object})
    wide.loc[bad, [f"{method} lower", f"{method} upper"]] = "undefined"
    return wide, flags


#: what holds where an agent's tasks all sit in one cluster: the task bootstrap, which needs the log
#: read without its clusters (a report with a clustered fit holds the log to them, so the log alone)
ONE_CLUSTER_REMEDY = (
    "hierbench.freq.bootstrap_ci(data, cluster=None), or a report of the log alone read without --cluster, "
    "gives an interval over its tasks, taking them as independent (too narrow if they are alike)"
)


def _undefined_why(ctx: _Context, boot) -> pd.Series:
    """Why an agent's bootstrap interval is undefined, where its tasks say: all in one cluster, or one task.

    A cluster bootstrap of an agent whose scored tasks all sit in one cluster repeats its mean in every
    resample that draws that cluster, whatever its scores (audit C: o3 at 0.680 on django's 100 tasks
    alone was said to be "an agent at 0, or 1, on every task", and pointed to pass_hat_k, whose interval
    over its one cluster was NaN there). The task bootstrap without the clusters gives an interval over
    its tasks; of one task none can be had. ``""`` for the other agents; empty without data.
    """
    data = ctx.data
    if data is None or "score" not in data or "agent" not in data.dims:
        return pd.Series(dtype=object)
    scored = data["score"].notnull()
    scored = scored.any([d for d in scored.dims if d not in ("agent", "task")]).transpose("agent", "task").values
    attrs = getattr(boot, "attrs", {})
    cc = None
    if attrs.get("resample_unit") == "cluster" and "cluster" in data.coords:
        cc = _quiet_cluster_codes(data)
    column = attrs.get("cluster_column") or cluster_label(data)
    out = []
    for row in scored:
        n, one = int(row.sum()), cc is not None and np.unique(cc[0][row]).size == 1
        if n > 1 and one:
            out.append(f"its {n} tasks all sit in one cluster of `{column}` ({cc[1][cc[0][row][0]]}), so every "
                       f"resample that draws that cluster repeats its mean and none measures its spread: {ONE_CLUSTER_REMEDY}")  # fmt: skip
        elif n == 1:
            out.append("one task scored, so every resample that draws it repeats its mean: no resampling "
                       "interval can be had; give it more tasks")  # fmt: skip
        else:
            out.append("")
    return pd.Series(out, index=[str(a) for a in data["agent"].values], dtype=object)


def _few_units_flag(ctx: _Context, boot, name: str, n_tasks: pd.Series | None, index: pd.Index) -> pd.Series:
    """A bootstrap interval over fewer than :data:`FEW_UNITS` resampled units, flagged per agent.

    A resampling interval of a mean is too narrow for few units (its spread is the plug-in
    ``sqrt((n - 1) / n)`` of the SD and it has no t-like tails): the eight wine bottles, say.
    The units are each agent's tasks; where the bootstrap resampled clusters, every agent
    shares them, and ``few_clusters_note`` says once, under the table, whether they are few.
    """
    out = pd.Series("", index=index, dtype=object)
    if getattr(boot, "attrs", {}).get("resample_unit") == "cluster":
        return out
    if n_tasks is not None:
        units, word = n_tasks.reindex(index), "tasks"
    else:
        return out
    few = units < FEW_UNITS
    out[few] = [f"{name}: over {int(u)} {word}, fewer than {FEW_UNITS}: a resampling interval covers less "
                "than its level there" for u in units[few]]  # fmt: skip
    return out


def few_clusters_note(boot) -> str:
    """One sentence where a cluster bootstrap's clusters are few (its own rule, ``attrs["few_clusters"]``), else ""."""
    attrs = getattr(boot, "attrs", {}) if boot is not None else {}
    if attrs.get("resample_unit") != "cluster" or not attrs.get("few_clusters"):
        return ""
    return (f" The cluster bootstrap resamples {attrs['n_clusters']} clusters worth "
            f"{attrs['n_clusters_effective']:.1f} equal ones by their sizes: so few cover less than the "
            "interval's level (hierbench.freq.success_rate's CR2 t interval holds it better).")  # fmt: skip


def _add_flag(flags: pd.Series, more: pd.Series) -> pd.Series:
    """Each row's flags joined with ``more`` by "; " (empty entries add nothing)."""
    more = more.reindex(flags.index).fillna("")
    return flags.where(more == "", flags.where(flags == "", flags + "; ") + more)


def separated_agents(fit: xr.DataTree | None) -> list[str]:
    """The agents whose abilities the fit's binary data separate (its design's ``separated_agents``).

    An agent that failed (or passed) every run: its posterior is a plateau held by the prior, so
    its Bayes ability, rank and P(a > b) are the prior's, not the data's. Read from the fit's
    structure record, which a saved fit keeps (``hierbench_structure``).
    """
    if fit is None:
        return []
    return [str(a) for a in fit_record(fit, "hierbench_structure").get("design", {}).get("separated_agents") or []]


#: why a separated agent's Bayes numbers are the prior's (the flags' and the captions' words)
_SEPARATED_WHY = (
    "separated by the data (every run failed, or every run succeeded), so {whose} {number} is set by "
    "the prior, not by the data"
)
#: a separated agent's Bayes number, flagged where it is read (in the words of the fit's own note)
SEPARATED_FLAG = "{what}: " + _SEPARATED_WHY.replace("{whose}", "its") + " (the fit's note, under Warnings)"


def separated_flags(ctx: _Context, index: pd.Index, what: str = "Bayes", number: str = "estimate and interval"
                    ) -> pd.Series:  # fmt: skip
    """:data:`SEPARATED_FLAG` on the rows of the agents the fit's data separate ("" elsewhere); notes it once.

    ``index``: agents (or the first level, agent, of a MultiIndex). The fit's own note on them
    goes into the report's warnings (:func:`note_separation`).
    """
    sep = set(separated_agents(ctx.fit))
    if sep:
        note_separation(ctx)
    flag = SEPARATED_FLAG.format(what=what, number=number)
    agents = [str(i[0] if isinstance(i, tuple) else i) for i in index]
    return pd.Series([flag if a in sep else "" for a in agents], index=index, dtype=object)


def note_separation(ctx: _Context) -> None:
    """The fit's note on its separated agents, in the report's warnings (said once: the list is deduplicated)."""
    sep = separated_agents(ctx.fit)
    notes = fit_record(ctx.fit, "hierbench_structure").get("notes", []) if sep else []
    said = [n for n in notes if any(f"agent[{a}]" in n for a in sep)]
    ctx.warnings += [f"the fit's note: {n}" for n in said] or [
        f"the fit's data separate {', '.join(sep)}: their Bayes estimates are set by the prior, not by the data"
    ] * bool(sep)


def data_grades(data: xr.Dataset | None) -> list[str] | None:
    """The names of a graded log's grades (its labels, or the numbers of its scale), None for plain scores."""
    from ..data import grade_names
    from ..data import labels_attr
    from ..data import levels_attr

    levels = levels_attr(data.attrs) if data is not None else None
    return grade_names(levels, labels_attr(data.attrs)) if levels else None


def scored_words(value: float, grades: list[str] | None) -> str:
    """``scored 0``; of a graded log, the grade at that end of the scale: ``graded no (score 0)``."""
    if grades is None or value not in (0.0, 1.0):
        return f"scored {value:g}"
    return f"graded {grades[0] if value == 0.0 else grades[-1]} (score {value:g})"


def graded_flag(flag: str, grades: list[str] | None) -> str:
    """A bootstrap ``ci_flag`` in the log's words: ``every task scored 0`` of a graded log says its grade."""
    head = "every task scored "
    if grades is None or not flag.startswith(head):
        return flag
    try:
        return f"every task {scored_words(float(flag[len(head):]), grades)}"
    except ValueError:
        return flag


def _few_flag(
    table: pd.DataFrame, method: str, index: pd.Index, bounds: pd.Series, binary: bool = True,
    grades: list[str] | None = None,
) -> pd.Series:
    """A bootstrap's ``ci_flag`` (a mean few tasks carry) as a report flag naming what holds instead.

    ``bounds`` (:func:`pass1_bounds`) puts the bound that holds beside the advice, so
    the reader sees a valid interval where the resampling one is undefined, zero-width
    or short (an agent that failed every task among them). ``grades``: a graded log's
    grade names (:func:`data_grades`), to say an agent at an end of the scale in them.
    """
    out = pd.Series("", index=index, dtype=object)
    if "ci_flag" not in table:
        return out
    few = table["ci_flag"].copy()
    few.index = few.index.astype(str)
    few = few.reindex(index).fillna("").astype(str).map(lambda f: graded_flag(f, grades))
    hit = few != ""
    said = bounds.reindex(index).fillna("").astype(str)
    said = said.where(said == "", ": " + said)
    advice = few.map(lambda f: flag_advice(f, binary))  # pass_hat_k's bound is for 0/1 scores only
    out[hit] = method + ": " + few[hit] + " (" + advice[hit] + said[hit] + ")"
    return out


def pass1_bounds(data: xr.Dataset | None, prob: float) -> pd.Series:
    """Each agent's :func:`hierbench.freq.pass_hat_k` ``(data, 1)`` interval where it is the bound.

    Text ``"[lo, hi] at 95% over n tasks"`` per agent (labels as text; ``"... over n
    tasks in g clusters"`` where the tasks have clusters, over which the bound is taken)
    where that interval is the distribution-free bound (its ``ci_flag`` names a
    bound: every task scored 0 or 1, every task has the same value, or few tasks carry the
    mean), ``""`` for the
    other agents; empty without data or an ``agent`` dim, or for scores
    that are not 0/1 (pass^k is defined for binary outcomes only).
    """
    from .. import freq
    from .._base import PartialCreditError
    from .._base import cluster_codes

    if data is None or "agent" not in data.dims:
        return pd.Series(dtype=object)
    try:
        res = freq.pass_hat_k(data, 1, prob=prob)
    except PartialCreditError:
        return pd.Series(dtype=object)
    lo, hi = (res.ci.sel(ci_bound=b).to_series() for b in ("lower", "upper"))
    flag, n = res.ci_flag.to_series().astype(str), res.n_tasks.to_series()
    where = [""] * len(n)
    cc = cluster_codes(data)
    if cc is not None and len(cc[1]) < data.sizes["task"]:  # the bound is over the clusters: said
        used = res.per_task.notnull().transpose("agent", "task").values
        where = [f" in {np.unique(cc[0][u]).size} clusters" for u in used]
    text = pd.Series(
        [f"[{a:.3f}, {b:.3f}] at {prob:.0%} over {int(m)} tasks{w}" for a, b, m, w in zip(lo, hi, n, where, strict=True)],
        index=lo.index.astype(str),
        dtype=object,
    )
    flag.index = text.index
    return text.where(flag.str.contains("bound"), "")


def _bounds(ctx: _Context) -> pd.Series:
    """:func:`pass1_bounds` of the report's data at its level, computed once."""
    if "pass1_bounds" not in ctx.cache:
        ctx.cache["pass1_bounds"] = pass1_bounds(ctx.data, ctx.prob)
    return ctx.cache["pass1_bounds"]


def _disagree(wide: pd.DataFrame, kind: str) -> pd.Series:
    """One method's estimate outside the other's interval, or intervals apart; NA where either interval is not defined."""
    cols = [f"{m} {b}" for m in (f"bootstrap {kind}", "Bayes ETI") for b in ("estimate", "lower", "upper")]
    be, bl, bh, ye, yl, yh = (pd.to_numeric(wide[c], errors="coerce") for c in cols)
    apart = (yl > bh) | (bl > yh) | (ye < bl) | (ye > bh) | (be < yl) | (be > yh)
    return judged(apart, bl.notna() & bh.notna() & yl.notna() & yh.notna())


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


def _clustered(ctx: _Context) -> bool:
    """Whether the fit's new task comes from a new task cluster (a crossed fit with clusters)."""
    return ctx.fit is not None and clustered_crossed(ctx.fit)


def _abilities_shift(ctx: _Context, bay: pd.DataFrame, boot: pd.DataFrame) -> str:
    """Agent abilities' own word on Bayes minus bootstrap (audit B s71): the shift, its split, which to quote.

    The side-by-side section says the same with the cluster weighting; here the reader meets the two
    columns first. ``bay`` and ``boot``: the two tables of estimates (agents as rows).
    """
    b = pd.to_numeric(boot["estimate"], errors="coerce").set_axis(boot.index.astype(str))
    diff = pd.to_numeric(bay["estimate"], errors="coerce").set_axis(bay.index.astype(str)).reindex(b.index) - b
    these = None
    if ctx.post is not None and "mean_observed" in ctx.post:
        obs = ctx.post["mean_observed"].mean(("chain", "draw")).to_series()
        these = obs.set_axis(obs.index.astype(str)).reindex(b.index) - b
    return shared_shift(diff, True, these=these, clustered=_clustered(ctx), model=_model(ctx))


def _model(ctx: _Context) -> str | None:
    """The fit's ``hierbench_model`` (None without a fit): the key of its population's words."""
    return None if ctx.fit is None else ctx.fit.attrs.get("hierbench_model")


def shared_shift(
    diff: pd.Series, population: bool, clusters: str = "", these: pd.Series | None = None,
    clustered: bool | None = None, model: str | None = "crossed",
) -> str:
    """Bayes minus bootstrap over agents, said once; a shift most agents share is named as the model's.

    "Most": at least 3 in 4 agents on one side, and a two-sided sign test of the sides below 0.05.

    ``clusters``: the sentence on how the two weigh task clusters (:func:`cluster_weights`), when the
    fit has them. It is said whatever the number of agents, with which way weighing the clusters
    alike moves each agent's mean (its ``means``). A gap is never called a difference of target from
    a comparison of medians (audit B s71: on SWE-bench the medians agreed, -0.057 and -0.059, while a
    fit without clusters still lay 0.033 low and the two shifts tracked each other with Spearman 0.18).

    ``these``: the fit's own posterior mean over these tasks (``mean_observed``) minus the bootstrap's
    mean, per agent: :func:`shift_split` splits ``diff`` at it into the model's assumption about unseen
    tasks and its pooling. ``clustered``: whether the model's new task comes from a new cluster
    (default: ``clusters`` is said). ``model``: the fit's ``hierbench_model``, whose population of
    task rates the sentences name (:func:`population_words`; the default is the demo's crossed fit).
    """
    clustered = bool(clusters) if clustered is None else clustered
    d = pd.to_numeric(diff, errors="coerce").dropna()
    way = _weighting_way(d, getattr(clusters, "means", None), model) if clusters else None
    text, shared = "", False
    if len(d) >= 4:
        below, med = int((d < 0).sum()), float(d.median())
        text = f" Bayes minus bootstrap: median {med:+.3f}, Bayes lower for {below} of {len(d)} agents."
        shared = most_share(below, len(d))
    split = shift_split(d, these, clustered, model) if population else ""
    weigh = clusters + (way[1] if way else "")
    if not (population and shared):
        return text + split + weigh
    if way is not None and not way[0]:  # the weighting moves the mean the other way, or not at all
        return text + (
            " A shift most agents share is not chance between two estimates of one quantity: it comes from the "
            "model, not from the bootstrap." + split + weigh + quote(model) + _OBSERVED_TARGET
        )
    paren = ", ".join(w for w in (population_words(model).shape, "clusters weighing alike" if clustered else "") if w)
    return text + (
        " A shift most agents share is not chance between two estimates of one quantity: it is "
        f"where the model's task population{f' ({paren})' if paren else ''} differs from the tasks run, which the "
        "bootstrap does not assume." + split + weigh + quote(model) + _OBSERVED_TARGET
    )


def quote(model: str | None) -> str:
    """The model-free answer, and which number to quote where the two part by a shared shift (audit B s71, finding 1).

    ``model``: the fit's ``hierbench_model``, whose population the Bayes number rests on.
    """
    return (" The task bootstrap's interval of the per-task mean is the model-free answer for a new task like "
            "these; where the two part by a shift most agents share, it is the one to quote: the Bayes number "
            f"rests on the model's {population_words(model).short}.")  # fmt: skip


def shift_split(d: pd.Series, these: pd.Series | None, clustered: bool, model: str | None = "crossed") -> str:
    """Bayes minus bootstrap ``d`` split at the fit's own mean over these tasks, per agent, with counts.

    ``these``: the fit's posterior mean over these tasks (``mean_observed``: each task's own effect,
    its cluster's where the model has clusters) minus the bootstrap's mean, per agent. New task minus
    these tasks (``d - these``) is the model's assumption about unseen tasks (its population of task
    rates, :func:`population_words` of ``model``, the fit's ``hierbench_model``; with clusters, a new
    cluster, every cluster weighing alike); these tasks minus the per-task mean (``these``) is its
    pooling of each agent's tasks toward that population, and for an agent scored on fewer tasks its
    prediction of the tasks never run. ``""`` without ``these``.
    """
    if these is None:
        return ""
    g = pd.to_numeric(these, errors="coerce").set_axis(these.index.astype(str)).reindex(d.index.astype(str)).dropna()
    if g.empty:
        return ""
    dd = d.set_axis(d.index.astype(str)).reindex(g.index)
    pop = dd - g
    first = (f"the model's assumption about unseen tasks: {population_words(model).noun}"
             + (", a new cluster, every cluster weighing alike" if clustered else ""))  # fmt: skip
    second = "its pooling of each agent's tasks, and its guess at any task the agent never ran"
    head = " Split at the fit's own mean over these tasks (`mean_observed`)"
    if len(g) <= 3:
        each = "; ".join(f"{a}: {_signed(pop[a])} and {_signed(g[a])}" for a in g.index)
        return head + f", into new task minus these tasks ({first}) and these tasks minus the per-task mean ({second}): {each}."
    n, larger = len(g), int((pop.abs() > g.abs()).sum())
    return head + (
        f": new task minus these tasks ({first}) has median {_signed(pop.median())}, of Bayes minus bootstrap's sign for "
        f"{int((np.sign(pop) == np.sign(dd)).sum())} of {n} agents; these tasks minus the per-task mean ({second}) "
        f"has median {_signed(g.median())}, within 0.01 of zero for {int((g.abs() <= 0.01).sum())} of {n}. The first "
        f"is the larger part for {larger} of {n} agents."
    )


def _signed(x: float) -> str:
    """``x`` to 3 decimals with its sign, and no ``-0.000``."""
    return f"{round(float(x), 3) + 0.0:+.3f}"


#: where the model's counterpart of the bootstrap's point estimate is, said after a shift put down to the model
_OBSERVED_TARGET = " The model's mean over the tasks run, hierbench.metrics.pass_hat_k(fit, k=1), has the bootstrap's point target."


def _weighting_way(d: pd.Series, means: pd.DataFrame | None, model: str | None = "crossed") -> tuple[bool, str] | None:
    """Whether weighing the clusters alike moves the agents' means the way Bayes minus bootstrap ``d`` goes, said.

    ``means``: :func:`cluster_means`. The way is the sign of the median over the agents of
    per cluster minus per task beside that of ``d``'s median; each agent's pair is named where
    there are 3 or fewer. None where no agent of ``d`` has both means.

    The same way in the medians is not a difference of target (audit B s71: SWE-bench's -0.057 beside
    -0.059, while agent by agent the two shifts tracked each other with Spearman 0.18, and Minimax M2's
    weighting went the other way). With 4 or more agents the sentence says how far the weighting
    accounts for the gap agent by agent: the Spearman correlation of the two shifts, and for how many
    agents Bayes lies nearer the per-cluster mean than the per-task mean. It calls the gap one of the
    cluster weighting's target only where both say so (Spearman at least 0.5, and nearer for at least
    3 in 4 agents): in the population the two are one target unless the clusters' means vary with
    their sizes, which one sample of clusters shows only so far. ``model``: the fit's
    ``hierbench_model``, whose population of task rates the other cause names.
    """
    if means is None:
        return None
    w = (means["per cluster"] - means["per task"]).reindex(d.index.astype(str)).dropna()
    if w.empty:
        return None
    dd = d.set_axis(d.index.astype(str)).reindex(w.index)
    if len(w) <= 3:
        said = "; ".join(f"{a}: {w[a]:+.3f} beside {dd[a]:+.3f}" for a in w.index)
    else:
        same = int((np.sign(w) == np.sign(dd)).sum())
        said = f"median {w.median():+.3f} beside {dd.median():+.3f}, the same sign for {same} of {len(w)} agents"
    said = f"per cluster minus per task, beside Bayes minus bootstrap: {said}"
    if abs(w.median()) < 5e-4:
        return False, (f" Weighing the clusters alike hardly moves the data's mean here ({said}), so it does not "
                       f"explain a difference: {_model_cause(model)} do.")  # fmt: skip
    if np.sign(w.median()) != np.sign(dd.median()):
        return False, (f" Weighing the clusters alike would move the data's mean the other way ({said}), so it does "
                       f"not explain the difference: {_model_cause(model)} do.")  # fmt: skip
    text = (f" In this sample, weighing these clusters alike moves the data's mean the way Bayes differs from the "
            f"bootstrap ({said}).")  # fmt: skip
    if len(w) <= 3:
        return True, text + (" With so few agents that does not show that the two differ in target: in the "
                             "population they are one target unless the clusters' means vary with their sizes.")  # fmt: skip
    rho = float(w.corr(dd, method="spearman"))  # NaN where either shift is the same for every agent
    nearer = int(((dd - w).abs() < dd.abs()).sum())  # Bayes nearer the per-cluster mean than the per-task mean
    track = (f" Agent by agent the weighting's shift and Bayes minus bootstrap have Spearman correlation {rho:.2f}"
             if np.isfinite(rho) else " Agent by agent one of the two shifts is the same for every agent (no Spearman "
             "correlation)") + (f", and Bayes lies nearer the per-cluster mean than the per-task mean for {nearer} of "
                                f"{len(w)} agents")  # fmt: skip
    if np.isfinite(rho) and rho >= 0.5 and nearer >= 0.75 * len(w):
        return True, text + track + (": the weighting accounts for the gap agent by agent, so on these clusters the two "
                                     "columns differ by how they weigh them, a difference of target (in the "
                                     "population they are one target unless the clusters' means vary with their "
                                     "sizes).")  # fmt: skip
    return True, text + track + (": the weighting does not account for the gap agent by agent, so a shared "
                                 "median does not make the two columns differ in target.")  # fmt: skip


def _model_cause(model: str | None) -> str:
    """What else moves the model's new-task mean off the tasks run's (said where the clusters' weighting does not)."""
    shape = population_words(model).shape
    return (f"the model's task population{f' ({shape})' if shape else ''}, where it differs from the tasks run, "
            "and its pooling of the tasks toward it")  # fmt: skip


class ClusterWeights(str):
    """:func:`cluster_weights`' sentence, with the per-agent means behind it (``means``, :func:`cluster_means`).

    A string, so that a caller passes it on to :func:`shared_shift` as it is (the demo does), and
    :func:`shared_shift` reads which way the weighting moves each agent's mean from ``means``.
    """

    means: pd.DataFrame | None = None


def _quiet_cluster_codes(data: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """``cluster_codes(data)`` without its warning on tasks without a label: warned where the log was read."""
    import warnings

    from .._base import cluster_codes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cluster_codes(data)


def _pooled_cluster_means(data: xr.Dataset) -> tuple[float, float, int]:
    """Over all agents: the mean score per task, per cluster (clusters weighing alike) and the number of clusters.

    Each the average over the agents of their own means (:func:`cluster_means`), so that the per-task
    one is the average of the data summary's per-agent means (audit U s71: pooling every agent's runs
    within a task first gave the demo's 0.438 beside the summary's 0.436).
    """
    means, k = _agent_cluster_means(data)
    return float(means["per task"].mean()), float(means["per cluster"].mean()), k


def _agent_cluster_means(data: xr.Dataset) -> tuple[pd.DataFrame, int]:
    """:func:`cluster_means` of the data alone, and the number of clusters."""
    score = data["score"]
    cell = score.mean([d for d in score.dims if d not in ("agent", "task")]).transpose("agent", "task")
    per_task = pd.DataFrame(cell.values, index=[str(a) for a in data["agent"].values])
    codes, labels = _quiet_cluster_codes(data)
    by_cluster = per_task.T.groupby(np.asarray(labels, dtype=object)[codes]).mean().T  # NaN: no task scored there
    means = pd.DataFrame({"per task": per_task.mean(axis=1), "per cluster": by_cluster.mean(axis=1)})
    return means, by_cluster.shape[1]


def cluster_means(fit: xr.DataTree | None, data: xr.Dataset | None) -> pd.DataFrame | None:
    """Each agent's mean score with every task weighing alike, and with every task cluster weighing alike.

    Columns ``per task`` (the bootstrap's point estimate: the mean over the agent's scored tasks
    of its mean score there) and ``per cluster`` (the mean over the clusters it was scored in of its
    mean there: the weighting of a crossed fit's new task from a new cluster); rows the agents
    (labels as text). A task without a cluster label is its own cluster, as the fit takes it.
    None unless ``fit`` is a crossed fit with clusters and ``data`` has a ``cluster`` coord.
    """
    if fit is None or data is None or "cluster" not in data.coords or "score" not in data or not clustered_crossed(fit):
        return None
    return _agent_cluster_means(data)[0]


def cluster_weights(fit: xr.DataTree | None, data: xr.Dataset | None) -> str:
    """How the model's new task and the tasks run weigh the task clusters, with this log's two means.

    ``""`` unless ``fit`` is a crossed fit with clusters and ``data`` has a ``cluster`` coord (the
    report's side-by-side section and the demo's section 4 say it under the same shift). The
    sentence is a :class:`ClusterWeights`, whose ``means`` (:func:`cluster_means`) tell
    :func:`shared_shift` which way the weighting moves each agent's mean.

    The crossed model's new task comes from a new cluster (``sd_cluster`` in its spread), so every
    cluster weighs alike; the tasks run, and the cluster bootstrap's mean over them, weigh each by its
    tasks. SWE-bench by repository: 0.523 over the 500 tasks, 0.472 over the 12 repositories' means
    (django, 231 tasks, is easier than most). A median shift of the same sign is not a difference of
    target: :func:`shared_shift` says how far the weighting accounts for the gap agent by agent.
    """
    means = cluster_means(fit, data)
    if means is None:
        return ""
    per_task, per_cluster, k = _pooled_cluster_means(data)
    out = ClusterWeights(
        f" With task clusters the model's new task comes from a new cluster, so each of the {k} "
        "clusters weighs alike, where the tasks run (and the bootstrap's mean) weigh each cluster by its number "
        f"of tasks; over all agents the mean score is {per_task:.3f} per task and {per_cluster:.3f} per cluster."
    )
    out.means = means
    return out


def _pairs_entry(ctx: _Context) -> str:
    """The checklist's paired-deltas entry: what the pairwise section computed, in its own sentence."""
    if of_battles(ctx):
        return "none: battles carry no per-task scores to pair"
    if (one := ctx.single_agent()) is not None:
        return f"none: one agent ({one}), no pair to compare"
    cmp = ctx.cache.get("compare")
    if cmp is not None:
        from ._pairs import pair_sentence

        return f"yes: {pair_sentence(cmp, 1.0 - ctx.prob)} See the pairwise section."
    if ctx.want_freq("compare"):
        return "not computed: the pairwise section says why"
    return "not computed (no data)"


def _fit_seed(fit: xr.DataTree | None) -> str:
    """The fit's seeds as the checklist states them: the rng it was run with, then the sampler's seed drawn from it."""
    if fit is None or "seed" not in fit.attrs:
        return ""
    if "rng_seed" in fit.attrs:
        return f"; fit rng={fit.attrs['rng_seed']} (sampler seed {fit.attrs['seed']}, drawn from it)"
    return f"; fit sampler seed {fit.attrs['seed']} (drawn from the fit's rng, which was not recorded)"


def _clustering_entry(ctx: _Context) -> str:
    """The checklist's clustering row: the data's clusters, then what each result shown took as its unit.

    Read from the results the sections used (``ctx.cache``: a result given in ``freq`` may have been
    computed without the clusters the log has), never from the data alone (was: "the bootstrap resamples
    whole clusters" beside a given METR bootstrap that resampled tasks).
    """
    if "cluster" in ctx.data.coords:
        n_cl = len(set(map(str, ctx.data["cluster"].values)))
        said = [f"tasks in {n_cl} clusters (`{cluster_label(ctx.data)}`)"]
    else:
        said = ["no cluster labels"]
    if (boot := ctx.cache.get("bootstrap")) is not None:
        a = getattr(boot, "attrs", {})
        said.append(f"the bootstrap resamples whole clusters ({a.get('n_clusters', '?')} of `{a.get('cluster_column')}`)"
                    if a.get("resample_unit") == "cluster" else "the bootstrap resamples tasks one by one")  # fmt: skip
    if (cmp := ctx.cache.get("compare")) is not None:
        a = cmp.to_dataset().attrs
        said.append(f"the paired tests take clusters as their unit ({a.get('n_units_total', '?')} of "
                    f"`{a.get('cluster_column') or a.get('cluster_coord') or 'cluster'}`)" if a.get("unit") == "clusters"
                    else f"the paired tests take tasks as their unit ({a.get('n_units_total', '?')} tasks)")  # fmt: skip
    if ctx.cache.get("passk_interval") and "cluster" in ctx.data.coords:
        said.append("pass^k's unbiased intervals (computed here from the data) take the clusters as their unit")
    return "; ".join(said)


def _seed_entry(ctx: _Context) -> str:
    """The checklist's seed row: the report's rng for what it computed, and each result given in ``freq`` apart.

    A result given in ``freq`` was drawn with its own call's seed, which the report knows only where the
    result records it (``attrs``: ``rng_seed``, ``seed`` or ``rng``); else it says "seed not recorded"
    (was: "rng=0" over a bootstrap given with rng=5, which rng=0 does not reproduce).
    """
    seed = "rng=None (fresh entropy: not reproducible)" if ctx.rng is None else f"rng={ctx.rng!r}"
    given = [k for k, how in ctx.cache.get("freq_source", {}).items() if how == "given"]
    text = f"report's random parts (resamples, Monte Carlo p-values) {seed}"
    if not given:
        return text
    return (text + " for the results it computed; not for those given in `freq`: "
            + ", ".join(f"{k} ({_recorded_seed(ctx.cache[k])})" for k in given))  # fmt: skip


def _recorded_seed(res) -> str:
    """The seed a given result records (its attrs, its estimate's or its dataset's), in words; "given: seed not recorded" if none."""
    attrs = dict(getattr(res, "attrs", None) or {})
    est = getattr(res, "estimate", None)
    attrs |= {k: v for k, v in getattr(est, "attrs", {}).items() if k not in attrs}
    if not attrs and hasattr(res, "to_dataset"):
        attrs = dict(res.to_dataset().attrs)
    for key in ("rng_seed", "seed", "rng"):
        if key in attrs:
            return f"given: {key}={attrs[key]!r}"
    return "given: seed not recorded"


def interval_kinds(ctx: _Context) -> list[str]:
    """Every kind of interval the report shows, each with its level and kind, read from the results it used.

    Person fit's slope (where the Data summary flags an agent), the agent bootstrap, the pairwise
    intervals and their simultaneous max-T ones (where computed), pass^k's, the time horizons'
    (METR's method), the variance components', the battles' ML abilities' and the fit's: what the sections computed
    (``ctx.cache``), never recomputed here, so a section not shown adds nothing.
    """
    from .._base import interval_label

    def said(what: str, ci, more: str = "") -> str:
        detail = str(ci.attrs.get("ci_detail", "")).split(";")[0]
        return f"{what}: {interval_label(ci)}" + (f" ({detail})" if detail else "") + more

    out = []
    if (pf := ctx.cache.get("person_fit")) is not None and bool(pf.flagged.any()):  # the Data summary's flag shows it
        detail = str(pf.ci.attrs.get("ci_detail", "")).split(";")[0]  # in the flag's own words ("95% Wald")
        out.append(f"person fit slope (Data summary flag): {pf._ci_words()}" + (f" ({detail})" if detail else ""))
    if (boot := ctx.cache.get("bootstrap")) is not None:
        n = getattr(boot, "distribution", None)
        more = f", {n.sizes['resample']} resamples" if n is not None and "resample" in n.sizes else ""
        out.append(said("agent means", boot.ci, "" if "resamples" in boot.ci.attrs.get("ci_detail", "") else more))
    if (cmp := ctx.cache.get("compare")) is not None:
        ds = cmp.to_dataset()
        out += [said("pairwise differences", ds["ci"])] if "ci" in ds else []
        # only where computed: under Holm or BH it is all NaN, "not computed" (the pair table has no such columns)
        if "ci_simultaneous" in ds and bool(ds["ci_simultaneous"].notnull().any()):
            out.append(f"pairwise, simultaneous over the family: {interval_label(ds['ci_simultaneous'])}")
    if words := ctx.cache.get("passk_interval"):
        out.append(f"pass^k (unbiased): {words}")
    if (h := ctx.cache.get("horizon")) is not None:  # METR's method in the Time horizons section
        out.append(said("time horizons", h.ci))
    if (g := ctx.cache.get("variance")) is not None and not isinstance(g, Exception):
        # ``g.ci``'s level, kind and detail from an interval of no component: ``g.ci`` (and the ``hasattr(g, "ci")``
        # that stood here, which evaluates it) profiled every component for those attrs (METR's six: 0.35 s)
        out.append(said("variance components", g_interval(g, float(g.prob), [])))
    if (bt := ctx.cache.get("battle_ml")) is not None and not isinstance(bt[0], Exception):  # battles' ML section
        out.append(said("Bradley-Terry abilities by ML", bt[0].ci))
    if ctx.fit is not None:
        out.append(f"Bayes: {ctx.prob:.0%} equal-tailed posterior interval (eti)")
    return out


def _sec_checklist(ctx: _Context, rep: Report, sid: str) -> None:
    rows = []
    d = None
    if ctx.data is not None:
        d = ctx.data_report()
        rows += [
            ("n (agents x tasks)", f"{counted(d['n_agents'], 'agent')} x {counted(d['n_tasks'], 'task')}"),
            (
                "runs",
                f"{d['n_runs_total']} runs; per cell min {d['runs_per_cell']['min']}, "
                f"median {d['runs_per_cell']['median']:g}, max {d['runs_per_cell']['max']}",
            ),
            ("missing cells", f"{d['n_missing_cells']} of {d['n_cells']}"),
            (
                "errors",
                f"{d['n_error_runs']} infrastructure-error runs, policy errors={d['errors']!r}",
            ),
        ]
        rows.append(("clustering", _clustering_entry(ctx)))
    if "battles" in ctx.cache:
        b = ctx.cache["battles"]
        apart = f" in {b['groups']} groups that never meet" if b["groups"] > 1 else ""
        apart = (f" ({b['unplayed']} in no battle" + (f", the others{apart})" if apart else ")")
                 if b["unplayed"] else apart)  # fmt: skip
        rows.append(("n (agents, battles)", f"{counted(b['agents'], 'agent')}{apart}, {b['battles']:,} battles, "
                     f"{b['ties']:,} ties ({b['ties'] / max(b['battles'], 1):.1%})"))  # fmt: skip
    kinds = interval_kinds(ctx)
    rows.append(("interval level and kind", "; ".join(kinds) if kinds else f"{ctx.prob:.0%}"))
    rows.append(("paired deltas", _pairs_entry(ctx)))
    if sources := ctx.freq_sources():  # build(freq={...}): which results were given, which computed here
        rows.append(("frequentist results", sources))
    if ctx.fit is not None:
        a = ctx.fit.attrs
        rows.append(
            ("model", f"{a.get('hierbench_model', 'custom')}; spec {a.get('hierbench_spec', '')}")
        )
        rows.append(("sampler", f"{a.get('sampler', '?')} {a.get('sampler_settings', '')}"))
        conv = a.get("diag_converged")
        rows.append(
            (
                "converged",
                "yes"
                if conv is not None and int(conv)
                else f"NO: {a.get('diag_failures', '')}"
                if conv is not None
                else "not checked",
            )
        )
        rows.append(("data hash (fit)", str(a.get("hierbench_data_hash", ""))))
    rows.append(("seed", _seed_entry(ctx) + _fit_seed(ctx.fit)))
    rows.append(("versions", ", ".join(f"{k} {v}" for k, v in _versions(ctx.fit).items())))
    table = pd.DataFrame(rows, columns=["item", "value"]).set_index("item")
    rep.section(
        _TITLES[sid],
        "What a reader needs to judge and reproduce these numbers.",
        table=table,
        id=sid,
    )


def _versions(fit: xr.DataTree | None) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version

    out = {"python": platform.python_version()}
    for pkg in (
        "hierbench",
        "numpy",
        "scipy",
        "xarray",
        "pandas",
        "arviz-base",
        "arviz-stats",
        "arviz-plots",
    ):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:  # pragma: no cover
            out[pkg] = "not installed"
    if fit is not None:
        post_attrs = fit["posterior"].attrs if "posterior" in fit.children else {}
        lib = post_attrs.get("inference_library")
        if lib:
            out[f"{lib} (fit)"] = str(post_attrs.get("inference_library_version", "?"))
        if "hierbench_version" in fit.attrs:
            out["hierbench (fit)"] = str(fit.attrs["hierbench_version"])
    return out
