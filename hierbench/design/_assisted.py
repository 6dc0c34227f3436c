"""Model-assisted, design-unbiased estimates of a full-benchmark score from a subset of its tasks.

The target is an agent's realised full score ``theta = (1/T) sum_t y_t``
(``y_t`` the task's success rate over its runs), a fixed number: the only
randomness is the design's, so every statement below holds for every agent,
whatever the working model's quality.

Sequential designs (successive draws: simple random, PPS, stratified,
adaptive). At step ``k`` the task ``I_k`` is drawn from the tasks of its
stratum ``h`` not yet drawn, ``R_k``, with a probability ``q_k(t)`` that may
depend on everything observed before (adaptive) and is recorded. With the
working model's predictions ``m_k(t)`` made from the earlier draws only,

    z_k = sum_{j < k, j in h} y_{I_j} + sum_{t in R_k} m_k(t) + (y_{I_k} - m_k(I_k)) / q_k(I_k)

has conditional mean ``sum_{t in h} y_t`` given the past, whatever the
predictions (Des Raj 1956; the augmented inverse-probability form of active
statistical inference, Zrnic and Candes 2024). The stratum total is
estimated by the mean of its ``z_k``, exactly unbiased; the differences
``z_k - total`` are martingale differences, so ``sum (z_k - mean)^2 /
(n (n - 1))`` is an unbiased estimate of the estimator's variance. The
predictions only change the variance: the closer ``m`` is to ``y``, the
smaller each ``z_k``'s spread.

The interval is ``estimate +- t_{n - H} * se`` (a martingale central limit
theorem), intersected with the range the observed tasks allow. Its variance
per stratum is the design-unbiased ``s^2 = sum (z_k - mean)^2 / (n - 1)``,
except where the working model predicts more: then the pooled ``(w omega +
(n - 1) s^2) / (w + n - 1)``, with ``omega`` the mean over the steps of the
model's prediction of each term's conditional variance, ``sum_R v_t / q_t -
Var(sum_R y_t)`` (``v_t`` the predictive variance of task ``t``'s outcome;
:func:`term_variance`), each made before its draw, and ``w = 4``
(:data:`OMEGA_WEIGHT`): the prediction counts as four terms' worth of
evidence about the variance. Why: at small ``n`` the terms are skewed (a
task the model is sure of, drawn with a small ``q`` and answered against the
prediction, moves its term by ``|e| / q``) and the sample variance is
correlated with the estimate: the paths that have not met such a task yet
have both an estimate off to one side and a small sample variance, so the
plain t interval missed more often than its level (SWE-bench, 10 tasks:
0.872 for a nominal 0.90, four misses in five on one side, their standard
errors 0.6 times the covering paths'). The model's prediction knows the pool
still holds those tasks. The interval is never narrower than the t
interval, so whatever the model its coverage is at least the t interval's,
and the prediction's share fades as ``4 / (n + 3)``. ``w`` was set on a
synthetic design with skewed terms (tests), not on a log: the plain floor
``max(s^2, omega)`` over-covered (SWE-bench 0.92-0.95 at every size, METR
0.93), the model's ``omega`` being larger than the realised term variance on
real logs. Measured and set aside: an interval valid at every ``n`` for
bounded martingale differences (betting, Waudby-Smith and Ramdas 2024) was
73-91 points wide at 10 tasks on SWE-bench, since one term may move the
score by up to ``1 / defensive``; skewness corrections from the sample's own
third moment (Hall 1992) and the bootstrap-t did worse than the t interval,
the failing paths being the ones whose sample shows no skew; uniform draws
alone (``defensive`` 1) covered no better than tilted ones at 10 tasks.

Fixed predictions (not updated from the sample) with simple random,
stratified or Poisson designs use the classical difference estimator
``mean_U m + sum_s (y - m) / (T pi)``, the Rao-Blackwellised form, with its
exact design variance (finite-population correction included).

The purely model-based score (the working model's prediction for the tasks
not run; for an IRT bank :func:`hierbench.freq.irt_score`) is reported
beside it, labelled as such, with a calibrated misfit test per agent: the
prequential person-fit statistic ``sum (l_k - E l_k) / sqrt(sum Var l_k)``,
``l_k`` the log predictive probability of the ``k``-th outcome under the
predictions made before it was seen, standard normal under the model by the
martingale central limit theorem (the ``l_z`` statistic of Drasgow et al.
1985, made honest by predicting each outcome before it is used). An agent
is flagged when its one-sided p-value (with the Edgeworth correction for the
terms' skew, as :func:`hierbench.freq.irt_score` takes it) is below ``1 - prob``: its answers
are less likely under the bank than the bank itself expects, so its
model-based score should not be trusted.

This module imports numpy, scipy and xarray only.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import numpy as np
import xarray as xr
from scipy.stats import binom
from scipy.stats import norm
from scipy.stats import t as student_t

from .._base import HierbenchError
from .._base import Result
from .._base import interval_label
from .._base import make_interval
from ..freq import IRTBank
from ..freq import holm
from ..freq import irt_score
from ..freq import log_score_moments as _logscore  # owned by freq's prequential person fit
from ..freq import prequential_z as prequential_z  # for ._adaptive
from ._bracket import guarded_bounds
from ._hajek import poisson_hajek
from ._plan import uniform_bounds
from ._posterior import _Posterior

__all__ = ["AssistedResult"]


class _BankWorking:
    """An IRT bank as working model: predictions from one agent's posterior, updated with each outcome."""

    def __init__(self, bank: IRTBank, n_runs: int, n_draws: int, n_grid: int, gen: np.random.Generator):
        self.post = _Posterior(bank, n_draws, n_grid, gen, n_runs)

    def predict(self) -> tuple[np.ndarray, np.ndarray]:
        return self.post.predictive()

    def pmf(self, t: int, n: int) -> np.ndarray:
        return self.post.outcome_pmf(t, n)

    def observe(self, t: int, k: int, n: int) -> None:
        self.post.observe(t, k, n)

    def total_var(self, pool: np.ndarray) -> float:
        """Predictive variance of the sum of the ``pool``'s outcome rates (the ability's uncertainty shared)."""
        post = self.post
        rows, w = post._rows()
        if np.array_equal(pool, post.unrun):  # the running sums over the tasks not run yet
            ps, vs = post.ptot[rows], post.vtot[rows]
        else:
            mask = pool.astype(float)
            ps, vs = post.P[rows] @ mask, post.V[rows] @ mask
        return float(w @ vs + w @ (ps - w @ ps) ** 2)


