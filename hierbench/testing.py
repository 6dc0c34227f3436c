"""Simulated evaluations with known parameters (also the embedded default dataset)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import xarray as xr
from scipy.special import expit

from ._base import as_rng
from ._base import check_choice
from ._base import check_int
from ._docs import fill_doc
from .data import SCHEMA_VERSION
from .data import _not_kept_attr
from .data import score_kind

__all__ = ["as_rng", "default_dataset", "simulate_eval"]


@fill_doc
def simulate_eval(
    n_agents: int = 4,
    n_tasks: int = 60,
    n_runs: int = 5,
    *,
    mu: float = 0.0,
    sd_agent: float = 0.8,
    sd_task: float = 1.5,
    sd_agent_task: float = 0.7,
    n_clusters: int = 0,
    sd_cluster: float = 0.0,
    sd_agent_cluster: float = 0.0,
    sd_run: float = 0.0,
    score_kind: Literal["binary", "continuous"] = "binary",
    p_missing_task: float = 0.0,
    p_missing_run: float = 0.0,
    p_error: float = 0.0,
    errors: Literal["fail", "exclude"] = "fail",
    rng: None | int | np.random.Generator = None,
) -> tuple[xr.Dataset, xr.Dataset]:
    """Simulate an agents x tasks x runs evaluation from the crossed model.

    ``logit p_mt = mu + a_m + c_k + (ac)_mk + b_t + (ab)_mt`` (``k`` the cluster of ``t``), with
    ``a ~ N(0, sd_agent)``, ``c ~ N(0, sd_cluster)``, ``(ac) ~ N(0, sd_agent_cluster)``,
    ``b ~ N(0, sd_task)``, ``(ab) ~ N(0, sd_agent_task)``. Each run then draws
    ``eta_mtr = logit p_mt + N(0, sd_run)``; a binary score is
    ``Bernoulli(expit(eta_mtr))``, a continuous (partial-credit) score is
    ``expit(eta_mtr)`` itself.

    Parameters
    ----------
    n_agents, n_tasks, n_runs : int
        Sizes of the full design.
    mu, sd_agent, sd_task, sd_agent_task, sd_cluster, sd_agent_cluster, sd_run : float
        Logit-scale mean and standard deviations. ``sd_agent_cluster`` needs clusters; at 0
        (the default) nothing is drawn for it, so a seed simulates what it did before the
        term existed.
    n_clusters : int
        Number of task clusters (0: none). Tasks are assigned to clusters
        uniformly at random, each cluster getting at least one task.
    score_kind : {"binary", "continuous"}
    p_missing_task : float
        Probability that an agent never attempted a task (whole cell missing).
    p_missing_run : float
        Probability that a single run is missing (ragged cells).
    p_error : float
        Probability that a run is an infrastructure error.
    errors : {"fail", "exclude"}
        Error policy applied to ``score`` (as in :func:`hierbench.data.from_records`).
    %(rng)s

    Returns
    -------
    data : xarray.Dataset
        The eval dataset.
    truth : xarray.Dataset
        True parameters: ``agent_effect(agent)``, ``task_effect(task)``,
        ``cluster_effect(cluster)`` (if clusters), ``agent_cluster(agent, cluster_id)`` (if
        ``sd_agent_cluster`` > 0), ``agent_task(agent, task)``,
        ``p(agent, task)`` (success probability of a run, or expected score),
        and the scalars as attrs and variables.

    Examples
    --------
    >>> ds, truth = simulate_eval(n_agents=3, n_tasks=20, n_runs=4, rng=1)
    >>> dict(ds.score.sizes)
    {'agent': 3, 'task': 20, 'run': 4}
    """
    M, T, R, K = _check_design(
        n_agents, n_tasks, n_runs, n_clusters, score_kind, errors,
        sd_agent=sd_agent, sd_task=sd_task, sd_agent_task=sd_agent_task, sd_cluster=sd_cluster,
        sd_agent_cluster=sd_agent_cluster, sd_run=sd_run, p_missing_task=p_missing_task, p_missing_run=p_missing_run, p_error=p_error,
    )  # fmt: skip
    gen = as_rng(rng)
    a = gen.normal(0.0, sd_agent, M)
    b = gen.normal(0.0, sd_task, T)
    ab = gen.normal(0.0, sd_agent_task, (M, T))
    cl, c = _draw_clusters(gen, T, K, sd_cluster)
    if sd_agent_cluster > 0 and not K:
        raise ValueError(f"`sd_agent_cluster` ({sd_agent_cluster!r}) needs clusters: `n_clusters` >= 1; got 0")
    ac = gen.normal(0.0, sd_agent_cluster, (M, K)) if sd_agent_cluster > 0 else None
    eta = mu + a[:, None] + (c[cl] if K else np.zeros(T))[None, :] + b[None, :] + ab
    if ac is not None:
        eta = eta + ac[:, cl]
    score, p_cell = _draw_scores(gen, eta, R, sd_run, score_kind)
    err, missing = _draw_gaps(gen, (M, T, R), p_missing_task, p_missing_run, p_error)
    score[err] = 0.0 if errors == "fail" else np.nan
    score[missing] = np.nan
    agents = [f"agent_{i:02d}" for i in range(M)]
    tasks = [f"task_{j:04d}" for j in range(T)]
    data = _sim_dataset(score, err, missing, errors, agents, tasks, cl if K else None)
    truth = _truth(a, b, ab, p_cell, c, data, agents, tasks, score_kind, mu=mu, sd_agent=sd_agent,
                   sd_task=sd_task, sd_agent_task=sd_agent_task, sd_cluster=sd_cluster, sd_run=sd_run)  # fmt: skip
    if ac is not None:
        truth["agent_cluster"] = (("agent", "cluster_id"), ac)
        truth["sd_agent_cluster"] = sd_agent_cluster
    return data, truth


def _check_design(
    n_agents, n_tasks, n_runs, n_clusters, score_kind, errors, **scales
) -> tuple[int, int, int, int]:
    """(M, T, R, K) after checking every argument of :func:`simulate_eval` that is not ``rng``."""
    M, T, R = (check_int(v, name, min=1) for name, v in
               (("n_agents", n_agents), ("n_tasks", n_tasks), ("n_runs", n_runs)))  # fmt: skip
    K = check_int(n_clusters, "n_clusters", min=0, max=T)
    for name, v in scales.items():
        if name.startswith("sd_") and not v >= 0:  # NaN fails too
            raise ValueError(f"`{name}` must be >= 0; got {v!r}")
        if name.startswith("p_") and not 0 <= v < 1:
            raise ValueError(f"`{name}` must satisfy 0 <= {name} < 1; got {v!r}")
    check_choice(score_kind, "score_kind", ["binary", "continuous"])
    check_choice(errors, "errors", ["fail", "exclude"])
    return M, T, R, K


def _draw_clusters(gen: np.random.Generator, T: int, K: int, sd_cluster: float):
    """(cluster of each task, cluster effects); every cluster gets at least one task."""
    if not K:
        return None, None
    cl = np.concatenate([np.arange(K), gen.integers(0, K, T - K)])
    gen.shuffle(cl)
    return cl, gen.normal(0.0, sd_cluster, K)


def _draw_scores(gen: np.random.Generator, eta: np.ndarray, R: int, sd_run: float, score_kind: str):
    """(scores of every run, expected score of a run per cell, averaged over the run noise)."""
    M, T = eta.shape
    eta_run = eta[..., None] + gen.normal(0.0, sd_run, (M, T, R)) if sd_run > 0 else np.repeat(
        eta[..., None], R, axis=2
    )
    prob = expit(eta_run)
    if score_kind == "binary":
        score = (gen.random((M, T, R)) < prob).astype(float)
        if sd_run > 0:
            z = gen.normal(0.0, sd_run, 4000)
            return score, expit(eta[..., None] + z).mean(-1)
        return score, expit(eta)
    z = gen.normal(0.0, sd_run, 4000) if sd_run > 0 else np.zeros(1)
    return prob.copy(), expit(eta[..., None] + z).mean(-1)


def _draw_gaps(gen: np.random.Generator, shape, p_missing_task, p_missing_run, p_error):
    """(infrastructure errors, runs that did not happen); a ragged cell keeps its first run."""
    err = gen.random(shape) < p_error
    missing = np.zeros(shape, bool)
    if p_missing_task > 0:
        missing |= (gen.random(shape[:2]) < p_missing_task)[..., None]
    if p_missing_run > 0:
        miss_run = gen.random(shape) < p_missing_run
        miss_run[..., 0] = False
        missing |= miss_run
    return err & ~missing, missing


def _truth(a, b, ab, p_cell, c, data, agents, tasks, score_kind, **scalars) -> xr.Dataset:
    """Return the true parameters of a simulation, on the data's agents, tasks and clusters."""
    truth = xr.Dataset(
        {
            "agent_effect": ("agent", a),
            "task_effect": ("task", b),
            "agent_task": (("agent", "task"), ab),
            "p": (("agent", "task"), p_cell),
            **scalars,
        },
        coords={"agent": agents, "task": tasks},
    )
    if c is not None:
        truth["cluster_effect"] = ("cluster_id", c)
        truth = truth.assign_coords(
            cluster_id=[f"cluster_{k:02d}" for k in range(len(c))], cluster=data.coords["cluster"]
        )
    truth.attrs = {"model": "crossed logit", "score_kind": score_kind}
    return truth


