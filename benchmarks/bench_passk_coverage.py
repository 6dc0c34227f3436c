"""Coverage of the unbiased pass^k interval over a grid of designs, with and without the few-tasks bound.

Each design: ``n`` tasks, ``R`` runs per task, per-task success rates from a
Beta law, pass^k for ``k`` in 1, 2, 4, 8; the truth is ``E[p^k]`` (a Beta
moment, scipy). Every replication is one simulated agent, so one call of
:func:`hierbench.freq.pass_hat_k` scores ``--reps`` replications at once.
Two rules are compared on the same draws: ``t only`` (the logit t interval
wherever the per-task values are not all 0 or all 1, the rule before stop 47)
and ``default`` (where ``n_eff = (sum y)^2 / sum y^2``, or the same of
``1 - y``, is below ``min(10, n / 2)``, the distribution-free bound of
``hierbench._numerics.bounded_mean_bounds``). Printed: the
designs where either covers less than 93%, and a summary (minimum coverage,
share of designs below 93% and 90%, share of intervals the bound replaced,
median ratio of mean widths).

Usage::

    python benchmarks/bench_passk_coverage.py [--reps 1000] [--seed 7] [--out results.csv] [--quantity pass_at_k]
    python benchmarks/bench_passk_coverage.py --bootstrap   # the task bootstrap at a sparse mean (its flag)

Measured 2026-12-04 (stop 47), 336 designs x 1,000 replications, seed 7
(``--out`` table not kept: it is regenerated in 80 s): ``t only`` covered less than 93% in 63
designs and less than 90% in 48 (minimum 0.323: 8 tasks, 50 runs, pass^8 of Beta(1, 8) rates);
``default`` in 5 and 1 (minimum 0.896: 300 tasks, 20 runs, pass^4 of Beta(1, 8) rates, where
the t interval gave 0.877 and 42% of the intervals are the bound). The remaining five are
designs with many tasks and a small pass^k, where the t interval's normal approximation is
short and n_eff stays above the rule's 10. The bound replaced 34% of the grid's intervals (the
grid leans to sparse designs); the median design's mean width is 1.01 times the t interval's.
``--quantity pass_at_k`` (the truth 1 - E[(1 - p)^k]), same grid and seed: ``t only`` below 93%
in 67 designs and below 90% in 45 (minimum 0.322); ``default`` in 5 and 0 (minimum 0.908); the
bound replaced 35% of the intervals, median width ratio 1.01.

``--clusters`` (the cluster path's flag; ``python benchmarks/bench_passk_coverage.py --clusters
--reps 1000 --seed 11``, 369 s on one core): 480 designs (G in 4-48 clusters of 1-5 tasks, logit
cluster effect sd 0.5 / 1 / 1.5 plus a task effect sd 0.5, mean pass rate 0.1-0.9, k = 1, 2, 4, 8,
k-2k runs per task) x 1,000 data sets; truth ``E[expit(mu + s Z)^k]`` by adaptive quadrature.
Coverage of the 95% t rows (201,470 of 480,000 sets; the bound rows are left out), Monte Carlo
sd ``sqrt(p (1 - p) / N)``. By n_eff of the cluster sums, pooled: [0, 1.5) 1.000, [2, 2.5)
0.995, [3, 3.5) 0.977, [4, 5) 0.974, [6, 8) 0.960, [10, 15) 0.951, 15+ 0.950 (each +- 0.001-0.002):
few clusters carrying the successes is not where the interval falls short. By n_eff / G:

    G   <0.5   0.6-0.7  0.7-0.75  0.75-0.8       0.8-0.9       0.9-1
    4   0.997  0.983    0.968     0.945+-0.012   0.880+-0.015  0.733+-0.048
    6   0.995  0.973    0.944     0.912+-0.013   0.913+-0.017  0.667+-0.111
    8   0.991  0.965    0.936     0.901+-0.013   0.865+-0.024
    12  0.975  0.945    0.908     0.911+-0.017   0.867+-0.051
    16  0.966  0.939    0.921     0.871+-0.027
    24  0.961  0.937    0.917     0.857+-0.050

Below 0.90 from n_eff / G of about 0.75-0.8 at every G: the flag was ``n_eff >= 0.75 G``
until 2026-12-07: 1.3% of the t rows, covering 0.897 +- 0.006 against 0.958 +- 0.0004
elsewhere; the rule before (``n_eff < min(10, G / 2)``) flagged 29% of the t rows, which covered
0.967 +- 0.001 (0.953 elsewhere). The least-covered design cells (0.60-0.84) are designs where
the few-tasks bound usually applies and the t rows are a selected minority (57-142 of 1,000).
That grid drew cluster sizes 1-5 only. With clusters of one size the raw sums' n_eff / G is
near 1 unless the cluster means differ a lot, and that rule fired on most agents while those rows
covered 0.95-0.98 (audit T, finding 1). The flag's rule and its calibration, over equal and
random cluster sizes, are now in ``bench_even_clusters_flag.py`` (the design effect of the
mean, ``deff < 0.5``); ``clusters_report`` here prints the old rule beside the package's flag.
"""

