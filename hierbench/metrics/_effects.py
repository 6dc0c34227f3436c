"""Answers on the reader's scale from a formula fit's posterior.

Answers on the reader's scale from a formula fit's posterior: marginal effects, mean scores, the agents'
variance, pass^k on a graded event.

The Bayesian counterparts of :func:`hierbench.freq.average_marginal_effects`,
:func:`~hierbench.freq.mean_response` and :func:`~hierbench.freq.agent_variance`,
defined the same way and returned over the same dims and labels, so that
:func:`hierbench.compare.side_by_side` puts the two halves row by row: the
maximum-likelihood half evaluates each quantity at its estimates (delta-method
intervals), this one in every posterior draw (the posterior mean, and the
equal-tailed interval of the draws).

Each takes the fit and the design it was built from (``model.hierbench["design"]``
of :func:`hierbench.bayes.build_mixed`, or :func:`hierbench.data.model_design`
with the fit's formula). Predictions average a design row's expected outcome
with the random terms integrated out by the package's population rule; only
:func:`mean_response` holds the agent-level terms at their drawn values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

import numpy as np
import xarray as xr
from scipy.special import expit

from .._base import DEFAULT_PROB
from .._base import FRACTIONAL_LINEAR
from .._base import DrawsResult
from .._base import HierbenchError
from .._base import check_prob
from .._base import fit_record
from .._docs import fill_doc
from .._numerics import population_nodes
from ._common import check_k
from ._common import posterior_interval
from ._mixed import as_design
from ._mixed import expected_outcome
from ._mixed import integrated_sd
from ._mixed import mixed_draws
from ._mixed import population_mean
from ._mixed import row_predictor
from ._results import PosteriorPassKResult

if TYPE_CHECKING:
    import pandas as pd

#: draws x rows (x nodes) per chunk of the observed-task means
_CHUNK = 4_000_000

__all__ = [
    "PosteriorAgentVarianceResult",
    "PosteriorEffectsResult",
    "PosteriorMeanResponseResult",
    "agent_variance",
    "average_marginal_effects",
    "graded_pass_hat_k",
    "mean_response",
    "mixed_pass_hat_k",
]


@dataclass(frozen=True, repr=False)
class PosteriorEffectsResult(DrawsResult):
    """Posterior average marginal effects (:func:`average_marginal_effects`).

    ``estimate`` (posterior mean) over ``contrast`` (and ``by``), ``ci``
    equal-tailed, ``posterior_sd``, ``draws(chain, draw, ...)``; ``variable``
    and ``scale`` as the maximum-likelihood result.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    posterior_sd: xr.DataArray
    variable: str
    scale: str

    _title_fields: ClassVar[tuple[str, ...]] = ("variable", "scale")


#: what each ``tasks`` setting of :func:`mean_response` averages over, as the repr says it
_MEAN_TASKS = {
    "population": "tasks='population': a new task like the group's own",
    "observed": "tasks='observed': the group's own tasks, held fixed",
}


@dataclass(frozen=True, repr=False)
class PosteriorMeanResponseResult(DrawsResult):
    """Posterior expected score per group (:func:`mean_response`): ``estimate`` / ``ci`` over ``group``.

    ``scale`` (points, grades) and ``tasks`` (``"population"`` or ``"observed"``) head the repr
    and are columns of ``to_frame()``: the two settings' intervals differ in width by design.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    posterior_sd: xr.DataArray
    scale: str
    tasks: str = "population"

    _title_fields: ClassVar[tuple[str, ...]] = ("scale", "tasks_words")

    @property
    def tasks_words(self) -> str:
        """The ``tasks`` setting in words."""
        return _MEAN_TASKS.get(self.tasks, f"tasks={self.tasks!r}")

    def to_frame(self) -> pd.DataFrame:
        """As ``Result.to_frame``, with the ``scale`` and ``tasks`` columns."""
        return _stated_frame(super().to_frame(), scale=self.scale, tasks=self.tasks)


@dataclass(frozen=True, repr=False)
class PosteriorAgentVarianceResult(DrawsResult):
    """Variance among agents by term on the linear predictor's scale (:func:`agent_variance`), over ``component``.

    ``share`` is the posterior mean of each term's share of the total;
    ``kind`` says whether a component is a random term's variance or the
    spread of a fixed term's contributions.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    posterior_sd: xr.DataArray
    share: xr.DataArray
    kind: xr.DataArray
    scale: str = "logit (variance among agents)"

    _title_fields: ClassVar[tuple[str, ...]] = ("scale",)

    def to_frame(self) -> pd.DataFrame:
        """As ``Result.to_frame``, with the ``scale`` column."""
        return _stated_frame(super().to_frame(), scale=self.scale)


