"""The cumulative-logit (graded) likelihood of a formula model, and its ordered thresholds.

A design row ``r`` with linear predictor ``eta_r`` grades its answers on the
scale ``g_1 < ... < g_K`` with

    P(grade <= g_k) = expit(theta_k - eta_r),   theta_1 < ... < theta_{K-1},

the parameterisation of R's ``ordinal::clmm`` and of the maximum-likelihood
half (:func:`hierbench.freq.fit_crossed_ml` with ``family="ordinal"``): a
larger ``eta`` moves grades up, and the thresholds carry the location (the
formula has no intercept). A row's grade counts are multinomial; the log
probability of a middle grade is written so that it never cancels,

    log(expit(a_k) - expit(a_{k-1})) = log expit(a_k) + log expit(-a_{k-1})
                                       + log(1 - exp(theta_{k-1} - theta_k)),

with ``a_k = theta_k - eta``: the last term depends on the thresholds only.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy.special import gammaln

from ...metrics import mixed_draws
from ...metrics import ordinal_probs
from ...metrics import row_predictor
from .._registry import make_prior
from .._registry import register_hook

__all__ = [
    "grade_log_coefficient", "grade_logp", "grade_runs", "ordinal_likelihood", "ordinal_log_probs", "run_grades",
    "threshold_prior",
]  # fmt: skip

#: draws x rows x grades per chunk of the pointwise log-likelihood
_CHUNK = 4_000_000


def ordinal_log_probs(eta: Any, cuts: Any) -> Any:
    """``log P(grade = g_k)`` per row and grade, ``(rows, K)``, from ``eta (rows,)`` and ``cuts (K - 1,)``."""
    a = cuts[None, :] - eta[:, None]
    log_expit = lambda x: -pt.softplus(-x)  # noqa: E731
    first = log_expit(a[:, :1])
    last = log_expit(-a[:, -1:])
    gap = pt.log1mexp(cuts[:-1] - cuts[1:])  # log(1 - exp(theta_{k-1} - theta_k)), < 0
    middle = log_expit(a[:, 1:]) + log_expit(-a[:, :-1]) + gap[None, :]
    return pt.concatenate([first, middle, last], axis=1)


def grade_logp(value: Any, eta: Any, cuts: Any, coef: Any) -> Any:
    """Each row's multinomial log-probability of its grade counts ``value (rows, K)``: the likelihood's logp."""
    return (value * ordinal_log_probs(eta, cuts)).sum(axis=1) + coef


def grade_log_coefficient(grade_counts: np.ndarray) -> np.ndarray:
    """The multinomial coefficient of each row's grade counts (a data constant), on the log scale.

    Examples
    --------
    >>> round(float(np.exp(grade_log_coefficient(np.array([[1.0, 2.0, 0.0]])))[0]), 12)  # 3! / (1! 2! 0!)
    3.0
    """
    gc = np.asarray(grade_counts, dtype=float)
    return gammaln(gc.sum(1) + 1.0) - gammaln(gc + 1.0).sum(1)


def threshold_prior(spec: dict[str, Any], n_categories: int, shift: Any) -> tuple[Any, Any]:
    """Ordered thresholds ``theta`` with iid ``spec`` priors: ``(seen, theta)``, both increasing.

    ``seen = theta - shift`` is what the likelihood sees (the random terms'
    means, absorbed: see :func:`hierbench.bayes.build_mixed`); it is sampled
    under the ordered transform with each prior's location moved by
    ``-shift``, which is ``theta``'s prior exactly (the ordering's
    normalising constant does not depend on a common shift).

    The ordered transform acts on the sampler's coordinates only: forward
    draws (``pm.sample_prior_predictive``) of ``thresholds_seen`` are iid,
    unordered. What the likelihood and ``thresholds`` see is therefore the
    sorted vector: the identity wherever the sampler goes (its draws are
    ordered), and in forward sampling the order statistics of the iid draws,
    whose law is the prior the log density states (iid, restricted to the
    ordered set). So prior-predictive thresholds and grades are those of the
    model, and the posterior is unchanged.
    """
    spec = dict(spec)
    if "mu" not in spec:
        from .._registry import PriorError

        raise PriorError(f"`priors['thresholds']` must be a location family with a `mu` parameter; got {spec}")
    spec["mu"] = spec["mu"] - shift
    init = np.linspace(-2.0, 2.0, n_categories - 1)
    raw = make_prior(
        "thresholds_seen", spec, dims="threshold", transform=pm.distributions.transforms.ordered, initval=init
    )
    seen = pt.sort(raw)
    theta = pm.Deterministic("thresholds", seen + shift, dims="threshold")
    return seen, theta


def ordinal_likelihood(eta: Any, cuts: Any, grade_counts: np.ndarray, row_dim: str) -> None:
    """The multinomial likelihood of each row's grade counts (``y(row_dim, grade)``)."""
    gc = pm.Data("grade_counts", np.asarray(grade_counts, dtype=np.int64), dims=(row_dim, "grade"))
    coef = pm.Data("grade_log_coef", grade_log_coefficient(grade_counts), dims=row_dim)
    n = pm.Data("grade_n", np.asarray(grade_counts).sum(1).astype(np.int64), dims=row_dim)
    cats = np.arange(np.asarray(grade_counts).shape[1])

    def logp(value: Any, eta: Any, cuts: Any, n: Any, cats: Any) -> Any:
        return grade_logp(value, eta, cuts, coef)

    def random(eta: Any, cuts: Any, n: Any, cats: Any, rng: np.random.Generator | None = None, size: Any = None) -> np.ndarray:
        p = ordinal_probs(np.asarray(eta), np.asarray(cuts))
        return rng.multinomial(np.broadcast_to(n, p.shape[:-1]), p)

    pm.CustomDist(
        "y", eta, cuts, n, cats, logp=logp, random=random, observed=gc,
        signature="(r),(c),(r),(k)->(r,k)", dims=(row_dim, "grade"), dtype="int64",
    )  # fmt: skip


