"""Subsets of a benchmark's tasks drawn with known probabilities, for design-based estimation.

A :class:`SubsetPlan` records everything a design-based estimator needs:
which tasks were drawn, in which order, and with which probability each
draw was made (and, where it has a closed form, each task's inclusion
probability). :func:`plan_subset` draws one by

``"srs"``
    simple random sampling without replacement (successive uniform draws);
``"stratified"``
    simple random sampling within strata (given, or quantile strata of a
    bank's predicted success rates), proportional allocation with at least
    two tasks per stratum;
``"pps"``
    successive sampling with probability proportional to a size measure
    among the tasks not yet drawn (the design of Des Raj's estimator);
``"poisson"``
    independent inclusions with probabilities proportional to a size
    measure (capped at 1), random sample size with mean ``n``.

With an :class:`~hierbench.freq.IRTBank` and no size measure, the size is
the bank's predictive sd of each task's outcome for an agent drawn from the
calibration population (Neyman's allocation for a difference estimator
whose working model is the bank). Nothing here looks at outcomes: the
plan is fixed before any task is run. :func:`hierbench.design.assisted_mean`
estimates from it.

This module imports numpy, scipy and xarray only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import Literal

import numpy as np
import xarray as xr
from scipy.special import expit

from .._base import HierbenchError
from .._base import as_rng
from .._base import check_choice
from .._base import check_int
from .._docs import fill_doc
from ..freq import IRTBank
from ._show import few

__all__ = ["SubsetPlan", "plan_subset"]

SUBSET_DESIGNS = ("srs", "stratified", "pps", "poisson")
#: standard-normal ability grid for a bank's population-average predictions (Gauss-Hermite-like, fixed)
_ABILITY = np.linspace(-4.0, 4.0, 41)
_ABILITY_W = np.exp(-0.5 * _ABILITY**2) / np.exp(-0.5 * _ABILITY**2).sum()


@dataclass(frozen=True, repr=False)
class SubsetPlan:
    """Tasks drawn with known probabilities, in the order they were drawn.

    Attributes
    ----------
    design : str
        ``"srs"``, ``"stratified"``, ``"pps"`` or ``"poisson"``.
    tasks : numpy.ndarray
        Every task of the benchmark (the population), as strings.
    order : xarray.DataArray
        The drawn tasks (dim ``step``), in drawing order.
    draw_prob : xarray.DataArray
        (``step``) the probability the step's task had when it was drawn,
        among the tasks of its stratum not drawn before (Poisson: its
        inclusion probability).
    stratum : xarray.DataArray
        (``task``) stratum index of every task (all 0 unless stratified).
    inclusion : xarray.DataArray
        (``task``) first-order inclusion probability where it has a closed
        form (srs ``n / T``, stratified ``n_h / T_h``, Poisson ``pi_t``);
        NaN for successive PPS (Des Raj's estimator needs only the draw
        probabilities).
    """

    design: str
    tasks: np.ndarray
    order: xr.DataArray
    draw_prob: xr.DataArray
    stratum: xr.DataArray
    inclusion: xr.DataArray

    def __len__(self) -> int:
        return int(self.order.size)

    @property
    def n_tasks(self) -> int:
        """``T``, the number of tasks in the population."""
        return int(self.tasks.size)

    def __repr__(self) -> str:
        """The design, how many tasks it drew of how many, the first drawn; the rest in the attributes."""
        n_strata = int(np.unique(self.stratum.values).size)
        inc = self.inclusion.values
        lo, hi = (np.nanmin(inc), np.nanmax(inc)) if np.isfinite(inc).any() else (np.nan, np.nan)
        p = ("draw probabilities per step in `draw_prob` (no closed-form inclusion probability)" if np.isnan(lo)
             else f"inclusion probability {lo:.3g} each" if np.isclose(lo, hi)
             else f"inclusion probabilities {lo:.3g} to {hi:.3g}")
        return (
            f"SubsetPlan: design {self.design!r}, {len(self)} of {self.n_tasks} tasks drawn"
            + (f" in {n_strata} strata" if n_strata > 1 else "")
            + (" in 1 stratum (the same as a simple random sample; a bank's default is min(5, n // 10) strata)"
               if n_strata == 1 and self.design == "stratified" else "")
            + f"; {p}\n  drawn first: {few(self.order.values)}"
        )

    def to_dataset(self) -> xr.Dataset:
        """The plan as a Dataset (per step and per task variables; the design in attrs)."""
        ds = xr.Dataset({"order": self.order, "draw_prob": self.draw_prob, "stratum": self.stratum,
                         "inclusion": self.inclusion})
        ds.attrs = {"design": self.design, "n_drawn": len(self)}
        return ds


def prior_predictive(bank: IRTBank) -> tuple[np.ndarray, np.ndarray]:
    """Each task's success probability and its Bernoulli variance for an agent of the calibration population.

    The ability is averaged over N(0, 1) (the calibration agents' scale) at
    the bank's posterior-mean item parameters.
    """
    a, d = bank.point()
    p = (_ABILITY_W[:, None] * expit(a[None, :] * _ABILITY[:, None] + d[None, :])).sum(0)
    return p, p * (1 - p)


@fill_doc
def plan_subset(
    tasks: int | Sequence[str] | IRTBank,
    n: int,
    *,
    design: Literal["srs", "stratified", "pps", "poisson"] = "srs",
    size: Sequence[float] | None = None,
    strata: Sequence[Any] | None = None,
    n_strata: int | None = None,
    rng: None | int | np.random.Generator = None,
) -> SubsetPlan:
    """Draw ``n`` tasks by a design with known probabilities, before any of them is run.

    Parameters
    ----------
    tasks : int, sequence of str or IRTBank
        The benchmark's tasks: a number (labelled ``"0"``, ``"1"``, ...),
        their labels, or a calibrated bank (its tasks; its predictions give
        the default size measure and strata).
    n : int
        Tasks to draw (the expected number for ``"poisson"``).
    design : {"srs", "stratified", "pps", "poisson"}
        See the module docstring.
    size : sequence of float, optional
        Positive size measure per task (``"pps"``, ``"poisson"``); default
        from the bank: its predictive sd of each task's outcome.
    strata : sequence, optional
        Stratum label per task (``"stratified"``); default from the bank:
        ``n_strata`` quantile strata of its predicted success rates.
    n_strata : int, optional
        Number of bank strata (default ``min(5, n // 10)``, at least 1: about
        ten draws per stratum, so each stratum's variance is estimated from
        more than a pair).
    %(rng)s

    Returns
    -------
    SubsetPlan

    Examples
    --------
    >>> plan = plan_subset(100, 10, design="pps", size=np.arange(1, 101), rng=0)
    >>> len(plan), plan.draw_prob.dims
    (10, ('step',))
    """
    check_choice(design, "design", list(SUBSET_DESIGNS))
    labels, bank = _population(tasks)
    T = labels.size
    n = check_int(n, "n", min=1, max=T)
    gen = as_rng(rng)
    stratum = np.zeros(T, np.intp)
    if design == "stratified":
        stratum = _strata(strata, bank, T, n, n_strata)
        order, q, incl = _draw_stratified(stratum, n, gen)
    elif design == "srs":
        order = gen.permutation(T)[:n]
        q = 1.0 / (T - np.arange(n))
        incl = np.full(T, n / T)
    else:
        x = _size_measure(size, bank, T)
        if design == "pps":
            order, q = _draw_successive(x, n, gen)
            incl = np.full(T, np.nan)
        else:
            incl = _poisson_inclusion(x, n)
            order = np.flatnonzero(gen.random(T) < incl)
            q = incl[order]
    step = {"step": np.arange(order.size)}
    return SubsetPlan(
        design=design,
        tasks=labels,
        order=xr.DataArray(labels[order], dims="step", coords=step, name="order"),
        draw_prob=xr.DataArray(np.asarray(q, float), dims="step", coords=step, name="draw_prob"),
        stratum=xr.DataArray(stratum, dims="task", coords={"task": labels}, name="stratum"),
        inclusion=xr.DataArray(incl, dims="task", coords={"task": labels}, name="inclusion"),
    )


def _population(tasks: Any) -> tuple[np.ndarray, IRTBank | None]:
    if isinstance(tasks, IRTBank):
        return tasks.tasks, tasks
    if isinstance(getattr(tasks, "bank", None), IRTBank):  # a calibration result (fit_irt_ml) holds the bank
        raise TypeError(f"`tasks` must be task labels, a count or an IRTBank; got {type(tasks).__name__}, which "
                        "holds a bank: pass its `.bank`")
    if isinstance(tasks, (int, np.integer)) and not isinstance(tasks, bool):
        T = check_int(tasks, "tasks", min=1)
        return np.arange(T).astype(str), None
    labels = np.asarray(list(tasks)).astype(str)
    if labels.size == 0 or len(set(labels.tolist())) != labels.size:
        raise HierbenchError(f"`tasks` must be unique task labels; got {labels.size} labels, "
                             f"{len(set(labels.tolist()))} distinct")
    return labels, None


def _size_measure(size: Any, bank: IRTBank | None, T: int) -> np.ndarray:
    if size is None:
        if bank is None:
            raise HierbenchError("`size` is needed for a PPS or Poisson design unless `tasks` is an IRTBank")
        return np.sqrt(prior_predictive(bank)[1])
    x = np.asarray(size, float).ravel()
    if x.size != T or not np.all(np.isfinite(x)) or (x <= 0).any():
        raise HierbenchError(f"`size` must hold {T} finite positive numbers (one per task); got {x.size} values, "
                             f"min {np.nanmin(x) if x.size else 'none'}")
    return x


def _strata(strata: Any, bank: IRTBank | None, T: int, n: int, n_strata: int | None) -> np.ndarray:
    if strata is not None:
        lab = np.asarray(list(strata)).astype(str)
        if lab.size != T:
            raise HierbenchError(f"`strata` must give one label per task ({T}); got {lab.size}")
        return np.unique(lab, return_inverse=True)[1]
    if bank is None:
        raise HierbenchError("`strata` is needed for a stratified design unless `tasks` is an IRTBank")
    H = check_int(n_strata if n_strata is not None else max(1, min(5, n // 10)), "n_strata", min=1, max=max(1, n // 2))
    p = prior_predictive(bank)[0]
    ranks = np.argsort(np.argsort(p, kind="stable"), kind="stable")
    return (ranks * H // T).astype(np.intp)


def _draw_stratified(stratum: np.ndarray, n: int, gen: np.random.Generator):
    """Proportional allocation (largest remainders, raised to 2 per stratum), SRS within strata, steps interleaved."""
    sizes = np.bincount(stratum)
    H = sizes.size
    if n < 2 * H or (sizes < 2).any():
        raise HierbenchError(f"a stratified design needs at least 2 tasks drawn per stratum and 2 tasks in each; "
                             f"got n={n} for {H} strata of sizes {sizes.tolist()}")
    raw = n * sizes / sizes.sum()
    alloc = np.floor(raw).astype(int)
    alloc[np.argsort(-(raw - alloc), kind="stable")[: n - alloc.sum()]] += 1
    while (alloc < 2).any():  # at least 2 per stratum (a variance), taken from the largest allocation
        alloc[np.argmax(alloc)] -= 1
        alloc[np.argmin(alloc)] += 1
    alloc = np.minimum(alloc, sizes)
    picks = [gen.permutation(np.flatnonzero(stratum == h))[: alloc[h]] for h in range(H)]
    order, q = [], []
    for k in range(int(alloc.max())):  # round robin over strata: stratum h's k-th draw
        for h in range(H):
            if k < alloc[h]:
                order.append(picks[h][k])
                q.append(1.0 / (sizes[h] - k))
    return np.array(order, np.intp), np.array(q), (alloc / sizes)[stratum]


def _draw_successive(x: np.ndarray, n: int, gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Successive draws proportional to ``x`` among the tasks not yet drawn, with each draw's probability."""
    x = x.astype(float).copy()
    order, q = np.empty(n, np.intp), np.empty(n)
    for k in range(n):
        p = x / x.sum()
        j = int(gen.choice(x.size, p=p))
        order[k], q[k] = j, p[j]
        x[j] = 0.0
    return order, q


def _poisson_inclusion(x: np.ndarray, n: int) -> np.ndarray:
    """``pi_t`` proportional to ``x`` with sum ``n``, the largest capped at 1 (the rest rescaled)."""
    pi = np.zeros_like(x)
    free = np.ones(x.size, bool)
    left = float(n)
    while True:
        pi[free] = left * x[free] / x[free].sum()
        over = free & (pi >= 1)
        if not over.any():
            return np.clip(pi, 0.0, 1.0)
        pi[over] = 1.0
        free &= ~over
        left = n - float((~free).sum())
