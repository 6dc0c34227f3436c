"""The PyMC 2PL / 1PL builders (hierbench.bayes._models._irt) and the irt_2pl zoo entry.

References: scipy.stats.binom for the likelihood, numpy for the identifying
constraints, the registry for the spec file, the MAP fit for the tiny NUTS
fit (slow), and the reference.json's own recorded numbers.
"""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from conftest import ROOT
from scipy import stats
from scipy.special import expit

from hierbench.bayes import build_crossed
from hierbench.bayes import build_irt_1pl
from hierbench.bayes import build_irt_2pl
from hierbench.bayes import get_model
from hierbench.bayes import model_hook
from hierbench.bayes import read_spec
from hierbench.bayes import spec_to_toml


def _data(M=6, T=10, R=3, seed=0, clusters=False):
    g = np.random.default_rng(seed)
    th = g.normal(size=M)
    a = np.exp(g.normal(0.3, 0.3, T))
    d = g.normal(0, 1.5, T)
    y = (g.random((M, T, R)) < expit(th[:, None, None] * a[None, :, None] + d[None, :, None])).astype(float)
    y[0, 0, :] = np.nan  # a cell never run
    coords = {"agent": [f"m{i}" for i in range(M)], "task": [f"t{j}" for j in range(T)], "run": np.arange(R)}
    if clusters:
        coords["cluster"] = ("task", [f"c{j % 3}" for j in range(T)])
    return xr.Dataset({"score": (("agent", "task", "run"), y)}, coords=coords)


@pytest.mark.slow
def test_likelihood_is_the_binomial_on_observed_cells():
    data = _data()
    m = build_irt_2pl(data)
    ip = m.initial_point()
    g = np.random.default_rng(1)
    point = {k: v + g.normal(0, 0.3, np.shape(v)) for k, v in ip.items()}
    import pytensor

    outs = m.replace_rvs_by_values([m["ability"], m["discrimination"], m["intercept"]])
    f = pytensor.function(m.value_vars, outs, on_unused_input="ignore")
    ab, disc, icpt = f(**{v.name: point[v.name] for v in m.value_vars})
    # standardised abilities: mean 0, population sd 1, exactly
    assert abs(ab.mean()) < 1e-12 and abs(ab.std() - 1) < 1e-12
    ll = m.compile_logp(vars=[m["y"]], sum=True)(point)
    n = (~np.isnan(data.score)).sum("run").values
    y = data.score.fillna(0).sum("run").values
    p = expit(ab[:, None] * disc[None, :] + icpt[None, :])
    obs = n > 0
    ref = stats.binom.logpmf(y[obs], n[obs], p[obs]).sum()
    np.testing.assert_allclose(ll, ref, rtol=1e-10)
    assert m["y"].owner is not None and len(m.coords["cell"]) == int(obs.sum())


def test_same_cells_as_the_crossed_model():
    data = _data(clusters=True)
    a = build_irt_2pl(data).hierbench["cell_coords"]
    b = build_crossed(data).hierbench["cell_coords"]
    for k in ("cell_agent", "cell_task"):
        assert np.array_equal(a[k], b[k])


def test_1pl_and_options():
    data = _data(clusters=True)
    m1 = build_irt_1pl(data)
    assert m1.hierbench["model"] == "irt_1pl"
    assert "z_log_discrimination" not in [v.name for v in m1.free_RVs]
    assert pm.draw(m1["discrimination"]).shape == ()
    mc = build_irt_2pl(data, clusters=True)
    assert "z_cluster" in [v.name for v in mc.free_RVs]
    # auto centring, the package's rule on the task intercepts: 30 runs of 6 agents per task inform
    # each intercept ~ 180 p (1 - p), tens of units, against a spread of ~1.5 -> centred; 1 run
    # per cell (6 runs per task, ~1 unit) -> non-centred
    assert "intercept_task" in [v.name for v in build_irt_2pl(_data(R=30)).free_RVs]
    assert "z_intercept" in [v.name for v in build_irt_2pl(_data(R=1)).free_RVs]


def test_centring_follows_the_intercepts_information_not_the_run_count():
    # 18 runs per task (the old rule: >= 10 -> centred), but tasks at 2-5% success whose
    # rates barely differ: each intercept carries ~ 18 x 0.03 = 0.5 units, spread ~0 ->
    # non-centred (SBC's funnel at a small sd_intercept when centred)
    g = np.random.default_rng(3)
    y = (g.random((6, 30, 3)) < 0.03).astype(float)
    ds = xr.Dataset({"score": (("agent", "task", "run"), y)},
                    coords={"agent": [f"m{i}" for i in range(6)], "task": [f"t{j}" for j in range(30)]})  # fmt: skip
    dec = build_irt_2pl(ds).hierbench["structure"]["decisions"]["centred"]
    assert dec["choice"] is False and "weakly informed" in dec["reason"]


