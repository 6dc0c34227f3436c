"""How many pair rows a table people read shows: the one rule of the demo and the report.

M agents make M (M - 1) / 2 pairs: 300 for a 25-agent leaderboard, 49,770 for
316 persons of a survey read as agents. Up to :data:`PAIR_ROWS` pairs every
pair is shown; above it the table shows the pairs that differ (or, when fewer
than :data:`PAIR_ROWS_FEW` do, that many of the most significant), by the
adjusted p-value then the size of the difference, at most :data:`PAIR_ROWS`
of them, under a sentence with the counts, how many rows are left out and
where every pair is (:data:`PAIRS_CSV` beside the report, or the call that
gives them).

Also the flags of Bayes numbers that no common task supports (:func:`pair_link_flags`,
:func:`rank_link_flags`, :func:`link_caption`): agents of different :func:`task_groups`
are compared by the model's assumption alone.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._base import task_groups as _task_groups

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


# ---------------------------------------------------------------- agents no task links (audit C, C8)

#: the Bayes flag of a pair, or an agent's rank, that no task links: the model's assumption alone
UNLINKED_FLAG = (
    "model only: no task in common{how}, so {what} rests on the two task sets being exchangeable "
    "draws, which the data cannot check"
)
#: the Bayes flag of a pair with no task in common that other agents' tasks link
INDIRECT_FLAG = "indirect: no task in common; compared only through other agents' tasks (the model's additivity)"


def ran_matrix(fit, data) -> pd.DataFrame | None:
    """Agent x task booleans: which agent ran which task, as the fit saw it (else as the log has it).

    Read from the fit's observed cells (``cell_agent`` / ``cell_task``, or a formula fit's
    ``obs_agent`` / ``obs_task``), else from the log's scores (a score on any run); None for
    a fit of battles with no log (no tasks to link the agents).
    """
    if fit is not None and "observed_data" in getattr(fit, "children", {}):
        obs = fit["observed_data"].to_dataset()
        for a, t in (("cell_agent", "cell_task"), ("obs_agent", "obs_task")):
            if a in obs.coords and t in obs.coords:
                return pd.crosstab(np.asarray(obs[a].values).astype(str), np.asarray(obs[t].values).astype(str)) > 0
    if data is None or "score" not in data or not {"agent", "task"} <= set(data["score"].dims):
        return None
    s = data["score"]
    ran = s.notnull().any([d for d in s.dims if d not in ("agent", "task")]).transpose("agent", "task")
    return pd.DataFrame(ran.values, index=[str(a) for a in s["agent"].values])


def task_groups(ran: pd.DataFrame) -> pd.Series:
    """:func:`hierbench._base.task_groups` of ``ran`` (agent x task booleans), by agent."""
    return pd.Series(_task_groups(ran.to_numpy()), index=ran.index)


def pair_link_flags(ran: pd.DataFrame | None, agents: list[str], opponents: list[str]) -> list[str]:
    """Each pair's Bayes flag for a comparison no common task supports ("" where the two share a task).

    Agents of different :func:`task_groups`: :data:`UNLINKED_FLAG`; of one group but with no
    task in common: :data:`INDIRECT_FLAG`. No flags without ``ran`` (:func:`ran_matrix`).
    """
    if ran is None:
        return [""] * len(agents)
    group = task_groups(ran)
    unlinked = UNLINKED_FLAG.format(how=", not even through other agents", what="P(a > b)")
    out = []
    for a, b in zip(agents, opponents, strict=True):
        if a not in ran.index or b not in ran.index:
            out.append("")
        elif group[a] != group[b]:
            out.append(unlinked)
        else:
            out.append("" if (ran.loc[a] & ran.loc[b]).any() else INDIRECT_FLAG)
    return out


def rank_link_flags(ran: pd.DataFrame | None, index) -> pd.Series:
    """Each agent's rank flag when some agents are never compared on a common task ("" elsewhere).

    An agent's rank is its place among all the others: when the agents fall into several
    :func:`task_groups`, every agent's place against those of the other groups is the model's
    alone. ``index``: agents (or a MultiIndex whose first level is the agent).
    """
    agents = [str(i[0] if isinstance(i, tuple) else i) for i in index]
    out = pd.Series("", index=index, dtype=object)
    if ran is None:
        return out
    group = task_groups(ran)
    if group.nunique() < 2:
        return out
    for k, a in zip(index, agents, strict=True):
        if a in group.index:
            others = list(group.index[group != group[a]])
            who, them = (others[0], "that agent") if len(others) == 1 else (f"{len(others)} agents", "them")
            out[k] = "partly " + UNLINKED_FLAG.format(how=f" with {who}", what=f"its order against {them}")
    return out


def link_caption(ran: pd.DataFrame | None, what: str = "P(a > b)") -> str:
    """A figure caption's word on agents no task links: which are apart, and what their ``what`` rests on."""
    if ran is None:
        return ""
    group = task_groups(ran)
    if group.nunique() < 2:
        return ""
    if group.nunique() == len(group):
        return (f" No two agents ran a common task: every {what} is the model's alone, resting on the agents' "
                "task sets being exchangeable draws from one task population, which the data cannot check.")  # fmt: skip
    parts = [", ".join(group.index[group == g]) for g in pd.unique(group)]
    return (f" The agents fall into {len(parts)} groups with no task in common, not even through other agents "
            f"({'; '.join(f'[{p}]' for p in parts)}): a {what} across groups is the model's alone, resting on "
            "their task sets being exchangeable draws from one task population, which the data cannot check.")  # fmt: skip
