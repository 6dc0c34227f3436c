"""``build``: the whole report of an evaluation in one call (HTML or Markdown).

Each section is computed from the fit and/or the data it needs. A section
that cannot be computed (no fit, a model without that quantity, a group left
out of a compact saved fit) is still written, with a note saying why, and a
:class:`ReportSectionWarning` is raised: nothing is left out silently.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from .._base import DEFAULT_PROB
from .._base import OUTSIDE_PACKAGE
from .._base import Progress
from .._base import check_choice
from .._base import check_int
from .._base import check_prob
from .._base import fit_record
from ._battle_freq import SECTION_ID as BATTLE_FREQ
from ._battle_freq import _sec_battle_freq
from ._battle_freq import with_battle_freq
from ._battles import of_battles
from ._context import _TITLES
from ._context import BOOTSTRAP_METHOD
from ._context import SECTIONS
from ._context import ReportSectionWarning
from ._context import _Context
from ._context import _Skip
from ._convergence import _diagnosed
from ._convergence import _sec_convergence
from ._effects import _sec_effects
from ._effects import with_effects
from ._horizons import _sec_horizons
from ._horizons import with_horizons
from ._match import check_fit_data
from ._match import check_freq
from ._match import check_result_data
from ._match import cluster_note
from ._match import is_battles
from ._passk import _sec_passk
from ._report import Report
from ._report import refuse_targets
from ._sec_abilities import _sec_abilities
from ._sec_checklist import _sec_checklist
from ._sec_data import _sec_data
from ._sec_pairs import _sec_pairwise
from ._sec_pairs import pairs_title
from ._sec_ppc import _sec_ppc
from ._sec_ranks import _sec_ranks
from ._sec_side import _sec_side
from ._subset import _sec_subset
from ._subset import check_subset
from ._variance import _sec_variance

__all__ = ["SECTIONS", "ReportSectionWarning", "build"]

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
    bootstrap_method: str = BOOTSTRAP_METHOD,
    rng: None | int = 0,
    overwrite: bool = False,
    progress: bool | None = None,
    appendix: Sequence[tuple[str, str]] = (),
    subset: object | Sequence[object] | None = None,
    sections: Sequence[str] | None = None,
) -> Path:
    """Write the full report of an evaluation: data, convergence, abilities, pass^k, ranks, pairs, checks.

    Parameters
    ----------
    fit : xarray.DataTree or path, optional
        A fit from :func:`hierbench.bayes.fit` (or the path of one saved with
        :func:`hierbench.io.save_fit`). A horizon fit or a log with a ``human_minutes`` task
        coord adds "Time horizons": :func:`hierbench.metrics.time_horizon` (horizon fits) beside
        :func:`hierbench.freq.time_horizon`, at 50% and 80% success.
    data : xarray.Dataset or path, optional
        The eval dataset (or the path of a log or a saved ``.nc`` dataset); needed for the data
        summary and the frequentist half.
    path : path
        ``*.html`` (one self-contained file, figures embedded) or ``*.md``
        (Markdown and a ``<stem>_figures/`` folder beside it).
    freq : "auto", mapping or None
        ``"auto"`` computes the frequentist counterparts from ``data`` (cluster bootstrap, paired
        tests with max-T simultaneous intervals, unbiased pass^k, G-theory variance components,
        person fit, METR's time horizons where the log has human minutes); ``None`` leaves the
        frequentist half out. A mapping gives some of them already computed, and the rest are
        computed as under ``"auto"`` (a key given as None leaves that one out). Its keys:
        ``"bootstrap"`` (:func:`hierbench.freq.bootstrap_ci`), ``"compare"``
        (:func:`hierbench.freq.compare_agents`), ``"variance"``
        (:func:`hierbench.freq.variance_components`; the section names its design), ``"horizon"``
        (:func:`hierbench.freq.time_horizon`) and ``"person_fit"`` (:func:`hierbench.freq.person_fit`).
        Refused: another key, a value that is not what its function returns, a result of another
        log or of part of it (its ``hierbench_counts_hash``), one whose intervals are not at
        ``prob``. The checklist says which results were given.
    truth : DataArray, Series or dict, optional
        Known value of each agent's expected score on a new task (a simulation's truth): drawn
        as crosses and compared in the tables.
    format : {"html", "md"}, optional
        Default from the suffix of ``path``.
    title : str, optional
    prob : float
        Level of every interval in the report.
    n_resamples : int
        Bootstrap resamples and permutations of the frequentist half (at least 1).
    bootstrap_method : {"bca", "percentile"}
        The agents' bootstrap interval (:func:`hierbench.freq.bootstrap_ci`'s ``method``): BCa, or the
        percentile one, defined where BCa is not (e.g. an agent that solved no task).
    rng : int or None
        Seed of every random part (stated in the checklist): bootstrap resamples, Monte Carlo
        sign-flip and max-T p-values, person-fit null, time-horizon bootstrap, realised pass^k
        draws. ``None``: fresh entropy. A Generator is refused: the checklist could not state it.
    overwrite : bool
        Replace an existing report (default: refuse, before any section is computed).
    progress : bool, optional
        Print each stage to stderr; default only on a terminal.
    appendix : sequence of (heading, text)
        Extra sections of preformatted text after the checklist (the demo's walk-through).
    subset : AssistedResult or sequence of them, optional
        From :func:`hierbench.design.assisted_mean` or ``assisted_adaptive`` on ``data``: "Subset
        estimates" (design-based estimate and interval, model-based score, misfit test and flag per
        agent). Refused when its agents, drawn tasks or outcomes are not ``data``'s.
    sections : sequence of str, optional
        Only these sections, in the report's order (ids: ``SECTIONS``, and ``"horizons"``,
        ``"effects"``, ``"battle-freq"``, ``"subset-estimates"`` where the report has them); the
        report says under its title which it left out. Refused: an id it does not have.

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
    paths, _ = build_all(fit, data, paths=[path], format=format, overwrite=overwrite, progress=progress,
                          title=title, appendix=appendix, subset=subset, prob=prob, bootstrap_method=bootstrap_method,
                          sections=sections, rng=rng, n_resamples=n_resamples, truth=truth, freq=freq)  # fmt: skip
    return paths[0]


