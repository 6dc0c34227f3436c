"""Bradley-Terry maximum likelihood: time against evalica (Rust) and choix on the same data.

Data: LLMFAO (8,931 crowd judgements, 59 models, 3,471 ties; ``../shared/data/evalica``)
and a simulated arena of 10^5 battles among 100 agents (Davidson ties).

What a user calls by default, ``fit_bradley_terry_ml(pairs)``, fits Davidson ties and
1,000 battle-bootstrap refits (percentile and rank intervals). No other package
here computes intervals, so the like-for-like comparison is the point fit:

* ours ``point``: ``fit_bradley_terry_ml(pairs, ties="half", interval="wald", tol=...)`` on a
  pairwise dataset: validation, pair counting, MM warm start + Newton, Wald standard
  errors, Wald rank intervals, the result object;
* ours ``point from table``: ``read_battles(df)`` and the same call, from the raw columns;
* evalica ``bradley_terry`` (pyo3 solver; Newman's iteration) from the raw columns (it
  indexes the names itself; the ``Winner`` column is built once, outside the timing);
  scores only; and ``from table``: the same with its inputs (name lists, ``Winner``
  column) built from the DataFrame inside the timing, the like of ours from table;
* choix ``ilsr_pairwise`` (its fastest solver) from integer pairs built outside the
  timing, every battle doubled and a tie counted as one win each way; scores only.

Same model: ties count as half a win each way on every side (evalica's default
``tie_weight=0.5``; ours ``ties="half"``; choix by doubling). Same convergence: the
solvers stop by different rules (ours: gradient < tol * sqrt(n); evalica: L2 change of
the scores < tol; choix: L1 change < tol), so each is run at two settings and the
accuracy it reached is printed, max |error| of the centred log abilities against a
reference fit (our Newton at tol 1e-13, which evalica at 1e-12 matches to ~1e-12):
"1e-6" (every solver at its tolerance 1e-6: the accuracy of evalica's default) and
"tight" (ours 1e-10, our default; evalica 1e-12; choix 1e-10).

Timing: ``ROUNDS`` rounds, each running every contender once in a rotating order
(interleaved, so load changes hit all of them alike); the table gives each one's
median time and the median over rounds of its time divided by ours in that round.
The load average is printed at the start and the end.

Run: ``HIERBENCH_SHARED_DATA=../shared/data .venv/bin/python benchmarks/bench_bt_ml.py [rounds] [--quick]``
(``--quick``: ours and evalica only, no default bootstrap call). After each tier a line
gives issue 27's end-to-end figure: evalica from the raw table over ``read_battles`` plus
the point fit, the median over rounds of the two timings' ratio in the same round.

Issue 27, end to end from the raw table (``--quick``, 21 rounds, 2026-12-02, shared 2-core
machine at load average 7.3-7.6, so every time is inflated; ratios are per round):
LLMFAO ``read_battles`` + point fit 13.1 ms against evalica 16.1 ms (evalica / ours median
1.47, range 0.84-2.23) at the 1e-6 tier, 13.6 against 22.9 ms (1.66) at the tight tier;
arena 55 ms against 179-195 ms (3.3-3.5). Before (2026-11-30 figures below and the issue):
ours 11.2 ms against evalica's 9.7 ms on LLMFAO, the reader then costing 4-7x the fit.

Again 2026-12-03 (``--quick``, 21 rounds, load 2.4-2.7): LLMFAO from the raw table 9.4 ms
against evalica's 14.8 ms (evalica / ours median 1.59, range 1.35-1.90) at the 1e-6 tier, 8.1
against 11.3 ms (1.50) at the tight tier; arena 27 against 100 ms (3.53) and 37 against 135
ms (3.81).

Again 2026-12-04 (``--quick``, 21 rounds, load 2.0-2.3: an SBC study on the other core): LLMFAO
from the raw table 6.87 ms against evalica 0.4.2's 9.53 ms (evalica / ours median 1.42, range
0.46-3.61) at the 1e-6 tier, 6.79 against 9.39 ms (1.42) at the tight tier; arena 27.1 against
96.9 ms (3.26) and 27.5 against 90.9 ms (3.16).

Again 2026-12-07 (``--quick``, 21 rounds, load 1.4), after read_battles counted repeated records from
the codes it already holds and the similar-labels check skipped its Unicode walk for ASCII names:
LLMFAO from the raw table 6.83 ms against evalica's 8.43 (evalica / ours median 1.27, range
1.13-1.37) at the 1e-6 tier, 7.11 against 8.83 (1.24) at the tight tier; arena 26.9 against 79.5
ms (2.95). The day before, with the duplicate check hashing every row: 9.27 against 9.55 (1.03).

Measured 2026-11-30 on the shared 2-core machine, two runs (7 and 9 rounds) at load
average 8-10, ratios = median over rounds of (their time / ours in the same round):

* LLMFAO point fit: evalica / ours 0.79 and 0.99 at the 1e-6 tier, 0.91 and 1.06 at the
  tight tier (parity within the noise, not reliably faster; a third 21-round run: 0.77);
  choix ilsr / ours 2.9 and 6.1 at tol 1e-6 (choix then reaches only 3.9e-7), 9.6 and 11.0
  at the tight tier; choix mm / ours 111 and 118. From the raw table ours is 4.2-6.7x
  slower than from the dataset: ``read_battles`` validation dominates.
* Arena (10^5 battles) point fit: evalica / ours 1.71 and 1.94 (1e-6 tier), 1.46 and 1.40
  (tight); choix ilsr / ours 11.6-22.8.
* Accuracy reached (max |error| of centred log abilities): ours 2.6e-12 (LLMFAO) and
  1.8e-12 (arena) at tol 1e-10, but 3.1e-6 on LLMFAO at tol 1e-6 (our tolerance is on the
  gradient, scaled by sqrt(n)); evalica 2.3e-8 / 3.0e-9 at 1e-6 and ~2e-14 at 1e-12;
  choix ilsr 3.9e-7 / 2.3e-8 at 1e-6 and 2.2e-11 / 1.0e-12 at 1e-10.
* Default call (Davidson, 1,000 bootstrap refits): LLMFAO 1.96 and 2.24 s; arena 33 and
  104 s (single timings, load 8-10). The batched refits are 1.6-1.8x faster than the
  one-fit-per-resample loop they replaced (interleaved, load ~10), same results to 2.3e-13.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from hierbench.data import read_battles
from hierbench.freq import fit_bradley_terry_ml

ROUNDS = 7


def centred(x):
    x = np.asarray(x, dtype=float)
    return x - x.mean()


def interleaved(contenders, rounds):
    """Median time of each contender and median per-round ratio to the first one."""
    names = list(contenders)
    times = {n: [] for n in names}
    out = {}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            fn, reps = contenders[n]
            if r >= reps:
                continue
            t = time.perf_counter()
            out[n] = fn()
            times[n].append(time.perf_counter() - t)
    base = np.asarray(times[names[0]])
    rows = []
    for n in names:
        t = np.asarray(times[n])
        ratio = np.median(t / base[: t.size])
        rows.append((n, np.median(t), ratio, t.size))
    return rows, out, times


def from_table_ratio(times: dict, tier: str) -> str:
    """Issue 27's end-to-end figure: evalica from the raw table over ours from it, per round."""
    ours = np.asarray(next(v for k, v in times.items() if k.startswith("ours point from table")))
    theirs = np.asarray(next(v for k, v in times.items() if k.startswith("evalica from table")))
    r = theirs / ours
    return (
        f"from the raw table, tier {tier}: read_battles + fit {1000 * np.median(ours):.2f} ms, evalica "
        f"{1000 * np.median(theirs):.2f} ms; evalica / ours per round: median {np.median(r):.2f} "
        f"(range {r.min():.2f}-{r.max():.2f}, {r.size} rounds)"
    )


