"""bootstrap_ci: agreement with scipy and direct resampling, ragged and clustered data, errors."""

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from _helpers import seed003_passages
from scipy import stats

from hierbench.freq import DegenerateBootstrapWarning
from hierbench.freq import EmptySampleWarning
from hierbench.freq import InsufficientRunsWarning
from hierbench.freq import UndefinedResampleWarning
from hierbench.freq import bootstrap_ci
from hierbench.freq import pass_hat_k
from hierbench.freq import task_weights
from hierbench.testing import simulate_eval


def _mc_tol(dist_sd: float, n_resamples: int, q: float = 0.025) -> float:
    """Monte Carlo SD of a bootstrap quantile for a near-normal distribution."""
    return dist_sd * np.sqrt(q * (1 - q)) / (stats.norm.pdf(stats.norm.ppf(q)) * np.sqrt(n_resamples))


def test_bca_matches_scipy_on_per_task_means():
    ds, _ = simulate_eval(n_agents=1, n_tasks=60, n_runs=4, rng=11)
    per_task = ds.score.isel(agent=0).mean("run").values
    B = 5000
    ours = bootstrap_ci(ds, method="bca", n_resamples=B, rng=1)
    ref = stats.bootstrap((per_task,), np.mean, method="BCa", n_resamples=B, rng=np.random.default_rng(2))
    sd = float(ours.standard_error[0])
    tol = 4 * np.sqrt(2) * _mc_tol(sd, B)  # two independent MC estimates, 4 sigma
    got = ours.ci.isel(agent=0).values
    assert abs(got[0] - ref.confidence_interval.low) < tol
    assert abs(got[1] - ref.confidence_interval.high) < tol
    assert float(ours.estimate[0]) == pytest.approx(per_task.mean())
    assert abs(sd - ref.standard_error) < 0.05 * ref.standard_error


def test_bca_counts_resamples_tied_with_the_estimate_as_half_below():
    """0/1 scores, 372 of 500 solved (SWE-bench's best agent): about 4% of task-bootstrap means equal the
    estimate. z0 is scipy's mid-rank one (percentileofscore kind='mean'), not the share strictly below.
    """
    T, c = 500, 372
    score = np.zeros((1, T, 1))
    score[0, :c, 0] = 1.0
    ds = xr.Dataset({"score": (("agent", "task", "run"), score)}, coords={"agent": ["a"]})
    res = bootstrap_ci(ds, method="bca", n_resamples=20_000, rng=0)
    dist, theta = res.distribution.values[:, 0], c / T
    tied = np.isclose(dist, theta, rtol=0, atol=1e-12).mean()
    assert 0.03 < tied < 0.05
    want = stats.norm.ppf(stats.percentileofscore(dist, theta, kind="mean") / 100)
    assert float(res.bias_correction[0]) == pytest.approx(want, abs=1e-9)
    assert abs(want) < 0.03  # the strict share gave -0.05: a whole grid step off at the upper end


def test_percentile_equals_direct_resampling_with_same_weights():
    # 6 agents: the weights path (up to 4 statistics are computed by indexing the drawn tasks)
    ds, _ = simulate_eval(n_agents=6, n_tasks=25, n_runs=3, rng=5)
    B = 500
    res = bootstrap_ci(ds, n_resamples=B, rng=7)
    w = task_weights(25, B, 7)  # the same draws, recomputed by hand
    per_task = ds.score.mean("run").values  # (agent, task)
    boot = np.stack([np.repeat(per_task, w[b], axis=1).mean(1) for b in range(B)])
    np.testing.assert_allclose(res.distribution.values, boot, rtol=1e-12)
    np.testing.assert_allclose(res.ci.values, np.quantile(boot, [0.025, 0.975], axis=0).T, rtol=1e-12)


