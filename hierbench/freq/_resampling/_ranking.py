"""Ranking uncertainty by resampling tasks (the same resample for every agent)."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import ClassVar
from typing import Literal

import numpy as np
import xarray as xr
from scipy import stats

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import HierbenchWarning
from ..._base import Result
from ..._base import SmallSampleWarning
from ..._base import UndefinedWarning
from ..._base import as_rng
from ..._base import check_choice
from ..._base import check_prob
from ..._base import cluster_codes
from ..._base import field_alias
from ..._base import interval_label
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from ..._docs import fill_doc
from .._inputs import agent_task_means
from .._kernels import few_units
from .._kernels import few_units_text
from .._kernels import task_weights
from ._rank_sets import simultaneous_rank_sets

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RankResult", "UndefinedScoreWarning", "UnequalTaskSetsWarning", "rank_uncertainty"]


class UndefinedScoreWarning(UndefinedWarning):
    """An agent had no task in some resamples; it is ranked last there."""


class UnequalTaskSetsWarning(HierbenchWarning):
    """Some agent ran under 90% of the tasks the most complete agent ran.

    The scores then average over markedly different task sets (smaller gaps are
    counted in the result, not warned).
    """


@dataclass(frozen=True, repr=False)
class RankResult(Result):
    """Result of :func:`rank_uncertainty`.

    ``estimate`` is the observed rank (``observed_rank``) and ``ci`` its
    bootstrap interval (``rank_ci``); ``to_frame()`` has one row per agent
    (rank, interval, score, mean rank, tier, tasks missing); the repr is one
    line per agent.

    Attributes
    ----------
    score : xarray.DataArray
        Observed benchmark score of each agent (mean over its tasks of the
        per-task mean score), dim ``agent``.
    observed_rank : xarray.DataArray
        Rank of ``score`` (1 = best) by the resamples' tie rule, ties broken
        uniformly at random, taken as its mean: tied agents share the mean of
        the ranks they occupy (the mid-rank; 23 agents tied at the top get
        12). A float, comparable with ``rank_ci`` and ``mean_rank``.
    rank_prob : xarray.DataArray
        ``P(rank = r)`` over dims ``(agent, rank)``; sums to 1 along both.
    p_top_k : xarray.DataArray
        ``P(rank <= k)`` over ``(agent, k)``.
    p_better, p_tie : xarray.DataArray
        ``P(score_agent > score_opponent)`` and ``P(equal)`` over
        ``(agent, opponent)``.
    mean_rank : xarray.DataArray
    rank_ci : xarray.DataArray
        Interval of the rank, trailing dim ``ci_bound``: the equal-tailed
        percentile interval of the resampled ranks (``method="percentile"``,
        ``ci_kind`` ``"percentile"``; per-agent coverage not guaranteed near
        ties), or the marginal rank set from simultaneous ``max |t|`` intervals
        of the agent's differences (``method="simultaneous"``, ``ci_kind``
        ``"max-t"``; per agent, valid whatever the ties). ``ci_detail`` says which.
    group : xarray.DataArray
        Tier (1 = top) of agents that cannot be told apart from the tier's
        best agent at significance level ``alpha`` (see :func:`rank_uncertainty`).
    rank_best, rank_worst : xarray.DataArray
        ``1 + #agents significantly better`` and
        ``M - #agents significantly worse`` at ``alpha``.
    distribution : xarray.DataArray
        Resampled scores, dims ``(resample, agent)``.
    ranks : xarray.DataArray
        Resampled ranks (ties broken at random), dims ``(resample, agent)``.
    counts : dict
        ``n_tasks_missing`` per agent and ``n_undefined`` resamples.
    """

    score: xr.DataArray
    observed_rank: xr.DataArray
    rank_prob: xr.DataArray
    p_top_k: xr.DataArray
    p_better: xr.DataArray
    p_tie: xr.DataArray
    mean_rank: xr.DataArray
    rank_ci: xr.DataArray
    group: xr.DataArray
    rank_best: xr.DataArray
    rank_worst: xr.DataArray
    distribution: xr.DataArray
    ranks: xr.DataArray
    counts: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)

    _dataset_exclude = ("distribution", "ranks")
    _not_saved: ClassVar[dict[str, str]] = {"counts": "saved as one variable per key (n_tasks_missing, n_undefined)"}

    estimate = field_alias("observed_rank", "The observed rank (1 = best), under the house name.")
    ci = field_alias("rank_ci", "The bootstrap interval of the rank (``rank_ci``).")

    def to_dataset(self) -> xr.Dataset:
        """Every field in one Dataset (resampled scores and ranks included, the counts as variables)."""
        ds = super().to_dataset()
        ds["distribution"], ds["ranks"] = self.distribution, self.ranks
        for k, v in self.counts.items():
            ds[k] = v
        return ds

    def to_frame(self) -> pd.DataFrame:
        """One row per agent, best observed score first: rank, its interval, score, tier, counts."""
        import pandas as pd

        df = pd.DataFrame(
            {
                "score": self.score.to_series(),
                "rank": self.observed_rank.to_series(),
                "lower": self.rank_ci.sel(ci_bound="lower", drop=True).to_series(),
                "upper": self.rank_ci.sel(ci_bound="upper", drop=True).to_series(),
                "mean_rank": self.mean_rank.to_series(),
                "p_top_1": self.p_top_k.sel(k=1, drop=True).to_series(),
                "tier": self.group.to_series(),
                "rank_best": self.rank_best.to_series(),
                "rank_worst": self.rank_worst.to_series(),
                "n_tasks_missing": self.counts["n_tasks_missing"].to_series(),
            }
        )
        df["ci_prob"] = float(self.rank_ci.attrs["ci_prob"])
        df["ci_kind"] = self.rank_ci.attrs["ci_kind"]
        df = df.sort_values(["rank", "score"], ascending=[True, False], kind="stable")
        df.attrs["tier"] = TIER_WORDS.format(alpha=self.attrs.get("alpha", 0.05))
        return df

    def _repr_lines(self) -> list[str]:
        df = self.to_frame()
        simult = self.attrs.get("method") == "simultaneous"
        lines = [
            f"RankResult: {len(df)} agents, observed rank with {interval_label(self.rank_ci)} "
            f"rank {'set' if simult else 'interval'} ({self.attrs.get('n_resamples', '?')} resamples of "
            f"{self.attrs.get('resample_unit', 'task')}s); tiers by per-pair bootstrap tests at "
            f"{self.attrs.get('alpha', 0.05):g}, unadjusted (compare_agents: family-wise)",
            f"  {SIMULTANEOUS_NOTE if simult else PERCENTILE_NOTE}",
        ]
        n = len(df)
        # at most 12 lines: the header, its note, 10 agents or 7 + "..." + the last 2
        show = list(range(n)) if n <= 10 else [*range(7), *range(n - 2, n)]
        for k in show:
            if n > 10 and k == n - 2:
                lines.append(f"  ... ({n - 9} more)")
            r = df.iloc[k]
            miss = f", {int(r['n_tasks_missing'])} tasks missing" if r["n_tasks_missing"] else ""
            lines.append(
                f"  {df.index[k]}: rank {r['rank']:g} [{int(r['lower'])}, {int(r['upper'])}], "
                f"score {r['score']:.4g}, P(top 1) {r['p_top_1']:.3f}, tier {int(r['tier'])}{miss}"
            )
        return lines

    def groups(self) -> list[list[str]]:
        """The tiers as lists of agent names, best tier first, by observed score."""
        order = np.argsort(-self.score.values, kind="stable")
        agents = self.score.agent.values[order]
        g = self.group.values[order]
        return [[str(a) for a in agents[g == k]] for k in np.unique(g)]


#: what a tier is, for the repr and the frame (``alpha``: the per-pair level)
TIER_WORDS = (
    "agents a per-pair percentile bootstrap test at {alpha:g} (unadjusted for the number of pairs; "
    "resample ties count against a pair) cannot tell from the tier's leader; "
    "compare_agents gives the family-wise verdict"
)


#: what the percentile rank interval does not promise (repr and ``ci_detail``); the figure is from
#: ``benchmarks/bench_rank_coverage.py``
PERCENTILE_NOTE = (
    "coverage per agent not guaranteed near ties: conservative on average, below the level for an agent "
    "at the edge of a near-tied bunch (0.91-0.92 at 95% in SWE-bench simulations); "
    "method='simultaneous' gives rank sets valid per agent whatever the ties"
)
#: what the simultaneous rank set promises (repr and ``ci_detail``)
SIMULTANEOUS_NOTE = (
    "rank set per agent: [1 + #agents surely better, M - #agents surely worse] from simultaneous "
    "studentized max-|t| bootstrap intervals of its M - 1 score differences; the level holds for each "
    "agent (marginal, not for all at once), whatever the ties, as units grow"
)


def _random_tiebreak_ranks(s: np.ndarray, gen: np.random.Generator) -> np.ndarray:
    """Ranks (1 = highest) along the last axis, ties broken uniformly at random."""
    u = gen.random(s.shape)
    key = np.where(np.isfinite(s), -s, np.inf)
    order = np.lexsort((u, key), axis=-1)
    ranks = np.empty_like(order)
    np.put_along_axis(
        ranks, order, np.arange(1, s.shape[-1] + 1)[None, :].repeat(s.shape[0], 0), axis=-1
    )
    return ranks


def _rank_inputs(
    data: xr.Dataset | xr.DataArray, task_dim: str, run_dim: str, agent_dim: str
) -> tuple[xr.DataArray, np.ndarray]:
    """The score DataArray and the per-task mean scores ``(agent, task)``, validated."""
    score, y = agent_task_means(
        data, agent_dim=agent_dim, task_dim=task_dim, run_dim=run_dim, purpose="rank_uncertainty"
    )
    obs = np.isfinite(y)
    if not obs.any(axis=1).all():
        empty = [
            str(a) for a, o in zip(score[agent_dim].values, obs.any(axis=1), strict=True) if not o
        ]
        raise ValueError(f"every agent needs at least one task it ran; none for {empty}")
    return score, y


def _warn_unequal_task_sets(obs: np.ndarray, names: list[str]) -> None:
    """Warn when some agent ran markedly fewer tasks than the most complete one (below 90%).

    A few missing cells are reported per agent in the result (``n_tasks_missing``), not warned.
    """
    M, T = obs.shape
    n_ran = obs.sum(1)
    if not (obs == obs[:1]).all() and n_ran.min() < 0.9 * n_ran.max():
        order = np.argsort(n_ran, kind="stable")
        few = ", ".join(f"{names[i]} {int(n_ran[i])}" for i in order[:5])
        warn_user(
            f"the agents ran different sets of tasks (tasks run out of {T}: {few}"
            + (", ..." if M > 5 else "")
            + "); each agent is scored on its own tasks, so the ranks compare averages over "
            "different tasks and an agent with few tasks can rank high by luck of its tasks. "
            "Rank on the shared tasks (drop the others), or read `counts['n_tasks_missing']`.",
            UnequalTaskSetsWarning,
        )


def _warn_few_units(y: np.ndarray, codes: np.ndarray | None, prob: float) -> None:
    """Warn when few units carry the resamples; the ranks then look surer than they are.

    Fewer than ``FEW_UNITS`` tasks, or clusters worth fewer than ``FEW_CLUSTERS`` equal
    ones: the bootstraps' own rules.
    """
    few = few_units(codes, int(np.isfinite(y).any(0).sum()))
    if few is None:
        return
    warn_user(
        f"{few_units_text(few, 'tasks' if codes is None else 'clusters', prob, codes is not None)}; the rank "
        "intervals, P(top k) and the tiers look surer than the data allow (with 3 tasks an agent can "
        "get rank [1, 1] and P(top 1) 0.98 where compare_agents' paired test gives p = 0.18). Read "
        "compare_agents for whether two agents differ",
        SmallSampleWarning,
    )


def _resampled_scores(
    y: np.ndarray, codes: np.ndarray | None, n_resamples: int, gen: np.random.Generator
) -> np.ndarray:
    """Each agent's score in each task (cluster) resample, ``(B, M)``; NaN without a task."""
    T = y.shape[1]
    n_units = T if codes is None else int(codes.max()) + 1
    if n_units < 2:
        unit = "task" if codes is None else "cluster"
        raise HierbenchError(
            f"rank_uncertainty resamples {unit}s, and the data have only 1 {unit}: every resample "
            "equals the data, so the rank distribution would be a point mass that says nothing. "
            + ("Pass cluster=None to resample the tasks inside it." if codes is not None and T > 1 else "Add tasks.")
        )
    obs = np.isfinite(y)
    w = task_weights(T, int(n_resamples), gen, clusters=codes).astype(float)
    num = w @ np.where(obs, y, 0.0).T
    den = w @ obs.T.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def _beat_probabilities(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``P(i > j)`` and ``P(tie)`` over resamples (a defined score beats an undefined one)."""
    fin = np.isfinite(s)
    gt = ((s[:, :, None] > s[:, None, :]) & fin[:, :, None] & fin[:, None, :]).mean(axis=0)
    gt = gt + (fin[:, :, None] & ~fin[:, None, :]).mean(axis=0)
    tie = 1.0 - gt - gt.T
    np.fill_diagonal(tie, np.nan)
    np.fill_diagonal(gt, np.nan)
    return gt, tie


def _tiers(gt: np.ndarray, observed: np.ndarray, alpha: float) -> tuple[np.ndarray, ...]:
    """Tiers, best and worst ranks from the pairs told apart at significance level ``alpha``."""
    M = gt.shape[0]
    sig = gt > 1 - alpha / 2  # sig[i, j]: i significantly better than j
    np.fill_diagonal(sig, False)
    order = np.argsort(-observed, kind="stable")
    group = np.zeros(M, dtype=np.int64)
    g, pos = 0, 0
    while pos < M:
        g += 1
        lead = order[pos]
        same = [k for k in range(pos, M) if not sig[lead, order[k]]]
        end = max(same) if same else pos
        for k in range(pos, end + 1):
            group[order[k]] = g
        pos = end + 1
    return group, 1 + sig.sum(axis=0), M - sig.sum(axis=1)


def _rank_interval(
    ranks: np.ndarray, s: np.ndarray, observed: np.ndarray, agents: np.ndarray, *,
    prob: float, unit: str, method: str,
) -> xr.DataArray:
    """``rank_ci``: the percentile interval of the resampled ranks, or the simultaneous rank set."""
    if method == "simultaneous":
        lo, hi = simultaneous_rank_sets(s, observed, prob)
        kind = "max-t"
        detail = (
            f"marginal confidence set of the rank (Mogstad, Romano, Shaikh and Wilhelm 2024), {unit}s "
            f"resampled: {SIMULTANEOUS_NOTE}"
        )
    else:
        lo, hi = np.quantile(ranks, [(1 - prob) / 2, (1 + prob) / 2], axis=0, method="inverted_cdf")
        kind = "percentile"
        detail = f"bootstrap interval of the rank, {unit}s resampled, ties broken at random; {PERCENTILE_NOTE}"
    ac = {"agent": agents}
    return make_interval(
        xr.DataArray(lo, dims="agent", coords=ac),
        xr.DataArray(hi, dims="agent", coords=ac),
        prob=prob,
        kind=kind,
        detail=detail,
        warn_zero_width=False,  # a rank interval of one rank is a finding, not a degeneracy
        name="rank_ci",
    )


def _rank_result(
    agents: np.ndarray, y: np.ndarray, s: np.ndarray, ranks: np.ndarray, n_undef: int, *,
    prob: float, alpha: float, unit: str, n_resamples: int, method: str = "percentile",
) -> RankResult:
    """Rank probabilities, intervals and tiers from the resampled scores and ranks."""
    M = y.shape[0]
    obs = np.isfinite(y)
    rp = np.zeros((M, M))
    np.add.at(rp, (np.broadcast_to(np.arange(M), ranks.shape), ranks - 1), 1.0)
    rp /= s.shape[0]
    gt, tie = _beat_probabilities(s)
    observed = np.where(obs, y, 0.0).sum(1) / obs.sum(1)
    group, rank_best, rank_worst = _tiers(gt, observed, alpha)
    ac = {"agent": agents}
    rk = np.arange(1, M + 1)
    pair = {"agent": ac["agent"], "opponent": ac["agent"]}
    rank_ci = _rank_interval(ranks, s, observed, agents, prob=prob, unit=unit, method=method)
    return RankResult(
        score=xr.DataArray(observed, dims="agent", coords=ac),
        # the resamples' tie rule (random) in its mean, so the point and its interval agree
        observed_rank=xr.DataArray(stats.rankdata(-observed, method="average"), dims="agent", coords=ac),
        rank_prob=xr.DataArray(rp, dims=("agent", "rank"), coords={**ac, "rank": rk}),
        p_top_k=xr.DataArray(np.cumsum(rp, axis=1), dims=("agent", "k"), coords={**ac, "k": rk}),
        p_better=xr.DataArray(gt, dims=("agent", "opponent"), coords=pair),
        p_tie=xr.DataArray(tie, dims=("agent", "opponent"), coords=pair),
        mean_rank=xr.DataArray(ranks.mean(axis=0), dims="agent", coords=ac),
        rank_ci=rank_ci,
        group=xr.DataArray(group, dims="agent", coords=ac, attrs={"alpha": alpha}),
        rank_best=xr.DataArray(rank_best, dims="agent", coords=ac),
        rank_worst=xr.DataArray(rank_worst, dims="agent", coords=ac),
        distribution=xr.DataArray(s, dims=("resample", "agent"), coords=ac),
        ranks=xr.DataArray(ranks, dims=("resample", "agent"), coords=ac),
        counts={
            "n_tasks_missing": xr.DataArray((~obs).sum(1), dims="agent", coords=ac),
            "n_undefined": n_undef,
        },
        attrs={
            "n_resamples": int(n_resamples), "alpha": alpha, "ci_prob": prob, "resample_unit": unit,
            "method": method,
        },
    )


@renamed_kwargs(dim="task_dim", level="alpha")
@fill_doc
def rank_uncertainty(
    data: xr.Dataset | xr.DataArray,
    *,
    n_resamples: int = 2000,
    prob: float = DEFAULT_PROB,
    alpha: float = 0.05,
    method: Literal["percentile", "simultaneous"] = "percentile",
    cluster: str | None = "auto",
    task_dim: str = "task",
    run_dim: str = "run",
    agent_dim: str = "agent",
    rng: None | int | np.random.Generator = None,
) -> RankResult:
    """Rank distributions, P(top-k), P(i > j) and indistinguishable groups.

    Each resample draws tasks with replacement (whole clusters when the data
    have a ``cluster`` coord), the same draw for every agent; each agent's
    score is the weighted mean of its per-task mean scores over the tasks it
    ran; ranks are assigned with ties broken uniformly at random, so every
    resample uses each rank exactly once. The observed rank follows the same
    rule, in its mean: tied agents get the mid-rank (the mean of the ranks
    they share), not the best of them, which random ties would rarely give.

    Parameters
    ----------
    data : xarray.Dataset or xarray.DataArray
        Eval dataset or ``score(agent, task[, run])``.
    %(n_resamples)s
    prob : float
        Probability of the rank intervals ``rank_ci``.
    alpha : float
        Significance level (the size of each pairwise test, not an interval
        level). Two agents are told apart when one beats the other in more
        than ``1 - alpha / 2`` of the resamples (the percentile bootstrap test
        of their paired difference at ``alpha``, ties counting against it).
        Tiers: the best remaining agent by observed score leads a tier that
        runs down the observed order to the last agent it cannot be told
        apart from. No multiplicity adjustment: it is a per-pair significance level.
    method : {"percentile", "simultaneous"}
        How ``rank_ci`` is made, from the same resamples. ``"percentile"``:
        the equal-tailed interval of the resampled ranks; per-agent coverage
        is not guaranteed near ties (the percentile bootstrap of a rank is
        not valid there): 0.988 on average over the 25 SWE-bench agents but
        0.917 at 95% for one at the edge of a near-tied bunch.
        ``"simultaneous"``: each agent's marginal rank set (Mogstad, Romano,
        Shaikh and Wilhelm 2024; Klein, Wright and Wieczorek 2020),
        ``[1 + #surely better, M - #surely worse]`` from studentized ``max |t|``
        bootstrap intervals of its ``M - 1`` score differences at ``prob``:
        valid per agent (not for all at once) whatever the ties, as units
        grow; conservative and wider (every SWE-bench agent covered 0.997 or
        more, mean width 5.3 ranks against 3.1; ``bench_rank_coverage.py``).
    cluster : str, None or "auto"
        Task coord of clusters; ``"auto"`` uses ``cluster`` if present.
    task_dim, run_dim, agent_dim : str
    %(rng)s

    Returns
    -------
    RankResult
        Observed ranks (``estimate``) with their bootstrap intervals (``ci``),
        the rank probabilities, ``P(top k)``, pairwise ``P(better)`` and the
        tiers of agents that cannot be told apart.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=4, n_tasks=80, n_runs=2, sd_agent=1.0, rng=0)
    >>> r = rank_uncertainty(ds, n_resamples=500, rng=1)
    >>> r.rank_prob.sum("rank").values.round(6).tolist()
    [1.0, 1.0, 1.0, 1.0]
    >>> r.p_better.dims
    ('agent', 'opponent')
    """
    if int(n_resamples) != n_resamples or n_resamples < 1:
        raise ValueError(f"`n_resamples` must be a positive integer; got {n_resamples!r}")
    prob = check_prob(prob)
    alpha = check_prob(alpha, "alpha")
    check_choice(method, "method", ["percentile", "simultaneous"])
    score, y = _rank_inputs(data, task_dim, run_dim, agent_dim)
    gen = as_rng(rng)
    _warn_unequal_task_sets(np.isfinite(y), [str(a) for a in score[agent_dim].values])
    cc = cluster_codes(score, cluster, dim=task_dim)
    codes = None if cc is None else cc[0]
    s = _resampled_scores(y, codes, n_resamples, gen)
    n_undef = int((~np.isfinite(s)).any(axis=1).sum())
    if n_undef:
        warn_user(
            f"{n_undef} resamples left some agent without a task; it is ranked last there",
            UndefinedScoreWarning,
        )
    ranks = _random_tiebreak_ranks(s, gen)
    unit = "cluster" if codes is not None else "task"
    _warn_few_units(y, codes, prob)
    return _rank_result(
        score[agent_dim].values, y, s, ranks, n_undef,
        prob=prob, alpha=alpha, unit=unit, n_resamples=int(n_resamples), method=method,
    )
