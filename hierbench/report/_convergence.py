"""The convergence section: every check with its limit and why, a verdict that agrees with the plots."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import xarray as xr

from .._base import NOT_FULLY_CHECKED
from .._base import fit_checks
from .._base import fit_record
from .._base import fit_verdict
from .._base import stale_counts
from ..bayes import convergence_remedy
from ._context import _TITLES
from ._context import _Context
from ._context import _Skip
from ._figures import rank_p_text
from ._report import Report


def _worst(fit: xr.DataTree, post: xr.Dataset, n: int = 3) -> list[tuple[str, dict, float]]:
    """The ``n`` scalar parameter slices with the highest R-hat (ties by lowest bulk ESS)."""
    if "diagnostics" in fit.children and "r_hat" in fit["diagnostics"].children:
        rhat = fit["diagnostics"]["r_hat"].to_dataset()
    else:
        import arviz_stats as azs

        rhat = azs.rhat(post, sample_dims=["chain", "draw"])
    rows = []
    for name, da in rhat.data_vars.items():
        if name not in post:
            continue
        s = da.to_series() if da.ndim else pd.Series([float(da)], index=[()])
        for key, v in s.items():
            if not np.isfinite(v):
                continue
            key = key if isinstance(key, tuple) else (key,)
            sel = dict(zip(da.dims, key, strict=True)) if da.ndim else {}
            rows.append((str(name), sel, float(v)))
    rows.sort(key=lambda r: -r[2])
    return _distinct(rows, post, n)


def _standardised(draws: np.ndarray) -> np.ndarray:
    """Draws minus their mean over their sd (a constant stays as it is)."""
    draws = np.asarray(draws, dtype=float)
    sd = float(np.std(draws))
    return (draws - float(np.mean(draws))) / sd if sd > 0 and np.isfinite(sd) else draws


def _distinct(rows: list[tuple[str, dict, float]], post: xr.Dataset, n: int) -> list[tuple[str, dict, float]]:
    """The first ``n`` rows whose draws differ.

    A model that also stores a stack of its own parameters (a formula model's
    ``sd`` over ``component`` beside the scalar ``sd(1|agent)``) or a rescaling of one
    (a Bradley-Terry fit's ``elo``, an affine map of ``ability``) holds the same draws
    twice, up to location and scale, and a reader would see one parameter listed and
    plotted as two: draws that standardise to the same values (1e-9) are one.
    """
    out: list[tuple[str, dict, float]] = []
    seen: list[np.ndarray] = []
    for name, sel, r in rows:
        draws = _standardised(post[name].sel(sel).values if sel else post[name].values)
        if not any(d.shape == draws.shape and np.allclose(d, draws, rtol=0, atol=1e-9) for d in seen):
            out.append((name, sel, r))
            seen.append(draws)
        if len(out) == n:
            break
    return out


_CHECK_LABELS = {
    "r_hat": "R-hat (rank-normalised split), largest",
    "ess_bulk": "ESS bulk, smallest",
    "ess_tail": "ESS tail, smallest",
    "divergences": "divergent transitions",
    "bfmi": "E-BFMI, smallest chain",
}


def _diag_checks(fit: xr.DataTree) -> tuple[list[dict], list[str]]:
    """The fit's recorded checks (value, where, limit, why) and failures, from one computation.

    Fits saved before the checks were recorded, and fits whose draws were cut after the
    checks were recorded, get them recomputed (``_diagnosed``; their failures too, so
    the rows and the verdict agree). Recorded checks that cannot be read (an edited file)
    are refused by name (``hierbench._base.fit_checks``): the table states a verdict from them.
    """
    fit, _ = _diagnosed(fit)
    failures = fit.attrs.get("diag_failures", "[]")
    try:
        failures = json.loads(failures) if isinstance(failures, str) else list(failures)
    except ValueError:
        failures = [failures]
    return fit_checks(fit), failures


def _diagnosed(fit: xr.DataTree) -> tuple[xr.DataTree, str]:
    """The fit with convergence checks of the draws it holds, and a sentence when they were recomputed for that.

    A fit saved before the checks were recorded gets them computed (nothing recorded, nothing
    to say). A fit whose recorded checks state other chain and draw counts (``diag_n_chains``,
    ``diag_n_draws``) than its posterior holds (draws cut with ``isel`` or ``sel`` after
    fitting) gets them recomputed on the draws there are, at the recorded thresholds, and the
    sentence says so. A fit that records no counts (older files) is read as it is.
    """
    if "posterior" not in fit.children:
        return fit, ""
    from .. import bayes

    if "diag_checks" not in fit.attrs:
        return bayes.compute_diagnostics(fit, warn=False), ""
    counts = stale_counts(fit)
    if counts is None:
        return fit, ""
    was, now = counts
    th = {k: v for k, v in fit_record(fit, "diag_thresholds").items() if k in bayes.DEFAULT_THRESHOLDS}
    redone = bayes.compute_diagnostics(fit, thresholds=th or None, warn=False)
    note = (
        f"The convergence checks saved with this fit were computed on {was[0]} chains x {was[1]:,} draws, "
        f"but its posterior holds {now[0]} x {now[1]:,} (draws cut after fitting): every check below is "
        "recomputed here on the draws there are."
    )
    redone.attrs[RECOMPUTED] = note  # the report's copy: every section then reads the recomputed verdict
    return redone, note


#: the root attr of the report's copy of a fit whose checks it recomputed (``_diagnosed``): the sentence
RECOMPUTED = "diag_recomputed"


def _shown(check: str, value: float) -> str:
    """A check's value as people read it: counts whole, p-values to two figures, the rest to three decimals."""
    if check == "p":
        return rank_p_text(value)
    if not np.isfinite(value):
        return "not computed"
    if check in ("ess_bulk", "ess_tail", "divergences"):
        return f"{value:,.0f}"
    return f"{value:.3f}"


def _check_rows(checks: list[dict], ranks: dict[str, float], alpha: float, thin: int = 1) -> pd.DataFrame:
    rows = []
    for c in checks:
        limit = f"{'≤' if c['rule'] == '<=' else '≥'} {c['limit']:.4g}"
        value = c["value"]
        if c.get("over_limit_at"):
            value, limit = c["over_limit_value"], f"≤ {c['over_limit_limit']:.4g}"
        value = "not recorded" if c.get("not_checked") else _shown(c["check"], value)
        rows.append({
            "check": _CHECK_LABELS.get(c["check"], c["check"]),
            "value": value,
            "at": c.get("over_limit_at") or c["at"],
            "limit": limit,
            "passes": "not checked" if c.get("not_checked") else bool(c["passed"]),
            "why this limit": c["why"],
        })  # fmt: skip
    tested = {k: v for k, v in ranks.items() if np.isfinite(v)}  # none with too few chains
    if tested:
        at, p = min(tested.items(), key=lambda kv: kv[1])
        n = _n_elements(checks, len(ranks))
        rows.append({
            "check": "rank plots below: chains' ranks uniform, smallest p",
            "value": _shown("p", p),
            "at": at,
            "limit": f"≥ {alpha / n:.2g}",
            "passes": p >= alpha / n,
            "why this limit": "the multi-chain rank uniformity test arviz-plots prints on each "
            f"rank plot; the plotted parameters are the highest R-hats of {n:,} elements, so the "
            f"limit is {alpha:g} / {n:,} (Bonferroni): a converged fit is flagged with probability "
            f"at most {alpha:g}, as for the R-hat limit. The test takes draws as independent, so it "
            + (f"reads one draw in {thin} (about the effective sample size)" if thin > 1 else
               "reads every draw (their effective sample size is about their number)"),
        })  # fmt: skip
    return pd.DataFrame(rows).set_index("check")


def _n_elements(checks: list[dict], n_plotted: int) -> int:
    """How many elements the plotted ones were picked from (the R-hat check's count)."""
    n = next((c.get("n_elements") for c in checks if c["check"] == "r_hat"), None)
    return max(int(n) if n else n_plotted, n_plotted)


def _verdict(failures: list, table: pd.DataFrame, marked: dict[str, float] | None = None,
             alpha: float = 0.01, remedy: str = "", unchecked: bool = False) -> tuple[str, str | None]:
    """One line that agrees with every row of the table, and explains a panel the plots mark.

    ``remedy``: what to do about a fit that failed (``hierbench.bayes.convergence_remedy``).
    ``unchecked``: every one of ``failures`` is a check that could not be made (the fit's
    ``diag_verdict`` is "not fully checked"): never "every check passes".
    """
    if failures and unchecked:
        return "not fully checked", (
            "Not every convergence check could be made: " + "; ".join(map(str, failures))
            + ". The checks that were made pass; the fit's summaries rest on them only."
        )
    if failures:
        return "not converged", (
            "The fit FAILED convergence checks: " + "; ".join(map(str, failures))
            + ". Do not trust its summaries." + (f" What to do: {remedy}." if remedy else "")
        )
    flagged = table[~table["passes"].astype(bool)]
    if len(flagged):
        said = "; ".join(
            f"{check.split(':')[0]} at `{row['at']}` ({row['value']}, limit {row['limit']})"
            for check, row in flagged.iterrows()
        )
        return "warning", (
            f"Every convergence threshold passes, but {said} is flagged: look at its plot before "
            "trusting the tails of that parameter."
        )
    if marked and not any(np.isfinite(v) for v in marked.values()):
        return "converged: every check passes (the rank plots' uniformity test was not run)", None
    low = {k: v for k, v in (marked or {}).items() if v < alpha}
    if low:
        said = ", ".join(f"`{k}` (p = {rank_p_text(v)})" for k, v in low.items())
        return "converged: every check passes, the rank plots included", (
            f"The rank plots below mark {said} at the per-panel level {alpha:g}. The plotted "
            "parameters are the most extreme of many, so such marks are expected by chance; the rank "
            "plots' check in the table below allows for the number of elements and passes."
        )
    return "converged: every check passes, the rank plots included", None


def _sec_convergence(ctx: _Context, rep: Report, sid: str) -> None:
    if ctx.fit is None:
        raise _Skip("no fit given: the Bayesian sections need a fit")
    from . import _figures as F

    fit, recomputed = _diagnosed(ctx.fit)  # the checks of the draws the fit holds
    recomputed = recomputed or str(fit.attrs.get(RECOMPUTED, ""))  # done once already, for the whole report
    a = fit.attrs
    worst = _worst(fit, ctx.post)
    sel = [(v, s) for v, s, _ in worst]
    alpha = 1 - F.RANK_ENVELOPE
    checks, failures = _diag_checks(fit)
    thin = F.rank_thinning(ctx.post, sel) if sel else 1  # once: the test and the plot read the same draws
    ranks = F.rank_tests(ctx.post, sel, step=thin) if sel else {}
    table = _check_rows(checks, ranks, alpha, thin)
    unchecked = fit_verdict(a) == NOT_FULLY_CHECKED
    remedy = convergence_remedy(fit, cli=False) if failures and not unchecked else ""
    verdict, note = _verdict(failures, table, ranks, alpha, remedy, unchecked)
    if failures:  # said under the title too: the verdict binds every posterior number before this section
        rep.lead = (("Fit not fully checked: " + "; ".join(map(str, failures)) + ". Its summaries below rest on "
                     "the checks that were made only; the Convergence section gives each check.") if unchecked else
                    "Fit not converged: " + "; ".join(map(str, failures)) + ". Do not trust its summaries (the "
                    "agent abilities, ranks and P(a > b) below); the Convergence section gives each check"
                    + (" and what to do." if remedy else "."))  # fmt: skip
    text = (
        f"Sampler {a.get('sampler', '?')} with settings {a.get('sampler_settings', '')}. "
        f"**Verdict: {verdict}.** " + (f"{recomputed} " if recomputed else "")
        + "Each check below states its limit and why the limit is what it is."
    )
    if worst:
        text += "\n\nThe parameters with the highest R-hat are plotted below: " + ", ".join(
            f"`{v}{list(s.values()) if s else ''}` {r:.3f}" for v, s, r in worst
        ) + "."
    if ranks and not any(np.isfinite(v) for v in ranks.values()):
        text += (
            f" Their chains' rank uniformity is not tested: the multi-chain test needs at least "
            f"{F.RANK_TEST_MIN_CHAINS} chains and this fit has {ctx.post.sizes['chain']} (with 2 its p is 1 "
            "whether or not the chains agree); R-hat and ESS above still compare the chains."
        )
    rep.section(_TITLES[sid], text, table=table, id=sid, note=note)
    if worst:
        rep.figure(
            "rank_worst",
            F.rank_plot(ctx.post, sel, ranks, step=thin),
            "Rank plots (fractional-rank ECDF minus uniform, one line per chain) of the parameters "
            "with the highest R-hat"
            + (f", one draw in {thin} (about their effective sample size: the envelope and the test "
               "take draws as independent)" if thin > 1 else "")
            + ", with the multi-chain uniformity p-value on each panel: "
            f"p < {alpha:g} marks the panel (a per-panel level; the check in the table allows for "
            "the number of elements these were picked from).",
        )
        rep.figure(
            "trace_worst",
            F.trace_plot(ctx.post, sel),
            "Trace (draw index vs parameter value on its model scale) and marginal density per chain "
            "of the same parameters.",
        )
    if "sample_stats" in ctx.fit.children and "energy" in ctx.fit["sample_stats"]:
        rep.figure(
            "energy",
            F.energy_plot(ctx.fit),
            "Energy plot: marginal energy and energy-transition distributions (centred); similar "
            "widths and E-BFMI above 0.3 mean the sampler explores the tails.",
        )