def test_builder_refuses_bad_input():
    data = _data()
    with pytest.raises(ValueError, match="at least 2 agents"):
        build_irt_2pl(data.isel(agent=[0]))
    with pytest.raises(ValueError, match="`clusters=True` needs a `cluster` task coord"):
        build_irt_2pl(data, clusters=True)
    with pytest.raises(ValueError, match="`model` must be '2pl' or '1pl'"):
        build_irt_2pl(data, model="3pl")
    with pytest.raises(ValueError, match="`priors` keys must be among"):
        build_irt_2pl(data, priors={"sd_task": {"dist": "HalfNormal", "sigma": 1.0}})
    with pytest.raises(TypeError, match="sets `model='1pl'` itself"):
        build_irt_1pl(data, model="2pl")


def test_zoo_spec_round_trips_and_reference_is_recorded():
    folder = ROOT / "models" / "irt_2pl"
    spec = read_spec(folder / "spec.toml")
    entry = get_model("irt_2pl").spec()
    for key in ("builder", "options", "priors", "sampler", "hooks"):
        assert spec[key] == entry[key]
    assert tomllib.loads(spec_to_toml(spec)) == spec
    # the hook the file names is one the registry can run (what a saved fit looks up)
    assert spec["hooks"] == {"postprocess": "irt.set_aside_radius"}
    assert callable(model_hook(spec, "postprocess"))
    ref = json.loads((folder / "reference.json").read_text())
    d = ref["diagnostics"]
    # the reference fit passed the package's own checks with defaults
    assert d["n_divergent"] == 0 and d["max_r_hat"] <= 1.01 and d["min_ess_bulk"] >= 400
    assert ref["ml_vs_nuts"]["spearman_difficulty"] > 0.98
    assert (folder / "card.md").is_file()


@pytest.mark.slow
def test_reference_difficulties_agree_with_the_map_fit(shared_data):
    # the MAP calibration (fast) against the reference NUTS posterior means on SWE-bench
    from hierbench.data import load_swebench_bash_only
    from hierbench.freq import fit_irt_ml

    ref = json.loads((ROOT / "models" / "irt_2pl" / "reference.json").read_text())
    data = load_swebench_bash_only(shared_data)
    cal = fit_irt_ml(data, n_draws=10, rng=0)
    means = ref["summary"]["difficulty"]
    nuts = np.array([means[t]["mean"] for t in cal.estimate.task.values])
    assert stats.spearmanr(nuts, cal.estimate.values).statistic > 0.98


@pytest.mark.slow
def test_tiny_nuts_fit_converges_and_matches_map():
    from hierbench.bayes import fit
    from hierbench.freq import fit_irt_ml

    data = _data(M=12, T=25, R=3, seed=4)
    dt = fit(build_irt_2pl(data), draws=300, tune=300, chains=2, rng=0, posterior_predictive=False)
    assert dt.attrs["diag_n_divergent"] == 0
    cal = fit_irt_ml(data, n_draws=10, rng=0)
    pm_b = dt["posterior"]["difficulty"].mean(("chain", "draw")).values
    assert stats.spearmanr(pm_b, cal.estimate.values).statistic > 0.9


def _point_values(m, names, seed=1):
    """A jittered point of ``m`` and the named model variables at it."""
    import pytensor

    g = np.random.default_rng(seed)
    point = {k: v + g.normal(0, 0.3, np.shape(v)) for k, v in m.initial_point().items()}
    outs = m.replace_rvs_by_values([m[n] for n in names])
    f = pytensor.function(m.value_vars, outs, on_unused_input="ignore")
    return point, f(**{v.name: point[v.name] for v in m.value_vars})


def test_marginal_cells_match_an_independent_integral():
    # each cell's log-likelihood with the agent x task effect integrated out (adaptive
    # Gauss-Hermite, 7 nodes) against scipy.integrate.quad of the binomial-logit-normal
    from scipy import integrate

    data = _data(M=4, T=6, R=8, seed=2)
    m = build_irt_2pl(data, agent_task="marginal")
    point, (ab, disc, icpt, sd) = _point_values(m, ["ability", "discrimination", "intercept", "sd_agent_task"])
    import pytensor

    ll_cell = pytensor.function(m.value_vars, m.logp(vars=[m["y"]], sum=False)[0], on_unused_input="ignore")
    ll = ll_cell(**{v.name: point[v.name] for v in m.value_vars})
    n = (~np.isnan(data.score)).sum("run").values
    y = data.score.fillna(0).sum("run").values
    eta = ab[:, None] * disc[None, :] + icpt[None, :]
    ai, ti = np.nonzero(n > 0)
    for k in range(0, ai.size, 3):  # every third cell: 8 cells, 0-8 successes of 8
        i, j = ai[k], ti[k]

        def f(z, i=i, j=j):
            return stats.binom.pmf(y[i, j], n[i, j], expit(eta[i, j] + sd * z)) * stats.norm.pdf(z)

        ref = np.log(integrate.quad(f, -12, 12, epsabs=0, epsrel=1e-10, limit=200)[0])
        # the crossed card's accuracy of 7 nodes: within 5e-3 of adaptive quadrature
        assert abs(ll[k] - ref) < 5e-3, (k, ll[k], ref)
    # and mean_task is the cells' success probability averaged over the effect (quad again)
    (mt,) = _point_values(m, ["mean_task"])[1]
    p = [[integrate.quad(lambda z, e=e: expit(e + sd * z) * stats.norm.pdf(z), -12, 12)[0] for e in row] for row in eta]
    np.testing.assert_allclose(mt, np.mean(p, axis=1), atol=1e-6)


