"""P(agent i > agent j) and rank probabilities from posterior draws of an ability."""

from __future__ import annotations

from typing import Literal

import numpy as np
import xarray as xr

from .._base import DEFAULT_PROB
from .._base import check_choice
from .._base import check_prob
from .._base import renamed_kwargs
from .._numerics import davidson_log_probs
from ._common import get_draws
from ._common import mc_interval
from ._common import posterior_interval
from ._results import HeadToHeadResult
from ._results import ProbSuperiorityResult
from ._results import RankProbabilityResult

__all__ = ["head_to_head", "prob_superiority", "rank_probabilities"]


def _stacked(fit, var: str, agent_dim: str) -> tuple[np.ndarray, xr.DataArray]:
    da = get_draws(fit, var)
    if agent_dim not in da.dims:
        raise ValueError(f"`agent_dim` must be a dimension of {var!r} {da.dims}; got {agent_dim!r}")
    extra = [d for d in da.dims if d not in ("chain", "draw", agent_dim)]
    if extra:
        raise ValueError(
            f"{var!r} must have dims (chain, draw, {agent_dim}) only; select the extra dims {extra} first "
            f"(e.g. `.sel({extra[0]}=...)`)"
        )
    x = da.transpose("chain", "draw", agent_dim).values.reshape(-1, da.sizes[agent_dim])
    return x, da


@renamed_kwargs(dim="agent_dim")
def prob_superiority(
    fit: xr.DataTree | xr.Dataset | xr.DataArray,
    var: str = "ability",
    *,
    agent_dim: str = "agent",
    ties: Literal["exclude", "split"] = "exclude",
    prob: float = DEFAULT_PROB,
) -> ProbSuperiorityResult:
    """Posterior probability that agent i's ``var`` exceeds agent j's, for every ordered pair.

    Parameters
    ----------
    fit : DataTree, Dataset or DataArray
        A fit (its ``posterior`` group), a posterior Dataset, or the draws
        themselves (dims ``chain``, ``draw``, ``agent_dim``).
    var : str
        Posterior variable, e.g. ``"ability"`` (each model's stated scale) or
        ``"mean_observed"``.
    agent_dim : str
        The agent dimension.
    ties : {"exclude", "split"}
        ``"exclude"``: strict ``P(x_i > x_j)`` (so ``P(i > j) + P(j > i) +
        P(tie) = 1``). ``"split"``: ``P(x_i > x_j) + P(x_i = x_j) / 2``.
    prob : float
        Level of the Monte Carlo interval ``ci`` and of ``difference_ci``.

    Returns
    -------
    ProbSuperiorityResult
        ``estimate`` over ``(dim, "opponent")`` (NaN on the diagonal: no agent
        is compared with itself; attrs ``var``, ``ties``, ``n_draws``,
        ``mcse_max``, ``scale``), its Monte Carlo interval ``ci`` with the
        effective sample size behind it (``ess``), and the posterior mean and
        interval of ``var_i - var_j`` (``difference``, ``difference_ci``).
        ``mcse_max`` is the largest Monte Carlo standard error
        ``sqrt(p (1 - p) / ess)`` over the pairs, with the effective sample
        size, as ``ci`` has it, not the number of draws. DataArray methods act
        on ``estimate`` (``res.sel(agent="a", opponent="b")``).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> d = xr.DataArray([[[0.0, 1.0], [2.0, 1.0], [0.0, 0.0]]], dims=("chain", "draw", "agent"),
    ...                  coords={"agent": ["a", "b"]})
    >>> prob_superiority(d).sel(agent="b", opponent="a").item()   # b > a in 1 of 3 draws
    0.3333333333333333
    """
    check_choice(ties, "ties", ["exclude", "split"])
    prob = check_prob(prob)
    x, da = _stacked(fit, var, agent_dim)
    if np.isnan(x).any():
        raise ValueError(f"{var!r} draws contain NaN; P(i > j) needs complete draws")
    d = da.transpose("chain", "draw", agent_dim)
    off = xr.DataArray(~np.eye(x.shape[1], dtype=bool), dims=(agent_dim, "opponent"))
    est, ci, ess, diff_mean, diff_ci = _by_agent_blocks(
        lambda sub: _superiority_block(sub, d.rename({agent_dim: "opponent"}), ties, prob), d, agent_dim
    )
    gt = est.values.copy()
    # an agent is not compared with itself: NaN on the diagonal, as in compare_agents
    np.fill_diagonal(gt, np.nan)
    s = x.shape[0]
    # the Monte Carlo SE of each share from the effective sample size its own `ci` uses, not the
    # number of draws (autocorrelated draws hold less information than their count)
    mcse = np.sqrt(gt * (1 - gt) / ess.transpose(*est.dims).values)
    estimate = est.copy(data=gt).rename("prob_superiority")
    estimate.attrs = {
        "var": var,
        "ties": ties,
        "n_draws": s,
        "mcse_max": float(np.nanmax(mcse)) if gt.size > 1 else np.nan,
        "scale": str(da.attrs.get("scale", "unstated")),
    }
    return ProbSuperiorityResult(
        estimate=estimate,
        ci=ci.where(off),
        ess=ess.where(off),
        difference=diff_mean.where(off).rename("difference"),
        difference_ci=diff_ci.where(off),
    )


