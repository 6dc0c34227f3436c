"""Section 5 of the demo: the crossed Bayesian fit beside the bootstrap.

The fit, its levels over a new task and over these tasks, its standard deviations and what
the model holds.
"""

from __future__ import annotations

import textwrap
import time
import warnings

import numpy as np
import pandas as pd
import xarray as xr

from .._base import fit_record
from .._console import seconds
from ._bootstrap import _boot_label
from ._context import PROB
from ._context import DemoContext
from ._context import _covers_lines
from ._context import _fast
from ._context import _frame
from ._context import _partial_credit
from ._context import _partial_credit_words
from ._context import _score_levels
from ._context import _truth_new_task

#: the Bayes estimators' labels in the section's tables (over a new task; over these tasks, Bayes only)
NEW_TASK = "Bayes crossed (new task)"
THESE_TASKS = "Bayes crossed (these tasks)"


def _fit_crossed(ctx: DemoContext) -> tuple[xr.DataTree, list[str], float]:
    """The crossed fit at the demo's sizes; its convergence warnings and wall time."""
    from .._console import convergence_line
    from .._console import fit_kwargs
    from ..bayes import DEMO_FAST
    from ..bayes import MADE_BY
    from ..bayes import build_crossed
    from ..bayes import convergence_remedy
    from ..bayes import fit

    # the package's default run (tuning from the mode, draws to the ESS target); --fast: a smoke run
    draws, tune, chains = (300, 300, 2) if _fast(ctx) else (None, None, 4)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dt = fit(
            build_crossed(ctx.data),
            draws=draws,
            tune=tune,
            chains=chains,
            rng=ctx.extra.get("seed", 0),
            **fit_kwargs(fit, bool(ctx.extra.get("progress"))),
        )
    if _fast(ctx):  # the fit's own remedy (report, `hierbench report`) then names the demo, not --draws
        dt.attrs[MADE_BY] = DEMO_FAST
    ctx.extra["fit"] = dt
    # w is a warnings.WarningMessage: its class is w.category
    conv = [str(w.message) for w in caught if w.category.__name__ == "ConvergenceWarning"]
    line = convergence_line(dt, remedy=convergence_remedy(dt, cli=False))  # a --fast run: drop --fast
    if line:
        ctx.extra.setdefault("warnings", []).append(line)
    return dt, conv, time.perf_counter() - t0


def _interval_result(draws: xr.DataArray) -> xr.Dataset:
    from ..metrics import posterior_interval

    return xr.Dataset(
        {"estimate": draws.mean(("chain", "draw")), "ci": posterior_interval(draws, prob=PROB)}
    )


def _level_tables(ctx: DemoContext, post: xr.Dataset) -> tuple[xr.Dataset, xr.Dataset]:
    """A new task (both methods, beside the truth) and these tasks' mean (Bayes only)."""
    from ..compare import side_by_side

    results = {NEW_TASK: _interval_result(post["mean_new_task"])}
    if "bootstrap" in ctx.extra:
        results = {_boot_label(ctx.extra["bootstrap"]): ctx.extra["bootstrap"], **results}
    table = side_by_side(results, truth=_truth_new_task(ctx))
    # mean_observed averages p_mt over every task of the benchmark (a cell an agent
    # never ran is predicted from the model), so its truth is the same average
    true_obs = ctx.truth["p"].mean("task") if ctx.truth is not None else None
    obs = side_by_side(
        {THESE_TASKS: _interval_result(post["mean_observed"])}, truth=true_obs
    )
    ctx.extra["population_table"], ctx.extra["observed_table"] = table, obs
    return table, obs


def _shift_note(ctx: DemoContext, table: xr.Dataset) -> list[str]:
    """The report's sentence on a Bayes-minus-bootstrap shift most agents share (none without the bootstrap)."""
    from ..report import cluster_weights
    from ..report import shared_shift

    others = [str(m) for m in table["estimator"].values if str(m) != NEW_TASK]
    if "bootstrap" not in ctx.extra or not others:
        return []
    est = table["estimate"]
    boot = est.sel(estimator=others[0])
    diff = (est.sel(estimator=NEW_TASK) - boot).to_series()
    # split at the fit's own mean over these tasks, as the report does (audit B s71)
    obs = ctx.extra.get("observed_table")
    these = None if obs is None else (obs["estimate"].sel(estimator=THESE_TASKS) - boot).to_series()
    fit = ctx.extra.get("fit")
    model = fit.attrs.get("hierbench_model", "crossed") if fit is not None else "crossed"  # the demo's model
    text = shared_shift(diff, True, cluster_weights(fit, ctx.data), these=these, model=model).strip()
    return ["", *textwrap.wrap(text, 90)] if text else []