def test_binary_scores_take_exact_float32_products():
    # binary scores: the weighted sums are small integers, exact in float32, so the
    # float32 fast path must give exactly what float64 resampling by hand gives
    ds, _ = simulate_eval(n_agents=8, n_tasks=60, n_runs=1, rng=11)
    B = 400
    res = bootstrap_ci(ds, n_resamples=B, rng=3)
    w = task_weights(60, B, 3).astype(float)
    per_task = ds.score.mean("run").values
    np.testing.assert_array_equal(res.distribution.values, (w @ per_task.T) / 60.0)


def test_few_distinct_values_draw_multinomial_counts_with_the_bootstrap_law():
    # one agent, binary scores, T = 400 tasks, 130 solved: the task-bootstrap mean is
    # exactly Binomial(400, 130/400) / 400 (each drawn task is solved w.p. 130/400)
    T, c = 400, 130
    score = np.zeros((1, T, 1))
    score[0, :c, 0] = 1.0
    ds = xr.Dataset({"score": (("agent", "task", "run"), score)}, coords={"agent": ["a"]})
    B = 20_000
    res = bootstrap_ci(ds, n_resamples=B, rng=0)
    succ = np.rint(res.distribution.values[:, 0] * T).astype(int)
    np.testing.assert_allclose(succ / T, res.distribution.values[:, 0], atol=1e-12)  # on the lattice
    # chi-square goodness of fit against the binomial law over the central bins
    law = stats.binom(T, c / T)
    edges = np.arange(law.ppf(0.001), law.ppf(0.999) + 2) - 0.5
    obs, _ = np.histogram(succ, bins=edges)
    exp = B * np.diff(law.cdf(edges))
    keep = exp > 5
    chi2 = (((obs - exp) ** 2) / exp)[keep].sum()
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 0.001
    # and the percentile interval is the binomial's quantiles within Monte Carlo error
    sd = np.sqrt(c / T * (1 - c / T) / T)
    tol = 4 * _mc_tol(sd, B) + 1 / T
    np.testing.assert_allclose(res.ci.values[0], law.ppf([0.025, 0.975]) / T, atol=tol)


def test_seed003_bootstrap_and_paired_difference():
    # seed 003: 500 questions, A right on 340, B on 322 (300 both, 40 A only, 22 B only)
    a = np.array([1] * 300 + [1] * 40 + [0] * 22 + [0] * 138, float)
    b = np.array([1] * 300 + [0] * 40 + [1] * 22 + [0] * 138, float)
    ds = xr.Dataset({"score": (("agent", "task", "run"), np.stack([a, b])[..., None])},
                    coords={"agent": ["A", "B"]})
    res = bootstrap_ci(ds, n_resamples=2000, rng=0)
    # printed "bootstrap CI of A: (0.64, 0.72)" (percentile, 2,000 resamples)
    assert [round(float(x), 2) for x in res.ci.sel(agent="A").values] == [0.64, 0.72]
    d = bootstrap_ci(ds, pairs=[("A", "B")], n_resamples=4000, rng=0)
    assert float(d.estimate[0]) == pytest.approx(0.036)
    # printed paired SE 0.0157 (CLT, ddof=1); bootstrap SE ~ sqrt((n-1)/n) of it, MC rel. sd ~1.1%
    assert float(d.standard_error[0]) == pytest.approx(0.0157, rel=0.04)
    assert d.ci.dims == ("pair", "ci_bound")


def test_cluster_bootstrap_reproduces_seed003_clustered_se():
    # seed 003 toolkit: 100 passages x 5 questions, p in {0.1, 0.9}; naive SE 0.0223, clustered 0.0427
    scores, clus = seed003_passages()
    da = xr.DataArray(scores[:, None], dims=("task", "run"), coords={"cluster": ("task", clus)})
    res = bootstrap_ci(da, n_resamples=4000, rng=3)
    assert res.attrs["resample_unit"] == "cluster"
    assert float(res.standard_error) == pytest.approx(0.0427, rel=0.05)
    flat = bootstrap_ci(da, cluster=None, n_resamples=4000, rng=3)
    assert float(flat.standard_error) == pytest.approx(0.0223, rel=0.05)


