"""P(agent i > agent j) and rank probabilities from posterior draws of an ability."""

from __future__ import annotations

from typing import Literal

import numpy as np
import xarray as xr

from ._common import get_draws

__all__ = ["prob_superiority", "rank_probabilities"]


def _stacked(fit, var: str, dim: str) -> tuple[np.ndarray, xr.DataArray]:
    da = get_draws(fit, var)
    if dim not in da.dims:
        raise ValueError(f"`dim` must be a dimension of {var!r} {da.dims}; got {dim!r}")
    extra = [d for d in da.dims if d not in ("chain", "draw", dim)]
    if extra:
        raise ValueError(
            f"{var!r} must have dims (chain, draw, {dim}) only; select the extra dims {extra} first "
            f"(e.g. `.sel({extra[0]}=...)`)"
        )
    x = da.transpose("chain", "draw", dim).values.reshape(-1, da.sizes[dim])
    return x, da


def prob_superiority(
    fit: xr.DataTree | xr.Dataset | xr.DataArray,
    var: str = "ability",
    *,
    dim: str = "agent",
    ties: Literal["exclude", "split"] = "exclude",
) -> xr.DataArray:
    """Posterior probability that agent i's ``var`` exceeds agent j's, for every ordered pair.

    Parameters
    ----------
    fit : DataTree, Dataset or DataArray
        A fit (its ``posterior`` group), a posterior Dataset, or the draws
        themselves (dims ``chain``, ``draw``, ``dim``).
    var : str
        Posterior variable, e.g. ``"ability"`` (each model's stated scale) or
        ``"mean_observed"``.
    dim : str
        The agent dimension.
    ties : {"exclude", "split"}
        ``"exclude"``: strict ``P(x_i > x_j)`` (so ``P(i > j) + P(j > i) +
        P(tie) = 1``). ``"split"``: ``P(x_i > x_j) + P(x_i = x_j) / 2``.

    Returns
    -------
    xarray.DataArray
        Dims ``(dim, "opponent")``; attrs ``var``, ``ties``, ``n_draws``,
        ``mcse_max`` (the largest Monte Carlo SE, ``sqrt(p (1 - p) / S)``,
        ignoring autocorrelation) and the variable's ``scale``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> d = xr.DataArray([[[0.0, 1.0], [2.0, 1.0], [0.0, 0.0]]], dims=("chain", "draw", "agent"),
    ...                  coords={"agent": ["a", "b"]})
    >>> prob_superiority(d).sel(agent="b", opponent="a").item()   # b > a in 1 of 3 draws
    0.3333333333333333
    """
    if ties not in ("exclude", "split"):
        raise ValueError(f"`ties` must be 'exclude' or 'split'; got {ties!r}")
    x, da = _stacked(fit, var, dim)
    if np.isnan(x).any():
        raise ValueError(f"{var!r} draws contain NaN; P(i > j) needs complete draws")
    gt = (x[:, :, None] > x[:, None, :]).mean(axis=0)
    if ties == "split":
        gt = gt + 0.5 * (x[:, :, None] == x[:, None, :]).mean(axis=0)
        np.fill_diagonal(gt, 0.5)
    labels = da[dim].values
    s = x.shape[0]
    return xr.DataArray(
        gt,
        dims=(dim, "opponent"),
        coords={dim: labels, "opponent": labels},
        attrs={
            "var": var,
            "ties": ties,
            "n_draws": s,
            "mcse_max": float(np.sqrt(gt * (1 - gt) / s).max()),
            "scale": str(da.attrs.get("scale", "unstated")),
        },
        name="prob_superiority",
    )


def rank_probabilities(
    fit: xr.DataTree | xr.Dataset | xr.DataArray,
    var: str = "ability",
    *,
    dim: str = "agent",
    higher_is_better: bool = True,
) -> xr.DataArray:
    """Posterior probability of each agent holding each rank (1 = best).

    Draws where agents tie share the tied ranks equally, so every row (agent)
    and every column (rank) sums to 1.

    Parameters
    ----------
    fit : DataTree, Dataset or DataArray
        As in :func:`prob_superiority`.
    var : str
        Posterior variable.
    dim : str
        The agent dimension.
    higher_is_better : bool
        Rank 1 goes to the largest value (default) or the smallest.

    Returns
    -------
    xarray.DataArray
        Dims ``(dim, "rank")`` with ``rank = 1 .. n_agents``; attrs ``var``,
        ``n_draws``, ``scale``. ``(p * rank).sum("rank")`` is the expected rank.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> d = xr.DataArray([[[0.0, 1.0], [2.0, 1.0]]], dims=("chain", "draw", "agent"),
    ...                  coords={"agent": ["a", "b"]})
    >>> rank_probabilities(d).sel(agent="a").values.tolist()
    [0.5, 0.5]
    """
    x, da = _stacked(fit, var, dim)
    if np.isnan(x).any():
        raise ValueError(f"{var!r} draws contain NaN; ranks need complete draws")
    if not higher_is_better:
        x = -x
    s, m = x.shape
    better = np.zeros((s, m), dtype=np.int64)
    equal = np.zeros((s, m), dtype=np.int64)
    for j in range(m):  # O(S M^2) without an (S, M, M) temporary
        better += x[:, [j]] > x
        equal += x[:, [j]] == x
    # agent i in draw s occupies ranks better+1 .. better+equal, each with weight 1/equal
    acc = np.zeros((m, m + 1))
    w = 1.0 / equal
    agent_idx = np.broadcast_to(np.arange(m), (s, m))
    np.add.at(acc, (agent_idx, better), w)
    np.add.at(acc, (agent_idx, better + equal), -w)
    probs = np.cumsum(acc, axis=1)[:, :m] / s
    return xr.DataArray(
        probs,
        dims=(dim, "rank"),
        coords={dim: da[dim].values, "rank": np.arange(1, m + 1)},
        attrs={"var": var, "n_draws": s, "scale": str(da.attrs.get("scale", "unstated"))},
        name="rank_probability",
    )
