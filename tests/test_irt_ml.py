"""MAP item calibration, the Laplace bank and scoring a new agent (hierbench.freq._irt._ml).

References: finite differences (scipy.optimize.check_grad / numpy) for the
gradient and Hessian, a dense numpy inverse for the structured Laplace
covariance, scipy.integrate.quad for the ability posterior, and simulations
with fixed seeds and stated Monte Carlo tolerances.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from _helpers import agent_task_counts
from scipy import integrate
from scipy import stats
from scipy.optimize import check_grad
from scipy.special import expit

from hierbench._base import PartialCreditError
from hierbench.freq import IRTBank
from hierbench.freq import IRTConvergenceWarning
from hierbench.freq import fit_irt_ml
from hierbench.freq import irt_score
from hierbench.freq._irt._newton import _from_arrow
from hierbench.freq._irt._newton import _hessian_blocks
from hierbench.freq._irt._newton import _laplace
from hierbench.freq._irt._newton import _map_fit
from hierbench.freq._irt._newton import _neg_log_post
from hierbench.freq._irt._newton import _to_arrow


def _simulate(M, T, R, rng, sd_la=0.3):
    g = np.random.default_rng(rng)
    th = g.normal(size=M)
    a = np.exp(g.normal(0.3, sd_la, T))
    d = g.normal(0, 2, T)
    p = expit(th[:, None] * a[None, :] + d[None, :])
    y = g.binomial(R, p)
    return agent_task_counts(np.full((M, T), R), y), th, a, d


@pytest.mark.parametrize("two_pl", [True, False])
def test_gradient_and_hessian_match_finite_differences(two_pl):
    g = np.random.default_rng(1)
    M, T = 6, 9
    n = g.integers(0, 4, (M, T))  # ragged: some cells not run
    y = g.binomial(n, 0.4)
    h = (0.1, 1.5, 0.2, 0.6)
    k = M + T + (T if two_pl else 1)
    x = g.normal(size=k) * 0.5

    def f(v):
        return _neg_log_post(v, n, y, M, T, two_pl, h)[0]

    def gr(v):
        return _neg_log_post(v, n, y, M, T, two_pl, h)[1]

    assert check_grad(f, gr, x) < 1e-4
    x = _map_fit(n, y, two_pl, h, x).x
    assert np.abs(gr(x)).max() < 1e-7
    eps = 1e-5
    H = np.array([(gr(x + eps * e) - gr(x - eps * e)) / (2 * eps) for e in np.eye(k)])
    Hgg, Hgi, Hii = _hessian_blocks(x, n, y, M, T, two_pl, h)
    # the arrow blocks reassembled into the parameter order equal the finite-difference Hessian
    G, K = Hgg.shape[0], Hii.shape[1]
    full = np.zeros((G + T * K, G + T * K))
    full[:G, :G] = Hgg
    full[:G, G:] = Hgi.reshape(G, T * K)
    full[G:, :G] = full[:G, G:].T
    for t in range(T):
        full[G + t * K : G + (t + 1) * K, G + t * K : G + (t + 1) * K] = Hii[t]
    perm = np.concatenate(
        [_from_arrow(np.arange(G), np.arange(G, G + T * K).reshape(T, K), M, T, two_pl)]
    ).astype(int)
    np.testing.assert_allclose(full[np.ix_(perm, perm)], H, atol=1e-4)
    # the structured Laplace covariance equals the dense inverse
    lap = _laplace(Hgg, Hgi, Hii)
    Hinv = np.linalg.inv(H)
    gi, _ = _to_arrow(np.arange(k), M, T, two_pl)
    np.testing.assert_allclose(lap["cov_g"], Hinv[np.ix_(gi.astype(int), gi.astype(int))], atol=1e-6)
    _, ii = _to_arrow(np.arange(k).astype(float), M, T, two_pl)
    np.testing.assert_allclose(lap["var_i"], np.diag(Hinv)[ii.astype(int)], atol=1e-6)


def test_calibration_recovers_simulated_items():
    # 40 agents x 60 tasks x 4 runs from a known 2PL (seed 3). The difficulty ranks
    # must be close (Spearman > 0.9) and abilities standardised exactly.
    data, th, a, d = _simulate(40, 60, 4, 3)
    cal = fit_irt_ml(data, n_draws=300, rng=0)
    b_true = -d / a
    assert stats.spearmanr(cal.estimate.values, b_true).statistic > 0.9
    assert stats.spearmanr(cal.ability.values, th).statistic > 0.9
    assert abs(float(cal.ability.mean())) < 1e-9 and abs(float(cal.ability.std()) - 1) < 1e-9
    # each bank draw is standardised on its own abilities, so the draws' predictions
    # are in the same units: check the interval contains the mode for most tasks
    lo, hi = cal.ci.sel(ci_bound="lower"), cal.ci.sel(ci_bound="upper")
    assert float(((lo <= cal.estimate) & (cal.estimate <= hi)).mean()) > 0.9
    assert cal.ci.attrs["ci_kind"] == "eti"
    assert cal.bank.n_samples == 300 and cal.bank.n_tasks == 60
    # the bank keeps the calibration agents' ability range (what adaptive's extrapolation flag reads)
    assert cal.bank.attrs["ability_range"] == [float(cal.ability.min()), float(cal.ability.max())]


def test_calibration_1pl_shares_one_discrimination():
    data, *_ = _simulate(20, 30, 3, 5, sd_la=0.0)
    cal = fit_irt_ml(data, model="1pl", n_draws=50, rng=0)
    assert np.ptp(cal.discrimination.values) == 0
    assert np.ptp(cal.bank.discrimination.values, axis=1).max() < 1e-12


def test_calibration_refuses_bad_input():
    data, *_ = _simulate(5, 8, 2, 0)
    with pytest.raises(ValueError, match="at least 2 agents"):
        fit_irt_ml(data.isel(agent=[0]))
    bad = data.copy(deep=True)
    bad["n_runs"][:, 0] = 0
    bad["n_success"][:, 0] = 0
    with pytest.raises(ValueError, match="every task must have been run"):
        fit_irt_ml(bad)
    with pytest.raises(ValueError, match="`model` must be one of"):
        fit_irt_ml(data, model="3pl")
    with pytest.raises(ValueError, match="`hyper` must give exactly"):
        fit_irt_ml(data, hyper={"mu_d": 0.0})
    score = xr.DataArray(np.full((2, 3, 1), 0.5), dims=("agent", "task", "run"))
    with pytest.raises(PartialCreditError):
        fit_irt_ml(xr.Dataset({"score": score}))


def _fixed_bank(a, d, S=1):
    A = xr.DataArray(np.tile(a, (S, 1)), dims=("sample", "task"), coords={"task": [f"t{j}" for j in range(a.size)]})
    D = xr.DataArray(np.tile(d, (S, 1)), dims=("sample", "task"), coords={"task": [f"t{j}" for j in range(a.size)]})
    return IRTBank(A, D)


def test_ability_posterior_matches_quadrature():
    # one item-parameter draw repeated: the ability draws follow the grid posterior, whose
    # mean must equal the quadrature mean of prior x likelihood (scipy.integrate.quad)
    a = np.array([1.0, 1.5, 0.7, 2.0, 1.2])
    d = np.array([0.5, -1.0, 0.0, 1.0, -2.0])
    y = np.array([1, 0, 1, 1, 0])
    bank = _fixed_bank(a, d, S=4000)

    def dens(t):
        p = expit(a * t + d)
        return stats.norm.pdf(t) * np.prod(p**y * (1 - p) ** (1 - y))

    z = integrate.quad(dens, -10, 10)[0]
    mean = integrate.quad(lambda t: t * dens(t), -10, 10)[0] / z
    sd = np.sqrt(integrate.quad(lambda t: t * t * dens(t), -10, 10)[0] / z - mean**2)
    resp = xr.DataArray(y[:, None].astype(float), dims=("task", "run"), coords={"task": [f"t{j}" for j in range(5)]})
    r = irt_score(bank, resp, rng=0, k=[1, 2])
    # Monte Carlo: 4000 draws, tolerance 4 standard errors
    assert abs(float(r.ability) - mean) < 4 * sd / np.sqrt(4000)
    # expected score and pass^k per draw are deterministic functions of the ability
    th = r.ability_draws.values
    np.testing.assert_allclose(r.expected_score_draws, expit(a[None] * th[:, None] + d[None]).mean(1))
    np.testing.assert_allclose(r.pass_hat_k.sel(k=2), (expit(a[None] * th[:, None] + d[None]) ** 2).mean(), rtol=1e-12)
    # tasks run count as observed in the realised score
    assert r.n_tasks_run == 5
    np.testing.assert_allclose(r.score_draws, y.mean())
    assert r.ci.attrs["ci_kind"] == "eti"


@pytest.mark.slow
def test_score_interval_coverage_by_simulation():
    # Agents drawn from the prior N(0, 1), answering 15 of 60 items of a known bank; the
    # 90% interval of the realised full score must cover in 90% +- 3 binomial sd of 200
    # (benchmarks/bench_coverage_studies.py's part ``irt``, the same 200 agents: about 2 s)
    from bench_coverage_studies import irt_score_coverage

    hits = irt_score_coverage(200)
    tol = 3 * np.sqrt(0.9 * 0.1 / hits.size)
    assert abs(hits.mean() - 0.9) < tol + 0.02  # + grid/discreteness slack of the realised score


def test_score_refuses_bad_input():
    bank = _fixed_bank(np.ones(3), np.zeros(3))
    resp = xr.DataArray([[1.0]], dims=("task", "run"), coords={"task": ["zz"]})
    with pytest.raises(ValueError, match="must be tasks of the bank"):
        irt_score(bank, resp)
    resp = xr.DataArray([[0.5]], dims=("task", "run"), coords={"task": ["t0"]})
    with pytest.raises(PartialCreditError):
        irt_score(bank, resp)
    with pytest.raises(TypeError, match="`bank` must be an IRTBank"):
        irt_score("bank", resp)
    with pytest.raises(ValueError, match="`discrimination` must be positive"):
        IRTBank(-bank.discrimination, bank.intercept)


def test_bank_from_posterior_reads_a_fit_layout():
    post = xr.Dataset(
        {
            "discrimination": (("chain", "draw", "task"), np.ones((2, 3, 4))),
            "intercept": (("chain", "draw", "task"), np.zeros((2, 3, 4))),
        },
        coords={"task": ["a", "b", "c", "d"]},
    )
    bank = IRTBank.from_posterior(xr.DataTree.from_dict({"posterior": post}))
    assert bank.n_samples == 6 and bank.tasks.tolist() == ["a", "b", "c", "d"] and bank.method == "nuts"
    post1 = post.assign(discrimination=(("chain", "draw"), np.ones((2, 3))))
    bank1 = IRTBank.from_posterior(xr.DataTree.from_dict({"posterior": post1}))
    assert bank1.model == "1pl" and bank1.discrimination.shape == (6, 4)
    assert "ability_range" not in bank1.attrs  # no abilities in the fit: no range
    # with abilities: the range of the agents' posterior means (by hand: -1.5 and 2.0 over 3 agents)
    draws = np.array([[0.0, -1.0, 2.0], [1.0, -2.0, 2.0], [0.5, -1.5, 2.0]])  # 3 draws: means 0.5, -1.5, 2.0
    withab = post.assign(ability=(("chain", "draw", "agent"), np.stack([draws, draws])))
    bank2 = IRTBank.from_posterior(xr.DataTree.from_dict({"posterior": withab}))
    assert bank2.attrs["ability_range"] == [-1.5, 2.0]


def test_pass_k_beyond_one_run_warns_on_a_single_run_bank():
    from hierbench._base import HierbenchWarning

    data, *_ = _simulate(10, 12, 1, 8)
    bank = fit_irt_ml(data, n_draws=20, rng=0).bank
    resp = xr.DataArray([[1.0]], dims=("task", "run"), coords={"task": ["t0"]})
    with pytest.warns(HierbenchWarning, match="pass\\^k for k > 1 assumes"):
        irt_score(bank, resp, k=[1, 2], rng=0)


@pytest.mark.parametrize("held_out", ["Gemini 3 Pro Preview (2025-11-18)", "GPT-5 (2025-08-07) (medium reasoning)"])
def test_newton_does_not_stall_at_the_mode_on_real_folds(shared_data, held_out):
    # These two leave-one-agent-out folds of SWE-bench bash-only used to end with "stopped
    # after 200 Newton steps": at the mode the Armijo test could not see a decrease below
    # the rounding of the objective and shrank every Newton step to nothing. The mode must
    # now be reached (largest gradient entry below 1e-8) without a convergence warning.
    from hierbench.data import load_swebench_bash_only

    data = load_swebench_bash_only(shared_data)
    assert held_out in set(data.agent.values.astype(str))
    train = data.sel(agent=[a for a in data.agent.values if str(a) != held_out])
    with warnings.catch_warnings():
        warnings.simplefilter("error", IRTConvergenceWarning)
        cal = fit_irt_ml(train, n_draws=10, rng=0)
    assert cal.info["em_steps"] > 0


def _overdispersed(M, T, R, icc, seed):
    """A 2PL whose cells' probabilities vary around the item curve (beta, correlation icc), R runs each."""
    g = np.random.default_rng(seed)
    th = g.normal(size=M)
    a = np.exp(g.normal(0.3, 0.3, T))
    d = g.normal(0, 1.5, T)
    p = expit(th[:, None] * a[None, :] + d[None, :])
    if icc > 0:
        c = 1 / icc - 1
        p = g.beta(p * c, (1 - p) * c)
    return agent_task_counts(np.full((M, T), R), g.binomial(R, p))


