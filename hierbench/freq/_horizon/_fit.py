"""Whether METR's logistic curve describes an agent: observed against fitted success by task length.

``time_horizon`` reads a horizon off a logistic curve in ``log2`` minutes
and did not ask whether the curve fits. This module's check, per agent:

- **bins**: the tasks the agent ran, by ``log2`` minutes, cut at the
  ``k / K`` quantiles of their lengths (numpy's default, linear
  interpolation) into right-closed bins as ``pandas.qcut`` cuts (a task
  at an edge falls in the lower bin); ``K = 4`` by default. A bin that ties
  leave empty is NaN and counts for nothing. The bins are fixed by the data:
  a bootstrap replicate's tasks keep their bins.
- **observed and fitted**, as the regression weighs runs: per bin
  ``sum(w y) / sum(w n)`` and ``sum(w n p(x)) / sum(w n)``, with ``w`` the
  run weight of the task's runs, ``y`` its successes (a fractional score as
  its share), ``n`` its runs and ``p`` the fitted curve (the penalised one
  the horizon is read off).
- **statistic**: ``T = sum_k D_k^2 / v_k``, ``D_k`` = observed - fitted and
  ``v_k`` the variance of ``D_k`` over the bootstrap replicates below.
- **p-value**: a centred bootstrap over task families, whatever ``levels``
  the interval's bootstrap uses. A replicate draws families with
  replacement (every task of a drawn family, every run of the task: with
  families independent of each other, the family carries all the
  dependence there is, so resampling it captures that once), refits the curve (same weights and
  penalty, duplicates counting twice) and takes its ``D*`` against that
  curve; ``D* - D`` is then a draw of the error of ``D`` about its mean, with
  the correlation of runs within a task and of tasks within a family, the
  weights and the penalty as they are. The null is that ``D`` has the mean it
  would have if the curve were logistic. With the penalty that mean is not
  0 (the penalty flattens the curve); it is estimated as the gap between the
  unpenalised and the penalised fitted values, ``b_k = F0_k - F_k`` (0 where
  the unpenalised fit does not exist), and the null distribution is
  ``T* = sum_k (D*_k - D_k + b_k)^2 / v_k``; ``p = (1 + #{T* >= T}) / (1 + B)``
  over the ``B`` replicates in which the agent's bins are all defined. A
  replicate in which the agent had one outcome (all failures, say) has
  ``D* = 0`` (the fit's limit is that outcome); one whose fit did not
  converge, or that drew none of a bin's tasks, is left out for the agent.
- An agent whose tasks come from fewer than 10 families (``MIN_FAMILIES``)
  gets no p-value: a bootstrap over so few units does not know its own
  spread (all of an agent's tasks in one family would make every replicate
  the data again, and any departure look significant).
- **multiplicity**: Holm over the agents with a p-value; an agent is flagged
  where its Holm-adjusted p is below 0.05.

What it was measured to do (``benchmarks/bench_horizon_fit.py``, figures in
its docstring), on simulated METR-like logs (83 tasks in METR's 36 family
sizes, 1-8 runs, task and family effects, the 0.1 penalty): under a logistic
truth it rejected 3.1-4.8% at 0.05 (Monte Carlo se 0.5-0.7 points); it saw a
GPT-4o-like dip 22% of the time and a plateau 41% (34% and 58% with smaller
task and family effects): a check that is honest, not a sensitive one. A
flag means something; its absence does not prove the curve right. The other
calibrations: a parametric bootstrap under the fitted curve (runs
independent) ignores the task and family variation and rejected a logistic
truth 10-17% of the time; the hierarchical bootstrap of the horizon's
interval (families, then tasks, then runs) counts the within-family and run
variation again at each level, so ``v`` is too large: it rejected under 1% and
saw the dip 6% and the plateau 16% of the time; the null left at 0 rather
than at the penalty's flattening rejected a steep logistic curve 18% of the
time.

On METR at the defaults (1,000 resamples) the check adds about 13% to
``time_horizon``'s run time (median of 6: 1.65 s without, 1.86 s with, on 2
shared cores), so it is on by default (``fit_check=False`` leaves it out).

The replicates are the check's own, drawn from a generator of its own
(``check_rng``) seeded from a copy of ``rng``: the horizon's bootstrap
stream does not move.
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
import xarray as xr
from scipy.special import expit

from .._resampling import holm

#: bins of task length per agent (``fit_check=True``)
FIT_BINS = 4
#: the family-wise level at which an agent is flagged (Holm over the agents)
FIT_ALPHA = 0.05
#: fewest task families among an agent's tasks for a p-value (a bootstrap over fewer units is not one to trust)
MIN_FAMILIES = 10
#: the key that makes the check's random stream its own
_STREAM_KEY = 0x66697463  # "fitc"
#: (replicate, agent, task) cells fitted in one batch
_CHUNK = 2_000_000


def check_rng(gen: np.random.Generator) -> np.random.Generator:
    """The check's generator: seeded by words drawn from a copy of ``gen`` under a key of its own.

    ``gen`` itself draws nothing, so the horizon's bootstrap, which draws
    from it, gives the same replicates with the check and without it.
    """
    words = copy.deepcopy(gen).integers(0, 2**32, size=4, dtype=np.uint64)
    return np.random.default_rng([_STREAM_KEY, *words.tolist()])


def length_bins(x: np.ndarray, ran: np.ndarray, n_bins: int) -> np.ndarray:
    """Each (agent, task)'s bin of task length, ``-1`` where the agent did not run the task.

    Per agent, the edges are the ``k / n_bins`` quantiles (numpy's linear
    rule) of the ``log2`` minutes of the tasks it ran; bin ``k`` holds
    ``edge_{k-1} < x <= edge_k`` (``pandas.qcut``'s right-closed bins).
    """
    out = np.full(ran.shape, -1, dtype=np.intp)
    for a in range(ran.shape[0]):
        if ran[a].any():
            edges = np.quantile(x[ran[a]], np.arange(1, n_bins) / n_bins)
            out[a] = np.where(ran[a], np.searchsorted(edges, x, side="left"), -1)
    return out


def binned(x: np.ndarray, W1: np.ndarray, Wn: np.ndarray, coef: np.ndarray, bins: np.ndarray, n_bins: int) -> tuple:
    """Observed and fitted weighted success and the weight per (agent, bin); NaN in an empty bin.

    ``W1`` / ``Wn`` (agent, task): weight of the successes and of all runs;
    ``coef`` (agent, 2) the curve; ``bins`` (agent, task) from ``length_bins``.
    """
    one = (bins[..., None] == np.arange(n_bins)) & (Wn[..., None] > 0)
    with np.errstate(invalid="ignore", over="ignore"):
        p = expit(coef[:, :1] + coef[:, 1:] * x[None, :])
    wsum = np.einsum("at,atk->ak", Wn, one)
    fit_w = np.einsum("at,atk->ak", np.where(Wn > 0, Wn * p, 0.0), one)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.einsum("at,atk->ak", W1, one) / wsum, fit_w / wsum, wsum


class FitCheck:
    """The check: the data's bins and residuals, its bootstrap replicates, its table.

    Parameters
    ----------
    x, n, w_cell, y : numpy.ndarray
        ``log2`` minutes (task); runs, run weight and successes per (agent, task).
    coef, coef0 : numpy.ndarray
        Per agent the penalised curve (the horizon's) and the unpenalised one,
        NaN where the fit does not exist or did not converge.
    n_bins : int
    """

    def __init__(self, x, n, w_cell, y, coef, coef0, n_bins: int = FIT_BINS):
        self.x, self.n_bins, self.W1, self.Wn = x, n_bins, w_cell * y, w_cell * n
        self.bins = length_bins(x, n > 0, n_bins)
        self.n_tasks = (self.bins[..., None] == np.arange(n_bins)).sum(1)
        self.obs, self.fit, self.weight = binned(x, self.W1, self.Wn, coef, self.bins, n_bins)
        fit0 = binned(x, self.W1, self.Wn, coef0, self.bins, n_bins)[1]
        self.bias = np.where(np.isfinite(fit0), fit0 - self.fit, 0.0)
        self.reps = np.full((0, *self.obs.shape), np.nan)
        self.n_families = np.full(self.obs.shape[0], np.nan)

    def replicate(self, codes: np.ndarray, fit: Callable, lam: float, n_resamples: int,
                  gen: np.random.Generator) -> None:
        """``n_resamples`` replicates over the families ``codes`` (task), each curve refitted by ``fit``.

        A replicate is the data with each task weighted by the times its
        family was drawn (duplicates count twice, the weights are not
        renormalised), so many replicates are fitted at once, as rows of one
        batch, ``_CHUNK`` cells at most.
        """
        (A, T), K, G = self.W1.shape, self.n_bins, int(codes.max()) + 1
        self.reps = np.full((n_resamples, A, K), np.nan)
        self.n_families = np.array([np.unique(codes[r]).size for r in self.bins >= 0], dtype=float)
        step = max(1, _CHUNK // max(A * T, 1))
        for lo in range(0, n_resamples, step):
            c = min(step, n_resamples - lo)
            draws = gen.integers(0, G, (c, G)) + G * np.arange(c)[:, None]
            mult = np.bincount(draws.ravel(), minlength=c * G).reshape(c, G)[:, codes].astype(float)
            W1 = (mult[:, None, :] * self.W1[None]).reshape(c * A, T)
            Wn = (mult[:, None, :] * self.Wn[None]).reshape(c * A, T)
            coef, conv = fit(self.x, W1, Wn - W1, lam)
            obs, fitted, wsum = binned(self.x, W1, Wn, coef, np.tile(self.bins, (c, 1)), K)
            one = (W1.sum(1) == 0) != ((Wn - W1).sum(1) == 0)
            d = np.where(one[:, None], np.where(wsum > 0, 0.0, np.nan), obs - fitted)
            d[~one & ~conv] = np.nan
            self.reps[lo : lo + c] = d.reshape(c, A, K)

    def p_values(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per agent: the statistic, its centred-bootstrap p-value and the replicates used."""
        d = self.obs - self.fit
        use = np.isfinite(d)
        full = np.all(np.isfinite(self.reps) | ~use[None], axis=-1) & use.any(1)[None]  # (B, A)
        stat, p, used = np.full(d.shape[0], np.nan), np.full(d.shape[0], np.nan), full.sum(0)
        for a in np.flatnonzero((used >= 2) & (self.n_families >= MIN_FAMILIES)):
            r = self.reps[full[:, a], a][:, use[a]]
            v = r.var(0, ddof=1)
            k = v > 0
            if k.any():
                stat[a] = np.sum(d[a, use[a]][k] ** 2 / v[k])
                null = np.sum((r[:, k] - d[a, use[a]][k] + self.bias[a, use[a]][k]) ** 2 / v[k], axis=1)
                p[a] = (1 + np.sum(null >= stat[a])) / (1 + null.size)
        return stat, p, used

    def result(self, agents: np.ndarray) -> xr.Dataset:
        """The table: per (agent, bin) observed, fitted, tasks, weight, length range; per agent the test."""
        stat, p, used = self.p_values()
        adj = holm(p)
        K, minutes = self.n_bins, 2.0**self.x
        inside = self.bins[..., None] == np.arange(K)  # (agent, task, bin)
        with np.errstate(invalid="ignore"):
            lo = np.where(inside.any(1), np.where(inside, minutes[:, None], np.inf).min(1), np.nan)
            hi = np.where(inside.any(1), np.where(inside, minutes[:, None], -np.inf).max(1), np.nan)
        ab, a = ("agent", "bin"), ("agent",)
        return xr.Dataset(
            {"observed": (ab, self.obs), "fitted": (ab, self.fit), "n_tasks": (ab, self.n_tasks),
             "weight": (ab, self.weight), "minutes_lower": (ab, lo), "minutes_upper": (ab, hi),
             "statistic": (a, stat), "p_value": (a, p), "p_holm": (a, adj),
             "misfit": (a, np.isfinite(adj) & (adj < FIT_ALPHA)), "n_resamples_used": (a, used),
             "n_families": (a, self.n_families)},
            coords={"agent": agents, "bin": np.arange(K)},
            attrs={"n_bins": K, "alpha": FIT_ALPHA, "n_resamples": self.reps.shape[0],
                   "method": "observed - fitted weighted success in bins of task length, sum of squares over "
                   "bootstrap variances, p-value from a centred bootstrap over task families (null: the curve "
                   "is logistic, the penalty's flattening allowed for); misfit where Holm's p < 0.05"},
        )  # fmt: skip
