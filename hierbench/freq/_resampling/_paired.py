"""Paired comparisons of agents with the task as the unit.

For agents A and B on the same tasks, ``d_t = mean_r Y_Atr - mean_r Y_Btr``.
Every test here works on ``d_1..d_T`` (or on cluster sums of them when tasks
are clustered): task difficulty cancels, and runs of one task are never
treated as independent evidence. Pooling all ``T x R`` run pairs instead
inflates the type-I error whenever agents interact with tasks.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import xarray as xr
from scipy import stats

from ..._base import (
    DEFAULT_PROB,
    HierbenchError,
    Result,
    UndefinedWarning,
    as_rng,
    check_choice,
    check_prob,
    cluster_codes,
    interval_label,
)
from ..._numerics import cluster_robust_se as _cluster_robust_se
from ._bootstrap import bootstrap_ci

__all__ = [
    "PairedTestResult",
    "PairwiseComparisonResult",
    "UndefinedTestWarning",
    "compare_agents",
    "holm",
    "paired_test",
]

_EXACT_MAX = 14


class UndefinedTestWarning(UndefinedWarning):
    """A test statistic or effect size is undefined on these data (reported as NaN)."""


# --------------------------------------------------------------------------- kernels


def _sign_flip(
    units: np.ndarray, gen: np.random.Generator, n_permutations: int
) -> tuple[float, float, bool, int]:
    """Two-sided sign-flip p-value of ``sum(units)``; returns (p, mc_se, exact, n_nonzero)."""
    u = units[units != 0]
    n = u.size
    if n == 0:
        return 1.0, 0.0, True, 0
    obs = abs(u.sum())
    tol = 1e-9 * max(1.0, float(np.abs(u).sum()))
    if n <= _EXACT_MAX:
        bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
        sums = np.abs((1 - 2 * bits) @ u)
        return float(np.mean(sums >= obs - tol)), 0.0, True, n
    hits = 0
    chunk = max(1, 2_000_000 // n)
    done = 0
    while done < n_permutations:
        b = min(chunk, n_permutations - done)
        signs = gen.integers(0, 2, size=(b, n), dtype=np.int8) * 2 - 1
        hits += int(np.count_nonzero(np.abs(signs @ u) >= obs - tol))
        done += b
    p = (1 + hits) / (1 + n_permutations)
    return float(p), float(np.sqrt(p * (1 - p) / n_permutations)), False, n


def _mcnemar(ma: np.ndarray, mb: np.ndarray) -> tuple[float, int, int, int]:
    """Exact McNemar on per-task mean scores thresholded at 1/2; returns (p, n_a_only, n_b_only, n_ties)."""
    tie = (ma == 0.5) | (mb == 0.5)
    sa, sb = ma[~tie] > 0.5, mb[~tie] > 0.5
    n10 = int(np.sum(sa & ~sb))
    n01 = int(np.sum(~sa & sb))
    if n10 + n01 == 0:
        return np.nan, n10, n01, int(tie.sum())
    return float(stats.binomtest(n10, n10 + n01, 0.5).pvalue), n10, n01, int(tie.sum())


def _task_stats(d: np.ndarray, codes: np.ndarray | None = None) -> dict[str, float]:
    """Mean, SE, t-test p, d_z and P(superiority) of per-task differences.

    With cluster ``codes`` the SE is cluster-robust (residuals summed within
    clusters, small-sample factor G / (G - 1)) and the t-test has G - 1 df.
    """
    T = d.size
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if T > 1 else np.nan
    if codes is None:
        se = sd / np.sqrt(T) if T > 1 else np.nan
        df = T - 1
    else:
        se_arr, g = _cluster_robust_se(d, np.unique(codes, return_inverse=True)[1])
        G = int(g)
        se = float(se_arr) if G > 1 else np.nan
        df = G - 1
    if df >= 1 and np.isfinite(se) and se > 0:
        p_t = float(2 * stats.t.sf(abs(mean / se), df))
    else:
        p_t = np.nan
    dz = mean / sd if T > 1 and sd > 0 else np.nan
    ps = float(np.mean(d > 0) + 0.5 * np.mean(d == 0))
    return {"mean_diff": mean, "se": se, "p_t": p_t, "cohens_dz": dz, "prob_superiority": ps}


def _bootstrap_p(dist: np.ndarray) -> float:
    """Two-sided p-value by inverting the percentile interval: 2 min(P*(d <= 0), P*(d >= 0))."""
    dist = dist[np.isfinite(dist)]
    B = dist.size
    lo = (1 + np.count_nonzero(dist <= 0)) / (B + 1)
    hi = (1 + np.count_nonzero(dist >= 0)) / (B + 1)
    return float(min(1.0, 2 * min(lo, hi)))


def holm(p: np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values (strong family-wise error control); NaN stays NaN.

    Parameters
    ----------
    p : array_like
        Raw p-values (any shape); NaN entries are not counted as tests.

    Returns
    -------
    numpy.ndarray
        Adjusted p-values, same shape.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03]).round(3).tolist()
    [0.03, 0.06, 0.06]
    """
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    flat = p.ravel()
    ok = np.flatnonzero(np.isfinite(flat))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(flat[ok], kind="stable")]
    adj = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * flat[order]))
    res = out.ravel()
    res[order] = adj
    return res.reshape(p.shape)


