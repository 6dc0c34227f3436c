"""Posterior-predictive pass^k and pass@k from a fitted model (pure xarray, no PyMC).

pass^k = P(all k independent attempts succeed) = E[p^k] and pass@k = P(at
least one of k succeeds) = 1 - E[(1 - p)^k], where ``p`` is a task's success
probability. For the beta-binomial model both are exact Beta moments per
posterior draw, with ``a = mu kappa`` and ``b = (1 - mu) kappa``:

* a task the agent ran (``c`` successes in ``n`` runs): ``p | c, n ~ Beta(a + c,
  b + n - c)``, so ``E[p^k] = B(a + c + k, b + n - c) / B(a + c, b + n - c)`` and
  ``E[(1 - p)^k] = B(a + c, b + n - c + k) / B(a + c, b + n - c)``;
* a new task from the population: ``p ~ Beta(a, b)``, ``E[p^k] = B(a + k, b) /
  B(a, b)``.

The crossed model's versions live in :mod:`hierbench.metrics._crossed`.

Which interval, over the observed tasks. By default (``realised=True``) each
posterior draw is the realised average ``mean_t p_t^k`` with every ``p_t``
drawn from its conditional posterior, so the interval is for these tasks'
own pass^k; ``realised=False`` averages the conditional expectations given
the draw, whose interval is that of a model quantity no rerun measures.
Replayed on METR (7 agents; each replicate 3 runs per task drawn from the 8
or more recorded, 60 replicates per agent, the beta-binomial at its
defaults), the 90% interval covered the tasks' pass^k over all their
recorded runs 0.77 (k = 2) and 0.82 (k = 3) of the time with False, 0.945
and 0.948 with True (Monte Carlo SE about 0.02 and 0.011); the point
estimate is the same either way and its error matched the unbiased
estimator's (1.36 vs 1.35 points at k = 2, 1.60 vs 1.78 at k = 3). On
simulated logs with known per-task rates (40 agents x 50 tasks x 4 runs,
Beta and tau-bench-like populations, 3 seeds each) the 95% interval covered
these tasks' pass^1 for 7-20 of 40 agents with False and 36-40 of 40 with
True.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import xarray as xr
from scipy.special import betaln

from .._base import DEFAULT_PROB
from .._base import UnidentifiedWarning
from .._base import as_rng
from .._base import check_prob
from .._base import warn_user
from .._docs import fill_doc
from ._common import UndefinedMetricWarning
from ._common import check_k
from ._common import fingerprints
from ._common import min_runs_per_k
from ._common import observed_defaults
from ._common import observed_only
from ._common import pass_attrs
from ._common import pass_result
from ._common import undefined_cells_message
from ._results import PosteriorPassKResult

__all__ = ["beta_moments", "pass_at_k", "pass_hat_k"]

_NO_RUNS = {
    "bradley_terry": "a Bradley-Terry fit models pairwise outcomes, not per-run successes",
}


def beta_moments(
    alpha: np.ndarray | float, beta: np.ndarray | float, k: int, *, complement: bool = False
) -> np.ndarray:
    """Exact ``E[p^k]`` (or ``E[(1 - p)^k]`` with ``complement``) for ``p ~ Beta(alpha, beta)``.

    Computed as ``exp(betaln(alpha + k, beta) - betaln(alpha, beta))``, stable
    for large parameters.

    Examples
    --------
    >>> round(float(beta_moments(2.0, 3.0, 1)), 12)   # the mean 2 / 5
    0.4
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    if complement:
        return np.exp(betaln(alpha, beta + k) - betaln(alpha, beta))
    return np.exp(betaln(alpha + k, beta) - betaln(alpha, beta))


def _bb_params(fit: xr.DataTree) -> tuple[xr.Dataset, np.ndarray, np.ndarray]:
    post = fit["posterior"].to_dataset()
    for v in ("mu", "kappa"):
        if v not in post:
            raise ValueError(
                f"`fit` (beta_binomial) must have `{v}` in its posterior; found {sorted(post.data_vars)}"
            )
    mu = post["mu"].transpose("chain", "draw", "agent")
    kappa = post["kappa"].transpose("chain", "draw", "agent")
    return post, (mu * kappa).values, ((1.0 - mu) * kappa).values


