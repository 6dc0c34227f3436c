"""``hierbench demo``: the main job, section by section: data, fit, compare, plan, report.

Each section takes the :class:`DemoContext` (the evaluation and, for the
embedded default, its true parameters), returns the text it prints, and
leaves its results in ``ctx.extra`` for the report. On the embedded default
(simulated from known parameters) every interval is printed beside the truth
it is meant to cover; on a user's log (``hierbench demo --data LOG``) the
truth columns are left out.

PyMC is imported only by the Bayesian section, and plotting only by the
report section.
"""

from __future__ import annotations

import os
import textwrap
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr
from scipy import integrate
from scipy import stats
from scipy.special import expit

from ._base import ZERO_WIDTH_ADVICE
from ._base import fit_record
from ._base import flag_advice
from ._base import is_binary
from ._console import print_warnings
from ._console import seconds

__all__ = [
    "ANALYSIS_SECTIONS",
    "DEMO_SECTIONS",
    "DemoContext",
    "demo_sections",
    "population_truth",
    "run_demo",
    "write_report",
]


@dataclass
class DemoContext:
    """State shared by the demo sections; sections may add results to ``extra``.

    ``truth`` is the simulation's true parameters (None on a user's log).
    """

    data: xr.Dataset
    truth: xr.Dataset | None
    extra: dict = field(default_factory=dict)


PROB = 0.95  # one level for every interval in the demo, so they can sit side by side


def _fast(ctx: DemoContext) -> bool:
    """Smoke-run sizes: ``hierbench demo --fast`` (``ctx.extra["fast"]``) or ``HIERBENCH_FAST=1``."""
    return bool(ctx.extra.get("fast")) or os.environ.get("HIERBENCH_FAST", "") not in ("", "0")


def _truth_new_task(ctx: DemoContext) -> xr.DataArray | None:
    """:func:`population_truth` of the context, computed once (None without a truth)."""
    if ctx.truth is None:
        return None
    if "population_truth" not in ctx.extra:
        ctx.extra["population_truth"] = population_truth(ctx.truth)
    return ctx.extra["population_truth"]


def _n_runs(ctx: DemoContext) -> xr.DataArray:
    """Runs per (agent, task) cell, from :func:`hierbench.data.to_counts`, computed once."""
    if "n_runs" not in ctx.extra:
        from .data import to_counts

        ctx.extra["n_runs"] = to_counts(ctx.data)["n_runs"]
    return ctx.extra["n_runs"]


def population_truth(truth: xr.Dataset) -> xr.DataArray:
    """True expected score of each agent on a new task drawn from the task population.

    ``E[expit(mu + a_m + c + b + ab)]`` with the cluster, task and agent x task
    effects normal with the true standard deviations, integrated with
    adaptive quadrature (scipy), independently of the model code.
    """
    s = float(
        np.sqrt(truth["sd_task"] ** 2 + truth["sd_cluster"] ** 2 + truth["sd_agent_task"] ** 2)
    )
    mu = float(truth["mu"])
    vals = []
    for a in truth["agent_effect"].values:
        f = lambda z, a=a: expit(mu + a + s * z) * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)  # noqa: E731
        vals.append(integrate.quad(f, -12, 12)[0])
    return xr.DataArray(vals, dims="agent", coords={"agent": truth["agent"].values})


def _frame(table: xr.Dataset, value_fmt: str = "{:.3f}") -> pd.DataFrame:
    est = table["estimate"]
    iv = table["ci"]
    lo = iv.sel(ci_bound="lower", drop=True)
    hi = iv.sel(ci_bound="upper", drop=True)
    cols = {}
    for m in table["estimator"].values:
        cols[f"{m}"] = [
            f"{value_fmt.format(e)} [{value_fmt.format(a)}, {value_fmt.format(b)}]"
            for e, a, b in zip(
                est.sel(estimator=m).values,
                lo.sel(estimator=m).values,
                hi.sel(estimator=m).values,
                strict=True,
            )
        ]
    df = pd.DataFrame(cols, index=[str(a) for a in table["agent"].values])
    if "truth" in table:
        df.insert(0, "truth", [value_fmt.format(v) for v in table["truth"].values])
    return df


def _covers(table: xr.Dataset) -> str:
    if "covers" not in table:
        return ""
    return f"\n\n{int(table['covers'].sum())} of {table.sizes['agent']} intervals cover the truth."


#: a bootstrap result's ``method`` in words
_METHOD_WORDS = {"bca": "BCa", "percentile": "percentile"}


def _boot_label(boot) -> str:
    """``cluster bootstrap (BCa)`` or ``task bootstrap (percentile)``: what the result resampled, and how."""
    method = _METHOD_WORDS[boot.attrs.get("method", "bca")]
    return f"{boot.attrs.get('resample_unit', 'task')} bootstrap ({method})"


def _one_task(ctx: DemoContext) -> str | None:
    """A resampling section's word for a log of one task: every resample of tasks would be the data."""
    if int(ctx.data.sizes.get("task", 0)) != 1:
        return None
    return (f"(not applicable: the log holds one task, {ctx.data['task'].values[0]}: every resample of "
            "tasks would be the data, so no interval, test or rank distribution can come from it; add tasks)")


