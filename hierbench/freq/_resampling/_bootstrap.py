"""The task-level (cluster) bootstrap over the agent x task x run array.

Every resample is a matrix of integer *task weights* ``w[b, t]`` (how often
task ``t`` was drawn in resample ``b``; whole clusters are drawn when the
tasks have a ``cluster`` coord), shared by all agents. A statistic that is a
mean over tasks is then a ratio of two matrix products, so 10,000 resamples
of 25 agents cost a few matrix multiplications and no Python loop runs per
resample. The jackknife for BCa is the same computation with leave-one-out
weights ``1 - e_t`` (``1 - e_cluster`` when clustered).

Ragged data are handled as they are: a cell's value is the mean of the runs
that happened (any number from 1 up), and a task an agent never ran simply
carries no weight for that agent. Nothing is padded.

A callable statistic ``f(values, weights)`` of :func:`bootstrap_ci` must be
vectorised over resamples:

* ``values``: array ``(b, U, T)`` of per-task mean scores (``U`` agents, or
  pairs when ``pairs`` is given, where a pair's value is the per-task
  difference); NaN where a task is not available. For ``scheme="tasks"`` the
  leading axis has length 1 (the data are fixed).
* ``weights``: float array ``(b, T)``, the multiplicity of each task in each
  resample (all ones for the observed data and ``scheme="runs"``,
  leave-one-out rows for the jackknife); ``(b, U, T)`` when ``paired=False``.
* return: array ``(b,)`` (a scalar statistic) or ``(b, U)``.

In ``"two-stage"``, a task drawn ``w`` times gets ``w`` independent run
resamples and ``values`` holds their average; this is exact for any statistic
that is linear in the task weights.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Literal

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import Result
from ..._base import UndefinedWarning
from ..._base import as_rng
from ..._base import check_choice
from ..._base import check_prob
from ..._base import cluster_codes
from ..._base import cluster_label
from ..._base import counts as cell_counts
from ..._base import interval_label
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from ..._docs import fill_doc
from .._inputs import score_array
from .._inputs import with_counts_hash
from .._kernels import DegenerateBootstrapWarning
from .._kernels import few_clusters_attrs
from .._kernels import warn_bca_undefined
from .._kernels import warn_undefined_counts
from .._kernels import warn_undefined_resamples
from .._rates import EmptySampleWarning
from .._rates import InsufficientRunsWarning
from ._bootstrap_engine import StatisticFn
from ._bootstrap_engine import _Cells
from ._bootstrap_engine import _cells_from
from ._bootstrap_engine import _distribution
from ._bootstrap_engine import _limits
from ._bootstrap_engine import _Plan
from ._bootstrap_engine import _summaries

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "BootstrapResult",
    "DegenerateBootstrapError",
    "DegenerateBootstrapWarning",
    "UndefinedResampleWarning",
    "bootstrap_ci",
]

Scheme = Literal["tasks", "runs", "two-stage"]
Method = Literal["percentile", "bca"]


class DegenerateBootstrapError(HierbenchError):
    """The resampling scheme cannot vary the data.

    With one task or cluster, or one run per cell, every resample equals the data
    and the interval would have zero width.
    """


class UndefinedResampleWarning(UndefinedWarning):
    """In some resamples the statistic was undefined (e.g. an agent drew none of its tasks)."""


@dataclass(frozen=True, repr=False)
class BootstrapResult(Result):
    """A benchmark statistic with its bootstrap interval and distribution.

    Returned by :func:`hierbench.freq.bootstrap_ci` and by the functions built
    on it (:func:`hierbench.freq.mean_ci`,
    :func:`hierbench.freq.compare_rubric_means`).

    Attributes
    ----------
    estimate : xarray.DataArray
        The statistic on the observed data (dims ``agent`` or ``pair`` or none).
    ci : xarray.DataArray
        The interval, trailing dim ``ci_bound = ["lower", "upper"]``, attrs
        ``ci_prob``, ``ci_kind`` (``"percentile"`` or ``"bca"``) and
        ``ci_detail`` (scheme, resampling unit, number of resamples).
    distribution : xarray.DataArray
        The bootstrap distribution, leading dim ``resample`` (left out of
        :meth:`to_frame`; kept by :meth:`to_dataset`).
    standard_error : xarray.DataArray
        Standard deviation of the bootstrap distribution (``ddof=1``).
    n_tasks : xarray.DataArray
        Tasks that entered the statistic (for each agent or pair).
    n_excluded : xarray.DataArray
        Tasks left out: not run by the agent (or by one agent of a pair), and,
        for pass^k / pass@k, those with fewer runs than ``k`` (``n_insufficient``
        counts these apart).
    n_insufficient : xarray.DataArray or None
        For ``statistic="pass_hat_k"`` / ``"pass_at_k"``: the tasks left out
        because ``0 < n_runs < k`` (for a pair, tasks both agents ran where one
        has fewer than ``k`` runs), as ``PassKResult.n_insufficient`` counts them:
        the statistic averages ``n_tasks`` of the ``n_tasks + n_insufficient``
        tasks run, a pass^k of the tasks with at least ``k`` runs. None for
        ``"mean"`` and a callable.
    n_undefined : xarray.DataArray
        Resamples where the statistic was undefined (they are left out of the
        quantiles; a :class:`UndefinedResampleWarning` says so). An agent or
        pair with no task in the statistic (no runs at all, say) is undefined
        in every resample and on the data: its estimate and interval are NaN,
        ``n_tasks`` is 0, and an :class:`hierbench.freq.EmptySampleWarning`
        names it instead.
    bias_correction, acceleration : xarray.DataArray or None
        BCa's ``z0`` and ``a`` (``method="bca"`` only).
    ci_flag : xarray.DataArray or None
        Per agent, for the built-in statistics resampled over tasks (or
        clusters): ``"every task scored 0"`` (or 1, or the one value every
        task has; ``"every task's pass^2 is 0"`` for pass^k) where that makes
        the interval zero-width (percentile) or undefined (BCa): no resample
        can differ, so the interval measures nothing (a ``ZeroWidthIntervalWarning``, a
        :class:`hierbench.SmallSampleWarning`, names those agents; for 0/1
        scores ``pass_hat_k(data, 1)`` gives a distribution-free bound, the exact one at 0 or 1); else ``"few tasks carry the mean"`` where the mean rests on
        fewer than ``min(10, n / 2)`` effective tasks (``"few tasks carry the failures (1 - mean)"``
        where the failures do, a mean near 1) (the rule
        :func:`hierbench.freq.pass_hat_k` replaces its t interval by): there
        a resampling interval falls short (400 agents, 76 tasks x 6 runs,
        per-task rates Beta(0.3, 30), mean 0.0099: percentile 0.882, BCa 0.877
        at 95%; ``benchmarks/bench_passk_coverage.py --bootstrap``), and ``pass_hat_k(data, 1)`` gives a bound that holds for
        independent tasks; ``""`` otherwise. None for pairs, custom statistics
        and ``scheme="runs"``.
    attrs : dict
        The settings (statistic, scheme, method, resamples, unit; ``k`` for
        pass^k / pass@k) and, for the built-in statistics, what the estimate is: ``scale`` (``"probability"``
        for 0/1 scores and pass^k / pass@k, ``"score"`` otherwise),
        ``quantity`` (``"mean score"``, ``"pass^k"``, ``"pass@k"``, or the
        difference of one for pairs; for the values of a DataArray named other
        than ``score``, as :func:`hierbench.freq.mean_ci` passes them, the scale is
        that name and the quantity ``"mean cost"``, say) and ``tasks`` (``"population"``: the
        interval is for a new draw of tasks from the same population, as
        resampling tasks makes it; ``"observed"`` for ``scheme="runs"``).
        Where clusters are resampled: ``n_clusters``, ``n_clusters_effective``
        (their worth in equal clusters by size, ``(sum n_g)^2 / sum n_g^2``)
        and ``few_clusters``, the text of the warning given where that is
        below 20 (``""`` otherwise; see :func:`hierbench.freq.bootstrap_ci`).
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    distribution: xr.DataArray
    standard_error: xr.DataArray
    n_tasks: xr.DataArray
    n_excluded: xr.DataArray
    n_undefined: xr.DataArray
    bias_correction: xr.DataArray | None = None
    acceleration: xr.DataArray | None = None
    ci_flag: xr.DataArray | None = None
    n_insufficient: xr.DataArray | None = None
    attrs: dict = field(default_factory=dict)

    def to_frame(self) -> pd.DataFrame:
        """One row per agent (or pair): estimate, interval ends, SE and counts (no resamples)."""
        df = super().to_frame()
        return df.drop(columns=[c for c in ("distribution",) if c in df.columns])

    def _cell_notes(self) -> xr.DataArray | None:
        """Each flagged agent's ``ci_flag`` (one dim; the base repr puts it after the agent's line)."""
        flag = self.ci_flag
        return flag if flag is not None and flag.ndim == 1 else None

    def _repr_lines(self) -> list[str]:
        """What was estimated and resampled (``_header``), each output's line, the flagged ones it hides."""
        lines = [f"{type(self).__name__}: {self._header()}", *super()._repr_lines()[1:]]
        return lines + self._elided_flags(self._cell_notes())

    def _header(self) -> str:
        """``mean cost, 95% percentile interval for a new draw of tasks, resampling 12 clusters of `repo```.

        The quantity (a callable's name where there is none), the interval, the tasks it is
        for and the unit resampled, all from ``attrs``.
        """
        a = self.attrs
        what = a.get("quantity") or f"statistic {a.get('statistic', '?')}"
        unit, n_clusters = a.get("resample_unit", "task"), a.get("n_clusters")
        units = f"{n_clusters} clusters of `{a.get('cluster_column')}`" if unit == "cluster" and n_clusters else f"{unit}s"
        if a.get("scheme") == "runs":
            how = "these tasks, resampling the runs within each (agent, task) cell"
        else:
            drawn = "task clusters" if unit == "cluster" else "tasks"
            how = f"a new draw of {drawn}, resampling {units}" + (", then runs within each" if a.get("scheme") == "two-stage" else "")
        return f"{what}, {interval_label(self.ci)} interval for {how}"



# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------


def _check_arguments(statistic, k, scheme: str, method: str, n_resamples, prob) -> tuple[float, bool]:
    """Validate the plain arguments; returns ``(prob, builtin)``."""
    check_choice(scheme, "scheme", ["tasks", "runs", "two-stage"])
    check_choice(method, "method", ["percentile", "bca"])
    if not (isinstance(n_resamples, (int, np.integer)) and n_resamples >= 2):
        raise ValueError(f"`n_resamples` must be an integer >= 2; got {n_resamples!r}")
    prob = check_prob(prob)
    builtin = isinstance(statistic, str)
    if builtin and statistic not in ("mean", "pass_hat_k", "pass_at_k"):
        raise ValueError(
            f"`statistic` must be 'mean', 'pass_hat_k', 'pass_at_k' or a callable; got {statistic!r}"
        )
    if not builtin and not callable(statistic):
        raise TypeError(f"`statistic` must be a string or a callable; got {type(statistic).__name__}")
    if builtin and statistic != "mean":
        if k is None or int(k) != k or k < 1:
            raise ValueError(f"`k` must be a positive integer for statistic={statistic!r}; got k={k!r}")
    if builtin and statistic == "mean" and k is not None:
        raise ValueError(f"`k` is only used with statistic='pass_hat_k' or 'pass_at_k'; got k={k!r} with 'mean'")
    return prob, builtin