def run(name: str, df: pd.DataFrame, rounds: int, with_mm: bool, quick: bool = False) -> None:
    import choix
    import evalica
    from evalica import Winner

    print(
        f"\n== {name}: {len(df):,} battles, {len(set(df.left) | set(df.right))} agents, "
        f"{int((df.winner == 'tie').sum()):,} ties"
    )
    pw = read_battles(df)
    # the reference: ties as half a win, sum-zero logits, solved to a tight tolerance
    tight = fit_bradley_terry_ml(pw, ties="half", scale="logit", interval="wald", tol=1e-13)
    agents = [str(a) for a in tight.estimate["agent"].values]
    m = len(agents)
    ref = centred(tight.estimate.values)
    idx = pd.Index(agents)
    wmap = {"left": Winner.X, "right": Winner.Y, "tie": Winner.Draw}
    xs, ys, ws = df.left.tolist(), df.right.tolist(), df.winner.map(wmap).tolist()
    code = {a: i for i, a in enumerate(agents)}
    li, ri = df.left.map(code).to_numpy(), df.right.map(code).to_numpy()
    data = []
    for i, j, w in zip(li, ri, df.winner, strict=True):
        data += [(i, j)] * 2 if w == "left" else [(j, i)] * 2 if w == "right" else [(i, j), (j, i)]

    def ours(tol, table=False):
        def f():
            p = read_battles(df) if table else pw
            return centred(fit_bradley_terry_ml(p, ties="half", interval="wald", tol=tol).ability)

        return f

    def ev(tol, table=False):
        def f():
            if table:  # from the same raw columns: its inputs built inside the timing
                x, y, w = df.left.tolist(), df.right.tolist(), df.winner.map(wmap).tolist()
            else:
                x, y, w = xs, ys, ws
            r = evalica.bradley_terry(x, y, w, tolerance=tol, limit=1_000_000)
            return centred(np.log(r.scores.reindex(idx).to_numpy()))

        return f

    def ch(tol, solver):
        def f():
            return centred(solver(m, data, alpha=0.0, max_iter=1_000_000, tol=tol))

        return f

    for tier, (t_ours, t_ev, t_ch) in {
        "1e-6": (1e-6, 1e-6, 1e-6),
        "tight": (1e-10, 1e-12, 1e-10),
    }.items():
        contenders = {
            f"ours point (tol {t_ours:g})": (ours(t_ours), rounds),
            f"ours point from table (tol {t_ours:g})": (ours(t_ours, table=True), rounds),
            f"evalica bradley_terry (tol {t_ev:g})": (ev(t_ev), rounds),
            f"evalica from table (tol {t_ev:g})": (ev(t_ev, table=True), rounds),
        }
        if not quick:
            contenders[f"choix ilsr_pairwise (tol {t_ch:g})"] = (ch(t_ch, choix.ilsr_pairwise), min(rounds, 3))
        if with_mm and tier == "tight" and not quick:
            contenders[f"choix mm_pairwise (tol {t_ch:g})"] = (ch(t_ch, choix.mm_pairwise), 1)
        for f, _ in contenders.values():  # warm-up: first-call costs are not the comparison
            f()
        rows, out, times = interleaved(contenders, rounds)
        print(f"-- tier {tier}: load average {os.getloadavg()[0]:.1f}")
        w = max(len(n) for n, *_ in rows)
        print(
            f"{'fit':<{w}}  {'median ms':>10}  {'x ours':>7}  {'runs':>4}  {'max |err| (logit)':>17}"
        )
        for n, t, ratio, k in rows:
            err = np.abs(out[n] - ref).max()
            print(f"{n:<{w}}  {1000 * t:>10.2f}  {ratio:>7.2f}  {k:>4}  {err:>17.1e}")
        print(from_table_ratio(times, tier))
    if quick:
        return
    # the default call, for the record: Davidson ties and 1,000 battle-bootstrap refits
    t = time.perf_counter()
    fit_bradley_terry_ml(pw, rng=0)
    print(
        f"default call fit_bradley_terry_ml(pairs) (Davidson ties, 1,000 bootstrap refits, "
        f"percentile and rank intervals): {time.perf_counter() - t:.2f} s "
        f"(load {os.getloadavg()[0]:.1f})"
    )


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--quick"]
    quick = "--quick" in sys.argv[1:]  # no choix, no default (bootstrap) call
    rounds = int(args[0]) if args else ROUNDS
    print("load average at start:", os.getloadavg())
    root = Path(
        os.environ.get(
            "HIERBENCH_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"
        )
    )
    df = pd.read_csv(root / "evalica" / "llmfao_pairwise.csv")[["left", "right", "winner"]]
    run("LLMFAO", df, rounds, with_mm=True, quick=quick)
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
    run(
        "simulated arena",
        pd.DataFrame({"left": names[i], "right": names[j], "winner": outcome}),
        rounds,
        with_mm=False,
        quick=quick,
    )
    print("load average at end:", os.getloadavg())


if __name__ == "__main__":
    main()
