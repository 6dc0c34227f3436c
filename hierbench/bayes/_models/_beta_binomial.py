"""Beta-binomial model: per-agent task-difficulty distribution, overdispersed counts.

For agent ``m`` and task ``t`` with ``n_mt`` runs and ``c_mt`` successes,

    p_mt ~ Beta(mu_m kappa_m, (1 - mu_m) kappa_m),   c_mt | p_mt ~ Binomial(n_mt, p_mt),

so ``c_mt ~ BetaBinomial(n_mt, mu_m kappa_m, (1 - mu_m) kappa_m)`` with the
per-task probabilities integrated out; ``mu_m`` is the agent's mean success
probability over the task population. The spread of the task probabilities
is parameterised by the intraclass correlation ``rho_m = 1 / (1 + kappa_m)``
(the correlation of two runs of one task, the rho of the design effect
``1 + (n - 1) rho`` on the frequentist side), with a proper prior on [0, 1].
With partial pooling ``logit mu_m ~ N(logit_mu_mean, logit_mu_sd)``; each
agent's ``rho_m`` has its own prior (a variance-type parameter pooled over a
handful of agents is weakly identified and mixed badly: R-hat 1.5 at
``log_kappa_sd`` on real data). Which terms are included, and how, is decided
from the data's design by the one structure helper (shown by
:func:`hierbench.bayes.describe`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from typing import Literal

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from ..._base import COUNTS_HASH
from ..._base import DATA_HASH
from ..._base import DEFAULT_PROB
from ..._base import as_rng
from ..._base import check_choice
from ..._base import check_prob
from ..._base import make_interval
from .._registry import ModelEntry
from .._registry import count_coords
from .._registry import count_data
from .._registry import count_info
from .._registry import log_binom
from .._registry import make_prior
from .._registry import merge_priors
from .._registry import normal_group
from .._registry import prepare_counts
from .._registry import register
from .._registry import register_hook
from .._structure import Structure
from .._structure import centre_choice
from .._structure import count_design
from .._structure import level_information
from .._structure import level_spread
from .._structure import no_shared_task
from .._structure import spread_for_centring
from .._structure import spread_words

__all__ = ["BETA_BINOMIAL_PRIORS", "build_beta_binomial", "task_posteriors"]

BETA_BINOMIAL_PRIORS: dict[str, dict[str, dict[str, Any]]] = {
    "partial": {
        "logit_mu_mean": {"dist": "Normal", "mu": 0.0, "sigma": 1.5},
        "logit_mu_sd": {"dist": "HalfNormal", "sigma": 1.0},
        "rho": {"dist": "Beta", "alpha": 1.0, "beta": 1.0},
    },
    "none": {
        "mu": {"dist": "Beta", "alpha": 1.0, "beta": 1.0},
        "rho": {"dist": "Beta", "alpha": 1.0, "beta": 1.0},
    },
}

#: the hooks :func:`hierbench.bayes.fit` runs for a beta-binomial model (see :data:`HOOK_KINDS`)
HOOKS = {
    "predictive": "beta_binomial.predictive",
    "log_likelihood": "beta_binomial.log_likelihood",
    "postprocess": "beta_binomial.mean_observed",
    "data_updates": "beta_binomial.data_updates",
}

#: nominal spread (logit SD) of agents' mean success rates, the unit of the
#: centring rule (see :data:`hierbench.bayes._structure.CENTRE_MIN_INFO`)
AGENT_SCALE = 1.0
#: nominal intraclass correlation used to discount repeated runs of a task
#: when measuring how informed an agent is
NOMINAL_RHO = 0.3


def _decide(counts: xr.Dataset, cells: dict, pooling: Any, centred: Any) -> tuple[Structure, str, bool]:
    st = Structure("beta_binomial", count_design(counts, cells))
    d = st.design
    m = d["n_agents"]
    pool = st.decide(
        "pooling",
        pooling,
        "partial" if m >= 2 else "none",
        f"{m} agents: "
        + ("their mean rates are pooled" if m >= 2 else "nothing to pool across one agent"),
        unidentified="partial" if m < 2 else None,
        why_unidentified="the spread across agents is not identified with one agent",
    )
    repeated = d["max_runs_per_cell"] > 1
    st.decisions["overdispersion"] = {
        "choice": "rho per agent" if repeated else "rho from its prior",
        "reason": (
            f"cells hold up to {d['max_runs_per_cell']} runs: repeated runs of a task identify rho"
            if repeated
            else "every cell has one run: a single Bernoulli run has the same law for every rho, "
            "so rho (and pass^k for k > 1, mean_observed) rest on its prior"
        ),
        "source": "auto",
    }
    is_centred = False
    if pool == "partial":
        n, y = counts["n_runs"].values, counts["n_success"].values
        info = float(np.median(level_information(n, y, axis=1, rho=NOMINAL_RHO)))
        est = level_spread(n, y, axis=1, rho=NOMINAL_RHO)
        scale = spread_for_centring(AGENT_SCALE, est)
        score = info * scale**2
        auto, need = centre_choice(score, m)
        c = centred if centred != "auto" else "auto"
        is_centred = bool(
            st.decide(
                "centred",
                c,
                auto,
                f"median agent information {info:.1f} x spread {scale:.2g}^2 = {score:.1f} "
                f"{'>=' if auto else '<'} {need:g} needed with {m} agents (spread: nominal "
                f"{AGENT_SCALE:g} logit, or the data's estimate when smaller: {spread_words(est)})",
            )
        )
        st.hint(
            "logit_mu_sd",
            f"the spread of {m} agents' mean rates is weakly identified",
            "pooling='none', or a tighter `priors['logit_mu_sd']`",
        )
        st.hint(
            "z_mu" if not is_centred else "logit_mu",
            "the centred / non-centred choice for agents does not suit this design",
            f"centred={not is_centred}",
        )
    st.hint(
        "rho",
        "overdispersion is weakly identified (few repeated runs per task)",
        "a tighter `priors['rho']` (e.g. Beta(1, 3))",
    )
    return st, pool, is_centred


def build_beta_binomial(
    data: xr.Dataset,
    *,
    priors: Mapping[str, Mapping[str, Any]] | None = None,
    pooling: Literal["auto", "partial", "none"] = "auto",
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
        partial pooling ``logit_mu_mean ~ N(0, 1.5)`` and
        ``logit_mu_sd ~ HalfNormal(1)`` (95% of prior agents' mean rates
        between 3% and 97%); no
        pooling ``mu ~ Beta(1, 1)``; both ``rho ~ Beta(1, 1)`` per agent
        (uniform on the intraclass correlation, the same prior as
        :mod:`hierbench.design`; see ``models/beta_binomial/card.md``).
    pooling : {"auto", "partial", "none"}
        Partial pooling of the agents' mean rates, or none. "auto": partial
        with two or more agents, none with one.
    centred : "auto" or bool
        Partial pooling only: centred (``logit mu_m ~ N(mean, sd)`` directly)
        or non-centred agent means. "auto" centres when the median agent's
        Fisher information about its logit mean, in units of a nominal
        agent spread of 1 logit, is at least 4 (its own data then pin it
        down; :func:`hierbench.bayes.describe` shows the choice).

    Returns
    -------
    pymc.Model
        Free variables per the pooling; deterministics ``mu(agent)``,
        ``rho(agent)``, ``kappa(agent)`` (= 1 / rho - 1), ``ability(agent)``
        (= ``mu``, probability scale) and ``mean_new_task(agent)`` (= ``mu``).
        A fit adds ``mean_observed(agent)`` after sampling: per draw, the
        average over the dataset's tasks of each task's own success
        probability, drawn from its conditional Beta posterior with the
        fit's ``rng`` (the realised task average, as the crossed model's).
        Likelihood: the potential ``y_loglik``, the cells' beta-binomial log probabilities
        summed per agent and factor (a fit still records ``observed_data``
        ``y(cell)`` and draws ``posterior_predictive`` ``y(cell)``);
        constant data ``n_runs``, ``n_success`` (agent, task),
        ``cell_n_runs(cell)``, the agents' cells with more than ``j``
        successes, failures and runs ``tally_success``, ``tally_failure``,
        ``tally_runs`` (agent, run_index) and ``log_binom_total``. The design
        and every structural choice are in ``model.hierbench["structure"]``
        (see :func:`hierbench.bayes.describe`).

    Warns
    -----
    UnidentifiedTermWarning
        ``pooling="partial"`` with one agent.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> data, _ = simulate_eval(n_agents=2, n_tasks=10, n_runs=3, rng=0)
    >>> model = build_beta_binomial(data)
    >>> sorted(model.coords)
    ['agent', 'cell', 'run_index', 'task']
    """
    check_choice(pooling, "pooling", ("auto", "partial", "none"))
    check_choice(centred, "centred", ("auto", True, False))
    counts, cells = prepare_counts(data, model="build_beta_binomial")
    st, pooling, is_centred = _decide(counts, cells, pooling, centred)
    no_shared_task(st, counts)
    pri = merge_priors(BETA_BINOMIAL_PRIORS[pooling], priors)
    coords, _ = count_coords(counts, cells)
    with pm.Model(coords=coords) as model:
        # the counts are constant data (the likelihood reads their tallies, mean_observed the grid)
        count_data(counts, cells)
        mu, rho = _agent_rates(pri, pooling, is_centred)
        pm.Deterministic("kappa", (1.0 - rho) / rho, dims="agent")
        pm.Deterministic("ability", mu, dims="agent")
        pm.Deterministic("mean_new_task", mu, dims="agent")
        # mean_observed (the realised task average) is added after sampling by the postprocess hook
        _tally_likelihood(model, mu, rho, cells, len(coords["agent"]))
    model.hierbench = _info(st, counts, cells, pri, pooling, is_centred)
    return model


