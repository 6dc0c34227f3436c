"""pass@k and pass^k: unbiased estimators from repeated runs, in product form.

For a task run ``n`` times with ``c`` successes,

* pass^k (all of ``k`` attempts succeed; Yao et al. 2024, tau-bench) is
  estimated without bias by ``C(c, k) / C(n, k)``;
* pass@k (at least one of ``k`` attempts succeeds; Chen et al. 2021) by
  ``1 - C(n - c, k) / C(n, k)``.

Both ratios are the probability that ``k`` runs drawn without replacement
from the ``n`` observed ones are all successes (all failures). They are
computed as ``prod_{i<k} (a - i) / (n - i)``: every factor lies in [0, 1], so
nothing overflows and the result is exact to a few ulps for any ``n`` (tested
against :func:`math.comb` up to ``n = 10**4``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

import numpy as np
import xarray as xr

if TYPE_CHECKING:
    import pandas as pd

from ..._base import DEFAULT_PROB
from ..._base import K_TASKS_DIFFER
from ..._base import Result
from ..._base import UndefinedWarning
from ..._base import check_choice
from ..._base import check_dim
from ..._base import check_int
from ..._base import check_prob
from ..._base import cluster_codes
from ..._base import cluster_label
from ..._base import counts
from ..._base import interval_label
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from ..._docs import fill_doc
from .._inputs import with_counts_hash
from .._kernels import _pass_kernel
from ._logit_t import BOUND_FLAGS
from ._logit_t import flag_ladder
from ._logit_t import logit_t_bounds
from ._logit_t import warn_no_interval
from ._passk_cluster import cluster_interval

__all__ = [
    "InsufficientRunsWarning",
    "PassKResult",
    "pass_at_k",
    "pass_hat_k",
]


#: ``attrs["over"]`` of both estimators: what the interval ``ci`` targets
POPULATION_OVER = (
    "a new draw of tasks from the same population (tasks as the sampling unit; the estimate is "
    "the mean over the n_tasks observed tasks it could use)"
)
#: the same with task clusters: the clusters are the sampling unit
POPULATION_OVER_CLUSTERS = (
    "a new draw of task clusters from the same population (the {unit} as the sampling unit; the "
    "estimate is the mean over the n_tasks observed tasks it could use)"
)
#: the repr's closing sentence when the tasks behind the values differ across ``k``
_K_TASKS_DIFFER = f"{K_TASKS_DIFFER} (compare them on the tasks with at least max(k) runs)"


#: the repr's closing sentence when ``small_n="clip"`` cut k in some cells (``{cells}``: how many)
_K_CLIPPED = (
    "small_n='clip': {cells} hold tasks with fewer runs than k, taken at k_eff = min(k, n_runs) "
    "(`n_clipped`, down to `k_eff_min`): those rows are not {quantity} at the k shown but a mix with "
    "{quantity_eff}, another estimand"
)


class InsufficientRunsWarning(UndefinedWarning):
    """A task has fewer runs than ``k``: its unbiased pass@k / pass^k is undefined.

    Under ``small_n="nan"`` the task is NaN and left out of the mean; under
    ``small_n="clip"`` it enters at ``k_eff = min(k, n_runs)``, another estimand
    (the warning then counts the cells whose k was cut).
    """


# ---------------------------------------------------------------------------
# xarray wrappers
# ---------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class PassKResult(Result):
    """pass@k or pass^k per task and averaged over tasks.

    Attributes
    ----------
    estimate : xarray.DataArray
        Benchmark score: the mean of ``per_task`` over the tasks where it is
        defined, per agent (and ``k``). (Formerly ``mean``, still readable as
        a deprecated alias.)
    ci : xarray.DataArray
        An interval for **a new draw of tasks from the same population**, not
        for these tasks: its target is the population mean of the per-task
        pass^k (pass@k), ``E_t[p_t^k]``, the chance that ``k`` attempts at a
        task drawn afresh all succeed (one succeeds), which is also the
        expected score of a new task set. Its standard error counts the
        spread between tasks as well as the run noise within each, as a
        sample of tasks does (``attrs["tasks"] == "population"``); the
        average over these tasks alone (``"observed"``) would carry only the
        run noise and is narrower. Its like is
        ``hierbench.metrics.pass_hat_k(fit, population=True)``; the posterior
        over the observed tasks (``population=False``) is another quantity,
        and :func:`hierbench.compare.side_by_side` refuses that pair. At each
        ``k`` the mean averages only the tasks with at least ``k`` runs
        (``n_tasks``): a sample of the population as long as which tasks have
        enough runs does not depend on how hard they are.
        Student t interval (``n_tasks - 1`` df) on the logit scale,
        ``logit(m) +- t * se / (m (1 - m))`` mapped back, with the task-level
        standard error ``se = sd(per_task) / sqrt(n_tasks)`` (tasks as the
        sampling unit, run noise included through the per-task estimates):
        always inside [0, 1], and skewed like the estimate near 0 or 1
        (measured coverage at 95%: 0.95-0.96 with 8-50 tasks and symmetric
        per-task values, 0.97 for a pass^4 of 0.005 over 20 tasks, where the
        plain t interval gave 0.73 and went below 0), except in the cells
        ``ci_flag`` names a bound, where a bound that holds whatever the per-task
        values' law replaces it. Trailing dim
        ``ci_bound``, attrs ``ci_prob``, ``ci_kind`` (``"t"``, ``"bounded-mean"``
        where every cell carries the bound, ``"mixed"`` where both occur: the
        field ``ci_kind`` and ``to_frame()`` name each cell's kind and detail).
        With task clusters (``cluster``, a ``cluster`` coord by default) the
        clusters are the unit: the same logit t interval with the CR2
        cluster-robust standard error of the tasks' mean and Bell-McCaffrey
        df, and the bound taken over the clusters (in the same cells as
        without clusters); ``ci_flag`` adds ``"too few clusters"`` and, where
        the clusters carry the mean more evenly than independent tasks would
        (the CR2 variance of the mean below 0.5 times s^2 / N: simulated
        coverage about 0.82 there, 0.96 elsewhere,
        ``benchmarks/bench_even_clusters_flag.py``), the flag
        ``EVEN_CLUSTERS_FLAG`` of ``hierbench.freq._rates._logit_t`` ("the
        clusters carry the mean more evenly than independent tasks would ...:
        the t interval is kept, ..."); ``ci_detail`` names the clusters.
    ci_flag : xarray.DataArray
        Per cell, when its interval is not that t interval: ``"exact bound"``
        (every per-task estimate is 0, or every one 1, where the logit is
        infinite and a t interval would have zero width: the bound
        ``1 - (alpha / 2)^(1 / n_tasks)`` holds exactly);
        ``"bound: few tasks carry the mean"`` (the mean rests on fewer than
        ``min(10, n_tasks / 2)`` effective tasks, ``(sum y)^2 / sum y^2``:
        typically pass^k at a large k, a few tasks passing) or ``"bound: few
        tasks carry the failures (1 - mean)"`` (the same of ``1 - y``: a mean
        near 1, a few tasks failing); the t interval undercovers there, so the interval is the
        distribution-free bound of
        ``hierbench._numerics.bounded_mean_bounds``, of which
        the exact bound is the all-zero case); ``"bound: every task has the
        same value (no spread to measure)"`` (every per-task estimate equal
        strictly inside (0, 1), 1 of 2 runs passing on every task say: the
        standard error is 0 and the t interval would have zero width, so the
        same bound replaces it; with clusters also ``"bound: every cluster has
        the same mean (no spread to measure)"``, where the tasks differ but the
        clusters' means do not), ``"too few tasks"`` (fewer than 2: NaN); ``""``
        otherwise.
    per_task : xarray.DataArray
        The unbiased (or plug-in) estimate per (agent, task[, k]); NaN where
        the task was not run or had fewer than ``k`` runs.
    standard_error : xarray.DataArray
        The standard error used by ``ci`` (task-level, or cluster-robust with clusters).
    n_tasks : xarray.DataArray
        Tasks that entered ``estimate``.
    n_insufficient : xarray.DataArray
        Tasks excluded because ``0 < n_runs < k`` (only under ``small_n="nan"``).
    n_clipped : xarray.DataArray
        Tasks with ``0 < n_runs < k`` that entered the mean at ``k_eff =
        min(k, n_runs)`` instead (only under ``small_n="clip"`` with the
        unbiased estimator; 0 otherwise). A cell with ``n_clipped > 0`` is not
        pass@k (pass^k) at its ``k`` but a mix with pass@k_eff: a task run once
        contributes its pass@1. (The plug-in ``p^k`` takes any ``k`` and is
        never clipped.)
    k_eff_min : xarray.DataArray
        The smallest ``k`` a task of the cell was computed at: ``k`` itself
        where ``n_clipped`` is 0, else the fewest runs of a clipped task.
    n_not_run : xarray.DataArray
        Tasks excluded because the agent never ran them.
    ci_kind : xarray.DataArray
        The kind of each cell's interval: ``"t"`` (the logit t interval) or
        ``"bounded-mean"`` (the distribution-free bound, in the cells whose
        ``ci_flag`` names a bound); its ``ci_detail`` is the interval's
        ``ci_detail_t`` / ``ci_detail_bounded_mean`` attr.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    per_task: xr.DataArray
    standard_error: xr.DataArray
    n_tasks: xr.DataArray
    n_insufficient: xr.DataArray
    n_not_run: xr.DataArray
    ci_flag: xr.DataArray | None = None
    ci_kind: xr.DataArray | None = None
    n_clipped: xr.DataArray | None = None
    k_eff_min: xr.DataArray | None = None

    @property
    def mean(self) -> xr.DataArray:
        """Deprecated alias of ``estimate``."""
        warn_user(
            "PassKResult.mean is deprecated; use .estimate", DeprecationWarning,
        )
        return self.estimate

    def to_dataset(self) -> xr.Dataset:
        """All fields as one :class:`xarray.Dataset` (attrs of ``estimate`` carried over)."""
        ds = super().to_dataset()
        ds.attrs = {**self.estimate.attrs, **ds.attrs}
        return ds

    def to_frame(self) -> pd.DataFrame:
        """One row per cell; ``ci_kind`` and ``ci_detail`` name the interval each row carries."""
        df = super().to_frame()
        if self.ci_kind is not None:
            kinds = self.ci_kind.broadcast_like(self.estimate).transpose(*self.estimate.dims)
            kinds = np.asarray(kinds.values, dtype=object).ravel()
            df["ci_kind"] = kinds
            df["ci_detail"] = [self.ci.attrs.get(f"ci_detail_{k.replace('-', '_')}") for k in kinds]
        return df

    def _repr_lines(self) -> list[str]:
        """Each cell with the tasks it rests on and its flag; a sentence when those tasks differ across k."""
        a = self.estimate.attrs
        per_task = "plug-in" if "plug-in" in str(a.get("estimator", "")) else "unbiased"
        lines = [
            f"{type(self).__name__}: {a.get('quantity', '?')}, mean of the {per_task} per-task values, "
            f"{interval_label(self.ci)} interval for {str(a.get('over', POPULATION_OVER)).split(' (')[0]}"
        ]
        lines += self._cell_lines() + self._elided_flags(self.ci_flag)
        nt = self.n_tasks
        if "k" in nt.dims and nt.sizes["k"] > 1 and bool((nt != nt.isel(k=0)).any()):
            lines.append(f"  {_K_TASKS_DIFFER}")
        if self.n_clipped is not None and bool((self.n_clipped > 0).any()):
            hit = int((self.n_clipped.broadcast_like(self.estimate) > 0).sum())
            q = str(a.get("quantity", "pass@k"))
            lines.append("  " + _K_CLIPPED.format(
                cells=f"{hit} of {self.estimate.size} cells", quantity=q, quantity_eff=f"{q[:-1]}k_eff",
            ))
        return lines

    def _cell_notes(self) -> xr.DataArray:
        """``n tasks`` behind each cell, its ``ci_flag`` where it has one, and the tasks cut to ``k_eff`` or short of k."""
        est = self.estimate

        def flat(x: xr.DataArray | None) -> np.ndarray:
            return np.zeros(est.size, int) if x is None else x.broadcast_like(est).transpose(*est.dims).values.ravel()

        m = self.n_tasks.broadcast_like(est).transpose(*est.dims).astype(int)
        flags = flat(self.ci_flag) if self.ci_flag is not None else [""] * m.size
        short, clipped, k_min = flat(self.n_insufficient), flat(self.n_clipped), flat(self.k_eff_min)
        text = []
        for c, f, s, cl, ke in zip(m.values.ravel(), flags, short, clipped, k_min, strict=True):
            note = f"{c} task{'s' if c != 1 else ''}" + (f"; {f}" if f else "")
            if cl:
                note += f"; {'all' if cl == c else cl} at k_eff = n_runs < k (min k_eff {int(ke)})"
            elif s and c < 2:
                note += f"; {s} with fewer than k runs"
            text.append(note)
        return m.copy(data=np.array(text, dtype=object).reshape(m.shape))


