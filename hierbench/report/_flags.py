"""Flags several report sections share: per-agent flags of interval tables (undefined intervals and why, few resampled units or clusters, agents the fit's data separate, a bootstrap's ``ci_flag`` in the log's words with the distribution-free bound that holds), the pass@1 bounds behind them, and the bootstrap-beside-Bayes ``disagree`` column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .._base import cluster_label
from .._base import fit_record
from .._base import flag_advice
from ..freq import FEW_UNITS  # the one count of few resampled units, owned by freq
from ._context import _Context
from ._report import judged


def _tasks_scored(ctx: _Context) -> pd.Series | None:
    """How many tasks hold a scored run of each agent (the tasks its bootstrap mean averages).

    With ``errors='exclude'`` a task whose every run errored counts among the data
    summary's tasks run but not its tasks scored: the means see no score of it. Read
    from the data summary (:meth:`_Context.data_summary`), which the Data summary
    section prints.
    """
    s = ctx.data_summary()
    return None if s is None else s["n_tasks_scored"]


def _defined(wide: pd.DataFrame, method: str, why: pd.Series | None = None) -> tuple[pd.DataFrame, pd.Series]:
    """Interval ends a method could not compute shown as "undefined", with the reason.

    ``why``: per agent, the reason where the data say more than "every resample gives the same
    value" (``_undefined_why``; ``""`` elsewhere).
    """
    lo, hi = wide[f"{method} lower"], wide[f"{method} upper"]
    bad = lo.isna() | hi.isna()
    flags = pd.Series("", index=wide.index, dtype=object)
    flags[bad] = f"{method}: interval undefined (every resample gives the same value)"
    if why is not None:
        why = why.reindex(wide.index).fillna("")
        flags[bad & (why != "")] = f"{method}: interval undefined: " + why[bad & (why != "")]
    wide = wide.astype({f"{method} lower": object, f"{method} upper": object})
    wide.loc[bad, [f"{method} lower", f"{method} upper"]] = "undefined"
    return wide, flags


#: what holds where an agent's tasks all sit in one cluster: the task bootstrap, which needs the log
#: read without its clusters (a report with a clustered fit holds the log to them, so the log alone)
ONE_CLUSTER_REMEDY = (
    "hierbench.freq.bootstrap_ci(data, cluster=None), or a report of the log alone read without --cluster, "
    "gives an interval over its tasks, taking them as independent (too narrow if they are alike)"
)


def _undefined_why(ctx: _Context, boot) -> pd.Series:
    """Why an agent's bootstrap interval is undefined, where its tasks say: all in one cluster, or one task.

    A cluster bootstrap of an agent whose scored tasks all sit in one cluster repeats its mean in every
    resample that draws that cluster, whatever its scores (audit C: o3 at 0.680 on django's 100 tasks
    alone was said to be "an agent at 0, or 1, on every task", and pointed to pass_hat_k, whose interval
    over its one cluster was NaN there). The task bootstrap without the clusters gives an interval over
    its tasks; of one task none can be had. ``""`` for the other agents; empty without data.
    """
    data = ctx.data
    if data is None or "score" not in data or "agent" not in data.dims:
        return pd.Series(dtype=object)
    scored = data["score"].notnull()
    scored = scored.any([d for d in scored.dims if d not in ("agent", "task")]).transpose("agent", "task").values
    attrs = getattr(boot, "attrs", {})
    cc = None
    if attrs.get("resample_unit") == "cluster" and "cluster" in data.coords:
        cc = _quiet_cluster_codes(data)
    column = attrs.get("cluster_column") or cluster_label(data)
    out = []
    for row in scored:
        n, one = int(row.sum()), cc is not None and np.unique(cc[0][row]).size == 1
        if n > 1 and one:
            out.append(f"its {n} tasks all sit in one cluster of `{column}` ({cc[1][cc[0][row][0]]}), so every "
                       f"resample that draws that cluster repeats its mean and none measures its spread: {ONE_CLUSTER_REMEDY}")  # fmt: skip
        elif n == 1:
            out.append("one task scored, so every resample that draws it repeats its mean: no resampling "
                       "interval can be had; give it more tasks")  # fmt: skip
        else:
            out.append("")
    return pd.Series(out, index=[str(a) for a in data["agent"].values], dtype=object)


def _few_units_flag(ctx: _Context, boot, name: str, n_tasks: pd.Series | None, index: pd.Index) -> pd.Series:
    """A bootstrap interval over fewer than :data:`FEW_UNITS` resampled units, flagged per agent.

    A resampling interval of a mean is too narrow for few units (its spread is the plug-in
    ``sqrt((n - 1) / n)`` of the SD and it has no t-like tails): the eight wine bottles, say.
    The units are each agent's tasks; where the bootstrap resampled clusters, every agent
    shares them, and ``few_clusters_note`` says once, under the table, whether they are few.
    """
    out = pd.Series("", index=index, dtype=object)
    if getattr(boot, "attrs", {}).get("resample_unit") == "cluster":
        return out
    if n_tasks is not None:
        units, word = n_tasks.reindex(index), "tasks"
    else:
        return out
    few = units < FEW_UNITS
    out[few] = [f"{name}: over {int(u)} {word}, fewer than {FEW_UNITS}: a resampling interval covers less "
                "than its level there" for u in units[few]]  # fmt: skip
    return out


def few_clusters_note(boot) -> str:
    """One sentence where a cluster bootstrap's clusters are few (its own rule, ``attrs["few_clusters"]``), else ""."""
    attrs = getattr(boot, "attrs", {}) if boot is not None else {}
    if attrs.get("resample_unit") != "cluster" or not attrs.get("few_clusters"):
        return ""
    return (f" The cluster bootstrap resamples {attrs['n_clusters']} clusters worth "
            f"{attrs['n_clusters_effective']:.1f} equal ones by their sizes: so few cover less than the "
            "interval's level (hierbench.freq.success_rate's CR2 t interval holds it better).")  # fmt: skip


