"""Pair comparisons as people read them: the one table the CLI, the demo and the report print.

Both read :func:`hierbench.freq.compare_agents`'s result through its
``to_frame()`` (one row per unordered pair), so they show the same numbers
for the same data and seed. With many agents one row per pair is hundreds of
rows: :func:`pair_matrix` puts the differences and their Holm marks in one
agent x agent matrix, and the full table stays one call away
(``compare_agents(...).to_frame()``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from ..freq import PairwiseComparisonResult

__all__ = ["MATRIX_ABOVE", "differ_column", "marks_legend", "pair_frame", "pair_matrix", "settings_text"]

#: With more agents than this the report and the CLI show the compact matrix.
MATRIX_ABOVE = 8

#: Holm-adjusted p below alpha, alpha / 5, alpha / 50 (0.05, 0.01, 0.001 at 95%).
_MARK_STEPS = ((50.0, "***"), (5.0, "**"), (1.0, "*"))


def _mark(p: float, alpha: float) -> str:
    if not np.isfinite(p):
        return ""
    for div, mark in _MARK_STEPS:
        if p < alpha / div:
            return mark
    return ""


def marks_legend(alpha: float) -> str:
    """What the significance marks mean at family-wise level ``alpha``."""
    parts = [f"`{m}` Holm-adjusted p < {alpha / d:.3g}" for d, m in reversed(_MARK_STEPS)]
    return "; ".join(parts) + "; no mark: not separated at that level"


def _test_of(cmp) -> str:
    ds = cmp.to_dataset() if hasattr(cmp, "to_dataset") else cmp
    return str(ds.attrs.get("test", "permutation"))


def pair_frame(cmp: PairwiseComparisonResult, *, alpha: float = 0.05) -> pd.DataFrame:
    """One row per pair (row agent minus column agent), the columns a reader needs.

    Parameters
    ----------
    cmp : PairwiseComparisonResult
        From :func:`hierbench.freq.compare_agents`.
    alpha : float
        Family-wise level of the ``differ`` column (Holm-adjusted p < alpha).

    Returns
    -------
    pandas.DataFrame
        Indexed by ``"a - b"``: ``mean difference``, ``lower``, ``upper``,
        ``shared tasks``, the p-value of the test, its Monte Carlo error when
        the result reports one, ``p Holm``, ``p BH`` and ``differ``.
    """
    df = cmp.to_frame()
    test = _test_of(cmp)
    out = pd.DataFrame(index=df.index.astype(str))
    out["mean difference"] = df["estimate"].astype(float)
    out["lower"] = df["lower"].astype(float)
    out["upper"] = df["upper"].astype(float)
    if "n_tasks" in df:
        out["shared tasks"] = df["n_tasks"].round().astype("Int64")
    if "p_value" in df:
        out[f"p ({test})"] = df["p_value"].astype(float)
    # the Monte Carlo error of a resampled p-value, under whatever name the result gives it
    for col in df.columns:
        if col.startswith("p_") and ("mcse" in col or "mc_" in col):
            out[f"MC error of p ({col})"] = df[col].astype(float)
    for key, label in (("p_holm", "p Holm"), ("p_bh", "p BH")):
        if key in df:
            out[label] = df[key].astype(float)
    if "p Holm" in out:
        out[f"differ (Holm < {alpha:g})"] = out["p Holm"] < alpha
    out.index.name = "pair"
    return out


def differ_column(table: pd.DataFrame) -> str | None:
    """The name of :func:`pair_frame`'s boolean ``differ (...)`` column (None if absent)."""
    return next((c for c in table.columns if str(c).startswith("differ (")), None)


def settings_text(cmp: PairwiseComparisonResult) -> str:
    """The resampling settings the result records (resamples, permutations, ...), as text."""
    attrs = cmp.to_dataset().attrs if hasattr(cmp, "to_dataset") else cmp.attrs
    skip = {"ci_prob", "ci_kind", "test", "n_pairs"}
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in attrs.items() if k not in skip)


def _order(cmp) -> list[str]:
    """Agents by their mean paired difference against all others (best first)."""
    ds = cmp.to_dataset() if hasattr(cmp, "to_dataset") else cmp
    d = ds["estimate"] if "estimate" in ds else ds["mean_diff"]
    score = np.nanmean(d.transpose("agent", "opponent").values, axis=1)
    agents = [str(a) for a in ds["agent"].values]
    return [agents[i] for i in np.argsort(-score, kind="stable")]


def pair_matrix(cmp: PairwiseComparisonResult, *, alpha: float = 0.05, numbered: bool = True) -> pd.DataFrame:
    """The pairs as one matrix: row agent minus column agent, with Holm marks.

    Agents are ordered by their mean paired difference against all the
    others (best first), and only the upper triangle is filled (the lower
    one is its mirror), so most entries read "row beats column by".

    Parameters
    ----------
    cmp : PairwiseComparisonResult
    alpha : float
        Family-wise level of the marks (see :func:`marks_legend`).
    numbered : bool
        Rows ``"1. name"`` and columns ``"1"``, ``"2"``, ... (narrow enough
        for 25 agents); else the names on both axes.

    Returns
    -------
    pandas.DataFrame
        Text cells such as ``"+0.64***"``; ``""`` on and below the diagonal.
        The first agent's column (empty) is left out.
    """
    ds = cmp.to_dataset() if hasattr(cmp, "to_dataset") else cmp
    d = (ds["estimate"] if "estimate" in ds else ds["mean_diff"]).transpose("agent", "opponent")
    p = ds["p_holm"].transpose("agent", "opponent")
    order = _order(cmp)
    cells = []
    for i, a in enumerate(order):
        row = []
        for j, b in enumerate(order):
            if j <= i:
                row.append("")
                continue
            v = float(d.sel(agent=a, opponent=b))
            row.append(f"{v:+.2f}{_mark(float(p.sel(agent=a, opponent=b)), alpha)}")
        cells.append(row)
    if numbered:
        index = [f"{i}. {a}" for i, a in enumerate(order, start=1)]
        columns = [str(i) for i in range(1, len(order) + 1)]
    else:
        index, columns = order, order
    out = pd.DataFrame(cells, index=index, columns=columns)
    # the first column holds only the diagonal (the last row stays: it names the last column)
    out = out.iloc[:, 1:]
    out.index.name = "agent (row minus column)"
    return out