def _counts_from(data: xr.Dataset | xr.DataArray, dim: str) -> tuple[xr.DataArray, xr.DataArray]:
    """(n, c) DataArrays through the one counts routine; partial credit is refused."""
    c = counts(data, dim=dim, binary=True, name="data", purpose="pass@k / pass^k")
    return c["n_runs"], c["n_success"]


def _interval(
    per_task: xr.DataArray, mean: xr.DataArray, se: xr.DataArray, n_tasks: xr.DataArray,
    prob: float, task_dim: str,
) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
    """The t interval on the logit scale (inside (0, 1)) and a flag per cell (``ci_flag``), tasks as the unit.

    ``logit(m) +- t * se / (m (1 - m))`` (the delta method, ``n_tasks - 1`` df), mapped back
    (``_logit_t.logit_t_bounds``, shared with the cluster path): it keeps to (0, 1) and
    follows the skew of a mean near 0 or 1. Measured coverage at 95% (4,000 replications,
    8 runs per task): per-task p ~ Beta(2, 2), pass^2, 8 / 20 / 50 tasks: 0.950 / 0.954 /
    0.958 (the plain t interval 0.922 / 0.937 / 0.950); p ~ Beta(0.5, 4), pass^4 = 0.005,
    20 tasks: 0.969 (plain t 0.725, a third of its intervals below 0); 80 tasks: 0.77
    (plain t 0.67: with so skewed a mean both fall short, prefer the bootstrap there).
    The flags and the cells the bound replaces: ``_logit_t.flag_ladder``.
    """
    m, s, n = (np.asarray(x.transpose(*mean.dims).values) for x in (mean, se, n_tasks))
    lo, hi = logit_t_bounds(m, s, np.where(n > 1, n - 1, np.nan), prob)
    few = _few_carry(per_task, task_dim).transpose(*mean.dims).values
    flag, bound = flag_ladder(m, s, n, few)
    total = per_task.sum(task_dim, skipna=True).transpose(*mean.dims).values
    b_lo, b_hi = _bounds_where(bound, total, n, prob)
    lo, hi = np.where(bound, b_lo, lo), np.where(bound, b_hi, hi)
    return mean.copy(data=lo), mean.copy(data=hi), mean.copy(data=flag).rename("ci_flag")


