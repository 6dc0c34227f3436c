"""What the posterior pass^k result says of its undefined cells, of min_runs=0 and of its draws (audit X, 6-7).

Finding 6: the beta-binomial warning named whole agents ("ran no task") where only some (agent,
k) cells were NaN; it now names the cells, why, and the remedy, in the crossed model's words.
Finding 7: the repr's footnote said "min_runs=0: every task the agent ran" for the crossed model
too, where min_runs=0 averages every task of the dataset; and ``to_frame`` left out ``over``,
``draws_of`` and ``model``. Expected values: cells and task counts counted by hand below.
"""

from __future__ import annotations

import warnings

import numpy as np
from _helpers import crossed_fit_without_agent_task
from _helpers import fake_fit

from hierbench.metrics import UndefinedMetricWarning
from hierbench.metrics import crossed_pass_k
from hierbench.metrics import pass_at_k
from hierbench.metrics import pass_hat_k

AGENTS = ["zero", "one", "mixed"]
# runs per task (w, x, y, z): most runs 5, 5 and 6, so k = 6 and 7 have no task for zero and one,
# k = 7 none for mixed
N = np.array([[3, 1, 5, 0], [3, 1, 5, 2], [1, 2, 6, 3]])
C = np.array([[0, 0, 0, 0], [3, 1, 5, 2], [1, 1, 3, 2]])


def _bb(n=N, c=C, agents=AGENTS):
    S = 4
    mu = np.tile(np.linspace(0.2, 0.8, len(agents)), (1, S, 1))
    return fake_fit("beta_binomial", agents, {"n_runs": n, "n_success": c}, mu=mu, kappa=np.full(mu.shape, 3.0))


def _undefined(fn, *args, **kw) -> tuple[object, list[str]]:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = fn(*args, **kw)
    return res, [str(w.message) for w in seen if issubclass(w.category, UndefinedMetricWarning)]


def test_beta_binomial_warning_names_the_undefined_cells_and_the_remedy():
    res, said = _undefined(pass_hat_k, _bb(), [1, 2, 6, 7], rng=0)
    assert said == [
        "zero at k=6, zero at k=7, one at k=6, one at k=7, mixed at k=7: no task run at least min_runs "
        "times, so pass^k/pass@k over the observed tasks is undefined (NaN); min_runs=0 averages every "
        "task the agent ran instead, the model extrapolating to k the tasks run fewer times"
    ]
    # the cells it names are the NaN ones, and only they
    nan = np.isnan(res.estimate.transpose("agent", "k").values)
    assert nan.tolist() == [[False, False, True, True], [False, False, True, True], [False, False, False, True]]
    # the remedy holds: min_runs=0 leaves no cell NaN and warns nothing
    every, said0 = _undefined(pass_at_k, _bb(), [1, 2, 6, 7], rng=0, min_runs=0)
    assert said0 == [] and np.isfinite(every.estimate.values).all()
    # an integer min_runs = 6: only mixed's task y ran 6 times; zero and one have none at any k
    _, said5 = _undefined(pass_hat_k, _bb(), [1, 2], rng=0, min_runs=6)
    assert said5[0].startswith("zero at k=1, zero at k=2, one at k=1, one at k=2: no task run at least min_runs")


def test_an_agent_that_ran_nothing_is_said_apart_min_runs_0_being_no_remedy():
    n = np.vstack([N[:2], np.zeros((1, 4), int)])
    c = np.vstack([C[:2], np.zeros((1, 4), int)])
    res, said = _undefined(pass_hat_k, _bb(n, c), [1, 6], rng=0)
    assert len(said) == 1
    assert said[0].startswith(
        "agents ['mixed'] ran no task: pass^k/pass@k over their observed tasks is undefined (NaN) at "
        "every k, whatever min_runs; population=True gives a new task's; zero at k=6, one at k=6: no task")
    assert "mixed at k" not in said[0]
    assert np.isnan(res.estimate.transpose("agent", "k").values).tolist() == [[False, True], [False, True], [True, True]]
    _, said0 = _undefined(pass_hat_k, _bb(n, c), [1, 6], rng=0, min_runs=0)
    assert len(said0) == 1 and said0[0].startswith("agents ['mixed'] ran no task") and " at k=" not in said0[0]


def test_both_models_warn_in_the_same_words_but_for_what_min_runs_0_averages():
    dt, n = crossed_fit_without_agent_task()
    _, crossed_said = _undefined(crossed_pass_k, dt, k=[1, 2, 3])
    _, bb_said = _undefined(pass_hat_k, _bb(n, np.minimum(n, 1), ["m0", "m1"]), [1, 2, 3], rng=0)
    assert len(crossed_said) == len(bb_said) == 1
    assert crossed_said[0].startswith("m0 at k=3: no task run at least min_runs times")
    assert bb_said[0] == crossed_said[0].replace("every task of the dataset", "every task the agent ran")


