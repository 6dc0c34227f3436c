"""G-theory REML at scale: a scale-free convergence rule, the observed information (intervals
above the size where the expected information is formed), and a named warning when a result
has no intervals.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.optimize as sopt

from hierbench.freq import NoIntervalWarning
from hierbench.freq import RemlConvergenceWarning
from hierbench.freq import variance_components
from hierbench.freq._kernels import one_blas_thread
from hierbench.freq._variance import _fit
from hierbench.freq._variance import _reml
from hierbench.freq._variance._design_lang import parse_design


@pytest.fixture(autouse=True)
def _one_thread():
    """Small dense algebra on one BLAS thread, as the package's fits run theirs.

    These tests also call the REML problem's deviance and dense references directly, outside the
    fits' own one-thread context: on a busy machine two BLAS threads made them 15-30 times slower
    (the saddle test 8 s against 0.3 s, the Nelder-Mead profile check 52 s against 3 s; same values).
    """
    with one_blas_thread():
        yield


def _sim(rng, n_agents=4, n_family=12, runs=(1, 4)):
    """Agents crossed with tasks nested in families of 1-4 tasks, ragged runs per cell."""
    rows = []
    a_eff = rng.normal(0, 0.6, n_agents)
    for f in range(n_family):
        fe = rng.normal(0, 0.5)
        for t in range(rng.integers(1, 5)):
            te = rng.normal(0, 0.9)
            for a in range(n_agents):
                ae = rng.normal(0, 0.4)
                for r in range(rng.integers(*runs)):
                    rows.append(
                        (
                            f"a{a}",
                            f"f{f}t{t}",
                            f"f{f}",
                            r,
                            a_eff[a] + fe + te + ae + rng.normal(0, 0.7),
                        )
                    )
    return pd.DataFrame(rows, columns=["agent", "task", "family", "run", "y"])


def _dense_observed_information(y, ecodes, effects):
    """Independent REML observed information from the full N x N covariance (long data, no
    cell-mean reduction): with V linear in the components and X = 1,
    ``I_ij = -tr(P V_i P V_j) / 2 + y'P V_i P V_j P y``; the last component is the residual.
    """
    n = y.size
    vs = []
    for e in effects[:-1]:
        c = ecodes[e]
        vs.append((c[:, None] == c[None, :]).astype(float))
    vs.append(np.eye(n))
    return vs, n


def _dense_info_at(y, vs, s2):
    V = sum(s * v for s, v in zip(s2, vs, strict=True))
    Vi = np.linalg.inv(V)
    v1 = Vi.sum(axis=1)
    P = Vi - np.outer(v1, v1) / v1.sum()
    Py = P @ y
    k = len(vs)
    info = np.zeros((k, k))
    PV = [P @ v for v in vs]
    for i in range(k):
        for j in range(k):
            info[i, j] = -0.5 * np.trace(PV[i] @ PV[j]) + Py @ vs[i] @ PV[j] @ Py
    return info


@pytest.mark.parametrize("path", ["schur-dense", "schur-sparse", "sparse-lu"])
def test_observed_information_equals_dense_formula(path):
    df = _sim(np.random.default_rng(7), n_agents=3, n_family=6)
    dsg = parse_design("run:(agent*(task:family))")
    codes = {f: pd.factorize(df[f])[0] for f in ("agent", "task", "family")}
    codes["run"] = df["run"].to_numpy()
    # tasks are nested: code them within family
    codes["task"] = pd.factorize(df["task"])[0]
    ec = _reml.effect_codes(codes, dsg)
    y = df["y"].to_numpy()
    prob = _reml.RemlProblem(y, ec, dsg)
    # each way of factorising the random-effect system (chosen by size) against the formula
    prob._sparse = path == "sparse-lu"
    prob._arb_sparse = path == "schur-sparse"
    s2_terms = np.array([0.3, 0.2, 0.15, 0.5][: len(prob.terms)])
    s2_cell, s2e = 0.1, 0.45
    got = prob.observed_information(s2_terms, s2_cell, s2e)
    order = [*prob.terms, prob.cell_effect, frozenset(dsg.facets)]
    vs, _ = _dense_observed_information(y, ec, order)
    ref = _dense_info_at(y, vs, np.r_[s2_terms, s2_cell, s2e])
    np.testing.assert_allclose(got, ref, rtol=2e-3, atol=2e-3 * np.abs(ref).max())


def test_large_problem_gets_observed_information_wald_intervals(monkeypatch):
    # lower the size limits so that a small problem takes the large-problem route
    monkeypatch.setattr(_fit, "EXPECTED_INFO_MAX_CELLS", 50)
    monkeypatch.setattr(_fit, "PROFILE_MAX_CELLS", 50)
    df = _sim(np.random.default_rng(3), n_agents=5, n_family=15)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoIntervalWarning)
        warnings.simplefilter("error", RemlConvergenceWarning)
        vc = variance_components(df, design="run:(agent*(task:family))", var="y")
    assert vc.fit_info["information"] == "observed" and vc.ci_method == "wald"
    assert "observed information" in vc.note
    ci = vc.ci
    assert np.isfinite(ci.values).all()
    assert "observed REML information" in ci.attrs["ci_detail"]
    co = vc.coefficients()
    assert np.isfinite(co["ci"].values).all()
    # observed and expected information agree at the REML estimate to first order
    monkeypatch.setattr(_fit, "EXPECTED_INFO_MAX_CELLS", 10**6)
    vc_e = variance_components(df, design="run:(agent*(task:family))", var="y", ci="wald")
    assert vc_e.fit_info["information"] == "expected"
    pos = vc.estimate.values > 0
    np.testing.assert_allclose(vc.se.values[pos], vc_e.se.values[pos], rtol=0.25)


def test_no_information_is_a_named_warning(monkeypatch):
    monkeypatch.setattr(_fit, "EXPECTED_INFO_MAX_CELLS", 50)
    monkeypatch.setattr(_fit, "PROFILE_MAX_CELLS", 50)
    monkeypatch.setattr(
        _reml.RemlProblem, "observed_information", lambda self, *a: np.full((6, 6), np.nan)
    )
    df = _sim(np.random.default_rng(4), n_agents=3, n_family=10)
    with pytest.warns(NoIntervalWarning, match="remedy: profile_ci"):
        vc = variance_components(df, design="run:(agent*(task:family))", var="y")
    assert "no intervals" in vc.note


@pytest.mark.slow
def test_convergence_rule_is_scale_free_on_metr(shared_data):
    """METR continuous scores: the absolute-gradient rule flagged a fit that no independent
    optimiser can improve; the decrement rule accepts it and it is a minimum.
    """
    import hierbench as hb

    ds = hb.data.load_metr(score="score")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RemlConvergenceWarning)
        vc = variance_components(ds)
    assert vc.fit_info["converged"]
    y, ec = vc._reml_data
    prob = _reml.RemlProblem(y, ec, vc._design)
    th = np.asarray(vc.fit_info["theta"])
    f_hat = prob.deviance(th)
    with one_blas_thread():
        r = sopt.minimize(
            prob.deviance,
            th * 1.05 + 0.01,
            method="Nelder-Mead",
            options={"xatol": 1e-7, "fatol": 1e-9, "maxiter": 3000},
        )
    # an independent optimiser from a nearby start finds no lower deviance (beyond 1e-5)
    assert r.fun >= f_hat - 1e-5


@pytest.mark.slow
def test_saddle_at_zero_is_not_converged():
    """An SD parameter at 0 has slope 0 there even when the deviance falls inside (variance =
    theta^2): the check must probe the interior. The constrained optimum with the agent x
    family component held at 0 is a saddle when the unconstrained REML fit (whose deviance
    is lower) puts it above 0.
    """
    df = _sim(np.random.default_rng(11), n_agents=6, n_family=20)
    vc = variance_components(df, design="run:(agent*(task:family))", var="y", ci="wald")
    y, ec = vc._reml_data
    prob = _reml.RemlProblem(y, ec, vc._design)
    th = np.asarray(vc.fit_info["theta"])
    names = [vc._design.names[vc._design.effects.index(e)] for e in prob.terms]
    j = names.index("agent:family")
    assert th[j] > 0.05
    free = [i for i in range(th.size) if i != j]

    def dev_fixed(x):
        t = np.zeros(th.size)
        t[free] = np.abs(x)
        return prob.deviance(t)

    r = sopt.minimize(
        dev_fixed,
        th[free],
        method="L-BFGS-B",
        bounds=[(0, None)] * len(free),
        options={"ftol": 1e-14, "gtol": 1e-9},
    )
    t0 = np.zeros(th.size)
    t0[free] = np.abs(r.x)
    assert prob.deviance(t0) > prob.deviance(th) + 1e-3  # the fit is better: t0 is no optimum
    _, dec, _ = prob.newton_check(t0, polish=0)
    assert not dec < 1e-5


def test_coefficient_at_zero_has_an_interval(shared_data):
    """lme4's Dyestuff2: the batch component is truncated at 0, so E rho^2 = Phi = 0; the Wald
    interval is [0, z * se] with the delta-method se (d E rho^2 / d s_batch = n_rep / s_e at
    s_batch = 0), and the balanced ANOVA result also gives the profile interval.
    """
    from scipy import stats

    d = pd.read_csv(shared_data / "lme4" / "dyestuff2.csv")
    d["rep"] = d.groupby("Batch").cumcount()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(d, design="rep:Batch", var="Yield")
        co = vc.coefficients(ci="wald")  # the default is the profile (audit G 2)
        cp = vc.coefficients(ci="profile")
        cr = variance_components(d, design="rep:Batch", var="Yield", method="reml").coefficients(
            ci="profile"
        )
    assert vc.method == "anova" and float(vc.estimate.sel(component="Batch")) == 0
    s_e = float(vc.estimate.sel(component="residual"))
    se = 5 / s_e * float(vc.se.sel(component="Batch"))
    z = stats.norm.ppf(0.975)
    np.testing.assert_allclose(co["ci"].sel(coefficient="e_rho2").values, [0, z * se], rtol=1e-4)
    np.testing.assert_allclose(cp["ci"].values, cr["ci"].values, rtol=1e-4, atol=1e-8)
    assert np.isfinite(cp["ci"].values).all() and float(cp["ci"].max()) > 0


@pytest.mark.slow
def test_profile_bounds_reach_the_cut_by_an_independent_optimiser():
    """At each finite profile bound the profile deviance, minimised afresh by Nelder-Mead from
    the estimate, equals chi2_1(0.95): the warm-started search does not stop early (warm starts
    at 0 are saddles of the SD parametrisation).
    """
    from scipy import stats

    df = _sim(np.random.default_rng(5), n_agents=5, n_family=14)
    vc = variance_components(df, design="run:(agent*(task:family))", var="y", ci="profile")
    ci = vc.profile_ci()
    prof, order = vc._profiler()
    k = prof.p.n_theta
    crit = stats.chi2.ppf(0.95, 1)
    checked = 0
    for jp, jd in enumerate(order[:-1]):
        for c in ci.values[jd]:
            if not (np.isfinite(c) and c > 0):
                continue
            others = [i for i in range(k) if i != jp]

            def fun(x, c=c, jp=jp, others=others):
                s2e = np.exp(x[0])
                th = np.empty(k)
                th[others] = np.abs(x[1:])
                th[jp] = np.sqrt(c / s2e)
                return prof.dev_abs(th, s2e)

            x0 = np.r_[np.log(prof.s2e_hat), prof.theta_hat[others] + 0.05]
            r = sopt.minimize(
                fun,
                x0,
                method="Nelder-Mead",
                options={"xatol": 1e-9, "fatol": 1e-10, "maxiter": 6000},
            )
            assert r.fun - prof.d_min == pytest.approx(crit, abs=0.02), (jd, c)
            checked += 1
    assert checked >= 5
