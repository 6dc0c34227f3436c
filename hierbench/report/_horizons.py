"""The time-horizons section: each agent's 50% and 80% horizons, Bayesian and METR's, side by side.

Written for a fit of :func:`hierbench.bayes.build_horizon` (its spec records the task coord of
human ``minutes``), and for a log that has a ``human_minutes`` coord, alone or beside a fit of
another model (METR's method only; the section says why the Bayesian half is absent).
The Bayesian half is :func:`hierbench.metrics.time_horizon` on the fit and its design rebuilt
from the report's data (the saved fit does not keep the tasks' minutes); the frequentist half
is :func:`hierbench.freq.time_horizon` on the report's data, seeded by the report's ``rng``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .._base import fit_record
from .._base import interval_label
from ._context import _TITLES
from ._context import _Context
from ._context import _Skip
from ._order import in_report_order
from ._report import Report

#: the success probabilities the section reports (METR's)
HORIZON_SUCCESS = (0.5, 0.8)
#: the minutes coord a log alone is read for (the horizon builder's and METR's default)
LOG_MINUTES = "human_minutes"


def horizon_minutes(fit: xr.DataTree | None, data: xr.Dataset | None) -> str | None:
    """The task coord of human minutes the section reads; None where the report has no horizons.

    A fit's spec records it (``build_horizon``). Beside any other fit, or without one, the
    log has one when it holds a ``human_minutes`` coord along ``task`` (METR's half is a
    computation on the log, whatever the fit; audit S: a crossed fit made the section vanish).
    """
    if fit is not None and fit_minutes(fit):
        return fit_minutes(fit)
    if data is not None and LOG_MINUTES in data.coords and data[LOG_MINUTES].dims == ("task",):
        return LOG_MINUTES
    return None


def fit_minutes(fit: xr.DataTree) -> str | None:
    """The task coord of minutes a ``build_horizon`` fit records in its spec; None for any other fit."""
    return fit_record(fit, "hierbench_spec").get("options", {}).get("minutes") or None


def with_horizons(order: tuple[str, ...], fit, data) -> tuple[str, ...]:
    """``order`` with the time-horizons section after the abilities, where the report has horizons."""
    if horizon_minutes(fit, data) is None or "abilities" not in order:
        return order
    at = order.index("abilities") + 1
    return (*order[:at], "horizons", *order[at:])


def _bayes_half(ctx: _Context, why: list[str]):
    """:func:`hierbench.metrics.time_horizon` of the fit (None, with the reason in ``why``)."""
    if ctx.fit is None:
        why.append("Bayesian half: no fit given (a fit of hierbench.bayes.build_horizon gives it)")
        return None
    if fit_minutes(ctx.fit) is None:
        model = ctx.fit.attrs.get("hierbench_model", "custom")
        why.append(f"Bayesian half: the fit is a {model} fit, not hierbench.bayes.build_horizon's, so it has no "
                   "success curve over task length (a fit of build_horizon gives it)")  # fmt: skip
        return None
    design = ctx.mixed_design()
    if design is None:
        why.append("Bayesian half: the horizon model's design could not be rebuilt from the data (see the warnings)")
        return None
    from ..metrics import time_horizon

    return time_horizon(ctx.fit, design, success=HORIZON_SUCCESS, prob=ctx.prob)


def _freq_half(ctx: _Context, minutes: str, why: list[str]):
    """:func:`hierbench.freq.time_horizon` of the data, seeded by the report, or ``freq["horizon"]``.

    None, with the reason in ``why``, where it is left out or cannot be computed.
    """
    if not ctx.want_freq("horizon"):
        why.append(f"METR's method: the frequentist half was not asked for ({ctx.left_out('horizon')})")
        return None
    return ctx.freq_result("horizon", lambda: _metr(ctx, minutes, why))


def _metr(ctx: _Context, minutes: str, why: list[str]):
    """:func:`hierbench.freq.time_horizon` of the report's data at its settings (None where it cannot be)."""
    if "cluster" not in ctx.data.coords:
        why.append("METR's method: the data have no `cluster` coord of task families, which its run weights "
                   "and its bootstrap over families need")  # fmt: skip
        return None
    from .. import freq

    ctx.say(f"METR time horizons, {ctx.n_resamples} bootstrap resamples")
    return freq.time_horizon(ctx.data, minutes=minutes, success=HORIZON_SUCCESS, n_resamples=ctx.n_resamples,
                             prob=ctx.prob, rng=ctx.rng)  # fmt: skip


