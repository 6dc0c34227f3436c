"""Bradley-Terry abilities by maximum likelihood, with bootstrap (or Wald) and rank intervals.

The pairwise wing's other jobs: win rates and online Elo in :mod:`._winrate`,
position bias in :mod:`._position`; reading battles in :mod:`._battles`; the
likelihood, MM and Newton iterations in :mod:`._newton`.

The counterpart of :func:`hierbench.bayes.build_bradley_terry`, with the same
model. For an ordered pair (a, b), ``a`` in the first position (left, shown
first, home), ``d = ability_a - ability_b (+ home)`` and

* ``ties="davidson"`` (Davidson 1970): ``P(a) = e^{d/2} / Z``, ``P(tie) = nu / Z``,
  ``P(b) = e^{-d/2} / Z`` with ``Z = e^{d/2} + nu + e^{-d/2}``;
* ``ties="half"``: a tie counts as half a win for each side in the logistic
  likelihood ``P(a) = 1 / (1 + e^{-d})`` (LMArena's and evalica's convention);
* ``ties="none"``: the logistic model; ties are refused.

The log-likelihood is an exponential family in ``(d, log nu)``, hence jointly
concave in the abilities, ``home`` and ``log nu``. It is maximised by the
minorise-maximise (MM) iteration of Hunter (2004) (Zermelo's iteration; with
the home-advantage update of Hunter's section 3) followed by Newton steps on
the concave log-likelihood, which converge quadratically (``method="newton"``,
the default), or by MM alone (``method="mm"``, no Davidson ties). A finite
maximum exists exactly when the "beat or tied" graph of the agents is strongly
connected (Ford 1957; Hunter 2004, Assumption 1); otherwise the abilities are
NaN with a :class:`NoFiniteMLEWarning` naming the agents concerned.

Intervals come from a bootstrap over tasks (prompts), each drawn with all its
battles, whenever the battles carry a task (battles on one prompt are not
independent), or over single battles (``resample="battles"``, and pair counts,
which carry no task). Rank intervals come from the same resamples.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import ndtri

from ..._base import DEFAULT_PROB
from ..._base import BoundaryWarning
from ..._base import HierbenchError
from ..._base import NotConvergedWarning
from ..._base import ResampledResult
from ..._base import as_rng
from ..._base import check_choice
from ..._base import check_int
from ..._base import check_number
from ..._base import check_prob
from ..._base import interval_label
from ..._base import make_interval
from ..._base import warn_user
from .._kernels import percentile_bounds
from ._battles import _Battles
from ._battles import _battles
from ._battles import _resample_unit
from ._battles import _resampled_counts
from ._battles import _tasks_text
from ._battles import _unit_text
from ._newton import _Fit
from ._newton import _fit
from ._newton import _free
from ._newton import _inverse
from ._newton import _newton_batch
from ._newton import _strongly_connected
from ._text import _number
from ._text import _ranked_lines

__all__ = [
    "ELO_PER_LOGIT",
    "BradleyTerryMLResult",
    "NoFiniteMLEWarning",
    "fit_bradley_terry_ml",
]

#: Elo points per logit: 400 points are 10x odds.
ELO_PER_LOGIT = 400.0 / np.log(10.0)


class NoFiniteMLEWarning(BoundaryWarning):
    """The Bradley-Terry likelihood has no finite maximum (the comparison graph is not strongly connected)."""


@dataclass(frozen=True, repr=False)
class BradleyTerryMLResult(ResampledResult):
    """Result of :func:`fit_bradley_terry_ml`.

    Attributes
    ----------
    estimate : DataArray (agent)
        Abilities on ``scale`` (Elo points or logits), sum-zero or relative
        to ``reference``.
    ci : DataArray (agent, ci_bound)
        Bootstrap percentile interval (or Wald, ``interval="wald"``).
    ability : DataArray (agent)
        Logit abilities (the Bayesian model's ``ability`` scale).
    standard_error : DataArray (agent)
        Wald standard error on ``scale`` from the observed information.
    home, home_ci, home_se : DataArray or None
        First-position (home) advantage in logits, with ``home=True``.
    nu, nu_ci : DataArray or None
        Davidson tie parameter (0 when the data hold no ties).
    rank : DataArray (agent)
        Rank of the estimate (1 = best).
    rank_ci : DataArray (agent, ci_bound)
        Percentile interval of the rank over the resamples.
    distribution : DataArray (resample, agent)
        Resampled abilities on ``scale`` (NaN where the resample had no finite MLE).
    n_comparisons : int
    loglik : float
    n_undefined : int
        Resamples with no finite MLE (left out of the intervals).
    attrs : dict
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    ability: xr.DataArray
    standard_error: xr.DataArray
    rank: xr.DataArray
    rank_ci: xr.DataArray
    home: xr.DataArray | None = None
    home_ci: xr.DataArray | None = None
    home_se: xr.DataArray | None = None
    nu: xr.DataArray | None = None
    nu_ci: xr.DataArray | None = None
    n_comparisons: int = 0
    loglik: float = np.nan
    n_undefined: int = 0
    attrs: dict = field(default_factory=dict)

    def _repr_lines(self) -> list[str]:
        """A leaderboard: the agents best first with their intervals, then home and ties."""
        ci, est = self.ci, self.estimate
        fmt = _number(0 if self.attrs.get("scale") == "elo" else 3)
        rlo, rhi = (self.rank_ci.sel(ci_bound=b).values for b in ("lower", "upper"))
        ranks = [f"  rank [{_number(0)(a)}, {_number(0)(b)}]" for a, b in zip(rlo, rhi, strict=True)]
        lines = [
            f"BradleyTerryMLResult: {len(est)} agents, {self.n_comparisons} battles; ability in "
            f"{est.attrs.get('units', '?')}",
            f"  {interval_label(ci)} interval: {ci.attrs.get('ci_detail', '')}",
            *_ranked_lines(est, ci, fmt, ranks),
        ]
        for name, what in (("home", "first-position (home) advantage, logits"), ("nu", "Davidson tie parameter nu")):
            v, v_ci = getattr(self, name), getattr(self, f"{name}_ci")
            if v is not None:
                lo, hi = (float(x) for x in v_ci.values) if v_ci is not None else (np.nan, np.nan)
                lines.append(f"  {what}: {_number(3)(float(v))} [{_number(3)(lo)}, {_number(3)(hi)}]")
        if self.n_undefined:
            lines.append(
                f"  {self.n_undefined} of {self.attrs.get('n_resamples')} resamples had no finite MLE "
                "(left out of the intervals)"
            )
        return lines


def fit_bradley_terry_ml(
    pairs: xr.Dataset,
    *,
    ties: str = "davidson",
    home: bool = False,
    scale: str = "elo",
    reference: str | None = None,
    center: float = 1000.0,
    interval: str = "bootstrap",
    resample: str = "auto",
    n_resamples: int = 1000,
    prob: float = DEFAULT_PROB,
    method: str = "newton",
    tol: float = 1e-10,
    max_iter: int = 500,
    rng: None | int | np.random.Generator = None,
) -> BradleyTerryMLResult:
    """Bradley-Terry abilities by maximum likelihood, with bootstrap intervals and rank intervals.

    Parameters
    ----------
    pairs : Dataset
        A pairwise dataset (dim ``comparison``) or pair counts (dim ``pair``).
    ties : {"davidson", "half", "none"}
        Davidson ties (the default, as in the Bayesian model; with no ties in
        the data ``nu`` is 0, its maximum), ties as half a win each way, or
        no ties (refused if present).
    home : bool
        Estimate a first-position (home) advantage; needs positions
        (``read_battles`` records them, ``from_pair_counts(first_position=True)``).
    scale : {"elo", "logit"}
        Scale of ``estimate``: Elo points (``center + 400 / ln 10 * ability``) or logits.
    reference : str, optional
        Agent fixed at 0 logits (``center`` Elo); default: abilities sum to zero.
    center : float
        Elo of the reference (or of the mean ability).
    interval : {"bootstrap", "wald"}
        Percentile bootstrap, or ``estimate +- z * standard_error``.
    resample : {"auto", "task", "battles"}
        Bootstrap unit: tasks (prompts), each drawn with all its battles, or
        single battles, taken as independent. ``"auto"`` (the default): tasks
        when ``pairs`` carries a ``task`` (``read_battles(task=...)``), since
        battles on one prompt are not independent and a bootstrap over them
        is too narrow; battles otherwise (pair counts carry no task). The
        unit is stated in ``attrs["resample"]`` and in ``ci.attrs["ci_detail"]``.
    n_resamples : int
    prob : float
    method : {"newton", "mm"}
        ``"newton"``: a few MM steps (Hunter 2004), then Newton's method to
        ``tol``. ``"mm"``: MM alone until the largest change of a log
        ability is below ``tol`` (ties "half" or "none" only).
    tol : float
        Convergence tolerance (gradient, scaled by sqrt(n), for Newton).
    max_iter : int
    rng : None, int or Generator

    Returns
    -------
    BradleyTerryMLResult

    Examples
    --------
    The worked example: A beats B and B beats C 64% of the time, A beats C 76%.

    >>> import pandas as pd
    >>> from hierbench.data import read_battles
    >>> rows = ([("A", "B")] * 64 + [("B", "A")] * 36 + [("B", "C")] * 64 + [("C", "B")] * 36
    ...         + [("A", "C")] * 76 + [("C", "A")] * 24)
    >>> df = pd.DataFrame(rows, columns=["left", "right"]).assign(winner="left")
    >>> r = fit_bradley_terry_ml(read_battles(df, position=False), ties="none", n_resamples=200, rng=0)
    >>> r.estimate.round().astype(int).to_series().to_dict()
    {'A': 1100, 'B': 1000, 'C': 900}
    """
    check_choice(ties, "ties", ["davidson", "half", "none"])
    check_choice(scale, "scale", ["elo", "logit"])
    check_choice(method, "method", ["newton", "mm"])
    _check_interval_args(interval, resample)
    prob = check_prob(prob)
    n_resamples = check_int(n_resamples, "n_resamples", min=2)
    max_iter = check_int(max_iter, "max_iter", min=1)
    tol = check_number(tol, "tol", low=0, low_open=True)
    if not isinstance(home, (bool, np.bool_)):
        raise TypeError(f"`home` must be True or False; got {home!r}")
    center = check_number(center, "center")
    b = _battles(pairs)
    st = _settings(b, ties, home, scale, reference, center, method, tol, max_iter)
    unit = _resample_unit(b, resample)
    fit = _fit(b.counts, b.ia, b.ib, st.m, st.ref, st.eff_ties, home, method, st.tol, st.max_iter)
    if fit is None:
        _warn_no_mle(b)
    elif not fit.converged and method == "newton":
        warn_user(
            f"Bradley-Terry ML did not reach tol={tol} in {max_iter} iterations",
            NotConvergedWarning,
        )
    boot = _Boot.empty(n_resamples, st.m)
    if fit is not None and interval == "bootstrap":
        boot = _bootstrap(b, st, fit, n_resamples, unit, as_rng(rng))
    return _bt_result(b, st, fit, boot, interval, unit, prob)


def _check_interval_args(interval: str, resample: str) -> None:
    """Refuse a bootstrap unit given to the Wald interval, which resamples nothing."""
    check_choice(interval, "interval", ["bootstrap", "wald"])
    check_choice(resample, "resample", ["auto", "task", "battles"])
    if interval == "wald" and resample != "auto":
        raise ValueError(
            f"`resample={resample!r}` sets the bootstrap unit; the Wald interval (interval='wald') "
            "resamples nothing and takes the battles as independent. Use interval='bootstrap', "
            "or leave `resample` unset"
        )


@dataclass
class _Settings:
    """The model and scale of a Bradley-Terry fit, checked against the battles."""

    ties: str
    eff_ties: str  # "half" for Davidson ties on data without ties (nu at 0, its maximum)
    home: bool
    scale: str
    reference: str | None
    ref: int
    center: float
    method: str
    tol: float
    max_iter: int
    m: int
    n_ties: float

    def normalise(self, theta: np.ndarray) -> np.ndarray:
        """Abilities on the reported scale (sum-zero or relative to the reference)."""
        th = theta - (theta[self.ref] if self.reference is not None else theta.mean())
        return th if self.scale == "logit" else self.center + ELO_PER_LOGIT * th

    def normalise_rows(self, th: np.ndarray) -> np.ndarray:
        """:meth:`normalise` of each row of ``th`` (B, m)."""
        shift = th[:, [self.ref]] if self.reference is not None else th.mean(1, keepdims=True)
        logit = self.scale == "logit"
        return (th - shift) * (1.0 if logit else ELO_PER_LOGIT) + (0.0 if logit else self.center)


def _settings(b, ties, home, scale, reference, center, method, tol, max_iter) -> _Settings:
    """Run the checks that need the battles; return the settings of the fit."""
    m = len(b.agents)
    if m < 2:
        raise HierbenchError(f"`pairs` must involve at least 2 agents; got {b.agents}")
    n_ties = float(b.counts[:, 1].sum())
    if ties == "none" and n_ties > 0:
        raise HierbenchError(
            f"`ties='none'` needs data without ties; `pairs` holds {int(n_ties)} ties. "
            "Use ties='davidson' or ties='half'"
        )
    if method == "mm" and ties == "davidson" and n_ties > 0:
        raise ValueError(
            "`method='mm'` fits the logistic model (ties 'half' or 'none'); Davidson ties need method='newton'"
        )
    if home and not b.first_position:
        raise HierbenchError(
            "`home=True` needs to know which agent held the first position: give `pairs` a `position` "
            "variable (read_battles records it) or pair counts with first_position=1"
        )
    if reference is not None and reference not in b.agents:
        raise ValueError(f"`reference` must be one of the agents {b.agents}; got {reference!r}")
    present = np.zeros(m, dtype=bool)
    present[b.ia] = present[b.ib] = True
    if not present.all():
        missing = [b.agents[i] for i in np.flatnonzero(~present)]
        raise HierbenchError(
            f"agents {missing} are in the `agent` coord of `pairs` but in no comparison: their ability "
            "is not estimable; drop them from the coord"
        )
    eff_ties = ties if (ties != "davidson" or n_ties > 0) else "half"
    ref = b.agents.index(reference) if reference is not None else 0
    return _Settings(
        ties, eff_ties, bool(home), scale, reference, ref, center, method, tol, max_iter, m, n_ties
    )


def _warn_no_mle(b: _Battles) -> None:
    _, lab = _strongly_connected(b.ia, b.ib, b.counts, len(b.agents))
    comps: dict[int, list[str]] = {}
    for i, c in enumerate(lab):
        comps.setdefault(int(c), []).append(b.agents[i])
    warn_user(
        "the Bradley-Terry likelihood has no finite maximum: the agents split into groups none "
        "of which both beat (or tied) and lost to another group "
        f"({len(comps)} groups, e.g. {list(comps.values())[:3]}); abilities are NaN. Use the "
        "Bayesian model (hierbench.bayes.build_bradley_terry), whose prior keeps them finite",
        NoFiniteMLEWarning,
    )


@dataclass
class _Boot:
    """Resampled abilities (on the reported scale), home advantage and nu (NaN: no MLE)."""

    dist: np.ndarray
    home: np.ndarray
    nu: np.ndarray
    n_undefined: int = 0

    @classmethod
    def empty(cls, n_resamples: int, m: int) -> _Boot:
        return cls(
            np.full((n_resamples, m), np.nan),
            np.full(n_resamples, np.nan),
            np.full(n_resamples, np.nan),
        )


def _refit_mm(b: _Battles, st: _Settings, blk: np.ndarray, r: int, boot: _Boot) -> None:
    """MM refits of one block of resampled counts, one at a time, into ``boot`` from row ``r``."""
    for cnt in blk:
        keep = cnt.sum(1) > 0
        f = _fit(
            cnt[keep],
            b.ia[keep],
            b.ib[keep],
            st.m,
            st.ref,
            st.eff_ties,
            st.home,
            st.method,
            st.tol,
            st.max_iter,
        )
        if f is not None and np.all(np.isfinite(f.theta)):
            boot.dist[r] = st.normalise(f.theta)
            boot.home[r] = f.home
            boot.nu[r] = np.exp(f.log_nu) if st.ties == "davidson" else np.nan
        r += 1


def _refit_newton(b, st: _Settings, blk: np.ndarray, r: int, start, boot: _Boot) -> None:
    """Refit one block of resampled counts by batched Newton into ``boot`` from row ``r``.

    A resample has a finite MLE when its "beat or tied" graph is strongly connected.
    """
    ok = np.array([_strongly_connected(b.ia, b.ib, c, st.m)[0] for c in blk])
    has_ties = blk[:, :, 1].sum(1) > 0
    for model in ("davidson", "half") if st.eff_ties == "davidson" else (st.eff_ties,):
        sel = ok & (has_ties if model == "davidson" else ~has_ties)
        if st.eff_ties != "davidson":
            sel = ok
        if not sel.any():
            continue
        th, hh, lm = _newton_batch(
            b.ia, b.ib, blk[sel], st.m, st.ref, model, st.home, start, st.tol, st.max_iter
        )
        good_rows = np.all(np.isfinite(th), axis=1)
        idx = r + np.flatnonzero(sel)[good_rows]
        boot.dist[idx] = st.normalise_rows(th[good_rows])
        boot.home[idx] = hh[good_rows] if st.home else 0.0
        if st.ties == "davidson":
            boot.nu[idx] = np.exp(lm[good_rows]) if model == "davidson" else 0.0


def _bootstrap(b, st: _Settings, fit: _Fit, n_resamples: int, resample: str, gen) -> _Boot:
    boot = _Boot.empty(n_resamples, st.m)
    start = (fit.theta, fit.home, fit.log_nu if np.isfinite(fit.log_nu) else 0.0)
    r = 0
    for blk in _resampled_counts(b, n_resamples, resample, gen):
        if st.method == "mm":
            _refit_mm(b, st, blk, r, boot)
        else:
            _refit_newton(b, st, blk, r, start, boot)
        r += blk.shape[0]
    boot.n_undefined = int((~np.isfinite(boot.dist).all(1)).sum())
    if boot.n_undefined:
        warn_user(
            f"{boot.n_undefined} of {n_resamples} resamples had no finite Bradley-Terry MLE (some "
            "agent won or lost every resampled battle); they are left out of the intervals",
            NoFiniteMLEWarning,
        )
    return boot


def _wald_se(fit: _Fit, st: _Settings):
    """Return the Wald SEs on the reported scale and of home.

    The covariance in the reference parametrisation, mapped to the reported one.
    """
    m, sc = st.m, (1.0 if st.scale == "logit" else ELO_PER_LOGIT)
    cov = _inverse(fit.info) if fit.info is not None else None
    full = np.zeros((m, m))
    if cov is not None:
        full[np.ix_(_free(m, st.ref), _free(m, st.ref))] = cov[: m - 1, : m - 1]
    if st.reference is None:
        # (I - J/m) full (I - J/m)', written as double centring: the two matrix products
        # took 20-50 ms at m = 100 on a loaded 2-core machine (BLAS threads waiting for a core)
        full = full - full.mean(1, keepdims=True) - full.mean(0, keepdims=True) + full.mean()
    se_v = sc * np.sqrt(np.clip(np.diag(full), 0, None))
    home_se = np.sqrt(cov[m - 1, m - 1]) if (st.home and cov is not None) else np.nan
    return se_v, home_se, cov


def _scale_attrs(st: _Settings) -> dict:
    """What the reported abilities are and in which units: the attrs of ``estimate`` and ``ci``."""
    anchor = f"agent {st.reference!r}" if st.reference is not None else "the mean ability"
    if st.scale == "logit":
        units = f"logits (log-odds of winning; 0 = {anchor})"
    else:
        units = f"Elo points (400 per 10x odds; {st.center:g} = {anchor})"
    return {"quantity": "Bradley-Terry ability", "scale": st.scale, "units": units}


def _bt_result(b, st: _Settings, fit, boot: _Boot, interval: str, unit: str, prob: float):
    nan_m = np.full(st.m, np.nan)
    n_resamples = boot.dist.shape[0]
    if fit is None:
        est_v = se_v = theta_n = nan_m
        home_v = home_se = nu_v = ll = np.nan
        cov, converged, iters = None, False, 0
    else:
        theta_n = fit.theta - (fit.theta[st.ref] if st.reference is not None else fit.theta.mean())
        est_v = st.normalise(fit.theta)
        se_v, home_se, cov = _wald_se(fit, st)
        home_v = fit.home if st.home else np.nan
        nu_v = float(np.exp(fit.log_nu)) if st.ties == "davidson" else np.nan
        ll, converged, iters = fit.loglik, fit.converged, fit.iterations
    est = xr.DataArray(
        est_v,
        dims="agent",
        # a ready pandas Index: xarray builds the coordinate without inferring object dtypes (~0.4 ms)
        coords={"agent": pd.Index(b.agents, dtype=object, name="agent")},
        name="ability",
    )
    unit_words = _unit_text(b, unit)
    details = (f"bootstrap over {unit_words}, {n_resamples} resamples", _wald_detail(b))
    iv = _bt_intervals(est, st, fit, cov, boot, interval, details, prob, se_v, home_v, home_se)
    on_scale = _scale_attrs(st)
    iv["ci"].attrs.update(on_scale)
    logit = {"scale": "logit", "units": "logits (log-odds of winning)"}
    return BradleyTerryMLResult(
        estimate=est.assign_attrs(on_scale),
        ability=est.copy(deep=False, data=theta_n).rename("ability_logit").assign_attrs(
            {**_scale_attrs(st), **logit}
        ),
        standard_error=est.copy(deep=False, data=se_v).rename("standard_error").assign_attrs(
            on_scale
        ),
        rank=est.copy(deep=False, data=_ranks(est_v[None])[0]).rename("rank"),
        distribution=xr.DataArray(
            boot.dist, dims=("resample", "agent"), coords=est.coords, attrs=on_scale
        ),
        home=xr.DataArray(home_v, name="home", attrs=logit) if st.home else None,
        home_se=xr.DataArray(home_se, name="home_se", attrs=logit) if st.home else None,
        nu=xr.DataArray(nu_v, name="nu") if st.ties == "davidson" else None,
        n_comparisons=round(float(b.counts.sum())),
        loglik=ll,
        n_undefined=boot.n_undefined,
        attrs={
            "ties": st.ties,
            "home": st.home,
            "scale": st.scale,
            "reference": st.reference or "mean",
            "center": st.center,
            "method": st.method,
            "iterations": iters,
            "converged": bool(converged),
            "interval": interval,
            "resample": unit if interval == "bootstrap" else "none (Wald)",
            "resample_unit": unit_words if interval == "bootstrap" else details[1],
            "n_resamples": n_resamples,
        },
        **iv,
    )


def _wald_detail(b: _Battles) -> str:
    """The Wald interval's ``ci_detail``: what it assumes of the battles."""
    text = "Wald: estimate +- z * standard error from the observed information at the MLE"
    if b.task is None:
        return text
    return f"{text}; battles taken as independent, although they share {_tasks_text(b)}"


def _bt_intervals(est, st, fit, cov, boot, interval, details, prob, se_v, home_v, home_se):
    """Return ``ci``, ``rank_ci``, ``home_ci`` and ``nu_ci``.

    Percentile bootstrap, or Wald (normal) from the observed information; rank intervals
    from the same resamples (Wald: the agents a two-sided test at ``1 - prob`` does not
    separate).
    """
    est_v, nan_m = est.values, np.full(st.m, np.nan)
    z = float(ndtri(0.5 + prob / 2))  # scipy.special: no distribution-object overhead

    def like(x: np.ndarray) -> xr.DataArray:  # bounds shaped like est (cheaper than a template)
        return est.copy(deep=False, data=np.asarray(x, dtype=float))

    detail_boot, detail_wald = details
    good = np.isfinite(boot.dist).all(1)
    boot_ok = interval == "bootstrap" and good.any()
    out: dict = {"home_ci": None, "nu_ci": None}
    if interval == "bootstrap":
        lo, hi = percentile_bounds(boot.dist[good], prob) if good.any() else (nan_m, nan_m)
        out["ci"] = make_interval(
            like(lo), like(hi), prob=prob, kind="percentile", detail=detail_boot
        )
    else:
        out["ci"] = make_interval(
            like(est_v - z * se_v),
            like(est_v + z * se_v),
            prob=prob,
            kind="normal",
            detail=detail_wald,
        )
    if boot_ok:
        rlo, rhi = percentile_bounds(_ranks(boot.dist[good]), prob)
        rlo, rhi, rank_kind, rank_detail = np.floor(rlo), np.ceil(rhi), "percentile", detail_boot
    else:
        sc = 1.0 if st.scale == "logit" else ELO_PER_LOGIT
        rlo, rhi = _wald_rank_interval(cov, est_v / sc, st.m, st.ref, z) if fit else (nan_m, nan_m)
        rank_kind = "normal"
        rank_detail = "Wald: the agents not separated by a two-sided Wald test at 1 - prob"
    out["rank_ci"] = make_interval(
        like(rlo), like(rhi), prob=prob, kind=rank_kind, detail=rank_detail, warn_zero_width=False
    )
    if st.home:
        if boot_ok:
            hl, hh = percentile_bounds(boot.home[good], prob)
            out["home_ci"] = make_interval(hl, hh, prob=prob, kind="percentile", detail=detail_boot)
        else:
            out["home_ci"] = make_interval(
                home_v - z * home_se, home_v + z * home_se, prob=prob, kind="normal"
            )
    if st.ties == "davidson":
        if boot_ok:
            nl, nh = percentile_bounds(boot.nu[good], prob)
            out["nu_ci"] = make_interval(
                nl,
                nh,
                prob=prob,
                kind="percentile",
                detail=detail_boot,
                warn_zero_width=st.n_ties > 0,
            )
        else:
            out["nu_ci"] = make_interval(
                np.nan, np.nan, prob=prob, kind="normal", detail="no Wald interval for nu"
            )
    return out


def _ranks(x: np.ndarray) -> np.ndarray:
    """Competition ranks along the last axis, 1 = largest (ties share the best rank)."""
    return (x[..., None, :] > x[..., :, None]).sum(-1) + 1.0


def _wald_rank_interval(cov, theta, m, ref, z):
    free = np.r_[np.arange(ref), np.arange(ref + 1, m)]
    full = np.zeros((m, m))
    full[np.ix_(free, free)] = cov[: m - 1, : m - 1]
    var = np.diag(full)
    vd = var[:, None] + var[None, :] - 2 * full
    diff = theta[None, :] - theta[:, None]  # j - i
    sig_better = diff > z * np.sqrt(np.clip(vd, 0, None))
    sig_worse = -diff > z * np.sqrt(np.clip(vd, 0, None))
    return 1.0 + sig_better.sum(1), float(m) - sig_worse.sum(1)
