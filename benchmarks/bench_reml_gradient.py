"""Benchmark: REML fits and profile intervals with the deviance's analytic gradient vs finite differences.

An ablation: it patches the private flag ``hierbench.freq._variance._reml._ANALYTIC_GRADIENT``
(False: L-BFGS-B differences the deviance in every parameter, the path before the gradient)
and times, in the same run and interleaved:

- ``metr``: ``variance_components`` on METR (binarised, the default design
  ``run:(agent*(task:cluster))``, 5 relative SDs), then every component's profile
  interval (``profile_ci()``) and the coefficients' (``coefficients(ci="profile")``);
- ``swe-bench``: the same on SWE-bench bash-only with its repositories (12,500 cells, no
  runs, 4 relative SDs);
- ``coverage study``: the 75 simulated unbalanced ``run:task:family`` designs of
  tests/test_freq_gtheory_reml.py::test_interval_coverage_unbalanced_nested (fit, profile
  intervals, E rho^2 and Phi profile intervals), same seed.

Each row prints both medians and the ratio (finite differences / gradient); the largest
relative difference between the two paths' estimates and interval ends is recorded.

Measured (2026-12-06, 2 cores at load 3.4-3.8, same run; finite differences / gradient):

==============  ===================  ================  =====  =======================
case            finite differences   analytic          ratio  largest relative diff.
==============  ===================  ================  =====  =======================
METR            5.21 s               2.02 s            2.58   4.0e-6
SWE-bench       27.3 s               11.3 s            2.43   6.1e-7
coverage study  10.3 s               6.24 s            1.66   3.2e-5
==============  ===================  ================  =====  =======================

The coverage study's designs are tiny (2 relative SDs), so Python overhead dominates although
its factorisations fell threefold (74,460 to 24,849).

Run: ``HIERBENCH_SHARED_DATA=... nice python benchmarks/bench_reml_gradient.py
[--repeats 3] [--only metr swe-bench coverage]``.
"""

from __future__ import annotations

import warnings

import numpy as np
from _harness import Bench
from _harness import parser
from bench_gtheory import _sim_nested  # the same unbalanced run:task:family scores

import hierbench as hb
from hierbench.freq import variance_components
from hierbench.freq._variance import _reml  # ablation: the gradient switched off


def _intervals(data, **kw) -> np.ndarray:
    """Fit, every component's profile interval and the coefficients' profile intervals."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(data, **kw)
        ci = vc.profile_ci().values
        co = vc.coefficients(ci="profile")["ci"].values
    return np.concatenate([vc.estimate.values, ci.ravel(), co.ravel()])


def _coverage_study() -> np.ndarray:
    rng = np.random.default_rng(2026)
    out = []
    for _ in range(75):
        df = _sim_nested(rng, n_family=10, s=(0.5, 1.0, 0.8))
        out.append(_intervals(df, design="run:task:family", var="y", measurement="family"))
    return np.concatenate(out)


def _with(flag: bool, fn):
    def run():
        old = _reml._ANALYTIC_GRADIENT
        _reml._ANALYTIC_GRADIENT = flag
        try:
            return fn()
        finally:
            _reml._ANALYTIC_GRADIENT = old

    return run


def main(argv=None) -> None:
    ap = parser(__doc__)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=["metr", "swe-bench", "coverage"])
    args = ap.parse_args(argv)
    cases = {}
    if "metr" in args.only:
        metr = hb.data.load_metr()
        cases["metr"] = lambda: _intervals(metr)
    if "swe-bench" in args.only:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            swe = hb.data.load_swebench_bash_only()
        cases["swe-bench"] = lambda: _intervals(swe)
    if "coverage" in args.only:
        cases["coverage study"] = _coverage_study
    with Bench("reml_gradient", argv) as b:
        for name, fn in cases.items():
            b.compare(
                f"{name}: fit + profile intervals",
                {"finite differences": _with(False, fn), "analytic gradient": _with(True, fn)},
                repeats=args.repeats,
                warmup=0,
                baseline="finite differences",
            )
            a, g = b.last["finite differences"], b.last["analytic gradient"]
            fin = np.isfinite(a) & (a != 0)
            same_inf = bool(np.array_equal(np.isfinite(a), np.isfinite(g)))
            rel = float(np.max(np.abs(g[fin] - a[fin]) / np.abs(a[fin]))) if fin.any() else 0.0
            b.record(f"{name}: max relative difference of estimates and ends", rel)
            b.record(f"{name}: same infinite ends", same_inf)


if __name__ == "__main__":
    main()
