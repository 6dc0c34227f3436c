"""The variance-components section: the crossed fit's and G-theory's components, row for row.

Both halves name their components by G-theory's facets (``task:cluster``,
``agent:cluster``, ``agent:task:cluster`` when tasks sit in clusters); a
crossed fit without an agent x cluster effect (``agent_cluster=False``, or
saved before it existed) folds it into its agent x task effect, and the two
rows are then one. :data:`COMPONENT_ROWS` is the one
place the rows are defined: each row of the table sums the components of
either half listed for it, and says which it summed. Where the two halves'
terms for a row differ the row is flagged as not one component (never
called the same); where they agree, a G-theory estimate outside the Bayes
interval is marked ``disagree``, without saying which is right (the
abilities table's rule). A component the fitted model
does not have is never shown on its own: with one run per cell, or a fit
without an agent x task effect, agent x task and run-to-run variation are
one row. With one agent the agent row is undefined (NaN with its reason,
never 0) and agent x task is inside the task row (one agent with one run per
task: inside run-to-run too), by the rules of
:func:`hierbench.metrics.unidentified_components`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .._base import fit_record
from ..data import grade_key
from ._context import _TITLES
from ._context import _Context
from ._context import _Skip
from ._context import g_interval
from ._report import Report
from ._report import judged

__all__ = ["COMPONENT_ROWS"]

#: row -> the components (of either half, by the names both use) summed into it
COMPONENT_ROWS: dict[str, tuple[str, ...]] = {
    "agent": ("agent",),
    "task": ("task", "cluster", "task:cluster"),
    "agent x cluster": ("agent:cluster",),
    "agent x task": ("agent:task", "agent:task:cluster"),
    "run-to-run": ("residual",),
}


def _merge_reason(ctx: _Context) -> str | None:
    """Why the fitted model shows agent x task inside run-to-run, beyond the design's rules (None: it does not)."""
    if ctx.fit is not None:
        s = fit_record(ctx.fit, "hierbench_structure")
        choice = s.get("decisions", {}).get("agent_task", {}).get("choice")
        if choice == "none":
            return "the fitted model has no agent x task effect (agent_task='none')"
    return None


def _cluster_merge_reason(ctx: _Context) -> str | None:
    """Why agent x cluster is inside the agent x task row: the crossed fit has no such effect (None: it has)."""
    if ctx.fit is None or ctx.fit.attrs.get("hierbench_model") != "crossed":
        return None
    if ctx.data is None or "cluster" not in ctx.data.coords or ctx.data.sizes.get("agent", 0) < 2:
        return None  # no G-theory agent:cluster to set beside it
    options = fit_record(ctx.fit, "hierbench_spec").get("options", {})
    if options.get("agent_cluster", False):
        return None
    if not options.get("clusters"):
        why = "it was fitted without clusters"
    else:  # a fit saved before the option existed does not name it
        why = "agent_cluster=False" if "agent_cluster" in options else "it was saved before the term existed"
    return f"the fitted crossed model has no agent x cluster effect ({why}), so its agent x task effect holds that variation"


def _runs_per_cell(data: xr.Dataset) -> np.ndarray:
    from ..data import to_counts

    return to_counts(data)["n_runs"].values


def _run_counts(ctx: _Context) -> np.ndarray | None:
    """Runs per (agent, task) cell: the data's, else the fit's (None when neither holds them)."""
    if ctx.data is not None:
        return _runs_per_cell(ctx.data)
    if ctx.fit is not None and "constant_data" in ctx.fit.children and "n_runs" in ctx.fit["constant_data"]:
        return ctx.fit["constant_data"]["n_runs"].values
    return None


def _layout(ctx: _Context) -> tuple[dict[str, tuple[str, ...]], list[str], dict[str, str]]:
    """The rows, a sentence for each pair of rows shown as one, and the undefined rows' reasons.

    The design's rules are :func:`hierbench.metrics.unidentified_components`
    (one run per cell: agent x task is inside run-to-run; one agent: inside
    the task row, and the agent row is undefined; one agent with one run per
    task: the task row is inside run-to-run too); agent x task also joins
    run-to-run when the fitted model has none (:func:`_merge_reason`).
    """
    from ..metrics import unidentified_components

    rules = {} if (n := _run_counts(ctx)) is None else unidentified_components(n)
    why, into = rules.get("agent:task", (_merge_reason(ctx), "residual"))
    row = next(r for r, names in COMPONENT_ROWS.items() if into in names)
    merges = [("agent x cluster", "agent x task", w)] if (w := _cluster_merge_reason(ctx)) else []
    merges += [("agent x task", row, why)] if why else []
    merges += [("task", "run-to-run", rules["task"][0])] if "task" in rules else []
    said = [f"{a[0].upper() + a[1:]} and {b} variation are one row: {w}." for a, b, w in merges]
    undefined = {"agent": rules["agent"][0]} if "agent" in rules else {}
    return _rows([(a, b) for a, b, _ in merges]), said, undefined


