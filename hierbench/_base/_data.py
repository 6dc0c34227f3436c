"""Data rules: scores into per-cell counts, and tasks into clusters (each routine the one that does).

:func:`counts` (refuses partial credit where binary counts are needed), :func:`is_binary`,
:func:`cluster_codes`, :func:`cluster_label` (the name clusters are called by: the column
they were read from, :data:`SOURCE_COLUMN`), :func:`counted` (a count with its noun) and
``data_hash`` / ``counts_fingerprint`` (which counts a result or a fit came from).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from typing import Any

import numpy as np
import xarray as xr

from ._checks import check_choice
from ._checks import check_dim
from ._warnings import OUTSIDE_PACKAGE
from ._warnings import HierbenchError
from ._warnings import HierbenchWarning
from ._warnings import PartialCreditError


def is_binary(values: Any) -> bool:
    """Whether every finite value is exactly 0 or 1.

    Examples
    --------
    >>> is_binary([0.0, 1.0, float("nan")]), is_binary([0.5, 0.5])
    (True, False)
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return bool(np.all((v == 0.0) | (v == 1.0)))


def counts(
    data: xr.Dataset | xr.DataArray,
    *,
    dim: str = "run",
    binary: bool = True,
    name: str = "data",
    purpose: str = "this estimator",
) -> xr.Dataset:
    """Turn scores into per-cell counts (the one routine that does).

    Accepts an eval dataset (``score``), a score DataArray, or a counts dataset
    (``n_runs``, ``n_success``) that is passed through after checking.

    Parameters
    ----------
    data : Dataset or DataArray
    dim : str
        The run dimension reduced over.
    binary : bool
        When True (pass@k, pass^k, binomial models), every score must be 0 or 1:
        partial credit is refused with :class:`PartialCreditError` naming the
        cells, even when a cell's scores sum to a whole number.
    name, purpose : str
        Used in error messages.

    Returns
    -------
    xarray.Dataset
        ``n_runs`` (int64) and ``n_success`` (float64; the success count when
        binary), plus ``n_error`` when ``data`` has ``error``; other dims and
        coords as in ``data``; ``attrs["binary"]`` (0/1).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> s = xr.DataArray([[1.0, 0.0, np.nan]], dims=("task", "run"))
    >>> c = counts(s)
    >>> int(c.n_runs[0]), float(c.n_success[0])
    (2, 1.0)
    """
    if isinstance(data, xr.Dataset) and "n_runs" in data and "n_success" in data and "score" not in data:
        return _checked_counts(data, binary, name, purpose)
    if isinstance(data, xr.Dataset):
        if "score" not in data:
            raise HierbenchError(
                f"`{name}` must be an eval dataset (with `score`), a counts dataset (with `n_runs` and "
                f"`n_success`) or a score DataArray; got variables {list(data.data_vars)}"
            )
        score = data["score"]
        error = data.get("error")
    elif isinstance(data, xr.DataArray):
        score = data
        error = None
    else:
        raise TypeError(
            f"`{name}` must be an xarray Dataset or DataArray; got {type(data).__name__}"
        )
    check_dim(score, dim)
    vals = np.asarray(score.values, dtype=float)
    if np.isinf(vals).any():
        raise HierbenchError(
            f"`{name}`: scores must be finite or NaN (not run); found infinite values"
        )
    binary_data = is_binary(vals)
    if binary and not binary_data:
        raise partial_credit_error(score, name, purpose)
    ran = score.notnull()
    out = xr.Dataset(
        {"n_runs": ran.sum(dim).astype(np.int64), "n_success": score.fillna(0.0).sum(dim)}
    )
    if error is not None:
        out["n_error"] = error.sum(dim).astype(np.int64)
    if isinstance(data, xr.Dataset):
        out.attrs = {k: v for k, v in data.attrs.items() if isinstance(v, (str, int, float))}
    out.attrs["binary"] = int(binary_data)
    drop = [c for c in out.coords if dim in out.coords[c].dims]
    return out.drop_vars(drop)


