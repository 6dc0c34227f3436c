"""Section 6 of the demo: pass^k.

The unbiased estimator with its interval beside the crossed model's posterior for the same
cells, and why k stops where it does.
"""

from __future__ import annotations

import textwrap
import warnings

import pandas as pd

from .._base import counted
from ._context import PROB
from ._context import DemoContext
from ._context import _coverage_words
from ._context import _n_runs
from ._context import _partial_credit
from ._context import _partial_credit_words
from ._context import _score_levels


def _passk_section(ctx: DemoContext) -> str:
    from ..freq import pass_hat_k
    from ..metrics import crossed_pass_k
    from ..report import unbiased_interval

    levels = _score_levels(ctx)
    if levels:
        from ..data import labels_attr

        labels = labels_attr(ctx.data.attrs)
        named = (f" (the grade's number in the ordinal fit: "
                 f"{', '.join(f'{v:g} = {lab}' for v, lab in zip(levels, labels, strict=True))})" if labels else "")  # fmt: skip
        return textwrap.fill(
            "(not computed: pass^k counts passes, and a grade is not a pass until you say which grades "
            f"pass, which the demo does not choose for you. With the lowest passing grade g{named}: "
            "hierbench.metrics.graded_pass_hat_k(fit, model, threshold=g, k=...) on the ordinal fit, or "
            "pass^k of the log with scores set to 1 at grades >= g and 0 below.)",
            88,
        )
    found = _partial_credit(ctx)
    if found:
        return textwrap.fill(
            f"(not computed: pass^k counts passes, and {_partial_credit_words(found)}: a score is not a pass "
            "until you say which scores pass, which the demo does not choose for you. With a pass threshold s: "
            "hierbench.freq.pass_hat_k on the log with scores set to 1 at s and above and 0 below, or that "
            "column read with --score.)",
            88,
        )
    n_runs = _n_runs(ctx)
    # the unbiased estimator needs k runs in a cell: no k above the most runs any cell holds
    ks = list(range(1, min(_MAX_K, int(n_runs.max())) + 1))

    from ..freq import InsufficientRunsWarning

    with warnings.catch_warnings():
        # reported in the text below, from the result's own count
        warnings.simplefilter("ignore", InsufficientRunsWarning)
        freq = pass_hat_k(ctx.data, ks, prob=PROB)
    short = int(freq.n_insufficient.sum())
    interval = unbiased_interval(freq)  # the report's columns: the estimator's own interval, level and kind
    # the estimator's per-cell note (a bound where few tasks carry the mean), as the report's `flag` gives it
    note = freq.to_frame()["ci_flag"].fillna("").astype(str)
    interval["flag"] = note.where(note == "", "unbiased: " + note).to_numpy()
    # every k in one call, each over the cells run at least k times (min_runs="k"), with the report's
    # seed: the report's pass^k section makes this same call, so its table shows these numbers
    bay = crossed_pass_k(ctx.extra["fit"], k=ks, prob=PROB, min_runs="k", realised=True,
                         rng=int(ctx.extra.get("seed", 0))) if "fit" in ctx.extra else None  # fmt: skip
    frames = []
    for k in ks:
        # the truth over the cells the unbiased estimator can use (at least k runs)
        est = freq.estimate
        df = pd.DataFrame(
            {
                "tasks (>= k runs)": freq.to_dataset()["n_tasks"].sel(k=k).to_series(),
                "unbiased C(c,k)/C(n,k)": est.sel(k=k).to_series(),
            }
        )
        ends = interval.xs(k, level="k").reindex(df.index.astype(str))
        for c in ends:
            df[c] = ends[c].to_numpy()
        if ctx.truth is not None:
            p = ctx.truth["p"].where(n_runs >= k)
            df.insert(0, "truth", (p**k).mean("task").to_series())
        if bay is not None:
            # the same cells as the truth and the unbiased estimator (at least k runs), and
            # the realised average of their p^k, so the interval is for these cells' truth
            df["Bayes posterior mean"] = (
                bay["estimate" if "estimate" in bay else "mean"].sel(k=k).to_series()
            )
            ci = bay["ci"].sel(k=k)
            df[f"Bayes {PROB:.0%} lower"] = ci.sel(ci_bound="lower").to_series()
            df[f"Bayes {PROB:.0%} upper"] = ci.sel(ci_bound="upper").to_series()
        df.insert(0, "k", k)
        frames.append(df)
    table = pd.concat(frames)
    table.index = table.index.astype(str)
    # an agent with no task run at least k times has nothing to average at that k: no row
    table = table[table["tasks (>= k runs)"] > 0]
    if not (table["flag"] != "").any():
        table = table.drop(columns="flag")
    ctx.extra["passk_table"] = table
    text = _passk_text(table, short, truth=ctx.truth is not None, bayes="fit" in ctx.extra,
                       interval=_interval_words(freq, table))
    return text + _passk_limits(ks, table, [str(a) for a in n_runs["agent"].values], int(n_runs.max()))


