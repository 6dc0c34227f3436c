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
from ...data import grade_names
from ...data import separation
from .._kernels import normal_z
from .._kernels import one_blas_thread
from ._families import Binomial
from ._families import Fractional
from ._families import Ordinal
from ._families import log_gap_bounds
from ._laplace import LOG_SD_BOUNDS
from ._laplace import Laplace
from ._laplace import gradient_hessian
from ._optim import maximise
from ._optim import profile_interval
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
        ``attrs`` hold the scale and, for a formula's fit, the family, the deviance and the
        fractional dispersion; for a crossed fit the log-likelihood.
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
    lo = np.array([b[0] for b in bounds])
    hi = np.array([b[1] for b in bounds])
    free = (x > lo + 1e-3) & (x < hi - 1e-3)
    H = gradient_hessian(lik, x, free)
    V = np.full((x.size, x.size), np.nan)
    idx = np.flatnonzero(free)
    try:
        V[np.ix_(idx, idx)] = np.linalg.inv(-H[np.ix_(idx, idx)])
    except np.linalg.LinAlgError:
        pass
    return V


def _sd_intervals(
    lik: Laplace, x: np.ndarray, ll: float, V: np.ndarray, bounds: list, design: ModelDesign,
    prob: float, intervals: str,
) -> tuple[np.ndarray, np.ndarray, str, str]:
    """Profile or Wald-on-the-log-scale intervals of the random-effect sds."""
    p, K = design.X.shape[1], len(design.random)
    sd = np.exp(x[p : p + K])
    se_log = np.sqrt(np.clip(np.diag(V)[p : p + K], 0, None))
    at_zero = x[p : p + K] <= LOG_SD_BOUNDS[0] + 1e-3
    if intervals == "profile":
        lo, hi = np.empty(K), np.empty(K)
        for k in range(K):
            lo[k], hi[k] = profile_interval(lik, x, ll, p + k, bounds, prob, se_log[k])
        return lo, hi, "profile", "profile likelihood (Laplace), deviance within the chi-square(1) quantile"
    z = normal_z(prob)
    with np.errstate(over="ignore", invalid="ignore"):
        lo = np.where(at_zero, 0.0, sd * np.exp(-z * se_log))
        hi = np.where(at_zero, np.nan, sd * np.exp(z * se_log))
    return lo, hi, "normal", "Wald on the log scale (inverse observed information)"


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


