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

__all__ = ["grade_log_coefficient", "grade_logp", "ordinal_likelihood", "ordinal_log_probs", "threshold_prior"]

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


@register_hook("mixed.ordinal_log_likelihood")
def _log_likelihood(dt: xr.DataTree, *, info: Mapping[str, Any]) -> xr.Dataset:
    """Pointwise log-likelihood ``y(chain, draw, row)`` of a graded formula fit (for LOO), per draw.

    PyMC cannot compute it (``pm.compute_log_likelihood`` refuses a model with
    an explicit initial value, which the ordered thresholds need: their
    default start, all equal, is at log(0) in the ordered coordinates). Each
    draw's linear predictor per design row (``row_predictor``, every random
    term at its drawn levels) and its thresholds go through the likelihood's
    own logp, ``grade_logp``, compiled over draws.
    """
    design, row_dim = info["design"], info["data"]["row_dim"]
    dr = mixed_draws(dt, design)
    rows = np.arange(len(design.y))
    held = np.ones(len(design.random), dtype=bool)
    counts = np.asarray(design.grade_counts, dtype=float)
    coef = grade_log_coefficient(counts)
    fn = _grade_logp_draws()
    S = dr.sd.shape[0]
    out = np.empty((S, rows.size))
    step = max(1, _CHUNK // max(counts.size, 1))
    for lo in range(0, S, step):
        sl = slice(lo, min(lo + step, S))
        eta = row_predictor(dr.subset(sl), design, design.X, rows, held)
        out[sl] = fn(eta, dr.thresholds[sl], counts, coef)
    post = dt["posterior"]
    ll = out.reshape(post.sizes["chain"], post.sizes["draw"], rows.size)
    return xr.Dataset(
        {"y": (("chain", "draw", row_dim), ll)},
        coords={"chain": post["chain"].values, "draw": post["draw"].values, row_dim: rows},
    )
