"""Anytime-valid confidence sequences for a mean by betting.

For ``[0, 1]``-valued per-task values ``X_t`` with mean ``m`` the capital
processes

    K+_t(m) = prod_{i <= t} (1 + l+_i(m) (X_i - m)),
    K-_t(m) = prod_{i <= t} (1 - l-_i(m) (X_i - m))

are nonnegative martingales when ``m`` is the true mean and the bets are
predictable (fixed before ``X_i`` is seen). The hedged process
``max(theta K+, (1 - theta) K-)`` crosses ``1 / alpha`` with probability at
most ``alpha`` ever (Ville's inequality), so ``{m : hedged K_t(m) < 1 / alpha}``
is a confidence sequence: valid at every stopping time, so the evaluation may
be stopped, continued or peeked at whenever one likes (Waudby-Smith and Ramdas,
2024, JRSS-B 86(1)). The bets are the predictable plug-ins

    l_t = sqrt(2 log(1 / (alpha theta)) / (sigma2_{t-1} t log(1 + t))),

with a regularised running mean and variance (one pseudo-observation with mean
1/2 and variance 1/4), truncated at ``c / m`` (``c / (1 - m)`` for ``K-``).
The set is computed on a grid of candidate means, all at once.

The precondition: the martingale argument needs the values to arrive with a
constant conditional mean, that is in a uniformly random order. A benchmark
file's order is not one (SWE-bench Verified lists its tasks grouped by
repository): there the mean drifts along the stream, the capital process is
no martingale and the guarantee is void (in file order Claude 4.5 Opus's
final 90% set, [0.644, 0.724], excluded its own 500-task mean, 0.744).
``shuffle=True`` draws a uniformly random order (recorded in the result);
without it the data's order is used as given, and a final running mean
outside the final set is warned about (:class:`TaskOrderWarning`).

Tasks drawn in a random order from a finite benchmark of ``N`` are a sample
*without* replacement: the target is the benchmark's mean ``m``, and before
step ``t`` the tasks left have mean ``(N m - S_{t-1}) / (N - t + 1)``
(``S_{t-1}`` the sum seen). Betting against that moving mean instead of
``m`` keeps the capital a martingale under ``m`` (Waudby-Smith and Ramdas
2020, NeurIPS), and a candidate whose mean of the tasks left falls outside
[0, 1] is excluded outright, so the sets close in on the benchmark's mean
as its tasks run out. That is the default with ``shuffle=True`` (the
permutation covers the tasks of ``x``) and ``n_population`` gives it for a
benchmark monitored part way. On SWE-bench bash-only (24 agents, 5 random
orders, 90%) its mean width was 0.97 / 0.93 / 0.83 / 0.69 / 0.50 of the
i.i.d. sequence's at 50 / 100 / 250 / 375 / 450 of the 500 tasks; over 150
random orders of a grouped 200-task benchmark (4 agents) the whole path
missed the benchmark's mean in 4.0% of the 600 paths (the i.i.d. one 2.8%;
nominal 10%). After the last task every task is in, so the set there is the
mean itself, and a mean that the running sets had excluded earlier is warned
as a miss on the path (Kimi K2 Instruct on SWE-bench bash-only, order seed
53, 90%: excluded after task 25).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Literal

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import HierbenchWarning
from ..._base import Result
from ..._base import UndefinedWarning
from ..._base import as_rng
from ..._base import check_prob
from ..._base import entry_names
from ..._base import input_label
from ..._base import interval_label
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from ..._docs import fill_doc

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ConfidenceSequenceResult", "EmptyConfidenceSequenceWarning", "TaskOrderWarning", "confidence_sequence"]


class EmptyConfidenceSequenceWarning(UndefinedWarning):
    """The running intersection became empty: no constant mean fits the stream."""


class TaskOrderWarning(HierbenchWarning):
    """The tasks were taken in the data's order and the final running mean lies outside the final set.

    The sequence's guarantee assumes a uniformly random task order; a non-random
    order (tasks grouped by repository, say) makes the mean drift and breaks it.
    """


_CHUNK_ELEMENTS = 8_000_000


def _plugin_bets(x: np.ndarray, level: float) -> np.ndarray:
    """Predictable plug-in bets ``(S, T)`` for streams ``x`` of shape ``(S, T)``."""
    T = x.shape[-1]
    t = np.arange(1, T + 1, dtype=float)
    mu = np.minimum((0.5 + np.cumsum(x, axis=-1)) / (t + 1), 1.0)
    s2 = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1)
    s2_prev = np.concatenate([np.full((*x.shape[:-1], 1), 0.25), s2[..., :-1]], axis=-1)
    return np.sqrt(2 * np.log(1 / level) / (s2_prev * t * np.log1p(t)))


def _wor_means(x: np.ndarray, grid: np.ndarray, N: int) -> tuple[np.ndarray, np.ndarray]:
    """Without replacement from ``N`` values of mean ``g``: each step's conditional mean ``(S, G, T)``, and where ``g`` is impossible.

    Before step ``t`` (1-based) the ``t - 1`` values seen sum to ``S``, so the ``N - t + 1`` left
    have mean ``(N g - S) / (N - t + 1)``: outside [0, 1], no population of mean ``g`` is left
    (clipped here; ``impossible`` marks it, and with the values seen up to ``t`` included, the
    range ``[S_t / N, (S_t + N - t) / N]`` that the mean must lie in).
    """
    T = x.shape[-1]
    seen = np.cumsum(x, axis=-1)
    before = seen - x
    t = np.arange(1, T + 1, dtype=float)
    m = (N * grid[None, :, None] - before[:, None, :]) / (N - t + 1)
    tol = 1e-9
    impossible = (m < -tol) | (m > 1 + tol)
    impossible |= (N * grid[None, :, None] < seen[:, None, :] - tol) | (
        N * grid[None, :, None] > seen[:, None, :] + (N - t) + tol)
    return np.clip(m, 0.0, 1.0), impossible


def _in_cs(
    x: np.ndarray,
    grid: np.ndarray,
    alpha: float,
    theta: float,
    trunc_scale: float,
    combine: str,
    N: int | None = None,
) -> np.ndarray:
    """Membership ``(S, G, T)``: whether grid mean ``g`` is still in the sequence at time ``t``.

    ``N``: the values are drawn without replacement from ``N`` (module notes), so each step bets
    against the conditional mean of what is left (:func:`_wor_means`) instead of ``g`` itself.
    """
    impossible = None
    if N is None:
        m = grid[None, :, None]
    else:
        m, impossible = _wor_means(x, grid, N)
    with np.errstate(divide="ignore"):
        cap_pos = trunc_scale / m  # inf at m = 0
        cap_neg = trunc_scale / (1 - m)  # inf at m = 1
    dx = x[:, None, :] - m  # (S, G, T)
    thr = np.log(1 / alpha)
    if combine == "max":
        inside = np.ones(dx.shape, dtype=bool)
    else:
        total = np.zeros(dx.shape)
    bets: dict[float, np.ndarray] = {}
    for sign, cap, level, w in (
        (1.0, cap_pos, alpha * theta, theta),
        (-1.0, cap_neg, alpha * (1 - theta), 1 - theta),
    ):
        if w == 0:
            continue
        if level not in bets:
            bets[level] = _plugin_bets(x, level)
        # log capital, in place: cumsum(log1p(sign * min(lam, cap) * (x - m)))
        buf = np.minimum(bets[level][:, None, :], cap)
        buf *= dx
        if sign < 0:
            np.negative(buf, out=buf)
        np.log1p(buf, out=buf)
        np.cumsum(buf, axis=-1, out=buf)
        if combine == "max":
            inside &= buf <= thr - np.log(w)
        else:
            np.exp(buf, out=buf)
            buf *= w
            total += buf
    if combine != "max":
        inside = total <= 1 / alpha
    if impossible is not None:
        inside &= ~np.logical_or.accumulate(impossible, axis=-1)
    return inside


def _bounds(
    x: np.ndarray, breaks: int, alpha: float, theta: float, trunc_scale: float, combine: str, N: int | None = None
) -> np.ndarray:
    """Lower and upper bounds ``(S, T, 2)`` on the grid ``0, 1/breaks, ..., 1`` (``N``: without replacement)."""
    S, T = x.shape
    grid = np.linspace(0.0, 1.0, breaks + 1)
    out = np.empty((S, T, 2))
    step = max(1, _CHUNK_ELEMENTS // (grid.size * T * (1 if N is None else 3)))
    for s0 in range(0, S, step):
        inside = _in_cs(x[s0 : s0 + step], grid, alpha, theta, trunc_scale, combine, N)
        anyin = inside.any(axis=1)
        first = np.argmax(inside, axis=1)
        last = grid.size - 1 - np.argmax(inside[:, ::-1, :], axis=1)
        lo = np.where(anyin, np.maximum(0.0, grid[first] - 1 / breaks), 0.0)
        hi = np.where(anyin, np.minimum(1.0, grid[last] + 1 / breaks), 1.0)
        out[s0 : s0 + step, :, 0] = lo
        out[s0 : s0 + step, :, 1] = hi
    return out


@dataclass(frozen=True, repr=False)
class ConfidenceSequenceResult(Result):
    """Result of :func:`confidence_sequence`.

    Attributes
    ----------
    ci : xarray.DataArray
        Running bounds over the task order, trailing dim ``ci_bound``;
        attrs ``ci_prob``, ``ci_kind = "betting"`` and ``ci_detail``. Also
        readable as ``bounds`` (its former name).
    estimate : xarray.DataArray
        Running mean of the values (of ``x - y`` for a paired difference).
    n : xarray.DataArray
        Number of tasks seen, along ``task``.
    order : xarray.DataArray
        Along ``task``: the position in ``x`` of the task taken at each step
        (``0, 1, ...`` when the data's order was used; the permutation drawn
        with ``shuffle=True``).
    shuffled : bool
        Whether the order is a random permutation drawn by the call (the
        repr says which; so does ``ci.attrs["task_order"]``).
    n_population : int or None
        The number of tasks drawn from without replacement (the target is
        their mean); None for the i.i.d. sequence.
    agent_a, agent_b : str or None
        For a paired difference ``x - y``, the agents compared: each input's
        scalar ``agent`` coordinate, else its name where the two differ, else
        ``"x"`` / ``"y"`` (None for one sample).

    The repr shows the final position of each stream only; ``to_frame()``
    has one row per stream at the final position (``to_dataset()`` keeps
    the whole path).
    """

    ci: xr.DataArray
    estimate: xr.DataArray
    n: xr.DataArray
    dim: str = "task"
    order: xr.DataArray | None = None
    shuffled: bool = False
    agent_a: str | None = None
    agent_b: str | None = None
    n_population: int | None = None

    @property
    def bounds(self) -> xr.DataArray:
        """The running bounds (``ci``), under their former name."""
        return self.ci

    def final(self) -> Result:
        """The estimate and interval after the last task (one row per stream)."""
        return _FinalResult(
            estimate=self.estimate.isel({self.dim: -1}, drop=True),
            ci=self.ci.isel({self.dim: -1}, drop=True),
        )

    def to_dataset(self) -> xr.Dataset:
        """``ci`` (also as ``bounds``), ``estimate``, ``n`` and ``order`` over the whole path.

        The attrs are the interval's, with ``dim``, ``shuffled`` and the agents of a difference.
        """
        data = {"ci": self.ci, "bounds": self.ci, "estimate": self.estimate, "n": self.n}
        if self.order is not None:
            data["order"] = self.order
        return xr.Dataset(data, attrs={**self.ci.attrs, **self._plain_attrs()})

    def to_frame(self) -> pd.DataFrame:
        """One row per stream (agent) at the final position, interval ends as columns."""
        df = self.final().to_frame()
        df["n"] = int(self.n.values[-1])
        return df

    def _repr_lines(self) -> list[str]:
        lines = self.final()._repr_lines()
        order = "in a random order drawn by shuffle=True" if self.shuffled else "in the order given"
        if self.n_population is not None:
            order += f", without replacement from {self.n_population}"
        of = "" if self.agent_a is None else f" of the mean difference {self.agent_a} - {self.agent_b}"
        lines[0] = (
            f"ConfidenceSequenceResult: running {interval_label(self.ci)} sequence{of} over "
            f"{int(self.n.values[-1])} {self.dim}s {order}; after the last:"
        )
        return lines


@dataclass(frozen=True, repr=False)
class _FinalResult(Result):
    estimate: xr.DataArray
    ci: xr.DataArray


def _check_values(v: xr.DataArray, name: str, lo: float, hi: float) -> None:
    vals = v.values
    if np.isnan(vals).any():
        idx = np.argwhere(np.isnan(vals))[:5].tolist()
        raise ValueError(
            f"`{name}` must have no NaN (a sequence cannot skip a task: drop unrun tasks "
            f"first); {int(np.isnan(vals).sum())} NaN, e.g. at positions {idx}"
        )
    bad = (vals < lo) | (vals > hi)
    if bad.any():
        raise ValueError(
            f"`{name}` values must lie in [{lo:g}, {hi:g}]; {int(bad.sum())} do not, e.g. "
            f"{vals[bad][:5].tolist()}"
        )


def _check_settings(breaks, theta, trunc_scale, combine) -> None:
    if int(breaks) != breaks or breaks < 2:
        raise ValueError(f"`breaks` must be an integer >= 2; got {breaks!r}")
    if not 0 <= theta <= 1:
        raise ValueError(f"`theta` must satisfy 0 <= theta <= 1; got {theta!r}")
    if not 0 < trunc_scale <= 1:
        raise ValueError(f"`trunc_scale` must satisfy 0 < trunc_scale <= 1; got {trunc_scale!r}")
    if combine not in ("max", "sum"):
        raise ValueError(f"`combine` must be 'max' or 'sum'; got {combine!r}")


def _stream(
    x: xr.DataArray, y: xr.DataArray | None, task_dim: str
) -> tuple[xr.DataArray, xr.DataArray]:
    """``(values, z)``: the values whose mean is sought and their [0, 1] form, ``task_dim`` last."""
    for name, v in (("x", x), ("y", y)):
        if v is None:
            continue
        if not isinstance(v, xr.DataArray):
            raise TypeError(f"`{name}` must be an xarray.DataArray; got {type(v).__name__}")
        if task_dim not in v.dims:
            raise ValueError(f"`task_dim` must be a dimension of `{name}` {v.dims}; got {task_dim!r}")
        if v.sizes[task_dim] == 0:
            raise ValueError(
                f"`{name}` has no tasks along {task_dim!r} (size 0): a sequence needs at least one task"
            )
        if "run" in v.dims and task_dim != "run":
            raise ValueError(
                f"`{name}` has a 'run' dim: the sequence is over per-task values, so average "
                f"the runs of each task first (e.g. `{name}.mean('run')`)"
            )
        _check_values(v, name, 0.0, 1.0)
    if y is None:
        return x, x.astype(float).transpose(..., task_dim)
    try:
        x, y = xr.align(x, y, join="exact")
    except ValueError as err:
        raise ValueError(f"`x` and `y` must have the same {task_dim!r} labels") from err
    values = x - y
    return values, ((values + 1) / 2).astype(float).transpose(..., task_dim)


def _intersect(b: np.ndarray) -> None:
    """The running intersection of the bounds ``(S, T, 2)``, in place (NaN where empty)."""
    b[..., 0] = np.maximum.accumulate(b[..., 0], axis=1)
    b[..., 1] = np.minimum.accumulate(b[..., 1], axis=1)
    empty = b[..., 0] > b[..., 1]
    if empty.any():
        warn_user(
            f"the running intersection is empty at {int(empty.sum())} (stream, task) "
            "positions: no constant mean is compatible with the stream (a drifting mean, or "
            "a miss of probability <= 1 - prob); those bounds are NaN",
            EmptyConfidenceSequenceWarning,
        )
        b[empty] = np.nan


def _order(values: xr.DataArray, z: xr.DataArray, task_dim: str, shuffle, rng) -> tuple:
    """``(values, z, order)``: the streams in a uniformly random task order (``shuffle``), or as given."""
    if not isinstance(shuffle, (bool, np.bool_)):
        raise TypeError(f"`shuffle` must be True or False; got {shuffle!r}")
    if rng is not None and not shuffle:
        raise ValueError(
            f"`rng` draws the random task order of shuffle=True; got rng={rng!r} with shuffle=False: "
            "pass shuffle=True too, or no `rng`"
        )
    T = z.sizes[task_dim]
    pos = as_rng(rng).permutation(T) if shuffle else np.arange(T)
    if shuffle:
        values, z = values.isel({task_dim: pos}), z.isel({task_dim: pos})
    order = xr.DataArray(pos, dims=task_dim, coords={task_dim: z[task_dim].values}, name="order")
    return values, z, order


def _streams(z: xr.DataArray, mask: np.ndarray, what) -> str:
    """The first five streams where ``mask`` holds, each named and described by ``what(index)``, and a count of the rest."""
    named = [f"{who + ': ' if who else ''}{what(t)}" for who, t in entry_names(z.isel({z.dims[-1]: 0}, drop=True), mask)[:5]]
    more = f"; and {int(mask.sum()) - len(named)} more" if mask.sum() > len(named) else ""
    return "; ".join(named) + more


def _warn_outside(est: np.ndarray, b: np.ndarray, z: xr.DataArray, label: str, prob: float) -> None:
    """:class:`TaskOrderWarning` where a stream's final running mean lies outside its final set (data order)."""
    lo, hi = b[..., -1, 0], b[..., -1, 1]
    out = (est < lo - 1e-12) | (est > hi + 1e-12)  # NaN bounds (an empty set) are warned apart
    if not out.any():
        return
    named = _streams(z, out, lambda t: f"{est[t]:.4g} outside [{lo[t]:.4g}, {hi[t]:.4g}]")
    warn_user(
        f"the final running mean lies outside the final {label} set for {int(out.sum())} of {out.size} "
        f"stream(s) ({named}). The sequence's guarantee assumes the tasks come in a "
        "uniformly random order; in the data's order (e.g. tasks grouped by repository, as benchmark "
        "files often are) the mean drifts and the guarantee does not hold, and this is its usual sign "
        "(with `x` the whole benchmark that mean is the target itself, which a random order misses "
        f"with probability at most about {1 - prob:.3g}). Pass shuffle=True (with `rng`) to draw a "
        "random order, or evaluate the tasks in one",
        TaskOrderWarning,
    )