class _FixedWorking:
    """Fixed predictions per task (not updated): binomial outcomes around them."""

    def __init__(self, m: np.ndarray, n_runs: int):
        self.m = np.clip(np.asarray(m, float), 0.0, 1.0)
        self.v = np.maximum(self.m * (1 - self.m) / n_runs, 1e-12)

    def predict(self) -> tuple[np.ndarray, np.ndarray]:
        return self.m, self.v

    def pmf(self, t: int, n: int) -> np.ndarray:
        return binom.pmf(np.arange(n + 1), n, self.m[t])

    def observe(self, t: int, k: int, n: int) -> None:
        pass

    def total_var(self, pool: np.ndarray) -> float:
        """Variance of the sum of the ``pool``'s outcome rates (independent tasks)."""
        return float(self.v[pool].sum())


def draw_probs(rem: np.ndarray, v: np.ndarray, defensive: float) -> np.ndarray:
    """Draw probabilities over the tasks not yet drawn: ``defensive`` uniform, the rest in proportion to the sd."""
    sd = np.sqrt(np.maximum(v, 0.0)) * rem
    n = rem.sum()
    q = defensive * rem / n
    if defensive < 1 and sd.sum() > 0:
        q = q + (1 - defensive) * sd / sd.sum()
    return q / q.sum()


