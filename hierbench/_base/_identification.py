"""What an (agent, task) design can identify: the one owner of those rules and their reasons.

:func:`refuse_agents_without_runs` (an agent with no runs would rest on its prior),
:func:`unidentified_components` and :func:`unidentified_by_design` (which components
of a crossed decomposition fold into which, with the reason texts :data:`NO_AGENT_SPREAD`,
:data:`AGENT_TASK_IN_TASK`, :data:`ONE_RUN`, :data:`TASK_IN_RUNS`, :data:`NO_SHARED_TASK`,
:data:`NO_SHARED_ONE_RUN`), :func:`task_groups` (which agents a common task links,
directly or through others), and
:func:`ability_meaning` (what a crossed model's ability is on that design).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._warnings import HierbenchError


def refuse_agents_without_runs(n_runs: Any, agents: Any, name: str = "data", what: str = "this model") -> None:
    """Refuse an (agent, task) design in which some agent has no runs at all.

    Such an agent (every run of it excluded as an error, or a label left over
    from a selection) would sit in a model on its prior alone: a fixed
    agent's prior-only ability moves the agents' mean and spread, a pooled
    one is reported as if it had been evaluated. The one rule of the
    Bayesian count models and the crossed maximum-likelihood fit.

    Examples
    --------
    >>> refuse_agents_without_runs([[1, 0], [0, 0]], ["a", "b"])
    Traceback (most recent call last):
    ...
    hierbench._base.HierbenchError: `data`: agent(s) ['b'] have no runs at all (1 of 2 agents), and this model has no data to estimate them from; drop them first: data.drop_sel(agent=['b'])
    """
    n = np.asarray(n_runs)
    idle = np.asarray(agents).astype(str)[n.reshape(n.shape[0], -1).sum(axis=1) == 0]
    if idle.size:
        shown = idle[:10].tolist()
        more = f" and {idle.size - 10} more" if idle.size > 10 else ""
        raise HierbenchError(
            f"`{name}`: agent(s) {shown}{more} have no runs at all ({idle.size} of {n.shape[0]} agents), "
            f"and {what} has no data to estimate them from; drop them first: "
            f"{name}.drop_sel(agent={idle.tolist()!r})"
        )


#: why a component of a crossed decomposition cannot be estimated on its own from the design;
#: each rule said once, here (the builder's structure and the report quote them)
NO_AGENT_SPREAD = "one agent, so there is no spread between agents to estimate"
AGENT_TASK_IN_TASK = "one agent, so the agent x task interaction cannot be told apart from the task effect"
ONE_RUN = (
    "one run per agent x task cell, so the agent x task interaction cannot be told apart from "
    "run-to-run noise"
)
TASK_IN_RUNS = (
    "one agent with one run per task, so nothing repeats within a task and the task spread "
    "cannot be told apart from run-to-run noise"
)
NO_SHARED_TASK = (
    "no task was run by two agents, so the agent x task interaction cannot be told apart from "
    "the task effect"
)
NO_SHARED_ONE_RUN = (
    "no task was run by two agents and every cell holds one run, so nothing repeats within a task "
    "and the task spread cannot be told apart from run-to-run noise"
)


def ability_meaning(task_effect: bool, clusters: bool = False) -> str:
    """What a crossed model's ability is: the house text for the ML fit and the Bayesian model.

    ``task_effect`` False is the one-agent, one-run design (:data:`TASK_IN_RUNS`),
    where the task effect is left out and the ability pools the tasks (those
    of a cluster of average difficulty when ``clusters``).

    Examples
    --------
    >>> ability_meaning(True)
    'log-odds of success on a task of average difficulty'
    """
    if task_effect:
        return "log-odds of success on a task of average difficulty"
    where = "the tasks of a cluster of average difficulty" if clusters else "the benchmark's tasks"
    return (
        f"log-odds of success pooled over {where}; one agent with one run per task leaves the "
        "task spread unidentified, so this is not the log-odds on a task of average difficulty "
        "(that is further from 0 when tasks differ)"
    )


def unidentified_by_design(
    n_agents: int, max_runs_per_cell: int, max_agents_per_task: int | None = None
) -> dict[str, tuple[str, str | None]]:
    """The rule of :func:`unidentified_components`, from the figures that decide it.

    ``n_agents`` counts the agents with at least one run, ``max_runs_per_cell``
    the most runs of any agent x task cell and ``max_agents_per_task`` the most
    agents that ran one task (None: not known, taken as shared). For a consumer that
    holds these figures rather than the run counts (a builder's design figures); the
    folding and the reason texts are decided here and nowhere else. Agents on disjoint
    tasks are one agent per task: the agent x task interaction folds into the task
    effect, as with one agent.

    Examples
    --------
    >>> unidentified_by_design(1, 1)["agent:task"]
    ('one agent, so the agent x task interaction cannot be told apart from the task effect', 'task')
    >>> unidentified_by_design(3, 1)["agent:task"][1]
    'residual'
    >>> unidentified_by_design(2, 3, max_agents_per_task=1)["agent:task"][1]
    'task'
    """
    if n_agents >= 2 and (max_agents_per_task is None or max_agents_per_task >= 2):
        return {"agent:task": (ONE_RUN, "residual")} if max_runs_per_cell < 2 else {}
    if n_agents >= 2:  # every task run by one agent
        out = {"agent:task": (NO_SHARED_TASK, "task")}
        return out | ({"task": (NO_SHARED_ONE_RUN, "residual")} if max_runs_per_cell < 2 else {})
    out: dict[str, tuple[str, str | None]] = {
        "agent": (NO_AGENT_SPREAD, None),
        "agent:task": (AGENT_TASK_IN_TASK, "task"),
    }
    if max_runs_per_cell < 2:
        out["task"] = (TASK_IN_RUNS, "residual")
    return out


def most_agents_per_task(n_runs: np.ndarray) -> int:
    """The most agents that ran any one task (rows of ``n_runs`` are agents): the figure the rule reads."""
    n = np.asarray(n_runs)
    return int((n.reshape(n.shape[0], -1) > 0).sum(axis=0).max()) if n.size else 0


def shared_tasks_per_pair(n_runs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pair of agents (rows of ``n_runs``, agent x task run counts): ``(i, j, shared)``.

    ``i < j`` index the pair, ``shared`` counts the tasks both ran: what a
    paired comparison stands on (the report's coverage flag and the demo's plan read it).

    Examples
    --------
    >>> import numpy as np
    >>> shared_tasks_per_pair(np.array([[1, 2, 0], [3, 0, 0], [1, 1, 1]]))[2].tolist()
    [1, 2, 1]
    """
    ran = (np.asarray(n_runs) > 0).astype(np.int64)
    i, j = np.triu_indices(ran.shape[0], 1)
    return i, j, (ran @ ran.T)[i, j]


def task_groups(n_runs: np.ndarray) -> np.ndarray:
    """Each agent's group (0, 1, ...): agents linked by the tasks they ran, directly or through others.

    The connected parts of the agent-task graph (rows of ``n_runs`` are agents): two agents
    of different groups are never compared on a common task, not even through a third, so
    any comparison between them rests on their task sets being exchangeable draws. An
    agent that ran nothing is a group of its own.

    Examples
    --------
    >>> import numpy as np
    >>> task_groups(np.array([[1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 2, 1]])).tolist()
    [0, 0, 1]
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    n = np.asarray(n_runs)
    if n.shape[0] == 0:
        return np.zeros(0, dtype=int)
    ran = (n.reshape(n.shape[0], -1) > 0).astype(np.int64)
    return connected_components(csr_matrix(ran @ ran.T > 0), directed=False)[1]


def agents_with_runs(n_runs: np.ndarray) -> np.ndarray:
    """Indices of the agents (rows of ``n_runs``) with at least one run: the agents the rule counts."""
    return np.flatnonzero((np.asarray(n_runs) > 0).any(axis=1))


def unidentified_components(n_runs: np.ndarray) -> dict[str, tuple[str, str | None]]:
    """The components an (agent, task) design of run counts cannot identify on their own.

    ``{component: (reason, partner)}``, by the generic names ``agent``,
    ``task``, ``agent:task``, ``residual``: the component is undefined, and
    what the data do identify is its sum with ``partner`` (None: nothing).
    The one owner of these decisions and their reasons: every consumer
    (the crossed model's builder and structure, its variance components,
    the G-study adapter, the report, the crossed maximum-likelihood fit) asks here (or
    :func:`unidentified_by_design`, the same rule from the design figures).

    Examples
    --------
    >>> import numpy as np
    >>> sorted(unidentified_components(np.full((1, 5), 3)))
    ['agent', 'agent:task']
    >>> unidentified_components(np.full((1, 5), 1))["task"][1]
    'residual'
    >>> unidentified_components(np.full((2, 5), 1))["agent:task"][1]
    'residual'
    >>> unidentified_components(np.full((2, 5), 2))
    {}
    """
    n = np.asarray(n_runs)
    return unidentified_by_design(int(agents_with_runs(n).size), int(n.max()), most_agents_per_task(n))
