"""Ingest benchmark: agent x task counts of a 10^7- to 10^9-record Parquet log.

Writes a synthetic run log (default 10^7 records: 25 agents x 4,000 tasks,
ragged, 2% infrastructure errors, a unique ``run`` id per record, in row
groups of 10^6) to a temporary folder, then reduces it to the ``to_counts``
table three ways, each in a fresh subprocess so that its peak resident
memory (``resource.getrusage(...).ru_maxrss``, which also sees DuckDB's and
pyarrow's native allocations, unlike tracemalloc) is its own. The readers
run every check: with ``run`` given, "each (agent, task, run) appears once"
groups every record, which at 10^9 records is the part that must stream
(DuckDB spills past ``--memory-limit``; Dask shuffles through disk):

* ``duckdb``  -- :func:`hierbench.data.counts_from_parquet`
* ``dask``    -- ``dask.dataframe.read_parquet`` (a partition per row group) +
  :func:`hierbench.data.counts_from_dask`
* ``pandas``  -- ``pandas.read_parquet`` + ``groupby`` (the baseline; skipped
  above 5 x 10^7 records, which it would hold in memory)

A ``noop`` worker (same imports, no work) gives the interpreter's own
footprint. Reported: median wall time over repeats, records per second,
peak RSS and the ratios against pandas from the same run. The pandas
baseline only groups (it validates nothing), so the comparison favours it.

Usage::

    python benchmarks/bench_ingest.py [--n 10000000] [--repeats 3]
    python benchmarks/bench_ingest.py --n 1000000000 --repeats 1 --tmp /big/disk   # ~4 GB of Parquet
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

METHODS = ("noop", "duckdb", "dask", "pandas")


def write_log(path: Path, n: int, *, seed: int = 0, chunk: int = 1_000_000) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    agents = np.array([f"agent_{i:02d}" for i in range(25)])
    tasks = np.array([f"repo_{i % 40:02d}__task-{i:05d}" for i in range(4000)])
    p_agent = rng.uniform(0.1, 0.9, len(agents))
    writer = None
    done = 0
    while done < n:
        m = min(chunk, n - done)
        a = rng.integers(0, len(agents), m)
        t = rng.integers(0, len(tasks), m)
        score = (rng.random(m) < p_agent[a]).astype(np.float64)
        err = rng.random(m) < 0.02
        run = np.arange(done, done + m, dtype=np.int64)  # a unique run id per record
        table = pa.table(
            {"agent": agents[a], "task": tasks[t], "run": run, "score": score, "error": err}
        )
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema)
        writer.write_table(table)
        done += m
    writer.close()


def worker(method: str, path: str, memory_limit: str = "4GB") -> dict:
    # every worker pays the same imports before the clock starts
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    from hierbench.data import counts_from_dask
    from hierbench.data import counts_from_parquet

    t0 = time.perf_counter()
    total, succ = 0, None
    if method == "duckdb":
        c = counts_from_parquet(path, error="error", run="run", memory_limit=memory_limit)
        total, succ = int(c.n_runs.sum()), float(c.n_success.sum())
    elif method == "dask":
        # one partition per Parquet row group (10^6 records), so no worker holds the whole log
        c = counts_from_dask(dd.read_parquet(path, split_row_groups=True), error="error", run="run")
        total, succ = int(c.n_runs.sum()), float(c.n_success.sum())
    elif method == "pandas":
        df = pd.read_parquet(path)
        df["succ"] = np.where(df["error"], 0.0, df["score"])
        g = df.groupby(["agent", "task"], sort=True).agg(
            n_runs=("score", "size"), n_success=("succ", "sum"), n_error=("error", "sum")
        )
        total, succ = int(g["n_runs"].sum()), float(g["n_success"].sum())
    elif method != "noop":
        raise ValueError(method)
    seconds = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB
    return {
        "method": method,
        "seconds": seconds,
        "peak_rss_mb": rss_mb,
        "vm_hwm_mb": _vm_hwm_mb(),
        "n_runs": total,
        "n_success": succ,
    }


def _vm_hwm_mb() -> float | None:
    """Peak RSS of this process image from /proc (Linux), a cross-check of ru_maxrss."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--worker", choices=METHODS)
    ap.add_argument("--write", action="store_true", help="only write the log to --path")
    ap.add_argument("--path")
    ap.add_argument("--memory-limit", default="4GB", help="DuckDB's memory cap")
    ap.add_argument("--tmp", default=None, help="folder for the log (default: the system's temp)")
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker, args.path, args.memory_limit)))
        return
    if args.write:
        write_log(Path(args.path), args.n)
        return

    methods = [m for m in METHODS if m != "pandas" or args.n <= 50_000_000]
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        path = Path(tmp) / "runs.parquet"
        t0 = time.perf_counter()
        # written in a subprocess: Linux carries a parent's peak RSS into its children's
        # ru_maxrss (fork + exec), so this process must stay small for the figures to be honest
        subprocess.run(
            [sys.executable, __file__, "--write", "--path", str(path), "--n", str(args.n)], check=True
        )
        size_mb = path.stat().st_size / 2**20
        print(f"wrote {args.n:,} records ({size_mb:.0f} MiB) in {time.perf_counter() - t0:.1f} s")
        results: dict[str, list[dict]] = {m: [] for m in methods}
        for _ in range(args.repeats):
            for m in methods:  # interleaved, so load changes hit every method alike
                out = subprocess.run(
                    [sys.executable, __file__, "--worker", m, "--path", str(path),
                     "--memory-limit", args.memory_limit],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                results[m].append(json.loads(out.stdout.strip().splitlines()[-1]))
    summary = {}
    for m, rs in results.items():
        sec = statistics.median(r["seconds"] for r in rs)
        rss = statistics.median(r["peak_rss_mb"] for r in rs)
        hwm = [r["vm_hwm_mb"] for r in rs if r["vm_hwm_mb"] is not None]
        summary[m] = {
            "seconds": sec,
            "peak_rss_mb": rss,
            "vm_hwm_mb": statistics.median(hwm) if hwm else None,
            "records_per_s": args.n / sec if sec else None,
        }
    checks = {m: (results[m][0]["n_runs"], round(results[m][0]["n_success"], 6)) for m in methods[1:]}
    assert len(set(checks.values())) == 1, f"methods disagree: {checks}"
    base = summary.get("pandas", summary["duckdb"])
    noop = summary["noop"]["peak_rss_mb"]
    print(f"\n{args.n:,} records, median of {args.repeats} runs; interpreter + imports alone: {noop:.0f} MiB")
    vs = "pandas" if "pandas" in summary else "duckdb"
    print(f"{'method':8} {'seconds':>8} {'records/s':>12} {'peak RSS MiB':>13} {'time vs ' + vs:>15} {'RSS vs ' + vs:>14}")
    for m in methods[1:]:
        s = summary[m]
        print(
            f"{m:8} {s['seconds']:8.2f} {s['records_per_s']:12,.0f} {s['peak_rss_mb']:13.0f} "
            f"{s['seconds'] / base['seconds']:15.2f} {s['peak_rss_mb'] / base['peak_rss_mb']:14.2f}"
        )
    print(json.dumps({"n": args.n, "repeats": args.repeats, "summary": summary}))


if __name__ == "__main__":
    main()
