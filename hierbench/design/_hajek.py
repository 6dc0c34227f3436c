"""The Hajek mean of a Poisson plan's rates and its Korn-Graubard interval (no working model).

A Poisson plan draws each task independently with probability ``pi_t``, so the number drawn is
random and the Horvitz-Thompson mean ``sum_s y_t / pi_t / T`` moves with it: with sizes 1-5 and
20 tasks drawn its 90% t interval covered 0.81 of METR's agents' scores on average (worst agent
0.59) and 0.85 of SWE-bench's (worst 0.72). The Hajek mean divides by the estimated number of
tasks instead, ``N_hat = sum_s 1 / pi_t``, and its linearised variance is that of the residuals
``y_t - mean`` (Sarndal, Swensson and Wretman 1992, section 5.7). The interval treats the mean as
a proportion (the rates lie in [0, 1]) and follows Korn and Graubard (1998): the effective sample
size ``n_eff = p (1 - p) / v``, at most Kish's ``(sum w)^2 / sum w^2`` of the weights ``w = 1 /
pi`` drawn (the number drawn when they are equal) and that cap where ``p`` is 0 or 1 or ``v`` is 0,
shrunk by ``(z / t_{n-1})^2`` for the variance's own error; then the Clopper-Pearson interval of
``p n_eff`` successes in ``n_eff`` trials. A cap at the number drawn kept METR's and SWE-bench's
level on average but not where the weights vary tenfold with the outcomes (SWE-bench, sizes the
tasks' success sd across agents, 40 tasks: mean 0.878, Kish's cap 0.898, for 4% more width). It is
never a point short of a census.
Approximate, with no finite-sample guarantee: where the weights follow the outcomes the best
agents' intervals still covered about 0.81 at 90% (as the Horvitz-Thompson t did); the
distribution-free bracket guards the cases where the drawn rates hardly vary, and a simple random
sample is the design to use without a working model. ``benchmarks/bench_plan_brackets.py``
measures it.

This module imports numpy and scipy only.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import beta
from scipy.stats import norm
from scipy.stats import t as student_t

#: the estimator and interval, as ``ci_detail`` words them
HAJEK_DETAIL = ("Hajek mean (each drawn task weighted by 1 / its inclusion probability, divided by the sum of "
                "those weights), which is stable where the number of tasks drawn varies; its linearised Poisson "
                "design variance; Korn-Graubard interval (Clopper-Pearson at the design's effective sample size, "
                "at most Kish's size of the weights drawn, degrees of freedom n - 1; approximate: no finite-sample "
                "guarantee, and below its level where the weights vary tenfold with the outcomes), never a point "
                "short of a census")


def hajek_mean(y: np.ndarray, pi: np.ndarray, T: int) -> tuple[float, float]:
    """The Hajek mean of the drawn rates ``y`` (inclusion probabilities ``pi``) and its linearised standard error.

    Examples
    --------
    >>> est, se = hajek_mean(np.array([1.0, 0.0, 1.0]), np.array([0.5, 0.5, 0.25]), 10)
    >>> round(est, 4), round(se, 4)  # (2 + 4) / (2 + 2 + 4); sqrt(2 x 1/16 + 2 x 9/16 + 12 x 1/16) / 10
    (0.75, 0.1414)
    """
    y, pi = np.asarray(y, float), np.asarray(pi, float)
    est = float((y / pi).sum() / (1 / pi).sum())
    var = float(((1 - pi) / pi**2 * (y - est) ** 2).sum())
    return est, float(np.sqrt(var)) / T


def korn_graubard(p: float, se: float, n: int, prob: float, n_max: float | None = None) -> tuple[float, float]:
    """Clopper-Pearson interval for a proportion ``p`` at the effective sample size its ``se`` implies.

    ``n`` the units drawn; the effective size is at most ``n_max`` (default ``n``; Kish's
    ``(sum w)^2 / sum w^2`` for weighted draws), and ``n_max`` where ``p`` is 0 or 1 or ``se``
    is 0; the degrees of freedom ``n - 1`` shrink it by ``(z / t)^2`` at the level.

    Examples
    --------
    >>> [round(b, 4) for b in korn_graubard(0.0, 0.0, 20, 0.9)]  # 1 - 0.05^(1 / n_eff), n_eff = 20 (z / t_19)^2
    [0.0, 0.1526]
    """
    a = 1 - prob
    p = min(max(p, 0.0), 1.0)
    cap = float(n if n_max is None else min(n_max, n))
    n_eff = cap if se <= 0 or p in (0.0, 1.0) else min(cap, p * (1 - p) / se**2)
    n_eff *= (norm.ppf(1 - a / 2) / student_t.ppf(1 - a / 2, max(n - 1, 1))) ** 2
    x = p * n_eff
    lo = float(beta.ppf(a / 2, x, n_eff - x + 1)) if x > 0 else 0.0
    hi = float(beta.ppf(1 - a / 2, x + 1, n_eff - x)) if x < n_eff else 1.0
    return lo, hi


def poisson_hajek(tab: np.ndarray, T: int, prob: float) -> tuple[float, float, float, float]:
    """``(estimate, se, lower, upper)`` of a Poisson plan's record (outcomes in column 5, ``pi`` in column 2).

    A census (every task drawn) is its own mean. The caller keeps the three inside the range the
    tasks run allow (``_assisted.feasible_range``), as it keeps the t interval's.
    """
    y, pi = tab[:, 5].astype(float), tab[:, 2].astype(float)
    if y.size >= T:
        m = float(y.mean())
        return m, 0.0, m, m
    est, se = hajek_mean(y, pi, T)
    w = 1 / pi
    lo, hi = korn_graubard(est, se, y.size, prob, n_max=w.sum() ** 2 / (w**2).sum())  # Kish's size
    return est, se, lo, hi
