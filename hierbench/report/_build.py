"""``build``: the whole report of an evaluation in one call (HTML or Markdown).

Each section is computed from the fit and/or the data it needs. A section
that cannot be computed (no fit, a model without that quantity, a group left
out of a compact saved fit) is still written, with a note saying why, and a
:class:`ReportSectionWarning` is raised: nothing is left out silently.
"""

from __future__ import annotations

import json
import os
import platform
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from .._base import DEFAULT_PROB, HierbenchWarning, Progress, check_prob
from ._match import check_fit_data
from ._report import Report, as_table

__all__ = ["SECTIONS", "ReportSectionWarning", "build"]

#: Section ids of a full report, in order (the HTML anchors).
SECTIONS: tuple[str, ...] = (
    "data-summary",
    "convergence",
    "abilities",
    "pass-k",
    "ranks",
    "pairwise",
    "variance",
    "ppc",
    "side-by-side",
    "checklist",
)

_TITLES = {
    "data-summary": "Data summary",
    "convergence": "Convergence diagnostics",
    "abilities": "Agent abilities",
    "pass-k": "Reliability: pass^k",
    "ranks": "Rank probabilities",
    "pairwise": "Does A beat B? Pairwise probabilities and paired tests",
    "variance": "Variance components",
    "ppc": "Posterior predictive checks",
    "side-by-side": "Bayesian and frequentist side by side",
    "checklist": "Reporting checklist",
}

#: Readable names of posterior variables and their scale (used on axes and in tables).
LABELS: dict[str, str] = {
    "mean_new_task": "expected score on a new task from the task population",
    "mean_observed": "mean score over this benchmark's tasks",
    "ability": "ability (model scale)",
    "agent_effect": "agent effect (logit scale)",
    "theta": "success probability",
    "p_agent": "success probability",
    "mu": "mean success probability",
}


class ReportSectionWarning(HierbenchWarning):
    """A report section could not be computed; the report says why in that section."""


def _label(var: str) -> str:
    return LABELS.get(var, var.replace("_", " "))


def _agent_var(post: xr.Dataset) -> str | None:
    """The posterior variable that states each agent's level, preferring the score scale."""
    for name in ("mean_new_task", "p_agent", "theta", "mu", "ability"):
        if name in post and set(post[name].dims) == {"chain", "draw", "agent"}:
            return name
    for name, da in post.data_vars.items():
        if set(da.dims) == {"chain", "draw", "agent"}:
            return str(name)
    return None


def _on_score_scale(da: xr.DataArray, name: str) -> bool:
    if name in ("ability", "agent_effect"):
        return False
    v = da.values
    return bool(np.nanmin(v) >= 0 and np.nanmax(v) <= 1)


def _eti(da: xr.DataArray, prob: float) -> pd.DataFrame:
    """Posterior mean and equal-tailed interval per agent, as estimate / lower / upper."""
    q = da.quantile([(1 - prob) / 2, (1 + prob) / 2], dim=("chain", "draw"))
    return pd.DataFrame(
        {
            "estimate": da.mean(("chain", "draw")).to_series(),
            "lower": q.isel(quantile=0, drop=True).to_series(),
            "upper": q.isel(quantile=1, drop=True).to_series(),
        }
    )


def _as_series(truth: object) -> pd.Series | None:
    if truth is None:
        return None
    if isinstance(truth, xr.DataArray):
        s = truth.to_series()
    elif isinstance(truth, Mapping):
        s = pd.Series(dict(truth), dtype=float)
    elif isinstance(truth, pd.Series):
        s = truth
    else:
        raise TypeError(
            "`truth` must be a DataArray over `agent`, a pandas Series or a dict agent -> value; "
            f"got {type(truth).__name__}"
        )
    s = s.astype(float)
    s.index = s.index.astype(str)
    return s


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


