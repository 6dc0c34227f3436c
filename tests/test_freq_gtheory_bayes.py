"""The crossed model's probability-scale components in a G-study's design (adapter, no PyMC)."""

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy.special import expit

from hierbench.compare import MismatchedEstimatesError
from hierbench.compare import side_by_side
from hierbench.freq import variance_components
from hierbench.metrics import bayes_d_study
from hierbench.metrics import bayes_variance_components


def _fake_fit(mu, sd_agent, sd_task, sd_cluster, sd_at, n_draw=3, sd_ac=None):
    scalars = {"mu": mu, "sd_agent": sd_agent, "sd_task": sd_task, "sd_cluster": sd_cluster, "sd_agent_task": sd_at}
    if sd_ac is not None:  # a fit with the agent x cluster effect
        scalars["sd_agent_cluster"] = sd_ac
    post = xr.Dataset(
        {k: (("chain", "draw"), np.full((1, n_draw), v)) for k, v in scalars.items()},
        coords={"chain": [0], "draw": np.arange(n_draw)},
    )
    dt = xr.DataTree.from_dict({"posterior": post})
    dt.attrs = {"hierbench_model": "crossed", "hierbench_spec": '{"options": {"agents": "random"}}'}
    return dt


def _simulated_g_study(agents, mu, sc, sac, st, sat, rng, n_clusters=40, n_tasks=4, reps=12):
    """G-theory components of p = expit(mu + a + c + ac + b + ab) by the balanced ANOVA of simulated
    p cubes (agents x clusters x tasks per cluster), one dict per replicate; residual = E[p (1 - p)].
    ``agents``: the agents' effects (A, 1, 1), drawn anew per replicate when callable.
    """
    out = []
    for _ in range(reps):
        a = agents() if callable(agents) else agents
        m = a.shape[0]
        eta = (
            mu
            + a
            + rng.normal(0, sc, (1, n_clusters, 1))
            + rng.normal(0, sac or 0.0, (m, n_clusters, 1))
            + rng.normal(0, st, (1, n_clusters, n_tasks))
            + rng.normal(0, sat, (m, n_clusters, n_tasks))
        )
        p = expit(eta)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = variance_components(xr.DataArray(p, dims=("agent", "cluster", "task")), design="agent*(task:cluster)")
        comp = dict(zip(g.component_names, g.components_raw.values, strict=True))
        comp["agent:task:cluster"] = comp.pop("residual")
        comp["residual"] = float((p * (1 - p)).mean())
        out.append(comp)
    return out


def _assert_within_mc(bv, reps, names):
    """Each component of ``bv`` within 4 Monte Carlo SEs (+1e-4) of the replicates' mean."""
    for k in names:
        vals = np.array([r[k] for r in reps])
        se = vals.std(ddof=1) / np.sqrt(len(vals))
        got = float(bv.estimate.sel(component=k))
        assert abs(got - vals.mean()) < 4 * se + 1e-4, (k, got, vals.mean(), se)


@pytest.fixture(scope="module")
def like():
    rng = np.random.default_rng(0)
    y = rng.random((4, 6, 3))
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), y)},
        coords={"cluster": ("task", ["a", "a", "b", "b", "c", "c"])},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return variance_components(ds)


@pytest.mark.parametrize("sac", [None, 0.5])
def test_probability_scale_components_match_simulation(like, sac):
    # population G-theory components of p = expit(mu + a + c + ac + b + ab), estimated by the
    # balanced ANOVA of simulated p cubes (agents x clusters x tasks per cluster), averaged
    # over replicates; residual = E[p (1 - p)]; tolerance 4 Monte Carlo SEs. sac: the fit's
    # agent x cluster SD (None: a fit without the effect, and none simulated)
    mu, sa, st, sc, sat = -0.5, 0.8, 1.0, 0.7, 0.6
    fit = _fake_fit(mu, sa, st, sc, sat, sd_ac=sac)
    bv = bayes_variance_components(fit, like)
    assert list(bv.component.values) == list(like.component_names)
    rng = np.random.default_rng(1)
    reps = _simulated_g_study(lambda: rng.normal(0, sa, (40, 1, 1)), mu, sc, sac, st, sat, rng)
    _assert_within_mc(bv, reps, like.component_names)


