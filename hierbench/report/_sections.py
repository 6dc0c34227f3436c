"""The report's other sections: data, abilities, pass^k, ranks, variance, predictive checks, side by side, checklist."""

from __future__ import annotations

import platform
import warnings

import numpy as np
import pandas as pd
import xarray as xr

from ._context import _TITLES, _Context, _label, _on_score_scale, _Skip
from ._report import Report, as_table


def _sec_data(ctx: _Context, rep: Report, sid: str) -> None:
    if ctx.data is None:
        if (
            ctx.fit is not None
            and "constant_data" in ctx.fit.children
            and "n_runs" in ctx.fit["constant_data"]
        ):
            n = ctx.fit["constant_data"]["n_runs"]
            df = pd.DataFrame(
                {
                    "tasks run": (n > 0).sum("task").to_series(),
                    "runs": n.sum("task").to_series(),
                    "cells never run": (n == 0).sum("task").to_series(),
                }
            )
            df.index = df.index.astype(str)
            rep.section(
                _TITLES[sid],
                f"{n.sizes['agent']} agents x {n.sizes['task']} tasks, {int(n.sum())} runs, "
                f"{int((n == 0).sum())} agent x task cells never run (from the fit's constant data; "
                "give the data for the error rates and the frequentist half).",
                table=df,
                id=sid,
            )
            return
        raise _Skip("no data given")
    from ..data import describe, summarize

    d = describe(ctx.data)
    s = summarize(ctx.data).to_dataframe()
    s.index = s.index.astype(str)
    rename = {
        "n_tasks_attempted": "tasks run",
        "n_missing_cells": "cells never run",
        "n_runs": "runs",
        "n_scored": "scored runs",
        "n_error": "error runs",
        "error_rate": "error rate",
        "mean_score": "mean score (per task)",
        "micro_mean_score": "mean score (per run)",
    }
    s = s.rename(columns=rename)
    flags = []
    tasks = s["tasks run"].astype(float)
    few = s.index[tasks < 0.5 * tasks.max()].tolist()
    if few:
        flags.append(
            f"agents with fewer than half the tasks of the best-covered agent: {few} (their means and ranks rest on other tasks)"
        )
    if "error rate" in s:
        high = s.index[s["error rate"] > 0.05].tolist()
        if high:
            flags.append(
                f"agents with infrastructure error rate above 5%: {high} (policy errors={d['errors']!r})"
            )
    rpc = d["runs_per_cell"]
    if rpc["min"] <= 1:
        flags.append("some cells hold a single run: run-to-run variation cannot be separated there")
    if d["score_kind"] != "binary":
        flags.append(
            f"scores are {d['score_kind']}: pass^k and the binomial models need binary scores"
        )
    if d["not_kept"]:
        flags.append(f"records not kept by the reader: {d['not_kept']}")
    text = (
        f"{d['n_agents']} agents x {d['n_tasks']} tasks; {d['n_runs_total']} runs; runs per cell "
        f"min {rpc['min']}, median {rpc['median']:g}, max {rpc['max']}; "
        f"{d['n_missing_cells']} of {d['n_cells']} agent x task cells never run; "
        f"{d['n_error_runs']} infrastructure-error runs ({d['n_error_runs'] / max(d['n_runs_total'], 1):.1%}, "
        f"policy errors={d['errors']!r}); scores {d['score_kind']}; source {d['source']}."
    )
    if flags:
        text += "\n\n**Flags:**\n\n" + "\n".join(f"- {f}" for f in flags)
    else:
        text += "\n\nNo flags: every agent ran most tasks, error rates are low."
    rep.section(_TITLES[sid], text, table=s, id=sid)


