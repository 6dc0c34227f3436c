"""Is this log the one the fit was made from? Refuse a mismatched pair, naming what differs.

A fit stores a fingerprint of the counts it saw (root attr
``hierbench_data_hash``, :func:`hierbench.bayes.data_hash`) and its
``constant_data`` holds those counts per (agent, task). When the fingerprint
of the log differs, the agents, the tasks and the per-cell counts are
compared, and the error lists every kind of difference found (with a few
examples of each). The same labels in another order are the same data.

Task clusters are part of the evaluation a model was fitted to: a fit whose
model has a cluster effect records each task's cluster (``constant_data``
``task_cluster_idx`` over ``task`` with the ``cluster`` coord's labels, and
the structure's ``clusters`` decision), so a log read without the cluster
column, or with other labels for a task, is refused too. The other way round
(the log has clusters, the fit's model has none) is a legitimate pair: the
frequentist half uses the clusters and the Bayesian half does not, and
:func:`cluster_note` is the sentence the report says so in.

This belongs below ``report`` (in ``data`` or ``bayes``) so that metrics and
comparisons can apply it too; it lives here until it moves.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pandas as pd
import xarray as xr

from .._base import HierbenchError
from .._base import cluster_codes
from .._base import cluster_label
from .._base import counted
from .._base import fit_record

__all__ = ["FitDataMismatchError", "check_fit_data", "check_result_data"]

#: the columns of a table of battles per ordered pair (wins of agent_a, ties, wins of agent_b)
PAIR_COLUMNS = ["agent_a", "agent_b", "n_win_a", "n_tie", "n_win_b"]


class FitDataMismatchError(HierbenchError):
    """A fit and a log that are not the same evaluation (agents, tasks or counts differ)."""


def battles_fit(fit: xr.DataTree | None) -> bool:
    """Whether the fit is of pairwise battles (Bradley-Terry): no tasks to pair on, no run log behind it."""
    return fit is not None and fit_record(fit, "hierbench_spec").get("model") == "bradley_terry"


def _labels(values) -> list[str]:
    return [str(v) for v in np.asarray(values).ravel()]


def _fit_counts(fit: xr.DataTree) -> xr.Dataset | None:
    if "constant_data" not in fit.children:
        return None
    cd = fit["constant_data"].to_dataset()
    if {"n_runs", "n_success"} <= set(cd.data_vars) and {"agent", "task"} <= set(cd.dims):
        return cd[["n_runs", "n_success"]]
    return None


def _set_diff(
    what: str, in_fit: list[str], in_data: list[str], *, names=("the fit", "the data"), one_sided=False
) -> list[str]:
    """Labels only one side has (``one_sided``: only those the first side has and the data lacks)."""
    only_fit = [x for x in in_fit if x not in set(in_data)]
    only_data = [] if one_sided else [x for x in in_data if x not in set(in_fit)]
    out = []
    for side, xs in zip(names, (only_fit, only_data), strict=True):
        if xs:
            more = f" and {len(xs) - 5} more" if len(xs) > 5 else ""
            out.append(f"{counted(len(xs), what)} only in {side} ({xs[:5]}{more})")
    return out


def _cell_diff(fc: xr.Dataset, dc: xr.Dataset, *, name: str = "fit", observed_only: bool = False) -> list[str]:
    """Cells whose counts differ (``observed_only``: only the cells ``fc`` ran)."""
    agents = [a for a in _labels(fc["agent"].values) if a in set(_labels(dc["agent"].values))]
    tasks = [t for t in _labels(fc["task"].values) if t in set(_labels(dc["task"].values))]
    if not agents or not tasks:
        return []

    def grid(ds, name):
        da = ds[name].assign_coords(agent=_labels(ds["agent"].values), task=_labels(ds["task"].values))
        return da.sel(agent=agents, task=tasks).fillna(0).transpose("agent", "task").values

    fn, fy = grid(fc, "n_runs"), grid(fc, "n_success")
    dn, dy = grid(dc, "n_runs"), grid(dc, "n_success")
    bad = np.argwhere(((fn != dn) | (fy != dy)) & ((fn > 0) | (not observed_only)))
    if not len(bad):
        return []
    ex = ", ".join(  # :g, not int(): a sum of fractional scores (0.0004) must not read as the fit's 0
        f"({agents[i]}, {tasks[j]}): {name} {fy[i, j]:g}/{fn[i, j]:g}, "
        f"data {dy[i, j]:g}/{dn[i, j]:g}"
        for i, j in bad[:3]
    )
    return [f"{len(bad)} agent x task cells with other success / run counts (e.g. {ex})"]


def _fit_decision(fit: xr.DataTree, name: str) -> dict:
    """One of the fit's recorded structure decisions (empty when the fit records none)."""
    d = fit_record(fit, "hierbench_structure").get("decisions", {}).get(name, {})
    return d if isinstance(d, dict) else {}


def _fit_clusters(fit: xr.DataTree) -> tuple[bool, dict[str, str] | None]:
    """Whether the fit's model has task clusters, and each task's cluster where the fit records it."""
    cd = fit["constant_data"].to_dataset() if "constant_data" in fit.children else xr.Dataset()
    if "task_cluster_idx" in cd and "cluster" in cd.coords and "task" in cd.coords:
        labels = np.asarray(_labels(cd["cluster"].values), dtype=object)
        idx = np.asarray(cd["task_cluster_idx"].values, dtype=int)
        return True, dict(zip(_labels(cd["task"].values), labels[idx], strict=True))
    return _fit_decision(fit, "clusters").get("choice") is True, None