@dataclass
class _Record:
    """One agent's sequence of draws: what was drawn, with which probability, and each step's term."""

    stratum: np.ndarray
    rem: np.ndarray = field(init=False)
    known: np.ndarray = field(init=False)
    steps: list[tuple] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rem = np.ones(self.stratum.size, bool)
        self.known = np.zeros(int(self.stratum.max()) + 1)

    def pool(self, h: int) -> np.ndarray:
        """The tasks of stratum ``h`` not drawn yet."""
        return self.rem & (self.stratum == h)

    def add(self, t: int, q: float, m: np.ndarray, y: float, n: int, pmf: np.ndarray | None,
            omega: float = np.nan) -> None:
        """Record the draw of task ``t`` (probability ``q``) with outcome rate ``y`` over ``n`` runs.

        ``omega``: the working model's prediction of the term's conditional
        variance (:func:`term_variance`), NaN when the draw probabilities of
        the whole pool are not known. Where the draw is uniform over the pool (``q`` is ``1 / |pool|``
        up to the rounding of its normalisation) and the prediction the same on every task of it,
        the prediction cancels from the term, which is then computed without it: ``known + |pool| y``
        (subtracting it left float noise, an all-fail agent's estimate 4.1e-17 for 0: audit D5).
        """
        h = int(self.stratum[t])
        pool = self.pool(h)
        size = int(pool.sum())
        if abs(q * size - 1) < 1e-12 and np.ptp(m[pool]) == 0:  # uniform draw, one prediction: it cancels
            term = self.known[h] + size * y
        else:
            term = self.known[h] + float(m[pool].sum()) + (y - m[t]) / q
        ls = _logscore(pmf, round(y * n)) if pmf is not None else (np.nan,) * 4
        self.steps.append((t, h, q, size, float(m[t]), y, n, term, *ls[:3], omega, ls[3]))
        self.rem[t] = False
        self.known[h] += y

    def table(self, n: int | None = None) -> np.ndarray:
        """The first ``n`` steps as rows (task, stratum, q, pool, prediction, outcome, runs, term, l, El, Vl, omega, K3 l)."""
        rows = self.steps if n is None else self.steps[:n]
        return np.array(rows, float).reshape(-1, 13)


def term_variance(working: Any, pool: np.ndarray, q: np.ndarray, v: np.ndarray) -> float:
    """The working model's prediction of a term's conditional variance, made before the draw.

    Given the past, ``Var(z_k) = sum_R (y_t - m_t)^2 / q_t - (sum_R (y_t - m_t))^2``
    over the pool ``R``; under the working model (predictive variances ``v``)
    its expectation is ``sum_R v_t / q_t - Var(sum_R y_t)``, never negative.
    """
    return max(float((v[pool] / q[pool]).sum()) - working.total_var(pool), 0.0)


#: how many terms' worth of evidence about the term variance the working model's prediction carries
OMEGA_WEIGHT = 4.0


def des_raj(tab: np.ndarray, T: int, floor: bool = False) -> tuple[float, float, int]:
    """Estimate, standard error and degrees of freedom of the mean score from a record's steps.

    ``floor``: where the working model predicts a larger term variance than
    the design-unbiased ``s^2 = sum (z_k - mean)^2 / (n - 1)`` of a stratum,
    its variance is the pooled ``(w omega + (n - 1) s^2) / (w + n - 1)``
    (``omega`` the mean of the steps' predictions where all are recorded,
    ``w`` = :data:`OMEGA_WEIGHT`); never below ``s^2``. A stratum drawn whole
    (a census) contributes its known total and no variance: the mean of its
    ``z_k`` is unbiased but not census-exact (SWE-bench, all 500 tasks run with
    a bank: 0.585 for a known 0.564).
    """
    h = tab[:, 1].astype(int)
    est = var = 0.0
    df = 0
    for s in np.unique(h):
        z = tab[h == s, 7]
        if tab[h == s, 3].min() == 1:  # the stratum's last task was drawn: a census, its total is known
            est += float(tab[h == s, 5].sum())
            continue
        est += z.mean()
        vz = z.var(ddof=1) if z.size > 1 else np.nan
        om = tab[h == s, 11]
        if floor and z.size > 1 and np.isfinite(om).all():
            vz = max(vz, (OMEGA_WEIGHT * float(om.mean()) + (z.size - 1) * vz) / (OMEGA_WEIGHT + z.size - 1))
        var += vz / z.size
        df += z.size - 1
    return est / T, float(np.sqrt(var)) / T, df