def test_run_icc_is_estimated_from_repeated_runs_and_zero_without_them():
    # the moment estimate at the pilot fit recovers the simulated correlation of a cell's
    # runs (beta-binomial cells, 40 x 120 cells of 8 runs). Over 20 other simulated logs
    # (seeds 100-119) it averaged 0.1995 (sd 0.0065) at 0.2 and 0.0013 (sd 0.0017) at 0;
    # the tolerances are about 3 of those sds. A log with one run per cell cannot
    # identify it, so it is 0 there.
    for icc, tol in ((0.2, 0.02), (0.0, 0.008)):
        cal = fit_irt_ml(_overdispersed(40, 120, 8, icc, seed=3), n_draws=10, rng=0)
        assert abs(cal.info["run_icc"] - icc) < tol, (icc, cal.info["run_icc"])
        assert cal.bank.attrs["run_icc"] == cal.info["run_icc"]
    one = fit_irt_ml(_overdispersed(20, 40, 1, 0.3, seed=4), n_draws=10, rng=0)
    assert one.info["run_icc"] == 0.0 and one.info["run_icc_source"] == "one run per cell"
    fixed = fit_irt_ml(_overdispersed(20, 40, 4, 0.3, seed=4), n_draws=10, run_icc=0.0, rng=0)
    assert fixed.info["run_icc_source"] == "given" and fixed.bank.attrs["run_icc"] == 0.0
    with pytest.raises(ValueError, match="run_icc"):
        fit_irt_ml(_overdispersed(20, 40, 4, 0.3, seed=4), run_icc=1.0)


