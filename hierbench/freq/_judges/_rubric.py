"""Rubric scores (1-5 helpfulness, 0-10 MT-Bench style): mean with interval, distribution, the bottom share.

A mean rubric score is a mean, so it gets a task-bootstrap interval like any
other; but a mean of 3.5 can be "all 3s and 4s" or "half 1s, half 5s", so the
distribution over the scale and the share at the bottom of it come with it.

Rubric means are only comparable under one judge setup (judge model, prompt,
scale, rubric version): a changed judge shifts the scale. Record the setup in
the data's attrs (dataset attrs or agent coords whose names start with
``judge`` or ``rubric``, e.g. ``judge_model``, ``judge_prompt_sha``,
``rubric_version``); :func:`compare_rubric_means` refuses to compare means
whose recorded setups differ, or that record none.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import HierbenchWarning
from ..._base import Result
from ..._base import ZeroWidthIntervalWarning
from ..._base import as_rng
from ..._base import check_number
from ..._base import check_prob
from ..._base import cluster_codes
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from .._inputs import data_variable
from .._inputs import numeric_values
from .._resampling import BootstrapResult
from .._resampling import bootstrap_ci
from ._resample import _edge_bounds

__all__ = [
    "JudgeSetupError",
    "RubricResult",
    "check_same_judge",
    "compare_rubric_means",
    "rubric_summary",
]

JUDGE_PREFIXES = ("judge", "rubric")


class JudgeSetupError(HierbenchError):
    """Rubric scores from different (or unrecorded) judge setups were about to be compared."""


@dataclass(frozen=True, repr=False)
class RubricResult(Result):
    """Result of :func:`rubric_summary`.

    Each agent's scores three ways: the mean with its interval, the share at
    each level of the scale, and the share at the bottom of it.

    Attributes
    ----------
    estimate : DataArray (agent)
        Mean rubric score (mean over tasks of each task's mean over runs).
    ci : DataArray (agent, ci_bound)
        Task-bootstrap interval of the mean.
    distribution : DataArray (agent, level)
        Share of runs at each scale level (each task weighs the same).
    bottom_share : DataArray (agent)
        Share scored at or below ``bottom``: the mean over tasks of each
        task's share of runs there (each task weighs the same, as in
        ``distribution``). Where tasks have different numbers of runs this is
        not the share of all runs.
    bottom_share_ci : DataArray (agent, ci_bound)
        Task-bootstrap interval of ``bottom_share``; where the share is 0 or 1 (no
        run at the bottom, or every run there) a resampling interval has no width,
        and the interval is the bound for the mean of the n tasks' shares (G
        clusters' with clusters), ``[0, 1 - a^(1/n)]`` at 0 and ``[a^(1/n), 1]`` at
        1, ``a = (1 - prob) / 2``: Clopper-Pearson's where each task has one run.
        Its ``ci_kind`` is then ``"bounded-mean"`` or ``"mixed"``.
    bottom_share_ci_kind : DataArray (agent)
        Each agent's kind of ``bottom_share_ci``: the bootstrap's or ``"bounded-mean"``.
    bottom_share_ci_flag : DataArray (agent)
        ``""``, or the bound that replaced the bootstrap interval of ``bottom_share``.
    judge : dict
        The judge setup recorded in the data.
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    distribution: xr.DataArray
    bottom_share: xr.DataArray
    bottom_share_ci: xr.DataArray
    judge: dict = field(default_factory=dict)
    bottom_share_ci_kind: xr.DataArray | None = None
    bottom_share_ci_flag: xr.DataArray | None = None

    _estimate_label = "mean rubric grade (each task's mean over runs, tasks weighed equally)"

    def _cell_notes(self) -> xr.DataArray | None:
        """Each agent's bottom share with its interval (and the bound's flag), after its line."""
        if self.bottom_share.ndim == 0:  # no agent dim: one line, its note alone
            lo, hi = (float(x) for x in self.bottom_share_ci.values)
            flag = "" if self.bottom_share_ci_flag is None else str(self.bottom_share_ci_flag.item())
            return xr.DataArray(self._bottom_note(float(self.bottom_share), lo, hi, flag))
        lo, hi = (self.bottom_share_ci.sel(ci_bound=b, drop=True) for b in ("lower", "upper"))
        flag = self.bottom_share_ci_flag if self.bottom_share_ci_flag is not None else xr.full_like(lo, "", dtype=object)
        notes = [self._bottom_note(float(v), float(a), float(b), str(f)) for v, a, b, f in
                 zip(self.bottom_share.values, lo.values, hi.values, flag.values, strict=True)]
        return self.bottom_share.copy(data=np.array(notes, dtype=object))

    def _bottom_note(self, v: float, lo: float, hi: float, flag: str) -> str:
        """``share <= 1: 0 [0, 0.284]`` and the flag, if any."""
        at = self.bottom_share.attrs.get("bottom")
        head = "bottom share" if at is None else f"share <= {at:g}"
        return f"{head}: {v:.3g} [{lo:.3g}, {hi:.3g}]" + (f"; {flag}" if flag else "")


