"""The crossed Bayesian model's variance components in a G-study's design, on the probability scale.

An adapter: it reads a crossed-model fit (``hierbench_model == "crossed"``;
pure xarray, no PyMC) and decomposes the implied cell success probability
``p = expit(mu + a + c + ac + b + ab)`` (agent, cluster, agent:cluster, task,
agent:task latent normal effects) into the components of a frequentist design, so that
:func:`hierbench.compare.side_by_side` lines the two up component by
component. With ``V(S) = Var(E[p | effects of the facets in S])``,
``V(S) = sum of the components of the effects inside S`` (the G-theory
decomposition of a linear model), so the components follow by Moebius
inversion over the design's effects; the residual is ``E[p (1 - p)]`` (the
run-to-run binomial variance). Each ``V(S)`` is a two-level Gauss-Hermite
integral: ``E[p | S]`` is a logistic-normal mean given the latent sum of the
effects in ``S``. Random agents are a normal population with variance
``sd_agent^2``. Fixed agents (``agents="fixed"``, the builder's default) are
the evaluated agents: their components are those a G-study of these agents
estimates, by the rule :func:`hierbench.metrics.crossed_variance_components`
follows (one owner: ``hierbench.metrics._crossed._evaluated_components``, by
the population rule rather than ``n_quad`` Gauss-Hermite nodes). A fit of one
agent matches the G-study of that agent (the G-study drops a facet of one
level): the decomposition is the agent's own, its agent x task effect inside
the task's.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr
from scipy.special import expit

from .._base import COUNTS_HASH
from .._base import DATA_HASH
from .._base import DEFAULT_PROB
from .._base import HierbenchError
from .._base import check_prob
from .._base import fit_record
from .._base import make_interval
from .._numerics import gauss_hermite
from ._common import fingerprints
from ._crossed import agents_with_runs
from ._crossed import unidentified_by_design
from ._crossed import unidentified_components

__all__ = ["bayes_d_study", "bayes_variance_components"]


def _latent(fit: xr.DataTree) -> dict[str, np.ndarray]:
    if fit.attrs.get("hierbench_model") != "crossed":
        raise ValueError(
            "`fit` must be a crossed-model fit (attrs['hierbench_model'] == 'crossed'); got "
            f"{fit.attrs.get('hierbench_model')!r}"
        )
    post = fit["posterior"].to_dataset().stack(sample=("chain", "draw"))
    n = post.sizes["sample"]
    zero = np.zeros(n)
    out = {
        "mu": post["mu"].values,
        "a": post["sd_agent"].values ** 2 if "sd_agent" in post else zero,
        # no sd_task: a fit of one agent with one run per task leaves the task effect out
        "t": post["sd_task"].values ** 2 if "sd_task" in post else zero,
        "c": post["sd_cluster"].values ** 2 if "sd_cluster" in post else zero,
        "at": post["sd_agent_task"].values ** 2 if "sd_agent_task" in post else zero,
        "ac": post["sd_agent_cluster"].values ** 2 if "sd_agent_cluster" in post else zero,
    }
    rules, agents = _design_rules(fit, post)
    out["one_agent"] = np.array("agent" in rules)
    out["fixed_loc"] = None
    if not out["one_agent"] and fit_record(fit, "hierbench_spec").get("options", {}).get("agents") == "fixed":
        # the evaluated agents are the population: their logits, no normal spread of agents
        out["fixed_loc"] = out["mu"][:, None] + post["agent_effect"].transpose("sample", "agent").values
        out["a"] = zero
    if out["one_agent"]:
        # no spread of agents: that agent's decomposition, its ability the location
        out["mu"] = out["mu"] + post["agent_effect"].isel(agent=int(agents[0])).values
        out["a"] = zero
    if rules.get("agent:task", ("", None))[1] == "task":
        # the interaction is identified only with the task effect: part of the task's
        out["t"], out["at"] = out["t"] + out["at"], zero
    out["has_cluster"] = np.array("sd_cluster" in post)
    return out


def _design_rules(fit: xr.DataTree, post: xr.Dataset) -> tuple[dict[str, tuple[str, str | None]], np.ndarray]:
    """What the fit's design leaves unidentified (:func:`unidentified_components`), and its agents with runs.

    From the fit's run counts (``constant_data``); a fit without them is read by its posterior's
    agents (every one taken to have run, with repeated runs: the G-study's design says what the
    runs fold).
    """
    if "constant_data" in fit.children and "n_runs" in fit["constant_data"]:
        n = fit["constant_data"]["n_runs"].transpose("agent", "task").values
        return unidentified_components(n), agents_with_runs(n)
    m = int(post.sizes.get("agent", 2))
    return unidentified_by_design(m, 2), np.arange(m)


def _v(mu: np.ndarray, s2_in: np.ndarray, s2_out: np.ndarray, n_quad: int) -> np.ndarray:
    """Var over the latent sum N(0, s2_in) of E[expit(mu + sum + N(0, s2_out))]."""
    x, w = gauss_hermite(n_quad)
    eta = mu[:, None] + np.sqrt(s2_in)[:, None] * x[None, :]  # (S, Q)
    g = (expit(eta[..., None] + np.sqrt(s2_out)[:, None, None] * x[None, None, :]) * w).sum(-1)
    m1 = (g * w).sum(-1)
    m2 = (g * g * w).sum(-1)
    return m2 - m1 * m1


def _fixed_component_draws(lat: dict, d, facets: dict[str, str | None]) -> tuple[list[str], np.ndarray]:
    """Fixed agents: :func:`hierbench.metrics._crossed._evaluated_components` in the design's effects.

    The one rule for what a G-study of the evaluated agents estimates; a design without a
    cluster facet takes the clusters' parts into the task's, one without an agent x task
    effect (one run per cell) its part into the residual.
    """
    from ._crossed import _evaluated_components

    parts = {"mu": lat["mu"], "a": lat["fixed_loc"] - lat["mu"][:, None], "sd_task2": lat["t"] + lat["c"],
             "sd_cluster2": lat["c"], "sd_at": np.sqrt(lat["at"]), "sd_ac2": lat["ac"],
             "has_cluster": bool(lat["has_cluster"])}  # fmt: skip
    agent, task, cluster = facets["agent"], facets["task"], facets["cluster"]
    cl = [cluster] if cluster is not None else []
    # a component's effect: its facets (clusters go with the task where the design has none)
    where = {"agent": {agent}, "task": {task, *cl}, "agent:task": {agent, task, *cl},
             "cluster": {task, *cl} if not cl else {cluster},
             "agent:cluster": {agent, task} if not cl else {agent, cluster}, "task:cluster": {task, *cl},
             "agent:task:cluster": {agent, task, *cl}}  # fmt: skip
    full = frozenset(d.facets)
    acc: dict[frozenset, np.ndarray] = {}
    for name, v in _evaluated_components(parts).items():
        e = full if name == "residual" else frozenset(where[name])
        e = e if e in d.effects else full  # an effect the design folds into its residual
        acc[e] = acc.get(e, 0.0) + v
    none = np.zeros_like(lat["mu"])  # a design's cluster facet where the fit has no clusters
    return [d.name(e) for e in d.effects], np.stack([acc.get(e, none) for e in d.effects])


def _check_like(like) -> None:
    """Refuse a ``like`` that is not a G-study result (an eval dataset is the natural wrong guess)."""
    if all(hasattr(like, a) for a in ("_design", "formula", "measurement")):
        return
    hint = (
        ": that looks like the eval data; pass its G-study, hierbench.freq.variance_components(data)"
        if isinstance(like, xr.Dataset | xr.DataArray)
        else ""
    )
    raise TypeError(
        "`like` must be a VarianceComponentsResult (the frequentist G-study, from "
        "hierbench.freq.variance_components, whose design and component names the Bayesian components "
        f"match); got {type(like).__module__}.{type(like).__qualname__}{hint}"
    )


def _fit_log_words(fit: xr.DataTree) -> str:
    """The fit's log in a few words: agents x tasks and runs, from its counts (``constant_data``)."""
    if "constant_data" not in fit.children or "n_runs" not in fit["constant_data"]:
        return "sizes not recorded"
    n = fit["constant_data"]["n_runs"]
    return f"{n.sizes.get('agent', 1)} agents x {n.sizes.get('task', 1)} tasks, {float(n.sum()):g} runs"


