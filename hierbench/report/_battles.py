"""The report of battles (pairwise judgments): who met whom, and what the sections say of it.

A battle log (:func:`hierbench.data.read_battles`) or a Bradley-Terry fit gives the report its
pairs; ``battle_graph`` works out, over every agent (those in no battle included), who met
whom and which groups no chain of battles links, and the data summary, abilities, ranks and
pairwise sections say what of theirs rests on the prior or on the model's transitivity alone
(audit P). The data summary of battles (``_sec_battles``) lives here too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .._base import counted
from .._base import fit_record
from ..freq import FEW_UNITS  # the one count of few resampled units, owned by freq
from ._context import _TITLES
from ._context import _Context
from ._context import _Skip
from ._context import file_name
from ._report import Report


def of_battles(ctx: _Context) -> bool:
    """Whether the report is of battles: a battle log given, or a Bradley-Terry fit."""
    from ._match import battles_fit

    return ctx.battles is not None or battles_fit(ctx.fit)


def _battle_pairs(ctx: _Context) -> tuple[pd.DataFrame, str] | None:
    """The report's battles per ordered pair and where they come from (the log, else the fit); None: neither."""
    from ._match import data_pair_counts
    from ._match import fit_pair_table
    from ._match import pair_table

    if ctx.battles is not None:
        return pair_table(data_pair_counts(ctx.battles)), f"source {file_name(ctx.battles.attrs.get('source', 'the battle log'))}"
    table = fit_pair_table(ctx.fit) if ctx.fit is not None else None
    if table is None:
        return None
    return table, "from the fit's constant data, the battles it saw; give the battle log for its prompts and judges"


def _battle_agents(ctx: _Context, pairs: pd.DataFrame) -> list[str]:
    """Every agent of the report's battles: the log's ``agent`` coord, else the fit's, agents in no battle included.

    ``read_battles(agents=[...])`` keeps an agent that never played in that coord, and the fit ranks
    it from its prior; counting only the agents the pairs name left it out of the counts (audit P, F1).
    """
    src = ctx.battles if ctx.battles is not None and "agent" in ctx.battles.coords else ctx.post
    names = [str(a) for a in src["agent"].values] if src is not None and "agent" in src.coords else []
    return names + sorted({*map(str, pairs["agent_a"]), *map(str, pairs["agent_b"])} - set(names))


def battle_graph(ctx: _Context) -> dict | None:
    """Who met whom in the report's battles (cached): what the data summary, ranks and pairwise sections say of it.

    ``met``: battles per pair of agents (agent x agent, symmetric, over every agent); ``unplayed``: the
    agents in no battle; ``groups``: the agents in some battle, split where no chain of battles links
    them (largest first). The groups are :func:`hierbench._base.task_groups`' of the agents' "tasks"
    each battle they are in, with each agent itself: two agents share one exactly when they met.
    None where the report has no battles. A fit's recorded ``n_components`` that disagrees is warned of.
    """
    from .._base import task_groups

    if "battle_graph" in ctx.cache:
        return ctx.cache["battle_graph"]
    got = _battle_pairs(ctx) if of_battles(ctx) else None
    if got is None:
        ctx.cache["battle_graph"] = None
        return None
    pairs = got[0]
    agents = _battle_agents(ctx, pairs)
    at = {a: i for i, a in enumerate(agents)}
    met = np.zeros((len(agents), len(agents)), dtype=np.int64)
    n = pairs[["n_win_a", "n_tie", "n_win_b"]].sum(axis=1).to_numpy().astype(np.int64)
    ia, ib = pairs["agent_a"].astype(str).map(at).to_numpy(), pairs["agent_b"].astype(str).map(at).to_numpy()
    np.add.at(met, (ia, ib), n)
    met = met + met.T
    label = task_groups((met > 0) | np.eye(len(agents), dtype=bool))
    played = met.sum(1) > 0
    groups = [[agents[i] for i in np.flatnonzero((label == g) & played)] for g in pd.unique(label[played])]
    groups.sort(key=len, reverse=True)
    out = {"met": pd.DataFrame(met, index=agents, columns=agents), "groups": groups,
           "unplayed": [a for a, p in zip(agents, played, strict=True) if not p]}  # fmt: skip
    recorded = fit_record(ctx.fit, "hierbench_structure").get("design", {}).get("n_components") if ctx.fit is not None else None
    if recorded is not None and int(recorded) != len(groups) + len(out["unplayed"]):
        ctx.warnings.append(f"the fit records {recorded} components of its comparison graph; the report's battles "
                            f"hold {len(groups) + len(out['unplayed'])}")  # fmt: skip
    ctx.cache["battle_graph"] = out
    return out


