"""The subset-estimates section: design-based scores from a subset of tasks, the model-based ones beside them.

A subset result (:class:`hierbench.design.AssistedResult`, from
``design.assisted_mean`` or ``design.assisted_adaptive``) estimates each
agent's full-benchmark score from the tasks drawn, design-unbiasedly, with
the working model's predictions as auxiliary information; it also gives the
purely model-based score, which trusts the model on every task not run, and
a per-agent misfit test. The section shows them side by side and marks the
agents whose observed tasks disagree with the model beyond chance: for them
only the design-based estimate is to be used.

The report does not import ``design`` (it sits beside it): a result is
recognised by the fields it carries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .._base import interval_label
from ._context import _TITLES
from ._context import _Context
from ._report import Report

__all__ = ["FLAG_TEXT", "MODEL_COLUMN", "check_subset", "subset_frame"]

#: Column of the purely model-based score, and the flag column's text for an agent that misfits.
MODEL_COLUMN = "model-based (trusts the bank on unseen tasks)"
FLAG_TEXT = "misfit: do not use the model-based score"

_FIELDS = ("estimate", "ci", "n_tasks", "model_estimate", "misfit_p", "misfit_p_holm", "misfit_flag",
           "draws", "design", "working")

_PLANS = {
    "srs": "a simple random sample drawn in advance",
    "stratified": "a stratified random sample drawn in advance",
    "pps": "successive draws with probability proportional to a size measure, drawn in advance",
    "poisson": "Poisson sampling (each task in or out independently), drawn in advance",
}


def check_subset(subset: object) -> list:
    """The subset results as a list; refuse anything that is not an ``AssistedResult`` (or a sequence of them)."""
    single = not isinstance(subset, Sequence) or isinstance(subset, str)
    items = [subset] if single else list(subset)
    if not items:
        raise ValueError("`subset` is an empty sequence: give None or at least one AssistedResult")
    for i, r in enumerate(items):
        missing = [f for f in _FIELDS if not hasattr(r, f)]
        if missing:
            where = "" if single else f" (item {i})"
            raise TypeError(
                "`subset` must be an AssistedResult (hierbench.design.assisted_mean or assisted_adaptive) "
                f"or a sequence of them; got {type(r).__name__}{where}, which lacks {missing}"
            )
    return items


def subset_frame(result) -> pd.DataFrame:
    """Per agent: design-based estimate and interval, tasks run, model-based score, misfit p-values and flag.

    The numbers are the result's own (``result.to_frame()``), renamed for
    readers; without a working model (no model-based score, no misfit test)
    those columns are left out.
    """
    f = result.to_frame()
    out = pd.DataFrame(
        {
            "design-based estimate": f["estimate"],
            "lower": f["lower"],
            "upper": f["upper"],
            "tasks run": f["n_tasks"],
            MODEL_COLUMN: f["model_estimate"],
            "misfit p": f["misfit_p"],
            "misfit p (Holm)": f["misfit_p_holm"],
            "flag": np.where(f["misfit_flag"].astype(bool), FLAG_TEXT, ""),
        }
    )
    out.index = out.index.astype(str)
    if f["model_estimate"].isna().all() and f["misfit_p"].isna().all():
        out = out.drop(columns=[MODEL_COLUMN, "misfit p", "misfit p (Holm)", "flag"])
    return out


def _n_benchmark(result) -> int:
    """Tasks of the benchmark: each stratum's pool at its first draw, summed (first agent's record)."""
    dr = result.draws.isel(agent=0)
    ok = np.isfinite(dr["pool"].values)
    h, pool = dr["stratum"].values[ok], dr["pool"].values[ok]
    return int(sum(pool[h == s].max() for s in np.unique(h)))


def _design_words(design: str) -> str:
    """How the tasks were drawn, in words (the result's ``design`` string)."""
    if design.startswith("plan: "):
        return _PLANS.get(design[6:], design[6:])
    if design.startswith("adaptive: "):
        return "drawn one at a time, " + design[10:].removesuffix(", probabilities recorded")
    return design


def subset_sentence(result, report_prob: float) -> str:
    """The design, the estimator and the interval in words (the sentence above the table)."""
    n = result.n_tasks.values
    n_text = f"{int(n.min())}" if n.min() == n.max() else f"{int(n.min())} to {int(n.max())}"
    q = result.draws["draw_prob"].values
    ci = result.ci
    detail = str(ci.attrs.get("ci_detail", ""))
    assisted = not bool(np.isnan(result.model_estimate.values).all())
    poisson = str(result.design) == "plan: poisson"
    # Des Raj divides by each draw's probability and Horvitz-Thompson by each inclusion probability;
    # the plain, stratified and classical difference estimators use only n_h / T_h per stratum
    uses = str(getattr(result, "estimator", "Des Raj")) == "Des Raj" or poisson
    text = (
        f"Design: {n_text} of {_n_benchmark(result)} tasks per agent, {_design_words(str(result.design))}; "
        f"{'each task' if poisson else 'each draw'}'s probability is recorded "
        f"({np.nanmin(q):.3g} to {np.nanmax(q):.3g})"
        + (" and used by the estimator" if uses else "; the estimator uses only each stratum's share drawn")
        + f". Estimator: design-unbiased, {'model-assisted' if assisted else 'no working model'}: "
        f"{detail}" + ("" if str(result.working) in detail else f"; working model: {result.working}")
        + f". Interval: {interval_label(ci)}."
    )
    prob = float(ci.attrs.get("ci_prob", np.nan))
    if not np.isclose(prob, report_prob):
        text += f" (This result's level is {prob:.4g}, not the report's {report_prob:.4g}.)"
    return text


def _flag_text(result, table: pd.DataFrame) -> str:
    flagged = table.index[table["flag"] != ""].tolist()
    alpha = 1 - float(result.ci.attrs.get("ci_prob", np.nan))
    rule = (f"an agent is flagged when its one-sided misfit p-value (prequential person-fit test) is below "
            f"{alpha:.3g}, not adjusted; the Holm column adjusts over the {result.estimate.sizes['agent']} agents")
    if not flagged:
        return f"No agent flagged for misfit ({rule})."
    return (f"Flagged for misfit: {', '.join(flagged)} ({rule}). For them the model-based score is not to be used; "
            "their design-based estimate stays unbiased whatever the model's fit (its interval is the one "
            "described above).")


def _sec_subset(ctx: _Context, rep: Report, sid: str) -> None:
    """One block per subset result, each with its sentence, its table and its misfit flags."""
    for i, result in enumerate(ctx.subset, start=1):
        table = subset_frame(result)
        text = [subset_sentence(result, ctx.prob)]
        if "flag" in table:
            text.append(_flag_text(result, table))
        else:
            text.append("No working model: no model-based score and no misfit test.")
        more = "" if i == 1 else f" ({i})"
        rep.section(
            _TITLES[sid] + more,
            "\n\n".join(text),
            table=table,
            id=sid + more.replace(" (", "-").rstrip(")"),
            # the flag column is text: a non-empty cell marks its row in HTML
            flag="flag" if "flag" in table else None,
        )
