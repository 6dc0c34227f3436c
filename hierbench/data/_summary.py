"""Descriptive summaries of an eval dataset: the schema report and per-agent summary."""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from .._base import UndefinedWarning
from .._base import warn_user
from ._schema import check_eval_dataset
from ._schema import score_kind
from ._values import is_missing

__all__ = ["NoScoredRunsWarning", "read_report", "summarize"]


class NoScoredRunsWarning(UndefinedWarning):
    """An agent has no scored run, so its mean score is undefined (NaN)."""


def _happened(ds: xr.Dataset) -> xr.DataArray:
    """Mark the runs that took place: scored, or flagged as errors (excluded runs have a NaN score)."""
    h = ds["score"].notnull()
    if "error" in ds:
        h = h | ds["error"]
    return h


def _annotations(ds: xr.Dataset) -> list[str]:
    try:
        names = json.loads(ds.attrs.get("annotations", "[]"))
    except (TypeError, json.JSONDecodeError):
        names = []
    return [n for n in names if n in ds]


#: what ``mean_score`` and ``micro_mean_score`` average (their ``description`` attr, shown in their repr): "micro"
#: is per run here, but per task in success_rate's ``micro`` (audit s75 A, finding 6b)
_MEAN_SCORE = (
    "mean over the scored tasks of each task's mean score, every task weighing the same "
    "(hierbench.freq.success_rate's `micro`)"
)
_MICRO_MEAN_SCORE = (
    "mean over all scored runs, every run weighing the same (tasks with more runs weigh more); not "
    "hierbench.freq.success_rate's `micro`, which is per task (this summary's `mean_score`)"
)


def summarize(ds: xr.Dataset) -> xr.Dataset:
    """Per-agent summary of an eval dataset.

    Parameters
    ----------
    ds : xarray.Dataset
        Eval dataset (see :func:`hierbench.data.check_eval_dataset`).

    Returns
    -------
    xarray.Dataset
        Along ``agent``:

        ``n_tasks_attempted``
            tasks with at least one run (errored runs included);
        ``n_tasks_scored``
            tasks with at least one scored run: those ``mean_score``
            averages (fewer than ``n_tasks_attempted`` when the policy
            ``errors="exclude"`` leaves a task only errored runs);
        ``n_missing_cells``
            tasks of the dataset the agent never ran;
        ``n_runs``
            runs that happened, errored runs included;
        ``n_scored``
            runs whose score counts under the dataset's error policy;
        ``n_error``, ``error_rate``
            infrastructure-error runs and their share of ``n_runs``;
        ``mean_score``
            mean over the scored tasks (``n_tasks_scored``) of the per-task
            mean score (each task weighs the same, however many runs it had);
            the same quantity as :func:`hierbench.freq.success_rate`'s ``micro``;
        ``micro_mean_score``
            mean over all scored runs, each run weighing the same (tasks with
            more runs weigh more): "micro" here means per run, whereas
            :func:`hierbench.freq.success_rate`'s ``micro`` is per task ("micro"
            over tags: every task counts once), this function's ``mean_score``;
        ``n_<annotation>``
            runs carrying each per-run annotation listed in
            ``attrs["annotations"]`` (e.g. METR's ``usage_limit``).

        An agent without scored runs gets NaN means and a
        :class:`NoScoredRunsWarning`.

    Examples
    --------
    >>> import pandas as pd
    >>> from hierbench.data import from_records
    >>> ds = from_records(pd.DataFrame({"agent": ["a", "a", "a"], "task": ["t1", "t1", "t2"],
    ...                                 "score": [1.0, 0.0, 1.0]}))
    >>> s = summarize(ds)
    >>> float(s.mean_score.sel(agent="a")), float(s.micro_mean_score.sel(agent="a"))
    (0.75, 0.6666666666666666)
    """
    check_eval_dataset(ds, name="ds")
    score = ds["score"]
    happened = _happened(ds)
    scored = score.notnull()
    cell_runs = happened.sum("run")
    n_scored = scored.sum(("task", "run"))
    cell_mean = score.sum("run", skipna=True) / scored.sum("run").where(scored.sum("run") > 0)
    out = xr.Dataset(
        {
            "n_tasks_attempted": (cell_runs > 0).sum("task").astype(np.int64),
            "n_tasks_scored": (scored.sum("run") > 0).sum("task").astype(np.int64),
            "n_missing_cells": (cell_runs == 0).sum("task").astype(np.int64),
            "n_runs": happened.sum(("task", "run")).astype(np.int64),
            "n_scored": n_scored.astype(np.int64),
        }
    )
    n_err = ds["error"].sum(("task", "run")).astype(np.int64) if "error" in ds else 0 * out["n_runs"]
    out["n_error"] = n_err
    out["error_rate"] = (n_err / out["n_runs"].where(out["n_runs"] > 0)).astype(float)
    out["mean_score"] = cell_mean.mean("task", skipna=True).assign_attrs(description=_MEAN_SCORE)
    out["micro_mean_score"] = (score.sum(("task", "run"), skipna=True) / n_scored.where(n_scored > 0)).assign_attrs(
        description=_MICRO_MEAN_SCORE
    )
    for name in _annotations(ds):
        out[f"n_{name}"] = ds[name].sum(("task", "run")).astype(np.int64)
    empty = out.agent.values[(n_scored == 0).values]
    if len(empty):
        warn_user(
            f"agents {list(map(str, empty))} have no scored run; their mean scores are NaN",
            NoScoredRunsWarning,
        )
    out = out.drop_vars([c for c in out.coords if c != "agent"])
    out.attrs = {"errors": ds.attrs.get("errors", "fail"), "n_tasks": int(ds.sizes["task"])}
    return out


