"""Sections 7 and 8 of the demo: which agents differ, and the ranking.

The paired tests and their family-wise verdict with Bayes beside them, then the ranks with
their uncertainty.
"""

from __future__ import annotations

import os
import re
import textwrap

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

from ._context import PROB
from ._context import DemoContext
from ._context import _fast
from ._context import _one_agent
from ._context import _one_task
from ._context import _truth_new_task


def _compare_section(ctx: DemoContext) -> str:
    import textwrap

    if (one := _one_agent(ctx, "no pair to compare") or _one_task(ctx)) is not None:
        return one
    from ..freq import compare_agents
    from ..metrics import prob_superiority
    from ..report import bayes_pair_note
    from ..report import differ_column
    from ..report import graded_units
    from ..report import marks_holm_note
    from ..report import no_p_note
    from ..report import pair_agents
    from ..report import pair_frame
    from ..report import pair_sentence
    from ..report import pair_text
    from ..report import pair_values
    from ..report import shown_pairs
    from ..report import truth_diffs

    # compare_agents' own defaults: the report and `hierbench compare` use the same
    cmp = compare_agents(ctx.data, prob=PROB, rng=ctx.extra.get("seed", 0))
    ctx.extra["compare"] = cmp
    full = ctx.extra["pair_frame"] = pair_frame(cmp, alpha=1 - PROB)  # the rank section reads it too
    # what decides first: the difference, its simultaneous interval, the adjusted p and the verdict
    table = full.iloc[:, : full.columns.get_loc(differ_column(full)) + 1].copy()
    own = _own_p(full, table)
    for col in own:  # each pair's own p-value, which the Bayes note sends the reader to (the report prints it)
        table[col] = full[col]
    agents, opponents = pair_agents(cmp)
    true = _truth_new_task(ctx)
    if true is not None:
        table.insert(0, "true diff", truth_diffs(true, agents, opponents))
    if "fit" in ctx.extra:
        ps = prob_superiority(ctx.extra["fit"], var="mean_new_task")
        ps = ps if isinstance(ps, xr.DataArray) else ps.to_dataset()["estimate"]
        table["Bayes P(a > b)"] = pair_values(ps, agents, opponents)
    ctx.extra["compare_table"] = table
    note = ""
    # no pair with a difference (every pair shares fewer than 2 tasks): no p to read P(a > b) beside
    if "fit" in ctx.extra and full["mean difference"].notna().any():
        # the note names the column it means
        said = bayes_pair_note(ctx.extra["fit"], len(table), p_column=own[0] if own else None)
        note = "\n" + textwrap.fill("Beside it, " + said + _agent_cluster(ctx), 90)
    # the report's marks (*, **, ***) are not printed here: the note reads on p max-T and p Holm
    floor = re.sub(r" \(`\*+`\)", "", marks_holm_note(full, 1 - PROB)
                   .replace("The marks understate", "p max-T understates").replace("beside the marks", "beside p max-T"))
    if floor and "p Holm" in full:
        table["p Holm"] = full["p Holm"]  # the note sends the reader to it
    printed = _without_zero_error(table, cmp.to_dataset().attrs)
    if len(printed) > DEMO_PAIRS:
        shown, short = _neighbour_pairs(ctx, printed, agents, opponents)
    else:
        shown, short = shown_pairs(printed, _pairs_where(ctx))
    return (
        "\n".join(textwrap.wrap(pair_sentence(cmp, 1 - PROB) + graded_units(ctx.data, ""), 90))
        + note
        + "\n\n"
        # a path stays whole on its line, to be copied
        + (textwrap.fill(short.replace("`", ""), 90, break_on_hyphens=False, break_long_words=False) + "\n\n"
           if short else "")
        + pair_text(shown)
        + _pair_covers(shown)
        + "\n\nThe per-pair intervals, every p-value and Holm / BH: compare_agents(data).to_frame()."
        + ("\n\n" + textwrap.fill(no_p_note(full).replace("`", ""), 90) if no_p_note(full) else "")
        + ("\n\n" + textwrap.fill(floor.replace("`", ""), 90) if floor else "")
    )