def _flat(res) -> str:
    return " ".join(repr(res).split())


def test_the_footnote_says_what_min_runs_0_averages_in_the_fits_model():
    dt, n = crossed_fit_without_agent_task()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # k > 1 without the agent x task effect, and m0 at k = 3
        crossed = crossed_pass_k(dt, k=[1, 2, 3])
        crossed0 = crossed_pass_k(dt, k=[1, 2, 3], min_runs=0)
        bb = pass_hat_k(_bb(n, np.minimum(n, 1), ["m0", "m1"]), [1, 2, 3], rng=0)
        bb0 = pass_hat_k(_bb(n, np.minimum(n, 1), ["m0", "m1"]), [1, 2, 3], rng=0, min_runs=0)
    # what min_runs=0 does, counted by hand: crossed every task of the dataset (3 each, m0's
    # never-run t2 included); beta-binomial every task the agent ran (m0 2, m1 3)
    assert crossed0.n_tasks.values.tolist() == [[3, 3, 3], [3, 3, 3]]
    assert bb0.n_tasks.values.tolist() == [[2, 2, 2], [3, 3, 3]]
    text = _flat(crossed)
    assert "min_runs=0 averages every task of the dataset" in text
    assert "a cell the agent never ran is drawn from the fitted agent and task effects" in text
    assert "every task the agent ran" not in text
    text = _flat(bb)
    assert "min_runs=0 averages every task the agent ran" in text and "a task the agent never ran is left out" in text
    # a result of no stated model keeps the one sentence true of both
    bare = type(bb)(estimate=bb.estimate, ci=bb.ci, draws=bb.draws, n_tasks=bb.n_tasks, attrs={})
    assert _flat(bare).endswith("do not form one curve")


def test_to_frame_tells_results_with_different_intervals_apart():
    fit = _bb()
    real = pass_hat_k(fit, [1, 2], rng=0)
    cond = pass_hat_k(fit, [1, 2], realised=False)
    every = pass_hat_k(fit, [1, 2], rng=0, min_runs=0)
    label = ["quantity", "tasks", "over", "draws_of", "model"]
    fr, fc, fe = (r.to_frame() for r in (real, cond, every))
    assert fr["draws_of"].unique().tolist() == ["realised task average"]
    assert fc["draws_of"].unique().tolist() == ["conditional expectation given the draw"]
    assert fr["over"].unique().tolist() == ["the tasks each agent ran at least k times"]
    assert fe["over"].unique().tolist() == ["the tasks each agent ran"]
    assert fr["model"].unique().tolist() == ["beta_binomial"]
    # same estimates, different intervals: the label columns now differ too
    np.testing.assert_allclose(fr["estimate"], fc["estimate"], rtol=1e-12)
    assert not (fr["upper"] - fr["lower"]).equals(fc["upper"] - fc["lower"])
    assert not fr[label].equals(fc[label])
    # a column the attrs do not hold is not made up
    bare = type(real)(estimate=real.estimate, ci=real.ci, draws=real.draws, n_tasks=real.n_tasks,
                      attrs={"quantity": "pass^k"})  # fmt: skip
    assert not {"over", "draws_of", "model"} & set(bare.to_frame().columns)


def test_population_frame_says_parameter():
    res = pass_hat_k(_bb(), [1, 2], population=True)
    f = res.to_frame()
    assert f["draws_of"].unique().tolist() == ["parameter"]
    assert f["over"].unique().tolist() == ["a new task from the population"]


def test_posterior_summaries_of_two_variables_differ_in_their_frames():
    # mean_observed (these tasks) and mean_new_task (a new task) had identically labelled frames
    import numpy as np
    import xarray as xr

    from hierbench.metrics import posterior_summary

    x = np.random.default_rng(0).normal(size=(2, 40, 2))
    draws = {n: xr.DataArray(x, dims=("chain", "draw", "agent"), coords={"agent": ["a", "b"]}, name=n)
             for n in ("mean_observed", "mean_new_task")}  # fmt: skip
    obs, new = (posterior_summary(d).to_frame() for d in draws.values())
    assert (obs["variable"] == "mean_observed").all() and (new["variable"] == "mean_new_task").all()
    assert (obs["tasks"] == "observed").all() and (new["tasks"] == "population").all()
    assert (obs["quantity"] == "mean score").all()