def classical(y: np.ndarray, m: np.ndarray, sample: np.ndarray, stratum: np.ndarray,
              incl: np.ndarray, poisson: bool) -> tuple[float, float, int]:
    """The difference estimator with fixed predictions and its exact design variance (srs, stratified, Poisson).

    Predictions the same on every task of each stratum cancel from the srs and stratified
    estimator, which is then the plain (stratified) mean of ``y``, computed as such: subtracting
    them left float noise (an all-fail agent with predictions 0.3: estimate 1.2e-16 and the
    interval [8.4e-17, 1.5e-16], which missed the true 0 and was no point for the guard to catch).
    """
    T = m.size
    if not poisson and all(np.ptp(m[stratum == h]) == 0 for h in np.unique(stratum)):
        m = np.zeros(T)
    e = y[sample] - m[sample]
    if poisson:
        pi = incl[sample]
        var = float(((1 - pi) / pi**2 * e**2).sum())
        return (m.sum() + float((e / pi).sum())) / T, np.sqrt(var) / T, max(sample.size - 1, 0)
    est, var, df = float(m.sum()), 0.0, 0
    hs = stratum[sample]
    for h in np.unique(stratum):
        eh = e[hs == h]
        Th = int((stratum == h).sum())
        est += Th * eh.mean()
        var += Th**2 * (1 - eh.size / Th) * eh.var(ddof=1) / eh.size if eh.size > 1 else np.nan
        df += eh.size - 1
    return est / T, float(np.sqrt(var)) / T, df


def t_bounds(est: float, se: float, df: int, prob: float, lo: float, hi: float) -> tuple[float, float]:
    """``est +- t_df se`` intersected with the feasible range ``[lo, hi]`` (the range alone when ``se`` is NaN).

    Each end is kept inside the range, so the interval is never inverted: an ``est`` beyond
    ``hi`` gives ``[hi, hi]``, not ``[est - half, hi]`` with ``est - half > hi``.

    Examples
    --------
    >>> t_bounds(0.58, 0.001, 10, 0.9, 0.5, 0.564)
    (0.564, 0.564)
    """
    if not np.isfinite(se) or df < 1:
        return lo, hi
    half = student_t.ppf((1 + prob) / 2, df) * se
    return min(max(est - half, lo), hi), max(min(est + half, hi), lo)


def bounded(tab: np.ndarray, T: int, est: float, se: float, df: int, prob: float) -> tuple[float, float, float]:
    """The estimate clipped to the range the tasks run allow, and the ``t`` interval inside that range.

    Des Raj's estimate is unbiased but not range-respecting (SWE-bench, 10 tasks: -0.110 beside
    [0, 0.0998]); the truth always lies in the range, so clipping only moves the estimate toward it.
    The unclipped value is kept by the caller (``unbiased_estimate``).
    """
    lo, hi = feasible_range(tab, T)
    return min(max(est, lo), hi), *t_bounds(est, se, df, prob, lo, hi)


def feasible_range(tab: np.ndarray, T: int) -> tuple[float, float]:
    """The range the tasks run allow for the mean of all ``T``: the tasks not run all 0, all 1."""
    known = float(tab[:, 5].sum())
    return known / T, (known + T - tab.shape[0]) / T


def misfit_test(tab: np.ndarray) -> tuple[float, float]:
    """Prequential person-fit ``z`` (standard normal under the model) and its one-sided p-value (low: misfit)."""
    return prequential_z(tab[:, [8, 9, 10, 12]])