def _own_p(full: pd.DataFrame, table: pd.DataFrame) -> list[str]:
    """The columns of each pair's own p-value that ``table`` lacks: the test's p, and its Monte Carlo error if any.

    :func:`hierbench.report.pair_frame` names the test's p-value ``p (<test>)`` (``p (permutation)``,
    ``p (t)``); over one pair under Holm or BH it is the deciding column, in ``table`` already. Its
    Monte Carlo error is left out where it is 0 for every pair (an exact p-value).
    """
    own = [c for c in full if c.startswith("p (") and c not in table]
    mc = [f"MC error of {c}" for c in own if f"MC error of {c}" in full and bool((full[f"MC error of {c}"] > 0).any())]
    return own + mc


def _pair_covers(shown: pd.DataFrame) -> str:
    """Under the pair table: how many simultaneous intervals cover the true difference ("" without a truth)."""
    from ._context import _coverage_words

    if "true diff" not in shown or "simultaneous lower" not in shown:
        return ""
    words = _coverage_words(shown["true diff"].astype(float), shown["simultaneous lower"].astype(float),
                           shown["simultaneous upper"].astype(float), what="simultaneous intervals")  # fmt: skip
    return "\n\n" + textwrap.fill(words, 90)


#: the demo prints every pair up to this many (10 agents); beyond, the pairs of agents next in the ranking
DEMO_PAIRS = 45


def _neighbour_pairs(ctx: DemoContext, table: pd.DataFrame, agents: list[str], opponents: list[str]
                     ) -> tuple[pd.DataFrame, str]:  # fmt: skip
    """The pairs of agents next to each other by mean score per task, in that order, and what is left out.

    With 25 agents the demo printed all 300 pairs, most of them gaps nobody doubts; the pairs of
    neighbours (24) are the ones a ranking's reader asks about.
    """
    from ..report import PAIR_ROWS
    from ..report import PAIRS_CSV
    from ..report import differ_column
    from ..report import score_order

    pos = {a: i for i, a in enumerate(score_order(ctx.data))}
    near = [k for k, (a, b) in enumerate(zip(agents, opponents, strict=True)) if abs(pos[a] - pos[b]) == 1]
    near = sorted(near, key=lambda k: min(pos[agents[k]], pos[opponents[k]]))
    shown = _higher_first(table.iloc[near], [(agents[k], opponents[k]) for k in near], pos)
    col = differ_column(table)
    out = str(ctx.extra.get("out") or "")
    where = (os.path.join(out, PAIRS_CSV) if len(table) > PAIR_ROWS else os.path.join(out, "report.md")
             + " (its pair table)") if out else _pairs_where(ctx)  # fmt: skip
    return shown, (
        f"{len(table):,} pairs, {int(table[col].sum()):,} of which differ: shown here are the {len(shown)} "
        f"pairs of agents next to each other when ranked by mean score per task ({int(shown[col].sum())} of "
        f"them differ), best first. All {len(table):,} pairs: {where}."
    )


#: the columns that change sign when a pair is read the other way round (the p-values and verdict do not)
_SIGNED = ("true diff", "mean difference")


def _higher_first(rows: pd.DataFrame, pairs: list[tuple[str, str]], pos: dict[str, int]) -> pd.DataFrame:
    """The neighbour rows read as ``higher - lower`` in the ranking, so a ranked list reads down without signs.

    compare_agents orients a pair by its own order of agents; a row whose first agent ranks below
    the second is turned round: its differences negated, its interval ends swapped and negated, its
    Bayesian P(a > b) taken from 1. Nothing else in the row depends on the orientation.
    """
    out = rows.copy()
    flip = np.array([pos[a] > pos[b] for a, b in pairs])
    if not flip.any():
        return out
    for col in (c for c in _SIGNED if c in out):
        out.loc[flip, col] = -rows.loc[flip, col]
    if "simultaneous lower" in out:
        out.loc[flip, ["simultaneous lower", "simultaneous upper"]] = -rows.loc[
            flip, ["simultaneous upper", "simultaneous lower"]].to_numpy()  # fmt: skip
    if "Bayes P(a > b)" in out:
        out.loc[flip, "Bayes P(a > b)"] = 1.0 - rows.loc[flip, "Bayes P(a > b)"]
    out.index = pd.Index([f"{b} - {a}" if f else f"{a} - {b}" for (a, b), f in zip(pairs, flip, strict=True)],
                         name=rows.index.name)  # fmt: skip
    return out


