"""A model description users can read: an lme4 / Bambi formula resolved against an eval dataset.

``score ~ 1 + scaffold + log_minutes + (1|model) + (1|scaffold:model) + (1|task)``
says: a fixed intercept, a fixed effect per scaffold and per log human
minute, and random intercepts for models, scaffold x model combinations and
tasks. The formula is parsed by ``formulae`` (the parser Bambi uses; it
reads the ``(expr|group)`` terms of the mixed-model convention), and its
names are looked up in the eval dataset:

- ``agent``, ``task`` and ``run`` are the dataset's own dims;
- a coord along ``agent`` (``model``, ``scaffold``, a release date) is an
  agent-level variable, a coord along ``task`` (``tier``, ``human_minutes``,
  a task's date) a task-level one; a variable over ``(agent, task)`` is a
  cell-level one and over ``(agent, task, run)`` a run-level one (a judge);
- the response is ``score`` or another per-run variable (a grade).

:func:`model_design` returns a :class:`ModelDesign`: the fixed-effect
matrix, the random terms (each a grouping with its levels and, per design
row, the level's code and the slope's value), the response aggregated per
design row, and the decisions made on the way with their reasons. Both
halves consume it: :func:`hierbench.freq.fit_crossed_ml` maximises its
likelihood, and a Bayesian builder reads the same matrices.

Nothing is guessed silently. A name the dataset does not hold, a covariate
that differed between the records of one agent or task when the log was
read, a missing covariate value, a fixed-effect column that is a linear
combination of the others, or a random term the design cannot tell apart
from another term is refused with a :class:`FormulaError` naming it; a
factor level seen in one combination only (a scaffold run with one model)
is kept and reported by a :class:`ConfoundedTermWarning`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from .._base import HierbenchError
from .._base import HierbenchWarning
from .._base import UnidentifiedTermWarning
from .._base import check_choice
from .._base import counted
from .._base import counts
from .._base import unidentified_by_design
from .._base import warn_user
from ._values import grade_key
from ._values import grade_levels
from ._values import grade_names
from ._values import grade_rule
from ._values import grade_scale
from ._values import grades_at
from ._values import labels_attr
from ._values import levels_attr

__all__ = [
    "DEFAULT_FORMULA",
    "ConfoundedTermWarning",
    "FormulaError",
    "ModelDesign",
    "RandomTerm",
    "model_design",
]

#: today's crossed model: an ability per agent, random task and agent x task effects. On ordinal (graded)
#: scores, whose thresholds are the intercept, it is fitted as ``score ~ agent + ...`` (a reference agent),
#: said in a warning and in ``ModelDesign.decisions["formula"]``
DEFAULT_FORMULA = "score ~ 0 + agent + (1|task) + (1|agent:task)"

Family = Literal["auto", "binomial", "fractional", "ordinal"]
_LEVELS = ("agent", "task", "cell", "run")


class FormulaError(HierbenchError):
    """A formula that cannot be resolved against the data, or a term the design cannot identify."""


class ConfoundedTermWarning(HierbenchWarning):
    """Some levels of a factor occur in one combination only: their effect and the interaction's are one."""


@dataclass(frozen=True)
class RandomTerm:
    """One scalar random-effect term ``(expr | grouping)`` of a :class:`ModelDesign`.

    Attributes
    ----------
    name : str
        As formulae writes it, e.g. ``"1|model"`` or ``"log_minutes|agent"``.
    grouping : tuple of str
        The grouping variables (``("scaffold", "model")`` for ``scaffold:model``).
    levels : ndarray of str
        The grouping's levels (combinations joined by ``":"``).
    codes : ndarray of int (rows,)
        The level of each design row.
    slope : ndarray of float (rows,)
        The term's covariate in each row (1 for an intercept).
    level : {"agent", "task", "cell", "run"}
        Where the grouping is constant: an agent-level grouping (``model``)
        holds whole agents, a task-level one whole tasks.
    """

    name: str
    grouping: tuple[str, ...]
    levels: np.ndarray
    codes: np.ndarray
    slope: np.ndarray
    level: str

    @property
    def intercept(self) -> bool:
        """Whether the term is a random intercept."""
        return bool(np.all(self.slope == 1.0))


