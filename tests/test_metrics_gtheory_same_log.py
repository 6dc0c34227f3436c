"""The Bayes variance components carry the fit's log, and a G-study of another log is refused beside them."""

import json
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench import HierbenchError
from hierbench._base import COUNTS_HASH
from hierbench.bayes import data_hash
from hierbench.compare import MismatchedEstimatesError
from hierbench.compare import side_by_side
from hierbench.data import to_counts
from hierbench.freq import variance_components
from hierbench.metrics import bayes_d_study
from hierbench.metrics import bayes_variance_components
from hierbench.metrics import crossed_variance_components
from hierbench.testing import simulate_eval


def _crossed_fit_of(ds: xr.Dataset, *, stamp: bool = True) -> xr.DataTree:
    """A fake crossed fit of ``ds`` (a few draws of the model's parameters), with the log's counts and fingerprint."""
    counts = to_counts(ds)
    A, T = counts.sizes["agent"], counts.sizes["task"]
    g = np.random.default_rng(0)
    cd = ("chain", "draw")
    post = {
        "mu": (cd, g.normal(0, 0.3, (1, 4))),
        "agent_effect": ((*cd, "agent"), g.normal(0, 0.5, (1, 4, A))),
        "task_effect": ((*cd, "task"), g.normal(0, 1, (1, 4, T))),
        "sd_agent": (cd, g.uniform(0.3, 1, (1, 4))),
        "sd_task": (cd, g.uniform(0.5, 1.5, (1, 4))),
        "sd_agent_task": (cd, g.uniform(0.2, 0.8, (1, 4))),
    }
    coords = {"agent": counts.agent.values, "task": counts.task.values}
    const = xr.Dataset({"n_runs": counts.n_runs, "n_success": counts.n_success})
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset(post, coords=coords), "constant_data": const})
    dt.attrs["hierbench_model"] = "crossed"
    dt.attrs["hierbench_spec"] = json.dumps({"options": {"agents": "random", "agent_task": "marginal", "n_quad": 7}})
    if stamp:  # what a count model records: the fingerprint of the counts it saw
        dt.attrs["hierbench_data_hash"] = dt.attrs["hierbench_counts_hash"] = data_hash(counts)
    return dt


@pytest.fixture(scope="module")
def logs():
    """Log A (3 agents x 12 tasks x 3 runs) with a fit of it, and log B (3 x 20 x 2) of another seed; G-studies of both."""
    log_a, _ = simulate_eval(n_agents=3, n_tasks=12, n_runs=3, rng=1)
    log_b, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=2, rng=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g_a, g_b = variance_components(log_a), variance_components(log_b)
    return {"fit": _crossed_fit_of(log_a), "g_a": g_a, "g_b": g_b,
            "fp_a": data_hash(to_counts(log_a)), "fp_b": data_hash(to_counts(log_b))}  # fmt: skip


def test_a_g_study_of_another_log_is_refused_naming_both_logs(logs):
    fp_a, fp_b = logs["fp_a"], logs["fp_b"]
    assert fp_a != fp_b
    for call in (lambda: bayes_variance_components(logs["fit"], logs["g_b"]),
                 lambda: bayes_d_study(logs["fit"], logs["g_b"], {"task": [50]})):  # fmt: skip
        with pytest.raises(HierbenchError) as err:
            call()
        msg = str(err.value)
        # the fit's log: 3 x 12 cells of 3 runs = 108 runs; the G-study's: 20 tasks x 2 runs, 3 * 20 * 2 = 120 scores
        for words in ("not the same evaluation", "3 agents x 12 tasks, 108 runs", fp_a[:12],
                      "20 task x 2 run, 120 observations", fp_b[:12], "variance_components(data)"):  # fmt: skip
            assert words in msg, words


def test_the_results_carry_the_fits_log_and_side_by_side_refuses_another(logs):
    fit, fp_a = logs["fit"], logs["fp_a"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prob = crossed_variance_components(fit, scale="probability")
        bv = bayes_variance_components(fit, logs["g_a"])
        d = bayes_d_study(fit, logs["g_a"], {"task": [50]})
    assert prob.attrs[COUNTS_HASH] == bv.attrs[COUNTS_HASH] == d.attrs[COUNTS_HASH] == fp_a
    for bayes in (prob, bv):
        same = side_by_side({"G": logs["g_a"], "Bayes": bayes})
        assert "same data" in same.attrs["data_check"] and fp_a[:12] in same.attrs["data_check"]
        with pytest.raises(MismatchedEstimatesError, match="allow_mismatch=True") as err:
            side_by_side({"G": logs["g_b"], "Bayes": bayes})
        assert fp_a[:12] in str(err.value) and logs["fp_b"][:12] in str(err.value)
        mixed = side_by_side({"G": logs["g_b"], "Bayes": bayes}, allow_mismatch=True)
        assert "differ" in mixed.attrs["data_check"]


def test_a_fit_without_a_fingerprint_is_not_checked_and_the_table_says_so(logs):
    old = _crossed_fit_of(simulate_eval(n_agents=3, n_tasks=12, n_runs=3, rng=1)[0], stamp=False)
    bv = bayes_variance_components(old, logs["g_b"])
    assert COUNTS_HASH not in bv.attrs
    assert side_by_side({"G": logs["g_b"], "Bayes": bv}).attrs["data_check"].startswith("not checked")
