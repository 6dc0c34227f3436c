"""What an average marginal effect's interval says it was made from names the fit's own parameters.

A binomial or fractional fit has no thresholds; its interval's detail used to say "delta method on
(beta, log sd, thresholds)" for every family (notebook 08's tables quoted it). The parameters are
the family's: thresholds for an ordinal fit only.
"""

import numpy as np
import pandas as pd
import xarray as xr

from hierbench.data import from_records
from hierbench.freq import average_marginal_effects
from hierbench.freq import fit_crossed_ml


def _log(seed: int = 0) -> xr.Dataset:
    g = np.random.default_rng(seed)
    logit = np.where(np.arange(4) < 2, -0.6, 0.6)[:, None, None] + g.normal(0, 1.0, 30)[None, :, None]
    y = (g.random((4, 30, 2)) < 1 / (1 + np.exp(-logit))) * 1.0
    return xr.Dataset({"score": (("agent", "task", "run"), y)},
                      coords={"agent": list("abcd"), "scaffold": ("agent", ["s1", "s1", "s2", "s2"])})  # fmt: skip


def test_binomial_and_fractional_details_name_no_thresholds():
    for family, data in (("binomial", _log()), ("fractional", _log().assign(score=lambda d: d.score * 0.8))):
        fit = fit_crossed_ml(data, "score ~ scaffold + (1|task)", family=family, intervals="wald")
        detail = average_marginal_effects(fit, "scaffold", method="ml").ci.attrs["ci_detail"]
        assert "delta method on (beta, log sd) at the ML fit" in detail and "threshold" not in detail, (family, detail)


def test_an_ordinal_detail_names_its_thresholds(shared_data):
    df = pd.read_csv(shared_data / "ordinal" / "wine.csv")
    df["grade"] = (df["rating"] - 1) / 4.0
    ds = from_records(df, agent="judge", task="bottle", score="grade", extra={"rating": "rating"},
                      task_coords=["temp", "contact"])  # fmt: skip
    fit = fit_crossed_ml(ds, "rating ~ temp + contact + (1|agent)", family="ordinal", intervals="wald")
    detail = average_marginal_effects(fit, "temp", method="ml").ci.attrs["ci_detail"]
    assert "delta method on (beta, log sd, thresholds)" in detail, detail