def _check_cells(cells: _Cells, data, statistic, builtin: bool, k, scheme: str, dim: str) -> None:
    """Refuse partial credit where binary scores are needed; warn about cells with n < k."""
    if scheme != "tasks" and not cells.binary and cells.packed is None:
        raise ValueError(
            f"scheme={scheme!r} resamples runs, which needs the runs themselves: pass the eval dataset, "
            "not counts with partial-credit (non-integer) sums"
        )
    if builtin and statistic != "mean" and not cells.binary:
        # the one counts routine names the partial-credit cells (PartialCreditError)
        cell_counts(
            data if isinstance(data, xr.Dataset) else score_array(data),
            dim=dim,
            binary=True,
            purpose=f"statistic={statistic!r}",
        )
        raise ValueError(
            f"statistic={statistic!r} needs binary scores (0 or 1); the data have partial credit"
        )
    if builtin and statistic != "mean":
        short = (cells.n > 0) & (cells.n < int(k))  # type: ignore[arg-type]
        if short.any():
            warn_user(
                f"{int(short.sum())} (agent, task) cells have fewer runs than k (n_runs < k; "
                f"k={k}); their {statistic} is undefined and they are left out (counted in "
                "`n_insufficient`, and in `n_excluded` with the tasks not run), so the statistic is the "
                f"mean over the tasks with at least {k} runs.",
                InsufficientRunsWarning,
            )


def _check_degenerate(cells: _Cells, codes: np.ndarray | None, scheme: str, unit: str) -> None:
    """Refuse a scheme under which every resample equals the data."""
    T = cells.n.shape[1]
    n_units = T if codes is None else int(codes.max()) + 1
    if scheme == "tasks" and n_units < 2:
        raise DegenerateBootstrapError(
            f"scheme='tasks' resamples {unit}s, and the data have only {n_units} {unit}: every "
            "resample equals the data, so the interval would have zero width and say nothing. "
            + ("Use cluster=None to resample the tasks inside it, " if codes is not None and T > 1 else "Add tasks, ")
            + "or scheme='two-stage' / 'runs' for the run-to-run noise alone."
        )
    if scheme == "runs" and not (cells.n > 1).any():
        raise DegenerateBootstrapError(
            "scheme='runs' resamples the runs within each (agent, task) cell, and every cell has "
            "at most one run: every resample equals the data, so the interval would have zero "
            "width. Use scheme='tasks' (the task as the sampling unit), or collect repeated runs."
        )


def _pair_index(pairs, agent_coord, paired: bool) -> tuple[np.ndarray | None, list[str]]:
    """``pairs`` as (P, 2) agent indices and their ``"a - b"`` labels (None, [] without pairs)."""
    if pairs is None:
        return None, []
    if agent_coord is None:
        raise ValueError("`pairs` needs data with an agent dimension")
    names = [str(a) for a in agent_coord.values]
    if pairs == "all":
        pairs = [(names[i], names[j]) for i in range(len(names)) for j in range(i + 1, len(names))]
    position: dict[str, int] = {}
    for i, name in enumerate(names):
        position.setdefault(name, i)  # the first, as list.index (49,770 pairs: no scan per pair)
    idx = []
    for p in pairs:
        if len(p) != 2:
            raise ValueError(f"`pairs` entries must be (agent_a, agent_b); got {p!r}")
        unknown = [x for x in p if str(x) not in position]
        if unknown:
            raise ValueError(f"`pairs` names agents not in the data: {unknown}; agents are {names}")
        idx.append((position[str(p[0])], position[str(p[1])]))
    if not idx:
        raise ValueError("`pairs` is empty")
    if not paired:
        raise ValueError("`pairs` needs paired=True: a paired difference uses the same tasks for both agents")
    return np.asarray(idx, dtype=np.int64), [f"{a} - {b}" for a, b in pairs]


def _output_names(plan: _Plan, agent_coord, pair_labels: list[str], n_out: int) -> list[str]:
    """Each output as a warning names it: its pair, its agent, or (a callable's) its position."""
    if plan.pairs_idx is not None:
        return [f"pair {p!r}" for p in pair_labels]
    if agent_coord is not None and n_out == plan.A:
        return [f"agent {str(a)!r}" for a in agent_coord.values]
    return ["the statistic"] if n_out == 1 else [f"statistic {i}" for i in range(n_out)]