def _agent_rates(pri: dict, pooling: str, is_centred: bool) -> tuple[Any, Any]:
    """``(mu, rho)`` per agent: mean rates pooled (centred or not) or not, and their own rho."""
    if pooling == "partial":
        lm_mean = make_prior("logit_mu_mean", pri["logit_mu_mean"])
        lm_sd = make_prior("logit_mu_sd", pri["logit_mu_sd"])
        logit_mu = normal_group("logit_mu", "z_mu", lm_mean, lm_sd, centred=is_centred, dims="agent")
        mu = pm.Deterministic("mu", pm.math.invlogit(logit_mu), dims="agent")
    else:
        mu = make_prior("mu", pri["mu"], dims="agent")
    rho = make_prior("rho", pri["rho"], dims="agent")
    return mu, rho


def _tally_likelihood(model: pm.Model, mu: Any, rho: Any, cells: dict, n_agents: int) -> None:
    """The likelihood as weighted sums over (agent, j).

    Each cell's probability is written as the product form of the beta-binomial
    in (mu, rho), ``C(n, y) prod_{j<y} (mu (1 - rho) + j rho) prod_{j<n-y}
    ((1 - mu)(1 - rho) + j rho) / prod_{j<n} (1 - rho + j rho)``, which stays
    exact for rho near 0 or 1, where the Beta-function form cancels huge terms
    (weighted by hundreds of cells, that cancellation noise gave 1,000
    divergences on SWE-bench). A factor ``j`` of agent ``a`` depends on
    ``(a, j)`` only, so the log likelihood summed over the cells is
    ``sum_a sum_j [S_aj log(mu_a (1 - rho_a) + j rho_a) + F_aj log(...) -
    R_aj log(...)]`` with ``S_aj`` the agent's cells with more than ``j``
    successes (``F``: failures, ``R``: runs; :func:`_tallies`): the same terms
    as cell by cell, regrouped, at a cost of agents x runs whatever the
    number of tasks. (Until stop 43 the sum went over the distinct
    (agent, runs, successes) patterns, each over every ``j``: on METR, 10
    agents x 83 tasks with up to 96 runs, the gradient took 1.5 ms.)
    """
    tallies, lb_total = _tallies(cells["cell_agent_idx"], cells["cell_n"], cells["cell_y"], n_agents)
    j_max = tallies["success"].shape[1]
    model.add_coord("run_index", np.arange(j_max))
    data = {k: pm.Data(f"tally_{k}", v, dims=("agent", "run_index")) for k, v in tallies.items()}
    lb = pm.Data("log_binom_total", lb_total)
    j = np.arange(j_max, dtype=float)[None, :]
    rho_a, mu_a = rho[:, None], mu[:, None]
    terms = (
        data["success"] * pt.log(mu_a * (1.0 - rho_a) + j * rho_a)
        + data["failure"] * pt.log((1.0 - mu_a) * (1.0 - rho_a) + j * rho_a)
        - data["runs"] * pt.log(1.0 - rho_a + j * rho_a)
    )
    pm.Potential("y_loglik", lb + terms.sum())


