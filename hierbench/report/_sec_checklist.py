"""The reproducibility checklist section: sizes, clustering, every interval's level and kind, paired deltas, the model and sampler, seeds and package versions, read from what the other sections computed."""

from __future__ import annotations

import platform

import pandas as pd
import xarray as xr

from .._base import cluster_label
from .._base import counted
from ._battles import of_battles
from ._context import _TITLES
from ._context import _Context
from ._context import g_interval
from ._report import Report


def _pairs_entry(ctx: _Context) -> str:
    """The checklist's paired-deltas entry: what the pairwise section computed, in its own sentence."""
    if of_battles(ctx):
        return "none: battles carry no per-task scores to pair"
    if (one := ctx.single_agent()) is not None:
        return f"none: one agent ({one}), no pair to compare"
    cmp = ctx.cache.get("compare")
    if cmp is not None:
        from ._pairs import pair_sentence

        return f"yes: {pair_sentence(cmp, 1.0 - ctx.prob)} See the pairwise section."
    if ctx.want_freq("compare"):
        return "not computed: the pairwise section says why"
    return "not computed (no data)"


def _fit_seed(fit: xr.DataTree | None) -> str:
    """The fit's seeds as the checklist states them: the rng it was run with, then the sampler's seed drawn from it."""
    if fit is None or "seed" not in fit.attrs:
        return ""
    if "rng_seed" in fit.attrs:
        return f"; fit rng={fit.attrs['rng_seed']} (sampler seed {fit.attrs['seed']}, drawn from it)"
    return f"; fit sampler seed {fit.attrs['seed']} (drawn from the fit's rng, which was not recorded)"


def _clustering_entry(ctx: _Context) -> str:
    """The checklist's clustering row: the data's clusters, then what each result shown took as its unit.

    Read from the results the sections used (``ctx.cache``: a result given in ``freq`` may have been
    computed without the clusters the log has), never from the data alone (was: "the bootstrap resamples
    whole clusters" beside a given METR bootstrap that resampled tasks).
    """
    if "cluster" in ctx.data.coords:
        n_cl = len(set(map(str, ctx.data["cluster"].values)))
        said = [f"tasks in {n_cl} clusters (`{cluster_label(ctx.data)}`)"]
    else:
        said = ["no cluster labels"]
    if (boot := ctx.cache.get("bootstrap")) is not None:
        a = getattr(boot, "attrs", {})
        said.append(f"the bootstrap resamples whole clusters ({a.get('n_clusters', '?')} of `{a.get('cluster_column')}`)"
                    if a.get("resample_unit") == "cluster" else "the bootstrap resamples tasks one by one")  # fmt: skip
    if (cmp := ctx.cache.get("compare")) is not None:
        a = cmp.to_dataset().attrs
        said.append(f"the paired tests take clusters as their unit ({a.get('n_units_total', '?')} of "
                    f"`{a.get('cluster_column') or a.get('cluster_coord') or 'cluster'}`)" if a.get("unit") == "clusters"
                    else f"the paired tests take tasks as their unit ({a.get('n_units_total', '?')} tasks)")  # fmt: skip
    if ctx.cache.get("passk_interval") and "cluster" in ctx.data.coords:
        said.append("pass^k's unbiased intervals (computed here from the data) take the clusters as their unit")
    return "; ".join(said)


def _seed_entry(ctx: _Context) -> str:
    """The checklist's seed row: the report's rng for what it computed, and each result given in ``freq`` apart.

    A result given in ``freq`` was drawn with its own call's seed, which the report knows only where the
    result records it (``attrs``: ``rng_seed``, ``seed`` or ``rng``); else it says "seed not recorded"
    (was: "rng=0" over a bootstrap given with rng=5, which rng=0 does not reproduce).
    """
    seed = "rng=None (fresh entropy: not reproducible)" if ctx.rng is None else f"rng={ctx.rng!r}"
    given = [k for k, how in ctx.cache.get("freq_source", {}).items() if how == "given"]
    text = f"report's random parts (resamples, Monte Carlo p-values) {seed}"
    if not given:
        return text
    return (text + " for the results it computed; not for those given in `freq`: "
            + ", ".join(f"{k} ({_recorded_seed(ctx.cache[k])})" for k in given))  # fmt: skip


def _recorded_seed(res) -> str:
    """The seed a given result records (its attrs, its estimate's or its dataset's), in words; "given: seed not recorded" if none."""
    attrs = dict(getattr(res, "attrs", None) or {})
    est = getattr(res, "estimate", None)
    attrs |= {k: v for k, v in getattr(est, "attrs", {}).items() if k not in attrs}
    if not attrs and hasattr(res, "to_dataset"):
        attrs = dict(res.to_dataset().attrs)
    for key in ("rng_seed", "seed", "rng"):
        if key in attrs:
            return f"given: {key}={attrs[key]!r}"
    return "given: seed not recorded"