def _sd_notes(ctx: DemoContext) -> dict[str, str]:
    """``{sd: line}`` for the SDs the design cannot estimate (left out of the table) or that hold another.

    From the design rules of :func:`hierbench.metrics.unidentified_components`.
    """
    from ..data import to_counts
    from ..metrics import unidentified_components

    rules = unidentified_components(to_counts(ctx.data)["n_runs"].values)
    notes = {}
    if "agent" in rules:
        notes["sd_agent"] = f"sd_agent is not shown: {rules['agent'][0]}."
    if "task" in rules:
        notes["sd_task"] = f"sd_task is not shown: the model leaves it out, since {rules['task'][0]}."
    elif "agent:task" in rules:
        notes["sd_task"] = f"sd_task holds the agent x task spread too: {rules['agent:task'][0]}."
    return notes


def _sd_table(ctx: DemoContext, post: xr.Dataset, dt: xr.DataTree) -> pd.DataFrame:
    """Logit-scale standard deviations beside the truth (when known); none the design cannot estimate."""
    opts = fit_record(dt, "hierbench_spec").get("options", {})
    skip = {sd for sd, line in _sd_notes(ctx).items() if " is not shown" in line}
    rows = []
    for name in ("sd_agent", "sd_task", "sd_agent_task", "sd_cluster", "sd_agent_cluster"):
        if name not in post or name in skip:
            continue  # said below the table (_sd_notes)
        d = post[name]
        q = d.quantile([(1 - PROB) / 2, (1 + PROB) / 2], dim=("chain", "draw")).values
        # a simulation without an agent x cluster effect (the embedded default) has none: its truth is 0
        true = float(ctx.truth.get(name, 0.0)) if ctx.truth is not None else np.nan
        label = name
        if name == "sd_agent" and opts.get("agents") == "fixed" and ctx.truth is not None:
            # agents are fixed effects: sd_agent is the spread of these agents' effects,
            # so its truth is the sample SD of the true effects, not the generating SD
            true = float(np.std(ctx.truth["agent_effect"].values, ddof=1))
            label = "sd of these agents' effects"
        rows.append({"parameter": label, "truth": true, "posterior mean": float(d.mean()),
                     f"{PROB:.0%} lower": q[0], f"{PROB:.0%} upper": q[1]})  # fmt: skip
    cols = ["parameter", "truth", "posterior mean", f"{PROB:.0%} lower", f"{PROB:.0%} upper"]
    sds = pd.DataFrame(rows, columns=cols).set_index("parameter")
    if ctx.truth is None:
        sds = sds.drop(columns="truth")
    ctx.extra["sd_table"] = sds
    return sds


def _model_terms(dt: xr.DataTree) -> str:
    """The fitted crossed model's terms in words, as its builder decided them (with why, for agent x task and task)."""
    decisions = fit_record(dt, "hierbench_structure").get("decisions", {})
    opts = fit_record(dt, "hierbench_spec").get("options", {})
    # one agent with one run per task: the builder leaves the task effect out (task_spread 'none')
    no_task = decisions.get("task_spread", {}).get("choice") == "none"
    terms = ["agent"] + ([] if no_task else ["task"]) + (["cluster"] if opts.get("clusters") else [])
    terms += ["agent x cluster"] if opts.get("agent_cluster") else []
    at = opts.get("agent_task")
    if at == "marginal":
        terms.append("agent x task, integrated out of each cell by adaptive Gauss-Hermite quadrature")
    elif at == "latent":
        terms.append("agent x task, one latent effect per cell")
    else:
        why = decisions.get("agent_task", {}).get("reason", "")
        terms.append("no agent x task effect" + (f": {why}" if why else ""))
    out = " + ".join(terms[:-1]) + "; " + terms[-1]
    return out + (f"; no task effect: {decisions['task_spread']['reason']}" if no_task else "")


def _nan_pointer(ctx: DemoContext) -> list[str]:
    """A line under the Bayes section's table for bootstrap intervals that are NaN: why is said once, above."""
    boot = ctx.extra.get("bootstrap")
    if boot is None or "agent" not in boot.ci.dims:
        return []
    bad = [str(a) for a in boot.ci["agent"].values[boot.ci.isnull().any("ci_bound").values]]
    if not bad:
        return []
    return [f"({', '.join(bad)}: [nan, nan] is explained under the frequentist table above.)"]


