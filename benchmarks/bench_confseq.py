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

import numpy as np
import xarray as xr
from _harness import Bench
from _harness import parser

from hierbench.freq import confidence_sequence


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--n", type=int, default=1000)
    args = ap.parse_args()
    if not hasattr(np, "float_"):
        np.float_ = np.float64  # noqa: NPY201  (confseq 0.0.11 uses the NumPy 1 alias)
    from confseq.betting import betting_cs

    x = np.random.default_rng(20261130).beta(2, 5, args.n)
    da = xr.DataArray(x, dims="task")
    with Bench("confseq") as bench:
        bench.compare(
            f"betting CS, stream of {args.n}",
            {
                "confseq": lambda: betting_cs(
                    x, alpha=0.05, breaks=1000, running_intersection=False
                ),
                "hierbench": lambda: confidence_sequence(
                    da, prob=0.95, breaks=1000, running_intersection=False
                ),
            },
            repeats=args.repeats,
            baseline="confseq",
        )
        lo, hi = betting_cs(x, alpha=0.05, breaks=1000, running_intersection=False)
        b = confidence_sequence(
            da, prob=0.95, breaks=1000, running_intersection=False
        ).bounds.values
        bench.record(
            "max |bound difference|",
            float(max(np.abs(b[:, 0] - lo).max(), np.abs(b[:, 1] - hi).max())),
        )
        bench.record(
            "bounds differing on the grid",
            int(
                np.sum(~np.isclose(b[:, 0], lo, atol=1e-12, rtol=0))
                + np.sum(~np.isclose(b[:, 1], hi, atol=1e-12, rtol=0))
            ),
        )
        for t in (9, 99, 999):
            if t < args.n:
                bench.record(
                    f"t={t + 1}",
                    f"hierbench [{b[t, 0]:.3f}, {b[t, 1]:.3f}]  confseq [{lo[t]:.3f}, {hi[t]:.3f}]",
                )


if __name__ == "__main__":
    main()
