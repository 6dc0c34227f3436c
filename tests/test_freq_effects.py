"""Tests of the reader's-scale answers of a formula fit: average marginal effects, mean
response, the agents' variance, and the fractional and ordinal families' predictions.

Independent references: scipy's adaptive quadrature of the logit-normal means,
simulation from the estimates' normal approximation (for the delta method),
the task-level bootstrap of each agent's mean score (``bootstrap_ci``), a
coverage simulation with known truth (``benchmarks/bench_ame_coverage.py``),
hand counts of the classical mixed-ANOVA degrees of freedom, and the Laplace
restricted likelihood written out with numpy and maximised by scipy.
"""

from __future__ import annotations

import importlib.util
import math
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from conftest import ROOT
from scipy import integrate
from scipy import stats
from scipy.special import expit

from hierbench._base import HierbenchError
from hierbench.freq import FewLevelsWarning
from hierbench.freq import agent_variance
from hierbench.freq import average_marginal_effects
from hierbench.freq import bootstrap_ci
from hierbench.freq import fit_crossed_ml
from hierbench.freq import mean_response
from hierbench.testing import simulate_eval

_NORM_C = 1.0 / math.sqrt(2.0 * math.pi)


def _mean_p(loc: float, tau: float) -> float:
    """E[expit(loc + tau Z)], Z standard normal, by scipy's adaptive quadrature.

    The normal density is written out: scipy.stats' per-call overhead made this quadrature
    (hundreds of calls in a test) 150 times slower, for the same value (within 3e-16).
    """
    return integrate.quad(lambda z: _NORM_C * math.exp(-0.5 * z * z) / (1.0 + math.exp(-(loc + tau * z))),
                          -12, 12, epsabs=1e-12)[0]  # fmt: skip


def _two_scaffolds(seed=1):
    rng = np.random.default_rng(seed)
    p = np.where(np.arange(6) < 3, 0.4, 0.6)[:, None, None] * np.ones((6, 50, 3))
    y = (rng.random(p.shape) < p) * 1.0
    return xr.Dataset({"score": (("agent", "task", "run"), y)},
                      coords={"agent": list("abcdef"), "scaffold": ("agent", ["s1"] * 3 + ["s2"] * 3),
                              "tier": ("task", np.repeat(["easy", "hard"], 25))})  # fmt: skip


@pytest.fixture(scope="module")
def scaffold_fit():
    return fit_crossed_ml(_two_scaffolds(), "score ~ scaffold * tier + (1|task)", intervals="wald")


def test_ame_is_the_quadrature_of_the_fitted_model(scaffold_fit):
    fit = scaffold_fit
    b = fit.estimate.to_series()
    tau = float(fit.sd[0])
    ame = average_marginal_effects(fit, "scaffold", method="ml")
    # every cell counts once; half the tasks are hard
    ref = np.mean([
        _mean_p(b["Intercept"] + b["scaffold[s2]"] + h * (b["tier[hard]"] + b["scaffold[s2]:tier[hard]"]), tau)
        - _mean_p(b["Intercept"] + h * b["tier[hard]"], tau)
        for h in (0, 1)
    ])  # fmt: skip
    assert abs(float(ame.estimate.sel(contrast="s2 - s1")) - 100 * ref) < 1e-4
    by = average_marginal_effects(fit, "scaffold", by="tier", method="ml")
    ref_hard = _mean_p(b.sum() - 0 * b["Intercept"], tau) - _mean_p(b["Intercept"] + b["tier[hard]"], tau)
    assert abs(float(by.estimate.sel(by="hard", contrast="s2 - s1")) - 100 * ref_hard) < 1e-4
    assert ame.ci.attrs["ci_kind"] == "normal" and "points of success rate" in ame.scale
    assert "scaffold" in repr(ame) and set(ame.to_frame().columns) >= {"estimate", "lower", "upper"}


