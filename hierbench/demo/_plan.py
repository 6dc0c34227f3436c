"""Section 9 of the demo: how many more tasks or runs to buy.

Power from the fit's variance components (the log's G-study where no fit ran) and,
beside it, from the log's own paired differences, with the task clusters' design effect.
"""

from __future__ import annotations

import textwrap
import warnings
from typing import Any

import numpy as np
import pandas as pd

from .._base import counted
from ._context import DemoContext
from ._context import _n_runs


def _plan_section(ctx: DemoContext) -> str:
    from ..freq import minimum_detectable_effect
    from ..freq import optimal_allocation
    from ..freq import optimal_runs
    from ..freq import tasks_for_power

    if int(ctx.data.sizes.get("agent", 0)) == 1:  # no pair: the agent's own interval by tasks and runs
        from ._plan_one import one_agent_plan

        return one_agent_plan(ctx)
    parts, s_e, s_mt, source = _fit_components(ctx) if "fit" in ctx.extra else _gstudy_components(ctx)
    mt = "agent x task" in parts  # with one run per cell the run-to-run part holds it
    clipped = _clipped_note(parts, source)
    T, tasks_text = _tasks_shared(ctx)
    if T < 2:
        return textwrap.fill(
            f"(not applicable: a pair of agents shares a median of {counted(T, 'task')}, and a paired "
            "comparison stands on the tasks both agents ran: run the agents on common tasks)", 90)
    kw = {"sigma2_interaction": s_mt, "sigma2_residual": s_e}
    R, sd_made, runs_text = _runs_made(ctx, kw)
    mde = minimum_detectable_effect(T, sd_diff=sd_made, power=0.8)
    sd_obs, n_pairs, spread = _observed_paired_sd(ctx)
    n_all = int(ctx.data.sizes["agent"]) * (int(ctx.data.sizes["agent"]) - 1) // 2  # section Does A beat B?'s family
    rows = []
    for effect in (0.03, 0.05, 0.10):
        rows.append(
            {
                "difference to detect": effect,
                "tasks needed (R=1)": tasks_for_power(effect, n_runs=1, **kw),
                f"tasks needed (R={R}, as run)": tasks_for_power(effect, sd_diff=sd_made),
                (PAIRS_COLUMN if len(spread) > 1 else PAIR_COLUMN).format(R=R): (
                    " / ".join(f"{tasks_for_power(effect, sd_diff=x):,}" for x in spread) if spread else "-"
                ),
            }
        )
    table = pd.DataFrame(rows).set_index("difference to detect")
    if R == "1":  # the runs made are the one-run plan: one column says it
        table = table.drop(columns="tasks needed (R=1)")
    ctx.extra["plan_table"] = table
    if not mt:
        buy = "\n\n" + textwrap.fill(
            "With one run per cell the log cannot tell agent x task variation from run-to-run "
            "noise, so it cannot say whether a second run of a task is worth more than a new task "
            "(R* = sqrt(s_e c_task / (s_mt c_run)) needs s_mt): run some tasks at least twice to learn it.",
            88,
        )
    elif s_mt > 0:
        r_star = optimal_runs(cost_task=10.0, cost_run=1.0, **kw)
        alloc = optimal_allocation(5000.0, cost_task=10.0, cost_run=1.0, **kw)
        buy = "\n\n" + textwrap.fill(
            "If a new task costs 10 runs' worth, the cost-optimal number of runs per task is "
            f"R* = sqrt(s_e c_task / (s_mt c_run)) = {r_star:.1f}{_s_mt_words(parts)}; a budget of 5,000 "
            f"run-units buys {int(alloc['n_tasks'])} tasks x {int(alloc['n_runs'])} runs"
            f"{_in_clusters(ctx, int(alloc['n_tasks']))}.",
            88,
        )
    else:
        buy = "\n\n" + textwrap.fill(
            "With no agent x task variance the cost-optimal runs per task, "
            "R* = sqrt(s_e c_task / (s_mt c_run)), is unbounded: that rests on an estimate at 0, "
            "so no allocation is recommended; more tasks also widen what the benchmark covers.",
            88,
        )
    return (
        _components_text(parts, s_e, source)
        + runs_text
        + tasks_text
        + "\n" + textwrap.fill(
            f"With {T} tasks at R = {R} run{'' if R == '1' else 's'} per cell a paired comparison detects a "
            f"difference of {mde:.3f} with 80% power (two-sided, alpha 0.05; noncentral t with T - 1 df) for "
            f"one pre-chosen pair with the pooled SD, unadjusted for the others{_mde_spread(T, spread)}."
            + _family_words(T, sd_made, n_all), 88, break_on_hyphens=False)
        + f"{clipped}\n"
        + _observed_text(sd_made, sd_obs, n_pairs, parts=list(parts), model_columns=1 if R == "1" else 2,
                         source=source, spread=spread, gap_words=_sd_gap_words(ctx, spread))
        + _cluster_text(ctx, T, mde, sd_made, var1=None if R == "1" else 2 * s_mt + 2 * s_e)
        + "\n\n"
        + table.to_string()
        + buy
    )