def _agent_cluster(ctx: DemoContext) -> str:
    """How much the crossed model's missing agent x cluster term matters on this log (the report's note)."""
    import warnings

    from .._base import HierbenchError
    from ..freq import variance_components
    from ..report import agent_cluster_note
    from ..report import lacks_agent_cluster

    if "cluster" not in ctx.data.coords or not lacks_agent_cluster(ctx.extra["fit"]):
        return ""  # nothing to size: G-theory is not run for it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # G-theory's own notices belong to its own call, not this sentence
        try:
            g = variance_components(ctx.data, prob=PROB)
        except (HierbenchError, ValueError):  # a design G-theory refuses: no sentence, nothing claimed
            return ""
    return agent_cluster_note(ctx.extra["fit"], g, ctx.data)


def _without_zero_error(table: pd.DataFrame, attrs: dict) -> pd.DataFrame:
    """The printed table without its Monte Carlo error column when the result says its p-values are exact.

    An exact p-value (the sentence above the table says "exact over all ... sign patterns") has no
    Monte Carlo error: a column of zeros widened the table by 20 characters and told nothing. A
    Monte Carlo p-value keeps the column, zeros included (p = 1 has none either).
    """
    if attrs.get("adjust") in ("maxt", "maxt-stepdown"):
        exact = str(attrs.get("maxt_exact")) == "True"
    else:  # Holm / BH of the pairs' own p-values: analytic (t, McNemar) or enumerated sign flips
        exact = attrs.get("test") in ("t", "mcnemar") or ": exact" in str(attrs.get("p_permutation_method", ""))
    zero = [c for c in table if c.startswith("MC error of p") and exact and bool((table[c] == 0).all())]
    return table.drop(columns=zero)


def _pairs_where(ctx: DemoContext) -> str:
    """Where every pair is when the section shows some: the report's CSV, or the call that gives them."""
    from ..report import PAIRS_CSV

    seed = ctx.extra.get("seed", 0)
    if ctx.extra.get("out"):
        return (
            f"{os.path.join(str(ctx.extra['out']), PAIRS_CSV)} (written with the report; every p-value "
            "and both intervals)"
        )
    return (
        f"no report is written (--out ''), so no file holds them: `hierbench compare LOG --json --seed {seed}` "
        f"prints them (LOG: this log), or in Python hierbench.freq.compare_agents(data, rng={seed}).to_frame()"
    )


def _rank_section(ctx: DemoContext) -> str:
    if (one := _one_agent(ctx, "nothing to rank") or _one_task(ctx)) is not None:
        return one
    from ..freq import rank_uncertainty
    from ..metrics import rank_probabilities

    rk = rank_uncertainty(
        ctx.data, n_resamples=1000 if _fast(ctx) else 4000, prob=PROB, rng=ctx.extra.get("seed", 0)
    )
    ctx.extra["ranks"] = rk
    truth = _truth_new_task(ctx)
    df = pd.DataFrame(
        {
            "observed rank": rk.estimate.to_series(),
            "P(top 1) bootstrap": rk.p_top_k.sel(k=1).to_series(),
            f"rank {PROB:.0%} lower": rk.ci.sel(ci_bound="lower").to_series(),
            f"rank {PROB:.0%} upper": rk.ci.sel(ci_bound="upper").to_series(),
            "tier": rk.group.to_series(),
        }
    )
    if truth is not None:
        true_rank = truth.copy(data=stats.rankdata(-truth.values, method="min"))
        df.insert(0, "true rank", true_rank.to_series().astype(int))
    if "fit" in ctx.extra:
        rp = rank_probabilities(ctx.extra["fit"], var="mean_new_task")
        first = rp.isel(rank=0) if "rank" in rp.dims else rp
        df["P(top 1) Bayes"] = first.to_series()
    for col in ("observed rank", f"rank {PROB:.0%} lower", f"rank {PROB:.0%} upper"):
        if np.all(np.mod(df[col].to_numpy(), 1) == 0):  # ranks, shown as whole numbers where they are
            df[col] = df[col].astype(int)
    df.index = df.index.astype(str)
    df = df.sort_values("observed rank")
    ctx.extra["rank_table"] = df
    attrs = rk.to_dataset().attrs
    unit = "whole task clusters" if attrs.get("resample_unit") == "cluster" else "tasks"
    alpha = float(attrs.get("alpha", 0.05))
    return (
        textwrap.fill(
            f"Ranks under resampling of {unit} (one resample shared by every agent, ties broken at "
            f"random): the probability of being best, a {PROB:.0%} percentile interval for the rank, "
            "and tiers of agents that cannot be told apart from the tier's leader: the leader is told "
            f"apart from an agent when it scores higher in more than {1 - alpha / 2:.1%} of the "
            f"resamples (a per-pair bootstrap test at level {alpha:g}, not adjusted for the pairs and "
            "not the paired tests of 'Does A beat B?', so near the level the two can part).",
            90,
        )
        + "\n\n"
        + df.to_string(float_format="{:.3f}".format)
        + _rank_covers(df)
        + _tiers_beside_pairs(ctx, df)
    )


