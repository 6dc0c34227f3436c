"""A report of battles: its data summary counts them, the run-log sections say they do not apply, and a
Bradley-Terry fit is refused beside battles it was not made from (audit N, finding 3).

The audit's report of LLMFAO (8,931 battles) printed raw exceptions in 7 sections, said "no data given"
for a fit whose constant data hold every battle, and accepted the fit beside the first 4,000 battles
only. The counts expected here are pandas' of the raw CSV (8,931 battles, 3,471 ties, 13 prompts,
124 workers); the fit is made by hand from pandas' counts per pair, as a Bradley-Terry fit records them
(constant data ``agent_a_idx``, ``agent_b_idx``, ``n_comparisons``, ``outcome_obs``).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from report_section import section_alone


@pytest.fixture(scope="module")
def llmfao(shared_data):
    from hierbench.data import read_battles

    df = pd.read_csv(shared_data / "evalica" / "llmfao_pairwise.csv")
    return df, read_battles(df, task="prompt", judge="worker")


def _pandas_pairs(df: pd.DataFrame) -> pd.DataFrame:
    """Wins of left, ties, wins of right per (left, right), by pandas alone."""
    won = pd.crosstab([df["left"], df["right"]], "n_" + df["winner"])
    return won.reindex(columns=["n_left", "n_tie", "n_right"], fill_value=0).reset_index()


def _bt_fit(df: pd.DataFrame, data_hash: str = "") -> xr.DataTree:
    """A Bradley-Terry fit's record of these battles (a random posterior; no sampler)."""
    pairs = _pandas_pairs(df)
    agents = sorted(set(df["left"]) | set(df["right"]))
    idx = {a: i for i, a in enumerate(agents)}
    outcome = pairs[["n_left", "n_tie", "n_right"]].to_numpy()
    const = xr.Dataset({
        "agent_a_idx": ("pair", pairs["left"].map(idx).to_numpy()),
        "agent_b_idx": ("pair", pairs["right"].map(idx).to_numpy()),
        "n_comparisons": ("pair", outcome.sum(1)),
        "outcome_obs": (("pair", "result"), outcome),
    }, coords={"result": ["win_a", "tie", "win_b"]})  # fmt: skip
    post = xr.Dataset({"ability": (("chain", "draw", "agent"), np.random.default_rng(0).normal(size=(2, 20, len(agents))))},
                      coords={"agent": agents})  # fmt: skip
    fit = xr.DataTree.from_dict({"posterior": post, "constant_data": const})
    fit.attrs = {"hierbench_model": "bradley_terry", "hierbench_data_hash": data_hash,
                 "hierbench_spec": json.dumps({"model": "bradley_terry", "options": {"ties": "davidson"}})}  # fmt: skip
    return fit


def _section(sid: str, fit, battles) -> dict:
    return section_alone(sid, fit=fit, battles=battles)


def test_data_summary_counts_the_battles_as_pandas_does(llmfao):
    df, battles = llmfao
    n_ties = int((df["winner"] == "tie").sum())
    assert (len(df), n_ties, df["prompt"].nunique(), df["worker"].nunique()) == (8931, 3471, 13, 124)
    for fit, battles_given in ((None, battles), (_bt_fit(df), None)):
        sec = _section("data-summary", fit, battles_given)
        assert f"{len(df):,} battles between 59 agents" in sec["text"]
        assert f"{n_ties:,} ties ({n_ties / len(df):.1%})" in sec["text"]
        appear = pd.concat([df["left"], df["right"]]).value_counts()
        table = sec["table"]
        assert table["battles"].to_dict() == appear.to_dict()
        wins = pd.concat([df.loc[df["winner"] == "left", "left"], df.loc[df["winner"] == "right", "right"]]).value_counts()
        assert table["wins"].to_dict() == wins.reindex(table.index, fill_value=0).to_dict()
        if battles_given is not None:
            assert "13 prompts" in sec["text"] and "124 judges" in sec["text"]
            left, right = int((df["winner"] == "left").sum()), int((df["winner"] == "right").sum())
            assert f"first position won {left:,}, the second {right:,}" in sec["text"]
        else:
            assert "from the fit's constant data" in sec["text"]


@pytest.mark.parametrize("sid", ["pass-k", "variance", "side-by-side"])
def test_run_log_sections_say_they_do_not_apply_to_battles(llmfao, sid):
    df, battles = llmfao
    for fit in (_bt_fit(df), None):
        sec = _section(sid, fit, battles if fit is None else None)
        assert "not to battles" in sec["note"] and "Error" not in sec["note"]


def test_a_bradley_terry_fit_is_refused_beside_other_battles_or_a_run_log(llmfao):
    from hierbench.bayes import pair_counts_hash
    from hierbench.data import read_battles
    from hierbench.data import to_pair_counts
    from hierbench.report import FitDataMismatchError
    from hierbench.report import check_fit_data
    from hierbench.testing import simulate_eval

    df, battles = llmfao
    fit = _bt_fit(df, pair_counts_hash(to_pair_counts(battles)))
    check_fit_data(fit, battles)  # its own battles
    half = read_battles(df.iloc[:4000], task="prompt")
    assert {str(a) for a in half["agent"].values} == set(fit["posterior"]["agent"].values)  # the same 59 agents
    with pytest.raises(FitDataMismatchError, match="the fit saw 8,931 battles and the data holds 4,000"):
        check_fit_data(fit, half)
    log, _ = simulate_eval(n_agents=2, n_tasks=3, n_runs=1, rng=0)
    with pytest.raises(FitDataMismatchError, match="Bradley-Terry fit of battles and `data` is a run log"):
        check_fit_data(fit, log)
    crossed = xr.DataTree.from_dict({"posterior": xr.Dataset(coords={"agent": ["a"]})})
    crossed.attrs = {"hierbench_model": "crossed", "hierbench_spec": json.dumps({"model": "crossed"})}
    with pytest.raises(FitDataMismatchError, match=r"battle log .* crossed fit of a run log"):
        check_fit_data(crossed, battles)