def _bh(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = stats.false_discovery_control(p[ok], method="bh")
    return out


# --------------------------------------------------------------------------- inputs


def _per_task(x: xr.DataArray, name: str, dim: str, run_dim: str) -> xr.DataArray:
    if not isinstance(x, xr.DataArray):
        raise TypeError(f"`{name}` must be an xarray.DataArray of scores; got {type(x).__name__}")
    if dim not in x.dims:
        raise ValueError(f"`dim` must be a dimension of `{name}` {x.dims}; got {dim!r}")
    extra = [d for d in x.dims if d not in (dim, run_dim)]
    if extra:
        raise ValueError(
            f"`{name}` must have dims ({dim!r}[, {run_dim!r}]); found extra dims {extra} "
            "(select one agent first)"
        )
    if np.isinf(x.values).any():
        raise ValueError(f"`{name}` must be finite or NaN (not run); found infinite values")
    if run_dim in x.dims:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            x = x.mean(run_dim, skipna=True)
    return x.astype(float)


def _cluster_codes(x: xr.DataArray, cluster: str | None, dim: str) -> np.ndarray | None:
    """Task cluster codes through the one routine (a task without a label is its own cluster)."""
    cc = cluster_codes(x, cluster, dim=dim)
    return None if cc is None else cc[0]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, repr=False)
