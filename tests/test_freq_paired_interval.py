"""paired_test's ``ci`` follows compare_agents' per-pair rule: the paired t by default (audit s75 A, finding 2).

One owner of the rule (``_per_pair_kind`` / ``_per_pair_ci`` in ``_pair_interval``): for a log of
two agents, paired_test's ``ci`` is compare_agents' ``ci`` for the pair, with and without
clusters. Expected values independent of that code: the paired t written out with scipy's t
quantile; over equal clusters the CR2 t is statsmodels' cluster-robust OLS interval (CR1 with
G - 1 df, equal to CR2 / Bell-McCaffrey at equal sizes); the bootstrap interval is
``bootstrap_ci``'s on the same seed (12 tasks: the sign flips are enumerated, so they draw no
random numbers before the bootstrap, as the old default did).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import statsmodels.api as sm
import xarray as xr
from scipy import stats

from hierbench._base import ZeroWidthIntervalWarning
from hierbench.freq import bootstrap_ci
from hierbench.freq import compare_agents
from hierbench.freq import paired_test
from hierbench.testing import simulate_eval


def _two(clusters: int | None, seed: int = 1) -> xr.Dataset:
    kw = {} if clusters is None else {"n_clusters": clusters}
    ds, _ = simulate_eval(n_agents=2, n_tasks=12, n_runs=3, rng=seed, **kw)
    return ds


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


@pytest.mark.parametrize("clusters", [None, 4])
def test_paired_test_ci_is_compare_agents_ci_for_the_pair(clusters):
    """Two agents, 12 tasks (4 clusters of 3): the same interval, kind and detail from both functions."""
    ds = _two(clusters)
    a, b = ds.score.sel(agent="agent_00"), ds.score.sel(agent="agent_01")
    res = _quiet(paired_test, a, b, n_resamples=99, rng=0)
    cmp = _quiet(compare_agents, ds, n_resamples=99, rng=0)
    ref = cmp.ci.sel(agent="agent_00", opponent="agent_01")
    np.testing.assert_allclose(res.ci.values, ref.values, rtol=0, atol=1e-12)
    assert res.ci.attrs["ci_kind"] == ref.attrs["ci_kind"] == "t"
    assert res.ci.attrs["ci_detail"] == ref.attrs["ci_detail"]
    assert ("clusters: CR2" in res.ci.attrs["ci_detail"]) == (clusters is not None)


def test_default_ci_is_the_paired_t_by_hand_and_kept_to_minus_one_one():
    """3 binary tasks, d = (1, 1, 0): 2/3 +- t_{0.975, 2} sd / sqrt(3) = [-0.77, 2.1], cut to [-0.77, 1]."""
    a = xr.DataArray([1.0, 1.0, 0.0], dims="task")
    b = xr.DataArray([0.0, 0.0, 0.0], dims="task")
    res = _quiet(paired_test, a, b, n_resamples=99, rng=0)
    d = np.array([1.0, 1.0, 0.0])
    half = stats.t.ppf(0.975, 2) * np.std(d, ddof=1) / np.sqrt(3)
    assert d.mean() + half > 1
    np.testing.assert_allclose(res.ci.values, [d.mean() - half, 1.0], rtol=1e-12)
    ds = xr.Dataset({"score": (("agent", "task", "run"), np.stack([a.values, b.values])[..., None])},
                    coords={"agent": ["a", "b"]})  # fmt: skip
    cmp = _quiet(compare_agents, ds, n_resamples=99, rng=0)
    np.testing.assert_allclose(res.ci.values, cmp.ci.sel(agent="a", opponent="b").values, rtol=0, atol=1e-12)


def test_cluster_ci_is_statsmodels_cluster_robust_t_whatever_the_method():
    """Unbounded scores, 6 clusters of 4: statsmodels' interval (G - 1 df); a bootstrap method keeps it."""
    g = np.repeat(np.arange(6), 4)
    rng = np.random.default_rng(5)
    d = rng.normal(0.3, 1.0, 24) + rng.normal(0, 0.5, 6)[g]
    a = xr.DataArray(d, dims="task", coords={"cluster": ("task", [f"c{k}" for k in g])})
    fit = sm.OLS(d, np.ones(24)).fit(cov_type="cluster", cov_kwds={"groups": g}, use_t=True)
    expected = np.asarray(fit.conf_int(0.05))[0]
    for method in ("t", "percentile", "bca"):
        res = _quiet(paired_test, a, xr.zeros_like(a), n_resamples=99, rng=0, method=method)
        np.testing.assert_allclose(res.ci.values, expected, rtol=1e-10)
        assert res.ci.attrs["ci_kind"] == "t"
        assert res.ci_bootstrap.attrs["ci_kind"] == ("bca" if method == "bca" else "percentile")


