"""The report's one order of agents: ``hierbench summary``'s, which compare's matrix uses too.

By mean score per task over the tasks each agent ran, highest first, ties by name
(``score_order``, the one owner of that rule); a report with no data (a fit alone) orders by
each agent's posterior mean, highest first, ties by name, as does a report of battles (which
hold no score to order by). Every table and figure that lists the
agents one per row takes this order (was: the log's file order, which put SWE-bench's 0.102
agent between 0.536 and 0.450, its file being sorted by the leaderboard's reported score).
"""

from __future__ import annotations

import pandas as pd

from ._context import _Context

#: the order in a caption's words, by what it rests on (data, or a fit alone)
ORDER_WORDS = {
    "data": "agents by mean score per task (over the tasks each ran, `hierbench summary`'s order), "
    "highest first, ties by name",
    "fit": "agents by posterior mean, highest first, ties by name (no data given)",
    # battles hold no score per agent to order by: the posterior mean is the order with or without them
    "battles": "agents by posterior mean ability, highest first, ties by name",
}


def agent_order(ctx: _Context) -> list[str] | None:
    """The agents in the report's order, as text; None where neither data nor a per-agent posterior is given."""
    if "agent_order" not in ctx.cache:
        ctx.cache["agent_order"] = _order(ctx)
    return ctx.cache["agent_order"]


def _order(ctx: _Context) -> list[str] | None:
    from ._pairs import highest_first
    from ._pairs import score_order

    if ctx.data is not None and "agent" in ctx.data.coords:
        return score_order(ctx.data, ctx.cache.get("summary"))  # the Data summary's, where it ran
    bay = ctx.bayes_frame() if ctx.fit is not None else None
    return None if bay is None else highest_first(bay["estimate"])


def order_words(ctx: _Context) -> str:
    """The report's order in words (:data:`ORDER_WORDS`), by what it rests on."""
    from ._match import battles_fit

    if ctx.data is not None:
        return ORDER_WORDS["data"]
    return ORDER_WORDS["battles" if ctx.battles is not None or battles_fit(ctx.fit) else "fit"]


def in_report_order(table: pd.DataFrame, ctx: _Context) -> pd.DataFrame:
    """``table``'s rows in :func:`agent_order`.

    The agent is the index (or its first level); rows of one agent keep the order of the
    index's other levels (pass^k's k). Agents the order does not hold go last, in their order.
    """
    order = agent_order(ctx)
    if order is None:
        return table
    at = {a: i for i, a in enumerate(order)}
    keys = [(at.get(str(i[0] if isinstance(i, tuple) else i), len(at)), *(i[1:] if isinstance(i, tuple) else ()))
            for i in table.index]  # fmt: skip
    return table.iloc[sorted(range(len(table)), key=keys.__getitem__)]