def _family_words(T: int, sd: float, n_pairs: int) -> str:
    """The difference the family-wise test of section Does A beat B? detects ("" for one pair).

    That section holds the family-wise error at 0.05 over every pair (max-T); Bonferroni's
    ``alpha / n_pairs`` is a conservative stand-in for it (max-T rejects at least as often).
    """
    from ..freq import minimum_detectable_effect

    if n_pairs < 2:
        return ""
    fw = minimum_detectable_effect(T, sd_diff=sd, power=0.8, alpha=0.05 / n_pairs)
    return (f" Section Does A beat B? tests all {n_pairs} pairs at a family-wise 0.05 (max-T): at alpha 0.05 / "
            f"{n_pairs} (Bonferroni, a conservative stand-in for max-T) the same tasks detect {fw:.3f}.")


#: the agent's interactions with the task side (which ones: freq's ``pool_interactions``), in the words
#: the plan prints them
_WORDS = {"agent:task": "agent x task", "agent:task:cluster": "agent x task", "agent:cluster": "agent x cluster"}


def _interactions(values: dict[str, float]) -> tuple[dict[str, float], float, float]:
    """The agent x task-side parts of ``values`` (by component name) as the plan prints them, s_e and s_mt.

    Which parts a paired difference carries and how they sum (each below 0 taken as 0) is
    :func:`hierbench.freq.tasks_for_power`'s rule for a clustered G-study, one owner: freq's
    ``pool_interactions``.
    """
    from ..freq import pool_interactions

    parts, s_mt = pool_interactions(values)
    return {_WORDS[c]: v for c, v in parts.items()}, values["residual"], s_mt


def _fit_components(ctx: DemoContext) -> tuple[dict[str, float], float, float, str]:
    """The crossed fit's agent x task-side components (posterior means, by printed name) and run-to-run.

    An agent x cluster part is one: a paired difference on a new task of a new cluster carries it
    as it carries the agent x task part, and more runs shrink neither (without clusters the agent
    x task part holds it). With one run per cell there is no agent x task part (the run-to-run one
    holds it).
    """
    from ..metrics import crossed_variance_components

    vc = crossed_variance_components(ctx.extra["fit"], scale="probability")
    names = set(map(str, vc.draws["component"].values)) & {*_WORDS, "residual"}
    means = {c: float(vc[c].mean()) for c in names}
    return (*_interactions(means), "fit")


def _gstudy_components(ctx: DemoContext) -> tuple[dict[str, float], float, float, str]:
    """:func:`_fit_components` from the log's G-study, where no Bayesian fit ran (partial credit, a failed fit).

    :func:`hierbench.freq.variance_components` of the scores: with one run per cell its
    residual holds the agent x task part, as the fit's does. A component the G-study leaves
    NaN counts as 0.
    """
    from ..freq import variance_components

    est = variance_components(ctx.data).estimate
    values = {str(c): float(v) for c, v in zip(est["component"].values, est.values, strict=True)}
    values = {c: v if np.isfinite(v) or c == "residual" else 0.0 for c, v in values.items()}
    return (*_interactions(values), "gstudy")


def _clipped_note(parts: dict[str, float], source: str) -> str:
    """The note that s_mt (the sum of the agent x task-side parts) takes each part below 0 as 0.

    A variance estimated as a difference (a posterior mean of one, a G-study's ANOVA) can fall
    below 0 where it is small: planning then assumes none of it.
    """
    return "".join(
        f"\n(The {k} component's {'posterior mean' if source == 'fit' else 'estimate'} is {v:.4f} < 0, "
        "a difference of variances near zero: the plan below takes it as 0.)"
        for k, v in parts.items()
        if v < 0
    )


