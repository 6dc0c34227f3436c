"""Calibration of the even-clusters flag of the clustered pass^k / pass@k / success_rate interval.

The flag (``hierbench.freq._rates._logit_t.EVEN_CLUSTERS_FLAG``) marks a kept
logit t interval whose cluster-robust (CR2) standard error is likely short.
This script simulates clustered logs with a known truth, scores the package's
95% intervals and prints how well they cover, split by the flag's statistic,
for two rules on the same draws:

- ``old``, the rule until 2026-12-07: ``n_eff >= 0.75 G`` with ``n_eff = (sum S)^2 / sum S^2``
  over the cluster sums ``S_g`` (the smaller of it and the same of the failures' sums). With
  clusters of one size the sums are alike unless the cluster means differ a lot, so it fired on
  most agents there (audit T, finding 1), while its text quoted a coverage those rows did not have.
- ``new``, the design effect ``deff = SE_CR2^2 / (s^2 / N)``: the cluster-robust variance of the
  mean over the variance it would have if the ``N`` tasks were independent (``s^2`` their sample
  variance). It is 1 when every task is its own cluster, whatever the sizes; it falls below 1
  where the cluster sums are more alike than independent tasks of those sizes would make them.
  The flag fires where ``deff < 0.5`` (``_logit_t.EVEN_CLUSTERS_SHARE``).

Designs: 4 cluster-size designs (3 tasks each, 10 each, random 1-5, random 2-18; a random
design draws its sizes anew for every ``--chunk`` data sets) x G = 4, 6, 8, 12, 16, 24, 32
clusters x cluster effect sd 0, 0.5, 1 (logit scale) x task effect sd 0.5, 1 x mean pass rate
0.1, 0.3, 0.5, 0.8 x k = 1, 2 (pass^k; ``k``-``2k`` runs per task), ``--reps`` data sets each.
Truth ``E[expit(mu + s Z)^k]`` by adaptive quadrature (scipy), ``s`` the two sds combined.
Only the t rows are scored (the flag's domain; the bound over clusters is not computed here,
so the rows that would carry it have NaN ends and are left out). Monte Carlo SE of a coverage: ``sqrt(p (1 - p) / n)``, the
data sets independent (those of a chunk share their cluster sizes).

Usage::

    python benchmarks/bench_even_clusters_flag.py [--reps 100] [--seed 18] [--chunk 25]

Measured 2026-12-07, ``--reps 100 --seed 18`` (134,400 data sets, 83,396 t rows; 92 s on one
shared core). Coverage of the 95% t rows, +- its Monte Carlo SE, (rows):

    rule  design       flagged  coverage flagged          coverage not flagged
    old   equal 3      0.192    0.919 +- 0.005 (2898)     0.965 +- 0.002 (12234)
    old   equal 10     0.545    0.945 +- 0.002 (14599)    0.968 +- 0.002 (12192)
    old   random 1-5   0.034    0.875 +- 0.015 (505)      0.958 +- 0.002 (14564)
    old   random 2-18  0.164    0.917 +- 0.004 (4325)     0.961 +- 0.001 (22079)
    old   pooled       0.268    0.935 +- 0.002 (22327)    0.962 +- 0.001 (61069)
    new   equal 3      0.030    0.830 +- 0.018 (448)      0.960 +- 0.002 (14684)
    new   equal 10     0.047    0.824 +- 0.011 (1268)     0.962 +- 0.001 (25523)
    new   random 1-5   0.035    0.803 +- 0.017 (527)      0.960 +- 0.002 (14542)
    new   random 2-18  0.060    0.831 +- 0.009 (1584)     0.962 +- 0.001 (24820)
    new   pooled       0.046    0.825 +- 0.006 (3827)     0.961 +- 0.001 (79569)

By G the new flag marks 21% of the t rows at G = 4 (coverage 0.861 +- 0.010), 8% at 8
(0.803 +- 0.014), 0.3% at 32 (0.830 +- 0.052); the rows it leaves covered 0.951 (G = 32) to
0.992 (G = 4). Coverage by ``deff`` is nearly the same in the four size designs (below 0.25:
0.67-0.75; 0.4-0.5: 0.85-0.90; 1-1.5: 0.96-0.97), which is what makes ``deff`` the statistic;
it is lower where the cluster effect is larger (deff 0.4-0.5: 0.89 at sd 0, 0.76 at sd 1).
Neighbouring thresholds: ``deff < 0.4`` flags 2.8% (0.795 +- 0.008), ``< 0.6`` flags 7.4%
(0.852 +- 0.005). The old rule's flagged rows covered 0.92-0.95 except with random 1-5 sizes
(its own calibration's design, 0.875), and it flagged 55% of the rows with 10 tasks a cluster.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
import xarray as xr
from bench_passk_coverage import _cl_mu as _mu  # the logit centre of a pass rate
from bench_passk_coverage import _cl_truth as _truth  # a new task's pass^k, by quadrature
from bench_passk_coverage import no_cluster_bound  # the t rows only

SIZES = ("equal 3", "equal 10", "random 1-5", "random 2-18")
GS, SD_CLUSTER, SD_TASK, MEANS, KS = (4, 6, 8, 12, 16, 24, 32), (0.0, 0.5, 1.0), (0.5, 1.0), (0.1, 0.3, 0.5, 0.8), (1, 2)
DEFF_BINS = (0, 0.25, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 1.5, np.inf)


def _sizes(rng: np.random.Generator, design: str, G: int) -> np.ndarray:
    """The ``G`` cluster sizes of one chunk of data sets."""
    if design.startswith("equal"):
        return np.full(G, int(design.split()[1]))
    lo, hi = (int(v) for v in design.split()[1].split("-"))
    return rng.integers(lo, hi + 1, G)


def _chunk(rng, sizes, sd_cl, sd_task, mu, k, reps) -> xr.Dataset:
    """``reps`` independent data sets on one cluster layout: each row (agent) draws its own effects and runs."""
    from scipy.special import expit

    G, code = sizes.size, np.repeat(np.arange(sizes.size), sizes)
    eta = mu + rng.normal(0, sd_cl, (reps, G))[:, code] + rng.normal(0, sd_task, (reps, code.size))
    runs = rng.integers(k, 2 * k + 1, (reps, code.size)).astype(float)
    succ = rng.binomial(runs.astype(int), expit(eta)).astype(float)
    return xr.Dataset({"n_runs": (("agent", "task"), runs), "n_success": (("agent", "task"), succ)},
                      coords={"cluster": ("task", code.astype(str))})  # fmt: skip


def _rows(res, sizes: np.ndarray, truth: float) -> dict:
    """Per data set: covered, the flag, ``deff`` and the old rule, computed here by hand from the per-task values."""
    from hierbench.freq._rates._logit_t import EVEN_CLUSTERS_FLAG

    y = np.asarray(res.per_task.values, dtype=float)  # every task has k or more runs: no NaN
    code = np.repeat(np.arange(sizes.size), sizes)
    S = np.stack([np.bincount(code, weights=r) for r in y])
    C = sizes - S
    with np.errstate(invalid="ignore", divide="ignore"):
        n_eff = np.fmin(S.sum(1) ** 2 / (S**2).sum(1), C.sum(1) ** 2 / (C**2).sum(1))
        deff = np.asarray(res.standard_error.values) ** 2 / (y.var(axis=1, ddof=1) / y.shape[1])
    lo, hi = (np.asarray(res.ci.sel(ci_bound=b).values) for b in ("lower", "upper"))
    return {"t": np.asarray(res.ci_kind.values) == "t", "covered": (lo <= truth) & (truth <= hi),
            "flag": np.asarray(res.ci_flag.values, dtype=object) == EVEN_CLUSTERS_FLAG,
            "old": n_eff >= 0.75 * sizes.size, "deff": deff}  # fmt: skip


def simulate(reps: int = 100, seed: int = 18, chunk: int = 25) -> pd.DataFrame:
    """One row per simulated data set over the grid (module notes), t rows only."""
    from hierbench.freq import pass_hat_k

    rng = np.random.default_rng(seed)
    out = []
    for sd_cl in SD_CLUSTER:
        for sd_task in SD_TASK:
            s = float(np.hypot(sd_cl, sd_task))
            for mean in MEANS:
                mu = _mu(mean, s)
                for k in KS:
                    truth = _truth(mu, s, k)
                    for design in SIZES:
                        for G in GS:
                            for start in range(0, reps, chunk):
                                sizes = _sizes(rng, design, G)
                                ds = _chunk(rng, sizes, sd_cl, sd_task, mu, k, min(chunk, reps - start))
                                with warnings.catch_warnings(), no_cluster_bound():
                                    warnings.simplefilter("ignore")
                                    r = _rows(pass_hat_k(ds, k), sizes, truth)
                                t = r.pop("t")
                                frame = pd.DataFrame({key: v[t] for key, v in r.items()})
                                out.append(frame.assign(design=design, G=G, sd_cl=sd_cl, sd_task=sd_task,
                                                        mean=mean, k=k))  # fmt: skip
    return pd.concat(out, ignore_index=True)


def _cov(x) -> str:
    """Coverage with its Monte Carlo SE ``sqrt(p (1 - p) / n)`` and ``n``."""
    p, n = float(np.mean(x)), len(x)
    return f"{p:.3f} +- {np.sqrt(p * (1 - p) / n):.3f} ({n})" if n else "-"


def report(df: pd.DataFrame) -> None:
    """The calibration tables: both rules by design, the flag by G, coverage by ``deff``, the threshold's neighbours."""
    from hierbench.freq._rates._logit_t import EVEN_CLUSTERS_SHARE

    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 20)
    new = df.deff < EVEN_CLUSTERS_SHARE
    print(f"{len(df)} t rows; the package's flag equals deff < {EVEN_CLUSTERS_SHARE:g} in "
          f"{np.mean(df.flag == new):.4f} of them; all t rows cover {_cov(df.covered)}\n")  # fmt: skip
    print("rule  design       flagged  coverage flagged          coverage not flagged")
    for name, rule in (("old", df.old), ("new", new)):
        for design in SIZES:
            d = (df.design == design).values
            f, c = rule.values[d], df.covered.values[d]
            print(f"{name:<5} {design:<12} {f.mean():.3f}    {_cov(c[f]):<25} {_cov(c[~f])}")
        print(f"{name:<5} {'pooled':<12} {rule.mean():.3f}    {_cov(df.covered[rule]):<25} "
              f"{_cov(df.covered[~rule])}")  # fmt: skip
    print(f"\nthe flag (deff < {EVEN_CLUSTERS_SHARE:g}) by G: share flagged, coverage flagged, coverage not flagged")
    for G, d in df.groupby("G"):
        f = (d.deff < EVEN_CLUSTERS_SHARE).values
        print(f"G = {G:<3} {f.mean():.3f}  {_cov(d.covered.values[f]):<25} {_cov(d.covered.values[~f])}")
    bins = pd.cut(df.deff, DEFF_BINS, right=False)
    for index in ("design", "G", "sd_cl"):
        print(f"\ncoverage of the t rows by deff (rows) and {index} (columns):")
        print(df.pivot_table(index=bins, columns=index, values="covered", aggfunc=_cov, observed=True).to_string())
    print("\nthe threshold and its neighbours (flag where deff < c):")
    for c in (0.3, 0.4, 0.5, 0.6, 0.7):
        f = df.deff < c
        print(f"c = {c:.1f}: flags {f.mean():.3f} of the t rows; coverage flagged {_cov(df.covered[f])}, "
              f"not flagged {_cov(df.covered[~f])}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=100, help="data sets per design cell")
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--chunk", type=int, default=25, help="data sets per cluster layout (one pass_hat_k call)")
    a = ap.parse_args()
    start = time.perf_counter()
    df = simulate(reps=a.reps, seed=a.seed, chunk=a.chunk)
    print(f"simulated in {time.perf_counter() - start:.0f} s (--reps {a.reps} --seed {a.seed} --chunk {a.chunk})")
    report(df)


if __name__ == "__main__":
    main()