@dataclass(frozen=True, repr=False)
class ModelDesign:
    """A formula resolved against an eval dataset (:func:`model_design`).

    Attributes
    ----------
    formula, family, response : str
        As given (``family`` resolved from ``"auto"``).
    row_level : {"cell", "run"}
        A design row is one (agent, task) cell, or one run when a variable
        in the formula varies between runs.
    frame : pandas.DataFrame
        One row per design row: ``agent``, ``task`` (and ``run``) labels and
        every covariate the formula uses.
    X : ndarray (rows, p)
        The fixed-effect matrix; ``coef`` names its columns and
        ``fixed_terms`` maps each term to its columns; :meth:`matrix` builds it
        for other rows (``builder``, formulae's matrix, does so).
    random : list of RandomTerm
    variables : dict
        Each variable the formula uses -> its level (agent, task, cell, run).
    y, n : ndarray (rows,)
        Sum of the response and number of runs per design row (binomial and
        fractional); ``ss`` the within-row sum of squared deviations.
    categories : ndarray or None
        The ordinal scale (the response's values in order); ``grade_counts``
        (rows, K) the runs per category.
    labels : tuple of str or None
        The words the grades of a ``score`` read from labels were written as
        (``attrs["score_labels"]``), one per category (their places ``0..L-1``);
        None for numeric grades and for other families.
    scored_grades : bool
        Whether the dataset's response holds each grade's place in [0, 1] (a ``score``
        read with ``from_records(score_levels=...)``): a ``threshold`` may then be given
        as that score too (:meth:`threshold_grade`).
    agents, tasks : ndarray of str
        The dataset's labels; ``agent_index`` / ``task_index`` (rows,) locate
        each design row.
    decisions : dict
        What was decided (family, row level, dropped intercept, ...) and why.
    """

    formula: str
    family: str
    response: str
    row_level: str
    frame: pd.DataFrame
    X: np.ndarray
    coef: list[str]
    fixed_terms: dict[str, slice]
    random: list[RandomTerm]
    variables: dict[str, str]
    y: np.ndarray
    n: np.ndarray
    ss: np.ndarray
    agents: np.ndarray
    tasks: np.ndarray
    agent_index: np.ndarray
    task_index: np.ndarray
    categories: np.ndarray | None = None
    grade_counts: np.ndarray | None = None
    decisions: dict[str, str] = field(default_factory=dict)
    labels: tuple[str, ...] | None = None
    builder: Any = field(default=None, compare=False)
    scored_grades: bool = False

    def matrix(self, frame: pd.DataFrame) -> np.ndarray:
        """The fixed-effect matrix of other rows (a counterfactual frame: same columns, known levels)."""
        if self.builder is None:
            return np.zeros((len(frame), 0))
        X = np.asarray(self.builder.evaluate_new_data(frame)).astype(float)
        if "Intercept" in self.builder.terms and self.family == "ordinal":
            X = np.delete(X, self.builder.slices["Intercept"], axis=1)
        return X

    def reader_scale(self, threshold: float | str | None = None) -> tuple[float, str]:
        """The factor to the reader's scale and its label, the one rule of both halves' effects.

        Points (100 x a probability or a mean score), or grades for an ordinal fit; with
        ``threshold`` (ordinal only; :meth:`threshold_grade`) the share graded at least that
        grade, named by its label when the grades were written as words.
        """
        if self.family == "ordinal" and threshold is None:
            return 1.0, f"mean grade (of {self.response}, scale {grade_key(self.categories, self.labels)})"
        if self.family == "ordinal":
            return 100.0, f"points of the share graded >= {self.grade_name(threshold)}"
        if threshold is not None:
            raise HierbenchError(f"`threshold` applies to an ordinal fit only; this fit's family is {self.family!r}")
        what = "success rate" if self.family == "binomial" else f"mean {self.response}"
        return 100.0, f"points of {what}"

    def threshold_grade(self, threshold: float | str) -> float:
        """The grade of the scale (``categories``) a ``threshold`` names: the one reading of it.

        A grade of the scale; a label, when the grades were written as words (``labels``);
        or the score the dataset holds for a grade (its place in [0, 1], ``scored_grades``).
        It must name a grade above the lowest, and only one: a number that is one grade
        and the score of another (1 on the places 0, 1, 2 of no / perhaps / yes) is refused.
        """
        cats = np.asarray(self.categories, dtype=float)
        key = grade_key(cats, self.labels)
        words = list(self.labels or ())
        if isinstance(threshold, str):
            if threshold not in words:
                raise HierbenchError(f"`threshold` {threshold!r} is no grade label of the scale ({key})"
                                     if words else f"`threshold` must be a number: the grades {cats.tolist()} have no labels")  # fmt: skip
            found = {float(cats[words.index(threshold)]): "by its label"}
        elif isinstance(threshold, bool) or not isinstance(threshold, int | float | np.integer | np.floating):
            raise HierbenchError(f"`threshold` must be a grade, a grade's label or its score; got {threshold!r}")
        else:
            found = {float(threshold): "as a grade"} if float(threshold) in cats else {}
            g = cats[0] + float(threshold) * (cats[-1] - cats[0])
            near = np.abs(cats - g) <= 1e-9 * (cats[-1] - cats[0])
            if self.scored_grades and 0.0 <= float(threshold) <= 1.0 and near.any():
                found.setdefault(float(cats[near.argmax()]), f"as the score the data hold for it, {float(threshold):g}")
        if len(found) > 1:
            each = " or ".join(f"{self.grade_name(g, check=False)} ({why})" for g, why in found.items())
            meant = "label" if words else "grade"
            raise HierbenchError(f"`threshold` {threshold!r} names two grades of the scale {key}: {each}; give the {meant} of the one meant")
        if not found or next(iter(found)) == cats[0]:
            raise HierbenchError(
                f"`threshold` must name a grade above the lowest of the scale {key}: the grade, its label"
                + (f", or its score in [0, 1] ({grade_rule(cats, self.labels)})" if self.scored_grades else "")
                + f"; got {threshold!r}" + (" (the lowest grade: every answer passes)" if found else "")
            )
        return next(iter(found))

    def threshold_cut(self, threshold: float | str) -> int:
        """The place ``c`` of the grade a ``threshold`` names (:meth:`threshold_grade`).

        The share graded at least it is ``P(y >= c) = expit(eta - theta[c - 1])``, ``theta`` the
        ordered cut-points: the one index of the Bayesian metrics' pass event and shares.
        """
        return int(np.searchsorted(np.asarray(self.categories, dtype=float), self.threshold_grade(threshold)))

    def grade_name(self, threshold: float | str, check: bool = True) -> str:
        """A threshold's grade as outputs write it: its label (``yes``), else the grade (``4``)."""
        g = self.threshold_grade(threshold) if check else float(threshold)
        cats = np.asarray(self.categories, dtype=float)
        return grade_names(cats, self.labels)[int(np.flatnonzero(cats == g)[0])]

    def counterfactuals(self, variable: str) -> tuple[list[str], list[np.ndarray], float]:
        """Fixed-effect matrices with ``variable`` set to each level, or nudged by +-h.

        Categorical (and 0/1) variables take each level (the third value is 0); numeric
        ones are nudged by +-h (the third value is then ``2 h``). A variable with a random
        slope is refused.
        """
        frame = self.frame
        if variable not in self.variables or variable not in frame.columns:
            raise HierbenchError(
                f"`variable` must be a variable of the fit's formula, {sorted(self.variables)}; got {variable!r}"
            )
        for t in self.random:
            if not t.intercept and variable in t.name.split("|", 1)[0]:
                raise HierbenchError(f"`variable` {variable!r} has a random slope ({t.name}): not supported")
        col = frame[variable]
        binary = set(pd.unique(col).tolist()) <= {0, 1}
        if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col) and not binary:
            h = 1e-4 * max(float(np.nanstd(col.to_numpy(dtype=float))), 1e-8)
            nudged = [frame.assign(**{variable: col.to_numpy(dtype=float) + sgn * h}) for sgn in (1.0, -1.0)]
            return [f"d/d {variable}"], [self.matrix(fr) for fr in nudged], 2 * h
        levels = sorted(pd.unique(col).tolist(), key=str)
        return [str(v) for v in levels], [self.matrix(frame.assign(**{variable: lev})) for lev in levels], 0.0

    def groups(self, by: str | None, name: str = "by") -> tuple[np.ndarray, list[str]]:
        """Each design row's group code and the groups' labels (sorted text), for averages within ``by``.

        ``by`` is a column of ``frame`` (a variable of the formula, or ``"agent"`` /
        ``"task"``); None puts every row in one group, ``"all"``.
        """
        if by is None:
            return np.zeros(len(self.frame), np.intp), ["all"]
        if by not in self.frame.columns:
            raise HierbenchError(
                f"`{name}` must be 'agent', 'task' or a variable of the fit's formula, {sorted(self.variables)}; got {by!r}"
            )
        labels, codes = np.unique(self.frame[by].astype(str).to_numpy(), return_inverse=True)
        return codes.astype(np.intp), labels.tolist()

    def agent_rows(self) -> np.ndarray:
        """The first design row of each agent, in the order of ``agents`` (where agent-level values are read)."""
        return pd.Series(np.arange(len(self.frame))).groupby(self.agent_index).first().to_numpy()

    def agent_terms(self) -> tuple[list[str], list[int], list[str]]:
        """The terms that split the agents' variance, the one rule of both halves.

        Fixed terms whose every variable is agent-level (not the intercept), the indices of
        the agent-level random terms, and the names of both in that order; a formula with
        neither is refused.
        """
        fixed = [t for t in self.fixed_terms
                 if t != "Intercept" and all(self.variables.get(v) == "agent" for v in t.split(":"))]  # fmt: skip
        rand = [k for k, t in enumerate(self.random) if t.level == "agent"]
        names = [*fixed, *(self.random[k].name for k in rand)]
        if not names:
            raise HierbenchError(f"the formula {self.formula!r} has no agent-level term to split the agents' variance into")
        return fixed, rand, names

    def fingerprint(self) -> str:
        """sha256 of what a formula model sees, whatever the order of the log's records.

        The formula, the family and every design row (its agent and task, fixed-effect row,
        response, runs, grade counts and each random term's level and slope), the rows sorted:
        a fit records it (``hierbench_data_hash``), and the same log read the same way, or with
        its records in another order, gives the same fingerprint, so a report can tell the log
        the fit was made from.
        """
        import hashlib

        cols: dict[str, Any] = {"agent": self.agents[self.agent_index].astype(str),
                                "task": self.tasks[self.task_index].astype(str), "y": self.y, "n": self.n, "ss": self.ss}  # fmt: skip
        cols |= {f"x:{c}": self.X[:, j] for j, c in enumerate(self.coef)}
        if self.grade_counts is not None:
            cols |= {f"g:{k}": self.grade_counts[:, k] for k in range(self.grade_counts.shape[1])}
        for t in self.random:
            cols |= {f"r:{t.name}": np.asarray(t.levels, dtype=str)[t.codes], f"s:{t.name}": t.slope}
        rows = pd.DataFrame(cols)
        rows = rows.sort_values(list(rows.columns), kind="mergesort", ignore_index=True)
        h = hashlib.sha256(f"{self.formula}|{self.family}|{self.row_level}|{list(rows.columns)}".encode())
        h.update(pd.util.hash_pandas_object(rows, index=False).to_numpy().tobytes())
        return h.hexdigest()

    def __repr__(self) -> str:
        lines = [
            f"ModelDesign: {self.formula}  [{self.family}]",
            f"  {self.X.shape[0]} design rows ({self.row_level}s), {int(self.n.sum())} runs, "
            f"{counted(self.agents.size, 'agent')} x {counted(self.tasks.size, 'task')}",
            f"  fixed: {', '.join(self.coef) if self.coef else '(none)'}",
        ]
        for t in self.random:
            lines.append(f"  random: ({t.name})  {t.levels.size} levels, {t.level}-level")
        if self.categories is not None:
            lines.append(f"  scale: {grade_key(self.categories, self.labels)}")
        lines += [f"  {k}: {v}" for k, v in self.decisions.items()]
        return "\n".join(lines)


