"""The posterior predictive check section: the rootogram of success counts per agent, or the battles' or a graded fit's check, or why a fit gets none (one run per cell, no predictive group, an outcome neither check describes)."""

from __future__ import annotations

import numpy as np
import xarray as xr

from .._base import fit_record
from ._context import _TITLES
from ._context import _Context
from ._context import _Skip
from ._order import agent_order
from ._ppc_tasks import task_spread_text
from ._report import Report


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
