"""Pairwise (head-to-head) data: battle logs, comparisons derived from an eval dataset, counts.

A *pairwise dataset* is an :class:`xarray.Dataset` with one dim ``comparison``:

``agent_a(comparison)``, ``agent_b(comparison)``
    str, the two agents compared (never equal).
``outcome(comparison)``
    float64: 1 if ``agent_a`` won, 0 if ``agent_b`` won, 0.5 for a tie.
``task(comparison)`` (optional)
    str, the task / prompt the comparison was made on.
``judge(comparison)`` (optional)
    str, who judged the comparison (a crowd worker, a judge model).
``position(comparison)`` (optional)
    int8, +1 if ``agent_a`` held the first position (left, home, shown
    first), -1 if ``agent_b`` did. Needed for a first-position (home)
    advantage.
coord ``agent``
    every agent, in a fixed order (agents with no comparison included).

Its sufficient statistics for a Bradley-Terry model are the *pair counts*
(:func:`to_pair_counts`): one row per ordered pair that occurs, dim ``pair``
with coords ``agent_a(pair)`` and ``agent_b(pair)`` and the counts
``n_win_a``, ``n_tie``, ``n_win_b``. With positions, ``agent_a`` of a pair is
the agent in the first position; without, pairs are oriented by the order of
the ``agent`` coord. A million battles cost what their count table costs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from .._base import SOURCE_COLUMN
from .._base import renamed_kwargs
from ._duplicates import _row_keys
from ._duplicates import repeat_pairs
from ._records import DuplicatePolicy
from ._records import read_table
from ._schema import EvalDataError
from ._schema import _fmt_list
from ._schema import _not_kept_attr
from ._schema import check_eval_dataset
from ._schema import check_option
from ._values import _label
from ._values import id_labels
from ._values import label_kinds
from ._values import warn_similar_labels

__all__ = [
    "check_pairwise",
    "from_pair_counts",
    "read_battles",
    "to_pair_counts",
    "to_pairwise",
]

PAIRWISE_SCHEMA = "hierbench.pairwise/1"
PAIR_COUNTS_SCHEMA = "hierbench.pair_counts/1"
DEFAULT_OUTCOMES: dict[str, float] = {"left": 1.0, "right": 0.0, "tie": 0.5}


def _as_text(x: np.ndarray) -> np.ndarray:
    """An object array of str (labels already text are kept, not converted again)."""
    x = np.asarray(x)
    if x.dtype == object and pd.api.types.infer_dtype(x, skipna=False) == "string":
        return x
    return x.astype(str).astype(object)


def _pairwise_dataset(
    a: np.ndarray,
    b: np.ndarray,
    outcome: np.ndarray,
    agents: list[str],
    *,
    task: np.ndarray | None = None,
    position: np.ndarray | None = None,
    attrs: dict | None = None,
) -> xr.Dataset:
    def var(x: np.ndarray) -> xr.Variable:
        # the arrays are already what a Variable holds (text as an object array of str):
        # without fastpath, xarray sends every object array through a pandas Series to look
        # for dates, which under pandas 3 converts the text to Arrow strings and back
        # (7.5 of the 8 ms a Dataset of 8,931 battles took)
        return xr.Variable(("comparison",), x, fastpath=True)

    data = {
        "agent_a": var(_as_text(a)),
        "agent_b": var(_as_text(b)),
        "outcome": var(np.asarray(outcome).astype(np.float64)),
    }
    if task is not None:
        data["task"] = var(_as_text(task))
    if position is not None:
        data["position"] = var(np.asarray(position).astype(np.int8))
    ds = xr.Dataset(
        data,
        coords={
            "comparison": np.arange(len(a)),
            "agent": pd.Index(np.asarray(agents, dtype=object), dtype=object, name="agent"),
        },
    )
    ds.attrs = {"hierbench_schema": PAIRWISE_SCHEMA, **(attrs or {})}
    return ds


def check_pairwise(pairs: xr.Dataset, *, name: str = "pairs") -> xr.Dataset:
    """Validate a pairwise dataset (see the module docstring) and return it.

    The rules: ``agent_a``, ``agent_b`` and ``outcome`` along ``comparison``;
    each outcome 1 (``agent_a`` won), 0 (``agent_b`` won) or 0.5 (a tie); no
    agent compared with itself; ``position``, when present, +1 or -1; and,
    with an ``agent`` coord, every compared agent in it.

    Parameters
    ----------
    pairs : xarray.Dataset
        Candidate pairwise dataset.
    name : str
        Argument name used in error messages.

    Raises
    ------
    EvalDataError
        Naming the rule broken and the offending comparisons.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"left": ["x", "y"], "right": ["y", "z"], "winner": ["left", "tie"]})
    >>> check_pairwise(read_battles(df)).sizes["comparison"]
    2
    """
    if not isinstance(pairs, xr.Dataset):
        raise EvalDataError(
            f"`{name}` must be an xarray.Dataset with dim 'comparison'; got {type(pairs).__name__}"
        )
    missing = [v for v in ("agent_a", "agent_b", "outcome") if v not in pairs]
    if missing:
        raise EvalDataError(
            f"`{name}` must hold `agent_a`, `agent_b` and `outcome` along 'comparison'; "
            f"missing {missing}"
        )
    for v in ("agent_a", "agent_b", "outcome"):
        if pairs[v].dims != ("comparison",):
            raise EvalDataError(f"`{name}.{v}` must have dims ('comparison',); got {pairs[v].dims}")
    out = pairs["outcome"].values.astype(np.float64)
    bad = ~np.isin(out, [0.0, 0.5, 1.0])
    if bad.any():
        idx = np.flatnonzero(bad)
        raise EvalDataError(
            f"`{name}.outcome` must be 1 (agent_a won), 0 (agent_b won) or 0.5 (tie); "
            f"{idx.size} comparisons are not, e.g. (comparison, outcome) "
            f"{_fmt_list([(int(i), float(out[i])) for i in idx])}"
        )
    a = [str(x) for x in pairs["agent_a"].values]
    b = [str(x) for x in pairs["agent_b"].values]
    same = np.flatnonzero(np.asarray(a, dtype=object) == np.asarray(b, dtype=object))
    if same.size:
        raise EvalDataError(
            f"`{name}`: an agent cannot be compared with itself; {same.size} comparisons have "
            f"agent_a == agent_b, e.g. (comparison, agent) {_fmt_list([(int(i), a[i]) for i in same])}"
        )
    if "position" in pairs:
        pos = pairs["position"].values
        badp = np.flatnonzero(~np.isin(pos, [1, -1]))
        if badp.size:
            raise EvalDataError(
                f"`{name}.position` must be +1 (agent_a first) or -1 (agent_b first); "
                f"{badp.size} comparisons are not, e.g. comparisons {_fmt_list(badp.tolist())}"
            )
    if "agent" in pairs.coords:
        known = {str(x) for x in pairs["agent"].values}
        unknown = sorted((set(a) | set(b)) - known)
        if unknown:
            raise EvalDataError(
                f"`{name}`: agents {_fmt_list(unknown)} appear in comparisons but not in the "
                "`agent` coord"
            )
    return pairs


@renamed_kwargs(dim="run_dim")
def to_pairwise(
    ds: xr.Dataset,
    *,
    rule: str = "mean",
    tie_tol: float = 0.0,
    run_dim: str = "run",
) -> xr.Dataset:
    """Head-to-head results of every pair of agents on every task both ran.

    Parameters
    ----------
    ds : xarray.Dataset
        Eval dataset (dims ``agent``, ``task``, ``run``).
    rule : {"mean", "run"}
        ``"mean"``: one comparison per task and pair of agents, the agent
        with the higher mean score over its runs wins. ``"run"``: one
        comparison per task, pair and run index where both agents have that
        run (for designs whose runs are paired, e.g. by seed).
    tie_tol : float
        Scores (means) within ``tie_tol`` of each other are a tie (0.5).
        The default 0 makes only exact equality a tie.
    run_dim : str
        The run dimension.

    Returns
    -------
    xarray.Dataset
        Pairwise dataset (no ``position``: there is no first position in an
        eval). ``agent_a`` precedes ``agent_b`` in the order of ``ds.agent``.
        ``attrs["n_not_comparable"]`` counts the (task, pair) (or (task,
        pair, run)) slots skipped because one of the two agents had no
        score there.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=3, n_tasks=5, n_runs=4, rng=0)
    >>> to_pairwise(ds).sizes["comparison"]   # 3 pairs x 5 tasks
    15
    """
    check_eval_dataset(ds, name="ds")
    if rule not in ("mean", "run"):
        raise EvalDataError(f"`rule` must be 'mean' or 'run'; got {rule!r}")
    if not (np.isfinite(tie_tol) and tie_tol >= 0):
        raise EvalDataError(f"`tie_tol` must be a finite number >= 0; got {tie_tol!r}")
    if run_dim not in ds["score"].dims:
        raise EvalDataError(
            f"`run_dim` must be a dimension of `ds.score` {ds['score'].dims}; got {run_dim!r}"
        )
    agents = [str(x) for x in ds["agent"].values]
    tasks = np.asarray([str(x) for x in ds["task"].values])
    if len(agents) < 2:
        raise EvalDataError(f"`ds` must hold at least 2 agents to compare; got {agents}")
    score = ds["score"].transpose("agent", "task", run_dim)
    if rule == "mean":
        with np.errstate(invalid="ignore"):
            vals = score.mean(run_dim, skipna=True).values[:, :, None]  # (agent, task, 1)
    else:
        vals = score.values  # (agent, task, run)
    i, j = np.triu_indices(len(agents), k=1)
    diff = vals[i] - vals[j]  # (pair, task, slot)
    ok = np.isfinite(diff)
    p_idx, t_idx, _ = np.nonzero(ok)
    d = diff[ok]
    outcome = np.where(d > tie_tol, 1.0, np.where(d < -tie_tol, 0.0, 0.5))
    ag = np.asarray(agents, dtype=object)
    return _pairwise_dataset(
        ag[i[p_idx]],
        ag[j[p_idx]],
        outcome,
        agents,
        task=tasks[t_idx],
        attrs={
            "source": "to_pairwise",
            "rule": rule,
            "tie_tol": float(tie_tol),
            "n_not_comparable": int((~ok).sum()),
        },
    )


def _kind_clash(col_a: pd.Series, col_b: pd.Series) -> list[str]:
    """Labels written as a number in one column and as the same text in the other."""
    if _is_text(col_a) and _is_text(col_b):
        return []  # nothing written as a number: nothing can clash
    la, ka = label_kinds(col_a)
    lb, kb = label_kinds(col_b)
    frame = pd.DataFrame({"label": np.concatenate([la, lb]), "kind": np.concatenate([ka, kb])})
    frame = frame.dropna()
    nk = frame.groupby("label")["kind"].nunique()
    return [str(x) for x in nk[nk > 1].index[:5]]


def _refuse_kind_clash(df: pd.DataFrame, source: str, a: tuple[str, str], b: tuple[str, str]) -> None:
    """Refuse two agent columns (argument, column) that write one name as a number and as text."""
    clash = _kind_clash(df[a[1]], df[b[1]])
    if clash:
        raise EvalDataError(
            f"`{a[0]}` column {a[1]!r} and `{b[0]}` column {b[1]!r} in {source} write the same agent "
            f"as a number in one and as text in the other ({_fmt_list(clash, 5)}), so two different "
            "agents would merge; write agent names with one type"
        )


def _is_text(col: pd.Series) -> bool:
    """Whether every entry of ``col`` is text (a string dtype, or objects that are all str)."""
    dt = col.dtype
    if pd.api.types.is_string_dtype(dt) and dt is not np.dtype(object):
        return True
    return dt is np.dtype(object) and pd.api.types.infer_dtype(col, skipna=True) == "string"


def _coded_labels(col: pd.Series, *, what: str, column: str, source: str) -> tuple[np.ndarray, np.ndarray]:
    """(codes, labels) of an identifier column: ``labels[codes]`` is the text as written.

    A text column is factorised as it is (no Python object per row); any
    other goes through :func:`~hierbench.data._values.id_labels`, which owns
    the rules for numbers, booleans and mixed columns. Empty entries are
    refused either way.
    """
    if not _is_text(col):
        codes, uniq = pd.factorize(id_labels(col, what=what, column=column, source=source))
        return codes, np.asarray(uniq, dtype=object)
    codes, uniq = pd.factorize(col)
    uniq = np.asarray(uniq, dtype=object)
    miss = codes < 0
    if (uniq == "").any():
        miss |= np.isin(codes, np.flatnonzero(uniq == ""))
    if miss.any():
        rows = np.flatnonzero(miss)
        raise EvalDataError(
            f"`{what}` column {column!r} in {source} must not be empty; {rows.size} rows are, "
            f"rows {_fmt_list(rows.tolist())}"
        )
    return codes, uniq


def _battle_columns(
    df: pd.DataFrame, source: str, left: str, right: str, winner: str, task: str | None, judge: str | None
) -> dict[str, str]:
    cols = {"left": left, "right": right, "winner": winner}
    cols |= {k: v for k, v in (("task", task), ("judge", judge)) if v is not None}
    missing = {k: v for k, v in cols.items() if v not in df.columns}
    if missing:
        raise EvalDataError(
            f"columns {missing} not found in the battle log {source}; available columns "
            f"{list(df.columns)}"
        )
    return cols


def _outcome_map(outcomes: Mapping[str, float] | None) -> dict[str, float]:
    mapping = dict(DEFAULT_OUTCOMES if outcomes is None else outcomes)
    badmap = {k: v for k, v in mapping.items() if v not in (0, 0.5, 1)}
    if badmap:
        raise EvalDataError(f"`outcomes` values must be 1, 0 or 0.5; got {badmap}")
    return {(k if isinstance(k, str) else _label(k)): v for k, v in mapping.items()}


def _verdict_outcomes(
    codes: np.ndarray, uniq: np.ndarray, mapping: dict[str, float], winner: str, where: str = ""
) -> np.ndarray:
    """Each verdict's outcome for the left agent; a verdict outside ``mapping`` is refused."""
    known = np.array([str(v) in mapping for v in uniq], dtype=bool)
    if not known.all():
        bad = ~known[codes]
        rows = np.flatnonzero(bad)
        raise EvalDataError(
            f"`winner` column {winner!r}{where} holds values not in `outcomes` {sorted(mapping)}: "
            f"{_fmt_list(sorted({str(v) for v in uniq[~known]}))} in {rows.size} rows, "
            f"rows {_fmt_list(rows.tolist())}"
        )
    return np.array([mapping[str(v)] for v in uniq], dtype=np.float64)[codes]


