"""The data summary section: counts, runs per cell, missing cells and error runs, the agents' order, and the data's flags (coverage, unshared pairs, annotations, the reader's notes, person fit, prior-held decisions of the fit)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .._base import counted
from .._base import fit_record
from ._battles import _sec_battles
from ._battles import of_battles
from ._context import _TITLES
from ._context import _Context
from ._context import _Skip
from ._context import file_name
from ._order import in_report_order
from ._order import order_words
from ._report import Report


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
    from ._flags import annotation_marks
    from ._flags import source_flagged

    out = []
    said = source_flagged(data)
    for name, marks in annotation_marks(s, data):
        most = [f"{a} ({k} of {r} runs)" for a, k, r in marks]
        # agents the loader flags too are named once, by the loader's line below (SWE-bench: said twice)
        if not (said and {a for a, _, _ in marks} <= set(said)):
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



def _kind_words(d: dict) -> str:
    """The scores' kind as the data summary says it: ``graded`` for ordinal grades (wine's 1-5: "mixed")."""
    return "graded" if d.get("score_levels") and d["score_kind"] == "mixed" else str(d["score_kind"])


def _graded_text(d: dict) -> str:
    """How the scores were read from ordinal grades (numbers or labels), for the data summary; empty otherwise."""
    if not d.get("score_levels"):
        return ""
    from ..data import grade_reading

    return f" ({grade_reading(d['score_levels'], d.get('score_labels'))})"