class PairedTestResult(Result):
    """Result of :func:`paired_test` (every field a 0-d DataArray unless stated).

    Attributes
    ----------
    estimate : xarray.DataArray
        The same as ``mean_diff`` (the house name of the point estimate).
    mean_diff : xarray.DataArray
        Mean over tasks of ``d_t`` (A minus B).
    se : xarray.DataArray
        ``sd(d) / sqrt(T)``; cluster-robust with clusters.
    ci : xarray.DataArray
        Paired task (cluster) bootstrap percentile interval, dim ``ci_bound``.
    p_permutation, p_permutation_mcse : xarray.DataArray
        Sign-flip p-value and its Monte Carlo standard error (0 when exact).
    p_bootstrap : xarray.DataArray
        Two-sided bootstrap p-value (inverting the percentile interval).
    p_t : xarray.DataArray
        Paired t-test on the per-task differences (T - 1 df); with clusters,
        the cluster-robust t with G - 1 df (G clusters).
    p_mcnemar : xarray.DataArray
        Exact McNemar on per-task majority outcomes.
    prob_superiority, cohens_dz : xarray.DataArray
        ``P(d > 0) + P(d = 0) / 2`` and ``mean(d) / sd(d)``.
    distribution : xarray.DataArray
        Bootstrap distribution of the mean difference (dim ``resample``).
    counts : dict
        ``n_tasks`` used, ``n_excluded`` (a task one agent never ran),
        ``n_nonzero`` permutation units, ``n_a_only`` / ``n_b_only``
        (McNemar discordant tasks), ``n_mcnemar_ties`` (a per-task mean of
        exactly 1/2: no majority, left out of McNemar), ``exact``.
    """

    mean_diff: xr.DataArray
    se: xr.DataArray
    ci: xr.DataArray
    p_permutation: xr.DataArray
    p_permutation_mcse: xr.DataArray
    p_bootstrap: xr.DataArray
    p_t: xr.DataArray
    p_mcnemar: xr.DataArray
    prob_superiority: xr.DataArray
    cohens_dz: xr.DataArray
    distribution: xr.DataArray
    counts: dict = field(default_factory=dict)

    _dataset_exclude = ("distribution",)

    @property
    def estimate(self) -> xr.DataArray:
        """The mean paired difference (``mean_diff``), under the house name."""
        return self.mean_diff

    def to_dataset(self) -> xr.Dataset:
        """All fields in one Dataset (counts as variables, the bootstrap distribution included)."""
        names = [
            "mean_diff",
            "se",
            "ci",
            "p_permutation",
            "p_permutation_mcse",
            "p_bootstrap",
            "p_t",
            "p_mcnemar",
            "prob_superiority",
            "cohens_dz",
            "distribution",
        ]
        ds = xr.Dataset({n: getattr(self, n) for n in names})
        ds["estimate"] = self.mean_diff
        for k, v in self.counts.items():
            ds[k] = v
        ds.attrs = {k: self.ci.attrs[k] for k in ("ci_prob", "ci_kind", "ci_detail") if k in self.ci.attrs}
        return ds

    def to_frame(self):
        """One row: the difference, its interval, the p-values, effect sizes and counts."""
        df = super().to_frame()
        for k, v in self.counts.items():
            df[k] = v
        return df


@dataclass(frozen=True, repr=False)
class PairwiseComparisonResult(Result):
    """Result of :func:`compare_agents`: every pair of agents, as a matrix and as a table.

    ``estimate`` is the mean paired difference over ``(agent, opponent)``
    (row minus column, NaN on the diagonal) and ``ci`` its interval. The
    full matrix Dataset is ``table`` (also :meth:`to_dataset`); attribute
    and item access fall through to it, so ``res.p_holm``, ``res["ci"]``
    and ``res.sel(agent=..., opponent=...)`` work as on a Dataset.
    :meth:`to_frame` is the tidy per-pair table (one row per unordered pair).
    """

    table: xr.Dataset

    @property
    def estimate(self) -> xr.DataArray:
        return self.table["mean_diff"]

    @property
    def ci(self) -> xr.DataArray:
        return self.table["ci"]

    def __getattr__(self, name: str):
        if name.startswith("_") or name == "table":
            raise AttributeError(name)
        try:
            return getattr(self.table, name)
        except AttributeError:
            raise AttributeError(
                f"{type(self).__name__} has no attribute {name!r}; variables {list(self.table.data_vars)}"
            ) from None

    def __getitem__(self, key):
        return self.table[key]

    def __contains__(self, key) -> bool:
        return key in self.table

    def to_dataset(self) -> xr.Dataset:
        """The agent x opponent matrices (``estimate`` added beside ``mean_diff``)."""
        ds = self.table.copy()
        ds["estimate"] = ds["mean_diff"]
        return ds

    def to_frame(self):
        """Tidy table, one row per unordered pair ``agent - opponent`` (the upper triangle)."""
        import pandas as pd

        agents = [str(a) for a in self.table["agent"].values]
        rows = []
        scalar = [v for v in self.table.data_vars if self.table[v].dims == ("agent", "opponent")]
        for i, a in enumerate(agents):
            for j in range(i + 1, len(agents)):
                b = agents[j]
                row = {"pair": f"{a} - {b}", "agent": a, "opponent": b}
                row["estimate"] = float(self.table["mean_diff"].values[i, j])
                row["lower"], row["upper"] = (float(x) for x in self.table["ci"].values[i, j])
                for v in scalar:
                    row[v] = float(self.table[v].values[i, j])
                rows.append(row)
        df = pd.DataFrame(rows).set_index("pair")
        df["ci_prob"] = float(self.ci.attrs["ci_prob"])
        df["ci_kind"] = self.ci.attrs["ci_kind"]
        return df

    def _repr_lines(self) -> list[str]:
        df = self.to_frame()
        test = self.table.attrs.get("test", "?")
        lines = [
            f"{type(self).__name__}: {len(df)} pairs, mean paired difference with "
            f"{interval_label(self.ci)} interval; p_holm of the {test} test"
        ]
        show = list(range(len(df))) if len(df) <= 8 else [*range(5), *range(len(df) - 2, len(df))]
        for k in show:
            if len(df) > 8 and k == len(df) - 2:
                lines.append(f"  ... ({len(df) - 7} more)")
            r = df.iloc[k]
            lines.append(
                f"  {df.index[k]}: {r['estimate']:.4g} [{r['lower']:.4g}, {r['upper']:.4g}]  "
                f"p_holm={r['p_holm']:.3g}"
            )
        return lines


