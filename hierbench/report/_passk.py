"""The pass^k section: the unbiased estimator and the model's posterior over the same tasks.

For each k both estimates average over the same cells: the tasks each agent
ran at least k times (the only tasks where ``C(c, k) / C(n, k)`` exists).
A crossed or beta-binomial fit's posterior is restricted to those cells
(``min_runs=k``) and drawn for these tasks' own pass^k (``realised``); a
formula fit describes a new task from the population, a different
quantity, so it is shown in its own columns and never paired. Every row
says how many tasks it used. The unbiased estimator's interval, its
description and its flags (an exact bound, a bound where few tasks carry
the mean, no width, too few tasks) are the estimator's own
(:func:`hierbench.freq.pass_hat_k`), not re-typed here; a
posterior interval is shown inside [0, 1] and one that had to be clipped
there, or that has no width, is flagged. Where the two describe the same
tasks, ``disagree`` marks a row by the abilities table's rule (one estimate
outside the other's interval, or the intervals apart), without saying
which is right per row; the text says which column is model-free (``MODEL_FREE``),
what the model's number rests on, and which way the two lie at the largest k
over the agents.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from ..data import grade_key
from ._context import _TITLES
from ._context import _Context
from ._context import _Skip
from ._context import most_share
from ._context import population_words
from ._order import in_report_order
from ._order import order_words
from ._report import Report

__all__: list[str] = []

#: fewer tasks than this behind an estimate: flagged
FEW_TASKS = 10
#: up to this many values of k the table shows every one; beyond, k = 1, 2 and the largest
_ALL_K = 4


def _run_counts(ctx: _Context) -> xr.DataArray | None:
    """Runs per (agent, task) from the data, else from the fit's constant data."""
    if ctx.data is not None:
        from ..data import to_counts

        return to_counts(ctx.data)["n_runs"]
    if ctx.fit is not None and "constant_data" in ctx.fit.children:
        cd = ctx.fit["constant_data"].to_dataset()
        if "n_runs" in cd and {"agent", "task"} <= set(cd["n_runs"].dims):
            return cd["n_runs"]
    return None


def _unbiased(ctx: _Context, ks: list[int]) -> pd.DataFrame | None:
    if ctx.data is None:
        return None
    from .. import freq

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # undefined cells are counted in n_tasks below
        fr = freq.pass_hat_k(ctx.data, ks, prob=ctx.prob)
    frame = fr.to_frame()  # once: the table and the checklist's words read it
    df = _str_agents(frame[["estimate", "lower", "upper", "n_tasks", "ci_flag"]])
    df.attrs["ci_detail"] = fr.ci.attrs["ci_detail"]
    df.attrs["ci_words"] = _kinds_used(fr, frame)
    return df


def _kinds_used(fr, frame: pd.DataFrame) -> str:
    """pass_hat_k's interval as the checklist names it: its level and the kinds its cells used, in its own words.

    ``frame``: ``fr.to_frame()``, which the caller has made.
    """
    from .._base import interval_label

    level = interval_label(fr.ci).split(" ")[0]
    kinds = pd.unique(frame["ci_kind"].dropna().astype(str)) if "ci_kind" in frame else []
    said = [str(fr.ci.attrs.get(f"ci_detail_{k.replace('-', '_')}", k)).removeprefix("pass_hat_k: ").split(" (")[0]
            for k in kinds]  # fmt: skip
    return f"{level} " + (" or ".join(said) if said else str(fr.ci.attrs.get("ci_kind", "?")))


def _bayes(ctx: _Context, ks: list[int]) -> tuple[pd.DataFrame | None, str]:
    """The posterior per (agent, k) and what it describes."""
    model = ctx.fit.attrs.get("hierbench_model") if ctx.fit is not None else None
    if model == "crossed":
        from ..metrics import crossed_pass_k

        # each k over its own cells, the tasks run at least k times (min_runs="k"), in one call: the fit's
        # parts are read once, not once per k (the realised draws of k > 1 then follow k = 1's in one stream)
        res = crossed_pass_k(ctx.fit, k=ks, prob=ctx.prob, min_runs="k", realised=True, rng=ctx.rng)
        return _bayes_frame(res), "same tasks"
    if model == "beta_binomial":  # the same cells and the same realised quantity as the crossed model's
        from .. import metrics

        res = metrics.pass_hat_k(ctx.fit, k=ks, prob=ctx.prob, min_runs="k", realised=True, rng=ctx.rng)
        return _bayes_frame(res), "same tasks"
    if ctx.mixed and ctx.mixed_design() is not None:
        from ..metrics import mixed_pass_hat_k

        return _bayes_frame(mixed_pass_hat_k(ctx.fit, ctx.mixed_design(), k=ks, prob=ctx.prob)), "a new task"
    return None, ""