def _s_mt_words(parts: dict[str, float]) -> str:
    """How s_mt is made, where it sums more than one part ("" for the agent x task part alone)."""
    return f" (s_mt = {' + '.join(parts)})" if len(parts) > 1 else ""


def _components_text(parts: dict[str, float], s_e: float, source: str = "fit") -> str:
    """The plan's first line: the components it stands on, and why the agent x task one is missing.

    With one run per cell there is no agent x task part: its variation is inside the
    run-to-run part, so printing "agent x task 0.0000" would claim an estimate never made.
    """
    listed = "".join(f"{k} {v:.4f}, " for k, v in parts.items())
    held = ("agent x task" not in parts) and (
        ", which holds the agent x task variation too (one run per cell: "
        + ("nothing tells them apart)." if source != "fit" else "the fit has no agent x task term to estimate it).")
    )
    tail = f"{listed}run-to-run {s_e:.4f}" + (held or ".")
    if source != "fit":
        return ("Variance components of one run's score, from the log's G-study\n"
                "(hierbench.freq.variance_components; the Bayesian section did not run, see its note):\n"
                + textwrap.fill(tail, 88) + "\n")  # fmt: skip
    return textwrap.fill(
        "Variance components of the cell success probability on the probability scale, from the crossed "
        f"fit (posterior mean{'s' if parts else ''}): " + tail, 88) + "\n"


def _cluster_design_effect(ctx: DemoContext) -> tuple[float, int, str, tuple[float, float]] | None:
    """How much more a pair's mean difference varies over the task clusters than over independent tasks.

    ``1 + (m* - 1) ICC`` with the ICC of the pairs' per-task differences of cell means from their
    within- and between-cluster sums of squares (freq's ``observed_cluster_ratio``, the one
    owner: unbiased in numerator and denominator, where the plain ratio of the cluster-robust to
    the independent-task variance read 0.74 for a true 1 at SWE-bench's sizes). Returns the
    ratio, the number of clusters, their column's name and the ratio's 90% cluster-bootstrap
    percentile range (400 resamples, the demo's seed), from one call; None without clusters (or
    with every task its own).
    """
    from .._base import cluster_codes
    from .._base import cluster_label
    from ..freq import observed_cluster_ratio

    codes = cluster_codes(ctx.data)
    if codes is None or len(codes[1]) == int(ctx.data.sizes["task"]):
        return None
    # the one owner, also the D-study's cluster_inflation
    got = observed_cluster_ratio(_cell_rates(ctx), codes[0], prob=0.9, rng=ctx.extra.get("seed", 0))
    return None if got is None else (got[0], len(codes[1]), cluster_label(ctx.data), (got[1], got[2]))


def _observed_clusters(ctx: DemoContext) -> tuple[Any, float, int, str, tuple[float, float]] | None:
    """The log's clusters as a plan's :func:`hierbench.freq.cluster_design` (None without clusters).

    Their sizes as a template and the observed ratio (at least 1) as the design effect, with
    the ratio, the number of clusters, their column's name and the ratio's range
    (``_cluster_design_effect``); computed once per demo.
    """
    if "observed_clusters" not in ctx.extra:
        from .._base import cluster_codes
        from ..freq import cluster_design

        deff = _cluster_design_effect(ctx)
        if deff is None:
            ctx.extra["observed_clusters"] = None
        else:
            with warnings.catch_warnings():  # a ratio above m* is still what this log shows
                warnings.simplefilter("ignore")
                cd = cluster_design(np.bincount(cluster_codes(ctx.data)[0]), design_effect=max(deff[0], 1.0),
                                    template=True, source="observed ratio")
            ctx.extra["observed_clusters"] = (cd, *deff)
    return ctx.extra["observed_clusters"]


def _cell_rates(ctx: DemoContext) -> np.ndarray:
    """The (agent, task) cell means of the log, NaN where a cell was not run; computed once per demo."""
    if "cell_rates" not in ctx.extra:
        from ..data import to_counts

        c = to_counts(ctx.data)
        ctx.extra["cell_rates"] = (c["n_success"] / c["n_runs"]).where(c["n_runs"] > 0).transpose("agent", "task").values
    return ctx.extra["cell_rates"]