def test_metr_ragged_clustered(metr_eval):
    ds = metr_eval
    with pytest.warns(DegenerateBootstrapWarning):  # one agent failed all of its 16 tasks
        res = bootstrap_ci(ds, method="bca", n_resamples=2000, rng=0)
    # independent per-task means straight from the scores
    cell = ds.score.mean("run")  # NaN where the agent never ran the task
    expect = cell.mean("task", skipna=True)
    np.testing.assert_allclose(res.estimate.values, expect.values, rtol=1e-12)
    np.testing.assert_array_equal(res.n_tasks.values, cell.notnull().sum("task").values)
    assert int(res.n_excluded.max()) == 67 and res.attrs["resample_unit"] == "cluster"
    # BCa acceleration: grouped jackknife over task families, computed with pandas
    agent = str(ds.agent.values[0])
    df = pd.DataFrame({"v": cell.sel(agent=agent).values, "fam": ds.cluster.values}).dropna()
    jack = np.array([df.v[df.fam != f].mean() for f in df.fam.unique()])
    dev = jack.mean() - jack
    a = (dev**3).sum() / (6 * (dev**2).sum() ** 1.5)
    assert float(res.acceleration.sel(agent=agent)) == pytest.approx(a, rel=1e-10)
    assert res.distribution.dims == ("resample", "agent")
    assert res.ci.attrs["ci_prob"] == 0.95 and res.ci.attrs["ci_kind"] == "bca"
    assert list(res.ci.ci_bound.values) == ["lower", "upper"]


def test_metr_paired_difference_on_common_tasks(metr_eval):
    ds = metr_eval
    cell = ds.score.mean("run")
    n_tasks = cell.notnull().sum("task")
    a = str(ds.agent.values[int(np.argmax(n_tasks.values))])
    b = str(ds.agent.values[int(np.argmin(n_tasks.values))])  # the agent that ran 16 tasks
    res = bootstrap_ci(ds, pairs=[(a, b)], method="bca", n_resamples=1000, rng=0)
    d = (cell.sel(agent=a) - cell.sel(agent=b)).dropna("task")
    assert int(res.n_tasks[0]) == d.sizes["task"] == 16
    assert float(res.estimate[0]) == pytest.approx(float(d.mean()), rel=1e-12)
    assert int(res.n_excluded[0]) == ds.sizes["task"] - 16
    assert res.attrs["resample_unit"] == "cluster"


def test_pass_hat_k_statistic_and_two_stage_on_ragged():
    ds, _ = simulate_eval(n_agents=2, n_tasks=30, n_runs=6, p_missing_run=0.1, p_missing_task=0.1, rng=9)
    with pytest.warns(InsufficientRunsWarning):
        ref = pass_hat_k(ds, 6).estimate
    for scheme in ("tasks", "runs", "two-stage"):
        with pytest.warns(InsufficientRunsWarning, match=r"fewer runs than k \(n_runs < k; k=6\)"):
            res = bootstrap_ci(ds, "pass_hat_k", k=6, scheme=scheme, n_resamples=300, rng=1)
        assert (res.n_excluded.values > 3).all()
        np.testing.assert_allclose(res.estimate.values, ref.values, rtol=1e-12)
        assert np.isfinite(res.ci.values).all()
    # continuous scores: runs are resampled from the cell's own runs
    dc, _ = simulate_eval(n_agents=2, n_tasks=20, n_runs=5, score_kind="continuous", sd_run=0.5,
                          p_missing_run=0.2, rng=4)
    res = bootstrap_ci(dc, scheme="two-stage", n_resamples=300, rng=2)
    assert (res.ci.sel(ci_bound="lower") < res.estimate).all()