def test_pass_hat_k_with_correlated_runs_is_the_beta_binomial_all_success_probability():
    # with run_icc > 0, pass^k on a task is P(k of k runs succeed) under a beta-binomial with
    # the curve's mean and that correlation (scipy), averaged over tasks and ability draws
    g = np.random.default_rng(6)
    S, T, icc = 50, 30, 0.25
    a = np.exp(g.normal(0, 0.2, (S, T)))
    d = g.normal(0, 1.5, (S, T))
    bank = IRTBank(xr.DataArray(a, dims=("sample", "task")), xr.DataArray(d, dims=("sample", "task")),
                   attrs={"run_icc": icc, "max_runs_per_cell": 4})
    resp = xr.DataArray(np.ones((2, 4)), dims=("task", "run"), coords={"task": ["0", "1"]})
    r = irt_score(bank, resp, k=[1, 3], rng=1)
    th = r.ability_draws.values
    p = expit(a * th[:, None] + d)
    c = 1 / icc - 1
    for kk in (1, 3):
        want = stats.betabinom.pmf(kk, kk, p * c, (1 - p) * c).mean()
        np.testing.assert_allclose(float(r.pass_hat_k.sel(k=kk)), want, rtol=1e-10)


@pytest.mark.slow
def test_realised_score_interval_covers_with_correlated_runs():
    # A new agent on a known bank whose cells are beta-binomial (8 runs, correlation 0.3):
    # scored with the bank's run_icc, the 90% interval of its realised full score covers at
    # the nominal rate (200 simulated agents: at least 0.9 - 3 sd = 0.836; 0.896 in the
    # 1,000-agent run irt_score's docstring quotes); scored as if its runs were independent,
    # it does not (below 0.8, 4.4 sd above the 0.65 of that run).
    g = np.random.default_rng(11)
    T, R, icc, S, n_obs = 40, 8, 0.3, 200, 15
    a = np.exp(g.normal(0.3, 0.3, T))
    d = g.normal(0, 1.5, T)
    c = 1 / icc - 1

    def bank(ic):
        return IRTBank(xr.DataArray(np.tile(a, (S, 1)), dims=("sample", "task")),
                       xr.DataArray(np.tile(d, (S, 1)), dims=("sample", "task")), attrs={"run_icc": ic})

    banks = {icc: bank(icc), 0.0: bank(0.0)}
    hits = {icc: 0, 0.0: 0}
    n_rep = 200
    for rep in range(n_rep):
        p_curve = expit(a * g.normal() + d)
        y = g.binomial(R, g.beta(p_curve * c, (1 - p_curve) * c))
        idx = g.choice(T, n_obs, replace=False)
        resp = xr.Dataset({"n_runs": ("task", np.full(n_obs, R)), "n_success": ("task", y[idx].astype(float))},
                          coords={"task": idx.astype(str)})
        for ic, b in banks.items():
            # the interval only: the person-fit check (misfit_level) comes after it and does not
            # change it (the 400 intervals are bit-identical with it), a quarter of the time
            lo, hi = irt_score(b, resp, prob=0.9, n_runs=R, misfit_level=None, rng=rep).ci.values
            hits[ic] += lo <= (y / R).mean() <= hi
    assert hits[icc] / n_rep >= 0.9 - 3 * np.sqrt(0.09 / n_rep), hits
    assert hits[0.0] / n_rep < 0.8, hits


