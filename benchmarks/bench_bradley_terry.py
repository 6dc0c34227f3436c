"""Bradley-Terry cost: counts likelihood vs one likelihood term per battle.

Simulates Davidson battles among 30 agents, then measures

1. reading 10^6 battles into a pairwise dataset and aggregating them to pair
   counts (``read_battles`` + ``to_pair_counts``);
2. NUTS (nutpie) on the count likelihood at 10^4, 10^5 and 10^6 battles;
3. NUTS on a per-battle categorical likelihood (the same model written
   battle by battle) at 10^4 and 10^5 battles.

Run: ``.venv/bin/python benchmarks/bench_bradley_terry.py``. Prints one line
per measurement; the closing note of issue 5 quotes the numbers.

Measured 2026-11-30 on the shared 2-core machine (2 chains x 1000 draws):
reading 10^6 battles 2.2 s, aggregating 1.5 s (870 ordered pairs); count
likelihood sampling 1.7 / 1.6 / 1.5 s at 10^4 / 10^5 / 10^6 battles (compile
10-25 s under load); per-battle likelihood 17 s at 10^4 and 214 s at 10^5
battles. At 10^4 and 10^5 battles both likelihoods gave identical min
ESS_bulk (same seed, same log density up to a constant).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from hierbench.bayes import build_bradley_terry, fit
from hierbench.data import read_battles, to_pair_counts

M = 30
NU = 1.0
SETTINGS = {"draws": 1000, "tune": 1000, "chains": 2}


def simulate(n: int, rng: np.random.Generator) -> pd.DataFrame:
    ability = rng.normal(0.0, 1.0, M)
    ability -= ability.mean()
    a = rng.integers(0, M, n)
    b = (a + rng.integers(1, M, n)) % M
    d = ability[a] - ability[b]
    z = np.exp(d / 2) + NU + np.exp(-d / 2)
    u = rng.random(n)
    p_win, p_tie = np.exp(d / 2) / z, NU / z
    winner = np.where(u < p_win, "left", np.where(u < p_win + p_tie, "tie", "right"))
    names = np.array([f"m{i:02d}" for i in range(M)])
    return pd.DataFrame({"left": names[a], "right": names[b], "winner": winner})


def per_battle_model(df: pd.DataFrame) -> pm.Model:
    names = sorted(set(df.left) | set(df.right))
    idx = {x: i for i, x in enumerate(names)}
    ia = df.left.map(idx).to_numpy()
    ib = df.right.map(idx).to_numpy()
    y = df.winner.map({"left": 0, "tie": 1, "right": 2}).to_numpy()
    with pm.Model(coords={"agent": names, "battle": np.arange(len(df))}) as model:
        sd = pm.HalfNormal("sd_ability", 1.0)
        ability = pm.ZeroSumNormal("ability", sigma=sd, dims="agent")
        nu = pm.LogNormal("nu", 0.0, 1.0)
        d = ability[ia] - ability[ib]
        logits = pt.stack([d / 2, pt.broadcast_to(pt.log(nu), d.shape), -d / 2], axis=-1)
        pm.Categorical("y", logit_p=logits, observed=y, dims="battle")
    return model


def main() -> None:
    rng = np.random.default_rng(20261130)
    big = simulate(1_000_000, rng)
    t0 = time.perf_counter()
    pairs = read_battles(big)
    t1 = time.perf_counter()
    counts = to_pair_counts(pairs)
    t2 = time.perf_counter()
    print(
        f"read_battles 1e6: {t1 - t0:.2f} s; to_pair_counts: {t2 - t1:.2f} s; {counts.sizes['pair']} ordered pairs"
    )
    for n in (10_000, 100_000, 1_000_000):
        c = to_pair_counts(read_battles(big.iloc[:n]))
        dt = fit(
            build_bradley_terry(c),
            rng=1,
            posterior_predictive=False,
            log_likelihood=False,
            **SETTINGS,
        )
        print(
            f"counts likelihood, {n:>9} battles: compile {dt.attrs['compile_time']:.1f} s, "
            f"sampling {dt.attrs['sampling_time']:.2f} s, min ESS_bulk {dt.attrs['diag_min_ess_bulk']:.0f}, "
            f"divergences {dt.attrs['diag_n_divergent']}"
        )
    for n in (10_000, 100_000):
        dt = fit(
            per_battle_model(big.iloc[:n]),
            rng=1,
            posterior_predictive=False,
            log_likelihood=False,
            **SETTINGS,
        )
        print(
            f"per-battle likelihood, {n:>9} battles: compile {dt.attrs['compile_time']:.1f} s, "
            f"sampling {dt.attrs['sampling_time']:.2f} s, min ESS_bulk {dt.attrs['diag_min_ess_bulk']:.0f}"
        )


if __name__ == "__main__":
    main()