@dataclass(frozen=True, repr=False)
class AssistedResult(Result):
    """Design-based estimates of full-benchmark scores from subsets, with the model-based ones beside them.

    ``estimate`` and ``ci`` (dim ``agent``): the design-unbiased estimate
    of each agent's realised full score and its interval (``ci_kind``
    ``"t"``; how it was made in ``ci_detail``); an estimate outside the
    range the tasks run allow is clipped to it (said in the repr and
    ``ci_detail``), and ``unbiased_estimate`` keeps the unclipped,
    exactly design-unbiased value. ``se`` the standard error
    the interval uses (pooled with the model's predicted term variance
    where that is larger),
    ``n_tasks`` the tasks run. ``model_estimate`` / ``model_lower`` /
    ``model_upper`` (and ``model_ci``): the purely model-based score,
    which trusts the working model on every task not run. ``misfit_z``,
    ``misfit_p`` (one-sided, low means misfit), ``misfit_p_holm``
    (adjusted over agents) and ``misfit_flag`` (``misfit_p < 1 - prob``):
    the prequential person-fit test of the module docstring. ``draws``
    (``agent``, ``step``): each draw's task, stratum, probability, pool
    size, prediction, outcome, runs and term. ``working``: the working
    model and why; ``design``: how the tasks were drawn; ``estimator``:
    the branch taken (``"Des Raj"``, ``"classical"``, ``"plain mean"``,
    with the exact hypergeometric interval, or ``"Hajek"``: a Poisson plan
    without a model, the Hajek mean with its Korn-Graubard interval,
    ``ci_kind`` ``"korn-graubard"``, and the Horvitz-Thompson mean as
    ``unbiased_estimate``). Where the draws are
    uniform (within strata) or independent (every design but PPS and tilted
    adaptive draws), a t interval that would be a point is replaced by the
    design's distribution-free bracket, valid for every population
    (``guard`` per agent ``"bracket"``, its ``ci_kinds`` ``"conservative"``;
    ``ci.attrs["ci_kind"]`` is ``"mixed"`` when agents differ). Without a
    model the plain (stratified, Hajek) mean of the rates is guarded
    further: where the drawn rates did not vary it is the bracket, and
    where at most one drawn task was off 0 (off 1) that end is widened to
    the bracket's (``"guarded"``). ``to_dataset()`` holds
    every field, ``draws``' as ``draws_<variable>`` (``draws_outcome``, ...).
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    unbiased_estimate: xr.DataArray
    se: xr.DataArray
    n_tasks: xr.DataArray
    model_estimate: xr.DataArray
    model_lower: xr.DataArray
    model_upper: xr.DataArray
    model_ci: xr.DataArray
    misfit_z: xr.DataArray
    misfit_p: xr.DataArray
    misfit_p_holm: xr.DataArray
    misfit_flag: xr.DataArray
    draws: xr.Dataset
    working: str
    design: str
    estimator: str = ""
    ci_kinds: xr.DataArray | None = None
    guard: xr.DataArray | None = None

    def to_frame(self) -> Any:
        """One row per agent; ``ci_kind`` is each row's own (``ci_kinds``)."""
        df = super().to_frame()
        if "ci_kinds" in df:
            df["ci_kind"] = df.pop("ci_kinds")
        return df

    @property
    def flagged(self) -> list[str]:
        """Agents whose observed tasks disagree with the working model beyond chance."""
        f = self.misfit_flag
        return [str(a) for a in f["agent"].values[f.values.astype(bool)]]

    def _cell_notes(self) -> xr.DataArray:
        """Where the estimate was clipped to the feasible range: the unclipped, design-unbiased value."""
        raw = self.unbiased_estimate
        clipped = clipped_cells(raw.values, self.estimate.values, self.estimator)
        guard = self.guard.values if self.guard is not None else [""] * raw.size
        words = {"bracket": "drawn rates did not vary, or t a point: distribution-free bracket (conservative)",
                 "guarded": "one drawn task off 0 (or 1): that end widened to the distribution-free bracket's"}
        text = ["; ".join(filter(None, [f"clipped to the feasible range; design-unbiased value {r:.4g}" if c else "",
                                        words.get(str(gd), "")]))
                for r, c, gd in zip(raw.values, clipped, guard, strict=True)]
        return xr.DataArray(np.array(text, dtype=object), dims=raw.dims, coords=raw.coords)

    def _repr_lines(self) -> list[str]:
        """The base lines, the first naming the guarantee; the model-based score and the flags after them."""
        assisted = not bool(np.isnan(self.model_estimate.values).all())
        label = interval_label(self.ci)
        kind = self.ci.attrs.get("ci_kind")
        if kind == "exact":
            how = f"{label} interval (hypergeometric inversion: holds for every population)"
        elif kind == "conservative":
            how = (f"{label} interval (distribution-free bracket: holds for every population; the drawn rates "
                   "did not vary, or the t interval would have been a point)")
        elif kind == "korn-graubard":
            how = (f"approximate {label} interval (Clopper-Pearson at the design's effective sample size, no "
                   "finite-sample guarantee)")
        elif kind == "mixed":
            pct = label.split()[0]
            how = (f"{pct} intervals of mixed kind: approximate t (CLT, no finite-sample guarantee), a "
                   "distribution-free bracket where noted (ci_kinds)")
        else:
            clt = "martingale CLT" if self.estimator == "Des Raj" else "CLT"
            how = f"approximate {label} interval ({clt}, no finite-sample guarantee)"
        what = ("Hajek estimate (approximately design-unbiased; unbiased_estimate: Horvitz-Thompson)"
                if self.estimator == "Hajek" else
                f"design-unbiased estimate ({'model-assisted; ' if assisted else ''}whatever the working model)")
        lines = [
            f"AssistedResult: {what}; {how}",
            *self._cell_lines(),
        ]
        if assisted:
            flagged = self.flagged
            lines.append(
                "  model-based scores (trust the working model on every task not run): model_estimate, model_ci; "
                + (f"misfit flagged, do not use them for: {', '.join(flagged)}" if flagged else "no agent flagged")
            )
        return lines