def _bootstrap_section(ctx: DemoContext) -> str:
    if (one := _one_task(ctx)) is not None:
        return one
    from .compare import side_by_side
    from .freq import bootstrap_ci

    boot = bootstrap_ci(
        ctx.data,
        method=ctx.extra.get("bootstrap_method", "bca"),
        n_resamples=1999 if _fast(ctx) else 9999,
        prob=PROB,
        rng=ctx.extra.get("seed", 0),
    )
    ctx.extra["bootstrap"] = boot
    truth = _truth_new_task(ctx)
    table = side_by_side({_boot_label(boot): boot}, truth=truth)
    ctx.extra["freq_table"] = table
    unit = (
        f"whole task clusters (of `{boot.attrs['cluster_column']}`)"
        if boot.attrs.get("resample_unit") == "cluster"
        else "tasks (no clusters)"
    )
    text = (
        f"Benchmark mean per agent (mean over tasks of each task's mean score) with a {PROB:.0%} "
        f"{_METHOD_WORDS[boot.attrs['method']]} "
        f"interval from the task-level bootstrap, resampling {unit} and sharing each resample across "
        "agents. The target is the agent's expected score on a new task from the same population"
        + ("; the truth column is that value, computed from the simulation's parameters." if truth is not None else ".")
    )
    bounds = _pass1_bounds(ctx)
    return (
        textwrap.fill(text, 88)
        + "\n\n"
        + _frame(table).to_string()
        + _covers(table)
        + _undefined_note(boot, bounds, _grade_words(ctx))
        + _few_note(boot, bounds, is_binary(ctx.data["score"].values), _grade_words(ctx))
        + _few_units_note(ctx, boot)
    )


def _few_units_note(ctx: DemoContext, boot) -> str:
    """Agents whose bootstrap resampled fewer than 10 units (clusters, or their tasks), said under the table.

    A resampling interval of a mean over few units is too narrow (a 95% percentile interval
    over 8 normal values covers about 88%): the report flags the same agents.
    """
    from .report import FEW_UNITS

    if boot.attrs.get("resample_unit") == "cluster":
        from ._base import cluster_codes

        n = len(cluster_codes(ctx.data)[1])
        units = pd.Series(n, index=[str(a) for a in ctx.data["agent"].values])
        word = "clusters"
    else:
        units = (_n_runs(ctx) > 0).sum("task").to_series()
        units.index = units.index.astype(str)
        word = "tasks"
    few = units[units < FEW_UNITS]
    if few.empty:
        return ""
    who = "every agent" if len(few) == len(units) else ", ".join(few.index)
    counts = ", ".join(sorted({str(int(v)) for v in few}, key=int))
    return "\n\n" + textwrap.fill(
        f"Few {word}: the intervals of {who} rest on {counts} {word} (fewer than {FEW_UNITS}), and a "
        "resampling interval covers less than its level there.",
        88,
    )


def _pass1_bounds(ctx: DemoContext) -> pd.Series:
    """:func:`hierbench.report.pass1_bounds` of the data at the demo's level, computed once."""
    if "pass1_bounds" not in ctx.extra:
        from .report import pass1_bounds

        ctx.extra["pass1_bounds"] = pass1_bounds(ctx.data, PROB)
    return ctx.extra["pass1_bounds"]


def _few_agents(boot) -> dict[str, str]:
    """The agents whose bootstrap interval is flagged, each with its ``ci_flag``.

    Few tasks carry the mean, or every task scored one value.
    """
    if boot.ci_flag is None or "agent" not in boot.ci_flag.dims:
        return {}
    return {str(a): str(f) for a, f in zip(boot.ci_flag["agent"].values, boot.ci_flag.values, strict=True) if f}


def _grade_words(ctx: DemoContext) -> list[str] | None:
    """The names of a graded log's grades (its labels, or the numbers of its scale), None for plain scores."""
    from .report import data_grades

    return data_grades(ctx.data)


def _few_note(boot, bounds: pd.Series | None = None, binary: bool = True, grades: list[str] | None = None) -> str:
    """The agents whose bootstrap mean few tasks carry, named under the table with the bound that holds.

    ``bounds``: :func:`hierbench.report.pass1_bounds` of the data, each named agent's bound given;
    ``binary=False``: the scores are not all 0 or 1, and the advice does not send the reader to
    ``pass_hat_k``, which refuses them; ``grades``: a graded log's grade names (:func:`_grade_words`).
    """
    from .report import graded_flag

    flags = {a: graded_flag(f, grades) for a, f in _few_agents(boot).items()}
    bounds = pd.Series(dtype=object) if bounds is None else bounds
    notes = []
    for head, kind in (("Few tasks carry the mean of", False), ("One score on every task:", True)):
        names = [a for a, f in flags.items() if (flag_advice(f) == ZERO_WIDTH_ADVICE) == kind]
        if names:
            said = [f"{a} {bounds[a]}" for a in names if bounds.get(a, "")]
            who = ", ".join(f"{a} ({flags[a]})" if kind else a for a in names)
            text = f"{head} {who}: {flag_advice(flags[names[0]], binary)}" + (": " + "; ".join(said) if said else "")
            notes.append("\n\n" + textwrap.fill(text + ".", 88))
    return "".join(notes)


def _why_undefined(boot, agent, grades: list[str] | None = None) -> str:
    """Why an agent's bootstrap interval is NaN, read from the result (its resamples, z0, acceleration).

    ``grades``: a graded log's grade names, to say an agent at an end of the scale in them.
    """
    est = float(boot.estimate.sel(agent=agent))
    if not np.isfinite(est):
        return "the agent has no scored task"
    dist = boot.distribution.sel(agent=agent).values
    dist = dist[np.isfinite(dist)]
    if not dist.size:
        return "the statistic is undefined in every resample"
    n = int(boot.n_tasks.sel(agent=agent))
    from .report import scored_words

    every = f" (every run on its {n} tasks {scored_words(est, grades)})" if est in (0.0, 1.0) else ""
    if boot.bias_correction is not None and not np.isfinite(float(boot.bias_correction.sel(agent=agent))):
        side = (
            f"every resample gives {est:.3f}, the estimate itself{every}"
            if np.all(dist == est)
            else f"every resample lies on one side of the estimate {est:.3f}"
        )
        return side + ", so BCa's bias correction (from the share of resamples below the estimate) is infinite"
    if boot.acceleration is not None and not np.isfinite(float(boot.acceleration.sel(agent=agent))):
        return "the jackknife values are all equal, so BCa's acceleration is undefined"
    return "the resampling quantiles are undefined"


