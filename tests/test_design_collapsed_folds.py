"""Banks that collapse inside the leave-one-agent-out and cross-fitting studies are counted, not fatal.

Since irt_score, adaptive and anchors refuse a bank whose slopes collapsed (every discrimination ~0, as the
empirical-Bayes 2PL's on 2-5 agents), loo_study stopped at the first held-out agent whose bank, calibrated on
the others, collapsed; choose_working_model picked a collapsed 2PL as the working model; calibrate_misfit
replayed adaptive on collapsed banks (which adaptive refuses) and reported a misfit sd. Now: loo_study gives
such an agent NaN for its IRT-scored selections, runs its design-based ones, records ``bank_collapsed`` and
says so in one warning; loo_summary counts the agents each figure is over (``n_agents``); choose_working_model
does not pick a collapsed candidate; calibrate_misfit refuses a calibration with nothing to replay and leaves a
fold whose bank collapsed out, counted. The references are direct fit_irt_ml calls (which banks collapse),
numpy on the study's own predictions and on the logs, and the public assisted_adaptive on the same bank.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hierbench.design._loo as loo_module
from hierbench import HierbenchError
from hierbench._base import UndefinedWarning
from hierbench.design import assisted_adaptive
from hierbench.design import calibrate_misfit
from hierbench.design import choose_working_model
from hierbench.design import loo_study
from hierbench.design import loo_summary
from hierbench.design import simulate_irt_log
from hierbench.freq import IRTConvergenceWarning
from hierbench.freq import fit_irt_ml

IRT_SCORED = ["random", "adaptive"]
DESIGN_BASED = ["random_mean", "assisted_random"]
HELD = ["agent_000", "agent_001", "agent_003"]


def _collapsed_without(data, agent: str) -> bool:
    """Independent of loo_study: whether fit_irt_ml's 2PL on every agent but ``agent`` collapses."""
    rest = [str(a) for a in data["agent"].values if str(a) != agent]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bool(fit_irt_ml(data.sel(agent=rest), n_draws=5, rng=0).info["slopes_collapsed"])


def _said(rec, text: str) -> list[str]:
    return [str(w.message) for w in rec if text in str(w.message)]


@pytest.fixture(scope="module")
def mixed():
    """simulate_irt_log(4, 20, seed 1): the 2PL calibrated without agent_001 collapses, without agent_000 or
    agent_003 it does not (direct fits); three held-out agents, so each IRT-scored figure is over two.
    """
    data, _ = simulate_irt_log(4, 20, rng=1)
    flat = {a: _collapsed_without(data, a) for a in HELD}
    assert flat == {"agent_000": False, "agent_001": True, "agent_003": False}
    kw = dict(agents=HELD, n_tasks=(3, 6), n_repeat=2, n_bank_draws=20, working="none", rng=0)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        study = loo_study(data, selections=(*IRT_SCORED, *DESIGN_BASED), **kw)
    return data, flat, study, rec, kw


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_a_collapsed_fold_is_nan_where_the_model_scores_and_is_said_once(mixed):
    """NaN exactly for the IRT-scored selections of the agent whose bank collapsed (and its misfit sd, not
    measured); finite everywhere else; bank_collapsed as the direct fits say; one warning naming that agent
    (fit_irt_ml's own collapse warning is not repeated per fold).
    """
    _, flat, st, rec, _ = mixed
    assert st["bank_collapsed"].to_series().to_dict() == flat
    assert not st["working_collapsed"].any()
    for a, collapsed in flat.items():
        irt = st.predicted.sel(agent=a, selection=IRT_SCORED)
        assert (irt.isnull().all() if collapsed else irt.notnull().all()), a
        assert st.predicted.sel(agent=a, selection=DESIGN_BASED).notnull().all(), a
        assert bool(st.misfit_sd.sel(agent=a).isnull().all()) == collapsed, a
    said = _said(rec, "collapsed")
    assert len(said) == 1 and said[0].startswith("loo_study: the bank calibrated on the agents but the one held out")
    assert "1 of the 3 held-out agents (agent_001)" in said[0] and "random, adaptive selections are NaN" in said[0]
    assert "over the other 2" in said[0] and "model='1pl'" in said[0]


