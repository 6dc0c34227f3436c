"""Posterior draws of a formula model (:func:`hierbench.bayes.build_mixed`) turned into predictions.

A formula fit's posterior holds ``beta(coef)``, ``sd(component)`` (one per
random term, named as the formula writes it: ``"1|task"``), each sampled
term's effects ``re[<term>]`` over its levels, and for graded scores the
thresholds ``thresholds(threshold)``. Together with the design the model was
built from (:class:`hierbench.data.ModelDesign`: its fixed-effect matrix,
each random term's level codes and slopes) they give every design row's
linear predictor, draw by draw. The reader's-scale quantities
(:mod:`._effects`) average its expected outcome over rows, with some random
terms held at their drawn values and the others integrated out by the
package's one population rule (:func:`hierbench._numerics.logit_normal_expectation`),
as the maximum-likelihood half does at its estimates.

Pure numpy and xarray: a saved fit and its design are all it needs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr
from scipy.special import expit

from .._base import HierbenchError
from .._numerics import logit_normal_expectation
from .._numerics import population_nodes

__all__ = [
    "MixedDraws",
    "as_design",
    "expected_outcome",
    "integrated_sd",
    "mixed_draws",
    "ordinal_probs",
    "population_mean",
    "row_predictor",
    "task_codes",
    "unit_interval_mean",
]

#: floats per temporary of the population rule (draws x rows x nodes), about 40 MB
_CHUNK = 5_000_000


def ordinal_probs(eta: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """``P(grade = g_k)`` for ``eta (...,)`` and ``cuts (..., K - 1)`` broadcast: ``(..., K)``.

    Examples
    --------
    >>> ordinal_probs(np.array([0.0]), np.array([0.0])).round(3).tolist()
    [[0.5, 0.5]]
    """
    eta = np.asarray(eta, dtype=float)
    cum = expit(np.asarray(cuts, dtype=float) - eta[..., None])
    lead = np.zeros((*cum.shape[:-1], 1))
    p = np.diff(np.concatenate([lead, cum, lead + 1.0], axis=-1), axis=-1)
    return np.clip(p, 0.0, 1.0) / np.clip(p, 0.0, 1.0).sum(-1, keepdims=True)


def task_codes(design: Any) -> tuple[np.ndarray, np.ndarray]:
    """The tasks of a design's rows, sorted (as a ``(1|task)`` term's levels), and each row's code."""
    labels, codes = np.unique(design.frame["task"].astype(str).to_numpy(), return_inverse=True)
    return labels, codes.ravel()


def as_design(design: Any) -> Any:
    """The :class:`hierbench.data.ModelDesign` of a formula model: given, or carried by its model."""
    info = getattr(design, "hierbench", None)
    if isinstance(info, dict) and "design" in info:
        design = info["design"]
    needed = ("X", "random", "frame", "family", "matrix", "agent_index", "reader_scale", "counterfactuals", "groups", "agent_rows", "agent_terms")
    if not all(hasattr(design, a) for a in needed):
        raise HierbenchError(
            "`design` must be the ModelDesign the model was built from (hierbench.data.model_design with "
            "the fit's formula, or model.hierbench['design'] of hierbench.bayes.build_mixed); got "
            f"{type(design).__name__}"
        )
    return design


