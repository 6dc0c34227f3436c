"""Studies that scale out: loo_study and replay on an executor give the serial answer bit for bit.

References: the serial run itself (the same seed must give identical arrays on
a process pool), and the upfront checks' messages.
"""

from __future__ import annotations

import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest
import xarray as xr

from hierbench.design import loo_study
from hierbench.design import replay
from hierbench.design import simulate_irt_log
from hierbench.design import simulate_stratified_bank


def _small(M=6, T=40, seed=0):
    data, truth = simulate_irt_log(M, T, rng=seed)
    return data, truth


@pytest.mark.slow
def test_loo_study_and_replay_are_bit_identical_on_a_process_pool():
    data, _ = _small()
    kw = dict(agents=["agent_000", "agent_003", "agent_005"], n_tasks=(4, 8),
              selections=("random", "random_mean", "assisted_random", "assisted_adaptive"), n_repeat=2,
              n_bank_draws=30, misfit=False, working="2pl", rng=11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        serial = loo_study(data, **kw)
        with ProcessPoolExecutor(2) as pool:
            pooled = loo_study(data, executor=pool, **kw)
            bank = simulate_stratified_bank(60, 4, rng=1)
            r_serial = replay(bank, ["uniform", "joint"], [60, 80, 100], n_rep=50, rng=2, progress=False)
            r_pooled = replay(bank, ["uniform", "joint"], [60, 80, 100], n_rep=50, rng=2, progress=False,
                              executor=pool)
    xr.testing.assert_identical(serial.drop_vars("calibration_seconds"), pooled.drop_vars("calibration_seconds"))
    xr.testing.assert_identical(r_serial, r_pooled)
    assert serial.predicted.sel(selection="assisted_adaptive").notnull().all()
    assert serial.ci_kind.values.tolist() == [["eti", "exact", "t", "t"]] * 3  # working model 2pl for all


@pytest.mark.slow
def test_loo_study_refuses_too_few_agents_upfront():
    # seed 1: the 2PL bank of its 3 calibration agents is identified (seed 0's slopes collapse, and adaptive
    # refuses a collapsed bank, which the last study below would meet)
    data, _ = _small(M=4, seed=1)
    with pytest.raises(ValueError, match="at least 3 agents for loo_study"):
        loo_study(data.isel(agent=[0, 1]), selections=("random",), misfit=False)
    with pytest.raises(ValueError, match=r"at least 4 agents for loo_study .*misfit calibration"):
        loo_study(data.isel(agent=[0, 1, 2]), n_tasks=(5,), selections=("random", "adaptive"))
    with pytest.raises(ValueError, match=r"at least 4 agents for loo_study .*working-model choice"):
        loo_study(data.isel(agent=[0, 1, 2]), n_tasks=(5,), selections=("assisted_adaptive",))
    with pytest.raises(TypeError, match=r"concurrent\.futures\.Executor"):
        loo_study(data, n_tasks=(5,), selections=("random",), executor=object())
    # 4 agents with the misfit calibration runs (3 calibration agents, 3 folds: no "`folds` must be <= 3")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = loo_study(data, agents=["agent_000"], n_tasks=(3,), selections=("adaptive",), n_bank_draws=20, rng=0)
    assert ds.predicted.notnull().all()


def test_simulated_logs_have_the_stated_skills():
    data, truth = simulate_irt_log(400, 60, skills=2, skill_correlation=0.2, rng=3)
    th = truth.ability.values
    r = np.corrcoef(th.T)[0, 1]
    # sample correlation of 400 pairs: sd about (1 - 0.04) / 20
    assert abs(r - 0.2) < 4 * 0.048
    assert (data.cluster.values == np.arange(60) % 2).all()
    np.testing.assert_allclose(truth.full_score.values, data.score.mean(("task", "run")).values)
    with pytest.raises(ValueError, match="`skill_correlation` must be in"):
        simulate_irt_log(3, 10, skills=3, skill_correlation=-0.6)
