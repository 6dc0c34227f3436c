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
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr
from scipy.special import betaln

from .._base import DEFAULT_PROB, as_rng, check_prob
from ._common import UndefinedMetricWarning, posterior_interval

__all__ = ["beta_moments", "pass_at_k", "pass_hat_k"]

_NO_RUNS = {
    "bradley_terry": "a Bradley-Terry fit models pairwise outcomes, not per-run successes",
}


def _check_k(k: int | Sequence[int] | None, default_max: int) -> np.ndarray:
    if k is None:
        return np.arange(1, max(int(default_max), 1) + 1)
    ks = np.atleast_1d(np.asarray(k))
    if ks.ndim != 1 or ks.size == 0 or not np.issubdtype(ks.dtype, np.integer) or (ks < 1).any():
        raise ValueError(f"`k` must be an integer >= 1 or a non-empty sequence of them; got {k!r}")
    return ks.astype(np.int64)


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


def _beta_binomial_pass(
    fit: xr.DataTree,
    ks: np.ndarray,
    population: bool,
    at: bool,
    gen: np.random.Generator | None = None,
) -> tuple[xr.DataArray, xr.DataArray | None]:
    """Conditional-expectation draws and, with ``gen``, draws of the realised task average."""
    post = fit["posterior"].to_dataset()
    for v in ("mu", "kappa"):
        if v not in post:
            raise ValueError(
                f"`fit` (beta_binomial) must have `{v}` in its posterior; found {sorted(post.data_vars)}"
            )
    mu = post["mu"].transpose("chain", "draw", "agent")
    kappa = post["kappa"].transpose("chain", "draw", "agent")
    a = (mu * kappa).values
    b = ((1.0 - mu) * kappa).values
    out = np.empty((*a.shape, ks.size))
    real = np.empty_like(out) if gen is not None else None
    if population:
        for i, k in enumerate(ks):
            m = beta_moments(a, b, int(k), complement=at)
            out[..., i] = 1.0 - m if at else m
    else:
        if "constant_data" not in fit.children:
            raise ValueError("`fit` has no `constant_data` group with `n_runs` and `n_success`")
        const = fit["constant_data"].to_dataset()
        n = const["n_runs"].transpose("agent", "task").values.astype(np.float64)
        c = const["n_success"].transpose("agent", "task").values.astype(np.float64)
        ran = n > 0
        n_tasks = ran.sum(axis=1)
        empty = n_tasks == 0
        if empty.any():
            warnings.warn(
                f"agents {[str(x) for x in post.agent.values[empty]]} ran no task: pass^k/pass@k over "
                "the observed tasks is undefined for them (NaN)",
                UndefinedMetricWarning,
                stacklevel=3,
            )
        for j in range(a.shape[-1]):  # per agent keeps memory at (chain, draw, task)
            alpha = a[..., j, None] + c[j]
            beta = b[..., j, None] + n[j] - c[j]
            p = gen.beta(alpha[..., ran[j]], beta[..., ran[j]]) if real is not None else None
            for i, k in enumerate(ks):
                m = beta_moments(alpha, beta, int(k), complement=at)
                m = 1.0 - m if at else m
                out[..., j, i] = m[..., ran[j]].mean(axis=-1) if n_tasks[j] else np.nan
                if real is not None:
                    r = 1.0 - (1.0 - p) ** int(k) if at else p ** int(k)
                    real[..., j, i] = r.mean(axis=-1) if n_tasks[j] else np.nan
    dims = ("chain", "draw", "agent", "k")
    coords = {"chain": post.chain, "draw": post.draw, "agent": post.agent, "k": ks}
    expected = xr.DataArray(out, dims=dims, coords=coords)
    return expected, (xr.DataArray(real, dims=dims, coords=coords) if real is not None else None)


def _pass(
    fit: xr.DataTree,
    k: int | Sequence[int] | None,
    population: bool,
    prob: float,
    at: bool,
    realised: bool,
    rng: None | int | np.random.Generator,
) -> xr.Dataset:
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
    default_max = 1
    if "constant_data" in fit.children and "n_runs" in fit["constant_data"]:
        default_max = int(fit["constant_data"]["n_runs"].max())
    ks = _check_k(k, default_max)
    name = "pass@k" if at else "pass^k"
    if realised and population:
        raise ValueError(
            "`realised=True` applies to the observed tasks (population=False); the population "
            "pass^k is a parameter, its draws are already its posterior"
        )
    if model == "crossed":
        try:
            from ._crossed import crossed_pass_k
        except ImportError as err:  # pragma: no cover - depends on the other module landing
            raise ImportError(
                "pass^k / pass@k of a crossed fit need hierbench.metrics._crossed (crossed_pass_k), "
                f"which could not be imported: {err}"
            ) from err
        res = crossed_pass_k(
            fit,
            k=ks.tolist(),
            kind="at" if at else "hat",
            population=population,
            prob=prob,
            realised=realised,
            rng=rng,
        )
        res.attrs.update(
            quantity=name, model=model, tasks="population" if population else "observed"
        )
        return _house_names(res, prob)
    if model != "beta_binomial":
        raise ValueError(
            f"pass^k / pass@k are implemented for hierbench_model 'beta_binomial' and 'crossed'; "
            f"`fit` has hierbench_model={model!r}"
        )
    expected, real = _beta_binomial_pass(fit, ks, population, at, as_rng(rng) if realised else None)
    attrs: dict[str, Any] = {
        "quantity": name,
        "model": model,
        "tasks": "population" if population else "observed",
        "scale": "probability",
        "draws_of": (
            "parameter"
            if population
            else ("realised task average" if realised else "conditional expectation given the draw")
        ),
    }
    draws = real if real is not None else expected
    draws.attrs = dict(attrs)
    return _house_names(
        xr.Dataset(
            {
                "draws": draws,
                # the exact (Rao-Blackwellised) posterior mean in every case
                "mean": expected.mean(("chain", "draw")),
                "ci": posterior_interval(draws, prob=prob),
            },
            attrs=attrs,
        ),
        prob,
    )