def _in_clusters(ctx: DemoContext, n_tasks: int) -> str:
    """How many clusters like the log's ``n_tasks`` new tasks make ("" without clusters).

    The plan's design effect is taken as the same whatever R, so clusters change neither R* nor
    the tasks a budget buys: only how many clusters those tasks fill.
    """
    observed = _observed_clusters(ctx)
    if observed is None:
        return ""
    per = observed[0].tasks_per_cluster
    return f" (in clusters like these, of {per:.1f} tasks on average: about {max(1, round(n_tasks / per))} clusters)"


def _cluster_text(ctx: DemoContext, T: int, mde: float, sd: float, var1: float | None = None) -> str:
    """Where tasks come in clusters: the plan takes them as independent, the paired tests do not.

    The clustered figure is :func:`hierbench.freq.minimum_detectable_effect` with the observed
    ratio as the design effect (at least 1) and clusters like the log's: ``C_eff - 1`` df, their
    worth in equal clusters (freq's few-clusters rule). The ratio is measured at the runs made;
    ``var1``, a per-task difference's variance at one run, rescales it for the R = 1 column:
    ``1 + (DEFF - 1) Var_d(R made) / Var_d(1)`` (run noise, independent over tasks, dilutes the
    clusters' share). A ratio at or below 1 is never read as "no variance": its range says how
    much the clusters may add. The figure is for one pre-chosen pair: no Bonferroni stand-in is
    given for the family (a sign-flip test over 12 clusters has no p-value below 2 / 4096, so
    ``0.05 / n_pairs`` can be out of its reach where max-T is not).
    """
    from ..freq import minimum_detectable_effect

    observed = _observed_clusters(ctx)
    if observed is None:
        return ""
    cd, ratio, k, name, (lo, hi) = observed
    deff, c_eff = cd.design_effect, float(cd.effective_for(T))  # the ratio, at least 1
    mde_c = minimum_detectable_effect(T, sd_diff=sd, clusters=cd)
    test = (f"{T} tasks in clusters like these are worth {c_eff:.1f} equal clusters by their sizes ((sum "
            f"n_g)^2 / sum n_g^2), so a test over them has t with {c_eff - 1:.1f} df, not {T - 1}")
    head = (
        f"The plan takes tasks as independent; this log's tasks come in {k} clusters of `{name}`, "
        "the unit of the paired tests (section Does A beat B?). On this log a pair's mean difference "
        f"varies {ratio:.2f} times as much over the clusters as over independent tasks (1 + (m* - 1) ICC, "
        "the ICC of the pairs' per-task differences from their within- and between-cluster sums of "
        f"squares, no fit; 90% cluster-bootstrap percentile range {lo:.2f}-{hi:.2f}, itself rough with "
        f"{k} clusters)."
    )
    if ratio <= 1:  # a chance low or tasks pulling apart: the range, not the point, says what they may add
        tail = (
            f" A ratio at or below 1 does not show that the clusters add no variance: the range reaches "
            f"{hi:.2f}, and at that the counts below would be {hi:.2f} times too small. The counts below take "
            f"none; {test}, and {T} tasks detect about {mde_c:.3f}, not {mde:.3f}."
        )
    else:
        at1 = ""
        if var1 is not None and var1 > 0:
            d1 = 1 + (deff - 1) * sd**2 / var1
            at1 = f" (the R = 1 column's about {d1:.2f} times: more run noise, a smaller share for the clusters)"
        tail = (
            f" If new tasks come in clusters like these, the as-run column's counts below are about {deff:.2f} "
            f"times too small{at1}, and {T} tasks detect about {mde_c:.3f}, not {mde:.3f} (design effect "
            f"{deff:.2f}; {test})."
        )
    return "\n" + textwrap.fill(head + tail, 88, break_on_hyphens=False)


#: the plan table's model-free column: tasks each pair's own SD needs, over the observed pairs
PAIRS_COLUMN = "pairs' own SD, R={R}: least / median / most"
#: the same with one pair: its own SD
PAIR_COLUMN = "the pair's own SD, R={R}"


def _mde_spread(T: int, spread: tuple[float, ...]) -> str:
    """The detectable difference at the pairs' own least and most SD (" " + words, "" without pairs)."""
    from ..freq import minimum_detectable_effect

    if not spread or spread[0] <= 0:
        return ""
    if len(spread) == 1:
        return f"; at the pair's own SD (no model), {minimum_detectable_effect(T, sd_diff=spread[0], power=0.8):.3f}"
    lo, hi = (minimum_detectable_effect(T, sd_diff=x, power=0.8) for x in (spread[0], spread[-1]))
    return f"; at the observed pairs' own SDs, {lo:.3f} to {hi:.3f}"


