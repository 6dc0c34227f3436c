"""The canonical evaluation dataset: its contract, validation and reductions.

An *eval dataset* is a plain :class:`xarray.Dataset` with dims ``agent``,
``task`` and ``run`` (exactly these; each label once); agent and task labels
are strings exactly as the records wrote them (the reading rules are in
:mod:`hierbench.data`):

``score(agent, task, run)``
    float64 (or bool) in [0, 1] (binary or partial credit); NaN where the run
    did not happen (or was excluded under ``errors="exclude"``).
``error(agent, task, run)``
    bool, True where the run hit an infrastructure failure (crash, timeout,
    environment failure); False where no run happened.
optional per-run variables
    ``cost``, ``latency``, ``tokens``, ``steps``, ``working_time`` (float64,
    finite and >= 0, NaN where not recorded: :data:`MEASURES`),
    ``confidence``, and boolean per-run annotations listed in
    ``attrs["annotations"]``.
task coords
    ``tag``, ``cluster`` (text exactly as written) and any other per-task
    attribute.
agent coords
    ``model``, ``scaffold``, ``settings`` or anything constant per agent.
attrs
    ``hierbench_schema``, ``errors`` (the error policy applied to ``score``),
    ``n_records_read``, ``n_records_kept``, ``n_error_runs``, ``source``,
    ``reader``, ``score_kind`` (:func:`score_kind` of the kept scores:
    ``"binary"``, ``"continuous"`` or ``"mixed"``; partial credit is kept as
    recorded, never rounded), ``binary`` (1 if ``score_kind`` is binary, else
    0), ``n_tasks_without_cluster`` / ``_tag`` (when read with that column),
    ``n_repeated_records`` (records kept as runs although they repeat an
    earlier record in every column; readers without a run column), and as
    JSON text: ``score_levels`` (the grade scale when ``score`` was read from
    ordinal grades, each kept as its place ``(grade - first) / (last - first)``), ``score_labels``
    (grades written as words: the labels in order, label ``k`` being grade ``k`` of
    ``score_levels`` ``[0, 1, ..., L - 1]``), ``not_kept`` (reason -> count), ``columns_not_read`` (the
    record columns no role read, in file order; ``from_records``), ``inconsistent_attributes``
    (attribute -> number of tasks/agents whose value was given in some records and
    empty in others; two different values are refused) and ``annotations`` (names of the boolean per-run annotation
    variables).

Missing labels
    A task without a tag or cluster label (and a text coord without a value)
    holds a *missing* value: in memory a float NaN in the object coord
    (xarray stores ``None`` there as NaN). It means "no cluster": never the
    text ``"nan"`` (a label a file may really hold, kept as a label) and
    never ``""``. A text file cannot hold NaN, so on disk a missing label is
    written as the empty string ``""``, which is never a label (every reader
    reads an empty field as missing), and read back as NaN:
    :func:`hierbench.data._values._labels_to_text` and ``_labels_from_text``
    do both directions for a writer and a loader (``hierbench.io``).

Unbalanced data is represented as it is: a cell with fewer runs has NaN in
the missing run slots, a task an agent never attempted is all NaN for that
agent. Nothing is ever padded with fake failures.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Literal

import numpy as np
import xarray as xr

from .._base import HierbenchError
from .._base import HierbenchWarning
from .._base import check_choice
from .._base import counts
from .._base import is_binary
from .._base import renamed_kwargs

__all__ = [
    "MEASURES",
    "PER_RUN_FLOATS",
    "SCHEMA_VERSION",
    "EvalDataError",
    "InconsistentAttributeWarning",
    "check_eval_dataset",
    "check_option",
    "score_kind",
    "to_counts",
]

SCHEMA_VERSION = "hierbench.eval/1"
PER_RUN_FLOATS = ("cost", "latency", "tokens", "steps", "confidence")
#: Per-run variables that measure or count something (money, seconds, tokens, steps):
#: finite and never negative; NaN where not recorded.
MEASURES = ("cost", "latency", "tokens", "steps", "working_time")
DIMS = ("agent", "task", "run")
#: Names a reader gives its own variables and coords: no extra column, annotation or coord may take them.
RESERVED = (*DIMS, "score", "error", "run_id", "tag", "cluster")
#: The read report a reader writes in ``attrs``; ``attrs=`` may add provenance, never overwrite these.
REPORT_KEYS = (
    "hierbench_schema", "reader", "errors", "n_records_read", "n_records_kept", "n_error_runs",
    "binary", "score_kind", "not_kept", "inconsistent_attributes", "annotations",
    "n_repeated_records", "n_tasks_without_cluster", "n_tasks_without_tag", "score_levels",
    "agent_column", "task_column", "score_labels", "n_error_scores_overwritten", "sample_key",
    "columns_not_read", "run_index",
)  # fmt: skip


#: how a reader's messages count the records they name (said once, after the message)
ROWS_COUNTED = "(Rows are the records read, counted from 0: a CSV's header and a JSONL file's blank lines are not among them.)"


class EvalDataError(HierbenchError):
    """Raised when evaluation records or an eval dataset break the schema.

    A message that names ``rows [...]`` ends by saying how they are counted: the rows are
    positions among the records read, from 0, not a file's line numbers; where a
    check names them, ``rows`` holds those positions for a caller to use (else None).
    """

    def __init__(self, message: str = "", *args: object, rows: list[int] | None = None) -> None:
        if "rows [" in message and ROWS_COUNTED not in message:
            message = f"{message} {ROWS_COUNTED}"
        super().__init__(message, *args)
        self.rows = None if rows is None else [int(r) for r in rows]


class InconsistentAttributeWarning(HierbenchWarning):
    """A per-task or per-agent attribute is given in some records of a task/agent and empty in others.

    Two different values in one task (agent) are refused (:class:`~hierbench.data.EvalDataError`); this
    warning says the task took the one value given.
    """


class UnreadColumnWarning(HierbenchWarning):
    """The records have a column named like a role (``run``, ``error``, ``cluster``, an agent column) that was not given that role."""


class ErroredRunsWarning(HierbenchWarning):
    """Under ``errors="fail"``, error-flagged runs that say more than a failure would.

    Recorded scores > 0 read as 0 (counted in ``attrs["n_error_scores_overwritten"]``), or an
    agent whose every run errored (its 0 measures the infrastructure, not the agent).
    """


def check_option(value, name: str, choices: tuple) -> str:
    """Return ``value`` if it is one of ``choices``, else raise an :class:`EvalDataError`.

    The rule is :func:`hierbench._base.check_choice`; the message is in the readers' words:
    "`errors` must be 'fail' or 'exclude'".
    """
    try:
        return check_choice(value, name, choices)
    except ValueError:
        listed = ", ".join(repr(c) for c in choices[:-1]) + f" or {choices[-1]!r}"
        raise EvalDataError(f"`{name}` must be {listed}; got {value!r}") from None


def _fmt_list(values: Iterable, limit: int = 10) -> str:
    values = list(values)
    shown = ", ".join(repr(v) if isinstance(v, str) else str(v) for v in values[:limit])
    more = f", ... ({len(values) - limit} more)" if len(values) > limit else ""
    return f"[{shown}{more}]"


#: column pairs that name the two sides of a battle (names compared case-folded, with ".", "-" and
#: spaces read as "_": baseball's ``home.team``), and the verdict columns beside them
_BATTLE_SIDES = (
    ("left", "right"), ("model_a", "model_b"), ("agent_a", "agent_b"), ("player_a", "player_b"),
    ("home", "away"), ("home_team", "away_team"), ("team1", "team2"), ("team_1", "team_2"),
)  # fmt: skip
_BATTLE_VERDICTS = ("winner", "verdict", "outcome", "result")


def _battle_key(column) -> str:
    return re.sub(r"[\s.\-]+", "_", str(column).strip().lower())


def _per_side_scores(keys: dict, pair: tuple[str, str]) -> str | None:
    """Two columns that differ only by the sides' names (``home.wins`` and ``away.wins``), as "a/b"."""
    a, b = (k.split("_") for k in pair)
    if len(a) != len(b):
        return None
    diff = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    if len(diff) != 1:
        return None
    x, y = diff[0]
    for k in keys:
        other = "_".join(y if t == x else t for t in k.split("_"))
        if k not in pair and other != k and other in keys and other not in pair:
            return f"{keys[k]}/{keys[other]}"
    return None


