"""How the tasks' success shares spread: observed against the posterior predictive, a check of the task population.

The per-agent check (:func:`hierbench.bayes.predictive_check`) compares each agent's histogram
of success counts per cell; with one run per cell it says nothing (each agent's own effect fits
its success rate by construction). The task side still can: pooled over the agents, each task
has a success share ``S_t / N_t`` (successes over runs, all agents together), and a model's task
population (normal on the logit scale in the crossed models) predicts how many tasks no run
solves, how many every run solves, and how far the shares spread. SWE-bench bash-only holds many
tasks that every or no model solves; a normal task population that cannot hold them moves the
model's mean for a new task (audit B: its Bayes abilities 0.03-0.06 below the per-task means).

This module imports numpy and xarray only.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import check_prob

__all__ = ["task_spread_check"]

#: the statistics, in the order of the result's ``statistic`` dim, and what each measures
STATISTICS = {
    "share_all_fail": "share of tasks no run solved",
    "share_all_pass": "share of tasks every run solved",
    "sd_task_share": "sd over tasks of their success share",
}
#: at most this many predictive draws are read (evenly spaced): the statistics' quantiles need no more
MAX_DRAWS = 1000


def _statistics(s: np.ndarray, n: np.ndarray) -> np.ndarray:
    """The three statistics of task sums ``s`` (..., task) with runs ``n`` (task,), stacked last."""
    share = s / n
    return np.stack([(s == 0).mean(-1), (s == n).mean(-1), share.std(-1)], axis=-1)


def _task_sums(values: np.ndarray, order: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Sums over the cells of each task (cells sorted by task: ``order``; ``starts`` each task's first)."""
    return np.add.reduceat(values[..., order], starts, axis=-1)


def task_spread_check(
    fit: xr.DataTree, *, group: str = "posterior_predictive", var_name: str | None = None, prob: float = DEFAULT_PROB
) -> xr.Dataset:
    """Observed against predicted spread of the tasks' success shares (all agents pooled).

    Parameters
    ----------
    fit : xarray.DataTree
        A fit of success counts per cell (``observed_data`` over ``cell`` with coord
        ``cell_task``, ``constant_data`` with ``cell_n_runs``) and its ``group``.
    group : {"posterior_predictive", "prior_predictive"}
    var_name : str, optional
        The observed variable; default the only one.
    prob : float
        Level of the predictive equal-tailed interval.

    Returns
    -------
    xarray.Dataset
        Over ``statistic`` (``share_all_fail``, ``share_all_pass``, ``sd_task_share``; what
        each is in the coord ``meaning``): ``observed``, ``predicted_mean``,
        ``predicted_lower`` / ``predicted_upper`` (the ``prob`` equal-tailed interval over
        draws), ``p_value`` (``P(pred >= obs)``) and ``p_value_low`` (``P(pred <= obs)``);
        attrs ``n_tasks``, ``n_draws`` (draws read) and ``band_prob``.

    Examples
    --------
    >>> cells = {"cell": [0, 1, 2, 3], "cell_task": ("cell", ["a", "a", "b", "b"])}
    >>> obs = xr.Dataset({"y": ("cell", [0, 0, 1, 1])}, coords=cells)
    >>> pp = xr.Dataset({"y": (("chain", "draw", "cell"), [[[0, 1, 1, 0], [1, 1, 0, 0]]])}, coords=cells)
    >>> const = xr.Dataset({"cell_n_runs": ("cell", [1, 1, 1, 1])}, coords=cells)
    >>> dt = xr.DataTree.from_dict({"observed_data": obs, "posterior_predictive": pp, "constant_data": const})
    >>> chk = task_spread_check(dt)
    >>> chk["observed"].values.tolist(), chk["predicted_mean"].values.tolist()
    ([0.5, 0.5, 0.5], [0.25, 0.25, 0.25])
    """
    prob = check_prob(prob)
    if group not in fit.children or "observed_data" not in fit.children or "constant_data" not in fit.children:
        raise ValueError(f"`fit` must hold the groups observed_data, constant_data and {group!r}; it holds "
                         f"{list(fit.children)}")
    obs = fit["observed_data"].to_dataset()
    if var_name is None:
        if len(obs.data_vars) != 1:
            raise ValueError(f"`var_name` is required when observed_data has several variables: {list(obs.data_vars)}")
        var_name = next(iter(obs.data_vars))
    y = obs[var_name]
    if "cell" not in y.dims or "cell_task" not in y.coords:
        raise ValueError(f"`fit`'s observed {var_name!r} must be success counts over dim `cell` with coord `cell_task` "
                         f"(a count model's fit); got dims {list(y.dims)}, coords {sorted(map(str, y.coords))}")
    tasks = np.asarray(y["cell_task"].values).astype(str)
    order = np.argsort(tasks, kind="stable")
    starts = np.flatnonzero(np.r_[True, tasks[order][1:] != tasks[order][:-1]])
    n = _task_sums(fit["constant_data"].to_dataset()["cell_n_runs"].values.astype(np.int64), order, starts)
    da = fit[group].to_dataset()[var_name].transpose("chain", "draw", "cell")
    flat = np.unique(np.linspace(0, da.sizes["chain"] * da.sizes["draw"] - 1,
                                 min(MAX_DRAWS, da.sizes["chain"] * da.sizes["draw"])).round().astype(int))
    chain, draw = np.divmod(flat, da.sizes["draw"])
    pred = da.values[chain, draw]  # only the draws read
    o = _statistics(_task_sums(y.values.astype(np.int64), order, starts), n)
    p = _statistics(_task_sums(pred.astype(np.int64), order, starts), n)
    lo, hi = np.quantile(p, [(1 - prob) / 2, (1 + prob) / 2], axis=0)
    dims = ("statistic",)
    return xr.Dataset(
        {"observed": (dims, o), "predicted_mean": (dims, p.mean(0)), "predicted_lower": (dims, lo),
         "predicted_upper": (dims, hi), "p_value": (dims, (p >= o).mean(0)), "p_value_low": (dims, (p <= o).mean(0))},
        coords={"statistic": list(STATISTICS), "meaning": ("statistic", list(STATISTICS.values()))},
        attrs={"group": group, "var_name": var_name, "band_prob": prob, "n_tasks": int(n.size),
               "n_draws": int(p.shape[0])},
    )
