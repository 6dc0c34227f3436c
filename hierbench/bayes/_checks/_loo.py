"""Leave-one-task-out log-likelihoods for PSIS-LOO, and the check of its Pareto k.

PSIS-LOO (Vehtari, Gelman and Gabry 2017) approximates the posterior without one
observation by importance sampling from the full posterior. It fails when the
observation moves the posterior a lot, which is what happens when the pointwise
log-likelihood conditions on a latent effect that only that observation informs.
The crossed model's stored log-likelihood of a cell conditions on its task's
effect ``b_t``; with one agent, only that cell informs ``b_t``: on tau-bench
(1 agent x 50 tasks x 4 runs) 31 of 50 Pareto k were above 0.69 and PSIS put the
crossed model 9.9 elpd ahead of the beta-binomial, where exact leave-one-out by
quadrature puts them level (-80.94 against -81.04).

The remedy is to leave out a whole task and to integrate the effects that only
its cells inform out of its likelihood, per posterior draw of the rest:

    p(y_t | theta) = int prod_m p(y_mt | eta_mt + b) N(b; 0, v_t) db,

with ``eta_mt`` the cell's logit without ``b_t`` and, where the model has an
agent x task effect, each cell's ``p(y_mt | .)`` its logit-normal-binomial (the
effect integrated as the model's own likelihood does, by adaptive Gauss-Hermite,
``hierbench._numerics.agq``). A task alone in its cluster takes its cluster's
effect (and the agent x cluster effects) with it: ``v_t`` then adds
``sd_cluster^2`` and each cell's spread ``sd_agent_cluster^2``. The importance
ratio ``1 / p(y_t | theta)`` then compares two posteriors of parameters that
other tasks inform too, which PSIS handles. Models whose cells are independent
given their parameters (the beta-binomial) just sum their cells' log-likelihoods
over each task, so the two models predict the same units.

The check: Vehtari, Simpson, Gelman, Yao and Gabry (2024, "Pareto smoothed
importance sampling", JMLR) show that an observation's PSIS estimate is
unreliable once its Pareto k exceeds ``min(1 - 1 / log10(S), 0.7)`` for ``S``
draws (arviz-stats' ``good_k``); a sum with such terms is unreliable too.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr
from scipy.special import gammaln
from scipy.special import logsumexp

from ..._base import NotConvergedWarning
from ..._base import fit_record
from ..._numerics import NEWTON_STEPS
from ..._numerics import expit_pair
from ..._numerics import gauss_hermite
from ..._numerics import place_nodes
from ...metrics import cell_logits

__all__ = [
    "TASK_LEVEL_MODELS",
    "TASK_NODES",
    "UnreliableLOOWarning",
    "missing_group_advice",
    "task_log_likelihood",
]

#: models whose task log-likelihood leaves out what only the task's cells inform: the crossed
#: model's integrates its task effects out; the beta-binomial has no parameter of its own per task.
#: A task of the IRT models keeps its own difficulty and slope, which PSIS cannot leave out.
TASK_LEVEL_MODELS = ("crossed", "beta_binomial")

#: Gauss-Hermite nodes over a task's effect, placed at the mode of its integrand and scaled by its
#: curvature (adaptive): within 1e-8 of scipy's quad on the tests' cases
TASK_NODES = 21
#: the nodes over each cell's agent x task effect when the fit does not record its own (build_crossed's
#: n_quad, in the attr hierbench_spec): the model's likelihood uses the same rule
CELL_NODES = 7
#: a task without an effect of its own (one agent, one run per task): the integral collapses to its point
_NO_SPREAD = 1e-24
#: draws x cells x nodes per chunk (memory: a few of these arrays of float64 at once)
_CHUNK = 2_000_000


class UnreliableLOOWarning(NotConvergedWarning):
    """PSIS-LOO's importance sampling failed for some observations (Pareto k too high): the elpd is unreliable."""


#: how to get a fit's log_likelihood group (fit() leaves it out by default)
ADD_LOG_LIKELIHOOD = (
    "refit with hierbench.bayes.fit(model, log_likelihood=True), or add it to this fit with "
    "hierbench.bayes.add_log_likelihood(fit, model)")


