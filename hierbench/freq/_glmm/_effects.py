"""Answers on the reader's scale from a formula fit: marginal effects, mean scores, the agents' variance.

All three start from the same prediction: a design row's expected outcome
with the random terms integrated out (population-averaged),

    mu_r = E[ h(x_r beta + tau_r Z) ],  tau_r^2 = sum_k sigma_k^2 z_rk^2,  Z ~ N(0, 1),

where ``h`` is ``expit`` (success rate, mean score in [0, 1]) or, for an
ordinal fit, the mean grade ``g_1 + sum_c (g_c - g_{c-1}) P(grade >= g_c)``
or the share graded at least ``g`` (pass-at-threshold). The expectation is
:func:`hierbench._numerics.logit_normal_expectation` (the package's one
population rule).

- :func:`average_marginal_effects`: set a variable to each of its levels in
  every design row (its other covariates as they are), predict, average over
  the rows (optionally within each level of a task feature, ``by``) and take
  differences from the reference level; for a numeric variable the average
  derivative. So "scaffold b adds 8 [5, 11] points" is averaged over the
  design's own agents and tasks, each (agent, task) cell counting once.
- :func:`mean_response`: each agent's (or group's) expected score averaged
  over its own design rows, agent-level random effects at their conditional
  modes, the others integrated out.
- :func:`agent_variance`: the logit-scale variance among agents split into
  terms (random agent-level terms: their variances; fixed agent-level
  terms: the spread of their contributions across the agents in the data).

Intervals are by the delta method on ``(beta, log sd)`` (and the thresholds of an ordinal fit),
derivatives by central differences of the prediction. For
:func:`mean_response` and :func:`agent_variance`'s fixed terms the covariance
is the ML fit's inverse observed information (kind ``normal``;
``logit-normal`` for :func:`mean_response`, whose interval is normal on the
logit of the mean, mapped back); a random term's variance takes the fit's own
sd interval, squared (profile or Wald on the log scale). The marginal effects
by default take the small-sample route of :mod:`._smallsample`: the
parameters and their covariance of the REML fit of the same model, and
Student t quantiles with the containment degrees of freedom of the
variable (kind ``t``; ``normal`` when no random term contains it).
``method="ml"`` keeps the ML fit and normal quantiles, which run short when
the effect rests on a random term with few levels (``FewLevelsWarning``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import Literal

import numpy as np
import xarray as xr
from scipy import stats
from scipy.special import expit

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import Result
from ..._base import check_choice
from ..._base import check_prob
from ..._base import make_interval
from ..._base import warn_user
from ..._docs import fill_doc
from ..._numerics import logit_normal_expectation
from .._kernels import normal_z
from ._families import thresholds_of
from ._mixed import MixedMLResult
from ._smallsample import containment_df
from ._smallsample import restricted_fit
from ._warnings import FewLevelsWarning
from ._warnings import MLConvergenceWarning
from ._warnings import SeparatedAgentWarning

if TYPE_CHECKING:
    import pandas as pd

#: An agent-level random term with fewer levels than this makes an ML delta-method interval of
#: an agent-level effect run short: it treats the term's variance as known, and maximum
#: likelihood underestimates it (level-2 standard errors want some 30-50 groups: Maas and Hox,
#: 2005). Measured: benchmarks/bench_ame_coverage.py, scaffold effects over 8 models.
FEW_LEVELS = 30

__all__ = [
    "AgentVarianceResult",
    "MarginalEffectsResult",
    "MeanResponseResult",
    "agent_variance",
    "average_marginal_effects",
    "mean_response",
]


@dataclass(frozen=True, repr=False)
class MarginalEffectsResult(Result):
    """Average marginal effects (:func:`average_marginal_effects`).

    Attributes
    ----------
    estimate : DataArray (contrast[, by])
        Level minus reference level (categorical) or average derivative per
        unit (numeric), on ``scale``.
    ci : DataArray (..., ci_bound)
        Delta-method intervals: kind ``t`` (degrees of freedom ``df``) or
        ``normal`` (infinite ``df``).
    standard_error : DataArray
    df : DataArray
        Degrees of freedom of each interval's t quantile (``inf``: normal).
    variable, scale : str
    method : str
        ``"reml"`` or ``"ml"`` (which fit's parameters and covariance).
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    standard_error: xr.DataArray
    df: xr.DataArray
    variable: str
    scale: str
    method: str = "reml"

    _title_fields: ClassVar[tuple[str, ...]] = ("variable", "scale", "method")


@dataclass(frozen=True, repr=False)
class MeanResponseResult(Result):
    """Expected score per group (:func:`mean_response`): ``estimate`` / ``ci`` over ``group``."""

    estimate: xr.DataArray
    ci: xr.DataArray
    standard_error: xr.DataArray
    scale: str

    #: the repr's head names what is estimated ("mean grade (of score, scale 1, ..., 5)"), not "estimate"
    _title_fields: ClassVar[tuple[str, ...]] = ("scale",)


@dataclass(frozen=True, repr=False)
class AgentVarianceResult(Result):
    """Logit-scale variance among agents by term (:func:`agent_variance`).

    ``estimate`` / ``ci`` over ``component``; ``share`` the fraction of the
    total; ``kind`` says whether a component is a random term's variance or
    the spread of a fixed term's contributions. The intervals differ by kind
    (``ci.attrs["ci_kind"]`` is ``"mixed"`` when they do): ``ci_kinds`` and
    ``ci_detail`` say how each component's was made, and ``to_frame()``
    gives each row its own ``ci_kind``.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    share: xr.DataArray
    kind: xr.DataArray
    ci_kinds: xr.DataArray
    ci_detail: xr.DataArray

    _estimate_label: ClassVar[str] = "variance among agents by term, scale {scale}"

    def to_frame(self) -> pd.DataFrame:
        """One row per component; ``ci_kind`` and ``ci_detail`` are each row's own.

        Column ``scale`` (``"logit (variance among agents)"``: variances in logit^2, not
        probability^2) says so on every row.
        """
        df = super().to_frame()
        df["ci_kind"] = df.pop("ci_kinds")
        df["scale"] = self.estimate.attrs.get("scale")
        return df


# --------------------------------------------------------------------------- prediction


def _check_fit(fit: Any) -> MixedMLResult:
    if not isinstance(fit, MixedMLResult):
        raise HierbenchError(
            f"`fit` must be a formula fit of fit_crossed_ml (a MixedMLResult); got {type(fit).__name__}"
        )
    return fit


def _parts(fit: MixedMLResult, params: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    p, K = fit.design.X.shape[1], len(fit.design.random)
    return params[:p], np.exp(params[p : p + K]), params[p + K :]


def _linear(X: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """``X beta``, NaN only on the rows a NaN coefficient (separated by the data: infinite) enters."""
    bad = ~np.isfinite(beta)
    if not bad.any():
        return X @ beta
    return np.where((X[:, bad] != 0).any(axis=1), np.nan, X[:, ~bad] @ beta[~bad])


def predict_rows(
    fit: MixedMLResult, params: np.ndarray, X: np.ndarray, marginal: np.ndarray,
    offset: np.ndarray | None = None, threshold: float | None = None,
) -> np.ndarray:  # fmt: skip
    """Per design row: the expected outcome, the ``marginal`` random terms integrated out."""
    d = fit.design
    beta, sd, psi = _parts(fit, params)
    eta = _linear(X, beta) + (0.0 if offset is None else offset)
    tau2 = np.zeros(X.shape[0])
    for k, t in enumerate(d.random):
        if marginal[k]:
            tau2 += (sd[k] * t.slope) ** 2
    tau = np.sqrt(tau2)
    if d.family != "ordinal":
        return logit_normal_expectation(eta, tau)
    th, cats = thresholds_of(psi), d.categories
    if threshold is not None:
        c = int(np.searchsorted(cats, threshold))
        return logit_normal_expectation(eta - th[c - 1], tau)
    out = np.full(eta.shape, float(cats[0]))
    for c in range(1, cats.size):
        out += (cats[c] - cats[c - 1]) * logit_normal_expectation(eta - th[c - 1], tau)
    return out


def _delta(
    fit: MixedMLResult, f: Any, extra_var: np.ndarray | None = None, at: tuple[np.ndarray, np.ndarray] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``f(params)`` and its delta-method standard errors (central differences, h = 1e-5).

    ``at``: ``(params, vcov)`` to use instead of the fit's (a REML fit's).
    """
    x, V = (fit.params, np.asarray(fit.vcov.values)) if at is None else at
    free = np.isfinite(np.diag(V))
    est = np.asarray(f(x), dtype=float)
    J = np.zeros((est.size, x.size))
    for i in np.flatnonzero(free):
        e = np.zeros(x.size)
        e[i] = 1e-5
        J[:, i] = (np.asarray(f(x + e)) - np.asarray(f(x - e))).ravel() / 2e-5
    Vf = np.where(np.isfinite(V), V, 0.0)
    var = np.einsum("ij,jk,ik->i", J, Vf, J)
    if extra_var is not None:
        var = var + extra_var
    return est.ravel(), np.sqrt(np.clip(var, 0, None))


def _interval(est: xr.DataArray, se: np.ndarray, prob: float, detail: str, df: float = np.inf) -> xr.DataArray:
    """``est +- q se`` with ``q`` the normal quantile, or Student t's on ``df`` degrees of freedom."""
    t = np.isfinite(df)
    q = stats.t.ppf(0.5 + prob / 2, df) if t else normal_z(prob)
    sed = est.copy(data=se.reshape(est.shape))
    return make_interval(est - q * sed, est + q * sed, prob=prob, kind="t" if t else "normal",
                         detail=detail, warn_zero_width=False)  # fmt: skip


# --------------------------------------------------------------------------- marginal effects


@fill_doc
def average_marginal_effects(
    fit: MixedMLResult,
    variable: str,
    *,
    by: str | None = None,
    threshold: float | str | None = None,
    method: Literal["reml", "ml"] = "reml",
    prob: float = DEFAULT_PROB,
) -> MarginalEffectsResult:
    """Average marginal effects of a variable on the reader's scale, with small-sample intervals.

    Parameters
    ----------
    fit : MixedMLResult
        A formula fit of :func:`hierbench.freq.fit_crossed_ml`.
    variable : str
        A variable of the formula. Categorical (a scaffold, a tier): each
        level against the first (the reference), every design row set to the
        level and to the reference, predicted with the random terms
        integrated out, the differences averaged over the rows. Numeric: the
        average derivative per unit of the variable.
    by : str, optional
        Average within each level of this variable (a task feature), giving
        how the effect changes across its levels.
    threshold : float or str, optional
        Ordinal fits: the effect on the share graded at least ``threshold``
        (else on the mean grade): a grade of the scale, its label (grades
        written as words) or the score the dataset holds for it.
    method : {"reml", "ml"}
        ``"reml"`` (default): the model refitted by restricted maximum
        likelihood (fixed effects integrated out with the random ones by
        the Laplace approximation, as ``glmmTMB``'s ``REML = TRUE``; its
        variances are not shrunk as ML's are), the effects and their delta
        method at its estimates and covariance, and Student t
        quantiles on the containment degrees of freedom (SAS's
        ``DDFM=CONTAIN``: the smallest rank contribution of a random term
        within whose levels the variable is constant, e.g. ``(1|scaffold:
        model)`` for ``scaffold``; normal quantiles when there is none).
        ``"ml"``: the ML fit's delta method with normal quantiles, which
        treats the variances as known and runs short when the effect rests
        on few levels. Coverage of both: ``benchmarks/bench_ame_coverage.py``.
    %(prob)s

    Returns
    -------
    MarginalEffectsResult
        ``estimate`` over ``contrast`` (``"b - a"``; and ``by``), in points
        (100 x a difference of probabilities or mean scores) or grades;
        ``df`` the t quantile's degrees of freedom.

    Warns
    -----
    FewLevelsWarning
        ``method="ml"`` and an agent-level effect resting on an agent-level
        random term with fewer than 30 levels; or ``method="reml"`` where no
        random term contains an agent-level variable although few-level
        agent-level terms are in the model (normal quantiles then).
    MLConvergenceWarning
        The REML refit did not converge.
    SeparatedAgentWarning
        ``method="reml"`` on an ML fit with estimates at infinity (NaN) that no
        separation's reduction removes: no REML refit, the ML fit's values used.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from hierbench.freq import fit_crossed_ml, average_marginal_effects
    >>> rng = np.random.default_rng(1)
    >>> p = np.where(np.arange(6) < 3, 0.4, 0.6)[:, None, None] * np.ones((6, 50, 3))
    >>> ds = xr.Dataset({"score": (("agent", "task", "run"), (rng.random(p.shape) < p) * 1.0)},
    ...                 coords={"agent": list("abcdef"), "scaffold": ("agent", ["s1"] * 3 + ["s2"] * 3)})
    >>> fit = fit_crossed_ml(ds, "score ~ scaffold + (1|task)", intervals="wald")
    >>> ame = average_marginal_effects(fit, "scaffold")
    >>> ame.estimate.contrast.values.tolist(), bool(10 < float(ame.estimate[0]) < 30)
    (['s2 - s1'], True)
    """
    fit = _check_fit(fit)
    prob = check_prob(prob)
    check_choice(method, "method", ["reml", "ml"])
    scale = fit.design.reader_scale(threshold)[1]
    f, labels, numeric, groups = _effects_of(fit, variable, by, threshold)
    at, df, detail = _basis(fit, variable, method)
    est, se = _delta(fit, f, at=at)
    contrast = labels if numeric else [f"{lev} - {labels[0]}" for lev in labels[1:]]
    da = xr.DataArray(est.reshape(len(groups), len(contrast)), dims=("by", "contrast"),
                      coords={"by": [g for g, _ in groups], "contrast": contrast}, name="estimate")  # fmt: skip
    if by is None:
        da = da.isel(by=0, drop=True)
    da.attrs = {"scale": scale, "variable": variable}
    ci = _interval(da, se, prob, detail, df)
    return MarginalEffectsResult(
        estimate=da, ci=ci, standard_error=da.copy(data=se.reshape(da.shape)).rename("standard_error"),
        df=da.copy(data=np.full(da.shape, df)).rename("df"), variable=variable, scale=scale, method=method,
    )  # fmt: skip


def _effects_of(fit: MixedMLResult, variable: str, by: str | None, threshold: float | None) -> tuple:
    """``f(params)`` -> the effects (groups x contrasts) on the reader's scale; the labels, ``2 h``, the groups."""
    d = fit.design
    factor = d.reader_scale(threshold)[0]
    threshold = None if threshold is None else d.threshold_grade(threshold)  # a label or a score: its grade
    labels, mats, numeric = d.counterfactuals(variable)
    codes, labels_by = d.groups(by)
    groups = [(g, codes == i) for i, g in enumerate(labels_by)]
    marg = np.ones(len(d.random), bool)

    def f(params: np.ndarray) -> np.ndarray:
        preds = [predict_rows(fit, params, X, marg, threshold=threshold) for X in mats]
        if numeric:
            eff = [(preds[0] - preds[1]) / numeric]  # central difference over 2 h
        else:
            eff = [pr - preds[0] for pr in preds[1:]]
        return factor * np.array([[e[m].mean() for e in eff] for _, m in groups])

    return f, labels, numeric, groups


def _basis(fit: MixedMLResult, variable: str, method: str) -> tuple[tuple[np.ndarray, np.ndarray] | None, float, str]:
    """``(params, vcov)`` (None: the ML fit's), the degrees of freedom and the interval's detail."""
    params = "beta, log sd, thresholds" if fit.design.family == "ordinal" else "beta, log sd"
    what = f"population-averaged predictions, delta method on ({params})"
    if method == "ml":
        _warn_few_levels(fit, variable, "its interval treats the variance of {few} as known", "ML")
        return None, np.inf, f"{what} at the ML fit, normal quantiles"
    reml = restricted_fit(fit)
    if not reml.refitted:
        warn_user(f"average_marginal_effects: {reml.message}", SeparatedAgentWarning)
    elif not reml.converged:
        warn_user(f"average_marginal_effects: the REML refit did not converge ({reml.message})", MLConvergenceWarning)
    df, term = containment_df(fit.design, variable)
    what = f"{what} at the REML fit" if reml.refitted else f"{what} at the ML fit (no REML refit: estimates at infinity)"
    if term is None:
        _warn_few_levels(fit, variable, "no random term contains it, so its interval uses normal quantiles "
                         "although it rests on {few}", "REML")  # fmt: skip
        return (reml.params, reml.vcov), df, f"{what}, normal quantiles (no random term contains {variable!r})"
    return (reml.params, reml.vcov), df, f"{what}, t on {df:g} containment df of ({term})"


def _warn_few_levels(fit: MixedMLResult, variable: str, why: str, fit_kind: str) -> None:
    """Warn when an agent-level variable's effect rests on agent-level random terms with few levels."""
    d = fit.design
    if d.variables.get(variable) != "agent":
        return
    few = [f"({t.name}) {t.levels.size} levels" for k, t in enumerate(d.random)
           if t.level == "agent" and t.levels.size < FEW_LEVELS and float(fit.sd.values[k]) > 0]  # fmt: skip
    if few:
        warn_user(
            f"average_marginal_effects: {variable!r} is agent-level and "
            + why.format(few=", ".join(few))
            + f"; with fewer than {FEW_LEVELS} levels such {fit_kind} intervals can run short (simulated, 8 "
            "models, method='ml': 0.90 coverage at nominal 0.95). The Bayesian half, "
            "hierbench.metrics.average_marginal_effects, integrates over that variance.",
            FewLevelsWarning,
        )  # fmt: skip


# --------------------------------------------------------------------------- mean response


@fill_doc
def mean_response(
    fit: MixedMLResult,
    by: str = "agent",
    *,
    threshold: float | None = None,
    prob: float = DEFAULT_PROB,
) -> MeanResponseResult:
    """Expected score of each agent (or level of ``by``) over its own design rows.

    Random terms that hold whole agents (``(1|agent)``, ``(1|model)``) sit
    at their conditional modes, the others (tasks, cells, runs) are
    integrated out: the agent's expected score on a new task like its own.
    The interval is the delta method on the parameters plus the modes'
    conditional variances (their covariance with the parameters ignored).

    Parameters
    ----------
    fit : MixedMLResult
    by : str
        ``"agent"`` or another variable of the formula (rows grouped by its values).
    %(ordinal_threshold)s
    %(prob)s

    Returns
    -------
    MeanResponseResult
        ``estimate`` / ``ci`` over ``group``, in points (or grades).

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> from hierbench.freq import fit_crossed_ml, mean_response
    >>> data, _ = simulate_eval(n_agents=3, n_tasks=30, n_runs=2, rng=2)
    >>> fit = fit_crossed_ml(data, "score ~ 0 + agent + (1|task)", family="fractional", intervals="wald")
    >>> mean_response(fit).estimate.sizes["group"]
    3
    """
    fit = _check_fit(fit)
    prob = check_prob(prob)
    factor, scale = fit.design.reader_scale(threshold)
    d = fit.design
    threshold = None if threshold is None else d.threshold_grade(threshold)  # a label or a score: its grade
    keys, groups = d.groups(by)
    held = np.array([t.level == "agent" for t in d.random], dtype=bool)
    offset = np.zeros(len(keys))
    for k, t in enumerate(d.random):
        if held[k]:
            offset += fit.random_effects[t.name].values[t.codes] * t.slope

    def f(params: np.ndarray) -> np.ndarray:
        mu = predict_rows(fit, params, d.X, ~held, offset=offset, threshold=threshold)
        return factor * np.array([mu[keys == i].mean() for i in range(len(groups))])

    extra = _mode_variance(fit, f, held, offset, keys, groups, threshold, factor)
    est, se = _delta(fit, f, extra)
    da = xr.DataArray(est, dims="group", coords={"group": groups}, name="estimate")
    da.attrs = {"scale": scale, "by": by}
    lo_b, hi_b = (0.0, factor) if d.family != "ordinal" or threshold is not None else (d.categories[0], d.categories[-1])
    u = np.clip((est - lo_b) / (hi_b - lo_b), 1e-12, 1 - 1e-12)
    z = normal_z(prob)
    half = z * se / ((hi_b - lo_b) * u * (1 - u))
    lo = lo_b + (hi_b - lo_b) * expit(np.log(u / (1 - u)) - half)
    hi = lo_b + (hi_b - lo_b) * expit(np.log(u / (1 - u)) + half)
    ci = make_interval(lo, hi, prob=prob, kind="logit-normal", template=da, warn_zero_width=False,
                       detail="delta method on the logit of the mean (parameters plus the modes' conditional "
                       "variance), mapped back: it stays inside the scale")  # fmt: skip
    return MeanResponseResult(estimate=da, ci=ci, standard_error=da.copy(data=se).rename("standard_error"), scale=scale)


def _mode_variance(fit, f, held, offset, keys, groups, threshold, factor) -> np.ndarray:
    """Sum over held modes of (d group mean / d mode)^2 x conditional variance."""
    d = fit.design
    out = np.zeros(len(groups))
    if not held.any():
        return out
    h = 1e-5
    up = predict_rows(fit, fit.params, d.X, ~held, offset=offset + h, threshold=threshold)
    dn = predict_rows(fit, fit.params, d.X, ~held, offset=offset - h, threshold=threshold)
    dmu = factor * (up - dn) / (2 * h)
    for k, t in enumerate(d.random):
        if not held[k]:
            continue
        csd = fit.random_effects[t.name]["conditional_sd"].values
        for i in range(len(groups)):
            m = keys == i
            per_level = np.bincount(t.codes[m], dmu[m] * t.slope[m], minlength=t.levels.size) / m.sum()
            out[i] += float((per_level**2 * csd**2).sum())
    return out


# --------------------------------------------------------------------------- agents' variance


def _sd_intervals_at(fit: MixedMLResult, rand: list[int], prob: float) -> tuple[np.ndarray, tuple, str, str]:
    """The random terms' sds ``rand``, their intervals at ``prob``, the kind and how they were made.

    The fit's own intervals (profile or Wald on the log scale) when they are at ``prob``; else Wald
    on the log scale at ``prob`` from the fit's covariance (a profile is not recomputed here).
    """
    sd = fit.sd.values[rand]
    names = {"profile": "the fit's profile-likelihood interval", "normal": "the fit's Wald interval on the log scale"}
    if abs(float(fit.sd_ci.attrs["ci_prob"]) - prob) < 1e-12:
        kind = str(fit.sd_ci.attrs["ci_kind"])
        return sd, (fit.sd_ci.values[rand, 0], fit.sd_ci.values[rand, 1]), kind, names.get(kind, f"the fit's {kind} interval")
    p = fit.design.X.shape[1]
    se_log = np.sqrt(np.clip(np.diag(np.asarray(fit.vcov.values))[p + np.asarray(rand, dtype=int)], 0, None))
    z = normal_z(prob)
    how = f"Wald on the log scale at {prob:g} (the fit's own intervals are at {float(fit.sd_ci.attrs['ci_prob']):g})"
    with np.errstate(over="ignore", invalid="ignore"):
        return sd, (sd * np.exp(-z * se_log), sd * np.exp(z * se_log)), "normal", how


@fill_doc
def agent_variance(fit: MixedMLResult, *, prob: float = DEFAULT_PROB) -> AgentVarianceResult:
    """Split the logit-scale variance among agents into the formula's agent-level terms.

    A random agent-level term (``(1|model)``, ``(1|scaffold:model)``,
    ``(1|agent)``) contributes its variance ``sigma^2``; a fixed agent-level
    term (``scaffold``) the variance, across the agents in the data, of its
    contribution ``x_a beta`` (population form, divisor ``n_agents``).
    A random term's interval is the fit's own interval of its sd, squared
    (profile likelihood, or Wald on the log scale, as the fit made them; at
    another ``prob`` than the fit's, Wald on the log scale); a fixed term's is
    the delta method, truncated at zero. ``ci_detail`` says which, per component.

    Parameters
    ----------
    fit : MixedMLResult
    %(prob)s

    Returns
    -------
    AgentVarianceResult
        One row per agent-level term (``component``): its variance with its
        interval at ``prob``, its share of the total, whether it is a random
        term's variance or a fixed term's spread, and each interval's kind and
        detail (``ci_kinds``, ``ci_detail``; ``ci.attrs["ci_kind"]`` is
        ``"mixed"`` when random and fixed terms' kinds differ).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from hierbench.freq import fit_crossed_ml, agent_variance
    >>> rng = np.random.default_rng(3)
    >>> sc, mo = np.repeat(["s1", "s2"], 4), np.tile(["m1", "m2", "m3", "m4"], 2)
    >>> eta = np.where(sc == "s2", 1.0, 0.0) + np.array([-1.0, 0.0, 0.5, 1.0] * 2)
    >>> y = rng.random((8, 60, 2)) < 1 / (1 + np.exp(-eta))[:, None, None]
    >>> ds = xr.Dataset({"score": (("agent", "task", "run"), y * 1.0)},
    ...                 coords={"agent": [f"{s}/{m}" for s, m in zip(sc, mo)],
    ...                         "scaffold": ("agent", sc), "model": ("agent", mo)})
    >>> fit = fit_crossed_ml(ds, "score ~ scaffold + (1|model) + (1|task)", intervals="wald")
    >>> agent_variance(fit).estimate.component.values.tolist()
    ['scaffold', '1|model']
    """
    fit = _check_fit(fit)
    prob = check_prob(prob)
    d = fit.design
    first = d.agent_rows()
    fixed, rand, names = d.agent_terms()

    def f(params: np.ndarray) -> np.ndarray:
        return np.array([np.var(d.X[first][:, d.fixed_terms[t]] @ params[d.fixed_terms[t]]) for t in fixed])

    est, se = _delta(fit, f) if fixed else (np.zeros(0), np.zeros(0))
    z = normal_z(prob)
    sd, (sd_lo, sd_hi), rkind, how = _sd_intervals_at(fit, rand, prob)
    lo = np.r_[np.clip(est - z * se, 0.0, None), sd_lo**2]
    hi = np.r_[est + z * se, sd_hi**2]
    da = xr.DataArray(np.r_[est, sd**2], dims="component", coords={"component": names}, name="estimate")
    da.attrs = {"scale": "logit (variance among agents)"}
    kinds = ["normal"] * len(fixed) + [rkind] * len(rand)
    details = ["delta method, truncated at 0: the variance of this fixed term's contributions across these agents"] * len(fixed)
    details += [f"{how} of sd({names[len(fixed) + j]}), squared" for j in range(len(rand))]
    ci = make_interval(lo, hi, prob=prob, kind=kinds[0] if len(set(kinds)) == 1 else "mixed", template=da,
                       detail="; ".join(f"{n}: {t}" for n, t in zip(names, details, strict=True)), warn_zero_width=False)  # fmt: skip
    per = {"dims": "component", "coords": {"component": names}}
    kind = xr.DataArray(["fixed"] * len(fixed) + ["random"] * len(rand), name="kind", **per)
    share = (da / da.sum()).rename("share")
    return AgentVarianceResult(estimate=da, ci=ci, share=share, kind=kind,
                               ci_kinds=xr.DataArray(kinds, name="ci_kinds", **per),
                               ci_detail=xr.DataArray(details, name="ci_detail", **per))  # fmt: skip
