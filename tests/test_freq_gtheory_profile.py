"""G-theory: REML against a brute-force dense REML on a ragged nested + crossed design, profile
intervals against the dense REML profile, the DataFrame code path, and awkward shapes.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from _helpers import sim_nested
from scipy import optimize
from scipy import stats

from hierbench.freq import DesignError
from hierbench.freq import variance_components
from hierbench.freq._variance._long import codes_of_column
from hierbench.freq._variance._long import factorize

CRIT = stats.chi2.ppf(0.95, 1)


@pytest.fixture(autouse=True)
def _one_blas_thread():
    # small dense inverses are far slower with several BLAS threads on a shared machine
    threadpoolctl = pytest.importorskip("threadpoolctl")
    with threadpoolctl.threadpool_limits(1):
        yield


# ----------------------------------------------------------------------------- dense reference


def _indicators(df: pd.DataFrame, groups: dict[str, list[str]]) -> list[np.ndarray]:
    out = []
    for cols in groups.values():
        c = pd.factorize(df[cols].astype(str).agg("|".join, axis=1))[0]
        Z = np.zeros((len(df), c.max() + 1))
        Z[np.arange(len(df)), c] = 1.0
        out.append(Z @ Z.T)
    return out


def _dense_dev(y: np.ndarray, ZZ: list[np.ndarray], s: np.ndarray) -> float:
    """-2 REML log-likelihood (no constant) over all rows: V = sum s_k Z_k Z_k' + s_e I."""
    V = s[-1] * np.eye(y.size) + sum(sk * zz for sk, zz in zip(s[:-1], ZZ, strict=True))
    Vi = np.linalg.inv(V)
    v1 = Vi.sum(axis=1)
    m = v1.sum()
    return np.linalg.slogdet(V)[1] + np.log(m) + y @ Vi @ y - (v1 @ y) ** 2 / m


def _dense_fisher(y: np.ndarray, ZZ: list[np.ndarray], s0: np.ndarray, steps: int = 200):
    """REML by Fisher scoring on the dense covariance (score and expected information
    written out: dl/ds_k = -tr(P V_k)/2 + y'P V_k P y/2, I_kl = tr(P V_k P V_l)/2).
    """
    mats = [*ZZ, np.eye(y.size)]
    s = np.asarray(s0, dtype=float).copy()
    for _ in range(steps):
        V = sum(sk * mk for sk, mk in zip(s, mats, strict=True))
        Vi = np.linalg.inv(V)
        v1 = Vi.sum(axis=1)
        P = Vi - np.outer(v1, v1) / v1.sum()
        Py = P @ y
        PV = [P @ mk for mk in mats]
        score = np.array(
            [-0.5 * np.trace(pv) + 0.5 * Py @ mk @ Py for pv, mk in zip(PV, mats, strict=True)]
        )
        info = 0.5 * np.array([[np.sum(a * b.T) for b in PV] for a in PV])
        new = np.maximum(s + np.linalg.solve(info, score), 0.0)
        done = np.max(np.abs(new - s) / np.maximum(s, 1e-12)) < 1e-11
        s = new
        if done:
            break
    return s


def _sim_crossed_nested(rng, n_agent=5, n_family=8):
    """Agents crossed with tasks nested in families (1-4 tasks each), ragged runs (1-4),
    about 15% of the agent x task cells missing.
    """
    rows = []
    a = rng.normal(0, 0.5, n_agent)
    fam = rng.normal(0, 0.6, n_family)
    af = rng.normal(0, 0.3, (n_agent, n_family))
    for f in range(n_family):
        for t in range(rng.integers(1, 5)):
            te = rng.normal(0, 0.7)
            for m in range(n_agent):
                if rng.random() < 0.15:
                    continue
                ate = rng.normal(0, 0.4)
                for r in range(rng.integers(1, 5)):
                    y = a[m] + fam[f] + af[m, f] + te + ate + rng.normal(0, 0.6)
                    rows.append((f"a{m}", f"f{f}", f"f{f}t{t}", r, y))
    return pd.DataFrame(rows, columns=["agent", "family", "task", "run", "y"])


GROUPS_CN = {
    "agent": ["agent"],
    "family": ["family"],
    "agent:family": ["agent", "family"],
    "task:family": ["task", "family"],
    "agent:task:family": ["agent", "task", "family"],
}