def battle_columns(columns, agent=None, unread=None) -> tuple[str, str, str] | None:
    """The (side, other side, verdict) columns of records that look like pairwise battles, or None.

    Battles: two columns naming the sides (``left, right``; ``home, away``; ``team1, team2``
    ...) and a verdict (``winner``, ``result`` ...) or a score per side (``home.wins``,
    ``away.wins``). With ``agent`` (the column read as the agent): only a pair with ``agent``
    as one side and its partner among ``unread`` (columns no role reads), so a run log with a
    column that happens to be called ``right`` is not taken for battles.

    Examples
    --------
    >>> battle_columns(["home", "away", "result"])
    ('home', 'away', 'result')
    >>> battle_columns(["agent", "task", "score", "right"], agent="agent", unread={"right"}) is None
    True
    """
    keys: dict[str, str] = {}
    for c in columns:
        keys.setdefault(_battle_key(c), str(c))
    unread = None if unread is None else {str(c) for c in unread}
    for pair in _BATTLE_SIDES:
        if not all(p in keys for p in pair):
            continue
        side, other = (keys[p] for p in pair)
        if agent is not None:
            if str(agent) == other:
                side, other = other, side
            if str(agent) != side or other not in (unread or ()):
                continue
        verdict = next((keys[v] for v in _BATTLE_VERDICTS if v in keys), None) or _per_side_scores(keys, pair)
        if verdict:
            return side, other, verdict
    return None


