"""Reader's-scale answers from a formula fit's posterior (hierbench.metrics: average_marginal_effects,
mean_response, agent_variance, graded_pass_hat_k, mixed_pass_hat_k, time_horizon, doubling_time), without a sampler.

Each test builds a posterior by hand (every draw the same known parameters, or known spreads), so the
expected values come from elsewhere: scipy's adaptive quadrature of the logit-normal integrals, numpy's
own arithmetic on the known parameters, numpy's polyfit for the trend, the cumulative-logit probabilities
written out. The sampler is exercised in test_bayes_mixed.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import integrate
from scipy import stats
from scipy.special import expit

from hierbench._base import HierbenchError
from hierbench._base import UndefinedWarning
from hierbench.data import model_design
from hierbench.metrics import ExtrapolatedHorizonWarning
from hierbench.metrics import agent_variance
from hierbench.metrics import average_marginal_effects
from hierbench.metrics import doubling_time
from hierbench.metrics import graded_pass_hat_k
from hierbench.metrics import mean_response
from hierbench.metrics import mixed_pass_hat_k
from hierbench.metrics import time_horizon


def _lnorm(f, loc: float, sd: float) -> float:
    """E[f(loc + sd Z)] by scipy's adaptive quadrature."""
    if sd == 0:
        return float(f(loc))
    return integrate.quad(lambda z: f(loc + sd * z) * stats.norm.pdf(z), -12, 12, epsabs=1e-12)[0]


def _fit(design, beta, sd, re=None, thresholds=None, n_draws=3, extra=None) -> xr.DataTree:
    """A posterior whose every draw holds the given parameters (arrays over draws allowed)."""
    def tile(v, _=None) -> np.ndarray:
        a = np.asarray(v, dtype=float)
        return a if a.ndim == 2 else np.broadcast_to(a, (n_draws, a.size))

    post = {
        "beta": (("chain", "draw", "coef"), tile(beta, True)[None]),
        "sd": (("chain", "draw", "component"), tile(sd, True)[None]),
    }
    coords = {"coef": list(design.coef), "component": [t.name for t in design.random]}
    for t in design.random:
        vals = (re or {}).get(t.name)
        if vals is not None:
            dim = ":".join(t.grouping)
            post[f"re[{t.name}]"] = (("chain", "draw", dim), tile(vals, True)[None])
            coords[dim] = t.levels.tolist()
    if thresholds is not None:
        post["thresholds"] = (("chain", "draw", "threshold"), tile(thresholds, True)[None])
    post.update(extra or {})
    return xr.DataTree.from_dict({"posterior": xr.Dataset(post, coords=coords)})


def _leaderboard(rng, grade=False) -> xr.Dataset:
    sc = np.repeat(["s1", "s2"], 3)
    mo = np.tile(["m1", "m2", "m3"], 2)
    y = (rng.random((6, 8, 2)) < 0.5) * 1.0
    ds = xr.Dataset({"score": (("agent", "task", "run"), y)},
                    coords={"agent": [f"{s}/{m}" for s, m in zip(sc, mo, strict=True)], "task": [f"t{i}" for i in range(8)],
                            "scaffold": ("agent", sc), "model": ("agent", mo), "tier": ("task", ["easy", "hard"] * 4)})  # fmt: skip
    if grade:
        ds["grade"] = (("agent", "task", "run"), rng.integers(1, 5, (6, 8, 2)).astype(float))
    return ds


def test_marginal_effect_is_the_logit_normal_difference_averaged_over_rows():
    ds = _leaderboard(np.random.default_rng(0))
    d = model_design("score ~ scaffold + tier + (1|task)", ds)
    beta, sd_task = np.array([-0.4, 0.9, -1.1]), 1.3
    res = average_marginal_effects(_fit(d, beta, [sd_task]), d, "scaffold")
    # every row set to s2, then to s1; rows differ only by tier (half easy, half hard)
    want = np.mean([_lnorm(expit, beta[0] + beta[1] + beta[2] * h, sd_task) - _lnorm(expit, beta[0] + beta[2] * h, sd_task)
                    for h in (0, 1)])  # fmt: skip
    assert res.estimate.contrast.values.tolist() == ["s2 - s1"]
    assert abs(float(res.estimate[0]) - 100 * want) < 1e-4
    by = average_marginal_effects(_fit(d, beta, [sd_task]), d, "scaffold", by="tier")
    hard = _lnorm(expit, beta.sum(), sd_task) - _lnorm(expit, beta[0] + beta[2], sd_task)
    assert abs(float(by.estimate.sel(by="hard", contrast="s2 - s1")) - 100 * hard) < 1e-4
    assert res.ci.attrs["ci_kind"] == "eti" and float(res.posterior_sd[0]) == pytest.approx(0.0, abs=1e-9)


