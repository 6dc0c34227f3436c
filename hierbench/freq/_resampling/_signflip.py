"""Sign-flip (paired permutation) p-values that a family of comparisons can resolve.

Under the null that agent A and agent B are exchangeable within each unit (a
task, or a cluster of tasks), the sign of each unit's difference ``u_i`` is a
fair coin, so the two-sided p-value of ``T = sum_i u_i`` is
``P(|sum_i s_i u_i| >= |T|)`` over independent fair signs ``s_i``. It is
computed exactly whenever that is affordable, and by Monte Carlo otherwise:

* **enumeration** of the ``2^n`` sign patterns of the ``n`` non-zero units
  (``n <= 14``);
* **lattice convolution**: when every ``u_i`` is a multiple of ``1 / L`` for a
  modest ``L`` (per-task means of binary runs are multiples of ``1 / n_runs``),
  the law of ``sum_i s_i L u_i`` lives on the integers and is built exactly by
  convolving the two-point laws one unit at a time (StatXact's shift
  algorithm). Binary scores with a few runs per task always take this road;
  with one run per task it is the exact two-sided sign (McNemar) test;
* **Monte Carlo**, with ``B`` random sign patterns shared by every comparison
  of the family, ``p = (1 + hits) / (1 + B)`` (never 0) and its Monte Carlo
  standard error ``sqrt(p (1 - p) / B)``. Left to choose, ``B`` is set from the
  family: the smallest attainable ``1 / (B + 1)`` is at most ``alpha / (20 m)``
  for ``m`` comparisons, so a clear difference passes Holm's first threshold
  ``alpha / m`` with room to spare, whatever ``m``.

No test based on sign flips of ``n`` units can give a p-value below
``2^(1 - n)``; ``resolvable`` (freq._kernels) says whether that floor clears Holm's first
threshold, which is how :func:`compare_agents` decides between this test and
the asymptotic paired t-test.

Every p-value of a resampling test has such a floor: ``2^(1 - n)`` exact,
``1 / (B + 1)`` from ``B`` Monte Carlo patterns, ``2 / (B + 1)`` from a
two-sided bootstrap. :func:`resolution_note` is the one rule that says what
the floors leave an adjustment unable to call (:class:`PValueResolutionWarning`):
``compare_agents``, its result's ``significant`` / ``matrix`` / ``to_frame``
and ``paired_test`` all say it through it.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..._base import SmallSampleWarning
from .._kernels import resolvable

__all__ = [
    "PValueResolutionWarning",
    "auto_test",
    "family_permutations",
    "resolution_note",
    "sign_flip_pvalues",
]


class PValueResolutionWarning(SmallSampleWarning):
    """Some p-values cannot go below the adjustment's threshold: those pairs (or all) cannot be called different."""

#: enumerate every sign pattern up to this many non-zero units
EXACT_MAX = 14
#: the lattice: denominators tried per distinct value, their least common multiple, and the
#: convolution's work (units x support) above which Monte Carlo is cheaper
_MAX_DENOMINATOR = 5040
_MAX_LCM = 10**6
_MAX_WORK = 5 * 10**7
#: the smallest attainable Monte Carlo p-value is at most alpha / (_RESOLUTION * m)
_RESOLUTION = 20
_MIN_PERMUTATIONS = 9999
_CHUNK_ELEMS = 2_000_000


def family_permutations(n_tests: int, alpha: float) -> int:
    """Monte Carlo sign patterns for a family of ``n_tests`` comparisons at level ``alpha``.

    ``B + 1 >= 20 n_tests / alpha`` (and ``B >= 9999``), so the smallest attainable
    p-value ``1 / (B + 1)`` is a twentieth of Holm's first threshold.

    Examples
    --------
    >>> family_permutations(1, 0.05), family_permutations(300, 0.05)
    (9999, 119999)
    """
    return max(_MIN_PERMUTATIONS, math.ceil(_RESOLUTION * n_tests / alpha) - 1)


