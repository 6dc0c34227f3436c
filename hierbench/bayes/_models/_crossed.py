"""Crossed agent x task logistic model on aggregated counts.

For agent ``m``, task ``t`` (in cluster ``k(t)``) with ``n_mt`` runs and
``y_mt`` successes,

    logit p_mt = ability_m + c_k(t) + (ac)_mk(t) + b_t + (ab)_mt,
    c_k ~ N(0, sd_cluster), (ac)_mk ~ N(0, sd_agent_cluster), b_t ~ N(0, sd_task),
    (ab)_mt ~ N(0, sd_agent_task),
    y_mt ~ Binomial(n_mt, p_mt),

with abilities fixed (own priors) or random (``N(mu, sd_agent)``); groups are
non-centred unless their levels carry much data (``centred="auto"``), and
task and cluster effects are split into a sample-mean offset and zero-sum
deviations (see :func:`build_crossed`). The likelihood is over the observed
cells only, so its cost does not grow with the number of runs, and ragged
data (cells never run) costs nothing.

``agent_task="marginal"`` (the default unless every cell has one run) integrates the agent x task effect out
of each cell's binomial likelihood by adaptive Gauss-Hermite quadrature (a
logit-normal-binomial), removing the M x T latent parameters and the funnel
between them and ``sd_agent_task``; the per-cell effects are recovered
afterwards, exactly given each draw, by
:func:`hierbench.metrics._crossed.agent_task_effects`. ``agent_task="latent"`` keeps
them as non-centred parameters (the plain version, for comparison).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any
from typing import Literal

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy.special import expit

from ..._base import BoundaryWarning
from ..._base import ability_meaning
from ..._base import check_choice
from ..._base import check_int
from ..._base import warn_user
from ..._numerics import NEWTON_STEPS
from ..._numerics import binomial_draws
from ..._numerics import gauss_hermite
from ..._numerics import population_nodes
from ...metrics import cell_logits
from ...metrics import unidentified_components
from .._ops._agq_op import AGQBinomialLogitNormal
from .._ops._logit_op import binomial_logit
from .._registry import ModelEntry
from .._registry import PriorError
from .._registry import count_coords
from .._registry import count_data
from .._registry import count_info
from .._registry import log_binom
from .._registry import make_prior
from .._registry import merge_priors
from .._registry import normal_group
from .._registry import prepare_counts
from .._registry import register
from .._registry import register_hook
from .._structure import Structure
from .._structure import count_design
from .._structure import decide_agent_cluster
from .._structure import decide_agent_task
from .._structure import decide_centring
from .._structure import decide_clusters
from .._structure import level_information
from .._structure import level_spread
from .._structure import no_shared_task
from .._structure import separated_coefficients
from .._structure import spread_for_centring

__all__ = ["CROSSED_PRIORS", "build_crossed", "gauss_hermite"]

CROSSED_PRIORS: dict[str, dict[str, Any]] = {
    "ability": {"dist": "Normal", "mu": 0.0, "sigma": 2.5},
    "mu": {"dist": "Normal", "mu": 0.0, "sigma": 1.5},
    "sd_agent": {"dist": "HalfNormal", "sigma": 1.5},
    "sd_task": {"dist": "HalfNormal", "sigma": 2.0},
    "sd_agent_task": {"dist": "HalfNormal", "sigma": 1.0},
    "sd_cluster": {"dist": "HalfNormal", "sigma": 1.0},
    "sd_agent_cluster": {"dist": "HalfNormal", "sigma": 1.0},
}


#: nominal logit spreads of agents, tasks and clusters: the units in which
#: the centring rule measures how informed each level is
NOMINAL_SCALE = {"agent": 1.0, "task": 1.0, "cluster": 1.0}
#: nominal SD of the agent x task effect: caps what repeated runs of one cell
#: tell about the task (or agent) level
NOMINAL_AGENT_TASK_SD = 0.5


def _default_priors(
    use_cluster: bool, agents: str, task: bool = True, agent_cluster: bool = False
) -> dict[str, dict[str, Any]]:
    drop = {"sd_cluster"} if not use_cluster else set()
    drop |= {"sd_agent_cluster"} if not (use_cluster and agent_cluster) else set()
    drop |= {"mu", "sd_agent"} if agents == "fixed" else {"ability"}
    drop |= {"sd_task"} if not task else set()
    return {k: dict(v) for k, v in CROSSED_PRIORS.items() if k not in drop}


def _cluster_data(coords: dict, cl_idx: np.ndarray) -> tuple[Any, Any, Any]:
    """Each task's cluster, each cluster's size (model data) and the number of clusters (the dim).

    Data rather than constants, so that the compiled kernel holds no size
    (see :mod:`hierbench.bayes._sampler._nutpie_build`).
    """
    idx = pm.Data("task_cluster_idx", cl_idx.astype(np.int64), dims="task")
    size = np.bincount(cl_idx, minlength=len(coords["cluster"])).astype(float)
    return idx, pm.Data("cluster_size", size, dims="cluster"), pm.modelcontext(None).dim_lengths["cluster"]


def _cluster_sums(x: Any, cl_idx: Any, n_cl: Any) -> Any:
    """Per-cluster sums of a task vector: one scatter-add over the tasks, ``O(T)``."""
    return pt.inc_subtensor(pt.zeros(n_cl)[cl_idx], x)


def _clustered_zero_sum_logp(
    value: Any, sd_task: Any, sd_cluster: Any, cl_idx: Any, size: Any
) -> Any:
    """Log density of ``r = B - mean(B)`` on the zero-sum subspace, ``B ~ N(0, Sigma)``.

    ``Sigma = sd_task^2 I + sd_cluster^2 M M'`` (``M`` the task x cluster
    membership, ``cl_idx`` each task's cluster). ``r``'s density is ``B``'s integrated along the ones
    direction: ``log N(r; 0, Sigma) + 1/2 log(2 pi / a) + b^2 / (2 a)`` with
    ``a = 1' Sigma^-1 1`` and ``b = 1' Sigma^-1 r``, every term in closed form
    from the block structure (``O(T)``). Without clusters it is
    ``ZeroSumNormal(sd_task)``'s density, up to a constant.
    """
    st2, sc2 = sd_task**2, sd_cluster**2
    s = _cluster_sums(value, cl_idx, size.shape[0])
    denom = st2 + size * sc2
    quad = ((value**2).sum() - (sc2 * s**2 / denom).sum()) / st2
    logdet = (size.sum() - size.shape[0]) * pt.log(st2) + pt.log(denom).sum()
    a = (size / denom).sum()
    b = (s / denom).sum()
    return -0.5 * quad - 0.5 * logdet - 0.5 * pt.log(a) + 0.5 * b**2 / a


def _clustered_zero_sum_draw(
    sd_task: Any, sd_cluster: Any, cl_idx: np.ndarray, n_cl: int, rng: Any, size: Any
) -> np.ndarray:
    """Draws of ``r = B - mean(B)`` for ``B_t = c_k(t) + b_t`` (the prior predictive)."""
    sd_task, sd_cluster = np.asarray(sd_task, float), np.asarray(sd_cluster, float)
    cl_idx = np.asarray(cl_idx)
    lead = tuple(np.atleast_1d(size)) if size is not None else np.broadcast_shapes(
        sd_task.shape, sd_cluster.shape
    )
    c = rng.normal(size=(*lead, n_cl)) * sd_cluster[..., None]
    b = rng.normal(size=(*lead, cl_idx.size)) * sd_task[..., None] + c[..., cl_idx]
    return b - b.mean(axis=-1, keepdims=True)


#: the hooks :func:`hierbench.bayes.fit` runs for a crossed model (see :data:`HOOK_KINDS`)
HOOKS = {
    "predictive": "crossed.predictive",
    "postprocess": "crossed.mean_observed",
    "data_updates": "crossed.data_updates",
}

_log_binom = log_binom  # the name ``fit_replicates`` imports


def _check_options(clusters: Any, agent_task: Any, n_quad: Any, agents: Any, agent_cluster: Any) -> None:
    check_choice(agents, "agents", ("fixed", "random"))
    check_choice(agent_cluster, "agent_cluster", ("auto", True, False))
    check_choice(agent_task, "agent_task", ("auto", "marginal", "latent", "none"))
    check_int(n_quad, "n_quad", min=5, max=200)
    check_choice(clusters, "clusters", ("auto", True, False))


def _centring_scores(
    counts: xr.Dataset, st: Structure, agent_task: str, use_cluster: bool, task: bool = True
) -> tuple[dict[str, float], dict[str, float], dict[str, int]]:
    """Median level information x spread^2 per group, the spreads used, the levels per group.

    Without a task effect (``task=False``) a cluster's tasks inform it directly (no task
    spread between them and their cluster), and there is no task group to centre.
    """
    d = st.design
    n, y = counts["n_runs"].values, counts["n_success"].values
    within = NOMINAL_AGENT_TASK_SD if agent_task != "none" else 0.0
    info_task = level_information(n, y, axis=0, within_sd=within)
    # the spread in whose units information is measured: nominal, or the data's
    # estimate when smaller (levels that barely differ are a funnel when centred)
    spread = {
        g: spread_for_centring(NOMINAL_SCALE[g], level_spread(n, y, axis=ax, within_sd=within))
        for g, ax in (("agent", 1), ("task", 0))
    }
    scores = {
        "agent": float(np.median(level_information(n, y, axis=1, within_sd=within)))
        * spread["agent"] ** 2,
        "task": float(np.median(info_task)) * spread["task"] ** 2,
    }
    if use_cluster:
        _, cl_idx = np.unique(np.asarray(counts["cluster"].values).astype(str), return_inverse=True)
        through = info_task / (1.0 + info_task * NOMINAL_SCALE["task"] ** 2) if task else info_task
        scores["cluster"] = float(np.median(np.bincount(cl_idx, weights=through))) * (
            NOMINAL_SCALE["cluster"] ** 2
        )
    n_levels = {"agent": d["n_agents"], "task": d["n_tasks"], "cluster": d.get("n_clusters", 0)}
    if not task:
        del scores["task"], spread["task"]
    return scores, spread, n_levels


def _record_forms(st: Structure, agents: str, use_cluster: bool, centred_set: set[str], task: bool = True) -> None:
    """The agents' form, the clusters' form and what to say if a parameter fails."""
    d = st.design
    st.decisions["agents"] = {
        "choice": agents,
        "reason": "fixed effects with their own priors (the evaluated agents are the population)"
        if agents == "fixed"
        else "random effects around mu with spread sd_agent",
        "source": "user" if agents != "fixed" else "auto",
    }
    if use_cluster and not task:
        st.decisions["cluster_form"] = {
            "choice": "alone",
            "reason": "no task effect (see task_spread): the cluster effects are split into their "
            "mean and zero-sum deviations, as the task effects are without clusters",
            "source": "auto",
        }
    elif use_cluster:
        st.decisions["cluster_form"] = (
            {
                "choice": "integrated",
                "reason": "tasks centred: the cluster effects are integrated out of the task "
                "effects' prior in closed form and drawn afterwards from their exact "
                "conditional, so no cluster parameter trades off against its own tasks "
                "(the centring of clusters does not apply)",
                "source": "auto",
            }
            if "task" in centred_set
            else {
                "choice": "nested",
                "reason": "tasks non-centred: within-cluster task deviations and cluster "
                "totals sampled apart (the centring of clusters does not apply)",
                "source": "auto",
            }
        )
    st.hint(
        "sd_agent_task",
        f"few repeated runs per cell (median {d['median_runs_per_cell']:g}) identify the agent x task spread weakly",
        "agent_task='none' (runs independent given agent and task)",
    )
    st.hint(
        "sd_cluster",
        "clusters are few or small, so their spread is weakly identified",
        "clusters=False, or a tighter `priors['sd_cluster']`",
    )
    st.hint("sd_agent", f"the spread of {d['n_agents']} agents is weakly identified", "agents='fixed'")
    for g in ("task", "cluster", "agent") if task else ("cluster", "agent"):
        flip = tuple(sorted(centred_set ^ {g}))
        st.hint(
            f"z_{g}" if g not in centred_set else f"{g}_dev",
            f"the {'centred' if g in centred_set else 'non-centred'} form for {g}s does not suit this design",
            f"centred={flip}",
        )


def _decide(
    counts: xr.Dataset, cells: dict, clusters: Any, agent_task: Any, agents: str, centred: Any
) -> tuple[Structure, bool, str, set[str], bool]:
    """The crossed model's structure from the design (see :mod:`hierbench.bayes._structure`).

    Returns the structure, whether clusters are used, the agent x task form, the centred
    groups and whether the model has a task effect (not when the design rule leaves the
    task spread unidentified: one agent with at most one run per cell).
    """
    st = Structure("crossed", count_design(counts, cells))
    agent_task = decide_agent_task(st, agent_task)
    use_cluster = decide_clusters(st, clusters)
    rules = unidentified_components(counts["n_runs"].values)
    task = "task" not in rules
    scores, spread, n_levels = _centring_scores(counts, st, agent_task, use_cluster, task)
    never = ("agent",) if agents == "fixed" else ()
    centred_set = decide_centring(st, centred, scores, n_levels, spread=spread, never=never)
    centred_set = centred_set if task else centred_set - {"task"}
    _record_forms(st, agents, use_cluster, centred_set, task)
    _record_unidentified(st, rules, agents)
    return st, use_cluster, agent_task, centred_set, task


def _decide_agent_cluster(st: Structure, requested: Any, use_cluster: bool) -> bool:
    """The agent x cluster effect (the rule of :func:`decide_agent_cluster`), and what to say if it mixes slowly."""
    use = decide_agent_cluster(st, requested, use_cluster)
    if use:
        st.hint(
            "sd_agent_cluster",
            "the agent x cluster spread is near 0 or few tasks per agent and cluster inform it, so its "
            "draws move slowly",
            "more draws (draws=2000 or more), or agent_cluster=False where G-theory's agent:cluster "
            "component (hierbench.freq.variance_components) is near 0",
        )
    return use


def _record_unidentified(st: Structure, rules: dict, agents: str) -> None:
    """What the design leaves undefined (:func:`hierbench.metrics.unidentified_components`), said in the structure.

    One agent: no ``sd_agent`` (with ``agents="random"`` it is fitted as asked,
    on its prior, with :class:`UnidentifiedTermWarning`). One agent with one
    run per task: no task effect and no ``sd_task`` (:func:`_decide` leaves them out).
    ``rules`` is what :func:`~hierbench.metrics.unidentified_components` returned for the design.
    """
    if "agent" in rules and agents == "random":
        why = rules["agent"][0]
        st.decide("agents", agents, "fixed", "", unidentified="random", why_unidentified=why)
    elif "agent" in rules:
        st.decisions["agents"]["reason"] += f"; no sd_agent: {rules['agent'][0]}"
    if "task" in rules:
        why = rules["task"][0]
        st.decisions["task_spread"] = {
            "choice": "none",
            "reason": f"{why}: only the overall success rate is identified (task variance components undefined)",
            "source": "auto",
        }


def separated_agents(counts: xr.Dataset, cells: dict) -> list[str]:
    """The agents whose abilities the binary data separate: every run failed, or every run succeeded.

    The package's one separation rule (``separated_coefficients``, the formula builders' linear
    programme) applied to the abilities as the fixed effects, the task effects left out as there
    (their sd prior bounds them): the design is one indicator per agent, its cells collapsed to
    one row per agent and kind (all runs failed, all succeeded, mixed), which has
    the same separating directions. Named as the formula builders name them, ``agent[a]``.
    """
    names = np.asarray(counts["agent"].values).astype(str)
    ai, y, n = (np.asarray(cells[k]) for k in ("cell_agent_idx", "cell_y", "cell_n"))
    kind = np.where(y >= n, 1, np.where(y <= 0, 0, 2))  # all succeeded, all failed, mixed
    rows = np.unique(np.stack([ai, kind], axis=1), axis=0)
    X = np.zeros((len(rows), names.size))
    X[np.arange(len(rows)), rows[:, 0]] = 1.0
    design = SimpleNamespace(
        family="binomial", X=X, y=np.choose(rows[:, 1], [0.0, 1.0, 1.0]), n=np.where(rows[:, 1] == 2, 2.0, 1.0),
        coef=[f"agent[{a}]" for a in names],
    )  # fmt: skip
    return separated_coefficients(design)


def _design_notes(st: Structure, counts: xr.Dataset, cells: dict, pri: dict, agents: str) -> list[str]:
    """What the data leave to a prior or an assumption, noted in ``st`` and warned once; the separated agents.

    Agents that share no task (``no_shared_task``), and the separated fixed abilities
    (:func:`separated_agents`), which are returned.

    An agent that failed (or passed) every run has a likelihood that keeps rising as its ability
    goes to minus (plus) infinity: its posterior is a plateau held by its prior on that side, so
    its estimate and the far end of its interval move with the prior's sd (3 agents x 20 tasks
    x 3 runs: -5.30 [-8.05, -3.28] at the default sd 2.5, -7.71 [-13.36, -4.05] at sd 5). With
    ``agents="random"`` the abilities are a random effect, which the rule leaves out.
    """
    no_shared_task(st, counts)
    if agents != "fixed":
        return []
    sep = separated_agents(counts, cells)
    if not sep:
        return []
    idx = np.asarray(cells["cell_agent_idx"])
    ys = np.bincount(idx, weights=cells["cell_y"], minlength=counts.sizes["agent"])
    ns = np.bincount(idx, weights=cells["cell_n"], minlength=counts.sizes["agent"])
    pos = {f"agent[{a}]": i for i, a in enumerate(np.asarray(counts["agent"].values).astype(str))}
    each = [f"{c} ({int(ys[pos[c]])} of {int(ns[pos[c]])} runs succeeded)" for c in sep]
    args = ", ".join(f"{k}={v:g}" if isinstance(v, (int, float)) else f"{k}={v}"
                     for k, v in pri["ability"].items() if k != "dist")  # fmt: skip
    prior = f"{pri['ability'].get('dist', '?')}({args})"
    st.design["separated_agents"] = [c[len("agent["):-1] for c in sep]
    text = (
        f"the binary data separate {', '.join(each)}: the likelihood keeps rising as such an ability "
        f"goes to minus (all failed) or plus (all succeeded) infinity, so its posterior is a plateau "
        f"held by the prior ({prior}) on that side; its estimate and interval are set by that prior, "
        "not by the data (below, or above, every other agent is all they show)"
    )
    st.note(text)
    warn_user(
        f"{text}. A wider prior moves them further out; compare such an agent by its success rate "
        "(hierbench.freq.success_rate) or on tasks it both passed and failed",
        BoundaryWarning,
    )
    return sep


def _separated_said(st: Structure) -> str:
    """The ability's attrs on the agents the data separate (``_design_notes``): their values are the prior's."""
    sep = st.design.get("separated_agents")
    if not sep:
        return ""
    return f"; separated by the data, so set by the prior on one side: {', '.join(sep)}"


def _check_tasks(counts: xr.Dataset) -> None:
    """Refuse a design of one task, as the frequentist counterparts do (nothing to spread over)."""
    n_tasks = int((counts["n_runs"].values > 0).any(axis=0).sum())
    if n_tasks < 2:
        raise ValueError(
            f"`data` must have at least 2 tasks with runs for the crossed model; got {n_tasks}: with one "
            "task the task spread (sd_task) cannot be estimated and the agent x task interaction cannot be "
            "told apart from the agents' abilities. Compare the agents' success rates instead "
            "(hierbench.freq.success_rate, hierbench.bayes.build_beta_binomial)"
        )


def _priors(
    st: Structure, priors: Any, use_cluster: bool, agents: str, agent_task: str, task: bool, use_ac: bool
) -> dict:
    """The decided model's priors: the defaults of the parameters it has, with ``priors`` merged in.

    ``priors['sd_task']`` is refused when the model has no task effect (see :func:`_decide`).
    """
    default = _default_priors(use_cluster, agents, task, use_ac)
    if agent_task == "none":
        default.pop("sd_agent_task")
    if not task and priors is not None and "sd_task" in priors:
        raise PriorError(
            f"`priors['sd_task']` was given, but the model has no task effect: "
            f"{st.decisions['task_spread']['reason']}. A model with a task effect anyway: "
            "hierbench.bayes.build_mixed with a (1|task) term"
        )
    return merge_priors(default, priors)


def _task_effects_integrated(
    pri: dict, coords: dict, cl_idx: np.ndarray, sd_task: Any, sd_at: Any
) -> tuple[Any, Any, Any]:
    """Centred tasks with clusters: ``(offset, task_total, sd_total2)``.

    The cluster effects are integrated out of the task effects' prior
    analytically, so no cluster-level parameter is sampled and nothing can
    trade a cluster's effect against its own tasks (the ridge that gave
    SWE-bench with repositories R-hat 1.03-1.15 whichever way the cluster
    level was written: a 231-task repository is pinned by the data, a 1-task
    one only by the prior). ``B_t = c_k(t) + b_t ~ N(0, Sigma)``, ``Sigma =
    sd_task^2 I + sd_cluster^2`` (same-cluster block of ones); ``B = offset +
    r`` with ``r = B - mean(B)`` (zero-sum, centred, density exact below) and
    ``offset | r`` drawn non-centred from its normal conditional (the
    likelihood sees only ``theta = ability + offset`` and ``r``); ``c_k | B``
    is normal and drawn exactly afterwards (an extra N(0, 1) per cluster that
    the likelihood does not see).
    """
    # the cluster count twice: in the graph as data (the kernel holds no size), and as a number
    # for the NumPy prior draws
    idx, size, n_cl_graph = _cluster_data(coords, cl_idx)
    sd_cluster = make_prior("sd_cluster", pri["sd_cluster"])
    n_cl_draws = len(coords["cluster"])
    task_dev = pm.CustomDist(
        "task_dev",
        sd_task,
        sd_cluster,
        idx,  # carries the support's length
        logp=lambda value, st, sc, _idx: _clustered_zero_sum_logp(value, st, sc, idx, size),
        random=lambda st, sc, idx_, rng=None, size=None: _clustered_zero_sum_draw(
            st, sc, idx_, n_cl_draws, rng, size
        ),
        support_point=lambda rv, size_, st, sc, idx_: pt.zeros(idx_.shape[0]),
        transform=pm.distributions.transforms.ZeroSumTransform([-1]),
        signature="(),(),(t)->(t)",
        dims="task",
    )
    s_task = _cluster_sums(task_dev, idx, n_cl_graph)  # per-cluster sums of r
    denom = sd_task**2 + size * sd_cluster**2
    w_sum = (size / denom).sum()  # 1' Sigma^-1 1
    off_mean = -(s_task / denom).sum() / w_sum  # E[offset | r]
    offset = pm.Deterministic(
        "task_offset",
        off_mean + pm.Normal("z_task_offset", 0.0, 1.0) / pt.sqrt(w_sum),
    )
    s_total = s_task + size * offset  # per-cluster sums of B
    z_split = pm.Normal("z_cluster_split", 0.0, 1.0, dims="cluster")
    cl_eff = pm.Deterministic(
        "cluster_effect",
        sd_cluster**2 * s_total / denom + pt.sqrt(sd_cluster**2 * sd_task**2 / denom) * z_split,
        dims="cluster",
    )
    sd_total2 = sd_task**2 + sd_at**2 + sd_cluster**2
    pm.Deterministic("task_effect", offset + task_dev - cl_eff[idx], dims="task")
    return offset, task_dev, sd_total2


def _task_effects_nested(
    pri: dict, coords: dict, cl_idx: np.ndarray, sd_task: Any, sd_at: Any
) -> tuple[Any, Any, Any]:
    """Tasks nested in clusters, non-centred: ``(offset, task_total, sd_total2)``.

    Summing task deviations to zero over all tasks leaves a ridge: a
    cluster's effect trades off against the mean deviation of its own tasks,
    which only the priors separate, so a weakly identified sd_cluster mixes
    badly (the default demo data: 62 divergences at target_accept 0.8,
    SWE-bench with repositories: R-hat 1.13-1.19). The same model, exactly,
    written so the likelihood's directions are separated:

    * within-cluster deviations ``dev_t = sd_task (z_t - mean of z over the
      task's cluster)``, z iid N(0, 1): the deviations of iid normal task
      effects from their cluster mean, independent of that mean;
    * cluster totals ``u_k = c_k + mean of b_t over cluster k``, independent
      ``N(0, s_k^2)`` with ``s_k^2 = sd_cluster^2 + sd_task^2 / n_k``;
    * their precision-weighted mean (the offset seen by the abilities) is
      independent of the residuals ``u_k - offset``, so it is drawn on its own.

    ``cluster_effect`` and ``task_effect`` are then drawn exactly from their
    conditional split of ``u_k`` (an extra N(0, 1) per cluster that the
    likelihood does not see).
    """
    idx, size, n_cl = _cluster_data(coords, cl_idx)
    sd_cluster = make_prior("sd_cluster", pri["sd_cluster"])
    z_task = pm.Normal("z_task", 0.0, 1.0, dims="task")
    task_dev = sd_task * (z_task - (_cluster_sums(z_task, idx, n_cl) / size)[idx])
    s2 = sd_cluster**2 + sd_task**2 / size
    prec = 1.0 / s2
    # non-centred: the likelihood never sees the offset (only theta = ability +
    # offset), so its posterior scale follows its prior's, which shrinks with
    # the scales (a funnel when written centred)
    offset = pm.Deterministic(
        "task_offset", pm.Normal("z_task_offset", 0.0, 1.0) / pt.sqrt(prec.sum())
    )
    z_total = pm.Normal("z_cluster_total", 0.0, 1.0, dims="cluster")
    u_raw = pt.sqrt(s2) * z_total
    resid = u_raw - (prec * u_raw).sum() / prec.sum()
    total = offset + resid
    z_split = pm.Normal("z_cluster_split", 0.0, 1.0, dims="cluster")
    shrink = sd_cluster**2 / s2
    cl_eff = pm.Deterministic(
        "cluster_effect",
        shrink * total + pt.sqrt(shrink * sd_task**2 / size) * z_split,
        dims="cluster",
    )
    task_total = resid[idx] + task_dev
    sd_total2 = sd_task**2 + sd_at**2 + sd_cluster**2
    pm.Deterministic("task_effect", (total - cl_eff)[idx] + task_dev, dims="task")
    return offset, task_total, sd_total2


def _task_effects_plain(coords: dict, sd_task: Any, sd_at: Any, centred: bool) -> tuple[Any, Any, Any]:
    """Tasks without clusters: ``(offset, task_total, sd_total2)``.

    The offset is non-centred: the likelihood sees only ``theta = ability +
    offset``, so the offset's posterior scale is its prior's, ``sd_task /
    sqrt(T)``; written centred it made a funnel with sd_task (divergences in
    18 of 40 prior-predictive replicates of a 4 x 30 x 5 design).
    """
    # the number of tasks read from the model's dim (not a constant): the compiled kernel is
    # then the same at any size, and loads from the disk cache (hierbench.bayes._sampler._nutpie_build)
    n_task = pt.cast(pm.modelcontext(None).dim_lengths["task"], "float64")
    offset = pm.Deterministic(
        "task_offset", pm.Normal("z_task_offset", 0.0, 1.0) * sd_task / pt.sqrt(n_task)
    )
    if centred:
        task_dev = pm.ZeroSumNormal("task_dev", sigma=sd_task, dims="task")
    else:
        z_task = pm.ZeroSumNormal("z_task", sigma=1.0, dims="task")
        task_dev = sd_task * z_task
    sd_total2 = sd_task**2 + sd_at**2
    pm.Deterministic("task_effect", offset + task_dev, dims="task")
    return offset, task_dev, sd_total2


def _cluster_effects_alone(pri: dict, coords: dict, cl_idx: np.ndarray, sd_at: Any, centred: bool) -> tuple[Any, Any, Any]:
    """Clusters without task effects: ``(offset, task_total, sd_total2)``.

    As :func:`_task_effects_plain` with clusters for tasks: ``c_k = offset +
    dev_k``, ``offset ~ N(0, sd_cluster / sqrt(K))`` non-centred (the
    likelihood sees only ``theta = ability + offset``) and ``dev ~
    ZeroSumNormal(sd_cluster)``; each task carries its cluster's deviation.
    """
    idx, _, n_cl = _cluster_data(coords, cl_idx)
    sd_cluster = make_prior("sd_cluster", pri["sd_cluster"])
    offset = pm.Deterministic(
        "task_offset",
        pm.Normal("z_task_offset", 0.0, 1.0) * sd_cluster / pt.sqrt(pt.cast(n_cl, "float64")),
    )
    if centred:
        dev = pm.ZeroSumNormal("cluster_dev", sigma=sd_cluster, dims="cluster")
    else:
        dev = sd_cluster * pm.ZeroSumNormal("z_cluster", sigma=1.0, dims="cluster")
    pm.Deterministic("cluster_effect", offset + dev, dims="cluster")
    return offset, dev[idx], sd_cluster**2 + sd_at**2


def _task_effects(
    pri: dict, coords: dict, cl_idx: Any, use_cluster: bool, centred_set: set[str], agent_task: str,
    task: bool = True,
) -> tuple[Any, Any, Any, Any]:
    """Scales and task (and cluster) effects: ``(sd_at, offset, task_total, sd_total2)``.

    Task (and cluster) effects are split into their sample mean and the
    zero-sum deviations around it: ``b_t = offset + dev_t`` with ``offset ~
    N(0, sd_task / sqrt(T))`` and ``dev ~ ZeroSumNormal(sd_task)``, the same
    distribution as iid ``N(0, sd_task)``. The likelihood sees only
    ``theta_m = ability_m + offset`` and ``dev_t``, both well identified, which
    removes the ridge along which all abilities rise as all task effects fall
    (the slow direction of the plain parameterisation).

    ``task=False`` (one agent with one run per task): no task effect and no
    ``sd_task``; the cells' logits are the ability plus their cluster's effect.
    """
    sd_at = make_prior("sd_agent_task", pri["sd_agent_task"]) if agent_task != "none" else pt.zeros(())
    if not task and use_cluster:
        return (sd_at, *_cluster_effects_alone(pri, coords, cl_idx, sd_at, "cluster" in centred_set))
    if not task:
        n_task = pm.modelcontext(None).dim_lengths["task"]
        return sd_at, pt.zeros(()), pt.zeros(n_task), sd_at**2
    sd_task = make_prior("sd_task", pri["sd_task"])
    if use_cluster and "task" in centred_set:
        parts = _task_effects_integrated(pri, coords, cl_idx, sd_task, sd_at)
    elif use_cluster:
        parts = _task_effects_nested(pri, coords, cl_idx, sd_task, sd_at)
    else:
        parts = _task_effects_plain(coords, sd_task, sd_at, "task" in centred_set)
    return (sd_at, *parts)


def _abilities(pri: dict, coords: dict, offset: Any, agents: str, centred: bool) -> tuple[Any, Any]:
    """``(theta, ability)`` with ``theta = ability + offset`` (what the likelihood sees)."""
    if agents == "fixed":
        spec = dict(pri["ability"])
        if "mu" not in spec:
            raise PriorError(
                "`priors['ability']` must be a location family with a `mu` parameter "
                f"(e.g. Normal, StudentT); got {spec}"
            )
        spec["mu"] = offset + spec["mu"]
        theta = make_prior("ability_theta", spec, dims="agent")
        ability = pm.Deterministic("ability", theta - offset, dims="agent")
        mu = pm.Deterministic("mu", ability.mean())
        agent_effect = pm.Deterministic("agent_effect", ability - mu, dims="agent")
        # one agent has no spread: no sd_agent (see _record_unidentified)
        if len(coords["agent"]) > 1:
            dof = pt.cast(pm.modelcontext(None).dim_lengths["agent"], "float64") - 1.0
            pm.Deterministic("sd_agent", pt.sqrt((agent_effect**2).sum() / dof))
        return theta, ability
    mu = make_prior("mu", pri["mu"])
    sd_agent = make_prior("sd_agent", pri["sd_agent"])
    theta = normal_group("ability_theta", "z_agent", mu + offset, sd_agent, centred=centred, dims="agent")
    ability = pm.Deterministic("ability", theta - offset, dims="agent")
    pm.Deterministic("agent_effect", ability - mu, dims="agent")
    return theta, ability


def _likelihood_none(eta_cell: Any, n_cell: Any, y_cell: Any, cells: dict) -> None:
    """Binomial cells on the logit scale, ``y * eta - n * softplus(eta) + log C(n, y)``.

    The coefficient is precomputed: ``pm.Binomial`` with a data-valued ``n``
    recomputes three gammaln per cell at every gradient (half the gradient
    cost on 25 x 500 Bernoulli cells). The rest is one fused Op
    (:mod:`hierbench.bayes._ops._logit_op`): value and gradient in one SIMD pass.
    """
    log_binom_cell = pm.Data("cell_log_binom", log_binom(cells["cell_y"], cells["cell_n"]), dims="cell")

    def logp_logit(value: Any, eta: Any, n: Any) -> Any:
        return binomial_logit(value, n, eta) + log_binom_cell

    def random_logit(
        eta: Any, n: Any, rng: np.random.Generator | None = None, size: Any = None
    ) -> np.ndarray:
        eta = np.asarray(eta)
        shape = eta.shape if size is None else size
        return rng.binomial(np.broadcast_to(n, shape), 1.0 / (1.0 + np.exp(-eta)))

    pm.CustomDist(
        "y", eta_cell, n_cell, logp=logp_logit, random=random_logit,
        observed=y_cell, dims="cell", dtype="int64",
    )  # fmt: skip


def _likelihood_marginal(eta_cell: Any, sd_at: Any, n_cell: Any, y_cell: Any, cells: dict, n_quad: int) -> None:
    """Binomial cells with the agent x task effect integrated out by adaptive quadrature."""
    agq = AGQBinomialLogitNormal(int(n_quad), NEWTON_STEPS)
    log_binom_cell = pm.Data("cell_log_binom", log_binom(cells["cell_y"], cells["cell_n"]), dims="cell")

    def logp(value: Any, eta: Any, sd: Any, n: Any) -> Any:
        # CustomDist hands the scalar sd over broadcast to shape (1,)
        sd_scalar = sd if sd.ndim == 0 else sd.ravel()[0]
        return agq(value, n, eta, sd_scalar)[0] + log_binom_cell

    def random(
        eta: Any, sd: Any, n: Any, rng: np.random.Generator | None = None, size: Any = None
    ) -> np.ndarray:
        eta = np.asarray(eta)
        shape = eta.shape if size is None else size
        ab = rng.normal(0.0, 1.0, shape) * sd
        p = 1.0 / (1.0 + np.exp(-(eta + ab)))
        return rng.binomial(np.broadcast_to(n, shape), p)

    pm.CustomDist(
        "y", eta_cell, sd_at, n_cell, logp=logp, random=random,
        observed=y_cell, dims="cell", dtype="int64",
    )  # fmt: skip


def _agent_cluster_effect(pri: dict) -> tuple[Any, Any]:
    """The agent x cluster effect ``(ac)_mk ~ N(0, sd_agent_cluster)``, non-centred: ``(effect, its variance)``.

    Each agent's tasks of one cluster share its ``(ac)_mk`` beyond its ability and the
    cluster's difficulty; a new task from a new cluster brings a fresh one (``mean_new_task``).
    """
    sd = make_prior("sd_agent_cluster", pri["sd_agent_cluster"])
    z = pm.Normal("z_agent_cluster", 0.0, 1.0, dims=("agent", "cluster"))
    return pm.Deterministic("agent_cluster_effect", sd * z, dims=("agent", "cluster")), sd**2


def _likelihood(
    theta: Any, ability: Any, parts: tuple, n_cell: Any, y_cell: Any, cells: dict, agent_task: str, n_quad: int,
    ac: tuple[Any, Any] | None = None,
) -> None:  # fmt: skip
    """``mean_new_task`` and the cells' likelihood, by the agent x task form (``ac``: the agent x cluster effect)."""
    sd_at, _, task_total, sd_total2 = parts
    # the cells' indices as data (not constants), so that the kernel holds no size
    ai = pm.Data("cell_agent_idx", cells["cell_agent_idx"].astype(np.int64), dims="cell")
    ti = pm.Data("cell_task_idx", cells["cell_task_idx"].astype(np.int64), dims="cell")
    eta_grid = theta[:, None] + task_total[None, :]
    if ac is not None:
        eta_grid = eta_grid + ac[0][:, pm.modelcontext(None)["task_cluster_idx"]]
        sd_total2 = sd_total2 + ac[1]
    pu, pw = population_nodes()  # the one population rule (hierbench._numerics.agq)
    p_new = pm.math.invlogit(ability[:, None] + pt.sqrt(sd_total2) * pu[None, :])
    pm.Deterministic("mean_new_task", (p_new * pw[None, :]).sum(axis=1), dims="agent")
    eta_cell = eta_grid[ai, ti]
    if agent_task == "none":
        _likelihood_none(eta_cell, n_cell, y_cell, cells)
    elif agent_task == "latent":
        z_at = pm.Normal("z_agent_task", 0.0, 1.0, dims=("agent", "task"))
        at = pm.Deterministic("agent_task_effect", sd_at * z_at, dims=("agent", "task"))
        pm.Binomial("y", n=n_cell, logit_p=eta_cell + at[ai, ti], observed=y_cell, dims="cell")
    else:
        _likelihood_marginal(eta_cell, sd_at, n_cell, y_cell, cells, n_quad)


def _model(
    counts: xr.Dataset, cells: dict, pri: dict, use_cluster: bool, centred_set: set[str], agent_task: str,
    task: bool, agents: str, n_quad: int, use_ac: bool = False,
) -> tuple[pm.Model, np.ndarray | None]:  # fmt: skip
    """The PyMC model of the decided structure, and each task's cluster index (None without clusters)."""
    coords, cl_idx = count_coords(counts, cells, clusters=use_cluster)
    with pm.Model(coords=coords) as model:
        _, _, n_cell, y_cell = count_data(counts, cells)
        parts = _task_effects(pri, coords, cl_idx, use_cluster, centred_set, agent_task, task)
        theta, ability = _abilities(pri, coords, parts[1], agents, "agent" in centred_set)
        ac = _agent_cluster_effect(pri) if use_ac else None
        _likelihood(theta, ability, parts, n_cell, y_cell, cells, agent_task, n_quad, ac)
    return model, cl_idx


def _info(
    st: Structure, counts: xr.Dataset, cells: dict, pri: dict, options: dict, cl_idx: Any, task: bool = True
) -> dict:
    """The data the model carries for :func:`hierbench.bayes.fit` (no callables: hooks by name)."""
    return count_info(
        "crossed",
        st,
        counts,
        cells,
        pri,
        HOOKS,
        # 0.8 everywhere: 0.65 (half the leapfrog steps on well-conditioned designs)
        # diverged on small and single-agent designs (tau-bench: 114); nested clusters
        # (non-centred) diverged at 0.65 on the default demo data (4 divergences, 0 at
        # 0.8). See models/crossed/card.md (also why tuning stays at the package's 300).
        sampler_defaults={"target_accept": 0.8},
        data={
            "cell_agent_idx": cells["cell_agent_idx"],
            "cell_task_idx": cells["cell_task_idx"],
            "cell_n": cells["cell_n"],
            "task_cluster_idx": cl_idx if options["clusters"] else None,
        },
        options=options,
        # mean_observed is added by the postprocess hook, which sets its own attrs
        var_attrs={
            "ability": {
                "scale": "logit",
                "meaning": "mu + agent_effect: " + ability_meaning(task, options["clusters"]) + _separated_said(st),
            },
            "mean_new_task": {
                "scale": "probability",
                "meaning": "expected success probability on a new task",
            },
            **{v: {"scale": "logit", "meaning": f"SD of the {what} effects, on the logit scale"}
               for v, what in _SD_WORDS.items()},
            "task_effect": {"scale": "logit", "meaning": "each task's effect, added to the ability on the logit scale (higher: easier)"},
        },
    )


#: the crossed model's SDs, and whose effects they spread
_SD_WORDS = {"sd_agent": "agent", "sd_task": "task", "sd_cluster": "cluster",
             "sd_agent_cluster": "agent x cluster", "sd_agent_task": "agent x task"}


def build_crossed(
    data: xr.Dataset,
    *,
    priors: Mapping[str, Mapping[str, Any]] | None = None,
    clusters: Literal["auto"] | bool = "auto",
    agent_task: Literal["auto", "marginal", "latent", "none"] = "auto",
    n_quad: int = 7,
    agents: Literal["fixed", "random"] = "fixed",
    centred: Literal["auto"] | tuple[str, ...] = "auto",
    agent_cluster: Literal["auto"] | bool = "auto",
) -> pm.Model:
    """Build the crossed agent x task (x cluster) logistic model.

    What the design cannot identify is left out (the rule of
    :func:`hierbench.metrics.crossed_variance_components`; :func:`hierbench.bayes.describe` shows
    each decision and its reason): ``sd_agent`` with one agent (``agents``), the agent x task
    effect with one run per cell or one agent (``agent_task``), and, with one agent and one run
    per task, the task effect and ``sd_task`` (nothing repeats within a task: on its prior it
    did not converge, SWE-bench one model). The cells' logit is then the ability (plus its
    cluster's effect); ``priors['sd_task']`` is refused; a task effect fitted anyway is a
    ``(1|task)`` term of :func:`hierbench.bayes.build_mixed`.

    Parameters
    ----------
    data : xarray.Dataset
        An eval dataset with binary scores (or its counts). The task coord ``cluster`` (e.g.
        METR task families, SWE-bench repositories) adds a cluster effect.
    priors : mapping, optional
        Overrides of :data:`CROSSED_PRIORS`: ``mu ~ N(0, 1.5)``, ``sd_agent ~ HalfNormal(1.5)``,
        ``sd_task ~ HalfNormal(2)``, ``sd_agent_task ~ HalfNormal(1)``,
        ``sd_cluster ~ HalfNormal(1)``, ``sd_agent_cluster ~ HalfNormal(1)`` (logit scale).
    clusters : "auto" or bool
        Use the ``cluster`` task coord ("auto": if present).
    agent_task : {"auto", "marginal", "latent", "none"}
        The agent x task effect integrated out by adaptive Gauss-Hermite quadrature
        ("marginal"), kept as latent ``agent_task_effect(agent, task)`` ("latent"), or left out
        ("none"). "auto": "none" when every cell has one run (a Bernoulli cell cannot separate
        it from run noise: 23 divergences on SWE-bench bash-only) or with one agent (it is then
        the task effect), else "marginal".
    n_quad : int
        Nodes of the adaptive Gauss-Hermite quadrature (marginal only): seven are within 5e-3 of
        scipy in the cell log-likelihood for 1-100 runs (``models/crossed/card.md``).
    agents : {"fixed", "random"}
        ``"fixed"`` (default): each agent's ``ability`` has its own weak prior ``N(0, 2.5)``, no
        pooling (evaluated agents are chosen, not sampled, and each carries thousands of runs);
        ``mu`` is the mean of the abilities, ``agent_effect = ability - mu`` and ``sd_agent``
        their finite-population standard deviation. ``"random"``: ``ability ~ N(mu, sd_agent)``
        (weakly identified with few agents). One agent: no ``sd_agent`` with ``"fixed"``;
        ``"random"`` fits it on its prior, with :class:`UnidentifiedTermWarning`.
    agent_cluster : "auto" or bool
        ``agent_cluster_effect(agent, cluster) ~ N(0, sd_agent_cluster)``, non-centred: an
        agent's tasks of one cluster share its departure from its ability there. "auto": with
        the cluster effect and two or more agents (one agent: it is the cluster effect). Left
        out, pair intervals are too narrow where advantages differ by cluster (METR: 36%).
    centred : "auto" or tuple of {"agent", "task", "cluster"}
        Groups given the centred parameterisation, the others non-centred. "auto" centres a
        group when its median level is well informed by its own data (Fisher information x
        spread^2 >= 4, more with fewer than 8 levels; :func:`hierbench.bayes.describe` shows
        the figures), where the non-centred form would correlate ``mu`` with every level; a
        weakly informed group needs the non-centred form to avoid the funnel.

    Returns
    -------
    pymc.Model
        Posterior names ``mu``, ``sd_agent``, ``sd_task``, ``sd_agent_task``, (``sd_cluster``,
        ``cluster_effect(cluster)``, ``sd_agent_cluster``, ``agent_cluster_effect(agent,
        cluster)``), ``agent_effect(agent)``, ``task_effect(task)`` (neither ``sd_task`` nor
        ``task_effect`` with one agent and one run per task); deterministics
        ``ability(agent)`` (logit: ``mu + agent_effect``, the log-odds on a task of average
        difficulty), ``mean_new_task(agent)`` (expected success probability on a new task from
        the population, in a new cluster) and ``mean_observed(agent)`` (the average over the
        dataset's tasks of the cells' p_mt drawn from their posterior, whose interval covers the
        true observed-task mean; added after sampling with the fit's ``rng``). Likelihood ``y(cell)``.

    Raises
    ------
    ValueError
        Fewer than two tasks with runs: the task spread and the agent x task interaction need
        them, as in the frequentist counterparts.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> data, _ = simulate_eval(n_agents=2, n_tasks=10, n_runs=3, rng=0)
    >>> model = build_crossed(data)
    >>> sorted(v.name for v in model.free_RVs)
    ['ability_theta', 'sd_agent_task', 'sd_task', 'z_task', 'z_task_offset']
    """
    _check_options(clusters, agent_task, n_quad, agents, agent_cluster)
    counts, cells = prepare_counts(data, model="build_crossed")
    _check_tasks(counts)
    st, use_cluster, agent_task, centred_set, task = _decide(counts, cells, clusters, agent_task, agents, centred)
    use_ac = _decide_agent_cluster(st, agent_cluster, use_cluster)
    pri = _priors(st, priors, use_cluster, agents, agent_task, task, use_ac)
    _design_notes(st, counts, cells, pri, agents)
    model, cl_idx = _model(counts, cells, pri, use_cluster, centred_set, agent_task, task, agents, n_quad, use_ac)
    options = {"clusters": bool(use_cluster), "agent_task": agent_task, "n_quad": int(n_quad),
               "agents": agents, "centred": sorted(centred_set), "agent_cluster": bool(use_ac)}  # fmt: skip
    model.hierbench = _info(st, counts, cells, pri, options, cl_idx, task)
    return model


register(
    ModelEntry(
        name="crossed",
        builder=build_crossed,
        default_priors=lambda opts: _default_priors(
            opts.get("clusters", True) is not False, opts.get("agents", "fixed"), True,
            opts.get("agent_cluster", "auto") is not False,
        ),
        default_options={
            "clusters": "auto",
            "agent_task": "auto",
            "n_quad": 7,
            "agents": "fixed",
            "centred": "auto",
            "agent_cluster": "auto",
        },
        sampler_settings={"target_accept": 0.8},
        description="Crossed agent x task (x cluster) logistic model on aggregated counts",
        hooks=HOOKS,
    )
)


#: cells x draws per chunk of the posterior predictive (about 160 MB per float temporary)
_PREDICTIVE_CHUNK = 20_000_000


@register_hook("crossed.predictive")
def _predictive(dt: xr.DataTree, gen: np.random.Generator, *, info: Mapping[str, Any]) -> xr.DataTree:
    """Posterior predictive ``y(cell)``, vectorised over draws.

    The cell's logit is ``ability + task_effect (+ cluster_effect)`` (the
    model's ``theta + task_total``, rewritten in its reported effects) plus
    a fresh agent x task effect for the marginal model, or the drawn one for
    the latent model.
    """
    d = info["data"]
    ai, ti, n, cl_idx = d["cell_agent_idx"], d["cell_task_idx"], d["cell_n"], d["task_cluster_idx"]
    agent_task = info["options"]["agent_task"]
    post = dt["posterior"].to_dataset()

    def arr(name: str, *dims: str) -> np.ndarray:
        """The variable's draws, chains stacked: (chain x draw, *dims)."""
        return post[name].transpose("chain", "draw", *dims).values.reshape(-1, *(post.sizes[d] for d in dims))

    ability = arr("ability", "agent")
    # no task effect in the model (one agent with one run per task): the cell's logit has none
    n_tasks = len(cl_idx) if cl_idx is not None else int(ti.max(initial=-1)) + 1  # the cells index no more
    task_total = arr("task_effect", "task") if "task_effect" in post else np.zeros((ability.shape[0], n_tasks))
    if cl_idx is not None:
        task_total = task_total + arr("cluster_effect", "cluster")[:, cl_idx]
    ac = arr("agent_cluster_effect", "agent", "cluster") if "agent_cluster_effect" in post else None
    sd = arr("sd_agent_task") if agent_task == "marginal" else None
    latent = arr("agent_task_effect", "agent", "task") if agent_task == "latent" else None
    n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
    # int32 halves the array (1.6 GB at 50 x 2,000 cells x 4,000 draws) and holds any count of runs
    y = np.empty((n_chain * n_draw, n.size), dtype=np.int32)
    # in chunks of draws: at 50 x 2,000 cells x 4,000 draws the whole array of
    # logits alone is 3.2 GB, and five such temporaries do not fit in memory
    step = max(1, _PREDICTIVE_CHUNK // max(n.size, 1))
    for lo in range(0, y.shape[0], step):
        sl = slice(lo, min(lo + step, y.shape[0]))
        eta = cell_logits(ability[sl], task_total[sl], None if ac is None else (ac[sl], cl_idx), ai, ti)
        if sd is not None:
            eta += sd[sl, None] * gen.standard_normal(eta.shape)
        elif latent is not None:
            eta += latent[sl][:, ai, ti]
        y[sl] = binomial_draws(gen, n, expit(eta))
    y = y.reshape(n_chain, n_draw, n.size)
    dt["posterior_predictive"] = xr.DataTree(
        xr.Dataset(
            {"y": (("chain", "draw", "cell"), y)},
            coords={"chain": post.chain, "draw": post.draw, "cell": np.arange(n.size)},
        )
    )
    return dt


@register_hook("crossed.mean_observed")
def _add_mean_observed(
    dt: xr.DataTree, rng: None | int | np.random.Generator = None, *, info: Any = None
) -> xr.DataTree:
    """Add ``mean_observed(agent)``: the posterior of the average success probability over the dataset's tasks."""
    from ...metrics import _mean_observed_draws

    post = dt["posterior"].to_dataset()
    if "mean_observed" in post:
        return dt
    post["mean_observed"] = _mean_observed_draws(dt, rng).transpose("chain", "draw", "agent")
    dt["posterior"] = xr.DataTree(post)
    return dt


@register_hook("crossed.data_updates")
def _data_updates(cells: Mapping[str, Any], *, info: Any = None) -> dict[str, np.ndarray]:
    """A replicate's log binomial coefficients (they follow its success counts)."""
    return {"cell_log_binom": log_binom(cells["cell_y"], cells["cell_n"])}