@pytest.mark.slow
def test_delta_method_se_matches_simulation_from_the_estimates(scaffold_fit):
    """SE of the AME: delta method vs the sd of the AME over 3000 parameter draws from
    N(params, vcov) (Monte Carlo error of an sd from 3000 draws ~1.3%; tolerance 8%).
    """
    from hierbench.freq._glmm._effects import predict_rows

    fit = scaffold_fit
    ame = average_marginal_effects(fit, "scaffold", method="ml")
    V = fit.vcov.values
    draws = np.random.default_rng(0).multivariate_normal(fit.params, V, 3000)
    d = fit.design
    X1 = d.matrix(d.frame.assign(scaffold="s2"))
    X0 = d.matrix(d.frame.assign(scaffold="s1"))
    marg = np.ones(1, bool)
    vals = [100 * (predict_rows(fit, x, X1, marg) - predict_rows(fit, x, X0, marg)).mean() for x in draws]
    assert abs(float(ame.standard_error[0]) / np.std(vals) - 1) < 0.08


@pytest.mark.slow
def test_numeric_variable_gives_the_average_derivative():
    data, _ = simulate_eval(n_agents=3, n_tasks=60, n_runs=2, rng=5)
    data = data.assign_coords(minutes=("task", np.geomspace(1, 500, 60)))
    fit = fit_crossed_ml(data, "score ~ np.log2(minutes) + (1|agent) + (1|task)", intervals="wald")
    ame = average_marginal_effects(fit, "minutes", method="ml")
    b0, b1 = fit.estimate.values
    tau = float(np.sqrt((fit.sd**2).sum()))
    x = np.log2(fit.design.frame["minutes"].to_numpy())
    h = 1e-4
    ref = np.mean([(_mean_p(b0 + b1 * np.log2(m + h), tau) - _mean_p(b0 + b1 * np.log2(m - h), tau)) / (2 * h)
                   for m in 2**x])  # fmt: skip
    assert abs(float(ame.estimate[0]) - 100 * ref) < 1e-3 * max(1.0, abs(100 * ref))
    assert ame.estimate.contrast.values.tolist() == ["d/d minutes"]


def test_agent_variance_splits_fixed_and_random_terms():
    rng = np.random.default_rng(3)
    sc, mo = np.repeat(["s1", "s2"], 4), np.tile(["m1", "m2", "m3", "m4"], 2)
    eta = np.where(sc == "s2", 1.0, 0.0) + np.array([-1.0, 0.0, 0.5, 1.0] * 2)
    y = rng.random((8, 80, 2)) < expit(eta)[:, None, None]
    ds = xr.Dataset({"score": (("agent", "task", "run"), y * 1.0)},
                    coords={"agent": [f"{s}/{m}" for s, m in zip(sc, mo, strict=True)],
                            "scaffold": ("agent", sc), "model": ("agent", mo)})  # fmt: skip
    fit = fit_crossed_ml(ds, "score ~ scaffold + (1|model) + (1|task)", intervals="wald")
    av = agent_variance(fit)
    b = float(fit.estimate.sel(coef="scaffold[s2]"))
    assert abs(float(av.estimate.sel(component="scaffold")) - np.var(np.where(sc == "s2", b, 0.0))) < 1e-12
    assert abs(float(av.estimate.sel(component="1|model")) - float(fit.sd.sel(component="1|model")) ** 2) < 1e-12
    assert abs(float(av.share.sum()) - 1) < 1e-12 and av.kind.values.tolist() == ["fixed", "random"]


