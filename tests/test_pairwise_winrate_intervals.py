"""Win-rate intervals where the bootstrap cannot give one (audit D finding 1).

Expected values: hand counts of the designs below, pandas counts of LLMFAO's pairs per
prompt, binomial probabilities of a task being left out (Monte Carlo tolerance stated),
and scipy's Clopper-Pearson (beta quantile) bound for all-win battles.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta

from hierbench import UndefinedWarning
from hierbench._base import ZeroWidthIntervalWarning
from hierbench.data import read_battles
from hierbench.freq import win_rate


def _tasks_design():
    """12 tasks. A-B: one battle a task, A's score 1, 0.5, 0 in turn (it moves under resampling).
    A-D: A wins every battle on every task (one win rate, 1, on every task). A-C: two battles on
    task 0 only. B-C: one battle on task 0, one on task 1 (absent from a resample with probability
    (10/12)^12 = 0.112 > 0.025).
    """
    rows = []
    for t in range(12):
        rows += [("A", "B", ["left", "tie", "right"][t % 3], t), ("A", "D", "left", t)]
    rows += [("A", "C", "left", 0), ("C", "A", "tie", 0), ("B", "C", "left", 0), ("C", "B", "left", 1)]
    return read_battles(pd.DataFrame(rows, columns=["left", "right", "winner", "t"]), task="t")


def test_task_bootstrap_gives_no_interval_where_it_cannot_move():
    with pytest.warns(UndefinedWarning) as rec:
        w = win_rate(_tasks_design(), n_resamples=400, rng=0)
    text = str(rec[0].message)
    assert "undefined (NaN) for 2 of the 4 pairs met" in text
    assert "1 judged on one task" in text and "1 with one win rate on every task" in text
    ci = w.ci
    for a, o in (("A", "C"), ("C", "A"), ("A", "D"), ("D", "A")):
        assert np.isnan(ci.sel(agent=a, opponent=o).values).all(), (a, o)
    # B-C is absent from more than 2.5% of the resamples (P = 0.112, so about 45 of 400; 3 sd
    # above 10): entered at 0 for the lower bound and 1 for the upper, they put the bounds at
    # 0 and 1, a valid interval (it was NaN, no interval at all)
    assert int(w.n_undefined.sel(agent="B", opponent="C")) > 0.025 * 400 + 1
    np.testing.assert_array_equal(ci.sel(agent="B", opponent="C").values, [0.0, 1.0])
    lo, hi = ci.sel(agent="A", opponent="B").values
    assert lo < 0.5 < hi  # A-B: 1, 0.5, 0 on the tasks in turn, estimate 0.5
    # the old code printed A-D as 1 [1, 1] and A-C as 0.75 [0.75, 0.75]
    met = w.n_comparisons.values > 0
    width = ci.sel(ci_bound="upper").values - ci.sel(ci_bound="lower").values
    assert not (met & (width == 0)).any()
    # resamples without task 0 lack A-C: P = (11/12)^12 = 0.352; 400 resamples, 5 sd
    p = (11 / 12) ** 12
    n_out = int(w.n_undefined.sel(agent="A", opponent="C"))
    assert abs(n_out - 400 * p) < 5 * np.sqrt(400 * p * (1 - p))
    assert int(w.n_undefined.sel(agent="A", opponent="B")) == 0
    # D lost every battle on every task: its average cannot move either; C met no one in the
    # resamples without tasks 0 and 1 (P = 0.112 again): [0, 1]
    assert np.isnan(w.average_ci.sel(agent="D").values).all()
    np.testing.assert_array_equal(w.average_ci.sel(agent="C").values, [0.0, 1.0])
    assert np.isfinite(w.average_ci.sel(agent="A").values).all()


def test_llmfao_pairs_judged_on_one_prompt_have_no_prompt_bootstrap_interval(shared_data):
    """pandas: 503 of LLMFAO's 927 pairs were judged on one prompt (audit D, a8)."""
    df = pd.read_csv(shared_data / "evalica" / "llmfao_pairwise.csv")
    key = df.apply(lambda r: tuple(sorted((r.left, r.right))), axis=1)
    prompts = df.groupby(key).prompt.nunique()
    one = prompts[prompts == 1].index
    assert len(one) == 503 and len(prompts) == 927
    with pytest.warns(UndefinedWarning, match=r"for \d+ of the 927 pairs met: 503 judged on one task"):
        w = win_rate(read_battles(df, task="prompt"), n_resamples=200, rng=0)
    lower = w.ci.sel(ci_bound="lower")
    assert all(np.isnan(float(lower.sel(agent=a, opponent=b))) for a, b in one)
    a, b = "Airoboros L2 70B", "Alpaca (7B)"  # 4 battles on prompt 5: old code 0.375 [0.375, 0.375]
    assert float(w.estimate.sel(agent=a, opponent=b)) == 0.375
    assert np.isnan(w.ci.sel(agent=a, opponent=b).values).all()