def _sim_dataset(score, err, missing, errors, agents, tasks, cl) -> xr.Dataset:
    """Return the eval dataset of the simulated runs, with the read report a reader would write."""
    R = score.shape[2]
    coords = {"agent": agents, "task": tasks, "run": np.arange(R, dtype=np.int64)}
    if cl is not None:
        coords["cluster"] = ("task", np.array([f"cluster_{k:02d}" for k in cl], dtype=object))
    dims = ("agent", "task", "run")
    data = xr.Dataset({"score": (dims, score), "error": (dims, err)}, coords=coords)
    n_rec = int((~missing).sum())
    n_err = int(err.sum())
    n_excluded = n_err if errors == "exclude" else 0
    data.attrs = {
        "hierbench_schema": SCHEMA_VERSION,
        "reader": "simulate_eval",
        "source": "hierbench.testing.simulate_eval",
        "errors": errors,
        "n_records_read": n_rec,
        "n_records_kept": n_rec - n_excluded,
        "n_error_runs": n_err,
        "score_kind": score_kind(score),
        "binary": int(score_kind(score) == "binary"),
        "not_kept": _not_kept_attr({"infrastructure error, excluded (errors='exclude')": n_excluded}),
        "inconsistent_attributes": "{}",
        "annotations": "[]",
    }
    return data


def default_dataset(rng: None | int | np.random.Generator = 20261130) -> tuple[xr.Dataset, xr.Dataset]:
    """Return the embedded default evaluation used by ``hierbench demo``.

    Six agents, 120 tasks in 12 clusters, 5 runs each, with 3% of cells
    never attempted, 2% of runs missing and 1% infrastructure errors:
    ragged like a real evaluation, simulated from known parameters.

    Examples
    --------
    >>> ds, truth = default_dataset()
    >>> dict(ds.sizes)
    {'agent': 6, 'task': 120, 'run': 5}
    """
    return simulate_eval(
        n_agents=6,
        n_tasks=120,
        n_runs=5,
        mu=-0.2,
        sd_agent=0.6,
        sd_task=1.6,
        sd_agent_task=0.6,
        n_clusters=12,
        sd_cluster=0.5,
        p_missing_task=0.03,
        p_missing_run=0.02,
        p_error=0.01,
        rng=rng,
    )