def _warn_undefined(out: dict[str, float], label: str) -> None:
    bad = [k for k in ("p_t", "cohens_dz", "p_mcnemar") if not np.isfinite(out[k])]
    if bad:
        warnings.warn(
            f"{label}: {', '.join(bad)} undefined (no spread in the per-task differences, "
            "fewer than 2 tasks, or no discordant tasks for McNemar); reported as NaN",
            UndefinedTestWarning,
            stacklevel=3,
        )


def _paired_inputs(
    a: xr.DataArray, b: xr.DataArray, dim: str, run_dim: str, cluster: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Per-task mean scores of ``a`` and ``b`` on the same tasks, and the task cluster codes."""
    ma = _per_task(a, "a", dim, run_dim)
    mb = _per_task(b, "b", dim, run_dim)
    try:
        ma, mb = xr.align(ma, mb, join="exact")
    except ValueError as err:
        raise ValueError(
            f"`a` and `b` must have the same {dim!r} labels in the same order"
        ) from err
    codes = _cluster_codes(ma, cluster, dim)
    if codes is None:
        codes = _cluster_codes(mb, cluster, dim)
    return ma.values, mb.values, codes


def _paired_bootstrap(
    a: xr.DataArray, b: xr.DataArray, *, dim: str, run_dim: str, cluster: str | None,
    prob: float, n_resamples: int, method: str, gen: np.random.Generator,
) -> tuple[xr.DataArray, xr.DataArray]:
    """The paired task (cluster) bootstrap interval of ``a - b`` and its distribution."""
    pair = xr.concat(
        [a.expand_dims(agent=["a"]), b.expand_dims(agent=["b"])],
        dim="agent",
        join="exact",
        coords="minimal",  # task coords (e.g. cluster) are shared; take them once
        compat="override",
    )
    if run_dim not in pair.dims:
        pair = pair.expand_dims({run_dim: [0]}, axis=-1)
    boot = bootstrap_ci(
        pair,
        pairs=[("a", "b")],
        n_resamples=n_resamples,
        prob=prob,
        method=method,
        cluster=cluster,
        dim=run_dim,
        task_dim=dim,
        rng=gen,
    )
    return boot.ci.isel(pair=0, drop=True), boot.distribution.isel(pair=0, drop=True)


def paired_test(
    a: xr.DataArray,
    b: xr.DataArray,
    *,
    dim: str = "task",
    run_dim: str = "run",
    cluster: str | None = "auto",
    prob: float = DEFAULT_PROB,
    n_resamples: int = 9999,
    n_permutations: int = 9999,
    method: Literal["percentile", "bca"] = "percentile",
    rng: None | int | np.random.Generator = None,
) -> PairedTestResult:
    """Compare two agents on the same tasks, the task (or cluster) as the unit.

    Parameters
    ----------
    a, b : xarray.DataArray
        Scores of agent A and agent B with dims ``(dim[, run_dim])``, same
        task labels; runs are averaged within a task first (NaN = not run).
        A task that either agent never ran is excluded and counted.
    dim, run_dim : str
        Task and run dims.
    cluster : str, None or "auto"
        Task coord of clusters (repository, task family). ``"auto"`` uses a
        ``cluster`` coord when present. With clusters, the sign flips act on
        cluster sums of differences, the bootstrap draws whole clusters and
        the t-test uses a cluster-robust SE with G - 1 df.
    prob : float
        Probability of the bootstrap interval.
    n_resamples : int
        Bootstrap resamples.
    n_permutations : int
        Random sign flips when there are more than 14 non-zero units (the
        test is exact, by enumeration, up to 14).
    method : {"percentile", "bca"}
        Bootstrap interval (passed to :func:`bootstrap_ci`); the bootstrap
        p-value always inverts the percentile interval.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    PairedTestResult

    Notes
    -----
    McNemar's test uses each task's majority outcome: per-task mean score
    above 1/2 is a success, below 1/2 a failure; a mean of exactly 1/2 has no
    majority and the task is left out of McNemar (counted in
    ``counts["n_mcnemar_ties"]``). With one binary run per task this is the
    usual McNemar test.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=2, n_tasks=50, n_runs=3, rng=0)
    >>> res = paired_test(ds.score.sel(agent="agent_00"), ds.score.sel(agent="agent_01"),
    ...                   n_resamples=999, n_permutations=999, rng=1)
    >>> res.ci.dims
    ('ci_bound',)
    >>> 0 < float(res.p_permutation) <= 1
    True
    """
    prob = check_prob(prob)
    for name, v in (("n_resamples", n_resamples), ("n_permutations", n_permutations)):
        if int(v) != v or v < 1:
            raise ValueError(f"`{name}` must be a positive integer; got {v!r}")
    gen = as_rng(rng)
    va, vb, codes = _paired_inputs(a, b, dim, run_dim, cluster)
    both = np.isfinite(va) & np.isfinite(vb)
    if both.sum() < 2:
        raise ValueError(
            f"`a` and `b` must share at least 2 tasks that both ran; got {int(both.sum())}"
        )
    d = va[both] - vb[both]
    units = d if codes is None else np.bincount(codes[both], weights=d)
    out = _task_stats(d, None if codes is None else codes[both])
    out["p_mcnemar"], n10, n01, n_tie = _mcnemar(va[both], vb[both])
    p_perm, mcse, exact, n_nz = _sign_flip(units, gen, int(n_permutations))
    _warn_undefined(out, "paired_test")
    ci, dist = _paired_bootstrap(
        a, b, dim=dim, run_dim=run_dim, cluster=cluster, prob=prob,
        n_resamples=int(n_resamples), method=method, gen=gen,
    )
    scalar = {k: xr.DataArray(v) for k, v in out.items()}
    return PairedTestResult(
        mean_diff=scalar["mean_diff"],
        se=scalar["se"],
        ci=ci,
        p_permutation=xr.DataArray(p_perm),
        p_permutation_mcse=xr.DataArray(mcse),
        p_bootstrap=xr.DataArray(_bootstrap_p(dist.values)),
        p_t=scalar["p_t"],
        p_mcnemar=scalar["p_mcnemar"],
        prob_superiority=scalar["prob_superiority"],
        cohens_dz=scalar["cohens_dz"],
        distribution=dist,
        counts={
            "n_tasks": int(both.sum()),
            "n_excluded": int((~both).sum()),
            "n_nonzero": n_nz,
            "exact": exact,
            "n_a_only": n10,
            "n_b_only": n01,
            "n_mcnemar_ties": n_tie,
        },
    )


_TESTS = ("permutation", "bootstrap", "t", "mcnemar")


_PAIR_KEYS = (
    "mean_diff",
    "p_permutation",
    "p_bootstrap",
    "p_t",
    "p_mcnemar",
    "prob_superiority",
    "cohens_dz",
    "n_tasks",
)


def _agent_scores(data: xr.Dataset | xr.DataArray, agent_dim: str) -> tuple[xr.DataArray, list[str]]:
    score = data["score"] if isinstance(data, xr.Dataset) else data
    if not isinstance(score, xr.DataArray):
        raise TypeError(f"`data` must be an xarray Dataset or DataArray; got {type(data).__name__}")
    if agent_dim not in score.dims:
        raise ValueError(
            f"`agent_dim` must be a dimension of the scores {score.dims}; got {agent_dim!r}"
        )
    agents = [str(x) for x in score[agent_dim].values]
    if len(agents) < 2:
        raise HierbenchError(f"compare_agents needs >= 2 agents; got {len(agents)}")
    return score, agents


def _agent_task_means(score: xr.DataArray, agent_dim: str, dim: str, run_dim: str) -> np.ndarray:
    """Per (agent, task) mean score over the runs that happened, ``(M, T)``."""
    if dim not in score.dims:
        raise ValueError(f"`dim` must be a dimension of the scores {score.dims}; got {dim!r}")
    extra = [d for d in score.dims if d not in (agent_dim, dim, run_dim)]
    if extra:
        raise ValueError(
            f"the scores must have dims ({agent_dim}, {dim}[, {run_dim}]); found extra dims {extra}"
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        per = score.mean(run_dim, skipna=True) if run_dim in score.dims else score
    return np.asarray(per.transpose(agent_dim, dim).values, dtype=float)


def _pair_matrices(
    means: np.ndarray, pairs: list, agents: list[str], codes: np.ndarray | None, boot,
    gen: np.random.Generator, n_permutations: int,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Every pair's statistics as (M, M) matrices (row minus column) and the (M, M, 2) intervals."""
    M = len(agents)
    mats = {k: np.full((M, M), np.nan) for k in _PAIR_KEYS}
    ci = np.full((M, M, 2), np.nan)
    undefined = []
    for k, (i, j) in enumerate(pairs):
        both = np.isfinite(means[i]) & np.isfinite(means[j])
        if both.sum() < 2:
            undefined.append(f"{agents[i]} vs {agents[j]}")
            continue
        d = means[i, both] - means[j, both]
        units = d if codes is None else np.bincount(codes[both], weights=d)
        st = _task_stats(d, None if codes is None else codes[both])
        st["p_mcnemar"] = _mcnemar(means[i, both], means[j, both])[0]
        st["p_permutation"] = _sign_flip(units, gen, n_permutations)[0]
        st["p_bootstrap"] = _bootstrap_p(boot.distribution.values[:, k])
        st["n_tasks"] = float(both.sum())
        for key in _PAIR_KEYS:
            v = st[key]
            sign = -1.0 if key in ("mean_diff", "cohens_dz") else 1.0
            mats[key][i, j] = v
            mats[key][j, i] = sign * v if key != "prob_superiority" else 1.0 - v
        lo, hi = boot.ci.values[k]
        ci[i, j] = (lo, hi)
        ci[j, i] = (-hi, -lo)
    if undefined:
        warnings.warn(
            f"pairs with fewer than 2 shared tasks are NaN: {undefined}",
            UndefinedTestWarning,
            stacklevel=3,
        )
    return mats, ci


