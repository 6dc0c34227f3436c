"""The beta-binomial's ``mean_observed`` is the realised average of these tasks' own ``p_t``.

Audit X, finding 1: the variable held the average of the conditional expectations
``E[p_t | data, draw]``, whose 95% interval covered the mean of the true ``p_t`` over
these tasks 0.78 of the time (40 agents x 8 fits, 50 tasks x 4 runs). A fit's postprocess
hook now draws each ``p_t`` from ``Beta(mu kappa + c, (1 - mu) kappa + n - c)`` (a task
never run: from the prior ``Beta(mu kappa, (1 - mu) kappa)``) and averages them over the
same tasks as before, as the crossed model's ``mean_observed`` is.

Expected values are by hand: the true ``p_t`` simulated here, the conjugate Beta means and
variances written below, and binomial Monte Carlo tolerances with fixed seeds. The hook is
reached through the registry by the name the model declares (``HOOKS["postprocess"]``).
"""

from __future__ import annotations

import warnings

import numpy as np
import xarray as xr

from hierbench.bayes import get_model
from hierbench.bayes import model_hook


def _hook():
    """The beta-binomial's postprocess hook, as ``fit`` finds it (by the name the model declares)."""
    return model_hook({"hooks": dict(get_model("beta_binomial").hooks)}, "postprocess")


