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
    rows = []
    for effect in (0.03, 0.05, 0.10):
        rows.append(
            {
                "difference to detect": effect,
                "tasks needed (R=1)": tasks_for_power(effect, n_runs=1, **kw),
                f"tasks needed (R={R}, as run)": tasks_for_power(effect, sd_diff=sd_made),
                PAIRS_COLUMN.format(R=R): (
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
            f"a pair with the pooled SD{_mde_spread(T, spread)}.", 88)
        + f"{clipped}\n"
        + _observed_text(sd_made, sd_obs, n_pairs, parts=list(parts), model_columns=1 if R == "1" else 2,
                         source=source, spread=spread)
        + _cluster_text(ctx, T, mde, sd_made)
        + "\n\n"
        + table.to_string()
        + buy
    )


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


def _cluster_design_effect(ctx: DemoContext) -> tuple[float, int, str] | None:
    """How much more a pair's mean difference varies over the task clusters than over independent tasks.

    For each pair, over the tasks both agents ran, with ``e`` the per-task differences of cell
    means less their mean and ``n`` their number: the cluster-robust variance of the mean
    ``sum_g (sum_{t in g} e_t)^2 / n^2`` against the independent-task one ``sum_t e_t^2 / n^2``
    (both without small-sample corrections, so singleton clusters give exactly 1). Returns the
    ratio of their sums over the pairs, the number of clusters and their column's name; None
    without clusters (or with every task its own).
    """
    from .._base import cluster_codes
    from .._base import cluster_label
    from ..data import to_counts
    from ..freq import observed_cluster_ratio

    codes = cluster_codes(ctx.data)
    if codes is None or len(codes[1]) == int(ctx.data.sizes["task"]):
        return None
    c = to_counts(ctx.data)
    rate = (c["n_success"] / c["n_runs"]).where(c["n_runs"] > 0).transpose("agent", "task").values
    ratio = observed_cluster_ratio(rate, codes[0])  # the one owner, also the D-study's cluster_inflation
    return None if ratio is None else (ratio, len(codes[1]), cluster_label(ctx.data))


def _observed_clusters(ctx: DemoContext) -> tuple[Any, float, int, str] | None:
    """The log's clusters as a plan's :func:`hierbench.freq.cluster_design` (None without clusters).

    Their sizes as a template and the observed ratio (at least 1) as the design effect, with
    the ratio, the number of clusters and their column's name; computed once per demo.
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


def _cluster_text(ctx: DemoContext, T: int, mde: float, sd: float) -> str:
    """Where tasks come in clusters: the plan takes them as independent, the paired tests do not.

    The clustered figure is :func:`hierbench.freq.minimum_detectable_effect` with the observed
    ratio as the design effect (at least 1) and clusters like the log's (``K - 1`` df).
    """
    from ..freq import minimum_detectable_effect

    observed = _observed_clusters(ctx)
    if observed is None:
        return ""
    cd, ratio, k, name = observed
    deff, n_clusters = cd.design_effect, T / cd.tasks_per_cluster  # the ratio, at least 1
    mde_c = minimum_detectable_effect(T, sd_diff=sd, clusters=cd)
    head = (
        f"The plan takes tasks as independent; this log's tasks come in {k} clusters of `{name}`, "
        "the unit of the paired tests (section Does A beat B?). On this log a pair's mean difference "
        f"varies {ratio:.2f} times as much over the clusters as over independent tasks (cluster-robust "
        "against independent-task variance, summed over the pairs, no model)."
    )
    if ratio <= 1:  # no more than over independent tasks: only the clusters' fewer df cost power
        tail = (
            " The clusters add no variance here, so the counts below stand as computed; a test over "
            f"{n_clusters:.0f} clusters has {n_clusters - 1:.0f} df, not {T - 1}, and {T} tasks detect about "
            f"{mde_c:.3f}, not {mde:.3f}."
        )
    else:
        tail = (
            f" If new tasks come in clusters like these, every count of tasks needed below is about {deff:.2f} "
            f"times too small, and {T} tasks detect about {mde_c:.3f}, not {mde:.3f} (design effect "
            f"{deff:.2f}, {n_clusters:.0f} clusters: t with {n_clusters - 1:.0f} df)."
        )
    return "\n" + textwrap.fill(head + tail, 88)


#: the plan table's model-free column: tasks each pair's own SD needs, over the observed pairs
PAIRS_COLUMN = "pairs' own SD, R={R}: least / median / most"


def _mde_spread(T: int, spread: tuple[float, ...]) -> str:
    """The detectable difference at the pairs' own least and most SD (" " + words, "" without pairs)."""
    from ..freq import minimum_detectable_effect

    if not spread or spread[0] <= 0:
        return ""
    lo, hi = (minimum_detectable_effect(T, sd_diff=x, power=0.8) for x in (spread[0], spread[-1]))
    return f"; at the observed pairs' own SDs, {lo:.3f} to {hi:.3f}"


def _observed_paired_sd(ctx: DemoContext) -> tuple[float, int, tuple[float, ...]]:
    """The SD of a per-task paired difference as the log shows it, with no model, pooled and per pair.

    Each pair's differences of its cell means over the tasks both agents ran (at least 3), their
    sample variance (``_variance/_observed.pair_variances``, the one owner), over the pairs that
    share at least half the median pair's tasks: a pair on few shared tasks, both near 0, gave the
    least SD and "14 tasks" for the whole plan (METR: davinci-002 and gpt-3.5-turbo-instruct on 16
    of the plan's 76 tasks; the next least pair asked about 360; audit D3). Returns the root of
    the mean over the pairs, the pairs used and their own SDs' least, median and most (() when
    none, or none above 0).
    """
    from ..data import to_counts
    from ..freq import pair_variances

    c = to_counts(ctx.data)
    rate = (c["n_success"] / c["n_runs"]).where(c["n_runs"] > 0).transpose("agent", "task").values
    var = pair_variances(rate)
    ok = np.isfinite(rate).astype(int)
    shared = (ok @ ok.T)[np.triu_indices(len(rate), 1)]  # tasks each pair shares, in pair_variances' order
    var = var[np.isfinite(var) & (shared >= np.median(shared) / 2)]
    if not var.size:
        return np.nan, 0, ()
    sd = np.sqrt(var)
    spread = tuple(float(x) for x in (sd.min(), np.median(sd), sd.max())) if sd.min() > 0 else ()
    return float(np.sqrt(np.mean(var))), int(var.size), spread


def _observed_text(
    sd_made: float, sd_obs: float, n_pairs: int, *, parts: list[str], model_columns: int = 2, source: str = "fit",
    spread: tuple[float, ...] = (),
) -> str:
    """The plan's model-based SD beside the one the log shows, said as the columns' difference.

    ``parts``: the agent x task-side parts the plan holds (``"agent x task"``, ``"agent x
    cluster"``; without the first, run-to-run variance holds it); ``model_columns``: how many of
    the table's first columns rest on the fit.
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
        f" Each pair's own SD runs {spread[0]:.3f} to {spread[-1]:.3f} (median {spread[1]:.3f}), larger "
        "for pairs further apart on SWE-bench and METR, so the last column plans with the least, median and "
        "most: a close pair "
        "needs fewer tasks than the pooled count, a distant one more (held out, the pooled count asked "
        "1.2-2.1 times too many for close pairs and reached power 0.70-0.75, not 0.80, for distant ones)."
        if spread else ""
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
