"""Each pair of agents on its own: its statistics and sign-flip units, and whether the family fits.

Before anything is resampled, every pair's deterministic values are computed on the tasks
it shares (mean difference, the paired t's SE and df, CR2 with Bell-McCaffrey df when the
tasks are clustered, Cohen's d_z, P(superiority), McNemar's p on majority wins), with the
units its sign-flip tests flip (its tasks, or its sums over clusters) and their task
counts; a pair sharing fewer than two tasks is NaN and named in a warning. Here too is
the bound on pairs x tasks: a family beyond it is refused before any work, with what it
would cost and how to cut it down.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..._base import warn_user
from ._paired import UndefinedTestWarning
from ._paired import _mcnemar_p
from ._paired import _task_stats
from ._paired import _task_stats_rows

#: the per-pair statistics :func:`_pair_units` fills (NaN where a pair shares fewer than 2 tasks)
_STAT_KEYS = ("mean_diff", "se", "df", "p_t", "cohens_dz", "prob_superiority", "p_mcnemar", "n_tasks", "n_units")
#: pair x task values handled at once by :func:`_pair_units` (8 MB a float block)
_PAIR_BLOCK = 2**20


def _pair_units(
    means: np.ndarray, pairs: list, agents: list[str], codes: np.ndarray | None
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Per pair: its deterministic statistics; the sign-flip units and their task counts.

    The statistics are arrays over the pairs (``_STAT_KEYS``, and ``defined``: the pair
    shares at least 2 tasks). The units are the tasks (or clusters: sums over the pair's
    shared tasks), ``(n_units, n_pairs)``; a unit the pair does not share is 0 (count 0)
    and takes no part in its test.
    """
    T = means.shape[1]
    n_rows = T if codes is None else int(codes.max()) + 1
    P = len(pairs)
    units = np.zeros((n_rows, P))
    counts = np.zeros((n_rows, P))
    st = {k: np.full(P, np.nan) for k in _STAT_KEYS}
    pi, pj = np.array(pairs, dtype=np.intp).reshape(-1, 2).T
    fin = np.isfinite(means)
    n_both = np.zeros(P, dtype=np.intp)
    step = max(1, _PAIR_BLOCK // max(T, 1))
    for c in range(0, P, step):
        n_both[c : c + step] = np.count_nonzero(fin[pi[c : c + step]] & fin[pj[c : c + step]], axis=1)
    st["defined"] = n_both >= 2
    if codes is None:
        _pair_task_stats(means, fin, pi, pj, st, units, counts)
    else:
        for k in np.flatnonzero(st["defined"]).tolist():
            i, j = pi[k], pj[k]
            both = fin[i] & fin[j]
            d = means[i, both] - means[j, both]
            units[:, k] = np.bincount(codes[both], weights=d, minlength=n_rows)
            counts[:, k] = np.bincount(codes[both], minlength=n_rows)
            for key, v in _task_stats(d, codes[both]).items():
                st[key][k] = v
            st["n_units"][k] = np.unique(codes[both]).size
    st["n_tasks"] = n_both.astype(float)  # a count, known for every pair (0 or 1 where undefined)
    if codes is None:
        st["n_units"] = st["n_tasks"].copy()
    # McNemar's discordant counts of every pair at once: tasks the row agent wins by majority
    # (mean above 1/2) and the column agent loses (below 1/2); NaN and 1/2 count for neither
    win, lose = (means > 0.5).astype(float), (means < 0.5).astype(float)
    n10 = win @ lose.T
    st["p_mcnemar"] = np.where(st["defined"], _mcnemar_p(n10[pi, pj], n10[pj, pi]), np.nan)
    # named as the result's table names them (``to_frame``'s index: row agent minus column agent)
    undefined = [f"{agents[pi[k]]} - {agents[pj[k]]}" for k in np.flatnonzero(~st["defined"]).tolist()]
    if undefined:
        more = f" and {len(undefined) - 10:,} more" if len(undefined) > 10 else ""
        warn_user(
            f"{len(undefined):,} of {len(pairs):,} pairs have fewer than 2 shared tasks and are NaN: "
            f"{undefined[:10]}{more}",
            UndefinedTestWarning,
        )
    return st, units, counts


def _pair_task_stats(means, fin, pi, pj, st, units, counts) -> None:
    """Tasks as units: the defined pairs' differences and statistics, block by block.

    The pairs of a block that share the same tasks are taken together (every pair, on a
    log without holes), their differences a contiguous pairs x shared-tasks block whose
    row statistics equal :func:`_task_stats` of each pair bit for bit (:func:`_task_stats_rows`).
    """
    T = means.shape[1]
    live = np.flatnonzero(st["defined"])
    step = max(1, _PAIR_BLOCK // max(T, 1))
    for c in range(0, live.size, step):
        ks = live[c : c + step]
        mask = fin[pi[ks]] & fin[pj[ks]]
        _, group = np.unique(np.packbits(mask, axis=1), axis=0, return_inverse=True)
        order = np.argsort(group.ravel(), kind="stable")
        ends = np.cumsum(np.bincount(group.ravel()))
        for lo, hi in zip([0, *ends[:-1].tolist()], ends.tolist(), strict=True):
            sel = ks[order[lo:hi]]
            tasks = np.flatnonzero(mask[order[lo]])
            d = means[np.ix_(pi[sel], tasks)] - means[np.ix_(pj[sel], tasks)]
            units[np.ix_(tasks, sel)] = d.T
            counts[np.ix_(tasks, sel)] = 1.0
            for key, v in _task_stats_rows(d).items():
                st[key][sel] = v


#: pair x task values compare_agents takes on: every pair's per-task differences, its units and
#: their counts, and their CR2 scores are dense pair x task arrays, ~40 bytes and ~4 us (two
#: cores) a value in all (measured: InstEval's 180 busiest lecturers, 16,110 pairs x 2,939
#: students, 2.1 GB and 200 s; all 1,128, 635,628 pairs x 2,972, would be ~76 GB and ~2 hours)
_MAX_PAIR_TASKS = 2**26
_BYTES_PER_PAIR_TASK = 40
_SECONDS_PER_PAIR_TASK = 4e-6


def _all_pairs(n_agents: int, n_tasks: int, agent_dim: str) -> list[tuple[int, int]]:
    """Every pair of agents, after refusing a family too large to compare in memory and minutes."""
    n_pairs = n_agents * (n_agents - 1) // 2
    cells = n_pairs * n_tasks
    if cells <= _MAX_PAIR_TASKS:
        return list(itertools.combinations(range(n_agents), 2))
    raise ValueError(
        f"`data`: {n_agents:,} agents make {n_pairs:,} pairs, and over {n_tasks:,} tasks "
        f"compare_agents would hold {cells:,} pair x task values (about "
        f"{cells * _BYTES_PER_PAIR_TASK / 1e9:,.0f} GB, and roughly "
        f"{cells * _SECONDS_PER_PAIR_TASK / 60:,.0f} minutes on two cores); it takes at most "
        f"{_MAX_PAIR_TASKS:,} (about {_MAX_PAIR_TASKS * _BYTES_PER_PAIR_TASK / 1e9:.1f} GB and "
        f"{_MAX_PAIR_TASKS * _SECONDS_PER_PAIR_TASK / 60:.0f} minutes). Compare fewer agents at once (data.sel({agent_dim}=[...]): "
        f"{_agents_within(n_tasks)} agents fit with {n_tasks:,} tasks), chosen pairs with "
        f"paired_test (each agent against one reference agent is {n_agents - 1:,} pairs), or rank "
        "every agent at once with rank_uncertainty."
    )


def _agents_within(n_tasks: int) -> int:
    """The most agents whose pairs over ``n_tasks`` tasks stay within ``_MAX_PAIR_TASKS``."""
    max_pairs = _MAX_PAIR_TASKS // max(n_tasks, 1)
    return int((1 + math.isqrt(1 + 8 * max_pairs)) // 2)