#: where battles are read, since a run log's roles cannot hold them
BATTLES_HINT = (
    "read them with hierbench.data.read_battles and fit them with hierbench.freq.fit_bradley_terry_ml "
    "or hierbench.bayes.build_bradley_terry (on the command line: hierbench fit LOG --battles, with --left, "
    "--right and --winner naming the columns)"
)


def missing_columns_error(missing: dict, where: str, columns: list) -> EvalDataError:
    """The error for required columns a source lacks: each role with the column it names, and what is there.

    Records that look like pairwise battles (two sides and a verdict, as LLMFAO's ``left, right,
    winner`` or football's ``home, away, result``: ``battle_columns``) are told where battles
    are read, since a run log's roles cannot fit them.

    Examples
    --------
    >>> print(missing_columns_error({"task": "task"}, "", ["left", "right", "winner"]))  # doctest: +ELLIPSIS
    missing required columns: `task`='task'; ...: these look like pairwise battles (left, right, winner), ...
    """
    text = (
        f"missing required columns{where}: "
        + ", ".join(f"`{k}`={c!r}" for k, c in missing.items())
        + f"; the records have columns {_fmt_list(columns, 30)}"
    )
    battle = battle_columns(columns)
    if battle:
        text += f": these look like pairwise battles ({', '.join(battle)}), which are not a run log of scores: {BATTLES_HINT}"
    seps = [sep for sep in (";", "|", "\t") if len(columns) == 1 and sep in str(columns[0])]
    if seps:
        text += (
            f": the records were read as one column whose name holds {seps[0]!r}, as when a file "
            f"separated by {seps[0]!r} is read as a CSV; a .csv file is read as comma-separated and a "
            ".tsv file as tab-separated: write the file with one of those separators"
        )
    return EvalDataError(text)


def check_eval_dataset(ds: xr.Dataset, *, name: str = "data") -> xr.Dataset:
    """Validate that ``ds`` follows the eval-dataset contract and return it.

    Parameters
    ----------
    ds : xarray.Dataset
        Candidate eval dataset.
    name : str
        Argument name used in error messages.

    Returns
    -------
    xarray.Dataset
        ``ds`` itself, unchanged.

    Raises
    ------
    EvalDataError
        Naming the rule and the offending values.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> bad = xr.Dataset({"score": (("agent", "task", "run"), np.full((1, 1, 1), 2.0))},
    ...                  coords={"agent": ["a"], "task": ["t"], "run": [0]})
    >>> check_eval_dataset(bad)
    Traceback (most recent call last):
    ...
    hierbench.data._schema.EvalDataError: `data.score` must lie in [0, 1]; 1 values do not, e.g. (agent, task, run, score) [('a', 't', 0, 2.0)]
    """
    if not isinstance(ds, xr.Dataset):
        raise EvalDataError(
            f"`{name}` must be an xarray.Dataset with dims {DIMS}; got {type(ds).__name__}"
        )
    if "score" not in ds:
        raise EvalDataError(f"`{name}` must contain a `score` variable; found {list(ds.data_vars)}")
    _check_dims(ds, name)
    _check_score(ds, name)
    _check_error(ds, name)
    _check_measures(ds, name)
    return ds


