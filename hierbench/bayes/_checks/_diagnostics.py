"""Convergence diagnostics computed with every fit, and posterior/prior predictive checks.

Thresholds follow Vehtari, Gelman, Simpson, Carpenter and Bürkner (2021,
"Rank-normalization, folding, and localization"): rank-normalised split
R-hat <= 1.01 and bulk and tail ESS >= 100 per chain; no divergent
transitions (Betancourt 2017); E-BFMI >= 0.3 in every chain.

The R-hat check accounts for how many elements are checked. Under
convergence, split R-hat over ``m`` half-chains of ``n`` draws is close to
``1 + (m X / ESS - 1 / n) / 2`` with ``X ~ chi2(m - 1) / (m - 1)`` (the
spread of ``m`` chain means, each with ``ESS / m`` effective draws, against
the within-chain variance). Its sampling noise is therefore of order
``sqrt(2 / (m - 1)) m / (2 ESS)``: at 4 x 1,000 draws and ESS 1,000 a single
element exceeds 1.01 with probability about 1e-3, so the maximum over a
model's 500-2,000 elements exceeds it in a large share of perfectly mixed
fits. The check is 1.01 or, if larger, the ``1 - 0.05 / (2P)`` quantile of
that law for each element (``P`` elements, two R-hats each, bulk and
folded; Bonferroni over them), at most :data:`R_HAT_CEILING`, with each
element's ESS computed within chains (summed over chains; the smaller of
its bulk and folded ESS, as the R-hat is the larger of the two), so that chains
that disagree do not widen their own limit. A converged
fit then fails the check with probability about 5% whatever its size,
while an element that disagrees between chains by more than its own Monte
Carlo noise still fails; ESS >= 400 is checked on its own.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Literal

import numpy as np
import xarray as xr

from ..._base import NOT_FULLY_CHECKED
from ..._base import NotConvergedWarning
from ..._base import check_choice
from ..._base import fit_record
from ..._base import warn_user
from ..._parallel import available_cores
from ._loo import TASK_LEVEL_MODELS
from ._loo import UnreliableLOOWarning
from ._loo import check_log_likelihood
from ._loo import count_cells
from ._loo import missing_group_advice
from ._loo import task_log_likelihood
from ._rankstats import elements
from ._rankstats import rank_diagnostics

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEFAULT_THRESHOLDS",
    "ConvergenceWarning",
    "compute_diagnostics",
    "loo_compare",
    "predictive_check",
]

DEFAULT_THRESHOLDS: dict[str, float] = {
    "r_hat": 1.01,
    "ess_bulk_per_chain": 100.0,
    "ess_tail_per_chain": 100.0,
    "divergences": 0.0,
    "bfmi": 0.3,
}


#: family-wise false-alarm rate of the R-hat check on a converged fit
R_HAT_ALPHA = 0.05
#: the R-hat check never accepts more than this
R_HAT_CEILING = 1.05


def r_hat_limit(ess: np.ndarray, n_elements: int, chains: int, draws: int, floor: float = 1.01) -> np.ndarray:
    """Per-element R-hat limit: ``max(floor, multiplicity-aware quantile)``, at most 1.05.

    Parameters
    ----------
    ess : numpy.ndarray
        ESS of each element (the smaller of bulk and folded: rank R-hat is the
        larger of the bulk and the folded R-hat).
    n_elements : int
        How many elements are checked (the multiplicity ``P``).
    chains, draws : int
        Chains and draws per chain (split R-hat uses ``2 chains`` halves).
    floor : float
        The conventional threshold (1.01).

    Examples
    --------
    >>> import numpy as np
    >>> float(r_hat_limit(np.array([4000.0]), 1, 4, 1000)[0])  # one well-mixed element: 1.01
    1.01
    >>> bool(r_hat_limit(np.array([1000.0]), 1000, 4, 1000)[0] > 1.01)
    True
    """
    from scipy.stats import chi2

    m = 2 * chains
    n = max(draws // 2, 1)
    xq = chi2.ppf(1.0 - R_HAT_ALPHA / (2 * max(n_elements, 1)), m - 1) / (m - 1)
    ess = np.maximum(np.asarray(ess, dtype=float), 1.0)
    crit = 1.0 + 0.5 * (m * xq / ess - 1.0 / n)
    return np.clip(crit, floor, max(floor, R_HAT_CEILING))


class ConvergenceWarning(NotConvergedWarning):
    """A fit failed a convergence threshold (R-hat, ESS, divergences or E-BFMI)."""


def compute_diagnostics(
    fit: xr.DataTree,
    *,
    var_names: Sequence[str] | None = None,
    thresholds: Mapping[str, float] | None = None,
    warn: bool = True,
) -> xr.DataTree:
    """Compute R-hat, ESS (bulk, tail), divergences and E-BFMI for a fit.

    Parameters
    ----------
    fit : xarray.DataTree
        A fit with ``posterior`` and ``sample_stats`` groups.
    var_names : sequence of str, optional
        Posterior variables to check; default all of them (variables that
        are constant over draws give NaN R-hat and are ignored in the
        summary).
    thresholds : mapping, optional
        Overrides of :data:`DEFAULT_THRESHOLDS`.
    warn : bool
        Emit a :class:`ConvergenceWarning` listing every failed threshold.

    Returns
    -------
    xarray.DataTree
        A new tree (the input is not modified) with groups
        ``diagnostics/r_hat``, ``diagnostics/ess_bulk``, ``diagnostics/ess_tail``
        (one value per posterior element) and root attrs ``diag_max_r_hat``,
        ``diag_min_ess_bulk``, ``diag_min_ess_tail``, ``diag_n_divergent``,
        ``diag_min_bfmi``, ``diag_converged`` (1/0), ``diag_failures``
        (JSON list of messages) and ``diag_checks`` (JSON: per check its
        value, where, the limit applied, and why the limit is what it is).
        ``diag_n_chains`` and ``diag_n_draws`` (also attrs ``n_chains`` and
        ``n_draws`` of the ``diagnostics`` group) state the draws all of it was
        computed on. A check that could not be made is never passed: R-hat or
        ESS with no finite element (fewer than 4 draws per chain; R-hat with one
        chain) fails, saying why; divergences or E-BFMI that ``sample_stats``
        does not record (and R-hat for an approximate fit) are NaN with
        ``not_checked`` in ``diag_checks`` and a message in ``diag_failures``.
        ``diag_verdict`` is ``"converged"`` (``diag_converged`` 1), ``"not
        converged"``, or ``"not fully checked"`` when only such checks were
        missing.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> rng = np.random.default_rng(0)
    >>> post = xr.Dataset({"x": (("chain", "draw"), rng.normal(size=(4, 500)))})
    >>> stats = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((4, 500), bool)),
    ...                     "energy": (("chain", "draw"), rng.normal(size=(4, 500)))})
    >>> dt = xr.DataTree.from_dict({"posterior": post, "sample_stats": stats})
    >>> out = compute_diagnostics(dt, warn=False)
    >>> bool(out.attrs["diag_max_r_hat"] < 1.01)
    True
    """
    return diagnose(fit, var_names=var_names, thresholds=thresholds, warn=warn)


def diagnose(
    fit: xr.DataTree,
    *,
    var_names: Sequence[str] | None = None,
    thresholds: Mapping[str, float] | None = None,
    warn: bool = True,
    known: Mapping[str, xr.Dataset] | None = None,
) -> xr.DataTree:
    """:func:`compute_diagnostics`, reusing ``known`` per-element statistics of posterior variables.

    ``known`` (as :func:`per_variable` gives them) must come from these very
    draws: :func:`hierbench.bayes.fit` passes the statistics its stopping
    check computed on the kept draws, so they are not computed twice.
    """
    th = _thresholds(thresholds)
    post = _posterior(fit, var_names)
    per_element = _per_element(post, known)
    approx = _approximate(fit)
    checks = [
        _rhat_check(per_element, post, th, approx),
        *_ess_checks(per_element, post, th),
        *_sampler_checks(fit, th, approx),
    ]
    bad = _nonfinite_draws(post)
    failures = ([bad] if bad else []) + [c["failure"] for c in checks if c["failure"]]
    unchecked = [c["failure"] for c in checks if c["failure"] and c.get("not_checked")]
    verdict = ("converged" if not failures else
               NOT_FULLY_CHECKED if len(unchecked) == len(failures) else "not converged")  # fmt: skip
    failed_at = [c["at"] for c in checks if c["failure"] and c["at"]]
    out = fit.copy()
    out["diagnostics"] = xr.DataTree.from_dict(
        {k: per_element[k] for k in ("r_hat", "ess_bulk", "ess_tail")}
    )
    sizes = {"n_chains": int(post.sizes["chain"]), "n_draws": int(post.sizes["draw"])}
    out["diagnostics"].attrs.update(sizes)  # the draws these statistics are of
    rhat, n_div = checks[0], checks[3]["value"]
    out.attrs.update(
        diag_max_r_hat=rhat["value"],
        diag_min_ess_bulk=checks[1]["value"],
        diag_min_ess_tail=checks[2]["value"],
        diag_n_divergent=int(n_div) if np.isfinite(n_div) else float("nan"),  # NaN: not recorded
        diag_min_bfmi=checks[4]["value"],
        diag_converged=int(not failures),
        diag_verdict=verdict,
        diag_failures=json.dumps(failures),
        diag_thresholds=json.dumps(th),
        diag_r_hat_limit=rhat.get("over_limit_limit", rhat["limit"]),
        diag_n_checked=rhat["n_elements"],
        diag_n_chains=sizes["n_chains"],
        diag_n_draws=sizes["n_draws"],
        diag_checks=json.dumps([{k: v for k, v in c.items() if k != "failure"} for c in checks]),
    )
    made = [c["failure"] is not None and not c.get("not_checked") for c in checks]
    advice = _advice(fit, failed_at, made[3], made[4])
    out.attrs["diag_advice"] = advice
    if warn and failures:
        head, tail = (("fit failed convergence checks: ", " Do not use its summaries until this is fixed.")
                      if verdict == "not converged" else
                      ("fit not fully checked: ", " Its summaries rest on the checks that were made only."))  # fmt: skip
        warn_user(head + "; ".join(failures) + ". " + advice + tail, ConvergenceWarning)
    return out


def _thresholds(thresholds: Mapping[str, float] | None) -> dict[str, float]:
    th = dict(DEFAULT_THRESHOLDS)
    if thresholds:
        unknown = sorted(set(thresholds) - set(th))
        if unknown:
            raise ValueError(f"`thresholds` keys must be among {sorted(th)}; got unknown {unknown}")
        th.update(thresholds)
    return th


def _posterior(fit: xr.DataTree, var_names: Sequence[str] | None) -> xr.Dataset:
    if "posterior" not in fit.children:
        raise ValueError(f"`fit` must have a `posterior` group; has {list(fit.children)}")
    post = fit["posterior"].to_dataset()
    if var_names is not None:
        missing = [v for v in var_names if v not in post]
        if missing:
            raise ValueError(f"`var_names` must name posterior variables; not found: {missing}")
        post = post[list(var_names)]
    return post


def _per_element(post: xr.Dataset, known: Mapping[str, xr.Dataset] | None = None) -> dict[str, xr.Dataset]:
    """Rank-normalised R-hat, bulk and tail ESS, and the ESS within chains, per element.

    ``ess_within`` is the Monte Carlo noise an element would show if its chains
    agreed; the pooled ESS shrinks when they disagree, which would let an
    element excuse its own R-hat. Computed for all elements at once by
    :func:`~hierbench.bayes._checks._rankstats.rank_diagnostics` (the statistics the
    default fit's stopping rule reads); a variable with a non-finite draw, or a
    fit with one chain or under four draws, goes to arviz-stats as it is.
    Variables in ``known`` take their statistics from there.
    """
    have = [v for v in post.data_vars if known is not None and v in known["r_hat"]]
    fast = [
        v for v in post.data_vars
        if v not in have and np.issubdtype(post[v].dtype, np.number) and bool(np.isfinite(post[v].values).all())
    ] if post.sizes["chain"] > 1 and post.sizes["draw"] >= 4 else []  # fmt: skip
    out = _vectorised(post[fast]) if fast else {k: xr.Dataset() for k in _PER_ELEMENT}
    if have:
        out = {k: out[k].merge(known[k][have]) for k in _PER_ELEMENT}
    rest = [v for v in post.data_vars if v not in fast and v not in have]
    if rest:
        slow = _by_arviz(post[rest])
        out = {k: out[k].merge(slow[k]) for k in _PER_ELEMENT}
    return {k: v[list(post.data_vars)] for k, v in out.items()}


_PER_ELEMENT = ("r_hat", "ess_bulk", "ess_tail", "ess_within")


def _vectorised(post: xr.Dataset) -> dict[str, xr.Dataset]:
    # every variable here is numeric; no sampler runs now, so the statistics may use every core
    return per_variable(post, rank_diagnostics(elements(post), workers=available_cores()))


def per_variable(post: xr.Dataset, d: Mapping[str, np.ndarray]) -> dict[str, xr.Dataset]:
    """Per-element statistics ``d`` of ``elements(post)`` (in its order) as one Dataset per statistic."""
    out: dict[str, dict[str, xr.DataArray]] = {k: {} for k in _PER_ELEMENT}
    at = 0
    for v in post.data_vars:
        tmpl = post[v].transpose("chain", "draw", ...).isel(chain=0, draw=0, drop=True)
        size = int(tmpl.size)
        for k in _PER_ELEMENT:
            out[k][v] = tmpl.copy(data=d[k][at : at + size].reshape(tmpl.shape))
        at += size
    return {k: xr.Dataset(v) for k, v in out.items()}


def _by_arviz(post: xr.Dataset) -> dict[str, xr.Dataset]:
    import arviz_stats as azs

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return {
            "r_hat": azs.rhat(post),
            "ess_bulk": azs.ess(post, method="bulk"),
            "ess_tail": azs.ess(post, method="tail"),
            # rank R-hat is the larger of the bulk and the folded R-hat, so its noise follows
            # the smaller of the two ESS (antithetic NUTS chains: folded far below bulk)
            "ess_within": sum(
                np.minimum(
                    azs.ess(post.isel(chain=[c]), method="bulk"),
                    azs.ess(post.isel(chain=[c]), method="folded"),
                )
                for c in range(post.sizes["chain"])
            ),
        }


def _where(name: str, da: xr.DataArray, flat_index: int) -> str:
    """``name[label, ...]`` of one element of a per-element diagnostic."""
    if not da.dims:
        return name
    idx = np.unravel_index(flat_index, da.shape)
    labels = [str(da[d].values[i]) if d in da.coords else str(i) for d, i in zip(da.dims, idx, strict=True)]
    return f"{name}[{', '.join(labels)}]"


#: Why each limit is what it is (shown by the report beside the values).
WHY = {
    "r_hat": (
        "1.01 (Vehtari et al. 2021), raised for the number of elements checked: one element of a "
        "mixed fit exceeds 1.01 with probability about 1e-3, so the maximum over hundreds of "
        "elements often does. The limit is max(1.01, 1 + (m q / ESS_w - 1 / n) / 2), at most "
        "1.05, where m = 2 x chains split halves, n = draws / 2, ESS_w the element's ESS within "
        "chains and q the 1 - 0.05 / (2 P) quantile of chi2(m - 1) / (m - 1) over P elements: a "
        "converged fit fails it with probability about 5% whatever its size"
    ),
    "ess_bulk": (
        "100 per chain (Vehtari et al. 2021): below that, R-hat and the Monte Carlo errors of "
        "means and quantiles are themselves unreliable"
    ),
    "ess_tail": "100 per chain, as for the bulk: the 5% and 95% quantiles (interval ends) need it",
    "divergences": (
        "0: a divergent transition means NUTS met curvature it could not follow, so part of the "
        "posterior may be unexplored (Betancourt 2017)"
    ),
    "bfmi": (
        "0.3 in every chain (Betancourt 2016): below it, momentum resampling explores the energy "
        "distribution too slowly to reach the tails"
    ),
}


def _check(name: str, value: float, at: str, limit: float, rule: str, failure: str | None) -> dict:
    return {"check": name, "value": value, "at": at, "limit": limit, "rule": rule,
            "why": WHY[name], "passed": failure is None, "failure": failure}  # fmt: skip


def _rhat_check(pe: dict, post: xr.Dataset, th: dict, approx: tuple[str, str] = ("", "")) -> dict:
    """The largest R-hat with its own limit, and any element over its limit (module docstring).

    No element with a finite R-hat (fewer than 4 draws per chain, one chain, or nothing that
    varies) fails the check, saying why; for an approximate fit (one chain of independent
    draws) R-hat does not apply and is recorded as not checked.
    """
    chains, draws = int(post.sizes["chain"]), int(post.sizes["draw"])
    n_elem = int(sum(np.isfinite(np.asarray(d.values, float)).sum() for d in pe["r_hat"].data_vars.values()))
    if n_elem == 0:
        return _not_computable("r_hat", "R-hat", post, th, approx)
    worst, excess = None, -np.inf  # the element furthest over (or least under) its limit
    top = (np.nan, "", float(th["r_hat"]))  # the largest R-hat, where, and its limit
    for name, da in pe["r_hat"].data_vars.items():
        rv = np.asarray(da.values, dtype=float).ravel()
        ok = np.flatnonzero(np.isfinite(rv))
        if not ok.size:
            continue
        ev = np.asarray(pe["ess_within"][name].values, dtype=float).ravel()[ok]
        lim = r_hat_limit(np.where(np.isfinite(ev), ev, 1.0), n_elem, chains, draws, th["r_hat"])
        j = int(np.argmax(rv[ok] - lim))
        if rv[ok[j]] - lim[j] > excess:
            excess, worst = rv[ok[j]] - lim[j], (_where(str(name), da, int(ok[j])), rv[ok[j]], lim[j], str(name))
        k = int(np.argmax(rv[ok]))
        if not rv[ok[k]] <= top[0]:
            top = (float(rv[ok[k]]), _where(str(name), da, int(ok[k])), float(lim[k]))
    failure = None
    if worst is not None and excess > 0:
        failure = (
            # the variable's own name: a formula model's `re[1|task]` was cut at its bracket to `re`
            f"R-hat {worst[1]:.3f} > its limit {worst[2]:.3f} (at `{worst[3]}`; the "
            f"limit allows for {n_elem} elements checked and the element's ESS)"
        )
    out = _check("r_hat", top[0], top[1], top[2], "<=", failure)
    out["n_elements"] = n_elem
    if failure:
        out |= {"over_limit_at": worst[0], "over_limit_value": float(worst[1]),
                "over_limit_limit": float(worst[2])}  # fmt: skip
    return out


#: ArviZ's rank-normalised R-hat and ESS are NaN below this many draws per chain
MIN_DRAWS = 4


def _not_computable(key: str, label: str, post: xr.Dataset, th: dict, approx: tuple[str, str]) -> dict:
    """A check no element could be computed for: failed with why and what to do, never passed.

    For an approximate fit R-hat does not apply (one chain of independent draws): recorded as
    not checked, naming the fit's own check.
    """
    chains, draws = int(post.sizes["chain"]), int(post.sizes["draw"])
    limit = float(th["r_hat"]) if key == "r_hat" else float(th[f"{key}_per_chain"] * chains)
    if key == "r_hat" and approx[0]:
        out = _check(key, np.nan, "", limit, "<=", f"R-hat not checked: {approx[0]} draws independent draws "
                     f"from its approximation in one chain, so R-hat, which compares chains, does not apply{approx[1]}")
        return out | {"n_elements": 0, "not_checked": True}
    if draws < MIN_DRAWS and key != "r_hat":  # the R-hat failure, first, says it in full
        why = f"fewer than {MIN_DRAWS} draws per chain"
    elif draws < MIN_DRAWS:
        why = (f"ArviZ computes R-hat and ESS from at least {MIN_DRAWS} draws per chain and this fit has {draws} "
               f"per chain in {chains} chain{'s' * (chains != 1)}: refit with more draws")
    elif key == "r_hat" and chains < 2:
        why = ("R-hat compares chains and this fit has 1 chain: refit with 2 or more chains "
               "(hierbench.bayes.fit runs 4 by default)")
    else:
        why = ("every checked element is constant over the draws or has non-finite draws: check "
               "that the posterior holds the sampled parameters")
    out = _check(key, np.nan, "", limit, "<=" if key == "r_hat" else ">=",
                 f"{label} not computable: no element has a finite {label} ({why})")
    return out | ({"n_elements": 0} if key == "r_hat" else {})


def _ess_checks(pe: dict, post: xr.Dataset, th: dict) -> list[dict]:
    chains = int(post.sizes["chain"])
    out = []
    for key, label in (("ess_bulk", "ESS_bulk"), ("ess_tail", "ESS_tail")):
        need = th[f"{key}_per_chain"] * chains
        best, at, var = np.inf, "", ""
        for name, da in pe[key].data_vars.items():
            v = np.asarray(da.values, dtype=float).ravel()
            if np.isfinite(v).any():
                k = int(np.nanargmin(v))
                if v[k] < best:
                    best, at, var = float(v[k]), _where(str(name), da, k), str(name)
        if not np.isfinite(best):
            out.append(_not_computable(key, label, post, th, ("", "")))
            continue
        fail = f"min {label} {best:.0f} < {need:.0f} (at `{var}`)" if best < need else None
        out.append(_check(key, best, at, float(need), ">=", fail))
    return out


def _approximate(fit: xr.DataTree) -> tuple[str, str]:
    """For a fit of :func:`hierbench.bayes.fit_approx`: what it is, and its own check (else two ``""``).

    E.g. ``("an approximate (advi) fit", "; its own check is the PSIS k-hat ...")``: the NUTS
    checks (R-hat, divergences, E-BFMI) do not apply to it.
    """
    a = fit.attrs
    try:
        approximate = bool(int(a.get("approximate", 0) or 0))
        k = float(a.get("psis_khat", np.nan))
    except (TypeError, ValueError):
        approximate, k = False, np.nan
    if not approximate:
        return "", ""
    own = (f"; its own check is the PSIS k-hat (Yao et al. 2018): {k:.2f} against the threshold "
           f"{float(a.get('psis_khat_threshold', 0.7)):.2f}" if np.isfinite(k) else
           "; its own check, the PSIS k-hat (Yao et al. 2018), was not computed")  # fmt: skip
    return f"an approximate ({a.get('method', '?')}) fit", own


def _sampler_checks(fit: xr.DataTree, th: dict, approx: tuple[str, str] = ("", "")) -> list[dict]:
    """Divergences and E-BFMI from ``sample_stats``; where the fit has not recorded them, not checked (never passed)."""
    import arviz_stats as azs

    stats = fit["sample_stats"].to_dataset() if "sample_stats" in fit.children else xr.Dataset()
    n_div, min_bfmi = np.nan, np.nan
    if "diverging" in stats:
        n_div = int(stats["diverging"].values.sum())
    if "energy" in stats:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            min_bfmi = float(np.min(np.asarray(azs.bfmi(stats[["energy"]])["energy"])))
    div_fail = f"{n_div} divergent transitions" if n_div > th["divergences"] else None
    bfmi_fail = f"min E-BFMI {min_bfmi:.3f} < {th['bfmi']}" if min_bfmi < th["bfmi"] else None
    div = _check("divergences", float(n_div), "", float(th["divergences"]), "<=", div_fail)
    bfmi = _check("bfmi", min_bfmi, "", float(th["bfmi"]), ">=", bfmi_fail)
    for c, var, label in ((div, "diverging", "divergent transitions"), (bfmi, "energy", "E-BFMI")):
        if np.isfinite(c["value"]):
            continue
        if approx[0]:
            why = f"{approx[0]} has no NUTS trajectories, so {label} {'do' if c is div else 'does'} not apply"
        elif "sample_stats" not in fit.children:
            why = ("the fit has no sample_stats group (a file made elsewhere, or a tree whose sample_stats "
                   "were dropped): keep sample_stats with the posterior, or refit with hierbench.bayes.fit")
        elif var not in stats:
            why = f"its sample_stats hold no `{var}`: keep it with the posterior, or refit with hierbench.bayes.fit"
        else:
            why = f"the sampler's `{var}` is constant or not finite over the draws"
        c.update(passed=False, not_checked=True, failure=f"{label} not checked: {why}")
    return [div, bfmi]


def _nonfinite_draws(post: xr.Dataset) -> str | None:
    """A NaN or infinite draw makes R-hat / ESS NaN, which the checks skip: count them apart."""
    bad = {
        str(v): int((~np.isfinite(post[v].values)).sum())
        for v in post.data_vars
        if np.issubdtype(post[v].dtype, np.number) and not np.isfinite(post[v].values).all()
    }
    if not bad:
        return None
    return f"{sum(bad.values())} non-finite (NaN or inf) posterior draws, in " + ", ".join(
        f"`{k}` ({n})" for k, n in sorted(bad.items())
    )


#: the default fit's cap on the draws per chain: the one owner (the sampler's ``MAX_DRAWS`` is this;
#: the sampler imports the checks, so the value lives here)
DEFAULT_MAX_DRAWS = 2000


def _advice(fit: xr.DataTree, failed_at: Sequence[str], diverged: bool, low_bfmi: bool = False) -> str:
    """The structural cause and the fix for the failing parameters, from the builder's hints.

    Where the run kept a fixed number of draws below the default fit's cap and only R-hat or
    ESS failed (no divergence, no low E-BFMI), more draws come first: a short run's ESS says
    nothing of the parameterisation (the SWE-bench 1PL refit at 200 draws per chain was told
    ``centred=False``, a form its card measured as worse).
    """
    hints = fit_record(fit, "hierbench_structure").get("hints", {})
    # a check names the element (`sd_task[3]`); the builder's hints name the variable, or an
    # element (a formula model's `sd[1|task]`: `sd` at component '1|task'); one sentence per
    # hint, naming every failing variable it explains
    by_hint: dict[tuple[str, str], list[str]] = {}
    for name in dict.fromkeys(at if at in hints else at.split("[", 1)[0] for at in failed_at):
        if name in hints:
            by_hint.setdefault(tuple(hints[name]), []).append(f"`{name}`")
    said = [f"{', '.join(names)}: likely cause: {cause}; fix: {fix}." for (cause, fix), names in by_hint.items()]
    short = None if diverged or low_bfmi else _short_fixed_run(fit)
    if said and short:
        said = [f"{short}: refit with more draws first (with nutpie, draws=None draws to the target ESS; "
                f"else draws={DEFAULT_MAX_DRAWS}). If it still fails:", *said]  # fmt: skip
    if diverged:
        said.append(
            "Divergences: the sampler met curvature it cannot follow (a funnel between a group "
            "scale and its effects, or a weakly identified term); refit with target_accept=0.95, "
            "and if they persist switch that group's parameterisation (`centred=`) or drop the term."
        )
    if not said and failed_at:
        said.append(f"`{failed_at[0]}` mixes slowly: {_more_draws(fit)} or check hierbench.bayes.describe(fit) "
                    "for a weakly identified term.")  # fmt: skip
    return " ".join(said)


def _short_fixed_run(fit: xr.DataTree) -> str | None:
    """Says that the run kept a fixed number of draws per chain below the default fit's cap (else None)."""
    settings = fit_record(fit, "sampler_settings")
    draws = settings.get("draws")
    if settings.get("draws_rule") != "fixed" or not isinstance(draws, int) or draws >= DEFAULT_MAX_DRAWS:
        return None
    return f"The run kept a fixed {draws} draws per chain, fewer than the default (nutpie) fit may draw ({DEFAULT_MAX_DRAWS})"


def _more_draws(fit: xr.DataTree) -> str:
    """How to draw more: past the cap a run to a target ESS stopped at, else more fixed draws and tuning.

    A run to a target that hit its cap already drew ``max_draws`` per chain: "draws=2000" was the
    advice, the cap of the default run, so following it gave the same draws again (METR's
    continuous scores under the formula model: ESS 385 at 2,000 draws per chain).
    """
    run = fit_record(fit, "fit_run")
    if run.get("rule") == "target_ess" and run.get("reached") is False:
        cap = int(run.get("max_draws", 0))
        return (f"the run stopped at its cap of {cap} draws per chain short of its target: refit with "
                f"max_draws={2 * cap} and tune=1000")
    return "refit with more draws and tuning (draws=2000, tune=2000)"


def predictive_check(
    fit: xr.DataTree,
    *,
    group: str = "posterior_predictive",
    var_name: str | None = None,
) -> xr.Dataset:
    """Observed vs predicted distribution of per-cell success counts.

    For every agent, the histogram of success counts ``c`` over its observed
    (agent, task) cells is compared with the same histogram computed from
    each predictive draw. Overdispersion (too many all-fail and all-pass
    tasks for a binomial) shows up as observed mass at the ends outside the
    predictive band.

    Parameters
    ----------
    fit : xarray.DataTree
        A fit with ``observed_data`` and ``group`` (``posterior_predictive``
        or ``prior_predictive``) holding the likelihood variable over the
        ``cell`` dim, with non-index coords ``cell_agent``, and
        ``constant_data`` holding ``cell_n_runs``.
    group : {"posterior_predictive", "prior_predictive"}
    var_name : str, optional
        The observed variable; default the only one.

    Returns
    -------
    xarray.Dataset
        Over dims ``(agent, n_runs, successes)`` (cells grouped by their
        number of runs): ``observed`` (count of cells), ``predicted_mean``,
        ``predicted_lower`` / ``predicted_upper`` (the 5% and 95% quantiles
        over draws), ``p_value`` (the posterior predictive p-value
        ``P(pred >= obs)``) and ``p_value_low`` (``P(pred <= obs)``): a count
        is extreme when either is small.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> cell = xr.Dataset(coords={"cell": [0, 1], "cell_agent": ("cell", ["a", "a"])})
    >>> obs = xr.Dataset({"y": ("cell", [0, 2])}, coords=cell.coords)
    >>> pp = xr.Dataset({"y": (("chain", "draw", "cell"), np.ones((1, 3, 2), int))},
    ...                 coords=cell.coords)
    >>> const = xr.Dataset({"cell_n_runs": ("cell", [2, 2])}, coords=cell.coords)
    >>> dt = xr.DataTree.from_dict({"observed_data": obs, "posterior_predictive": pp,
    ...                             "constant_data": const})
    >>> int(predictive_check(dt).observed.sel(agent="a", n_runs=2, successes=0))
    1
    """
    if group not in fit.children:
        raise ValueError(
            f"`group` must be a group of `fit`; {group!r} not in {list(fit.children)}"
            + missing_group_advice(fit, group, f"refit with hierbench.bayes.fit(model, ..., {group}=True)")
        )
    obs = fit["observed_data"].to_dataset()
    if var_name is None:
        if len(obs.data_vars) != 1:
            raise ValueError(
                f"`var_name` is required when observed_data has several variables: {list(obs.data_vars)}"
            )
        var_name = next(iter(obs.data_vars))
    y = obs[var_name]
    if "cell" not in y.dims or "cell_agent" not in y.coords:
        raise ValueError(_not_counts_message(fit, var_name, y, group))
    n = fit["constant_data"].to_dataset()["cell_n_runs"].values.astype(int)
    pred = fit[group].to_dataset()[var_name].stack(sample=("chain", "draw")).transpose("sample", "cell")
    agents_cell = np.asarray(y["cell_agent"].values).astype(str)
    agents = list(dict.fromkeys(agents_cell))
    n_vals = np.unique(n)
    out = _count_histograms(y.values.astype(int), pred.values.astype(int), n, agents_cell, agents)
    dims = ("agent", "n_runs", "successes")
    coords = {"agent": agents, "n_runs": n_vals, "successes": np.arange(int(n.max()) + 1)}
    return xr.Dataset(
        {k: (dims, v) for k, v in out.items()},
        coords=coords,
        attrs={"group": group, "var_name": var_name, "band_prob": 0.9},
    )


def _not_counts_message(fit: xr.DataTree, var_name: str, y: xr.DataArray, group: str) -> str:
    """Why ``predictive_check`` cannot read this fit: what it needs, what the fit is, what to do instead."""
    spec = fit_record(fit, "hierbench_spec")
    opts = spec.get("options", {})
    what = f"a {spec['model']!r} fit" if spec.get("model") else "a fit with no hierbench spec"
    if opts.get("family"):
        what += f" of family {opts['family']!r}"
    return (
        "`fit` must be a fit of success counts per (agent, task) cell: predictive_check compares histograms "
        "of those counts, so it needs the observed variable over dim `cell` with coord `cell_agent` (fits of "
        "0/1 scores: build_crossed and its relatives, build_mixed with the binomial family on cell rows). "
        f"Got {what}, whose observed variable {var_name!r} is over dims {list(map(str, y.dims))} with coords "
        f"{sorted(map(str, y.coords))}: [0, 1] (partial-credit) and graded scores have no success counts. "
        f"For such a fit compare fit[{group!r}][{var_name!r}] with fit['observed_data'][{var_name!r}] directly"
    )


def _count_histograms(yv, pv, n, agents_cell, agents) -> dict[str, np.ndarray]:
    """Per (agent, n): the observed and per-draw histograms of success counts, summarised."""
    n_vals, max_n = np.unique(n), int(n.max())
    shape = (len(agents), n_vals.size, max_n + 1)
    out = {"observed": np.zeros(shape)}
    for k in ("predicted_mean", "predicted_lower", "predicted_upper", "p_value", "p_value_low"):
        out[k] = np.full(shape, np.nan)
    for i, a in enumerate(agents):
        for j, nn in enumerate(n_vals):
            sel = (agents_cell == a) & (n == nn)
            if not sel.any():
                continue
            obs_h = np.bincount(yv[sel], minlength=max_n + 1)
            pred_h = np.stack([np.bincount(r, minlength=max_n + 1) for r in pv[:, sel]])
            m = slice(0, nn + 1)
            out["observed"][i, j] = obs_h
            out["predicted_mean"][i, j, m] = pred_h.mean(0)[m]
            out["predicted_lower"][i, j, m] = np.quantile(pred_h, 0.05, axis=0)[m]
            out["predicted_upper"][i, j, m] = np.quantile(pred_h, 0.95, axis=0)[m]
            out["p_value"][i, j, m] = (pred_h >= obs_h).mean(0)[m]
            out["p_value_low"][i, j, m] = (pred_h <= obs_h).mean(0)[m]
    return out


def _observation_key(f: xr.DataTree) -> tuple:
    """What a fit's pointwise log-likelihood is over: dims, sizes, labels and observed values.

    Works for any observation dim (``cell`` for the count models, ``battle`` for
    Bradley-Terry with ties, ``pair`` without, ``obs`` for graded formula fits), so fits
    of different data are never compared by LOO.
    """
    ll = f["log_likelihood"].to_dataset()
    name, da = next(iter(ll.data_vars.items()))
    dims = tuple(d for d in da.dims if d not in ("chain", "draw"))
    labels = tuple(
        (c, tuple(np.asarray(da.coords[c].values).astype(str).tolist()))
        for c in sorted(map(str, da.coords))
        if c not in ("chain", "draw") and da.coords[c].dims and set(da.coords[c].dims) <= set(dims)
    )
    observed: tuple = ()
    if "observed_data" in f.children and name in f["observed_data"].to_dataset():
        observed = tuple(np.asarray(f["observed_data"].to_dataset()[name].values).ravel().tolist())
    return (dims, tuple(da.sizes[d] for d in dims), labels, observed)


def loo_compare(fits: Mapping[str, xr.DataTree], *, unit: Literal["auto", "task", "cell"] = "auto") -> pd.DataFrame:
    """Compare fits on the same observations by PSIS-LOO (arviz-stats ``compare``), with its Pareto k checked.

    Fits of counts (observations over ``cell``, with ``cell_task``) of the crossed
    and beta-binomial models are compared by default on their tasks: each model
    predicts all of a left-out task's cells.
    A crossed fit's task log-likelihood integrates out the effects only that
    task's cells inform (its task effect, its agent x task effects, and its
    cluster's when it is alone in it), computed from the posterior (per draw: about
    90 s for SWE-bench's 12,500 cells at 6,400 draws, 24 s for METR at 1,800), so a
    fit saved without its ``log_likelihood`` group works; the beta-binomial's cells, which
    are independent given its parameters, are summed per task. The crossed
    model's stored cell log-likelihood conditions on the task's effect, which
    PSIS cannot leave out when few cells inform it (one agent: each task is one
    cell), and then ranks it far too high (tau-bench: +9.9 elpd where exact
    leave-one-out gives +0.1).

    Each fit's Pareto k are checked against arviz-stats' ``good_k``,
    ``min(1 - 1 / log10(S), 0.7)`` for ``S`` draws (Vehtari et al. 2024): an
    observation above it has an unreliable PSIS estimate, and so has the elpd
    that sums it. Such a fit is warned (``UnreliableLOOWarning``, a ``NotConvergedWarning``) and
    marked in the table, and the comparison's ``weight`` and ``p_worse`` are
    NaN: no ranking is presented as a verdict on unreliable elpds.

    Parameters
    ----------
    fits : mapping of str to xarray.DataTree
        Fits over the same observations: the same dims (``cell`` for the count
        models, which all use the observed agent x task cells; ``battle`` for
        Bradley-Terry with ties, ``pair`` without), the same labels and the same
        observed values. Fits other than crossed ones need a ``log_likelihood`` group.
    unit : {"auto", "task", "cell"}
        What is left out for fits of counts: a task (all its cells) or one cell
        (the stored cell log-likelihoods, conditional on the task's effect in the
        crossed model). ``"auto"`` (default): tasks when every fit is a crossed or
        beta-binomial one, else cells: an IRT task keeps its own difficulty and
        slope, which only its cells inform, so leaving out a task voids PSIS
        (METR's 2PL: 77 of 83 tasks with high k), while with several agents a
        cell is one of many informing them. Other fits always leave out one
        observation.

    Returns
    -------
    pandas.DataFrame
        The arviz-stats comparison table (elpd, p, elpd_diff, se, dse, weight,
        ...), best model first, at full precision (arviz-stats rounds its table
        for display by default; numbers here are for computing with), plus
        ``n_high_k`` (observations with Pareto k above ``good_k``) and
        ``elpd_reliable``. ``attrs``: ``unit`` (``"task"``, ``"cell"`` or the
        observation dim) and ``unreliable`` (the names of the flagged fits).
        ``weight`` is the stacking weight, which puts nearly all weight on one
        of two models that predict alike (tau-bench: 1.0 against 2e-16 for an
        ``elpd_diff`` of 0.06 with ``dse`` 0.14): read ``elpd_diff`` against
        ``dse`` for whether the models differ.

    Raises
    ------
    ValueError
        If fewer than two fits are given, their observations differ, or a fit
        lacks the log-likelihood it needs (saying so when a compact save dropped it).
    """
    import arviz_stats as azs

    if len(fits) < 2:
        raise ValueError(f"`fits` must hold at least two fits; got {len(fits)}")
    unit = check_choice(unit, "unit", ("auto", "task", "cell"))
    if unit == "auto":
        unit = "task" if all(f.attrs.get("hierbench_model") in TASK_LEVEL_MODELS for f in fits.values()) else "cell"
    by_task = unit == "task" and all(count_cells(f) is not None for f in fits.values())
    cells, points = {}, {}
    for name, f in fits.items():
        if by_task and f.attrs.get("hierbench_model") == "crossed":  # its task log-likelihood is computed
            cells[name] = _task_key(f)
            continue
        check_log_likelihood(f, f"`fits[{name!r}]`")
        cells[name] = _task_key(f) if by_task else _observation_key(f)
    _check_same_observations(cells)
    for name, f in fits.items():
        points[name] = _elpd(f, task_log_likelihood(f) if by_task else None)
    table = azs.compare(points, round_to="none")
    return _mark_unreliable(table, points, "task" if by_task else ", ".join(next(iter(cells.values()))[0]))


def _check_same_observations(cells: dict) -> None:
    """Refuse fits whose observations (dims, sizes, labels, observed values) differ from the first's."""
    first, ref = next(iter(cells.items()))
    parts = ("dims", "sizes", "labels", "observed values")
    bad = {k: [p for p, a, b in zip(parts, v, ref, strict=True) if a != b] for k, v in cells.items() if v != ref}
    if bad:
        raise ValueError(
            f"`fits` must share the same observations (log-likelihood dims, their sizes and labels, and the "
            f"observed values): LOO compares predictions of the same data. {list(bad)} differ from the first "
            f"({first!r}), in {bad} (pass/fail counts and grades of one log, e.g., are different data)"
        )


def _task_key(f: xr.DataTree) -> tuple:
    """What a fit of counts predicts task by task: its cells' agents and tasks, and their counts."""
    y = count_cells(f)
    labels = tuple((c, tuple(np.asarray(y[c].values).astype(str).tolist())) for c in ("cell_agent", "cell_task"))
    tasks = dict.fromkeys(labels[1][1])
    return (("task",), (len(tasks),), labels, tuple(np.asarray(y.values).ravel().tolist()))


def _elpd(f: xr.DataTree, ll: xr.DataArray | None) -> object:
    """PSIS-LOO of one fit, pointwise (for its Pareto k): on ``ll`` when given, else its log_likelihood group."""
    import arviz_stats as azs

    if ll is None:
        return azs.loo(f, pointwise=True)
    tree = {"log_likelihood": ll.to_dataset()}
    if "posterior" in f.children:
        tree["posterior"] = f["posterior"].to_dataset()
    return azs.loo(xr.DataTree.from_dict(tree), pointwise=True)


def _mark_unreliable(table: pd.DataFrame, points: dict, unit: str) -> pd.DataFrame:
    """Add ``n_high_k`` and ``elpd_reliable``; warn for each fit with high Pareto k and void the weights."""
    high = {name: int((np.asarray(e.pareto_k) > e.good_k).sum()) for name, e in points.items()}
    table["n_high_k"] = [high[name] for name in table.index]
    table["elpd_reliable"] = [high[name] == 0 for name in table.index]
    bad = [name for name in table.index if high[name]]
    first = "" if unit == "task" else "leave out whole tasks (unit='task', the default for fits of counts), "
    for name in bad:
        e = points[name]
        warn_user(
            f"PSIS-LOO of `fits[{name!r}]` is unreliable: {high[name]} of its {e.n_data_points} "
            f"observations ({unit}s) have Pareto k above {e.good_k:.2f} (Vehtari et al. 2024), so its elpd "
            f"({e.elpd:.1f}) and the ranking are void: the table's weight and p_worse are NaN. A high k marks "
            "an observation that alone informs some of the model's parameters (e.g. a task's own "
            f"difficulty and slope): {first}refit without those observations instead (exact or K-fold "
            "cross-validation over tasks, arviz_stats.loo_kfold)",
            UnreliableLOOWarning,
        )
    if bad:
        table["weight"] = np.nan
        if "p_worse" in table:
            table["p_worse"] = np.nan
    table.attrs.update(unit=unit, unreliable=bad)
    return table
