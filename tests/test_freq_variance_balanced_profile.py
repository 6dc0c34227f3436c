"""Balanced G-studies get profile REML intervals by default (audit G 2).

The Wald interval on log(variance) that ``ci="auto"`` gave balanced data covered 0.89 at
95% for a one-way 6 x 5 design near 0, and an estimate truncated at 0 got ``[0, z * se]``
(Dyestuff2: Batch [0, 2.67] against the profile's [0, 6.32]). The expected values here come
from the closed-form REML deviance of a balanced one-way design, profiled with scipy, and
from a dense-matrix REML deviance of a tiny crossed design; none from the package's code.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import optimize
from scipy import stats

from hierbench.freq import variance_components


def _one_way(shared_data, name: str) -> pd.DataFrame:
    d = pd.read_csv(shared_data / "lme4" / name)
    d["rep"] = d.groupby("Batch").cumcount()
    return d


def _fit(d: pd.DataFrame, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return variance_components(d, design="rep:Batch", var="Yield", measurement=None, **kw)


def _one_way_profile(d: pd.DataFrame, prob: float) -> dict[str, tuple[float, float]]:
    """Profile REML intervals of a balanced one-way design from its closed-form deviance.

    ``-2 l_R = a (n - 1) log s_e + (a - 1) log L + SSW / s_e + SSB / L`` (constants dropped),
    ``L = s_e + n s_b`` (e.g. Searle, Casella & McCulloch 1992, ch. 6). For fixed ``s_e``
    the best ``L >= s_e`` is ``max(MSB, s_e)``; for fixed ``s_b`` the deviance is minimised
    over ``log s_e`` by scipy.
    """
    y = d.pivot(index="Batch", columns="rep", values="Yield").to_numpy(float)
    a, n = y.shape
    ssb = n * ((y.mean(1) - y.mean()) ** 2).sum()
    ssw = ((y - y.mean(1, keepdims=True)) ** 2).sum()
    msb = ssb / (a - 1)

    def dev(sb, se):
        lam = se + n * sb
        return a * (n - 1) * np.log(se) + (a - 1) * np.log(lam) + ssw / se + ssb / lam

    def prof_b(sb):
        r = optimize.minimize_scalar(lambda t: dev(sb, np.exp(t)), bounds=(-10, 20), method="bounded",
                                     options={"xatol": 1e-10})  # fmt: skip
        return r.fun

    def prof_e(se):
        return dev((max(msb, se) - se) / n, se)

    sbh = optimize.minimize_scalar(prof_b, bounds=(0, 50 * msb), method="bounded", options={"xatol": 1e-12}).x
    seh = optimize.minimize_scalar(lambda t: prof_e(np.exp(t)), bounds=(-10, 20), method="bounded",
                                   options={"xatol": 1e-12}).x  # fmt: skip
    crit = stats.chi2.ppf(prob, 1)
    out = {}
    for name, prof, hat in (("Batch", prof_b, sbh), ("residual", prof_e, np.exp(seh))):
        cut = min(prof_b(sbh), prof_e(np.exp(seh))) + crit
        lo = 0.0 if prof(0.0 if name == "Batch" else 1e-300) <= cut else optimize.brentq(
            lambda v, prof=prof, cut=cut: prof(v) - cut, 1e-9 * max(hat, 1e-6), hat)  # fmt: skip
        hi = optimize.brentq(lambda v, prof=prof, cut=cut: prof(v) - cut, max(hat, 1e-6), 1e3 * (hat + msb))
        out[name] = (lo, hi)
    return out


@pytest.mark.parametrize(("name", "prob"), [("dyestuff2.csv", 0.95), ("dyestuff.csv", 0.95), ("dyestuff2.csv", 0.8)])
def test_balanced_default_is_the_profile_interval(shared_data, name, prob):
    d = _one_way(shared_data, name)
    vc = _fit(d, prob=prob)
    assert vc.method == "anova" and vc.ci_method == "profile"
    ci = vc.ci
    assert ci.attrs["ci_kind"] == "profile" and ci.attrs["ci_prob"] == prob
    ref = _one_way_profile(d, prob)
    for comp, (lo, hi) in ref.items():
        got = ci.sel(component=comp).values
        np.testing.assert_allclose(got, [lo, hi], rtol=2e-4, atol=1e-9)
    assert f"{100 * prob:.4g}% profile REML likelihood intervals" in repr(vc).splitlines()[0]
    co = vc.coefficients() if vc.measurement else None
    assert co is None or co.attrs["ci_kind"] == "profile"


def test_dyestuff2_upper_end_is_no_longer_the_wald_one(shared_data):
    """Audit G 2's numbers: Wald [0, z * se] = [0, 2.671], profile (its own REML code) 6.320."""
    d = _one_way(shared_data, "dyestuff2.csv")
    vc, vw = _fit(d), _fit(d, ci="wald")
    y = d.pivot(index="Batch", columns="rep", values="Yield").to_numpy(float)
    a, n = y.shape
    msb = n * y.mean(1).var(ddof=1)
    msw = y.var(1, ddof=1).mean()
    se = np.sqrt(2 / n**2 * (msb**2 / (a - 1) + msw**2 / (a * (n - 1))))  # exact ANOVA sampling variance
    z = stats.norm.ppf(0.975)
    np.testing.assert_allclose(vw.ci.sel(component="Batch").values, [0, z * se], rtol=1e-9)
    assert z * se == pytest.approx(2.671, abs=1e-3)
    assert float(vc.ci.sel(component="Batch", ci_bound="upper")) == pytest.approx(6.3203, abs=2e-3)
    first = repr(vw).splitlines()[0]
    assert "Wald intervals on log(variance)" in first and "[0, z se], with no coverage guarantee" in first
    assert "no coverage guarantee" in vw.ci.attrs["ci_detail"]