def _rows(merges: list[tuple[str, str]] | tuple = ()) -> dict[str, tuple[str, ...]]:
    """:data:`COMPONENT_ROWS` with each ``(row, into)`` shown as one row (named by both, in order)."""
    groups = [[k] for k in COMPONENT_ROWS]
    for a, b in merges:
        ga = next(g for g in groups if a in g)
        gb = next(g for g in groups if b in g)
        if ga is not gb:
            gb += ga
            groups.remove(ga)
    order = list(COMPONENT_ROWS)
    out = {}
    for g in sorted(groups, key=lambda g: min(order.index(k) for k in g)):
        keys = sorted(g, key=order.index)
        out[" + ".join(keys)] = tuple(c for k in keys for c in COMPONENT_ROWS[k])
    return out


def _note_unshown(ctx: _Context, half: str, comps: list[str], rows: dict) -> None:
    """A component no row sums is said, never dropped from the reader's sight in silence."""
    shown = {n for names in rows.values() for n in names}
    missing = [c for c in comps if c not in shown]
    if missing:
        ctx.warnings.append(f"variance components: {half} components {missing} fit no row of the table")


def _bayes_part(ctx: _Context, rows: dict) -> pd.DataFrame | None:
    if ctx.fit is None or ctx.fit.attrs.get("hierbench_model") != "crossed":
        return None
    from ..metrics import crossed_variance_components

    res = crossed_variance_components(ctx.fit, scale="probability")
    vc = res.draws
    comps = [str(c) for c in vc["component"].values]
    _note_unshown(ctx, "Bayes", comps, rows)
    # an undefined component's identified share is in the component that holds it (its note)
    undefined = {str(c) for c, v in res.note.to_series().items() if str(v).startswith("undefined")}
    q = [(1 - ctx.prob) / 2, (1 + ctx.prob) / 2]
    out = {}
    for row, names in rows.items():
        have = [n for n in names if n in comps and n not in undefined]
        if not have:
            continue
        draws = vc.sel(component=have).sum("component")
        lo, hi = (float(v) for v in draws.quantile(q, dim=("chain", "draw")).values)
        below = float((draws < 0).mean())
        out[row] = {"Bayes estimate": max(float(draws.mean()), 0.0), "Bayes lower": max(lo, 0.0),
                    "Bayes upper": max(hi, 0.0), "Bayes terms": " + ".join(have),
                    "flag": f"Bayes: {below:.0%} of draws below 0 (a difference of variances), "
                    "clipped at 0" if lo < 0 else ""}  # fmt: skip
    return pd.DataFrame.from_dict(out, orient="index")


def _gtheory_part(ctx: _Context, rows: dict) -> tuple[pd.DataFrame | None, str]:
    if ctx.data is None:
        return None, ""
    g = ctx.gtheory()
    comp = (g.components if hasattr(g, "components") else g.estimate).to_series()
    comp.index = comp.index.astype(str)
    label = f"G-theory ({getattr(g, 'method', 'ANOVA')})"
    _note_unshown(ctx, "G-theory", list(comp.index), rows)
    terms = {row: [n for n in names if n in comp.index] for row, names in rows.items()}
    ci = g_interval(g, ctx.prob, [have[0] for have in terms.values() if len(have) == 1])
    out = {}
    for row, have in terms.items():
        if have:
            out[row] = {label: float(comp[have].sum())}
            if len(have) == 1:  # a component's own interval; a sum of several has none
                lo, hi = (float(ci.sel(component=have[0], ci_bound=b)) for b in ("lower", "upper"))
                out[row] |= {"G-theory lower": lo, "G-theory upper": hi}
            out[row]["G-theory terms"] = " + ".join(have)
    given = " (given in `freq['variance']`, with the design it was computed with)" if ctx.given("variance") else ""
    said = (f"{label}, design {g.formula}{given}; its {float(ci.attrs['ci_prob']):.0%} intervals ({ci.attrs['ci_detail']}) "
            "are per component, so a row summing several components has none")  # fmt: skip
    return pd.DataFrame.from_dict(out, orient="index"), said