def _pairwise_result(
    mats: dict[str, np.ndarray], ci: np.ndarray, agents: list[str], ci_attrs: dict, *,
    test: str, prob: float, n_resamples: int,
) -> PairwiseComparisonResult:
    """The matrices with Holm and BH adjustment of ``test``'s p-values, as the result."""
    M = len(agents)
    iu = np.triu_indices(M, 1)
    p_raw = mats["p_" + test][iu]
    p_h, p_b = np.full((M, M), np.nan), np.full((M, M), np.nan)
    p_h[iu] = holm(p_raw)
    p_b[iu] = _bh(p_raw)
    p_h.T[iu] = p_h[iu]
    p_b.T[iu] = p_b[iu]
    coords = {"agent": agents, "opponent": agents, "ci_bound": ["lower", "upper"]}
    dims = ("agent", "opponent")
    ds = xr.Dataset({k: (dims, mats[k]) for k in _PAIR_KEYS}, coords=coords)
    ds["ci"] = ((*dims, "ci_bound"), ci)
    ds["ci"].attrs = dict(ci_attrs)
    ds["p_value"] = (dims, mats["p_" + test])
    ds["p_holm"] = (dims, p_h)
    ds["p_bh"] = (dims, p_b)
    ds.attrs = {
        "test": test,
        "n_pairs": len(iu[0]),
        "ci_prob": prob,
        "n_resamples": n_resamples,
    }
    return PairwiseComparisonResult(table=ds)