#: the largest k the demo's pass^k table shows (fewer where no cell holds that many runs)
_MAX_K = 5


def _passk_limits(ks: list[int], table: pd.DataFrame, agents: list[str], most: int | None = None) -> str:
    """Why the table stops where it does (below k = 5, or at 5 with busier cells), and which rows stop early.

    ``most``: the most runs any cell holds (the rat tumour log: 52, where the table stops at 5).
    """
    lines = []
    if ks[-1] < _MAX_K:
        lines.append(
            f"k goes to {ks[-1]} only: no (agent, task) cell holds more than {counted(ks[-1], 'run')}, and "
            "the unbiased estimator needs k runs of a task."
        )
    elif most is not None and most > ks[-1]:
        lines.append(
            f"k stops at {ks[-1]} (the demo's table); the busiest cells hold {most} runs: "
            f"hierbench.freq.pass_hat_k(data, k) gives any k up to {most}."
        )
    last = table.groupby(level=0)["k"].max()
    early = [f"{a} (to k = {int(last[a])})" if a in last else f"{a} (none)" for a in agents
             if a not in last or last[a] < ks[-1]]  # fmt: skip
    if early:
        lines.append(
            "Rows stop where an agent ran no task at least k times: " + ", ".join(early) + "."
        )
    from ..report import shrinking_tasks_note

    if shrinking := shrinking_tasks_note(table):
        lines.append(shrinking)
    return "".join("\n\n" + textwrap.fill(line, 90) for line in lines)


def _interval_words(freq, table: pd.DataFrame) -> str:
    """What the unbiased estimator's interval is, as the result states it (the report's words), and its letters.

    A table with a ``flag`` column gets a sentence on its letters; where one of them is the
    even-clusters flag (``_logit_t.EVEN_CLUSTERS_FLAG``), a sentence on what that flag marks:
    a kept t interval, set by ``_logit_t.even_clusters`` whatever the mean, not part of the bound's
    all-0 / all-1 case (the detail's parenthetical said so: audit U, finding 2).
    """
    detail = freq.ci.attrs["ci_detail"].split(": ", 1)[-1]
    text = (
        f"The unbiased estimator's {PROB:.0%} interval (column `unbiased {PROB:.0%}`) takes the "
        f"tasks as a sample, so it is for a new draw of tasks: {detail}."
    )
    if "flag" not in table:
        return text
    text += (" `note` marks by a letter the cells whose interval carries a flag (the estimator's `ci_flag`); "
             "the letters' words are under the table.")  # fmt: skip
    from ..freq import EVEN_CLUSTERS_FLAG
    from ..freq import EVEN_CLUSTERS_SHARE
    from ..report import letter_of

    even = letter_of(table["flag"], EVEN_CLUSTERS_FLAG)  # the letter the legend gives the flag
    if even is not None:
        text += (
            f" Letter {even} is neither a bound nor the all-0 / all-1 case: it marks a t interval kept where "
            f"the clusters carry the mean more evenly than independent tasks would, the cluster-robust variance "
            f"of the mean below {EVEN_CLUSTERS_SHARE:g} times s^2 / N (the variance N independent tasks of the "
            "same spread would give), whatever the mean."
        )
    return text


