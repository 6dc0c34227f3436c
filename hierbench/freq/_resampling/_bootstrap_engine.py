"""The bootstrap engine behind ``bootstrap_ci``.

Per-cell data, run resampling, the resampled distribution and the interval
limits (numpy only; the wrapper in ``_bootstrap`` validates and packages, and
its docstring explains the weights).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import stats

from ..._base import Progress
from ..._base import counts as cell_counts
from .._inputs import score_array
from .._kernels import _bca_parts
from .._kernels import _column_quantiles
from .._kernels import _index_dtype
from .._kernels import _pass_kernel
from .._kernels import ratio
from .._kernels import task_weights

StatisticFn = Callable[[np.ndarray, np.ndarray], np.ndarray]

_CHUNK_ELEMS = 2**21  # elements of the largest temporary per chunk (2^21 measured ~10% faster than 2^22)
# draw multinomial counts over distinct value columns when there are at most T / 16 of
# them: a binomial draw costs ~16x an index draw plus its share of the bincount
# (measured: 10,000 x 11 multinomial 6.5 ms; 10,000 x 500 index draws + counts 26 ms)
_PATTERN_RATIO = 16
# the gather path's index chunk stays in cache (measured, T = 2,000, 10,000 resamples:
# 2^18 elements per chunk 45 ms, 2^22 elements 81 ms)
_GATHER_CHUNK_ELEMS = 2**18


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
            p = ratio(self.s, self.n, 0.0)
            self.cdf = stats.binom.cdf(np.arange(nmax), self.n[..., None], p[..., None])
            # cells with fewer runs: CDF is 1 from n on, so they never exceed n
            self.cdf = np.where(np.arange(nmax) >= self.n[..., None], 1.0, self.cdf)


def _cells_from(data: xr.Dataset | xr.DataArray, run_dim: str, task_dim: str, agent_dim: str):
    """Return (cells, agent coord or None, task index, cluster codes source)."""
    if isinstance(data, xr.Dataset) and "n_runs" in data and "n_success" in data and "score" not in data:
        cnt = cell_counts(data, dim=run_dim, binary=False)
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
    for name, d in (("run_dim", run_dim), ("task_dim", task_dim)):
        if d not in score.dims:
            raise ValueError(f"`{name}` must be a dimension of the scores {score.dims}; got {d!r}")
    has_agent = agent_dim in score.dims
    order = (agent_dim, task_dim, run_dim) if has_agent else (task_dim, run_dim)
    extra = [d for d in score.dims if d not in order]
    if extra:
        raise ValueError(f"the scores must have dims {order}; found extra dims {extra}")
    y = np.asarray(score.transpose(*order).values, dtype=float)
    if not has_agent:
        y = y[None]
    fin = np.isfinite(y)
    cnt = cell_counts(score, dim=run_dim, binary=False)  # the one counts routine (refuses inf)
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
            return ratio(s, n)
    kind = "hat" if stat == "pass_hat_k" else "at"
    v, _ = _pass_kernel(n, np.round(s), int(k), kind=kind)  # type: ignore[arg-type]
    return v


def _resample_runs_dense(gen: np.random.Generator, cells: _Cells, size: int) -> np.ndarray:
    """As :func:`_resample_runs_at` for every cell at once: ``s*`` of shape (size, A, T)."""
    n = cells.n
    if cells.binary:
        if cells.cdf is None:
            p = ratio(cells.s, n, 0.0)
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
            p = ratio(cells.s[a_idx, t_idx], n, 0.0)
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
            if den is None and row_sum is not None and row_sum > 0:
                num /= row_sum  # ratio's division where every denominator is positive, in place
                return num
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
        return ratio(num, den)


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
# the plan: what is resampled and how a resample becomes a statistic
# ---------------------------------------------------------------------------


@dataclass
class _Plan:
    """Everything the engine needs about one call, fixed after validation."""

    cells: _Cells
    statistic: str | StatisticFn
    builtin: bool
    k: int | None
    pairs_idx: np.ndarray | None
    scheme: str
    paired: bool
    codes: np.ndarray | None

    def __post_init__(self) -> None:
        self.cell_stat = self.statistic if self.builtin else "mean"
        self.cols: slice | None = None  # a block of the outputs (``block``); None: all of them
        self.A, self.T = self.cells.n.shape
        self.obs_cell = _values(self.cells.n, self.cells.s, self.cell_stat, self.k)  # (A, T)
        self.v_obs = self.values_of(self.cells.n, self.cells.s)[None]  # (1, U, T)
        self.U = self.v_obs.shape[1]

    def values_of(self, n: np.ndarray, s: np.ndarray) -> np.ndarray:
        return self.outputs(_values(n, s, self.cell_stat, self.k))

    def outputs(self, v: np.ndarray) -> np.ndarray:
        """Per-cell values ``(..., A, T)`` as the outputs' ``(..., U, T)``: pair differences, or the agents."""
        if self.pairs_idx is not None:
            return _apply_pairs(v, self.pairs_idx)
        return v if self.cols is None else v[..., self.cols, :]

    def block(self, cols: slice) -> _Plan:
        """The plan of the outputs ``cols`` alone: the same cells, so the same draws make its resamples."""
        sub = copy.copy(self)
        sub.cols = cols
        if self.pairs_idx is not None:
            sub.pairs_idx = self.pairs_idx[cols]
        sub.v_obs = self.v_obs[:, cols]
        sub.U = sub.v_obs.shape[1]
        return sub

    def copies_mean(self, gen: np.random.Generator, drawn: np.ndarray, wa: np.ndarray) -> np.ndarray:
        """Per (resample, agent, task): the mean over ``wa`` independent run resamples.

        Only drawn cells get draws (copy ``j`` only where ``wa > j``), so the cost is
        one draw per drawn task copy, not ``max(w)`` draws per cell.
        """
        cells, k, cs = self.cells, self.k, self.cell_stat
        avail = np.isfinite(self.obs_cell)
        # copy 0 densely (most cells are drawn at least once), later copies sparsely
        s0 = _resample_runs_dense(gen, cells, wa.shape[0])
        acc = np.where(drawn & avail[None], _values(cells.n[None], s0, cs, k), 0.0)
        bi, ai, ti = np.nonzero((wa > 1) & drawn & avail[None])
        wv = wa[bi, ai, ti]
        j = 1
        while len(bi):
            s_star = _resample_runs_at(gen, cells, ai, ti)
            acc[bi, ai, ti] += _values(cells.n[ai, ti], s_star, cs, k)
            j += 1
            keep = wv > j
            bi, ai, ti, wv = bi[keep], ai[keep], ti[keep], wv[keep]
        with np.errstate(invalid="ignore", divide="ignore"):
            out = ratio(acc, wa, 0.0)
        return np.where(avail[None], out, np.nan)

    def stat(self, v: np.ndarray, w: np.ndarray, row_sum: float | None = None) -> np.ndarray:
        if self.builtin:
            return _weighted_task_mean(v, w, row_sum)
        out = np.asarray(self.statistic(v, w), dtype=float)  # type: ignore[operator]
        if out.ndim == 1:
            out = out[:, None]
        if out.ndim != 2 or out.shape[0] != w.shape[0] or out.shape[1] not in (1, v.shape[1]):
            raise ValueError(
                "a callable `statistic` must return an array of shape (b,) or (b, U) for "
                f"values of shape {v.shape} and weights of shape {w.shape}; got {out.shape}"
            )
        return out


