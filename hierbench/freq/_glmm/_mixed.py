"""Maximum likelihood of a model described by a formula: fixed effects, crossed random terms, three families.

:func:`fit_design` fits a :class:`hierbench.data.ModelDesign` (binomial,
fractional logit for scores in [0, 1], or the cumulative-logit ordinal
model) by the Laplace approximation over all random effects jointly
(:mod:`._laplace`; ``glmer``'s ``nAGQ = 1`` and ``clmm``'s default), and
returns a :class:`MixedMLResult`: fixed effects with Wald intervals,
random-effect sds with profile or Wald intervals, the thresholds of an
ordinal fit, the dispersion of a fractional one, the conditional modes, and
what the reader's-scale summaries (:mod:`._effects`) need: the parameter
vector, its covariance and the design.

The fractional family is a quasi-likelihood: the Bernoulli log-likelihood of
a score in [0, 1] (whose mean model ``E[score] = expit(eta)`` is all it
assumes) divided by a dispersion ``phi``, estimated beforehand by moments
from the spread of the runs within each design row (when some row has two
runs or more; else from the Pearson residuals of a fit with ``phi = 1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
import xarray as xr
from scipy.special import expit

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import Result
from ..._base import interval_label
from ..._base import make_interval
from ..._base import warn_user
from ...data import ModelDesign
from ...data import Separation
from ...data import grade_names
from ...data import separating_direction
from .._kernels import normal_z
from .._kernels import one_blas_thread
from ._families import Binomial
from ._families import Fractional
from ._families import Ordinal
from ._families import log_gap_bounds
from ._laplace import LOG_SD_BOUNDS
from ._laplace import Laplace
from ._laplace import gradient_hessian
from ._optim import at_bounds
from ._optim import maximise
from ._optim import not_a_maximum
from ._optim import profile_interval
from ._optim import profile_notes
from ._optim import sd_at_zero
from ._optim import stop_reason
from ._optim import warn_not_a_maximum
from ._warnings import BoundaryEstimateWarning
from ._warnings import MLConvergenceWarning
from ._warnings import SeparatedAgentWarning

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["MixedMLResult", "ScalesFit", "fit_design"]

_BETA_BOUND = 40.0
#: smallest fractional dispersion used (runs identical within every row give 0: the rows'
#: means are then known exactly, which the quasi-likelihood cannot express)
_PHI_FLOOR = 1e-3


@dataclass(frozen=True, repr=False)
class ScalesFit(Result):
    """The fields and view every maximum-likelihood GLMM fit shares (crossed and formula).

    Private base: effects with their Wald intervals and standard errors, the random
    terms' sds with their intervals, and those sds as ``variance_components``.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    standard_error: xr.DataArray
    sd: xr.DataArray
    sd_ci: xr.DataArray

    @property
    def variance_components(self) -> xr.Dataset:
        """``estimate`` and ``ci`` of the sds along ``component`` (for ``side_by_side``)."""
        return xr.Dataset({"estimate": self.sd, "ci": self.sd_ci})

    def _frame_parts(self) -> list[tuple]:
        """The blocks of :meth:`to_frame`: ``(part, estimate, interval, standard error or None)``."""
        return [("fixed", self.estimate, self.ci, self.standard_error), ("sd", self.sd, self.sd_ci, None)]

    def _frame_attrs(self) -> dict:
        """The attrs of :meth:`to_frame`'s table."""
        return {"scale": "logit"}

    def to_frame(self) -> pd.DataFrame:
        """Every estimate of the fit, one row each, indexed by ``(part, term)``.

        ``part`` is ``"fixed"`` (the fixed effects, ``term`` their ``coef``; ``"ability"``
        for a crossed fit's agents, ``term`` the agent), ``"sd"`` (the random terms' sds,
        ``term`` the term, e.g. ``"1|task"``) or ``"threshold"`` (an ordinal fit's
        cut-points, ``"1|2"``); all on the logit scale. Columns ``estimate``, ``lower``,
        ``upper``, ``standard_error`` (fixed effects and abilities only), and each row's own
        ``ci_prob``, ``ci_kind`` and ``ci_detail`` (the parts' intervals are made differently).
        Column ``scale`` (``"logit"``) says so on every row, so that a printed, concatenated
        or saved table keeps it. ``attrs`` hold the scale and, for a formula's fit, the
        family, the deviance and the fractional dispersion; for a crossed fit the
        log-likelihood.
        """
        import pandas as pd

        frames = []
        for part, est, ci, se in self._frame_parts():
            terms = [str(t) for t in est[est.dims[0]].values]
            frames.append(pd.DataFrame({
                "part": part, "term": terms, "estimate": est.values,
                "lower": ci.sel(ci_bound="lower").values, "upper": ci.sel(ci_bound="upper").values,
                "standard_error": np.nan if se is None else se.values,
                "ci_prob": float(ci.attrs["ci_prob"]), "ci_kind": ci.attrs["ci_kind"], "ci_detail": ci.attrs.get("ci_detail", ""),
            }))  # fmt: skip
        df = pd.concat(frames, ignore_index=True).set_index(["part", "term"])
        df.attrs = self._frame_attrs()
        df["scale"] = df.attrs["scale"]
        return df

    def _sd_lines(self) -> list[str]:
        """One repr line per random term: its sd (logit scale) with its interval, the interval's level and kind."""
        lines = []
        for c in self.sd.component.values:
            lo, hi = self.sd_ci.sel(component=c).values
            name = str(c)[3:] if str(c).startswith("sd_") else c  # sd(task), not sd(sd_task)
            lines.append(f"  sd({name}): {float(self.sd.sel(component=c)):.4g} [{lo:.4g}, {hi:.4g}]")
        return [f"  random terms' sds (logit scale), {interval_label(self.sd_ci)} intervals:", *lines]


