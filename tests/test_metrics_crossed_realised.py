"""Crossed model: realised observed-task averages (one p_mt per cell drawn from its conditional posterior)."""

from __future__ import annotations

import functools
import json
import math
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import integrate
from scipy import stats
from scipy.special import expit

from hierbench._base import UndefinedMetricWarning
from hierbench.bayes import ConvergenceWarning
from hierbench.bayes import build_crossed
from hierbench.bayes import fit
from hierbench.metrics import pass_at_k
from hierbench.metrics import pass_hat_k
from hierbench.metrics import posterior_interval
from hierbench.metrics._crossed import _mean_observed_draws
from hierbench.metrics._crossed import crossed_pass_k
from hierbench.testing import simulate_eval

# ---------------------------------------------------------------------------
# a hand-built posterior: four parameter sets, each repeated over many draws

AGENTS, TASKS = ["m0", "m1"], ["t0", "t1", "t2"]
N = np.array([[5, 40, 0], [1, 5, 12]])  # t2 never run by m0: a prior cell
Y = np.array([[2, 37, 0], [0, 5, 3]])
SETS = [  # (mu, agent effects, task effects, sd_agent_task)
    (-0.5, [0.3, -0.3], [0.5, -1.0, 0.5], 0.4),
    (0.3, [0.8, -0.8], [-0.2, 1.5, -1.3], 1.0),
    (1.0, [-0.1, 0.1], [1.0, 0.0, -1.0], 1.6),
    (-1.2, [0.5, -0.5], [0.0, 2.0, -2.0], 2.5),
]
FNS = {  # (kind, k): the per-cell function whose task average is reported
    ("hat", 1): lambda p: p,
    ("hat", 3): lambda p: p**3,
    ("at", 3): lambda p: 1.0 - (1.0 - p) ** 3,
}


def _synthetic_fit(
    agent_task: str = "marginal", n_quad: int = 7, chains: int = 2, draws: int = 10_000
) -> tuple[xr.DataTree, np.ndarray]:
    """A DataTree with the fields a crossed fit carries; draw i uses parameter set i % 4."""
    idx = np.arange(chains * draws).reshape(chains, draws) % len(SETS)
    mu = np.array([s[0] for s in SETS])[idx]
    a = np.array([s[1] for s in SETS])[idx]
    b = np.array([s[2] for s in SETS])[idx]
    sd = np.array([s[3] for s in SETS])[idx]
    cd = ("chain", "draw")
    post = xr.Dataset(
        {
            "mu": (cd, mu),
            "agent_effect": ((*cd, "agent"), a),
            "task_effect": ((*cd, "task"), b),
            "sd_agent": (cd, np.ones_like(mu)),
            "sd_task": (cd, np.ones_like(mu)),
        },
        coords={
            "chain": np.arange(chains),
            "draw": np.arange(draws),
            "agent": AGENTS,
            "task": TASKS,
        },
    )
    if agent_task != "none":
        post["sd_agent_task"] = (cd, sd)
    if agent_task == "latent":
        z = np.random.default_rng(0).normal(size=(chains, draws, 2, 3))
        post["agent_task_effect"] = ((*cd, "agent", "task"), sd[..., None, None] * z)
    const = xr.Dataset(
        {"n_runs": (("agent", "task"), N), "n_success": (("agent", "task"), Y)},
        coords={"agent": AGENTS, "task": TASKS},
    )
    dt = xr.DataTree.from_dict({"posterior": post, "constant_data": const})
    dt.attrs["hierbench_model"] = "crossed"
    dt.attrs["hierbench_spec"] = json.dumps(
        {"options": {"agent_task": agent_task, "n_quad": n_quad}}
    )
    return dt, idx


@functools.cache
def _cell_moments(f, y: int, n: int, eta: float, sd: float) -> tuple[float, float]:
    """E[f(p)] and Var(f(p)) for logit p = eta + ab, density of ab proportional to
    N(ab; 0, sd) Binomial(y | n, expit(eta + ab)), by scipy's adaptive quadrature.

    The integrand is written out (binomial pmf and normal density, as in any textbook):
    scipy.stats' per-call overhead made these quadratures the slowest part of the tests
    that use them. Cached: a test asks for the same few cells once per draw.
    """
    norm = 1.0 / (sd * math.sqrt(2.0 * math.pi))

    def lik(x: float) -> float:
        p = 1.0 / (1.0 + math.exp(-(eta + x)))
        return math.comb(n, y) * p**y * (1.0 - p) ** (n - y) * norm * math.exp(-0.5 * (x / sd) ** 2)

    def integral(g) -> float:
        val, _ = integrate.quad(
            lambda x: g(x) * lik(x),
            -12 * sd,
            12 * sd,
            limit=500,
            epsabs=0,
            epsrel=1e-11,
            points=[0.0],
        )
        return val

    z = integral(lambda x: 1.0)
    m1 = integral(lambda x: f(expit(eta + x))) / z
    m2 = integral(lambda x: f(expit(eta + x)) ** 2) / z
    return m1, m2 - m1**2


