"""Audit S finding 3: rank_uncertainty's observed rank follows the resamples' tie rule (random ties, in the mean).

Independent checks: the mean rank over every order of breaking the observed ties (exact enumeration of
all permutations with itertools), and the per-agent means read with pandas from the raw records.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd

import hierbench as hb
from hierbench.testing import simulate_eval


def _mean_rank_random_ties(score: np.ndarray) -> np.ndarray:
    """Mean rank (1 = highest) over every tie-breaking order of the agents, by enumeration."""
    m = score.size
    total = np.zeros(m)
    perms = list(itertools.permutations(range(m)))
    for key in perms:
        order = sorted(range(m), key=lambda i: (-score[i], key[i]))
        total[order] += np.arange(1, m + 1)
    return total / len(perms)


def test_tied_agents_get_the_mean_of_the_random_tie_ranks():
    # 5 agents, 4 tasks, 1 run: a and b tie at the top (3/4), c and d tie at 2/4, e last
    wins = {"a": [1, 1, 1, 0], "b": [0, 1, 1, 1], "c": [1, 0, 1, 0], "d": [0, 0, 1, 1], "e": [0, 0, 0, 1]}
    df = pd.DataFrame(
        [(a, f"t{t}", v) for a, vals in wins.items() for t, v in enumerate(vals)],
        columns=["agent", "task", "score"],
    )
    ds = hb.data.from_records(df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # few tasks: the small-sample warning is not under test
        r = hb.freq.rank_uncertainty(ds, n_resamples=200, rng=0)
    means = df.groupby("agent")["score"].mean()
    expected = _mean_rank_random_ties(means.to_numpy())  # [1.5, 1.5, 3.5, 3.5, 5]
    got = r.estimate.to_series().reindex(means.index).to_numpy()
    np.testing.assert_allclose(got, expected)
    assert "a: rank 1.5 [" in str(r) or "b: rank 1.5 [" in str(r)


def test_audit_case_every_rank_inside_its_own_interval():
    ds = simulate_eval(300, 5, 3, rng=0)[0]  # 23 agents tied at the top score 0.8
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fr = hb.freq.rank_uncertainty(ds, n_resamples=500, rng=0).to_frame()
    top = fr[fr["score"] == fr["score"].max()]
    assert len(top) > 1
    assert (top["rank"] == (1 + len(top)) / 2).all()  # mid-rank of ranks 1..len(top)
    outside = (fr["rank"] < fr["lower"]) | (fr["rank"] > fr["upper"])
    assert not outside.any(), fr[outside][["score", "rank", "lower", "upper"]].head()