def _census_point(mean: np.ndarray, bounds: xr.DataArray, z: xr.DataArray, prob: float) -> None:
    """``shuffle=True``: the last step has seen every task, so its set is the mean itself (in place).

    The order was drawn over the tasks of ``x`` (``y``), so the target is their mean, known at the
    census. Where the running sets had excluded it earlier, the sequence missed on its path (a
    time-uniform miss, probability at most ``1 - prob`` over random orders): warned, with the step.
    """
    vals = bounds.values  # (..., task, 2), a view
    path = vals[..., :-1, :]
    m = mean[..., None]
    out = (path[..., 0] > m + 1e-12) | (path[..., 1] < m - 1e-12) | np.isnan(path[..., 0])
    vals[..., -1, 0] = mean
    vals[..., -1, 1] = mean
    bounds.attrs["ci_detail"] += ("; shuffle=True: after the last task every task of the input is in, so the "
                                  "set there is its mean, the target itself")  # fmt: skip
    missed = out.any(axis=-1)
    if not missed.any():
        return
    first = np.argmax(out, axis=-1)
    named = _streams(z, missed, lambda t: f"mean {mean[t]:.4g} first outside after task {first[t] + 1} of {vals.shape[-2]}")
    warn_user(
        f"the sequence missed on its path for {int(missed.sum())} of {missed.size} stream(s) "
        f"({named}): its running set excluded the mean of all the tasks (known "
        "exactly once every task is in, and given as the final set). In a uniformly random order "
        f"such a miss has probability at most {1 - prob:.3g}; the earlier bounds of that stream are "
        "not to be trusted",
        HierbenchWarning,
    )