def _set_moments(f, j: int, m: int) -> tuple[float, float]:
    """For parameter set j and agent m: the mean over tasks of E[f(p_mt)] and (1/T^2) sum_t Var(f(p_mt))."""
    mu, a, b, sd = SETS[j]
    mom = [
        _cell_moments(f, int(Y[m, t]), int(N[m, t]), mu + a[m] + b[t], sd)
        for t in range(len(TASKS))
    ]
    T = len(TASKS)
    return float(np.mean([x[0] for x in mom])), float(sum(x[1] for x in mom) / T**2)


# 7 nodes (the model's default) against 31: the node law reproduces the conditional moments
# only to quadrature accuracy. Measured on these cells (20,000 draws), the 7-node rule's
# conditional variances are within about 3% of scipy for sd_agent_task <= 1.6, but about
# 10% off for p^3 and 1 - (1 - p)^3 at sd_agent_task = 2.5 (set 3, left out at 7 nodes);
# with 31 nodes they agree within Monte Carlo noise everywhere. `quad_rel` is the allowed
# quadrature error, relative to the expected excess variance.
@pytest.mark.parametrize(
    ("n_quad", "sets", "quad_rel"), [(31, [0, 1, 2, 3], 0.0), (7, [0, 1, 2], 0.05)]
)
@pytest.mark.slow
def test_node_draws_follow_the_law_of_total_variance(n_quad, sets, quad_rel):
    """Realised draws: centred on the conditional expectations, with the extra variance
    E[(1/T^2) sum_t Var(f(p_mt) | draw)] computed independently with scipy.integrate.quad.
    """
    dt, idx = _synthetic_fit(n_quad=n_quad)
    keep = np.isin(idx, sets)
    S = int(keep.sum())
    for (kind, k), f in FNS.items():
        # every task of the dataset (min_runs=0; the default "k" drops m0's never-run t2)
        cond = crossed_pass_k(dt, k=k, kind=kind, realised=False, min_runs=0)["draws"].sel(k=k)
        real = crossed_pass_k(dt, k=k, kind=kind, realised=True, rng=11, min_runs=0)["draws"].sel(k=k)
        assert real.attrs["draws_of"] == "realised task average"
        assert cond.attrs["draws_of"] == "conditional expectation given the draw"
        for m in range(len(AGENTS)):
            c = cond.isel(agent=m).values[keep]
            r = real.isel(agent=m).values[keep]
            mom = {j: _set_moments(f, j, m) for j in sets}
            # the conditional expectations themselves against scipy, per parameter set
            for j in sets:
                e_f = mom[j][0]
                got = cond.isel(agent=m).values[idx == j]
                assert np.ptp(got) == 0.0  # deterministic given the draw
                # quadrature accuracy of the mean (measured here: 5e-4 with 7 nodes, 5e-6 with 31)
                assert got[0] == pytest.approx(e_f, abs=1e-3 if n_quad == 7 else 2e-5)
            # eps = realised - conditional expectation: independent over draws, mean 0,
            # E[eps^2] = mean over draws of (1/T^2) sum_t Var(f(p_mt) | draw)
            eps = r - c
            excess = float(np.mean([mom[j][1] for j in idx[keep]]))
            # Monte Carlo tolerance: 5 standard errors of each sample mean (S draws)
            se_mean = eps.std() / np.sqrt(S)
            assert abs(r.mean() - c.mean()) < 5 * se_mean, (kind, k, m)
            se_sq = (eps**2).std() / np.sqrt(S)
            assert abs((eps**2).mean() - excess) < 5 * se_sq + quad_rel * excess, (
                kind,
                k,
                m,
                (eps**2).mean(),
                excess,
            )
            # and the total: Var(realised) = Var(conditional expectation) + excess; the
            # cross term 2 Cov(c, eps) adds Monte Carlo noise of sd ~ 2 sd(c) sd(eps) / sqrt(S)
            tol = 5 * (se_sq + 2 * c.std() * eps.std() / np.sqrt(S)) + quad_rel * excess
            assert abs(r.var() - c.var() - excess) < tol, (kind, k, m, r.var() - c.var(), excess)
            assert r.var() > c.var()


