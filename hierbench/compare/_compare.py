"""Side-by-side tables and coverage studies over the shared interval convention."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from .._base import CI_BOUNDS
from .._base import COUNTS_HASH
from .._base import DATA_HASH
from .._base import DEFAULT_PROB
from .._base import FRACTIONAL_LINEAR
from .._base import HierbenchError
from .._base import Result
from .._base import check_int
from .._base import check_interval
from .._base import check_prob
from .._base import field_alias
from .._base import interval_label
from .._base import wrap_repr
from .._docs import fill_doc
from .._parallel import map_seeded
from ..freq import wilson_interval

__all__ = [
    "CoverageStudyResult",
    "MismatchedEstimatesError",
    "MixedLevelError",
    "as_estimate",
    "coverage_study",
    "side_by_side",
    "to_frame",
]



class MixedLevelError(HierbenchError):
    """Intervals of different levels (``ci_prob``) were put side by side."""


class MismatchedEstimatesError(HierbenchError):
    """Estimates of different quantities, or over different task sets, were put side by side."""


def _check_interval(da: xr.DataArray, name: str) -> xr.DataArray:
    return check_interval(da, name)


#: what a result's interval is for, by its ``attrs["tasks"]``: the words of the ``quantity`` label
TASKS_WORDS = {"observed": "these tasks", "population": "a new draw of tasks from the same population"}

#: the scale a quantity is on by its definition, for a result that names the quantity and not its scale
QUANTITY_SCALES = {"pass^k": "probability", "pass@k": "probability", "win rate": "probability"}

#: the scale an interval kind implies: a Wald or Wilson interval is one of a proportion
KIND_SCALES = {"wald": "probability", "wilson": "probability"}
#: why a result is on a scale its interval's kind implies (the one source that asks nothing of a silent result)
_KIND_WHY = "a {} interval is one of a proportion"

#: the fingerprints a result may carry, the log's first: its score cells (``hierbench_counts_hash``:
#: a frequentist result's and any fit's of the same log), then what a fit's model saw (``hierbench_data_hash``)
FINGERPRINTS = (COUNTS_HASH, DATA_HASH)


def _tasks_suffix(tasks: object) -> str:
    """The words a stated quantity gets for the tasks its interval is for (``_target`` adds them, ``_bare`` drops them)."""
    return f" ({TASKS_WORDS.get(str(tasks), f'{tasks} tasks')})"


def _target(
    obj: object, estimate: xr.DataArray, attrs: dict
) -> tuple[str | None, str | None, xr.DataArray | None]:
    """What a result estimates, which tasks its interval is for, and over how many tasks, when it says so.

    ``quantity`` (with ``tasks`` "observed": these tasks / "population": a
    new draw of tasks from the same population) and ``n_tasks`` per cell;
    ``attrs`` are what the result states (``_stated``).
    """
    quantity, tasks = attrs.get("quantity"), attrs.get("tasks")
    if quantity is not None and tasks:
        quantity = f"{quantity}{_tasks_suffix(tasks)}"
    n = obj.get("n_tasks") if isinstance(obj, xr.Dataset) else getattr(obj, "n_tasks", None)
    if not isinstance(n, xr.DataArray) or not set(n.dims) <= set(estimate.dims):
        n = None
    return (None if quantity is None else str(quantity)), (str(tasks) if tasks else None), n


def _stated(obj: object, estimate: xr.DataArray) -> dict:
    """The attrs a result states about itself: its own (a ``Result``'s or a Dataset's), then its estimate's."""
    attrs = dict(getattr(obj, "attrs", None) or {}) if not isinstance(obj, xr.DataArray) else {}
    return {**attrs, **estimate.attrs}


def _scale(attrs: dict, ci: xr.DataArray) -> tuple[str | None, str]:
    """The result's scale and where it comes from: stated, implied by its quantity, or by its interval's kind."""
    if attrs.get("scale") is not None:
        return str(attrs["scale"]), "stated"
    bare = str(attrs.get("quantity", ""))
    if bare in QUANTITY_SCALES:
        return QUANTITY_SCALES[bare], f"a {bare} is a probability"
    kind = str(ci.attrs.get("ci_kind", ""))
    if kind in KIND_SCALES:
        return KIND_SCALES[kind], _KIND_WHY.format(kind)
    return None, ""


def as_estimate(obj: xr.Dataset | xr.DataArray | object, *, name: str = "result") -> xr.Dataset:
    """Normalise a result into a Dataset with ``estimate`` and ``ci`` (the house convention).

    Accepts any hierbench result object (a ``Result``:
    every frequentist ``*Result``), a Dataset holding ``estimate`` and ``ci``
    (the posterior metrics, e.g. :func:`hierbench.metrics.pass_hat_k`; a
    Dataset with ``interval`` instead of ``ci`` is read too), a bare interval
    DataArray (``estimate`` is then NaN: the method gave no point value), or
    any other object with a ``to_dataset()`` returning one of these.

    Parameters
    ----------
    obj : result object, Dataset or DataArray
    name : str
        Used in error messages.

    Returns
    -------
    xarray.Dataset
        ``estimate(...)`` and ``ci(..., ci_bound)``; ``ci_prob`` and
        ``ci_kind`` (and ``ci_detail``) in the attrs of ``ci``.

    Examples
    --------
    >>> from hierbench.freq import wilson_interval
    >>> sorted(as_estimate(wilson_interval(9, 10)).data_vars)
    ['ci', 'estimate']
    """
    if isinstance(obj, Result):
        ci = _check_interval(obj.ci, name)
        return _with_target(xr.Dataset({"estimate": obj.estimate.drop_attrs(), "ci": ci}), obj, obj.estimate)
    if hasattr(obj, "to_dataset") and not isinstance(obj, (xr.Dataset, xr.DataArray)):
        obj = obj.to_dataset()
    if isinstance(obj, xr.DataArray):
        interval = _check_interval(obj, name)
        estimate = xr.full_like(interval.isel(ci_bound=0, drop=True), np.nan, dtype=float)
        return _with_target(xr.Dataset({"estimate": estimate, "ci": interval}), obj, estimate)
    if isinstance(obj, xr.Dataset):
        key = "ci" if "ci" in obj else "interval" if "interval" in obj else None
        if key is None:
            raise ValueError(
                f"`{name}`: a Dataset result must hold `ci` (or `interval`); found {list(obj.data_vars)}"
            )
        interval = _check_interval(obj[key], name)
        if "estimate" in obj:
            estimate = obj["estimate"]
        else:
            estimate = xr.full_like(interval.isel(ci_bound=0, drop=True), np.nan, dtype=float)
        out = xr.Dataset({"estimate": estimate.drop_attrs(), "ci": interval})
        return _with_target(out, obj, estimate)
    raise TypeError(
        f"`{name}` must be a hierbench result, an xarray Dataset/DataArray or have .to_dataset(); "
        f"got {type(obj).__name__}"
    )