def test_marginal_effect_of_a_numeric_variable_is_the_average_derivative():
    ds = _leaderboard(np.random.default_rng(1)).assign_coords(length=("task", np.linspace(0, 3, 8)))
    d = model_design("score ~ length + (1|task)", ds)
    beta, s = np.array([0.3, -0.7]), 0.8
    res = average_marginal_effects(_fit(d, beta, [s]), d, "length")
    x = np.linspace(0, 3, 8)
    want = np.mean([_lnorm(lambda e: expit(e) * (1 - expit(e)), beta[0] + beta[1] * v, s) * beta[1] for v in x])
    assert abs(float(res.estimate[0]) - 100 * want) < 1e-3


def test_mean_response_holds_agent_terms_and_integrates_the_rest():
    ds = _leaderboard(np.random.default_rng(2))
    d = model_design("score ~ 1 + (1|model) + (1|task)", ds)
    re_model = np.array([-0.5, 0.2, 0.9])
    fit = _fit(d, [0.1], [0.7, 1.4], re={"1|model": re_model})
    res = mean_response(fit, d)
    for agent, m in zip(ds.agent.values, ds.model.values, strict=True):
        want = _lnorm(expit, 0.1 + re_model[["m1", "m2", "m3"].index(m)], 1.4)
        assert abs(float(res.estimate.sel(group=agent)) - 100 * want) < 1e-4
    obs = mean_response(_fit(d, [0.1], [0.7, 1.4], re={"1|model": re_model, "1|task": np.linspace(-1, 1, 8)}), d,
                        tasks="observed")  # fmt: skip
    tasks = np.unique(d.frame.task.astype(str))
    eff = dict(zip(tasks, np.linspace(-1, 1, 8), strict=True))
    rows = d.frame.agent == "s1/m2"
    want = np.mean([expit(0.1 + re_model[1] + eff[t]) for t in d.frame.task[rows]])
    assert abs(float(obs.estimate.sel(group="s1/m2")) - 100 * want) < 1e-9


def test_agent_variance_splits_fixed_spread_and_random_variances():
    ds = _leaderboard(np.random.default_rng(3))
    d = model_design("score ~ scaffold + (1|model) + (1|scaffold:model) + (1|task)", ds)
    rng = np.random.default_rng(4)
    beta = rng.normal(0, 1, (50, 2))
    sd = np.abs(rng.normal(1, 0.3, (50, 3)))
    res = agent_variance(_fit(d, beta, sd, n_draws=50), d)
    assert res.estimate.component.values.tolist() == ["scaffold", "1|model", "1|scaffold:model"]
    # the scaffold effect beta_1 on half of the 6 agents: its variance over agents is beta_1^2 / 4
    np.testing.assert_allclose(res.estimate.sel(component="scaffold"), np.mean(beta[:, 1] ** 2 / 4), rtol=1e-12)
    np.testing.assert_allclose(res.estimate.sel(component="1|model"), np.mean(sd[:, 0] ** 2), rtol=1e-12)
    assert res.kind.values.tolist() == ["fixed", "random", "random"]