def _undefined_note(boot, bounds: pd.Series, grades: list[str] | None = None) -> str:
    """Under the table: each NaN interval, which statistic is undefined and why, and what holds instead.

    ``grades``: a graded log's grade names (:func:`_grade_words`).
    """
    if "agent" not in boot.estimate.dims:
        return ""
    bad = boot.ci.isnull().any("ci_bound")
    lines = []
    method = _METHOD_WORDS[boot.attrs.get("method", "bca")]
    for agent in boot.estimate["agent"].values[bad.values]:
        name = str(agent)
        instead = (
            "what holds instead is its pass^1 bound, below"
            if bounds.get(name, "")
            else "the percentile interval (--bootstrap-method percentile) is defined there"
            if method == "BCa"
            else "no interval of its mean can be computed from these data"
        )
        lines.append(
            f"{name}: [nan, nan] because the {method} interval is undefined: "
            f"{_why_undefined(boot, agent, grades)}; {instead}."
        )
    return "".join("\n\n" + textwrap.fill(line, 88) for line in lines)


def _fit_crossed(ctx: DemoContext) -> tuple[xr.DataTree, list[str], float]:
    """The crossed fit at the demo's sizes; its convergence warnings and wall time."""
    from ._console import convergence_line
    from ._console import fit_kwargs
    from .bayes import build_crossed
    from .bayes import fit

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
    ctx.extra["fit"] = dt
    # w is a warnings.WarningMessage: its class is w.category
    conv = [str(w.message) for w in caught if w.category.__name__ == "ConvergenceWarning"]
    line = convergence_line(dt)
    if line:
        ctx.extra.setdefault("warnings", []).append(line)
    return dt, conv, time.perf_counter() - t0


def _interval_result(draws: xr.DataArray) -> xr.Dataset:
    from .metrics import posterior_interval

    return xr.Dataset(
        {"estimate": draws.mean(("chain", "draw")), "ci": posterior_interval(draws, prob=PROB)}
    )


def _level_tables(ctx: DemoContext, post: xr.Dataset) -> tuple[xr.Dataset, xr.Dataset]:
    """A new task (both methods, beside the truth) and these tasks' mean (Bayes only)."""
    from .compare import side_by_side

    results = {"Bayes crossed (new task)": _interval_result(post["mean_new_task"])}
    if "bootstrap" in ctx.extra:
        results = {_boot_label(ctx.extra["bootstrap"]): ctx.extra["bootstrap"], **results}
    table = side_by_side(results, truth=_truth_new_task(ctx))
    # mean_observed averages p_mt over every task of the benchmark (a cell an agent
    # never ran is predicted from the model), so its truth is the same average
    true_obs = ctx.truth["p"].mean("task") if ctx.truth is not None else None
    obs = side_by_side(
        {"Bayes crossed (these tasks)": _interval_result(post["mean_observed"])}, truth=true_obs
    )
    ctx.extra["population_table"], ctx.extra["observed_table"] = table, obs
    return table, obs


def _sd_notes(ctx: DemoContext) -> dict[str, str]:
    """``{sd: line}`` for the SDs the design cannot estimate (left out of the table) or that hold another.

    From the design rules of :func:`hierbench.metrics.unidentified_components`.
    """
    from .data import to_counts
    from .metrics import unidentified_components

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
    for name in ("sd_agent", "sd_task", "sd_agent_task", "sd_cluster"):
        if name not in post or name in skip:
            continue  # said below the table (_sd_notes)
        d = post[name]
        q = d.quantile([(1 - PROB) / 2, (1 + PROB) / 2], dim=("chain", "draw")).values
        true = float(ctx.truth[name]) if ctx.truth is not None else np.nan
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


def _score_levels(ctx: DemoContext) -> list[float] | None:
    """The grade scale the log's scores were read on (``--levels``), None for scores read as they are.

    Two grades are read as 0 and 1, a fail and a pass (VerbAgg's N / Y): None too, so the crossed
    model and pass^k run on them as on any 0/1 log (they said "not run: these scores are grades").
    """
    from .data import levels_attr

    levels = levels_attr(ctx.data.attrs)
    return levels if levels and len(levels) > 2 else None


def _graded_fit_text(levels: list[float], labels: list[str] | None = None) -> str:
    """Why a graded log gets no crossed fit, and the commands of the model its grades have.

    Grades read from labels are named by them, in the text and in the ``--levels`` of the commands.
    """
    from .data import grade_names
    from .data import grade_rule

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


def _bayes_section(ctx: DemoContext) -> str:
    from ._console import diagnostics_line

    levels = _score_levels(ctx)
    if levels:
        from .data import labels_attr

        return _graded_fit_text(levels, labels_attr(ctx.data.attrs))
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
        *_nan_pointer(ctx),
        "",
        "Mean over this benchmark's tasks (cells an agent did not run are predicted), Bayes only,\n"
        f"{PROB:.0%} equal-tailed posterior intervals:",
        _frame(obs).to_string(),
        "",
        f"Logit-scale standard deviations ({PROB:.0%} equal-tailed posterior intervals):",
        sds.to_string(float_format="{:.3f}".format) if len(sds) else "(none the design can estimate)",
        *_sd_notes(ctx).values(),
    ]
    from ._console import convergence_line

    line = convergence_line(dt)
    if line:
        lines = [f"WARNING: {line}. Do not trust the summaries below without more tuning.", "", *lines]
    if conv:
        lines += ["", "Convergence warnings: " + "; ".join(conv)]
    return "\n".join(lines)


