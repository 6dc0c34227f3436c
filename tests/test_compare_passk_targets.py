"""side_by_side puts pass^k beside pass^k only when both intervals are for the same tasks.

hierbench.freq.pass_hat_k's t interval uses the task-level standard error (tasks as a
sample): it is for a new draw of tasks from the same population, as is the posterior with
population=True. The posterior over the observed tasks (population=False) is for these
tasks, narrower by the task spread, and is refused beside it. The posterior headers say
which interval each is.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from _helpers import fake_fit

from hierbench import freq
from hierbench.compare import MismatchedEstimatesError
from hierbench.compare import side_by_side
from hierbench.metrics import pass_at_k
from hierbench.metrics import pass_hat_k
from hierbench.testing import simulate_eval


def _bb_fake():
    rng = np.random.default_rng(7)
    n = np.full((2, 12), 4)
    c = rng.binomial(4, 0.5, (2, 12))
    return fake_fit("beta_binomial", ["a0", "a1"], {"n_runs": n, "n_success": c},
                    mu=rng.uniform(0.4, 0.6, (2, 200, 2)), kappa=rng.uniform(2, 6, (2, 200, 2)))  # fmt: skip


def _head(result) -> str:
    """The repr's header, its lines (wrapped at the repr width) joined: all before the first cell, a0's."""
    return " ".join(line.strip() for line in repr(result).split("\n  a0, ")[0].splitlines())


def test_the_three_posterior_pass_k_headers_say_what_each_interval_is_for():
    fit = _bb_fake()
    cond = pass_hat_k(fit, k=2, realised=False)
    real = pass_hat_k(fit, k=2, rng=0)  # the default on these tasks: realised
    pop = pass_hat_k(fit, k=2, population=True)
    heads = [_head(r) for r in (cond, real, pop)]
    assert len(set(heads)) == 3
    assert max(len(line) for r in (cond, real, pop) for line in repr(r).splitlines()) <= 100  # the house repr width
    assert "interval for the model's expected pass^k of these tasks given its parameters" in heads[0]
    assert "realised=True" in heads[0]
    assert "interval for these tasks' own pass^k" in heads[1]
    assert "interval for the population's mean pass^k, as for a new draw of tasks" in heads[2]
    assert [r.attrs["tasks"] for r in (cond, real, pop)] == ["observed", "observed", "population"]
    # the law of total variance: the realised average adds sum_t Var(p_t^2 | draw) / T^2
    # to the conditional expectation's spread, so its interval is wider for every agent
    width = lambda r: (r.ci.sel(ci_bound="upper") - r.ci.sel(ci_bound="lower")).values  # noqa: E731
    assert (width(real) > width(cond)).all()
    at = _head(pass_at_k(fit, k=2, realised=False))
    assert "expected pass@k of these tasks" in at


def test_side_by_side_names_the_argument_for_the_like_pair_without_a_fit():
    fit = _bb_fake()
    n = fit["constant_data"]["n_runs"].values
    c = fit["constant_data"]["n_success"].values
    counts = xr.Dataset({"n_runs": (("agent", "task"), n), "n_success": (("agent", "task"), c)},
                        coords={"agent": ["a0", "a1"]})  # fmt: skip
    unb = freq.pass_hat_k(counts, 2)
    with pytest.raises(MismatchedEstimatesError, match=r"Recompute \['bayes'\] with population=True"):
        side_by_side({"freq": unb, "bayes": pass_hat_k(fit, k=2).sel(k=2, drop=True)})
    t = side_by_side({"freq": unb, "bayes": pass_hat_k(fit, k=2, population=True).sel(k=2, drop=True)})
    assert t["quantity"].values.tolist() == ["pass^k (a new draw of tasks from the same population)"] * 2


@pytest.mark.slow
def test_on_a_tiny_crossed_fit_the_like_pair_has_comparable_widths():
    pytest.importorskip("pymc")
    from hierbench.bayes import build_crossed
    from hierbench.bayes import fit

    data, _ = simulate_eval(n_agents=2, n_tasks=30, n_runs=4, rng=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a 100-draw fit fails the ESS target by design
        tree = fit(build_crossed(data), draws=100, tune=100, chains=2, rng=3, progress=False)
    unb = freq.pass_hat_k(data, [1, 2])
    pop = pass_hat_k(tree, k=[1, 2], population=True)
    t = side_by_side({"freq": unb, "bayes": pop})
    ratio = (t["width"].sel(estimator="bayes") / t["width"].sel(estimator="freq")).values
    # both widths carry the task spread (30 tasks): the same order on average (0.70 seen at this
    # seed; the posterior pools the task spread over both agents, so it is somewhat narrower)
    assert 0.5 < np.exp(np.log(ratio).mean()) < 2, ratio
    # the posterior for these tasks leaves the spread of a new draw of tasks out: narrower in
    # every cell (0.06-0.13 seen, against 0.14-0.24), and refused beside the frequentist interval
    obs = pass_hat_k(tree, k=[1, 2])
    assert (obs.ci.diff("ci_bound").squeeze("ci_bound") < pop.ci.diff("ci_bound").squeeze("ci_bound")).all()
    with pytest.raises(MismatchedEstimatesError, match="population=True"):
        side_by_side({"freq": unb, "bayes": obs})
