"""The variance-components section: the crossed fit's and G-theory's components, row for row.

Both halves name their components by G-theory's facets (``task:cluster``,
``agent:task:cluster`` when tasks sit in clusters), but split them
differently (G-theory also estimates ``agent:cluster``; the crossed model
folds it into the agent x task effect). :data:`COMPONENT_ROWS` is the one
place the rows are defined: each row of the table sums the components of
either half listed for it, and says which it summed. A component the fitted model
does not have is never shown on its own: with one run per cell, or a fit
without an agent x task effect, agent x task and run-to-run variation are
one row.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import xarray as xr

from ._context import _TITLES
from ._context import _Context
from ._context import _Skip
from ._report import Report

__all__ = ["COMPONENT_ROWS"]

#: row -> the components (of either half, by the names both use) summed into it
COMPONENT_ROWS: dict[str, tuple[str, ...]] = {
    "agent": ("agent",),
    "task": ("task", "cluster", "task:cluster"),
    "agent x task": ("agent:task", "agent:cluster", "agent:task:cluster"),
    "run-to-run": ("residual",),
}
_MERGED = "agent x task + run-to-run"


def _merge_reason(ctx: _Context) -> str | None:
    """Why agent x task and run-to-run cannot be shown apart (None when they can)."""
    if ctx.data is not None and int(np.nanmax(_runs_per_cell(ctx.data))) < 2:
        return "one run per agent x task cell: the two are not separable in these data"
    if ctx.fit is not None:
        try:
            s = json.loads(ctx.fit.attrs.get("hierbench_structure", "{}"))
            choice = s.get("decisions", {}).get("agent_task", {}).get("choice")
        except (TypeError, ValueError):
            choice = None
        if choice == "none":
            return "the fitted model has no agent x task effect (agent_task='none')"
    return None


def _runs_per_cell(data: xr.Dataset) -> np.ndarray:
    from ..data import to_counts

    return to_counts(data)["n_runs"].values


def _rows(merge: bool) -> dict[str, tuple[str, ...]]:
    if not merge:
        return COMPONENT_ROWS
    rows = {k: v for k, v in COMPONENT_ROWS.items() if k not in ("agent x task", "run-to-run")}
    rows[_MERGED] = COMPONENT_ROWS["agent x task"] + COMPONENT_ROWS["run-to-run"]
    return rows


def _note_unshown(ctx: _Context, half: str, comps: list[str], rows: dict) -> None:
    """A component no row sums is said, never dropped from the reader's sight in silence."""
    shown = {n for names in rows.values() for n in names}
    missing = [c for c in comps if c not in shown]
    if missing:
        ctx.warnings.append(f"variance components: {half} components {missing} fit no row of the table")


def _bayes_part(ctx: _Context, rows: dict) -> pd.DataFrame | None:
    if ctx.fit is None or ctx.fit.attrs.get("hierbench_model") != "crossed":
        return None
    from ..metrics import crossed_variance_components

    vc = crossed_variance_components(ctx.fit, scale="probability").draws
    comps = [str(c) for c in vc["component"].values]
    _note_unshown(ctx, "Bayes", comps, rows)
    q = [(1 - ctx.prob) / 2, (1 + ctx.prob) / 2]
    out = {}
    for row, names in rows.items():
        have = [n for n in names if n in comps]
        if not have:
            continue
        draws = vc.sel(component=have).sum("component")
        lo, hi = (float(v) for v in draws.quantile(q, dim=("chain", "draw")).values)
        below = float((draws < 0).mean())
        out[row] = {"Bayes estimate": max(float(draws.mean()), 0.0), "Bayes lower": max(lo, 0.0),
                    "Bayes upper": max(hi, 0.0), "Bayes terms": " + ".join(have),
                    "flag": f"Bayes: {below:.0%} of draws below 0 (a difference of variances), "
                    "clipped at 0" if lo < 0 else ""}  # fmt: skip
    return pd.DataFrame.from_dict(out, orient="index")


def _gtheory_part(ctx: _Context, rows: dict) -> tuple[pd.DataFrame | None, str]:
    if ctx.data is None:
        return None, ""
    from .. import freq

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = freq.variance_components(ctx.data)  # design read from the data
    ctx.warnings += [f"G-theory: {w.message}" for w in caught]
    comp = (g.components if hasattr(g, "components") else g.estimate).to_series()
    comp.index = comp.index.astype(str)
    label = f"G-theory ({getattr(g, 'method', 'ANOVA')})"
    _note_unshown(ctx, "G-theory", list(comp.index), rows)
    out = {}
    for row, names in rows.items():
        have = [n for n in names if n in comp.index]
        if have:
            out[row] = {label: float(comp[have].sum()), "G-theory terms": " + ".join(have)}
    return pd.DataFrame.from_dict(out, orient="index"), f"{label}, design {g.formula}"


def _sec_variance(ctx: _Context, rep: Report, sid: str) -> None:
    from . import _figures as F

    why = _merge_reason(ctx)
    rows = _rows(why is not None)
    bay = _bayes_part(ctx, rows)
    try:
        gt, gdesc = _gtheory_part(ctx, rows)
    except Exception as exc:
        gt, gdesc = None, f"G-theory not computed: {type(exc).__name__}: {str(exc).split('. ')[0][:200]}"
    parts = [p for p in (bay, gt) if p is not None and len(p)]
    if not parts:
        raise _Skip("needs a crossed fit or data" + (f" ({gdesc})" if gdesc else ""))
    table = pd.concat(parts, axis=1).reindex([r for r in rows if any(r in p.index for p in parts)])
    if "flag" in table:
        table["flag"] = table["flag"].fillna("")
    table.index.name = "component"
    text = [
        "Variance of the cell success probability (probability^2), split into agent, task, "
        "agent x task and run-to-run (binomial) parts; each row sums the terms named beside it"
        + (", so both methods describe the same component." if len(parts) == 2 else ".")
    ]
    if bay is not None:
        text.append(f"Bayes: the crossed fit's posterior mean and {ctx.prob:.0%} equal-tailed interval.")
    elif ctx.mixed:
        text.append(
            "No Bayesian column: a formula model's terms are its own (agent factors, task features), not "
            "these rows; hierbench.metrics.agent_variance(fit, model) splits the agents' logit-scale variance "
            "by its terms."
        )
    if gdesc:
        text.append(gdesc + ".")
    if why:
        text.append(f"Agent x task and run-to-run variation are one row: {why}.")
    rep.section(_TITLES[sid], " ".join(text), table=table, id=sid, digits=4)
    if bay is not None:
        fig = F.variance_plot(
            table[["Bayes estimate", "Bayes lower", "Bayes upper"]]
            .dropna(how="all")
            .set_axis(["estimate", "lower", "upper"], axis=1),
            title="Variance components (crossed model)",
            xlabel=f"variance of the success probability (probability^2); {ctx.prob:.0%} intervals",
        )
        rep.figure("variance_components", fig, "Variance components of the success probability.")