def _passk_section(ctx: DemoContext) -> str:
    from .freq import pass_hat_k
    from .metrics import crossed_pass_k
    from .report import unbiased_interval

    levels = _score_levels(ctx)
    if levels:
        from .data import labels_attr

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
    n_runs = _n_runs(ctx)
    # the unbiased estimator needs k runs in a cell: no k above the most runs any cell holds
    ks = list(range(1, min(_MAX_K, int(n_runs.max())) + 1))
    import warnings

    from .freq import InsufficientRunsWarning

    with warnings.catch_warnings():
        # reported in the text below, from the result's own count
        warnings.simplefilter("ignore", InsufficientRunsWarning)
        freq = pass_hat_k(ctx.data, ks, prob=PROB)
    short = int(freq.n_insufficient.sum())
    interval = unbiased_interval(freq)  # the report's columns: the estimator's own interval, level and kind
    # the estimator's per-cell note (a bound where few tasks carry the mean), as the report's `flag` gives it
    note = freq.to_frame()["ci_flag"].fillna("").astype(str)
    interval["flag"] = note.where(note == "", "unbiased: " + note).to_numpy()
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
        if "fit" in ctx.extra:
            # the same cells as the truth and the unbiased estimator (at least k runs), and
            # the realised average of their p^k, so the interval is for these cells' truth
            bay = crossed_pass_k(
                ctx.extra["fit"],
                k=k,
                prob=PROB,
                min_runs=k,
                realised=True,
                rng=int(ctx.extra.get("seed", 0)),  # the report's draws, so its table shows these numbers
            )
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
                       interval=_interval_words(freq, "flag" in table))
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
            f"k goes to {ks[-1]} only: no (agent, task) cell holds more than {ks[-1]} runs, and "
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
    return "".join("\n\n" + textwrap.fill(line, 90) for line in lines)


def _interval_words(freq, flagged: bool) -> str:
    """What the unbiased estimator's interval is, as the result states it (the report's words)."""
    return (
        f"The unbiased estimator's {PROB:.0%} interval (columns `unbiased ... (new tasks; ...)`) takes the "
        f"tasks as a sample, so it is for a new draw of tasks: {freq.ci.attrs['ci_detail'].split(': ', 1)[-1]}."
        + (" `flag` repeats that per-cell note." if flagged else "")
    )


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
        "metric), averaged over the tasks each agent ran at least k times: "
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
    return head + "\n\n" + table.to_string(float_format="{:.3f}".format) + tail


def _one_agent(ctx: DemoContext, why: str) -> str | None:
    """A section's word for a log of one agent (tau-bench's gpt-4o): what does not apply, not an error."""
    if int(ctx.data.sizes.get("agent", 0)) != 1:
        return None
    return f"(not applicable: the log holds one agent, {ctx.data['agent'].values[0]}: {why})"


def _compare_section(ctx: DemoContext) -> str:
    import textwrap

    if (one := _one_agent(ctx, "no pair to compare") or _one_task(ctx)) is not None:
        return one
    from .freq import compare_agents
    from .metrics import prob_superiority
    from .report import bayes_pair_note
    from .report import differ_column
    from .report import graded_units
    from .report import marks_holm_note
    from .report import no_p_note
    from .report import pair_agents
    from .report import pair_frame
    from .report import pair_sentence
    from .report import pair_text
    from .report import pair_values
    from .report import shown_pairs
    from .report import truth_diffs

    # compare_agents' own defaults: the report and `hierbench compare` use the same
    cmp = compare_agents(ctx.data, prob=PROB, rng=ctx.extra.get("seed", 0))
    ctx.extra["compare"] = cmp
    full = pair_frame(cmp, alpha=1 - PROB)
    # what decides first: the difference, its simultaneous interval, the adjusted p and the verdict
    table = full.iloc[:, : full.columns.get_loc(differ_column(full)) + 1].copy()
    agents, opponents = pair_agents(cmp)
    true = _truth_new_task(ctx)
    if true is not None:
        table.insert(0, "true diff", truth_diffs(true, agents, opponents))
    if "fit" in ctx.extra:
        ps = prob_superiority(ctx.extra["fit"], var="mean_new_task")
        ps = ps if isinstance(ps, xr.DataArray) else ps.to_dataset()["estimate"]
        table["Bayes P(a > b)"] = pair_values(ps, agents, opponents)
    ctx.extra["compare_table"] = table
    note = ""
    if "fit" in ctx.extra:
        note = "\n" + textwrap.fill("Beside it, " + bayes_pair_note(ctx.extra["fit"], len(table)), 90)
    floor = (
        marks_holm_note(full, 1 - PROB)
        .replace("The marks understate", "p max-T understates")
        .replace("beside the marks", "beside p max-T")
    )
    shown, short = shown_pairs(table, _pairs_where(ctx))
    return (
        "\n".join(textwrap.wrap(pair_sentence(cmp, 1 - PROB) + graded_units(ctx.data, ""), 90))
        + note
        + "\n\n"
        # a path stays whole on its line, to be copied
        + (textwrap.fill(short.replace("`", ""), 90, break_on_hyphens=False, break_long_words=False) + "\n\n"
           if short else "")
        + pair_text(shown)
        + "\n\nThe per-pair intervals, every p-value and Holm / BH: compare_agents(data).to_frame()."
        + ("\n\n" + textwrap.fill(no_p_note(full).replace("`", ""), 90) if no_p_note(full) else "")
        + ("\n\n" + textwrap.fill(floor.replace("`", ""), 90) if floor else "")
    )


def _pairs_where(ctx: DemoContext) -> str:
    """Where every pair is when the section shows some: the report's CSV, or the call that gives them."""
    from .report import PAIRS_CSV

    seed = ctx.extra.get("seed", 0)
    if ctx.extra.get("out"):
        return (
            f"{os.path.join(str(ctx.extra['out']), PAIRS_CSV)} (written with the report; every p-value "
            "and both intervals)"
        )
    return (
        f"no report is written (--out ''), so no file holds them: `hierbench compare LOG --json --seed {seed}` "
        f"prints them (LOG: this log), or in Python hierbench.freq.compare_agents(data, rng={seed}).to_frame()"
    )


