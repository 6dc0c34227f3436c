"""One agent with one run per task: the crossed model leaves the task effect out.

Nothing repeats within a task, so the task spread cannot be told apart from run-to-run
noise (the design rule, :func:`hierbench.metrics.unidentified_components`); kept on its
prior, ``sd_task`` never converged on SWE-bench restricted to one model (2,000-draw cap,
ESS 68-162 and E-BFMI 0.15 at ``sd_task``). The expected values here are written from the
rule's definition and from the exact posterior, not read from the code under test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import integrate
from scipy import stats
from scipy.special import expit

from hierbench.bayes import PriorError
from hierbench.bayes import build_crossed
from hierbench.bayes import describe
from hierbench.bayes import fit
from hierbench.metrics import crossed_pass_k
from hierbench.metrics import crossed_variance_components
from hierbench.metrics._crossed import UnidentifiedWarning
from hierbench.testing import simulate_eval

#: the rule's reason, written out (hierbench.metrics._crossed.TASK_IN_RUNS must say the same)
WHY = (
    "one agent with one run per task, so nothing repeats within a task and the task spread "
    "cannot be told apart from run-to-run noise"
)


def _quiet(f, *args, **kwargs):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = f(*args, **kwargs)
    return out, [str(w.message) for w in seen]


@pytest.mark.parametrize("clusters", [0, 4])
@pytest.mark.parametrize(("n_agents", "n_runs"), [(1, 1), (1, 3), (3, 1), (3, 3)])
def test_only_one_agent_with_one_run_drops_the_task_effect(n_agents, n_runs, clusters):
    data, _ = simulate_eval(n_agents=n_agents, n_tasks=40, n_runs=n_runs, n_clusters=clusters, rng=0)
    model = build_crossed(data)
    names = set(model.named_vars)
    decisions = model.hierbench["structure"]["decisions"]
    dropped = (n_agents, n_runs) == (1, 1)
    assert ("task_effect" in names) == ("sd_task" in names) == (not dropped)
    task_rvs = {"sd_task", "z_task", "task_dev"} & {v.name for v in model.free_RVs}
    assert bool(task_rvs) == (not dropped), task_rvs
    if dropped:
        assert decisions["task_spread"]["choice"] == "none"
        assert decisions["task_spread"]["reason"].startswith(WHY + ":")
        assert f"task_spread: 'none' - {WHY}" in describe(model)
        assert "sd_task" not in model.hierbench["structure"]["hints"]
    else:
        assert "task_spread" not in decisions
    # cluster effects stay: their spread shows in the clusters' different success rates
    assert ("cluster_effect" in names) == ("sd_cluster" in names) == bool(clusters)


def test_a_prior_for_the_left_out_task_spread_is_refused_with_the_reason():
    data, _ = simulate_eval(n_agents=1, n_tasks=20, n_runs=1, rng=0)
    with pytest.raises(PriorError, match=r"model has no task effect: one agent with one run per task"):
        build_crossed(data, priors={"sd_task": {"dist": "HalfNormal", "sigma": 1.0}})
    two_runs, _ = simulate_eval(n_agents=1, n_tasks=20, n_runs=2, rng=0)
    assert "sd_task" in build_crossed(two_runs, priors={"sd_task": {"dist": "HalfNormal", "sigma": 1.0}}).named_vars


def _exact_moments(s: int, t: int, sigma: float = 2.5) -> tuple[float, float, float]:
    """Mean and sd of the ability, and mean of expit(ability): N(0, sigma) prior x s successes in t Bernoulli runs."""

    def post(a):
        return stats.norm.pdf(a, 0.0, sigma) * expit(a) ** s * expit(-a) ** (t - s)

    lo, hi = -12.0, 12.0
    z = integrate.quad(post, lo, hi, points=[0.0], limit=200)[0]
    m1 = integrate.quad(lambda a: a * post(a), lo, hi, limit=200)[0] / z
    m2 = integrate.quad(lambda a: a * a * post(a), lo, hi, limit=200)[0] / z
    p1 = integrate.quad(lambda a: expit(a) * post(a), lo, hi, limit=200)[0] / z
    return m1, np.sqrt(m2 - m1**2), p1


def test_the_ability_posterior_is_the_exact_one():
    # 1 agent x 30 tasks x 1 run, no clusters: logit p = ability for every task, ability ~ N(0, 2.5)
    data, _ = simulate_eval(n_agents=1, n_tasks=30, n_runs=1, rng=3)
    s, t = int(data["score"].sum()), int(data["score"].size)
    m, sd, p = _exact_moments(s, t)
    res, said = _quiet(fit, build_crossed(data), draws=500, tune=300, chains=4, rng=5)
    assert not said, said
    post = res["posterior"]
    draws = post["ability"].values.ravel()
    # 2,000 draws at an ESS of at least 400 (the fit's own check): a Monte Carlo sd of the
    # mean under 0.05 sd, of the sd under 4%; tolerances 0.2 sd and 15%
    assert abs(draws.mean() - m) < 0.2 * sd, (draws.mean(), m)
    assert abs(draws.std() / sd - 1) < 0.15, (draws.std(), sd)
    # the success rate (mean over the tasks, and on a new task) is expit(ability): no task spread
    for name in ("mean_observed", "mean_new_task"):
        assert abs(float(post[name].mean()) - p) < 0.2 * sd * p * (1 - p), name
    # the posterior predictive: each task's run a Bernoulli at the same rate
    yrep = res["posterior_predictive"]["y"].values
    assert yrep.shape[-1] == t and abs(yrep.mean() - p) < 0.03
    # the ability is the pooled rate's log-odds here, and its attrs say so (not "average difficulty")
    meaning = post["ability"].attrs["meaning"]
    assert "pooled over the benchmark's tasks" in meaning and "is not the log-odds on a task" in meaning


def test_the_ability_meaning_follows_the_design():
    kinds = {}
    for n_agents, n_runs, clusters in [(2, 1, 0), (1, 2, 0), (1, 1, 0), (1, 1, 4)]:
        data, _ = simulate_eval(n_agents=n_agents, n_tasks=20, n_runs=n_runs, n_clusters=clusters, rng=0)
        kinds[n_agents, n_runs, clusters] = build_crossed(data).hierbench["var_attrs"]["ability"]["meaning"]
    assert kinds[2, 1, 0] == kinds[1, 2, 0] and kinds[2, 1, 0].endswith("on a task of average difficulty")
    assert "pooled over the benchmark's tasks" in kinds[1, 1, 0]
    assert "pooled over the tasks of a cluster of average difficulty" in kinds[1, 1, 4]


@pytest.fixture(scope="module")
def one_run_fit():
    data, _ = simulate_eval(n_agents=1, n_tasks=60, n_runs=1, n_clusters=4, rng=1)
    res, _ = _quiet(fit, build_crossed(data), draws=200, tune=200, chains=2, rng=2)
    return res


@pytest.mark.parametrize("scale", ["latent", "probability"])
@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_variance_components_say_the_task_spread_is_undefined(one_run_fit, scale):
    assert "task_effect" not in one_run_fit["posterior"] and "sd_task" not in one_run_fit["posterior"]
    res, said = _quiet(crossed_variance_components, one_run_fit, scale=scale)
    note = dict(zip(res.note["component"].values.tolist(), res.note.values.tolist(), strict=True))
    assert note["task:cluster"] == f"undefined: {WHY}"
    assert np.isnan(float(res.estimate.sel(component="task:cluster")))
    assert np.isfinite(float(res.estimate.sel(component="cluster")))
    assert any(WHY in m for m in said)
    if scale == "probability":
        assert f"holds task:cluster too: {WHY}" in note["residual"]


def test_pass_k_beyond_one_warns_that_it_needs_the_task_spread(one_run_fit):
    one, said = _quiet(crossed_pass_k, one_run_fit, k=1)
    assert not said and np.isfinite(one.estimate.values).all()
    for kwargs in ({"min_runs": 0}, {"population": True}, {"kind": "at", "min_runs": 0}):
        with pytest.warns(UnidentifiedWarning, match=r"no task effect \(one agent with one run per task, so nothing"):
            crossed_pass_k(one_run_fit, k=[1, 2], **kwargs)
    # min_runs="k" (the default): no task was run twice, so k = 2 is NaN, rests on nothing and says so
    res, said = _quiet(crossed_pass_k, one_run_fit, k=[1, 2], rng=0)
    assert np.isnan(res.estimate.sel(k=2)).all() and np.isfinite(res.estimate.sel(k=1)).all()
    assert len(said) == 1 and "at k=2: no task run at least min_runs times" in said[0], said


@pytest.mark.slow  # SWE-bench's 500 tasks, one model: a default fit (about 5 s here) and a report
def test_swebench_one_model_converges_at_the_defaults_and_the_report_says_why(shared_data, tmp_path):
    """The report's sections are cut to the variance one read here (``--sections``): it is computed
    and written as in the whole report.
    """
    from hierbench.cli import main
    from hierbench.data._shared import load_swebench_bash_only

    ds = load_swebench_bash_only()
    one = ds.sel(agent=[ds.agent.values[0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ConvergenceWarning, nothing else either
        res = fit(build_crossed(one), rng=1)
    assert res.attrs["diag_converged"] == 1
    assert res.posterior.sizes["draw"] < 2000  # not the draw cap
    assert res.attrs["diag_max_r_hat"] < 1.03 and res.attrs["diag_n_divergent"] == 0
    # the report of such a fit, through the command line
    log, fit_path, rep = tmp_path / "one.nc", tmp_path / "fit.nc", tmp_path / "r.md"
    one.to_netcdf(log)
    assert main(["fit", str(log), "-o", str(fit_path), "--quiet"]) == 0
    assert main(["report", str(fit_path), "--data", str(log), "-o", str(rep), "--resamples", "99", "--quiet",
                 "--sections", "variance"]) == 0  # fmt: skip
    section = rep.read_text().split("## Variance components")[1].split("\n## ")[0]
    assert f"Task and run-to-run variation are one row: {WHY}" in section