@renamed_kwargs(dim="task_dim")
@fill_doc
def confidence_sequence(
    x: xr.DataArray,
    y: xr.DataArray | None = None,
    *,
    task_dim: str = "task",
    prob: float = DEFAULT_PROB,
    breaks: int = 1000,
    running_intersection: bool = True,
    theta: float = 0.5,
    trunc_scale: float = 0.5,
    combine: Literal["max", "sum"] = "max",
    shuffle: bool = False,
    n_population: int | Literal["infinite"] | None = None,
    rng: None | int | np.random.Generator = None,
) -> ConfidenceSequenceResult:
    """Hedged betting confidence sequence for a mean, running over tasks.

    The guarantee holds when the tasks come in a uniformly random order
    (module notes): evaluate them in one, or pass ``shuffle=True``.

    Parameters
    ----------
    x : xarray.DataArray
        Per-task values in [0, 1] (e.g. an agent's per-task mean score) along
        ``task_dim``, in the order the tasks were (or will be) evaluated, which
        must be a uniformly random order: a benchmark file's order (tasks
        grouped by repository or source) is not, and breaks the guarantee.
        Other dims (agents, simulated streams) are computed side by side.
    y : xarray.DataArray, optional
        A second agent's per-task values: the sequence is then for the mean of
        the paired difference ``x - y``, computed on ``(x - y + 1) / 2`` in
        [0, 1] and mapped back to [-1, 1].
    task_dim : str
        The task dim (the time axis of the sequence).
    prob : float
        Coverage ``1 - alpha``, simultaneously over all times.
    breaks : int
        Grid of candidate means ``0, 1/breaks, ..., 1`` ([0, 1] scale); bounds widened by one step.
    running_intersection : bool
        Intersect the sets over time (still valid; bounds become monotone).
    theta : float
        Weight of the upward bet in the hedge, in [0, 1].
    trunc_scale : float
        Bets are truncated at ``trunc_scale / m`` (``/ (1 - m)``), in (0, 1].
    combine : {"max", "sum"}
        Hedge by ``max(theta K+, (1 - theta) K-)`` (as the ``confseq``
        package's ``betting_cs`` does) or by the convex combination
        ``theta K+ + (1 - theta) K-`` (a martingale too; never wider).
    shuffle : bool
        Take the tasks in a uniformly random order drawn with ``rng`` (one
        permutation for all streams, ``x`` and ``y``), recorded in ``order``.
        False (default): the data's order, for values that arrive in a
        random order already or are monitored as they come. After a census
        (``n_population`` the tasks of ``x``) the set is the mean and a running
        set that had excluded it is warned; with a larger population, neither.
    n_population : int, "infinite" or None
        The size of the benchmark the tasks are drawn from without
        replacement in a random order, whose mean is then the target (the
        sets close in on it: module notes); ``"infinite"``: the i.i.d.
        sequence. Default: the tasks of ``x`` with ``shuffle=True``, else
        ``"infinite"``; an integer monitors a larger benchmark part way.
    %(rng)s
        Only with ``shuffle=True``.

    Returns
    -------
    ConfidenceSequenceResult
        ``bounds`` with dims ``(..., task_dim, ci_bound)`` along the order
        used; ``order`` the position in ``x`` of each step's task.

    Warns
    -----
    TaskOrderWarning
        In the data's order, where a stream's final running mean lies outside
        its final set: the usual sign of an order that is not random.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> x = xr.DataArray(np.random.default_rng(0).beta(2, 3, 500), dims="task")
    >>> cs = confidence_sequence(x)
    >>> lo, hi = cs.bounds.isel(task=-1).values
    >>> bool(lo < 0.4 < hi), bool(hi - lo < 0.15)
    (True, True)
    """
    prob = check_prob(prob)
    _check_settings(breaks, theta, trunc_scale, combine)
    values, z, order = _order(*_stream(x, y, task_dim), task_dim, shuffle, rng)
    N = _population(n_population, shuffle, z.sizes[task_dim])
    b = _running_bounds(z, y is not None, prob, int(breaks), float(theta), float(trunc_scale), combine, N,
                        running_intersection)
    n = xr.DataArray(np.arange(1, z.sizes[task_dim] + 1), dims=task_dim, coords={task_dim: z[task_dim].values})
    bounds = _sequence_interval(b, z, prob, y is not None, breaks, combine, running_intersection, N)
    bounds.attrs["task_order"] = ("a uniformly random permutation drawn by shuffle=True (the result's `order`)"
                                  if shuffle else "as given: the order of `x` (the guarantee assumes it is random)")
    est = (values.astype(float).cumsum(task_dim) / n).transpose(*z.dims)
    final = est.isel({task_dim: -1}).values
    _close(final, bounds, b, z, prob, shuffle, N)
    return ConfidenceSequenceResult(ci=bounds, estimate=est, n=n, dim=task_dim, order=order, shuffled=bool(shuffle),
                                    n_population=N, **_pair_names(x, y))  # fmt: skip


