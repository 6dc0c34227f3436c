"""person_fit: the agents whose per-task results do not follow the tasks' difficulty.

Real data: SWE-bench bash-only (the Claude 3.7 Sonnet record that PROVENANCE.md calls corrupted:
10.2% per instance against a reported 52.8%), METR binarised, tau-bench (one agent). Simulation:
2PL logs with agent slopes varying (lognormal, sd 0.3) and ragged runs. An independent fit:
the leave-agent-out logit in pandas and the Firth fit by scipy.optimize on the penalised
likelihood, and statsmodels' plain maximum likelihood beside it.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench import HierbenchError
from hierbench import PartialCreditError
from hierbench.freq import PersonFitResult
from hierbench.freq import person_fit


def _log(gen, M=10, T=300, corrupt=False):
    """Counts from a 2PL log: slopes lognormal (sd 0.3), 1-3 runs per cell, 10% of cells missing.

    ``corrupt``: agent ``a0``'s cells replaced by Binomial draws at its own mean rate.
    """
    z = gen.normal(0.0, 1.5, T)
    a = np.exp(gen.normal(0.0, 0.3, M))
    d = gen.normal(-0.3, 1.0, M)
    p = 1.0 / (1.0 + np.exp(-(d[:, None] + a[:, None] * z)))
    n = gen.integers(1, 4, (M, T))
    n[gen.random((M, T)) < 0.1] = 0
    c = gen.binomial(n, p).astype(float)
    if corrupt:
        c[0] = gen.binomial(n[0], c[0].sum() / n[0].sum())
    return xr.Dataset(
        {"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), c)},
        coords={"agent": [f"a{i}" for i in range(M)], "task": [f"t{i}" for i in range(T)]},
    )


# ------------------------------------------------------------------ real data


@pytest.mark.slow
def test_swebench_flags_the_claude_37_record_and_no_other_agent(shared_data):
    from hierbench.data import load_swebench_bash_only

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reader's own notice of the file's flag column
        ds = load_swebench_bash_only(shared_data)
    ds = ds.drop_vars([v for v in ds.data_vars if v != "score"])  # the scores alone: no annotation
    r = person_fit(ds, rng=0)
    flagged = r.flagged.to_series()
    assert flagged[flagged].index.tolist() == ["Claude 3.7 Sonnet (20250219)"]
    who = {"agent": "Claude 3.7 Sonnet (20250219)"}
    assert int(r.n_tasks.sel(who)) == 500
    assert float(r.estimate.sel(who)) < 0.6 < 1.0 < float(r.estimate.drop_sel(who).min())
    assert float(r.p_adjusted.sel(who)) < 0.01
    # the reader's figure: 9 of the 60 tasks that >= 90% of the other 24 solve (15%), where
    # the lowest rate among the agents not flagged is Qwen2.5-Coder 32B's 41%
    assert int(r.n_common.sel(who)) == 60
    assert float(r.common_rate.sel(who)) == pytest.approx(9 / 60)
    assert r.lowest_unflagged_agent == "Qwen2.5-Coder 32B Instruct"
    assert r.lowest_unflagged == pytest.approx(26 / 63)
    text = repr(r)
    assert "1 agent does not follow the tasks' difficulty" in text
    assert "Claude 3.7 Sonnet (20250219): slope 0.49" in text and "15% of the 60 tasks" in text


def test_metr_flags_no_agent(metr_eval):
    r = person_fit(metr_eval, rng=0)
    assert not r.flagged.any()
    # davinci-002 never succeeds (counted here from the scores): its penalised slope would be
    # the penalty alone, so it is not tested; every other agent is
    runs = metr_eval["score"].sel(agent="davinci-002")
    assert float(runs.sum()) == 0 and int(runs.notnull().any("run").sum()) == 16
    untested = r.p_value.isnull().to_series()
    assert untested[untested].index.tolist() == ["davinci-002"]
    assert np.isnan(float(r.estimate.sel(agent="davinci-002")))
    assert str(r.note.sel(agent="davinci-002").item()).startswith("no successes in its ")
    # the lowest p: gpt-3.5-turbo-instruct (about 3 successes in 530 runs), whose slope is
    # low but measured too loosely to set it apart
    assert str(r.p_value.idxmin().item()) == "gpt-3.5-turbo-instruct"
    assert float(r.p_value.min()) > 0.01
    text = repr(r)
    assert "no agent flagged at Holm alpha 0.05 (not being flagged is not evidence" in text
    assert "not tested: davinci-002 (no successes in its" in text and "on 16 tasks" in text
    assert "follows the tasks' difficulty;" not in text


def test_tau_bench_one_agent_is_refused_as_not_applicable(shared_data):
    from hierbench.data import load_tau_bench_airline

    with pytest.raises(HierbenchError, match=r"at least 3 agents.*got 1 agent.*not applicable"):
        person_fit(load_tau_bench_airline(shared_data))


# ------------------------------------------------------------------ simulation


@pytest.mark.slow  # 30 logs
def test_simulated_genuine_agents_are_flagged_at_the_nominal_rate():
    # 30 logs x 10 agents = 300 genuine agents, every slope its own (lognormal, sd 0.3).
    # Nominal: P(p < 0.05) <= 0.05; Monte Carlo tolerance 3 binomial sd at 300 (0.038).
    # Seen: 0.043 (13 of 300) here; Holm flags none.
    gen = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # n_sim=199 cannot reach Holm's level: only the raw p is read
        res = [person_fit(_log(gen), n_sim=199, rng=gen) for _ in range(30)]
    p = np.concatenate([r.p_value.values for r in res])
    assert p.size == 300 and np.isfinite(p).all()
    assert (p < 0.05).mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 300)
    assert (p < 0.5).mean() == pytest.approx(0.5, abs=0.1)  # not conservative throughout either


@pytest.mark.slow  # 6 logs at 2,000 replicates
def test_a_record_of_draws_at_its_own_mean_is_flagged_at_300_tasks():
    # 6 logs of 10 agents, a0's record replaced by Bernoulli(its mean) draws: flagged in all 6
    # (power >= 0.61 at 95% confidence; 12 of 12 at 10 and at 20 agents in a longer run).
    # Of the 54 genuine agents one is flagged: the 6th log's a4, whose true slope 0.34 lies
    # 3.6 sd below the others' on the log scale (a draw of 1 in 6,000): the rare genuine
    # agent that does follow the tasks' difficulty far less steeply than the others do
    gen = np.random.default_rng(1)
    res = [person_fit(_log(gen, corrupt=True), n_sim=2000, rng=gen) for _ in range(6)]
    assert all(bool(r.flagged.sel(agent="a0")) for r in res)
    assert sum(int(r.flagged.drop_sel(agent="a0").sum()) for r in res) <= 1
    assert all(float(r.estimate.sel(agent="a0")) < 0.5 * float(r.reference_slope.sel(agent="a0")) for r in res)


# ------------------------------------------------------------------ independent computation


def test_slope_matches_an_independent_fit():
    import statsmodels.api as sm
    from scipy.optimize import minimize
    from scipy.special import expit

    gen = np.random.default_rng(3)
    cts = _log(gen, M=5, T=120)
    r = person_fit(cts, n_sim=199, rng=0)
    df = cts.to_dataframe().reset_index()
    df = df[df.n_runs > 0].assign(rate=lambda t: t.n_success / t.n_runs)
    for agent in ["a0", "a3"]:
        others = df[df.agent != agent].groupby("task")["rate"].agg(["sum", "count"])
        x = np.log((others["sum"] + 0.5) / (others["count"] + 1 - others["sum"] - 0.5))
        own = df[df.agent == agent].set_index("task").join(x.rename("x"), how="inner")
        X = np.column_stack([np.ones(len(own)), own.x.to_numpy()])
        y, n = own.n_success.to_numpy(), own.n_runs.to_numpy()

        def penalised(beta, X=X, y=y, n=n):
            p = expit(X @ beta)
            info = X.T @ (X * (n * p * (1 - p))[:, None])
            return -(np.sum(y * np.log(p) + (n - y) * np.log1p(-p)) + 0.5 * np.linalg.slogdet(info)[1])

        firth = minimize(penalised, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
        assert float(r.estimate.sel(agent=agent)) == pytest.approx(firth[1], abs=1e-5)
        p = expit(X @ firth)
        se = np.sqrt(np.linalg.inv(X.T @ (X * (n * p * (1 - p))[:, None]))[1, 1])
        lo, hi = r.ci.sel(agent=agent).values
        assert (hi - lo) / 2 == pytest.approx(1.959964 * se, rel=1e-4)
        # statsmodels' plain maximum likelihood (binomial GLM): Firth's differs by O(1/n) only
        mle = sm.GLM(np.column_stack([y, n - y]), X, family=sm.families.Binomial()).fit()
        assert abs(mle.params[1] - firth[1]) < 0.25 * mle.bse[1]
        assert int(r.n_tasks.sel(agent=agent)) == len(own)


# ------------------------------------------------------------------ rules and refusals


def test_tasks_pooled_at_one_logit_give_the_firth_fit_of_the_tasks():
    """The bootstrap pools tasks at the same logit into one binomial: the premise, checked.

    Independent: scipy's minimum of the penalised likelihood over the 200 tasks one by one; the
    package's Firth fit of the 9 pooled counts must find the same coefficients and standard error.
    """
    from scipy.optimize import minimize
    from scipy.special import expit

    from hierbench.freq._irt._person_fit import firth_logistic

    gen = np.random.default_rng(5)
    x = gen.choice(np.linspace(-2.0, 2.0, 9), 200)
    n = gen.integers(1, 4, 200).astype(float)
    y = gen.binomial(n.astype(int), expit(0.3 + 0.8 * x)).astype(float)
    X = np.column_stack([np.ones_like(x), x])

    def penalised(beta):
        p = expit(X @ beta)
        info = X.T @ (X * (n * p * (1 - p))[:, None])
        return -(np.sum(y * np.log(p) + (n - y) * np.log1p(-p)) + 0.5 * np.linalg.slogdet(info)[1])

    beta = minimize(penalised, np.zeros(2), method="BFGS", options={"gtol": 1e-10}).x
    p = expit(X @ beta)
    se = np.sqrt(np.linalg.inv(X.T @ (X * (n * p * (1 - p))[:, None]))[1, 1])
    xu, at = np.unique(x, return_inverse=True)
    a, b, se_b = firth_logistic(xu, np.bincount(at, weights=n), np.bincount(at, weights=y)[None])
    assert xu.size == 9
    assert (a[0], b[0]) == pytest.approx(tuple(beta), abs=1e-6)
    assert se_b[0] == pytest.approx(se, rel=1e-6)


def test_partial_credit_is_refused():
    s = np.random.default_rng(0).random((4, 10, 2))
    ds = xr.Dataset({"score": (("agent", "task", "run"), s)})
    with pytest.raises(PartialCreditError, match="person_fit needs binary scores"):
        person_fit(ds)


def test_ragged_scores_missing_cells_and_an_agent_with_too_few_tasks():
    gen = np.random.default_rng(4)
    cts = _log(gen, M=6, T=80)
    score = np.full((6, 80, 3), np.nan)
    for (m, t), k in np.ndenumerate(cts.n_runs.values):
        score[m, t, :k] = np.arange(k) < cts.n_success.values[m, t]
    score[5, 3:] = np.nan  # a5 ran 3 tasks only
    ds = xr.Dataset({"score": (("agent", "task", "run"), score)}, coords={"agent": cts.agent, "task": cts.task})
    r = person_fit(ds, n_sim=199, rng=1)
    assert isinstance(r, PersonFitResult)
    assert np.isnan(float(r.p_value.sel(agent="a5"))) and not bool(r.flagged.sel(agent="a5"))
    assert "fewer than 5 tasks" in str(r.note.sel(agent="a5").item())
    assert np.isfinite(r.p_value.drop_sel(agent="a5")).all()
    frame = r.to_frame()
    assert {"estimate", "lower", "upper", "p_value", "p_adjusted", "flagged", "n_tasks",
            "common_rate", "ci_prob", "ci_kind"} <= set(frame.columns)  # fmt: skip
    assert frame.ci_kind.iloc[0] == "normal" and frame.ci_prob.iloc[0] == 0.95
    # the same counts in, the same result out
    c2 = xr.Dataset({"n_runs": ds.score.notnull().sum("run"), "n_success": ds.score.fillna(0).sum("run")})
    np.testing.assert_allclose(person_fit(c2, n_sim=199, rng=1).estimate, r.estimate)


def test_arguments_are_checked_and_too_few_replicates_warned():
    cts = _log(np.random.default_rng(5), M=4, T=40)
    with pytest.raises(ValueError, match="prob"):
        person_fit(cts, prob=1.5)
    with pytest.raises(ValueError, match="n_sim"):
        person_fit(cts, n_sim=10)
    with pytest.raises(ValueError, match="agent_dim"):
        person_fit(cts, agent_dim="model")
    with pytest.warns(UserWarning, match="no agent can be flagged"):
        person_fit(cts, n_sim=99, alpha=0.01, rng=0)
    same = [person_fit(cts, n_sim=199, rng=7).p_value.values for _ in range(2)]
    np.testing.assert_array_equal(*same)


def test_three_agents_is_the_fewest():
    cts = _log(np.random.default_rng(6), M=3, T=60)
    r = person_fit(cts, n_sim=199, rng=0)
    assert r.estimate.sizes["agent"] == 3
    with pytest.raises(HierbenchError, match=r"at least 3 agents .*got 2 agents"):
        person_fit(cts.isel(agent=[0, 1]))
    assert isinstance(pd.DataFrame(r.to_frame()), pd.DataFrame)


def test_three_agents_give_p_values_not_an_overflow():
    # with 2 other agents the null's t has 1 df: a draw overflowed exp() and the intercept's
    # solve gave NaN probabilities (numpy: 'p < 0, p > 1 or p contains NaNs'), which the report's
    # data summary caught and dropped. A p-value is a share of replicates: in (0, 1]
    from hierbench.testing import simulate_eval

    ds, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=2, rng=1)
    r = person_fit(ds, rng=0)
    p = r.p_value.values
    assert np.isfinite(p).all() and ((p > 0) & (p <= 1)).all()