def _add_flag(flags: pd.Series, more: pd.Series) -> pd.Series:
    """Each row's flags joined with ``more`` by "; " (empty entries add nothing)."""
    more = more.reindex(flags.index).fillna("")
    return flags.where(more == "", flags.where(flags == "", flags + "; ") + more)


def separated_agents(fit: xr.DataTree | None) -> list[str]:
    """The agents whose abilities the fit's binary data separate (its design's ``separated_agents``).

    An agent that failed (or passed) every run: its posterior is a plateau held by the prior, so
    its Bayes ability, rank and P(a > b) are the prior's, not the data's. Read from the fit's
    structure record, which a saved fit keeps (``hierbench_structure``).
    """
    if fit is None:
        return []
    return [str(a) for a in fit_record(fit, "hierbench_structure").get("design", {}).get("separated_agents") or []]


#: why a separated agent's Bayes numbers are the prior's (the flags' and the captions' words)
_SEPARATED_WHY = (
    "separated by the data (every run failed, or every run succeeded), so {whose} {number} is set by "
    "the prior, not by the data"
)
#: a separated agent's Bayes number, flagged where it is read (in the words of the fit's own note)
SEPARATED_FLAG = "{what}: " + _SEPARATED_WHY.replace("{whose}", "its") + " (the fit's note, under Warnings)"


def separated_flags(ctx: _Context, index: pd.Index, what: str = "Bayes", number: str = "estimate and interval"
                    ) -> pd.Series:  # fmt: skip
    """:data:`SEPARATED_FLAG` on the rows of the agents the fit's data separate ("" elsewhere); notes it once.

    ``index``: agents (or the first level, agent, of a MultiIndex). The fit's own note on them
    goes into the report's warnings (:func:`note_separation`).
    """
    sep = set(separated_agents(ctx.fit))
    if sep:
        note_separation(ctx)
    flag = SEPARATED_FLAG.format(what=what, number=number)
    agents = [str(i[0] if isinstance(i, tuple) else i) for i in index]
    return pd.Series([flag if a in sep else "" for a in agents], index=index, dtype=object)


def note_separation(ctx: _Context) -> None:
    """The fit's note on its separated agents, in the report's warnings (said once: the list is deduplicated)."""
    sep = separated_agents(ctx.fit)
    notes = fit_record(ctx.fit, "hierbench_structure").get("notes", []) if sep else []
    said = [n for n in notes if any(f"agent[{a}]" in n for a in sep)]
    ctx.warnings += [f"the fit's note: {n}" for n in said] or [
        f"the fit's data separate {', '.join(sep)}: their Bayes estimates are set by the prior, not by the data"
    ] * bool(sep)


def data_grades(data: xr.Dataset | None) -> list[str] | None:
    """The names of a graded log's grades (its labels, or the numbers of its scale), None for plain scores."""
    from ..data import grade_names
    from ..data import labels_attr
    from ..data import levels_attr

    levels = levels_attr(data.attrs) if data is not None else None
    return grade_names(levels, labels_attr(data.attrs)) if levels else None


def scored_words(value: float, grades: list[str] | None) -> str:
    """``scored 0``; of a graded log, the grade at that end of the scale: ``graded no (score 0)``."""
    if grades is None or value not in (0.0, 1.0):
        return f"scored {value:g}"
    return f"graded {grades[0] if value == 0.0 else grades[-1]} (score {value:g})"