def auto_test(n_units: np.ndarray, *, need: int, alpha: float, unit: str) -> tuple[str, str]:
    """The test ``test="auto"`` takes, and why: sign flips when every unit count can pass, else the t.

    ``need``: 1 for a test at the level ``alpha`` (one pair, or max-T), ``m`` for Holm
    and BH's first threshold ``alpha / m`` (``resolvable`` (freq._kernels)). ``compare_agents`` and
    ``paired_test`` (the p-value it recommends) choose by this one rule.

    Examples
    --------
    >>> auto_test(np.array([4]), need=1, alpha=0.05, unit="clusters")[0]
    't'
    """
    n_units = np.asarray(n_units, dtype=float)
    n_units = n_units[np.isfinite(n_units)].astype(int)
    threshold = f"the level {alpha:g}" if need == 1 else f"Holm's first threshold {alpha:g}/{need}"
    if all(resolvable(n, need, alpha) for n in np.unique(n_units).tolist()):
        return "permutation", (
            f"sign-flip test over {unit}: "
            + ("every pattern enumerated, or Monte Carlo with a stated error" if need == 1 else
               f"exact where affordable, else Monte Carlo with enough patterns for {threshold}")
        )
    few = int(n_units.min()) if n_units.size else 0
    return "t", (
        f"{few} {unit} are too few for a sign-flip test to pass {threshold} (its smallest "
        f"p-value is 2^(1 - {few}) = {2.0 ** (1 - few):.2g}); the paired t-test"
        + (" (CR2 cluster-robust, Bell-McCaffrey df)" if unit == "clusters" else "")
        + " takes over"
    )


#: the adjustments :func:`resolution_note` knows, in prose
_ADJUSTED = {"holm": "Holm", "bh": "Benjamini-Hochberg"}


def _draws_needed(numerator: float, threshold: float) -> int:
    """The smallest ``B`` with ``numerator / (B + 1)`` below ``threshold`` (a Monte Carlo floor).

    A floor equal to the threshold in exact arithmetic is not below it, whatever rounding says:
    SWE-bench's 300 pairs at 0.05 put Holm's first threshold at 0.05 / 300, which ``2 / 12000``
    equals but undercuts by one unit in the last place (it asked for 11,999; 12,000 holds).

    Examples
    --------
    >>> _draws_needed(2, 0.05 / 300)
    12000
    """
    need = max(1, math.floor(numerator / threshold) - 1)
    while numerator / (need + 1) >= threshold * (1 - 1e-12):
        need += 1
    return need


def _digits(floor: float, threshold: float) -> int:
    """Significant digits that show a floor and a threshold apart (3, more where they round alike)."""
    d = 3
    while d < 9 and f"{floor:.{d}g}" == f"{threshold:.{d}g}":
        d += 1
    return d


def _first_step(adjust: str, floor: float, m: int, alpha: float) -> str:
    """What a p-value floored at ``floor`` leaves Holm or BH (``m`` tests at ``alpha``) able to do.

    Holm calls the pair of rank ``i`` different only if it called the ``i - 1`` before it
    and ``(m - i + 1) p < alpha``; BH calls it only with the ``k >= i`` smallest, where
    ``m p_(k) / k < alpha``. Either needs the fewest other calls ``K`` printed here.
    """
    if floor >= alpha:
        return f"{_ADJUSTED[adjust]} can never call such a pair different"
    if adjust == "holm":
        k = next(i for i in range(1, m + 1) if (m - i + 1) * floor < alpha) - 1
        return (f"Holm calls such a pair different only after at least {k} other pair{'' if k == 1 else 's'}, "
                "however large its gap")
    k = next(i for i in range(1, m + 1) if m * floor / i < alpha)
    return (f"Benjamini-Hochberg calls such a pair different only when it calls at least {k} pairs "
            "different, so the floor can make its verdict conservative")