def judge_setup(
    data: xr.Dataset | xr.DataArray, keys: Sequence[str] | None = None
) -> dict[str, Any]:
    """Return the judge setup recorded in ``data``: dataset attrs and agent coords named ``judge*`` / ``rubric*``."""
    out: dict[str, Any] = {}
    for k, v in data.attrs.items():
        if (keys is None and str(k).startswith(JUDGE_PREFIXES)) or (keys is not None and k in keys):
            out[str(k)] = v
    for c in data.coords:
        if (keys is None and str(c).startswith(JUDGE_PREFIXES)) or (keys is not None and c in keys):
            vals = sorted({str(x) for x in np.atleast_1d(data.coords[c].values)})
            out[str(c)] = vals[0] if len(vals) == 1 else tuple(vals)
    return out


def check_same_judge(
    *datasets: xr.Dataset | xr.DataArray,
    keys: Sequence[str] | None = None,
    allow_unrecorded: bool = False,
) -> dict[str, Any]:
    """Refuse to compare rubric scores made under different judge setups.

    Parameters
    ----------
    *datasets : Dataset or DataArray
        One or several; within one, an agent coord such as ``judge_model``
        must hold a single value.
    keys : sequence of str, optional
        The attrs / coords that define the setup (default: every name starting
        with ``judge`` or ``rubric``).
    allow_unrecorded : bool
        Accept data that record no judge setup at all (at your own risk).

    Returns
    -------
    dict
        The shared setup.

    Raises
    ------
    JudgeSetupError
        Naming the keys whose values differ (or are missing on one side).

    Examples
    --------
    >>> import xarray as xr
    >>> a = xr.Dataset(attrs={"judge_model": "gpt-4o"})
    >>> b = xr.Dataset(attrs={"judge_model": "claude"})
    >>> check_same_judge(a, a)
    {'judge_model': 'gpt-4o'}
    >>> check_same_judge(a, b)
    Traceback (most recent call last):
    ...
    hierbench.freq._judges._rubric.JudgeSetupError: rubric scores come from different judge setups: judge_model differs (data 0: 'gpt-4o', data 1: 'claude'); rubric means under different judges are not comparable
    """
    if not datasets:
        raise ValueError("`datasets`: give at least one dataset")
    bad = [type(d).__name__ for d in datasets if not isinstance(d, (xr.Dataset, xr.DataArray))]
    if bad:
        raise TypeError(f"`datasets` must be xarray Datasets or DataArrays; got {bad}")
    setups = [judge_setup(d, keys) for d in datasets]
    for i, s in enumerate(setups):
        multi = {k: v for k, v in s.items() if isinstance(v, tuple)}
        if multi:
            raise JudgeSetupError(
                f"data {i} mixes judge setups across agents: {multi}; rubric means under different "
                "judges are not comparable"
            )
    if not any(setups):
        if allow_unrecorded:
            return {}
        raise JudgeSetupError(
            "the data record no judge setup (attrs or agent coords named judge* / rubric*, e.g. "
            "attrs['judge_model'], attrs['rubric_version']): record it, or pass allow_unrecorded=True"
        )
    all_keys = sorted(set().union(*setups))
    diff = []
    for k in all_keys:
        vals = [s.get(k, "<not recorded>") for s in setups]
        if any(str(v) != str(vals[0]) for v in vals):
            diff.append(
                f"{k} differs (" + ", ".join(f"data {i}: {v!r}" for i, v in enumerate(vals)) + ")"
            )
    if diff:
        raise JudgeSetupError(
            "rubric scores come from different judge setups: "
            + "; ".join(diff)
            + "; rubric means under different judges are not comparable"
        )
    return setups[0]