def _table(parts: list[pd.DataFrame], rows: dict, undefined: dict[str, str]) -> pd.DataFrame:
    """Both halves side by side; a row the design leaves undefined is shown as NaN with its reason."""
    show = [r for r in rows if r in undefined or any(r in p.index for p in parts)]
    table = pd.concat(parts, axis=1).reindex(show)
    flag = table["flag"].fillna("") if "flag" in table else pd.Series("", index=table.index)
    for row, why in undefined.items():
        flag[row] = f"undefined: {why}"
    table["flag"] = flag
    for col in [c for c in table.columns if str(c).endswith("terms")]:
        table.loc[list(undefined), col] = ""  # an undefined row sums no terms (it read "NaN")
    summed = pd.Series(False, index=table.index)
    if "G-theory lower" in table:  # an end a sum of components has not: said in words, and why
        from ._flags import _add_flag

        summed = table["G-theory terms"].fillna("").str.contains(" + ", regex=False) & table["G-theory lower"].isna()
        table["flag"] = _add_flag(table["flag"].astype(str), pd.Series(
            np.where(summed, "G-theory interval: none for a sum of components (its intervals are per component)", ""),
            index=table.index))  # fmt: skip
    table.index.name = "component"
    table = _agreement(table)
    for end in ("G-theory lower", "G-theory upper"):
        if end in table:  # judged above as numbers; shown in words where not a finite number, never NaN
            v = pd.to_numeric(table[end], errors="coerce")
            words = np.where(summed, "none", np.where(v == np.inf, "unbounded", "undefined"))
            table[end] = table[end].astype(object).where(np.isfinite(v) | table[_g_col(table)].isna(), words)
    return table


def _g_col(table: pd.DataFrame) -> str:
    """The G-theory estimate's column (its name carries the method: ``G-theory (reml)``)."""
    return next(c for c in table.columns if str(c).startswith("G-theory ("))


def _agreement(table: pd.DataFrame) -> pd.DataFrame:
    """Where the halves' rows are not one component (other terms), or the two methods part.

    Judged only where both halves sum the same terms. With a G-theory interval the abilities
    table's rule (one estimate outside the other's interval, or the intervals apart); a G-theory
    estimate at 0 (REML stops at the boundary, which no Bayes interval of a variance reaches) is
    left out of that rule, so its row is judged by the intervals and the Bayes estimate. Without
    one (a sum of components) the G-theory estimate against the Bayes interval, the boundary not judged.
    """
    from ._flags import _add_flag

    g = [c for c in table.columns if str(c).startswith("G-theory (")]
    if not g or "Bayes terms" not in table:
        return table
    bt, gt = (table[c].fillna("").astype(str) for c in ("Bayes terms", "G-theory terms"))
    other = (bt != "") & (gt != "") & (bt != gt)
    est, lo, hi = (pd.to_numeric(table[c], errors="coerce") for c in (g[0], "Bayes lower", "Bayes upper"))
    glo, ghi = (pd.to_numeric(table[f"G-theory {b}"], errors="coerce") if f"G-theory {b}" in table
                else pd.Series(np.nan, index=table.index) for b in ("lower", "upper"))  # fmt: skip
    at0 = ~other & (est == 0) & lo.notna() & (lo > 0)
    boundary = at0 & ~(glo.notna() & ghi.notna())  # nothing to judge it by
    # a row not judged (other terms, the boundary, a half or the interval missing) is undefined, not "no"
    alone = judged((est < lo) | (est > hi), ~other & ~boundary & est.notna() & lo.notna() & hi.notna())
    table["disagree"] = alone.where(glo.isna() | ghi.isna() | other, _apart(table, est.where(~at0), glo, ghi))
    notes = pd.Series("", index=table.index, dtype=object)
    notes[boundary] = "G-theory at 0, the boundary, which no Bayes interval of a variance reaches: not judged"
    notes[at0 & ~boundary] = ("G-theory at 0, the boundary, which no Bayes interval of a variance reaches: "
                              "judged by the intervals and the Bayes estimate")  # fmt: skip
    notes[other] = "not one component: Bayes sums " + bt[other] + ", G-theory " + gt[other] + ": not judged"
    dis = table["disagree"].fillna(False).astype(bool)
    notes[dis & (glo.isna() | ghi.isna())] = "G-theory estimate outside the Bayes interval"
    notes[dis & glo.notna() & ghi.notna()] = "an estimate outside the other method's interval, or the intervals apart"
    table["flag"] = _add_flag(table["flag"].astype(str), notes)
    return table[[c for c in table.columns if c not in ("flag", "disagree")] + ["disagree", "flag"]]