def _rank_section(ctx: DemoContext) -> str:
    if (one := _one_agent(ctx, "nothing to rank") or _one_task(ctx)) is not None:
        return one
    from .freq import rank_uncertainty
    from .metrics import rank_probabilities

    rk = rank_uncertainty(
        ctx.data, n_resamples=1000 if _fast(ctx) else 4000, prob=PROB, rng=ctx.extra.get("seed", 0)
    )
    ctx.extra["ranks"] = rk
    truth = _truth_new_task(ctx)
    df = pd.DataFrame(
        {
            "observed rank": rk.estimate.to_series(),
            "P(top 1) bootstrap": rk.p_top_k.sel(k=1).to_series(),
            f"rank {PROB:.0%} lower": rk.ci.sel(ci_bound="lower").to_series(),
            f"rank {PROB:.0%} upper": rk.ci.sel(ci_bound="upper").to_series(),
            "tier": rk.group.to_series(),
        }
    )
    if truth is not None:
        true_rank = truth.copy(data=stats.rankdata(-truth.values, method="min"))
        df.insert(0, "true rank", true_rank.to_series().astype(int))
    if "fit" in ctx.extra:
        rp = rank_probabilities(ctx.extra["fit"], var="mean_new_task")
        first = rp.isel(rank=0) if "rank" in rp.dims else rp
        df["P(top 1) Bayes"] = first.to_series()
    for col in ("observed rank", f"rank {PROB:.0%} lower", f"rank {PROB:.0%} upper"):
        if np.all(np.mod(df[col].to_numpy(), 1) == 0):  # ranks, shown as whole numbers where they are
            df[col] = df[col].astype(int)
    df.index = df.index.astype(str)
    df = df.sort_values("observed rank")
    ctx.extra["rank_table"] = df
    attrs = rk.to_dataset().attrs
    unit = "whole task clusters" if attrs.get("resample_unit") == "cluster" else "tasks"
    alpha = float(attrs.get("alpha", 0.05))
    return (
        textwrap.fill(
            f"Ranks under resampling of {unit} (one resample shared by every agent, ties broken at "
            f"random): the probability of being best, a {PROB:.0%} percentile interval for the rank, "
            "and tiers of agents that cannot be told apart from the tier's leader: the leader is told "
            f"apart from an agent when it scores higher in more than {1 - alpha / 2:.1%} of the "
            f"resamples (a per-pair bootstrap test at level {alpha:g}, not adjusted for the pairs and "
            "not the paired tests of 'Does A beat B?', so near the level the two can part).",
            90,
        )
        + "\n\n"
        + df.to_string(float_format="{:.3f}".format)
    )


def _plan_section(ctx: DemoContext) -> str:
    from .freq import minimum_detectable_effect
    from .freq import optimal_allocation
    from .freq import optimal_runs
    from .freq import tasks_for_power

    if "fit" not in ctx.extra:
        return "(needs the Bayesian fit for the variance components)"
    from .metrics import crossed_variance_components

    if (one := _one_agent(ctx, "the plan is for comparing two agents on the same tasks")) is not None:
        return one  # before the components, whose agent part is then undefined
    vc = crossed_variance_components(ctx.extra["fit"], scale="probability")
    # the agent x task component by its name ("agent:task", or "agent:task:cluster" with clusters)
    mt = next((c for c in map(str, vc.draws["component"].values) if c.startswith("agent:task")), None)
    s_mt = float(vc[mt].mean()) if mt else 0.0
    s_e = float(vc["residual"].mean())
    clipped = ""  # with no agent x task term (one run per cell) the first line says why
    if s_mt < 0:
        # a difference of variances: its posterior mean can fall below 0 when the
        # agent x task variation is small; planning then assumes none
        clipped = (
            f"\n(The agent x task component's posterior mean is {s_mt:.4f} < 0, a difference of "
            "variances near zero: the plan below takes it as 0.)"
        )
        s_mt = 0.0
    T, tasks_text = _tasks_shared(ctx)
    kw = {"sigma2_interaction": s_mt, "sigma2_residual": s_e}
    R, sd_made, runs_text = _runs_made(ctx, kw)
    mde = minimum_detectable_effect(T, sd_diff=sd_made, power=0.8)
    sd_obs, n_pairs = _observed_paired_sd(ctx)
    rows = []
    for effect in (0.03, 0.05, 0.10):
        rows.append(
            {
                "difference to detect": effect,
                "tasks needed (R=1)": tasks_for_power(effect, n_runs=1, **kw),
                f"tasks needed (R={R}, as run)": tasks_for_power(effect, sd_diff=sd_made),
                f"tasks needed (R={R}, no model: observed SD)": (
                    tasks_for_power(effect, sd_diff=sd_obs) if sd_obs > 0 else np.nan
                ),
            }
        )
    table = pd.DataFrame(rows).set_index("difference to detect")
    ctx.extra["plan_table"] = table
    if s_mt > 0:
        r_star = optimal_runs(cost_task=10.0, cost_run=1.0, **kw)
        alloc = optimal_allocation(5000.0, cost_task=10.0, cost_run=1.0, **kw)
        buy = (
            "\n\nIf a new task costs 10 runs' worth, the cost-optimal number of runs per task is\n"
            f"R* = sqrt(s_e c_task / (s_mt c_run)) = {r_star:.1f}; a budget of 5,000 run-units buys "
            f"{int(alloc['n_tasks'])} tasks x {int(alloc['n_runs'])} runs."
        ) + _clustered_buy(ctx, kw)
    elif not mt:
        buy = "\n\n" + textwrap.fill(
            "With one run per cell the log cannot tell agent x task variation from run-to-run "
            "noise, so it cannot say whether a second run of a task is worth more than a new task "
            "(R* = sqrt(s_e c_task / (s_mt c_run)) needs s_mt): run some tasks at least twice to learn it.",
            88,
        )
    else:
        buy = (
            "\n\nWith no agent x task variance the cost-optimal runs per task, "
            "R* = sqrt(s_e c_task / (s_mt c_run)), is unbounded: that rests on an estimate at 0, "
            "so no allocation is recommended; more tasks also widen what the benchmark covers."
        )
    return (
        _components_text(s_mt if mt else None, s_e)
        + runs_text
        + tasks_text
        + f"\nWith {T} tasks at R = {R} runs per cell a paired comparison detects a difference\n"
        f"of {mde:.3f} with 80% power (two-sided, alpha 0.05; noncentral t with T - 1 df).{clipped}\n"
        + _observed_text(sd_made, sd_obs, n_pairs, interaction=bool(mt))
        + _cluster_text(ctx, T, mde, sd_made)
        + "\n\n"
        + table.to_string()
        + buy
    )