def _tallies(ai: np.ndarray, n: np.ndarray, y: np.ndarray, n_agents: int) -> tuple[dict[str, np.ndarray], float]:
    """Per agent and ``j``: cells with more than ``j`` successes, failures and runs; and the sum of log C(n, y).

    Each (agent, max runs) array is a reversed cumulative count:
    ``S[a, j] = #{cells of a with y > j}``.
    """
    j_max = int(n.max())

    def above(k: np.ndarray) -> np.ndarray:
        hist = np.zeros((n_agents, j_max + 1))
        np.add.at(hist, (ai, k), 1.0)
        return hist[:, ::-1].cumsum(axis=1)[:, ::-1][:, 1:]  # [a, j] = #{k > j}

    tallies = {"success": above(y), "failure": above(n - y), "runs": above(n)}
    return tallies, float(log_binom(y, n).sum())


def _info(
    st: Structure, counts: xr.Dataset, cells: dict, pri: dict, pooling: str, is_centred: bool
) -> dict[str, Any]:
    """The data the model carries for :func:`hierbench.bayes.fit` (no callables: hooks by name)."""
    return count_info(
        "beta_binomial",
        st,
        counts,
        cells,
        pri,
        HOOKS,
        options={"pooling": pooling, "centred": bool(is_centred) if pooling == "partial" else False},
        # few pooled agents: logit_mu_sd reaches towards zero and rho towards its
        # bounds in the same posterior; smaller steps are cheap at this size (SBC,
        # 4 x 30 x 5: 0.12% of draws divergent at 0.8, scattered over a third of
        # the replicates), as for Bradley-Terry with few agents
        sampler_defaults={"target_accept": 0.9} if pooling == "partial" and counts.sizes["agent"] < 8 else {},
        data={
            "cell_agent_idx": cells["cell_agent_idx"],
            "cell_n": cells["cell_n"],
            "cell_y": cells["cell_y"],
            "n_agents": int(counts.sizes["agent"]),
        },
        observed_cells={"y": cells["cell_y"]},
        # mean_observed is added by the postprocess hook, which sets its own attrs
        var_attrs={
            "ability": {"scale": "probability", "meaning": "mu: mean success probability over the task population"},
            "rho": {"scale": "probability", "meaning": "intraclass correlation of two runs of one task, 1 / (1 + kappa)"},
            "mean_new_task": {"scale": "probability", "meaning": "expected success probability on a new task"},
        },
    )


