"""The analytic gradient of the REML deviance (``RemlProblem.pieces_grad``) and its use.

The gradient is checked against central finite differences of the deviance's pieces, taken
here with numpy, on small designs that go through every branch of ``RemlProblem.pieces``:
the Schur complement with and without a rest block (its coupling formed densely and
sparsely), the sparse LU, runs nested in cells (the cell effect) and no random-effect
term. The fits and profile intervals it speeds up are compared with the finite-difference
path they replaced (``_reml._ANALYTIC_GRADIENT = False``: scipy differences the deviance),
an independent route to the same optima.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

from hierbench.freq import variance_components
from hierbench.freq._kernels import one_blas_thread
from hierbench.freq._variance import _profile
from hierbench.freq._variance import _reml
from hierbench.freq._variance._design_lang import parse_design


@pytest.fixture(autouse=True)
def _one_thread():
    """Small dense algebra as the fits run it (one BLAS thread; threads cost 20x on a busy machine)."""
    with one_blas_thread():
        yield


def _sim(seed: int, n_agents: int = 3, n_family: int = 6, one_run: bool = False) -> pd.DataFrame:
    """Agents crossed with tasks nested in families of 1-4 tasks, 1-3 runs per cell."""
    rng = np.random.default_rng(seed)
    rows = []
    a_eff = rng.normal(0, 0.6, n_agents)
    for f in range(n_family):
        fe = rng.normal(0, 0.5)
        for t in range(rng.integers(1, 5)):
            te = rng.normal(0, 0.9)
            for a in range(n_agents):
                ae = rng.normal(0, 0.4)
                for r in range(1 if one_run else rng.integers(1, 4)):
                    y = a_eff[a] + fe + te + ae + rng.normal(0, 0.7)
                    rows.append((f"a{a}", f"f{f}t{t}", f"f{f}", r, y))
    return pd.DataFrame(rows, columns=["agent", "task", "family", "run", "y"])


#: design, one run per cell, and what it exercises: (has a cell effect, has a rest block)
DESIGNS = {
    "run:(agent*(task:family))": (False, True, True),  # 4 terms and the cell effect
    "run:(agent*task)": (False, True, True),  # 2 terms, rest = agents
    "run:task:family": (False, True, False),  # 1 term (families): no rest block
    "agent*(task:family)": (True, False, True),  # no cell effect
    "agent*task": (True, False, True),
    "run:task": (False, True, None),  # the cell effect alone: no random-effect term
}
PATHS = ["schur-dense", "schur-sparse", "sparse-lu"]
#: without a random-effect term there is one path
CASES = [
    (d, p)
    for d, (_, _, rest) in DESIGNS.items()
    for p in (PATHS if rest is not None else PATHS[:1])
]


def _problem(design: str, path: str, monkeypatch, seed: int = 7) -> _reml.RemlProblem:
    one_run, cell, rest = DESIGNS[design]
    df = _sim(seed, one_run=one_run)
    dsg = parse_design(design)
    codes = {f: pd.factorize(df[f])[0] for f in dsg.facets}
    if path == "sparse-lu":  # every problem with random effects takes the sparse LU
        monkeypatch.setattr(_reml, "SPARSE_MIN_REST", -1)
    prob = _reml.RemlProblem(df["y"].to_numpy(), _reml.effect_codes(codes, dsg), dsg)
    assert (prob.cell_effect is not None) == cell
    if rest is None:
        assert prob.q == 0
        return prob
    assert (prob._nr > 0) == rest
    assert prob._sparse == (path == "sparse-lu")
    # the Schur coupling's form is chosen by its fill (dense at this size): set it
    prob._arb_sparse = path == "schur-sparse"
    return prob


def _central(fun, x: np.ndarray, rel: float = 1e-6) -> np.ndarray:
    """Central differences of a vector-valued ``fun``, step ``rel`` relative (at least ``rel``)."""
    cols = []
    for i in range(x.size):
        h = rel * max(1.0, abs(x[i]))
        up, dn = x.copy(), x.copy()
        up[i] += h
        dn[i] -= h
        cols.append((np.asarray(fun(up)) - np.asarray(fun(dn))) / (2 * h))
    return np.stack(cols, axis=-1)


def _thetas(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = [rng.uniform(0.05, 2.5, n) for _ in range(3)]
    at0 = rng.uniform(0.2, 1.5, n)
    at0[0] = 0.0  # a relative SD at its bound: its derivative is 0 (the deviance is even in it)
    return [*out, at0]


@pytest.mark.parametrize(("design", "path"), CASES)
def test_gradient_equals_central_differences(design, path, monkeypatch):
    prob = _problem(design, path, monkeypatch)
    for th in _thetas(prob.n_theta, seed=len(design)):
        pcs, g = prob.pieces_grad(th)
        assert pcs == prob.pieces(th)
        ref = _central(lambda t: prob.pieces(t)[:3], th)  # 3 x n_theta
        for row, row_ref in zip(g, ref, strict=True):  # log|V|, log 1'V^-1 1, Q
            np.testing.assert_allclose(row, row_ref, rtol=1e-5, atol=1e-6 * np.abs(row_ref).max())
        if th[0] == 0.0:
            assert np.all(g[:, 0] == 0.0)
        f, gd = prob.deviance_grad(th)
        assert f == prob.deviance(th)
        ref_d = _central(prob.deviance, th)
        np.testing.assert_allclose(gd, ref_d, rtol=1e-5, atol=1e-6 * np.abs(ref_d).max())


def test_profile_closures_gradients_equal_central_differences():
    """Each profile minimisation's value-and-gradient (the chain rule through log s_e,
    theta_j = sqrt(c / s_e) and the ratio profiles' weights) against central differences of
    the value it minimises.
    """
    df = _sim(11)
    dsg = parse_design("run:(agent*(task:family))")
    codes = {f: pd.factorize(df[f])[0] for f in dsg.facets}
    prob = _reml.RemlProblem(df["y"].to_numpy(), _reml.effect_codes(codes, dsg), dsg)
    k = prob.n_theta
    pr = _profile.Profiler(prob, prob.fit()["theta"])
    seen = []
    minimise = pr._minimise

    def spy(fun, x0, bounds, fun_grad=None):
        seen.append((fun, fun_grad, x0.copy()))
        return minimise(fun, x0, bounds, fun_grad)

    pr._minimise = spy
    pr.component_profile(k)(0.5)  # the residual
    pr.component_profile(1)(0.1)  # a term: log s_e and the other theta free
    pr.component_profile(k - 1)(0.2)  # the cell effect
    tau, err = np.zeros(k + 1), np.zeros(k + 1)
    tau[[0, 1]], err[[2, 3, k]] = 1.0, [0.5, 0.2, 0.1]  # two universe-score parts: weights
    pr.ratio_profile(tau, err)(0.7)
    tau, err = np.zeros(k + 1), np.zeros(k + 1)
    tau[0], err[[1, k - 1, k]] = 1.0, [0.3, 0.3, 0.2]
    pr.ratio_profile(tau, err)(0.6)
    pr.ratio_profile(tau, err)(0.0)  # universe score 0: d / d theta^2 taken by differences
    assert len(seen) == 6 and all(fg is not None for _, fg, _ in seen)
    rng = np.random.default_rng(0)
    for fun, fun_grad, x0 in seen:
        for _ in range(3):
            x = np.abs(x0 * rng.uniform(0.7, 1.3, x0.size)) + rng.uniform(0.01, 0.2, x0.size)
            f, g = fun_grad(x)
            assert f == fun(x)
            ref = _central(fun, x)
            np.testing.assert_allclose(g, ref, rtol=1e-5, atol=1e-6 * np.abs(ref).max())


@pytest.mark.parametrize("design", ["run:(agent*(task:family))", "agent*(task:family)"])
def test_fit_agrees_with_finite_difference_fit(design, monkeypatch):
    one_run = DESIGNS[design][0]
    df = _sim(3, n_agents=4, n_family=10, one_run=one_run)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(df, design=design, var="y", ci="wald")
        monkeypatch.setattr(_reml, "_ANALYTIC_GRADIENT", False)
        vc_fd = variance_components(df, design=design, var="y", ci="wald")
    assert vc.fit_info["converged"] and vc_fd.fit_info["converged"]
    np.testing.assert_allclose(vc.estimate.values, vc_fd.estimate.values, rtol=1e-4, atol=1e-9)
    # the finite-difference fit differences the deviance in every coordinate at every step
    assert vc.fit_info["nfev"] < vc_fd.fit_info["nfev"]


def _both_ways(monkeypatch, make, components=None, coefficients=True):
    """Fit and profile with the analytic gradient, then again with finite differences.

    The data are read once; each fit gets its own deep copy.
    """
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = make()
    for flag in (True, False):
        monkeypatch.setattr(_reml, "_ANALYTIC_GRADIENT", flag)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            vc = variance_components(data.copy(deep=True))
            ci = vc.profile_ci(components=components).values
            co = vc.coefficients(ci="profile")["ci"].values if coefficients else np.zeros(0)
        out.append((vc.estimate.values, ci, co))
    return out


@pytest.mark.slow
def test_metr_estimates_and_profile_intervals_agree_with_finite_differences(
    shared_data, monkeypatch
):
    import hierbench as hb

    (est, ci, co), (est_fd, ci_fd, co_fd) = _both_ways(monkeypatch, hb.data.load_metr)
    np.testing.assert_allclose(est, est_fd, rtol=1e-4)
    np.testing.assert_allclose(ci, ci_fd, rtol=1e-4)
    np.testing.assert_allclose(co, co_fd, rtol=1e-4)


@pytest.mark.slow
def test_swebench_estimates_and_profile_intervals_agree_with_finite_differences(
    shared_data, monkeypatch
):
    """Two components' profile intervals (the finite-difference profile of all five takes
    about 15 s here).
    """
    import hierbench as hb

    (est, ci, _), (est_fd, ci_fd, _) = _both_ways(
        monkeypatch,
        hb.data.load_swebench_bash_only,
        components=["agent", "task:cluster"],
        coefficients=False,
    )
    np.testing.assert_allclose(est, est_fd, rtol=1e-4)
    np.testing.assert_allclose(ci, ci_fd, rtol=1e-4)