@pytest.mark.parametrize("kind", ["binary", "continuous"])
def test_runs_scheme_variance_matches_within_cell_formula(kind):
    # resampling n runs with replacement: Var(cell mean*) = (biased within-cell variance) / n,
    # so the SD of the mean over T tasks is sqrt(sum_t s2_t / n_t) / T
    ds, _ = simulate_eval(n_agents=2, n_tasks=30, n_runs=8, score_kind=kind, sd_run=1.0,
                          p_missing_run=0.4, rng=12)
    res = bootstrap_ci(ds, scheme="runs", n_resamples=4000, rng=3)
    n = ds.score.notnull().sum("run")
    s2 = ds.score.var("run", ddof=0)
    expect = np.sqrt((s2 / n).sum("task")) / ds.sizes["task"]
    # MC relative SD of a bootstrap SD with B = 4000 is ~1.1%
    np.testing.assert_allclose(res.standard_error.values, expect.values, rtol=0.05)


def test_unpaired_resamples_are_independent():
    ds, _ = simulate_eval(n_agents=2, n_tasks=40, n_runs=8, sd_agent_task=0.3, rng=1)
    p = bootstrap_ci(ds, n_resamples=3000, rng=0).distribution.values
    u = bootstrap_ci(ds, n_resamples=3000, rng=0, paired=False).distribution.values
    # shared task draws: the bootstrap correlation is the across-task correlation of the cell means
    r_tasks = np.corrcoef(ds.score.mean("run").values)[0, 1]
    assert r_tasks > 0.5
    assert np.corrcoef(p.T)[0, 1] == pytest.approx(r_tasks, abs=0.05)
    assert abs(np.corrcoef(u.T)[0, 1]) < 0.08  # independent draws: |r| < ~4/sqrt(3000)


def test_custom_statistic_contract():
    ds, _ = simulate_eval(n_agents=3, n_tasks=30, n_runs=2, rng=2)

    def wmean(values, weights):
        v = np.nan_to_num(values)
        return np.einsum("bt,but->bu", weights, np.broadcast_to(v, (weights.shape[0], *v.shape[1:]))) / weights.sum(1)[:, None]

    a = bootstrap_ci(ds, wmean, method="bca", n_resamples=400, rng=5)
    b = bootstrap_ci(ds, "mean", method="bca", n_resamples=400, rng=5)
    np.testing.assert_allclose(a.ci.values, b.ci.values, rtol=1e-10)

    def spread(values, weights):  # scalar statistic: best minus worst agent
        m = wmean(values, weights)
        return m.max(1) - m.min(1)

    s = bootstrap_ci(ds, spread, n_resamples=200, rng=5)
    assert s.ci.dims == ("ci_bound",)
    with pytest.raises(ValueError, match=r"callable `statistic` must return an array of shape \(b,\) or \(b, U\)"):
        bootstrap_ci(ds, lambda v, w: np.zeros((w.shape[0], 7)), n_resamples=10, rng=0)


def test_degenerate_and_undefined_are_named():
    da = xr.DataArray(np.ones((10, 2)), dims=("task", "run"))
    with pytest.warns(DegenerateBootstrapWarning, match="BCa is undefined for 1 of 1"):
        res = bootstrap_ci(da, method="bca", n_resamples=100, rng=0)
    assert np.isnan(res.ci.values).all()
    score = np.full((2, 3, 1), np.nan)
    score[0] = 1.0
    score[1, 0] = 0.0  # agent 1 ran a single task
    ds = xr.Dataset({"score": (("agent", "task", "run"), score)}, coords={"agent": ["x", "y"]})
    # hand count: y's mean is undefined exactly in the resamples that drew no copy of task 0;
    # a callable statistic sees the same task weights as the built-in mean (same rng)
    seen = []

    def mean_seen(values, weights):
        seen.append(weights.copy())
        v = values[0]  # (U, T): scheme="tasks" holds the data fixed
        ran = np.isfinite(v)
        num, den = weights @ np.where(ran, v, 0.0).T, weights @ ran.T
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)

    with pytest.warns(UndefinedResampleWarning):
        bootstrap_ci(ds, mean_seen, n_resamples=300, rng=0)
    w = np.concatenate(seen[1:])  # the first call is the estimate on the data
    assert w.shape == (300, 3)
    hand = int((w[:, 0] == 0).sum())
    # and the count is what the draw makes likely: 300 (2/3)^3 = 88.9, binomial SD 7.9 (4 SD)
    assert abs(hand - 300 * (2 / 3) ** 3) < 4 * np.sqrt(300 * (8 / 27) * (19 / 27))
    with pytest.warns(UndefinedResampleWarning) as rec:
        res = bootstrap_ci(ds, n_resamples=300, rng=0)
    msg = str(rec[0].message)
    assert f"agent 'y' in {hand} of 300 resamples (" in msg  # y only: x ran every task
    assert "agent 'x'" not in msg and "give the agent more tasks" in msg
    assert int(res.n_undefined.sel(agent="y")) == hand
    # a pair is named by its label, and is undefined where y is
    with pytest.warns(UndefinedResampleWarning, match=f"pair 'x - y' in {hand} of 300 resamples"):
        bootstrap_ci(ds, pairs="all", n_resamples=300, rng=0)


