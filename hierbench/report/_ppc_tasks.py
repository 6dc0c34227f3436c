"""The task side of the posterior predictive check in words: whether the model's task population holds the tasks.

:func:`hierbench.bayes.task_spread_check` sets three statistics of the tasks' success shares
(all agents pooled) against the posterior predictive: the share of tasks no run solved, the
share every run solved, and the shares' sd. Each gets a two-sided predictive p-value, ``2 min(P(pred
>= obs), P(pred <= obs))``; three are read, so the section calls the population at odds with
the data where the smallest is below ``0.05 / 3``. It is the one check a one-run-per-cell fit
(SWE-bench bash-only) can make, and there it is at odds: 12.8% of tasks no model solved
against 10.1% predicted (p 0.010), where the Bayes abilities run below the per-task means.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ._context import population_words

#: the level each of the three two-sided predictive p-values is read at (0.05 over three looks)
TASK_SPREAD_LEVEL = 0.05 / 3


def task_spread_text(fit: xr.DataTree, prob: float) -> str | None:
    """The check's sentence for the report (None where the fit cannot give it: no predictive draws or task labels)."""
    from ..bayes import task_spread_check

    if "posterior_predictive" not in fit.children:
        return None
    try:
        chk = task_spread_check(fit, prob=prob)
    except (ValueError, KeyError):  # not success counts per cell with their tasks: no task side to check
        return None
    p = 2 * np.minimum(chk["p_value"].values, chk["p_value_low"].values)
    p = np.minimum(p, 1.0)

    def stat(name: str, fmt: str) -> str:
        c = chk.sel(statistic=name)
        return (f"{float(c['observed']):{fmt}} against {float(c['predicted_mean']):{fmt}} predicted "
                f"([{float(c['predicted_lower']):{fmt}}, {float(c['predicted_upper']):{fmt}}], "
                f"p {float(p[list(chk['statistic'].values).index(name)]):.2g})")

    text = (f" Across the {chk.attrs['n_tasks']} tasks, all agents pooled (hierbench.bayes.task_spread_check; "
            f"{prob:.0%} predictive intervals, two-sided predictive p-values): the share no run solved "
            f"{stat('share_all_fail', '.1%')}, the share every run solved {stat('share_all_pass', '.1%')}, and "
            f"the sd of the tasks' success shares {stat('sd_task_share', '.3f')}.")
    if p.min() < TASK_SPREAD_LEVEL:
        shape = population_words(fit.attrs.get("hierbench_model")).shape
        text += (f" The model's task population{f' ({shape})' if shape else ''} does not hold these tasks' spread "
                 f"(p below 0.05 / 3 for {int((p < TASK_SPREAD_LEVEL).sum())} of the 3): its means for a new "
                 "task lean on that population, so the task bootstrap's per-task means are the numbers to quote "
                 "(Agent abilities).")
    else:
        text += " None of the three is at odds with the model's task population (each p at least 0.05 / 3)."
    return text