from __future__ import annotations

import argparse
import contextlib

import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

LAWS = [(0.5, 4.0), (2.0, 2.0), (1.0, 1.0), (4.0, 1.0), (0.3, 0.3), (8.0, 1.0), (1.0, 8.0)]
RUNS, TASKS, KS = (8, 20, 50), (8, 20, 80, 300), (1, 2, 4, 8)


@contextlib.contextmanager
def t_only():
    """The interval before stop 47: no cell is treated as carried by few tasks."""
    import hierbench.freq._rates._passk as mod

    saved = mod._few_carry
    mod._few_carry = lambda per_task, task_dim: xr.zeros_like(per_task, dtype=bool).any(task_dim)
    try:
        yield
    finally:
        mod._few_carry = saved


def design(rng, a, b, n, runs, reps):
    p = rng.beta(a, b, (reps, n))
    return xr.Dataset({"n_runs": (("agent", "task"), np.full(p.shape, runs)),
                       "n_success": (("agent", "task"), rng.binomial(runs, p).astype(float))})  # fmt: skip


def score(cnt, k, truth, quantity):
    from hierbench import freq

    res = getattr(freq, quantity)(cnt, k)
    lo, hi = (res.ci.sel(ci_bound=b).values for b in ("lower", "upper"))
    used = res.ci_flag.values == "bound: few tasks carry the mean"
    return float(np.mean((lo <= truth) & (truth <= hi))), float(np.nanmean(hi - lo)), float(used.mean())


def bootstrap_sparse(agents=400, tasks=76, runs=6, seed=3) -> None:
    """The task bootstrap (percentile, BCa; 1,999 resamples) at a sparse and a plain mean score.

    400 simulated agents, 76 tasks x 6 runs, per-task rates Beta(0.3, 30) (mean 0.0099) and
    Beta(0.5, 4); beside them the unbiased pass^1 interval with the few-tasks bound.
    Measured 2026-12-04: sparse 0.882 (percentile), 0.877 (BCa), 0.993 (pass^1, the bound in 99%
    of agents); plain 0.938, 0.938, 0.945 (no bound).
    """
    import warnings

    from hierbench.freq import bootstrap_ci
    from hierbench.freq import pass_hat_k

    warnings.simplefilter("ignore")  # the all-zero agents' degenerate BCa: counted as misses here
    rng = np.random.default_rng(seed)
    for law in ((0.3, 30.0), (0.5, 4.0)):
        c = rng.binomial(runs, rng.beta(*law, (agents, tasks)))
        score = (np.arange(runs)[None, None, :] < c[..., None]).astype(float)
        ds = xr.Dataset({"score": (("agent", "task", "run"), score)},
                        coords={"agent": [f"a{i}" for i in range(agents)]})  # fmt: skip
        truth = law[0] / sum(law)
        for method in ("percentile", "bca"):
            ci = bootstrap_ci(ds, method=method, n_resamples=1999, rng=1).ci
            cov = np.mean((ci.sel(ci_bound="lower") <= truth) & (truth <= ci.sel(ci_bound="upper")))
            print(f"Beta{law} mean {truth:.4f} bootstrap {method}: coverage {cov:.3f}")
        res = pass_hat_k(ds, 1)
        cov = np.mean((res.ci.sel(ci_bound="lower") <= truth) & (truth <= res.ci.sel(ci_bound="upper")))
        print(f"Beta{law} pass^1 default: coverage {cov:.3f}, bound in {np.mean(res.ci_flag.values != ''):.2f}")


def _truth(law, k, quantity):
    """E[p^k] (pass^k) or 1 - E[(1 - p)^k] (pass@k) under Beta(a, b) rates, from scipy."""
    from scipy.special import betaln

    a, b = law
    if quantity == "pass_hat_k":
        return float(stats.beta(a, b).moment(k))
    return float(1.0 - np.exp(betaln(a, b + k) - betaln(a, b)))


# ---------------------------------------------------------------------------
# task clusters: coverage of the cluster-robust interval and the few-clusters flag
# ---------------------------------------------------------------------------

CL_G, CL_SD, CL_MEAN, CL_K = (4, 6, 8, 12, 16, 24, 32, 48), (0.5, 1.0, 1.5), (0.1, 0.3, 0.5, 0.7, 0.9), (1, 2, 4, 8)
CL_TASK_SD = 0.5  # task effect within a cluster, beside the cluster effect (both on the logit scale)
CL_NEFF_BINS = (0, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, 8, 10, 15, np.inf)


