"""Helpers shared by the posterior metrics: reading draws from a fit, intervals, warnings."""

from __future__ import annotations

from typing import Literal

import xarray as xr

from .._base import DEFAULT_PROB, HierbenchWarning, check_choice, check_prob, make_interval

__all__ = ["UndefinedMetricWarning", "get_draws", "posterior_interval"]

SAMPLE_DIMS = ("chain", "draw")
_POSTERIOR_KINDS = {"eti": "equal-tailed posterior interval", "hdi": "highest-density posterior interval"}


class UndefinedMetricWarning(HierbenchWarning):
    """A posterior metric is undefined for some entries (returned as NaN)."""


def get_draws(
    fit: xr.DataTree | xr.Dataset | xr.DataArray, var: str, *, name: str = "fit"
) -> xr.DataArray:
    """The posterior draws of ``var`` (dims ``chain``, ``draw``, ...) from a fit, a Dataset or a DataArray."""
    if isinstance(fit, xr.DataTree):
        if "posterior" not in fit.children:
            raise ValueError(f"`{name}` has no `posterior` group; groups {sorted(fit.children)}")
        ds = fit["posterior"].to_dataset()
    elif isinstance(fit, xr.Dataset):
        ds = fit
    elif isinstance(fit, xr.DataArray):
        da = fit
        ds = None
    else:
        raise TypeError(
            f"`{name}` must be an xarray.DataTree fit, a posterior Dataset or a DataArray of draws; "
            f"got {type(fit).__name__}"
        )
    if ds is not None:
        if var not in ds:
            raise ValueError(
                f"`var` must be a posterior variable of `{name}` {sorted(ds.data_vars)}; got {var!r}"
            )
        da = ds[var]
    missing = [d for d in SAMPLE_DIMS if d not in da.dims]
    if missing:
        raise ValueError(
            f"`{name}` draws of {var!r} must have dims {SAMPLE_DIMS}; missing {missing} (has {da.dims})"
        )
    return da


def posterior_interval(
    draws: xr.DataArray, *, prob: float = DEFAULT_PROB, kind: Literal["eti", "hdi"] = "eti"
) -> xr.DataArray:
    """Credible interval over ``chain`` and ``draw`` in the house convention.

    Parameters
    ----------
    draws : xarray.DataArray
        Posterior draws with dims ``chain`` and ``draw``.
    prob : float
        Probability mass inside the interval, 0 < prob < 1.
    kind : {"eti", "hdi"}
        Equal-tailed or highest-density (arviz-stats ``eti`` / ``hdi``).

    Returns
    -------
    xarray.DataArray
        The remaining dims plus a trailing ``ci_bound = ["lower", "upper"]``;
        attrs ``ci_prob``, ``ci_kind`` (``"eti"`` or ``"hdi"``) and ``ci_detail``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> d = xr.DataArray(np.linspace(0, 1, 1001)[None, :], dims=("chain", "draw"))
    >>> posterior_interval(d, prob=0.9).values.round(3).tolist()
    [0.05, 0.95]
    """
    import arviz_stats as azs

    check_choice(kind, "kind", sorted(_POSTERIOR_KINDS))
    prob = check_prob(prob)
    fn = azs.eti if kind == "eti" else azs.hdi
    ci = fn(draws, prob=prob, dim=list(SAMPLE_DIMS)).transpose(..., "ci_bound")
    return make_interval(
        ci.sel(ci_bound="lower", drop=True),
        ci.sel(ci_bound="upper", drop=True),
        prob=prob,
        kind=kind,
        detail=_POSTERIOR_KINDS[kind] + " over (chain, draw)",
        warn_zero_width=False,  # constant draws (e.g. a fixed quantity) are not a degeneracy here
    )