@dataclass
class _AgentOut:
    """One agent's estimates, before they are stacked over agents."""

    est: float
    se: float
    lo: float
    hi: float
    n: int
    model: tuple[float, float, float]
    z: float
    p: float
    tab: np.ndarray
    raw: float = np.nan
    guard: str = ""  # "bracket" / "guarded": the plain mean's t interval replaced / widened (``guarded_bounds``)


def clipped_cells(raw: np.ndarray, est: np.ndarray, estimator: str) -> np.ndarray:
    """Where the estimate was clipped to the feasible range: it differs from the unclipped ``raw``.

    The Hajek mean is not the unbiased (Horvitz-Thompson) one kept as ``raw``: a difference there is no clipping.
    """
    return np.isfinite(raw) & (raw != est) & (estimator != "Hajek")


def srs_exact(tab: np.ndarray, T: int, prob: float) -> tuple[float, float, float]:
    """Plain mean of 0/1 outcomes drawn uniformly without replacement, and its exact hypergeometric interval.

    The successes among ``n`` of ``T`` tasks are hypergeometric given the population count; the
    interval inverts that law (design U's ``uniform_bounds``), so it covers at least ``prob`` for
    every population and is never degenerate short of a census. The t interval it replaces was
    ``[0, 0]`` whenever every drawn task failed (SWE-bench, a 9% agent, 10 tasks: 160 of 400 plans,
    coverage 0.60 at 90%).
    """
    n = tab.shape[0]
    s = round(float(tab[:, 5].sum()))
    lo, hi = uniform_bounds(np.array([s]), T, n, prob)
    return s / n, float(lo[0]), float(hi[0])


def agent_out(rec: _Record, *, T: int, prob: float, model: tuple[float, float, float],
              fixed: tuple[float, float, int] | None = None, exact: bool = False,
              bracket: tuple[float, float] | Callable[[], tuple[float, float]] | None = None,
              widen: bool = False, hajek: bool = False) -> _AgentOut:
    """Estimate (Des Raj, or the classical ``fixed`` one), interval, misfit test of one agent's record.

    ``exact``: 0/1 outcomes, uniform draws and no model: the exact hypergeometric interval
    (``srs_exact``) in place of the t interval. ``hajek``: a Poisson plan and no model: the Hajek
    mean and its Korn-Graubard interval (``poisson_hajek``), guarded as the t interval is (where the
    drawn rates hardly vary their effective size says too little of the tasks not drawn when those
    weigh most: audit D1, 0.77 at 90% unguarded); the Horvitz-Thompson mean in ``fixed`` is kept as
    the unbiased estimate. ``bracket``: the design's distribution-free
    bracket (``design_bracket``; none for tilted draws), which replaces the t interval where that
    is a point, and with ``widen`` (no model: the plain mean of the rates) guards it as
    ``guarded_bounds`` says.
    """
    tab = rec.table()
    raw, se, df = fixed if fixed is not None else des_raj(tab, T, floor=True)
    if hajek:
        est, se, lo, hi = poisson_hajek(tab, T, prob)
        low, high = feasible_range(tab, T)  # where the mean lies for sure
        est, lo, hi = (min(max(x, low), high) for x in (est, lo, hi))
    else:
        est, lo, hi = srs_exact(tab, T, prob) if exact else bounded(tab, T, raw, se, df, prob)
    how = ""
    if bracket is not None and not exact:
        lo, hi, how = guarded_bounds(tab[:, 5], T, prob, lo, hi, bracket, widen)
    z, p = misfit_test(tab)
    return _AgentOut(est, se, lo, hi, tab.shape[0], model, z, p, tab, raw, how)