#: the most per-draw values (float64) one block of agents may hold: 2^25 (256 MB), so that
#: hundreds of agents (an (S, M, M) array of 316 agents x 6,400 draws is 4.8 GiB) fit in memory
_BLOCK_VALUES = 2**25


def _by_agent_blocks(fn, d: xr.DataArray, agent_dim: str) -> tuple[xr.DataArray, ...]:
    """``fn(block)`` over blocks of agents of ``d`` (each an (S, block, M) computation), joined along ``agent_dim``.

    Every output cell depends on its own agent's draws only, so the blocks give the
    values one (S, M, M) computation would, with a bounded temporary.
    """
    s = d.sizes["chain"] * d.sizes["draw"]
    m = d.sizes[agent_dim]
    block = max(1, min(m, _BLOCK_VALUES // max(1, s * m)))
    parts = [fn(d.isel({agent_dim: slice(lo, lo + block)})) for lo in range(0, m, block)]
    if len(parts) == 1:
        return parts[0]
    return tuple(xr.concat(list(p), dim=agent_dim, combine_attrs="override") for p in zip(*parts, strict=True))


def _superiority_block(sub: xr.DataArray, opp: xr.DataArray, ties: str, prob: float) -> tuple[xr.DataArray, ...]:
    """P(i > j) with its Monte Carlo interval and ESS, and the difference's mean and interval, for agents ``sub``."""
    diff = sub - opp
    per_draw = (diff > 0).astype(float)
    if ties == "split":
        per_draw = per_draw + 0.5 * (diff == 0)
    est, ci, ess = mc_interval(per_draw, prob=prob, what="P(i > j)")
    return est, ci, ess, diff.mean(("chain", "draw")), posterior_interval(diff, prob=prob)


@renamed_kwargs(dim="agent_dim")
def rank_probabilities(
    fit: xr.DataTree | xr.Dataset | xr.DataArray,
    var: str = "ability",
    *,
    agent_dim: str = "agent",
    higher_is_better: bool = True,
    prob: float = DEFAULT_PROB,
) -> RankProbabilityResult:
    """Posterior probability of each agent holding each rank (1 = best).

    Draws where agents tie share the tied ranks equally, so every row (agent)
    and every column (rank) sums to 1.

    Parameters
    ----------
    fit : DataTree, Dataset or DataArray
        As in :func:`prob_superiority`.
    var : str
        Posterior variable.
    agent_dim : str
        The agent dimension.
    higher_is_better : bool
        Rank 1 goes to the largest value (default) or the smallest.
    prob : float
        Level of the Monte Carlo interval ``ci``.

    Returns
    -------
    RankProbabilityResult
        ``estimate`` over ``(dim, "rank")`` with ``rank = 1 .. n_agents``
        (attrs ``var``, ``n_draws``, ``scale``), its Monte Carlo interval
        ``ci`` and ``expected_rank``. DataArray methods and arithmetic act on
        ``estimate``: ``(res * res["rank"]).sum("rank")`` is the expected rank.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> d = xr.DataArray([[[0.0, 1.0], [2.0, 1.0]]], dims=("chain", "draw", "agent"),
    ...                  coords={"agent": ["a", "b"]})
    >>> rank_probabilities(d).sel(agent="a").values.tolist()
    [0.5, 0.5]
    """
    prob = check_prob(prob)
    x, da = _stacked(fit, var, agent_dim)
    if np.isnan(x).any():
        raise ValueError(f"{var!r} draws contain NaN; ranks need complete draws")
    if not higher_is_better:
        x = -x
    s, m = x.shape
    better = np.zeros((s, m), dtype=np.int64)
    equal = np.zeros((s, m), dtype=np.int64)
    for j in range(m):  # O(S M^2) without an (S, M, M) comparison temporary
        better += x[:, [j]] > x
        equal += x[:, [j]] == x
    C, D = da.sizes["chain"], da.sizes["draw"]
    counts = xr.Dataset(
        {"better": (("chain", "draw", agent_dim), better.reshape(C, D, m)),
         "equal": (("chain", "draw", agent_dim), equal.reshape(C, D, m))},
        coords={agent_dim: da[agent_dim].values},
    )  # fmt: skip
    est, ci, ess = _by_agent_blocks(lambda sub: _rank_block(sub, m, agent_dim, prob), counts, agent_dim)
    est = est.rename("rank_probability")
    est.attrs = {"var": var, "n_draws": s, "scale": str(da.attrs.get("scale", "unstated"))}
    expected = (est * est["rank"]).sum("rank").rename("expected_rank")
    return RankProbabilityResult(estimate=est, ci=ci, ess=ess, expected_rank=expected)


def _rank_block(counts: xr.Dataset, m: int, agent_dim: str, prob: float) -> tuple[xr.DataArray, ...]:
    """P(rank = r) with its Monte Carlo interval and ESS for the agents of ``counts`` (better / equal per draw)."""
    better, equal = counts["better"].values, counts["equal"].values
    # agent i in draw s occupies ranks better+1 .. better+equal, each with weight 1/equal
    r = np.arange(m)
    share = ((r >= better[..., None]) & (r < (better + equal)[..., None])) / equal[..., None]
    per_draw = xr.DataArray(
        share,
        dims=("chain", "draw", agent_dim, "rank"),
        coords={agent_dim: counts[agent_dim].values, "rank": np.arange(1, m + 1)},
    )
    return mc_interval(per_draw, prob=prob, what="P(rank = r)")


def head_to_head(
    fit: xr.DataTree,
    *,
    agent_first: bool | None = None,
    prob: float = DEFAULT_PROB,
) -> HeadToHeadResult:
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
    HeadToHeadResult
        ``p_win``, ``p_tie``, ``p_loss`` and ``expected_score`` (= p_win +
        p_tie / 2, Elo's expected score; also ``estimate``), each the
        posterior mean over dims ``(agent, opponent)``, NaN on the diagonal
        (no self-battles); ``p_win_ci`` and ``expected_score_ci`` (also
        ``ci``) with a trailing ``ci_bound`` (``eti``).

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
    win, tie, loss = _battle_probabilities(post, ab - ab.rename(agent="opponent"), agent_first)
    score = win + 0.5 * tie
    off = xr.DataArray(
        ~np.eye(ab.sizes["agent"], dtype=bool),
        dims=("agent", "opponent"),
        coords={"agent": ab.agent.values, "opponent": ab.agent.values},
    )

    def mean(v: xr.DataArray) -> xr.DataArray:
        return v.mean(("chain", "draw")).where(off)

    return HeadToHeadResult(
        p_win=mean(win),
        p_tie=mean(tie),
        p_loss=mean(loss),
        expected_score=mean(score),
        p_win_ci=posterior_interval(win, prob=prob).where(off),
        expected_score_ci=posterior_interval(score, prob=prob).where(off),
        attrs={
            "model": model,
            "agent_first": "averaged" if agent_first is None else str(agent_first),
        },
    )


def _battle_probabilities(
    post: xr.Dataset, d: xr.DataArray, agent_first: bool | None
) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
    """Per draw ``P(win, tie, loss)``, Davidson's (``_numerics.davidson_log_probs``; no ``nu``: no ties).

    The first-position advantage ``home`` is added to (``agent_first``), taken
    from (False) or averaged over (None) ``d``.
    """
    log_nu = np.log(post["nu"]) if "nu" in post else -np.inf

    def exp_in_place(a: np.ndarray) -> np.ndarray:
        return np.exp(a, out=a)

    def probs(dd: xr.DataArray) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
        lp = xr.apply_ufunc(davidson_log_probs, dd, log_nu, output_core_dims=[["result"]])
        p = lp.copy(data=exp_in_place(lp.values))
        return tuple(p.isel(result=k).transpose(*dd.dims) for k in range(3))  # type: ignore[return-value]

    if "home" not in post:
        return probs(d)
    first = probs(d + post["home"])
    second = probs(d - post["home"])
    if agent_first is None:
        return tuple((f + g) / 2 for f, g in zip(first, second, strict=True))  # type: ignore[return-value]
    return first if agent_first else second
