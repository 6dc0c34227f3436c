"""Pairwise outputs a user reads: the bootstrap unit, the scale of the abilities, the reprs.

Audit: LLMFAO read with ``task="prompt"`` was bootstrapped over battles by
default (95% widths 129 Elo, against 226 over prompts), the estimate carried no
scale, and the reprs listed agents alphabetically (Bradley-Terry) or every
agent x opponent cell, self-pairs first (win rates).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from hierbench import SmallSampleWarning
from hierbench.data import from_pair_counts
from hierbench.data import read_battles
from hierbench.freq import fit_bradley_terry_ml
from hierbench.freq import online_elo
from hierbench.freq import win_rate


def _battles_on_prompts(home: bool = False) -> pd.DataFrame:
    """Three agents named against their strength (zeta beats mid beats alpha), on 6 prompts.

    Per prompt: zeta-mid 3:1, mid-alpha 3:1, zeta-alpha 4:1 on even prompts (2:2, 4:0, 5:0
    on odd ones), and one tie, each battle in both orders: 2 * (5 + 5 + 6) = 32 per prompt, 192
    in all.
    """
    rows = []
    for q in range(6):
        odd = q % 2
        for a, b, wins_a, wins_b in (
            ("zeta", "mid", 3 - odd, 1 + odd),
            ("mid", "alpha", 3 + odd, 1 - odd),
            ("zeta", "alpha", 4 + odd, 1 - odd),
        ):
            for x, y, won in ((a, b, "left"), (b, a, "right")):  # a in both positions
                rows += [(x, y, won, q)] * wins_a + [(y, x, won, q)] * wins_b + [(x, y, "tie", q)]
    if home:  # the first position wins a few more
        rows += [("alpha", "zeta", "left", q) for q in range(3)]
    return pd.DataFrame(rows, columns=["left", "right", "winner", "prompt"])


@pytest.fixture(scope="module")
def prompts():
    return read_battles(_battles_on_prompts(), task="prompt")


def _lines(result) -> list[str]:
    return repr(result).splitlines()


# --------------------------------------------------------------------------- resampling unit


def test_default_resamples_the_tasks_the_battles_carry(prompts):
    default = fit_bradley_terry_ml(prompts, n_resamples=50, rng=3)
    tasks = fit_bradley_terry_ml(prompts, n_resamples=50, rng=3, resample="task")
    battles = fit_bradley_terry_ml(prompts, n_resamples=50, rng=3, resample="battles")
    # the default draws what resample="task" draws, not what resample="battles" does
    np.testing.assert_array_equal(default.distribution, tasks.distribution)
    assert not np.allclose(default.distribution, battles.distribution)
    assert default.attrs["resample"] == "task"
    # 6 prompts, named by the column they were read from
    assert "6 tasks of column 'prompt'" in default.ci.attrs["ci_detail"]
    assert "6 tasks of column 'prompt'" in default.attrs["resample_unit"]
    assert battles.attrs["resample"] == "battles"
    assert "battles (192, taken as independent)" in battles.ci.attrs["ci_detail"]  # 6 x 32


def test_without_tasks_the_default_resamples_battles():
    df = _battles_on_prompts().drop(columns="prompt")
    pw = read_battles(df)
    r = fit_bradley_terry_ml(pw, n_resamples=30, rng=0)
    b = fit_bradley_terry_ml(pw, n_resamples=30, rng=0, resample="battles")
    np.testing.assert_array_equal(r.distribution, b.distribution)
    assert r.attrs["resample"] == "battles"
    counts = from_pair_counts(
        pd.DataFrame({"a": ["A", "B"], "b": ["B", "C"], "wa": [30, 40], "wb": [20, 10]}),
        agent_a="a", agent_b="b", wins_a="wa", wins_b="wb",
    )
    c = fit_bradley_terry_ml(counts, ties="none", n_resamples=30, rng=0)
    assert c.attrs["resample"] == "battles"
    w = win_rate(counts, n_resamples=30, rng=0)
    assert w.attrs["resample"] == "battles"


def test_win_rate_default_resamples_tasks_too(prompts):
    d = win_rate(prompts, n_resamples=40, rng=2)
    t = win_rate(prompts, n_resamples=40, rng=2, resample="task")
    np.testing.assert_array_equal(d.distribution, t.distribution)
    assert d.attrs["resample"] == "task" and "column 'prompt'" in d.ci.attrs["ci_detail"]


def test_missing_task_labels_name_the_way_out(prompts):
    holed = prompts.assign(task=prompts.task.astype(object).where(prompts.comparison > 0))
    with pytest.raises(ValueError, match=r"1 missing labels.*resample='battles'"):
        fit_bradley_terry_ml(holed, n_resamples=20, rng=0)
    r = fit_bradley_terry_ml(holed, n_resamples=20, rng=0, resample="battles")
    assert r.attrs["resample"] == "battles"


def test_wald_refuses_a_bootstrap_unit_and_says_what_it_assumes(prompts):
    with pytest.raises(ValueError, match=r"`resample='task'` sets the bootstrap unit.*Wald"):
        fit_bradley_terry_ml(prompts, interval="wald", resample="task")
    w = fit_bradley_terry_ml(prompts, interval="wald")
    assert w.ci.attrs["ci_kind"] == "normal"
    assert "battles taken as independent, although they share 6 tasks" in w.ci.attrs["ci_detail"]


def test_llmfao_default_resamples_its_prompts(shared_data):
    df = pd.read_csv(shared_data / "evalica" / "llmfao_pairwise.csv")
    pw = read_battles(df, task="prompt")
    r = fit_bradley_terry_ml(pw, n_resamples=30, rng=0)
    assert r.attrs["resample"] == "task"
    assert f"{df.prompt.nunique()} tasks of column 'prompt'" in r.ci.attrs["ci_detail"]  # 13


# --------------------------------------------------------------------------- scale


def test_estimate_states_its_scale_and_units(prompts):
    elo = fit_bradley_terry_ml(prompts, interval="wald")
    logit = fit_bradley_terry_ml(prompts, interval="wald", scale="logit", reference="alpha")
    assert elo.estimate.attrs["scale"] == "elo" and logit.estimate.attrs["scale"] == "logit"
    assert elo.ci.attrs["scale"] == "elo" and logit.ci.attrs["scale"] == "logit"
    assert "400 per 10x odds; 1000 = the mean ability" in elo.estimate.attrs["units"]
    assert "0 = agent 'alpha'" in logit.estimate.attrs["units"]
    # the Elo numbers are what the units say: 400 / ln 10 points per logit around 1000
    np.testing.assert_allclose(
        elo.estimate.values, 1000 + 400 / np.log(10) * elo.ability.values, atol=1e-9
    )
    assert elo.ability.attrs["scale"] == "logit"
    assert elo.estimate.attrs["quantity"] == logit.estimate.attrs["quantity"]
    e = online_elo(prompts, n_orders=0)
    assert e.estimate.attrs["scale"] == "elo"
    assert online_elo(prompts, n_orders=0, base=np.e).estimate.attrs["scale"] != "elo"
    assert win_rate(prompts, n_resamples=20, rng=0).estimate.attrs["scale"] == "probability"


# --------------------------------------------------------------------------- reprs


def test_bt_repr_is_a_leaderboard_with_home_and_ties():
    pw = read_battles(_battles_on_prompts(home=True), task="prompt")
    r = fit_bradley_terry_ml(pw, home=True, n_resamples=50, rng=1)
    lines = _lines(r)
    assert lines[0].startswith("BradleyTerryMLResult: 3 agents, 195 battles; ability in Elo points")
    assert "95% percentile interval: bootstrap over tasks (6 tasks of column 'prompt'" in lines[1]
    body = [ln.split() for ln in lines[3:6]]
    # best first by design (zeta > mid > alpha), not alphabetical
    assert [row[:2] for row in body] == [["1", "zeta"], ["2", "mid"], ["3", "alpha"]]
    assert all("rank" in ln for ln in lines[3:6])
    assert any(ln.strip().startswith("first-position (home) advantage, logits:") for ln in lines)
    assert any(ln.strip().startswith("Davidson tie parameter nu:") for ln in lines)


def _many_agents(m: int = 15) -> pd.DataFrame:
    """A round robin of agents a00..a14: per pair two wins of the higher index (one in each
    position), and an upset where i + j is even. 105 pairs, 210 + 49 upsets = 259 battles
    (C(8, 2) = 28 pairs of even indices, C(7, 2) = 21 of odd ones).
    """
    rows = []
    for i in range(m):
        for j in range(i + 1, m):
            rows += [(f"a{j:02d}", f"a{i:02d}", "left"), (f"a{i:02d}", f"a{j:02d}", "right")]
            if (i + j) % 2 == 0:
                rows.append((f"a{i:02d}", f"a{j:02d}", "left"))
    return pd.DataFrame(rows, columns=["left", "right", "winner"])


def test_long_reprs_show_the_top_and_the_bottom_and_no_self_pairs():
    pw = read_battles(_many_agents())
    r = fit_bradley_terry_ml(pw, ties="none", interval="wald")
    text = repr(r)
    assert "(4 more agents)" in text  # 15 agents: 8 at the top, 3 at the bottom
    named = [ln.split()[1] for ln in text.splitlines()[3:] if ln.split()[0].isdigit()]
    best_first = r.estimate.sortby(-r.estimate)["agent"].values.tolist()
    assert named == best_first[:8] + best_first[-3:]
    with pytest.warns(SmallSampleWarning, match=r"56 that ended every battle alike"):  # C(15, 2) - 49 upsets
        w = win_rate(pw, n_resamples=20, rng=0)
    wtext = repr(w)
    assert "15 agents, 105 of 105 pairs met, 259 battles" in wtext
    assert "a00, a00" not in wtext and "nan [nan, nan]" not in wtext
    assert len(wtext.splitlines()) < 20
    assert len(w.to_frame()) == 15 * 15  # the table keeps every cell
    e = online_elo(pw, n_orders=5, rng=0)
    assert "(4 more agents)" in repr(e) and len(repr(e).splitlines()) < 18


def test_read_battles_records_the_task_column():
    pw = read_battles(_battles_on_prompts(), task="prompt")
    assert pw["task"].attrs["source_column"] == "prompt"


def test_side_by_side_refuses_elo_beside_logits():
    """Two fits of the same battles, one in Elo points and one in logits: not comparable numbers."""
    import pandas as pd
    import pytest

    from hierbench.compare import MismatchedEstimatesError
    from hierbench.compare import side_by_side
    from hierbench.data import read_battles
    from hierbench.freq import fit_bradley_terry_ml

    rng = np.random.default_rng(0)
    names = np.array(["a", "b", "c"])
    i = rng.integers(0, 3, 300)
    j = (i + rng.integers(1, 3, 300)) % 3
    winner = np.where(rng.random(300) < 0.5 + 0.15 * (j - i), "left", "right")
    pw = read_battles(pd.DataFrame({"left": names[i], "right": names[j], "winner": winner}), position=False)
    elo = fit_bradley_terry_ml(pw, ties="none", interval="wald")
    logit = fit_bradley_terry_ml(pw, ties="none", scale="logit", interval="wald")
    assert elo.estimate.attrs["scale"] != logit.estimate.attrs["scale"]
    with pytest.raises(MismatchedEstimatesError, match="different scales"):
        side_by_side({"elo": elo, "logit": logit})
    side_by_side({"one": logit, "two": fit_bradley_terry_ml(pw, ties="none", scale="logit", interval="wald")})


def test_win_rate_repr_reads_right_for_two_agents():
    # two agents make one pair: no "of 1 pairs", no "1 opponents"
    df = pd.DataFrame({"left": ["x", "x", "y"], "right": ["y", "y", "x"], "winner": ["left", "tie", "left"]})
    text = repr(win_rate(read_battles(df), n_resamples=30, rng=0))
    assert "2 agents, the one pair met, 3 battles" in text
    assert "vs 1 opponent, 3 battles" in text and "1 pairs" not in text and "1 opponents" not in text