def mean_interval(
    per_task: xr.DataArray, mean: xr.DataArray, n_tasks: xr.DataArray, codes: np.ndarray | None, prob: float,
    task_dim: str,
) -> tuple[xr.DataArray, ...]:
    """``(se, lower, upper, ci_flag, df)`` of the mean of per-task values in [0, 1], per cell.

    The one rule of :func:`pass_hat_k` and ``success_rate``: with tasks as the unit (``codes``
    None) ``sd / sqrt(n)`` and ``_interval`` on ``n - 1`` df; with task clusters
    ``_passk_cluster.cluster_interval`` (CR2 SE, Bell-McCaffrey df). ``df`` is NaN where
    fewer than 2 units leave no interval.
    """
    if codes is None:  # tasks as the unit
        from .._kernels import exact_zero_spread

        with np.errstate(invalid="ignore", divide="ignore"):
            se = per_task.std(task_dim, ddof=1, skipna=True) / np.sqrt(n_tasks.where(n_tasks > 1))
        # equal values leave a rounding residue in their SD (2e-17 for twelve 0.1s): an exact 0, as the
        # cluster path's CR2 SE has it, so such a cell gets the bound (``flag_ladder``)
        scale = abs(per_task).max(task_dim, skipna=True).transpose(*se.dims)
        se = se.copy(data=exact_zero_spread(se.values, scale.values))
        lo, hi, flag = _interval(per_task, mean, se, n_tasks, prob, task_dim)
        return se, lo, hi, flag, (n_tasks - 1.0).where(n_tasks > 1)
    return cluster_interval(per_task, mean, codes, prob, task_dim)