@renamed_kwargs(dim="run_dim")
def rubric_summary(
    data: xr.Dataset | xr.DataArray,
    *,
    var: str = "score",
    levels: Sequence[float] = (1, 2, 3, 4, 5),
    bottom: float | None = None,
    prob: float = DEFAULT_PROB,
    n_resamples: int = 2000,
    cluster: str | None = "auto",
    rng: None | int | np.random.Generator = None,
    run_dim: str = "run",
    task_dim: str = "task",
    agent_dim: str = "agent",
) -> RubricResult:
    """Mean rubric score with a task-bootstrap interval, the distribution over the scale, the bottom share.

    Parameters
    ----------
    data : Dataset or DataArray
        Rubric scores over ``(agent, task, run)``; NaN = not scored.
    var : str
        The variable of a Dataset.
    levels : sequence of numbers
        The scale's levels; any other value is refused.
    bottom : number, optional
        Scores ``<= bottom`` count as "at the bottom" (default: the lowest level;
        e.g. ``bottom=2`` for "% rated 1 or 2").
    prob, n_resamples, cluster, rng, run_dim, task_dim, agent_dim
        As in :func:`hierbench.freq.bootstrap_ci`.

    Returns
    -------
    RubricResult

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> s = xr.DataArray(np.array([[3, 4, 3, 4, 3, 4], [1, 5, 1, 5, 1, 5.0]])[..., None],
    ...                  dims=("agent", "task", "run"), coords={"agent": ["steady", "split"]})
    >>> r = rubric_summary(s, bottom=2, n_resamples=500, rng=0)
    >>> r.estimate.values.tolist(), r.bottom_share.values.tolist()
    ([3.5, 3.0], [0.0, 0.5])
    """
    prob = check_prob(prob)
    da = data_variable(data, var)
    lv = np.asarray(levels, dtype=float)
    if lv.ndim != 1 or lv.size < 2 or not np.all(np.diff(lv) > 0):
        raise ValueError(f"`levels` must be at least 2 increasing numbers; got {levels!r}")
    vals = numeric_values(da, "data" if var is None else f"data.{var}")
    fin = np.isfinite(vals)
    off = fin & ~np.isin(vals, lv)
    if off.any():
        raise HierbenchError(
            f"`data`: {int(off.sum())} scores are not levels of the scale {lv.tolist()}, e.g. "
            f"{sorted(set(vals[off].tolist()))[:5]}"
        )
    b = lv[0] if bottom is None else check_number(bottom, "bottom", low=lv[0], high=lv[-1])
    kw = dict(
        prob=prob,
        n_resamples=n_resamples,
        cluster=cluster,
        run_dim=run_dim,
        task_dim=task_dim,
        agent_dim=agent_dim,
    )
    # the same seed for both bootstraps: the mean and the bottom share see the same task resamples
    seed = int(as_rng(rng).integers(2**63))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        mean = bootstrap_ci(da, "mean", rng=seed, **kw)
    low = (da <= b).astype(float).where(da.notnull())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        low_res: BootstrapResult = bootstrap_ci(low, "mean", rng=seed, **kw)
    # handed on as they came, once (a few-clusters warning is the same for both); the bottom share's
    # zero width is said of the bottom share (_bottom_interval), not as if of the means
    first = [(str(w.message), w.category) for w in said]
    more = [(str(w.message), w.category) for w in seen if not issubclass(w.category, ZeroWidthIntervalWarning)]
    for msg, cat in first + [m for m in more if m not in first]:
        warn_user(msg, cat)
    # distribution: share of each level, each task weighing the same
    shares = []
    for level in lv:
        ind = (da == level).astype(float).where(da.notnull())
        shares.append(ind.mean(run_dim).mean(task_dim))
    dist = xr.concat(shares, dim="level").assign_coords(level=lv).transpose(..., "level")
    bs_ci, bs_kind, bs_flag = _bottom_interval(low_res, low, b, cluster, prob, (run_dim, task_dim))
    judge = judge_setup(data)
    _warn_mixed_judges(data, judge, agent_dim)
    return RubricResult(
        estimate=mean.estimate.rename("rubric_mean"),
        ci=mean.ci,
        distribution=dist,
        bottom_share=low_res.estimate.rename("bottom_share").assign_attrs(bottom=float(b)),
        bottom_share_ci=bs_ci,
        judge=judge,
        bottom_share_ci_kind=bs_kind,
        bottom_share_ci_flag=bs_flag,
    )


