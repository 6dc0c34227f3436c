"""fit_irt_ml says when the 2PL's slopes collapse on logs of few agents (audit S finding 4).

On logs of 3-4 agents the empirical-Bayes 2PL drove every discrimination to ~0 (1e-5 to 1e-19), so
each difficulty -d/a was a ratio of noise to ~0 (+-1e3 .. 1e19) and lay outside its own interval;
the only warning said the hyperparameters were "still moving". The calibration now says what
happened and what to do, and records it in info, bank.attrs, the interval's detail and the repr.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import expit

from hierbench.design import simulate_irt_log
from hierbench.freq import IRTConvergenceWarning
from hierbench.freq import fit_irt_ml
from hierbench.testing import simulate_eval

AUDIT_SHAPES = {  # the audit's reproductions: 4 agents x 20 tasks in one cluster, 3 agents x 10 tasks; 3 runs
    "4x20 one cluster": lambda: simulate_eval(4, 20, 3, n_clusters=1, rng=0)[0],
    "3x10": lambda: simulate_eval(3, 10, 3, rng=0)[0],
}


def _task_successes(ds):
    """Each task's total successes, by pandas from the raw binary scores (no hierbench code)."""
    df = ds["score"].to_dataframe().reset_index()
    return df.groupby("task")["score"].sum()


@pytest.mark.parametrize("shape", list(AUDIT_SHAPES))
def test_the_audit_shapes_say_the_2pl_slopes_collapsed_and_record_it(shape):
    """Independent checks: the agents' predicted success probabilities, recomputed with scipy's expit from
    the returned mode, do not differ between agents on any task (what "the abilities explain none of the
    scores" means); the count of difficulties outside their own interval, by pandas on to_frame().
    """
    ds = AUDIT_SHAPES[shape]()
    with pytest.warns(IRTConvergenceWarning) as rec:
        cal = fit_irt_ml(ds, n_draws=300, rng=0)
    said = [str(w.message) for w in rec if "collapsed" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in rec]
    msg = said[0]
    M = ds.sizes["agent"]
    assert f"with {M} agents" in msg and "2PL's discriminations collapsed to zero" in msg
    assert "meaningless" in msg and "model='1pl'" in msg and "more agents" in msg
    p = expit(cal.discrimination * cal.ability + cal.intercept).transpose("agent", "task").values
    assert np.ptp(p, axis=0).max() < 1e-3, np.ptp(p, axis=0).max()
    fr = cal.to_frame()
    outside = fr.index[(fr.estimate < fr.lower) | (fr.estimate > fr.upper)].astype(str).tolist()
    assert cal.info["outside_own_interval"] == outside
    assert f"{len(outside)} of {len(fr)} difficulties at the mode lie outside" in msg or not outside
    assert cal.info["slopes_collapsed"] is True and cal.bank.attrs["slopes_collapsed"] == 1
    assert cal.bank.attrs["n_outside_own_interval"] == len(outside)
    assert "NOT IDENTIFIED" in cal.ci.attrs["ci_detail"] and "NOT IDENTIFIED" in repr(cal)


@pytest.mark.parametrize("shape", list(AUDIT_SHAPES))
def test_the_advised_1pl_does_not_collapse_on_the_audit_shapes(shape):
    """The way out the warning names works. Independent check: with every cell run equally often, a task's
    total successes is the 1PL's sufficient statistic for its intercept, and under a prior shared by all
    tasks the mode's difficulty falls as that total rises: the order must be that of the pandas totals.
    """
    ds = AUDIT_SHAPES[shape]()
    assert int(ds["score"].count()) == ds["score"].size  # complete: the sufficiency argument holds
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cal = fit_irt_ml(ds, model="1pl", n_draws=300, rng=0)
    assert not [w for w in rec if "collapsed" in str(w.message)]
    assert cal.info["slopes_collapsed"] is False and cal.bank.attrs["slopes_collapsed"] == 0
    assert float(cal.discrimination[0]) > 0.05
    s = _task_successes(ds).reindex(cal.estimate["task"].values).values
    b = cal.estimate.values
    more = s[:, None] > s[None, :]  # task i solved more often than task j ...
    assert more.any() and (b[:, None] < b[None, :])[more].all()  # ... is easier
    assert "NOT IDENTIFIED" not in cal.ci.attrs["ci_detail"]


def test_a_well_identified_2pl_does_not_warn_of_a_collapse():
    """25 agents x 15 tasks x 3 runs from simulate_eval's one-skill model: the slopes are identified; no
    collapse is said or recorded (a test the warning cannot pass by always firing).
    """
    ds = simulate_eval(25, 15, 3, rng=0)[0]
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        cal = fit_irt_ml(ds, n_draws=300, rng=0)
    assert not [w for w in rec if "collapsed" in str(w.message)]
    assert cal.info["slopes_collapsed"] is False and cal.discrimination.min() > 0.05
    assert "NOT IDENTIFIED" not in repr(cal)


def test_a_collapsed_1pl_does_not_advise_the_1pl():
    """Three agents of simulate_irt_log whose answers do not separate them: even the shared slope collapses,
    and the advice is more agents, not the model already fitted.
    """
    data, _ = simulate_irt_log(4, 40, rng=0)
    with pytest.warns(IRTConvergenceWarning, match="1PL's shared discrimination collapsed to zero") as rec:
        cal = fit_irt_ml(data.isel(agent=[1, 2, 3]), model="1pl", n_draws=100, rng=0)
    msg = next(str(w.message) for w in rec if "collapsed" in str(w.message))
    assert "model='1pl'" not in msg and "more agents" in msg
    assert cal.info["slopes_collapsed"] is True