def _with_target(out: xr.Dataset, obj: object, estimate: xr.DataArray) -> xr.Dataset:
    """``out`` with what the result states: quantity, tasks, n_tasks (and tasks left out), scale, fingerprint."""
    attrs = _stated(obj, estimate)
    quantity, tasks, n_tasks = _target(obj, estimate, attrs)
    if n_tasks is not None:
        out["n_tasks"] = n_tasks.drop_attrs().astype(float)
    if quantity is not None:
        out.attrs["quantity"] = quantity
    if tasks is not None:
        out.attrs["tasks"] = tasks
    if isinstance(estimate.name, str):  # the posterior variable summarised, which picks the advice on a mismatch
        out.attrs["variable"] = estimate.name
    scale, why = _scale(attrs, out["ci"])
    if scale is not None:
        out.attrs["scale"] = scale
        out.attrs["scale_from"] = why
    out.attrs |= {k: str(attrs[k]) for k in FINGERPRINTS if attrs.get(k)}
    _pass_k_counts(out, obj, estimate)
    return out


def _field(obj: object, name: str) -> xr.DataArray | None:
    """A result's field (a Dataset's variable) ``name``, where it is a DataArray."""
    v = obj.get(name) if isinstance(obj, xr.Dataset) else getattr(obj, name, None)
    return v if isinstance(v, xr.DataArray) else None


def _pass_k_counts(out: xr.Dataset, obj: object, estimate: xr.DataArray) -> None:
    """A pass^k / pass@k result's tasks run fewer than ``k`` times, and its ``k`` where the result dropped it.

    ``n_insufficient`` as the frequentist result counts them; ``attrs["k"]`` for a result at one ``k``
    that keeps no ``k`` coordinate (a frequentist ``pass_hat_k(data, 1)``): its ``k_eff_min``, which is
    ``k`` itself where no task was clipped (``n_clipped`` 0).
    """
    short = _field(obj, "n_insufficient")
    if short is not None and "n_tasks" in out and set(short.dims) <= set(estimate.dims):
        out["n_insufficient"] = short.drop_attrs().astype(float)
    k_eff, clipped = _field(obj, "k_eff_min"), _field(obj, "n_clipped")
    if "k" not in estimate.coords and k_eff is not None and clipped is not None and not bool(clipped.any()):
        ks = np.unique(np.asarray(k_eff.values))
        if ks.size == 1:
            out.attrs["k"] = int(ks[0])


def _bare(v: xr.Dataset) -> str:
    """The quantity a normalised result states, without the words of the tasks its interval is for."""
    q, tasks = str(v.attrs.get("quantity", "")), v.attrs.get("tasks")
    return q.removesuffix(_tasks_suffix(tasks)) if tasks else q


def _ks(v: xr.Dataset) -> np.ndarray | None:
    """The ``k`` a pass^k / pass@k result is at: its ``k`` coordinate, else ``attrs["k"]`` (None: not known)."""
    if "k" in v.coords:
        return np.atleast_1d(np.asarray(v["k"].values))
    return np.array([v.attrs["k"]]) if "k" in v.attrs else None


def _quantity_key(v: xr.Dataset) -> str:
    """What a result estimates, for the check that the results estimate one thing.

    A pass^k or pass@k at ``k = 1`` only is the chance one attempt succeeds, the mean score of 0/1 scores
    (the scale check has refused any other scale beside it): it counts as ``"mean score"``.
    """
    q, bare = str(v.attrs["quantity"]), _bare(v)
    ks = _ks(v)
    if bare in ("pass^k", "pass@k") and ks is not None and ks.size and bool((ks == 1).all()):
        return q.replace(bare, "mean score", 1)
    return q


def _with_k(da: xr.DataArray, v: xr.Dataset) -> xr.DataArray:
    """``da`` with a ``k`` dim where its result knows its one ``k`` only from ``attrs["k"]``."""
    return da.expand_dims(k=[v.attrs["k"]]) if "k" not in da.dims and "k" in v.attrs else da


def _short_of_tasks(v: xr.Dataset) -> tuple[xr.DataArray, xr.DataArray, str] | None:
    """Where a frequentist pass^k / pass@k leaves out tasks run fewer than ``k`` times.

    Returns ``(short, full, of)``: per cell, whether it averages fewer tasks than ``full`` (those the agent
    ran, from ``n_insufficient``; else those it averages at its smallest ``k``), and the words for ``full``.
    None for any other result.
    """
    if _bare(v) not in ("pass^k", "pass@k") or v.attrs.get("tasks") != "population" or "n_tasks" not in v:
        return None
    n = _with_k(v["n_tasks"], v)
    if "n_insufficient" in v:
        full, of = n + _with_k(v["n_insufficient"], v), "its {} tasks"
    elif "k" in n.dims and n.sizes["k"] > 1:
        k0 = n["k"].values.min()
        full = n.sel(k=k0, drop=True)
        of = "its {} tasks" if k0 == 1 else f"the {{}} tasks it averages at k={k0}"
    else:
        return None
    return n < full, full.broadcast_like(n), of


def _leaves_out(v: xr.Dataset) -> bool:
    """Whether a result is a frequentist pass^k / pass@k that leaves out some task run fewer than k times."""
    got = _short_of_tasks(v)
    return got is not None and bool(got[0].any())


