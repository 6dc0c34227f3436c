"""Bootstrap resamples without a finite estimate: what they still say, and percentile bounds that count them.

Private to the pairwise wing. A Bradley-Terry resample has no finite maximum
likelihood estimate when an agent is absent from it, when a group of agents
won (or lost) every resampled battle against the rest, or (Davidson ties) when
no battle in it was decisive. Such resamples are never dropped (the percentile
of the rest would be conditional on the resample looking like the data, too
narrow, the estimate often on an end). Where the direction is known they
enter the percentile at ``+inf`` / ``-inf`` (an agent above every other);
elsewhere the value is undefined (NaN) and counts at the unfavourable end of
each bound, so the bound holds whatever it was, and a bound those resamples
decide is NaN (``_bounds_with_undefined``). A win rate, undefined in a
resample where the pair did not meet, has finite ends (0 and 1): ``_winrate``
enters it there instead.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import shortest_path

from ..._numerics import quantile_ext as _quantile_ext
from ._newton import _beat_edges
from ._newton import _strongly_connected

__all__: list[str] = []

#: why a Bradley-Terry resample has no finite MLE, by the code ``_no_mle_limit`` returns
CAUSES = (
    "an agent absent from the resample",
    "a group of agents that won or lost every resampled battle against the rest",
    "no decisive battle (every one a tie)",
    "a refit that reached no finite maximum",
)


def _no_mle_limit(ia, ib, cnt, m: int, ref: int | None):
    """What a resample with no finite Bradley-Terry MLE still says about each agent.

    The likelihood's supremum is approached by sending apart, to infinity, the
    strongly connected groups of the "beat or tied" graph in the order of its
    condensation (Ford 1957); the gaps between groups that no path orders are
    left free. So an agent's ability relative to ``ref`` (or to the mean of
    all, ``ref`` None) goes to ``+inf`` when its group is above the reference's
    (above every other group, for the mean), to ``-inf`` when below, and is
    undefined otherwise (an absent agent is a group of its own, ordered
    against none). The other agents of the reference's own group have a finite
    limit, which is not computed: they count as undefined too. An agent's rank
    lies between 1 + the agents of the groups above its own and ``m`` - those
    below.

    Returns
    -------
    direction : ndarray (m,)
        +1 / -1 where the ability goes to +inf / -inf, 0 for the reference
        agent itself (its value is the anchor), NaN where undefined.
    rmin, rmax : ndarray (m,)
        The range of each agent's rank.
    cause : int
        Index into ``CAUSES``.
    absent : ndarray (m,) of bool
    """
    n = cnt.sum(1)
    absent = (np.bincount(ia, n, m) + np.bincount(ib, n, m)) == 0
    _, lab = _strongly_connected(ia, ib, cnt, m)
    k = int(lab.max()) + 1
    src, dst = _beat_edges(ia, ib, cnt)
    groups = sparse.csr_matrix((np.ones(src.size), (lab[src], lab[dst])), shape=(k, k))
    reach = np.isfinite(shortest_path(groups, unweighted=True))  # group i is above group j
    np.fill_diagonal(reach, False)  # the condensation is acyclic: no group above itself
    size = np.bincount(lab, minlength=k).astype(float)
    above = (reach * size[:, None]).sum(0)[lab]  # agents in the groups above each agent's own
    below = (reach * size[None, :]).sum(1)[lab]
    direction = np.full(m, np.nan)
    if k > 1 and ref is None:
        rest = m - size[lab]
        direction[below == rest] = 1.0
        direction[above == rest] = -1.0
    elif k > 1:
        direction[reach[lab, lab[ref]]] = 1.0
        direction[reach[lab[ref], lab]] = -1.0
    if ref is not None:
        direction[ref] = 0.0
    decisive = (cnt[:, 0] + cnt[:, 2]).sum() > 0
    cause = 0 if absent.any() else 1 if k > 1 else 2 if not decisive else 3
    return direction, 1.0 + above, m - below, cause, absent


def _bounds_with_undefined(x: np.ndarray, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bounds along axis 0 of resamples that may be +-inf (direction known) or NaN (undefined).

    A NaN counts at the unfavourable end of each bound (``-inf`` for the
    lower, ``+inf`` for the upper), so the bound holds whatever the undefined
    value was. A bound that this makes infinite, but that is finite with the
    NaN at the other end, is decided by the undefined resamples: NaN. A bound
    infinite either way is decided by known infinities and stays infinite.
    Without NaN or infinities: ``np.quantile`` (linear), as a percentile
    interval always was.
    """
    a = (1.0 - prob) / 2.0
    nan = np.isnan(x)
    lo_c = _quantile_ext(np.where(nan, -np.inf, x), a)
    hi_c = _quantile_ext(np.where(nan, np.inf, x), 1.0 - a)
    if not nan.any():
        return lo_c, hi_c
    lo_f = _quantile_ext(np.where(nan, np.inf, x), a)
    hi_f = _quantile_ext(np.where(nan, -np.inf, x), 1.0 - a)
    lo = np.where(np.isneginf(lo_c) & ~np.isneginf(lo_f), np.nan, lo_c)
    hi = np.where(np.isposinf(hi_c) & ~np.isposinf(hi_f), np.nan, hi_c)
    return lo, hi