def _mixed_skip(ctx: _Context) -> None:
    """A formula fit whose pass^k the section cannot show: refused, saying why and what to call instead."""
    design = ctx.mixed_design()
    if design is None:
        return
    if design.family == "fractional":
        from ..metrics import mixed_pass_hat_k

        try:  # refused before any draw is read: the metric owns the reason
            mixed_pass_hat_k(ctx.fit, design, k=1)
        except ValueError as exc:
            raise _Skip(f"the formula model is fractional: {exc}") from None
    if design.family == "ordinal":
        raise _Skip(
            f"the formula model grades `{design.response}` on {_scale_text(ctx, design)}: pass^k needs the "
            "lowest grade that counts as a pass, which the report does not choose for you; "
            "hierbench.metrics.graded_pass_hat_k(fit, model, threshold=g, k=...) gives it (pass-at-threshold at k = 1)"
        )
    if design.response != "score":
        raise _Skip(
            f"the formula model describes `{design.response}`, not the data's `score`: its pass^k is "
            "hierbench.metrics.mixed_pass_hat_k(fit, model, k=...), not paired with the score's unbiased estimator"
        )


def _bayes_frame(res) -> pd.DataFrame:
    ds = res if isinstance(res, xr.Dataset) else res.to_dataset()
    est = ds["estimate"] if "estimate" in ds else ds["mean"]
    df = pd.DataFrame(
        {
            "estimate": est.to_series(),
            "lower": ds["ci"].sel(ci_bound="lower", drop=True).to_series(),
            "upper": ds["ci"].sel(ci_bound="upper", drop=True).to_series(),
        }
    )
    if list(df.index.names) != ["agent", "k"]:
        df = df.reorder_levels(["agent", "k"])
    return _str_agents(df)