def _observed_paired_sd(ctx: DemoContext) -> tuple[float, int, tuple[float, ...]]:
    """The SD of a per-task paired difference as the log shows it, with no model, pooled and per pair.

    Over the pairs ``_pair_sds_gaps`` keeps: the root of the mean of their variances, the
    pairs used and their own SDs' least, median and most (() when none, or none above 0; one
    pair's own SD once).
    """
    var, _ = _pair_sds_gaps(ctx)
    if not var.size:
        return np.nan, 0, ()
    sd = np.sqrt(var)
    if sd.size == 1:  # one pair: its own SD, once
        return float(sd[0]), 1, ((float(sd[0]),) if sd[0] > 0 else ())
    spread = tuple(float(x) for x in (sd.min(), np.median(sd), sd.max())) if sd.min() > 0 else ()
    return float(np.sqrt(np.mean(var))), int(var.size), spread


def _pair_sds_gaps(ctx: DemoContext) -> tuple[np.ndarray, np.ndarray]:
    """Each pair's variance of its per-task differences, and its gap, over the pairs that share enough tasks.

    Each pair's differences of its cell means over the tasks both agents ran (at least 3), their
    sample variance (``_variance/_observed.pair_variances``, the one owner), over the pairs that
    share at least half the median pair's tasks: a pair on few shared tasks, both near 0, gave the
    least SD and "14 tasks" for the whole plan (METR: davinci-002 and gpt-3.5-turbo-instruct on 16
    of the plan's 76 tasks; the next least pair asked about 360; audit D3). The gap is the
    absolute mean difference over the shared tasks. Computed once per demo.
    """
    if "pair_sds_gaps" in ctx.extra:
        return ctx.extra["pair_sds_gaps"]
    from ..freq import pair_variances

    rate = _cell_rates(ctx)
    var = pair_variances(rate)
    i, j = np.triu_indices(len(rate), 1)  # pair_variances' order
    d = rate[i] - rate[j]
    n = np.isfinite(d).sum(1)
    gap = np.abs(np.where(np.isfinite(d), d, 0.0).sum(1) / np.maximum(n, 1))
    ok = np.isfinite(rate).astype(int)
    shared = (ok @ ok.T)[i, j]
    keep = np.isfinite(var) & (shared >= np.median(shared) / 2)
    ctx.extra["pair_sds_gaps"] = (var[keep], gap[keep])
    return ctx.extra["pair_sds_gaps"]


def _sd_gap_words(ctx: DemoContext, spread: tuple[float, ...]) -> str:
    """What this log's pairs show of a pair's SD against its gap ("" with fewer than three pairs).

    Spearman's correlation of the pairs' own SDs with their gaps: for 0/1 scores a pair further
    apart has the larger SD where it is positive. Said from the log itself, not from other
    benchmarks (the held-out figures were SWE-bench's and METR's, and on the demo's own
    population the pairs' SDs are nearly equal; audit W).
    """
    from scipy import stats

    var, gap = _pair_sds_gaps(ctx)
    if len(spread) < 3 or var.size < 3 or np.ptp(var) == 0 or np.ptp(gap) == 0:
        return ""
    rho = float(stats.spearmanr(np.sqrt(var), gap)[0])
    how = "rises" if rho >= 0.3 else "falls" if rho <= -0.3 else "hardly moves"
    then = (": a close pair needs fewer tasks than the pooled count, a distant one more" if rho >= 0.3
            else ": a distant pair needs fewer tasks than the pooled count, a close one more" if rho <= -0.3 else "")
    return (f" On this log it {how} with the pair's gap (Spearman correlation of SD and absolute mean "
            f"difference {rho:.2f} over {var.size} pairs){then}.")