#: what the draws of ``mean_observed`` are (its ``meaning`` attr)
MEAN_OBSERVED_MEANING = (
    "average over the dataset's tasks of each task's success probability p_t, p_t drawn from its "
    "posterior Beta(mu kappa + c, (1 - mu) kappa + n - c) given the draw (realised task average; "
    "tasks the agent never ran from the prior Beta(mu kappa, (1 - mu) kappa))"
)


@register_hook("beta_binomial.mean_observed")
def _add_mean_observed(
    dt: xr.DataTree, rng: None | int | np.random.Generator = None, *, info: Any = None
) -> xr.DataTree:
    """Add ``mean_observed(agent)``: per draw, the realised average of the ``p_t`` over the dataset's tasks.

    Each task's ``p_t`` is drawn from ``Beta(mu kappa + c, (1 - mu) kappa + n - c)``
    given the draw's ``(mu, kappa)``, so the interval covers the mean of the true
    ``p_t`` over these tasks, not only the mean of their conditional expectations
    (whose interval is narrower). The tasks an agent ran are drawn as
    :func:`hierbench.metrics.pass_hat_k` draws them (``k=1``, ``realised=True``);
    the grid's tasks it never ran (``n = 0``) from the prior ``Beta(mu kappa,
    (1 - mu) kappa)``, and every task of the grid counts, as in the conditional
    expectation this variable held before (whose mean it keeps).
    """
    from ...metrics import _bb_observed

    post = dt["posterior"].to_dataset()
    if "mean_observed" in post:
        return dt
    gen = as_rng(rng)
    mu, kappa = (post[v].transpose("chain", "draw", "agent") for v in ("mu", "kappa"))
    a, b = (mu * kappa).values, ((1.0 - mu) * kappa).values
    ones = np.ones(1, dtype=np.int64)
    _, ran_mean, n_ran = _bb_observed(dt, a, b, ones, ones * 0, False, gen, post.agent.values)
    unrun = dt["constant_data"]["n_runs"].transpose("agent", "task").values == 0
    total = ran_mean[..., 0] * n_ran[:, 0]  # (chain, draw, agent): the sum over the tasks run
    for j in np.flatnonzero(unrun.any(axis=1)):  # never-run tasks: from the prior
        size = (*a.shape[:-1], int(unrun[j].sum()))
        with np.errstate(all="ignore"):
            p = gen.beta(np.maximum(a[..., j, None], 1e-300), np.maximum(b[..., j, None], 1e-300), size=size)
        total[..., j] += p.sum(axis=-1)
    attrs = {"scale": "probability", "meaning": MEAN_OBSERVED_MEANING}
    attrs |= {k: str(dt.attrs[k]) for k in (DATA_HASH, COUNTS_HASH) if dt.attrs.get(k)}
    post["mean_observed"] = xr.DataArray(total / unrun.shape[1], dims=mu.dims, coords=mu.coords, attrs=attrs)
    dt["posterior"] = xr.DataTree(post)
    return dt


