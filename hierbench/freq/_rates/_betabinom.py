"""Beta-binomial maximum likelihood and the profile-likelihood interval for the mean.

Model: task ``t`` has success probability ``p_t ~ Beta(mu kappa, (1 - mu) kappa)``
and ``c_t | p_t ~ Binomial(n_t, p_t)``. ``mu`` is the benchmark's mean
success rate over the task population, ``kappa`` the concentration
(``rho = 1 / (1 + kappa)`` is the intra-task correlation of runs). The
interval for ``mu`` keeps the points whose profile log-likelihood
``max_kappa l(mu, kappa)`` is within ``chi2_1(prob) / 2`` of the maximum.

The kernels are vectorised over many datasets that share the same set of
distinct ``(n, c)`` pairs (a histogram), so a coverage study of thousands
of replications costs a few thousand array evaluations, not thousands of
optimiser calls.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import xarray as xr
from scipy import optimize
from scipy import stats
from scipy.special import expit
from scipy.special import gammaln
from scipy.special import logit

from ..._base import DEFAULT_PROB
from ..._base import BoundaryWarning
from ..._base import Result
from ..._base import check_prob
from ..._base import counts
from ..._base import field_alias
from ..._base import interval_label
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from ._intervals import EmptySampleWarning

__all__ = ["BetaBinomialResult", "NoOverdispersionWarning", "beta_binomial_profile_ci", "fit_beta_binomial_ml"]

_LOGK = (-7.0, 16.0)  # search range of log kappa; kappa beyond e^16 is treated as binomial
_LOGIT = (-23.0, 23.0)  # search range of logit mu
_GOLD = (np.sqrt(5) - 1) / 2
#: the ``ci_detail`` of the interval fit_beta_binomial_ml leaves empty (its repr reads it back)
_CI_NOT_COMPUTED = "not computed by fit_beta_binomial_ml (use beta_binomial_profile_ci)"
#: ``ci_kind`` of that interval (``ci_prob`` NaN): outside ``CI_KINDS`` on purpose, so that
#: ``hierbench.compare.side_by_side`` refuses to line up an interval that was never computed
CI_NOT_COMPUTED_KIND = "not computed"


# ---------------------------------------------------------------------------
# vectorised kernels: pairs (n_p, c_p), multiplicities m[r, p]
# ---------------------------------------------------------------------------



class NoOverdispersionWarning(BoundaryWarning, RuntimeWarning):
    """The beta-binomial likelihood is maximised by the binomial limit (``kappa = inf``)."""

def _rise(x: np.ndarray, counts: np.ndarray, nmax: int) -> np.ndarray:
    """``log Gamma(x + m) - log Gamma(x)`` for each m in ``counts``: shape x.shape + (P,)."""
    if nmax <= 256:
        cum = np.concatenate(
            [np.zeros((*x.shape, 1)), np.cumsum(np.log(x[..., None] + np.arange(nmax)), axis=-1)], axis=-1
        )
        return cum[..., counts]
    return gammaln(x[..., None] + counts) - gammaln(x)[..., None]


def _loglik(mu: np.ndarray, logk: np.ndarray, n: np.ndarray, c: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Beta-binomial log-likelihood (without the binomial coefficients).

    ``mu``, ``logk``: shape (R, ...) ; ``m``: (R, P). Returns (R, ...).
    """
    kappa = np.exp(logk)
    a = mu * kappa
    b = (1 - mu) * kappa
    nmax = int(n.max())
    lp = _rise(a, c, nmax) + _rise(b, n - c, nmax) - _rise(a + b, n, nmax)  # (R, ..., P)
    mm = m.reshape(m.shape[0], *([1] * (mu.ndim - 1)), m.shape[1])
    return (mm * lp).sum(-1)


