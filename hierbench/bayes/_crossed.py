"""Crossed agent x task logistic model on aggregated counts.

For agent ``m``, task ``t`` (in cluster ``k(t)``) with ``n_mt`` runs and
``y_mt`` successes,

    logit p_mt = mu + a_m + c_k(t) + b_t + (ab)_mt,
    a_m ~ N(0, sd_agent), c_k ~ N(0, sd_cluster), b_t ~ N(0, sd_task),
    (ab)_mt ~ N(0, sd_agent_task),
    y_mt ~ Binomial(n_mt, p_mt),

all groups non-centred. The likelihood is over the observed cells only, so
its cost does not grow with the number of runs, and ragged data (cells never
run) costs nothing.

``agent_task="marginal"`` (default) integrates the agent x task effect out
of each cell's binomial likelihood by Gauss-Hermite quadrature (a
logit-normal-binomial), removing the M x T latent parameters and the funnel
between them and ``sd_agent_task``; the per-cell effects are recovered
afterwards, exactly given each draw, by
:func:`hierbench.metrics.agent_task_effects`. ``agent_task="latent"`` keeps
them as non-centred parameters (the plain version, for comparison).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy.special import gammaln

from ._registry import ModelEntry, data_hash, make_prior, merge_priors, prepare_counts, register

__all__ = ["CROSSED_PRIORS", "build_crossed", "gauss_hermite"]

CROSSED_PRIORS: dict[str, dict[str, Any]] = {
    "mu": {"dist": "Normal", "mu": 0.0, "sigma": 1.5},
    "sd_agent": {"dist": "HalfNormal", "sigma": 1.5},
    "sd_task": {"dist": "HalfNormal", "sigma": 2.0},
    "sd_agent_task": {"dist": "HalfNormal", "sigma": 1.0},
    "sd_cluster": {"dist": "HalfNormal", "sigma": 1.0},
}


def gauss_hermite(n_quad: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights for E[f(Z)], Z ~ N(0, 1): ``sum(w * f(u))``."""
    x, w = np.polynomial.hermite.hermgauss(n_quad)
    return np.sqrt(2.0) * x, w / np.sqrt(np.pi)


def _log_sigmoid(x: Any) -> Any:
    return -pt.softplus(-x)


def _cell_loglik_nodes(y: Any, n: Any, eta: Any, sd: Any, u: np.ndarray) -> Any:
    """Binomial log-likelihood (without the constant) at each quadrature node: (cell, node)."""
    e = eta[:, None] + sd * u[None, :]
    return y[:, None] * _log_sigmoid(e) + (n - y)[:, None] * _log_sigmoid(-e)


CENTRE_MIN_RUNS = 50


def _choose_centred(centred: Any, counts: xr.Dataset) -> set[str]:
    groups = {"agent", "task", "cluster"}
    if centred == "auto":
        n = counts["n_runs"].values
        out = set()
        if n.sum(axis=1).mean() >= CENTRE_MIN_RUNS:
            out.add("agent")
        if n.sum(axis=0).mean() >= CENTRE_MIN_RUNS:
            out.add("task")
            out.add("cluster")
        return out
    if isinstance(centred, str) or not set(centred) <= groups:
        raise ValueError(f"`centred` must be 'auto' or a tuple drawn from {sorted(groups)}; got {centred!r}")
    return set(centred)