@dataclass(frozen=True, repr=False)
class MixedMLResult(ScalesFit):
    """Maximum-likelihood fit of a formula (:func:`hierbench.freq.fit_crossed_ml` with a formula).

    Attributes
    ----------
    estimate : DataArray (coef)
        Fixed effects on the logit scale (for an ordinal fit: a larger value
        moves grades up; there is no intercept, the thresholds hold it).
    ci : DataArray (coef, ci_bound)
        Wald intervals (kind ``normal``).
    standard_error : DataArray (coef)
    sd : DataArray (component)
        The random terms' sds (logit scale), one per term (``"1|task"``, ...).
    sd_ci : DataArray (component, ci_bound)
        Profile-likelihood (kind ``profile``) or Wald-on-the-log-scale (kind
        ``normal``) intervals.
    thresholds : DataArray (threshold) or None
        Ordinal cut-points ``theta_k`` (``P(grade <= k) = expit(theta_k - eta)``),
        with ``thresholds_ci``.
    dispersion : float
        ``phi`` of the fractional family (1 for the others).
    random_effects : dict
        Term -> DataArray of conditional modes (``sigma v``) over that term's
        levels, their conditional sds as the coord ``conditional_sd``.
    loglik : float
        The Laplace log-likelihood (binomial coefficients included; for the
        fractional family the quasi-log-likelihood over ``phi``).
    deviance : float
        ``-2 loglik``.
    converged : bool
    n_evaluations : int
    params : ndarray
        ``(beta, log sd, threshold parameters)``, the vector ``vcov`` refers to.
    vcov : DataArray (param, param_b)
        Inverse observed information of ``params`` (finite differences of
        the analytic gradient).
    design : ModelDesign
    """

    thresholds: xr.DataArray | None
    thresholds_ci: xr.DataArray | None
    dispersion: float
    random_effects: dict
    loglik: float
    deviance: float
    converged: bool
    n_evaluations: int
    params: np.ndarray
    vcov: xr.DataArray
    design: Any = field(repr=False)
    options: dict = field(default_factory=dict)

    _dataset_exclude: ClassVar[tuple[str, ...]] = ("vcov",)
    _not_saved: ClassVar[dict[str, str]] = {
        "design": "the parsed formula with its design matrices (a ModelDesign); its formula and family are the "
                  "attrs formula and family",
        "params": "the optimiser's vector (fixed effects, log sds, threshold parameters) that vcov (left out too) "
                  "refers to; its values are estimate, sd and thresholds, on their own scales",
        "random_effects": "saved as one variable re_<term> per random term over the dim re_<term>_level, its "
                          "conditional sds the coordinate re_<term>_conditional_sd",
    }

    def to_dataset(self) -> xr.Dataset:
        """The fields (``Result.to_dataset``), the formula and family as attrs, a variable per random term.

        Each term's conditional modes are the variable ``re_<term>`` (``re_1|task``) over
        ``re_<term>_level``, their conditional sds its coordinate ``re_<term>_conditional_sd``.
        """
        ds = super().to_dataset()
        ds.attrs.update(formula=self.design.formula, family=self.design.family)
        for term, modes in self.random_effects.items():
            name = f"re_{term}"
            ds[name] = modes.rename({c: f"{name}_{c}" for c in modes.coords}).rename(name)
        return ds

    def _frame_parts(self) -> list[tuple]:
        parts = super()._frame_parts()
        if self.thresholds is not None:
            parts.append(("threshold", self.thresholds, self.thresholds_ci, None))
        return parts

    def _frame_attrs(self) -> dict:
        return {"family": self.design.family, "scale": "logit", "deviance": self.deviance, "dispersion": self.dispersion}

    def _repr_lines(self) -> list[str]:
        d = self.design
        lines = [f"MixedMLResult: {d.formula}  [{d.family}, Laplace]"]
        if self.estimate.size:
            lines += [f"  fixed effects (logit scale), {interval_label(self.ci)} intervals:", *self._cell_lines()]
        else:  # an ordinal formula without covariates: its thresholds hold the intercept
            lines.append("  fixed effects: none (the thresholds hold the intercept)")
        lines += self._sd_lines()
        if self.thresholds is not None:
            lines.append(f"  thresholds (logit scale), {interval_label(self.thresholds_ci)} intervals:")
            for k, v in zip(self.thresholds.threshold.values, self.thresholds.values, strict=True):
                lo, hi = self.thresholds_ci.sel(threshold=k).values
                lines.append(f"  {k}: {v:.4g} [{lo:.4g}, {hi:.4g}]")
        lines.append(f"  deviance {self.deviance:.2f}" + ("" if self.converged else "  (NOT converged)"))
        return lines