def _data_clusters(counts: xr.Dataset) -> dict[str, str] | None:
    """Each task's cluster by the fit's rule (a task without a label is its own); None without clusters."""
    if "cluster" not in counts.coords:
        return None
    with warnings.catch_warnings():  # tasks without a label: warned where the log is read and fitted
        warnings.simplefilter("ignore")
        codes, labels = cluster_codes(counts, "cluster", dim="task")
    return dict(zip(_labels(counts["task"].values), np.asarray(labels, dtype=object)[codes], strict=True))


def _cluster_diff(fit: xr.DataTree, counts: xr.Dataset) -> list[str]:
    """The fit's model has task clusters the log does not have (none, or other labels for a task)."""
    uses, in_fit = _fit_clusters(fit)
    if not uses:
        return []
    in_data = _data_clusters(counts)
    if in_data is None:
        n = f"{len(set(in_fit.values()))} clusters, e.g. " if in_fit else ""
        ex = ", ".join(f"{t!r} in {c!r}" for t, c in list(in_fit.items())[:2]) if in_fit else "its `clusters` decision"
        return [f"the fit's model has task clusters ({n}{ex}) and the data has no cluster labels"]
    if in_fit is None:
        return []  # the fit does not record which task sits where: nothing to compare
    other = [t for t in in_fit if t in in_data and in_fit[t] != in_data[t]]
    if not other:
        return []
    ex = ", ".join(f"{t!r}: fit {in_fit[t]!r}, data {in_data[t]!r}" for t in other[:3])
    return [f"{len(other)} tasks in another cluster (`{cluster_label(counts)}`) than in the fit (e.g. {ex})"]


def _binary_fit(fit: xr.DataTree) -> bool:
    """Whether the fit's model reads 0/1 scores only: a count model's, or a formula model's binomial family."""
    opts = fit_record(fit, "hierbench_spec").get("options", {})
    return opts.get("family") == "binomial" if "formula" in opts else _fit_counts(fit) is not None


def _score_kind_diff(fit: xr.DataTree, data: xr.Dataset) -> list[str]:
    """A binomial fit beside a log of partial credit: the sums per cell can agree, the evaluations do not."""
    from .._base import is_binary
    from .._base import partial_credit

    if "score" not in data or not _binary_fit(fit) or is_binary(data["score"].values):
        return []
    n, first = partial_credit(data["score"].transpose("agent", "task", "run"), first=2)
    return [f"the fit's model is binomial (every score 0 or 1) and {n:,} of the data's scores are partial "
            f"credit (e.g. (agent, task, run, score) {first})"]  # fmt: skip


def rebuilt_design(fit: xr.DataTree, data: xr.Dataset):
    """A formula fit's design, rebuilt from ``data`` with its recorded formula, family and levels.

    A horizon fit's formula reads ``log2_minutes``, which its builder makes from the data's
    minutes (``with_log2_minutes``): made here the same way. Raises what ``model_design`` raises
    (a ``KeyError`` where the fit records no formula).
    """
    from ..data import model_design

    opts = fit_record(fit, "hierbench_spec").get("options", {})
    if opts.get("minutes"):
        from ..bayes import with_log2_minutes

        data = with_log2_minutes(data, opts["minutes"])
    return model_design(opts["formula"], data, family=opts["family"], levels=opts.get("levels"))


def _fit_cells(fit: xr.DataTree) -> xr.Dataset | None:
    """A binomial formula fit's cells as (agent, task) counts, from ``constant_data``; None without them.

    ``hierbench.bayes.fit`` keeps ``cell_n_runs`` / ``cell_n_success`` over ``cell`` with the
    ``cell_agent`` / ``cell_task`` coords: the cells the model saw, so a cell the log never ran is
    not among them (0 runs on both sides, as ``_cell_diff`` reads it).
    """
    if "constant_data" not in fit.children:
        return None
    cd = fit["constant_data"].to_dataset()
    if not ({"cell_n_runs", "cell_n_success"} <= set(cd.data_vars) and {"cell_agent", "cell_task"} <= set(cd.coords)):
        return None
    frame = pd.DataFrame({"agent": _labels(cd["cell_agent"].values), "task": _labels(cd["cell_task"].values),
                          "n_runs": np.asarray(cd["cell_n_runs"].values, dtype=float).ravel(),
                          "n_success": np.asarray(cd["cell_n_success"].values, dtype=float).ravel()})  # fmt: skip
    return frame.groupby(["agent", "task"], sort=False).sum().to_xarray()


def _observed_labels(fit: xr.DataTree, dim: str) -> list[str] | None:
    """The ``agent`` or ``task`` labels of a formula fit's ``observed_data`` rows (``cell_<dim>`` / ``obs_<dim>``)."""
    if "observed_data" not in fit.children:
        return None
    od = fit["observed_data"].to_dataset()
    if "y" not in od or od["y"].ndim != 1 or f"{od['y'].dims[0]}_{dim}" not in od.coords:
        return None
    return list(pd.unique(np.asarray(_labels(od[f"{od['y'].dims[0]}_{dim}"].values), dtype=object)))


