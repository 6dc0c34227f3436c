"""Pair comparisons as people read them: the one table the CLI, the demo and the report print.

All three read :func:`hierbench.freq.compare_agents`'s result through its
``to_frame()`` (one row per unordered pair), so they show the same numbers
for the same data and seed, under the same one sentence
(:func:`pair_sentence`: the unit, the test, the adjustment). Each row leads
with what decides: the difference, the simultaneous interval that matches the
family-wise verdict, the adjusted p-value with its Monte Carlo error and the
verdict; the per-pair interval and the other p-values follow. With many
agents one row per pair is hundreds of rows: :func:`pair_matrix` puts the
differences and the verdict's marks in one agent x agent matrix, and the full
table stays one call away (``compare_agents(...).to_frame()``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

from .._base import counted
from .._base import fit_record
from ..freq import ci_p_disagree
from ..freq import disagree_label
from ..freq import disagree_way
from ._context import _clustered_model
from ._context import clustered_crossed
from ._context import g_interval
from ._match import battles_fit
from ._pair_rows import PAIR_ROWS
from ._pair_rows import differ_column as differ_column
from ._pair_rows import differ_parts
from ._report import judged

if TYPE_CHECKING:
    from ..freq import PairwiseComparisonResult

__all__ = [
    "MATRIX_ABOVE",
    "bayes_pair_note",
    "differ_column",
    "disagree_column",
    "disagree_note",
    "marks_legend",
    "p_text",
    "pair_display",
    "pair_frame",
    "pair_matrix",
    "pair_sentence",
    "pair_text",
    "settings_text",
]

#: With more agents than this the report and the CLI show the compact matrix.
MATRIX_ABOVE = 8

#: adjusted p below alpha, alpha / 5, alpha / 50 (0.05, 0.01, 0.001 at 95%).
_MARK_STEPS = ((50.0, "***"), (5.0, "**"), (1.0, "*"))

#: the per-pair test, in words
_TEST_WORDS = {
    # the per-pair p: the sign-flip law of the summed difference over the units, not studentized
    "permutation": "sign-flip tests of each pair's mean difference",
    "t": "paired t-tests",
    "bootstrap": "paired bootstrap tests",
    "mcnemar": "exact McNemar tests",
}


#: the adjustment, as a column label
_SHORT = {"maxt": "max-T", "maxt-stepdown": "max-T step-down", "holm": "Holm", "bh": "BH"}


def _mark(p: float, alpha: float) -> str:
    if not np.isfinite(p):
        return ""
    for div, mark in _MARK_STEPS:
        if p < alpha / div:
            return mark
    return ""


def _dataset(cmp) -> xr.Dataset:
    """A comparison result as its Dataset (a Dataset given is returned as it is)."""
    return cmp.to_dataset() if hasattr(cmp, "to_dataset") else cmp


def _attrs(cmp) -> dict:
    return dict(_dataset(cmp).attrs)


def marks_legend(alpha: float, adjust: str = "max-T single-step", table: pd.DataFrame | None = None) -> str:
    """What the marks mean at level ``alpha`` for the adjustment named ``adjust``.

    ``table``: :func:`pair_frame`'s, whose adjusted p-values are Monte Carlo estimates with an
    error column: then the legend adds, at each stricter mark's level (``alpha / 5``,
    ``alpha / 50``), how many pairs lie within two Monte Carlo errors of it (``_near_level``
    says so at ``alpha`` itself). METR, max-T from 21,112 null draws: the MC error at 0.001 is about
    0.0002, and across seeds 0-5 the ``***`` pairs were 10, 10, 10, 13, 12, 10 (audit R4).
    """
    parts = [f"`{m}` {adjust} adjusted p < {alpha / d:.3g}" for d, m in reversed(_MARK_STEPS)]
    text = "; ".join(parts) + "; no mark: not separated at that level"
    near = [] if table is None else _marks_near(table, alpha)
    if near:
        text += (". The adjusted p-values are Monte Carlo estimates, so some marks can come or go with the seed "
                 + ("or more draws" if not table.attrs.get("resolution")
                    else "or more draws (more only past the resolution said above)") + ": " + "; ".join(near))
    return text


def _marks_near(table: pd.DataFrame, alpha: float) -> list[str]:
    """Per stricter mark level, the pairs of ``table`` whose adjusted p lies within two MC errors of it, in words."""
    col = differ_column(table)
    if col is None:
        return []
    p_col = differ_parts(col)[0]
    if f"MC error of {p_col}" not in table:
        return []
    p, se = table[p_col].to_numpy(float), table[f"MC error of {p_col}"].to_numpy(float)
    out = []
    for div, mark in _MARK_STEPS[1::-1]:  # alpha / 5 (**), alpha / 50 (***)
        near = _near(p, se, alpha / div)
        if near.any():
            k, on = int(near.sum()), int((near & (p < alpha / div)).sum())
            out.append(f"at {alpha / div:.3g} (`{mark}`) {counted(k, 'pair')} ({on} marked) lie"
                       f"{'s' if k == 1 else ''} within two Monte Carlo errors of the level")
    return out


def _unit_words(a: dict) -> str:
    if a.get("unit") == "clusters":
        ex = f": {a['unit_labels']}" if a.get("unit_labels") else ""
        # the column the user named (results from before it was recorded: the coord's name)
        name = a.get("cluster_column") or a.get("cluster_coord") or "cluster"
        return f"the {a.get('n_units_total', '?')} task clusters of `{name}`{ex}"
    return f"the {a.get('n_units_total', '?')} tasks"


def pair_sentence(cmp: PairwiseComparisonResult, alpha: float | None = None) -> str:
    """The one sentence above every pair table: how many differ, the unit, the test, the adjustment.

    Pairs that cannot be tested are counted apart, never as "does not differ": those sharing
    fewer than 2 tasks, and those with a difference but no p-value (the same difference on
    every shared task has no standard error, so no t statistic), named with the smallest
    p-value a sign-flip test over their units could give. The adjustment is said over the
    pairs it ran over (those with a p-value).

    Examples
    --------
    >>> import warnings
    >>> from hierbench.freq import compare_agents
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=3, n_tasks=40, n_runs=2, rng=0)
    >>> pair_sentence(compare_agents(ds, n_resamples=99, rng=1))[:60]
    '0 of 3 pairs differ at family-wise level 0.05 (row agent min'
    """
    a = _attrs(cmp)
    prob = float(a.get("ci_prob", 0.95))
    alpha = 1.0 - prob if alpha is None else alpha
    adjust, name = a.get("adjust", "holm"), a.get("adjust_name", "Holm")
    ds = _dataset(cmp)
    m = int(a.get("n_pairs", 0))
    iu = np.triu_indices(ds.sizes["agent"], 1)
    p = ds["p_adjusted"].transpose("agent", "opponent").values[iu]
    n_sig = int(np.sum(p < alpha))
    d = (ds["estimate"] if "estimate" in ds else ds["mean_diff"]).transpose("agent", "opponent").values[iu]
    untested = np.isnan(p) & np.isfinite(d) & (d != 0)  # a difference, no p-value: not tested either
    n_none = int(untested.sum())
    # pairs that share fewer than 2 tasks have no difference: not tested, never "does not differ"
    n_undef = int(np.sum(np.isnan(d)))
    if n_undef == m:
        who = "the two agents share" if m == 1 else f"each of the {m} pairs shares"
        return (f"{'The one pair cannot' if m == 1 else 'No pair can'} be compared: {who} fewer than 2 tasks, so "
                "there is no paired difference to test (every column of the table is NaN).")  # fmt: skip
    n_judged, n_fam = m - n_undef - n_none, int(np.isfinite(p).sum())
    test = _test_words(a)
    how = f" ({a['maxt_method']})" if adjust.startswith("maxt") and a.get("maxt_method") else ""
    rows = (f" (row agent minus column agent, on the tasks both ran): {test} over {_unit_words(a)}")
    why_none = _untested_text(ds, untested, a, alpha, m)
    if not n_judged:  # every pair with a difference is untested: nothing to count as differing or not
        head = (f"{'The one pair cannot' if m == 1 else 'No pair can'} be tested at level {alpha:g}"
                if n_undef == 0 else f"None of the {m} pairs can be tested at level {alpha:g}")
        return (f"{head}{rows}. {why_none}"
                + (f" {n_undef} of the {m} pairs share fewer than 2 tasks (NaN in the table)." if n_undef else ""))
    if n_judged == 1:  # two agents (or one pair tested): nothing to adjust for, and one interval
        one = "one pair" if m == 1 else "one pair tested"
        head = f"The {one} {'differs' if n_sig else 'does not differ'} at level {alpha:g}"
        adj = f"; {one}, so no adjustment{how if adjust.startswith('maxt') else ''}"
        tail = (f"; its {prob:.0%} interval excludes 0 exactly when it differs" if adjust == "maxt"
                else f"; its interval is the pair's own ({prob:.0%})")  # fmt: skip
    else:
        level = "false discovery rate" if adjust == "bh" else "family-wise level"
        of = f"of {m} pairs" if n_judged == m else f"of the {n_judged} pairs tested"
        head = f"{n_sig} {of} differ at {level} {alpha:g}"
        adj = _family_words(name, n_fam, n_judged, how)
        if adjust == "maxt":
            tail = f"; their {prob:.0%} simultaneous intervals exclude 0 exactly for those pairs"
        elif adjust == "maxt-stepdown":
            tail = f"; the {prob:.0%} simultaneous intervals are the single-step ones, which separate fewer"
        else:
            tail = f"; the intervals are per pair ({prob:.0%}), not simultaneous"
    floor = resolution_words(cmp, alpha)
    if floor:  # the count is what the p-values' floors allow, not a finding (audit R1: "0 of 300" on SWE-bench)
        head += ", a verdict the p-value's resolution caps" if n_judged == 1 else ", a count the p-values' resolution caps"
    return (
        f"{head}{rows}{adj}{tail}." + (TASK_UNIT_NOTE if a.get("unit") == "tasks" else "")
        + (f" Resolution: {floor}" if floor else "")
        + _near_level(ds, alpha, adjust, bool(floor))
        + (f" {why_none}" if n_none else "")
        + (f" {n_undef} of the {m} pairs share fewer than 2 tasks: not tested (NaN in the table)." if n_undef else "")
    )


#: what a verdict over tasks as units does not say (audit R6: SWE-bench, 221 of 300 pairs differ over its
#: 500 tasks, 116 over its 12 repositories: both right, to two questions)
TASK_UNIT_NOTE = (" Each task is its own unit: the verdict is about these tasks. Where tasks come in groups "
                  "(repositories, task families), give the groups as task clusters (--cluster, or a task coord named "
                  "cluster) to ask about new groups, which can change the verdict.")


def _test_words(a: dict) -> str:
    """The per-pair test of a result's attrs, in words (the verdict's statistic under max-T)."""
    test = _TEST_WORDS.get(a.get("test", ""), f"{a.get('test')} tests")
    if a.get("test") == "permutation" and str(a.get("adjust", "")).startswith("maxt"):
        test = "sign-flip tests of each pair's studentized (CR2) mean difference"
    if a.get("test") == "t":
        test += " (CR2 cluster-robust SE, Bell-McCaffrey df)" if a.get("unit") == "clusters" else ""
    return test


def _family_words(name: str, n_fam: int, n_judged: int, how: str) -> str:
    """", adjusted by Holm over the 3 pairs": the pairs the adjustment ran over (those with a p-value)."""
    if n_fam == 0:
        return "; no pair has a p-value to adjust"
    if n_fam == 1:
        return f"; one pair with a p-value, so no adjustment{how}"
    rest = n_judged - n_fam  # with a p-value of its own: those with no difference on any shared task have none
    return (f", adjusted by {name} over the {n_fam} pairs{how}" if not rest
            else f", adjusted by {name} over the {n_fam} pairs with a p-value{how} (the other {rest} differ "
            "on no shared task)")


def sign_flip_floor(n: float, word: str, p_flip: float, alpha: float) -> str:
    """What a sign-flip test could say of a pair with the same difference on each of its ``n`` units.

    Its p-value is ``2^(1 - n)``, the smallest any sign-flip test over ``n`` units gives: at or above
    ``alpha`` no test here can separate the pair (5 tasks: 0.0625); below it, the exact sign-flip
    p-value ``p_flip`` (``p_permutation``, not adjusted for the family) is where the pair stands.
    """
    f = 2.0 ** (1 - n)
    if f >= alpha:
        return (f"a sign-flip test over {n:.0f} {word} cannot give a p-value below 2^(1 - {n:.0f}) = "
                f"{f:.3g}, above the level {alpha:g}")
    got = f" is {p_text(p_flip)}" if np.isfinite(p_flip) else f" is at least 2^(1 - {n:.0f}) = {p_text(f)}"
    return (f"its sign-flip p-value over the {n:.0f} {word}{got}, below the level {alpha:g} (not adjusted for the "
            "family; `p_permutation` of `hierbench.freq.compare_agents`' result)")


def _untested_text(ds: xr.Dataset, mask: np.ndarray, a: dict, alpha: float, m: int) -> str:
    """Why the pairs of ``mask`` (a difference, no p-value) are not tested, with the smallest sign-flip p.

    The same difference on every shared unit has no spread: no standard error, so no t statistic
    (the paired t-test and the multivariate-t max-T leave it out). A sign-flip test has a p-value
    for it, but over ``K`` units none below ``2^(1 - K)`` (0.0625 over 5 tasks).
    """
    k = int(mask.sum())
    if not k:
        return ""
    iu = np.triu_indices(ds.sizes["agent"], 1)
    agents = [str(x) for x in ds["agent"].values]
    d = (ds["estimate"] if "estimate" in ds else ds["mean_diff"]).transpose("agent", "opponent").values[iu]
    units = ds["n_units"].transpose("agent", "opponent").values[iu] if "n_units" in ds else np.full(d.shape, np.nan)
    word = "clusters" if a.get("unit") == "clusters" else "tasks"
    said = []
    for i in np.flatnonzero(mask)[:3]:
        pair, n = f"{agents[iu[0][i]]} - {agents[iu[1][i]]}", units[i]
        where = (f"on every one of its {n:.0f} shared tasks" if word == "tasks"
                 else f"in every one of its {n:.0f} clusters (their mean differences)")  # fmt: skip
        said.append(f"{pair} differs by {d[i]:+.3f} {where}" if np.isfinite(n) else f"{pair} ({d[i]:+.3f})")
    more = f"; and {k - 3} more" if k > 3 else ""
    one = k == 1
    head = "" if m == 1 else f"{k} of the {m} pairs cannot be tested: "
    first = np.flatnonzero(mask & np.isfinite(units))
    floor = ""
    if first.size:
        i = first[np.argmin(units[first])]
        pp = ds["p_permutation"].transpose("agent", "opponent").values[iu][i] if "p_permutation" in ds else np.nan
        floor = "; " + sign_flip_floor(units[i], word, pp, alpha)
    test = "paired t-test" if a.get("test") == "t" else f"{a.get('test')} test"
    return (
        head + "; ".join(said) + more + f", so {'it has' if one else 'they have'} no standard error and the {test} "
        f"is undefined there (no p-value, no verdict){floor}."
    )


def _near(p, se, level: float) -> np.ndarray:
    """Whether each adjusted p-value lies within two Monte Carlo errors of ``level``: the one nearness rule.

    Such a verdict at ``level`` (a ``differ``, a mark, a count) can turn with the seed or more draws.
    An exact p-value (error 0) and an undefined one (NaN) are never near.
    """
    p, se = np.asarray(p, dtype=float), np.asarray(se, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.isfinite(p) & (se > 0) & (np.abs(p - level) <= 2 * se)


def _near_level(ds: xr.Dataset, alpha: float, adjust: str, floored: bool = False) -> str:
    """A sentence on the verdicts Monte Carlo error could turn: adjusted p within two MC errors of ``alpha``.

    ``floored``: the result's p-values have a resolution floor that keeps some pair from the level
    (``resolution_words``); more draws move a pair there only once they lower that floor.
    """
    if "p_adjusted_mcse" not in ds:
        return ""
    iu = np.triu_indices(ds.sizes["agent"], 1)
    p = ds["p_adjusted"].transpose("agent", "opponent").values[iu]
    se = ds["p_adjusted_mcse"].transpose("agent", "opponent").values[iu]
    near = _near(p, se, alpha)
    if not near.any():
        return ""
    k, on = int(near.sum()), int((near & (p < alpha)).sum())
    knob, more = _mc_knob(ds.attrs, adjust)
    them = "them" if k > 1 else "it"
    could = (f"so more {more} could move {them} across" if not floored else
             f"so more {more} could move {them} across, but only once there are at least as many as the resolution above asks for")
    return (
        f" The adjusted p-values are Monte Carlo estimates: {k} pair{'s' if k > 1 else ''} ({on} counted as "
        f"differing) lie{'' if k > 1 else 's'} within two Monte Carlo errors of {alpha:g}, {could} "
        f"(a setting of the Python call: compare_agents(..., {knob}=...))."
    )


def resolution_words(cmp: PairwiseComparisonResult, alpha: float) -> str:
    """What the p-values' floors leave the result's own adjustment unable to call at ``alpha`` (``""``: nothing).

    The result's own words, by its one rule (``floor_note``): at its level the note it recorded (the
    ``PValueResolutionWarning`` ``compare_agents`` raised), at another level the words its
    ``significant(alpha)`` warns. A bare Dataset carries its own level's notes alone (with
    ``pair_sentence``'s defaults, 95% and Holm, where its attrs lack them). SWE-bench, tasks as units,
    the bootstrap test with Holm at the default 9,999 resamples: no p-value below 0.0002 against
    Holm's first threshold 0.05 / 300, so "0 of 300 pairs differ" was resolution, not evidence (audit R1).
    """
    from ..freq import floor_note

    if not hasattr(cmp, "significant"):  # a bare Dataset: only its recorded notes
        return floor_note({"ci_prob": 0.95, "adjust": "holm", **_attrs(cmp)}, alpha)
    return floor_note(cmp, alpha)


def _mc_knob(a: dict, adjust: str) -> tuple[str, str]:
    """The setting that draws the Monte Carlo adjusted p-values, and what it draws, by the adjustment and the test.

    Max-T: its null law's draws; else the per-pair test's: sign patterns of the sign-flip test,
    resamples of the bootstrap test (was: "sign patterns" under a bootstrap test with BH).
    """
    if adjust.startswith("maxt"):
        return "n_draws", "max-T null draws"
    if a.get("test") == "bootstrap":
        return "n_resamples", "bootstrap resamples"
    return "n_permutations", "sign patterns"


def _test_of(cmp) -> str:
    return str(_attrs(cmp).get("test", "permutation"))


def pair_frame(
    cmp: PairwiseComparisonResult, *, alpha: float = 0.05, order: list[str] | None = None
) -> pd.DataFrame:
    """One row per pair (row agent minus column agent), what decides first.

    Parameters
    ----------
    cmp : PairwiseComparisonResult
        From :func:`hierbench.freq.compare_agents`.
    alpha : float
        Level of the ``differ`` column (the result's adjusted p < alpha).
    order : list of str, optional
        Every agent of ``cmp`` once: the rows run through the pairs in this order and
        each is the earlier agent minus the later one (the report and ``hierbench
        compare`` pass ``score_order``, the order of their matrix); by default the
        result's own agent order (its ``to_frame()``'s).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``"a - b"``: ``mean difference``, the simultaneous interval
        (``simultaneous lower`` / ``upper``, when the result has one), the
        result's adjusted p-value (``p max-T``, ``p Holm``, ...) and its Monte
        Carlo error, ``differ (...)`` (pandas' nullable boolean: NA, shown as
        "undefined", where the adjusted p-value is; the note under the table says why);
        then the per-pair interval (``per-pair lower`` / ``upper``), ``shared
        tasks``, the test's own p-value and its Monte Carlo error, whether
        these two disagree at ``alpha`` (``per-pair CI and p disagree``: the
        interval excludes 0 but p >= alpha, or the other way; NA where either
        is undefined), ``p Holm`` and
        ``p BH``.
    """
    cmp = in_agent_order(cmp, order)
    df = _tidy(cmp)
    a = _attrs(cmp)
    test = _test_of(cmp)
    # one pair under Holm or BH: its own p-value decides (nothing to adjust for), under its own name
    own = int(a.get("n_pairs", 0)) == 1 and a.get("adjust", "holm") in ("holm", "bh")
    out = pd.DataFrame(index=df.index.astype(str))
    out["mean difference"] = df["estimate"].astype(float)
    if "simultaneous_lower" in df and df["simultaneous_lower"].notna().any():
        out["simultaneous lower"] = df["simultaneous_lower"].astype(float)
        out["simultaneous upper"] = df["simultaneous_upper"].astype(float)
    p_col = f"p ({test})" if own else f"p {_SHORT[a.get('adjust', 'holm')]}"
    out[p_col] = df["p_adjusted"].astype(float)
    out[f"MC error of {p_col}"] = df["p_adjusted_mcse"].astype(float)
    # no adjusted p-value (max-T leaves out a pair with no standard error): no verdict, not "no"
    # (a pair with no difference on any task has none either: that is "no")
    none = out[p_col].isna() & (out["mean difference"] != 0)
    out[f"differ ({p_col} < {alpha:g})"] = judged(out[p_col] < alpha, ~none)
    out["per-pair lower"] = df["lower"].astype(float)
    out["per-pair upper"] = df["upper"].astype(float)
    if "n_tasks" in df:
        out["shared tasks"] = df["n_tasks"].round().astype("Int64")
    out[f"p ({test})"] = df["p_value"].astype(float)
    out[f"MC error of p ({test})"] = df["p_value_mcse"].astype(float)
    lo, hi, pv = out["per-pair lower"], out["per-pair upper"], out[f"p ({test})"]
    out[disagree_label(alpha)] = judged(ci_p_disagree(lo, hi, pv, alpha), lo.notna() & hi.notna() & pv.notna())
    for key, label in (("p_holm", "p Holm"), ("p_bh", "p BH")):
        if label != p_col and not own:  # over one pair both are its own p-value
            out[label] = df[key].astype(float)
    out.index.name = "pair"
    out.attrs["untested"] = _untested_units(df, none, a)
    out.attrs["resolution"] = resolution_words(cmp, alpha)  # what the p-values' floors keep from the level
    if "p Holm" in out and "p_holm_mcse" in df:  # not a column: what ``marks_holm_note`` reads its count's nearness by
        out.attrs["MC error of p Holm"] = df["p_holm_mcse"].astype(float).set_axis(out.index)
    if "p_value_floor" in df and f"p_{test}_exact" in df:  # not columns: why a per-pair p cannot be small (``_rev_reasons``)
        out.attrs["p floor"] = df["p_value_floor"].astype(float).set_axis(out.index)
        out.attrs["p exact"] = df[f"p_{test}_exact"].astype(float).set_axis(out.index)
        knob, what = _mc_knob(a, test)
        out.attrs["per-pair draws"] = (knob, what, int(a.get(knob) or 0), str(a.get("unit", "units")))
    return out


def in_agent_order(cmp: PairwiseComparisonResult, order: list[str] | None) -> PairwiseComparisonResult:
    """``cmp`` with its agents and opponents in ``order`` (None: ``cmp`` itself).

    Its upper triangle, the pair rows, is then each earlier agent minus a later one. Only the rows and columns of its matrices move (both orders of every pair are in them): every
    value stays what the comparison computed. ``order`` must name each agent once (``_check_order``).
    """
    if order is None:
        return cmp
    import dataclasses

    ds = _dataset(cmp)
    at = {a: i for i, a in enumerate(str(x) for x in ds["agent"].values)}
    pos = [at[a] for a in _check_order(order, ds)]
    table = cmp.table.isel(agent=pos, opponent=pos)
    return dataclasses.replace(cmp, table=table)


def _untested_units(df: pd.DataFrame, none: pd.Series, a: dict) -> dict:
    """Per pair with a difference but no adjusted p-value: its units (tasks or clusters) and their word.

    What :func:`no_p_note` needs for the smallest sign-flip p-value over them, ``2^(1 - units)``.
    """
    units = df["n_units"] if "n_units" in df else df.get("n_tasks")
    word = "clusters" if a.get("unit") == "clusters" else "tasks"
    if units is None:
        return {}
    flip = df["p_permutation"] if "p_permutation" in df else pd.Series(np.nan, index=df.index)
    return {str(k): (float(units[k]), word, float(flip[k])) for k in none[none].index if np.isfinite(float(units[k]))}


def _tidy(cmp) -> pd.DataFrame:
    """``cmp.to_frame()``'s columns, read from the matrices in one step instead of one pair at a time.

    The same upper triangle in the same order, the same float values (indexing only): at 316
    agents ``to_frame`` takes about 25 s over its 49,770 pairs, this well under one. A result
    without the matrices (``table``) is read through its own ``to_frame()``.
    """
    tab = getattr(cmp, "table", None)
    if not isinstance(tab, xr.Dataset) or not {"mean_diff", "ci", "ci_simultaneous"} <= set(tab.data_vars):
        return cmp.to_frame()
    agents = np.asarray([str(a) for a in tab["agent"].values], dtype=object)
    i, j = np.triu_indices(len(agents), 1)
    cols = {"estimate": np.asarray(tab["mean_diff"].values, float)[i, j]}
    ci, sim = (np.asarray(tab[v].values, float)[i, j] for v in ("ci", "ci_simultaneous"))
    cols |= {"lower": ci[:, 0], "upper": ci[:, 1], "simultaneous_lower": sim[:, 0], "simultaneous_upper": sim[:, 1]}
    for v in tab.data_vars:
        if tab[v].dims == ("agent", "opponent") and v not in cols:
            cols[v] = np.asarray(tab[v].values, float)[i, j]
    index = pd.Index([f"{a} - {b}" for a, b in zip(agents[i], agents[j], strict=True)], name="pair")
    return pd.DataFrame(cols, index=index)


def marks_holm_note(table: pd.DataFrame, alpha: float) -> str:
    """Where the marks (``*``, ``**``, ``***``) of a max-T table understate what Holm separates.

    Max-T compares each pair's |t| with the largest |t| of any pair under the same sign flips.
    Where one pair's differences sit in few tasks or clusters, that pair's |t| is large whenever
    those few flip together, which happens with a fixed small probability: p max-T cannot fall
    below it, whatever a pair's evidence (METR: davinci-002 - human, 7 clusters with a
    difference, |t| 7.36 on 2 of 2^7 patterns, puts a floor of about 0.0155 under every pair
    with |t| below that). Holm's adjustment of the per-pair p-values has no such floor. Said
    (with both counts at the stricter levels) only where it shows: a pair with Holm p ten
    times below a level has p max-T at or above it (SWE-bench's near misses, 208 against 212
    pairs at 0.01, are not).
    """
    col = next((c for c in table.columns if c.startswith("p max-T")), None)
    if col is None or "p Holm" not in table:
        return ""
    counts, levels = [], []
    for div, mark in _MARK_STEPS[::-1]:  # alpha (*), alpha / 5 (**), alpha / 50 (***)
        level = alpha / div
        n_max, n_holm = int((table[col] < level).sum()), int((table["p Holm"] < level).sum())
        # a floor, not a near miss: a pair Holm puts ten times below the level, max-T above it
        if ((table["p Holm"] < level / 10) & (table[col] >= level)).any():
            # the marks as code: bare, the report's Markdown read "(**) ... (***)" as bold text
            counts.append(f"at {level:.3g} (`{mark}`) max-T separates {n_max} pairs and Holm {n_holm}"
                          + _counts_near(table, col, level))
            levels.append(level)
    if not counts:
        return ""
    only = (table["p Holm"] < levels[0]) & (table[col] >= levels[0])
    # the other way, max-T alone, at the first level of the three where it happens
    lev_rev = next((alpha / d for d, _ in _MARK_STEPS[::-1]
                    if ((table[col] < alpha / d) & (table["p Holm"] >= alpha / d)).any()), None)  # fmt: skip
    head = "The marks understate here: " if lev_rev is None else "Max-T and Holm part here: "
    per_pair = next((f" (`{c}`)" for c in table.columns if str(c).startswith("p (")), "")
    text = (
        head + "; ".join(counts) + f" (`p Holm`: the per-pair p-values{per_pair} adjusted by Holm, which "
        "also controls the family-wise error). Max-T compares each pair's |t| "
        "with the largest |t| of any pair under the same sign flips, and a pair whose differences sit "
        "in few tasks or clusters reaches a large |t| whenever those few flip together: that puts a "
        f"floor under p max-T ({_the_pairs(int(only.sum()))} Holm separates at {levels[0]:.3g} and max-T does "
        f"not {'has' if only.sum() == 1 else 'have'} p max-T of {table.loc[only, col].min():.2g} or more)."
    )
    if lev_rev is not None:
        rev = (table[col] < lev_rev) & (table["p Holm"] >= lev_rev)
        text += (
            f" {_the_pairs(int(rev.sum())).capitalize()} max-T separates at {lev_rev:.3g} and Holm does not "
            f"(p Holm of {table.loc[rev, 'p Holm'].min():.2g} or more) {'is' if rev.sum() == 1 else 'are'} "
            "the other side of it: " + _rev_reasons(table, rev)
        )
    return text + " Read `p Holm` beside the marks."


def _rev_reasons(table: pd.DataFrame, rev: pd.Series) -> str:
    """Why each pair max-T separates and Holm does not has a per-pair p too large for Holm, pair by pair.

    Holm multiplies a per-pair p by up to the number of pairs. An exact sign-flip p over K units with
    a difference is at least 2 / 2^K: too few units, which no setting helps. A Monte Carlo p is at
    least 1 / (B + 1) of its B random patterns: at that floor, or within draws of it, more patterns
    would lower it. Audit A s17: METR's six such pairs were all put down to few clusters, while four
    sat at the floor 1 / 18,000 of the 17,999 patterns, one had 2 / 18,000 and one alone (K = 15)
    was exact. Read from ``pair_frame``'s ``attrs`` (``p floor``, ``p exact``, ``per-pair draws``);
    without them, the general reason.
    """
    per = next((c for c in table.columns if str(c).startswith("p (")), None)
    floor, exact, draws = (table.attrs.get(k) for k in ("p floor", "p exact", "per-pair draws"))
    if per is None or floor is None or exact is None or draws is None:
        return ("a pair with few tasks or clusters has a per-pair p that cannot be small (a sign-flip p over "
                "K units is at least 2 / 2^K), and Holm multiplies it by up to the number of pairs.")  # fmt: skip
    knob, what, n, unit = draws
    few, at, near = [], [], []
    for name in table.index[rev.to_numpy()]:
        p, fl = float(table.at[name, per]), float(floor.get(name, np.nan))
        if exact.get(name) == 1:
            few.append(f"{name} (K = {round(1 - np.log2(fl))}, 2 / 2^K = {fl:.2g})")
        elif np.isclose(p, fl, rtol=1e-9, atol=0.0):
            at.append(str(name))
        else:
            near.append(f"{name} (p {p:.2g})")
    said = []
    if at:
        said.append(f"{'; '.join(at)}: the per-pair p is at the Monte Carlo floor {float(floor[at[0]]):.2g} "
                    f"of its {n:,} random {what}, so the true p may be lower: more {what} (`{knob}`) "
                    "could lower `p Holm`")  # fmt: skip
    if near:
        said.append(f"{'; '.join(near)}: a Monte Carlo per-pair p from {n:,} random {what}, near their floor: "
                    f"more {what} (`{knob}`) would settle it")  # fmt: skip
    if few:
        said.append(f"{'; '.join(few)}: too few {unit} with a difference (K of them): its per-pair p is exact "
                    f"(every pattern enumerated) and at least 2 / 2^K, which no more {what} lower, only more {unit} "
                    "with a difference")  # fmt: skip
    return ("; ".join(said) + ". Holm multiplies each per-pair p by up to the number of pairs"
            + ("; and the per-pair test ranks the sign flips by the mean difference, max-T by the studentized "
               "t, so the two can part beyond that." if (at or near) and knob == "n_permutations" else "."))  # fmt: skip


def _counts_near(table: pd.DataFrame, col: str, level: float) -> str:
    """The clause that makes ``marks_holm_note``'s two counts at ``level`` Monte Carlo-uncertain, if they are.

    Max-T's count by the table's ``MC error of p max-T``, Holm's by the error ``pair_frame`` keeps in
    ``attrs["MC error of p Holm"]``; each pair within two errors of ``level`` (``_near``) can cross it
    with the seed (METR at 0.001: max-T's 13 was 10 to 13 over seeds 0-5, audit R4). ``""``: neither is.
    """
    near = []
    for p, se in ((table[col], table.get(f"MC error of {col}")), (table["p Holm"], table.attrs.get("MC error of p Holm"))):
        # Holm's error is kept by pair: read for the rows this table holds (a subset keeps the whole attrs)
        se = se.reindex(table.index) if isinstance(se, pd.Series) else se
        near.append(0 if se is None else int(_near(p, se, level).sum()))
    if not any(near):
        return ""
    whose = [f"{n} pair's" if n == 1 else f"{n} pairs'" for n in near]
    return (f" (Monte Carlo-uncertain: {whose[0]} `{col}` and {whose[1]} `p Holm` "
            f"lie within two Monte Carlo errors of {level:.3g}, so either count can move with the seed or more draws)")


def _the_pairs(n: int) -> str:
    """"the one pair" or "the n pairs"."""
    return "the one pair" if n == 1 else f"the {n} pairs"


def no_p_note(table: pd.DataFrame) -> str:
    """The pairs with a difference but no adjusted p-value, named with what does decide them, if anything.

    ``table`` is :func:`pair_frame`'s. A pair whose every shared task differs by the same amount
    (an agent at 100% against one at 0%: +1 on every task) has no standard error. Its ``differ``
    is then undefined, not "no". Where a p-value of its own (or ``p Holm``) exists (max-T's
    multivariate t leaves it out, the per-pair test does not), the note points to it; where none
    does (the paired t-test is undefined too), it says so, and gives the smallest p-value a
    sign-flip test over the pair's units could give, ``2^(1 - units)`` (0.0625 over 5 tasks),
    rather than point to p-values that are NaN.
    """
    col = differ_column(table)
    if col is None:
        return ""
    p_col, level = differ_parts(col)
    gone = table[col].isna() & table["mean difference"].notna()  # NaN: fewer than 2 shared tasks
    if not gone.any():
        return ""
    test = next((c for c in table.columns if c.startswith("p (")), None)
    said, bare = [], []
    for name, row in table[gone].iterrows():
        same = "per-pair lower" in table and row["per-pair lower"] == row["per-pair upper"] == row["mean difference"]
        ps = [f"`{c}` {p_text(row[c])}" for c in (test, "p Holm") if c in table and c != p_col and np.isfinite(row[c])]
        said.append(f"{name} (mean difference {row['mean difference']:+.3f}"
                    + (", the same on every shared task" if same else "") + (f"; {', '.join(ps)}" if ps else "") + ")")
        if not ps:
            bare.append(str(name))
    k = int(gone.sum())
    text = (f"No `{p_col}` for {k} pair{'s' if k > 1 else ''}, so `{col}` is undefined there, not no: "
            + "; ".join(said) + ". A pair whose every shared task differs by the same amount has no "
            "standard error, so no studentized difference")
    if len(bare) < k:  # some have a p-value of their own: max-T left them out of its family
        text += (", and max-T leaves it out of the family; read its own p-value and `p Holm` (the per-pair "
                 f"tests adjusted for all pairs, also family-wise) at {level}")
    if bare:
        text += _no_p_at_all(table, bare, level, len(bare) < k)
    return text + ". Where the pairs are shown as a matrix, such a cell is marked `?`."


def _no_p_at_all(table: pd.DataFrame, bare: list[str], level: str, some_have: bool) -> str:
    """The clause of :func:`no_p_note` for pairs with no p-value at all, with the sign-flip floor."""
    units = table.attrs.get("untested", {})  # pair -> (units, their word, sign-flip p)
    floors = [(n, *units[b]) for n, b in enumerate(bare) if b in units]
    who = (f"{', '.join(bare)} {'has' if len(bare) == 1 else 'have'}" if some_have
           else ("it has" if len(bare) == 1 else "they have"))
    text = (f"{'; ' if some_have else ''}{'' if some_have else ', and '}{who} no p-value at all (the paired "
            "t-test is undefined without a spread), so no verdict at any level")
    if floors:
        _, n, word, pp = min(floors, key=lambda f: f[1])
        text += "; " + sign_flip_floor(n, word, pp, float(level))
    return text


def _disagree_alpha(col: str) -> str:
    """The level a ``disagree_label`` column states, as it is written there ("0.05")."""
    return col.rsplit("(at ", 1)[1].rstrip(")")


def disagree_column(table: pd.DataFrame) -> str | None:
    """The name of :func:`pair_frame`'s ``per-pair CI and p disagree (...)`` column (None if absent)."""
    return next((c for c in table.columns if str(c).startswith("per-pair CI and p disagree")), None)


def _disagree_words(table: pd.DataFrame, col: str) -> list[str]:
    """The disagreement column as text: which way the two disagree, blank where they agree, "undefined" where not judged."""
    alpha = float(_disagree_alpha(col))
    out = []
    for flag, lo, hi in zip(table[col], table["per-pair lower"], table["per-pair upper"], strict=True):
        if flag is pd.NA or flag is None:  # the interval or the p-value is undefined: no verdict
            out.append("undefined")
        else:
            out.append(disagree_way(lo, hi, alpha) if flag else "")
    return out


def disagree_note(cmp: PairwiseComparisonResult, table: pd.DataFrame) -> str:
    """What the per-pair interval and the per-pair p-value each are, and how many pairs they split.

    ``table`` is :func:`pair_frame`'s for ``cmp`` (its ``alpha`` is the level
    the sentence states). The two come from different procedures (a bootstrap
    or a t interval beside an exact sign-flip test, say), so near the level
    they can reach different verdicts; such pairs are marked in the table.
    """
    col = disagree_column(table)
    # pairs without a verdict (fewer than 2 shared tasks) neither agree nor disagree
    judged = 0 if col is None else int(table[col].notna().sum())
    if not judged:
        return ""
    alpha = _disagree_alpha(col)
    ds = _dataset(cmp)
    ci = ds["ci"].attrs if "ci" in ds else {}
    # the method's name only (the settings sentence gives its detail)
    kind = str(ci.get("ci_detail") or "").split(";")[0].split(":")[0].split(",")[0].strip()
    if ci.get("ci_kind") and ci["ci_kind"] not in kind:
        kind = f"{ci['ci_kind']} {kind}".strip()
    kind = kind if not kind or "interval" in kind else f"{kind} interval"
    test = _attrs(cmp).get("test", "")
    words = _TEST_WORDS.get(test, f"{test} tests")
    n = int(table[col].fillna(False).astype(bool).sum())
    same = test == "t" and ci.get("ci_kind") == "t"
    return (
        f"The per-pair interval ({kind or 'as the result gives it'}) and the per-pair p-value "
        f"(`p ({test})`: {words}) are "
        + ("the same t statistic, so they agree. " if same else
           "different procedures: near the level they can disagree (an interval that excludes 0 "
           f"beside p \u2265 {alpha}, or p < {alpha} beside an interval that covers 0). ")
        + (f"{n} of {judged} pairs {'judged ' if judged < len(table) else ''}disagree at {alpha}" if len(table) != 1
           else f"For the one pair they {'disagree' if n else 'agree'} at {alpha}")
        + (f", marked in the pair table's column `{col}`" if n else "")
        + (f" (the table shown holds only some pairs; the complete one holds all {len(table):,})."
           if n and len(table) > PAIR_ROWS else ".")
    )


def p_text(v: float) -> str:
    """A p-value or Monte Carlo error as text: 3 decimals, 2 significant digits below 0.001, e-notation below 1e-4.

    A positive value never reads ``0.000`` (an exact max-T p over 2,048 sign
    patterns can be 0.00049); below 1e-4 it is written ``4.2e-29``, not as
    thirty zeros (an exact sign-flip p over 500 tasks). Only the text: the
    frames and the JSON keep the values.

    A value that would read as a conventional level (0.050, 0.010) without being it gets as
    many decimals as tell it from the level, so the text never shows ``0.050`` (or ``0.0500``)
    beside a verdict of ``p < 0.05``.

    Examples
    --------
    >>> [p_text(v) for v in (0.1174, 0.00048828, 4.7e-05, 4.2e-29, 0.0, 1.0)]
    ['0.117', '0.00049', '4.7e-5', '4.2e-29', '0', '1.000']
    >>> [p_text(v) for v in (0.0496, 0.0504, 0.05, 0.0101, 0.049976)]
    ['0.0496', '0.0504', '0.050', '0.0101', '0.04998']
    """
    v = float(v)
    if not np.isfinite(v):
        return "NaN"
    if v == 0:
        return "0"
    if abs(v) < 1e-4:
        mant, exp = f"{v:.1e}".split("e")
        return f"{mant}e{int(exp)}"
    if abs(v) < 1e-3:
        return f"{v:.2g}"
    text = f"{v:.3f}"
    if text in ("0.050", "0.010") and v not in (0.05, 0.01):
        level = float(text)
        # as many decimals as tell it from the level (0.0496; 0.04998 where 0.0500 would not)
        return next((t for d in range(4, 10) if float(t := f"{v:.{d}f}") != level), repr(v))
    return text


def _p_columns(table: pd.DataFrame) -> list:
    return [c for c in table.columns if str(c).startswith(("p ", "MC error"))]


def pair_display(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`pair_frame`'s table with its p-values and their errors as short text.

    The disagreement column reads which way the per-pair interval and p-value
    disagree (blank where they agree).
    """
    out = table.copy()
    for c in _p_columns(table):
        out[c] = [p_text(v) for v in table[c]]
    if (col := disagree_column(table)) is not None:
        out[col] = _disagree_words(table, col)
    return out


def pair_text(table: pd.DataFrame) -> str:
    """:func:`pair_frame`'s table as plain text, p-values and their errors as short text."""
    fmt = dict.fromkeys(_p_columns(table), p_text)
    table = table.copy()
    if (col := differ_column(table)) is not None:  # as text: pandas prints a missing verdict "<NA>"
        table[col] = [_verdict_text(v) for v in table[col]]
    if (col := disagree_column(table)) is not None:
        table[col] = _disagree_words(table, col)
    # an interval end that rounds to 0.000 without being 0 keeps its sign and two digits: beside
    # "differ True" a lower end of 0.000 read as touching 0 (SWE-bench's GPT-5 - o3: 0.00024)
    fmt |= {c: _end_text for c in table.columns if str(c).endswith((" lower", " upper"))}
    # round(v, 3) + 0.0: a difference that rounds to zero reads 0.000, not -0.000 (the demo's 00 - 05)
    return table.to_string(formatters=fmt, float_format=lambda v: f"{round(v, 3) + 0.0:.3f}")


def _end_text(v: float) -> str:
    """An interval end as text: 3 decimals, or 2 significant digits where those would read 0.000."""
    v = float(v)
    if not np.isfinite(v):
        return "NaN"
    return f"{v:.2g}" if v != 0 and abs(v) < 5e-4 else f"{round(v, 3) + 0.0:.3f}"


def _verdict_text(v) -> str:
    """A ``differ`` cell as text: True, False, or undefined (no adjusted p-value)."""
    return "undefined" if v is pd.NA or v is None else str(bool(v))


def bayes_pair_note(
    fit: xr.DataTree, n_pairs: int, what: str = "expected score on a new task", p_column: str | None = None
) -> str:
    """What a fit's pairwise posterior probabilities are, and what they are not, in two or three sentences.

    Each is the posterior probability that one agent's ``what`` exceeds the
    other's, pair by pair: not adjusted for the ``n_pairs`` pairs, so it is
    read beside each pair's own p-value (named ``p_column`` where one is given,
    e.g. ``"p (t)"``), not beside a simultaneous verdict. A
    crossed fit with task clusters but without its agent x cluster effect adds
    that its agent x task effects vary task by task with no agent x cluster
    term (an IRT fit with clusters, that they move the difficulties alone): where agents' advantages
    differ by cluster (G-theory's ``agent:cluster`` component), the
    probabilities are surer than the data allow. A fit of per-task data with
    no task effect shared by the agents (the beta-binomial: no posterior
    variable over tasks alone) adds that the agents are not paired on tasks
    and task clusters are ignored, so its probabilities and the paired tests
    can part widely.

    Examples
    --------
    >>> import xarray as xr
    >>> fit = xr.DataTree()
    >>> fit.attrs["hierbench_spec"] = '{"model": "crossed", "options": {"clusters": true}}'
    >>> print(bayes_pair_note(fit, 3))  # doctest: +NORMALIZE_WHITESPACE
    Bayes P(a > b) is the posterior probability that a's expected score on a new task exceeds b's,
    pair by pair: not adjusted for the 3 pairs, so read it beside each pair's own p-value, not
    beside the simultaneous verdict. The crossed model lets an agent's advantage vary task by task
    but has no agent x cluster term: where advantages differ by task cluster, these probabilities
    are surer than the data allow (the paired tests take clusters as their unit).
    """
    if battles_fit(fit):
        return (
            f"Bayes P(a > b) is the posterior probability that a's {what} exceeds b's, pair by pair "
            f"(not adjusted for the {counted(n_pairs, 'pair')}). "
            + BATTLES_INDEPENDENT.format(what="these probabilities", extra="")
        )
    if fit.attrs.get("hierbench_model") == "mixed":
        return own_tasks_pair_note(what, n_pairs, p_column)
    column = f" (`{p_column}`)" if p_column else ""
    text = (
        f"Bayes P(a > b) is the posterior probability that a's {what} exceeds b's, pair by pair: not "
        f"adjusted for the {n_pairs} pairs, so read it beside each pair's own p-value{column}, not beside the "
        "simultaneous verdict."
        if n_pairs != 1
        else f"Bayes P(a > b) is the posterior probability that a's {what} exceeds b's; read it beside "
        f"the pair's p-value{column}."
    )
    spec = fit_record(fit, "hierbench_spec")
    # the fit's own record of its agent x task term (audit A s17: "task by task" was said of agent_task='none')
    no_at = (spec.get("options") or {}).get("agent_task") == "none"
    if lacks_agent_cluster(fit):
        text += (
            " The IRT model puts task clusters in the difficulties alone but has no agent x cluster term"
            if clustered_irt(fit)
            else " The crossed model has neither an agent x task nor an agent x cluster term (the fit's record): "
            "an agent's advantage is the same on every task (on the logit scale)"
            if no_at
            else " The crossed model lets an agent's advantage vary task by task but has no agent x cluster term"
        ) + (
            ": where advantages differ by task cluster, these probabilities "
            "are surer than the data allow (the paired tests take clusters as their unit)."
        )
    elif clustered_crossed(fit):
        text += (
            " The crossed model lets an agent's advantage vary by task cluster (its agent x cluster effect); "
            + ("with no agent x task term (`agent_task='none'` in the fit's record), the tasks within a "
               "cluster differ only in difficulty, so a cluster's tasks" if no_at
               else "and task by task within a cluster, so a cluster's tasks")
            + " are not independent evidence about a pair (the paired tests take clusters as their unit)."
        )
    elif unpaired_fit(fit):
        name = str(spec.get("model") or fit.attrs.get("hierbench_model") or "this").replace("_", "-")
        text += (
            f" The {name} model has no task effect shared by the agents: each agent's level comes from its "
            "own tasks, so agents are not paired on tasks (the paired tests compare them on the tasks both "
            "ran), and task clusters are ignored. Its P(a > b) can therefore part widely from the pair's "
            "p-value, most where two agents ran different tasks, and where tasks cluster it is surer than "
            "the data allow."
        )
    return text


def own_tasks_pair_note(what: str, n_pairs: int, p_column: str | None = None) -> str:
    """A formula fit's P(a > b): these tasks held fixed, each agent's own; not the paired p-value's counterpart.

    ``p_column``: the column of that p-value, named where given (``bayes_pair_note``'s). METR (audit N): o1-preview skipped 8 AI R&D tasks; P(Claude 3.5 Sonnet (Old) > o1-preview) was 0.000
    beside a paired p of 0.361 on the 75 tasks both ran, and the section told the reader to read the two
    side by side.
    """
    column = f" (`{p_column}`)" if p_column else ""
    return (
        f"Bayes P(a > b) is the posterior probability that a's {what} exceeds b's, pair by pair (not "
        f"adjusted for the {counted(n_pairs, 'pair')}). It holds these tasks fixed (no uncertainty from "
        "which tasks were drawn) and compares each agent over its own tasks, so where two agents ran "
        "different tasks it compares different task sets. It is therefore not the counterpart of the "
        f"pair's paired p-value{column}, which compares the two on the tasks both ran and allows for a new "
        "draw of tasks: a P(a > b) near 0 or 1 beside a large p-value is no contradiction."
    )


#: what a Bradley-Terry fit's probabilities and ranks assume of the battles, and the counterpart without it
BATTLES_INDEPENDENT = (
    "The Bradley-Terry model counts every battle as an independent judgment; battles that share a prompt "
    "are not, so {what} can be surer than the battles allow (the posterior predictive checks test this; "
    "hierbench.freq.fit_bradley_terry_ml resamples the prompts{extra}, and stands beside the abilities "
    "where the battle log is given)."
)


def clustered_irt(fit: xr.DataTree) -> bool:
    """Whether the fit is an IRT model with task clusters (in its difficulties only)."""
    return _clustered_model(fit).startswith("irt")


def lacks_agent_cluster(fit: xr.DataTree) -> bool:
    """Whether the fit has task clusters but no agent x cluster effect.

    A crossed model with ``agent_cluster=False`` or saved before the option existed (its options do
    not name it), or an IRT model with clusters (they move the difficulties, alike for every agent).
    """
    options = fit_record(fit, "hierbench_spec").get("options", {})
    return clustered_irt(fit) or (clustered_crossed(fit) and not options.get("agent_cluster", False))


def agent_cluster_note(fit: xr.DataTree, g, data: xr.Dataset) -> str:
    """How much a fit's missing agent x cluster term (:func:`lacks_agent_cluster`) matters on this log, from G-theory.

    ``g``: :func:`hierbench.freq.variance_components` of ``data`` (None: not computed). With
    agent x cluster variance ``v`` and each cluster's share ``w_c`` of the tasks, the clusters'
    agent-specific effects add ``2 v sum_c w_c^2`` to the variance of a pair's mean difference
    over these tasks (both agents on every task), which a model without the term reads as a
    difference of abilities. SWE-bench by repository: ``v`` 0.0008, SD 0.020; METR by task
    family: ``v`` 0.016. Empty for a fit without clusters, a fit that has the term
    (``agent_cluster``), or a design without the component.
    """
    if g is None or not lacks_agent_cluster(fit):
        return ""
    names = [str(c) for c in g.components["component"].values]
    if "agent:cluster" not in names or "cluster" not in data.coords:
        return ""
    v = float(g.components.sel(component="agent:cluster"))
    interval = g_interval(g, float(g.prob), ["agent:cluster"])
    ci = interval.sel(component="agent:cluster").values
    sizes = pd.Series(np.asarray(data["cluster"].values).astype(str)).value_counts()
    w2 = float(((sizes / sizes.sum()) ** 2).sum())
    own = f"; the agents' own: {float(g.components.sel(component='agent')):.4f}" if "agent" in names else ""
    return (
        f" On this log G-theory puts that agent x cluster variance at {v:.4f} (probability^2, "
        f"{float(interval.attrs['ci_prob']):.0%} {interval.attrs['ci_kind']} interval [{ci[0]:.4f}, {ci[1]:.4f}]{own}): over "
        f"these tasks' {len(sizes)} clusters it adds an SD of about {np.sqrt(2 * v * w2):.3f} to a pair's mean "
        "difference, which these probabilities leave out."
    )


def unpaired_fit(fit: xr.DataTree | None) -> bool:
    """Whether a fit of per-task data has no task effect shared by the agents.

    Per-task data: some group of the fit has a ``task`` dim. Shared effect: a
    posterior variable over ``task`` without ``agent`` (the crossed model's
    ``task_effect``, an IRT difficulty). A fit without tasks (pairwise
    battles) or without a posterior is not judged; nor is a formula fit (its agent level,
    ``mean_own_tasks``, holds each agent's own tasks fixed whatever its terms).
    """
    if fit is None or fit.attrs.get("hierbench_model") == "mixed":
        return False
    groups = [fit[g].to_dataset() for g in fit.children]
    if "posterior" not in fit.children or not any("task" in g.dims for g in groups):
        return False
    post = fit["posterior"].to_dataset()
    return not any("task" in v.dims and "agent" not in v.dims for v in post.data_vars.values())


#: the settings worth printing, and their labels (a count of 0 means the law was enumerated)
_SETTINGS = (
    ("n_resamples", "per-pair intervals from {:,} bootstrap resamples", None),
    ("n_permutations", "sign patterns per pair {:,}",
     "per-pair p-values exact (every sign pattern counted: enumeration or lattice convolution)"),
    ("maxt_crit", "max-T critical |t| {:.4g}", None),
    ("maxt_draws", "max-T null draws {:,}", "max-T null law: all sign patterns enumerated (exact)"),
)


def settings_text(cmp: PairwiseComparisonResult) -> str:
    """The resampling settings and the reasons for the test and the adjustment, as text."""
    a = _attrs(cmp)
    parts = [f"test: {a['test_reason']}" if "test_reason" in a else ""]
    parts.append(f"adjustment: {a['adjust_reason']}" if "adjust_reason" in a else "")
    per_pair = _per_pair_words(cmp)
    nums = [
        exact if exact and float(a[k]) == 0 else lab.format(int(a[k]) if "," in lab else a[k])
        for k, lab, exact in _SETTINGS
        if k in a and np.isfinite(float(a[k])) and not (per_pair and k == "n_resamples") and _said(a, k)
    ]
    parts += [per_pair, ", ".join(nums)]  # the interval's own detail holds commas: a part of its own
    return "; ".join(p for p in parts if p)


def _said(a: dict, key: str) -> bool:
    """Whether a resampling setting bears on what the table shows.

    The sign patterns per pair only where the per-pair test is the sign-flip one (beside a
    ``p (t)`` column "per-pair p-values exact (every sign pattern counted)" described a test
    not shown); the max-T settings only where max-T ran on sign patterns or multivariate-t
    draws (a Holm result, or a max-T family with no pair in it, has no max-T law).
    """
    if key == "n_permutations":
        return a.get("test") == "permutation"
    if key.startswith("maxt_"):
        ran = str(a.get("adjust", "")).startswith("maxt") and int(a.get("maxt_patterns", 0) or 0) > 0
        # "all sign patterns enumerated" is the sign flips' law: the multivariate t always draws
        return ran and (key != "maxt_draws" or a.get("test") == "permutation" or float(a[key]) > 0)
    return True


def _per_pair_words(cmp) -> str:
    """The per-pair interval (``ci``) as the result describes it: the paired t (CR2 over clusters) by default, a bootstrap if asked."""
    ds = _dataset(cmp)
    ci = ds["ci"].attrs if "ci" in ds else {}
    if not ci.get("ci_detail"):
        return ""
    kind = ci.get("ci_kind", "")
    return f"per-pair intervals: {ci['ci_detail']}" + (f" ({kind})" if kind and kind not in ci["ci_detail"] else "")


#: what :func:`score_order` orders by, in the words a matrix is printed under
SCORE_ORDER_WORDS = (
    "agents in order of their mean score per task (over the tasks each ran, `hierbench summary`'s "
    "'mean (per task)'), highest first, ties by name"
)


def score_order(data: xr.Dataset, summary: pd.DataFrame | None = None) -> list[str]:
    """The agents by mean score per task (``hierbench.data.summarize``'s ``mean_score``), highest first.

    Ties by name; an agent with no scored run (NaN) comes last. ``summary``: that summary of
    ``data`` as a frame, where the caller has it (the report's Data summary), so it is not made twice.
    """
    import warnings

    from ..data import summarize

    if summary is not None:
        return highest_first(summary["mean_score"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # summarize's notices are the summary's business, not the order's
        mean = summarize(data)["mean_score"].to_series()
    return highest_first(mean)


def highest_first(mean: pd.Series) -> list[str]:
    """The agents of ``mean`` (indexed by agent) highest first, ties by name, NaN last: the report's order rule."""
    by = mean.set_axis(mean.index.astype(str)).rename_axis("agent").reset_index(name="mean")
    by = by.sort_values(["mean", "agent"], ascending=[False, True], na_position="last", kind="stable")
    return by["agent"].tolist()


def _check_order(order: list[str], ds: xr.Dataset) -> list[str]:
    """``order`` as text, if it names each of the result's agents once; else a ValueError naming the difference."""
    agents = [str(a) for a in ds["agent"].values]
    order = [str(a) for a in order]
    if sorted(order) != sorted(agents):
        raise ValueError(
            "`order` must name each agent of the comparison once; missing "
            f"{sorted(set(agents) - set(order))}, not compared {sorted(set(order) - set(agents))}, "
            f"repeated {sorted({a for a in order if order.count(a) > 1})}"
        )
    return order


def _order(cmp) -> list[str]:
    """Agents by their mean paired difference against all others (best first)."""
    ds = _dataset(cmp)
    d = ds["estimate"] if "estimate" in ds else ds["mean_diff"]
    score = np.nanmean(d.transpose("agent", "opponent").values, axis=1)
    agents = [str(a) for a in ds["agent"].values]
    return [agents[i] for i in np.argsort(-score, kind="stable")]


#: the widest agent name a matrix column carries: no wider than a cell such as "+0.64***"
MATRIX_NAME_WIDTH = 8


def pair_matrix(
    cmp: PairwiseComparisonResult, *, alpha: float = 0.05, numbered: bool | None = None, order: list[str] | None = None
) -> pd.DataFrame:
    """The pairs as one matrix: row agent minus column agent, marked by the result's verdict.

    Agents are in ``order`` (by default their mean paired difference against
    all the others, best first), and only the upper triangle is filled (the
    lower one is its mirror), so most entries read "row beats column by".

    Parameters
    ----------
    cmp : PairwiseComparisonResult
    alpha : float
        Level of the marks, on the result's adjusted p-values (``p_adjusted``;
        see :func:`marks_legend`): the same verdict as :func:`pair_frame`.
    numbered : bool, optional
        Rows ``"1. name"`` and columns ``"1"``, ``"2"``, ... (narrow enough
        for 25 agents; the index's name then says the columns are numbered as
        the rows); else the names on both axes. By default numbered only when
        a name is wider than 8 characters (a cell such as ``"+0.64***"``): a column
        numbered ``"6"`` above agents named ``1`` ... ``9`` reads as agent 6.
    order : list of str, optional
        Every agent of ``cmp`` once, in the order of the rows (the report and
        ``hierbench compare`` order by mean score per task, highest first).

    Returns
    -------
    pandas.DataFrame
        Text cells such as ``"+0.64***"``; ``""`` on and below the diagonal.
        The first agent's column (empty) is left out.
    """
    ds = _dataset(cmp)
    d = (ds["estimate"] if "estimate" in ds else ds["mean_diff"]).transpose("agent", "opponent")
    p = ds["p_adjusted"].transpose("agent", "opponent")
    order = _order(cmp) if order is None else _check_order(order, ds)
    cells = []
    for i, a in enumerate(order):
        row = []
        for j, b in enumerate(order):
            if j <= i:
                row.append("")
                continue
            v = float(d.sel(agent=a, opponent=b))
            pv = float(p.sel(agent=a, opponent=b))
            # no adjusted p (no_p_note): "?" rather than a bare difference that reads "not separated"
            # round(v, 2) + 0.0: a difference that rounds to zero reads +0.00, not -0.00 (VerbAgg 11 - 6)
            row.append(f"{round(v, 2) + 0.0:+.2f}{'?' if np.isnan(pv) and np.isfinite(v) and v != 0 else _mark(pv, alpha)}")
        cells.append(row)
    if numbered is None:
        numbered = max(map(len, order)) > MATRIX_NAME_WIDTH
    if numbered:
        index = [f"{i}. {a}" for i, a in enumerate(order, start=1)]
        columns = [str(i) for i in range(1, len(order) + 1)]
    else:
        index, columns = order, order
    out = pd.DataFrame(cells, index=index, columns=columns)
    # the first column holds only the diagonal (the last row stays: it names the last column)
    out = out.iloc[:, 1:]
    out.index.name = "agent (row minus column" + ("; columns numbered as the rows)" if numbered else ")")
    return out
