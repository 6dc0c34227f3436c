"""The even-clusters flag measures evenness against independent tasks, not raw cluster sums (audit T, finding 1).

The rule before (``n_eff >= 0.75 G`` over the raw cluster sums) fired on most agents whenever
clusters were of one size, since equal-size clusters have alike sums unless their means differ a
lot, and it quoted a coverage (about 0.90) those rows did not have. The rule now: the design
effect ``deff = CR2 variance of the mean / (s^2 / N)`` below 0.5, where
``CR2 = sum_g r_g^2 / (1 - n_g / N) / N^2`` (``r_g`` cluster g's sum of deviations from the
mean) and ``s^2`` the tasks' sample variance. Every expected flag here is that formula worked by
hand (fractions), or the old rule's, never the package's code.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import pairwise

import numpy as np
import xarray as xr

from hierbench.freq import pass_at_k
from hierbench.freq import success_rate
from hierbench.freq._rates._logit_t import EVEN_CLUSTERS_FLAG
from hierbench.freq._rates._logit_t import even_clusters


def _deff(values: list[Fraction], sizes: list[int]) -> Fraction:
    """By hand: the CR2 variance of the mean of ``values`` (clusters of ``sizes``, in order) over s^2 / N."""
    N = len(values)
    m = sum(values) / N
    starts = [int(x) for x in np.cumsum([0, *sizes])]
    r = [sum(v - m for v in values[a:b]) for a, b in pairwise(starts)]
    cr2 = sum(rg**2 / (1 - Fraction(n, N)) for rg, n in zip(r, sizes, strict=True)) / N**2
    s2 = sum((v - m) ** 2 for v in values) / (N - 1)
    return cr2 / (s2 / N)


def _old_rule(values: list[Fraction], sizes: list[int]) -> bool:
    """The rule before: n_eff = (sum S)^2 / sum S^2 over the cluster sums (and the failures'), the smaller >= 0.75 G."""
    starts = [int(x) for x in np.cumsum([0, *sizes])]
    S = [sum(values[a:b]) for a, b in pairwise(starts)]
    C = [n - s for n, s in zip(sizes, S, strict=True)]
    n_eff = min(sum(x) ** 2 / sum(v * v for v in x) for x in (S, C))
    return n_eff >= Fraction(3, 4) * len(sizes)


def _log(values_runs: list[list[int]], runs: int, sizes: list[int]) -> xr.Dataset:
    """Agents x tasks x runs of 0/1: task i of agent a passes its first ``values_runs[a][i]`` runs."""
    c = np.asarray(values_runs)
    score = (np.arange(runs)[None, None, :] < c[..., None]).astype(float)
    cluster = np.repeat([f"g{g}" for g in range(len(sizes))], sizes)
    return xr.Dataset({"score": (("agent", "task", "run"), score)},
                      coords={"agent": [f"a{i}" for i in range(c.shape[0])], "cluster": ("task", cluster)})  # fmt: skip


def test_unequal_clusters_whose_means_agree_are_flagged_where_the_raw_sums_rule_could_not_fire():
    # 6 clusters of 2, 2, 2, 10, 12, 12 tasks; a_g of them pass all 4 runs: cluster means
    # 0.5, 0.5, 0.5, 0.5, 0.5, 0.58 (21 tasks pass, 19 fail: not few tasks, the t interval is kept)
    sizes, a = [2, 2, 2, 10, 12, 12], [1, 1, 1, 5, 6, 7]
    values = [Fraction(1) if i < x else Fraction(0) for x, n in zip(a, sizes, strict=True) for i in range(n)]
    assert float(_deff(values, sizes)) < 0.5  # 0.098: the clusters agree far more than tasks would
    assert not _old_rule(values, sizes)  # the sizes alone keep the raw sums' n_eff below 0.75 G
    ds = _log([[4 * int(v) for v in values]], 4, sizes)
    res = success_rate(ds)
    assert res.ci_flag.values.tolist() == [EVEN_CLUSTERS_FLAG] and res.ci_kind.values.tolist() == ["t"]


def test_equal_clusters_that_differ_more_than_independent_tasks_are_not_flagged():
    # 12 clusters of 10 tasks; a_g of them pass all 3 runs, a_g from 3 to 7: the raw sums are alike
    # (the old rule fired) but the clusters differ more than independent tasks would (deff 0.79)
    sizes, a = [10] * 12, [3, 4, 5, 6, 7, 3, 4, 5, 6, 7, 4, 6]
    values = [Fraction(1) if i < x else Fraction(0) for x in a for i in range(10)]
    assert _deff(values, sizes) == Fraction(24, 14400) / (Fraction(1, 4) / 119)
    assert _old_rule(values, sizes) and _deff(values, sizes) >= Fraction(1, 2)
    ds = _log([[3 * int(v) for v in values]], 3, sizes)
    assert success_rate(ds).ci_flag.values.tolist() == [""]


def test_tasks_nearly_all_their_own_cluster_are_not_flagged():
    # 12 tasks, 4 runs, 2 or 3 passing (values 0.5 / 0.75), in 11 clusters: the first two tasks
    # together, the rest alone. The values are alike enough for the raw sums' rule (n_eff >= 8.25),
    # but the clusters vary as independent tasks would: deff = 5/6 (the pair's deviations cancel)
    c = [2, 3] * 6
    values, sizes = [Fraction(x, 4) for x in c], [2] + [1] * 10
    assert _deff(values, sizes) == Fraction(5, 6)
    assert _old_rule(values, sizes)
    ds = _log([c], 4, sizes)
    for res in (success_rate(ds), pass_at_k(ds, 2)):
        assert res.ci_flag.values.tolist() == [""] and res.ci_kind.values.tolist() == ["t"]


def test_the_rule_is_deff_strictly_below_one_half_with_two_or_more_clusters():
    deff = np.array([0.49, 0.5, 0.51, np.nan, 0.1, 0.1])
    G = np.array([5, 5, 5, 5, 1, 0])
    assert even_clusters(deff, G).tolist() == [True, False, False, False, False, False]


def test_equal_size_clusters_are_flagged_only_where_deff_is_below_one_half():
    # audit T's design: 12 clusters of 10 tasks, 3 runs, task sd 1 and cluster sd 1 (logit),
    # 300 agents; there the raw-sums rule fired on 95% of agents (t4_even_flag.out)
    rng = np.random.default_rng(18)
    sizes = [10] * 12
    eta = rng.normal(0, 1, (300, 120)) + np.repeat(rng.normal(0, 1, (300, 12)), 10, axis=1)
    c = rng.binomial(3, 1 / (1 + np.exp(-eta)))
    res = success_rate(_log(c.tolist(), 3, sizes))
    y = c / 3.0  # by hand in floats: deff and the old rule per agent
    r = y.reshape(300, 12, 10).sum(2) - 10 * y.mean(1, keepdims=True)
    deff = (r**2).sum(1) / (1 - 10 / 120) / 120**2 / (y.var(1, ddof=1) / 120)
    S = y.reshape(300, 12, 10).sum(2)
    old = np.minimum(S.sum(1) ** 2 / (S**2).sum(1), (10 - S).sum(1) ** 2 / ((10 - S) ** 2).sum(1)) >= 9
    t = res.ci_kind.values == "t"
    flagged = res.ci_flag.values == EVEN_CLUSTERS_FLAG
    assert t.mean() > 0.95
    assert (flagged[t] == (deff[t] < 0.5)).all()
    assert old[t].mean() > 0.8 and flagged.mean() < 0.05