def _bottom_interval(low_res: BootstrapResult, low: xr.DataArray, b: float, cluster, prob: float, dims):
    """The bottom share's interval, its kind and flag per agent: the bootstrap's, or a bound where it has no width.

    At a share of 0 or 1 no resample can differ: the interval is ``_edge_bounds``' over the
    agent's n tasks (G clusters) with a score, the bound for the mean of n values in [0, 1].
    Where the bootstrap interval still has no width (every task, or cluster, has one share
    strictly between), a ``ZeroWidthIntervalWarning`` says so of the bottom share, naming
    the agents.
    """
    run_dim, task_dim = dims
    est, ci = low_res.estimate, low_res.ci
    lo, hi = (np.array(ci.sel(ci_bound=x, drop=True).values, dtype=float) for x in ("lower", "upper"))
    v = np.asarray(est.values, dtype=float)
    present = low.notnull().any(run_dim).transpose(..., task_dim)
    clustered = low_res.attrs.get("resample_unit") == "cluster"
    unit = "cluster" if clustered else "task"
    if clustered:
        with warnings.catch_warnings():  # a task without a cluster label: said by the bootstrap already
            warnings.simplefilter("ignore")
            codes = cluster_codes(low, cluster, dim=task_dim)[0]
        rows = np.asarray(present.values, dtype=bool).reshape(-1, present.sizes[task_dim])
        n = np.array([np.unique(codes[r]).size for r in rows]).reshape(v.shape)
    else:
        n = np.asarray(present.sum(task_dim).values)
    edge = np.isfinite(v) & ((v == 0) | (v == 1)) & (n > 0)
    e_lo, e_hi = _edge_bounds(v == 1, np.maximum(n, 1), prob)
    lo, hi = np.where(edge, e_lo, lo), np.where(edge, e_hi, hi)
    boot = ci.attrs["ci_kind"]
    kind_of = est.copy(data=np.where(edge, "bounded-mean", boot).astype(object)).rename("ci_kind")
    flag = np.array([f"bound over {k} {unit}s, each one's share {x:g}" if e else ""
                     for e, k, x in zip(edge.ravel(), n.ravel(), v.ravel(), strict=True)], dtype=object).reshape(v.shape)
    kinds = sorted(set(np.asarray(kind_of.values, dtype=object).ravel().tolist()))
    detail = f"{ci.attrs.get('ci_detail', '')}; share of scores <= {b:g}"
    if edge.any():
        detail += (f"; where the share is 0 or 1 no resample can differ, and the interval is instead the bound for "
                   f"the mean of the n {unit}s' shares ('bounded-mean'), [0, 1 - a^(1/n)] at 0 and [a^(1/n), 1] at "
                   "1, a = (1 - prob) / 2 (Clopper-Pearson's where each task has one run)")
    out = make_interval(lo, hi, prob=prob, kind=kinds[0] if len(kinds) == 1 else "mixed", detail=detail,
                        template=est, name=ci.name, warn_zero_width=False)
    out.attrs = {**ci.attrs, **out.attrs}
    _warn_flat_share(out, edge, f"{100 * prob:.4g}% {boot}", b, unit)
    return out, kind_of, est.copy(data=flag).rename("ci_flag")


def _warn_flat_share(ci: xr.DataArray, edge: np.ndarray, label: str, b: float, unit: str) -> None:
    """Warn, of the bottom share, where its bootstrap interval has zero width and no bound replaced it."""
    lo, hi = (np.asarray(ci.sel(ci_bound=x, drop=True).values, dtype=float) for x in ("lower", "upper"))
    flat = np.isfinite(lo) & (lo == hi) & ~edge
    if not flat.any():
        return
    where = ""
    if flat.ndim:
        names = [str(a) for a in ci[ci.dims[0]].values[flat]] if ci.dims[0] in ci.coords else [str(i) for i in np.flatnonzero(flat)]
        where = f" for {len(names)} of {flat.size} agents ({', '.join(names[:10])}{', ...' if len(names) > 10 else ''})"
    warn_user(
        f"the bottom share's (share of scores <= {b:g}) {label} interval has zero width{where}: every "
        f"{unit} has the same share there, so no resample can differ. Zero width at a level below one measures no "
        "uncertainty; it is not a statement of certainty.",
        ZeroWidthIntervalWarning,
    )