def graded_flag(flag: str, grades: list[str] | None) -> str:
    """A bootstrap ``ci_flag`` in the log's words: ``every task scored 0`` of a graded log says its grade."""
    head = "every task scored "
    if grades is None or not flag.startswith(head):
        return flag
    try:
        return f"every task {scored_words(float(flag[len(head):]), grades)}"
    except ValueError:
        return flag


def _few_flag(
    table: pd.DataFrame, method: str, index: pd.Index, bounds: pd.Series, binary: bool = True,
    grades: list[str] | None = None,
) -> pd.Series:
    """A bootstrap's ``ci_flag`` (a mean few tasks carry) as a report flag naming what holds instead.

    ``bounds`` (:func:`pass1_bounds`) puts the bound that holds beside the advice, so
    the reader sees a valid interval where the resampling one is undefined, zero-width
    or short (an agent that failed every task among them). ``grades``: a graded log's
    grade names (:func:`data_grades`), to say an agent at an end of the scale in them.
    """
    out = pd.Series("", index=index, dtype=object)
    if "ci_flag" not in table:
        return out
    few = table["ci_flag"].copy()
    few.index = few.index.astype(str)
    few = few.reindex(index).fillna("").astype(str).map(lambda f: graded_flag(f, grades))
    hit = few != ""
    said = bounds.reindex(index).fillna("").astype(str)
    said = said.where(said == "", ": " + said)
    advice = few.map(lambda f: flag_advice(f, binary))  # pass_hat_k refuses partial credit: success_rate
    out[hit] = method + ": " + few[hit] + " (" + advice[hit] + said[hit] + ")"
    return out


def pass1_bounds(data: xr.Dataset | None, prob: float) -> pd.Series:
    """Each agent's :func:`hierbench.freq.success_rate` interval where it is the bound.

    That interval is ``pass_hat_k(data, 1)``'s rule on the per-task mean scores (for 0/1 scores
    the same interval exactly), so partial credit gets the bound too. Text ``"[lo, hi] at 95%
    over n tasks"`` per agent (labels as text; ``"... over n tasks in g clusters"`` where the
    tasks have clusters, over which the bound is taken) where that interval is the
    distribution-free bound (its ``ci_flag`` names a bound: every task scored 0 or 1, every
    task has the same value, or few tasks carry the mean), ``""`` for the other agents; empty
    without data or an ``agent`` dim.
    """
    from .. import freq
    from .._base import cluster_codes

    if data is None or "agent" not in data.dims:
        return pd.Series(dtype=object)
    res = freq.success_rate(data, prob=prob)
    lo, hi = (res.ci.sel(ci_bound=b).to_series() for b in ("lower", "upper"))
    flag, n = res.ci_flag.to_series().astype(str), res.n_tasks.to_series()
    where = [""] * len(n)
    cc = cluster_codes(data)
    if cc is not None and len(cc[1]) < data.sizes["task"]:  # the bound is over the clusters: said
        used = data["score"].notnull().any([d for d in data["score"].dims if d not in ("agent", "task")])
        used = used.transpose("agent", "task").values
        where = [f" in {np.unique(cc[0][u]).size} clusters" for u in used]
    text = pd.Series(
        [f"[{a:.3f}, {b:.3f}] at {prob:.0%} over {int(m)} tasks{w}" for a, b, m, w in zip(lo, hi, n, where, strict=True)],
        index=lo.index.astype(str),
        dtype=object,
    )
    flag.index = text.index
    return text.where(flag.str.contains("bound"), "")


def _bounds(ctx: _Context) -> pd.Series:
    """:func:`pass1_bounds` of the report's data at its level, computed once."""
    if "pass1_bounds" not in ctx.cache:
        ctx.cache["pass1_bounds"] = pass1_bounds(ctx.data, ctx.prob)
    return ctx.cache["pass1_bounds"]


def _disagree(wide: pd.DataFrame, kind: str) -> pd.Series:
    """One method's estimate outside the other's interval, or intervals apart; NA where either interval is not defined."""
    cols = [f"{m} {b}" for m in (f"bootstrap {kind}", "Bayes ETI") for b in ("estimate", "lower", "upper")]
    be, bl, bh, ye, yl, yh = (pd.to_numeric(wide[c], errors="coerce") for c in cols)
    apart = (yl > bh) | (bl > yh) | (ye < bl) | (ye > bh) | (be < yl) | (be > yh)
    return judged(apart, bl.notna() & bh.notna() & yl.notna() & yh.notna())



