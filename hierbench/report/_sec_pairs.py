"""The pairwise section: posterior P(i > j) beside the paired tests (a matrix for many agents)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from ._context import _TITLES
from ._context import _Context
from ._context import _label
from ._context import _Skip
from ._report import Report
from ._sections import _mixed_note
from ._sections import _no_level


def _compare(ctx: _Context):
    """compare_agents at its own resampling defaults (the CLI's `compare` makes the same call).

    Kept in ``ctx.cache["compare"]``: the checklist quotes it.
    """
    if isinstance(ctx.freq, Mapping) and "compare" in ctx.freq:
        cmp = ctx.freq["compare"]
    else:
        from .. import freq

        ctx.say("paired tests of every pair")
        cmp = freq.compare_agents(ctx.data, prob=ctx.prob, rng=ctx.rng)
    ctx.cache["compare"] = cmp
    return cmp


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
    order = _by_posterior_mean(draws)
    m = m.loc[order, order]
    m = m.where(~np.eye(len(m), dtype=bool))
    fig = F.heatmap(
        m,
        title=f"P(row agent > column agent) by {_label(ctx.var)}",
        xlabel="opponent",
        ylabel="agent",
        cbar_label="posterior probability (0-1)",
    )
    return ps, fig


def _by_posterior_mean(draws: xr.DataArray) -> list[str]:
    """Agents by the posterior mean of the plotted variable, highest first (ties: the fit's order)."""
    mean = draws.mean([d for d in draws.dims if d != "agent"]).transpose("agent")
    agents = [str(a) for a in mean["agent"].values]
    return [agents[i] for i in np.argsort(-mean.values, kind="stable")]


#: the heatmap's caption (its order is what the reader needs to know to find a pair)
_HEATMAP_CAPTION = (
    "Pairwise posterior probabilities P(row agent > column agent) by {what}; rows and columns "
    "ordered by each agent's posterior mean of it, highest first (so the upper triangle holds the "
    "probabilities that a higher-ranked agent beats a lower-ranked one)."
)


def _pair_texts(cmp, alpha: float, data) -> tuple[list[str], object, object]:
    """The sentence, the full table and (with many agents) the compact matrix of the paired tests."""
    from ._pairs import MATRIX_ABOVE
    from ._pairs import SCORE_ORDER_WORDS
    from ._pairs import disagree_note
    from ._pairs import marks_holm_note
    from ._pairs import marks_legend
    from ._pairs import pair_frame
    from ._pairs import pair_matrix
    from ._pairs import pair_sentence
    from ._pairs import score_order
    from ._pairs import settings_text

    full = pair_frame(cmp, alpha=alpha)
    text = [pair_sentence(cmp, alpha), f"How: {settings_text(cmp)}.", disagree_note(cmp, full)]
    text.append(marks_holm_note(full, alpha))
    matrix = None
    if cmp.to_dataset().sizes["agent"] > MATRIX_ABOVE:
        name = cmp.to_dataset().attrs.get("adjust_name", "Holm")
        matrix = pair_matrix(cmp, alpha=alpha, order=score_order(data))
        text.append(
            "With this many agents the pairs are shown as a matrix: row agent minus column agent, "
            f"{SCORE_ORDER_WORDS}; {marks_legend(alpha, name)}. "
            "The full table (every pair's simultaneous and per-pair intervals and p-values) is "
            "below, and in Python it is `hierbench.freq.compare_agents(data).to_frame()`."
        )
    return text, full, matrix


def _sec_pairwise(ctx: _Context, rep: Report, sid: str) -> None:
    from ._pairs import differ_column as _differ
    from ._pairs import pair_display

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
            + ("" if tests else " No paired tests here: they need the run log (`--data`, or `data=`).")
        )
    table = full = None
    if ctx.want_freq("compare"):
        more, full, matrix = _pair_texts(_compare(ctx), 1.0 - ctx.prob, ctx.data)
        text += more
        if ps is not None:
            full["Bayes P(a > b)"] = [
                float(ps.sel(agent=a, opponent=b))
                for a, b in (p.split(" - ", 1) for p in full.index)
            ]
        full = pair_display(full)
        table = full if matrix is None else matrix
    if ps is None and table is None:
        raise _Skip(_no_level(ctx) + "; and no data for the paired tests")
    if ps is None and ctx.fit is not None:
        text.append(f"No Bayesian column: {_no_level(ctx)}.")
    rep.section(
        _TITLES[sid],
        "\n\n".join(t for t in text if t),
        table=table,
        id=sid,
        flag=_differ(full) if full is not None and table is full else None,
        more=None if table is full else (f"All {len(full)} pairs", full, _differ(full)),
    )
    if fig is not None:
        rep.figure("prob_superiority", fig, _HEATMAP_CAPTION.format(what=_label(ctx.var)))
