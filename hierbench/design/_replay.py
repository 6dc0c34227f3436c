"""Replay budgeted designs on complete banks, and the banks themselves."""

from __future__ import annotations

from collections.abc import Hashable
from collections.abc import Sequence
from typing import Any

import numpy as np
import xarray as xr

from .._base import DEFAULT_PROB
from .._base import as_rng
from .._base import check_prob
from .._base import make_interval
from .._docs import fill_doc
from .._parallel import map_seeded
from . import _kernels as K
from ._bayes import _posterior_kernel
from ._plan import joint_bounds
from ._plan import uniform_bounds

__all__ = ["DESIGNS", "bank_from_eval", "replay", "simulate_stratified_bank"]

DESIGNS = ("uniform", "joint", "joint_split", "uniform_bayes", "joint_bayes")
_TOL = 1e-12  # float tolerance when checking theta against an endpoint


def _check_bank(bank: xr.DataArray) -> np.ndarray:
    if not isinstance(bank, xr.DataArray) or set(bank.dims) != {"task", "run"}:
        raise ValueError("`bank` must be an xarray.DataArray with exactly the dims 'task' and 'run'")
    y = bank.transpose("task", "run").values.astype(float)
    if np.isnan(y).any():
        raise ValueError(f"`bank` must be complete (no NaN); got {int(np.isnan(y).sum())} NaN slot(s)")
    if not np.isin(y, (0.0, 1.0)).all():
        bad = np.unique(y[~np.isin(y, (0.0, 1.0))])[:5]
        raise ValueError(f"`bank` must be binary (0 or 1); got values {bad.tolist()}")
    return y.astype(np.int8)


def _bank_stats(y: np.ndarray) -> dict[str, float]:
    M, L = y.shape
    h = y.sum(1)
    d = 2 * h * (L - h) / (L * (L - 1)) if L > 1 else np.zeros(M)
    return {
        "theta": float(y.mean()),
        "pure_fraction": float(np.mean((h == 0) | (h == L))),
        "mean_pair_disagreement": float(d.mean()),
    }


def _simulate_uniform(y, m, R, gen, per_task):
    M, L = y.shape
    N = M * L
    H = int(y.sum())
    if not per_task:
        s = gen.hypergeometric(H, N - H, m, size=R) if 0 < m < N else np.full(R, H if m == N else 0)
        return s, None
    keys = gen.random((R, N))
    if m < N:
        thr = np.partition(keys, m - 1, axis=1)[:, m - 1 : m] if m > 0 else np.full((R, 1), -1.0)
        mask = keys <= thr
    else:
        mask = np.ones((R, N), bool)
    mask = mask.reshape(R, M, L)
    n = mask.sum(2)
    k = (mask & (y[None] == 1)).sum(2)
    return k.sum(1), (n, k)


def _simulate_joint(y, t, R, gen):
    M, L = y.shape
    first = gen.integers(0, L, size=(R, M))
    if 0 < t < M:
        keys = gen.random((R, M))
        thr = np.partition(keys, t - 1, axis=1)[:, t - 1 : t]
        aud = keys <= thr
    else:
        aud = np.full((R, M), t == M)
    second = (first + 1 + gen.integers(0, max(L - 1, 1), size=(R, M))) % L
    rows = np.arange(M)[None, :]
    y1 = y[rows, first]
    y2 = np.where(aud, y[rows, second], 0)
    tot = y1 + y2
    n = 1 + aud
    est = (tot / n).mean(1)
    X = (aud & (y1 != y[rows, second])).sum(1)
    P = tot.sum(1)
    Z = n.sum(1) - P
    return est, X, P, Z, (n, tot), int(n.sum(1).max())


def _type_counts(n: np.ndarray, k: np.ndarray, L: int) -> np.ndarray:
    code = n * (n + 1) // 2 + k  # index of (n, k) in [(a, b) for a in 0..L for b in 0..a]
    n_types = (L + 1) * (L + 2) // 2
    R = n.shape[0]
    return np.bincount((np.arange(R)[:, None] * n_types + code).ravel(), minlength=R * n_types).reshape(
        R, n_types
    )