def _covariate_words(fit: xr.DataTree, design, counts_same: bool) -> str:
    """Why a design differs when its scores do not: the columns the formula reads besides agent, task and score.

    ``counts_same``: the log's counts fingerprint is the fit's, which holds each task's cluster
    too, so ``cluster`` is not among the columns that can differ.
    """
    opts = fit_record(fit, "hierbench_spec").get("options", {})
    skip = ("agent", "task", design.response, *(("cluster",) if counts_same else ()))
    names = [v for v in design.variables if v not in skip]
    named = [f"`{v}` (log2 of the task coord `{opts['minutes']}`)" if v == "log2_minutes" and opts.get("minutes")
             else f"`{v}`" for v in names]  # fmt: skip
    same = "the data's scores are the fit's"
    if not named:
        return same + "; the design differs otherwise (its levels or grouping)"
    which = f"the covariate the formula reads, {named[0]}," if len(named) == 1 else (
        f"one or more of the covariates the formula reads ({', '.join(named)})")
    return f"{same}; {which} differ{'s' if len(named) == 1 else ''} from the fit's"


def _formula_diff(fit: xr.DataTree, data: xr.Dataset, want: str) -> tuple[bool, list[str], str | None]:
    """A formula fit against the design its formula makes of ``data``: (the same, why not, why not rebuilt).

    A formula fit's fingerprint is its design's (:meth:`hierbench.data.ModelDesign.fingerprint`),
    not the counts': the design is rebuilt from the log with the fit's formula, family and levels.
    A design that cannot be rebuilt from the log (covariates given apart from it) is not compared
    here: the third item says why, and :func:`check_fit_data` warns that only the agents, tasks
    and counts were compared (a grade scale other than the fit's is refused before this). Where the
    scores are the fit's (its cells or runs, or for a binomial fit its counts' fingerprint), the
    covariates the formula reads are named as what differs.
    """
    from .._base import COUNTS_HASH
    from .._base import counts_fingerprint

    opts = fit_record(fit, "hierbench_spec").get("options", {})
    if "formula" not in opts or not want:
        return False, [], None
    try:
        with warnings.catch_warnings():  # the design's own notices were given when it was fitted
            warnings.simplefilter("ignore")
            design = rebuilt_design(fit, data)
    except (HierbenchError, ValueError, KeyError) as exc:
        return False, [], str(exc) or type(exc).__name__
    if design.fingerprint() == want:
        return True, [], None
    cells = _formula_cells(fit, data)
    same_counts = fit.attrs.get(COUNTS_HASH) == counts_fingerprint(data)  # hashed once
    if cells == "" or (cells is None and opts.get("family") == "binomial" and same_counts):
        cells = _covariate_words(fit, design, same_counts)
    return False, [f"the formula model's design built from the data ({opts['formula']!r}, family "
                   f"{opts['family']}) is not the fit's: "
                   + (cells or "other scores, runs or covariates")], None  # fmt: skip


def _formula_cells(fit: xr.DataTree, data: xr.Dataset, shown: int = 3) -> str | None:
    """The runs (or cells) whose response in the fit is not the log's, named; ``""`` if none, None if not read.

    Two layouts are read: per run (``obs_agent`` / ``obs_task`` / ``obs_run``: the fractional
    family's scores, moved off 0 and 1 by at most 1e-3) against the log's scores, and per cell
    (``cell_agent`` / ``cell_task``: the binomial family's runs and successes, ``constant_data``
    ``cell_n_runs`` / ``cell_n_success``, in the words of the count models' check) against the
    log's counts. Only runs and cells the log ran are compared: a cell it never ran is no
    difference. An ordinal fit's grades are not read (None).
    """
    from ..data import to_counts

    cell_counts = _fit_cells(fit)
    if cell_counts is not None:
        counts = to_counts(data)
        why = [d for dim in ("agent", "task")
               for d in _set_diff(dim, _labels(cell_counts[dim].values), _labels(counts[dim].values))]  # fmt: skip
        return "; ".join(why + _cell_diff(cell_counts, counts))
    if "observed_data" not in fit.children:
        return None
    od = fit["observed_data"].to_dataset()
    if "y" not in od or od["y"].ndim != 1:
        return None
    dim = od["y"].dims[0]
    keys = [k for k in ("agent", "task", "run") if f"{dim}_{k}" in od.coords]
    got = pd.DataFrame({k: _labels(od[f"{dim}_{k}"].values) for k in keys}).assign(fit=od["y"].values.astype(float))
    if keys == ["agent", "task", "run"]:
        have, what, tol = data["score"].to_series().dropna(), "runs", 1e-3
    elif keys == ["agent", "task"] and dim == "cell":  # successes only (no runs kept): the cells the log ran
        c = to_counts(data)
        have, what, tol = c["n_success"].where(c["n_runs"] > 0).to_series().dropna(), "cells (successes)", 0.0
    else:
        return None
    have = have.reset_index().rename(columns={have.name: "data"})
    have[keys] = have[keys].astype(str)
    both = got.merge(have[[*keys, "data"]], on=keys, how="outer")
    bad = both[~np.isclose(both["fit"], both["data"], atol=tol, rtol=0.0)]
    if bad.empty:
        return ""
    ex = "; ".join(
        "(" + ", ".join(str(r[k]) if k != "run" else f"run {r[k]}" for k in keys) + "): fit "
        + ("absent" if np.isnan(r["fit"]) else f"{r['fit']:.4g}") + ", data "
        + ("absent" if np.isnan(r["data"]) else f"{r['data']:.4g}")
        for _, r in bad.head(shown).iterrows()
    )
    return f"{len(bad)} of {len(both)} {what} differ, e.g. {ex}"