@register_hook("beta_binomial.data_updates")
def _tally_updates(cells: Mapping[str, Any], *, info: Mapping[str, Any]) -> dict:
    """New tallies for a replicate of the same design (the runs per cell fix their shape)."""
    d = info["data"]
    n, y = cells["cell_n"], cells["cell_y"]
    tallies, lb_total = _tallies(d["cell_agent_idx"], n, y, d["n_agents"])
    return {
        **{f"tally_{k}": v for k, v in tallies.items()},
        "log_binom_total": np.asarray(lb_total),
        "cell_n_success": y,
    }


@register_hook("beta_binomial.log_likelihood")
def _log_likelihood(dt: xr.DataTree, *, info: Mapping[str, Any]) -> xr.Dataset:
    """Pointwise log-likelihood ``y(cell)`` per draw (for LOO), by scipy's beta-binomial."""
    from scipy.stats import betabinom

    ai, n, y = info["data"]["cell_agent_idx"], info["data"]["cell_n"], info["data"]["cell_y"]
    post = dt["posterior"].to_dataset()
    mu = post["mu"].transpose("chain", "draw", "agent").values[..., ai]
    kappa = post["kappa"].transpose("chain", "draw", "agent").values[..., ai]
    ll = betabinom.logpmf(y, n, mu * kappa, (1.0 - mu) * kappa)
    return xr.Dataset(
        {"y": (("chain", "draw", "cell"), ll)},
        coords={"chain": post.chain, "draw": post.draw, "cell": np.arange(n.size)},
    )


@register_hook("beta_binomial.predictive")
def _predictive(dt: xr.DataTree, gen: np.random.Generator, *, info: Mapping[str, Any]) -> xr.DataTree:
    """Posterior predictive ``y(cell)``, vectorised over draws: p ~ Beta, then Binomial."""
    ai, n = info["data"]["cell_agent_idx"], info["data"]["cell_n"]
    post = dt["posterior"].to_dataset()
    mu = post["mu"].transpose("chain", "draw", "agent").values[..., ai]
    kappa = post["kappa"].transpose("chain", "draw", "agent").values[..., ai]
    with np.errstate(all="ignore"):
        p = gen.beta(np.maximum(mu * kappa, 1e-300), np.maximum((1.0 - mu) * kappa, 1e-300))
    y = gen.binomial(np.broadcast_to(n, p.shape), np.nan_to_num(np.clip(p, 0.0, 1.0)))
    dt["posterior_predictive"] = xr.DataTree(
        xr.Dataset(
            {"y": (("chain", "draw", "cell"), y.astype(np.int64))},
            coords={"chain": post.chain, "draw": post.draw, "cell": np.arange(n.size)},
        )
    )
    return dt