def _sec_abilities(ctx: _Context, rep: Report, sid: str) -> None:
    from . import _figures as F

    prob = ctx.prob
    intervals: dict[str, pd.DataFrame] = {}
    notes = []
    bay = ctx.bayes_frame()
    var = ctx.var
    if bay is not None:
        intervals[f"Bayes {ctx.fit.attrs.get('hierbench_model', '')} ({prob:.0%} ETI)"] = bay
    boot = ctx.bootstrap()
    same_scale = var is None or _on_score_scale(ctx.post[var], var)
    if boot is not None:
        bf = as_table(boot)
        kind = bf["ci_kind"].iloc[0] if "ci_kind" in bf else "bootstrap"
        if same_scale:
            intervals[f"cluster bootstrap ({kind}, {prob:.0%})"] = bf
        else:
            notes.append(
                f"The Bayesian variable `{var}` is on the model's scale, not the score scale, so the "
                "bootstrap intervals of the mean score are not drawn on its axis (see the side-by-side table)."
            )
    if not intervals:
        raise _Skip("needs a fit with an agent-level variable or data for the bootstrap")
    truth = ctx.truth if same_scale else None
    if var is not None:
        xlabel = f"{_label(var)} ({'probability, 0-1' if same_scale else 'model scale'}); {prob:.0%} intervals"
    else:
        xlabel = f"mean score per task (0-1); {prob:.0%} intervals"
    fig = F.interval_forest(intervals, truth=truth, xlabel=xlabel, title="Agent abilities")
    wide = pd.concat({k: v[["estimate", "lower", "upper"]] for k, v in intervals.items()}, axis=1)
    wide.columns = [f"{a}: {b}" for a, b in wide.columns]
    wide.index = wide.index.astype(str)
    wide.index.name = "agent"
    if truth is not None:
        wide.insert(0, "truth", truth.reindex(wide.index))
    text = (
        "Each agent's level with its interval from each method on one axis"
        + ("; crosses mark the truth." if truth is not None else ".")
        + (" " + " ".join(notes) if notes else "")
    )
    if var == "mean_new_task":
        text += (
            " The Bayesian target is the expected score on a new task drawn from the task population, "
            "the same target as the task bootstrap of the benchmark mean."
        )
    rep.section(_TITLES[sid], text, table=wide, id=sid)
    rep.figure("abilities_forest", fig, f"Agent abilities: {xlabel}.")


def _sec_passk(ctx: _Context, rep: Report, sid: str) -> None:
    from . import _figures as F

    if ctx.data is not None and not ctx.binary():
        raise _Skip("pass^k needs binary scores (0 or 1); these scores are not binary")
    model = ctx.fit.attrs.get("hierbench_model") if ctx.fit is not None else None
    r_max = int(ctx.data.sizes["run"]) if ctx.data is not None else 5
    if (
        ctx.fit is not None
        and "constant_data" in ctx.fit.children
        and "cell_n_runs" in ctx.fit["constant_data"]
    ):
        r_max = int(ctx.fit["constant_data"]["cell_n_runs"].max())
    ks = list(range(1, max(1, min(r_max, 8)) + 1))
    bands = points = None
    if model in ("crossed", "beta_binomial"):
        import inspect

        from .. import metrics

        kw = {"k": ks, "prob": ctx.prob}
        if "realised" in inspect.signature(metrics.pass_hat_k).parameters:
            # these tasks' own pass^k (each p_t drawn from its posterior): the unbiased
            # estimator's target, so the points and the bands answer the same question
            kw |= {"realised": True, "rng": ctx.rng}
        res = metrics.pass_hat_k(ctx.fit, **kw)
        t = as_table(res)
        if "estimate" not in t and "mean" in t:
            t = t.rename(columns={"mean": "estimate"})
        bands = t.reorder_levels(["agent", "k"]) if list(t.index.names) != ["agent", "k"] else t
    if ctx.data is not None:
        from .. import freq

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fr = freq.pass_hat_k(ctx.data, ks)
        m = getattr(fr, "estimate", None)
        m = m if isinstance(m, xr.DataArray) else fr.mean
        points = m.rename("estimate").to_dataframe()[["estimate"]]
        if list(points.index.names) != ["agent", "k"]:
            points = points.reorder_levels(["agent", "k"])
        points.index = points.index.set_levels(points.index.levels[0].astype(str), level=0)
    if bands is None and points is None:
        raise _Skip("needs data with binary scores or a crossed / beta-binomial fit")
    if bands is not None:
        bands.index = bands.index.set_levels(bands.index.levels[0].astype(str), level=0)
    fig = F.passk_curves(bands, points, prob=ctx.prob, title="pass^k: all k attempts succeed")
    show = sorted({1, 2, ks[-1]} & set(ks))
    parts = {}
    for k in show:
        if bands is not None:
            b = bands.xs(k, level="k")
            parts[f"pass^{k} Bayes"] = b["estimate"]
            parts[f"pass^{k} lower"] = b["lower"]
            parts[f"pass^{k} upper"] = b["upper"]
        if points is not None:
            parts[f"pass^{k} unbiased"] = points.xs(k, level="k")["estimate"]
    table = pd.DataFrame(parts)
    table.index.name = "agent"
    rep.section(
        _TITLES[sid],
        "pass^k is the chance that k independent attempts at a task all succeed, averaged over tasks "
        "(tau-bench's reliability metric). Points: the unbiased estimator C(c,k)/C(n,k) averaged over "
        "the tasks with at least k runs"
        + (
            f"; lines and bands: the model's posterior mean and {ctx.prob:.0%} equal-tailed interval "
            "of the same average over this benchmark's tasks (each task's success probability drawn "
            "from its posterior; a cell never run enters through the model)."
            if bands is not None
            else "."
        )
        + f" The table shows k = {', '.join(map(str, show))}; the figure every k.",
        table=table,
        id=sid,
    )
    rep.figure("passk_curves", fig, f"pass^k against k per agent ({ctx.prob:.0%} bands).")


