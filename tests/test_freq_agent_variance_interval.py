"""``hierbench.freq.agent_variance``: a random term's variance takes the fit's own sd interval, squared.

Independent references: R ``ordinal::clmm``'s judge variance on the wine data (the shared reference
values), a profile likelihood of the same model computed with numpy (Gauss-Hermite quadrature) and
scipy (BFGS, brentq), and the Wald interval on the log scale recomputed with scipy's normal quantile.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import optimize
from scipy import stats
from scipy.special import expit

from hierbench.data import from_records
from hierbench.freq import agent_variance
from hierbench.freq import fit_crossed_ml


def _wine_profile_variance_interval(df: pd.DataFrame, prob: float = 0.95) -> tuple[float, float, float]:
    """The judge variance of ``rating ~ temp + contact + (1|judge)`` and its profile interval, by numpy + scipy.

    The marginal likelihood by 40-node Gauss-Hermite quadrature over each judge's effect (exact to the
    digits shown; the package's fit is the Laplace approximation, as clmm's default, so the two differ
    by about 1%); the profile over the other parameters by BFGS, its ends by brentq.
    """
    X = np.column_stack([(df["temp"] == "warm").to_numpy(float), (df["contact"] == "yes").to_numpy(float)])
    k, j = df["rating"].to_numpy(int) - 1, df["judge"].to_numpy(int) - 1
    gx, gw = np.polynomial.hermite_e.hermegauss(40)
    gw = gw / gw.sum()

    def nll(par, s):
        beta, th = par[:2], np.cumsum(np.r_[par[2], np.exp(par[3:])])
        eta = (X @ beta)[:, None] + s * gx[None, :]
        ends = np.zeros((len(k), 1, gx.size))
        cum = np.concatenate([ends, expit(th[None, :, None] - eta[:, None, :]), ends + 1], axis=1)
        p = np.clip(cum[np.arange(len(k)), k + 1] - cum[np.arange(len(k)), k], 1e-300, None)
        lp = np.zeros((j.max() + 1, gx.size))
        np.add.at(lp, j, np.log(p))
        m = lp.max(1, keepdims=True)
        return -(m[:, 0] + np.log(np.exp(lp - m) @ gw)).sum()

    x0 = np.r_[3.0, 1.8, -1.6, np.log([3.1, 2.7, 1.9])]
    full = optimize.minimize(lambda q: nll(q[:-1], np.exp(q[-1])), np.r_[x0, 0.1], method="BFGS")
    s_hat, cut = float(np.exp(full.x[-1])), 2 * full.fun + stats.chi2.ppf(prob, 1)

    def excess(s):
        return 2 * optimize.minimize(nll, x0, args=(s,), method="BFGS").fun - cut

    lo, hi = optimize.brentq(excess, 0.05, s_hat, xtol=1e-4), optimize.brentq(excess, s_hat, 5.0, xtol=1e-4)
    return s_hat**2, lo**2, hi**2


def _wine(shared_data) -> tuple[pd.DataFrame, xr.Dataset]:
    df = pd.read_csv(shared_data / "ordinal" / "wine.csv")
    return df, from_records(df, agent="judge", task="bottle", score="rating", task_coords=["temp", "contact"],
                            score_levels=[1, 2, 3, 4, 5])  # fmt: skip


def test_a_random_terms_variance_interval_is_its_sd_interval_squared(shared_data):
    """Audit L finding 3: the judge variance 1.2795 had a delta-method interval [0, 3.048] (truncated at 0),
    narrower than the fit's own sd interval squared and called "a fixed term". Now, for a Wald fit, it is
    the Wald interval on the log scale squared: [0.3212, 5.097] (the auditor's figures), kind normal, with
    the fit's point estimate (R clmm: 1.2798, the shared reference values).
    """
    _, ds = _wine(shared_data)
    fit = fit_crossed_ml(ds, "score ~ temp + contact + (1|agent)", family="ordinal", intervals="wald")
    av = agent_variance(fit)
    np.testing.assert_allclose(av.ci.sel(component="1|agent").values, fit.sd_ci.values[0] ** 2, rtol=1e-12)
    np.testing.assert_allclose(av.ci.values[0], [0.3212, 5.097], atol=1e-3)
    assert abs(float(av.estimate[0]) - 1.2798) < 1e-3
    assert av.ci.attrs["ci_kind"] == "normal" and "fixed" not in av.ci.attrs["ci_detail"]
    row = av.to_frame().loc["1|agent"]
    assert row["ci_kind"] == "normal" and row["ci_detail"] == "the fit's Wald interval on the log scale of sd(1|agent), squared"


@pytest.mark.slow
def test_a_random_terms_profile_interval_agrees_with_an_independent_profile(shared_data):
    """The profile fit's judge variance interval is its sd's profile interval squared ([0.251, 5.136] in the
    audit), kind profile, and agrees with a profile likelihood computed independently (Gauss-Hermite
    quadrature, scipy) within the Laplace approximation's error (3%; measured 1.3%).
    """
    df, ds = _wine(shared_data)
    var, lo, hi = _wine_profile_variance_interval(df)
    fit = fit_crossed_ml(ds, "score ~ temp + contact + (1|agent)", family="ordinal", intervals="profile")
    av = agent_variance(fit)
    np.testing.assert_allclose(av.ci.values[0], fit.sd_ci.values[0] ** 2, rtol=1e-12)
    assert av.ci.attrs["ci_kind"] == "profile" and "profile-likelihood" in av.to_frame().loc["1|agent", "ci_detail"]
    np.testing.assert_allclose(av.ci.values[0], [lo, hi], rtol=0.03)
    assert abs(float(av.estimate[0]) - var) < 0.02 * var


def _scaffold_board() -> xr.Dataset:
    rng = np.random.default_rng(3)
    sc, mo = np.repeat(["s1", "s2"], 4), np.tile(["m1", "m2", "m3", "m4"], 2)
    eta = np.where(sc == "s2", 1.0, 0.0) + np.array([-1.0, 0.0, 0.5, 1.0] * 2)
    y = rng.random((8, 60, 2)) < expit(eta)[:, None, None]
    return xr.Dataset({"score": (("agent", "task", "run"), y * 1.0)},
                      coords={"agent": [f"{s}/{m}" for s, m in zip(sc, mo, strict=True)],
                              "scaffold": ("agent", sc), "model": ("agent", mo)})  # fmt: skip


def test_fixed_and_random_terms_keep_their_own_interval_details():
    """A fixed agent-level term keeps the delta method (truncated at 0), a random one its sd interval
    squared, each row saying which; at another level than the fit's, the random term's interval is Wald
    on the log scale at that level (here recomputed from the fit's sd and its covariance with scipy's
    normal quantile).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_crossed_ml(_scaffold_board(), "score ~ scaffold + (1|model) + (1|task)", intervals="wald")
    av = agent_variance(fit)
    frame = av.to_frame()
    assert frame["ci_kind"].tolist() == ["normal", "normal"] and av.kind.values.tolist() == ["fixed", "random"]
    assert "delta method" in frame.loc["scaffold", "ci_detail"] and "squared" in frame.loc["1|model", "ci_detail"]
    k = fit.sd.component.values.tolist().index("1|model")
    np.testing.assert_allclose(av.ci.sel(component="1|model").values, fit.sd_ci.values[k] ** 2)
    se = float(np.sqrt(fit.vcov.sel(param="log_sd[1|model]", param_b="log_sd[1|model]")))
    s = float(fit.sd.sel(component="1|model"))
    np.testing.assert_allclose(agent_variance(fit, prob=0.8).ci.sel(component="1|model").values,
                               (s * np.exp(np.array([-1, 1]) * stats.norm.ppf(0.9) * se)) ** 2, rtol=1e-10)  # fmt: skip


@pytest.mark.slow
def test_a_profile_fit_gives_mixed_interval_kinds_named_per_row():
    """Profile sds with a fixed agent-level term: ``ci_kind`` "mixed", each row its own (normal, profile)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_crossed_ml(_scaffold_board(), "score ~ scaffold + (1|model) + (1|task)", intervals="profile")
    av = agent_variance(fit)
    assert av.ci.attrs["ci_kind"] == "mixed"
    assert av.to_frame()["ci_kind"].tolist() == ["normal", "profile"]
    np.testing.assert_allclose(av.ci.sel(component="1|model").values, fit.sd_ci.sel(component="1|model").values ** 2)