def compare_agents(
    data: xr.Dataset | xr.DataArray,
    *,
    test: str = "permutation",
    dim: str = "task",
    run_dim: str = "run",
    agent_dim: str = "agent",
    cluster: str | None = "auto",
    prob: float = DEFAULT_PROB,
    n_resamples: int = 9999,
    n_permutations: int = 9999,
    method: Literal["percentile", "bca"] = "percentile",
    rng: None | int | np.random.Generator = None,
) -> PairwiseComparisonResult:
    """Every pair of agents compared on shared tasks, with Holm and BH adjustment.

    Parameters
    ----------
    data : xarray.Dataset or xarray.DataArray
        Eval dataset (``score(agent, task, run)``) or a score DataArray.
    test : {"permutation", "bootstrap", "t", "mcnemar"}
        The test whose p-values are adjusted into ``p_holm`` and ``p_bh``.
    dim, run_dim, agent_dim : str
        Task, run and agent dims.
    cluster, prob, n_resamples, n_permutations, method, rng
        As in :func:`paired_test`. One task (cluster) resample is shared by
        every pair.

    Returns
    -------
    PairwiseComparisonResult
        ``estimate`` / ``ci`` (the mean difference and its interval), a
        tidy per-pair ``to_frame()``, and the matrices (``to_dataset()``,
        or ``res.p_holm``, ``res.sel(...)`` directly) over ``(agent,
        opponent)`` (the row agent minus the column agent):
        ``mean_diff``, ``ci`` (trailing ``ci_bound``), ``p_permutation``,
        ``p_bootstrap``, ``p_t``, ``p_mcnemar``, ``p_value`` (of ``test``),
        ``p_holm`` (family-wise), ``p_bh`` (false discovery rate, Benjamini-
        Hochberg), ``prob_superiority``, ``cohens_dz``, ``n_tasks``. The
        family is the ``M (M - 1) / 2`` unordered pairs; the diagonal is NaN.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=3, n_tasks=40, n_runs=2, rng=0)
    >>> res = compare_agents(ds, n_resamples=499, n_permutations=499, rng=1)
    >>> res.p_holm.dims
    ('agent', 'opponent')
    >>> res.to_frame().index.tolist()
    ['agent_00 - agent_01', 'agent_00 - agent_02', 'agent_01 - agent_02']
    """
    check_choice(test, "test", _TESTS)
    prob = check_prob(prob)
    gen = as_rng(rng)
    score, agents = _agent_scores(data, agent_dim)
    pairs = list(itertools.combinations(range(len(agents)), 2))
    boot = bootstrap_ci(
        score,
        pairs=[(agents[i], agents[j]) for i, j in pairs],
        n_resamples=int(n_resamples),
        prob=prob,
        method=method,
        cluster=cluster,
        dim=run_dim,
        task_dim=dim,
        agent_dim=agent_dim,
        rng=gen,
    )
    codes = _cluster_codes(score, cluster, dim)
    means = _agent_task_means(score, agent_dim, dim, run_dim)
    mats, ci = _pair_matrices(means, pairs, agents, codes, boot, gen, int(n_permutations))
    return _pairwise_result(mats, ci, agents, boot.ci.attrs, test=test, prob=prob, n_resamples=int(n_resamples))