def model_score(working: Any, rec: _Record, *, bank: IRTBank | None, prob: float, n_runs: int,
                gen: np.random.Generator) -> tuple[float, float, float]:
    """The purely model-based score: the IRT posterior (``irt_score``), or fixed predictions for the tasks not run."""
    tab = rec.table()
    tasks = tab[:, 0].astype(int)
    if bank is not None:
        runs = tab[:, 6].astype(np.int64)
        resp = xr.Dataset({"n_runs": ("task", runs), "n_success": ("task", np.round(tab[:, 5] * runs))},
                          coords={"task": bank.tasks[tasks]})
        r = irt_score(bank, resp, prob=prob, n_runs=n_runs, misfit_level=None, rng=gen)  # flagged by misfit_test
        lo, hi = r.ci.values
        return float(r.estimate), float(lo), float(hi)
    m, v = working.predict()
    unrun = np.ones(m.size, bool)
    unrun[tasks] = False
    est = (tab[:, 5].sum() + m[unrun].sum()) / m.size
    half = norm.ppf((1 + prob) / 2) * np.sqrt(v[unrun].sum()) / m.size
    return float(est), float(est - half), float(est + half)


_DRAW_COLS = ("task", "stratum", "draw_prob", "pool", "prediction", "outcome", "n_runs", "term")


def _warn_degenerate(ci: xr.DataArray, n: Sequence[int], T: int) -> None:
    """``make_interval``'s zero-width warning for the agents whose interval is a point short of a census.

    A census (every task run) is known exactly, so its point interval is right; anywhere else a
    point at a level below one is a degenerate variance estimate (the drawn terms did not vary).
    """
    lo, hi = ci.values[:, 0], ci.values[:, 1]
    short = (lo == hi) & (np.asarray(n) < T)
    if short.any():
        sub = ci.isel(agent=np.flatnonzero(short))
        make_interval(sub.sel(ci_bound="lower", drop=True), sub.sel(ci_bound="upper", drop=True),
                      prob=float(ci.attrs["ci_prob"]), kind=str(ci.attrs["ci_kind"]),
                      zero_width_why="the drawn tasks' terms did not vary (e.g. all scored alike), so the variance "
                      "estimate is 0")


