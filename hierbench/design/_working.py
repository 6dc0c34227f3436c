"""The working model of a model-assisted estimate, chosen from the data by cross-fitting on calibration agents.

A working model never decides whether a design-based estimate is unbiased
(it always is); it decides how large its variance is. So the choice is
made on what that variance will be: the calibration agents are split into
folds, each candidate bank (``"2pl"``, ``"1pl"``) is calibrated on the
other folds, and for every agent of a fold its ability is estimated from a
random half-budget of its tasks; on all its other tasks the design
variance per draw of the adaptive estimator's term,
``(sum_R e_t^2 / q_t - (sum_R e_t)^2) / T^2`` with ``e = y - m`` the
residuals of the model's predictions and ``q`` the tilted draw
probabilities they imply, is computed exactly (the agent's outcomes are all
known). ``"none"`` is the plain mean of uniform draws. The candidate with
the smallest mean over agents is chosen, and the result says by how much.

This module imports numpy, scipy and xarray only.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any

import numpy as np
import xarray as xr
from threadpoolctl import threadpool_limits

from .._base import HierbenchError
from .._base import as_rng
from .._base import check_choice
from .._base import check_int
from .._base import counts
from .._base import warn_user
from .._docs import fill_doc
from ..freq import SLOPES_COLLAPSED_WORDS
from ..freq import IRTBank
from ..freq import IRTConvergenceWarning
from ..freq import fit_irt_ml
from ._assisted import draw_probs

if TYPE_CHECKING:
    import pandas as pd
from ._posterior import _check_complete
from ._posterior import _Posterior

__all__ = ["WorkingModel", "choose_working_model"]

CANDIDATES = ("2pl", "1pl", "none")


def first_names(names: Sequence[Any], most: int = 8) -> str:
    """The first ``most`` names joined by commas, and ``", ..."`` when there are more (the studies' warnings)."""
    return ", ".join(map(str, names[:most])) + ", ..." * (len(names) > most)


def fit_counted(data: xr.Dataset, **kw: Any) -> Any:
    """:func:`hierbench.freq.fit_irt_ml` for a caller that counts the banks that collapsed and says so once.

    The fit's warnings of class :class:`hierbench.freq.IRTConvergenceWarning` (the collapse,
    and the hyperparameters that ran off with it) are dropped when its slopes collapsed, and
    issued as they came otherwise; its other warnings always are.
    """
    cal = None
    try:
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            cal = fit_irt_ml(data, **kw)
    finally:  # a fit that raised drops nothing
        flat = cal is not None and cal.info["slopes_collapsed"]
        for w in seen:
            if not (flat and issubclass(w.category, IRTConvergenceWarning)):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return cal


@dataclass(frozen=True)
class WorkingModel:
    """The working model chosen for model-assisted estimation, and why.

    Attributes
    ----------
    name : str
        ``"2pl"``, ``"1pl"`` or ``"none"``.
    bank : IRTBank or None
        The chosen model calibrated on all the agents (None for ``"none"``).
    criterion : xarray.DataArray
        (``candidate``) cross-fitted design variance per draw of the
        estimator's term (score units squared; divide by the number of tasks
        drawn for the estimator's variance).
    criterion_se : xarray.DataArray
        Its standard error over the calibration agents.
    reason : str
        The choice in words.
    """

    name: str
    bank: IRTBank | None
    criterion: xr.DataArray
    criterion_se: xr.DataArray
    reason: str

    def to_frame(self) -> pd.DataFrame:
        """The criterion per candidate as a table (pandas), the chosen one marked."""
        df = xr.Dataset({"criterion": self.criterion, "criterion_se": self.criterion_se}).to_dataframe()
        df["chosen"] = df.index == self.name
        return df

    def __repr__(self) -> str:
        return f"WorkingModel: {self.reason}"


def _design_variance(y: np.ndarray, m: np.ndarray | None, v: np.ndarray | None, rest: np.ndarray,
                     defensive: float) -> float:
    """Exact design variance per draw of the Des Raj term over the tasks ``rest`` (score units squared)."""
    T = y.size
    if m is None:  # no model: uniform draws, constant prediction
        e = y[rest] - y[rest].mean()
        return float(rest.sum() * (e**2).sum()) / T**2
    q = draw_probs(rest, v, defensive)[rest]
    e = y[rest] - m[rest]
    return float((e**2 / q).sum() - e.sum() ** 2) / T**2


@fill_doc
def choose_working_model(
    data: xr.Dataset,
    *,
    candidates: Sequence[str] = CANDIDATES,
    n_tasks: int = 50,
    defensive: float = 0.5,
    folds: int = 5,
    n_bank_draws: int = 200,
    n_draws: int = 50,
    n_grid: int = 41,
    run_icc: float | None = None,
    rng: None | int | np.random.Generator = None,
) -> WorkingModel:
    """Choose the working model (2PL, 1PL or none) by cross-fitted design variance on calibration agents.

    See the module docstring for the criterion. The chosen bank is then
    calibrated on every agent of ``data``. A candidate whose bank there
    collapsed (``IRTBank.slopes_collapsed``: every discrimination ~0, as the
    2PL's on a few agents) is no working model and is not chosen: the next
    smallest criterion is, and a :class:`hierbench.freq.IRTConvergenceWarning`
    says so, and how many of the banks cross-fitted without a fold collapsed
    (on those folds the criterion is that of the population-average
    predictions). When no candidate is usable: a HierbenchError.

    Parameters
    ----------
    data : xarray.Dataset
        The calibration agents' complete logs (binary ``score`` over agent,
        task, run, or counts); at least 3 agents.
    candidates : sequence of {"2pl", "1pl", "none"}
    n_tasks : int
        The planned number of tasks per agent; each held-out agent's ability
        is estimated from ``max(2, n_tasks // 2)`` random tasks.
    defensive : float
        The adaptive design's uniform weight (as in :func:`assisted_adaptive`).
    folds : int
        Cross-fitting folds, at most the number of agents (``min(folds, agents)`` is used).
    n_bank_draws, n_draws, n_grid : int
        Laplace draws per bank, and the draws and ability grid of each agent's posterior.
    run_icc : float, optional
        Passed on to :func:`hierbench.freq.fit_irt_ml`.
    %(rng)s

    Returns
    -------
    WorkingModel
        The chosen name and its bank calibrated on all of ``data`` (the
        ``working`` argument of :func:`assisted_adaptive` and
        :func:`assisted_mean`), with the criterion of every candidate.

    Examples
    --------
    >>> from hierbench.design import simulate_irt_log
    >>> data, _ = simulate_irt_log(12, 60, rng=0)
    >>> wm = choose_working_model(data, n_tasks=20, folds=3, n_bank_draws=50, rng=0)
    >>> wm.name in ("2pl", "1pl", "none")
    True
    """
    wm, note = _choose_working(data, candidates=candidates, n_tasks=n_tasks, defensive=defensive, folds=folds,
                               n_bank_draws=n_bank_draws, n_draws=n_draws, n_grid=n_grid, run_icc=run_icc, rng=rng)
    if wm.bank is not None and wm.bank.slopes_collapsed:
        raise HierbenchError(
            f"choose_working_model: no candidate is a usable working model: {note}. Add 'none' to `candidates` "
            "(the plain mean of uniform draws), or calibrate on more agents"
        )
    if note:
        warn_user(f"choose_working_model: {note}. Calibrate on more agents (the 2PL's slopes are prior-dominated "
                  "under about 10) for a model whose bank collapsed to be a candidate", IRTConvergenceWarning)
    return wm


def _choose_working(data: xr.Dataset, *, candidates: Sequence[str], n_tasks: int, defensive: float, folds: int,
                    n_bank_draws: int, n_draws: int, n_grid: int, run_icc: float | None,
                    rng: None | int | np.random.Generator) -> tuple[WorkingModel, str]:
    """:func:`choose_working_model`'s choice, and what collapsed in words ("" when nothing did), neither warned.

    A candidate whose bank calibrated on all of ``data`` collapsed is not chosen; when every
    model candidate's did (and ``"none"`` is not one) the smallest is returned with its collapsed
    bank, for the caller to refuse or replace by its population-average predictions.
    """
    cands = [check_choice(c, "candidates", list(CANDIDATES)) for c in candidates]
    if not cands:
        raise HierbenchError(f"`candidates` must name at least one of {list(CANDIDATES)}")
    c = counts(data, purpose="choosing a working model")
    _check_complete(c, "to choose a working model")
    M, T = c.sizes["agent"], c.sizes["task"]
    if M < 3:
        raise HierbenchError(f"`data` must hold at least 3 agents to cross-fit a working model; got {M}")
    folds = check_int(folds, "folds", min=2)
    n_fit = max(2, min(check_int(n_tasks, "n_tasks", min=2), T) // 2)
    gen = as_rng(rng)
    crit, n_flat = _cross_fit(c, cands, folds=min(folds, M), n_fit=n_fit, defensive=float(defensive), gen=gen,
                              n_bank_draws=n_bank_draws, n_draws=n_draws, n_grid=n_grid, run_icc=run_icc)
    mean, se = crit.mean(0), crit.std(0, ddof=1) / np.sqrt(M)
    best, bank, dropped = _first_usable(c, cands, mean, gen=gen, n_bank_draws=n_bank_draws, run_icc=run_icc)
    reason = (f"{_choice_words(crit, cands)} ({min(folds, M)} folds over {M} agents, ability from {n_fit} random "
              f"tasks, defensive weight {defensive:g})")
    note = _collapse_note(n_flat, dropped, best, folds=min(folds, M), M=M)
    if note:
        reason = f"{best} chosen; {reason}; {note}" if best != cands[int(np.argmin(mean))] else f"{reason}; {note}"
    cc = {"candidate": cands}
    return WorkingModel(best, bank, xr.DataArray(mean, dims="candidate", coords=cc, name="criterion"),
                        xr.DataArray(se, dims="candidate", coords=cc, name="criterion_se"), reason), note


def _first_usable(c: xr.Dataset, cands: list[str], mean: np.ndarray, *, gen: np.random.Generator,
                  n_bank_draws: int, run_icc: float | None) -> tuple[str, IRTBank | None, list[str]]:
    """The candidate of smallest mean criterion whose bank on all of ``c`` did not collapse, its bank, the dropped.

    Candidates are calibrated in order of their criterion until one is usable (only the smallest
    when it is); when none is, the smallest with its collapsed bank.
    """
    first = int(np.argmin(mean))
    banks: dict[str, IRTBank | None] = {}
    for i in [first, *(int(j) for j in np.argsort(mean, kind="stable") if j != first)]:
        name = cands[i]
        if name != "none":
            banks[name] = fit_counted(c, model=name, n_draws=n_bank_draws, run_icc=run_icc, rng=gen).bank
        else:
            banks[name] = None
        if banks[name] is None or not banks[name].slopes_collapsed:
            best = name
            break
    else:
        best = cands[first]
    return best, banks[best], [k for k, b in banks.items() if b is not None and b.slopes_collapsed]


def _collapse_note(n_flat: dict[str, int], dropped: list[str], best: str, *, folds: int, M: int) -> str:
    """What collapsed in a working-model choice, in words ("" when nothing did)."""
    said = []
    if dropped:
        which = " and ".join(dropped)
        said.append(
            f"the {which} bank{'s' if len(dropped) > 1 else ''} calibrated on all {M} agents collapsed "
            f"({SLOPES_COLLAPSED_WORDS}, so the item curves are flat and "
            "assisted_adaptive would replace it by its population-average predictions), so "
            + (f"{which} is not chosen" if best not in dropped else "none of them is a working model")
        )
    flat = [f"{k} in {v} of {folds}" for k, v in n_flat.items() if v]
    if flat:
        said.append(f"the banks cross-fitted without a fold collapsed for {', '.join(flat)} folds: there the "
                    "criterion is that of the model's population-average predictions, not of its item curves")
    return "; ".join(said)
#: a candidate within this many paired standard errors of the smallest criterion ties with it
TIE_SE = 2.0


def _choice_words(crit: np.ndarray, cands: list[str]) -> str:
    """The choice in words: the smallest mean criterion, and which candidates tie with it.

    ``crit`` (agent, candidate). A runner-up ties when its mean excess over the chosen one is under
    ``TIE_SE`` standard errors of the paired differences over agents (the candidates are scored
    on the same agents, so the paired se, not each criterion's own, measures the gap): on SWE-bench
    2pl 0.1079 against 1pl 0.1085 was a tenth of its se, yet read as a win.
    """
    mean, se = crit.mean(0), crit.std(0, ddof=1) / np.sqrt(crit.shape[0])
    b = int(np.argmin(mean))
    each = ", ".join(f"{k} {mean[i]:.4g} (se {se[i]:.2g})" for i, k in enumerate(cands))
    gaps = []
    for i, k in enumerate(cands):
        if i != b:
            d = crit[:, i] - crit[:, b]
            gaps.append((k, float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size))))
    tied = [g for g in gaps if not g[1] >= TIE_SE * g[2]]
    text = f"{cands[b]}: smallest cross-fitted design variance per draw ({each})"
    if tied:
        names = " and ".join([cands[b], *(g[0] for g in tied)])
        text += (f"; {names} tie within {TIE_SE:g} paired se ("
                 + ", ".join(f"{k} - {cands[b]} = {m:.2g}, paired se {s:.2g}" for k, m, s in tied)
                 + f"), {cands[b]} kept as the smallest")
    clear = [g for g in gaps if g not in tied]
    if clear:
        text += f"; larger beyond {TIE_SE:g} paired se: " + ", ".join(f"{k} (+{m:.2g}, paired se {s:.2g})" for k, m, s in clear)
    return text