def test_mean_grade_and_graded_pass_k_from_the_cumulative_logit():
    ds = _leaderboard(np.random.default_rng(5), grade=True)
    d = model_design("grade ~ tier + (1|task)", ds, family="ordinal")
    th, b, s = np.array([-1.0, 0.3, 1.6]), np.array([0.8]), 0.9

    def p_at_least(g: int, loc: float, k: int = 1) -> float:
        return _lnorm(lambda e: expit(e - th[g - 2]) ** k, loc, s)

    fit = _fit(d, b, [s], thresholds=th)
    res = mean_response(fit, d, by="tier")
    want_hard = 1 + sum(p_at_least(g, 0.8) for g in (2, 3, 4))
    assert abs(float(res.estimate.sel(group="hard")) - want_hard) < 1e-5
    share = mean_response(fit, d, by="tier", threshold=3)
    assert abs(float(share.estimate.sel(group="easy")) - 100 * p_at_least(3, 0.0)) < 1e-4
    pk = graded_pass_hat_k(fit, d, threshold=3, k=[1, 3])
    agent = ds.agent.values[0]
    want = 0.5 * (p_at_least(3, 0.0, 3) + p_at_least(3, 0.8, 3))  # its tasks: half easy, half hard
    assert abs(float(pk.estimate.sel(agent=agent, k=3)) - want) < 1e-5
    with pytest.raises(HierbenchError, match="above the lowest"):
        mean_response(fit, d, threshold=1)


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_graded_pass_k_with_a_judge_draws_the_judge_anew_per_answer():
    rng = np.random.default_rng(6)
    ds = _leaderboard(rng, grade=True)
    ds["judge"] = (("agent", "task", "run"), np.broadcast_to(np.array(["j1", "j2"]), (6, 8, 2)).copy())
    d = model_design("grade ~ 1 + (1|judge) + (1|task)", ds, family="ordinal", levels=[1, 2, 3, 4])
    th, sj, st = np.array([-1.0, 0.3, 1.6]), 0.7, 0.9
    pk = graded_pass_hat_k(_fit(d, np.zeros(0), [sj, st], thresholds=th), d, threshold=3, k=2)

    def q(v: float) -> float:  # one answer, its judge integrated out
        return _lnorm(lambda e: expit(e - th[1]), v, sj)

    want = integrate.quad(lambda z: q(st * z) ** 2 * stats.norm.pdf(z), -12, 12)[0]
    assert abs(float(pk.estimate[0, 0]) - want) < 1e-5


def test_binary_pass_k_holds_agent_terms_and_integrates_the_shared_task_effects_once():
    """pass^k of a binary formula fit on a new task: the agent's model effect and its scaffold at their
    values, the task and agent x task effects (shared by the k attempts) one normal of variance
    sd_task^2 + sd_at^2, by scipy's quadrature; k = 1 is mean_response on the probability scale.
    """
    ds = _leaderboard(np.random.default_rng(8))
    d = model_design("score ~ scaffold + (1|model) + (1|task) + (1|agent:task)", ds)
    beta, u = np.array([-0.3, 0.8]), np.array([-0.6, 0.1, 1.2])
    sd_m, sd_t, sd_at = 0.5, 1.1, 0.7
    fit = _fit(d, beta, [sd_m, sd_t, sd_at], re={"1|model": u})
    res = mixed_pass_hat_k(fit, d, k=[1, 2, 4])
    tau = np.hypot(sd_t, sd_at)
    for agent, s, m in zip(ds.agent.values, ds.scaffold.values, ds.model.values, strict=True):
        loc = beta[0] + beta[1] * (s == "s2") + u[["m1", "m2", "m3"].index(m)]
        for k in (1, 2, 4):
            want = _lnorm(lambda e, k=k: expit(e) ** k, loc, tau)
            assert abs(float(res.estimate.sel(agent=agent, k=k)) - want) < 1e-5
    mr = mean_response(fit, d)
    np.testing.assert_allclose(res.estimate.sel(k=1).values, mr.estimate.values / 100, atol=1e-9)
    assert res.attrs["tasks"] == "population" and res.ci.attrs["ci_kind"] == "eti"


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_binary_pass_k_with_a_per_run_term_draws_it_anew_per_attempt():
    ds = _leaderboard(np.random.default_rng(9))
    ds["judge"] = (("agent", "task", "run"), np.broadcast_to(np.array(["j1", "j2"]), (6, 8, 2)).copy())
    d = model_design("score ~ 1 + (1|judge) + (1|task)", ds, family="binomial")
    b0, sj, st = 0.4, 0.9, 1.2
    pk = mixed_pass_hat_k(_fit(d, [b0], [sj, st]), d, k=3)

    def q(v: float) -> float:  # one attempt, its per-run effect integrated out
        return _lnorm(expit, b0 + v, sj)

    want = integrate.quad(lambda z: q(st * z) ** 3 * stats.norm.pdf(z), -12, 12)[0]
    assert abs(float(pk.estimate[0, 0]) - want) < 1e-5


