"""Helpers shared by the posterior metrics: reading draws from a fit, intervals, warnings."""

from __future__ import annotations

from typing import Literal

import xarray as xr

from .._base import DEFAULT_PROB, UndefinedMetricWarning, check_choice, check_prob, make_interval

__all__ = ["UndefinedMetricWarning", "get_draws", "posterior_interval", "posterior_summary"]

SAMPLE_DIMS = ("chain", "draw")
_POSTERIOR_KINDS = {"eti": "equal-tailed posterior interval", "hdi": "highest-density posterior interval"}


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


def posterior_summary(
    draws: xr.DataArray, *, prob: float = DEFAULT_PROB, kind: Literal["eti", "hdi"] = "eti"
) -> xr.Dataset:
    """Posterior mean and credible interval of a quantity, in the house result convention.

    The Bayesian counterpart of a frequentist result: ``estimate`` (the posterior
    mean over ``chain`` and ``draw``) and ``ci`` (as :func:`posterior_interval`),
    so it lines up with bootstrap and Wilson results in
    :func:`hierbench.compare.side_by_side`.

    Parameters
    ----------
    draws : xarray.DataArray
        Posterior draws with dims ``chain`` and ``draw``.
    prob : float
        Probability mass inside the interval, 0 < prob < 1.
    kind : {"eti", "hdi"}

    Returns
    -------
    xarray.Dataset
        ``estimate(...)`` and ``ci(..., ci_bound)``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> d = xr.DataArray(np.linspace(0, 1, 1001)[None, :], dims=("chain", "draw"))
    >>> s = posterior_summary(d, prob=0.9)
    >>> round(float(s["estimate"]), 3), s["ci"].values.round(3).tolist()
    (0.5, [0.05, 0.95])
    """
    ci = posterior_interval(draws, prob=prob, kind=kind)
    est = draws.mean(list(SAMPLE_DIMS))
    est.attrs = {}
    return xr.Dataset({"estimate": est, "ci": ci})