def _sec_ranks(ctx: _Context, rep: Report, sid: str) -> None:
    from . import _figures as F

    if ctx.var is None:
        raise _Skip("needs a fit with an agent-level variable")
    from .. import metrics

    rp = metrics.rank_probabilities(ctx.fit, var=ctx.var)
    df = rp.transpose("agent", "rank").to_pandas()
    df.index = df.index.astype(str)
    df.columns = [str(c) for c in df.columns]
    exp_rank = (df.to_numpy() * np.arange(1, df.shape[1] + 1)).sum(1)
    df = df.iloc[np.argsort(exp_rank, kind="stable")]
    fig = F.heatmap(
        df,
        title=f"P(agent holds rank) by {_label(ctx.var)}",
        xlabel="rank (1 = best)",
        ylabel="agent",
        cbar_label="posterior probability (0-1)",
    )
    rep.section(
        _TITLES[sid],
        f"Posterior probability of each rank by `{ctx.var}` ({_label(ctx.var)}); rows sum to 1, "
        "agents sorted by expected rank.",
        table=df,
        id=sid,
    )
    rep.figure("rank_probabilities", fig, "Rank probabilities (posterior).")


def _sec_variance(ctx: _Context, rep: Report, sid: str) -> None:
    from . import _figures as F

    model = ctx.fit.attrs.get("hierbench_model") if ctx.fit is not None else None
    rows = {}
    text = []
    if model == "crossed":
        from ..metrics import crossed_variance_components

        vc = crossed_variance_components(ctx.fit, scale="probability")
        for name, da in vc.data_vars.items():
            q = da.quantile([(1 - ctx.prob) / 2, (1 + ctx.prob) / 2], dim=("chain", "draw")).values
            rows[str(name)] = {
                "estimate": float(da.mean()),
                "lower": float(q[0]),
                "upper": float(q[1]),
            }
        text.append(
            "Bayesian: variance of the cell success probability split into agent, task, agent x task and "
            f"run-to-run (binomial) parts, posterior mean and {ctx.prob:.0%} equal-tailed interval."
        )
    table = pd.DataFrame.from_dict(rows, orient="index") if rows else None
    if ctx.data is not None:
        from .. import freq

        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                g = freq.variance_components(ctx.data)  # design read from the data
            label = f"G-theory ({getattr(g, 'method', 'ANOVA')})"
            ctx.warnings += [f"G-theory: {w.message}" for w in caught]
            comp = g.components if hasattr(g, "components") else g.estimate
            gs = comp.to_series()
            gs.index = gs.index.astype(str)
            if table is None:
                table = gs.rename(label).to_frame()
            else:
                table[label] = gs.reindex(table.index)
                extra = gs.index.difference(table.index)
                for e in extra:
                    table.loc[e, label] = gs[e]
            text.append(
                f"{label}: the same components estimated from the scores "
                f"(design {getattr(g, 'design', 'read from the data')})."
            )
        except Exception as exc:
            first = str(exc).split(";")[0].split(". ")[0][:200]
            text.append(f"G-theory not computed: {type(exc).__name__}: {first}.")
    if table is None:
        raise _Skip("needs a crossed fit or data")
    table.index.name = "component"
    rep.section(_TITLES[sid], " ".join(text), table=table, id=sid, digits=4)
    if rows:
        fig = F.variance_plot(
            table[["estimate", "lower", "upper"]].dropna(how="all"),
            title="Variance components (crossed model)",
            xlabel=f"variance of the success probability (probability^2); {ctx.prob:.0%} intervals",
        )
        rep.figure("variance_components", fig, "Variance components of the success probability.")


