"""The rank probabilities section: the posterior probability of each rank per agent (a summary per agent for many), with what the ranks rest on and the agents whose order no data link."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ._battles import _battle_rank_flags
from ._battles import battle_graph
from ._battles import groups_words
from ._battles import never_met_words
from ._battles import unplayed_words
from ._context import _TITLES
from ._context import _Context
from ._context import _label
from ._context import _Skip
from ._flags import _add_flag
from ._flags import data_flags
from ._flags import flagged_caption
from ._flags import separated_flags
from ._notes import _mixed_note
from ._notes import _no_level
from ._notes import _separated_caption
from ._pair_rows import link_caption
from ._pair_rows import rank_link_flags
from ._report import Report


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
    sep = _add_flag(sep, data_flags(ctx, table.index, "rank"))
    if (graph := battle_graph(ctx)) is not None:  # agents no battle links: their order is the prior's (audit P)
        said = [never_met_words(graph, "order", the="the "), groups_words(graph, "the order of two agents"),
                unplayed_words(graph, "its rank probabilities are", "their rank probabilities are")]
        text += "".join(f" {t}" for t in said if t)
        sep = _add_flag(sep, _battle_rank_flags(graph, table.index))
    if (sep != "").any():
        table = table.assign(flag=sep)
    rep.section(_TITLES[sid], text, table=table, id=sid)
    caption = "Rank probabilities (posterior)." + _separated_caption(ctx, "rank") + link_caption(ran, "rank order")
    caption += flagged_caption(ctx, "rank")
    if len(df) > F.LABELS_MAX:
        caption += (
            f" With {len(df)} agents (more than {F.LABELS_MAX}) the axes carry no names, which could not "
            "be read: rows are agents by expected rank, best at the top, columns ranks 1 to "
            f"{df.shape[1]}; each agent's numbers are in the table."
        )
    rep.figure("rank_probabilities", fig, caption)