def build_all(fit, data, *, paths: Sequence, format=None, overwrite=False, progress=None, title=None,
               appendix=(), subset=None, prob=DEFAULT_PROB, bootstrap_method=BOOTSTRAP_METHOD, truth=None,
               sections=None, **kw) -> tuple[list[Path], Report]:  # fmt: skip
    """:func:`build` computed once and written to each of ``paths`` (the demo's HTML and Markdown twin).

    ``kw``: the rest of :func:`build`'s keywords (``freq``, ``rng``, ``n_resamples``). Returns the
    paths written and the report (its ``files``: what was attached beside it).
    """
    refuse_targets(paths, format, overwrite=overwrite)  # now, not after minutes of sections
    prob, fit, data, subset = _inputs(fit, data, subset, prob, bootstrap_method)
    _check_seeding(kw)
    kw["freq"] = check_freq(kw.get("freq", "auto"), data, prob)  # given results: this log's, at this level
    battles, data = (data, None) if is_battles(data) else (None, data)  # the run-log sections see no data
    order = with_horizons(SECTIONS if not subset else _with_subset(), fit, data)
    order = with_battle_freq(order, battles, kw["freq"])  # the battles' ML fit beside the Bayesian abilities
    order = with_effects(order, fit)  # a formula fit's effects, both halves
    order, left = chosen(order, sections)  # before any section is computed
    out = []
    with Progress(len(order) + len(paths), "report", enabled=progress, unit="section") as bar:
        ctx = _Context(fit=fit, data=data, battles=battles, prob=prob, bootstrap_method=bootstrap_method,
                       truth=_as_series(truth), subset=subset, say=bar.stage, **kw)  # fmt: skip
        rep = _assemble(ctx, bar, title, appendix, order)
        if left:
            rep.lead = " ".join(filter(None, [rep.lead, _partial_note(sections, left)]))
        for p in paths:
            bar.stage("writing")
            out.append(rep.write(p, format=format, overwrite=overwrite))
            bar.update(1)
    return out, rep


