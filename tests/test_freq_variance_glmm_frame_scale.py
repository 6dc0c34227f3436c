"""The GLMM tables say their scale on every row, so a printed, concatenated or saved table keeps it.

``DataFrame.attrs`` is dropped by ``pd.concat`` with a frame of other attrs and by a CSV; the
``scale`` column is not. The one number checked: ``agent_variance``'s random term is the
fit's own sd of that term squared (its definition, read from the fit's table).
"""

import io
import warnings

import pandas as pd
import pytest

from hierbench.freq import agent_variance
from hierbench.freq import fit_crossed_ml
from hierbench.testing import simulate_eval


@pytest.fixture(scope="module")
def small():
    data, _ = simulate_eval(n_agents=4, n_tasks=20, n_runs=2, rng=0)
    return data


def test_crossed_fit_frame_says_logit_on_every_row_after_concat_and_csv(small):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = fit_crossed_ml(small, intervals="wald").to_frame()
    assert (df["scale"] == "logit").all()
    assert set(df.index.get_level_values("part")) == {"ability", "sd"}
    other = pd.DataFrame({"estimate": [0.5], "scale": ["probability"]})  # attrs differ: concat drops them
    both = pd.concat([df.reset_index(), other])
    assert both.attrs == {} and both["scale"].tolist() == ["logit"] * len(df) + ["probability"]
    back = pd.read_csv(io.StringIO(df.to_csv()))
    assert (back["scale"] == "logit").all()


def test_formula_fit_and_agent_variance_frames_say_their_scale(small):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fit_crossed_ml(small, "score ~ 1 + (1|agent) + (1|task)", intervals="wald")
        av = agent_variance(fit).to_frame()
    frame = fit.to_frame()
    assert (frame["scale"] == "logit").all()
    assert (av["scale"] == "logit (variance among agents)").all()
    sd_agent = float(frame.loc[("sd", "1|agent"), "estimate"])
    assert float(av.loc["1|agent", "estimate"]) == pytest.approx(sd_agent**2, rel=1e-12)
