"""Every cluster bootstrap warns where its clusters are few, as bootstrap_ci does (s63 findings, defect 1).

pareto_frontier, fit_bradley_terry_ml(resample="task"), win_rate(resample="task"), fleiss_kappa (and
the judge metrics sharing its path) resampled as few clusters as bootstrap_ci and said nothing.
Expected values: the clusters' worth in equal clusters, (sum n_g)^2 / sum n_g^2, computed here by
hand from the cluster sizes each design is built with; the limit is Cameron and Miller's 20.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench import SmallSampleWarning
from hierbench.data import read_battles
from hierbench.freq import classification_metrics
from hierbench.freq import cohen_kappa
from hierbench.freq import fit_bradley_terry_ml
from hierbench.freq import fleiss_kappa
from hierbench.freq import pareto_frontier
from hierbench.freq import win_rate

FEW = [6, 2, 2, 2]  # worth 12^2 / (36 + 4 + 4 + 4) = 3.0 equal clusters
MANY = [2] * 22  # worth 44^2 / (22 * 4) = 22.0, not fewer than 20


def _worth(sizes: list[int]) -> float:
    return sum(sizes) ** 2 / sum(s * s for s in sizes)


def _small(f) -> list[str]:
    """The SmallSampleWarnings ``f()`` gives, and its result."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        out = f()
    return [str(w.message) for w in rec if issubclass(w.category, SmallSampleWarning)], out


def _labels(sizes: list[int]) -> np.ndarray:
    return np.repeat([f"c{g}" for g in range(len(sizes))], sizes)


def _pareto_data(sizes: list[int]) -> xr.Dataset:
    rng = np.random.default_rng(0)
    n = sum(sizes)
    score = rng.integers(0, 2, (3, n, 2)).astype(float)
    cost = rng.uniform(1, 3, (3, n, 2)) * np.array([1.0, 2.0, 4.0])[:, None, None]
    return xr.Dataset(
        {"score": (("agent", "task", "run"), score), "cost": (("agent", "task", "run"), cost)},
        coords={"agent": ["a", "b", "c"], "cluster": ("task", _labels(sizes))},
    )


def _battles(sizes: list[int]):
    """Battles of A, B, C; task g holds sizes[g] battles, whose winners rotate so every MLE is finite."""
    pairs, winners = [("A", "B"), ("B", "C"), ("C", "A"), ("A", "C")], ["left", "right", "tie"]
    rows, i = [], 0
    for g, n in enumerate(sizes):
        for _ in range(n):
            rows.append((*pairs[i % 4], winners[i % 3], f"p{g}"))
            i += 1
    return read_battles(pd.DataFrame(rows, columns=["left", "right", "winner", "prompt"]), task="prompt")


def _ratings(sizes: list[int]) -> xr.DataArray:
    rng = np.random.default_rng(1)
    r = rng.integers(0, 3, (sum(sizes), 4))
    return xr.DataArray(r, dims=("item", "rater"), coords={"grp": ("item", _labels(sizes))})


CASES = {
    "pareto_frontier": lambda s: pareto_frontier(_pareto_data(s), n_resamples=200, rng=0),
    "fit_bradley_terry_ml": lambda s: fit_bradley_terry_ml(_battles(s), resample="task", n_resamples=100, rng=0),
    "win_rate": lambda s: win_rate(_battles(s), resample="task", n_resamples=200, rng=0),
    "fleiss_kappa": lambda s: fleiss_kappa(_ratings(s), cluster="grp", n_resamples=200, rng=0),
}


def _interval_attrs(name: str, res) -> list[dict]:
    """The attrs of every interval the result carries (and its own attrs where it has them)."""
    cis = [v for k, v in vars(res).items() if k.endswith("ci") and v is not None]
    return [ci.attrs for ci in cis] + ([res.attrs] if isinstance(getattr(res, "attrs", None), dict) else [])