@dataclass(frozen=True)
class MixedDraws:
    """Flattened posterior draws of a formula fit (``S = chains x draws`` rows each)."""

    beta: np.ndarray  # (S, p)
    sd: np.ndarray  # (S, K)
    re: dict  # term name -> (S, levels) or None when integrated out of the likelihood
    thresholds: np.ndarray | None  # (S, K - 1)
    chain: np.ndarray
    draw: np.ndarray
    interior: np.ndarray | None = None  # (S, tasks): fractional family, each task's interior weight

    def subset(self, sl: slice) -> MixedDraws:
        """The draws in ``sl`` (a slice of the flattened draws)."""
        pick = lambda a: None if a is None else a[sl]  # noqa: E731
        return MixedDraws(self.beta[sl], self.sd[sl], {k: pick(v) for k, v in self.re.items()},
                          pick(self.thresholds), self.chain, self.draw, pick(self.interior))  # fmt: skip

    def as_draws(self, values: np.ndarray, dims: tuple[str, ...], coords: dict) -> xr.DataArray:
        """``values (S, ...)`` back on ``(chain, draw, ...)``."""
        shape = (self.chain.size, self.draw.size, *values.shape[1:])
        return xr.DataArray(values.reshape(shape), dims=("chain", "draw", *dims),
                            coords={"chain": self.chain, "draw": self.draw, **coords})  # fmt: skip


def mixed_draws(fit: xr.DataTree, design: Any) -> MixedDraws:
    """Read a formula fit's draws, checked against its design (coefficients and terms)."""
    if not isinstance(fit, xr.DataTree) or "posterior" not in fit.children:
        raise HierbenchError(f"`fit` must be a fitted DataTree with a posterior group; got {type(fit).__name__}")
    post = fit["posterior"].to_dataset()
    if "sd" not in post or ("beta" not in post and len(design.coef)):  # no fixed effect (thresholds alone): no beta
        raise HierbenchError(
            f"`fit` is not a formula fit (hierbench.bayes.build_mixed): it has no `beta` and `sd`; "
            f"variables {sorted(post.data_vars)[:8]}"
        )
    coef = [str(c) for c in post["coef"].values] if "coef" in post.coords else []
    comp = [str(c) for c in post["component"].values]
    want_t = [t.name for t in design.random]
    if coef != list(design.coef) or comp != want_t:
        raise HierbenchError(
            f"`design` does not match `fit`: the fit has coefficients {coef} and terms {comp}, the design "
            f"{list(design.coef)} and {want_t}"
        )
    S = post.sizes["chain"] * post.sizes["draw"]

    def flat(name: str, dim: str | None) -> np.ndarray:
        da = post[name].transpose("chain", "draw", *([dim] if dim else []))
        return np.asarray(da.values, dtype=float).reshape(S, -1)

    re = {t.name: (flat(f"re[{t.name}]", post[f"re[{t.name}]"].dims[-1]) if f"re[{t.name}]" in post else None)
          for t in design.random}  # fmt: skip
    return MixedDraws(
        beta=flat("beta", "coef") if coef else np.zeros((S, 0)), sd=flat("sd", "component"), re=re,
        thresholds=flat("thresholds", "threshold") if "thresholds" in post else None,
        chain=post["chain"].values, draw=post["draw"].values,
        interior=flat("interior", "task") if "interior" in post else None,
    )  # fmt: skip


def row_predictor(dr: MixedDraws, design: Any, X: np.ndarray, rows: np.ndarray, held: np.ndarray) -> np.ndarray:
    """``(S, len(rows))``: ``X[rows] beta`` plus the ``held`` random terms at their drawn values."""
    eta = dr.beta @ X[rows].T if X.shape[1] else np.zeros((dr.sd.shape[0], rows.size))
    for k, t in enumerate(design.random):
        if held[k]:
            if dr.re[t.name] is None:
                raise HierbenchError(f"term ({t.name}) was integrated out of the likelihood: it has no draws to hold")
            eta = eta + dr.re[t.name][:, t.codes[rows]] * t.slope[rows]
    return eta