def _tree(mu: np.ndarray, kappa: np.ndarray, n: np.ndarray, y: np.ndarray) -> xr.DataTree:
    """A fit's posterior (mu, kappa over chain, draw, agent) and its counts grid (agent, task)."""
    A, T = n.shape
    agents, tasks = [f"a{i}" for i in range(A)], [f"t{j}" for j in range(T)]
    post = xr.Dataset({"mu": (("chain", "draw", "agent"), mu), "kappa": (("chain", "draw", "agent"), kappa)},
                      coords={"chain": [0], "draw": np.arange(mu.shape[1]), "agent": agents})  # fmt: skip
    const = xr.Dataset({"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), y)},
                       coords={"agent": agents, "task": tasks})  # fmt: skip
    dt = xr.DataTree.from_dict({"posterior": post, "constant_data": const})
    dt.attrs.update(hierbench_model="beta_binomial", hierbench_data_hash="h0", hierbench_counts_hash="h0")
    return dt


def test_the_realised_interval_covers_these_tasks_mean_at_its_level():
    # 400 agents as independent replicates, each with known (mu, kappa) and 30 tasks x 4 runs,
    # 5 of its tasks never run. Given the true (mu, kappa) the p_t | data are exactly
    # Beta(mu kappa + c, (1 - mu) kappa + n - c) (the prior where n = 0), so a posterior
    # that is a point at the truth makes the realised average's interval an exact credible
    # interval for mean_t p_t: drawn from this model, it covers at its level. The old
    # conditional-expectation draws are constant here (zero width, coverage about 0).
    g = np.random.default_rng(20261201)
    A, T, R, S = 400, 30, 4, 400
    mu_a, rho = g.uniform(0.2, 0.8, A), g.uniform(0.1, 0.5, A)
    kap = 1.0 / rho - 1.0
    p = g.beta((mu_a * kap)[:, None], ((1.0 - mu_a) * kap)[:, None], size=(A, T))
    n = np.full((A, T), R)
    n[:, :5] = 0
    y = g.binomial(n, p)
    dt = _tree(np.broadcast_to(mu_a, (1, S, A)).copy(), np.broadcast_to(kap, (1, S, A)).copy(), n, y)
    draws = _hook()(dt, np.random.default_rng(7))["posterior"]["mean_observed"].values[0]  # (draw, agent)
    truth = p.mean(axis=1)
    for level in (0.5, 0.9):
        lo, hi = np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
        cover = float(np.mean((lo <= truth) & (truth <= hi)))
        # binomial MC error over 400 replicates: 4 SE is 0.100 at 50%, 0.060 at 90%
        assert abs(cover - level) <= 4 * np.sqrt(level * (1 - level) / A), (level, cover)


def test_the_draws_keep_the_conditional_mean_and_are_wider():
    # a posterior with spread in (mu, kappa): per draw, the realised average minus the mean of
    # the conditional expectations (the old Deterministic, by hand) has mean 0 and variance
    # V_s = sum_t Var(Beta(a_st, b_st)) / T^2, so over S independent realisations the two
    # posterior means agree within 4 sqrt(mean V / S), and Var(R) = Var(E) + mean V.
    # Agent a1 succeeded in every run of its 8 tasks but never ran 12 (mu near 0.3): averaging
    # the tasks it ran only would put its mean about 0.25 higher (0.72 against 0.47).
    g = np.random.default_rng(3)
    S, T = 4000, 20
    n = np.array([[4] * 15 + [0] * 5, [3] * 8 + [0] * 12, [2] * 20])
    y = np.minimum(g.binomial(n, 0.45), n)
    y[1] = n[1]
    mu = np.clip(g.normal([0.45, 0.3, 0.6], 0.05, size=(1, S, 3)), 0.05, 0.95)
    kappa = np.exp(g.normal(np.log([3.0, 2.0, 8.0]), 0.3, size=(1, S, 3)))
    out = _hook()(_tree(mu, kappa, n, y), np.random.default_rng(11))["posterior"]["mean_observed"]
    r = out.transpose("chain", "draw", "agent").values[0]
    a = (mu * kappa)[0][..., None] + y  # (draw, agent, task)
    b = ((1 - mu) * kappa)[0][..., None] + n - y
    e = (a / (a + b)).mean(-1)
    v = (a * b / ((a + b) ** 2 * (a + b + 1))).sum(-1) / T**2
    np.testing.assert_array_less(np.abs(r.mean(0) - e.mean(0)), 4 * np.sqrt(v.mean(0) / S))
    ran_only = (a / (a + b))[:, 1, :8].mean(-1)  # agent a1's conditional mean over the tasks it ran
    assert ran_only.mean() - e.mean(0)[1] > 0.2  # what leaving its 12 unrun tasks out would give
    assert np.all(r.std(0) > e.std(0))
    # Var(R - E) = mean V; a sample variance of 4,000 draws: 4 SE is about 9% (normal), 15% allowed
    np.testing.assert_allclose((r - e).var(0), v.mean(0), rtol=0.15)
    assert out.attrs["scale"] == "probability" and "realised task average" in out.attrs["meaning"]
    assert out.attrs["hierbench_data_hash"] == "h0"  # the fit's fingerprints travel with the draws


def test_a_fit_adds_the_realised_mean_observed_with_its_rng():
    from hierbench.bayes import build_beta_binomial
    from hierbench.bayes import fit
    from hierbench.testing import simulate_eval

    data, _ = simulate_eval(n_agents=2, n_tasks=10, n_runs=3, rng=0)
    model = build_beta_binomial(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 100 draws: the convergence checks may fail
        f1, f2 = (fit(model, draws=100, tune=100, chains=1, rng=4, progress=False) for _ in range(2))
    mo = f1["posterior"]["mean_observed"]
    post, c = f1["posterior"], f1["constant_data"]
    cond = ((post["mu"] * post["kappa"] + c["n_success"]) / (post["kappa"] + c["n_runs"])).mean("task")
    # draws of the p_t (their per-draw spread is 0.03-0.07 here), not their conditional expectations
    assert float(np.abs(mo - cond).max()) > 1e-2
    assert mo.dims == ("chain", "draw", "agent")
    assert mo.attrs["scale"] == "probability" and "realised task average" in mo.attrs["meaning"]
    assert mo.attrs["hierbench_data_hash"] == f1.attrs["hierbench_data_hash"]
    np.testing.assert_array_equal(mo.values, f2["posterior"]["mean_observed"].values)  # the fit's rng
    # added after sampling by the hook the model names, not a Deterministic of the model
    assert model.hierbench["hooks"]["postprocess"] == "beta_binomial.mean_observed"
    assert "mean_observed" not in model.named_vars