def check_log_likelihood(fit: xr.DataTree, name: str = "`fit`") -> None:
    """Refuse a fit without its ``log_likelihood`` group, naming it (``name``) and saying how to get the group.

    The group is left out by :func:`hierbench.bayes.fit` unless asked for, and by a compact
    save; the message says which of the two, and the way back.
    """
    if "log_likelihood" in fit.children:
        return
    why = missing_group_advice(fit, "log_likelihood", ADD_LOG_LIKELIHOOD)
    raise ValueError(f"{name} has no log_likelihood group" + (
        why or f" (hierbench.bayes.fit leaves it out unless log_likelihood=True): {ADD_LOG_LIKELIHOOD}"))


def missing_group_advice(fit: xr.DataTree, group: str, how: str) -> str:
    """Why ``group`` is missing from ``fit`` when a compact save dropped it, and how to get it back.

    ``how`` is the way to compute it again (it differs by group). Empty when the root attr
    ``hierbench_groups_dropped`` (written by ``hierbench.io.save_fit``) does not name ``group``.

    Examples
    --------
    >>> dt = xr.DataTree()
    >>> dt.attrs["hierbench_groups_dropped"] = '["log_likelihood", "posterior_predictive"]'
    >>> missing_group_advice(dt, "log_likelihood", "add it back")[:60]
    ': it was left out when the fit was saved (hierbench.io.save_'
    """
    raw = fit.attrs.get("hierbench_groups_dropped")
    if raw is None:
        return ""
    try:
        dropped = json.loads(raw) if isinstance(raw, str) else list(raw)
    except (TypeError, ValueError):
        dropped = [str(raw)]
    if group not in dropped:
        return ""
    return (
        f": it was left out when the fit was saved (hierbench.io.save_fit with groups='compact', the default, "
        f"drops {dropped}: the root attr hierbench_groups_dropped). Save the fit with "
        f"hierbench.io.save_fit(fit, path, groups='all') (or groups=[{group!r}]), or {how}"
    )


def count_cells(fit: xr.DataTree) -> xr.DataArray | None:
    """The observed success counts over ``cell`` with ``cell_task`` and ``cell_agent`` coords, or None."""
    if "observed_data" not in fit.children:
        return None
    obs = fit["observed_data"].to_dataset()
    for da in obs.data_vars.values():
        if da.dims == ("cell",) and {"cell_task", "cell_agent"} <= set(da.coords):
            return da
    return None


def task_log_likelihood(fit: xr.DataTree, *, n_nodes: int = TASK_NODES) -> xr.DataArray:
    """Each task's log-likelihood per draw, for leave-one-task-out PSIS: ``(chain, draw, task)``.

    For a crossed fit (``hierbench_model`` ``"crossed"``), computed from its posterior,
    ``constant_data`` and ``observed_data`` with the effects only the task's cells inform
    integrated out (the module docstring), so a saved fit without a ``log_likelihood``
    group works. For other fits of counts, the ``log_likelihood`` group's cells summed
    over each task. Tasks are in the order they first appear among the cells.

    Parameters
    ----------
    fit : xarray.DataTree
        A fit of counts: ``observed_data`` over ``cell`` with ``cell_task``.
    n_nodes : int
        Adaptive Gauss-Hermite nodes over each task's effect (crossed fits).

    Returns
    -------
    xarray.DataArray
        Named ``y``, over ``(chain, draw, task)``.
    """
    y = count_cells(fit)
    if y is None:
        raise ValueError("`fit` must be a fit of counts: observed_data over `cell` with `cell_task` and `cell_agent`")
    tasks_cell = np.asarray(y["cell_task"].values).astype(str)
    tasks = list(dict.fromkeys(tasks_cell))
    if fit.attrs.get("hierbench_model") == "crossed":
        ll = _crossed_task_ll(fit, y, tasks, n_nodes)
    else:
        check_log_likelihood(fit)
        cell_ll = fit["log_likelihood"].to_dataset()[y.name].transpose("chain", "draw", "cell").values
        pos = {t: i for i, t in enumerate(tasks)}
        idx = np.array([pos[t] for t in tasks_cell])
        ll = np.zeros((*cell_ll.shape[:2], len(tasks)))
        np.add.at(ll, (slice(None), slice(None), idx), cell_ll)
    post = fit["posterior"]
    return xr.DataArray(
        ll, dims=("chain", "draw", "task"), name="y",
        coords={"chain": post["chain"].values, "draw": post["draw"].values, "task": tasks},
    )  # fmt: skip