def test_cell_loglik_is_the_beta_binomial_and_stays_finite_far_out():
    from scipy.special import comb

    from hierbench.freq._irt._ml import cell_loglik

    eta = np.array([-3.0, -0.5, 0.0, 1.2, 4.0])
    icc = 0.15
    c = 1 / icc - 1
    p = expit(eta)
    for k, n in ((0, 8), (3, 8), (8, 8), (1, 1)):
        want = stats.betabinom.logpmf(k, n, p * c, (1 - p) * c) - np.log(comb(n, k))
        np.testing.assert_allclose(cell_loglik(eta, k, n, icc), want, rtol=1e-10, atol=1e-12)
        # icc = 0 is the binomial
        np.testing.assert_allclose(cell_loglik(eta, k, n, 0.0), stats.binom.logpmf(k, n, p) - np.log(comb(n, k)))
    # far grid points (|eta| of hundreds) give finite values, so posterior weights never turn NaN
    assert np.isfinite(cell_loglik(np.array([-800.0, 800.0]), 3, 8, icc)).all()


@pytest.mark.slow
def test_few_agents_keep_the_discriminations_finite():
    # Plain empirical Bayes (ML-II) had no term holding the item population's level: with
    # 2-6 agents the log-discriminations' mean ran to about -500 to -700 (every slope 0,
    # ability irrelevant), usually without a warning. The EB steps now take the mode of
    # the PyMC builders' hyperpriors (MAP-II), so with 4 or more agents the slopes stay
    # within the prior's reach of 1 (mean log a within 3 prior sds of 0).
    for M in (4, 5, 6):
        g = np.random.default_rng(0)
        th, a, d = g.normal(size=M), np.exp(g.normal(0.3, 0.3, 30)), g.normal(0, 1.5, 30)
        y = (g.random((M, 30)) < expit(th[:, None] * a + d)).astype(float)
        with warnings.catch_warnings():
            warnings.simplefilter("error", IRTConvergenceWarning)
            cal = fit_irt_ml(agent_task_counts(np.ones((M, 30), int), y), n_draws=10, rng=0)
        assert abs(cal.hyper["mu_la"]) < 3.0, (M, cal.hyper)
        assert np.isfinite(cal.discrimination.values).all() and cal.discrimination.min() > 0.05