def _check_seeding(kw: dict) -> None:
    """Refuse, before anything is computed, an ``rng`` the checklist cannot state and ``n_resamples`` < 1.

    A bad seed used to reach each section, which then said "not computed", and a report was written.
    """
    rng = kw.get("rng", 0)
    if isinstance(rng, np.random.Generator):
        raise TypeError("`rng` must be an int seed or None: the report states its seed in the checklist so that it "
                        "can be made again, and a Generator's state cannot be stated; pass e.g. rng=0")
    if rng is not None:
        kw["rng"] = check_int(rng, "rng", min=0)
    if "n_resamples" in kw:
        kw["n_resamples"] = check_int(kw["n_resamples"], "n_resamples", min=1)


def _inputs(fit, data, subset, prob: float, bootstrap_method: str) -> tuple:
    """``(prob, fit, data, subset)`` checked: the options, paths loaded, the fit matched to the data.

    Refused: nothing to report (neither ``fit`` nor ``data``), a fit of other data, subset
    results that are not ``data``'s.
    """
    prob = check_prob(prob)
    check_choice(bootstrap_method, "bootstrap_method", ["bca", "percentile"])
    if fit is None and data is None:
        raise ValueError("give `fit`, `data` or both: there is nothing to report")
    fit, data = _load(fit, data)
    if fit is not None and data is not None:
        check_fit_data(fit, data)
    if fit is not None and "diag_checks" in fit.attrs:  # checks of draws cut after fitting: recomputed, once
        fit, _ = _diagnosed(fit)
    return prob, fit, data, _subset_results(subset, data)


def _subset_results(subset, data: xr.Dataset | None) -> list:
    """The subset results, each checked against the report's data (none: an empty list)."""
    if subset is None:
        return []
    items = check_subset(subset)
    if data is None or is_battles(data):
        raise ValueError("`subset` needs `data`, a run log: the report checks the subset results against the log "
                         "they came from")
    for i, r in enumerate(items):
        check_result_data(r, data, name="`subset`" if len(items) == 1 else f"`subset[{i}]`")
    return items


#: the sections a report has only for some inputs, and which
_ONLY_FOR = {"horizons": "a horizon fit or a log with a human_minutes task coord",
             "effects": "a formula fit (hierbench.bayes.build_mixed)",
             BATTLE_FREQ: "a battle log with freq not None",
             "subset-estimates": "subset= results"}  # fmt: skip