def _check_selection(norm: dict[str, xr.Dataset]) -> None:
    """Refuse a frequentist pass^k / pass@k over the tasks with at least k runs beside one over every task."""
    for a, va in norm.items():
        if not _leaves_out(va):
            continue
        short, full, of = _short_of_tasks(va)
        wider = {}
        for b, vb in norm.items():
            # beside another that leaves out tasks, the count of tasks (n_tasks) is compared instead
            if b == a or _bare(vb) != _bare(va) or _leaves_out(vb):
                continue
            nb = _with_k(vb["n_tasks"] if "n_tasks" in vb else xr.full_like(vb["estimate"], np.nan), vb)
            s, n, f, nb = xr.align(short, _with_k(va["n_tasks"], va), full, nb, join="inner")
            # a cell that averages no task has no value to misread (NaN)
            bad = s & (n > 0) & ((nb.isnull() & (vb.attrs.get("tasks") == "population")) | (nb > n))
            if bool(bad.any()):
                wider[b] = (bad, n, f)
        if wider:
            raise MismatchedEstimatesError(_selection_message(a, va, wider, of))


def _selection_message(a: str, va: xr.Dataset, wider: dict, of: str) -> str:
    """Why a pass^k over the tasks with at least k runs is not the pass^k over every task, and what to compare."""
    bare = _bare(va)
    bad, n, f = next(iter(wider.values()))
    cells = list(zip(*np.nonzero(np.asarray(bad.values)), strict=True))
    cells.sort(key=lambda i: float(n.values[i] / f.values[i]))  # the most tasks left out first
    said = []
    for idx in cells[:3]:
        at = dict(zip(bad.dims, idx, strict=True))
        k = bad["k"].values[at["k"]] if "k" in bad.coords else "k"
        who = ", ".join(str(bad[d].values[i]) for d, i in at.items() if d != "k" and d in bad.coords)
        said.append(f"{bare.replace('k', str(k), 1)}{f' of {who}' if who else ''} averages "
                    f"{float(n.values[idx]):g} of {of.format(f'{float(f.values[idx]):g}')}, those with >= {k} runs")
    ks = np.asarray(bad["k"].values) if "k" in bad.dims else []
    ok = [int(k) for k in ks if not bool(bad.sel(k=k).any())]
    allow = f"here k = {ok}, where no task is left out" if ok else "k no larger than the fewest runs of a task"
    fn = "pass_hat_k" if bare == "pass^k" else "pass_at_k"
    return (
        f"`results` {a!r} is a frequentist {bare} over the tasks with at least k runs only, and {list(wider)} "
        f"over every task (a new draw of tasks from the population, or all the tasks run): in {int(bad.sum())} "
        f"cells it averages fewer tasks, e.g. {'; '.join(said)}. Side by side they would read as one "
        "estimand, yet the tasks left out are those with fewer runs (often the harder ones, where errored "
        "runs are dropped), so the gap is task selection, not method. Compare like with like: the Bayesian "
        f"answer over the same tasks, hierbench.metrics.{fn}(fit, k, min_runs='k') (population=False: its "
        f"interval is for these tasks, so set its point values beside the frequentist ones), or the {bare} at "
        f"the k the runs allow ({allow}); or pass allow_mismatch=True"
    )


#: what to recompute, by the quantity whose interval is for these tasks beside one for a new draw of tasks
_POPULATION_ADVICE = {
    "mean score": (
        "Summarise `mean_new_task` for {observed} instead of `mean_observed` "
        "(hierbench.metrics.posterior_summary(fit, var='mean_new_task')), the like of a task bootstrap's "
        "interval, or pass allow_mismatch=True"
    ),
}
#: the same, when the result for these tasks is an IRT fit's ``mean_task`` (an IRT fit has no ``mean_new_task``)
_IRT_ADVICE = (
    "{observed} summarise an IRT fit's `mean_task`, which has no population counterpart: it averages all the "
    "data's tasks (those an agent did not run too) with the tasks held fixed, and its like is a bootstrap over "
    "runs (hierbench.freq.bootstrap_ci(data, scheme='runs'), over each agent's own tasks); or pass "
    "allow_mismatch=True"
)
_PASS_ADVICE = (
    "Recompute {observed} with population=True (hierbench.metrics.pass_hat_k / pass_at_k / "
    "crossed_pass_k), the like of the frequentist task-level interval, or pass allow_mismatch=True"
)


def _mismatch_message(norm: dict[str, xr.Dataset], stated: dict[str, str]) -> str:
    """Why the stated quantities differ and what to change: the tasks the intervals are for, when only those differ."""
    tasks = {k: norm[k].attrs.get("tasks") for k in stated}
    bare = {_quantity_key(norm[k]).removesuffix(f" ({TASKS_WORDS.get(str(t), '')})") for k, t in tasks.items()}
    observed = [k for k, t in tasks.items() if t == "observed"]
    if len(bare) > 1 or not observed or "population" not in tasks.values():
        return (
            f"`results` estimate different quantities {stated}: put like with like side by side, "
            "or pass allow_mismatch=True"
        )
    population = [k for k, t in tasks.items() if t == "population"]
    irt = any(norm[k].attrs.get("variable") == "mean_task" for k in observed)
    advice = _IRT_ADVICE if irt else _POPULATION_ADVICE.get(_bare(norm[observed[0]]), _PASS_ADVICE)
    short = [k for k in population if _leaves_out(norm[k])]
    if short and not irt:  # population=True would average every task, which these leave out
        advice = (
            f"{short} average only the tasks with at least k runs, so no population=True result is their like "
            "(it averages every task); {observed} with min_runs='k' is over those tasks: set the point values "
            "side by side, or pass allow_mismatch=True"
        )
    return (
        f"`results` {observed} have intervals for {TASKS_WORDS['observed']} (tasks='observed') and "
        f"{population} for {TASKS_WORDS['population']} (tasks='population'): the second also "
        "counts how tasks vary, so it is wider for that reason alone and the widths do not compare. "
        + advice.format(observed=observed)
    )


