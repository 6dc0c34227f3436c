"""Benchmark: hierbench ``confidence_sequence`` vs ``confseq.betting.betting_cs``.

The same 1,000-value stream (Beta(2, 5) partial-credit scores, fixed seed),
``confseq``'s defaults (hedged capital ``max(theta K+, (1 - theta) K-)``,
predictable plug-in bets, grid of 1,000 breaks, alpha = 0.05, no running
intersection). The bounds must agree on the grid; the ratio of median wall
times is reported.

``confseq`` is a benchmark-only dependency. It builds on Python 3.12 with
``apt-get install libboost-dev``, ``pip install "pybind11>=2.11" scikit-build
cmake ninja`` and ``pip install --no-build-isolation confseq``. Its 0.0.11
release still uses ``np.float_`` (removed in NumPy 2), so this script aliases
it before importing confseq.

Run: ``.venv/bin/python benchmarks/bench_confseq.py [--repeats N]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import xarray as xr

from hierbench.freq import confidence_sequence


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--n", type=int, default=1000)
    args = ap.parse_args()
    if not hasattr(np, "float_"):
        np.float_ = np.float64  # noqa: NPY201  (confseq 0.0.11 uses the NumPy 1 alias)
    from confseq.betting import betting_cs

    x = np.random.default_rng(20261130).beta(2, 5, args.n)
    da = xr.DataArray(x, dims="task")
    confidence_sequence(da, running_intersection=False)  # warm-up (imports, caches)
    betting_cs(x)
    t_cs, t_ours = [], []
    for _ in range(args.repeats):  # interleaved, so load on the machine hits both alike
        t0 = time.perf_counter()
        lo, hi = betting_cs(x, alpha=0.05, breaks=1000, running_intersection=False)
        t_cs.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        res = confidence_sequence(da, prob=0.95, breaks=1000, running_intersection=False)
        t_ours.append(time.perf_counter() - t0)
    b = res.bounds.values
    d = max(np.abs(b[:, 0] - lo).max(), np.abs(b[:, 1] - hi).max())
    n_diff = int(
        np.sum(~np.isclose(b[:, 0], lo, atol=1e-12, rtol=0))
        + np.sum(~np.isclose(b[:, 1], hi, atol=1e-12, rtol=0))
    )
    print(
        f"stream of {args.n}; max |bound difference| {d:.2e}; bounds differing on the grid: {n_diff}"
    )
    for t in (9, 99, 999):
        if t < args.n:
            print(
                f"t={t + 1:5d}: hierbench [{b[t, 0]:.3f}, {b[t, 1]:.3f}]  confseq [{lo[t]:.3f}, {hi[t]:.3f}]"
            )
    m_cs, m_ours = statistics.median(t_cs), statistics.median(t_ours)
    print(
        f"confseq median {m_cs * 1e3:.1f} ms; hierbench {m_ours * 1e3:.1f} ms; speed-up {m_cs / m_ours:.1f}x"
    )


if __name__ == "__main__":
    main()
