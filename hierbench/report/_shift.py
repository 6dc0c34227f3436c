"""Bayes minus bootstrap, reasoned once for the abilities and side-by-side sections (and the demo): whether a shift most agents share is the model's, its split at the fit's own mean over these tasks, which number to quote, and how weighing task clusters alike moves each agent's mean (``cluster_means``, ``cluster_weights``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ._context import _Context
from ._context import clustered_crossed
from ._context import most_share
from ._context import population_words
from ._flags import _quiet_cluster_codes


def _clustered(ctx: _Context) -> bool:
    """Whether the fit's new task comes from a new task cluster (a crossed fit with clusters)."""
    return ctx.fit is not None and clustered_crossed(ctx.fit)


def _abilities_shift(ctx: _Context, bay: pd.DataFrame, boot: pd.DataFrame) -> str:
    """Agent abilities' own word on Bayes minus bootstrap (audit B s71): the shift, its split, which to quote.

    The side-by-side section says the same with the cluster weighting; here the reader meets the two
    columns first. ``bay`` and ``boot``: the two tables of estimates (agents as rows).
    """
    b = pd.to_numeric(boot["estimate"], errors="coerce").set_axis(boot.index.astype(str))
    diff = pd.to_numeric(bay["estimate"], errors="coerce").set_axis(bay.index.astype(str)).reindex(b.index) - b
    these = None
    if ctx.post is not None and "mean_observed" in ctx.post:
        obs = ctx.post["mean_observed"].mean(("chain", "draw")).to_series()
        these = obs.set_axis(obs.index.astype(str)).reindex(b.index) - b
    return shared_shift(diff, True, these=these, clustered=_clustered(ctx), model=_model(ctx))


def _model(ctx: _Context) -> str | None:
    """The fit's ``hierbench_model`` (None without a fit): the key of its population's words."""
    return None if ctx.fit is None else ctx.fit.attrs.get("hierbench_model")


def shared_shift(
    diff: pd.Series, population: bool, clusters: str = "", these: pd.Series | None = None,
    clustered: bool | None = None, model: str | None = "crossed",
) -> str:
    """Bayes minus bootstrap over agents, said once; a shift most agents share is named as the model's.

    "Most": at least 3 in 4 agents on one side, and a two-sided sign test of the sides below 0.05.

    ``clusters``: the sentence on how the two weigh task clusters (:func:`cluster_weights`), when the
    fit has them. It is said whatever the number of agents, with which way weighing the clusters
    alike moves each agent's mean (its ``means``). A gap is never called a difference of target from
    a comparison of medians (audit B s71: on SWE-bench the medians agreed, -0.057 and -0.059, while a
    fit without clusters still lay 0.033 low and the two shifts tracked each other with Spearman 0.18).

    ``these``: the fit's own posterior mean over these tasks (``mean_observed``) minus the bootstrap's
    mean, per agent: :func:`shift_split` splits ``diff`` at it into the model's assumption about unseen
    tasks and its pooling. ``clustered``: whether the model's new task comes from a new cluster
    (default: ``clusters`` is said). ``model``: the fit's ``hierbench_model``, whose population of
    task rates the sentences name (:func:`population_words`; the default is the demo's crossed fit).
    """
    clustered = bool(clusters) if clustered is None else clustered
    d = pd.to_numeric(diff, errors="coerce").dropna()
    way = _weighting_way(d, getattr(clusters, "means", None), model) if clusters else None
    text, shared = "", False
    if len(d) >= 4:
        below, med = int((d < 0).sum()), float(d.median())
        text = f" Bayes minus bootstrap: median {med:+.3f}, Bayes lower for {below} of {len(d)} agents."
        shared = most_share(below, len(d))
    split = shift_split(d, these, clustered, model) if population else ""
    weigh = clusters + (way[1] if way else "")
    if not (population and shared):
        return text + split + weigh
    if way is not None and not way[0]:  # the weighting moves the mean the other way, or not at all
        return text + (
            " A shift most agents share is not chance between two estimates of one quantity: it comes from the "
            "model, not from the bootstrap." + split + weigh + quote(model) + _OBSERVED_TARGET
        )
    paren = ", ".join(w for w in (population_words(model).shape, "clusters weighing alike" if clustered else "") if w)
    return text + (
        " A shift most agents share is not chance between two estimates of one quantity: it is "
        f"where the model's task population{f' ({paren})' if paren else ''} differs from the tasks run, which the "
        "bootstrap does not assume." + split + weigh + quote(model) + _OBSERVED_TARGET
    )


