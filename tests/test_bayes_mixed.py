"""The Bayesian formula models (hierbench.bayes.build_mixed, build_horizon) and their [0, 1]-score family.

Independent references: scipy's adaptive quadrature of the [0, 1]-score density (it integrates to 1 and
its mean is the closed form the metrics use); R ``ordinal::clmm`` on the wine data (the shared
reference_values.csv); the data's own means and numpy's arithmetic on a simulated leaderboard with a
stated Monte Carlo tolerance; the simulation's known horizons. Sampling tests are small and marked slow.
"""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pandas as pd
import pytensor.tensor as pt
import pytest
import xarray as xr
from scipy import integrate

from hierbench.bayes._models._unit_interval import draw_scores
from hierbench.bayes._models._unit_interval import tilt_logp
from hierbench.metrics._mixed import unit_interval_mean

bayes = pytest.importorskip("hierbench.bayes")


@functools.cache
def _logp():
    from pytensor import function

    v, e, w = pt.dscalar(), pt.dscalar(), pt.dscalar()
    return function([v, e, w], tilt_logp(v, e, w))


def _density(eta: float, w: float):
    """``(p0, p1, f(y))`` of the [0, 1]-score family at ``eta`` with interior weight ``w``, from tilt_logp."""
    logp = _logp()
    return np.exp(logp(0.0, eta, w)), np.exp(logp(1.0, eta, w)), lambda y: np.exp(logp(y, eta, w))


@pytest.mark.parametrize(("eta", "w"), [(0.0, 2.0), (1.3, 0.5), (-2.2, 7.0), (0.4, 0.0), (3e-5, 1.0)])
def test_unit_interval_family_is_a_proper_density_with_the_stated_mean(eta, w):
    p0, p1, f = _density(eta, w)
    inside = integrate.quad(f, 0, 1, epsabs=1e-12)[0] if w > 0 else 0.0
    assert abs(p0 + p1 + inside - 1.0) < 1e-9
    mean = p1 + (integrate.quad(lambda y: y * f(y), 0, 1, epsabs=1e-12)[0] if w > 0 else 0.0)
    assert abs(float(unit_interval_mean(np.array(eta), np.array(w))) - mean) < 1e-8
    # draws: 200k runs, the mean's Monte Carlo sd is below 0.5 / sqrt(2e5) = 0.0011; 5 sd
    s = draw_scores(np.full(200_000, eta), w, np.random.default_rng(0))
    assert abs(s.mean() - mean) < 0.0056
    assert abs(np.mean(s == 0.0) - p0) < 0.0056 and abs(np.mean(s == 1.0) - p1) < 0.0056


def test_a_pass_fail_task_is_the_bernoulli_on_the_logit_scale():
    p0, p1, _ = _density(0.7, 0.0)
    assert abs(p1 - 1 / (1 + np.exp(-0.7))) < 1e-12 and abs(p0 + p1 - 1) < 1e-12


# --------------------------------------------------------------------------- the builder, without sampling


