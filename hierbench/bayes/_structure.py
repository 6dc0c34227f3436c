"""The model structure a data set's design supports: decided once, recorded, shown, overridable.

Every builder calls :func:`count_design` (or :func:`pair_design`) on its data
and then the term rules here (:func:`decide_agent_task`,
:func:`decide_clusters`, :func:`decide_centring`) or :meth:`Structure.decide`
for each term it could include. A decision records the choice, the reason (in
words, with the figures of the design that led to it) and whether the user
asked for it. The builder stores the
structure in ``model.hierbench["structure"]``; :func:`hierbench.bayes.fit`
copies it to the fit's ``hierbench_structure`` attr (JSON) and
:func:`describe` prints it as a short "model as fitted" block.

The rules, all from the design (never from the outcome data's fit):

* pooling across agents needs at least two agents;
* an agent x task effect needs repeated runs in some cell (one run per cell
  carries no information on it beyond the binomial) and at least two agents
  (with one agent it is the task effect);
* beta-binomial overdispersion (``rho``) needs repeated runs in some cell
  (a cell of one Bernoulli run has the same law for every ``rho``);
* clusters need at least two of them and not mostly single tasks (a cluster
  of one task is confounded with that task's effect);
* a group is centred when its levels are well informed by their own data,
  measured by the Fisher information of a level's logit effect in units of
  a nominal group spread (``info * scale**2``), non-centred otherwise.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from .._base import UnidentifiedTermWarning as UnidentifiedTermWarning
from .._base import UnidentifiedWarning
from .._base import cluster_codes
from .._base import fit_record
from .._base import fit_verdict
from .._base import most_agents_per_task
from .._base import task_groups
from .._base import warn_user
from ..data import separation
from ..metrics import unidentified_by_design

__all__ = [
    "CENTRE_MIN_INFO",
    "CENTRE_MIN_LEVELS",
    "SINGLETON_MAX_SHARE",
    "BuilderDefault",
    "Description",
    "Structure",
    "UnidentifiedTermWarning",
    "centre_choice",
    "cluster_figures",
    "count_design",
    "decide_agent_cluster",
    "decide_agent_task",
    "decide_centring",
    "decide_clusters",
    "describe",
    "formula_design",
    "level_information",
    "level_spread",
    "nested_terms",
    "no_shared_task",
    "pair_design",
    "pair_spread",
    "separated_coefficients",
    "spread_for_centring",
    "term_information",
]

#: centre a group when the median level has at least this much Fisher
#: information about its logit effect, in units of the nominal group
#: variance (``info * scale**2``): the data alone then pin a level to within
#: half the group's spread, and the posterior of the level given the group
#: scale is dominated by the likelihood (shrinkage factor >= 0.8).
CENTRE_MIN_INFO = 4.0

#: below this many levels the information needed to centre grows as
#: ``(CENTRE_MIN_LEVELS / levels)**2``: with few levels the posterior of the
#: group's scale reaches further down towards zero, where a centred group
#: forms a funnel unless its levels are pinned far more tightly (3 agents,
#: each informed 6x the nominal unit: 5 divergences and R-hat 1.06 at the
#: scale, centred; 4 journals with thousands of citations each: centred
#: samples well, non-centred diverged)
CENTRE_MIN_LEVELS = 8


def centre_choice(info: float, levels: int) -> tuple[bool, float]:
    """Centre a group? ``(choice, information needed)`` for its median level's information.

    Examples
    --------
    >>> centre_choice(10.0, 20), centre_choice(10.0, 4)
    ((True, 4.0), (False, 16.0))
    """
    need = CENTRE_MIN_INFO * max(1.0, CENTRE_MIN_LEVELS / max(levels, 1)) ** 2
    return bool(info >= need), float(need)

#: drop clusters when more than this share of tasks sit in clusters of one task
SINGLETON_MAX_SHARE = 0.5


class BuilderDefault(str):
    """A builder's signature default that is not "auto", told apart from the same value passed.

    A ``str`` equal to the value (the signature shows ``'none'``), whose type says the
    user did not pass it: :meth:`Structure.decide` records it as ``"default"``, not ``"user"``.

    Examples
    --------
    >>> d = BuilderDefault("none")
    >>> d == "none", repr(d), isinstance("none", BuilderDefault)
    (True, "'none'", False)
    """

    __slots__ = ()


@dataclass
class Structure:
    """The design of a data set and the terms a model fitted to it includes.

    Attributes
    ----------
    model : str
        The model name.
    design : dict
        Figures of the design (agents, tasks, runs per cell, clusters, ...).
    decisions : dict
        ``{term: {"choice": ..., "reason": str, "source": "auto" | "user" | "default"}}``
        ("default": a builder's fixed default, which the record cannot tell from the same request).
    hints : dict
        ``{parameter: (cause, fix)}``: what to say when a parameter fails
        its convergence checks.
    notes : list of str
        What the data leave to the priors or to an assumption, beside the terms (agents the
        binary data separate, agents that share no task): :func:`describe` prints them and
        the fit's ``fit_notes`` repeats them.
    """

    model: str
    design: dict[str, Any]
    decisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    hints: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def decide(
        self,
        term: str,
        requested: Any,
        auto_choice: Any,
        reason: str,
        *,
        auto: Any = "auto",
        unidentified: Any = None,
        why_unidentified: str = "",
    ) -> Any:
        """Record the choice for ``term``: the user's ``requested`` unless it is ``auto``.

        When the user explicitly asks for ``unidentified`` (the choice the
        design cannot support) a :class:`UnidentifiedTermWarning` says why. A
        :class:`BuilderDefault` (the builder's own default, not passed) is recorded as
        ``"default"`` with the automatic choice beside it, and warns of nothing.
        """
        if isinstance(requested, str) and requested == auto:
            choice, source = auto_choice, "auto"
        elif isinstance(requested, BuilderDefault):
            choice, source = str(requested), "default"
            if _same(choice, auto_choice):
                reason = f"the builder's default, which auto would choose too: {reason}"
            else:
                reason = f"the builder's default (auto would choose {_fmt(auto_choice)}: {reason})"
            if unidentified is not None and why_unidentified and _same(choice, unidentified):
                reason = f"the builder's default, although {why_unidentified}"
        else:
            choice, source = requested, "user"
            if unidentified is not None and why_unidentified and _same(choice, unidentified):
                warnings.warn(
                    f"`{term}={choice!r}` was requested, but {why_unidentified}; it is fitted "
                    "as asked and rests on its prior",
                    UnidentifiedTermWarning,
                    # attributed to the user's call of the builder, however deep the helper
                    skip_file_prefixes=(str(Path(__file__).parent),),
                )
                reason = f"requested by the user although {why_unidentified}"
            else:
                reason = f"requested by the user (auto would choose {_fmt(auto_choice)}: {reason})"
        self.decisions[term] = {"choice": _jsonable(choice), "reason": reason, "source": source}
        return choice

    def hint(self, parameter: str, cause: str, fix: str) -> None:
        """What to say if ``parameter`` fails a convergence check."""
        self.hints[parameter] = [cause, fix]

    def note(self, text: str) -> None:
        """Record what the data leave to a prior or an assumption (shown by :func:`describe`, in the fit's notes)."""
        if text not in self.notes:
            self.notes.append(text)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "model": self.model,
            "design": _jsonable(self.design),
            "decisions": self.decisions,
            "hints": self.hints,
        }
        return out | ({"notes": list(self.notes)} if self.notes else {})

    def to_json(self) -> str:
        return json.dumps(self.to_dict())


def _same(a: Any, b: Any) -> bool:
    if isinstance(b, (list, tuple, set)):
        return a in b
    return a == b


def _fmt(v: Any) -> str:
    if isinstance(v, (set, frozenset)):
        v = sorted(v)
    return repr(v)


def _jsonable(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (set, frozenset)):
        return sorted(_jsonable(x) for x in v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def level_information(
    n: np.ndarray, y: np.ndarray, axis: int, *, within_sd: float = 0.0, rho: float = 0.0
) -> np.ndarray:
    """Fisher information of each level's logit effect, summed over its cells.

    A cell with ``n`` runs at success probability ``p`` carries
    ``n p (1 - p)`` about its logit; an extra normal effect of SD
    ``within_sd`` between the level and the cell caps it at
    ``1 / within_sd**2`` (``i / (1 + i within_sd**2)``), and beta-binomial
    overdispersion ``rho`` divides it by the design effect
    ``1 + (n - 1) rho``. ``p`` is the cell's proportion shrunk towards the
    overall one by one pseudo-run, so cells of all failures (or all
    successes) count for little, as they do in the likelihood.

    Parameters
    ----------
    n, y : numpy.ndarray
        Runs and successes over (agent, task); 0 runs = not observed.
    axis : int
        The axis summed over (1: per agent, 0: per task).
    within_sd, rho : float
        Nominal within-cell spread (logit) and intraclass correlation.

    Returns
    -------
    numpy.ndarray
        Information per level.

    Examples
    --------
    >>> import numpy as np
    >>> n = np.full((2, 3), 4); y = np.full((2, 3), 2)
    >>> level_information(n, y, axis=1).round(2)  # 3 cells x 4 runs x 0.25
    array([3., 3.])
    """
    n = np.asarray(n, dtype=float)
    y = np.asarray(y, dtype=float)
    pbar = (y.sum() + 0.5) / (n.sum() + 1.0)
    p = (y + pbar) / (n + 1.0)
    i = n * p * (1.0 - p)
    i = i / (1.0 + np.maximum(n - 1.0, 0.0) * rho)
    if within_sd > 0:
        i = i / (1.0 + i * within_sd**2)
    return np.where(n > 0, i, 0.0).sum(axis=axis)


def level_spread(
    n: np.ndarray, y: np.ndarray, axis: int, *, within_sd: float = 0.0, rho: float = 0.0
) -> float:
    """Moment estimate of the SD of the levels' logit effects (``nan`` with < 3 levels).

    Each level's logit rate (pooled over its cells, half a pseudo-success
    and half a pseudo-failure) varies by the spread of the true effects plus
    its sampling noise, ``1 / information`` (:func:`level_information`); the
    estimate is ``sqrt(max(0, var(logit rates) - mean(1 / information)))``
    (the moment estimator of a random-effects meta-analysis). The centring
    rules use ``min(nominal spread, this estimate)``: a group whose levels
    barely differ is a funnel when centred, however well each level is
    informed (beta-binomial SBC, 10 agents x 800 runs: 34 of 200 replicates
    diverged, nearly all with a true agent spread under 0.3 logits).

    Examples
    --------
    >>> import numpy as np
    >>> n = np.full((3, 40), 50); y = np.full((3, 40), 25)   # identical agents
    >>> float(level_spread(n, y, axis=1))
    0.0
    >>> y = np.stack([np.full(40, 10), np.full(40, 25), np.full(40, 40)])
    >>> round(float(level_spread(n, y, axis=1)), 2)   # logits -1.39, 0, 1.39
    1.38
    """
    n = np.asarray(n, dtype=float)
    y = np.asarray(y, dtype=float)
    nl, yl = n.sum(axis=axis), y.sum(axis=axis)
    keep = nl > 0
    if keep.sum() < 3:
        return float("nan")
    lg = np.log((yl[keep] + 0.5) / (nl[keep] - yl[keep] + 0.5))
    info = level_information(n, y, axis=axis, within_sd=within_sd, rho=rho)[keep]
    noise = float(np.mean(1.0 / np.maximum(info, 1e-12)))
    return float(np.sqrt(max(0.0, float(np.var(lg, ddof=1)) - noise)))


def spread_words(estimate: float) -> str:
    """The data's spread estimate (``level_spread``) in words: none with fewer than 3 levels, 0 when noise covers it.

    Examples
    --------
    >>> spread_words(float("nan")), spread_words(0.0), spread_words(0.512)
    ('none (fewer than 3 levels)', "0 (the levels' rates differ no more than their noise)", '0.51')
    """
    if not np.isfinite(estimate):
        return "none (fewer than 3 levels)"
    if estimate == 0.0:
        return "0 (the levels' rates differ no more than their noise)"
    return f"{estimate:.2g}"


def spread_for_centring(nominal: float, estimate: float) -> float:
    """The group spread the centring rules use: the nominal one, or less when the data show less."""
    return float(nominal) if not np.isfinite(estimate) else float(min(nominal, estimate))


def count_design(counts: xr.Dataset, cells: Mapping[str, Any]) -> dict[str, Any]:
    """Figures of an (agent, task) count design that the structure rules read.

    Examples
    --------
    >>> import xarray as xr
    >>> c = xr.Dataset({"n_runs": (("agent", "task"), [[1, 1, 2]]),
    ...                 "n_success": (("agent", "task"), [[0, 1, 1]])},
    ...                coords={"agent": ["a"], "task": ["x", "y", "z"]})
    >>> from hierbench.bayes._registry import prepare_counts
    >>> d = count_design(*prepare_counts(c))
    >>> d["n_agents"], d["max_runs_per_cell"], d["share_cells_one_run"]
    (1, 2, 0.667)
    """
    n = np.asarray(counts["n_runs"].values)
    y = np.asarray(counts["n_success"].values)
    cell_n = np.asarray(cells["cell_n"])
    out: dict[str, Any] = {
        "n_agents": int(n.shape[0]),
        "n_tasks": int(n.shape[1]),
        "n_cells": int(cell_n.size),
        "n_cells_not_run": int(cells.get("n_cells_excluded", 0)),
        # tasks no agent ran: their effects (and their cells in `mean_observed`) rest on the prior
        "n_tasks_not_run": int((n.sum(axis=0) == 0).sum()),
        "n_runs_total": int(n.sum()),
        "min_runs_per_cell": int(cell_n.min()),
        "median_runs_per_cell": float(np.median(cell_n)),
        "max_runs_per_cell": int(cell_n.max()),
        "max_agents_per_task": most_agents_per_task(n),
        "share_cells_one_run": round(float(np.mean(cell_n == 1)), 3),
        "success_rate": round(float(y.sum() / max(n.sum(), 1)), 4),
        "score_kind": "binary counts",
    }
    out.update(cluster_figures(counts))
    return out


def cluster_figures(data: xr.Dataset) -> dict[str, Any]:
    """The cluster figures the cluster rule reads (none without a ``cluster`` task coord).

    Examples
    --------
    >>> import xarray as xr
    >>> ds = xr.Dataset(coords={"task": ["a", "b", "c"], "cluster": ("task", ["f", "f", "g"])})
    >>> cluster_figures(ds)["share_tasks_in_singletons"]
    0.333
    """
    if "cluster" not in data.coords:
        return {}
    codes, _ = cluster_codes(data, "cluster", dim="task")
    size = np.bincount(codes)
    return {
        "n_clusters": int(size.size),
        "median_cluster_size": float(np.median(size)),
        "max_cluster_size": int(size.max()),
        "share_tasks_in_singletons": round(float(size[size == 1].sum() / codes.size), 3),
    }


# ---------------------------------------------------------------------------
# term decisions shared by the builders (each records its choice and reason in ``st``)


def decide_agent_task(st: Structure, requested: Any) -> str:
    """The agent x task effect: integrated out ("marginal"), unless the design cannot identify it.

    One run per cell, one agent or no task run by two agents
    (:func:`hierbench.metrics.unidentified_by_design`, whose reason is recorded: with one agent
    and one run per cell, the one-agent reason).

    Examples
    --------
    >>> st = Structure("m", {"n_agents": 3, "max_runs_per_cell": 1})
    >>> decide_agent_task(st, "auto")
    'none'
    """
    m, r_max = st.design["n_agents"], st.design["max_runs_per_cell"]
    # the design rule decides whether the effect is identified, and says why not
    # (hierbench.metrics.unidentified_components)
    rule = unidentified_by_design(m, r_max, st.design.get("max_agents_per_task")).get("agent:task")
    if rule is not None:
        auto, why = "none", rule[0]
    else:
        auto, why = "marginal", (
            f"{m} agents, up to {r_max} runs per cell: integrated out of each cell by adaptive quadrature"
        )
    return st.decide(
        "agent_task",
        requested,
        auto,
        why,
        unidentified=("marginal", "latent") if auto == "none" else None,
        why_unidentified=why if auto == "none" else "",
    )


def _listed(items: list[str], most: int = 10) -> str:
    """``a, b, c`` with at most ``most`` items shown and the rest counted."""
    more = f" and {len(items) - most} more" if len(items) > most else ""
    return ", ".join(items[:most]) + more


def no_shared_task(st: Structure, counts: xr.Dataset) -> bool:
    """Warn once, and note in ``st``, when some agents are never compared on a common task.

    The agents fall into groups linked by the tasks they ran, directly or through other
    agents (the connected parts of the agent-task graph). With more than one group, the
    agents of two groups are never compared on common ground, not even through a third
    agent: any comparison between them (differences of ability, ``prob_superiority``,
    ranks) rests on their task sets being exchangeable draws from one task population,
    which the data cannot check. When no task was run by two agents at all, every agent
    is a group of its own (the builders' agent x task rule already folds the interaction
    into the task effect there, :func:`decide_agent_task`); when only some are apart
    (two agents on tasks 0-99, a third on tasks 100-199), the note names the groups.
    Returns whether it warned.

    Examples
    --------
    >>> import warnings, xarray as xr
    >>> c = xr.Dataset({"n_runs": (("agent", "task"), [[2, 2, 0, 0], [0, 0, 2, 2]])},
    ...                coords={"agent": ["a", "b"], "task": list("wxyz")})
    >>> st = Structure("m", {"max_agents_per_task": 1})
    >>> with warnings.catch_warnings(record=True):
    ...     warnings.simplefilter("ignore")
    ...     no_shared_task(st, c)
    True
    >>> st.notes[0][:56]
    'the 2 agents share no task (a: 2 tasks, b: 2 tasks): any'
    """
    ran = np.asarray(counts["n_runs"].values)
    ran = ran.reshape(ran.shape[0], -1) > 0
    active = np.flatnonzero(ran.any(axis=1))
    group = task_groups(ran[active])
    if active.size < 2 or group.max() == 0:
        return False
    names = np.asarray(counts["agent"].values).astype(str)[active]
    n_ran = ran[active].sum(axis=1)
    if group.max() + 1 == active.size:  # no task run by two agents
        each = [f"{a}: {int(k)} tasks" for a, k in zip(names, n_ran, strict=True)]
        text = (
            f"the {active.size} agents share no task ({_listed(each)}): any comparison between them "
            "rests on their task sets being exchangeable draws from one task population"
        )
        why = (f"no task of the {int(ran.any(axis=0).sum())} run was run by two agents, so no agent is "
               "ever compared with another on a common task). Run some tasks with two or more agents")  # fmt: skip
    else:
        each = [f"[{_listed(list(names[group == g]), 5)}]: {int(ran[active][group == g].any(axis=0).sum())} tasks"
                for g in range(group.max() + 1)]  # fmt: skip
        shown = "; ".join(each[:5]) + ("; ..." if len(each) > 5 else "")
        text = (
            f"disconnected design: the agents fall into {len(each)} groups with no task in common, not even "
            f"through other agents ({shown}): any comparison across groups rests on their task sets being "
            "exchangeable draws from one task population"
        )
        why = ("no agent of one group is ever compared with an agent of another on a common task). "
               "Run some tasks with agents of each group")  # fmt: skip
    st.note(text)
    warn_user(f"{text}, which these data cannot check ({why} to compare them on common ground", UnidentifiedWarning)
    return True


def separated_coefficients(design: Any) -> list[str]:
    """The fixed effects along which the data separate: the likelihood keeps rising to infinity.

    The package's one separation rule, ``hierbench.data``'s ``separation`` (a linear programme
    over the design rows whose runs all sit at one end of the scale: all successes or all
    failures, all scores 1 or all 0, all at the highest or all at the lowest grade; and, for
    grades, rows whose grades split cleanly at a cut between two middle grades), read here
    by the formula builders and ``build_crossed`` (which applies it to its abilities); the ML
    formula fits read it there too. Returns the names of the coefficients the separating
    direction moves (empty: the maximum likelihood estimate exists). The random effects are
    left out: their sd prior bounds them, while the fixed effects' wide prior is all that bounds
    a separated coefficient.
    """
    return separation(design)[0]


def _cluster_rule(d: Mapping[str, Any]) -> tuple[bool, str, bool]:
    """(auto choice, reason, unidentified) for a cluster effect, from the design figures."""
    if "n_clusters" not in d:
        return False, "the data have no `cluster` task coord", False
    k, single = d["n_clusters"], d["share_tasks_in_singletons"]
    if k < 2:
        return False, "one cluster holds every task: no between-cluster variation", True
    if single > SINGLETON_MAX_SHARE:
        return False, (
            f"{single:.0%} of tasks are alone in their cluster (> {SINGLETON_MAX_SHARE:.0%}): "
            "a cluster of one task is confounded with the task effect"
        ), True
    why = f"{k} clusters, median size {d['median_cluster_size']:g}, {single:.0%} of tasks alone"
    if k < 5:
        why += "; few clusters: sd_cluster leans on its prior"
    if d["median_cluster_size"] <= 1:
        why += "; most clusters are single tasks: sd_cluster is informed by the larger ones"
    return True, why, False


def decide_clusters(st: Structure, requested: Any) -> bool:
    """A cluster effect: when the data have at least two clusters and not mostly single tasks.

    ``requested=True`` without a ``cluster`` task coord is an error; asked
    for on a design that cannot identify it, a :class:`UnidentifiedTermWarning`.

    Examples
    --------
    >>> decide_clusters(Structure("m", {"n_agents": 2}), "auto")
    False
    """
    if requested is True and "n_clusters" not in st.design:
        raise ValueError("`clusters=True` needs a `cluster` task coord in `data`; there is none")
    auto, why, bad = _cluster_rule(st.design)
    return bool(
        st.decide(
            "clusters",
            requested,
            auto,
            why,
            unidentified=True if bad else None,
            why_unidentified=why if bad else "",
        )
    )


def decide_agent_cluster(st: Structure, requested: Any, use_cluster: bool) -> bool:
    """An agent x cluster effect: with a cluster effect and at least two agents.

    An agent can be better at one cluster's tasks than its ability says (a
    repository, a task family): the tasks of a cluster then move together
    for that agent, and a model without the term counts them as independent
    evidence (intervals of agent differences too narrow where the clusters
    differ by agent). With one agent the term is the cluster effect itself.

    Examples
    --------
    >>> decide_agent_cluster(Structure("m", {"n_agents": 3, "n_clusters": 4}), "auto", True)
    True
    """
    if requested is True and not use_cluster:
        raise ValueError(
            "`agent_cluster=True` needs the cluster effect: a `cluster` task coord in `data` and "
            "`clusters` not False (see the decision 'clusters' of hierbench.bayes.describe)"
        )
    m = st.design["n_agents"]
    bad = use_cluster and m < 2
    if not use_cluster:
        auto, why = False, "no cluster effect in the model"
    elif bad:
        auto, why = False, "one agent, so its agent x cluster effect is the cluster effect"
    else:
        auto, why = True, (
            f"{m} agents x {st.design['n_clusters']} clusters: an agent's tasks of one cluster share "
            "its departure from its ability there"
        )
    unidentified, why_not = (True, why) if bad else (None, "")
    return bool(st.decide("agent_cluster", requested, auto, why, unidentified=unidentified, why_unidentified=why_not))


def decide_centring(
    st: Structure,
    requested: Any,
    scores: Mapping[str, float],
    n_levels: Mapping[str, int],
    *,
    spread: Mapping[str, float] | None = None,
    groups: tuple[str, ...] = ("agent", "task", "cluster"),
    never: tuple[str, ...] = (),
) -> set[str]:
    """The groups given the centred form: those whose median level information reaches the rule.

    Parameters
    ----------
    st : Structure
        Where the choice and its reason are recorded (term ``centred``).
    requested : "auto" or tuple of str
        The user's choice: "auto", or the groups to centre (a subset of ``groups``).
    scores : mapping
        Group -> median level information x spread^2 (:func:`level_information`).
    n_levels : mapping
        Group -> number of levels (the rule asks more of few levels: :func:`centre_choice`).
    spread : mapping, optional
        Group -> the spread its score used, the smaller of the nominal 1 logit and the data's
        estimate (:func:`spread_for_centring`; shown in the reason). A group not in it was
        scored at the nominal 1 logit, and the reason says so.
    groups : tuple of str
        The groups the user may name.
    never : tuple of str
        Groups the rule leaves out (their form is fixed by the model).

    Examples
    --------
    >>> st = Structure("m", {})
    >>> sorted(decide_centring(st, "auto", {"agent": 40.0, "task": 1.0}, {"agent": 10, "task": 30}))
    ['agent']
    """
    need = {g: centre_choice(v, n_levels[g])[1] for g, v in scores.items()}
    auto = {g for g, v in scores.items() if v >= need[g]} - set(never)
    if requested != "auto" and (isinstance(requested, str) or not set(requested) <= set(groups)):
        raise ValueError(
            f"`centred` must be 'auto' or a tuple drawn from {sorted(groups)}; got {requested!r}"
        )
    spread = spread or {}
    reason = ", ".join(
        f"{g} {v:.1f}{f' (spread {spread[g]:.2g})' if g in spread else ''} vs {need[g]:.3g} needed "
        f"over {n_levels[g]} levels ({'centred' if g in auto else 'non-centred'})"
        for g, v in scores.items()
        if g not in never
    )
    return set(
        st.decide(
            "centred",
            requested if requested == "auto" else tuple(sorted(requested)),
            tuple(sorted(auto)),
            f"median level information x spread^2 ({_centring_basis(scores, spread, never)}): " + reason,
        )
    )


def _centring_basis(scores: Mapping[str, float], spread: Mapping[str, float], never: tuple[str, ...]) -> str:
    """The spread each group's score was measured in, in words: the groups with a spread given, the rest.

    A group in ``spread`` was scored at the smaller of the nominal 1 logit and the data's
    estimate (:func:`spread_for_centring`); one not in it at the nominal 1 logit (the crossed
    model's clusters; the formula model's terms, whose data estimate from a few levels is too
    noisy to decide on).

    Examples
    --------
    >>> _centring_basis({"(1|task)": 5.0}, {}, ())
    "spread: nominal 1 logit, the data's estimate not used"
    >>> _centring_basis({"task": 5.0, "cluster": 1.0}, {"task": 0.4}, ())
    "task: nominal 1 logit, or the data's estimate when smaller; cluster: nominal 1 logit, the data's estimate not used"
    """
    said = [g for g in scores if g not in never]
    shown = [g for g in said if g in spread]
    nominal = [g for g in said if g not in spread]
    with_est, without = "nominal 1 logit, or the data's estimate when smaller", "nominal 1 logit, the data's estimate not used"
    if shown and nominal:
        return f"{', '.join(shown)}: {with_est}; {', '.join(nominal)}: {without}"
    return f"spread: {with_est if shown else without}"


def pair_design(
    ia: np.ndarray, ib: np.ndarray, w_a: np.ndarray, w_b: np.ndarray, n_tie: np.ndarray, n_agents: int, n_components: int
) -> dict[str, Any]:
    """Figures of a pairwise (Bradley-Terry) design that the structure rules read.

    ``ia``, ``ib`` index the agents of each pair; ``w_a``, ``w_b``, ``n_tie``
    are its wins, losses and ties.

    Examples
    --------
    >>> import numpy as np
    >>> d = pair_design(np.array([0, 1]), np.array([1, 2]), np.array([3, 1]), np.array([1, 1]),
    ...                 np.array([0, 2]), 3, 1)
    >>> d["n_comparisons"], d["min_comparisons_per_agent"], d["n_pairs"]
    (8, 4, 2)
    """
    n = w_a + n_tie + w_b
    per_agent = np.bincount(ia, weights=n, minlength=n_agents) + np.bincount(ib, weights=n, minlength=n_agents)
    met = n > 0
    unordered = np.unique(np.minimum(ia, ib)[met] * n_agents + np.maximum(ia, ib)[met])
    return {
        "n_agents": int(n_agents),
        # pairs of agents that met (unordered, as summary and the report count them); the rows are ordered
        "n_pairs": int(unordered.size),
        "n_ordered_pairs": int(met.sum()),
        "n_comparisons": int(n.sum()),
        "min_comparisons_per_agent": int(per_agent.min()),
        "median_comparisons_per_agent": float(np.median(per_agent)),
        "n_components": int(n_components),
        "n_ties": int(n_tie.sum()),
        "score_kind": "pairwise outcomes",
    }


def pair_spread(
    ia: np.ndarray, ib: np.ndarray, w_a: np.ndarray, w_b: np.ndarray, n_tie: np.ndarray, n_agents: int
) -> float:
    """Moment estimate of the SD of the abilities from the agents' win shares (``nan`` with < 3).

    As :func:`level_spread` for pairs: the variance of the agents' logit win
    shares (ties count half) less their mean sampling variance, ``1 / (n p (1
    - p))`` per agent.
    """
    n = w_a + n_tie + w_b
    per_agent = np.bincount(ia, weights=n, minlength=n_agents) + np.bincount(ib, weights=n, minlength=n_agents)
    pts = np.bincount(ia, weights=w_a + 0.5 * n_tie, minlength=n_agents) + np.bincount(
        ib, weights=w_b + 0.5 * n_tie, minlength=n_agents
    )
    share = (pts + 0.5) / (per_agent + 1.0)
    lg = np.log(share / (1.0 - share))
    if n_agents < 3:
        return float("nan")
    noise = np.mean(1.0 / (per_agent * share * (1 - share) + 1e-12))
    return float(np.sqrt(max(0.0, np.var(lg, ddof=1) - noise)))


class Description(str):
    """A "model as fitted" block: a ``str`` that shows itself as text."""

    def __repr__(self) -> str:  # pragma: no cover - display only
        return str(self)


def _structure_of(obj: Any) -> dict[str, Any]:
    info = getattr(obj, "hierbench", None)
    if isinstance(info, dict) and "structure" in info:
        return info["structure"]
    attrs = getattr(obj, "attrs", None)
    if isinstance(attrs, Mapping) and "hierbench_structure" in attrs:
        return fit_record(obj, "hierbench_structure")
    raise ValueError(
        "`model_or_fit` must be a model from a hierbench builder or a fit of one "
        "(it carries no recorded structure)"
    )


def describe(model_or_fit: Any) -> Description:
    """The "model as fitted" block: the design, every structural choice and its reason.

    Parameters
    ----------
    model_or_fit : pymc.Model or xarray.DataTree
        A model from a hierbench builder, or its fit.

    Returns
    -------
    Description
        A ``str`` (shown as plain text in a REPL or notebook). For a fit it
        ends with the convergence summary.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> from hierbench.bayes import build_beta_binomial
    >>> data, _ = simulate_eval(n_agents=1, n_tasks=10, n_runs=1, rng=0)
    >>> text = describe(build_beta_binomial(data))
    >>> print(text.splitlines()[0])
    model as fitted: beta_binomial
    >>> "pooling: 'none'" in text
    True
    """
    s = _structure_of(model_or_fit)
    d = s.get("design", {})
    lines = [f"model as fitted: {s.get('model', '?')}"]
    keys = [k for k in ("n_agents", "n_tasks", "n_cells", "n_pairs", "n_comparisons") if k in d]
    ordered = d.get("n_ordered_pairs", d.get("n_pairs"))  # a pairwise design's rows, first / second
    design = ", ".join(f"{k.removeprefix('n_')} {d[k]}" + (
        f" ({ordered} in order, first / second)" if k == "n_pairs" and ordered != d[k] else "") for k in keys)
    if "min_runs_per_cell" in d:
        design += (
            f"; runs per cell {d['min_runs_per_cell']}-{d['max_runs_per_cell']} "
            f"(median {d['median_runs_per_cell']:g})"
        )
    if "n_clusters" in d:
        design += (
            f"; {d['n_clusters']} clusters ({d['share_tasks_in_singletons']:.0%} of tasks alone)"
        )
    if d.get("n_tasks_not_run"):
        design += f"; {d['n_tasks_not_run']} tasks no agent ran (their effects rest on the prior)"
    lines.append(f"  design: {design}")
    for term, dec in s.get("decisions", {}).items():
        tag = {"auto": "", "default": " [default]"}.get(dec.get("source"), " [user]")
        lines.append(f"  {term}: {dec['choice']!r}{tag} - {dec['reason']}")
    lines += [f"  note: {text}" for text in s.get("notes", [])]
    attrs = getattr(model_or_fit, "attrs", None)
    if isinstance(attrs, Mapping) and "diag_max_r_hat" in attrs:
        lines.append(f"  convergence: {_convergence_words(attrs)}")
    return Description("\n".join(lines))


def _convergence_words(attrs: Mapping) -> str:
    """The recorded verdict and its figures; a check not computed or not recorded said so, not as nan."""

    def shown(key: str, fmt: str, missing: str) -> str:
        v = float(attrs.get(key, float("nan")))
        return missing if not np.isfinite(v) else format(v, fmt)

    verdict = fit_verdict(attrs) or "not converged"  # checked (diag_max_r_hat) but no verdict recorded
    word = {"converged": "passed", "not converged": "FAILED"}.get(str(verdict), str(verdict).upper())
    div = shown("diag_n_divergent", ".0f", "")
    div = f"{div} divergences" if div else "divergences not recorded"
    return (f"{word} (max R-hat {shown('diag_max_r_hat', '.3f', 'not computed')}, min ESS bulk "
            f"{shown('diag_min_ess_bulk', '.0f', 'not computed')} / tail {shown('diag_min_ess_tail', '.0f', 'not computed')}, "
            f"{div})")  # fmt: skip


# ---------------------------------------------------------------------------
# formula models (hierbench.bayes.build_mixed): the design figures and each term's information


def formula_design(design: Any) -> dict[str, Any]:
    """Figures of a formula design (:class:`hierbench.data.ModelDesign`) that the structure rules read.

    The same keys as :func:`count_design` for what both describe (agents,
    tasks, cells, runs per cell), plus the design rows and the family.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from hierbench.data import model_design
    >>> ds = xr.Dataset({"score": (("agent", "task", "run"), np.ones((2, 3, 2)))},
    ...                 coords={"agent": ["a", "b"], "task": ["x", "y", "z"]})
    >>> ds["score"][0, 0, 0] = 0.0
    >>> d = formula_design(model_design("score ~ 0 + agent + (1|task)", ds))
    >>> d["n_cells"], d["max_runs_per_cell"], d["family"]
    (6, 2, 'binomial')
    """
    ai, ti = np.asarray(design.agent_index), np.asarray(design.task_index)
    cell, per_row = np.unique(ai * len(design.tasks) + ti, return_inverse=True)
    runs = np.bincount(per_row, weights=np.asarray(design.n, dtype=float)).astype(int)
    return {
        "n_agents": len(design.agents),
        "n_tasks": len(design.tasks),
        "n_cells": int(cell.size),
        "n_rows": int(ai.size),
        "row_level": design.row_level,
        "n_runs_total": int(runs.sum()),
        "min_runs_per_cell": int(runs.min()),
        "median_runs_per_cell": float(np.median(runs)),
        "max_runs_per_cell": int(runs.max()),
        "share_cells_one_run": round(float(np.mean(runs == 1)), 3),
        "family": design.family,
        "score_kind": f"{design.family} ({design.response})",
    }


def term_information(design: Any, k: int, *, within_sd: float = 0.0) -> np.ndarray:
    """Fisher information of each level's effect of random term ``k`` of a formula design.

    Each design row's information about its linear predictor is the count
    rule's (:func:`level_information` on the row as a cell, with the
    agent x task cap ``within_sd``), times the term's slope squared, summed
    over the level's rows. For a fractional response the binomial figure
    of its summed scores is a lower bound (a score in [0, 1] with mean ``p``
    varies at most ``p (1 - p)``); for an ordinal one it is Whitehead's
    (1993) information per graded answer, ``(1 - sum_k p_k^3) / 3`` with
    ``p_k`` the shares of the grades, entered as that many even-odds runs.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from hierbench.data import model_design
    >>> ds = xr.Dataset({"score": (("agent", "task", "run"), np.tile([0.0, 1.0], (2, 3, 2)))},
    ...                 coords={"agent": ["a", "b"], "task": ["x", "y", "z"]})
    >>> term_information(model_design("score ~ 1 + (1|agent)", ds), 0).tolist()  # 3 cells x 4 runs x 1/4
    [3.0, 3.0]
    """
    n = np.asarray(design.n, dtype=float)
    y = np.asarray(design.y, dtype=float)
    if design.family == "ordinal":
        share = np.asarray(design.grade_counts).sum(0) / n.sum()
        n = 4.0 * n * (1.0 - float((share**3).sum())) / 3.0
        y = n / 2.0  # even odds: a run carries 1/4, so n runs carry Whitehead's figure
    info = level_information(n[None, :], y[None, :], axis=0, within_sd=within_sd)
    t = design.random[k]
    return np.bincount(t.codes, weights=info * t.slope**2, minlength=t.levels.size)


def _nested(inner: np.ndarray, outer: np.ndarray) -> bool:
    """Whether every level of ``inner`` (codes per design row) lies inside one level of ``outer``."""
    return np.unique(np.stack([inner, outer]), axis=1).shape[1] == np.unique(inner).size


def nested_terms(design: Any, k: int, *, skip: tuple[int, ...] = ()) -> list[int]:
    """The random terms (less those in ``skip``) nested in term ``k``'s levels, finest first.

    A term is nested in ``k`` when it has ``k``'s slope (an intercept in an
    intercept's levels), more levels, and each of its levels lies inside one
    of ``k``'s (``scaffold:model`` in ``model``; ``agent:task`` in both).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from hierbench.data import model_design
    >>> ds = xr.Dataset({"score": (("agent", "task", "run"), np.tile([0.0, 1.0], (4, 3, 1)))},
    ...                 coords={"agent": list("abcd"), "model": ("agent", ["m", "m", "n", "n"])})
    >>> d = model_design("score ~ 1 + (1|model) + (1|agent) + (1|task)", ds)
    >>> [d.random[j].name for j in nested_terms(d, 0)], nested_terms(d, 2)
    (['1|agent'], [])
    """
    t = design.random[k]
    out = [
        j
        for j, u in enumerate(design.random)
        if j != k and j not in skip and np.array_equal(u.slope, t.slope)
        and np.unique(u.codes).size > np.unique(t.codes).size and _nested(u.codes, t.codes)
    ]  # fmt: skip
    return sorted(out, key=lambda j: -np.unique(design.random[j].codes).size)