def _observed_text(
    sd_made: float, sd_obs: float, n_pairs: int, *, parts: list[str], model_columns: int = 2, source: str = "fit",
    spread: tuple[float, ...] = (), gap_words: str = "",
) -> str:
    """The plan's model-based SD beside the one the log shows, said as the columns' difference.

    ``parts``: the agent x task-side parts the plan holds (``"agent x task"``, ``"agent x
    cluster"``; without the first, run-to-run variance holds it); ``model_columns``: how many of
    the table's first columns rest on the fit; ``gap_words``: what this log's pairs show of
    their SD against their gap (``_sd_gap_words``). One pair's own SD is the log's SD: no
    spread is said.
    """
    if not sd_obs > 0:
        return "(No pair shares 3 tasks with differing results: no model-free SD to set beside the plan.)"
    over = "over the one pair" if n_pairs == 1 else (
        f"root mean square over {n_pairs} pairs, those sharing at least half the median pair's tasks")
    others = [p for p in parts if p != "agent x task"]
    extra = "".join(f", one {p} variance" for p in others)
    what = (
        f"one agent x task variance{extra} for every pair, binomial runs around each cell's rate"
        if "agent x task" in parts
        else f"one run-to-run variance, holding the agent x task part{extra}, for every pair"
    )
    if source != "fit":
        what = what.replace("binomial runs around each cell's rate", "one run-to-run variance")
    own = (
        f" Each pair's own SD runs {spread[0]:.3f} to {spread[-1]:.3f} (median {spread[1]:.3f}), so the last "
        f"column plans with the least, median and most.{gap_words}"
        if len(spread) > 1 else " The last column plans with it." if spread else ""
    )
    return textwrap.fill(
        f"That difference and the first {'two columns' if model_columns == 2 else 'column'} rest on the "
        f"{'fit' if source == 'fit' else 'G-study'}'s components (model-based: {what}), "
        "an SD of a per-task paired difference "
        f"of {sd_made:.3f}, one for every pair. With no model, the per-task paired differences of this log "
        f"have SD {sd_obs:.3f} ({over}, at the runs made): the same pooled quantity, so it checks the "
        f"components, not the pooling.{own}",
        88,
        break_on_hyphens=False,  # "run-to-run" stays on one line
    )


def _tasks_shared(ctx: DemoContext) -> tuple[int, str]:
    """The tasks a paired comparison stands on, and why: all of them, or the median a pair shares.

    A pair is compared on the tasks both agents ran; where agents ran different
    subsets (METR's davinci-002: 16 of 83), the log's task count overstates it.
    """
    from .._base import shared_tasks_per_pair

    shared = shared_tasks_per_pair(_n_runs(ctx).transpose("agent", "task").values)[2]
    n_all = int(ctx.data.sizes["task"])
    if shared.min() == n_all:
        return n_all, ""
    t = int(np.median(shared))
    return t, "\n" + textwrap.fill(
        f"A pair is compared on the tasks both agents ran: over the {len(shared)} pairs, median {t} of the "
        f"{n_all} tasks (range {shared.min()}-{shared.max()}); the plan takes {t}.",
        88,
    )


def _runs_made(ctx: DemoContext, kw: dict) -> tuple[str, float, str]:
    """The R the plan uses for the runs made (as text), the SD of a per-task difference there, and why.

    A per-task difference's variance is ``2 s_mt + s_e (1 / R_a + 1 / R_b)``
    (:func:`hierbench.freq.sd_paired_diff` per cell), so over unequal cells its
    average is that of ``2 s_mt + 2 s_e / R`` over the cells run: the harmonic
    mean of their runs gives it, not the busiest cell's count.
    """
    from ..freq import sd_paired_diff

    n = _n_runs(ctx).values
    runs = n[n > 0].astype(np.int64)
    sd = float(np.sqrt(np.mean(sd_paired_diff(runs, **kw) ** 2)))
    if runs.min() == runs.max():
        n1 = int(runs[0])
        return str(n1), sd, f"Every agent x task cell run holds {n1} run{'' if n1 == 1 else 's'}."
    r_h = len(runs) / float(np.sum(1.0 / runs))
    label = f"{r_h:.1f}"
    text = textwrap.fill(
        f"Runs per agent x task cell, over the {len(runs)} cells run: median {np.median(runs):g}, "
        f"range {runs.min()}-{runs.max()}. The plan takes R = {label}, their harmonic mean: a "
        "paired difference's run-to-run variance is s_e / R per cell, averaged over the cells, and "
        f"the harmonic mean is the R with the same average (the busiest cell's {runs.max()} runs "
        "would overstate what was bought).",
        88,
    )
    return label, sd, text
