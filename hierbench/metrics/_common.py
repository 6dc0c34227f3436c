"""Helpers shared by the posterior metrics: reading draws from a fit, intervals, checks, warnings."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from typing import Literal

import numpy as np
import xarray as xr

from .._base import COUNTS_HASH
from .._base import DATA_HASH
from .._base import DEFAULT_PROB
from .._base import FRACTIONAL_LINEAR
from .._base import UndefinedMetricWarning
from .._base import check_choice
from .._base import check_int
from .._base import check_prob
from .._base import make_interval
from .._numerics import wilson_bounds
from ._results import MIN_RUNS_ZERO

if TYPE_CHECKING:
    from ._results import PosteriorPassKResult
    from ._results import PosteriorSummaryResult

__all__ = [
    "UndefinedMetricWarning",
    "check_k",
    "draws_target",
    "fingerprints",
    "get_draws",
    "mc_interval",
    "min_runs_per_k",
    "observed_defaults",
    "observed_only",
    "pass_attrs",
    "pass_result",
    "posterior_interval",
    "posterior_summary",
    "undefined_cells_message",
]

SAMPLE_DIMS = ("chain", "draw")


def linear_scale(family: str) -> str:
    """The scale of a Bayesian formula fit's linear predictor (``beta``, ``sd``), by its family.

    Examples
    --------
    >>> linear_scale("binomial")
    'logit'
    """
    return {"binomial": "logit", "ordinal": "logit (cumulative; up = higher grades)"}.get(family, FRACTIONAL_LINEAR)


_POSTERIOR_KINDS = {"eti": "equal-tailed posterior interval", "hdi": "highest-density posterior interval"}


def get_draws(
    fit: xr.DataTree | xr.Dataset | xr.DataArray, var: str, *, name: str = "fit"
) -> xr.DataArray:
    """The posterior draws of ``var`` (dims ``chain``, ``draw``, ...) from a fit, a Dataset or a DataArray."""
    if isinstance(fit, xr.DataTree):
        if "posterior" not in fit.children:
            raise ValueError(f"`{name}` has no `posterior` group; groups {sorted(fit.children)}")
        ds = fit["posterior"].to_dataset()
    elif isinstance(fit, xr.Dataset):
        ds = fit
    elif isinstance(fit, xr.DataArray):
        da = fit
        ds = None
    else:
        raise TypeError(
            f"`{name}` must be an xarray.DataTree fit, a posterior Dataset or a DataArray of draws; "
            f"got {type(fit).__name__}"
        )
    if ds is not None:
        if var not in ds:
            raise ValueError(
                f"`var` must be a posterior variable of `{name}` {sorted(ds.data_vars)}; got {var!r}"
            )
        da = ds[var]
    missing = [d for d in SAMPLE_DIMS if d not in da.dims]
    if missing:
        raise ValueError(
            f"`{name}` draws of {var!r} must have dims {SAMPLE_DIMS}; missing {missing} (has {da.dims})"
        )
    return da


def check_k(k: int | Sequence[int]) -> np.ndarray:
    """``k`` (an int or a non-empty sequence of them, each >= 1) as an int64 array: the one k rule.

    Examples
    --------
    >>> check_k(3).tolist(), check_k([1, 4]).tolist()
    ([3], [1, 4])
    """
    ks = np.atleast_1d(np.asarray(k, dtype=object))
    if ks.ndim != 1 or ks.size == 0:
        raise ValueError(f"`k` must be an integer >= 1 or a non-empty sequence of them; got {k!r}")
    try:
        return np.asarray([check_int(x, "k", min=1) for x in ks.tolist()], dtype=np.int64)
    except (TypeError, ValueError):
        raise ValueError(
            f"`k` must be an integer >= 1 or a non-empty sequence of them; got {k!r}"
        ) from None


def min_runs_per_k(min_runs: int | Literal["k"], ks: np.ndarray) -> np.ndarray:
    """The minimum number of runs a task needs, per ``k``: ``min_runs``, or ``k`` itself."""
    if isinstance(min_runs, str):
        if min_runs != "k":
            raise ValueError(f"`min_runs` must be an integer >= 0 or 'k'; got {min_runs!r}")
        return ks.copy()
    try:
        m = check_int(min_runs, "min_runs", min=0)
    except (TypeError, ValueError):
        raise ValueError(f"`min_runs` must be an integer >= 0 or 'k'; got {min_runs!r}") from None
    return np.full(ks.shape, m, dtype=np.int64)


#: ``attrs["interval_of"]`` per ``draws_of`` (``{q}``: the quantity): what the interval is for, as the repr says it
INTERVAL_OF = {
    "parameter": "the population's mean {q}, as for a new draw of tasks from the same population",
    "conditional expectation given the draw": (
        "the model's expected {q} of these tasks given its parameters, not these tasks' own {q} "
        "(narrower; realised=True gives that)"
    ),
    "realised task average": "these tasks' own {q} (each task's success probability drawn from its posterior)",
}


def pass_attrs(at: bool, model: str, population: bool, min_max: int, min_runs, realised: bool) -> dict:
    """The attrs every posterior pass^k / pass@k result carries (both models).

    ``draws_of`` says what the draws (hence the interval) describe: the
    parameter (``population``), the realised task average (``realised``)
    or the conditional expectation given the draw; ``interval_of`` says it
    in words (:data:`INTERVAL_OF`).
    """
    if population:
        over = "a new task from the population"
    elif isinstance(min_runs, str):
        over = "the tasks each agent ran at least k times"
    elif min_max:
        over = f"the tasks each agent ran at least {min_max} times"
    else:
        over = "the tasks each agent ran" if model == "beta_binomial" else "the dataset's tasks"
    draws_of = "parameter" if population else (
        "realised task average" if realised else "conditional expectation given the draw"
    )
    quantity = "pass@k" if at else "pass^k"
    return {
        "quantity": quantity,
        "model": model,
        "tasks": "population" if population else "observed",
        "over": over,
        "scale": "probability",
        "draws_of": draws_of,
        "interval_of": INTERVAL_OF[draws_of].format(q=quantity),
    }


def undefined_cells_message(agents: Sequence, ks: Sequence[int], empty: np.ndarray, model: str) -> str:
    """The words of both models for the (agent, k) cells of pass^k / pass@k over no task (NaN).

    ``empty`` (agent, k) marks the cells where no task of the agent was run at
    least ``min_runs`` times; the first five are named, the rest counted. The
    remedy says what ``min_runs=0`` averages in ``model`` instead.

    Examples
    --------
    >>> import numpy as np
    >>> undefined_cells_message(["a", "b"], [1, 3], np.array([[False, True], [False, False]]), "crossed")[:45]
    'a at k=3: no task run at least min_runs times'
    """
    rows, cols = np.nonzero(np.asarray(empty, dtype=bool))
    cells = [f"{agents[a]} at k={int(ks[i])}" for a, i in zip(rows, cols, strict=True)]
    shown = cells[:5] + ([f"and {len(cells) - 5} more"] if len(cells) > 5 else [])
    every = MIN_RUNS_ZERO[model][0] if model in MIN_RUNS_ZERO else "every task"
    return (
        f"{', '.join(shown)}: no task run at least min_runs times, so pass^k/pass@k over the observed tasks "
        f"is undefined (NaN); min_runs=0 averages {every} instead, "
        "the model extrapolating to k the tasks run fewer times"
    )


def observed_only(population: bool, realised: bool, mins: np.ndarray, at: bool) -> None:
    """Refuse what only the observed tasks have (both models): realised draws and a run minimum."""
    if realised and population:
        raise ValueError(
            "`realised=True` applies to the observed tasks (population=False); the population "
            f"{'pass@k' if at else 'pass^k'} is a parameter, its draws are already its posterior"
        )
    if population and mins.any():
        raise ValueError(
            "`min_runs` selects observed tasks (population=False); a new task from the "
            "population has no runs"
        )


def pass_result(
    expected: xr.DataArray, draws: xr.DataArray, n_tasks: xr.DataArray, attrs: dict, prob: float
) -> PosteriorPassKResult:
    """The posterior pass^k result of both models: the mean of ``expected`` with ``draws``' interval."""
    from ._results import PosteriorPassKResult

    draws.attrs = dict(attrs)
    est = expected.mean(("chain", "draw"))  # the exact (Rao-Blackwellised) posterior mean
    est.attrs = {"point": "posterior mean", "quantity": attrs["quantity"], "tasks": attrs["tasks"]}
    return PosteriorPassKResult(
        estimate=est, ci=posterior_interval(draws, prob=prob), draws=draws,
        n_tasks=n_tasks.rename("n_tasks"), attrs=attrs,
    )


