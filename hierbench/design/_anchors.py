"""Fixed anchor sets on a calibrated IRT bank: k-means on the item curves, or greedy information.

This module imports numpy, scipy and xarray only.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.cluster.vq import kmeans2
from scipy.special import expit
from scipy.stats import norm

from .._base import as_rng
from .._base import check_choice
from .._base import check_int
from ..freq import IRTBank
from ._posterior import _check_bank
from ._show import few

__all__ = ["AnchorSet", "anchors"]

#: ability points (in calibration-agent sds) where item curves are compared for clustering
_ICC_POINTS = np.array([-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0])


@dataclass(frozen=True, repr=False)
class AnchorSet:
    """A fixed subset of a bank's tasks.

    Attributes
    ----------
    tasks : numpy.ndarray
        Task labels, in the order chosen.
    weights : numpy.ndarray
        Share of the bank each anchor stands for (``"cluster"``: its
        cluster's size / T). ``"information"``: NaN, no weights. Those
        anchors are the most informative tasks (mid difficulty, high
        discrimination), not a picture of the bank, so no weighted mean of
        them estimates the full score: on SWE-bench their mean had 1.4 to
        3.9 times the RMSE of a random subset of the same size, worse as the
        size grew. Only ``irt_score`` uses them, and its interval rests on the
        bank's model alone: on SWE-bench (12 calibration agents, 13 held out,
        8 random splits) its 90% interval covered 0.71-0.78 at 25-100 anchors
        (0.38-0.54 at 100 on the 13 latest agents), and its prequential
        person-fit test, which catches misses on random subsets, flagged 0-1%
        of them; it does flag an ability beyond the calibration agents', where
        the interval covered 0.44-0.68 (0.75-0.83 inside). For an interval that holds whatever the model, draw the
        tasks (``plan_subset``) and score them with ``assisted_mean``.
    method : str
    seed : int or None
        The seed that reproduces the set (``anchors(bank, size, method=..., rng=seed)``): the
        ``rng`` given as an int, else one drawn from it (k-means starts are random). None for
        ``"information"``, which draws nothing.
    """

    tasks: np.ndarray
    weights: np.ndarray
    method: str
    seed: int | None = None

    def __len__(self) -> int:
        return int(self.tasks.size)

    def __repr__(self) -> str:
        """How the anchors were chosen, how many, a few of them with their weights; all in the attributes."""
        w = np.asarray(self.weights, float)
        tail = ("plan_subset draws a subset whose plain or assisted mean is design-unbiased")
        if np.isnan(w).all():
            shown = few(np.arange(w.size), show=lambda i: f"{str(self.tasks[i])!r}")
            return (
                f"AnchorSet: {self.tasks.size} anchor tasks ({self.method}), no weights: chosen for their "
                "information, not to stand for the bank, so their plain or weighted mean is biased\n"
                f"  {shown}\n  chosen by the bank's model, not drawn at random: only irt_score uses them, and its "
                "interval is model-based, with no model-free guarantee (on SWE-bench's held-out agents its 90% "
                "interval covered 0.71-0.78, 0.44-0.68 for the abilities beyond the calibration agents' that "
                "it flags, and its person-fit test flagged none of the misses); "
                f"{tail}"
            )
        shown = few(np.arange(w.size), show=lambda i: f"{str(self.tasks[i])!r} ({w[i]:.3g})")
        empty = int((w == 0).sum())
        zero = (f"; {empty} anchor(s) carry no weight (empty clusters: they are run but count for nothing)"
                if empty else "")
        seed = f"; k-means seed {self.seed} (rng={self.seed} reproduces the set)" if self.seed is not None else ""
        return (
            f"AnchorSet: {self.tasks.size} anchor tasks ({self.method}), weights {w.min():.3g} to {w.max():.3g} "
            f"(sum {w.sum():.3g}: each anchor's share of the bank){zero}{seed}\n  {shown}\n  chosen by the bank's model, "
            "not drawn at random: a score from them (irt_score, or the weighted mean) is model-based, with no "
            f"model-free guarantee; {tail}"
        )


def _score_curve_terms(a: np.ndarray, d: np.ndarray, grid: np.ndarray):
    """At each ability point: the expected-score slope S'(theta) and each task's Fisher information."""
    p = expit(a[None, :] * grid[:, None] + d[None, :])  # (G, T)
    info = a[None, :] ** 2 * p * (1 - p)
    slope = (a[None, :] * p * (1 - p)).mean(1)
    return slope, info


def anchors(
    bank: IRTBank,
    size: int,
    *,
    method: Literal["cluster", "information"] = "cluster",
    rng: None | int | np.random.Generator = None,
) -> AnchorSet:
    """A fixed anchor set of ``size`` tasks, the same for every agent.

    Parameters
    ----------
    bank : IRTBank
        One whose slopes collapsed (``IRTBank.slopes_collapsed``) is refused.
    size : int
        Number of anchors, 1 <= size <= number of bank tasks.
    method : {"cluster", "information"}
        ``"cluster"``: k-means (``size`` centres) on each task's item
        characteristic curve, the success probability at abilities
        -2, -1, -0.5, 0, 0.5, 1, 2 (posterior-mean item parameters); the task
        nearest each centre is the anchor and the cluster's share of the bank
        its weight (the tinyBenchmarks recipe, with the curve as the task's
        embedding so that tasks everyone solves, or nobody does, fall
        together however extreme their parameters). ``"information"``:
        greedy, each step adding the task that most lowers
        ``E_theta[S'(theta)^2 / (1 + sum of the anchors' Fisher information at theta)]``
        with ``theta ~ N(0, 1)``: the approximate posterior variance of the
        expected full-benchmark score ``S``, averaged over the agent
        population.
    rng : None, int or numpy.random.Generator
        k-means initialisation; the set records an int that reproduces it
        (``AnchorSet.seed``).

    Returns
    -------
    AnchorSet
        ``size`` task labels in the order chosen; for ``"cluster"`` each
        with the share of the bank it stands for (``weights``, summing to
        1), for ``"information"`` no weights (NaN: only ``irt_score`` uses
        those anchors).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from hierbench.freq import IRTBank
    >>> g = np.random.default_rng(0)
    >>> bank = IRTBank(xr.DataArray(np.exp(g.normal(0, .2, (50, 40))), dims=("sample", "task")),
    ...                xr.DataArray(g.normal(0, 2, (50, 40)), dims=("sample", "task")))
    >>> len(anchors(bank, 5, method="information"))
    5
    """
    bank = _check_bank(bank)
    bank.check_usable("anchors cannot choose anchors on this bank: 'information' would pick arbitrary tasks (each "
                      "equally uninformative), 'cluster' would group them by their mean success rate alone, and "
                      "irt_score, which scores anchors, refuses the bank (plan_subset and assisted_mean need no "
                      "model)")
    size = check_int(size, "size", min=1, max=bank.n_tasks)
    check_choice(method, "method", ["cluster", "information"])
    a, d = bank.point()
    if method == "cluster":
        # an int that reproduces the set: the one given, else drawn from the rng given (or fresh entropy)
        seed = int(rng) if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) else int(
            as_rng(rng).integers(2**31 - 1))
        idx, w = _cluster_anchors(a, d, size, seed)
        return AnchorSet(bank.tasks[idx], w, "cluster", seed)
    chosen = _information_anchors(a, d, size)
    # no weights: the most informative tasks are not a picture of the bank (their mean is biased)
    return AnchorSet(bank.tasks[chosen], np.full(size, np.nan), "information")


def _cluster_anchors(a: np.ndarray, d: np.ndarray, size: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """k-means on the item curves: the task nearest each centre, its cluster's share of the bank."""
    T = a.size
    emb = expit(a[:, None] * _ICC_POINTS[None, :] + d[:, None])
    if size == T:
        return np.arange(T), np.full(T, 1.0 / T)
    gen = as_rng(rng)
    seed = int(gen.integers(2**31 - 1))
    # the best of a few k-means++ starts (lowest within-cluster sum of squares)
    best = None
    for r in range(5):
        with warnings.catch_warnings():  # empty clusters are handled below (zero-weight anchors, stated)
            warnings.filterwarnings("ignore", message="One of the clusters is empty", category=UserWarning)
            warnings.filterwarnings("ignore", message="invalid value encountered", category=RuntimeWarning)
            cent, lab = kmeans2(emb, size, minit="++", seed=seed + r)
        sse = float(((emb - cent[lab]) ** 2).sum())
        if best is None or sse < best[0]:
            best = (sse, cent, lab)
    _, cent, lab = best
    idx, w = [], []
    taken = np.zeros(T, bool)
    for k in range(size):
        members = np.flatnonzero(lab == k)
        if members.size == 0:
            continue
        dist = ((emb[members] - cent[k]) ** 2).sum(1)
        j = members[np.argmin(dist)]
        idx.append(j)
        taken[j] = True
        w.append(members.size / T)
    # empty clusters (k-means can leave some): fill with the tasks farthest from their centres
    while len(idx) < size:
        far = ((emb - cent[lab]) ** 2).sum(1)
        far[taken] = -1
        j = int(np.argmax(far))
        idx.append(j)
        taken[j] = True
        w.append(0.0)
    return np.array(idx), np.array(w)


def _information_anchors(a: np.ndarray, d: np.ndarray, size: int) -> np.ndarray:
    """Greedy: each step the task that most lowers the population-averaged approximate score variance."""
    grid = np.linspace(-4, 4, 81)
    pw = norm.pdf(grid)
    pw /= pw.sum()
    slope, info = _score_curve_terms(a, d, grid)
    acc = np.ones_like(grid)
    chosen: list[int] = []
    free = np.ones(a.size, bool)
    for _ in range(size):
        crit = (pw[:, None] * slope[:, None] ** 2 / (acc[:, None] + info)).sum(0)
        crit[~free] = np.inf
        j = int(np.argmin(crit))
        chosen.append(j)
        free[j] = False
        acc = acc + info[:, j]
    return np.array(chosen)