def _n_unlabelled(ds: xr.Dataset, coord: str) -> int | None:
    """Tasks with no label in a task coord; None without that coord."""
    if coord not in ds.coords:
        return None
    return int(is_missing(ds.coords[coord].to_series()).sum())


def _source(source):
    """A source as read: a JSON list of files (``read_inspect_log``) as that list, anything else as is."""
    if isinstance(source, str) and source.startswith("["):
        try:
            files = json.loads(source)
        except json.JSONDecodeError:
            return source
        return files if isinstance(files, list) else source
    return source


def read_report(ds: xr.Dataset) -> dict:
    """Return the schema report of an eval dataset as a plain (JSON-ready) dict.

    Holds the records read and kept and why any were not kept, the numbers of
    agents and tasks, runs per attempted cell (min, median, max; errored runs
    included) and scored runs per cell with a score (what a model sees; an
    error run excluded by ``errors='exclude'`` has no score), the attempted
    cells left without any score (``scored_differs``: whether any cell's
    scored runs differ from its attempted ones), whether the
    design is balanced (every agent ran every task the same number of times),
    the missing cells, the error runs and policy, the per-run annotations with
    their counts, the per-run variables (``score`` and ``error`` among them), the record
    columns no role read (``columns_not_read``, None when the reader did not say), the
    task and agent coords, inconsistent attributes, the
    tasks without a cluster label, the records kept as runs although they
    repeat an earlier one (``n_repeated_records``, None when the reader did
    not say), the error runs whose recorded score > 0 was read as 0
    (``n_error_scores_overwritten``, None when the reader did not say), how
    Inspect samples were keyed as tasks (``sample_key``), the scores' kind (:func:`~hierbench.data.score_kind` of the
    values: binary, continuous or mixed) and the grade scale they were read
    from (``score_levels``, None unless read from ordinal grades) with their labels
    (``score_labels``, None unless the grades were written as words).

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=2, n_tasks=3, n_runs=4, rng=0)
    >>> r = read_report(ds)
    >>> r["n_agents"], r["n_tasks"], r["balanced"], r["runs_per_cell"]
    (2, 3, True, {'min': 4, 'median': 4.0, 'max': 4})
    """
    check_eval_dataset(ds, name="ds")
    happened = _happened(ds)
    cell_runs = happened.sum("run").values
    attempted = cell_runs[cell_runs > 0]
    # what a model sees: runs with a score (an excluded error run has none)
    scored_runs = ds["score"].notnull().sum("run").values
    scored = scored_runs[scored_runs > 0]

    def _json_attr(key, default):
        try:
            return json.loads(ds.attrs.get(key, default))
        except (TypeError, json.JSONDecodeError):
            return ds.attrs.get(key)

    per_run = sorted(v for v in ds.data_vars if ds[v].dims == ("agent", "task", "run"))
    return {
        "schema": ds.attrs.get("hierbench_schema"),
        # several files (Inspect logs) are kept as a JSON list in attrs: a list here, never JSON text
        "source": _source(ds.attrs.get("source")),
        "reader": ds.attrs.get("reader"),
        "n_records_read": ds.attrs.get("n_records_read"),
        "n_records_kept": ds.attrs.get("n_records_kept"),
        "not_kept": _json_attr("not_kept", "{}"),
        "n_agents": int(ds.sizes["agent"]),
        "n_tasks": int(ds.sizes["task"]),
        "n_runs_max": int(ds.sizes["run"]),
        "n_runs_total": int(happened.sum()),
        "runs_per_cell": {
            "min": int(attempted.min()) if attempted.size else 0,
            "median": float(np.median(attempted)) if attempted.size else float("nan"),
            "max": int(attempted.max()) if attempted.size else 0,
        },
        "balanced": bool(attempted.size == cell_runs.size and np.all(attempted == attempted[0]))
        if attempted.size
        else False,
        "scored_runs_per_cell": {
            "min": int(scored.min()) if scored.size else 0,
            "median": float(np.median(scored)) if scored.size else float("nan"),
            "max": int(scored.max()) if scored.size else 0,
        },
        "n_missing_cells": int((cell_runs == 0).sum()),
        "n_cells_without_score": int(((cell_runs > 0) & (scored_runs == 0)).sum()),
        # the one test of "the models see other runs than were attempted" (report and CLI say it)
        "scored_differs": bool(np.any(scored_runs != cell_runs)),
        "n_cells": int(cell_runs.size),
        "errors": ds.attrs.get("errors", "fail"),
        "n_error_runs": int(ds["error"].sum()) if "error" in ds else 0,
        "annotations": {n: int(ds[n].sum()) for n in _annotations(ds)},
        "per_run_variables": per_run,
        # the record columns no role read (None: the reader did not say, e.g. an Inspect log's)
        "columns_not_read": _json_attr("columns_not_read", "null"),
        "task_coords": sorted(c for c in ds.coords if ds.coords[c].dims == ("task",) and c != "task"),
        "agent_coords": sorted(c for c in ds.coords if ds.coords[c].dims == ("agent",) and c != "agent"),
        "inconsistent_attributes": _json_attr("inconsistent_attributes", "{}"),
        "n_tasks_without_cluster": _n_unlabelled(ds, "cluster"),
        "n_repeated_records": ds.attrs.get("n_repeated_records"),
        "n_error_scores_overwritten": ds.attrs.get("n_error_scores_overwritten"),
        "sample_key": ds.attrs.get("sample_key"),
        "score_kind": score_kind(ds),
        "score_levels": _json_attr("score_levels", "null"),
        "score_labels": _json_attr("score_labels", "null"),
    }