def cluster_note(fit: xr.DataTree, data: xr.Dataset) -> str | None:
    """The sentence a report needs when the log's tasks sit in clusters and the fit's model has none.

    None when the fit's model has clusters (:func:`check_fit_data` holds the
    log to them) or the log has none.
    """
    formula = fit_record(fit, "hierbench_spec").get("options", {}).get("formula")
    if _fit_clusters(fit)[0] or "cluster" not in data.coords or (formula and _CLUSTER_TERM.search(formula)):
        return None
    n = len({str(v) for v in np.asarray(data["cluster"].values).ravel()})
    why = _fit_decision(fit, "clusters").get("reason")
    model = fit.attrs.get("hierbench_model", "custom")
    column = cluster_label(data)
    if formula:  # a formula model has a cluster effect only if its formula names one: `--cluster` alone adds none
        what = f"fit's formula ({formula!r}) has no cluster term"
        remedy = (f"add a cluster term to the formula, e.g. `(1|cluster)` (the log's `{column}` column is read "
                  "as the task coord `cluster`; `--formula` when fitting)")
    elif _dropped_clusters(fit):  # fitting with --cluster again drops them again (audit C: METR's 3 tasks)
        what = f"fit's {model} model has no cluster effect"
        remedy = None
    else:
        what = f"fit's {model} model has no cluster effect"
        remedy = "fit with the clusters (`--cluster` when fitting)"
    return (
        f"Clusters in one half only: the data's tasks sit in {n} clusters (`{column}`) and the "
        f"{what}" + (f" (recorded when it was fitted: {why})" if why else "")
        + ". The frequentist half (bootstrap, paired tests, G-theory) takes the clusters into account; "
        "the Bayesian half (every posterior column, P(a > b), the Bayes variance terms) treats the tasks "
        "as independent of their cluster. For both halves on one footing, "
        + (f"{remedy}, or read the log without them." if remedy else
           "read the log without them (`--cluster` left out; in Python, without the `cluster` coord): these data "
           "cannot identify a cluster effect, so a fit with `--cluster` leaves it out again.")
    )


def _dropped_clusters(fit: xr.DataTree) -> bool:
    """Whether the fit's builder saw clusters and left them out by its own rule, so a refit with them would too.

    Read from the fit's structure record: the clusters' decision is False, chosen on "auto" (the
    CLI's ``--cluster``), with the design's cluster figures recorded (``n_clusters``). The crossed
    and horizon builders' rule (``decide_clusters``) says False on "auto" only where the design cannot
    identify a cluster effect (one cluster for every task, or most tasks alone in theirs). Not so
    where the user turned them off, or the IRT builders leave them out unless asked: fitting with them
    helps there.
    """
    decision = _fit_decision(fit, "clusters")
    design = fit_record(fit, "hierbench_structure").get("design", {})
    irt = str(fit.attrs.get("hierbench_model", "")).startswith("irt")
    return decision.get("choice") is False and decision.get("source") == "auto" and "n_clusters" in design and not irt


#: a formula's grouping by the task coord ``cluster``: ``(1|cluster)``, ``(1 + x|cluster)``, ``(1|agent:cluster)``
_CLUSTER_TERM = re.compile(r"\|[^)]*\bcluster\b")


def is_battles(data: xr.Dataset | None) -> bool:
    """Whether ``data`` is a battle log (``hierbench.data.read_battles``: dim ``comparison``) or its pair counts (``pair``)."""
    return isinstance(data, xr.Dataset) and bool({"comparison", "pair"} & set(data.dims))


def data_pair_counts(data: xr.Dataset) -> xr.Dataset:
    """A battle log's win / tie / loss counts per ordered pair (pair counts are returned as they are)."""
    from ..data import check_pairwise
    from ..data import to_pair_counts

    return to_pair_counts(check_pairwise(data)) if "comparison" in data.dims else data


def pair_table(counts: xr.Dataset) -> pd.DataFrame:
    """Pair counts as a table of ``PAIR_COLUMNS``, agents as text."""
    return pd.DataFrame({c: np.asarray(counts[c].values).astype(str if c.startswith("agent") else float)
                         for c in PAIR_COLUMNS})  # fmt: skip