def mean_skewness(u: np.ndarray) -> np.ndarray:
    """The skewness of a mean of independent units, from the units' deviations ``u`` (units on the last axis).

    ``u`` holds each unit's total deviation from the mean (a task's ``y - m``; a cluster's sum of
    its tasks' ``y - m``), NaN where a unit is absent. The skewness of the sum of ``n``
    independent terms is ``sum k3 / (sum k2)^(3/2)``; estimated by ``sum u^3 / (sum u^2)^(3/2)``
    times ``sqrt(n (n - 1)) / (n - 2)`` (the adjusted Fisher-Pearson factor), which for ``n``
    like units is the sample skewness ``G1`` over ``sqrt(n)``. NaN with fewer than 3 units or
    no spread.

    Examples
    --------
    >>> float(mean_skewness(np.array([-1.0, 0.0, 1.0])))
    0.0
    """
    u = np.asarray(u, dtype=float)
    ok = np.isfinite(u)
    n = ok.sum(-1).astype(float)
    v = np.where(ok, u, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        k = (v**3).sum(-1) / (v**2).sum(-1) ** 1.5 * np.sqrt(n * (n - 1)) / (n - 2)
    return np.where(n > 2, k, np.nan)


def skew_t_bounds(
    mean: np.ndarray, se: np.ndarray, skew: np.ndarray, df: np.ndarray, prob: float
) -> tuple[np.ndarray, np.ndarray]:
    """Hall's (1992) skewness-corrected t interval for a mean: ``m - h^-1(+-q) se``, inside [0, 1].

    The studentized mean ``T = (m - mu) / se`` of skewed values is skewed the other way (a
    sample that misses the long tail has a small mean and a small SE together), and the
    plain t interval then falls short on the side of the tail. Hall's monotone cubic
    ``h(T) = ((1 + a T)^3 - 1) / (3 a) + a / 2``, ``a = skew / 3`` (``skew``: the skewness of
    the mean, ``mean_skewness``), removes the first-order skewness from ``T`` (Johnson's
    1978 correction, made monotone), so ``q``, the Student t quantile on ``df``, is taken on
    ``h(T)``. The bounds are cut to [0, 1] (the values' range); ``skew`` 0 gives the t
    interval. NaN where any input is. Hall, P. (1992), On the removal of skewness by
    transformation, JRSS B 54, 221-228.

    Examples
    --------
    >>> lo, hi = skew_t_bounds(np.array([0.1]), np.array([0.02]), np.array([0.4]), np.array([29.0]), 0.95)
    >>> bool(hi[0] - 0.1 > 0.1 - lo[0])
    True
    """
    from scipy import stats

    m, s, k = (np.asarray(x, dtype=float) for x in (mean, se, skew))
    q = stats.t.ppf(0.5 + float(prob) / 2, np.asarray(df, dtype=float))
    a = k / 3.0

    def h_inv(x):
        with np.errstate(invalid="ignore", divide="ignore"):
            t = (np.cbrt(1.0 + 3.0 * a * (x - a / 2.0)) - 1.0) / a
        return np.where(np.abs(a) < 1e-8, x, t)  # the limit as a -> 0 (the cube root loses it below)

    return np.clip(m - h_inv(q) * s, 0.0, 1.0), np.clip(m - h_inv(-q) * s, 0.0, 1.0)


def _clusters(data, cluster: str | None, task_dim: str, n_tasks: int) -> tuple[np.ndarray | None, str | None]:
    """The tasks' cluster codes and the words for the clusters, or ``(None, None)`` (tasks as the unit).

    Through the one rule (``hierbench._base.cluster_codes``); every task its own cluster is
    no clustering, and gives the task-level interval itself.
    """
    cc = cluster_codes(data, cluster, dim=task_dim)
    if cc is None or len(cc[1]) == n_tasks:
        return None, None
    return cc[0], f"{len(cc[1])} clusters of `{cluster_label(data, cluster)}`"


def _ci(lo: xr.DataArray, hi: xr.DataArray, flag: xr.DataArray, prob: float, name: str, unit: str | None):
    """The interval, its kind named per cell: ``(ci, ci_kind)``.

    ``ci.attrs["ci_kind"]`` is the one kind of every cell, or ``"mixed"``; the detail of
    each kind is in ``ci_detail_t`` / ``ci_detail_bounded_mean`` (and ``ci_detail``).
    ``unit`` names the clusters (None: tasks are the unit).
    """
    kind = xr.where(flag.isin(BOUND_FLAGS), "bounded-mean", "t").astype(object).rename("ci_kind")
    details = {
        "t": "Student t on the logit scale (delta method, n_tasks - 1 df) over the per-task estimates, "
        "tasks as the unit (its target: a new draw of tasks from the same population)",
        "bounded-mean": "distribution-free bound for the mean of the per-task estimates (values in [0, 1], "
        "tasks independent; bounded_mean_bounds, any law), where every per-task value is 0 (or 1), every "
        "task has the same value (no spread: the t interval would have zero width) or few tasks carry the "
        "mean (the cell's `ci_flag`)",
    } if unit is None else {
        "t": f"Student t on the logit scale (delta method) over the per-task estimates, the {unit} as the "
        "unit: CR2 cluster-robust standard error of the tasks' mean, Bell-McCaffrey df (its target: a new "
        "draw of clusters of tasks from the same population); kept, with a `ci_flag`, where the clusters "
        "carry the mean more evenly than independent tasks would",
        "bounded-mean": "distribution-free bound for the mean of the per-task estimates taken over the "
        f"{unit} (clusters independent, any law within them): where few tasks carry the mean or every "
        "cluster has the same mean (no spread: the t interval would have zero width), bounded_mean_bounds "
        "of the cluster sums scaled into [0, 1] (wide when the clusters differ in size); where every "
        "per-task value is 0 (or 1), the no-success bound over the clusters (the cell's `ci_flag`)",
    }
    present = sorted(set(np.asarray(kind.values, dtype=object).ravel()))
    one = present[0] if len(present) == 1 else "mixed"
    detail = details[one] if one != "mixed" else (
        f"per cell (field `ci_kind`): {details['t']}; in the cells `ci_flag` names a bound, a "
        f"{details['bounded-mean']}"
    )
    details = {k: f"{name}: {v}" for k, v in details.items()}
    ci = make_interval(lo, hi, prob=prob, kind=one, detail=f"{name}: {detail}")
    ci.attrs.update({f"ci_detail_{k.replace('-', '_')}": v for k, v in details.items()})
    return ci, kind


def _few_carry(per_task: xr.DataArray, task_dim: str) -> xr.DataArray:
    """Cells whose mean (1) or failures (-1) rest on few tasks (``hierbench._numerics.few_carry_side``, tasks as units).

    There the t interval's standard error rests on those few values and falls
    short: in ``benchmarks/bench_passk_coverage.py`` (336 designs: 8-300 tasks,
    8-50 runs, k = 1-8, per-task rates from seven Beta laws) the logit t
    interval covered less than 93% in 63 of them (as little as 32%); with the
    bound in these cells, in 5 (the least 89.6%: 300 tasks, a pass^4 of 0.002).
    """
    from ..._numerics import few_carry_side

    return xr.apply_ufunc(few_carry_side, per_task, input_core_dims=[[task_dim]])


def _bounds_where(use: np.ndarray, total: np.ndarray, n: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bounded_mean_bounds` of the cells in ``use`` (NaN elsewhere); ``total`` the cells' sums."""
    from ..._numerics import bounded_mean_bounds

    lo, hi = np.full(np.shape(total), np.nan), np.full(np.shape(total), np.nan)
    at = use & (n > 0)
    if at.any():
        lo[at], hi[at] = bounded_mean_bounds(total[at], n[at].astype(np.int64), prob)
    return lo, hi


def _check_ks(k: Any) -> list[int]:
    """``k`` as a list of distinct positive ints; an empty or repeated ``k`` is refused by name."""
    ks = [k] if np.ndim(k) == 0 else list(k)
    if not ks:
        raise ValueError("`k` must be a positive integer or a non-empty sequence of them; got an empty sequence")
    out = []
    for kk in ks:
        try:
            out.append(check_int(kk, "k", min=1))
        except (TypeError, ValueError):
            raise ValueError(
                f"`k` must be a positive integer (or a sequence of them); got k={kk!r}"
            ) from None
    if len(set(out)) < len(out):
        again = sorted({v for v in out if out.count(v) > 1})
        raise ValueError(f"`k` must not repeat a value (each k is one row); got k={ks!r}, repeating {again}")
    return out


def _pass(
    data: xr.Dataset | xr.DataArray,
    k: int | Sequence[int],
    *,
    kind: Literal["at", "hat"],
    dim: str,
    task_dim: str,
    plugin: bool,
    small_n: Literal["nan", "clip"],
    prob: float,
    cluster: str | None = "auto",
) -> PassKResult:
    ks = _check_ks(k)
    check_choice(small_n, "small_n", ["nan", "clip"])
    prob = check_prob(prob)
    n, c = _counts_from(data, dim)
    check_dim(n, task_dim, "task_dim")
    name = "pass_at_k" if kind == "at" else "pass_hat_k"
    per_task, short = _per_task_values(n, c, ks, kind, plugin, small_n)
    n_short = short.sum(task_dim) if small_n == "nan" else xr.zeros_like(short.sum(task_dim))
    clipped = short & (small_n == "clip") & (not plugin)  # the plug-in p^k takes any k: nothing is cut
    n_clipped = clipped.sum(task_dim)
    k_eff_min = n.where(clipped).min(task_dim).fillna(clipped["k"]).astype(np.int64)
    if small_n == "nan" and bool(short.any()):
        _warn_short(short, ks, name)
    if bool(clipped.any()):
        _warn_clipped(clipped, n_clipped, k_eff_min, ks, name)
    n_not_run = (n == 0).sum(task_dim)
    defined = per_task.notnull()
    n_tasks = defined.sum(task_dim)
    mean = per_task.where(defined).sum(task_dim) / n_tasks.where(n_tasks > 0)
    codes, unit = _clusters(data, cluster, task_dim, n.sizes[task_dim])
    se, lo, hi, flag, _ = mean_interval(per_task, mean, n_tasks, codes, prob, task_dim)
    ci, ci_kind = _ci(lo, hi, flag, prob, name, unit)
    if np.ndim(k) == 0:
        per_task, mean, n_tasks, n_short, se, ci, flag, ci_kind, n_clipped, k_eff_min = (
            x.squeeze("k", drop=True)
            for x in (per_task, mean, n_tasks, n_short, se, ci, flag, ci_kind, n_clipped, k_eff_min)
        )
    warn_no_interval(name, flag, ci, n_tasks, n_short)
    attrs = {
        "estimator": f"{name} ({'plug-in' if plugin else 'unbiased'})",
        "small_n": small_n,
        "n_clipped_cells": int((n_clipped > 0).sum()),
        "quantity": "pass@k" if kind == "at" else "pass^k",
        "tasks": "population",
        "over": POPULATION_OVER if codes is None else POPULATION_OVER_CLUSTERS.format(unit=unit),
    }
    return PassKResult(
        estimate=mean.rename(name).assign_attrs(attrs),
        ci=ci,
        per_task=per_task.rename(name).assign_attrs(attrs),
        standard_error=se.rename("standard_error"),
        n_tasks=n_tasks.rename("n_tasks"),
        n_insufficient=n_short.rename("n_insufficient"),
        n_not_run=n_not_run.rename("n_not_run"),
        ci_flag=flag,
        ci_kind=ci_kind,
        n_clipped=n_clipped.rename("n_clipped"),
        k_eff_min=k_eff_min.rename("k_eff_min"),
    )


def _warn_short(short: xr.DataArray, ks: list, name: str) -> None:
    """Warn of the cells with ``0 < n_runs < k``, counted per ``k``: each ``k`` then averages other tasks."""
    per_k = short.sum([d for d in short.dims if d != "k"]).values.tolist()
    counted = ", ".join(f"k={kk}: {int(c)}" for kk, c in zip(ks, per_k, strict=True) if c)
    differ = (
        "; so the values at different k average different task sets (`n_tasks` per k)"
        if len(set(per_k)) > 1 else ""
    )
    warn_user(
        f"{int(short.sum())} (agent, task, k) cells have fewer runs than k (n_runs < k; {counted}); "
        f"their {name} is NaN and they are excluded from the mean (counted in `n_insufficient`){differ}. "
        "To estimate it at this k, give those tasks at least k runs (or ask for a smaller k). "
        "small_n='clip' would not: it takes each such task at k_eff = min(k, n_runs), which changes "
        "the estimand (a task run once enters with its pass rate, not its pass@k / pass^k).",
        InsufficientRunsWarning,
    )


def _warn_clipped(clipped: xr.DataArray, n_clipped: xr.DataArray, k_eff_min: xr.DataArray, ks: list,
                  name: str) -> None:
    """Warn that ``small_n="clip"`` cut k to n_runs: the cells counted, per ``k``, are another estimand."""
    quantity = "pass@k" if name == "pass_at_k" else "pass^k"
    per_k = clipped.sum([d for d in clipped.dims if d != "k"]).values.tolist()
    low = k_eff_min.where(n_clipped > 0).min([d for d in n_clipped.dims if d != "k"]).values.tolist()
    counted = ", ".join(
        f"k={kk}: {int(c)} (down to k_eff={int(lo)})" for kk, c, lo in zip(ks, per_k, low, strict=True) if c
    )
    rows = int((n_clipped > 0).sum())
    warn_user(
        f"{name}: small_n='clip' cut k to the task's n_runs in {int(clipped.sum())} (agent, task, k) cells "
        f"({counted}): those tasks enter at k_eff = min(k, n_runs), so the {rows} of {n_clipped.size} "
        f"rows holding them (`n_clipped` > 0) are not {quantity} at the k shown but a mix with "
        f"{quantity[:-1]}k_eff, another estimand (a task run once gives its pass rate). For {quantity} "
        "itself keep small_n='nan' (the tasks with at least k runs), or give every task k runs.",
        InsufficientRunsWarning,
    )


def _per_task_values(n, c, ks: list, kind: str, plugin: bool, small_n: str):
    """Per (agent, task, k) values and the mask of cells with ``0 < n_runs < k``."""
    vals, shorts = [], []
    for kk in ks:
        v, sh = _pass_kernel(n.values, c.values, int(kk), kind=kind, plugin=plugin, small_n=small_n)
        vals.append(v)
        shorts.append(sh)
    per_task = xr.DataArray(np.stack(vals, -1), dims=(*n.dims, "k"), coords=n.coords).assign_coords(
        k=np.asarray(ks, dtype=np.int64)
    )
    short = xr.DataArray(np.stack(shorts, -1), dims=per_task.dims, coords=per_task.coords)
    return per_task, short


@renamed_kwargs(dim="run_dim")
@fill_doc
def pass_hat_k(
    data: xr.Dataset | xr.DataArray,
    k: int | Sequence[int],
    *,
    run_dim: str = "run",
    task_dim: str = "task",
    plugin: bool = False,
    small_n: Literal["nan", "clip"] = "nan",
    prob: float = DEFAULT_PROB,
    cluster: str | None = "auto",
) -> PassKResult:
    """pass^k: the chance that ``k`` independent attempts at a task all succeed.

    Unbiased per task as ``C(c, k) / C(n, k)`` (product form), then averaged
    over tasks. The interval ``ci`` is for a new draw of tasks from the same
    population, not for these tasks alone (:class:`hierbench.freq.PassKResult`).

    Parameters
    ----------
    %(passk)s

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> counts = xr.Dataset({"n_runs": ("task", [10, 10, 10, 10]),
    ...                      "n_success": ("task", [3, 10, 0, 7])})
    >>> round(float(pass_hat_k(counts, 3).estimate), 3)
    0.325
    """
    res = _pass(
        data, k, kind="hat", dim=run_dim, task_dim=task_dim, plugin=plugin, small_n=small_n, prob=prob,
        cluster=cluster,
    )
    return with_counts_hash(res, data)


@renamed_kwargs(dim="run_dim")
@fill_doc
def pass_at_k(
    data: xr.Dataset | xr.DataArray,
    k: int | Sequence[int],
    *,
    run_dim: str = "run",
    task_dim: str = "task",
    plugin: bool = False,
    small_n: Literal["nan", "clip"] = "nan",
    prob: float = DEFAULT_PROB,
    cluster: str | None = "auto",
) -> PassKResult:
    """pass@k: the chance that at least one of ``k`` independent attempts succeeds.

    Unbiased per task as ``1 - C(n - c, k) / C(n, k)`` (product form), then
    averaged over tasks. The interval ``ci`` is for a new draw of tasks from the same
    population, not for these tasks alone (:class:`hierbench.freq.PassKResult`).

    Parameters
    ----------
    %(passk)s

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> counts = xr.Dataset({"n_runs": ("task", [10, 10, 10, 10]),
    ...                      "n_success": ("task", [3, 10, 0, 7])})
    >>> round(float(pass_at_k(counts, 3).estimate), 3)
    0.675
    """
    res = _pass(
        data, k, kind="at", dim=run_dim, task_dim=task_dim, plugin=plugin, small_n=small_n, prob=prob,
        cluster=cluster,
    )
    return with_counts_hash(res, data)

