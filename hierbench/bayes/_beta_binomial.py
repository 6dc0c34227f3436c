"""Beta-binomial model: per-agent task-difficulty distribution, overdispersed counts.

For agent ``m`` and task ``t`` with ``n_mt`` runs and ``c_mt`` successes,

    p_mt ~ Beta(mu_m kappa_m, (1 - mu_m) kappa_m),   c_mt | p_mt ~ Binomial(n_mt, p_mt),

so ``c_mt ~ BetaBinomial(n_mt, mu_m kappa_m, (1 - mu_m) kappa_m)`` with the
per-task probabilities integrated out; ``mu_m`` is the agent's mean success
probability over the task population, ``kappa_m`` the concentration (small
kappa = tasks differ a lot). With ``pooling="partial"``,
``logit mu_m ~ N(logit_mu_mean, logit_mu_sd)`` and
``log kappa_m ~ N(log_kappa_mean, log_kappa_sd)`` (non-centred); with
``pooling="none"`` each agent has its own fixed priors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from ._registry import ModelEntry, data_hash, make_prior, merge_priors, prepare_counts, register

__all__ = ["BETA_BINOMIAL_PRIORS", "build_beta_binomial", "task_posteriors"]

BETA_BINOMIAL_PRIORS: dict[str, dict[str, dict[str, Any]]] = {
    "partial": {
        "logit_mu_mean": {"dist": "Normal", "mu": 0.0, "sigma": 1.5},
        "logit_mu_sd": {"dist": "HalfNormal", "sigma": 1.0},
        "log_kappa_mean": {"dist": "Normal", "mu": 2.5, "sigma": 1.5},
        "log_kappa_sd": {"dist": "HalfNormal", "sigma": 0.5},
    },
    "none": {
        "mu": {"dist": "Beta", "alpha": 1.0, "beta": 1.0},
        "log_kappa": {"dist": "Normal", "mu": 2.5, "sigma": 1.5},
    },
}


def build_beta_binomial(
    data: xr.Dataset,
    *,
    priors: Mapping[str, Mapping[str, Any]] | None = None,
    pooling: Literal["partial", "none"] = "partial",
    centred: Literal["auto"] | bool = "auto",
) -> pm.Model:
    """Build the beta-binomial model of per-task success counts.

    Parameters
    ----------
    data : xarray.Dataset
        An eval dataset with binary scores (or its :func:`~hierbench.data.to_counts`).
    priors : mapping, optional
        Overrides of the defaults in ``BETA_BINOMIAL_PRIORS[pooling]``, as
        ``{name: {"dist": "Normal", "mu": 0.0, "sigma": 1.0}}``. Defaults:
        partial pooling ``logit_mu_mean ~ N(0, 1.5)``,
        ``logit_mu_sd ~ HalfNormal(1)``, ``log_kappa_mean ~ N(2.5, 1.5)``,
        ``log_kappa_sd ~ HalfNormal(0.5)``; no pooling ``mu ~ Beta(1, 1)``,
        ``log_kappa ~ N(2.5, 1.5)`` per agent (weak: a 95% range of kappa
        from about 0.6 to 230).
    pooling : {"partial", "none"}
        Partial pooling of ``mu`` and ``kappa`` across agents, or none.
    centred : "auto" or bool
        Partial pooling only: centred (``logit mu_m ~ N(mean, sd)`` directly)
        or non-centred per-agent parameters. "auto" centres when agents have
        at least 50 runs on average: then each agent's parameters are well
        identified by its own data and the non-centred form would correlate
        them strongly with the hyperparameters.

    Returns
    -------
    pymc.Model
        Free variables per the pooling; deterministics ``mu(agent)``,
        ``kappa(agent)``, ``ability(agent)`` (= ``mu``, probability scale),
        ``mean_new_task(agent)`` (= ``mu``: the expected success rate on a
        new task from the population) and ``mean_observed(agent)`` (the
        posterior expected mean success probability over the dataset's
        tasks, by conjugacy). Likelihood ``y(cell)`` over the observed cells;
        constant data ``n_runs``, ``n_success`` (agent, task) and
        ``cell_n_runs(cell)``.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> data, _ = simulate_eval(n_agents=2, n_tasks=10, n_runs=3, rng=0)
    >>> model = build_beta_binomial(data)
    >>> sorted(model.coords)
    ['agent', 'cell', 'task']
    """
    if pooling not in BETA_BINOMIAL_PRIORS:
        raise ValueError(f"`pooling` must be one of {sorted(BETA_BINOMIAL_PRIORS)}; got {pooling!r}")
    pri = merge_priors(BETA_BINOMIAL_PRIORS[pooling], priors)
    if centred not in ("auto", True, False):
        raise ValueError(f"`centred` must be 'auto', True or False; got {centred!r}")
    counts, cells = prepare_counts(data)
    is_centred = bool(counts["n_runs"].values.sum(axis=1).mean() >= 50) if centred == "auto" else centred
    coords = {
        "agent": counts.agent.values.tolist(),
        "task": counts.task.values.tolist(),
        "cell": np.arange(cells["cell_n"].size),
    }
    ai = cells["cell_agent_idx"]
    with pm.Model(coords=coords) as model:
        n_grid = pm.Data("n_runs", counts.n_runs.values, dims=("agent", "task"))
        y_grid = pm.Data("n_success", counts.n_success.values, dims=("agent", "task"))
        n_cell = pm.Data("cell_n_runs", cells["cell_n"], dims="cell")
        y_cell = pm.Data("cell_n_success", cells["cell_y"], dims="cell")
        if pooling == "partial":
            lm_mean = make_prior("logit_mu_mean", pri["logit_mu_mean"])
            lm_sd = make_prior("logit_mu_sd", pri["logit_mu_sd"])
            lk_mean = make_prior("log_kappa_mean", pri["log_kappa_mean"])
            lk_sd = make_prior("log_kappa_sd", pri["log_kappa_sd"])
            if is_centred:
                logit_mu = pm.Normal("logit_mu", lm_mean, lm_sd, dims="agent")
                log_kappa = pm.Normal("log_kappa", lk_mean, lk_sd, dims="agent")
            else:
                z_mu = pm.Normal("z_mu", 0.0, 1.0, dims="agent")
                z_kappa = pm.Normal("z_kappa", 0.0, 1.0, dims="agent")
                logit_mu = lm_mean + lm_sd * z_mu
                log_kappa = lk_mean + lk_sd * z_kappa
            mu = pm.Deterministic("mu", pm.math.invlogit(logit_mu), dims="agent")
            kappa = pm.Deterministic("kappa", pt.exp(log_kappa), dims="agent")
        else:
            mu = make_prior("mu", pri["mu"], dims="agent")
            log_kappa = make_prior("log_kappa", pri["log_kappa"], dims="agent")
            kappa = pm.Deterministic("kappa", pt.exp(log_kappa), dims="agent")
        pm.Deterministic("ability", mu, dims="agent")
        pm.Deterministic("mean_new_task", mu, dims="agent")
        post_mean = (mu[:, None] * kappa[:, None] + y_grid) / (kappa[:, None] + n_grid)
        pm.Deterministic("mean_observed", post_mean.mean(axis=1), dims="agent")
        pm.BetaBinomial(
            "y",
            alpha=mu[ai] * kappa[ai],
            beta=(1.0 - mu[ai]) * kappa[ai],
            n=n_cell,
            observed=y_cell,
            dims="cell",
        )
    model.hierbench = {
        "model": "beta_binomial",
        "options": {"pooling": pooling, "centred": bool(is_centred) if pooling == "partial" else False},
        "priors": pri,
        "data_hash": data_hash(counts),
        "cell_coords": {"cell_agent": cells["cell_agent"], "cell_task": cells["cell_task"]},
        "n_cells_excluded": cells["n_cells_excluded"],
        "var_attrs": {
            "ability": {"scale": "probability", "meaning": "mu: mean success probability over the task population"},
            "mean_observed": {"scale": "probability", "meaning": "posterior mean success probability over the dataset's tasks"},
            "mean_new_task": {"scale": "probability", "meaning": "expected success probability on a new task"},
        },
    }
    return model


def task_posteriors(fit: xr.DataTree, *, prob: float = 0.9) -> xr.Dataset:
    """Per-task success-probability posteriors of a beta-binomial fit, by conjugacy.

    Given ``(mu_m, kappa_m)``, ``p_mt | data ~ Beta(mu_m kappa_m + c_mt,
    (1 - mu_m) kappa_m + n_mt - c_mt)``; mixing over the posterior draws
    gives the marginal posterior of each ``p_mt``.

    Parameters
    ----------
    fit : xarray.DataTree
        A fit of :func:`build_beta_binomial`.
    prob : float
        Probability mass of the equal-tailed interval.

    Returns
    -------
    xarray.Dataset
        ``alpha``, ``beta`` (chain, draw, agent, task): the conditional Beta
        parameters per draw; ``mean`` (agent, task); ``ci`` (agent, task,
        ci_bound) an equal-tailed interval from one Beta draw per posterior
        draw (attrs ``ci_prob``, ``ci_kind``).
    """
    from scipy.special import betaincinv

    if fit.attrs.get("hierbench_model") != "beta_binomial":
        raise ValueError(
            f"`fit` must be a beta_binomial fit; got hierbench_model={fit.attrs.get('hierbench_model')!r}"
        )
    if not 0 < prob < 1:
        raise ValueError(f"`prob` must satisfy 0 < prob < 1; got {prob!r}")
    post = fit["posterior"].to_dataset()
    const = fit["constant_data"].to_dataset()
    mu, kappa = post["mu"], post["kappa"]
    n, c = const["n_runs"], const["n_success"]
    alpha = mu * kappa + c
    beta = (1 - mu) * kappa + n - c
    mean = (alpha / (alpha + beta)).mean(("chain", "draw"))
    # quantiles of the mixture by a deterministic grid of u per draw
    a = alpha.stack(sample=("chain", "draw")).transpose("agent", "task", "sample").values
    b = beta.stack(sample=("chain", "draw")).transpose("agent", "task", "sample").values
    u = (np.arange(a.shape[-1]) + 0.5) / a.shape[-1]
    u = u[np.argsort(np.random.default_rng(0).random(u.size))]  # fixed stratified permutation, not a global RNG
    draws = betaincinv(a, b, u)
    q = np.quantile(draws, [(1 - prob) / 2, (1 + prob) / 2], axis=-1)
    ci = xr.DataArray(
        np.moveaxis(q, 0, -1),
        dims=("agent", "task", "ci_bound"),
        coords={"agent": mean.agent, "task": mean.task, "ci_bound": ["lower", "upper"]},
        attrs={"ci_prob": prob, "ci_kind": "equal-tailed posterior"},
    )
    return xr.Dataset({"alpha": alpha, "beta": beta, "mean": mean, "ci": ci})


register(
    ModelEntry(
        name="beta_binomial",
        builder=build_beta_binomial,
        default_priors=lambda opts: BETA_BINOMIAL_PRIORS[opts.get("pooling", "partial")],
        default_options={"pooling": "partial", "centred": "auto"},
        sampler_settings={"sampler": "nutpie", "draws": 1000, "tune": 1000, "chains": 4},
        description="Per-agent beta-binomial on agent x task success counts",
    )
)