def _load(fit, data):
    if isinstance(fit, (str, os.PathLike)):
        from ..io import load_fit

        fit = load_fit(fit)
    if fit is not None and not isinstance(fit, xr.DataTree):
        raise TypeError(
            f"`fit` must be an xarray.DataTree or the path of a saved fit; got {type(fit).__name__}"
        )
    if isinstance(data, (str, os.PathLike)):
        p = Path(data)
        if p.suffix == ".nc":
            from ..io import load_dataset

            data = load_dataset(p)
        else:
            from ..data import from_records

            data = from_records(p)
    if data is not None and not isinstance(data, xr.Dataset):
        raise TypeError(
            f"`data` must be an eval xarray.Dataset or the path of a log; got {type(data).__name__}"
        )
    return fit, data


def build(
    fit: xr.DataTree | str | os.PathLike | None = None,
    data: xr.Dataset | str | os.PathLike | None = None,
    *,
    path: str | os.PathLike,
    freq: str | Mapping[str, object] | None = "auto",
    truth: xr.DataArray | pd.Series | Mapping[str, float] | None = None,
    format: str | None = None,
    title: str | None = None,
    prob: float = DEFAULT_PROB,
    n_resamples: int = 1999,
    rng: None | int = 0,
    overwrite: bool = False,
    progress: bool | None = None,
    appendix: Sequence[tuple[str, str]] = (),
) -> Path:
    """Write the full report of an evaluation: data, convergence, abilities, pass^k, ranks, pairs, checks.

    Parameters
    ----------
    fit : xarray.DataTree or path, optional
        A fit from :func:`hierbench.bayes.fit` (or the path of one saved with
        :func:`hierbench.io.save_fit`).
    data : xarray.Dataset or path, optional
        The eval dataset (or the path of a log or a saved ``.nc`` dataset);
        needed for the data summary and the frequentist half.
    path : path
        ``*.html`` (one self-contained file, figures embedded) or ``*.md``
        (Markdown and a ``<stem>_figures/`` folder beside it).
    freq : "auto", mapping or None
        ``"auto"`` computes the frequentist counterparts from ``data``
        (cluster bootstrap, paired tests with Holm and BH, unbiased pass^k,
        G-theory variance components); a mapping gives some of them already
        computed (keys ``"bootstrap"``, ``"compare"``); ``None`` leaves the
        frequentist half out.
    truth : DataArray, Series or dict, optional
        Known value of each agent's expected score on a new task (a
        simulation's truth): drawn as crosses and compared in the tables.
    format : {"html", "md"}, optional
        Default from the suffix of ``path``.
    title : str, optional
    prob : float
        Level of every interval in the report.
    n_resamples : int
        Bootstrap resamples and permutations of the frequentist half.
    rng : int or None
        Seed of the resamples (stated in the checklist).
    overwrite : bool
        Replace an existing report (default: refuse).
    progress : bool, optional
        Print each stage to stderr; default only on a terminal.
    appendix : sequence of (heading, text)
        Extra sections of preformatted text after the checklist (the demo's
        walk-through).

    Returns
    -------
    pathlib.Path
        The report written.

    Examples
    --------
    >>> import tempfile, pathlib, warnings
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=3, rng=0)
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "report.html"
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     p = build(data=ds, path=out, n_resamples=199, progress=False)
    >>> 'id="data-summary"' in p.read_text()
    True
    """
    prob = check_prob(prob)
    if fit is None and data is None:
        raise ValueError("give `fit`, `data` or both: there is nothing to report")
    fit, data = _load(fit, data)
    if fit is not None and data is not None:
        check_fit_data(fit, data)
    with Progress(len(SECTIONS) + 1, "report", enabled=progress, unit="section") as bar:
        ctx = _Context(
            fit=fit,
            data=data,
            prob=prob,
            rng=rng,
            n_resamples=n_resamples,
            truth=_as_series(truth),
            freq=freq,
            say=bar.stage,
        )
        model = fit.attrs.get("hierbench_model", "custom") if fit is not None else None
        rep = Report(title or ("hierbench report" + (f": {model} model" if model else "")))
        for sid in SECTIONS:
            bar.stage(_TITLES[sid])
            _run_section(ctx, rep, sid)
            bar.update(1)
        if ctx.warnings:
            rep.section(
                "Warnings raised while computing the report",
                "\n".join(f"- {w}" for w in dict.fromkeys(ctx.warnings)),
                id="warnings",
            )
        for i, (heading, text) in enumerate(appendix, start=1):
            rep.section(str(heading), "```text\n" + str(text) + "\n```", id=f"appendix-{i}")
        bar.stage("writing")
        out = rep.write(path, format=format, overwrite=overwrite)
        bar.update(1)
    return out


