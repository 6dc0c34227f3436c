"""Budgeted designs: planners, unbiased estimates and design-based intervals.

Two designs buy labels from a fixed cohort of ``M`` tasks x ``L`` planned runs
("slots") under a hard budget of ``B`` labels:

design U (``"uniform"``)
    ``m = min(M L, B)`` slots uniformly without replacement; the exact
    hypergeometric interval.
design J (``"joint"``)
    one uniform run in every task, plus a second distinct run in a uniform
    subset of ``t = B - M`` audited tasks; the disagreement-certificate
    interval, finite-sample valid and conservative (coverage at least the
    level, usually above it: ``ci_kind = "conservative"``).

The target is the cohort mean ``theta`` of all ``M L`` planned labels; the
only randomness is the design's, so coverage holds for every fixed cohort.

The intervals of :func:`budget_interval`, in full.

Design U (``method="exact"``): with ``s`` positives among ``m`` slots,
``s ~ Hypergeom(N, H, m)``; both tails are inverted at ``alpha / 2`` over
the integer range ``s <= H <= N - m + s``. Estimate ``s / m``.

Design J: estimate ``mean_i A_i`` (``A_i`` the mean of the one or two
labels of task ``i``), unbiased because every run of a task is equally
likely to be bought. Two intervals, each intersected with the feasible
range ``[P / N, 1 - Z / N]`` (``P``, ``Z``: positive and negative labels
bought):

``"split"``
    the spec's construction: a KL upper bound ``dbar_U`` on the mean pair
    disagreement from ``X`` at ``alpha / 2`` (Hoeffding 1963, Thm 4,
    sampling without replacement), then Bernstein with variance
    ``V_U = min(M/4, M dbar_U (L-1) / (2L))`` at ``alpha / 2``.
``"mixture"`` (default)
    one certificate for mean and disagreement together, no alpha split.
    For a tilt ``lam`` and penalty ``kappa`` let, for a task with ``h``
    positive runs, ``a_h = E exp(lam (Y - p))`` (one label) and
    ``b_h = E exp(lam (A - p) - kappa D)`` (two distinct labels, exact
    pair law). Given ``S`` the tasks are independent, so
    ``E exp(lam M (theta_hat - theta) - kappa X) = prod_i a_i *
    E_S prod_{i in S} (b_i / a_i)``; by Maclaurin's inequality the
    subset average is at most ``(mean_i b_i / a_i)^t``, and with
    ``log x <= x - 1`` the whole is at most
    ``exp(sum_i g_{h_i})``, ``g_h = log a_h + (t/M)(b_h / a_h - 1)``.
    ``kappa(lam)`` is the smallest penalty with ``g_h <= 0`` for every
    ``h`` (pure tasks give ``g = 0``), so the exponential is an
    e-value for every fixed cohort. A fixed mixture over a grid of
    tilts (weights set from ``M, L, t, alpha`` only) is again an
    e-value; Markov's inequality at ``2 / alpha`` per tail (the lower
    tail is the upper tail of the complemented cohort, ``h -> L - h``)
    gives coverage ``1 - alpha``. With ``t = 0`` a single tilt and the
    exact worst-case one-label MGF over ``h`` (a lattice Hoeffding
    bound) are used. That tilt (``kappa = 0``) stays in the family for
    ``t > 0``: the mean of two distinct labels is the conditional
    expectation of one of them given the pair, so ``b_h <= a_h`` (Jensen)
    and ``g_h <= log a_h``, within the Hoeffding bound. Its weight is fixed
    from ``(M, L, t, alpha)`` alone (``joint_family`` in ``_kernels``), so
    buying audit labels never widens the half-width at ``X = 0`` beyond
    the ``t = 0`` one, and with a few audited tasks (``t <= 3`` on the
    cohorts checked) not at any ``X``. The half-width depends on the data
    only through ``X``, so it is tabulated.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from typing import Literal

import numpy as np
import xarray as xr

from .._base import DEFAULT_PROB
from .._base import HierbenchWarning
from .._base import Result
from .._base import as_rng
from .._base import check_int
from .._base import check_prob
from .._base import field_alias
from .._base import make_interval
from .._base import warn_user
from .._base import wrap_repr
from .._docs import fill_doc
from . import _kernels as K
from ._show import few
from ._show import typed_few

__all__ = [
    "BudgetIntervalResult",
    "BudgetPlan",
    "BudgetWarning",
    "budget_interval",
    "plan_joint",
    "plan_uniform",
]

Design = Literal["uniform", "joint"]


def _coord(arg: int | Sequence, name: str) -> np.ndarray:
    if isinstance(arg, (int, np.integer)):
        if arg < 1:
            raise ValueError(f"`{name}` must be a positive integer or a sequence of labels; got {arg}")
        return np.arange(int(arg))
    vals = np.asarray(list(arg))
    if vals.size == 0:
        raise ValueError(f"`{name}` must not be empty")
    if len(set(vals.tolist())) != vals.size:
        raise ValueError(f"`{name}` labels must be unique; got {vals.size} labels, {len(set(vals.tolist()))} distinct")
    return vals


def _check_budget(budget: int) -> int:
    """``budget`` as an int: a whole, finite, non-negative number (NaN, inf and text refused by name)."""
    try:  # the package's integer rule, in the planner's words
        return check_int(budget, "budget", min=0)
    except (TypeError, ValueError):
        raise ValueError(f"`budget` must be a non-negative integer number of labels; got {budget!r}") from None


@dataclass(frozen=True, repr=False)
class BudgetPlan:
    """The slots a budgeted design buys, fixed before any label is seen.

    Attributes
    ----------
    design : {"uniform", "joint"}
    budget : int
        The hard budget ``B`` (labels).
    slots : xarray.DataArray
        bool ``(task, run)``: True where the design buys the label.
    audited : xarray.DataArray
        bool ``(task)``: the audit subset ``S`` of design J (all False for U).
    first_run : xarray.DataArray
        int ``(task)``: position of the first bought run of each task (J),
        -1 where none (U).
    """

    design: Design
    budget: int
    slots: xr.DataArray
    audited: xr.DataArray
    first_run: xr.DataArray

    @property
    def n_tasks(self) -> int:
        """``M``."""
        return int(self.slots.sizes["task"])

    @property
    def n_runs(self) -> int:
        """``L``, the planned runs per task."""
        return int(self.slots.sizes["run"])

    @property
    def n_labels(self) -> int:
        """Labels bought (never above ``budget``)."""
        return int(self.slots.sum())

    @property
    def n_audit(self) -> int:
        """``t``, the number of audited tasks (0 for U)."""
        return int(self.audited.sum())

    def __repr__(self) -> str:
        """The design, the budget and what it buys; the slots stay in the attributes (``to_dataset()``)."""
        M, L = self.n_tasks, self.n_runs
        lines = [
            f"BudgetPlan: design {'U' if self.design == 'uniform' else 'J'} ({self.design}), budget {self.budget} "
            f"labels, {self.n_labels} bought of {M} tasks x {L} runs = {M * L} slots",
            f"  tasks {few(self.slots['task'].values)}; runs {few(self.slots['run'].values)}",
        ]
        if self.design == "joint":
            lines.append(f"  one run in every task, a second in {self.n_audit} audited tasks")
        else:
            per_task = self.slots.values.sum(axis=1)
            lines.append(f"  runs bought per task: {per_task.min()} to {per_task.max()}, "
                         f"{int((per_task == 0).sum())} tasks with none")
        return "\n".join(lines)

    def to_dataset(self) -> xr.Dataset:
        """The plan as a Dataset (``slots``, ``audited``, ``first_run``; scalars in attrs)."""
        ds = xr.Dataset({"slots": self.slots, "audited": self.audited, "first_run": self.first_run})
        ds.attrs = {"design": self.design, "budget": self.budget, "n_labels": self.n_labels, "n_audit": self.n_audit}
        return ds


@fill_doc
def plan_uniform(
    tasks: int | Sequence,
    runs: int | Sequence,
    budget: int,
    *,
    rng: None | int | np.random.Generator = None,
) -> BudgetPlan:
    """Design U: ``min(M L, budget)`` task-run slots uniformly without replacement.

    Parameters
    ----------
    tasks, runs : int or sequence
        The number of tasks ``M`` and planned runs ``L``, or their labels.
    budget : int
        Hard budget ``B`` in labels.
    %(rng)s

    Returns
    -------
    BudgetPlan
        ``slots`` marks the ``min(M L, B)`` task-run labels to buy; no task
        is audited and ``first_run`` is -1. :func:`budget_interval` turns
        the bought labels into the estimate and exact interval.

    Examples
    --------
    >>> plan = plan_uniform(10, 4, 12, rng=0)
    >>> plan.n_labels
    12
    """
    task = _coord(tasks, "tasks")
    run = _coord(runs, "runs")
    B = _check_budget(budget)
    M, L = task.size, run.size
    gen = as_rng(rng)
    m = min(M * L, B)
    flat = np.zeros(M * L, bool)
    flat[gen.choice(M * L, size=m, replace=False)] = True
    slots = xr.DataArray(flat.reshape(M, L), dims=("task", "run"), coords={"task": task, "run": run})
    audited = xr.DataArray(np.zeros(M, bool), dims="task", coords={"task": task})
    first = xr.DataArray(np.full(M, -1), dims="task", coords={"task": task})
    return BudgetPlan("uniform", B, slots, audited, first)


@fill_doc
def plan_joint(
    tasks: int | Sequence,
    runs: int | Sequence,
    budget: int,
    *,
    rng: None | int | np.random.Generator = None,
) -> BudgetPlan:
    """Design J: one uniform run per task, a second distinct run in ``t = budget - M`` audited tasks.

    The audit subset is a uniform subset of exactly ``t`` tasks, drawn
    before any label is seen, independently of the first runs.

    When to prefer it: J's interval was narrower than design U's
    (:func:`plan_uniform`) only on a nearly pure cohort (synthetic, 90%
    of tasks all-pass or all-fail: 0.66-0.78 of U's mean width); on the
    11 real banks of notebook 05 (tau-bench airline and 10 METR agents,
    12-83 tasks) it was 1.16-3.5 times wider at every budget, though its
    point estimate had the lower error on 9 of the 10 banks where it is
    defined. Both intervals hold their level whatever the cohort. Adding
    audited tasks never widens J's interval when they show no disagreement,
    and a few (``t`` up to about 3) not at all: its half-width is then the
    ``t = 0`` one or slightly below; J's gain comes with larger ``t``.

    Parameters
    ----------
    tasks, runs : int or sequence
        ``M`` and ``L`` (or their labels).
    budget : int
        Hard budget ``B``; requires ``M <= B <= 2 M`` (``0 <= t <= M``) and
        ``L >= 2`` when ``B > M``.
    %(rng)s

    Returns
    -------
    BudgetPlan
        One run bought in every task (its position in ``first_run``) and a
        second in each ``audited`` task, ``budget`` labels in all; for
        :func:`budget_interval` and its disagreement-certificate intervals.

    Examples
    --------
    >>> plan = plan_joint(10, 4, 13, rng=0)
    >>> plan.n_labels, plan.n_audit
    (13, 3)
    """
    task = _coord(tasks, "tasks")
    run = _coord(runs, "runs")
    B = _check_budget(budget)
    M, L = task.size, run.size
    t = B - M
    if not 0 <= t <= M:
        raise ValueError(
            f"`budget` must satisfy n_tasks <= budget <= 2 * n_tasks for design J "
            f"(t = budget - n_tasks audited tasks, 0 <= t <= {M}); got budget={B}"
        )
    if t > 0 and L < 2:
        raise ValueError(f"design J with t = {t} > 0 audited tasks needs `runs` >= 2 planned runs; got {L}")
    gen = as_rng(rng)
    first = gen.integers(0, L, size=M)
    audited = np.zeros(M, bool)
    audited[gen.choice(M, size=t, replace=False)] = True
    second = (first + 1 + gen.integers(0, max(L - 1, 1), size=M)) % L
    slots = np.zeros((M, L), bool)
    slots[np.arange(M), first] = True
    slots[np.flatnonzero(audited), second[audited]] = True
    coords = {"task": task, "run": run}
    return BudgetPlan(
        "joint",
        B,
        xr.DataArray(slots, dims=("task", "run"), coords=coords),
        xr.DataArray(audited, dims="task", coords={"task": task}),
        xr.DataArray(first, dims="task", coords={"task": task}),
    )


@dataclass(frozen=True, repr=False)
class BudgetIntervalResult(Result):
    """Point estimate and design-based interval for the cohort mean.

    Attributes
    ----------
    estimate : xarray.DataArray
        The unbiased point estimate (extra dims of ``labels`` kept).
    ci : xarray.DataArray
        Trailing dim ``ci_bound = ["lower", "upper"]``; attrs ``ci_prob``,
        ``ci_kind``, ``ci_detail`` (which design and method). Also readable
        as ``interval``. Both kinds are finite-sample valid, coverage at least
        ``ci_prob`` for every fixed cohort: ``"exact"`` for design U (the
        hypergeometric inversion, discreteness its only slack) and
        ``"conservative"`` for design J (the disagreement certificate: a
        bound whose coverage is at least the level and usually well above
        it, not an exact-coverage interval).
    feasible : xarray.DataArray
        The deterministic range ``[P / N, 1 - Z / N]`` implied by the bought
        labels (``ci_bound``, ``ci_kind = "feasible"``, level 1).
    n_labels : xarray.DataArray
        Labels used.
    disagreements : xarray.DataArray
        ``X``, audited tasks whose two labels differ (design J; 0 for U).
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    feasible: xr.DataArray
    n_labels: xr.DataArray
    disagreements: xr.DataArray

    interval = field_alias("ci", "The design-based interval (``ci``).")

    def _repr_lines(self) -> list[str]:
        """The base lines, the first saying what the estimate is of: the cohort mean."""
        lines = super()._repr_lines()
        return [*wrap_repr([lines[0] + " of the cohort mean (every planned slot's label; from the labels bought)"]),
                *lines[1:]]  # fmt: skip

    def to_dataset(self) -> xr.Dataset:
        """All fields as one Dataset (the interval's attrs its own)."""
        ds = super().to_dataset()
        ds.attrs = {**self.ci.attrs, **ds.attrs}
        return ds


class _Cohorts:
    """Makes DataArrays over the cohorts (the dims of ``labels`` beyond task and run): ``da(values, name)``."""

    def __init__(self, labels: xr.DataArray, extra: list) -> None:
        self.dims = extra
        self.shape = tuple(labels.sizes[d] for d in extra)
        self.coords = {d: labels[d] for d in extra if d in labels.coords}

    def __call__(self, v: Any, name: str) -> xr.DataArray:
        return xr.DataArray(np.asarray(v).reshape(self.shape), dims=self.dims, coords=self.coords, name=name)

    def interval(self, lo: Any, hi: Any, **options: Any) -> xr.DataArray:
        """The interval over the cohorts with ends ``lo``, ``hi``; ``options`` as in ``make_interval``."""
        return make_interval(self(lo, "lower"), self(hi, "upper"), **options)


def joint_bounds(
    theta_hat: np.ndarray,
    X: np.ndarray,
    P: np.ndarray,
    Z: np.ndarray,
    M: int,
    L: int,
    t: int,
    prob: float,
    method: str = "mixture",
) -> tuple[np.ndarray, np.ndarray]:
    """Design-J interval from its sufficient statistics (private helper, vectorised)."""
    N = M * L
    rad = K.joint_radius_table(M, L, t, round(1.0 - prob, 12), method)[np.asarray(X, int)] / M
    lo = np.maximum(theta_hat - rad, np.asarray(P) / N)
    hi = np.minimum(theta_hat + rad, 1.0 - np.asarray(Z) / N)
    return lo, hi


def uniform_bounds(s: np.ndarray, N: int, m: int, prob: float) -> tuple[np.ndarray, np.ndarray]:
    """Design-U interval from the positives ``s`` among ``m`` of ``N`` slots (private helper)."""
    lo, hi = K.hypergeom_table(int(N), int(m), round(1.0 - prob, 12))
    s = np.asarray(s, int)
    return lo[s] / N, hi[s] / N


def budget_interval(
    plan: BudgetPlan,
    labels: xr.DataArray,
    *,
    prob: float = DEFAULT_PROB,
    method: Literal["auto", "exact", "mixture", "split"] = "auto",
) -> BudgetIntervalResult:
    """Unbiased estimate and honest interval for the cohort mean from the bought labels.

    ``labels`` holds the outcomes of the plan's slots; values elsewhere (a
    complete bank in a replay) are not used, since the guarantee holds only
    for the planned slots, and their number is reported in
    ``interval.attrs["n_labels_outside_plan_ignored"]``. Extra dims (e.g. ``agent``) are kept: one plan can
    serve several agents on the same cohort of slots.

    Design U: estimate ``s / m``, the exact hypergeometric interval.
    Design J: estimate ``mean_i A_i`` (``A_i`` the mean of the one or two
    labels of task ``i``), unbiased because every run of a task is equally
    likely to be bought, and a disagreement certificate (``"split"`` or
    ``"mixture"``, constructions in this module's docstring), intersected
    with the feasible range ``[P / N, 1 - Z / N]``. Its coverage is at least
    ``prob`` and usually well above it (``ci_kind = "conservative"``; design
    U's is ``"exact"``).

    Parameters
    ----------
    plan : BudgetPlan
    labels : xarray.DataArray
        0/1 outcomes with dims ``task`` and ``run`` (same coords as the plan)
        and any extra dims.
    prob : float
        Coverage level ``1 - alpha``.
    method : {"auto", "exact", "mixture", "split"}
        ``"auto"``: ``"exact"`` for U, ``"mixture"`` for J.

    Returns
    -------
    BudgetIntervalResult
        The unbiased estimate and its interval for each cell of the extra
        dims of ``labels``, beside the feasible range, the labels used and
        the audit's disagreements.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> bank = xr.DataArray(np.repeat([[1.0], [0.0]], [8, 12], axis=0) * np.ones(4), dims=("task", "run"))
    >>> plan = plan_joint(20, 4, 30, rng=1)  # 10 audited tasks
    >>> res = budget_interval(plan, bank, prob=0.9)
    >>> float(res.estimate), int(res.disagreements)  # a pure cohort: exact estimate, no disagreement
    (0.4, 0)
    >>> res.interval.dims
    ('ci_bound',)
    """
    if not isinstance(plan, BudgetPlan):
        raise TypeError(f"`plan` must be a BudgetPlan (from plan_uniform or plan_joint); got {type(plan).__name__}")
    prob = check_prob(prob)
    allowed = {"uniform": ("auto", "exact"), "joint": ("auto", "mixture", "split")}[plan.design]
    if method not in allowed:
        raise ValueError(f"`method` for design {plan.design!r} must be one of {allowed}; got {method!r}")
    lab, extra = _planned_labels(plan, labels)
    mask = plan.slots.values
    M, L = mask.shape
    m = int(mask.sum())
    n_ignored = int((~np.isnan(lab[:, ~mask])).sum())  # labels outside the plan: not used, counted
    P = lab[:, mask].sum(axis=1)
    Z = m - P
    if plan.design == "uniform":
        est, lo, hi, X, detail = _uniform_estimate(P, M * L, m, prob)
    else:
        est, lo, hi, X, detail = _joint_estimate(plan, lab, P, Z, prob, "mixture" if method == "auto" else method)
    da = _Cohorts(labels, extra)
    interval = da.interval(
        lo,
        hi,
        prob=prob,
        # U inverts the hypergeometric test exactly; J's certificate is valid (coverage >= prob) but
        # conservative: not an exact-coverage interval, so not named "exact"
        kind="exact" if plan.design == "uniform" else "conservative",
        detail=detail,
        warn_zero_width=False,  # a fully bought cohort is known exactly: zero width is right
    )
    interval.attrs.update({"design": plan.design, "budget": plan.budget, "n_labels_outside_plan_ignored": n_ignored})
    feasible = da.interval(
        P / (M * L),
        1 - Z / (M * L),
        prob=1.0,
        kind="feasible",
        detail="feasible range of the bought labels (deterministic)",
        name="feasible",
    )
    return BudgetIntervalResult(
        estimate=da(est, "estimate"),
        ci=interval,
        feasible=feasible,
        n_labels=da(np.full(P.shape, m), "n_labels"),
        disagreements=da(X, "disagreements"),
    )


def _planned_labels(plan: BudgetPlan, labels: Any) -> tuple[np.ndarray, list]:
    """The labels as (extra cells, task, run) floats, checked against the plan: binary wherever it buys."""
    if not isinstance(labels, xr.DataArray) or "task" not in labels.dims or "run" not in labels.dims:
        raise ValueError("`labels` must be an xarray.DataArray with dims 'task' and 'run'")
    for d in ("task", "run"):
        if labels.sizes[d] != plan.slots.sizes[d]:
            raise ValueError(
                f"`labels` dim {d!r} has size {labels.sizes[d]} but the plan has {plan.slots.sizes[d]}"
            )
        if d in labels.coords and not np.array_equal(labels[d].values, plan.slots[d].values):
            raise ValueError(_coord_mismatch(d, labels[d].values, plan.slots[d].values))
    mask = plan.slots.values
    per_task = mask.sum(axis=1)
    if plan.design == "joint" and not np.array_equal(per_task, 1 + plan.audited.values):
        bad = np.flatnonzero(per_task != 1 + plan.audited.values)[:5]
        raise ValueError(
            "`plan` is not a design-J plan: every task must have 1 bought slot, 2 if audited; "
            f"tasks at positions {bad.tolist()} break this"
        )
    if mask.sum() > plan.budget:
        raise ValueError(f"`plan` buys {int(mask.sum())} slots, above its budget {plan.budget}")
    extra = [d for d in labels.dims if d not in ("task", "run")]
    lab = labels.transpose(*extra, "task", "run").values.astype(float)
    lab = lab.reshape(-1, *lab.shape[-2:])
    bought = lab[:, mask]
    if np.isnan(bought).any():
        n_bad = int(np.isnan(bought).any(axis=0).sum())
        raise ValueError(
            f"`labels` must hold a 0/1 outcome at every slot of the plan; {n_bad} planned slot(s) are NaN"
        )
    if not np.isin(bought, (0.0, 1.0)).all():
        bad = np.unique(bought[~np.isin(bought, (0.0, 1.0))])[:5]
        raise ValueError(f"`labels` must be binary (0 or 1) at the planned slots; got values {bad.tolist()}")
    return lab, extra


def _coord_mismatch(dim: str, have: np.ndarray, plan: np.ndarray) -> str:
    """The error for labels whose ``dim`` coord is not the plan's: a few of each, their types, the way out."""
    same_set = set(have.tolist()) == set(plan.tolist())
    why = "the same labels in another order" if same_set else "other values"
    fix = f"a plan made with those labels (e.g. plan_uniform(labels[{dim!r}].values, ...)) or " if dim == "task" else ""
    return (
        f"`labels` coord {dim!r} must equal the plan's {dim!r} coord, position by position; it holds {why}: "
        f"labels {typed_few(have)}, plan {typed_few(plan)}. Pass {fix}labels with the plan's coord "
        f"(labels.assign_coords({dim}=plan.slots[{dim!r}].values), when the positions match)"
    )


def _uniform_estimate(P: np.ndarray, N: int, m: int, prob: float):
    """Design U: estimate ``s / m`` and the exact hypergeometric interval (warns when nothing was bought)."""
    est = P / m if m > 0 else np.full(P.shape, np.nan)
    lo, hi = uniform_bounds(P.astype(int), N, m, prob)
    if m == 0:

        warn_user(
            "budget 0: no label bought, the estimate is undefined (NaN); the interval is [0, 1]",
            BudgetWarning,
        )
    return est, lo, hi, np.zeros(P.shape, int), "hypergeometric, exact (design U)"


def _joint_estimate(plan: BudgetPlan, lab: np.ndarray, P: np.ndarray, Z: np.ndarray, prob: float, meth: str):
    """Design J: the mean of the tasks' label means and the disagreement-certificate interval."""
    mask = plan.slots.values
    M, L = mask.shape
    aud = plan.audited.values
    tot = np.where(mask, lab, 0.0).sum(axis=2)
    est = (tot / mask.sum(axis=1)).mean(axis=1)
    t = int(aud.sum())
    X = (tot[:, aud] == 1).sum(axis=1)
    lo, hi = joint_bounds(est, X, P, Z, M, L, t, prob, meth)
    return est, lo, hi, X, (
        f"disagreement certificate, {meth} (design J); finite-sample valid: coverage at least the level "
        "for every fixed cohort, usually above it (conservative, not exact)"
    )


class BudgetWarning(HierbenchWarning):
    """A budgeted-design quantity is undefined (returned as NaN)."""
