"""Section 9 of the demo for a log of one agent: how many more tasks or runs narrow its interval.

A log of one agent (tau-bench's gpt-4o) holds no pair to compare, but "how many more tasks or
runs to buy" still has an answer: the width of the agent's own interval as tasks and runs grow.
The log's G-study (:func:`hierbench.freq.variance_components`: the task part ``s_t`` and the
run-to-run part ``s_e``) projects it (``d_study``: the error variance of the agent's mean score
for a new draw of tasks, ``s_t / T + s_e / (T R)``), and the agent's task bootstrap, where the
demo ran it, is the no-model figure beside it at the size run (audit D, finding 4: the section
said "not applicable").
"""

from __future__ import annotations

import textwrap
import warnings

import numpy as np
import pandas as pd

from .._base import counted
from ._context import PROB
from ._context import DemoContext
from ._context import _n_runs


def one_agent_plan(ctx: DemoContext) -> str:
    """The plan section's text for one agent: its interval's half-width by tasks and runs, and the runs to buy."""
    from scipy import stats

    from ..freq import variance_components

    with warnings.catch_warnings():  # the G-study's own warnings are the data summary's to say
        warnings.simplefilter("ignore")
        g = variance_components(ctx.data)
    est = {str(c): float(v) for c, v in zip(g.estimate["component"].values, g.estimate.values, strict=True)}
    s_t, s_e = est.get("task", np.nan), est.get("residual", np.nan)
    n = _n_runs(ctx).values.ravel()
    T, R = int((n > 0).sum()), max(int(np.median(n[n > 0])), 1) if (n > 0).any() else 0
    if T < 2 or not np.isfinite(s_t) or not np.isfinite(s_e):
        return textwrap.fill(f"(not applicable: {counted(T, 'task')} run, or no task / run-to-run variance "
                             "could be estimated: the plan needs at least two tasks, some run twice)", 90)  # fmt: skip
    if s_t + s_e <= 0:  # every run the same: a zero-width projection would claim certainty
        return textwrap.fill(f"(not applicable: every score of {ctx.data['agent'].values[0]} is the same, so its "
                             "variance is 0 and no plan for its interval follows from it; the abilities section's "
                             "exact bound is the interval to read)", 90)  # fmt: skip
    z = float(stats.norm.ppf(0.5 + PROB / 2))
    tasks, runs = np.array([T, 2 * T, 4 * T]), np.unique([1, R, 2 * R])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # extrapolation beyond the fitted sizes is the table's point
        d = g.d_study(n_tasks=tasks, n_runs=runs)
    half = z * np.sqrt(d["sigma2_Delta"].transpose("n_tasks", "n_runs").values)
    table = pd.DataFrame(half, index=pd.Index(tasks, name="tasks"),
                         columns=[f"R={r}{' (as run)' if r == R else ''}" for r in runs])  # fmt: skip
    ctx.extra["plan_table"] = table
    return _one_agent_text(ctx, s_t, s_e, T, R, float(half[0, list(runs).index(R)]), z) + "\n\n" + table.round(3).to_string()


def _one_agent_text(ctx: DemoContext, s_t: float, s_e: float, T: int, R: int, h: float, z: float) -> str:
    """The sentences: the components, the half-width as run beside the bootstrap's, and R*."""
    agent = str(ctx.data["agent"].values[0])
    text = (f"One agent ({agent}): no pair to compare, so the plan is for its own mean score. The log's G-study "
            f"splits the score's variance into tasks, s_t = {s_t:.4f}, and run-to-run, s_e = {s_e:.4f}; the "
            f"{PROB:.0%} interval for a new draw of tasks then has half-width about {z:.2f} x sqrt(s_t / T + s_e / "
            f"(T R)): {h:.3f} at the log's {counted(T, 'task')} x {R} run{'s' if R != 1 else ''}.")  # fmt: skip
    ci = getattr(ctx.extra.get("bootstrap"), "ci", None)
    if ci is not None and ci.size == 2 and np.isfinite(ci.values).all():
        lo, hi = (float(v) for v in np.asarray(ci.values).ravel())
        text += (f" The task bootstrap above, with no model, gave a half-width of {(hi - lo) / 2:.3f}.")
    if s_t > 0:
        r_star = float(np.sqrt(s_e * 10.0 / s_t))
        floor = z * np.sqrt(s_t / T)
        text += (f" More runs of the same tasks shrink only the run-to-run part (never below {floor:.3f} with "
                 f"{T} tasks); if a new task costs 10 runs' worth, the cost-optimal runs per task are "
                 f"R* = sqrt(s_e c_task / (s_t c_run)) = {r_star:.1f}. Rows: tasks; columns: runs per task; "
                 "cells: the half-width.")  # fmt: skip
    return textwrap.fill(text, 88)