@pytest.mark.slow
def test_realised_is_reproducible_and_mean_stays_conditional():
    dt, _ = _synthetic_fit(draws=500)
    one = crossed_pass_k(dt, k=[1, 2], realised=True, rng=3)
    two = crossed_pass_k(dt, k=[1, 2], realised=True, rng=np.random.default_rng(3))
    xr.testing.assert_identical(one.to_dataset(), two.to_dataset())
    other = crossed_pass_k(dt, k=[1, 2], realised=True, rng=4)
    assert not np.array_equal(one["draws"].values, other["draws"].values)
    cond = crossed_pass_k(dt, k=[1, 2], realised=False)
    # `mean` is the average of the conditional expectations in both cases (no extra noise)
    xr.testing.assert_allclose(one["estimate"], cond["estimate"])
    assert one.attrs["draws_of"] == "realised task average"
    assert cond.attrs["draws_of"] == "conditional expectation given the draw"
    pop = crossed_pass_k(dt, k=1, population=True)
    assert pop.attrs["draws_of"] == "parameter"
    # the house interval, the one default level, no relabelling downstream
    assert one["ci"].attrs["ci_prob"] == 0.95 and one["ci"].attrs["ci_kind"] == "eti"


@pytest.mark.parametrize("agent_task", ["latent", "none"])
def test_fixed_p_fits_are_already_realised(agent_task):
    """p_mt is a function of the draw: realised=True changes nothing and uses no randomness."""
    dt, _ = _synthetic_fit(agent_task=agent_task, draws=200)
    cond = crossed_pass_k(dt, k=1, realised=False, min_runs=0)
    real = crossed_pass_k(dt, k=1, rng=5, min_runs=0)  # realised: the default
    xr.testing.assert_identical(cond.to_dataset(), real.to_dataset())
    assert real.attrs["draws_of"] == "realised task average"
    # the value itself: mean over tasks of expit(mu + a + b (+ ab)), written out here
    post = dt["posterior"].to_dataset()
    eta = post["mu"] + post["agent_effect"] + post["task_effect"]
    if agent_task == "latent":
        eta = eta + post["agent_task_effect"]
    want = expit(eta).mean("task").transpose("chain", "draw", "agent")
    np.testing.assert_allclose(real["draws"].sel(k=1).values, want.values, rtol=1e-12)


def test_realised_with_population_is_an_error():
    dt, _ = _synthetic_fit(draws=10)
    msg = r"`realised=True` applies to the observed tasks \(population=False\); the population pass\^k"
    with pytest.raises(ValueError, match=msg):
        crossed_pass_k(dt, k=1, population=True, realised=True)
    with pytest.raises(
        ValueError, match=r"`realised=True` applies to the observed tasks \(population=False\)"
    ):
        pass_at_k(dt, k=1, population=True, realised=True)


def test_pass_k_routes_realised_crossed_fits():
    dt, _ = _synthetic_fit(draws=300)
    for fn, kind in ((pass_hat_k, "hat"), (pass_at_k, "at")):
        res = fn(dt, k=[1, 2], realised=True, rng=8)
        direct = crossed_pass_k(dt, k=[1, 2], kind=kind, realised=True, rng=8)
        xr.testing.assert_identical(res["draws"], direct["draws"])
        assert res.attrs["draws_of"] == "realised task average"
        assert res.attrs["tasks"] == "observed"


# ---------------------------------------------------------------------------
# a real (small) fit: the postprocess fills mean_observed with realised draws


@pytest.fixture(scope="module")
def small_fits():
    data, truth = simulate_eval(
        n_agents=4, n_tasks=20, n_runs=3, sd_agent_task=1.2, p_missing_task=0.1, rng=4
    )
    out = []
    for _ in range(2):  # the same fit rng twice (the second compile is cached)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            out.append(fit(build_crossed(data), draws=300, tune=300, chains=2, rng=21))
    return data, truth, out


