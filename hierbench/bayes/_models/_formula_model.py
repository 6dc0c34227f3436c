"""Formula models: the crossed model with agent factors, task features and graded or [0, 1] scores.

:func:`build_mixed` reads a mixed-model formula through
:func:`hierbench.data.model_design` (the description the maximum-likelihood
half fits, so the two check each other) and builds, for design rows ``r``
(cells, or runs when a per-run variable such as a judge is used),

    eta_r = x_r beta + sum_k z_rk b_k[j_k(r)],   b_k ~ N(0, sd_k),

with the family's likelihood on ``eta``:

* **binomial** (binary scores): successes of the row's runs, ``logit p =
  eta``. A ``(1|agent:task)`` term on cell rows is the crossed model's
  agent x task effect: integrated out of each cell's binomial likelihood by
  adaptive Gauss-Hermite quadrature, as :func:`hierbench.bayes.build_crossed`
  does (the same likelihood, imported);
* **ordinal** (graded scores): the cumulative logit :mod:`._ordinal`, ordered
  thresholds holding the location;
* **fractional** (scores in [0, 1], partial credit): the exponential family
  on [0, 1] with atoms at 0 and 1 and a continuous part weighted per task
  (:mod:`._unit_interval`): a proper likelihood whose sufficient statistic
  is the score, so it reproduces the data's mean scores as the fractional
  logit does; a pass/fail task is the binomial.

The default formula, :data:`hierbench.data.DEFAULT_FORMULA`, is today's
crossed model (an ability per agent, random task and agent x task effects);
with one run per cell or one agent it leaves the agent x task effect out, by the rule
:func:`hierbench.bayes._structure.decide_agent_task` applies to every count
model. Which terms a design can identify is decided by ``model_design``
(refused: :class:`hierbench.data.FormulaError`; levels seen in one
combination only: :class:`hierbench.data.ConfoundedTermWarning`).

Every random term whose slope lies in the span of the fixed effects (every
intercept term when the formula has an intercept or a full set of agent
dummies; for graded scores, the thresholds) is split into its levels' mean
and zero-sum deviations, ``b = o + d``, ``o ~ N(0, sd / sqrt(L))``, ``d ~
ZeroSumNormal(sd)``, which is the same distribution as iid ``N(0, sd)``. The
means are absorbed into the fixed effects the likelihood sees (``beta_seen
= beta + sum_k a_k o_k``, with ``X a_k = z_k``), so the ridge along which all
levels rise as the fixed effects fall is not sampled: the crossed model's
``task_offset`` device, for any formula. An intercept term's levels that a
factor of the fixed effects groups (``tier`` along tasks, ``provider`` along
agents) are split the same way along it too, ``b = C o + Q u`` with ``C``
the constant and the factor's columns by level and ``u`` their orthogonal
complement (``_term_within``), so neither is the ridge between the factor's
coefficients and its levels' mean effects sampled (METR, 6 models x 83 tasks
by tier: bulk ESS of the coefficients 60-190 before, over 8,000 after, at
8,000 draws). A term is centred when its levels
are well informed by their own data (:func:`hierbench.bayes._structure.term_information`
and the package's centring rule), else non-centred. A formula with a random
term nested in another (``(1|scaffold:model)`` in ``(1|model)``) is sampled
with smaller steps (``target_accept`` 0.9, :data:`TARGET_ACCEPT`), and binary data that
separate the fixed effects (an agent at 0% or 100%: :func:`separated_coefficients`) with smaller
still (0.95), recorded in the structure with its reason.
"""

from __future__ import annotations

import itertools
import json
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from ..._base import HierbenchError
from ..._base import HierbenchWarning
from ..._base import UnidentifiedTermWarning
from ..._base import check_choice
from ..._base import check_int
from ..._base import counts_fingerprint
from ..._base import warn_user
from ...data import DEFAULT_FORMULA
from ...data import model_design
from ...metrics import linear_scale
from ...metrics import task_codes
from .._registry import ModelEntry
from .._registry import PriorError
from .._registry import data_provenance
from .._registry import make_prior
from .._registry import merge_priors
from .._registry import normal_group
from .._registry import register
from .._registry import register_hook
from .._structure import Structure
from .._structure import centre_choice
from .._structure import decide_agent_task
from .._structure import decide_centring
from .._structure import formula_design
from .._structure import nested_terms
from .._structure import separated_coefficients
from .._structure import term_information
from . import _mixed_predictive  # noqa: F401  (registers the 'mixed.predictive' hook)
from ._crossed import CROSSED_PRIORS
from ._crossed import NOMINAL_AGENT_TASK_SD
from ._crossed import NOMINAL_SCALE
from ._crossed import _likelihood_marginal
from ._crossed import _likelihood_none
from ._ordinal import _layout as ordinal_layout
from ._ordinal import grade_runs
from ._ordinal import ordinal_likelihood
from ._ordinal import threshold_prior
from ._unit_interval import unit_interval_likelihood

__all__ = ["MIXED_PRIORS", "build_mixed"]

_PLOTS_COMBINE = ("the dim ArviZ's plots combine several fits along (plot_forest fails on a fit holding it; "
                  "plot_dist, plot_ridge, plot_ess and plot_mcse draw its levels as separate fits)")  # fmt: skip
#: dim names a grouping cannot take as they are, and why: ArviZ's sample dims, the dims its plots make
#: (arviz-plots 1.x: ``model``, along which a dict of fits is combined; ``column``, plot_forest's and
#: plot_ridge's layout) and this model's own dims. Such a grouping's levels go on ``"<name> (grouping)"``
#: (:func:`term_dim`), with a warning and the decision ``grouping_dims`` in the structure.
TAKEN_DIMS: dict[str, str] = {
    "model": _PLOTS_COMBINE,
    "column": "the dim plot_forest and plot_ridge lay their columns out along",
    "chain": "one of ArviZ's sample dims",
    "draw": "one of ArviZ's sample dims",
    **{d: "a dim this model uses for its own variables" for d in ("coef", "qr", "component", "cell", "obs", "grade", "threshold")},
}