# --------------------------------------------------------------------------- variables


def _variables(data: xr.Dataset, response: str) -> dict[str, tuple[str, xr.DataArray]]:
    """Every name a formula may use -> (level, values)."""
    out: dict[str, tuple[str, xr.DataArray]] = {}
    for name, var in {**data.coords, **data.data_vars}.items():
        dims = tuple(var.dims)
        if dims == ("agent",):
            out[str(name)] = ("agent", var)
        elif dims == ("task",):
            out[str(name)] = ("task", var)
        elif set(dims) == {"agent", "task"}:
            out[str(name)] = ("cell", var.transpose("agent", "task"))
        elif set(dims) == {"agent", "task", "run"}:
            out[str(name)] = ("run", var.transpose("agent", "task", "run"))
    for d, lev in (("agent", "agent"), ("task", "task")):
        out[d] = (lev, xr.DataArray(np.asarray(data[d].values).astype(str), dims=d))
    if "run" in data.dims:
        out["run"] = ("run", xr.DataArray(np.asarray(data["run"].values).astype(str), dims="run"))
    if response not in out or out[response][0] != "run":
        have = sorted(k for k, (lev, _) in out.items() if lev == "run" and k != "run")
        raise FormulaError(
            f"`formula`: the response {response!r} must be a per-run variable of `data` (dims agent, "
            f"task, run); per-run variables here: {have}"
        )
    return out


def _with_covariates(data: Any, agent_coords: Any, task_coords: Any) -> xr.Dataset:
    """The eval dataset ``data`` (refused when it is none) with the covariate tables joined as coords."""
    if not isinstance(data, xr.Dataset) or not {"agent", "task"} <= set(data.dims):
        raise FormulaError("`data` must be an eval dataset with dims agent, task (and run)")
    return _join_coords(_join_coords(data, agent_coords, "agent", "agent_coords"), task_coords, "task", "task_coords")


def _join_coords(data: xr.Dataset, table: Any, dim: str, argname: str) -> xr.Dataset:
    """Add the columns of a per-agent / per-task table as coords along ``dim``, checked."""
    if table is None:
        return data
    if not isinstance(table, pd.DataFrame):
        raise FormulaError(f"`{argname}` must be a pandas DataFrame indexed by {dim} label")
    tab = table.copy()
    tab.index = tab.index.astype(str)
    for col in tab.columns:
        if col in data.coords or col in data.data_vars:
            raise FormulaError(f"`{argname}`: column {col!r} is already a variable of `data`")
        varies = tab.groupby(level=0)[col].nunique(dropna=False)
        bad = varies[varies > 1].index.tolist()
        if bad:
            raise FormulaError(
                f"`{argname}`: covariate {col!r} is not constant within its {dim}: {len(bad)} "
                f"{dim}s have more than one value, e.g. {bad[:5]}"
            )
    tab = tab[~tab.index.duplicated()]
    labels = np.asarray(data[dim].values).astype(str)
    missing = sorted(set(labels) - set(tab.index))
    if missing:
        raise FormulaError(
            f"`{argname}` has no row for {len(missing)} {dim}s of `data`, e.g. {missing[:5]}"
        )
    tab = tab.loc[labels]
    return data.assign_coords({c: (dim, tab[c].to_numpy()) for c in tab.columns})


def _check_names(used: set[str], avail: dict, data: xr.Dataset) -> None:
    """Unknown names are refused, with the covariates ``data`` holds by level.

    A covariate with two values in one agent or task is refused by the reader (``from_records``);
    one given in some records of a task and empty in others takes that one value there, warned and
    counted when the log was read (``attrs['inconsistent_attributes']``), so a formula may use it.
    """
    unknown = sorted(used - set(avail))
    if unknown:
        by = {lev: sorted(k for k, (lv, _) in avail.items() if lv == lev) for lev in _LEVELS}
        raise FormulaError(
            f"`formula` uses {unknown}, which `data` does not hold{_reader_dims_hint(unknown, data)} "
            f"Agent-level: {by['agent']}; task-level: {by['task']}; cell-level: {by['cell']}; per-run: "
            f"{by['run']} (add agent / task covariates as coords, e.g. from_records(agent_coords=[...]) "
            "or model_design(agent_coords=table))"
        )


def _reader_dims_hint(unknown: list[str], data: xr.Dataset) -> str:
    """What to write for a column the reader put on the dim ``agent`` or ``task`` (named in its attrs)."""
    named = [
        f"{col!r} is the column the reader read as the {dim}s (attrs['{dim}_column']): the dataset "
        f"calls it `{dim}`, so write {dim}, e.g. (1|{dim})"
        for dim in ("agent", "task")
        if (col := data.attrs.get(f"{dim}_column")) in unknown and col != dim
    ]
    if named:
        return ": " + "; ".join(named) + "."
    cols = [repr(data.attrs[f"{d}_column"]) for d in ("agent", "task") if f"{d}_column" in data.attrs]
    here = f" (here the columns {' and '.join(cols)})" if len(cols) == 2 else ""
    return (
        ". A reader puts the log's agent and task columns, whatever they are called, on the dims "
        f"`agent` and `task`{here}: a formula names them agent and task, e.g. (1|agent)."
    )


def _level_of(levels: list[str]) -> str:
    """The level of a combination of variables: agent x task variables make a cell-level one."""
    s = set(levels)
    if "run" in s:
        return "run"
    if "cell" in s or {"agent", "task"} <= s:
        return "cell"
    return s.pop() if len(s) == 1 else "cell"


# --------------------------------------------------------------------------- design rows


def _rows(avail: dict, used: set[str], response: str) -> tuple[str, tuple, dict[str, np.ndarray]]:
    """The design rows (cells, or runs when a per-run variable is used) and their covariates."""
    resp = np.asarray(avail[response][1].values, dtype=float)
    run_level = any(avail[v][0] == "run" for v in used if v != response)
    if run_level:
        idx = np.nonzero(np.isfinite(resp))
    else:
        idx = np.nonzero(np.isfinite(resp).any(-1))
    cols: dict[str, np.ndarray] = {}
    for v in sorted(used - {response}):
        lev, da = avail[v]
        vals = np.asarray(da.values)
        if lev == "agent":
            cols[v] = vals[idx[0]]
        elif lev == "task":
            cols[v] = vals[idx[1]]
        elif lev == "cell":
            cols[v] = vals[idx[0], idx[1]]
        else:
            cols[v] = vals[idx[2]] if v == "run" else vals[idx]
    return ("run" if run_level else "cell"), idx, cols


