"""Bradley-Terry maximum likelihood: fit time against evalica (Rust) and choix on the same data.

Data: LLMFAO (8,931 crowd judgements, 59 models, 3,471 ties; ``../shared/data/evalica``)
and a simulated arena of 10^5 battles among 100 agents. Ties count as half a
win each way (evalica's convention; for choix every battle is doubled, a tie
becoming one win each way, which leaves the MLE unchanged). Every fit is
checked against the others (max |difference| of the centred log abilities)
before it is timed.

Levels measured (best of ``REPEATS`` runs, wall clock):

* ``kernel``: our pair counting and fit (MM warm start + Newton, or MM alone)
  on integer-coded battles, no xarray;
* ``api``: ``bradley_terry_ml(pairs, ties="half", interval="wald")`` on a
  pairwise dataset (validation, counting, fit, Wald SEs, result object);
* ``api+read``: ``read_battles(df)`` then the api call: from the raw table;
* evalica ``bradley_terry`` (pyo3 solver, default tolerance 1e-6, and 1e-12),
  from the raw columns (it indexes the names itself);
* choix ``ilsr_pairwise`` and ``mm_pairwise`` (tol 1e-8), from integer pairs;
* ``bootstrap``: 1,000 battle resamples with intervals and rank intervals.

Run: ``HIERBENCH_SHARED_DATA=../shared/data .venv/bin/python benchmarks/bench_bt_ml.py``.

Measured 2026-11-30 on the shared 2-core machine at load average 20-25 (two runs; the
spread between runs is the load): LLMFAO kernel 5-19 ms vs evalica 9-13 ms (ratio
evalica / ours 0.7-1.9), api 23-42 ms (evalica / api 0.3-0.4: the result object's two
``make_interval`` calls cost ~10 ms each), choix ilsr 238-245 ms (13-47x the kernel, 6-10x
the api), choix mm 2.6-2.7 s. Arena (10^5 battles, 100 agents): kernel 63-90 ms vs
evalica 172-183 ms (2.0-2.7x faster), api 165-203 ms (parity), choix ilsr 2.1-2.2 s
(25-32x the kernel, 11-12x the api). Every fit agrees with ours to <= 3e-8 (evalica at
tol 1e-6), 3e-12 (evalica at 1e-12), 3e-9 (choix ilsr), 1e-6 (choix mm). 1,000 battle
bootstrap refits: 5.3-6.9 s on LLMFAO.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from hierbench.data import read_battles
from hierbench.freq import bradley_terry_ml
from hierbench.freq._pairwise_ml import _battles, _fit

REPEATS = 5


def best(fn, repeats=REPEATS):
    out = None
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t)
    return min(ts), out


def centred(x):
    x = np.asarray(x, dtype=float)
    return x - x.mean()


def run(name: str, df: pd.DataFrame) -> None:
    import choix
    import evalica
    from evalica import Winner

    print(
        f"\n== {name}: {len(df):,} battles, {len(set(df.left) | set(df.right))} agents, "
        f"{int((df.winner == 'tie').sum()):,} ties"
    )
    pw = read_battles(df)
    b = _battles(pw)
    m = len(b.agents)
    rows = []

    def kernel(method):
        def f():
            bb = _battles(pw)
            return _fit(bb.counts, bb.ia, bb.ib, m, 0, "half", False, method, 1e-10, 500).theta

        return f

    t_k, th = best(kernel("newton"))
    ref = centred(th)
    rows.append(("ours kernel (MM warm start + Newton)", t_k, 0.0))
    t_km, thm = best(kernel("mm"))
    rows.append(("ours kernel (MM alone, Hunter 2004)", t_km, np.abs(centred(thm) - ref).max()))
    t_api, r = best(lambda: bradley_terry_ml(pw, ties="half", interval="wald"))
    rows.append(
        ("ours api: bradley_terry_ml(pairs)", t_api, np.abs(centred(r.ability) - ref).max())
    )
    t_rd, r = best(lambda: bradley_terry_ml(read_battles(df), ties="half", interval="wald"))
    rows.append(
        (
            "ours api+read: read_battles + bradley_terry_ml",
            t_rd,
            np.abs(centred(r.ability) - ref).max(),
        )
    )

    wmap = {"left": Winner.X, "right": Winner.Y, "tie": Winner.Draw}
    xs, ys, ws = df.left.tolist(), df.right.tolist(), df.winner.map(wmap).tolist()
    idx = pd.Index(b.agents)
    for tol in (1e-6, 1e-12):
        t_e, res = best(
            lambda tol=tol: evalica.bradley_terry(xs, ys, ws, tolerance=tol, limit=100_000)
        )
        err = np.abs(centred(np.log(res.scores.reindex(idx).to_numpy())) - ref).max()
        rows.append((f"evalica bradley_terry (pyo3, tol {tol:g})", t_e, err))
    code = {a: i for i, a in enumerate(b.agents)}
    li, ri = df.left.map(code).to_numpy(), df.right.map(code).to_numpy()
    data = []
    for i, j, w in zip(li, ri, df.winner, strict=True):
        data += [(i, j)] * 2 if w == "left" else [(j, i)] * 2 if w == "right" else [(i, j), (j, i)]
    t_c, th_c = best(lambda: choix.ilsr_pairwise(m, data, alpha=0.0, max_iter=10_000, tol=1e-8), 2)
    rows.append(("choix ilsr_pairwise (tol 1e-8)", t_c, np.abs(centred(th_c) - ref).max()))
    t_cm, th_cm = best(lambda: choix.mm_pairwise(m, data, alpha=0.0, max_iter=10_000, tol=1e-8), 2)
    rows.append(("choix mm_pairwise (tol 1e-8)", t_cm, np.abs(centred(th_cm) - ref).max()))
    t_b, _ = best(lambda: bradley_terry_ml(pw, ties="half", n_resamples=1000, rng=0), 1)
    rows.append(("ours bootstrap, 1,000 battle resamples", t_b, np.nan))
    w = max(len(n) for n, *_ in rows)
    print(f"{'fit':<{w}}  {'time (ms)':>10}  {'max |diff| vs ours':>20}")
    for n, t, e in rows:
        print(f"{n:<{w}}  {1000 * t:>10.2f}  {e:>20.2e}")
    print(
        f"ratios: evalica(1e-6) / ours kernel = {rows[4][1] / t_k:.1f}; evalica(1e-6) / ours api = "
        f"{rows[4][1] / t_api:.2f}; evalica(1e-6) / ours api+read = {rows[4][1] / t_rd:.2f}"
    )
    print(
        f"        choix ilsr / ours kernel = {t_c / t_k:.0f}; choix ilsr / ours api = {t_c / t_api:.0f}; "
        f"choix mm / ours api = {t_cm / t_api:.0f}"
    )


def main() -> None:
    print("load average at start:", os.getloadavg())
    root = Path(
        os.environ.get(
            "HIERBENCH_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"
        )
    )
    df = pd.read_csv(root / "evalica" / "llmfao_pairwise.csv")[["left", "right", "winner"]]
    run("LLMFAO", df)
    rng = np.random.default_rng(0)
    m, n = 100, 100_000
    ability = rng.normal(0, 1, m)
    i = rng.integers(0, m, n)
    j = (i + rng.integers(1, m, n)) % m
    d = ability[i] - ability[j]
    p = np.stack([np.exp(d / 2), np.ones(n), np.exp(-d / 2)], 1)
    u = rng.random(n)[:, None] > np.cumsum(p / p.sum(1, keepdims=True), 1)
    outcome = np.array(["left", "tie", "right"])[u.sum(1)]
    names = np.array([f"m{k:03d}" for k in range(m)])
    run("simulated arena", pd.DataFrame({"left": names[i], "right": names[j], "winner": outcome}))
    print("load average at end:", os.getloadavg())


if __name__ == "__main__":
    main()