@fill_doc
def replay(
    bank: xr.DataArray,
    designs: Sequence[str] = ("uniform", "joint"),
    budgets: Sequence[int] = (),
    n_rep: int = 1000,
    rng: None | int | np.random.Generator = None,
    *,
    prob: float = DEFAULT_PROB,
    progress: bool | None = None,
    executor: Any = None,
) -> xr.Dataset:
    """Run budgeted designs many times on a complete bank and summarise against its known mean.

    Each design is run ``n_rep`` times at every budget, vectorised over the
    randomisations; the methods of one design (``"joint"``, ``"joint_split"``,
    ``"joint_bayes"``; ``"uniform"``, ``"uniform_bayes"``) see the same
    randomisations (paired), the two designs independent ones.

    Parameters
    ----------
    bank : xarray.DataArray
        Complete 0/1 matrix with dims ``task`` (``M``) and ``run`` (``L``).
    designs : sequence of str
        Any of ``"uniform"`` (design U, exact hypergeometric interval),
        ``"joint"`` (design J, mixture certificate), ``"joint_split"``
        (design J, split Bernstein certificate), ``"uniform_bayes"`` and
        ``"joint_bayes"`` (beta-binomial posterior on that design's labels).
    budgets : sequence of int
        Label budgets ``B``; design J needs ``M <= B <= 2 M``.
    n_rep : int
        Randomisations per design and budget.
    %(rng)s
    %(prob)s
    progress : bool or None
        A text progress bar (one step per budget) on standard error: ``None``
        shows it only in a terminal or notebook and only after half a second.
    executor : concurrent.futures.Executor, optional
        Runs the budgets in parallel (e.g. a process pool). Each budget has
        its own random stream spawned from ``rng``, so the replay is
        bit-identical whatever runs it.

    Returns
    -------
    xarray.Dataset
        Over ``(design, budget)``: ``mean_width``, ``width_se``, ``bias``,
        ``mse``, ``coverage``, ``coverage_ci`` (Wilson at the default level
        ``DEFAULT_PROB``, whatever ``prob``; dim ``ci_bound``),
        ``labels_spent`` (mean), ``max_labels``; ``n_audit(budget)``; attrs
        ``theta``, ``pure_fraction``, ``mean_pair_disagreement``, sizes.

    Examples
    --------
    >>> bank = simulate_stratified_bank(100, 5, rng=0)
    >>> out = replay(bank, ["uniform", "joint"], [125, 150], n_rep=200, rng=1)
    >>> out.mean_width.dims
    ('design', 'budget')
    """
    y = _check_bank(bank)
    M, L = y.shape
    designs, budgets = _check_replay(designs, budgets, M, L)
    if int(n_rep) != n_rep or n_rep < 1:
        raise ValueError(f"`n_rep` must be a positive integer; got {n_rep!r}")
    prob = check_prob(prob)
    stats = _bank_stats(y)
    R = int(n_rep)
    rows = map_seeded(_replay_budget, budgets, rng=rng, executor=executor, progress=progress, desc="replay budgets",
                      kwargs={"y": y, "designs": designs, "R": R, "prob": prob, "theta": stats["theta"]})
    return _replay_dataset(rows, designs, budgets, R, {**stats, "n_tasks": M, "n_runs": L, "n_rep": R, "prob": prob})


def _check_replay(designs: Sequence[str], budgets: Sequence[int], M: int, L: int) -> tuple[list[str], list[int]]:
    designs = list(designs)
    bad = [d for d in designs if d not in DESIGNS]
    if not designs or bad:
        raise ValueError(f"`designs` must be a non-empty list drawn from {DESIGNS}; got unknown {bad}")
    if len(set(designs)) != len(designs):
        raise ValueError(f"`designs` must not repeat a design; got {designs}")
    budgets = [int(b) for b in budgets]
    if not budgets or any(b < 1 for b in budgets):
        raise ValueError(f"`budgets` must be a non-empty list of positive label counts; got {budgets}")
    if any(d.startswith("joint") for d in designs):
        off = [b for b in budgets if not M <= b <= 2 * M]
        if off:
            raise ValueError(
                f"`budgets` for design J must satisfy n_tasks <= budget <= 2 * n_tasks "
                f"({M} <= B <= {2 * M}); got {off}"
            )
        if L < 2 and any(b > M for b in budgets):
            raise ValueError(f"design J with audited tasks needs a bank with >= 2 runs; got {L}")
    return designs, budgets


