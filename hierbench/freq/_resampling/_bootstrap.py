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
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import xarray as xr
from scipy import stats

from ..._base import (
    DEFAULT_PROB,
    HierbenchError,
    Progress,
    Result,
    UndefinedWarning,
    as_rng,
    check_choice,
    check_prob,
    cluster_codes,
    make_interval,
)
from ..._base import (
    counts as cell_counts,
)
from .._inputs import score_array
from .._kernels import (
    DegenerateBootstrapWarning,
    _bca,
    _column_quantiles,
    _index_dtype,
    _pass_kernel,
    task_weights,
)
from .._rates._passk import InsufficientRunsWarning

__all__ = [
    "BootstrapResult",
    "DegenerateBootstrapError",
    "DegenerateBootstrapWarning",
    "UndefinedResampleWarning",
    "bootstrap_ci",
]

Scheme = Literal["tasks", "runs", "two-stage"]
Method = Literal["percentile", "bca"]
StatisticFn = Callable[[np.ndarray, np.ndarray], np.ndarray]

_CHUNK_ELEMS = 2**21  # elements of the largest temporary per chunk (2^21 measured ~10% faster than 2^22)
# draw multinomial counts over distinct value columns when there are at most T / 16 of
# them: a binomial draw costs ~16x an index draw plus its share of the bincount
# (measured: 10,000 x 11 multinomial 6.5 ms; 10,000 x 500 index draws + counts 26 ms)
_PATTERN_RATIO = 16
# the gather path's index chunk stays in cache (measured, T = 2,000, 10,000 resamples:
# 2^18 elements per chunk 45 ms, 2^22 elements 81 ms)
_GATHER_CHUNK_ELEMS = 2**18


class DegenerateBootstrapError(HierbenchError):
    """The resampling scheme cannot vary the data (one task or cluster, one run per cell):
    every resample equals the data and the interval would have zero width."""


class UndefinedResampleWarning(UndefinedWarning):
    """In some resamples the statistic was undefined (e.g. an agent drew none of its tasks)."""


