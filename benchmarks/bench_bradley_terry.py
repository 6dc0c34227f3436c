"""Bradley-Terry cost: counts likelihood vs one likelihood term per battle.

Simulates Davidson battles among 30 agents, then measures

1. reading 10^6 battles into a pairwise dataset and aggregating them to pair
   counts (``read_battles`` + ``to_pair_counts``);
2. NUTS (nutpie) on the count likelihood at 10^4, 10^5 and 10^6 battles;
3. NUTS on a per-battle categorical likelihood (the same model written
   battle by battle) at 10^4 and 10^5 battles.

The two likelihoods are fitted in turn at each size both are run at (10^4 and 10^5 by
default), and the wall time of each whole fit (compile + sampling) is compared in the
same run (per-battle / counts); compile time, sampling time, min ESS_bulk and
divergences of each fit are recorded.

Run: ``.venv/bin/python benchmarks/bench_bradley_terry.py``. Prints one line
per measurement; the closing note of issue 5 quotes the numbers. The smallest run:
``--read 10000 --counts 1000 --per-battle 1000 --draws 100 --tune 100``.

Measured 2026-11-30 on the shared 2-core machine (2 chains x 1000 draws):
reading 10^6 battles 2.2 s, aggregating 1.5 s (870 ordered pairs); count
likelihood sampling 1.7 / 1.6 / 1.5 s at 10^4 / 10^5 / 10^6 battles (compile
10-25 s under load); per-battle likelihood 17 s at 10^4 and 214 s at 10^5
battles. At 10^4 and 10^5 battles both likelihoods gave identical min
ESS_bulk (same seed, same log density up to a constant).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from _harness import Bench
from _harness import parser

from hierbench.bayes import build_bradley_terry
from hierbench.bayes import fit
from hierbench.data import read_battles
from hierbench.data import to_pair_counts

M = 30
NU = 1.0


def simulate(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Return ``n`` Davidson battles among ``M`` agents (ties with ``NU``)."""
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
    """Build the Bradley-Terry-Davidson model with one categorical term per battle."""
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


def fit_facts(bench: Bench, label: str, dt) -> None:
    """Record a fit's compile and sampling time, min ESS_bulk and divergences."""
    bench.record(
        label,
        {
            "compile_s": round(float(dt.attrs["compile_time"]), 2),
            "sampling_s": round(float(dt.attrs["sampling_time"]), 2),
            "min_ess_bulk": round(float(dt.attrs["diag_min_ess_bulk"])),
            "divergences": int(dt.attrs["diag_n_divergent"]),
        },
    )


def main() -> None:
    """Time reading and aggregating, then both likelihoods at each size."""
    ap = parser(__doc__)
    ap.add_argument("--read", type=int, default=1_000_000, help="battles simulated and read")
    ap.add_argument("--counts", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--per-battle", type=int, nargs="*", default=[10_000, 100_000])
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--tune", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=1, help="timed fits of each kind per size")
    args = ap.parse_args()
    settings = {"draws": args.draws, "tune": args.tune, "chains": 2}
    big = simulate(max(args.read, *args.counts, *args.per_battle), np.random.default_rng(20261130))
    with Bench("bradley_terry") as bench:
        head = big.iloc[: args.read]
        bench.time(f"read_battles {args.read}", lambda: read_battles(head), repeats=1, warmup=0)
        pairs = bench.last[""]
        bench.time("to_pair_counts", lambda: to_pair_counts(pairs), repeats=1, warmup=0)
        bench.record("ordered pairs", int(bench.last[""].sizes["pair"]))
        for n in sorted(set(args.counts) | set(args.per_battle)):
            c = to_pair_counts(read_battles(big.iloc[:n]))
            fns = {}
            if n in args.per_battle:
                fns["per-battle"] = lambda n=n: fit(
                    per_battle_model(big.iloc[:n]),
                    rng=1,
                    posterior_predictive=False,
                    log_likelihood=False,
                    **settings,
                )
            if n in args.counts:
                fns["counts"] = lambda c=c: fit(
                    build_bradley_terry(c),
                    rng=1,
                    posterior_predictive=False,
                    log_likelihood=False,
                    **settings,
                )
            bench.compare(
                f"NUTS fit (compile + sampling), {n} battles",
                fns,
                repeats=args.repeats,
                warmup=0,
                baseline="per-battle" if len(fns) == 2 else None,
            )
            for k in fns:
                fit_facts(bench, f"{k} likelihood, {n} battles", bench.last[k])


if __name__ == "__main__":
    main()