def battle_summary(pairs: pd.DataFrame, battles: xr.Dataset | None, agents: list[str] | None = None
                   ) -> tuple[pd.DataFrame, str, dict]:  # fmt: skip
    """Per agent: battles, wins, ties, losses, opponents; the sentence that counts them; the counts.

    ``pairs``: win / tie / loss counts per ordered pair (``_match.PAIR_COLUMNS``). ``battles``: the log, for its prompts (``task``), judges (a ``worker``,
    ``judge`` or ``annotator`` variable) and which side is the first position. ``agents``: every agent
    (``battle_graph``'s), those in no battle included (default: the agents the pairs name).
    """
    rows = []
    for side, win, lose in (("agent_a", "n_win_a", "n_win_b"), ("agent_b", "n_win_b", "n_win_a")):
        other = "agent_b" if side == "agent_a" else "agent_a"
        rows.append(pairs.rename(columns={side: "agent", other: "opponent", win: "wins", lose: "losses", "n_tie": "ties"}))
    long = pd.concat(rows)[["agent", "opponent", "wins", "ties", "losses"]]
    long["battles"] = long[["wins", "ties", "losses"]].sum(axis=1)
    table = long.groupby("agent").agg(battles=("battles", "sum"), wins=("wins", "sum"), ties=("ties", "sum"),
                                      losses=("losses", "sum"))  # fmt: skip
    table["opponents"] = long[long["battles"] > 0].groupby("agent")["opponent"].nunique()
    if agents is not None:  # an agent in no battle is a row of zeros (was: left out, "3 of the 3 pairs met")
        table = table.reindex(list(agents) + [a for a in table.index if a not in agents])
    n, ties = int(long["battles"].sum()) // 2, int(pairs["n_tie"].sum())
    table = table.fillna(0).astype(int).sort_values("battles", ascending=False, kind="stable")
    per = table["battles"]
    k = len(table)
    played = long[long["battles"] > 0]
    met = len({frozenset(p) for p in zip(played["agent"], played["opponent"], strict=True)})
    text = (f"{n:,} battles between {counted(k, 'agent')}; {met:,} of the {k * (k - 1) // 2:,} pairs of agents met; "
            + f"{ties:,} ties ({ties / max(n, 1):.1%})"
            + f"; battles per agent min {per.min():,}, median {per.median():,g}, max {per.max():,}")  # fmt: skip
    text += _battle_log_text(pairs, battles)
    counts = {"battles": n, "ties": ties, "agents": k, "unplayed": int((per == 0).sum())}
    return table, text, counts


def _battle_log_text(pairs: pd.DataFrame, battles: xr.Dataset | None) -> str:
    """What only the log says: the first position's wins, the prompts and the judges."""
    if battles is None or "comparison" not in battles.dims:
        return ""
    out = ""
    if battles.attrs.get("first_position") or "position" in battles:
        a, b = int(pairs["n_win_a"].sum()), int(pairs["n_win_b"].sum())
        out += f"; the agent in the first position won {a:,}, the second {b:,}"
    if "task" in battles:
        per = pd.Series(np.asarray(battles["task"].values).astype(str)).value_counts()
        out += f"; {counted(len(per), 'prompt')} (battles per prompt min {per.min()}, median {per.median():g}, max {per.max()})"
    for name in ("worker", "judge", "annotator"):
        if name in battles:
            out += f"; {counted(pd.Series(np.asarray(battles[name].values).astype(str)).nunique(), name)}"
    return out