def _design_rows(
    data: xr.Dataset, avail: dict, used: set[str], response: str, resp: np.ndarray, fam: str, levels: Any
) -> tuple:
    """The design rows: ``(row_level, idx, agents, tasks, r, frame)``.

    ``idx`` the rows' (agent, task[, run]) indices, ``agents`` and ``tasks`` the labels,
    ``r`` the response per row (:func:`_response`, from its values ``resp``, family and
    grade scale) and ``frame`` what formulae reads: labels, covariates and the response's
    mean per row. A missing covariate is refused.
    """
    row_level, idx, cols = _rows(avail, used, response)
    agents = np.asarray(data["agent"].values).astype(str)
    tasks = np.asarray(data["task"].values).astype(str)
    _check_missing(cols, agents, tasks, idx)
    r = _response(resp, idx, row_level, fam, levels, data, response)
    frame = pd.DataFrame({"agent": agents[idx[0]], "task": tasks[idx[1]], **cols})
    frame[response] = r["y"] / r["n"]
    return row_level, idx, agents, tasks, r, frame


def _check_missing(cols: dict[str, np.ndarray], agents: np.ndarray, tasks: np.ndarray, idx: tuple) -> None:
    for v, vals in cols.items():
        miss = pd.isna(pd.Series(vals, dtype=object)).to_numpy()
        if miss.any():
            where = list(zip(agents[idx[0][miss]][:5], tasks[idx[1][miss]][:5], strict=True))
            raise FormulaError(
                f"`data`: covariate {v!r} is missing for {int(miss.sum())} design rows, e.g. (agent, "
                f"task) {where}; nothing is dropped silently: fill it, or select those rows out first"
            )


def _response(
    resp: np.ndarray, idx: tuple, row_level: str, family: str, levels: Any, data: xr.Dataset, response: str
) -> dict[str, Any]:
    """The response per design row: sums, counts, within-row sums of squares, grade counts."""
    vals = resp[idx] if row_level == "run" else resp[idx[0], idx[1]]
    vals = vals.reshape(len(idx[0]), -1)
    fin = np.isfinite(vals)
    n = fin.sum(1).astype(float)
    y = np.where(fin, vals, 0.0).sum(1)
    mean = y / n
    ss = np.where(fin, (vals - mean[:, None]) ** 2, 0.0).sum(1)
    out: dict[str, Any] = {"y": y, "n": n, "ss": ss, "categories": None, "grade_counts": None}
    if family == "binomial":
        counts(xr.Dataset({"score": (("row", "run"), vals)}), binary=True, name="data",
               purpose=f"family='binomial' (response {response!r})")  # fmt: skip
    elif family == "fractional" and (np.nanmin(vals) < 0 or np.nanmax(vals) > 1):
        raise FormulaError(
            f"`family='fractional'` needs the response {response!r} in [0, 1]; its range is "
            f"[{np.nanmin(vals):g}, {np.nanmax(vals):g}]"
        )
    if family == "ordinal":
        out["categories"], out["grade_counts"] = _grades(vals, fin, levels, response)
    return out


def _grades(
    vals: np.ndarray, fin: np.ndarray, levels: Any, response: str
) -> tuple[np.ndarray, np.ndarray]:
    seen = np.unique(vals[fin])
    cats = grade_scale(seen if levels is None else levels, "levels", FormulaError)
    outside = sorted(set(seen.tolist()) - set(cats.tolist()))
    if outside:
        raise FormulaError(f"the response {response!r} takes values {outside} outside `levels` {cats.tolist()}")
    code = np.searchsorted(cats, np.where(fin, vals, cats[0]))
    K = cats.size
    gc = np.stack([((code == k) & fin).sum(1) for k in range(K)], axis=1).astype(float)
    _refuse_unused_grades(cats, gc.sum(0), response)
    return cats, gc


def _refuse_unused_grades(cats: np.ndarray, n_per_grade: np.ndarray, response: str) -> None:
    """The ordinal fit's rule: every grade of the scale occurs (a grade no run has leaves its thresholds unidentified)."""
    empty = cats[np.asarray(n_per_grade) == 0]
    if empty.size:
        raise FormulaError(
            f"grades {empty.tolist()} of the scale {cats.tolist()} never occur in {response!r}: their "
            "thresholds are not identified. Merge them with a neighbour in `levels` (or in the data)"
        )


def check_grade_scale(data: xr.Dataset) -> None:
    """Refuse ``score`` read on a grade scale (more than two grades) of which some grade never occurs.

    The ordinal fit's own rule (``_refuse_unused_grades``, the same :class:`FormulaError`), read
    before any fit (``hierbench validate`` says it as a warning: the data are valid, the ordinal
    formula model, the only one such a scale is fitted with, refuses them). Data without a
    recorded grade scale pass.
    """
    scale, grades, _ = _read_grades(data, "score", None)
    if grades is None or len(scale) <= 2:
        return
    cats = np.asarray(scale, dtype=float)
    _refuse_unused_grades(cats, (grades[..., None] == cats).reshape(-1, cats.size).sum(0), "score")


def _label_levels(data: xr.Dataset, response: str, words: tuple[str, ...]) -> None:
    """Refuse ``levels`` given as words unless they are the labels ``score`` was read from, in that order."""
    have = labels_attr(data.attrs) if response == "score" else None
    if have == list(words):
        return
    if response != "score":
        why = f"only `score` can be read from labels, and the response is {response!r}"
    elif have is None:
        why = "`score` was not read from labels (no attrs['score_labels']): give its numeric scale"
    else:
        why = f"`score` was read from the labels {have!r} (attrs['score_labels']): give those, in that order"
    raise FormulaError(f"`levels` {list(words)!r} are labels, but {why}, or leave `levels` out")


def _read_grades(data: xr.Dataset, response: str, levels: Any) -> tuple[Any, np.ndarray | None, tuple[str, ...] | None]:
    """(levels, grades, labels) of a response: a ``score`` read from ordinal grades is fitted on their scale.

    ``attrs["score_levels"]`` is that scale; the grades are recovered exactly; ``labels`` the
    words they were written as (``attrs["score_labels"]``, None for numeric grades). ``levels``
    as words must be those labels (their places ``0..L-1`` are the scale). Any other
    response: (``levels``, None, None).
    """
    if levels is not None:
        scale, words = grade_levels(levels, "levels", FormulaError)
        if words is not None:
            _label_levels(data, response, words)
            levels = scale.tolist()
    recorded = levels_attr(data.attrs)
    if response != "score" or not recorded:
        return levels, None, None
    scale = grade_scale(recorded, "score_levels", FormulaError)
    given = None if levels is None else grade_scale(levels, "levels", FormulaError)
    if given is not None and not np.array_equal(given, scale):
        raise FormulaError(
            f"`levels` {given.tolist()} differ from the grade scale `score` was "
            f"read on, {scale.tolist()} (attrs['score_levels']): give that scale, or leave `levels` out"
        )
    score = data["score"].transpose("agent", "task", "run").values
    labels = labels_attr(data.attrs)
    return scale.tolist(), grades_at(score, scale, FormulaError), None if labels is None else tuple(labels)