def _str_agents(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df.index = pd.MultiIndex.from_arrays(
        [df.index.get_level_values("agent").astype(str), df.index.get_level_values("k").astype(int)],
        names=["agent", "k"],
    )
    return df


def _unbiased_flags(unb: pd.DataFrame) -> pd.Series:
    """The estimator's own flag per row (``ci_flag``), and fewer than :data:`FEW_TASKS` tasks."""
    flags = unb["ci_flag"].fillna("").astype(str)
    few = unb["n_tasks"] < FEW_TASKS
    flags[few] = flags[few].where(flags[few] == "", flags[few] + "; ") + f"fewer than {FEW_TASKS} tasks"
    return flags


def _interval_flags(lo: pd.Series, hi: pd.Series, mean: pd.Series | None = None) -> tuple:
    """Clip to [0, 1]; flag clipped and zero-width intervals, and a posterior mean outside its interval.

    A pass^k at large k is a product of small probabilities: a few draws far above the rest can
    carry the mean past the upper end of the equal-tailed interval (METR's GPT-4 0314 at k = 8:
    mean 3e-9, interval [1.5e-23, 5e-10]), which reads as an error unless said.
    """
    flags = pd.Series("", index=lo.index, dtype=object)
    clipped = (lo < 0) | (hi > 1)
    flags[clipped] = "interval clipped to [0, 1]"
    flat = (hi - lo).abs() < 1e-12
    flags[flat] = "interval of zero width"
    if mean is not None:
        out = ((mean > hi) | (mean < lo)) & ~flat
        flags[out] = flags[out].where(flags[out] == "", flags[out] + "; ") + (
            "mean outside the interval: a skewed posterior, a few draws carry the mean")
    return lo.clip(0, 1), hi.clip(0, 1), flags


def unbiased_label(prob: float, bound: str) -> str:
    """The column name of the unbiased estimator's interval end: its level and kind (the report's and the demo's)."""
    return f"unbiased {prob:.0%} {bound} (new tasks; logit t or bound)"


def unbiased_interval(res) -> pd.DataFrame:
    """:func:`hierbench.freq.pass_hat_k`'s interval per (agent, k), its columns named by ``unbiased_label``.

    The level is the result's own (``ci_prob``); the interval is the
    estimator's (a logit t interval, or a distribution-free bound where
    every per-task value is 0 or 1 or few tasks carry the mean), not recomputed.
    """
    prob = float(res.ci.attrs["ci_prob"])
    df = _str_agents(res.to_frame()[["lower", "upper"]])
    return df.set_axis([unbiased_label(prob, b) for b in ("lower", "upper")], axis=1)


def passk_table(unb: pd.DataFrame | None, bay: pd.DataFrame | None, what: str, prob: float):
    """One row per (agent, k): tasks used, each estimate with its interval, and the flags."""
    level = f"{prob:.0%}"
    parts = {}
    flags = []
    if unb is not None:
        fl = _unbiased_flags(unb)
        parts |= {
            "tasks (>= k runs)": unb["n_tasks"].astype(int),
            "unbiased": unb["estimate"],
            unbiased_label(prob, "lower"): unb["lower"],
            unbiased_label(prob, "upper"): unb["upper"],
        }
        flags.append(fl.where(fl == "", "unbiased: " + fl))
    if bay is not None:
        label = "Bayes (same tasks)" if what == "same tasks" else "Bayes (a new task)"
        lo, hi, fl = _interval_flags(bay["lower"], bay["upper"], bay["estimate"])
        parts |= {label: bay["estimate"], f"{label} {level} lower": lo, f"{label} {level} upper": hi}
        flags.append(fl.where(fl == "", "Bayes: " + fl))
    table = pd.DataFrame(parts)
    note = pd.concat(flags, axis=1).reindex(table.index).fillna("") if flags else None
    if unb is not None and bay is not None and what == "same tasks":  # one quantity: the two can be judged
        table["disagree"] = _apart(unb, bay.assign(lower=lo, upper=hi)).reindex(table.index)  # NA: not judged
    table["flag"] = note.apply(lambda r: "; ".join(x for x in r if x), axis=1) if note is not None else ""
    return table


#: whose interval a pass^k flag is about, by the words before its first colon
_WHOSE = {"unbiased": "the unbiased estimator's interval", "Bayes": "the posterior interval"}


def note_letters(flags: pd.Series) -> tuple[pd.Series, list[str]]:
    """Each row's flags (``"; "``-joined) as letters, and each letter's words, in order of first use.

    The pass^k table's flags repeated a 75-character note in most rows (the demo's table ran to 300
    characters); a letter per note, its words once, says the same. ``"unbiased: x"`` reads
    ``"a (the unbiased estimator's interval): x"``.
    """
    parts, letter = _letters(flags)
    words = []
    for n in letter:
        who, _, what = n.partition(": ")
        words.append(f"{letter[n]} ({_WHOSE[who]}): {what}" if who in _WHOSE and what else f"{letter[n]}: {n}")
    return pd.Series([",".join(letter[p] for p in row) for row in parts], index=flags.index), words


def _letters(flags: pd.Series) -> tuple[list[list[str]], dict[str, str]]:
    """Each row's notes, and each note's letter in order of first use (``note_letters``' one rule)."""
    parts = [[p for p in str(f).split("; ") if p] for f in flags.fillna("")]
    notes = list(dict.fromkeys(p for row in parts for p in row))
    return parts, {n: "abcdefghijklmnopqrstuvwxyz"[i] if i < 26 else str(i + 1) for i, n in enumerate(notes)}


def letter_of(flags: pd.Series, note: str) -> str | None:
    """The letter :func:`note_letters` gives ``note`` among ``flags`` (None where no row carries it).

    ``note`` matches a flag that is ``note`` itself or ``note`` after whose interval it is about
    (``"unbiased: <note>"``, ``"Bayes: <note>"``); the first such flag's letter is returned.
    """
    for n, a in _letters(flags)[1].items():
        who, _, what = n.partition(": ")
        if n == note or (who in _WHOSE and what == note):
            return a
    return None


def _apart(unb: pd.DataFrame, bay: pd.DataFrame) -> pd.Series:
    """The abilities table's ``disagree`` rule (its one owner) on the two pass^k estimates of each row.

    An unbiased estimate of exactly 0 or 1 (every task's count at the boundary) is left out of the
    rule, so that row is judged by the intervals and the posterior mean alone: the model's pass^k is
    never exactly 0 or 1, so its interval never holds that value, whatever the data.
    """
    from ._flags import _disagree

    kind = "unbiased"  # the rule reads the frequentist side as ``bootstrap <kind>``
    inside = (unb["estimate"] > 0) & (unb["estimate"] < 1)
    sides = {f"bootstrap {kind}": unb.assign(estimate=unb["estimate"].where(inside)), "Bayes ETI": bay}
    wide = pd.concat({f"{m} {b}": df[b] for m, df in sides.items() for b in ("estimate", "lower", "upper")}, axis=1)
    return _disagree(wide, kind)


def _scale_text(ctx: _Context, design) -> str:
    """A graded design's scale as the pass^k note names it: the numbers, with the labels they stand for."""
    labels = ctx.grade_labels() if design.response == "score" else None
    if not labels:
        return grade_key(design.categories, None)
    return f"{grade_key(design.categories, labels)} (the threshold g is the grade's number)"


def _sec_passk(ctx: _Context, rep: Report, sid: str) -> None:
    from . import _figures as F

    _mixed_skip(ctx)
    if ctx.data is not None and not ctx.binary():
        raise _Skip("pass^k needs binary scores (0 or 1); these scores are not binary")
    n = _run_counts(ctx)
    if n is None:
        raise _Skip("needs data with binary scores or a crossed / beta-binomial fit")
    r_max = int(n.max())
    if r_max < 2:
        raise _Skip(
            "every agent x task cell holds one run: pass^1 is the mean score (see Agent abilities) "
            "and pass^k for k >= 2 needs k runs of a task, which these data do not have"
        )
    ks = list(range(1, min(r_max, K_MAX) + 1))
    unb, (bay, what) = _unbiased(ctx, ks), _bayes(ctx, ks)
    if unb is not None:  # the checklist names it (its level and kinds, from the result)
        ctx.cache["passk_interval"] = unb.attrs["ci_words"]
    if unb is None and bay is None:
        raise _Skip("needs data with binary scores or a crossed / beta-binomial fit")
    # every k while that is a short table (tau-bench publishes pass^1..4); beyond, the ends and k = 2
    show = ks if len(ks) <= _ALL_K else sorted({1, 2, ks[-1]})
    unb, bay = (None if t is None else in_report_order(t, ctx) for t in (unb, bay))  # the legend's order too
    table = in_report_order(passk_table(unb, bay, what, ctx.prob), ctx)
    if bay is not None:  # a separated agent's posterior pass^k is its prior's (the fit's note)
        from ._flags import _add_flag
        from ._flags import separated_flags

        table["flag"] = _add_flag(table["flag"], separated_flags(ctx, table.index, number="posterior pass^k"))
    if "tasks (>= k runs)" not in table:  # a fit alone: the counts from its constant data, as the text says
        table.insert(0, "tasks (>= k runs)", _tasks_per_k(n, table.index))
    table = table[table.index.get_level_values("k").isin(show)]
    text, sep, rest = _passk_text(ctx, what, None if unb is None else unb.attrs["ci_detail"], show).partition("\n\n")
    if r_max > ks[-1]:  # the figure stops at k = 8: said, not left for the reader to infer
        text += f" k stops at {ks[-1]}; the busiest cells hold {r_max} runs."
    if "tasks (>= k runs)" in table:
        none = table["tasks (>= k runs)"] == 0
        if none.any():  # nothing to estimate there: said, not shown as empty cells
            text += " No task was run k times by: " + "; ".join(
                f"{a} (k = {k})" for a, k in table.index[none]
            ) + "."
            table = table[~none]
    text += f" Rows: {order_words(ctx)}."
    text += sep + rest  # the first paragraph says which rows and k the table shows; then the intervals
    if shrinking := shrinking_tasks_note(table):
        text += "\n\n" + shrinking
    if "disagree" in table:
        model = ctx.fit.attrs.get("hierbench_model")
        text += "\n\n" + _disagree_text(table, model).lstrip() + _all_pass_lean(ctx, model)
    if "flag" in table:  # a letter per note, its words in the text; `note` whether or not a row has one, as the
        letters, words = note_letters(table["flag"])  # text names it (a table of no notes headed it `flag`)
        table = table.drop(columns="flag").assign(note=letters)
        if words:
            text += "\n\n`note` marks a row's interval notes by letter: " + "; ".join(words) + "."
    rep.section(_TITLES[sid], text, table=table, id=sid, flag="disagree" if "disagree" in table else None)
    bands = bay if bay is not None and what == "same tasks" else None
    fig = F.passk_curves(
        bands,
        None if unb is None else unb[["estimate", "lower", "upper"]],
        prob=ctx.prob,
        title="pass^k: all k attempts succeed, over the tasks run at least k times",
    )
    # what the figure draws (it said "bands" where none were drawn: a log alone, or a new task's pass^k)
    drawn = (f"posterior {ctx.prob:.0%} bands" + ("; points: the unbiased estimates" if unb is not None else "")
             if bands is not None else f"the unbiased estimates with their {ctx.prob:.0%} intervals as bars")
    rep.figure("passk_curves", fig, f"pass^k against k per agent ({drawn}).")


def shrinking_tasks_note(table: pd.DataFrame, most: int = 4) -> str:
    """Where an agent's pass^k rows average over fewer tasks as k grows, say what that does ("" where none).

    ``table`` has a ``tasks (>= k runs)`` column and the agent first in its index (the report's
    rows by (agent, k), the demo's by agent). METR binarised: the human's pass^k fell from 0.825
    over 83 tasks to 0.129 over 8 at k = 4, and GPT-4 0314's rose from k = 4 to 5; only the tasks
    column hinted that the rows stand on different tasks.
    """
    if "tasks (>= k runs)" not in table:
        return ""
    counts = table["tasks (>= k runs)"].groupby(level=0, sort=False)
    # the largest share lost first: METR's human (83 tasks to 8) before an agent that loses one
    lost = {str(a): 1 - c.min() / c.max() for a, c in counts if c.nunique() > 1}
    shrink = sorted(lost, key=lambda a: -lost[a])
    if not shrink:
        return ""
    more = f" and {len(shrink) - most} more" if len(shrink) > most else ""
    return (
        "Each row averages over the tasks the agent ran at least k times, fewer as k grows for "
        f"{', '.join(shrink[:most])}{more}: their pass^k at different k are over different tasks, so a value "
        "that rises with k, or falls steeply, can come from which tasks remain rather than from reliability "
        "(agents named by the share of their tasks lost, the largest first). "
        "To compare k on one task set, keep the tasks each agent ran at least K times (the largest k wanted) "
        "before hierbench.freq.pass_hat_k."
    )


def _tasks_per_k(n: xr.DataArray, index: pd.MultiIndex) -> list[int]:
    """Per (agent, k) row: the tasks the agent ran at least k times, from the runs per cell ``n``."""
    n = n.transpose("agent", "task")
    per = {str(a): n.sel(agent=a).values for a in n["agent"].values}
    return [int((per[a] >= k).sum()) for a, k in index]


#: which of the two pass^k columns assumes no model: the one owner of these words (every model's text says it)
MODEL_FREE = "the unbiased column is the model-free one"


def _disagree_text(table: pd.DataFrame, model: str | None = None) -> str:
    """What `disagree` marks, counted; why the two can part; which column is model-free; their side at the largest k.

    ``model``: the fit's ``hierbench_model``, naming the population of task rates its pass^k rests on.
    """
    pop = population_words(model).shape
    rests = (f", while the {model} model's number rests on its population of task rates ({pop}), toward which it "
             "pulls every cell" if pop else ", while the model's number rests on the model")  # fmt: skip
    return (
        " `disagree` marks a row where one method's estimate lies outside the other's interval, or the "
        f"two intervals do not overlap (judged where both are defined, `undefined` elsewhere): "
        f"{int(table['disagree'].sum())} of "
        f"{len(table)} rows (a row with an unbiased 0 or 1, which no posterior interval holds, is judged by the "
        "intervals alone). The two can part for known reasons: the model pools the tasks and pulls each "
        "cell toward the population, most where a cell has few runs; the unbiased estimator is each cell's "
        "own and noisy where a cell holds few runs beyond k; its interval is a bound where few tasks carry the "
        "mean (or, near 1, the failures). The flag does not say which is right, but the two rest on different "
        f"things: {MODEL_FREE} (each cell's C(c,k)/C(n,k), unbiased for that task's own p^k whatever the tasks' "
        f"rates){rests}." + _shared_direction(table)
    )


def _shared_direction(table: pd.DataFrame) -> str:
    """Which way the posterior mean lies from the unbiased estimate at the table's largest k, counted over agents.

    Agents whose unbiased estimate is 0 or 1 are left out (the model's pass^k never reaches
    either, so its side there is foregone), as are ties. Where at least 3 in 4 of the agents lie
    on one side and a two-sided sign test is below 0.05 (the abilities' rule for a shift most
    agents share, ``_context.most_share``), the shift is said to be the model's. Audit B
    (s71), finding 2: on METR the posterior lay below for 6 of the 7 agents at k = 8, each
    inside its interval, so "0 of 29 rows" disagreed.
    """
    k = int(table.index.get_level_values("k").max())
    at = table[table.index.get_level_values("k") == k]
    bay = [c for c in at.columns if c.startswith("Bayes (") and c.endswith(")")]
    if not bay or "unbiased" not in at:
        return ""
    u, b = pd.to_numeric(at["unbiased"], errors="coerce"), pd.to_numeric(at[bay[0]], errors="coerce")
    ok = (u > 0) & (u < 1) & b.notna() & (b != u)
    if not ok.any():
        return ""
    agents = at.index.get_level_values("agent")[ok.values]
    below, n = int((b[ok] < u[ok]).sum()), int(ok.sum())
    side = "below" if 2 * below >= n else "above"
    count = below if side == "below" else n - below
    if n <= 3:
        said = "; ".join(f"{a}: {y:.3f} against {x:.3f}" for a, x, y in zip(agents, u[ok], b[ok], strict=True))
        text = f" At k = {k}, the largest shown, the posterior mean against the unbiased estimate: {said}."
    else:
        text = (f" At k = {k}, the largest shown, the posterior mean lies {side} the unbiased estimate for {count} "
                f"of {n} agents")  # fmt: skip
        text += (f" (the {len(at) - n} other{'s' if len(at) - n > 1 else ''} left out: an unbiased 0 or 1, which the model's pass^k never reaches, "
                 "or a tie, or no value)." if len(at) > n else ".")  # fmt: skip
    if most_share(count, n):
        text += (f" A side most agents share is not chance between two estimates of these tasks' pass^k: it is the "
                 f"model's, and there {MODEL_FREE}.")  # fmt: skip
    return text


def _all_pass_share(ctx: _Context) -> float:
    """The share of the agent x task cells with two or more runs that passed every run (0 without data)."""
    if ctx.data is None:
        return 0.0
    from ..data import to_counts

    c = to_counts(ctx.data)
    cells = c["n_runs"] >= 2
    return float(((c["n_success"] == c["n_runs"]) & cells).sum() / max(int(cells.sum()), 1))


#: how each model's population of task rates leans where many cells passed every run, the simulation behind it
#: (said in full on its own design), and its bias in short (said as another design's elsewhere)
_ALL_PASS_LEAN = {
    # audit K, finding 5: 3 x 40 replicates from tau-bench airline's task rates
    "beta_binomial": ("at exactly 1", " (in simulations from tau-bench's airline task rates, a bias of about -0.012 "
                      "at k = 4, the unbiased estimator's about 0): where the two part that way", "about -0.012"),
    # audit B (s71), finding 2: 400 data sets, the default crossed model
    "crossed": ("near 1", ": in simulations from tau-bench's airline task rates (400 data sets, 4 runs per task) a "
                "bias of -0.014 +- 0.001 at k = 4 (6% of the true 0.239), the unbiased estimator's +0.001, while "
                "the posterior interval still covered 0.95 to 0.98 of the time. Where the two part that way",
                "-0.014 (6%)"),
}  # fmt: skip
#: the largest k the section shows (up to the most runs of a cell)
K_MAX = 8
#: the design those simulations drew: this many runs in every cell run, k up to it
_SIMULATED_RUNS = 4


def _simulated_design(ctx: _Context) -> tuple[bool, str]:
    """Whether the log's design is the simulations' (the same few runs in every cell run, k up to 4), and its words.

    Audit A s17: METR's report (k to 8, 1 to 96 runs per cell) quoted the tau-bench simulation's bias
    and coverage as if they held there. ``(True, "")`` where they do; else ``(False, "k up to 8 on 1 to
    96 runs per cell")``.
    """
    n = _run_counts(ctx)
    if n is None:
        return False, "a design not known here"
    runs = np.asarray(n.values, float)
    runs = runs[np.isfinite(runs) & (runs > 0)]
    lo, hi = int(runs.min()), int(runs.max())
    if lo == hi and 2 <= hi <= _SIMULATED_RUNS:
        return True, ""
    return False, f"k up to {min(hi, K_MAX)} on {lo}{'' if lo == hi else f' to {hi}'} run{'s' if hi > 1 else ''} per cell"


def _all_pass_text(ctx: _Context) -> str:
    """``_all_pass_lean`` for a beta-binomial fit ("" for any other)."""
    return _all_pass_lean(ctx, "beta_binomial")


def _crossed_all_pass_text(ctx: _Context) -> str:
    """``_all_pass_lean`` for a crossed fit ("" for any other)."""
    return _all_pass_lean(ctx, "crossed")


def _all_pass_lean(ctx: _Context, model: str | None) -> str:
    """Where many cells passed every run: which way ``model``'s population of task rates leans at large k ("" else).

    ``""`` unless the fit is of ``model`` and ``model`` has such a population (``_ALL_PASS_LEAN``);
    the one builder for both, ending with ``MODEL_FREE``. Audit K, finding 5: a beta (the beta-binomial's population) puts little mass at
    exactly 1, so it pulls always-solved tasks off 1 and pass^k at large k, which rests on them, below
    the unbiased estimate. On tau-bench's airline log 0.170 against the published 0.200 at k = 4; in
    simulations from that log's own task rates (3 x 40 replicates) a bias of -0.011 to -0.013 at k = 4
    against the unbiased estimator's -0.001 to +0.003, the realised interval still covering (116 of 120).

    Audit B (s71), finding 2, the crossed model's normal logit population leans the same way: seeded
    simulation, 400 data sets from tau-bench airline's own task rates c / 4 (14 tasks at 0, 10 at 1),
    4 runs per task, the default crossed model (2 chains x 500 draws), target these tasks' own pass^k:
    posterior-mean bias +0.0026 at k = 1, -0.0053 at k = 3, -0.0136 +- 0.0012 at k = 4 (-5.7% of
    0.239); the unbiased estimator's +0.0008 to +0.0021 (+- 0.0012); the posterior interval covering
    0.95 to 0.98. On the log itself 0.172 against the published 0.200 at k = 4.
    """
    if ctx.fit is None or ctx.fit.attrs.get("hierbench_model") != model or model not in _ALL_PASS_LEAN:
        return ""
    share = _all_pass_share(ctx)
    if share < 0.1:
        return ""
    mass, sims, bias = _ALL_PASS_LEAN[model]
    same, design = _simulated_design(ctx)
    if not same:  # another design's numbers size nothing here: said as where they come from, not as this log's
        sims = (f" (simulations back this only for another design, tau-bench's airline task rates with "
                f"{_SIMULATED_RUNS} runs in every task, where the bias at k = {_SIMULATED_RUNS} was {bias}; this log's "
                f"{design} is not covered by them, so they give neither the size of the pull nor the interval's "
                "coverage here): where the two part that way")  # fmt: skip
    return (f" Here {share:.0%} of the agent x task cells with two or more runs passed every run. The "
            f"{model.replace('_', '-')} model's {population_words(model).short} puts little mass {mass}, so it "
            "pulls such tasks below 1 and its pass^k at large k, which rests on them, below the unbiased "
            f"estimate{sims}, {MODEL_FREE}.")


def _passk_text(ctx: _Context, what: str, unbiased_ci: str | None, show: list[int]) -> str:
    text = (
        "pass^k is the chance that k independent attempts at a task all succeed, averaged over "
        "tasks (tau-bench's reliability metric). For each k every estimate averages the same "
        "tasks: those the agent ran at least k times (the column `tasks (>= k runs)`), the only "
        "tasks where the unbiased estimator C(c,k)/C(n,k) exists."
    )
    if what == "same tasks":
        text += (
            f" The {ctx.fit.attrs.get('hierbench_model')} model's posterior mean and {ctx.prob:.0%} equal-tailed interval are of "
            "these tasks' own pass^k (each task's success probability drawn from its posterior)."
        )
    elif what:
        text += (
            f" The {ctx.fit.attrs.get('hierbench_model')} model's posterior describes a new task from the "
            "population, not these tasks: its columns are a different quantity and are not paired with the "
            "unbiased one."
        )
    if ctx.mixed and what:
        text += (
            " For the formula model (hierbench.metrics.mixed_pass_hat_k) each agent's effects are held at "
            "their draws and the task effects its k attempts share are integrated out once, averaged over "
            "the covariates of the agent's own rows."
        )
    text += f" The table shows k = {', '.join(map(str, show))}; the figure every k from 1 to {show[-1]}."
    if unbiased_ci is not None:
        text += (
            f"\n\nThe unbiased estimate is of these tasks' pass^k{' too' if what == 'same tasks' else ''} "
            "(each cell's C(c,k)/C(n,k) is unbiased for "
            "its own p^k), but its interval takes the tasks as a sample: it is for a new draw of tasks from the "
            "same population, so it is wider than an interval for these tasks (the columns say `new tasks`)."
            f" That interval, as it states it: {unbiased_ci.split(': ', 1)[-1]}. "
            f"`note` repeats that per-cell note and marks fewer than {FEW_TASKS} tasks"
            # a posterior's interval only where the table has one (a log alone has no posterior)
            + (", and a posterior interval clipped to [0, 1] or of zero width, each by a letter." if what
               else ", by a letter.")
        ) + (("\n\n" + cl.lstrip()) if (cl := _cluster_note(ctx)) else "")
    return text


def cluster_design_effect_k1(data: xr.Dataset) -> tuple[float, int, str] | None:
    """How much more an agent's pass^1 (mean per task) varies over the task clusters than over tasks.

    Per agent, over the tasks it ran, with ``e`` the per-task means less their mean and ``n`` their
    number: the cluster-robust variance of the mean ``sum_g (sum_{t in g} e_t)^2 / n^2`` against
    ``sum_t e_t^2 / n^2`` (no small-sample corrections: singleton clusters give 1). Returns the
    median ratio over the agents where both are positive, the number of clusters and their name;
    None without clusters (or with every task its own).
    """
    from .._base import cluster_codes
    from .._base import cluster_label
    from ..data import to_counts

    codes = cluster_codes(data)
    if codes is None or len(codes[1]) == int(data.sizes["task"]):
        return None
    c = to_counts(data)
    rate = (c["n_success"] / c["n_runs"]).where(c["n_runs"] > 0).transpose("agent", "task").values
    ratios = []
    for row in rate:
        ok = np.isfinite(row)
        e = row[ok] - row[ok].mean()
        v_iid = float(np.sum(e**2))
        if ok.sum() >= 2 and v_iid > 0:
            ratios.append(float(np.sum(np.bincount(codes[0][ok], weights=e) ** 2)) / v_iid)
    if not ratios:
        return None
    return float(np.median(ratios)), len(codes[1]), cluster_label(data)


def _cluster_note(ctx: _Context) -> str:
    """Where tasks come in clusters: the unbiased interval takes them as its unit, and how much that widens it.

    The even-clusters flag on a kept t interval is not described here: its one definition is the
    estimator's ``ci_flag`` (``_logit_t.EVEN_CLUSTERS_FLAG``), which the `note` legend quotes. This
    text said "where few clusters but not few tasks carry the mean", the opposite of its rule
    (audit U, finding 2; the rule is now the cluster-robust variance of the mean below half that of
    independent tasks, audit T, finding 1).
    """
    deff = None if ctx.data is None else cluster_design_effect_k1(ctx.data)
    if deff is None:
        return ""
    ratio, k, name = deff
    return (
        f" This log's tasks come in {k} clusters (`{name}`), which that interval takes as its unit, as the "
        "agents' bootstrap and the paired tests do: where a cluster's tasks succeed or fail together an "
        "interval taking tasks one by one would be narrower than its level allows. At k = 1 an agent's mean "
        f"varies {ratio:.2f} times as much over the clusters as over independent tasks (median over agents; "
        "cluster-robust against independent-task variance, no model). Where it is the bound (no success, or "
        "few tasks carry the mean or its failures) that bound is over the clusters, wide when they differ in size; "
        "elsewhere it is the t interval, and `note` quotes the estimator's own flag where that interval is at risk."
    )