def test_loo_summary_counts_the_agents_each_figure_is_over(mixed):
    """n_agents against a direct count (agents whose bank did not collapse, from the direct fits); mae, its se
    and the baseline ratio recomputed with numpy from the study's predictions and each agent's full score from
    the logs, over those agents only; the summary says so in a warning.
    """
    data, flat, st, _, _ = mixed
    kept = [a for a in HELD if not flat[a]]
    full = data["score"].mean(("task", "run"))
    with pytest.warns(UndefinedWarning, match=r"figures of \['random', 'adaptive'\] are over fewer than the "
                      r"study's 3 held-out agents, as few as 2 .*agent_001") as rec:
        s = loo_summary(st)
    assert len(_said(rec, "loo_summary")) == 1
    for sel in IRT_SCORED + DESIGN_BASED:
        assert (s.n_agents.sel(selection=sel) == (len(kept) if sel in IRT_SCORED else len(HELD))).all(), sel
    def err(sel, agents, n):
        """Per agent, the mean over its repeats of |predicted - full score| (numpy)."""
        p = st.predicted.sel(selection=sel, n_tasks=n, agent=agents).values  # (agent, repeat)
        return np.abs(p - full.sel(agent=agents).values[:, None]).mean(1)

    for n in (3, 6):
        e = err("random", kept, n)
        assert float(s.mae.sel(selection="random", n_tasks=n)) == pytest.approx(e.mean(), rel=1e-12)
        assert float(s.mae_se.sel(selection="random", n_tasks=n)) == pytest.approx(
            e.std(ddof=1) / np.sqrt(len(kept)), rel=1e-12)
        assert float(s.baseline_ratio.sel(selection="random", n_tasks=n)) == pytest.approx(
            e.mean() / err("random_mean", kept, n).mean(), rel=1e-12)
        assert float(s.mae.sel(selection="random_mean", n_tasks=n)) == pytest.approx(
            err("random_mean", HELD, n).mean(), rel=1e-12)
    assert "(2 to 3 of the 3: n_agents)" in s.coverage_ci.attrs["ci_detail"]


def test_the_collapsed_fold_s_design_based_numbers_are_those_of_a_study_without_the_model(mixed):
    """Skipping the IRT-scored selections consumes nothing of the agent's random stream: its design-based cells
    equal those of a study that asked only for them (another code path: nothing skipped there). For an agent
    whose bank held, the IRT-scored selections drew from its stream first, so its assisted cells differ.
    """
    data, _, st, _, kw = mixed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        design_only = loo_study(data, selections=tuple(DESIGN_BASED), **kw)
    keys = ["predicted", "lower", "upper", "model_predicted", "misfit_z"]
    for sel in DESIGN_BASED:
        a = st[keys].sel(agent="agent_001", selection=sel, drop=True)
        b = design_only[keys].sel(agent="agent_001", selection=sel, drop=True)
        for k in keys:
            np.testing.assert_array_equal(a[k].values, b[k].values, err_msg=f"{sel} {k}")
    assert not np.array_equal(st.predicted.sel(agent="agent_000", selection="assisted_random").values,
                              design_only.predicted.sel(agent="agent_000", selection="assisted_random").values)