# ---------------------------------------------------------------------------
# packaging
# ---------------------------------------------------------------------------


def _output_axes(plan: _Plan, agent_coord, pair_labels: list[str], n_out: int, agent_dim: str):
    """``da(x, lead=(), lead_coords=None, trail=())``: per-output values as a DataArray.

    The output dim is ``pair``, the agent dim, or ``statistic`` (a callable's outputs);
    squeezed away for a single statistic without agents.
    """
    if plan.pairs_idx is not None:
        odim: tuple[str, ...] = ("pair",)
        ocoords: dict = {"pair": pair_labels}
    elif agent_coord is not None and n_out == plan.A:
        odim, ocoords = (agent_dim,), {agent_dim: agent_coord.values}
    else:
        odim, ocoords = ("statistic",), {}
    squeeze = (agent_coord is None and plan.pairs_idx is None) or (odim == ("statistic",) and n_out == 1)

    def da(x: np.ndarray, lead: tuple[str, ...] = (), lead_coords: dict | None = None, trail=()):
        out = xr.DataArray(x, dims=(*lead, *odim, *trail), coords={**(lead_coords or {}), **ocoords})
        return out.squeeze(odim[0], drop=True) if squeeze else out

    return da


def _interval(plan: _Plan, lims: np.ndarray, da, *, prob: float, method: str, detail: str) -> xr.DataArray:
    """The house interval of the limits ``lims`` (n_out, 2), each zero-width output's reason named."""
    lims_da = da(lims, trail=("ci_bound",))
    return make_interval(
        lims_da.isel(ci_bound=0, drop=True),
        lims_da.isel(ci_bound=1, drop=True),
        prob=prob,
        kind=method,
        detail=detail,
        zero_width_why=da(_zero_width_reasons(plan, _same_values(plan, lims.shape[0]))),
    )


def _detail(plan: _Plan, unit: str, n_resamples: int) -> str:
    """The interval's ``ci_detail``: scheme, resampling unit, number of resamples."""
    return f"bootstrap, {plan.scheme} scheme, resampling {unit}s, {int(n_resamples)} resamples"


def _package(
    plan: _Plan, agent_coord, pair_labels: list[str], theta, dist, limits, *, prob: float,
    method: str, unit: str, agent_dim: str, cluster_column: str = "", variable: str = "score",
) -> BootstrapResult:
    """The arrays as a :class:`BootstrapResult` with the house interval."""
    lims, z0, acc_a = limits
    n_out, n_resamples, T, U = theta.shape[0], dist.shape[0], plan.T, plan.U
    da = _output_axes(plan, agent_coord, pair_labels, n_out, agent_dim)
    statistic, k = plan.statistic, plan.k
    name = statistic if plan.builtin else getattr(statistic, "__name__", "statistic")
    detail = _detail(plan, unit, n_resamples)
    attrs = {
        "statistic": str(name) + (f" (k={k})" if plan.builtin and statistic != "mean" else ""),
        "scheme": plan.scheme,
        "method": method,
        "n_resamples": int(n_resamples),
        "resample_unit": unit,
        "cluster_column": cluster_column,
        "paired_resample": int(plan.paired),
        **({"k": int(k)} if plan.builtin and statistic != "mean" else {}),
        **_target_attrs(plan, variable),
    }
    same = _same_values(plan, n_out)
    # the one value on every task leaves no width (percentile) or no interval (BCa's bias correction is
    # infinite); under two-stage the runs may still give width, and then it is not the reason
    degenerate = ~np.isfinite(lims).all(-1) | (lims[:, 1] - lims[:, 0] == 0.0)
    ci = _interval(plan, lims, da, prob=prob, method=method, detail=detail)
    present = np.isfinite(plan.v_obs[0])
    n_tasks = present.sum(-1)
    n_tasks_o = n_tasks if n_out == U else np.full(n_out, int(present.any(0).sum()))
    n_excl_o = (T - n_tasks) if n_out == U else T - n_tasks_o
    n_undef = (~np.isfinite(dist)).sum(0)
    with warnings.catch_warnings():
        # an output with fewer than two defined resamples has no SE (NaN); it is already named
        # (EmptySampleWarning / UndefinedResampleWarning), numpy's "Degrees of freedom" adds nothing
        warnings.simplefilter("ignore", RuntimeWarning)
        se = np.nanstd(dist, axis=0, ddof=1)
    return BootstrapResult(
        estimate=da(theta).assign_attrs(attrs),
        ci=ci,
        distribution=da(dist, ("resample",), {"resample": np.arange(n_resamples)}),
        standard_error=da(se),
        n_tasks=da(n_tasks_o.astype(np.int64)),
        n_excluded=da(np.asarray(n_excl_o).astype(np.int64)),
        n_undefined=da(n_undef.astype(np.int64)),
        bias_correction=None if z0 is None else da(z0),
        acceleration=None if acc_a is None else da(acc_a),
        ci_flag=None if (flag := _flags(plan, n_out, same, degenerate)) is None else da(flag),
        n_insufficient=None if (short := _n_short(plan, n_out)) is None else da(short),
        attrs={**attrs, "ci_prob": float(prob), "ci_kind": method, "ci_detail": detail},
    )


