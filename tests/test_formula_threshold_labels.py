"""``threshold`` of an ordinal fit given as a grade, its label or the score the dataset holds (audit L, finding 4).

Independent reference: with no covariate and no random term the cumulative-logit MLE reproduces the
empirical cumulative shares, so the share graded at least a grade is the share of such answers
counted by pandas from the raw records.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierbench._base import HierbenchError
from hierbench.data import from_records
from hierbench.data import model_design
from hierbench.freq import average_marginal_effects
from hierbench.freq import fit_crossed_ml
from hierbench.freq import mean_response


def _answers() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    rows = [(f"a{i}", f"t{j}", r) for i in range(4) for j in range(10) for r in range(2)]
    df = pd.DataFrame(rows, columns=["agent", "task", "run"])
    df["resp"] = rng.choice(["no", "perhaps", "yes"], size=len(df), p=[0.5, 0.3, 0.2])
    df["hard"] = np.where(df["task"].isin(["t0", "t1", "t2", "t3", "t4"]), "hard", "easy")
    return df


def test_a_label_or_the_datasets_score_names_the_grade():
    """VerbAgg-like resp no / perhaps / yes read with score_levels (the dataset holds 0, 0.5, 1; the fit's
    places are 0, 1, 2). "yes" and the place 2 give the pandas share of yes answers, "perhaps" and its score
    0.5 the share of perhaps-or-yes, and the scale names the label; 1 (the place of perhaps and the score
    of yes) is refused as naming two grades, and so are the lowest grade, a value no grade holds, an
    unknown label and a bool (audit: only the places 1.0 and 2.0 were accepted, named ">= 1", ">= 2").
    """
    df = _answers()
    ds = from_records(df, agent="agent", task="task", run="run", score="resp", score_levels=["no", "perhaps", "yes"])
    assert sorted(np.unique(ds["score"].values[np.isfinite(ds["score"].values)]).tolist()) == [0.0, 0.5, 1.0]
    fit = fit_crossed_ml(ds, "score ~ 1", family="ordinal", intervals="wald")
    want = {"yes": 100 * (df["resp"] == "yes").mean(), "perhaps": 100 * (df["resp"] != "no").mean()}
    for thr, grade in (("yes", "yes"), (2.0, "yes"), ("perhaps", "perhaps"), (0.5, "perhaps")):
        res = mean_response(fit, threshold=thr)
        np.testing.assert_allclose(res.estimate.values, want[grade], atol=1e-4)
        assert res.scale == f"points of the share graded >= {grade}"
    with pytest.raises(HierbenchError, match=r"1\.0 names two grades .*perhaps \(as a grade\) or yes \(as the score"):
        mean_response(fit, threshold=1.0)
    for bad, why in ((0.7, "above the lowest"), ("no", "the lowest grade"), ("maybe", "no grade label"),
                     (0.0, "the lowest grade"), (True, "a grade, a grade's label")):  # fmt: skip
        with pytest.raises(HierbenchError, match=why):
            mean_response(fit, threshold=bad)


def test_numeric_grades_take_the_grade_or_its_score_and_effects_name_the_label():
    """Grades 1, 3, 5 read with score_levels (the dataset holds 0, 0.5, 1): 3 and its score 0.5 are one
    grade; 1 (grade 1, the lowest, and the score of grade 5) is refused as two readings; an effect's
    scale names the label it was given, and "yes" gives the same effects as its place 2.
    """
    df = _answers()
    df["grade"] = df["resp"].map({"no": 1, "perhaps": 3, "yes": 5}).astype(float)
    ds = from_records(df, agent="agent", task="task", run="run", score="grade", score_levels=[1, 3, 5])
    d = model_design("score ~ 1", ds, family="ordinal")
    assert d.scored_grades and d.threshold_grade(5) == 5.0 and d.threshold_grade(0.5) == 3.0 == d.threshold_grade(3)
    with pytest.raises(HierbenchError, match=r"1 \(as a grade\) or 5 \(as the score the data hold for it, 1\); give the grade"):
        d.threshold_grade(1.0)
    with pytest.raises(HierbenchError, match="above the lowest"):
        d.threshold_grade(2)
    words = from_records(df, agent="agent", task="task", run="run", score="resp", score_levels=["no", "perhaps", "yes"],
                         task_coords=["hard"])  # fmt: skip
    fit = fit_crossed_ml(words, "score ~ hard", family="ordinal", intervals="wald")
    ame = average_marginal_effects(fit, "hard", threshold="yes", method="ml")
    same = average_marginal_effects(fit, "hard", threshold=2, method="ml")
    assert ame.scale == "points of the share graded >= yes" == same.scale
    np.testing.assert_allclose(ame.estimate.values, same.estimate.values)


def test_bayes_pass_k_takes_a_label_and_names_it():
    """mixed_pass_hat_k with threshold "yes" on a fit of no / perhaps / yes: with every effect 0 and sd 0,
    P(yes) = expit(-theta_2) by the cumulative logit (scipy), and pass^2 its square; "yes" and its place 2
    agree, and 1 (the place of perhaps, the score of yes) is refused; the label once crashed a :g format.
    """
    import xarray as xr
    from scipy.special import expit

    from hierbench.metrics import mixed_pass_hat_k

    ds = from_records(_answers(), agent="agent", task="task", run="run", score="resp",
                      score_levels=["no", "perhaps", "yes"])  # fmt: skip
    d = model_design("score ~ agent + (1|task)", ds, family="ordinal")
    th = np.array([-0.5, 1.0])
    post = xr.Dataset(
        {"beta": (("chain", "draw", "coef"), np.zeros((1, 2, len(d.coef)))),
         "sd": (("chain", "draw", "component"), np.zeros((1, 2, 1))),
         "thresholds": (("chain", "draw", "threshold"), np.tile(th, (1, 2, 1)))},
        coords={"coef": list(d.coef), "component": ["1|task"]},
    )
    fit = xr.DataTree.from_dict({"posterior": post})
    res = mixed_pass_hat_k(fit, d, k=[1, 2], threshold="yes")
    np.testing.assert_allclose(res.estimate.sel(agent="a0").values, [expit(-1.0), expit(-1.0) ** 2], rtol=1e-9)
    assert res.attrs["over"] == "attempts, each an answer graded >= yes"
    np.testing.assert_allclose(mixed_pass_hat_k(fit, d, k=[1, 2], threshold=2.0).estimate.values, res.estimate.values)
    with pytest.raises(HierbenchError, match="names two grades"):
        mixed_pass_hat_k(fit, d, k=[1], threshold=1.0)