@pytest.mark.parametrize("clusters", [None, 4])
def test_bootstrap_interval_is_bit_identical_to_the_old_default(clusters):
    """The old default ``ci`` (the percentile bootstrap): now ``ci_bootstrap`` always, ``ci`` with method='percentile' over tasks."""
    ds = _two(clusters)
    a, b = ds.score.sel(agent="agent_00"), ds.score.sel(agent="agent_01")
    old = _quiet(bootstrap_ci, ds, pairs=[("agent_00", "agent_01")], n_resamples=199, rng=7).ci.values[0]
    new = _quiet(paired_test, a, b, n_resamples=199, rng=7)
    pct = _quiet(paired_test, a, b, n_resamples=199, rng=7, method="percentile")
    assert new.counts["exact"] and pct.counts["exact"]
    assert np.array_equal(new.ci_bootstrap.values, old) and np.array_equal(pct.ci_bootstrap.values, old)
    assert np.array_equal(pct.ci.values, old) == (clusters is None)
    assert float(new.p_bootstrap) == float(pct.p_bootstrap)
    assert np.array_equal(new.distribution.values, pct.distribution.values)


def test_repr_detail_and_frame_say_which_interval_ci_is():
    """Default: 't' in the kind, detail, frame and repr, with ci_bootstrap beside; percentile: only that."""
    ds = _two(None)
    a, b = ds.score.sel(agent="agent_00"), ds.score.sel(agent="agent_01")
    res = _quiet(paired_test, a, b, n_resamples=99, rng=0)
    assert "with 95% t interval" in repr(res).splitlines()[0]
    text = " ".join(repr(res).split())
    assert "ci is the paired t interval over tasks (T - 1 df); ci_bootstrap [" in text and "(95% percentile)" in text
    df = res.to_frame()
    assert df["ci_kind"].item() == "t" and df["ci_detail"].item().startswith("paired t interval over tasks")
    lo, hi = np.asarray(res.ci_bootstrap.values)
    assert df["ci_bootstrap_lower"].item() == lo and df["ci_bootstrap_upper"].item() == hi
    pct = _quiet(paired_test, a, b, n_resamples=99, rng=0, method="percentile")
    assert "with 95% percentile interval" in repr(pct) and "ci_bootstrap [" not in repr(pct)
    assert pct.to_frame()["ci_kind"].item() == "percentile"


def test_zero_width_t_is_warned_by_its_name_and_a_bad_method_refused():
    """Equal scores: the t interval [0, 0] is warned once, as a t interval, with the reason."""
    a = xr.DataArray([1.0, 0.0, 1.0, 0.0], dims="task")
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = paired_test(a, a.copy(), n_resamples=19, rng=0)
    zero = [str(w.message) for w in rec if issubclass(w.category, ZeroWidthIntervalWarning)]
    assert len(zero) == 1 and "95% t interval" in zero[0] and "its standard error is 0" in zero[0]
    assert res.ci.values.tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match=r"`method` must be one of .*'t'.*; got 'wald'"):
        paired_test(a, a, method="wald")