def _n_short(plan: _Plan, n_out: int) -> np.ndarray | None:
    """Per output, the tasks pass^k / pass@k leaves out for ``0 < n_runs < k`` (None for other statistics).

    An agent's tasks run fewer than ``k`` times; a pair's tasks both agents ran where one of them has
    fewer than ``k`` runs (the tasks one of them never ran are not run, not short). The count
    ``PassKResult.n_insufficient`` gives, which ``hierbench.compare`` reads to tell a pass^k over the
    tasks with ``k`` runs from one over every task.
    """
    if not plan.builtin or plan.statistic == "mean":
        return None
    n = plan.cells.n
    ran, short = n > 0, (n > 0) & (n < int(plan.k))
    if plan.pairs_idx is not None:
        a, b = plan.pairs_idx[:, 0], plan.pairs_idx[:, 1]
        out = (ran[a] & ran[b] & (short[a] | short[b])).sum(-1)
    else:
        out = short.sum(-1)
    return np.asarray(out, dtype=np.int64) if out.shape[0] == n_out else None


#: what a built-in statistic estimates, as ``hierbench.compare.side_by_side`` reads it (``quantity``)
_QUANTITIES = {"mean": "mean score", "pass_hat_k": "pass^k", "pass_at_k": "pass@k"}


def _target_attrs(plan: _Plan, variable: str = "score") -> dict[str, str]:
    """``scale``, ``quantity`` and ``tasks`` of a built-in statistic (nothing for a callable's).

    0/1 scores make the mean a success probability (``"probability"``), other
    scores a mean ``"score"``; pass^k and pass@k are probabilities. The mean of
    another variable (``mean_ci``'s cost) is on that variable's own scale, named by
    it (``scale="cost"``, ``quantity="mean cost"``). Resampling
    tasks (or clusters, or both stages) makes the interval one for a new draw of
    tasks from the same population (``tasks="population"``); resampling runs
    only holds the tasks fixed (``"observed"``: these tasks).
    """
    if not plan.builtin:
        return {}
    binary = plan.cells.binary or plan.statistic != "mean"
    quantity = _QUANTITIES[str(plan.statistic)]
    scale = "probability" if binary else "score"
    if variable != "score" and plan.statistic == "mean":
        quantity, scale = f"mean {variable}", variable
    if plan.pairs_idx is not None:
        quantity = f"difference in {quantity} (first agent minus second)"
    return {
        "scale": scale,
        "quantity": quantity,
        "tasks": "observed" if plan.scheme == "runs" else "population",
    }


#: ``ci_flag`` of an agent whose mean few tasks carry (``_numerics.few_carry_side``)
FEW_TASKS_FLAG = "few tasks carry the mean"
#: the same where few tasks carry the failures (a mean above 1/2: the rule held on ``1 - y``)
FEW_FAILS_FLAG = "few tasks carry the failures (1 - mean)"


def _same_text(plan: _Plan, value: float) -> str:
    """``ci_flag`` of an output whose every task has the one value ``value``: ``"every task scored 0"``."""
    if plan.pairs_idx is not None:
        return f"every task's difference is {value:g}"
    if plan.cell_stat == "mean":
        return f"every task scored {value:g}"
    return f"every task's pass{'^' if plan.cell_stat == 'pass_hat_k' else '@'}{plan.k} is {value:g}"


def _same_values(plan: _Plan, n_out: int) -> np.ndarray:
    """Per output, the value every task it rests on has (NaN where they differ or for a callable)."""
    out = np.full(n_out, np.nan)
    if not plan.builtin or n_out != plan.U:
        return out
    v = plan.v_obs[0]  # (U, T), NaN where a task is not in the statistic
    fin = np.isfinite(v)
    lo, hi = np.where(fin, v, np.inf).min(-1), np.where(fin, v, -np.inf).max(-1)  # no task: inf > -inf
    return np.where(lo == hi, lo, np.nan)


def _zero_width_reasons(plan: _Plan, same: np.ndarray) -> np.ndarray:
    """Per output, why a zero-width interval there says nothing (read only where it has zero width)."""
    return np.array(
        [f"{_same_text(plan, v)}: no resample can differ" if np.isfinite(v) else "every resample gave the same value"
         for v in same],
        dtype=object,
    )


def _flags(plan: _Plan, n_out: int, same: np.ndarray, degenerate: np.ndarray) -> np.ndarray | None:
    """Per agent: the one value's text where it leaves the interval zero-width or undefined, else the few-tasks flag.

    ``""`` where neither. Few tasks carrying the mean is judged on the tasks' own
    values whatever the resampling unit: a mean few tasks carry is one few
    clusters carry too. (Clusters of unequal size make the effective number of
    clusters smaller still; that is warned about for the whole result, ``_few_clusters``.)
    """
    from ..._numerics import few_carry_side

    if not plan.builtin or plan.pairs_idx is not None or plan.scheme == "runs" or n_out != plan.U:
        return None
    side = few_carry_side(plan.v_obs[0])  # 1: few tasks carry the mean, -1: the failures
    out = np.select([side == 1, side == -1], [FEW_TASKS_FLAG, FEW_FAILS_FLAG], "").astype(object)
    for u in np.flatnonzero(np.isfinite(same) & degenerate):
        out[u] = _same_text(plan, float(same[u]))
    return out



