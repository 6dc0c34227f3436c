"""Simulated evaluations with known parameters (also the embedded default dataset)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import xarray as xr
from scipy.special import expit

from ._base import as_rng
from .data import SCHEMA_VERSION, _not_kept_attr

__all__ = ["as_rng", "default_dataset", "simulate_eval"]


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
    sd_run: float = 0.0,
    score_kind: Literal["binary", "continuous"] = "binary",
    p_missing_task: float = 0.0,
    p_missing_run: float = 0.0,
    p_error: float = 0.0,
    errors: Literal["fail", "exclude"] = "fail",
    rng: None | int | np.random.Generator = None,
) -> tuple[xr.Dataset, xr.Dataset]:
    """Simulate an agents x tasks x runs evaluation from the crossed model.

    ``logit p_mt = mu + a_m + c_cluster(t) + b_t + (ab)_mt``, with
    ``a ~ N(0, sd_agent)``, ``c ~ N(0, sd_cluster)``, ``b ~ N(0, sd_task)``,
    ``(ab) ~ N(0, sd_agent_task)``. Each run then draws
    ``eta_mtr = logit p_mt + N(0, sd_run)``; a binary score is
    ``Bernoulli(expit(eta_mtr))``, a continuous (partial-credit) score is
    ``expit(eta_mtr)`` itself.

    Parameters
    ----------
    n_agents, n_tasks, n_runs : int
        Sizes of the full design.
    mu, sd_agent, sd_task, sd_agent_task, sd_cluster, sd_run : float
        Logit-scale mean and standard deviations.
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
    rng : None, int or numpy.random.Generator

    Returns
    -------
    data : xarray.Dataset
        The eval dataset.
    truth : xarray.Dataset
        True parameters: ``agent_effect(agent)``, ``task_effect(task)``,
        ``cluster_effect(cluster)`` (if clusters), ``agent_task(agent, task)``,
        ``p(agent, task)`` (success probability of a run, or expected score),
        and the scalars as attrs and variables.

    Examples
    --------
    >>> ds, truth = simulate_eval(n_agents=3, n_tasks=20, n_runs=4, rng=1)
    >>> dict(ds.score.sizes)
    {'agent': 3, 'task': 20, 'run': 4}
    """
    for name, v in (("n_agents", n_agents), ("n_tasks", n_tasks), ("n_runs", n_runs)):
        if int(v) != v or v < 1:
            raise ValueError(f"`{name}` must be a positive integer; got {v!r}")
    for name, v in (
        ("sd_agent", sd_agent),
        ("sd_task", sd_task),
        ("sd_agent_task", sd_agent_task),
        ("sd_cluster", sd_cluster),
        ("sd_run", sd_run),
    ):
        if v < 0:
            raise ValueError(f"`{name}` must be >= 0; got {v!r}")
    for name, v in (("p_missing_task", p_missing_task), ("p_missing_run", p_missing_run), ("p_error", p_error)):
        if not 0 <= v < 1:
            raise ValueError(f"`{name}` must satisfy 0 <= {name} < 1; got {v!r}")
    if n_clusters < 0 or n_clusters > n_tasks:
        raise ValueError(f"`n_clusters` must satisfy 0 <= n_clusters <= n_tasks ({n_tasks}); got {n_clusters}")
    if score_kind not in ("binary", "continuous"):
        raise ValueError(f"`score_kind` must be 'binary' or 'continuous'; got {score_kind!r}")
    gen = as_rng(rng)
    M, T, R = int(n_agents), int(n_tasks), int(n_runs)
    a = gen.normal(0.0, sd_agent, M)
    b = gen.normal(0.0, sd_task, T)
    ab = gen.normal(0.0, sd_agent_task, (M, T))
    if n_clusters:
        cl = np.concatenate([np.arange(n_clusters), gen.integers(0, n_clusters, T - n_clusters)])
        gen.shuffle(cl)
        c = gen.normal(0.0, sd_cluster, n_clusters)
        cl_eff = c[cl]
    else:
        cl = None
        c = None
        cl_eff = np.zeros(T)
    eta = mu + a[:, None] + cl_eff[None, :] + b[None, :] + ab
    eta_run = eta[..., None] + gen.normal(0.0, sd_run, (M, T, R)) if sd_run > 0 else np.repeat(
        eta[..., None], R, axis=2
    )
    prob = expit(eta_run)
    if score_kind == "binary":
        score = (gen.random((M, T, R)) < prob).astype(float)
        # expected score of a run in cell (m, t): average over the run noise
        if sd_run > 0:
            z = gen.normal(0.0, sd_run, 4000)
            p_cell = expit(eta[..., None] + z).mean(-1)
        else:
            p_cell = expit(eta)
    else:
        score = prob.copy()
        z = gen.normal(0.0, sd_run, 4000) if sd_run > 0 else np.zeros(1)
        p_cell = expit(eta[..., None] + z).mean(-1)
    err = gen.random((M, T, R)) < p_error
    missing = np.zeros((M, T, R), bool)
    if p_missing_task > 0:
        missing |= (gen.random((M, T)) < p_missing_task)[..., None]
    if p_missing_run > 0:
        miss_run = gen.random((M, T, R)) < p_missing_run
        miss_run[..., 0] = False  # a ragged cell keeps at least one run
        missing |= miss_run
    err &= ~missing
    score[err] = 0.0 if errors == "fail" else np.nan
    score[missing] = np.nan

    agents = [f"agent_{i:02d}" for i in range(M)]
    tasks = [f"task_{j:04d}" for j in range(T)]
    coords = {"agent": agents, "task": tasks, "run": np.arange(R, dtype=np.int64)}
    if cl is not None:
        coords["cluster"] = ("task", np.array([f"cluster_{k:02d}" for k in cl], dtype=object))
    dims = ("agent", "task", "run")
    data = xr.Dataset(
        {"score": (dims, score), "error": (dims, err)},
        coords=coords,
    )
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
        "not_kept": _not_kept_attr({"infrastructure error, excluded (errors='exclude')": n_excluded}),
        "inconsistent_attributes": "{}",
        "annotations": "[]",
    }
    truth = xr.Dataset(
        {
            "agent_effect": ("agent", a),
            "task_effect": ("task", b),
            "agent_task": (("agent", "task"), ab),
            "p": (("agent", "task"), p_cell),
            "mu": mu,
            "sd_agent": sd_agent,
            "sd_task": sd_task,
            "sd_agent_task": sd_agent_task,
            "sd_cluster": sd_cluster,
            "sd_run": sd_run,
        },
        coords={"agent": agents, "task": tasks},
    )
    if cl is not None:
        truth["cluster_effect"] = ("cluster_id", c)
        truth = truth.assign_coords(
            cluster_id=[f"cluster_{k:02d}" for k in range(n_clusters)], cluster=coords["cluster"]
        )
    truth.attrs = {"model": "crossed logit", "score_kind": score_kind}
    return data, truth


def default_dataset(rng: None | int | np.random.Generator = 20261130) -> tuple[xr.Dataset, xr.Dataset]:
    """The embedded default evaluation used by ``hierbench demo``.

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