#: default priors, logit scale; a random term takes its class's sd prior (:func:`prior_class`),
#: overridable per term as ``priors={"sd[1|task]": {...}}``. Fixed effects: ``beta_level`` (wide,
#: Normal(0, 10)) for the coefficients that carry a level -- the intercept, or each level of a factor
#: coded in full as in ``0 + agent`` (:func:`level_columns`) -- and ``beta`` (Normal(0, 2.5)) for
#: differences and slopes. A level is a logit at the typical task, and with the task spreads of agent
#: benchmarks (sd 2-4) an agent that passes 1% of runs sits near -10 there, four sd out under
#: Normal(0, 2.5): METR's davinci-002 (16 tasks, mean score 0.75 points) came out at 2.09 (posterior
#: sd 1.05) points with the [0, 1]-score family, 0.78 (0.48) with the wide prior; and ``A`` agents'
#: independent priors act together on their common level (``Normal(0, s / sqrt(A))``), which moved
#: every METR horizon (:mod:`._horizon`). A difference (a scaffold's effect) or a slope keeps the
#: usual weakly informative Normal(0, 2.5): 2.5 logits already span most of a success rate's range,
#: and a wide prior there puts its mass on differences of 10-20 logits (every agent of one scaffold
#: at 0%, of another at 100%) that no log shows, for no gain; the AME coverage study
#: (``benchmarks/bench_ame_coverage.py``) ran with it. A user's ``beta`` overrides the differences
#: and slopes, ``beta_level`` the levels.
MIXED_PRIORS: dict[str, dict[str, Any]] = {
    "beta": {"dist": "Normal", "mu": 0.0, "sigma": 2.5},
    "beta_level": {"dist": "Normal", "mu": 0.0, "sigma": 10.0},
    # the crossed model's scales where a term plays their part (see prior_class)
    "sd_task": dict(CROSSED_PRIORS["sd_task"]),
    "sd_agent_task": dict(CROSSED_PRIORS["sd_agent_task"]),
    "sd_agent_level": dict(CROSSED_PRIORS["sd_agent"]),
    "sd_task_level": dict(CROSSED_PRIORS["sd_cluster"]),
    "sd_run_level": {"dist": "HalfNormal", "sigma": 1.5},
    "sd_slope": {"dist": "HalfNormal", "sigma": 1.0},
    "thresholds": {"dist": "Normal", "mu": 0.0, "sigma": 5.0},
    "interior": {"dist": "Exponential", "lam": 0.2},
}
_FAMILY_PRIORS = {"binomial": (), "fractional": ("interior",), "ordinal": ("thresholds",)}
#: the default formula without the agent x task effect (one run per cell, or one agent)
_DEFAULT_WITHOUT_CELL = "score ~ 0 + agent + (1|task)"

HOOKS = {"predictive": "mixed.predictive"}
#: the family's own hooks on top of :data:`HOOKS`: PyMC cannot convert the ordinal model (its ordered
#: thresholds need an explicit initial value), so its pointwise log-likelihood is the model's own; its
#: groups lay the outcome out one run at a time, ``y(obs)``, as ArviZ reads it (the likelihood counts grades per row)
FAMILY_HOOKS = {"ordinal": {"log_likelihood": "mixed.ordinal_log_likelihood", "postprocess": "mixed.ordinal_runs"}}


def prior_class(term: Any) -> str:
    """The default-prior class of a random term: the crossed model's scales where they apply.

    ``(1|task)``: ``sd_task`` (HalfNormal 2, as ``build_crossed``); ``(1|agent:task)``:
    ``sd_agent_task`` (1); another task-level grouping (a task family, a tier):
    ``sd_task_level`` (1, as ``sd_cluster``); agent-level groupings (agent, model,
    scaffold, their combinations): ``sd_agent_level`` (1.5, as ``sd_agent``);
    per-run groupings (a judge): ``sd_run_level`` (1.5); a slope: ``sd_slope`` (1).
    """
    if not term.intercept:
        return "sd_slope"
    if set(term.grouping) == {"agent", "task"}:
        return "sd_agent_task"
    if tuple(term.grouping) == ("task",):
        return "sd_task"
    return {"agent": "sd_agent_level", "task": "sd_task_level", "cell": "sd_agent_task", "run": "sd_run_level"}[term.level]