#: what gives an interval that holds better with few clusters: the CR2 t on Bell-McCaffrey df, per statistic
_CR2_ROUTE = {
    "mean": "hierbench.freq.success_rate(data).ci takes the CR2 SE on Bell-McCaffrey df over the clusters (pass@1's rule)",
    "pairs": "hierbench.freq.compare_agents(data).ci (and paired_test's ci) is the pairs' CR2 t on Bell-McCaffrey df",
    "pass": "hierbench.freq.{stat}(data, k)'s interval takes the CR2 SE on Bell-McCaffrey df over the clusters",
}


def _cr2_route(plan: _Plan) -> str:
    """The few-clusters warning's close for scores: the simulated coverage and the CR2 t that holds it better."""
    if plan.pairs_idx is not None:
        route = _CR2_ROUTE["pairs"]
    elif plan.builtin:
        stat = str(plan.statistic)
        route = _CR2_ROUTE["mean"] if stat == "mean" else _CR2_ROUTE["pass"].format(stat=stat)
    else:
        route = "a CR2 SE on Bell-McCaffrey df over the clusters (as hierbench.freq.success_rate takes for a mean)"
    return (
        f"; at 95%, 0.84-0.905 in a simulation at SWE-bench's 12 repositories, worth 3.9; {route}, which "
        "holds its level better there"
    )


def _few_clusters(plan: _Plan, cluster_column: str, prob: float, variable: str = "score") -> dict:
    """Count the clusters a cluster bootstrap resamples; warn once where they are few. Returns the attrs.

    ``n_clusters``, ``n_clusters_effective`` (``effective_clusters``, over every task of
    the data) and ``few_clusters``: the warning's text where the effective number is below
    ``FEW_CLUSTERS``, else ``""``. Nothing without clusters or for ``scheme="runs"``. The
    simulated coverage and the CR2 routes (``_CR2_ROUTE``) are the scores': for values of
    another ``variable`` (``mean_ci``'s cost) the warning says the shortfall and no more.
    """
    if plan.codes is None or plan.scheme == "runs":
        return {}
    sizes = np.bincount(plan.codes)
    return few_clusters_attrs(plan.codes, f"clusters of `{cluster_column}` ({sizes.min()} to {sizes.max()} tasks)",
                              prob, then=_cr2_route(plan) if variable == "score" else "")


# ---------------------------------------------------------------------------
# public
# ---------------------------------------------------------------------------


@renamed_kwargs(dim="run_dim")
@fill_doc
def bootstrap_ci(
    data: xr.Dataset | xr.DataArray,
    statistic: Literal["mean", "pass_hat_k", "pass_at_k"] | StatisticFn = "mean",
    *,
    k: int | None = None,
    pairs: Sequence[tuple[str, str]] | Literal["all"] | None = None,
    scheme: Scheme = "tasks",
    method: Method = "percentile",
    n_resamples: int = 9999,
    prob: float = DEFAULT_PROB,
    cluster: str | None = "auto",
    paired: bool = True,
    run_dim: str = "run",
    task_dim: str = "task",
    agent_dim: str = "agent",
    rng: None | int | np.random.Generator = None,
    progress: bool | None = None,
) -> BootstrapResult:
    """Bootstrap confidence interval of a benchmark statistic, resampling tasks.

    Parameters
    ----------
    data : xarray.Dataset or xarray.DataArray
        An eval dataset (``score`` with dims ``agent`` (optional), ``task``,
        ``run``; NaN = not run; ragged cells allowed), its counts
        (``n_runs``, ``n_success``) or a score DataArray.
    statistic : {"mean", "pass_hat_k", "pass_at_k"} or callable
        ``"mean"``: the mean over tasks of each task's mean score.
        ``"pass_hat_k"`` / ``"pass_at_k"``: the mean over tasks of the
        unbiased per-task pass^k / pass@k (binary scores; needs ``k``; tasks
        with fewer than ``k`` runs are excluded and counted). A callable
        ``f(values, weights)`` follows the protocol in the module docstring.
    k : int, optional
        ``k`` of pass^k / pass@k.
    pairs : sequence of (agent_a, agent_b), "all" or None
        Paired differences ``a - b`` of the statistic on the tasks both
        agents ran (task effects cancel); adds dim ``pair`` (``"a - b"``).
    scheme : {"tasks", "runs", "two-stage"}
        ``"tasks"`` resamples tasks (whole clusters when clustered) with their
        runs: the consistent choice. ``"runs"`` resamples runs within each
        cell only (anti-conservative); ``"two-stage"`` tasks, then runs within
        each drawn task (conservative).
    method : {"percentile", "bca"}
        BCa uses a jackknife over tasks (clusters) for the acceleration.
    %(n_resamples)s
    %(prob)s
    cluster : str, None or "auto"
        Task coord naming the cluster above the task; ``"auto"`` uses a
        ``cluster`` coord when present; ``None`` resamples single tasks.
        Clusters worth fewer than 20 equal ones by their sizes (``(sum n_g)^2 /
        sum n_g^2``; Cameron and Miller 2015) are warned (``SmallSampleWarning``,
        text in ``attrs["few_clusters"]``): the interval then covers less than its
        level (95%: 0.84-0.905 at SWE-bench's 12 repositories), where, for scores, the
        CR2 t of ``success_rate`` / ``compare_agents`` holds it better. It is not changed.
    paired : bool
        ``True``: one task resample shared by every agent (paired comparisons,
        rankings). ``False``: independent resamples per agent.
    run_dim, task_dim, agent_dim : str
        Names of the run, task and agent dims.
    %(rng)s
    progress : bool or None
        A progress bar on standard error (``None``: only when watched).

    Returns
    -------
    BootstrapResult
        The statistic on the data (``estimate``) with its interval (``ci``),
        the bootstrap ``distribution`` and ``standard_error``, and the tasks
        used and left out, per agent (or per pair with ``pairs``).

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=2, n_tasks=40, n_runs=3, rng=0)
    >>> bootstrap_ci(ds, n_resamples=999, rng=1).ci.dims
    ('agent', 'ci_bound')
    >>> d = bootstrap_ci(ds, pairs=[("agent_00", "agent_01")], method="bca", n_resamples=999, rng=1)
    >>> str(d.estimate.pair.values[0])
    'agent_00 - agent_01'
    >>> import numpy as np
    >>> def solved_share(values, weights):  # share of tasks solved at least once
    ...     hit = np.nan_to_num(values) > 0
    ...     return (weights[:, None, :] * hit).sum(-1) / weights.sum(-1, keepdims=True)
    >>> bootstrap_ci(ds, solved_share, n_resamples=999, rng=1).ci.sizes["agent"]
    2
    """
    prob, builtin = _check_arguments(statistic, k, scheme, method, n_resamples, prob)
    gen = as_rng(rng)
    plan, agent_coord, pair_labels, unit, cluster_column, variable = _plan(
        data, statistic, builtin, k, pairs, scheme, paired, cluster, (run_dim, task_dim, agent_dim)
    )
    theta, dist, limits = _resample(
        plan, int(n_resamples), gen, progress, method, prob, (agent_coord, pair_labels, variable)
    )
    res = _package(
        plan, agent_coord, pair_labels, theta, dist, limits, prob=prob, method=method, unit=unit,
        agent_dim=agent_dim, cluster_column=cluster_column, variable=variable,
    )
    res.attrs.update(_few_clusters(plan, cluster_column, prob, variable))
    return with_counts_hash(res, data, rng)