def posterior_interval(
    draws: xr.DataArray, *, prob: float = DEFAULT_PROB, kind: Literal["eti", "hdi"] = "eti"
) -> xr.DataArray:
    """Credible interval over ``chain`` and ``draw`` in the house convention.

    Parameters
    ----------
    draws : xarray.DataArray
        Posterior draws with dims ``chain`` and ``draw``.
    prob : float
        Probability mass inside the interval, 0 < prob < 1.
    kind : {"eti", "hdi"}
        Equal-tailed or highest-density (arviz-stats ``eti`` / ``hdi``).

    Returns
    -------
    xarray.DataArray
        The remaining dims plus a trailing ``ci_bound = ["lower", "upper"]``;
        attrs ``ci_prob``, ``ci_kind`` (``"eti"`` or ``"hdi"``) and ``ci_detail``.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> d = xr.DataArray(np.linspace(0, 1, 1001)[None, :], dims=("chain", "draw"))
    >>> posterior_interval(d, prob=0.9).values.round(3).tolist()
    [0.05, 0.95]
    """
    import arviz_stats as azs

    _check_draws(draws)
    check_choice(kind, "kind", sorted(_POSTERIOR_KINDS))
    prob = check_prob(prob)
    fn = azs.eti if kind == "eti" else azs.hdi
    ci = fn(draws, prob=prob, dim=list(SAMPLE_DIMS)).transpose(..., "ci_bound")
    return make_interval(
        ci.sel(ci_bound="lower", drop=True),
        ci.sel(ci_bound="upper", drop=True),
        prob=prob,
        kind=kind,
        detail=_POSTERIOR_KINDS[kind] + " over (chain, draw)" + (
            f" of an approximate posterior ({draws.attrs['approximation']})" if draws.attrs.get("approximation") else ""
        ),
        warn_zero_width=False,  # constant draws (e.g. a fixed quantity) are not a degeneracy here
    )