def _agent_codes(
    left: tuple[np.ndarray, np.ndarray], right: tuple[np.ndarray, np.ndarray], agents: list[str] | None,
    where: str = "",
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Codes of the left and right agents into the agent list (sorted names by default)."""
    # the distinct names of the two columns, first seen first (plain dicts: a pandas Index
    # of text costs an Arrow round trip per operation under pandas 3, 0.5 ms for 59 names)
    seen = dict.fromkeys(left[1].tolist())
    seen.update(dict.fromkeys(right[1].tolist()))
    uniq = list(seen)
    pos = {name: i for i, name in enumerate(uniq)}
    ia = np.array([pos[x] for x in left[1].tolist()], dtype=np.int64)[left[0]]
    ib = np.array([pos[x] for x in right[1].tolist()], dtype=np.int64)[right[0]]
    same = np.flatnonzero(ia == ib)
    if same.size:
        raise EvalDataError(
            f"`left` and `right`{where} must differ (an agent cannot battle itself); {same.size} rows "
            f"have the same agent on both sides, rows {_fmt_list(same.tolist())}"
        )
    if agents is None:
        names = sorted(uniq)
    else:
        names = [str(x) for x in agents]
        extra = sorted(set(uniq) - set(names))
        if extra:
            raise EvalDataError(
                f"`agents` must list every agent in the log; missing {_fmt_list(extra)}"
            )
        twice = sorted({x for x in names if names.count(x) > 1}) if len(set(names)) < len(names) else []
        if twice:
            raise EvalDataError(f"`agents` must list each agent once; {_fmt_list(twice)} appear more than once")
    order = {name: i for i, name in enumerate(names)}
    remap = np.array([order[x] for x in uniq], dtype=np.int64)
    return remap[ia], remap[ib], names


def _distinct_on_numbers(df: pd.DataFrame) -> bool:
    """Whether the records are distinct on their numeric columns alone (ids, times): then none repeats another.

    Records equal in every column are equal in any of them, so distinct numeric parts settle it
    without hashing the text columns (read_battles on LLMFAO 4.4 -> 3.2 ms; 2.5 before any check);
    False decides nothing.
    """
    num = [c for c in df.columns if df[c].dtype.kind in "iufbmM"]
    return bool(num) and not df.duplicated(subset=num).any()


def _repeat_keys(df: pd.DataFrame, cols: dict[str, str], codes: dict[str, tuple]) -> pd.Series:
    """Each record's key: equal keys are records equal in every column (values with their type).

    A text column read as an identifier enters by the codes it was already factorised to
    (``_coded_labels``: equal codes are equal strings); every other column by
    ``_row_keys``, the run-log readers' rule. Hashing the read text columns again cost
    read_battles most of its time on a three-column log (LLMFAO: 2.8 of 7 ms).
    """
    coded = {arg: col for arg, col in cols.items() if _is_text(df[col])}
    rest = [c for c in df.columns if c not in set(coded.values())]
    sizes = [len(codes[arg][1]) for arg in coded]
    if not rest and math.prod(sizes) < 2**62:  # the codes as the digits of one integer
        key = np.zeros(len(df), dtype=np.int64)
        for arg, size in zip(coded, sizes, strict=True):
            key = key * size + codes[arg][0]
        return pd.Series(key)
    frame = pd.DataFrame({arg: codes[arg][0] for arg in coded})
    if rest:
        frame["rest"] = _row_keys(df[rest]).to_numpy()
    return pd.util.hash_pandas_object(frame, index=False)


def _battle_repeats(
    df: pd.DataFrame, source: str, cols: dict[str, str], codes: dict[str, tuple], duplicates: str
) -> tuple[np.ndarray | None, dict]:
    """Apply the duplicates policy to a battle log: (the rows kept, None for all; the attrs counting them).

    A repeat is a record equal to an earlier one in every column the table has
    (``_row_keys``, the run-log readers' rule). It looks like a copy when the table
    has a column the reader does not read (an id, a time, ...), which would tell
    separate battles apart; in a table of only the columns read, a repeat is another
    battle with the same result.
    """
    read = set(cols.values())
    other = [str(c) for c in df.columns if c not in read]
    if _distinct_on_numbers(df):
        keys, dup, n = None, None, 0
    else:
        keys = _repeat_keys(df, cols, codes)
        dup = keys.duplicated(keep="first").to_numpy()
        n = int(dup.sum())
    dropped = n if duplicates == "drop" else 0
    attrs = {
        "n_records_kept": len(df) - dropped,
        "not_kept": _not_kept_attr({"exact copy of an earlier record (duplicates='drop')": dropped}),
        "n_repeated_records": n - dropped,
    }
    if not n:
        return None, attrs
    if duplicates == "drop":
        return ~dup, attrs
    if duplicates == "refuse" and other:
        rows = np.flatnonzero(dup)
        raise EvalDataError(
            f"duplicate battles in {source}: {n} of {len(df)} records repeat an earlier record in "
            f"every column, including {_fmt_list(other, 5)}, which read_battles does not read (e.g. "
            f"rows (first, copy) {_fmt_list(repeat_pairs(keys, rows), 5)}). A log whose records "
            "carry such columns (an id, a time) records each battle once, so these "
            "look like copies (a log read or merged twice), and counting them would add battles that "
            "never happened (duplicates='refuse'). Read the log once, pass duplicates='drop' to keep "
            "one of each set of identical records, or duplicates='keep' if they are distinct battles"
        )
    return None, attrs


def read_battles(
    obj: pd.DataFrame | str | os.PathLike,
    *,
    left: str = "left",
    right: str = "right",
    winner: str = "winner",
    outcomes: Mapping[str, float] | None = None,
    task: str | None = None,
    judge: str | None = None,
    position: bool = True,
    agents: list[str] | None = None,
    duplicates: DuplicatePolicy = "refuse",
    encoding: str = "utf-8",
) -> xr.Dataset:
    """Read a battle log (one row per judged comparison) into a pairwise dataset.

    Parameters
    ----------
    obj : DataFrame or path (CSV, JSONL, Parquet)
        The battle records, e.g. LLMFAO's ``left, right, winner`` table or an
        arena log. Agent names, verdicts and tasks are read as text exactly
        as written (``"001"`` and ``"1"`` are two agents; an integer column
        gives its decimal text; a name written as a number in one place and
        as the same text in another is refused).
    left, right, winner : str
        Column names: the agent shown first, the agent shown second, the verdict.
    outcomes : mapping, optional
        Verdict value -> outcome for the left agent (1 win, 0 loss, 0.5 tie).
        Default ``{"left": 1, "right": 0, "tie": 0.5}``; for an arena log
        use e.g. ``{"model_a": 1, "model_b": 0, "tie": 0.5, "tie (bothbad)": 0.5}``.
        A verdict not in the mapping is an error, never dropped.
    task : str, optional
        Column holding the task / prompt.
    judge : str, optional
        Column naming who judged each battle (LLMFAO's ``worker``), kept as
        the text variable ``judge`` (the report counts the judges).
    position : bool
        Record ``position = +1`` (the left agent was shown first), enabling a
        first-position advantage in :func:`hierbench.bayes.build_bradley_terry`.
    agents : list of str, optional
        Agent order for the ``agent`` coord (default: sorted names); must
        contain every agent in the log.
    duplicates : {"refuse", "drop", "keep"}
        Records identical in every column the table has (values with their
        type; two battles of one pair on one prompt by one judge with
        different ids are not). ``"refuse"`` (default): refused, naming the
        first rows and the count, when the table has a column not read here
        (an id, a time), which would tell separate battles apart; in a table
        of only the columns read (``left``, ``right``, ``winner``, ``task``,
        ``judge``) a repeat is another battle with the same result, and kept.
        ``"drop"``: keep the first of each set. ``"keep"``: keep them all.
    encoding : str
        Text encoding of a CSV / JSONL file.

    Returns
    -------
    xarray.Dataset
        Pairwise dataset with ``agent_a`` = left and ``agent_b`` = right.
        ``attrs``: ``n_records_read``, ``n_records_kept``, ``not_kept``
        (JSON: the copies ``duplicates="drop"`` dropped) and
        ``n_repeated_records`` (repeats kept as battles).

    Warns
    -----
    SimilarLabelsWarning
        Agent names (over both columns) or tasks that differ only by spaces
        or Unicode normalisation: they are kept as different agents (tasks).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"left": ["x", "y"], "right": ["y", "x"], "winner": ["left", "tie"]})
    >>> read_battles(df).outcome.values.tolist()
    [1.0, 0.5]
    """
    check_option(duplicates, "duplicates", ("refuse", "drop", "keep"))
    df, source = read_table(obj, encoding=encoding)
    cols = _battle_columns(df, source, left, right, winner, task, judge)
    mapping = _outcome_map(outcomes)
    ids = {arg: _coded_labels(df[col], what=arg, column=col, source=source) for arg, col in cols.items()}
    _refuse_kind_clash(df, source, ("left", left), ("right", right))
    # one agent list across both columns: 'gpt4' on the left and 'gpt4 ' on the right are two agents
    both = np.concatenate([ids["left"][1], ids["right"][1]])
    warn_similar_labels(both, what="agent", column=f"{left}/{right}", source=source)
    if task is not None:
        warn_similar_labels(ids["task"][1], what="task", column=task, source=source)
    out = _verdict_outcomes(*ids["winner"], mapping, winner, f" in {source}")
    ia, ib, names = _agent_codes(ids["left"], ids["right"], agents, f" in {source}")
    # after the checks above, so the rows they name are the table's own
    keep, counted = _battle_repeats(df, source, cols, ids, duplicates)
    if keep is not None:
        ia, ib, out = ia[keep], ib[keep], out[keep]
        ids = {arg: (codes[keep], labels) for arg, (codes, labels) in ids.items()}
    attrs = {"source": source, "reader": "read_battles", "n_records_read": len(df), **counted}
    return _battles_dataset(ia, ib, out, names, ids, cols, position=position, attrs=attrs)


def _battles_dataset(
    ia: np.ndarray, ib: np.ndarray, out: np.ndarray, names: list[str], ids: dict, cols: dict[str, str],
    *, position: bool, attrs: dict,
) -> xr.Dataset:
    """The pairwise dataset of the battles read: agents' codes, outcomes, coded task and judge labels."""
    ag = np.asarray(names, dtype=object)
    ds = _pairwise_dataset(
        ag[ia],
        ag[ib],
        out,
        names,
        task=ids["task"][1][ids["task"][0]] if "task" in cols else None,
        position=np.ones(len(ia), dtype=np.int8) if position else None,
        attrs=attrs,
    )
    if "task" in cols:  # the name the tasks are called by (e.g. a bootstrap over 'prompt')
        ds["task"].attrs[SOURCE_COLUMN] = str(cols["task"])
    if "judge" in cols:
        ds["judge"] = xr.Variable(("comparison",), _as_text(ids["judge"][1][ids["judge"][0]]),
                                  attrs={SOURCE_COLUMN: str(cols["judge"])})
    return ds


def _counts_dataset(
    a_idx: np.ndarray,
    b_idx: np.ndarray,
    win_a: np.ndarray,
    tie: np.ndarray,
    win_b: np.ndarray,
    agents: list[str],
    first_position: bool,
    attrs: dict,
) -> xr.Dataset:
    ag = np.asarray(agents, dtype=object)
    ds = xr.Dataset(
        {
            "n_win_a": ("pair", win_a.astype(np.int64)),
            "n_tie": ("pair", tie.astype(np.int64)),
            "n_win_b": ("pair", win_b.astype(np.int64)),
        },
        coords={
            "pair": np.arange(len(a_idx)),
            "agent_a": ("pair", ag[a_idx]),
            "agent_b": ("pair", ag[b_idx]),
            "agent": ag,
        },
    )
    ds.attrs = {
        "hierbench_schema": PAIR_COUNTS_SCHEMA,
        "first_position": int(first_position),
        "n_comparisons": int((win_a + tie + win_b).sum()),
        **attrs,
    }
    return ds


def oriented_cells(
    pairs: xr.Dataset, ia: np.ndarray, ib: np.ndarray, n_agents: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]:
    """Orient each comparison and key it to its ordered-pair cell: the one rule of pair counts and the rating fits.

    With ``position``, ``agent_a`` of a cell is the agent in the first position (a
    comparison with ``position == -1`` is flipped, its outcome with it); without, the
    agent first in the agents' order. Returns each cell's first and second agent codes,
    each comparison's cell, its outcome for the cell's first agent, and whether the cells
    are oriented by position.
    """
    var = pairs.variables
    out = var["outcome"].values.astype(np.float64)
    first = "position" in var
    flip = var["position"].values == -1 if first else ia > ib
    ia, ib = np.where(flip, ib, ia), np.where(flip, ia, ib)
    out = np.where(flip, 1.0 - out, out)
    uniq, inv = _unique_keys(ia * n_agents + ib, n_agents * n_agents)
    return uniq // n_agents, uniq % n_agents, inv, out, first


def _unique_keys(key: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(key, return_inverse=True)`` for integer keys in ``[0, n_keys)``.

    By counting when the key range is small against the number of keys (no sort:
    100,000 battles among 100 agents in 0.5 ms instead of 5 ms), else by sorting.
    """
    if n_keys > 4 * key.size + 4096:
        return np.unique(key, return_inverse=True)
    present = np.bincount(key, minlength=n_keys) > 0
    return np.flatnonzero(present), (np.cumsum(present) - 1)[key]


def to_pair_counts(pairs: xr.Dataset) -> xr.Dataset:
    """Aggregate a pairwise dataset into win / tie / loss counts per ordered pair.

    Parameters
    ----------
    pairs : xarray.Dataset
        Pairwise dataset.

    Returns
    -------
    xarray.Dataset
        Dim ``pair`` (one per ordered pair that occurs), coords ``agent_a``,
        ``agent_b`` and ``agent``; ``n_win_a``, ``n_tie``, ``n_win_b`` (int64).
        With ``position``, each comparison is oriented so that ``agent_a`` is
        the agent in the first position (``attrs["first_position"] = 1``);
        without, so that ``agent_a`` comes first in the ``agent`` coord.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"left": ["x", "x", "y"], "right": ["y", "y", "x"],
    ...                    "winner": ["left", "tie", "left"]})
    >>> c = to_pair_counts(read_battles(df))
    >>> c.n_win_a.values.tolist(), c.n_tie.values.tolist()
    ([1, 1], [1, 0])
    """
    check_pairwise(pairs)
    agents = (
        [str(x) for x in pairs["agent"].values]
        if "agent" in pairs.coords
        else sorted(
            set(pairs["agent_a"].values.astype(str)) | set(pairs["agent_b"].values.astype(str))
        )
    )
    index = pd.Index(agents)
    ia = index.get_indexer(_as_text(pairs["agent_a"].values)).astype(np.int64)
    ib = index.get_indexer(_as_text(pairs["agent_b"].values)).astype(np.int64)
    ca, cb, inv, out, first = oriented_cells(pairs, ia, ib, len(agents))
    win_a = np.bincount(inv, weights=out == 1.0, minlength=ca.size)
    tie = np.bincount(inv, weights=out == 0.5, minlength=ca.size)
    win_b = np.bincount(inv, weights=out == 0.0, minlength=ca.size)
    # the battles' own source (their file), and what made the counts of them
    source = {"source": pairs.attrs.get("source", "to_pair_counts"), "reader": "to_pair_counts"}
    return _counts_dataset(ca, cb, win_a, tie, win_b, agents, first, source)


def _count_columns(df: pd.DataFrame, source: str, cols: dict[str, str]) -> dict[str, np.ndarray]:
    """The win and tie columns as non-negative integer counts (refused otherwise, rows named)."""
    missing = {k: v for k, v in cols.items() if v not in df.columns}
    if missing:
        raise EvalDataError(
            f"columns {missing} not found in {source}; available columns {list(df.columns)}"
        )
    counts = {}
    for arg in ("wins_a", "wins_b", "ties"):
        if arg not in cols:
            continue
        x = pd.to_numeric(df[cols[arg]], errors="coerce").to_numpy(dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(x) | (x < 0) | (x != np.round(x)))
        if bad.size:
            raise EvalDataError(
                f"`{arg}` column {cols[arg]!r} must hold non-negative integer counts; rows "
                f"{_fmt_list(bad.tolist())} do not",
                rows=bad.tolist(),
            )
        counts[arg] = x.astype(np.int64)
    return counts


def _pair_agents(
    df: pd.DataFrame, source: str, agent_a: str, agent_b: str, agents: list[str] | None
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Codes of each row's two agents into the agent list, with the identifier rules enforced."""
    a = id_labels(df[agent_a], what="agent_a", column=agent_a, source=source)
    b = id_labels(df[agent_b], what="agent_b", column=agent_b, source=source)
    _refuse_kind_clash(df, source, ("agent_a", agent_a), ("agent_b", agent_b))
    warn_similar_labels(np.concatenate([a, b]), what="agent", column=f"{agent_a}/{agent_b}", source=source)
    same = np.flatnonzero(a == b)
    if same.size:
        raise EvalDataError(
            f"`agent_a` and `agent_b` must differ; rows {_fmt_list(same.tolist())} pair an agent "
            "with itself",
            rows=same.tolist(),
        )
    names = sorted(set(a) | set(b))
    if agents is not None:
        extra = sorted(set(names) - {str(x) for x in agents})
        if extra:
            raise EvalDataError(
                f"`agents` must list every agent in the table; missing {_fmt_list(extra)}"
            )
        names = [str(x) for x in agents]
    index = pd.Index(names)
    return index.get_indexer(a).astype(np.int64), index.get_indexer(b).astype(np.int64), names