def _plan(data, statistic, builtin: bool, k, pairs, scheme: str, paired: bool, cluster, dims) -> tuple:
    """The checked resampling plan of ``data``: ``(plan, agent coord, pair labels, unit, cluster column, variable)``.

    ``unit`` is what ``scheme="tasks"`` draws (``"task"``, or ``"cluster"`` when the tasks
    have clusters); the cluster column names the clusters ("" without them); the variable
    says what the values are (``_variable``). ``dims`` are the run, task and agent dims.
    """
    run_dim, task_dim, agent_dim = dims
    cells, agent_coord, _task_coord, src = _cells_from(data, run_dim, task_dim, agent_dim)
    _check_cells(cells, data, statistic, builtin, k, scheme, run_dim)
    # clusters through the one routine (a task without a label is its own cluster, stated)
    cc = cluster_codes(src, cluster, dim=task_dim)
    codes = None if cc is None else cc[0]
    unit = "task" if codes is None else "cluster"
    _check_degenerate(cells, codes, scheme, unit)
    pairs_idx, pair_labels = _pair_index(pairs, agent_coord, paired)
    plan = _Plan(cells, statistic, builtin, k, pairs_idx, scheme, paired, codes)
    # the clusters by the column the user named (the coord is `cluster` whatever it was read from)
    cluster_column = cluster_label(src, cluster) if codes is not None else ""
    return plan, agent_coord, pair_labels, unit, cluster_column, _variable(data)


def _variable(data) -> str:
    """What the values are: ``"score"`` for a dataset and for a score DataArray, else the DataArray's name.

    A DataArray is a score DataArray when it is named ``score`` or not named at all (the
    form ``bootstrap_ci`` documents); another name (``"cost"``, from ``mean_ci``) is taken
    as the variable the values are of.
    """
    name = data.name if isinstance(data, xr.DataArray) else None
    return "score" if name is None else str(name)


#: why a resample can leave an output undefined, in the undefined-resample warning
_UNDEFINED_CAUSE = "e.g. an agent drew none of the tasks it ran; counted in `n_undefined`"


def _resample(
    plan: _Plan, n_resamples: int, gen: np.random.Generator, progress, method: str, prob: float,
    labels: tuple,
) -> tuple[np.ndarray, np.ndarray, tuple]:
    """The statistic on the data, its bootstrap distribution (undefined resamples warned), the limits.

    ``labels`` (agent coord, pair labels, variable) name the outputs and the values in the warnings.
    """
    theta = _theta(plan)
    dist = _distribution(plan, theta.shape[0], n_resamples, gen, progress)
    names = _output_names(plan, *labels[:2], theta.shape[0])
    empty = _warn_empty_outputs(plan, theta, names, labels[0], labels[2])
    warn_undefined_resamples(
        dist, names, category=UndefinedResampleWarning, only=~empty, cause=_UNDEFINED_CAUSE,
    )
    lims, z0, acc, bca = _limits(plan, theta, dist, method, prob)
    warn_bca_undefined(*bca)
    return theta, dist, (lims, z0, acc)


def _theta(plan: _Plan) -> np.ndarray:
    """The statistic on the data, one value per output."""
    T, U = plan.T, plan.U
    return plan.stat(plan.v_obs, np.ones((1, T)) if plan.paired else np.ones((1, U, T)))[0]


