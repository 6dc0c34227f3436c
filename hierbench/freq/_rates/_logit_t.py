"""The one pass@k / pass^k interval and its ``ci_flag`` ladder, tasks or task clusters as the unit.

Both paths (tasks one by one in ``_passk``, task clusters in ``_passk_cluster``)
compute the mean ``m`` of the per-task values, its standard error ``se`` and
degrees of freedom ``df``, and then the same logit-scale Student t interval
``expit(logit(m) +- t_df * se / (m (1 - m)))`` (``logit_t_bounds``) and the
same ladder of flags (``flag_ladder``), which also says in which cells the
distribution-free bound replaces that interval. Only ``se``, ``df``, the bound
and the even-clusters test differ between the paths.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__: list[str] = []

#: ``ci_flag`` of a cell whose mean rests on a few tasks: its interval is the bound (with or without clusters)
FEW_CARRY_FLAG = "bound: few tasks carry the mean"

#: the same where the failures rest on a few tasks (a mean near 1, the rule taken on ``1 - y``)
FEW_FAIL_FLAG = "bound: few tasks carry the failures (1 - mean)"

#: the flag's rule: ``deff < EVEN_CLUSTERS_SHARE`` (``even_clusters``), ``deff`` the cluster-robust variance of
#: the mean over the variance it would have if the tasks were independent (1 where every task is its own cluster)
EVEN_CLUSTERS_SHARE = 0.5

#: ``ci_flag`` of a cell whose clusters carry the mean more evenly than independent tasks would (``even_clusters``),
#: the one definition of that flag (the report and the demo quote it): what it marks (a t interval kept, not a
#: bound, whose cluster-robust standard error is likely short) and the coverage such intervals had in
#: benchmarks/bench_even_clusters_flag.py, with the designs that figure covers (``even_clusters``). No "; " in it:
#: the report joins a row's flags with "; ".
EVEN_CLUSTERS_FLAG = (
    "the clusters carry the mean more evenly than independent tasks would (cluster-robust variance below "
    f"{EVEN_CLUSTERS_SHARE:g} times the independent-task variance): the t interval is kept, and such 95% intervals "
    "covered about 0.82 (0.80-0.86 by size design and G) in benchmarks/bench_even_clusters_flag.py (4-32 clusters "
    "of 1-18 tasks, equal or random sizes, pass rates 0.1-0.8, k 1-2)"
)

#: ``ci_flag`` of a cell whose every task has the same value strictly inside (0, 1) (1 of 2 runs passing on
#: every task, say): the standard error is 0, so the t interval would have zero width; the bound replaces it
SAME_VALUE_FLAG = "bound: every task has the same value (no spread to measure)"

#: the same where the tasks differ but every cluster has the same mean (clusters as the unit: CR2 SE 0)
SAME_CLUSTER_MEAN_FLAG = "bound: every cluster has the same mean (no spread to measure)"

#: the ``ci_flag`` values of the cells whose interval is the bound (``ci_kind = "bounded-mean"``)
BOUND_FLAGS = ("exact bound", FEW_CARRY_FLAG, FEW_FAIL_FLAG, SAME_VALUE_FLAG, SAME_CLUSTER_MEAN_FLAG)

#: the ``ci_flag`` values of the cells with no interval (NaN): fewer than 2 tasks, or 2 clusters, to measure spread
FEW_UNITS_FLAGS = ("too few tasks", "too few clusters")


def logit_t_bounds(
    mean: np.ndarray, se: np.ndarray, df: np.ndarray, prob: float
) -> tuple[np.ndarray, np.ndarray]:
    """``expit(logit(m) -+ t_df * se / (m (1 - m)))``: the t interval on the logit scale (delta method).

    ``df`` NaN (too few tasks or clusters) gives NaN ends; ``m`` of 0 or 1 gives NaN or a
    zero-width interval (those cells carry the bound instead: ``flag_ladder``).
    """
    from scipy import stats
    from scipy.special import expit
    from scipy.special import logit

    with np.errstate(invalid="ignore", divide="ignore"):
        half = stats.t.ppf(0.5 + prob / 2, df) * se / (mean * (1 - mean))
        return expit(logit(mean) - half), expit(logit(mean) + half)


def even_clusters(deff: np.ndarray | float, n_clusters: np.ndarray | float) -> np.ndarray:
    """Whether the ``G >= 2`` clusters carry the mean more evenly than independent tasks: ``deff < EVEN_CLUSTERS_SHARE``.

    ``deff = SE^2 / (s^2 / N)`` is the design effect of the mean: the cluster-robust (CR2)
    variance over the variance of the mean of ``N`` independent tasks (``s^2`` their sample
    variance). It is 1 where every task is its own cluster, and below 1 where the cluster sums
    are more alike than independent tasks of those sizes would make them: chance has then made
    the cluster-robust standard error short. NaN ``deff`` (no spread to measure) is not flagged.
    Unlike the rule before 2026-12-07 (``n_eff >= 0.75 G`` over the raw cluster sums, which
    fired on many agents where clusters were of one size: 19-55% of the t rows in that
    benchmark, 88-100% in audit T's designs, finding 1), it does not read equal cluster sizes
    as even clusters. Calibrated in ``benchmarks/bench_even_clusters_flag.py``
    (``--reps 100 --seed 18``: 4-32 clusters of 3 or 10 tasks each or of random sizes 1-5 or
    2-18, cluster effect sd 0-1 and task effect sd 0.5-1 on the logit scale, pass rates
    0.1-0.8, k = 1, 2): the 95% t rows' coverage by ``deff`` was nearly the same in the four
    size designs; below 0.5 it was 0.825 +- 0.006 (4.6% of the t rows; 0.80-0.83 in each size
    design, 0.80-0.86 at each G), against 0.961 +- 0.001 in the other t rows.
    """
    g = np.asarray(n_clusters, dtype=float)
    with np.errstate(invalid="ignore"):
        return (g > 1) & (np.asarray(deff, dtype=float) < EVEN_CLUSTERS_SHARE)


def flag_ladder(
    mean: np.ndarray,
    se: np.ndarray,
    n_tasks: np.ndarray,
    few_tasks: np.ndarray,
    n_clusters: np.ndarray | None = None,
    even_clust: np.ndarray | None = None,
    same_tasks: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(ci_flag, bound)`` per cell: the flag and whether the distribution-free bound replaces the t interval.

    From the lowest rung to the highest (a later rung overrides): ``EVEN_CLUSTERS_FLAG``
    (``even_clust`` and the t interval kept), ``SAME_VALUE_FLAG`` or ``SAME_CLUSTER_MEAN_FLAG``
    (``se`` 0 with at least 2 units and a mean strictly inside (0, 1): the t interval would have
    zero width, so the bound), ``"too few clusters"`` (fewer than 2; clusters only), ``"too few
    tasks"`` (fewer than 2), ``FEW_CARRY_FLAG`` or ``FEW_FAIL_FLAG`` (``few_tasks``: the bound),
    ``"exact bound"`` (mean 0 or 1: every per-task value 0 or 1, the bound). ``n_clusters``
    None: tasks are the unit. ``few_tasks`` is :func:`hierbench._numerics.few_carry_side` per
    cell: 1 where few tasks carry the mean, -1 where few carry the failures, 0 where neither.
    ``se`` must be exactly 0 where the units have no spread (the rounding residue of a sum set to
    0: ``hierbench.freq._kernels.exact_zero_spread``). ``same_tasks`` (clusters only): the cells
    whose every task has one value, flagged ``SAME_VALUE_FLAG`` rather than the clusters' flag.
    """
    n_tasks = np.asarray(n_tasks)
    units = n_tasks if n_clusters is None else np.asarray(n_clusters)
    all01 = ((mean == 0) | (mean == 1)) & (units > 0)
    side = np.asarray(few_tasks)
    flat = (np.asarray(se) == 0) & (units > 1) & ~all01  # the t interval would be [m, m]
    bound = all01 | (side != 0) | flat
    flag = np.full(np.shape(mean), "", dtype=object)
    if even_clust is not None:
        flag[np.asarray(even_clust, dtype=bool) & ~bound] = EVEN_CLUSTERS_FLAG
    same = np.ones(np.shape(mean), bool) if same_tasks is None else np.asarray(same_tasks, dtype=bool)
    flag[flat & same] = SAME_VALUE_FLAG
    flag[flat & ~same] = SAME_CLUSTER_MEAN_FLAG
    if n_clusters is not None:
        flag[units < 2] = "too few clusters"
    flag[n_tasks < 2] = "too few tasks"
    flag[(side == 1) & ~all01] = FEW_CARRY_FLAG
    flag[(side == -1) & ~all01] = FEW_FAIL_FLAG
    flag[all01] = "exact bound"
    return flag, bound


def warn_no_interval(
    name: str, flag: xr.DataArray, ci: xr.DataArray, n_tasks: xr.DataArray, n_short: xr.DataArray | None = None,
) -> None:
    """One ``UndefinedWarning`` per call naming the cells whose interval is NaN for want of 2 tasks (or clusters).

    The cells ``flag_ladder`` marks ``FEW_UNITS_FLAGS`` and whose ``ci`` is NaN: an interval for a
    new draw of tasks (clusters) needs the spread of at least 2 of them. The repr's note alone
    did not reach a reader of ``.ci`` or ``to_frame()`` (audit S finding 7). ``n_short``
    (pass@k / pass^k): the tasks per cell left out for ``0 < n_runs < k``; a cell short of 2
    tasks that has such tasks lacks runs, not tasks, and the warning says so (no task, or 1, has
    k runs: the remedy is more runs or a smaller k), without the advice to give more tasks
    (audit K finding 6).
    """
    from ..._base import UndefinedWarning
    from ..._base import warn_user

    dims = flag.dims
    nan = ci.isnull().any("ci_bound").transpose(*dims).values
    why = np.asarray(flag.values, dtype=object)
    hit = np.isin(why, FEW_UNITS_FLAGS) & nan
    if not hit.any():
        return
    n = n_tasks.broadcast_like(flag).transpose(*dims).values
    short = (np.zeros(np.shape(n), int) if n_short is None
             else n_short.broadcast_like(flag).transpose(*dims).values)  # fmt: skip
    runs = hit & (why == "too few tasks") & (short > 0)  # tasks enough, runs too few
    said = []
    for ix in zip(*np.nonzero(hit), strict=True) if hit.ndim else [()]:
        at = [flag[d].values[i] if d in flag.coords else i for d, i in zip(dims, ix, strict=True)]
        label = ", ".join(str(v) if j == 0 else f"{d}={v}" for j, (d, v) in enumerate(zip(dims, at, strict=True)))
        k = int(n[ix])
        what = f"{k} task{'' if k == 1 else 's'}" if why[ix] == "too few tasks" else f"its {k} tasks in 1 cluster"
        if runs[ix]:
            what = f"{k} task{'' if k == 1 else 's'} with k runs, {int(short[ix])} with fewer"
        said.append(f"{label or 'the estimate'} ({what})")
    shown = ", ".join(said[:10]) + (f" and {len(said) - 10} more" if len(said) > 10 else "")
    text = f"{name}: the interval is NaN for {len(said)} of {hit.size} cells: {shown}."
    if runs.any():
        none = bool((n[runs] == 0).all())
        text += (
            f" {'In those cells' if runs.sum() == hit.sum() else f'In {int(runs.sum())} of them'} "
            f"{'no task has' if none else 'fewer than 2 tasks have'} k runs (the tasks with fewer are counted "
            "in `n_insufficient`): the remedy is more runs per task (at least k) or a smaller k, not more tasks."
        )
    rest = hit & ~runs
    if rest.any():
        clustered = bool((why[rest] == "too few clusters").any())
        advice = ("give tasks from 2 or more clusters, or cluster=None to take the tasks as independent draws "
                  "(which 1 cluster cannot show)") if clustered else "give 2 or more tasks"
        text += (
            f"{' In the other cells, an' if runs.any() else ' An'} interval for a new draw of tasks needs the "
            f"spread of at least 2 tasks (2 clusters when the tasks are clustered): {advice}."
        )
    warn_user(text, UndefinedWarning)