@dataclass(frozen=True, repr=False)
class BootstrapResult(Result):
    """Result of :func:`bootstrap_ci`.

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
        Tasks left out (not run by the agent or by one agent of a pair, or
        with fewer runs than ``k`` for pass^k / pass@k).
    n_undefined : xarray.DataArray
        Resamples where the statistic was undefined (they are left out of the
        quantiles; a :class:`UndefinedResampleWarning` says so).
    bias_correction, acceleration : xarray.DataArray or None
        BCa's ``z0`` and ``a`` (``method="bca"`` only).
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
    attrs: dict = field(default_factory=dict)

    def to_dataset(self) -> xr.Dataset:
        """All fields as one :class:`xarray.Dataset` (attrs carried over)."""
        ds = super().to_dataset()
        ds.attrs = dict(self.attrs)
        return ds

    def to_frame(self):
        """One row per agent (or pair): estimate, interval ends, SE and counts (no resamples)."""
        df = super().to_frame()
        return df.drop(columns=[c for c in ("distribution",) if c in df.columns])


# ---------------------------------------------------------------------------
# cells: per (agent, task) sufficient data
# ---------------------------------------------------------------------------


@dataclass
class _Cells:
    n: np.ndarray  # (A, T) runs that happened
    s: np.ndarray  # (A, T) sum of scores
    binary: bool
    packed: np.ndarray | None  # (A, T, R) run scores packed left, NaN after n (non-binary only)
    cdf: np.ndarray | None = None  # (A, T, nmax) Binomial(n, c/n) CDF at 0..nmax-1 (binary, small n)

    def __post_init__(self) -> None:
        nmax = int(self.n.max()) if self.n.size else 0
        if self.binary and 0 < nmax <= 32:
            p = np.where(self.n > 0, self.s / np.where(self.n > 0, self.n, 1.0), 0.0)
            self.cdf = stats.binom.cdf(np.arange(nmax), self.n[..., None], p[..., None])
            # cells with fewer runs: CDF is 1 from n on, so they never exceed n
            self.cdf = np.where(np.arange(nmax) >= self.n[..., None], 1.0, self.cdf)


def _cells_from(data: xr.Dataset | xr.DataArray, dim: str, task_dim: str, agent_dim: str):
    """Return (cells, agent coord or None, task index, cluster codes source)."""
    if isinstance(data, xr.Dataset) and "n_runs" in data and "n_success" in data and "score" not in data:
        cnt = cell_counts(data, dim=dim, binary=False)
        n_da, s_da = cnt["n_runs"], cnt["n_success"]
        if task_dim not in n_da.dims:
            raise ValueError(f"`task_dim` must be a dimension of `data.n_runs` {n_da.dims}; got {task_dim!r}")
        has_agent = agent_dim in n_da.dims
        order = (agent_dim, task_dim) if has_agent else (task_dim,)
        extra = [d for d in n_da.dims if d not in order]
        if extra:
            raise ValueError(f"`data` counts must have dims {order}; found extra dims {extra}")
        n = np.asarray(n_da.transpose(*order).values, dtype=float)
        s = np.asarray(s_da.transpose(*order).values, dtype=float)
        if not has_agent:
            n, s = n[None], s[None]
        # binary needs whole success counts and counts not made from partial credit
        binary = bool(np.all(s == np.round(s))) and bool(int(cnt.attrs.get("binary", 1)))
        cells = _Cells(n=n, s=s, binary=binary, packed=None)
        return cells, (n_da[agent_dim] if has_agent else None), n_da[task_dim], n_da
    score = score_array(data)
    for name, d in (("dim", dim), ("task_dim", task_dim)):
        if d not in score.dims:
            raise ValueError(f"`{name}` must be a dimension of the scores {score.dims}; got {d!r}")
    has_agent = agent_dim in score.dims
    order = (agent_dim, task_dim, dim) if has_agent else (task_dim, dim)
    extra = [d for d in score.dims if d not in order]
    if extra:
        raise ValueError(f"the scores must have dims {order}; found extra dims {extra}")
    y = np.asarray(score.transpose(*order).values, dtype=float)
    if not has_agent:
        y = y[None]
    fin = np.isfinite(y)
    cnt = cell_counts(score, dim=dim, binary=False)  # the one counts routine (refuses inf)
    c_order = (agent_dim, task_dim) if has_agent else (task_dim,)
    n = np.asarray(cnt["n_runs"].transpose(*c_order).values, dtype=float)
    s = np.asarray(cnt["n_success"].transpose(*c_order).values, dtype=float)
    if not has_agent:
        n, s = n[None], s[None]
    binary = bool(cnt.attrs["binary"])
    packed = None
    if not binary:
        # stable sort puts NaN last: the n runs of a cell occupy its first n slots
        order_idx = np.argsort(~fin, axis=-1, kind="stable")
        packed = np.take_along_axis(y, order_idx, axis=-1)
    cells = _Cells(n=n, s=s, binary=binary, packed=packed)
    return cells, (score[agent_dim] if has_agent else None), score[task_dim], score


def _values(n: np.ndarray, s: np.ndarray, stat: str, k: int | None) -> np.ndarray:
    """Per-cell values of the built-in statistics; NaN where undefined."""
    if stat == "mean":
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, s / np.where(n > 0, n, 1.0), np.nan)
    kind = "hat" if stat == "pass_hat_k" else "at"
    v, _ = _pass_kernel(n, np.round(s), int(k), kind=kind)  # type: ignore[arg-type]
    return v


def _resample_runs_dense(gen: np.random.Generator, cells: _Cells, size: int) -> np.ndarray:
    """As :func:`_resample_runs_at` for every cell at once: ``s*`` of shape (size, A, T)."""
    n = cells.n
    if cells.binary:
        if cells.cdf is None:
            p = np.where(n > 0, cells.s / np.where(n > 0, n, 1.0), 0.0)
            return gen.binomial(n.astype(np.int64), p, size=(size, *n.shape)).astype(float)
        u = gen.random((size, *n.shape))
        s_star = np.zeros((size, *n.shape))
        for j in range(cells.cdf.shape[-1]):
            s_star += u > cells.cdf[..., j]
        return s_star
    a_idx, t_idx = np.indices(n.shape)
    flat = _resample_runs_at(
        gen, cells, np.broadcast_to(a_idx, (size, *n.shape)).ravel(), np.broadcast_to(t_idx, (size, *n.shape)).ravel()
    )
    return flat.reshape(size, *n.shape)


def _resample_runs_at(gen: np.random.Generator, cells: _Cells, a_idx: np.ndarray, t_idx: np.ndarray) -> np.ndarray:
    """Resampled score sums ``s*`` of cells ``(a_idx[i], t_idx[i])``, one independent run-resample each.

    Binary cells: ``s* ~ Binomial(n, c / n)`` (exactly the law of resampling
    the runs with replacement), by inverse CDF for small ``n``. Otherwise the
    cell's own runs are drawn with replacement.
    """
    n = cells.n[a_idx, t_idx]
    if cells.binary:
        if cells.cdf is None:
            p = np.where(n > 0, cells.s[a_idx, t_idx] / np.where(n > 0, n, 1.0), 0.0)
            return gen.binomial(n.astype(np.int64), p).astype(float)
        u = gen.random(n.shape)
        return (u[:, None] > cells.cdf[a_idx, t_idx]).sum(-1).astype(float)
    packed = cells.packed
    assert packed is not None
    out = np.zeros(n.shape)
    # cells grouped by their number of runs m: exactly m draws each, in blocks
    for m in np.unique(n[n > 0]).astype(np.int64):
        pos = np.flatnonzero(n == m)
        step = max(1, _CHUNK_ELEMS // int(m))
        for i0 in range(0, len(pos), step):
            p = pos[i0 : i0 + step]
            rows = packed[a_idx[p], t_idx[p], :m]  # (cells, m): the cell's runs
            draws = np.take_along_axis(rows, gen.integers(0, m, size=rows.shape), axis=-1)
            out[p] = draws.sum(-1)
    return out


# ---------------------------------------------------------------------------
# statistics as functions of (values, weights)
# ---------------------------------------------------------------------------


def _weighted_task_mean(v: np.ndarray, w: np.ndarray, row_sum: float | None = None) -> np.ndarray:
    """Mean over the tasks where ``v`` is defined, tasks weighted by ``w``.

    ``v``: (b or 1, U, T) with NaN for tasks not in the statistic; ``w``:
    (b, T) (shared across U) or (b, U, T). ``row_sum``: the common row sum of
    ``w`` when it is known (``T`` for an unclustered task resample), which
    saves a pass over ``w``. Returns (b, U).
    """
    present = np.isfinite(v)
    v0 = np.where(present, v, 0.0)
    pres = present.astype(float)
    if w.ndim == 2:
        if v.shape[0] == 1:
            if w.dtype == np.float32:  # the caller checked that float32 sums are exact here
                v0, pres = v0.astype(np.float32), pres.astype(np.float32)
                num = (w @ v0[0].T).astype(float)
                den = None if present.all() else (w @ pres[0].T).astype(float)
            else:
                num = w @ v0[0].T
                den = None if present.all() else w @ pres[0].T
            # every task available to every row: the denominator is the row sum of the weights
            if den is None:
                rs = w.sum(1, dtype=float)[:, None] if row_sum is None else row_sum
                den = np.broadcast_to(rs, num.shape)
        else:
            num = np.einsum("bt,but->bu", w, v0)
            den = np.einsum("bt,but->bu", w, pres)
    else:
        num = np.einsum("but,but->bu", w, np.broadcast_to(v0, w.shape))
        den = np.einsum("but,but->bu", w, np.broadcast_to(pres, w.shape))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _float32_exact(v: np.ndarray, total_weight: int) -> bool:
    """Whether ``w @ v`` is exact in float32 for non-negative integer weights summing to ``total_weight``.

    True when every finite value is a multiple of 1/256 and ``total_weight * max|v| * 256 < 2**24``:
    then every product and partial sum is an integer number of 1/256 units below 2^24.
    """
    f = v[np.isfinite(v)]
    if f.size == 0:
        return True
    scaled = f * 256.0
    return bool(np.all(scaled == np.round(scaled)) and total_weight * float(np.abs(f).max()) * 256.0 < 2.0**24)


def _apply_pairs(v: np.ndarray, pairs_idx: np.ndarray | None) -> np.ndarray:
    if pairs_idx is None:
        return v
    return v[..., pairs_idx[:, 0], :] - v[..., pairs_idx[:, 1], :]


# ---------------------------------------------------------------------------
# intervals
# ---------------------------------------------------------------------------


# ---------------------------------------------------------------------------
# public
# ---------------------------------------------------------------------------


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
    dim: str = "run",
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
        (``n_runs``, ``n_success`` from :func:`hierbench.data.to_counts`), or a
        score DataArray.
    statistic : {"mean", "pass_hat_k", "pass_at_k"} or callable
        ``"mean"``: the mean over tasks of each task's mean score (runs are
        averaged within a task first, so every task counts once however many
        runs it had). ``"pass_hat_k"`` / ``"pass_at_k"``: the mean over tasks
        of the unbiased per-task pass^k / pass@k (binary scores; needs ``k``;
        tasks with fewer than ``k`` runs are excluded and counted).

        A callable ``f(values, weights)`` must be vectorised over resamples:

        * ``values``: array ``(b, U, T)`` of per-task mean scores (``U``
          agents, or pairs when ``pairs`` is given, where a pair's value is
          the per-task difference); NaN where a task is not available. For
          ``scheme="tasks"`` the leading axis has length 1 (data are fixed).
        * ``weights``: float array ``(b, T)``, the multiplicity of each task in
          each resample (all ones for the observed data and ``scheme="runs"``,
          leave-one-out rows for the jackknife); ``(b, U, T)`` when
          ``paired=False``.
        * return: array ``(b,)`` (a scalar statistic) or ``(b, U)``.

        In ``"two-stage"``, a task drawn ``w`` times gets ``w`` independent run
        resamples and ``values`` holds their average; this is exact for any
        statistic that is linear in the task weights.
    k : int, optional
        ``k`` of pass^k / pass@k.
    pairs : sequence of (agent_a, agent_b), "all" or None
        Paired differences ``a - b`` of the statistic, computed per task on
        the tasks both agents ran and then averaged (the paired bootstrap:
        task effects cancel). Adds dim ``pair`` labelled ``"a - b"``.
        Needs ``paired=True``.
    scheme : {"tasks", "runs", "two-stage"}
        ``"tasks"`` resamples tasks (whole clusters when clustered) with their
        runs: the consistent choice. ``"runs"`` resamples runs within each
        cell only (ignores task sampling; anti-conservative). ``"two-stage"``
        resamples tasks (clusters) and then runs within each drawn task
        (counts run noise twice; conservative).
    method : {"percentile", "bca"}
        BCa uses a jackknife over tasks (over clusters when clustered) for
        the acceleration and ``z0 = Phi^-1(#{theta* < theta} / B)``.
    n_resamples : int
    prob : float
        Interval probability in (0, 1).
    cluster : str, None or "auto"
        Task coord naming the cluster above the task (task family, repo).
        ``"auto"`` uses a ``cluster`` coord when the data have one; ``None``
        resamples single tasks.
    paired : bool
        ``True`` (default): one task resample shared by every agent, as paired
        comparisons and rankings need. ``False``: independent resamples per
        agent (agents evaluated on independent task samples; simulations).
    dim, task_dim, agent_dim : str
        Names of the run, task and agent dims.
    rng : None, int or numpy.random.Generator
    progress : bool or None
        A text progress bar on standard error for long runs: ``None`` shows it
        only in a terminal or notebook and only after half a second; ``False``
        never.

    Returns
    -------
    BootstrapResult

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=2, n_tasks=40, n_runs=3, rng=0)
    >>> res = bootstrap_ci(ds, n_resamples=999, rng=1)
    >>> res.ci.dims
    ('agent', 'ci_bound')
    >>> d = bootstrap_ci(ds, pairs=[("agent_00", "agent_01")], method="bca", n_resamples=999, rng=1)
    >>> str(d.estimate.pair.values[0])
    'agent_00 - agent_01'

    A custom statistic, the share of tasks solved at least once:

    >>> import numpy as np
    >>> def solved_share(values, weights):
    ...     hit = np.nan_to_num(values) > 0
    ...     return (weights[:, None, :] * hit).sum(-1) / weights.sum(-1, keepdims=True)
    >>> bootstrap_ci(ds, solved_share, n_resamples=999, rng=1).ci.sizes["agent"]
    2
    """
    # ---- validate
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
    gen = as_rng(rng)
    cells, agent_coord, _task_coord, src = _cells_from(data, dim, task_dim, agent_dim)
    if scheme != "tasks" and not cells.binary and cells.packed is None:
        raise ValueError(
            f"scheme={scheme!r} resamples runs, which needs the runs themselves: pass the eval dataset, "
            "not counts with partial-credit (non-integer) sums"
        )
    A, T = cells.n.shape
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
    cell_stat = statistic if builtin else "mean"
    if cell_stat != "mean":
        short = (cells.n > 0) & (cells.n < int(k))  # type: ignore[arg-type]
        if short.any():
            warnings.warn(
                f"{int(short.sum())} (agent, task) cells have fewer runs than k (n_runs < k; "
                f"k={k}); their {statistic} is undefined and they are left out (counted in "
                "`n_excluded`).",
                InsufficientRunsWarning,
                stacklevel=2,
            )

    # ---- clusters (one routine: a task without a label is its own cluster, stated)
    unit = "task"
    cc = cluster_codes(src, cluster, dim=task_dim)
    codes = None if cc is None else cc[0]
    if codes is not None:
        unit = "cluster"

    # ---- structurally degenerate schemes: every resample would equal the data
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

    # ---- pairs
    pairs_idx = None
    pair_labels: list[str] = []
    if pairs is not None:
        if agent_coord is None:
            raise ValueError("`pairs` needs data with an agent dimension")
        names = [str(a) for a in agent_coord.values]
        if pairs == "all":
            pairs = [(names[i], names[j]) for i in range(A) for j in range(i + 1, A)]
        idx = []
        for p in pairs:  # type: ignore[union-attr]
            if len(p) != 2:
                raise ValueError(f"`pairs` entries must be (agent_a, agent_b); got {p!r}")
            unknown = [x for x in p if str(x) not in names]
            if unknown:
                raise ValueError(f"`pairs` names agents not in the data: {unknown}; agents are {names}")
            idx.append((names.index(str(p[0])), names.index(str(p[1]))))
        if not idx:
            raise ValueError("`pairs` is empty")
        if not paired:
            raise ValueError("`pairs` needs paired=True: a paired difference uses the same tasks for both agents")
        pairs_idx = np.asarray(idx, dtype=np.int64)
        pair_labels = [f"{a} - {b}" for a, b in pairs]  # type: ignore[union-attr]

    def values_of(n: np.ndarray, s: np.ndarray) -> np.ndarray:
        return _apply_pairs(_values(n, s, cell_stat, k), pairs_idx)

    obs_cell = _values(cells.n, cells.s, cell_stat, k)  # (A, T), NaN where undefined

    def copies_mean(drawn: np.ndarray, wa: np.ndarray) -> np.ndarray:
        """Per (resample, agent, task): the mean over ``wa`` independent run resamples.

        Only drawn cells get draws (copy ``j`` only where ``wa > j``), so the cost is
        one draw per drawn task copy, not ``max(w)`` draws per cell.
        """
        avail = np.isfinite(obs_cell)
        # copy 0 densely (most cells are drawn at least once), later copies sparsely
        s0 = _resample_runs_dense(gen, cells, wa.shape[0])
        acc = np.where(drawn & avail[None], _values(cells.n[None], s0, cell_stat, k), 0.0)
        bi, ai, ti = np.nonzero((wa > 1) & drawn & avail[None])
        wv = wa[bi, ai, ti]
        j = 1
        while len(bi):
            s_star = _resample_runs_at(gen, cells, ai, ti)
            acc[bi, ai, ti] += _values(cells.n[ai, ti], s_star, cell_stat, k)
            j += 1
            keep = wv > j
            bi, ai, ti, wv = bi[keep], ai[keep], ti[keep], wv[keep]
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(wa > 0, acc / np.where(wa > 0, wa, 1.0), 0.0)
        return np.where(avail[None], out, np.nan)

    def stat(v: np.ndarray, w: np.ndarray, row_sum: float | None = None) -> np.ndarray:
        if builtin:
            return _weighted_task_mean(v, w, row_sum)
        out = np.asarray(statistic(v, w), dtype=float)  # type: ignore[operator]
        if out.ndim == 1:
            out = out[:, None]
        if out.ndim != 2 or out.shape[0] != w.shape[0] or out.shape[1] not in (1, v.shape[1]):
            raise ValueError(
                "a callable `statistic` must return an array of shape (b,) or (b, U) for "
                f"values of shape {v.shape} and weights of shape {w.shape}; got {out.shape}"
            )
        return out

    v_obs = values_of(cells.n, cells.s)[None]  # (1, U, T)
    U = v_obs.shape[1]
    theta = stat(v_obs, np.ones((1, T)) if paired else np.ones((1, U, T)))[0]
    n_out = theta.shape[0]
    n_tasks = np.isfinite(v_obs[0]).sum(-1)
    n_excl = T - n_tasks

    # ---- resamples, in chunks (no loop per resample)
    per = T * (U if (not paired or scheme != "tasks") else 1) * (
        cells.packed.shape[-1] if (cells.packed is not None and scheme != "tasks") else 1
    )
    shared_tasks = builtin and scheme == "tasks" and paired and codes is None
    # A mean over tasks depends on a task resample only through how many draws land on
    # each distinct column of values (the agents' values on one task). When there are
    # few distinct columns (one agent with R runs has at most R + 1), those counts are
    # drawn directly from their multinomial: the same bootstrap distribution, exactly,
    # at the cost of K binomial draws per resample instead of T index draws.
    patterns = None
    if shared_tasks:
        cols = np.where(np.isfinite(v_obs[0]), v_obs[0], np.inf).T  # (T, U); inf marks "absent"
        uniq, n_per = np.unique(cols, axis=0, return_counts=True)
        if len(uniq) * _PATTERN_RATIO <= T:
            present_p = np.isfinite(uniq)
            patterns = (
                np.where(present_p, uniq, 0.0),  # (K, U) values
                present_p.astype(float),  # (K, U) presence
                n_per / T,  # (K,) probability of a draw landing on each column
                bool(present_p.all()),
            )
    gather = shared_tasks and patterns is None and U <= 4
    if patterns is not None:
        per = len(patterns[2]) + U
    if gather:
        all_present = bool(np.isfinite(v_obs).all())
        v0_obs = np.where(np.isfinite(v_obs[0]), v_obs[0], 0.0)
        pres_obs = np.isfinite(v_obs[0]).astype(float)
        per = T * U
    # float32 products (twice as fast) when they are exact: every value a multiple of 1/256
    # (binary scores, means of up to 8 runs in powers of two...) and every partial sum of
    # the integer weights times the values below 2^24 in those units
    w_dtype = np.float32 if (shared_tasks and _float32_exact(v_obs[0], T)) else float
    budget = _GATHER_CHUNK_ELEMS if gather else _CHUNK_ELEMS
    chunk = int(max(1, min(n_resamples, budget // max(per, 1))))
    dist = np.empty((n_resamples, n_out))
    done = 0
    bar = Progress(n_resamples, "bootstrap resamples", enabled=progress)
    while done < n_resamples:
        bar.update(done - bar.done)
        b = min(chunk, n_resamples - done)
        if patterns is not None:
            pv, pp, prob_k, all_present_p = patterns
            counts = gen.multinomial(T, prob_k, size=b).astype(float)  # (b, K)
            num = counts @ pv
            den = T if all_present_p else counts @ pp
            with np.errstate(invalid="ignore", divide="ignore"):
                dist[done : done + b] = np.where(den > 0, num / den, np.nan)
            done += b
            continue
        if gather:
            # few statistics, no clusters: index the drawn tasks instead of forming weights
            # the index type task_weights draws, so both paths see the same resamples for one rng
            # (then widened to intp here, in cache: take with narrow indices is 3x slower)
            idx = gen.integers(0, T, size=(b, T), dtype=_index_dtype(T)).astype(np.intp)
            num = np.stack([np.take(v0_obs[u], idx).sum(-1) for u in range(U)])  # (U, b)
            den = T if all_present else np.stack([np.take(pres_obs[u], idx).sum(-1) for u in range(U)])
            with np.errstate(invalid="ignore", divide="ignore"):
                dist[done : done + b] = np.where(den > 0, num / den, np.nan).T
            done += b
            continue
        if scheme == "runs":
            w = np.ones((b, T)) if paired else np.ones((b, U, T))
            v = _apply_pairs(copies_mean(np.ones((b, A, T), dtype=bool), np.ones((b, A, T))), pairs_idx)
        else:
            if paired:
                w = task_weights(T, b, gen, clusters=codes).astype(w_dtype)
            else:
                w = task_weights(T, b * U, gen, clusters=codes).astype(float).reshape(b, U, T)
            if scheme == "tasks":
                v = v_obs
            else:  # two-stage: each copy of a task gets its own run resample
                wa = np.broadcast_to(w[:, None, :] if w.ndim == 2 else w, (b, A, T))
                v = _apply_pairs(copies_mean(wa > 0, wa), pairs_idx)
        # an unclustered task resample draws T tasks: every row of w sums to T
        dist[done : done + b] = stat(v, w, T if (codes is None and scheme != "runs" and w.ndim == 2) else None)
        done += b
    bar.update(done - bar.done)
    bar.close()

    n_undef = (~np.isfinite(dist)).sum(0)
    if n_undef.any():
        warnings.warn(
            f"the statistic was undefined in up to {int(n_undef.max())} of {n_resamples} resamples "
            "(e.g. an agent drew none of the tasks it ran); they are left out of the interval "
            "and counted in `n_undefined`.",
            UndefinedResampleWarning,
            stacklevel=2,
        )
    alpha = 1 - prob
    z0 = acc_a = None
    if method == "percentile":
        lims = _column_quantiles(dist, np.tile([alpha / 2, 1 - alpha / 2], (n_out, 1)))
    else:
        if codes is None:
            groups = np.arange(T)
            n_groups = T
        else:
            groups = codes
            n_groups = int(codes.max()) + 1
        jack = np.empty((n_groups, n_out))
        jchunk = int(max(1, _CHUNK_ELEMS // max(T * (1 if paired else U), 1)))
        if builtin:
            # closed form for a mean over tasks: leave group g out of the sums
            pres = np.isfinite(v_obs[0])
            v0 = np.where(pres, v_obs[0], 0.0)
            flat = (np.arange(U)[:, None] * n_groups + groups[None, :]).ravel()
            num_g = np.bincount(flat, weights=v0.ravel(), minlength=U * n_groups).reshape(U, n_groups)
            den_g = np.bincount(flat, weights=pres.ravel().astype(float), minlength=U * n_groups).reshape(U, n_groups)
            with np.errstate(invalid="ignore", divide="ignore"):
                left = den_g.sum(1, keepdims=True) - den_g
                jack = np.where(left > 0, (num_g.sum(1, keepdims=True) - num_g) / left, np.nan).T
        for g0 in range(0, 0 if builtin else n_groups, jchunk):  # the generic leave-one-out
            gs = np.arange(g0, min(n_groups, g0 + jchunk))
            wj = (groups[None, :] != gs[:, None]).astype(float)
            if not paired:
                wj = np.broadcast_to(wj[:, None, :], (len(gs), U, T))
            jack[gs] = stat(v_obs, wj)
        lims, z0, acc_a = _bca(theta, dist, jack, alpha)

    # ---- package
    if pairs_idx is not None:
        odim: tuple[str, ...] = ("pair",)
        ocoords: dict = {"pair": pair_labels}
    elif agent_coord is not None and n_out == A:
        odim, ocoords = (agent_dim,), {agent_dim: agent_coord.values}
    else:
        odim, ocoords = ("statistic",), {}
    squeeze = (agent_coord is None and pairs_idx is None) or (odim == ("statistic",) and n_out == 1)
    name = statistic if builtin else getattr(statistic, "__name__", "statistic")
    kind = method
    detail = f"bootstrap, {scheme} scheme, resampling {unit}s, {int(n_resamples)} resamples"
    attrs = {
        "statistic": str(name) + (f" (k={k})" if builtin and statistic != "mean" else ""),
        "scheme": scheme,
        "method": method,
        "n_resamples": int(n_resamples),
        "resample_unit": unit,
        "paired_resample": int(paired),
    }

    def da(x: np.ndarray, lead: tuple[str, ...] = (), lead_coords: dict | None = None, trail=()):
        dims = (*lead, *odim, *trail)
        out = xr.DataArray(x, dims=dims, coords={**(lead_coords or {}), **ocoords})
        if squeeze:
            out = out.squeeze(odim[0], drop=True)
        return out

    lims_da = da(lims, trail=("ci_bound",))
    ci = make_interval(
        lims_da.isel(ci_bound=0, drop=True),
        lims_da.isel(ci_bound=1, drop=True),
        prob=prob,
        kind=kind,
        detail=detail,
    )
    n_tasks_o = n_tasks if n_out == U else np.full(n_out, int(np.isfinite(v_obs[0]).any(0).sum()))
    n_excl_o = n_excl if n_out == U else T - n_tasks_o
    return BootstrapResult(
        estimate=da(theta).assign_attrs(attrs),
        ci=ci,
        distribution=da(dist, ("resample",), {"resample": np.arange(n_resamples)}),
        standard_error=da(np.nanstd(dist, axis=0, ddof=1)),
        n_tasks=da(n_tasks_o.astype(np.int64)),
        n_excluded=da(np.asarray(n_excl_o).astype(np.int64)),
        n_undefined=da(n_undef.astype(np.int64)),
        bias_correction=None if z0 is None else da(z0),
        acceleration=None if acc_a is None else da(acc_a),
        attrs={**attrs, "ci_prob": float(prob), "ci_kind": kind, "ci_detail": detail},
    )
