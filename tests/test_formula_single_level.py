"""A fixed factor with a single level is refused by name, in both halves (audit L, finding 6).

It crashed inside the package: ``zip()`` in the ordinal path, an xarray coordinate-size error in the
binomial ML fit, and ``model_design`` returned three names for two columns. Independent check: the
factor's levels are counted by pandas from the raw table (one), and the same formula without the
factor builds.
"""

from __future__ import annotations

import pandas as pd
import pytest

from hierbench.data import FormulaError
from hierbench.data import from_records
from hierbench.data import model_design
from hierbench.freq import fit_crossed_ml


@pytest.fixture
def wine_one_lab(shared_data):
    df = pd.read_csv(shared_data / "ordinal" / "wine.csv").assign(lab="only")
    assert df["lab"].nunique() == 1
    return from_records(df, agent="judge", task="bottle", score="rating", task_coords=["temp", "contact", "lab"],
                        score_levels=[1, 2, 3, 4, 5])  # fmt: skip


@pytest.mark.parametrize("formula", ["score ~ temp + contact + lab + (1|agent)", "score ~ temp + temp:lab + (1|agent)"])
def test_a_single_level_factor_is_refused_by_name(wine_one_lab, formula):
    said = r"factor 'lab' has a single level in the data, 'only'.*Drop"
    with pytest.raises(FormulaError, match=said):
        model_design(formula, wine_one_lab)
    with pytest.raises(FormulaError, match=said):
        fit_crossed_ml(wine_one_lab, formula, family="ordinal", intervals="wald")
    binary = wine_one_lab.assign(score=(wine_one_lab["score"] > 0.5) * 1.0).drop_attrs()
    with pytest.raises(FormulaError, match=said):
        fit_crossed_ml(binary, formula, intervals="wald")
    d = model_design(formula.replace(" + lab", "").replace(" + temp:lab", ""), wine_one_lab)
    assert d.X.shape[1] == len(d.coef)


def test_the_bayesian_builder_refuses_it_too(wine_one_lab):
    bayes = pytest.importorskip("hierbench.bayes")
    with pytest.raises(FormulaError, match=r"the fixed term 'lab' builds no column .*Drop 'lab'"):
        bayes.build_mixed(wine_one_lab, "score ~ temp + contact + lab + (1|agent)")
