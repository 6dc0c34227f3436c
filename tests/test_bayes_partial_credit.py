"""Partial credit never becomes success counts: every Bayesian count model refuses it, by name.

Before this rule, four runs scoring 0.5 entered the binomial likelihood as "2 of 4
succeeded" (their sum), while ``hierbench validate`` called the scores continuous and
every frequentist count path refused them (issue 24, item 10).
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from hierbench._base import PartialCreditError
from hierbench.bayes import build_beta_binomial
from hierbench.bayes import build_crossed
from hierbench.bayes import build_irt_1pl
from hierbench.bayes import build_irt_2pl
from hierbench.cli import main
from hierbench.data import to_counts

BUILDERS = {
    "build_crossed": build_crossed,
    "build_beta_binomial": build_beta_binomial,
    "build_irt_2pl": build_irt_2pl,
    "build_irt_1pl": build_irt_1pl,
}


def _eval(partial: bool = True) -> xr.Dataset:
    """3 agents x 4 tasks x 4 binary runs; agent 'b' on task 't2' scored 0.5 four times."""
    rng = np.random.default_rng(0)
    score = (rng.random((3, 4, 4)) < 0.5).astype(float)
    if partial:
        score[1, 2, :] = 0.5  # sums to 2.0: a whole number, yet not "2 of 4 succeeded"
    return xr.Dataset(
        {"score": (("agent", "task", "run"), score)},
        coords={"agent": ["a", "b", "c"], "task": ["t0", "t1", "t2", "t3"], "run": np.arange(4)},
    )


@pytest.mark.parametrize("name", list(BUILDERS))
def test_every_count_model_refuses_partial_credit_naming_the_cells(name):
    with pytest.raises(PartialCreditError) as err:
        BUILDERS[name](_eval())
    msg = str(err.value)
    # names the model, the cells (agent, task, run, score) and what to do instead
    assert name in msg
    assert "4 scores are partial credit" in msg
    assert "('b', 't2', '0', 0.5)" in msg
    assert "Binarise" in msg and "continuous scores" in msg and "[0, 1]" in msg


@pytest.mark.parametrize("name", list(BUILDERS))
def test_counts_made_from_partial_credit_are_refused(name):
    # to_counts keeps partial credit as recorded (n_success 2.0 here) and says so in attrs
    counts = to_counts(_eval())
    assert float(counts.n_success.sel(agent="b", task="t2")) == 2.0 and counts.attrs["binary"] == 0
    with pytest.raises(PartialCreditError, match=r"made from partial-credit scores"):
        BUILDERS[name](counts)


def test_fractional_success_counts_are_partial_credit_named_by_cell():
    counts = to_counts(_eval(partial=False))
    counts["n_success"] = counts["n_success"].astype(float)
    counts["n_success"].loc[{"agent": "c", "task": "t1"}] = 1.5
    with pytest.raises(
        PartialCreditError,
        match=r"1 cells have fractional n_success \(partial credit\), e\.g\. \(agent, task, n_success\) "
        r"\[\('c', 't1', 1\.5\)\]\. Binarise the scores with a threshold",
    ):
        build_crossed(counts)


def test_binarised_explicitly_the_counts_follow_the_threshold():
    # the remedy the message gives: a threshold chosen by the user, then binary counts
    ds = _eval()
    binary = ds.assign(score=(ds.score >= 0.5).astype(float).where(ds.score.notnull()))
    model = build_crossed(binary)
    want = (ds.score.values >= 0.5).sum(axis=2)  # independent of the builder: numpy on the scores
    np.testing.assert_array_equal(model["n_success"].get_value(), want)


def test_cli_fit_refuses_partial_credit(tmp_path, capsys):
    ds = _eval()
    df = ds.score.to_dataframe().reset_index()
    path = tmp_path / "runs.csv"
    df.to_csv(path, index=False)
    code = main(["fit", str(path), "-o", str(tmp_path / "fit.nc")])
    err = capsys.readouterr().err
    assert code == 2
    assert "partial credit" in err and "'b', 't2'" in err
    assert not (tmp_path / "fit.nc").exists()


def test_binary_counts_datasets_still_accepted():
    # a counts dataset of whole successes (e.g. the rats data) is not partial credit
    counts = xr.Dataset(
        {"n_runs": (("agent", "task"), [[5, 3]]), "n_success": (("agent", "task"), [[2, 3]])},
        coords={"agent": ["x"], "task": ["p", "q"]},
    )
    model = build_beta_binomial(counts, pooling="none")
    assert model["cell_n_success"].get_value().tolist() == [2, 3]
    # pandas round trip of the same counts (floats) is still whole numbers
    df = counts.to_dataframe().astype(float)
    again = xr.Dataset.from_dataframe(df)
    assert build_beta_binomial(again, pooling="none")["cell_n_success"].get_value().tolist() == [2, 3]


def test_message_is_pinned_for_the_eval_dataset_path():
    with pytest.raises(PartialCreditError) as err:
        build_beta_binomial(_eval())
    assert str(err.value).startswith(
        "`data`: build_beta_binomial (a binomial likelihood on success counts; for scores in [0, 1] "
        "use the [0, 1]-score model, hierbench.bayes.build_mixed(data), whose likelihood has atoms at 0 and 1 and "
        "the crossed model's terms) needs binary scores (every score 0 or 1)"
    )