def _components_text(s_mt: float | None, s_e: float) -> str:
    """The plan's first line: the two components it stands on, or why there is one (``s_mt`` None).

    With one run per cell the fit has no agent x task term: its variation is inside the
    run-to-run part, so printing "agent x task 0.0000" would claim an estimate never made.
    """
    head = "Variance components of the cell success probability on the probability scale, from\n"
    if s_mt is None:
        return head + (
            f"the crossed fit (posterior mean): run-to-run {s_e:.4f}, which holds the agent x task\n"
            "variation too (one run per cell: the fit has no agent x task term to estimate it).\n"
        )
    return head + f"the crossed fit (posterior means): agent x task {s_mt:.4f}, run-to-run {s_e:.4f}.\n"


def _cluster_design_effect(ctx: DemoContext) -> tuple[float, int, str] | None:
    """How much more a pair's mean difference varies over the task clusters than over independent tasks.

    For each pair, over the tasks both agents ran, with ``e`` the per-task differences of cell
    means less their mean and ``n`` their number: the cluster-robust variance of the mean
    ``sum_g (sum_{t in g} e_t)^2 / n^2`` against the independent-task one ``sum_t e_t^2 / n^2``
    (both without small-sample corrections, so singleton clusters give exactly 1). Returns the
    ratio of their sums over the pairs, the number of clusters and their column's name; None
    without clusters (or with every task its own).
    """
    from ._base import cluster_codes
    from ._base import cluster_label
    from .data import to_counts

    codes = cluster_codes(ctx.data)
    if codes is None or len(codes[1]) == int(ctx.data.sizes["task"]):
        return None
    g = codes[0]
    c = to_counts(ctx.data)
    rate = (c["n_success"] / c["n_runs"]).where(c["n_runs"] > 0).transpose("agent", "task").values
    v_cl = v_iid = 0.0
    for i in range(rate.shape[0]):
        for j in range(i + 1, rate.shape[0]):
            d = rate[i] - rate[j]
            ok = np.isfinite(d)
            if ok.sum() < 2:
                continue
            e = d[ok] - d[ok].mean()
            v_cl += float(np.sum(np.bincount(g[ok], weights=e) ** 2)) / ok.sum() ** 2
            v_iid += float(np.sum(e**2)) / ok.sum() ** 2
    if not v_iid > 0:
        return None
    return v_cl / v_iid, len(codes[1]), cluster_label(ctx.data)


def _observed_clusters(ctx: DemoContext) -> tuple[Any, float, int, str] | None:
    """The log's clusters as a plan's :func:`hierbench.freq.cluster_design` (None without clusters).

    Their sizes as a template and the observed ratio (at least 1) as the design effect, with
    the ratio, the number of clusters and their column's name; computed once per demo.
    """
    if "observed_clusters" not in ctx.extra:
        from ._base import cluster_codes
        from .freq import cluster_design

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


def _clustered_buy(ctx: DemoContext, kw: dict[str, float]) -> str:
    """What the plan's budget buys when new tasks come in clusters like the log's ("" without clusters)."""
    from .freq import optimal_allocation

    observed = _observed_clusters(ctx)
    if observed is None:
        return ""
    cd = observed[0]
    alloc = optimal_allocation(5000.0, cost_task=10.0, cost_run=1.0, clusters=cd, **kw)
    return "\n" + textwrap.fill(
        f"If new tasks come in clusters like these (design effect {cd.design_effect:.2f}, the observed ratio, "
        f"taken as the same whatever R), it buys {int(alloc['n_clusters'])} clusters (about "
        f"{int(alloc['n_tasks'])} tasks) x {int(alloc['n_runs'])} runs.",
        88,
    )


def _cluster_text(ctx: DemoContext, T: int, mde: float, sd: float) -> str:
    """Where tasks come in clusters: the plan takes them as independent, the paired tests do not.

    The clustered figure is :func:`hierbench.freq.minimum_detectable_effect` with the observed
    ratio as the design effect (at least 1) and clusters like the log's (``K - 1`` df).
    """
    from .freq import minimum_detectable_effect

    observed = _observed_clusters(ctx)
    if observed is None:
        return ""
    cd, ratio, k, name = observed
    deff, n_clusters = cd.design_effect, T / cd.tasks_per_cluster  # the ratio, at least 1
    mde_c = minimum_detectable_effect(T, sd_diff=sd, clusters=cd)
    return "\n" + textwrap.fill(
        f"The plan takes tasks as independent; this log's tasks come in {k} clusters of `{name}`, "
        "the unit of the paired tests (section Does A beat B?). On this log a pair's mean difference "
        f"varies {ratio:.2f} times as much over the clusters as over independent tasks (cluster-robust "
        "against independent-task variance, summed over the pairs, no model). If new tasks come in "
        f"clusters like these, every count of tasks needed below is about {deff:.2f} times too "
        f"small, and {T} tasks detect about {mde_c:.3f}, not {mde:.3f} (design effect "
        f"{deff:.2f}, {n_clusters:.0f} clusters: t with {n_clusters - 1:.0f} df).",
        88,
    )


