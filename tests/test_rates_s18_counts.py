"""wilson_interval / wald_interval / exact_interval refuse a non-finite `n`, naming it (audit T finding 8)."""

from __future__ import annotations

import numpy as np
import pytest

from hierbench.freq import exact_interval
from hierbench.freq import proportion_interval
from hierbench.freq import wald_interval
from hierbench.freq import wilson_interval


@pytest.mark.parametrize("fn", [wilson_interval, wald_interval])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_n_is_refused_with_its_value(fn, bad):
    with pytest.raises(ValueError, match=rf"`n` must be a finite non-negative number; 1 values are not, e\.g\. \[{bad}\]"):
        fn([2, 3], [10, bad])


def test_exact_refuses_an_infinite_n_too():
    # inf == round(inf): the integer test alone let it through, to a [0, 0] interval
    with pytest.raises(ValueError, match=r"`n` must be a finite non-negative integer; .*\[inf\]"):
        exact_interval(2, np.inf)


def test_proportion_interval_refuses_it_and_finite_counts_still_match_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    with pytest.raises(ValueError, match=r"`n` must be a finite non-negative number; .*\[nan\]"):
        proportion_interval(2, np.nan)
    lo, hi = proportion_confint(7, 20, method="wilson")
    np.testing.assert_allclose(wilson_interval(7, 20).values, [lo, hi], rtol=1e-12)
