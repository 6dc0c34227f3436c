"""Maximum likelihood for the crossed logistic model (the ``glmer`` counterpart of ``build_crossed``).

For agent ``a`` and task ``t`` with ``n_at`` runs and ``y_at`` successes,

    logit p_at = alpha_a + b_t + e_at,  b_t ~ N(0, sd_task),  e_at ~ N(0, sd_agent_task),
    y_at ~ Binomial(n_at, p_at),

with the abilities ``alpha`` fixed effects (one per agent) and the task and
agent x task effects random. Given the parameters, tasks are independent
(the agents are fixed), so the likelihood is a product over tasks of
one-dimensional integrals over ``b_t``, each over a product of per-cell
integrals over ``e_at``:

    L_t = int N(b; 0, sd_task) prod_a l_at(alpha_a + b) db,
    l_at(eta) = int N(e; 0, sd_agent_task) Binomial(y_at | n_at, expit(eta + e)) de.

Both integrals are computed by adaptive Gauss-Hermite quadrature (nodes at
the integrand's mode, scaled by its curvature): the cell integral with the
Bayesian model's own node placement (:func:`hierbench._numerics.cell_modes`, seven
nodes; in NumPy, :mod:`._quadrature`, so the first fit compiles nothing), the task integral with ``n_agq`` nodes (one node is the Laplace approximation,
``glmer``'s default ``nAGQ = 1``). The gradient comes from Fisher's identity
and the Hessian from Louis' identity (posterior moments of the complete-data
derivatives at the nodes), so the fit runs L-BFGS with analytic gradients
and then polishes with Newton steps; the Laplace approximation instead uses
finite differences (its nodes move with the parameters), so keep it for
small data. Standard errors of the abilities come from the inverse Hessian;
the intervals of the scales are profile-likelihood intervals (or a
parametric bootstrap); the conditional modes of the task effects are the
modes found in step one at the estimate.

Accuracy of ``n_agq``: the error of the summed log-likelihood against a
61-node quadrature, measured at a fixed parameter on ``simulate_eval``
designs (``benchmarks/bench_scale.py``): 12 x 500 x 10: 1 node -0.70, 5
nodes -7.8e-3, 9 nodes -7.5e-5, 15 nodes -4e-7; 3 x 200 x 1: 1 node -4.6, 9
nodes -2.6e-4; cbpp (Laplace as glmer): 1 node -4.2e-2, 9 nodes -2.6e-6.
The default 9 keeps it below 1e-3 in total on these designs.

A model given by a formula (:func:`hierbench.data.model_design`) other than
this one is fitted by :mod:`._mixed` (the Laplace approximation over all
random effects jointly).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any
from typing import ClassVar
from typing import Literal

import numpy as np
import xarray as xr
from scipy.special import gammaln

from ..._base import DEFAULT_PROB
from ..._base import TASK_IN_RUNS
from ..._base import HierbenchError
from ..._base import HierbenchWarning
from ..._base import SmallSampleWarning
from ..._base import UnidentifiedWarning
from ..._base import ability_meaning
from ..._base import as_rng
from ..._base import check_choice
from ..._base import check_int
from ..._base import check_prob
from ..._base import counts
from ..._base import interval_label
from ..._base import make_interval
from ..._base import refuse_agents_without_runs
from ..._base import unidentified_components
from ..._base import warn_user
from ..._numerics import gauss_hermite
from ...data import ModelDesign
from ...data import model_design
from .._kernels import normal_z
from ._laplace import LOG_SD_BOUNDS
from ._mixed import MixedMLResult
from ._mixed import ScalesFit
from ._mixed import at_zero_words
from ._mixed import fit_design
from ._mixed import wald_sd_interval
from ._mixed import warn_beyond_bound
from ._optim import at_bounds
from ._optim import maximise
from ._optim import not_a_maximum
from ._optim import profile_interval
from ._optim import profile_notes
from ._optim import sd_at_zero
from ._optim import stop_reason
from ._optim import warn_not_a_maximum
from ._quadrature import task_pass
from ._warnings import BoundaryEstimateWarning
from ._warnings import IgnoredClusterWarning
from ._warnings import MLConvergenceWarning
from ._warnings import SeparatedAgentWarning

__all__ = [
    "BoundaryEstimateWarning",
    "CrossedMLResult",
    "IgnoredClusterWarning",
    "MLConvergenceWarning",
    "SeparatedAgentWarning",
    "fit_crossed_ml",
]

_LOG_SD_BOUNDS = LOG_SD_BOUNDS  # the formula fit's (one owner: ._laplace)
_ALPHA_BOUND = 30.0
#: the most the log-likelihood at the estimate may move with more task nodes before a warning
_QUAD_TOL = 0.05
#: what to do about a crossed fit that is not a maximum
_NOT_MAX_ADVICE = (
    "This happens when the likelihood keeps rising towards a boundary, e.g. sd_task towards infinity when "
    "tasks are solved by every agent on every run or by none, and the quadrature stops at an artefact: compare "
    "fits with n_agq=15 and 31, read the profile intervals, or fit the Bayesian crossed model, whose prior "
    "keeps sd_task finite"
)


# --------------------------------------------------------------------------- the likelihood


class _Lik:
    """The marginal log-likelihood of one data set, with warm-started task modes."""

    def __init__(self, y: np.ndarray, n: np.ndarray, marg: bool, n_agq: int, n_quad: int):
        self.y = np.ascontiguousarray(y, dtype=float)  # (T, A)
        self.n = np.ascontiguousarray(n, dtype=float)
        self.T, self.A = self.y.shape
        self.marg = bool(marg)
        u, w = gauss_hermite(n_quad)
        self.u, self.c = u, np.log(w) + 0.5 * u**2
        ut, wt = gauss_hermite(n_agq)
        self.ut, self.ct = ut, np.log(wt) + 0.5 * ut**2
        self.n_agq = int(n_agq)
        self.P = self.A + 1 + int(self.marg)
        self.b_mode = np.zeros(self.T)
        self.log_binom = float(
            (gammaln(self.n + 1) - gammaln(self.y + 1) - gammaln(self.n - self.y + 1)).sum()
        )
        self.n_eval = 0

    @property
    def warm(self) -> np.ndarray:
        """The warm start carried between evaluations (the task modes)."""
        return self.b_mode

    @property
    def newton_ok(self) -> bool:
        """Newton steps need the Louis Hessian, exact for adaptive quadrature (not for Laplace)."""
        return self.n_agq > 1

    def split(self, x: np.ndarray) -> tuple[np.ndarray, float, float]:
        alpha = np.ascontiguousarray(x[: self.A], dtype=float)
        sd_t = math.exp(x[self.A])
        sd_at = math.exp(x[self.A + 1]) if self.marg else 1.0
        return alpha, sd_t, sd_at

    def run(self, x: np.ndarray, full: bool = False) -> dict[str, Any]:
        alpha, sd_t, sd_at = self.split(x)
        out: dict[str, Any] = task_pass(
            self.y, self.n, alpha, 1.0 / sd_t**2, self.marg, sd_at, self.u, self.c, self.ut, self.ct,
            self.b_mode, full,
        )  # fmt: skip
        self.n_eval += 1
        out["sd_t"], out["sd_at"] = sd_t, sd_at
        return out

    def value(self, x: np.ndarray) -> float:
        return float(self.run(x)["L"].sum())

    def value_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Log-likelihood and its gradient in ``x = (alpha, log sd_task[, log sd_agent_task])``."""
        if self.n_agq == 1:
            return self.value(x), self._fd_grad(x)
        r = self.run(x)
        g = np.empty(self.P)
        g[: self.A] = r["g_alpha"].sum(0)
        g[self.A] = r["g_lst"].sum()
        if self.marg:
            g[self.A + 1] = r["sd_at"] * r["g_sat"].sum()
        return float(r["L"].sum()), g

    def _fd_grad(self, x: np.ndarray, h: float = 1e-5) -> np.ndarray:
        g = np.empty(x.size)
        for i in range(x.size):
            e = np.zeros(x.size)
            e[i] = h
            g[i] = (self.value(x + e) - self.value(x - e)) / (2 * h)
        return g

    def hessian(self, x: np.ndarray) -> np.ndarray:
        """Hessian of the log-likelihood in ``x``: Louis' identity at the nodes (finite differences for Laplace)."""
        return self.value_grad_hess(x)[2]

    def value_grad_hess(self, x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Value, gradient and Hessian from one pass (finite differences for Laplace)."""
        if self.n_agq == 1:
            h = 1e-4
            H = np.empty((x.size, x.size))
            for i in range(x.size):
                e = np.zeros(x.size)
                e[i] = h
                H[i] = (self._fd_grad(x + e) - self._fd_grad(x - e)) / (2 * h)
            v, g = self.value_grad(x)
            return v, g, 0.5 * (H + H.T)
        r = self.run(x, full=True)
        A, P = self.A, self.P
        pi, bq = r["pi"], r["bq"]
        prec_t = 1.0 / r["sd_t"] ** 2
        sd_at = r["sd_at"]
        T, Q = pi.shape
        G = np.zeros((T, Q, P))
        G[..., :A] = r["d1"]
        G[..., A] = bq**2 * prec_t - 1.0
        if self.marg:
            G[..., A + 1] = sd_at * r["ds"].sum(-1)
        gbar = np.einsum("tq,tqp->tp", pi, G)
        Gc = G - gbar[:, None, :]
        H = np.einsum("tq,tqi,tqj->ij", pi, Gc, Gc)
        H[np.arange(A), np.arange(A)] += np.einsum("tq,tqa->a", pi, r["d2"])
        H[A, A] += np.einsum("tq,tq->", pi, -2.0 * bq**2 * prec_t)
        if self.marg:
            cross = sd_at * np.einsum("tq,tqa->a", pi, r["dns"])
            H[:A, A + 1] += cross
            H[A + 1, :A] += cross
            H[A + 1, A + 1] += np.einsum(
                "tq,tq->", pi, sd_at**2 * r["dss"].sum(-1) + sd_at * r["ds"].sum(-1)
            )
        g = np.empty(P)
        g[:A] = r["g_alpha"].sum(0)
        g[A] = r["g_lst"].sum()
        if self.marg:
            g[A + 1] = sd_at * r["g_sat"].sum()
        return float(r["L"].sum()), g, H


# --------------------------------------------------------------------------- result


@dataclass(frozen=True, repr=False)
class CrossedMLResult(ScalesFit):
    """Maximum-likelihood fit of the crossed logistic model (:func:`fit_crossed_ml`).

    Attributes
    ----------
    estimate : DataArray (agent)
        The abilities ``alpha_a`` (logit scale: an agent's log-odds on a task
        of average difficulty, ``b = 0``), the ML counterpart of the Bayesian
        posterior's ``ability``. Fitted from a formula, over ``coef`` instead,
        named as the formula names them (``agent[a]``, as ``build_mixed``'s
        ``beta``).
    ci : DataArray (agent, ci_bound)
        Wald intervals ``alpha +- z SE`` (kind ``normal``).
    standard_error : DataArray (agent)
    sd : DataArray (component)
        ``sd_task`` and, when in the model, ``sd_agent_task`` (logit scale);
        fitted from a formula, named by its terms (``1|task``, ``1|agent:task``).
        NaN where the maximum likelihood estimate is at infinity (warned).
    sd_ci : DataArray (component, ci_bound)
        Profile-likelihood (kind ``profile``) or parametric-bootstrap
        percentile (kind ``percentile``) intervals of the scales, or Wald on
        the log scale (kind ``normal``).
    task_effect : DataArray (task)
        Conditional modes of the task effects at the estimate.
    task_effect_sd : DataArray (task)
        Their conditional standard deviations (from the curvature at the mode).
    vcov : DataArray (param, param_b)
        Inverse negative Hessian in ``(alpha..., log sd_task[, log sd_agent_task])``.
    loglik : float
        Maximised log-likelihood, including the binomial coefficients (as
        ``logLik`` of ``glmer``).
    n_agq, n_quad : int
        Task-level and cell-level quadrature nodes (``n_agq = 1``: Laplace).
    converged : bool
        False when the optimiser did not converge or the fit is not a maximum (an
        observed information that is not positive definite, or a profile value above it).
    n_evaluations : int
        Likelihood evaluations (every pass over all cells, intervals included).
    options : dict
        ``agent_task`` and the other settings used.

    ``to_frame()`` has a row per ability (``part`` ``"ability"``, ``term`` the agent) and
    per random term's sd (``part`` ``"sd"``), as ``MixedMLResult.to_frame()``.
    """

    task_effect: xr.DataArray
    task_effect_sd: xr.DataArray
    vcov: xr.DataArray
    loglik: float
    n_agq: int
    n_quad: int
    converged: bool
    n_evaluations: int
    options: dict = field(default_factory=dict)
    sd_resamples: xr.DataArray | None = None

    _dataset_exclude: ClassVar[tuple[str, ...]] = ("vcov", "sd_resamples")

    def _frame_parts(self) -> list[tuple]:
        """The abilities (``part`` ``"ability"``; a formula's fixed effects ``"fixed"``), then the sds (``"sd"``)."""
        first = "ability" if "agent" in self.estimate.dims else "fixed"
        return [(first, self.estimate, self.ci, self.standard_error), ("sd", self.sd, self.sd_ci, None)]

    def _frame_attrs(self) -> dict:
        return {"scale": "logit", "loglik": self.loglik}

    def _repr_lines(self) -> list[str]:
        what = (
            "ability per agent (logit scale: log-odds of success on a task of average difficulty)"
            if "agent" in self.estimate.dims
            else "fixed effects (logit scale)"
        )
        quad = "Laplace" if self.n_agq == 1 else f"{self.n_agq}-node adaptive quadrature"
        if self.n_agq == 1 and self.options.get("agent_task") == "marginal":
            # the task integral by Laplace, each agent x task cell's by adaptive quadrature
            quad = f"Laplace over tasks, {self.n_quad}-node adaptive quadrature per cell"
        lines = [
            f"CrossedMLResult: crossed logistic model by maximum likelihood ({quad}), "
            f"{self.task_effect.sizes['task']} tasks",
            f"  {what}, {interval_label(self.ci)} intervals:",
            *self._cell_lines(),
            *self._sd_lines(),
            f"  loglik {self.loglik:.2f}" + ("" if self.converged else "  (NOT converged)"),
        ]
        return lines

    @property
    def task_effects(self) -> xr.Dataset:
        """Conditional modes of the task effects with normal intervals from their conditional sd."""
        prob = float(self.ci.attrs["ci_prob"])
        z = normal_z(prob)
        ci = make_interval(
            self.task_effect - z * self.task_effect_sd,
            self.task_effect + z * self.task_effect_sd,
            prob=prob,
            kind="normal",
            detail="conditional mode +- z conditional sd at the ML estimate (ignores the "
            "uncertainty of the parameters)",
            warn_zero_width=False,
        )
        return xr.Dataset({"estimate": self.task_effect, "ci": ci})


# --------------------------------------------------------------------------- public


def _prepare(data: Any) -> xr.Dataset:
    c = counts(data, binary=True, name="data", purpose="fit_crossed_ml")
    for d in ("agent", "task"):
        if d not in c["n_runs"].dims:
            raise HierbenchError(
                f"`data` must have dims 'agent' and 'task' (and 'run' for scores); got {c['n_runs'].dims}"
            )
    extra = [d for d in c["n_runs"].dims if d not in ("agent", "task")]
    if extra:
        raise HierbenchError(f"`data` has dims {extra} besides agent and task (and run); select first")
    if "cluster" in c.coords:
        warn_user(
            "`data` has a `cluster` task coord, which fit_crossed_ml does not model: the task effects "
            "are iid N(0, sd_task) with no cluster level (the Bayesian build_crossed has one), so "
            "sd_task absorbs the cluster variance and tasks of one cluster are treated as independent",
            IgnoredClusterWarning,
        )
    return c.transpose("agent", "task")


def fit_crossed_ml(
    data: xr.Dataset,
    formula: str | ModelDesign | None = None,
    *,
    family: Literal["auto", "binomial", "fractional", "ordinal"] = "auto",
    levels: Any = None,
    agent_task: Literal["auto", "marginal", "none"] = "auto",
    n_agq: int | None = None,
    n_quad: int = 7,
    prob: float = DEFAULT_PROB,
    intervals: Literal["profile", "bootstrap", "wald"] = "profile",
    n_resamples: int = 200,
    rng: None | int | np.random.Generator = None,
) -> CrossedMLResult | MixedMLResult:
    """Fit the crossed logistic model, or a model given by a formula, by maximum likelihood.

    Parameters
    ----------
    data : xarray.Dataset
        An eval dataset (``score(agent, task, run)``) or, without a formula, its counts
        (``n_runs``, ``n_success`` over ``agent`` and ``task``). Cells with no runs are skipped;
        ragged cells are fine.
    formula : str or ModelDesign, optional
        ``None``: the crossed model (an ability per agent, task and agent x task effects
        integrated out by adaptive quadrature). A formula (:func:`hierbench.data.model_design`),
        e.g. ``"score ~ scaffold + (1|model) + (1|scaffold:model) + (1|task)"``, is fitted by the
        Laplace approximation over all random effects jointly (``glmer``'s ``nAGQ = 1``) into a
        :class:`MixedMLResult`; the crossed model's own shapes (``score ~ 0 + agent + (1|task)
        [+ (1|agent:task)]``) keep quadrature.
    family, levels
        For a formula (see :func:`hierbench.data.model_design`): binomial,
        fractional (scores in [0, 1]) or ordinal (over the grades ``levels``).
    agent_task : {"auto", "marginal", "none"}
        The crossed model's agent x task effect, or none (``glmer``'s ``(1 | task)`` model).
        "auto": "none" with at most one run per cell or a single agent (not identified then),
        else "marginal".
    n_agq, n_quad : int
        Adaptive Gauss-Hermite nodes of the task integral (default 9; 1 =
        Laplace, the only choice with a formula) and of each cell's.
    prob : float
        Level of every interval.
    intervals : {"profile", "bootstrap", "wald"}
        Intervals of the scales: profile likelihood, parametric bootstrap percentiles
        (``n_resamples`` refits; crossed model only) or Wald on the log scale.
    n_resamples : int
        Parametric bootstrap replicates (``intervals="bootstrap"``). Each refit
        starts where a fresh fit starts, so a scale estimated at zero can come
        out positive in a replicate. Replicates with a separated agent or a
        refit that fails are left out, counted in ``ci_detail`` and a warning.
    rng : None, int or numpy.random.Generator
        Seeds the parametric bootstrap (the fit itself is deterministic).

    Returns
    -------
    CrossedMLResult or MixedMLResult
        Crossed model: ``estimate`` / ``ci`` the agents' abilities (logit) with Wald
        intervals, ``sd`` / ``sd_ci`` the scales, ``task_effect`` the conditional modes,
        ``loglik``; given as a formula, the crossed model's terms carry the formula's names
        (``coef`` ``agent[a]``, components ``1|task``, ...). With another formula: the fixed
        effects, the random terms' sds, thresholds (ordinal), dispersion (fractional),
        ``deviance``; :func:`average_marginal_effects` reads it.

    Warns
    -----
    SeparatedAgentWarning
        An agent with all successes or all failures (its ability is NaN); with a formula, fixed
        effects the data separate in any family (all scores 0 or 1, every grade the lowest or the
        highest): NaN, the rows they pin left out, the rest the fit in that limit. A scale at its
        bound 50 or whose profile rises to it (NaN), or has no upper limit below it.
    BoundaryEstimateWarning, MLConvergenceWarning
        A scale at zero (sd < 1e-3; a Wald interval ``[0, NaN]``); the optimiser did not converge,
        or stopped where the observed information is not positive definite (SEs NaN, ``converged``
        False), a profile bound was not found (Wald stands in) or the task quadrature is inaccurate.
    IgnoredClusterWarning
        The data have a ``cluster`` coord (not modelled by the crossed model).

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> from hierbench.freq import fit_crossed_ml
    >>> data, _ = simulate_eval(n_agents=2, n_tasks=40, n_runs=4, rng=0)
    >>> res = fit_crossed_ml(data, intervals="wald")
    >>> res.sd.component.values.tolist()
    ['sd_task', 'sd_agent_task']
    >>> data6, _ = simulate_eval(n_agents=6, n_tasks=40, n_runs=4, rng=0)
    >>> fit = fit_crossed_ml(data6, "score ~ 1 + (1|agent) + (1|task)", intervals="wald")
    >>> fit.sd.component.values.tolist(), bool(fit.converged)
    (['1|agent', '1|task'], True)
    """
    check_choice(agent_task, "agent_task", ["auto", "marginal", "none"])
    check_choice(intervals, "intervals", ["profile", "bootstrap", "wald"])
    prob = check_prob(prob)
    design = None
    if formula is not None:
        routed, design = _route(data, formula, family, levels, n_agq, intervals, prob)
        if isinstance(routed, MixedMLResult):
            return routed
        agent_task = routed
    res = _crossed_ml(data, agent_task, n_agq, n_quad, prob, intervals, n_resamples, rng)
    return res if design is None else _named_as(res, design)


def _crossed_ml(
    data: Any, agent_task: str, n_agq: int | None, n_quad: int, prob: float, intervals: str,
    n_resamples: int, rng: None | int | np.random.Generator,
) -> CrossedMLResult:  # fmt: skip
    """The crossed model's fit: the quadrature (and bootstrap) settings checked, the crossed or pooled fit, its result."""
    n_agq = check_int(9 if n_agq is None else n_agq, "n_agq", min=1, max=101)
    n_quad = check_int(n_quad, "n_quad", min=3, max=101)
    if intervals == "bootstrap":
        n_resamples = check_int(n_resamples, "n_resamples", min=10)
    inputs = _crossed_inputs(_prepare(data), agent_task)
    if inputs["pooled"]:
        fitted = _fit_pooled(inputs, n_agq, n_quad, prob, intervals)
    else:
        fitted = _fit_crossed(inputs, n_agq, n_quad, prob, intervals, n_resamples, rng)
    return _crossed_result(inputs, fitted, n_agq, n_quad, prob, intervals)


def _route(
    data: xr.Dataset, formula: Any, family: str, levels: Any, n_agq: int | None, intervals: str, prob: float
) -> tuple[MixedMLResult | str, ModelDesign]:
    """A formula fit by the Laplace approximation, or the crossed model's ``agent_task`` for its shapes."""
    design = formula if isinstance(formula, ModelDesign) else model_design(formula, data, family=family, levels=levels)
    shape = _default_shape(design)
    if shape is not None:
        return shape, design
    if n_agq not in (None, 1) or intervals == "bootstrap":
        raise HierbenchError(
            "`formula`: a model other than the crossed one is fitted by the Laplace approximation "
            f"with profile or Wald intervals; got n_agq={n_agq!r}, intervals={intervals!r}"
        )
    return fit_design(design, prob=prob, intervals=intervals), design


def _agent_coefs(design: ModelDesign) -> dict[str, str] | None:
    """Agent -> its coefficient's name when the fixed effects are one indicator per agent, else None.

    The names are read off the design (``formulae``'s, e.g. ``agent[a]``), never re-typed: the
    design owns what a formula's coefficients are called, and the Bayesian half's ``beta(coef)``
    carries the same names.
    """
    X = design.X
    if list(design.fixed_terms) != ["agent"] or X.shape[1] != design.agents.size or X.size == 0:
        return None
    if not (np.isin(X, (0.0, 1.0)).all() and (X.sum(1) == 1).all()):
        return None
    col = np.full(design.agents.size, -1)
    col[design.agent_index] = X.argmax(1)
    if (col < 0).any() or np.unique(col).size != col.size or not np.array_equal(col[design.agent_index], X.argmax(1)):
        return None
    return {a: design.coef[c] for a, c in zip(design.agents.tolist(), col.tolist(), strict=True)}


def _named_as(res: CrossedMLResult, design: ModelDesign) -> CrossedMLResult:
    """The crossed fit of a formula, named as the formula names its terms.

    Abilities over ``coef`` (the design's names, ``agent[a]``), the scales by their random
    terms (``1|task``, ``1|agent:task``): what the Bayesian ``build_mixed`` of the same formula
    calls them, so :func:`hierbench.compare.side_by_side` lines the two halves up row by row.
    """
    names = _agent_coefs(design)
    assert names is not None  # the crossed shape was checked by _default_shape
    term = {"sd_task" if tuple(t.grouping) == ("task",) else "sd_agent_task": t.name for t in design.random}

    def by_coef(da: xr.DataArray) -> xr.DataArray:
        return da.rename(agent="coef").assign_coords(coef=[names[a] for a in da["agent"].values.tolist()])

    def by_term(da: xr.DataArray | None) -> xr.DataArray | None:
        if da is None or "component" not in da.dims:
            return da
        return da.assign_coords(component=[term[c] for c in da["component"].values.tolist()])

    return replace(
        res, estimate=by_coef(res.estimate), ci=by_coef(res.ci), standard_error=by_coef(res.standard_error),
        sd=by_term(res.sd), sd_ci=by_term(res.sd_ci), sd_resamples=by_term(res.sd_resamples),
        options={**res.options, "formula": design.formula},
    )  # fmt: skip


def _default_shape(design: ModelDesign) -> str | None:
    """``"none"`` / ``"marginal"`` when the design is the crossed model, else None.

    The crossed model: agent abilities, task [and agent x task] effects, binary
    scores per cell.
    """
    names = [t.name for t in design.random]
    if (
        design.family != "binomial"
        or design.response != "score"
        or design.row_level != "cell"
        or list(design.fixed_terms) != ["agent"]
        or _agent_coefs(design) is None
        or names not in (["1|task"], ["1|task", "1|agent:task"], ["1|agent:task", "1|task"])
    ):
        return None
    return "marginal" if "1|agent:task" in names else "none"


def _crossed_inputs(c: xr.Dataset, agent_task: str) -> dict[str, Any]:
    """The counts checked and the agent x task effect decided; separated agents set aside."""
    asked = agent_task
    n_all = np.asarray(c["n_runs"].values, dtype=float)
    y_all = np.asarray(c["n_success"].values, dtype=float)
    agents = np.asarray(c["agent"].values).astype(str) if "agent" in c.coords else np.arange(n_all.shape[0]).astype(str)
    tasks = np.asarray(c["task"].values).astype(str) if "task" in c.coords else np.arange(n_all.shape[1]).astype(str)
    if n_all.sum() == 0:
        raise HierbenchError("`data` holds no runs: every cell has n_runs = 0")
    refuse_agents_without_runs(n_all, agents, "data", "fit_crossed_ml")
    ran_tasks = n_all.sum(0) > 0
    if ran_tasks.sum() < 2:
        raise HierbenchError(
            f"`data` must have at least 2 tasks with runs to estimate sd_task; got {int(ran_tasks.sum())}"
        )
    n_fit_agents = int((~((y_all.sum(1) == 0) | (y_all.sum(1) == n_all.sum(1)))).sum())
    # the design rule (hierbench._base.unidentified_components): one agent with one run per
    # task identifies no task spread, so the task effect is left out, as the Bayesian model
    # does (its warning, in _fit_pooled, also says what becomes of an agent_task asked for)
    pooled = "task" in unidentified_components(n_all)
    if agent_task == "auto" or pooled:
        # one run per cell, or one agent: the cell effect cannot be told apart from run
        # noise or from the task effect (only sd_task^2 + sd_agent_task^2 is identified)
        agent_task = "none" if n_all.max() <= 1 or n_fit_agents <= 1 else "marginal"
    elif agent_task == "marginal" and n_fit_agents <= 1:
        warn_user(
            "agent_task='marginal' with a single agent: the task and agent x task effects are then "
            "the same level, so only sd_task^2 + sd_agent_task^2 is identified; the split between "
            "them (and their separate intervals) is arbitrary. Use agent_task='none'.",
            HierbenchWarning,
        )
    sep = (y_all.sum(1) == 0) | (y_all.sum(1) == n_all.sum(1))
    if sep.all():
        raise HierbenchError(
            "`data`: every agent succeeded on every run or failed on every run; no ability is finite"
        )
    if sep.any():
        warn_user(
            f"agents {agents[sep][:5].tolist()} succeeded (or failed) on every run: their ability's MLE "
            "is infinite; they are reported as NaN and their cells, which add nothing to the likelihood "
            "in that limit, are left out of the fit",
            SeparatedAgentWarning,
        )
    keep = ~sep
    return {
        "y": y_all[keep][:, ran_tasks].T, "n": n_all[keep][:, ran_tasks].T, "keep": keep, "sep": sep,
        "ran_tasks": ran_tasks, "agents": agents, "tasks": tasks,
        "agent_task": agent_task, "pooled": pooled, "asked": asked,
    }  # fmt: skip


#: the interval kind each ``intervals`` choice gives the scales
_SD_KINDS = {"profile": "profile", "wald": "normal", "bootstrap": "percentile"}


def _fit_pooled(inp: dict[str, Any], n_agq: int, n_quad: int, prob: float, intervals: str) -> dict[str, Any]:
    """One agent with one run per task: no task effect, the ability is the pooled rate's log-odds.

    Each task's success probability is then the same function of the ability and
    ``sd_task`` (the likelihood is flat along a ridge of the two), so ``sd_task``
    has no estimate; without a task effect the model is one binomial, whose
    maximum-likelihood ability and observed information are in closed form.
    """
    warn_user(
        f"fit_crossed_ml: sd_task is undefined ({TASK_IN_RUNS}); the task effect is left out, as "
        "in the Bayesian crossed model, so the ability is the log-odds of the pooled success rate "
        "and sd_task, its interval and the task effects are NaN"
        + (", and agent_task='marginal' is not used (no agent x task spread either)" if inp["asked"] == "marginal" else "")
        + ". Run each task more than once to estimate the task spread",
        UnidentifiedWarning,
    )
    y, n = inp["y"], inp["n"]
    lik = _Lik(y, n, False, n_agq, n_quad)
    s, t = float(y.sum()), float(n.sum())
    p = s / t
    var = 1.0 / (t * p * (1.0 - p))
    sd_da = xr.DataArray([np.nan], dims="component", coords={"component": ["sd_task"]}, name="sd")
    sd_ci = make_interval(
        np.array([np.nan]), np.array([np.nan]), prob=prob, kind=_SD_KINDS[intervals],
        detail=f"undefined: {TASK_IN_RUNS}", template=sd_da, warn_zero_width=False,
    )  # fmt: skip
    return {
        "lik": lik, "x": np.array([math.log(p / (1.0 - p)), np.nan]),
        "ll": s * math.log(p) + (t - s) * math.log1p(-p), "ok": True,
        "V": np.array([[var, np.nan], [np.nan, np.nan]]), "modes": np.full(lik.T, np.nan),
        "cond_sd": np.full(lik.T, np.nan), "sd": sd_da, "sd_ci": sd_ci, "resamples": None,
    }  # fmt: skip


def _fit_crossed(
    inp: dict[str, Any], n_agq: int, n_quad: int, prob: float, intervals: str, n_resamples: int, rng: Any
) -> dict[str, Any]:
    """Maximise, then the covariance and the scales' intervals.

    As the formula fit (``._mixed``): an estimate at an optimiser bound that means infinity (an
    sd at its upper bound, an ability at +-30) is NaN with a named warning; a fit whose
    observed information is not positive definite is not a maximum (NaN covariance,
    ``ok`` False, warned); a scale below ``SD_AT_ZERO`` is at zero.
    """
    marg = inp["agent_task"] == "marginal"
    y, n = inp["y"], inp["n"]
    lik = _Lik(y, n, marg, n_agq, n_quad)
    A = lik.A
    x0 = _fresh_start(y, n, marg)
    bounds = [(-_ALPHA_BOUND, _ALPHA_BOUND)] * A + [_LOG_SD_BOUNDS] * (1 + int(marg))
    free = np.ones(lik.P, bool)
    # Newton from the start (one pass per step with its Louis Hessian); L-BFGS-B only if it fails
    x_hat, ll, ok, msg = maximise(lik, x0, free, bounds, lbfgs=False)
    comp = ["sd_task"] + (["sd_agent_task"] if marg else [])
    names = [f"ability[{a}]" for a in inp["agents"][inp["keep"]]] + comp
    at_lo, at_hi = at_bounds(x_hat, bounds)
    if not ok:
        why = stop_reason(msg, [names[i] for i in np.flatnonzero(at_lo | at_hi)])
        warn_user(
            f"fit_crossed_ml: the optimiser did not converge ({why}); the estimates may be inaccurate",
            MLConvergenceWarning,
        )
    inf = at_hi.copy()
    inf[:A] |= at_lo[:A]  # an ability at +-30, an sd at 50: at infinity; an sd at its floor is at zero
    zero = np.zeros(lik.P, bool)
    zero[A:] = sd_at_zero(x_hat[A:])
    V, is_max = _crossed_covariance(lik, x_hat, inf, zero, names)
    if is_max and not inf.any():
        _check_quadrature(lik, x_hat, ll)
    r = lik.run(x_hat)
    out = {
        "lik": lik, "x": np.where(inf, np.nan, x_hat), "ll": ll, "ok": ok and is_max, "V": V,
        "modes": lik.b_mode.copy(), "cond_sd": r["s"].copy(),
    }  # fmt: skip
    if inf.any():
        warn_beyond_bound(
            [f"{names[i]} at {x_hat[i]:+.4g}" if i < A else f"{names[i]} at {math.exp(x_hat[i]):.4g}"
             for i in np.flatnonzero(inf)],
            f"abilities +-{_ALPHA_BOUND:g} logits, sds {math.exp(_LOG_SD_BOUNDS[1]):g}",
            "sd_task goes to infinity when tasks are solved by every agent on every run or by none (the "
            "likelihood rises as they become certain); the Bayesian crossed model's prior keeps it finite",
        )  # fmt: skip
    for j in np.flatnonzero(zero[A:]):
        warn_user(
            f"{comp[j]} is estimated at the boundary (zero); its interval is one-sided",
            BoundaryEstimateWarning,
        )
    lo, hi, kind, detail, resamples, (rising, above) = _scale_intervals(
        lik, x_hat, ll, V, bounds, inf[A:], zero[A:], comp, prob, intervals, n_resamples, rng
    )
    if rising.any() or above:  # the profile found the fit is not at the maximum (warned by profile_notes)
        out["ok"] = False
        inf[A:] |= rising
        out["x"] = np.where(inf, np.nan, x_hat)
        V[inf, :] = V[:, inf] = np.nan
    sd_da = xr.DataArray(np.where(inf[A:], np.nan, np.exp(x_hat[A:])), dims="component", coords={"component": comp},
                         name="sd")  # fmt: skip
    out["sd"] = sd_da
    lo, hi = np.where(inf[A:], np.nan, lo), np.where(inf[A:], np.nan, hi)
    out["sd_ci"] = make_interval(lo, hi, prob=prob, kind=kind, detail=detail, template=sd_da, warn_zero_width=False)
    out["resamples"] = resamples
    return out


def _check_quadrature(lik: _Lik, x_hat: np.ndarray, ll: float) -> None:
    """Warn when the log-likelihood at the estimate moves by more than ``_QUAD_TOL`` with more task nodes.

    Its maximum may then be an artefact of the quadrature (seen when sd_task heads to infinity,
    audit s76 G: the 9-node fit stopped at 18.9, 41 nodes put the log-likelihood there 0.43
    higher). Laplace (``n_agq = 1``) is not checked: its error is the user's choice.
    """
    if lik.n_agq == 1:
        return
    q = max(2 * lik.n_agq + 1, 41)
    fine = _Lik(lik.y, lik.n, lik.marg, q, lik.u.size)
    fine.b_mode[:] = lik.b_mode
    v = fine.value(x_hat)
    if abs(v - ll) > _QUAD_TOL:
        warn_user(
            f"fit_crossed_ml: the {lik.n_agq}-node quadrature over tasks is not accurate at the estimate: the "
            f"log-likelihood there is {ll:.4f} with it and {v:.4f} with {q} nodes, so the maximum found may be an "
            "artefact of the quadrature (seen when sd_task heads to infinity, with tasks solved by every agent on "
            f"every run or by none). Refit with n_agq={q} and compare, or read the profile intervals",
            MLConvergenceWarning,
        )


def _crossed_covariance(
    lik: _Lik, x_hat: np.ndarray, inf: np.ndarray, zero: np.ndarray, names: list[str]
) -> tuple[np.ndarray, bool]:
    """Inverse observed information (NaN at the estimates at infinity), and whether the fit is a maximum.

    Not a maximum (``not_a_maximum``, checked off the bounds and the scales at zero): all NaN,
    with a warning.
    """
    H = lik.hessian(x_hat)
    keep = np.flatnonzero(~inf)
    try:
        if keep.size == H.shape[0]:
            V = np.linalg.inv(-H)
        else:
            V = np.full_like(H, np.nan)
            V[np.ix_(keep, keep)] = np.linalg.inv(-H[np.ix_(keep, keep)])
    except np.linalg.LinAlgError:
        V = np.full_like(H, np.nan)
    why = not_a_maximum(H, V, np.flatnonzero(~inf & ~zero), names)
    if not why:
        return V, True
    warn_not_a_maximum(why, _NOT_MAX_ADVICE)
    return np.full_like(H, np.nan), False


def _scale_intervals(
    lik: _Lik, x_hat: np.ndarray, ll: float, V: np.ndarray, bounds: list, inf: np.ndarray, zero: np.ndarray,
    comp: list[str], prob: float, intervals: str, n_resamples: int, rng: Any,
) -> tuple[np.ndarray, np.ndarray, str, str, xr.DataArray | None, tuple[np.ndarray, bool]]:  # fmt: skip
    """The scales' intervals (``inf``: at infinity, not profiled; ``zero``: at zero), kind, detail, resamples.

    Last, from a profile (``profile_notes``): the scales whose likelihood rises to the upper
    bound (at infinity) and whether some profile value rose above the fit's maximum.
    """
    A = lik.A
    sd_hat = np.exp(x_hat[A:])
    se_log = np.sqrt(np.clip(np.diag(V)[A:], 0, None))
    if intervals == "profile":
        lo, hi, infos = np.full(len(comp), np.nan), np.full(len(comp), np.nan), []
        for j in range(len(comp)):
            infos.append({})
            if not inf[j]:
                lo[j], hi[j] = profile_interval(lik, x_hat, ll, A + j, bounds, prob, se_log[j], infos[j])
        notes, rising, above = profile_notes(comp, infos, inf, "check it on a grid, or use intervals='bootstrap'")
        detail = "profile likelihood, deviance within the chi-square(1) quantile" + notes
        return lo, hi, "profile", detail, None, (rising, above)
    fine = (np.zeros(len(comp), bool), False)
    if intervals == "wald":
        lo, hi = wald_sd_interval(sd_hat, se_log, zero, prob)
        return lo, hi, "normal", "Wald on the log scale" + at_zero_words(zero), None, fine
    draws, n_sep, n_fail = _parametric_bootstrap(lik, x_hat, bounds, n_resamples, as_rng(rng))
    resamples = xr.DataArray(draws, dims=("resample", "component"), coords={"component": comp}, name="sd_resamples")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all refits lost: NaN bounds
        q = np.nanquantile(draws, [0.5 - prob / 2, 0.5 + prob / 2], axis=0)
    return q[0], q[1], "percentile", _bootstrap_detail(n_resamples, n_sep, n_fail), resamples, fine


def _crossed_result(
    inp: dict[str, Any], fit: dict[str, Any], n_agq: int, n_quad: int, prob: float, intervals: str
) -> CrossedMLResult:
    """The abilities on the full agent axis (separated agents NaN), task modes on the task axis."""
    agents, tasks, keep, ran_tasks = inp["agents"], inp["tasks"], inp["keep"], inp["ran_tasks"]
    lik, x_hat, V = fit["lik"], fit["x"], fit["V"]
    A = lik.A
    z = normal_z(prob)
    alpha = np.full(agents.size, np.nan)
    se = np.full(agents.size, np.nan)
    alpha[keep] = x_hat[:A]
    se[keep] = np.sqrt(np.clip(np.diag(V)[:A], 0, None))
    est = xr.DataArray(alpha, dims="agent", coords={"agent": agents}, name="estimate")
    est.attrs = {"scale": "logit", "meaning": "ability: " + ability_meaning(not inp["pooled"])}
    ci = make_interval(
        est - z * se, est + z * se, prob=prob, kind="normal",
        detail="Wald: estimate +- z * SE from the inverse observed information", warn_zero_width=False,
    )  # fmt: skip
    te = np.full(tasks.size, np.nan)
    tsd = np.full(tasks.size, np.nan)
    te[ran_tasks] = fit["modes"]
    tsd[ran_tasks] = fit["cond_sd"]
    comp = fit["sd"].component.values.tolist()
    pnames = [f"ability[{a}]" for a in agents[keep]] + [f"log_{c_}" for c_ in comp]
    return CrossedMLResult(
        estimate=est,
        ci=ci,
        standard_error=xr.DataArray(se, dims="agent", coords={"agent": agents}, name="standard_error"),
        sd=fit["sd"],
        sd_ci=fit["sd_ci"],
        task_effect=xr.DataArray(te, dims="task", coords={"task": tasks}, name="task_effect"),
        task_effect_sd=xr.DataArray(tsd, dims="task", coords={"task": tasks}, name="task_effect_sd"),
        vcov=xr.DataArray(V, dims=("param", "param_b"), coords={"param": pnames, "param_b": pnames}),
        loglik=float(fit["ll"] + lik.log_binom),
        n_agq=n_agq,
        n_quad=n_quad,
        converged=bool(fit["ok"]),
        n_evaluations=int(lik.n_eval),
        options={
            "agent_task": inp["agent_task"],
            "task_effect": "none" if inp["pooled"] else "random",
            "intervals": intervals,
            "n_separated_agents": int(inp["sep"].sum()),
        },
        sd_resamples=fit["resamples"],
    )


def _simulate(lik: _Lik, x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    alpha, sd_t, sd_at = lik.split(x)
    T, A = lik.T, lik.A
    eta = alpha[None, :] + gen.normal(0.0, sd_t, T)[:, None]
    if lik.marg:
        eta = eta + gen.normal(0.0, sd_at, (T, A))
    p = 1.0 / (1.0 + np.exp(-eta))
    return gen.binomial(lik.n.astype(np.int64), p).astype(float)


def _fresh_start(y: np.ndarray, n: np.ndarray, marg: bool) -> np.ndarray:
    """Where a fit starts: each agent's smoothed log-odds, sd_task 1, sd_agent_task 0.5."""
    rate = (y.sum(0) + 0.5) / (n.sum(0) + 1.0)
    return np.concatenate([np.log(rate / (1 - rate)), [0.0], [math.log(0.5)] if marg else []])


def _parametric_bootstrap(
    lik: _Lik, x_hat: np.ndarray, bounds: list, n_resamples: int, gen: np.random.Generator
) -> tuple[np.ndarray, int, int]:
    """Scales refitted on data simulated from the fit, and how many replicates were lost.

    Each refit starts where a fit of those data would start (``_fresh_start``), not
    at the estimate: a scale estimated at its lower bound would otherwise never leave
    it, and the bootstrap distribution of a zero estimate would be a point mass at 0.
    A replicate with a separated agent (all or none of its runs succeed), or whose
    refit does not converge, is NaN; the two counts are returned.
    """
    K = lik.P - lik.A
    draws = np.full((n_resamples, K), np.nan)
    n_sep = n_fail = 0
    for i in range(n_resamples):
        y_sim = _simulate(lik, x_hat, gen)
        tot = y_sim.sum(0)
        if np.any((tot == 0) | (tot == lik.n.sum(0))):
            n_sep += 1
            continue
        sim = _Lik.__new__(_Lik)
        sim.__dict__.update(lik.__dict__)
        sim.y = np.ascontiguousarray(y_sim)
        sim.b_mode = np.zeros(lik.T)
        sim.n_eval = 0
        x, _, ok, _ = maximise(sim, _fresh_start(y_sim, lik.n, lik.marg), np.ones(lik.P, bool), bounds, lbfgs=False)
        lik.n_eval += sim.n_eval
        if not ok:
            n_fail += 1
            continue
        draws[i] = np.exp(x[lik.A :])
    return draws, n_sep, n_fail


def _bootstrap_detail(n_resamples: int, n_sep: int, n_fail: int) -> str:
    """The bootstrap interval's ``ci_detail``, with the replicates lost; a warning when any were."""
    used = n_resamples - n_sep - n_fail
    if not used < n_resamples:
        return f"parametric bootstrap, {n_resamples} refits (each started where a fresh fit starts)"
    why = "; ".join(
        t for t in (
            f"{n_sep} with a separated agent (all or none of its runs succeed)" if n_sep else "",
            f"{n_fail} whose refit did not converge" if n_fail else "",
        ) if t
    )  # fmt: skip
    warn_user(
        f"fit_crossed_ml: {n_resamples - used} of {n_resamples} parametric-bootstrap replicates "
        f"have no refit ({why}); the percentile interval rests on the other {used}. The lost "
        "replicates are not a random subset (a separated agent is one whose ability came out "
        "extreme), so the interval may be too narrow",
        SmallSampleWarning,
    )
    return (
        f"parametric bootstrap, {used} refits used of {n_resamples} replicates ({why}: left out); "
        "each refit started where a fresh fit starts"
    )