def _loglik_binom(mu: np.ndarray, n: np.ndarray, c: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The kappa -> infinity limit (binomial with a common p = mu)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lc = np.where(c > 0, c * np.log(mu[..., None]), 0.0)
        lf = np.where(n - c > 0, (n - c) * np.log1p(-mu[..., None]), 0.0)
    mm = m.reshape(m.shape[0], *([1] * (mu.ndim - 1)), m.shape[1])
    return (mm * (lc + lf)).sum(-1)


def _golden_max(f, lo: np.ndarray, hi: np.ndarray, iters: int) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised golden-section maximisation of a unimodal ``f`` on [lo, hi] (endpoints included)."""
    a, b = lo.copy(), hi.copy()
    x1 = b - _GOLD * (b - a)
    x2 = a + _GOLD * (b - a)
    f1, f2 = f(x1), f(x2)
    for _ in range(iters):
        left = f1 >= f2
        b = np.where(left, x2, b)
        a = np.where(left, a, x1)
        x2n = np.where(left, x1, a + _GOLD * (b - a))
        x1n = np.where(left, b - _GOLD * (b - a), x2)
        fn = f(np.where(left, x1n, x2n))
        f1, f2 = np.where(left, fn, f2), np.where(left, f1, fn)
        x1, x2 = x1n, x2n
    x = (a + b) / 2
    fx = f(x)
    best_x, best_f = x, fx
    for e in (lo, hi):
        fe = f(e)
        better = fe > best_f
        best_x = np.where(better, e, best_x)
        best_f = np.where(better, fe, best_f)
    return best_x, best_f


def _profile(mu: np.ndarray, n, c, m, iters: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """Max over kappa of the log-likelihood at ``mu`` (R,): returns (profile, log kappa; inf = binomial)."""
    lo = np.full(mu.shape, _LOGK[0])
    hi = np.full(mu.shape, _LOGK[1])
    lk, ll = _golden_max(lambda x: _loglik(mu, x, n, c, m), lo, hi, iters)
    lb = _loglik_binom(mu, n, c, m)
    binom = lb >= ll - 1e-9 * np.maximum(1.0, np.abs(lb))
    return np.where(binom, lb, ll), np.where(binom, np.inf, lk)


def _profile_ci_kernel(n, c, m, prob: float | None, iters: int = 32):
    """Vectorised MLE of mu and its profile interval for R datasets.

    Returns mu_hat, logk_hat, loglik_max, lower, upper (each (R,)).
    """
    R = m.shape[0]
    lo = np.full(R, _LOGIT[0])
    hi = np.full(R, _LOGIT[1])

    def prof(x):
        return _profile(expit(x), n, c, m)[0]

    xh, lmax = _golden_max(prof, lo, hi, iters)
    _, lk = _profile(expit(xh), n, c, m)
    if prob is None:
        return expit(xh), lk, lmax, np.full(R, np.nan), np.full(R, np.nan)
    cut = lmax - stats.chi2.ppf(prob, 1) / 2

    def bisect(a, b):  # f(a) >= cut > f(b) (b is the far side); returns the crossing
        for _ in range(iters):
            mid = (a + b) / 2
            inside = prof(mid) >= cut
            a = np.where(inside, mid, a)
            b = np.where(inside, b, mid)
        return (a + b) / 2

    lower = np.where(prof(lo) >= cut, 0.0, expit(bisect(xh.copy(), lo.copy())))
    upper = np.where(prof(hi) >= cut, 1.0, expit(bisect(xh.copy(), hi.copy())))
    return expit(xh), lk, lmax, lower, upper


# ---------------------------------------------------------------------------
# public
# ---------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class BetaBinomialResult(Result):
    """Beta-binomial fit per agent.

    ``estimate`` is ``mu`` under the house name of the point estimate, and
    ``ci`` its profile-likelihood interval.

    Attributes
    ----------
    mu, kappa, alpha, beta : xarray.DataArray
        ``alpha = mu kappa``, ``beta = (1 - mu) kappa``; ``kappa = inf``
        (and alpha, beta inf) when the likelihood is maximised by the
        binomial limit (no overdispersion); ``mu`` exactly 0 (1) and
        ``kappa`` NaN (not identified) when every task failed (passed);
        ``kappa`` NaN (not identified) when every task has one run, where
        the likelihood depends on ``mu`` alone. Both warned, naming the rows.
    loglik : xarray.DataArray
        Maximised log-likelihood including the binomial coefficients.
    n_tasks : xarray.DataArray
        Tasks with at least one run (tasks never run are left out and counted
        in ``n_tasks_not_run``).
    n_tasks_not_run : xarray.DataArray
    ci : xarray.DataArray
        Profile-likelihood interval for ``mu`` (trailing dim ``ci_bound``,
        ``ci_kind = "profile"``); all NaN from :func:`fit_beta_binomial_ml`,
        which does not compute it: there ``ci_kind = "not computed"``, ``ci_prob``
        NaN and ``ci_detail`` points to :func:`beta_binomial_profile_ci`.
    """

    mu: xr.DataArray
    kappa: xr.DataArray
    alpha: xr.DataArray
    beta: xr.DataArray
    loglik: xr.DataArray
    n_tasks: xr.DataArray
    n_tasks_not_run: xr.DataArray
    ci: xr.DataArray | None = None

    estimate = field_alias("mu", "The fitted mean success probability ``mu``, under the house name.")

    def _repr_lines(self) -> list[str]:
        if self.ci.attrs.get("ci_detail") != _CI_NOT_COMPUTED:
            return [f"BetaBinomialResult: mean success probability mu, beta-binomial ML fit, "
                    f"{interval_label(self.ci)} interval", *self._cell_lines()]
        head = f"BetaBinomialResult: mean success probability mu, beta-binomial ML fit; interval {_CI_NOT_COMPUTED}"
        mu, kappa = self.mu.values.ravel(), self.kappa.values.ravel()
        if self.mu.ndim == 0:
            return [head, f"  mu {mu[0]:.4g}, kappa {kappa[0]:.4g}"]
        labels = [", ".join(map(str, c)) if isinstance(c, tuple) else str(c)
                  for c in self.mu.stack(_cell=self.mu.dims)["_cell"].values]
        cells = [f"  {lab}: mu {m:.4g}, kappa {k:.4g}" for lab, m, k in zip(labels, mu, kappa, strict=True)]
        more = [f"  ... ({mu.size - 8} more; to_frame() lists all)"] if mu.size > 8 else []
        return [head, *cells[:8], *more]


def _counts(data, n, dim: str, task_dim: str) -> tuple[xr.DataArray, xr.DataArray]:
    if n is not None:
        c_da = data if isinstance(data, xr.DataArray) else xr.DataArray(np.asarray(data, float), dims=(task_dim,))
        n_da = n if isinstance(n, xr.DataArray) else xr.DataArray(np.asarray(n, float), dims=(task_dim,))
        if c_da.shape != n_da.shape:
            raise ValueError(f"`data` (successes) and `n` must have the same shape; got {c_da.shape} and {n_da.shape}")
    elif isinstance(data, (xr.Dataset, xr.DataArray)):
        # the one counts routine: binary scores only (partial credit is refused, named)
        cnt = counts(data, dim=dim, binary=True, purpose="the beta-binomial fit")
        n_da, c_da = cnt["n_runs"], cnt["n_success"]
    else:
        raise TypeError(
            "`data` must be an eval dataset, a counts dataset, or success counts together with `n`; "
            f"got {type(data).__name__}"
        )
    if task_dim not in n_da.dims:
        raise ValueError(f"`task_dim` must be a dimension of the counts {n_da.dims}; got {task_dim!r}")
    cv, nv = np.asarray(c_da.values, float), np.asarray(n_da.values, float)
    bad = (cv != np.round(cv)) | (nv != np.round(nv)) | (cv < 0) | (cv > nv)
    if bad.any():
        raise ValueError(
            "beta-binomial counts must be integers with 0 <= successes <= n; "
            f"{int(bad.sum())} are not, e.g. (successes, n) "
            f"{list(zip(cv[bad][:5].tolist(), nv[bad][:5].tolist(), strict=True))}"
        )
    return c_da, n_da


def _fit_rows(cv: np.ndarray, nv: np.ndarray, prob: float | None) -> list[tuple]:
    """Fit every row (agent) at once: one vectorised kernel call over the union of (n, c) pairs."""
    keep = nv > 0
    pn_all = nv[keep].astype(np.int64)
    pc_all = cv[keep].astype(np.int64)
    if len(pn_all) == 0:
        return [(np.nan,) * 3 + (0.0, float(nv.shape[1]), (np.nan, np.nan))] * nv.shape[0]
    pairs, inv = np.unique(np.stack([pn_all, pc_all], 1), axis=0, return_inverse=True)
    pn, pc = pairs[:, 0], pairs[:, 1]
    row_of = np.nonzero(keep)[0]
    mm = np.zeros((nv.shape[0], len(pairs)))
    np.add.at(mm, (row_of, inv.ravel()), 1.0)
    rows_ok = keep.any(1)
    mu0, lk0, _, lo, hi = _profile_ci_kernel(pn, pc, np.where(rows_ok[:, None], mm, 1.0), prob)
    out = []
    for i in range(nv.shape[0]):
        if not rows_ok[i]:
            out.append((np.nan,) * 3 + (0.0, float(nv.shape[1]), (np.nan, np.nan)))
            continue
        out.append(_finish_row(cv[i][keep[i]], nv[i][keep[i]], pn, pc, mm[i : i + 1], float(mu0[i]),
                               float(lk0[i]), (float(lo[i]), float(hi[i])), int((~keep[i]).sum())))
    return out


def _finish_row(c, n, pn, pc, mm, mu_hat, lk_hat, lims, n_not_run):
    """Polish one row's optimum and handle the boundaries."""
    # polish the interior optimum (the vectorised search is good to ~1e-7)
    if 1e-8 < mu_hat < 1 - 1e-8 and np.isfinite(lk_hat) and _LOGK[0] + 1e-3 < lk_hat < _LOGK[1] - 1e-3:
        def nll(th):
            return -float(_loglik(expit(np.array([th[0]])), np.array([th[1]]), pn, pc, mm)[0])

        opt = optimize.minimize(nll, [logit(mu_hat), lk_hat], method="Nelder-Mead",
                                options={"xatol": 1e-11, "fatol": 1e-13, "maxiter": 4000})
        if -opt.fun >= -nll([logit(mu_hat), lk_hat]) and _LOGK[0] < opt.x[1] < _LOGK[1]:
            mu_hat, lk_hat = float(expit(opt.x[0])), float(opt.x[1])
    if (c == 0).all() or (c == n).all():
        # boundary: every task failed (passed); mu is exactly 0 (1) and kappa is not identified
        mu_hat, lk_hat = float((c == n).all()), np.nan
    if np.isnan(lk_hat):
        ll = 0.0
    elif np.isfinite(lk_hat):
        ll = float(_loglik(np.array([mu_hat]), np.array([lk_hat]), pn, pc, mm)[0])
    else:
        ll = float(_loglik_binom(np.array([mu_hat]), pn, pc, mm)[0])
    const = float((mm[0] * (gammaln(pn + 1) - gammaln(pc + 1) - gammaln(pn - pc + 1))).sum())
    kappa = float(np.exp(lk_hat)) if np.isfinite(lk_hat) else (np.nan if np.isnan(lk_hat) else np.inf)
    return mu_hat, kappa, ll + const, float(len(n)), float(n_not_run), lims


def _fit(data, n, *, prob, dim, task_dim) -> BetaBinomialResult:
    if prob is not None:
        prob = check_prob(prob)
    c_da, n_da = _counts(data, n, dim, task_dim)
    c_da = c_da.transpose(..., task_dim)
    n_da = n_da.transpose(..., task_dim)
    lead = c_da.dims[:-1]
    shape = c_da.shape[:-1]
    cv = c_da.values.reshape(-1, c_da.shape[-1])
    nv = n_da.values.reshape(-1, n_da.shape[-1])
    rows = _fit_rows(cv, nv, prob)
    coords = {d: c_da.coords[d] for d in lead if d in c_da.coords}

    def da(vals, name):
        return xr.DataArray(np.asarray(vals, float).reshape(shape), dims=lead, coords=coords, name=name)

    empty = [i for i, r in enumerate(rows) if r[3] == 0]
    if empty:
        warn_user(
            f"beta-binomial: {len(empty)} rows (e.g. agents) have no task with a run; their fit is NaN.",
            EmptySampleWarning,
        )
    mu = da([r[0] for r in rows], "mu")
    one_run = (nv <= 1).all(1).reshape(shape)  # every task with a run has one run: kappa is not identified
    kappa = da([r[1] for r in rows], "kappa").where(~one_run)
    _warn_kappa(kappa, mu, one_run)
    lims = np.asarray([r[5] for r in rows], float).reshape((*shape, 2))
    tmpl = xr.DataArray(np.zeros(shape), dims=lead, coords=coords)
    ci = make_interval(
        lims[..., 0],
        lims[..., 1],
        prob=DEFAULT_PROB if prob is None else prob,
        kind="profile",
        detail="beta-binomial profile likelihood for mu"
        if prob is not None
        else _CI_NOT_COMPUTED,
        template=tmpl,
    )
    if prob is None:  # never computed: labelled so, not as a 95% profile interval (to_frame() loses the repr)
        ci.attrs.update(ci_prob=np.nan, ci_kind=CI_NOT_COMPUTED_KIND)
    return BetaBinomialResult(
        mu=mu,
        kappa=kappa,
        alpha=(mu * kappa).rename("alpha"),
        beta=((1 - mu) * kappa).rename("beta"),
        loglik=da([r[2] for r in rows], "loglik"),
        n_tasks=da([r[3] for r in rows], "n_tasks").astype(np.int64),
        n_tasks_not_run=da([r[4] for r in rows], "n_tasks_not_run").astype(np.int64),
        ci=ci,
    )


#: why kappa is NaN, per kind of row: (what the data show, why that leaves kappa unidentified)
_UNIDENTIFIED = {
    "failed": ("every task failed", "mu is 0 and no spread between tasks can show"),
    "passed": ("every task passed", "mu is 1 and no spread between tasks can show"),
    "one run": ("every task has one run", "the likelihood depends on mu alone (P(y = 1) = mu whatever kappa), so "
                "overdispersion cannot be measured at all; mu and its interval are the binomial ones (tasks as "
                "independent draws), and 2 or more runs on some tasks would identify kappa"),
}


def _warn_kappa(kappa: xr.DataArray, mu: xr.DataArray, one_run: np.ndarray) -> None:
    """Name the rows whose ``kappa`` is NaN (not identified, and why) or inf (the binomial limit)."""
    from ..._base import UnidentifiedWarning
    from ..._base import entry_names

    def named(mask: np.ndarray) -> str:
        names = [n for n, _ in entry_names(kappa, np.asarray(mask)) if n]
        shown = ", ".join(map(repr, names[:10])) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        return f" ({shown})" if shown else ""

    k, m = kappa.values, mu.values
    edge = np.isnan(k) & np.isin(m, (0.0, 1.0))  # every task failed (passed): said so, whatever the runs
    rows = {"failed": edge & (m == 0), "passed": edge & (m == 1), "one run": one_run & ~np.isnan(m) & ~edge}
    said = [f"{_UNIDENTIFIED[r][0]}{named(mask)}: {_UNIDENTIFIED[r][1]}" for r, mask in rows.items() if mask.any()]
    if said:
        warn_user("beta-binomial: kappa is not identified, so kappa, alpha and beta are NaN where " + "; where ".join(said),
                  UnidentifiedWarning)
    if np.isinf(k).any():
        warn_user(
            f"beta-binomial: no overdispersion detected{named(np.isinf(k))}: the likelihood is largest at the "
            "binomial limit, so kappa is inf and alpha, beta are inf there.",
            NoOverdispersionWarning,
        )


@renamed_kwargs(dim="run_dim")
def fit_beta_binomial_ml(
    data: xr.Dataset | xr.DataArray | npt.ArrayLike,
    n: xr.DataArray | npt.ArrayLike | None = None,
    *,
    run_dim: str = "run",
    task_dim: str = "task",
) -> BetaBinomialResult:
    """Maximum-likelihood beta-binomial fit of per-task success counts.

    Parameters
    ----------
    data : xarray.Dataset, xarray.DataArray or array-like
        An eval dataset (binary ``score``), its counts (``n_runs``,
        ``n_success``), or success counts per task when ``n`` is given.
    n : array-like or xarray.DataArray, optional
        Trials per task (with ``data`` = successes).
    run_dim, task_dim : str
        Run and task dims.

    Returns
    -------
    BetaBinomialResult
        With an all-NaN ``ci`` (not computed here). Boundaries: all tasks passing (failing) gives
        ``mu = 1`` (``0``) up to ~1e-10; no overdispersion gives
        ``kappa = inf`` with a :class:`NoOverdispersionWarning` (a
        ``RuntimeWarning`` too, as before). ``kappa`` is NaN where it is not
        identified (every task failed or passed, or every task has one run:
        with ``n = 1`` the beta-binomial is a Bernoulli(``mu``) whatever
        ``kappa``), with an ``UnidentifiedWarning`` naming the rows.

    Examples
    --------
    >>> res = fit_beta_binomial_ml([0, 1, 3, 2, 9, 5], [10, 10, 10, 10, 10, 10])
    >>> round(float(res.mu), 3)
    0.342
    """
    return _fit(data, n, prob=None, dim=run_dim, task_dim=task_dim)


@renamed_kwargs(dim="run_dim")
def beta_binomial_profile_ci(
    data: xr.Dataset | xr.DataArray | npt.ArrayLike,
    n: xr.DataArray | npt.ArrayLike | None = None,
    *,
    prob: float = DEFAULT_PROB,
    run_dim: str = "run",
    task_dim: str = "task",
) -> BetaBinomialResult:
    """Beta-binomial MLE plus the profile-likelihood interval for ``mu``.

    The interval is ``{mu : max_kappa l(mu, kappa) >= l_max - chi2_1(prob) / 2}``;
    an end reaches 0 or 1 when the profile never drops below the cut on that
    side (e.g. every task passed).

    Parameters
    ----------
    data, n, run_dim, task_dim
        As in :func:`fit_beta_binomial_ml`.
    prob : float
        Level of the profile-likelihood interval.

    Examples
    --------
    >>> res = beta_binomial_profile_ci([0, 1, 3, 2, 9, 5], [10, 10, 10, 10, 10, 10])
    >>> res.ci.dims
    ('ci_bound',)
    """
    return _fit(data, n, prob=prob, dim=run_dim, task_dim=task_dim)