def _check_same_log(fit: xr.DataTree, like, *, name: str = "bayes_variance_components") -> None:
    """Refuse a G-study (``like``) of another log than the fit's, by their fingerprints.

    The fit's ``hierbench_counts_hash`` (a count model's ``hierbench_data_hash`` is the same
    fingerprint) against the one :func:`hierbench.freq.variance_components` stamps on its
    estimate: the rule ``hierbench.report.build`` applies to a given G-study, in its words
    (its ``FitDataMismatchError`` lives in ``report``, which ``metrics`` may not import). A
    side without a fingerprint (an old fit, a G-study of an array) cannot be checked and is
    let through.

    Raises
    ------
    HierbenchError
        The two fingerprints differ: naming both logs' sizes and fingerprints.
    """
    want = str(fit.attrs.get(COUNTS_HASH) or fit.attrs.get(DATA_HASH) or "")
    got = str(getattr(like, "estimate", xr.DataArray()).attrs.get(COUNTS_HASH, ""))
    if not want or not got or want == got:
        return
    sizes = " x ".join(f"{v:g} {k}" for k, v in like.sizes.items())
    raise HierbenchError(
        f"{name}: `fit` and `like` are not the same evaluation: the fit's log ({_fit_log_words(fit)}; "
        f"fingerprint {want[:12]}) and the G-study's ({like.formula}: {sizes}, {like.n_obs} observations; "
        f"fingerprint {got[:12]}). Give the G-study of the log the fit was made from, "
        "hierbench.freq.variance_components(data) with the data passed to the fit (read with the same options)"
    )