@pytest.mark.slow
def test_fractional_mean_agrees_with_the_task_bootstrap():
    """Partial-credit scores (simulate_eval's continuous kind, run noise 0.8 on the logit):
    each agent's fractional-logit mean score agrees with the task-level bootstrap's mean
    within 0.75 of the bootstrap's standard error, and the interval widths within 35%.
    """
    data, _ = simulate_eval(n_agents=4, n_tasks=80, n_runs=4, score_kind="continuous", sd_run=0.8, rng=3)
    fit = fit_crossed_ml(data, "score ~ 0 + agent + (1|task) + (1|agent:task)", intervals="wald")
    assert fit.design.family == "fractional" and 0 < fit.dispersion < 1
    m = mean_response(fit)
    b = bootstrap_ci(data, n_resamples=4000, rng=1)
    boot_se = (b.ci.sel(ci_bound="upper") - b.ci.sel(ci_bound="lower")).values / (2 * 1.96)
    diff = m.estimate.values / 100 - b.estimate.sel(agent=m.estimate.group.values).values
    assert np.all(np.abs(diff) < 0.75 * boot_se)
    width = (m.ci.sel(ci_bound="upper") - m.ci.sel(ci_bound="lower")).values / 100
    assert np.all(np.abs(width / (2 * 1.96 * boot_se) - 1) < 0.35)


@pytest.mark.slow
def test_metr_continuous_scores_agree_with_the_task_bootstrap(shared_data):
    """METR's continuous scores, fractional logit with task and agent x task effects: each
    agent that ran every task has its mean score within one task-bootstrap standard error of
    the bootstrap's. An agent that ran a subset (davinci-002: 16 of 83 tasks) is compared
    within two: the model integrates over the task effects (a new task), the bootstrap
    averages that agent's own tasks.
    """
    from hierbench.data import load_metr

    ds = load_metr(shared_data, score="score")
    fit = fit_crossed_ml(ds, "score ~ 0 + agent + (1|task) + (1|agent:task)", intervals="wald")
    assert fit.converged and fit.design.family == "fractional"
    m = mean_response(fit)
    b = bootstrap_ci(ds, n_resamples=4000, rng=2)
    boot_se = (b.ci.sel(ci_bound="upper") - b.ci.sel(ci_bound="lower")).values / (2 * 1.96)
    diff = m.estimate.values / 100 - b.estimate.sel(agent=m.estimate.group.values).values
    every = (ds.score.notnull().any("run").sum("task") == ds.sizes["task"]).sel(agent=m.estimate.group.values).values
    z = np.abs(diff) / boot_se
    assert every.sum() == 7 and np.all(z[every] < 1), dict(zip(m.estimate.group.values, np.round(z, 2), strict=True))
    assert np.all(z < 2)


@pytest.fixture(scope="module")
def wine_fit(shared_data):
    """The wine judges' ordinal fit (rating ~ temp + contact + (1|judge)), made once for the two tests that read it."""
    from hierbench.data import from_records

    df = pd.read_csv(shared_data / "ordinal" / "wine.csv")
    df["grade"] = (df["rating"] - 1) / 4.0
    ds = from_records(df, agent="judge", task="bottle", score="grade", extra={"rating": "rating"},
                      task_coords=["temp", "contact"])  # fmt: skip
    return fit_crossed_ml(ds, "rating ~ temp + contact + (1|agent)", family="ordinal", intervals="wald")


@pytest.mark.slow
def test_ordinal_mean_grade_and_pass_at_threshold_on_wine(wine_fit):
    fit = wine_fit
    th = fit.thresholds.values
    b = fit.estimate.to_series()
    tau = float(fit.sd[0])
    # warm, with contact: P(rating >= 4) = E[expit(eta - theta_3)]
    eta = b["temp[warm]"] + b["contact[yes]"]
    ame = average_marginal_effects(fit, "temp", threshold=4, method="ml")
    share = mean_response(fit, by="temp", threshold=4)
    mg = mean_response(fit, by="temp")
    # by temp, rows are judges x bottles; judges (agent-level) at their modes, nothing integrated
    u = fit.random_effects["1|agent"].values
    f = fit.design.frame
    rows_warm = f[f.temp == "warm"]
    eta_r = b["temp[warm]"] + b["contact[yes]"] * (rows_warm.contact == "yes").to_numpy()
    eta_r = eta_r + u[fit.design.random[0].codes[(f.temp == "warm").to_numpy()]]
    ref_share = np.mean(expit(eta_r - th[2]))
    assert abs(float(share.estimate.sel(group="warm")) - 100 * ref_share) < 1e-6
    ref_mg = np.mean(1 + sum(expit(eta_r - t) for t in th))
    assert abs(float(mg.estimate.sel(group="warm")) - ref_mg) < 1e-6
    assert 1 <= float(mg.ci.sel(group="warm", ci_bound="lower")) and float(mg.ci.sel(group="warm", ci_bound="upper")) <= 5
    # the AME on the share graded >= 4 is population-averaged over the judge effect
    rows = f.contact == "yes"
    ref = np.mean([_mean_p(b["temp[warm]"] + c * b["contact[yes]"] - th[2], tau) - _mean_p(c * b["contact[yes]"] - th[2], tau)
                   for c in rows.to_numpy(float)])  # fmt: skip
    assert abs(float(ame.estimate[0]) - 100 * ref) < 1e-4
    assert not math.isnan(eta)


