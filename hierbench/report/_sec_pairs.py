"""The pairwise section: posterior P(i > j) beside the paired tests (a matrix for many agents)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ._battles import battle_graph
from ._battles import groups_words
from ._battles import never_met_words
from ._battles import unplayed_words
from ._context import _TITLES
from ._context import _Context
from ._context import _label
from ._context import _Skip
from ._figures import LABELS_MAX
from ._flags import SEPARATED_FLAG
from ._flags import flagged_caption
from ._flags import flagged_pair_flags
from ._flags import note_separation
from ._flags import separated_agents
from ._notes import _mixed_note
from ._notes import _no_level
from ._notes import _separated_caption
from ._order import agent_order
from ._order import order_words
from ._pair_rows import PAIR_ROWS
from ._pair_rows import PAIRS_CSV
from ._pair_rows import link_caption
from ._report import Report


def _compare(ctx: _Context):
    """compare_agents at its own resampling defaults (the CLI's `compare` makes the same call), or ``freq["compare"]``.

    Kept in ``ctx.cache["compare"]``: the checklist quotes it.
    """

    def compute():
        from .. import freq

        ctx.say("paired tests of every pair")
        return freq.compare_agents(ctx.data, prob=ctx.prob, rng=ctx.rng)

    fresh = "compare" not in ctx.cache
    cmp = ctx.freq_result("compare", compute)
    if fresh and cmp is not None and ctx.given("compare"):
        _warn_given(cmp, 1.0 - ctx.prob)
    return cmp


def _warn_given(cmp, alpha: float) -> None:
    """Raise again, for the report's list of warnings, what the given result's floors leave unable to call.

    ``compare_agents`` warned when the result was made, before the report; a computed one warns
    here. SWE-bench's bootstrap with Holm, given in ``freq``: the list held no word of its floor (audit R1).
    """
    from .._base import warn_user
    from ..freq import PValueResolutionWarning
    from ._pairs import resolution_words

    if note := resolution_words(cmp, alpha):
        warn_user(note, PValueResolutionWarning)


def _bayes_heatmap(ctx: _Context):
    """P(row > column) from the fit, and its heatmap (None, None without an agent variable)."""
    from . import _figures as F

    if ctx.var is None:
        return None, None
    from .. import metrics

    draws = ctx.agent_draws()
    ps = metrics.prob_superiority(draws)
    ps = ps if isinstance(ps, xr.DataArray) else ps.to_dataset()["estimate"]
    m = ps.transpose("agent", "opponent").to_pandas().astype(float)
    m.index = m.index.astype(str)
    m.columns = [str(c) for c in m.columns]
    order = [a for a in agent_order(ctx) or [] if a in m.index]  # the report's one order (was: posterior mean)
    order += [a for a in m.index if a not in order]
    m = m.loc[order, order]
    m = m.where(~np.eye(len(m), dtype=bool))
    fig = F.heatmap(
        m,
        title=f"P(row agent > column agent) by {_label(ctx.var)}",
        xlabel="opponent",
        ylabel="agent",
        cbar_label="posterior probability (0-1)",
        hatched=_never_met(ctx, m),
    )
    return ps, fig


def _never_met(ctx: _Context, m: pd.DataFrame) -> np.ndarray | None:
    """The heatmap's cells of two agents that never met in the battles (None: not battles, or every pair met)."""
    graph = battle_graph(ctx)
    if graph is None:
        return None
    met = graph["met"].reindex(index=m.index, columns=m.columns).fillna(0).to_numpy() > 0
    never = ~met & ~np.eye(len(m), dtype=bool)
    return never if never.any() else None


#: the heatmap's caption (its order is what the reader needs to know to find a pair)
_HEATMAP_CAPTION = (
    "Pairwise posterior probabilities P(row agent > column agent) by {what}; rows and columns in the "
    "report's order, {order} (so the upper triangle holds the probabilities that an agent higher in "
    "that order beats a lower one)."
)


def _pair_texts(cmp, alpha: float, data) -> tuple[list[str], object, object]:
    """The sentence, the full table and (with many agents, up to the row cap) the compact matrix of the paired tests."""
    from ._pairs import MATRIX_ABOVE
    from ._pairs import SCORE_ORDER_WORDS
    from ._pairs import disagree_note
    from ._pairs import marks_holm_note
    from ._pairs import marks_legend
    from ._pairs import no_p_note
    from ._pairs import pair_frame
    from ._pairs import pair_matrix
    from ._pairs import pair_sentence
    from ._pairs import score_order
    from ._pairs import settings_text

    full = pair_frame(cmp, alpha=alpha)
    text = [pair_sentence(cmp, alpha) + graded_units(data), f"How: {settings_text(cmp)}.", disagree_note(cmp, full)]
    text += [no_p_note(full), marks_holm_note(full, alpha)]
    matrix = None
    # above the row cap an agent x agent matrix is as unreadable as the table: the pairs that differ instead
    if MATRIX_ABOVE < cmp.to_dataset().sizes["agent"] and len(full) <= PAIR_ROWS:
        name = cmp.to_dataset().attrs.get("adjust_name", "Holm")
        matrix = pair_matrix(cmp, alpha=alpha, order=score_order(data))
        text.append(
            "With this many agents the pairs are shown as a matrix: row agent minus column agent, "
            f"{SCORE_ORDER_WORDS}; {marks_legend(alpha, name, full)}. "
            "The full table (every pair's simultaneous and per-pair intervals and p-values) is "
            "below, and in Python it is `hierbench.freq.compare_agents(data).to_frame()`."
        )
    return text, full, matrix


def graded_units(data, tail: str = ", the scale of Agent abilities") -> str:
    """What a graded log's paired differences are in: the score the grades were read as, not grades.

    ``tail`` ends the sentence (the report's abilities are mean grades; the CLI has no such section).

    VerbAgg's no / perhaps / yes: Agent abilities gave mean grades 1.167 and 1.333 (0..2), the
    table their difference -0.083 (the score on 0..1), with nothing said.
    """
    from ..data import grade_key
    from ..data import grade_reading
    from ..data import labels_attr
    from ..data import levels_attr

    levels = levels_attr(data.attrs) if data is not None else None
    if not levels or len(levels) < 3:  # two grades are read as 0 and 1: the differences are of pass rates
        return ""
    scale = np.asarray(levels, dtype=float)
    labels = labels_attr(data.attrs)
    key = f" (the grades numbered {grade_key(scale, labels)})" if labels else ""
    return (
        f" The differences are of the score, the {grade_reading(scale, labels)}; times "
        f"{scale[-1] - scale[0]:g} for differences of grades{key}{tail}."
    )


def _no_tests(ctx: _Context) -> str:
    """Why the section has no paired tests: battles have no scores to pair, else the run log is missing."""
    from ._match import battles_fit

    if battles_fit(ctx.fit):
        return " No paired tests: battles carry no per-task scores to pair."
    return " No paired tests here: they need the run log (`--data`, or `data=`)."


def _sec_pairwise(ctx: _Context, rep: Report, sid: str) -> None:
    from ._pairs import differ_column as _differ

    if (one := ctx.single_agent()) is not None:
        raise _Skip(f"one agent ({one}): no pair to compare")
    ps, fig = _bayes_heatmap(ctx)
    text = []
    if ps is not None:
        from ._pairs import bayes_pair_note

        n_pairs = ps.sizes["agent"] * (ps.sizes["agent"] - 1) // 2
        tests = ctx.want_freq("compare")  # else no table, no p-values: the heatmap alone
        text.append(
            "The heatmap (row agent a, column agent b)"
            + (" and the table's `Bayes P(a > b)` column" if tests else "")
            + f" compare{'' if tests else 's'} the agents by `{ctx.var}`"
            + (_mixed_note(ctx, False) if ctx.mixed else ".")
            + " "
            + bayes_pair_note(ctx.fit, n_pairs, _label(ctx.var))
            + _agent_cluster(ctx)
            + ("" if tests else _no_tests(ctx))
            + _battle_links(ctx)
        )
    table = more = None
    if ctx.want_freq("compare"):
        table, more = _pair_tables(ctx, rep, ps, text)
    if ps is None and table is None:
        raise _Skip(_no_level(ctx) + "; and no data for the paired tests")
    if ps is None and ctx.fit is not None:
        text.append(f"No Bayesian column: {_no_level(ctx)}.")
    rep.section(
        pairs_title(ps is not None, table is not None),
        "\n\n".join(t for t in text if t),
        table=table,
        id=sid,
        flag=_differ(table) if table is not None and _differ(table) else None,
        more=more,
    )
    if fig is not None:
        rep.figure("prob_superiority", fig, _heatmap_caption(ctx, ps))


def _never_met_caption(ctx: _Context) -> str:
    """The heatmap caption's count of the pairs that never met (its hatched cells) and what their P(a > b) rests on."""
    graph = battle_graph(ctx)
    said = never_met_words(graph, "P(a > b)", " (hatched cells, both triangles)") if graph is not None else ""
    return f" {said}" if said else ""


def _battle_links(ctx: _Context) -> str:
    """The pairwise section's word on agents no battle links: groups that never meet, agents in no battle."""
    graph = battle_graph(ctx)
    if graph is None:
        return ""
    said = [groups_words(graph, "a P(a > b)"), unplayed_words(graph, "its pairwise probabilities are", "their pairwise probabilities are")]
    return "".join(f" {t}" for t in said if t)


def pairs_title(probabilities: bool, tests: bool) -> str:
    """The pairwise section's heading, naming what it holds: a log alone has no probabilities, battles no tests."""
    if probabilities and tests:
        return _TITLES["pairwise"]
    return "Does A beat B? " + ("Pairwise probabilities" if probabilities else "Paired tests")


def _pair_tables(ctx: _Context, rep: Report, ps, text: list[str]) -> tuple:
    """The pair table shown (every pair, the matrix, or the pairs that differ) and the folded full one.

    Appends the section's sentences to ``text``. Above the row cap the table holds the
    pairs that differ and the complete one is attached as :data:`PAIRS_CSV`, named in
    the text (no folded copy: 49,770 rows made a 31 MB page).
    """
    from ._pair_rows import pair_agents
    from ._pair_rows import pair_link_flags
    from ._pair_rows import pair_values
    from ._pair_rows import pairs_csv
    from ._pair_rows import shown_pairs
    from ._pair_rows import truth_diffs
    from ._pairs import differ_column as _differ
    from ._pairs import in_agent_order
    from ._pairs import pair_display

    # the rows run in the report's one order, each earlier agent minus a later one, as the matrix does
    # (was: the log's file order, so METR's first row read Claude 3 Opus - Claude 3.5 Sonnet (New), -0.253)
    cmp = in_agent_order(_compare(ctx), agent_order(ctx))
    more, full, matrix = _pair_texts(cmp, 1.0 - ctx.prob, ctx.data)
    text += more + (["The paired tests are the result given in `freq['compare']`, checked to be this log's."]
                    if ctx.given("compare") else [])  # fmt: skip
    text.append(f"Pairs `a - b`: a is the agent earlier in the report's order ({order_words(ctx)}); "
                + (f"`{PAIRS_CSV}` lists every pair in that order (the rows shown here go by p-value, as said below)."
                   if len(full) > PAIR_ROWS else "the rows run through the pairs in that order."))
    agents, opponents = pair_agents(cmp)
    if ps is not None:
        full["Bayes P(a > b)"] = pair_values(ps, agents, opponents)
        sep = set(separated_agents(ctx.fit))  # a pair with a separated agent: its P(a > b) is the prior's
        if sep:
            note_separation(ctx)
        # a pair no common task links: its P(a > b) is the model's assumption (audit C, C8)
        links = pair_link_flags(ctx.ran(), agents, opponents)
        flags = ["; ".join([*(SEPARATED_FLAG.format(what=x, number="Bayes ability") for x in map(str, (a, b))
                              if x in sep), *([link] if link else [])])
                 for a, b, link in zip(agents, opponents, links, strict=True)]  # fmt: skip
        if sep or any(links):
            full["Bayes flag"] = pd.Series(flags, index=full.index)
    if any(marked := flagged_pair_flags(ctx, agents, opponents)):  # the data summary's flagged agents, pair by pair
        full["agent flag"] = pd.Series(marked, index=full.index)
        text.append(flagged_caption(ctx, "pairs' differences, p-values" + (" and P(a > b)" if ps is not None else "")).lstrip()
                    + " The `agent flag` column marks those pairs.")
    shown, note = shown_pairs(
        full, f"`{PAIRS_CSV}` beside this report, and `hierbench.freq.compare_agents(data).to_frame()`"
    )
    if note:
        every = full.copy()
        if ctx.truth is not None:
            every.insert(0, "true diff", truth_diffs(ctx.truth, agents, opponents))
        rep.attach(PAIRS_CSV, pairs_csv(every, agents, opponents))
        text.append(note)
        return pair_display(shown), None
    full = pair_display(full)
    if matrix is None:
        return full, None
    return matrix, (f"All {len(full)} pairs", full, _differ(full))


def _heatmap_caption(ctx: _Context, ps) -> str:
    """The Bayes heatmap's caption: its order and, with too many agents to name, that its axes are unnamed."""
    caption = _HEATMAP_CAPTION.format(what=_label(ctx.var), order=order_words(ctx))
    caption += _separated_caption(ctx, "P(a > b) against every other agent")
    caption += link_caption(ctx.ran()) + _never_met_caption(ctx) + flagged_caption(ctx, "P(a > b) row and column")
    n = ps.sizes["agent"]
    if n > LABELS_MAX:
        if not ctx.want_freq("compare"):
            where = "`hierbench.metrics.prob_superiority(fit)`"
        elif n * (n - 1) // 2 > PAIR_ROWS:
            where = f"the table's `Bayes P(a > b)` column and `{PAIRS_CSV}`"
        else:
            where = "the table's `Bayes P(a > b)` column"
        caption += (
            f" With {n} agents (more than {LABELS_MAX}) the axes carry no names, which could not be read: "
            f"the pattern shows how far apart the agents are; each pair's value is in {where}."
        )
    return caption


def _agent_cluster(ctx: _Context) -> str:
    """The size of the agent x cluster spread the crossed model leaves out, on this log (G-theory)."""
    from ._pairs import agent_cluster_note
    from ._pairs import lacks_agent_cluster

    if ctx.data is None or "cluster" not in ctx.data.coords or not lacks_agent_cluster(ctx.fit):
        return ""
    try:
        g = ctx.gtheory()
    except Exception:  # the variance section says why G-theory was not computed
        return ""
    return agent_cluster_note(ctx.fit, g, ctx.data)