def _rank_covers(df: pd.DataFrame) -> str:
    """Under the rank table: how many rank intervals hold the true rank ("" without a truth)."""
    from ._context import _coverage_words

    lo, hi = f"rank {PROB:.0%} lower", f"rank {PROB:.0%} upper"
    if "true rank" not in df:
        return ""
    words = _coverage_words(df["true rank"].astype(float), df[lo].astype(float), df[hi].astype(float),
                           what="rank intervals", value_fmt="{:g}")  # fmt: skip
    return "\n\n" + textwrap.fill(words, 90)


def _tiers_beside_pairs(ctx: DemoContext, df: pd.DataFrame) -> str:
    """The pairs the tiers tell apart and the paired tests of section 6 do not, named ("" where none).

    A tier's leader is told apart from every agent of a later tier (the rule of the tiers); the
    paired tests adjust for the pairs and the tiers do not, so near the level a reader meets
    "its own tier" beside "does not differ" (METR: GPT-4o alone in its tier, no different from
    Claude 3.5 Sonnet (Old) at p max-T 0.26).
    """
    from ..report import differ_column
    from ..report import differ_parts
    from ..report import p_text
    from ..report import pair_agents

    if "pair_frame" not in ctx.extra:  # section 6 did not run (one agent, one task)
        return ""
    full = ctx.extra["pair_frame"]
    col = differ_column(full)
    if col is None:
        return ""
    p_col = differ_parts(col)[0]
    alike = {}  # the paired tests' verdict is "not different" (an undefined one is not), with its p
    for (a, b), (same, p) in zip(zip(*pair_agents(ctx.extra["compare"]), strict=True),
                                 zip(full[col], full[p_col], strict=True), strict=True):  # fmt: skip
        alike[a, b] = alike[b, a] = (not pd.isna(same) and not bool(same), p)
    tier = df["tier"]
    leaders = {t: df.index[tier == t][0] for t in sorted(tier.unique())}  # df is sorted by observed rank
    apart = [(leaders[t], a) for t in leaders for a in df.index[tier > t]]
    split = [(lead, a, alike[lead, a][1]) for lead, a in apart if alike.get((lead, a), (False,))[0]]
    if not split:
        return ""
    eg = "; ".join(f"{lead} and {a} ({p_col} {p_text(p)})" for lead, a, p in split[:3])
    which = (f"one pair, a tier's leader and an agent of a later tier, that the paired tests of 'Does A beat "
             f"B?' do not call different: {eg}. The tiers are not adjusted for the pairs, the paired tests "
             "are: go by the p-value given here." if len(split) == 1 else
             f"{len(split)} pairs of a tier's leader and an agent of a later tier that the paired tests of "
             f"'Does A beat B?' do not call different, e.g. {eg}: the tiers are not adjusted for the pairs, "
             "the paired tests are: go by their p-values, given here.")  # fmt: skip
    return "\n\n" + textwrap.fill("The tiers tell apart " + which, 90)