def _graded_fit_text(levels: list[float], labels: list[str] | None = None) -> str:
    """Why a graded log gets no crossed fit, and the commands of the model its grades have.

    Grades read from labels are named by them, in the text and in the ``--levels`` of the commands.
    """
    from ..data import grade_names
    from ..data import grade_rule

    scale = ",".join(grade_names(levels, labels))
    return "\n".join([
        "(not run: the crossed model is binomial, a pass or a fail per run, and these scores are",
        f"grades {scale.replace(',', ', ')} (read as {grade_rule(levels, labels)} in the sections above).",
        "Grades have their own model, the ordinal one (a cumulative logit on the grades themselves):",
        "",
        f"  hierbench fit LOG <the same column flags> --levels {scale} \\",
        "      --formula 'score ~ (1|agent) + (1|task)' --keep-predictive -o fit.nc",
        "  hierbench report fit.nc --data LOG <the same column flags> --levels " + scale + " -o report.html",
        "",
        "Its report adds each agent's expected mean grade, ranks, P(a > b) and a predictive check",
        "of each agent's grades.)",
    ])  # fmt: skip


def _fractional_fit_text(ctx: DemoContext, found: tuple[int, int, list[tuple]]) -> str:
    """Why a log of partial credit gets no crossed fit, and the commands of the [0, 1]-score model."""
    from ..data import DEFAULT_FORMULA

    # one run in every cell: no agent x task term to tell from the run-to-run spread
    one_run = int(ctx.data["score"].notnull().sum("run").max()) <= 1
    formula = "score ~ 0 + agent + (1|task)" if one_run else DEFAULT_FORMULA
    return "\n".join([
        *textwrap.wrap(
            f"(not run: the crossed model is binomial, a pass or a fail per run, and {_partial_credit_words(found)}. "
            "Scores in [0, 1] have their own model: the crossed model's terms with a likelihood for scores "
            "in [0, 1], with atoms at 0 and 1 (the formula model, family fractional):", 90),
        "",
        "  hierbench fit LOG <the same column flags> \\",
        f"      --formula '{formula}' --keep-predictive -o fit.nc",
        "  hierbench report fit.nc --data LOG <the same column flags> -o report.html",
        "",
        *textwrap.wrap(
            "Its report adds each agent's expected mean score, ranks and P(a > b). For the binomial model, "
            "binarise the scores first (the pass threshold is yours to choose) and read that column with "
            "--score.)", 90),
    ])  # fmt: skip


def _bayes_section(ctx: DemoContext) -> str:
    from .._console import diagnostics_line

    levels = _score_levels(ctx)
    if levels:
        from ..data import labels_attr

        return _graded_fit_text(levels, labels_attr(ctx.data.attrs))
    found = _partial_credit(ctx)
    if found:
        return _fractional_fit_text(ctx, found)
    dt, conv, wall = _fit_crossed(ctx)
    post = dt["posterior"].to_dataset()
    table, obs = _level_tables(ctx, post)
    sds = _sd_table(ctx, post, dt)
    chains, draws = int(post.sizes["chain"]), int(post.sizes["draw"])
    lines = [
        f"Crossed logistic model ({_model_terms(dt)}), {chains} chains x {draws} draws with\n"
        f"{dt.attrs.get('sampler', 'nutpie')}: {seconds(wall)} wall "
        f"(compile {seconds(dt.attrs.get('compile_time', np.nan))}).",
        f"Diagnostics: {diagnostics_line(dt)}.",
        f"Run: {dt.attrs.get('fit_notes', '')}.",
        "",
        f"Expected score on a new task, both methods, {PROB:.0%} intervals (Bayes: equal-tailed posterior)"
        + (" beside the truth:" if ctx.truth is not None else ":"),
        _frame(table).to_string(),
        *_covers_lines(table),
        *_nan_pointer(ctx),
        *_shift_note(ctx, table),
        "",
        "Mean over this benchmark's tasks (cells an agent did not run are predicted), Bayes only,\n"
        f"{PROB:.0%} equal-tailed posterior intervals:",
        _frame(obs).to_string(),
        *_covers_lines(obs),
        "",
        f"Logit-scale standard deviations ({PROB:.0%} equal-tailed posterior intervals):",
        sds.to_string(float_format="{:.3f}".format) if len(sds) else "(none the design can estimate)",
        *_sd_notes(ctx).values(),
    ]
    from .._console import convergence_line
    from ..bayes import convergence_remedy

    line = convergence_line(dt, remedy=convergence_remedy(dt, cli=False))  # a --fast run: drop --fast
    if line:
        lines = [f"WARNING: {line}. Do not trust the summaries below.", "", *lines]
    if conv:
        lines += ["", "Convergence warnings: " + "; ".join(conv)]
    return "\n".join(lines)
