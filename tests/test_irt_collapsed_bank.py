"""A bank whose slopes collapsed is refused by what reads its item curves, or replaced honestly (finding I1).

fit_irt_ml records a collapse of the 2PL's slopes (bank.attrs["slopes_collapsed"] = 1, seen on banks of
2-5 agents) and says the bank is not fit for irt_score; irt_score, adaptive and anchors scored agents or
picked tasks from it silently. Now the bank's one rule (IRTBank.check_usable) is read by each: irt_score,
adaptive and anchors refuse (HierbenchError); assisted_adaptive and assisted_mean, whose estimate is
unbiased whatever the model, warn and use the bank's population-average predictions, fixed. A bank whose
slopes did not collapse gives the same results as before.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy.special import expit

from hierbench import HierbenchError
from hierbench.design import adaptive
from hierbench.design import anchors
from hierbench.design import assisted_adaptive
from hierbench.design import assisted_mean
from hierbench.design import plan_subset
from hierbench.design import simulate_irt_log
from hierbench.freq import IRTBank
from hierbench.freq import IRTConvergenceWarning
from hierbench.freq import fit_irt_ml
from hierbench.freq import irt_score

FIXED_HYPER = {"mu_d": 0.0, "sd_d": 2.0, "mu_la": 0.0, "sd_la": 0.5}


@pytest.fixture(scope="module")
def collapsed():
    """3 calibration agents of simulate_irt_log (40 tasks, 3 runs, seed 3) and a 4th agent to score: the
    empirical-Bayes 2PL's slopes collapse (max ~1e-270), as fit_irt_ml warns.
    """
    data, _ = simulate_irt_log(4, 40, n_runs=3, rng=3)
    with pytest.warns(IRTConvergenceWarning, match="collapsed"):
        cal = fit_irt_ml(data.isel(agent=[0, 1, 2]), n_draws=200, rng=0)
    return data, cal.bank, data["score"].isel(agent=[3])


@pytest.fixture(scope="module")
def healthy():
    """30 calibration agents of simulate_irt_log (40 tasks, 2 runs) and a 31st to score: identified slopes."""
    data, _ = simulate_irt_log(31, 40, n_runs=2, rng=5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IRTConvergenceWarning)
        cal = fit_irt_ml(data.isel(agent=slice(0, 30)), n_draws=200, rng=0)
    return cal.bank, data["score"].isel(agent=[30])


def _without_attr(bank: IRTBank) -> IRTBank:
    attrs = {k: v for k, v in bank.attrs.items() if k != "slopes_collapsed"}
    return IRTBank(bank.discrimination, bank.intercept, bank.method, bank.model, attrs)


def _round_trip(bank: IRTBank, path) -> IRTBank:
    """The bank saved to netCDF and read back (attrs as netCDF stores them: numpy integers, arrays)."""
    ds = xr.Dataset({"discrimination": bank.discrimination, "intercept": bank.intercept}, attrs=bank.attrs)
    ds.to_netcdf(path)
    with xr.open_dataset(path) as back:
        back = back.load()
    return IRTBank(back["discrimination"], back["intercept"], bank.method, bank.model, dict(back.attrs))


def test_the_bank_collapsed_and_its_curves_are_flat(collapsed):
    """Independent check: from the bank's draws, scipy's expit gives every task the same success probability
    at abilities -3 and +3 (to 1e-9), so no task carries information about an agent.
    """
    _, bank, _ = collapsed
    assert bank.attrs["slopes_collapsed"] == 1 and bank.slopes_collapsed
    a, d = bank.discrimination.values, bank.intercept.values
    assert np.abs(expit(3 * a + d) - expit(-3 * a + d)).max() < 1e-9


def test_irt_score_refuses_and_its_advice_works(collapsed):
    """The error names the attr, the 3 calibration agents and the three ways out; independent check that the
    advice holds: the 1PL and the 2PL at fixed hyperparameters, fitted on the same 3 agents, do not collapse
    (their attr 0, smallest slope > 0.05) and irt_score scores the agent on them.
    """
    data, bank, new = collapsed
    with pytest.raises(HierbenchError) as err:
        irt_score(bank, new.isel(agent=0), rng=0)
    msg = str(err.value)
    assert msg.startswith("irt_score cannot score an agent on this bank")
    assert "bank.attrs['slopes_collapsed'] = 1" in msg and "on 3 agents" in msg
    assert "more agents" in msg and "model='1pl'" in msg and "hyper=" in msg
    for kw in ({"model": "1pl"}, {"hyper": FIXED_HYPER}):
        cal = fit_irt_ml(data.isel(agent=[0, 1, 2]), n_draws=100, rng=0, **kw)
        assert cal.bank.attrs["slopes_collapsed"] == 0 and float(cal.discrimination.min()) > 0.05, kw
        assert 0 < float(irt_score(cal.bank, new.isel(agent=0), misfit_level=None, rng=0).estimate) < 1


def test_adaptive_refuses_before_running_any_task(collapsed):
    """Independent check: the run callback, which counts its calls, was never called (no budget spent)."""
    _, bank, _ = collapsed
    calls = []
    with pytest.raises(HierbenchError, match=r"adaptive cannot choose tasks.*slopes_collapsed'\] = 1.*3 agents"):
        adaptive(bank, lambda t: calls.append(t) or 1.0, budget=5, rng=0)
    assert calls == []


@pytest.mark.parametrize("method", ["information", "cluster"])
def test_anchors_refuse(collapsed, method):
    """Both methods: 'information' would rank tasks of equal (zero) information, 'cluster' group them by
    their mean success rate alone.
    """
    _, bank, _ = collapsed
    with pytest.raises(HierbenchError, match=r"anchors cannot choose anchors.*slopes_collapsed'\] = 1.*3 agents"):
        anchors(bank, 5, method=method, rng=0)


def test_saved_and_loaded_banks_read_the_attr_the_same(collapsed, healthy, tmp_path):
    """Through netCDF the attr comes back as a numpy integer: a collapsed bank is refused as before, a
    healthy one scores exactly as before saving; a value other than 0 / 1 is refused, naming the attr.
    """
    _, bank, new = collapsed
    back = _round_trip(bank, tmp_path / "collapsed.nc")
    assert isinstance(back.attrs["slopes_collapsed"], np.integer) and back.slopes_collapsed
    with pytest.raises(HierbenchError, match=r"slopes_collapsed'\] = 1.*3 agents"):
        irt_score(back, new.isel(agent=0), rng=0)
    hbank, hnew = healthy
    hback = _round_trip(hbank, tmp_path / "healthy.nc")
    assert hback.attrs["slopes_collapsed"] == 0 and not hback.slopes_collapsed
    r0 = irt_score(hbank, hnew.isel(agent=0, task=slice(0, 12)), rng=1)
    r1 = irt_score(hback, hnew.isel(agent=0, task=slice(0, 12)), rng=1)
    np.testing.assert_array_equal(r1.ci.values, r0.ci.values)
    for bad in (2, "yes", [1, 0]):
        odd = IRTBank(hbank.discrimination, hbank.intercept, attrs={"slopes_collapsed": bad})
        with pytest.raises(HierbenchError, match=r"bank.attrs\['slopes_collapsed'\] must be 0 or 1"):
            irt_score(odd, hnew.isel(agent=0), rng=1)


def _population_predictions(bank: IRTBank) -> xr.DataArray:
    """What a bank with flat curves predicts for every agent, by scipy: expit of each task's mean intercept."""
    return xr.DataArray(expit(bank.intercept.mean("sample").values), dims="task", coords={"task": bank.tasks})