def _refused(half, name: str, ctx: _Context, why: list[str], *args):
    """One half, or None where its function refuses the data (tasks without valid minutes, say): said, not raised."""
    from .._base import HierbenchError

    try:
        return half(ctx, *args, why)
    except HierbenchError as exc:
        why.append(f"{name}: {exc}")
        ctx.warnings.append(f"Time horizons, {name}: {exc}")
        return None


def _half(res, name: str, est: str, n_of: int, limit: str) -> pd.DataFrame:
    """One method's columns, rows ``(agent, success)``: estimate, interval, draws (resamples) at a limit."""
    k = interval_label(res.ci)
    frame = pd.DataFrame({
        f"{name} {est}": res.estimate.to_series(),
        f"{name} {k} lower": res.ci.sel(ci_bound="lower", drop=True).to_series(),
        f"{name} {k} upper": res.ci.sel(ci_bound="upper", drop=True).to_series(),
    })  # fmt: skip
    frame[f"{name} {limit}"] = [f"{int(res.n_undefined.sel(agent=a))} of {n_of}"
                                for a in frame.index.get_level_values("agent")]  # fmt: skip
    return frame


def horizon_table(bayes, metr) -> pd.DataFrame:
    """Both methods' horizons in minutes, one row per agent and success probability.

    Each interval's column names its level and kind; ``limit draws`` / ``limit resamples`` count the
    draws or resamples that entered at a limit horizon (0 or infinite); ``flag`` names per method an
    estimate outside the tasks' lengths (extrapolated), at a limit or missing, limit counts past
    ``(1 - prob) / 2`` of the draws (resamples), where the limit decides a bound, and resamples METR's
    method left out.
    """
    parts, flags = [], []
    if bayes is not None:
        n = int(bayes.draws.sizes["chain"] * bayes.draws.sizes["draw"])
        parts.append(_half(bayes, "Bayes", "median", n, "limit draws"))
        flags.append(_flags(bayes, "Bayes", n, "draws", float(bayes.ci.attrs["ci_prob"])))
    if metr is not None:
        n = int(metr.options["n_resamples"])
        parts.append(_half(metr, "METR", "estimate", n, "limit resamples"))
        flags.append(_flags(metr, "METR", n, "resamples", float(metr.ci.attrs["ci_prob"])))
    wide = pd.concat(parts, axis=1)
    flag = pd.concat(flags, axis=1).reindex(wide.index).fillna("")
    wide["flag"] = flag.apply(lambda r: "; ".join(x for x in r if x), axis=1)
    wide.index = pd.MultiIndex.from_arrays(
        [wide.index.get_level_values("agent").astype(str),
         [f"{p:.0%}" for p in wide.index.get_level_values("success")]], names=["agent", "success"])  # fmt: skip
    return wide


def _extrapolated_text(res) -> str:
    """The rows whose estimate lies outside the tasks' lengths, in words."""
    ext = [f"{a} at {p:.0%}" for (a, p), v in res.extrapolated.to_series().items() if v]
    return f"Estimate outside the tasks' lengths (extrapolated): {', '.join(ext) if ext else 'none'}."