def _running_bounds(z: xr.DataArray, paired: bool, prob: float, breaks: int, theta: float, trunc_scale: float,
                    combine: str, N: int | None, running_intersection: bool) -> np.ndarray:
    """The bounds ``(..., task, 2)`` of the streams ``z`` (on the [-1, 1] scale of ``x - y`` when ``paired``)."""
    b = _bounds(z.values.reshape(-1, z.sizes[z.dims[-1]]), breaks, 1 - prob, theta, trunc_scale, combine, N)
    if running_intersection:
        _intersect(b)
    if paired:
        b = 2 * b - 1
    return b.reshape(*z.shape, 2)


def _close(final: np.ndarray, bounds: xr.DataArray, b: np.ndarray, z: xr.DataArray, prob: float, shuffle: bool,
           N: int | None) -> None:
    """The census point where every task of the benchmark is in; in the data's order, the drift check."""
    if shuffle and N == z.sizes[z.dims[-1]]:
        _census_point(final, bounds, z, prob)
    elif not shuffle:
        _warn_outside(final, b, z, interval_label(bounds), prob)


def _population(n_population, shuffle: bool, T: int) -> int | None:
    """The population size ``N`` of a without-replacement sequence, or None for the i.i.d. one."""
    if n_population is None:
        return T if shuffle else None
    if isinstance(n_population, str) and n_population == "infinite":
        return None
    if isinstance(n_population, (bool, np.bool_)) or not isinstance(n_population, (int, np.integer)) \
            or n_population < T:
        raise ValueError(f"`n_population` must be 'infinite' or an integer at least the number of tasks in `x` "
                         f"({T}): the size of the benchmark the tasks are drawn from; got {n_population!r}")
    return int(n_population)