def test_side_by_side_and_bayes_d_study(like):
    fit = _fake_fit(-0.5, 0.8, 1.0, 0.7, 0.6)
    bv = bayes_variance_components(fit, like)
    # `like` splits the variance of continuous scores (scale "score"), the Bayes components are
    # on the probability scale: the table asks the caller's word that the two compare
    with pytest.raises(MismatchedEstimatesError, match=r"different scales \{'G-theory': 'score', 'Bayes crossed': 'probability'\}"):
        side_by_side({"G-theory": like, "Bayes crossed": bv})
    sbs = side_by_side({"G-theory": like, "Bayes crossed": bv}, allow_mixed_prob=False, allow_mismatch=True)
    assert list(sbs.estimator.values) == ["G-theory", "Bayes crossed"]
    assert list(sbs.component.values) == list(like.component_names)
    assert list(sbs.ci_kind.values) == ["profile", "eti"]  # a balanced G-study is profiled by default (audit G 2)
    sizes = {"cluster": [10, 40], "task": [1, 2], "run": [1, 8]}
    bd = bayes_d_study(fit, like, sizes)
    # with a point-mass posterior, the Bayesian D-study is the G-theory D-study of its components
    comp = bv.estimate.values
    frozen = like._coefficients(
        {
            "agent": 1.0,
            "cluster": np.array([10, 40.0])[:, None, None],
            "task": np.array([1, 2.0])[None, :, None],
            "run": np.array([1, 8.0])[None, None, :],
        },
        like._comp_dict(comp),
        warn=False,
    )
    np.testing.assert_allclose(bd["var_paired_diff"].values, frozen["var_paired_diff"], rtol=1e-9)
    assert bd["var_paired_diff_ci"].attrs["ci_kind"] == "eti"
    with pytest.raises(ValueError, match=r"`fit` must be a crossed-model fit"):
        bayes_variance_components(xr.DataTree(), like)


def test_bayes_d_study_reads_uneven_clusters():
    # clusters of 4, 1 and 1 tasks: the agent x cluster term enters with
    # sum_k (n_k / 6)^2 = 18 / 36, not 1 / 3 (Brennan's p x (t:c) formula with the
    # clusters' squared weights, written out here); a point-mass posterior makes the
    # Bayesian D-study that formula at the probability-scale components
    rng = np.random.default_rng(4)
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), rng.random((4, 6, 3)))},
        coords={"cluster": ("task", ["a", "a", "a", "a", "b", "c"])},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        uneven = variance_components(ds)
    fit = _fake_fit(-0.5, 0.8, 1.0, 0.7, 0.6)
    s = dict(zip(uneven.component_names, bayes_variance_components(fit, uneven).estimate.values, strict=True))
    bd = bayes_d_study(fit, uneven, {"run": [1, 8]})
    for r in (1, 8):
        want = 2 * (s["agent:cluster"] * 18 / 36 + s["agent:task:cluster"] / 6 + s["residual"] / (6 * r))
        assert float(bd["var_paired_diff"].sel(n_run=r)) == pytest.approx(want, rel=1e-9)
    assert "as unevenly as observed" in bd.attrs["spread"]


def test_bayes_d_study_reads_uneven_runs():
    # 1-4 runs per agent x task cell: with the runs held (only tasks asked) the run error
    # enters with the harmonic mean of the cells' runs H, as in like.d_study: Brennan's
    # 2 (s(a:c) / 3 + s(a:t:c) / N + s(res) / (N H)) for 3 even clusters of N / 3 tasks
    rng = np.random.default_rng(6)
    y = rng.random((4, 6, 4))
    n = rng.integers(1, 5, (4, 6))
    y[np.arange(4)[None, None, :] >= n[:, :, None]] = np.nan
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), y)},
        coords={"cluster": ("task", ["a", "a", "b", "b", "c", "c"])},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        uneven = variance_components(ds)
    h = 1 / float(np.mean(1 / n))
    assert h < n.mean() - 0.2
    fit = _fake_fit(-0.5, 0.8, 1.0, 0.7, 0.6)
    s = dict(zip(uneven.component_names, bayes_variance_components(fit, uneven).estimate.values, strict=True))
    bd = bayes_d_study(fit, uneven, {"task": [2, 4]})
    for per in (2, 4):
        N = 3 * per
        want = 2 * (s["agent:cluster"] / 3 + s["agent:task:cluster"] / N + s["residual"] / (N * h))
        assert float(bd["var_paired_diff"].sel(n_task=per)) == pytest.approx(want, rel=1e-9)
    assert "as observed" in bd.attrs["run_spread"]


@pytest.mark.parametrize("sac", [None, 0.5])
def test_fixed_agents_components_match_a_simulation_of_those_agents(like, sac):
    # with agents="fixed" (the builder's default) the evaluated agents are the population:
    # reference, the balanced ANOVA of simulated p cubes of these four agents (far from a normal
    # sample: two near 0 and 1) over clusters and tasks, averaged over replicates; residual =
    # E[p (1 - p)]; tolerance 4 Monte Carlo SEs. A normal population in their place had put the
    # residual 0.02 low on such agents
    mu, st, sc, sat = 0.2, 1.0, 0.7, 0.6
    effects = np.array([-6.0, 0.3, 0.6, 5.1])
    effects = effects - effects.mean()
    fit = _fake_fit(mu, float(np.std(effects, ddof=1)), st, sc, sat, sd_ac=sac)
    post = fit["posterior"].to_dataset()
    post["agent_effect"] = (("chain", "draw", "agent"), np.broadcast_to(effects, (1, 3, 4)).copy())
    dt = xr.DataTree.from_dict({"posterior": post})
    dt.attrs = {"hierbench_model": "crossed", "hierbench_spec": '{"options": {"agents": "fixed"}}'}
    bv = bayes_variance_components(dt, like)
    rng = np.random.default_rng(2)
    reps = _simulated_g_study(effects[:, None, None], mu, sc, sac, st, sat, rng, n_clusters=60)
    _assert_within_mc(bv, reps, like.component_names)
