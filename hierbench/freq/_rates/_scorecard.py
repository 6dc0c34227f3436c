"""The pass@k scorecard of an agent eval suite (plain dicts, JSON-ready)."""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..._base import missing_labels
from ..._base import partial_credit
from ..._base import partial_credit_error
from ..._base import warn_user
from .._kernels import _pass_kernel
from ._intervals import EmptySampleWarning
from ._passk import InsufficientRunsWarning

__all__ = ["scorecard"]


def _records(runs: Any) -> tuple[list[Mapping], dict | None]:
    """(one record per run, the design of an eval dataset or None).

    The design is what the dataset's coords declare, runs or not: ``{"tasks": [...], "tags":
    {task: tag} or None, "agents": [...] or None (no agent dim)}``.
    """
    if isinstance(runs, xr.Dataset):
        if "score" not in runs:
            raise ValueError(f"`runs` dataset must hold a `score` variable; got {list(runs.data_vars)}")
        if partial_credit(runs["score"])[0]:  # the rule of pass_at_k's counts: a run passes or fails, never half
            # it reads an eval dataset as passed = (score == 1)
            raise partial_credit_error(runs["score"], "runs", "scorecard", why=", which it would count as failures")
        df = runs["score"].to_dataframe().reset_index().dropna(subset=["score"])  # the runs that happened
        out = pd.DataFrame({"task_id": df["task"].astype(str), "passed": df["score"] == 1})
        task_ids = [str(t) for t in runs["task"].values.astype(str)]
        tags = None
        if "tag" in runs.coords:
            raw = runs.coords["tag"].values
            # a missing label (None, NaN, "") is no tag, as in success_rate (not a tag named 'nan')
            tags = {t: None if miss else str(g) for t, g, miss in zip(task_ids, raw, missing_labels(raw), strict=True)}
            out["tag"] = out["task_id"].map(tags)
        if "agent" in df:
            out["agent"] = df["agent"].astype(str)
        agents = [str(a) for a in runs["agent"].values.astype(str)] if "agent" in runs["score"].dims else None
        return out.to_dict("records"), {"tasks": task_ids, "tags": tags, "agents": agents}
    if isinstance(runs, pd.DataFrame):
        return runs.to_dict("records"), None
    if isinstance(runs, Iterable) and not isinstance(runs, (str, bytes, Mapping)):
        return list(runs), None
    raise TypeError(
        f"`runs` must be a list of run records (mappings), a DataFrame or an eval dataset; got {type(runs).__name__}"
    )


def _card(rows: list[Mapping], k: int, design: dict | None = None) -> dict:
    """One agent's card.

    With an eval dataset's ``design``, its tasks without a run are counted and every tag of the
    dataset is listed (NaN where the agent ran none of its tasks).
    """
    n: dict[str, int] = {}
    c: dict[str, int] = {}
    tag: dict[str, Any] = {}
    for r in rows:
        t = r["task_id"]
        if t not in n:
            n[t], c[t] = 0, 0
            tag[t] = r.get("tag")  # the tag of the task's first run
        n[t] += 1
        c[t] += bool(r["passed"])
    tasks = list(n)
    nn = np.array([n[t] for t in tasks], float)
    cc = np.array([c[t] for t in tasks], float)
    at, _ = _pass_kernel(nn, cc, k, kind="at", small_n="clip")
    hat, _ = _pass_kernel(nn, cc, k, kind="hat", small_n="clip")

    def mean(x: np.ndarray) -> float:
        return round(float(np.mean(x)), 4) if len(x) else float("nan")

    if design is not None and design["tags"] is not None:
        tags = sorted({g for g in design["tags"].values() if g is not None}, key=str)
    else:
        tags = sorted({tag[t] for t in tasks if tag[t] is not None}, key=str)
    tag_arr = np.array([tag[t] for t in tasks], dtype=object)
    not_run = {} if design is None else {"tasks_not_run": sum(t not in n for t in design["tasks"])}
    return {
        "tasks": len(tasks),
        **not_run,
        "tasks_with_fewer_runs_than_k": int((nn < k).sum()),
        "pass_at_k": mean(at),
        "pass_hat_k": mean(hat),
        "by_tag": {g: mean(at[tag_arr == g]) for g in tags},
        "pass_hat_k_by_tag": {g: mean(hat[tag_arr == g]) for g in tags},
        "flaky": sorted((t for t in tasks if 0 < c[t] < n[t]), key=str),
    }


