"""Distribution-free brackets for the mean of task rates in [0, 1], one per design with known probabilities.

A design-based ``t`` interval is a point whenever the drawn terms do not vary (a weak agent whose
drawn tasks all failed: ``0 [0, 0]``), and too short where one drawn value carries the whole
sample variance. The brackets here hold for every population, whatever the working model: since
``0 <= y_t <= 1``, the tasks not drawn add at most the number of tasks with ``y_t > 0`` among
them and at least the number with ``y_t = 1``, and each design bounds those counts from the drawn
ones by an exact law:

- simple random (uniform) draws: the hypergeometric law (:func:`bracket_bounds`);
- stratified draws: the hypergeometric law per stratum, each stratum's ends at the error
  ``(1 - prob) / (2 H)`` (``H`` the strata not drawn whole), summed: by the union bound each
  end of the sum fails with probability at most ``(1 - prob) / 2``;
- Poisson draws (each task in independently with probability ``pi_t``): among the tasks with
  ``pi_t < 1``, the number drawn of ``D`` such tasks is a sum of independent Bernoullis with
  ``pi_t >= pi_min``, so it is stochastically at least ``Binomial(D, pi_min)``, whose lower tail
  bounds ``D`` (conservative: as wide as ``pi_min`` is small).

This module imports numpy and scipy only.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.stats import binom

from ._plan import uniform_bounds

#: how each design's bracket bounds the counts of tasks with any success and with any failure
BRACKET_LAW = {
    "srs": "exact hypergeometric bounds",
    "stratified": "exact hypergeometric bounds per stratum, summed with a union bound over the strata",
    "poisson": "binomial bounds at the smallest inclusion probability below 1",
}


def guard_detail(design: str, widen: bool, interval: str = "t") -> str:
    """What :func:`guarded_bounds` does with a design's bracket, in an interval's ``ci_detail``.

    ``interval``: the kind guarded; only a ``"t"`` interval can be a point.
    """
    if widen:
        where = "where the drawn rates do not vary" + (" or the t interval is a point" if interval == "t" else "")
    else:
        where = "where the t interval is a point (the drawn terms did not vary)"
    words = (f"guarded where it degenerates: {where}, the distribution-free bracket ({BRACKET_LAW[design]} on the "
             "tasks with any success and with any failure, as the rates lie in [0, 1]: valid for every population)")
    return words + (", and where at most one drawn task is off 0 (off 1) that end widened to the bracket's"
                    if widen else "")


#: the guard's words for the plain mean of uniform draws (no model): ``assisted_*`` and ``loo_study``'s baseline
GUARD_DETAIL = guard_detail("srs", True)


def bracket_bounds(v: np.ndarray, T: int, prob: float) -> tuple[float, float]:
    """Distribution-free interval for the mean of ``T`` values in [0, 1] from ``n`` of them drawn uniformly.

    Since ``0 <= y_t <= 1``, the tasks not drawn add at most the number of tasks with ``y_t > 0``
    among them, and at least the number with ``y_t = 1``. The ``d`` drawn tasks with a non-zero
    value (the ``e`` with a value below one) bound the population's count of such tasks by the
    exact hypergeometric inversion (design U's ``uniform_bounds``, each tail ``(1 - prob) / 2``):
    ``upper = (sum v + D_hi - d) / T``, ``lower = (sum v + (T - E_hi) - (n - e)) / T``. Each end
    fails with probability at most ``(1 - prob) / 2`` for every population, so the interval covers
    at least ``prob``; with 0/1 values it is the exact hypergeometric interval itself.

    Examples
    --------
    >>> [round(b, 4) for b in bracket_bounds(np.zeros(10), 76, 0.9)]  # at most 18 of 76 tasks with a success
    [0.0, 0.2368]
    """
    v = np.asarray(v, float)
    n, S = v.size, float(v.sum())
    d, e = int((v > 0).sum()), int((v < 1).sum())
    _, d_hi = uniform_bounds(np.array([d]), T, n, prob)
    _, e_hi = uniform_bounds(np.array([e]), T, n, prob)
    D, E = round(float(d_hi[0]) * T), round(float(e_hi[0]) * T)
    return (S + (T - E) - (n - e)) / T, (S + D - d) / T


def stratified_bracket(v: np.ndarray, drawn_stratum: np.ndarray, stratum: np.ndarray, prob: float) -> tuple[float, float]:
    """:func:`bracket_bounds` per stratum at the error ``(1 - prob) / H`` each, weighted by the strata's sizes.

    ``v`` the drawn values, ``drawn_stratum`` their strata, ``stratum`` every task's. A stratum
    drawn whole is known exactly and spends no error; ``H`` counts the others.
    """
    v, drawn_stratum, stratum = np.asarray(v, float), np.asarray(drawn_stratum), np.asarray(stratum)
    sizes = {h: int((stratum == h).sum()) for h in np.unique(stratum)}
    H = sum((drawn_stratum == h).sum() < sizes[h] for h in sizes)
    prob_h = 1 - (1 - prob) / max(H, 1)
    lo = hi = 0.0
    for h, T_h in sizes.items():
        vh = v[drawn_stratum == h]
        if vh.size == 0:  # a stratum with no draw: anything in [0, 1]
            hi += T_h
            continue
        b = bracket_bounds(vh, T_h, prob_h)
        lo, hi = lo + T_h * b[0], hi + T_h * b[1]
    return lo / stratum.size, hi / stratum.size


def _binomial_count_hi(d: int, pi_min: float, cap: int, alpha: float) -> int:
    """The largest count ``D`` (from ``d`` to ``d + cap``) with ``P(Binomial(D, pi_min) <= d) > alpha``."""
    D = np.arange(d, d + cap + 1)
    ok = binom.cdf(d, D, pi_min) > alpha
    return int(D[ok].max())


def poisson_bracket(v: np.ndarray, drawn_incl: np.ndarray, incl: np.ndarray, prob: float) -> tuple[float, float]:
    """Distribution-free interval for the mean of values in [0, 1] drawn by a Poisson design.

    ``v`` the drawn values, ``drawn_incl`` their inclusion probabilities, ``incl`` every task's.
    Tasks with ``pi_t = 1`` are always drawn; among the others (``T_u`` of them, ``n_u`` drawn,
    ``d`` with a value above 0, ``e`` below 1) the counts of such tasks are bounded by the
    binomial law at ``pi_min`` (module docstring), each end at the error ``(1 - prob) / 2``:
    ``upper = (sum v + min(D_hi - d, T_u - n_u)) / T``, and the lower end alike from ``E_hi``.
    """
    v, drawn_incl, incl = np.asarray(v, float), np.asarray(drawn_incl, float), np.asarray(incl, float)
    T, S = incl.size, float(v.sum())
    unsure = incl < 1
    left = int(unsure.sum()) - int((drawn_incl < 1).sum())  # tasks that could have been drawn and were not
    if left == 0:
        return S / T, S / T
    pi_min, alpha = float(incl[unsure].min()), (1 - prob) / 2
    vu = v[drawn_incl < 1]
    d, e = int((vu > 0).sum()), int((vu < 1).sum())
    up = _binomial_count_hi(d, pi_min, left, alpha) - d
    ones_left = left - (_binomial_count_hi(e, pi_min, left, alpha) - e)
    return (S + max(ones_left, 0)) / T, (S + up) / T


def design_bracket(design: str, v: np.ndarray, drawn: np.ndarray, stratum: np.ndarray, incl: np.ndarray,
                   prob: float) -> tuple[float, float]:
    """The bracket of a plan's ``design`` for the drawn values ``v`` of the tasks ``drawn`` (indices).

    ``stratum`` and ``incl``: every task's stratum and inclusion probability, as the plan holds them.
    ``"srs"`` uses :func:`bracket_bounds` (adaptive draws without a model call it directly).
    """
    if design == "stratified":
        return stratified_bracket(v, stratum[drawn], stratum, prob)
    if design == "poisson":
        return poisson_bracket(v, incl[drawn], incl, prob)
    return bracket_bounds(v, stratum.size, prob)


def guarded_bounds(v: np.ndarray, T: int, prob: float, lo: float, hi: float,
                   bracket: tuple[float, float] | Callable[[], tuple[float, float]] | None = None,
                   widen: bool = True) -> tuple[float, float, str]:
    """A design-based ``t`` interval ``[lo, hi]`` for the mean of values ``v`` in [0, 1], guarded where it degenerates.

    ``bracket`` is the design's distribution-free bracket, or a function that computes it when
    needed (default: uniform draws', :func:`bracket_bounds`). Where the ``t`` interval is a point, or (``widen``: the plain mean
    of the rates, no model) the drawn values do not vary, the interval is the bracket
    (``"bracket"``): the ``t`` interval was a point (METR, gpt-3.5-turbo-instruct, 10 of 76
    tasks all 0 in 133 of 200 plans: ``0 [0, 0]``, coverage 0.34 at 90%). With ``widen``, where at
    most one drawn task is off 0 (off 1), the upper (lower) end is the wider of the ``t``'s and
    the bracket's (``"guarded"``): one value's square is the whole sample variance, and the ``t``
    end missed (the same agent, 40 tasks: coverage 0.77 with the point case fixed alone, 1.00
    guarded). Seeded simulation on METR's 9 x 75 complete part, 2000 subsets per agent and size,
    90%: coverage averaged over the agents 0.830 / 0.874 / 0.877 at 10 / 20 / 40 tasks before,
    0.907 / 0.916 / 0.913 after (Monte Carlo se 0.002), mean width +8% / +5% / +2%. A census
    (``v.size >= T``) is returned as given.
    """
    v = np.asarray(v, float)
    if v.size >= T:
        return lo, hi, ""
    point = lo == hi or (widen and np.ptp(v) == 0)
    few_up, few_down = widen and (v > 0).sum() <= 1, widen and (v < 1).sum() <= 1
    if not (point or few_up or few_down):  # nothing to guard: the bracket is not computed (50,000 tasks: 4 s)
        return lo, hi, ""
    if bracket is None:
        bracket = bracket_bounds(v, T, prob)
    blo, bhi = bracket() if callable(bracket) else bracket
    if point:
        return blo, bhi, "bracket"
    how = ""
    if few_up and bhi > hi:
        hi, how = bhi, "guarded"
    if few_down and blo < lo:
        lo, how = blo, "guarded"
    return lo, hi, how