def test_ragged_crossed_nested_reml_equals_dense_fisher_scoring():
    # the METR shape (runs in agent x task cells, tasks in families, ragged, missing cells):
    # our REML against Fisher scoring on the dense N x N covariance, to 1e-4 relative
    df = _sim_crossed_nested(np.random.default_rng(31))
    vc = variance_components(df, design="run:(agent*(task:family))", var="y")
    assert vc.method == "reml" and vc.fit_info["converged"]
    assert list(vc.component_names) == [*GROUPS_CN, "residual"]
    ZZ = _indicators(df, GROUPS_CN)
    y = df.y.to_numpy(float)
    ref = _dense_fisher(y, ZZ, np.full(6, 0.3))
    got = vc.estimate.values
    assert ref.min() > 1e-3  # an interior optimum: a relative comparison is meaningful
    np.testing.assert_allclose(got, ref, rtol=1e-4)
    # and the dense REML deviance is not lower anywhere near ours
    assert _dense_dev(y, ZZ, got) <= _dense_dev(y, ZZ, ref) + 1e-6


def _dense_profile(y, ZZ, j, value, starts):
    """Min over the other components (>= 0, as squared SDs) of the dense deviance with
    component j fixed at value.
    """
    K = len(ZZ) + 1
    others = [i for i in range(K) if i != j]

    def f(x):
        s = np.empty(K)
        s[others] = x**2
        s[j] = value
        return _dense_dev(y, ZZ, s)

    return min(optimize.minimize(f, x0, method="L-BFGS-B").fun for x0 in starts)


def test_profile_bounds_are_where_the_dense_profile_crosses_chi2():
    df = sim_nested(np.random.default_rng(41), n_family=10)
    vc = variance_components(df, design="run:task:family", var="y", measurement="family")
    assert vc.ci_method == "profile"
    ci = vc.ci
    assert ci.attrs["ci_kind"] == "profile" and ci.attrs["ci_prob"] == 0.95
    groups = {"family": ["family"], "task:family": ["task", "family"]}
    ZZ = _indicators(df, groups)
    y = df.y.to_numpy(float)
    est = vc.estimate.values
    d_min = _dense_dev(y, ZZ, est)
    for j, name in enumerate(vc.component_names):
        lo, hi = ci.sel(component=name).values
        assert lo < est[j] < hi
        for b in (lo, hi):
            if b == 0:  # the profile at 0 must then stay below the cut
                assert _dense_profile(y, ZZ, j, 0.0, [np.sqrt(np.delete(est, j))]) - d_min <= CRIT
                continue
            starts = [np.sqrt(np.delete(est, j)), np.full(2, 0.7)]
            d = _dense_profile(y, ZZ, j, b, starts) - d_min
            assert d == pytest.approx(CRIT, abs=2e-3), (name, b, d)


def test_profile_of_named_components_only_is_where_the_dense_profile_crosses_chi2():
    """``profile_ci(components=...)`` profiles those only (the report reads three of six): each bound
    is where the brute-force dense REML profile crosses chi2_1(0.95), as for the whole set; asked
    first for one component and then for all, the kept one is reused and the others computed.
    """
    df = sim_nested(np.random.default_rng(41), n_family=10)
    vc = variance_components(df, design="run:task:family", var="y", measurement="family")
    one = vc.profile_ci(components="task:family")
    assert list(one["component"].values) == ["task:family"] and one.attrs["ci_kind"] == "profile"
    groups = {"family": ["family"], "task:family": ["task", "family"]}
    ZZ = _indicators(df, groups)
    y = df.y.to_numpy(float)
    est = vc.estimate.values
    j = list(vc.component_names).index("task:family")
    d_min = _dense_dev(y, ZZ, est)
    for b in one.sel(component="task:family").values:
        d = _dense_profile(y, ZZ, j, b, [np.sqrt(np.delete(est, j)), np.full(2, 0.7)]) - d_min
        assert d == pytest.approx(CRIT, abs=2e-3), b
    whole = vc.profile_ci()
    np.testing.assert_array_equal(whole.sel(component="task:family").values, one.sel(component="task:family").values)
    with pytest.raises(ValueError, match="`components`: \\['batch'\\] are not components"):
        vc.profile_ci(components=["batch"])