def test_pass_k_is_refused_where_it_has_no_pass_event():
    ds = _leaderboard(np.random.default_rng(10))
    ds["part"] = ds["score"] * 0.5 + 0.25
    frac = model_design("part ~ 1 + (1|task)", ds, family="fractional")
    with pytest.raises(HierbenchError, match="no pass event"):
        mixed_pass_hat_k(_fit(frac, [0.0], [1.0]), frac, k=2)
    grade = model_design("grade ~ 1 + (1|task)", _leaderboard(np.random.default_rng(11), grade=True), family="ordinal")
    with pytest.raises(HierbenchError, match="needs `threshold`"):
        mixed_pass_hat_k(_fit(grade, np.zeros(0), [1.0], thresholds=[-1.0, 0.0, 1.0]), grade, k=2)
    binary = model_design("score ~ 1 + (1|task)", ds)
    with pytest.raises(HierbenchError, match="ordinal fit only"):
        mixed_pass_hat_k(_fit(binary, [0.0], [1.0]), binary, threshold=1)


def test_horizons_solve_the_population_curve_and_the_trend_matches_polyfit():
    rng = np.random.default_rng(7)
    mins = np.geomspace(2, 300, 10)
    ds = xr.Dataset({"score": (("agent", "task", "run"), (rng.random((3, 10, 2)) < 0.5) * 1.0)},
                    coords={"agent": ["a", "b", "c"], "task": [f"t{i}" for i in range(10)],
                            "log2_minutes": ("task", np.log2(mins))})  # fmt: skip
    d = model_design("score ~ 0 + agent + agent:log2_minutes + (1|task)", ds)
    beta = np.array([2.0, 3.0, 4.5, -0.5, -0.45, -0.5])
    s = 1.1
    h = time_horizon(_fit(d, beta, [s]), d, success=(0.5, 0.8))
    for i, a in enumerate("abc"):
        for p in (0.5, 0.8):
            x = np.log2(float(h.estimate.sel(agent=a, success=p)))
            assert abs(_lnorm(expit, beta[i] + beta[3 + i] * x, s) - p) < 1e-6
    dates = {"a": "2024-01-01", "b": "2024-05-01", "c": "2024-12-01"}
    # c's line crosses 0 at 2 ** (4.5 / 0.5) = 512 minutes, beyond the longest task (300): an extrapolation
    assert h.minutes_range == pytest.approx([2.0, 300.0])
    with pytest.warns(ExtrapolatedHorizonWarning, match=r"beyond the 2-300 minutes .*\(c 512 minutes\)"):
        dt = doubling_time(h, dates)
    days = np.array([np.datetime64(v, "D").astype(int) for v in dates.values()], dtype=float)
    slope = np.polyfit(days, np.log(h.estimate.sel(success=0.5).values), 1)[0]
    assert abs(float(dt.estimate) - np.log(2) / slope) < 1e-6
    with pytest.raises(HierbenchError, match="no date for agents"):
        doubling_time(h, {"a": "2024-01-01"})


def test_a_design_that_does_not_match_the_fit_is_refused():
    ds = _leaderboard(np.random.default_rng(8))
    d = model_design("score ~ scaffold + (1|task)", ds)
    other = model_design("score ~ tier + (1|task)", ds)
    with pytest.raises(HierbenchError, match="does not match"):
        mean_response(_fit(d, [0.0, 0.0], [1.0]), other)
    with pytest.raises(HierbenchError, match="`design` must be the ModelDesign"):
        mean_response(_fit(d, [0.0, 0.0], [1.0]), "score ~ scaffold")


