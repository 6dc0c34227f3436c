"""The G-study engine: components, their covariance and the ANOVA table of a parsed design.

Private to the variance-components wing. Balanced data: Brennan's closed-form ANOVA
estimators and their exact sampling covariance; unbalanced data: Henderson's Method I
beside REML (:mod:`._reml`) with the expected (or observed) information.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field

import numpy as np

from ..._base import warn_user
from .._kernels import one_blas_thread
from .._kernels import ratio
from . import _reml
from ._design_lang import Design
from ._design_lang import DesignError
from ._design_lang import parse_design
from ._long import Long
from ._warnings import RemlConvergenceWarning

__all__: list[str] = []

#: ``ci="auto"`` profiles REML fits up to this many cell means and random-effect levels (one
#: profile deviance costs a factorisation of that size; METR, 748 cells and 448 levels, takes
#: seconds; SWE-bench with repositories, 12,500 cells and 837 levels, 41 s for all five
#: components at load 6 on 2 cores, so it gets Wald intervals from the observed information)
PROFILE_MAX_CELLS = 2000
PROFILE_MAX_LEVELS = 1000
EXPECTED_INFO_MAX_CELLS = 6000

LEGACY = {"nested": "{r}:({a}*{t})", "crossed": "{a}*{t}*{r}"}


@dataclass
class Fit:
    """What :func:`estimate` returns: every array in the design's effect order."""

    est: np.ndarray
    anova_raw: np.ndarray
    cov: np.ndarray
    sum_sq: np.ndarray
    df: np.ndarray
    mean_sq: np.ndarray
    y: np.ndarray
    sizes: dict[str, float]
    ec: dict | None = None  # effect codes (None: a balanced ANOVA fit, built on demand)
    fit_info: dict = field(default_factory=dict)
    # nested facet -> its number of levels in each observed level (cell) of the facets it is
    # nested in: tasks per cluster (the D-study's spread of tasks over clusters as observed)
    # and runs per agent x task cell (the D-study's runs as observed; empty cells absent)
    cluster_sizes: dict[str, np.ndarray] = field(default_factory=dict)


def dense_codes(shape: tuple[int, ...], dsg: Design) -> dict[frozenset, np.ndarray]:
    """Effect codes of a dense (balanced) array with axes in ``dsg.facets`` order."""
    return _reml.effect_codes(
        {f: np.indices(shape)[i].ravel() for i, f in enumerate(dsg.facets)}, dsg
    )


def balanced_problem_size(shape: tuple[int, ...], dsg: Design) -> tuple[int, int]:
    """The cell means and random-effect levels of a dense array's REML problem.

    Counted as ``_reml.RemlProblem`` counts them (its ``C`` and ``q``) without building it,
    so that ``ci="auto"`` can hold a balanced fit to the profiled sizes
    (``PROFILE_MAX_CELLS``, ``PROFILE_MAX_LEVELS``) at no cost: the observations are
    reduced to cell means when the innermost facet is nested in all the others, and every
    other effect but the residual has one level per combination of its facets.
    """
    sizes = dict(zip(dsg.facets, (int(s) for s in shape), strict=True))
    full = frozenset(dsg.facets)
    prim = dsg.primary(full)
    n = int(np.prod(list(sizes.values())))
    cell = None
    if len(prim) == 1 and dsg.parents[prim[0]] == full - {prim[0]} and len(full) > 1:
        cell = full - {prim[0]}
    n_cells = n // sizes[prim[0]] if cell is not None else n
    n_levels = sum(
        int(np.prod([sizes[f] for f in e])) for e in dsg.effects if e not in (full, cell)
    )
    return n_cells, n_levels