@dataclass(frozen=True)
class _Summary:
    """:func:`_bootstrap_summary`: per output the estimate, the interval and the percentile p-value."""

    estimate: np.ndarray
    ci: xr.DataArray
    p_value: np.ndarray
    p_value_mcse: np.ndarray
    n_undefined: np.ndarray


def _bootstrap_summary(
    data, statistic="mean", *, k=None, pairs=None, scheme: str = "tasks", method: str = "percentile",
    n_resamples: int = 9999, prob: float = DEFAULT_PROB, cluster="auto", paired: bool = True,
    run_dim: str = "run", task_dim: str = "task", agent_dim: str = "agent", rng=None, progress=None,
) -> _Summary:
    """:func:`bootstrap_ci`'s estimate and interval, and each output's percentile p-value, in bounded memory.

    The same checks, warnings (but the few-clusters one, ``_few_clusters``: its caller
    :func:`compare_agents` takes the CR2 t route that warning points to), resamples and
    numbers as :func:`bootstrap_ci` with the same
    arguments (its ``ci`` and, from its ``distribution``, ``_percentile_p``), but the
    distribution is never held whole: above ``_BLOCK_BYTES`` the outputs go in blocks that
    replay the same resamples (:func:`~._bootstrap_engine._summaries`). For many pairs
    (:func:`compare_agents`), where the whole distribution is gigabytes.
    """
    prob, builtin = _check_arguments(statistic, k, scheme, method, n_resamples, prob)
    gen = as_rng(rng)
    plan, agent_coord, pair_labels, unit, _, variable = _plan(
        data, statistic, builtin, k, pairs, scheme, paired, cluster, (run_dim, task_dim, agent_dim)
    )
    theta = _theta(plan)
    out = _summaries(plan, theta, int(n_resamples), gen, progress, method, prob)
    names = _output_names(plan, agent_coord, pair_labels, theta.shape[0])
    empty = _warn_empty_outputs(plan, theta, names, agent_coord, variable)
    warn_undefined_counts(
        out["n_undefined"], int(n_resamples), names, category=UndefinedResampleWarning, only=~empty,
        cause=_UNDEFINED_CAUSE,
    )
    warn_bca_undefined(*out["bca"])
    da = _output_axes(plan, agent_coord, pair_labels, theta.shape[0], agent_dim)
    ci = _interval(plan, out["lims"], da, prob=prob, method=method, detail=_detail(plan, unit, n_resamples))
    return _Summary(theta, ci, out["p"], out["p_mcse"], out["n_undefined"])


def _warn_empty_outputs(
    plan: _Plan, theta: np.ndarray, names: list[str], agent_coord, variable: str = "score"
) -> np.ndarray:
    """Name the agents (pairs) with no task in the statistic, whose estimate is NaN; returns that mask.

    Such an output is undefined on the data, not by a resample's draw, so it is said here
    (why: no runs at all, no task with ``k`` runs, no task both agents ran) and left out of the
    undefined-resample count. The other outputs do not depend on it and stand. Values of another
    ``variable`` than the score (a cost) can be missing from runs that happened: there an agent
    has "no cost at all", not "no runs", and dropping it is not advised.
    """
    empty = np.zeros(theta.shape[0], dtype=bool)
    if theta.shape[0] != plan.U:  # a callable's scalar (or other) outputs: no per-agent tasks
        return empty
    empty = ~np.isfinite(plan.v_obs[0]).any(-1) & ~np.isfinite(theta)
    if not empty.any():
        return empty
    idle = plan.cells.n.sum(-1) == 0  # (A,) agents with no runs at all (no value at all, for a cost)
    nothing = "no runs at all" if variable == "score" else f"no {variable} at all"
    with_k = f" with k={plan.k} runs" if plan.builtin and plan.statistic != "mean" else ""
    why = []
    for u in np.flatnonzero(empty):
        if plan.pairs_idx is None:
            why.append(nothing if idle[u] else f"no task{with_k}")
            continue
        gone = [repr(str(agent_coord.values[a])) for a in plan.pairs_idx[u] if idle[a]]
        who = f"agent {gone[0]} has" if len(gone) == 1 else f"agents {' and '.join(gone)} have"
        why.append(f"{who} {nothing}" if gone else f"no task both agents ran{with_k}")
    listed = "; ".join(f"{names[u]} ({w})" for u, w in zip(np.flatnonzero(empty)[:10], why[:10], strict=True))
    more = f"; and {int(empty.sum()) - 10} more" if empty.sum() > 10 else ""
    rest = "; the other outputs do not use them" if not empty.all() else ""
    involved = np.flatnonzero(empty) if plan.pairs_idx is None else np.unique(plan.pairs_idx[empty])
    drop = [str(agent_coord.values[a]) for a in involved if idle[a]] if agent_coord is not None and variable == "score" else []
    hint = f" Agents with no runs can be dropped first: data.drop_sel(agent={drop!r})." if drop else ""
    warn_user(
        f"no task to estimate from for {int(empty.sum())} of {empty.size} outputs: {listed}{more}. "
        f"Their estimate and interval are NaN (`n_tasks` 0){rest}.{hint}",
        EmptySampleWarning,
    )
    return empty
