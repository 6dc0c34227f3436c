"""D-study sizes: the shorthand's defaults on unbalanced data and ``n_tasks`` as the total.

Expected values are Brennan's D-study formulas for agents crossed with tasks nested in
clusters, runs nested in agent x task cells (p x (t:c), r:(p x t)), written out here from
the components: with n_c clusters, N tasks in all (N / n_c per cluster) and r runs per cell,

    sigma2_delta = s(a:c) / n_c + s(a:t:c) / N + s(res) / (N r)
    sigma2_Delta = sigma2_delta + s(c) / n_c + s(t:c) / N
    E rho^2 = s(a) / (s(a) + sigma2_delta),   Phi = s(a) / (s(a) + sigma2_Delta)
"""

import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench.freq import NegativeVarianceComponentWarning
from hierbench.freq import variance_components


def _brennan(s: dict, n_c: float, n_total: float, r: float) -> dict:
    delta = s["agent:cluster"] / n_c + s["agent:task:cluster"] / n_total
    delta += s["residual"] / (n_total * r)
    Delta = delta + s["cluster"] / n_c + s["task:cluster"] / n_total
    return {
        "sigma2_delta": delta,
        "sigma2_Delta": Delta,
        "e_rho2": s["agent"] / (s["agent"] + delta),
        "phi": s["agent"] / (s["agent"] + Delta),
    }


@pytest.fixture(scope="module")
def nested():
    """6 agents x 4 clusters x 3 tasks per cluster x 2 runs, normal scores (balanced: ANOVA)."""
    rng = np.random.default_rng(8)
    shape = (6, 4, 3, 2)
    y = (
        rng.normal(0, 0.6, (6, 1, 1, 1))
        + rng.normal(0, 0.5, (1, 4, 1, 1))
        + rng.normal(0, 0.3, (6, 4, 1, 1))
        + rng.normal(0, 0.8, (1, 4, 3, 1))
        + rng.normal(0, 0.4, (6, 4, 3, 1))
        + rng.normal(0, 1.0, shape)
    )
    score = y.reshape(6, 12, 2)  # task t = 3 * cluster + task-in-cluster
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), score)},
        coords={"task": [f"t{i}" for i in range(12)], "cluster": ("task", np.repeat(list("abcd"), 3))},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NegativeVarianceComponentWarning)
        vc = variance_components(ds)
    assert vc.formula == "run:(agent*(task:cluster))"
    assert vc._legacy is not None  # the three-facet shorthand applies
    return vc, dict(zip(vc.component_names, vc.estimate.values, strict=True))


def test_n_tasks_is_the_total_over_the_clusters(nested):
    vc, s = nested
    d = vc.d_study(n_tasks=[12, 40, 100], n_runs=[1, 2])
    for n_total in (12, 40, 100):
        for r in (1, 2):
            want = _brennan(s, 4, n_total, r)
            got = d.sel(n_tasks=n_total, n_runs=r)
            for k, v in want.items():
                assert float(got[k]) == pytest.approx(v, rel=1e-12), (k, n_total, r)
    np.testing.assert_allclose(d.task_per_cluster.values, [3, 10, 25])
    assert "total number of tasks" in d.attrs["dim_n_tasks"]
    assert "held at the G-study's 4" in d.attrs["dim_n_tasks"]
    # the G-study's own sizes (12 tasks in all, 2 runs) give its coefficients
    assert float(d.e_rho2.sel(n_tasks=12, n_runs=2)) == pytest.approx(
        s["agent"] / (s["agent"] + s["agent:cluster"] / 4 + s["agent:task:cluster"] / 12
                      + s["residual"] / 24)
    )


def test_n_clusters_varies_the_clusters(nested):
    vc, s = nested
    d = vc.d_study(n_tasks=[20, 60], n_clusters=[2, 10], n_runs=3)
    assert d.e_rho2.dims == ("n_tasks", "n_runs", "n_clusters")
    for n_total in (20, 60):
        for n_c in (2, 10):
            got = d.sel(n_tasks=n_total, n_clusters=n_c, n_runs=3)
            for k, v in _brennan(s, n_c, n_total, 3).items():
                assert float(got[k]) == pytest.approx(v, rel=1e-12)
    assert float(d.task_per_cluster.sel(n_tasks=60, n_clusters=10)) == 6.0
    assert "varied along n_clusters" in d.attrs["dim_n_tasks"]