def _sec_ppc(ctx: _Context, rep: Report, sid: str) -> None:
    from . import _figures as F

    if ctx.fit is None:
        raise _Skip("no fit given")
    if "posterior_predictive" not in ctx.fit.children:
        dropped = ctx.fit.attrs.get("hierbench_groups_dropped", "")
        raise _Skip(
            "the fit has no posterior_predictive group"
            + (
                f" (left out when it was saved compact: {dropped}; save with groups='all' or "
                "`hierbench fit --keep-predictive` to check it)"
                if dropped
                else ""
            )
        )
    obs = ctx.fit["observed_data"].to_dataset() if "observed_data" in ctx.fit.children else None
    if obs is None or not any("cell" in v.dims for v in obs.data_vars.values()):
        raise _Skip(
            "the predictive check of success counts per (agent, task) cell applies to the count "
            f"models; this {ctx.fit.attrs.get('hierbench_model', 'custom')} fit has no `cell` observations"
        )
    from ..bayes import predictive_check

    chk = predictive_check(ctx.fit)
    fig = F.ppc_plot(chk, title="Posterior predictive check: tasks by number of successes")
    worst = chk["p_value"].to_series().dropna()
    extreme = worst[(worst < 0.025) | (worst > 0.975)]
    text = (
        "For each agent, the number of tasks with c successes out of n runs, observed (bars) against "
        "the posterior predictive mean and 90% band (points). Observed bars outside the band at 0 and n "
        "mean more all-fail and all-pass tasks than the model predicts (overdispersion)."
        + (
            f" {len(extreme)} of {len(worst)} (agent, n, c) counts have a predictive p-value below 0.025 or above 0.975."
            if len(worst)
            else ""
        )
    )
    tab = chk[
        ["observed", "predicted_mean", "predicted_lower", "predicted_upper", "p_value"]
    ].to_dataframe()
    tab = tab[tab["predicted_mean"].notna()]
    tab["observed"] = tab["observed"].astype(int)
    rep.section(_TITLES[sid], text, table=tab if len(tab) <= 40 else None, id=sid)
    rep.figure("ppc", fig, "Posterior predictive check of the per-task success counts.")


def _sec_side(ctx: _Context, rep: Report, sid: str) -> None:
    boot = ctx.bootstrap()
    bay = ctx.bayes_frame()
    if boot is None or bay is None:
        raise _Skip("needs both a fit and data (the Bayesian and the frequentist half)")
    bf = as_table(boot)
    kind = bf["ci_kind"].iloc[0] if "ci_kind" in bf else "bootstrap"
    if not _on_score_scale(ctx.post[ctx.var], ctx.var):
        raise _Skip(
            f"the Bayesian `{ctx.var}` is on the model's scale, the bootstrap on the score scale: not comparable"
        )
    bf.index = bf.index.astype(str)
    bay.index = bay.index.astype(str)
    wide = pd.concat(
        {
            f"bootstrap {kind}": bf[["estimate", "lower", "upper"]],
            "Bayes ETI": bay[["estimate", "lower", "upper"]],
        },
        axis=1,
    )
    wide.columns = [f"{a} {b}" for a, b in wide.columns]
    b_lo, b_hi = wide[f"bootstrap {kind} lower"], wide[f"bootstrap {kind} upper"]
    y_lo, y_hi = wide["Bayes ETI lower"], wide["Bayes ETI upper"]
    wide["difference"] = wide["Bayes ETI estimate"] - wide[f"bootstrap {kind} estimate"]
    no_overlap = (y_lo > b_hi) | (b_lo > y_hi)
    outside = (
        (wide["Bayes ETI estimate"] < b_lo)
        | (wide["Bayes ETI estimate"] > b_hi)
        | (wide[f"bootstrap {kind} estimate"] < y_lo)
        | (wide[f"bootstrap {kind} estimate"] > y_hi)
    )
    wide["disagree"] = no_overlap | outside
    if ctx.truth is not None:
        t = ctx.truth.reindex(wide.index)
        wide.insert(0, "truth", t)
        wide["bootstrap covers"] = (b_lo <= t) & (t <= b_hi)
        wide["Bayes covers"] = (y_lo <= t) & (t <= y_hi)
    n_dis = int(wide["disagree"].sum())
    rep.section(
        _TITLES[sid],
        f"The agent's expected score on a new task, both methods at {ctx.prob:.0%}. `disagree` flags "
        "an agent whose point estimate from one method lies outside the other's interval (or whose "
        f"intervals do not overlap): {n_dis} of {len(wide)} agents flagged."
        + (
            " The bootstrap target is the mean score per task; the Bayesian `mean_new_task` is the model's "
            "expected score on a new task, the same target."
            if ctx.var == "mean_new_task"
            else ""
        ),
        table=wide,
        id=sid,
        flag="disagree",
    )