def _apart(table: pd.DataFrame, est: pd.Series, glo: pd.Series, ghi: pd.Series) -> pd.Series:
    """The abilities table's ``disagree`` rule (its one owner) on a row's G-theory and Bayes intervals."""
    from ._flags import _disagree

    sides = {"bootstrap g": (est, glo, ghi), "Bayes ETI": (table["Bayes estimate"], table["Bayes lower"], table["Bayes upper"])}
    wide = pd.concat({f"{m} {b}": v for m, vs in sides.items() for b, v in zip(("estimate", "lower", "upper"), vs, strict=True)},
                     axis=1)  # fmt: skip
    return _disagree(wide, "g")


def _uneven_runs_text(ctx: _Context) -> str:
    """Why the run-to-run rows can part on uneven runs ("" where every cell run holds about as many).

    G-theory's residual pools the runs' within-cell variation, so a cell of many runs weighs
    more; the Bayes part averages ``E[p (1 - p)]`` over the agents and the task population
    alike. METR (1 to 96 runs a cell) puts them at 0.062 and 0.071.
    """
    n = _run_counts(ctx)
    runs = n[n > 0] if n is not None else np.array([])
    if runs.size == 0 or runs.max() < 2 * runs.min():
        return ""
    return (
        f"Runs per cell range {int(runs.min())}-{int(runs.max())} here: G-theory's run-to-run row pools the "
        "runs, so a cell of many runs weighs more, where the Bayes row averages over the agents and the task "
        "population alike; on uneven runs the two can part for that alone."
    )


def _agreement_text(table: pd.DataFrame) -> str:
    """What the two halves' rows are to each other, counted (the table's ``flag`` and ``disagree``)."""
    other = table["flag"].str.contains("not one component", regex=False)
    n_other, n_dis = int(other.sum()), int(table["disagree"].sum())
    same = [r for r in table.index if not other[r]]
    text = (
        "Where both methods sum the same terms the row is one component seen two ways; `disagree` marks "
        "such a row where one method's estimate lies outside the other's interval or the two intervals do not "
        "overlap, or, where G-theory has no interval (a sum of components), whose G-theory estimate lies outside "
        "the Bayes interval (judged only where both are defined, `undefined` elsewhere): "
        f"{n_dis} of the {len(same)} rows summing the same terms. The two reach the probability "
        "scale differently (the crossed model through logit-scale effects and their priors, G-theory by a "
        "linear model of the scores) and can differ for either's reasons: the flag does not say which is right."
    )
    if n_other:
        text += (
            f" In {n_other} row{'s' if n_other > 1 else ''} ({', '.join(map(str, table.index[other]))}) the "
            "two sum different terms (named in `flag`), so the row need not be the same component on both sides."
        )
    return text


def _score_units(ctx: _Context) -> str:
    """What a variance of the data's (non-binary) score is in: partial credit, or grades read on [0, 1]."""
    from ..data import grade_reading
    from ..data import labels_attr
    from ..data import levels_attr

    levels = levels_attr(ctx.data.attrs) if ctx.data is not None else None
    if not levels:
        return "partial credit in [0, 1], so score units squared"

    scale = np.asarray(levels, dtype=float)
    labels = labels_attr(ctx.data.attrs)
    key = f", the grades numbered {grade_key(scale, labels)}" if labels else ""
    return (
        f"the {grade_reading(scale, labels)}, so in those units squared; times "
        f"{(scale[-1] - scale[0]) ** 2:g} for squared grades{key}"
    )


def _refusal(exc: Exception, data: xr.Dataset | None) -> str:
    """Why G-theory was not computed: the error whole, its remedy kept, without its closing full stop.

    The message was cut at its first sentence and 200 characters, mid-word and with no mark, so the
    remedy was lost (audit C: "... (0 of 3 levels of 'cluste."). A remedy that drops the ``cluster``
    coord is also said in the command line's words.
    """
    text = f"{type(exc).__name__}: {str(exc).strip()}".rstrip(".")
    if data is not None and "cluster" in data.coords and "`cluster` coord" in str(exc):
        text += " (in the CLI: read the log without --cluster)"
    return text


