"""Bradley-Terry abilities by maximum likelihood, with bootstrap (or Wald) and rank intervals.

The pairwise wing's other jobs: win rates and online Elo in :mod:`._winrate`,
position bias in :mod:`._position`; reading battles in :mod:`._battles`; the
likelihood, MM and Newton iterations in :mod:`._newton`.

The counterpart of :func:`hierbench.bayes.build_bradley_terry`, with the same
model. For an ordered pair (a, b), ``a`` in the first position (left, shown
first, home), ``d = ability_a - ability_b (+ home)`` and

* ``ties="davidson"`` (Davidson 1970): ``P(a) = e^{d/2} / Z``, ``P(tie) = nu / Z``,
  ``P(b) = e^{-d/2} / Z`` with ``Z = e^{d/2} + nu + e^{-d/2}``;
* ``ties="half"``: a tie counts as half a win for each side in the logistic
  likelihood ``P(a) = 1 / (1 + e^{-d})`` (LMArena's and evalica's convention);
* ``ties="none"``: the logistic model; ties are refused.

The log-likelihood is an exponential family in ``(d, log nu)``, hence jointly
concave in the abilities, ``home`` and ``log nu``. It is maximised by the
minorise-maximise (MM) iteration of Hunter (2004) (Zermelo's iteration; with
the home-advantage update of Hunter's section 3) followed by Newton steps on
the concave log-likelihood, which converge quadratically (``method="newton"``,
the default), or by MM alone (``method="mm"``, no Davidson ties). A finite
maximum exists exactly when the "beat or tied" graph of the agents is strongly
connected (Ford 1957; Hunter 2004, Assumption 1); otherwise the abilities are
NaN with a :class:`NoFiniteMLEWarning` naming the agents concerned.

Intervals come from a bootstrap over tasks (prompts), each drawn with all its
battles, whenever the battles carry a task (battles on one prompt are not
independent), or over single battles (``resample="battles"``, and pair counts,
which carry no task). Rank intervals come from the same resamples.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import ClassVar

import numpy as np
import pandas as pd
import xarray as xr
from scipy.special import ndtri

from ..._base import DEFAULT_PROB
from ..._base import BoundaryWarning
from ..._base import HierbenchError
from ..._base import NotConvergedWarning
from ..._base import ResampledResult
from ..._base import as_rng
from ..._base import check_choice
from ..._base import check_int
from ..._base import check_number
from ..._base import check_prob
from ..._base import interval_label
from ..._base import make_interval
from ..._base import warn_user
from ._battles import _Battles
from ._battles import _battles
from ._battles import _few_tasks
from ._battles import _resample_unit
from ._battles import _resampled_counts
from ._battles import _tasks_text
from ._battles import _unit_text
from ._newton import _Fit
from ._newton import _fit
from ._newton import _free
from ._newton import _inverse
from ._newton import _newton_batch
from ._newton import _strongly_connected
from ._text import _number
from ._text import _ranked_lines
from ._undefined import CAUSES
from ._undefined import _bounds_with_undefined
from ._undefined import _no_mle_limit

__all__ = [
    "ELO_PER_LOGIT",
    "BradleyTerryMLResult",
    "NoFiniteMLEWarning",
    "fit_bradley_terry_ml",
]

#: why a bootstrap bound is NaN where the resamples without a finite MLE decide it
_DECIDED = "resamples without a finite MLE decide it"

#: how the bootstrap resamples without a finite MLE enter the intervals (ci_detail and warning)
_HOW_UNDEFINED_ENTER = (
    "an ability they send to +inf (-inf) enters the percentile there, one they leave undefined "
    "counts at the unfavourable end of each bound, and a bound they decide is NaN; a resample that "
    "left agents out is refitted on the agents present for home, nu, the abilities relative to "
    "a reference present and the differences between present agents (relative_distribution)"
)

#: Elo points per logit: 400 points are 10x odds.
ELO_PER_LOGIT = 400.0 / np.log(10.0)


class NoFiniteMLEWarning(BoundaryWarning):
    """The Bradley-Terry likelihood has no finite maximum (the comparison graph is not strongly connected)."""


@dataclass(frozen=True, repr=False)
class BradleyTerryMLResult(ResampledResult):
    """Result of :func:`fit_bradley_terry_ml`.

    Attributes
    ----------
    estimate : DataArray (agent)
        Abilities on ``scale`` (Elo points or logits), sum-zero or relative
        to ``reference``.
    ci : DataArray (agent, ci_bound)
        Bootstrap percentile interval (or Wald, ``interval="wald"``). A
        resample with no finite MLE is not left out: where it sends an
        ability to +inf (-inf), the agent's group above (below) the
        reference's (every other group, for abilities centred on the mean),
        it enters at +inf (-inf); where it leaves the ability undefined it
        counts at the unfavourable end of each bound, and a bound such
        resamples decide is NaN (with a :class:`NoFiniteMLEWarning` that
        counts them by cause). A resample that leaves agents out is refitted
        on the agents present: home, nu and the abilities relative to a
        ``reference`` present are defined there; abilities centred on the
        mean of all agents are not (their differences are:
        ``relative_distribution``).
    ability : DataArray (agent)
        Logit abilities (the Bayesian model's ``ability`` scale).
    standard_error : DataArray (agent)
        Wald standard error on ``scale`` from the observed information.
    home, home_ci, home_se : DataArray or None
        First-position (home) advantage in logits, with ``home=True``.
    nu, nu_ci : DataArray or None
        Davidson tie parameter: 0, its boundary, when the data hold no ties,
        and infinite when every battle is a tie (each with a warning, and no
        interval: ``nu_ci.attrs["why_undefined"]`` says why). Its Wald
        interval is log-normal, ``nu x exp(+- z se(log nu))``.
    rank : DataArray (agent)
        Rank of the estimate (1 = best).
    rank_ci : DataArray (agent, ci_bound)
        Percentile interval of the rank over the resamples (where a resample
        has no finite MLE, the best and the worst rank it allows).
    distribution : DataArray (resample, agent)
        Resampled abilities on ``scale``; where the resample had no finite
        MLE, +inf / -inf where the direction is known, NaN where undefined.
    relative_distribution : DataArray (resample, agent)
        Resampled abilities whose differences ``a - b`` within a resample
        are the resampled differences, for pairwise intervals: equal to
        ``distribution`` except in a resample that left agents out, where
        the agents present hold their refit (relative to the reference, or
        centred on their own mean when abilities sum to zero) and the absent
        ones NaN. So ``a - b`` is undefined only where ``a`` or ``b`` is
        absent or has no finite MLE.
    n_comparisons : int
    loglik : float
    n_undefined : int
        Resamples with no finite MLE; ``attrs["undefined_causes"]`` counts
        them by cause (an agent absent from the resample, a group that won or
        lost every resampled battle, no decisive battle).
    attrs : dict
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    ability: xr.DataArray
    standard_error: xr.DataArray
    rank: xr.DataArray
    rank_ci: xr.DataArray
    home: xr.DataArray | None = None
    home_ci: xr.DataArray | None = None
    home_se: xr.DataArray | None = None
    nu: xr.DataArray | None = None
    nu_ci: xr.DataArray | None = None
    n_comparisons: int = 0
    loglik: float = np.nan
    n_undefined: int = 0
    relative_distribution: xr.DataArray | None = None
    attrs: dict = field(default_factory=dict)
    _dataset_exclude: ClassVar[tuple[str, ...]] = ("distribution", "relative_distribution")

    def to_frame(self) -> pd.DataFrame:
        """One row per agent: ability and interval, rank interval, and home and nu with theirs.

        ``home`` and ``nu`` are one value each, repeated on every row with their
        bounds (``home_lower``, ``nu_upper``, ...) and kinds (``home_ci_kind``,
        ``nu_ci_kind``); ``ci_prob`` and ``ci_kind`` are the abilities'.
        """
        df = super().to_frame()
        for name, iv in (("rank", self.rank_ci), ("home", self.home_ci), ("nu", self.nu_ci)):
            if iv is None:
                continue
            for bound in ("lower", "upper"):
                df[f"{name}_{bound}"] = np.broadcast_to(iv.sel(ci_bound=bound).values, len(df))
            df[f"{name}_ci_kind"] = iv.attrs.get("ci_kind")
        return df

    def _repr_lines(self) -> list[str]:
        """A leaderboard: the agents best first with their intervals, then home and ties."""
        ci, est = self.ci, self.estimate
        fmt = _number(0 if self.attrs.get("scale") == "elo" else 3)
        rlo, rhi = (self.rank_ci.sel(ci_bound=b).values for b in ("lower", "upper"))
        ranks = [f"  rank [{_number(0)(a)}, {_number(0)(b)}]" for a, b in zip(rlo, rhi, strict=True)]
        lines = [
            f"BradleyTerryMLResult: {len(est)} agents, {self.n_comparisons} battles; ability in "
            f"{est.attrs.get('units', '?')}",
            f"  {interval_label(ci)} interval: {ci.attrs.get('ci_detail', '')}",
            *_ranked_lines(est, ci, fmt, ranks),
        ]
        for name, what in (("home", "first-position (home) advantage, logits"), ("nu", "Davidson tie parameter nu")):
            v, v_ci = getattr(self, name), getattr(self, f"{name}_ci")
            if v is not None:
                lo, hi = (float(x) for x in v_ci.values) if v_ci is not None else (np.nan, np.nan)
                why = v_ci.attrs.get("why_undefined") if v_ci is not None else None
                lines.append(
                    f"  {what}: {_number(3)(float(v))} [{_number(3)(lo)}, {_number(3)(hi)}]"
                    + (f" (no interval: {why})" if why else "")
                )
        if self.n_undefined:
            causes = "; ".join(f"{k} with {c}" for c, k in self.attrs.get("undefined_causes", {}).items())
            lines.append(
                f"  {self.n_undefined} of {self.attrs.get('n_resamples')} resamples had no finite MLE "
                f"({causes}); how they enter: the interval's line above"
            )
        return lines


def fit_bradley_terry_ml(
    pairs: xr.Dataset,
    *,
    ties: str = "davidson",
    home: bool = False,
    scale: str = "elo",
    reference: str | None = None,
    center: float = 1000.0,
    interval: str = "bootstrap",
    resample: str = "auto",
    n_resamples: int = 1000,
    prob: float = DEFAULT_PROB,
    method: str = "newton",
    tol: float = 1e-10,
    max_iter: int = 500,
    rng: None | int | np.random.Generator = None,
) -> BradleyTerryMLResult:
    """Bradley-Terry abilities by maximum likelihood, with bootstrap intervals and rank intervals.

    Parameters
    ----------
    pairs : Dataset
        A pairwise dataset (dim ``comparison``) or pair counts (dim ``pair``).
    ties : {"davidson", "half", "none"}
        Davidson ties (the default, as in the Bayesian model; with no ties in
        the data ``nu`` is 0, the boundary of its range, with a
        ``BoundaryWarning`` and no interval; with no decisive battle its MLE
        is infinite and the abilities are not identified: NaN, with a
        :class:`NoFiniteMLEWarning`), ties as half a win each way, or no ties
        (refused if present).
    home : bool
        Estimate a first-position (home) advantage; needs positions
        (``read_battles`` records them, ``from_pair_counts(first_position=True)``).
    scale : {"elo", "logit"}
        Scale of ``estimate``: Elo points (``center + 400 / ln 10 * ability``) or logits.
    reference : str, optional
        Agent fixed at 0 logits (``center`` Elo); default: abilities sum to zero.
    center : float
        Elo of the reference (or of the mean ability).
    interval : {"bootstrap", "wald"}
        Percentile bootstrap, or ``estimate +- z * standard_error`` (nu:
        on the log scale). A bootstrap resample without a finite MLE (an
        agent absent, a group that won or lost every battle) is not dropped:
        see ``BradleyTerryMLResult.ci``.
    resample : {"auto", "task", "battles"}
        Bootstrap unit: tasks (prompts), each drawn with all its battles, or
        single battles, taken as independent. ``"auto"`` (the default): tasks
        when ``pairs`` carries a ``task`` (``read_battles(task=...)``), since
        battles on one prompt are not independent and a bootstrap over them
        is too narrow; battles otherwise (pair counts carry no task). The
        unit is stated in ``attrs["resample"]`` and in ``ci.attrs["ci_detail"]``.
        Tasks worth fewer than 20 equal ones (by their battles) are warned about
        and recorded in the attrs as :func:`hierbench.freq.bootstrap_ci` does.
    n_resamples : int
    prob : float
    method : {"newton", "mm"}
        ``"newton"``: a few MM steps (Hunter 2004), then Newton's method to
        ``tol``. ``"mm"``: MM alone until the largest change of a log
        ability is below ``tol`` (ties "half" or "none" only).
    tol : float
        Convergence tolerance (gradient, scaled by sqrt(n), for Newton).
    max_iter : int
    rng : None, int or Generator

    Returns
    -------
    BradleyTerryMLResult

    Examples
    --------
    The worked example: A beats B and B beats C 64% of the time, A beats C 76%.

    >>> import pandas as pd
    >>> from hierbench.data import read_battles
    >>> rows = ([("A", "B")] * 64 + [("B", "A")] * 36 + [("B", "C")] * 64 + [("C", "B")] * 36
    ...         + [("A", "C")] * 76 + [("C", "A")] * 24)
    >>> df = pd.DataFrame(rows, columns=["left", "right"]).assign(winner="left")
    >>> r = fit_bradley_terry_ml(read_battles(df, position=False), ties="none", n_resamples=200, rng=0)
    >>> r.estimate.round().astype(int).to_series().to_dict()
    {'A': 1100, 'B': 1000, 'C': 900}
    """
    _check_choices(ties, scale, method, home)
    _check_interval_args(interval, resample)
    prob = check_prob(prob)
    n_resamples = check_int(n_resamples, "n_resamples", min=2)
    max_iter = check_int(max_iter, "max_iter", min=1)
    tol = check_number(tol, "tol", low=0, low_open=True)
    center = check_number(center, "center")
    b = _battles(pairs)
    st = _settings(b, ties, home, scale, reference, center, method, tol, max_iter)
    unit = _resample_unit(b, resample)
    fit = _main_fit(b, st)
    boot, booted = _Boot.empty(n_resamples, st.m), fit is not None and interval == "bootstrap"
    if booted:
        boot = _bootstrap(b, st, fit, n_resamples, unit, as_rng(rng))
    res = _with_few_tasks(_bt_result(b, st, fit, boot, interval, unit, prob), b, unit if booted else "", prob)
    if boot.n_undefined:
        _warn_undefined(res, boot)
    return res


def _with_few_tasks(res, b: _Battles, unit: str, prob: float):
    """``res`` with the resampled tasks' count and worth (``_few_tasks``, warned where few) on every interval."""
    few = _few_tasks(b, unit, prob, "; the abilities' and ranks' intervals look surer than the data allow")
    for a in (res.attrs, *(x.attrs for x in (res.ci, res.rank_ci, res.home_ci, res.nu_ci) if x is not None)):
        a.update(few)
    return res


def _main_fit(b: _Battles, st: _Settings) -> _Fit | None:
    """Fit the battles; warn where the MLE is not finite, nu sits on a boundary, or Newton stopped short."""
    if st.no_mle_nu:
        _warn_nu_boundary(st)
        return None
    fit = _fit(b.counts, b.ia, b.ib, st.m, st.ref, st.eff_ties, st.home, st.method, st.tol, st.max_iter)
    if st.nu_at_zero:
        _warn_nu_boundary(st)
    if fit is None:
        _warn_no_mle(b)
    elif not fit.converged and st.method == "newton":
        warn_user(
            f"Bradley-Terry ML did not reach tol={st.tol} in {st.max_iter} iterations",
            NotConvergedWarning,
        )
    return fit


def _check_choices(ties: str, scale: str, method: str, home: bool) -> None:
    """Refuse a model option outside its choices."""
    check_choice(ties, "ties", ["davidson", "half", "none"])
    check_choice(scale, "scale", ["elo", "logit"])
    check_choice(method, "method", ["newton", "mm"])
    if not isinstance(home, (bool, np.bool_)):
        raise TypeError(f"`home` must be True or False; got {home!r}")


def _check_interval_args(interval: str, resample: str) -> None:
    """Refuse a bootstrap unit given to the Wald interval, which resamples nothing."""
    check_choice(interval, "interval", ["bootstrap", "wald"])
    check_choice(resample, "resample", ["auto", "task", "battles"])
    if interval == "wald" and resample != "auto":
        raise ValueError(
            f"`resample={resample!r}` sets the bootstrap unit; the Wald interval (interval='wald') "
            "resamples nothing and takes the battles as independent. Use interval='bootstrap', "
            "or leave `resample` unset"
        )


@dataclass
class _Settings:
    """The model and scale of a Bradley-Terry fit, checked against the battles."""

    ties: str
    eff_ties: str  # "half" for Davidson ties on data without ties (nu's MLE 0, its boundary)
    home: bool
    scale: str
    reference: str | None
    ref: int
    center: float
    method: str
    tol: float
    max_iter: int
    m: int
    n_ties: float
    n_decisive: float

    @property
    def no_mle_nu(self) -> bool:
        """Davidson ties on battles that are all ties: nu's MLE is infinite, the abilities unidentified."""
        return self.ties == "davidson" and self.n_decisive == 0

    @property
    def nu_at_zero(self) -> bool:
        """Davidson ties on battles without a tie: nu's MLE is 0, its boundary."""
        return self.ties == "davidson" and self.n_ties == 0

    def normalise(self, theta: np.ndarray) -> np.ndarray:
        """Abilities on the reported scale (sum-zero or relative to the reference)."""
        th = theta - (theta[self.ref] if self.reference is not None else theta.mean())
        return th if self.scale == "logit" else self.center + ELO_PER_LOGIT * th

    def normalise_rows(self, th: np.ndarray) -> np.ndarray:
        """:meth:`normalise` of each row of ``th`` (B, m)."""
        shift = th[:, [self.ref]] if self.reference is not None else th.mean(1, keepdims=True)
        logit = self.scale == "logit"
        return (th - shift) * (1.0 if logit else ELO_PER_LOGIT) + (0.0 if logit else self.center)


def _settings(b, ties, home, scale, reference, center, method, tol, max_iter) -> _Settings:
    """Run the checks that need the battles; return the settings of the fit."""
    m = len(b.agents)
    if m < 2:
        raise HierbenchError(f"`pairs` must involve at least 2 agents; got {b.agents}")
    n_ties = float(b.counts[:, 1].sum())
    if ties == "none" and n_ties > 0:
        raise HierbenchError(
            f"`ties='none'` needs data without ties; `pairs` holds {int(n_ties)} ties. "
            "Use ties='davidson' or ties='half'"
        )
    if method == "mm" and ties == "davidson" and n_ties > 0:
        raise ValueError(
            "`method='mm'` fits the logistic model (ties 'half' or 'none'); Davidson ties need method='newton'"
        )
    if home and not b.first_position:
        raise HierbenchError(
            "`home=True` needs to know which agent held the first position: give `pairs` a `position` "
            "variable (read_battles records it) or pair counts with first_position=1"
        )
    if reference is not None and reference not in b.agents:
        raise ValueError(f"`reference` must be one of the agents {b.agents}; got {reference!r}")
    present = np.zeros(m, dtype=bool)
    present[b.ia] = present[b.ib] = True
    if not present.all():
        missing = [b.agents[i] for i in np.flatnonzero(~present)]
        raise HierbenchError(
            f"agents {missing} are in the `agent` coord of `pairs` but in no comparison: their ability "
            "is not estimable; drop them from the coord"
        )
    eff_ties = ties if (ties != "davidson" or n_ties > 0) else "half"
    ref = b.agents.index(reference) if reference is not None else 0
    n_decisive = float((b.counts[:, 0] + b.counts[:, 2]).sum())
    return _Settings(
        ties, eff_ties, bool(home), scale, reference, ref, center, method, tol, max_iter, m, n_ties, n_decisive
    )


def _warn_nu_boundary(st: _Settings) -> None:
    """Warn that Davidson's nu sits on a boundary: no tie in the battles (0), or no decisive battle (infinity)."""
    if st.no_mle_nu:
        warn_user(
            f"every one of the {round(st.n_ties)} battles in `pairs` is a tie: under Davidson's model "
            "(ties='davidson') the likelihood rises towards its supremum as nu grows, whatever the "
            "abilities, so nu's MLE is infinite and the abilities are not identified (NaN, intervals "
            "undefined). ties='half' counts each tie as half a win each way (the agents then come out "
            "equal); hierbench.bayes.build_bradley_terry keeps nu finite through its prior",
            NoFiniteMLEWarning,
        )
        return
    warn_user(
        f"`pairs` holds no tie in {round(st.n_decisive)} battles: under ties='davidson' the tie "
        "parameter's MLE is nu = 0, the boundary of its range, and no resample can move it (every "
        "resample is tie-free too), so nu has no interval (NaN); the abilities are those of the "
        "model without ties. For battles that cannot end in a tie pass ties='none'",
        BoundaryWarning,
    )


def _warn_no_mle(b: _Battles) -> None:
    _, lab = _strongly_connected(b.ia, b.ib, b.counts, len(b.agents))
    comps: dict[int, list[str]] = {}
    for i, c in enumerate(lab):
        comps.setdefault(int(c), []).append(b.agents[i])
    warn_user(
        "the Bradley-Terry likelihood has no finite maximum: the agents split into groups none "
        "of which both beat (or tied) and lost to another group "
        f"({len(comps)} groups, e.g. {list(comps.values())[:3]}); abilities are NaN. Use the "
        "Bayesian model (hierbench.bayes.build_bradley_terry), whose prior keeps them finite",
        NoFiniteMLEWarning,
    )


@dataclass
class _Boot:
    """Resampled abilities (on the reported scale), home advantage and nu, and rank ranges.

    Where a resample has no finite MLE (``cause`` >= 0, an index into ``CAUSES``), an
    ability is +-inf where its direction is known and NaN where it is undefined, as are
    home and nu (nu is +inf where no battle was decisive); ``rmin`` / ``rmax`` bound the
    ranks there (equal elsewhere). ``absent`` counts the resamples each agent was absent from.
    ``pair`` holds the present agents' refit in the rows ``refit`` marks (a resample that
    left agents out), whose differences stay defined where ``dist``'s centre does not.
    """

    dist: np.ndarray
    home: np.ndarray
    nu: np.ndarray
    rmin: np.ndarray
    rmax: np.ndarray
    cause: np.ndarray
    absent: np.ndarray
    pair: np.ndarray
    refit: np.ndarray

    @classmethod
    def empty(cls, n_resamples: int, m: int) -> _Boot:
        nan = np.full((n_resamples, m), np.nan)
        return cls(
            nan,
            np.full(n_resamples, np.nan),
            np.full(n_resamples, np.nan),
            nan.copy(),
            nan.copy(),
            np.full(n_resamples, -1, dtype=np.int8),
            np.zeros(m, dtype=np.int64),
            nan.copy(),
            np.zeros(n_resamples, dtype=bool),
        )

    def relative(self) -> np.ndarray:
        """``dist`` with the present agents' refit in the rows that left agents out: differences a - b."""
        return np.where(self.refit[:, None], self.pair, self.dist)

    @property
    def n_undefined(self) -> int:
        """Resamples with no finite MLE."""
        return int((self.cause >= 0).sum())

    def by_cause(self) -> dict[str, int]:
        """Resamples with no finite MLE, counted by cause (the causes that occur)."""
        n = np.bincount(self.cause[self.cause >= 0], minlength=len(CAUSES))
        return {c: int(k) for c, k in zip(CAUSES, n, strict=True) if k}


def _store_limit(b: _Battles, st: _Settings, cnt: np.ndarray, row: int, boot: _Boot) -> None:
    """Record what a resample without a finite MLE says (``_no_mle_limit``) in row ``row``."""
    direction, rmin, rmax, cause, absent = _no_mle_limit(
        b.ia, b.ib, cnt, st.m, st.ref if st.reference is not None else None
    )
    vals = np.full(st.m, np.nan)
    vals[direction == 1.0] = np.inf
    vals[direction == -1.0] = -np.inf
    vals[direction == 0.0] = 0.0 if st.scale == "logit" else st.center
    boot.dist[row], boot.rmin[row], boot.rmax[row] = vals, rmin, rmax
    boot.home[row] = np.nan
    boot.nu[row] = np.inf if (cause == 2 and st.ties == "davidson") else np.nan
    boot.cause[row] = cause
    boot.absent += absent
    if cause == 0:
        _refit_present(b, st, cnt, absent, row, boot)


def _refit_present(b: _Battles, st: _Settings, cnt: np.ndarray, absent: np.ndarray, row: int, boot: _Boot) -> None:
    """Refit a resample that left agents out on the agents present, where their MLE is finite.

    Home and nu are then defined (they need no absent agent), as are the abilities
    relative to a ``reference`` that is present, the differences between present agents
    (``pair``: relative to the reference, or centred on the present agents' mean), and
    the ranks up to the absent agents (each could stand anywhere: the rank range widens
    by their number). Abilities centred on the mean of all agents stay undefined.
    """
    keep = np.flatnonzero(~absent)
    cells = cnt.sum(1) > 0
    if keep.size < 2:
        return
    ties = "half" if st.eff_ties == "davidson" and cnt[cells, 1].sum() == 0 else st.eff_ties
    if ties == "davidson" and (cnt[cells, 0] + cnt[cells, 2]).sum() == 0:
        return
    code = np.full(st.m, -1)
    code[keep] = np.arange(keep.size)
    ref = int(code[st.ref]) if st.reference is not None else -1
    f = _fit(cnt[cells], code[b.ia[cells]], code[b.ib[cells]], keep.size, max(ref, 0), ties, st.home,
             st.method, st.tol, st.max_iter)  # fmt: skip
    if f is None or not np.all(np.isfinite(f.theta)):
        return
    boot.home[row] = f.home if st.home else 0.0
    if st.ties == "davidson":
        boot.nu[row] = np.exp(f.log_nu) if ties == "davidson" else 0.0
    th = f.theta - (f.theta[ref] if ref >= 0 else f.theta.mean())
    th = th if st.scale == "logit" else st.center + ELO_PER_LOGIT * th
    boot.pair[row, keep], boot.refit[row] = th, True
    if ref >= 0:
        boot.dist[row, keep] = th
    rank = _ranks(f.theta[None])[0]
    boot.rmin[row, keep], boot.rmax[row, keep] = rank, rank + absent.sum()


def _refit_mm(b: _Battles, st: _Settings, blk: np.ndarray, r: int, boot: _Boot) -> None:
    """MM refits of one block of resampled counts, one at a time, into ``boot`` from row ``r``."""
    for cnt in blk:
        keep = cnt.sum(1) > 0
        f = _fit(
            cnt[keep],
            b.ia[keep],
            b.ib[keep],
            st.m,
            st.ref,
            st.eff_ties,
            st.home,
            st.method,
            st.tol,
            st.max_iter,
        )
        if f is not None and np.all(np.isfinite(f.theta)):
            boot.dist[r] = st.normalise(f.theta)
            boot.home[r] = f.home
            boot.nu[r] = np.exp(f.log_nu) if st.ties == "davidson" else np.nan
        else:
            _store_limit(b, st, cnt, r, boot)
        r += 1


def _refit_newton(b, st: _Settings, blk: np.ndarray, r: int, start, boot: _Boot) -> None:
    """Refit one block of resampled counts by batched Newton into ``boot`` from row ``r``.

    A resample has a finite MLE when its "beat or tied" graph is strongly connected and,
    with Davidson ties, some battle in it was decisive (else nu is infinite).
    """
    ok = np.array([_strongly_connected(b.ia, b.ib, c, st.m)[0] for c in blk])
    has_ties = blk[:, :, 1].sum(1) > 0
    decisive = (blk[:, :, 0] + blk[:, :, 2]).sum(1) > 0
    done = np.zeros(blk.shape[0], dtype=bool)
    for model in ("davidson", "half") if st.eff_ties == "davidson" else (st.eff_ties,):
        sel = ok if st.eff_ties != "davidson" else ok & (has_ties & decisive if model == "davidson" else ~has_ties)
        if not sel.any():
            continue
        th, hh, lm = _newton_batch(
            b.ia, b.ib, blk[sel], st.m, st.ref, model, st.home, start, st.tol, st.max_iter
        )
        good_rows = np.all(np.isfinite(th), axis=1)
        local = np.flatnonzero(sel)[good_rows]
        done[local] = True
        idx = r + local
        boot.dist[idx] = st.normalise_rows(th[good_rows])
        boot.home[idx] = hh[good_rows] if st.home else 0.0
        if st.ties == "davidson":
            boot.nu[idx] = np.exp(lm[good_rows]) if model == "davidson" else 0.0
    for i in np.flatnonzero(~done):
        _store_limit(b, st, blk[i], r + i, boot)


def _bootstrap(b, st: _Settings, fit: _Fit, n_resamples: int, resample: str, gen) -> _Boot:
    boot = _Boot.empty(n_resamples, st.m)
    start = (fit.theta, fit.home, fit.log_nu if np.isfinite(fit.log_nu) else 0.0)
    r = 0
    for blk in _resampled_counts(b, n_resamples, resample, gen):
        if st.method == "mm":
            _refit_mm(b, st, blk, r, boot)
        else:
            _refit_newton(b, st, blk, r, start, boot)
        r += blk.shape[0]
    fin = boot.cause < 0
    boot.rmin[fin] = boot.rmax[fin] = _ranks(boot.dist[fin])
    return boot


def _warn_undefined(res: BradleyTerryMLResult, boot: _Boot) -> None:
    """Warn of the resamples without a finite MLE, counted by cause (absent agents named), and how they enter."""
    agents = [str(a) for a in res.estimate["agent"].values]
    parts = []
    for cause, k in boot.by_cause().items():
        text = f"{k} with {cause}"
        if cause == CAUSES[0]:
            order = np.argsort(-boot.absent, kind="stable")
            named = [f"{agents[i]!r} in {boot.absent[i]}" for i in order[:5] if boot.absent[i]]
            more = int((boot.absent > 0).sum()) - len(named)
            text += f" ({', '.join(named)}{f', and {more} more agents' if more > 0 else ''})"
        parts.append(text)
    text = (
        f"{boot.n_undefined} of {boot.dist.shape[0]} resamples had no finite Bradley-Terry MLE: "
        f"{'; '.join(parts)}. They are not dropped: {_HOW_UNDEFINED_ENTER}"
    )
    nan_ci = np.isnan(res.ci.values).any(-1) & np.isfinite(res.estimate.values)
    extra = [n for n in ("home", "nu") if getattr(res, f"{n}_ci") is not None
             and getattr(res, f"{n}_ci").attrs.get("why_undefined") == _DECIDED]
    if nan_ci.any() or extra:
        what = [f"{int(nan_ci.sum())} of {nan_ci.size} agents"] if nan_ci.any() else []
        text += (
            f". Here they leave {', '.join(what + extra)} without an interval (NaN). {_reference_remedy(res, boot)}"
            "Battles that carry tasks can be resampled one by one (resample='battles', taken as independent); "
            "hierbench.bayes.build_bradley_terry keeps every ability finite through its prior"
        )
    warn_user(text, NoFiniteMLEWarning)


def _reference_remedy(res: BradleyTerryMLResult, boot: _Boot) -> str:
    """The remedy that keeps the task bootstrap where agents were absent: a reference present in every resample."""
    if not boot.absent.any():
        return ""
    agents = [str(a) for a in res.estimate["agent"].values]
    ref = res.attrs.get("reference")
    always = [a for a, k in zip(agents, boot.absent, strict=True) if k == 0]
    if ref in agents and ref in always:
        return ""
    example = f" (e.g. {always[0]!r})" if always else ""
    return (
        f"Passing reference= an agent present in every resample{example} keeps this bootstrap and defines each "
        "ability relative to it; the differences between agents present in a resample are defined either "
        "way (relative_distribution). "
    )


def _wald_se(fit: _Fit, st: _Settings):
    """Return the Wald SEs on the reported scale and of home.

    The covariance in the reference parametrisation, mapped to the reported one.
    """
    m, sc = st.m, (1.0 if st.scale == "logit" else ELO_PER_LOGIT)
    cov = _inverse(fit.info) if fit.info is not None else None
    full = np.zeros((m, m))
    if cov is not None:
        full[np.ix_(_free(m, st.ref), _free(m, st.ref))] = cov[: m - 1, : m - 1]
    if st.reference is None:
        # (I - J/m) full (I - J/m)', written as double centring: the two matrix products
        # took 20-50 ms at m = 100 on a loaded 2-core machine (BLAS threads waiting for a core)
        full = full - full.mean(1, keepdims=True) - full.mean(0, keepdims=True) + full.mean()
    se_v = sc * np.sqrt(np.clip(np.diag(full), 0, None))
    home_se = np.sqrt(cov[m - 1, m - 1]) if (st.home and cov is not None) else np.nan
    return se_v, home_se, cov


def _scale_attrs(st: _Settings) -> dict:
    """What the reported abilities are and in which units: the attrs of ``estimate`` and ``ci``."""
    anchor = f"agent {st.reference!r}" if st.reference is not None else "the mean ability"
    if st.scale == "logit":
        units = f"logits (log-odds of winning; 0 = {anchor})"
    else:
        units = f"Elo points (400 per 10x odds; {st.center:g} = {anchor})"
    return {"quantity": "Bradley-Terry ability", "scale": st.scale, "units": units}


def _bt_result(b, st: _Settings, fit, boot: _Boot, interval: str, unit: str, prob: float):
    nan_m = np.full(st.m, np.nan)
    n_resamples = boot.dist.shape[0]
    if fit is None:
        est_v = se_v = theta_n = nan_m
        home_v = home_se = ll = np.nan
        nu_v = np.inf if st.no_mle_nu else 0.0 if st.nu_at_zero else np.nan  # the boundary MLEs
        cov, converged, iters = None, False, 0
    else:
        theta_n = fit.theta - (fit.theta[st.ref] if st.reference is not None else fit.theta.mean())
        est_v = st.normalise(fit.theta)
        se_v, home_se, cov = _wald_se(fit, st)
        home_v = fit.home if st.home else np.nan
        nu_v = float(np.exp(fit.log_nu)) if st.ties == "davidson" else np.nan
        ll, converged, iters = fit.loglik, fit.converged, fit.iterations
    est = xr.DataArray(
        est_v,
        dims="agent",
        # a ready pandas Index: xarray builds the coordinate without inferring object dtypes (~0.4 ms)
        coords={"agent": pd.Index(b.agents, dtype=object, name="agent")},
        name="ability",
    )
    unit_words = _unit_text(b, unit)
    details = (f"bootstrap over {unit_words}, {n_resamples} resamples", _wald_detail(b))
    iv = _bt_intervals(est, st, fit, cov, boot, interval, details, prob, se_v, home_v, home_se)
    on_scale = _scale_attrs(st)
    iv["ci"].attrs.update(on_scale)
    logit = {"scale": "logit", "units": "logits (log-odds of winning)"}
    return BradleyTerryMLResult(
        estimate=est.assign_attrs(on_scale),
        ability=est.copy(deep=False, data=theta_n).rename("ability_logit").assign_attrs(
            {**_scale_attrs(st), **logit}
        ),
        standard_error=est.copy(deep=False, data=se_v).rename("standard_error").assign_attrs(
            on_scale
        ),
        rank=est.copy(deep=False, data=_ranks(est_v[None])[0]).rename("rank"),
        distribution=xr.DataArray(
            boot.dist, dims=("resample", "agent"), coords=est.coords, attrs=on_scale
        ),
        relative_distribution=xr.DataArray(
            boot.relative(), dims=("resample", "agent"), coords=est.coords, attrs=on_scale
        ),
        home=xr.DataArray(home_v, name="home", attrs=logit) if st.home else None,
        home_se=xr.DataArray(home_se, name="home_se", attrs=logit) if st.home else None,
        nu=xr.DataArray(nu_v, name="nu") if st.ties == "davidson" else None,
        n_comparisons=round(float(b.counts.sum())),
        loglik=ll,
        n_undefined=boot.n_undefined,
        attrs={
            "ties": st.ties,
            "home": st.home,
            "scale": st.scale,
            "reference": st.reference or "mean",
            "center": st.center,
            "method": st.method,
            "iterations": iters,
            "converged": bool(converged),
            "interval": interval,
            "resample": unit if interval == "bootstrap" else "none (Wald)",
            "resample_unit": unit_words if interval == "bootstrap" else details[1],
            "n_resamples": n_resamples,
            "undefined_causes": boot.by_cause(),
        },
        **iv,
    )


def _wald_detail(b: _Battles) -> str:
    """The Wald interval's ``ci_detail``: what it assumes of the battles."""
    text = "Wald: estimate +- z * standard error from the observed information at the MLE"
    if b.task is None:
        return text
    return f"{text}; battles taken as independent, although they share {_tasks_text(b)}"


def _bt_intervals(est, st, fit, cov, boot, interval, details, prob, se_v, home_v, home_se):
    """Return ``ci``, ``rank_ci``, ``home_ci`` and ``nu_ci``.

    Percentile bootstrap (``_boot_intervals``), or Wald (normal) from the observed
    information, whose rank intervals hold the agents a two-sided test at ``1 - prob``
    does not separate.
    """
    if interval == "bootstrap":
        return _boot_intervals(est, st, fit, boot, details[0], prob)
    est_v, nan_m = est.values, np.full(st.m, np.nan)
    z = float(ndtri(0.5 + prob / 2))  # scipy.special: no distribution-object overhead
    out: dict = {"home_ci": None, "nu_ci": None}
    out["ci"] = make_interval(
        _like(est, est_v - z * se_v), _like(est, est_v + z * se_v), prob=prob, kind="normal", detail=details[1]
    )
    sc = 1.0 if st.scale == "logit" else ELO_PER_LOGIT
    rlo, rhi = _wald_rank_interval(cov, est_v / sc, st.m, st.ref, z) if fit else (nan_m, nan_m)
    out["rank_ci"] = make_interval(
        _like(est, rlo),
        _like(est, rhi),
        prob=prob,
        kind="normal",
        detail="Wald: the agents not separated by a two-sided Wald test at 1 - prob",
        warn_zero_width=False,
    )
    if st.home:
        out["home_ci"] = make_interval(
            home_v - z * home_se, home_v + z * home_se, prob=prob, kind="normal"
        )
    if st.ties == "davidson":
        out["nu_ci"] = _wald_nu(st, fit, cov, z, prob)
    return out


def _nu_undefined(st: _Settings, fit) -> str | None:
    """Why nu has no interval (its MLE on a boundary, or no fit), or None."""
    if st.no_mle_nu:
        return "every battle is a tie: nu's MLE is infinite"
    if st.nu_at_zero:
        return "no tie in the data: nu's MLE is 0, its boundary, and no resample can move it"
    if fit is None:
        return "no finite MLE"
    return None


def _undefined_interval(why: str, prob: float, kind: str) -> xr.DataArray:
    """A NaN interval that says why (``ci_detail`` and ``why_undefined``, which the repr prints)."""
    iv = make_interval(np.nan, np.nan, prob=prob, kind=kind, detail=f"undefined: {why}")
    iv.attrs["why_undefined"] = why
    return iv


def _wald_nu(st: _Settings, fit, cov, z: float, prob: float) -> xr.DataArray:
    """Wald interval of nu on the log scale, ``nu x exp(+- z se(log nu))``, from the observed information."""
    why = _nu_undefined(st, fit)
    if why is None and cov is None:
        why = "the observed information is not available"
    if why is not None:
        return _undefined_interval(why, prob, "log-normal")
    nu, se = float(np.exp(fit.log_nu)), float(np.sqrt(max(cov[-1, -1], 0.0)))
    return make_interval(
        nu * np.exp(-z * se),
        nu * np.exp(z * se),
        prob=prob,
        kind="log-normal",
        detail="Wald on log nu: nu x exp(+- z * se(log nu)), se from the observed information at the MLE",
    )


def _boot_intervals(est, st, fit, boot: _Boot, detail: str, prob: float) -> dict:
    """Percentile intervals of the abilities, ranks, home and nu over the bootstrap resamples.

    Resamples with no finite MLE are not dropped (``_bounds_with_undefined``): an ability
    known to be +-inf there enters at +-inf, an undefined one at the unfavourable end of
    each bound (NaN where that decides the bound); a rank at the end of its range
    (``rmin`` for the lower bound, ``rmax`` for the upper). Without a fit (no bootstrap
    ran) every interval is NaN.
    """
    a = (1.0 - prob) / 2.0
    if boot.n_undefined:
        detail = f"{detail}; {boot.n_undefined} resamples without a finite MLE, not dropped: {_HOW_UNDEFINED_ENTER}"
    if fit is None:
        lo = hi = rlo = rhi = np.full(st.m, np.nan)
    else:
        lo, hi = _bounds_with_undefined(boot.dist, prob)
        rlo = np.floor(np.quantile(boot.rmin, a, axis=0))
        rhi = np.ceil(np.quantile(boot.rmax, 1.0 - a, axis=0))
    # an infinite end is width: the zero-width check (make_interval's, over the finite
    # intervals, the reference's anchor among them) is for when no interval has one
    some_inf = bool(np.isinf(lo).any() or np.isinf(hi).any())
    out: dict = {
        "ci": make_interval(_like(est, lo), _like(est, hi), prob=prob, kind="percentile", detail=detail,
                            warn_zero_width=not some_inf),
        "rank_ci": make_interval(_like(est, rlo), _like(est, rhi), prob=prob, kind="percentile",
                                 detail=detail, warn_zero_width=False),
        "home_ci": None,
        "nu_ci": None,
    }  # fmt: skip
    if st.home:
        out["home_ci"] = _boot_scalar(boot.home, prob, detail, None if fit is not None else "no finite MLE")
    if st.ties == "davidson":
        out["nu_ci"] = _boot_scalar(boot.nu, prob, detail, _nu_undefined(st, fit))
    return out


def _boot_scalar(draws: np.ndarray, prob: float, detail: str, why: str | None) -> xr.DataArray:
    """Percentile interval of home or nu; NaN with ``why``, or where resamples without a finite MLE decide it."""
    if why is not None:
        return _undefined_interval(why, prob, "percentile")
    lo, hi = _bounds_with_undefined(draws[:, None], prob)
    iv = make_interval(lo[0], hi[0], prob=prob, kind="percentile", detail=detail)
    if np.isnan(iv.values).any():
        iv.attrs["why_undefined"] = _DECIDED
    return iv


def _like(est: xr.DataArray, x: np.ndarray) -> xr.DataArray:
    """Bounds shaped like ``est`` (cheaper than a ``make_interval`` template)."""
    return est.copy(deep=False, data=np.asarray(x, dtype=float))


def _ranks(x: np.ndarray) -> np.ndarray:
    """Competition ranks along the last axis, 1 = largest (ties share the best rank)."""
    return (x[..., None, :] > x[..., :, None]).sum(-1) + 1.0


def _wald_rank_interval(cov, theta, m, ref, z):
    free = np.r_[np.arange(ref), np.arange(ref + 1, m)]
    full = np.zeros((m, m))
    full[np.ix_(free, free)] = cov[: m - 1, : m - 1]
    var = np.diag(full)
    vd = var[:, None] + var[None, :] - 2 * full
    diff = theta[None, :] - theta[:, None]  # j - i
    sig_better = diff > z * np.sqrt(np.clip(vd, 0, None))
    sig_worse = -diff > z * np.sqrt(np.clip(vd, 0, None))
    return 1.0 + sig_better.sum(1), float(m) - sig_worse.sum(1)
