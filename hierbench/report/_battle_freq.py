"""The battles' frequentist counterpart beside the Bayesian Bradley-Terry abilities.

A report of battles (``build(fit=<Bradley-Terry fit>, data=<read_battles dataset>)``) shows the
Bayesian abilities; this section puts :func:`hierbench.freq.fit_bradley_terry_ml` beside them,
fitted to the report's battles with the fit's own tie model and first-position advantage, at the
report's level, seed and ``n_resamples``. Its bootstrap resamples the prompts (tasks), each with
all its battles, where the battles carry them: battles sharing a prompt are not independent,
which the Bayesian model, whose likelihood takes every battle as independent, does not allow
for. Both columns are logit abilities centred on the mean of all agents (sum zero): the
Bayesian draws are zero-sum by the model's construction (centred again draw by draw here, a
no-op for such a fit), the ML estimate is centred so with no reference agent.

Audit P, F3 (2026-12-07): on LLMFAO the Bayesian 95% intervals were a median 1.77x narrower
than the prompt bootstrap's (up to 4.6x), and 1,138 against 749 of 1,711 pairs looked
separated, while the report named the counterpart in words and never computed it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._base import HierbenchError
from .._base import fit_record
from .._base import interval_label
from .._base import make_interval
from ._context import _TITLES
from ._context import _Context
from ._context import _Skip
from ._order import in_report_order
from ._order import order_words
from ._report import Report

__all__: list[str] = []

#: the section's id (its HTML anchor; its title is ``_context._TITLES``')
SECTION_ID = "battle-freq"

#: the Bayesian fit's tie model (``hierbench_spec`` options ``ties``) -> fit_bradley_terry_ml's ``ties``
TIES = {"davidson": "davidson", "none": "none"}

#: what "pass ties='none'" means in a report, whose ML fit takes the Bayesian fit's tie model
REFIT_WITHOUT_TIES = (
    "Here the ML fit takes the Bayesian fit's tie model, so no argument of the report changes it: to fit "
    "both halves without ties, refit the Bayesian model without them (hierbench.bayes.build_bradley_terry("
    "..., ties=None); from the shell, hierbench fit LOG --battles --ties none) and report that fit.")

#: a median ratio of widths (ML / Bayes) beyond which the take-away says the Bayesian intervals are too narrow
WIDER = 1.25


def with_battle_freq(order: tuple[str, ...], battles, freq) -> tuple[str, ...]:
    """``order`` with this section after the abilities, for a battle log with the frequentist half asked for."""
    if battles is None or freq is None or "abilities" not in order or SECTION_ID in order:
        return order
    at = order.index("abilities") + 1
    return (*order[:at], SECTION_ID, *order[at:])


def ml_options(ctx: _Context) -> tuple[dict, str]:
    """``fit_bradley_terry_ml``'s ``ties`` and ``home`` for the fit's own model, and a sentence on them.

    Read from the fit's spec (``hierbench_spec`` options ``ties`` and ``home_advantage``); an option
    the spec does not record is read from the posterior (``nu``: Davidson ties; ``home``: a
    first-position advantage), and the sentence says so. Without a fit, the function's defaults.
    Raises ``_Skip`` where the spec records a model the ML fit does not have.
    """
    if ctx.fit is None:
        return {"ties": "davidson", "home": False}, (
            "No Bayesian fit given: the ML fit alone, with its defaults (Davidson ties, no first-position advantage).")
    opts = fit_record(ctx.fit, "hierbench_spec").get("options", {})
    post = ctx.post if ctx.post is not None else {}
    ties, home = opts.get("ties"), opts.get("home_advantage")
    if (ties is not None and ties not in TIES) or (home is not None and not isinstance(home, bool)):
        raise _Skip(
            f"the fit records a model the ML fit cannot match (`hierbench_spec` options `ties` {ties!r}, "
            f"`home_advantage` {home!r}; hierbench.freq.fit_bradley_terry_ml fits ties {sorted(TIES)} with or "
            "without a first-position advantage), so it is not shown beside it"
        )
    read = [n for n, v in (("ties", ties), ("first-position advantage", home)) if v is None]
    ties = TIES[ties] if ties is not None else "davidson" if "nu" in post else "none"
    home = home if home is not None else "home" in post
    words = ("Davidson ties" if ties == "davidson" else "the logistic model without ties") + (
        ", a first-position advantage" if home else ", no first-position advantage")
    source = ("as the fit records" if not read else
              f"as the fit records ({' and '.join(read)} read from its posterior: the spec does not record them)")
    return {"ties": ties, "home": home}, f"Both fit the same model: {words}, {source}."


def battle_ml(ctx: _Context, options: dict):
    """``fit_bradley_terry_ml`` of the report's battles at its level, seed and resamples, once.

    Returns ``(result or the exception it raised, its warnings' messages)``; each warning is
    raised again, so that the report's list of warnings has it too.
    """
    from ..freq import fit_bradley_terry_ml

    def compute():
        ctx.say(f"Bradley-Terry ML, bootstrap of {ctx.n_resamples} resamples")
        return fit_bradley_terry_ml(ctx.battles, scale="logit", reference=None, prob=ctx.prob,
                                    n_resamples=ctx.n_resamples, rng=ctx.rng, **options)  # fmt: skip

    return ctx.quoted_once("battle_ml", compute, (HierbenchError, ValueError))


def _bayes_draws(ctx: _Context) -> tuple[pd.DataFrame, np.ndarray, str] | None:
    """The fit's ``ability`` draws (draw x agent) centred on the mean of all agents, and a sentence on it."""
    if ctx.fit is None:
        return None
    post = ctx.post
    if post is None or "ability" not in post or set(post["ability"].dims) != {"chain", "draw", "agent"}:
        raise _Skip("the fit has no posterior `ability` over (chain, draw, agent) to set beside the ML abilities")
    da = post["ability"].transpose("chain", "draw", "agent")
    x = da.values.reshape(-1, da.sizes["agent"])
    shift = x.mean(1, keepdims=True)
    x = x - shift
    agents = [str(a) for a in da["agent"].values]
    centred = ("the Bayesian abilities are zero-sum by the model's construction" if np.abs(shift).max() < 1e-6
               else f"the Bayesian draws are centred here, draw by draw, on the mean of all agents (their mean "
                    f"was up to {np.abs(shift).max():.3g} from 0)")  # fmt: skip
    return pd.DataFrame(x, columns=agents), x, centred


def _bayes_columns(x: np.ndarray, agents: list[str], prob: float) -> tuple[pd.DataFrame, str]:
    """Posterior mean and equal-tailed interval per agent, and the interval's label."""
    a = (1.0 - prob) / 2.0
    lo, hi = np.quantile(x, [a, 1.0 - a], axis=0)
    label = interval_label(make_interval(0.0, 1.0, prob=prob, kind="eti"))
    cols = pd.DataFrame({"Bayes mean": x.mean(0), f"Bayes {label} lower": lo, f"Bayes {label} upper": hi},
                        index=pd.Index(agents, name="agent"))  # fmt: skip
    return cols, label


def separated_pairs(x: np.ndarray | None, dist: np.ndarray | None, prob: float) -> dict:
    """Count the pairs of agents each method separates at ``prob``.

    Bayes: P(a > b) above ``(1 + prob) / 2`` or below ``(1 - prob) / 2`` (the pairwise
    section's probabilities). ML: the percentile interval of the resampled difference a - b
    excludes 0; ``dist`` is the fit's ``relative_distribution``, whose differences are
    defined in a resample that left other agents out. A resample where a or b is absent or
    has no finite MLE counts as the ML intervals count it (``_bounds_with_undefined``),
    and a pair whose bound it decides is ``undefined``.
    """
    from ..freq import _bounds_with_undefined

    m = (x if x is not None else dist).shape[1]
    i, j = np.triu_indices(m, 1)
    out = {"pairs": int(i.size)}
    if x is not None:
        p = np.empty(i.size)
        for s in range(0, i.size, 4096):  # draws x pairs in blocks: 4,000 draws x 1,711 pairs at most 16 MB
            p[s:s + 4096] = (x[:, i[s:s + 4096]] > x[:, j[s:s + 4096]]).mean(0)
        out["bayes"] = int(((p > (1 + prob) / 2) | (p < (1 - prob) / 2)).sum())
    if dist is not None:
        with np.errstate(invalid="ignore"):
            lo, hi = _bounds_with_undefined(dist[:, i] - dist[:, j], prob)  # inf - inf: undefined (NaN)
        out["ml"] = int(((lo > 0) | (hi < 0)).sum())
        out["ml_undefined"] = int((np.isnan(lo) | np.isnan(hi)).sum())
    return out


def _relative(res, agents: list[str]) -> np.ndarray:
    """The ML resamples (resample x agent) whose differences a - b are defined where both agents are present."""
    dist = res.relative_distribution if res.relative_distribution is not None else res.distribution
    return dist.reindex(agent=agents).values  # in the table's order; an agent it lacks: NaN


def _ml_separated(ctx: _Context, res, agents: list[str], mlab: str) -> str:
    """The sentence on the pairs the ML bootstrap separates (for the section without a Bayesian fit)."""
    sep = separated_pairs(None, _relative(res, agents), ctx.prob)
    undefined = (f"; {sep['ml_undefined']:,} pairs' interval is undefined (resamples where one of the two is absent "
                 "or has no finite MLE decide a bound)") if sep["ml_undefined"] else ""  # fmt: skip
    return (f"Of the {sep['pairs']:,} pairs of agents, {sep['ml']:,} are separated by the ML bootstrap: its {mlab} "
            f"interval of the difference a - b, defined in each resample where both agents are present, excludes "
            f"0{undefined}.")  # fmt: skip


def _ml_columns(res, agents: list[str]) -> tuple[pd.DataFrame, str]:
    """ML estimate and interval per agent (every agent of ``agents``; NaN where it has none), and its label."""
    label = interval_label(res.ci)
    est = res.estimate.to_series()
    est.index = est.index.astype(str)
    ci = res.ci.to_series().unstack("ci_bound")
    ci.index = ci.index.astype(str)
    cols = pd.DataFrame({"ML estimate": est, f"ML {label} lower": ci["lower"], f"ML {label} upper": ci["upper"]})
    return cols.reindex(agents), label


def _ml_flags(table: pd.DataFrame, label: str) -> pd.Series:
    """Why an agent's ML estimate or interval is missing or infinite (empty where it is not)."""
    lo, hi = table[f"ML {label} lower"], table[f"ML {label} upper"]
    flags = pd.Series("", index=table.index, dtype=object)
    flags[np.isinf(lo) | np.isinf(hi)] = "an ML bound is infinite (resamples without a finite MLE send it there)"
    flags[table["ML estimate"].notna() & (lo.isna() | hi.isna())] = (
        "ML interval undefined: resamples without a finite MLE decide a bound")
    flags[table["ML estimate"].isna()] = "no finite ML estimate (see the text)"
    return flags


def _sec_battle_freq(ctx: _Context, rep: Report, sid: str) -> None:
    """The section: Bayesian and ML abilities side by side, ratio of widths, pairs separated by each."""
    if ctx.battles is None or ctx.freq is None:
        raise _Skip("needs a battle log and the frequentist half (freq not None)")
    options, model_words = ml_options(ctx)
    bayes = _bayes_draws(ctx)
    res, said = battle_ml(ctx, options)
    agents = list(bayes[0].columns) if bayes is not None else [str(a) for a in ctx.battles["agent"].values]
    parts, texts = [], []
    if bayes is not None:
        bcols, blab = _bayes_columns(bayes[1], agents, ctx.prob)
        parts.append(bcols)
    if isinstance(res, Exception):
        mcols = pd.DataFrame({"ML estimate": np.nan}, index=pd.Index(agents, name="agent"))
        mlab, mflag = None, f"not estimated: fit_bradley_terry_ml refused the battles ({type(res).__name__})"
        texts.append(f"hierbench.freq.fit_bradley_terry_ml refused these battles, so no agent has an ML "
                     f"estimate here: {str(res).rstrip('.')}.")  # fmt: skip
    else:
        mcols, mlab = _ml_columns(res, agents)
        mflag = None
    parts.append(mcols)
    table = pd.concat(parts, axis=1)
    table.index.name = "agent"
    if bayes is not None and mlab is not None:
        bw = table[f"Bayes {blab} upper"] - table[f"Bayes {blab} lower"]
        with np.errstate(invalid="ignore", divide="ignore"):
            table["width ratio (ML / Bayes)"] = (table[f"ML {mlab} upper"] - table[f"ML {mlab} lower"]) / bw
    flags = _ml_flags(table, mlab) if mlab is not None else pd.Series(mflag, index=table.index, dtype=object)
    if (flags != "").any():
        table["flag"] = flags
    if bayes is not None:
        table = in_report_order(table, ctx)
    else:
        table = table.sort_values("ML estimate", ascending=False, kind="stable")
    text = _text(ctx, table, res, said, model_words, bayes, (blab if bayes is not None else None, mlab), texts)
    rep.section(_TITLES[sid], text, table=table, id=sid)


def _text(ctx, table, res, said, model_words, bayes, labels, texts) -> str:
    """The section's prose: what each column is, the widths and separated pairs, and what to take from them."""
    blab, mlab = labels
    ok = not isinstance(res, Exception)
    head = ["Each agent's Bradley-Terry ability in logits"]
    if blab is not None:
        head.append(f"from the Bayesian fit (posterior mean and {blab} interval: equal-tailed, {ctx.prob:.0%} of the posterior between its ends)")
    if ok:
        head.append(f"{'and ' if blab is not None else ''}by maximum likelihood, hierbench.freq.fit_bradley_terry_ml (estimate and {mlab} interval, "
                    f"{res.ci.attrs.get('ci_detail', '')}, seed {ctx.rng})")  # fmt: skip
    out = [" ".join(head) + ". " + model_words]
    if bayes is not None:
        out.append(f"Both are centred on the mean ability of all agents (sum zero): {bayes[2]}; the ML estimate "
                   "is centred so (no reference agent).")  # fmt: skip
    elif ok:
        out.append("The ML estimates are centred on the mean ability of all agents (sum zero; no reference agent).")
    out += texts
    few = res.attrs.get("few_clusters") if ok else ""
    said = [s for s in said if not (few and few in s)]  # said once, below, with what it means here
    if said:
        out.append("fit_bradley_terry_ml warned: " + " ".join(s.rstrip(".") + "." for s in said))
        if ctx.fit is not None and any("ties='none'" in s for s in said):
            out.append(REFIT_WITHOUT_TIES)
    if ok and blab is not None:
        out += _comparison(ctx, table, res, bayes[0], mlab)
    elif ok:
        out.append(_ml_separated(ctx, res, [str(a) for a in table.index], mlab))
    if few and res.attrs.get("resample") == "task":
        out.append(f"Even the bootstrap's intervals may be too narrow: {few}.")
    rows = order_words(ctx) if blab is not None else "agents by ML estimate, highest first"
    out.append(f"Rows: {rows}.")
    return " ".join(out)


def _comparison(ctx: _Context, table: pd.DataFrame, res, x: pd.DataFrame, mlab: str) -> list[str]:
    """Sentences on the ratio of widths and the pairs each separates, and what the reader should take."""
    ratio = table["width ratio (ML / Bayes)"]
    fin = ratio[np.isfinite(ratio)]
    agents = [str(a) for a in table.index]
    sep = separated_pairs(x[agents].values, _relative(res, agents), ctx.prob)
    undefined = f" ({sep['ml_undefined']} pairs' ML bound undefined)" if sep["ml_undefined"] else ""
    pairs = (f"Of the {sep['pairs']:,} pairs of agents, {sep['bayes']:,} are separated by the Bayesian fit "
             f"(P(a > b) above {(1 + ctx.prob) / 2:.3g} or below {(1 - ctx.prob) / 2:.3g}) and {sep['ml']:,} by the "
             f"ML bootstrap (its {mlab} interval of the difference excludes 0){undefined}.")  # fmt: skip
    if fin.empty:
        return ["No agent has both intervals finite: the widths cannot be compared.", pairs]
    med = float(fin.median())
    out = [f"The ML interval is a median {med:.2f}x as wide as the Bayesian one (from {fin.min():.2f}x to "
           f"{fin.max():.2f}x; wider for {int((fin > 1).sum())} of {fin.size} agents).", pairs]  # fmt: skip
    by_task = res.attrs.get("resample") == "task"
    if not by_task:
        out.append("The bootstrap resamples single battles, taken as independent as the Bayesian model takes "
                   "them: the two differ by prior and estimator only (the prompt column, read_battles(task=...) "
                   "or the command line's --prompt, lets it resample the prompts, each with all its battles).")  # fmt: skip
    elif med >= WIDER:
        out.append("The Bayesian model takes the battles as independent; battles sharing a prompt are "
                   f"correlated, and here the prompt bootstrap's intervals are a median {med:.2f}x as wide: "
                   "trust the bootstrap's, and read the Bayesian intervals, ranks and pairwise probabilities "
                   f"as surer than the prompts allow ({sep['bayes'] - sep['ml']:+,} pairs separated).")  # fmt: skip
    elif med > 1 / WIDER:
        out.append("The Bayesian model takes the battles as independent; the prompt bootstrap, which allows for "
                   "battles sharing a prompt, is not much wider here, so that dependence changes little.")  # fmt: skip
    else:
        out.append("The prompt bootstrap's intervals are the narrower here: no sign that battles sharing a prompt "
                   "make the Bayesian ones too narrow.")  # fmt: skip
    return out