def test_assisted_adaptive_warns_and_uses_the_population_predictions(collapsed):
    """Independent check: the result equals assisted_adaptive given, as fixed predictions, scipy's expit of
    each task's mean intercept (what flat curves predict, the slopes being ~1e-270), at the same seed.
    """
    _, bank, new = collapsed
    with pytest.warns(IRTConvergenceWarning, match=r"assisted_adaptive cannot update.*slopes_collapsed'\] = 1"
                      r".*3 agents.*falls back to the bank's population-average predictions") as rec:
        res = assisted_adaptive(bank, new, n_tasks=12, rng=4)
    assert sum("slopes collapsed" in str(w.message) for w in rec) == 1
    ref = assisted_adaptive(_population_predictions(bank), new, n_tasks=12, rng=4)
    np.testing.assert_allclose(res.estimate.values, ref.estimate.values, rtol=1e-12)
    np.testing.assert_allclose(res.ci.values, ref.ci.values, rtol=1e-12)
    np.testing.assert_array_equal(res.draws["task"].values, ref.draws["task"].values)
    assert "population-average predictions (its slopes collapsed" in res.ci.attrs["ci_detail"]


def test_assisted_mean_warns_and_uses_the_population_predictions(collapsed):
    """Independent check: on a simple random plan the classical difference estimator is the predictions'
    mean over every task plus the drawn tasks' mean residual; recomputed with numpy from the logs and scipy's
    predictions, each read by task label.
    """
    _, bank, new = collapsed
    plan = plan_subset(bank.tasks[::-1], 10, rng=5)  # a task order not the bank's
    with pytest.warns(IRTConvergenceWarning, match=r"assisted_mean cannot update.*falls back"):
        res = assisted_mean(plan, new, bank, rng=6)
    m = _population_predictions(bank)
    rate = new.isel(agent=0).mean("run")
    drawn = plan.order.values.astype(str)
    expected = float(m.mean()) + float((rate.sel(task=drawn) - m.sel(task=drawn)).mean())
    assert float(res.estimate.values[0]) == pytest.approx(expected, rel=1e-12)