def _fit_check_text(res) -> str:
    """Whether METR's logistic curve describes each agent's tasks, as ``fit_check`` found ("" without one)."""
    check = getattr(res, "fit_check", None)
    if check is None:
        return ""
    head = (f" Curve check (fit_check: observed against fitted success in {int(check.attrs['n_bins'])} bins of "
            f"task length, a bootstrap over task families, Holm over the agents at {check.attrs['alpha']:g}): ")
    bad = [f"{a} (Holm p {h:.2g})" for a, h, m in zip(check["agent"].values, check["p_holm"].values,
                                                       check["misfit"].values, strict=True) if m]  # fmt: skip
    if bad:
        return head + f"the curve misfits {', '.join(bad)}: read their horizons as summaries of a curve that does not describe these tasks."
    return head + "no agent's curve departs detectably (the check has modest power: no flag is not proof of fit)."


def _flags(res, name: str, n_of: int, sample: str, prob: float) -> pd.Series:
    """Per ``(agent, success)``: extrapolated, an estimate at a limit or missing, limits deciding a bound, left out."""
    est = res.estimate.to_series()
    out = pd.Series("", index=est.index, dtype=object)
    skipped = getattr(res, "n_skipped", None)
    for (a, p), v in est.items():
        said = [f"{name}: extrapolated"] if bool(res.extrapolated.sel(agent=a, success=p)) else []
        if np.isnan(v):
            said.append(f"{name}: no estimate (the warnings say why)")
        elif v == 0 or np.isinf(v):
            said.append(f"{name}: estimate at the limit {'0' if v == 0 else 'infinity'}")
        c = int(res.n_undefined.sel(agent=a))
        if c > (1.0 - prob) / 2.0 * n_of:
            said.append(f"{name}: {c} of {n_of} {sample} at a limit, more than (1 - {prob:g}) / 2: the limit "
                        + ("decides the median and a bound" if c > n_of / 2 else "decides a bound"))  # fmt: skip
        if skipped is not None and int(skipped.sel(agent=a)):
            said.append(f"{name}: {int(skipped.sel(agent=a))} of {n_of} {sample} left out (not fitted)")
        out[(a, p)] = "; ".join(said)
    return out


def _text(ctx: _Context, bayes, metr, why: list[str]) -> str:
    parts = ["Each agent's time horizon: the human task length (minutes) at which its chance of success "
             "is 50% or 80%. Each interval's columns name its level and kind; `flag` names, per method, an "
             "estimate outside the tasks' lengths (extrapolated), at a limit (0 or infinite) or missing, and "
             f"limit draws (resamples) past (1 - {ctx.prob:g}) / 2 of them, where the limit decides a bound."]  # fmt: skip
    if bayes is not None:
        n = int(bayes.draws.sizes["chain"] * bayes.draws.sizes["draw"])
        parts.append(
            "Bayes: hierbench.metrics.time_horizon of the fit, the posterior median and the equal-tailed "
            f"interval over draws, read off the agent's success curve at a task of average difficulty "
            f"(the task effects integrated out), {n} draws: {bayes.ci.attrs['ci_detail']}. "
            + _extrapolated_text(bayes))
    if metr is not None:
        seed = " (given in `freq['horizon']`)" if ctx.given("horizon") else f" (seed {ctx.rng})"
        parts.append(
            "METR: hierbench.freq.time_horizon of the data, METR's weighted logistic regression per agent with "
            f"its hierarchical bootstrap{seed}: {metr.ci.attrs['ci_detail']}. "
            + _extrapolated_text(metr) + _fit_check_text(metr))
    if bayes is not None and metr is not None:
        parts.append("The two differ by design (hierbench.bayes.build_horizon): task families are random "
                     "effects rather than run weights, and the 80% horizon is read off the marginal curve, "
                     "flatter at its ends than METR's logistic one." + _apart_text(bayes, metr))  # fmt: skip
    parts += [" ".join(f"Not computed: {w}." for w in why)] if why else []
    return "\n\n".join(parts)  # a paragraph per method