@pytest.fixture(scope="module")
def three_flat():
    """simulate_irt_log(4, 40, 3 runs, seed 3): the empirical-Bayes 2PL on agents 0-2 collapses, the 1PL does
    not (as in test_s65_I_collapsed); agent_003 is held out.
    """
    data, _ = simulate_irt_log(4, 40, n_runs=3, rng=3)
    calib = ["agent_000", "agent_001", "agent_002"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert fit_irt_ml(data.sel(agent=calib), n_draws=5, rng=0).info["slopes_collapsed"]
        assert not fit_irt_ml(data.sel(agent=calib), model="1pl", n_draws=5, rng=0).info["slopes_collapsed"]
    return data, calib


def test_a_collapsed_fixed_calibration_is_refused_before_any_agent_is_scored(three_flat, monkeypatch):
    """The IRT-scored selections asked for are named; the held-out agents' work never started (the per-agent
    function, replaced by one that records its calls, was not called).
    """
    data, calib = three_flat
    calls = []
    monkeypatch.setattr(loo_module, "_loo_agent", lambda *a, **k: calls.append(a))
    with pytest.raises(HierbenchError, match=r"loo_study: the bank calibrated on the 3 agents of `calibration` "
                       r"collapsed .*IRT-scored `selections` \['random', 'adaptive'\].*model='1pl'"):
        loo_study(data, calibration=calib, selections=("random_mean", "random", "adaptive"), n_tasks=(4,),
                  n_bank_draws=20, rng=0)
    assert calls == []


def test_a_collapsed_working_bank_falls_back_as_assisted_adaptive_does(three_flat):
    """A fixed calibration of agents 0-2 with the 2PL working model given: its bank collapses, and the held-out
    agent's assisted cells equal the public assisted_adaptive's on that bank (which warns and uses its
    population-average predictions) with the agent's stream. The bank is rebuilt as loo_study builds it: from
    child 2**31 of the seed's SeedSequence, after the study's own bank.
    """
    data, calib = three_flat
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        st = loo_study(data, calibration=calib, selections=("assisted_adaptive",), working="2pl", n_tasks=(5, 12),
                       n_bank_draws=40, rng=7)
    assert st.bank_collapsed.all() and st.working_collapsed.all()
    said = _said(rec, "collapsed")
    assert len(said) == 1 and "working model's bank collapsed for 1 of the 1 held-out agents (agent_003)" in said[0]
    gen = np.random.default_rng(np.random.SeedSequence(7, spawn_key=(2**31,)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_irt_ml(data.sel(agent=calib), n_draws=40, rng=gen)  # the study's bank
        bank = fit_irt_ml(data.sel(agent=calib), model="2pl", n_draws=40, rng=gen).bank  # its working model's
    assert bank.slopes_collapsed
    cell = st.sel(agent="agent_003", selection="assisted_adaptive", repeat=0)
    for n in (5, 12):
        with pytest.warns(IRTConvergenceWarning, match="falls back to the bank's population-average predictions"):
            ref = assisted_adaptive(bank, data.sel(agent=["agent_003"]), n_tasks=n, n_runs=3, prob=0.9,
                                    defensive=0.5, rng=7)
        got = cell.sel(n_tasks=n)
        assert float(got.predicted) == float(ref.estimate[0])
        np.testing.assert_array_equal([float(got.lower), float(got.upper)], ref.ci.values[0])
        assert float(got.model_predicted) == pytest.approx(float(ref.model_estimate[0]), rel=1e-12)
        assert float(got.misfit_z) == pytest.approx(float(ref.misfit_z[0]), rel=1e-12)


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_choose_working_model_does_not_pick_a_collapsed_candidate(three_flat):
    """On agents 0-2 the 2PL has the smallest cross-fitted criterion, but its bank on all three collapses (the
    direct fit in the fixture): the next smallest usable candidate is chosen, and one warning says why. With
    the 2PL alone there is nothing usable: refused, naming the way out.
    """
    data, calib = three_flat
    three = data.sel(agent=calib)
    with pytest.warns(IRTConvergenceWarning, match=r"choose_working_model: the 2pl bank calibrated on all 3 agents "
                      r"collapsed .*so 2pl is not chosen") as rec:
        wm = choose_working_model(three, candidates=("2pl", "none"), n_tasks=8, n_bank_draws=30, rng=0)
    assert len(_said(rec, "collapsed")) == 1
    crit = wm.criterion.to_series()
    assert crit["2pl"] < crit["none"]  # the criterion alone would have chosen the 2PL
    assert wm.name == "none" and wm.bank is None and "collapsed" in wm.reason
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wm3 = choose_working_model(three, n_tasks=8, n_bank_draws=30, rng=0)
    usable = wm3.criterion.to_series().drop("2pl")  # the 1PL's bank does not collapse (fixture)
    assert wm3.name == usable.idxmin() and not (wm3.bank is not None and wm3.bank.slopes_collapsed)
    with pytest.raises(HierbenchError, match=r"no candidate is a usable working model.*Add 'none' to `candidates`"):
        choose_working_model(three, candidates=("2pl",), n_tasks=8, n_bank_draws=30, rng=0)


def test_calibrate_misfit_refuses_when_nothing_can_be_replayed(three_flat):
    """Agents 0-2: the bank on all three (for the hyperparameters) collapses, so there is no adaptive scoring to
    replay; with those collapsed hyperparameters given, every fold's bank collapses too (direct fits).
    """
    data, calib = three_flat
    three = data.sel(agent=calib)
    with pytest.raises(HierbenchError, match=r"cannot measure adaptive's misfit on these 3 agents.*slopes_collapsed'"
                       r"\] = 1.*on 3 agents"):
        calibrate_misfit(three, budget=4, folds=3, n_bank_draws=20, n_draws=20, n_boot=50, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = fit_irt_ml(three, n_draws=5, rng=0)
        for pair in ([0, 1], [0, 2], [1, 2]):
            sub = fit_irt_ml(three.isel(agent=pair), hyper=cal.hyper, run_icc=cal.info["run_icc"], n_draws=5, rng=0)
            assert sub.info["slopes_collapsed"], pair
    with pytest.raises(HierbenchError, match=r"the bank calibrated without each of the 3 folds collapsed"):
        calibrate_misfit(three, budget=4, folds=3, hyper=cal.hyper, run_icc=cal.info["run_icc"], n_bank_draws=20,
                         n_draws=20, n_boot=50, rng=0)


def test_calibrate_misfit_leaves_a_collapsed_fold_out_and_counts_it():
    """simulate_irt_log(3, 30, seed 0): the 2PL on all three holds, but at its hyperparameters the bank of agents
    0 and 1 collapses (their abilities at the mode coincide) while the other pairs' do not (direct fits). With
    one agent per fold, agent_002 is left out: its rows NaN, the others' finite; the raw moment estimate is
    numpy's mean of e^2 - s^2 over the two replayed agents; warned once and said in the interval's detail.
    """
    data, _ = simulate_irt_log(3, 30, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = fit_irt_ml(data, n_draws=1, run_icc=0.0, rng=0)
        assert not cal.info["slopes_collapsed"]
        flat = {pair: fit_irt_ml(data.isel(agent=list(pair)), hyper=cal.hyper, run_icc=0.0, n_draws=5,
                                 rng=0).info["slopes_collapsed"] for pair in ((0, 1), (0, 2), (1, 2))}
    assert flat == {(0, 1): True, (0, 2): False, (1, 2): False}
    with pytest.warns(IRTConvergenceWarning, match=r"calibrate_misfit: 1 of the 3 agents left out \(agent_002\)"
                      ) as rec:
        mis = calibrate_misfit(data, budget=5, folds=3, n_bank_draws=20, n_draws=20, n_boot=100, rng=0)
    assert len(_said(rec, "left out")) == 1
    assert mis.error.sel(agent="agent_002").isnull().all()
    kept = ["agent_000", "agent_001"]
    assert mis.error.sel(agent=kept).notnull().all() and mis.model_sd.sel(agent=kept).notnull().all()
    e, s = mis.error.sel(agent=kept).values, mis.model_sd.sel(agent=kept).values
    np.testing.assert_allclose(mis.raw.values, (e**2 - s**2).mean(0), rtol=1e-12)
    assert "bootstrap over the 2 replayed agents" in mis.ci.attrs["ci_detail"]
    assert "1 of the 3 agents left out (agent_002)" in mis.ci.attrs["ci_detail"]


def test_a_study_without_a_collapsed_bank_says_nothing_and_counts_every_agent():
    """Eight calibration agents (the bank holds: direct fit): nothing collapsed, no warning of it, n_agents is
    every held-out agent, and the summary's mae_se and baseline_ratio are the formulas loo_summary used before
    the counts (numpy's std over all agents / sqrt(M), and the ratio of the two MAEs over all agents).
    """
    data, _ = simulate_irt_log(10, 20, rng=0)
    calib = [f"agent_{i:03d}" for i in range(8)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert not fit_irt_ml(data.sel(agent=calib), n_draws=5, rng=0).info["slopes_collapsed"]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        st = loo_study(data, calibration=calib, selections=("random", "random_mean"), n_tasks=(4, 8), n_repeat=3,
                       n_bank_draws=20, misfit=False, rng=0)
        s = loo_summary(st)
    assert not _said(rec, "collapsed") and not _said(rec, "fewer than")
    assert not st.bank_collapsed.any() and not st.working_collapsed.any()
    M = st.sizes["agent"]
    assert (s.n_agents == M).all() and s.attrs["n_agents"] == M
    err = st.abs_error.mean("repeat").transpose("agent", "selection", "n_tasks").values
    np.testing.assert_allclose(s.mae_se.values, err.std(0, ddof=1) / np.sqrt(M), rtol=1e-12)
    np.testing.assert_allclose(s.baseline_ratio.values, err.mean(0) / err[:, 1].mean(0), rtol=1e-12)
    assert s.coverage_ci.attrs["ci_detail"].startswith(f"Wilson interval over the {M} held-out agents,")