def _observed_paired_sd(ctx: DemoContext) -> tuple[float, int]:
    """The SD of a per-task paired difference as the log shows it, with no model: root mean square over pairs.

    Each pair's differences of its cell means over the tasks both agents ran (at least 3), their
    sample variance; the root of the mean over the pairs. Returns (SD, pairs used).
    """
    from .data import to_counts

    c = to_counts(ctx.data)
    rate = (c["n_success"] / c["n_runs"]).where(c["n_runs"] > 0).transpose("agent", "task").values
    var = []
    for i in range(rate.shape[0]):
        for j in range(i + 1, rate.shape[0]):
            d = rate[i] - rate[j]
            d = d[np.isfinite(d)]
            if d.size >= 3:
                var.append(d.var(ddof=1))
    return (float(np.sqrt(np.mean(var))), len(var)) if var else (np.nan, 0)


def _observed_text(sd_made: float, sd_obs: float, n_pairs: int, *, interaction: bool = True) -> str:
    """The plan's model-based SD beside the one the log shows, said as the two columns' difference.

    ``interaction``: the fit has an agent x task term (else one run-to-run variance holds it).
    """
    if not sd_obs > 0:
        return "(No pair shares 3 tasks with differing results: no model-free SD to set beside the plan.)"
    what = (
        "one agent x task variance for every pair, binomial runs around each cell's rate"
        if interaction
        else "one run-to-run variance, holding the agent x task part, for every pair"
    )
    return textwrap.fill(
        f"That difference and the first two columns rest on the fit's components (model-based: {what}), "
        "an SD of a per-task paired difference "
        f"of {sd_made:.3f}. Beside them, with no model: the per-task paired differences of this log have SD "
        f"{sd_obs:.3f} (root mean square over {n_pairs} pairs, at the runs made); the last column plans with it.",
        88,
    )


def _tasks_shared(ctx: DemoContext) -> tuple[int, str]:
    """The tasks a paired comparison stands on, and why: all of them, or the median a pair shares.

    A pair is compared on the tasks both agents ran; where agents ran different
    subsets (METR's davinci-002: 16 of 83), the log's task count overstates it.
    """
    ran = (_n_runs(ctx) > 0).transpose("agent", "task").values.astype(np.int64)
    shared = (ran @ ran.T)[np.triu_indices(ran.shape[0], k=1)]
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
    from .freq import sd_paired_diff

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


def write_report(
    ctx: DemoContext,
    out: str | os.PathLike,
    sections: list[tuple[str, str]],
    *,
    overwrite: bool = False,
) -> str:
    """Write the demo's report, fit and data.

    The report comes from :func:`hierbench.report.build` (HTML and its Markdown
    twin) with the walk-through text as an appendix; the fit (compact) and the
    data are saved as netCDF. Without a fit, ``overwrite=True`` removes an earlier
    run's ``fit_crossed.nc`` from ``out``, which would otherwise sit beside this
    run's report and data as if it were their fit.
    """
    from pathlib import Path

    from .io import save_dataset
    from .io import save_fit
    from .report import PAIRS_CSV
    from .report import build_all

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    freq = {k: ctx.extra[k] for k in ("bootstrap", "compare") if k in ctx.extra} or "auto"
    kw = dict(
        freq=freq,
        truth=_truth_new_task(ctx),
        prob=PROB,
        rng=ctx.extra.get("seed", 0),
        n_resamples=1999 if _fast(ctx) else 9999,
        overwrite=overwrite,
        progress=bool(ctx.extra.get("progress")),
        title="hierbench demo"
        + (": an evaluation simulated from known parameters" if ctx.truth is not None else ""),
        appendix=sections,
    )
    fit = ctx.extra.get("fit")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # printed already by the sections
        # computed once, written twice: the sections' work (a 316-agent log's pairs) is not done again
        (html, _), rep = build_all(fit, ctx.data, paths=[folder / "report.html", folder / "report.md"], **kw)
    ctx.extra["wrote_pairs"] = PAIRS_CSV in rep.files
    if not ctx.extra["wrote_pairs"]:
        # an earlier, larger log's pairs beside this run's report would pass for this log's
        _drop_stale(folder / PAIRS_CSV, overwrite)
    if fit is not None:
        save_fit(
            fit, folder / "fit_crossed.nc", groups=["posterior_predictive"], overwrite=overwrite
        )
    elif _drop_stale(folder / "fit_crossed.nc", overwrite):
        # an earlier run's fit beside this run's report and data would pass for this log's fit
        ctx.extra["removed_fit"] = True
    save_dataset(ctx.data, folder / "data.nc", overwrite=overwrite)
    return str(html)


def _drop_stale(path: Any, overwrite: bool) -> bool:
    """Remove an earlier run's file this run does not write (only with ``overwrite``); whether one was removed."""
    if overwrite and path.exists():
        path.unlink()
        return True
    return False


def _written_line(ctx: DemoContext, folder: str) -> str:
    """The closing line: what was written where, naming the fit only when there was one."""
    from .report import PAIRS_CSV

    report = "Report (HTML and Markdown" + (f", every pair in {PAIRS_CSV})" if ctx.extra.get("wrote_pairs") else ")")
    what = f"{report}, fit and data" if "fit" in ctx.extra else f"{report} and data"
    line = f"\n{what} written to {folder}"
    if "fit" not in ctx.extra:
        line += " (no fit: the Bayesian section did not run"
        line += "; an earlier run's fit_crossed.nc there was removed)" if ctx.extra.get("removed_fit") else ")"
    return line


