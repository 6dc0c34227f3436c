"""Component intervals: what they are called, and the flag on ones that cannot be read as they stand.

Brennan's synthetic p x i x o data (10 persons, 4 items, 2 occasions, scores 0-9): the
occasion component rests on 1 degree of freedom, so its Wald interval on log(variance)
runs from ~1e-17 to ~1e12, and is flagged for spanning 29 orders of magnitude. The observed
range [0, 9] is not a declared bound of the scale, so it bounds no component (audit H 4:
Dyestuff's correct REML interval was called impossible by that rule); 0/1 scores are
flagged above 1/4 in test_freq_gtheory_flag_scale.py.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from hierbench.freq import variance_components


@pytest.fixture(scope="module")
def brennan(shared_data):
    df = pd.read_csv(shared_data / "gtheory" / "brennan2001_synthetic3_pxixo.csv")
    # the Wald interval on log(variance), which ci="auto" gave balanced data before audit G 2
    # (the default is now the profile: occasion [0, 9.98], see test_freq_variance_balanced_profile.py)
    return df, variance_components(df, design="person*item*occasion", ci="wald")


def _occasion_by_hand(df: pd.DataFrame) -> tuple[float, float]:
    """sigma2(o) and its balanced-ANOVA standard error, from the mean squares (Brennan 2001)."""
    y = df.set_index(["person", "item", "occasion"])["score"].to_xarray().values
    n_p, n_i, n_o = y.shape
    m = y.mean()
    mp, mi, mo = y.mean((1, 2)), y.mean((0, 2)), y.mean((0, 1))
    mpo, mio, mpi = y.mean(1), y.mean(0), y.mean(2)
    ms_o = n_p * n_i * ((mo - m) ** 2).sum() / (n_o - 1)
    ms_po = n_i * ((mpo - mp[:, None] - mo + m) ** 2).sum() / ((n_p - 1) * (n_o - 1))
    ms_io = n_p * ((mio - mi[:, None] - mo + m) ** 2).sum() / ((n_i - 1) * (n_o - 1))
    res = (
        y - mpo[:, None, :] - mio[None] - mpi[:, :, None]
        + mp[:, None, None] + mi[None, :, None] + mo - m
    )
    ms_pio = (res**2).sum() / ((n_p - 1) * (n_i - 1) * (n_o - 1))
    est = (ms_o - ms_po - ms_io + ms_pio) / (n_p * n_i)
    dfs = (n_o - 1, (n_p - 1) * (n_o - 1), (n_i - 1) * (n_o - 1), (n_p - 1) * (n_i - 1) * (n_o - 1))
    var = 2 / (n_p * n_i) ** 2 * sum(ms**2 / d for ms, d in zip((ms_o, ms_po, ms_io, ms_pio), dfs, strict=True))
    return est, float(np.sqrt(var))


def test_wald_interval_is_on_the_log_scale_and_said_so(brennan):
    df, vc = brennan
    est, se = _occasion_by_hand(df)
    assert est == pytest.approx(0.0074, abs=5e-5)  # Brennan (2001) Synthetic No. 3 (PROVENANCE.md)
    z = stats.norm.ppf(0.975)
    lo, hi = vc.ci.sel(component="occasion").values
    # Wald on log(variance): est * exp(+-z se / est), lopsided on the variance scale
    assert lo == pytest.approx(est * np.exp(-z * se / est), rel=1e-9)
    assert hi == pytest.approx(est * np.exp(z * se / est), rel=1e-9)
    text = repr(vc)
    assert "95% Wald intervals on log(variance)" in text
    assert "normal interval" not in text


def test_absurd_interval_is_flagged_with_its_reason(brennan):
    df, vc = brennan
    bound = (df.score.max() - df.score.min()) ** 2 / 4
    assert bound == 20.25
    flags = vc.ci_flags.to_series()
    assert vc.ci.sel(component="occasion", ci_bound="upper") > bound
    why = flags["occasion"]
    assert "exceeds" not in why  # [0, 9] is the observed range, not a declared scale
    assert why.startswith("spans 29 orders of magnitude")
    assert "1 degree(s) of freedom ('occasion' has 2 levels)" in why
    # the others are within the bound and span under 3 orders of magnitude
    ci = vc.ci
    ok = [c for c in vc.component_names if c != "occasion"]
    for c in ok:
        lo, hi = ci.sel(component=c).values
        assert hi <= bound and hi / lo < 1e3
        assert flags[c] == ""
    assert "occasion: spans 29 orders" in vc.ci.attrs["ci_flags"]
    assert vc.to_frame().loc["occasion", "ci_flag"] == why
    lines = repr(vc).splitlines()
    assert lines[3].startswith("  occasion:") and lines[3].endswith("(!)")
    assert lines[-1].startswith("  (!) occasion: spans 29 orders")


def test_unflagged_result_has_no_flag_attr():
    rng = np.random.default_rng(1)
    y = rng.normal(size=(20, 1)) + rng.normal(size=(20, 30))
    df = pd.DataFrame({"p": np.repeat(np.arange(20), 30), "i": np.tile(np.arange(30), 20), "y": y.ravel()})
    vc = variance_components(df, design="p*i", var="y")
    assert "ci_flags" not in vc.ci.attrs and (vc.ci_flags == "").all()
    assert "(!)" not in repr(vc)


@pytest.mark.parametrize(("ci", "kind"), [("wald", "logit-normal"), ("profile", "profile")])
def test_coefficient_intervals_carry_level_and_kind(brennan, ci, kind):
    _, vc = brennan
    co = vc.coefficients(ci=ci, prob=0.8)
    assert co.attrs["ci_prob"] == 0.8 and co.attrs["ci_kind"] == kind
    assert co["ci"].attrs["ci_prob"] == 0.8 and co["ci"].attrs["ci_kind"] == kind
    assert co.attrs["sizes"] == "item = 4, occasion = 2"