def quote(model: str | None) -> str:
    """The model-free answer, and which number to quote where the two part by a shared shift (audit B s71, finding 1).

    ``model``: the fit's ``hierbench_model``, whose population the Bayes number rests on.
    """
    return (" The task bootstrap's interval of the per-task mean is the model-free answer for a new task like "
            "these; where the two part by a shift most agents share, it is the one to quote: the Bayes number "
            f"rests on the model's {population_words(model).short}.")  # fmt: skip


def shift_split(d: pd.Series, these: pd.Series | None, clustered: bool, model: str | None = "crossed") -> str:
    """Bayes minus bootstrap ``d`` split at the fit's own mean over these tasks, per agent, with counts.

    ``these``: the fit's posterior mean over these tasks (``mean_observed``: each task's own effect,
    its cluster's where the model has clusters) minus the bootstrap's mean, per agent. New task minus
    these tasks (``d - these``) is the model's assumption about unseen tasks (its population of task
    rates, :func:`population_words` of ``model``, the fit's ``hierbench_model``; with clusters, a new
    cluster, every cluster weighing alike); these tasks minus the per-task mean (``these``) is its
    pooling of each agent's tasks toward that population, and for an agent scored on fewer tasks its
    prediction of the tasks never run. ``""`` without ``these``.
    """
    if these is None:
        return ""
    g = pd.to_numeric(these, errors="coerce").set_axis(these.index.astype(str)).reindex(d.index.astype(str)).dropna()
    if g.empty:
        return ""
    dd = d.set_axis(d.index.astype(str)).reindex(g.index)
    pop = dd - g
    first = (f"the model's assumption about unseen tasks: {population_words(model).noun}"
             + (", a new cluster, every cluster weighing alike" if clustered else ""))  # fmt: skip
    second = "its pooling of each agent's tasks, and its guess at any task the agent never ran"
    head = " Split at the fit's own mean over these tasks (`mean_observed`)"
    if len(g) <= 3:
        each = "; ".join(f"{a}: {_signed(pop[a])} and {_signed(g[a])}" for a in g.index)
        return head + f", into new task minus these tasks ({first}) and these tasks minus the per-task mean ({second}): {each}."
    n, larger = len(g), int((pop.abs() > g.abs()).sum())
    return head + (
        f": new task minus these tasks ({first}) has median {_signed(pop.median())}, of Bayes minus bootstrap's sign for "
        f"{int((np.sign(pop) == np.sign(dd)).sum())} of {n} agents; these tasks minus the per-task mean ({second}) "
        f"has median {_signed(g.median())}, within 0.01 of zero for {int((g.abs() <= 0.01).sum())} of {n}. The first "
        f"is the larger part for {larger} of {n} agents."
    )


def _signed(x: float) -> str:
    """``x`` to 3 decimals with its sign, and no ``-0.000``."""
    return f"{round(float(x), 3) + 0.0:+.3f}"


#: where the model's counterpart of the bootstrap's point estimate is, said after a shift put down to the model
_OBSERVED_TARGET = " The model's mean over the tasks run, hierbench.metrics.pass_hat_k(fit, k=1), has the bootstrap's point target."


