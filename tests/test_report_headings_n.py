"""Audit N, finding 7 (the parts in the report's sections): a caption of one method, a pairwise heading
that names what the section holds, and a beta-binomial fit whose rho rests on its prior said so.

The rho check is independent of the fit's own record: scipy's beta-binomial of one trial has the same
probability for every rho (it is the mean), so with one run per cell no data move rho.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from hierbench.report._context import _Context
from hierbench.report._report import Report
from hierbench.testing import simulate_eval


def _run(sid: str, fit, data, freq="auto"):
    from hierbench.report._build import _run_section

    ctx = _Context(fit=fit, data=data, prob=0.95, rng=0, n_resamples=99, truth=None, freq=freq, subset=[],
                   say=lambda *_: None)  # fmt: skip
    rep = Report("t")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _run_section(ctx, rep, sid)
    return rep.blocks[0]


def _bb_fit(data) -> xr.DataTree:
    """A beta-binomial fit's record of ``data`` (the builder's structure, a random posterior: no sampler)."""
    from hierbench.bayes import build_beta_binomial
    from hierbench.data import to_counts

    model = build_beta_binomial(data)
    agents = [str(a) for a in data["agent"].values]
    rng = np.random.default_rng(0)
    post = xr.Dataset({"mean_new_task": (("chain", "draw", "agent"), rng.uniform(0.2, 0.8, (2, 50, len(agents)))),
                       "rho": (("chain", "draw", "agent"), rng.uniform(0, 1, (2, 50, len(agents))))},
                      coords={"agent": agents})  # fmt: skip
    fit = xr.DataTree.from_dict({"posterior": post, "constant_data": to_counts(data)[["n_runs", "n_success"]]})
    fit.attrs = {"hierbench_model": "beta_binomial", "hierbench_spec": json.dumps({"model": "beta_binomial"}),
                 "hierbench_structure": json.dumps(model.hierbench["structure"], default=str)}  # fmt: skip
    return fit


def test_one_run_per_cell_leaves_rho_to_its_prior_and_the_data_summary_says_so():
    mu = 0.37
    one_run = [stats.betabinom.pmf(1, 1, mu * (1 / r - 1), (1 - mu) * (1 / r - 1)) for r in (0.05, 0.5, 0.95)]
    np.testing.assert_allclose(one_run, mu)  # rho does not enter the law of one run
    data, _ = simulate_eval(n_agents=3, n_tasks=6, n_runs=1, rng=0)
    fit = _bb_fit(data)
    for given in (data, None):  # with the log, and from the fit's constant data alone
        text = _run("data-summary", fit, given, freq=None)["text"]
        assert "overdispersion: rho from its prior" in text and "read those numbers as the prior's" in text
    two_runs, _ = simulate_eval(n_agents=3, n_tasks=6, n_runs=2, rng=0)
    assert "rho from its prior" not in _run("data-summary", _bb_fit(two_runs), two_runs, freq=None)["text"]


def test_a_caption_of_one_method_does_not_speak_of_each_method():
    data, _ = simulate_eval(n_agents=3, n_tasks=6, n_runs=1, rng=0)
    one = _run("abilities", _bb_fit(data), None)["text"]
    assert "from each method" not in one and one.startswith("Each agent's level with its interval (Bayes beta_binomial")
    both = _run("abilities", _bb_fit(data), data)["text"]
    assert "from each method on one axis" in both


@pytest.mark.parametrize(("with_fit", "with_data", "title"), [
    (True, True, "Does A beat B? Pairwise probabilities and paired tests"),
    (False, True, "Does A beat B? Paired tests"),
    (True, False, "Does A beat B? Pairwise probabilities"),
])  # fmt: skip
def test_the_pairwise_heading_names_what_the_section_holds(with_fit, with_data, title):
    data, _ = simulate_eval(n_agents=3, n_tasks=8, n_runs=2, rng=1)
    sec = _run("pairwise", _bb_fit(data) if with_fit else None, data if with_data else None)
    assert sec["heading"] == title
    assert ("Bayes P(a > b)" in sec["text"]) == with_fit and ("How:" in sec["text"]) == with_data