def task_posteriors(
    fit: xr.DataTree,
    *,
    prob: float = DEFAULT_PROB,
    rng: None | int | np.random.Generator = None,
) -> xr.Dataset:
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
    rng : None, int or numpy.random.Generator
        Orders the stratified uniforms that draw one Beta value per posterior
        draw (the interval's Monte Carlo error is that of the draws; the
        means are exact).

    Returns
    -------
    xarray.Dataset
        ``alpha``, ``beta`` (chain, draw, agent, task): the conditional Beta
        parameters per draw; ``mean`` (agent, task); ``ci`` (agent, task,
        ci_bound) an equal-tailed interval from one Beta draw per posterior
        draw (attrs ``ci_prob``, ``ci_kind = "eti"``).

    Notes
    -----
    Checked on runs the fit did not see (``benchmarks/bench_task_rates.py``: each cell's
    runs split at random, 20 splits): the posterior mean predicted the held-out runs
    better than the raw share ``c / k`` in every split, on METR (Brier 0.0819 against
    0.0855 from 2 seen runs, 0.0649 against 0.0658 from 4) and on tau-bench (0.209
    against 0.290 from 1). On tau-bench's one agent it ties ``(c + 1) / (k + 2)``
    (+0.0012); on METR it beats that (0.0819 against 0.1124). The beta-binomial
    predictive interval of a cell's held-out successes covered 0.97-0.995 at 90%
    (discrete counts); the plug-in binomial at the raw share 0.48-0.89.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> from hierbench.bayes import build_beta_binomial, fit
    >>> data, _ = simulate_eval(n_agents=1, n_tasks=8, n_runs=4, rng=0)
    >>> f = fit(build_beta_binomial(data), draws=100, tune=100, chains=1, rng=1,
    ...         posterior_predictive=False)  # doctest: +SKIP
    >>> task_posteriors(f, rng=2)["ci"].attrs["ci_kind"]  # doctest: +SKIP
    'eti'
    """
    from scipy.special import betaincinv

    if fit.attrs.get("hierbench_model") != "beta_binomial":
        raise ValueError(
            f"`fit` must be a beta_binomial fit; got hierbench_model={fit.attrs.get('hierbench_model')!r}"
        )
    prob = check_prob(prob)
    gen = as_rng(rng)
    post = fit["posterior"].to_dataset()
    const = fit["constant_data"].to_dataset()
    mu, kappa = post["mu"], post["kappa"]
    n, c = const["n_runs"], const["n_success"]
    alpha = mu * kappa + c
    beta = (1 - mu) * kappa + n - c
    mean = (alpha / (alpha + beta)).mean(("chain", "draw"))
    # quantiles of the mixture: one stratified uniform per draw, in random order
    a = alpha.stack(sample=("chain", "draw")).transpose("agent", "task", "sample").values
    b = beta.stack(sample=("chain", "draw")).transpose("agent", "task", "sample").values
    u = (np.arange(a.shape[-1]) + 0.5) / a.shape[-1]
    draws = betaincinv(a, b, gen.permutation(u))
    q = np.quantile(draws, [(1 - prob) / 2, (1 + prob) / 2], axis=-1)
    ci = make_interval(
        q[0], q[1], prob=prob, kind="eti", template=mean, detail="one Beta draw per posterior draw"
    )
    return xr.Dataset({"alpha": alpha, "beta": beta, "mean": mean, "ci": ci})


register(
    ModelEntry(
        name="beta_binomial",
        builder=build_beta_binomial,
        default_priors=lambda opts: BETA_BINOMIAL_PRIORS[
            "none" if opts.get("pooling", "auto") == "none" else "partial"
        ],
        default_options={"pooling": "auto", "centred": "auto"},
        description="Per-agent beta-binomial on agent x task success counts",
        hooks=HOOKS,
    )
)