# ---------------------------------------------------------------------------
# the resampled distribution
# ---------------------------------------------------------------------------


def _patterns(plan: _Plan) -> tuple | None:
    """The multinomial shortcut's data, when few distinct value columns make it pay.

    A mean over tasks depends on a task resample only through how many draws land on
    each distinct column of values (the agents' values on one task). When there are
    few distinct columns (one agent with R runs has at most R + 1), those counts are
    drawn directly from their multinomial: the same bootstrap distribution, exactly,
    at the cost of K binomial draws per resample instead of T index draws.
    """
    v0 = plan.v_obs[0]
    cols = np.where(np.isfinite(v0), v0, np.inf).T  # (T, U); inf marks "absent"
    uniq, n_per = np.unique(cols, axis=0, return_counts=True)
    if len(uniq) * _PATTERN_RATIO > plan.T:
        return None
    present_p = np.isfinite(uniq)
    return (
        np.where(present_p, uniq, 0.0),  # (K, U) values
        present_p.astype(float),  # (K, U) presence
        n_per / plan.T,  # (K,) probability of a draw landing on each column
        bool(present_p.all()),
    )


def _pattern_chunk(gen: np.random.Generator, T: int, patterns: tuple, b: int) -> np.ndarray:
    pv, pp, prob_k, all_present_p = patterns
    counts = gen.multinomial(T, prob_k, size=b).astype(float)  # (b, K)
    num = counts @ pv
    den = T if all_present_p else counts @ pp
    with np.errstate(invalid="ignore", divide="ignore"):
        return ratio(num, den)