# --------------------------------------------------------------------------- pieces


def random_matrix(design: ModelDesign) -> tuple[sp.csr_matrix, np.ndarray]:
    """``Z`` (rows x levels, one column per level of each term) and the term of each column."""
    R = design.X.shape[0]
    blocks, term = [], []
    for k, t in enumerate(design.random):
        L = t.levels.size
        blocks.append(sp.csr_matrix((t.slope, (np.arange(R), t.codes)), shape=(R, L)))
        term += [k] * L
    Z = sp.hstack(blocks).tocsr() if blocks else sp.csr_matrix((R, 0))
    return Z, np.asarray(term, dtype=np.intp)


def family_of(design: ModelDesign, phi: float = 1.0):
    """The likelihood object of a design's family (``phi``: the fractional dispersion)."""
    if design.family == "binomial":
        return Binomial(design.y, design.n)
    if design.family == "fractional":
        return Fractional(design.y, design.n, scale=phi)
    gc = design.grade_counts
    rows, cats = np.nonzero(gc)
    return Ordinal(rows.astype(np.intp), cats.astype(np.intp), gc[rows, cats], gc.shape[0], gc.shape[1])


def moment_dispersion(design: ModelDesign) -> float | None:
    """``phi`` from the spread of runs within design rows (None when no row has two runs).

    ``E[SS_r] = (n_r - 1) phi mu_r (1 - mu_r)`` and ``mu (1 - mu)`` is
    estimated without bias by ``m (1 - m) + SS / (n (n - 1))``; the ratio of
    the sums over rows is the estimate.
    """
    n, ss = design.n, design.ss
    ok = n >= 2
    if not ok.any():
        return None
    m = design.y[ok] / n[ok]
    den = ((n[ok] - 1) * (m * (1 - m) + ss[ok] / (n[ok] * (n[ok] - 1)))).sum()
    return float(ss[ok].sum() / den) if den > 0 else None


def _start(design: ModelDesign, fam) -> np.ndarray:
    """Starting ``beta`` by weighted least squares on the working logits; sds 1; family extras."""
    X = design.X
    beta = np.zeros(X.shape[1])
    if X.shape[1] and design.family != "ordinal":
        z, w = fam.working()
        sw = np.sqrt(w)
        beta = np.linalg.lstsq(X * sw[:, None], z * sw, rcond=None)[0]
    return np.concatenate([beta, np.zeros(len(design.random)), fam.start_extra()])


def _bounds(design: ModelDesign, fam) -> list[tuple[float, float]]:
    b = [(-_BETA_BOUND, _BETA_BOUND)] * design.X.shape[1] + [LOG_SD_BOUNDS] * len(design.random)
    return b + (log_gap_bounds(fam.n_extra) if fam.n_extra else [])


def _maximise_design(design: ModelDesign, phi: float) -> tuple[Laplace, np.ndarray, float, bool, str, list]:
    fam = family_of(design, phi)
    Z, term = random_matrix(design)
    lik = Laplace(design.X, Z, term, fam)
    bounds = _bounds(design, fam)
    x, ll, ok, msg = maximise(lik, _start(design, fam), np.ones(lik.P, bool), bounds)
    return lik, x, ll, ok, msg, bounds