def test_posterior_answers_line_up_row_for_row_with_the_ml_half():
    """compare.side_by_side pairs each posterior answer with the Laplace fit's (same dims and labels)."""
    import warnings

    from hierbench import freq
    from hierbench.compare import side_by_side

    ds = _leaderboard(np.random.default_rng(9))
    f = "score ~ scaffold + (1|model) + (1|task)"
    d = model_design(f, ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a tiny board: sds at the boundary
        ml = freq.fit_crossed_ml(ds, f, intervals="wald")
    post = _fit(d, [0.1, 0.5], [0.5, 1.0], re={"1|model": np.array([0.1, 0.0, -0.1])})
    pairs = [(average_marginal_effects(post, d, "scaffold"), freq.average_marginal_effects(ml, "scaffold")),
             (mean_response(post, d), freq.mean_response(ml)), (agent_variance(post, d), freq.agent_variance(ml))]  # fmt: skip
    for b, m in pairs:
        table = side_by_side({"bayes": b, "ml": m})
        assert table.estimator.values.tolist() == ["bayes", "ml"]
        assert b.estimate.attrs["scale"] == m.estimate.attrs["scale"]
        (dim,) = b.estimate.dims
        assert table[dim].values.tolist() == m.estimate[dim].values.tolist()
        assert np.isfinite(table["estimate"].values).all()


def test_a_contamination_indicator_per_cell_gets_its_marginal_effect():
    """Task date after the agent's training cutoff: a cell-level variable; the AME is the quadrature average."""
    rng = np.random.default_rng(10)
    ds = _leaderboard(rng)
    after = np.arange(8)[None, :] >= np.array([2, 4, 6, 2, 4, 6])[:, None]  # each agent's cutoff, tasks in date order
    ds["after_cutoff"] = (("agent", "task"), np.where(after, "after", "before"))
    d = model_design("score ~ after_cutoff + (1|task)", ds)
    beta, s = np.array([0.6, -0.8]), 1.1
    res = average_marginal_effects(_fit(d, beta, [s]), d, "after_cutoff")
    assert list(d.coef) == ["Intercept", "after_cutoff[before]"]  # "after" sorts first: the reference level
    want = _lnorm(expit, beta.sum(), s) - _lnorm(expit, beta[0], s)  # every row alike: the shift is the same
    assert res.estimate.contrast.values.tolist() == ["before - after"]
    assert abs(float(res.estimate[0]) - 100 * want) < 1e-4


def test_a_graded_fit_without_fixed_effects_has_no_beta_and_is_read():
    """``grade ~ 1 + (1|task)``: the thresholds carry the location, the posterior has no ``beta``."""
    ds = _leaderboard(np.random.default_rng(12), grade=True)
    d = model_design("grade ~ 1 + (1|task)", ds, family="ordinal")
    th, s = np.array([-1.0, 0.3, 1.6]), 0.9
    fit = _fit(d, np.zeros(0), [s], thresholds=th)
    del fit["posterior"]["beta"]
    share = mean_response(fit, d, threshold=3)
    assert abs(float(share.estimate[0]) - 100 * _lnorm(lambda e: expit(e - th[1]), 0.0, s)) < 1e-4


def test_a_posterior_trend_through_fewer_than_two_agents_is_refused():
    """As freq's doubling time: b has no positive median horizon, c (after a, shorter) is off the frontier."""
    from hierbench.metrics import PosteriorHorizonResult

    med = xr.DataArray([[4.0], [0.0], [2.0]], dims=("agent", "success"), coords={"agent": list("abc"), "success": [0.5]})
    draws = med.expand_dims(chain=1, draw=3).copy()
    res = PosteriorHorizonResult(estimate=med, ci=med.expand_dims(ci_bound=["lower", "upper"], axis=-1),
                                 n_undefined=med.isel(success=0) * 0, draws=draws)  # fmt: skip
    dates = {"a": "2024-01-01", "b": "2024-07-01", "c": "2024-12-30"}
    with pytest.warns(UndefinedWarning, match=r"agents \['b'\] have a horizon of 0.*posterior median"):
        with pytest.raises(HierbenchError, match=r"at least 2 agents with a date and a positive horizon; got \['a'\]"):
            doubling_time(res, dates)
    with pytest.warns(UndefinedWarning, match=r"agents \['b'\]"):  # left out, and said so
        assert doubling_time(res, dates, frontier=False).agents == ["a", "c"]