def _gather_chunk(gen: np.random.Generator, plan: _Plan, b: int) -> np.ndarray:
    """Few statistics, no clusters: index the drawn tasks instead of forming weights."""
    T, U, v = plan.T, plan.U, plan.v_obs[0]
    v0, pres = np.where(np.isfinite(v), v, 0.0), np.isfinite(v).astype(float)
    # the index type task_weights draws, so both paths see the same resamples for one rng
    # (then widened to intp here, in cache: take with narrow indices is 3x slower)
    idx = gen.integers(0, T, size=(b, T), dtype=_index_dtype(T)).astype(np.intp)
    num = np.stack([np.take(v0[u], idx).sum(-1) for u in range(U)])  # (U, b)
    all_present = bool(np.isfinite(plan.v_obs).all())
    den = T if all_present else np.stack([np.take(pres[u], idx).sum(-1) for u in range(U)])
    with np.errstate(invalid="ignore", divide="ignore"):
        return ratio(num, den).T


def _weights_chunk(gen: np.random.Generator, plan: _Plan, b: int, w_dtype: type) -> np.ndarray:
    """The general path: task (cluster) weights, run resamples where the scheme asks."""
    T, U, A = plan.T, plan.U, plan.A
    if plan.scheme == "runs":
        w = np.ones((b, T)) if plan.paired else np.ones((b, U, T))
        v = plan.outputs(plan.copies_mean(gen, np.ones((b, A, T), dtype=bool), np.ones((b, A, T))))
    else:
        if plan.paired:
            w = task_weights(T, b, gen, clusters=plan.codes).astype(w_dtype)
        else:
            w = task_weights(T, b * U, gen, clusters=plan.codes).astype(float).reshape(b, U, T)
        if plan.scheme == "tasks":
            v = plan.v_obs
        else:  # two-stage: each copy of a task gets its own run resample
            wa = np.broadcast_to(w[:, None, :] if w.ndim == 2 else w, (b, A, T))
            v = plan.outputs(plan.copies_mean(gen, wa > 0, wa))
    # an unclustered task resample draws T tasks: every row of w sums to T
    full = plan.codes is None and plan.scheme != "runs" and w.ndim == 2
    return plan.stat(v, w, T if full else None)


@dataclass
class _Schedule:
    """How one call's resamples are drawn and turned into statistics, fixed by the whole plan.

    A block of the outputs (:meth:`_Plan.block`) is filled with the same schedule, so from
    the same generator state it sees the same resamples: the path (multinomial patterns,
    gathered indices, or weights), the weights' float type and the chunk sizes all come
    from every output, and numpy's bounded-integer draws of narrow types buffer bits per
    call, so other chunk sizes would draw other resamples.
    """

    patterns: tuple | None
    gather: bool
    w_dtype: type
    chunk: int