def _dense_reml(y: np.ndarray, zs: list[np.ndarray], s: np.ndarray) -> float:
    """REML deviance (constants dropped) of y = mu + sum Z_k u_k + e, variances s (last: residual)."""
    v = s[-1] * np.eye(y.size) + sum(sk * z @ z.T for sk, z in zip(s[:-1], zs, strict=True))
    vi = np.linalg.inv(v)
    x = np.ones(y.size)
    xvx = x @ vi @ x
    r = y - (x @ vi @ y) / xvx
    return np.linalg.slogdet(v)[1] + np.log(xvx) + r @ vi @ r


@pytest.mark.filterwarnings("ignore::hierbench.freq.NegativeVarianceComponentWarning")
def test_crossed_component_at_zero_matches_a_dense_reml_profile():
    """4 agents x 5 tasks x 2 runs, agent:task truncated at 0 by ANOVA: its upper profile bound.

    The dense 40 x 40 REML deviance is profiled with the other three variances maximised by
    L-BFGS-B (bounded at 0) and the bound found by brentq.
    """
    rng = np.random.default_rng(5)
    y = rng.normal(0, 0.5, (4, 1, 1)) + rng.normal(0, 0.7, (1, 5, 1)) + rng.normal(0, 1, (4, 5, 2))
    vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    assert vc.ci_method == "profile" and float(vc.estimate.sel(component="agent:task")) == 0
    a, t, _ = np.indices(y.shape).reshape(3, -1)
    zs = [np.eye(4)[a], np.eye(5)[t], np.eye(20)[a * 5 + t]]
    yy = y.ravel()

    def prof(sat):
        def f(x):
            return _dense_reml(yy, zs, np.array([x[0], x[1], sat, x[2]]))
        r = optimize.minimize(f, [0.3, 0.5, 1.0], method="L-BFGS-B", bounds=[(0, None), (0, None), (1e-6, None)])
        return r.fun

    d0 = prof(0.0)  # the REML optimum is at agent:task = 0 (checked: a small step raises it)
    assert prof(0.01) > d0
    hi = optimize.brentq(lambda v: prof(v) - d0 - stats.chi2.ppf(0.95, 1), 1e-3, 10.0, xtol=1e-7)
    lo_got, hi_got = vc.ci.sel(component="agent:task").values
    assert lo_got == 0.0
    assert hi_got == pytest.approx(hi, rel=2e-3)


@pytest.mark.filterwarnings("ignore::hierbench.freq.NegativeVarianceComponentWarning")
def test_large_balanced_fit_keeps_wald_and_says_why():
    """30 agents x 70 tasks, one score per cell: 2,100 cell means, above the profiled 2,000."""
    y = np.random.default_rng(1).normal(size=(30, 70))
    vc = variance_components(xr.DataArray(y, dims=("agent", "task")))
    assert vc.method == "anova" and vc.ci_method == "wald"
    assert vc.ci.attrs["ci_kind"] == "log-normal"
    assert "(2100 cells, 100 random-effect levels) is above the size profiled by default" in vc.note
    assert "exact sampling variance of the ANOVA estimators" in vc.note
    small = variance_components(xr.DataArray(y[:, :60], dims=("agent", "task")))  # 1,800 cells
    assert small.ci_method == "profile"


def test_profile_base_fit_not_converged_is_said_as_such():
    """Pass rate ~0.02, 5 x 60 x 3: the REML fit under the balanced profile stops at a boundary.

    Its warning names the profile intervals, not the ANOVA estimates shown (the residual is
    the within-cell mean square, by hand).
    """
    rng = np.random.default_rng(3)
    s = (rng.random((5, 60, 3)) < 0.02).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(xr.DataArray(s, dims=("agent", "task", "run")))
    assert float(vc.estimate.sel(component="residual")) == pytest.approx(s.var(axis=2, ddof=1).mean(), rel=1e-12)
    from hierbench.freq import RemlConvergenceWarning

    with pytest.warns(RemlConvergenceWarning, match=r"the profile intervals may be inaccurate \(the ANOVA estimates"):
        ci = vc.ci
    assert ci.attrs["ci_kind"] == "profile" and np.isfinite(ci.values).all()


def test_penicillin_default_matches_an_independent_profile(shared_data):
    """lme4's Penicillin (24 plates x 6 samples, balanced crossed): the default intervals.

    Expected: audit G's dense-matrix REML profile (its own code, Wilks chi2_1, Nelder-Mead
    inside brentq; script g4_profile_indep.py), to its 4 significant figures.
    """
    d = pd.read_csv(shared_data / "lme4" / "penicillin.csv")
    vc = variance_components(d, design="plate*sample", var="diameter")
    assert vc.method == "anova" and vc.ci.attrs["ci_kind"] == "profile"
    ref = {"plate": (0.4021, 1.4040), "sample": (1.3259, 17.7606), "residual": (0.2360, 0.3962)}
    for comp, bounds in ref.items():
        np.testing.assert_allclose(vc.ci.sel(component=comp).values, bounds, rtol=3e-4)
