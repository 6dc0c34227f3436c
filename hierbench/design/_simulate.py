"""Simulated complete logs from an item response model, with one skill or several (deliberate misfit)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.special import expit

from .._base import as_rng
from .._base import check_int
from .._docs import fill_doc
from ..freq import IRTBank

__all__ = ["simulate_irt_log"]


@fill_doc
def simulate_irt_log(
    n_agents: int,
    n_tasks: int | None = None,
    *,
    n_runs: int = 1,
    skills: int = 1,
    skill_correlation: float = 0.0,
    bank: IRTBank | None = None,
    run_icc: float = 0.0,
    rng: None | int | np.random.Generator = None,
) -> tuple[xr.Dataset, xr.Dataset]:
    """Complete binary logs of agents answering tasks by a 2PL with one skill, or one skill per task cluster.

    With ``skills = 1`` every agent has one ability ``theta ~ N(0, 1)`` and
    ``P(success) = expit(a_t theta + d_t)``: the model a bank calibrates, so
    a bank fits. With ``skills = k > 1`` the tasks are dealt into ``k``
    clusters in turn and an agent's ability on cluster ``c`` is its own
    ``theta_c`` (standard normal, pairwise correlation
    ``skill_correlation``): agents whose abilities differ by item cluster,
    which a one-dimensional bank cannot represent.

    Parameters
    ----------
    n_agents : int
    n_tasks : int, optional
        Number of tasks (default: the bank's).
    n_runs : int
        Runs per cell.
    skills : int
        Number of skills (task clusters).
    skill_correlation : float
        Correlation of an agent's skills, in (-1 / (skills - 1), 1].
    bank : IRTBank, optional
        Item parameters to simulate from (its posterior means: "a simulation
        from the bank's own model"); default ``log a ~ N(0.2, 0.3)``,
        ``d ~ N(0, 2)``.
    run_icc : float
        Correlation of a cell's runs (each cell's own probability is Beta
        around the curve's with this intraclass correlation); 0: independent.
    %(rng)s

    Returns
    -------
    data : xarray.Dataset
        ``score`` over (agent, task, run); ``cluster`` task coordinate.
    truth : xarray.Dataset
        ``ability`` (agent, skill), ``discrimination`` and ``intercept``
        (task), ``p`` (agent, task) and ``full_score`` (agent: the realised
        mean over tasks of each cell's success rate).

    Examples
    --------
    >>> data, truth = simulate_irt_log(5, 30, skills=2, rng=0)
    >>> data.score.shape, truth.ability.shape
    ((5, 30, 1), (5, 2))
    """
    M = check_int(n_agents, "n_agents", min=1)
    R = check_int(n_runs, "n_runs", min=1)
    K = check_int(skills, "skills", min=1)
    gen = as_rng(rng)
    if bank is not None:
        a, d = bank.point()
        tasks = bank.tasks
        if n_tasks is not None and check_int(n_tasks, "n_tasks", min=1) != a.size:
            raise ValueError(f"`n_tasks` must be the bank's number of tasks ({a.size}) or None; got {n_tasks}")
    else:
        T = check_int(n_tasks, "n_tasks", min=1) if n_tasks is not None else 100
        a, d = np.exp(gen.normal(0.2, 0.3, T)), gen.normal(0.0, 2.0, T)
        tasks = np.array([f"t{j:04d}" for j in range(T)])
    lo = -1.0 / (K - 1) if K > 1 else -1.0
    if not lo < skill_correlation <= 1:
        raise ValueError(f"`skill_correlation` must be in ({lo:.3g}, 1] for {K} skills; got {skill_correlation!r}")
    if not 0 <= run_icc < 1:
        raise ValueError(f"`run_icc` must satisfy 0 <= run_icc < 1; got {run_icc!r}")
    cov = np.full((K, K), float(skill_correlation)) + (1 - skill_correlation) * np.eye(K)
    theta = gen.multivariate_normal(np.zeros(K), cov, size=M) if K > 1 else gen.standard_normal((M, 1))
    cluster = np.arange(a.size) % K
    p = expit(theta[:, cluster] * a[None, :] + d[None, :])
    cell = p if run_icc == 0 else gen.beta(p * (1 / run_icc - 1), (1 - p) * (1 / run_icc - 1))
    y = (gen.random((M, a.size, R)) < cell[:, :, None]).astype(float)
    agents = np.array([f"agent_{i:03d}" for i in range(M)])
    data = xr.Dataset({"score": (("agent", "task", "run"), y)},
                      coords={"agent": agents, "task": tasks, "run": np.arange(R), "cluster": ("task", cluster)})
    data.attrs = {"source": "hierbench.design.simulate_irt_log", "skills": K, "skill_correlation": skill_correlation}
    truth = xr.Dataset({"ability": (("agent", "skill"), theta), "discrimination": ("task", a), "intercept": ("task", d),
                        "p": (("agent", "task"), p), "full_score": ("agent", y.mean(axis=(1, 2)))},
                       coords={"agent": agents, "task": tasks})
    return data, truth