def _cells(da: xr.DataArray, mask: np.ndarray, limit: int = 10) -> list[tuple]:
    """(agent, task, run, value) of the first ``limit`` cells of ``mask`` (dims agent, task, run)."""
    vals = da.values
    return [
        (*(str(da[d].values[i]) for d, i in zip(DIMS[:2], ix[:2], strict=True)),
         int(da["run"].values[ix[2]]), float(vals[tuple(ix)]))
        for ix in np.argwhere(mask)[:limit]
    ]  # fmt: skip


def _check_dims(ds: xr.Dataset, name: str) -> None:
    """``score`` has exactly the dims agent, task, run, each label once."""
    dims = ds["score"].dims
    missing = [d for d in DIMS if d not in dims]
    if missing:
        raise EvalDataError(
            f"`{name}.score` must have dims {DIMS}; missing {missing} (has {dims})"
        )
    other = [d for d in dims if d not in DIMS]
    if other:
        raise EvalDataError(
            f"`{name}.score` must have exactly the dims {DIMS}; it also has {other}: select or "
            f"reduce them first (e.g. `{name}.sel({other[0]}=...)`)"
        )
    for d in DIMS:
        if d in ds.indexes and not ds.indexes[d].is_unique:
            idx = ds.indexes[d]
            dup = idx[idx.duplicated()].unique().tolist()
            raise EvalDataError(
                f"`{name}`: each {d} label must appear once; {_fmt_list(dup)} appear more than "
                f"once (datasets concatenated along {d!r}?)"
            )


def _check_score(ds: xr.Dataset, name: str) -> None:
    """``score`` holds numbers, finite or NaN, in [0, 1]."""
    score = ds["score"].transpose(*DIMS)
    if score.dtype.kind not in "biuf":
        raise EvalDataError(
            f"`{name}.score` must hold numbers (float64, or bool); got dtype {score.dtype}: "
            f"convert it first, e.g. `{name}['score'] = {name}.score.astype(float)`"
        )
    s = score.values.astype(float)
    bad = np.isfinite(s) & ((s < 0) | (s > 1))
    if bad.any():
        raise EvalDataError(
            f"`{name}.score` must lie in [0, 1]; {int(bad.sum())} values do not, e.g. "
            f"(agent, task, run, score) {_fmt_list(_cells(score, bad))}"
        )
    if np.isinf(s).any():
        raise EvalDataError(f"`{name}.score` must be finite or NaN; found infinite values")


def _check_error(ds: xr.Dataset, name: str) -> None:
    if "error" in ds and ds["error"].dtype != bool:
        raise EvalDataError(
            f"`{name}.error` must be bool (True: an infrastructure error); got dtype "
            f"{ds['error'].dtype}: map it first, e.g. `{name}['error'] = {name}.error == 1`"
        )


def _bad_measure(values: np.ndarray) -> np.ndarray:
    """Where a measure (cost, latency, tokens, steps) is negative or infinite."""
    v = np.asarray(values, dtype=float)
    return np.isinf(v) | (v < 0)


def _check_measures(ds: xr.Dataset, name: str) -> None:
    """Each :data:`MEASURES` variable: numbers, finite and >= 0 (NaN: not recorded)."""
    for v in MEASURES:
        if v not in ds or set(ds[v].dims) != set(DIMS):
            continue
        da = ds[v].transpose(*DIMS)
        if da.dtype.kind not in "biuf":
            raise EvalDataError(f"`{name}.{v}` must hold numbers; got dtype {da.dtype}")
        bad = _bad_measure(da.values)
        if bad.any():
            raise EvalDataError(
                f"`{name}.{v}` must be finite and >= 0 ({v} counts or measures: never negative); "
                f"{int(bad.sum())} values are not, e.g. (agent, task, run, {v}) "
                f"{_fmt_list(_cells(da, bad))}"
            )


