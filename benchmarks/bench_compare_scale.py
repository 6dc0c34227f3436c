"""``compare_agents`` at leaderboard scale: every pair of VerbAgg's persons, wall time and peak memory.

lme4's VerbAgg read as the tests read it (persons as agents, items as tasks,
binary ``r2``; ``HIERBENCH_SHARED_DATA``): its first 100, 160 and all 316
persons (4,950, 12,720 and 49,770 pairs over 24 tasks), and the demo's
embedded default (``hierbench.testing.default_dataset``: 6 agents, 120 tasks
in 12 clusters). Each call is ``compare_agents(data, rng=0)`` (the defaults:
sign-flip test, max-T over 21,112 random sign patterns, 9,999 bootstrap
resamples) in a fresh process, so its peak resident memory is its own
(``ru_maxrss``; ``rss0`` is the process before the call, data loaded). With
``--before PATH`` (a source tree of another commit, e.g. ``mkdir base && git
archive main hierbench | tar -x -C base``) the same calls run on that tree too,
interleaved with this one, and the digest of every output array (sha256 of
the result's Dataset, values and attrs) shows whether the two agree bit for bit.

Measured 2026-12-05 09:55-10:01 UTC (load average 1.7-3.5 on the 2 shared cores, other
helpers running), main at b324444 (``--before``, a ``git archive`` of it) against this branch
at 2c330f0, ``--repeats 2`` (the order alternates); wall / CPU seconds of the call and the
process's peak resident memory; every pair of calls' digests equal (outputs identical).
An earlier run the same morning (09:42, load 1.5-3.0, at a903077) gave the same picture
(316: 67-74 / 76-77 s -> 30.5 / 33 s). tracemalloc's peak at 316: 658 MB on both.

===========  =====  =====================  =====================  =========  =============
agents       pairs  main wall / CPU s      branch wall / CPU s    CPU ratio  peak RSS MB
===========  =====  =====================  =====================  =========  =============
demo (6)     15     0.08-0.12 / 0.08-0.11  0.08 / 0.08            1.00-1.38  216 / 216
VerbAgg 100  4950   8.2-8.6 / 7.8-8.4      3.6-4.1 / 3.6-3.9      2.13-2.19  746 / 746
VerbAgg 160  12720  14.0-20.3 / 18.4-20.1  8.9-9.0 / 8.5-8.8      2.17-2.30  752 / 753-756
VerbAgg 316  49770  57.9-65.8 / 72.0-74.4  30.4-30.7 / 32.1-32.9  2.24-2.26  796-797 / 796
===========  =====  =====================  =====================  =========  =============

The demo's call takes a tenth of a second either way (15 pairs over 12 clusters: the block
route below; its differences are noise). Peak memory is the pairs' bootstrap (its 256 MB
blocks), the same on both. ``signflip_maxt`` alone, 21,112 draws, same session: 4,950
VerbAgg-like comparisons 2.2 / 4.3 s (main) -> 1.3 / 1.3 s, 49,770 of them 32 / 47 s -> 12.6 /
12.4 s; 49,770 continuous comparisons (block route), 4,000 draws: 9.3 -> 7.2-7.4 s CPU. At 316
persons the pairs' bootstrap is now most of the call (about 20 of the 33 s CPU, mostly the
column quantiles' sorts; not changed here), max-T about 12 s.

Where the time went on main (cProfile, 316 persons, 76 s, load 1.9): max-T 43.8 s
(re-studentizing the sign patterns 21.7 s, the step-down's gathers 8.1 s, successive maxima
6.3 s, ``nan_to_num`` of every block 4.0 s, row maxima 1.7 s), the pairs' bootstrap 18.5 s,
the per-pair t statistics 6.2 s (``_task_stats`` 49,770 times), the per-pair exact sign-flip
p-values 5.6 s, the matrices 1.2 s; 100 persons: 6.6 s, of which max-T 2.3 s, bootstrap 2.9 s.
What changed (outputs identical, every floating-point operation in its order):

* the t statistics of blocks of pairs that share their tasks at once (numpy's row
  reductions of a contiguous block equal its 1-D ones), the matrices filled by index;
* the exact sign-flip p-values once per distinct law when every sum is exact (at most 600
  for binary scores over 24 tasks);
* max-T, strip route (tasks as units, scores whose signed sums are exact: binary, or means
  of 1, 2, 4, 8 runs): each strip of comparisons, already in rank order, forms its own
  product on one BLAS thread and stays in cache through the studentization and the
  step-down, with no 16 MB block, no scatter, no ``nan_to_num`` pass;
* max-T, block route (clusters, other scores): the block's product as before, each strip
  written straight into rank order, so the step-down needs no gather and no separate
  ``nan_to_num`` or maximum pass (its last successive maximum is the row maximum).

What remains of max-T is the studentization's three divisions and square root and numpy's
latency-bound running maximum (a blocked running maximum was no faster).

Usage::

    python benchmarks/bench_compare_scale.py [--sizes 100 160 316 demo] [--before PATH]
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = Path(os.environ.get("HIERBENCH_SHARED_DATA", HERE.parents[1] / "shared" / "data"))


def _verbagg(n: int):
    import pandas as pd

    from hierbench.data import from_records

    df = pd.read_csv(DATA / "lme4" / "verbagg.csv")
    df["y"] = (df["r2"] == "Y").astype(float)
    ds = from_records(df, agent="id", task="item", score="y", agent_coords=["Anger", "Gender"],
                      task_coords=["btype", "situ", "mode"])  # fmt: skip
    return ds.isel(agent=slice(0, n))


def _digest(res) -> str:
    """sha256 of every variable of the result (values and attrs) and of its attrs."""
    h = hashlib.sha256()
    ds = res.to_dataset()
    for name in sorted(ds.variables, key=str):
        v = ds[name]
        h.update(str(name).encode() + v.values.tobytes() + repr(sorted(v.attrs.items())).encode())
    h.update(repr(sorted(ds.attrs.items())).encode())
    return h.hexdigest()[:16]


def child(size: str) -> dict:
    """One call in this process (its source tree first on sys.path); wall, CPU, memory, digest."""
    import warnings

    from hierbench.freq import compare_agents
    from hierbench.testing import default_dataset

    ds = default_dataset()[0] if size == "demo" else _verbagg(int(size))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = compare_agents(ds, rng=0)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"size": size, "agents": int(ds.sizes["agent"]), "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
            "rss0_mb": round(rss0 / 1024), "peak_rss_mb": round(peak / 1024), "digest": _digest(res),
            "load": [round(x, 2) for x in os.getloadavg()]}


def _run(src: Path, size: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, __file__, "--child", size], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    sys.path.insert(0, str(HERE))
    from _harness import Bench
    from _harness import parser

    p = parser(__doc__)
    p.add_argument("--sizes", nargs="+", default=["demo", "100", "160", "316"])
    p.add_argument("--before", type=Path, default=None, help="source tree to measure beside this one")
    p.add_argument("--repeats", type=int, default=1, help="calls per tree and size (the order alternates)")
    p.add_argument("--child", default=None, help=argparse_hidden())
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child)))
        return
    trees = {"after": HERE.parent} if args.before is None else {"before": args.before, "after": HERE.parent}
    with Bench("compare_scale", argv) as b:
        for size in args.sizes:
            for rep in range(args.repeats):
                names = list(trees) if rep % 2 == 0 else list(trees)[::-1]
                rows = {k: _run(trees[k], size) for k in names}
                for k in trees:
                    b.record(f"{size} {k} #{rep}", rows[k])
                _ratios(b, f"{size} #{rep}", rows)


def _ratios(b, label: str, rows: dict) -> None:
    """Before over after (wall, CPU), after over before (peak memory), and whether the outputs agree."""
    if "before" in rows:
        x, y = rows["before"], rows["after"]
        b.record(f"{label} before/after", {
            "wall_ratio": round(x["wall_s"] / y["wall_s"], 2),
            "cpu_ratio": round(x["cpu_s"] / y["cpu_s"], 2),
            "peak_rss_ratio": round(y["peak_rss_mb"] / x["peak_rss_mb"], 3),
            "identical": x["digest"] == y["digest"],
        })


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