def _run_section(ctx: _Context, rep: Report, sid: str) -> None:
    """One section: its warnings collected, a section that cannot be computed says why."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _SECTION_FUNCS[sid](ctx, rep, sid)
        for w in caught:
            if not issubclass(
                w.category, (DeprecationWarning, PendingDeprecationWarning, FutureWarning)
            ):
                ctx.warnings.append(f"{_TITLES[sid]}: {w.category.__name__}: {w.message}")
    except _Skip as why:
        rep.section(_TITLES[sid], id=sid, note=str(why))
    except Exception as exc:  # a section that fails is reported, never dropped silently
        msg = f"not computed: {type(exc).__name__}: {exc}"
        warnings.warn(f"report section {sid!r} {msg}", ReportSectionWarning, stacklevel=3)
        rep.section(_TITLES[sid], id=sid, note=msg)


class _Skip(Exception):
    """A section that does not apply (the note says why)."""


class _Context:
    def __init__(self, **kw):
        self.__dict__.update(kw)
        self.warnings: list[str] = []
        self.cache: dict[str, object] = {}

    @property
    def post(self) -> xr.Dataset | None:
        if self.fit is None or "posterior" not in self.fit.children:
            return None
        if "post" not in self.cache:
            self.cache["post"] = self.fit["posterior"].to_dataset()
        return self.cache["post"]

    @property
    def var(self) -> str | None:
        return None if self.post is None else _agent_var(self.post)

    def want_freq(self, key: str) -> bool:
        if self.data is None or self.freq is None:
            return False
        return self.freq == "auto" or (isinstance(self.freq, Mapping) and key in self.freq)

    def binary(self) -> bool:
        if self.data is None:
            return False
        from .._base import is_binary

        return is_binary(self.data["score"].values)

    def bootstrap(self):
        if "bootstrap" not in self.cache:
            if isinstance(self.freq, Mapping) and "bootstrap" in self.freq:
                self.cache["bootstrap"] = self.freq["bootstrap"]
            elif self.want_freq("bootstrap"):
                from .. import freq

                self.say(f"cluster bootstrap, {self.n_resamples} resamples")
                self.cache["bootstrap"] = freq.bootstrap_ci(
                    self.data,
                    method="bca",
                    n_resamples=self.n_resamples,
                    prob=self.prob,
                    rng=self.rng,
                )
            else:
                self.cache["bootstrap"] = None
        return self.cache["bootstrap"]

    def bayes_frame(self) -> pd.DataFrame | None:
        if self.var is None:
            return None
        return _eti(self.post[self.var], self.prob)


# ---------------------------------------------------------------- sections


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
    return rows[:n]


_CHECK_LABELS = {
    "r_hat": "R-hat (rank-normalised split), largest",
    "ess_bulk": "ESS bulk, smallest",
    "ess_tail": "ESS tail, smallest",
    "divergences": "divergent transitions",
    "bfmi": "E-BFMI, smallest chain",
}


def _diag_checks(fit: xr.DataTree) -> tuple[list[dict], list[str]]:
    """The fit's recorded checks (value, where, limit, why) and failures, from one computation.

    Fits saved before the checks were recorded get them recomputed (their
    failures too, so the rows and the verdict agree).
    """
    attrs = fit.attrs
    if "diag_checks" not in attrs and "posterior" in fit.children:
        from .. import bayes

        attrs = bayes.compute_diagnostics(fit, warn=False).attrs
    failures = attrs.get("diag_failures", "[]")
    try:
        failures = json.loads(failures) if isinstance(failures, str) else list(failures)
    except ValueError:
        failures = [failures]
    return json.loads(attrs.get("diag_checks", "[]")), failures


def _check_rows(checks: list[dict], ranks: dict[str, float], alpha: float) -> pd.DataFrame:
    rows = []
    for c in checks:
        limit = f"{'≤' if c['rule'] == '<=' else '≥'} {c['limit']:.4g}"
        value = c["value"]
        if c.get("over_limit_at"):
            value, limit = c["over_limit_value"], f"≤ {c['over_limit_limit']:.4g}"
        rows.append({
            "check": _CHECK_LABELS.get(c["check"], c["check"]),
            "value": value,
            "at": c.get("over_limit_at") or c["at"],
            "limit": limit,
            "passes": bool(c["passed"]),
            "why this limit": c["why"],
        })  # fmt: skip
    if ranks:
        at, p = min(ranks.items(), key=lambda kv: kv[1])
        rows.append({
            "check": "rank plots below: chains' ranks uniform, smallest p",
            "value": p,
            "at": at,
            "limit": f"≥ {alpha:g}",
            "passes": p >= alpha,
            "why this limit": "the multi-chain rank uniformity test arviz-plots prints on each "
            f"rank plot, at its envelope level {1 - alpha:g}; the plotted parameters are the "
            "highest R-hats of many, so one flag can be chance, but it is a warning",
        })  # fmt: skip
    return pd.DataFrame(rows).set_index("check")


def _verdict(failures: list, table: pd.DataFrame) -> tuple[str, str | None]:
    """One line that agrees with every row of the table (and the plots)."""
    if failures:
        return "not converged", (
            "The fit FAILED convergence checks: " + "; ".join(map(str, failures))
            + ". Do not trust its summaries."
        )
    warn = [i for i, ok in table["passes"].items() if not ok]
    if warn:
        return "warning", f"Every threshold passes but {'; '.join(warn)} is flagged: look at the plot before trusting the tails."
    return "converged: every check passes, the rank plots included", None


def _sec_convergence(ctx: _Context, rep: Report, sid: str) -> None:
    if ctx.fit is None:
        raise _Skip("no fit given: the Bayesian sections need a fit")
    from . import _figures as F

    a = ctx.fit.attrs
    worst = _worst(ctx.fit, ctx.post)
    sel = [(v, s) for v, s, _ in worst]
    alpha = 1 - F.RANK_ENVELOPE
    checks, failures = _diag_checks(ctx.fit)
    table = _check_rows(checks, F.rank_tests(ctx.post, sel) if sel else {}, alpha)
    verdict, note = _verdict(failures, table)
    text = (
        f"Sampler {a.get('sampler', '?')} with settings {a.get('sampler_settings', '')}. "
        f"**Verdict: {verdict}.** Each check below states its limit and why the limit is what it is."
    )
    if worst:
        text += "\n\nThe parameters with the highest R-hat are plotted below: " + ", ".join(
            f"`{v}{list(s.values()) if s else ''}` {r:.3f}" for v, s, r in worst
        ) + "."
    rep.section(_TITLES[sid], text, table=table, id=sid, note=note)
    if worst:
        rep.figure(
            "rank_worst",
            F.rank_plot(ctx.post, sel),
            "Rank plots (fractional-rank ECDF minus uniform, one line per chain) of the parameters "
            "with the highest R-hat, with the multi-chain uniformity p-value on each panel: "
            f"p < {alpha:g} marks chains that disagree.",
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


def _compare(ctx: _Context):
    """compare_agents at its own resampling defaults (the CLI's `compare` makes the same call)."""
    if isinstance(ctx.freq, Mapping) and "compare" in ctx.freq:
        return ctx.freq["compare"]
    from .. import freq

    ctx.say("paired tests of every pair")
    return freq.compare_agents(ctx.data, prob=ctx.prob, rng=ctx.rng)


def _bayes_heatmap(ctx: _Context):
    """P(row > column) from the fit, and its heatmap (None, None without an agent variable)."""
    from . import _figures as F

    if ctx.var is None:
        return None, None
    from .. import metrics

    ps = metrics.prob_superiority(ctx.fit, var=ctx.var)
    ps = ps if isinstance(ps, xr.DataArray) else ps.to_dataset()["estimate"]
    m = ps.transpose("agent", "opponent").to_pandas().astype(float)
    m.index = m.index.astype(str)
    m.columns = [str(c) for c in m.columns]
    m = m.where(~np.eye(len(m), dtype=bool))
    fig = F.heatmap(
        m,
        title=f"P(row agent > column agent) by {_label(ctx.var)}",
        xlabel="opponent",
        ylabel="agent",
        cbar_label="posterior probability (0-1)",
    )
    return ps, fig


def _sec_pairwise(ctx: _Context, rep: Report, sid: str) -> None:
    from ._pairs import MATRIX_ABOVE, marks_legend, pair_frame, pair_matrix, settings_text
    from ._pairs import differ_column as _differ

    ps, fig = _bayes_heatmap(ctx)
    text = []
    if ps is not None:
        text.append(
            f"The heatmap: posterior probability that the row agent's `{ctx.var}` exceeds the column agent's."
        )
    table = full = None
    alpha = 1.0 - ctx.prob
    if ctx.want_freq("compare"):
        cmp = _compare(ctx)
        full = pair_frame(cmp, alpha=alpha).rename(
            columns={"lower": f"{ctx.prob:.0%} lower", "upper": f"{ctx.prob:.0%} upper"}
        )
        if ps is not None:
            full["Bayes P(a > b)"] = [
                float(ps.sel(agent=a, opponent=b))
                for a, b in (p.split(" - ", 1) for p in full.index)
            ]
        n_sig = int(full[_differ(full)].sum())
        res = cmp.to_dataset().attrs
        text.append(
            "Every pair on the tasks both ran, the task as the unit: the mean paired difference, "
            f"its {ctx.prob:.0%} paired cluster-bootstrap interval, the {res.get('test', 'permutation')} "
            "p-value and its Holm (family-wise) and Benjamini-Hochberg adjustments over all "
            f"{len(full)} pairs ({settings_text(cmp)}). "
            f"{n_sig} of {len(full)} pairs differ at family-wise level {alpha:g} (Holm)."
        )
        table = full
        if cmp.to_dataset().sizes["agent"] > MATRIX_ABOVE:
            table = pair_matrix(cmp, alpha=alpha)
            text.append(
                "With this many agents the pairs are shown as a matrix: row agent minus column agent, "
                f"agents ordered by their mean difference against all others; {marks_legend(alpha)}. "
                "The full table (every pair's interval and p-values) is below, and in Python it is "
                "`hierbench.freq.compare_agents(data).to_frame()`."
            )
    if ps is None and table is None:
        raise _Skip("needs a fit with an agent-level variable or data for the paired tests")
    rep.section(
        _TITLES[sid],
        "\n\n".join(text),
        table=table,
        id=sid,
        flag=_differ(full) if full is not None and table is full else None,
        more=None if table is full else (f"All {len(full)} pairs", full, _differ(full)),
    )
    if fig is not None:
        rep.figure("prob_superiority", fig, "Pairwise posterior probabilities P(i > j).")


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


_SECTION_FUNCS = {
    "data-summary": _sec_data,
    "convergence": _sec_convergence,
    "abilities": _sec_abilities,
    "pass-k": _sec_passk,
    "ranks": _sec_ranks,
    "pairwise": _sec_pairwise,
    "variance": _sec_variance,
    "ppc": _sec_ppc,
    "side-by-side": _sec_side,
    "checklist": _sec_checklist,
}