def test_reader_scale_functions_refuse_what_they_cannot_do(scaffold_fit):
    data, _ = simulate_eval(n_agents=2, n_tasks=20, n_runs=2, rng=0)
    crossed = fit_crossed_ml(data, intervals="wald")
    with pytest.raises(HierbenchError, match="must be a formula fit"):
        average_marginal_effects(crossed, "agent")
    with pytest.raises(HierbenchError, match=r"`variable` must be a variable of the fit's formula"):
        average_marginal_effects(scaffold_fit, "model")
    with pytest.raises(HierbenchError, match="`threshold` applies to an ordinal fit only"):
        average_marginal_effects(scaffold_fit, "scaffold", threshold=1)
    with pytest.raises(HierbenchError, match="no agent-level term"):
        agent_variance(fit_crossed_ml(data, "score ~ 1 + (1|task)", intervals="wald"))


def _bench():
    spec = importlib.util.spec_from_file_location("bench_ame_coverage", ROOT / "benchmarks" / "bench_ame_coverage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_ame_warns_when_its_interval_rests_on_few_agent_level_levels(scaffold_fit):
    """8 models in (1|model): the ML delta method treats their variance as known (the study
    measured 0.90 at nominal 0.95), so ``method="ml"`` says so. The default REML + containment
    t interval of the same effect does not warn; nor does an effect of a task feature, or a fit
    without an agent-level random term. Without (1|scaffold:model) nothing contains scaffold
    (normal quantiles on REML variances, unmeasured): that warns.
    """
    b = _bench()
    ds = b.simulate_leaderboard(b.leaderboard_design(60, 2026), np.random.default_rng(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_crossed_ml(ds, b.FORMULA, intervals="wald")
        no_cells = fit_crossed_ml(ds, "score ~ scaffold + tier + (1|model) + (1|task)", intervals="wald")
    with pytest.warns(FewLevelsWarning, match=r"\(1\|model\) 8 levels"):
        average_marginal_effects(fit, "scaffold", method="ml")
    with pytest.warns(FewLevelsWarning, match="no random term contains it"):
        iv = average_marginal_effects(no_cells, "scaffold")
    assert iv.ci.attrs["ci_kind"] == "normal" and math.isinf(float(iv.df[0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewLevelsWarning)
        ame = average_marginal_effects(fit, "scaffold")
        average_marginal_effects(fit, "tier")
        average_marginal_effects(scaffold_fit, "scaffold")
    assert ame.ci.attrs["ci_kind"] == "t" and float(ame.df[0]) == 12.0 and ame.method == "reml"
    with pytest.warns(FewLevelsWarning):
        ml = average_marginal_effects(fit, "scaffold", method="ml")
    assert (ame.standard_error > ml.standard_error).all()  # REML's variances are not shrunk


@pytest.mark.slow
def test_ame_intervals_cover_their_truth_on_a_simulated_leaderboard():
    """The benchmark's small board (6 scaffolds x 5 models, 18 combinations, containment df 8),
    150 tasks with a tier, one run per cell; 10 replicates x 5 scaffold contrasts, the default
    (REML + containment t) intervals and, on the same fits, the ML normal ones. The full study
    (benchmarks/bench_ame_coverage.py, 200 replicates of this design) measured 0.983 and 0.872.
    Monte Carlo sd at 10 replicates, from the study's replicate-level sd (the contrasts of one
    replicate are correlated): 0.023 (default), 0.055 (ML) and 0.049 for the paired gain, the
    default's coverage minus ML's on the same replicates (study 0.111; the pairs nest one way:
    ML never covered a truth the default missed). Resampling 10 of the study's replicates
    (benchmarks/results/ame_coverage_ml_rows_small.jsonl), the default falls below 0.90 with
    probability 2.5e-3 and the gain is 0 with probability 6e-3 (at the former 14 replicates 6e-4
    and 8e-4, 40% more time). Were the default to fall back to the ML intervals, the gain would
    be exactly 0 at any number of replicates; the ML coverage alone passes 0.90 with probability
    0.40 (0.34 at 14), so the level check could not tell them apart. Seed 7 (the first 10 of the
    former 14 replicates): 0.980, ML 0.920, gain 0.060.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = _bench().run(reps=10, n_tasks=150, seed=7, design_seed=2027, design_name="small")
    assert res["coverage_all"] >= 0.90, res
    assert res["gain_over_ml"] > 0, res
    assert res["n_not_converged"] == 0


@pytest.mark.slow
def test_ordinal_crossed_fit_with_judges_ragged_cells_and_a_rare_grade_recovers_the_truth():
    """Grades 1-5 from 8 agents (two scaffolds) x 80 tasks, 1-3 runs per cell each graded by
    one of 4 judges, the top grade rare (~3%). Known truth: thresholds (-1, 0.5, 2, 4.2),
    scaffold effect 0.8, sds agent 0.5, task 1.0, judge 0.4. The fit converges and every
    threshold and the scaffold effect lie within 3.5 standard errors of the truth (a false
    alarm has probability ~5e-4 per parameter).
    """
    rng = np.random.default_rng(26)
    A, T = 8, 80
    scaffold = np.repeat(["s1", "s2"], A // 2)
    th = np.array([-1.0, 0.5, 2.0, 4.2])
    u_a, u_t, u_j = rng.normal(0, 0.5, A), rng.normal(0, 1.0, T), rng.normal(0, 0.4, 4)
    runs = rng.integers(1, 4, (A, T))
    grade = np.full((A, T, 3), np.nan)
    judge = np.full((A, T, 3), np.nan)
    for a, t in np.ndindex(A, T):
        for r in range(runs[a, t]):
            j = rng.integers(0, 4)
            eta = 0.8 * (scaffold[a] == "s2") + u_a[a] + u_t[t] + u_j[j]
            cum = expit(th - eta)
            grade[a, t, r] = 1 + np.searchsorted(cum, rng.random())
            judge[a, t, r] = j
    ds = xr.Dataset({"score": (("agent", "task", "run"), (grade - 1) / 4), "grade": (("agent", "task", "run"), grade),
                     "judge": (("agent", "task", "run"), judge)},
                    coords={"agent": [f"a{i}" for i in range(A)], "task": [f"t{i}" for i in range(T)],
                            "scaffold": ("agent", scaffold)})  # fmt: skip
    assert 0.005 < float((grade == 5).sum() / np.isfinite(grade).sum()) < 0.06
    fit = fit_crossed_ml(ds, "grade ~ scaffold + (1|agent) + (1|task) + (1|judge)", family="ordinal", intervals="wald")
    assert fit.converged and fit.design.row_level == "run"
    z = stats.norm.ppf(0.975)
    th_se = (fit.thresholds_ci.sel(ci_bound="upper") - fit.thresholds).values / z
    assert np.all(np.abs(fit.thresholds.values - th) < 3.5 * th_se)
    assert abs(float(fit.estimate.sel(coef="scaffold[s2]")) - 0.8) < 3.5 * float(fit.standard_error[0])


# --------------------------------------------------------------------------- small-sample intervals


def _crossing(combos, n_tasks=12, n_runs=2, seed=0, size=None):
    """Agents = (scaffold, model) combinations; outcomes from a plain logistic model."""
    rng = np.random.default_rng(seed)
    s = np.array([c[0] for c in combos])
    m = np.array([c[1] for c in combos])
    u = rng.normal(0, 1.0, m.max() + 1)[m] + 0.3 * s
    eta = u[:, None, None] + rng.normal(0, 0.8, n_tasks)[None, :, None]
    y = (rng.random((len(combos), n_tasks, n_runs)) < expit(eta)) * 1.0
    coords = {"agent": [f"S{a}/M{b}" for a, b in combos], "scaffold": ("agent", [f"S{a}" for a in s]),
              "model": ("agent", [f"M{b}" for b in m]), "tier": ("task", np.arange(n_tasks) % 2)}  # fmt: skip
    if size is not None:
        coords["size"] = ("agent", np.asarray(size, float)[m])
    return xr.Dataset({"score": (("agent", "task", "run"), y)}, coords=coords)


def test_containment_df_are_the_classical_mixed_anova_df():
    """Hand counts. A full S x M crossing with (1|scaffold:model): the F test of the scaffold
    main effect in the two-way mixed ANOVA uses the interaction's (S - 1)(M - 1) df. 25 of the
    48 combinations (connected): cells - S - M + 1 = 12. A model-level covariate under
    (1|model): models - 2 (intercept and slope estimated between models). A task feature
    under (1|task): tasks - 2. Scaffold under (1|model) only: not contained, infinite.
    """
    from hierbench.data import model_design
    from hierbench.freq._glmm._smallsample import containment_df

    full = _crossing([(s, m) for s in range(3) for m in range(4)])
    f = "score ~ scaffold + tier + (1|model) + (1|scaffold:model) + (1|task)"
    assert containment_df(model_design(f, full), "scaffold") == (6.0, "1|scaffold:model")
    assert containment_df(model_design(f, full), "tier") == (10.0, "1|task")
    board = _crossing(_bench().leaderboard_design(12, 2026)["combos"])
    assert containment_df(model_design(f, board), "scaffold") == (12.0, "1|scaffold:model")
    nested = _crossing([(0, m) for m in range(7)], size=[1, 2, 4, 8, 16, 32, 64])
    assert containment_df(model_design("score ~ np.log2(size) + (1|model) + (1|task)", nested), "size") == (5.0, "1|model")
    df, term = containment_df(model_design("score ~ scaffold + (1|model) + (1|task)", full), "scaffold")
    assert math.isinf(df) and term is None


def _laplace_reference(X, Zc, y, n, log_sd, restricted):
    """The Laplace log-likelihood of a logistic GLMM with one random intercept, written out.

    Restricted: the joint mode of (beta, u) and the log determinant of the joint curvature
    (fixed effects integrated out under a flat prior); else beta profiled out by scipy.
    """
    from scipy import optimize

    sd = math.exp(log_sd)
    p, q = X.shape[1], Zc.shape[1]

    def laplace(beta_fixed):
        M = Zc if beta_fixed is not None else np.hstack([X, Zc])
        off = X @ beta_fixed if beta_fixed is not None else 0.0
        k = M.shape[1] - q
        th = np.zeros(M.shape[1])
        for _ in range(100):
            mu = expit(off + M @ th)
            prec = np.r_[np.zeros(k), np.full(q, sd**-2)]
            H = M.T @ (M * (n * mu * (1 - mu))[:, None]) + np.diag(prec)
            step = np.linalg.solve(H, M.T @ (y - n * mu) - prec * th)
            th += step
            if np.abs(step).max() < 1e-12:
                break
        u = th[k:]
        ll = stats.binom.logpmf(y, n, expit(off + M @ th)).sum() - 0.5 * u @ u / sd**2 - q * math.log(sd)
        return ll - 0.5 * np.linalg.slogdet(H)[1], th, H

    if restricted:
        return laplace(None)
    res = optimize.minimize(lambda b: -laplace(b)[0], np.zeros(p), method="BFGS", options={"gtol": 1e-9})
    return -res.fun, res.x, None


def test_reml_matches_a_laplace_restricted_likelihood_written_out():
    """Reference: the restricted (fixed effects integrated out, flat prior) and the ordinary
    Laplace log-likelihoods of a logistic GLMM with one random intercept, coded directly
    (Newton for the joint mode, numpy's slogdet) and maximised over log sd by scipy. The ML
    sd checks the reference against fit_crossed_ml; the REML sd, the REML fixed effects, their
    covariance (inverse joint curvature) and the log sd's variance check restricted_fit.
    """
    from scipy import optimize

    from hierbench.freq._glmm._smallsample import restricted_fit

    ds = _crossing([(s, m) for s in range(2) for m in range(5)], n_tasks=10, n_runs=3, seed=4)
    fit = fit_crossed_ml(ds, "score ~ scaffold + (1|model)", intervals="wald")
    d = fit.design
    Zc = np.eye(d.random[0].levels.size)[d.random[0].codes]
    args = (d.X, Zc, d.y, d.n)
    for restricted, sd in ((False, float(fit.sd[0])), (True, None)):
        opt = optimize.minimize_scalar(lambda t, r=restricted: -_laplace_reference(*args, t, r)[0],
                                       bounds=(-3, 2), method="bounded", options={"xatol": 1e-7})  # fmt: skip
        if not restricted:
            assert abs(math.exp(opt.x) / sd - 1) < 1e-3
    reml = restricted_fit(fit)
    p = d.X.shape[1]
    assert reml.converged and abs(reml.params[p] - opt.x) < 1e-3 and reml.params[p] > fit.params[p]
    _, th, H = _laplace_reference(*args, opt.x, True)
    np.testing.assert_allclose(reml.params[:p], th[:p], atol=1e-3)
    np.testing.assert_allclose(reml.vcov[:p, :p], np.linalg.inv(H)[:p, :p], rtol=5e-3)
    h = 1e-3
    curv = [-_laplace_reference(*args, opt.x + e, True)[0] for e in (-h, 0.0, h)]
    var_log_sd = h**2 / (curv[0] - 2 * curv[1] + curv[2])
    assert abs(reml.vcov[p, p] / var_log_sd - 1) < 0.02


@pytest.mark.slow
def test_reml_covariance_of_an_ordinal_fit_keeps_the_thresholds_tie_to_the_effects(wine_fit):
    """Wine (9 judges): REML moves the judge sd little (1.13 -> 1.18), so the REML covariance of
    (beta, thresholds), the joint mode's curvature plus the effects' shift with the thresholds,
    must agree with the ML fit's inverse observed information (finite differences of its
    analytic gradient, another computation): standard errors within 5%, the beta-threshold
    correlations within 0.05. Dropping the shift would make them disagree grossly.
    """
    from hierbench.freq._glmm._smallsample import restricted_fit

    fit = wine_fit
    reml = restricted_fit(fit)
    idx = [0, 1, 3, 4, 5, 6]  # beta (2) and the threshold parameters (4); the log sd apart
    V_ml, V_re = fit.vcov.values[np.ix_(idx, idx)], reml.vcov[np.ix_(idx, idx)]
    np.testing.assert_allclose(np.sqrt(np.diag(V_re)), np.sqrt(np.diag(V_ml)), rtol=0.05)
    corr = [V / np.sqrt(np.outer(np.diag(V), np.diag(V))) for V in (V_ml, V_re)]
    np.testing.assert_allclose(corr[1], corr[0], atol=0.05)
    assert reml.params[2] > fit.params[2]  # the judges' log sd: REML's is larger