@functools.cache
def _grade_logp_draws() -> Any:
    """:func:`grade_logp` compiled over draws: ``(eta (S, rows), cuts (S, K - 1), counts, coef) -> (S, rows)``.

    The likelihood's own graph, vectorised over a leading draw dim (PyTensor's
    ``vectorize_graph``), so the pointwise log-likelihood is the model's logp, not a second copy of it.
    """
    import pytensor
    from pytensor.graph.replace import vectorize_graph

    eta, cuts, value, coef = pt.dvector("eta"), pt.dvector("cuts"), pt.dmatrix("counts"), pt.dvector("coef")
    eta_s, cuts_s = pt.dmatrix("eta_draws"), pt.dmatrix("cuts_draws")
    out = vectorize_graph(grade_logp(value, eta, cuts, coef), {eta: eta_s, cuts: cuts_s})
    with pytensor.config.change_flags(numba__fastmath=False):  # as the model's log density is compiled
        return pytensor.function([eta_s, cuts_s, value, coef], out)


def grade_runs(grade_counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each run's design row and its place among its row's runs: ``(run_row, pos)``, runs in row order.

    Examples
    --------
    >>> [a.tolist() for a in grade_runs(np.array([[0, 1, 0], [2, 0, 1]]))]
    [[0, 1, 1, 1], [0, 0, 1, 2]]
    """
    n = np.asarray(grade_counts, dtype=np.int64).sum(1)
    run_row = np.repeat(np.arange(n.size), n)
    return run_row, np.arange(run_row.size) - np.repeat(np.cumsum(n) - n, n)


def run_grades(counts: np.ndarray, run_row: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """Each run's grade (index on the scale) from grade counts ``(..., rows, K)``: ``(..., runs)``.

    A row's runs take its grades in increasing order (the runs of a cell are exchangeable in the
    model, so an observed cell and a predicted one are compared order statistic by order statistic).

    Examples
    --------
    >>> run_grades(np.array([[0, 1, 0], [2, 0, 1]]), *grade_runs(np.array([[0, 1, 0], [2, 0, 1]]))).tolist()
    [1, 0, 0, 2]
    """
    counts = np.asarray(counts)
    lead = counts.shape[:-2]
    flat = counts.reshape(-1, *counts.shape[-2:])
    out = np.empty((flat.shape[0], run_row.size), dtype=np.int64)
    step = max(1, _CHUNK // max(run_row.size * counts.shape[-1], 1))
    for lo in range(0, flat.shape[0], step):
        cum = np.cumsum(flat[lo : lo + step], axis=-1)[:, run_row, :]
        out[lo : lo + step] = (cum <= pos[:, None]).sum(-1)
    return out.reshape(*lead, run_row.size)


def _grade_values(categories: np.ndarray, index: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
    """The grades themselves (integers) when the scale holds integers, else their places 1..K."""
    cats = np.asarray(categories, dtype=float)
    if np.array_equal(cats, np.round(cats)):
        return cats.astype(np.int64)[index], {"grades": "the grade (the scale's own integers)"}
    places = ", ".join(f"{k + 1} = {c:g}" for k, c in enumerate(cats))
    return index + 1, {"grades": f"the grade's place on the scale: {places}"}


@register_hook("mixed.ordinal_layout")
def _layout(dt: xr.DataTree, gen: np.random.Generator | None = None, *, info: Mapping[str, Any]) -> xr.DataTree:
    """Lay a graded fit's outcome out one run at a time, ``y(obs)``, in every group that has it.

    The likelihood counts grades per design row (``y(row, grade)``: a multinomial per row, how
    the model is sampled and what the predictive hook draws); ArviZ reads one value per
    observation, the same in ``observed_data``, the predictives and ``log_likelihood`` (which
    :func:`_log_likelihood` writes per run). Each row's runs are its grades in increasing order
    (:func:`run_grades`). No draw changes: the posterior is not touched, ``gen`` is not used.
    """
    design = info["design"]
    run_row, pos = grade_runs(design.grade_counts)
    coords = {"obs": np.arange(run_row.size)}
    for group in ("observed_data", "posterior_predictive", "prior_predictive"):
        if group not in dt.children or "y" not in dt[group].data_vars or "grade" not in dt[group]["y"].dims:
            continue
        ds = dt[group].to_dataset()
        da = ds["y"]
        lead = [d for d in da.dims if d not in (info["data"]["row_dim"], "grade")]
        da = da.transpose(*lead, info["data"]["row_dim"], "grade")
        values, attrs = _grade_values(design.categories, run_grades(da.values, run_row, pos))
        y = xr.DataArray(values, dims=(*lead, "obs"), coords={**{d: da[d] for d in lead if d in da.coords}, **coords},
                         attrs={**da.attrs, **attrs})  # fmt: skip
        dt[group] = xr.DataTree(xr.Dataset({"y": y}, attrs=ds.attrs))
    return dt


def _observed_grades(dt: xr.DataTree, design: Any, run_row: np.ndarray, pos: np.ndarray, row_dim: str) -> np.ndarray:
    """Each run's grade (index on the scale) as the fit observed it: its counts, or its runs once laid out.

    The fit's own ``observed_data`` (a replicate's, when its data were swapped), else the design's.
    """
    y = dt["observed_data"]["y"] if "observed_data" in dt.children and "y" in dt["observed_data"].data_vars else None
    if y is not None and y.dims == (row_dim, "grade"):
        return run_grades(y.values, run_row, pos)
    if y is not None and y.dims == ("obs",) and y.size == run_row.size:
        index = -np.ones(y.size, dtype=np.int64)
        for k, value in enumerate(_grade_values(design.categories, np.arange(design.categories.size))[0]):
            index[y.values == value] = k
        if (index >= 0).all():
            return index
    return run_grades(design.grade_counts, run_row, pos)


@register_hook("mixed.ordinal_log_likelihood")
def _log_likelihood(dt: xr.DataTree, *, info: Mapping[str, Any]) -> xr.Dataset:
    """Pointwise log-likelihood ``y(chain, draw, obs)`` of a graded formula fit (for LOO), one run at a time.

    PyMC cannot compute it (``pm.compute_log_likelihood`` refuses a model with
    an explicit initial value, which the ordered thresholds need: their
    default start, all equal, is at log(0) in the ordered coordinates). Each
    draw's linear predictor per design row (``row_predictor``, every random
    term at its drawn levels) and its thresholds go through the likelihood's
    own logp, ``grade_logp``, compiled over draws, once per run (its grade
    alone, ``y(obs)`` as :func:`_layout` lays the outcome out). Where rows are
    runs this is the row's log-likelihood; where rows are cells, a cell's
    runs sum to its multinomial log-likelihood less the coefficient
    ``grade_log_coefficient`` (LOO leaves one run out).
    """
    design = info["design"]
    dr = mixed_draws(dt, design)
    run_row, pos = grade_runs(design.grade_counts)
    grade = _observed_grades(dt, design, run_row, pos, info["data"]["row_dim"])
    held = np.ones(len(design.random), dtype=bool)
    counts = np.zeros((run_row.size, design.grade_counts.shape[1]))
    counts[np.arange(run_row.size), grade] = 1.0
    coef = np.zeros(run_row.size)
    fn = _grade_logp_draws()
    S = dr.sd.shape[0]
    out = np.empty((S, run_row.size))
    step = max(1, _CHUNK // max(counts.size, 1))
    for lo in range(0, S, step):
        sl = slice(lo, min(lo + step, S))
        eta = row_predictor(dr.subset(sl), design, design.X, run_row, held)
        out[sl] = fn(eta, dr.thresholds[sl], counts, coef)
    post = dt["posterior"]
    ll = out.reshape(post.sizes["chain"], post.sizes["draw"], run_row.size)
    return xr.Dataset(
        {"y": (("chain", "draw", "obs"), ll)},
        coords={"chain": post["chain"].values, "draw": post["draw"].values, "obs": np.arange(run_row.size)},
    )