def _weighting_way(d: pd.Series, means: pd.DataFrame | None, model: str | None = "crossed") -> tuple[bool, str] | None:
    """Whether weighing the clusters alike moves the agents' means the way Bayes minus bootstrap ``d`` goes, said.

    ``means``: :func:`cluster_means`. The way is the sign of the median over the agents of
    per cluster minus per task beside that of ``d``'s median; each agent's pair is named where
    there are 3 or fewer. None where no agent of ``d`` has both means.

    The same way in the medians is not a difference of target (audit B s71: SWE-bench's -0.057 beside
    -0.059, while agent by agent the two shifts tracked each other with Spearman 0.18, and Minimax M2's
    weighting went the other way). With 4 or more agents the sentence says how far the weighting
    accounts for the gap agent by agent: the Spearman correlation of the two shifts, and for how many
    agents Bayes lies nearer the per-cluster mean than the per-task mean. It calls the gap one of the
    cluster weighting's target only where both say so (Spearman at least 0.5, and nearer for at least
    3 in 4 agents): in the population the two are one target unless the clusters' means vary with
    their sizes, which one sample of clusters shows only so far. ``model``: the fit's
    ``hierbench_model``, whose population of task rates the other cause names.
    """
    if means is None:
        return None
    w = (means["per cluster"] - means["per task"]).reindex(d.index.astype(str)).dropna()
    if w.empty:
        return None
    dd = d.set_axis(d.index.astype(str)).reindex(w.index)
    if len(w) <= 3:
        said = "; ".join(f"{a}: {w[a]:+.3f} beside {dd[a]:+.3f}" for a in w.index)
    else:
        same = int((np.sign(w) == np.sign(dd)).sum())
        said = f"median {w.median():+.3f} beside {dd.median():+.3f}, the same sign for {same} of {len(w)} agents"
    said = f"per cluster minus per task, beside Bayes minus bootstrap: {said}"
    if abs(w.median()) < 5e-4:
        return False, (f" Weighing the clusters alike hardly moves the data's mean here ({said}), so it does not "
                       f"explain a difference: {_model_cause(model)} do.")  # fmt: skip
    if np.sign(w.median()) != np.sign(dd.median()):
        return False, (f" Weighing the clusters alike would move the data's mean the other way ({said}), so it does "
                       f"not explain the difference: {_model_cause(model)} do.")  # fmt: skip
    text = (f" In this sample, weighing these clusters alike moves the data's mean the way Bayes differs from the "
            f"bootstrap ({said}).")  # fmt: skip
    if len(w) <= 3:
        return True, text + (" With so few agents that does not show that the two differ in target: in the "
                             "population they are one target unless the clusters' means vary with their sizes.")  # fmt: skip
    rho = float(w.corr(dd, method="spearman"))  # NaN where either shift is the same for every agent
    nearer = int(((dd - w).abs() < dd.abs()).sum())  # Bayes nearer the per-cluster mean than the per-task mean
    track = (f" Agent by agent the weighting's shift and Bayes minus bootstrap have Spearman correlation {rho:.2f}"
             if np.isfinite(rho) else " Agent by agent one of the two shifts is the same for every agent (no Spearman "
             "correlation)") + (f", and Bayes lies nearer the per-cluster mean than the per-task mean for {nearer} of "
                                f"{len(w)} agents")  # fmt: skip
    if np.isfinite(rho) and rho >= 0.5 and nearer >= 0.75 * len(w):
        return True, text + track + (": the weighting accounts for the gap agent by agent, so on these clusters the two "
                                     "columns differ by how they weigh them, a difference of target (in the "
                                     "population they are one target unless the clusters' means vary with their "
                                     "sizes).")  # fmt: skip
    return True, text + track + (": the weighting does not account for the gap agent by agent, so a shared "
                                 "median does not make the two columns differ in target.")  # fmt: skip


def _model_cause(model: str | None) -> str:
    """What else moves the model's new-task mean off the tasks run's (said where the clusters' weighting does not)."""
    shape = population_words(model).shape
    return (f"the model's task population{f' ({shape})' if shape else ''}, where it differs from the tasks run, "
            "and its pooling of the tasks toward it")  # fmt: skip