def _apart_text(bayes, metr) -> str:
    """How many agents' 80% horizons the two methods put further apart than their 50% ones, from the estimates.

    Apart is ``|log(Bayes / METR)|``, over the agents with a finite positive estimate from both
    methods at both levels; "" where there is none.
    """
    agents = [a for a in bayes.estimate["agent"].values if a in set(metr.estimate["agent"].values)]
    if not agents:
        return ""
    b = bayes.estimate.sel(agent=agents, success=list(HORIZON_SUCCESS)).transpose("agent", "success").values
    m = metr.estimate.sel(agent=agents, success=list(HORIZON_SUCCESS)).transpose("agent", "success").values
    ok = (np.isfinite(b) & (b > 0) & np.isfinite(m) & (m > 0)).all(axis=1)
    if not ok.any():
        return ""
    apart = np.abs(np.log(b[ok]) - np.log(m[ok]))
    more = int((apart[:, 1] > apart[:, 0]).sum())
    return (f" Here the two estimates are further apart (as a ratio) at {HORIZON_SUCCESS[1]:.0%} than at "
            f"{HORIZON_SUCCESS[0]:.0%} for {more} of the {int(ok.sum())} agents with a finite positive "
            "estimate from both.")


def _sec_horizons(ctx: _Context, rep: Report, sid: str) -> None:
    minutes = horizon_minutes(ctx.fit, ctx.data)
    if ctx.data is None:
        raise _Skip(f"the horizons need the tasks' human minutes (`{minutes}`), which a saved fit does not keep: "
                    "give the data the fit was made from (`--data`)")  # fmt: skip
    why: list[str] = []
    bayes = _refused(_bayes_half, "Bayesian half", ctx, why)
    metr = _refused(_freq_half, "METR's method", ctx, why, minutes)
    if bayes is None and metr is None:
        raise _Skip("; ".join(why))
    wide = in_report_order(horizon_table(bayes, metr), ctx)  # the report's one order (_order)
    rep.section(_TITLES[sid], _text(ctx, bayes, metr, why), table=wide, id=sid)
    fig, caption = horizon_figure({"Bayes": bayes, "METR": metr}, ctx.data)
    rep.figure("time_horizons", fig, caption)


#: how far beyond the tasks' lengths the figure's axis reaches (a factor each way); values past it sit at its edge
AXIS_REACH = 1000.0