def _pair_names(x: xr.DataArray, y: xr.DataArray | None) -> dict[str, str | None]:
    """``agent_a`` / ``agent_b`` of a paired sequence (``input_label``); None for one sample."""
    return {"agent_a": None, "agent_b": None} if y is None else {
        "agent_a": input_label(x, y, "x"), "agent_b": input_label(y, x, "y")}


def _sequence_interval(b, z, prob, paired, breaks, combine, running_intersection, N) -> xr.DataArray:
    """The running bounds ``b`` ``(..., task, 2)`` as an interval over ``z``'s dims, with the settings in attrs."""
    coords = {k: c for k, c in z.coords.items() if set(c.dims) <= set(z.dims)}
    tmpl = xr.DataArray(b[..., 0], dims=z.dims, coords=coords)
    bounds = make_interval(
        tmpl,
        tmpl.copy(data=b[..., 1]),
        prob=prob,
        kind="betting",
        detail="hedged betting confidence sequence (Waudby-Smith and Ramdas 2024), time-uniform"
        + (", paired difference" if paired else "")
        + ("" if N is None else f"; tasks drawn without replacement from {N} (Waudby-Smith and Ramdas 2020: each "
           "step bets against the mean of the tasks not yet seen), the target the mean of those tasks"),
        warn_zero_width=False,
    )
    bounds.attrs.update(
        {
            "breaks": int(breaks),
            "combine": combine,
            "running_intersection": int(running_intersection),
            "n_population": "infinite" if N is None else int(N),
        }
    )
    return bounds