def resolution_note(
    floors: np.ndarray,
    monte_carlo: np.ndarray,
    *,
    adjust: str,
    alpha: float,
    test: str,
    knob: tuple[str, float, str],
    exact_why: str,
) -> str:
    """What the p-values' floors leave an adjustment unable to call, in words (``""``: nothing).

    Parameters
    ----------
    floors : numpy.ndarray
        Per test, the smallest p-value it can give (NaN: no p-value, not counted).
    monte_carlo : numpy.ndarray
        Per test, whether that floor is a Monte Carlo one, ``numerator / (B + 1)``,
        which a setting lowers (else exact: only more units lower it).
    adjust : {"holm", "bh", "maxt", "none"}
        Holm and Benjamini-Hochberg: ``m`` tests, first threshold ``alpha / m``
        (BH's largest is ``alpha``); ``"maxt"``: the family's one floor against
        ``alpha``; ``"none"``: one test at ``alpha``.
    alpha : float
        The level.
    test : str
        The p-values' name in prose (``"permutation"``, ``"bootstrap"``, ``"max-T"``).
    knob : tuple
        The setting ``B`` of a Monte Carlo floor, the floor's numerator, and what its
        default does (``""``: nothing to add).
    exact_why : str
        Why an exact floor is where it is, and that no setting lowers it.

    Examples
    --------
    Two Monte Carlo p-values from 199 patterns (floor 1 / 200) and one exact one, Holm at 0.01:

    >>> note = resolution_note(np.array([0.005, 0.005, 1e-6]), np.array([True, True, False]),
    ...                        adjust="holm", alpha=0.01, test="permutation",
    ...                        knob=("n_permutations", 1.0, ""), exact_why="")
    >>> for part in note.split(": "):
    ...     print(part)
    2 of 3 pairs have Monte Carlo permutation p-values that cannot go below 0.005, above Holm's first threshold 0.01/3 = 0.00333
    Holm calls such a pair different only after at least 2 other pairs, however large its gap (raise `n_permutations` to at least 300).
    """
    ok = np.isfinite(np.asarray(floors, dtype=float))
    floors = np.asarray(floors, dtype=float)[ok]
    mc = np.asarray(monte_carlo, dtype=bool)[ok]
    m = floors.size
    family = adjust in _ADJUSTED and m > 1
    threshold = alpha / m if family else alpha
    blocked = floors >= threshold
    if not m or not blocked.any():
        return ""
    name, numerator, default = knob
    raise_it = (f"raise `{name}` to at least {_draws_needed(numerator, threshold):,}"
                + (f"; {default}" if default else ""))
    why = (raise_it if mc.all() else exact_why if not mc.any()
           else f"{raise_it} for the {int(mc.sum())} Monte Carlo ones; for the exact ones, {exact_why}")
    if not family:  # one floor against the level: max-T's, or a single test's
        lowest = float(floors.min())
        what = (f"no {test} p-value here can go below {lowest:.3g}" if adjust != "none"
                else f"the {test} p-value cannot go below {lowest:.3g}")
        who = "no pair can be called different" if adjust != "none" else "it cannot call the two different"
        return f"{what}, and the level is {alpha:g}: {who} at this resolution ({why})."
    first = f"{_ADJUSTED[adjust]}'s first threshold"
    if (adjust == "holm" and blocked.all()) or (adjust == "bh" and np.all(floors >= alpha)):
        d = _digits(floors.min(), threshold if adjust == "holm" else alpha)
        where = (f"{m} pairs put {first} at {threshold:.{d}g}" if adjust == "holm"
                 else f"{alpha:g} is Benjamini-Hochberg's largest threshold")
        return (f"no {test} p-value here can go below {floors.min():.{d}g}, and {where}: no pair can be "
                f"called different at this resolution ({why}).")
    parts = []
    for group, kind in ((blocked & mc, "Monte Carlo "), (blocked & ~mc, "exact ")):
        if group.any():
            low = float(floors[group].min())
            d = _digits(low, threshold)
            parts.append(
                f"{int(group.sum())} of {m} pairs have {kind}{test} p-values that cannot go below {low:.{d}g}, above "
                f"{first} {alpha:g}/{m} = {threshold:.{d}g}: {_first_step(adjust, low, m, alpha)} "
                f"({raise_it if kind == 'Monte Carlo ' else exact_why})"
            )
    return "; ".join(parts) + "."


