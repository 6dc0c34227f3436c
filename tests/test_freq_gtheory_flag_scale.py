"""G-study flags and warnings (audit H 4 and 10), and the one range rule of the power planners (audit H 9).

References: a closed-form REML profile of the balanced one-way model, lme4's Dyestuff2 fit
(sd_batch 0, lme4 reference_values.csv), a Bernoulli's largest variance 1/4, hand counts,
and statsmodels' TTestPower.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy import optimize
from scipy import stats

from hierbench.freq import NegativeVarianceComponentWarning
from hierbench.freq import minimum_detectable_effect
from hierbench.freq import paired_power
from hierbench.freq import sample_size_normal
from hierbench.freq import tasks_for_power
from hierbench.freq import variance_components


def _one_way_reml_profile(y: pd.Series, g: pd.Series) -> tuple[float, float]:
    """95% profile REML interval of the between-group variance, balanced one-way model, by hand."""
    grp = y.groupby(g)
    a, n = grp.ngroups, int(grp.size().iloc[0])
    ssb = n * ((grp.mean() - y.mean()) ** 2).sum()
    ssw = ((y - grp.transform("mean")) ** 2).sum()

    def dev(sb, se):
        lam = se + n * sb
        return (a - 1) * np.log(lam) + a * (n - 1) * np.log(se) + ssb / lam + ssw / se

    def prof(sb):
        return optimize.minimize_scalar(lambda ls: dev(sb, np.exp(ls)), bounds=(0, 15), method="bounded").fun

    sb_hat = (ssb / (a - 1) - ssw / (a * (n - 1))) / n
    top = dev(sb_hat, ssw / (a * (n - 1))) + stats.chi2.ppf(0.95, 1)
    return (optimize.brentq(lambda s: prof(s) - top, 1e-6, sb_hat),
            optimize.brentq(lambda s: prof(s) - top, sb_hat, 1e6))  # fmt: skip


def test_dyestuff_reml_interval_is_not_called_impossible(shared_data):
    d = pd.read_csv(shared_data / "lme4" / "dyestuff.csv")
    d["rep"] = d.groupby("Batch").cumcount()
    vc = variance_components(d, design="rep:Batch", var="Yield", method="reml")
    lo, hi = vc.ci.sel(component="Batch").values
    ref = _one_way_reml_profile(d["Yield"], d["Batch"])  # [245.1, 10214]
    assert (lo, hi) == pytest.approx(ref, rel=1e-4)
    # 10214 > (1635 - 1440)^2 / 4 = 9506, the observed range's bound: that flagged it "(!)"
    assert hi > (d.Yield.max() - d.Yield.min()) ** 2 / 4
    assert (vc.ci_flags == "").all() and "(!)" not in repr(vc)
    assert (vc.to_frame()["ci_flag"] == "").all()


def test_binary_scores_flag_an_upper_end_above_a_quarter():
    # 0/1 scores: no variance of a score on [0, 1] exceeds p(1 - p) <= 1/4
    rng = np.random.default_rng(0)
    sc = (rng.random((2, 3, 2)) < np.array([0.2, 0.8])[:, None, None]) * 1.0
    vc = variance_components(xr.Dataset({"score": (("agent", "task", "run"), sc)}))
    hi = vc.ci.sel(ci_bound="upper").to_series()
    over = hi[hi > 0.25]
    assert len(over) >= 1  # 2 agents, 3 tasks: the Wald intervals run far past 1/4
    flags = vc.ci_flags.to_series()
    for c in over.index:
        assert f"upper end {over[c]:.4g} exceeds 0.25 = (b - a)^2 / 4" in flags[c]
        assert "0/1 score (scale [a, b] = [0, 1])" in flags[c]
    for c in hi.index.difference(over.index):
        assert "exceeds" not in flags[c]


def test_reml_zero_component_warns_like_anova(shared_data):
    d = pd.read_csv(shared_data / "lme4" / "dyestuff2.csv")
    d["rep"] = d.groupby("Batch").cumcount()
    with pytest.warns(NegativeVarianceComponentWarning, match=r"REML estimates .* at the boundary 0: Batch \("):
        vc = variance_components(d, design="rep:Batch", var="Yield", method="reml")
    # lme4: sd_batch 0.000, sd_resid 3.716 (singular fit; lme4 reference_values.csv)
    assert float(vc.estimate.sel(component="Batch")) == pytest.approx(0.0, abs=1e-8)
    assert math.sqrt(float(vc.estimate.sel(component="residual"))) == pytest.approx(3.716, abs=5e-4)


def test_constant_scores_warn():
    with pytest.warns(NegativeVarianceComponentWarning, match="every score equals 1: every variance component is 0"):
        variance_components(xr.Dataset({"score": (("agent", "task", "run"), np.ones((4, 5, 3)))}))


def test_nan_scores_of_a_dataset_are_counted():
    # an eval dataset's NaN cell is a run not made (ragged runs pad with NaN, as METR's 72,828
    # cells do): counted in `note`, not warned; a table's NaN score is a missing score (warned,
    # test_freq_variance_inputs)
    import warnings

    rng = np.random.default_rng(7)
    sc = rng.normal(size=(4, 30, 3))
    sc[rng.random(sc.shape) < 0.1] = np.nan
    n_nan = int(np.isnan(sc).sum())  # counted by hand
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        vc = variance_components(xr.Dataset({"score": (("agent", "task", "run"), sc)}))
    assert not [w for w in seen if "NaN" in str(w.message)]  # (pure noise: REML zeros are warned apart)
    assert f"{n_nan} score cells hold no run (NaN" in vc.note
    assert vc.n_obs == sc.size - n_nan


def test_planners_accept_an_effect_on_a_wider_scale_given_its_sd():
    from statsmodels.stats.power import TTestPower

    tt = TTestPower()
    # a 1-5 rubric: 1.5 grades with a per-task difference sd of 2 grades (was refused: |effect| <= 1)
    assert tasks_for_power(1.5, sd_diff=2.0, power=0.8) == math.ceil(tt.solve_power(0.75, alpha=0.05, power=0.8))
    assert float(paired_power(1.5, 20, sd_diff=2.0)) == pytest.approx(tt.power(0.75, 20, 0.05), abs=1e-6)
    mde = minimum_detectable_effect(5, sd_diff=2.0, power=0.8)
    assert mde == pytest.approx(2.0 * tt.solve_power(nobs=5, alpha=0.05, power=0.8), rel=1e-6)
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert sample_size_normal(1.5, paired=True, sd_diff=2.0) == math.ceil((z * 2.0 / 1.5) ** 2)


def test_planners_share_one_bound_for_components_of_0_1_scores():
    rng = np.random.default_rng(1)
    sc = (rng.random((3, 30, 2)) < 0.5) * 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        vc = variance_components(xr.Dataset({"score": (("agent", "task", "run"), sc)}))
    msg = r"`effect` must satisfy \|effect\| <= 1: .*0/1.*got 1.5"
    for call in (lambda: tasks_for_power(1.5, components=vc),
                 lambda: paired_power(1.5, 20, components=vc),
                 lambda: sample_size_normal(1.5, paired=True, discordance=0.9)):  # fmt: skip
        with pytest.raises(ValueError, match=msg):
            call()
    # an answer past the scale is refused too: with 2 tasks no difference of 0/1 means suffices
    with pytest.raises(ValueError, match=r"no effect on a scale 1 wide .* by 2 tasks"):
        minimum_detectable_effect(2, components=vc)
    assert 0 < minimum_detectable_effect(30, components=vc) <= 1