@pytest.mark.parametrize("name", list(CASES))
def test_few_clusters_warn_and_are_recorded(name):
    msgs, res = _small(lambda: CASES[name](FEW))
    assert _worth(FEW) == 3.0
    assert len(msgs) == 1, msgs
    assert f"resamples {len(FEW)} " in msgs[0] and "worth 3.0 equal ones" in msgs[0] and "fewer than 20" in msgs[0]
    for a in _interval_attrs(name, res):
        assert a["n_clusters"] == len(FEW) and a["n_clusters_effective"] == pytest.approx(3.0)
        assert a["few_clusters"] + "." == msgs[0]


@pytest.mark.parametrize("name", list(CASES))
def test_enough_clusters_do_not_warn(name):
    msgs, res = _small(lambda: CASES[name](MANY))
    assert _worth(MANY) == 22.0
    assert msgs == []
    for a in _interval_attrs(name, res):
        assert a["n_clusters"] == len(MANY) and a["n_clusters_effective"] == pytest.approx(22.0)
        assert a["few_clusters"] == ""


def test_other_judge_metrics_share_the_rule():
    """cohen_kappa and classification_metrics bootstrap through fleiss_kappa's path: the same warning."""
    sizes = [5, 1, 1, 1, 1, 1]  # 10^2 / (25 + 5) = 3.33 equal clusters
    grp = _labels(sizes)
    rng = np.random.default_rng(2)
    a, b = rng.integers(0, 2, 10), rng.integers(0, 2, 10)
    a[:2], b[:2] = [0, 1], [0, 1]  # both classes present for both
    for f in (lambda: cohen_kappa(a, b, cluster=grp, n_resamples=200, rng=0),
              lambda: classification_metrics(a, b, cluster=grp, n_resamples=200, rng=0)):
        msgs, res = _small(f)
        msgs = [m for m in msgs if "equal ones" in m]  # a studentized interval on 6 clusters may warn too
        assert len(msgs) == 1 and f"worth {100 / 30:.1f} equal ones" in msgs[0], msgs
        assert res.ci.attrs["n_clusters_effective"] == pytest.approx(100 / 30, abs=1e-3)


def test_resampling_battles_or_no_clusters_says_nothing_of_clusters():
    msgs, res = _small(lambda: win_rate(_battles(FEW), resample="battles", n_resamples=100, rng=0))
    assert msgs == [] and "few_clusters" not in res.ci.attrs
    ds = _pareto_data(FEW).drop_vars("cluster")
    msgs, res = _small(lambda: pareto_frontier(ds, n_resamples=100, rng=0))
    assert msgs == [] and "few_clusters" not in res.attrs


def test_few_plain_units_warn_as_bootstrap_rules_say():
    """Without clusters, fewer than 10 tasks (or items) resampled one by one warn, by FEW_UNITS' rule.

    The count is the design's own (8 tasks, 8 items); at 10 nothing is said, the rule's edge.
    """
    few = _pareto_data([8]).drop_vars("cluster")
    msgs, res = _small(lambda: pareto_frontier(few, n_resamples=100, rng=0))
    assert len(msgs) == 1 and "resamples 8 tasks, fewer than 10" in msgs[0], msgs
    assert res.attrs["few_units"] + "." == msgs[0] and "few_clusters" not in res.attrs
    msgs, res = _small(lambda: pareto_frontier(_pareto_data([10]).drop_vars("cluster"), n_resamples=100, rng=0))
    assert msgs == [] and "few_units" not in res.attrs
    a, b = np.array([0, 1, 0, 1, 1, 0, 1, 0]), np.array([0, 1, 1, 1, 0, 0, 1, 0])
    msgs, res = _small(lambda: cohen_kappa(a, b, n_resamples=200, rng=0))
    msgs = [m for m in msgs if "fewer than 10" in m]
    assert len(msgs) == 1 and "resamples 8 items" in msgs[0], msgs
    assert res.ci.attrs["few_units"] + "." == msgs[0]