def _house_names(res: xr.Dataset, prob: float) -> xr.Dataset:
    """The house result convention: point value ``estimate``, interval ``ci`` (eti, ``ci_detail``).

    ``mean`` stays beside ``estimate`` as a deprecated alias (the same values).
    """
    out = res.copy()
    if "mean" in out and "estimate" not in out:
        est = out["mean"].copy()
        est.attrs = {**dict(est.attrs), "point": "posterior mean"}
        out["estimate"] = est
        out["mean"].attrs = {**dict(out["mean"].attrs), "deprecated": "alias of `estimate`"}
    ci = out["ci"] if "ci" in out else None
    if ci is not None and ci.attrs.get("ci_kind") not in ("eti", "hdi"):
        ci.attrs = {
            "ci_prob": float(ci.attrs.get("ci_prob", prob)),
            "ci_kind": "eti",
            "ci_detail": str(ci.attrs.get("ci_kind", "equal-tailed posterior interval")),
        }
    order = ["estimate", "ci", "draws", "mean"]
    out = out[[v for v in order if v in out] + [v for v in out.data_vars if v not in order]]
    return out


def pass_hat_k(
    fit: xr.DataTree,
    k: int | Sequence[int] | None = None,
    *,
    population: bool = False,
    prob: float = DEFAULT_PROB,
    realised: bool = False,
    rng: None | int | np.random.Generator = None,
) -> xr.Dataset:
    """Posterior pass^k = P(all k independent attempts succeed), per agent.

    Parameters
    ----------
    fit : xarray.DataTree
        A fit of the beta-binomial or crossed model (``hierbench.bayes.fit``,
        or one loaded from disk: no PyMC is needed).
    k : int or sequence of int, optional
        Numbers of attempts; default ``1 .. max(n_runs)``.
    population : bool
        False: the mean over the dataset's tasks, each task's ``E[p_t^k |
        data, draw]`` (the Bayesian counterpart of the unbiased estimator
        ``C(c, k) / C(n, k)`` averaged over tasks). The beta-binomial
        averages over the tasks each agent ran; the crossed model over all
        the dataset's tasks, a never-run cell entering through its prior
        given the draw. True: a new task drawn from the task population.
    prob : float
        Probability mass of the equal-tailed interval (default 0.95, the one
        level of every interval in hierbench).
    realised : bool
        Observed tasks only (``population=False``). False: each draw is the
        average of the conditional expectations given the draw's
        hyperparameters (deterministic given the draw). True: each draw is
        the realised average ``mean_t p_t^k`` with every ``p_t`` drawn from
        its conditional posterior given the draw (beta-binomial: its
        conditional Beta, exactly; crossed: one adaptive Gauss-Hermite node
        picked with the node masses, which matches the conditional mean and
        variance to quadrature accuracy, see
        :func:`hierbench.metrics._crossed.crossed_pass_k`), so the interval
        is that of the benchmark's own tasks (wider; see Notes). A crossed
        fit with ``agent_task`` "latent" or "none" fixes ``p_t`` by the draw,
        so its draws are the realised average either way.
    rng : None, int or numpy.random.Generator
        Randomness for ``realised=True``.

    Returns
    -------
    xarray.Dataset
        ``estimate(agent, k)`` (always the posterior mean of the conditional
        expectations: exact for the beta-binomial, to quadrature accuracy
        for the crossed model), ``ci(agent, k, ci_bound)`` (attrs
        ``ci_prob``, ``ci_kind = "eti"``, ``ci_detail``) and
        ``draws(chain, draw, agent, k)``; ``mean`` is a deprecated alias of
        ``estimate``. ``attrs["draws_of"]`` says what the draws are. This is
        the house convention, so :func:`hierbench.compare.side_by_side` lines
        it up with the frequentist results.

    Notes
    -----
    By the law of total variance the posterior variance of the realised
    average is the variance of the conditional expectations plus the mean
    conditional variance ``sum_t Var(p_t^k | draw) / T^2``. Both are of
    order 1/T, so the default (conditional-expectation) interval can be
    clearly too narrow for the observed-task average; use ``realised=True``
    for its interval. The population quantity has no such gap.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> post = xr.Dataset({"mu": (("chain", "draw", "agent"), np.full((1, 2, 1), 0.5)),
    ...                    "kappa": (("chain", "draw", "agent"), np.full((1, 2, 1), 2.0))},
    ...                   coords={"agent": ["a"]})
    >>> dt = xr.DataTree.from_dict({"posterior": post})
    >>> dt.attrs["hierbench_model"] = "beta_binomial"
    >>> float(pass_hat_k(dt, k=2, population=True)["estimate"].squeeze())  # Beta(1, 1): E[p^2] = 1/3
    0.3333333333333333
    """
    return _pass(fit, k, population, prob, at=False, realised=realised, rng=rng)


def pass_at_k(
    fit: xr.DataTree,
    k: int | Sequence[int] | None = None,
    *,
    population: bool = False,
    prob: float = DEFAULT_PROB,
    realised: bool = False,
    rng: None | int | np.random.Generator = None,
) -> xr.Dataset:
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
    >>> float(pass_at_k(dt, k=2, population=True)["estimate"].squeeze())  # 1 - 1/3
    0.6666666666666667
    """
    return _pass(fit, k, population, prob, at=True, realised=realised, rng=rng)
