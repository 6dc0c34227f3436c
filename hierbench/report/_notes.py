"""Sentences several report sections share: what a formula model's agent level is, why the Bayesian level and the bootstrap are not on one scale, the bootstrap brought onto a graded fit's grades, a caption's word on separated agents, and why there is no posterior level to rank or compare."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import grade_key
from ._context import _Context
from ._context import _label
from ._flags import _SEPARATED_WHY
from ._flags import _tasks_scored
from ._flags import note_separation
from ._flags import separated_agents

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



def _separated_caption(ctx: _Context, what: str) -> str:
    """A caption's word on the agents the fit's data separate: their ``what`` is the prior's ("" if none)."""
    sep = separated_agents(ctx.fit)
    if not sep:
        return ""
    note_separation(ctx)
    return f" {', '.join(sep)}: " + _SEPARATED_WHY.format(whose="its" if len(sep) == 1 else "their", number=what) + "."



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