#: Analysis sections appended to the data sections.
ANALYSIS_SECTIONS = [
    ("How good is each agent? (frequentist)", _bootstrap_section),
    ("How good is each agent? (Bayesian, beside the frequentist)", _bayes_section),
    ("Reliability: pass^k", _passk_section),
    ("Does A beat B?", _compare_section),
    ("Ranking and its uncertainty", _rank_section),
    ("How many more tasks or runs to buy?", _plan_section),
]


# ---------------------------------------------------------------- data sections


def _demo_data(ctx: DemoContext) -> str:
    from ._console import _report_text
    from .data import read_report

    rep = read_report(ctx.data)
    if ctx.truth is None:
        return _report_text(rep)
    return (
        "The embedded default evaluation (hierbench.testing.default_dataset): simulated from\n"
        "the crossed logit model with known parameters, ragged like a real one.\n\n"
        + _report_text(rep)
    )


def _demo_summary(ctx: DemoContext) -> str:
    from ._console import _summary_text

    return _summary_text(ctx.data)


def _demo_truth(ctx: DemoContext) -> str:
    from ._console import _summary_frame

    t = ctx.truth
    if t is None:  # run_demo leaves this section out on a user's log (demo_sections)
        return "(a user's log: the truth is unknown)"
    true_mean = t["p"].mean("task")
    obs = _summary_frame(ctx.data)["mean_score"]
    df = pd.DataFrame(
        {
            "true agent effect (logit)": t["agent_effect"].to_series(),
            "true mean p over tasks": true_mean.to_series(),
            "observed mean (per task)": obs,
        }
    )
    df.index = df.index.astype(str)
    scal = ", ".join(
        f"{k} = {float(t[k]):g}"
        for k in ("mu", "sd_agent", "sd_task", "sd_agent_task", "sd_cluster", "sd_run")
    )
    return (
        f"True parameters: {scal}\n\n"
        + df.to_string(float_format="{:.3f}".format)
        + "\n\nThe observed means scatter around the true ones by task sampling and run noise;"
        "\nlater sections fit the hierarchical model and put intervals on that gap."
    )


#: The demo, in order: (title, section function). Append to extend ``hierbench demo``.
DEMO_SECTIONS: list[tuple[str, Callable[[DemoContext], str]]] = [
    ("Data", _demo_data),
    ("Summary per agent", _demo_summary),
    ("What the truth was", _demo_truth),
    *ANALYSIS_SECTIONS,
]

_OUTPUTS = ("report.html", "report.md", "fit_crossed.nc", "data.nc", "pairs.csv")


def demo_sections(truth: xr.Dataset | None) -> list[tuple[str, Callable[[DemoContext], str]]]:
    """The sections a run prints, in order: :data:`DEMO_SECTIONS`, less the truth's on a user's log."""
    return [(t, f) for t, f in DEMO_SECTIONS if truth is not None or f is not _demo_truth]


def _note_warnings(ctx: DemoContext, i: int, caught: list) -> None:
    """A section's warnings, each said once at the end (with its section), not as tracebacks."""
    said = ctx.extra.setdefault("warnings", [])
    for w in caught:
        if issubclass(w.category, DeprecationWarning):  # for the developer: passed on as raised
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            continue
        line = f"section {i}: {w.category.__name__}: {w.message}"
        if line not in said:
            said.append(line)


def run_demo(
    data: xr.Dataset | None = None,
    truth: xr.Dataset | None = None,
    *,
    out: str | os.PathLike | None = "hierbench-demo-report",
    seed: int = 20261130,
    fast: bool = False,
    overwrite: bool = False,
    progress: bool = False,
    bootstrap_method: str = "bca",
) -> int:
    """Run every demo section, print it, and write the report; return the exit status.

    ``data=None`` runs the embedded default (with its truth). ``bootstrap_method``:
    the agents' bootstrap interval, ``"bca"`` or ``"percentile"`` (defined where
    BCa is not: every resample on one side of the estimate). The sections go to
    standard output; their warnings (a fit that did not converge, with the
    reasons) to standard error, one ``warning:`` line each, after the sections.
    """
    from pathlib import Path

    if bootstrap_method not in _METHOD_WORDS:
        raise ValueError(f"`bootstrap_method` must be 'bca' or 'percentile'; got {bootstrap_method!r}")
    if data is None:
        from .testing import default_dataset

        data, truth = default_dataset()
    if out:
        there = [f for f in _OUTPUTS if (Path(out) / f).exists()]
        if there and not overwrite:
            raise FileExistsError(
                f"--out {str(out)!r} already holds {there} from an earlier run; pass --overwrite "
                "or choose another --out"
            )
    extra = {"seed": seed, "fast": fast, "progress": progress, "bootstrap_method": bootstrap_method, "out": out}
    ctx = DemoContext(data=data, truth=truth, extra=extra)
    done: list[tuple[str, str]] = []
    for i, (title, section) in enumerate(demo_sections(truth), start=1):
        print(f"\n## {i}. {title}\n", flush=True)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                text = section(ctx)
        except (ValueError, ArithmeticError) as exc:  # one section's failure never hides the rest
            text = f"(not computed: {type(exc).__name__}: {exc})"
            ctx.extra.setdefault("warnings", []).append(f"section {i}. {title} not computed: {exc}")
        _note_warnings(ctx, i, caught)
        print(text, flush=True)
        done.append((f"{i}. {title}", text))
    if out:
        path = write_report(ctx, out, done, overwrite=overwrite)
        print(_written_line(ctx, str(Path(path).parent)))
    print_warnings(ctx.extra.get("warnings", []))
    return 0