@pytest.mark.slow
def test_mean_observed_is_the_reproducible_realised_average(small_fits):
    _, _, (f1, f2) = small_fits
    mo = f1["posterior"]["mean_observed"]
    # a fixed fit rng gives the same mean_observed draws
    np.testing.assert_array_equal(mo.values, f2["posterior"]["mean_observed"].values)
    assert mo.dims == ("chain", "draw", "agent")
    assert mo.attrs["scale"] == "probability"
    assert "realised task average" in mo.attrs["meaning"]
    # the hook with a given generator is the k = 1 realised average
    hook = _mean_observed_draws(f1, np.random.default_rng(2))
    direct = crossed_pass_k(f1, k=1, realised=True, rng=2, min_runs=0)["draws"].sel(k=1, drop=True)
    np.testing.assert_array_equal(hook.values, direct.values)
    # wider than the conditional-expectation (Rao-Blackwellised) version for every agent
    # (measured width ratio 1.12-1.22 on these data, well clear of interval noise at 600 draws)
    cond = crossed_pass_k(f1, k=1, prob=0.9, realised=False, min_runs=0)
    w_cond = cond["ci"].sel(k=1).diff("ci_bound").squeeze("ci_bound").values
    w_real = posterior_interval(mo, prob=0.9).diff("ci_bound").squeeze("ci_bound").values
    assert np.all(w_real > 1.05 * w_cond), w_real / w_cond
    # and centred on it: paired differences, 5 Monte Carlo standard errors
    d = (mo - cond["draws"].sel(k=1, drop=True)).values.reshape(-1, mo.sizes["agent"])
    assert np.all(np.abs(d.mean(0)) < 5 * d.std(0) / np.sqrt(d.shape[0]))


# ---------------------------------------------------------------------------
# coverage of the truth: the average over the dataset's tasks of the simulated p_mt


@pytest.mark.slow
def test_realised_interval_covers_the_true_observed_task_mean():
    """90% realised intervals for each agent's observed-task mean contain mean_t p_mt at ~0.9.

    Design chosen so the cell-level spread matters (3 runs per cell, sd_agent_task = 2): an
    offline run of this design (60 replicates, 480 intervals, same sizes) measured coverage
    0.91 for the realised interval and 0.67 for the conditional-expectation interval, so the
    band below separates the two. This CI version has 16 replicates x 8 agents = 128
    intervals (the first 16 of ``benchmarks/bench_coverage_studies.py``'s part ``realised``,
    which runs 30 and quotes its figures); the true sds are fixed rather than drawn from the
    priors, so calibration is only approximate.
    """
    from bench_coverage_studies import realised_coverage

    hits = realised_coverage(16)
    n = hits["realised"].size
    # Binomial(n, 0.9) band at 0.1% on each side, its half-width widened by sqrt(1.5) for
    # the correlation between agents of one replicate (they share the task effects):
    # 0.804-0.996 at n = 128
    lo, hi = stats.binom.ppf([0.001, 0.999], n, 0.9) / n
    half = (hi - lo) / 2 * np.sqrt(1.5)
    lo_ok, hi_ok = 0.9 - half, 0.9 + half
    cov_real, cov_cond = float(np.mean(hits["realised"])), float(np.mean(hits["conditional"]))
    assert lo_ok <= cov_real <= hi_ok, (cov_real, lo_ok, hi_ok)
    # the band has power here: the narrower conditional-expectation interval (0.67 offline)
    # falls below it; its sd at n = 128 with the same widening is 0.051, so 0.804 is 2.6 sd
    # above 0.67
    assert cov_cond < lo_ok, (cov_cond, lo_ok)