def _stated_frame(df: pd.DataFrame, **stated: str) -> pd.DataFrame:
    """``df`` with a column per stated setting (the scale, the tasks), so a table taken out still says them."""
    for key, value in stated.items():
        df[key] = value
    return df


# --------------------------------------------------------------------------- shared pieces


def _compressed(
    design: Any, X: np.ndarray, groups: np.ndarray, n_groups: int, held: np.ndarray, integrate: np.ndarray,
    evaluate: Any,
) -> np.ndarray:  # fmt: skip
    """Average an evaluation over each group's rows.

    ``(S, n_groups)``: each group's mean over its rows of ``evaluate(rows) (S, rows)``; rows
    that predict alike (same fixed part, integrated slopes, held levels, group) evaluated once.
    """
    key = [X, groups[:, None]]
    key += [t.slope[:, None] for k, t in enumerate(design.random) if integrate[k] and not t.intercept]
    key += [t.codes[:, None] for k, t in enumerate(design.random) if held[k]]
    _, first, inv = np.unique(np.column_stack(key), axis=0, return_index=True, return_inverse=True)
    W = np.zeros((first.size, n_groups))
    np.add.at(W, (inv.ravel(), groups), 1.0)
    return evaluate(first) @ (W / W.sum(0, keepdims=True))


def _group_means(
    design: Any, dr: Any, X: np.ndarray, groups: np.ndarray, n_groups: int, held: np.ndarray,
    threshold: float | None = None, f: Any = None,
) -> np.ndarray:  # fmt: skip
    """Average the expected outcome over each group's rows, per draw.

    ``(S, n_groups)``: per draw, each group's mean over its rows of the expected outcome
    (``held`` terms at their draws, the others integrated out).
    """
    integrate = ~held

    def evaluate(rows: np.ndarray) -> np.ndarray:
        eta = row_predictor(dr, design, X, rows, held)
        return expected_outcome(design, dr, eta, integrated_sd(dr, design, rows, integrate), rows, threshold, f)

    return _compressed(design, X, groups, n_groups, held, integrate, evaluate)


def _summarise(dr: Any, values: np.ndarray, dims: tuple[str, ...], coords: dict, prob: float) -> tuple:
    """``(estimate, ci, posterior_sd, draws)`` of per-draw values ``(S, ...)``."""
    draws = dr.as_draws(values, dims, coords)
    ci = posterior_interval(draws, prob=prob)
    est = draws.mean(("chain", "draw")).rename("estimate")
    sd = draws.std(("chain", "draw")).rename("posterior_sd")
    return est, ci, sd, draws.rename("draws")



# --------------------------------------------------------------------------- public