def _schedule(plan: _Plan, n_resamples: int) -> _Schedule:
    """The drawing path and chunk size of ``plan`` (no loop per resample)."""
    T, U = plan.T, plan.U
    packed = plan.cells.packed
    per = T * (U if (not plan.paired or plan.scheme != "tasks") else 1) * (
        packed.shape[-1] if (packed is not None and plan.scheme != "tasks") else 1
    )
    shared_tasks = plan.builtin and plan.scheme == "tasks" and plan.paired and plan.codes is None
    patterns = _patterns(plan) if shared_tasks else None
    gather = shared_tasks and patterns is None and U <= 4
    if patterns is not None:
        per = len(patterns[2]) + U
    if gather:
        per = T * U
    # float32 products (twice as fast) when they are exact: every value a multiple of 1/256
    # (binary scores, means of up to 8 runs in powers of two...) and every partial sum of
    # the integer weights times the values below 2^24 in those units
    w_dtype = np.float32 if (shared_tasks and _float32_exact(plan.v_obs[0], T)) else float
    budget = _GATHER_CHUNK_ELEMS if gather else _CHUNK_ELEMS
    chunk = int(max(1, min(n_resamples, budget // max(per, 1))))
    return _Schedule(patterns, gather, w_dtype, chunk)


def _fill(
    plan: _Plan, sched: _Schedule, n_out: int, n_resamples: int, gen: np.random.Generator, bar: Progress
) -> np.ndarray:
    """The distribution ``(n_resamples, n_out)`` of ``plan``'s outputs under ``sched``, chunk by chunk."""
    T = plan.T
    patterns = sched.patterns
    if patterns is not None and plan.cols is not None:
        pv, pp, prob_k, all_present_p = patterns
        patterns = (pv[:, plan.cols], pp[:, plan.cols], prob_k, all_present_p)
    dist = np.empty((n_resamples, n_out))
    done = 0
    while done < n_resamples:
        b = min(sched.chunk, n_resamples - done)
        if patterns is not None:
            dist[done : done + b] = _pattern_chunk(gen, T, patterns, b)
        elif sched.gather:
            dist[done : done + b] = _gather_chunk(gen, plan, b)
        else:
            dist[done : done + b] = _weights_chunk(gen, plan, b, sched.w_dtype)
        done += b
        bar.update(b)
    return dist


def _distribution(
    plan: _Plan, n_out: int, n_resamples: int, gen: np.random.Generator, progress: bool | None
) -> np.ndarray:
    """The bootstrap distribution ``(n_resamples, n_out)``, in chunks (no loop per resample)."""
    bar = Progress(n_resamples, "bootstrap resamples", enabled=progress)
    dist = _fill(plan, _schedule(plan, n_resamples), n_out, n_resamples, gen, bar)
    bar.close()
    return dist


# ---------------------------------------------------------------------------
# interval limits
# ---------------------------------------------------------------------------


def _jackknife(plan: _Plan, n_out: int) -> np.ndarray:
    """Leave-one-task (cluster) -out values of the statistic, shape (n_groups, n_out)."""
    T, U, codes = plan.T, plan.U, plan.codes
    groups = np.arange(T) if codes is None else codes
    n_groups = T if codes is None else int(codes.max()) + 1
    if plan.builtin:
        # closed form for a mean over tasks: leave group g out of the sums
        pres = np.isfinite(plan.v_obs[0])
        v0 = np.where(pres, plan.v_obs[0], 0.0)
        flat = (np.arange(U)[:, None] * n_groups + groups[None, :]).ravel()
        num_g = np.bincount(flat, weights=v0.ravel(), minlength=U * n_groups).reshape(U, n_groups)
        den_g = np.bincount(
            flat, weights=pres.ravel().astype(float), minlength=U * n_groups
        ).reshape(U, n_groups)
        with np.errstate(invalid="ignore", divide="ignore"):
            left = den_g.sum(1, keepdims=True) - den_g
            return ratio(num_g.sum(1, keepdims=True) - num_g, left).T
    jack = np.empty((n_groups, n_out))
    jchunk = int(max(1, _CHUNK_ELEMS // max(T * (1 if plan.paired else U), 1)))
    for g0 in range(0, n_groups, jchunk):  # the generic leave-one-out
        gs = np.arange(g0, min(n_groups, g0 + jchunk))
        wj = (groups[None, :] != gs[:, None]).astype(float)
        if not plan.paired:
            wj = np.broadcast_to(wj[:, None, :], (len(gs), U, T))
        jack[gs] = plan.stat(plan.v_obs, wj)
    return jack


def _limits(plan: _Plan, theta: np.ndarray, dist: np.ndarray, method: str, prob: float):
    """``(lims (n_out, 2), z0, a, (n_bad, n_ok))``: percentile quantiles, or BCa with its z0 and acceleration.

    ``n_bad`` of the ``n_ok`` outputs with an estimate have no BCa interval; the caller warns
    (:func:`~hierbench.freq._kernels.warn_bca_undefined`), once for all its blocks.
    """
    alpha = 1 - prob
    n_out = theta.shape[0]
    if method == "percentile":
        return _column_quantiles(dist, np.tile([alpha / 2, 1 - alpha / 2], (n_out, 1))), None, None, (0, 0)
    # an output undefined on the data (an agent with no runs; bootstrap_ci names it) has no BCa
    # interval: NaN, without the one-sided-distribution warning, which is not why
    ok = np.isfinite(theta)
    lims, z0, acc = np.full((n_out, 2), np.nan), np.full(n_out, np.nan), np.full(n_out, np.nan)
    n_bad = 0
    if ok.any():
        lims[ok], z0[ok], acc[ok], n_bad = _bca_parts(theta[ok], dist[:, ok], _jackknife(plan, n_out)[:, ok], alpha)
    return lims, z0, acc, (n_bad, int(ok.sum()))


# ---------------------------------------------------------------------------
# per-output summaries without the whole distribution (compare_agents' many pairs)
# ---------------------------------------------------------------------------

#: the largest bootstrap distribution (bytes) :func:`_summaries` holds at once: 316 agents' 49,770
#: pairs x 9,999 resamples are 4 GB of float64, and the products and sorts behind the limits
#: took three times that (12.9 GB measured); in blocks of 256 MB the whole call peaks at 0.8 GB
_BLOCK_BYTES = 2**28
#: a block of outputs starts at a multiple of this many: a BLAS product treats its columns in
#: groups of up to 8 or 16, so a column inside a block sits where it sat in one product (measured
#: with OpenBLAS: only a product's last ``U mod 8`` columns can round otherwise in a narrower one)
_BLOCK_ALIGN = 64


def _blocks(plan: _Plan, n_out: int, n_resamples: int) -> list[slice]:
    """The blocks of outputs whose distribution fits ``_BLOCK_BYTES`` (one block when it all fits).

    Only a built-in statistic over one shared task resample splits into its outputs'
    columns; a callable (it sees every output) and independent resamples per agent (drawn
    per output) keep one block. No block is a single column where others are wider: a sum
    down one column of a (B, 1) array is pairwise, down a (B, U) array sequential.
    """
    width = _BLOCK_BYTES // (8 * n_resamples)
    if width >= n_out or not (plan.builtin and plan.paired):
        return [slice(0, n_out)]
    width = max(_BLOCK_ALIGN, width // _BLOCK_ALIGN * _BLOCK_ALIGN)
    starts = list(range(0, n_out, width))
    if n_out - starts[-1] < 2:
        starts.pop()  # the last output joins the block before
    return [slice(a, b) for a, b in zip(starts, [*starts[1:], n_out], strict=True)]


def _percentile_p(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column: the two-sided p-value inverting the percentile interval, and its Monte Carlo error.

    ``p = 2 min(P*(d <= 0), P*(d >= 0))`` over the defined resamples, each share
    ``(1 + count) / (B + 1)``; its standard error is ``sqrt(p (2 - p) / B)``.
    """
    B = np.isfinite(dist).sum(0)
    lo = (1 + np.count_nonzero(dist <= 0, axis=0)) / (B + 1)
    hi = (1 + np.count_nonzero(dist >= 0, axis=0)) / (B + 1)
    p = np.minimum(1.0, 2 * np.minimum(lo, hi))
    with np.errstate(invalid="ignore", divide="ignore"):
        return p, np.sqrt(p * (2 - p) / B)


def _summaries(
    plan: _Plan, theta: np.ndarray, n_resamples: int, gen: np.random.Generator, progress: bool | None,
    method: str, prob: float,
) -> dict:
    """Per output, what a caller needs of the bootstrap distribution, never all of it at once.

    ``lims``, ``z0``, ``acc`` (as :func:`_limits`; the BCa count in ``bca``), ``n_undefined``
    (resamples where the output is undefined) and ``p`` / ``p_mcse``
    (:func:`_percentile_p`). The outputs go in blocks whose distribution fits
    ``_BLOCK_BYTES`` (:func:`_blocks`). Every block replays the same resamples: the
    generator's state is saved before the draws and restored for each block, and the
    schedule (path and chunk sizes) is the whole plan's; after the last block the generator
    is where one pass would have left it. Each summary is a function of its own column, so
    the result is the one-distribution result, bit for bit where the sums are exact (binary
    scores or means of 2, 4 or 8 runs: the float32 path) and on the runs and two-stage
    schemes. For other values the tasks scheme's BLAS product may round a few columns of a
    narrower product in the last bit (tests: at most 3e-16 on a limit; none of 4,950 pairs'
    limits at 5 runs), and a limit or count that rests on a tie at the estimate or at 0
    (BCa's z0, the p-value) can move with it, as it can between BLAS builds and thread counts.
    """
    U = theta.shape[0]
    blocks = _blocks(plan, U, n_resamples)
    sched = _schedule(plan, n_resamples)
    state = gen.bit_generator.state
    out = {"lims": np.empty((U, 2)), "n_undefined": np.empty(U, dtype=np.int64), "p": np.empty(U),
           "p_mcse": np.empty(U), "z0": None, "acc": None}
    if method != "percentile":
        out["z0"], out["acc"] = np.empty(U), np.empty(U)
    n_bad = n_ok = 0
    desc = "bootstrap resamples" + (f" ({len(blocks)} blocks of outputs)" if len(blocks) > 1 else "")
    bar = Progress(n_resamples * len(blocks), desc, enabled=progress)
    for cols in blocks:
        gen.bit_generator.state = state
        sub = plan if len(blocks) == 1 else plan.block(cols)
        dist = _fill(sub, sched, len(theta[cols]), n_resamples, gen, bar)
        lims, z0, acc, (bad, ok) = _limits(sub, theta[cols], dist, method, prob)
        out["lims"][cols], n_bad, n_ok = lims, n_bad + bad, n_ok + ok
        if z0 is not None:
            out["z0"][cols], out["acc"][cols] = z0, acc
        out["n_undefined"][cols] = (~np.isfinite(dist)).sum(0)
        out["p"][cols], out["p_mcse"][cols] = _percentile_p(dist)
        del dist
    bar.close()
    out["bca"] = (n_bad, n_ok)
    return out