def _cl_mu(mean, s):
    """The logit-scale centre whose tasks (logit ``mu + s Z``) pass at rate ``mean``: exact, by quadrature."""
    from scipy.optimize import brentq

    return brentq(lambda mu: _cl_truth(mu, s, 1) - mean, -20, 20, xtol=1e-13)


def _cl_truth(mu, s, k):
    """pass^k of a task drawn afresh: ``E[expit(mu + s Z)^k]``, Z standard normal (adaptive quadrature)."""
    from scipy.integrate import quad
    from scipy.special import expit

    return quad(lambda z: expit(mu + s * z) ** k * np.exp(-z * z / 2) / np.sqrt(2 * np.pi), -np.inf, np.inf,
                epsabs=1e-13)[0]


def _cl_sets(rng, G, sd, mu, k, reps):
    """``reps`` data sets as the rows of one count table: set ``i`` runs only its own tasks.

    Each set: ``G`` clusters of 1-5 tasks, task logit ``mu + u_g + v_t`` (``u_g ~ N(0, sd)``,
    ``v_t ~ N(0, CL_TASK_SD)``), ``k``-``2k`` runs per task. Returns the counts and each task's
    cluster code (unique across sets).
    """
    sizes = rng.integers(1, 6, (reps, G))
    T = int(sizes.sum())
    owner = np.repeat(np.arange(reps), sizes.sum(1))
    code = np.repeat(np.arange(reps * G), sizes.ravel())
    p = 1.0 / (1.0 + np.exp(-(mu + rng.normal(0, sd, reps * G)[code] + rng.normal(0, CL_TASK_SD, T))))
    runs = rng.integers(k, 2 * k + 1, T)
    n, c = np.zeros((reps, T)), np.zeros((reps, T))
    n[owner, np.arange(T)], c[owner, np.arange(T)] = runs, rng.binomial(runs, p)
    ds = xr.Dataset({"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), c)},
                    coords={"cluster": ("task", code.astype(str))})  # fmt: skip
    return ds, code


def _cl_rows(res, code, truth):
    """Per data set: clusters, clusters carrying successes (and failures), n_eff, flag, kind, covered."""
    y = res.per_task.values
    lo, hi = (res.ci.sel(ci_bound=b).values for b in ("lower", "upper"))
    out = []
    for i in range(y.shape[0]):
        ok = np.isfinite(y[i])
        _, g = np.unique(code[ok], return_inverse=True)
        S = np.bincount(g, weights=y[i][ok])
        C = np.bincount(g) - S
        with np.errstate(invalid="ignore", divide="ignore"):
            n_eff = min(np.nan_to_num(S.sum() ** 2 / (S**2).sum()), np.nan_to_num(C.sum() ** 2 / (C**2).sum()))
        out.append((S.size, int((S > 0).sum()), int((C > 0).sum()), n_eff, res.ci_flag.values[i],
                    res.ci_kind.values[i], bool(lo[i] <= truth <= hi[i]), hi[i] - lo[i]))  # fmt: skip
    return out


@contextlib.contextmanager
def no_cluster_bound():
    """The bound over clusters left NaN: only the t rows (the flag's domain) are scored, 10x faster."""
    import hierbench.freq._rates._passk_cluster as mod

    saved = mod._cluster_bound
    mod._cluster_bound = lambda y, codes, prob: (np.nan, np.nan)
    try:
        yield
    finally:
        mod._cluster_bound = saved


def clusters_grid(reps=200, seed=11, chunk=100) -> pd.DataFrame:
    """One row per simulated data set over the grid ``CL_G x CL_SD x CL_MEAN x CL_K`` (pass^k, 95%).

    The rows whose interval is the bound (``kind`` ``bounded-mean``) carry NaN ends (``no_cluster_bound``).
    """
    import warnings

    from hierbench.freq import pass_hat_k

    rng = np.random.default_rng(seed)
    rows = []
    for sd in CL_SD:
        s = float(np.hypot(sd, CL_TASK_SD))
        for mean in CL_MEAN:
            mu = _cl_mu(mean, s)
            for k in CL_K:
                truth = _cl_truth(mu, s, k)
                for G in CL_G:
                    for start in range(0, reps, chunk):
                        ds, code = _cl_sets(rng, G, sd, mu, k, min(chunk, reps - start))
                        with warnings.catch_warnings(), no_cluster_bound():
                            warnings.simplefilter("ignore")
                            res = pass_hat_k(ds, k)
                        rows += [(sd, mean, k, G, truth, *r) for r in _cl_rows(res, code, truth)]
    cols = ["sd", "mean", "k", "G", "truth", "G_used", "carry_succ", "carry_fail", "n_eff", "flag", "kind",
            "covered", "width"]  # fmt: skip
    return pd.DataFrame(rows, columns=cols)


def _cov(x) -> str:
    """Coverage with its Monte Carlo sd ``sqrt(p (1 - p) / N)`` and N."""
    p, n = x.mean(), len(x)
    return f"{p:.3f}±{np.sqrt(p * (1 - p) / n):.3f} ({n})" if n else "-"


def clusters_report(df: pd.DataFrame) -> None:
    """Coverage of the t-interval rows (the flag's domain) by G, clusters carrying successes, and n_eff."""
    from hierbench.freq._rates._logit_t import EVEN_CLUSTERS_FLAG

    t = df[df.kind == "t"].copy()
    t["carry"] = t[["carry_succ", "carry_fail"]].min(axis=1)
    t["carry_bin"] = pd.cut(t.carry, [0, 1, 2, 3, 4, 5, 6, 8, 12, np.inf], right=True)
    t["neff_bin"] = pd.cut(t.n_eff, CL_NEFF_BINS, right=False)
    pd.set_option("display.width", 250)
    print(f"{len(df)} data sets; t interval kept in {len(t)}, coverage {_cov(t.covered)}")
    for key in ("carry_bin", "neff_bin"):
        print(f"\ncoverage of the t rows by G (rows) and {key} (columns; carry = clusters with any success, "
              "or with any failure, the fewer):")  # fmt: skip
        print(t.pivot_table(index="G", columns=key, values="covered", aggfunc=_cov, observed=True).to_string())
        print(t.groupby(key, observed=True).covered.agg(_cov).to_string())
    cell = t.groupby(["mean", "k", "sd", "G"]).covered.agg(coverage="mean", size="size")
    print("\nthe 15 design cells of least coverage (t rows, at least 50):")
    print(cell[cell["size"] >= 50].sort_values("coverage").head(15).to_string())
    t["ratio_bin"] = pd.cut(t.n_eff / t.G_used, [0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.01], right=False)
    print("\ncoverage of the t rows by G (rows) and n_eff / G (columns):")
    print(t.pivot_table(index="G", columns="ratio_bin", values="covered", aggfunc=_cov, observed=True).to_string())
    old = (t.G_used > 1) & (t.n_eff < np.minimum(10.0, t.G_used / 2.0))  # the flag before calibration
    even = (t.G_used > 1) & (t.n_eff >= 0.75 * t.G_used)  # the flag until 2026-12-07
    for name, flagged in (("old rule n_eff < min(10, G / 2)", old.values),
                          ("rule n_eff >= 0.75 G (until 2026-12-07)", even.values),
                          ("the package's flag", (t.flag == EVEN_CLUSTERS_FLAG).values)):  # fmt: skip
        print(f"{name}: flags {flagged.mean():.3f} of the t rows; coverage flagged {_cov(t.covered[flagged])}, "
              f"not flagged {_cov(t.covered[~flagged])}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--out", default=None)
    ap.add_argument("--quantity", default="pass_hat_k", choices=["pass_hat_k", "pass_at_k"])
    ap.add_argument("--bootstrap", action="store_true", help="the bootstrap's coverage at a sparse mean instead")
    ap.add_argument("--clusters", action="store_true", help="clustered tasks: the few-clusters flag's calibration")
    a = ap.parse_args()
    if a.bootstrap:
        return bootstrap_sparse()
    if a.clusters:
        df = clusters_grid(reps=a.reps, seed=a.seed)
        if a.out:
            df.to_csv(a.out, index=False)
        return clusters_report(df)
    rng = np.random.default_rng(a.seed)
    rows = []
    for runs in RUNS:
        for law in LAWS:
            for n in TASKS:
                cnt = design(rng, *law, n, runs, a.reps)
                for k in KS:
                    truth = _truth(law, k, a.quantity)
                    with t_only():
                        old = score(cnt, k, truth, a.quantity)
                    new = score(cnt, k, truth, a.quantity)
                    rows.append((runs, *law, n, k, truth, *old[:2], *new))
    cols = ["runs", "a", "b", "tasks", "k", "truth", "cov_t_only", "width_t_only", "cov_default", "width_default", "bound_share"]
    df = pd.DataFrame(rows, columns=cols)
    if a.out:
        df.to_csv(a.out, index=False)
    pd.set_option("display.width", 200)
    print(df[(df.cov_t_only < 0.93) | (df.cov_default < 0.93)].round(3).to_string(index=False))
    for name, c in (("t only", "cov_t_only"), ("default", "cov_default")):
        print(f"{name:8s} min {df[c].min():.3f}  below 0.93 in {int((df[c] < 0.93).sum())} of {len(df)}"
              f"  below 0.90 in {int((df[c] < 0.90).sum())}")  # fmt: skip
    print(f"bound share {df.bound_share.mean():.3f}; median width ratio "
          f"{(df.width_default / df.width_t_only).median():.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