@fill_doc
def average_marginal_effects(
    fit: xr.DataTree,
    design: Any,
    variable: str,
    *,
    by: str | None = None,
    threshold: float | None = None,
    prob: float = DEFAULT_PROB,
) -> PosteriorEffectsResult:
    """Posterior average marginal effects of a variable on the reader's scale.

    As :func:`hierbench.freq.average_marginal_effects`, draw by draw: every
    design row set to each level of ``variable`` (categorical; differences
    from the first level) or nudged (numeric; the average derivative per
    unit), predicted with the random terms integrated out, averaged over the
    rows (within each level of ``by``).

    Integrating the random terms out uses each half's own normal on its own
    scale, so this half and the maximum-likelihood one can differ by more than
    their intervals where the task effects are far from normal: for fractional
    scores with many tasks at 0 in every run, a tier effect of 16.7 points here
    against 28.2 by REML on 6 METR models (``models/mixed/card.md``).

    Parameters
    ----------
    fit : xarray.DataTree
        A fit of :func:`hierbench.bayes.build_mixed`.
    design : ModelDesign or pymc.Model
        The design it was built from (or the model, which carries it).
    variable : str
    by : str, optional
        A variable (a task feature) within whose levels the effect is averaged.
    %(ordinal_threshold)s
    prob : float
        Level of the equal-tailed interval.

    Returns
    -------
    PosteriorEffectsResult
        ``estimate`` over ``contrast`` (``"b - a"``; and ``by``), in points or grades.
    """
    design, prob = as_design(design), check_prob(prob)
    dr = mixed_draws(fit, design)
    factor, scale = design.reader_scale(threshold)
    labels, mats, numeric = design.counterfactuals(variable)
    groups, glab = design.groups(by)
    held = np.zeros(len(design.random), bool)
    preds = [_group_means(design, dr, M, groups, len(glab), held, threshold) for M in mats]
    eff = [(preds[0] - preds[1]) / numeric] if numeric else [p - preds[0] for p in preds[1:]]
    contrast = labels if numeric else [f"{lev} - {labels[0]}" for lev in labels[1:]]
    vals = factor * np.stack(eff, axis=-1)  # (S, by, contrast)
    dims, coords = ("by", "contrast"), {"by": glab, "contrast": contrast}
    if by is None:
        vals, dims, coords = vals[:, 0], ("contrast",), {"contrast": contrast}
    est, ci, sd, draws = _summarise(dr, vals, dims, coords, prob)
    est.attrs = {"scale": scale, "variable": variable}
    return PosteriorEffectsResult(estimate=est, ci=ci, posterior_sd=sd, draws=draws, variable=variable, scale=scale)


@fill_doc
def mean_response(
    fit: xr.DataTree,
    design: Any,
    by: str = "agent",
    *,
    threshold: float | None = None,
    tasks: str = "population",
    prob: float = DEFAULT_PROB,
) -> PosteriorMeanResponseResult:
    """Posterior expected score of each agent (or level of ``by``) over its own design rows.

    Parameters
    ----------
    fit, design
        As :func:`average_marginal_effects`.
    by : str
        ``"agent"`` or another variable of the formula.
    %(ordinal_threshold)s
    tasks : {"population", "observed"}
        ``"population"`` (as :func:`hierbench.freq.mean_response`): random
        terms that hold whole agents (``(1|agent)``, ``(1|model)``) at their
        drawn values, the others (tasks, cells, runs) integrated out: the
        agent's expected score on a new task like its own. ``"observed"``:
        every term at its drawn value (an agent x task effect integrated out
        of the likelihood at its conditional expectation given the cell's
        runs): the expected score averaged over the group's own design rows,
        the estimand of the task-level bootstrap of each agent's mean score.
        The two can differ by many points where the task effects are far from
        normal (fractional scores with many tasks at 0 in every run: 46.8
        against 57.2 for one METR model, ``models/mixed/card.md``).
    %(prob)s

    Returns
    -------
    PosteriorMeanResponseResult
        ``estimate`` / ``ci`` over ``group``, in points (or grades).
    """
    design, prob = as_design(design), check_prob(prob)
    if tasks not in ("population", "observed"):
        raise HierbenchError(f"`tasks` must be 'population' or 'observed'; got {tasks!r}")
    dr = mixed_draws(fit, design)
    factor, scale = design.reader_scale(threshold)
    groups, glab = design.groups(by)
    if tasks == "observed":
        vals = factor * _observed_means(fit, design, dr, groups, len(glab), threshold)
    else:
        held = np.array([t.level == "agent" for t in design.random], bool)
        vals = factor * _group_means(design, dr, design.X, groups, len(glab), held, threshold)
    est, ci, sd, draws = _summarise(dr, vals, ("group",), {"group": glab}, prob)
    est.attrs = {"scale": scale, "by": by, "tasks": tasks}
    return PosteriorMeanResponseResult(estimate=est, ci=ci, posterior_sd=sd, draws=draws, scale=scale, tasks=tasks)


