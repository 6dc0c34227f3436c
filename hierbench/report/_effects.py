"""What a formula fit estimated: each variable's average marginal effect, Bayes beside maximum likelihood.

A formula fit (:func:`hierbench.bayes.build_mixed`, ``hierbench fit --formula``) answers "what is the
effect of the scaffold / the temperature / the tier, and how much do the judges differ"; the report
showed only the agents' means. This section puts, per variable of the formula's fixed part,
:func:`hierbench.metrics.average_marginal_effects` (every posterior draw) beside
:func:`hierbench.freq.average_marginal_effects` of :func:`hierbench.freq.fit_crossed_ml`'s fit of the
same formula to the report's data, on the reader's scale (grades, or points), and below them the
parameters of both halves on the linear predictor's scale (fixed effects, the random terms' sds,
the ordinal thresholds), each labelled with its scale.

Audit F, F1 (2026-12-07): on wine the report never said that temperature moves the mean grade up by
about 1.1 grades (ML 1.131, Bayes 1.070), nor the judges' sd; F4: for scores in [0, 1] the two
halves' population-averaged effects can differ by many points (METR: 10), each half integrating the
random terms over a normal on its own scale; the section says so where they differ.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._base import FRACTIONAL_LINEAR
from .._base import interval_label
from ._context import _TITLES
from ._context import _Context
from ._context import _eti
from ._context import _Skip
from ._report import Report

__all__: list[str] = []

#: the section's id (its HTML anchor; its title is ``_context._TITLES``')
SECTION_ID = "effects"

#: the ML sds' intervals: Wald on the log scale. fit_crossed_ml's default, the profile likelihood, is the
#: better one with few levels but took 3.6 s on wine's 9 judges (against 0.65 s) and 8 s on a 3-agent
#: horizon design with a sd at 0 (against 0.46 s); the AMEs do not use them
SD_INTERVALS = "wald"

#: the frequentist AME's method (:func:`hierbench.freq.average_marginal_effects`' default) and its column prefix
FREQ_METHOD, FREQ = "reml", "REML"


def formula_variables(design) -> list[str]:
    """The variables of a design's fixed part, in the formula's order (not ``agent`` or ``task`` themselves).

    Read from the formula's terms (``np.log(hard)`` is the variable ``hard``); an agent or task
    fixed effect (``0 + agent``) is left out: its levels are the agents' abilities, shown above.
    """
    terms = getattr(design.builder, "terms", None) or {}
    names: list[str] = []
    for key in design.fixed_terms:
        term = terms.get(key)
        got = sorted(getattr(term, "var_names", ())) if term is not None else key.split(":")
        names += [v for v in got if v in design.variables and v not in ("agent", "task") and v not in names]
    return names


def _scale_words(family: str) -> tuple[str, str]:
    """The parameters' scale in each half (Bayes, ML): the logit, but for the [0, 1] family's Bayesian half."""
    if family == "fractional":
        return "the [0, 1] family's linear predictor", "logit (quasi-binomial)"
    return "logit", "logit"


def bayes_effects(fit, design, variables: list[str], prob: float) -> dict:
    """:func:`hierbench.metrics.average_marginal_effects` of each variable (the error raised, where one was)."""
    from ..metrics import average_marginal_effects

    out = {}
    for v in variables:
        try:
            out[v] = average_marginal_effects(fit, design, v, prob=prob)
        except ValueError as exc:  # HierbenchError is a ValueError: a random slope, ...
            out[v] = exc
    return out


def formula_ml(ctx: _Context, design, variables: list[str]) -> tuple:
    """The frequentist half, once: ``(fit or the error it raised, {variable: AME or error}, warnings)``.

    :func:`hierbench.freq.fit_crossed_ml` of the rebuilt design (the fit's formula, family and
    levels on the report's data), then :func:`hierbench.freq.average_marginal_effects` of each
    variable at the report's level. Each warning is kept as ``"Name: message"`` and raised again,
    so that the report's list of warnings has it too.
    """
    from ..freq import average_marginal_effects
    from ..freq import fit_crossed_ml

    def compute() -> tuple:
        ctx.say("maximum-likelihood fit of the formula")
        ml = fit_crossed_ml(ctx.data, design, prob=ctx.prob, intervals=SD_INTERVALS)
        effects: dict = {}
        for v in variables:
            try:
                effects[v] = average_marginal_effects(ml, v, method=FREQ_METHOD, prob=ctx.prob)
            except ValueError as exc:
                effects[v] = exc
        return ml, effects

    res, said = ctx.quoted_once("formula_ml", compute, (ValueError,))
    return (res, {}, said) if isinstance(res, Exception) else (*res, said)


def _freq_label(res) -> str:
    """A frequentist AME interval's level and kind, with its t quantile's degrees of freedom where finite."""
    df = np.unique(np.asarray(res.df.values, dtype=float))
    return interval_label(res.ci) + (f", {df[0]:g} df" if df.size == 1 and np.isfinite(df[0]) else "")


def effects_table(bayes: dict, freq: dict | None, prob: float) -> pd.DataFrame:
    """One row per (variable, contrast): the posterior mean and interval, the frequentist estimate and interval.

    ``disagree``: one half's estimate outside the other's interval (only where both are there).
    """
    rows = []
    for v, b in bayes.items():
        f = None if freq is None else freq.get(v)
        ok_b, ok_f = not isinstance(b, Exception), f is not None and not isinstance(f, Exception)
        src = b if ok_b else f if ok_f else None
        for c in ([] if src is None else [str(x) for x in src.estimate["contrast"].values]):
            row = {"variable": v, "contrast": c}
            if ok_b:
                lo, hi = b.ci.sel(contrast=c).values
                row |= {"Bayes mean": float(b.estimate.sel(contrast=c)), "Bayes lower": lo, "Bayes upper": hi}
            if ok_f:
                lo, hi = f.ci.sel(contrast=c).values
                row |= {f"{FREQ} estimate": float(f.estimate.sel(contrast=c)), f"{FREQ} lower": lo,
                        f"{FREQ} upper": hi, f"{FREQ} interval": _freq_label(f)}  # fmt: skip
            rows.append(row)
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    table = table.set_index(["variable", "contrast"])
    if "Bayes mean" in table and f"{FREQ} estimate" in table:
        be, bl, bh, fe, fl, fh = (table[c] for c in ("Bayes mean", "Bayes lower", "Bayes upper", f"{FREQ} estimate",
                                                     f"{FREQ} lower", f"{FREQ} upper"))  # fmt: skip
        judged = be.notna() & bl.notna() & fe.notna() & fl.notna()
        table["disagree"] = judged & ((be < fl) | (be > fh) | (fe < bl) | (fe > bh))
    if f"{FREQ} estimate" in table and table[f"{FREQ} estimate"].isna().any():  # said in words, never a bare NaN
        table["flag"] = np.where(table[f"{FREQ} estimate"].isna(), f"no {FREQ} estimate: the ML fit has an estimate "
                                 "at infinity (see its warnings)", "")  # fmt: skip
    return table


def _posterior_rows(post, part: str, var: str, dim: str, prob: float) -> list[dict]:
    """The posterior mean and equal-tailed interval of each element of ``post[var]`` over ``dim`` (``_eti``)."""
    if post is None or var not in post or set(post[var].dims) != {"chain", "draw", dim}:
        return []
    return [{"part": part, "term": str(k), "Bayes mean": float(r["estimate"]), "Bayes lower": float(r["lower"]),
             "Bayes upper": float(r["upper"])} for k, r in _eti(post[var], prob).iterrows()]  # fmt: skip


def _ml_rows(ml) -> list[dict]:
    """The ML fit's estimates (fixed effects, sds, thresholds) with each interval's level and kind."""
    if ml is None or isinstance(ml, Exception):
        return []
    df = ml.to_frame().reset_index()
    return [{"part": p, "term": str(t), "ML estimate": e, "ML lower": lo, "ML upper": hi,
             "ML interval": f"{100 * cp:.4g}% {kind}"}
            for p, t, e, lo, hi, cp, kind in zip(df["part"], df["term"], df["estimate"], df["lower"], df["upper"],
                                                 df["ci_prob"], df["ci_kind"], strict=True)]  # fmt: skip


def params_table(post, ml, family: str, prob: float) -> pd.DataFrame:
    """Both halves' parameters on the linear predictor's scale: fixed effects, random terms' sds, thresholds.

    Rows ``(part, term)`` as :meth:`hierbench.freq.MixedMLResult.to_frame` names them, fixed effects
    first; a ``scale`` column per row (for scores in [0, 1] the halves' scales differ: ``_scale_words``).
    """
    bay = [*_posterior_rows(post, "fixed", "beta", "coef", prob), *_posterior_rows(post, "sd", "sd", "component", prob),
           *_posterior_rows(post, "threshold", "thresholds", "threshold", prob)]  # fmt: skip
    mlr = _ml_rows(ml)
    if not bay and not mlr:
        return pd.DataFrame()
    keys = list(dict.fromkeys((r["part"], r["term"]) for r in sorted(
        [*bay, *mlr], key=lambda r: ("fixed", "sd", "threshold").index(r["part"]))))  # stable: each half's order
    table = pd.concat([pd.DataFrame(r).set_index(["part", "term"]) for r in (bay, mlr) if r], axis=1)
    table = table.reindex(pd.MultiIndex.from_tuples(keys, names=["part", "term"]))
    b_scale, m_scale = _scale_words(family)
    words = (b_scale if b_scale == m_scale else f"Bayes: {b_scale}; ML: {m_scale}") if bay and mlr else (
        b_scale if bay else m_scale)
    table.insert(0, "scale", words)
    if "ML estimate" in table:  # said in words, never a bare NaN
        est, bound = table["ML estimate"], table["ML lower"].isna() | table["ML upper"].isna()
        flag = np.where(est.isna(), "no finite ML estimate (see the fit's warnings)", np.where(
            bound & (est <= 1e-3) & (table.index.get_level_values("part") == "sd"),
            "ML sd at 0: its Wald interval has no upper bound (the profile interval has)",
            np.where(bound, "ML interval undefined", "")))  # fmt: skip
        if (flag != "").any():
            table["flag"] = flag
    for c in [c for c in table.columns if c not in ("scale", "ML interval", "flag")]:  # the words, not NaN
        if table[c].isna().any():
            table[c] = table[c].astype(object).where(table[c].notna(), "undefined" if c.startswith("ML") else "not fitted")
    return table


def extreme_levels(design) -> list[str]:
    """Per random term, its levels whose every run sits at the scale's lowest (or highest) value, in words.

    Such a level's effect has no finite estimate: the Bayesian fit holds it by its prior alone, far
    out in a tail, which stretches that half's normal (METR: 9 of 83 tasks at 0 in every run).
    """
    from ..data import _one_sided  # the separation rule's own rows at the top and at the bottom

    top, bottom = _one_sided(design)
    ends = (bottom, top)
    names = ((f"the lowest grade ({design.categories[0]:g})", f"the highest grade ({design.categories[-1]:g})")
             if design.family == "ordinal" else ("0", "1"))  # fmt: skip
    out = []
    for t in design.random:
        for at_end, name in zip(ends, names, strict=True):
            other = np.bincount(t.codes, weights=(~at_end).astype(float), minlength=t.levels.size)
            k = int((other == 0).sum())
            if k:
                out.append(f"{k} of {t.levels.size} levels of ({t.name}) have every run at {name}")
    return out


def _number(x: object) -> bool:
    """Whether a table cell holds a number (params_table writes a missing one in words)."""
    return isinstance(x, (int, float, np.number)) and bool(np.isfinite(x))


def _why(design, params: pd.DataFrame, extreme: list[str]) -> str:
    """One sentence on why the halves' population-averaged effects can differ: what each of them defines."""
    sds = params.xs("sd", level="part") if "sd" in params.index.get_level_values("part") else pd.DataFrame()
    pairs = ", ".join(f"sd({t}) {r['Bayes mean']:.3g} against {r['ML estimate']:.3g}" for t, r in sds.iterrows()
                      if _number(r.get("Bayes mean")) and _number(r.get("ML estimate")))  # fmt: skip
    here = f": {pairs}" if pairs else ""
    ext = f"; here {', and '.join(extreme)}" if extreme else ""
    if design.family == "fractional":
        return ("Where the halves differ, it is by what they define more than by error: each averages over random "
                "effects drawn from a normal distribution on its own scale (the Bayesian [0, 1] family's linear "
                f"predictor, the ML fit's quasi-binomial logit{here}), and a population-averaged effect depends on "
                f"that normal, so where the effects are far from normal the two can differ by many points{ext}. "
                "The agents' means over their own tasks (the side-by-side section) depend far less on it.")  # fmt: skip
    return ("Where the halves differ: both average over random effects drawn from a normal on the logit scale, but "
            "with a different sd (the Bayesian half over the sd's posterior, prior included; ML at its point "
            f"estimate{here}), and with few levels of a random term these differ by more than either interval "
            f"allows{ext}.")  # fmt: skip


def _freq_state(ctx: _Context, design, variables: list[str]) -> tuple:
    """``(ML fit or error or None, its AMEs or None, warnings, why it is absent)``: the frequentist half where wanted.

    As the side-by-side section decides: with the data and ``freq`` not None (a mapping of given
    results computes this one, which it cannot give).
    """
    if ctx.data is None or ctx.freq is None:
        why = "no data given" if ctx.data is None else "freq=None"
        return None, None, [], f"The frequentist half is left out ({why})."
    ml, effects, said = formula_ml(ctx, design, variables)
    return ml, effects, said, ""


def _head(design, bayes: dict, freq: dict | None, prob: float) -> str:
    """What the effects table holds: the quantity, its scale, each half's function and interval."""
    from .._base import make_interval

    ok = [r for r in bayes.values() if not isinstance(r, Exception)]
    blab = interval_label(ok[0].ci if ok else make_interval(0.0, 1.0, prob=prob, kind="eti"))
    unit = "grades" if design.family == "ordinal" else "points"
    said = design.reader_scale()[1]
    said = said if said.startswith(unit) else f"{unit}: the {said}"
    out = [f"Each variable of the formula's fixed part as an average marginal effect ({said}): every design "
           "row set to each level of the variable (a numeric one: the derivative per unit), its expected outcome "
           "predicted with the random terms integrated out over their normal distribution (population-averaged), "
           f"the differences from the first level averaged over the rows. Bayes: hierbench.metrics.average_marginal_effects in every posterior draw (mean and {blab} "
           "interval)."]  # fmt: skip
    fok = {v: r for v, r in (freq or {}).items() if not isinstance(r, Exception)}
    if fok:  # the same words for each variable but its name: said once
        details = "; ".join(dict.fromkeys(r.ci.attrs.get("ci_detail", "").replace(repr(v), "the variable")
                                          for v, r in fok.items()))  # fmt: skip
        out.append(f"{FREQ}: hierbench.freq.average_marginal_effects (method={FREQ_METHOD!r}) of "
                   "hierbench.freq.fit_crossed_ml's fit of the same formula to this data, its interval's level "
                   f"and kind in `{FREQ} interval` ({details}).")  # fmt: skip
    fails = [f"{v}: {type(r).__name__}: {r}" for v, r in {**bayes, **(freq or {})}.items() if isinstance(r, Exception)]
    if fails:
        out.append("Not computed: " + "; ".join(fails) + ".")
    return " ".join(out)


def _params_text(design, ml, params: pd.DataFrame) -> str:
    """What the parameters table holds, and on which scale each half's numbers are."""
    if params.empty:
        return ""
    ok = ml is not None and not isinstance(ml, Exception)
    words = (("Both halves' parameters" if ok else "The posterior's parameters") + " on the linear predictor's "
             "scale (`scale`): fixed effects, the random terms' sds"
             + (", the ordinal thresholds" if design.family == "ordinal" else "")
             + " (Bayes: posterior mean and equal-tailed interval at the report's level"
             + ("; ML: hierbench.freq.fit_crossed_ml, each interval's level and kind in `ML interval`)." if ok
                else ")."))  # fmt: skip
    if design.family == "ordinal":
        words += (" P(grade <= k) = expit(threshold_k - eta): a positive fixed effect moves grades up; the "
                  "thresholds hold the intercept.")  # fmt: skip
    if design.family == "fractional" and not ok:
        words += f" The Bayesian half's fixed effects and sds are on the {FRACTIONAL_LINEAR}."
    if design.family == "fractional" and ok:
        words += (f" The halves' fixed effects and sds are on different scales, the Bayesian {FRACTIONAL_LINEAR} "
                  "and the ML fit's quasi-binomial logit: compare the halves on the effects above, never on "
                  "these.")  # fmt: skip
    if ok:
        words += (" The ML sds' intervals are Wald on the log scale, for speed: the profile-likelihood interval, "
                  "hierbench.freq.fit_crossed_ml's default, is the better one with few levels (a sd at 0 has no "
                  "Wald upper bound) and takes seconds more.")  # fmt: skip
    if ok and not ml.converged:
        words += " The ML fit did NOT converge: its numbers are where the optimiser stopped."
    return words


def with_effects(order: tuple[str, ...], fit) -> tuple[str, ...]:
    """``order`` with this section after the abilities (and the time horizons), for a formula fit only."""
    if fit is None or fit.attrs.get("hierbench_model") != "mixed" or "abilities" not in order or "effects" in order:
        return order
    at = max(order.index(s) for s in ("abilities", "horizons") if s in order) + 1
    return (*order[:at], "effects", *order[at:])


def _sec_effects(ctx: _Context, rep: Report, sid: str) -> None:
    """The section: each formula variable's AME (Bayes, REML), then both halves' parameters."""
    if not ctx.mixed:
        what = "no fit given" if ctx.fit is None else f"a {ctx.fit.attrs.get('hierbench_model', 'custom')} fit"
        raise _Skip(f"Only for a formula fit (hierbench.bayes.build_mixed; hierbench fit --formula): {what}. "
                    "Its agents' levels are in the section \"Agent abilities\".")  # fmt: skip
    design = ctx.mixed_design()
    if design is None:
        params = params_table(ctx.post, None, _family(ctx), ctx.prob)
        if params.empty:
            raise _Skip("needs the data the fit was made from (the design is rebuilt from it), and the fit "
                        "holds no posterior fixed effects or sds to show without it")  # fmt: skip
        rep.section(_TITLES[sid], "The average marginal effects need the data the fit was made from (the "
                    "design is rebuilt from it; see the warnings where it was given). The posterior's parameters "
                    f"on the linear predictor's scale ({_scale_words(_family(ctx))[0]}), mean and equal-tailed "
                    f"interval at {ctx.prob:.0%}:", table=params, id=sid)  # fmt: skip
        return
    variables = formula_variables(design)
    bayes = bayes_effects(ctx.fit, design, variables, ctx.prob)
    ml, freq, said, absent = _freq_state(ctx, design, variables)
    table = effects_table(bayes, freq, ctx.prob)
    params = params_table(ctx.post, ml, design.family, ctx.prob)
    out = [_head(design, bayes, freq, ctx.prob) if variables else
           f"The formula {design.formula!r} has no fixed-effect variable (beyond agent or task themselves): no "
           "marginal effect to show."]  # fmt: skip
    if not table.empty:
        table.insert(0, "scale", "grades" if design.family == "ordinal" else "points")
    if "disagree" in table:
        n = int(table["disagree"].sum())
        out.append(f"`disagree` flags a contrast whose estimate from one half lies outside the other's interval: "
                   f"{n} of {len(table)}.")  # fmt: skip
        if n:
            out.append(_why(design, params, extreme_levels(design)))
    if ctx.fit.attrs.get("diag_converged") is not None and not int(ctx.fit.attrs["diag_converged"]):
        out.append("The Bayesian fit did NOT converge (see the convergence diagnostics): do not trust its column.")
    if isinstance(ml, Exception):
        out.append(f"hierbench.freq.fit_crossed_ml refused the formula on this data: {type(ml).__name__}: {ml}.")
    out += [absent] if absent else []
    if said:
        out.append("The frequentist fit warned: " + " ".join(s.rstrip(".") + "." for s in said))
    ptext = _params_text(design, ml, params)
    whose = "both halves" if "ML estimate" in params else "the posterior"
    more = (f"The parameters of {whose} ({len(params)} rows)", params) if not params.empty else None
    text = " ".join(out) + ("\n\n" + ptext if ptext else "")
    if table.empty:
        rep.section(_TITLES[sid], text, table=params if not params.empty else None, id=sid)
    else:
        rep.section(_TITLES[sid], text, table=table, id=sid, flag="disagree" if "disagree" in table else None,
                    more=more)  # fmt: skip


def _family(ctx: _Context) -> str:
    """The formula fit's family, as its spec records it."""
    from .._base import fit_record

    return str(fit_record(ctx.fit, "hierbench_spec").get("options", {}).get("family", "?"))


def effects_lines(fit, model, prob: float, *, fit_path: str = "FIT", data_path: str = "LOG") -> list[str]:
    """A formula fit's answers in a few lines for ``hierbench fit``: each variable's AME and the random terms' sds.

    The posterior mean and equal-tailed interval of :func:`hierbench.metrics.average_marginal_effects`
    (the reader's scale) and of each sd (the linear predictor's scale), and where the report puts
    the frequentist fit beside them (``fit_path`` and ``data_path`` name the files in that command).
    Empty for a fit that is not a formula fit.
    """
    from ..metrics import as_design

    if fit.attrs.get("hierbench_model") != "mixed":
        return []
    design = as_design(model)
    res = bayes_effects(fit, design, formula_variables(design), prob)
    ok = [r for r in res.values() if not isinstance(r, Exception)]
    lab = interval_label(ok[0].ci) if ok else f"{100 * prob:.4g}% eti"
    out = [f"effects of the formula's terms: average marginal effect on the {design.reader_scale()[1]}, random "
           f"terms integrated out, posterior mean [{lab}]:" if res else
           "effects of the formula's terms: none (no fixed-effect variable beyond agent or task)"]  # fmt: skip
    for v, r in res.items():
        if isinstance(r, Exception):
            out.append(f"  {v}: not computed ({type(r).__name__}: {r})")
            continue
        for c in r.estimate["contrast"].values:
            lo, hi = r.ci.sel(contrast=c).values
            out.append(f"  {v}: {c}  {float(r.estimate.sel(contrast=c)):+.3g} [{lo:.3g}, {hi:.3g}]")
    sds = _posterior_rows(fit["posterior"].to_dataset() if "posterior" in fit.children else None, "sd", "sd",
                          "component", prob)  # fmt: skip
    if sds:
        out.append(f"  random terms' sds ({_scale_words(design.family)[0]}): " + "; ".join(
            f"{r['term']} {r['Bayes mean']:.3g} [{r['Bayes lower']:.3g}, {r['Bayes upper']:.3g}]" for r in sds))
    out.append(f"  the maximum-likelihood fit of the same formula beside these: hierbench report {fit_path} --data "
               f"{data_path} (and the fit's column options) -o report.html, section \"{_TITLES[SECTION_ID]}\"")  # fmt: skip
    return out