def _scale_advice(scales: set[str]) -> str:
    """What puts results on these scales on one: the rescaling that fits them, or what to compare instead."""
    if any(FRACTIONAL_LINEAR in s for s in scales):
        return (
            "the Bayesian [0, 1]-score family's linear predictor is not the quasi-binomial logit of the "
            "maximum-likelihood half (its slope matches the logit's at mean 1/2 only and it is stretched 1.5 to "
            "3.5-fold in the tails), so its coefficients, sds and agents' variance are not the frequentist "
            "values' counterparts; compare the two halves on the points scale instead: "
            "hierbench.metrics.mean_response(fit, design) beside hierbench.freq.mean_response(ml_fit) (or "
            "average_marginal_effects of both)"
        )
    bare = {s.split(" (")[0] for s in scales}
    if bare == {"elo", "logit"}:
        return (
            "one logit is 400 / ln 10 = 173.7 Elo points; put both on one scale: "
            "fit_bradley_terry_ml(..., scale='logit') beside the posterior `ability`, or the default "
            "scale='elo' beside the posterior `elo`"
        )
    points = sorted(s for s in scales if s.startswith("points of"))
    if points and len(points) < len(scales) and all(s.startswith("points of") or s in ("probability", "score") for s in scales):
        return (
            f"{points} are 100 x a probability or a [0, 1] score: divide those results' estimate and ci by "
            "100 (as a Dataset of `estimate` and `ci`, the ci's attrs kept and attrs['scale'] set to the "
            "others'), or multiply the others' by 100"
        )
    return "an Elo point, a logit, points and a probability do not compare; put each on one scale"


def _check_scales(norm: dict[str, xr.Dataset]) -> None:
    """Refuse results on different scales, or a result that states no scale beside one that does."""
    scales = {k: v.attrs["scale"] for k, v in norm.items() if "scale" in v.attrs}
    if len(set(scales.values())) > 1:
        raise MismatchedEstimatesError(
            f"`results` are on different scales {scales}: {_scale_advice(set(scales.values()))}, or pass "
            "allow_mismatch=True"
        )
    silent = [k for k in norm if k not in scales]
    by_kind = {_KIND_WHY.format(x) for x in KIND_SCALES}
    # a scale stated, or implied by the quantity stated (a pass^k's), asks a silent result for one; a scale
    # only implied by an interval's kind (a Wilson interval's) does not
    stated = [k for k in scales if norm[k].attrs["scale_from"] not in by_kind]
    if stated and silent:
        implied = {k: norm[k].attrs["scale_from"] for k in scales if norm[k].attrs["scale_from"] != "stated"}
        how = f" ({', '.join(f'{k!r}: {w}' for k, w in implied.items())})" if implied else ""
        raise MismatchedEstimatesError(
            f"`results` {silent} state no scale and {list(scales)} are on the {scales[stated[0]]!r} "
            f"scale{how}: nothing says the first are on it too (a logit beside a probability would read as "
            "a method's disagreement). State it (attrs['scale'] on the estimate, e.g. the posterior "
            "variable's own, which hierbench.metrics.posterior_summary keeps), or pass allow_mismatch=True "
            "if you know they are on one scale"
        )


def _check_targets(norm: dict[str, xr.Dataset], allow: bool) -> None:
    """Refuse estimates on different scales, of different quantities, or over different numbers of tasks."""
    if allow:
        return
    _check_scales(norm)
    _check_selection(norm)
    stated = {k: v.attrs["quantity"] for k, v in norm.items() if "quantity" in v.attrs}
    if len({_quantity_key(norm[k]) for k in stated}) > 1:
        raise MismatchedEstimatesError(_mismatch_message(norm, stated))
    counted = {k: v["n_tasks"] for k, v in norm.items() if "n_tasks" in v}
    names = list(counted)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            x, y = xr.align(counted[a], counted[b], join="inner")
            bad = (x != y) & x.notnull() & y.notnull()
            if bool(bad.any()):
                cells = bad.where(bad, drop=True)
                first = {d: cells[d].values[0].item() for d in cells.dims if d in cells.coords}
                raise MismatchedEstimatesError(
                    f"`results` {a!r} and {b!r} average over different task sets: "
                    f"{int(bad.sum())} cells differ in n_tasks, e.g. {first}: "
                    f"{float(x.sel(first).item()):g} vs {float(y.sel(first).item()):g} tasks. Estimate "
                    "both over the same tasks (metrics.pass_hat_k(..., min_runs='k') keeps the tasks "
                    "with at least k runs, those the unbiased estimator averages), or pass "
                    "allow_mismatch=True"
                )


def _only_in(what: str, labels: dict[str, list], everywhere: list) -> list[str]:
    """``"1 agent only in 'Bayes' (['x'])"``, per result that has labels the others lack."""
    out = []
    for k, xs in labels.items():
        extra = [x for x in xs if x not in set(everywhere)]
        if extra:
            more = f" and {len(extra) - 5} more" if len(extra) > 5 else ""
            noun = what if len(extra) == 1 else f"{what}s"
            out.append(f"{len(extra)} {noun} only in {k!r} ({[str(x) for x in extra[:5]]}{more})")
    return out


def _align_labels(norm: dict[str, xr.Dataset]) -> tuple[dict[str, xr.Dataset], dict[str, list[str]]]:
    """Every result on the union of the labels, per labelled dim, in the order first seen.

    Returns the reindexed results (NaN where a result has no such label) and, per
    dim, the labels some results lack (empty when every result has the same ones).
    """
    dims = {d for v in norm.values() for d in v["estimate"].dims if d in v["estimate"].coords}
    order, why = {}, {}
    for d in sorted(dims):
        labels = {k: list(v[d].values) for k, v in norm.items() if d in v["estimate"].coords}
        union = list(dict.fromkeys(x for xs in labels.values() for x in xs))
        common = [x for x in union if all(x in set(xs) for xs in labels.values())]
        if differ := _only_in(d, labels, common):
            why[d] = differ
        order[d] = union
    aligned = {k: v.reindex({d: order[d] for d in order if d in v["estimate"].coords}) for k, v in norm.items()}
    return aligned, why


def _refuse_labels(why: dict[str, list[str]]) -> None:
    """Refuse results over different labels (agents, pairs, k) instead of joining them with NaN rows."""
    if not why:
        return
    d = next(iter(why))
    raise MismatchedEstimatesError(
        "`results` cover different " + "; ".join(f"{dim}s: " + "; ".join(w) for dim, w in why.items())
        + f". Side by side they would show NaN rows where a result has no such {d}; compute every "
        f"result on the same {d}s (e.g. data.sel({d}=[...]) before estimating), or pass "
        "allow_mismatch=True (the rows are then joined and the table's attrs['joined'] says which)"
    )