def test_agent_task_decision_follows_the_runs_per_cell():
    from hierbench.bayes import UnidentifiedTermWarning
    from hierbench.metrics import unidentified_by_design

    one = _data(R=1)
    several = _data(R=3)
    d1 = build_irt_2pl(one, agent_task="auto").hierbench
    d3 = build_irt_2pl(several, agent_task="auto").hierbench
    # one run per cell: a Bernoulli cell cannot tell the effect from run noise (the design rule's reason)
    rule = unidentified_by_design(one.sizes["agent"], 1)["agent:task"][0]
    assert d1["structure"]["decisions"]["agent_task"] == {"choice": "none", "reason": rule, "source": "auto"}
    assert d1["options"]["agent_task"] == "none" and "sd_agent_task" not in d1["priors"]
    assert d3["structure"]["decisions"]["agent_task"]["choice"] == "marginal"
    assert d3["options"]["agent_task"] == "marginal" and "sd_agent_task" in d3["priors"]
    # ragged: one cell with two runs among single runs is "some cell with more than one run"
    ragged = one.copy(deep=True)
    ragged = xr.concat([ragged, ragged.isel(run=[0]) * np.nan], "run").assign_coords(run=[0, 1])
    ragged["score"][1, 1, 1] = 1.0
    assert build_irt_2pl(ragged, agent_task="auto").hierbench["options"]["agent_task"] == "marginal"
    # asked for where it is unidentified: fitted as asked, with the package's warning
    with pytest.warns(UnidentifiedTermWarning, match="agent_task='marginal'"):
        build_irt_2pl(one, agent_task="marginal")
    # no effect, no prior for its spread; a bad choice names the argument
    with pytest.raises(ValueError, match="`priors` keys must be among"):
        build_irt_2pl(several, agent_task="none", priors={"sd_agent_task": {"dist": "HalfNormal", "sigma": 1.0}})
    with pytest.raises(ValueError, match="agent_task"):
        build_irt_2pl(several, agent_task="latent")
    # the default on repeated runs: recorded as the default, saying what it costs and the option
    dec = build_irt_2pl(several).hierbench["structure"]["decisions"]["agent_task"]
    assert dec["choice"] == "none" and dec["source"] == "default"
    assert "up to 3 runs" in dec["reason"] and "agent_task='marginal'" in dec["reason"]
    # ... and on one run per cell too: "none" is what auto would choose, but the user did not ask
    assert build_irt_2pl(one).hierbench["structure"]["decisions"]["agent_task"]["source"] == "default"
    assert build_irt_2pl(one, agent_task="none").hierbench["structure"]["decisions"]["agent_task"]["source"] == "user"


@pytest.mark.slow
def test_the_stopping_rule_checks_the_identified_posterior_not_the_working_radius(monkeypatch):
    """Audit s76 Z 1: the draws-to-target rule checked ``z_ability``, whose radius is a working
    parameter set aside after sampling (only its direction is identified), and held a SWE-bench 1PL
    fit to the 2,000-draw cap with "NOT reached" in its notes where the rest passed at 300. Every
    check must now see exactly the elements of the posterior the fit returns (counted here from its
    variables' sizes), and z_ability none of them.
    """
    from hierbench.bayes import fit
    from hierbench.bayes._sampler import _sampling

    seen = []
    real = _sampling.assess

    def spy(x, *args, **kwargs):
        seen.append(int(np.shape(x)[0]))
        return real(x, *args, **kwargs)

    monkeypatch.setattr(_sampling, "assess", spy)
    dt = fit(build_irt_1pl(_data()), rng=0, posterior_predictive=False, progress=False)
    post = dt["posterior"].to_dataset()
    n_elements = sum(int(np.prod([post.sizes[d] for d in post[v].dims if d not in ("chain", "draw")]))
                     for v in post.data_vars)
    assert seen and set(seen) == {n_elements}, (seen, n_elements)
    assert "z_ability" not in post and "z_ability" in dt["parameter_expansion"].to_dataset()