def _quiet_cluster_codes(data: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """``cluster_codes(data)`` without its warning on tasks without a label: warned where the log was read."""
    import warnings

    from .._base import cluster_codes

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cluster_codes(data)


def source_flagged(data: xr.Dataset) -> dict[str, int]:
    """The agents the log's loader flags (``attrs["flagged_agents"]``, JSON: agent -> flagged runs); {} for none."""
    import json

    flagged = data.attrs.get("flagged_agents")
    said = json.loads(flagged) if isinstance(flagged, str) else dict(flagged or {})
    return {str(a): k for a, k in said.items()}


def annotation_marks(s: pd.DataFrame, data: xr.Dataset) -> list[tuple[str, list[tuple[str, int, int]]]]:
    """Each per-run annotation with the agents it marks on at least half their runs: ``(name, [(agent, k, runs)])``.

    ``s``: the data summary as the Data summary section shows it (``runs``, ``n_<annotation>``), or
    :func:`hierbench.data.summarize`'s as a frame (``n_runs``). Annotations marking no agent so are left out.
    """
    import json

    out = []
    names = data.attrs.get("annotations", "[]")
    col = "runs" if "runs" in s else "n_runs"
    for name in json.loads(names) if isinstance(names, str) else list(names or []):
        if f"n_{name}" not in s or col not in s:
            continue
        n, runs = s[f"n_{name}"].astype(float), s[col].astype(float)
        marks = [(str(a), int(k), int(r)) for a, k, r in zip(s.index, n, runs, strict=True) if r > 0 and k >= r / 2]
        if marks:
            out.append((name, marks))
    return out


def flagged_agents(ctx: _Context) -> dict[str, list[str]]:
    """The agents the data summary flags as suspect, each with why: one set for every section that reads them.

    The log's loader's flag (``attrs["flagged_agents"]``), a per-run annotation on at least half its
    runs (said only where the loader does not flag the agent already), and a person-fit misfit
    (``_Context.person_fit``). Audit A s17: SWE-bench's Claude 3.7 Sonnet, flagged twice in the
    data summary, stood unmarked in the abilities, ranks, pairs and side-by-side tables. {} without data.
    """
    if ctx.data is None or "agent" not in ctx.data.dims:
        return {}
    if "flagged_agents" in ctx.cache:
        return ctx.cache["flagged_agents"]
    out: dict[str, list[str]] = {}
    said = source_flagged(ctx.data)
    for a, k in said.items():
        out.setdefault(a, []).append(f"the data's own source flags its {k} records")
    s = ctx.data_summary()
    for name, marks in annotation_marks(s, ctx.data) if s is not None else []:
        for a, k, r in marks:
            if a not in said:
                out.setdefault(a, []).append(f"the annotation `{name}` marks {k} of its {r} runs")
    pf = ctx.person_fit()
    if pf is not None and bool(pf.flagged.any()):
        who = pf.estimate[pf.estimate.dims[0]].values
        for a in (str(a) for a, f in zip(who, pf.flagged.values, strict=True) if f):
            out.setdefault(a, []).append("its results do not follow the tasks' difficulty (person fit)")
    ctx.cache["flagged_agents"] = out
    return out


#: an agent the data summary flags, marked where its numbers are read
FLAGGED_FLAG = "flagged by the data summary ({why}): read its {number} as suspect"


def data_flags(ctx: _Context, index: pd.Index, number: str = "numbers") -> pd.Series:
    """``FLAGGED_FLAG`` on the rows of the agents ``flagged_agents`` names ("" elsewhere).

    ``index``: agents (or the first level, agent, of a MultiIndex), as ``separated_flags`` takes.
    """
    marked = flagged_agents(ctx)
    agents = [str(i[0] if isinstance(i, tuple) else i) for i in index]
    return pd.Series([FLAGGED_FLAG.format(why="; ".join(marked[a]), number=number) if a in marked else ""
                      for a in agents], index=index, dtype=object)  # fmt: skip


def flagged_pair_flags(ctx: _Context, agents, opponents) -> list[str]:
    """Per pair, which of its agents the data summary flags (``""`` for neither): their difference is suspect too."""
    marked = flagged_agents(ctx)
    return ["; ".join(f"{x}: flagged by the data summary ({'; '.join(marked[x])})" for x in map(str, (a, b))
                      if x in marked) for a, b in zip(agents, opponents, strict=True)]  # fmt: skip


def flagged_caption(ctx: _Context, what: str) -> str:
    """A caption's (or a text's) word on the agents the data summary flags: read their ``what`` as suspect ("" if none)."""
    marked = flagged_agents(ctx)
    if not marked:
        return ""
    who = "; ".join(f"{a} ({'; '.join(w)})" for a, w in marked.items())
    return f" Flagged by the data summary: {who}: read {'its' if len(marked) == 1 else 'their'} {what} as suspect."
