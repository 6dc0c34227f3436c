"""Posterior quantities of the crossed logistic model, from a saved fit (no PyMC needed).

The crossed model (:func:`hierbench.bayes.build_crossed`) integrates the
agent x task effect ``(ab)_mt ~ N(0, sd_agent_task)`` out of each cell's
binomial likelihood by adaptive Gauss-Hermite quadrature. Given one posterior draw, the
conditional posterior of ``(ab)_mt`` has density proportional to
``N(ab; 0, sd) * Binomial(y_mt | n_mt, expit(eta_mt + ab))``, so any
``E[f(p_mt) | data, draw]`` is a ratio of two quadrature sums: the per-cell
quantities below are exact given each draw (Rao-Blackwellised), up to the
quadrature error.

The same quadrature also gives a draw of ``p_mt`` itself: the normalised
node masses form a discrete law whose moments are the quadrature's
approximations of the conditional moments, so picking one node per cell at
random (``realised=True`` in :func:`crossed_pass_k`) yields draws of the
average of the cells' own ``p_mt`` over the dataset's tasks, not only of its
conditional expectation.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np
import xarray as xr
from scipy.special import expit

from .._base import AGENT_TASK_IN_TASK as AGENT_TASK_IN_TASK
from .._base import DEFAULT_PROB
from .._base import NO_AGENT_SPREAD as NO_AGENT_SPREAD
from .._base import ONE_RUN as ONE_RUN
from .._base import TASK_IN_RUNS as TASK_IN_RUNS
from .._base import UndefinedMetricWarning
from .._base import UnidentifiedWarning as UnidentifiedWarning
from .._base import agents_with_runs as agents_with_runs
from .._base import as_rng
from .._base import check_choice
from .._base import check_prob
from .._base import fit_record
from .._base import unidentified_by_design as unidentified_by_design
from .._base import unidentified_components as unidentified_components
from .._base import warn_user
from .._docs import fill_doc
from .._numerics import NEWTON_STEPS
from .._numerics import gauss_hermite
from .._numerics import node_terms
from .._numerics import population_nodes
from ._common import check_k
from ._common import fingerprints
from ._common import min_runs_per_k
from ._common import observed_defaults
from ._common import observed_only
from ._common import pass_attrs
from ._common import pass_result
from ._common import posterior_interval
from ._common import undefined_cells_message
from ._results import PosteriorPassKResult
from ._results import VarianceComponentDrawsResult

__all__ = [
    "UnidentifiedWarning",
    "agent_task_effects",
    "crossed_pass_k",
    "crossed_variance_components",
]


def _agq_weights(
    y: np.ndarray, n: np.ndarray, eta: np.ndarray, sd: np.ndarray, n_quad: int, compiled: bool = True
):
    """Adaptive GH node logits ``e`` (..., q) and normalised posterior masses for (ab) given eta, sd.

    The node placement is the model likelihood's own (:mod:`hierbench._numerics.agq`).
    With (draw, agent, task) arrays and one sd per draw the compiled kernel
    does the work; ``compiled=False`` (or other shapes) uses NumPy.
    """
    x, w = gauss_hermite(n_quad)
    if compiled and eta.ndim == 3 and np.ndim(sd) == 3 and np.shape(y)[-2:] == eta.shape[1:]:
        from .._numerics import node_masses

        return node_masses(
            np.broadcast_to(y, eta.shape)[0], np.broadcast_to(n, eta.shape)[0], eta,
            np.asarray(sd)[:, 0, 0], x, np.log(w), NEWTON_STEPS,
        )
    z, _, lq, _ = node_terms(y, n, eta, sd, n_quad)
    lq = lq - lq.max(axis=-1, keepdims=True)
    wt = np.exp(lq)
    wt /= wt.sum(axis=-1, keepdims=True)
    return eta[..., None] + z, wt


def _check_crossed(fit: xr.DataTree) -> dict:
    model = fit.attrs.get("hierbench_model")
    if model != "crossed":
        raise ValueError(f"`fit` must be a crossed-model fit; got hierbench_model={model!r}")
    spec = fit_record(fit, "hierbench_spec")
    return spec.get("options", {})


def _parts(fit: xr.DataTree) -> dict:
    opts = _check_crossed(fit)
    post = fit["posterior"].to_dataset()
    const = fit["constant_data"].to_dataset()
    stacked = post.stack(sample=("chain", "draw"))
    mu = stacked["mu"].values
    a = stacked["agent_effect"].transpose("sample", "agent").values
    # a fit of one agent with one run per task has no task effect (unidentified_components):
    # its cells' logits are the ability (plus the cluster's effect)
    no_task = "task_effect" not in stacked
    n_runs = const["n_runs"].transpose("agent", "task")
    b = np.zeros((mu.size, n_runs.sizes["task"])) if no_task else stacked["task_effect"].transpose("sample", "task").values
    sd_task = np.zeros(mu.size) if no_task else stacked["sd_task"].values
    has_cluster = "cluster_effect" in stacked and "task_cluster_idx" in const
    sd_cluster2 = np.zeros(mu.size)
    if has_cluster:
        cidx = const["task_cluster_idx"].values.astype(int)
        b = b + stacked["cluster_effect"].transpose("sample", "cluster").values[:, cidx]
        sd_cluster2 = stacked["sd_cluster"].values ** 2
    sd_task2 = sd_task**2 + sd_cluster2
    # the agent x cluster effect (agent_cluster=True): (sample, agent, cluster), and each task's cluster
    ac = None
    if has_cluster and "agent_cluster_effect" in stacked:
        ac = (stacked["agent_cluster_effect"].transpose("sample", "agent", "cluster").values, cidx)
    return {
        "opts": opts,
        "post": post,
        "mu": mu,
        "a": a,
        "b": b,
        # a fit of one agent has no sd_agent (no spread between agents)
        "sd_agent": stacked["sd_agent"].values if "sd_agent" in stacked else np.full(mu.size, np.nan),
        "sd_task2": sd_task2,  # the task effect's variance, its cluster's included
        "sd_cluster2": sd_cluster2,
        "has_cluster": has_cluster,
        "ac": ac,
        "sd_ac2": stacked["sd_agent_cluster"].values ** 2 if ac is not None else np.zeros(mu.size),
        "sd_at": stacked["sd_agent_task"].values if "sd_agent_task" in stacked else np.zeros(mu.size),
        "n": n_runs.values.astype(float),
        "y": const["n_success"].transpose("agent", "task").values.astype(float),
        "agent": post["agent"].values,
        "task": n_runs["task"].values,
        "n_quad": int(opts.get("n_quad", 7)),
        "latent": opts.get("agent_task") == "latent",
        "no_ab": opts.get("agent_task") == "none",
        "no_task": no_task,
    }


def cell_logits(
    ability: np.ndarray, task_total: np.ndarray, ac: tuple | None, ai: np.ndarray, ti: np.ndarray
) -> np.ndarray:
    """The crossed model's cell logits without the agent x task effect: the one statement of the sum.

    ``ability_m + b_t`` (the task's effect, its cluster's included) plus, where the fit has
    it, the agent's effect on the task's cluster. ``ability`` is (draws, agent),
    ``task_total`` (draws, task), ``ac`` None or ``(effects (draws, agent, cluster), each
    task's cluster index)``; ``ai`` and ``ti`` index the cells: 1-d arrays for a list of
    cells (the posterior predictive), or ``(M, 1)`` and ``(1, T)`` for the whole grid.
    Returns (draws, *cells).

    Examples
    --------
    >>> import numpy as np
    >>> ab, tt = np.array([[0.0, 1.0]]), np.array([[0.5, -0.5, 2.0]])
    >>> ac = (np.array([[[0.0, 0.1], [0.2, 0.3]]]), np.array([0, 0, 1]))
    >>> cell_logits(ab, tt, ac, np.array([1, 0]), np.array([2, 0]))   # cells (1, 2) and (0, 0)
    array([[3.3, 0.5]])
    """
    # np.take along one axis, and the agent x cluster pair as one flat index: 4x faster than fancy
    # indexing with two index arrays (a predictive of 57.5 million cells spent 2 of its 3 s here)
    eta = np.take(ability, ai, axis=1) + np.take(task_total, ti, axis=1)
    if ac is not None:
        effects, cidx = ac
        s, m, k = effects.shape
        eta += np.take(effects.reshape(s, m * k), ai * k + cidx[ti], axis=1)
    return eta


def _eta(parts: dict, sl: slice = slice(None)) -> np.ndarray:
    """The grid's logits without the agent x task effect, draws ``sl``: (sample, agent, task)."""
    ac = parts.get("ac")
    ac = None if ac is None else (ac[0][sl], ac[1])
    m, t = parts["a"].shape[1], parts["b"].shape[1]
    ability = parts["mu"][sl, None] + parts["a"][sl]
    return cell_logits(ability, parts["b"][sl], ac, np.arange(m)[:, None], np.arange(t)[None, :])


def _cell_expectations(parts: dict, fns: Sequence, chunk: int = 64) -> list[np.ndarray]:
    """E[f(p_mt) | data, draw] for each f in fns: arrays (sample, agent, task)."""
    sd, n, y = parts["sd_at"], parts["n"], parts["y"]
    S = sd.size
    outs = [np.empty((S, n.shape[0], n.shape[1])) for _ in fns]
    if parts["no_ab"]:
        p = expit(_eta(parts))
        return [f(p) for f in fns]
    if parts["latent"]:
        post = parts["post"].stack(sample=("chain", "draw"))
        at = post["agent_task_effect"].transpose("sample", "agent", "task").values
        p = expit(_eta(parts) + at)
        return [f(p) for f in fns]
    for s0 in range(0, S, chunk):
        sl = slice(s0, min(S, s0 + chunk))
        eta = _eta(parts, sl)
        sdb = np.broadcast_to(sd[sl, None, None], eta.shape)
        e, wt = _agq_weights(y[None], n[None], eta, sdb, parts["n_quad"])
        p = expit(e)
        for out, f in zip(outs, fns, strict=True):
            out[sl] = (wt * f(p)).sum(axis=-1)
    return outs


def _draw_nodes(e: np.ndarray, wt: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """One node per cell from the discrete law with masses ``wt``: the logit draws, shape ``e.shape[:-1]``.

    Inverse CDF with one uniform per cell: the chosen node is the first whose
    cumulative mass exceeds the uniform (so a node of zero mass is never chosen).
    """
    u = gen.random(wt.shape[:-1])
    cdf = np.cumsum(wt, axis=-1)
    idx = (cdf <= u[..., None]).sum(axis=-1)
    # the last cumulative mass can fall a rounding error short of 1
    idx = np.minimum(idx, wt.shape[-1] - 1)
    return np.take_along_axis(e, idx[..., None], axis=-1)[..., 0]


def _task_means(
    parts: dict,
    fns: Sequence,
    gen: np.random.Generator | None = None,
    chunk: int = 64,
    mask: np.ndarray | None = None,
    spec: tuple[str, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Per draw, the mean over all the dataset's tasks of each f in ``fns``: arrays (sample, agent, len(fns)).

    The first array averages ``E[f(p_mt) | data, draw]``. With ``gen`` the
    second averages ``f(p_mt)`` at one ``p_mt`` per cell drawn from its
    conditional posterior given the draw (a quadrature node picked with the
    node masses); otherwise it is None. Without a marginalised agent x task
    effect (``agent_task`` "latent" or "none") ``p_mt`` is already fixed by
    the draw, and both arrays are the same average.

    ``spec = (kind, ks)`` says what ``fns`` are (``kind`` "hat": ``p^k``, else
    ``1 - (1 - p)^k``); with it the marginal case runs in one compiled pass
    per chunk of draws (:func:`hierbench._numerics.agq_numba.task_means`: the same
    nodes, masses and uniforms, about 8x faster than the NumPy arrays).
    """
    sd, n, y = parts["sd_at"], parts["n"], parts["y"]
    S = sd.size
    if mask is None:

        def avg(v: np.ndarray) -> np.ndarray:
            return v.mean(axis=-1)

    else:
        wmask = mask.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            wmask = wmask / wmask.sum(axis=-1, keepdims=True)  # NaN for an agent with no such task

        def avg(v: np.ndarray) -> np.ndarray:
            return (v * wmask).sum(axis=-1)

    expected = np.empty((S, n.shape[0], len(fns)))
    realised = np.empty_like(expected) if gen is not None else None
    at = None
    if spec is not None:  # the compiled path's constants, the same for every chunk
        from .._numerics import task_means

        xq, wq = gauss_hermite(parts["n_quad"])
        log_wq = np.log(wq)
        wm = np.full(n.shape, 1.0 / n.shape[-1]) if mask is None else wmask
        ks_i, at_least = np.asarray(spec[1]), spec[0] != "hat"
    if parts["latent"]:
        post = parts["post"].stack(sample=("chain", "draw"))
        at = post["agent_task_effect"].transpose("sample", "agent", "task").values
    for s0 in range(0, S, chunk):
        sl = slice(s0, min(S, s0 + chunk))
        eta = _eta(parts, sl)
        if parts["no_ab"] or at is not None:
            p = expit(eta if at is None else eta + at[sl])
            for i, f in enumerate(fns):
                expected[sl, :, i] = avg(f(p))
            if realised is not None:
                realised[sl] = expected[sl]
            continue
        if spec is not None:
            unif = gen.random(eta.shape) if realised is not None else None
            e_avg, r_avg = task_means(
                y, n, eta, sd[sl], xq, log_wq, NEWTON_STEPS, wm, ks_i, at_least, unif
            )
            expected[sl] = e_avg
            if realised is not None:
                realised[sl] = r_avg
            continue
        sdb = np.broadcast_to(sd[sl, None, None], eta.shape)
        e, wt = _agq_weights(y[None], n[None], eta, sdb, parts["n_quad"])
        p = expit(e)
        p_draw = expit(_draw_nodes(e, wt, gen)) if realised is not None else None
        for i, f in enumerate(fns):
            expected[sl, :, i] = avg((wt * f(p)).sum(axis=-1))
            if realised is not None:
                realised[sl, :, i] = avg(f(p_draw))
    return expected, realised


def _unstack(
    arr: np.ndarray, post: xr.Dataset, dims: tuple[str, ...], coords: dict
) -> xr.DataArray:
    C, D = post.sizes["chain"], post.sizes["draw"]
    return xr.DataArray(
        arr.reshape(C, D, *arr.shape[1:]),
        dims=("chain", "draw", *dims),
        coords={"chain": post["chain"].values, "draw": post["draw"].values, **coords},
    )


@fill_doc
def agent_task_effects(fit: xr.DataTree) -> xr.Dataset:
    """Recover the agent x task effects and cell probabilities of a crossed fit.

    Parameters
    ----------
    fit : xarray.DataTree
        A fit of :func:`hierbench.bayes.build_crossed`.

    Returns
    -------
    xarray.Dataset
        ``agent_task_effect(chain, draw, agent, task)``: ``E[(ab)_mt | data,
        draw]``; ``p(chain, draw, agent, task)``: ``E[p_mt | data, draw]``.
        Cells that were never run get the prior (effect 0 in expectation).

    Examples
    --------
    %(crossed_fit_example)s
    >>> agent_task_effects(idata).p.sizes["task"]  # doctest: +SKIP
    8
    """
    parts = _parts(fit)
    eta = _eta(parts)
    (p,) = _cell_expectations(parts, [lambda p: p])
    if parts["latent"]:
        ab = (
            parts["post"]
            .stack(sample=("chain", "draw"))["agent_task_effect"]
            .transpose("sample", "agent", "task")
            .values
        )
    else:
        # E[ab] = E[logit p] - eta, since logit p = eta + ab at every node
        (lp,) = _cell_expectations(parts, [lambda p: np.log(p) - np.log1p(-p)])
        ab = lp - eta
    coords = {"agent": parts["agent"], "task": parts["task"]}
    post = parts["post"]
    return xr.Dataset(
        {
            "agent_task_effect": _unstack(ab, post, ("agent", "task"), coords),
            "p": _unstack(p, post, ("agent", "task"), coords),
        }
    )


def _crossed_fns(kind: str, ks: np.ndarray) -> list:
    if kind == "hat":
        return [lambda p, kk=kk: p**kk for kk in ks]
    return [lambda p, kk=kk: 1.0 - (1.0 - p) ** kk for kk in ks]


def _population_draws(parts: dict, fns: list) -> np.ndarray:
    """``E[f(p)]`` for a new task, ``logit p ~ N(mu + a_m, sqrt(sd_task^2 + sd_cluster^2 + sd_ac^2 + sd_at^2))``.

    The new task comes from a new cluster, so the agent's effect there is a fresh draw too.
    """
    u, w = population_nodes()
    s = np.sqrt(parts["sd_task2"] + parts["sd_ac2"] + parts["sd_at"] ** 2)
    e = parts["mu"][:, None, None] + parts["a"][:, :, None] + s[:, None, None] * u
    p = expit(e)
    return np.stack([(f(p) * w).sum(-1) for f in fns], axis=-1)


def _observed_draws(
    parts: dict, kind: str, ks: np.ndarray, mins: np.ndarray, gen: np.random.Generator | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(expected, draws, n_tasks): per draw, the average over each agent's eligible tasks.

    A task is eligible with at least ``mins[i]`` runs (all the dataset's tasks for
    0); one pass when every ``k`` shares its tasks.
    """
    fns = _crossed_fns(kind, ks)
    n, T = parts["n"], parts["n"].shape[1]
    groups = [np.arange(ks.size)] if np.all(mins == mins[0]) else [np.array([i]) for i in range(ks.size)]
    S, A = parts["mu"].size, n.shape[0]
    expected, draws = np.empty((S, A, ks.size)), np.empty((S, A, ks.size))
    n_tasks = np.empty((A, ks.size))
    for idx in groups:
        m = int(mins[idx[0]])
        mask = n >= m if m else None
        e, r = _task_means(parts, [fns[i] for i in idx], gen, mask=mask, spec=(kind, ks[idx]))
        expected[..., idx] = e
        draws[..., idx] = r if r is not None else e
        n_tasks[:, idx] = (mask.sum(1) if mask is not None else np.full(A, T))[:, None]
    empty = n_tasks == 0
    if empty.any():  # as the beta-binomial path: a NaN cell is said, not left silent
        warn_user(undefined_cells_message(list(parts["agent"]), ks, empty, "crossed"), UndefinedMetricWarning)
    return expected, draws, n_tasks


@fill_doc
def crossed_pass_k(
    fit: xr.DataTree,
    *,
    k: int | Sequence[int] = 1,
    kind: Literal["hat", "at"] = "hat",
    population: bool = False,
    prob: float = DEFAULT_PROB,
    realised: bool | None = None,
    rng: None | int | np.random.Generator = None,
    min_runs: int | Literal["k"] | None = None,
) -> PosteriorPassKResult:
    """Posterior pass^k (``kind="hat"``) or pass@k (``kind="at"``) per agent, crossed model.

    Given each posterior draw, a cell's ``E[f(p_mt) | data, draw]`` is a ratio
    of two Gauss-Hermite sums over its agent x task effect: exact given the
    draw, up to the quadrature error. The normalised node masses are also a
    discrete law of ``p_mt`` itself, from which ``realised=True`` draws.

    Parameters
    ----------
    fit : xarray.DataTree
        A fit of :func:`hierbench.bayes.build_crossed`.
    k : int or sequence of int
    kind : {"hat", "at"}
        pass^k = ``E[p^k]``; pass@k = ``1 - E[(1 - p)^k]``.
    population : bool
        False: the mean over the dataset's tasks (a never-run cell enters
        through its prior given the draw). True: a new task from the population.
    prob : float
        Probability mass of the equal-tailed interval.
    realised : bool, optional
        Observed tasks only; default (None) True there, False for
        ``population=True`` (where True is refused). True, **these tasks'
        own** pass^k / pass@k: each draw is the realised average
        ``mean_t f(p_mt)``, one ``p_mt`` per cell drawn from its conditional
        posterior given the draw (the node masses above). False, the
        conditional expectation given the hyperparameters: the average of
        ``E[f(p_mt) | data, draw]``, whose interval is narrower and that of a
        model quantity no rerun measures (coverage of both: :func:`hierbench.metrics.pass_hat_k`).
        The estimate is the same either way.
    %(passk_rng)s
    min_runs : int or "k", optional
        Observed tasks only: per agent, the tasks it ran at least
        ``min_runs`` times. Default (None) ``"k"``: ``k`` runs, the cells of
        the unbiased ``C(c, k) / C(n, k)``; ``n_tasks`` counts them and the
        repr shows it where it differs across ``k``. ``0``: every task of the
        dataset (a never-run cell through its prior given the draw). An agent
        with no such task is NaN. ``population=True`` takes none.

    Returns
    -------
    PosteriorPassKResult
        As :func:`hierbench.metrics.pass_hat_k`. ``estimate`` is always the
        average of the conditional expectations; ``attrs["draws_of"]`` says
        what the draws (hence the interval) describe: ``"parameter"``,
        ``"conditional expectation given the draw"`` or ``"realised task
        average"`` (always so with ``agent_task`` "latent" or "none", where
        ``p_mt`` is fixed by the draw and ``rng`` is not used).

    Examples
    --------
    %(crossed_fit_example)s
    >>> crossed_pass_k(idata, k=1, rng=1).attrs["draws_of"]  # doctest: +SKIP
    'realised task average'
    """
    ks = check_k(k)
    check_choice(kind, "kind", ["hat", "at"])
    prob = check_prob(prob)
    realised, min_runs = observed_defaults(population, realised, min_runs)
    mins = min_runs_per_k(min_runs, ks)
    observed_only(population, realised, mins, kind == "at")
    parts = _parts(fit)
    _warn_unidentified(parts, ks, population or bool((mins[ks > 1] <= parts["n"].max()).any()))
    fixed_p = parts["latent"] or parts["no_ab"]  # p_mt is a function of the draw
    if population:
        expected = vals = _population_draws(parts, _crossed_fns(kind, ks))
        n_tasks = np.full((parts["agent"].size, ks.size), np.nan)
    else:
        gen = as_rng(rng) if realised and not fixed_p else None
        expected, vals, n_tasks = _observed_draws(parts, kind, ks, mins, gen)
    attrs = pass_attrs(kind == "at", "crossed", population, int(mins.max()), min_runs, realised or fixed_p)
    coords = {"agent": parts["agent"], "k": ks}
    return pass_result(
        _unstack(expected, parts["post"], ("agent", "k"), coords), _unstack(vals, parts["post"], ("agent", "k"), coords),
        xr.DataArray(n_tasks, dims=("agent", "k"), coords=coords), attrs, prob,
    )


def _warn_unidentified(parts: dict, ks: np.ndarray, repeats: bool = True) -> None:
    """Warn when a k > 1 rests on a spread the fit leaves out (``repeats``: some k > 1 has tasks to average)."""
    rules = unidentified_components(parts["n"])
    if parts["no_task"] and "task" in rules and (ks > 1).any() and repeats:
        warn_user(
            f"this crossed fit has no task effect ({rules['task'][0]}): pass^k / pass@k for k > 1 "
            "depend on how success probabilities spread across tasks, which these data cannot tell; "
            "they are computed as if every task (of a cluster) had the same probability, which "
            "understates pass^k and overstates pass@k if tasks differ. k = 1 does not rest on it",
            UnidentifiedWarning,
        )
        return
    # where the design rule folds the interaction into the task effect (one agent), the task
    # effect is each cell's own effect: nothing is assumed away
    into = rules.get("agent:task", ("", None))[1]
    if parts["no_ab"] and (ks > 1).any() and into != "task":
        warn_user(
            "this crossed fit has no agent x task effect (agent_task='none', usually R = 1): "
            "pass^k / pass@k for k > 1 assume runs independent given (agent, task), which "
            "single-run data cannot check; with repeated runs refit with agent_task='marginal'",
            UnidentifiedWarning,
        )


def _latent_components(parts: dict) -> dict[str, np.ndarray]:
    va, vc, vat = parts["sd_agent"] ** 2, parts["sd_cluster2"], parts["sd_at"] ** 2
    vt = parts["sd_task2"] - vc  # the task effect within its cluster
    comps = {"agent": va}
    if parts["has_cluster"]:
        comps |= {"cluster": vc, "task:cluster": vt}
        comps |= {"agent:cluster": parts["sd_ac2"]} if parts["ac"] is not None else {}
        comps |= {"agent:task:cluster": vat}
    else:
        comps |= {"task": vt, "agent:task": vat}
    if parts["no_ab"]:
        comps.pop("agent:task:cluster" if parts["has_cluster"] else "agent:task")
    return comps


def _moments(loc: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``E[p]``, ``E[p^2]`` with ``logit p ~ N(loc, s^2)``: ``loc`` (S, K), ``s`` (S,), by the population rule."""
    u, w = population_nodes()
    p = _expit_sum(loc, s[:, None] * u)
    return np.einsum("sku,u->sk", p, w), np.einsum("sku,sku,u->sk", p, p, w)


def _var_of(mu: np.ndarray, v_in: np.ndarray, v_out: np.ndarray) -> np.ndarray:
    """``Var(E[p | x])``, ``logit p = mu + x + e``, ``x ~ N(0, v_in)``, ``e ~ N(0, v_out)``: (S,)."""
    u, w = population_nodes()
    g, _ = _moments(mu + np.sqrt(v_in)[:, None] * u, np.sqrt(v_out))
    return (g**2 * w).sum(-1) - (g * w).sum(-1) ** 2


#: points per draw at which :func:`_agent_means` tabulates the inner expectation (cubic Hermite
#: between them: its error grows as the spacing^4; against the direct rule 5e-9 on SWE-bench's
#: scales, 4e-6 at the widest tried, an outer SD of 3 logits over agents 24 logits apart)
GRID = 257


def _agent_means(loc: np.ndarray, v_out: np.ndarray, v_in: np.ndarray) -> np.ndarray:
    """``E[p | agent, x]`` at each population node of ``x ~ N(0, v_out)``, ``e ~ N(0, v_in)`` inside.

    ``logit p = loc + x + e``, ``loc`` (S, agents): (S, agents, nodes). Per draw the inner
    expectation ``g(m) = E[expit(m + e)]`` is one smooth function of ``m``: it is computed
    by the population rule with its derivative on :data:`GRID` points spanning every agent's
    nodes, and read between them by cubic Hermite interpolation, instead of at each of the
    agents x nodes points (25 agents: a ninth of the work). In blocks of draws.
    """
    u, _ = population_nodes()
    x = loc[:, :, None] + np.sqrt(v_out)[:, None, None] * u
    out = np.empty_like(x)
    step = max(1, 2**19 // (GRID * u.size))
    for i in range(0, x.shape[0], step):
        out[i : i + step] = _hermite_means(x[i : i + step], np.sqrt(v_in[i : i + step]))
    return out


def _expit_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``expit(a[..., None] + b[:, None, :])``, ``a`` (S, G), ``b`` (S, U): (S, G, U).

    As ``1 / (1 + exp(-a) exp(-b))``: S x (G + U) exponentials instead of S x G x U (a fifth of
    the time; equal to expit within 3e-16). Where a factor could overflow (an argument beyond
    700 in size) expit itself: with both factors finite and non-zero the product is at worst
    inf or 0, the limits expit takes.
    """
    if max(np.abs(a).max(initial=0.0), np.abs(b).max(initial=0.0)) >= 700.0:
        return expit(a[..., None] + b[:, None, :])
    d = np.exp(-a)[..., None] * np.exp(-b)[:, None, :]
    d += 1.0
    return np.reciprocal(d, out=d)


def _hermite_means(x: np.ndarray, s_in: np.ndarray) -> np.ndarray:
    """``E[expit(x + s_in z)]`` at every ``x`` (S, ...) of each draw, from a grid (:func:`_agent_means`)."""
    u, w = population_nodes()
    flat = x.reshape(x.shape[0], -1)
    lo, hi = flat.min(1), flat.max(1)
    h = np.maximum(hi - lo, 1e-9) / (GRID - 1)
    p = _expit_sum(lo[:, None] + h[:, None] * np.arange(GRID), s_in[:, None] * u)
    # einsum: one pass over p per sum, no products held (the sums of products were half this function's time)
    g, dg = np.einsum("sgu,u->sg", p, w), np.einsum("sgu,sgu,u->sg", p, 1.0 - p, w) * h[:, None]
    q = (flat - lo[:, None]) / h[:, None]
    j = np.clip(np.floor(q).astype(np.intp), 0, GRID - 2)
    t = q - j
    at = lambda a, k: np.take_along_axis(a, k, axis=1)  # noqa: E731
    t2, t3 = t * t, t * t * t
    val = (2 * t3 - 3 * t2 + 1) * at(g, j) + (t3 - 2 * t2 + t) * at(dg, j)
    val += (3 * t2 - 2 * t3) * at(g, j + 1) + (t3 - t2) * at(dg, j + 1)
    return val.reshape(x.shape)


def _node_var(g: np.ndarray) -> np.ndarray:
    """Variance over the population rule's nodes (last axis) of ``g``."""
    _, w = population_nodes()
    return (g * g * w).sum(-1) - (g * w).sum(-1) ** 2


def _population_spreads(parts: dict, one: bool) -> dict[str, np.ndarray]:
    """Random agents (or one agent, its own logit the location): the spreads of ``p`` over ``N(mu, sd_agent)``.

    Total, agent, task (its cluster included), cluster (None without clusters) and
    run-to-run; the decomposition subtracts them (:func:`_random_components`).
    """
    vt, vat, vc, vac = parts["sd_task2"], parts["sd_at"] ** 2, parts["sd_cluster2"], parts["sd_ac2"]
    loc = parts["a"][:, agents_with_runs(parts["n"])[0]] if one else 0.0
    mu = (parts["mu"] + loc)[:, None]
    va = np.zeros(mu.shape[0]) if one else parts["sd_agent"] ** 2
    ep, ep2 = _moments(mu, np.sqrt(va + vt + vac + vat))
    return {
        "total": ep2[:, 0] - ep[:, 0] ** 2,
        "agent": np.zeros(mu.shape[0]) if one else _var_of(mu, va, vt + vac + vat),
        "task": _var_of(mu, vt, va + vac + vat),
        "cluster": _var_of(mu, vc, va + (vt - vc) + vac + vat) if parts["has_cluster"] else None,
        "residual": ep[:, 0] - ep2[:, 0],
    }


def _evaluated_components(parts: dict) -> dict[str, np.ndarray]:
    """Fixed agents: the components a G-study of these agents estimates, over the task population.

    The evaluated agents are the population (``A`` of them, logits ``mu + a``); a G-study
    (ANOVA / REML) takes them as a sample all the same, so its components are, level by
    level of the task side (the cluster, then the task within it): with ``P`` the agents'
    mean variance of ``E[p | agent, the level's effects]`` and ``Q`` the variance of their
    average ``E[mean over agents of p | the level's effects]`` (cumulative over levels),
    ``agent:level = A / (A - 1) (P - Q)`` (the deviations from additivity) and ``level = Q -
    agent:level / A`` (the task means carry ``1 / A`` of the interaction, which the G-study
    removes). ``agent`` is the agents' sample variance (ddof=1) of ``E[p | agent]``,
    ``residual`` their mean ``E[p (1 - p)]``. Names as :func:`_probability_components`' (every
    agent x level part, the link's included; :func:`_probability_components` folds those the
    model has no term for).
    """
    vt, vat, vc, vac = parts["sd_task2"], parts["sd_at"] ** 2, parts["sd_cluster2"], parts["sd_ac2"]
    loc = parts["mu"][:, None] + parts["a"]
    n_agents = loc.shape[1]
    total = vt + vac + vat
    ep, ep2 = _moments(loc, np.sqrt(total))
    comps = {"agent": ep.var(axis=-1, ddof=1)}
    levels = [("cluster", vc, vac), ("task:cluster", vt, vac + vat)] if parts["has_cluster"] else [("task", vt, vat)]
    prev = (0.0, 0.0)
    for name, shared, own in levels:
        rest = np.maximum(total - shared - own, 0.0)  # what is left inside (0 up to rounding)
        p_lev = _node_var(_agent_means(loc, shared + own, rest)).mean(-1)
        h = _agent_means(loc, shared, own + rest)  # the level's agent-specific effects integrated
        q_lev = _node_var(h.mean(1)) + (p_lev - _node_var(h).mean(-1)) / n_agents
        inter = n_agents / (n_agents - 1) * ((p_lev - prev[0]) - (q_lev - prev[1]))
        comps[name] = q_lev - prev[1] - inter / n_agents
        comps["agent:" + name] = inter  # agent:cluster, agent:task:cluster, or agent:task
        prev = (p_lev, q_lev)
    comps["residual"] = (ep - ep2).mean(-1)
    return comps


def _probability_components(parts: dict, rules: dict[str, tuple[str, str | None]]) -> dict[str, np.ndarray]:
    """The G-theory decomposition of ``p_mt`` (and of one run's score) implied by the model.

    Where the design rule ``rules`` (:func:`unidentified_components`) leaves
    no spread of agents (one agent), the decomposition is that agent's: its
    ability is the location and there is no spread of agents around it (the
    agent component is left at 0 here and made undefined by :func:`_settle`).
    With fixed agents (the builder's default) the components are those a
    G-study of the evaluated agents estimates (:func:`_evaluated_components`).
    With an agent x cluster effect, ``agent:cluster = Var(E[p | agent,
    cluster]) - agent - cluster`` (the part the link adds between agents and
    clusters included, as ``agent:task`` holds the link's part between agents
    and tasks); without one, that part stays in ``agent:task:cluster``.
    """
    one = "agent" in rules
    at_name = "agent:task:cluster" if parts["has_cluster"] else "agent:task"
    if parts["opts"].get("agents") == "fixed" and not one:
        comps = _evaluated_components(parts)
        if parts["ac"] is None and parts["has_cluster"]:
            comps[at_name] = comps[at_name] + comps.pop("agent:cluster")
    else:
        comps = _random_components(parts, one)
    if parts["no_ab"]:  # no agent x task effect in the model: with one run it is the residual's
        comps["residual"] = comps["residual"] + comps.pop(at_name)
    return comps


def _random_components(parts: dict, one: bool) -> dict[str, np.ndarray]:
    """:func:`_probability_components` over a normal population of agents (or one agent's own)."""
    s = _population_spreads(parts, one)
    inter = s["total"] - s["agent"] - s["task"]
    comps = {"agent": s["agent"]}
    if parts["has_cluster"]:
        comps |= {"cluster": s["cluster"], "task:cluster": s["task"] - s["cluster"]}
    else:
        comps["task"] = s["task"]
    if parts["ac"] is not None:
        comps["agent:cluster"] = _agent_cluster_part(parts) - s["agent"] - s["cluster"]
        inter = inter - comps["agent:cluster"]
    at_name = "agent:task:cluster" if parts["has_cluster"] else "agent:task"
    return comps | {at_name: inter, "residual": s["residual"]}


def _agent_cluster_part(parts: dict) -> np.ndarray:
    """``Var(E[p | agent, cluster])`` over the normal population of agents, the clusters and their effects."""
    vc, vac = parts["sd_cluster2"], parts["sd_ac2"]
    inner = parts["sd_task2"] - vc + parts["sd_at"] ** 2  # the task within its cluster, the cell
    return _var_of(parts["mu"][:, None], parts["sd_agent"] ** 2 + vc + vac, inner)


def _settle(comps: dict[str, np.ndarray], parts: dict, rules: dict[str, tuple[str, str | None]]) -> dict[str, str]:
    """Apply ``rules`` (:func:`unidentified_components`) to ``comps`` in place; each component's note.

    An unidentified component becomes NaN and its draws join its partner's
    (which then holds both, and says so); a component the model leaves out
    (no agent x task effect) is in its partner already, which says so too.
    """
    name = {"task": "task:cluster", "agent:task": "agent:task:cluster"} if parts["has_cluster"] else {}
    notes: dict[str, list[str]] = {c: [] for c in comps}
    for generic, (why, partner) in rules.items():
        c, into = name.get(generic, generic), name.get(partner, partner)
        if into in comps:
            notes[into] += [f"holds {c} too: {why}", *notes.get(c, [])]
            if c in comps:
                comps[into] = comps[into] + comps[c]
        if c in comps:
            comps[c] = np.full_like(comps[c], np.nan)
            notes[c] = [f"undefined: {why}"]
    return {c: "; ".join(v) for c, v in notes.items()}


def crossed_variance_components(
    fit: xr.DataTree,
    *,
    scale: Literal["latent", "probability"] = "latent",
    prob: float = DEFAULT_PROB,
) -> VarianceComponentDrawsResult:
    """Variance components of a crossed fit on the logit or the probability scale.

    Components are named as :func:`hierbench.freq.variance_components` names
    them for the same facets, so the two halves align row for row: ``agent``,
    ``task``, ``agent:task`` (and ``residual``); with a cluster effect
    ``cluster``, ``task:cluster`` (the task within its cluster) and
    ``agent:task:cluster``. A component the model does not have is not shown:
    without an agent x task effect (``agent_task="none"``, one run per cell)
    the probability-scale interaction the logistic link induces goes to
    ``residual``, as the G-study of one run per cell puts it there.

    A component the design cannot estimate is undefined, never 0: NaN, said
    in ``note`` and warned once (:class:`hierbench.metrics.UndefinedMetricWarning`).
    With one run per cell the agent x task interaction cannot be told apart
    from run-to-run noise: ``residual`` holds both (and an agent x task
    component fitted anyway, ``agent_task="marginal"``, is undefined).
    With one agent there is no spread between agents (``agent``), and the
    agent x task interaction cannot be told apart from the task effect, so
    the task component holds both (its ``note`` says so; the probability
    scale is that agent's decomposition). With one agent and one run per
    task, nothing repeats within a task either: ``task`` is undefined and
    ``residual`` holds it (the rules:
    ``hierbench.metrics._crossed.unidentified_components``).

    Parameters
    ----------
    fit : xarray.DataTree
    scale : {"latent", "probability"}
        ``"latent"``: the model's variances on the logit scale (``sd_agent^2``,
        ...). ``"probability"``: the decomposition of the cell success
        probability implied by the model, comparable with the ANOVA estimates
        on binary scores. Random agents: ``agent = Var(E[p | agent])``,
        ``task = Var(E[p | task])``, ``cluster = Var(E[p | cluster])``, the
        agent x task part ``Var(p) - agent - task`` and ``residual = E[p (1 -
        p)]`` (the run-to-run binomial variance), by quadrature. Fixed agents
        (``agents="fixed"``, the default): what a G-study of the evaluated
        agents estimates, which differs from that where agents are few: the
        agent part is their sample variance of ``E[p | agent]``, the task and
        cluster parts leave out the ``1 / A`` share of the interaction their
        means over ``A`` agents carry, and the interactions are ``A / (A - 1)``
        times the agents' mean squared departure from additivity.
    prob : float
        Level of the equal-tailed intervals.

    Returns
    -------
    VarianceComponentDrawsResult
        ``estimate`` and ``ci`` over ``component``, ``draws(chain, draw,
        component)``, ``note`` over ``component`` (why a component is
        undefined, or what else it holds; empty otherwise); ``res["task"]``
        and ``res.data_vars`` answer as the Dataset of per-component draws
        this function used to return. ``attrs`` carry the fit's data
        fingerprints (``hierbench_counts_hash``, ``hierbench_data_hash``), so
        :func:`hierbench.compare.side_by_side` refuses a G-study of another log
        beside it.
    """
    check_choice(scale, "scale", ["latent", "probability"])
    prob = check_prob(prob)
    parts = _parts(fit)
    rules = unidentified_components(parts["n"])
    comps = _latent_components(parts) if scale == "latent" else _probability_components(parts, rules)
    notes = _settle(comps, parts, rules)
    names = list(comps)
    draws = _unstack(np.stack([np.asarray(comps[c]) for c in names], -1), parts["post"], ("component",), {"component": names})
    said = "; ".join(f"{c} {v}" for c, v in notes.items() if v)
    attrs = {"scale": scale, "model": "crossed", "agent_task": str(parts["opts"].get("agent_task", ""))}
    attrs |= {"note": said} if said else {}
    attrs |= fingerprints(fit)  # which log: side_by_side refuses a G-study of another beside it
    draws.attrs = dict(attrs)
    undefined = [f"{c} is {v}" for c, v in notes.items() if v.startswith("undefined")]
    if undefined:
        warn_user("crossed_variance_components: " + "; ".join(undefined) + " (NaN)", UndefinedMetricWarning)
    with warnings.catch_warnings():  # an undefined component's all-NaN draws: said above
        warnings.simplefilter("ignore", RuntimeWarning)
        est = draws.mean(("chain", "draw"))
        ci = posterior_interval(draws, prob=prob)
    note = xr.DataArray([notes[c] for c in names], dims="component", coords={"component": names})
    return VarianceComponentDrawsResult(estimate=est, ci=ci, draws=draws, note=note, attrs=attrs)


def _mean_observed_draws(fit: xr.DataTree, rng: None | int | np.random.Generator = None) -> xr.DataArray:
    """Draws (chain, draw, agent) of the average over the dataset's tasks of the cells' own ``p_mt``.

    The fit's postprocess fills the posterior variable ``mean_observed`` with
    these, passing the fit's generator: the realised task average of
    :func:`crossed_pass_k` (``k=1``, ``realised=True``), whose interval
    covers the mean of the true ``p_mt`` over these tasks, not only the
    mean of their conditional expectations.
    """
    out = crossed_pass_k(fit, k=1, realised=True, rng=rng, min_runs=0)["draws"].sel(k=1, drop=True)
    out.attrs = {
        "scale": "probability",
        "meaning": (
            "average over the dataset's tasks of each cell's success probability p_mt, "
            "p_mt drawn from its posterior (realised task average; never-run cells from their prior)"
        ),
    }
    return out
