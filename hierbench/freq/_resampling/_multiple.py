"""Every pair of agents compared at once, with p-values the family can resolve.

With ``m`` pairs, Holm's first threshold is ``alpha / m``: a p-value that
cannot go below it can never call a pair different, however clear the gap.
:func:`compare_agents` therefore chooses its p-value computation from the
family, never letting the number of comparisons decide:

* the sign-flip test is exact whenever that is affordable (enumeration, or
  lattice convolution for binary scores) and otherwise draws enough random
  sign patterns for ``alpha / m`` (:mod:`._signflip`), each Monte Carlo
  p-value with its standard error;
* when the resampling units are too few for any sign-flip test to pass
  ``alpha / m`` (its floor is ``2^(1 - n)`` with ``n`` units: 12 task clusters
  and 300 pairs, say), the default switches to the paired t-test and says so.
  With clusters it is the bias-reduced CR2 t with Bell-McCaffrey degrees of
  freedom, which holds its level with few and unequal clusters where the
  usual CR1 t with ``G - 1`` df does not (measured on SWE-bench's 12 repos,
  one holding 231 of 500 tasks: CR1 rejects 10% at 5% and 0.7% at 0.1%
  under the null; CR2 3-6% and below 0.1%). The price is honest: few
  clusters carry little information about new clusters.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np
import xarray as xr
from scipy import stats

from ..._base import (
    DEFAULT_PROB,
    Result,
    SmallSampleWarning,
    as_rng,
    check_choice,
    check_prob,
    interval_label,
    make_interval,
    renamed_kwargs,
)
from .._inputs import agent_task_means
from ._bootstrap import bootstrap_ci
from ._paired import (
    UndefinedTestWarning,
    _bootstrap_p,
    _check_counts,
    _cluster_codes,
    _mcnemar,
    _task_stats,
    holm,
)
from ._signflip import resolvable, sign_flip_pvalues

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PValueResolutionWarning", "PairwiseComparisonResult", "compare_agents"]

_TESTS = ("auto", "permutation", "bootstrap", "t", "mcnemar")

#: per-pair statistics, as (agent, opponent) matrices; the sign rule fills the lower triangle
_PAIR_KEYS = (
    "mean_diff",
    "se",
    "df",
    "p_permutation",
    "p_permutation_mcse",
    "p_bootstrap",
    "p_bootstrap_mcse",
    "p_t",
    "p_mcnemar",
    "prob_superiority",
    "cohens_dz",
    "n_tasks",
    "n_units",
)
_ANTISYMMETRIC = ("mean_diff", "cohens_dz")


class PValueResolutionWarning(SmallSampleWarning):
    """The chosen p-values cannot go below Holm's first threshold: no pair can be called different."""


def _bh(p: np.ndarray) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = stats.false_discovery_control(p[ok], method="bh")
    return out


# --------------------------------------------------------------------------- result