def _names(agents: list[str]) -> str:
    """Agents' names in a sentence, "a, b and c"."""
    return agents[0] if len(agents) == 1 else ", ".join(agents[:-1]) + " and " + agents[-1]


def unplayed_words(graph: dict, one: str = "its ability, rank and pairwise probabilities are",
                   many: str = "their abilities, ranks and pairwise probabilities are") -> str:
    """The sentence on the agents in no battle: what of theirs (``one`` / ``many``) is the prior's ("" if none)."""
    none = graph["unplayed"]
    if not none:
        return ""
    return f"{_names(none)} {'is' if len(none) == 1 else 'are'} in no battle: {one if len(none) == 1 else many} the prior's alone."


def groups_words(graph: dict, what: str) -> str:
    """The sentence on agents that no chain of battles links: ``what`` across those groups rests on the prior ("" if one)."""
    groups = graph["groups"]
    if len(groups) < 2:
        return ""
    return (f"The agents in battles fall into {len(groups)} groups that never meet, not even through other agents "
            f"({'; '.join(f'[{_names(g)}]' for g in groups)}): {what} across groups rests on the prior alone, "
            "not on any battle.")  # fmt: skip


def never_met_words(graph: dict, what: str, where: str = "", the: str = "") -> str:
    """The sentence counting the pairs of agents that never met and what their ``what`` rests on ("" if none).

    A pair in one group is compared through the agents that link them (the model's transitivity); a pair across
    groups, or with an agent in no battle, by the prior alone. ``where``: where the reader finds them; ``the``: the
    article ``what`` takes after "for 2 of them".
    """
    agents = list(graph["met"].index)
    comp = {a: g for g, names in enumerate(graph["groups"]) for a in names}
    i, j = np.triu_indices(len(agents), 1)
    never = graph["met"].to_numpy()[i, j] == 0
    apart = np.array([comp.get(agents[x], -1 - x) != comp.get(agents[y], -2 - y) for x, y in zip(i, j, strict=True)])
    k, n_apart = int(never.sum()), int((never & apart).sum())
    if not k:
        return ""
    linked = "comes from the model's transitivity alone (each agent's battles with the agents that link them)"
    prior = "is the prior's alone (across groups that never meet, or with an agent in no battle)"
    text = f"{k:,} of the {len(i):,} pairs never met{where}: "
    if n_apart in (0, k):
        return text + f"{'its' if k == 1 else 'their'} {what} " + (linked if n_apart == 0 else prior) + "."
    return text + f"for {k - n_apart:,} of them {the}{what} {linked}; for {n_apart:,} it {prior}."


def _sec_battles(ctx: _Context, rep: Report, sid: str) -> None:
    """The data summary of battles: counts of battles, ties, prompts and judges, and each agent's record."""
    got = _battle_pairs(ctx)
    if got is None:
        raise _Skip("no battle log given, and the fit records no battles")
    table, text, flags = _battles_summary(ctx, got)
    text += ("\n\n**Flags:**\n\n" + "\n".join(f"- {f}" for f in flags)) if flags else (
        f" No agent is in fewer than {FEW_UNITS} battles.")  # fmt: skip
    rep.section(_TITLES[sid], text, table=table, id=sid)


