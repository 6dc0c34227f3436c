"""The BCa-undefined warning gives the advice that holds for its cause (audit W, finding 4).

An agent at 0 on every task: every resample equals the estimate, so the percentile interval is
[0, 0] (checked here on the result) and the advice is ``pass_hat_k(data, 1)``'s bound, as the
report's table flag says, not "use the percentile interval".
"""

import warnings

import numpy as np

from hierbench.freq import DegenerateBootstrapWarning
from hierbench.freq import bootstrap_ci
from hierbench.testing import simulate_eval


def _all_zero_log():
    ds, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=2, rng=3)
    zero = str(ds["agent"].values[1])
    ds["score"].loc[{"agent": zero}] = 0.0
    return ds, zero


def _degenerate(ds, method):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = bootstrap_ci(ds, method=method, n_resamples=499, rng=0)
    return res, [str(w.message) for w in caught if issubclass(w.category, DegenerateBootstrapWarning)]


def test_all_zero_agent_gets_the_bound_advice():
    ds, zero = _all_zero_log()
    _, said = _degenerate(ds, "bca")
    assert len(said) == 1
    assert "BCa is undefined for 1 of 3 statistics" in said[0]
    assert "pass_hat_k(data, 1) gives a bound that holds" in said[0]
    assert "use the percentile interval" not in said[0].lower()
    # what the old advice led to: the percentile interval of an all-zero record is [0, 0] (no width)
    pct, _ = _degenerate(ds, "percentile")
    assert np.allclose(pct.ci.sel(agent=zero).values, [0.0, 0.0])


def test_no_warning_without_an_undefined_interval():
    ds, _ = simulate_eval(n_agents=3, n_tasks=20, n_runs=2, rng=3)
    assert (ds["score"].mean(["task", "run"]).values > 0).all()
    _, said = _degenerate(ds, "bca")
    assert said == []
