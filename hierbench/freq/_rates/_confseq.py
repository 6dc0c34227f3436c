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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Literal

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import Result
from ..._base import UndefinedWarning
from ..._base import check_prob
from ..._base import interval_label
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ConfidenceSequenceResult", "EmptyConfidenceSequenceWarning", "confidence_sequence"]


class EmptyConfidenceSequenceWarning(UndefinedWarning):
    """The running intersection became empty: no constant mean fits the stream."""


_CHUNK_ELEMENTS = 8_000_000


def _plugin_bets(x: np.ndarray, level: float) -> np.ndarray:
    """Predictable plug-in bets ``(S, T)`` for streams ``x`` of shape ``(S, T)``."""
    T = x.shape[-1]
    t = np.arange(1, T + 1, dtype=float)
    mu = np.minimum((0.5 + np.cumsum(x, axis=-1)) / (t + 1), 1.0)
    s2 = (0.25 + np.cumsum((x - mu) ** 2, axis=-1)) / (t + 1)
    s2_prev = np.concatenate([np.full((*x.shape[:-1], 1), 0.25), s2[..., :-1]], axis=-1)
    return np.sqrt(2 * np.log(1 / level) / (s2_prev * t * np.log1p(t)))


def _in_cs(
    x: np.ndarray,
    grid: np.ndarray,
    alpha: float,
    theta: float,
    trunc_scale: float,
    combine: str,
) -> np.ndarray:
    """Membership ``(S, G, T)``: whether grid mean ``g`` is still in the sequence at time ``t``."""
    with np.errstate(divide="ignore"):
        cap_pos = trunc_scale / grid  # inf at m = 0
        cap_neg = trunc_scale / (1 - grid)  # inf at m = 1
    dx = x[:, None, :] - grid[None, :, None]  # (S, G, T)
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
        buf = np.minimum(bets[level][:, None, :], cap[None, :, None])
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
    if combine == "max":
        return inside
    return total <= 1 / alpha


def _bounds(
    x: np.ndarray, breaks: int, alpha: float, theta: float, trunc_scale: float, combine: str
) -> np.ndarray:
    """Lower and upper bounds ``(S, T, 2)`` on the grid ``0, 1/breaks, ..., 1``."""
    S, T = x.shape
    grid = np.linspace(0.0, 1.0, breaks + 1)
    out = np.empty((S, T, 2))
    step = max(1, _CHUNK_ELEMENTS // (grid.size * T))
    for s0 in range(0, S, step):
        inside = _in_cs(x[s0 : s0 + step], grid, alpha, theta, trunc_scale, combine)
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

    The repr shows the final position of each stream only; ``to_frame()``
    has one row per stream at the final position (``to_dataset()`` keeps
    the whole path).
    """

    ci: xr.DataArray
    estimate: xr.DataArray
    n: xr.DataArray
    dim: str = "task"

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
        """``ci`` (also as ``bounds``), ``estimate`` and ``n`` over the whole path."""
        return xr.Dataset(
            {"ci": self.ci, "bounds": self.ci, "estimate": self.estimate, "n": self.n},
            attrs=dict(self.ci.attrs),
        )

    def to_frame(self) -> pd.DataFrame:
        """One row per stream (agent) at the final position, interval ends as columns."""
        df = self.final().to_frame()
        df["n"] = int(self.n.values[-1])
        return df

    def _repr_lines(self) -> list[str]:
        lines = self.final()._repr_lines()
        lines[0] = (
            f"ConfidenceSequenceResult: running {interval_label(self.ci)} sequence over "
            f"{int(self.n.values[-1])} {self.dim}s; after the last:"
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


@renamed_kwargs(dim="task_dim")
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
) -> ConfidenceSequenceResult:
    """Hedged betting confidence sequence for a mean, running over tasks.

    Parameters
    ----------
    x : xarray.DataArray
        Per-task values in [0, 1] (e.g. an agent's per-task mean score) along
        ``task_dim``, in the order the tasks were (or will be) evaluated. Other
        dims (agents, simulated streams) are computed side by side.
    y : xarray.DataArray, optional
        A second agent's per-task values: the sequence is then for the mean of
        the paired difference ``x - y``, computed on ``(x - y + 1) / 2`` in
        [0, 1] and mapped back to [-1, 1].
    task_dim : str
        The task dim (the time axis of the sequence).
    prob : float
        Coverage ``1 - alpha``, simultaneously over all times.
    breaks : int
        Grid of candidate means ``0, 1/breaks, ..., 1`` (on the [0, 1] scale).
        Bounds are widened by one grid step, so the grid never under-covers.
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

    Returns
    -------
    ConfidenceSequenceResult
        ``bounds`` with dims ``(..., task_dim, ci_bound)``.

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
    values, z = _stream(x, y, task_dim)
    lead = z.dims[:-1]
    arr = z.values.reshape(-1, z.sizes[task_dim])
    b = _bounds(arr, int(breaks), 1 - prob, float(theta), float(trunc_scale), combine)
    if running_intersection:
        _intersect(b)
    if y is not None:
        b = 2 * b - 1
    b = b.reshape(*z.shape, 2)
    coords = {k: c for k, c in z.coords.items() if set(c.dims) <= set(z.dims)}
    tmpl = xr.DataArray(b[..., 0], dims=(*lead, task_dim), coords=coords)
    bounds = make_interval(
        tmpl,
        tmpl.copy(data=b[..., 1]),
        prob=prob,
        kind="betting",
        detail="hedged betting confidence sequence (Waudby-Smith and Ramdas 2024), time-uniform"
        + (", paired difference" if y is not None else ""),
        warn_zero_width=False,
    )
    bounds.attrs.update(
        {
            "breaks": int(breaks),
            "combine": combine,
            "running_intersection": int(running_intersection),
        }
    )
    n = xr.DataArray(np.arange(1, z.sizes[task_dim] + 1), dims=task_dim, coords={task_dim: z[task_dim].values})
    est = values.astype(float).cumsum(task_dim) / n
    return ConfidenceSequenceResult(ci=bounds, estimate=est.transpose(..., task_dim), n=n, dim=task_dim)