def test_an_agent_with_no_runs_is_named_as_empty_not_as_undefined_resamples():
    # a hand-built log: 'a' ran 4 tasks (one of them once), 'b' has no runs at all, 'c' ran
    # every task once (so it has no task with the 2 runs pass^2 needs)
    nan = np.nan
    score = np.array([
        [[1, 0], [1, 1], [0, 0], [1, nan]],
        [[nan, nan]] * 4,
        [[1, nan], [0, nan], [1, nan], [1, nan]],
    ])
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), score)},
        coords={"agent": ["a", "b", "c"], "task": ["w", "x", "y", "z"]},
    )

    def run(data, **kw):
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            res = bootstrap_ci(data, n_resamples=50, rng=0, **kw)
        return res, [(w.category, str(w.message)) for w in rec]

    for method in ("percentile", "bca"):
        res, rec = run(ds, method=method)
        # one warning, naming b and why; not "undefined in 50 of 50 resamples", no numpy noise
        # (nanstd's "Degrees of freedom", the jackknife's "Mean of empty slice"), no BCa warning
        assert [c for c, _ in rec] == [EmptySampleWarning], rec
        assert "1 of 3 outputs: agent 'b' (no runs at all)" in rec[0][1]
        assert "data.drop_sel(agent=['b'])" in rec[0][1]
        # by hand: a's task means 0.5, 1, 0, 1 -> 0.625; c's 1, 0, 1, 1 -> 0.75
        assert res.estimate.values[[0, 2]].tolist() == [0.625, 0.75]
        assert np.isnan(res.estimate.sel(agent="b")) and np.isnan(res.ci.sel(agent="b")).all()
        assert np.isnan(res.standard_error.sel(agent="b"))
        assert res.n_tasks.values.tolist() == [4, 0, 4]
        # the others do not use b: the same interval as with b left out
        alone = bootstrap_ci(ds.drop_sel(agent="b"), n_resamples=50, rng=0, method=method)
        assert np.array_equal(res.ci.sel(agent=["a", "c"]).values, alone.ci.values)
    # pass^2: c has runs but no task with 2 of them; its cells are counted by InsufficientRunsWarning
    res, rec = run(ds, statistic="pass_hat_k", k=2)
    assert [c for c, _ in rec] == [InsufficientRunsWarning, EmptySampleWarning], rec
    assert "agent 'b' (no runs at all); agent 'c' (no task with k=2 runs)" in rec[1][1]
    assert res.n_tasks.values.tolist() == [3, 0, 0]  # a's task z has one run
    # a pair with b has nothing to difference; a - c stands
    res, rec = run(ds, pairs="all")
    assert [c for c, _ in rec] == [EmptySampleWarning], rec
    assert "pair 'a - b' (agent 'b' has no runs at all); pair 'b - c' (agent 'b' has no runs at all)" in rec[0][1]
    assert float(res.estimate.sel(pair="a - c")) == 0.625 - 0.75


