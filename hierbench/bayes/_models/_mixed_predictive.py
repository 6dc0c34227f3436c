"""The posterior predictive of a formula model (:func:`hierbench.bayes.build_mixed`), vectorised over draws.

Each draw's linear predictor per design row (every sampled random term at
its drawn levels, :func:`hierbench.metrics._mixed.row_predictor`), plus a
fresh agent x task effect where the likelihood integrated it out; then the
family's outcome: successes of the row's runs, grade counts, or each run's
score.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import xarray as xr
from scipy.special import expit

from ..._numerics import binomial_draws
from ...metrics import mixed_draws
from ...metrics import ordinal_probs
from ...metrics import row_predictor
from ...metrics import task_codes
from .._registry import register_hook
from ._unit_interval import draw_scores

__all__: list[str] = []

#: draws x rows per chunk of the predictive
_CHUNK = 4_000_000


def _outcome(design: Any, extra: Mapping[str, Any], dr: Any, eta: np.ndarray, sl: slice, gen: np.random.Generator) -> np.ndarray:
    if design.family == "binomial":
        return binomial_draws(gen, design.n, expit(eta))
    if design.family == "ordinal":
        p = ordinal_probs(eta, dr.thresholds[sl][:, None, :])
        return gen.multinomial(np.broadcast_to(design.grade_counts.sum(1).astype(np.int64), eta.shape), p)
    raise AssertionError(design.family)


@register_hook("mixed.predictive")
def _predictive(dt: xr.DataTree, gen: np.random.Generator, *, info: Mapping[str, Any]) -> xr.DataTree:
    """Posterior predictive ``y`` over the likelihood's own dims."""
    design, extra = info["design"], info["data"]
    dr = mixed_draws(dt, design)
    held = np.array([dr.re[t.name] is not None for t in design.random])
    rows = np.arange(len(design.y))
    S = dr.sd.shape[0]
    post = dt["posterior"].to_dataset()
    fractional = design.family == "fractional"
    if fractional:
        obs_row = np.asarray(extra.get("obs_row", rows))
        obs_task = task_codes(design)[1][obs_row]
    out = None
    step = max(1, _CHUNK // max(len(rows), 1))
    for lo in range(0, S, step):
        sl = slice(lo, min(lo + step, S))
        sub = dr.subset(sl)
        eta = row_predictor(sub, design, design.X, rows, held)
        for k, t in enumerate(design.random):
            if not held[k]:  # integrated out of the likelihood: a fresh effect per row
                eta = eta + dr.sd[sl, k : k + 1] * t.slope * gen.standard_normal(eta.shape)
        if fractional:
            y = draw_scores(eta[:, obs_row], dr.interior[sl][:, obs_task], gen)
        else:
            y = _outcome(design, extra, dr, eta, sl, gen)
        if out is None:
            out = np.empty((S, *y.shape[1:]), dtype=y.dtype)
        out[sl] = y
    dims = ["obs"] if fractional else [extra["row_dim"]] + (["grade"] if design.family == "ordinal" else [])
    da = xr.DataArray(out.reshape(post.sizes["chain"], post.sizes["draw"], *out.shape[1:]),
                      dims=("chain", "draw", *dims), coords={"chain": post.chain, "draw": post.draw})  # fmt: skip
    dt["posterior_predictive"] = xr.DataTree(xr.Dataset({"y": da}))
    return dt
