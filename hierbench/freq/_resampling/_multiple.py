"""Every pair of agents compared at once, with a family-wise verdict the family can reach.

With ``m`` pairs, Holm's first threshold is ``alpha / m``: a p-value that
cannot go below it can never call a pair different, however clear the gap;
and Holm treats the pairs as if nothing tied them together, when they are
``m`` contrasts of the same agents' means. :func:`compare_agents` therefore
adjusts by **max-T** by default (:mod:`._maxt`): the law of the largest
studentized difference of the whole family, from sign flips of the units
(tasks, or clusters of tasks) shared by every pair. Its smallest p-value is
the sign-flip floor ``2^(1 - n)`` with ``n`` units, whatever ``m``, and its
simultaneous intervals ``estimate +- c se`` exclude 0 exactly for the pairs it
separates. Holm and Benjamini-Hochberg stay beside it (``p_holm``, ``p_bh``).

* The per-pair sign-flip test is exact whenever that is affordable
  (enumeration, or lattice convolution for binary scores) and otherwise draws
  enough random sign patterns for Holm's ``alpha / m`` (:mod:`._signflip`),
  each Monte Carlo p-value with its standard error.
* When the units are too few for any sign-flip test to reach the level (its
  floor is ``2^(1 - n)``: 5 clusters, say), the default switches to the
  paired t-test and says so. With clusters it is the bias-reduced CR2 t with
  Bell-McCaffrey degrees of freedom, which holds its level with few and
  unequal clusters where the usual CR1 t with ``G - 1`` df does not
  (measured on SWE-bench's 12 repos, one holding 231 of 500 tasks: CR1
  rejects 10% at 5% and 0.7% at 0.1% under the null; CR2 3-6% and below
  0.1%). The price is honest: few clusters carry little information about
  new clusters.
* Each pair's own interval (``ci``) is the paired t interval by default (``method="t"``; the
  CR2 t with clusters): the percentile bootstrap of a mean over few tasks is too narrow by
  about ``sqrt(T / (T - 1))`` and a normal quantile where the t's is due, and it covered 0.84
  at 6 tasks and 0.90 at 10 at a stated 95% (the numbers under ``method``). The bootstrap
  interval stays beside it (``ci_bootstrap``) and is ``ci`` on request.
* Why not the multivariate t of the CR2 t-statistics (``multcomp`` with a
  sandwich covariance) by default: with 12 clusters its estimated
  correlation of the 300 pairs has rank 11 where the 24 contrasts need 24,
  and its one shared denominator ignores that each pair's SE varies on its
  own; simulated at SWE-bench's shape under the complete null (binary
  scores, agent x repository sd 0 to 1 on the logit scale) it rejected some
  true null in 6-14% of data sets at 0.05 with 8 agents and 12-46% with 25
  (100 data sets each), where the sign-flip max-T rejected in 4.7-5.3%
  (300-400 data sets each, Monte Carlo sd 0.011-0.013). On SWE-bench its
  critical value is 6.65 (159 pairs), the sign flips' 9.05 (116 pairs). It is
  used when it is accurate (many units, many df) and otherwise only when
  asked, with a :class:`MaxTApproximationWarning`.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import HierbenchWarning
from ..._base import SmallSampleWarning
from ..._base import ZeroWidthIntervalWarning
from ..._base import as_rng
from ..._base import check_choice
from ..._base import check_prob
from ..._base import cluster_codes
from ..._base import cluster_label
from ..._base import renamed_kwargs
from ..._base import warn_user
from .._inputs import agent_task_means
from .._inputs import with_counts_hash
from ._bootstrap import DegenerateBootstrapError
from ._bootstrap import _bootstrap_summary
from ._maxt import cr2_scores
from ._maxt import mvt_maxt
from ._maxt import mvt_reliable
from ._maxt import signflip_maxt
from ._pair_interval import PAIR_METHODS
from ._pair_interval import _unit_range
from ._pair_stats import _all_pairs
from ._pair_stats import _pair_units
from ._paired import _check_counts
from ._pairwise_result import _MAXT
from ._pairwise_result import ONE_PAIR
from ._pairwise_result import PairwiseComparisonResult
from ._pairwise_result import _matrices
from ._pairwise_result import _p_value_note
from ._pairwise_result import _pairwise_result
from ._pairwise_result import recorded_note
from ._signflip import PValueResolutionWarning
from ._signflip import auto_test
from ._signflip import sign_flip_pvalues

__all__ = [
    "MaxTApproximationWarning",
    "PValueResolutionWarning",
    "compare_agents",
]

_TESTS = ("auto", "permutation", "bootstrap", "t", "mcnemar")
_ADJUSTS = ("auto", "maxt", "maxt-stepdown", "holm", "bh")


class MaxTApproximationWarning(SmallSampleWarning):
    """The multivariate-t max-T is too optimistic here (few units or few df): it may over-reject."""


# --------------------------------------------------------------------------- choices


def _choose_test(
    test: str, adjust: str, st: dict, n_tests: int, alpha: float, unit: str
) -> tuple[str, str]:
    """The test whose p-values are adjusted, and why (``test="auto"``).

    Max-T needs the sign-flip floor ``2^(1 - n)`` below ``alpha``; Holm and BH below
    ``alpha / m``.
    """
    if test != "auto":
        return test, "chosen by the caller"
    family = adjust in ("auto", *_MAXT)
    return auto_test(st["n_units"][st["defined"]], need=1 if family else n_tests, alpha=alpha, unit=unit)


def _choose_adjust(adjust: str, test: str, why_not_mvt: str | None, n_pairs: int = 2) -> tuple[str, str]:
    """The adjustment (``adjust="auto"``: max-T where its joint law is trustworthy, else Holm).

    With one pair (``n_pairs`` defined) there is nothing to adjust for: ``"auto"`` gives Holm,
    which leaves the pair's own p-value as it is. Max-T over one pair is its studentized
    sign-flip test drawn at random (two agents on SWE-bench-like 25 tasks: p max-T 4.7e-5,
    the floor of 21,112 draws, beside the exact per-pair p 3.9e-6).
    """
    if adjust == "auto" and n_pairs == 1:
        return "holm", ONE_PAIR
    if adjust == "auto":
        if test == "permutation":
            return "maxt", (
                "max-T single step from sign flips shared by every pair: the law of the largest "
                "studentized difference, so the verdict does not hinge on the number of pairs "
                "and the simultaneous intervals match it"
            )
        if test == "t" and why_not_mvt is None:
            return "maxt", (
                "max-T single step from the multivariate t of the pairs' t-statistics "
                "(their estimated correlation, the same df)"
            )
        why = why_not_mvt if test == "t" else f"the {test} test has no joint null law here"
        return "holm", f"Holm: no trustworthy max-T ({why})"
    if adjust in _MAXT and test == "t" and why_not_mvt is not None:
        warn_user(
            f"the multivariate-t max-T is too optimistic here: {why_not_mvt}. Simulated at "
            "SWE-bench's shape (12 clusters) it rejected a true null in 6-46% of data sets at "
            "0.05; test='permutation' takes the joint law from sign flips instead",
            MaxTApproximationWarning,
        )
    return adjust, "chosen by the caller"


def _tested(st: dict, *, infinite: bool = False) -> np.ndarray:
    """The pairs with a defined t-statistic (a finite, positive SE).

    With ``infinite``, also those whose t is infinite (SE 0 beside a nonzero difference): the
    sign flips' max-T family (:func:`_family_maxt`).
    """
    with np.errstate(invalid="ignore"):
        se_ok = (st["se"] > 0) | (st["mean_diff"] != 0) if infinite else st["se"] > 0
        return np.flatnonzero(st["defined"] & np.isfinite(st["se"]) & se_ok)


def _family_maxt(
    test: str, st: dict, units: np.ndarray, counts: np.ndarray,
    *, alpha: float, gen: np.random.Generator, n_draws: int | None,
) -> dict:
    """Max-T over the pairs with a defined t-statistic; their results go into ``st``.

    With sign flips, a pair whose every shared unit differs by the same nonzero amount (an
    agent at 100% against one at 0%) is in the family too: its SE is 0, so its ``|t|`` is
    infinite, and so is its flipped ``|t|`` under the patterns that flip all its units
    alike, which the maximum then counts (:func:`hierbench.freq._resampling._maxt.signflip_maxt`).
    The multivariate-t route has no law for an infinite ``t``: there such a pair is left out.

    A pair whose difference is 0 on every unit it shares (SE 0, ``t = 0/0``) gets ``p_maxt``
    1: its ``|t|`` is taken as 0, as the null draws take it, and every sign
    pattern's largest ``|t|`` is at least 0; so too where every pair ties and there is no family.
    """
    ok = _tested(st, infinite=test == "permutation")
    with np.errstate(invalid="ignore"):
        tie = np.flatnonzero(st["defined"] & (st["se"] == 0) & (st["mean_diff"] == 0))
    for name in ("p_maxt", "p_maxt_stepdown", "p_maxt_mcse", "p_maxt_stepdown_mcse"):
        st[name] = np.full(st["defined"].shape, np.nan)
        st[name][tie] = 0.0 if name.endswith("_mcse") else 1.0
    if not ok.size:
        return {"crit": np.nan, "exact": True, "n_patterns": 0}
    if test == "permutation":
        out = signflip_maxt(units[:, ok], counts[:, ok], alpha=alpha, gen=gen, n_draws=n_draws)
    else:
        _, _, scores = cr2_scores(units[:, ok], counts[:, ok])
        t = st["mean_diff"][ok] / st["se"][ok]
        df = st["df"][ok]
        out = mvt_maxt(t, scores, df, alpha=alpha, gen=gen, n_draws=n_draws)
    names = {"p": "p_maxt", "p_mcse": "p_maxt_mcse", "p_stepdown": "p_maxt_stepdown",
             "p_stepdown_mcse": "p_maxt_stepdown_mcse"}
    for key, name in names.items():
        st[name][ok] = out[key]
    return out


def _contrast_rank(pairs: list, st: dict, M: int) -> int:
    """Rank of the contrast matrix of the defined pairs (agents joined by pairs, minus components)."""
    C = np.zeros((len(pairs), M))
    k = np.flatnonzero(st["defined"])
    pi, pj = np.array(pairs, dtype=np.intp).reshape(-1, 2)[k].T
    C[k, pi], C[k, pj] = 1.0, -1.0
    return int(np.linalg.matrix_rank(C)) if C.any() else 0


def _why_not_mvt(st, units, counts, pairs, M) -> str | None:
    """Why the multivariate-t max-T would be too optimistic on these pairs (None: it is not)."""
    ok = _tested(st)
    if ok.size < 2:
        return None
    _, _, scores = cr2_scores(units[:, ok], counts[:, ok])
    return mvt_reliable(scores, st["df"][ok], _contrast_rank(pairs, st, M))


def _p_floors(test: str, st: dict, flip: dict, n_resamples: int) -> None:
    """Each pair's smallest attainable p-value of the chosen test, into ``st["p_value_floor"]``.

    An exact sign-flip p-value over ``n`` units with a difference is at least ``2^(1 - n)`` (two
    agents differing on 5 of 9 tasks: 0.0625, not 2^(1 - 9)), a Monte Carlo one
    ``1 / (B + 1)``, the bootstrap one ``2 / (B + 1)``; the t-test and McNemar have none
    here (0). ``st["p_permutation_exact"]`` marks the exact sign-flip p-values (1, else 0):
    the result reads both when it says what the floors leave an adjustment unable to call.
    """
    defined = st["defined"]
    st["p_permutation_exact"] = np.where(defined, flip["exact"].astype(float), np.nan)
    if test == "bootstrap":
        floors = np.full(defined.shape, 2 / (n_resamples + 1))
    elif test == "permutation":
        mc = 1 / (flip["n_permutations"] + 1) if flip["n_permutations"] else np.nan
        with np.errstate(invalid="ignore"):
            # over the units with a difference: a unit of difference 0 flips to itself
            floors = np.where(flip["exact"], np.minimum(1.0, 2.0 ** (1 - flip["n_nonzero"])), mc)
    else:
        floors = np.zeros(defined.shape)
    st["p_value_floor"] = np.where(defined, floors, np.nan)


def _warn_resolution(res: PairwiseComparisonResult) -> None:
    """Warn what the p-values' floors leave the result's own adjustment unable to call.

    The words are the ones the result recorded for it (``recorded_note``, made by the one rule
    ``resolution_note``): ``significant(adjust=...)`` says the same for another adjustment.
    """
    note = recorded_note(res.table.attrs, res.table.attrs["adjust"])
    if note:
        warn_user(note, PValueResolutionWarning)


# --------------------------------------------------------------------------- public


def _maxt_method(fam: dict, test: str, unit: str) -> str:
    """How the max-T law was obtained, in words (for attrs and the interval's detail)."""
    if not fam.get("n_patterns"):
        return ""
    if test == "t":
        return (f"the multivariate t: {fam['n_patterns']} Monte Carlo draws, the correlation from "
                f"the CR2 covariance of the pairs' means over {fam['n_units']} {unit}")
    if fam["exact"]:
        # the enumeration fixes the first unit's sign: 2^(n-1) patterns, each standing for
        # itself and its flip of every sign, which leaves every |t| as it is
        return (f"exact over all {2 * fam['n_patterns']} sign patterns of the {fam['n_units']} {unit} "
                f"with a difference ({fam['n_patterns']} computed: flipping every sign leaves |t| as it is); "
                "the CR2 t re-computed under each")
    return (f"{fam['n_draws']} random sign patterns of the {fam['n_units']} {unit} with a "
            "difference, Monte Carlo; the CR2 t re-computed under each")


def _attrs(test, reason, adjust, adjust_reason, codes, cluster, flip, fam, prob, n_resamples, n_rows):
    """The result's attrs: what was tested, how adjusted, over which units, and why."""
    unit = "clusters" if codes is not None else "tasks"
    return {
        "test": test,
        "test_reason": reason,
        "adjust": adjust,
        "adjust_reason": adjust_reason,
        "unit": unit,
        "n_units_total": int(n_rows),
        "cluster_coord": ("cluster" if cluster == "auto" else str(cluster)) if codes is not None else "",
        "ci_prob": prob,
        "n_resamples": int(n_resamples),
        "n_permutations": flip["n_permutations"],
        "p_permutation_method": f"sign flips of the {unit}' differences: exact (enumeration, or "
        "lattice convolution) "
        + (f"where affordable, else Monte Carlo with {flip['n_permutations']} patterns shared by the "
           "pairs" if flip["n_permutations"] else "for every pair"),
        "maxt_method": _maxt_method(fam, test, unit),
        "maxt_crit": float(fam.get("crit", np.nan)),
        "maxt_exact": bool(fam.get("exact", False)),
        "maxt_draws": int(fam.get("n_draws", 0)),
        # the smallest max-T p-value, and what sets it (the result says what it leaves uncalled)
        "maxt_floor": (1.0 / (fam["n_patterns"] + (0 if fam.get("exact") else 1))
                       if fam.get("n_patterns") else np.nan),
        "maxt_patterns": int(fam.get("n_patterns", 0)),
        "maxt_units": int(fam.get("n_units", 0)),
    }


@renamed_kwargs(dim="task_dim")
def compare_agents(
    data: xr.Dataset | xr.DataArray,
    *,
    test: str = "auto",
    adjust: str = "auto",
    task_dim: str = "task",
    run_dim: str = "run",
    agent_dim: str = "agent",
    cluster: str | None = "auto",
    prob: float = DEFAULT_PROB,
    n_resamples: int = 9999,
    n_permutations: int | None = None,
    n_draws: int | None = None,
    method: Literal["t", "percentile", "bca"] = "t",
    rng: None | int | np.random.Generator = None,
) -> PairwiseComparisonResult:
    """Every pair of agents compared on shared tasks, with a family-wise verdict and intervals.

    Parameters
    ----------
    data : xarray.Dataset or xarray.DataArray
        Eval dataset or a score DataArray. At most 67 million pairs x tasks (316 agents x 24
        tasks: 1.2 million); above, a ValueError says how to cut them.
    test : {"auto", "permutation", "bootstrap", "t", "mcnemar"}
        The per-pair test. ``"auto"``: the sign-flip test when every pair has enough tasks
        (clusters) for its smallest p-value to pass the adjustment's first threshold (``1 - prob``
        for max-T, ``(1 - prob) / m`` for Holm and BH), else the paired t-test (``attrs["test"]``,
        ``attrs["test_reason"]``).
    adjust : {"auto", "maxt", "maxt-stepdown", "holm", "bh"}
        The family-wise verdict (:meth:`~PairwiseComparisonResult.significant`). ``"auto"``:
        single-step max-T wherever its joint law is trustworthy (sign flips shared by every pair,
        each re-studentized; or the multivariate t when units and df are many), else Holm
        (``attrs["adjust_reason"]``); one pair: its own p-value. Max-T's threshold follows what
        the pairs share, not how many they are: Holm's first is ``alpha / m`` (300 pairs over 12
        clusters: ``|t| > 18.9``) though the pairs are contrasts of the same 25 means; max-T's is
        the family's largest ``|t|``'s ``1 - alpha`` quantile (9.05 there), and ``ci_simultaneous``
        excludes 0 exactly for the pairs it separates. ``"maxt-stepdown"`` separates at least as
        many, with no matching interval. ``p_holm`` and ``p_bh`` are always there.
    task_dim, run_dim, agent_dim : str
        Task, run and agent dims.
    cluster, prob, n_resamples, rng
        As in :func:`paired_test`; one task (cluster) resample is shared by
        every pair. ``1 - prob`` is also the family's level.
    method : {"t", "percentile", "bca"}
        The per-pair interval ``ci``: ``"t"`` (default) the paired t over the tasks (``T - 1`` df),
        over clusters the CR2 t (Bell-McCaffrey df), which a bootstrap ``method`` does not replace;
        ``ci_bootstrap`` is always the bootstrap's (``attrs["ci_method"]``). Why t: at 95% with 6 /
        10 / 30 tasks the percentile interval held 0.84 / 0.90 / 0.94 of simulated pairs, the t
        0.95 (``benchmarks/bench_pair_interval.py``); on binary SWE-bench draws the t's misses are
        the pairs that agree on every task drawn, whose zero width is warned.
    n_permutations : int or None
        Monte Carlo sign patterns for the per-pair p-values that are not exact; None: ``B + 1 >=
        20 m / (1 - prob)``. Where ``B``'s floor ``1 / (B + 1)`` keeps a pair from Holm's (BH's)
        first threshold, a ``PValueResolutionWarning`` says so and the ``B`` that reaches it.
    n_draws : int or None
        Null draws of the max-T law when not enumerated (sign patterns, or multivariate-t draws);
        None: a Monte Carlo error of at most 0.0015 at ``p = 1 - prob`` (21,112 at 95%); exact
        (every sign pattern) with at most 16 units carrying a difference.

    Returns
    -------
    PairwiseComparisonResult
        ``estimate`` / ``ci`` (mean difference, per-pair interval), ``ci_simultaneous``, a tidy
        ``to_frame()``, the compact ``matrix()``, ``significant()``, and matrices over
        ``(agent, opponent)`` (row agent minus column agent): ``mean_diff``, ``se`` and ``df`` (of
        the paired t), ``ci`` (``method``'s), ``ci_bootstrap``, ``p_permutation`` and ``p_bootstrap``
        with their Monte Carlo standard errors (``*_mcse``, 0 when exact), ``p_t``, ``p_mcnemar``,
        ``p_value`` / ``p_value_mcse`` (of the test), ``p_maxt`` / ``p_maxt_stepdown`` with their
        ``*_mcse``, ``p_holm``, ``p_bh``, ``p_adjusted`` (of the adjustment), ``prob_superiority``,
        ``cohens_dz``, ``n_tasks``, ``n_units`` (tasks, or clusters), ``p_value_floor`` (its test's
        smallest p-value), ``p_permutation_exact``; NaN on the diagonal. ``attrs``: the test, adjustment, unit (``test_unit``: McNemar's is the tasks),
        ``maxt_crit``, ``p_value_note`` (why ``p_adjusted`` can be below ``p_value``), ``p_maxt_tie_note``
        (why a pair with no difference on any unit has ``p_maxt`` 1) and ``p_holm_note`` / ``p_bh_note`` /
        ``p_maxt_note``: what the floors leave each adjustment unable to call (warned, and said in the repr).

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=3, n_tasks=40, n_runs=2, rng=0)
    >>> res = compare_agents(ds, n_resamples=499, rng=1)
    >>> res.attrs["test"], res.attrs["adjust"], res.ci_simultaneous.attrs["ci_detail"][:40]
    ('permutation', 'maxt', 'simultaneous, max-T over 3 comparisons: ')
    """
    prob = _check_args(test, adjust, prob, n_resamples, n_permutations, n_draws, method)
    gen = as_rng(rng)
    score, means = agent_task_means(data, agent_dim=agent_dim, task_dim=task_dim, run_dim=run_dim,
                                    purpose="compare_agents")  # fmt: skip
    _check_tasks(score, task_dim)
    agents = [str(x) for x in score[agent_dim].values]
    pairs = _all_pairs(len(agents), score.sizes[task_dim], agent_dim)
    boot = _pair_bootstrap(  # in bounded memory: the distribution is never held whole
        score, pairs=[(agents[i], agents[j]) for i, j in pairs], n_resamples=int(n_resamples), prob=prob,
        method="bca" if method == "bca" else "percentile", cluster=cluster, run_dim=run_dim,
        task_dim=task_dim, agent_dim=agent_dim, rng=gen)
    cc = cluster_codes(score, cluster, dim=task_dim)
    st, units, counts = _pair_units(means, pairs, agents, None if cc is None else cc[0])
    opts = {"test": test, "adjust": adjust, "prob": prob, "n_resamples": int(n_resamples), "n_draws": n_draws,
            "n_permutations": n_permutations, "cluster": cluster, "cluster_column": cluster_label(score, cluster),
            "unit_scores": _unit_range(score.values), "ci_method": method}  # fmt: skip
    return with_counts_hash(_family_result(st, units, counts, pairs, agents, boot, cc, opts, gen), data, rng)  # the report checks it


def _pair_bootstrap(score, **kw):
    """The pairs' bootstrap summary, its zero-width warning left to the intervals the result reports.

    With the t-test or clusters the per-pair interval is a t interval, not this one, and the
    simultaneous interval can have zero width too (``_pairwise_result`` warns of both).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ZeroWidthIntervalWarning)
        return _bootstrap_summary(score, **kw)


def _check_tasks(score: xr.DataArray, task_dim: str) -> None:
    """Refuse fewer than 2 tasks up front, in ``hierbench compare``'s words (no bootstrap `scheme` here)."""
    n = score.sizes[task_dim]
    if n < 2:
        held = f" ({str(score[task_dim].values[0])!r})" if n else ""
        raise DegenerateBootstrapError(
            f"compare_agents needs at least 2 tasks: the paired tests and intervals resample "
            f"tasks, and `data` holds {n}{held}: every resample would be the data. Add tasks "
            "(hierbench.data.summarize shows each agent's mean and runs)"
        )


def _check_args(test, adjust, prob, n_resamples, n_permutations, n_draws, method) -> float:
    """:func:`compare_agents`' choices and counts checked; the level."""
    check_choice(test, "test", _TESTS)
    check_choice(adjust, "adjust", _ADJUSTS)
    check_choice(method, "method", PAIR_METHODS)
    if adjust in _MAXT and test in ("bootstrap", "mcnemar"):
        raise ValueError(
            f"`adjust`={adjust!r} needs the joint null law of the pairs, which the {test} test "
            "does not give; use test='permutation' or 't', or adjust='holm' / 'bh'"
        )
    _check_counts(n_resamples, n_permutations)
    _check_counts(1, n_draws)
    return check_prob(prob)


def _family_result(st, units, counts, pairs, agents, boot, cc, opts, gen) -> PairwiseComparisonResult:
    """Test, adjustment and intervals of the family of pairs (:func:`compare_agents`' engine)."""
    codes = None if cc is None else cc[0]
    alpha, m = 1 - opts["prob"], max(1, int(np.count_nonzero(st["defined"])))
    flip = sign_flip_pvalues(units, gen, n_permutations=opts["n_permutations"], n_tests=m, alpha=alpha)
    unit = "clusters" if codes is not None else "tasks"
    chosen, reason = _choose_test(opts["test"], opts["adjust"], st, m, alpha, unit)
    why = _why_not_mvt(st, units, counts, pairs, len(agents)) if chosen == "t" else None
    adjust, adjust_reason = _choose_adjust(opts["adjust"], chosen, why, m)
    fam = {}
    if adjust in _MAXT:
        fam = _family_maxt(chosen, st, units, counts, alpha=alpha, gen=gen, n_draws=opts["n_draws"])
    _p_floors(chosen, st, flip, opts["n_resamples"])
    mats, ci = _matrices(st, pairs, flip, boot, len(agents))
    attrs = _attrs(
        chosen, reason, adjust, adjust_reason, codes, opts["cluster"], flip, fam, opts["prob"],
        opts["n_resamples"], units.shape[0],
    )
    attrs.update(_mcnemar_notes(chosen, unit, units.shape[0]))
    # the clusters by the column the user named (the coord is `cluster` whatever it was read from)
    attrs["cluster_column"] = opts["cluster_column"] if cc is not None else ""
    attrs["unit_scores"] = int(opts["unit_scores"])  # every score in [0, 1]: t intervals kept to [-1, 1]
    attrs["ci_method"] = opts["ci_method"]  # the per-pair interval asked for (``_pairwise_result`` decides)
    attrs["p_value_note"] = _p_value_note(attrs)  # where p_adjusted can be below p_value, why
    if cc is not None:
        labels = [str(x) for x in cc[1]]
        attrs["unit_labels"] = ", ".join(labels[:4]) + (", ..." if len(labels) > 4 else "")
    res = _pairwise_result(mats, ci, agents, boot.ci.attrs, attrs, fam)
    _warn_resolution(res)
    if attrs["test_note"]:
        warn_user(attrs["test_note"], HierbenchWarning)
    return res


def _mcnemar_notes(test: str, unit: str, n_units: int) -> dict[str, str]:
    """What McNemar's unit is, where the result's unit is clusters: the tasks (attrs notes).

    McNemar counts discordant tasks as independent; with clusters the per-pair ``ci``, the
    sign flips and the t-test honour them, McNemar does not, and its verdict must not be
    read as over clusters.
    """
    test_unit = "tasks" if test == "mcnemar" else unit
    if unit != "clusters":
        return {"test_unit": test_unit, "test_note": "", "p_mcnemar_note": ""}
    how = "treats the tasks as independent (each task's majority outcome)"
    test_note = "" if test != "mcnemar" else (
        f"test='mcnemar' {how}: its verdict (p_value, p_holm, p_bh) ignores the {n_units} clusters, "
        "while ci is over them (CR2); test='auto' gives a verdict over the clusters")
    return {"test_unit": test_unit, "test_note": test_note,
            "p_mcnemar_note": f"p_mcnemar {how}: the {n_units} clusters are ignored by it"}