def _resolve_family(family: str, resp: np.ndarray, levels: Any) -> tuple[str, str]:
    check_choice(family, "family", ["auto", "binomial", "fractional", "ordinal"])
    if family != "auto":
        return family, "as requested"
    if levels is not None:
        return "ordinal", "`levels` declares a grade scale"
    v = resp[np.isfinite(resp)]
    if np.all((v == 0.0) | (v == 1.0)):
        return "binomial", "every score is 0 or 1"
    return "fractional", "scores in [0, 1] with partial credit"  # each half states its own likelihood


def _family(
    data: xr.Dataset, avail: dict, response: str, family: str, levels: Any
) -> tuple[np.ndarray, Any, str, str, tuple[str, ...] | None]:
    """The response's values (agent, task, run), its grade scale, its family, why that family, its labels.

    A ``score`` read from ordinal grades and fitted as ordinal: the grades themselves
    (:func:`_read_grades`), and the words they were written as (None for numeric grades).
    """
    resp = np.asarray(avail[response][1].values, dtype=float)
    levels, grades, labels = _read_grades(data, response, levels)
    fam, why = _resolve_family(family, resp, levels)
    if grades is not None and fam == "ordinal":  # `score` read from grades: fit the grades
        resp = grades
    return resp, levels, fam, why, labels if fam == "ordinal" else None


# --------------------------------------------------------------------------- matrices


def _matrices(formula: str, frame: pd.DataFrame) -> tuple[np.ndarray, list[str], dict[str, slice], Any, Any]:
    import formulae

    try:
        dm = formulae.design_matrices(formula, frame, na_action="error", extra_namespace={"np": np})
    except Exception as exc:  # formulae raises many kinds; say which formula and why
        _refuse_single_levels(formula, frame, exc)
        raise FormulaError(f"`formula` {formula!r} could not be built: {type(exc).__name__}: {exc}") from exc
    if dm.common is None:
        return np.zeros((len(frame), 0)), [], {}, dm.group, None
    X = np.asarray(dm.common).astype(float)
    coef: list[str] = []
    terms: dict[str, slice] = {}
    for name, term in dm.common.terms.items():
        sl = dm.common.slices[name]
        if sl.stop <= sl.start:
            _refuse_empty_term(formula, name, frame)
        terms[name] = sl
        labels = getattr(term, "labels", None) or [name]
        coef += list(labels)
    return X, coef, terms, dm.group, dm.common


def _single_levels(names: list[str], frame: pd.DataFrame) -> str:
    """``factor 'lab' has a single level in the data, 'only'`` for each such non-numeric column of ``names``."""
    cols = [v for v in dict.fromkeys(names) if v in frame.columns and frame[v].nunique() < 2
            and not pd.api.types.is_numeric_dtype(frame[v])]  # fmt: skip
    return "; ".join(f"factor {v!r} has a single level in the data, {pd.unique(frame[v])[0]!r}" for v in cols)


def _refuse_single_levels(formula: str, frame: pd.DataFrame, exc: Exception) -> None:
    """A fixed part that formulae could not build, naming a one-level factor: say so (an interaction with it)."""
    import re

    fixed = re.sub(r"\([^()]*\|[^()]*\)", "", formula.split("~", 1)[-1])
    what = _single_levels(re.findall(r"[A-Za-z_][A-Za-z_0-9.]*", fixed), frame)
    if what:
        raise FormulaError(
            f"`formula` {formula!r} could not be built ({type(exc).__name__}: {exc}); {what}: a single level has "
            "no effect to tell from the intercept's. Drop it from the formula's fixed terms"
        ) from exc


def _refuse_empty_term(formula: str, name: str, frame: pd.DataFrame) -> None:
    """A fixed term that builds no column: a factor with one level (its effect is the intercept's)."""
    what = _single_levels(name.split(":"), frame)
    raise FormulaError(
        f"`formula` {formula!r}: the fixed term {name!r} builds no column ({what or 'it has a single level'}): "
        f"its effect cannot be told from the intercept's. Drop {name!r} from the formula"
    )


def _random_terms(group: Any, frame: pd.DataFrame, var_level: dict[str, str]) -> list[RandomTerm]:
    out = []
    if group is None:
        return out
    for name in group.terms:
        gvars = tuple(name.split("|", 1)[1].split(":"))
        lab = frame[gvars[0]].astype(str).to_numpy()
        for g in gvars[1:]:
            lab = np.char.add(np.char.add(lab.astype(str), ":"), frame[g].astype(str).to_numpy().astype(str))
        levels, codes = np.unique(lab.astype(str), return_inverse=True)
        Zk = group[name]
        slope = np.asarray(Zk.sum(axis=1), dtype=float).ravel()
        level = _level_of([var_level[g] for g in gvars])
        out.append(RandomTerm(name, gvars, levels.astype(str), codes.astype(np.intp), slope, level))
    return out


def _coord_groupings(random: list[RandomTerm], frame: pd.DataFrame) -> dict[str, str]:
    """State a random term grouped by coords along ``agent`` (``task``) with fewer levels than the dim.

    ``(1|model)`` on a dataset with a coord ``model`` along ``agent`` (``read_inspect_log`` adds
    one) groups by the coord, as the formula says: the agents of one model share its effect.
    """
    notes: dict[str, str] = {}
    for t in random:
        for dim in ("agent", "task"):
            n_dim = frame[dim].nunique()
            if t.level == dim and dim not in t.grouping and t.levels.size < n_dim:
                notes[f"grouping ({t.name})"] = (
                    f"({t.name}) groups by the coord {':'.join(t.grouping)} along {dim}: "
                    f"{t.levels.size} levels for {n_dim} {dim}s, so the {dim}s of one level share "
                    f"its effect; (1|{dim}) gives each {dim} its own"
                )
    return notes