def scorecard(runs: Any, k: int) -> dict:
    """pass@k scorecard: tasks, pass@k overall and by tag, flaky tasks, plus pass^k.

    Per task ``t`` with ``n`` runs and ``c`` passes, ``k_eff = min(k, n)``
    and pass@k = ``1 - C(n - c, k_eff) / C(n, k_eff)`` (pass^k =
    ``C(c, k_eff) / C(n, k_eff)``), computed in product form. A task's tag
    is the tag of its first run. Means over tasks are rounded to 4 decimals
    (the final means, not the per-task values); tags are in sorted order;
    ``flaky`` lists the tasks with ``0 < c < n``, sorted.

    Note that ``k_eff`` mixes estimands (a task with 2 runs contributes its
    pass@2 to a "pass@5"); :func:`pass_at_k` makes such tasks NaN instead.
    The card counts those tasks (``tasks_with_fewer_runs_than_k``) and an
    :class:`hierbench.freq.InsufficientRunsWarning` says so whenever there are any.

    Parameters
    ----------
    runs : list of mappings, pandas.DataFrame or xarray.Dataset
        One record per run with ``task_id``, ``passed`` (bool) and ``tag``
        (optional), and ``agent`` when there are several agents. An eval
        dataset is read as ``passed = score == 1`` with its ``tag`` coord;
        a score other than 0 or 1 (partial credit) is refused, as
        :func:`pass_at_k` refuses it, rather than counted as a failure.
    k : int
        Attempts, ``k >= 1``.

    Returns
    -------
    dict
        ``{"tasks", "tasks_with_fewer_runs_than_k", "pass_at_k", "pass_hat_k",
        "by_tag", "pass_hat_k_by_tag", "flaky"}``, ``tasks`` counting the tasks with at least
        one run; with several agents, ``{agent: scorecard}`` in sorted agent order. With no
        runs the means are NaN (and an :class:`EmptySampleWarning` is emitted), never a
        silent 0. An eval dataset keeps every task and agent of its coords: each card also
        has ``tasks_not_run``, the dataset's tasks the agent has no run of (its means are
        over the others, so agents with different counts were scored on different tasks),
        and lists every tag of the dataset (NaN where the agent ran none of its tasks). With
        an ``agent`` dim the result is ``{agent: scorecard}`` even for one agent, and an
        agent without any run keeps its card, with NaN means and an
        :class:`EmptySampleWarning` naming it.

    Raises
    ------
    hierbench.PartialCreditError
        When an eval dataset holds a score other than 0 or 1.

    Examples
    --------
    >>> runs = [{"task_id": "a", "tag": "x", "passed": True},
    ...         {"task_id": "a", "tag": "x", "passed": False},
    ...         {"task_id": "b", "tag": "y", "passed": False},
    ...         {"task_id": "b", "tag": "y", "passed": False}]
    >>> scorecard(runs, 2)
    {'tasks': 2, 'tasks_with_fewer_runs_than_k': 0, 'pass_at_k': 0.5, 'pass_hat_k': 0.0, 'by_tag': {'x': 1.0, 'y': 0.0}, 'pass_hat_k_by_tag': {'x': 0.0, 'y': 0.0}, 'flaky': ['a']}
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"`k` must be an integer >= 1; got k={k!r}")
    rows, design = _records(runs)
    bad = [i for i, r in enumerate(rows) if not isinstance(r, Mapping) or "task_id" not in r or "passed" not in r]
    if bad:
        raise ValueError(
            f"`runs` records must be mappings with keys 'task_id' and 'passed'; records {bad[:10]} are not"
        )
    notbool = [i for i, r in enumerate(rows) if r["passed"] not in (True, False, 0, 1)]
    if notbool:
        raise ValueError(f"`runs` field 'passed' must be a bool (or 0/1); records {notbool[:10]} are not")
    with_agent = [("agent" in r) for r in rows]
    if any(with_agent) and not all(with_agent):
        missing = [i for i, w in enumerate(with_agent) if not w]
        raise ValueError(f"`runs`: some records name an 'agent' and others do not; records without: {missing[:10]}")
    if design is not None and design["agents"] is not None:  # an agent dim: every agent of it, each by name
        cards = {a: _card([r for r in rows if str(r["agent"]) == a], int(k), design) for a in sorted(design["agents"])}
        _warn_never_run(cards)
        _warn_fewer_runs(cards, int(k))
        return cards
    if not rows:
        warn_user("scorecard: no runs; the means are NaN", EmptySampleWarning)
    agents = sorted({str(r["agent"]) for r in rows}) if rows and all(with_agent) else []
    if len(agents) > 1:
        cards = {a: _card([r for r in rows if str(r["agent"]) == a], int(k)) for a in agents}
    else:
        cards = {None: _card(rows, int(k), design)}
    _warn_fewer_runs(cards, int(k))
    return cards if len(agents) > 1 else cards[None]


def _warn_never_run(cards: dict) -> None:
    """Warn, naming them, of the agents of an eval dataset with no run at all: their cards are all NaN."""
    empty = [a for a, c in cards.items() if not c["tasks"]]
    if not empty:
        return
    more = f" and {len(empty) - 10} more" if len(empty) > 10 else ""
    warn_user(
        f"scorecard: {len(empty)} of {len(cards)} agents have no run in `runs` ({', '.join(empty[:10])}{more}); "
        "their cards are kept, with 'tasks' 0, every task counted in 'tasks_not_run' and NaN means",
        EmptySampleWarning,
    )


def _warn_fewer_runs(cards: dict, k: int) -> None:
    """Warn, once per call, of the tasks that ran fewer than ``k`` times: their k_eff is not k."""
    short = {a: c for a, c in cards.items() if c["tasks_with_fewer_runs_than_k"]}
    if not short:
        return
    said = [
        (f"{a}: " if a is not None else "") + f"{c['tasks_with_fewer_runs_than_k']} of {c['tasks']} tasks"
        for a, c in list(short.items())[:5]
    ]
    more = f" and {len(short) - 5} more agents" if len(short) > 5 else ""
    warn_user(
        f"scorecard: tasks ran fewer than k={k} times ({'; '.join(said)}{more}; counted in "
        "'tasks_with_fewer_runs_than_k'). They enter at k_eff = min(k, n_runs), their own run count, so "
        f"'pass_at_k' and 'pass_hat_k' mix pass@{k} / pass^{k} with pass@k_eff / pass^k_eff of those tasks "
        f"(a task run once gives its pass rate): they are not pass@k / pass^k at k={k}. For those, use "
        "freq.pass_at_k / freq.pass_hat_k (the tasks with at least k runs), or give every task k runs.",
        InsufficientRunsWarning,
    )