def _data_check(norm: dict[str, xr.Dataset], allow: bool, labels: dict[str, list[str]]) -> str:
    """Refuse results whose data fingerprints differ; the words for the table's ``attrs["data_check"]``.

    Two results are compared by the first fingerprint both carry
    (:data:`FINGERPRINTS`): the log's score cells (a frequentist result's, and
    any fit's, so two models of one log agree), else what the fits' models saw.
    Where a pair shares none, only what the results state (their labels,
    ``n_tasks``) was compared, and the text says so. The refusal reads as
    ``hierbench.report.check_fit_data``'s: what differs, the two fingerprints.
    """
    if len(norm) < 2:
        return "one result: nothing to compare"
    names, unchecked, differ, shared = list(norm), [], [], []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            key = next((k for k in FINGERPRINTS if norm[a].attrs.get(k) and norm[b].attrs.get(k)), None)
            if key is None:
                unchecked.append((a, b))
                continue
            pa, pb = str(norm[a].attrs[key]), str(norm[b].attrs[key])
            shared.append(pa)
            if pa != pb and not allow:
                why = "; ".join(w for ws in labels.values() for w in ws) or "their data differ"
                raise MismatchedEstimatesError(
                    f"results[{a!r}] and results[{b!r}] are not the same evaluation: {why} "
                    f"(fingerprints {pa[:12]} and {pb[:12]}). Give results computed from "
                    "one log, read with the same options (the error policy and the columns change the "
                    "counts), or pass allow_mismatch=True"
                )
            if pa != pb:
                differ.append((a, b))
    if unchecked:
        silent = sorted({k for pair in unchecked for k in pair if not any(norm[k].attrs.get(f) for f in FINGERPRINTS)})
        who = f"{silent} carry no data fingerprint" if silent else f"the pairs {unchecked} share no kind of fingerprint"
        return (
            f"not checked: {who} ({' / '.join(FINGERPRINTS)}), so whether every result comes from the "
            "same log could not be checked; only their labels and n_tasks (where stated) were compared"
        )
    if not differ:
        return f"every result comes from the same data (fingerprint {shared[0][:12]})"
    return f"the results' data differ (pairs {differ}): accepted with allow_mismatch=True"


def side_by_side(
    results: Mapping[str, xr.Dataset | xr.DataArray | object],
    *,
    truth: xr.DataArray | None = None,
    allow_mixed_prob: bool = False,
    allow_mismatch: bool = False,
) -> xr.Dataset:
    """Put several methods' estimates and intervals along an ``estimator`` dim.

    Parameters
    ----------
    results : mapping of name -> result
        Each result as accepted by :func:`as_estimate`; they must share their
        other dims (e.g. ``agent``).
    truth : DataArray, optional
        Known values (a simulation's truth): adds ``error = estimate - truth``
        and ``covers`` (bool).
    allow_mixed_prob : bool
        Intervals of different levels are not comparable; by default a
        :class:`MixedLevelError` is raised.
    allow_mismatch : bool
        By default a :class:`MismatchedEstimatesError` names what differs and
        the argument to change, for results

        * on different scales (``attrs["scale"]``: a logit beside a probability), or with no
          scale beside one that states one or whose quantity implies one (a scale implied by
          an interval's kind alone, as a Wilson interval's, asks nothing of the others);
        * of different estimands (``quantity``, pass^1 and pass@1 reading as the mean score,
          and ``tasks``: an interval for these tasks, ``"observed"``, or for a new draw of
          tasks from the same population, ``"population"``) or over different numbers of
          tasks (``n_tasks``). :func:`hierbench.freq.pass_hat_k`'s interval is for a new draw
          of tasks, as is ``hierbench.metrics.pass_hat_k(fit, population=True)``: that pair
          is accepted, the posterior over the observed tasks beside it refused (so is a task
          bootstrap beside ``mean_observed``: ``mean_new_task`` is its like), and so is a
          frequentist pass^k that leaves out the tasks run fewer than k times (its
          ``n_tasks`` below the tasks run) beside one over every task;
        * over different agents (or other labels): they would be joined with
          NaN rows;
        * from different logs: where two results carry the fingerprint of
          their log (``hierbench_counts_hash``: the score cells per agent and
          task, which the task bootstrap, ``success_rate``, pass^k / pass@k
          and every fit record, and a fit's variables and posterior summaries
          keep; else a fit's ``hierbench_data_hash``), it must be one. Two
          models of one log share it.

        With ``allow_mismatch=True`` the rows are set side by side anyway and
        the labels joined (``attrs["joined"]`` says which).

    Returns
    -------
    xarray.Dataset
        ``estimate(estimator, ...)``, ``ci(estimator, ..., ci_bound)``,
        ``width(estimator, ...)``, ``ci_prob(estimator)``, ``ci_kind(estimator)``,
        ``ci_detail(estimator)``, ``scale(estimator)``, ``quantity(estimator)`` and
        ``n_tasks`` (when the results state them); ``interval`` is a deprecated
        alias of ``ci``. ``attrs["data_check"]`` says whether the results were
        shown to come from one log (every one carries the same fingerprint) or
        could not be (some carry none: then only their labels and ``n_tasks``
        were compared).

    Examples
    --------
    >>> from hierbench.freq import bootstrap_ci, wilson_interval
    >>> from hierbench.testing import simulate_eval
    >>> ds, _ = simulate_eval(n_agents=1, n_tasks=40, n_runs=1, rng=0)
    >>> boot = bootstrap_ci(ds.squeeze("agent", drop=True), n_resamples=999, rng=1)
    >>> wil = wilson_interval(ds.score.sum(), ds.score.count())
    >>> t = side_by_side({"bootstrap": boot, "wilson": wil})
    >>> t["ci_kind"].values.tolist()
    ['percentile', 'wilson']
    """
    if not results:
        raise ValueError("`results` must name at least one method")
    norm = {str(k): as_estimate(v, name=f"results[{k!r}]") for k, v in results.items()}
    probs = {k: float(v["ci"].attrs["ci_prob"]) for k, v in norm.items()}
    if len(set(probs.values())) > 1 and not allow_mixed_prob:
        raise MixedLevelError(
            f"`results` mix interval levels {probs}: compare intervals at one `prob`, "
            "or pass allow_mixed_prob=True"
        )
    _check_targets(norm, allow_mismatch)
    norm, differ = _align_labels(norm)
    data_check = _data_check(norm, allow_mismatch, differ)
    if not allow_mismatch:
        _refuse_labels(differ)
    out = _stacked(norm, probs)
    out.attrs["data_check"] = data_check
    if differ:
        out.attrs["joined"] = (
            "; ".join(w for ws in differ.values() for w in ws) + " (NaN rows for the results without them)"
        )
    if truth is not None:
        out["truth"] = truth
        out["error"] = out["estimate"] - truth
        lo = out["ci"].sel(ci_bound="lower", drop=True)
        hi = out["ci"].sel(ci_bound="upper", drop=True)
        out["covers"] = (lo <= truth) & (truth <= hi)
    # deprecated alias for callers written before the house name `ci` (e.g. the demo)
    out["interval"] = out["ci"].assign_attrs(deprecated="alias of `ci`")
    return out


