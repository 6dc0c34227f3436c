"""``MixedMLResult.to_frame()`` holds every estimate of the fit (audit L, finding 10): it held the fixed
effects only, leaving out the random terms' sds and the ordinal thresholds without a word.

Independent reference: R ``ordinal::clmm(rating ~ temp + contact + (1|judge))`` on the wine data (the
shared ``ordinal/reference_values.csv``), read from the frame's rows.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hierbench.data import from_records
from hierbench.freq import fit_crossed_ml


def test_the_frame_has_the_fixed_effects_sds_and_thresholds_with_their_own_intervals(shared_data):
    df = pd.read_csv(shared_data / "ordinal" / "wine.csv")
    ds = from_records(df, agent="judge", task="bottle", score="rating", task_coords=["temp", "contact"],
                      score_levels=[1, 2, 3, 4, 5])  # fmt: skip
    fit = fit_crossed_ml(ds, "score ~ temp + contact + (1|agent)", family="ordinal", intervals="wald")
    frame = fit.to_frame()
    assert frame.index.names == ["part", "term"]
    assert frame.index.tolist() == [("fixed", "temp[warm]"), ("fixed", "contact[yes]"), ("sd", "1|agent"),
                                    *(("threshold", t) for t in ("1|2", "2|3", "3|4", "4|5"))]  # fmt: skip
    ref = pd.read_csv(shared_data / "ordinal" / "reference_values.csv").set_index("quantity")["value"]
    want = {("fixed", "temp[warm]"): ref["beta temp=warm"], ("fixed", "contact[yes]"): ref["beta contact=yes"],
            ("sd", "1|agent"): np.sqrt(ref["variance judge"]),
            **{("threshold", t): ref[f"threshold {t}"] for t in ("1|2", "2|3", "3|4", "4|5")}}  # fmt: skip
    for key, value in want.items():
        assert abs(frame.loc[key, "estimate"] - value) < 2e-3, key
    np.testing.assert_allclose(frame.loc["sd", ["lower", "upper"]].to_numpy(), fit.sd_ci.values)
    np.testing.assert_allclose(frame.loc["threshold", ["lower", "upper"]].to_numpy(), fit.thresholds_ci.values)
    np.testing.assert_allclose(frame.loc["fixed", "standard_error"].to_numpy(), fit.standard_error.values)
    assert frame.loc[("sd", "1|agent"), "ci_detail"] == fit.sd_ci.attrs["ci_detail"]
    assert (frame["ci_prob"] == 0.95).all() and frame.attrs["family"] == "ordinal"
    assert abs(frame.attrs["deviance"] - fit.deviance) == 0