def _enumerate(u: np.ndarray, obs: float, tol: float) -> float:
    n = u.size
    bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
    sums = np.abs((1 - 2 * bits) @ u)
    return float(np.mean(sums >= obs - tol))


def _lattice(u: np.ndarray) -> np.ndarray | None:
    """``u`` as integers ``L u`` when every value is a multiple of ``1 / L`` (L modest), else None."""
    vals = np.unique(np.abs(u))
    if vals.size > 1000:
        return None
    lcm = 1
    for v in vals.tolist():
        f = Fraction(v).limit_denominator(_MAX_DENOMINATOR)
        if abs(float(f) - v) > 1e-9 * max(1.0, v):
            return None
        lcm = math.lcm(lcm, f.denominator)
        if lcm > _MAX_LCM:
            return None
    scaled = np.rint(u * lcm)
    if np.any(np.abs(scaled - u * lcm) > 1e-6):
        return None
    ints = scaled.astype(np.int64)
    if ints.size * (2 * int(np.abs(ints).sum()) + 1) > _MAX_WORK:
        return None
    return ints


def _lattice_p(ints: np.ndarray) -> float:
    """Exact ``P(|sum s_i x_i| >= |sum x_i|)`` for integers ``x_i`` and fair signs, by convolution."""
    a = np.abs(ints)
    total = int(a.sum())
    pmf = np.zeros(2 * total + 1)  # index j is the sum j - total
    pmf[total] = 1.0
    lo = hi = total  # the support so far
    for v in a.tolist():
        new = np.zeros_like(pmf)
        new[lo + v : hi + v + 1] += 0.5 * pmf[lo : hi + 1]
        new[lo - v : hi - v + 1] += 0.5 * pmf[lo : hi + 1]
        pmf, lo, hi = new, lo - v, hi + v
    obs = abs(int(ints.sum()))
    s = np.arange(-total, total + 1)
    return float(min(1.0, pmf[np.abs(s) >= obs].sum()))


def _exact(u: np.ndarray) -> float | None:
    """The exact two-sided p-value of the non-zero units ``u``, or None when too costly."""
    if u.size == 0:
        return 1.0
    if u.size <= EXACT_MAX:
        return _enumerate(u, abs(u.sum()), 1e-9 * max(1.0, float(np.abs(u).sum())))
    ints = _lattice(u)
    return None if ints is None else _lattice_p(ints)


#: values of a column block handled at once by the checks and keys below (8 MB)
_BLOCK_ELEMS = 2**20


