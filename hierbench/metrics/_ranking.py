"""P(agent i > agent j) and rank probabilities from posterior draws of an ability."""

from __future__ import annotations

from typing import Literal

import numpy as np
import xarray as xr

from .._base import DEFAULT_PROB, check_prob
from ._common import get_draws, posterior_interval

__all__ = ["head_to_head", "prob_superiority", "rank_probabilities"]


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
        Dims ``(dim, "opponent")``, NaN on the diagonal (no agent is compared
        with itself); attrs ``var``, ``ties``, ``n_draws``,
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
    # an agent is not compared with itself: NaN on the diagonal, as in compare_agents
    np.fill_diagonal(gt, np.nan)
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
            "mcse_max": float(np.nanmax(np.sqrt(gt * (1 - gt) / s))) if gt.size > 1 else np.nan,
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


def head_to_head(
    fit: xr.DataTree,
    *,
    agent_first: bool | None = None,
    prob: float = DEFAULT_PROB,
) -> xr.Dataset:
    """Predicted outcome of a new battle between every ordered pair of a Bradley-Terry fit.

    Unlike :func:`prob_superiority` (is agent i better than j?), this is the
    chance that i wins (ties, loses) one more comparison, with the fitted
    Davidson tie parameter ``nu`` and first-position advantage ``home``:
    ``P(win, tie, loss) = softmax(d / 2, log nu, -d / 2)``,
    ``d = ability_i - ability_j (+ home if i is first)``.

    Parameters
    ----------
    fit : xarray.DataTree
        A fit of :func:`hierbench.bayes.build_bradley_terry` (``hierbench_model
        = "bradley_terry"``), possibly loaded from disk.
    agent_first : bool, optional
        With a fitted ``home``: True puts ``agent`` in the first position,
        False ``opponent``; None (default) averages both orders.
    prob : float
        Probability mass of the equal-tailed intervals.

    Returns
    -------
    xarray.Dataset
        ``p_win``, ``p_tie``, ``p_loss`` and ``expected_score`` (= p_win +
        p_tie / 2, Elo's expected score), each the posterior mean over dims
        ``(agent, opponent)``, NaN on the diagonal (no self-battles);
        ``p_win_ci`` and ``expected_score_ci`` with a trailing ``ci_bound``
        (attrs ``ci_prob``, ``ci_kind``).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> post = xr.Dataset({"ability": (("chain", "draw", "agent"), [[[0.5, -0.5]]]),
    ...                    "nu": (("chain", "draw"), [[1.0]])}, coords={"agent": ["a", "b"]})
    >>> dt = xr.DataTree.from_dict({"posterior": post})
    >>> dt.attrs["hierbench_model"] = "bradley_terry"
    >>> round(float(head_to_head(dt)["p_tie"].sel(agent="a", opponent="b")), 4)  # d = 1: 1 / (e^.5 + 1 + e^-.5)
    0.3072
    """
    if not isinstance(fit, xr.DataTree):
        raise TypeError(
            f"`fit` must be an xarray.DataTree from hierbench.bayes.fit; got {type(fit).__name__}"
        )
    model = fit.attrs.get("hierbench_model")
    if model != "bradley_terry":
        raise ValueError(f"`fit` must be a bradley_terry fit; got hierbench_model={model!r}")
    prob = check_prob(prob)
    if agent_first not in (None, True, False):
        raise ValueError(f"`agent_first` must be None, True or False; got {agent_first!r}")
    post = fit["posterior"].to_dataset()
    ab = get_draws(post, "ability").transpose("chain", "draw", "agent")
    d = ab - ab.rename(agent="opponent")
    log_nu = np.log(post["nu"]) if "nu" in post else None

    def probs(dd: xr.DataArray) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
        if log_nu is None:
            win = 1.0 / (1.0 + np.exp(-dd))
            return win, xr.zeros_like(win), 1.0 - win
        top = np.maximum(np.maximum(dd / 2, -dd / 2), log_nu)  # stable log-sum-exp
        z = np.exp(dd / 2 - top) + np.exp(log_nu - top) + np.exp(-dd / 2 - top)
        return np.exp(dd / 2 - top) / z, np.exp(log_nu - top) / z, np.exp(-dd / 2 - top) / z

    if "home" in post:
        first = probs(d + post["home"])
        second = probs(d - post["home"])
        if agent_first is None:
            win, tie, loss = ((f + g) / 2 for f, g in zip(first, second, strict=True))
        else:
            win, tie, loss = first if agent_first else second
    else:
        win, tie, loss = probs(d)
    score = win + 0.5 * tie
    off = xr.DataArray(
        ~np.eye(ab.sizes["agent"], dtype=bool),
        dims=("agent", "opponent"),
        coords={"agent": ab.agent.values, "opponent": ab.agent.values},
    )
    out = xr.Dataset(
        {
            "p_win": win.mean(("chain", "draw")).where(off),
            "p_tie": tie.mean(("chain", "draw")).where(off),
            "p_loss": loss.mean(("chain", "draw")).where(off),
            "expected_score": score.mean(("chain", "draw")).where(off),
            "p_win_ci": posterior_interval(win, prob=prob).where(off),
            "expected_score_ci": posterior_interval(score, prob=prob).where(off),
        }
    )
    for v in ("p_win_ci", "expected_score_ci"):
        out[v].attrs = {
            "ci_prob": float(prob),
            "ci_kind": "eti",
            "ci_detail": "equal-tailed posterior interval",
        }
    out.attrs = {
        "model": model,
        "agent_first": "averaged" if agent_first is None else str(agent_first),
    }
    return out