def assemble(outs: Sequence[_AgentOut], agents: Sequence[str], tasks: np.ndarray, *, prob: float,
             detail: str, working: str, design: str, kind: str = "t", estimator: str = "") -> AssistedResult:
    """Stack the agents' estimates into an :class:`AssistedResult`.

    ``kind``: the interval's (``t``, ``exact`` or ``korn-graubard``); ``estimator``: the branch taken
    (``"Des Raj"``, ``"classical"``, ``"plain mean"``, ``"Hajek"``), which the repr's wording follows.
    """
    ac = {"agent": np.asarray(agents).astype(str)}

    def da(vals, name, dtype=float):
        return xr.DataArray(np.array(vals, dtype=dtype), dims="agent", coords=ac, name=name)

    est = da([o.est for o in outs], "estimate")
    raw = da([o.raw for o in outs], "unbiased_estimate")
    n_clip = int(clipped_cells(raw.values, est.values, estimator).sum())
    if n_clip:
        detail += (f"; the estimate of {n_clip} of {len(outs)} agent(s) fell outside the range the tasks run allow "
                   "and is clipped to it (the unclipped, design-unbiased value is unbiased_estimate)")
    kinds = da(["conservative" if o.guard == "bracket" else kind for o in outs], "ci_kinds", object)
    detail += _guard_detail(outs)
    ci = make_interval(da([o.lo for o in outs], "lower"), da([o.hi for o in outs], "upper"), prob=prob,
                       kind=kinds.values[0] if len(set(kinds.values)) == 1 else "mixed", detail=detail,
                       warn_zero_width=False)
    _warn_degenerate(ci, [o.n for o in outs], tasks.size)
    mlo, mhi = da([o.model[1] for o in outs], "model_lower"), da([o.model[2] for o in outs], "model_upper")
    p = np.array([o.p for o in outs])
    n_max = max(o.n for o in outs)
    cube = np.full((len(outs), n_max, len(_DRAW_COLS)), np.nan)
    for i, o in enumerate(outs):
        cube[i, : o.n] = o.tab[:, : len(_DRAW_COLS)]
    sc = {**ac, "step": np.arange(n_max)}
    draws = xr.Dataset({c: (("agent", "step"), cube[:, :, j]) for j, c in enumerate(_DRAW_COLS) if c != "task"},
                       coords=sc)
    idx = np.where(np.isfinite(cube[:, :, 0]), cube[:, :, 0], 0).astype(int)
    draws["task"] = (("agent", "step"), np.where(np.isfinite(cube[:, :, 0]), tasks[idx], None).astype(object))
    return AssistedResult(
        estimate=est, ci=ci, unbiased_estimate=raw, se=da([o.se for o in outs], "se"), n_tasks=da([o.n for o in outs], "n_tasks", int),
        model_estimate=da([o.model[0] for o in outs], "model_estimate"), model_lower=mlo, model_upper=mhi,
        model_ci=make_interval(mlo, mhi, prob=prob, kind="eti" if "IRT" in working else "normal",
                               detail=f"model-based: {working}; trusts it on every task not run",
                               name="model_ci", warn_zero_width=False),
        misfit_z=da([o.z for o in outs], "misfit_z"), misfit_p=da(p, "misfit_p"),
        misfit_p_holm=da(holm(p), "misfit_p_holm"), misfit_flag=da(p < 1 - prob, "misfit_flag", bool),
        draws=draws, working=working, design=design, estimator=estimator, ci_kinds=kinds,
        guard=da([o.guard for o in outs], "guard", object),
    )


def _guard_detail(outs: Sequence[_AgentOut]) -> str:
    """The ``ci_detail`` words for the agents whose plain-mean t interval was guarded (``guarded_bounds``)."""
    n_b = sum(o.guard == "bracket" for o in outs)
    n_g = sum(o.guard == "guarded" for o in outs)
    said = []
    if n_b:
        said.append(f"for {n_b} of {len(outs)} agent(s) the drawn tasks' rates did not vary or the t interval would "
                    "be a point: their interval is the design's distribution-free bracket, valid for every "
                    "population (ci_kinds 'conservative')")
    if n_g:
        said.append(f"for {n_g} agent(s) at most one drawn task was off 0 (or off 1): that end of the t interval is "
                    "widened to the bracket's")
    return "; " + "; ".join(said) if said else ""


def run_outcome(call: Callable[[str], float], task: str, n_runs: int, available: int | None) -> tuple[int, int]:
    """Run one drawn task ``n_runs`` times (all its logged runs in a replay): (successes, runs)."""
    k = n = 0
    for _ in range(n_runs if available is None else available):
        s = call(task)
        if s is None or (isinstance(s, float) and np.isnan(s)):
            continue
        if float(s) not in (0.0, 1.0):
            raise HierbenchError(f"`run` must return a binary score (0 or 1, NaN for a failed run); got {s!r} "
                                 f"for task {task!r}")
        k += int(s)
        n += 1
    if n == 0:
        raise HierbenchError(
            f"every run of the drawn task {task!r} failed: a design-based estimate needs the outcome of each "
            "drawn task (retry failed runs inside `run`; dropping the task would bias the estimate)"
        )
    return k, n