def _warn_mixed_judges(data: xr.Dataset | xr.DataArray, setup: dict, agent_dim: str) -> None:
    """Warn where the agents summarised side by side were graded under different judge setups, naming them."""
    parts = []
    for key, value in setup.items():
        if not isinstance(value, tuple):
            continue
        coord = data.coords[key] if key in data.coords else None
        if coord is not None and coord.dims == (agent_dim,):
            groups: dict[str, list[str]] = {}
            for agent, val in zip(data[agent_dim].values, coord.values, strict=True):
                groups.setdefault(str(val), []).append(str(agent))
            parts.append(f"{key} " + "; ".join(f"{val!r} for {', '.join(a)}" for val, a in sorted(groups.items())))
        else:
            where = f"along {coord.dims}" if coord is not None else "in the attrs"
            parts.append(f"{key} takes the values {list(value)} {where}")
    if parts:
        warn_user(
            "the agents were graded under different judge setups: " + "; ".join(parts) + ". Rubric means under "
            "different judges are not comparable side by side (compare_rubric_means refuses them): summarise "
            "each setup's agents apart, or grade them all under one",
            HierbenchWarning,
        )


def _check_task_labels(arrays: list[xr.DataArray], agent_dim: str) -> None:
    """Datasets joined along ``agent_dim`` pair their tasks by label: refuse unlabelled dims of different sizes.

    Without labels the join could only pair tasks by position, which pairs unrelated tasks
    once the datasets hold different ones.
    """
    if len(arrays) < 2:
        return
    for dim in {d for a in arrays for d in a.dims if d != agent_dim}:
        sizes = [a.sizes.get(dim) for a in arrays]
        if len(set(sizes)) > 1 and any(dim not in a.indexes for a in arrays):
            raise HierbenchError(
                f"`data`: the datasets hold {sizes} entries along {dim!r} and at least one has no {dim!r} "
                f"labels, so their {dim}s cannot be paired; give each dataset its {dim} labels (a coord "
                f"{dim!r}) and they are paired by label"
            )


def compare_rubric_means(
    data: xr.Dataset | xr.DataArray | Sequence[xr.Dataset | xr.DataArray],
    pairs: Sequence[tuple[str, str]] | str = "all",
    *,
    var: str = "score",
    keys: Sequence[str] | None = None,
    allow_unrecorded: bool = False,
    prob: float = DEFAULT_PROB,
    n_resamples: int = 2000,
    cluster: str | None = "auto",
    rng: None | int | np.random.Generator = None,
    agent_dim: str = "agent",
) -> BootstrapResult:
    """Paired differences of rubric means between agents, after checking they share one judge setup.

    Parameters
    ----------
    data : Dataset, DataArray or a sequence of them
        Several datasets (e.g. one per agent, judged separately) are checked
        with :func:`check_same_judge` and then joined along ``agent``.
    pairs : sequence of (agent_a, agent_b) or "all"
    var, keys, allow_unrecorded
        See :func:`check_same_judge`.
    prob, n_resamples, cluster, rng
        As in :func:`hierbench.freq.bootstrap_ci` (paired task bootstrap).

    Returns
    -------
    BootstrapResult
        Dim ``pair``.

    Raises
    ------
    JudgeSetupError
        When the judge setups differ or are not recorded.
    """
    items = list(data) if isinstance(data, (list, tuple)) else [data]
    check_same_judge(*items, keys=keys, allow_unrecorded=allow_unrecorded)
    arrays = [data_variable(d, var) for d in items]
    _check_task_labels(arrays, agent_dim)
    da = arrays[0] if len(arrays) == 1 else xr.concat(arrays, dim=agent_dim, join="outer")
    return bootstrap_ci(
        da,
        "mean",
        pairs=pairs,
        prob=prob,
        n_resamples=n_resamples,
        cluster=cluster,
        rng=rng,
        agent_dim=agent_dim,
    )
