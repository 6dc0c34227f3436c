"""fit_crossed_ml where a fit ends at a boundary (audit s76 G, findings 1-5).

Independent references: the marginal likelihood on a fine grid (numpy) or by Gauss-Hermite
nodes (numpy's hermegauss), maximised by scipy; the profile by scipy's L-BFGS-B over the
likelihood's value (itself checked against nested Simpson quadrature in
test_freq_crossed_ml.py); Wald bounds by hand.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import xarray as xr
from _helpers import agent_task_counts
from scipy import optimize
from scipy import stats
from scipy.special import expit
from scipy.special import log_expit

from hierbench.freq import BoundaryEstimateWarning
from hierbench.freq import MLConvergenceWarning
from hierbench.freq import SeparatedAgentWarning
from hierbench.freq import fit_crossed_ml
from hierbench.freq._glmm._crossed import _Lik
from hierbench.freq._glmm._optim import profile_interval
from hierbench.freq._glmm._optim import profile_notes

#: 3 agents x 10 tasks x 1 run (cover_small.py replicate 2): no agent separated, several tasks all 0 or all 1
SMALL = np.array([[0, 0, 0, 0, 1, 0, 1, 1, 0, 0], [0, 0, 1, 0, 1, 0, 1, 1, 0, 1], [0, 0, 1, 1, 1, 0, 1, 1, 0, 1]])


def _fit(data, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fit_crossed_ml(data, **kw)
    return res, [(w.category, str(w.message)) for w in caught]


def _scores(y: np.ndarray, n: int) -> xr.Dataset:
    """Counts as run-level 0/1 scores (for a formula)."""
    s = np.zeros((*y.shape, n))
    for i, j in np.ndindex(y.shape):
        s[i, j, : int(y[i, j])] = 1.0
    return xr.Dataset({"score": (("agent", "task", "run"), s)},
                      coords={"agent": [f"a{i}" for i in range(y.shape[0])], "task": [f"t{j}" for j in range(y.shape[1])]})  # fmt: skip


def _grid_loglik(alpha: np.ndarray, sd: float, y: np.ndarray) -> float:
    """Binary cells: sum over tasks of log int prod_a Bernoulli(y_at | expit(alpha_a + b)) N(b; 0, sd) db (grid)."""
    b = np.linspace(-12 * sd, 12 * sd, 12001)
    eta = alpha[:, None, None] + b[None, None, :]  # (A, 1, G)
    logp = (y[..., None] * log_expit(eta) + (1 - y[..., None]) * log_expit(-eta)).sum(0)  # (T, G)
    logf = logp + stats.norm.logpdf(b, 0, sd)[None, :]
    top = logf.max(1, keepdims=True)
    return float((top[:, 0] + np.log(np.exp(logf - top).sum(1) * (b[1] - b[0]))).sum())


# --------------------------------------------------------------------------- finding 1


def test_a_stop_that_is_not_a_maximum_gives_nan_standard_errors_and_a_warning():
    """The 9-node fit stops at sd_task 8.9, but the likelihood keeps rising with sd_task (grid + scipy).

    Before: SEs 4.6 / 0 / 0, zero-width intervals, converged True, no warning.
    """
    res, caught = _fit(agent_task_counts(np.ones_like(SMALL), SMALL))
    a_hat, sd_hat = res.estimate.values, float(res.sd[0])
    ll_hat = _grid_loglik(a_hat, sd_hat, SMALL)
    far = optimize.minimize(lambda a: -_grid_loglik(a, 30.0, SMALL), a_hat, method="Nelder-Mead",
                            options={"xatol": 1e-4, "fatol": 1e-6})  # fmt: skip
    assert -far.fun > ll_hat + 0.1  # higher at sd_task 30: the reported point is no maximum
    assert not res.converged
    assert np.isnan(res.standard_error.values).all() and np.isnan(res.ci.values).all()
    assert np.isnan(res.vcov.values).all()
    msgs = [m for c, m in caught if c is MLConvergenceWarning]
    assert any("not positive definite" in m and "n_agq" in m for m in msgs), caught
    # the profile never reaches the cut-off below the bound: its upper end is infinite, and said so
    assert res.sd_ci.values[0, 1] == np.inf
    assert any(c is SeparatedAgentWarning and "upper bound is infinite" in m for c, m in caught), caught


def test_the_formula_fit_gives_no_zero_standard_error_either():
    """Every task solved by every agent on every run or by none: the Laplace fit's -H is indefinite.

    An SE of exactly 0 would mean infinite information; before, the intercept had SE 0 and [x, x].
    """
    y = np.where(np.arange(12) < 6, 4, 0)[None, :].repeat(3, 0)
    res, caught = _fit(_scores(y, 4), formula="score ~ agent + (1|task)", intervals="wald")
    assert not (res.standard_error.values == 0).any()
    assert np.isnan(res.standard_error.values).all() and not res.converged
    assert any(c is MLConvergenceWarning and "not positive definite" in m for c, m in caught), caught


# --------------------------------------------------------------------------- finding 4


def test_an_sd_at_its_upper_bound_is_nan_with_its_name_in_the_warnings():
    """All-or-none tasks: the likelihood of each task rises with sd_task for any ability (Gauss-Hermite, by hand)."""
    y = np.where(np.arange(12) < 6, 4, 0)[None, :].repeat(3, 0)
    u, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()

    def task_ll(sd):  # a task all 4 of 4 solved by the 3 agents at ability 0 (and, by symmetry, all 0 of 4)
        return math.log(float((w * expit(sd * u) ** 12).sum()))

    assert task_ll(10) < task_ll(20) < task_ll(40) < math.log(0.5)  # rising towards its limit 1/2
    data = agent_task_counts(np.full((3, 12), 4), y)
    # with the agent x task effect the optimiser ends at sd_task = 50: before, printed "50 [14.82, inf]"
    # with the warning "did not converge (ABNORMAL: )"
    res, caught = _fit(data, intervals="wald")
    assert np.isnan(float(res.sd.sel(component="sd_task"))) and np.isnan(res.sd_ci.values[0]).all()
    sep = [m for c, m in caught if c is SeparatedAgentWarning]
    assert any("sd_task at 50 ended at the optimiser's bound" in m for m in sep), caught
    conv = [m for c, m in caught if c is MLConvergenceWarning]
    assert all("()" not in m and "ABNORMAL: )" not in m for m in conv), conv  # a reason is always given
    assert any("sd_task at the optimiser's bound" in m for m in conv), conv
    # without it the 9-node fit stops at sd_task 18.9, a quadrature artefact: the profile rises to the
    # bound (NaN, as at the bound), and a Wald fit is told its quadrature is not accurate there
    res, caught = _fit(data, agent_task="none")
    assert np.isnan(res.sd.values).all() and np.isnan(res.sd_ci.values).all() and not res.converged
    assert any(c is SeparatedAgentWarning and "rises to the optimiser's upper bound" in m for c, m in caught), caught
    _, caught = _fit(data, agent_task="none", intervals="wald")
    assert any(c is MLConvergenceWarning and "quadrature over tasks is not accurate" in m for c, m in caught), caught


# --------------------------------------------------------------------------- finding 3


def test_a_scale_at_zero_is_warned_and_its_wald_interval_is_the_same_in_both_paths():
    """One agent, 12 tasks x 4 runs: the likelihood falls as sd_task leaves 0 (Gauss-Hermite + scipy).

    The crossed fit stops at sd 1.07e-4 (above the old rule's 1.0001e-4): before, no warning and
    the Wald interval [0, inf] (the formula path gave [0, nan]).
    """
    y = np.array([[3, 2, 3, 1, 4, 3, 1, 3, 2, 3, 2, 1]])
    u, w = np.polynomial.hermite_e.hermegauss(40)
    w = w / w.sum()

    def prof(sd):
        def neg(a):
            p = expit(a + sd * u)[None, :]
            return -np.log((w * p ** y[0][:, None] * (1 - p) ** (4 - y[0][:, None])).sum(1)).sum()

        return -optimize.minimize_scalar(neg, bounds=(-5, 5), method="bounded", options={"xatol": 1e-10}).fun

    assert prof(0.0) > prof(0.05) > prof(0.2)  # the maximum is at zero
    for data, kw in [(agent_task_counts(np.full((1, 12), 4), y), {}), (_scores(y, 4), {"formula": "score ~ 1 + (1|task)"})]:
        res, caught = _fit(data, intervals="wald", **kw)
        assert float(res.sd[0]) < 1e-3
        assert any(c is BoundaryEstimateWarning for c, _ in caught), caught
        lo, hi = res.sd_ci.values[0]
        assert lo == 0.0 and np.isnan(hi)
        assert "an sd at zero: [0, NaN]" in res.sd_ci.attrs["ci_detail"]


# --------------------------------------------------------------------------- finding 2


def test_the_profile_bound_holds_where_warm_started_inner_fits_went_astray():
    """cover.py replicate 140: sd_agent_task's upper bound was NaN (inner fits stuck, deviance 6.06 at the MLE).

    The bound's deviance, re-profiled by scipy's L-BFGS-B from the estimate, is the chi-square(1)
    quantile; an independent nested-quadrature profile (audit) put it between 1.2 (2.52) and 1.4 (4.13).
    """
    y = np.array([[2, 2, 1, 0, 0, 2, 1, 0, 1, 1, 0, 0, 0, 1, 3], [3, 2, 2, 0, 2, 1, 1, 3, 2, 0, 2, 0, 1, 2, 3],
                  [2, 3, 1, 1, 1, 3, 1, 3, 0, 1, 1, 2, 2, 3, 3], [2, 2, 3, 3, 3, 1, 2, 3, 2, 2, 2, 0, 3, 2, 3]])  # fmt: skip
    n = np.full_like(y, 3)
    res, caught = _fit(agent_task_counts(n, y), agent_task="marginal")
    assert not caught, caught
    hi = float(res.sd_ci.sel(component="sd_agent_task", ci_bound="upper"))
    assert 1.2 < hi < 1.4
    lik = _Lik(y.T.astype(float), n.T.astype(float), True, 9, 7)
    x_hat = np.r_[res.estimate.values, np.log(res.sd.values)]
    ll = lik.value(x_hat)

    def prof(v):
        r = optimize.minimize(lambda z: -lik.value(np.r_[z, v]), x_hat[:-1], method="L-BFGS-B",
                              options={"ftol": 1e-13, "gtol": 1e-8})  # fmt: skip
        return -r.fun

    assert 2 * (ll - prof(math.log(hi))) == pytest.approx(stats.chi2.ppf(0.95, 1), abs=0.02)
    assert res.sd_ci.attrs["ci_detail"] == "profile likelihood, deviance within the chi-square(1) quantile"


class _Step:
    """log-likelihood -a^2/2 - 5 [s >= 1]: the profile deviance of s jumps from 0 to 10 at s = 1 (no crossing)."""

    newton_ok = False

    def __init__(self):
        self.warm = np.zeros(1)

    def value(self, x):
        return -0.5 * x[0] ** 2 - (5.0 if x[1] >= 1.0 else 0.0)

    def value_grad(self, x):
        return self.value(x), np.array([-x[0], 0.0])


def test_a_side_with_no_profile_bound_gets_the_wald_bound_said_in_the_detail_and_warned():
    info = {}
    lo, hi = profile_interval(_Step(), np.zeros(2), 0.0, 1, [(-5.0, 5.0)] * 2, 0.95, 0.5, info)
    assert lo == 0.0  # the deviance stays 0 down to the bound
    assert hi == pytest.approx(math.exp(stats.norm.ppf(0.975) * 0.5), rel=1e-12)  # exp(0 + z se)
    assert info["wald"] == ["upper"] and info["redone"] == ["upper"]
    with pytest.warns(MLConvergenceWarning, match="found no bound for s \\(upper\\)"):
        detail, rising, above = profile_notes(["s"], [info], np.array([False]), "check it on a grid")
    assert detail == "; s's upper bound: Wald on the log scale (no profile bound found)"
    assert not rising.any() and not above


# --------------------------------------------------------------------------- finding 5


def test_the_repr_names_the_cell_quadrature_of_a_laplace_fit():
    """n_agq=1 with the agent x task effect: Laplace over tasks, the cells by quadrature (not glmer's Laplace)."""
    rng = np.random.default_rng(3)
    n = np.full((3, 12), 4)
    y = rng.binomial(4, expit(rng.normal(0, 1, (3, 12))))
    res, _ = _fit(agent_task_counts(n, y), agent_task="marginal", n_agq=1, n_quad=5, intervals="wald")
    assert "(Laplace over tasks, 5-node adaptive quadrature per cell)" in repr(res)
    plain, _ = _fit(agent_task_counts(n, y), agent_task="none", n_agq=1, intervals="wald")
    assert "(Laplace)" in repr(plain)