def _e_rho2_check(seed, n_family, sizes=None):
    df = sim_nested(np.random.default_rng(seed), n_family=n_family)
    vc = variance_components(df, design="run:task:family", var="y", measurement="family")
    co = vc.coefficients(sizes=sizes)
    assert co["ci"].attrs["ci_kind"] == "profile"
    # at the G-study's own design the run error of a task's mean goes as 1 / (its runs): the
    # harmonic mean of runs over the (family, task) cells, counted here from the rows
    runs = df.groupby(["family", "task"]).size().to_numpy(float)
    nt, nr = vc.sizes["task"], runs.size / np.sum(1.0 / runs)
    if sizes:
        nt, nr = sizes.get("task", nt), sizes.get("run", nr)
    groups = {"family": ["family"], "task:family": ["task", "family"]}
    ZZ = _indicators(df, groups)
    y = df.y.to_numpy(float)
    est = vc.estimate.values
    r_hat = est[0] / (est[0] + est[1] / nt + est[2] / (nt * nr))
    assert float(co["estimate"].sel(coefficient="e_rho2")) == pytest.approx(r_hat, rel=1e-9)
    d_min = _dense_dev(y, ZZ, est)

    def prof(r):  # E rho^2 = r: s_family = r / (1 - r) * (s_task / nt + s_e / (nt nr))
        def f(x):
            st, se = x**2
            return _dense_dev(y, ZZ, np.array([r / (1 - r) * (st / nt + se / (nt * nr)), st, se]))

        return optimize.minimize(f, np.sqrt(est[1:]), method="L-BFGS-B").fun - d_min

    lo, hi = co["ci"].sel(coefficient="e_rho2").values
    assert lo < r_hat < hi < 1
    return vc, lo, hi, prof


@pytest.mark.slow
def test_profile_interval_of_e_rho2_matches_dense_profile():
    vc, lo, hi, prof = _e_rho2_check(42, 20)
    assert lo > 0
    for b in (lo, hi):
        assert prof(b) == pytest.approx(CRIT, abs=2e-3)
    # 10 families: the profile stays below the cut down to E rho^2 = 0 (and the family
    # component's down to 0)
    vc, lo, hi, prof = _e_rho2_check(42, 10)
    assert lo == 0.0 and float(vc.ci.sel(component="family", ci_bound="lower")) == 0.0
    assert prof(1e-9) <= CRIT
    assert prof(hi) == pytest.approx(CRIT, abs=2e-3)
    # a D-study point: 8 tasks per family, 2 runs per task
    vc, lo, hi, prof = _e_rho2_check(42, 20, sizes={"task": 8, "run": 2})
    for b in (lo, hi):
        assert prof(b) == pytest.approx(CRIT, abs=2e-3)
    with pytest.raises(ValueError, match="not a facet of generalization"):
        vc.coefficients(sizes={"family": 3})


def test_ci_argument_and_defaults():
    df = sim_nested(np.random.default_rng(43), n_family=6)
    vw = variance_components(df, design="run:task:family", var="y", ci="wald")
    # Wald on log(variance) and the delta method on logit(coefficient): each kind names its scale
    assert vw.ci.attrs["ci_kind"] == "log-normal"
    assert vw.coefficients()["ci"].attrs["ci_kind"] == "logit-normal"
    # balanced data: ANOVA estimates with profile REML intervals by default (audit G 2: the
    # exact-variance Wald intervals under-cover near 0), Wald on request
    y = np.random.default_rng(44).normal(size=(6, 5, 3))
    da = xr.DataArray(y, dims=("agent", "task", "run"))
    vb = variance_components(da)
    assert vb.method == "anova" and vb.ci.attrs["ci_kind"] == "profile"
    assert vb.coefficients()["ci"].attrs["ci_kind"] == "profile"
    assert variance_components(da, ci="wald").ci.attrs["ci_kind"] == "log-normal"
    vp = variance_components(da, ci="profile")
    ci = vp.ci
    assert ci.attrs["ci_kind"] == "profile"
    assert np.all(ci.sel(ci_bound="lower").values <= vp.estimate.values + 1e-12)
    with pytest.raises(ValueError, match="`ci` must be"):
        variance_components(da, ci="bootstrap")
    with pytest.raises(ValueError, match="`ci` must be"):
        vb.coefficients(ci="exact")


# ----------------------------------------------------------------------------- data paths