def _without_separated(design: ModelDesign, warn: bool = True) -> tuple[ModelDesign, np.ndarray, list[str]]:
    """The design fitted in the limit along a separating direction (``hierbench.data``'s ``separation``).

    The rows the direction moves have likelihood 1 in that limit (all at one end of the scale):
    they are left out, as the crossed fit leaves out a separated agent's cells, and so are the
    separated coefficients' columns, whose estimates are infinite (reported as NaN). Where those
    columns are not zero on the rows left, their combinations the rows still identify are kept
    as nuisance columns, so that the other estimates are those of the limit. Returns the reduced
    design, the position of each of the full design's parameters in the reduced fit's (-1: a
    separated coefficient) and the separated coefficients' names.
    """
    names, moved = separation(design)
    P = design.X.shape[1] + len(design.random) + (design.categories.size - 1 if design.family == "ordinal" else 0)
    if not names:
        return design, np.arange(P), []
    rows, sep = ~moved, np.isin(design.coef, names)
    if not rows.any():
        raise HierbenchError(
            f"`data`: the data separate {', '.join(names)} along a direction that moves every design row: "
            "no maximum likelihood fit exists"
        )
    S = design.X[rows][:, sep]
    u, sv, _ = np.linalg.svd(S, full_matrices=False) if S.size else (S, np.zeros(0), None)
    nuisance = u[:, : int((sv > 1e-9 * max(1.0, sv.max(initial=0.0))).sum())]
    X = np.hstack([design.X[rows][:, ~sep], nuisance])
    gc = None if design.grade_counts is None else design.grade_counts[rows]
    reduced = replace(
        design, X=X, coef=[*np.asarray(design.coef)[~sep].tolist(), *(f"nuisance[{j}]" for j in range(nuisance.shape[1]))],
        y=design.y[rows], n=design.n[rows], ss=design.ss[rows], frame=design.frame[rows].reset_index(drop=True),
        agent_index=design.agent_index[rows], task_index=design.task_index[rows], grade_counts=gc,
        random=[replace(t, codes=t.codes[rows], slope=t.slope[rows]) for t in design.random],
    )  # fmt: skip
    beta_at = np.full(sep.size, -1)
    beta_at[~sep] = np.arange(int((~sep).sum()))
    back = np.concatenate([beta_at, X.shape[1] + np.arange(P - sep.size)])
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
    with a ``SeparatedAgentWarning``; the rest is the fit in that limit.
    """
    full = design
    design, back, separated = _without_separated(full)
    with one_blas_thread():
        phi, _, how = _dispersion(design)
        lik, xr_, ll, ok, msg, bounds = _maximise_design(design, phi)
        Vr = _covariance(lik, xr_, bounds)
        lo, hi, kind, detail = _sd_intervals(lik, xr_, ll, Vr, bounds, design, prob, intervals)
        modes = _modes(lik, xr_, design)
    if not ok:
        warn_user(f"fit_crossed_ml: the optimiser did not converge ({msg})", MLConvergenceWarning)
    x, V = _expanded(xr_, Vr, back)
    p, K = full.X.shape[1], len(full.random)
    comp = [t.name for t in full.random]
    for k in np.flatnonzero(x[p : p + K] <= LOG_SD_BOUNDS[0] + 1e-3):
        warn_user(f"sd of ({comp[k]}) is estimated at zero; its interval is one-sided",
                      BoundaryEstimateWarning)  # fmt: skip
    z = normal_z(prob)
    se = np.sqrt(np.clip(np.diag(V), 0, None))
    beta = xr.DataArray(x[:p], dims="coef", coords={"coef": full.coef}, name="estimate")
    beta.attrs = {"scale": "logit", "family": full.family}
    ci = make_interval(beta - z * se[:p], beta + z * se[:p], prob=prob, kind="normal",
                       detail="Wald: estimate +- z * SE (inverse observed information)"
                       + ("; NaN: separated by the data (infinite estimate)" if separated else ""),
                       warn_zero_width=False)  # fmt: skip
    sd_da = xr.DataArray(np.exp(x[p : p + K]), dims="component", coords={"component": comp}, name="sd")
    sd_ci = make_interval(lo, hi, prob=prob, kind=kind, detail=detail, template=sd_da, warn_zero_width=False)
    th, th_ci = _thresholds(lik, xr_, Vr, design, prob)
    names = [*full.coef, *(f"log_sd[{c}]" for c in comp), *(f"threshold_param[{i}]" for i in range(lik.family.n_extra))]
    return MixedMLResult(
        estimate=beta, ci=ci,
        standard_error=xr.DataArray(se[:p], dims="coef", coords={"coef": full.coef}, name="standard_error"),
        sd=sd_da, sd_ci=sd_ci, thresholds=th, thresholds_ci=th_ci, dispersion=float(phi),
        random_effects=modes, loglik=float(ll), deviance=float(-2 * ll), converged=bool(ok),
        n_evaluations=int(lik.n_eval), params=x.copy(),
        vcov=xr.DataArray(V, dims=("param", "param_b"), coords={"param": names, "param_b": names}),
        design=full, options={"intervals": intervals, "likelihood": "Laplace", "dispersion": how, "separated": separated},
    )  # fmt: skip


def _thresholds(
    lik: Laplace, x: np.ndarray, V: np.ndarray, design: ModelDesign, prob: float
) -> tuple[xr.DataArray | None, xr.DataArray | None]:
    """Ordinal thresholds and Wald intervals (delta method through the gap parameterisation)."""
    fam = lik.family
    if not fam.n_extra:
        return None, None
    p, K = design.X.shape[1], len(design.random)
    psi = x[p + K :]
    th = fam.thresholds(psi)
    J = np.tril(np.ones((psi.size, psi.size))) * np.concatenate([[1.0], np.exp(psi[1:])])[None, :]
    Vp = V[p + K :, p + K :]
    se = np.sqrt(np.clip(np.diag(J @ Vp @ J.T), 0, None))
    # named as the Bayesian fit names them: grades written as words by their labels ("no|perhaps")
    cats = grade_names(design.categories, design.labels)
    lab = [f"{cats[i]}|{cats[i + 1]}" for i in range(th.size)]
    da = xr.DataArray(th, dims="threshold", coords={"threshold": lab}, name="thresholds")
    z = normal_z(prob)
    ci = make_interval(da - z * se, da + z * se, prob=prob, kind="normal",
                       detail="Wald, delta method through the threshold gaps", warn_zero_width=False)  # fmt: skip
    return da, ci