def build_crossed(
    data: xr.Dataset,
    *,
    priors: Mapping[str, Mapping[str, Any]] | None = None,
    clusters: Literal["auto"] | bool = "auto",
    agent_task: Literal["marginal", "latent"] = "marginal",
    n_quad: int = 21,
    centred: Literal["auto"] | tuple[str, ...] = "auto",
) -> pm.Model:
    """Build the crossed agent x task (x cluster) logistic model.

    Parameters
    ----------
    data : xarray.Dataset
        An eval dataset with binary scores (or its counts). The task coord
        ``cluster`` (e.g. METR task families, SWE-bench repositories) adds
        a cluster effect.
    priors : mapping, optional
        Overrides of :data:`CROSSED_PRIORS`: ``mu ~ N(0, 1.5)``,
        ``sd_agent ~ HalfNormal(1.5)``, ``sd_task ~ HalfNormal(2)``,
        ``sd_agent_task ~ HalfNormal(1)``, ``sd_cluster ~ HalfNormal(1)``
        (all on the logit scale).
    clusters : "auto" or bool
        Use the ``cluster`` task coord ("auto": if present).
    agent_task : {"marginal", "latent"}
        Integrate the agent x task effect out by Gauss-Hermite quadrature,
        or keep it as latent parameters ``agent_task_effect(agent, task)``.
    n_quad : int
        Quadrature nodes (marginal only). 21 nodes integrate the likelihood
        of cells with up to ~30 runs to better than 1e-6 in log-likelihood
        for ``sd_agent_task`` up to 3 (checked against adaptive quadrature in
        the tests); raise it for cells with many more runs.
    centred : "auto" or tuple of {"agent", "task", "cluster"}
        Groups given the centred parameterisation; the others are
        non-centred. A group whose levels each carry a lot of data has a
        posterior that is well identified level by level, where the
        non-centred form creates strong correlations (between ``mu`` and
        every ``z_agent``) that NUTS handles badly; a weakly informed group
        needs the non-centred form to avoid the funnel. "auto" centres a
        group when its levels have at least 50 runs each on average
        (agents almost always; tasks when agents x runs >= 50).

    Returns
    -------
    pymc.Model
        Posterior names ``mu``, ``sd_agent``, ``sd_task``, ``sd_agent_task``,
        (``sd_cluster``, ``cluster_effect(cluster)``), ``agent_effect(agent)``,
        ``task_effect(task)``; deterministics ``ability(agent)`` (logit
        scale: ``mu + agent_effect``, the agent's log-odds on a task of
        average difficulty), ``mean_new_task(agent)`` (expected success
        probability on a new task from the population) and
        ``mean_observed(agent)`` (expected success probability averaged over
        the dataset's tasks, given the data). Likelihood ``y(cell)``.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> data, _ = simulate_eval(n_agents=2, n_tasks=10, n_runs=3, rng=0)
    >>> model = build_crossed(data)
    >>> sorted(v.name for v in model.free_RVs)
    ['mu', 'sd_agent', 'sd_agent_task', 'sd_task', 'z_agent', 'z_task']
    """
    if agent_task not in ("marginal", "latent"):
        raise ValueError(f"`agent_task` must be 'marginal' or 'latent'; got {agent_task!r}")
    if not isinstance(n_quad, (int, np.integer)) or not 5 <= n_quad <= 200:
        raise ValueError(f"`n_quad` must be an integer with 5 <= n_quad <= 200; got {n_quad!r}")
    if clusters not in ("auto", True, False):
        raise ValueError(f"`clusters` must be 'auto', True or False; got {clusters!r}")
    counts, cells = prepare_counts(data)
    centred_set = _choose_centred(centred, counts)
    has_cluster = "cluster" in counts.coords
    if clusters is True and not has_cluster:
        raise ValueError("`clusters=True` needs a `cluster` task coord in `data`; there is none")
    use_cluster = has_cluster and clusters in ("auto", True)
    default = {k: v for k, v in CROSSED_PRIORS.items() if use_cluster or k != "sd_cluster"}
    pri = merge_priors(default, priors)
    agents = counts.agent.values.tolist()
    tasks = counts.task.values.tolist()
    coords: dict[str, Any] = {"agent": agents, "task": tasks, "cell": np.arange(cells["cell_n"].size)}
    if use_cluster:
        cl_labels, cl_idx = np.unique(counts["cluster"].values.astype(str), return_inverse=True)
        coords["cluster"] = cl_labels.tolist()
    ai, ti = cells["cell_agent_idx"], cells["cell_task_idx"]
    u, w = gauss_hermite(int(n_quad))
    log_w = np.log(w)
    n_np, y_np = cells["cell_n"], cells["cell_y"]
    log_binom = gammaln(n_np + 1) - gammaln(y_np + 1) - gammaln(n_np - y_np + 1)
    with pm.Model(coords=coords) as model:
        n_grid = pm.Data("n_runs", counts.n_runs.values, dims=("agent", "task"))
        y_grid = pm.Data("n_success", counts.n_success.values, dims=("agent", "task"))
        n_cell = pm.Data("cell_n_runs", n_np, dims="cell")
        mu = make_prior("mu", pri["mu"])
        sd_agent = make_prior("sd_agent", pri["sd_agent"])
        sd_task = make_prior("sd_task", pri["sd_task"])
        sd_at = make_prior("sd_agent_task", pri["sd_agent_task"])
        if "agent" in centred_set:
            ability = pm.Normal("ability", mu, sd_agent, dims="agent")
            agent_effect = pm.Deterministic("agent_effect", ability - mu, dims="agent")
        else:
            z_agent = pm.Normal("z_agent", 0.0, 1.0, dims="agent")
            agent_effect = pm.Deterministic("agent_effect", sd_agent * z_agent, dims="agent")
            pm.Deterministic("ability", mu + agent_effect, dims="agent")
        if "task" in centred_set:
            task_effect = pm.Normal("task_effect", 0.0, sd_task, dims="task")
        else:
            z_task = pm.Normal("z_task", 0.0, 1.0, dims="task")
            task_effect = pm.Deterministic("task_effect", sd_task * z_task, dims="task")
        task_total = task_effect
        sd_total2 = sd_task**2 + sd_at**2
        if use_cluster:
            pm.Data("task_cluster_idx", cl_idx.astype(np.int64), dims="task")
            sd_cluster = make_prior("sd_cluster", pri["sd_cluster"])
            if "cluster" in centred_set:
                cluster_effect = pm.Normal("cluster_effect", 0.0, sd_cluster, dims="cluster")
            else:
                z_cluster = pm.Normal("z_cluster", 0.0, 1.0, dims="cluster")
                cluster_effect = pm.Deterministic("cluster_effect", sd_cluster * z_cluster, dims="cluster")
            task_total = task_effect + cluster_effect[cl_idx]
            sd_total2 = sd_total2 + sd_cluster**2
        eta_grid = mu + agent_effect[:, None] + task_total[None, :]
        p_new = pm.math.invlogit(mu + agent_effect[:, None] + pt.sqrt(sd_total2) * u[None, :])
        pm.Deterministic("mean_new_task", (p_new * w[None, :]).sum(axis=1), dims="agent")
        eta_cell = eta_grid[ai, ti]
        if agent_task == "latent":
            z_at = pm.Normal("z_agent_task", 0.0, 1.0, dims=("agent", "task"))
            at = pm.Deterministic("agent_task_effect", sd_at * z_at, dims=("agent", "task"))
            p_grid = pm.math.invlogit(eta_grid + at)
            pm.Deterministic("mean_observed", p_grid.mean(axis=1), dims="agent")
            pm.Binomial("y", n=n_cell, logit_p=eta_cell + at[ai, ti], observed=y_np, dims="cell")
        else:
            # E[p_mt | data, draw] by quadrature over (ab)_mt; n = 0 cells give the prior mean
            e = eta_grid[:, :, None] + sd_at * u[None, None, :]
            ll = y_grid[:, :, None] * _log_sigmoid(e) + (n_grid - y_grid)[:, :, None] * _log_sigmoid(-e)
            ll = ll + log_w[None, None, :]
            post_w = pt.exp(ll - pt.max(ll, axis=2, keepdims=True))
            p_obs = (post_w * pm.math.invlogit(e)).sum(axis=2) / post_w.sum(axis=2)
            pm.Deterministic("mean_observed", p_obs.mean(axis=1), dims="agent")

            def logp(value: Any, eta: Any, sd: Any, n: Any) -> Any:
                lq = _cell_loglik_nodes(value, n, eta, sd, u) + log_w[None, :]
                return pt.logsumexp(lq, axis=1) + log_binom

            def random(eta: Any, sd: Any, n: Any, rng: np.random.Generator | None = None, size: Any = None) -> np.ndarray:
                eta = np.asarray(eta)
                shape = eta.shape if size is None else size
                ab = rng.normal(0.0, 1.0, shape) * sd
                p = 1.0 / (1.0 + np.exp(-(eta + ab)))
                return rng.binomial(np.broadcast_to(n, shape), p)

            pm.CustomDist(
                "y",
                eta_cell,
                sd_at,
                n_cell,
                logp=logp,
                random=random,
                observed=y_np,
                dims="cell",
                dtype="int64",
            )
    model.hierbench = {
        "model": "crossed",
        "options": {
            "clusters": bool(use_cluster),
            "agent_task": agent_task,
            "n_quad": int(n_quad),
            "centred": sorted(centred_set),
        },
        "priors": pri,
        "data_hash": data_hash(counts),
        "cell_coords": {"cell_agent": cells["cell_agent"], "cell_task": cells["cell_task"]},
        "n_cells_excluded": cells["n_cells_excluded"],
        "var_attrs": {
            "ability": {
                "scale": "logit",
                "meaning": "mu + agent_effect: log-odds of success on a task of average difficulty",
            },
            "mean_new_task": {"scale": "probability", "meaning": "expected success probability on a new task"},
            "mean_observed": {
                "scale": "probability",
                "meaning": "expected success probability averaged over the dataset's tasks, given the data",
            },
        },
    }
    return model


register(
    ModelEntry(
        name="crossed",
        builder=build_crossed,
        default_priors=lambda opts: {
            k: v for k, v in CROSSED_PRIORS.items() if opts.get("clusters", True) or k != "sd_cluster"
        },
        default_options={"clusters": "auto", "agent_task": "marginal", "n_quad": 21},
        sampler_settings={"sampler": "nutpie", "draws": 1000, "tune": 1000, "chains": 4},
        description="Crossed agent x task (x cluster) logistic model on aggregated counts",
    )
)