def _nothing_shown(ctx: _Context, gdesc: str, refused: bool) -> str:
    """Why the section has no table: what was given, and why neither half gave a row (``gdesc``: G-theory's words).

    With data given, "needs a crossed fit or data" misled (audit F6): the data were there, and the
    design did not allow the G-study; the refusal's own words follow.
    """
    if ctx.data is None:
        return "needs a crossed fit or data"
    fit = ("no crossed fit was given" if ctx.fit is None else
           "the fit is a formula model, whose terms are its own, not these rows" if ctx.mixed else
           "the fit has no crossed variance components")  # fmt: skip
    head = "the design does not allow the G-study" if refused else "its G-study has none of these rows"
    return f"data given, but {head}, and {fit} ({gdesc})"


def _sec_variance(ctx: _Context, rep: Report, sid: str) -> None:
    from . import _figures as F

    rows, merged, undefined = _layout(ctx)
    bay = _bayes_part(ctx, rows)
    refused = False
    try:
        gt, gdesc = _gtheory_part(ctx, rows)
    except Exception as exc:
        gt, gdesc, refused = None, f"G-theory not computed: {_refusal(exc, ctx.data)}", True
    parts = [p for p in (bay, gt) if p is not None and len(p)]
    if not parts and ctx.data is not None and not ctx.want_freq("variance"):  # data given, G-theory left out
        raise _Skip(f"left out: {ctx.left_out('variance')}"
                    + ("" if ctx.fit is None else "; the fit has no crossed variance components to show"))
    if not parts:
        raise _Skip(_nothing_shown(ctx, gdesc, refused))
    table = _table(parts, rows, undefined)
    binary = ctx.data is None or ctx.binary()  # a crossed fit alone is binomial by construction
    names = [str(r).replace("run-to-run", "run-to-run (binomial)" if binary else "run-to-run") for r in table.index]
    split = f"split into {', '.join(names[:-1])} and {names[-1]} parts" if len(names) > 1 else f"as {names[0]}"
    what = "the cell success probability (probability^2)" if binary else f"the score ({_score_units(ctx)})"
    text = [f"Variance of {what}, {split}; each row sums the terms named beside it."]
    if "disagree" in table:
        text.append(_agreement_text(table))
    if bay is not None:
        text.append(f"Bayes: the crossed fit's posterior mean and {ctx.prob:.0%} equal-tailed interval.")
        if gt is not None and len(gt) and (uneven := _uneven_runs_text(ctx)):
            text.append(uneven)
    elif ctx.mixed:
        text.append(
            "No Bayesian column: a formula model's terms are its own (agent factors, task features), not "
            "these rows; hierbench.metrics.agent_variance(fit, model) splits the agents' variance on the "
            "model's linear-predictor scale (the logit for pass/fail scores) by its terms."
        )
    if gdesc:
        text.append(gdesc + ".")
    text += merged + [f"The {r} row is undefined (NaN), not 0: {why}." for r, why in undefined.items()]
    rep.section(_TITLES[sid], " ".join(text), table=table, id=sid, digits=4,
                flag="disagree" if "disagree" in table else None)
    if bay is not None:
        bars = table[["Bayes estimate", "Bayes lower", "Bayes upper"]].dropna(how="all")
        beside = None
        if gt is not None and len(gt):  # G-theory's estimate, and its interval where it has one
            ends = [c for c in ("G-theory lower", "G-theory upper") if c in table]
            beside = table[[_g_col(table), *ends]].set_axis(["estimate", "lower", "upper"][: 1 + len(ends)], axis=1)
        fig = F.variance_plot(
            bars.set_axis(["estimate", "lower", "upper"], axis=1),
            title="Variance components: crossed model" + (" and G-theory" if beside is not None else ""),
            xlabel=f"variance of the success probability (probability^2); {ctx.prob:.0%} intervals",
            beside=beside,
            labels=("Bayes (crossed fit)", "G-theory") if beside is not None else ("", ""),
        )
        rep.figure("variance_components", fig, "Variance components of the success probability"
                   + (": bars Bayes, diamonds G-theory (whiskers where it has an interval)." if beside is not None else "."))  # fmt: skip