def _sec_checklist(ctx: _Context, rep: Report, sid: str) -> None:
    rows = []
    d = None
    if ctx.data is not None:
        from ..data import describe

        d = describe(ctx.data)
        rows += [
            ("n (agents x tasks)", f"{d['n_agents']} agents x {d['n_tasks']} tasks"),
            (
                "runs",
                f"{d['n_runs_total']} runs; per cell min {d['runs_per_cell']['min']}, "
                f"median {d['runs_per_cell']['median']:g}, max {d['runs_per_cell']['max']}",
            ),
            ("missing cells", f"{d['n_missing_cells']} of {d['n_cells']}"),
            (
                "errors",
                f"{d['n_error_runs']} infrastructure-error runs, policy errors={d['errors']!r}",
            ),
        ]
        if "cluster" in ctx.data.coords:
            n_cl = len(set(map(str, ctx.data["cluster"].values)))
            rows.append(
                (
                    "clustering",
                    f"tasks in {n_cl} clusters (`cluster`); the bootstrap and the paired "
                    "tests resample whole clusters",
                )
            )
        else:
            rows.append(("clustering", "no cluster labels: tasks are resampled one by one"))
    boot = ctx.cache.get("bootstrap")
    kinds = []
    if boot is not None:
        bf = as_table(boot)
        kinds.append(
            f"bootstrap: {bf['ci_kind'].iloc[0] if 'ci_kind' in bf else '?'}, {ctx.n_resamples} resamples"
        )
    if ctx.fit is not None:
        kinds.append("Bayes: equal-tailed posterior interval (eti)")
    rows.append(
        (
            "interval level and kind",
            f"{ctx.prob:.0%}; " + "; ".join(kinds) if kinds else f"{ctx.prob:.0%}",
        )
    )
    rows.append(
        (
            "paired deltas",
            "yes: each pair compared on the tasks both ran (paired bootstrap and sign-flip "
            "test, Holm and BH over all pairs)"
            if ctx.want_freq("compare")
            else "not computed (no data)",
        )
    )
    if ctx.fit is not None:
        a = ctx.fit.attrs
        rows.append(
            ("model", f"{a.get('hierbench_model', 'custom')}; spec {a.get('hierbench_spec', '')}")
        )
        rows.append(("sampler", f"{a.get('sampler', '?')} {a.get('sampler_settings', '')}"))
        conv = a.get("diag_converged")
        rows.append(
            (
                "converged",
                "yes"
                if conv is not None and int(conv)
                else f"NO: {a.get('diag_failures', '')}"
                if conv is not None
                else "not checked",
            )
        )
        rows.append(("data hash (fit)", str(a.get("hierbench_data_hash", ""))))
    rows.append(
        (
            "seed",
            f"report resamples rng={ctx.rng!r}"
            + (
                f"; fit seed {ctx.fit.attrs.get('seed')}"
                if ctx.fit is not None and "seed" in ctx.fit.attrs
                else ""
            ),
        )
    )
    rows.append(("versions", ", ".join(f"{k} {v}" for k, v in _versions(ctx.fit).items())))
    table = pd.DataFrame(rows, columns=["item", "value"]).set_index("item")
    rep.section(
        _TITLES[sid],
        "What a reader needs to judge and reproduce these numbers.",
        table=table,
        id=sid,
    )


def _versions(fit: xr.DataTree | None) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in (
        "hierbench",
        "numpy",
        "scipy",
        "xarray",
        "pandas",
        "arviz-base",
        "arviz-stats",
        "arviz-plots",
    ):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:  # pragma: no cover
            out[pkg] = "not installed"
    if fit is not None:
        post_attrs = fit["posterior"].attrs if "posterior" in fit.children else {}
        lib = post_attrs.get("inference_library")
        if lib:
            out[f"{lib} (fit)"] = str(post_attrs.get("inference_library_version", "?"))
        if "hierbench_version" in fit.attrs:
            out["hierbench (fit)"] = str(fit.attrs["hierbench_version"])
    return out