def score_kind(data: xr.Dataset | xr.DataArray | np.ndarray) -> Literal["binary", "continuous", "mixed"]:
    """Tell what the scores are, from their values: binary, continuous or mixed.

    ``"binary"``: every score is 0 or 1 (also when none is recorded);
    ``"continuous"``: partial credit and no score is exactly 0 or 1 (every
    score strictly inside (0, 1), as a beta likelihood needs); ``"mixed"``:
    partial credit beside exact 0s or 1s (a graded scorer, e.g. 0 / 0.5 / 1).
    Binary counts (pass@k, binomial models) need ``"binary"``; a continuous
    model without a point mass at 0 and 1 needs ``"continuous"``. NaN (runs
    that did not happen) is ignored. The readers record it in
    ``attrs["score_kind"]``; this function reads the values, so it stays true
    after the scores are changed.

    Parameters
    ----------
    data : Dataset, DataArray or array
        An eval dataset (its ``score``) or the scores themselves.

    Returns
    -------
    {"binary", "continuous", "mixed"}

    Examples
    --------
    >>> score_kind([1.0, 0.0, float("nan")]), score_kind([0.2, 0.7]), score_kind([0.0, 0.5, 1.0])
    ('binary', 'continuous', 'mixed')
    """
    if isinstance(data, xr.Dataset):
        if "score" not in data:
            raise EvalDataError(f"`data` must contain a `score` variable; found {list(data.data_vars)}")
        data = data["score"]
    try:
        v = np.asarray(data, dtype=float).ravel()
    except (TypeError, ValueError) as exc:
        raise EvalDataError(f"`data`: scores must be numbers; got {type(data).__name__} ({exc})") from exc
    v = v[np.isfinite(v)]
    if is_binary(v):
        return "binary"
    return "mixed" if np.any((v == 0.0) | (v == 1.0)) else "continuous"


@renamed_kwargs(dim="run_dim")
def to_counts(ds: xr.Dataset, *, run_dim: str = "run") -> xr.Dataset:
    """Reduce an eval dataset to its per agent x task sufficient statistics.

    Parameters
    ----------
    ds : xarray.Dataset
        Eval dataset (see module docstring).
    run_dim : str
        The run dimension to reduce over.

    Returns
    -------
    xarray.Dataset
        ``n_runs(agent, task)`` (int64, runs that happened and were kept),
        ``n_success(agent, task)`` (float64, sum of scores: the success count
        for binary scores), ``n_error(agent, task)`` (int64, runs flagged as
        infrastructure errors) with the task and agent coords of ``ds``.
        ``attrs["binary"]`` says whether every kept score is 0 or 1.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=2, n_tasks=3, n_runs=4, rng=0)
    >>> c = to_counts(ds)
    >>> int(c.n_runs.sum())
    24
    """
    check_eval_dataset(ds, name="ds")
    if run_dim not in ds["score"].dims:
        raise EvalDataError(f"`run_dim` must be a dimension of `ds.score` {ds['score'].dims}; got {run_dim!r}")
    # the one counts routine of the base layer; partial credit is summed as recorded
    return counts(ds, dim=run_dim, binary=False, name="ds")


def _not_kept_attr(counts: dict[str, int]) -> str:
    return json.dumps({k: int(v) for k, v in counts.items() if v})


def task_minutes(data: xr.Dataset, minutes: str) -> np.ndarray:
    """The human minutes of each task, from coord ``minutes`` along task: positive and finite.

    The one check both time-horizon methods (METR's and the Bayesian model) apply.
    """
    if minutes not in data.coords or data[minutes].dims != ("task",):
        raise HierbenchError(f"`minutes` must name a coord along task (human minutes); got {minutes!r}")
    x = np.asarray(data[minutes].values, dtype=float)
    bad = ~np.isfinite(x) | (x <= 0)
    if bad.any():
        tasks = np.asarray(data["task"].values).astype(str)
        raise HierbenchError(f"`{minutes}` must be positive and finite; tasks {tasks[bad][:5].tolist()} are not")
    return x
