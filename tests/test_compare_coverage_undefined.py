"""coverage_study counts undefined (NaN) intervals apart from misses, and says so."""

import itertools
import warnings

import numpy as np
import pytest
import xarray as xr
from statsmodels.stats.proportion import proportion_confint

from hierbench._base import make_interval
from hierbench.compare import coverage_study


def _study(n_rep: int = 40):
    """Replication i is, by i % 4 (the same on both components unless said): covers, misses, undefined, covers.

    Component ``b`` is undefined in one more kind (i % 4 == 1, the miss). Exact counts, no
    randomness: over 40 replications ``a`` has 30 defined (20 cover) and 10 undefined, ``b`` 20
    defined (20 cover) and 20 undefined.
    """
    counter = itertools.count()
    comps = ["a", "b"]

    def simulate(rng):
        return next(counter), xr.DataArray([0.0, 0.0], dims="component", coords={"component": comps})

    def method(i, rng):
        kind = i % 4
        est = np.array([0.0, 0.0]) if kind != 1 else np.array([5.0, 5.0])  # kind 1: [4, 6] misses 0
        lo, hi = est - 1.0, est + 1.0
        if kind == 2:
            lo[:], hi[:] = np.nan, np.nan
        if kind == 1:
            lo[1], hi[1] = np.nan, np.nan
        da = xr.DataArray(est, dims="component", coords={"component": comps})
        return xr.Dataset({"estimate": da, "ci": make_interval(lo, hi, prob=0.9, kind="normal", template=da)})

    return coverage_study(simulate, {"m": method}, n_rep=n_rep, rng=0)


def test_undefined_intervals_are_counted_apart_and_coverage_is_among_the_defined():
    res = _study()
    cov = res.coverage.sel(estimator="m")
    np.testing.assert_allclose(cov.sel(component="a"), 20 / 30)
    np.testing.assert_allclose(cov.sel(component="b"), 20 / 20)
    assert res.n_defined.sel(estimator="m").values.tolist() == [30, 20]
    assert res.n_undefined.sel(estimator="m").values.tolist() == [10, 20]
    np.testing.assert_allclose(res.share_defined.sel(estimator="m"), [30 / 40, 20 / 40])
    # the Monte Carlo interval is over the defined replications (statsmodels' Wilson interval)
    lo, hi = proportion_confint(20, 30, alpha=0.05, method="wilson")
    np.testing.assert_allclose(res.coverage_interval.sel(estimator="m", component="a"), [lo, hi], rtol=1e-10)
    # an undefined interval counted as a miss is coverage * share_defined: 20 of 40
    np.testing.assert_allclose((res.coverage * res.share_defined).sel(estimator="m", component="a"), 20 / 40)


def test_the_repr_and_the_frame_say_how_many_intervals_were_defined():
    res = _study()
    text = repr(res)
    assert "m, a: 0.6667 [" in text and "(of 30 defined; 10 undefined; nominal 90% normal intervals)" in text
    assert "(of 20 defined; 20 undefined; nominal 90% normal intervals)" in text
    assert "not as a miss" in text
    df = res.to_frame()
    assert df["n_defined"].tolist() == [30, 20] and df["n_undefined"].tolist() == [10, 20]
    np.testing.assert_allclose(df["share_defined"], [0.75, 0.5])


def test_a_method_that_never_gives_an_interval_has_no_coverage_and_says_so():
    def simulate(rng):
        return None, xr.DataArray(0.0)

    def never(data, rng):
        nan = xr.DataArray(np.nan)
        return xr.Dataset({"estimate": xr.DataArray(0.0), "ci": make_interval(nan, nan, prob=0.95, kind="normal")})

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning of an empty sample: the repr line says it
        res = coverage_study(simulate, {"never": never}, n_rep=5, rng=0)
    assert np.isnan(float(res.coverage.sel(estimator="never")))
    assert np.isnan(res.coverage_interval.sel(estimator="never").values).all()
    assert "never: nan [nan, nan]  (of 0 defined; 5 undefined; nominal 95% normal intervals)" in repr(res)


def test_a_truth_that_is_not_a_number_is_refused_not_counted_as_a_miss():
    """A NaN truth compared with any interval is False: it was counted as a defined interval's miss
    (coverage 0.5 here, where every interval defined covers 0.3). Now refused, naming the replication
    and the cell.
    """

    def simulate(rng):
        truth = xr.DataArray([0.3, np.nan], dims="agent", coords={"agent": ["a", "b"]})  # b has no truth
        return rng.normal(0.3, 1.0, (2, 25)), truth

    def z95(x, rng):
        m = xr.DataArray(x.mean(1), dims="agent", coords={"agent": ["a", "b"]})
        return xr.Dataset({"estimate": m, "ci": make_interval(m - 1.0, m + 1.0, prob=0.95, kind="normal")})

    with pytest.raises(ValueError, match=r"not a finite number in replication 0 \(1 of 2 cells, e\.g\. agent=b\)"):
        coverage_study(simulate, {"z": z95}, n_rep=3, rng=0)