def test_assisted_mean_reads_fixed_predictions_by_their_task_labels():
    """The same labelled predictions in reverse order give the same estimate: before, they were read in the
    order given against the plan's tasks (0.509 against 0.451 on a 100-task example). Independent check: on a
    simple random plan the classical difference estimator is the predictions' mean over every task plus the
    drawn tasks' mean residual, by numpy with each prediction read by its label.
    """
    g = np.random.default_rng(1)
    tasks = [f"t{i:03d}" for i in range(60)]
    m = xr.DataArray(g.uniform(0.05, 0.95, 60), dims="task", coords={"task": tasks})
    y = xr.DataArray((g.random((1, 60)) < m.values).astype(float), dims=("agent", "task"),
                     coords={"agent": ["a"], "task": tasks})
    plan = plan_subset(tasks, 15, rng=2)
    drawn = plan.order.values.astype(str)
    expected = float(m.mean()) + float((y.isel(agent=0).sel(task=drawn) - m.sel(task=drawn)).mean())
    for given in (m, m.isel(task=slice(None, None, -1))):
        res = assisted_mean(plan, y, given, prob=0.9)
        assert float(res.estimate.values[0]) == pytest.approx(expected, rel=1e-12)


def test_a_healthy_bank_scores_and_picks_anchors_as_without_the_attr(healthy):
    """30 agents: the attr is 0 and nothing warns; irt_score and anchors give identical results on the bank
    and on the same bank without the attr (never read as collapsed).
    """
    bank, new = healthy
    assert bank.attrs["slopes_collapsed"] == 0
    one = new.isel(agent=0, task=slice(0, 12))
    with warnings.catch_warnings():
        warnings.simplefilter("error", IRTConvergenceWarning)
        s0, s1 = (irt_score(b, one, k=(1, 2), rng=1) for b in (bank, _without_attr(bank)))
        for method in ("cluster", "information"):
            k0, k1 = (anchors(b, 6, method=method, rng=3) for b in (bank, _without_attr(bank)))
            assert k0.tasks.tolist() == k1.tasks.tolist()
    np.testing.assert_array_equal(s0.ci.values, s1.ci.values)
    np.testing.assert_array_equal(s0.pass_hat_k.values, s1.pass_hat_k.values)


def test_a_healthy_bank_runs_adaptive_and_assisted_as_without_the_attr(healthy):
    """The same for adaptive (tasks chosen, interval) and assisted_adaptive (interval and its detail)."""
    bank, new = healthy
    assert bank.attrs["slopes_collapsed"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", IRTConvergenceWarning)
        a0, a1 = (adaptive(b, new.isel(agent=0), budget=8, n_runs=2, rng=2) for b in (bank, _without_attr(bank)))
        r0, r1 = (assisted_adaptive(b, new, n_tasks=8, rng=4) for b in (bank, _without_attr(bank)))
    assert a0.tasks.values.tolist() == a1.tasks.values.tolist()
    np.testing.assert_array_equal(a0.ci.values, a1.ci.values)
    np.testing.assert_array_equal(r0.ci.values, r1.ci.values)
    assert r0.ci.attrs["ci_detail"] == r1.ci.attrs["ci_detail"]