def fit_pair_counts(fit: xr.DataTree) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The battles a Bradley-Terry fit saw, per pair as the model orients them, from its constant data.

    ``(ia, ib, counts)``: each pair's agents (indices into the posterior's ``agent``) and its win of
    ``ia`` / tie / win of ``ib`` (pairs x 3, integers). None for a fit whose constant data are not a
    Bradley-Terry model's. The one reader of those data (the pair table, the predictive check).
    """
    if not {"constant_data", "posterior"} <= set(fit.children):
        return None
    cd = fit["constant_data"].to_dataset()
    if not {"agent_a_idx", "agent_b_idx", "n_comparisons"} <= set(cd.data_vars):
        return None
    n = cd["n_comparisons"].values.astype(np.int64)
    if "outcome_obs" in cd:
        counts = cd["outcome_obs"].transpose("pair", "result").values.astype(np.int64)
    elif "n_win_a_obs" in cd:  # a fit with ties=None, which refuses battles with ties
        w = cd["n_win_a_obs"].values.astype(np.int64)
        counts = np.stack([w, np.zeros_like(w), n - w], axis=1)
    else:
        return None
    return cd["agent_a_idx"].values.astype(np.int64), cd["agent_b_idx"].values.astype(np.int64), counts


def fit_pair_table(fit: xr.DataTree) -> pd.DataFrame | None:
    """The battles a Bradley-Terry fit saw, per ordered pair (``PAIR_COLUMNS``), from its constant data.

    None for a fit whose constant data are not a Bradley-Terry model's.
    """
    got = fit_pair_counts(fit)
    if got is None:
        return None
    ia, ib, counts = got
    agents = np.asarray(_labels(fit["posterior"]["agent"].values), dtype=object)
    win_a, tie, win_b = counts.astype(float).T
    return pd.DataFrame(dict(zip(PAIR_COLUMNS, (agents[ia], agents[ib], win_a, tie, win_b), strict=True)))


def _pair_diff(fp: pd.DataFrame, dp: pd.DataFrame) -> list[str]:
    """The battles two pair tables hold, and the ordered pairs whose win / tie / loss counts differ."""
    why = []
    n_fit, n_data = (int(t[PAIR_COLUMNS[2:]].sum().sum()) for t in (fp, dp))
    if n_fit != n_data:
        why.append(f"the fit saw {n_fit:,} battles and the data holds {n_data:,}")
    both = fp.merge(dp, on=["agent_a", "agent_b"], how="outer", suffixes=(" fit", " data")).fillna(0)
    bad = both[np.any([both[f"{c} fit"] != both[f"{c} data"] for c in PAIR_COLUMNS[2:]], axis=0)]
    if len(bad):
        ex = ", ".join(f"({r['agent_a']} vs {r['agent_b']}): fit " + "/".join(f"{r[f'{c} fit']:g}" for c in PAIR_COLUMNS[2:])
                       + ", data " + "/".join(f"{r[f'{c} data']:g}" for c in PAIR_COLUMNS[2:])
                       for _, r in bad.head(3).iterrows())  # fmt: skip
        why.append(f"{len(bad)} of {len(both)} ordered pairs with other counts of wins of the first / ties / "
                   f"wins of the second (e.g. {ex})")  # fmt: skip
    return why


def _check_battles(fit: xr.DataTree, data: xr.Dataset, fit_name: str, data_name: str) -> None:
    """A Bradley-Terry fit against a battle log: the same battles, by the fingerprint the fit records.

    Refused: a battle log beside a fit of run logs, a run log beside a Bradley-Terry fit, and other
    battles (audit N: the first 4,000 of LLMFAO's 8,931 battles were accepted because only the
    agents, the same 59, were compared).
    """
    from ..bayes import pair_counts_hash

    if not battles_fit(fit):
        model = fit.attrs.get("hierbench_model", "custom")
        raise FitDataMismatchError(
            f"{data_name} is a battle log (pairwise comparisons) and {fit_name} is a {model} fit of a run log: "
            "a battle log goes with a Bradley-Terry fit (hierbench.bayes.build_bradley_terry); give the run log "
            "the fit was made from"
        )
    if not is_battles(data):
        raise FitDataMismatchError(
            f"{fit_name} is a Bradley-Terry fit of battles and {data_name} is a run log (scores per agent, task "
            "and run): give the battle log the fit was made from (hierbench.data.read_battles)"
        )
    counts = data_pair_counts(data)
    want, got = str(fit.attrs.get("hierbench_data_hash", "")), pair_counts_hash(counts)
    if want == got:
        return
    fp = fit_pair_table(fit)
    why = _set_diff("agent", _labels(fit["posterior"]["agent"].values), _labels(counts["agent"].values))
    why += _pair_diff(fp, pair_table(counts)) if fp is not None else []
    if not want and not why:
        return  # the fit records no fingerprint and its battles are the data's
    why = why or ["the same counts per pair, labelled or oriented otherwise (which agent is first)"]
    raise FitDataMismatchError(
        f"{fit_name} and {data_name} are not the same battles: " + "; ".join(why)
        + f" (fingerprints {want[:12] or 'none'} and {got[:12]}). Give the battle log the fit was made from, "
        "read with the same options (read_battles' position, outcomes, agents and duplicates change the counts; the task column does not)"
    )


def _grades_text(values) -> str:
    """A grade scale or some scores as the user writes them: ``1, 2, 3`` (labels as they are)."""
    return ", ".join(v if isinstance(v, str) else f"{float(v):g}" for v in values)


def _grade_scale_diff(fit: xr.DataTree, data: xr.Dataset) -> str | None:
    """Why the data's scores are not grades of an ordinal formula fit's scale (None: they are, or no such fit).

    An ordinal fit of ``score`` records its grade scale (spec ``options.levels``): the scale the
    log's score was read on (``attrs["score_levels"]``) must be that one, and a log read without a
    scale (scores in [0, 1]) must hold only grades of it (a fit given ``levels`` on such a log).
    The same file read on another scale (other ``score_levels``, or already scaled to [0, 1]) gives
    the other half of a report other numbers, which a design that cannot be rebuilt does not say.
    """
    from ..data import labels_attr
    from ..data import levels_attr

    opts = fit_record(fit, "hierbench_spec").get("options", {})
    formula, levels = opts.get("formula"), opts.get("levels")
    if opts.get("family") != "ordinal" or not formula or levels is None or "score" not in data.data_vars:
        return None
    if str(formula).split("~", 1)[0].strip() != "score":
        return None  # another response: the score's scale is not the model's
    scale = np.asarray(levels, dtype=float)
    recorded = levels_attr(data.attrs)
    if recorded is not None:
        theirs = np.asarray(recorded, dtype=float)
        if theirs.shape == scale.shape and np.array_equal(theirs, scale):
            return None
        theirs = f"the data's were read as the grades {_grades_text(theirs)} (`score_levels`)"
    else:
        v = np.asarray(data["score"].values, dtype=float)
        off = np.unique(v[np.isfinite(v) & ~np.isin(v, scale)])
        if not off.size:
            return None  # every score is a grade of the fit's scale
        theirs = (f"the data's were read without a grade scale (no `score_levels`: scores in [0, 1], e.g. "
                  f"{_grades_text(off[:3])}, which are not grades of the fit's scale)")  # fmt: skip
    words = labels_attr(fit.attrs) or [float(x) for x in scale]
    remedy = "[" + ", ".join(repr(w) if isinstance(w, str) else f"{w:g}" for w in words) + "]"
    return (f"the fit's ordinal model reads the scores as the grades {_grades_text(scale)} and {theirs}. Give the "
            f"log the fit was made from, read on the fit's grade scale (`score_levels={remedy}`)")  # fmt: skip


def _check_grades(fit: xr.DataTree, data: xr.Dataset, fit_name: str, data_name: str, *, scale: bool) -> None:
    """Refuse grades labelled otherwise in the two (``scale``: a log read on another grade scale than an ordinal fit's)."""
    from ..data import labels_attr

    named = (labels_attr(fit.attrs), labels_attr(data.attrs))
    if not scale and None not in named and named[0] != named[1]:  # the same numbers, other words: hashes cannot tell
        why = f"the fit's grades are labelled {named[0]!r} and the data's {named[1]!r} (attrs['score_labels'])"
    else:
        why = _grade_scale_diff(fit, data) if scale else None
    if why:
        raise FitDataMismatchError(f"{fit_name} and {data_name} are not the same evaluation: {why}")


def _warn_unchecked(fit_name: str, data_name: str, why: str, cells: bool) -> None:
    """Say that a formula fit's design could not be rebuilt from the log, so the pair was checked in part only."""
    from .._base import OUTSIDE_PACKAGE
    from .._base import HierbenchWarning

    what = "agents, tasks and counts per cell" if cells else "agents and tasks"
    warnings.warn(
        f"{fit_name} and {data_name}: the formula model's design could not be rebuilt from the data ({why}); "
        f"only their {what} were compared, so this may not be the log the fit was made from (give the log "
        "the fit was made from, read with the same options and covariates)",
        HierbenchWarning,
        stacklevel=2,
        skip_file_prefixes=OUTSIDE_PACKAGE,
    )


def check_fit_data(
    fit: xr.DataTree,
    data: xr.Dataset,
    *,
    fit_name: str = "`fit`",
    data_name: str = "`data`",
) -> None:
    """Refuse a fit and an eval dataset that are not the same evaluation.

    Parameters
    ----------
    fit : xarray.DataTree
        A hierbench fit (root attr ``hierbench_data_hash``; count models also
        keep ``constant_data`` ``n_runs`` / ``n_success``).
    data : xarray.Dataset
        An eval dataset (``score(agent, task, run)``), or beside a Bradley-Terry fit the battle
        log (``hierbench.data.read_battles``) or its pair counts.
    fit_name, data_name : str
        How the message names the two (a file, a flag).

    Raises
    ------
    FitDataMismatchError
        Naming the agents and tasks only one side has, the cells whose
        counts differ and, when the fit's model has task clusters, tasks the
        data gives no cluster or another one, with the two fingerprints; or
        grades written as words labelled differently in the two
        (``attrs["score_labels"]``); or, beside an ordinal formula fit of
        ``score``, a log read on another grade scale (``attrs["score_levels"]``
        other than the fit's ``levels``, or scores in [0, 1] that are not grades
        of that scale), naming both scales.
        For battles: a battle log beside a fit of a run log (or the other way
        round), or battles whose pair counts are not the ones the Bradley-Terry
        fit records (its fingerprint, with the battles and pairs that differ).

    Warns
    -----
    HierbenchWarning
        When a formula fit's design cannot be rebuilt from ``data`` (covariates
        given apart from it, or not read): only the agents, tasks and counts
        were compared.

    Examples
    --------
    >>> import xarray as xr
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=2, n_tasks=4, n_runs=2, rng=0)
    >>> fit = xr.DataTree.from_dict({"posterior": xr.Dataset(coords={"agent": ["x", "y"]})})
    >>> check_fit_data(fit, ds)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hierbench.report._match.FitDataMismatchError: `fit` and `data` are not the same evaluation: 2 agents only in the fit (['x', 'y']); 2 agents only in the data (['agent_00', 'agent_01'])...)
    """
    from ..bayes import data_hash
    from ..data import to_counts

    _check_grades(fit, data, fit_name, data_name, scale=False)
    if battles_fit(fit) or is_battles(data):
        return _check_battles(fit, data, fit_name, data_name)
    _check_grades(fit, data, fit_name, data_name, scale=True)
    want = str(fit.attrs.get("hierbench_data_hash", ""))
    counts = to_counts(data) if "score" in data else data
    got = data_hash(counts) if {"n_runs", "n_success"} <= set(counts.data_vars) else ""
    kind = _score_kind_diff(fit, data)
    same, formula, unbuilt = _formula_diff(fit, data, want) if not kind else (False, [], None)
    if not kind and (same or (want and got and want == got)):
        return
    fc = _fit_counts(fit)
    fc = fc if fc is not None else _fit_cells(fit)  # a binomial formula fit's cells: the count models' words
    post = fit["posterior"].to_dataset() if "posterior" in fit.children else xr.Dataset()
    why = []
    for dim in ("agent", "task"):
        # the cells the fit saw, else a formula fit's observed rows, else its posterior's coord
        seen = _labels(fc[dim].values) if fc is not None else _observed_labels(fit, dim)
        seen = seen if seen is not None or dim not in post.coords else _labels(post[dim].values)
        if seen is not None and dim in counts.coords:
            why += _set_diff(dim, seen, _labels(counts[dim].values))
    if fc is not None:
        why += _cell_diff(fc, counts)
    clusters = _cluster_diff(fit, counts)
    why = kind + why + (formula if not why else [])  # other agents or tasks: a design differs anyway
    if not why + clusters:  # the same agents, tasks and counts (labels in another order); clusters the fit does not use
        if unbuilt:  # a formula fit whose design this log cannot make: said, never passed in silence
            _warn_unchecked(fit_name, data_name, unbuilt, fc is not None)
        return
    prints = f" (fingerprints {want[:12]} and {got[:12]})" if want and got else ""
    raise FitDataMismatchError(
        f"{fit_name} and {data_name} are not the same evaluation: "
        + "; ".join(why + clusters)
        + f"{prints}. Give the log the fit was made from, read with the same options "
        "(the error policy and the columns change the counts"
        + ("; the cluster column, `--cluster` or from_records(cluster=...), gives each task its cluster, "
           "which the fit's model uses)" if clusters else ")")
    )


def _result_counts(result) -> xr.Dataset:
    """The (agent, task) success / run counts a subset result drew (0 runs where it drew nothing)."""
    dr = result.draws
    agents = _labels(dr["agent"].values)
    task = np.asarray(dr["task"].values, dtype=object)
    drawn = np.array([t is not None and t == t for t in task.ravel()]).reshape(task.shape)
    tasks = sorted({str(t) for t in task[drawn]})
    col = {t: j for j, t in enumerate(tasks)}
    n = np.zeros((len(agents), len(tasks)))
    y = np.zeros_like(n)
    runs, rate = dr["n_runs"].values, dr["outcome"].values
    for i, s in zip(*np.nonzero(drawn), strict=True):
        n[i, col[str(task[i, s])]] = runs[i, s]
        y[i, col[str(task[i, s])]] = np.round(rate[i, s] * runs[i, s])
    coords = {"agent": agents, "task": tasks}
    dims = ("agent", "task")
    return xr.Dataset({"n_runs": (dims, n), "n_success": (dims, y)}, coords=coords)


def check_result_data(result, data: xr.Dataset, *, name: str = "`subset`", data_name: str = "`data`") -> None:
    """Refuse a subset result whose agents, drawn tasks or drawn outcomes are not in the eval dataset.

    The rule of :func:`check_fit_data` from the result's side: every agent
    and every task the result drew must be in the data, with the same
    success / run counts in each drawn cell (agents of the data the result
    left out are allowed).

    Parameters
    ----------
    result : AssistedResult
        From :func:`hierbench.design.assisted_mean` or
        :func:`hierbench.design.assisted_adaptive` (its ``draws``).
    data : xarray.Dataset
        An eval dataset (``score(agent, task, run)``) or its counts.
    name, data_name : str
        How the message names the two.

    Raises
    ------
    FitDataMismatchError
        Naming the agents and tasks only the result has and the drawn cells
        whose counts differ.

    Examples
    --------
    >>> from hierbench.design import assisted_adaptive, simulate_irt_log
    >>> ds, _ = simulate_irt_log(3, 40, rng=0)
    >>> res = assisted_adaptive(None, ds, n_tasks=10, rng=1)
    >>> check_result_data(res, ds)
    >>> check_result_data(res, ds.isel(agent=[0, 1]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    hierbench.report._match.FitDataMismatchError: `subset` and `data` are not the same evaluation: 1 agent only in the result (['agent_002'])...
    """
    from ..data import to_counts

    counts = to_counts(data) if "score" in data else data
    rc = _result_counts(result)
    names = ("the result", "the data")
    why = []
    for dim, what in (("agent", "agent"), ("task", "task")):
        why += _set_diff(what, _labels(rc[dim].values), _labels(counts[dim].values), names=names, one_sided=True)
    why += _cell_diff(rc, counts, name="result", observed_only=True)
    if why:
        raise FitDataMismatchError(
            f"{name} and {data_name} are not the same evaluation: " + "; ".join(why)
            + ". Give the subset results computed from the report's log (same agents, tasks and runs)"
        )


#: the results ``build(freq={...})`` takes, by key: the function that makes each and its result class
FREQ_RESULTS: dict[str, tuple[str, str]] = {
    "bootstrap": ("bootstrap_ci", "BootstrapResult"),
    "compare": ("compare_agents", "PairwiseComparisonResult"),
    "variance": ("variance_components", "VarianceComponentsResult"),
    "horizon": ("time_horizon", "TimeHorizonResult"),
    "person_fit": ("person_fit", "PersonFitResult"),
}


def check_freq(freq, data: xr.Dataset | None, prob: float):
    """``build``'s ``freq`` checked: "auto", None, or a mapping of results of ``data`` at level ``prob``.

    Each result of a mapping (a key given as None leaves that result out) must be under a key of
    ``FREQ_RESULTS``, of its class, carry the fingerprint of ``data``'s score cells
    (``hierbench_counts_hash``, which the freq functions stamp) and have its intervals at ``prob``
    (every interval of a report is at its one level).
    Returns ``freq``; raises ``ValueError`` / ``TypeError`` / :class:`FitDataMismatchError` naming the key.
    """
    if freq is None or (isinstance(freq, str) and freq == "auto"):
        return freq
    from collections.abc import Mapping

    if not isinstance(freq, Mapping):
        got = repr(freq) if isinstance(freq, str) else type(freq).__name__
        raise TypeError(f"`freq` must be 'auto', None or a mapping of results {list(FREQ_RESULTS)}; got {got}")
    unknown = [k for k in freq if k not in FREQ_RESULTS]
    if unknown:
        raise ValueError(f"`freq` has keys {unknown} the report does not read; the accepted keys are "
                         f"{list(FREQ_RESULTS)} (a key left out is computed from `data`, as with 'auto')")  # fmt: skip
    given = {k: v for k, v in freq.items() if v is not None}
    if given and (data is None or is_battles(data)):
        raise ValueError(f"`freq` gives {sorted(given)} but the report has no run log (`data`) to check them "
                         "against or to show them beside: give the log they were computed from")  # fmt: skip
    for key, res in given.items():
        _check_freq_type(key, res)
        _check_freq_data(key, res, data)
        _check_freq_level(key, res, prob)
    if given.get("bootstrap") is not None:
        _check_freq_bootstrap(given["bootstrap"])
    return freq


def _check_freq_bootstrap(res) -> None:
    """A given bootstrap is what the abilities section shows: each agent's mean score, for a new draw of tasks."""
    what = (res.attrs.get("quantity"), res.attrs.get("tasks"))
    if what == ("mean score", "population"):
        return
    raise ValueError(
        f"`freq['bootstrap']` is a bootstrap of {res.attrs.get('statistic', '?')!r} ({what[0]}, "
        f"{res.attrs.get('scheme', '?')} scheme: tasks {what[1]}), but the report shows it as each agent's mean "
        "score with an interval for a new draw of tasks: give hierbench.freq.bootstrap_ci(data) with "
        "statistic='mean' and scheme='tasks' (clusters allowed), or leave the key out"
    )


def _check_freq_type(key: str, res) -> None:
    from .. import freq as F

    func, cls = FREQ_RESULTS[key]
    if not isinstance(res, getattr(F, cls)):
        accepted = ", ".join(f"{k!r}: {c} (hierbench.freq.{f})" for k, (f, c) in FREQ_RESULTS.items())
        raise TypeError(f"`freq[{key!r}]` must be a {cls}, what hierbench.freq.{func} returns; got "
                        f"{type(res).__name__}. The accepted keys and types: {accepted}")  # fmt: skip


def _check_freq_data(key: str, res, data: xr.Dataset) -> None:
    """The result's fingerprint is ``data``'s (a result without one cannot be checked and is refused)."""
    from .._base import COUNTS_HASH
    from .._base import counts_fingerprint

    func = FREQ_RESULTS[key][0]
    want, got = str(res.estimate.attrs.get(COUNTS_HASH, "")), counts_fingerprint(data)
    if want and want == got:
        return
    redo = (f"compute it with hierbench.freq.{func}(data, ...) on the report's log, or leave the key out "
            "and the report computes it")  # fmt: skip
    if not want:
        raise FitDataMismatchError(
            f"`freq[{key!r}]` carries no fingerprint of the log it was computed from (attrs "
            f"{COUNTS_HASH!r}), so whether it is `data`'s cannot be checked: {redo}"
        )
    why = []
    if "agent" in res.estimate.coords:
        why = _set_diff("agent", _labels(res.estimate["agent"].values), _labels(data["agent"].values),
                        names=("the result", "the data"))  # fmt: skip
    why = why or ["the same agents, other tasks, runs or scores"]
    raise FitDataMismatchError(
        f"`freq[{key!r}]` and `data` are not the same evaluation: " + "; ".join(why)
        + f" (fingerprints {want[:12]} and {got[:12] or 'none'}): {redo}"
    )


def _check_freq_level(key: str, res, prob: float) -> None:
    """The result's intervals are at the report's level (which every interval of the report states)."""
    level = res.prob if key == "variance" else res.ci.attrs.get("ci_prob")  # a G-study's ci: profiles, seconds
    if level is not None and np.isclose(float(level), prob, rtol=0, atol=1e-12):
        return
    got = "at no stated level" if level is None else f"at {float(level):g}"
    raise ValueError(
        f"`freq[{key!r}]` has its intervals {got} and the report is at prob={prob:g}: compute it with "
        f"hierbench.freq.{FREQ_RESULTS[key][0]}(data, prob={prob:g}, ...), or build the report at its "
        "level, or leave the key out and the report computes it"
    )