def _replay_budget(B: int, gen: np.random.Generator, *, y: np.ndarray, designs: list[str], R: int, prob: float,
                   theta: float) -> dict[str, Any]:
    """Every design at one budget, ``R`` randomisations: the summaries per design and the audit size."""
    M, L = y.shape
    N = M * L
    res: dict[str, tuple] = {}
    t = 0
    if "uniform" in designs or "uniform_bayes" in designs:
        m = min(N, B)
        s, per_task = _simulate_uniform(y, m, R, gen, "uniform_bayes" in designs)
        if "uniform" in designs:
            lo, hi = uniform_bounds(s, N, m, prob)
            res["uniform"] = (s / m, lo, hi, m, m)
        if "uniform_bayes" in designs:
            n, k = per_task
            pm, _, lo, hi = _posterior_kernel(_type_counts(n, k, L), s, L, M, prob)
            res["uniform_bayes"] = (pm, lo, hi, m, m)
    if any(d.startswith("joint") for d in designs):
        t = B - M
        est, X, P, Z, (n, tot), mx = _simulate_joint(y, t, R, gen)
        for name, meth in (("joint", "mixture"), ("joint_split", "split")):
            if name in designs:
                lo, hi = joint_bounds(est, X, P, Z, M, L, t, prob, meth)
                res[name] = (est, lo, hi, M + t, mx)
        if "joint_bayes" in designs:
            pm, _, lo, hi = _posterior_kernel(_type_counts(n, tot, L), P, L, M, prob)
            res["joint_bayes"] = (pm, lo, hi, M + t, mx)
    out: dict[str, Any] = {"n_audit": t}
    for d in designs:
        est, lo, hi, spent, mx = res[d]
        w = hi - lo
        cov = (lo <= theta + _TOL) & (theta - _TOL <= hi)
        out[d] = {
            "mean_width": w.mean(),
            "width_se": w.std(ddof=1) / np.sqrt(R) if R > 1 else np.nan,
            "bias": est.mean() - theta,
            "mse": np.mean((est - theta) ** 2),
            "coverage": cov.mean(),
            "n_covered": int(cov.sum()),
            "labels_spent": spent,
            "max_labels": mx,
        }
    return out


def _replay_dataset(rows: list[dict[str, Any]], designs: list[str], budgets: list[int], R: int,
                    attrs: dict[str, Any]) -> xr.Dataset:
    """The replay's Dataset over (design, budget), coverage with its Wilson interval."""
    shape = (len(designs), len(budgets))
    keys = ("mean_width", "width_se", "bias", "mse", "coverage", "labels_spent", "max_labels")
    out = {k: np.array([[row[d][k] for row in rows] for d in designs], dtype=float) for k in keys}
    out["max_labels"] = out["max_labels"].astype(int)
    cov_n = np.array([[row[d]["n_covered"] for row in rows] for d in designs], dtype=int)
    wl, wh = K.wilson(cov_n, np.full(shape, R), DEFAULT_PROB)
    coords = {"design": designs, "budget": budgets}
    dims = ("design", "budget")
    ds = xr.Dataset({k: (dims, v) for k, v in out.items()}, coords=coords)
    ds["coverage_ci"] = make_interval(wl, wh, prob=DEFAULT_PROB, kind="wilson", template=ds["coverage"],
                                      detail=f"Wilson interval of the coverage over {R} replays")
    ds["n_audit"] = ("budget", np.array([row["n_audit"] for row in rows], dtype=int))
    ds.attrs = {**attrs, "description": "replay of budgeted designs on a complete bank (hierbench.design.replay)"}
    return ds


def bank_from_eval(ds: xr.Dataset, agent: Hashable, n_runs: int) -> xr.DataArray:
    """A complete ``task x run`` bank for one agent: tasks with at least ``n_runs`` runs, the first ``n_runs``.

    Parameters
    ----------
    ds : xarray.Dataset
        An eval dataset (``score(agent, task, run)``, NaN = not run), binary scores.
    agent : hashable
        The agent to take.
    n_runs : int
        ``L``; tasks with fewer recorded runs are left out and counted in
        ``attrs["n_tasks_dropped"]``, runs beyond the first ``L`` in
        ``attrs["n_runs_dropped"]``.

    Returns
    -------
    xarray.DataArray
        0/1 bank with dims ``(task, run)``, ``run = 0..L-1``.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=2, n_tasks=10, n_runs=4, rng=0)
    >>> bank_from_eval(ds, "agent_00", 3).sizes["run"]
    3
    """
    if "score" not in ds or "agent" not in ds.dims:
        raise ValueError("`ds` must be an eval dataset with `score(agent, task, run)`")
    if agent not in ds["agent"].values:
        raise ValueError(f"`agent` must be one of the dataset's agents; got {agent!r}")
    if int(n_runs) != n_runs or n_runs < 1:
        raise ValueError(f"`n_runs` must be a positive integer; got {n_runs!r}")
    sc = ds["score"].sel(agent=agent).transpose("task", "run").values.astype(float)
    ok = ~np.isnan(sc)
    vals = sc[ok]
    if not np.isin(vals, (0.0, 1.0)).all():
        raise ValueError("`ds.score` must be binary (0 or 1) for a bank; got partial-credit scores")
    have = ok.sum(1)
    keep = have >= n_runs
    if not keep.any():
        raise ValueError(f"no task of agent {agent!r} has `n_runs` >= {n_runs} recorded runs (max {int(have.max())})")
    rows = []
    for i in np.flatnonzero(keep):
        rows.append(sc[i, ok[i]][:n_runs])
    bank = xr.DataArray(
        np.array(rows),
        dims=("task", "run"),
        coords={"task": ds["task"].values[keep], "run": np.arange(n_runs)},
        name="score",
    )
    bank.attrs = {
        "agent": str(agent),
        "n_tasks_dropped": int((~keep & (have > 0)).sum()),
        "n_tasks_never_run": int((have == 0).sum()),
        "n_runs_dropped": int((have[keep] - n_runs).sum()),
        "source": str(ds.attrs.get("source", "")),
    }
    return bank