def _stacked(norm: dict[str, xr.Dataset], probs: dict[str, float]) -> xr.Dataset:
    """The results along ``estimator``, with each one's width, level, kind, detail, quantity and scale."""
    methods = list(norm)
    # n_insufficient only serves the check of the tasks a pass^k leaves out (_check_selection)
    parts = [v.drop_vars("n_insufficient", errors="ignore").drop_attrs() for v in norm.values()]
    out = xr.concat(parts, dim="estimator", join="outer")
    out["ci"] = out["ci"].transpose(..., "ci_bound")
    out["width"] = out["ci"].sel(ci_bound="upper") - out["ci"].sel(ci_bound="lower")
    out = out.assign_coords(estimator=np.array(methods, dtype=object))
    out["ci_prob"] = ("estimator", [probs[m] for m in methods])
    per = {
        "ci_kind": lambda v: v["ci"].attrs["ci_kind"],
        "ci_detail": lambda v: v["ci"].attrs.get("ci_detail", ""),
        "quantity": lambda v: v.attrs.get("quantity", ""),
        "scale": lambda v: v.attrs.get("scale", ""),
    }
    for name, get in per.items():
        out[name] = ("estimator", np.array([str(get(norm[m])) for m in methods], dtype=object))
    return out


def to_frame(table: xr.Dataset) -> pd.DataFrame:
    """A tidy pandas table of a :func:`side_by_side` result (one row per method and cell).

    Columns ``estimate``, ``lower``, ``upper``, ``width`` (``truth`` and
    ``covers`` with a truth), then what each row is: ``n_tasks`` where the
    results state it, ``ci_kind``, ``ci_prob``, ``ci_detail``, ``scale`` and
    ``quantity`` (what the row estimates and which tasks its interval is for),
    so two rows that estimate different things cannot read as two methods for
    one.

    Examples
    --------
    >>> from hierbench.freq import wilson_interval
    >>> t = side_by_side({"wilson": wilson_interval(9, 10)})
    >>> to_frame(t)[["lower", "upper"]].round(3).values.tolist()
    [[0.596, 0.982]]
    """
    cols = {
        "estimate": table["estimate"],
        "lower": table["ci"].sel(ci_bound="lower", drop=True),
        "upper": table["ci"].sel(ci_bound="upper", drop=True),
        "width": table["width"],
    }
    for extra in ("truth", "covers", "n_tasks"):
        if extra in table:
            cols[extra] = table[extra]
    df = xr.Dataset(cols).to_dataframe()
    keep = [c for c in df.columns if c in cols]
    df = df[keep]
    methods = df.index.get_level_values("estimator")
    for name in ("ci_kind", "ci_prob", "ci_detail", "scale", "quantity"):
        if name in table:
            df[name] = table[name].to_series().reindex(methods).to_numpy()
    return df


@dataclass(frozen=True, repr=False)
class CoverageStudyResult(Result):
    """Outcome of :func:`coverage_study`.

    ``estimate`` is the coverage and ``ci`` its Wilson interval (the Monte
    Carlo uncertainty of the study), one row per estimator (and cell).

    Attributes
    ----------
    coverage : DataArray
        Share of the replications with an interval (both ends defined) whose
        interval covered the truth, per estimator (and cell). A replication
        whose interval is undefined (NaN) is no miss: it is counted in
        ``n_undefined`` (``share_defined`` says how often the method gave an
        interval; ``coverage * share_defined`` counts an undefined interval
        as a miss).
    coverage_interval : DataArray
        Wilson interval for that share, over the ``n_defined`` replications
        (the Monte Carlo uncertainty of the study).
    mean_width, bias, rmse : DataArray
        Over the replications where they are defined.
    n_rep : int
    table : Dataset
        Every replication's ``side_by_side`` table, stacked along ``rep``
        (``to_dataset()`` holds it as ``table_<variable>``; ``defined`` says
        which intervals had both ends).
    n_defined, n_undefined : DataArray
        Replications whose interval was defined / undefined (NaN), per
        estimator (and cell).
    share_defined : DataArray
        ``n_defined / n_rep``: the share of replications with an interval.
    """

    coverage: xr.DataArray
    coverage_interval: xr.DataArray
    mean_width: xr.DataArray
    bias: xr.DataArray
    rmse: xr.DataArray
    n_rep: int
    table: xr.Dataset
    n_defined: xr.DataArray | None = None
    n_undefined: xr.DataArray | None = None
    share_defined: xr.DataArray | None = None

    estimate = field_alias("coverage", "The coverage (``coverage``), under the house name.")
    ci = field_alias("coverage_interval", "Its Wilson interval (``coverage_interval``).")

    def _repr_lines(self) -> list[str]:
        """The coverage per estimator, its Monte Carlo interval's level apart from the level studied.

        Where some intervals were undefined (NaN), the head says the coverage is among the defined
        ones and each line how many were defined.
        """
        if self._some_undefined():
            what = (f"of the {self.n_rep} replications, the share of those with an interval whose interval covered "
                    "the truth; an undefined (NaN) interval is counted apart, not as a miss: each line says how "
                    "many were defined")  # fmt: skip
        else:
            what = f"share of {self.n_rep} replications whose interval covered the truth"
        head = (f"{type(self).__name__}: coverage ({what}), with {interval_label(self.ci)} interval: the study's "
                "Monte Carlo error, at its own level (`prob`), not the level of the intervals studied (each line's "
                "note)")  # fmt: skip
        return [*wrap_repr([head]), *self._cell_lines()]

    def _some_undefined(self) -> bool:
        return self.n_undefined is not None and bool((self.n_undefined > 0).any())

    def _cell_notes(self) -> xr.DataArray | None:
        """Each estimator's intervals: their nominal level and kind, and how many were defined where some were not.

        The coverage is among the defined intervals, to be read against that level.
        """
        t = self.table
        if "ci_prob" not in t or "ci_kind" not in t:
            return None
        level = xr.apply_ufunc(lambda p: np.array([f"{100 * float(x):.4g}%" for x in np.ravel(p)]).reshape(np.shape(p)),
                               t["ci_prob"])  # fmt: skip
        note = "nominal " + level.astype(object) + " " + t["ci_kind"].astype(object) + " intervals"
        if not self._some_undefined():
            return note
        said = xr.apply_ufunc(np.vectorize(_defined_words, otypes=[object]), self.n_defined, self.n_undefined)
        return said + "; " + note


