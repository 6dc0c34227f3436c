"""G-theory design language: lme4's one-way and nested data, nested/crossed facets,
one agent, constant scores, D-studies and the cost-optimal allocation.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.freq import ConfoundedComponentWarning
from hierbench.freq import NegativeVarianceComponentWarning
from hierbench.freq import UndefinedCoefficientWarning
from hierbench.freq import variance_components
from hierbench.freq._variance._design_lang import DesignError
from hierbench.freq._variance._design_lang import parse_design
from hierbench.freq._variance._reml import anova_method1
from hierbench.freq._variance._reml import effect_codes


def _ref(shared_data, dataset):
    ref = pd.read_csv(shared_data / "lme4" / "reference_values.csv")
    row = ref[ref.dataset == dataset].iloc[0]
    keys = [k.strip() for k in row["quantity"].split("/")]
    vals = [float(v) for v in str(row["value"]).split("/")]
    return dict(zip(keys, vals, strict=True))


def _lme4(shared_data, name, group):
    df = pd.read_csv(shared_data / "lme4" / f"{name}.csv")
    return df.assign(rep=df.groupby(group).cumcount())


def test_parse_design_effects_follow_brennan():
    # Brennan (2001) p x (i:h): components p, h, ph, i:h, pi:h
    assert parse_design("p*(i:h)").names == ("p", "h", "p:h", "i:h", "residual")
    assert parse_design("run:(agent*task)").names == ("agent", "task", "agent:task", "residual")
    assert parse_design("sample:cask:batch").names == ("batch", "cask:batch", "residual")
    assert parse_design("rep:batch").names == ("batch", "residual")
    d = parse_design("run:(agent*(task:family))")
    assert d.names == (
        "agent",
        "family",
        "agent:family",
        "task:family",
        "agent:task:family",
        "residual",
    )
    # four crossed facets: 2^4 - 1 effects
    assert len(parse_design("a*b*c*d").effects) == 15


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", r"`design` must name at least one facet"),
        ("a*(b", r"unbalanced parentheses"),
        ("a*a", r"facet 'a' appears twice"),
        ("a+b", r"unexpected character '\+'"),
        ("a*b*c*d*e*f", r"names 6 facets; at most 5"),
        ("person x item", r"unexpected 'x' at token 1; the language crosses facets with `\*`.*write `\*` for x"),
    ],
)
def test_parse_design_errors(text, match):
    with pytest.raises(DesignError, match=match):
        parse_design(text)


def test_dyestuff_one_way_matches_lme4(shared_data):
    # lme4 Dyestuff, lmer(Yield ~ 1|Batch) REML: sd_batch 42.00, sd_resid 49.51, intercept 1528
    ref = _ref(shared_data, "Dyestuff")
    df = _lme4(shared_data, "dyestuff", "Batch")
    for method in ("auto", "reml"):
        vc = variance_components(df, design="rep:Batch", var="Yield", method=method)
        sd = np.sqrt(vc.estimate.values)
        assert list(vc.estimate.component.values) == ["Batch", "residual"]
        assert round(sd[0], 2) == ref["sd_batch"]
        assert round(sd[1], 2) == ref["sd_resid"]
    assert vc.fit_info["converged"]
    assert round(vc.fit_info["mu"]) == ref["intercept"]


def test_dyestuff2_boundary_matches_lme4(shared_data):
    # lme4 Dyestuff2 REML (singular): sd_batch 0.000, sd_resid 3.716
    ref = _ref(shared_data, "Dyestuff2")
    df = _lme4(shared_data, "dyestuff2", "Batch")
    with pytest.warns(NegativeVarianceComponentWarning, match=r"Batch=-1\.32"):
        an = variance_components(df, design="rep:Batch", var="Yield")
    assert an.method == "anova" and bool(an.truncated.sel(component="Batch"))
    vc = variance_components(df, design="rep:Batch", var="Yield", method="reml")
    sd = np.sqrt(vc.estimate.values)
    assert round(sd[0], 3) == ref["sd_batch"] == 0.0
    assert round(sd[1], 3) == ref["sd_resid"]
    # an estimate at 0 gets the interval [0, z * se]
    assert float(vc.ci.sel(component="Batch", ci_bound="lower")) == 0.0
    assert float(vc.ci.sel(component="Batch", ci_bound="upper")) > 0


def test_pastes_nested_matches_lme4(shared_data):
    # lme4 Pastes, lmer(strength ~ (1|batch) + (1|sample)), sample = cask within batch:
    # sd_sample 2.9041, sd_batch 1.2874, sd_resid 0.8234, intercept 60.05
    ref = _ref(shared_data, "Pastes")
    df = _lme4(shared_data, "pastes", "sample")
    for method in ("auto", "reml"):
        vc = variance_components(df, design="rep:cask:batch", var="strength", method=method)
        sd = dict(zip(vc.component_names, np.sqrt(vc.estimate.values), strict=True))
        assert round(sd["batch"], 4) == ref["sd_batch"]
        assert round(sd["cask:batch"], 4) == ref["sd_sample"]
        assert round(sd["residual"], 4) == ref["sd_resid"]
    assert vc.method == "reml"
    assert round(vc.fit_info["mu"], 2) == ref["intercept"]
    # cask labels a, b, c repeat in every batch: nesting, not crossing
    assert int(vc.anova.df.sel(source="cask:batch")) == 20


def test_cluster_coord_means_tasks_nested_in_clusters():
    rng = np.random.default_rng(3)
    M, T, R = 5, 12, 3
    y = rng.normal(size=(M, T, R))
    clusters = np.repeat(["c0", "c1", "c2", "c3"], 3)
    ds = xr.Dataset(
        {"score": (("agent", "task", "run"), y)},
        coords={"cluster": ("task", clusters), "task": [f"t{i}" for i in range(T)]},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NegativeVarianceComponentWarning)
        vc = variance_components(ds)
        same = variance_components(ds, design="run:(agent*(task:cluster))")
    assert vc.formula == "run:(agent*(task:cluster))"
    assert vc.method == "anova"
    np.testing.assert_allclose(vc.components_raw.values, same.components_raw.values)
    # the pooled sums of squares: family + task-in-family = task of the crossed analysis
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NegativeVarianceComponentWarning)
        flat = variance_components(ds, design="nested")
    ss = vc.anova.sum_sq
    assert float(ss.sel(source="cluster") + ss.sel(source="task:cluster")) == pytest.approx(
        float(flat.anova.sum_sq.sel(source="task"))
    )
    assert float(vc.anova.sum_sq.sum()) == pytest.approx(float(((y - y.mean()) ** 2).sum()))


def test_balanced_closed_form_equals_method_one():
    # two routes for balanced data (Brennan's closed form on the dense array, Henderson's
    # Method I on long codes) give the same ANOVA estimates for a 4-facet design
    rng = np.random.default_rng(7)
    d = parse_design("p*(i:h)*o")
    shape = {"p": 6, "h": 3, "i": 2, "o": 3}
    y = rng.normal(size=[shape[f] for f in d.facets])
    idx = np.indices(y.shape).reshape(len(d.facets), -1)
    codes = {f: idx[k] for k, f in enumerate(d.facets)}
    # nested labels restart in each parent: i labels 0..1 inside every h
    m1 = anova_method1(y.ravel(), effect_codes(codes, d), d)
    df = pd.DataFrame({f: idx[k] for k, f in enumerate(d.facets)}).assign(y=y.ravel())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NegativeVarianceComponentWarning)
        vc = variance_components(df, design="p*(i:h)*o", var="y")
    assert vc.method == "anova"
    np.testing.assert_allclose(vc.components_raw.values, m1["estimate"], rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(vc.anova.df.values, np.round(m1["df"]).astype(int))


def test_one_agent_tau_bench(shared_data):
    from hierbench.data import load_tau_bench_airline

    ds = load_tau_bench_airline(shared_data)
    vc = variance_components(ds)
    assert vc.measurement is None
    assert list(vc.component_names) == ["task", "residual"]
    assert "agent has one level" in vc.note
    # one-way ANOVA by hand: 50 tasks x 4 trials
    y = ds.score.isel(agent=0).values
    msb = 4 * y.mean(axis=1).var(ddof=1)
    msw = y.var(axis=1, ddof=1).mean()
    np.testing.assert_allclose(vc.estimate.values, [(msb - msw) / 4, msw], rtol=1e-12)
    with pytest.warns(UndefinedCoefficientWarning, match="no object of measurement"):
        assert np.isnan(vc.e_rho2)
    with pytest.warns(ConfoundedComponentWarning, match="paired-difference variance is NaN"):
        assert np.isnan(vc.var_paired_diff)
    with pytest.warns(UndefinedCoefficientWarning):
        d = vc.d_study({"task": [50, 200]})
    # the error variance of the agent's mean over 50 tasks x 4 runs: MSB / (50 * 4)
    assert float(d.sigma2_Delta.sel(n_task=50)) == pytest.approx(msb / 200, rel=1e-12)


def test_constant_scores_do_not_divide_by_zero():
    for arr in (np.ones((3, 5, 2)), np.zeros((1, 5, 2))):
        vc = variance_components(xr.DataArray(arr, dims=("agent", "task", "run")))
        assert np.all(vc.estimate.values == 0)
        with pytest.warns(UndefinedCoefficientWarning):
            assert np.isnan(vc.e_rho2)
    # unbalanced constant scores take the REML route
    arr = np.ones((3, 5, 3))
    arr[0, 0, 2] = np.nan
    vc = variance_components(xr.DataArray(arr, dims=("agent", "task", "run")))
    assert vc.method == "reml" and np.all(vc.estimate.values == 0)
    with pytest.warns(UndefinedCoefficientWarning, match="0/0"):
        assert np.isnan(vc.phi)


def test_d_study_follows_brennan_for_nested_tasks(shared_data):
    # p x (i:h): sigma2_delta = s_ph / n_h + s_pi:h / (n_h n_i); Delta adds s_h / n_h + s_i:h / (n_h n_i)
    rng = np.random.default_rng(5)
    y = rng.normal(size=(8, 4, 3, 2))  # agent, cluster, task-in-cluster, run
    df = pd.DataFrame(
        np.indices(y.shape).reshape(4, -1).T, columns=["agent", "cluster", "task", "run"]
    ).assign(y=y.ravel())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NegativeVarianceComponentWarning)
        vc = variance_components(df, design="run:(agent*(task:cluster))", var="y")
    s = dict(zip(vc.component_names, vc.estimate.values, strict=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedCoefficientWarning)
        d = vc.d_study({"cluster": [5, 10], "task": [2], "run": [1, 4]})
    nh, ni, nr = 10, 2, 4
    delta = (
        s["agent:cluster"] / nh
        + s["agent:task:cluster"] / (nh * ni)
        + s["residual"] / (nh * ni * nr)
    )
    Delta = delta + s["cluster"] / nh + s["task:cluster"] / (nh * ni)
    pt = d.sel(n_cluster=nh, n_task=ni, n_run=nr)
    assert float(pt.sigma2_delta) == pytest.approx(delta)
    assert float(pt.sigma2_Delta) == pytest.approx(Delta)
    assert float(pt.var_paired_diff) == pytest.approx(2 * delta)
    if s["agent"] > 0:
        assert float(pt.e_rho2) == pytest.approx(s["agent"] / (s["agent"] + delta))


def test_optimal_allocation_by_enumeration():
    rng = np.random.default_rng(2)
    y = (
        rng.normal(0, 0.4, (6, 1, 1))
        + rng.normal(0, 0.8, (1, 30, 1))
        + rng.normal(0, 0.5, (6, 30, 1))
        + rng.normal(0, 1.0, (6, 30, 4))
    )
    vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))
    s = dict(zip(vc.component_names, vc.estimate.values, strict=True))
    budget, c_task, c_run = 2000.0, 20.0, 1.0
    opt = vc.optimal_allocation(
        budget, {"task": c_task, "run": c_run}, max_sizes={"task": 200, "run": 30}
    )
    # brute force over the same grid, written out independently
    best = (np.inf, None)
    for nt in range(1, 201):
        for nr in range(1, 31):
            cost = c_task * nt + c_run * 6 * nt * nr
            if cost <= budget:
                v = 2 * (s["agent:task"] / nt + s["residual"] / (nt * nr))
                if v < best[0]:
                    best = (v, {"task": nt, "run": nr})
    assert opt.attrs["optimum"] == best[1]
    assert opt.attrs["optimum_value"] == pytest.approx(best[0])
    assert opt.attrs["optimum_cost"] <= budget
    with pytest.raises(ValueError, match=r"`budget` 1.0 buys no design"):
        vc.optimal_allocation(1.0, {"task": c_task, "run": c_run})
    with pytest.raises(ValueError, match=r"`cost`: 'agent' is not a facet of generalization"):
        vc.optimal_allocation(10.0, {"agent": 1.0})


def test_bad_design_arguments():
    da = xr.DataArray(np.zeros((3, 4, 2)), dims=("agent", "task", "run"))
    with pytest.raises(ValueError, match=r"facet 'family' must be a dimension of the scores"):
        variance_components(da, design="run:(agent*(task:family))")
    with pytest.raises(ValueError, match=r"`measurement` must be a facet of the design"):
        variance_components(da, design="run:(agent*task)", measurement="seed")
    with pytest.raises(ValueError, match=r"`method` must be one of \['auto', 'anova', 'reml'\]"):
        variance_components(da, method="ml")
    df = pd.DataFrame({"a": ["x", "y"], "score": [1.0, 2.0]})
    with pytest.raises(ValueError, match=r"missing \['b'\]"):
        variance_components(df, design="b:a")
    with pytest.raises(ValueError, match=r"must be a design description .* for a DataFrame"):
        variance_components(df)