def _dyadic_sums(units: np.ndarray, limit: float) -> bool:
    """Whether every value is a multiple of ``2^-10`` and every column's ``1024 sum |u|`` is below ``limit``.

    Then any signed sum of a column's values is a multiple of ``2^-10`` below ``limit / 1024``
    in size, exact in floating point whatever the order of the additions (for ``limit`` up
    to ``2^53``). Checked a block of columns at a time (no copy of ``units``).
    """
    step = max(1, _BLOCK_ELEMS // max(units.shape[0], 1))
    for c in range(0, units.shape[1], step):
        scaled = units[:, c : c + step] * 1024.0
        if not (np.all(scaled == np.rint(scaled)) and float(np.abs(scaled).sum(0).max(initial=0.0)) < limit):
            return False
    return True


def _exact_all(units: np.ndarray):
    """``(j, _exact(column j's non-zero units))`` for every column, each distinct law computed once.

    When every value is a multiple of ``2^-10`` of modest size and there are at most 53
    units, every sum the enumeration and the lattice form is exact, so a column's p-value
    depends only on the multiset of its ``|u|`` and on ``|sum u|``: columns sharing those
    (binary scores over 24 tasks: at most 24 x 25 of 49,770 pairs) share one computation,
    bit for bit the one each would get alone. Otherwise every column is computed on its own.
    The keys are formed a block of columns at a time.
    """
    n, P = units.shape
    if n > 53 or P < 2 or not _dyadic_sums(units, 2.0**50):
        for j in range(P):
            yield j, _exact(units[units[:, j] != 0, j])
        return
    seen: dict[bytes, float | None] = {}
    step = max(1, _BLOCK_ELEMS // max(n, 1))
    for c in range(0, P, step):
        blk = units[:, c : c + step]
        key = np.vstack([np.sort(np.abs(blk), axis=0), np.abs(blk.sum(0))[None, :]]).T
        _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        shared = []
        for f in first.tolist():
            k = key[f].tobytes()
            if k not in seen:
                seen[k] = _exact(blk[blk[:, f] != 0, f])
            shared.append(seen[k])
        for j, g in enumerate(inverse.ravel().tolist()):
            yield c + j, shared[g]


def _monte_carlo(units: np.ndarray, B: int, gen: np.random.Generator) -> np.ndarray:
    """Hits ``#{b : |sum_i s_bi u_ip| >= |sum_i u_ip|}`` per column, one sign matrix for all."""
    n, P = units.shape
    obs = np.abs(units.sum(0))
    tol = 1e-9 * np.maximum(1.0, np.abs(units).sum(0))
    hits = np.zeros(P, dtype=np.int64)
    chunk = max(1, _CHUNK_ELEMS // max(n, P, 1))
    done = 0
    while done < B:
        b = min(chunk, B - done)
        signs = gen.integers(0, 2, size=(b, n), dtype=np.int8) * 2 - 1
        hits += np.count_nonzero(np.abs(signs @ units) >= obs - tol, axis=0)
        done += b
    return hits


def sign_flip_pvalues(
    units: np.ndarray,
    gen: np.random.Generator,
    *,
    n_permutations: int | None,
    n_tests: int,
    alpha: float,
) -> dict[str, np.ndarray | int]:
    """Two-sided sign-flip p-values of the columns of ``units`` (units x comparisons).

    A zero entry (a unit one agent did not run, or no difference) takes no part.

    Parameters
    ----------
    units : numpy.ndarray
        ``(n_units, n_comparisons)``: each unit's difference (a task's, or a
        cluster's sum) for each comparison.
    gen : numpy.random.Generator
        Used only for the comparisons that are not computed exactly.
    n_permutations : int or None
        Monte Carlo sign patterns; None chooses them from the family
        (:func:`family_permutations`).
    n_tests, alpha : int, float
        The family's size and level (for ``n_permutations=None``).

    Returns
    -------
    dict
        ``p``, ``mcse`` (0 when exact), ``exact`` (bool), ``n_nonzero`` per
        comparison and ``n_permutations`` (the B used, 0 when all were exact).

    Examples
    --------
    >>> import numpy as np
    >>> u = np.array([[1.0], [1.0], [1.0], [-1.0], [0.0]])
    >>> out = sign_flip_pvalues(u, np.random.default_rng(0), n_permutations=None, n_tests=1, alpha=0.05)
    >>> float(out["p"][0]), bool(out["exact"][0])   # 10 of the 16 sign patterns give |sum| >= 2
    (0.625, True)
    """
    units = np.asarray(units, dtype=float)
    P = units.shape[1]
    p = np.full(P, np.nan)
    mcse = np.zeros(P)
    exact = np.zeros(P, dtype=bool)
    n_nonzero = np.count_nonzero(units, axis=0)
    for j, pj in _exact_all(units):
        if pj is not None:
            p[j], exact[j] = pj, True
    B = 0
    todo = np.flatnonzero(~exact)
    if todo.size:
        B = n_permutations if n_permutations is not None else family_permutations(n_tests, alpha)
        hits = _monte_carlo(units[:, todo], int(B), gen)
        p[todo] = (1 + hits) / (1 + B)
        mcse[todo] = np.sqrt(p[todo] * (1 - p[todo]) / B)
    return {"p": p, "mcse": mcse, "exact": exact, "n_nonzero": n_nonzero, "n_permutations": int(B)}
