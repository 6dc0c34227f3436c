"""How many pair rows a table people read shows: the one rule of the demo and the report.

M agents make M (M - 1) / 2 pairs: 300 for a 25-agent leaderboard, 49,770 for
316 persons of a survey read as agents. Up to :data:`PAIR_ROWS` pairs every
pair is shown; above it the table shows the pairs that differ (or, when fewer
than :data:`PAIR_ROWS_FEW` do, that many of the most significant), by the
adjusted p-value then the size of the difference, at most :data:`PAIR_ROWS`
of them, under a sentence with the counts, how many rows are left out and
where every pair is (:data:`PAIRS_CSV` beside the report, or the call that
gives them).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: every pair is shown up to this many (a 25-agent leaderboard: 300 pairs)
PAIR_ROWS = 300

#: above the cap, when fewer pairs than this differ, this many of the most significant are shown
PAIR_ROWS_FEW = 20

#: the complete pair table, written beside the report when its table is shortened
PAIRS_CSV = "pairs.csv"


def differ_parts(col: str) -> tuple[str, str]:
    """The p-value column and the level a verdict column names: ``differ (p max-T < 0.05)``."""
    p_col, level = col[len("differ (") : -1].rsplit(" < ", 1)
    return p_col, level


def differ_column(table: pd.DataFrame) -> str | None:
    """The name of :func:`hierbench.report.pair_frame`'s boolean ``differ (...)`` column (None if absent)."""
    return next((c for c in table.columns if str(c).startswith("differ (")), None)


def _differ(table: pd.DataFrame) -> tuple[str, str, str]:
    """The verdict column (``differ (p max-T < 0.05)``), its p-value column and its level, as written."""
    col = differ_column(table)
    if col is None:
        raise ValueError(f"a pair table needs its `differ (...)` column; got columns {list(table.columns)}")
    return col, *differ_parts(col)


def pair_order(table: pd.DataFrame) -> np.ndarray:
    """Row positions by the adjusted p-value (smallest first), then |mean difference| (largest first).

    Ties on both keep the table's order; an undefined p-value or difference sorts last.
    """
    _, p_col, _ = _differ(table)
    p = table[p_col].to_numpy(float)
    d = np.abs(table["mean difference"].to_numpy(float))
    p = np.where(np.isnan(p), np.inf, p)
    d = np.where(np.isnan(d), -np.inf, d)
    return np.lexsort((np.arange(len(table)), -d, p))


def shown_pairs(table: pd.DataFrame, where: str, *, cap: int = PAIR_ROWS) -> tuple[pd.DataFrame, str]:
    """The rows of a pair table people are shown, and the sentence saying what is left out.

    Parameters
    ----------
    table : DataFrame
        :func:`hierbench.report.pair_frame`'s table (numeric p-values; columns
        may be added or left out, but ``mean difference`` and the ``differ
        (...)`` column stay), one row per pair.
    where : str
        Where every pair is, as the sentence ends: "in `pairs.csv` beside this
        report", or the call that gives them.
    cap : int
        Every pair is shown up to this many.

    Returns
    -------
    (DataFrame, str)
        ``table`` and ``""`` when it has at most ``cap`` rows; else the pairs
        that differ (at least :data:`PAIR_ROWS_FEW` of the most significant,
        at most ``cap``) by the adjusted p-value then |mean difference|, and
        the sentence with the counts and the rows not shown.
    """
    n = len(table)
    if n <= cap:
        return table, ""
    col, p_col, level = _differ(table)
    n_differ = int(table[col].sum())
    k = min(cap, max(n_differ, PAIR_ROWS_FEW))
    shown = table.iloc[pair_order(table)[:k]]
    if n_differ > k:
        what = f"the {k:,} of the {n_differ:,} that differ with the smallest `{p_col}`"
    elif n_differ == k:
        what = f"the {k:,} that differ"
    else:
        what = f"the {k:,} with the smallest `{p_col}`: " + (
            f"the {n_differ:,} that differ{'s' if n_differ == 1 else ''} and the {k - n_differ:,} nearest"
            if n_differ else "none differs"
        )
    return shown, (
        f"{n:,} pairs, {n_differ:,} of which differ (`{p_col}` < {level}): too many to show one row each "
        f"(every pair is shown up to {cap:,}). Shown: {what}, by `{p_col}`, then the size of the mean "
        f"difference; the other {n - k:,} pairs are not shown here. All {n:,} pairs, with every column "
        f"of this table: {where}."
    )

def pair_agents(cmp) -> tuple[list[str], list[str]]:
    """The row agent and the column agent of each row of :func:`hierbench.report.pair_frame`'s table.

    Its rows are the comparison's upper triangle, in the result's agent order (as its
    ``to_frame()``); read from there, not by splitting ``"a - b"`` (a name may hold " - ").
    """
    ds = cmp.to_dataset() if hasattr(cmp, "to_dataset") else cmp
    agents = [str(a) for a in ds["agent"].values]
    i, j = np.triu_indices(len(agents), 1)
    return [agents[k] for k in i], [agents[k] for k in j]


def pair_values(matrix, agents: list[str], opponents: list[str]) -> np.ndarray:
    """``matrix[agent, opponent]`` for each pair, as floats (one lookup, not one ``.sel`` a pair).

    ``matrix``: a DataArray over ``agent`` and ``opponent`` (``prob_superiority``'s).
    """
    m = matrix.transpose("agent", "opponent")
    rows = pd.Index([str(a) for a in m["agent"].values]).get_indexer(agents)
    cols = pd.Index([str(a) for a in m["opponent"].values]).get_indexer(opponents)
    if (rows < 0).any() or (cols < 0).any():
        missing = sorted({a for a, r in zip(agents, rows, strict=True) if r < 0}
                         | {b for b, c in zip(opponents, cols, strict=True) if c < 0})
        raise ValueError(f"the pairwise matrix has no agent {missing} of the pairs")
    return np.asarray(m.values, dtype=float)[rows, cols]


def truth_diffs(truth, agents: list[str], opponents: list[str]) -> np.ndarray:
    """``truth[agent] - truth[opponent]`` for each pair (a DataArray over ``agent`` or a Series)."""
    s = truth.to_series() if hasattr(truth, "to_series") else pd.Series(truth)
    s = s.astype(float)
    s.index = s.index.astype(str)
    return s.reindex(agents).to_numpy() - s.reindex(opponents).to_numpy()


def pairs_csv(table: pd.DataFrame, agents: list[str], opponents: list[str]) -> str:
    """The complete pair table as CSV text: ``pair``, ``agent``, ``opponent``, then every column of ``table``.

    Numbers as they are (p-values not rounded to text), each written so it reads back exactly.
    """
    out = table.copy()
    out.insert(0, "opponent", opponents)
    out.insert(0, "agent", agents)
    return out.to_csv()