def test_errors_are_named():
    ds, _ = simulate_eval(n_agents=2, n_tasks=5, n_runs=2, rng=0)
    with pytest.raises(ValueError, match=r"`scheme` must be one of \['tasks', 'runs', 'two-stage'\]; got 'task'"):
        bootstrap_ci(ds, scheme="task")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`method` must be one of \['percentile', 'bca'\]; got 'BCa'"):
        bootstrap_ci(ds, method="BCa")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`n_resamples` must be an integer >= 2; got 1"):
        bootstrap_ci(ds, n_resamples=1)
    with pytest.raises(ValueError, match=r"`prob` must satisfy 0 < prob < 1; got prob=95"):
        bootstrap_ci(ds, prob=95)
    with pytest.raises(ValueError, match=r"`k` must be a positive integer for statistic='pass_hat_k'; got k=None"):
        bootstrap_ci(ds, "pass_hat_k")
    with pytest.raises(ValueError, match=r"`statistic` must be 'mean', 'pass_hat_k', 'pass_at_k' or a callable; got 'median'"):
        bootstrap_ci(ds, "median")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"`pairs` names agents not in the data: \['nobody'\]"):
        bootstrap_ci(ds, pairs=[("agent_00", "nobody")])
    with pytest.raises(ValueError, match=r"`cluster` must name a coord along 'task'; got 'family'"):
        bootstrap_ci(ds, cluster="family")
    dc, _ = simulate_eval(n_agents=1, n_tasks=5, n_runs=2, score_kind="continuous", rng=0)
    with pytest.raises(ValueError, match=r"statistic='pass_at_k' needs binary scores"):
        bootstrap_ci(dc, "pass_at_k", k=1)
    with pytest.raises(ValueError, match=r"`run_dim` must be a dimension of the (scores|data)"):
        bootstrap_ci(ds, run_dim="epoch")
    with pytest.raises(ValueError, match=r"`k` is only used with statistic='pass_hat_k' or 'pass_at_k'; got k=3"):
        bootstrap_ci(ds, k=3)
    with pytest.raises(ValueError, match=r"`pairs` needs paired=True"):
        bootstrap_ci(ds, pairs="all", paired=False)
    counts = xr.Dataset({"n_runs": ("task", [2, 2]), "n_success": ("task", [0.5, 1.5])})
    with pytest.raises(ValueError, match=r"scheme='runs' resamples runs, which needs the runs themselves"):
        bootstrap_ci(counts, scheme="runs")


def _sparse_and_dense(rng, T=60, R=4):
    """Agent ``rare`` succeeds on three tasks once each; ``common`` on about half its runs everywhere."""
    s = np.zeros((2, T, R))
    s[0, :3, 0] = 1.0
    s[1] = rng.random((T, R)) < 0.5
    return xr.Dataset({"score": (("agent", "task", "run"), s)},
                      coords={"agent": ["rare", "common"], "task": [f"t{i}" for i in range(T)]})  # fmt: skip


def test_bootstrap_flags_a_mean_few_tasks_carry():
    ds = _sparse_and_dense(np.random.default_rng(5))
    res = bootstrap_ci(ds, n_resamples=199, rng=0)
    # n_eff = (sum y)^2 / sum y^2 over the per-task means: 3 for `rare` (three tasks at 0.25), below
    # min(10, 60 / 2); about 60 / (1 + cv^2) for `common`
    y = ds.score.mean("run").values
    n_eff = y.sum(1) ** 2 / (y**2).sum(1)
    assert n_eff[0] == pytest.approx(3.0) and n_eff[1] > 30
    assert list(res.ci_flag.values) == ["few tasks carry the mean", ""]
    assert "ci_flag" in res.to_frame().columns
    # audit F 8.2: the mirror image (1 - y) rests on few *failing* tasks, and the flag says so
    flipped = bootstrap_ci(ds.assign(score=1 - ds.score), n_resamples=199, rng=0)
    assert list(flipped.ci_flag.values) == ["few tasks carry the failures (1 - mean)", ""]
    # pairs and the runs scheme carry no flag (differences are not [0, 1] means; runs are another target)
    assert bootstrap_ci(ds, pairs="all", n_resamples=99, rng=0).ci_flag is None
    assert bootstrap_ci(ds, scheme="runs", n_resamples=99, rng=0).ci_flag is None