def from_pair_counts(
    obj: pd.DataFrame | str | os.PathLike,
    *,
    agent_a: str,
    agent_b: str,
    wins_a: str,
    wins_b: str,
    ties: str | None = None,
    first_position: bool = False,
    agents: list[str] | None = None,
) -> xr.Dataset:
    """Read an already aggregated table (one row per pair with win counts) into pair counts.

    Parameters
    ----------
    obj : DataFrame or path
        E.g. citation counts between journals, or baseball home/away wins.
    agent_a, agent_b, wins_a, wins_b : str
        Column names: the two agents and how often each beat the other.
    ties : str, optional
        Column with the number of ties.
    first_position : bool
        True if ``agent_a`` held the first (home) position in every
        comparison counted on its row.
    agents : list of str, optional
        Agent order (default: sorted names).

    Returns
    -------
    xarray.Dataset
        Pair counts, as from :func:`to_pair_counts` (rows for the same
        ordered pair are summed).

    Warns
    -----
    SimilarLabelsWarning
        Agent names (over both columns) that differ only by spaces or
        Unicode normalisation: they are kept as different agents.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"j1": ["A", "A"], "j2": ["B", "C"], "w1": [3, 1], "w2": [2, 4]})
    >>> c = from_pair_counts(df, agent_a="j1", agent_b="j2", wins_a="w1", wins_b="w2")
    >>> int(c.attrs["n_comparisons"])
    10
    """
    df, source = read_table(obj)
    cols = {"agent_a": agent_a, "agent_b": agent_b, "wins_a": wins_a, "wins_b": wins_b}
    if ties is not None:
        cols["ties"] = ties
    counts = _count_columns(df, source, cols)
    ia, ib, names = _pair_agents(df, source, agent_a, agent_b, agents)
    wa, wb = counts["wins_a"], counts["wins_b"]
    t = counts.get("ties", np.zeros_like(wa))
    if not first_position:
        flip = ia > ib
        ia, ib = np.where(flip, ib, ia), np.where(flip, ia, ib)
        wa, wb = np.where(flip, wb, wa), np.where(flip, wa, wb)
    m = len(names)
    uniq, inv = np.unique(ia * m + ib, return_inverse=True)
    return _counts_dataset(
        uniq // m,
        uniq % m,
        np.bincount(inv, weights=wa, minlength=uniq.size),
        np.bincount(inv, weights=t, minlength=uniq.size),
        np.bincount(inv, weights=wb, minlength=uniq.size),
        names,
        first_position,
        {"source": source, "reader": "from_pair_counts", "n_records_read": len(df)},
    )