def _defined_words(n_defined: float, n_undefined: float) -> str:
    """``"of 140 defined; 60 undefined"``: the replications a coverage is among, and those left out."""
    return f"of {int(n_defined)} defined; {int(n_undefined)} undefined"


def _coverage_replication(
    _: int, gen: np.random.Generator, *, simulate: Callable, methods: Mapping[str, Callable]
) -> tuple[list[xr.Dataset], object]:
    """One replication of :func:`coverage_study`: simulate, then every method on the same data and stream."""
    data, truth = simulate(gen)
    return [as_estimate(methods[m](data, gen), name=f"methods[{m!r}]") for m in methods], truth


def _check_truth(values: np.ndarray, rep: int, like: xr.DataArray) -> None:
    """Refuse a truth that is not a finite number: it would count as a miss of every interval, defined or not."""
    v = np.asarray(values, dtype=float)
    bad = ~np.isfinite(v)
    if not bad.any():
        return
    cells = ["the scalar"] if not v.ndim else [
        ", ".join(f"{d}={like[d].values[i]}" if d in like.coords else f"{d}={i}" for d, i in zip(like.dims, idx, strict=True))
        for idx in list(zip(*np.nonzero(bad), strict=True))[:5]
    ]
    raise ValueError(
        f"`simulate` returned a truth that is not a finite number in replication {rep} ({int(bad.sum())} of "
        f"{v.size} cells, e.g. {'; '.join(cells)}): a coverage study needs the true value of every cell it "
        "scores; leave such cells out of the estimates, or give their truth"
    )


def _same_as_first(r: xr.Dataset, first: xr.Dataset, like: xr.DataArray, rep: int, method: str) -> None:
    """Refuse a replication's result whose labels, level or kind are not the first replication's (by method)."""
    said = []
    est = r["estimate"]
    if set(est.dims) != set(like.dims):
        said.append(f"dims {list(est.dims)} where replication 0 had {list(like.dims)}")
    else:
        for d in like.dims:
            if d not in like.indexes:
                if est.sizes[d] != like.sizes[d]:
                    said.append(f"{est.sizes[d]} entries along {d!r} where replication 0 had {like.sizes[d]}")
                continue
            got, want = r.get_index(d), like.indexes[d]
            if not got.equals(want) and (len(got) != len(want) or not got.is_unique or set(got) != set(want)):
                said.append(f"{d}s {[str(x) for x in got[:6]]} where replication 0 had {[str(x) for x in want[:6]]}")
    a, b = r["ci"].attrs.get("ci_prob"), first["ci"].attrs.get("ci_prob")
    if a != b:
        said.append(f"level {float(a):g} where replication 0 had {float(b):g}")
    a, b = str(r["ci"].attrs.get("ci_kind")), str(first["ci"].attrs.get("ci_kind"))
    if a != b:
        said.append(f"kind {a!r} where replication 0 had {b!r}")
    if said:
        raise MismatchedEstimatesError(
            f"`methods[{method!r}]` gave in replication {rep} {'; '.join(said)}: a coverage study scores each "
            "replication's cells against its truth by label, at one level and kind per method; have the method "
            "give the same labels, level and kind in every replication"
        )