def _cross_fit(c: xr.Dataset, cands: list[str], *, folds: int, n_fit: int, defensive: float,
               gen: np.random.Generator, n_bank_draws: int, n_draws: int, n_grid: int,
               run_icc: Any) -> tuple[np.ndarray, dict[str, int]]:
    """(agent, candidate) design variances per draw, each agent's bank calibrated without its fold.

    Also, per candidate, the number of folds whose bank collapsed (its warning is left to the caller).
    """
    M, T = c.sizes["agent"], c.sizes["task"]
    n = c["n_runs"].transpose("agent", "task").values.astype(np.int64)
    k = np.round(c["n_success"].transpose("agent", "task").values).astype(np.int64)
    y = k / n
    runs = int(n.max())
    fold_of = gen.permutation(np.arange(M) % folds)
    fit_sets = [gen.permutation(T)[:n_fit] for _ in range(M)]  # the same tasks for every candidate
    out = np.full((M, len(cands)), np.nan)
    n_flat = dict.fromkeys(cands, 0)
    for j, cand in enumerate(cands):
        for f in range(folds):
            members = np.flatnonzero(fold_of == f)
            bank = None
            if cand != "none":
                bank = fit_counted(c.isel(agent=np.flatnonzero(fold_of != f)), model=cand, n_draws=n_bank_draws,
                                   run_icc=run_icc, rng=gen).bank
                n_flat[cand] += bank.slopes_collapsed
            for i in members:
                rest = np.ones(T, bool)
                rest[fit_sets[i]] = False
                m = v = None
                if bank is not None:
                    with threadpool_limits(1, user_api="blas"):
                        post = _Posterior(bank, n_draws, n_grid, gen, runs)
                        for t in fit_sets[i]:
                            post.observe(int(t), int(k[i, t]), int(n[i, t]))
                        m, v = post.predictive()
                out[i, j] = _design_variance(y[i], m, v, rest, defensive)
    return out, n_flat