def _priors(design: Any, priors: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The model's priors: ``beta``, one ``sd[<term>]`` per random term, the family's own.

    A class key (``sd_task``) overrides every term of its class; a term key
    (``sd[1|task]``) that term alone; unknown keys are refused.
    """
    classes = {prior_class(t) for t in design.random}
    base = {k: MIXED_PRIORS[k] for k in ("beta", "beta_level", *sorted(classes), *_FAMILY_PRIORS[design.family])}
    terms = {f"sd[{t.name}]": base[prior_class(t)] for t in design.random}
    merged = merge_priors({**base, **terms}, priors)
    given = set(priors or {})
    for t in design.random:
        if f"sd[{t.name}]" not in given:
            merged[f"sd[{t.name}]"] = dict(merged[prior_class(t)])
    return {k: v for k, v in merged.items() if k not in classes}


# --------------------------------------------------------------------------- structure


def _cell_term(design: Any) -> int | None:
    """The index of the agent x task random intercept, if the formula has one."""
    for k, t in enumerate(design.random):
        if t.intercept and set(t.grouping) == {"agent", "task"}:
            return k
    return None


def _design(
    data: xr.Dataset, formula: str | None, family: str, levels: Any, coords: dict, chosen: dict | None = None
) -> tuple[Any, Structure]:
    """The design (the default formula loses its agent x task effect where unidentified) and the structure.

    ``chosen``: a builder that wrote the formula by its own rules (``build_horizon``) passes
    ``{"reason": ..., "family": ..., "decisions": {...}}``; the formula, its family and its terms are then
    recorded as decided ("auto"), with that builder's decisions, not as the user's.
    """
    text = _default_formula(data) if formula is None else formula
    design = model_design(text, data, family=family, levels=levels, **coords)
    if not design.random:
        raise HierbenchError(
            f"`formula` {design.formula!r} has no random term: the Bayesian formula models need at least "
            "one (e.g. '+ (1|task)'), since the runs of a task are not independent draws; add one"
        )
    st = Structure("mixed", formula_design(design))
    cell = _cell_term(design)
    if formula is None and text == _DEFAULT_WITHOUT_CELL:
        decide_agent_task(st, "auto")  # "none", with the rule's reason (one agent, one run per cell)
    if cell is not None:
        requested = "auto" if formula is None or chosen else "marginal"
        with warnings.catch_warnings():
            if "unidentified (1|agent:task)" in design.decisions:  # model_design warned already, in its words
                warnings.simplefilter("ignore", UnidentifiedTermWarning)
            choice = decide_agent_task(st, requested)
        if choice == "none":
            design = model_design(_DEFAULT_WITHOUT_CELL, data, family=family, levels=levels, **coords)
            st.design = formula_design(design)
        elif design.family != "binomial" or design.row_level != "cell":
            d = st.design
            st.decisions["agent_task"].update(
                choice="latent",
                reason=f"{d['n_agents']} agents, up to {d['max_runs_per_cell']} runs per cell; the "
                f"{design.family} likelihood on {design.row_level} rows has no quadrature form: the "
                "effects are sampled (their centring below)",
            )  # fmt: skip
    why = chosen["reason"] if chosen else "as given" if formula is not None else (
        "the default formula (today's crossed model)" if text == DEFAULT_FORMULA else "the default formula (today's "
        "crossed model) without its agent x task effect, which these data cannot identify (see agent_task)")  # fmt: skip
    if formula is None and "formula" in design.decisions:  # the ordinal coding of the default (model_design's rule)
        why = f"{why}; {design.decisions['formula']}"
    st.decisions = {
        "formula": {"choice": design.formula, "reason": why, "source": "user" if formula and not chosen else "auto"},
        "family": {"choice": design.family, "reason": _family_reason(design, chosen),
                   "source": "auto" if family == "auto" or chosen else "user"},
        **(chosen or {}).get("decisions", {}),
        **st.decisions,
    }  # fmt: skip
    for key, text in design.decisions.items():
        if key.startswith(("confounded", "unidentified")):
            st.decisions[key] = {"choice": True, "reason": text, "source": "auto"}
    if "intercept" in design.decisions:  # what happens to it, not "True - dropped" (read as a contradiction)
        st.decisions["intercept"] = {"choice": "held by the thresholds", "source": "auto", "reason": (
            "the ordinal thresholds (cutpoints) are the intercept, so the formula's intercept column is "
            "left out of the fixed effects: one location, not two")}  # fmt: skip
    return design, st


#: the likelihood of a [0, 1]-score (fractional) fit here, which ``model_design``'s family reason (shared with
#: the maximum-likelihood half, whose likelihood is the quasi-binomial) leaves to each half
_FRACTIONAL_LIKELIHOOD = (
    "likelihood: the [0, 1] exponential family with atoms at 0 and 1 and a per-task weight of interior scores "
    "(the maximum-likelihood half fits the quasi-binomial, logit link)"
)


def _family_reason(design: Any, chosen: dict | None) -> str:
    """Why this family, in this model's words: a fractional fit adds its own likelihood to the shared reason."""
    why = (chosen or {}).get("family", design.decisions["family"])
    return f"{why}; {_FRACTIONAL_LIKELIHOOD}" if design.family == "fractional" else why


def _default_formula(data: xr.Dataset) -> str:
    """:data:`DEFAULT_FORMULA`, or without its agent x task effect where the data cannot identify it.

    Chosen before the design is built, by the agent x task rule every count model applies
    (``decide_agent_task``), on the data's runs: with one agent the task and agent x task
    terms group the runs identically, which ``model_design`` refuses in terms of a formula the
    user never wrote (tau-bench's single-agent log).
    """
    if "score" not in data.data_vars or not {"agent", "task"} <= set(data["score"].dims):
        return DEFAULT_FORMULA  # model_design says what is missing
    ran = np.isfinite(np.asarray(data["score"].transpose("agent", "task", ...).values, dtype=float))
    runs = ran.reshape(ran.shape[0], ran.shape[1], -1).sum(-1)
    if not runs.any():
        return DEFAULT_FORMULA
    probe = Structure("mixed", {"n_agents": int((runs.sum(1) > 0).sum()), "max_runs_per_cell": int(runs.max())})
    return _DEFAULT_WITHOUT_CELL if decide_agent_task(probe, "auto") == "none" else DEFAULT_FORMULA


def _level_columns_within(design: Any, k: int) -> tuple[list[str], np.ndarray]:
    """The factor columns constant within each level of intercept term ``k``: names and level values.

    A factor of the term's levels (``provider`` along agents for ``(1|agent)``, ``tier`` along tasks
    for ``(1|task)``) has one value per level: ``X[:, j] = c_j[codes]``, 0 or 1. Returns the columns
    kept (each adds a dimension to the level-space span of the constant and those before it, which
    stays below the number of levels) and their values per level (levels x columns).

    A numeric feature of the levels (a task's human minutes) rides its level's effects the same way
    but is left to the term's mean alone here, as before: its split would change the variables of
    fits and checks that name them (``z_offset[<term>]`` a scalar).
    """
    t = design.random[k]
    n_levels, X = t.levels.size, design.X
    empty: tuple[list[str], np.ndarray] = ([], np.zeros((n_levels, 0)))
    if not t.intercept or X.shape[1] == 0 or np.bincount(t.codes, minlength=n_levels).min() == 0:
        return empty
    first = np.zeros(n_levels, dtype=np.intp)
    first[t.codes[::-1]] = np.arange(len(t.codes))[::-1]  # each level's first design row
    values = X[first]
    span, names, cols = np.ones((n_levels, 1)), [], []
    for j in np.flatnonzero(np.all(X == values[t.codes], axis=0) & np.all(np.isin(X, (0.0, 1.0)), axis=0)):
        trial = np.column_stack([span, values[:, j]])
        if trial.shape[1] < n_levels and np.linalg.matrix_rank(trial) == trial.shape[1]:
            span, names = trial, [*names, design.coef[j]]
            cols.append(j)
    return (names, values[:, cols]) if cols else empty


def _absorbers(design: Any, sampled: list[int], info: Mapping[int, np.ndarray]) -> dict[int, tuple]:
    """Find the terms whose slope the fixed effects absorb, with the level-space directions they absorb.

    Terms whose slope lies in the span of the fixed effects (with the thresholds for an ordinal
    model): term -> ``(a, c0, C, names, pivots)`` with ``X a + c0 = C[codes] * slope`` column by
    column. ``C`` (levels x r) is the term's level-space basis the fixed effects reach: its first
    column is the constant (the term's mean); for an intercept term, then the values of each
    fixed-effect column constant within its levels (``_level_columns_within``, named in
    ``names``). ``pivots``: the levels, ``r`` of them, that ``_term_within`` expresses through
    the others (``_pivots``, from each level's information ``info[k]``).
    """
    X = design.X
    ordinal = design.family == "ordinal"
    B = np.column_stack([np.ones(len(X)), X]) if ordinal else X
    out: dict[int, tuple] = {}
    if B.shape[1] == 0:
        return out
    for k in sampled:
        t = design.random[k]
        names, values = _level_columns_within(design, k)
        C = np.column_stack([np.ones(t.levels.size), values])
        target = C[t.codes] * t.slope[:, None]
        sol, *_ = np.linalg.lstsq(B, target, rcond=None)
        tol = 1e-8 * max(1.0, float(np.max(np.abs(target))))
        if np.max(np.abs(B @ sol[:, 0] - target[:, 0])) > tol:
            continue
        if np.max(np.abs(B @ sol - target)) > tol:  # the mean alone (not expected: X's own columns)
            sol, C, names = sol[:, :1], C[:, :1], []
        a, c0 = (sol[1:], sol[0]) if ordinal else (sol, np.zeros(C.shape[1]))
        out[k] = (a, c0, C, names, _pivots(C, info[k]) if C.shape[1] > 1 else None)
    return out


def _pivots(C: np.ndarray, info: np.ndarray) -> np.ndarray:
    """The ``r`` levels a term split along ``C`` (levels x r) writes through the others: typical ones.

    Each level but these keeps its own coordinate (up to a rank-r correction); these levels are sums
    over all the others, so the sampler's step fits them only as well as it fits a typical level. They
    are chosen, one at a time while ``C``'s rows so far gain rank, by how close each level's
    information (log) is to the median: on METR's 83 tasks by tier the first task (effect -49,
    posterior sd 5 against a median 1.3) left its effects at ESS 195 at the draw cap, against 2,979
    for the tenth percentile.
    """
    log_info = np.log(np.maximum(info, 1e-300))
    order = np.argsort(np.abs(log_info - np.median(log_info)), kind="stable")
    chosen: list[int] = []
    for j in order:
        if np.linalg.matrix_rank(C[[*chosen, j]]) == len(chosen) + 1:
            chosen.append(int(j))
            if len(chosen) == C.shape[1]:
                break
    return np.array(chosen, dtype=np.intp)


def _decide(st: Structure, design: Any, centred: Any) -> tuple[int | None, set[str], dict, dict]:
    """Decide the marginal, centred and absorbed terms.

    The marginal term (if any), the centred terms, the absorbed term means and the latent
    agent x task term's centred levels.
    """
    cell = _cell_term(design)
    marginal = cell if cell is not None and st.decisions.get("agent_task", {}).get("choice") == "marginal" else None
    by_level = _cell_levels(st, design, cell) if cell is not None and marginal is None else {}
    sampled = [k for k in range(len(design.random)) if k != marginal and k not in by_level]
    names = tuple(design.random[k].name for k in sampled)
    within = NOMINAL_AGENT_TASK_SD if cell is not None else 0.0
    # information at the nominal spread (1 logit). The data's moment estimate of a term's spread
    # (term_spread) is not used here: from 3-4 levels it is too noisy to decide on (it left an
    # unbalanced log's 3 models uncentred: 28 divergences, 0 centred), though it would have saved
    # the centred funnel of 4 judges that grade alike (ordinal SBC, 1.2% of draws divergent)
    info = {k: term_information(design, k, within_sd=within) for k in sampled}
    scores = {design.random[k].name: float(np.median(info[k])) for k in sampled}
    n_levels = {design.random[k].name: int(design.random[k].levels.size) for k in sampled}
    centred_set = decide_centring(st, centred, scores, n_levels, groups=names) if names else set()
    absorbed = _absorbers(design, sampled, info)
    if absorbed:
        where = "the thresholds and fixed effects" if design.family == "ordinal" else "the fixed effects"
        along = "; ".join(f"({design.random[k].name}) within {', '.join(v[3])}" for k, v in absorbed.items() if v[3])
        st.decisions["offsets"] = {
            "choice": [design.random[k].name for k in absorbed],
            "reason": f"each term's mean is absorbed into {where} the likelihood sees; zero-sum deviations "
            "are sampled (no ridge between a term's mean and the intercept)" + (
                f". So are its means along the fixed-effect columns constant within its levels ({along}): "
                "the deviations sampled sum to zero along them too (no ridge between those columns' "
                "coefficients and the levels' means within them)" if along else ""),
            "source": "auto",
        }  # fmt: skip
    _decide_step(st, design, sampled, cell)
    for k in [*sampled, *by_level]:
        t = design.random[k]
        st.hint(f"sd[{t.name}]", f"({t.name}) has {t.levels.size} levels: its sd is weakly identified",
                f"a tighter priors['sd[{t.name}]'], or centred={tuple(sorted(centred_set ^ {t.name}))}")  # fmt: skip
    return marginal, centred_set, absorbed, by_level


#: NUTS's target acceptance of a formula fit: the usual 0.8; 0.9 when a random term is nested in
#: another; 0.95 when the data separate the fixed effects (:func:`separated_coefficients`)
TARGET_ACCEPT = {"default": 0.8, "nested": 0.9, "separated": 0.95}


def _decide_step(st: Structure, design: Any, sampled: list[int], cell: int | None) -> None:
    """NUTS's target acceptance: higher when the data separate the fixed effects, or a term is nested.

    **Separated** (:func:`separated_coefficients`): along the separating direction the likelihood
    is a plateau bounded by a logistic wall on one side and only by the wide ``beta_level`` prior
    (sd 10) on the other, so the posterior's curvature changes by orders of magnitude within it;
    a step tuned in the bulk diverges at the wall. Divergence starts sat along the QR-rotated
    coefficients (not at a small sd). SBC of ``build_horizon`` and ``mixed_covariates`` at their
    default priors (seed 4041, ``benchmarks/sbc.py``): 194 of 200 horizon replicates are separated
    and 185 had divergences at 0.8; of the mixed replicates, 100 of 109 separated ones diverged
    against 25 of 91 others. On the first diverged replicates, 0.8 / 0.9 / 0.95: horizon 11, 14,
    38, 22 / 5, 4, 15, 3 / 1, 1, 1, 0 divergences (about 16, 23, 31 leapfrog steps per draw,
    similar draws to the target ESS); the centred task effects diverged more (15-68). See
    ``models/horizon/card.md``.

    **Nested**: levels nested in coarser levels (scaffold x model combinations in models) inform
    the coarse term only through the finer one, whose spread takes what the coarse one does not:
    the coarse term's scale reaches towards 0, where its levels, centred or not, meet curvature the
    default step does not follow (a simulated leaderboard, 8 models in 25 combinations: 13 of 73
    default fits failed, divergent where sd[1|model] was near 0.03; non-centred, ESS 242 at 2,000
    draws). At 0.9, 4 of the first 31 fail against 8 (``benchmarks/bench_ame_coverage.py``), at 16.9
    leapfrog steps per draw (one paired replicate: 19.3 against 15.0, but 1,300 draws to the
    target ESS against 1,800). The agent x task term (its own rule) does not count.
    """
    skip = () if cell is None else (cell,)
    pairs = [(design.random[j].name, design.random[k].name) for k in sampled
             for j in nested_terms(design, k, skip=skip)]  # fmt: skip
    separated = separated_coefficients(design)
    why = []
    if separated:
        why.append(
            f"the data separate {', '.join(separated)} (a direction along which the likelihood rises without "
            "bound: an agent at 0% or 100%, all scores 0 or 1, every grade the lowest or the highest, or "
            "successes only on one side of a covariate): that "
            "posterior is a plateau held by the prior on one side and a steep likelihood wall on the other, "
            "where the default step diverges"
        )
    if pairs:
        why.append(
            ", ".join(f"({a}) in ({b})" for a, b in pairs) + ": a term nested in another; their scales trade "
            "off and the coarser one's reaches towards 0, where the default step size diverges"
        )
    kind = "separated" if separated else "nested" if pairs else "default"
    text = "; ".join(why) + ": smaller steps, more of them per draw" if why else (
        "no random term nested in another and no separated fixed effect: the default")
    st.decisions["target_accept"] = {"choice": TARGET_ACCEPT[kind], "reason": text, "source": "auto"}


def _cell_levels(st: Structure, design: Any, k: int) -> dict[int, np.ndarray]:
    """Choose the centring of the latent agent x task effects, cell by cell.

    Latent agent x task effects, centred cell by cell: a cell whose runs inform its effect well
    (the centring rule, per level) is centred, the others not.

    One form for all cells failed on METR's continuous scores: most cells (median 8
    runs, mostly at 0) are weakly informed, a graded task's cells (up to 96 runs) strongly,
    and their non-centred effects traded off against their task's (ESS 288 at the task).
    """
    info = term_information(design, k)
    need = centre_choice(0.0, info.size)[1]
    mask = info * NOMINAL_SCALE["task"] ** 2 >= need
    st.decisions["centred_cells"] = {
        "choice": f"{int(mask.sum())} of {mask.size}",
        "reason": f"({design.random[k].name}) cell by cell: centred where the cell's information x spread^2 "
        f"(nominal 1 logit) reaches {need:g} (median {float(np.median(info)):.2g}, max {float(info.max()):.3g})",
        "source": "auto",
    }
    return {k: mask}


# --------------------------------------------------------------------------- model blocks


def term_sd_name(term: Any) -> str:
    """The posterior name of a random term's sd alone, ``sd(1|task)``.

    The same draws are ``sd`` over ``component`` (``sd[1|task]`` to ArviZ, as the prior key and
    the convergence hints name it). The scalar's name is not ``sd[1|task]``: ArviZ labels the
    element ``'1|task'`` of ``sd`` so, and two variables with one label break its ``summary``.
    """
    return f"sd({term.name})"


def term_dim(term: Any) -> str:
    """The dim of a random term's levels: its grouping, e.g. ``"task"``, ``"scaffold:model"``.

    A grouping named as a dim ArviZ or this model already uses (:data:`TAKEN_DIMS`: ``model``)
    has its levels along ``"<grouping> (grouping)"`` (``"model (grouping)"``), a name no formula
    can write; the levels and the variables' names (``re[1|model]``) stay as the user wrote them.
    """
    name = ":".join(term.grouping)
    return f"{name} (grouping)" if name in TAKEN_DIMS else name


def _taken_dims(st: Structure, design: Any) -> dict[str, dict[str, str]]:
    """Record (decision ``grouping_dims``) and say (a warning) where a grouping's dim is not its name.

    Returns the ``var_attrs`` of the variables along such a dim: the grouping and the dim used.
    """
    terms: dict[str, list[str]] = {}
    for t in design.random:
        if ":".join(t.grouping) in TAKEN_DIMS:
            terms.setdefault(":".join(t.grouping), []).append(t.name)
    if not terms:
        return {}
    dims = {g: f"{g} (grouping)" for g in terms}
    st.decisions["grouping_dims"] = {
        "choice": dims, "source": "auto",
        "reason": "; ".join(f"'{g}' is {TAKEN_DIMS[g]}" for g in terms) + ": the grouping's levels (its "
        "column's labels, unchanged) lie along the dim named here; the variables keep the terms' names",
    }  # fmt: skip
    for g, names in terms.items():
        warn_user(
            f"`formula` groups {', '.join(f'({n})' for n in names)} by the column '{g}': in the fit its levels "
            f"lie along the dim '{dims[g]}', not '{g}', because '{g}' is {TAKEN_DIMS[g]}. The levels are the "
            f"column's labels, unchanged, and the variables keep the terms' names "
            f"(fit.posterior['re[{names[0]}]'].sel({{'{dims[g]}': ...}})); the mapping is the decision "
            f"'grouping_dims' in fit.attrs['hierbench_structure']. A column renamed (e.g. '{g}' to "
            f"'base_{g}') keeps a plain dim name",
            HierbenchWarning,
        )
    prefixes = ("re", "z", "dev", "re_centred")
    return {f"{p}[{n}]": {"grouping": g, "grouping_dim": dims[g]}
            for g, ns in terms.items() for n in ns for p in prefixes}  # fmt: skip


def _term(design: Any, k: int, pri: dict, centred: Any, absorbed: Any) -> tuple[Any, Any, Any]:
    """``(sd, what the likelihood sees per level, offsets o or None)``; ``re[<term>]`` recorded.

    ``centred``: True, False, or a boolean mask of the levels to centre (the others non-centred).
    ``absorbed``: False, or the term's entry of ``_absorbers`` (its level-space basis ``C``).
    """
    t = design.random[k]
    dim, name = term_dim(t), t.name
    sd = make_prior(term_sd_name(t), pri[f"sd[{name}]"])
    if isinstance(centred, np.ndarray):
        b = pt.zeros(t.levels.size)
        c, nc = np.flatnonzero(centred), np.flatnonzero(~centred)
        if c.size:
            b = pt.set_subtensor(b[c], pm.Normal(f"re_centred[{name}]", 0.0, sd, dims=f"{dim} (centred)"))
        if nc.size:
            b = pt.set_subtensor(b[nc], sd * pm.Normal(f"z[{name}]", 0.0, 1.0, dims=f"{dim} (non-centred)"))
        return sd, pm.Deterministic(f"re[{name}]", b, dims=dim), None
    if absorbed is not False and absorbed[2].shape[1] > 1:
        return _term_within(t, sd, centred, absorbed[2], absorbed[4])
    if absorbed is False:
        b = normal_group(f"re[{name}]", f"z[{name}]", 0.0, sd, centred=centred, dims=dim)
        if not centred:
            b = pm.Deterministic(f"re[{name}]", b, dims=dim)
        return sd, b, None
    o = pm.Normal(f"z_offset[{name}]", 0.0, 1.0) * sd / np.sqrt(t.levels.size)
    dev = pm.ZeroSumNormal(f"dev[{name}]", sigma=sd, dims=dim) if centred else sd * pm.ZeroSumNormal(
        f"z[{name}]", sigma=1.0, dims=dim
    )
    pm.Deterministic(f"re[{name}]", o + dev, dims=dim)
    return sd, dev, o


def _term_within(t: Any, sd: Any, centred: bool, C: np.ndarray, pivots: np.ndarray) -> tuple[Any, Any, Any]:
    """A term split along its level-space basis ``C`` (levels x r): ``b = C o + Q u``.

    ``C = Q_C R_C`` (thin QR, ``diag(R_C) > 0``) and ``Q`` (levels x (levels - r)) an orthonormal
    basis of the rest, from the same Householder QR with the ``pivots`` levels first: every other
    level keeps its own coordinate but for a rank-r correction, as in ``ZeroSumNormal``, the case
    ``C = 1`` with the last level as pivot. ``o = sd R_C^-1 v``, ``v ~ N(0, 1)`` (``z_offset``), and
    ``u ~ N(0, sd)`` (``dev``; non-centred ``sd`` times ``z``): ``b = sd Q_C v + Q u``, with
    ``[Q_C, Q]`` orthogonal, is iid ``N(0, sd)``, the term's prior exactly. ``C o`` is absorbed
    into the fixed effects (``_linear``); the likelihood sees ``Q u`` per level.
    """
    dim, name, r = term_dim(t), t.name, C.shape[1]
    perm = np.concatenate([pivots, np.setdiff1d(np.arange(len(C)), pivots)])
    Qf, Rc = np.linalg.qr(C[perm], mode="complete")
    Qf[perm] = Qf.copy()  # back in the levels' order (C's own QR, rows permuted)
    sign = np.sign(np.diag(Rc[:r]))
    Rc_inv = np.linalg.inv(Rc[:r] * sign[:, None])
    o = sd * pt.dot(Rc_inv, pm.Normal(f"z_offset[{name}]", 0.0, 1.0, dims=f"{dim} (offsets)"))
    within = f"{dim} (within)"
    u = pm.Normal(f"dev[{name}]", 0.0, sd, dims=within) if centred else sd * pm.Normal(f"z[{name}]", 0.0, 1.0, dims=within)
    dev = pt.dot(Qf[:, r:], u)
    pm.Deterministic(f"re[{name}]", pt.dot(C, o) + dev, dims=dim)
    return sd, dev, o


def _rotation(design: Any, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rotate the fixed effects by a thin QR decomposition.

    ``(R, R^-1)`` of the thin QR decomposition of the fixed-effect matrix ``X`` the likelihood
    sees (``design.X``, or its centred columns: ``centred_columns``), rows weighted by their
    runs (``sqrt(n) X = Q R``, ``diag(R) > 0``).
    """
    Xw = X * np.sqrt(np.asarray(design.n, dtype=float))[:, None]
    R = np.linalg.qr(Xw, mode="r")
    R = R * np.sign(np.diag(R))[:, None]
    return R, np.linalg.inv(R)


def centred_columns(st: Structure, design: Any) -> np.ndarray | None:
    """The column means an ordinal fit's likelihood takes off the fixed effects, or None.

    The ordinal thresholds hold the location, outside the QR rotation of :func:`_fixed`, so an
    uncentred covariate (VerbAgg's Anger, mean about 20) trades off with them: ESS 11 at the
    thresholds at 500 x 2 draws. The likelihood sees ``X - m`` and thresholds moved by
    ``m . beta`` (a shear of the sampler's coordinates, Jacobian 1; ``beta``, ``thresholds`` and
    their priors unchanged: the same model). ``m`` is each column's run-weighted mean, 0 on the
    :func:`level_columns`; centring is skipped where it would lose a column's rank. Recorded as
    the decision ``centred_covariates``.
    """
    if design.family != "ordinal" or design.X.shape[1] == 0:
        return None
    w = np.asarray(design.n, dtype=float)
    means = np.where(level_columns(design), 0.0, w @ design.X / w.sum())
    shown = [c for c, mu in zip(design.coef, means, strict=True) if abs(mu) > 1e-12]
    if not shown or np.linalg.matrix_rank(design.X - means) < np.linalg.matrix_rank(design.X):
        return None
    st.decisions["centred_covariates"] = {
        "choice": shown, "source": "auto",
        "reason": "the likelihood sees these columns centred (run-weighted means taken off, moved into the "
        "thresholds): the thresholds hold the location outside the fixed effects' QR rotation, so an "
        "uncentred column trades off with them; beta, thresholds and priors are unchanged",
    }  # fmt: skip
    return means


def level_columns(design: Any) -> np.ndarray:
    """The fixed-effect columns that carry a level, not a difference or a slope.

    The intercept, and every column of a factor coded in full (``0 + agent``: each
    design row has exactly one of them at 1), get ``beta_level``'s prior; the others
    (contrasts against a reference level, numeric slopes, interactions) ``beta``'s.
    """
    out = np.zeros(design.X.shape[1], bool)
    for cols in design.fixed_terms.values():
        sub = design.X[:, cols]
        if sub.size and np.isin(sub, (0.0, 1.0)).all() and np.allclose(sub.sum(axis=1), 1.0):
            out[cols] = True
    return out


def _fixed(pri: dict, design: Any, shift: Any, X: np.ndarray) -> Any:
    """``beta_seen = beta + shift`` (what the likelihood sees), ``beta`` recorded; ``beta``'s prior exact.

    With a normal prior (the default) the likelihood's coordinates are
    decorrelated: ``gamma = R beta_seen`` is sampled (``R`` from the QR
    decomposition of the run-weighted fixed-effect matrix, in which the data
    inform ``gamma`` about equally and independently: an uncentred covariate
    and the intercept no longer trade off), with ``beta``'s prior mapped
    exactly, ``gamma ~ MvNormal(R (mu + shift), R diag(sigma^2) R')``; ``mu`` and
    ``sigma`` per coefficient, ``beta_level``'s on the :func:`level_columns`.
    """
    if not design.coef:
        return None
    spec = dict(pri["beta"])
    if "mu" not in spec:
        raise PriorError(f"`priors['beta']` must be a location family with a `mu` parameter (e.g. Normal); got {spec}")
    normal = {"dist", "mu", "sigma"}
    if spec["dist"] == "Normal" and set(spec) <= normal and pri["beta_level"]["dist"] == "Normal" and set(pri["beta_level"]) <= normal:
        level = level_columns(design)
        mu = np.where(level, pri["beta_level"].get("mu", 0.0), spec["mu"])
        loc = mu if shift is None else mu + shift
        R, Rinv = _rotation(design, X)
        sigma = np.where(level, pri["beta_level"].get("sigma", 1.0), spec.get("sigma", 1.0)).astype(float)
        chol = np.linalg.cholesky((R * sigma**2) @ R.T)
        gamma = pm.MvNormal("beta_qr", mu=pt.dot(R, loc), chol=chol, dims="qr")
        seen = pt.dot(Rinv, gamma)
        pm.Deterministic("beta", seen if shift is None else seen - shift, dims="coef")
        return seen
    loc = spec["mu"] if shift is None else spec["mu"] + shift
    if shift is None:
        return make_prior("beta", spec, dims="coef")
    spec["mu"] = loc
    seen = make_prior("beta_seen", spec, dims="coef")
    pm.Deterministic("beta", seen - shift, dims="coef")
    return seen


def _linear(design: Any, pri: dict, marginal: int | None, centred_set: set[str], absorbed: dict, by_level: dict,
            means: np.ndarray | None = None) -> tuple:  # fmt: skip
    """``(eta per row, sd of the marginal term or None, thresholds seen or None)``.

    ``means``: the column means an ordinal fit's likelihood takes off ``X`` (``centred_columns``);
    their contribution ``means . beta`` moves to the thresholds seen.
    """
    parts, sds, shift_b, shift_t = [], [], None, 0.0
    for k, t in enumerate(design.random):
        if k == marginal:
            sds.append(make_prior(term_sd_name(t), pri[f"sd[{t.name}]"]))
            continue
        sd, b, o = _term(design, k, pri, by_level.get(k, t.name in centred_set), absorbed.get(k, False))
        sds.append(sd)
        parts.append(b[t.codes] * t.slope if not t.intercept else b[t.codes])
        if o is not None:
            a, c0, C, *_ = absorbed[k]
            if C.shape[1] == 1:  # the mean alone: a scalar offset
                a, c0 = a[:, 0], float(c0[0])
                part_b, part_t = o * a, o * c0
            else:  # the mean and the means along the columns constant within the levels (_term_within)
                part_b, part_t = pt.dot(a, o), pt.dot(c0, o)
            if np.any(a != 0):
                shift_b = part_b if shift_b is None else shift_b + part_b
            shift_t = shift_t + part_t
    pm.Deterministic("sd", pt.stack(sds), dims="component")
    X = design.X if means is None else design.X - means
    beta = _fixed(pri, design, shift_b, X)
    eta = pt.dot(X, beta) if beta is not None else pt.zeros(len(design.X))
    if means is not None and beta is not None:
        shift_t = shift_t + pt.dot(means, beta)
    for p in parts:
        eta = eta + p
    cuts = threshold_prior(pri["thresholds"], design.categories.size, shift_t)[0] if design.family == "ordinal" else None
    return eta, (sds[marginal] if marginal is not None else None), cuts


def _run_scores(design: Any, data: xr.Dataset) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Every run's score, its design row and its run label (fractional family; None: the design's own)."""
    if design.row_level == "run":
        return np.asarray(design.y, dtype=float), np.arange(len(design.y)), None
    vals = np.asarray(data[design.response].transpose("agent", "task", ...).values, dtype=float)
    vals = vals[design.agent_index, design.task_index].reshape(len(design.y), -1)
    row, run = np.nonzero(np.isfinite(vals))
    labels = np.asarray(data["run"].values)[run] if "run" in data.coords else run
    return vals[row, run], row, labels


def _likelihood(design: Any, data: xr.Dataset, eta: Any, sd_cell: Any, cuts: Any, pri: dict, n_quad: int) -> dict:
    """The family's likelihood ``y``; returns the arrays the predictive hook needs."""
    row_dim = "cell" if design.row_level == "cell" else "obs"
    if design.family == "ordinal":
        ordinal_likelihood(eta, cuts, design.grade_counts, row_dim)
        return {"row_dim": row_dim}
    if design.family == "fractional":
        scores, obs_row, obs_run = _run_scores(design, data)
        unit_interval_likelihood(eta[obs_row], task_codes(design)[1][obs_row], scores, pri)
        return {"row_dim": row_dim, "obs_row": obs_row, "obs_run": obs_run}
    y, n = design.y.astype(np.int64), design.n.astype(np.int64)
    if row_dim == "obs":
        pm.Bernoulli("y", logit_p=eta, observed=pm.Data("run_success", y, dims="obs"), dims="obs")
        return {"row_dim": row_dim}
    cells = {"cell_y": y, "cell_n": n}
    n_cell, y_cell = pm.Data("cell_n_runs", n, dims="cell"), pm.Data("cell_n_success", y, dims="cell")
    if sd_cell is not None:
        _likelihood_marginal(eta, sd_cell, n_cell, y_cell, cells, n_quad)
    else:
        _likelihood_none(eta, n_cell, y_cell, cells)
    return {"row_dim": row_dim}


def _coords(design: Any, row_dim: str, n_obs: int | None, by_level: dict, absorbed: dict) -> dict[str, Any]:
    coords: dict[str, Any] = {"coef": list(design.coef), "qr": np.arange(len(design.coef)),
                              "component": [t.name for t in design.random], row_dim: np.arange(len(design.y))}  # fmt: skip
    for t in design.random:
        coords[term_dim(t)] = t.levels.tolist()
    for k, mask in by_level.items():
        t = design.random[k]
        coords[f"{term_dim(t)} (centred)"] = t.levels[mask].tolist()
        coords[f"{term_dim(t)} (non-centred)"] = t.levels[~mask].tolist()
    for k, (_, _, C, names, _) in absorbed.items():
        if C.shape[1] > 1:  # _term_within: the offsets along the mean and the columns named, the rest
            t = design.random[k]
            coords[f"{term_dim(t)} (offsets)"] = ["(mean)", *names]
            coords[f"{term_dim(t)} (within)"] = np.arange(t.levels.size - C.shape[1])
    if design.family == "ordinal":
        # grades written as words are named by them (their places 0..L-1 are what y holds)
        cats = list(design.labels) if design.labels else [f"{c:g}" for c in design.categories]
        coords["grade"] = cats
        coords["threshold"] = [f"{a}|{b}" for a, b in itertools.pairwise(cats)]
    if n_obs is not None:
        coords["obs"] = np.arange(n_obs)
        coords["task"] = task_codes(design)[0].tolist()
    return coords


def _check_options(formula: Any, n_quad: Any, centred: Any) -> None:
    if formula is not None and not isinstance(formula, str):
        raise TypeError(f"`formula` must be a str (lme4 / Bambi syntax) or None; got {type(formula).__name__}")
    check_int(n_quad, "n_quad", min=5, max=200)
    if not (centred == "auto" or isinstance(centred, (tuple, list))):
        raise ValueError(f"`centred` must be 'auto' or a tuple of random-term names; got {centred!r}")


def build_mixed(
    data: xr.Dataset,
    formula: str | None = None,
    *,
    family: str = "auto",
    levels: Any = None,
    priors: Mapping[str, Mapping[str, Any]] | None = None,
    agent_coords: Any = None,
    task_coords: Any = None,
    n_quad: int = 7,
    centred: Any = "auto",
) -> pm.Model:
    """Build a formula model: the crossed model with covariates, graded or [0, 1] scores.

    ``eta = X beta + Z b`` on the design rows :func:`hierbench.data.model_design`
    makes of ``data`` and ``formula``, with a binomial, ordinal or fractional
    likelihood; the module docstring gives each family's likelihood and how
    random intercepts are split from the fixed effects.

    Parameters
    ----------
    data : xarray.Dataset
        An eval dataset (``score(agent, task, run)``, NaN = not run), with
        agent and task covariates as coords (``model``, ``scaffold`` along
        ``agent``; ``tier``, ``human_minutes`` along ``task``) and per-run
        variables (a judge, a grade).
    formula : str, optional
        lme4 / Bambi syntax (:func:`hierbench.data.model_design`), e.g.
        ``"score ~ scaffold + (1|model) + (1|scaffold:model) + (1|task)"``.
        Default :data:`hierbench.data.DEFAULT_FORMULA`, the crossed model
        (without its agent x task effect when every cell has one run or the
        log has one agent: chosen before the design is built, and recorded as
        the decisions ``formula`` and ``agent_task``).
    family : {"auto", "binomial", "fractional", "ordinal"}
        As ``model_design``: ordinal when ``levels`` is given, binomial when
        every score is 0 or 1, else fractional (scores in [0, 1]).
    levels : sequence of float or of str, optional
        The grade scale of an ordinal response; for a ``score`` read from grades
        written as words, those labels in order (as ``attrs["score_labels"]``;
        the fit is the one without ``levels``). Such a fit's ``grade`` and
        ``threshold`` coords name the labels (``"no|perhaps"``) and its attrs
        keep them (``score_labels``).
    priors : mapping, optional
        Overrides of :data:`MIXED_PRIORS` (``beta`` for differences and slopes, ``beta_level``
        for the intercept and fully coded factors, a class such as
        ``sd_task``, ``thresholds``, ``interior``) or of one term's sd
        (``"sd[1|model]"``).
    agent_coords, task_coords : pandas.DataFrame, optional
        Per-agent / per-task covariates (as ``model_design``).
    n_quad : int
        Quadrature nodes of the marginal agent x task effect (binomial cells).
    centred : "auto" or tuple of str
        Random terms (named as in the formula, ``"1|task"``) given the
        centred form; "auto" decides by how well each term's levels are
        informed (:func:`hierbench.bayes.describe` shows the figures).

    Returns
    -------
    pymc.Model
        Posterior ``beta(coef)``, ``sd(component)`` (and each term's alone, ``sd(<term>)``,
        formerly ``sd[<term>]``, a label ArviZ also gives ``sd``'s element),
        ``re[<term>]`` over each sampled term's levels, ``thresholds``
        (ordinal), ``interior(task)`` (fractional: each task's weight of scores
        strictly inside (0, 1)). ``model.hierbench["design"]``
        is the :class:`hierbench.data.ModelDesign` the reader's-scale
        summaries take (:func:`hierbench.metrics.average_marginal_effects`, ...).

    Raises
    ------
    hierbench.data.FormulaError
        What ``model_design`` refuses (unknown names, aliased or unidentified terms).

    Warns
    -----
    hierbench.data.ConfoundedTermWarning
        Factor levels seen in one combination only.
    UnidentifiedTermWarning
        A ``(1|agent:task)`` term written on a design with one run per cell, or
        any random term whose every level holds one run (``(1|task)`` with one
        agent and one run per task).
    HierbenchWarning
        A grouping column named as a dim ArviZ or this model already uses (``model``, the dim
        ArviZ's plots combine fits along; ``column``, ``chain``, ``draw``, ``coef``, ...): its
        levels, as the column holds them, lie along ``"model (grouping)"``; the structure's
        decision ``grouping_dims`` records the mapping.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> rng = np.random.default_rng(0)
    >>> ds = xr.Dataset({"score": (("agent", "task", "run"), (rng.random((4, 12, 2)) < 0.5) * 1.0)},
    ...                 coords={"agent": list("abcd"), "scaffold": ("agent", ["s1", "s1", "s2", "s2"])})
    >>> model = build_mixed(ds, "score ~ scaffold + (1|agent) + (1|task)")
    >>> sorted(model.hierbench["structure"]["decisions"])[:3]
    ['centred', 'family', 'formula']
    """
    coords_in = {"agent_coords": agent_coords, "task_coords": task_coords}
    return build_chosen(data, formula, family=family, levels=levels, priors=priors, coords=coords_in,
                        n_quad=n_quad, centred=centred)  # fmt: skip


def build_chosen(
    data: xr.Dataset, formula: str | None, *, family: str, levels: Any, priors: Any, coords: dict,
    n_quad: int, centred: Any, chosen: dict | None = None,
) -> pm.Model:
    """:func:`build_mixed`'s engine; ``chosen`` as :func:`_design` (a builder's own formula)."""
    _check_options(formula, n_quad, centred)
    check_choice(family, "family", ["auto", "binomial", "fractional", "ordinal"])
    design, st = _design(data, formula, family, levels, coords, chosen)
    dim_attrs = _taken_dims(st, design)
    marginal, centred_set, absorbed, by_level = _decide(st, design, centred)
    pri = _priors(design, priors)
    n_obs = _run_scores(design, data)[0].size if design.family == "fractional" else None
    row_dim = "cell" if design.row_level == "cell" else "obs"
    with pm.Model(coords=_coords(design, row_dim, n_obs, by_level, absorbed)) as model:
        eta, sd_cell, cuts = _linear(design, pri, marginal, centred_set, absorbed, by_level, centred_columns(st, design))
        extra = _likelihood(design, data, eta, sd_cell, cuts, pri, n_quad)
    model.hierbench = _info(design, st, pri, extra, formula, family, levels, n_quad, centred_set)
    model.hierbench["var_attrs"].update(dim_attrs)
    model.hierbench["root_attrs"].update(data_provenance(data.attrs))
    model.hierbench["counts_hash"] = counts_fingerprint(data)  # the log's; a frequentist result carries it too
    return model


def _info(design, st, pri, extra, formula, family, levels, n_quad, centred_set) -> dict[str, Any]:
    """The data the model carries for :func:`hierbench.bayes.fit` (hooks by name)."""
    row_cells = {"cell_agent": design.agents[design.agent_index], "cell_task": design.tasks[design.task_index]}
    return {
        "obs_coords": _obs_coords(design, extra) if extra["row_dim"] == "obs" or "obs_row" in extra else (
            _obs_coords(design, {"obs_row": grade_runs(design.grade_counts)[0]}) if design.family == "ordinal" else {}),
        "model": "mixed",
        "priors": pri,
        "structure": st.to_dict(),
        "data_hash": design.fingerprint(),
        "hooks": {**HOOKS, **FAMILY_HOOKS.get(design.family, {})},
        "cell_coords": row_cells if extra["row_dim"] == "cell" else {},
        "sampler_defaults": {"target_accept": st.decisions["target_accept"]["choice"]},
        "options": {"formula": design.formula, "family": design.family, "requested_formula": formula,
                    "requested_family": family, "levels": _levels_option(levels),
                    "n_quad": int(n_quad), "centred": sorted(centred_set)},
        "design": design,
        "data": extra,
        "var_attrs": _scale_attrs(design),
        # a saved fit reported without its data names the grades by these (as `hierbench fit` saves them)
        "root_attrs": {"score_labels": json.dumps(list(design.labels))} if design.labels else {},
    }


def _scale_attrs(design: Any) -> dict[str, dict[str, str]]:
    """The scale of the fixed effects and random-term sds (``sd`` and each ``sd(<term>)``): the linear predictor's.

    A [0, 1]-score fit's is its family's own, the logit only at mean 1/2 (``hierbench.metrics.linear_scale``).
    """
    scale = {"scale": linear_scale(design.family)}
    return {"beta": dict(scale), "sd": dict(scale), **{term_sd_name(t): dict(scale) for t in design.random}}


def _obs_coords(design: Any, extra: dict) -> dict[str, np.ndarray]:
    """Each observation's agent, task and run (``obs_agent``, ``obs_task``, ``obs_run``).

    An observation is a run: a design row of a run-level design, or (fractional family on
    cell rows) one run's score of its cell, in :func:`_run_scores`'s order. With them a saved
    fit's pointwise ``log_likelihood``, ``observed_data`` and ``posterior_predictive`` (loo's
    Pareto k, a PPC by agent) can be traced to the runs without the data.
    """
    row = extra.get("obs_row")
    rows = np.arange(len(design.y)) if row is None else np.asarray(row)
    out = {"obs_agent": design.agents[design.agent_index[rows]], "obs_task": design.tasks[design.task_index[rows]]}
    if extra.get("obs_run") is not None:  # a cell row's runs (fractional): each score's own run
        out["obs_run"] = extra["obs_run"]
    elif "run" in design.frame.columns:
        out["obs_run"] = design.frame["run"].to_numpy()[rows]
    return {k: np.asarray(v).astype(str) for k, v in out.items()}


@register_hook("mixed.ordinal_runs")
def _ordinal_runs(dt: xr.DataTree, gen: np.random.Generator | None = None, *, info: Mapping[str, Any]) -> xr.DataTree:
    """A graded fit's outcome one run at a time (``mixed.ordinal_layout``), each run's agent and task as coords.

    The layout makes ``y(obs)`` after the fit's coords are attached; the runs' ``obs_agent`` /
    ``obs_task`` (``_obs_coords``, in the layout's order) go on every group along ``obs``
    that lacks them, so a saved fit's Pareto k or PPC traces to its judge and item without the data.
    """
    dt = ordinal_layout(dt, gen, info=info)
    coords = info.get("obs_coords") or {}
    for name, node in dt.children.items():
        ds = node.to_dataset()
        if coords and "obs" in ds.dims and "obs_agent" not in ds.coords and all(len(v) == ds.sizes["obs"] for v in coords.values()):
            dt[name] = xr.DataTree(ds.assign_coords({k: ("obs", np.asarray(v)) for k, v in coords.items()}))
    return dt


def _levels_option(levels: Any) -> list[float] | list[str] | None:
    """``levels`` as the fit records them: numbers as floats, the labels of grades written as words as given."""
    if levels is None:
        return None
    try:
        return [float(v) for v in levels]
    except (TypeError, ValueError):  # labels: model_design checked they are the data's
        return [str(v) for v in levels]


register(
    ModelEntry(
        name="mixed",
        builder=build_mixed,
        default_priors=lambda opts: {k: dict(v) for k, v in MIXED_PRIORS.items()},
        default_options={"formula": DEFAULT_FORMULA, "family": "auto", "n_quad": 7, "centred": "auto"},
        # what fit() takes from a model: target_accept (a fit's own is its structure's decision)
        sampler_settings={"target_accept": TARGET_ACCEPT["default"]},
        description="Formula model: crossed agent x task effects, agent factors, task features; "
        "binary, graded or [0, 1] scores",
        hooks=HOOKS,
    )
)