def _component_draws(fit: xr.DataTree, like, n_quad: int, name: str) -> tuple[list[str], np.ndarray]:
    _check_like(like)
    _check_same_log(fit, like, name=name)
    lat = _latent(fit)
    d = like._design
    facets = set(d.facets)
    cluster = next((f for f in ("cluster", "family") if f in facets), None)
    agent = like.measurement or "agent"
    task = next(
        (
            f
            for f in d.facets
            if f not in {agent, cluster} and d.primary(frozenset(d.facets)) != (f,)
        ),
        None,
    )
    if task is None and len(d.facets) == 1 and lat["one_agent"]:
        task = d.facets[0]  # one agent, one run per task: the G-study's one effect is its residual
    if (agent not in facets and not lat["one_agent"]) or task is None:
        raise ValueError(
            f"the design {like.formula!r} must have an agent and a task facet to match the crossed "
            "model"
        )
    if lat["fixed_loc"] is not None:
        return _fixed_component_draws(lat, d, {"agent": agent, "task": task, "cluster": cluster})
    total = lat["a"] + lat["t"] + lat["c"] + lat["at"] + lat["ac"]

    def latent_var(S: frozenset) -> np.ndarray:
        v = np.zeros_like(total)
        if agent in S:
            v = v + lat["a"]
        if task in S:
            v = v + lat["t"]
            if cluster is None:  # the design has no cluster facet: clusters are part of tasks
                v = v + lat["c"]
        if cluster is not None and cluster in S:
            v = v + lat["c"]
        if agent in S and task in S:
            v = v + lat["at"]
        # the agent x cluster effect: known given the agent and its cluster (or its task, which
        # names the cluster; a design without a cluster facet holds it in agent:task)
        if agent in S and ((cluster is not None and cluster in S) or task in S):
            v = v + lat["ac"]
        return v

    full = frozenset(d.facets)
    V: dict[frozenset, np.ndarray] = {}
    comps: dict[frozenset, np.ndarray] = {}
    for e in d.effects:
        cond = e - (full - {agent, task} - ({cluster} if cluster else set()))
        s_in = latent_var(cond)
        V[e] = _v(lat["mu"], s_in, total - s_in, n_quad)
    for e in d.effects:
        comps[e] = V[e] - sum((comps[b] for b in d.effects if b < e and b in comps), 0.0)
    # the residual (the full effect) adds the run-to-run binomial variance E[p (1 - p)] to what
    # the effects below it leave of Var(p): nothing with repeated runs (the agent x task
    # effect took it), the agent x task part with one run per cell, where the G-study
    # confounds the two in its residual
    x, w = gauss_hermite(n_quad)
    p = expit(lat["mu"][:, None] + np.sqrt(total)[:, None] * x[None, :])
    comps[full] = comps[full] + (p * (1 - p) * w).sum(-1)
    names = [d.name(e) for e in d.effects]
    return names, np.stack([comps[e] for e in d.effects])


