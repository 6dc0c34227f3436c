"""simulate_eval: the embedded default data obeys its own contract and its stated rates.

Rates are checked by simulation with a fixed seed against the stated
probabilities, with tolerances of about 4 binomial standard errors.
"""

import json

import numpy as np
import pytest
from scipy.special import expit

from hierbench.data import check_eval_dataset
from hierbench.data import read_report
from hierbench.data import to_counts
from hierbench.data import to_records
from hierbench.testing import as_rng
from hierbench.testing import default_dataset
from hierbench.testing import simulate_eval


def test_seeded_reproducible_and_valid():
    a, ta = simulate_eval(n_agents=3, n_tasks=40, n_runs=4, n_clusters=5, sd_cluster=0.5, rng=7)
    b, tb = simulate_eval(n_agents=3, n_tasks=40, n_runs=4, n_clusters=5, sd_cluster=0.5, rng=7)
    assert a.identical(b) and ta.identical(tb)
    check_eval_dataset(a)
    assert a.cluster.to_series().nunique() == 5
    assert not a.identical(simulate_eval(n_agents=3, n_tasks=40, n_runs=4, rng=8)[0])


def test_rates_of_missingness_and_errors():
    n = (20, 200, 10)
    ds, _ = simulate_eval(*n, p_missing_task=0.1, p_missing_run=0.2, p_error=0.05, rng=1)
    cells = n[0] * n[1]
    happened = ds.score.notnull() | ds.error
    whole_missing = int((~happened.any("run")).sum())
    assert abs(whole_missing / cells - 0.1) < 4 * np.sqrt(0.1 * 0.9 / cells)
    # within attempted cells runs 1..9 go missing with p = 0.2 (run 0 always kept)
    att = happened.any("run")
    later = happened.isel(run=slice(1, None)).where(att)
    frac = 1 - float(later.sum()) / float(att.sum() * (n[2] - 1))
    assert abs(frac - 0.2) < 4 * np.sqrt(0.2 * 0.8 / float(att.sum() * (n[2] - 1)))
    n_happened = int(happened.sum())
    assert abs(int(ds.error.sum()) / n_happened - 0.05) < 4 * np.sqrt(0.05 * 0.95 / n_happened)
    assert ds.attrs["n_records_read"] == n_happened == len(to_records(ds))


def test_exclude_policy_is_accounted_like_from_records():
    ds, _ = simulate_eval(n_agents=2, n_tasks=50, n_runs=5, p_error=0.1, errors="exclude", rng=2)
    n_err = int(ds.error.sum())
    assert n_err > 0
    assert np.isnan(ds.score.values[ds.error.values]).all()
    assert ds.attrs["n_records_kept"] == ds.attrs["n_records_read"] - n_err
    assert json.loads(ds.attrs["not_kept"]) == {"infrastructure error, excluded (errors='exclude')": n_err}
    assert int(to_counts(ds).n_runs.sum()) == ds.attrs["n_records_kept"]


def test_truth_p_is_the_success_probability():
    # many runs per cell: the per-cell success rate estimates truth.p (binomial tolerance)
    ds, truth = simulate_eval(n_agents=2, n_tasks=30, n_runs=400, rng=3)
    rate = ds.score.mean("run")
    se = np.sqrt(truth.p * (1 - truth.p) / 400)
    assert float((np.abs(rate - truth.p) / se.clip(min=1e-3)).max()) < 4.5
    eta = truth.mu + truth.agent_effect + truth.task_effect + truth.agent_task
    np.testing.assert_allclose(truth.p, expit(eta), rtol=1e-12)


def test_continuous_scores_and_run_noise():
    ds, _truth = simulate_eval(n_agents=2, n_tasks=10, n_runs=3, sd_run=0.5, score_kind="continuous", rng=4)
    s = ds.score.values
    assert ((s > 0) & (s < 1)).all()
    assert (ds.score.std("run") > 0).all()  # run noise makes runs of one cell differ
    assert read_report(ds)["score_kind"] == "continuous"


def test_default_dataset_is_the_documented_design():
    ds, _truth = default_dataset()
    r = read_report(ds)
    assert (r["n_agents"], r["n_tasks"], r["n_runs_max"]) == (6, 120, 5)
    assert ds.cluster.to_series().nunique() == 12
    assert not r["balanced"] and r["n_missing_cells"] > 0 and r["n_error_runs"] > 0


@pytest.mark.parametrize(
    ("kw", "msg"),
    [
        ({"n_tasks": 0}, r"`n_tasks` must be >= 1; got n_tasks=0"),
        ({"sd_task": -1.0}, r"`sd_task` must be >= 0; got sd_task=-1.0"),
        ({"sd_agent": float("nan")}, r"`sd_agent` must be a finite number; got sd_agent=nan"),
        ({"p_error": 1.0}, r"`p_error` must satisfy 0 <= p_error < 1; got 1.0"),
        ({"n_clusters": 99, "n_tasks": 5}, r"`n_clusters` must be <= 5; got n_clusters=99"),
        ({"score_kind": "ordinal"}, r"`score_kind` must be one of \['binary', 'continuous'\]; got 'ordinal'"),
        ({"errors": "drop"}, r"`errors` must be one of \['fail', 'exclude'\]; got 'drop'"),
    ],
)
def test_bad_arguments(kw, msg):
    """The rules are _base's (check_int, check_number, check_choice): one wording across hierbench."""
    with pytest.raises(ValueError, match=msg):
        simulate_eval(**kw)


def test_as_rng():
    g = np.random.default_rng(0)
    assert as_rng(g) is g
    assert as_rng(5).integers(1000) == np.random.default_rng(5).integers(1000)
    with pytest.raises(TypeError, match=r"`rng` must be None, an int seed or a numpy Generator; got str"):
        as_rng("0")