def _observed_means(fit: xr.DataTree, design: Any, dr: Any, groups: np.ndarray, n_groups: int, threshold: Any) -> np.ndarray:
    """``(S, n_groups)``: group means of each row's expected outcome at every term's drawn value."""
    from ._crossed import _agq_weights

    held = np.array([dr.re[t.name] is not None for t in design.random], bool)
    rows = np.arange(len(design.frame))
    W = np.zeros((rows.size, n_groups))
    W[rows, groups] = 1.0
    W /= W.sum(0, keepdims=True)
    n_quad = int(fit_record(fit, "hierbench_spec").get("options", {}).get("n_quad", 7))
    S = dr.sd.shape[0]
    out = np.empty((S, n_groups))
    step = max(1, _CHUNK // (rows.size * (n_quad if not held.all() else 1)))
    for lo in range(0, S, step):
        sl = slice(lo, min(lo + step, S))
        sub = dr.subset(sl)
        eta = row_predictor(sub, design, design.X, rows, held)
        if held.all():
            mu = expected_outcome(design, sub, eta, np.zeros_like(eta), rows, threshold)
        else:  # the agent x task effect integrated out of the binomial cells: its conditional mean
            (k,) = np.flatnonzero(~held)
            e, wt = _agq_weights(design.y[None], design.n[None], eta[:, None, :], sub.sd[:, k, None, None], n_quad)
            mu = (wt * expit(e)).sum(-1)[:, 0, :]
        out[sl] = mu @ W
    return out


def agent_variance(fit: xr.DataTree, design: Any, *, prob: float = DEFAULT_PROB) -> PosteriorAgentVarianceResult:
    """Split the variance among agents on the linear predictor's scale into the formula's agent-level terms, per draw.

    As :func:`hierbench.freq.agent_variance`: a random agent-level term
    (``(1|model)``, ``(1|scaffold:model)``) contributes ``sd^2``; a fixed
    agent-level term (``scaffold``) the variance, across the agents in the
    data, of its contribution ``x_a beta`` (divisor ``n_agents``).

    The scale is the logit for binary and graded scores, as the
    maximum-likelihood half's. For scores in [0, 1] it is the Bayesian
    family's own linear predictor, the logit only at mean 1/2 and on
    pass/fail tasks and stretched against it in the tails (METR: 45.6
    against the quasi-binomial fit's 11.0): not the frequentist value's
    counterpart; :func:`hierbench.compare.side_by_side` refuses the pair, and
    :func:`mean_response` compares the halves in points.

    Returns
    -------
    PosteriorAgentVarianceResult
        ``estimate`` / ``ci`` / ``share`` over ``component``.
    """
    design, prob = as_design(design), check_prob(prob)
    dr = mixed_draws(fit, design)
    first = design.agent_rows()
    fixed, rand, names = design.agent_terms()
    Xa = design.X[first]
    vals = [np.var(dr.beta[:, design.fixed_terms[t]] @ Xa[:, design.fixed_terms[t]].T, axis=1) for t in fixed]
    vals += [dr.sd[:, k] ** 2 for k in rand]
    v = np.stack(vals, axis=-1)
    est, ci, sd, draws = _summarise(dr, v, ("component",), {"component": names}, prob)
    est.attrs = {"scale": _variance_scale(design.family)}
    share = est.copy(data=(v / v.sum(-1, keepdims=True)).mean(0)).rename("share")
    kind = xr.DataArray(["fixed"] * len(fixed) + ["random"] * len(rand), dims="component",
                        coords={"component": names}, name="kind")  # fmt: skip
    return PosteriorAgentVarianceResult(estimate=est, ci=ci, posterior_sd=sd, share=share, kind=kind, draws=draws,
                                        scale=est.attrs["scale"])  # fmt: skip


def _variance_scale(family: str) -> str:
    """The scale of the agents' variance: logit^2 as the maximum-likelihood half's, or the [0, 1] family's own."""
    if family == "fractional":
        return f"{FRACTIONAL_LINEAR}, squared (variance among agents)"
    return "logit (variance among agents)"


def mixed_pass_hat_k(
    fit: xr.DataTree, design: Any, k: Any = 1, *, threshold: float | None = None, prob: float = DEFAULT_PROB
) -> PosteriorPassKResult:
    """pass^k of a formula fit: P(all ``k`` new attempts of an agent at a new task pass), per agent.

    The event "pass" is the family's own: a success (binomial), a grade of at
    least ``threshold`` (ordinal). Per agent, on a new task like its own
    (each of its design rows, averaged): agent-level terms (``(1|agent)``,
    ``(1|model)``, fixed agent factors) at their drawn values; the task and
    agent x task effects, which the ``k`` attempts share, integrated out once
    (``E_V[q(V)^k]``); per-run terms (a judge) drawn anew for each attempt,
    integrated out inside ``q``; both by the package's population rule, as
    :func:`crossed_pass_k` with ``population=True`` does for the crossed model.
    ``k = 1`` is :func:`mean_response` (population tasks) on the probability scale.

    Scores in [0, 1] (the fractional family) have no pass event, so pass^k
    is not defined there: a mean score of 0.6 may be every run at 0.6 or 60%
    of runs at 1, which give different chances that ``k`` runs all "pass".
    Binarise the scores (full credit, or a cut of your choosing) and fit the
    binomial family, or report :func:`mean_response`.

    Parameters
    ----------
    fit, design
        As :func:`average_marginal_effects`.
    k : int or sequence of int
        Numbers of attempts.
    threshold : float, optional
        Ordinal fits only (required there): the lowest grade that passes.
    prob : float
        Level of the equal-tailed interval.

    Returns
    -------
    PosteriorPassKResult
        ``estimate(agent, k)`` in [0, 1], ``ci`` (eti), ``draws``; ``n_tasks``
        NaN (a new task from the population).

    Raises
    ------
    HierbenchError
        A fractional fit, an ordinal fit without ``threshold``, or ``threshold`` on a binomial fit.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from hierbench.data import model_design
    >>> ds = xr.Dataset({"score": (("agent", "task", "run"), np.ones((2, 3, 1)))},
    ...                 coords={"agent": ["a", "b"], "task": ["t1", "t2", "t3"]})
    >>> d = model_design("score ~ 0 + agent + (1|task)", ds, family="binomial")
    >>> post = xr.Dataset({"beta": (("chain", "draw", "coef"), np.zeros((1, 1, 2))),
    ...                    "sd": (("chain", "draw", "component"), np.zeros((1, 1, 1)))},
    ...                   coords={"coef": list(d.coef), "component": ["1|task"]})
    >>> res = mixed_pass_hat_k(xr.DataTree.from_dict({"posterior": post}), d, k=[1, 2])
    >>> res.estimate.sel(agent="a").round(3).values.tolist()  # p = 1/2 on every task
    [0.5, 0.25]
    """
    design, prob, ks = as_design(design), check_prob(prob), check_k(k)
    offset = _pass_event(design, threshold)
    dr = mixed_draws(fit, design)
    groups, agents = np.asarray(design.agent_index, np.intp), [str(a) for a in design.agents]
    held = np.array([t.level == "agent" for t in design.random], bool)
    per_run = np.array([t.level == "run" for t in design.random], bool)
    out = []
    for kk in ks:
        if per_run.any():
            ev = _nested(design, dr, held, ~held & ~per_run, per_run, offset(dr), int(kk))
            out.append(_compressed(design, design.X, groups, len(agents), held, ~held, ev))
        else:  # one integral: every integrated term is shared by the k attempts
            p_k = lambda p, kk=kk: p**kk  # noqa: E731
            out.append(_group_means(design, dr, design.X, groups, len(agents), held, threshold, p_k))
    est, ci, _, draws = _summarise(dr, np.stack(out, -1), ("agent", "k"), {"agent": agents, "k": ks}, prob)
    n_tasks = xr.full_like(est, np.nan).rename("n_tasks")
    event = "a success" if threshold is None else f"an answer graded >= {design.grade_name(threshold)}"
    attrs = {"quantity": "pass^k", "model": "mixed", "tasks": "population", "over": f"attempts, each {event}",
             "scale": "probability", "draws_of": "E[q^k] given the draw, q = P(pass | agent, task)"}  # fmt: skip
    return PosteriorPassKResult(estimate=est, ci=ci, draws=draws, n_tasks=n_tasks, attrs=attrs)


def graded_pass_hat_k(
    fit: xr.DataTree, design: Any, threshold: float, k: Any = 1, *, prob: float = DEFAULT_PROB
) -> PosteriorPassKResult:
    """pass^k on a graded event: P(all of ``k`` new answers of an agent are graded >= ``threshold``).

    :func:`mixed_pass_hat_k` of an ordinal fit, the pass event a grade of at
    least ``threshold``; ``k = 1`` is the share graded at least ``threshold``
    (pass-at-threshold), :func:`mean_response` with ``threshold``.

    Returns
    -------
    PosteriorPassKResult
        ``estimate(agent, k)`` in [0, 1], ``ci`` (eti), ``draws``; ``n_tasks``
        NaN (a new task from the population).
    """
    if as_design(design).family != "ordinal":
        raise HierbenchError(f"`graded_pass_hat_k` needs an ordinal fit; this one is {as_design(design).family}")
    return mixed_pass_hat_k(fit, design, k, threshold=threshold, prob=prob)


def _pass_event(design: Any, threshold: float | None) -> Any:
    """The pass event's offset on the linear predictor, per draw: ``draws -> (S, 1)`` (``P(pass) = expit(eta - offset)``)."""
    if design.family == "fractional":
        raise HierbenchError(
            "pass^k is not defined for scores in [0, 1] (the fractional family): they have no pass event, and a "
            "mean score of 0.6 may be every run at 0.6 or 60% of runs at 1, which differ in how often k runs all "
            "pass; binarise the scores (full credit, or a cut of your choosing) and fit the binomial family, or "
            "report mean_response"
        )
    if design.family == "ordinal" and threshold is None:
        raise HierbenchError(f"an ordinal fit needs `threshold`, the lowest grade that passes ({design.categories[1:].tolist()})")
    design.reader_scale(threshold)  # the one threshold rule: a grade above the lowest, ordinal fits only
    if threshold is None:
        return lambda dr: np.zeros((dr.sd.shape[0], 1))
    c = design.threshold_cut(threshold)  # a grade, its label or its score
    return lambda dr: dr.thresholds[:, c - 1 : c]


def _nested(design: Any, dr: Any, held: np.ndarray, shared: np.ndarray, per_run: np.ndarray, offset: np.ndarray, k: int) -> Any:
    """Build the nested pass^k expectation.

    Rows -> ``(S, rows)`` of ``E_V[q(V)^k]``, ``q(v) = E_J[expit(eta + v + J - offset)]``: the shared
    terms' effect ``V`` integrated outside, the per-run terms' ``J`` inside (both by the population rule).
    """
    u, w = population_nodes()

    def evaluate(rows: np.ndarray) -> np.ndarray:
        loc = row_predictor(dr, design, design.X, rows, held) - offset
        ts = integrated_sd(dr, design, rows, shared)
        tr = integrated_sd(dr, design, rows, per_run)
        q = population_mean(loc[..., None] + ts[..., None] * u, tr[..., None])
        return (q**k * w).sum(-1)

    return evaluate