def _check_draws(draws: object, name: str = "draws") -> None:
    """Refuse anything but one quantity's draws: a DataArray with dims ``chain`` and ``draw``.

    A whole fit (DataTree) or a posterior Dataset is named, with the variable to pick from it.
    """
    if isinstance(draws, xr.DataArray):
        missing = [d for d in SAMPLE_DIMS if d not in draws.dims]
        if missing:
            raise ValueError(
                f"`{name}` must have the dims {SAMPLE_DIMS} of posterior draws; it lacks {missing} "
                f"(dims {draws.dims})"
            )
        return
    if isinstance(draws, xr.DataTree):
        post = draws["posterior"].to_dataset() if "posterior" in draws.children else None
        var = "ability" if post is None or "ability" in post else next(iter(post.data_vars), "ability")
        pick = f'fit.posterior["{var}"]'
        held = f" (its posterior holds {sorted(post.data_vars)[:8]})" if post is not None else ""
        got = f"a DataTree, a whole fit{held}"
    elif isinstance(draws, xr.Dataset):
        var = "ability" if "ability" in draws else next(iter(draws.data_vars), "ability")
        pick = f'posterior["{var}"]'
        got = f"a Dataset with variables {sorted(draws.data_vars)[:8]}"
    else:
        pick, got = 'fit.posterior["ability"]', type(draws).__name__
    raise TypeError(
        f"`{name}` must be the draws of one quantity, an xarray.DataArray with dims ('chain', 'draw', ...); "
        f"got {got}. Pass one variable, e.g. {pick}"
    )