def chosen(order: tuple[str, ...], sections: Sequence[str] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``order`` cut to ``sections`` (None: all of it) and the ids left out.

    Refused: a string (not a sequence of ids), an empty or repeated list, an unknown id, and an id
    this report does not have (said with the inputs it needs).
    """
    if sections is None:
        return order, ()
    if isinstance(sections, str) or not isinstance(sections, Sequence):
        raise TypeError(f"`sections` must be a list of section ids, e.g. ['pairwise']; got {sections!r}")
    asked = [str(s) for s in sections]
    if not asked or len(set(asked)) < len(asked):
        raise ValueError(f"`sections` must name each section once, at least one (None: every section); got {asked}")
    if unknown := [s for s in asked if s not in _TITLES]:
        raise ValueError(f"`sections`: no section {unknown}; the ids are {list(_TITLES)}")
    if absent := [s for s in asked if s not in order]:
        why = "; ".join(f"{s!r} needs {_ONLY_FOR[s]}" for s in absent if s in _ONLY_FOR)
        raise ValueError(f"`sections`: this report has no {absent}" + (f" ({why})" if why else "")
                         + f"; its sections: {list(order)}")  # fmt: skip
    return tuple(s for s in order if s in asked), tuple(s for s in order if s not in asked)


def _partial_note(sections: Sequence[str], left: tuple[str, ...]) -> str:
    """The sentence under the title of a report cut to some of its sections."""
    return (f"A partial report: only the sections asked for (sections={list(sections)}); left out: "
            + ", ".join(_TITLES[s] for s in left) + ".")


def _with_subset() -> tuple[str, ...]:
    """The report's sections with the subset estimates just before the checklist."""
    at = SECTIONS.index("checklist")
    return (*SECTIONS[:at], "subset-estimates", *SECTIONS[at:])


def _assemble(ctx: _Context, bar: Progress, title: str | None, appendix, order=SECTIONS) -> Report:
    """Every section in order, then the warnings met and the appendix."""
    model = ctx.fit.attrs.get("hierbench_model", "custom") if ctx.fit is not None else None
    rep = Report(title or ("hierbench report" + (f": {model} model{_formula(ctx.fit)}" if model else "")))
    if ctx.fit is not None and ctx.data is not None and ctx.freq is not None:
        if note := cluster_note(ctx.fit, ctx.data):  # a legitimate pair, said: which half uses the clusters
            ctx.warnings.append(note)
    for sid in order:
        bar.stage(_TITLES[sid])
        _run_section(ctx, rep, sid)
        bar.update(1)
    if note := _glyphs_note(ctx):
        ctx.warnings.append(note)
    if ctx.warnings:
        rep.section(
            "Warnings raised while computing the report",
            "\n".join(f"- {w}" for w in dict.fromkeys(ctx.warnings)),
            id="warnings",
        )
    for i, (heading, text) in enumerate(appendix, start=1):
        rep.section(str(heading), "```text\n" + str(text) + "\n```", id=f"appendix-{i}", appendix=True)
    return rep


def _formula(fit: xr.DataTree) -> str:
    """A formula fit's formula and family, as the title states them (empty for other models)."""
    opts = fit_record(fit, "hierbench_spec").get("options", {})
    return f" ({opts['formula']}, {opts.get('family', '?')})" if "formula" in opts else ""


#: matplotlib's warning for a character its font lacks (drawn as a box): "Glyph 36890 (\N{...}) missing
#: from font(s) DejaVu Sans."
_GLYPH = re.compile(r"^Glyph (\d+) \(.*\) missing from font\(s\) (.+?)\.?$")


def _missing_glyph(ctx: _Context, message: str) -> bool:
    """Keep a missing-glyph warning's character and font for one note; whether it was one."""
    m = _GLYPH.match(message)
    if m is None:
        return False
    ctx.cache.setdefault("glyphs", {}).setdefault(m.group(2), set()).add(chr(int(m.group(1))))
    return True


def _glyphs_note(ctx: _Context) -> str:
    """One line for every character the figures could not draw (Chinese model names: 16 lines before)."""
    fonts = ctx.cache.get("glyphs")
    if not fonts:
        return ""
    chars = sorted(set().union(*fonts.values()))
    shown = ", ".join(chars[:12]) + (f" and {len(chars) - 12} more" if len(chars) > 12 else "")
    return (
        f"Figures: {len(chars)} characters of the labels are not in the plotting font ({', '.join(sorted(fonts))}) "
        f"and are drawn as boxes: {shown}. The tables show them. To draw them, put a font that has them "
        "first in matplotlib's rcParams['font.sans-serif'] (e.g. Noto Sans CJK, Debian's fonts-noto-cjk) "
        "before building the report."
    )


#: the abilities, ranks and pairs of a battle log given without a fit ({unit}: what the ML bootstrap resamples)
BATTLES_NO_FIT = (
    "A battle log alone: the Bayesian abilities, ranks and pairwise probabilities need a Bradley-Terry fit "
    "of it: from the command line `hierbench fit LOG --battles -o FIT`, then `hierbench report FIT --data LOG "
    "--battles` (with the same battle flags); in Python hierbench.bayes.build_bradley_terry, then "
    "hierbench.bayes.fit. hierbench.freq.fit_bradley_terry_ml gives the abilities and rank intervals under "
    "resampling of the {unit}, with its defaults (Davidson ties, no first-position advantage); beside a fit it "
    "fits the fit's model, so from the command line `hierbench fit` with --ties none (battles that cannot end "
    "in a tie) or --home (an advantage of the first-shown agent) sets the model of both halves."
)


def battles_no_fit(battles: xr.Dataset) -> str:
    """``BATTLES_NO_FIT`` for these battles: the ML bootstrap resamples prompts where they carry them, else battles.

    ``fit_bradley_terry_ml``'s ``resample="auto"``: tasks (prompts) when the battles carry a
    ``task`` variable (``read_battles(task=...)``, the command line's ``--prompt``).
    """
    return BATTLES_NO_FIT.format(unit="prompts" if "task" in battles.variables else "battles")
#: the sections that read a run log's scores (agent x task x run): a report of battles says so in each
RUN_LOG_ONLY = {
    "pass-k": "pass^k applies to run logs (a 0/1 score per agent, task and run), not to battles.",
    "variance": "Variance components apply to run logs (scores per agent, task and run), not to battles.",
    "side-by-side": "This section applies to run logs, not to battles: it puts the task bootstrap of each agent's "
    "mean score beside the fit (for battles, hierbench.freq.fit_bradley_terry_ml is the Bradley-Terry fit's "
    f"frequentist counterpart: the section \"{_TITLES[BATTLE_FREQ]}\" shows it, given the battle log and freq not None).",
}


def _run_section(ctx: _Context, rep: Report, sid: str) -> None:
    """One section: its warnings collected, a section that cannot be computed says why."""
    if sid in RUN_LOG_ONLY and of_battles(ctx):
        rep.section(_TITLES[sid], id=sid, note=RUN_LOG_ONLY[sid])
        return
    if sid in ("abilities", "ranks", "pairwise") and ctx.battles is not None and ctx.fit is None:
        # battles hold no paired tests: the heading names what a fit would give (was: "...and paired tests")
        title = pairs_title(True, False) if sid == "pairwise" else _TITLES[sid]
        rep.section(title, id=sid, note=battles_no_fit(ctx.battles))
        return
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            _SECTION_FUNCS[sid](ctx, rep, sid)
        for w in caught:
            if _missing_glyph(ctx, str(w.message)):
                continue  # said once for the whole report (_glyphs_note)
            if not issubclass(
                w.category, (DeprecationWarning, PendingDeprecationWarning, FutureWarning)
            ):
                ctx.warnings.append(f"{_TITLES[sid]}: {w.category.__name__}: {w.message}")
    except _Skip as why:
        rep.section(_TITLES[sid], id=sid, note=str(why))
    except Exception as exc:  # a section that fails is reported, never dropped silently
        msg = f"not computed: {type(exc).__name__}: {exc}"
        warnings.warn(f"report section {sid!r} {msg}", ReportSectionWarning, stacklevel=2, skip_file_prefixes=OUTSIDE_PACKAGE)
        rep.section(_TITLES[sid], id=sid, note=msg)


_SECTION_FUNCS = {
    "data-summary": _sec_data,
    "convergence": _sec_convergence,
    "abilities": _sec_abilities,
    "horizons": _sec_horizons,
    "effects": _sec_effects,
    "pass-k": _sec_passk,
    "ranks": _sec_ranks,
    "pairwise": _sec_pairwise,
    "variance": _sec_variance,
    "ppc": _sec_ppc,
    "side-by-side": _sec_side,
    "checklist": _sec_checklist,
    "subset-estimates": _sec_subset,
    BATTLE_FREQ: _sec_battle_freq,
}