def test_three_agents_warn_that_the_slopes_collapsed_instead_of_failing():
    # 3 agents cannot identify a 2PL's slopes: calibration used to end in "item parameters must all
    # be finite" (a SQUAREM extrapolation to slopes of 0 left a non-finite start behind); it now
    # finishes and says the slopes collapsed, naming the way out
    from hierbench.design import simulate_irt_log

    data, _ = simulate_irt_log(4, 40, rng=0)
    with pytest.warns(IRTConvergenceWarning, match="discriminations collapsed to zero.*model='1pl'"):
        cal = fit_irt_ml(data.isel(agent=[1, 2, 3]), n_draws=20, rng=0)
    assert np.isfinite(cal.bank.discrimination.values).all()


def test_a_runaway_empirical_bayes_search_falls_back_to_its_start_and_warns(monkeypatch):
    """An EM step that leaves the finite range ends the search: the calibration is then the fit at the
    starting hyperparameters (what ``hyper=<start>`` computes, the independent reference), and it warns.
    Forced by an EM map that turns non-finite after a few steps (a 2PL with few agents can run away along
    its scale ridge, where the slopes collapse, on some machines' rounding).
    """
    from hierbench.design import simulate_irt_log
    from hierbench.freq._irt import _ml

    data, _ = simulate_irt_log(8, 30, rng=2)
    start = dict(zip(_ml._HYPER_NAMES, (0.0, 2.0, 0.0, 0.5), strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = fit_irt_ml(data, hyper=start, n_draws=50, rng=4)
    em_map, calls = _ml._EmpiricalBayes.em_map, []

    def failing(self, z):
        calls.append(1)
        return em_map(self, z) if len(calls) < 5 else np.full(4, np.nan)

    monkeypatch.setattr(_ml._EmpiricalBayes, "em_map", failing)
    with pytest.warns(IRTConvergenceWarning, match="ran out of the finite range.*mu_d 0, sd_d 2, mu_la 0, sd_la 0.5"):
        got = fit_irt_ml(data, n_draws=50, rng=4)
    xr.testing.assert_equal(got.bank.discrimination, ref.bank.discrimination)
    xr.testing.assert_equal(got.bank.intercept, ref.bank.intercept)


def test_the_fit_is_said_to_be_penalised_map_not_maximum_likelihood():
    """Audit F 5: fit_irt_ml is the posterior mode under empirical-Bayes priors, not ML, and says so.

    Independent check: with a free intercept per task, maximum likelihood makes each task's
    expected successes equal its observed ones (the score equation of a logistic intercept),
    and a task no agent solved has no finite ML intercept. Counted by hand at the fitted mode,
    the penalised fit leaves residuals and a finite expected count on those tasks.
    """
    import importlib

    cnt, *_ = _simulate(8, 12, 1, rng=3)
    cnt["n_success"][{"task": 0}] = 0  # a task no agent solved
    cal = fit_irt_ml(cnt, n_draws=50, rng=0)
    p = expit(cal.discrimination * cal.ability + cal.intercept).transpose("agent", "task").values
    n = cnt["n_runs"].transpose("agent", "task").values
    y = cnt["n_success"].transpose("agent", "task").values
    resid = (y - n * p).sum(0)  # observed - expected successes per task
    assert np.abs(resid).max() > 0.1, resid
    never = y.sum(0) == 0
    assert never.any() and ((n * p).sum(0)[never] > 0.01).all()
    want = "penalised (MAP, empirical-Bayes priors), not maximum likelihood"
    assert cal.info["fit"] == want and cal.bank.attrs["fit"] == want
    assert "penalised (MAP, empirical-Bayes priors) calibration" in repr(cal).splitlines()[0]
    assert f"fit: {want}" in repr(cal.bank)
    assert fit_irt_ml.__doc__.splitlines()[0].startswith("Calibrate an item bank by a penalised fit (MAP, empirical-Bayes")
    fixed = fit_irt_ml(cnt, n_draws=20, rng=0, hyper={"mu_d": 0.0, "sd_d": 2.0, "mu_la": 0.0, "sd_la": 0.5})
    assert fixed.info["fit"] == "penalised (MAP, priors fixed by `hyper`), not maximum likelihood"
    # the old name's message no longer says maximum likelihood of it
    freq = importlib.import_module("hierbench.freq")
    with pytest.warns(DeprecationWarning, match=r"fit_irt_ml \(.*penalised \(MAP, empirical-Bayes priors\), "
                                                r"not maximum likelihood\)"):
        freq.calibrate_irt  # noqa: B018


def _nuts_like(shift: float) -> xr.DataTree:
    """A 2PL posterior layout, 4 chains x 500 i.i.d. draws; chain 0's intercepts moved by ``shift``."""
    g = np.random.default_rng(11)
    d = g.normal(size=(4, 500, 3))
    d[0] += shift
    post = xr.Dataset(
        {"discrimination": (("chain", "draw", "task"), np.exp(0.1 * g.normal(size=(4, 500, 3)))),
         "intercept": (("chain", "draw", "task"), d)},
        coords={"task": ["a", "b", "c"]},
    )
    stats_ = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((4, 500), bool)),
                         "energy": (("chain", "draw"), g.normal(size=(4, 500)))})
    return xr.DataTree.from_dict({"posterior": post, "sample_stats": stats_})