def _checked_counts(data: xr.Dataset, binary: bool, name: str, purpose: str) -> xr.Dataset:
    """A counts dataset (``n_runs``, ``n_success``) checked and passed through (see :func:`counts`)."""
    n = data["n_runs"]
    c = data["n_success"]
    nv = np.asarray(n.values, dtype=float)
    cv = np.asarray(c.values, dtype=float)
    bad = (nv < 0) | (nv != np.round(nv)) | (cv < 0) | (cv > nv) | ~np.isfinite(cv)
    if binary:
        bad |= cv != np.round(cv)
    if bad.any():
        raise HierbenchError(
            f"`{name}`: counts must satisfy 0 <= n_success <= n_runs"
            + (" with whole numbers of successes" if binary else "")
            + f"; {int(bad.sum())} cells do not, e.g. (n_success, n_runs) "
            f"{list(zip(cv[bad][:5].tolist(), nv[bad][:5].tolist(), strict=True))}"
        )
    if binary and not int(data.attrs.get("binary", 1)):
        raise PartialCreditError(
            f"`{name}`: {purpose} needs binary scores, and these counts were made from partial-credit "
            "scores (attrs['binary'] = 0). Binarise the scores first (e.g. score >= threshold)."
        )
    out = data.copy()
    out.attrs = dict(data.attrs)
    out.attrs.setdefault("binary", 1 if is_binary(cv[nv == 1]) else int(binary))
    return out


def partial_credit(score: xr.DataArray, first: int = 5) -> tuple[int, list[tuple]]:
    """How many scores are partial credit (finite and neither 0 nor 1), and the first ``first`` of them.

    Each is ``(*its coordinate labels in score's dim order, score)``; a dim without a coord gives the
    position. The one rule of what a binomial model refuses, for the library's error and the CLI's.
    """
    vals = np.asarray(score.values, dtype=float)
    partial = np.isfinite(vals) & (vals != 0.0) & (vals != 1.0)
    where = []
    for ix in np.argwhere(partial)[:first]:
        cell = [
            str(score[d].values[i]) if d in score.coords else int(i)
            for d, i in zip(score.dims, ix, strict=True)
        ]
        where.append((*cell, float(vals[tuple(ix)])))
    return int(partial.sum()), where


def partial_credit_error(score: xr.DataArray, name: str, purpose: str, why: str = "") -> PartialCreditError:
    """The error naming the first partial-credit scores (:func:`partial_credit`'s count and cells).

    ``why``: words after the cells, e.g. what the function would otherwise have done with them.
    """
    n, where = partial_credit(score)
    return PartialCreditError(
        f"`{name}`: {purpose} needs binary scores (every score 0 or 1); {counted(n, 'score')} "
        f"{'is' if n == 1 else 'are'} partial credit, e.g. ({', '.join(map(str, score.dims))}, score) {where}{why}. "
        "Binarise them first (e.g. `ds['score'] = (ds.score >= 1).where(ds.score.notnull())`) or use "
        "an estimator for continuous scores (bootstrap_ci)."
    )


#: a pass@k / pass^k repr's sentence when the tasks behind its values differ across ``k`` (freq's and the posterior's)
K_TASKS_DIFFER = (
    "n_tasks differs across k: each k averages only the tasks with at least k runs, so values at "
    "different k rest on different task sets and do not form one curve"
)


#: attr of a per-task label coord (``cluster``, ``tag``): the column of the records it was read from
SOURCE_COLUMN = "source_column"


def counted(n: int, noun: str) -> str:
    """``n`` with its noun, singular for one: ``counted(1, "agent")`` is "1 agent", else "n agents".

    Examples
    --------
    >>> counted(1, "agent"), counted(25, "agent"), counted(0, "task")
    ('1 agent', '25 agents', '0 tasks')
    """
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def missing_labels(values: Any) -> np.ndarray:
    """Which of a coord's labels are missing: None, NaN or ``""`` (the one rule for cluster and tag labels)."""
    return np.array(
        [v is None or (isinstance(v, float) and np.isnan(v)) or (isinstance(v, str) and v == "")
         for v in np.asarray(values, dtype=object).ravel()],
        dtype=bool,
    )  # fmt: skip


