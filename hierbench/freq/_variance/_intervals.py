"""Intervals of a G-study: components (Wald on log variance, profile REML) and E rho^2 / Phi.

Private to the variance-components wing; :class:`VarianceComponentsResult`'s
``wald_ci``, ``profile_ci`` and ``coefficients`` delegate here. Profile intervals are
computed on first use and kept in the result's memo.
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from ..._base import check_choice
from ..._base import check_prob
from ..._base import is_binary
from ..._base import make_interval
from ..._base import warn_user
from .._kernels import normal_z
from .._kernels import one_blas_thread
from . import _dstudy
from . import _profile
from . import _reml
from ._fit import dense_codes
from ._fit import fit_reml
from ._fit import problem_order
from ._warnings import RemlConvergenceWarning
from ._warnings import UndefinedCoefficientWarning

__all__: list[str] = []

COEFFICIENTS = ("e_rho2", "phi")

#: the Wald interval's caveat at a component estimated at 0 (its ``ci_detail`` and the repr's label)
AT_ZERO = "an estimate at 0 gets [0, z se], with no coverage guarantee"


def _estimates_and_se(vc) -> tuple[np.ndarray, np.ndarray]:
    """The components truncated at 0 and their standard errors (the Wald interval's inputs)."""
    return np.maximum(vc.estimates_raw, 0.0), np.sqrt(np.clip(np.diag(vc.cov), 0, None))


def wald_ci(vc, prob: float | None = None) -> xr.DataArray:
    """Wald intervals of the components on the log-variance scale (``ci_kind`` ``"log-normal"``)."""
    prob = vc.prob if prob is None else check_prob(prob)
    est, se = _estimates_and_se(vc)
    z = normal_z(prob)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        slog = se / est
        lo = np.where(est > 0, est * np.exp(-z * slog), 0.0)
        hi = np.where(est > 0, est * np.exp(z * slog), z * se)
    src = (
        "the exact sampling variance of the balanced ANOVA estimators"
        if vc.method == "anova"
        else f"the {vc.fit_info.get('information') or 'expected'} REML information"
    )
    return make_interval(
        lo,
        hi,
        prob=prob,
        kind="log-normal",
        detail=(
            f"Wald on log(variance) with standard errors from {src}; {AT_ZERO} (profile_ci() gives the "
            "profile interval)"
        ),
        template=vc._comp(est),
        warn_zero_width=False,
    )


def profiler(vc):
    """Return the REML problem's profiler and the map design order -> problem order (memoised)."""
    if "profiler" in vc._memo:
        return vc._memo["profiler"]
    if vc._reml_data is None or vc._design is None:
        raise ValueError(
            "profile intervals need the data of the fit (this result was built without them)"
        )
    y, ec = vc._reml_data
    dsg = vc._design
    if isinstance(ec, tuple):  # a balanced fit keeps its array shape: codes built on demand
        ec = dense_codes(ec, dsg)
    with one_blas_thread():
        problem = _reml.RemlProblem(y, ec, dsg)
        order = problem_order(problem, dsg)
        if vc.method == "reml":
            s2e = float(vc.estimates_raw[order[-1]])
            theta = np.sqrt(np.maximum(vc.estimates_raw[order[:-1]], 0.0) / s2e)
        else:  # balanced ANOVA: the profile is of the REML likelihood, around its maximum
            theta = _reml_start_of_anova(y, ec, dsg, vc.anova_raw)
        prof = _profile.Profiler(problem, theta)
    vc._memo["profiler"] = (prof, order)
    return prof, order


def _reml_start_of_anova(y, ec, dsg, anova_raw) -> np.ndarray:
    """The REML maximum a balanced ANOVA result's profile is built around (relative SDs).

    Its non-convergence is said as what it is: the ANOVA estimates shown do not come
    from it, the profile intervals do.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RemlConvergenceWarning)
        _, _, fi = fit_reml(y, ec, dsg, anova_raw, need_cov=False)
    for w in caught:
        if issubclass(w.category, RemlConvergenceWarning):
            warn_user(
                f"the REML fit the profile intervals are built around did not report "
                f"convergence ({fi['message']}): the profile intervals may be inaccurate (the "
                "ANOVA estimates are not affected); wald_ci() gives the Wald intervals",
                RemlConvergenceWarning,
            )
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return np.asarray(fi["theta"], dtype=float)


def _quiet_wald(fn, *args):
    """Wald bounds where a profile search starts (their warnings are not the user's)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _profile_bounds(vc, prob: float, want: set[int]) -> tuple[np.ndarray, np.ndarray]:
    """The profile interval of each component in ``want`` (design order), NaN elsewhere; each kept once computed."""
    m = vc.estimates_raw.size
    lo = np.full(m, np.nan)
    hi = np.full(m, np.nan)
    if vc._reml_data is not None and float(np.ptp(vc._reml_data[0])) == 0.0:
        return np.zeros(m), np.zeros(m)
    todo = [j for j in sorted(want) if ("profile_one", prob, j) not in vc._memo]
    if todo:
        prof, order = profiler(vc)
        k = prof.p.n_theta
        s2_hat = np.r_[prof.theta_hat**2 * prof.s2e_hat, prof.s2e_hat]
        scale = float(np.var(vc._reml_data[0]))
        wald = _quiet_wald(wald_ci, vc, prob).values
        with one_blas_thread():
            for jp, jd in enumerate(order):
                if jd in todo:
                    vc._memo[("profile_one", prob, jd)] = _profile.component_interval(
                        lambda jp=jp: prof.component_profile(jp),
                        float(s2_hat[jp]),
                        scale,
                        prob,
                        residual=jp == k,
                        guess=tuple(wald[jd]),
                    )
    for j in want:
        lo[j], hi[j] = vc._memo[("profile_one", prob, j)]
    return lo, hi


def profile_ci(vc, prob: float | None = None, components=None) -> xr.DataArray:
    """Profile-likelihood intervals of the components from the REML likelihood (memoised per component).

    ``components``: the names to profile (default every one); the result then holds those only.
    """
    prob = vc.prob if prob is None else check_prob(prob)
    names = list(vc.component_names)
    asked = names if components is None else [components] if isinstance(components, str) else list(components)
    unknown = [c for c in asked if c not in names]
    if unknown:
        raise ValueError(f"`components`: {unknown} are not components of this design; it has {names}")
    lo, hi = _profile_bounds(vc, prob, {names.index(c) for c in asked})
    out = make_interval(
        lo.copy(),
        hi.copy(),
        prob=prob,
        kind="profile",
        detail=(
            "profile REML likelihood (Wilks, chi2 with 1 df); the other components "
            "maximised out; a bound the profile never reaches is 0 or inf"
        ),
        template=vc._comp(np.maximum(vc.estimates_raw, 0.0)),
        warn_zero_width=False,
    )
    return out if components is None else out.sel(component=asked)


def _coefs(vc, sizes, comp=None) -> np.ndarray:
    co = _dstudy.coefficients_at(
        vc._design, vc.measurement, _dstudy.comp_dict(vc, comp), sizes, vc.confounded, warn=False
    )
    return np.array([float(np.asarray(co[k])) for k in COEFFICIENTS])


def _delta_method(vc, sizes: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """E rho^2 and Phi at ``sizes`` and the delta-method variance of each."""
    base = np.maximum(vc.estimates_raw, 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedCoefficientWarning)
        f0 = _coefs(vc, sizes)
        grad = np.zeros((2, base.size))
        for j in range(base.size):
            h = max(1e-7, 1e-5 * abs(base[j]))
            up = base.copy()
            up[j] += h
            grad[:, j] = (_coefs(vc, sizes, up) - f0) / h
    var = np.einsum("ij,jk,ik->i", grad, np.nan_to_num(vc.cov), grad)
    # a coefficient whose components have no covariance (not computed) has no interval
    for i in range(grad.shape[0]):
        used = np.flatnonzero(grad[i] != 0)
        if np.isnan(vc.cov[np.ix_(used, used)]).any():
            var[i] = np.nan
    return f0, var


def coefficients_wald(vc, prob: float, sizes: dict[str, float]) -> xr.Dataset:
    """E rho^2 and Phi with delta-method intervals on the logit scale."""
    f0, var = _delta_method(vc, sizes)
    z = normal_z(prob)
    with np.errstate(invalid="ignore", divide="ignore"):
        lg = np.log(f0 / (1 - f0))
        slg = np.sqrt(var) / (f0 * (1 - f0))
        lo = 1 / (1 + np.exp(-(lg - z * slg)))
        hi = 1 / (1 + np.exp(-(lg + z * slg)))
        # a coefficient at a bound (a universe-score component truncated at 0) has no
        # logit: [0, z * se] (or [1 - z * se, 1]) with the delta-method se, as the
        # components at 0 get [0, z * se]
        se_raw = np.sqrt(var)
        at0 = f0 == 0
        at1 = f0 == 1
        lo = np.where(at0, 0.0, np.where(at1, np.maximum(1 - z * se_raw, 0.0), lo))
        hi = np.where(at0, np.minimum(z * se_raw, 1.0), np.where(at1, 1.0, hi))
    est = xr.DataArray(f0, dims="coefficient", coords={"coefficient": list(COEFFICIENTS)})
    ci = make_interval(
        lo,
        hi,
        prob=prob,
        kind="logit-normal",
        template=est,
        warn_zero_width=False,
        detail=(
            "delta method on the logit scale from the components' covariance; a "
            "coefficient at 0 (1) gets [0, z * se] ([1 - z * se, 1])"
        ),
    )
    return xr.Dataset({"estimate": est, "ci": ci})


def _ratio_bounds(vc, prob: float, sizes: dict[str, float], f0: np.ndarray):
    lo = np.full(2, np.nan)
    hi = np.full(2, np.nan)
    if vc.measurement is None or not np.all(np.isfinite(f0)):
        return lo, hi
    prof, order = profiler(vc)
    w = _dstudy.coef_weights(vc._design, vc.measurement, sizes)
    # the coefficient at the REML fit the profile is built around
    s2_hat = np.r_[prof.theta_hat**2 * prof.s2e_hat, prof.s2e_hat]
    wald = _quiet_wald(coefficients_wald, vc, prob, sizes)["ci"].values
    with one_blas_thread():
        for i, k in enumerate(COEFFICIENTS):
            tw, ew = (np.asarray(a)[order] for a in w[k])
            r_hat = float(tw @ s2_hat / (tw @ s2_hat + ew @ s2_hat))
            lo[i], hi[i] = _profile.ratio_interval(
                lambda tw=tw, ew=ew: prof.ratio_profile(tw, ew),
                r_hat,
                prob,
                guess=tuple(wald[i]),
            )
    return lo, hi


def coefficients_profile(vc, prob: float, sizes: dict[str, float]) -> xr.Dataset:
    """E rho^2 and Phi with profile REML intervals (memoised per level and sizes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedCoefficientWarning)
        f0 = _coefs(vc, sizes)
    key = ("profile_coef", prob, tuple(sorted(sizes.items())))
    if key not in vc._memo:
        vc._memo[key] = _ratio_bounds(vc, prob, sizes, f0)
    lo, hi = vc._memo[key]
    est = xr.DataArray(f0, dims="coefficient", coords={"coefficient": list(COEFFICIENTS)})
    ci = make_interval(
        lo.copy(),
        hi.copy(),
        prob=prob,
        kind="profile",
        template=est,
        warn_zero_width=False,
        detail=(
            "profile REML likelihood of the coefficient at the sizes asked (default the "
            "G-study's) (Wilks, chi2 "
            "with 1 df); the components maximised with the coefficient fixed"
        ),
    )
    return xr.Dataset({"estimate": est, "ci": ci})


def coefficients(vc, prob=None, ci=None, sizes=None, spread="observed") -> xr.Dataset:
    """E rho^2 and Phi with intervals (see :meth:`VarianceComponentsResult.coefficients`)."""
    prob = vc.prob if prob is None else check_prob(prob)
    ci = check_choice(vc.ci_method if ci is None else ci, "ci", ["profile", "wald"])
    spread = _dstudy.check_spread(vc, spread)
    asked = list(sizes or {})
    sizes = _dstudy.planned_sizes(vc, sizes)
    pairs = _dstudy.spread_pairs(vc)
    if isinstance(spread, np.ndarray):
        both = [f"sizes[{f!r}]" for f in pairs[0] if f in asked]
        _dstudy.planned_clusters(vc, sizes, spread, both)
    held = [f for f in vc._design.facets if f not in asked]
    eff_sizes = _dstudy.spread_sizes(vc, sizes, spread, held)[0]
    if ci == "profile":
        ds = coefficients_profile(vc, prob, eff_sizes)
    else:
        ds = coefficients_wald(vc, prob, eff_sizes)
    # the interval's level and kind on the Dataset too, where a reader of the table looks
    ds.attrs = {k: ds["ci"].attrs[k] for k in ("ci_prob", "ci_kind", "ci_detail")}
    ds.attrs["sizes"] = ", ".join(
        f"{f} = {v:.4g}" for f, v in sizes.items() if f != vc.measurement
    )
    if pairs:
        ds.attrs["sizes"] += "; " + ", ".join(
            f"effective_n_{c} = {eff_sizes[c]:.4g}" for _, c in pairs
        )
        ds.attrs["spread"] = _dstudy.spread_words(vc, spread).replace(" (coord)", " (in sizes)")
    runs = _dstudy.run_facets(vc)
    if runs:
        ds.attrs["sizes"] += "; " + ", ".join(f"effective_n_{f} = {eff_sizes[f]:.4g}" for f in runs)
        ds.attrs["run_spread"] = _dstudy.run_words(vc, held).replace(" (coord)", " (in sizes)")
    return ds


#: an interval whose ends are this many orders of magnitude apart is flagged
WIDE_ORDERS = 3.0


def interval_words(ci: xr.DataArray) -> str:
    """What the components' interval is, in a few words (the repr's label)."""
    pct = f"{100 * float(ci.attrs.get('ci_prob', np.nan)):.4g}%"
    if ci.attrs.get("ci_kind") == "profile":
        return f"{pct} profile REML likelihood intervals"
    words = f"{pct} Wald intervals on log(variance): estimate x exp(+-z se/estimate)"
    if ci.attrs.get("ci_kind") == "log-normal" and bool((ci.sel(ci_bound="lower") == 0).any()):
        words += f"; {AT_ZERO}"
    return words


def _why_wide(vc, j: int, est: float, se: float) -> str:
    """Why component ``j``'s interval is wide: its degrees of freedom and fewest-level facet."""
    eff = vc._design.effects[j]
    facets = [f for f in vc._design.facets if f in eff and f in vc.sizes]
    why = f"it rests on {int(vc.df[j])} degree(s) of freedom"
    if facets:
        few = min(facets, key=lambda f: vc.sizes[f])
        why += f" ({few!r} has {vc.sizes[few]:.4g} levels)"
    if est > 0 and np.isfinite(se):
        why += f", se/estimate = {se / est:.3g}"
    return why


def score_range(vc) -> tuple[float, float] | None:
    """The bounds [a, b] of the score's scale where the data declare one, else None.

    Only 0/1 scores (pass / fail, read as binary as everywhere in the package) have a
    scale known from the data: [0, 1]. The smallest and largest observed scores are not
    bounds of the scale (a yield of 1440 to 1635 can be 1700; a 1-5 rubric with no 1
    observed still reaches 1), so no other scores get a bound.
    """
    if vc._reml_data is None:
        return None
    y = np.asarray(vc._reml_data[0], dtype=float)  # the scores fitted: no NaN
    return (0.0, 1.0) if y.size and is_binary(y) else None


def ci_flags(vc, ci: xr.DataArray) -> list[str]:
    """One reason per component why its interval cannot be read at face value ("" if none).

    Every component is at most the total variance of one score, and a score on a scale
    [a, b] has variance at most (b - a)^2 / 4: for 0/1 scores (the only scale the data
    declare, see ``score_range``) an upper end above 1/4 is outside what the scale allows.
    An interval whose ends are more than :data:`WIDE_ORDERS` orders of magnitude apart says
    little but "somewhere between tiny and huge".
    """
    rng = score_range(vc)
    bound = None if rng is None else (rng[1] - rng[0]) ** 2 / 4
    est, se = _estimates_and_se(vc)
    out = []
    for j in range(est.size):
        lo, hi = (float(v) for v in ci.values[j])
        said = []
        if bound is not None and hi > bound:
            said.append(
                f"upper end {hi:.4g} exceeds {bound:.4g} = (b - a)^2 / 4, the largest variance "
                f"a 0/1 score (scale [a, b] = [{rng[0]:.4g}, {rng[1]:.4g}]) can have"
            )
        if lo > 0 and np.isfinite(hi) and hi / lo > 10**WIDE_ORDERS:
            said.append(f"spans {np.log10(hi / lo):.0f} orders of magnitude")
        if said:
            out.append("; ".join(said) + ": " + _why_wide(vc, j, float(est[j]), float(se[j])))
        else:
            out.append("")
    return out