@dataclass(frozen=True, repr=False)
class PairwiseComparisonResult(Result):
    """Result of :func:`compare_agents`: every pair of agents, as a matrix and as a table.

    ``estimate`` is the mean paired difference over ``(agent, opponent)``
    (row minus column, NaN on the diagonal) and ``ci`` its interval. The
    full matrix Dataset is ``table`` (also :meth:`to_dataset`); attribute
    and item access fall through to it, so ``res.p_holm``, ``res["ci"]``
    and ``res.sel(agent=..., opponent=...)`` work as on a Dataset.
    :meth:`to_frame` is the tidy per-pair table (one row per unordered pair),
    :meth:`matrix` the compact agents x agents view for many agents.
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

    def significant(self, alpha: float | None = None, *, adjust: str = "holm") -> xr.DataArray:
        """Whether each pair differs: the adjusted p-value below ``alpha`` (default ``1 - ci_prob``).

        ``adjust`` is ``"holm"`` (family-wise error) or ``"bh"`` (false discovery rate).
        """
        check_choice(adjust, "adjust", ["holm", "bh"])
        a = 1 - float(self.ci.attrs["ci_prob"]) if alpha is None else check_prob(alpha, "alpha")
        p = self.table["p_" + adjust]
        return (p < a).where(p.notnull(), False).rename("significant")

    def matrix(
        self, alpha: float | None = None, *, adjust: str = "holm", digits: int = 2, names: bool = False
    ) -> pd.DataFrame:
        """The compact agents x agents view: difference (row minus column), ``*`` where it differs.

        Agents are ordered by their average difference to the others (best first), so
        the upper triangle reads as "row beats column by". Rows are ``"1 name"``,
        columns the numbers (``names=True``: the names) to keep 25 agents narrow.

        Returns
        -------
        pandas.DataFrame
            Strings such as ``"+0.64*"``; the diagonal is empty.
        """
        import pandas as pd

        est = self.table["mean_diff"].values
        sig = self.significant(alpha, adjust=adjust).values
        agents = [str(a) for a in self.table["agent"].values]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            order = np.argsort(-np.nanmean(est, axis=1), kind="stable")
        cells = [
            [
                "" if i == j or not np.isfinite(est[i, j])
                else f"{est[i, j]:+.{digits}f}" + ("*" if sig[i, j] else "")
                for j in order
            ]
            for i in order
        ]
        rows = [f"{r + 1} {agents[i]}" for r, i in enumerate(order)]
        cols = [agents[i] for i in order] if names else [str(r + 1) for r in range(len(order))]
        return pd.DataFrame(cells, index=rows, columns=cols)

    def _repr_lines(self) -> list[str]:
        df = self.to_frame()
        attrs = self.table.attrs
        n_sig = int(self.significant().values[np.triu_indices(len(self.table["agent"]), 1)].sum())
        lines = [
            f"{type(self).__name__}: {len(df)} pairs, mean paired difference (row - column) with "
            f"{interval_label(self.ci)} interval; p-values of the {attrs.get('test', '?')} test",
            f"  {n_sig} of {len(df)} pairs differ (Holm, family-wise {1 - float(self.ci.attrs['ci_prob']):.3g})",
        ]
        if self.table.sizes["agent"] <= 8:
            lines += ["  " + s for s in self.matrix().to_string().splitlines()]
        else:
            show = [*range(5), *range(len(df) - 2, len(df))]
            for k in show:
                if k == len(df) - 2:
                    lines.append(f"  ... ({len(df) - 7} more; .matrix() shows every pair)")
                r = df.iloc[k]
                lines.append(
                    f"  {df.index[k]}: {r['estimate']:.4g} [{r['lower']:.4g}, {r['upper']:.4g}]  "
                    f"p_holm={r['p_holm']:.3g}"
                )
        return lines


# --------------------------------------------------------------------------- engine


def _pair_units(
    means: np.ndarray, pairs: list, agents: list[str], codes: np.ndarray | None
) -> tuple[list[dict], np.ndarray]:
    """Per pair: its deterministic statistics; and the sign-flip units, ``(n_units, n_pairs)``.

    The units are the tasks (or clusters: sums over the pair's shared tasks);
    a unit the pair does not share is 0 and takes no part in the test.
    """
    T = means.shape[1]
    n_rows = T if codes is None else int(codes.max()) + 1
    units = np.zeros((n_rows, len(pairs)))
    rows: list[dict] = []
    undefined = []
    for k, (i, j) in enumerate(pairs):
        both = np.isfinite(means[i]) & np.isfinite(means[j])
        if both.sum() < 2:
            undefined.append(f"{agents[i]} vs {agents[j]}")
            rows.append({})
            continue
        d = means[i, both] - means[j, both]
        if codes is None:
            units[both, k] = d
        else:
            units[:, k] = np.bincount(codes[both], weights=d, minlength=n_rows)
        st = _task_stats(d, None if codes is None else codes[both])
        st["p_mcnemar"] = _mcnemar(means[i, both], means[j, both])[0]
        st["n_tasks"] = float(both.sum())
        st["n_units"] = float(both.sum() if codes is None else np.unique(codes[both]).size)
        rows.append(st)
    if undefined:
        warnings.warn(
            f"pairs with fewer than 2 shared tasks are NaN: {undefined}",
            UndefinedTestWarning,
            stacklevel=3,
        )
    return rows, units


def _choose_test(test: str, rows: list[dict], n_tests: int, alpha: float, clustered: bool) -> tuple[str, str]:
    """The test whose p-values are adjusted, and why (``test="auto"``)."""
    n_units = [int(r["n_units"]) for r in rows if r]
    if test != "auto":
        return test, "chosen by the caller"
    unit = "clusters" if clustered else "tasks"
    if all(resolvable(n, n_tests, alpha) for n in n_units):
        return "permutation", (
            f"sign-flip test over {unit}: exact where affordable, else Monte Carlo with enough "
            f"sign patterns for Holm's first threshold {alpha:g}/{n_tests}"
        )
    few = min(n_units) if n_units else 0
    return "t", (
        f"{few} {unit} are too few for a sign-flip test to pass Holm's first threshold "
        f"{alpha:g}/{n_tests} (its smallest p-value is 2^(1 - {few}) = {2.0 ** (1 - few):.2g}); "
        "the paired t-test"
        + (" (CR2 cluster-robust, Bell-McCaffrey df)" if clustered else "")
        + " takes over"
    )


def _warn_resolution(
    chosen: str, rows: list[dict], flip: dict, n_resamples: int, n_tests: int, alpha: float
) -> None:
    """Warn when no p-value of the chosen test could pass Holm's first threshold ``alpha / m``.

    The floor of an exact sign-flip p-value is ``2^(1 - n_units)``, of a Monte Carlo one
    ``1 / (B + 1)``, of the bootstrap one ``2 / (B + 1)``.
    """
    if chosen not in ("permutation", "bootstrap") or n_tests < 2:
        return
    defined = [k for k, r in enumerate(rows) if r]
    if chosen == "bootstrap":
        floors = np.full(len(defined), 2 / (n_resamples + 1))
    else:
        mc = 1 / (flip["n_permutations"] + 1) if flip["n_permutations"] else np.nan
        floors = np.array(
            [2.0 ** (1 - rows[k]["n_units"]) if flip["exact"][k] else mc for k in defined]
        )
    if floors.size and np.all(floors * n_tests > alpha):
        warnings.warn(
            f"no {chosen} p-value here can go below {floors.min():.3g}, and {n_tests} pairs put "
            f"Holm's first threshold at {alpha / n_tests:.3g}: no pair can be called different "
            "at this resolution. Use test='auto' (the t-test when units are few) and leave "
            "`n_permutations` unset, or raise `n_resamples` for the bootstrap.",
            PValueResolutionWarning,
            stacklevel=3,
        )


def _matrices(rows: list[dict], pairs: list, flip: dict, boot, M: int) -> tuple[dict, np.ndarray]:
    """The per-pair values as (M, M) matrices (row minus column) and the (M, M, 2) intervals."""
    mats = {k: np.full((M, M), np.nan) for k in _PAIR_KEYS}
    ci = np.full((M, M, 2), np.nan)
    for k, (i, j) in enumerate(pairs):
        st = rows[k]
        if not st:
            continue
        st["p_permutation"], st["p_permutation_mcse"] = flip["p"][k], flip["mcse"][k]
        st["p_bootstrap"], st["p_bootstrap_mcse"] = _bootstrap_p(boot.distribution.values[:, k])
        for key in _PAIR_KEYS:
            v = st[key]
            mats[key][i, j] = v
            if key in _ANTISYMMETRIC:
                mats[key][j, i] = -v
            else:
                mats[key][j, i] = 1.0 - v if key == "prob_superiority" else v
        lo, hi = boot.ci.values[k]
        ci[i, j] = (lo, hi)
        ci[j, i] = (-hi, -lo)
    return mats, ci


def _t_interval(mats: dict[str, np.ndarray], prob: float, clustered: bool) -> xr.DataArray:
    """The paired t interval ``mean +- t_df * se`` of every pair (CR2 / Bell-McCaffrey with clusters)."""
    with np.errstate(invalid="ignore"):
        q = stats.t.ppf(0.5 + prob / 2, np.where(mats["df"] > 0, mats["df"], np.nan))
    half = q * mats["se"]
    dims = ("agent", "opponent")
    return make_interval(
        xr.DataArray(mats["mean_diff"] - half, dims=dims),
        xr.DataArray(mats["mean_diff"] + half, dims=dims),
        prob=prob,
        kind="t",
        detail="paired t interval over "
        + ("clusters: CR2 cluster-robust SE, Bell-McCaffrey df" if clustered else "tasks (T - 1 df)"),
        warn_zero_width=False,
    )


def _pairwise_result(
    mats: dict[str, np.ndarray], boot_ci: np.ndarray, agents: list[str], ci_attrs: dict, attrs: dict
) -> PairwiseComparisonResult:
    """The matrices with Holm and BH adjustment of the chosen test's p-values, as the result.

    ``ci`` is the interval that goes with the test: the paired t interval when the
    t-test was chosen (the bootstrap over too few units undercovers where the test
    does not hold its level), the bootstrap interval otherwise (``ci_bootstrap``, always).
    """
    M = len(agents)
    iu = np.triu_indices(M, 1)
    test = attrs["test"]
    p_raw = mats["p_" + test][iu]
    p_h, p_b = np.full((M, M), np.nan), np.full((M, M), np.nan)
    p_h[iu] = holm(p_raw)
    p_b[iu] = _bh(p_raw)
    p_h.T[iu] = p_h[iu]
    p_b.T[iu] = p_b[iu]
    coords = {"agent": agents, "opponent": agents, "ci_bound": ["lower", "upper"]}
    dims = ("agent", "opponent")
    ds = xr.Dataset({k: (dims, mats[k]) for k in _PAIR_KEYS}, coords=coords)
    ds["ci_bootstrap"] = ((*dims, "ci_bound"), boot_ci)
    ds["ci_bootstrap"].attrs = dict(ci_attrs)
    if test == "t":
        ds["ci"] = _t_interval(mats, float(attrs["ci_prob"]), attrs["clustered"]).assign_coords(coords)
    else:
        ds["ci"] = ds["ci_bootstrap"].copy()
    ds["p_value"] = (dims, mats["p_" + test])
    mc = mats.get(f"p_{test}_mcse")
    ds["p_value_mcse"] = (dims, mc if mc is not None else np.where(np.isfinite(mats["p_" + test]), 0.0, np.nan))
    ds["p_holm"] = (dims, p_h)
    ds["p_bh"] = (dims, p_b)
    ds.attrs = {**{k: v for k, v in attrs.items() if k != "clustered"}, "n_pairs": len(iu[0])}
    return PairwiseComparisonResult(table=ds)


# --------------------------------------------------------------------------- public


@renamed_kwargs(dim="task_dim")
def compare_agents(
    data: xr.Dataset | xr.DataArray,
    *,
    test: str = "auto",
    task_dim: str = "task",
    run_dim: str = "run",
    agent_dim: str = "agent",
    cluster: str | None = "auto",
    prob: float = DEFAULT_PROB,
    n_resamples: int = 9999,
    n_permutations: int | None = None,
    method: Literal["percentile", "bca"] = "percentile",
    rng: None | int | np.random.Generator = None,
) -> PairwiseComparisonResult:
    """Every pair of agents compared on shared tasks, with Holm and BH adjustment.

    Parameters
    ----------
    data : xarray.Dataset or xarray.DataArray
        Eval dataset (``score(agent, task, run)``) or a score DataArray.
    test : {"auto", "permutation", "bootstrap", "t", "mcnemar"}
        The test whose p-values are adjusted into ``p_holm`` and ``p_bh``.
        ``"auto"`` (default): the sign-flip permutation test when every pair
        has enough tasks (clusters) for its smallest p-value to pass Holm's
        first threshold ``(1 - prob) / m``, else the paired t-test
        (``attrs["test"]`` and ``attrs["test_reason"]`` say which and why).
    task_dim, run_dim, agent_dim : str
        Task, run and agent dims.
    cluster, prob, n_resamples, method, rng
        As in :func:`paired_test`; one task (cluster) resample is shared by
        every pair. ``1 - prob`` is also the family's level for the choices.
    n_permutations : int or None
        Monte Carlo sign patterns for the p-values that are not exact; None
        (default) chooses them from the family: ``B + 1 >= 20 m / (1 - prob)``.

    Returns
    -------
    PairwiseComparisonResult
        ``estimate`` / ``ci`` (the mean difference and its interval), a tidy
        per-pair ``to_frame()``, the compact ``matrix()``, and the matrices
        over ``(agent, opponent)`` (row agent minus column agent):
        ``mean_diff``, ``se`` and ``df`` (of the paired t), ``ci`` (the
        bootstrap interval, or the paired t interval when the t-test is the
        test), ``ci_bootstrap``, ``p_permutation`` and ``p_bootstrap`` with
        their Monte Carlo standard errors (``*_mcse``, 0 when exact),
        ``p_t``, ``p_mcnemar``, ``p_value`` / ``p_value_mcse`` (of the test),
        ``p_holm``, ``p_bh``, ``prob_superiority``, ``cohens_dz``,
        ``n_tasks``, ``n_units`` (tasks, or clusters). NaN on the diagonal.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=3, n_tasks=40, n_runs=2, rng=0)
    >>> res = compare_agents(ds, n_resamples=499, rng=1)
    >>> res.p_holm.dims, res.attrs["test"]
    (('agent', 'opponent'), 'permutation')
    >>> res.to_frame().index.tolist()
    ['agent_00 - agent_01', 'agent_00 - agent_02', 'agent_01 - agent_02']
    """
    check_choice(test, "test", _TESTS)
    prob = check_prob(prob)
    _check_counts(n_resamples, n_permutations)
    gen = as_rng(rng)
    score, means = agent_task_means(
        data, agent_dim=agent_dim, task_dim=task_dim, run_dim=run_dim, purpose="compare_agents"
    )
    agents = [str(x) for x in score[agent_dim].values]
    pairs = list(itertools.combinations(range(len(agents)), 2))
    boot = bootstrap_ci(
        score, pairs=[(agents[i], agents[j]) for i, j in pairs], n_resamples=int(n_resamples),
        prob=prob, method=method, cluster=cluster, run_dim=run_dim, task_dim=task_dim,
        agent_dim=agent_dim, rng=gen,
    )
    codes = _cluster_codes(score, cluster, task_dim)
    rows, units = _pair_units(means, pairs, agents, codes)
    alpha, m = 1 - prob, max(1, sum(1 for r in rows if r))
    flip = sign_flip_pvalues(units, gen, n_permutations=n_permutations, n_tests=m, alpha=alpha)
    chosen, reason = _choose_test(test, rows, m, alpha, codes is not None)
    mats, ci = _matrices(rows, pairs, flip, boot, len(agents))
    _warn_resolution(chosen, rows, flip, int(n_resamples), m, alpha)
    attrs = {
        "test": chosen,
        "test_reason": reason,
        "clustered": codes is not None,
        "ci_prob": prob,
        "n_resamples": int(n_resamples),
        "n_permutations": flip["n_permutations"],
        "p_permutation_method": (
            "sign flips of the " + ("clusters'" if codes is not None else "tasks'") + " differences: "
            "exact (enumeration, or lattice convolution) where affordable, else Monte Carlo with "
            f"{flip['n_permutations']} patterns shared by the pairs"
        ),
    }
    return _pairwise_result(mats, ci, agents, boot.ci.attrs, attrs)