def _battles_summary(ctx: _Context, got: tuple[pd.DataFrame, str]) -> tuple[pd.DataFrame, str, list[str]]:
    """Each agent's record, the sentence counting the battles, and the flags (agents in no or few battles, groups)."""
    graph = battle_graph(ctx)
    table, text, counts = battle_summary(got[0], ctx.battles, list(graph["met"].index))
    counts["groups"] = len(graph["groups"])
    ctx.cache["battles"] = counts
    few = table.index[(table["battles"] > 0) & (table["battles"] < FEW_UNITS)].tolist()
    text += f" ({got[1]})."
    flags = [unplayed_words(graph), groups_words(graph, "a comparison")]
    flags += [f"agents in fewer than {FEW_UNITS} battles: {few} (their abilities rest on those few judgments and "
              "the prior)"] if few else []  # fmt: skip
    text += "" if graph["unplayed"] or len(graph["groups"]) > 1 else (
        " The battles link every agent with every other, directly or through others.")  # fmt: skip
    return table, text, [f for f in flags if f]


def battle_log_summary(battles: xr.Dataset) -> tuple[pd.DataFrame, str, list[str], dict]:
    """The report's data summary of a battle log, for ``hierbench summary --battles``.

    Returns each agent's record (battles, wins, ties, losses, opponents), the sentence counting
    the battles, the flags (agents in no battle, in fewer than ``FEW_UNITS``, groups that no
    chain of battles links) and the counts.
    """
    ctx = _Context(fit=None, data=None, battles=battles)
    table, text, flags = _battles_summary(ctx, _battle_pairs(ctx))
    return table, text, flags, dict(ctx.cache["battles"])


def bt_parameters(ctx: _Context) -> str:
    """A Bradley-Terry fit's first-position advantage ``home`` and Davidson tie parameter ``nu``, where fitted.

    Each as its posterior mean and equal-tailed interval; ``nu`` fitted to battles with no tie is its
    prior's lower tail (the data push it to 0), which is said (audit P, F7: both were fitted and never shown).
    """
    post = ctx.post
    if post is None:
        return ""
    prob, out = ctx.prob, ""

    def eti(name: str) -> str:
        lo, hi = np.quantile(post[name].values, [(1 - prob) / 2, (1 + prob) / 2])
        return f"posterior mean {float(post[name].mean()):.3f}, {prob:.0%} equal-tailed interval [{lo:.3f}, {hi:.3f}]"

    if "home" in post and not set(post["home"].dims) - {"chain", "draw"}:
        out += (" First-position advantage `home` (logit scale, added to the ability of the agent in the first "
                f"position): {eti('home')}.")  # fmt: skip
    if "nu" in post and not set(post["nu"].dims) - {"chain", "draw"}:
        out += (f" Tie parameter `nu` (Davidson; two agents of equal ability tie with probability nu / (2 + nu)): "
                f"{eti('nu')}.")  # fmt: skip
        ties = ctx.cache.get("battles", {}).get("ties")
        if ties is None and (got := _battle_pairs(ctx)) is not None:
            ties = int(got[0]["n_tie"].sum())
        if ties == 0:
            out += (" The battles hold no tie, which pushes `nu` towards 0, the edge of its range: its posterior "
                    "is its prior's lower tail, set by the prior, not measured.")  # fmt: skip
    return out


def _battle_rank_flags(graph: dict, index: pd.Index) -> pd.Series:
    """Each agent's rank flag where no chain of battles links it with some agents ("" elsewhere)."""
    out = pd.Series("", index=index, dtype=object)
    if len(graph["groups"]) + len(graph["unplayed"]) < 2:
        return out
    group = {a: g for g in graph["groups"] for a in g}
    for a in index:
        if a in graph["unplayed"]:
            out[a] = "in no battle: its rank is the prior's alone"
        elif a in group:
            apart = [b for b in graph["met"].index if b not in group[a]]
            who = _names(apart) if len(apart) <= 3 else counted(len(apart), "agent")
            out[a] = (f"partly the prior's: no chain of battles links it with {who}; its order against "
                      f"{'that agent' if len(apart) == 1 else 'them'} is the prior's alone")  # fmt: skip
    return out