def _board(n_runs: int = 3, seed: int = 0, n_tasks: int = 30) -> tuple[xr.Dataset, dict]:
    """2 scaffolds x 3 models; logit p = -0.3 + 0.9 [s2] + model + task + cell; known truth."""
    rng = np.random.default_rng(seed)
    sc, mo = np.repeat(["s1", "s2"], 3), np.tile(["m1", "m2", "m3"], 2)
    truth = {"scaffold": 0.9, "model": np.array([-0.6, 0.1, 0.7]), "task": rng.normal(0, 1.2, n_tasks)}
    eta = (-0.3 + truth["scaffold"] * (sc == "s2") + truth["model"][[int(m[1]) - 1 for m in mo]])[:, None] + truth["task"]
    eta = eta + rng.normal(0, 0.3, eta.shape)
    y = (rng.random((*eta.shape, n_runs)) < 1 / (1 + np.exp(-eta[..., None]))).astype(float)
    ds = xr.Dataset({"score": (("agent", "task", "run"), y)},
                    coords={"agent": [f"{s}/{m}" for s, m in zip(sc, mo, strict=True)],
                            "task": [f"t{i}" for i in range(n_tasks)], "scaffold": ("agent", sc), "model": ("agent", mo),
                            "tier": ("task", ["easy", "hard"] * (n_tasks // 2))})  # fmt: skip
    return ds, truth


def test_the_builder_refuses_and_warns_by_the_ml_half_rules():
    from hierbench.data import ConfoundedTermWarning
    from hierbench.data import FormulaError

    ds, _ = _board(n_runs=1)
    with pytest.raises(FormulaError, match=r"uses \['cutoff'\]"):
        bayes.build_mixed(ds, "score ~ cutoff + (1|task)")
    lone = ds.assign_coords(model=("agent", ["m1", "m2", "m3", "m1", "m2", "m2"]))
    with pytest.warns(ConfoundedTermWarning, match=r"1 of 3 model levels occur with one scaffold only, e.g. \[.m3.\]"):
        bayes.build_mixed(lone, "score ~ scaffold + (1|model) + (1|scaffold:model) + (1|task)")


def test_the_default_formula_is_the_crossed_model_and_partial_credit_gets_the_unit_interval_family():
    ds, _ = _board()
    m = bayes.build_mixed(ds)
    assert m.hierbench["options"]["formula"] == "score ~ 0 + agent + (1|task) + (1|agent:task)"
    assert m.hierbench["design"].family == "binomial"
    part = ds.assign(score=ds.score * 0.5 + 0.25 * (ds.score.run == 0))
    mp = bayes.build_mixed(part)
    assert mp.hierbench["design"].family == "fractional" and "interior" in mp.named_vars


def test_both_halves_name_the_default_formulas_terms_alike():
    """The default formula fitted by ML (the crossed model's quadrature) names its abilities and scales
    as the Bayesian build_mixed does (formulae's ``agent[a]``, the terms ``1|task``, ``1|agent:task``), so
    compare.side_by_side pairs them row by row; each renamed ability is that agent's own crossed-fit value.
    """
    import pymc as pm

    from hierbench.compare import side_by_side
    from hierbench.data import DEFAULT_FORMULA
    from hierbench.freq import fit_crossed_ml
    from hierbench.metrics import posterior_summary

    ds, _ = _board()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a small board: sd_agent_task may sit at the boundary
        ml = fit_crossed_ml(ds, DEFAULT_FORMULA, intervals="wald")
        plain = fit_crossed_ml(ds, intervals="wald")
    m = bayes.build_mixed(ds)
    assert ml.estimate.dims == ("coef",) and ml.estimate.coef.values.tolist() == list(m.coords["coef"])
    assert ml.sd.component.values.tolist() == list(m.coords["component"]) == ["1|task", "1|agent:task"]
    for a in ds.agent.values:  # formulae's documented label of a level of a factor: name[level]
        assert float(ml.estimate.sel(coef=f"agent[{a}]")) == float(plain.estimate.sel(agent=a))
    np.testing.assert_array_equal(ml.sd.values, plain.sd.values)
    prior = pm.sample_prior_predictive(draws=40, model=m, random_seed=1, var_names=["beta", "sd"])["prior"]
    for bayes_half, ml_half, dim in ((prior["beta"], ml, "coef"), (prior["sd"], ml.variance_components, "component")):
        # prior draws carry no scale attrs (a fit's posterior does): both halves are logit-scale terms
        table = side_by_side({"bayes": posterior_summary(bayes_half), "ml": ml_half}, allow_mismatch=True)
        assert table[dim].size == bayes_half[dim].size and np.isfinite(table["estimate"].values).all()


def test_the_horizon_builders_own_choices_are_not_labelled_as_the_users():
    """build_horizon writes its formula by its rules: describe shows every choice as decided, none as [user]."""
    rng = np.random.default_rng(0)
    mins = np.geomspace(1, 480, 20)
    p = 1 / (1 + np.exp(-(3.0 - 0.6 * np.log2(mins))))
    y = (rng.random((2, 20, 3)) < p[None, :, None]) * 1.0
    ds = xr.Dataset({"score": (("agent", "task", "run"), y)}, coords={"agent": ["a", "b"], "human_minutes": ("task", mins)})
    m = bayes.build_horizon(ds)
    decisions = m.hierbench["structure"]["decisions"]
    assert {k: v["source"] for k, v in decisions.items() if v.get("source") == "user"} == {}
    assert {"formula", "family", "clusters", "agent_task"} <= set(decisions)
    assert "[user]" not in bayes.describe(m)
    # the same formula written by a user is the user's
    mine = bayes.build_mixed(ds.assign_coords(log2_minutes=("task", np.log2(mins))), m.hierbench["options"]["formula"])
    assert mine.hierbench["structure"]["decisions"]["formula"]["source"] == "user"


def _horizon_board(y_cells: np.ndarray) -> xr.Dataset:
    """2 agents x 6 tasks (1-32 minutes) x 3 runs; ``y_cells[a, t]`` runs of the cell succeed."""
    mins = 2.0 ** np.arange(6)
    y = (np.arange(3)[None, None, :] < y_cells[..., None]) * 1.0
    return xr.Dataset({"score": (("agent", "task", "run"), y)},
                      coords={"agent": ["a", "b"], "task": [f"t{i}" for i in range(6)], "human_minutes": ("task", mins)})  # fmt: skip


def test_separated_binary_data_get_the_smaller_step():
    """Separation by construction: each agent has its own intercept and slope, so a cell with both
    outcomes pins ``a + b x = 0`` for its agent; two such cells at different lengths leave that agent
    no direction (not separated). An agent that failed every run has one (its intercept down), and so
    has an agent whose successes all lie on the shorter tasks (a falling line through the gap).
    """
    from hierbench.bayes._models._formula_model import separated_coefficients

    mixed = np.array([[3, 2, 1, 2, 1, 0], [3, 3, 2, 1, 1, 0]])
    m = bayes.build_horizon(_horizon_board(mixed))
    assert separated_coefficients(m.hierbench["design"]) == []
    assert m.hierbench["sampler_defaults"]["target_accept"] == 0.8
    failed = mixed * np.array([[1], [0]])  # agent b: 0 of 18 runs
    m = bayes.build_horizon(_horizon_board(failed))
    assert "agent[b]" in separated_coefficients(m.hierbench["design"])
    assert not any(c.startswith("agent[a]") for c in separated_coefficients(m.hierbench["design"]))
    dec = m.hierbench["structure"]["decisions"]["target_accept"]
    assert (dec["choice"], m.hierbench["sampler_defaults"]["target_accept"]) == (0.95, 0.95)
    assert "separate" in dec["reason"]
    step = np.array([[3, 2, 1, 2, 1, 0], [3, 3, 3, 0, 0, 0]])  # agent b: short tasks solved, long ones not
    got = separated_coefficients(bayes.build_horizon(_horizon_board(step)).hierbench["design"])
    assert {"agent[b]", "agent[b]:center(log2_minutes)"} <= set(got)
    # graded scores are read at the ends of their scale (audit L, finding 2): agent b gave the lowest
    # grade on every run, so it is separated as its failures were; with both grades it is not
    graded = _horizon_board(failed).assign(grade=lambda d: d["score"] + 1.0)
    assert separated_coefficients(bayes.build_mixed(graded, "grade ~ agent + (1|task)", levels=[1.0, 2.0]).hierbench["design"]) == ["agent[b]"]
    both = _horizon_board(mixed).assign(grade=lambda d: d["score"] + 1.0)
    assert separated_coefficients(bayes.build_mixed(both, "grade ~ agent + (1|task)", levels=[1.0, 2.0]).hierbench["design"]) == []


@pytest.mark.slow
def test_prior_predictive_thresholds_are_ordered_order_statistics():
    """Forward draws of an ordinal model respect the order: every prior threshold vector increases, and
    the thresholds are the order statistics of 4 iid N(0, 5) draws (the task term's absorbed mean shifts
    the sampled thresholds' prior and moves them back: their law does not depend on it), whose means come
    from scipy's quadrature of the order-statistic densities. 4000 draws: the
    Monte Carlo sd of each mean is at most 5 x 0.75 / sqrt(4000) = 0.06; tolerance 0.3 (5 sd).
    The thresholds and the grades come from one forward pass (one compile, not two).
    """
    import pymc as pm
    from scipy import stats

    rng = np.random.default_rng(3)
    grades = rng.integers(1, 6, (4, 6, 2)).astype(float)
    ds = xr.Dataset({"rating": (("agent", "task", "run"), grades)},
                    coords={"agent": list("abcd"), "temp": ("agent", ["cold", "warm"] * 2)})  # fmt: skip
    m = bayes.build_mixed(ds, "rating ~ temp + (1|task)", family="ordinal")
    prior = pm.sample_prior_predictive(draws=4000, model=m, random_seed=5, var_names=["thresholds", "y"])
    th = prior["prior"]["thresholds"].values.reshape(-1, 4)
    assert (np.diff(th, axis=1) > 0).all()
    gc = m.hierbench["design"].grade_counts
    y = prior["prior_predictive"]["y"].values
    assert (y.reshape(4000, *gc.shape).sum(-1) == gc.sum(-1)).all()  # grades drawn from valid probabilities
    n, sd = 4, 5.0

    def order_mean(r: int) -> float:  # E[X_(r)] of n iid N(0, sd)
        dens = lambda x: x * stats.norm.pdf(x, 0, sd) * stats.norm.cdf(x, 0, sd) ** (r - 1) * stats.norm.sf(x, 0, sd) ** (n - r)  # noqa: E731
        return float(math.factorial(n) / (math.factorial(r - 1) * math.factorial(n - r)) * integrate.quad(dens, -60, 60)[0])

    want = [order_mean(r) for r in range(1, n + 1)]
    np.testing.assert_allclose(th.mean(0), want, atol=0.3)


def test_describe_says_the_ordinal_thresholds_hold_the_intercept():
    """The audit: describe() printed "intercept: True - dropped" for an ordinal fit, which reads as a
    contradiction. The model has no intercept coefficient (its design's columns are temp's alone: the
    data's one contrast), and describe says where the intercept went.
    """
    grades = np.array([1, 2, 3, 4, 5, 3, 2, 4] * 3, dtype=float).reshape(4, 6, 1)
    ds = xr.Dataset({"rating": (("agent", "task", "run"), grades)},
                    coords={"agent": list("abcd"), "temp": ("agent", ["cold", "warm"] * 2)})  # fmt: skip
    m = bayes.build_mixed(ds, "rating ~ temp + (1|task)", family="ordinal")
    assert m.hierbench["design"].X.shape[1] == 1  # temp[warm] only: no intercept column
    line = next(r for r in bayes.describe(m).splitlines() if r.strip().startswith("intercept:"))
    assert line.strip().startswith("intercept: 'held by the thresholds'") and "True" not in line
    assert "thresholds (cutpoints) are the intercept" in line


def test_levels_get_the_wide_prior_and_differences_the_narrow_one():
    """``0 + agent + tier``: each agent's coefficient is a level (the columns code the factor in full)
    and gets ``beta_level``'s Normal(0, 10); the tier's contrast gets ``beta``'s Normal(0, 2.5); with an
    intercept the intercept is the level and the agents' contrasts are differences. Checked on 4000
    prior draws of ``beta`` (through the QR rotation the model samples in): the Monte Carlo sd of a
    sample sd is sigma / sqrt(2 x 4000), 1.1% of sigma; tolerance 5%.
    """
    import pymc as pm

    from hierbench.bayes import MIXED_PRIORS

    rng = np.random.default_rng(4)
    y = (rng.random((4, 8, 2)) < 0.5) * 1.0
    ds = xr.Dataset({"score": (("agent", "task", "run"), y)},
                    coords={"agent": list("abcd"), "tier": ("task", ["easy", "hard"] * 4)})  # fmt: skip
    wide, narrow = MIXED_PRIORS["beta_level"]["sigma"], MIXED_PRIORS["beta"]["sigma"]
    for formula, want in (("score ~ 0 + agent + tier + (1|task)", {"agent[a]": wide, "agent[d]": wide, "tier[hard]": narrow}),
                          ("score ~ 1 + agent + (1|task)", {"Intercept": wide, "agent[b]": narrow})):  # fmt: skip
        m = bayes.build_mixed(ds, formula)
        beta = pm.sample_prior_predictive(draws=4000, model=m, random_seed=2, var_names=["beta"])["prior"]["beta"]
        sd = beta.std(("chain", "draw")).to_series()
        for coef, sigma in want.items():
            assert sd[coef] == pytest.approx(sigma, rel=0.05), (formula, coef)


# --------------------------------------------------------------------------- sampling (small)

_SMALL = {"draws": 300, "tune": 300, "chains": 2, "progress": False}


@pytest.mark.slow
def test_wine_grades_agree_with_clmm_within_the_posterior_sd(shared_data):
    """R ordinal::clmm(rating ~ temp + contact + (1|judge)) on the wine data (reference_values.csv)."""
    from hierbench.data import from_records
    from hierbench.metrics import graded_pass_hat_k
    from hierbench.metrics import mean_response

    df = pd.read_csv(shared_data / "ordinal" / "wine.csv")
    df["grade"], df["treatment"] = (df["rating"] - 1) / 4.0, df["temp"] + "/" + df["contact"]
    ds = from_records(df, agent="treatment", task="bottle", score="grade", extra={"rating": "rating", "judge": "judge"},
                      agent_coords=["temp", "contact"])  # fmt: skip
    m = bayes.build_mixed(ds, "rating ~ temp + contact + (1|judge)", family="ordinal")
    fit = bayes.fit(m, rng=11, **_SMALL)
    post = fit.posterior
    clmm = {"temp[warm]": 3.0629966560421, "contact[yes]": 1.83488493779128}
    for coef, want in clmm.items():
        b = post["beta"].sel(coef=coef)
        assert abs(float(b.mean()) - want) < float(b.std())
    th = post["thresholds"]
    want_th = [-1.62366694779619, 1.51336520227968, 4.22852671695733, 6.08877259115472]
    assert (np.abs(th.mean(("chain", "draw")).values - want_th) < th.std(("chain", "draw")).values).all()
    assert int(fit.sample_stats["diverging"].sum()) == 0
    # reader's scale: the warm/contact treatment grades higher than cold/no, in grades and as pass^k
    mean = mean_response(fit, m)
    assert float(mean.estimate.sel(group="warm/yes")) > float(mean.estimate.sel(group="cold/no")) + 1
    pk = graded_pass_hat_k(fit, m, threshold=4, k=[1, 3])
    assert (pk.estimate.sel(k=3) <= pk.estimate.sel(k=1)).all()


@pytest.mark.slow
def test_scaffold_effect_in_points_agrees_with_the_ml_half_and_holds_the_truth():
    from hierbench.freq import average_marginal_effects as ml_ame
    from hierbench.freq import fit_crossed_ml
    from hierbench.metrics import agent_variance
    from hierbench.metrics import average_marginal_effects

    ds, truth = _board(seed=3)
    f = "score ~ scaffold + (1|model) + (1|task) + (1|agent:task)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 3 models: their sd is weakly identified (the hint says so)
        m = bayes.build_mixed(ds, f)
        fit = bayes.fit(m, rng=5, **_SMALL)
    ame = average_marginal_effects(fit, m, "scaffold")
    ml = ml_ame(fit_crossed_ml(ds, f, intervals="wald"), "scaffold")
    assert ame.estimate.contrast.values.tolist() == ml.estimate.contrast.values.tolist() == ["s2 - s1"]
    assert abs(float(ame.estimate[0]) - float(ml.estimate[0])) < float(ame.posterior_sd[0])
    lo, hi = fit.posterior["beta"].sel(coef="scaffold[s2]").quantile([0.025, 0.975]).values
    assert lo < truth["scaffold"] < hi
    var = agent_variance(fit, m)
    assert var.estimate.component.values.tolist() == ["scaffold", "1|model"]


@pytest.mark.slow
def test_bayesian_horizons_hold_the_simulated_truth_and_pair_with_metr_method():
    """Logit p = a_i - 0.5 log2(minutes) + task effect: the 50% horizon is 2 ** (a_i / 0.5) exactly
    (a symmetric task distribution leaves the 50% point where the line crosses 0).
    """
    from hierbench import freq
    from hierbench.compare import side_by_side
    from hierbench.metrics import doubling_time
    from hierbench.metrics import time_horizon

    rng = np.random.default_rng(12)
    mins = np.geomspace(1, 480, 40)
    a, b = np.array([2.0, 3.0, 4.0]), -0.5
    eta = a[:, None] + b * np.log2(mins) + rng.normal(0, 0.5, 40)
    y = (rng.random((3, 40, 4)) < 1 / (1 + np.exp(-eta[..., None]))) * 1.0
    ds = xr.Dataset({"score": (("agent", "task", "run"), y)},
                    coords={"agent": ["a", "b", "c"], "task": [f"t{i}" for i in range(40)], "human_minutes": ("task", mins),
                            "cluster": ("task", [f"f{i // 2}" for i in range(40)])})  # fmt: skip
    m = bayes.build_horizon(ds, clusters=False)
    fit = bayes.fit(m, rng=13, **_SMALL)
    h = time_horizon(fit, m, success=(0.5, 0.8))
    truth = 2 ** (a / -b)
    lo, hi = h.ci.sel(success=0.5, ci_bound="lower").values, h.ci.sel(success=0.5, ci_bound="upper").values
    assert ((lo < truth) & (truth < hi)).all(), (lo, truth, hi)
    assert (h.estimate.sel(success=0.8) < h.estimate.sel(success=0.5)).all()
    dates = {"a": "2023-01-01", "b": "2023-07-01", "c": "2024-01-01"}
    dt = doubling_time(h, dates)  # truth: 2 doublings a half year -> about 91 days
    assert float(dt.ci.sel(ci_bound="lower")) < 365.25 / 4 < float(dt.ci.sel(ci_bound="upper"))
    ml = freq.time_horizon(ds, n_resamples=50, rng=14)
    table = side_by_side({"bayes": h, "metr": ml})
    assert table.estimator.values.tolist() == ["bayes", "metr"] and table.sizes["agent"] == 3


@pytest.mark.slow
def test_horizon_default_prior_leaves_the_agents_common_level_to_the_data():
    """Weak agents (logit -3 at the mean length) on 30 tasks of sd 3: the data know the agents' common
    level only to about +-0.6 logit, so independent Normal(0, 2.5) priors on 8 intercepts (together a
    Normal(0, 0.9) on their mean) pulled every intercept 2 posterior sds from the maximum-likelihood fit
    of the same formula (measured when the default was changed). The default must agree with ML within
    one posterior sd, the issue's rule for the Bayesian half against its ML counterpart.
    """
    from hierbench.freq import fit_crossed_ml

    rng = np.random.default_rng(21)
    A, T, R = 8, 30, 4
    mins = np.geomspace(2, 960, T)
    x = np.log2(mins)
    eta = rng.normal(-3.0, 0.5, A)[:, None] - 0.8 * (x - x.mean()) + rng.normal(0, 3.0, T)
    y = (rng.random((A, T, R)) < 1 / (1 + np.exp(-eta[..., None]))) * 1.0
    ds = xr.Dataset({"score": (("agent", "task", "run"), y)},
                    coords={"agent": [f"a{i}" for i in range(A)], "task": [f"t{i}" for i in range(T)],
                            "human_minutes": ("task", mins)})  # fmt: skip
    m = bayes.build_horizon(ds, clusters=False)
    formula = m.hierbench["options"]["formula"]
    assert "center(log2_minutes)" in formula
    fit = bayes.fit(m, rng=3, **_SMALL)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the agent x task sd is estimated at zero here (no such effect simulated)
        ml = fit_crossed_ml(ds.assign_coords(log2_minutes=("task", x)), formula, intervals="wald").estimate.to_series()
    post = fit.posterior["beta"]
    mean, sd = post.mean(("chain", "draw")).to_series(), post.std(("chain", "draw")).to_series()
    gap = ((mean - ml[mean.index]).abs() / sd).max()
    assert gap < 1.0, ((mean - ml[mean.index]) / sd).round(2).to_dict()


def test_a_formula_without_a_random_term_is_refused_by_name():
    from hierbench import HierbenchError
    from hierbench.bayes import build_mixed
    from hierbench.testing import simulate_eval

    data, _ = simulate_eval(3, 20, 2, rng=0)
    with pytest.raises(HierbenchError, match=r"'score ~ 0 \+ agent' has no random term.*\(1\|task\)"):
        build_mixed(data, "score ~ 0 + agent")


@pytest.mark.slow  # one small fractional fit
def test_an_agent_near_zero_keeps_its_mean_score_under_the_default_prior():
    """Scores in [0, 1] drawn from the model's own family: 6 agents at logits -9, -1, 0, 0.5, 1, 2 on the
    typical task, 30 tasks of sd 2.5, 3 runs. The weak agent's posterior mean score over its tasks lies
    within one posterior sd of its observed mean (the task bootstrap's estimand). Under the former
    Normal(0, 2.5) prior on the agents' coefficients it came out 0.99 points above (z = 2.1, this seed):
    a logit of -9 is far in that prior's tail (METR's davinci-002 the same way).
    """
    from hierbench.metrics import mean_response

    gen = np.random.default_rng(1)
    eta = np.array([-9.0, -1.0, 0.0, 0.5, 1.0, 2.0])[:, None, None] + gen.normal(0, 2.5, 30)[None, :, None]
    scores = draw_scores(np.broadcast_to(eta, (6, 30, 3)), 1.0, gen)
    ds = xr.Dataset({"score": (("agent", "task", "run"), scores)},
                    coords={"agent": [f"a{i}" for i in range(6)], "task": [f"t{j}" for j in range(30)]})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = bayes.build_mixed(ds)
        fit = bayes.fit(model, draws=300, tune=300, chains=2, rng=1, progress=False)
    res = mean_response(fit, model, tasks="observed")
    observed = 100 * ds["score"].mean(("task", "run"))
    z = (res.estimate - observed.values) / res.posterior_sd
    assert abs(float(z.sel(group="a0"))) < 1.0 and float(np.abs(z).max()) < 2.5


def _nested_board(n_tasks: int = 40, seed: int = 0) -> xr.Dataset:
    """8 models under 4 scaffolds, 16 of the 32 combinations, one binary run per cell (a leaderboard's shape)."""
    rng = np.random.default_rng(seed)
    combos = [(s, (2 * s + k) % 8) for s in range(4) for k in range(4)]  # every model under 2 scaffolds
    eta = (rng.normal(0, 0.8, 8)[[m for _, m in combos]] + rng.normal(0, 0.3, len(combos)))[:, None]
    eta = eta + rng.normal(0, 1.2, n_tasks)
    y = (rng.random((len(combos), n_tasks, 1)) < 1 / (1 + np.exp(-eta[..., None]))) * 1.0
    return xr.Dataset({"score": (("agent", "task", "run"), y)},
                      coords={"agent": [f"S{s}/M{m}" for s, m in combos], "task": [f"t{j}" for j in range(n_tasks)],
                              "scaffold": ("agent", [f"S{s}" for s, _ in combos]),
                              "model": ("agent", [f"M{m}" for _, m in combos])})  # fmt: skip


def test_a_term_nested_in_another_gets_the_smaller_step():
    ds = _nested_board()
    m = bayes.build_mixed(ds, "score ~ scaffold + (1|model) + (1|scaffold:model) + (1|task)")
    dec = m.hierbench["structure"]["decisions"]["target_accept"]
    assert (dec["choice"], m.hierbench["sampler_defaults"]["target_accept"]) == (0.9, 0.9)
    assert dec["reason"].startswith("(1|scaffold:model) in (1|model)")
    # crossed terms only (the agent x task term has its own rule): the default step
    for f in ("score ~ scaffold + (1|model) + (1|task)", None):
        m = bayes.build_mixed(ds.isel(run=[0, 0]) if f is None else ds, f)
        assert m.hierbench["sampler_defaults"]["target_accept"] == 0.8



def _verbagg(shared_data, n_persons: int = 40):
    """VerbAgg's first persons (their 24 items each): `resp` as written (no / perhaps / yes) and as pandas' 0/1/2."""
    from hierbench.data import from_records

    raw = pd.read_csv(shared_data / "lme4" / "verbagg.csv", dtype=str, keep_default_na=False)
    sub = raw[raw["id"].isin(list(dict.fromkeys(raw["id"]))[:n_persons])]
    words = from_records(sub, agent="id", task="item", score="resp", score_levels=["no", "perhaps", "yes"])
    coded = sub.assign(resp=sub["resp"].map({"no": 0, "perhaps": 1, "yes": 2}))
    return sub, words, from_records(coded, agent="id", task="item", score="resp", score_levels=[0, 1, 2])


def test_grades_written_as_words_name_the_ordinal_models_grades_and_thresholds(shared_data):
    """`levels` may name the labels `score` was read from (the same words, in order); the model's
    `grade` and `threshold` coords read them; numeric scales keep their numbers; other words are
    refused naming both lists.
    """
    from hierbench.data import FormulaError

    _, words, coded = _verbagg(shared_data, 6)
    f = "score ~ (1|agent) + (1|task)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        named = bayes.build_mixed(words, f, levels=["no", "perhaps", "yes"])
        plain = bayes.build_mixed(words, f)
        nums = bayes.build_mixed(coded, f)
    for m in (named, plain):
        assert list(m.coords["grade"]) == ["no", "perhaps", "yes"]
        assert list(m.coords["threshold"]) == ["no|perhaps", "perhaps|yes"]
        assert m.hierbench["root_attrs"]["score_labels"] == '["no", "perhaps", "yes"]'
        assert m.hierbench["data_hash"] == nums.hierbench["data_hash"]  # the same numbers are fitted
    assert list(nums.coords["grade"]) == ["0", "1", "2"] and list(nums.coords["threshold"]) == ["0|1", "1|2"]
    assert "score_labels" not in nums.hierbench["root_attrs"]
    assert named.hierbench["options"]["levels"] == ["no", "perhaps", "yes"] and plain.hierbench["options"]["levels"] is None
    # a 1-5 scale: the numbers, as before
    rng = np.random.default_rng(2)
    five = xr.Dataset({"score": (("agent", "task", "run"), (rng.integers(1, 6, (4, 10, 2)) - 1) / 4.0)},
                      coords={"agent": list("abcd")}, attrs={"score_levels": "[1.0, 2.0, 3.0, 4.0, 5.0]"})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m5 = bayes.build_mixed(five, "score ~ (1|agent) + (1|task)", family="ordinal")
    assert list(m5.coords["grade"]) == ["1", "2", "3", "4", "5"]
    assert list(m5.coords["threshold"]) == ["1|2", "2|3", "3|4", "4|5"] and "score_labels" not in m5.hierbench["root_attrs"]
    with pytest.raises(FormulaError, match=r"`levels` \['no', 'yes', 'perhaps'\] are labels, but `score` was read "
                                           r"from the labels \['no', 'perhaps', 'yes'\]"):  # fmt: skip
        bayes.build_mixed(words, f, levels=["no", "yes", "perhaps"])


@pytest.mark.slow  # two small ordinal fits and a report
def test_a_python_fit_of_labelled_grades_draws_the_fit_of_their_numbers_and_keeps_the_labels(shared_data, tmp_path):
    """VerbAgg's first 10 persons: `fit(build_mixed(..., levels=labels))` draws bit for bit what the
    fit of pandas' 0/1/2 recoding draws (same seed; only the grade / threshold coords differ), keeps
    the labels in its attrs through a save and load, and `hierbench report FIT` alone names the
    grades, its per-grade totals pandas' value counts of the raw file.
    """
    from hierbench.cli import main
    from hierbench.io import load_fit
    from hierbench.io import save_fit

    # 10 persons (240 ratings, every grade given: 137 / 68 / 35): each check below is exact at any size;
    # 40 persons' 960 ratings only lengthened the report (a rank plot of 40 agents)
    sub, words, coded = _verbagg(shared_data, 10)
    f, kw = "score ~ (1|agent) + (1|task)", {"draws": 60, "tune": 60, "chains": 2, "rng": 5, "progress": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fw = bayes.fit(bayes.build_mixed(words, f, levels=["no", "perhaps", "yes"]), **kw)
        fn = bayes.fit(bayes.build_mixed(coded, f), **kw)
    assert set(fw.posterior.data_vars) == set(fn.posterior.data_vars)
    for name in fw.posterior.data_vars:
        np.testing.assert_array_equal(fw.posterior[name].values, fn.posterior[name].values)
    assert fw.posterior["thresholds"].coords["threshold"].values.tolist() == ["no|perhaps", "perhaps|yes"]
    assert fn.posterior["thresholds"].coords["threshold"].values.tolist() == ["0|1", "1|2"]
    assert fw.attrs["score_labels"] == '["no", "perhaps", "yes"]' and "score_labels" not in fn.attrs
    back = load_fit(save_fit(fw, tmp_path / "w.nc", groups="all"))
    assert back.attrs["score_labels"] == '["no", "perhaps", "yes"]'
    assert back.posterior["thresholds"].coords["threshold"].values.tolist() == ["no|perhaps", "perhaps|yes"]
    assert back["constant_data"]["grade"].values.tolist() == ["no", "perhaps", "yes"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["report", str(tmp_path / "w.nc"), "-o", str(tmp_path / "r.md"), "--quiet"]) == 0
    sec = (tmp_path / "r.md").read_text().split("## Posterior predictive checks")[1].split("\n## ")[0]
    assert "the x axis is the grade (0 = no, 1 = perhaps, 2 = yes)" in sec
    totals = {}
    for line in sec.split("runs per grade")[0].splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 2 and cells[0] in ("no", "perhaps", "yes"):
            totals[cells[0]] = int(cells[1])
    assert totals == sub["resp"].value_counts().to_dict()  # by hand from the file
