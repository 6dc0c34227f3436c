"""side_by_side recognises the Bradley-Terry abilities and the IRT's mean_task (audit N, findings 5 and 6).

The posterior variables carry the attrs their builders give them (taken from the builders here); the draws
are the maximum-likelihood estimates plus small seeded noise, so the two halves agree by construction and
only the labels decide whether ``side_by_side`` pairs them. An Elo point is ``ln 10 / 400`` logits.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from hierbench.bayes import build_bradley_terry
from hierbench.bayes import build_irt_2pl
from hierbench.compare import MismatchedEstimatesError
from hierbench.compare import side_by_side
from hierbench.data import read_battles
from hierbench.freq import bootstrap_ci
from hierbench.freq import fit_bradley_terry_ml
from hierbench.metrics import posterior_summary


def _battles() -> xr.Dataset:
    """Three agents on 4 prompts: c beats b beats a, 3:1 each way round, one tie per pair and prompt."""
    rows = []
    for q in range(4):
        for x, y in (("c", "b"), ("b", "a"), ("c", "a")):
            rows += [(x, y, "left", q)] * 3 + [(x, y, "right", q)] + [(y, x, "tie", q)]
    return read_battles(pd.DataFrame(rows, columns=["left", "right", "winner", "prompt"]), task="prompt")


def _draws(name: str, values: xr.DataArray, attrs: dict, spread: float) -> xr.DataArray:
    noise = spread * np.random.default_rng(0).standard_normal((2, 300, values.size))
    return xr.DataArray(values.values[None, None] + noise, dims=("chain", "draw", "agent"),
                        coords={"agent": values.agent.values}, name=name, attrs=dict(attrs))  # fmt: skip


@pytest.fixture(scope="module")
def bt():
    pairs = _battles()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a small log
        elo = fit_bradley_terry_ml(pairs, n_resamples=40, rng=1)
        logit = fit_bradley_terry_ml(pairs, n_resamples=40, rng=1, scale="logit")
        attrs = build_bradley_terry(pairs).hierbench["var_attrs"]
    return elo, logit, attrs


def test_both_bradley_terry_halves_pair_on_either_scale(bt):
    elo, logit, attrs = bt
    assert np.allclose((elo.estimate - 1000) * np.log(10) / 400, logit.estimate)  # the two ML scales
    for ml, var, spread in ((elo, "elo", 5.0), (logit, "ability", 0.03)):
        bayes = posterior_summary(_draws(var, ml.estimate, attrs[var], spread))
        table = side_by_side({"ML": ml, "Bayes": bayes})
        assert set(table["quantity"].values.tolist()) == {"Bradley-Terry ability"}
        assert len(set(table["scale"].values.tolist())) == 1
        assert np.allclose(table["estimate"].sel(estimator="ML"), table["estimate"].sel(estimator="Bayes"), atol=3 * spread)


def test_a_bradley_terry_scale_clash_names_the_rescaling_that_fits(bt):
    elo, logit, attrs = bt
    bayes_logit = posterior_summary(_draws("ability", logit.estimate, attrs["ability"], 0.03))
    with pytest.raises(MismatchedEstimatesError, match="different scales") as refused:
        side_by_side({"ML": elo, "Bayes": bayes_logit})
    assert "fit_bradley_terry_ml(..., scale='logit') beside the posterior `ability`" in str(refused.value)
    assert f"{400 / np.log(10):.1f} Elo points" in str(refused.value)


def test_points_beside_a_zero_one_score_is_refused_with_the_factor_of_100_and_the_rescaled_pair_is_accepted():
    rng = np.random.default_rng(2)
    ds = xr.Dataset({"score": (("agent", "task", "run"), rng.random((3, 8, 2)).round(2))},
                    coords={"agent": list("abc"), "task": [f"t{i}" for i in range(8)]})  # fmt: skip
    boot = bootstrap_ci(ds, scheme="runs", n_resamples=99, rng=0)
    points = xr.Dataset({"estimate": 100 * boot.estimate, "ci": (100 * boot.ci).assign_attrs(boot.ci.attrs)})
    points["estimate"].attrs = {"scale": "points of mean score", "quantity": "mean score", "tasks": "observed"}
    with pytest.raises(MismatchedEstimatesError, match=r"are 100 x a probability or a \[0, 1\] score: divide"):
        side_by_side({"boot": boot, "points": points})
    back = xr.Dataset({"estimate": points.estimate / 100, "ci": (points.ci / 100).assign_attrs(points.ci.attrs)})
    back["estimate"].attrs = {**points.estimate.attrs, "scale": "score"}
    table = side_by_side({"boot": boot, "points / 100": back})
    assert np.allclose(table["estimate"].sel(estimator="boot"), table["estimate"].sel(estimator="points / 100"))


def test_the_irt_mean_task_is_read_as_a_mean_over_these_tasks():
    """Beside a task bootstrap it is refused with the observed-vs-population reason; beside a runs bootstrap paired."""
    rng = np.random.default_rng(4)
    ds = xr.Dataset({"score": (("agent", "task", "run"), (rng.random((3, 10, 2)) < 0.5) * 1.0)},
                    coords={"agent": list("abc"), "task": [f"t{i}" for i in range(10)]})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        attrs = build_irt_2pl(ds).hierbench["var_attrs"]["mean_task"]
    boot, runs = (bootstrap_ci(ds, scheme=s, n_resamples=99, rng=0) for s in ("tasks", "runs"))
    irt = posterior_summary(_draws("mean_task", runs.estimate, attrs, 0.01))
    assert (irt.estimate.attrs["quantity"], irt.estimate.attrs["tasks"]) == ("mean score", "observed")
    with pytest.raises(MismatchedEstimatesError, match=r"(?s)tasks='observed'.*tasks='population'.*scheme='runs'") as e:
        side_by_side({"bootstrap": boot, "IRT": irt})
    assert "mean_new_task" not in str(e.value)  # the beta-binomial's advice is not the IRT fit's
    assert side_by_side({"bootstrap": runs, "IRT": irt}).sizes["estimator"] == 2