def unit_interval_mean(eta: np.ndarray, interior: np.ndarray) -> np.ndarray:
    """Mean of the [0, 1]-score family.

    Mean of the [0, 1]-score family (:mod:`hierbench.bayes._models._unit_interval`):
    ``expit(theta) + w r'(theta) / (1 + w r(theta))``, ``r(theta) = tanh(theta / 2) / theta``,
    ``theta = eta (3 + 1.5 w) / (3 + 0.5 w)``.

    Examples
    --------
    >>> unit_interval_mean(np.array([0.0, 2.0]), np.array([5.0, 0.0])).round(4).tolist()
    [0.5, 0.8808]
    """
    e, w = np.broadcast_arrays(np.asarray(eta, dtype=float), np.asarray(interior, dtype=float))
    e = e * (3.0 + 1.5 * w) / (3.0 + 0.5 * w)
    small = np.abs(e) < 1e-4
    safe = np.where(small, 1.0, e)
    th = np.tanh(safe / 2.0)
    r = np.where(small, 0.5 - e**2 / 24.0, th / safe)
    dr = np.where(small, -e / 12.0, (safe / 2.0 * (1.0 - th**2) - th) / safe**2)
    return expit(e) + w * dr / (1.0 + w * r)


def population_mean(loc: np.ndarray, tau: np.ndarray, f: Any = None, interior: Any = None) -> np.ndarray:
    """Population expectation ``E[g(loc + tau Z)]`` by the package's rule.

    ``E[g(loc + tau Z)]``, ``Z ~ N(0, 1)``, by the population rule, in chunks of rows (its
    temporary has a node axis): ``g = f(expit(.))`` (``f`` default identity, as
    :func:`logit_normal_expectation`), or with ``interior`` the [0, 1]-score mean.
    """
    loc, tau = np.broadcast_arrays(np.asarray(loc, dtype=float), np.asarray(tau, dtype=float))
    w = None if interior is None else np.broadcast_to(np.asarray(interior, dtype=float), loc.shape).reshape(-1)
    out = np.empty(loc.shape)
    lf, tf, of = loc.reshape(-1), tau.reshape(-1), out.reshape(-1)
    u, wt = population_nodes()
    step = max(1, _CHUNK // u.size)
    for lo in range(0, lf.size, step):
        sl = slice(lo, lo + step)
        if w is None:
            of[sl] = logit_normal_expectation(lf[sl], tf[sl], f)
        else:
            of[sl] = (unit_interval_mean(lf[sl, None] + tf[sl, None] * u, w[sl, None]) * wt).sum(-1)
    return out


def expected_outcome(
    design: Any, dr: MixedDraws, eta: np.ndarray, tau: np.ndarray, rows: np.ndarray,
    threshold: float | None = None, f: Any = None,
) -> np.ndarray:  # fmt: skip
    """``E[outcome]`` per draw and design row (``rows``), the terms in ``tau`` integrated out.

    Binomial: the success probability. Fractional: the mean score of the
    row's task (:func:`unit_interval_mean`). Ordinal: the
    mean grade, or with ``threshold`` the share graded at least it. ``f``
    maps the per-run probability before averaging (``p ** k`` for pass^k).
    """
    if design.family == "fractional":
        return population_mean(eta, tau, interior=dr.interior[:, task_codes(design)[1][rows]])
    if design.family != "ordinal":
        return population_mean(eta, tau, f)
    cats, th = np.asarray(design.categories, dtype=float), dr.thresholds
    if threshold is not None:
        c = design.threshold_cut(threshold)  # a grade, its label or its score
        return population_mean(eta - th[:, c - 1 : c], tau, f)
    out = np.full(eta.shape, cats[0])
    for c in range(1, cats.size):
        out = out + (cats[c] - cats[c - 1]) * population_mean(eta - th[:, c - 1 : c], tau)
    return out


def integrated_sd(dr: MixedDraws, design: Any, rows: np.ndarray, integrate: np.ndarray) -> np.ndarray:
    """``(S, len(rows))``: the sd of the integrated terms' sum, ``sqrt(sum_k sd_k^2 z_rk^2)``."""
    tau2 = np.zeros((dr.sd.shape[0], rows.size))
    for k, t in enumerate(design.random):
        if integrate[k]:
            tau2 = tau2 + (dr.sd[:, k : k + 1] * t.slope[rows]) ** 2
    return np.sqrt(tau2)
