"""METR's time horizon, Bayesian: the crossed model with log human minutes and an agent-specific slope.

:func:`build_horizon` builds the formula model (:func:`hierbench.bayes.build_mixed`)

    score ~ 0 + agent + agent:center(log2_minutes) + (1|task) [+ (1|cluster)] [+ (1|agent:task)]

on binary scores: each agent's own intercept and slope per doubling of the
human task length (the two numbers of METR's per-agent logistic regression),
with tasks (and task families, and agent x task cells) as random effects
instead of METR's run weights and hierarchical bootstrap. The length enters
centred at the design's mean ``log2`` minutes (about 45 minutes on METR's
runs), and the agents' coefficients get the formula models' wide ``Normal(0, 10)`` prior
(``MIXED_PRIORS["beta_level"]``, for its slopes too: once ``Normal(0, 2.5)``, widened for the
reason found here).
Why: the data fix each agent's level only relative to the mean of the task
and family effects (known to about +-0.5 logit on METR's 83 tasks in 36
families), so ``A`` independent ``Normal(0, s)`` priors act together as a
``Normal(0, s / sqrt(A))`` prior on the agents' common level. At ``s = 2.5``
that pulled every agent's logit at the centre of the covariate towards 0 by
up to 0.9 logit, which moved all the 50% horizons towards that centre at once:
with the covariate uncentred (its 0 a one-minute task) Claude 3.5 Sonnet
(New) came out at 30 minutes, centred at 77-94, against 37 for the maximum-
likelihood fit of the same formula and 45 with the wide prior (measured in
``models/horizon/card.md``).

Where it still differs from METR's estimator, by design: task families are
random effects rather than run weights (on METR's runs that shortens the 50%
horizons by about a quarter against per-agent regressions, well inside both
methods' intervals); each agent keeps its own slope (no pooling, as METR);
and the 80% horizon is read off the marginal success curve, which with task
effects of total sd about 3.7 is flatter at its ends than METR's logistic
one, so the two 80% horizons can differ more than the 50% ones (on METR, for
4 of its 9 agents with both; the report counts them). The terms in
brackets are included by the rules every crossed model uses
(:func:`hierbench.bayes._structure.decide_clusters`,
:func:`~hierbench.bayes._structure.decide_agent_task`). The horizons and
their trend over release dates are :func:`hierbench.metrics.time_horizon`
and :func:`hierbench.metrics.doubling_time`, the counterparts of
:func:`hierbench.freq.time_horizon` and :func:`hierbench.freq.doubling_time`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pymc as pm
import xarray as xr

from ...data import model_design
from ...data import task_minutes
from .._structure import Structure
from .._structure import cluster_figures
from .._structure import decide_agent_task
from .._structure import decide_clusters
from .._structure import formula_design
from ._formula_model import MIXED_PRIORS
from ._formula_model import build_chosen

__all__ = ["build_horizon"]

#: the default prior of the horizon model's intercepts and slopes: the formula models' (wide: see the module docstring)
HORIZON_BETA_PRIOR = MIXED_PRIORS["beta_level"]


def _terms(data: xr.Dataset, base: str, clusters: Any) -> tuple[str, dict]:
    """The formula (the base, a task-family term and an agent x task term where the rules allow them).

    Returned with the decisions that wrote it, for the model's record (``describe``).
    """
    st = Structure("horizon", {**formula_design(model_design(base, data, family="binomial")), **cluster_figures(data)})
    formula = base
    if decide_clusters(st, clusters):
        formula += " + (1|cluster)"
    if decide_agent_task(st, "auto") != "none":
        formula += " + (1|agent:task)"
    return formula, st.decisions


def with_log2_minutes(data: xr.Dataset, minutes: str) -> xr.Dataset:
    """``data`` with the task coord ``log2_minutes`` the horizon formula reads, made from ``minutes``.

    The one place it is made: :func:`build_horizon`, and the report when it
    rebuilds a horizon fit's design from the data.
    """
    return data.assign_coords(log2_minutes=("task", np.log2(task_minutes(data, minutes))))


def build_horizon(
    data: xr.Dataset,
    *,
    minutes: str = "human_minutes",
    clusters: Any = "auto",
    priors: Mapping[str, Mapping[str, Any]] | None = None,
    n_quad: int = 7,
    centred: Any = "auto",
) -> pm.Model:
    """The crossed model of binary scores with log2 human minutes and an agent-specific slope.

    The formula ``score ~ 0 + agent + agent:center(log2_minutes) + (1|task)``,
    plus ``(1|cluster)`` and ``(1|agent:task)`` where the crossed model's
    rules include them; the module docstring says why it is built so and
    where it differs from :func:`hierbench.freq.time_horizon`.

    Parameters
    ----------
    data : xarray.Dataset
        An eval dataset with binary scores (METR's ``score_binarized``) and a
        task coord of human completion times in minutes; a ``cluster`` task
        coord (task families) adds a family effect.
    minutes : str
        The task coord of human minutes (positive, finite).
    clusters : "auto" or bool
        Include ``(1|cluster)`` (auto: by the crossed model's cluster rule).
    priors : mapping, optional
        As :func:`hierbench.bayes.build_mixed`; ``beta`` defaults to
        ``HORIZON_BETA_PRIOR``, Normal(0, 10), here.
    n_quad, centred
        As :func:`hierbench.bayes.build_mixed`.

    Returns
    -------
    pymc.Model
        A formula model whose coefficients ``agent[a]`` and
        ``agent[a]:center(log2_minutes)`` are each agent's logit at the mean
        ``log2`` length and its slope per doubling of the task length (at a
        task of average difficulty); ``model.hierbench["options"]["minutes"]``
        records the coord the horizons read (:func:`hierbench.metrics.time_horizon`
        undoes the centring through the design).

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> rng = np.random.default_rng(0)
    >>> mins = np.geomspace(1, 480, 20)
    >>> p = 1 / (1 + np.exp(-(3.0 - 0.6 * np.log2(mins))))
    >>> ds = xr.Dataset({"score": (("agent", "task", "run"), (rng.random((2, 20, 3)) < p[None, :, None]) * 1.0)},
    ...                 coords={"agent": ["a", "b"], "human_minutes": ("task", mins)})
    >>> build_horizon(ds).hierbench["options"]["formula"]
    'score ~ 0 + agent + agent:center(log2_minutes) + (1|task) + (1|agent:task)'
    """
    data = with_log2_minutes(data, minutes)
    formula, decisions = _terms(data, "score ~ 0 + agent + agent:center(log2_minutes) + (1|task)", clusters)
    priors = {"beta": HORIZON_BETA_PRIOR, **(priors or {})}
    chosen = {"reason": "build_horizon's formula: each agent's intercept and slope per doubling of the human "
              "task length (centred at the tasks' mean), with the terms its rules include", "decisions": decisions,
              "family": "binomial (the horizon models binary scores)"}  # fmt: skip
    model = build_chosen(data, formula, family="binomial", levels=None, priors=priors, coords={},
                         n_quad=n_quad, centred=centred, chosen=chosen)  # fmt: skip
    model.hierbench["options"]["minutes"] = minutes
    model.hierbench["model_role"] = "time horizon"
    return model