def _clipped(v: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Values for a log axis: those below it (0, a limit horizon, included) at its left edge, above it at its right.

    NaN stays NaN (no estimate: nothing drawn).
    """
    return np.clip(v, lo, hi)


def _axis_range(results: dict, lengths: list) -> tuple[float, float]:
    """The log axis's ends: every finite positive value, but no further than ``AXIS_REACH`` past the tasks' lengths.

    A horizon of 1e-50 minutes (an agent that all but never succeeds) would otherwise squeeze the
    others into one column; values past the ends are drawn as arrows at the edge.
    """
    vals = [np.asarray(r.estimate.values, float).ravel() for r in results.values()]
    vals += [np.asarray(r.ci.values, float).ravel() for r in results.values()]
    v = np.concatenate([*vals, np.asarray(lengths, float)])
    v = v[np.isfinite(v) & (v > 0)]
    lo, hi = float(lengths[0]) / AXIS_REACH, float(lengths[1]) * AXIS_REACH
    return max(float(v.min()), lo) / 2.0, min(float(v.max()), hi) * 2.0


def _draw_panel(ax, results: dict, p: float, agents: list[str], ends: tuple[float, float]) -> None:
    """One success probability's panel: each method's interval and estimate per agent."""
    colors = ["tab:blue", "tab:orange"]
    offsets = np.linspace(0.18, -0.18, len(results)) if len(results) > 1 else np.zeros(1)
    y = np.arange(len(agents))[::-1]
    for (name, r), off, c in zip(results.items(), offsets, colors, strict=False):
        sel = {"agent": [a for a in agents if a in r.estimate["agent"].values], "success": p}
        pos = y[[agents.index(a) for a in sel["agent"]]] + off
        est = np.asarray(r.estimate.sel(sel).values, float)
        lo = np.asarray(r.ci.sel(ci_bound="lower", **sel).values, float)
        hi = np.asarray(r.ci.sel(ci_bound="upper", **sel).values, float)
        out = np.asarray(r.extrapolated.sel(sel).values, bool) | (est < ends[0]) | (est > ends[1])
        ax.hlines(pos, _clipped(lo, *ends), _clipped(hi, *ends), color=c, lw=2.2, label=f"{name} ({interval_label(r.ci)})")
        for v, mask, marker in ((lo, lo < ends[0], "<"), (hi, hi > ends[1], ">")):
            ax.plot(_clipped(v, *ends)[mask], pos[mask], marker, color=c, ms=7)
        inside = (est >= ends[0]) & (est <= ends[1])
        for mask, marker in ((inside, "o"), (est < ends[0], "<"), (est > ends[1], ">")):
            for m, face in ((mask & ~out, c), (mask & out, "white")):
                ax.plot(_clipped(est, *ends)[m], pos[m], marker, color=c, mfc=face, ms=6, zorder=3)
    ax.set_xscale("log")
    ax.set_xlim(ends[0] / 1.6, ends[1] * 1.6)  # room for the arrows drawn at the ends
    ax.set_title(f"{p:.0%} success")
    ax.set_xlabel("time horizon (human minutes, log scale)")
    ax.grid(axis="x", alpha=0.3)


def horizon_figure(results: dict, data: xr.Dataset | None):
    """Both methods' horizons, one panel per success probability (log minutes); with its caption."""
    from ._figures import _plt

    results = {k: v for k, v in results.items() if v is not None}
    first = next(iter(results.values()))
    from ._pairs import score_order

    # the report's one order (_order: with data, the summary's); the results' own agents otherwise
    agents = [a for a in score_order(data) if a in set(map(str, first.estimate["agent"].values))] if data is not None else []
    agents += [str(a) for r in results.values() for a in r.estimate["agent"].values if str(a) not in agents]
    lengths = getattr(first, "minutes_range", None) or first.options["minutes_range"]
    ends = _axis_range(results, lengths)
    plt = _plt()
    fig, axes = plt.subplots(1, len(HORIZON_SUCCESS), sharey=True, figsize=(12, 1.8 + 0.42 * len(agents)))
    for ax, p in zip(axes, HORIZON_SUCCESS, strict=True):
        ax.axvspan(*lengths, color="0.92", zorder=0, label=f"tasks' lengths ({lengths[0]:.3g}-{lengths[1]:.3g} min)")
        _draw_panel(ax, results, p, agents, ends)
    axes[0].set_yticks(np.arange(len(agents))[::-1], agents)
    axes[0].set_ylabel("agent")
    axes[-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)
    fig.tight_layout(w_pad=3.0)  # the end ticks of neighbouring panels (10^6, 10^-4) collided without it
    names = "; ".join(f"{k}: {interval_label(v.ci)} interval" for k, v in results.items())
    caption = (
        f"Time horizons in human minutes (log axis) at {' and '.join(f'{p:.0%}' for p in HORIZON_SUCCESS)} "
        f"success. Dots: the estimates (Bayes: posterior median); bars: the intervals ({names}). An open dot "
        f"lies outside the tasks' lengths (grey band, {lengths[0]:.3g}-{lengths[1]:.3g} minutes): extrapolated. "
        f"The axis runs from {ends[0]:.3g} to {ends[1]:.3g} minutes (at most {AXIS_REACH:g} times past the tasks' "
        "lengths): a value beyond it, a limit horizon (0 or infinite) included, is drawn as an arrow at its edge "
        "(the table gives it). An agent without a dot has no estimate from that method (the table says why)."
    )
    return fig, caption