def mc_interval(per_draw: xr.DataArray, *, prob: float, what: str) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
    """A posterior probability, its Monte Carlo interval and the effective sample size behind it.

    ``per_draw`` holds, per (chain, draw), a value in [0, 1] whose posterior mean is
    the probability (an indicator, or a tie-split share). The interval is the Wilson
    score interval with ``n`` the effective sample size of those values (arviz-stats
    ``ess``, ``method="mean"``; the number of draws when they are constant, at most
    the number of draws): it states how far the finite set of draws can leave the
    probability, not a credible interval, which a posterior probability does not have.

    Returns
    -------
    (estimate, ci, ess)
    """
    import arviz_stats as azs

    prob = check_prob(prob)
    S = per_draw.sizes["chain"] * per_draw.sizes["draw"]
    est = per_draw.mean(list(SAMPLE_DIMS))
    ess = azs.ess(per_draw.astype(float), sample_dims=list(SAMPLE_DIMS), method="mean")
    n = np.minimum(np.where(np.isfinite(ess.values), ess.values, S), S)
    from scipy.stats import norm

    lo, hi = wilson_bounds(est.values * n, n, float(norm.ppf(0.5 + prob / 2)))
    ci = make_interval(
        lo,
        hi,
        prob=prob,
        kind="wilson",
        template=est,
        detail=(
            f"Monte Carlo uncertainty of {what} from {S} draws: Wilson score interval with n the "
            "effective sample size of the per-draw values"
        ),
        warn_zero_width=False,
    )
    return est, ci, ess.copy(data=n).rename("ess")


#: what a fit's posterior variable estimates, by its name and words of its ``meaning`` ("": any): its quantity
#: (the frequentist counterpart's label) and the tasks its interval is for (None: no task set). The IRT's
#: ``mean_task`` averages all the data's tasks (those an agent did not run too), held fixed; the
#: Bradley-Terry abilities, on either scale, are the quantity of ``hierbench.freq.fit_bradley_terry_ml``
VARIABLE_TARGETS: dict[tuple[str, str], tuple[str, str | None]] = {
    ("mean_new_task", ""): ("mean score", "population"),
    ("mean_observed", ""): ("mean score", "observed"),
    ("mean_task", "data's tasks"): ("mean score", "observed"),
    ("ability", "Bradley-Terry"): ("Bradley-Terry ability", None),
    ("elo", "10x odds"): ("Bradley-Terry ability", None),
}
#: words of a variable's ``meaning`` that say which tasks it is for, when its name is not in the table above
_MEANING_TASKS = (("new task", "population"), ("dataset's tasks", "observed"), ("data's tasks", "observed"),
                  ("these tasks", "observed"))  # fmt: skip


def draws_target(draws: xr.DataArray) -> dict[str, str]:
    """What a posterior variable estimates, from its attrs (``scale``, ``meaning``) and its name.

    ``scale`` as the variable states it; ``quantity`` and ``tasks`` (``"population"``:
    a new task from the population, ``"observed"``: these tasks) from the name and
    the words of its ``meaning`` (``VARIABLE_TARGETS``: ``mean_new_task``,
    ``mean_observed``, the IRT's ``mean_task``, the Bradley-Terry ``ability`` and
    ``elo``) or, for another variable, the name and the words of its ``meaning``.
    Empty for draws that state nothing.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> d = xr.DataArray(np.zeros((1, 4)), dims=("chain", "draw"), name="mean_observed",
    ...                  attrs={"scale": "probability"})
    >>> draws_target(d)
    {'scale': 'probability', 'quantity': 'mean score', 'tasks': 'observed'}
    """
    out = {}
    if draws.attrs.get("scale") is not None:
        out["scale"] = str(draws.attrs["scale"])
    name = None if draws.name is None else str(draws.name)
    meaning = str(draws.attrs.get("meaning", ""))
    known = next((v for (n, words), v in VARIABLE_TARGETS.items() if n == name and words in meaning), None)
    if known is not None:
        out["quantity"] = known[0]
        if known[1] is not None:
            out["tasks"] = known[1]
        return out
    tasks = next((t for words, t in _MEANING_TASKS if words in meaning), None)
    if name is not None and meaning:
        out["quantity"] = name
        if tasks is not None:
            out["tasks"] = tasks
    return out