def test_tasks_per_cluster_still_reachable_through_sizes(nested):
    vc, s = nested
    d = vc.d_study({"task": [5]}, n_runs=2)  # 5 tasks in each of the 4 clusters: 20 in all
    assert d.e_rho2.dims == ("n_task", "n_runs")
    assert float(d.sigma2_delta.squeeze()) == pytest.approx(
        _brennan(s, 4, 20, 2)["sigma2_delta"], rel=1e-12
    )


def test_sizes_asked_are_checked(nested):
    vc, _ = nested
    with pytest.raises(ValueError, match=r"`n_tasks` must be positive integers; got \[2.5\]"):
        vc.d_study(n_tasks=2.5)
    with pytest.raises(
        ValueError,
        match=r"`n_tasks` is the total number of tasks and must be at least the number of "
        r"clusters .*got \(n_tasks, n_clusters\) = \(3, 4\)",
    ):
        vc.d_study(n_tasks=[3, 12])
    with pytest.raises(ValueError, match=r"`n_clusters` must be positive integers; got \[0.0\]"):
        vc.d_study(n_clusters=0)
    with pytest.raises(ValueError, match=r"give the facet 'task' either in `sizes` or as `n_tasks`"):
        vc.d_study({"task": 3}, n_tasks=12)
    rng = np.random.default_rng(0)
    y = rng.normal(size=(3, 1, 1)) + rng.normal(size=(1, 5, 1)) + rng.normal(size=(3, 5, 2))
    flat = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    with pytest.raises(ValueError, match=r"`n_clusters`: the tasks of the design .* are not nested"):
        flat.d_study(n_clusters=3)


def test_metr_default_d_study_is_the_observed_design(metr_eval):
    # METR is unbalanced: 2.31 tasks per family and 9.16 runs per cell on average. The
    # default D-study (nothing asked) is the design as observed, its sizes the observed means.
    vc = variance_components(metr_eval)
    score = metr_eval["score"]
    seen = score.notnull()
    cells = seen.any("run")
    tasks = cells.any("agent")
    n_total = int(tasks.sum())
    n_c = len(set(metr_eval["cluster"].values[tasks.values]))
    r = int(seen.sum()) / int(cells.sum())
    assert (n_total, n_c) == (83, 36) and r == pytest.approx(9.1604, abs=1e-4)
    s = dict(zip(vc.component_names, vc.estimate.values, strict=True))
    d = vc.d_study()
    assert d.sizes == {"n_tasks": 1, "n_runs": 1}
    assert d.n_tasks.item() == 83 and d.n_runs.item() == pytest.approx(r, rel=1e-12)
    for k, v in _brennan(s, n_c, n_total, r).items():
        assert d[k].item() == pytest.approx(v, rel=1e-10), k
    assert "not asked, so the G-study's own size" in d.attrs["as_observed"]
    # runs asked, tasks as observed
    d = vc.d_study(n_runs=[1, 4])
    for r_ in (1, 4):
        want = _brennan(s, n_c, n_total, r_)["e_rho2"]
        assert float(d.e_rho2.sel(n_runs=r_).squeeze()) == pytest.approx(want, rel=1e-10)
    assert d.attrs["as_observed"].startswith("n_tasks = 83:")


def test_swebench_n_tasks_500_is_the_benchmark_not_6000(shared_data):
    # SWE-bench Verified: 500 tasks in 12 repositories, one run per cell (the residual
    # holds agent x task): sigma2_delta = s(a:c) / 12 + s(res) / N
    from hierbench.data import load_swebench_bash_only

    vc = variance_components(load_swebench_bash_only(shared_data))
    s = dict(zip(vc.component_names, vc.estimate.values, strict=True))
    d = vc.d_study(n_tasks=[42, 500], n_runs=1)
    for n_total in (42, 500):
        want = s["agent:cluster"] / 12 + s["residual"] / n_total
        assert float(d.sigma2_delta.sel(n_tasks=n_total, n_runs=1)) == pytest.approx(want, rel=1e-12)
    assert float(d.sigma2_delta.sel(n_tasks=500, n_runs=1)) == pytest.approx(2.98e-4, abs=5e-6)
    # the G-study itself is the 500-task row
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert float(d.e_rho2.sel(n_tasks=500, n_runs=1)) == pytest.approx(vc.e_rho2, rel=1e-12)