def _aliased(X: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """Columns of ``X`` that are linear combinations of earlier ones (pivoted QR on unique rows)."""
    from scipy import linalg

    if X.shape[1] == 0:
        return np.zeros(0, bool)
    U = np.unique(X, axis=0)
    _, R, piv = linalg.qr(U, mode="economic", pivoting=True)
    d = np.abs(np.diag(R)) if R.size else np.zeros(0)
    rank = int((d > tol * max(d.max() if d.size else 0.0, 1.0)).sum())
    out = np.zeros(X.shape[1], bool)
    out[piv[rank:]] = True
    return out


def _check_identified(
    X: np.ndarray, coef: list[str], random: list[RandomTerm], frame: pd.DataFrame, family: str, n: np.ndarray,
    default: bool = False, formula: str = "", intercept: bool = True,
) -> dict[str, str]:
    """Refuse what the design cannot identify; warn about levels seen in one combination only.

    ``default``: the formula is :data:`DEFAULT_FORMULA` (its agent x task term is the builders' to decide);
    ``formula``, ``intercept`` (whether it has one): for the message on aliased columns.
    """
    Xc = np.column_stack([np.ones(len(frame)), X]) if family == "ordinal" else X
    names = (["(thresholds)"] if family == "ordinal" else []) + coef
    bad = _aliased(Xc)
    if bad.any():
        raise FormulaError(_aliased_message([names[i] for i in np.flatnonzero(bad)], family, formula, intercept))
    seen: dict[tuple, str] = {}
    for t in random:
        if t.levels.size < 2:
            raise FormulaError(f"random term ({t.name}) has a single level: its sd is not identified")
        if t.intercept:
            key = tuple(_canonical(t.codes))
            if key in seen:
                raise FormulaError(
                    f"random terms ({seen[key]}) and ({t.name}) group the data identically: their sds "
                    "cannot be told apart; keep one"
                )
            seen[key] = t.name
            if t.levels.size <= Xc.shape[1] and _rank(Xc) == _rank(
                np.column_stack([Xc, np.eye(t.levels.size)[t.codes]])
            ):
                raise FormulaError(
                    f"random term ({t.name}) is determined by the fixed effects (every level is a "
                    "fixed-effect combination): its sd is not identified; make it fixed or drop it"
                )
    return _warn_one_run_levels(random, n, frame, default) | _warn_confounded(random, frame)


def _warn_agent_task(t: RandomTerm, runs: np.ndarray, frame: pd.DataFrame) -> dict[str, str]:
    """The crossed builder's rule for ``(1|agent:task)`` (``hierbench.metrics.unidentified_by_design``).

    Said for a formula the user wrote; the default formula's term is left to the builders,
    which drop it where the rule says so (their ``agent_task`` decision).
    """
    per_task = frame.groupby("task")["agent"].nunique()
    rule = unidentified_by_design(
        int(frame["agent"].nunique()), int(runs.max()), int(per_task.max()) if len(per_task) else None
    ).get("agent:task")
    if rule is None:
        return {}
    msg = (
        f"random term ({t.name}): {rule[0]}; it is fitted as asked, resting on its prior (Bayes) or "
        "at an arbitrary point of a flat likelihood (maximum likelihood). Run some cells more than "
        "once, or leave the term out (the default formula's builders drop it here)"
    )
    warn_user(msg, UnidentifiedTermWarning)
    return {f"unidentified ({t.name})": msg}


def _warn_one_run_levels(
    random: list[RandomTerm], n: np.ndarray, frame: pd.DataFrame, default: bool = False
) -> dict[str, str]:
    """Warn about a random intercept whose every level holds at most one run (the crossed rule).

    Nothing repeats within a level, so the term's sd cannot be told apart from run-to-run
    noise (one agent with one run per task makes ``(1|task)`` such a term). Fitted as asked,
    it rests on its prior; its maximum-likelihood value is one point of a flat ridge. The
    agent x task term gets the crossed builder's own rule (``_warn_agent_task``), unless it
    is the default formula's (the builders decide it).
    """
    notes: dict[str, str] = {}
    for t in random:
        if not t.intercept:
            continue
        runs = np.bincount(t.codes, weights=n, minlength=t.levels.size)
        if set(t.grouping) == {"agent", "task"}:
            notes |= {} if default else _warn_agent_task(t, runs, frame)
            continue
        if runs.max() <= 1:
            msg = (
                f"random term ({t.name}): every {':'.join(t.grouping)} level holds one run, so its sd "
                "cannot be told apart from run-to-run noise; it is fitted as asked, resting on its "
                "prior (Bayes) or at an arbitrary point of a flat likelihood (maximum likelihood). "
                "Run some levels more than once, or leave the term out"
            )
            notes[f"unidentified ({t.name})"] = msg
            warn_user(msg, UnidentifiedTermWarning)
    return notes


def _rank(X: np.ndarray) -> int:
    return int(np.linalg.matrix_rank(np.unique(X, axis=0))) if X.size else 0


def _canonical(codes: np.ndarray) -> np.ndarray:
    """Relabel codes by first appearance, so two groupings of the data compare equal."""
    _, first, inv = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inv]


def _warn_confounded(random: list[RandomTerm], frame: pd.DataFrame) -> dict[str, str]:
    notes: dict[str, str] = {}
    for t in random:
        if len(t.grouping) < 2:
            continue
        for g in t.grouping:
            others = [o for o in t.grouping if o != g]
            combos = frame[[g, *others]].astype(str).drop_duplicates()
            n_with = combos.groupby(g).size()
            lonely = n_with[n_with == 1].index.tolist()
            if lonely and len(lonely) < n_with.size:
                msg = (
                    f"{len(lonely)} of {n_with.size} {g} levels occur with one {':'.join(others)} only, "
                    f"e.g. {lonely[:5]}: for them the {g} effect and the ({t.name}) effect are one "
                    "(estimated from that single combination)"
                )
                notes[f"confounded {g} in ({t.name})"] = msg
                warn_user(msg, ConfoundedTermWarning)
    return notes


# --------------------------------------------------------------------------- public


def _parse(formula: str, data: xr.Dataset) -> tuple[str, dict, set[str]]:
    """The response, the names the dataset offers, and the names the formula uses (checked)."""
    import formulae

    try:
        desc = formulae.model_description(formula)
    except Exception as exc:
        raise FormulaError(f"`formula` {formula!r} could not be parsed: {exc}") from exc
    if desc.response is None:
        raise FormulaError(f"`formula` {formula!r} needs a response on the left of `~` (e.g. score ~ ...)")
    response = next(iter(desc.response.var_names))
    avail = _variables(data, response)
    used = set(desc.var_names)
    _check_names(used, avail, data)
    _check_run_numbers(used, data, formula)
    return response, avail, used


def _check_run_numbers(used: set[str], data: xr.Dataset, formula: str) -> None:
    """Refuse ``run`` as a term where the runs were numbered within each cell (``attrs["run_index"]``).

    Then run r is the r-th record of each cell in file order, not one occasion (a seed, an epoch)
    shared by the cells, so a run effect would pool different occasions (audit s76 R 6).
    """
    if "run" in used and data.attrs.get("run_index") == "within_cell":
        raise FormulaError(
            f"`formula` {formula!r} uses `run`, but the runs of `data` were numbered within each (agent, "
            "task) cell (attrs['run_index'] = 'within_cell': their labels were not integers, kept as "
            "run_id), so run r is not the same occasion in every cell; map the labels to integers "
            "shared by the cells before reading (e.g. 'seed1' -> 1), or leave `run` out of the formula"
        )


def _fixed_effects(formula: str, frame: pd.DataFrame, family: str) -> tuple:
    """The fixed effects ``(X, coef, terms)``, the random-term groups, the builder, and what was dropped.

    An ordinal model has no intercept: its thresholds carry the location.
    """
    X, coef, terms, group, builder = _matrices(formula, frame)
    if family != "ordinal" or "Intercept" not in terms:
        return X, coef, terms, group, builder, {}
    X, coef, terms = _drop_intercept(X, coef, terms)
    return X, coef, terms, group, builder, {"intercept": "dropped: the ordinal thresholds carry the location"}


#: the package's own formulas: :data:`DEFAULT_FORMULA`, and without its agent x task term (the builders' choice
#: where the data cannot identify that term); an ordinal fit of either takes ``_ordinal_default``'s coding
_DEFAULTS = (DEFAULT_FORMULA, DEFAULT_FORMULA.replace(" + (1|agent:task)", ""))


def _ordinal_default(formula: str, family: str) -> tuple[str, dict[str, str]]:
    """The default formula as an ordinal model can identify it: ``agent`` coded against a reference agent.

    ``0 + agent`` gives every agent its own intercept, and the ordinal thresholds are intercepts
    too, so the pair is collinear on any graded log: the thresholds take the reference agent's
    location and each other agent gets its difference from it (the coding ``score ~ agent + ...``
    has). Said in a warning and in the design's decisions; a formula the user wrote is never
    rewritten (``_aliased_message`` says what to change).
    """
    if family != "ordinal" or " ".join(formula.split()) not in _DEFAULTS:
        return formula, {}
    used = " ".join(formula.split()).replace("~ 0 + agent", "~ agent", 1)
    msg = (
        f"the default formula {' '.join(formula.split())!r} cannot be fitted to ordinal scores: its "
        "'0 + agent' gives every agent an intercept besides the ordinal thresholds, which are intercepts "
        f"too. Used {used!r} instead: the thresholds hold the location of the reference agent (the "
        "first level, the one without an agent[...] coefficient) and each agent[...] coefficient is that "
        "agent's difference from it, on the latent (logit) scale"
    )
    warn_user(msg, HierbenchWarning)
    return used, {"formula": msg}