def _draws(post: xr.Dataset, name: str, *dims: str) -> np.ndarray | None:
    """A posterior variable's draws with chains stacked, ``(S, *dims)``; None when the fit has none."""
    if name not in post:
        return None
    v = post[name].transpose("chain", "draw", *dims).values
    return v.reshape(-1, *v.shape[2:])


def _positions(labels: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """Each cell's position among ``labels`` (a posterior coord), matched as text."""
    pos = {str(v): i for i, v in enumerate(labels)}
    return np.array([pos[str(v)] for v in cells])


def _crossed_parts(fit: xr.DataTree, y: xr.DataArray, tasks: list[str]) -> dict:
    """Per draw: each cell's logit without its task's own effects, their spreads, and the cells' data."""
    post = fit["posterior"].to_dataset()
    const = fit["constant_data"].to_dataset()
    ai, ti = (_positions(post[d].values, y[f"cell_{d}"].values) for d in ("agent", "task"))
    ability = _draws(post, "ability", "agent")
    eta = ability[:, ai]
    zero = np.zeros(ability.shape[0])
    sd_task, sd_at = _draws(post, "sd_task"), _draws(post, "sd_agent_task")
    var_b = np.broadcast_to((zero if sd_task is None else sd_task**2)[:, None], (zero.size, ti.size)).copy()
    var_ab = np.broadcast_to((zero if sd_at is None else sd_at**2)[:, None], var_b.shape).copy()
    cluster = _draws(post, "cluster_effect", "cluster")
    if cluster is not None and "task_cluster_idx" in const:
        tci = np.asarray(const["task_cluster_idx"].values).astype(int)
        alone = np.bincount(tci)[tci[ti]] == 1
        ac = _draws(post, "agent_cluster_effect", "agent", "cluster")
        shared = cell_logits(ability, cluster[:, tci], None if ac is None else (ac, tci), ai, ti)
        eta = np.where(alone, eta, shared)
        var_b = var_b + np.where(alone, _draws(post, "sd_cluster")[:, None] ** 2, 0.0)
        if ac is not None:
            var_ab = var_ab + np.where(alone, _draws(post, "sd_agent_cluster")[:, None] ** 2, 0.0)
    n = np.asarray(const["cell_n_runs"].values, dtype=float)
    yv = np.asarray(y.values, dtype=float)
    pos = {t: i for i, t in enumerate(tasks)}
    return {"eta": eta, "var_b": np.maximum(var_b, _NO_SPREAD), "var_ab": var_ab, "y": yv, "n": n,
            "log_binom": gammaln(n + 1) - gammaln(yv + 1) - gammaln(n - yv + 1),
            "task": np.array([pos[t] for t in np.asarray(y["cell_task"].values).astype(str)])}  # fmt: skip


def _crossed_task_ll(fit: xr.DataTree, y: xr.DataArray, tasks: list[str], n_nodes: int) -> np.ndarray:
    """``log p(y_t | theta)`` per draw and task, its own effects integrated out (the module docstring)."""
    parts = _crossed_parts(fit, y, tasks)
    n_quad = int(fit_record(fit, "hierbench_spec").get("options", {}).get("n_quad", CELL_NODES))
    order = np.argsort(parts["task"], kind="stable")  # cells grouped by task, for np.add.reduceat
    parts = {k: (v[..., order] if np.ndim(v) else v) for k, v in parts.items()}
    starts = np.flatnonzero(np.r_[True, np.diff(parts["task"]) != 0])
    s_total, n_cells = parts["eta"].shape
    step = max(1, _CHUNK // max(n_cells * n_nodes * n_quad, 1))
    out = np.empty((s_total, len(tasks)))
    for lo in range(0, s_total, step):
        sl = slice(lo, min(lo + step, s_total))
        block = {k: (v[sl] if np.ndim(v) == 2 else v) for k, v in parts.items()}
        out[sl] = _task_ll_block(block, starts, n_nodes, n_quad)
    post = fit["posterior"]
    return out.reshape(post.sizes["chain"], post.sizes["draw"], len(tasks))


def _task_mode(p: dict, starts: np.ndarray, var_t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mode and curvature scale of each task's integrand in ``b``, ``(S, T)`` each.

    Newton on the normal approximation of each cell's marginal (its agent x task spread
    widens the binomial: information ``n p (1 - p) / (1 + v n p (1 - p))``). The nodes only
    need a good centre and scale; the quadrature then evaluates the exact integrand.
    """
    b = np.zeros_like(var_t)
    for _ in range(NEWTON_STEPS):
        pr, _ = expit_pair(p["eta"] + b[:, p["task"]])
        info = p["n"] * pr * (1 - pr)
        w = 1.0 / (1.0 + p["var_ab"] * info)
        g = np.add.reduceat(w * (p["y"] - p["n"] * pr), starts, axis=1) - b / var_t
        h = np.add.reduceat(w * info, starts, axis=1) + 1.0 / var_t
        step = np.clip(g / h, -1.0, 1.0)
        b = b + step
        if np.max(np.abs(step)) < 1e-8:
            break
    pr, _ = expit_pair(p["eta"] + b[:, p["task"]])
    info = p["n"] * pr * (1 - pr)
    h = np.add.reduceat(info / (1.0 + p["var_ab"] * info), starts, axis=1) + 1.0 / var_t
    return b, 1.0 / np.sqrt(h)


def _task_ll_block(p: dict, starts: np.ndarray, n_nodes: int, n_quad: int) -> np.ndarray:
    """``_crossed_task_ll`` on a block of draws: adaptive Gauss-Hermite over each task's effect."""
    var_t = p["var_b"][:, starts]  # one value per task (the cells of a task share it)
    m, s = _task_mode(p, starts, var_t)
    u, w = gauss_hermite(n_nodes)
    b = m[..., None] + s[..., None] * u  # (S, T, Q)
    e = p["eta"][..., None] + b[:, p["task"], :]  # (S, C, Q)
    cell = _cell_log_lik(p["y"][:, None], p["n"][:, None], e, p["var_ab"][..., None], n_quad)
    cell += p["log_binom"][:, None]
    log_prior = -0.5 * b**2 / var_t[..., None] - 0.5 * np.log(2 * np.pi * var_t[..., None])
    # int g(b) db = s * sum_q w_q g(m + s u_q) / phi(u_q)
    terms = np.add.reduceat(cell, starts, axis=1) + log_prior + np.log(w) + 0.5 * u**2 + 0.5 * np.log(2 * np.pi)
    return logsumexp(terms, axis=-1) + np.log(s)


def _cell_log_lik(y: np.ndarray, n: np.ndarray, e: np.ndarray, var_ab: np.ndarray, n_quad: int) -> np.ndarray:
    """Each cell's log-likelihood at logit ``e`` (no binomial coefficient), its agent x task effect integrated.

    The logit-normal-binomial by adaptive Gauss-Hermite (the nodes of the model's own
    likelihood, ``hierbench._numerics.place_nodes``) where the spread is positive, the plain
    binomial where it is 0 (no agent x task effect).
    """
    _, sp = expit_pair(e)
    plain = y * e - n * sp
    if not np.any(var_ab > 0):
        return plain
    y, n, e, var_ab = np.broadcast_arrays(y, n, e, var_ab)
    spread = var_ab > 0
    sd = np.sqrt(var_ab[spread])
    _, _, lq, s_c = place_nodes(y[spread], n[spread], e[spread], sd, n_quad, NEWTON_STEPS, np)[:4]
    out = plain.copy()
    out[spread] = logsumexp(lq, axis=-1) + np.log(s_c) - np.log(sd)
    return out