@fill_doc
def simulate_stratified_bank(
    n_tasks: int = 880,
    n_runs: int = 5,
    *,
    pure_fraction: float = 0.9,
    mean_disagreement: float = 0.05,
    accuracy: float = 0.5,
    rng: None | int | np.random.Generator = None,
) -> xr.DataArray:
    """A synthetic stratified cohort like LiveCodeBench's: mostly pure tasks, rare disagreement.

    ``round(pure_fraction * M)`` tasks are pure (all runs pass with
    probability ``accuracy``, else all fail); the impure tasks take ``h``
    in ``{1, L-1}`` or ``{floor(L/2), ceil(L/2)}`` in the proportion that
    gives the requested mean pair disagreement
    ``mean_i 2 h_i (L - h_i) / (L (L - 1))``. The realised values are in
    the attrs.

    Parameters
    ----------
    n_tasks, n_runs : int
        ``M`` and ``L`` (``L >= 2``).
    pure_fraction, mean_disagreement, accuracy : float
    %(rng)s

    Returns
    -------
    xarray.DataArray
        0/1 bank ``(task, run)``.

    Examples
    --------
    >>> bank = simulate_stratified_bank(rng=0)
    >>> bank.shape, round(bank.attrs["pure_fraction"], 2)
    ((880, 5), 0.9)
    """
    M, L = int(n_tasks), int(n_runs)
    if M != n_tasks or M < 1:
        raise ValueError(f"`n_tasks` must be a positive integer; got {n_tasks!r}")
    if L != n_runs or L < 2:
        raise ValueError(f"`n_runs` must be an integer >= 2; got {n_runs!r}")
    for name, v in (("pure_fraction", pure_fraction), ("accuracy", accuracy)):
        if not 0 <= v <= 1:
            raise ValueError(f"`{name}` must satisfy 0 <= {name} <= 1; got {v!r}")
    gen = as_rng(rng)
    n_imp = M - round(pure_fraction * M)
    h_lo, h_hi = 1, L // 2
    d = lambda h: 2 * h * (L - h) / (L * (L - 1))  # noqa: E731
    lo_d, hi_d = (1 - pure_fraction) * d(h_lo), (1 - pure_fraction) * d(h_hi)
    if n_imp == 0:
        if mean_disagreement != 0:
            raise ValueError(
                f"`mean_disagreement` must be 0 when every task is pure (pure_fraction=1); got {mean_disagreement!r}"
            )
        frac_hi = 0.0
    else:
        d_imp = mean_disagreement * M / n_imp
        if not d(h_lo) - 1e-9 <= d_imp <= d(h_hi) + 1e-9:
            raise ValueError(
                f"`mean_disagreement` must lie in [{lo_d:.4g}, {hi_d:.4g}] for pure_fraction="
                f"{pure_fraction} and n_runs={L}; got {mean_disagreement!r}"
            )
        frac_hi = 0.0 if d(h_hi) == d(h_lo) else (d_imp - d(h_lo)) / (d(h_hi) - d(h_lo))
    n_hi = round(frac_hi * n_imp)
    h = np.empty(M, int)
    h[: n_imp - n_hi] = np.where(gen.random(n_imp - n_hi) < 0.5, h_lo, L - h_lo)
    h[n_imp - n_hi : n_imp] = np.where(gen.random(n_hi) < 0.5, h_hi, L - h_hi)
    h[n_imp:] = np.where(gen.random(M - n_imp) < accuracy, L, 0)
    h = gen.permutation(h)
    y = (np.argsort(gen.random((M, L)), axis=1) < h[:, None]).astype(float)
    bank = xr.DataArray(y, dims=("task", "run"), coords={"task": np.arange(M), "run": np.arange(L)}, name="score")
    bank.attrs = {**_bank_stats(y.astype(np.int8)), "source": "hierbench.design.simulate_stratified_bank"}
    return bank
