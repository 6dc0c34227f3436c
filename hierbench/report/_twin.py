"""A fit's agent level on the score scale where the level it ranks is not: the IRT model's ``mean_task``.

An IRT fit ranks and pairs its agents by the latent ``ability`` (logit per unit
discrimination), which no bootstrap of the mean score estimates. Its posterior also
holds ``mean_task(agent)``: each agent's mean success probability over all the data's
tasks, those it never ran included (the model predicts them from its ability). The
Agent abilities and side-by-side sections set that beside the bootstrap; the ranks and
pairs keep ``ability``, which orders the agents as ``mean_task`` does in every draw
(``mean_task`` rises with ability over the same tasks, the discriminations being positive).
"""

from __future__ import annotations

import pandas as pd
import xarray as xr

from ._context import _Context
from ._context import _eti

#: posterior variables on the probability scale that stand beside the bootstrap where the agents' level is not
SCORE_TWINS = ("mean_task",)


def score_twin(ctx: _Context) -> str | None:
    """The score-scale twin of the fit's agent level (``mean_task``), or None where the level is on the score scale.

    Only for a fit whose level (``_Context.var``) is off the score scale, and only a variable over
    ``(chain, draw, agent)`` whose ``scale`` attr says probability; a compact saved fit without it has none.
    """
    post = ctx.post
    if post is None or ctx.mixed or ctx.var is None or ctx.score_scale():
        return None
    for name in SCORE_TWINS:
        if name in post and set(post[name].dims) == {"chain", "draw", "agent"} \
                and post[name].attrs.get("scale") == "probability":  # fmt: skip
            return name
    return None


def twin_frame(ctx: _Context, twin: str) -> pd.DataFrame:
    """The twin's posterior mean and equal-tailed interval per agent (as ``_Context.bayes_frame``)."""
    return _eti(ctx.post[twin], ctx.prob)


def _n_tasks(post: xr.Dataset) -> int | None:
    return int(post.sizes["task"]) if "task" in post.sizes else None


def twin_note(ctx: _Context, twin: str) -> str:
    """What the twin averages (all the data's tasks, never-run ones included), and which variable ranks."""
    total = _n_tasks(ctx.post)
    meaning = str(ctx.post[twin].attrs.get("meaning", "mean success probability over the data's tasks"))
    text = (
        f" The Bayesian column is `{twin}`, the model's {meaning}"
        + (f" (all {total} of them)" if total else "")
        + ": for every agent the same tasks, including tasks it never ran, which the model predicts from "
        "its ability. The bootstrap's mean is over the tasks each agent ran (`tasks scored`). Its interval "
        "holds these tasks fixed; the bootstrap's is for a new draw of tasks, so it is wider by the tasks' "
        f"spread. The ranks and pairwise sections use `{ctx.var}` ({ctx.post[ctx.var].attrs.get('scale', 'model scale')}), "
        f"which orders the agents as `{twin}` does in every draw."
    )
    summary = ctx.data_summary()  # the tasks each agent's bootstrap mean averages, as the sections read them
    n = None if summary is None else summary["n_tasks_scored"]
    if n is not None and total:
        short = n[n < total]
        if len(short):
            names = ", ".join(f"{a} ({int(k)} of {total})" for a, k in short.items())
            text += (f" Scored on fewer tasks: {names}; their `{twin}` also averages the tasks they never ran, "
                     "their bootstrap mean does not, so the two are not one quantity for them.")  # fmt: skip
    return text


def ability_columns(ctx: _Context, wide: pd.DataFrame) -> pd.DataFrame:
    """``wide`` with the ranked level's own columns (``ability``, model scale) before its flag."""
    level = ctx.bayes_frame()
    level.index = level.index.astype(str)
    at = wide.columns.get_loc("flag") if "flag" in wide.columns else len(wide.columns)
    for i, col in enumerate(("estimate", "lower", "upper")):
        wide.insert(at + i, f"Bayes {ctx.var} ({ctx.prob:.0%} ETI, model scale) {col}", level[col].reindex(wide.index))
    return wide
