"""Plain helpers several test files share (fixtures live in ``conftest.py``).

Import them as ``from _helpers import ...``: pytest puts ``tests/`` on the path.
Each builds inputs only; none computes an expected value.
"""

import random

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["agent_task_counts", "fake_fit", "seed003_passages", "sim_nested"]


def agent_task_counts(n, y, agents=None, tasks=None) -> xr.Dataset:
    """A counts dataset (``n_runs``, ``n_success`` on agent x task); names a0.., t0.. by default."""
    n = np.asarray(n)
    A, T = n.shape
    return xr.Dataset(
        {
            "n_runs": (("agent", "task"), n.astype(np.int64)),
            "n_success": (("agent", "task"), np.asarray(y, dtype=float)),
        },
        coords={
            "agent": agents if agents is not None else [f"a{i}" for i in range(A)],
            "task": tasks if tasks is not None else [f"t{j}" for j in range(T)],
        },
    )


def fake_fit(model: str, agents, constant_data=None, tasks=None, **draws) -> xr.DataTree:
    """A DataTree shaped like a fit of ``model`` from given posterior draws.

    Each draw array is (chain, draw) or (chain, draw, agent); None draws are left out. ``constant_data``
    maps names to agent x task arrays (tasks named t0.. unless ``tasks`` is given).
    """
    dims = ("chain", "draw", "agent")
    post = xr.Dataset(
        {k: (dims[: np.ndim(v)], np.asarray(v, float)) for k, v in draws.items() if v is not None},
        coords={"agent": list(agents)},
    )
    tree = {"posterior": post.assign_coords(chain=np.arange(post.sizes["chain"]),
                                            draw=np.arange(post.sizes["draw"]))}
    if constant_data is not None:
        n_task = np.shape(next(iter(constant_data.values())))[1]
        tree["constant_data"] = xr.Dataset(
            {k: (("agent", "task"), np.asarray(v)) for k, v in constant_data.items()},
            coords={"agent": list(agents),
                    "task": list(tasks) if tasks is not None else [f"t{i}" for i in range(n_task)]},
        )
    dt = xr.DataTree.from_dict(tree)
    dt.attrs["hierbench_model"] = model
    return dt


def seed003_passages() -> tuple[np.ndarray, np.ndarray]:
    """Seed 003's reading test: 100 passages x 5 questions, p in {0.1, 0.9} (scores, passage ids)."""
    rng = random.Random(1)
    scores, clus = [], []
    for c in range(100):
        p_passage = rng.choice([0.1, 0.9])
        for _ in range(5):
            scores.append(1 if rng.random() < p_passage else 0)
            clus.append(c)
    return np.asarray(scores, float), np.asarray(clus)


def sim_nested(rng, n_family=25, s=(0.5, 1.0, 0.8)) -> pd.DataFrame:
    """Unbalanced run:task:family scores with variances ``s`` (family, task, residual)."""
    rows = []
    fam = rng.normal(0, np.sqrt(s[0]), n_family)
    for f in range(n_family):
        for t in range(rng.integers(1, 6)):  # families of 1 to 5 tasks
            te = rng.normal(0, np.sqrt(s[1]))
            for r in range(rng.integers(1, 7)):  # 1 to 6 runs per task
                rows.append((f"f{f}", f"t{t}", r, 2.0 + fam[f] + te + rng.normal(0, np.sqrt(s[2]))))
    return pd.DataFrame(rows, columns=["family", "task", "run", "y"])


def crossed_fit_without_agent_task():
    """A crossed fit (posterior and constant data, no sampler) without the agent x task effect, and its runs.

    m0 ran t0 twice, t1 once, t2 never; m1 ran them 3, 3 and 1 times; 6 draws of one chain.
    """
    rng = np.random.default_rng(2)
    S, agents, tasks = 6, ["m0", "m1"], ["t0", "t1", "t2"]
    n = np.array([[2, 1, 0], [3, 3, 1]])
    mu, a, b = rng.normal(0, 0.5, (1, S)), rng.normal(0, 0.5, (1, S, 2)), rng.normal(0, 1, (1, S, 3))
    cd = ("chain", "draw")
    post = xr.Dataset({"mu": (cd, mu), "agent_effect": ((*cd, "agent"), a), "task_effect": ((*cd, "task"), b),
                       "sd_agent": (cd, np.ones_like(mu)), "sd_task": (cd, np.ones_like(mu))},
                      coords={"chain": [0], "draw": np.arange(S), "agent": agents, "task": tasks})  # fmt: skip
    const = xr.Dataset({"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), np.minimum(n, 1))},
                       coords={"agent": agents, "task": tasks})  # fmt: skip
    dt = xr.DataTree.from_dict({"posterior": post, "constant_data": const})
    dt.attrs["hierbench_model"] = "crossed"
    dt.attrs["hierbench_spec"] = '{"options": {"agent_task": "none", "n_quad": 7}}'
    return dt, n