def posterior_summary(
    draws: xr.DataArray | xr.DataTree,
    *,
    var: str | None = None,
    prob: float = DEFAULT_PROB,
    kind: Literal["eti", "hdi"] = "eti",
) -> PosteriorSummaryResult:
    """Posterior mean and credible interval of a quantity, as a result object.

    The Bayesian counterpart of a frequentist result: ``estimate`` (the posterior
    mean over ``chain`` and ``draw``) and ``ci`` (as :func:`posterior_interval`),
    so it lines up with bootstrap and Wilson results in
    :func:`hierbench.compare.side_by_side`. The estimate's attrs say what it is,
    which that function reads: the variable's ``scale`` and ``meaning``, its
    ``quantity`` and ``tasks`` (``mean_new_task``: a new task from the
    population; ``mean_observed``: these tasks) and, given the fit, the
    fingerprint of the data the fit came from (``hierbench_data_hash``).

    Parameters
    ----------
    draws : xarray.DataArray or xarray.DataTree
        The draws of one quantity (dims ``chain``, ``draw``, ...), e.g.
        ``fit["posterior"]["mean_new_task"]``; or the fit itself, with ``var``.
        Given the fit, the result carries its data fingerprint, so
        ``side_by_side`` can refuse results from another log.
    var : str, optional
        The posterior variable to summarise when ``draws`` is a fit.
    prob, kind
        As for :func:`posterior_interval`.

    Returns
    -------
    PosteriorSummaryResult
        ``estimate(...)`` and ``ci(..., ci_bound)``; ``to_frame()``,
        ``to_dataset()`` and item access (``res["estimate"]``).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> d = xr.DataArray(np.linspace(0, 1, 1001)[None, :], dims=("chain", "draw"))
    >>> s = posterior_summary(d, prob=0.9)
    >>> round(float(s["estimate"]), 3), s["ci"].values.round(3).tolist()
    (0.5, [0.05, 0.95])
    """
    from ._results import PosteriorSummaryResult

    prints = {}
    if isinstance(draws, xr.DataTree) and var is not None:
        prints = fingerprints(draws)
        draws = get_draws(draws, var)
    elif var is not None:
        raise ValueError(f"`var` names a variable of a fit (an xarray.DataTree); `draws` is {type(draws).__name__}")
    ci = posterior_interval(draws, prob=prob, kind=kind)
    est = draws.mean(list(SAMPLE_DIMS))
    est.attrs = {k: draws.attrs[k] for k in ("meaning",) if k in draws.attrs} | draws_target(draws)
    est.attrs |= fingerprints(draws) | prints
    return PosteriorSummaryResult(estimate=est, ci=ci)


def fingerprints(obj: xr.DataTree | xr.DataArray) -> dict[str, str]:
    """The data fingerprints a fit (root attrs) or a variable of one (its attrs) carries.

    ``hierbench_data_hash`` and ``hierbench_counts_hash`` where present, for
    ``hierbench.compare.side_by_side`` to tell results of other logs apart.
    """
    return {k: str(obj.attrs[k]) for k in (DATA_HASH, COUNTS_HASH) if obj.attrs.get(k)}


def observed_defaults(
    population: bool, realised: bool | None, min_runs: int | Literal["k"] | None
) -> tuple[bool, int | Literal["k"]]:
    """``realised`` and ``min_runs`` with ``None`` resolved to the default for the tasks asked about.

    These tasks (``population=False``): ``realised=True`` (the interval of these
    tasks' own pass^k) and ``min_runs="k"`` (each ``k`` over the tasks run at least
    ``k`` times, as the unbiased estimator). A new task (``population=True``): neither
    applies, so ``False`` and ``0``; a value given is kept (and refused there).

    Examples
    --------
    >>> observed_defaults(False, None, None), observed_defaults(True, None, None)
    ((True, 'k'), (False, 0))
    """
    if realised is None:
        realised = not population
    elif not isinstance(realised, (bool, np.bool_)):
        raise TypeError(f"`realised` must be True, False or None (the default); got {realised!r}")
    if min_runs is None:
        min_runs = 0 if population else "k"
    return bool(realised), min_runs