def bayes_variance_components(
    fit: xr.DataTree, like, *, prob: float = DEFAULT_PROB, n_quad: int = 32
) -> xr.Dataset:
    """The crossed model's components in the design of a G-study, on the probability scale.

    Parameters
    ----------
    fit : xarray.DataTree
        A crossed-model fit (:func:`hierbench.bayes.build_crossed`).
    like : VarianceComponentsResult
        The frequentist G-study whose design (and component names) to match:
        agents, tasks, optionally clusters (``cluster``), runs nested in cells.
    prob : float
        Level of the equal-tailed posterior intervals.
    n_quad : int
        Gauss-Hermite nodes per level, for random agents (a fit of fixed agents, the
        default, uses the population rule of :func:`hierbench.metrics.crossed_variance_components`).

    Returns
    -------
    xarray.Dataset
        ``estimate`` (posterior mean), ``ci`` (``eti``) over ``component``;
        ``draws(component, sample)``; attrs carry the fit's data fingerprints
        (``hierbench_counts_hash``, ``hierbench_data_hash``). Ready for
        :func:`hierbench.compare.side_by_side`, which refuses it beside a
        result of another log.

    Raises
    ------
    TypeError
        ``like`` is not a G-study result (e.g. the eval dataset itself).
    hierbench.HierbenchError
        ``like`` is a G-study of another log than the fit's (their
        ``hierbench_counts_hash`` differ; a side without one is not checked).
    """
    prob = check_prob(prob)
    names, draws = _component_draws(fit, like, n_quad, "bayes_variance_components")
    est = xr.DataArray(draws.mean(-1), dims="component", coords={"component": names})
    lo, hi = np.quantile(draws, [0.5 - prob / 2, 0.5 + prob / 2], axis=-1)
    ci = make_interval(
        lo,
        hi,
        prob=prob,
        kind="eti",
        template=est,
        warn_zero_width=False,
        detail="crossed logistic model, probability-scale G-theory decomposition by quadrature",
    )
    spec = fit_record(fit, "hierbench_spec")
    return xr.Dataset(
        {
            "estimate": est,
            "ci": ci,
            "draws": (("component", "sample"), draws),
        },
        attrs={
            "scale": "probability",
            "design": like.formula,
            "agents": str(spec.get("options", {}).get("agents", "")),
        }
        | fingerprints(fit),  # which log: side_by_side refuses a G-study of another beside it
    )


def bayes_d_study(
    fit: xr.DataTree,
    like,
    sizes: dict,
    *,
    prob: float = DEFAULT_PROB,
    n_quad: int = 32,
) -> xr.Dataset:
    """The D-study of ``like`` with the crossed model's components, per posterior draw.

    Returns
    -------
    xarray.Dataset
        For each D-study quantity (``var_paired_diff``, ``e_rho2``, ...):
        ``<name>`` (posterior median) and ``<name>_ci`` (``eti``) over the
        size grid (dims ``n_<facet>``). Tasks nested in clusters spread as
        unevenly as in ``like``'s data (``like.d_study``'s default), said in
        attr ``spread``; attrs carry the fit's data fingerprints.

    Raises
    ------
    hierbench.HierbenchError
        ``like`` is a G-study of another log than the fit's: its sizes (held
        facets, the spread of tasks over clusters) would not be the fit's.
    """
    prob = check_prob(prob)
    _, draws = _component_draws(fit, like, n_quad, "bayes_d_study")
    ref = like.d_study(sizes)
    grid = {f: np.atleast_1d(np.asarray(v, dtype=float)) for f, v in sizes.items()}
    ndim = len(grid)
    full = {f: np.asarray(like.sizes.get(f, 1.0)) for f in like._design.facets}
    for i, (f, a) in enumerate(grid.items()):
        shape = [1] * (ndim + 1)
        shape[i + 1] = a.size
        full[f] = a.reshape(shape)
    comp = {e: draws[k].reshape((-1,) + (1,) * ndim) for k, e in enumerate(like._design.effects)}
    # tasks over clusters as unevenly as observed, runs held as observed: as ``ref``
    full = like._spread_sizes(full, held=[f for f in full if f not in grid])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = like._coefficients(full, comp, warn=False)
    dims = tuple(ref[next(iter(ref.data_vars))].dims)
    ds = xr.Dataset(coords=ref.coords)
    for k, v in out.items():
        v = np.broadcast_to(np.asarray(v, dtype=float), (draws.shape[1], *ref[k].shape))
        ds[k] = (dims, np.nanmedian(v, axis=0))
        lo, hi = np.nanquantile(v, [0.5 - prob / 2, 0.5 + prob / 2], axis=0)
        ds[f"{k}_ci"] = make_interval(
            lo, hi, prob=prob, kind="eti", template=ds[k], warn_zero_width=False
        )
    ds.attrs = {"design": like.formula, "scale": "probability"} | fingerprints(fit)
    for k in ("spread", "spread_kind", "run_spread", "run_spread_kind"):
        if k in ref.attrs:
            ds.attrs[k] = ref.attrs[k]
    return ds
