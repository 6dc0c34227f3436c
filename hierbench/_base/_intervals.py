"""Intervals in the house convention: :func:`make_interval` and the fixed ``ci_kind`` vocabulary.

The one default level :data:`DEFAULT_PROB`, the kinds :data:`CI_KINDS` (detail goes in the
``ci_detail`` attr), :func:`check_interval`, :func:`interval_label`, and what a reader is
told where a resampling interval is flagged (:func:`flag_advice`).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import xarray as xr

from ._checks import check_prob
from ._warnings import OUTSIDE_PACKAGE
from ._warnings import ZeroWidthIntervalWarning

#: The one default level of every interval in hierbench (frequentist and Bayesian).
DEFAULT_PROB: float = 0.95

#: The fixed ``ci_kind`` vocabulary: short key -> what it means. Detail (the
#: resampling scheme, the number of resamples, the model) goes in ``ci_detail``.
CI_KINDS: dict[str, str] = {
    "eti": "equal-tailed posterior (credible) interval",
    "hdi": "highest-density posterior (credible) interval",
    "percentile": "bootstrap percentile interval",
    "bca": "bootstrap bias-corrected and accelerated interval",
    "basic": "bootstrap basic (reverse percentile) interval",
    "t": "Student t interval",
    "max-t": "simultaneous interval of a family: estimate +- c x SE with c the quantile of the family's "
    "largest |t| (max-T), so every interval of the family covers at once at the level",
    "normal": "normal-approximation interval (estimate +- z * standard error)",
    "log-normal": "normal-approximation interval on the log scale, mapped back (estimate x exp(+- z * se / estimate))",
    "logit-normal": "normal-approximation interval on the logit scale, mapped back (delta method)",
    "wald": "Wald interval for a proportion",
    "wilson": "Wilson score interval for a proportion",
    "exact": "exact interval (Clopper-Pearson, or by enumeration)",
    "korn-graubard": "Clopper-Pearson interval at the effective sample size of a design-based proportion "
    "(Korn and Graubard 1998; approximate)",
    "conservative": "finite-sample valid bound: coverage at least the level for every fixed population, "
    "usually above it (a certificate, not an exact inversion)",
    "profile": "profile-likelihood interval",
    "betting": "anytime-valid confidence sequence (hedged betting)",
    "order-statistic": "distribution-free order-statistic interval",
    "bounded-mean": "distribution-free bound for the mean of independent values in [0, 1], whatever their law "
    "(Hoeffding's convex order)",
    "mixed": "the kind differs by cell: the result names each cell's kind (its to_frame() ci_kind column)",
    "feasible": "deterministic feasible range (probability one)",
}

CI_BOUNDS = ("lower", "upper")

#: what a reader is told where ``_numerics.few_carry_side`` flags a resampling interval (the report's
#: flag and the demo's note). Not a figure of the reader's data: in simulation a 95% percentile
#: interval covered 88% for a mean of 0.01 over 76 tasks (``bench_passk_coverage.py --bootstrap``)
#: (with task clusters that bound is taken over the clusters, and the report says how many)
_BOUND_INSTEAD = "hierbench.freq.pass_hat_k(data, 1) gives a bound that holds"
FEW_CARRY_ADVICE = f"a resampling interval covers less than its level there; {_BOUND_INSTEAD}"

#: the same, where every task scored one value (a bootstrap ``ci_flag`` "every task scored 0", or
#: "every task scored 0.5", which names the value): no resample can differ from the data, so the interval
#: has no width at all. The bound it points to is never of zero width there: pass_hat_k(data, 1) gives the
#: distribution-free bound at 0 and 1 ("exact bound") and at one value strictly between (1 of 2 runs
#: passing on every task: "bound: every task has the same value ..."), not a zero-width t interval
ZERO_WIDTH_ADVICE = (
    "no resample can differ from the data, so a resampling interval has no width (BCa: none at all); "
    f"{_BOUND_INSTEAD}"
)

#: the distinct values :func:`flat_cause` names before "and N more"
_FLAT_NAMED = 5


def flat_cause(values: Any = None) -> str:
    """Why every resample of some statistics equals the estimate, naming the one value each has on every task.

    ``values``: those statistics' values (None: not known). All 0 or 1: ``"an agent at 0, or 1,
    on every task"``; otherwise the values are named, for the cause is then not an agent at 0
    or 1 but one score strictly between on every task (or cluster), such as 1 of 2 runs passing
    on each (audit s75 A, finding 3: the warning blamed an agent at 0, or 1, where every task
    scored 0.5). The words of ``warn_bca_undefined`` (``hierbench.freq``'s kernels).

    Examples
    --------
    >>> flat_cause([0.0, 1.0])
    'an agent at 0, or 1, on every task'
    >>> flat_cause([0.5, 0.25, 0.5])
    'every task, or cluster, has one value strictly between 0 and 1 (0.25, 0.5), as with 1 of 2 runs passing on each task'
    """
    at01 = "an agent at 0, or 1, on every task"
    if values is None:
        return "every task, or cluster, has one value (" + at01 + ", say)"
    v = np.asarray(values, dtype=float).ravel()
    mid = v[(v != 0.0) & (v != 1.0)]
    if mid.size == 0:
        return at01
    distinct = np.unique(mid)
    shown = ", ".join(f"{x:g}" for x in distinct[:_FLAT_NAMED])
    shown += f" and {distinct.size - _FLAT_NAMED} more values" if distinct.size > _FLAT_NAMED else ""
    inside = bool(((mid > 0) & (mid < 1)).all())  # a difference of two agents' scores can be below 0
    where = "strictly between 0 and 1" if inside else "other than 0 or 1"
    like = ", as with 1 of 2 runs passing on each task" if inside else ""
    n01 = v.size - mid.size
    if not n01:
        return f"every task, or cluster, has one value {where} ({shown}){like}"
    return (f"every task, or cluster, has one value: 0 or 1 for {n01} of them ({at01}), and {where} "
            f"for {mid.size} ({shown}){like}")


#: in place of ``_BOUND_INSTEAD`` where the scores are not all 0 or 1: pass_hat_k refuses them, and
#: success_rate applies its rule to the per-task mean scores (the same bound for 0/1 scores)
_RATE_BOUND = "hierbench.freq.success_rate(data) gives a bound that holds (pass_hat_k's rule on the per-task mean scores)"


def flag_advice(flag: str, binary: bool = True) -> str:
    """What to tell a reader about a bootstrap ``ci_flag``: :data:`ZERO_WIDTH_ADVICE` or :data:`FEW_CARRY_ADVICE`.

    ``binary=False`` (scores that are not all 0 or 1, such as grades read on [0, 1]): the
    same, pointing to ``success_rate(data)``, whose interval is that bound on the per-task
    mean scores, for ``pass_hat_k(data, 1)`` refuses such scores.
    """
    advice = ZERO_WIDTH_ADVICE if str(flag).startswith("every ") else FEW_CARRY_ADVICE
    return advice if binary else advice.replace(_BOUND_INSTEAD, _RATE_BOUND)


_CI_BOUND_COORDS = xr.Coordinates({"ci_bound": list(CI_BOUNDS)})


def make_interval(
    lower: Any,
    upper: Any,
    *,
    prob: float,
    kind: str,
    detail: str | None = None,
    template: xr.DataArray | None = None,
    name: str = "ci",
    warn_zero_width: bool = True,
    zero_width_why: Any = None,
) -> xr.DataArray:
    """Build an interval in the house convention.

    Parameters
    ----------
    lower, upper : array-like or DataArray
        The bounds, broadcast against each other (and shaped like ``template``
        when given).
    prob : float
        The level, 0 < prob <= 1 (1 only for ``kind="feasible"``).
    kind : str
        A key of :data:`CI_KINDS`; anything else is refused.
    detail : str, optional
        Free text on how it was made (scheme, resamples, model), in ``ci_detail``.
    template : DataArray, optional
        Dims and coords for array bounds.
    warn_zero_width : bool
        Warn with :class:`ZeroWidthIntervalWarning` when every finite interval
        has zero width although ``prob < 1`` (no uncertainty was measured).
    zero_width_why : array-like of str or DataArray, optional
        Per entry (shaped like the bounds), why a zero-width interval there
        carries no uncertainty (e.g. ``"every task scored 0: no resample can
        differ"``). Given, the warning fires for *each* zero-width entry, not
        only when all are, and names the entries with their reasons (``""``:
        named without one). For estimators whose zero width is a degeneracy
        wherever it occurs; a rank interval ``[1, 1]`` is not one.

    Returns
    -------
    xarray.DataArray
        The bounds' dims plus a trailing ``ci_bound = ["lower", "upper"]``;
        attrs ``ci_prob``, ``ci_kind`` (and ``ci_detail``).

    Examples
    --------
    >>> iv = make_interval(0.1, 0.3, prob=0.95, kind="wilson")
    >>> iv.values.tolist(), iv.attrs["ci_kind"]
    ([0.1, 0.3], 'wilson')
    """
    if kind not in CI_KINDS:
        raise ValueError(
            f"`kind` must be one of {sorted(CI_KINDS)} (detail goes in `detail`); got {kind!r}"
        )
    if kind == "feasible":
        p = float(prob)
        if not 0.0 < p <= 1.0:
            raise ValueError(f"`prob` must satisfy 0 < prob <= 1; got prob={prob!r}")
    else:
        p = check_prob(prob)

    def _as(x: Any) -> xr.DataArray:
        if isinstance(x, xr.DataArray):
            return x if x.dtype == np.float64 else x.astype(float)
        arr = np.asarray(x, dtype=float)
        if template is not None:
            return template.copy(data=np.broadcast_to(arr, template.shape).astype(float))
        return xr.DataArray(arr, dims=[f"dim_{i}" for i in range(arr.ndim)])

    lo, hi = _as(lower), _as(upper)
    if lo.dims != hi.dims or lo.shape != hi.shape:
        lo, hi = xr.broadcast(lo, hi)
    # Stack with numpy rather than xr.concat: this is called once per result and
    # concat's alignment machinery cost ~10x the rest of a small estimator.
    lo = lo.transpose(*hi.dims)
    data = np.stack(
        [np.asarray(lo.values, dtype=float), np.asarray(hi.values, dtype=float)], axis=-1
    )
    # reuse the bounds' coordinate variables and indexes as they are (building
    # them again from values, and the ci_bound index from a list, was about half
    # the cost of a small estimator's result)
    coords = xr.Coordinates(
        coords={**{k: hi.coords.variables[k] for k in hi.coords}, **_CI_BOUND_COORDS.variables},
        indexes={**hi.xindexes, **_CI_BOUND_COORDS.xindexes},
    )
    out = xr.DataArray(data, dims=(*hi.dims, "ci_bound"), coords=coords)
    out.attrs = {"ci_prob": p, "ci_kind": kind}
    if detail:
        out.attrs["ci_detail"] = str(detail)
    out.name = name
    if warn_zero_width and p < 1.0:
        _warn_zero_width(out, np.asarray(lo.values, float), np.asarray(hi.values, float), zero_width_why)
    return out


#: zero-width entries a :class:`ZeroWidthIntervalWarning` names before "and N more"
_ZERO_WIDTH_NAMED = 10


def _warn_zero_width(out: xr.DataArray, lv: np.ndarray, hv: np.ndarray, why: Any) -> None:
    """:func:`make_interval`'s zero-width warning: all entries, or each one with ``why``."""
    finite = np.isfinite(lv) & np.isfinite(hv)
    flat = finite & (lv == hv)  # compared, not subtracted: an infinite end gives no inf - inf warning
    if not flat.any():
        return
    # a max-T interval is the family's simultaneous one: said, beside the per-pair one of the same result
    label = interval_label(out) + (" simultaneous" if out.attrs.get("ci_kind") == "max-t" else "")
    if why is None:
        if flat.sum() < finite.sum():
            return
        msg = (
            f"every {label} interval here has zero width. It is not a statement "
            "of certainty: the method found no variation to measure, as with too few items or "
            "tasks (one task, one run per cell) or a statistic that is constant by construction"
        )
    else:
        reasons = np.broadcast_to(np.asarray(getattr(why, "values", why), dtype=object), flat.shape)
        items = [
            f"{name} ({reasons[ix]})" if name and reasons[ix] else (name or str(reasons[ix]) or "its one entry")
            for name, ix in entry_names(out, flat)
        ]
        more = len(items) - _ZERO_WIDTH_NAMED
        shown = "; ".join(items[:_ZERO_WIDTH_NAMED]) + (f"; and {more} more" if more > 0 else "")
        what = f"{out.dims[0]}s" if flat.ndim == 1 else "entries"
        head = (
            f"every {label} interval here has zero width" if flat.sum() == finite.sum()
            else f"the {label} interval has zero width for {len(items)} of {flat.size} {what}"
        )
        msg = (
            f"{head}: {shown}. Zero width at a level below one measures no uncertainty; it is not "
            "a statement of certainty."
        )
    warnings.warn(msg, ZeroWidthIntervalWarning, stacklevel=2, skip_file_prefixes=OUTSIDE_PACKAGE)


def entry_names(out: xr.DataArray, mask: np.ndarray) -> list[tuple[str, tuple]]:
    """``(label, index)`` of each entry of ``mask`` (over ``out``'s dims but ``ci_bound``): coord values."""
    dims = [d for d in out.dims if d != "ci_bound"]
    named = []
    for ix in zip(*np.nonzero(mask), strict=True) if mask.ndim else [()]:
        parts = [str(out[d].values[i]) if d in out.coords else f"{d} {i}" for d, i in zip(dims, ix, strict=True)]
        named.append((", ".join(parts), tuple(ix)))
    return named


def check_interval(da: Any, name: str = "ci") -> xr.DataArray:
    """``da`` if it is an interval in the house convention, else a ValueError saying what is missing.

    Examples
    --------
    >>> check_interval(make_interval(0.2, 0.4, prob=0.9, kind="t")).attrs["ci_kind"]
    't'
    """
    if not isinstance(da, xr.DataArray):
        raise TypeError(f"`{name}` must be an interval DataArray; got {type(da).__name__}")
    if "ci_bound" not in da.dims:
        raise ValueError(
            f"`{name}`: an interval must have a `ci_bound` dim {list(CI_BOUNDS)}; got dims {da.dims}"
        )
    for key in ("ci_prob", "ci_kind"):
        if key not in da.attrs:
            raise ValueError(
                f"`{name}`: an interval must state its level and kind; attr {key!r} is missing"
            )
    bounds = [str(b) for b in da["ci_bound"].values]
    if bounds != list(CI_BOUNDS):
        raise ValueError(f"`{name}`: `ci_bound` must be {list(CI_BOUNDS)}; got {bounds}")
    if da.attrs["ci_kind"] == "not computed":  # a result that carries no interval (fit_beta_binomial_ml's)
        raise ValueError(
            f"`{name}` carries no interval (ci_kind 'not computed'): {da.attrs.get('ci_detail', '')}; "
            "give a result that computed one"
        )
    if da.attrs["ci_kind"] not in CI_KINDS:
        raise ValueError(
            f"`{name}`: `ci_kind` must be one of {sorted(CI_KINDS)} (detail goes in `ci_detail`); "
            f"got {da.attrs['ci_kind']!r}"
        )
    return da


def interval_label(da: xr.DataArray) -> str:
    """Return a short label such as ``"95% wilson"`` for an interval's level and kind.

    Examples
    --------
    >>> interval_label(make_interval(0.2, 0.4, prob=0.95, kind="wilson"))
    '95% wilson'
    """
    p = float(da.attrs.get("ci_prob", np.nan))
    pct = f"{100 * p:.4g}%"
    return f"{pct} {da.attrs.get('ci_kind', '?')}"
