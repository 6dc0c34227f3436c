"""Paired comparisons of agents with the task as the unit.

For agents A and B on the same tasks, ``d_t = mean_r Y_Atr - mean_r Y_Btr``.
Every test here works on ``d_1..d_T`` (or on cluster sums of them when tasks
are clustered): task difficulty cancels, and runs of one task are never
treated as independent evidence. Pooling all ``T x R`` run pairs instead
inflates the type-I error whenever agents interact with tasks.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import ClassVar
from typing import Literal

import numpy as np
import xarray as xr
from scipy import stats

from ..._base import DEFAULT_PROB
from ..._base import Result
from ..._base import UndefinedWarning
from ..._base import ZeroWidthIntervalWarning
from ..._base import as_rng
from ..._base import check_choice
from ..._base import check_prob
from ..._base import cluster_codes
from ..._base import field_alias
from ..._base import input_label
from ..._base import interval_label
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from ..._docs import fill_doc
from .._kernels import cr2_mean_se
from .._kernels import exact_zero_spread
from ._bootstrap import bootstrap_ci
from ._bootstrap_engine import _percentile_p
from ._pair_interval import PAIR_METHODS
from ._pair_interval import _per_pair_ci
from ._pair_interval import _per_pair_kind
from ._pair_interval import _unit_range
from ._signflip import PValueResolutionWarning
from ._signflip import auto_test
from ._signflip import resolution_note
from ._signflip import sign_flip_pvalues

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["PairedTestResult", "UndefinedTestWarning", "holm", "paired_test"]

class UndefinedTestWarning(UndefinedWarning):
    """A test statistic or effect size is undefined on these data (reported as NaN)."""


# --------------------------------------------------------------------------- kernels


def _mcnemar(ma: np.ndarray, mb: np.ndarray) -> tuple[float, int, int, int]:
    """Exact McNemar on per-task mean scores thresholded at 1/2; returns (p, n_a_only, n_b_only, n_ties)."""
    tie = (ma == 0.5) | (mb == 0.5)
    sa, sb = ma[~tie] > 0.5, mb[~tie] > 0.5
    n10 = int(np.sum(sa & ~sb))
    n01 = int(np.sum(~sa & sb))
    return float(_mcnemar_p(n10, n01)), n10, n01, int(tie.sum())


def _mcnemar_p(n10, n01) -> np.ndarray:
    """Exact two-sided McNemar p-values of many discordant counts at once; NaN where there are none.

    The two-sided binomial test of ``n10`` successes in ``n = n10 + n01`` at 1/2, as
    :func:`scipy.stats.binomtest` computes it (the outcomes no likelier than the one seen),
    without its per-call search: at 1/2 the law is symmetric, so those are the two tails
    as far from ``n / 2`` as ``m = min(n10, n01)``, ``P(X <= m) + P(X >= n - m)``, capped
    at 1 (and 1 when ``n10 = n01``). The same cdf and sf as binomtest, summed in its order
    (equal to it bit for bit for every n up to 200).
    """
    n10, n01 = np.asarray(n10, dtype=float), np.asarray(n01, dtype=float)
    n = n10 + n01
    m = np.minimum(n10, n01)
    with np.errstate(invalid="ignore"):
        p = np.minimum(1.0, stats.binom.cdf(m, n, 0.5) + stats.binom.sf(n - m - 1, n, 0.5))
    return np.where(n > 0, np.where(n10 == n01, 1.0, p), np.nan)


def _task_stats(d: np.ndarray, codes: np.ndarray | None = None) -> dict[str, float]:
    """Mean, SE, t-test p, d_z and P(superiority) of per-task differences.

    With cluster ``codes`` the SE is the bias-reduced cluster-robust CR2 and the
    t-test has Bell-McCaffrey degrees of freedom (:func:`cr2_mean_se`: with equal
    cluster sizes exactly CR1 with G - 1 df).
    """
    T = d.size
    mean = float(d.mean())
    sd = float(exact_zero_spread(d.std(ddof=1), np.abs(d).max())) if T > 1 else np.nan
    if codes is None:
        se = sd / np.sqrt(T) if T > 1 else np.nan
        df = T - 1
    else:
        se, df, _ = cr2_mean_se(d, codes)
    if df > 0 and np.isfinite(se) and se > 0:
        p_t = float(2 * stats.t.sf(abs(mean / se), df))
    else:
        p_t = np.nan
    dz = mean / sd if T > 1 and sd > 0 else np.nan
    ps = float(np.mean(d > 0) + 0.5 * np.mean(d == 0))
    return {
        "mean_diff": mean, "se": se, "df": float(df), "p_t": p_t, "cohens_dz": dz, "prob_superiority": ps,
    }


def _task_stats_rows(d: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`_task_stats` (tasks as units) of every row of ``d`` (rows x tasks, at least 2) at once.

    The same operations as on one row, row-wise: numpy's row reductions of a C-contiguous
    block sum each row as it sums a 1-D array, so every value equals, bit for bit, what
    :func:`_task_stats` returns for that row.
    """
    d = np.ascontiguousarray(d, dtype=float)
    T = d.shape[1]
    mean = d.mean(axis=1)
    sd = exact_zero_spread(d.std(axis=1, ddof=1), np.abs(d).max(axis=1))
    se = sd / np.sqrt(T)
    p_t = np.full(mean.shape, np.nan)
    ok = np.isfinite(se) & (se > 0)
    p_t[ok] = 2 * stats.t.sf(np.abs(mean[ok] / se[ok]), T - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        dz = np.where(sd > 0, mean / sd, np.nan)
    ps = (d > 0).mean(axis=1) + 0.5 * (d == 0).mean(axis=1)
    return {"mean_diff": mean, "se": se, "df": np.full(mean.shape, float(T - 1)), "p_t": p_t,
            "cohens_dz": dz, "prob_superiority": ps}


def _bootstrap_p(dist: np.ndarray) -> tuple[float, float]:
    """Two-sided p-value by inverting the percentile interval, and its Monte Carlo error.

    ``p = 2 min(P*(d <= 0), P*(d >= 0))``; its standard error is
    ``sqrt(p (2 - p) / B)`` (``p = 2 q``, ``q`` a share of B). One column of
    :func:`~._bootstrap_engine._percentile_p`.
    """
    p, mcse = _percentile_p(np.asarray(dist, dtype=float)[:, None])
    return float(p[0]), float(mcse[0])


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


# --------------------------------------------------------------------------- inputs


def _per_task(x: xr.DataArray, name: str, task_dim: str, run_dim: str) -> xr.DataArray:
    if not isinstance(x, xr.DataArray):
        raise TypeError(f"`{name}` must be an xarray.DataArray of scores; got {type(x).__name__}")
    if task_dim not in x.dims:
        raise ValueError(f"`task_dim` must be a dimension of `{name}` {x.dims}; got {task_dim!r}")
    extra = [d for d in x.dims if d not in (task_dim, run_dim)]
    if extra:
        raise ValueError(
            f"`{name}` must have dims ({task_dim!r}[, {run_dim!r}]); found extra dims {extra} "
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
    mean_diff, estimate : xarray.DataArray
        Mean over tasks of ``d_t`` (A minus B), also under the house name ``estimate``.
    se : xarray.DataArray
        ``sd(d) / sqrt(T)``; with clusters the bias-reduced cluster-robust CR2.
    ci : xarray.DataArray
        The pair's interval, dim ``ci_bound``, chosen by the rule of :func:`compare_agents` (the
        same numbers it gives this pair): the paired t interval over the tasks (``T - 1`` df;
        over clusters the CR2 t, Bell-McCaffrey df) unless ``method`` asks for the bootstrap and
        the units are tasks. ``ci_kind`` (``"t"``, ``"percentile"``, ``"bca"``) and ``ci_detail``
        say which; so do the repr's first line and ``to_frame()``'s ``ci_kind`` / ``ci_detail``.
    ci_bootstrap : xarray.DataArray
        The paired task (cluster) bootstrap interval (``method``'s kind, percentile by default),
        always; ``ci`` too when a bootstrap ``method`` is asked for over tasks.
    p_permutation, p_permutation_mcse : xarray.DataArray
        Sign-flip p-value and its Monte Carlo standard error (0 when exact).
    p_bootstrap, p_bootstrap_mcse : xarray.DataArray
        Two-sided bootstrap p-value (inverting the percentile interval) and its
        Monte Carlo standard error.
    p_t : xarray.DataArray
        Paired t-test on the per-task differences (T - 1 df); with clusters,
        the CR2 cluster-robust t with Bell-McCaffrey df (G - 1 when the
        clusters are of equal size).
    p_mcnemar : xarray.DataArray
        Exact McNemar on per-task majority outcomes.
    prob_superiority, cohens_dz : xarray.DataArray
        ``P(d > 0) + P(d = 0) / 2`` and ``mean(d) / sd(d)``.
    distribution : xarray.DataArray
        Bootstrap distribution of the mean difference (dim ``resample``).
    p_value, test, test_reason : xarray.DataArray, str, str
        The p-value the package recommends for this design, the one
        :func:`compare_agents` would use for this pair: ``p_permutation`` when
        the units (tasks, or clusters) are enough for the sign flips to pass
        ``1 - prob``, else ``p_t`` (``test`` says which, ``test_reason`` why;
        the repr names it).
    counts : dict
        ``n_tasks`` used, ``n_excluded`` (a task one agent never ran),
        ``n_tasks_nonzero`` (tasks whose difference is not 0), with clusters
        ``n_clusters_nonzero`` (clusters whose summed difference is not 0: the
        units the sign flips permute), ``n_a_only`` / ``n_b_only``
        (McNemar discordant tasks), ``n_mcnemar_ties`` (a per-task mean of
        exactly 1/2: no majority, left out of McNemar), ``exact`` (the
        sign-flip p-value is exact) and ``n_permutations`` (the Monte Carlo
        sign patterns drawn; 0 when exact).
    agent_a, agent_b : str
        The agents compared (``a`` and ``b``): each input's scalar ``agent``
        coordinate, else its name where the two differ, else ``"a"`` / ``"b"``.
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
    p_bootstrap_mcse: xr.DataArray = field(default_factory=lambda: xr.DataArray(np.nan))
    p_value: xr.DataArray = field(default_factory=lambda: xr.DataArray(np.nan))
    test: str = ""
    test_reason: str = ""
    agent_a: str = "a"
    agent_b: str = "b"
    ci_bootstrap: xr.DataArray = field(default_factory=lambda: xr.DataArray(np.nan))

    _dataset_exclude = ("distribution",)
    _not_saved: ClassVar[Mapping[str, str]] = {"counts": "saved as one variable per key (n_tasks, n_excluded, ...)"}
    _estimate_label = "mean paired difference over tasks ({agent_a} - {agent_b})"

    estimate = field_alias("mean_diff", "The mean paired difference (``mean_diff``), under the house name.")

    def to_dataset(self) -> xr.Dataset:
        """All fields in one Dataset (counts as variables, the bootstrap distribution included)."""
        names = [
            "mean_diff",
            "se",
            "ci",
            "ci_bootstrap",
            "p_permutation",
            "p_permutation_mcse",
            "p_bootstrap",
            "p_bootstrap_mcse",
            "p_t",
            "p_mcnemar",
            "prob_superiority",
            "cohens_dz",
            "p_value",
            "distribution",
        ]
        ds = xr.Dataset({n: getattr(self, n) for n in names})
        ds["estimate"] = self.mean_diff
        for k, v in self.counts.items():
            ds[k] = v
        ds.attrs = {k: self.ci.attrs[k] for k in ("ci_prob", "ci_kind", "ci_detail") if k in self.ci.attrs}
        ds.attrs.update(self._plain_attrs())  # test, test_reason and the two agents
        return ds

    def to_frame(self) -> pd.DataFrame:
        """One row: the difference, its interval, the p-values, effect sizes and counts."""
        df = super().to_frame()
        for k, v in self.counts.items():
            df[k] = v
        df["test"] = self.test
        df["ci_detail"] = self.ci.attrs.get("ci_detail", "")  # which interval ``ci`` is, in words
        return df

    def _repr_lines(self) -> list[str]:
        lines = super()._repr_lines() + self._bootstrap_line()
        if self.test:
            lines.append(f"  p_value {float(self.p_value):.3g} (p_{self.test}, as compare_agents would choose: "
                         f"{self.test_reason})")
        return lines + self._disagree_lines()

    def _bootstrap_line(self) -> list[str]:
        """The repr's line for ``ci_bootstrap`` where ``ci`` is another interval (the t)."""
        cb = self.ci_bootstrap
        if "ci_bound" not in cb.dims or cb.attrs.get("ci_kind") == self.ci.attrs.get("ci_kind"):
            return []
        import textwrap

        lo, hi = (float(v) for v in np.asarray(cb.values, dtype=float))
        what = str(self.ci.attrs.get("ci_detail") or interval_label(self.ci)).split(";")[0]
        text = f"ci is the {what}; ci_bootstrap [{lo:.4g}, {hi:.4g}] ({interval_label(cb)})"
        return textwrap.wrap(text, 100, initial_indent="  ", subsequent_indent="    ")

    def _disagree_lines(self) -> list[str]:
        """The repr's note where the interval and ``p_value`` reach different verdicts at ``1 - ci_prob``.

        The rule and its words are the ones the report and ``hierbench compare`` mark a pair
        with (``ci_p_disagree``, ``disagree_label``, ``disagree_way``).
        """
        import textwrap

        prob = self.ci.attrs.get("ci_prob")
        if not self.test or prob is None:
            return []
        alpha = 1 - float(prob)
        lo, hi = (float(v) for v in np.asarray(self.ci.values, dtype=float))
        if not ci_p_disagree(lo, hi, float(self.p_value), alpha):
            return []
        text = (f"note: {disagree_label(alpha)}: {disagree_way(lo, hi, alpha)}. The {interval_label(self.ci)} "
                f"interval and p_{self.test} are different procedures, so near the level they can reach "
                "different verdicts; the report and `hierbench compare` mark such a pair the same way.")
        return textwrap.wrap(text, 100, initial_indent="  ", subsequent_indent="    ")


# --------------------------------------------------------------------------- interval against p-value


def ci_p_disagree(lower, upper, p, alpha: float) -> np.ndarray:
    """Whether a pair's interval and its own p-value reach different verdicts at ``alpha``.

    The interval excludes 0 (``lower > 0`` or ``upper < 0``) exactly when it "separates"
    the pair; the test separates it when ``p < alpha``. A pair whose interval or p-value is
    undefined (NaN) is not marked. The one rule for the :class:`PairedTestResult` repr, and
    for the pair tables of the report and ``hierbench compare``.
    """
    lo, hi, pv = (np.asarray(x, float) for x in (lower, upper, p))
    defined = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(pv)
    return defined & (((lo > 0) | (hi < 0)) != (pv < alpha))


def disagree_label(alpha: float) -> str:
    """The name of a flag of ``ci_p_disagree`` at ``alpha`` (the pair tables' column)."""
    return f"per-pair CI and p disagree (at {alpha:g})"


def disagree_way(lower: float, upper: float, alpha: float) -> str:
    """Which way a pair that ``ci_p_disagree`` flags disagrees, in the pair tables' words."""
    return "CI excludes 0 only" if lower > 0 or upper < 0 else f"p < {alpha:g} only"


def _warn_undefined(out: dict[str, float], label: str) -> None:
    bad = [k for k in ("p_t", "cohens_dz", "p_mcnemar") if not np.isfinite(out[k])]
    if bad:
        warn_user(
            f"{label}: {', '.join(bad)} undefined (no spread in the per-task differences, "
            "fewer than 2 tasks, or no discordant tasks for McNemar); reported as NaN",
            UndefinedTestWarning,
        )


def _check_counts(n_resamples, n_permutations) -> None:
    for name, v in (("n_resamples", n_resamples), ("n_permutations", n_permutations)):
        if name == "n_permutations" and v is None:
            continue
        if isinstance(v, (bool, np.bool_)) or int(v) != v or v < 1:
            raise ValueError(f"`{name}` must be a positive integer; got {v!r}")


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
    prob: float, n_resamples: int, method: str, clustered: bool, gen: np.random.Generator,
) -> tuple[xr.DataArray, xr.DataArray]:
    """The paired task (cluster) bootstrap interval of ``a - b`` and its distribution.

    ``method`` is :func:`paired_test`'s: ``"bca"`` gives the BCa interval, else the percentile.
    Its zero width is warned only where it is ``ci`` (``_per_pair_kind``), as in :func:`compare_agents`.
    """
    pair = xr.concat(
        [a.expand_dims(agent=["a"]), b.expand_dims(agent=["b"])],
        dim="agent",
        join="exact",
        coords="minimal",  # task coords (e.g. cluster) are shared; take them once
        compat="override",
    )
    if run_dim not in pair.dims:
        pair = pair.expand_dims({run_dim: [0]}, axis=-1)
    with warnings.catch_warnings():
        if _per_pair_kind(method, "clusters" if clustered else "tasks") == "t":
            warnings.simplefilter("ignore", ZeroWidthIntervalWarning)
        boot = bootstrap_ci(pair, pairs=[("a", "b")], n_resamples=n_resamples, prob=prob,
                            method="bca" if method == "bca" else "percentile", cluster=cluster,
                            run_dim=run_dim, task_dim=dim, rng=gen)  # fmt: skip
    return boot.ci.isel(pair=0, drop=True), boot.distribution.isel(pair=0, drop=True)


def _recommended(flip: dict, n_units: int, unit: str, alpha: float) -> tuple[str, str]:
    """The test ``compare_agents`` would use for this one pair, and why; warn if the sign flips cannot pass.

    The sign-flip p-value cannot go below ``2^(1 - k)`` over the ``k`` units with a
    difference (exact) or ``1 / (B + 1)`` (Monte Carlo): at or above ``alpha`` it cannot call the two
    different, and :class:`PValueResolutionWarning` says so, naming the p-value to read.
    """
    test, reason = auto_test(np.array([n_units]), need=1, alpha=alpha, unit=unit)
    exact, k = bool(flip["exact"][0]), int(flip["n_nonzero"][0])
    floor = 2.0 ** (1 - k) if exact else 1 / (flip["n_permutations"] + 1)
    note = resolution_note(
        np.array([floor]), np.array([not exact]), adjust="none", alpha=alpha, test="sign-flip",
        knob=("n_permutations", 1.0, ""),
        exact_why=f"an exact sign-flip p over the {k} {unit} with a difference is at least 2^(1 - {k}); "
        f"more {unit} with a difference lower it, no setting does",
    )
    if note:
        advice = "p_permutation" if test == "permutation" else "p_t, the paired t-test" + (
            " (CR2 cluster-robust, Bell-McCaffrey df)" if unit == "clusters" else "")
        warn_user(f"{note} The p-value compare_agents would use here is {advice}.", PValueResolutionWarning)
    return test, reason


def _pair_ci(
    out: dict, boot: xr.DataArray, method: str, clustered: bool, prob: float, a: xr.DataArray, b: xr.DataArray,
    labels: tuple[str, str],
) -> xr.DataArray:
    """The pair's ``ci`` by :func:`compare_agents`' rule and code (``_per_pair_ci``), warned if of zero width.

    Its t interval is kept to [-1, 1] where every score of ``a`` and ``b`` is in [0, 1], as there,
    and a zero width is warned as there, the pair named ``A - B`` (the bootstrap's then is not:
    ``_paired_bootstrap``).
    """
    unit_scores = _unit_range(np.concatenate([np.ravel(a.values), np.ravel(b.values)]).astype(float))
    mats = {k: np.asarray(out[k], dtype=float) for k in ("mean_diff", "se", "df")}
    ci = _per_pair_ci(method, "clusters" if clustered else "tasks", mats, boot, prob, unit_scores, dims=())
    if ci.attrs["ci_kind"] == "t" and float(out["se"]) == 0.0:
        unit = "cluster's mean difference" if clustered else "task's difference"
        pair = {"pair": [f"{labels[0]} - {labels[1]}"]}
        why = xr.DataArray([f"every {unit} is {float(out['mean_diff']) + 0.0:g}: its standard error is 0"],
                           dims="pair", coords=pair)  # fmt: skip
        lo, hi = (xr.DataArray([float(v)], dims="pair", coords=pair) for v in ci.values)
        make_interval(lo, hi, prob=prob, kind="t", detail=ci.attrs.get("ci_detail"), zero_width_why=why)
    return ci


def _paired_result(
    out: dict, flip: dict, ci, dist, counts: dict, choice: tuple[str, str], labels: tuple[str, str],
    ci_bootstrap: xr.DataArray,
) -> PairedTestResult:
    scalar = {k: xr.DataArray(v) for k, v in out.items() if k != "df"}
    p_boot, p_boot_mcse = _bootstrap_p(dist.values)
    p_perm = float(flip["p"][0])
    return PairedTestResult(
        mean_diff=scalar["mean_diff"],
        se=scalar["se"],
        ci=ci,
        p_permutation=xr.DataArray(float(flip["p"][0])),
        p_permutation_mcse=xr.DataArray(float(flip["mcse"][0])),
        p_bootstrap=xr.DataArray(p_boot),
        p_bootstrap_mcse=xr.DataArray(p_boot_mcse),
        p_t=scalar["p_t"],
        p_mcnemar=scalar["p_mcnemar"],
        prob_superiority=scalar["prob_superiority"],
        cohens_dz=scalar["cohens_dz"],
        distribution=dist,
        counts=counts,
        p_value=xr.DataArray(p_perm if choice[0] == "permutation" else float(out["p_t"])),
        test=choice[0],
        test_reason=choice[1],
        agent_a=labels[0],
        agent_b=labels[1],
        ci_bootstrap=ci_bootstrap,
    )


@renamed_kwargs(dim="task_dim")
@fill_doc
def paired_test(
    a: xr.DataArray,
    b: xr.DataArray,
    *,
    task_dim: str = "task",
    run_dim: str = "run",
    cluster: str | None = "auto",
    prob: float = DEFAULT_PROB,
    n_resamples: int = 9999,
    n_permutations: int | None = None,
    method: Literal["t", "percentile", "bca"] = "t",
    rng: None | int | np.random.Generator = None,
) -> PairedTestResult:
    """Compare two agents on the same tasks, the task (or cluster) as the unit.

    Parameters
    ----------
    a, b : xarray.DataArray
        Scores of agent A and agent B with dims ``(dim[, run_dim])``, same task labels; runs are
        averaged within a task first (NaN = not run). A task either agent never ran is excluded, counted.
    task_dim, run_dim : str
        Task and run dims.
    cluster : str, None or "auto"
        Task coord of clusters (repository, task family). ``"auto"`` uses a ``cluster`` coord when
        present. With clusters, the sign flips act on cluster sums of differences, the bootstrap
        draws whole clusters and the t-test uses the CR2 cluster-robust SE with Bell-McCaffrey df.
    prob : float
        Probability of the intervals.
    %(n_resamples)s
    n_permutations : int or None
        Random sign patterns for a sign-flip p-value that cannot be computed exactly; None (default)
        draws 9,999. The p-value is exact, with no draws, by enumeration up to 14 non-zero units and
        by lattice convolution whenever the differences lie on a grid (binary scores).
    method : {"t", "percentile", "bca"}
        ``ci`` by :func:`compare_agents`' rule (its numbers for this pair): ``"t"`` the paired t
        (``T - 1`` df; over clusters the CR2 t, which a bootstrap ``method`` does not replace); at
        95% over 6 / 10 / 30 tasks the percentile bootstrap held 0.84 / 0.90 / 0.94, the t 0.95
        (``benchmarks/bench_pair_interval.py``). A bootstrap ``method`` is ``ci_bootstrap``'s
        kind (percentile with ``"t"``); the bootstrap p-value inverts the percentile interval.
    %(rng)s

    Returns
    -------
    PairedTestResult

    Notes
    -----
    McNemar's test uses each task's majority outcome: per-task mean score above 1/2 is a success,
    below 1/2 a failure; a mean of exactly 1/2 has no majority and the task is left out of McNemar
    (counted in ``counts["n_mcnemar_ties"]``). With one binary run per task it is the usual McNemar.

    Examples
    --------
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=2, n_tasks=50, n_runs=3, rng=0)
    >>> res = paired_test(ds.score.sel(agent="agent_00"), ds.score.sel(agent="agent_01"),
    ...                   n_resamples=999, n_permutations=999, rng=1)
    >>> res.ci.dims, res.ci.attrs["ci_kind"], res.ci_bootstrap.attrs["ci_kind"]
    (('ci_bound',), 't', 'percentile')
    >>> 0 < float(res.p_permutation) <= 1
    True
    """
    prob = check_prob(prob)
    check_choice(method, "method", PAIR_METHODS)
    _check_counts(n_resamples, n_permutations)
    gen = as_rng(rng)
    va, vb, codes = _paired_inputs(a, b, task_dim, run_dim, cluster)
    both = np.isfinite(va) & np.isfinite(vb)
    if both.sum() < 2:
        raise ValueError(
            f"`a` and `b` must share at least 2 tasks that both ran; got {int(both.sum())}"
        )
    d = va[both] - vb[both]
    units = d if codes is None else np.bincount(codes[both], weights=d)
    out = _task_stats(d, None if codes is None else codes[both])
    out["p_mcnemar"], n10, n01, n_tie = _mcnemar(va[both], vb[both])
    flip = sign_flip_pvalues(
        units[:, None], gen, n_permutations=n_permutations, n_tests=1, alpha=1 - prob
    )
    _warn_undefined(out, "paired_test")
    boot, dist = _paired_bootstrap(
        a, b, dim=task_dim, run_dim=run_dim, cluster=cluster, prob=prob,
        n_resamples=int(n_resamples), method=method, clustered=codes is not None, gen=gen,
    )
    labels = (input_label(a, b, "a"), input_label(b, a, "b"))
    ci = _pair_ci(out, boot, method, codes is not None, prob, a, b, labels)
    counts = {
        "n_tasks": int(both.sum()),
        "n_excluded": int((~both).sum()),
        "n_tasks_nonzero": int(np.count_nonzero(d)),
        **({} if codes is None else {"n_clusters_nonzero": int(flip["n_nonzero"][0])}),
        "exact": bool(flip["exact"][0]),
        "n_permutations": int(flip["n_permutations"]),
        "n_a_only": n10,
        "n_b_only": n01,
        "n_mcnemar_ties": n_tie,
    }
    n_units = int(both.sum()) if codes is None else int(np.unique(codes[both]).size)
    choice = _recommended(flip, n_units, "tasks" if codes is None else "clusters", 1 - prob)
    return _paired_result(out, flip, ci, dist, counts, choice, labels, boot)