def _pearson_dispersion(lik: Laplace, x: np.ndarray, design: ModelDesign) -> float:
    """Pearson chi-square at the conditional modes over (rows - fixed effects)."""
    mu = expit(lik.mode(x)["eta"])
    chi2 = ((design.y - design.n * mu) ** 2 / (design.n * mu * (1 - mu))).sum()
    return float(chi2 / max(design.X.shape[0] - design.X.shape[1], 1))


def _covariance(lik: Laplace, x: np.ndarray, bounds: list) -> np.ndarray:
    """Inverse observed information over the coordinates off their bounds (NaN elsewhere)."""
    return _information(lik, x, bounds)[0]


def _information(lik: Laplace, x: np.ndarray, bounds: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(V, H, free)``: the covariance of ``_covariance``, the Hessian it inverts and its coordinates."""
    at_lo, at_hi = at_bounds(x, bounds)
    free = ~at_lo & ~at_hi
    H = gradient_hessian(lik, x, free)
    V = np.full((x.size, x.size), np.nan)
    idx = np.flatnonzero(free)
    try:
        V[np.ix_(idx, idx)] = np.linalg.inv(-H[np.ix_(idx, idx)])
    except np.linalg.LinAlgError:
        pass
    return V, H, free


#: what to do about a formula fit that is not a maximum
_NOT_MAX_ADVICE = (
    "This happens when the likelihood keeps rising towards a boundary, e.g. a random term's sd towards "
    "infinity when each of its levels is all successes or all failures: look for such levels, or fit the "
    "Bayesian model, whose priors keep such terms finite"
)


def _checked_covariance(
    lik: Laplace, x: np.ndarray, bounds: list, design: ModelDesign
) -> tuple[np.ndarray, bool]:
    """``_covariance``, all NaN (and False) when the fit is not a maximum (``not_a_maximum``, warned).

    Checked over the coordinates off their bounds, less the sds at zero (flat there).
    """
    V, H, free = _information(lik, x, bounds)
    p, K = design.X.shape[1], len(design.random)
    check = free.copy()
    check[p : p + K] &= ~sd_at_zero(x[p : p + K])
    names = [*map(str, design.coef), *(f"log sd({t.name})" for t in design.random)]
    names += [f"threshold parameter {i}" for i in range(x.size - len(names))]
    why = not_a_maximum(H, V, np.flatnonzero(check), names)
    if not why:
        return V, True
    warn_not_a_maximum(why, _NOT_MAX_ADVICE)
    return np.full_like(V, np.nan), False


def _sd_intervals(
    lik: Laplace, x: np.ndarray, ll: float, V: np.ndarray, bounds: list, design: ModelDesign,
    prob: float, intervals: str,
) -> tuple[np.ndarray, np.ndarray, str, str, tuple[np.ndarray, bool]]:
    """Profile or Wald-on-the-log-scale intervals of the random-effect sds.

    Also, from the profile (``profile_notes``): the sds whose likelihood rises to the upper
    bound (at infinity) and whether some profile value rose above the fit's maximum.
    """
    p, K = design.X.shape[1], len(design.random)
    sd = np.exp(x[p : p + K])
    se_log = np.sqrt(np.clip(np.diag(V)[p : p + K], 0, None))
    at_zero = sd_at_zero(x[p : p + K])
    if intervals == "profile":
        lo, hi, infos = np.full(K, np.nan), np.full(K, np.nan), []
        infinite = at_bounds(x, bounds)[1][p : p + K]
        for k in range(K):
            infos.append({})
            if not infinite[k]:  # reported as NaN (_infinite)
                lo[k], hi[k] = profile_interval(lik, x, ll, p + k, bounds, prob, se_log[k], infos[k])
        notes, rising, above = profile_notes([f"sd({t.name})" for t in design.random], infos, infinite,
                                             "check it on a grid")  # fmt: skip
        detail = "profile likelihood (Laplace), deviance within the chi-square(1) quantile" + notes
        return lo, hi, "profile", detail, (rising, above)
    lo, hi = wald_sd_interval(sd, se_log, at_zero, prob)
    detail = "Wald on the log scale (inverse observed information)" + at_zero_words(at_zero)
    return lo, hi, "normal", detail, (np.zeros(K, bool), False)


def wald_sd_interval(sd: np.ndarray, se_log: np.ndarray, at_zero: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Wald interval of sds on the log scale; an sd at zero gets ``[0, NaN]`` (the log scale has no bound there)."""
    z = normal_z(prob)
    with np.errstate(over="ignore", invalid="ignore"):
        lo = np.where(at_zero, 0.0, sd * np.exp(-z * se_log))
        hi = np.where(at_zero, np.nan, sd * np.exp(z * se_log))
    return lo, hi


def at_zero_words(at_zero: np.ndarray) -> str:
    """The ``ci_detail`` suffix of Wald intervals when some sd is at zero (none: empty)."""
    if not np.any(at_zero):
        return ""
    return "; an sd at zero: [0, NaN] (the log scale has no Wald bound there; the profile interval has one)"


def _modes(lik: Laplace, x: np.ndarray, design: ModelDesign) -> dict[str, xr.DataArray]:
    """Conditional modes ``sigma v`` per term, with their conditional sds as the coord ``conditional_sd``."""
    m = lik.mode(x)
    eff = m["lam"] * m["v"]
    csd = lik.conditional_sd(x)
    out, start = {}, 0
    for t in design.random:
        L = t.levels.size
        out[t.name] = xr.DataArray(
            eff[start : start + L], dims="level",
            coords={"level": t.levels, "conditional_sd": ("level", csd[start : start + L])}, name=t.name,
        )  # fmt: skip
        start += L
    return out


def _dispersion(design: ModelDesign) -> tuple[float, Any, str]:
    """``(phi, fit at phi or None, how)`` for the fractional family; 1 for the others."""
    if design.family != "fractional":
        return 1.0, None, "none (the family's variance is fixed)"
    phi = moment_dispersion(design)
    if phi is not None and phi < _PHI_FLOOR:
        return _PHI_FLOOR, None, f"moments of the runs within each design row gave {phi:.3g}, floored at {_PHI_FLOOR}"
    if phi is not None:
        return phi, None, "moments of the runs within each design row"
    fit1 = _maximise_design(design, 1.0)
    return _pearson_dispersion(fit1[0], fit1[1], design), fit1, "Pearson chi-square at phi = 1 (one run per row)"


#: what "at one end of the scale" is in each family's words (the separation warning)
_ENDS = {"binomial": "every run failed, or every run succeeded,", "fractional": "every score 0, or every score 1,",
         "ordinal": "every grade the lowest, or every grade the highest,"}


def _without_separated(
    design: ModelDesign, warn: bool = True, sep: Separation | None = None
) -> tuple[ModelDesign, np.ndarray, list[str]]:
    """The design fitted in the limit along a separating direction (``hierbench.data``'s ``separation``).

    The rows the direction moves have likelihood 1 in that limit (all at one end of the scale):
    they are left out, as the crossed fit leaves out a separated agent's cells, and so are the
    separated coefficients' columns, whose estimates are infinite (reported as NaN). Where those
    columns are not zero on the rows left, their combinations the rows still identify are kept
    as nuisance columns, so that the other estimates are those of the limit. Returns the reduced
    design, the position of each of the full design's parameters in the reduced fit's (-1: a
    separated coefficient) and the separated coefficients' names. Ordinal grades that split at
    a cut between two middle grades (``sep.cuts``) are not reduced: the limit keeps every row
    (a run's probability tends to one cut's share, not to 1), so the design is fitted whole and
    :func:`fit_design` reports the coefficients and thresholds at infinity as NaN.
    """
    sep = separating_direction(design) if sep is None else sep
    names, moved = sep.names, sep.moved
    P = design.X.shape[1] + len(design.random) + (design.categories.size - 1 if design.family == "ordinal" else 0)
    if not names:
        return design, np.arange(P), []
    if sep.cuts:
        if warn:
            _warn_cut(sep, design)
        return design, np.arange(P), list(names)
    rows, sep_cols = ~moved, np.isin(design.coef, names)
    if not rows.any():
        raise HierbenchError(
            f"`data`: the data separate {', '.join(names)} along a direction that moves every design row: "
            "no maximum likelihood fit exists"
        )
    S = design.X[rows][:, sep_cols]
    u, sv, _ = np.linalg.svd(S, full_matrices=False) if S.size else (S, np.zeros(0), None)
    nuisance = u[:, : int((sv > 1e-9 * max(1.0, sv.max(initial=0.0))).sum())]
    X = np.hstack([design.X[rows][:, ~sep_cols], nuisance])
    gc = None if design.grade_counts is None else design.grade_counts[rows]
    reduced = replace(
        design, X=X, coef=[*np.asarray(design.coef)[~sep_cols].tolist(), *(f"nuisance[{j}]" for j in range(nuisance.shape[1]))],
        y=design.y[rows], n=design.n[rows], ss=design.ss[rows], frame=design.frame[rows].reset_index(drop=True),
        agent_index=design.agent_index[rows], task_index=design.task_index[rows], grade_counts=gc,
        random=[replace(t, codes=t.codes[rows], slope=t.slope[rows]) for t in design.random],
    )  # fmt: skip
    beta_at = np.full(sep_cols.size, -1)
    beta_at[~sep_cols] = np.arange(int((~sep_cols).sum()))
    back = np.concatenate([beta_at, X.shape[1] + np.arange(P - sep_cols.size)])
    if warn:
        warn_user(
            f"fit_crossed_ml: the data separate {', '.join(names)} ({_ENDS[design.family]} on the design rows "
            "of a direction of these coefficients, so the likelihood keeps rising along it): their maximum "
            f"likelihood estimates are infinite, reported as NaN with NaN intervals, and the {int(moved.sum())} "
            "design rows that direction moves, which add nothing to the likelihood in that limit, are left out "
            "of the fit (the other estimates are the fit in that limit)",
            SeparatedAgentWarning,
        )
    return reduced, back, names


def _threshold_names(design: ModelDesign) -> list[str]:
    """An ordinal design's thresholds as the fit names them (``"1|2"``; grades written as words by their labels)."""
    cats = grade_names(design.categories, design.labels)
    return [f"{cats[i]}|{cats[i + 1]}" for i in range(len(cats) - 1)]


def _warn_cut(sep: Separation, design: ModelDesign) -> None:
    """The separation warning of ordinal grades that split at a cut between two middle grades."""
    moving = [n for n, m in zip(_threshold_names(design), sep.thresholds, strict=True) if m]
    warn_user(
        f"fit_crossed_ml: the data separate {', '.join(sep.names)} at the cut(s) {', '.join(sep.cuts)} between "
        "grades: along a direction of these coefficients"
        + (f" and of the thresholds {', '.join(moving)}" if moving else "")
        + " no run's grade becomes less likely and some become more likely, so the likelihood keeps rising "
        "(the design rows' grades split cleanly at those cuts): their maximum likelihood estimates"
        + (", and those thresholds," if moving else "")
        + " are infinite, reported as NaN with NaN intervals; the other estimates are the fit where the "
        f"optimiser stopped along that direction (within +-{_BETA_BOUND:g} logits), near that limit. Merge the "
        "grades on either side of such a cut, or fit the Bayesian model (its priors hold the coefficients finite)",
        SeparatedAgentWarning,
    )


def _at_bounds(x: np.ndarray, bounds: list, design: ModelDesign) -> tuple[np.ndarray, np.ndarray]:
    """Per parameter of a fit: at an optimiser bound that means infinity, and (log gaps) at zero.

    A fixed effect at +-``_BETA_BOUND``, a random term's sd at its upper bound, the first threshold
    at +-40 or a threshold gap at its upper bound: the maximum lies beyond the box (the MLE is at
    infinity, or the likelihood is flat there). A gap at its lower bound: two thresholds coincide.
    """
    p, K = design.X.shape[1], len(design.random)
    at_lo, at_hi = at_bounds(x, bounds)
    inf = at_hi.copy()
    inf[:p] |= at_lo[:p]
    inf[p + K : p + K + 1] |= at_lo[p + K : p + K + 1]  # the first threshold; the sds' lower end is zero
    zero_gap = np.zeros(x.size, bool)
    zero_gap[p + K + 1 :] = at_lo[p + K + 1 :]
    return inf, zero_gap


def _bound_names(x: np.ndarray, bounds: list, design: ModelDesign) -> list[str]:
    """The reduced fit's parameters at an optimiser bound, named (for the convergence warning)."""
    at_lo, at_hi = at_bounds(x, bounds)
    names = [*map(str, design.coef), *(f"sd({t.name})" for t in design.random)]
    names += [f"threshold parameter {i}" for i in range(x.size - len(names))]
    return [n for n, f in zip(names, at_lo | at_hi, strict=True) if f]


def _expanded(x: np.ndarray, V: np.ndarray, back: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The reduced fit's parameters and covariance on the full design's layout, NaN where separated."""
    if np.array_equal(back, np.arange(x.size)):
        return x, V
    ok = back >= 0
    xf = np.full(back.size, np.nan)
    xf[ok] = x[back[ok]]
    Vf = np.full((back.size, back.size), np.nan)
    Vf[np.ix_(ok, ok)] = V[np.ix_(back[ok], back[ok])]
    return xf, Vf


def fit_design(
    design: ModelDesign, *, prob: float = DEFAULT_PROB, intervals: str = "profile"
) -> MixedMLResult:
    """Fit a resolved design by the Laplace approximation (see :func:`hierbench.freq.fit_crossed_ml`).

    Fixed effects along which the data separate (``hierbench.data``'s ``separation``) are NaN,
    with a ``SeparatedAgentWarning``; the rest is the fit in that limit. Any other estimate that
    ends at the optimiser's bound (its MLE at infinity, or not identified) is NaN too, with a
    ``SeparatedAgentWarning`` naming it and the bound, and listed in ``options["at_bound"]``;
    so is an sd whose profile likelihood rises to its upper bound. A fit whose observed
    information is not positive definite (over the estimates off their bounds, sds at zero
    aside), or whose profile finds a higher likelihood, is not a maximum: ``converged`` False
    and, for the former, standard errors and covariance NaN (warned).
    """
    full = design
    sep = separating_direction(full)
    design, back, separated = _without_separated(full, sep=sep)
    with one_blas_thread():
        phi, _, how = _dispersion(design)
        lik, xr_, ll, ok, msg, bounds = _maximise_design(design, phi)
        if not ok:
            warn_user(f"fit_crossed_ml: the optimiser did not converge ({stop_reason(msg, _bound_names(xr_, bounds, design))})",
                      MLConvergenceWarning)  # fmt: skip
        Vr, is_max = _checked_covariance(lik, xr_, bounds, design)
        ok = ok and is_max
        lo, hi, kind, detail, (rising, above) = _sd_intervals(lik, xr_, ll, Vr, bounds, design, prob, intervals)
        ok = ok and not above
        modes = _modes(lik, xr_, design)
    x, V = (a.copy() for a in _expanded(xr_, Vr, back))
    p, K = full.X.shape[1], len(full.random)
    infinite, at_bound = _infinite(xr_, bounds, design, back, full, sep)
    infinite[p : p + K] |= rising  # the profile rises to the sd's upper bound (warned by profile_notes)
    x[infinite] = np.nan
    V[infinite, :] = V[:, infinite] = np.nan
    comp = [t.name for t in full.random]
    for k in np.flatnonzero(sd_at_zero(x[p : p + K])):
        warn_user(f"sd of ({comp[k]}) is estimated at zero; its interval is one-sided",
                      BoundaryEstimateWarning)  # fmt: skip
    z = normal_z(prob)
    se = np.sqrt(np.clip(np.diag(V), 0, None))
    beta = xr.DataArray(x[:p], dims="coef", coords={"coef": full.coef}, name="estimate")
    beta.attrs = {"scale": "logit", "family": full.family}
    nan_why = "; NaN: separated by the data (infinite estimate)" if separated else ""
    if infinite[:p].any() and not set(np.asarray(full.coef)[infinite[:p]]) <= set(separated):
        nan_why += "; NaN: at the optimiser's bound (MLE at infinity or not identified)"
    ci = make_interval(beta - z * se[:p], beta + z * se[:p], prob=prob, kind="normal",
                       detail="Wald: estimate +- z * SE (inverse observed information)" + nan_why,
                       warn_zero_width=False)  # fmt: skip
    sd_da = xr.DataArray(np.exp(x[p : p + K]), dims="component", coords={"component": comp}, name="sd")
    sd_ci = make_interval(np.where(infinite[p : p + K], np.nan, lo), np.where(infinite[p : p + K], np.nan, hi),
                          prob=prob, kind=kind, detail=detail, template=sd_da, warn_zero_width=False)  # fmt: skip
    th, th_ci = _thresholds(lik, xr_, Vr, design, prob, infinite[p + K :])
    names = [*full.coef, *(f"log_sd[{c}]" for c in comp), *(f"threshold_param[{i}]" for i in range(lik.family.n_extra))]
    return MixedMLResult(
        estimate=beta, ci=ci,
        standard_error=xr.DataArray(se[:p], dims="coef", coords={"coef": full.coef}, name="standard_error"),
        sd=sd_da, sd_ci=sd_ci, thresholds=th, thresholds_ci=th_ci, dispersion=float(phi),
        random_effects=modes, loglik=float(ll), deviance=float(-2 * ll), converged=bool(ok),
        n_evaluations=int(lik.n_eval), params=x.copy(),
        vcov=xr.DataArray(V, dims=("param", "param_b"), coords={"param": names, "param_b": names}),
        design=full, options={"intervals": intervals, "likelihood": "Laplace", "dispersion": how, "separated": separated,
                              "separated_cuts": list(sep.cuts), "at_bound": at_bound},
    )  # fmt: skip


def _infinite(
    x: np.ndarray, bounds: list, design: ModelDesign, back: np.ndarray, full: ModelDesign, sep: Separation
) -> tuple[np.ndarray, list[str]]:
    """The full design's parameters at infinity (NaN in the fit), and the estimates that ended at a bound.

    A separation at an ordinal cut (``sep.cuts``) puts its coefficients and the thresholds that move
    with them at infinity. Any other estimate at an optimiser's bound (``_at_bounds``) is warned of,
    naming it and the bound, and is NaN too, except a threshold gap at zero (two thresholds that
    coincide: finite, warned of). Returns the mask and the names of what ended at a bound.
    """
    p, K = full.X.shape[1], len(full.random)
    infinite = np.zeros(back.size, bool)
    if sep.cuts:
        infinite[:p] = np.isin(full.coef, sep.names)
        infinite[p + K :] = sep.thresholds
    inf_r, gap_r = _at_bounds(x, bounds, design)
    ok = back >= 0
    inf, gap = np.zeros(back.size, bool), np.zeros(back.size, bool)
    inf[ok], gap[ok] = inf_r[back[ok]], gap_r[back[ok]]
    ths = _threshold_names(full) if full.family == "ordinal" else []
    label = [*map(str, full.coef), *(f"sd({t.name})" for t in full.random), *(f"threshold {t}" for t in ths)]
    where = [_bound_words(label[i], x[back[i]], i - p, K) for i in np.flatnonzero(inf & ~infinite)]
    where += [f"{c} at {v:+.4g}" for c, v, f in zip(design.coef, x, inf_r, strict=False)
              if f and str(c).startswith("nuisance[")]  # fmt: skip
    if where:
        warn_beyond_bound(
            where,
            f"fixed effects and the first threshold +-{_BETA_BOUND:g} logits, sds {np.exp(LOG_SD_BOUNDS[1]):g}, "
            f"threshold gaps {np.exp(log_gap_bounds(2)[1][1]):g}",
            "Look for grades or outcomes that the design's rows split cleanly, or a term the data cannot identify; "
            "the Bayesian fit's priors keep such terms finite",
        )
    for i in np.flatnonzero(gap):
        j = i - p - K  # the gap below threshold j: thresholds j - 1 and j coincide
        warn_user(
            f"fit_crossed_ml: thresholds {ths[j - 1]} and {ths[j]} coincide (their gap ended at the optimiser's "
            f"lower bound, {np.exp(log_gap_bounds(2)[1][0]):g}): the grade between them gets no probability at "
            "the maximum; merge it with a neighbour",
            BoundaryEstimateWarning,
        )
    return infinite | inf, [label[i] for i in np.flatnonzero((inf & ~infinite) | gap)]


def warn_beyond_bound(where: list[str], bounds: str, advice: str) -> None:
    """The warning of estimates that ended at an optimiser bound meaning infinity (both engines): NaN, named."""
    warn_user(
        f"fit_crossed_ml: {', '.join(where)} ended at the optimiser's bound ({bounds}): the maximum likelihood "
        "estimate lies beyond it, at infinity, or is not identified (the likelihood still rises, or is flat, "
        "there), so it is reported as NaN with a NaN interval and the other estimates are the fit at that "
        f"bound. {advice}",
        SeparatedAgentWarning,
    )


def _bound_words(label: str, value: float, k: int, K: int) -> str:
    """An estimate at its bound in the warning's words: ``k`` its place after the fixed effects, ``K`` the sds."""
    if k < 0 or k == K:  # a fixed effect; the first threshold
        return f"{label} at {value:+.4g}"
    if k < K:
        return f"{label} at {np.exp(value):.4g}"
    return f"{label} (its gap to the threshold below at {np.exp(value):.4g})"


def _thresholds(
    lik: Laplace, x: np.ndarray, V: np.ndarray, design: ModelDesign, prob: float, infinite: np.ndarray
) -> tuple[xr.DataArray | None, xr.DataArray | None]:
    """Ordinal thresholds and Wald intervals (delta method through the gap parameterisation); NaN where ``infinite``."""
    fam = lik.family
    if not fam.n_extra:
        return None, None
    p, K = design.X.shape[1], len(design.random)
    psi = x[p + K :]
    th = np.where(infinite, np.nan, fam.thresholds(psi))
    J = np.tril(np.ones((psi.size, psi.size))) * np.concatenate([[1.0], np.exp(psi[1:])])[None, :]
    Vp = V[p + K :, p + K :]
    se = np.sqrt(np.clip(np.diag(J @ Vp @ J.T), 0, None))
    # named as the Bayesian fit names them: grades written as words by their labels ("no|perhaps")
    da = xr.DataArray(th, dims="threshold", coords={"threshold": _threshold_names(design)}, name="thresholds")
    z = normal_z(prob)
    ci = make_interval(da - z * se, da + z * se, prob=prob, kind="normal",
                       detail="Wald, delta method through the threshold gaps", warn_zero_width=False)  # fmt: skip
    return da, ci