def _ends(lo: pd.Series, hi: pd.Series) -> pd.Series:
    """``[lower, upper]`` to 3 decimals, ``undefined`` where an end is not a number (fewer than 2 tasks)."""
    return pd.Series([f"[{a:.3f}, {b:.3f}]" if pd.notna(a) and pd.notna(b) else "undefined"
                      for a, b in zip(lo, hi, strict=True)], index=lo.index)  # fmt: skip


def _printed(table: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The table as printed: each interval as one ``[lower, upper]`` column, each flag as a letter.

    The full table (one column per end, the flag's words in every row) ran to 300 characters on the
    embedded default, with one 75-character note repeated in most rows; the letters' words follow it.
    """
    out = table[[c for c in ("k", "truth") if c in table]].copy()
    out["tasks"] = table["tasks (>= k runs)"]
    out["unbiased"] = table["unbiased C(c,k)/C(n,k)"]
    lo, hi = (next(c for c in table if c.startswith("unbiased ") and end in c) for end in (" lower", " upper"))
    out[f"unbiased {PROB:.0%}"] = _ends(table[lo], table[hi])
    legend = ""
    if "flag" in table:
        from ..report import note_letters

        out["note"], words = note_letters(table["flag"])
        legend = "\n".join(textwrap.fill(w + ".", 90, subsequent_indent="   ") for w in words)
    if "Bayes posterior mean" in table:
        out["Bayes (these cells)"] = table["Bayes posterior mean"]
        out[f"Bayes {PROB:.0%} ETI"] = _ends(table[f"Bayes {PROB:.0%} lower"], table[f"Bayes {PROB:.0%} upper"])
    return out, legend


def _passk_text(table: pd.DataFrame, short: int, *, truth: bool, bayes: bool, interval: str = "") -> str:
    """The pass^k section's words, naming only the columns the table has."""
    cols = ["the truth"] * truth + ["the unbiased estimator"]
    if bayes:
        cols.append(
            "the crossed model's posterior for the same cells (each cell's p drawn from its "
            f"posterior, so the {PROB:.0%} equal-tailed interval is for these cells' true pass^k)"
        )
    head = (
        "pass^k, the chance that k independent attempts all succeed (tau-bench's reliability "
        "metric), averaged over the tasks each agent ran at least k times (`tasks`): "
        + (", ".join(cols[:-1]) + " and " + cols[-1] if len(cols) > 1 else cols[0])
        + "."
    )
    tail = ""
    if short:
        others = " (and of the columns beside it: the same cells throughout)" if truth or bayes else ""
        tail = "\n\n" + textwrap.fill(
            f"{short} (agent, task, k) cells had fewer than k runs: the unbiased estimator is "
            f"undefined there, so they are left out of its mean{others}.",
            90,
        )
    head = textwrap.fill(head, 90) + ("\n\n" + textwrap.fill(interval, 90) if interval else "")
    shown, legend = _printed(table)
    legend = "\n\n" + legend if legend else ""
    return head + "\n\n" + shown.to_string(float_format="{:.3f}".format) + legend + _passk_covers(table) + tail


def _passk_covers(table: pd.DataFrame) -> str:
    """Under the table: how many of each method's intervals cover the truth column, the misses named.

    The same words as section 4's count (``_coverage_words``); "" without a truth column.
    """
    if "truth" not in table:
        return ""
    rows = [f"{a} at k = {k}" for a, k in zip(table.index, table["k"], strict=True)]
    lines = []
    for name, head in ((f"unbiased {PROB:.0%}", "unbiased "), (f"Bayes {PROB:.0%} ETI", f"Bayes {PROB:.0%} ")):
        ends = [next((c for c in table if c.startswith(head) and end in c), None) for end in (" lower", " upper")]
        if None in ends:
            continue
        lo, hi = (pd.Series(table[c].to_numpy(dtype=float), index=rows) for c in ends)
        words = _coverage_words(pd.Series(table["truth"].to_numpy(dtype=float), index=rows), lo, hi)
        lines.append(f"{name}: {words}")
    return "".join("\n\n" + textwrap.fill(line, 90) for line in lines)