def cluster_label(data: xr.Dataset | xr.DataArray, cluster: str | None = "auto") -> str:
    """The name the clusters of ``data`` are called by: the column the user named (the one owner).

    A reader stores ``--cluster task_family`` as the coord ``cluster``, recording the column in
    the coord's ``source_column`` attr; every message and text that names the clusters says
    this name, never the internal ``cluster``. A coord without that attr (a dataset built by
    hand, or ``cluster="difficulty"`` naming a coord of its own) is called by its own name.

    Examples
    --------
    >>> import xarray as xr
    >>> s = xr.DataArray([0, 1], dims="task", coords={"cluster": ("task", ["a", "b"], {"source_column": "repo"})})
    >>> cluster_label(s), cluster_label(s.drop_vars("cluster").assign_coords(family=("task", ["a", "b"])), "family")
    ('repo', 'family')
    """
    key = "cluster" if cluster in ("auto", None) else str(cluster)
    coord = data.coords.get(key)
    return str(coord.attrs.get(SOURCE_COLUMN, key)) if coord is not None else key


def cluster_codes(
    data: xr.Dataset | xr.DataArray,
    cluster: str | None = "auto",
    *,
    dim: str = "task",
    missing: str = "singleton",
    name: str = "cluster",
) -> tuple[np.ndarray, np.ndarray] | None:
    """Map tasks to cluster codes (the one routine that does).

    Parameters
    ----------
    data : Dataset or DataArray
        Holds a coord along ``dim`` that names each task's cluster.
    cluster : str or None
        ``None``: no clusters (returns None). ``"auto"``: the coord ``cluster``
        when present, else None. Any other string: that coord, which must exist.
    missing : {"singleton", "refuse"}
        A task with no cluster label (``""``, None or NaN) is its own cluster
        (``"singleton"``, counted in a :class:`HierbenchWarning`) or an error.
        Missing labels are never pooled into one shared cluster.

    Returns
    -------
    (codes, labels) or None
        ``codes[t]`` in ``0..K-1`` for each task; ``labels[k]`` the cluster
        label as a string (a singleton's label is ``"<task label> (no cluster)"``).

    Examples
    --------
    >>> import xarray as xr
    >>> s = xr.DataArray([0, 1, 1], dims="task", coords={"cluster": ("task", ["a", "b", "a"])})
    >>> cluster_codes(s)[0].tolist()
    [0, 1, 0]
    """
    if cluster is None:
        return None
    check_choice(missing, "missing", ["singleton", "refuse"])
    key = "cluster" if cluster == "auto" else cluster
    if key not in data.coords:
        if cluster == "auto":
            return None
        raise ValueError(
            f"`{name}` must name a coord along {dim!r}; got {cluster!r} (coords {list(data.coords)})"
        )
    coord = data.coords[key]
    if coord.dims != (dim,):
        raise ValueError(
            f"`{name}`: coord {key!r} must lie along {dim!r}; it has dims {coord.dims}"
        )
    raw = np.asarray(coord.values, dtype=object)
    is_missing = missing_labels(raw)
    labels = np.array([str(v) for v in raw], dtype=object)
    if is_missing.any():
        label = cluster_label(data, key)
        tasks = (
            np.asarray(data[dim].values).astype(str)
            if dim in data.coords
            else np.arange(raw.size).astype(str)
        )
        if missing == "refuse":
            column = f" (column {label!r})" if label != key else ""
            raise HierbenchError(
                f"`{name}`: {int(is_missing.sum())} tasks have no cluster label in coord {key!r}"
                f"{column}, e.g. {tasks[is_missing][:5].tolist()}; label them, or pass "
                "missing='singleton'"
            )
        warnings.warn(
            f"{int(is_missing.sum())} of {raw.size} tasks have no {label!r} label (e.g. "
            f"{tasks[is_missing][:5].tolist()}); each is treated as a cluster of its own",
            HierbenchWarning,
            stacklevel=2, skip_file_prefixes=OUTSIDE_PACKAGE,
        )
        labels = labels.copy()
        labels[is_missing] = [f"{t} (no cluster)" for t in tasks[is_missing]]
    uniq, codes = np.unique(labels.astype(str), return_inverse=True)
    return codes.astype(np.intp), uniq.astype(object)