@pytest.mark.slow
def test_compiled_node_masses_equal_the_numpy_computation():
    # the numba kernel used for (draw, agent, task) arrays and the NumPy reference
    # implementation are the same computation, to rounding; cells with 0 runs included
    from hierbench.metrics._crossed import _agq_weights

    rng = np.random.default_rng(3)
    S, A, T = 5, 3, 40
    n = rng.integers(0, 30, (A, T)).astype(float)
    y = np.floor(rng.random((A, T)) * (n + 1))
    eta = rng.normal(0.0, 2.0, (S, A, T))
    sd = np.broadcast_to(rng.uniform(0.05, 3.0, S)[:, None, None], (S, A, T))
    e1, w1 = _agq_weights(y[None], n[None], eta, sd, 7, compiled=True)
    e0, w0 = _agq_weights(y[None], n[None], eta, sd, 7, compiled=False)
    np.testing.assert_allclose(e1, e0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w1, w0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(w1.sum(-1), 1.0, atol=1e-12)


@pytest.mark.slow
def test_min_runs_averages_only_the_tasks_each_agent_ran():
    # agent m0 never ran t2 (N = 0): with min_runs=1 its average is over t0, t1 only;
    # with min_runs=6 only t1 (40 runs) for m0 and t2 (12 runs) for m1. The expected
    # conditional expectations per draw come from scipy quad, cell by cell.
    dt, idx = _synthetic_fit(n_quad=31, draws=8)  # parameter set i % 4, exact per draw
    f = FNS[("hat", 1)]
    for min_runs, cells in ((1, {0: [0, 1], 1: [0, 1, 2]}), (6, {0: [1], 1: [2]})):
        res = crossed_pass_k(dt, k=1, min_runs=min_runs, realised=False)
        assert res.attrs["over"] == f"the tasks each agent ran at least {min_runs} times"
        assert res.n_tasks.sel(k=1).values.tolist() == [len(cells[0]), len(cells[1])]
        for m, tasks in cells.items():
            got = res["draws"].sel(k=1).isel(agent=m).values.ravel()
            want = []
            for j in idx.ravel():
                mu, a, b, sd = SETS[j]
                want.append(np.mean([
                    _cell_moments(f, int(Y[m, t]), int(N[m, t]), mu + a[m] + b[t], sd)[0]
                    for t in tasks
                ]))
            np.testing.assert_allclose(got, want, atol=2e-4)  # 31-node quadrature vs quad


def test_min_runs_rules():
    dt, _ = _synthetic_fit(draws=4)
    with pytest.raises(ValueError, match=r"`min_runs` must be an integer >= 0 or 'k'; got -1"):
        crossed_pass_k(dt, min_runs=-1)
    with pytest.raises(ValueError, match=r"`min_runs` selects observed tasks \(population=False\)"):
        crossed_pass_k(dt, min_runs=2, population=True)
    # an agent that ran no task that often gets NaN, not a silent zero
    with pytest.warns(UndefinedMetricWarning, match=r"m0 at k=1, m1 at k=1: no task run at least min_runs times"):
        res = crossed_pass_k(dt, min_runs=41)
    assert np.isnan(res["draws"].sel(k=1).isel(agent=0).values).all()


@pytest.mark.parametrize("kind", ["hat", "at"])
def test_compiled_task_means_equal_the_numpy_arrays(kind):
    # the fused kernel and the node-mass arrays share nodes, masses and uniforms:
    # the same expected and realised averages (with and without a task mask)
    from hierbench.metrics._crossed import _task_means

    rng = np.random.default_rng(5)
    S, A, T = 70, 3, 40
    n = rng.integers(0, 12, (A, T)).astype(float)
    y = rng.binomial(n.astype(int), 0.4).astype(float)
    parts = {
        "mu": rng.normal(-0.5, 0.3, S), "a": rng.normal(0, 1, (S, A)), "b": rng.normal(0, 1.5, (S, T)),
        "sd_at": rng.uniform(0.2, 3.0, S), "n": n, "y": y, "n_quad": 7, "latent": False, "no_ab": False,
    }
    ks = np.array([1, 3])
    fns = [(lambda p, k=k: p**k) if kind == "hat" else (lambda p, k=k: 1.0 - (1.0 - p) ** k) for k in ks]
    for mask in (None, n >= 4):
        e0, r0 = _task_means(parts, fns, np.random.default_rng(9), mask=mask)
        e1, r1 = _task_means(parts, fns, np.random.default_rng(9), mask=mask, spec=(kind, ks))
        np.testing.assert_allclose(e1, e0, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(r1, r0, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_draw_kernels_are_bit_identical_whatever_the_threads(monkeypatch, threads):
    # the draw kernels run blocks of draws on threads: each draw's arithmetic is its own,
    # so any split gives exactly the single-block result (one thread, no split), including
    # more threads than draws and blocks of unequal size
    import numba

    from hierbench._numerics import gauss_hermite
    from hierbench._numerics import node_masses
    from hierbench._numerics import task_means

    rng = np.random.default_rng(11)
    S, A, T = 5, 3, 70
    n = rng.integers(0, 20, (A, T)).astype(float)
    y = np.floor(rng.random((A, T)) * (n + 1))
    eta, sd = rng.normal(0.0, 2.0, (S, A, T)), rng.uniform(0.1, 3.0, S)
    u, w = gauss_hermite(7)
    args = (y, n, eta, sd, u, np.log(w), 50)
    extra = (np.full((A, T), 1.0 / T), np.array([1, 4]), True, rng.random((S, A, T)))

    def run():
        return (*node_masses(*args), *task_means(*args, *extra))

    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 1)
    want = run()
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", threads)
    for got, ref in zip(run(), want, strict=True):
        assert np.array_equal(got, ref)


def test_mean_observed_is_bit_identical_whatever_the_threads(monkeypatch):
    # the fit's postprocess (mean_observed: realised task averages, seeded) through the
    # threaded kernel: one thread and three give the same draws bit for bit
    import numba

    from hierbench.metrics._crossed import _mean_observed_draws

    dt, _ = _synthetic_fit(draws=50)
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 1)
    want = _mean_observed_draws(dt, rng=5).values
    monkeypatch.setattr(numba.config, "NUMBA_NUM_THREADS", 3)
    assert np.array_equal(_mean_observed_draws(dt, rng=5).values, want)