def _bb_observed(
    fit: xr.DataTree, a: np.ndarray, b: np.ndarray, ks: np.ndarray, mins: np.ndarray, at: bool,
    gen: np.random.Generator | None, agents: np.ndarray,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Per draw, the average of ``E[p^k | c, n, draw]`` over each agent's tasks.

    Tasks with ``n >= max(min, 1)`` runs count; with ``gen``, also the average of
    ``p^k`` drawn from its conditional Beta.
    """
    if "constant_data" not in fit.children:
        raise ValueError(
            "`fit` has no `constant_data` group with `n_runs` and `n_success` (the per-task counts these "
            "tasks' pass^k averages over): hierbench.bayes.fit keeps it; a fit of fit_replicates keeps only "
            "its posterior, so give it its replicate's counts as fit['constant_data'] = "
            "xr.DataTree(hierbench.data.to_counts(replicate)), or pass population=True"
        )
    const = fit["constant_data"].to_dataset()
    n = const["n_runs"].transpose("agent", "task").values.astype(np.float64)
    c = const["n_success"].transpose("agent", "task").values.astype(np.float64)
    out = np.empty((*a.shape, ks.size))
    real = np.empty_like(out) if gen is not None else None
    n_tasks = np.stack([(n >= max(int(m), 1)).sum(1) for m in mins], -1)  # (agent, k)
    _warn_undefined(agents, ks, n, n_tasks)
    ran = n > 0
    for j in range(a.shape[-1]):  # per agent keeps memory at (chain, draw, task)
        alpha = a[..., j, None] + c[j]
        beta = b[..., j, None] + n[j] - c[j]
        p = gen.beta(alpha[..., ran[j]], beta[..., ran[j]]) if real is not None else None
        for i, k in enumerate(ks):
            use = n[j][ran[j]] >= max(int(mins[i]), 1)
            m = beta_moments(alpha, beta, int(k), complement=at)
            m = (1.0 - m if at else m)[..., ran[j]]
            out[..., j, i] = m[..., use].mean(axis=-1) if use.any() else np.nan
            if real is not None:
                r = 1.0 - (1.0 - p) ** int(k) if at else p ** int(k)
                real[..., j, i] = r[..., use].mean(axis=-1) if use.any() else np.nan
    return out, real, n_tasks


def _warn_undefined(agents: np.ndarray, ks: np.ndarray, n: np.ndarray, n_tasks: np.ndarray) -> None:
    """Say which (agent, k) cells are NaN and why: an agent that ran nothing, or no task run min_runs times.

    The second in the crossed model's words (``undefined_cells_message``), naming the cells;
    ``min_runs=0`` is no remedy for an agent that ran no task at all, so that is said apart.
    """
    none = ~(n > 0).any(1)
    empty = (n_tasks == 0) & ~none[:, None]
    said = []
    if none.any():
        said.append(
            f"agents {[str(x) for x in agents[none]]} ran no task: pass^k/pass@k over their observed "
            "tasks is undefined (NaN) at every k, whatever min_runs; population=True gives a new task's"
        )
    if empty.any():
        said.append(undefined_cells_message([str(x) for x in agents], ks, empty, "beta_binomial"))
    if said:
        warn_user("; ".join(said), UndefinedMetricWarning)


def _beta_binomial_pass(
    fit: xr.DataTree, ks: np.ndarray, mins: np.ndarray, population: bool, at: bool,
    gen: np.random.Generator | None,
) -> tuple[xr.DataArray, xr.DataArray | None, xr.DataArray]:
    """Conditional-expectation draws, with ``gen`` draws of the realised task average, and n_tasks."""
    post, a, b = _bb_params(fit)
    agents = post.agent.values
    if population:
        out = np.stack([beta_moments(a, b, int(k), complement=at) for k in ks], -1)
        out = 1.0 - out if at else out
        real, n_tasks = None, np.full((agents.size, ks.size), np.nan)
    else:
        out, real, n_tasks = _bb_observed(fit, a, b, ks, mins, at, gen, agents)
    dims = ("chain", "draw", "agent", "k")
    coords = {"chain": post.chain, "draw": post.draw, "agent": post.agent, "k": ks}
    expected = xr.DataArray(out, dims=dims, coords=coords)
    realised = xr.DataArray(real, dims=dims, coords=coords) if real is not None else None
    n_da = xr.DataArray(n_tasks.astype(float), dims=("agent", "k"), coords={"agent": post.agent, "k": ks})
    return expected, realised, n_da


def _check_request(fit, prob) -> tuple[float, str]:
    if not isinstance(fit, xr.DataTree):
        raise TypeError(
            f"`fit` must be an xarray.DataTree from hierbench.bayes.fit; got {type(fit).__name__}"
        )
    prob = check_prob(prob)
    model = fit.attrs.get("hierbench_model")
    if model in _NO_RUNS:
        raise ValueError(
            f"pass^k / pass@k are not defined for hierbench_model={model!r}: {_NO_RUNS[model]}"
        )
    if model not in ("beta_binomial", "crossed"):
        raise ValueError(
            f"pass^k / pass@k are implemented for hierbench_model 'beta_binomial' and 'crossed'; "
            f"`fit` has hierbench_model={model!r}"
        )
    return prob, model


def _warn_rho_from_prior(fit: xr.DataTree, ks: np.ndarray, at: bool) -> None:
    """Warn when a k > 1 of the beta-binomial rests on rho's prior: agents with one run per task.

    A single Bernoulli run has the same law for every rho (the correlation of two runs of a
    task), so an agent whose cells hold at most one run leaves rho, and with it every k > 1,
    where its prior put it (the builder's ``describe`` says the same).
    """
    if not (ks > 1).any() or "constant_data" not in fit.children or "n_runs" not in fit["constant_data"]:
        return
    n = fit["constant_data"]["n_runs"].transpose("agent", "task")
    single = np.asarray(n.max("task").values) <= 1
    if single.any():
        names = [str(a) for a in n["agent"].values[single]]
        shown = names[:5] + ([f"and {len(names) - 5} more"] if len(names) > 5 else [])
        warn_user(
            f"pass{'@' if at else '^'}k for k > 1 of {len(names)} of {single.size} agents ({', '.join(shown)}) "
            "rests on the prior of rho: every task ran once for them, and one run has the same law "
            "for every rho. The data fix the success rate; where pass^k / pass@k lie between their "
            "values at rho = 0 and rho = 1 is the prior's choice, and so is much of the interval. "
            "k = 1 does not rest on it; run some tasks at least twice to measure rho",
            UnidentifiedWarning,
        )


def _pass(
    fit: xr.DataTree,
    k: int | Sequence[int] | None,
    population: bool,
    prob: float,
    at: bool,
    realised: bool | None,
    rng: None | int | np.random.Generator,
    min_runs: int | Literal["k"] | None = None,
) -> PosteriorPassKResult:
    prob, model = _check_request(fit, prob)
    realised, min_runs = observed_defaults(population, realised, min_runs)
    default_max = 1
    if "constant_data" in fit.children and "n_runs" in fit["constant_data"]:
        default_max = int(fit["constant_data"]["n_runs"].max())
    ks = check_k(k) if k is not None else np.arange(1, max(default_max, 1) + 1)
    mins = min_runs_per_k(min_runs, ks)
    observed_only(population, realised, mins, at)
    if model == "crossed":
        from ._crossed import crossed_pass_k

        res = crossed_pass_k(
            fit, k=ks.tolist(), kind="at" if at else "hat", population=population, prob=prob,
            realised=realised, rng=rng, min_runs=min_runs,
        )
    else:
        _warn_rho_from_prior(fit, ks, at)
        gen = as_rng(rng) if realised else None
        expected, real, n_tasks = _beta_binomial_pass(fit, ks, mins, population, at, gen)
        attrs = pass_attrs(at, "beta_binomial", population, int(mins.max()) if mins.size else 0, min_runs, realised)
        res = pass_result(expected, real if real is not None else expected, n_tasks, attrs, prob)
    res.estimate.attrs |= fingerprints(fit)  # which log: for side_by_side beside a frequentist pass^k
    if fit.attrs.get("approximate"):
        res.ci.attrs["ci_detail"] += f" (draws of an approximate posterior: {fit.attrs.get('method', '?')}, not NUTS)"
    return res


@fill_doc
def pass_hat_k(
    fit: xr.DataTree,
    k: int | Sequence[int] | None = None,
    *,
    population: bool = False,
    prob: float = DEFAULT_PROB,
    realised: bool | None = None,
    rng: None | int | np.random.Generator = None,
    min_runs: int | Literal["k"] | None = None,
) -> PosteriorPassKResult:
    """Posterior pass^k = P(all k independent attempts succeed), per agent.

    Parameters
    ----------
    fit : xarray.DataTree
        A fit of the beta-binomial or crossed model (``hierbench.bayes.fit``,
        or one loaded from disk: no PyMC is needed).
    k : int or sequence of int, optional
        Numbers of attempts; default ``1 .. max(n_runs)``.
    population : bool
        Which tasks the interval is for. False, **these tasks**: the mean
        of ``p_t^k`` over the tasks each agent ran (at least ``k`` times by
        default: ``min_runs``); ``attrs["tasks"] == "observed"``. True, **a
        new draw of tasks from the same population**: ``E[p^k]`` for a new
        task; ``attrs["tasks"] == "population"``. The interval of
        :func:`hierbench.freq.pass_hat_k` (tasks as a sample) is for a new
        draw of tasks too: put it beside ``population=True``, its like;
        :func:`hierbench.compare.side_by_side` refuses it beside
        ``population=False``, whose interval leaves out the spread of a new
        draw of tasks and is narrower.
    prob : float
        Probability mass of the equal-tailed interval.
    realised : bool, optional
        Observed tasks only; default (None) True there, False for
        ``population=True`` (where True is refused). True, **these tasks'
        own pass^k**: each draw is the realised average ``mean_t p_t^k``,
        every ``p_t`` drawn from its conditional posterior (beta-binomial:
        exactly; crossed: a quadrature node picked with the node masses), the
        pass^k these tasks would show over many more runs. False, **the
        conditional expectation given the hyperparameters**: each draw
        averages ``E[p_t^k | data, draw]``; its interval leaves out
        ``sum_t Var(p_t^k | draw) / T^2`` (the law of total variance) and is
        that of a model quantity no rerun measures (on METR 0.008 wide
        against 0.037 for an agent's pass^1). The estimate is the same
        either way. Replayed on METR, 90% intervals covered 0.945 (True) against 0.77 (False) at k = 2
        (``benchmarks/bench_passk_realised.py``).
    %(passk_rng)s
    min_runs : int or "k", optional
        Observed tasks only: per agent, the tasks it ran at least
        ``min_runs`` times. Default (None) ``"k"``: each ``k`` over the tasks
        run at least ``k`` times, those the unbiased estimator averages (its
        interval is for a new draw of tasks); ``n_tasks`` counts them, and
        the repr shows it where it differs across ``k``; an agent with none
        is NaN there, with a warning. ``0``: every task the agent ran (the
        crossed model: every task of the dataset, a never-run cell through
        its prior), the model extrapolating to ``k`` the tasks run fewer
        times. ``population=True`` takes none (a new task has no runs).

    Returns
    -------
    PosteriorPassKResult
        ``estimate(agent, k)`` (the posterior mean of the conditional
        expectations), ``ci(agent, k, ci_bound)`` (``eti``),
        ``draws(chain, draw, agent, k)``, ``n_tasks(agent, k)`` and
        ``attrs`` (``quantity``, ``tasks``, ``over``, ``draws_of``,
        ``interval_of``: what the interval is for, as the repr's header
        says); ``res["draws"]`` and Dataset methods answer as the Dataset
        this function used to return.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> post = xr.Dataset({"mu": (("chain", "draw", "agent"), np.full((1, 2, 1), 0.5)),
    ...                    "kappa": (("chain", "draw", "agent"), np.full((1, 2, 1), 2.0))},
    ...                   coords={"agent": ["a"]})
    >>> dt = xr.DataTree.from_dict({"posterior": post})
    >>> dt.attrs["hierbench_model"] = "beta_binomial"
    >>> float(pass_hat_k(dt, k=2, population=True).estimate.squeeze())  # Beta(1, 1): E[p^2] = 1/3
    0.3333333333333333
    >>> dt["constant_data"] = xr.DataTree(xr.Dataset(   # 2 of 2 runs, 1 of 1
    ...     {"n_runs": (("agent", "task"), [[2, 1]]), "n_success": (("agent", "task"), [[2, 1]])}))
    >>> res = pass_hat_k(dt, k=[1, 2], rng=0)   # these tasks' own pass^k, tasks run >= k times
    >>> res.n_tasks.values.tolist(), res.attrs["draws_of"]
    ([[2.0, 1.0]], 'realised task average')
    >>> round(float(res.estimate.sel(k=2).squeeze()), 4)   # task 1: p ~ Beta(3, 1), E[p^2] = 3/5
    0.6
    """
    return _pass(fit, k, population, prob, False, realised, rng, min_runs)


def pass_at_k(
    fit: xr.DataTree,
    k: int | Sequence[int] | None = None,
    *,
    population: bool = False,
    prob: float = DEFAULT_PROB,
    realised: bool | None = None,
    rng: None | int | np.random.Generator = None,
    min_runs: int | Literal["k"] | None = None,
) -> PosteriorPassKResult:
    """Posterior pass@k = P(at least one of k independent attempts succeeds), per agent.

    Parameters and returns as :func:`pass_hat_k`, with ``1 - E[(1 - p)^k]``
    in place of ``E[p^k]``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> post = xr.Dataset({"mu": (("chain", "draw", "agent"), np.full((1, 2, 1), 0.5)),
    ...                    "kappa": (("chain", "draw", "agent"), np.full((1, 2, 1), 2.0))},
    ...                   coords={"agent": ["a"]})
    >>> dt = xr.DataTree.from_dict({"posterior": post})
    >>> dt.attrs["hierbench_model"] = "beta_binomial"
    >>> float(pass_at_k(dt, k=2, population=True).estimate.squeeze())  # 1 - 1/3
    0.6666666666666667
    """
    return _pass(fit, k, population, prob, True, realised, rng, min_runs)
