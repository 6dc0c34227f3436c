"""Audit T, findings 2, 6, 8 and 10 (helper W): success_rate, stratified_mean, the beta-binomial fit, reprs.

Expected values come from scipy.stats (binomial enumeration of the convex-order bound, the t
quantile), pandas by hand and exact arithmetic, never from the code under test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import optimize
from scipy import stats

from hierbench.freq import pass_at_k
from hierbench.freq import success_rate


def _log(y: np.ndarray, codes=None) -> xr.Dataset:
    A, T, R = y.shape
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), y.astype(float))},
        coords={"agent": [f"a{i}" for i in range(A)], "task": [f"t{i}" for i in range(T)], "run": np.arange(R)},
    )
    return ds if codes is None else ds.assign_coords(cluster=("task", [f"c{c}" for c in codes]))


def _convex_order_upper(s: int, n: int, a2: float) -> float:
    """The largest p with ``min_m E[(m - B)_+] / (m - s) > a2``, B ~ Binomial(n, p), by enumeration.

    Between integers the ratio is monotone, so its minimum over m > s is at an integer m in (s, n].
    """
    k = np.arange(n + 1)

    def tail(p: float) -> float:
        pmf = stats.binom.pmf(k, n, p)
        return min(float((np.clip(m - k, 0, None) * pmf).sum()) / (m - s) for m in range(s + 1, n + 1))

    return optimize.brentq(lambda p: tail(p) - a2, s / n + 1e-9, 1 - 1e-12, xtol=1e-13)


def test_few_successes_get_the_bound_inside_0_1_and_the_flag():
    # 40 tasks, one run each, 2 successes: the plain t interval reached below 0 without a flag
    y = np.zeros((1, 40, 1))
    y[0, [3, 17], 0] = 1.0
    res = success_rate(_log(y))
    assert res.ci_flag.values.tolist() == ["bound: few tasks carry the mean"]
    lo, hi = res.ci.values[0]
    plain_t_lower = 0.05 - stats.t.ppf(0.975, 39) * np.std(y[0, :, 0], ddof=1) / np.sqrt(40)
    assert plain_t_lower < 0 <= lo  # the old interval's defect, and the new one's end
    assert hi == pytest.approx(_convex_order_upper(2, 40, 0.025), abs=1e-7)
    assert lo == pytest.approx(1 - _convex_order_upper(38, 40, 0.025), abs=1e-7)
    assert res.ci.attrs["ci_kind"] == "bounded-mean" and "bound" in res.ci.attrs["ci_detail"]


def test_success_rate_and_pass_at_1_report_one_interval_and_flag_with_clusters():
    rng = np.random.default_rng(11)
    codes = np.repeat(np.arange(8), [9, 7, 6, 5, 4, 3, 2, 1])
    p = rng.beta(0.6, 2.0, (4, codes.size, 1))
    y = rng.binomial(1, np.repeat(p, 3, -1)).astype(float)
    y[0] = 0.0
    y[0, 5, 1] = 1.0  # one success in one task: few tasks carry the mean
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sr, pk = success_rate(_log(y, codes)), pass_at_k(_log(y, codes), 1)
    np.testing.assert_allclose(sr.ci.values, pk.ci.values, rtol=1e-12, atol=1e-15)
    assert sr.ci_flag.values.tolist() == pk.ci_flag.values.tolist()
    assert sr.ci_flag.values[0] == "bound: few tasks carry the mean"
    assert ((sr.ci.values >= 0) & (sr.ci.values <= 1)).all()
    # the estimate is the mean over tasks of each task's mean, by hand
    np.testing.assert_allclose(sr.estimate.values, y.mean(2).mean(1), rtol=1e-12)


def test_success_rate_repr_names_the_quantity_and_the_unit():
    codes = np.repeat(np.arange(6), 5)
    y = np.random.default_rng(2).binomial(1, 0.5, (2, 30, 2)).astype(float)
    head = repr(success_rate(_log(y, codes))).splitlines()[0]
    assert "success rate, mean over tasks of each task's mean score" in head
    assert "a new draw of task clusters" in head and "6 clusters of `cluster` as the unit" in head
    head = repr(success_rate(_log(y))).splitlines()[0]
    assert "a new draw of tasks from the same population (the tasks as the unit)" in head


def test_metr_gpt35_instruct_is_flagged_and_inside_0_1(shared_data):
    import pandas as pd

    from hierbench.data import load_metr
    from hierbench.data import shared_data_dir

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sr = success_rate(load_metr())
    a = "gpt-3.5-turbo-instruct"
    raw = pd.read_csv(shared_data_dir() / "metr" / "metr_all_runs_2025-02-27_19b0311.csv.gz")
    raw = raw[raw["alias"] == a]
    by_hand = raw.groupby("task_id")["score_binarized"].mean().mean()
    assert float(sr.estimate.sel(agent=a)) == pytest.approx(by_hand, rel=1e-12)
    lo, hi = sr.ci.sel(agent=a).values
    assert 0 <= lo < by_hand < hi <= 1
    assert sr.ci_flag.sel(agent=a).item() == "bound: few tasks carry the mean"


def test_scores_outside_0_1_are_refused_by_name():
    y = np.array([[[0.0], [2.0], [1.0]]])
    with pytest.raises(ValueError, match=r"scores must lie in \[0, 1\]; 1 do not, e.g. \[2.0\]"):
        success_rate(_log(y))


def test_one_unit_stratum_is_named_and_a_census_stratum_adds_no_variance():
    from hierbench import UndefinedWarning
    from hierbench.freq import stratified_mean

    y = np.array([1.0, 0.0, 1.0, 0.4, 0.2, 0.9, 0.5, 0.0])
    lab = np.array(["a", "a", "a", "b", "c", "c", "c", "c"])
    with pytest.warns(UndefinedWarning, match=r"1 strata hold fewer than 2 units: 'b'\. .*standard error and the "
                                              r"interval are NaN"):
        res = stratified_mean(y, lab)
    assert float(res.estimate) == pytest.approx(y.mean(), rel=1e-12)  # sample shares: the plain mean
    assert np.isnan(float(res.standard_error)) and np.isnan(res.ci.values).all()
    # stratum b sampled whole (N_b = n_b = 1): known exactly, so the SE is that of a and c alone
    pops = {"a": 30, "b": 1, "c": 40}
    with warnings.catch_warnings():
        warnings.simplefilter("error", UndefinedWarning)
        res = stratified_mean(y, lab, population_sizes=pops)
    W = {h: n / 71 for h, n in pops.items()}
    var = sum(W[h] ** 2 * np.var(y[lab == h], ddof=1) / (lab == h).sum() * (1 - (lab == h).sum() / pops[h])
              for h in "ac")
    assert float(res.estimate) == pytest.approx(sum(W[h] * y[lab == h].mean() for h in "abc"), rel=1e-12)
    assert float(res.standard_error) == pytest.approx(np.sqrt(var), rel=1e-12)
    z = stats.norm.ppf(0.975)
    np.testing.assert_allclose(res.ci.values, float(res.estimate) + np.array([-z, z]) * np.sqrt(var), rtol=1e-12)
    head = repr(res).splitlines()[0]
    assert head.startswith("IntervalResult: stratified mean over 3 strata, the tasks drawn independently") and "95% normal" in head


def test_swebench_repos_name_pallets_and_keep_the_pandas_estimate(shared_data):
    import pandas as pd

    from hierbench import UndefinedWarning
    from hierbench.data import load_swebench_bash_only
    from hierbench.data import shared_data_dir
    from hierbench.freq import stratified_mean

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = load_swebench_bash_only()
    with pytest.warns(UndefinedWarning, match=r"1 strata hold fewer than 2 units: 'pallets'\."):
        res = stratified_mean(ds["score"].mean("run"), ds["cluster"])
    raw = pd.read_csv(shared_data_dir() / "swebench_bash_only" / "swebench_verified_bash_only_per_instance.csv.gz")
    raw["repo"] = raw["task_id"].str.split("__").str[0]
    a = str(ds["agent"].values[0])
    one = raw[raw["model_name"] == a]
    per_repo = one.groupby("repo")["resolved"].agg(["mean", "size"])
    by_hand = (per_repo["mean"] * per_repo["size"]).sum() / per_repo["size"].sum()
    assert float(res.estimate.sel(agent=a)) == pytest.approx(by_hand, rel=1e-12)


def test_interval_result_reprs_name_the_quantity():
    from hierbench.freq import pooled_binomial_interval
    from hierbench.freq import proportion_interval

    head = repr(proportion_interval(9, 10)).splitlines()[0]
    assert head == "IntervalResult: success proportion successes / n, the n trials as independent draws, 95% wilson interval"
    y = xr.DataArray(np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0], [1.0, 0.0]]), dims=("task", "run"))
    head = repr(pooled_binomial_interval(y)).splitlines()[0]
    assert "success rate pooled over every task x run attempt, each attempt an independent draw, 95% wald" in head


def test_one_run_per_task_leaves_kappa_unidentified_and_says_so():
    from hierbench._base import UnidentifiedWarning
    from hierbench.freq import beta_binomial_profile_ci

    # the premise, by scipy: with n = 1 the beta-binomial is Bernoulli(mu) whatever kappa
    for kappa in (0.5, 3.0, 40.0):
        assert stats.betabinom.pmf(1, 1, 0.3 * kappa, 0.7 * kappa) == pytest.approx(0.3, rel=1e-12)
    y = np.zeros((2, 30, 1))
    y[0, :9, 0] = 1.0  # a0: 9 of 30
    y[1, :, 0] = 0.0  # a1: none
    with pytest.warns(UnidentifiedWarning) as rec:
        res = beta_binomial_profile_ci(_log(y), prob=0.95)
    text = " ".join(str(w.message) for w in rec)
    assert "every task failed ('a1')" in text and "every task has one run ('a0')" in text
    assert "no overdispersion detected" not in text
    assert np.isnan(res.kappa.values).all() and np.isnan(res.alpha.values).all()
    assert float(res.mu[0]) == pytest.approx(0.3, abs=1e-6)  # the vectorised search is good to ~1e-7
    # mu's interval is the binomial likelihood-ratio interval on 9 / 30 (scipy's chi2 and brentq)
    def ll(p):
        return stats.binom.logpmf(9, 30, p)

    cut = ll(0.3) - stats.chi2.ppf(0.95, 1) / 2
    lo = optimize.brentq(lambda p: ll(p) - cut, 1e-6, 0.3, xtol=1e-12)
    hi = optimize.brentq(lambda p: ll(p) - cut, 0.3, 1 - 1e-6, xtol=1e-12)
    np.testing.assert_allclose(res.ci.values[0], [lo, hi], atol=1e-6)


def test_no_overdispersion_names_its_rows():
    from hierbench.freq import NoOverdispersionWarning
    from hierbench.freq import fit_beta_binomial_ml

    c = xr.DataArray([[5, 5, 5, 5, 5, 5], [0, 1, 3, 2, 9, 5]], dims=("agent", "task"),
                     coords={"agent": ["flat", "spread"]})
    with pytest.warns(NoOverdispersionWarning, match=r"no overdispersion detected \('flat'\)"):
        res = fit_beta_binomial_ml(c, xr.full_like(c, 10))
    assert np.isinf(float(res.kappa.sel(agent="flat"))) and np.isfinite(float(res.kappa.sel(agent="spread")))


def test_load_metr_says_which_agents_have_no_cost_or_tokens(shared_data):
    import json

    import pandas as pd

    from hierbench.data import load_metr
    from hierbench.data import shared_data_dir

    raw = pd.read_csv(shared_data_dir() / "metr" / "metr_all_runs_2025-02-27_19b0311.csv.gz")
    filled = raw.groupby("alias")[["dollar_equivalent", "total_tokens"]].count()  # pandas by hand
    for include_human in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = load_metr(include_human=include_human)
        said = json.loads(ds.attrs["agents_without"])
        for var, col in (("cost", "dollar_equivalent"), ("tokens", "total_tokens")):
            agents = [str(a) for a in ds["agent"].values]
            empty = sorted(a for a in agents if filled.loc[a, col] == 0)
            assert sorted(said[var]) == empty and len(empty) == 10  # every model; never the human rows
            assert ds[var].attrs["note"].startswith(f"no value in any run of 10 of {len(agents)} agents")
            assert f"'{col}'" in ds[var].attrs["note"]
