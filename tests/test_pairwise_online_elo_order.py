"""freq.online_elo: a rating in the order given outside its own range over random orders is named and warned.

Independent references: Elo's update replayed by a plain Python loop, a seeded simulation of random orders with
its own permutations (Monte Carlo tolerance stated), the p-value's statistic (summed squared z-scores over all orders) by hand, a seeded null simulation,
and pandas from the raw LLMFAO CSV (the file's battles grouped by prompt).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from hierbench._base import HierbenchWarning
from hierbench.data import read_battles
from hierbench.freq import online_elo


def _elo(a, b, s, k=4.0):
    """Elo ratings after the battles in this order: one Python float update per battle."""
    r = {}
    for x, y, out in zip(a, b, s, strict=True):
        rx, ry = r.get(x, 1000.0), r.get(y, 1000.0)
        e = 1.0 / (1.0 + 10.0 ** ((ry - rx) / 400.0))
        r[x], r[y] = rx + k * (out - e), ry - k * (out - e)
    return r


def _streaky():
    """Three evenly matched agents; A wins its first 60 battles against B and C, then loses its last 60."""
    left = ["A"] * 240 + ["B"] * 60
    right = ["B", "C"] * 120 + ["C"] * 60
    winner = ["left"] * 120 + ["right"] * 120 + ["left", "right"] * 30
    return pd.DataFrame({"left": left, "right": right, "winner": winner})


def test_an_atypical_order_is_warned_naming_the_agents_and_the_repr_says_the_ranks_are_of_that_order():
    df = _streaky()
    s = (df["winner"] == "left").astype(float).to_numpy()
    hand = _elo(df["left"], df["right"], s)
    # random orders by a seeded simulation of our own (400 permutations). A's sd over orders is about 7.4 points, so
    # the Monte Carlo error of a 2.5% quantile is about 1.0 point from 400 orders and 1.4 from the function's 200
    # (sd sqrt(q (1 - q) / n) / phi(z_q)): a tolerance of 5 points is about 3 standard errors of their difference
    gen = np.random.default_rng(7)
    sims = np.array([_elo(*(np.asarray(c)[o] for c in (df["left"], df["right"], s)), k=4.0)["A"]
                     for o in (gen.permutation(len(df)) for _ in range(400))])  # fmt: skip
    lo_A, hi_A = np.quantile(sims, [0.025, 0.975])
    assert hand["A"] < lo_A - 10  # the set-up: the order given ends A far below any random order
    with pytest.warns(HierbenchWarning, match=r"online_elo: in the order given, .* the order given is atypical") as w:
        r = online_elo(read_battles(df), n_orders=200, rng=3)
    for a in "ABC":
        assert abs(float(r.estimate.sel(agent=a)) - hand[a]) < 1e-9
    assert abs(float(r.ci.sel(agent="A", ci_bound="lower")) - lo_A) < 5
    assert abs(float(r.ci.sel(agent="A", ci_bound="upper")) - hi_A) < 5
    assert "A" in r.attrs["outside_range"] and r.attrs["outside_range_p"] <= 0.05
    msg = next(str(x.message) for x in w if "online_elo" in str(x.message))
    assert f"A {hand['A']:.0f} outside [" in msg
    text = repr(r)
    assert "ranked by the ratings in the order given" in text
    assert "; outside its range" in next(line for line in text.splitlines() if line.split()[1:2] == ["A"])


def _elo_battles():
    g = np.random.default_rng(11)
    ags, th = list("ABCDE"), np.linspace(1, -1, 5)
    rows = []
    for _ in range(60):
        a, b = g.choice(5, 2, replace=False)
        rows.append((ags[a], ags[b], "left" if g.random() < 1 / (1 + np.exp(th[b] - th[a])) else "right"))
    return read_battles(pd.DataFrame(rows, columns=["left", "right", "winner"]), duplicates="keep")


def test_online_elo_p_is_summed_squared_z_scores_over_all_orders_by_hand():
    ds = _elo_battles().isel(comparison=np.random.default_rng(1).permutation(60))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = online_elo(ds, k=16, n_orders=39, rng=2)
    R = np.vstack([r.estimate.values[None], r.by_order.values])
    z = (R - R.mean(0)) / R.std(0)
    t = (z**2).sum(1)
    assert r.attrs["outside_range_p"] == pytest.approx((t >= t[0]).sum() / 40)


def test_online_elo_p_holds_its_level_and_is_near_uniform_for_a_random_order():
    """The given order a random permutation of fixed battles: exchangeable with the random orders.

    200 seeded replicates, 19 random orders each, so p lies on k / 20 and, uniform, P(p <= 0.05) = 0.05
    and P(p <= 0.5) = 0.5; Monte Carlo SEs 0.015 and 0.035. The old count-of-agents-outside statistic
    gave p = 1 most of the time (P(p <= 0.5) = 0.31 in this set-up with 300 replicates).
    """
    ds = _elo_battles()
    g = np.random.default_rng(5)
    ps = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(200):
            r = online_elo(ds.isel(comparison=g.permutation(60)), k=16, n_orders=19, rng=int(g.integers(2**31)))
            ps.append(r.attrs["outside_range_p"])
    ps = np.array(ps)
    assert np.mean(ps <= 0.05) <= 0.05 + 2 * np.sqrt(0.05 * 0.95 / 200)
    assert abs(np.mean(ps <= 0.5) - 0.5) <= 3 * np.sqrt(0.25 / 200)


def test_a_random_order_is_not_called_atypical():
    """The same battles shuffled (seed 2): outside counts like a random order's, so no warning; the repr says so."""
    df = _streaky().sample(frac=1.0, random_state=2).reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", HierbenchWarning)
        r = online_elo(read_battles(df), n_orders=200, rng=3)
    assert r.attrs["outside_range_p"] > 0.05
    assert repr(r).splitlines()[-1].endswith("as a random order would")


def test_llmfao_in_file_order_is_warned(shared_data):
    """LLMFAO's file is grouped by prompt (pandas: each prompt's rows are contiguous), and Dolly v2 (12B) is named."""
    path = shared_data / "evalica" / "llmfao_pairwise.csv"
    raw = pd.read_csv(path)
    col = "prompt"
    runs = (raw[col] != raw[col].shift()).sum()
    assert runs == raw[col].nunique()  # one contiguous block per prompt: not a random order
    with pytest.warns(HierbenchWarning, match=r"the order given is atypical") as w:
        r = online_elo(read_battles(path, task="prompt", judge="worker"), rng=0)
    assert "Dolly v2 (12B)" in r.attrs["outside_range"]
    assert r.attrs["outside_range_p"] <= 0.05
    msg = next(str(x.message) for x in w if "online_elo" in str(x.message))
    assert f"Dolly v2 (12B) {float(r.estimate.sel(agent='Dolly v2 (12B)')):.0f} outside [" in msg