def test_battle_bootstrap_of_all_wins_falls_back_to_the_exact_bound():
    """9 wins of 9: the battle bootstrap is [1, 1] (old code); the bound for all-ones scores is
    Clopper-Pearson's, [beta.ppf(0.025, 9, 1), 1] = [0.664, 1] (scipy).
    """
    pw = read_battles(pd.DataFrame({"left": ["A"] * 9, "right": ["B"] * 9, "winner": ["left"] * 9}))
    with pytest.warns(UndefinedWarning, match=r"1 that ended every battle alike.*bounded-mean.*no interval for 2 agents"):
        w = win_rate(pw, n_resamples=200, rng=0)
    np.testing.assert_allclose(w.ci.sel(agent="A", opponent="B").values, [beta.ppf(0.025, 9, 1), 1.0], rtol=1e-6)
    np.testing.assert_allclose(w.ci.sel(agent="B", opponent="A").values, [0.0, 1 - beta.ppf(0.025, 9, 1)], atol=1e-6)
    assert w.ci.attrs["ci_kind"] == "bounded-mean"
    assert np.isnan(w.average_ci.values).all()  # no resample moves A's average (1) or B's (0)


def test_battle_bootstrap_names_each_cells_kind():
    """Audit D a5 'always-wins': D won its 3 battles (one against each of A, B, C); A, B, C mixed.
    D-A, D-B, D-C: one battle each, the bound for 1 of 1 is [0.025, 1] (Clopper-Pearson, scipy);
    A-B (A's scores 1, 0, 0.5 five times over): a percentile interval.
    """
    base = [("A", "B", "left"), ("B", "A", "left"), ("A", "B", "tie"), ("B", "C", "left"), ("C", "B", "left"),
            ("B", "C", "right")] * 5  # fmt: skip
    rows = [*base, ("D", "A", "left"), ("B", "D", "right"), ("D", "C", "left")]
    # D's average: a resample without its 3 battles (P = (30/33)^33 = 0.043 > 0.025) enters at 0
    with pytest.warns(ZeroWidthIntervalWarning, match=r"3 that ended every battle alike"):
        w = win_rate(read_battles(pd.DataFrame(rows, columns=["left", "right", "winner"])), n_resamples=300, rng=1)
    assert w.ci.attrs["ci_kind"] == "mixed"
    for o in ("A", "B", "C"):
        np.testing.assert_allclose(w.ci.sel(agent="D", opponent=o).values, [beta.ppf(0.025, 1, 1), 1.0], rtol=1e-6)
        assert w.ci_kind.sel(agent="D", opponent=o).item() == "bounded-mean"
    assert w.ci_kind.sel(agent="A", opponent="B").item() == "percentile"
    np.testing.assert_array_equal(w.average_ci.sel(agent="D").values, [0.0, 1.0])
    frame = w.to_frame().dropna(subset=["estimate"])
    assert frame.loc[("D", "A"), "ci_kind"] == "bounded-mean" and frame.loc[("A", "B"), "ci_kind"] == "percentile"