class ClusterWeights(str):
    """:func:`cluster_weights`' sentence, with the per-agent means behind it (``means``, :func:`cluster_means`).

    A string, so that a caller passes it on to :func:`shared_shift` as it is (the demo does), and
    :func:`shared_shift` reads which way the weighting moves each agent's mean from ``means``.
    """

    means: pd.DataFrame | None = None



def _pooled_cluster_means(data: xr.Dataset) -> tuple[float, float, int]:
    """Over all agents: the mean score per task, per cluster (clusters weighing alike) and the number of clusters.

    Each the average over the agents of their own means (:func:`cluster_means`), so that the per-task
    one is the average of the data summary's per-agent means (audit U s71: pooling every agent's runs
    within a task first gave the demo's 0.438 beside the summary's 0.436).
    """
    means, k = _agent_cluster_means(data)
    return float(means["per task"].mean()), float(means["per cluster"].mean()), k


def _agent_cluster_means(data: xr.Dataset) -> tuple[pd.DataFrame, int]:
    """:func:`cluster_means` of the data alone, and the number of clusters."""
    score = data["score"]
    cell = score.mean([d for d in score.dims if d not in ("agent", "task")]).transpose("agent", "task")
    per_task = pd.DataFrame(cell.values, index=[str(a) for a in data["agent"].values])
    codes, labels = _quiet_cluster_codes(data)
    by_cluster = per_task.T.groupby(np.asarray(labels, dtype=object)[codes]).mean().T  # NaN: no task scored there
    means = pd.DataFrame({"per task": per_task.mean(axis=1), "per cluster": by_cluster.mean(axis=1)})
    return means, by_cluster.shape[1]


def cluster_means(fit: xr.DataTree | None, data: xr.Dataset | None) -> pd.DataFrame | None:
    """Each agent's mean score with every task weighing alike, and with every task cluster weighing alike.

    Columns ``per task`` (the bootstrap's point estimate: the mean over the agent's scored tasks
    of its mean score there) and ``per cluster`` (the mean over the clusters it was scored in of its
    mean there: the weighting of a crossed fit's new task from a new cluster); rows the agents
    (labels as text). A task without a cluster label is its own cluster, as the fit takes it.
    None unless ``fit`` is a crossed fit with clusters and ``data`` has a ``cluster`` coord.
    """
    if fit is None or data is None or "cluster" not in data.coords or "score" not in data or not clustered_crossed(fit):
        return None
    return _agent_cluster_means(data)[0]


def cluster_weights(fit: xr.DataTree | None, data: xr.Dataset | None) -> str:
    """How the model's new task and the tasks run weigh the task clusters, with this log's two means.

    ``""`` unless ``fit`` is a crossed fit with clusters and ``data`` has a ``cluster`` coord (the
    report's side-by-side section and the demo's section 4 say it under the same shift). The
    sentence is a :class:`ClusterWeights`, whose ``means`` (:func:`cluster_means`) tell
    :func:`shared_shift` which way the weighting moves each agent's mean.

    The crossed model's new task comes from a new cluster (``sd_cluster`` in its spread), so every
    cluster weighs alike; the tasks run, and the cluster bootstrap's mean over them, weigh each by its
    tasks. SWE-bench by repository: 0.523 over the 500 tasks, 0.472 over the 12 repositories' means
    (django, 231 tasks, is easier than most). A median shift of the same sign is not a difference of
    target: :func:`shared_shift` says how far the weighting accounts for the gap agent by agent.
    """
    means = cluster_means(fit, data)
    if means is None:
        return ""
    per_task, per_cluster, k = _pooled_cluster_means(data)
    out = ClusterWeights(
        f" With task clusters the model's new task comes from a new cluster, so each of the {k} "
        "clusters weighs alike, where the tasks run (and the bootstrap's mean) weigh each cluster by its number "
        f"of tasks; over all agents the mean score is {per_task:.3f} per task and {per_cluster:.3f} per cluster."
    )
    out.means = means
    return out