@pytest.mark.parametrize(
    "col",
    [
        np.array([3, 1, 2, 3, 1, 7]),
        np.array([-5, 10, -5, 0, 2**40, 10]),  # wide range: the sort-based route
        np.array([True, False, True]),
        np.array([4, 4, 4], dtype=np.uint8),
        np.array(["b", "a", "c", "a"], dtype=object),
        np.array([0.5, 2.0, 0.5]),
    ],
)
def test_codes_of_column_equal_pandas_factorize(col):
    c1, u1 = codes_of_column(col, "x")
    c2, u2 = factorize(col)
    np.testing.assert_array_equal(c1, c2)
    assert list(u1) == list(u2)


@pytest.mark.filterwarnings("ignore::hierbench.freq.NegativeVarianceComponentWarning")
def test_frame_route_equals_string_labels_and_array_route():
    rng = np.random.default_rng(45)
    y = rng.normal(size=(7, 4, 3))
    idx = np.indices(y.shape).reshape(3, -1).T
    df = pd.DataFrame(idx * [1, 10, -3], columns=["p", "i", "o"]).assign(score=y.ravel())
    df = df.sample(frac=1.0, random_state=0)  # row order must not matter
    dfs = df.astype({"p": str, "i": str, "o": str})
    a = variance_components(df, design="p*i*o", var="score", measurement="p")
    b = variance_components(dfs, design="p*i*o", var="score", measurement="p")
    c = variance_components(xr.DataArray(y, dims=("p", "i", "o")), design="p*i*o")
    np.testing.assert_allclose(a.components_raw.values, b.components_raw.values, rtol=1e-12)
    np.testing.assert_allclose(a.components_raw.values, c.components_raw.values, rtol=1e-12)
    assert a.e_rho2 == pytest.approx(c.e_rho2, rel=1e-12)


def test_families_of_one_task_refused_clearly():
    rng = np.random.default_rng(46)
    rows = [
        (f"a{m}", f"f{f}", f"t{f}", r, rng.normal())
        for m in range(3)
        for f in range(5)
        for r in range(rng.integers(1, 4))
    ]
    df = pd.DataFrame(rows, columns=["agent", "family", "task", "run", "y"])
    with pytest.raises(DesignError, match="cannot separate 'family' from 'task:family'"):
        variance_components(df, design="run:(agent*(task:family))", var="y")


def test_agent_without_runs_is_left_out():
    # an agent with no observed score (all NaN) must not turn the unbalanced fit into NaN
    df = _sim_crossed_nested(np.random.default_rng(47), n_agent=4, n_family=6)
    da = df.set_index(["agent", "task", "run"])["y"].to_xarray()
    da = da.reindex(agent=[*da.agent.values, "a_none"])
    ds = xr.Dataset({"score": da})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        v_all = variance_components(ds)
        v_obs = variance_components(ds.sel(agent=ds.agent != "a_none"))
    assert np.all(np.isfinite(v_all.estimate.values))
    np.testing.assert_allclose(v_all.estimate.values, v_obs.estimate.values, rtol=1e-10)


def test_power_planning_refuses_other_designs_clearly():
    from hierbench.freq import paired_power

    df = _sim_crossed_nested(np.random.default_rng(48), n_agent=3, n_family=5)
    crossed_runs = variance_components(df, design="agent*(run:task:family)", var="y")
    with pytest.raises(ValueError, match=r"design 'run:\(agent\*task\)' \(design='nested'\) or"):
        paired_power(0.1, 10, components=crossed_runs)
    # the same data through the three-facet design plan fine
    three = variance_components(df, design="run:(agent*task)", var="y", ci="wald")
    assert three.facets == ("agent", "task", "run")
    assert 0 < float(paired_power(0.5, 50, n_runs=2, components=three)) <= 1


def test_auto_falls_back_to_wald_above_the_profiled_size(monkeypatch):
    from hierbench.freq._variance import _fit

    df = sim_nested(np.random.default_rng(49), n_family=6)
    monkeypatch.setattr(_fit, "PROFILE_MAX_CELLS", 5)
    vc = variance_components(df, design="run:task:family", var="y")
    assert vc.ci_method == "wald" and vc.ci.attrs["ci_kind"] == "log-normal"
    assert "above the size profiled by default" in vc.note
    assert vc.profile_ci().attrs["ci_kind"] == "profile"  # still there on request