def _aliased_message(names: list[str], family: str, formula: str, intercept: bool) -> str:
    """The ``FormulaError`` for aliased fixed effects, naming the formula's ``0 +`` where that is the cause."""
    cause = "an intercept besides the thresholds" if family == "ordinal" else "two codings of one factor"
    msg = (
        f"fixed-effect columns {names} are linear combinations of the others in this design (a "
        f"combination never run, a factor constant over the data, or {cause}): drop or merge them"
    )
    if family == "ordinal" and not intercept and re.search(r"~\s*0\s*\+", formula):
        fixed = re.sub(r"~\s*0\s*\+\s*", "~ ", formula, count=1)
        msg += (
            f". Here the formula {formula!r} drops the intercept with '0 +', so a factor is coded with "
            f"one column per level, and the ordinal thresholds are a second intercept: write {fixed!r}"
        )
    return msg


def _drop_intercept(X: np.ndarray, coef: list[str], terms: dict[str, slice]) -> tuple:
    keep = np.ones(X.shape[1], bool)
    keep[terms.pop("Intercept")] = False
    X, coef = X[:, keep], [c for c, k in zip(coef, keep, strict=True) if k]
    return X, coef, {k: slice(s.start - 1, s.stop - 1) for k, s in terms.items()}


def model_design(
    formula: str | None,
    data: xr.Dataset,
    *,
    family: Family = "auto",
    levels: Any = None,
    agent_coords: pd.DataFrame | None = None,
    task_coords: pd.DataFrame | None = None,
) -> ModelDesign:
    """Resolve a mixed-model formula against an eval dataset.

    Parameters
    ----------
    formula : str or None
        lme4 / Bambi syntax, parsed by ``formulae``: fixed terms, ``a:b``
        interactions, ``a*b``, ``0 +`` to drop the intercept, function calls
        such as ``np.log2(human_minutes)``, and random terms ``(1|g)``,
        ``(1|a:b)``, ``(x|g)`` (a slope, uncorrelated with the intercept, as
        lme4's ``||``). Names are the dataset's dims (``agent``, ``task``,
        ``run``), its coords along ``agent`` or ``task``, and its variables
        over ``(agent, task[, run])``. ``None``: :data:`DEFAULT_FORMULA`.
        The log's agent and task columns are the dims ``agent`` and ``task``
        whatever they were called (``from_records(agent="model")``: write
        ``(1|agent)``); a coord groups by its own values (``(1|model)`` on
        ``read_inspect_log``'s ``model`` coord: one effect per model, shared
        by that model's agents, as ``decisions`` says).
    data : xarray.Dataset
        An eval dataset (``score(agent, task, run)``, NaN = not run).
    family : {"auto", "binomial", "fractional", "ordinal"}
        ``"auto"``: ordinal when ``levels`` is given, binomial when every
        response is 0 or 1, else fractional (partial credit in [0, 1]).
    levels : sequence of float or of str, optional
        The grade scale of an ordinal response, in order (default: the
        distinct values seen). A grade of the scale never seen is refused.
        A ``score`` read from grades (``from_records(score_levels=...)``) is
        fitted on the scale it was read on (``levels``, when given, must be
        that scale), as the grades themselves; read from words, ``levels``
        may name them (the same labels in the same order as
        ``attrs["score_labels"]``), which the design keeps as ``labels``.
    agent_coords, task_coords : pandas.DataFrame, optional
        Per-agent / per-task covariates indexed by label, added as coords
        (a label with two different values is refused).

    Returns
    -------
    ModelDesign

    Raises
    ------
    FormulaError
        Unknown names (the message names the dim a reader put a column on),
        a covariate not constant within its agent or task, a
        missing covariate value, an unparsable formula, aliased fixed
        effects, a fixed factor with a single level (drop it), or a random
        term the design cannot identify.

    Warns
    -----
    ConfoundedTermWarning
        Levels of a factor in a random interaction seen in one combination only.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> rng = np.random.default_rng(0)
    >>> ds = xr.Dataset(
    ...     {"score": (("agent", "task", "run"), rng.integers(0, 2, (4, 6, 2)).astype(float))},
    ...     coords={"agent": ["a", "b", "c", "d"], "task": [f"t{i}" for i in range(6)],
    ...             "scaffold": ("agent", ["s1", "s1", "s2", "s2"]),
    ...             "model": ("agent", ["m1", "m2", "m1", "m2"]),
    ...             "hard": ("task", [0, 0, 0, 1, 1, 1])})
    >>> d = model_design("score ~ scaffold * hard + (1|model) + (1|task)", ds)
    >>> d.family, d.coef
    ('binomial', ['Intercept', 'scaffold[s2]', 'hard', 'scaffold[s2]:hard'])
    >>> [(t.name, t.level, t.levels.size) for t in d.random]
    [('1|model', 'agent', 2), ('1|task', 'task', 6)]
    """
    formula = DEFAULT_FORMULA if formula is None else str(formula)
    data = _with_covariates(data, agent_coords, task_coords)
    response, avail, used = _parse(formula, data)
    resp, levels, fam, why, labels = _family(data, avail, response, family, levels)
    row_level, idx, agents, tasks, r, frame = _design_rows(data, avail, used, response, resp, fam, levels)
    default, (formula, adjusted) = " ".join(formula.split()) == DEFAULT_FORMULA, _ordinal_default(formula, fam)
    X, coef, terms, group, builder, dropped = _fixed_effects(formula, frame, fam)
    decisions = {"family": f"{fam} ({why})", "rows": f"one per {row_level}", **adjusted, **dropped}
    var_level = {v: avail[v][0] for v in used if v != response}
    random = _random_terms(group, frame, var_level)
    decisions.update(_coord_groupings(random, frame))
    decisions.update(_check_identified(X, coef, random, frame, fam, np.asarray(r["n"], dtype=float), default,
                                       formula, intercept=bool(dropped)))  # fmt: skip
    return ModelDesign(
        formula=formula, family=fam, response=response, row_level=row_level, frame=frame,
        X=X, coef=coef, fixed_terms=terms, random=random, variables=var_level,
        y=r["y"], n=r["n"], ss=r["ss"], agents=agents, tasks=tasks,
        agent_index=idx[0].astype(np.intp), task_index=idx[1].astype(np.intp),
        categories=r["categories"], grade_counts=r["grade_counts"], decisions=decisions,
        builder=builder, labels=labels,
        scored_grades=fam == "ordinal" and response == "score" and bool(levels_attr(data.attrs)),
    )  # fmt: skip


# --------------------------------------------------------------------------- separation