def _aligned_bounds(r: xr.Dataset, like: xr.DataArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(estimate, lower, upper)`` of one result as arrays over ``like``'s dims and labels, in its order."""
    est, ci = r["estimate"], r["ci"]
    if est.dims != like.dims:
        est = est.transpose(*like.dims)
    if ci.dims != (*like.dims, "ci_bound"):
        ci = ci.transpose(*like.dims, "ci_bound")
    e, b = est.values, ci.values
    for axis, d in enumerate(like.dims):
        if d in like.indexes and not r.get_index(d).equals(like.indexes[d]):
            idx = r.get_index(d).get_indexer(like.indexes[d])
            e, b = np.take(e, idx, axis=axis), np.take(b, idx, axis=axis)
    return e, b[..., 0], b[..., 1]


def _aligned_truth(truth: object, like: xr.DataArray) -> np.ndarray:
    """A replication's truth over ``like``'s dims and labels (as ``side_by_side(..., truth=)`` aligns it)."""
    t = truth if isinstance(truth, xr.DataArray) else xr.DataArray(truth)
    if extra := [d for d in t.dims if d not in like.dims]:
        raise ValueError(
            f"`simulate` returned a truth over dims {list(t.dims)}; the estimates have {list(like.dims)} "
            f"({extra} not among them): give the truth of each estimated cell"
        )
    if any(d in like.indexes and not t.get_index(d).equals(like.indexes[d]) for d in t.dims):
        t = t.reindex({d: like.indexes[d] for d in t.dims if d in like.indexes})
    if t.dims != like.dims:
        t = t.broadcast_like(like).transpose(*like.dims)
    return np.asarray(t.values, dtype=float)


def _coverage_table(reps: list, names: list[str]) -> xr.Dataset:
    """The replications' estimates, intervals and truths over ``(rep, estimator, ...)``, with hits and errors.

    The first replication goes through :func:`side_by_side` (every check of a table); every replication's
    cells are then taken by label in that table's order, and one whose labels, level or kind differ from the
    first's is refused.
    """
    first, truth0 = reps[0]
    template = side_by_side(dict(zip(names, first, strict=True)), truth=truth0)
    like = template["estimate"].isel(estimator=0, drop=True)
    est_rows, lo_rows, hi_rows, truth_rows = [], [], [], []
    for i, (norm, truth) in enumerate(reps):
        cells = []
        for m, r, r0 in zip(names, norm, first, strict=True):
            _same_as_first(r, r0, like, i, m)
            cells.append(_aligned_bounds(r, like))
        est_rows.append([c[0] for c in cells])
        lo_rows.append([c[1] for c in cells])
        hi_rows.append([c[2] for c in cells])
        truth_rows.append(_aligned_truth(truth, like))
        _check_truth(truth_rows[-1], i, like)
    dims = ("rep", *template["estimate"].dims)
    coords = {k: v for k, v in template["estimate"].coords.items()}
    est = xr.DataArray(np.asarray(est_rows, float), dims=dims, coords=coords)
    lo = xr.DataArray(np.asarray(lo_rows, float), dims=dims, coords=coords)
    hi = xr.DataArray(np.asarray(hi_rows, float), dims=dims, coords=coords)
    tru = xr.DataArray(
        np.broadcast_to(np.asarray(truth_rows, float)[:, None], est.shape), dims=dims, coords=coords
    )
    return xr.Dataset(
        {
            "estimate": est,
            "ci": xr.concat([lo, hi], dim="ci_bound")
            .assign_coords(ci_bound=list(CI_BOUNDS))
            .transpose(..., "ci_bound"),
            "width": hi - lo,
            "truth": tru,
            "error": est - tru,
            "covers": (lo <= tru) & (tru <= hi),
            "defined": lo.notnull() & hi.notnull(),
            "ci_prob": template["ci_prob"],
            "ci_kind": template["ci_kind"],
        }
    )


@fill_doc
def coverage_study(
    simulate: Callable[[np.random.Generator], tuple[object, xr.DataArray]],
    methods: Mapping[str, Callable[[object, np.random.Generator], object]],
    *,
    n_rep: int,
    prob: float = DEFAULT_PROB,
    executor: Any = None,
    progress: bool | None = None,
    rng: None | int | np.random.Generator = None,
) -> CoverageStudyResult:
    """Empirical coverage, width, bias and RMSE of interval methods against a known truth.

    Parameters
    ----------
    simulate : callable
        ``simulate(rng) -> (data, truth)``; ``truth`` is a DataArray aligned
        with the methods' estimates.
    methods : mapping of name -> callable
        ``method(data, rng) -> result`` (anything :func:`as_estimate` accepts).
        Every replication's cells are taken by label, as :func:`side_by_side`
        aligns them (and the truth to them); a replication whose labels, level
        or kind differ from the first's is refused, naming it and the method.
    n_rep : int
        Number of replications.
    prob : float
        Level of the Wilson interval reported for each coverage share.
    executor : concurrent.futures.Executor, optional
        Runs the replications (a process pool, a Dask ``Client.get_executor()``);
        None runs them here, one after another. ``simulate`` and the methods
        must then be picklable (module-level functions).
    progress : bool or None
        A bar over the replications (None: only when a person watches).
    %(rng)s
        Replication ``i`` draws from the ``i``-th generator spawned from it
        (:func:`hierbench.spawn_generators`): its data, then each method in
        the order given. The study is therefore bit-identical whatever the
        executor and the number of workers.

    Returns
    -------
    CoverageStudyResult
        The coverage is among the replications where a method gave an
        interval (both ends defined); ``n_defined`` / ``n_undefined`` count
        them per estimator and ``share_defined`` is their share, so a method
        that fails to give an answer is told apart from one that gives a
        wrong one.

    Examples
    --------
    A z-interval for a normal mean with known SD covers 95% of the time:

    >>> import numpy as np, xarray as xr
    >>> from hierbench._base import make_interval
    >>> def simulate(rng):
    ...     return rng.normal(0.3, 1.0, 25), xr.DataArray(0.3)
    >>> def z95(x, rng):
    ...     m, h = x.mean(), 1.96 / 5
    ...     return xr.Dataset({"estimate": xr.DataArray(m), "ci": make_interval(m - h, m + h, prob=0.95, kind="normal")})
    >>> res = coverage_study(simulate, {"z": z95}, n_rep=400, rng=0)
    >>> bool(0.9 < float(res.coverage.sel(estimator="z")) < 0.99)
    True
    """
    n_rep = check_int(n_rep, "n_rep", min=1)
    prob = check_prob(prob)
    names = list(methods)
    reps = map_seeded(
        _coverage_replication, range(int(n_rep)), rng=rng, executor=executor, progress=progress,
        desc="coverage study", kwargs={"simulate": simulate, "methods": methods},
    )  # fmt: skip
    table = _coverage_table(reps, names)
    n = int(n_rep)
    hits = table["covers"].sum("rep")
    n_def = table["defined"].sum("rep")
    # a cell with no interval at all: NaN coverage and interval, said by its repr line ("of 0 defined")
    cov_iv = wilson_interval(hits, n_def.where(n_def > 0, 1), prob=prob).rename(None).where(n_def > 0)
    cov_iv.attrs["ci_detail"] = "Wilson score interval: the Monte Carlo uncertainty of the coverage"
    return CoverageStudyResult(
        coverage=(hits / n_def.where(n_def > 0)).rename(None),
        coverage_interval=cov_iv,
        mean_width=table["width"].mean("rep"),
        bias=table["error"].mean("rep"),
        rmse=np.sqrt((table["error"] ** 2).mean("rep")),
        n_rep=n,
        table=table,
        n_defined=n_def.rename(None),
        n_undefined=(n - n_def).rename(None),
        share_defined=(n_def / n).rename(None),
    )