def test_bank_from_a_fit_that_failed_its_convergence_checks_warns_and_records_it():
    """Audit F 6: from_posterior built a bank from a fit hierbench had flagged, silently.

    Independent: the chains of the failing layout disagree by construction; the classic
    Gelman-Rubin R-hat, by hand, is far above 1.01. hierbench's own checks
    (compute_diagnostics) then flag it, and the bank must say so.
    """
    from hierbench import NotConvergedWarning as ConvergenceWarning  # the package's class for it
    from hierbench.bayes import compute_diagnostics

    bad = _nuts_like(3.0)
    x = bad["posterior"]["intercept"].values[..., 0]  # (chain, draw)
    n = x.shape[1]
    W, B = x.var(axis=1, ddof=1).mean(), n * x.mean(axis=1).var(ddof=1)
    assert np.sqrt(((n - 1) / n * W + B / n) / W) > 1.2
    fit = compute_diagnostics(bad, warn=False)
    assert fit.attrs["diag_converged"] == 0
    with pytest.warns(ConvergenceWarning, match=r"from_posterior: the fit failed hierbench's convergence "
                                                 r"checks \(.*R-hat"):
        bank = IRTBank.from_posterior(fit)
    assert bank.attrs["convergence"].startswith("failed: ") and "R-hat" in bank.attrs["convergence"]
    assert "convergence of the fit: failed: " in repr(bank)
    # a fit that passed: no warning, recorded; a posterior without diagnostics: not checked, said
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        good = IRTBank.from_posterior(compute_diagnostics(_nuts_like(0.0), warn=False))
    assert good.attrs["convergence"] == "passed" and "convergence" not in repr(good)
    bare = IRTBank.from_posterior(_nuts_like(0.0)["posterior"].to_dataset())
    assert bare.attrs["convergence"].startswith("not checked") and "not checked" in repr(bare)