@dataclass(frozen=True)
class Separation:
    """Where the data separate a formula's fixed effects (``separating_direction``); falsy when they do not.

    Attributes
    ----------
    names : list of str
        The coefficients the separating direction moves: their estimates are infinite.
    moved : ndarray of bool
        The design rows whose likelihood goes to 1 along that direction.
    cuts : list of str
        Ordinal only: the cuts (``"3|4"``) between two grades at which the grades split cleanly,
        when no end of the scale separates (empty: a separation at an end of the scale, whose
        rows the limit fit leaves out).
    thresholds : ndarray of bool
        Ordinal only: the thresholds the direction moves (infinite with the coefficients).
    """

    names: list[str]
    moved: np.ndarray
    cuts: list[str] = field(default_factory=list)
    thresholds: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    def __bool__(self) -> bool:
        return bool(self.names)


def _one_sided(design: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per design row: whether every run sits at the top of the scale, and whether every one sits at the bottom.

    Binomial and [0, 1] scores: all successes (all scores 1) / all failures (all scores 0);
    ordinal: every grade the highest / every grade the lowest.
    """
    if design.family == "ordinal":
        gc = np.asarray(design.grade_counts, dtype=float)
        runs = gc.sum(1)
        return gc[:, -1] >= runs, gc[:, 0] >= runs
    y, n = np.asarray(design.y, dtype=float), np.asarray(design.n, dtype=float)
    return y >= n, y <= 0


def _direction(margins: np.ndarray, equal: np.ndarray | None = None, order: np.ndarray | None = None) -> np.ndarray | None:
    """The separation linear programme: a ``d`` in the unit box with ``margins @ d >= 0``, the margins' sum > 0.

    ``equal @ d = 0`` and ``order @ d >= 0`` are further constraints (their rows do not count in
    the sum). HiGHS maximises the summed margins; None when that maximum is 0 (no separation).
    """
    from scipy.optimize import linprog

    ub = margins if order is None else np.vstack([margins, order])
    eq = {"A_eq": equal, "b_eq": np.zeros(len(equal))} if equal is not None and len(equal) else {}
    res = linprog(-margins.sum(0), A_ub=-ub, b_ub=np.zeros(len(ub)), bounds=[(-1.0, 1.0)] * margins.shape[1],
                  method="highs", **eq)  # fmt: skip
    if res.status != 0 or -res.fun <= 1e-7 * max(1.0, float(np.abs(margins).sum())):
        return None
    return res.x


def _at_an_end(design: Any, X: np.ndarray) -> Separation | None:
    """A direction ``b`` with ``x_r b >= 0`` on the rows at the top, ``<= 0`` at the bottom, ``= 0`` elsewhere."""
    top, bottom = _one_sided(design)
    mid = ~(top | bottom)
    one = X[~mid] * np.where(top, 1.0, -1.0)[~mid, None]  # separation: one @ b >= 0 everywhere
    b = _direction(one, equal=X[mid])
    if b is None:
        return None
    names = [str(c) for c, v in zip(design.coef, b, strict=True) if abs(v) > 1e-7]
    return Separation(names, np.abs(X @ b) > 1e-7)


def _at_a_cut(design: Any, X: np.ndarray) -> Separation | None:
    """Ordinal: a direction ``(b, t)`` along which every run's grade probability rises or stays.

    A run of grade ``j`` in row ``r`` has ``P = F(theta_j - eta_r) - F(theta_{j-1} - eta_r)``;
    moving ``(beta, theta)`` by ``s (b, t)`` never lowers it when ``t_j - x_r b >= 0`` (below
    the top grade) and ``x_r b - t_{j-1} >= 0`` (above the lowest), with ``t`` non-decreasing,
    and raises it where one of these is > 0: the likelihood keeps rising as ``s`` grows. With
    ``t = 0`` this is ``_at_an_end``; any ``t`` finds the grades that split cleanly at a cut
    between two middle grades, at one cut or jointly across cuts. Rows split at one cut alone (``grade <= c`` against
    ``> c``, the binary rule per cut) are not enough: the grades on each side must stay
    consistent with one set of thresholds, which this direction carries.
    """
    gc = np.asarray(design.grade_counts, dtype=float)
    K, p = gc.shape[1], X.shape[1]
    rows, grades = np.nonzero(gc)
    E = np.eye(K - 1)
    up, lo = grades < K - 1, grades > 0
    margins = np.vstack([
        np.hstack([-X[rows[up]], E[grades[up]]]),  # t_j - x b >= 0: the run's upper cut
        np.hstack([X[rows[lo]], -E[grades[lo] - 1]]),  # x b - t_{j-1} >= 0: its lower cut
    ])  # fmt: skip
    order = np.hstack([np.zeros((K - 2, p)), np.diff(E, axis=0)]) if K > 2 else None
    d = _direction(margins, order=order)
    if d is None:
        return None
    b, t = d[:p], d[p:]
    names = [str(c) for c, v in zip(design.coef, b, strict=True) if abs(v) > 1e-7]
    if not names:  # only thresholds move: a grade no run has (refused where fitted), not a separation
        return None
    m = margins @ d
    cut_of = np.r_[grades[up], grades[lo] - 1]  # the threshold each margin's row is against
    strict = np.bincount(cut_of, weights=(m > 1e-7).astype(float), minlength=K - 1) > 0
    slack = np.zeros(gc.shape[0], bool)
    np.logical_or.at(slack, np.r_[rows[up], rows[lo]], m <= 1e-7)
    cats = grade_names(design.categories, getattr(design, "labels", None))
    cuts = [f"{cats[c]}|{cats[c + 1]}" for c in np.flatnonzero(strict)]
    return Separation(names, ~slack, cuts, np.abs(t) > 1e-7)


def separating_direction(design: Any) -> Separation:
    """The fixed effects along which the data separate, the rows that direction moves, and (ordinal) where.

    (Quasi-)complete separation (Albert and Anderson 1984): a direction ``b != 0`` with
    ``x_r b >= 0`` on every row whose runs all sit at the top of the scale, ``<= 0`` on every row
    whose runs all sit at its bottom, and ``= 0`` on the other rows, so the likelihood increases
    without bound along ``b``: an agent that failed every run (scored 0 on every run, or gave the
    lowest grade every time), or whose successes all lie on the short tasks. The top and bottom
    are success and failure (binomial), scores 1 and 0 ([0, 1] scores: the fractional likelihood's
    ``y log mu + (n - y) log(1 - mu)`` is monotone there just as the binomial one), and the
    highest and lowest grade (ordinal: ``P(lowest) = expit(theta_1 - eta)`` rises to 1 as ``eta``
    falls, whatever the thresholds). Found by a linear programme (HiGHS): maximise the summed
    margins over the one-sided rows, ``b`` in the unit box. When no end of its scale separates,
    an ordinal design is searched for grades that split cleanly at a cut between two middle
    grades, the thresholds moving with ``b`` (``_at_a_cut``; ``cuts`` names them). Only the
    fixed effects count (the random effects are bounded by their distribution).

    The one rule of the formula builders and ``build_crossed`` (Bayes: the separated coefficient
    rests on its prior) and of the ML formula fits (reported as NaN): kept here, under both.
    """
    X = np.asarray(design.X, dtype=float)
    none = Separation([], np.zeros(X.shape[0], bool))
    if X.shape[1] == 0:
        return none
    found = _at_an_end(design, X)
    if found is None and design.family == "ordinal" and np.asarray(design.grade_counts).shape[1] > 2:
        found = _at_a_cut(design, X)
    return none if found is None else found


def separation(design: Any) -> tuple[list[str], np.ndarray]:
    """The fixed effects along which the data separate, and the design rows whose likelihood goes to 1.

    ``separating_direction``'s ``names`` and ``moved`` (see there): empty names when the maximum
    likelihood estimate exists.
    """
    found = separating_direction(design)
    return found.names, found.moved