#: the attr that holds the fingerprint of the data a fit saw (a count model's counts, a formula model's design)
DATA_HASH = "hierbench_data_hash"
#: the attr that holds the fingerprint of the log's score cells a result or a fit came from (``counts_fingerprint``)
COUNTS_HASH = "hierbench_counts_hash"


def data_hash(counts: xr.Dataset) -> str:
    """sha256 of the count grids and their labels (what a count model sees).

    ``counts`` holds ``n_runs`` and ``n_success`` over (agent, task), cells not
    run at 0, and string labels, as a count model's builder prepares them;
    ``hierbench._base.counts_fingerprint`` makes that form from an eval dataset.
    """
    h = hashlib.sha256()
    for name in ("n_runs", "n_success"):
        da = counts[name].transpose("agent", "task")
        h.update(name.encode())
        h.update(np.ascontiguousarray(da.values, dtype=np.float64).tobytes())
    for dim in ("agent", "task"):
        h.update(json.dumps([str(v) for v in counts[dim].values]).encode())
    if "cluster" in counts.coords:
        h.update(json.dumps([str(v) for v in counts["cluster"].values]).encode())
    return h.hexdigest()


def counts_fingerprint(data: Any) -> str:
    """The fingerprint of a log's score cells (runs and score sums per agent and task), or "".

    ``data`` is an eval dataset (``score`` over agent, task, run) or a counts
    dataset (``n_runs``, ``n_success``). The cells are put in the form a count
    model's builder gives them (cells not run at 0, labels as text, a task
    without a cluster its own cluster), so for 0/1 scores this is the
    ``data_hash`` a count model records; a formula model records it too. A
    frequentist result and any fit of the same log then carry the same
    fingerprint (``hierbench_counts_hash``), whatever the model, and
    ``hierbench.compare.side_by_side`` can tell logs apart. Data without agent
    and task dims have none ("").

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> s = xr.DataArray(np.array([[[1.0, 0.0], [1.0, np.nan]]]), dims=("agent", "task", "run"),
    ...                  coords={"agent": ["a"], "task": ["t1", "t2"]})
    >>> fp = counts_fingerprint(xr.Dataset({"score": s}))
    >>> len(fp), fp == counts_fingerprint(xr.Dataset({"score": s.fillna(0)}))
    (64, False)
    """
    if not isinstance(data, xr.Dataset):
        return ""
    if "score" in data:
        score = data["score"]
        if set(score.dims) != {"agent", "task", "run"}:
            return ""
        tally = xr.Dataset({"n_runs": score.notnull().sum("run"), "n_success": score.fillna(0).sum("run")})
    elif {"n_runs", "n_success"} <= set(data.data_vars) and set(data["n_runs"].dims) == {"agent", "task"}:
        tally = data[["n_runs", "n_success"]]
    else:
        return ""
    n = tally["n_runs"].transpose("agent", "task").fillna(0).values.astype(np.int64)
    y = tally["n_success"].transpose("agent", "task").fillna(0).values.astype(np.float64)
    coords = {"agent": np.asarray(tally["agent"].values).astype(str), "task": np.asarray(tally["task"].values).astype(str)}
    if "cluster" in tally.coords and tally.coords["cluster"].dims == ("task",):
        with warnings.catch_warnings():  # the estimator that reads the clusters says so itself
            warnings.simplefilter("ignore")
            codes, labels = cluster_codes(tally, "cluster", dim="task")
        coords["cluster"] = ("task", np.asarray(labels, dtype=str)[codes])
    return data_hash(xr.Dataset({"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), y)}, coords=coords))