def interval_kinds(ctx: _Context) -> list[str]:
    """Every kind of interval the report shows, each with its level and kind, read from the results it used.

    Person fit's slope (where the Data summary flags an agent), the agent bootstrap, the pairwise
    intervals and their simultaneous max-T ones (where computed), pass^k's, the time horizons'
    (METR's method), the variance components', the battles' ML abilities' and the fit's: what the sections computed
    (``ctx.cache``), never recomputed here, so a section not shown adds nothing.
    """
    from .._base import interval_label

    def said(what: str, ci, more: str = "") -> str:
        detail = str(ci.attrs.get("ci_detail", "")).split(";")[0]
        return f"{what}: {interval_label(ci)}" + (f" ({detail})" if detail else "") + more

    out = []
    if (pf := ctx.cache.get("person_fit")) is not None and bool(pf.flagged.any()):  # the Data summary's flag shows it
        detail = str(pf.ci.attrs.get("ci_detail", "")).split(";")[0]  # in the flag's own words ("95% Wald")
        out.append(f"person fit slope (Data summary flag): {pf._ci_words()}" + (f" ({detail})" if detail else ""))
    if (boot := ctx.cache.get("bootstrap")) is not None:
        n = getattr(boot, "distribution", None)
        more = f", {n.sizes['resample']} resamples" if n is not None and "resample" in n.sizes else ""
        out.append(said("agent means", boot.ci, "" if "resamples" in boot.ci.attrs.get("ci_detail", "") else more))
    if (cmp := ctx.cache.get("compare")) is not None:
        ds = cmp.to_dataset()
        out += [said("pairwise differences", ds["ci"])] if "ci" in ds else []
        # only where computed: under Holm or BH it is all NaN, "not computed" (the pair table has no such columns)
        if "ci_simultaneous" in ds and bool(ds["ci_simultaneous"].notnull().any()):
            out.append(f"pairwise, simultaneous over the family: {interval_label(ds['ci_simultaneous'])}")
    if words := ctx.cache.get("passk_interval"):
        out.append(f"pass^k (unbiased): {words}")
    if (h := ctx.cache.get("horizon")) is not None:  # METR's method in the Time horizons section
        out.append(said("time horizons", h.ci))
    if (g := ctx.cache.get("variance")) is not None and not isinstance(g, Exception):
        # ``g.ci``'s level, kind and detail from an interval of no component: ``g.ci`` (and the ``hasattr(g, "ci")``
        # that stood here, which evaluates it) profiled every component for those attrs (METR's six: 0.35 s)
        out.append(said("variance components", g_interval(g, float(g.prob), [])))
    if (bt := ctx.cache.get("battle_ml")) is not None and not isinstance(bt[0], Exception):  # battles' ML section
        out.append(said("Bradley-Terry abilities by ML", bt[0].ci))
    if ctx.fit is not None:
        out.append(f"Bayes: {ctx.prob:.0%} equal-tailed posterior interval (eti)")
    return out


def _sec_checklist(ctx: _Context, rep: Report, sid: str) -> None:
    rows = []
    d = None
    if ctx.data is not None:
        d = ctx.data_report()
        rows += [
            ("n (agents x tasks)", f"{counted(d['n_agents'], 'agent')} x {counted(d['n_tasks'], 'task')}"),
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
        rows.append(("clustering", _clustering_entry(ctx)))
    if "battles" in ctx.cache:
        b = ctx.cache["battles"]
        apart = f" in {b['groups']} groups that never meet" if b["groups"] > 1 else ""
        apart = (f" ({b['unplayed']} in no battle" + (f", the others{apart})" if apart else ")")
                 if b["unplayed"] else apart)  # fmt: skip
        rows.append(("n (agents, battles)", f"{counted(b['agents'], 'agent')}{apart}, {b['battles']:,} battles, "
                     f"{b['ties']:,} ties ({b['ties'] / max(b['battles'], 1):.1%})"))  # fmt: skip
    kinds = interval_kinds(ctx)
    rows.append(("interval level and kind", "; ".join(kinds) if kinds else f"{ctx.prob:.0%}"))
    rows.append(("paired deltas", _pairs_entry(ctx)))
    if sources := ctx.freq_sources():  # build(freq={...}): which results were given, which computed here
        rows.append(("frequentist results", sources))
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
    rows.append(("seed", _seed_entry(ctx) + _fit_seed(ctx.fit)))
    rows.append(("versions", ", ".join(f"{k} {v}" for k, v in _versions(ctx.fit).items())))
    table = pd.DataFrame(rows, columns=["item", "value"]).set_index("item")
    rep.section(
        _TITLES[sid],
        "What a reader needs to judge and reproduce these numbers.",
        table=table,
        id=sid,
    )


def _versions(fit: xr.DataTree | None) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version

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