def _mean_squares(ss: np.ndarray, df: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return ratio(ss, df)


def _balanced(dense: np.ndarray, dsg: Design, use_anova: bool) -> Fit:
    """Brennan's closed form on a dense array (and its exact covariance when it is the fit)."""
    sizes = dict(zip(dsg.facets, (float(s) for s in dense.shape), strict=True))
    bal = _reml.anova_balanced(dense, dsg)
    ss, df = bal["sum_sq"], bal["df"]
    ms = _mean_squares(ss, df)
    fit = Fit(bal["estimate"], bal["estimate"], np.empty(0), ss, df, ms, dense.ravel(), sizes)
    for f in dsg.facets:
        if dsg.parents[f]:  # balanced: every parent level (cell) holds the same number
            cells = int(np.prod([sizes[g] for g in dsg.parents[f]]))
            fit.cluster_sizes[f] = np.full(cells, int(sizes[f]), dtype=np.int64)
    if use_anova:
        fit.cov = _reml.anova_cov(bal["coef"], ms, df)
        if np.any(df <= 0):
            bad = [n for n, d in zip(dsg.names, df, strict=True) if d <= 0]
            raise ValueError(
                f"the design {dsg.formula!r} leaves no degrees of freedom for {bad} "
                f"(facet sizes {sizes}); every facet needs >= 2 levels"
            )
    return fit


def _unbalanced(long: Long, dsg: Design) -> Fit:
    """Henderson's Method I on long data; sizes are mean levels per parent level."""
    ec = _reml.effect_codes(long.codes, dsg)
    check_separable(ec, dsg)
    m1 = _reml.anova_method1(long.y, ec, dsg)
    ss, df = m1["sum_sq"], m1["df"]
    sizes, per_parent = {}, {}
    for f in dsg.facets:
        if dsg.parents[f]:  # levels of f in each observed parent level (tasks per cluster, ...)
            per_parent[f] = levels_per_parent(long.codes, dsg, f)
            sizes[f] = int(per_parent[f].sum()) / per_parent[f].size
        else:
            sizes[f] = float(_reml.joint_codes([long.codes[f]])[1])
    ms = _mean_squares(ss, df)
    fit = Fit(m1["estimate"], m1["estimate"], np.empty(0), ss, df, ms, long.y, sizes, ec)
    fit.cluster_sizes = per_parent
    return fit


def levels_per_parent(codes: dict[str, np.ndarray], dsg: Design, f: str) -> np.ndarray:
    """Levels of the nested facet ``f`` in each observed level (cell) of the facets it is nested in.

    Tasks per cluster, runs per agent x task cell: one count per observed parent level.
    """
    par = [g for g in dsg.facets if g in dsg.parents[f]]
    pcode, npar = _reml.joint_codes([codes[g] for g in par])
    own, nown = _reml.joint_codes([codes[g] for g in [*par, f]])
    parent_of = np.zeros(nown, dtype=np.int64)
    parent_of[own] = pcode
    return np.bincount(parent_of, minlength=npar)


def estimate(long: Long, dsg: Design, dense: np.ndarray | None, use_anova: bool) -> Fit:
    """Fit the G-study: closed-form ANOVA or REML.

    ANOVA when balanced and ``use_anova``; REML beside the ANOVA-type estimates.
    """
    fit = _balanced(dense, dsg, use_anova) if dense is not None else _unbalanced(long, dsg)
    if not use_anova:
        if fit.ec is None:
            fit.ec = dense_codes(dense.shape, dsg)
        fit.est, fit.cov, fit.fit_info = fit_reml(fit.y, fit.ec, dsg, fit.anova_raw, stacklevel=4)
    return fit


def check_separable(ec: dict[frozenset, np.ndarray], dsg: Design) -> None:
    """Refuse two effects with the same levels (e.g. every family has one task).

    The data cannot split their variance, and no estimate of either would mean anything.
    """
    nlev = {e: int(c.max()) + 1 for e, c in ec.items()}
    names = dict(zip(dsg.effects, dsg.names, strict=True))
    for b in dsg.effects:
        for a in dsg.effects:
            if a < b and nlev[a] == nlev[b]:  # b refines a: equal counts = the same partition
                raise DesignError(
                    f"the design {dsg.formula!r} cannot separate {names[a]!r} from {names[b]!r} "
                    f"in these data: both have the same {nlev[a]} levels (e.g. every level of "
                    f"{names[a]!r} holds a single level of {names[b]!r}); drop a facet from "
                    "the design"
                )


def _start(prob: _reml.RemlProblem, dsg: Design, y: np.ndarray, anova_raw: np.ndarray):
    """Return starting relative SDs: the ANOVA-type estimates relative to the residual, floored."""
    s2e0 = max(float(anova_raw[-1]), 1e-3 * float(np.var(y)), 1e-12)
    init = []
    for e in prob.terms:
        init.append(np.sqrt(max(float(anova_raw[dsg.effects.index(e)]), 0.05 * s2e0) / s2e0))
    if prob.cell_effect is not None:
        i = dsg.effects.index(prob.cell_effect)
        init.append(np.sqrt(max(float(anova_raw[i]), 0.05 * s2e0) / s2e0))
    return np.array(init)


def problem_order(prob: _reml.RemlProblem, dsg: Design) -> list[int]:
    """Design positions of the REML problem's parameters (terms, cell effect, residual)."""
    order = [dsg.effects.index(e) for e in prob.terms]
    if prob.cell_effect is not None:
        order.append(dsg.effects.index(prob.cell_effect))
    order.append(dsg.effects.index(frozenset(dsg.facets)))
    return order


def _covariance(prob, s2_terms, s2_cell, s2e, order, m) -> tuple[np.ndarray, str | None]:
    """Return the components' covariance from the REML information.

    Expected (Fisher, needs the C x C inverse covariance of the cell means) up to
    ``EXPECTED_INFO_MAX_CELLS`` cells, observed (a finite-difference Hessian of the
    deviance) above.
    """
    cov = np.full((m, m), np.nan)
    if prob.C <= EXPECTED_INFO_MAX_CELLS:
        info = prob.expected_information(s2_terms, s2_cell, s2e)
        info_kind: str | None = "expected"
    else:
        info = prob.observed_information(s2_terms, s2_cell, s2e)
        info_kind = "observed"
    if np.all(np.isfinite(info)) and np.all(np.linalg.eigvalsh(info) > 0):
        cov[np.ix_(order, order)] = np.linalg.inv(info)
    else:
        try:
            cov[np.ix_(order, order)] = np.linalg.pinv(info)
        except np.linalg.LinAlgError:
            info_kind = None
    return cov, info_kind


def fit_reml(
    y: np.ndarray,
    ec: dict[frozenset, np.ndarray],
    dsg: Design,
    anova_raw: np.ndarray,
    need_cov: bool = True,
    stacklevel: int = 3,
) -> tuple[np.ndarray, np.ndarray, dict]:
    """REML estimates (design order), their covariance and the fit's record."""
    m = len(dsg.effects)
    if float(np.ptp(y)) == 0.0:
        return np.zeros(m), np.zeros((m, m)), {"converged": True, "message": "constant scores"}
    with one_blas_thread():
        prob = _reml.RemlProblem(y, ec, dsg)
        r = prob.fit(_start(prob, dsg, y, anova_raw))
        s2e = r["sigma2_e"]
        s2_terms = r["sigma2"][: len(prob.terms)]
        s2_cell = float(r["sigma2"][-1]) if prob.cell_effect is not None else 0.0
        order = problem_order(prob, dsg)
        est = np.zeros(m)
        est[order] = np.r_[s2_terms, [s2_cell] if prob.cell_effect is not None else [], s2e]
        cov, info_kind = np.full((m, m), np.nan), None
        if need_cov:
            cov, info_kind = _covariance(prob, s2_terms, s2_cell, s2e, order, m)
    if not r["converged"]:
        warn_user(
            f"REML did not report convergence ({r['message']}); estimates may be inaccurate",
            RemlConvergenceWarning,
        )
    info_out = {k: r[k] for k in ("converged", "message", "nfev", "deviance", "mu", "theta")}
    info_out["information"] = info_kind
    info_out["n_cells"] = prob.C
    info_out["n_random_levels"] = prob.q
    return est, cov, info_out


def mean_squares_nested(y: np.ndarray):
    """Return the sums of squares, df and mean squares of ``r:(a*t)`` for a dense (M, T, R) array."""
    d = parse_design(LEGACY["nested"].format(a="a", t="t", r="r"))
    bal = _reml.anova_balanced(y, d)
    keys = ["a", "t", "at", "e"]
    ss = dict(zip(keys, bal["sum_sq"].tolist(), strict=True))
    df = dict(zip(keys, bal["df"].tolist(), strict=True))
    ms = {k: ss[k] / df[k] if df[k] > 0 else np.nan for k in keys}
    return ss, df, ms
